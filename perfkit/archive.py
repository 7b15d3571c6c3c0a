"""Open a run archive (directory, tarball or single capture file) safely and read its manifest.

An archive is the contract between collection and analysis (design.md), and analysis runs on
archives made by other people, so a tarball is treated as hostile input (reliability.md T1-T6):

- Every member header is validated in a first streaming pass, before anything is written. One
  bad member refuses the whole archive with `UnsafeArchive` naming the member and the rule; there
  is no sanitize-and-continue. Size and count caps are checked as each header arrives, so a bomb
  is refused at the first breach without decompressing the rest. A name that is merely not valid
  UTF-8 (a capture named on a Latin-1 host) is no attack: the member is extracted and listed under
  its `shown_name` (`vmstat_\\xff`), and every rule (control characters, `..`, collisions with the
  names before it) applies to that name.
- Extraction is our own writer, not `extractall`: on CPython 3.11.7 even `filter="data"` wrote
  outside the destination (CVE-2025-4517). Only regular files and directories exist after the
  first pass, every file is created with `O_EXCL | O_NOFOLLOW`, and every parent is checked to
  resolve under the temp root.
- The temp dir is removed when the context exits, however it exits.

A directory is used in place and never modified; symlinks in it are reported, never followed. Its
files keep their names as Python holds them (not valid UTF-8: surrogate escapes, so they can be
opened); whatever shows a name passes it through `shown_name`.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import unicodedata
import zlib
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

from perfkit.errors import ArchiveError, PerfkitError, UnsafeArchive
from perfkit.manifest import Record

MANIFEST_VERSION = 1
MANIFEST = "manifest.json"

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_CHUNK = 1 << 20
# Header data (pax records, GNU long names, sparse maps) tarfile may read for ONE member. tarfile
# reads a pax header's whole declared size into memory, so without this a 2 GiB "pax header" of
# zeros (2 MB compressed) would be loaded before we ever see a member to refuse.
_HEADER_BUDGET = 1 << 20
# Bytes allowed after the end-of-archive marker. Real writers pad to a record (10 KiB for GNU tar);
# more is a bomb of trailing zeros or a second, hidden archive.
_MAX_TRAILING_BYTES = 4 << 20
_MAX_MANIFEST_BYTES = 64 << 20
# Rough per-member cost on disk (inode, directory entry, partial block) for the free-space check.
_PER_MEMBER_OVERHEAD = 4096

_LAYOUT_DIRS = {"hosts", "load", "db"}  # design.md's archive layout, under the run directory
_ALLOWED_TYPES = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.DIRTYPE: "dir"}
_TYPE_NAMES = {
    tarfile.SYMTYPE: "symlink",
    tarfile.LNKTYPE: "hardlink",
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "FIFO",
    tarfile.CONTTYPE: "contiguous file",
    tarfile.GNUTYPE_SPARSE: "GNU sparse file",
}


@dataclass(frozen=True)
class Limits:
    """Caps on what a tarball may declare; each is checked while the headers stream in.

    The defaults fit a long multi-host run (a few GB of captures) with room to spare, and stop a
    bomb long before it fills a disk or exhausts memory.
    """

    max_members: int = 100_000
    max_member_bytes: int = 2 << 30
    max_total_bytes: int = 8 << 30
    max_name_len: int = 1024
    max_component_len: int = 255


DEFAULT_LIMITS = Limits()


@dataclass
class Archive:
    """An opened archive: where its files are and what its manifest says about them.

    Attributes:
        name: What the user passed, for display (file or directory name).
        root: Directory holding the files; a temp dir, removed on exit, for a tarball.
        manifest: The parsed `manifest.json` (format v1), or None for a foreign archive.
        files: POSIX paths, relative to `root`, of every regular file; sorted; manifest excluded.
        problems: `{"path", "reason"}` for what was not read or does not match the manifest
            (absent or altered captures, symlinks and special files in a directory input; with
            `digests=False`, a capture altered but not resized is found by `problems_with`).
        unchecked: the records whose sha256 `open_archive(digests=False)` left to whoever reads
            their files (their size was checked): `problems_with` adds what they find.
    """

    name: str
    root: Path
    manifest: dict[str, Any] | None
    files: list[str]
    problems: list[dict[str, str]]
    unchecked: list[Unchecked] = field(default_factory=list)

    @property
    def records(self) -> dict[str, Record]:
        """The manifest's capture records, keyed by the relative path of the file each describes."""
        return records_by_path(self.manifest, self.name)

    def problems_with(self, digests: Mapping[str, tuple[str | None, str]]) -> list[dict[str, str]]:
        """`problems` and the sha256 mismatches of the `unchecked` records, each where `open_archive`
        would have listed it (the manifest's order). `digests`: `file_digest` of the files already
        read, by path; the others are hashed here."""
        out, known = list(self.problems), dict(digests)
        for u in reversed(self.unchecked):  # from the end: each insertion leaves the earlier `at` right
            if u.path not in known:
                known[u.path] = file_digest(self.root / u.path)
            reason = _digest_problem(u.sha256, known[u.path])
            if reason:
                out.insert(u.at, {"path": u.path, "reason": reason})
        return out


@dataclass(frozen=True)
class Unchecked:
    """A capture record whose sha256 `open_archive(digests=False)` left to whoever reads the file."""

    path: str
    sha256: Any  # the record's, as written
    at: int  # where in `Archive.problems` a mismatch goes: the manifest's order


def records_by_path(manifest: dict[str, Any] | None, name: str) -> dict[str, Record]:
    """A manifest's capture records, typed, keyed by the relative path of the file each describes
    (its `path`, else `hosts/<host>/<id>.out`); `name` is the archive's, for an error."""
    out: dict[str, Record] = {}
    for i, rec in enumerate((manifest or {}).get("captures", [])):
        rel = _record_path(rec, i, name) if isinstance(rec, dict) else None
        if rel is not None:
            out[rel] = Record.from_dict(rec)
    return out


@contextmanager
def open_archive(
    path: Path | str, *, limits: Limits = DEFAULT_LIMITS, digests: bool = True
) -> Iterator[Archive]:
    """Open a directory, tarball or single capture file for reading.

    A tarball is validated member by member before anything is extracted, then extracted into a
    fresh `perfkit-*` temp dir that is removed when the block exits, on success or on any error.
    A tarball holding one top-level directory (`tar czf run1.tar.gz run1/`) is rooted there, so its
    `manifest.json` is found.

    Args:
        path: A run directory, a `.tar[.gz|.bz2|.xz]` (recognised by content, not only by name),
            or one capture file (only that file is listed, never its siblings).
        limits: Caps on member count, sizes and name lengths for tarballs.
        digests: compare each capture's sha256 with its record here; False leaves them in
            `Archive.unchecked` for whoever reads the files (`load_dataset`: the process that parses
            a file hashes it, in parallel with `--jobs`; 0.6 s of CPU for 825 MB on the lab VM).

    Yields:
        The opened archive. Paths under `root` are only valid inside the `with` block.

    Raises:
        UnsafeArchive: A member or a manifest record would escape the root, is not a regular file
            or directory, collides with another, or breaks a cap. Names the member and the rule.
        ArchiveError: The path is missing, the tarball is corrupt or truncated, there is not enough
            free space, or the manifest is not valid JSON or has an unknown format version.
    """
    path = Path(path)
    shown = shown_name(str(path))
    name = shown_name(path.name) or shown
    if not path.exists():
        raise ArchiveError(f"{shown}: no such file or directory")
    if path.is_dir():
        files, problems = _walk(path)
        manifest = _load_manifest(path, f"{shown}/{MANIFEST}")
        found, unchecked = _check_records(path, manifest, files, problems, shown, digests)
        yield Archive(name, path, manifest, files, problems + found, unchecked)
        return
    if not path.is_file():
        raise ArchiveError(f"{shown}: not a regular file or directory")
    try:
        compression = _sniff_compression(path)
    except OSError as e:
        raise ArchiveError(f"{shown}: cannot read: {e.strerror or e}") from None
    if compression is None and not path.name.lower().endswith(_TAR_SUFFIXES):
        yield Archive(name, path.parent, None, [path.name], [])
        return

    tmp: Path | None = None
    try:
        with _open_tar(path, compression) as (tar, stream):
            members = _scan(tar, stream, shown, limits)
            _check_space(shown, members)
            tmp = Path(tempfile.mkdtemp(prefix="perfkit-"))
            _extract(tar, stream, members, tmp, shown)
        root, prefix = _pick_root(tmp, members)
        files = sorted(
            m.key[len(prefix) :] for m in members if m.kind == "file" and m.key[len(prefix) :] != MANIFEST
        )
        manifest = _load_manifest(root, f"{shown}: {prefix}{MANIFEST}")
        problems, unchecked = _check_records(root, manifest, files, [], shown, digests)
        yield Archive(name, root, manifest, files, problems, unchecked)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def size_hint(path: Path) -> int:
    """About how many bytes `open_archive(path)` will hold, read without opening it: a directory's
    files, a file's size, a gzip's uncompressed size as its trailer states it (modulo 4 GiB). A
    hint for starting workers early (`_workers.warmed`): the parse itself counts what it reads."""
    try:
        if path.is_dir():
            return sum(
                os.lstat(os.path.join(top, f)).st_size for top, _dirs, files in os.walk(path) for f in files
            )
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b" or size < 18:
                return size
            fh.seek(-4, os.SEEK_END)
            return max(size, int.from_bytes(fh.read(4), "little"))
    except OSError:
        return 0  # unreadable: open_archive says why


def read_manifest(root: Path) -> dict[str, Any] | None:
    """Read and check `manifest.json` at `root`; None when there is none (a foreign archive).

    Args:
        root: The archive's root directory.

    Returns:
        The manifest as a dict, or None when `root/manifest.json` does not exist.

    Raises:
        ArchiveError: The manifest is not a regular file, not valid JSON (with the position), not a
            JSON object, not format version 1 (naming the version and the perfkit that wrote it), or
            its `captures` is not a list of objects.
    """
    return _load_manifest(Path(root), str(Path(root) / MANIFEST))


# --------------------------------------------------------------------------- names and members


# A byte that is not UTF-8, as `os.fsdecode` and surrogateescape hold it: a lone surrogate
_UNDECODED = re.compile("[\udc80-\udcff]")


def shown_name(name: str) -> str:
    """A file name as text that can be shown and written anywhere (report, JSON, terminal): bytes that
    are not UTF-8, which Python holds as lone surrogates (`os.fsdecode`, tarfile's surrogateescape),
    become `\\xNN` escapes (`b"vmstat_\\xff"` -> `vmstat_\\xff`). Valid names come back unchanged."""
    if name.isascii() or not _UNDECODED.search(name):  # the report prints every string through here
        return name
    return _UNDECODED.sub(lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}", name)


def printable(text: str) -> str:
    """Text from hosts or captures fit for a terminal: names that are not UTF-8 as `\\xNN`
    (shown_name), control characters (ESC sequences in a file name) escaped, never executed."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in shown_name(text))


def _show(name: str) -> str:
    """A member name fit for a terminal or log line: quoted, control characters escaped, bounded."""
    if len(name) > 200:
        return f"{name[:200]!r}... ({len(name)} characters)"
    return repr(name)


def _show_value(value: object) -> str:
    """A manifest value for an error message: repr (escapes control characters), bounded."""
    text = repr(value)
    return text if len(text) <= 200 else f"{text[:200]}..."


def _split(name: str) -> list[str]:
    """Path components of a member name, with `.` and empty components dropped (`./a//b` -> a, b)."""
    return [c for c in name.split("/") if c not in ("", ".")]


def _name_rule(name: str, limits: Limits, *, undecodable_ok: bool = False) -> str | None:
    """The first naming rule `name` breaks, or None. Shared by tar members and manifest records.

    With `undecodable_ok` (a tar member), bytes that are not UTF-8 are allowed: the member is written
    under its `shown_name`, whose length is the one checked."""
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name):
        return "control character in name"
    if not undecodable_ok and any(0xDC80 <= ord(c) <= 0xDCFF for c in name):
        return "name is not valid UTF-8"
    if name.startswith(("\\\\", "//")):
        return "Windows UNC name"
    if len(name) >= 2 and name[1] == ":" and name[0].isascii() and name[0].isalpha():
        return "Windows drive name"
    if "\\" in name:
        return "backslash in name"
    if name.startswith("/"):
        return "absolute name"
    parts = name.split("/")
    if ".." in parts:
        return "name has a '..' component"
    name = shown_name(name)  # as written to disk (unchanged unless undecodable_ok let bytes through)
    parts = name.split("/")
    size = len(name.encode("utf-8"))
    if size > limits.max_name_len:
        return f"name is {size} bytes, over max_name_len ({limits.max_name_len})"
    longest = max((len(p.encode("utf-8")) for p in parts), default=0)
    if longest > limits.max_component_len:
        return f"a name component is {longest} bytes, over max_component_len ({limits.max_component_len})"
    return None


@dataclass(frozen=True)
class _Member:
    """A validated member: its header, normalised relative path and kind ("file" or "dir")."""

    info: tarfile.TarInfo
    key: str
    kind: str


class _Validator:
    """Checks members one at a time, in archive order, keeping just enough state for collisions."""

    def __init__(self, shown: str, limits: Limits):
        self.shown, self.limits = shown, limits
        self.count = 0
        self.total = 0
        # folded path -> (path as written, "file" | "dir" | "parent"); "parent" = implied directory
        self.seen: dict[str, tuple[str, str]] = {}

    def refuse(self, name: str, rule: str) -> UnsafeArchive:
        return UnsafeArchive(f"{self.shown}: unsafe member {_show(name)}: {rule}; nothing was extracted")

    def check(self, ti: tarfile.TarInfo) -> _Member:
        self.count += 1
        if self.count > self.limits.max_members:
            raise self.refuse(ti.name, f"more than max_members ({self.limits.max_members}) members")
        rule = _name_rule(ti.name, self.limits, undecodable_ok=True)
        if rule:
            raise self.refuse(ti.name, rule)
        name = shown_name(ti.name)  # the name it is extracted and listed under
        kind = _ALLOWED_TYPES.get(ti.type)
        if kind is None or ti.sparse is not None:
            what = _TYPE_NAMES.get(ti.type, f"type {ti.type!r}")
            if ti.sparse is not None:
                what = "GNU sparse file"
            if ti.type in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                what += f" to {_show(ti.linkname)}"
            raise self.refuse(name, f"{what} is not a regular file or directory")
        for bit, label in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"), (stat.S_ISVTX, "sticky")):
            # GNU tar records g+s/+t on directories made inside shared folders; modes are never kept, so
            # only a file's special bits say something is wrong with the archive.
            if ti.mode & bit and kind == "file":
                raise self.refuse(name, f"{label} bit set (repack with `tar --mode=a-st` to clear it)")
        if kind == "file":
            if name.endswith("/"):
                raise self.refuse(name, "regular file name ends with '/'")
            if ti.size > self.limits.max_member_bytes:
                raise self.refuse(
                    name,
                    f"declared size {ti.size} bytes, over max_member_bytes ({self.limits.max_member_bytes})",
                )
            self.total += ti.size
            if self.total > self.limits.max_total_bytes:
                raise self.refuse(
                    name,
                    f"declared sizes add up to {self.total} bytes, "
                    f"over max_total_bytes ({self.limits.max_total_bytes})",
                )
        parts = _split(name)
        if not parts:
            if kind == "file":
                raise self.refuse(name, "regular file with an empty name")
            return _Member(ti, "", kind)  # "./", the archive root itself
        self._place(name, parts, kind)
        return _Member(ti, "/".join(parts), kind)

    def _place(self, name: str, parts: list[str], kind: str) -> None:
        """Record the member's path; refuse duplicates, case collisions and files used as dirs."""
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            folded = _fold(parent)
            if folded in self.seen:
                written, what = self.seen[folded]
                if what == "file":
                    raise self.refuse(name, f"nested under file member {_show(written)}")
                if written != parent:
                    raise self.refuse(name, f"name differs only in case from member {_show(written)}")
            else:
                self.seen[folded] = (parent, "parent")
        key = "/".join(parts)
        folded = _fold(key)
        if folded in self.seen:
            written, what = self.seen[folded]
            if written != key:
                raise self.refuse(name, f"name differs only in case from member {_show(written)}")
            if what != "parent":
                raise self.refuse(
                    name, f"duplicate name: same path as an earlier {what} member {_show(written)}"
                )
            if kind == "file":
                raise self.refuse(name, "regular file where earlier members need a directory")
        self.seen[folded] = (key, kind)


def _fold(key: str) -> str:
    """The form two names share when a case-insensitive or normalising filesystem would merge them."""
    return unicodedata.normalize("NFC", key).casefold()


# --------------------------------------------------------------------------- reading the tarball


class _Stream:
    """The decompressed tar stream, refusing oversized header reads and remembering the last block.

    Non-streaming tarfile skips member data with seek(), so during the header pass every read() is
    header data; counting those per member bounds what a hostile pax or sparse header can make
    tarfile load into memory.
    """

    def __init__(self, fileobj: IO[bytes], shown: str):
        self._f = fileobj
        self.shown = shown
        self.budget: int | None = _HEADER_BUDGET
        self.used = 0
        self.last: tuple[int, bytes] = (-1, b"")

    def read(self, size: int = -1) -> bytes:
        pos = self._f.tell()
        if self.budget is not None:
            if size is None or size < 0 or self.used + size > self.budget:
                raise UnsafeArchive(
                    f"{self.shown}: unsafe header at byte {pos}: extension headers (pax, GNU long name "
                    f"or sparse map) over {self.budget} bytes for one member; nothing was extracted"
                )
            self.used += size
        data = self._f.read(size)
        if size == tarfile.BLOCKSIZE:
            self.last = (pos, data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def drain(self, limit: int) -> int:
        """Read to the end (which checks a gzip/bzip2/xz trailer); return bytes read, at most limit+1."""
        n = 0
        while n <= limit:
            chunk = self._f.read(64 << 10)
            if not chunk:
                break
            n += len(chunk)
        return n


def _sniff_compression(path: Path) -> str | None:
    """ "gzip", "bzip2", "xz" or "tar" from the first bytes; None when it looks like neither."""
    with open(path, "rb") as f:
        head = f.read(tarfile.BLOCKSIZE)
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    try:
        tarfile.TarInfo.frombuf(head, "utf-8", "surrogateescape")
    except (tarfile.HeaderError, ValueError):
        return None
    return "tar"


@contextmanager
def _open_tar(path: Path, compression: str | None) -> Iterator[tuple[tarfile.TarFile, _Stream]]:
    """Open the (decompressed) tarball; input that is not a tar becomes a one-line ArchiveError."""
    shown = str(path)
    with ExitStack() as stack:
        try:
            if path.stat().st_size == 0:
                raise ArchiveError(f"{shown}: empty file, not a tar archive")
            raw = stack.enter_context(open(path, "rb"))
        except OSError as e:
            raise ArchiveError(f"{shown}: cannot read: {e.strerror or e}") from None
        inner: IO[bytes] = raw
        if compression == "gzip":
            inner = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
        elif compression == "bzip2":
            inner = stack.enter_context(bz2.BZ2File(raw, mode="rb"))
        elif compression == "xz":
            inner = stack.enter_context(lzma.LZMAFile(raw, mode="rb"))
        stream = _Stream(inner, shown)
        try:
            tar = stack.enter_context(
                tarfile.open(fileobj=stream, mode="r:", encoding="utf-8", errors="surrogateescape")
            )
        except _READ_ERRORS as e:
            if isinstance(e, tarfile.ReadError) and not str(e).startswith("zlib"):
                what = f"its {compression} data do" if compression else "it does"
                raise ArchiveError(
                    f"{shown}: not a tar archive ({what} not start with a tar header)"
                ) from None
            raise ArchiveError(f"{shown}: corrupt or truncated archive: {_reason(e)}") from None
        yield tar, stream


_READ_ERRORS = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError, ValueError, RecursionError)


def _reason(e: BaseException) -> str:
    """One line about a read error, without the exception class name."""
    if isinstance(e, EOFError):
        return "compressed data ends early"
    if isinstance(e, RecursionError):
        return "extension headers nested too deeply"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    text = " ".join(str(e).split()) or "unreadable data"
    return _show(text)[1:-1] if not text.isprintable() else text[:300]


def _scan(tar: tarfile.TarFile, stream: _Stream, shown: str, limits: Limits) -> list[_Member]:
    """First pass: validate every header, in order, stopping at the first breach; read no data."""
    check = _Validator(shown, limits)
    members = []
    try:
        for ti in tar:
            members.append(check.check(ti))
            stream.used = 0
        _check_end(tar, stream, shown)
    except _READ_ERRORS as e:
        raise ArchiveError(f"{shown}: corrupt or truncated archive: {_reason(e)}") from None
    return members


def _check_end(tar: tarfile.TarFile, stream: _Stream, shown: str) -> None:
    """Tell a real end of archive from truncation or a corrupt header, which tarfile treats alike."""
    pos, block = stream.last
    if pos != tar.offset:
        raise ArchiveError(f"{shown}: corrupt archive: extension header at byte {tar.offset} has no member")
    if len(block) < tarfile.BLOCKSIZE:
        raise ArchiveError(
            f"{shown}: truncated archive: data ends at byte {tar.offset} without an end marker"
        )
    if block.count(0) != tarfile.BLOCKSIZE:
        raise ArchiveError(f"{shown}: corrupt archive: invalid tar header at byte {tar.offset}")
    stream.budget = None
    trailing = stream.drain(_MAX_TRAILING_BYTES)
    if trailing > _MAX_TRAILING_BYTES:
        raise UnsafeArchive(
            f"{shown}: more than {_MAX_TRAILING_BYTES} bytes after the end-of-archive marker "
            f"(decompression bomb or hidden data); nothing was extracted"
        )


def _check_space(shown: str, members: list[_Member]) -> None:
    """Refuse before extracting when the temp location cannot hold what the headers declare."""
    where = tempfile.gettempdir()
    need = sum(m.info.size for m in members if m.kind == "file") + _PER_MEMBER_OVERHEAD * len(members)
    free = shutil.disk_usage(where).free
    if need > free:
        raise ArchiveError(
            f"{shown}: extracting needs about {need} bytes, but {where} has only {free} bytes free"
        )


# --------------------------------------------------------------------------- extracting


def _extract(tar: tarfile.TarFile, stream: _Stream, members: list[_Member], tmp: Path, shown: str) -> None:
    """Second pass: write the validated members under `tmp`, never following or replacing anything."""
    stream.budget = None
    real_root = os.path.realpath(tmp)
    made: set[str] = {""}
    for m in members:
        if not m.key:
            continue
        parts = m.key.split("/")
        dirs = parts if m.kind == "dir" else parts[:-1]
        try:
            _make_dirs(tmp, dirs, made, shown, m)
            if m.kind == "file":
                _write_file(tar, m, tmp, real_root, shown)
        except OSError as e:
            raise ArchiveError(f"{shown}: cannot extract {_show(m.info.name)}: {e.strerror or e}") from None


def _make_dirs(tmp: Path, parts: list[str], made: set[str], shown: str, m: _Member) -> None:
    """Create each missing directory of `parts` (0o700), refusing anything that is not our directory."""
    for i in range(1, len(parts) + 1):
        rel = "/".join(parts[:i])
        if rel in made:
            continue
        target = tmp / rel
        try:
            os.mkdir(target, 0o700)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(target).st_mode):
                raise UnsafeArchive(
                    f"{shown}: unsafe member {_show(m.info.name)}: path is not a directory"
                ) from None
        made.add(rel)


def _write_file(tar: tarfile.TarFile, m: _Member, tmp: Path, real_root: str, shown: str) -> None:
    """Copy at most the declared size into a new 0o600 file created without following symlinks."""
    target = tmp / m.key
    parent = os.path.realpath(target.parent)
    if os.path.commonpath([parent, real_root]) != real_root:
        raise UnsafeArchive(
            f"{shown}: unsafe member {_show(m.info.name)}: resolves outside the extraction dir"
        )
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    src = tar.extractfile(m.info)
    if src is None:  # cannot happen for a regular file; keeps the type checker honest
        raise ArchiveError(f"{shown}: cannot read member {_show(m.info.name)}")
    with src, os.fdopen(os.open(target, flags, 0o600), "wb") as out:
        remaining = m.info.size
        while remaining:
            try:
                chunk = src.read(min(_CHUNK, remaining))
            except _READ_ERRORS as e:
                raise ArchiveError(f"{shown}: corrupt or truncated archive: {_reason(e)}") from None
            if not chunk:
                raise ArchiveError(f"{shown}: truncated archive: member {_show(m.info.name)} ends early")
            out.write(chunk)
            remaining -= len(chunk)


def _pick_root(tmp: Path, members: list[_Member]) -> tuple[Path, str]:
    """The single top-level directory when there is one (`run1/...`), else the extraction dir.

    Not when the archive lists its own root (`./`, as `tar -C run1 .` writes), nor when the one
    top-level entry is a layout folder (`hosts/`) of an archive whose manifest is missing: in both,
    the extraction dir already is the run directory.

    Returns:
        The root and the prefix (`"run1/"` or `""`) to strip from member paths.
    """
    if any(not m.key for m in members):
        return tmp, ""
    tops = {m.key.split("/", 1)[0] for m in members}
    if len(tops) == 1 and not tops & _LAYOUT_DIRS:
        top = tops.pop()
        if not any(m.key == top and m.kind == "file" for m in members):
            return tmp / top, top + "/"
    return tmp, ""


# --------------------------------------------------------------------------- directories


def _walk(top: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Every regular file under `top`; symlinks and special files go to problems, unfollowed."""
    files: list[str] = []
    problems: list[dict[str, str]] = []
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(top / rel_dir if rel_dir else top) as it:
                entries = list(it)
        except OSError as e:
            problems.append(
                {"path": shown_name(rel_dir or "."), "reason": f"cannot read directory: {e.strerror or e}"}
            )
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink():
                problems.append({"path": shown_name(rel), "reason": "symlink, not followed"})
            elif entry.is_dir(follow_symlinks=False):
                pending.append(rel)
            elif entry.is_file(follow_symlinks=False):
                if rel != MANIFEST:
                    files.append(rel)
            else:
                problems.append(
                    {"path": shown_name(rel), "reason": "special file (device, FIFO or socket), not read"}
                )
    files.sort()
    problems.sort(key=lambda p: p["path"])
    return files, problems


# --------------------------------------------------------------------------- manifest


class _Unreadable(Exception):
    """A file we will not or cannot read; the text is the reason, for a message or a problem."""


def _open_regular(path: Path) -> int | None:
    """A read fd for a regular file at `path`, never through a symlink; None if it does not exist.

    O_NONBLOCK keeps a FIFO planted under the expected name from hanging the open.

    Raises:
        _Unreadable: A symlink, not a regular file, or the open failed.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if path.is_symlink():
            raise _Unreadable("symlink, not followed") from None
        raise _Unreadable(f"cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Unreadable("not a regular file")
    return fd


_JSON_TYPES = {
    "list": "an array",
    "str": "a string",
    "int": "a number",
    "float": "a number",
    "bool": "a boolean",
}


def _load_manifest(root: Path, shown: str) -> dict[str, Any] | None:
    """Parse and check `root/manifest.json`; `shown` is how error messages name it."""
    try:
        fd = _open_regular(root / MANIFEST)
    except _Unreadable as e:
        raise ArchiveError(f"{shown}: {e}") from None
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(_MAX_MANIFEST_BYTES + 1)
    if len(data) > _MAX_MANIFEST_BYTES:
        raise ArchiveError(f"{shown}: manifest over {_MAX_MANIFEST_BYTES} bytes, refused")
    try:
        manifest = json.loads(data)
    except json.JSONDecodeError as e:
        raise ArchiveError(
            f"{shown}: invalid JSON: {e.msg} at line {e.lineno} column {e.colno} (char {e.pos})"
        ) from None
    except UnicodeDecodeError as e:
        raise ArchiveError(f"{shown}: not valid UTF-8 at byte {e.start}") from None
    except ValueError:  # an integer over Python's digit limit
        raise ArchiveError(f"{shown}: invalid JSON: a number is too long") from None
    except RecursionError:
        raise ArchiveError(f"{shown}: invalid JSON: nested too deeply") from None
    if not isinstance(manifest, dict):
        found = _JSON_TYPES.get(type(manifest).__name__, "null")
        raise ArchiveError(f"{shown}: must hold a JSON object, not {found}")
    version = manifest.get("format_version")
    if type(version) is not int or version != MANIFEST_VERSION:
        writer = manifest.get("perfkit_version")
        by = f"perfkit {_show_value(writer)}" if writer is not None else "an unknown perfkit version"
        found = "no format_version" if version is None else f"format_version {_show_value(version)}"
        raise ArchiveError(
            f"{shown}: {found}, written by {by}; this perfkit reads format version {MANIFEST_VERSION}"
        )
    captures = manifest.get("captures", [])
    if not isinstance(captures, list):
        raise ArchiveError(f"{shown}: 'captures' must be a list")
    for i, rec in enumerate(captures):
        if not isinstance(rec, dict):
            raise ArchiveError(f"{shown}: captures[{i}] must be an object")
    return manifest


def _check_records(
    root: Path,
    manifest: dict[str, Any] | None,
    files: list[str],
    known: list[dict[str, str]],
    shown: str,
    digests: bool,
) -> tuple[list[dict[str, str]], list[Unchecked]]:
    """Problems where the manifest's capture records and the files disagree, and (without `digests`)
    the sha256 left unchecked by path.

    Files nobody listed are not problems: they are sniffed like a foreign archive's. A path already
    in `known` (e.g. a symlink skipped in a directory input) is not reported twice.
    """
    unchecked: list[Unchecked] = []
    if manifest is None:
        return [], unchecked
    present = set(files)
    reported = {p["path"] for p in known}

    def already_reported(rel: str) -> bool:
        parts = rel.split("/")
        return any("/".join(parts[:i]) in reported for i in range(1, len(parts) + 1))

    out: list[dict[str, str]] = []
    for i, rec in enumerate(manifest.get("captures", [])):
        rel = _record_path(rec, i, shown)
        if rel is None:
            out.append({"path": MANIFEST, "reason": f"captures[{i}] has no path and no host and id"})
        elif rel not in present:
            if not already_reported(rel):
                out.append({"path": rel, "reason": "listed in manifest but absent"})
        else:
            mismatch = _verify(root / rel, rec, digests)
            if mismatch:
                out.append({"path": rel, "reason": mismatch})
            elif not digests and rec.get("sha256") is not None:
                unchecked.append(Unchecked(rel, rec["sha256"], len(known) + len(out)))
    return out, unchecked


def _record_path(rec: dict[str, Any], i: int, shown: str) -> str | None:
    """The relative file path a capture record points at: its `path`, else hosts/<host>/<id>.out."""
    path = rec.get("path")
    if path is None:
        host, cid = rec.get("host"), rec.get("id")
        if not (isinstance(host, str) and host and isinstance(cid, str) and cid):
            return None
        path = f"hosts/{host}/{cid}.out"
    elif not isinstance(path, str) or not path:
        return None
    rule = _name_rule(path, Limits(max_name_len=4096, max_component_len=4096))
    if rule:
        raise UnsafeArchive(
            f"{shown}: unsafe manifest record captures[{i}] (id {_show_value(rec.get('id'))}): "
            f"path {_show(path)}: {rule}"
        )
    return "/".join(_split(path))


def _verify(path: Path, rec: dict[str, Any], digests: bool) -> str | None:
    """Compare a file with its record's `bytes` and (with `digests`) `sha256`; a reason string on
    mismatch."""
    want_size, want_sha = rec.get("bytes"), rec.get("sha256")
    if want_size is None and want_sha is None:
        return None
    try:
        fd = _open_regular(path)
    except _Unreadable as e:
        return str(e)
    if fd is None:
        return "listed in manifest but absent"
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if want_size is not None and (type(want_size) is not int or want_size != size):
            return f"size mismatch: manifest says {_show_value(want_size)} bytes, file has {size}"
        if want_sha is None or not digests:
            return None
        return _digest_problem(want_sha, (_sha256(f), ""))


def file_digest(path: Path) -> tuple[str | None, str]:
    """A file's sha256 (hex), or None and why it cannot be read: made wherever the file is read, in
    any process (`Archive.problems_with` compares it with the record's)."""
    try:
        fd = _open_regular(path)
    except _Unreadable as e:
        return None, str(e)
    if fd is None:
        return None, "listed in manifest but absent"
    with os.fdopen(fd, "rb") as f:
        return _sha256(f), ""


def _sha256(f: BinaryIO) -> str:
    digest = hashlib.sha256()
    while chunk := f.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _digest_problem(want_sha: Any, digest: tuple[str | None, str]) -> str | None:
    actual, unreadable = digest
    if actual is None:
        return unreadable
    if not isinstance(want_sha, str) or want_sha.lower() != actual:
        return f"sha256 mismatch: manifest says {_show_value(want_sha)}, file has {actual}"
    return None


PACKED_SUFFIXES = (".tar.gz", ".tgz")  # what `collect`/`run` write as one file; anything else is a directory


def check_new_output(path: Path | str) -> None:
    """Refuse an output location a new run cannot use, before anything slow starts (a --prepare that
    reloads the tables for hours, a preflight): a .tar.gz/.tgz that already exists (never overwritten),
    or a directory path that holds something or is not a directory. PerfkitError naming the path."""
    out = Path(path)
    if out.parent.exists() and not out.parent.is_dir():
        raise PerfkitError(f"{out.parent}: not a directory")
    if out.name.endswith(PACKED_SUFFIXES):
        if out.exists() or out.is_symlink():
            raise PerfkitError(f"{out}: exists; perfkit never overwrites an archive (choose a new name)")
    elif (out.exists() and not out.is_dir()) or (out.is_symlink() and not out.exists()):
        raise PerfkitError(f"{out}: exists and is not a directory (give a new directory or a .tar.gz name)")
    elif out.is_dir() and any(out.iterdir()):
        raise PerfkitError(f"{out}: output directory exists and is not empty")


def pack(directory: Path, out: Path) -> None:
    """Write `directory` as `out` (.tar.gz) with the directory's name as the single top folder.

    Only regular files and directories go in, with modes 0600/0700 and no owner names, so the
    archive reads back through `open_archive`'s checks. Written to a temp name of its own, then linked
    to the final name, so a failure never leaves a half archive under the final name and a file that
    appeared there meanwhile (another run, the user) is never replaced: FileExistsError instead.
    """
    directory = Path(directory)
    fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent)
    tmp = Path(name)
    try:
        with (
            os.fdopen(fd, "wb") as fh,
            tarfile.open(fileobj=fh, mode="w:gz", format=tarfile.PAX_FORMAT) as tar,
        ):
            for path in [directory, *sorted(directory.rglob("*"))]:
                if path.is_symlink() or not (path.is_file() or path.is_dir()):
                    continue
                info = tar.gettarinfo(
                    str(path), arcname=str(Path(directory.name) / path.relative_to(directory))
                )
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o700 if info.isdir() else 0o600
                if info.isdir():
                    tar.addfile(info)
                else:
                    with open(path, "rb") as src:
                        tar.addfile(info, src)
        _publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _publish(tmp: Path, out: Path) -> None:
    """Give `tmp` the name `out` unless `out` exists. A hard link fails on an existing name (rename
    would replace it); where the filesystem has no hard links, a check just before the rename."""
    try:
        os.link(tmp, out)
    except OSError as exc:  # FileExistsError included: it is not in the list
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS):
            raise
        if out.exists() or out.is_symlink():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(out)) from None
        os.replace(tmp, out)

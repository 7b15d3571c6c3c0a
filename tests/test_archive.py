"""perfkit.archive against hostile and broken archives (reliability.md T1-T6).

Every tarball is built here from `tarfile.TarInfo` headers written byte by byte (no binary
fixtures, and no tarfile writer quietly fixing names up). Each refusal is checked for: the error
class, a one-line message naming the member, nothing created anywhere under the test's tmp dir
(escapes would land inside it: the extraction temp dir is nested several levels down), and no
`perfkit-*` temp dir left behind.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import hashlib
import io
import json
import lzma
import os
import random
import re
import shutil
import stat
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfkit import archive
from perfkit.archive import MANIFEST_VERSION, Limits, open_archive, read_manifest
from perfkit.errors import ArchiveError, UnsafeArchive

MiB = 1 << 20


# --------------------------------------------------------------------------- building tarballs


def entry(
    name: str,
    data: bytes = b"",
    *,
    type: bytes = tarfile.REGTYPE,
    mode: int = 0o644,
    linkname: str = "",
    size: int | None = None,
) -> tuple[tarfile.TarInfo, bytes]:
    """One member: its header and the data that follows it (`size` may lie about the data)."""
    ti = tarfile.TarInfo(name)
    ti.type = type
    ti.mode = mode
    ti.linkname = linkname
    ti.size = len(data) if size is None else size
    ti.mtime = 1_700_000_000
    if type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        ti.devmajor, ti.devminor = 1, 3
    return ti, data


def dirent(name: str, mode: int = 0o755) -> tuple[tarfile.TarInfo, bytes]:
    return entry(name, type=tarfile.DIRTYPE, mode=mode)


def tar_bytes(members: list[tuple[tarfile.TarInfo, bytes]], *, end: bool = True) -> bytes:
    """A tar stream written header by header, so hostile names and types survive as given."""
    out = io.BytesIO()
    for ti, data in members:
        out.write(ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
        if ti.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE) or data:
            out.write(data)
            out.write(b"\0" * (-len(data) % tarfile.BLOCKSIZE))
    if end:
        out.write(b"\0" * (2 * tarfile.BLOCKSIZE))
    return out.getvalue()


def compress(raw: bytes, how: str = "gz") -> bytes:
    if how == "gz":
        return gzip.compress(raw, mtime=0)
    if how == "bz2":
        return bz2.compress(raw)
    if how == "xz":
        return lzma.compress(raw)
    return raw


@dataclass
class Sandbox:
    """tmp_path laid out so that any escape from the extraction dir lands somewhere we look."""

    base: Path
    tmp: Path  # tempfile.tempdir during the test, five levels below base
    inputs: Path

    def write(self, name: str, data: bytes) -> Path:
        path = self.inputs / name
        path.write_bytes(data)
        return path

    def tarball(self, members: list[tuple[tarfile.TarInfo, bytes]], name: str = "run.tar.gz") -> Path:
        how = {"gz": "gz", "tgz": "gz", "bz2": "bz2", "xz": "xz"}.get(name.rsplit(".", 1)[-1], "")
        return self.write(name, compress(tar_bytes(members), how))

    def snapshot(self) -> set[str]:
        found = set()
        for dirpath, dirnames, filenames in os.walk(self.base):
            for n in dirnames + filenames:
                found.add(os.path.relpath(os.path.join(dirpath, n), self.base))
        return found

    def leftovers(self) -> list[Path]:
        return sorted(self.tmp.glob("perfkit-*"))


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    tmp = tmp_path / "sentinel" / "a" / "b" / "c" / "tmp"
    tmp.mkdir(parents=True)
    inputs = tmp_path / "sentinel" / "in"
    inputs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return Sandbox(tmp_path, tmp, inputs)


def refused(
    box: Sandbox,
    path: Path,
    member: str | None,
    *,
    limits: Limits = archive.DEFAULT_LIMITS,
    error: type[ArchiveError] = UnsafeArchive,
    rule: str = "",
) -> str:
    """Open `path`, expect `error`, check the message and that nothing was left; return the message."""
    before = box.snapshot()
    with pytest.raises(error) as info, open_archive(path, limits=limits):
        pytest.fail("archive was opened")
    msg = str(info.value)
    assert type(info.value) is error or error is ArchiveError
    assert "\n" not in msg and "Traceback" not in msg
    assert not re.search(r"\b\w*(Error|Exception)\b", msg), msg
    assert str(path) in msg
    if member is not None:
        shown = repr(member) if len(member) <= 200 else repr(member[:200])
        assert shown in msg
    assert rule in msg
    assert box.snapshot() == before
    assert box.leftovers() == []
    return msg


# --------------------------------------------------------------------------- T1: names that escape


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("../x", "'..'"),
        ("a/../../x", "'..'"),
        ("ok/../../../../../../escaped", "'..'"),
        ("/abs/x", "absolute"),
        ("C:\\x", "drive"),
        ("C:x", "drive"),
        ("\\\\server\\share\\x", "UNC"),
        ("//server/share/x", "UNC"),
        ("dir\\..\\..\\x", "backslash"),
    ],
)
def test_escaping_names_are_refused(box: Sandbox, name: str, rule: str) -> None:
    path = box.tarball([dirent("ok"), entry("ok/fine.txt", b"fine"), entry(name, b"evil")])
    refused(box, path, name, rule=rule)


def test_absolute_name_pointing_into_the_sandbox_is_refused(box: Sandbox) -> None:
    name = str(box.base / "sentinel" / "abs-escape")
    refused(box, box.tarball([entry(name, b"evil")]), name, rule="absolute")


# --------------------------------------------------------------------------- T2: links


def test_symlink_is_refused(box: Sandbox) -> None:
    path = box.tarball([entry("link", type=tarfile.SYMTYPE, linkname="/etc/passwd")])
    refused(box, path, "link", rule="symlink to '/etc/passwd' is not a regular file")


def test_hardlink_is_refused(box: Sandbox) -> None:
    path = box.tarball([entry("hard", type=tarfile.LNKTYPE, linkname="/etc/passwd")])
    refused(box, path, "hard", rule="hardlink")


def test_symlink_then_file_with_the_same_path_is_refused_at_the_symlink(box: Sandbox) -> None:
    outside = box.base / "sentinel" / "victim"
    path = box.tarball([entry("x", type=tarfile.SYMTYPE, linkname=str(outside)), entry("x", b"overwrite")])
    refused(box, path, "x", rule="symlink")
    assert not outside.exists()


def test_path_max_symlink_chain_is_refused_at_the_first_symlink(box: Sandbox) -> None:
    """CPython test_realpath_limit_attack (CVE-2025-4517): 3.11.7's data filter lets it write outside."""
    steps = "abcdefghijklmnop"
    max_path = os.pathconf(box.tmp, "PC_PATH_MAX")
    dest_len = len(str(box.tmp)) + len("/perfkit-xxxxxxxx") + 1
    component = "d" * ((max_path - dest_len) // (len(steps) + 1))
    members, path = [], ""
    for step in steps:
        members.append(dirent(os.path.join(path, component), mode=0o777))
        members.append(entry(os.path.join(path, step), type=tarfile.SYMTYPE, linkname=component))
        path = os.path.join(path, component)
    linkpath = os.path.join(*steps, "l" * 254)
    members.append(entry(linkpath, type=tarfile.SYMTYPE, linkname=os.path.join(*[".."] * len(steps))))
    members.append(entry("escape", type=tarfile.SYMTYPE, linkname=os.path.join(linkpath, "..")))
    members.append(entry("flaglink", type=tarfile.LNKTYPE, linkname=os.path.join("escape", "flag")))
    members.append(entry("flaglink", b"overwrite"))
    members.append(entry("escape/newfile", b"new"))
    msg = refused(box, box.tarball(members), "a", rule="symlink to")
    assert "escape" not in msg and "flaglink" not in msg


# --------------------------------------------------------------------------- T3: types, bits, names


@pytest.mark.parametrize(
    ("kind", "rule"),
    [
        (tarfile.CHRTYPE, "character device"),
        (tarfile.BLKTYPE, "block device"),
        (tarfile.FIFOTYPE, "FIFO"),
        (tarfile.CONTTYPE, "contiguous file"),
        (tarfile.GNUTYPE_SPARSE, "sparse"),
        (b"V", "type b'V'"),
    ],
)
def test_special_member_types_are_refused(box: Sandbox, kind: bytes, rule: str) -> None:
    path = box.tarball([entry("hosts/dev", type=kind)])
    refused(box, path, "hosts/dev", rule=rule)


@pytest.mark.parametrize(("mode", "rule"), [(0o4755, "setuid"), (0o2755, "setgid"), (0o1777, "sticky")])
def test_special_mode_bits_are_refused(box: Sandbox, mode: int, rule: str) -> None:
    refused(box, box.tarball([entry("tool", b"#!/bin/sh\n", mode=mode)]), "tool", rule=rule)


def test_setgid_and_sticky_directories_are_accepted(box: Sandbox) -> None:
    # GNU tar records g+s on directories created inside shared group folders; modes are never kept.
    path = box.tarball(
        [
            entry("run/", type=tarfile.DIRTYPE, mode=0o2775),
            entry("run/tmp/", type=tarfile.DIRTYPE, mode=0o1777),
            entry("run/a.txt", b"x"),
        ]
    )
    with open_archive(path) as archive:
        assert archive.files == ["a.txt"]


@pytest.mark.parametrize(
    ("first", "second", "rule"),
    [
        ("run/manifest.json", "run/manifest.json", "duplicate name: same path as an earlier file"),
        ("./a", "a", "duplicate name: same path as an earlier file member 'a'"),
        ("README", "readme", "differs only in case from member 'README'"),
        ("Hosts/db1/vmstat", "hosts/db1/iostat", "differs only in case from member 'Hosts'"),
        ("data", "data/inner.txt", "nested under file member 'data'"),
        ("d/inner.txt", "d", "regular file where earlier members need a directory"),
    ],
)
def test_colliding_names_are_refused(box: Sandbox, first: str, second: str, rule: str) -> None:
    path = box.tarball([entry(first, b"1"), entry(second, b"2")])
    refused(box, path, second, rule=rule)


def test_duplicate_directory_with_trailing_slash_is_refused(box: Sandbox) -> None:
    path = box.tarball([dirent("run/"), dirent("./run")])
    refused(box, path, "./run", rule="duplicate")


@pytest.mark.parametrize("name", ["\x1b[31mred\x1b[0m.log", "bell\x07", "del\x7f", "csi\x9b2J", "new\nline"])
def test_control_characters_in_names_are_refused_and_escaped(box: Sandbox, name: str) -> None:
    msg = refused(box, box.tarball([entry(name, b"x")]), name, rule="control character")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in msg)


def test_name_that_is_not_utf8_is_read_under_its_shown_name(box: Sandbox) -> None:
    # a capture named on a Latin-1 host (byte 0xe9, which tarfile decodes as a lone surrogate) is no
    # attack: one odd name must not refuse the archive; it is extracted and listed as `caf\xe9.log`
    odd = "run/caf\udce9.log"
    path = box.tarball(
        [dirent("run"), entry("run/vmstat.txt", b"ok"), entry(odd, b"data"), entry("run/x\udcff", b"")]
    )
    with open_archive(path) as ar:
        assert ar.files == ["caf\\xe9.log", "vmstat.txt", "x\\xff"]
        assert (ar.root / "caf\\xe9.log").read_bytes() == b"data" and ar.problems == []
        assert all(n.isprintable() for n in os.listdir(ar.root))
    assert box.leftovers() == []
    assert archive.shown_name(os.fsdecode(b"vmstat_\xff")) == "vmstat_\\xff"
    assert archive.shown_name("plain/caf\u00e9") == "plain/caf\u00e9"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("../caf\udce9", "'..'"),
        ("caf\udce9\x1b[31m", "control character"),
        ("/abs/\udcff", "absolute"),
        ("run/" + "\udcff" * 100, "max_component_len (255)"),  # 100 bytes, 400 once shown as \xff
    ],
)
def test_hostile_names_with_bytes_that_are_not_utf8_are_still_refused(
    box: Sandbox, name: str, rule: str
) -> None:
    refused(box, box.tarball([entry(name, b"x")]), name, rule=rule)


def test_name_not_utf8_cannot_collide_with_its_shown_name(box: Sandbox) -> None:
    # a member literally named like another's shown name has a backslash: refused before any collision
    path = box.tarball([entry("caf\udce9.log", b"a"), entry("caf\\xe9.log", b"b")])
    refused(box, path, "caf\\xe9.log", rule="backslash in name")


def test_manifest_record_not_utf8_is_still_refused(box: Sandbox) -> None:
    manifest = {"format_version": 1, "captures": [{"path": "caf\udce9.log", "kind": "vmstat"}]}
    path = box.tarball([entry("manifest.json", json.dumps(manifest).encode())])
    refused(box, path, None, rule="not valid UTF-8")


def test_4kb_name_is_refused(box: Sandbox) -> None:
    name = "n" * 4096
    refused(box, box.tarball([entry(name, b"x")]), name, rule="max_name_len (1024)")


def test_long_component_is_refused(box: Sandbox) -> None:
    name = "run/" + "c" * 300
    refused(box, box.tarball([entry(name, b"x")]), name, rule="max_component_len (255)")


# --------------------------------------------------------------------------- T4: caps


def test_too_many_members_stops_at_the_first_one_over(box: Sandbox) -> None:
    members = [entry(f"f{i}", b"x") for i in range(4)]
    # garbage after the breach: refusing must not need to read it
    raw = tar_bytes(members, end=False) + os.urandom(4096)
    path = box.write("many.tar.gz", compress(raw))
    refused(box, path, "f3", limits=Limits(max_members=3), rule="max_members (3)")


def test_member_over_max_member_bytes_is_refused(box: Sandbox) -> None:
    path = box.tarball([entry("small", b"x" * 100), entry("big", b"x" * 101)])
    refused(box, path, "big", limits=Limits(max_member_bytes=100), rule="max_member_bytes (100)")


def test_huge_declared_size_is_refused_without_reading_data(box: Sandbox) -> None:
    raw = tar_bytes([entry("huge.out", size=3 << 30)], end=False)  # 3 GiB declared, no data at all
    path = box.write("huge.tar.gz", compress(raw))
    refused(box, path, "huge.out", rule="max_member_bytes")


def test_total_over_max_total_bytes_is_refused(box: Sandbox) -> None:
    path = box.tarball([entry(f"part{i}", b"y" * 100) for i in range(3)])
    refused(box, path, "part2", limits=Limits(max_total_bytes=250), rule="max_total_bytes (250)")


def test_gzip_bomb_is_refused_at_its_header(box: Sandbox) -> None:
    path = box.tarball([entry("hosts/db1/bomb.out", bytes(50 * MiB))])
    assert path.stat().st_size < MiB
    started = time.monotonic()
    refused(
        box, path, "hosts/db1/bomb.out", limits=Limits(max_member_bytes=10 * MiB), rule="max_member_bytes"
    )
    assert time.monotonic() - started < 5


def test_gzip_of_bare_zeros_is_refused_without_inflating_it_all(box: Sandbox) -> None:
    path = box.write("zeros.tar.gz", gzip.compress(bytes(50 * MiB), compresslevel=9, mtime=0))
    refused(box, path, None, rule="after the end-of-archive marker")


def test_oversized_pax_header_is_refused_before_tarfile_loads_it(box: Sandbox) -> None:
    pax = entry("././@PaxHeader", bytes(4 * MiB), type=tarfile.XHDTYPE)
    path = box.tarball([pax, entry("after", b"x")])
    refused(box, path, None, rule="extension headers")


def test_short_free_space_is_refused_with_the_numbers(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    path = box.tarball([entry("a.out", b"x" * 5000)])
    usage = shutil.disk_usage(box.tmp)
    monkeypatch.setattr(archive.shutil, "disk_usage", lambda _p: usage._replace(free=1000))
    msg = refused(box, path, None, error=ArchiveError, rule="only 1000 bytes free")
    assert "9096 bytes" in msg  # 5000 declared + one member's overhead


# --------------------------------------------------------------------------- T5: corrupt input


def good_members() -> list[tuple[tarfile.TarInfo, bytes]]:
    rnd = random.Random(7)
    return [
        dirent("run1"),
        entry("run1/sysbench.log", bytes(rnd.getrandbits(8) for _ in range(20_000))),
        entry("run1/vmstat_1", b"procs -----------memory----------\n" * 300),
        entry("run1/iostatx_1", bytes(rnd.getrandbits(8) for _ in range(30_000))),
    ]


def test_gzip_truncated_at_random_bytes_is_an_archive_error(box: Sandbox) -> None:
    whole = compress(tar_bytes(good_members()))
    rnd = random.Random(20260611)
    for cut in sorted(rnd.sample(range(1, len(whole)), 25)) + [len(whole) - 1]:
        path = box.write("cut.tar.gz", whole[:cut])
        refused(box, path, None, error=ArchiveError)
        path.unlink()


def test_plain_tar_cut_at_a_header_boundary_is_truncated(box: Sandbox) -> None:
    raw = tar_bytes(good_members(), end=False)
    path = box.write("cut.tar", raw)
    refused(box, path, None, error=ArchiveError, rule="truncated")


def test_plain_tar_cut_inside_member_data_is_an_archive_error(box: Sandbox) -> None:
    raw = tar_bytes(good_members())
    path = box.write("cut.tar", raw[:5000])
    refused(box, path, None, error=ArchiveError)


def test_corrupt_header_in_the_middle_is_an_archive_error(box: Sandbox) -> None:
    raw = bytearray(tar_bytes([entry("one", b"1"), entry("two", b"2")]))
    raw[1024 + 148 : 1024 + 156] = b"0000000\0"  # second header's checksum
    path = box.write("bad.tar.gz", compress(bytes(raw)))
    refused(box, path, None, error=ArchiveError, rule="invalid tar header at byte 1024")


@pytest.mark.parametrize(
    ("name", "data", "rule"),
    [
        ("notes.tar.gz", b"just some text, not a tarball\n" * 40, "not a tar archive"),
        ("noise.tgz", random.Random(3).randbytes(4096), "not a tar archive"),
        ("text.tar.gz", gzip.compress(b"hello\n" * 1000, mtime=0), "not a tar archive"),
        ("empty.tar.gz", b"", "empty file"),
        ("empty-gzip.tar.gz", gzip.compress(b"", mtime=0), "not a tar archive"),
        ("badcrc.tar.gz", gzip.compress(tar_bytes([entry("a", b"a")]), mtime=0)[:-8] + bytes(8), "CRC"),
    ],
)
def test_not_a_tarball_is_a_one_line_error_naming_the_file(
    box: Sandbox, name: str, data: bytes, rule: str
) -> None:
    refused(box, box.write(name, data), None, error=ArchiveError, rule=rule)


def test_missing_path_is_an_archive_error(box: Sandbox) -> None:
    refused(box, box.inputs / "nope.tar.gz", None, error=ArchiveError, rule="no such file")


def test_failure_half_way_through_extraction_removes_the_temp_dir(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = box.tarball(good_members())
    real_open = os.open
    created = []

    def failing_open(p: str | os.PathLike[str], flags: int, *args: int, **kw: object) -> int:
        if flags & os.O_EXCL:
            created.append(p)
            if len(created) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(p))
        return real_open(p, flags, *args, **kw)

    monkeypatch.setattr(archive.os, "open", failing_open)
    refused(box, path, "run1/vmstat_1", error=ArchiveError, rule="No space left on device")
    assert len(created) == 2


# --------------------------------------------------------------------------- T6: manifests


def capture(host: str, cid: str, data: bytes, **extra: object) -> dict[str, object]:
    return {
        "id": cid,
        "host": host,
        "kind": cid,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    } | extra


def manifest_bytes(captures: list[dict[str, object]], **extra: object) -> bytes:
    doc = {"format_version": 1, "perfkit_version": "0.1.0", "run_id": "r1", "captures": captures} | extra
    return json.dumps(doc).encode()


VMSTAT = b"procs ---memory--- r b swpd\n 1 0 0\n"
IOSTAT = b"Device r/s w/s\nsda 1.0 2.0\n"


def test_good_tarball_with_top_dir_and_manifest(box: Sandbox) -> None:
    caps = [capture("db1", "vmstat", VMSTAT), capture("db1", "iostat", IOSTAT)]
    path = box.tarball(
        [
            dirent("run1", mode=0o500),
            entry("run1/manifest.json", manifest_bytes(caps)),
            dirent("run1/hosts", mode=0o000),
            entry("run1/hosts/db1/vmstat.out", VMSTAT, mode=0o000),
            entry("run1/hosts/db1/iostat.out", IOSTAT),
            entry("run1/load/t0008/sysbench.out", b"SQL statistics:\n"),
        ],
        name="run1.tar.gz",
    )
    before = box.snapshot()
    with open_archive(path) as arc:
        assert arc.name == "run1.tar.gz"
        assert arc.root.name == "run1" and arc.root.parent.name.startswith("perfkit-")
        assert arc.root.parent.parent == box.tmp
        assert arc.manifest is not None and arc.manifest["format_version"] == MANIFEST_VERSION
        assert arc.files == ["hosts/db1/iostat.out", "hosts/db1/vmstat.out", "load/t0008/sysbench.out"]
        assert arc.problems == []
        vm = arc.root / "hosts/db1/vmstat.out"
        assert vm.read_bytes() == VMSTAT
        assert stat.S_IMODE(vm.stat().st_mode) & 0o077 == 0
        assert stat.S_IMODE((arc.root / "hosts").stat().st_mode) == 0o700 & ~_umask()
        root = arc.root
    assert not root.exists()
    assert box.leftovers() == []
    assert box.snapshot() == before


@pytest.mark.parametrize(
    "name", ["wei_ceshi_x.tar.gz", "wei_ceshi_x.tar", "wei.tar.bz2", "wei.tar.xz", "wei.bin"]
)
def test_good_foreign_tarball_without_manifest(box: Sandbox, name: str) -> None:
    """The shape seed 000's shell script packs: `tar zcf wei_ceshi_x.tar.gz wei_ceshi_x`."""
    top = "wei_ceshi_x"
    names = ["sysbench.log", "os_x/vmstat_1", "os_x/iostatx_1", "os_x/top_1", "os_x/sarnet_1", "os_x/iotop_1"]
    members = [dirent(top), dirent(f"{top}/os_x")] + [entry(f"{top}/{n}", f"{n}\n".encode()) for n in names]
    raw = tar_bytes(members)
    path = box.write(name, compress(raw, "gz" if name.endswith((".gz", ".bin")) else name.rsplit(".", 1)[-1]))
    with open_archive(path) as arc:
        assert arc.manifest is None
        assert arc.root.name == top
        assert arc.files == sorted(names)
        assert (arc.root / "os_x/top_1").read_text() == "os_x/top_1\n"
        assert arc.problems == []
    assert box.leftovers() == []


def test_tarball_without_a_common_top_dir_is_rooted_at_the_extraction_dir(box: Sandbox) -> None:
    caps = [capture("db1", "vmstat", VMSTAT)]
    path = box.tarball(
        [
            dirent("./"),
            entry("./manifest.json", manifest_bytes(caps)),
            entry("./hosts/db1/vmstat.out", VMSTAT),
        ]
    )
    with open_archive(path) as arc:
        assert arc.root.name.startswith("perfkit-")
        assert arc.manifest is not None
        assert arc.files == ["hosts/db1/vmstat.out"]
        assert arc.problems == []
    assert box.leftovers() == []


@pytest.mark.parametrize(
    ("names", "root_is_tmp"),
    [
        (["./", "./hosts/", "./hosts/db1/v.out"], True),  # tar -C run1 .
        (["hosts/", "hosts/db1/v.out"], True),  # a run dir's content, manifest missing
        (["run1/", "run1/hosts/db1/v.out"], False),
        (["v.out"], True),
    ],
)
def test_choice_of_root(box: Sandbox, names: list[str], root_is_tmp: bool) -> None:
    path = box.tarball([dirent(n) if n.endswith("/") else entry(n, b"v") for n in names])
    with open_archive(path) as arc:
        assert arc.root.name.startswith("perfkit-") is root_is_tmp
        assert [f.rsplit("/", 1)[-1] for f in arc.files] == ["v.out"]


def test_unknown_format_version_names_the_version_and_the_writer(box: Sandbox) -> None:
    path = box.tarball(
        [entry("run1/manifest.json", manifest_bytes([], format_version=2, perfkit_version="9.9.9"))]
    )
    msg = refused(box, path, None, error=ArchiveError, rule="format_version 2,")
    assert "perfkit '9.9.9'" in msg and "reads format version 1" in msg
    assert "run1/manifest.json" in msg


@pytest.mark.parametrize("version", [None, True, "1", 1.0])
def test_format_version_must_be_the_integer_1(box: Sandbox, version: object) -> None:
    doc = {"perfkit_version": "0.1.0"} if version is None else {"format_version": version}
    path = box.tarball([entry("run1/manifest.json", json.dumps(doc).encode())])
    refused(box, path, None, error=ArchiveError, rule="this perfkit reads format version 1")


def test_invalid_manifest_json_names_the_file_and_position(box: Sandbox) -> None:
    path = box.tarball([entry("run1/manifest.json", b'{"format_version": 1,\n "captures": [}')])
    refused(box, path, None, error=ArchiveError, rule="run1/manifest.json: invalid JSON")
    with pytest.raises(ArchiveError, match=r"line 2 column 15"), open_archive(path):
        pass


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        (b"[1, 2]", "must hold a JSON object, not an array"),
        (b'{"format_version": ' + b"9" * 5000 + b"}", "a number is too long"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"format_version": 1, "captures": {}}', "'captures' must be a list"),
        (b'{"format_version": 1, "captures": [{}, "x"]}', "captures[1] must be an object"),
        (b"\xff\xfe{}", "manifest.json"),
    ],
)
def test_malformed_manifests_are_one_line_errors(box: Sandbox, data: bytes, rule: str) -> None:
    refused(box, box.tarball([entry("run1/manifest.json", data)]), None, error=ArchiveError, rule=rule)


def test_manifest_lies_become_problems(box: Sandbox) -> None:
    caps = [
        capture("db1", "vmstat", VMSTAT),
        capture("db1", "iostat", IOSTAT, sha256="0" * 64),
        capture("db1", "top", b"top output\n"),  # listed, never packed
        capture("db1", "sar", b"sar output\n", bytes=999),
        {"id": "pprof", "host": "tidb1", "kind": "pprof", "path": "./hosts/tidb1/cpu.pb.gz"},
        {"kind": "vmstat"},
    ]
    path = box.tarball(
        [
            entry("run1/manifest.json", manifest_bytes(caps)),
            entry("run1/hosts/db1/vmstat.out", VMSTAT),
            entry("run1/hosts/db1/iostat.out", IOSTAT),
            entry("run1/hosts/db1/sar.out", b"sar output\n"),
            entry("run1/hosts/db1/unlisted.out", b"extra\n"),
        ]
    )
    with open_archive(path) as arc:
        by_path = {p["path"]: p["reason"] for p in arc.problems}
        assert "unlisted.out" not in " ".join(by_path)
        assert by_path["hosts/db1/top.out"] == "listed in manifest but absent"
        assert by_path["hosts/tidb1/cpu.pb.gz"] == "listed in manifest but absent"
        sha = hashlib.sha256(IOSTAT).hexdigest()
        assert (
            by_path["hosts/db1/iostat.out"] == f"sha256 mismatch: manifest says '{'0' * 64}', file has {sha}"
        )
        assert by_path["hosts/db1/sar.out"] == "size mismatch: manifest says 999 bytes, file has 11"
        assert by_path["manifest.json"] == "captures[5] has no path and no host and id"
        assert "hosts/db1/vmstat.out" not in by_path
        assert len(arc.problems) == 5
    assert box.leftovers() == []


@pytest.mark.parametrize(
    ("record", "rule"),
    [
        ({"id": "x", "host": "db1", "kind": "vmstat", "path": "/etc/passwd"}, "absolute"),
        ({"id": "x", "host": "db1", "kind": "vmstat", "path": "../../etc/passwd"}, "'..'"),
        ({"id": "passwd", "host": "../../../etc", "kind": "vmstat"}, "'..'"),
    ],
)
def test_manifest_record_paths_that_escape_are_refused(
    box: Sandbox, record: dict[str, str], rule: str
) -> None:
    path = box.tarball([entry("run1/manifest.json", manifest_bytes([record]))])
    msg = refused(box, path, None, rule=rule)
    assert "captures[0]" in msg


# --------------------------------------------------------------------------- directories and single files


def test_directory_input_skips_symlinks_and_reports_them(box: Sandbox) -> None:
    run = box.inputs / "run1"
    (run / "hosts/db1").mkdir(parents=True)
    secret = box.inputs / "secret.txt"
    secret.write_text("do not read\n")
    (run / "manifest.json").write_bytes(
        manifest_bytes([capture("db1", "vmstat", VMSTAT), capture("db1", "iostat", IOSTAT)])
    )
    (run / "hosts/db1/vmstat.out").write_bytes(VMSTAT)
    (run / "hosts/db1/iostat.out").symlink_to(secret)
    (run / "outside").symlink_to(box.inputs, target_is_directory=True)
    os.mkfifo(run / "pipe")
    before = box.snapshot()
    with open_archive(run) as arc:
        assert arc.root == run and arc.name == "run1"
        assert arc.manifest is not None
        assert arc.files == ["hosts/db1/vmstat.out"]
        assert arc.problems == [
            {"path": "hosts/db1/iostat.out", "reason": "symlink, not followed"},
            {"path": "outside", "reason": "symlink, not followed"},
            {"path": "pipe", "reason": "special file (device, FIFO or socket), not read"},
        ]
    assert box.snapshot() == before
    assert box.leftovers() == []


def test_symlinked_manifest_in_a_directory_is_not_followed(box: Sandbox) -> None:
    run = box.inputs / "run1"
    run.mkdir()
    (box.inputs / "elsewhere.json").write_bytes(manifest_bytes([]))
    (run / "manifest.json").symlink_to(box.inputs / "elsewhere.json")
    with pytest.raises(ArchiveError, match="symlink, not followed"), open_archive(run):
        pass
    with pytest.raises(ArchiveError, match="symlink, not followed"):
        read_manifest(run)


def test_single_file_input_lists_only_that_file(box: Sandbox) -> None:
    (box.inputs / "sibling.log").write_text("not me\n")
    vm = box.write("vmstat_1", VMSTAT)
    with open_archive(vm) as arc:
        assert arc.root == box.inputs and arc.files == ["vmstat_1"]
        assert arc.manifest is None and arc.problems == []
    assert box.leftovers() == []


def test_read_manifest(box: Sandbox) -> None:
    assert read_manifest(box.inputs) is None
    (box.inputs / "manifest.json").write_bytes(manifest_bytes([]))
    assert read_manifest(box.inputs)["run_id"] == "r1"  # type: ignore[index]


def test_an_exception_inside_the_with_block_still_removes_the_temp_dir(box: Sandbox) -> None:
    path = box.tarball(good_members())
    seen: list[Path] = []
    with pytest.raises(RuntimeError, match="boom"), open_archive(path) as arc:
        seen.append(arc.root)
        assert arc.root.is_dir()
        raise RuntimeError("boom")
    assert seen and not seen[0].exists()
    assert box.leftovers() == []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

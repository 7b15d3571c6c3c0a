"""Go pprof profiles over HTTP (TiDB, PD, TiKV, any `net/http/pprof` service), fetched by perfkit.

For a base URL such as `http://10.0.0.1:10080` perfkit takes, during the window: a CPU profile
covering it (`/debug/pprof/profile?seconds=W`), then heap, goroutine and mutex snapshots. Every
request says `Content-Type: application/protobuf`: TiKV's profile endpoint answers an SVG flame
graph without it (tikv#5961), Go ignores it. What comes back must be gzip (a protobuf profile);
anything else is recorded as failed with what it was. The HTTP timeout exceeds the profile's
seconds (+5 s), as pingcap/diag does.

TiDB's `/debug/zip?seconds=W` (`--tidb-zip`) answers one zip holding a CPU profile over W seconds,
goroutine, heap and mutex profiles, its config and version: taken instead of the pprof set for that
TiDB (Go runs one CPU profile at a time, so the two would collide). The zip is kept as it came and
its member list goes in the record.
"""

from __future__ import annotations

import hashlib
import re
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

SNAPSHOTS = ("heap", "goroutine", "mutex")
MAX_BYTES = 64 << 20
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"


def _what(head: bytes) -> str:
    """What an answer that is not the expected profile looks like, for its failure record."""
    if b"<svg" in head or b"<?xml" in head:
        return "an SVG (a TiKV flame graph?)"
    for magic, name in ((GZIP_MAGIC, "gzip data"), (ZIP_MAGIC, "a zip")):
        if head.startswith(magic):
            return name
    # a text answer (an error page) by its first line; other bytes in hex, which reads the same every time
    line = head.split(b"\n", 1)[0][:40].decode("ascii", errors="replace").strip()
    return f"text {line!r}" if line and line.isprintable() else f"bytes {head[:16].hex(' ')}"


def parse_base(url: str) -> tuple[str, str]:
    """(base URL without a trailing slash, archive host name) of an http(s) URL; ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"pprof URL must be http(s)://host[:port]: {url!r}")
    if parts.username or parts.password:
        raise ValueError("pprof URL must not carry credentials")
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if not re.fullmatch(r"[A-Za-z0-9._:\[\]-]{1,255}", host):
        raise ValueError(f"invalid host in pprof URL {url!r}")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}", host.replace("[", "").replace("]", "")


def plan(base: str, window: int) -> list[tuple[str, str]]:
    """(capture id, URL) in the order they are fetched: the CPU profile spans the window."""
    cpu = f"{base}/debug/pprof/profile?seconds={max(1, int(window))}"
    return [("pprof-cpu", cpu)] + [(f"pprof-{name}", f"{base}/debug/pprof/{name}") for name in SNAPSHOTS]


def zip_plan(base: str, window: int) -> list[tuple[str, str]]:
    """TiDB's debug zip: one request whose CPU profile spans the window."""
    return [("tidb-debug-zip", f"{base}/debug/zip?seconds={max(1, int(window))}")]


def fetch(url: str, out: Path, timeout: float, magic: bytes = GZIP_MAGIC) -> dict:
    """Download one profile into `out`; the manifest fields that describe it. What came back must
    start with `magic` (gzip for a pprof profile, a zip's local header for TiDB's debug zip)."""
    req = urllib.request.Request(
        url, headers={"Content-Type": "application/protobuf", "User-Agent": "perfkit"}
    )
    digest, size, truncated = hashlib.sha256(), 0, False
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp, open(out, "wb") as fh:  # noqa: S310 - http(s) only
            while chunk := resp.read(1 << 16):
                if size + len(chunk) > MAX_BYTES:
                    chunk, truncated = chunk[: MAX_BYTES - size], True
                fh.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                if truncated:
                    break
    except urllib.error.HTTPError as exc:
        return {
            "status": "failed",
            "reason": f"HTTP {exc.code} {exc.reason}",
            "exit_code": exc.code,
            "bytes": size,
        }
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return {
            "status": "failed",
            "reason": f"cannot fetch: {reason}",
            "exit_code": None,
            "bytes": size,
            "timed_out": isinstance(reason, TimeoutError) or "timed out" in str(reason),
        }
    head = out.read_bytes()[:64] if size else b""
    fields = {"bytes": size, "sha256": digest.hexdigest(), "truncated": truncated, "exit_code": 200}
    expected = "a zip" if magic == ZIP_MAGIC else "a gzip protobuf profile"
    if not head.startswith(magic):
        what = _what(head)
        return {**fields, "status": "failed", "reason": f"not {expected}: got {what}"}
    if magic == ZIP_MAGIC and not truncated:
        try:
            with zipfile.ZipFile(out) as zf:
                fields["members"] = zf.namelist()
        except (zipfile.BadZipFile, OSError) as exc:
            return {**fields, "status": "failed", "reason": f"not a readable zip: {exc}"}
    return {**fields, "status": "ok", "reason": ""}


def collect_profiles(
    base: str,
    host: str,
    root: Path,
    rel: str,
    window: int,
    stop: Callable[[], bool],
    now: Callable[[], str],
    *,
    tidb_zip: bool = False,
) -> list[dict]:
    """Fetch the plan for one base URL into `root/rel` (the host's directory in the archive); one
    record (dict) per profile."""
    hostdir = root / rel
    hostdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    step = rel.split("/")[2] if rel.count("/") >= 2 else None
    records = []
    steps = zip_plan(base, window) if tidb_zip else plan(base, window)
    for cid, url in steps:
        rec = {
            "id": cid,
            "host": host,
            "kind": "tidb_zip" if tidb_zip else "pprof",
            "command": f"GET {url}",
            "path": f"{rel}/{cid}.out",
            "step": step,
            "phase": "window",
            "env": {},
            "tool_version": None,
            "timed_out": False,
            "truncated": False,
        }
        if stop():
            rec.update(status="skipped", reason="stopped", bytes=0)
        else:
            rec["started_at"] = now()
            spans_window = cid in ("pprof-cpu", "tidb-debug-zip")
            timeout = window + 30 if tidb_zip else window + 5 if spans_window else 30
            rec.update(fetch(url, hostdir / f"{cid}.out", timeout, ZIP_MAGIC if tidb_zip else GZIP_MAGIC))
            rec["ended_at"] = now()
        (hostdir / f"{cid}.out").touch(mode=0o600)
        records.append(rec)
    return records

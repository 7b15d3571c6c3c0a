"""Ctrl-C and a full disk during `perfkit collect`, for real: a pseudo-terminal delivers SIGINT the
way a user's Ctrl-C does, and a private tmpfs (its own mount namespace) fills up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import captures, session
from perfkit.collectors._shell import KILL_AFTER_S
from perfkit.errors import PerfkitError
from perfkit.transport import LOCAL

from .conftest import need_tool
from .terminal import under_pty

pytestmark = pytest.mark.lab


def leftovers(run_id: str) -> str:
    return subprocess.run(["pgrep", "-af", session.tag(run_id)], capture_output=True, text=True).stdout


def test_first_ctrl_c_stops_cleanly_and_writes_an_interrupted_archive(tmp_path: Path) -> None:
    need_tool("vmstat")
    out = tmp_path / "run.tar.gz"
    code, text, took = under_pty(
        ["collect", "--local", "-d", "30", "--profile", "minimal", "-o", str(out)], ctrl_c_at=(3.0,)
    )
    assert code == session.EXIT_INTERRUPTED, text
    assert took < 15  # not the 30 s window
    with open_archive(out) as archive:
        m = archive.manifest
        assert m["status"] == "interrupted" and archive.problems == []
        vm = next(r for r in m["captures"] if r["id"] == "vmstat")
        assert vm["status"] == "interrupted" and vm["truncated"] and vm["bytes"] > 0
        assert (archive.root / vm["path"]).read_bytes().startswith(b"--procs--")
    assert "interrupted" in text and leftovers(m["run_id"]) == ""
    assert "\r\x1b[2Khosts 0/1 done | captures" in text and "s left" in text  # the live line, redrawn
    assert not list(tmp_path.glob("perfkit-collect-*"))


def test_second_ctrl_c_aborts_at_once_with_a_minimal_manifest(tmp_path: Path, monkeypatch) -> None:
    need_tool("vmstat")
    # a tool slow to stop, as when a user presses Ctrl-C twice: the real vmstat, ignoring TERM (an
    # ignored signal stays ignored across exec), so the first Ctrl-C's clean stop waits for `timeout`'s
    # KILL, KILL_AFTER_S later. The second Ctrl-C lands inside that wait on any machine: with a tool
    # that stops at once, the whole clean stop took 0.15 s here, and a second Ctrl-C 0.05 s after the
    # first came too late now and then (a complete archive, nothing staged to find)
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "vmstat").write_text(f"#!/bin/sh\ntrap '' TERM\nexec {shutil.which('vmstat')} \"$@\"\n")
    (shims / "vmstat").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "run.tar.gz"
    code, text, took = under_pty(
        ["collect", "--local", "-d", "30", "--profile", "minimal", "-o", str(out)], ctrl_c_at=(3.0, 3.5)
    )
    assert code == session.EXIT_INTERRUPTED, text
    assert took < 3.5 + KILL_AFTER_S - 1  # it did not wait for the clean stop to end
    [manifest] = tmp_path.glob("perfkit-collect-*/*/manifest.json")
    m = json.loads(manifest.read_text())
    assert m["status"] == "interrupted" and "minimal" in m["reason"]
    assert str(manifest.parent) in text  # the user is told where the data is
    deadline = time.monotonic() + 10
    while leftovers(m["run_id"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(m["run_id"]) == ""


def test_disk_full_keeps_what_was_written_and_says_so(tmp_path: Path) -> None:
    if not shutil.which("unshare") or os.geteuid() != 0:
        pytest.skip("needs unshare and root for a private tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    script = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from perfkit.collectors import captures, session
        from perfkit.transport import LOCAL
        session.FREE_FLOOR_BYTES = session.FREE_FLOOR_PCT = 0   # a 2 MiB filesystem, on purpose
        flood = captures.CaptureSpec("flood", "none", "yes perfkit-disk-fill", "yes", max_bytes=1 << 30)
        # like sar: a file in the work dir on the host; a line on stderr, saved when the capture ends
        scratch = "echo scratch > {{workdir}}/sa.bin; echo a warning >&2; sleep {{window}}"
        noisy = captures.CaptureSpec("noisy", "none", scratch, "sleep")
        opts = session.Options(window=5, specs=(flood, noisy), run_id="diskfull")
        res = session.collect([LOCAL], Path("{mnt}/run"), opts)
        size = Path("{mnt}/run/hosts/localhost/flood.out").stat().st_size
        print(json.dumps({{"exit": res.exit_code, "manifest": res.manifest, "size": size}}))
    """)
    shell = f"mount -t tmpfs -o size=2m tmpfs {mnt} && {sys.executable} -c '{script}'"
    proc = subprocess.run(["unshare", "-m", "sh", "-c", shell], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.splitlines()[-1])
    m = doc["manifest"]
    assert doc["exit"] == session.EXIT_PARTIAL and m["status"] == "disk_full"
    rec = m["captures"][0]
    assert rec["truncated"] and "disk full" in rec["reason"] and rec["bytes"] > 100_000
    assert rec["bytes"] == doc["size"]  # a partial write is counted exactly: the manifest never lies
    assert [(h["status"], h["reason"]) for h in m["hosts"]] == [("disk_full", "archive disk full")]
    noisy = m["captures"][1]
    assert noisy["status"] == "disk_full" and "disk full" in noisy["reason"]
    assert leftovers("diskfull") == ""
    # the host's clean-up ran whatever the archive side did: no work dir (with its sa.bin) left
    assert list(Path("/tmp").glob(f"{session.tag('diskfull')}*")) == []


def test_too_little_free_space_is_refused_with_the_numbers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(session, "FREE_FLOOR_BYTES", 1 << 60)
    with pytest.raises(PerfkitError, match=r"MiB free of .* needs at least"):
        session.collect([LOCAL], tmp_path / "run", session.Options(window=1, specs=captures.MINIMAL))
    assert not (tmp_path / "run").exists()

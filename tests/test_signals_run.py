"""SIGTERM and SIGHUP stop `perfkit collect` and `perfkit run` the way a first Ctrl-C does, for real:
perfkit runs as a subprocess, the signal comes from outside (a cancelled CI job, `timeout`, `kill`,
a closed terminal) in the middle of a window, and the run must end with its archive written and
marked `interrupted`, nothing of it left running or lying around, and exit 130."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from perfkit.archive import open_archive
from perfkit.collectors import session

from .conftest import PERFKIT, lab_password, need_tool

pytestmark = pytest.mark.lab


def descendants_when(pid: int, ready, within: float = 30) -> list[psutil.Process]:
    """Wait until `ready(processes)` holds for perfkit's descendants; those processes."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(psutil.NoSuchProcess):
            procs = psutil.Process(pid).children(recursive=True)
            if ready(procs):
                return procs
        time.sleep(0.1)
    pytest.fail(f"perfkit (pid {pid}) never reached the window")


def cmdlines(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            out.append(" ".join(p.cmdline()))
    return out


def still_running(procs: list[psutil.Process], within: float = 5) -> list[str]:
    """What of `procs` is still alive after `within` seconds (`is_running` checks the start time, so
    a reused pid is not mistaken for one of them)."""
    deadline = time.monotonic() + within
    while True:
        alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return cmdlines(alive)
        time.sleep(0.2)


def tagged(run_id: str) -> str:
    return subprocess.run(["pgrep", "-af", session.tag(run_id)], capture_output=True, text=True).stdout


def check_interrupted_archive(out: Path, signame: str) -> dict:
    """The archive exists and reads back, says `interrupted` by that signal, holds no reserve file."""
    assert out.is_file(), f"{out} not written"
    with open_archive(out) as archive:
        m = archive.manifest
        assert archive.problems == []
        assert not (archive.root / session.RESERVE).exists()
    assert m["status"] == "interrupted" and signame in m["reason"], m["reason"]
    assert not list(out.parent.glob("perfkit-collect-*")) and not list(out.parent.glob("perfkit-run-*"))
    assert not list(Path("/tmp").glob(f"{session.tag(m['run_id'])}*"))  # every host's work dir removed
    assert tagged(m["run_id"]) == ""
    return m


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_window_stops_collect_like_ctrl_c(tmp_path: Path, sig: signal.Signals) -> None:
    need_tool("vmstat")
    out = tmp_path / "run.tar.gz"
    proc = subprocess.Popen(
        [*PERFKIT, "collect", "--local", "-d", "30", "--profile", "minimal", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    procs = descendants_when(proc.pid, lambda ps: any("vmstat" in c for c in cmdlines(ps)))
    time.sleep(1)  # vmstat has printed a line or two
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == session.EXIT_INTERRUPTED, stderr[-2000:]
    assert time.monotonic() - started < 20  # not the 30 s window
    m = check_interrupted_archive(out, sig.name)
    vm = next(r for r in m["captures"] if r["id"] == "vmstat")
    assert vm["status"] == "interrupted" and vm["truncated"] and vm["bytes"] > 0
    assert f"stopped by {sig.name}" in vm["reason"]
    assert f"interrupted: wrote {out}" in stdout and "Traceback" not in stderr
    assert still_running(procs) == []


def test_closing_the_terminal_stops_collect_like_ctrl_c(tmp_path: Path) -> None:
    """The terminal goes away (an SSH session to the controller drops): SIGHUP, and from then on every
    write to the terminal fails. The run must still end cleanly and write its archive."""
    need_tool("vmstat")
    out = tmp_path / "run.tar.gz"
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(
            sys.executable,
            [*PERFKIT, "collect", "--local", "-d", "30", "--profile", "minimal", "-o", str(out)],
        )
    procs = descendants_when(pid, lambda ps: any("vmstat" in c for c in cmdlines(ps)))
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:  # read what it prints until the terminal closes
        if select.select([fd], [], [], 0.1)[0]:
            with contextlib.suppress(OSError):
                os.read(fd, 65536)
    os.close(fd)  # the kernel hangs the terminal up: SIGHUP to perfkit, its writes fail with EIO
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("perfkit did not exit after its terminal closed")
    assert os.waitstatus_to_exitcode(done[1]) == session.EXIT_INTERRUPTED
    check_interrupted_archive(out, "SIGHUP")
    assert still_running(procs) == []


def test_sigterm_mid_step_stops_run_like_ctrl_c(lab_mariadb: Path, tmp_path: Path) -> None:
    """A cancelled CI job: the step's sysbench is stopped and its totals kept, the 0600 file with the
    password goes with its dir, the archive is written with its manifest, nothing is left."""
    out = tmp_path / "sweep.tar.gz"
    args = ["run", "sysbench", "--mysql-user", "perfkit", "--tables", "2", "--table-size", "10000"]
    args += ["--threads", "1,2", "--time", "20", "--cooldown-max", "0", "--profile", "minimal"]
    args += ["--no-report", "-o", str(out)]
    env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": lab_password(lab_mariadb)}
    proc = subprocess.Popen(
        [*PERFKIT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    started = time.monotonic()

    def loading(ps: list[psutil.Process]) -> bool:  # sysbench and the step's vmstat both running
        lines = cmdlines(ps)
        return any("sysbench" in c and "--threads=1" in c for c in lines) and any(
            "vmstat" in c for c in lines
        )

    procs = descendants_when(proc.pid, loading)
    [secrets] = {
        a.split("=", 1)[1].rsplit("/", 1)[0]
        for c in cmdlines(procs)
        for a in c.split()
        if a.startswith("--config-file=/tmp/perfkit-load.")
    }
    assert Path(secrets).is_dir()
    time.sleep(2)  # sysbench has reported a second or two
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=90)
    assert proc.returncode == session.EXIT_INTERRUPTED, stderr[-2000:]
    assert time.monotonic() - started < 40  # not the two 20 s steps
    m = check_interrupted_archive(out, "SIGTERM")
    steps = {s["threads"]: (s["status"], s["reason"]) for s in m["sweep"]["steps"]}
    assert steps == {1: ("interrupted", "stopped by SIGTERM"), 2: ("skipped", "stopped")}, steps
    assert m["sweep"]["stopped_because"] == "stopped by SIGTERM"
    with open_archive(out) as archive:
        load = (archive.root / "load" / "t0001" / "sysbench.out").read_text()
    assert "] thds: 1 tps: " in load  # what sysbench reported before it was stopped is kept
    assert not Path(secrets).exists()  # the 0600 file with the password is gone with its dir
    assert still_running(procs) == []  # sysbench, the captures, their shells
    assert "Traceback" not in stderr and m["sweep"]["steps"][0]["load_s"] < 20

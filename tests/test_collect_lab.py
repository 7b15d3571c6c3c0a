"""`perfkit collect` for real on this machine: local commands, real tools, a real sysbench load."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from perfkit.cli import main
from perfkit.collectors import captures, session
from perfkit.dataset import KEPT_UNPARSED
from perfkit.pipeline import analyze_path
from perfkit.transport import LOCAL

from .conftest import need_tool

pytestmark = pytest.mark.lab

SPECS = captures.profile("minimal")


def leftovers(run_id: str) -> str:
    return subprocess.run(["pgrep", "-af", session.tag(run_id)], capture_output=True, text=True).stdout


def wrapper_adopted(run_id: str) -> bool:
    """The run's `timeout` wrapper is up and its shell parent has exited (it was re-parented)."""
    for proc in psutil.process_iter(["cmdline", "ppid"]):
        cmd = proc.info["cmdline"] or []
        if cmd[:1] == ["timeout"] and cmd[-1:] == [session.tag(run_id)]:
            with contextlib.suppress(psutil.Error):
                return psutil.Process(proc.info["ppid"]).name() not in ("sh", "dash", "bash")
    return False


def collect(out: Path, window: int, run_id: str) -> session.Result:
    return session.collect([LOCAL], out, session.Options(window=window, specs=SPECS, run_id=run_id))


def cpu_busy(result: session.Result) -> float:
    vm = next(c.frame for c in analyze_path(result.path).dataset.captures if c.kind == "vmstat")
    vm = vm[~vm["since_boot"]]
    return float((vm["us"] + vm["sy"]).mean())


def test_collect_local_cli_then_analyze_reads_every_parseable_capture(tmp_path: Path) -> None:
    need_tool("vmstat")
    need_tool("iostat")
    res = CliRunner().invoke(main, ["collect", "--local", "-d", "3", "-o", str(tmp_path / "run1.tar.gz")])
    assert res.exit_code == 0, res.output
    result = analyze_path(tmp_path / "run1.tar.gz")
    kinds = {c.kind for c in result.dataset.captures}
    assert {"vmstat", "iostat"} <= kinds
    assert not [u for u in result.dataset.unparsed if u["path"].endswith(("vmstat.out", "iostat.out"))]
    assert result.dataset.problems == []
    # every capture of the default profile has a parser now, but sar's binary file (sadf reads it on
    # the host); what a machine lacks (iotop without root, numactl) is listed as not collected
    left = [u for u in result.dataset.unparsed if not u["reason"].startswith("not collected")]
    assert [u["reason"] for u in left] == [KEPT_UNPARSED["sa"]], left
    versions = {r["id"]: r["tool_version"] for r in result.dataset.manifest["captures"]}
    if shutil.which("iotop"):
        assert re.fullmatch(r"iotop \d+\.\d+.*", versions["iotop"]), versions["iotop"]


def test_load_shows_in_the_capture(lab_mariadb: Path, tmp_path: Path) -> None:
    idle = collect(tmp_path / "idle", 4, "idle-baseline")
    load = threading.Thread(
        target=subprocess.run,
        kwargs={
            "args": [
                "sysbench",
                "oltp_read_write",
                f"--config-file={lab_mariadb}",
                "--tables=2",
                "--table-size=10000",
                "--threads=8",
                "--time=7",
                "run",
            ],
            "capture_output": True,
            "timeout": 60,
        },
    )
    load.start()
    busy = collect(tmp_path / "busy", 5, "under-load")
    load.join()
    assert cpu_busy(busy) > cpu_busy(idle) + 20  # 8 sysbench threads keep 2 vCPUs busy
    assert cpu_busy(busy) > 50
    io = next(c.frame for c in analyze_path(busy.path).dataset.captures if c.kind == "iostat")
    assert (io[~io["since_boot"]]["w_s"] > 0).any()  # InnoDB writes its redo log
    assert leftovers("under-load") == "" and leftovers("idle-baseline") == ""


def test_a_capture_that_hangs_past_the_window_is_killed_and_marked(tmp_path: Path) -> None:
    hang = captures.CaptureSpec("hang", "none", "sleep 300", "sleep")
    opts = session.Options(window=1, specs=(hang,), run_id="hang-test", grace=1)
    result = session.collect([LOCAL], tmp_path / "run", opts)
    rec = result.manifest["captures"][0]
    assert rec["timed_out"] and rec["status"] == "timed_out" and rec["exit_code"] == 124
    assert result.manifest["status"] == "partial" and result.exit_code == session.EXIT_PARTIAL
    assert leftovers("hang-test") == ""


def test_missing_tool_is_recorded_and_the_rest_go_on(tmp_path: Path) -> None:
    ghost = captures.CaptureSpec("ghost", "none", "no-such-tool-xyz 1", "no-such-tool-xyz")
    opts = session.Options(window=1, specs=(ghost, SPECS[0]), run_id="ghost-test")
    result = session.collect([LOCAL], tmp_path / "run", opts)
    recs = {r["id"]: r for r in result.manifest["captures"]}
    assert recs["ghost"]["status"] == "unavailable" and "not installed" in recs["ghost"]["reason"]
    assert recs["vmstat"]["status"] == "ok" and recs["vmstat"]["bytes"] > 0
    assert result.manifest["status"] == "complete"


def test_perf_profile_of_a_named_process_is_folded_on_the_host(tmp_path: Path) -> None:
    need_tool("perf")
    burn = tmp_path / "perfkit-burn"  # a unique process name: a copy of `yes`, busy on one CPU
    burn.write_bytes(Path(shutil.which("yes")).read_bytes())
    burn.chmod(0o755)
    proc = subprocess.Popen([str(burn)], stdout=subprocess.DEVNULL)
    try:
        res = CliRunner().invoke(
            main,
            [
                "collect",
                "--local",
                "-d",
                "2",
                "--profile",
                "minimal",
                "--perf",
                "perfkit-burn",
                "-o",
                str(tmp_path / "run"),
            ],
        )
    finally:
        proc.kill()
        proc.wait()
    assert res.exit_code == 0, res.output
    host = tmp_path / "run" / "hosts" / "localhost"
    assert "samples" in (host / "perf-record.out").read_text()
    folded = [line.rsplit(" ", 1) for line in (host / "perf-folded.out").read_text().splitlines()]
    assert folded and all(stack.startswith("perfkit-burn;") for stack, _ in folded)
    assert sum(int(n) for _, n in folded) > 50  # 99 Hz for 2 s on a busy CPU
    assert not (host / "perf.data").exists()  # perf.data stays on the host and is removed there


def test_perf_for_a_missing_process_is_recorded_not_fatal(tmp_path: Path) -> None:
    need_tool("perf")
    specs = captures.perf_specs("no-such-proc-x")
    result = session.collect(
        [LOCAL], tmp_path / "run", session.Options(window=1, specs=(SPECS[0], *specs), run_id="perf-missing")
    )
    recs = {r["id"]: r for r in result.manifest["captures"]}
    assert recs["perf-record"]["status"] == "failed" and "no process named" in recs["perf-record"]["reason"]
    assert recs["vmstat"]["status"] == "ok"


def test_an_earlier_runs_orphan_is_killed_at_the_next_start_and_a_live_run_is_left_alone(
    tmp_path: Path,
) -> None:
    # An orphan: the wrapper of a run whose perfkit died (its parent, `sh`, exits at once, so init
    # or a subreaper adopts it). A live run: the same wrapper with this test's Python as parent.
    dead_dir = Path("/tmp") / session.tag("dead-run")  # a run that died never removed its work dir
    dead_dir.mkdir(exist_ok=True)
    orphan = session.wrap("sleep 300", deadline_s=300, workdir=str(dead_dir), run_id="dead-run")
    subprocess.run(["sh", "-c", f"({orphan}) >/dev/null 2>&1 &"], check=True)
    live = subprocess.Popen(
        ["sh", "-c", session.wrap("sleep 300", deadline_s=300, workdir="/tmp", run_id="live-run")],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 5
        while not wrapper_adopted("dead-run") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wrapper_adopted("dead-run")
        res = session.collect([LOCAL], tmp_path / "run", session.Options(window=1, specs=SPECS[:1]))
        assert res.hosts[0].leftovers_killed == {"start": 1, "end": 0}
        assert res.manifest["hosts"][0]["leftovers_killed"]["start"] == 1
        assert leftovers("dead-run") == ""
        assert live.poll() is None and "sleep 300" in leftovers("live-run")
    finally:
        dead_dir.rmdir()
        live.kill()
        live.wait()
        subprocess.run(["pkill", "-KILL", "-f", session.tag("live-run")], check=False)

"""Lab tier: the thread sampler through `perfkit collect --local` finds the lab MariaDB's threads,
mostly sleeping when idle and on a CPU or runnable under a sysbench load (no tight figures: other
helpers load this machine too); the PSI file comes back as the `psi` capture."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfkit.cli import main
from perfkit.pipeline import analyze_path

pytestmark = pytest.mark.lab
MARIADB_PID = Path("/run/mysqld/ssd.pid")


def _collect(out: Path, seconds: int) -> tuple[dict, dict, set[str]]:
    res = CliRunner().invoke(
        main, ["collect", "--local", "--profile", "minimal", "-d", str(seconds), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    result = analyze_path(out)
    ds = result.dataset
    captures = {c.kind: c for c in ds.captures if c.kind in ("threads", "psi")}
    records = {r["id"]: r for r in ds.manifest["captures"]}
    return captures, records, {f.rule for f in result.findings}


def _mariadb_shares(df, pid: int) -> tuple[float, float]:
    """(share of mariadbd's thread-samples sleeping (S), share running or runnable (R))."""
    rows = df[(df["pid"] == pid) & (df["record"] == "state")]
    total = rows["count"].sum()
    assert total > 0, "no sample of the lab mariadbd's threads"
    return rows.loc[rows["state"] == "S", "count"].sum() / total, rows.loc[
        rows["state"] == "R", "count"
    ].sum() / total


def test_mariadb_threads_idle_then_under_load(lab_mariadb: Path, tmp_path: Path) -> None:
    pid = int(MARIADB_PID.read_text().split()[0])
    idle, records, _ = _collect(tmp_path / "idle", 3)
    assert records["threads"]["status"] == "ok" and records["psi"]["status"] == "ok"
    assert records["threads"]["tool_version"].startswith("thread sampler: python")
    df, extras = idle["threads"].frame, idle["threads"].extras
    assert extras.sampler["mode"].startswith("python")
    named = [s for s in extras.selected if s["pid"] == pid]
    assert named and named[0]["why"] == "named" and named[0]["process"] == "mariadbd"
    sleeping, _ = _mariadb_shares(df, pid)
    assert sleeping > 0.6  # idle: InnoDB's and the server's threads wait (futex, poll, io_uring)
    assert {"futex", "poll"} & set(df.loc[df["pid"] == pid, "syscall"].dropna())
    psi = idle["psi"].frame
    assert len(psi) >= 6 and set(psi["resource"]) == {"cpu", "io", "memory"}

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
                "--time=8",
                "run",
            ],
            "capture_output": True,
            "timeout": 60,
        },
    )
    load.start()
    try:
        busy, _, rules = _collect(tmp_path / "busy", 4)
    finally:
        load.join()
    df = busy["threads"].frame
    _, running = _mariadb_shares(df, pid)
    _, idle_running = _mariadb_shares(idle["threads"].frame, pid)
    assert running > idle_running + 0.05  # 8 clients keep some of its threads on a CPU or queued
    sched = df[(df["pid"] == pid) & (df["record"] == "sched")]
    assert sched["cpu_s_per_s"].sum() / sched["timestamp"].nunique() > 0.2  # CPU used per second
    assert (df.loc[df["process"] == "sysbench", "record"] == "state").any()  # the load generator, named
    # its io_uring reaper sleeps for completions under the load as at rest: no IO wait behind a ceiling
    assert "io.throttled" not in rules, rules

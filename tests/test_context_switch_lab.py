"""cpu.context-switches on a host made to switch, against the same load without it.

Two processes handing one byte back and forth over a pipe (`perf bench sched pipe`: each hand-over is
a sleep and a wake-up, two context switches) run beside a sysbench step held at 100 transactions a
second (`--rate`), as a blocking client library or a thread pool passing each request along would
beside the database. vmstat and `pidstat -w` capture the step, laid out as seed 000's script does.
On the lab VM: about 310,000 switches a second for 100 transactions, 3,100 per transaction (3 runs:
3,095-3,430; the rule's bar 300), and perf's `sched-pipe` named as the process that switches most
(85,000 a second each). The control is the same step without the pipe: 3,600-3,700 switches a
second, under the rule's floor of 20,000, silent.

The evidence is checked against the captures' own text, read here without perfkit.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest

from perfkit.pipeline import analyze_path

from .conftest import need_tool
from .test_lab_pipeline import sysbench_sweep

pytestmark = pytest.mark.lab

SECONDS = 6
RATE = 100  # transactions a second, whatever the threads


def step_with_captures(run: Path, cfg: Path, switcher: bool) -> Path:
    """One sysbench step (`sysbench_4.log`) with vmstat and pidstat -w beside it (`os_lab/`), and the
    pipe ping-pong running through all of it when `switcher`; the ping-pong is killed however it ends."""
    need_tool("pidstat")
    os_dir = run / "os_lab"
    os_dir.mkdir(parents=True)
    env = {**os.environ, "LC_ALL": "C", "S_TIME_FORMAT": "ISO"}
    window = str(SECONDS + 2)
    pong = None
    if switcher:
        need_tool("perf")
        pong = subprocess.Popen(
            ["perf", "bench", "sched", "pipe", "-l", "100000000"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    try:
        with open(os_dir / "vmstat_1", "w") as vm_out, open(os_dir / "pidstat_1", "w") as pid_out:
            captures = [
                subprocess.Popen(["vmstat", "-t", "1", window], stdout=vm_out, env=env),
                subprocess.Popen(["pidstat", "-w", "1", window], stdout=pid_out, env=env),
            ]
            sysbench_sweep(run, cfg, (f"--rate={RATE}",), threads=(4,), seconds=SECONDS)
            for p in captures:
                p.wait(timeout=30)
        assert pong is None or pong.poll() is None, "the ping-pong ended before the step did"
    finally:
        if pong is not None:
            pong.kill()
            pong.wait(timeout=30)
    return run


def raw_cs(run: Path) -> list[float]:
    """vmstat's cs column, sample by sample, the first (since boot) left out."""
    header: list[str] = []
    values = []
    for line in (run / "os_lab" / "vmstat_1").read_text().splitlines():
        words = line.split()
        if "cs" in words:
            header = words
        elif header and words and words[0].isdigit():
            values.append(float(words[header.index("cs")]))
    return values[1:]


def raw_switches(run: Path, pid: str) -> list[float]:
    """cswch/s + nvcswch/s of `pid` in each interval of pidstat -w (its Average rows left out)."""
    header: list[str] = []
    values = []
    for line in (run / "os_lab" / "pidstat_1").read_text().splitlines():
        words = line.split()
        if "cswch/s" in words:
            header = words
        elif (
            header
            and len(words) == len(header)
            and words[header.index("PID")] == pid
            and words[0] != "Average:"
        ):
            values.append(float(words[header.index("cswch/s")]) + float(words[header.index("nvcswch/s")]))
    return values


def test_a_process_switching_beside_the_load_is_many_switches_per_transaction(
    lab_mariadb: Path, tmp_path: Path
) -> None:
    run = step_with_captures(tmp_path, lab_mariadb, switcher=True)
    [f] = [f for f in analyze_path(run).findings if f.rule == "cpu.context-switches"]
    ev = f.evidence
    assert ev["threads"] == 4 and ev["tps"] == pytest.approx(RATE, rel=0.2)
    cs = raw_cs(run)
    assert ev["cs_per_s_median"] == statistics.median(cs) > 20_000
    assert ev["cs_per_txn"] == pytest.approx(ev["cs_per_s_median"] / ev["tps"], rel=1e-9)
    assert ev["cs_per_txn"] > 300
    # the switcher named: one of perf's two processes (`sched-pipe`) leads pidstat -w's table, its
    # switches a second the mean of its rows there
    assert ev["top_switcher"].startswith("sched-pipe (pid ")
    pid = re.search(r"pid (\d+)", ev["top_switcher"])[1]  # type: ignore[index]
    assert ev["top_switcher_cs_per_s"] == pytest.approx(statistics.mean(raw_switches(run, pid)), rel=1e-9)
    assert ev["top_switcher_cs_per_s"] > 10_000
    assert f.title == f"{ev['cs_per_txn']:.0f} context switches per transaction"


def test_the_same_load_without_it_is_silent(lab_mariadb: Path, tmp_path: Path) -> None:
    run = step_with_captures(tmp_path, lab_mariadb, switcher=False)
    result = analyze_path(run)
    assert "cpu.context-switches" not in {f.rule for f in result.findings}
    cs = raw_cs(run)
    assert cs and statistics.median(cs) < 20_000  # what the rule read, under its floor

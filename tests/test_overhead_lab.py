"""collector.overhead on a host made heavy to capture, against the same host without the load.

A host with many threads (a JVM, TiKV's pools) makes `top -H` and iotop render every thread every
second. Here one Python process holds 10,000 sleeping threads (64 KiB stacks; killed however the test
ends) while `perfkit collect --local -d 6` runs with the default profile: on the lab VM top took
19 % and iotop 22 % of a core, over the rule's 10 %. The control is the same collection without
that process (a few hundred threads on the host): silent.

The evidence is checked against the archive's own pidstat text, read here without perfkit.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from perfkit.pipeline import analyze_path

from .conftest import collect_local, python_process

pytestmark = pytest.mark.lab

THREADS = 10_000
WINDOW_S = 6
HOLDER = f"""
import threading, time
threading.stack_size(65536)
for _ in range({THREADS}):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
print("ready", flush=True)
time.sleep(3600)
"""


def raw_cpu(archive: Path, command: str) -> list[float]:
    """`command`'s %CPU in each interval of the archive's `pidstat -u` table (its Average rows left out),
    0 where pidstat listed it not: it lists only the tasks that ran (top, slow over 10,000 threads,
    can miss a second), and the rule counts those seconds as 0 too."""
    [path] = archive.glob("hosts/*/pidstat.out")
    header: list[str] = []
    by_time: dict[str, float] = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if "UID" in words:  # each table's header: -u's has %CPU, -d's and -w's do not
            header = words
        elif "%CPU" in header and len(words) == len(header) and words[0] != "Average:":
            by_time.setdefault(words[0], 0.0)
            if words[-1] == command:
                by_time[words[0]] += float(words[header.index("%CPU")])
    return list(by_time.values())


def test_a_host_of_many_threads_makes_top_and_iotop_heavy(tmp_path: Path) -> None:
    with python_process(HOLDER) as pid:
        assert len(list(Path(f"/proc/{pid}/task").iterdir())) > THREADS
        time.sleep(0.5)
        archive = collect_local(tmp_path / "heavy", WINDOW_S)
    [f] = [f for f in analyze_path(archive).findings if f.rule == "collector.overhead"]
    ev = f.evidence
    assert f.severity == "warning" and "top" in f.title
    top = raw_cpu(archive, "top")
    assert len(top) >= WINDOW_S - 1
    assert (
        ev["top_cpu_pct_mean"] == pytest.approx(statistics.mean(top), abs=0.01)
        and ev["top_cpu_pct_mean"] > 10
    )
    assert ev["tools_cpu_pct_mean"] >= ev["top_cpu_pct_mean"]
    assert ev["cpu_source"].endswith("pidstat.out")


def test_the_same_host_without_them_is_light_to_capture(tmp_path: Path) -> None:
    archive = collect_local(tmp_path / "light", WINDOW_S)
    result = analyze_path(archive)
    assert "collector.overhead" not in {f.rule for f in result.findings}
    top = raw_cpu(archive, "top")
    assert top and statistics.mean(top) < 10  # what the rule read, under its bar

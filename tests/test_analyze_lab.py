"""`perfkit analyze` on a real sweep: sysbench against the lab MariaDB on this 2-vCPU machine.

mysqld and sysbench share two CPUs, so beyond a few threads both are CPU-bound: the report must
name the sweep's knee and say the CPU is the saturated resource (issue 6's acceptance).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest

from perfkit.config import default_thresholds

from .conftest import PERFKIT, lab_password

pytestmark = pytest.mark.lab


def test_a_real_sysbench_sweep_names_the_knee_and_the_saturated_cpu(
    lab_mariadb: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": lab_password(lab_mariadb)}
    archive = tmp_path / "sweep"
    sweep = ["--mysql-user", "perfkit", "--tables", "2", "--table-size", "10000", "--time", "5"]
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", *sweep, "--threads", "1,4,16", "--no-report", "-o", str(archive)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "report"
    proc = subprocess.run(
        [*PERFKIT, "analyze", str(archive), "-o", str(out)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "findings.json").read_text())
    # each step's throughput is sysbench's own, within the warm-up the steady mean leaves out
    steps = [(s["threads"], s["tps"]) for s in doc["sweep"]["steps"]]
    assert [n for n, _ in steps] == [1, 4, 16]
    for n, tps in steps:
        text = (archive / "load" / f"t{n:04d}" / "sysbench.out").read_text()
        summary = float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", text)[1])  # type: ignore[index]
        assert tps == pytest.approx(summary, rel=0.1), (n, tps, summary)
    # two CPUs shared by mysqld and sysbench: scaling stops early, at or before the peak. Where exactly
    # depends on the machine (4 threads here; 1 on a CI machine whose 2 threads gave under 1.23x, in a
    # 1..32 sweep this test ran before 1, 4, 16 took half its time), so the
    # knee is checked against its definition: the last level before d ln X / d ln N first falls
    # under the bar
    knee, bar = doc["sweep"]["knee_threads"], default_thresholds()["sweep.knee"]["min_elasticity"]
    falls = [a for (a, xa), (b, xb) in itertools.pairwise(steps) if math.log(xb / xa) / math.log(b / a) < bar]
    assert knee is not None and knee == falls[0] <= doc["sweep"]["peak"]["threads"], doc["sweep"]
    cpu = [f for f in doc["findings"] if f["rule"] == "cpu.saturated"]
    assert cpu, [(f["rule"], f["summary"]) for f in doc["findings"]]
    assert cpu[0]["hosts"] == ["localhost"] and cpu[0]["evidence"]["cpus"] == os.cpu_count()
    assert cpu[0]["severity"] in ("critical", "warning")
    text = (out / "report.md").read_text()
    assert "cpu.saturated" in text and str(knee) in text

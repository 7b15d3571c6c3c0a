"""`perfkit analyze` on a real sweep: sysbench against the lab MariaDB on this 2-vCPU machine.

mysqld and sysbench share two CPUs, so beyond a few threads both are CPU-bound: the report must
name the sweep's knee and say the CPU is the saturated resource (issue 6's acceptance).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import lab_password

pytestmark = pytest.mark.lab

CLI = [sys.executable, "-c", "import sys; from perfkit.cli import main; sys.exit(main())"]


def test_a_real_sysbench_sweep_names_the_knee_and_the_saturated_cpu(
    lab_mariadb: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": lab_password(lab_mariadb)}
    archive = tmp_path / "sweep"
    sweep = ["--mysql-user", "perfkit", "--tables", "2", "--table-size", "10000", "--time", "5"]
    proc = subprocess.run(
        [*CLI, "run", "sysbench", *sweep, "--threads", "1,2,4,8,16,32", "--no-report", "-o", str(archive)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "report"
    proc = subprocess.run(
        [*CLI, "analyze", str(archive), "-o", str(out)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "findings.json").read_text())
    knee = doc["sweep"]["knee_threads"]
    assert knee is not None and 1 < knee <= 16, doc["sweep"]
    cpu = [f for f in doc["findings"] if f["rule"] == "cpu.saturated"]
    assert cpu, [(f["rule"], f["summary"]) for f in doc["findings"]]
    assert cpu[0]["hosts"] == ["localhost"] and cpu[0]["evidence"]["cpus"] == os.cpu_count()
    assert cpu[0]["severity"] in ("critical", "warning")
    text = (out / "report.md").read_text()
    assert "cpu.saturated" in text and str(knee) in text

"""A real sysbench run against the lab MariaDB (scripts/lab.sh), read back by parsers/sysbench.py.

Skips (via the `lab_mariadb` fixture) when the lab is not provisioned or MariaDB is down.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from perfkit.parsers import sysbench

from .conftest import lab_password

pytestmark = pytest.mark.lab

THREADS = 2
TIME_S = 2


def test_real_run_parses_and_obeys_littles_law(lab_mariadb: Path) -> None:
    argv = [
        "sysbench",
        "oltp_read_write",
        f"--config-file={lab_mariadb}",  # the password stays in the 0600 file, out of argv
        "--tables=2",
        "--table-size=10000",
        f"--threads={THREADS}",
        f"--time={TIME_S}",
        "--report-interval=1",
        "run",
    ]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    password = lab_password(lab_mariadb)
    assert password not in " ".join(argv)
    assert password not in proc.stdout and password not in proc.stderr

    df = sysbench.parse(proc.stdout, host="lab")
    (run,) = df.attrs["runs"]
    assert run["threads"] == THREADS
    assert run["version"] and run["version"].startswith("1.")
    assert run["report_interval_s"] == 1 and run["fatal"] is None
    assert 1 <= len(df) <= TIME_S
    assert (df["tps"] > 0).all() and (df["qps"] > df["tps"]).all()
    assert (df["threads"] <= THREADS).all() and (df["host"] == "lab").all()
    assert df.attrs["dropped_lines"] == 0

    s = run["summary"]
    assert s["transactions"] > 0 and s["events"] == s["transactions"]
    # the printed rate is transactions over the run's time ...
    assert s["transactions"] == pytest.approx(s["tps"] * s["total_time_s"], rel=0.02)
    # ... and roughly what the report lines say over that time
    assert s["transactions"] == pytest.approx(df["tps"].mean() * s["total_time_s"], rel=0.4)
    # Little's law (sysbench #311): concurrency = throughput x latency ~ the threads configured
    assert s["tps"] * s["lat_avg_ms"] / 1000 == pytest.approx(THREADS, rel=0.4)
    assert s["lat_min_ms"] <= s["lat_avg_ms"] <= s["lat_max_ms"]

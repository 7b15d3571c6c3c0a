"""`perfkit run ycsb` and `perfkit run tpcc` for real: go-ycsb v1.0.3 and go-tpc v1.0.12 (built by
scripts/go_tools.sh) against the lab MariaDB, with a canary password through the whole run.

The slow tier: the tools take minutes to build on a cold machine. Each test skips, saying why, when a
binary or the lab is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import session
from perfkit.parsers import gotpc, goycsb

from .conftest import LAB_DIR, PERFKIT

pytestmark = pytest.mark.slow

BIN = LAB_DIR / "bin"


def tool(name: str) -> str:
    path = BIN / name
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} missing: scripts/go_tools.sh builds it")
    return str(path)


def mariadb(sql: str) -> None:
    subprocess.run(["mariadb"], input=sql, text=True, check=True, capture_output=True, timeout=30)


@pytest.fixture
def canary(lab_mariadb: Path):
    """A MariaDB user with a fresh canary password, granted on the ycsb and tpcc databases."""
    user, password = "pk_go_canary", "canary-" + uuid.uuid4().hex
    mariadb(
        "".join(
            f"CREATE OR REPLACE USER '{user}'@'{h}' IDENTIFIED BY '{password}';"
            f"GRANT ALL ON ycsb.* TO '{user}'@'{h}'; GRANT ALL ON tpcc.* TO '{user}'@'{h}';"
            f"GRANT PROCESS ON *.* TO '{user}'@'{h}';"
            for h in ("127.0.0.1", "localhost")
        )
    )
    yield user, password
    mariadb(f"DROP USER IF EXISTS '{user}'@'127.0.0.1'; DROP USER IF EXISTS '{user}'@'localhost';")


def sweep(
    args: list[str], password: str, cwd: Path, watch: str
) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run `perfkit run ...` with the password in the environment; what `pgrep -a watch` saw meanwhile."""
    seen: list[str] = []
    done = threading.Event()

    def look() -> None:
        while not done.is_set():
            ps = subprocess.run(["pgrep", "-a", watch], capture_output=True, text=True).stdout
            seen.extend(line for line in ps.splitlines() if line)
            time.sleep(0.2)

    watcher = threading.Thread(target=look, daemon=True)
    watcher.start()
    try:
        proc = subprocess.run(
            [*PERFKIT, "run", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PERFKIT_MYSQL_PASSWORD": password},
            timeout=600,
            cwd=cwd,
        )
    finally:
        done.set()
        watcher.join()
    return proc, seen


def leaks(password: str, *roots: Path) -> list[str]:
    return [
        str(p) for r in roots for p in r.rglob("*") if p.is_file() and password.encode() in p.read_bytes()
    ]


def test_ycsb_sweep_end_to_end_with_a_canary_password(canary, tmp_path: Path) -> None:
    user, password = canary
    out = tmp_path / "ycsb.tar.gz"
    args = ["ycsb", "--mysql-user", user, "--bin", tool("go-ycsb"), "--prepare", "--recordcount", "2000"]
    args += ["--workload", "a", "--threads", "1,2,4", "--time", "4", "--cleanup", "-o", str(out)]
    proc, seen = sweep(args, password, tmp_path, "go-ycsb")
    assert proc.returncode in (session.EXIT_OK, session.EXIT_PARTIAL), proc.stderr[-2000:]
    assert any("-P /tmp/perfkit-load." in a and "--threads 4" in a for a in seen)  # ps saw the load
    assert not any(password in a for a in seen)  # the password is in the 0600 property file only

    findings = json.loads((tmp_path / "ycsb-report" / "findings.json").read_text())
    with open_archive(out) as archive:
        m = archive.manifest
        assert archive.problems == []
        assert m["sweep"]["tool"] == "go-ycsb" and m["sweep"]["tool_version"] == "go-ycsb v1.0.3"
        assert [s["status"] for s in m["sweep"]["steps"]] == ["ok"] * 3
        loads = {r["step"]: r for r in m["captures"] if r["kind"] == "goycsb"}
        assert sorted(loads) == ["t0001", "t0002", "t0004"]
        for step, rec in loads.items():
            assert rec["redacted"] is True  # go-ycsb echoed its mysql.password property: masked
            assert rec["exit_code"] == 124  # ended by SIGTERM at --time, as planned
            run = goycsb.parse(archive.root / rec["path"]).attrs["runs"][-1]
            assert run["threads"] == int(step[1:]) and run["properties"]["mysql.password"] == "***"
            assert run["summary"]["total_time_s"] == pytest.approx(4, abs=0.6)
            summary = run["summary"]
            step_row = next(s for s in findings["sweep"]["steps"] if s["threads"] == int(step[1:]))
            # the report's throughput is the steady state of the per-interval OPS (count deltas)
            assert step_row["tps"] == pytest.approx(summary["ops_s"], rel=0.25)
            assert step_row["lat_avg_ms"] == pytest.approx(summary["lat_avg_ms"])
            assert step_row["server_qps"] > 0
        assert leaks(password, archive.root) == []
    assert leaks(password, tmp_path / "ycsb-report") == []
    assert password not in proc.stdout + proc.stderr
    assert findings["sweep"]["tool"] == "go-ycsb"


def test_tpcc_sweep_end_to_end_with_a_canary_password(canary, tmp_path: Path) -> None:
    user, password = canary
    out = tmp_path / "tpcc"
    args = ["tpcc", "--mysql-user", user, "--bin", tool("go-tpc"), "--prepare", "--warehouses", "1"]
    args += ["--threads", "1,2,4", "--time", "4", "-o", str(out)]
    proc, seen = sweep(args, password, tmp_path, "go-tpc")
    assert proc.returncode in (session.EXIT_OK, session.EXIT_PARTIAL), proc.stderr[-2000:]
    # go-tpc takes the password only in argv: its own process shows it on the load host (documented),
    # never perfkit's command lines, the archive, the report or the terminal
    assert any("--threads" not in a and " -T 4 " in a for a in seen)
    assert password not in proc.stdout + proc.stderr

    findings = json.loads((tmp_path / "tpcc-report" / "findings.json").read_text())
    m = json.loads((out / "manifest.json").read_text())
    assert [s["status"] for s in m["sweep"]["steps"]] == ["ok"] * 3
    assert m["sweep"]["tool_version"] == "go-tpc v1.0.12"
    for rec in (r for r in m["captures"] if r["kind"] == "gotpc"):
        assert rec["command"].endswith("-p <from stdin>") and password not in rec["command"]
        run = gotpc.parse(out / rec["path"]).attrs["runs"][-1]
        summary = run["summary"]
        assert summary["tpmc"] > 0 and summary["count"] > 0
        threads = int(rec["step"][1:])
        step_row = next(s for s in findings["sweep"]["steps"] if s["threads"] == threads)
        # per-second [Current] lines against go-tpc's own totals: the same throughput
        assert step_row["tps"] == pytest.approx(summary["tps"], rel=0.3)
        assert step_row["lat_avg_ms"] == pytest.approx(summary["lat_avg_ms"])
        assert step_row["lat_p95_ms"] == summary["lat_p95_ms"]
    assert leaks(password, out, tmp_path / "tpcc-report") == []


@pytest.mark.parametrize("command", ["ycsb", "tpcc"])
def test_wrong_password_fails_in_preflight_without_the_secret(
    lab_mariadb: Path, tmp_path: Path, command: str
) -> None:
    secret = "wrong-" + uuid.uuid4().hex
    out = tmp_path / "never"
    binary = tool("go-ycsb" if command == "ycsb" else "go-tpc")
    proc = subprocess.run(
        [
            *PERFKIT,
            "run",
            command,
            "--mysql-user",
            "perfkit",
            "--bin",
            binary,
            "--threads",
            "1",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": secret},
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "error 1045" in proc.stderr and secret not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()

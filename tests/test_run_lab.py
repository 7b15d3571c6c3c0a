"""`perfkit run sysbench` for real: the lab MariaDB, real sysbench, local captures, the DB sampler.

Short steps (threads 1, 2, 4, 8 at 3 s) so the default suite stays quick. Skips via `lab_mariadb`
when the lab is not provisioned.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import captures, driver, session
from perfkit.collectors.load_sysbench import SysbenchRunner, Workload
from perfkit.collectors.mysql_sampler import DbTarget
from perfkit.parsers import sysbench as sb_parser
from perfkit.transport import LOCAL

from .conftest import PERFKIT, ROOT, lab_password
from .terminal import under_pty

pytestmark = pytest.mark.lab

SWEEP = ["--tables", "2", "--table-size", "10000", "--threads", "1,2,4,8", "--time", "3"]


def mariadb(sql: str) -> None:
    """Run SQL as MariaDB's root over the unix socket (no password anywhere: SQL on stdin)."""
    subprocess.run(["mariadb"], input=sql, text=True, check=True, capture_output=True, timeout=30)


@pytest.fixture
def canary_user(lab_mariadb: Path):
    """A MariaDB user whose password is a fresh canary; dropped afterwards."""
    user, password = "pk_canary", "canary-" + uuid.uuid4().hex
    grants = "".join(
        f"CREATE OR REPLACE USER '{user}'@'{h}' IDENTIFIED BY '{password}';"
        f"GRANT ALL ON sbtest.* TO '{user}'@'{h}'; GRANT PROCESS ON *.* TO '{user}'@'{h}';"
        for h in ("127.0.0.1", "localhost")
    )
    mariadb(grants)
    yield user, password
    mariadb(f"DROP USER IF EXISTS '{user}'@'127.0.0.1'; DROP USER IF EXISTS '{user}'@'localhost';")


def every_file(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.is_file()]


def test_sweep_end_to_end_with_a_canary_password(canary_user, tmp_path: Path) -> None:
    user, password = canary_user
    out = tmp_path / "sweep.tar.gz"
    env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": password}
    seen_argv: list[str] = []
    done = threading.Event()

    def watch() -> None:  # what `ps` shows of sysbench while it runs
        while not done.is_set():
            ps = subprocess.run(["pgrep", "-a", "sysbench"], capture_output=True, text=True).stdout
            seen_argv.extend(line for line in ps.splitlines() if line)
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--mysql-user", user, *SWEEP, "--profile", "default", "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    done.set()
    watcher.join()
    assert proc.returncode in (session.EXIT_OK, session.EXIT_PARTIAL), proc.stderr[-2000:]
    assert any("--config-file=" in a and "--threads=4" in a for a in seen_argv)  # ps saw the load

    report = tmp_path / "sweep-report"
    findings = json.loads((report / "findings.json").read_text())
    with open_archive(out) as archive:
        m = archive.manifest
        assert archive.problems == []
        assert [s["status"] in ("ok", "degraded") for s in m["sweep"]["steps"]] == [True] * 4
        assert m["sweep"]["plan"]["threads"] == [1, 2, 4, 8]
        summaries = {}
        for step in ("t0001", "t0002", "t0004", "t0008"):
            load = archive.root / "load" / step / "sysbench.out"
            runs = sb_parser.parse(load).attrs["runs"]
            assert runs[-1]["threads"] == int(step[1:])
            summaries[int(step[1:])] = runs[-1]["summary"]
            host_dir = archive.root / "hosts" / "localhost" / step
            assert (host_dir / "vmstat.out").read_bytes().startswith(b"--procs--")
            assert (host_dir / "ps-start.out").stat().st_size > 0
        db = [r for r in m["captures"] if r["kind"] == "mysql_status"]
        assert len(db) == 1 and db[0]["samples"] >= 12 and db[0]["failed_samples"] == 0
        leaked = [str(p) for p in every_file(archive.root, report) if password.encode() in p.read_bytes()]
    assert leaked == []
    assert password not in proc.stdout + proc.stderr and not any(password in a for a in seen_argv)

    steps = {s["threads"]: s for s in findings["sweep"]["steps"]}
    for threads, summary in summaries.items():
        # The report's table is the sysbench summaries' steady state: within the warm-up trim.
        assert steps[threads]["tps"] == pytest.approx(summary["tps"], rel=0.25)
        assert steps[threads]["lat_avg_ms"] > 0 and steps[threads]["server_qps"] > 0
        # a transaction cannot spend longer inside the server than the client waited for it
        assert 0 <= steps[threads]["server_lat_ms"] <= steps[threads]["lat_avg_ms"] * 1.2
    md = (report / "report.md").read_text()
    assert "server ms" in md and "Sweep: 4 steps, stopped because every planned step ran." in md
    assert findings["sweep"]["run"]["steps_run"] == 4 and findings["sweep"]["run"]["adaptive"] is False


def test_wrong_password_fails_in_preflight_without_the_secret(lab_mariadb: Path, tmp_path: Path) -> None:
    secret = "wrong-" + uuid.uuid4().hex
    out = tmp_path / "never"
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--mysql-user", "perfkit", *SWEEP, "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": secret},
        timeout=60,
    )
    assert proc.returncode == 1
    assert "error 1045" in proc.stderr and "wrong user or password" in proc.stderr
    assert secret not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_database_killed_mid_step_fails_the_step_and_keeps_the_rest(
    lab_mariadb: Path, tmp_path: Path
) -> None:  # noqa: E501
    db = DbTarget(user="perfkit", password=lab_password(lab_mariadb))
    pidfile = Path("/run/mysqld/ssd.pid")

    def kill_in_second_step() -> None:
        time.sleep(1.5)
        out = tmp_path / "run" / "load" / "t0002" / "sysbench.out"
        while not (out.exists() and b"[ 1s ]" in out.read_bytes()):  # the step has reported once
            time.sleep(0.05)
        os.kill(int(pidfile.read_text()), 9)

    killer = threading.Thread(target=kill_in_second_step, daemon=True)
    try:
        with SysbenchRunner(db, Workload("oltp_read_write", tables=2, table_size=10000)) as runner:
            runner.preflight()
            killer.start()
            res = driver.run_sweep(
                runner,
                driver.Plan(threads=(1, 2, 4), time_s=3, cooldown_max_s=0),
                tmp_path / "run",
                hosts=[LOCAL],
                opts=session.Options(window=1, specs=captures.MINIMAL),
                db=db,
            )
    finally:
        killer.join()
        lab_sh = ["bash", str(ROOT / "scripts" / "lab.sh")]
        subprocess.run(lab_sh, capture_output=True, timeout=300, check=True)  # MariaDB back up
    first, second, third = res.steps
    assert first.status == "ok"
    # the server's error, not the first FATAL line (fixture 1.0.20-rw-server-killed: error 2013)
    assert second.status == "failed" and re.match(r"MySQL error 20\d\d: ", second.reason), second
    assert third.status == "skipped" and "earlier step failed" in third.reason
    assert res.manifest["status"] == "partial" and res.exit_code == session.EXIT_PARTIAL
    kept = (tmp_path / "run" / "load" / "t0002" / "sysbench.out").read_text()
    assert "[ 1s ]" in kept  # what the step printed before the crash is kept
    assert (tmp_path / "run" / "hosts" / "localhost" / "t0002" / "vmstat.out").stat().st_size > 0
    db_rec = next(r for r in res.manifest["captures"] if r["kind"] == "mysql_status")
    assert db_rec["failed_samples"] >= 1 and "Error" in db_rec["reason"], db_rec  # the gap, with its cause


def test_a_plan_file_gives_the_options_and_flags_override_it(lab_mariadb: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "mysql_user: perfkit\nworkload: oltp_point_select\ntables: 2\ntable_size: 10000\n"
        "threads: [1, 2, 4]\ntime: 2\nprofile: minimal\ncooldown_max: 0\n"
    )
    out = tmp_path / "planned"
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--plan", str(plan), "--threads", "2", "--no-report", "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": lab_password(lab_mariadb)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-1500:]
    sweep = json.loads((out / "manifest.json").read_text())["sweep"]
    assert [s["threads"] for s in sweep["steps"]] == [2]  # the flag won
    assert sweep["plan"]["workload"] == "oltp_point_select" and sweep["plan"]["plan_file"] == str(plan)
    assert sweep["plan"]["options"]["time_s"] == 2 and sweep["plan"]["options"]["profile"] == "minimal"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mysql_password: x\n", "never holds a secret"),
        ("thread: [1]\n", "unknown option 'thread'"),
        ("- 1\n", "mapping"),
    ],
)
def test_bad_plans_are_refused_with_the_reason(tmp_path: Path, text: str, message: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--plan", str(plan), "-o", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_ctrl_c_keeps_every_finished_step(lab_mariadb: Path, tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "cut.tar.gz"
    monkeypatch.setenv("PERFKIT_MYSQL_PASSWORD", lab_password(lab_mariadb))
    args = ["run", "sysbench", "--mysql-user", "perfkit", "--tables", "2", "--table-size", "10000"]
    args += ["--threads", "1,2,4", "--time", "3", "--cooldown-max", "0", "--profile", "minimal"]
    args += ["--no-report", "-o", str(out)]

    # Ctrl-C once step 2's sysbench runs (a fixed second raced the machine's load: at 6 s a busy
    # machine was still finishing step 1, so step 2 was never started and came out `skipped`)
    def step_2_runs() -> bool:
        this = "sysbench .*--tables=2 --table-size=10000 --threads=2 --time=3 "  # this run's, not another's
        return subprocess.run(["pgrep", "-f", this], capture_output=True).returncode == 0

    code, text, _took = under_pty(args, ctrl_c_when=step_2_runs)
    assert code == session.EXIT_INTERRUPTED, text[-2000:]
    with open_archive(out) as archive:
        m = archive.manifest
        assert m["status"] == "interrupted" and archive.problems == []
        status = {s["threads"]: s["status"] for s in m["sweep"]["steps"]}
        assert status == {1: "ok", 2: "interrupted", 4: "skipped"}, status
        assert sb_parser.parse(archive.root / "load" / "t0001" / "sysbench.out").attrs["runs"][0]["summary"]
    assert subprocess.run(["pgrep", "-x", "sysbench"], capture_output=True).returncode == 1  # none left


def test_an_unreachable_database_fails_in_preflight(lab_mariadb: Path, tmp_path: Path) -> None:
    from .sshd import free_port

    port = free_port()
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--mysql-port", str(port), *SWEEP, "-o", str(tmp_path / "never")],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": "unused-" + uuid.uuid4().hex},
        timeout=60,
    )
    assert proc.returncode == 1 and "error 2003" in proc.stderr and "nothing answers there" in proc.stderr
    assert f"127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "never").exists()


def test_a_one_step_run_tells_the_parked_threads_from_the_load(lab_mariadb: Path, tmp_path: Path) -> None:
    """One step of point selects, the lab MariaDB's CPU the limit. The rest window before it shows
    what the server parks whatever the load (its io_uring reaper, its futex-parked pools): without it
    perfkit warned that the server waited on IO behind a ceiling (io.throttled) and on locks
    (wait.profile)."""
    out = tmp_path / "one"
    one = ["--tables", "2", "--table-size", "10000", "--threads", "4", "--time", "6"]
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--mysql-user", "perfkit", *one, "--workload", "oltp_point_select"]
        + ["-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": lab_password(lab_mariadb)},
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == session.EXIT_OK, proc.stderr[-2000:]
    m = json.loads((out / "manifest.json").read_text())
    [rest] = [r for r in m["captures"] if r.get("step") == "rest"]
    assert (rest["kind"], rest["status"]) == ("threads", "ok")
    assert [s["name"] for s in m["sweep"]["steps"]] == ["t0004"]  # the rest is no step of the sweep
    doc = json.loads((tmp_path / "one-report" / "findings.json").read_text())
    said = [(f["rule"], f["summary"]) for f in doc["findings"]]
    # no row: the sampler took no sample while the load ran (it started late on a busy host)
    dbs = [w for w in doc["waits"] if w["process"] == "mariadbd"]
    assert len(dbs) == 1, (doc["waits"], [(s["rule"], s["reason"]) for s in doc["skipped"]], said)
    [db] = dbs
    assert (db["step"], db["baseline"]) == ("t0004", True)
    # what is left of its IO and lock waits is the load's own (none while the CPU is the limit)
    assert db["classes"]["io"] < 0.5 and db["classes"]["lock"] < 2.0, db
    assert not {rule for rule, _ in said} & {"io.throttled", "wait.profile"}, (said, doc["waits"])

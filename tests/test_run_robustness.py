"""`perfkit run` robustness (issue 14): the output location checked before anything slow, a failed
prepare or cleanup reported in one line, secrets with awkward characters, Ctrl-C before the sweep."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from perfkit.archive import check_new_output
from perfkit.collectors.load_gotpc import GoTpcRunner
from perfkit.collectors.load_goycsb import GoYcsbRunner, YcsbWorkload
from perfkit.collectors.mysql_sampler import DbTarget
from perfkit.errors import PerfkitError

from .conftest import LAB_DIR, PERFKIT
from .terminal import under_pty


@pytest.mark.parametrize("name", ["run.tar.gz", "run.tgz"])
def test_an_existing_archive_file_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"an earlier run")
    with pytest.raises(PerfkitError, match=rf"{name}: exists; perfkit never overwrites"):
        check_new_output(tmp_path / name)
    check_new_output(tmp_path / ("new-" + name))  # a new name is fine


def test_a_non_empty_directory_is_refused_an_empty_or_missing_one_is_not(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "manifest.json").write_text("{}")
    with pytest.raises(PerfkitError, match="full: output directory exists and is not empty"):
        check_new_output(full)
    (tmp_path / "empty").mkdir()
    check_new_output(tmp_path / "empty")
    check_new_output(tmp_path / "missing" / "deeper")


def test_a_file_where_a_directory_goes_and_a_file_as_parent_are_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(PerfkitError, match="plain: exists and is not a directory"):
        check_new_output(tmp_path / "plain")
    with pytest.raises(PerfkitError, match="plain: not a directory"):
        check_new_output(tmp_path / "plain" / "run.tar.gz")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(PerfkitError, match="dangling: exists and is not a directory"):
        check_new_output(tmp_path / "dangling")


# ---------------------------------------------------------------- real runs: lab MariaDB + sysbench

SOCKET = "/run/mysqld/mysqld.sock"


def mariadb(sql: str) -> str:
    """SQL as MariaDB's root over the unix socket (no password anywhere: SQL on stdin)."""
    return subprocess.run(
        ["mariadb", "-N"], input=sql, text=True, check=True, capture_output=True, timeout=60
    ).stdout


def sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def load_tables(db: str, tables: int, size: int) -> None:
    """sysbench's tables, loaded as root over the socket (no password: nothing to hide in argv)."""
    subprocess.run(
        ["sysbench", "oltp_read_write", "--db-driver=mysql", f"--mysql-socket={SOCKET}", "--mysql-user=root"]
        + [
            f"--mysql-db={db}",
            f"--tables={tables}",
            f"--table-size={size}",
            f"--threads={tables}",
            "prepare",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def rows(db: str, table: str) -> int:
    return int(mariadb(f"SELECT COUNT(*) FROM `{db}`.`{table}`").strip())


@pytest.fixture
def scratch(lab_mariadb: Path):
    """A throwaway database and a factory of users on it (dropped afterwards): other tests' sbtest is
    never touched."""
    db = "pk_rb_" + uuid.uuid4().hex[:10]
    users: list[str] = []
    mariadb(f"CREATE DATABASE `{db}`")

    def user(password: str, grants: str = "ALL", on: str = "*") -> str:
        name = f"pk_rb_{len(users)}_{uuid.uuid4().hex[:6]}"
        for host in ("127.0.0.1", "localhost"):  # sysbench's 127.0.0.1 is seen as localhost here
            mariadb(
                f"CREATE USER '{name}'@'{host}' IDENTIFIED BY {sql_string(password)};"
                f"GRANT {grants} ON `{db}`.{on} TO '{name}'@'{host}';"
            )
        users.append(name)
        return name

    yield db, user
    for name in users:
        mariadb(f"DROP USER IF EXISTS '{name}'@'127.0.0.1'; DROP USER IF EXISTS '{name}'@'localhost';")
    mariadb(f"DROP DATABASE IF EXISTS `{db}`")


def perfkit_run(
    user: str, password: str, db: str, out: Path, *more: str, timeout: float = 180
) -> subprocess.CompletedProcess:
    args = ["run", "sysbench", "--mysql-user", user, "--mysql-db", db, "--threads", "1", "--time", "2"]
    args += ["--cooldown-max", "0", "--profile", "minimal", "-o", str(out), *more]
    return subprocess.run(
        [*PERFKIT, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": password},
        timeout=timeout,
    )


@pytest.mark.lab
def test_a_prepare_that_printed_fatal_fails_before_any_step(scratch, tmp_path: Path) -> None:
    """Bug 3: sysbench's parallel prepare exits 0 after a thread's FATAL 1142 (no CREATE on sbtest2)."""
    db, user = scratch
    password = "pw-" + uuid.uuid4().hex
    name = user(password, on="`sbtest1`")  # every privilege on sbtest1 only
    out = tmp_path / "never"
    proc = perfkit_run(name, password, db, out, "--prepare", "--tables", "2", "--table-size", "2000")
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: sysbench prepare failed (exit 0): MySQL error 1142: CREATE command denied")
    assert "sbtest2" in last and "Traceback" not in proc.stderr and password not in proc.stderr
    assert not out.exists()  # no step ran


@pytest.mark.lab
def test_tables_smaller_than_the_table_size_are_refused_before_any_step(scratch, tmp_path: Path) -> None:
    """Bug 3: the manifest claimed --table-size rows where the tables held 2,000."""
    db, user = scratch
    load_tables(db, 2, 2000)
    password = "pw-" + uuid.uuid4().hex
    out = tmp_path / "never"
    proc = perfkit_run(user(password), password, db, out, "--tables", "2", "--table-size", "100000")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        f"Error: table {db}.sbtest1 holds 2,000 rows, --table-size is 100,000 (2 tables short): "
        "run with --prepare, or give the size the tables have"
    )
    assert not out.exists()


@pytest.mark.lab
@pytest.mark.parametrize("name", ["earlier", "earlier.tar.gz"])
def test_a_used_output_is_refused_before_prepare_drops_the_tables(scratch, tmp_path: Path, name: str) -> None:
    """Bug 6: the output was checked after --prepare had dropped and reloaded every table."""
    db, user = scratch
    load_tables(db, 1, 2000)
    out = tmp_path / name
    if name.endswith(".tar.gz"):
        out.write_bytes(b"an earlier run's archive")
    else:
        out.mkdir()
        (out / "manifest.json").write_text("{}")
    password = "pw-" + uuid.uuid4().hex
    proc = perfkit_run(user(password), password, db, out, "--prepare", "--table-size", "3000")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert str(out) in proc.stderr.strip().splitlines()[-1]
    assert "preparing" not in proc.stderr and rows(db, "sbtest1") == 2000  # the tables were not touched
    assert (
        out.read_bytes() == b"an earlier run's archive" if out.is_file() else (out / "manifest.json").exists()
    )


@pytest.mark.lab
def test_a_failed_cleanup_is_one_warning_after_the_table_the_archive_and_the_report(
    scratch, tmp_path: Path
) -> None:
    """Bug 7: a --cleanup without DROP privilege threw away the step table, the "wrote" line and
    the report, although the archive was complete."""
    db, user = scratch
    load_tables(db, 2, 2000)
    password = "pw-" + uuid.uuid4().hex
    name = user(password, grants="SELECT, INSERT, UPDATE, DELETE")
    out = tmp_path / "run"
    proc = perfkit_run(name, password, db, out, "--tables", "2", "--table-size", "2000", "--cleanup")
    assert proc.returncode == 3, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert any(line.startswith("t0001") and " ok " in line for line in lines), proc.stdout
    assert f"complete: wrote {out} in" in proc.stdout
    assert (tmp_path / "run-report" / "findings.json").exists() and "wrote " + str(
        tmp_path / "run-report"
    ) in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "warning: --cleanup failed: sysbench cleanup failed (exit 1): MySQL error 1142: DROP command denied"
    )
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert rows(db, "sbtest1") == 2000  # still there: the warning says so by its cause


@pytest.mark.lab
def test_a_password_with_spaces_quotes_hash_equals_and_backslash_reaches_sysbench(
    scratch, tmp_path: Path
) -> None:
    """Bug 12: a password with a space passed the login check, then every step failed with 1045."""
    db, user = scratch
    load_tables(db, 2, 2000)
    password = f" sp ace#{uuid.uuid4().hex[:6]}=x'y\\z, "  # leading/trailing blanks, # = ' \\ ,
    out = tmp_path / "run"
    proc = perfkit_run(
        user(password), password, db, out, "--tables", "2", "--table-size", "2000", "--no-report"
    )
    assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-1500:]
    m = json.loads((out / "manifest.json").read_text())
    assert [s["status"] for s in m["sweep"]["steps"]] == ["ok"]
    # the manifest says what the tables held, counted
    assert m["sweep"]["plan"]["table_rows"] == {
        "method": "SELECT COUNT(*)",
        "rows": {"sbtest1": 2000, "sbtest2": 2000},
    }
    leaked = [p for p in out.rglob("*") if p.is_file() and password.strip().encode() in p.read_bytes()]
    assert leaked == [] and password.strip() not in proc.stdout + proc.stderr


@pytest.mark.lab
def test_a_password_sysbench_cannot_carry_is_refused_up_front(scratch, tmp_path: Path) -> None:
    """Both quote characters and a space: sysbench's config file (no escapes) cannot hold it."""
    db, user = scratch
    load_tables(db, 1, 2000)
    password = f"a\"b 'c{uuid.uuid4().hex[:6]}"
    out = tmp_path / "never"
    proc = perfkit_run(user(password), password, db, out, "--table-size", "2000")
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: sysbench --config-file cannot carry this mysql-password:")
    assert password not in proc.stderr and not out.exists()


@pytest.mark.lab
def test_a_step_failure_names_the_mysql_error_not_the_first_fatal_line(scratch, tmp_path: Path) -> None:
    """Bug 13: "UPDATE command denied" showed as "mysql_stmt_prepare() failed"."""
    db, user = scratch
    load_tables(db, 2, 2000)
    password = "pw-" + uuid.uuid4().hex
    name = user(password, grants="SELECT, INSERT, DELETE")
    out = tmp_path / "run"
    proc = perfkit_run(name, password, db, out, "--tables", "2", "--table-size", "2000", "--no-report")
    assert proc.returncode == 1, proc.stderr[-2000:]
    step = json.loads((out / "manifest.json").read_text())["sweep"]["steps"][0]
    assert step["status"] == "failed"
    assert step["reason"].startswith(f"MySQL error 1142: UPDATE command denied to user '{name}'@'localhost'")
    assert step["reason"].endswith("(mysql_stmt_prepare() failed)")
    assert "MySQL error 1142: UPDATE command denied" in next(
        x for x in proc.stdout.splitlines() if x.startswith("t0001")
    )


def _load_dirs() -> set[str]:
    return set(glob.glob("/tmp/perfkit-load.*"))


def _sysbench_using(path: str) -> list[str]:
    ps = subprocess.run(["pgrep", "-a", "sysbench"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if path in line]


@pytest.mark.lab
@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_interrupting_prepare_exits_130_and_leaves_nothing_behind(scratch, tmp_path: Path, how: str) -> None:
    """Bug 16: Ctrl-C during `run --prepare` exited 1 "Aborted!"; SIGTERM left the 0600 secret file in
    /tmp/perfkit-load.* and sysbench loading on."""
    db, user = scratch
    password = "pw-" + uuid.uuid4().hex
    name = user(password)
    out = tmp_path / "never"
    before = _load_dirs()
    args = ["run", "sysbench", "--mysql-user", name, "--mysql-db", db, "--threads", "1", "--time", "2"]
    args += ["--prepare", "--tables", "4", "--table-size", "200000", "--profile", "minimal", "-o", str(out)]
    env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": password}
    seen: dict[str, list[str]] = {}

    def watch_prepare(deadline: float) -> None:  # the secrets' dir and the sysbench using it
        while time.monotonic() < deadline and not seen.get("sysbench"):
            for d in _load_dirs() - before:
                if found := _sysbench_using(d):
                    seen.update(dir=[d], sysbench=found)
            time.sleep(0.1)

    if how == "SIGTERM":
        proc = subprocess.Popen(
            [*PERFKIT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        watch_prepare(time.monotonic() + 30)
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _stdout, text = proc.communicate(timeout=60)
        code = proc.returncode
    else:
        os.environ["PERFKIT_MYSQL_PASSWORD"] = password  # under_pty's child inherits the environment
        try:
            watcher = threading.Thread(target=watch_prepare, args=(time.monotonic() + 30,), daemon=True)
            watcher.start()
            code, text, _took = under_pty(args, ctrl_c_when=lambda: bool(seen.get("sysbench")))
            watcher.join()
        finally:
            del os.environ["PERFKIT_MYSQL_PASSWORD"]
    assert seen.get("sysbench"), f"prepare was not seen running: {text[-1500:]}"
    assert code == 130, text[-2000:]
    assert text.strip().splitlines()[-1].endswith(f"interrupted before the sweep: nothing written to {out}")
    assert "Traceback" not in text and "Aborted!" not in text
    assert not Path(seen["dir"][0]).exists() and _load_dirs() - before == set()
    assert _sysbench_using(seen["dir"][0]) == []  # the prepare was stopped
    assert not out.exists()


AWKWARD = " sp ace#{}=x'y\"\\z "  # blanks at both ends, # = both quotes and a backslash


def go_tool(name: str) -> str:
    path = LAB_DIR / "bin" / name
    if not path.exists():
        pytest.skip(f"{path} missing: scripts/go_tools.sh builds it")
    return str(path)


@pytest.mark.lab
def test_go_ycsb_gets_a_password_with_blanks_quotes_and_a_backslash_intact(scratch) -> None:
    """Bug 12 for go-ycsb's -P property file: a leading blank was dropped and `\\z` read as `z`."""
    db, user = scratch
    password = AWKWARD.format(uuid.uuid4().hex[:6])
    target = DbTarget(user=user(password), password=password, db=db)
    workload = YcsbWorkload(recordcount=200)
    with GoYcsbRunner(target, workload, binary=go_tool("go-ycsb")) as runner:
        runner.preflight()
        runner.prepare(timeout=120)  # go-ycsb load: 1045 here before the fix
        assert runner.check_tables() == {"method": "SELECT COUNT(*)", "rows": {"usertable": 200}}


@pytest.mark.lab
def test_go_tpc_gets_a_password_with_blanks_quotes_and_a_backslash_intact(scratch) -> None:
    """go-tpc's -p travels on stdin into a shell variable (`IFS= read -r`): nothing lost on the way."""
    db, user = scratch
    password = AWKWARD.format(uuid.uuid4().hex[:6])
    target = DbTarget(user=user(password), password=password, db=db)
    with GoTpcRunner(target, binary=go_tool("go-tpc")) as runner:
        runner.preflight()
        runner.cleanup(timeout=60)  # logs in and drops the (absent) TPC-C tables: exit 0
        with pytest.raises(PerfkitError, match=rf"table {db}.warehouse does not exist, --warehouses is 1"):
            runner.check_tables()

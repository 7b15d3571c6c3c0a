"""Per-step database snapshots (collectors/db_snapshot.py), the driver's records of them, and who
blocks most (analyzers/_blockers.py).

Unit tier: a fake connection answers the queries, so every server flavour and failure is covered
without a server. Lab tier: a real row-lock wait between sessions on the lab MariaDB, and a real
`perfkit run sysbench` on a hot row whose archive holds the snapshots of every step.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pymysql
import pytest

from perfkit.analyzers._blockers import IDLE, blockers, statement_shape
from perfkit.archive import open_archive
from perfkit.collectors import captures, db_snapshot, driver, session
from perfkit.collectors.mysql_sampler import DbTarget
from perfkit.dataset import Capture, Dataset, load_dataset
from perfkit.parsers import innodb_status, mysql_lock_waits, mysql_variables, mysql_waits

from .conftest import FIXTURES, PERFKIT, lab_password
from .test_driver import CURVE, FakeRunner

INNODB_TEXT = (FIXTURES / "innodb_status" / "mariadb-10.11-perfkit-snapshot-lock-waits.txt").read_text()


# ---------------------------------------------------------------- a fake server


class FakeCursor:
    def __init__(self, server: FakeServer):
        self.server, self.rows = server, []

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str) -> None:
        self.server.executed.append(sql)
        for key, answer in self.server.answers.items():
            if key in sql:
                if isinstance(answer, BaseException):
                    raise answer
                self.rows = list(answer)
                return
        raise AssertionError(f"unexpected query: {sql}")

    def fetchall(self) -> list:
        return self.rows

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None


class FakeServer:
    """Answers by the first key found in the SQL: rows, or an exception to raise."""

    def __init__(self, answers: dict[str, Any]):
        self.answers, self.executed, self.closed = answers, [], False

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def close(self) -> None:
        self.closed = True


def variables(version: str, ps: str = "OFF", **more: str) -> list[tuple[str, str]]:
    return [("max_connections", "151"), ("performance_schema", ps), ("version", version), *more.items()]


MARIADB_WAIT = (
    "1838105", 86, "SELECT v FROM t WHERE id = 1 FOR UPDATE", "1838103", 84, None,
    "`tpcc`.`t`", "PRIMARY", "X", "X", "2026-11-27 10:05:04", 2,
)  # fmt: skip


def take_fake(
    tmp_path: Path, answers: dict[str, Any], **kw: Any
) -> tuple[dict[str, db_snapshot.Taken], FakeServer]:
    server = FakeServer(answers)
    target = kw.pop("target", DbTarget(host="db1", port=3306))
    taken = db_snapshot.take(target, tmp_path, "t0004", "end", connect=lambda: server, **kw)
    return {t.kind: t for t in taken}, server


def test_mariadb_snapshot_writes_what_the_parsers_read(tmp_path: Path) -> None:
    got, server = take_fake(
        tmp_path,
        {
            "SHOW GLOBAL VARIABLES": variables("10.11.19-MariaDB-0+deb12u1"),
            "SHOW ENGINE INNODB STATUS": [("InnoDB", "", INNODB_TEXT)],
            "CONVERT_TZ": [(480,)],
            "information_schema.innodb_lock_waits": [MARIADB_WAIT],
        },
    )
    assert {k: t.status for k, t in got.items()} == {
        "mysql_variables": "ok",
        "innodb_status": "ok",
        "mysql_lock_waits": "ok",
        "mysql_waits": "unavailable",
    }
    assert "performance_schema is OFF" in got["mysql_waits"].reason and "MariaDB" in got["mysql_waits"].reason
    assert not any("events_waits" in sql for sql in server.executed)  # p_s off: not even asked
    assert server.closed
    assert got["innodb_status"].tz == "Etc/GMT-8"  # the server's clock is UTC+8
    assert got["mysql_variables"].rel == "db/db1:3306/t0004/variables-end.jsonl"
    assert not (tmp_path / got["mysql_waits"].rel).exists()

    v = mysql_variables.parse(tmp_path / got["mysql_variables"].rel, host="db1")
    assert v.set_index("name").loc["max_connections", "number"] == 151
    assert pd.isna(v.set_index("name").loc["performance_schema", "number"])  # OFF is no number
    assert v["timestamp"].iloc[0] == pd.Timestamp(got["mysql_variables"].started_at)
    status = innodb_status.parse(tmp_path / got["innodb_status"].rel, tz=got["innodb_status"].tz)
    assert len(status) == 1 and status["lock_wait_transactions"].iloc[0] == 2  # the fixture's two LOCK WAITs
    (wait,) = mysql_lock_waits.parse(tmp_path / got["mysql_lock_waits"].rel).to_dict("records")
    assert (wait["waiting_thread_id"], wait["blocking_thread_id"], wait["table"]) == (86, 84, "`tpcc`.`t`")
    assert pd.isna(wait["blocking_query"]) and wait["wait_age_s"] == 2
    assert wait["source"] == "information_schema.innodb_lock_waits"


def test_mysql_80_reads_performance_schema(tmp_path: Path) -> None:
    got, server = take_fake(
        tmp_path,
        {
            "SHOW GLOBAL VARIABLES": variables("8.0.36", ps="ON"),
            "SHOW ENGINE INNODB STATUS": [("InnoDB", "", INNODB_TEXT)],
            "CONVERT_TZ": [(0,)],
            "performance_schema.data_lock_waits": [MARIADB_WAIT],
            "events_waits_summary": [("wait/io/file/innodb/innodb_log_file", 10, 5 * 10**12, 10**12)],
        },
    )
    assert all(t.status == "ok" for t in got.values()), [t.reason for t in got.values()]
    assert not any("innodb_lock_waits" in sql for sql in server.executed)  # gone in 8.0
    waits = mysql_waits.parse(tmp_path / got["mysql_waits"].rel)
    assert waits[["count_star", "sum_wait_s", "max_wait_s"]].iloc[0].tolist() == [10, 5.0, 1.0]
    assert mysql_lock_waits.parse(tmp_path / got["mysql_lock_waits"].rel)["source"].iloc[0] == (
        "performance_schema.data_lock_waits"
    )


def test_mysql_80_with_performance_schema_off_says_why_there_are_no_lock_waits(tmp_path: Path) -> None:
    got, _ = take_fake(
        tmp_path,
        {
            "SHOW GLOBAL VARIABLES": variables("8.0.36"),
            "SHOW ENGINE": [("InnoDB", "", INNODB_TEXT)],
            "CONVERT": [],
        },
    )
    assert (
        got["mysql_lock_waits"].status == "unavailable"
        and "data_lock_waits" in got["mysql_lock_waits"].reason
    )


def test_tidb_has_no_innodb_and_its_lock_waits_name_the_table_from_key_info(tmp_path: Path) -> None:
    key_info = json.dumps(
        {"db_id": 2, "db_name": "test", "table_id": 70, "table_name": "t", "handle_value": "1"}
    )
    row = (
        "425",
        7,
        "update `t` set `v` = ? where `id` = ?",
        "424",
        5,
        None,
        key_info,
        "d1",
        "d0",
        "2026",
        1.25,
    )
    got, server = take_fake(
        tmp_path,
        {
            "SHOW GLOBAL VARIABLES": variables("8.0.11-TiDB-v7.5.1", ps="ON"),
            "DATA_LOCK_WAITS": [row],
        },
    )
    assert got["innodb_status"].status == "unavailable" and "TiDB" in got["innodb_status"].reason
    assert got["mysql_waits"].status == "unavailable"
    assert not any("INNODB STATUS" in sql for sql in server.executed)
    (wait,) = mysql_lock_waits.parse(tmp_path / got["mysql_lock_waits"].rel).to_dict("records")
    assert wait["table"] == "`test`.`t`" and wait["waiting_digest"] == "d1" and wait["wait_age_s"] == 1.25


def test_privileges_and_missing_tables_are_unavailable_not_failures(tmp_path: Path) -> None:
    denied = pymysql.err.OperationalError(
        1227, "Access denied; you need (at least one of) the PROCESS privilege(s)"
    )
    got, _ = take_fake(
        tmp_path,
        {
            "SHOW GLOBAL VARIABLES": variables("5.7.44", ps="ON"),
            "SHOW ENGINE INNODB STATUS": denied,
            "innodb_lock_waits": pymysql.err.ProgrammingError(1146, "Table doesn't exist"),
            "events_waits_summary": pymysql.err.OperationalError(1142, "SELECT command denied"),
        },
    )
    assert [got[k].status for k in ("innodb_status", "mysql_lock_waits", "mysql_waits")] == [
        "unavailable"
    ] * 3
    assert "PROCESS" in got["innodb_status"].reason and "may not read" in got["innodb_status"].reason
    assert "does not have it" in got["mysql_lock_waits"].reason


def test_a_query_that_times_out_ends_the_snapshot_without_a_traceback(tmp_path: Path) -> None:
    lost = pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query (timed out)")
    got, server = take_fake(
        tmp_path, {"SHOW GLOBAL VARIABLES": variables("10.11.19-MariaDB"), "SHOW ENGINE INNODB STATUS": lost}
    )
    assert got["innodb_status"].status == "timed_out"
    assert [got[k].status for k in ("mysql_lock_waits", "mysql_waits")] == ["skipped", "skipped"]
    assert len(server.executed) == 2  # nothing more was asked of a dead connection


def test_the_budget_bounds_a_slow_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db_snapshot, "BUDGET_S", 0.05)

    class Slow(list):
        def __iter__(self):  # the variables take longer than the whole budget to arrive
            time.sleep(0.1)
            return super().__iter__()

    got, server = take_fake(tmp_path, {"SHOW GLOBAL VARIABLES": Slow(variables("10.11.19-MariaDB"))})
    assert got["mysql_variables"].status == "ok"
    assert {got[k].status for k in ("innodb_status", "mysql_lock_waits", "mysql_waits")} == {"skipped"}
    assert "budget" in got["innodb_status"].reason and len(server.executed) == 1


def test_a_dead_server_fails_every_part_and_says_why(tmp_path: Path) -> None:
    with contextlib.closing(__import__("socket").socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    t0 = time.monotonic()
    taken = db_snapshot.take(DbTarget(port=port, password="s3cret-pw"), tmp_path, "t0001", "start")
    assert time.monotonic() - t0 < 3
    assert {t.status for t in taken} == {"failed"} and all("cannot connect" in t.reason for t in taken)
    assert not any((tmp_path / t.rel).exists() for t in taken)


def test_the_password_is_masked_in_what_is_written(tmp_path: Path) -> None:
    secret = "hunter2-" + uuid.uuid4().hex[:6]
    wait = (*MARIADB_WAIT[:5], f"SET PASSWORD = PASSWORD('{secret}')", *MARIADB_WAIT[6:])
    got, _ = take_fake(
        tmp_path,
        {
            "SHOW GLOBAL VARIABLES": variables("10.11.19-MariaDB"),
            "SHOW ENGINE": [],
            "innodb_lock_waits": [wait],
        },
        target=DbTarget(host="db1", password=secret),
    )
    text = (tmp_path / got["mysql_lock_waits"].rel).read_text()
    assert secret not in text and got["mysql_lock_waits"].redacted
    assert got["innodb_status"].status == "unavailable"  # no row: no monitor output


def test_step_snapshots_not_done_in_time_are_timed_out_and_never_written_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real_take = db_snapshot.take

    def slow_take(target: DbTarget, root: Path, step: str, phase: str, **kw: Any) -> list[db_snapshot.Taken]:
        release.wait(5)
        server = FakeServer(
            {"SHOW GLOBAL VARIABLES": variables("10.11.19-MariaDB"), "SHOW": [], "innodb": []}
        )
        return real_take(target, root, step, phase, connect=lambda: server, **kw)

    monkeypatch.setattr(db_snapshot, "take", slow_take)
    snaps = db_snapshot.StepSnapshots([DbTarget(host="db1")], tmp_path, "t0002", load_s=0.4)
    snaps.start()
    taken = snaps.finish(timeout=0.2)
    assert len(taken) == 8 and {t.status for t in taken} == {"timed_out"}
    release.set()
    snaps.join(5)
    assert not list(tmp_path.rglob("*.jsonl"))


def test_the_driver_records_each_steps_snapshots(tmp_path: Path) -> None:
    """A sweep against a database that does not answer: every step still runs, and each has its 9
    snapshot records (4 captures x start/end, the lock waits polled during) saying why they failed."""
    with contextlib.closing(__import__("socket").socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = session.Options(window=1, specs=captures.MINIMAL)
    plan = driver.Plan(threads=(1, 2), time_s=1, cooldown_max_s=0)
    res = driver.run_sweep(
        FakeRunner(CURVE), plan, tmp_path / "run", hosts=[], opts=opts, db=DbTarget(port=port)
    )
    assert [s["status"] for s in res.manifest["sweep"]["steps"]] == ["ok", "ok"]
    snaps = [r for r in res.manifest["captures"] if r["path"].startswith("db/") and r["step"]]
    assert sorted((r["step"], r["phase"], r["kind"]) for r in snaps) == sorted(
        [
            (step, phase, kind)
            for step in ("t0001", "t0002")
            for phase in ("start", "end")
            for kind, _, _ in db_snapshot.PARTS
        ]
        + [(step, "during", "mysql_lock_waits") for step in ("t0001", "t0002")]
    )
    assert [(r["status"], r["bytes"]) for r in snaps] == [("failed", 0)] * 18
    assert all("cannot connect" in r["reason"] for r in snaps)
    with open_archive(res.path) as archive:
        ds = load_dataset(archive)
    assert not [c for c in ds.captures if c.kind in ("mysql_variables", "mysql_lock_waits")]
    assert all(
        "not collected: cannot connect" in u["reason"] for u in ds.unparsed if u["path"].startswith("db/")
    )


# ---------------------------------------------------------------- who blocks most


def waits_frame(rows: list[dict]) -> pd.DataFrame:
    lines = {}
    for r in rows:
        lines.setdefault(r.pop("t"), []).append(r)
    text = "".join(
        json.dumps({"snapshot": "mysql_lock_waits", "ts": "", "t": t, "source": "x", "waits": w}) + "\n"
        for t, w in lines.items()
    )
    return mysql_lock_waits.parse(text, host="db1")


def wait(
    t: float, waiting: str, blocking: str, query: str | None, table: str = "`s`.`t1`", age: float = 1
) -> dict:
    return {
        "t": t,
        "waiting_trx_id": waiting,
        "blocking_trx_id": blocking,
        "blocking_query": query,
        "table": table,
        "wait_age_s": age,
    }


def test_blockers_group_by_table_and_statement_shape_inside_the_window() -> None:
    frame = waits_frame(
        [
            wait(100, "w1", "b1", "UPDATE t1 SET k=k+1 WHERE id=5", age=1),
            wait(100, "w2", "b1", "UPDATE t1 SET k=k+1 WHERE id=5", age=3),
            wait(100, "w3", "b2", None, table="`s`.`t2`", age=7),
            wait(102, "w1", "b3", "UPDATE t1 SET k=k+1 WHERE id=9", age=2),
            wait(900, "w9", "b9", "DELETE FROM t1", age=50),  # outside the window
        ]
    )
    ds = Dataset("x", None, [Capture("db/a.jsonl", "mysql_lock_waits", "db1", "t0004", frame)])
    got = blockers(ds, "db1", pd.Timestamp(50, unit="s", tz="UTC"), pd.Timestamp(200, unit="s", tz="UTC"))
    top, idle = got
    assert (top.table, top.statement) == ("`s`.`t1`", "UPDATE t1 SET k=k+? WHERE id=?")
    # b1 blocks two in the first snapshot, b3 one in the second: 2 blockers, 3 waits, 2 snapshots
    assert (top.blocking, top.waiting, top.longest_wait_s, top.snapshots) == (2, 3, 3.0, 2)
    assert (idle.table, idle.statement, idle.blocking, idle.waiting, idle.longest_wait_s) == (
        "`s`.`t2`",
        IDLE,
        1,
        1,
        7.0,
    )
    assert blockers(ds, "other", pd.Timestamp(0, tz="UTC"), pd.Timestamp(10**10, unit="s", tz="UTC")) == []


def test_statement_shape() -> None:
    assert statement_shape("SELECT c FROM t WHERE id IN (1, 2, 3) AND c = 'x''y'") == (
        "SELECT c FROM t WHERE id IN (?) AND c = ?"
    )
    assert statement_shape("UPDATE sbtest1 SET k=k+1 WHERE id=5") == "UPDATE sbtest1 SET k=k+? WHERE id=?"
    assert statement_shape(None) == IDLE


# ---------------------------------------------------------------- lab: real lock waits, a real sweep

SCRATCH = "pk_lock_scratch"
ROOT_TARGET = DbTarget(socket="/run/mysqld/mysqld.sock", user="root")  # unix_socket auth: no password
WAITER_SQL = (
    f"UPDATE {SCRATCH} SET v = v + 10 WHERE id = 1",
    f"SELECT v FROM {SCRATCH} WHERE id = 1 FOR UPDATE",
)


@contextlib.contextmanager
def held_row_lock(password: str) -> Iterator[dict[str, Any]]:
    """User perfkit, database tpcc: one session holds row 1 of a scratch table in an open transaction,
    two more wait for it (an UPDATE, then a SELECT ... FOR UPDATE queued behind both). The table is
    dropped afterwards, however it ends."""
    target = DbTarget(user="perfkit", password=password, db="tpcc")
    admin = target.connect(read_timeout=30)
    conns: list[Any] = []
    threads: list[threading.Thread] = []
    try:
        with admin.cursor() as c:
            c.execute(f"CREATE OR REPLACE TABLE {SCRATCH} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
            c.execute(f"INSERT INTO {SCRATCH} VALUES (1, 0), (2, 0)")
        holder = target.connect(read_timeout=30)
        conns.append(holder)
        holder.begin()
        with holder.cursor() as c:
            c.execute(f"UPDATE {SCRATCH} SET v = v + 1 WHERE id = 1")
        waiters = []
        for sql in WAITER_SQL:
            conn = target.connect(read_timeout=30)
            conns.append(conn)
            waiters.append(conn)
            with conn.cursor() as c:
                c.execute("SET SESSION innodb_lock_wait_timeout = 20")
            th = threading.Thread(target=lambda c=conn, q=sql: c.cursor().execute(q), daemon=True)
            th.start()
            threads.append(th)
            # the next waiter queues behind this one: wait until this one waits (the lab server is
            # shared: only this session's own state says so)
            deadline = time.monotonic() + 10
            with contextlib.closing(ROOT_TARGET.connect(database=False)) as root, root.cursor() as c:
                while time.monotonic() < deadline:
                    c.execute(
                        "SELECT COUNT(*) FROM information_schema.innodb_trx"
                        f" WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = {conn.thread_id()}"
                    )
                    if c.fetchone()[0]:
                        break
                    time.sleep(0.15)  # innodb_trx is a cache refreshed at most every 0.1 s
        time.sleep(1.1)  # innodb_trx keeps the wait's start to the second: let it age one
        yield {"holder": holder.thread_id(), "waiters": [w.thread_id() for w in waiters]}
    finally:
        with contextlib.suppress(Exception):
            conns[0].rollback()
        for th in threads:
            th.join(25)
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        with admin.cursor() as c:
            c.execute(f"DROP TABLE IF EXISTS {SCRATCH}")
        admin.close()


@pytest.mark.lab
def test_a_real_row_lock_wait_shows_who_blocks_whom(lab_mariadb: Path, tmp_path: Path) -> None:
    password = lab_password(lab_mariadb)
    with held_row_lock(password) as ids:
        taken = {t.kind: t for t in db_snapshot.take(ROOT_TARGET, tmp_path, "t0001", "end")}
        # the same wait, seen by the lab's own user, who lacks the PROCESS privilege
        unprivileged = {
            t.kind: t
            for t in db_snapshot.take(DbTarget(user="perfkit", password=password), tmp_path, "t0002", "end")
        }
    assert taken["mysql_lock_waits"].status == "ok" and taken["innodb_status"].status == "ok"
    waits = mysql_lock_waits.parse(tmp_path / taken["mysql_lock_waits"].rel, host="lab")
    waits = waits[waits["table"] == f"`tpcc`.`{SCRATCH}`"].reset_index(drop=True)  # the server is shared
    update, select = ids["waiters"]
    pairs = {(r.waiting_thread_id, r.blocking_thread_id) for r in waits.itertuples()}
    # both wait on the holder; the SELECT ... FOR UPDATE also queues behind the UPDATE's request
    assert pairs == {(update, ids["holder"]), (select, ids["holder"]), (select, update)}
    assert set(waits["table"]) == {f"`tpcc`.`{SCRATCH}`"} and set(waits["index_name"]) == {"PRIMARY"}
    by_waiter = waits.set_index("waiting_thread_id")
    assert by_waiter.loc[update, "waiting_query"] == WAITER_SQL[0]
    assert waits["wait_age_s"].min() >= 1
    on_holder = waits[waits["blocking_thread_id"] == ids["holder"]]
    assert on_holder["blocking_query"].isna().all()  # the holder sits idle in its transaction

    status = innodb_status.parse(tmp_path / taken["innodb_status"].rel, tz=taken["innodb_status"].tz)
    ours = {w["thread_id"] for w in status.attrs["lock_waits"] if w["table"] == f"`tpcc`.`{SCRATCH}`"}
    assert ours == {update, select} and status["lock_wait_transactions"].iloc[0] >= 2

    ds = Dataset(
        "lab", None, [Capture(taken["mysql_lock_waits"].rel, "mysql_lock_waits", "lab", "t0001", waits)]
    )
    top = blockers(ds, "lab", waits["timestamp"].min(), waits["timestamp"].max())
    assert [(b.statement, b.blocking, b.waiting) for b in top] == [
        (IDLE, 1, 2),
        (f"UPDATE {SCRATCH} SET v = v + ? WHERE id = ?", 1, 1),
    ]

    for kind in ("innodb_status", "mysql_lock_waits"):
        assert unprivileged[kind].status == "unavailable" and "PROCESS" in unprivileged[kind].reason
    assert unprivileged["mysql_variables"].status == "ok"


SWEEP_DB = "pk_snapshot_test"
_sweep: dict[str, Any] = {}


def _mariadb(sql: str) -> str:
    """SQL as MariaDB's root over the unix socket (no password anywhere: SQL on stdin)."""
    return subprocess.run(
        ["mariadb", "-N", "-B"], input=sql, text=True, check=True, capture_output=True
    ).stdout


def hot_row_sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`perfkit run sysbench` once for the module: every transaction updates the one row of a table,
    threads 1 and 32 (a few waiting on the row at any moment), 3 s each, as a user with the PROCESS
    privilege in a scratch database."""
    if _sweep:
        return _sweep
    user, password = "pk_snapshot", "pk-" + uuid.uuid4().hex
    out = tmp_path_factory.mktemp("snapshot-sweep") / "run.tar.gz"
    _mariadb(
        f"CREATE DATABASE IF NOT EXISTS {SWEEP_DB};"
        + "".join(
            f"CREATE OR REPLACE USER '{user}'@'{h}' IDENTIFIED BY '{password}';"
            f"GRANT ALL ON {SWEEP_DB}.* TO '{user}'@'{h}'; GRANT PROCESS ON *.* TO '{user}'@'{h}';"
            for h in ("127.0.0.1", "localhost")
        )
    )
    try:
        proc = subprocess.run(
            [*PERFKIT, "run", "sysbench", "--mysql-user", user, "--mysql-db", SWEEP_DB, "--prepare",
             "--workload", "oltp_update_non_index", "--tables", "1", "--table-size", "1",
             "--threads", "1,32", "--time", "3", "--profile", "minimal", "-o", str(out)],
            capture_output=True, text=True, env={**os.environ, "PERFKIT_MYSQL_PASSWORD": password},
            timeout=300, cwd=out.parent,
        )  # fmt: skip
        max_connections = int(_mariadb("SELECT @@max_connections").strip())
    finally:
        _mariadb(
            f"DROP DATABASE IF EXISTS {SWEEP_DB};"
            f"DROP USER IF EXISTS '{user}'@'127.0.0.1'; DROP USER IF EXISTS '{user}'@'localhost';"
        )
    assert proc.returncode in (session.EXIT_OK, session.EXIT_PARTIAL), proc.stderr[-2000:]
    with open_archive(out) as archive:
        _sweep.update(manifest=archive.manifest, ds=load_dataset(archive))
    _sweep.update(max_connections=max_connections, password=password, out=out)
    return _sweep


@pytest.mark.lab
def test_a_real_sweep_archives_parsed_snapshots_of_every_step(
    lab_mariadb: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = hot_row_sweep(tmp_path_factory)
    recs = [r for r in run["manifest"]["captures"] if r["kind"] in {k for k, _, _ in db_snapshot.PARTS}]
    host = "127.0.0.1:3306"
    assert {(r["step"], r["phase"], r["kind"], r["status"]) for r in recs} == {
        (step, phase, kind, "unavailable" if kind == "mysql_waits" else "ok")
        for step in ("t0001", "t0032")
        for phase in ("start", "end")
        for kind, _, _ in db_snapshot.PARTS
    } | {(step, "during", "mysql_lock_waits", "ok") for step in ("t0001", "t0032")}
    assert all(r["host"] == host and r["path"].startswith(f"db/{host}/{r['step']}/") for r in recs)
    assert all("performance_schema is OFF" in r["reason"] for r in recs if r["kind"] == "mysql_waits")
    ds: Dataset = run["ds"]
    assert not [u for u in ds.unparsed if "/t000" in u["path"] and "not collected" not in u["reason"]]

    variables = ds.of("mysql_variables")
    assert len(variables) == 4
    for cap in variables:
        v = cap.frame.set_index("name")
        assert v.loc["max_connections", "number"] == run["max_connections"]  # what the server says
        assert v.loc["innodb_buffer_pool_size", "number"] > 0

    # InnoDB's monitor, parsed: between a step's start and end snapshots transactions ran and redo grew
    status = {(c.step, c.path.rsplit("-", 1)[1]): c.frame.iloc[0] for c in ds.of("innodb_status")}
    assert len(status) == 4
    for step in ("t0001", "t0032"):
        start, end = status[(step, "start.txt")], status[(step, "end.txt")]
        assert end["trx_id_counter"] > start["trx_id_counter"]
        assert end["log_sequence_number"] > start["log_sequence_number"]
        assert start["timestamp"] < end["timestamp"]

    # taken inside the load: one thread never waits; 32 on one row do (the lab server is shared: only
    # waits on this run's table count)
    def waits(step: str) -> pd.DataFrame:
        frame = pd.concat([c.frame for c in ds.of("mysql_lock_waits") if c.step == step])
        return frame[frame["table"] == f"`{SWEEP_DB}`.`sbtest1`"]

    one, many = waits("t0001"), waits("t0032")
    assert len(one) == 0 and len(many) >= 1
    assert set(many["waiting_query"]) == {
        "UPDATE sbtest1 SET c=? WHERE id=?"
    }  # sysbench's prepared statement
    top = blockers(ds, host, many["timestamp"].min(), many["timestamp"].max())
    assert top[0].table == f"`{SWEEP_DB}`.`sbtest1`" and top[0].waiting >= 1
    leaked = [
        p
        for p in Path(run["out"]).parent.rglob("*")
        if p.is_file() and run["password"].encode() in p.read_bytes()
    ]
    assert leaked == []

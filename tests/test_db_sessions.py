"""Sessions by state (issue 16): the sampler's processlist classes, the report's sessions table and
db.lock-contention's metadata/global/table-lock path.

Unit tests read tests/fixtures/mysql_status/session-states-by-hand.txt (README there) and the archives
tests/fixtures/archives/db-metadata-lock and db-metadata-lock-control (README there: the exact runs).
The figures are worked from the raw sampler lines (json, not the parser): a step's window is its
sysbench record's started_at + 1 s .. ended_at - 0.5 s, and a class's figure is the mean over the
samples inside it of the by_state counts in the states the test names itself.
"""

from __future__ import annotations

import json
import math
import secrets
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from analyzers import analyze, db
from analyzers.sweep import model
from collectors.mysql_sampler import DbTarget, StatusSampler, _connection_id, sample
from perfkit.archive import open_archive
from perfkit.config import load_thresholds
from perfkit.dataset import Dataset, load_dataset
from perfkit.errors import ParseError
from perfkit.findings import Finding, Skipped
from perfkit.parsers import mysql_status
from perfkit.parsers.mysql_status import LOCK_KINDS, SESSION_CLASSES, session_class
from perfkit.pipeline import write_reports

from .conftest import lab_password

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
MDL, CONTROL = FIX / "archives" / "db-metadata-lock", FIX / "archives" / "db-metadata-lock-control"
HOT = FIX / "archives" / "db-hot-rows"  # sampled before by_state existed
IOPS = FIX / "archives" / "scn-db-write-iops-one-step"  # 8 threads, mariadbd held at 40 write IOPS
BY_HAND = FIX / "mysql_status" / "session-states-by-hand.txt"
TH = load_thresholds()
MDL_STATE = "Waiting for table metadata lock"


def dataset(path: Path) -> Dataset:
    with open_archive(path) as a:
        return load_dataset(a)


def run(ds: Dataset) -> list[Finding] | Skipped:
    sweep, _ = model(ds, TH)
    return db.lock_contention(ds, sweep, TH)


def raw_step(archive: Path, step: str) -> list[dict]:
    """The raw sampler lines inside the step's load window (module docstring's recipe)."""
    manifest = json.loads((archive / "manifest.json").read_text())
    rec = next(r for r in manifest["captures"] if r["path"] == f"load/{step}/sysbench.out")
    stamp = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()  # noqa: E731
    start, end = stamp(rec["started_at"]) + 1, stamp(rec["ended_at"]) - 0.5
    (jsonl,) = archive.glob("db/*/global_status.jsonl")
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    return [o for o in lines if start <= round(o["t"], 3) <= end]


def mean_in(lines: list[dict], *states: str) -> float:
    return sum(sum(r[3] for r in o["processlist"]["by_state"] if r[1] in states) for o in lines) / len(lines)


# ---------------------------------------------------------------------------------- the classes


@pytest.mark.parametrize(
    ("command", "state", "trx", "expected"),
    [
        ("Sleep", "", None, ("idle", None)),
        ("Daemon", "InnoDB purge coordinator", None, ("idle", None)),
        ("Sleep", "", "RUNNING", ("idle", None)),  # a transaction left open between statements
        ("Query", "User sleep", None, ("idle", None)),
        # a row-lock waiter says "Updating" (the lab's MariaDB): the transaction table tells the wait
        ("Query", "Updating", "LOCK WAIT", ("lock", "row")),
        ("Query", "Updating", "RUNNING", ("cpu", None)),
        ("Execute", "Waiting for table metadata lock", None, ("lock", "metadata")),
        ("Query", "Waiting for table flush", None, ("lock", "metadata")),
        ("Query", "Waiting for backup lock", None, ("lock", "global")),  # FTWRL on MariaDB 10.4+
        ("Query", "Waiting for global read lock", None, ("lock", "global")),
        ("Query", "Waiting for commit lock", None, ("lock", "global")),
        ("Query", "Waiting for table level lock", None, ("lock", "table")),
        ("Query", "User lock", None, ("lock", "user")),
        ("Query", "waiting for handler commit", None, ("commit", None)),  # MySQL 8.0
        ("Execute", "Commit", None, ("commit", None)),
        ("Query", "query end", None, ("commit", None)),
        ("Execute", "Updating status", None, ("commit", None)),  # MariaDB 10.6+: the redo log flush
        ("Query", "Updating", "COMMITTING", ("commit", None)),
        ("Query", "closing tables", None, ("io", None)),
        ("Query", "Copying to tmp table on disk", None, ("io", None)),
        ("Query", "Sending data", None, ("cpu", None)),
        ("Query", "executing", None, ("cpu", None)),
        ("Execute", "Writing to net", None, ("net", None)),
        ("Query", "Opening tables", None, ("other", None)),  # the table cache, no disk wait by itself
        ("Query", "System lock", None, ("other", None)),
        ("Query", "", None, ("other", None)),
        ("Query", None, None, ("other", None)),
        ("Query", "a state of a future version", None, ("other", None)),
        # TiDB: State is the session's status flags; TIDB_TRX's STATE says the wait
        ("Query", "in transaction; autocommit", None, ("other", None)),
        ("Query", "autocommit", "LockWaiting", ("lock", "row")),
        ("Query", "autocommit", "Committing", ("commit", None)),
    ],
)
def test_session_class(command: str, state: str | None, trx: str | None, expected: tuple) -> None:
    assert session_class(command, state, trx) == expected


def test_the_classes_are_a_fixed_set() -> None:
    assert SESSION_CLASSES == ("lock", "commit", "io", "cpu", "net", "other", "idle")
    assert LOCK_KINDS == ("row", "metadata", "global", "table", "user")


# ----------------------------------------------------------------------------------- the parser


def test_sessions_by_class_from_the_sampler_lines() -> None:
    df = mysql_status.parse(BY_HAND)
    raw = [json.loads(x) for x in BY_HAND.read_text().splitlines()]
    assert len(df) == len(raw) == 7
    # sample 3 (10:03:54.468): 3 sessions "Waiting for table metadata lock" (the ALTER, the SELECT
    # behind it, the UPDATE behind LOCK TABLES), 2 "Updating" in an InnoDB LOCK WAIT, 2 "Writing to
    # net" (another helper's sysbench), 3 "User sleep" (the holders) and 2 Sleep
    row = df.iloc[2]
    assert raw[2]["processlist"]["by_state"][0] == ["Query", MDL_STATE, None, 3]
    assert ["Query", "Updating", "LOCK WAIT", 2] in raw[2]["processlist"]["by_state"]
    expected = {"lock": 5, "commit": 0, "io": 0, "cpu": 0, "net": 2, "other": 0, "idle": 5}
    assert {c: row[f"sessions_{c}"] for c in SESSION_CLASSES} == expected
    assert {k: row[f"sessions_lock_{k}"] for k in LOCK_KINDS} == {
        "row": 2,
        "metadata": 3,
        "global": 0,
        "table": 0,
        "user": 0,
    }
    # every sample: the classes count every session the sampler kept, the kinds add up to lock
    for i, o in enumerate(raw):
        r = df.iloc[i]
        assert sum(r[f"sessions_{c}"] for c in SESSION_CLASSES) == sum(
            x[3] for x in o["processlist"]["by_state"]
        )
        assert sum(r[f"sessions_lock_{k}"] for k in LOCK_KINDS) == r["sessions_lock"]
        # the classes the sampler wrote for a reader agree with the parser's
        assert {c: r[f"sessions_{c}"] for c in SESSION_CLASSES} == o["processlist"]["sessions"]
    # sample 6 had an "Opening tables" and 5 a "closing tables" (other helpers' load)
    assert df.iloc[5]["sessions_other"] == 1 and df.iloc[4]["sessions_io"] == 1


def test_older_captures_have_no_sessions() -> None:
    df = mysql_status.parse(FIX / "mysql_status" / "sysbench-rw-2-4-threads.txt")
    assert len(df) and all(df[f"sessions_{c}"].isna().all() for c in SESSION_CLASSES)


def test_a_malformed_by_state_row_is_left_out_and_a_huge_count_names_the_line(tmp_path: Path) -> None:
    raw = json.loads(BY_HAND.read_text().splitlines()[2])
    raw["processlist"]["by_state"] += [["Query", "Sending data"], "junk", ["Query", "Sending data", None, -1]]
    good = tmp_path / "a.jsonl"
    good.write_text(json.dumps(raw) + "\n")
    df = mysql_status.parse(good)
    assert df.iloc[0]["sessions_lock"] == 5 and df.iloc[0]["sessions_cpu"] == 0
    raw["processlist"]["by_state"].append(["Query", "Sending data", None, int("9" * 400)])
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps(raw) + "\n" + json.dumps(raw) + "\n")
    with pytest.raises(ParseError, match=r"b\.jsonl:1: a number too large for a float"):
        mysql_status.parse(bad)


# ------------------------------------------------------------------------ the rule, the report


def test_metadata_lock_waits_are_lock_contention_with_the_raw_figures() -> None:
    ds = dataset(MDL)
    (f,) = run(ds)
    ev = f.evidence
    hi, lo = raw_step(MDL, "t0008"), raw_step(MDL, "t0001")
    # t0008's window 10:05:59.682-06:03.798 holds the samples :00.145 .. :03.145: 9, 9, 0, 9 sessions
    # in "Waiting for table metadata lock" (8 UPDATEs and the pending ALTER; the third sample fell in
    # a free second): 6.75 on average; t0001: 2, 1, 0, 2
    assert [sum(r[3] for r in o["processlist"]["by_state"] if r[1] == MDL_STATE) for o in hi] == [9, 9, 0, 9]
    assert ev["sessions_waiting"] == pytest.approx(mean_in(hi, MDL_STATE), rel=1e-9) == 6.75
    assert ev["sessions_by_kind"]["metadata"] == 6.75 and ev["lock_kind"] == "metadata"
    assert ev["threads"] == 8 and ev["samples"] == 4 and ev["sessions_share"] == pytest.approx(6.75 / 8)
    assert ev["session_steps"][0][:4] == [1, pytest.approx(mean_in(lo, MDL_STATE)), 0.0, 1.25]
    assert f.severity == "critical"  # 6.75 of 8 threads: most of the offered concurrency waits
    assert f.summary.startswith("At 8 threads, 6.8 sessions waiting for a table metadata lock on average")
    assert (
        "a long transaction that touched the table" in f.summary and "1.25 waiting at 1 thread" in f.summary
    )
    assert f.title == "Sessions wait for a table metadata lock: 6.8 of 8 threads on average"
    # the status counters saw no row-lock contention: 10,000 rows, no row finding beside it
    assert all(x.rule == "db.lock-contention" and "lock_kind" in x.evidence for x in run(ds))


def test_the_control_without_the_side_sessions_is_silent() -> None:
    ds = dataset(CONTROL)
    assert run(ds) == []
    rows = db.session_profiles(ds, model(ds, TH)[0])
    assert [r.threads for r in rows] == [1, 8]
    for r in rows:
        assert r.classes["lock"] == 0 and all(v == 0 for v in r.locks.values())
    # the same load worked: every session not asleep is active (executing or committing)
    hi = raw_step(CONTROL, "t0008")
    active = sum(sum(r[3] for r in o["processlist"]["by_state"] if r[0] != "Sleep") for o in hi) / len(hi)
    assert rows[-1].active == pytest.approx(active, rel=1e-9) and active >= 4


def test_commits_behind_an_io_limit_wait_in_updating_status() -> None:
    """MariaDB 10.11 held at 40 write IOPS: its sessions wait for the redo log flush of their commit in
    State "Updating status" (InnoDB hands the flush over as the connection's pending operation and the
    server answers once it is done: parsers/mysql_status.py) and "Commit". Counted as executing before,
    the sessions table read 6 of 8 sessions "cpu" while the thread sampler had them on futexes."""
    ds = dataset(IOPS)
    [row] = [r for r in db.session_profiles(ds, model(ds, TH)[0]) if r.threads == 8]
    lines = raw_step(IOPS, "t0008")
    commit = mean_in(lines, "Updating status", "Commit")
    assert row.classes["commit"] == pytest.approx(commit, rel=1e-9)
    assert commit >= 0.75 * row.active and row.classes["cpu"] <= 0.25 * row.active


def test_in_the_whole_analysis_it_is_the_verdict() -> None:
    result = analyze(dataset(MDL), TH)
    assert not result.failed
    assert result.verdict is not None and result.verdict.rule == "db.lock-contention"
    assert result.verdict.evidence["lock_kind"] == "metadata"


def test_the_report_shows_sessions_beside_the_thread_states(tmp_path: Path) -> None:
    analysis = analyze(dataset(MDL), TH)
    write_reports(analysis, tmp_path)
    fj = json.loads((tmp_path / "findings.json").read_text())
    assert [w["step"] for w in fj["waits"]]  # the OS thread states are there
    sessions = fj["sessions"]
    assert [(s["step"], s["threads"], s["samples"]) for s in sessions] == [("t0001", 1, 4), ("t0008", 8, 4)]
    hi = raw_step(MDL, "t0008")
    assert sessions[1]["lock_kinds"]["metadata"] == pytest.approx(mean_in(hi, MDL_STATE), abs=1e-3)
    assert sessions[1]["classes"]["idle"] == pytest.approx(mean_in(hi, ""), abs=1e-3)  # Sleep's empty State
    assert sessions[1]["active"] == pytest.approx(
        sum(sessions[1]["classes"][c] for c in SESSION_CLASSES[:-1])
    )
    md = (tmp_path / "report.md").read_text()
    threads_at, sessions_at = md.index("## Where threads wait"), md.index("## Where sessions wait")
    assert threads_at < sessions_at and "| t0008 \\(8\\) | 127.0.0.1:60811 | 4 | 8.75 | 6.75 |" in md
    assert "metadata 6.75" in md
    html = (tmp_path / "report.html").read_text()
    assert html.index('id="waits"') < html.index('id="sessions"') and "metadata 6.75" in html


def test_captures_without_by_state_have_no_sessions_table(tmp_path: Path) -> None:
    analysis = analyze(dataset(HOT), TH)
    assert db.session_profiles(analysis.dataset, analysis.sweep) == []
    write_reports(analysis, tmp_path)
    assert json.loads((tmp_path / "findings.json").read_text())["sessions"] == []
    assert "Where sessions wait" not in (tmp_path / "report.md").read_text()


# ------------------------------------------------------------------------------------ lab tier


LAB_SOCKET = "/run/mysqld/mysqld.sock"


@pytest.mark.lab
def test_lab_sampler_sees_a_row_lock_wait_and_leaves_itself_out(lab_mariadb: Path) -> None:
    """On the lab MariaDB: root over its socket (PROCESS: every session and INNODB_TRX) sees an
    UPDATE queued on another transaction's row lock as `lock`/`row`; the lab's `perfkit` user,
    without PROCESS, gets its own sessions and the reason the transaction table is unreadable."""
    root = DbTarget(user="root", socket=LAB_SOCKET, db="sbtest")
    user = DbTarget(user="perfkit", password=lab_password(lab_mariadb))
    table = f"pk_sessions_{secrets.token_hex(4)}"
    admin, holder, conn, conn_user = root.connect(), root.connect(), root.connect(), user.connect()
    waiter = root.connect(read_timeout=60)
    errors: list[BaseException] = []

    def update() -> None:
        try:
            with waiter.cursor() as cur:
                cur.execute(f"UPDATE {table} SET v = v + 1 WHERE id = 1")
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    blocked = threading.Thread(target=update, daemon=True)
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
            cur.execute(f"INSERT INTO {table} VALUES (1, 0)")
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"UPDATE {table} SET v = v + 1 WHERE id = 1")
        blocked.start()
        own = _connection_id(conn)
        for _ in range(50):  # until the UPDATE is queued on the row
            s = sample(conn, own)
            if any(r[2] == "LOCK WAIT" for r in s["processlist"]["by_state"]):
                break
            time.sleep(0.1)
        plist = s["processlist"]
        assert plist["trx"] == "innodb_trx"
        assert ["Query", "Updating", "LOCK WAIT"] in [r[:3] for r in plist["by_state"]]
        assert plist["sessions"]["lock"] >= 1
        assert plist["by_state"][0][3] >= 1
        # the sampler's own SHOW PROCESSLIST is not among the sessions, every other one is
        assert own is not None and own == conn.thread_id()
        with conn.cursor() as cur:
            cur.execute("SHOW PROCESSLIST")
            ids = [r[0] for r in cur.fetchall()]
        assert own in ids and sum(r[3] for r in plist["by_state"]) == plist["total"]
        assert plist["total"] <= len(ids) - 1
        # without PROCESS: said, and the sample still taken
        mine = sample(conn_user, _connection_id(conn_user))["processlist"]
        assert mine["trx"].startswith("none readable (innodb_trx: Access denied")
        assert all(r[2] is None for r in mine["by_state"])
    finally:
        holder.rollback()
        if blocked.ident is not None:  # started: the rollback lets its UPDATE through
            blocked.join(30)
        with admin.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        for c in (admin, holder, waiter, conn, conn_user):
            c.close()
    assert errors == []


_RUNS: dict[str, dict] = {}


def scenario(name: str, tmp_factory: pytest.TempPathFactory, *more: str) -> dict:
    """Run a scenario once per test session (several tests read the same run)."""
    if name not in _RUNS:
        out = tmp_factory.mktemp(name) / "out"
        cmd = [
            sys.executable,
            "-m",
            "scripts.scenarios",
            "run",
            name,
            "--threads",
            "1,8",
            "--time",
            "5",
            *more,
        ]
        proc = subprocess.run([*cmd, "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        info = json.loads((out / "scenario.json").read_text())
        assert info["restore"] == []
        info["out"] = out
        info["findings.json"] = json.loads((out / "report" / "findings.json").read_text())
        _RUNS[name] = info
    return _RUNS[name]


def ours(fj: dict, info: dict) -> list[dict]:
    """This run's instance only (other helpers' scenarios may be sampled beside it)."""
    port = info["instance"]["port"]
    return [
        f
        for f in fj["findings"]
        if f["rule"] == "db.lock-contention" and f["evidence"]["host"].endswith(f":{port}")
    ]


@pytest.mark.lab
def test_lab_metadata_lock_is_lock_contention(tmp_path_factory: pytest.TempPathFactory) -> None:
    info = scenario("metadata-lock", tmp_path_factory)
    side = info["side"]
    assert side["kind"] == "metadata-lock" and side["errors"] == [] and side["cycles"] >= 4
    fj = info["findings.json"]
    (f,) = ours(fj, info)
    ev = f["evidence"]
    assert ev["lock_kind"] == "metadata" and ev["threads"] == 8
    # held 2 s of every 3: about two thirds of the 8 threads (and the ALTER) wait, with margin
    assert (
        8 * 0.3 <= ev["sessions_waiting"] <= 9.5
        and ev["sessions_by_kind"]["metadata"] == ev["sessions_waiting"]
    )
    assert "sessions waiting for a table metadata lock" in f["summary"]
    # the verdict, unless what ranks above it is about another helper's instance on this machine (a
    # throttled one of theirs) or is also true here: the 2 vCPUs, mariadbd's threads on futexes
    pid = str(info["instance"]["pid"])
    above = fj["findings"][: fj["findings"].index(f)]
    assert all(
        g["rule"] in ("cpu.saturated", "cpu.hot-thread")
        or (g["rule"] == "wait.profile" and g["evidence"].get("dominant") == "lock")
        or pid not in json.dumps(g["evidence"])
        for g in above
    ), [(g["rule"], g["summary"]) for g in fj["findings"]]
    # the evidence is the mean of the raw processlist counts over the step's window
    hi = raw_step(info["out"] / "archive", "t0008")
    assert ev["sessions_waiting"] == pytest.approx(mean_in(hi, MDL_STATE), abs=1e-5)  # JSON: 6 digits
    # the sessions series is in findings.json, one row per step
    rows = [s for s in fj["sessions"] if s["host"] == ev["host"]]
    assert [s["threads"] for s in rows] == [1, 8]
    assert rows[1]["lock_kinds"]["metadata"] == pytest.approx(ev["sessions_waiting"], abs=1e-3)


@pytest.mark.lab
def test_lab_control_is_not_lock_contention(tmp_path_factory: pytest.TempPathFactory) -> None:
    info = scenario("control", tmp_path_factory, "--workload", "oltp_update_non_index")
    fj = info["findings.json"]
    assert ours(fj, info) == []
    port = info["instance"]["port"]
    rows = [s for s in fj["sessions"] if s["host"].endswith(f":{port}")]
    assert [s["threads"] for s in rows] == [1, 8]
    assert all(s["classes"]["lock"] < 0.5 for s in rows) and rows[1]["active"] > 2
    assert not math.isnan(rows[1]["classes"]["cpu"])


@pytest.mark.lab
def test_lab_sampler_reads_the_counters_once_more_when_stopped(lab_mariadb: Path, tmp_path: Path) -> None:
    """A step that fails between two ticks (refused connects end sysbench in milliseconds) must still
    be counted: stopped, the sampler writes one closing line with the counters as the run ends."""
    out = tmp_path / "global_status.jsonl"
    sampler = StatusSampler(DbTarget(user="root", socket=LAB_SOCKET), out, interval=60, running_hz=0)
    sampler.start()
    for _ in range(100):  # until the first line is written
        if out.exists() and out.read_text().endswith("\n"):
            break
        time.sleep(0.05)
    conn = DbTarget(user="root", socket=LAB_SOCKET).connect()
    try:
        with conn.cursor() as cur:
            for _ in range(25):
                cur.execute("SELECT 1")
    finally:
        conn.close()
    sampler.stop()
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 2 and sampler.samples == 2 and "error" not in lines[-1]
    # 25 queries and a connect since the first line: the tick 60 s later would have been too late
    assert lines[1]["status"]["Questions"] - lines[0]["status"]["Questions"] >= 25
    assert lines[1]["status"]["Connections"] - lines[0]["status"]["Connections"] >= 1

"""pt-stalk's database files read and used: -processlist, -lock-waits, -transactions (MySQL's vertical
`\\G` output, parsers/_vertical.py) and -variables.

Fixtures: tests/fixtures/archives/ptstalk-mariadb (a light load, one lock wait caught) and
ptstalk-mariadb-hot-rows (8 sysbench writers on one row held by a `SELECT SLEEP(1)` transaction);
their README.md says how each was made. The values below were read off the raw files by eye and grep.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfkit.analyzers import db
from perfkit.analyzers._blockers import blockers
from perfkit.parsers import (
    _vertical,
    mysql_processlist,
    mysql_transactions,
    mysql_variables,
    ptstalk_lock_waits,
    sniff_kind,
)
from perfkit.parsers._common import Lines
from perfkit.pipeline import analyze_path

ARCHIVES = Path(__file__).parent / "fixtures" / "archives"
LIGHT = ARCHIVES / "ptstalk-mariadb"
HOT = ARCHIVES / "ptstalk-mariadb-hot-rows"
L0 = LIGHT / "2026_11_27_12_48_02"
H0 = HOT / "2026_11_27_15_43_44"


def test_vertical_rows_with_a_query_over_many_lines() -> None:
    # pt-stalk's own lock-wait query, seen in the hot-rows processlist: 10 lines in one Info value
    rows = [r for r in _vertical.read(Lines(Path(f"{H0}-processlist"), "x")) if isinstance(r, _vertical.Row)]
    (own,) = [r for r in rows if (r.fields["Info"] or "").startswith("SELECT SQL_NO_CACHE")]
    assert own.fields["Info"].count("\n") == 9 and own.fields["Info"].endswith("ORDER BY num_waiters DESC")
    assert own.fields["Progress"] == "0.000" and own.fields["State"] == "Sending data"
    assert own.fields["db"] is None  # NULL


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (f"{L0}-processlist", "mysql_processlist"),
        (f"{L0}-lock-waits", "ptstalk_lock_waits"),
        (f"{H0}-lock-waits", "ptstalk_lock_waits"),
        (f"{L0}-transactions", "mysql_transactions"),
        (f"{L0}-variables", "mysql_variables"),
    ],
)
def test_sniffed(path: str, kind: str) -> None:
    assert sniff_kind(Path(path).read_text()[:4096]) == kind


def test_processlist_samples_sessions_and_classes() -> None:
    f = mysql_processlist.parse(Path(f"{L0}-processlist"), host="vm")
    # 36 rows, `1. row` five times: 9, 7, 7, 6, 7 sessions
    assert f.groupby("sample").size().tolist() == [9, 7, 7, 6, 7]
    first = f.iloc[0]
    assert (first["id"], first["user"], first["client"], first["db"], first["command"]) == (
        224,
        "perfkit",
        "localhost:52588",
        "sbtest",
        "Sleep",
    )
    hot = mysql_processlist.parse(Path(f"{H0}-processlist"), host="vm")
    classes = mysql_processlist.by_class(hot)
    # per sample: 8 sysbench writers `Updating` (State alone: cpu), the holder in `User sleep` (idle);
    # pt-stalk's SHOW FULL PROCESSLIST and its SELECT SQL_NO_CACHE left out
    assert classes["sessions_cpu"].tolist() == [8.0] * 5
    assert classes["sessions_lock"].sum() == 0
    tx = mysql_transactions.parse(Path(f"{H0}-transactions"), host="vm")
    waiting = {
        k: set(g["thread_id"].astype(int)) for k, g in tx[tx["state"] == "LOCK WAIT"].groupby("snapshot")
    }
    joined = mysql_processlist.by_class(hot, waiting)
    # joined with INNODB_TRX's LOCK WAIT, as the DB sampler does: the 8 wait on a row lock
    assert joined["sessions_lock_row"].tolist() == [8.0] * 5 and joined["sessions_cpu"].sum() == 0


def test_lock_waits_in_the_mysql_lock_waits_schema() -> None:
    f = ptstalk_lock_waits.parse(Path(f"{L0}-lock-waits"), host="vm")
    (row,) = f.to_dict("records")
    assert row["waiting_trx_id"] == "3871033" and row["waiting_thread_id"] == 226
    assert row["waiting_query"] == "DELETE FROM sbtest2 WHERE id=?" and row["table"] == "`sbtest`.`sbtest2`"
    assert row["blocking_trx_id"] == "3871032" and row["blocking_thread_id"] == 224
    assert pd.isna(row["blocking_query"])  # NULL: the blocker between statements
    assert row["wait_age_s"] == 0.0 and row["source"] == ptstalk_lock_waits.SOURCE
    hot = ptstalk_lock_waits.parse(Path(f"{H0}-lock-waits"), host="vm")
    # 180 waits (grep -c waiting_trx_id) in 5 snapshots, each opened by its who_blocks summary rows
    assert len(hot) == 180 and hot["snapshot"].nunique() == 5
    assert (hot["blocking_query"] == "SELECT SLEEP(1)").sum() == 40
    assert set(hot["waiting_query"]) == {"UPDATE sbtest1 SET c=? WHERE id=?"}


def test_transactions_and_variables() -> None:
    tx = mysql_transactions.parse(Path(f"{L0}-transactions"), host="vm")
    assert tx.groupby("snapshot").size().tolist() == [3, 4, 2, 4, 5]
    third = tx.iloc[2]
    assert (third["trx_id"], third["thread_id"], third["rows_locked"], third["rows_modified"]) == (
        "3870992",
        225,
        3.0,
        4.0,
    )
    assert str(third["started"]) == "2026-11-27 12:48:04+00:00"
    v = mysql_variables.parse(Path(f"{L0}-variables"), host="vm")
    # lines 5-660: 656 variables; pt-stalk's three per-thread titles after them skipped, counted
    assert len(v) == 656 and v.attrs["skipped"].count == 3
    got = dict(zip(v["name"], v["number"], strict=True))
    assert got["max_connections"] == 512 and got["innodb_buffer_pool_size"] == 134217728


def test_analyze_names_blocker_waiter_and_sessions_of_the_window() -> None:
    a = analyze_path(HOT)
    (f,) = [f for f in a.findings if f.rule == "db.lock-contention"]
    top = f.evidence["blockers"][0]
    assert top["statement"] == "SELECT SLEEP(?)" and top["table"] == "`tpcc`.`sbtest1`"
    assert top["waiting_statement"] == "UPDATE sbtest1 SET c=? WHERE id=?"
    assert (top["waiting"], top["blocking"], top["snapshots"]) == (40, 5, 5)
    assert "SELECT SLEEP(?) on `tpcc`.`sbtest1` (40 waits on it); the waiters run UPDATE sbtest1" in f.summary
    (s,) = db.session_profiles(a.dataset, a.sweep)
    assert (s.step, s.threads, s.samples) == ("2026_11_27_15_43_44", None, 5)
    assert s.locks["row"] == 8.0 and s.classes["idle"] == pytest.approx(2.6)
    assert db.variables_for("vm", db.server_variables(a.dataset, ("max_connections",))) == {
        "max_connections": 512.0
    }
    # a window offers no thread count: its row names the window alone, never "(None)"
    from perfkit.reports import markdown

    md = markdown.render(a, [], sessions=[s])
    assert "| 2026\\_11\\_27\\_15\\_43\\_44 | vm | 5 |" in md and "(None)" not in md


def test_light_collection_lock_waits_stay_in_their_window() -> None:
    a = analyze_path(LIGHT)
    ds = a.dataset
    # one wait caught in the first collection, none in the second (no -lock-waits file there)
    w0, w1 = pd.Timestamp("2026-11-27T12:48:02Z"), pd.Timestamp("2026-11-27T12:48:10Z")
    first = blockers(ds, "vm", w0, w1, step="2026_11_27_12_48_02")
    assert [(b.statement, b.waiting, b.waiting_statement) for b in first] == [
        ("(no statement: idle in its transaction or committing)", 1, "DELETE FROM sbtest2 WHERE id=?")
    ]
    assert blockers(ds, "vm", w0, w1, step="2026_11_27_12_48_05") == []
    # sessions by state per window, no lock: the light load waits on nothing
    sessions = db.session_profiles(ds, a.sweep)
    assert [s.step for s in sessions] == ["2026_11_27_12_48_02", "2026_11_27_12_48_05"]
    assert all(s.classes["lock"] == 0 for s in sessions)
    assert not [f for f in a.findings if f.rule == "db.lock-contention"]

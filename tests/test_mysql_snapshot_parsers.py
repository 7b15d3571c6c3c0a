"""mysql_variables, mysql_waits, mysql_lock_waits: figures checked by hand against the raw fixtures; bad
values in these and pt-stalk's series refused with a ParseError."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import (
    diskstats,
    mysql_lock_waits,
    mysql_processlist,
    mysql_variables,
    mysql_waits,
    netstat_s,
)

from .conftest import FIXTURES


def test_variables_snapshot() -> None:
    path = FIXTURES / "mysql_variables" / "mariadb-10.11-snapshot.txt"
    raw = json.loads(path.read_text())
    df = mysql_variables.parse(path, host="db1")
    assert len(df) == len(raw["variables"]) and list(df["name"]) == list(raw["variables"])
    v = df.set_index("name")
    assert v.loc["max_connections", "value"] == raw["variables"]["max_connections"]
    assert v.loc["max_connections", "number"] == float(raw["variables"]["max_connections"])
    assert v.loc["analyze_sample_percentage", "number"] == 100.0  # "100.000000"
    assert math.isnan(v.loc["autocommit", "number"]) and v.loc["autocommit", "value"] == "ON"
    assert math.isnan(v.loc["aria_log_dir_path", "number"])  # a path
    assert (df["timestamp"] == pd.Timestamp(raw["t"], unit="s", tz="UTC").round("ms")).all()
    assert set(df["host"]) == {"db1"}


def test_variables_client_batch_form_has_no_time() -> None:
    df = mysql_variables.parse(FIXTURES / "mysql_variables" / "mariadb-10.11-client-batch-first-40.txt")
    assert len(df) == 40 and df["timestamp"].isna().all()
    assert df.set_index("name").loc["analyze_max_length", "number"] == 4294967295


@pytest.mark.parametrize("number", ["151", "-1", "0.5", "1e3", "100.000000"])
def test_numbers(number: str) -> None:
    assert mysql_variables.number(number) == float(number)


@pytest.mark.parametrize("text", ["ON", "OFF", "", "1,2", "inf", "nan", "0x10", "/tmp", None])
def test_not_numbers(text: str | None) -> None:
    assert math.isnan(mysql_variables.number(text))


def test_waits_two_snapshots_give_deltas() -> None:
    df = mysql_waits.parse(FIXTURES / "mysql_waits" / "mariadb-10.11-ps-on-sysbench.txt")
    start, end = (g.set_index("event_name") for _, g in df.groupby("timestamp"))
    handler = "wait/io/table/sql/handler"
    # the fixture's README: 1,000 waits before the load, 963,994 after
    assert (start.loc[handler, "count_star"], end.loc[handler, "count_star"]) == (1000, 963994)
    first = json.loads(
        (FIXTURES / "mysql_waits" / "mariadb-10.11-ps-on-sysbench.txt").read_text().splitlines()[1]
    )
    raw = {e["event_name"]: e for e in first["events"]}[handler]
    assert end.loc[handler, "sum_wait_s"] == raw["sum_timer_wait"] / 1e12  # picoseconds
    assert end.loc[handler, "max_wait_s"] == raw["max_timer_wait"] / 1e12


def test_lock_waits_who_blocks_whom() -> None:
    df = mysql_lock_waits.parse(FIXTURES / "mysql_lock_waits" / "mariadb-10.11-held-row-two-waiters.txt")
    assert len(df) == 3 and set(df["source"]) == {"information_schema.innodb_lock_waits"}
    holder = (set(df["blocking_thread_id"]) - set(df["waiting_thread_id"])).pop()
    assert df[df["blocking_thread_id"] == holder]["blocking_query"].isna().all()  # idle in its transaction
    assert set(df["table"]) == {"`tpcc`.`pk_lock_scratch`"} and set(df["index_name"]) == {"PRIMARY"}
    assert str(df["waiting_thread_id"].dtype) == "Int64"
    assert mysql_lock_waits.parse(FIXTURES / "mysql_lock_waits" / "mariadb-10.11-no-waits.txt").empty


@pytest.mark.parametrize("module", [mysql_variables, mysql_waits, mysql_lock_waits])
def test_another_kinds_snapshot_is_a_parse_error_naming_the_line(module) -> None:
    other = '{"snapshot":"mysql_other","ts":"","t":1,"variables":{},"events":[],"waits":[]}\n'
    with pytest.raises(ParseError) as info:
        module.parse("\n" + other)
    assert info.value.line_no == 2 and "snapshot line" in info.value.reason


def test_a_time_past_2261_is_refused() -> None:
    with pytest.raises(ParseError, match="1678-2261"):
        mysql_waits.parse('{"snapshot":"mysql_waits","t":1e10,"events":[]}\n')


@pytest.mark.parametrize(
    ("module", "field", "item"),
    [
        (mysql_waits, "events", '{"event_name":"a","count_star":N}'),
        (mysql_lock_waits, "waits", '{"wait_age_s":N}'),
    ],
)
def test_a_number_past_a_float_is_a_parse_error_not_a_crash(module, field: str, item: str) -> None:
    huge = "9" * 400  # float() raises OverflowError on it
    body = item.replace("N", huge)
    line = json.dumps({"snapshot": module.KIND, "t": 1700000000, field: []}).replace("[]", f"[{body}]") + "\n"
    with pytest.raises(ParseError, match="does not read") as info:
        module.parse(line)
    assert info.value.line_no == 1


_PROCESSLIST_ROW = (
    "*************************** 1. row ***************************\n"
    "     Id: {id}\n   User: u\n   Host: h\n     db: NULL\n"
    "Command: Query\n   Time: 1\n  State: x\n   Info: NULL\n"
)


@pytest.mark.parametrize("connection_id", ["NULL", "9" * 30, "-1", "\u0663"])
def test_processlist_id_that_is_no_connection_number_is_a_parse_error(connection_id: str) -> None:
    with pytest.raises(ParseError, match="no number"):
        mysql_processlist.parse(_PROCESSLIST_ROW.format(id=connection_id))


@pytest.mark.parametrize(
    ("module", "after"),
    [
        (mysql_processlist, _PROCESSLIST_ROW.format(id="7")),
        (netstat_s, "Tcp:\n    5 active connection openings\n"),
        (diskstats, "   8       0 sda 1 0 8 1 1 0 8 1 0 1 2 0 0 0 0\n"),
    ],
)
def test_a_ts_stamp_past_2261_is_a_parse_error(module, after: str) -> None:
    """datetime64[ns] ends in 2262: such a `TS` would wrap to a wrong time (or crash pandas)."""
    with pytest.raises(ParseError, match="past the year 2261") as info:
        module.parse("TS 1700000000.0 x\n" + after + "TS 9200000000.5 2261-07-14\n" + after)
    assert info.value.line_no == 2 + after.count("\n")
    dated = module.parse("TS 9199999998.5 x\n" + after + "TS 9199999999.5 2261-07-14\n" + after)
    assert dated["timestamp"].iloc[-1] == pd.Timestamp(9199999999.5, unit="s", tz="UTC")


def test_sniff_tells_the_kinds_apart() -> None:
    text = (FIXTURES / "mysql_lock_waits" / "mariadb-10.11-no-waits.txt").read_text()
    assert mysql_lock_waits.sniff(text) and not mysql_waits.sniff(text) and not mysql_variables.sniff(text)
    assert mysql_variables.sniff("Variable_name\tValue\nautocommit\tON\n")

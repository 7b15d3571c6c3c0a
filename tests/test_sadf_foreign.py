"""`sadf -d -- -A` and zones printed on sadf stamps (issue 17): the tables perfkit knows read, the rest
skipped as blocks (the interrupts table's per-CPU columns included); `UTC`/`GMT`/offsets exact, an
abbreviation read in the caller's `tz` when it is that zone's name, else a ParseError naming the line.

Expected values are read off the raw fixture lines (quoted in the comments), not off the parser.
"""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import sadf
from perfkit.parsers._common import skips_of

from .conftest import FIXTURES

D = FIXTURES / "sadf"
QUEUE_HEAD = "# hostname;interval;timestamp;runq-sz;plist-sz;ldavg-1;ldavg-5;ldavg-15;blocked\n"


def _row(df: pd.DataFrame, table: str, stamp: str, instance: str = "") -> pd.Series:
    hit = df[
        (df["table"] == table)
        & (df["timestamp"] == pd.Timestamp(stamp, tz="UTC"))
        & (df["instance"] == instance)
    ]
    assert len(hit) == 1
    return hit.iloc[0]


def test_sadf_A_reads_known_tables_and_skips_the_rest_as_blocks() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-A.txt")
    assert df["table"].value_counts().to_dict() == {
        "cpu": 9, "queue": 3, "memory": 3, "disk": 3, "net_dev": 12, "net_tcp": 3, "net_etcp": 3
    }  # fmt: skip
    skips = skips_of(df)
    # 29 unknown headers and their rows; `INTR;CPU*` rows carry one column per CPU (7 fields, 5 named)
    assert skips.count == 246
    assert [q.line_no for q in skips.quoted] == [11, 15, 124]
    assert skips.quoted[1].text == "# hostname;interval;timestamp;INTR;CPU*"
    # `vm;1;2026-11-27 12:45:14 UTC;vda;4565.00;18856.00;15492.00;44.00;7.53;0.52;0.11;41.20`
    d = _row(df, "disk", "2026-11-27 12:45:14", "vda")
    assert (d["tps"], d["rkb_s"], d["wkb_s"], d["areq_kb"], d["util_pct"]) == (
        4565.0, 18856.0, 15492.0, 7.53, 41.2
    )  # fmt: skip
    # `vm;1;2026-11-27 12:45:13 UTC;1;39.56;0.00;31.87;23.08;1.10;0.00;2.20;0.00;0.00;2.20`
    assert _row(df, "cpu", "2026-11-27 12:45:13", "1")["sys_pct"] == 31.87


def test_sysstat_own_sadf_d_A_expected_output() -> None:
    # sysstat's tests/expected.sadf-d (`sadf -d tests/data.tmp -C -- -A`, sysstat 12.7.x): restarts,
    # a comment, `INTR;CPU*` and `retrseg/s`
    df = sadf.parse(D / "sysstat-tests-expected.sadf-d.txt")
    assert df["table"].value_counts().to_dict() == {
        "disk": 84, "cpu": 47, "net_dev": 35, "queue": 5, "memory": 5, "net_tcp": 5, "net_etcp": 5
    }  # fmt: skip
    assert df.attrs["comments"] == ["Testing sysstat!"]
    assert [r["cpus"] for r in df.attrs["restarts"]] == [9, 10]
    assert df["retrans_s"].notna().sum() == 5 and skips_of(df).count == 588


def test_abbreviation_read_in_the_callers_zone() -> None:
    # sysstat 12.7.9's `TZ=Europe/Berlin sadf -d -T sa-A.bin -- -A`: `vm;1;2026-11-27 13:45:13 CET;-1;...`
    berlin = sadf.parse(D / "sysstat-12.7.9-d-T-A-Europe_Berlin.txt", tz="Europe/Berlin")
    utc = sadf.parse(D / "sysstat-12.6-d-A.txt")  # the same file exported in UTC (12:45:13 UTC)
    assert berlin["timestamp"].min() == pd.Timestamp("2026-11-27 12:45:13", tz="UTC")
    # equal frames but for memory: 12.7 counts kbmemused as free(1) does
    not_mem = ["kbmemused", "memused_pct"]
    pd.testing.assert_frame_equal(berlin.drop(columns=not_mem), utc.drop(columns=not_mem))
    # `vm;1;2026-11-27 07:45:14 EST;-1;20.42;0.00;23.04;12.04;0.52;43.98`
    ny = sadf.parse(D / "sysstat-12.7.9-d-T-u-P-ALL-q-America_New_York.txt", tz="America/New_York")
    assert _row(ny, "cpu", "2026-11-27 12:45:14", "all")["system_pct"] == 23.04


def test_standard_name_printed_in_summer_is_read_with_dst() -> None:
    # sysstat prints glibc's tzname[0] all year: its tests' `-T` under America/New_York prints
    # `2019-04-18 09:20:19 EST` for 13:20:19 UTC (EDT), `-t` of a file made in CET `15:20:19 CET` (CEST)
    ny = sadf.parse(D / "sysstat-tests-expected.sadf-d-T-tz.txt", tz="America/New_York")
    paris = sadf.parse(D / "sysstat-tests-expected.sadf-d-t-tz.txt", tz="Europe/Paris")
    first = pd.Timestamp("2019-04-18 13:20:19", tz="UTC")
    assert ny["timestamp"].iloc[0] == first == paris["timestamp"].iloc[0]
    assert ny["idle_pct"].tolist() == paris["idle_pct"].tolist() == [82.88, 95.31]


@pytest.mark.parametrize(
    "name,tz",
    [
        ("sysstat-12.7.9-d-T-A-Europe_Berlin.txt", "UTC"),  # the default: CET is no name of UTC
        ("sysstat-12.7.9-d-T-u-P-ALL-q-America_New_York.txt", "America/Chicago"),  # CST, not EST
        ("sysstat-tests-expected.sadf-d-t-tz.txt", "America/New_York"),
    ],
)
def test_abbreviation_of_another_zone_is_a_parse_error_naming_the_line(name: str, tz: str) -> None:
    with pytest.raises(ParseError, match=r":2: timestamp in '(CET|EST)', not in the time zone given") as err:
        sadf.parse(D / name, tz=tz)
    assert "--tz" in err.value.reason


@pytest.mark.parametrize(
    "stamp,utc",
    [
        ("2026-11-27 12:45:13 GMT", "2026-11-27 12:45:13"),
        ("2026-11-27 13:45:13 +0100", "2026-11-27 12:45:13"),
        ("2026-11-27 07:45:13 -05:00", "2026-11-27 12:45:13"),
        ("2026-11-27 18:15:13 +0530", "2026-11-27 12:45:13"),
        ("2026-11-27 14:45:13 +02", "2026-11-27 12:45:13"),
    ],
)
def test_gmt_and_numeric_offsets_are_exact_whatever_tz(stamp: str, utc: str) -> None:
    df = sadf.parse(QUEUE_HEAD + f"vm;1;{stamp};5;114;0.50;0.94;1.48;1\n", tz="America/New_York")
    assert df.loc[0, "timestamp"] == pd.Timestamp(utc, tz="UTC")


def test_unreadable_zone_names_the_line() -> None:
    with pytest.raises(ParseError, match=r":2: unreadable time zone 'UTC\+1'"):
        sadf.parse(QUEUE_HEAD + "vm;1;2026-11-27 13:45:13 UTC+1;5;114;0.50;0.94;1.48;1\n")

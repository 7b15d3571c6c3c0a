"""perf_stat parser: text, old, CSV, interval and per-CPU forms; locales; cut-off and bad lines.

Expected numbers are read off the raw fixture lines (quoted in the comments), not from the parser.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import perf_stat

from .conftest import FIXTURES

P = FIXTURES / "perf_stat"


def _row(df, event, **where):
    sel = df["event"] == event
    for col, val in where.items():
        sel &= df[col] == val
    rows = df[sel]
    assert len(rows) == 1, (event, where)
    return rows.iloc[0]


def test_default_text_form_and_footer() -> None:
    df = perf_stat.parse(P / "perf-6.1-default.txt", host="db1")
    assert len(df) == 8 and df["host"].eq("db1").all() and df["interval_s"].isna().all()
    # `0.80 msec task-clock  #  0.004 CPUs utilized`
    tc = _row(df, "task-clock")
    assert tc["value"] == 0.80 and tc["unit"] == "msec" and tc["status"] == "counted"
    assert tc["metric_value"] == 0.004 and tc["metric_unit"] == "CPUs utilized" and tc["running_pct"] == 100
    # `58  page-faults  #  72.911 K/sec`: a count has no unit
    pf = _row(df, "page-faults")
    assert pf["value"] == 58 and pd.isna(pf["unit"]) and pf["metric_unit"] == "K/sec"
    # `<not supported>  cycles`
    cy = _row(df, "cycles")
    assert math.isnan(cy["value"]) and cy["status"] == "not supported" and math.isnan(cy["running_pct"])
    # footer: `0.205556677 seconds time elapsed`, `0.001849000 seconds user`, `0.000000000 seconds sys`
    assert df.attrs["elapsed_s"] == 0.205556677 and df.attrs["user_s"] == 0.001849 and df.attrs["sys_s"] == 0
    assert df.attrs["target"] == "sleep 0.2" and df.attrs["header_generation"] == "text"


def test_csv_after_target_stderr() -> None:
    df = perf_stat.parse(P / "perf-6.1-x-csv-dd.txt")
    # dd's `records in`, `records out`, `bytes ... copied` lines come first
    assert df.attrs["preamble_lines"] == 3 and df.attrs["header_generation"] == "csv"
    # `50.10,msec,task-clock,50104895,100.00,0.870,CPUs utilized`
    tc = _row(df, "task-clock")
    assert tc["value"] == 50.10 and tc["unit"] == "msec" and tc["running_pct"] == 100.0
    assert tc["metric_value"] == 0.870 and tc["metric_unit"] == "CPUs utilized"
    # `56,,context-switches,50104895,100.00,1.118,K/sec`
    cs = _row(df, "context-switches")
    assert cs["value"] == 56 and cs["metric_value"] == 1.118 and cs["metric_unit"] == "K/sec"
    # `<not supported>,,instructions,0,100.00,,`
    assert _row(df, "instructions")["status"] == "not supported"


def test_interval_system_wide() -> None:
    df = perf_stat.parse(P / "perf-6.1-I200-a.txt")
    # 5 intervals x 8 events; first time column 0.200260702, last 1.001896313
    assert len(df) == 40 and df["interval_s"].nunique() == 5
    assert df["interval_s"].iloc[0] == 0.200260702 and df["interval_s"].iloc[-1] == 1.001896313
    # `0.400848031  401.23 msec cpu-clock  #  2.006 CPUs utilized`
    assert _row(df, "cpu-clock", interval_s=0.400848031)["value"] == 401.23
    assert "elapsed_s" not in df.attrs  # -I prints no footer


def test_per_cpu_text_and_csv() -> None:
    df = perf_stat.parse(P / "perf-6.1-a-A.txt")
    # `CPU1  12309  context-switches  #  40.756 K/sec`
    row = _row(df, "context-switches", cpu="CPU1")
    assert row["value"] == 12309 and row["metric_value"] == 40.756
    assert df.attrs["target"] == "system wide"
    csv = perf_stat.parse(P / "perf-6.1-x-I-a-A.txt")
    # 3 intervals x 2 CPUs x 3 events; `0.401334406,CPU1,6133,,context-switches,...,30.128,K/sec`
    assert len(csv) == 18
    assert _row(csv, "context-switches", cpu="CPU1", interval_s=0.401334406)["value"] == 6133


def test_old_msec_form_multiplexing_and_ipc() -> None:
    df = perf_stat.parse(P / "perf-4.x-msec-multiplexed.synthetic.txt")
    # `50537.486947  cpu-clock (msec)`
    cc = _row(df, "cpu-clock")
    assert cc["value"] == 50537.486947 and cc["unit"] == "msec"
    # `9,998,564,647  cache-references  #  197.845 M/sec  (83.34%)`
    cr = _row(df, "cache-references")
    assert cr["value"] == 9998564647 and cr["running_pct"] == 83.34
    # ipc = 61,199,665,090 / 98,709,137,242 on the instructions row only
    ins = _row(df, "instructions")
    assert ins["ipc"] == pytest.approx(61199665090 / 98709137242) and ins["metric_unit"] == "insn per cycle"
    assert df["ipc"].notna().sum() == 1


def test_perf3_brackets_and_continuation_line() -> None:
    df = perf_stat.parse(P / "perf-3.x-brackets.synthetic.txt")
    # 10 event lines minus none: 9 events + the `#  0.21 stalled cycles per insn` continuation (skipped)
    assert len(df) == 9
    tc = _row(df, "task-clock")  # `2.164836 task-clock`: perf 3.x clock events are msec
    assert tc["value"] == 2.164836 and tc["unit"] == "msec"
    assert _row(df, "cycles")["running_pct"] == 83.12  # `[83.12%]`
    assert _row(df, "stalled-cycles-backend")["status"] == "not supported"
    assert _row(df, "instructions")["ipc"] == pytest.approx(6100570 / 5506056)


def test_repeat_runs() -> None:
    df = perf_stat.parse(P / "perf-6.1-r3.txt")
    # `0.82 msec task-clock ... ( +-  1.34% )`; `0.0517047 +- 0.0000983 seconds time elapsed`
    assert _row(df, "task-clock")["value"] == 0.82 and df.attrs["runs"] == 3
    assert df.attrs["elapsed_s"] == 0.0517047


def test_en_us_grouping_is_read() -> None:
    df = perf_stat.parse(P / "locale-en_US-grouping.txt")
    # `4,010.58 msec task-clock`, `32,840 page-faults`
    assert _row(df, "task-clock")["value"] == 4010.58 and _row(df, "page-faults")["value"] == 32840


@pytest.mark.parametrize("name", ["locale-de_DE.txt", "locale-de_DE-x-csv.txt"])
def test_decimal_comma_is_refused(name: str) -> None:
    with pytest.raises(ParseError, match="LC_ALL=C"):
        perf_stat.parse(P / name)


def test_de_grouped_count_is_refused_not_read_as_fraction() -> None:
    text = "\n Performance counter stats for 'ls':\n\n     4.982      context-switches\n"
    with pytest.raises(ParseError, match="LC_ALL=C") as info:
        perf_stat.parse(text)
    assert info.value.line_no == 4


def test_cut_last_line_dropped_and_counted() -> None:
    df = perf_stat.parse(P / "truncated-last-line.txt")
    assert len(df) == 7 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    lines = (P / "perf-6.1-default.txt").read_text().splitlines()
    lines.insert(5, "   oops this is no counter line")
    with pytest.raises(ParseError) as info:
        perf_stat.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 6 and "oops" in info.value.line


def test_text_without_report_is_refused() -> None:
    with pytest.raises(ParseError) as info:
        perf_stat.parse("100000+0 records in\n100000+0 records out\n")
    assert info.value.line_no == 1


def test_empty() -> None:
    df = perf_stat.parse("")
    assert len(df) == 0 and list(df.columns) == list(perf_stat.SCHEMA)


def test_sniff() -> None:
    for path in P.glob("*.txt"):
        assert perf_stat.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "perf_stat":
            assert not perf_stat.sniff(path.read_text(errors="replace")), path


def test_rows_of_one_skeleton_keep_their_own_digits() -> None:
    """`perf stat -I 1000 -a -A` over 12 CPUs for 3 s, written here in perf 6.1's layout: CPU0..CPU9
    share a skeleton (digits made alike), as do CPU10/CPU11, many counts of one width, multiplexed
    and not. Every row's numbers and cpu are its own line's, read here with `str.split`."""
    lines = ["#           time CPU                    counts unit events"]
    for t in range(1, 4):
        for cpu in range(12):
            head, clock = f"{t + 0.000123456:16.9f} CPU{cpu:<4}", 1000 + 7 * t + cpu
            lines.append(f"{head} {clock:>14}.{cpu:02d} msec cpu-clock   #  1.{cpu:03d} CPUs utilized")
            lines.append(f"{head} {31 * t + cpu:>17}      cycles   #  {cpu}.5 GHz  ({50 + cpu}.25%)")
    df = perf_stat.parse("\n".join(lines) + "\n")
    assert len(df) == 72
    for (_, row), line in zip(df.iterrows(), lines[1:], strict=True):
        toks = line.split()
        assert (
            row["interval_s"] == float(toks[0]) and row["cpu"] == toks[1] and row["value"] == float(toks[2])
        )
        if row["event"] == "cycles":
            assert row["metric_value"] == float(toks[5]) and row["running_pct"] == float(toks[7][1:-2])
        else:
            assert (
                row["unit"] == "msec" and row["metric_value"] == float(toks[6]) and row["running_pct"] == 100
            )


def test_digits_other_than_ascii_are_refused_naming_the_line() -> None:
    """Python's float() reads `٣` as 3; perf prints ASCII digits only, so such a count is no number."""
    text = "\n Performance counter stats for 'ls':\n\n     ٣٣      context-switches\n"
    with pytest.raises(ParseError, match="not a perf stat event line") as info:
        perf_stat.parse(text)
    assert info.value.line_no == 4

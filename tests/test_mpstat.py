"""mpstat parser: values, locales, 12-hour clock, midnight, averages kept apart, cut-off and garbage.

Expected values are read off the raw fixture lines (quoted in the comments), not off the parser.
"""

from __future__ import annotations

import io
import subprocess

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import mpstat
from perfkit.parsers._common import skips_of

from .conftest import FIXTURES, need_tool, row_by_row

M = FIXTURES / "mpstat"


def _row(df: pd.DataFrame, stamp: str, cpu: str) -> pd.Series:
    hit = df[(df["timestamp"] == pd.Timestamp(stamp, tz="UTC")) & (df["cpu"] == cpu)]
    assert len(hit) == 1
    return hit.iloc[0]


def test_iso_capture_values() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-iso.txt")
    # 2 intervals x (all, 0, 1); the Average: table is not in the frame
    assert len(df) == 6 and df["host"].eq("vm").all()
    assert df["cpu"].tolist() == ["all", "0", "1"] * 2
    # `06:56:03       1   68.04    0.00    5.15    1.03    0.00 ... 0.00   25.77`, banner date 2026-11-23
    r = _row(df, "2026-11-23 06:56:03", "1")
    assert (r["usr_pct"], r["sys_pct"], r["iowait_pct"], r["idle_pct"]) == (68.04, 5.15, 1.03, 25.77)
    assert r["gnice_pct"] == 0.0


def test_averages_are_kept_apart() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-iso.txt")
    assert df["timestamp"].notna().all()
    avg = df.attrs["averages"]
    # `Average:     all   51.26    0.00    1.77    0.25 ... 46.72`
    assert [a["cpu"] for a in avg] == ["all", "0", "1"]
    assert avg[0]["usr_pct"] == 51.26 and avg[0]["idle_pct"] == 46.72 and avg[0]["host"] == "vm"
    assert "timestamp" not in avg[0]


def test_host_argument_wins_over_banner() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-iso.txt", host="db1")
    assert df["host"].eq("db1").all() and df.attrs["averages"][0]["host"] == "db1"


def test_c_date_with_two_digit_year() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-C.txt")
    # banner `11/23/26`, first rows `06:56:10`
    assert df.loc[0, "timestamp"] == pd.Timestamp("2026-11-23 06:56:10", tz="UTC")


def test_en_us_twelve_hour_clock() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-en_US-12h.txt")
    # `06:56:05 AM    1   98.00    0.00    1.00    0.00    0.00    1.00 ... 0.00`
    r = _row(df, "2026-11-23 06:56:05", "1")
    assert (r["usr_pct"], r["soft_pct"], r["idle_pct"]) == (98.0, 1.0, 0.0)


def test_midnight_rollover_with_twelve_hour_clock() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-en_US-midnight.txt")
    stamps = df["timestamp"].drop_duplicates().tolist()
    # `11:59:58 PM`, `11:59:59 PM`, then `12:00:00 AM` = 00:00 on the next day
    assert stamps == [
        pd.Timestamp("2026-11-23 23:59:58", tz="UTC"),
        pd.Timestamp("2026-11-23 23:59:59", tz="UTC"),
        pd.Timestamp("2026-11-24 00:00:00", tz="UTC"),
    ]
    # `12:00:00 AM  all   50.51 ... 49.49`
    assert _row(df, "2026-11-24 00:00:00", "all")["usr_pct"] == 50.51


def test_midnight_rollover_iso_and_zone() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-iso-midnight.txt", tz="Asia/Shanghai")
    assert df["timestamp"].is_monotonic_increasing
    # wall clock 23:59:59 on 2026-11-23 in UTC+8, then 00:00:00 and 00:00:01 on the 24th
    assert df["timestamp"].drop_duplicates().tolist() == [
        pd.Timestamp("2026-11-23 15:59:59", tz="UTC"),
        pd.Timestamp("2026-11-23 16:00:00", tz="UTC"),
        pd.Timestamp("2026-11-23 16:00:01", tz="UTC"),
    ]


def test_de_de_decimal_commas_read_explicitly() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-de_DE.txt")
    # banner `23.11.2026`; `06:56:06     all   50,75    0,00    2,01    0,50 ... 46,73`
    r = _row(df, "2026-11-23 06:56:06", "all")
    assert (r["usr_pct"], r["sys_pct"], r["iowait_pct"], r["idle_pct"]) == (50.75, 2.01, 0.5, 46.73)
    # `Durchschn.:    1  100,00 ...`
    assert df.attrs["averages"][2]["usr_pct"] == 100.0 and len(df) == 6


def test_zh_cn_clock_and_average_label() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-zh_CN.txt")
    # `06时56分09秒    0    0.00    0.00    1.00 ... 99.00`, banner `2026年11月23日`
    r = _row(df, "2026-11-23 06:56:09", "0")
    assert (r["sys_pct"], r["idle_pct"]) == (1.0, 99.0)
    assert [a["cpu"] for a in df.attrs["averages"]] == ["all", "0", "1"]


def test_decimal_comma_with_slash_date_is_refused() -> None:
    text = (M / "sysstat-12.6-P-ALL-de_DE.txt").read_text().replace("23.11.2026", "23/11/2026")
    with pytest.raises(ParseError, match="capture not taken under LC_ALL=C"):
        mpstat.parse(text)


def test_mixed_decimal_marks_are_refused() -> None:
    lines = (M / "sysstat-12.6-P-ALL-iso.txt").read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace("100.00", "100,00")  # line 5: `06:56:02       0  100.00 ...`
    with pytest.raises(ParseError, match="LC_ALL=C") as info:
        mpstat.parse("".join(lines))
    assert info.value.line_no == 5


def test_header_driven_and_unknown_column_listed() -> None:
    # columns reordered and one unknown: values follow their header names, never positions
    text = (
        "Linux 6.1.0 (db2) \t2026-11-22 \t_x86_64_\t(1 CPU)\n\n"
        "08:00:00     CPU   %idle    %usr  %intr/s    %sys\n"
        "08:00:01     all   90.00    7.00   123.00    3.00\n"
    )
    df = mpstat.parse(text)
    assert (df.loc[0, "idle_pct"], df.loc[0, "usr_pct"], df.loc[0, "sys_pct"]) == (90.0, 7.0, 3.0)
    assert df[["nice_pct", "steal_pct", "gnice_pct"]].isna().all().all()  # not printed: NaN, never 0
    assert df.attrs["unknown_columns"] == ["%intr/s"]


def test_cut_last_line_dropped_and_counted() -> None:
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-iso-truncated-last-line.txt")
    assert len(df) == 6 and df.attrs["dropped_lines"] == 1
    assert [a["cpu"] for a in df.attrs["averages"]] == ["all", "0"]  # the cut `Average: 1` row is gone


def test_garbage_mid_file_names_the_line() -> None:
    lines = (M / "sysstat-12.6-P-ALL-iso.txt").read_text().splitlines(keepends=True)
    lines.insert(4, "06:56:02       0  oops\n")
    with pytest.raises(ParseError) as info:
        mpstat.parse("".join(lines))
    assert info.value.line_no == 5 and "oops" in info.value.line


def test_cpu_listed_twice_in_one_interval_is_an_error() -> None:
    lines = (M / "sysstat-12.6-P-ALL-iso.txt").read_text().splitlines(keepends=True)
    lines.insert(5, lines[4])  # `06:56:02       0 ...` again as line 6
    with pytest.raises(ParseError, match="twice") as info:
        mpstat.parse("".join(lines))
    assert info.value.line_no == 6


def test_empty_frame() -> None:
    df = mpstat.parse("")
    assert list(df.columns) == list(mpstat.SCHEMA) and len(df) == 0
    assert df.attrs["averages"] == [] and df.attrs["dropped_lines"] == 0


def test_sniff() -> None:
    for path in sorted(M.glob("*.txt")):
        assert mpstat.sniff(path.read_text()), path.name
    for path in sorted(FIXTURES.glob("*/*.txt")):
        if path.parent.name != "mpstat":
            assert not mpstat.sniff(path.read_text(errors="replace")), path


@pytest.mark.lab
def test_real_mpstat_here() -> None:
    need_tool("mpstat")
    out = subprocess.run(
        ["mpstat", "-P", "ALL", "1", "2"],
        capture_output=True,
        text=True,
        timeout=15,
        env={"LC_ALL": "C", "S_TIME_FORMAT": "ISO", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    df = mpstat.parse(out)
    assert df["cpu"].eq("all").sum() == 2 and df["timestamp"].is_monotonic_increasing
    total = df[
        ["usr_pct", "nice_pct", "sys_pct", "iowait_pct", "irq_pct", "soft_pct", "steal_pct", "idle_pct"]
    ]
    assert total.sum(axis=1).between(99, 101).all()  # guest is inside usr; each share is rounded


def _long_capture() -> str:
    """Intervals of the real ISO fixture repeated across midnight, with what sends chunks line by
    line: a clock step back, a header without %gnice (an older sysstat), a CPU listed twice."""
    lines = (M / "sysstat-12.6-P-ALL-iso.txt").read_text().splitlines()
    banner, header, rows = lines[0], lines[2], lines[3:6]
    label = lambda s: f"{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"  # noqa: E731
    out = [banner.replace("2026-11-23", "2026-11-22"), ""]
    sod = 23 * 3600 + 50 * 60
    for k in range(1200):
        head = header.replace("  %gnice", "") if 500 <= k < 520 else header
        out.append(label(sod) + head[8:])
        sod += 1 if k != 700 else -5  # a clock step back: noted with its line number
        for row in rows:
            tokens = row.split()
            if 500 <= k < 520:
                del tokens[-2]  # %gnice
            out.append(label(sod) + row[8:] if not 500 <= k < 520 else "  ".join([label(sod), *tokens[1:]]))
        out.append("")
    return "\n".join(out) + "\n"


def test_bulk_path_reads_as_the_line_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.parsers import _chunks, _table

    text = _long_capture()
    expected = row_by_row(mpstat.parse, text, tz="Europe/Berlin")
    # small chunks: many cuts at headers, chunks of both plans, runs split across reads
    monkeypatch.setattr(_table, "CHUNK_ROWS", 97)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 4093)
    got = mpstat.parse(text, tz="Europe/Berlin")
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs == expected.attrs
    assert len(got) == 3600 and got["timestamp"].is_monotonic_increasing is False  # the step back
    assert any("clock went back 5 s" in note for note in got.attrs["notes"])
    assert got["gnice_pct"].isna().sum() == 60  # 20 intervals x 3 CPUs of the older header


def test_bulk_path_names_a_cpu_twice_as_the_line_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _long_capture().replace("\n23:55:01       0 ", "\n23:55:01       1 ", 1)
    from perfkit.parsers import _table

    with pytest.raises(ParseError) as want:
        row_by_row(mpstat.parse, text, tz="UTC")
    monkeypatch.setattr(_table, "CHUNK_ROWS", 97)
    with pytest.raises(ParseError) as got:
        mpstat.parse(text)
    assert str(got.value) == str(want.value) and "listed twice" in str(got.value)


@pytest.mark.parametrize("name", ["sysstat-12.6-A-iso.txt", "sysstat-12.6-A-C.txt", "jc-ubuntu-18.04-A.txt"])
def test_a_reads_the_cpu_table_and_skips_the_others(name: str) -> None:
    # `mpstat -A 1 2`: per interval the CPU table, then NODE, `intr/s`, per-IRQ and soft-IRQ tables
    for source in (M / name, io.StringIO((M / name).read_text())):
        df = mpstat.parse(source)
        skipped = skips_of(df)
        assert skipped.count > 0 and "NODE" in skipped.quoted[0].text
        if name == "sysstat-12.6-A-iso.txt":
            assert len(df) == 6 and skipped.count == 39 and len(df.attrs["averages"]) == 3
            r = _row(df, "2026-11-27 12:45:56", "1")  # `12:45:56       1   57.58 ... 28.28 ... 14.14`
            assert (r["usr_pct"], r["sys_pct"], r["idle_pct"]) == (57.58, 28.28, 14.14)
        elif name.startswith("jc"):  # `08:50:55 AM    0   26.15    8.92   32.36 ...   29.09`
            assert len(df) == 2 and df["usr_pct"].eq(26.15).all() and df["idle_pct"].eq(29.09).all()


def test_t_topology_columns_and_blank_all_row() -> None:
    # `mpstat -P ALL -T 1 2`: `CPU CORE SOCK NODE %usr ...`, the `all` row without core/socket/node
    df = mpstat.parse(M / "sysstat-12.6-P-ALL-T-C.txt")
    assert len(df) == 6 and df.attrs["unknown_columns"] == ["CORE", "SOCK", "NODE"]
    r = _row(df, "2026-11-27 12:45:59", "all")  # `12:45:59     all                  15.66 ... 68.18`
    assert (r["usr_pct"], r["sys_pct"], r["idle_pct"]) == (15.66, 16.16, 68.18)
    assert (
        mpstat.sniff((M / "sysstat-12.6-T-iso.txt").read_text())
        and len(mpstat.parse(M / "sysstat-12.6-T-iso.txt")) == 2
    )


def test_u_epoch_labels_read_as_utc() -> None:
    # sysstat's own tests/expected.mpstat-U (corpus, ORIGINS.md): `1591016001   all    2.15   12.50 ...`
    path = FIXTURES / "corpus" / "mpstat" / "sysstat-mpstat-U"
    for tz in ("UTC", "Asia/Shanghai"):  # seconds since the epoch are UTC whatever the zone given
        for source in (path, io.StringIO(path.read_text())):  # bulk path and line walk
            df = mpstat.parse(source, tz=tz)
            assert df["timestamp"].tolist() == [
                pd.Timestamp("2020-06-01 12:53:21", tz="UTC"),
                pd.Timestamp("2020-06-01 12:53:22", tz="UTC"),
            ]
            assert df["nice_pct"].tolist() == [12.5, 0.0] and df["idle_pct"].tolist() == [82.88, 95.31]


def test_cjk_clocks_are_one_grammar_for_every_sysstat_tool() -> None:
    # zh_CN prints 时, ja_JP 時 (iostat's real ja_JP capture, tests/fixtures/iostat/README.md); the
    # sysstat tools' time labels read them through the same parse_clock
    from perfkit.parsers._common import parse_clock

    assert parse_clock("06时56分07秒") == parse_clock("06時56分07秒") == parse_clock("06:56:07") == (6, 56, 7)
    assert parse_clock("24时00分00秒") is None and parse_clock("06時56分07") is None

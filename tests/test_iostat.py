"""iostat -x parser: values, units and clocks across sysstat generations, robustness, the lab capture.

Fixture files (tests/fixtures/iostat/, README.md there) are compared record by record in
tests/test_fixtures.py; here we check the physics and the edge cases by value.
"""

from __future__ import annotations

import io
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfkit.errors import ParseError
from perfkit.parsers import iostat

from .conftest import FIXTURES, need_tool, row_by_row

FIX = FIXTURES / "iostat"
SEED = FIX / "seed000-sysstat-11.x-fragments.txt"

# The extended headers as formats.md documents them, one per sysstat generation.
H_114 = (
    "Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await"
    " r_await w_await  svctm  %util"
)
H_115 = (
    "Device            r/s     w/s     rkB/s     wkB/s   rrqm/s   wrqm/s  %rrqm  %wrqm r_await w_await"
    " aqu-sz rareq-sz wareq-sz  svctm  %util"
)
H_121 = (
    "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm"
    " w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz  aqu-sz  %util"
)
H_123 = (
    "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm"
    " w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util"
)
WRITE_4K = {"w/s": 250, "wkB/s": 1000, "wareq-sz": 4.0, "aqu-sz": 0.99, "w_await": 3.96}
WRITE_4K_OLD = {"w/s": 250, "wkB/s": 1000, "avgrq-sz": 8.0, "avgqu-sz": 0.99, "await": 3.96, "w_await": 3.96}


def row(header: str, device: str, **values: float) -> str:
    """A device row for `header`: named values where given, 0.00 elsewhere (as iostat prints idle)."""
    names = header.split()[1:]
    return " ".join([f"{device:<13}", *(f"{values.get(n, 0.0):8.2f}" for n in names)])


def capture(*parts: str, end: str = "\n") -> str:
    return "\n".join(parts) + end


def first(df: pd.DataFrame, device: str) -> pd.Series:
    return df[df["device"] == device].iloc[0]


def raw_rows(path: Path) -> list[dict[str, str]]:
    """The fixture's device rows as {header name: printed token}, by the header above each row."""
    out, names = [], None
    for line in path.read_text().splitlines():
        tokens = line.split()
        if tokens and tokens[0].startswith("Device"):
            names = tokens
        elif names and len(tokens) == len(names) and not line[0].isspace():
            out.append(dict(zip(names, tokens, strict=True)))
    return out


# ---------------------------------------------------------------- seed 000 (sysstat <= 11.4)


def test_seed_fragment_first_row_values() -> None:
    df = iostat.parse(SEED)
    sda = df.iloc[0]
    assert sda["device"] == "sda"
    assert sda["w_s"] == 255.0 and sda["wkb_s"] == 2312.0 and sda["r_s"] == 0.0
    assert sda["aqu_sz"] == 1.01 and sda["w_await_ms"] == 3.96 and sda["await_ms"] == 3.96
    assert sda["util_pct"] == 91.3 and sda["svctm_ms"] == 3.58 and sda["wrqm_s"] == 147.0
    assert sda["areq_kb"] == 18.13 / 2  # avgrq-sz as printed (512-byte sectors), not 2312 kB / 255
    # sysstat <= 11.4 prints neither per-direction request sizes nor discards/flushes: NaN, not 0
    for col in ("rareq_kb", "wareq_kb", "d_s", "dkb_s", "d_await_ms", "f_s", "f_await_ms"):
        assert math.isnan(sda[col]), col
    assert df.attrs["header_generation"] == "sysstat<=11.4"


def test_seed_fragment_groups_are_reports() -> None:
    df = iostat.parse(SEED)
    # first block: its own header + 3 rows; then one header and 7 blank-separated groups of 3
    assert df.groupby("sample").size().tolist() == [3] * 8
    assert not df["since_boot"].any()  # no Linux banner: nothing is known to be since boot
    assert df["timestamp"].isna().all()
    assert df["host"].isna().all()
    assert df.loc[df["sample"] == 7, "wkb_s"].tolist() == [5884.0, 6588.0, 6368.0]
    assert df.attrs["notes"] == [] and df.attrs["unknown_columns"] == []


def test_headerless_fragment_falls_back_to_value_count_and_says_so() -> None:
    df = iostat.parse(FIX / "seed000-sysstat-11.x-headerless.txt")
    with_header = iostat.parse(SEED)
    assert len(df) == 21
    assert df.attrs["notes"] and "13 values" in df.attrs["notes"][0]
    pd.testing.assert_frame_equal(
        df.drop(columns="sample").reset_index(drop=True),
        with_header[with_header["sample"] > 0].drop(columns="sample").reset_index(drop=True),
    )


def test_headerless_rows_of_sysstat_12_6_use_the_22_column_order() -> None:
    path = FIX / "sysstat-12.6-x-d-t-C.txt"
    rows = [line for line in path.read_text().splitlines() if line.startswith("vda")]
    df = iostat.parse("\n".join(rows) + "\n")
    full = iostat.parse(path)
    assert "22 values" in df.attrs["notes"][0] and df.attrs["header_generation"] == "sysstat>=12.3"
    numeric = [c for c, t in iostat.SCHEMA.items() if t == "float64"]
    np.testing.assert_array_equal(df[numeric].to_numpy(), full[numeric].to_numpy())


def test_headerless_rows_with_another_count_are_an_error() -> None:
    with pytest.raises(ParseError) as info:
        iostat.parse("sda 1.00 2.00 3.00\n")
    assert info.value.line_no == 1 and "3 values" in info.value.reason


# ---------------------------------------------------------------- header generations and units


@pytest.mark.parametrize(
    ("header", "write", "generation"),
    [
        (H_114, WRITE_4K_OLD, "sysstat<=11.4"),
        (H_115, WRITE_4K, "sysstat-11.5-12.0"),
        (H_121, WRITE_4K, "sysstat-12.1-12.2"),
        (H_123, WRITE_4K, "sysstat>=12.3"),
    ],
)
def test_every_generation_maps_a_4k_write_to_the_same_columns(header, write, generation) -> None:
    """250 writes/s of 4 KiB: avgrq-sz 8 (sectors) in <= 11.4, wareq-sz 4 (kB) later -> areq_kb 4.0."""
    df = iostat.parse(capture(header, row(header, "sda", **write), row(header, "sdb")))
    sda, sdb = first(df, "sda"), first(df, "sdb")
    assert df.attrs["header_generation"] == generation
    assert (sda["w_s"], sda["wkb_s"], sda["aqu_sz"], sda["w_await_ms"]) == (250.0, 1000.0, 0.99, 3.96)
    assert sda["areq_kb"] == 4.0
    assert sda["await_ms"] == pytest.approx(3.96)  # printed by <= 11.4, IO-weighted mean otherwise
    if header == H_114:
        assert math.isnan(sda["wareq_kb"])
    else:
        assert sda["wareq_kb"] == 4.0
    assert math.isnan(sdb["areq_kb"])  # no IO: no request size
    assert math.isnan(sda["svctm_ms"]) == (header in (H_121, H_123))  # svctm left in 12.1
    assert math.isnan(sda["f_s"]) == (header != H_123)
    assert math.isnan(sda["d_s"]) == (header in (H_114, H_115))


def test_synthetic_fixtures_of_three_generations_agree_on_the_same_device_activity() -> None:
    """Each synthetic capture has one report of 250 w/s x 4 KiB at 3.96 ms, queue 0.99, 97.5 %util."""
    found = []
    for name, device in (
        ("sysstat-10.1-x-d-t-en_US-12h.synthetic.txt", "sda"),
        ("sysstat-11.6-x-t.synthetic.txt", "sda"),
        ("sysstat-12.2-x-d-t-iso.synthetic.txt", "nvme0n1"),
    ):
        df = iostat.parse(FIX / name)
        hit = df[(df["device"] == device) & (df["w_s"] == 250.0)].iloc[0]
        cols = ["w_s", "wkb_s", "areq_kb", "await_ms", "w_await_ms", "aqu_sz", "util_pct"]
        found.append(hit[cols].tolist())
    assert found[0] == found[1] == found[2] == [250.0, 1000.0, 4.0, 3.96, 3.96, 0.99, 97.5]


def test_mixed_reads_and_writes_await_is_io_weighted() -> None:
    mixed = {"r/s": 100, "rkB/s": 1600, "r_await": 2.1, "rareq-sz": 16, "w/s": 250, "wkB/s": 1000}
    mixed |= {"w_await": 3.96, "wareq-sz": 4}
    df = iostat.parse(capture(H_123, row(H_123, "sda", **mixed)))
    sda = df.iloc[0]
    assert sda["await_ms"] == pytest.approx((100 * 2.1 + 250 * 3.96) / 350)
    assert sda["areq_kb"] == pytest.approx(2600 / 350)


def test_megabytes_are_converted_to_kilobytes() -> None:
    path = FIX / "sysstat-12.6-x-d-m-t-iso.txt"
    df = iostat.parse(path)
    raw = raw_rows(path)
    assert "rMB/s" in raw[0] and len(raw) == len(df)
    for printed, parsed in zip(raw, df.itertuples(), strict=True):
        assert parsed.rkb_s == pytest.approx(float(printed["rMB/s"]) * 1024)
        assert parsed.wkb_s == pytest.approx(float(printed["wMB/s"]) * 1024)
        assert parsed.dkb_s == pytest.approx(float(printed["dMB/s"]) * 1024)
        assert parsed.rareq_kb == float(printed["rareq-sz"])  # request sizes stay in kB under -m


def test_sectors_per_second_are_converted_to_kilobytes() -> None:
    header = H_123.replace("rkB/s", "rsec/s").replace("wkB/s", "wsec/s").replace("dkB/s", "dsec/s")
    sectors = {"w/s": 10, "wsec/s": 80, "wareq-sz": 4, "d/s": 1, "dsec/s": 16}
    df = iostat.parse(capture(header, row(header, "vda", **sectors)))
    assert (df.iloc[0]["wkb_s"], df.iloc[0]["dkb_s"], df.iloc[0]["areq_kb"]) == (40.0, 8.0, 4.0)


def test_unknown_columns_are_listed_and_known_unused_ones_ignored() -> None:
    header = H_123.replace(" aqu-sz", " qdepth/s  aqu-sz")
    df = iostat.parse(capture(header, row(header, "vda", **{"qdepth/s": 7, "aqu-sz": 0.5, "%rrqm": 12})))
    assert df.attrs["unknown_columns"] == ["qdepth/s"]
    assert df.iloc[0]["aqu_sz"] == 0.5 and 7.0 not in df.iloc[0][5:].tolist()


def test_decimal_comma_is_read_as_a_decimal_comma() -> None:
    path = FIX / "sysstat-12.6-x-d-t-de_DE.txt"
    df = iostat.parse(path)
    raw = raw_rows(path)
    assert "," in raw[0]["r/s"]
    assert df["r_s"].tolist() == [float(r["r/s"].replace(",", ".")) for r in raw]
    assert df["util_pct"].tolist() == [float(r["%util"].replace(",", ".")) for r in raw]
    assert df["timestamp"].iloc[0] == pd.Timestamp("2026-11-22 13:50:51", tz="UTC")  # 22.11.2026


def test_mixed_decimal_comma_and_point_is_an_error_not_a_number() -> None:
    de_row = row(H_123, "vda", **{"r/s": 1.5}).replace(".", ",")  # 1,50 0,00 ...
    text = capture(H_123, de_row, row(H_123, "vdb", **{"r/s": 2.5}))
    with pytest.raises(ParseError) as info:
        iostat.parse(text)
    assert info.value.line_no == 3 and "LC_ALL=C" in info.value.reason


# ---------------------------------------------------------------- clocks


@pytest.mark.parametrize(
    ("stamp", "tz", "utc"),
    [
        ("11/22/2026 12:05:09 AM", "UTC", "2026-11-22 00:05:09"),
        ("11/22/2026 12:05:09 PM", "UTC", "2026-11-22 12:05:09"),
        ("11/22/2026 01:05:09 PM", "UTC", "2026-11-22 13:05:09"),
        ("11/22/2026 12:05:09 AM", "Asia/Shanghai", "2026-11-21 16:05:09"),
        ("11/22/26 08:09:54", "UTC", "2026-11-22 08:09:54"),
        ("11/22/26 08:09:54", "America/New_York", "2026-11-22 13:09:54"),
        ("2026-11-22T08:09:55+0000", "Asia/Shanghai", "2026-11-22 08:09:55"),  # carries its zone
        ("2026-11-22T08:09:55+0530", "UTC", "2026-11-22 02:39:55"),
        ("22.11.2026 08:09:59", "UTC", "2026-11-22 08:09:59"),
    ],
)
def test_timestamp_forms(stamp: str, tz: str, utc: str) -> None:
    df = iostat.parse(capture(stamp, H_123, row(H_123, "vda")), tz=tz)
    assert df["timestamp"].iloc[0] == pd.Timestamp(utc, tz="UTC")


def test_twelve_hour_capture_crossing_midnight_rolls_the_date() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-d-t-en_US-midnight.txt")
    stamps = df["timestamp"]
    assert stamps.is_monotonic_increasing and stamps.diff().dropna().eq(pd.Timedelta(seconds=1)).all()
    assert stamps.iloc[-2] == pd.Timestamp("2026-11-22 23:59:59", tz="UTC")  # 11:59:59 PM
    assert stamps.iloc[-1] == pd.Timestamp("2026-11-23 00:00:00", tz="UTC")  # 11/23 12:00:00 AM


def test_twelve_hour_fixture_of_old_sysstat_reads_noon() -> None:
    df = iostat.parse(FIX / "sysstat-10.1-x-d-t-en_US-12h.synthetic.txt")
    assert sorted(df["timestamp"].unique()) == [
        pd.Timestamp("2020-08-25 11:59:58", tz="UTC"),
        pd.Timestamp("2020-08-25 11:59:59", tz="UTC"),
        pd.Timestamp("2020-08-25 12:00:00", tz="UTC"),  # 12:00:00 PM is noon
    ]


def test_no_t_option_gives_nat_even_with_a_dated_banner() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-avg-cpu.txt")
    assert df["timestamp"].isna().all() and str(df["timestamp"].dtype) == "datetime64[ns, UTC]"


def test_unknown_timestamp_form_is_an_error_naming_the_locale() -> None:
    text = capture("2026. 11. 22. 13:46:45", H_123, row(H_123, "vda"))
    with pytest.raises(ParseError) as info:
        iostat.parse(text)
    assert info.value.line_no == 1 and "LC_ALL=C" in info.value.reason


def test_unknown_time_zone_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="time zone"):
        iostat.parse(capture(H_123, row(H_123, "vda")), tz="Mars/Olympus")


# ---------------------------------------------------------------- reports, since boot, avg-cpu


def test_since_boot_marks_only_the_first_report_of_a_whole_capture() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-d-t-iso.txt")
    assert df["sample"].tolist() == [0, 1, 2]
    assert df["since_boot"].tolist() == [True, False, False]
    assert df["host"].unique().tolist() == ["vm"]


def test_y_option_has_no_since_boot_report() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-d-y-t-C.txt")
    assert len(df) == 2 and not df["since_boot"].any()


@pytest.mark.parametrize(("blanks", "since_boot"), [(1, True), (2, False)])
def test_y_option_without_d_is_told_by_the_blank_lines_before_avg_cpu(blanks: int, since_boot: bool) -> None:
    text = (FIX / "sysstat-12.6-x-avg-cpu.txt").read_text()
    banner, rest = text.split("\n", 1)
    df = iostat.parse(banner + "\n" + "\n" * (blanks - 1) + rest)
    assert df["since_boot"].tolist() == [since_boot, False]


def test_stamps_and_avg_cpu_blocks_stay_among_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """They come every report: taken out of the runs of rows in bulk (the engine's aside lines), not
    read as structure lines, each of which would end a bulk read (a pandas call per report)."""
    cpu = "avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n          12.96    0.00    9.30\n"
    reports = [
        capture(f"11/22/26 08:{s // 60:02d}:{s % 60:02d}", cpu, H_123, row(H_123, "sda", **{"w/s": s}))
        for s in range(600)
    ]
    text = "Linux 6.1.0 (vm) \t11/22/26 \t_x86_64_\t(2 CPU)\n\n" + "\n".join(reports)
    structure = iostat._Iostat.structure
    seen: list[int] = []
    monkeypatch.setattr(
        iostat._Iostat, "structure", lambda self, n, t: (seen.append(n), structure(self, n, t))
    )
    df = iostat.parse(text)
    assert seen == [1]  # the banner alone
    assert df["w_s"].tolist() == list(range(600)) and df["sample"].tolist() == list(range(600))
    assert df["timestamp"].iloc[-1] == pd.Timestamp("2026-11-22 08:09:59", tz="UTC")
    assert df["since_boot"].tolist() == [True] + [False] * 599


def test_avg_cpu_blocks_are_skipped() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-avg-cpu.txt")
    assert df["device"].tolist() == ["vda", "vda"]
    assert df["since_boot"].tolist() == [True, False]


def test_host_argument_wins_over_the_banner() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-d-t-C.txt", host="db1")
    assert df["host"].unique().tolist() == ["db1"]


def test_streams_and_strings_parse_like_paths() -> None:
    path = FIX / "sysstat-12.6-x-d-t-en_US-12h.txt"
    by_path = iostat.parse(path)
    pd.testing.assert_frame_equal(iostat.parse(path.read_text()), by_path)
    pd.testing.assert_frame_equal(iostat.parse(io.StringIO(path.read_text())), by_path)
    pd.testing.assert_frame_equal(iostat.parse(io.BytesIO(path.read_bytes())), by_path)


def test_chunks_give_the_same_frame_and_the_right_line_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.parsers import _chunks, _table

    reports = [
        capture(
            f"11/22/26 08:10:{s:02d}",
            H_123,
            *(row(H_123, f"sd{d}", **{"w/s": s + k}) for k, d in enumerate("abc")),
        )
        for s in range(9)
    ]
    text = "\n".join(reports)
    whole = iostat.parse(text)
    monkeypatch.setattr(_table, "CHUNK_ROWS", 4)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 333)  # reads that cut reports, stamps and rows
    pd.testing.assert_frame_equal(iostat.parse(text), whole)
    assert whole["sample"].tolist() == [s for s in range(9) for _ in "abc"]
    lines = text.splitlines()
    lines[33] = lines[33].replace("0.00", "x.yz", 1)  # sdb of the 6th report, in the 3rd chunk
    with pytest.raises(ParseError) as info:
        iostat.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 34 and "'x.yz'" in info.value.reason


LONG = [
    "sysstat-12.6-x-d-t-iso.txt",
    "sysstat-12.6-x-avg-cpu.txt",
    "sysstat-12.6-x-d-y-t-C.txt",
    "jc-centos-7.7-mx.txt",
    "sysstat-12.6-x-d-t-en_US-midnight.txt",
    "sysstat-12.6-x-d-t-zh_CN.txt",
    "sysstat-12.6-x-d-m-t-iso.txt",
    "jc-ubuntu-18.04-mx.txt",
]


def _long_capture() -> str:
    """Real captures one after another (banners, since-boot reports, -y, avg-cpu blocks, three header
    generations, 12-hour and zh_CN stamps, megabytes), with stray rows the engine reads apart: an
    indented row, a device named like structure (`avg0`, `LVM`) or with a leading digit (`8:0`)."""
    text = "".join((FIX / name).read_text() for name in LONG) * 5
    vda = next(line for line in text.splitlines() if line.startswith("vda "))
    odd = ["  " + vda, vda.replace("vda ", "avg0"), vda.replace("vda ", "LVM "), vda.replace("vda ", "8:0 ")]
    return text.replace(vda + "\n", vda + "\n" + "\n".join(odd) + "\n", 3)


def test_bulk_reads_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.parsers import _chunks, _table

    text = _long_capture()
    expected = row_by_row(iostat.parse, text, tz="Asia/Shanghai")
    # small chunks: cuts inside reports, between a stamp and its rows, chunks holding several headers
    monkeypatch.setattr(_table, "CHUNK_ROWS", 7)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 1021)
    got = iostat.parse(text, tz="Asia/Shanghai")
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs == expected.attrs
    alone = [iostat.parse(FIX / name) for name in LONG]  # the stray rows join reports: no new ones
    assert got["sample"].is_monotonic_increasing
    assert got["sample"].nunique() == 5 * sum(df["sample"].nunique() for df in alone)
    assert got.loc[got["since_boot"], "sample"].nunique() == 5 * sum(
        df.loc[df["since_boot"], "sample"].nunique() for df in alone
    )
    assert got.groupby("sample")["since_boot"].nunique().eq(1).all()
    assert {"avg0", "LVM", "8:0"} <= set(got["device"])


def test_bulk_names_a_bad_row_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.parsers import _table

    lines = _long_capture().splitlines()
    bad = [i for i, line in enumerate(lines) if line.startswith("vda ")][40]
    lines[bad] = lines[bad].replace("0.00", "0.0.0", 1)
    text = "\n".join(lines) + "\n"
    with pytest.raises(ParseError) as want:
        row_by_row(iostat.parse, text)
    monkeypatch.setattr(_table, "CHUNK_ROWS", 7)
    with pytest.raises(ParseError) as got:
        iostat.parse(text)
    assert str(got.value) == str(want.value) and got.value.line_no == bad + 1


# ---------------------------------------------------------------- robustness


def test_truncated_last_line_is_dropped_and_counted() -> None:
    df = iostat.parse(FIX / "sysstat-12.6-x-d-t-iso-truncated-last-line.txt")
    assert len(df) == 2 and df.attrs["dropped_lines"] == 1
    assert df["sample"].tolist() == [0, 1]


def test_last_row_with_too_few_values_is_dropped_even_with_a_newline() -> None:
    good = row(H_123, "vda", **{"w/s": 3})
    df = iostat.parse(capture(H_123, good, good[:40], end="\n\n"))
    assert len(df) == 1 and df.attrs["dropped_lines"] == 1


def test_cut_off_timestamp_on_the_last_line_is_dropped() -> None:
    df = iostat.parse(capture("11/22/26 08:09:54", H_123, row(H_123, "vda"), "", "11/22/26 08:0", end=""))
    assert len(df) == 1 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    with pytest.raises(ParseError) as info:
        iostat.parse(FIX / "garbage-mid-file.synthetic.txt")
    err = info.value
    assert (err.kind, err.line_no) == ("iostat", 6)
    assert err.line.startswith("dd: error writing") and err.path.endswith("garbage-mid-file.synthetic.txt")


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (lambda r: r + "    9.99", "23 values"),  # one value too many (pandas would cut it silently)
        (lambda r: r.rsplit(" ", 3)[0], "values after the device name"),  # too few, not the last line
        (lambda r: r.replace("0.00", "abc", 1), "not a number: 'abc'"),
    ],
)
@pytest.mark.parametrize("position", [0, 1])  # first row of the chunk or a later one
def test_bad_row_mid_file_is_an_error(bad, reason: str, position: int) -> None:
    rows = [row(H_123, f"sd{d}") for d in "abc"]
    rows[position] = bad(rows[position])
    with pytest.raises(ParseError) as info:
        iostat.parse(capture("11/22/26 08:09:54", H_123, *rows))
    assert info.value.line_no == 3 + position and reason in info.value.reason


def test_empty_input_gives_the_schema() -> None:
    for text in ("", "\n\n", "Linux 6.1.0 (vm) \t11/22/26 \t_x86_64_\t(2 CPU)\n\n"):
        df = iostat.parse(text)
        assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == iostat.SCHEMA
        assert df.attrs["dropped_lines"] == 0


def test_binary_garbage_and_other_tools_are_errors() -> None:
    for text in ("\x00\x01\x02 binary \x7f\n" * 5, "procs -----------memory----------\n r  b   swpd\n"):
        with pytest.raises(ParseError) as info:
            iostat.parse(text)
        assert info.value.line_no >= 1


def test_reports_this_parser_does_not_read_are_errors() -> None:
    basic = "Device             tps    kB_read/s    kB_wrtn/s    kB_read    kB_wrtn\nvda 1.00 2.00 3.00 4 5\n"
    with pytest.raises(ParseError, match="-x"):
        iostat.parse(basic)
    human = (
        "     r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz Device\n"
        "  132.93      3.9M    24.75  15.7%    0.36    30.3k vda\n"
    )
    with pytest.raises(ParseError, match="-h"):
        iostat.parse(human)


PIECES = [
    "",
    H_123,
    row(H_123, "vda"),
    "11/22/26 08:09:54",
    "avg-cpu:  %user",
    "  1.0 2.0",
    "sda 1 2",
    "Device: r/s",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=12), st.booleans())
def test_only_parse_errors_escape(parts: list[str], newline: bool) -> None:
    try:
        df = iostat.parse("\n".join(parts) + ("\n" if newline else ""))
    except ParseError:
        return
    assert {c: str(t) for c, t in df.dtypes.items()} == iostat.SCHEMA


# ---------------------------------------------------------------- sniff


@pytest.mark.parametrize(
    "name",
    [
        "sysstat-12.6-x-d-t-iso.txt",
        "sysstat-12.6-x-avg-cpu.txt",
        "seed000-sysstat-11.x-fragments.txt",
        "sysstat-11.6-x-t.synthetic.txt",
    ],
)
def test_sniff_claims_iostat_captures(name: str) -> None:
    assert iostat.sniff((FIX / name).read_text())


@pytest.mark.parametrize(
    "text",
    [
        "hello world\nthis is a readme\n",
        "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n"
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n",
        "Linux 6.1.0 (vm) \t11/22/26 \t_x86_64_\t(2 CPU)\n\n"
        "08:10:15          DEV       tps     rkB/s     wkB/s     dkB/s   areq-sz    aqu-sz     await"
        "     %util\n",
        "[ 10s ] thds: 64 tps: 2057.53 qps: 41150.60 (r/w/o: 28805.42/8230.12/4115.06) lat (ms,95%): 56.84\n",
        "Device             tps    kB_read/s    kB_wrtn/s    kB_read    kB_wrtn\n",
        "",
    ],
)
def test_sniff_rejects_other_text(text: str) -> None:
    assert not iostat.sniff(text)


# ---------------------------------------------------------------- the real tool


@pytest.mark.lab
def test_lab_real_iostat_capture() -> None:
    tool = need_tool("iostat")
    env = {**os.environ, "LC_ALL": "C", "S_TIME_FORMAT": "ISO"}
    out = subprocess.run(
        [tool, "-x", "-d", "-t", "1", "2"], capture_output=True, text=True, env=env, timeout=30, check=True
    )
    df = iostat.parse(out.stdout)
    assert len(df) > 0 and df["device"].notna().all()
    assert df["util_pct"].between(0, 100).all()
    assert df["timestamp"].notna().all() and df["timestamp"].is_monotonic_increasing
    assert df["sample"].max() == 1
    assert df.loc[df["since_boot"], "sample"].unique().tolist() == [0]
    assert df.attrs["header_generation"].startswith("sysstat") and df.attrs["unknown_columns"] == []

"""vmstat parser: values, variants, cut-off and foreign captures."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import vmstat
from perfkit.parsers._common import Source

from .conftest import FIXTURES, need_tool

V = FIXTURES / "vmstat"


def test_timestamped_values() -> None:
    df = vmstat.parse(V / "procps-4.0.2-wide-t-gu.txt", host="db1")
    assert len(df) == 4 and df["host"].eq("db1").all()
    assert df.loc[1, "bo"] == 44740 and df.loc[1, "cs"] == 36602 and df.loc[1, "wa"] == 21
    assert df.loc[1, "timestamp"] == pd.Timestamp("2026-11-22 13:47:03", tz="UTC")
    assert df["gu"].eq(0).all()
    assert df["since_boot"].tolist() == [True, False, False, False]


def test_narrow_output_has_no_gu() -> None:
    df = vmstat.parse(V / "procps-4.0.2-t.txt")
    assert df["gu"].isna().all() and df["id"].notna().all()


def test_zone_is_taken_from_tz_argument() -> None:
    df = vmstat.parse(V / "procps-4.0.2-t.txt", tz="Asia/Shanghai")
    assert df.loc[0, "timestamp"] == pd.Timestamp("2026-11-22 05:46:59", tz="UTC")


def test_repeated_header_is_skipped() -> None:
    df = vmstat.parse(V / "procps-4.0.2-repeated-header.txt")
    assert len(df) == 25 and df["timestamp"].isna().all() and df["since_boot"].sum() == 1


def test_cut_last_line_dropped_and_counted() -> None:
    df = vmstat.parse(V / "truncated-last-line.txt")
    assert len(df) == 3 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    text = (V / "procps-4.0.2-plain.txt").read_text().splitlines()
    text.insert(3, " 1  0  0 oops 1 2 3")
    with pytest.raises(ParseError) as info:
        vmstat.parse("\n".join(text) + "\n")
    assert info.value.line_no == 4 and "oops" in info.value.line


# the values either side of int64: pandas reads the larger as uint64 or text, numpy refuses it
PAST_INT64 = ("9223372036854775808", "-9223372036854775809", "99999999999999999999999")


def _sources(text: str, tmp_path: Path) -> list[Source]:
    """The same capture as text (fast path), as a path (fast path, blocks) and as a stream (line walk)."""
    path = tmp_path / "vmstat.txt"
    path.write_text(text)
    return [text, path, io.StringIO(text)]


@pytest.mark.parametrize("number", PAST_INT64)
def test_number_past_int64_names_the_line(number: str, tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(" 24357688 ", f" {number} ", 1)  # line 4, `free`
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError) as info:
            vmstat.parse(source)
        assert info.value.line_no == 4 and number in info.value.line


@pytest.mark.parametrize("digit", ["²", "٣"])  # `str.isdigit` takes both; `int` refuses `²`
def test_non_ascii_digit_names_the_line(digit: str) -> None:
    text = (V / "procps-4.0.2-t.txt").read_text().replace(" 24357688 ", f" {digit} ", 1)  # line 3
    for source in (text, io.StringIO(text)):
        with pytest.raises(ParseError, match="malformed") as info:
            vmstat.parse(source)
        assert info.value.line_no == 3


@pytest.mark.parametrize(
    "tail",
    [
        " 2  0      0 99999999999999999999999   1856",
        # every field there, cut in the clock: this one escaped as OverflowError
        " 2  0      0 99999999999999999999999   1856 219108    0    0     0 39220 13752 31727  0 22 55 20  3"
        " 2026-11-22 13:47:0",
    ],
)
def test_number_past_int64_in_the_cut_last_line_is_dropped(tail: str, tmp_path: Path) -> None:
    text = (V / "truncated-last-line.txt").read_text()
    for source in _sources(text[: text.rindex("\n") + 1] + tail, tmp_path):
        df = vmstat.parse(source)
        assert len(df) == 3 and df.attrs["dropped_lines"] == 1


def test_int64_bounds_are_read(tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(" 24357688 ", " 9223372036854775807 ", 1)
    lines[4] = lines[4].replace(" 24357688 ", " -9223372036854775808 ", 1)
    for source in _sources("".join(lines), tmp_path):
        assert vmstat.parse(source)["free"].tolist()[1:3] == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize("year", ["9999", "2262", "0001"])
def test_timestamp_outside_datetime64_ns_names_the_line(year: str, tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("2026-11-22", f"{year}-11-22")  # line 4
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError, match="in 1678-2261") as info:
            vmstat.parse(source)
        assert info.value.line_no == 4


@pytest.mark.parametrize("stamp", ["2026-13-22 13:47:00", "2026-11-22 25:47:00", "2026-02-30 13:47:00"])
def test_timestamp_that_is_no_time_names_the_line(stamp: str, tmp_path: Path) -> None:
    # these were read as NaT: a row without its time, passing for a missing value
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("2026-11-22 13:47:00", stamp)  # line 4
    assert stamp in lines[3]
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError, match="is no date and time") as info:
            vmstat.parse(source)
        assert info.value.line_no == 4


def test_timestamp_outside_datetime64_ns_in_the_last_line_is_dropped(tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[-1] = lines[-1].replace("2026-11-22", "9999-11-22")  # as any malformed last row
    for source in _sources("".join(lines), tmp_path):
        df = vmstat.parse(source)
        assert len(df) == 3 and df.attrs["dropped_lines"] == 1
        assert df["timestamp"].max() == pd.Timestamp("2026-11-22 13:47:01", tz="UTC")


def test_german_header_is_refused_not_guessed() -> None:
    with pytest.raises(ParseError, match="LC_ALL=C"):
        vmstat.parse(V / "locale-de_DE.txt")


def test_sniff() -> None:
    assert vmstat.sniff((V / "procps-4.0.2-t.txt").read_text())
    assert not vmstat.sniff((FIXTURES / "sweep" / "spec-sdm91.txt").read_text())


@pytest.mark.lab
def test_real_vmstat_here() -> None:
    need_tool("vmstat")
    out = subprocess.run(
        ["vmstat", "-w", "-t", "1", "2"],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    df = vmstat.parse(out)
    assert len(df) == 2 and df["timestamp"].is_monotonic_increasing
    total = df[["us", "sy", "id", "wa", "st"]].sum(axis=1)
    assert total.between(97, 103).all()  # vmstat rounds each share

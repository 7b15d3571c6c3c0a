"""vmstat parser: values, variants, cut-off and foreign captures."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import vmstat

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

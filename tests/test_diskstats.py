"""diskstats: /proc/diskstats series read into iostat-like rates (real captures, tests/fixtures/diskstats)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import diskstats

FIX = Path(__file__).parent / "fixtures" / "diskstats"


def _vda(name: str):
    df = diskstats.parse(FIX / name, host="vm")
    return df, df[df["device"] == "vda"].reset_index(drop=True)


def test_rates_from_counter_deltas_match_the_raw_snapshots() -> None:
    df, vda = _vda("loop-1s-dd-dsync.txt")
    assert df.attrs["snapshots"] == 4 and len(vda) == 3 and not df["since_boot"].any()
    first = vda.iloc[0]
    dt = first["interval_s"]
    assert dt == pytest.approx(1.009, abs=0.001)
    # vda's counters at the first two stamps: writes 11909785 -> 11921415, sectors written
    # 114299480 -> 114361512, ms doing IO 945064 -> 945720, ms writing 1118323 -> 1118966,
    # flushes 4837634 -> 4841510
    assert first["w_s"] == pytest.approx(11630 / dt)
    assert first["wkb_s"] == pytest.approx(62032 / 2 / dt)
    assert first["util_pct"] == pytest.approx(656 / (dt * 1000) * 100)
    assert first["w_await_ms"] == pytest.approx(643 / 11630)
    assert first["f_s"] == pytest.approx(3876 / dt)
    assert first["wareq_kb"] == pytest.approx(62032 / 2 / 11630)
    assert first["r_s"] == 0 and first["r_await_ms"] != first["r_await_ms"]  # no read: NaN latency


def test_ptstalk_file_agrees_with_iostat_of_the_same_window() -> None:
    _, vda = _vda("ptstalk-3.2.1-diskstats.txt")
    # pt-stalk's iostat -dx 1 of the same collection printed 1047, 991, 793, 1040 w/s and 17-28 % util
    assert 700 < vda["w_s"].median() < 1200
    assert 10 < vda["util_pct"].median() < 30
    assert vda["areq_kb"].between(3, 4.5).all()
    assert str(vda["timestamp"].iloc[0]) == "2026-11-27 12:48:05.147574+00:00"


def test_sniffed_and_cut_last_line_dropped() -> None:
    for name in ("ptstalk-3.2.1-diskstats.txt", "loop-1s-dd-dsync.txt"):
        assert parsers.sniff_kind((FIX / name).read_text()) == "diskstats"
    df = diskstats.parse(FIX / "loop-1s-dd-dsync-truncated-last-line.txt")
    assert df.attrs["dropped_lines"] == 1 and len(df) == 29


def test_counter_going_back_is_nan_with_a_note_and_unknown_lines_skipped() -> None:
    text = (
        "TS 100.0 x\n 8 0 sda 10 0 80 5 20 0 160 10 0 30 15\n"
        "cat: /proc/diskstats: No such file or directory\n"
        "TS 101.0 x\n 8 0 sda 5 0 80 5 30 0 240 20 0 40 25\n"
    )
    df = diskstats.parse(text)
    assert len(df) == 1 and df["r_s"].isna().all()
    assert "went back" in df.attrs["notes"][0]
    assert df.attrs["skipped"].count == 1


def test_bad_counter_and_device_before_stamp_name_the_line() -> None:
    with pytest.raises(ParseError) as exc:
        diskstats.parse(" 8 0 sda 10 0 80 5 20 0 160 10 0 30 15\n")
    assert exc.value.line_no == 1 and "before the first" in exc.value.reason
    with pytest.raises(ParseError) as exc:
        diskstats.parse("TS 1.0 x\n 8 0 sda 10 0 80 5 20 0 160 10 0 30 1x5\n")
    assert exc.value.line_no == 2

"""iostat captures from other machines and locales (issue 17): request sizes read as printed, CJK stamps."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfkit.parsers import iostat

from .conftest import FIXTURES

FIX = FIXTURES / "iostat"


def by_device(df: pd.DataFrame, device: str) -> pd.Series:
    return df[df["device"] == device].iloc[0]


def test_avgrq_sz_is_read_in_sectors_not_recomputed_from_rounded_megabytes() -> None:
    # jc's CentOS 7.7 `iostat -mx`: sda prints rMB/s 0.01 over 0.24 IO/s and avgrq-sz 52.51 sectors
    df = iostat.parse(FIX / "jc-centos-7.7-mx.txt")
    sda = by_device(df, "sda")
    assert sda["areq_kb"] == 52.51 / 2  # 26.26 kB, not 0.01 * 1024 / 0.24 = 42.67
    assert by_device(df, "dm-0")["areq_kb"] == 44.28 / 2  # not 0: its MB/s round to 0.00
    # rates rounded to 0.00 but a printed size: the device did IO, the size stands
    assert by_device(df, "dm-1")["areq_kb"] == 50.09 / 2
    # a 0.00 with no IO at all is no request size
    idle = (FIX / "jc-centos-7.7-mx.txt").read_text().replace("    50.09     0.00", "     0.00     0.00")
    assert math.isnan(by_device(iostat.parse(idle), "dm-1")["areq_kb"])


def test_per_direction_sizes_are_weighted_by_their_rates() -> None:
    # jc's Ubuntu 18.04 `iostat -mx` (sysstat 11.6): loop0 reads 0.05/s of 3.14 kB, MB/s print 0.00
    df = iostat.parse(FIX / "jc-ubuntu-18.04-mx.txt")
    loop0 = by_device(df, "loop0")
    assert (loop0["rkb_s"], loop0["rareq_kb"]) == (0.0, 3.14)
    assert loop0["areq_kb"] == pytest.approx(3.14)  # not 0.00 MB/s / 0.05
    # Ubuntu 20.10 (sysstat 12.x, reads and writes): dm-0 r/s 2.35 × 41.48 kB, w/s 7.13 × 17.98 kB
    dm0 = by_device(iostat.parse(FIX / "jc-ubuntu-20.10-mx.txt"), "dm-0")
    assert dm0["areq_kb"] == pytest.approx((2.35 * 41.48 + 7.13 * 17.98) / (2.35 + 7.13))


def test_real_capture_request_size_is_the_printed_one() -> None:
    # second report of the zh_CN capture: writes only, wareq-sz 2.92 (4 KiB dsync writes merged less)
    df = iostat.parse(FIX / "sysstat-12.6-x-d-t-zh_CN.txt")
    second = df.iloc[1]
    assert second["r_s"] > 0 and second["w_s"] > 0
    want = (second["r_s"] * second["rareq_kb"] + second["w_s"] * second["wareq_kb"]) / (
        second["r_s"] + second["w_s"]
    )
    assert second["areq_kb"] == pytest.approx(want)


@pytest.mark.parametrize(
    ("name", "clock"),
    [("sysstat-12.6-x-d-t-zh_CN.txt", "时"), ("sysstat-12.6-x-d-t-ja_JP.txt", "時")],
)
def test_cjk_timestamps_are_read(name: str, clock: str) -> None:
    path = FIX / name
    assert f"2026年11月27日 12{clock}47分14秒" in path.read_text()
    df = iostat.parse(path, tz="Asia/Shanghai")
    assert list(df["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%S")) == [
        "2026-11-27T04:47:14",
        "2026-11-27T04:47:15",
        "2026-11-27T04:47:16",
    ]
    assert list(df["since_boot"]) == [True, False, False]
    assert df.attrs["cpus"] == 2 and df.attrs["header_generation"] == "sysstat>=12.3"
    assert df.iloc[0]["w_s"] == 592.48 and df.iloc[0]["wareq_kb"] == 4.81


def test_cjk_timestamp_with_a_bad_clock_is_an_error_naming_the_line() -> None:
    text = (FIX / "sysstat-12.6-x-d-t-zh_CN.txt").read_text().replace("12时47分15秒", "25时47分15秒")
    with pytest.raises(iostat.ParseError) as info:
        iostat.parse(text)
    assert info.value.line_no == 8 and "invalid date or time" in info.value.reason

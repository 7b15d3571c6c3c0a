"""The psutil sampler's output and its parser."""

from __future__ import annotations

import json

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import psutil as psutil_parser

from .conftest import FIXTURES

P = FIXTURES / "psutil"


def test_rates_from_counters() -> None:
    df = psutil_parser.parse(P / "sampler-4s-dd-dsync.txt", host="lab")
    assert len(df) == 4 and df["host"].eq("lab").all() and df["ncpu"].eq(2).all()
    first, busy = json.loads((P / "sampler-4s-dd-dsync.txt").read_text().splitlines()[0]), df.iloc[1]
    second = json.loads((P / "sampler-4s-dd-dsync.txt").read_text().splitlines()[1])
    seconds = (busy["timestamp"] - df.iloc[0]["timestamp"]).total_seconds()
    writes = second["disk"]["vda"]["writes"] - first["disk"]["vda"]["writes"]
    assert busy["disk_writes_s"] == pytest.approx(writes / seconds)  # vda only: no loop, no partitions
    assert busy["disk_writes_s"] > 1000 and busy["cpu_iowait_pct"] > 0  # dd oflag=dsync was writing
    shares = df[["cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct", "cpu_idle_pct"]]
    assert shares.iloc[1:].sum(axis=1).between(95, 100.001).all()  # nice/irq make up the rest
    assert df.iloc[0][["disk_writes_s", "cpu_user_pct"]].isna().all()  # no interval before the first sample
    assert df["perfkit_cpu_pct"].max() < 50 and df["perfkit_rss_kb"].min() > 10_000


def test_partitions_and_loop_devices_are_not_counted_twice() -> None:
    assert psutil_parser._whole_disks(["loop0", "vda", "vda1", "vda2", "nvme0n1", "nvme0n1p1", "zram0"]) == [
        "vda",
        "nvme0n1",
    ]


def test_cut_last_line() -> None:
    df = psutil_parser.parse(P / "truncated-last-line.txt")
    assert len(df) == 3 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    lines = (P / "sampler-4s-dd-dsync.txt").read_text().splitlines()
    lines.insert(2, "not json")
    with pytest.raises(ParseError) as info:
        psutil_parser.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 3

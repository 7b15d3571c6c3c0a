"""disk.serial-small-io, disk.saturated and disk.full, each with cases that fire and cases that must not."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest

from perfkit.analyzers import disk
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Skipped
from perfkit.parsers import df as df_parser
from perfkit.parsers import ps as ps_parser


def iostat_ds(rows: list[dict], device: str = "sda") -> Dataset:
    """iostat rows (w_s, wkb_s, aqu_sz, await_ms, util_pct) as the iostat parser would give them."""
    df = pd.DataFrame(rows)
    df["device"] = device
    df["since_boot"] = False
    df["timestamp"] = pd.NaT
    for col in ("r_s", "rkb_s"):
        df[col] = df.get(col, 0.0)
    df["areq_kb"] = (df["rkb_s"] + df["wkb_s"]) / (df["r_s"] + df["w_s"])
    df["f_s"] = float("nan")
    return Dataset("x", None, [Capture("iostatx_1", "iostat", "db1", None, df)])


def row(w_s: float, wkb_s: float, aqu: float, await_ms: float, util: float) -> dict:
    return {"w_s": w_s, "wkb_s": wkb_s, "aqu_sz": aqu, "await_ms": await_ms, "util_pct": util}


TH = default_thresholds()


def test_serial_small_writes_fire_with_the_ceiling() -> None:
    ds = iostat_ds(
        [
            row(255, 2312, 1.01, 3.96, 91.3),
            row(318, 2088, 0.89, 2.78, 88.5),
            row(299, 1992, 0.92, 3.04, 91.6),
            row(280, 2100, 0.95, 3.2, 93.0),
        ]
    )
    [f] = disk.serial_small_io(ds, None, TH)
    assert f.evidence["await_ms_median"] == pytest.approx(3.12)
    assert f.evidence["serial_iops_ceiling"] == pytest.approx(1000 / 3.12)
    assert f.hosts == ["db1"] and f.evidence["device"] == "sda"
    assert "%util" in f.explanation and "parallel" in f.explanation


def test_large_requests_are_not_serial_small_io() -> None:
    # Same queue of one, but 512 kB requests: a streaming writer, not small synchronous IO.
    ds = iostat_ds([row(60, 30720, 0.96, 5.7, 95.9)] * 4)
    assert disk.serial_small_io(ds, None, TH) == []


def test_deep_queue_is_not_serial() -> None:
    ds = iostat_ds([row(2370, 9480, 9.93, 4.14, 100.0)] * 4)
    assert disk.serial_small_io(ds, None, TH) == []


def test_idle_device_fires_nothing() -> None:
    ds = iostat_ds([row(0.2, 1, 0.0, 0.5, 0.1)] * 5)
    assert disk.serial_small_io(ds, None, TH) == [] and disk.saturated(ds, None, TH) == []


def test_deep_queue_with_waiting_is_saturated() -> None:
    # 2370 IOPS at 100%: 0.42 ms of service per IO, 4.14 ms await: ~10x waiting in a queue of ~10.
    ds = iostat_ds([row(2370, 9480, 9.93, 4.14, 100.0)] * 4)
    [f] = disk.saturated(ds, None, TH)
    assert f.severity == "critical"
    assert f.evidence["service_ms_median"] == pytest.approx(100 / 100 * 1000 / 2370)
    assert f.evidence["aqu_sz_median"] == pytest.approx(9.93)


def test_serial_stream_is_not_saturated() -> None:
    ds = iostat_ds([row(255, 2312, 1.01, 3.96, 91.3)] * 4)
    assert disk.saturated(ds, None, TH) == []


def test_since_boot_report_is_ignored() -> None:
    ds = iostat_ds([row(2370, 9480, 9.93, 4.14, 100.0)] * 4)
    ds.captures[0].frame.loc[:, "since_boot"] = True
    assert disk.saturated(ds, None, TH) == []


def test_device_rows_are_each_busy_device_s_rows_in_file_order() -> None:
    # the view both rules read: devices by name, the since-boot report and idle devices left out
    frame = pd.DataFrame(
        {
            "device": pd.array(["sdb", "sda", "sdc", "sdb", "sda", None, "sdc", "sdb"], dtype="string"),
            "since_boot": [True, True, True, False, False, False, False, False],
            "r_s": [9.0, 9.0, 9.0, 0.5, 2.0, 5.0, 0.2, None],
            "w_s": [9.0, 9.0, 9.0, 1.0, None, 5.0, 0.3, 3.0],
        }
    )
    cap = Capture("iostat.out", "iostat", "db1", None, frame)
    rows = [(dev, at.tolist()) for dev, at in disk.device_rows(cap)]
    assert rows == [("sda", [4]), ("sdb", [3, 7])]  # sdc: 0.5 IO/s; the NA device is no device
    assert cap.view(disk.device_rows) is cap.view(disk.device_rows)  # made once


# ---------------------------------------------------------------- disk.full

FIXTURES = Path(__file__).parent / "fixtures"


def df_ds(*captures: Capture) -> Dataset:
    return Dataset("x", None, list(captures))


def df_cap(text_or_path: str | Path, host: str | None = "db1") -> Capture:
    return Capture("hosts/db1/df.out", "df", host, None, df_parser.parse(text_or_path, host=host))


def ps_cap(text: str, host: str | None = "db1") -> Capture:
    return Capture("hosts/db1/ps-start.out", "ps", host, None, ps_parser.parse(text, host=host))


PS_HEADER = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"


def test_nearly_full_filesystem_fires() -> None:
    # Real capture: `pkspace 2048 1952 96 96% /tmp/pk data vol` (a 2 MiB tmpfs filled to 96 %).
    [f] = disk.full(df_ds(df_cap(FIXTURES / "df" / "coreutils-9.1-P-k.txt")), None, TH)
    assert f.severity == "warning" and f.hosts == ["db1"]
    assert f.evidence["mount"] == "/tmp/pk data vol" and f.evidence["filesystem"] == "pkspace"
    assert f.evidence["capacity_pct"] == 96.0
    assert f.evidence["free_gib"] == pytest.approx(96 / 1024**2)  # Available 96 KiB
    assert f.evidence["size_gib"] == pytest.approx(2048 / 1024**2)
    assert "data_dir" not in f.evidence


def test_roomy_filesystems_and_pseudo_mounts_fire_nothing() -> None:
    # `/` at 17 %, devtmpfs/tmpfs at 0 %, `/proc` with `-`; a snap's squashfs is always 100 %.
    text = (
        "Filesystem     1024-blocks     Used Available Capacity Mounted on\n"
        "/dev/vda         264212084 15578712  79922552      17% /\n"
        "/dev/loop3           64768    64768         0     100% /snap/core20/2318\n"
        "proc                     0        0         0        - /proc\n"
    )
    assert disk.full(df_ds(df_cap(text)), None, TH) == []


def test_data_dir_mount_is_judged_lower_and_critical_when_full() -> None:
    # A TiKV store whose mount has no space left (Available 0, 100 %): writes stop (seed 004).
    text = (
        "Filesystem     1024-blocks      Used Available Capacity Mounted on\n"
        "/dev/vda         264212084  15578712  79922552      17% /\n"
        "/dev/nvme1n1    1031069848 979516356         0     100% /data\n"
    )
    ps = ps_cap(
        PS_HEADER + "tidb        2287  310  8.1 9123456 2654321 ?  Ssl  07:02 812:10 "
        "bin/tikv-server --addr 0.0.0.0:20160 --data-dir /data/tikv-20160 --config conf/tikv.toml\n"
    )
    [f] = disk.full(df_ds(df_cap(text), ps), None, TH)
    assert f.severity == "critical"
    assert f.evidence["mount"] == "/data" and f.evidence["data_dir"] == "/data/tikv-20160"
    assert f.evidence["data_dir_program"] == "bin/tikv-server"
    assert f.evidence["free_gib"] == 0.0
    assert f.evidence["used_gib"] == pytest.approx(979516356 / 1024**2)


def test_data_dir_mount_below_pd_low_space_ratio_fires_as_warning() -> None:
    # 85 % full with 146 GiB free: under the general 90 % bar, over PD's 80 % low-space-ratio.
    text = (
        "Filesystem     1024-blocks      Used Available Capacity Mounted on\n"
        "/dev/nvme1n1    1031069848 830000000 153000000      85% /data\n"
    )
    ps = ps_cap(
        PS_HEADER
        + "mysql  900 50.0 30.0 9123456 2654321 ?  Ssl 07:02 8:10 /usr/sbin/mariadbd --datadir=/data/mysql\n"
    )
    [f] = disk.full(df_ds(df_cap(text), ps), None, TH)
    assert f.severity == "warning" and f.evidence["data_dir"] == "/data/mysql"
    assert f.evidence["capacity_pct"] == 85.0
    # Without the data dir the general bar applies: nothing.
    assert disk.full(df_ds(df_cap(text)), None, TH) == []


def test_disk_full_threshold_override() -> None:
    th = copy.deepcopy(TH)
    th["disk.full"]["min_capacity_pct"] = 97
    assert disk.full(df_ds(df_cap(FIXTURES / "df" / "coreutils-9.1-P-k.txt")), None, th) == []


def test_disk_full_skipped_without_df() -> None:
    out = disk.full(Dataset("x", None, []), None, TH)
    assert isinstance(out, Skipped) and "df" in out.reason

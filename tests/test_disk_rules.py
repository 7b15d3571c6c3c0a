"""disk.serial-small-io and disk.saturated, each with cases that fire and cases that must not."""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.analyzers import disk
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset


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

"""Disk rules from `iostat -x`: latency-bound serial small IO versus a device out of capacity.

%util is the share of time the device had at least one IO in flight. On a disk serving one IO
at a time that is saturation; on parallel devices (NVMe, RAID, SAN LUNs, cloud volumes) a device
at 100 % may still take many times the load (iostat(1) says so; and kernels ≥ 4.17 inflate it for
small writes). So the rules read the queue depth and request size, not %util alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped


def _busy_devices(ds: Dataset) -> list[tuple[str | None, str, pd.DataFrame, str]]:
    """(host, device, rows, path) for each device with real IO, since-boot report dropped."""
    out = []
    for cap in ds.of("iostat"):
        df = cap.frame[~cap.frame["since_boot"]]
        for dev, rows in df.groupby("device", sort=True):
            iops = rows["r_s"].fillna(0) + rows["w_s"].fillna(0)
            if iops.mean() >= 1:
                out.append((cap.host, str(dev), rows.assign(iops=iops), cap.path))
    return out


def _window(rows: pd.DataFrame) -> tuple[str, str] | None:
    ts = rows["timestamp"].dropna()
    return (ts.min().isoformat(), ts.max().isoformat()) if len(ts) else None


def serial_small_io(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """High %util with small requests and a queue near 1: latency-bound synchronous IO, not capacity."""
    if not ds.of("iostat"):
        return Skipped("disk.serial-small-io", "no iostat capture")
    lim = th["disk.serial-small-io"]
    out = []
    for host, dev, rows, path in _busy_devices(ds):
        busy = rows[rows["util_pct"] >= lim["min_util_pct"]]
        match = busy[
            busy["aqu_sz"].between(lim["min_queue"], lim["max_queue"])
            & (busy["areq_kb"] <= lim["max_request_kb"])
        ]
        if len(match) < lim["min_samples"] or len(match) < lim["min_share"] * len(busy):
            continue
        aw = float(match["await_ms"].median())
        ceiling = 1000.0 / aw if aw > 0 else float("nan")
        iops = float(match["iops"].median())
        ev = {
            "device": dev,
            "samples": len(match),
            "busy_samples": len(busy),
            "all_samples": len(rows),
            "util_pct_median": float(match["util_pct"].median()),
            "aqu_sz_median": float(match["aqu_sz"].median()),
            "request_kb_median": float(match["areq_kb"].median()),
            "await_ms_median": aw,
            "iops_median": iops,
            "w_s_median": float(match["w_s"].median()),
            "serial_iops_ceiling": ceiling,
            "source": path,
        }
        if match["f_s"].notna().any():
            ev["flushes_per_s_median"] = float(match["f_s"].median())
        out.append(
            Finding(
                rule="disk.serial-small-io",
                severity="warning",
                hosts=[host] if host else [],
                window=_window(match),
                title=f"{dev}: one small synchronous IO at a time, ≈{ceiling:.0f} IOPS ceiling",
                summary=(
                    f"{dev} is {ev['util_pct_median']:.0f}% busy with a queue of "
                    f"{ev['aqu_sz_median']:.2f} and {ev['request_kb_median']:.1f} kB requests at {aw:.2f} ms "
                    f"each ({iops:.0f} IOPS) in {len(match)} of {len(busy)} busy samples: a serial stream "
                    f"tops out at 1000 / {aw:.2f} ms ≈ {ceiling:.0f} IOPS."
                ),
                evidence=ev,
                explanation=(
                    "A queue of about one means a single IO in flight: each write waits for the previous "
                    "one to complete (fsync/O_DSYNC log writes do this). The device is then latency-bound, "
                    "not out of capacity — %util near 100 only says one IO was always pending; a parallel "
                    "device (SSD, NVMe, RAID) could serve many more at once. Throughput of that stream is "
                    "capped at 1000 / await_ms IOPS whatever the load, unless each IO carries more work."
                ),
                next_steps=[
                    "Batch more work per sync: group commit (innodb_flush_log_at_trx_commit, sync_binlog, "
                    "binlog_group_commit_sync_delay; TiKV raftstore/raft-engine batching).",
                    "Put the write-ahead log on a device with lower sync-write latency (NVMe with "
                    "power-loss protection, or a battery-backed cache).",
                    f"Calibrate {dev}: fio --rw=randwrite --bs=4k --iodepth=1 vs --iodepth=16 --direct=1 "
                    "shows how far the device is from its real limit.",
                ],
            )
        )
    return out


def saturated(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Capacity saturation: a deep queue, await far above the per-IO service time, %util pinned."""
    if not ds.of("iostat"):
        return Skipped("disk.saturated", "no iostat capture")
    lim = th["disk.saturated"]
    out = []
    for host, dev, rows, path in _busy_devices(ds):
        busy = rows[rows["util_pct"] >= lim["min_util_pct"]]
        # Per-IO service time: the busy share of a second divided by the IOs completed in it.
        service_ms = busy["util_pct"] / 100 * 1000 / busy["iops"].replace(0, np.nan)
        ratio = busy["await_ms"] / service_ms
        match = busy[(busy["aqu_sz"] >= lim["min_queue"]) & (ratio >= lim["min_await_over_service"])]
        if len(match) < lim["min_samples"] or len(match) < lim["min_share"] * max(len(rows), 1):
            continue
        aw = float(match["await_ms"].median())
        svc = float(service_ms[match.index].median())
        ev = {
            "device": dev,
            "samples": len(match),
            "all_samples": len(rows),
            "util_pct_median": float(match["util_pct"].median()),
            "aqu_sz_median": float(match["aqu_sz"].median()),
            "await_ms_median": aw,
            "service_ms_median": svc,
            "iops_median": float(match["iops"].median()),
            "rkb_s_median": float(match["rkb_s"].median()),
            "wkb_s_median": float(match["wkb_s"].median()),
            "request_kb_median": float(match["areq_kb"].median()),
            "source": path,
        }
        out.append(
            Finding(
                rule="disk.saturated",
                severity="critical",
                hosts=[host] if host else [],
                window=_window(match),
                title=f"{dev} is saturated: {ev['aqu_sz_median']:.1f} IOs queued, await {aw:.1f} ms vs "
                f"{svc:.1f} ms service",
                summary=(
                    f"{dev} ran {ev['iops_median']:.0f} IOPS with a queue of {ev['aqu_sz_median']:.1f}: "
                    "each IO "
                    f"waited {aw:.1f} ms for {svc:.1f} ms of service ({aw / svc:.1f}×) in {len(match)} of "
                    f"{len(rows)} samples."
                ),
                evidence=ev,
                explanation=(
                    "IOs spend most of their time waiting behind each other: the device completes as many as "
                    "it can and the rest queue. Unlike a serial stream, more parallelism does not help; "
                    "less IO or a faster device does. On parallel devices check the IOPS and bandwidth "
                    "against the device's rated limits before trusting %util."
                ),
                next_steps=[
                    f"Compare {dev}'s IOPS and MB/s with its rated or fio-measured limits.",
                    "Find who issues the IO (iotop, pidstat -d) and reduce it: bigger buffer pool / block "
                    "cache, fewer flushes, compaction throttling.",
                    "Spread data over more devices or move to faster storage.",
                ],
            )
        )
    return out


RULES = {
    "disk.serial-small-io": serial_small_io,
    "disk.saturated": saturated,
}

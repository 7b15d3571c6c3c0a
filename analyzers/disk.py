"""Disk rules from `iostat -x` (or /proc/diskstats series, parsers/diskstats.py: the same figures
from counter deltas, read where a host's window has no iostat): latency-bound serial small IO versus a
device out of capacity.

%util is the share of time the device had at least one IO in flight. On a disk serving one IO
at a time that is saturation; on parallel devices (NVMe, RAID, SAN LUNs, cloud volumes) a device
at 100 % may still take many times the load (iostat(1) says so; and kernels ≥ 4.17 inflate it for
small writes). So the rules read the queue depth and request size, not %util alone.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Finding, Skipped, data_size, number

# what the disk rules read of an iostat or diskstats frame
_READ = ["timestamp", "r_s", "w_s", "f_s", "rkb_s", "wkb_s", "areq_kb", "aqu_sz", "await_ms", "util_pct"]


def device_rows(cap: Capture) -> list[tuple[str, np.ndarray]]:
    """(device, the positions of its rows) for each device of an iostat or diskstats capture with real
    IO (1 IO/s or more on average), the since-boot report left out, devices by name. A capture view
    (`capture_views`): made where the capture is parsed, once for every rule that asks."""
    df = cap.frame
    codes, names = pd.factorize(df["device"], sort=True)  # NA: -1, left out
    keep = np.flatnonzero((codes >= 0) & ~df["since_boot"].to_numpy(dtype=bool, na_value=False))
    codes = codes[keep]
    iops = df["r_s"].fillna(0).to_numpy(dtype=float)[keep] + df["w_s"].fillna(0).to_numpy(dtype=float)[keep]
    count = np.bincount(codes, minlength=len(names))
    mean = np.bincount(codes, weights=iops, minlength=len(names)) / np.maximum(count, 1)
    by_device = np.split(keep[np.argsort(codes, kind="stable")], np.cumsum(count)[:-1])
    return [(str(names[d]), by_device[d]) for d in np.flatnonzero((count > 0) & (mean >= 1))]


def _busy_devices(ds: Dataset) -> list[tuple[str | None, str, pd.DataFrame, str]]:
    """(host, device, rows, path) for each device with real IO (`device_rows`), with the columns the
    disk rules read and `iops`.

    diskstats rows count only for a (host, step) without an iostat capture: pt-stalk takes both of
    the same window, and one device must not be judged twice."""
    out = []
    with_iostat = {(c.host, c.step) for c in ds.of("iostat")}
    caps = ds.of("iostat") + [c for c in ds.of("diskstats") if (c.host, c.step) not in with_iostat]
    for cap in caps:
        read = cap.frame[_READ]
        for dev, at in cap.view(device_rows):
            rows = read.take(at)
            out.append(
                (cap.host, dev, rows.assign(iops=rows["r_s"].fillna(0) + rows["w_s"].fillna(0)), cap.path)
            )
    return out


def _window(rows: pd.DataFrame) -> tuple[str, str] | None:
    ts = rows["timestamp"].dropna()
    return (ts.min().isoformat(), ts.max().isoformat()) if len(ts) else None


def serial_small_io(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """High %util with small requests and a queue near 1: latency-bound synchronous IO, not capacity."""
    if not ds.of("iostat") and not ds.of("diskstats"):
        return Skipped("disk.serial-small-io", "no iostat or diskstats capture")
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
                title=f"{dev}: one small synchronous IO at a time, ≈{number(ceiling)} IOPS ceiling",
                summary=(
                    f"{dev} is {ev['util_pct_median']:.0f}% busy with a queue of "
                    f"{ev['aqu_sz_median']:.2f} and {ev['request_kb_median']:.1f} kB requests at "
                    f"{number(aw)} ms each ({number(iops)} IOPS) in {len(match)} of {len(busy)} busy "
                    f"samples: a serial stream tops out at 1000 / {number(aw)} ms ≈ {number(ceiling)} IOPS."
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
    if not ds.of("iostat") and not ds.of("diskstats"):
        return Skipped("disk.saturated", "no iostat or diskstats capture")
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
                # `number`: a fast device's figures are fractions of a millisecond (0.2 vs 0.013 ms)
                title=f"{dev} is saturated: {ev['aqu_sz_median']:.1f} IOs queued, await {number(aw)} ms vs "
                f"{number(svc)} ms service",
                summary=(
                    f"{dev} ran {number(ev['iops_median'])} IOPS with a queue of {ev['aqu_sz_median']:.1f}: "
                    f"each IO waited {number(aw)} ms for {number(svc)} ms of service ({aw / svc:.1f}×) in "
                    f"{len(match)} of {len(rows)} samples."
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


# Where a database keeps its data, from the command lines ps/top -c/iotop/pidstat -l print:
# TiKV/PD/TiFlash `--data-dir`, mysqld/mariadbd `--datadir`, mongod `--dbpath`, postgres `-D`.
_DATA_DIR = re.compile(r"(?:--data-dir|--datadir|--dbpath|(?<=\s)-D)(?:=|\s+)(?P<path>/[^\s'\"]*)")
# Mounts no database writes its data to, and that df shows near or at 100 % by nature: snap and
# ISO images (read-only squashfs/iso9660 on loop devices), kernel pseudo filesystems.
_PSEUDO_FS = ("tmpfs", "devtmpfs", "proc", "sysfs", "udev", "overlay", "none", "shm", "cgroup", "efivarfs")
_PSEUDO_MOUNTS = ("/proc", "/sys", "/dev", "/run", "/snap", "/boot/efi")


def _data_dirs(ds: Dataset) -> dict[str | None, list[tuple[str, str]]]:
    """host -> [(data dir, the command it came from)] from every capture that prints command lines."""
    found: dict[str | None, dict[str, str]] = {}
    for kind in ("ps", "top", "iotop", "pidstat"):
        for cap in ds.of(kind):
            if "command" not in cap.frame.columns:
                continue
            for cmd in cap.frame["command"].dropna().unique():
                for m in _DATA_DIR.finditer(str(cmd)):
                    path = m.group("path").rstrip("/") or "/"
                    found.setdefault(cap.host, {}).setdefault(path, str(cmd).split()[0])
    return {h: sorted(d.items()) for h, d in found.items()}


def _mount_of(path: str, mounts: list[str]) -> str | None:
    """The longest mount point that is `path` or one of its parent directories."""
    best = None
    for m in mounts:
        prefix = m.rstrip("/") + "/"
        if (path == m or path.startswith(prefix) or m == "/") and (best is None or len(m) > len(best)):
            best = m
    return best


def _pseudo(fs: str, mount: str) -> bool:
    return (
        fs in _PSEUDO_FS
        or fs.startswith("/dev/loop")
        or any(mount == p or mount.startswith(p + "/") for p in _PSEUDO_MOUNTS)
    )


def full(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """A filesystem near full: databases throttle or stop writing well before 100 %.

    TiKV rejects writes once free space falls under `storage.reserve-space` and PD stops moving
    regions to a store above `low-space-ratio` (0.8); InnoDB stalls, then fails, when it cannot
    extend a file. So a data-dir mount is judged at a lower capacity and by free GiB too.
    """
    if not ds.of("df"):
        return Skipped("disk.full", "no df capture")
    lim = th["disk.full"]
    dirs = _data_dirs(ds)
    # The fullest state of each (host, mount) over all df captures (one per sweep step).
    worst: dict[tuple[str | None, str], tuple[pd.Series, str]] = {}
    for cap in ds.of("df"):
        for _, r in cap.frame.iterrows():
            fs, mount = str(r["filesystem"]), str(r["mount"])
            if pd.isna(r["capacity_pct"]) or not r["size_kb"] > 0:
                continue
            key = (cap.host, mount)
            if key not in worst or r["capacity_pct"] > worst[key][0]["capacity_pct"]:
                worst[key] = (r, cap.path)
    out = []
    for (host, mount), (r, path) in sorted(worst.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        host_mounts = [m for h, m in worst if h == host]
        held = [(d, prog) for d, prog in dirs.get(host, []) if _mount_of(d, host_mounts) == mount]
        fs = str(r["filesystem"])
        if _pseudo(fs, mount) and not held:
            continue
        cap_pct = float(r["capacity_pct"])
        free_gib = float(r["avail_kb"]) / 1024**2
        size_gib = float(r["size_kb"]) / 1024**2
        if held:
            hit = cap_pct >= lim["data_dir_capacity_pct"] or free_gib < lim["data_dir_min_free_gib"]
        else:
            hit = cap_pct >= lim["min_capacity_pct"]
        if not hit:
            continue
        stops = r["avail_kb"] <= 0 or cap_pct >= lim["critical_capacity_pct"]
        severity = "critical" if held and stops else "warning"
        ev: dict[str, Any] = {
            "mount": mount,
            "filesystem": fs,
            "capacity_pct": cap_pct,
            "free_gib": free_gib,
            "size_gib": size_gib,
            "used_gib": float(r["used_kb"]) / 1024**2,
            "source": path,
        }
        if held:
            ev["data_dir"] = held[0][0]
            ev["data_dir_program"] = held[0][1]
            if len(held) > 1:
                ev["data_dirs"] = ", ".join(d for d, _ in held)
        holder = f" (holds {held[0][1]}'s data dir {held[0][0]})" if held else ""
        out.append(
            Finding(
                rule="disk.full",
                severity=severity,
                hosts=[host] if host else [],
                title=f"{mount} is {cap_pct:.0f}% full, {data_size(r['avail_kb'] * 1024)} free{holder}",
                summary=(
                    f"{fs} on {mount}{holder} is {cap_pct:.0f}% full: {data_size(r['avail_kb'] * 1024)} free "
                    f"of {data_size(r['size_kb'] * 1024)}."
                ),
                evidence=ev,
                explanation=(
                    "Databases slow down or stop writing before a filesystem is 100 % full. TiKV "
                    "throttles and then rejects writes once free space falls below its reserve "
                    "(storage.reserve-space), and PD stops placing regions on a store above its "
                    "low-space-ratio (80 %), so throughput caps at the rate it can still write (seed 004: "
                    "1K QPS until the TiKV disk was cleaned). InnoDB and MyISAM wait, then fail, when a "
                    "file cannot grow; compaction and temporary tables need free space on top of the "
                    "data itself. df's capacity leaves out root's reserved blocks, so it is what the "
                    "database (not running as root) sees."
                ),
                next_steps=[
                    f"Find what fills {mount}: du -xh --max-depth=2 {mount} | sort -h | tail; old logs, "
                    "backups, binlogs (PURGE BINARY LOGS), RocksDB files kept by a stalled compaction.",
                    "TiKV: check the store's available space in pd-ctl store and TiKV's "
                    "storage.reserve-space; add TiKV nodes or capacity so PD can rebalance.",
                    "Rerun the test on a filesystem with headroom: results taken near full measure the "
                    "throttle, not the database.",
                ],
            )
        )
    return out


RULES = {
    "disk.serial-small-io": serial_small_io,
    "disk.saturated": saturated,
    "disk.full": full,
}

"""Limits above the hardware: a cgroup's CPU quota or IO limit, not the machine, sets the ceiling.

Both rules read the `cgroup` snapshots (parsers/cgroup.py) taken at the start and end of every step,
as its docstring's recipes say: counters are cumulative, so a step's figures are end − start.

- `cpu.throttled`: a watched process that is not the load generator (a throttled load generator is
  `client.saturated`'s case) sits in a cgroup with a CFS quota, was throttled in a large share of
  the periods it ran and used about its quota, while the host still had idle CPU: the quota, not
  the CPUs, is the ceiling (Kubernetes `limits.cpu`, systemd `CPUQuota=`, `docker --cpus`).
- `io.throttled`: the database's threads wait on IO while the device holding the data is nearly
  idle (low %util and queue): the IOs wait before they reach the device — a cgroup IO limit (shown
  with the IOPS or bytes/s done against it), else somewhere perfkit cannot see (a parent cgroup's
  limit, a network filesystem, another block device of the stack). A cap below the device (a cloud
  volume's IOPS, the hypervisor's throttling) holds requests the guest has already issued: the device
  looks busy with a long await from inside, which is disk.saturated's case, not an idle one. "Waits
  on IO" is the thread sampler's `io` class
  (analyzers/waits.py) reaching about one thread: under an IO-limited InnoDB one thread sits in
  fdatasync at every moment while the others wait on a futex for its group commit (the `lock`
  class), so IO is rarely the majority — a serial stream of one is the sign. Without the sampler,
  iotop's IO% (time in block-IO wait) of the database's threads, summed, in the same unit.

Time base: a step's snapshots bracket its load run (the load starts once the windows are open and
the end snapshot is taken after it), and the process has almost nothing to do outside that run.
CPU used and IOPS done are therefore divided by the part of the snapshots' interval the step's
load run covered (the manifest's `started_at`/`ended_at`, millisecond stamps); without a load run
(a `perfkit collect` window), by the whole interval. The evidence says which (`time_base`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Finding, Skipped, count

from .cpu import idle_pct, interval_rows, steps_by_name
from .io import category, per_value, program_name, tasks
from .sweep import load_spans

CPU_RULE = "cpu.throttled"
IO_RULE = "io.throttled"
_MIN_OVERLAP_S = 1.0  # a load run covering less of the snapshots' interval is no time base

# ---------------------------------------------------------------- prose (filled from the evidence)

CPU_EXPLANATION = (
    "A cgroup CPU quota (CFS bandwidth control: cpu.cfs_quota_us / cpu.cfs_period_us in cgroup v1, "
    "cpu.max in v2) lets the group's threads run for at most quota microseconds of CPU in every "
    "period, across all CPUs together. Once a period's quota is spent, every thread of the group is "
    "taken off the CPU until the next period begins, however many CPUs are idle: requests queue "
    "behind the throttle, throughput stays flat at about quota × (CPU per request) and latency grows "
    "with concurrency. {process} used {used:.2f} of its {quota:.2f} cores and was throttled in "
    "{share:.0%} of its periods while the host was {idle} idle: the quota, not the machine, is the "
    "ceiling. Throttling also stretches tail latency by up to a period ({period_ms:.0f} ms) per stall."
)
CPU_NEXT_STEPS = [
    "Raise or remove the quota: cgroup v1 cpu.cfs_quota_us (-1 = none), v2 cpu.max ('max PERIOD'); "
    "Kubernetes resources.limits.cpu (or drop the limit and keep requests); systemd CPUQuota= "
    "(systemctl set-property UNIT CPUQuota=); docker/podman --cpus.",
    "Or size the load to the quota: concurrency near the knee, and compare throughput per quota "
    "core before and after a change.",
    "Check the parent cgroups too (a pod's or slice's quota applies on top of the container's): "
    "cat cpu.max / cpu.stat up the hierarchy; perfkit reads the process's own cgroup only.",
]
IO_EXPLANATION = (
    "{process}'s threads spend their time waiting on IO ({io_threads:.1f} threads in IO wait on "
    "average) while {device} is {util:.1f} % busy with a queue of {queue:.2f}: the device itself "
    "could take more. The IOs wait above it. {ceiling} Every commit that syncs its log waits its "
    "turn at that ceiling, so throughput follows the IO rate allowed, not the disk's; InnoDB's group "
    "commit lets more threads share one sync, which is why throughput still grows with threads while "
    "one thread stays in fdatasync and the others wait on its futex."
)
IO_CEILING_LIMIT = "Its cgroup says where: {against} over the step — the limit is the ceiling."
IO_CEILING_HIDDEN = (
    "No cgroup limit of its own is visible{seen}, yet the IOs wait before they reach the device: a "
    "parent cgroup's limit (a pod's or a slice's; not read), a network or FUSE filesystem, or another "
    "block device of the stack than the one judged (LVM, dm-crypt, md). A cap below the device, a "
    "cloud volume's IOPS or the hypervisor's throttling, would hold requests already issued and show "
    "as a busy device with a long await, not an idle one."
)
IO_NEXT_STEPS = [
    "Raise the limit: cgroup v1 blkio.throttle.{read,write}_{iops,bps}_device, v2 io.max "
    "(riops/wiops/rbps/wbps); Kubernetes/docker --device-write-iops; on a cloud volume, provisioned "
    "IOPS or throughput (gp3/io2, Premium SSD v2) or a larger volume where IOPS scale with size.",
    "Fewer syncs per transaction: group commit (binlog_group_commit_sync_delay), "
    "innodb_flush_log_at_trx_commit=2 and sync_binlog=0/N trade durability of the last second for "
    "fewer fsyncs; batch small transactions.",
    "Confirm the ceiling with fio on the same volume: --rw=randwrite --bs=16k --iodepth=1 --fsync=1 "
    "and --iodepth=16: a flat IOPS figure whatever the depth is a rate limit, not the device.",
]


# ---------------------------------------------------------------- shared helpers


@dataclass
class _Snap:
    """A step's pair of cgroup snapshots on one host, and the seconds to divide its deltas by."""

    host: str | None
    step: str | None
    start: pd.DataFrame
    end: pd.DataFrame
    interval_s: float
    seconds: float  # the time base (module docstring)
    time_base: str  # "load run" or "snapshots"
    window: tuple[str, str] | None
    paths: list[str] = field(default_factory=list)


# the per-step figures each rule's evidence keeps (the rest of a step's record is working state); a
# key a step lacks (no IO limit seen) is None
_CPU_STEP_KEYS = (
    "step",
    "quota_cores",
    "used_cores",
    "used_share_of_quota",
    "periods",
    "throttled_periods",
    "throttled_share",
    "throttled_s",
    "throttled_s_per_s",
    "host_idle_pct",
    "idle_from",
    "seconds",
    "interval_s",
    "time_base",
    "held",
)
_IO_STEP_KEYS = (
    "step",
    "io_threads",
    "lock_threads",
    "io_queued_threads",
    "io_from",
    "device",
    "util_pct_median",
    "aqu_sz_median",
    "device_iops_mean",
    "w_await_ms_median",
    "limit_key",
    "limit",
    "limit_device",
    "done_count",
    "done_per_s",
    "limit_used_share",
    "seconds",
    "time_base",
    "held",
)


def _per_step(
    steps: list[dict[str, Any]], keys: tuple[str, ...], threads: dict[str, int]
) -> list[dict[str, Any]]:
    return [{k: s.get(k) for k in keys} | {"threads": threads.get(s["step"] or "")} for s in steps]


def _stamp(value: Any) -> pd.Timestamp | None:
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if pd.isna(ts):
        return None
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts


def snapshots(ds: Dataset) -> list[_Snap]:
    """One `_Snap` per host and step with both a start and an end cgroup snapshot.

    Start and end are the manifest's `phase` of each capture (`start`/`end`), else the earlier and
    the later snapshot. Times: the manifest's millisecond `started_at` of both, else the snapshots'
    own epoch seconds.
    """
    loads = load_spans(ds)
    groups: dict[tuple[str | None, str | None], list[Capture]] = {}
    for cap in ds.of("cgroup"):
        if len(cap.frame):
            groups.setdefault((cap.host, cap.step), []).append(cap)
    out = []
    for (host, step), caps in groups.items():
        timed = []
        for cap in caps:
            rec = ds.records.get(cap.path)
            own = cap.frame["timestamp"].dropna()
            at = (_stamp(rec.started_at) if rec else None) or (own.iloc[0] if len(own) else None)
            phase = {"start": 0, "end": 2}.get(rec.phase if rec else "", 1)
            timed.append((phase, at if at is not None else pd.Timestamp.min.tz_localize("UTC"), cap, at))
        timed.sort(key=lambda t: (t[0], t[1]))
        (_, _, first, t0), (_, _, last, t1) = timed[0], timed[-1]
        if first is last or t0 is None or t1 is None or t1 <= t0:
            continue
        interval = (t1 - t0).total_seconds()
        seconds, base = interval, "snapshots"
        if step in loads:
            a, b = loads[step]
            overlap = (min(b, t1) - max(a, t0)).total_seconds()
            if overlap >= _MIN_OVERLAP_S:
                seconds, base = overlap, "load run"
        out.append(
            _Snap(
                host,
                step,
                first.frame,
                last.frame,
                interval,
                seconds,
                base,
                (t0.isoformat(), t1.isoformat()),
                [first.path, last.path],
            )
        )
    return out


_MATCH = ["pid", "version", "controller", "cgroup", "key", "device"]


def deltas(snap: _Snap) -> pd.DataFrame:
    """The snapshots' rows side by side: `start`, `end` (values), `delta` (end − start; NaN where a
    counter went back: the cgroup was made again) and `unlimited` (the end snapshot's)."""
    a = _keyed(snap.start)[_MATCH + ["value"]].rename(columns={"value": "start"})
    b = _keyed(snap.end).rename(columns={"value": "end"})
    m = b.merge(a, on=_MATCH, how="inner")
    d = m["end"] - m["start"]
    return m.assign(delta=d.where(d >= 0))


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    """The match columns as plain values: `device` is NA on every row that is no device's, and NA
    neither compares nor matches as a key."""
    return frame.assign(
        device=frame["device"].astype(object).where(frame["device"].notna(), ""),
        pid=frame["pid"].astype("int64"),
        version=frame["version"].astype("int64"),
    )


def _one(rows: pd.DataFrame, key: str, col: str = "end") -> float | None:
    r = rows[rows["key"] == key]
    if r.empty:
        return None
    v = float(r[col].iloc[0])
    return v if math.isfinite(v) else None


def host_idle(ds: Dataset, host: str | None, step: str | None) -> tuple[float, str] | None:
    """The host's CPU idle % over the step (median; idle + iowait: iowait is idle CPU), from vmstat,
    else mpstat's `all` rows; None when neither was captured there."""
    vm = [interval_rows(c) for c in ds.of("vmstat") if c.host == host and c.step == step]
    vm = [v for v in vm if len(v)]
    if vm:
        rows = pd.concat(vm)
        idle = idle_pct("vmstat", rows)
        if idle.notna().sum() >= 2:
            return float(idle.median()), "vmstat id + wa"
    mp = [c.frame[c.frame["cpu"] == "all"] for c in ds.of("mpstat") if c.host == host and c.step == step]
    mp = [m for m in mp if len(m)]
    if mp:
        rows = pd.concat(mp)
        idle = idle_pct("mpstat", rows)
        if idle.notna().sum() >= 2:
            return float(idle.median()), "mpstat all %idle + %iowait"
    return None


def _threads_of(ds: Dataset, sweep: Any) -> dict[str, int]:
    return {name: s.threads for name, s in steps_by_name(ds, sweep).items()}


def _from_knee(steps: list[str | None], threads: dict[str, int], sweep: Any) -> list[str | None]:
    """The steps at and past the sweep's knee (every step when there is no knee or no sweep)."""
    knee = getattr(sweep, "knee_threads", None)
    if knee is None:
        return list(steps)
    return [s for s in steps if s is None or threads.get(s, knee) >= knee]


def _order(steps: list[str | None], threads: dict[str, int]) -> list[str | None]:
    return sorted(steps, key=lambda s: (threads.get(s or "", 0), s or ""))


def _in_order(
    steps: list[dict[str, Any]], threads: dict[str, int], sweep: Any
) -> tuple[list, list, list, dict, list]:
    """(step names by threads, the steps in that order, those where the rule held, step -> record,
    the names at and past the knee): what both findings are written from."""
    order = _order([s["step"] for s in steps], threads)
    steps = sorted(steps, key=lambda s: order.index(s["step"]))
    return (
        order,
        steps,
        [s for s in steps if s["held"]],
        {s["step"]: s for s in steps},
        _from_knee(order, threads, sweep),
    )


def _label(step: str | None, threads: dict[str, int]) -> str:
    if step is None:
        return "the capture"
    return f"{step} ({count(threads[step], 'thread')})" if step in threads else step


def _span(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return format(lo, fmt) if format(lo, fmt) == format(hi, fmt) else f"{format(lo, fmt)}–{format(hi, fmt)}"


def _merge_windows(windows: list[tuple[str, str] | None]) -> tuple[str, str] | None:
    ws = [w for w in windows if w]
    return (min(w[0] for w in ws), max(w[1] for w in ws)) if ws else None


# ---------------------------------------------------------------- cpu.throttled


def cpu_throttled(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """A non-load-generator process throttled by its cgroup's CPU quota while the host has idle CPU."""
    if not ds.of("cgroup"):
        return Skipped(CPU_RULE, "no cgroup capture (cgroup-start/cgroup-end snapshots)")
    snaps = snapshots(ds)
    if not snaps:
        return Skipped(CPU_RULE, "no step with both a start and an end cgroup snapshot")
    lim = th[CPU_RULE]
    threads = _threads_of(ds, sweep)
    units: dict[tuple, list[dict[str, Any]]] = {}
    for snap in snaps:
        d = deltas(snap)
        if d.empty:
            continue
        d = d[[category(program_name(p)) != "load generator" for p in d["process"]]]
        idle = host_idle(ds, snap.host, snap.step)
        quotas = d[(d["key"] == "quota_usec") & ~d["unlimited"].fillna(False).astype(bool)]
        for (version, cgroup), _ in quotas.groupby(["version", "cgroup"], sort=True):
            pids = quotas[(quotas["version"] == version) & (quotas["cgroup"] == cgroup)]["pid"]
            mine = d[d["pid"].isin(set(pids))]
            cpu = mine[(mine["version"] == version) & (mine["cgroup"] == cgroup)]
            cpu = cpu.drop_duplicates(["key", "device"])
            usage = mine[mine["key"] == "usage_usec"].drop_duplicates(["version", "controller", "cgroup"])
            st = _cpu_step(snap, cpu, usage, idle, lim)
            if st is None:
                continue
            procs = mine.drop_duplicates("pid")
            st["processes"] = sorted({str(p) for p in procs["process"]})
            st["pids"] = sorted(int(p) for p in procs["pid"])
            units.setdefault((snap.host, int(version), str(cgroup)), []).append(st)
    out = []
    for (host, version, cgroup), steps in sorted(units.items(), key=lambda kv: (kv[0][0] or "", kv[0][1:])):
        if _holds_where_heaviest(steps, threads, sweep):
            out.append(_cpu_finding(host, version, cgroup, steps, threads, sweep, lim))
    return out


def _cpu_step(
    snap: _Snap, cpu: pd.DataFrame, usage: pd.DataFrame, idle: tuple[float, str] | None, lim: dict[str, Any]
) -> dict[str, Any] | None:
    """One step of one quota'd cgroup: the docstring recipes of parsers/cgroup.py, and whether the
    rule holds there."""
    quota, period = _one(cpu, "quota_usec"), _one(cpu, "period_usec")
    periods, throttled = _one(cpu, "nr_periods", "delta"), _one(cpu, "nr_throttled", "delta")
    throttled_us = _one(cpu, "throttled_usec", "delta")
    if not quota or not period or periods is None or throttled is None:
        return None
    used_us = _one(usage, "usage_usec", "delta")
    st: dict[str, Any] = {
        "step": snap.step,
        "quota_cores": quota / period,
        "period_ms": period / 1000,
        "periods": int(periods),
        "throttled_periods": int(throttled),
        "throttled_share": throttled / periods if periods else 0.0,
        "throttled_s": (throttled_us or 0.0) / 1e6,
        "used_cores": used_us / 1e6 / snap.seconds if used_us is not None else None,
        "seconds": snap.seconds,
        "interval_s": snap.interval_s,
        "time_base": snap.time_base,
        "host_idle_pct": idle[0] if idle else None,
        "idle_from": idle[1] if idle else None,
        "window": snap.window,
        "sources": snap.paths,
    }
    st["used_share_of_quota"] = st["used_cores"] / st["quota_cores"] if st["used_cores"] is not None else None
    st["throttled_s_per_s"] = st["throttled_s"] / snap.seconds
    st["held"] = (
        periods >= lim["min_periods"]
        and st["throttled_share"] >= lim["min_throttled_share"]
        # without a usage counter the throttling alone says the quota was used up in those periods
        and (st["used_share_of_quota"] is None or st["used_share_of_quota"] >= lim["min_quota_used_share"])
        and (idle is None or idle[0] >= lim["min_host_idle_pct"])
    )
    return st


def _cpu_finding(
    host: str | None,
    version: int,
    cgroup: str,
    steps: list[dict[str, Any]],
    threads: dict[str, int],
    sweep: Any,
    lim: dict[str, Any],
) -> Finding:
    order, steps, held, by_step, late = _in_order(steps, threads, sweep)
    idle_known = all(s["host_idle_pct"] is not None for s in held)
    critical = (
        idle_known
        and bool(late)
        and all(
            by_step[s]["held"] and by_step[s]["throttled_share"] >= lim["critical_throttled_share"]
            for s in late
        )
    )
    quota = held[0]["quota_cores"]
    process = ", ".join(sorted({p for s in held for p in s["processes"]}))
    used = [s["used_cores"] for s in held if s["used_cores"] is not None]
    idles = [s["host_idle_pct"] for s in held if s["host_idle_pct"] is not None]
    shares = [s["throttled_share"] for s in held]
    first = held[0]["step"]
    ev: dict[str, Any] = {
        "process": process,
        "pids": sorted({p for s in held for p in s["pids"]}),
        "cgroup": cgroup,
        "cgroup_version": version,
        "quota_cores": quota,
        "period_ms": held[0]["period_ms"],
        "steps_held": [s["step"] for s in held],
        "steps_judged": len(steps),
        "first_step": first,
        "first_threads": threads.get(first or ""),
        "throttled_share_min": min(shares),
        "throttled_share_max": max(shares),
        "throttled_s_total": sum(s["throttled_s"] for s in held),
        "used_cores_max": max(used) if used else None,
        "host_idle_pct_min": min(idles) if idles else None,
        "per_step": _per_step(steps, _CPU_STEP_KEYS, threads),
        "source": ", ".join(p for s in held for p in s["sources"]),
    }
    where = (
        f"at {_label(first, threads)}"
        if len(held) == 1
        else f"in {len(held)} of {len(steps)} steps from {_label(first, threads)}"
    )
    idle_text = f"{_span(idles, '.0f')} % idle" if idles else "of unknown idle (no vmstat or mpstat there)"
    used_text = f"using {_span(used, '.2f')} cores" if used else "its CPU use not counted"
    summary = (
        f"{process} (cgroup v{version} {cgroup}) is held by a CPU quota of {quota:.2f} cores {where}: "
        f"throttled in {_span([x * 100 for x in shares], '.0f')} % of its periods "
        f"({ev['throttled_s_total']:.1f} s throttled), {used_text}, while the host was {idle_text}."
    )
    explanation = CPU_EXPLANATION.format(
        process=process,
        used=max(used) if used else float("nan"),
        quota=quota,
        share=max(shares),
        idle=f"{min(idles):.0f} %" if idles else "(unknown: no vmstat or mpstat)",
        period_ms=held[0]["period_ms"],
    )
    return Finding(
        rule=CPU_RULE,
        severity="critical" if critical else "warning",
        title=f"{process} throttled by its cgroup CPU quota of {quota:.2f} cores",
        summary=summary,
        evidence=ev,
        explanation=explanation,
        next_steps=list(CPU_NEXT_STEPS),
        hosts=[host] if host else [],
        window=_merge_windows([s["window"] for s in held]),
    )


# ---------------------------------------------------------------- io.throttled

# limit key -> (the counter it limits, what the prose calls its rate)
_IO_LIMITS = {
    "write_max_iops": ("write_ios", "write IOPS"),
    "read_max_iops": ("read_ios", "read IOPS"),
    "write_max_bytes_s": ("write_bytes", "MB/s of writes"),
    "read_max_bytes_s": ("read_bytes", "MB/s of reads"),
}


def io_throttled(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """The database's threads wait on IO while the device holding its data is nearly idle."""
    if not ds.of("threads") and not ds.of("iotop"):
        return Skipped(IO_RULE, "no thread-state (threads) or iotop capture: IO waits unknown")
    if not ds.of("iostat"):
        return Skipped(IO_RULE, "no iostat capture: whether the device is busy is unknown")
    lim = th[IO_RULE]
    threads = _threads_of(ds, sweep)
    waits = _io_waits(ds, sweep)
    if not waits and not ds.of("threads"):
        return Skipped(
            IO_RULE,
            "no thread-state (threads) capture, and iotop printed no IO% "
            "(kernel.task_delayacct=0: `sysctl kernel.task_delayacct=1` or boot with delayacct)",
        )
    snaps = {(s.host, s.step): s for s in snapshots(ds)}
    units: dict[tuple, list[dict[str, Any]]] = {}
    for (host, step, process, pid), (io_threads, source, lock_threads) in waits.items():
        dev = _device(ds, host, step, snaps.get((host, step)), process, pid)
        st: dict[str, Any] = {
            "step": step,
            "io_threads": io_threads,
            "lock_threads": lock_threads,
            "io_from": source,
            "pid": pid,
        }
        if dev is None:
            continue
        st.update(dev)
        st["limit_binding"] = (st.get("limit_used_share") or 0.0) >= lim["min_limit_used_share"]
        # without a visible limit only a nearly idle device says the ceiling is above it; a limit used
        # up says so itself, as long as the device is not near full too (CI: on a slower disk the
        # syncs of the IO-limited run kept it 30-50 % busy)
        quiet = st["util_pct_median"] <= lim["max_util_pct"] and st["aqu_sz_median"] <= lim["max_queue"]
        limited = st["limit_binding"] and st["util_pct_median"] <= lim["max_util_pct_limited"]
        # with a limit used up, the threads waiting for the one doing the IO wait on IO too: InnoDB's
        # group commit has one thread write and flush the log while the others wait for it on a
        # futex, which the sampler classes as lock (CI, 8 threads under 25 write IOPS: io 0.375, lock
        # 5.375; another run io 1.0, lock 7.0). Without a limit used up a lock wait stays a lock wait.
        st["io_queued_threads"] = (lock_threads or 0.0) if st["limit_binding"] and io_threads > 0 else 0.0
        st["held"] = io_threads + st["io_queued_threads"] >= lim["min_io_threads"] and (quiet or limited)
        units.setdefault((host, process, pid), []).append(st)
    out = []
    for (host, process, pid), steps in sorted(
        units.items(), key=lambda kv: (kv[0][0] or "", kv[0][1], kv[0][2] or 0)
    ):
        if _holds_where_heaviest(steps, threads, sweep):
            out.append(_io_finding(host, process, pid, steps, threads, sweep))
    return out


def _holds_where_heaviest(steps: list[dict[str, Any]], threads: dict[str, int], sweep: Any) -> bool:
    """Whether the limit held at the heaviest step it is judged at: a limit that is the sweep's ceiling
    holds where the load is heaviest (CI: with the knee at 1 thread, the lab's own MariaDB flushing in
    the background at the lightest step was taken for an IO-throttled database)."""
    judged = _judged(steps, threads, sweep)
    if not judged:
        return False
    order = _order([s["step"] for s in judged], threads)
    return bool(next(s for s in judged if s["step"] == order[-1])["held"])


def _judged(steps: list[dict[str, Any]], threads: dict[str, int], sweep: Any) -> list[dict[str, Any]]:
    """The steps a limit must hold at to be the sweep's ceiling: at or past the knee, else the highest
    (a database that only flushes in the background at the lightest step limits nothing)."""
    names = [s["step"] for s in steps]
    knee = getattr(sweep, "knee_threads", None)
    judged = _from_knee(names, threads, sweep) if knee is not None else _order(names, threads)[-1:]
    return [s for s in steps if s["step"] in judged]


def _io_waits(ds: Dataset, sweep: Any) -> dict[tuple, tuple[float, str, float | None]]:
    """(host, step, process, pid) -> (average threads in IO wait, where from, in lock waits) for the
    database processes: the thread sampler's `io` class (analyzers/waits.py), else iotop's IO% of
    the database's threads summed (pid unknown then: by program name)."""
    from . import waits  # the lead's module, read-only here

    out: dict[tuple, tuple[float, str, float | None]] = {}
    sampled = set()
    for p in waits.profiles(ds, sweep):
        sampled.add((p.host, p.step))
        idle = sweep is None and p.served_nothing  # no load, no CPU: its IO thread is parked (waits.py)
        if category(p.process) == "database" and not idle:
            out[(p.host, p.step, p.process, p.pid)] = (
                p.classes.get("io", 0.0),
                "thread sampler",
                p.classes.get("lock"),
            )
    sampled |= {(c.host, c.step) for c in ds.of("threads") if len(c.frame)}
    step_of = {c.path: (c.host, c.step) for c in ds.of("iotop")}
    for host, t in tasks(ds, "iotop").items():
        rows = t.rows[(t.rows["sample"] >= 0)]
        for path, mine in rows.groupby("source", sort=True, observed=True):
            h, step = step_of.get(str(path), (host, None))
            if (h, step) in sampled:
                continue
            n = sum(1 for s in t.samples if s.rsplit("#", 1)[0] == path)
            if not n:
                continue
            if mine["io_pct"].isna().all():
                continue  # `?unavailable?`: the kernel keeps no IO delay (kernel.task_delayacct=0)
            db = mine[per_value(category, mine["program"].astype(str)) == "database"]
            for program, r in db.groupby("program", sort=True, observed=True):
                io = float(r["io_pct"].fillna(0).sum()) / 100 / n
                out[(h, step, str(program), None)] = (io, "iotop IO%", None)
    return out


def _device(
    ds: Dataset, host: str | None, step: str | None, snap: _Snap | None, process: str, pid: int | None
) -> dict[str, Any] | None:
    """The device judged (the limited one, else the busiest in iostat) with its median %util and
    queue over the step, and the cgroup IO limit that binds most with the rate done against it."""
    limit = _io_limit(snap, process, pid) if snap is not None else None
    frames = [
        c.frame[~c.frame["since_boot"].astype(bool)]
        for c in ds.of("iostat")
        if c.host == host and c.step == step
    ]
    frames = [f for f in frames if len(f)]
    if not frames:
        return None
    io = pd.concat(frames)
    io = io.assign(iops=io["r_s"].fillna(0) + io["w_s"].fillna(0))
    per_dev = io.groupby("device", sort=True)["iops"].mean()
    if per_dev.empty:
        return None
    device = str(per_dev.idxmax())
    chosen = "busiest"
    if limit and limit["limit_device"] in per_dev.index:
        device, chosen = str(limit["limit_device"]), "limited"
    rows = io[io["device"] == device]
    out: dict[str, Any] = {
        "device": device,
        "device_chosen": chosen,
        "util_pct_median": float(rows["util_pct"].median()),
        "aqu_sz_median": float(rows["aqu_sz"].fillna(0).median()),
        "device_iops_mean": float(rows["iops"].mean()),
        "w_await_ms_median": float(rows["w_await_ms"].median()) if "w_await_ms" in rows else None,
        "iostat_samples": len(rows),
    }
    if limit:
        out.update(limit)
    if snap is not None:
        out.update(window=snap.window, seconds=snap.seconds, time_base=snap.time_base)
    return out


def _io_limit(snap: _Snap, process: str, pid: int | None) -> dict[str, Any] | None:
    """The process's cgroup IO limit closest to being used up in the step, and the rate done."""
    d = deltas(snap)
    if d.empty:
        return None
    mine = d[d["pid"] == pid] if pid is not None else d[d["process"] == process]
    limits = mine[mine["key"].isin(list(_IO_LIMITS)) & ~mine["unlimited"].fillna(False).astype(bool)]
    best: dict[str, Any] | None = None
    for r in limits.drop_duplicates(["version", "cgroup", "key", "device"]).itertuples(index=False):
        counter, what = _IO_LIMITS[str(r.key)]
        c = mine[
            (mine["version"] == r.version)
            & (mine["cgroup"] == r.cgroup)
            & (mine["key"] == counter)
            & (mine["device"] == r.device)
        ]
        done_n = float(c["delta"].iloc[0]) if len(c) and pd.notna(c["delta"].iloc[0]) else None
        done = done_n / snap.seconds if done_n is not None else None
        share = done / float(r.end) if done is not None and r.end else None
        cand = {
            "limit_key": str(r.key),
            "limit_what": what,
            "limit": float(r.end),
            "limit_device": str(r.device_name) if pd.notna(r.device_name) else str(r.device),
            "limit_cgroup": str(r.cgroup),
            "limit_cgroup_version": int(r.version),
            "done_count": done_n,
            "done_per_s": done,
            "limit_used_share": share,
        }
        if best is None or (share or 0.0) > (best["limit_used_share"] or 0.0):
            best = cand
    return best


def _io_finding(
    host: str | None,
    process: str,
    pid: int | None,
    steps: list[dict[str, Any]],
    threads: dict[str, int],
    sweep: Any,
) -> Finding:
    order, steps, held, by_step, late = _in_order(steps, threads, sweep)
    limited = [s for s in held if s["limit_binding"]]
    # a visible limit, used up at every step from the knee on, is the ceiling; otherwise it is a guess
    critical = bool(late) and all(by_step[s]["held"] and by_step[s]["limit_binding"] for s in late)
    first = held[0]["step"]
    ref = limited[0] if limited else held[0]
    iot = [s["io_threads"] for s in held]
    queued = [s["io_queued_threads"] for s in held]
    utils = [s["util_pct_median"] for s in held]
    queues = [s["aqu_sz_median"] for s in held]
    name = f"{process}" + (f" (pid {pid})" if pid is not None else "")
    ev: dict[str, Any] = {
        "process": process,
        "pid": pid,
        "io_from": held[0]["io_from"],
        "device": ref["device"],
        "device_chosen": ref["device_chosen"],
        "steps_held": [s["step"] for s in held],
        "steps_judged": len(steps),
        "first_step": first,
        "first_threads": threads.get(first or ""),
        "io_threads_min": min(iot),
        "io_threads_max": max(iot),
        "io_queued_threads_max": max(queued),
        "util_pct_max": max(utils),
        "aqu_sz_max": max(queues),
        "limit_visible": bool(limited),
    }
    if limited:
        done = [s["done_per_s"] for s in limited]
        ev.update(
            {
                k: ref[k]
                for k in (
                    "limit_key",
                    "limit_what",
                    "limit",
                    "limit_device",
                    "limit_cgroup",
                    "limit_cgroup_version",
                )
            }
        )
        ev.update(
            done_per_s_min=min(done), done_per_s_max=max(done), steps_at_limit=[s["step"] for s in limited]
        )
        against = _against(ref, done)
        ceiling = IO_CEILING_LIMIT.format(against=against)
    else:
        seen = [s for s in held if s.get("limit_key")]
        seen_text = (
            f" (a limit of {_fmt_rate(seen[0]['limit'], seen[0]['limit_key'])} {seen[0]['limit_what']} on "
            f"{seen[0]['limit_device']} is set but only {seen[0]['limit_used_share']:.0%} of it was used)"
            if seen and seen[0].get("limit_used_share") is not None
            else ""
        )
        ceiling = IO_CEILING_HIDDEN.format(seen=seen_text)
        against = (
            "no cgroup limit of its own reached: the IOs wait above the device "
            "(a parent cgroup's limit, a network filesystem)"
        )
    ev["per_step"] = _per_step(steps, _IO_STEP_KEYS, threads)
    where = (
        f"at {_label(first, threads)}"
        if len(held) == 1
        else f"in {len(held)} of {len(steps)} steps from {_label(first, threads)}"
    )
    summary = (
        f"The threads of {name} wait on IO {where}: {_span(iot, '.1f')} in IO wait ({ev['io_from']})"
        + (f" and {_span(queued, '.1f')} waiting for it (lock waits behind the IO)" if max(queued) else "")
        + f" while {ref['device']} is {_span(utils, '.1f')} % busy with a queue of {_span(queues, '.2f')}: "
        f"{against}."
    )
    explanation = IO_EXPLANATION.format(
        process=process,
        io_threads=max(iot),
        device=ref["device"],
        util=max(utils),
        queue=max(queues),
        ceiling=ceiling,
    )
    return Finding(
        rule=IO_RULE,
        severity="critical" if critical else "warning",
        title=(
            f"{process} held by its cgroup IO limit: {against}"
            if limited
            else f"{process} waits on IO while {ref['device']} is nearly idle: a ceiling above the device"
        ),
        summary=summary,
        evidence=ev,
        explanation=explanation,
        next_steps=list(IO_NEXT_STEPS),
        hosts=[host] if host else [],
        window=_merge_windows([s.get("window") for s in held]),
    )


def _fmt_rate(value: float, key: str) -> str:
    """An IOPS figure as a whole number, a bytes/s one in MB/s."""
    return f"{value / 1e6:.1f}" if key.endswith("_bytes_s") else f"{value:.0f}"


def _against(ref: dict[str, Any], done: list[float]) -> str:
    """`40 write IOPS allowed on vda, 39.3 done` (a span of the steps' rates when they differ)."""
    scale = 1e6 if ref["limit_key"].endswith("_bytes_s") else 1.0
    return (
        f"{_fmt_rate(ref['limit'], ref['limit_key'])} {ref['limit_what']} allowed on {ref['limit_device']}, "
        f"{_span([x / scale for x in done], '.1f')} done"
    )


RULES = {CPU_RULE: cpu_throttled, IO_RULE: io_throttled}

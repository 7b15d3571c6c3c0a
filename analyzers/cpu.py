"""CPU and memory rules: a host out of CPU, one thread pinned, context switches per transaction, swapping.

vmstat is the common input. Its first report is the average since boot (the `since_boot` row), so
every rule drops it; `r` is an instantaneous count (tasks running or waiting for a CPU, D-state tasks
are in `b`), so a rule asks for a share of samples, never one. Captures of a sweep carry the step
they were taken in (`cap.step`, e.g. `t0008`), which maps to the sweep's step through the load
generator's manifest record, so figures can be read per load level.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Finding, Skipped, count

# ---------------------------------------------------------------- shared helpers


def interval_rows(cap: Capture) -> pd.DataFrame:
    """vmstat rows measured over an interval: the since-boot average is no sample of the load."""
    df = cap.frame
    return df[~df["since_boot"].astype(bool)] if "since_boot" in df.columns else df


def _num(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce").astype(float)


# Each CPU capture's idle and iowait columns. iowait is idle time with IO outstanding: a runnable task
# would have run on that CPU, so it is idle CPU, not CPU work (a host waiting on its disk is not busy)
IDLE_COLUMNS = {
    "vmstat": ("id", "wa"),
    "mpstat": ("idle_pct", "iowait_pct"),
    "sar": ("idle_pct", "iowait_pct"),
    "sadf": ("idle_pct", "iowait_pct"),
    "psutil": ("cpu_idle_pct", "cpu_iowait_pct"),
}


def cpu_pressure_pct(caps: list[Capture], min_samples: int) -> float | None:
    """PSI's `cpu some` over these psi captures, the median of each second's share of the time a task
    waited for a CPU; None without `min_samples` seconds of it."""
    frames = [c.frame for c in caps if c.kind == "psi" and len(c.frame)]
    if not frames:
        return None
    psi = pd.concat(frames)
    some = psi.loc[(psi["resource"] == "cpu") & (psi["scope"] == "some"), "stall_pct"].dropna()
    return float(some.median()) if len(some) >= min_samples else None


def idle_pct(kind: str, rows: pd.DataFrame) -> pd.Series:
    """The idle CPU % of a CPU capture's rows (`IDLE_COLUMNS`): idle + iowait, an iowait the tool or
    its version did not print counted as 0."""
    idle, iowait = IDLE_COLUMNS[kind]
    wa = _num(rows[iowait]).fillna(0) if iowait in rows.columns else 0.0
    return _num(rows[idle]) + wa


def _window(frames: list[pd.DataFrame]) -> tuple[str, str] | None:
    ts = pd.concat([f["timestamp"] for f in frames]).dropna() if frames else pd.Series(dtype=object)
    return (ts.min().isoformat(), ts.max().isoformat()) if len(ts) else None


def _hosts(host: str | None) -> list[str]:
    return [host] if host else []


def steps_by_name(ds: Dataset, sweep: Any) -> dict[str, Any]:
    """Sweep step name (`t0008`) -> the sweep's Step, from the load output's manifest record (its
    `step`), else the `load/<step>/` directory of the step's source file."""
    if sweep is None:
        return {}
    out: dict[str, Any] = {}
    for step in sweep.steps:
        rec = ds.records.get(step.source)
        name = rec.step if rec else None
        if not name:
            m = re.search(r"(?:^|/)load/([^/]+)/", step.source or "")
            name = m.group(1) if m else None
        if name and name not in out:
            out[name] = step
    return out


def _mpstat_idle(ds: Dataset, cap: Capture, rows: pd.DataFrame) -> pd.Series | None:
    """mpstat's `all` idle + iowait at vmstat's sample times, for a vmstat that printed no `id`."""
    for mp in ds.of("mpstat"):
        if mp.host != cap.host or mp.step != cap.step:
            continue
        a = mp.frame[mp.frame["cpu"] == "all"].dropna(subset=["timestamp"]).sort_values("timestamp")
        left = rows[["timestamp"]].reset_index().dropna(subset=["timestamp"]).sort_values("timestamp")
        if a.empty or left.empty:
            continue
        a = a.assign(_idle=idle_pct("mpstat", a))[["timestamp", "_idle"]]
        m = pd.merge_asof(left, a, on="timestamp", direction="nearest", tolerance=pd.Timedelta(seconds=1))
        return m.set_index("index")["_idle"].reindex(rows.index)
    return None


def _median(s: pd.Series) -> float:
    s = s.dropna()
    return float(s.median()) if len(s) else float("nan")


# ---------------------------------------------------------------- cpu.saturated


def saturated(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Run queue above the CPU count with idle near 0, sustained: the CPU is the limit.

    vmstat `r` counts tasks running plus those waiting for a CPU; above the CPU count, work queues for
    CPU time. Idle is `id + wa`: iowait is idle time with IO outstanding, so a host busy waiting on
    disk is not CPU saturated. High `st` is time the hypervisor gave to other guests. Where PSI is
    captured and says a task waited for a CPU most of each second (`min_cpu_pressure_pct`), the run
    queue counts with idle and iowait above the bar too: they are gaps between bursts, the threads
    blocking on reads at once (the small-buffer-pool scenario at 16 threads: r 11-20 on 2 CPUs, PSI
    75-86 %, 11 of mariadbd's 16 active threads waiting for a CPU, and id + wa 10-15 %, which missed).
    """
    rule = "cpu.saturated"
    caps = [c for c in ds.of("vmstat") if len(c.frame)]
    if not caps:
        return Skipped(rule, "no vmstat capture")
    lim = th[rule]
    steps = steps_by_name(ds, sweep)
    by_host: dict[str | None, list[tuple[Capture, pd.DataFrame, int, str, float | None]]] = {}
    unknown_cpus = []
    for cap in caps:
        rows = interval_rows(cap)
        if rows.empty:
            continue
        known = ds.cpu_count(cap.host, cap.step)
        if known is None:
            unknown_cpus.append(cap.path)
            continue
        cpus, cpus_src = known
        idle = idle_pct("vmstat", rows)
        if idle.isna().all():
            idle = _mpstat_idle(ds, cap, rows)
            if idle is None:
                continue
        r = _num(rows["r"])
        psi = [c for c in ds.of("psi") if c.host == cap.host and c.step == cap.step]
        pressure = cpu_pressure_pct(psi, lim["min_samples"])
        pressed = pressure is not None and pressure >= lim["min_cpu_pressure_pct"]
        match = (r > lim["run_queue_per_cpu"] * cpus) & ((idle <= lim["max_idle_pct"]) | pressed)
        n = int(match.sum())
        if n >= lim["min_samples"] and n >= lim["min_share"] * len(rows):
            by_host.setdefault(cap.host, []).append(
                (cap, rows.assign(_match=match), cpus, cpus_src, pressure)
            )
    if not by_host and unknown_cpus and len(unknown_cpus) == len(caps):
        return Skipped(
            rule, "CPU count unknown: no nproc, sysstat banner, mpstat -P ALL, sar/sadf CPU or psutil capture"
        )
    out = []
    for host, hits in by_host.items():
        rows = pd.concat([h[1] for h in hits])
        cpus, cpus_src = hits[0][2], hits[0][3]
        r = _num(rows["r"])
        share = float(rows["_match"].mean())
        names = [h[0].step for h in hits if h[0].step]
        pressures = [h[4] for h in hits if h[4] is not None]
        ordered = sorted(names, key=lambda s: steps[s].threads if s in steps else 0)
        ev: dict[str, Any] = {
            "cpus": cpus,
            "cpus_source": cpus_src,
            "samples": len(rows),
            "saturated_samples": int(rows["_match"].sum()),
            "r_median": _median(r),
            "r_p90": float(r.dropna().quantile(0.9)),
            "r_per_cpu_median": _median(r) / cpus,
            "idle_pct_median": _median(_num(rows["id"])),
            "us_pct_median": _median(_num(rows["us"])),
            "sy_pct_median": _median(_num(rows["sy"])),
            "wa_pct_median": _median(_num(rows["wa"])),
            "st_pct_median": _median(_num(rows["st"])),
            # PSI cpu some, the median of the steps' medians (None: not captured)
            "cpu_pressure_pct_median": float(np.median(pressures)) if pressures else None,
            "source": ", ".join(h[0].path for h in hits),
        }
        if ordered:
            ev["steps"] = ", ".join(ordered)
            ev["first_saturated_step"] = ordered[0]
            if ordered[0] in steps:
                ev["first_saturated_threads"] = steps[ordered[0]].threads
        steal = ev["st_pct_median"] >= lim["high_steal_pct"]
        where = f" in steps {ev['steps']}" if ordered else ""
        critical = share >= lim["critical_share"] and ev["r_median"] >= lim["critical_queue_per_cpu"] * cpus
        split = (
            f"us {ev['us_pct_median']:.0f} / sy {ev['sy_pct_median']:.0f} / wa {ev['wa_pct_median']:.0f} / "
            f"st {ev['st_pct_median']:.0f} %"
        )
        explanation = (
            "vmstat's r counts the tasks running on a CPU plus those ready to run and waiting for one. "
            f"With more runnable tasks than the {cpus} CPUs and no idle time left, every request queues for "
            "CPU time: latency grows with concurrency while throughput stays flat, and a faster disk or "
            "network would not help. Idle here excludes iowait (time waiting for IO is not CPU work)."
        )
        if (
            ev["cpu_pressure_pct_median"] is not None
            and ev["cpu_pressure_pct_median"] >= lim["min_cpu_pressure_pct"]
        ):
            explanation += (
                " PSI (/proc/pressure/cpu) measures the queue directly: the share of each second some "
                "task was ready to run and waited for a CPU. Above half, idle or iowait left in the samples "
                "is gaps between bursts (threads blocking on IO at once, then all runnable again), not "
                "spare CPU."
            )
        if ev["sy_pct_median"] >= ev["us_pct_median"]:
            explanation += (
                " Kernel time (sy) is at least user time: the CPU goes to system calls, context switches "
                "and networking (many small queries, many threads) rather than to query execution."
            )
        if steal:
            explanation += (
                f" Steal is {ev['st_pct_median']:.0f} %: the hypervisor gives this guest's vCPUs to other "
                "guests, so part of the saturation is the host machine's, not this workload's."
            )
        next_steps = [
            "See who uses the CPU: pidstat -u -t 1 / top -H (per thread), then perf top -p <pid> or "
            "perf record -g -p <pid> on the busiest process for where the time goes.",
            "If the load generator runs on the same host, move it to another machine: it competes with "
            "the database for the same CPUs.",
            "Lower concurrency to about the CPU count (a connection pool or thread pool) or add CPUs; "
            "compare throughput per CPU before and after.",
        ]
        if steal:
            next_steps.insert(
                0,
                "Ask for dedicated vCPUs (no overcommit) or move the VM: check st over time "
                "with vmstat/mpstat while this guest is idle.",
            )
        out.append(
            Finding(
                rule=rule,
                severity="critical" if critical and not steal else "warning",
                hosts=_hosts(host),
                window=_window([h[1] for h in hits]),
                title=f"CPU saturated: run queue {ev['r_median']:.0f} on {cpus} CPUs, "
                f"{ev['idle_pct_median']:.0f}% idle",
                summary=(
                    f"{host or 'The host'} had a median run queue of {ev['r_median']:.0f} "
                    f"(p90 {ev['r_p90']:.0f}) on {cpus} CPUs with {ev['idle_pct_median']:.0f}% idle "
                    f"({split}) in "
                    f"{ev['saturated_samples']} of {len(rows)} samples{where}"
                    + (
                        f"; a task waited for a CPU {ev['cpu_pressure_pct_median']:.0f}% of the time (PSI)."
                        if ev["cpu_pressure_pct_median"] is not None
                        else "."
                    )
                ),
                evidence=ev,
                explanation=explanation,
                next_steps=next_steps,
            )
        )
    return out


# ---------------------------------------------------------------- cpu.hot-thread


def thread_groups(df: pd.DataFrame) -> pd.Series:
    """Process id for each thread row of top -H screens.

    top -H prints the TID in its PID column and no TGID. Threads of one process share its memory,
    so VIRT/RES/SHR (and the user) are the same on all of them: rows of one screen with the same
    four values are one process, whose PID is the main thread's TID, the lowest. Kernel threads (no
    memory) are each their own process. Two processes with identical sizes would merge; real ones
    rarely have them.
    """
    sizes = df[["virt_kb", "res_kb", "shr_kb"]].astype(float)
    kernel = sizes["virt_kb"].fillna(0) <= 0
    keys = [df["iteration"], df["user"], sizes["virt_kb"], sizes["res_kb"], sizes["shr_kb"]]
    lowest = df["pid"].groupby(keys, dropna=False).transform("min")
    return lowest.where(~kernel, df["pid"])


def own_cpu(df: pd.DataFrame, holds: bool | None) -> pd.Series:
    """The cpu_pct of top -H rows (iteration, pid: the TID, proc: `thread_groups`, time_s, cpu_pct),
    where a thread group leader's row holds its whole process's CPU, put right: what its other
    threads leave of it.

    procps-ng 4.0.0 to 4.0.3 print a multi-threaded process's leader under -H with the process's CPU
    (procps issue 280, fixed in 4.0.4; Debian 12 ships 4.0.2): an idle main thread at 99.9 % (one
    CPU, its cap), its TIME+ the sum of every thread's, those that exited included. `holds` is the
    capture's `TopExtras.leader_holds_process`, from top's version: True, every leader is put right;
    False, none. Unknown (None: a capture without its record), a leader is put right when its TIME+
    is at least its other threads' together in every screen. A leader that truly did more than all
    its threads over its life (an event loop beside idle helpers) meets that too, and keeps about all
    of its own: its helpers use little."""
    if holds is False:
        return df["cpu_pct"]
    leader = df["pid"] == df["proc"]
    key = [df["iteration"], df["proc"]]
    others_time = df["time_s"].where(~leader, 0.0).groupby(key).transform("sum")
    others_cpu = df["cpu_pct"].where(~leader, 0.0).groupby(key).transform("sum")
    # per leader, over the screens where rows of its threads are beside it (a process whose sizes
    # changed while top read it is split in that screen, its leader alone: no evidence either way)
    beside = leader & (others_time > 0)
    if holds:
        fix = beside
    else:
        total = (df["time_s"] >= others_time)[beside].groupby(df["proc"][beside]).all()
        fix = leader & df["proc"].isin(total.index[total.to_numpy(dtype=bool)])
    return df["cpu_pct"].where(~fix, (df["cpu_pct"] - others_cpu).clip(lower=0.0))


def threads_mode(cap: Capture) -> bool:
    """Whether a top capture is per thread (`-H`)."""
    return any(s.get("threads_mode") for s in cap.extras.summaries)


def thread_rows(cap: Capture, df: pd.DataFrame) -> pd.DataFrame:
    """`df`, rows of the top capture `cap`: under -H with each row's process (`proc`) and a leader row
    that holds its whole process put right (`own_cpu`); as it is otherwise."""
    if not threads_mode(cap):
        return df
    df = df.assign(proc=thread_groups(df))
    return df.assign(cpu_pct=own_cpu(df, cap.extras.leader_holds_process))


def _pinned(
    df: pd.DataFrame, lim: dict[str, Any], iterations: int
) -> tuple[pd.DataFrame, pd.Series, pd.Index]:
    """The hot rows, each thread's count of hot screens, and the threads pinned by them."""
    hot = df[_num(df["cpu_pct"]) >= lim["min_thread_cpu_pct"]]
    counts = hot.groupby("pid")["iteration"].nunique()
    pinned = counts[(counts >= lim["min_iterations"]) & (counts >= lim["min_share"] * iterations)].index
    return hot, counts, pinned


def hot_thread(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """One thread pinned near 100 % of a CPU while its process and the host have CPU to spare.

    Such a thread is a serial section (TiKV's raftstore or a gRPC poll thread, a single
    replication/flush thread, a single-threaded load generator): the workload cannot go faster than
    that thread however many CPUs are idle.
    """
    rule = "cpu.hot-thread"
    caps = [c for c in ds.of("top") if threads_mode(c)]
    if not caps:
        return Skipped(rule, "no top -H (per-thread) capture")
    lim = th[rule]
    steps = steps_by_name(ds, sweep)
    found: dict[tuple, dict[str, Any]] = {}
    for cap in caps:
        cols = ["iteration", "pid", "user", "virt_kb", "res_kb", "shr_kb", "cpu_pct", "time_s", "command"]
        df = cap.frame[cols].dropna(subset=["pid", "iteration"])
        if df.empty:
            continue
        # top's first screen shows %CPU since each task started, not over an interval
        if df["iteration"].max() > 0:
            df = df[df["iteration"] > 0]
        iterations = int(df["iteration"].nunique())
        if not len(_pinned(df, lim, iterations)[2]):
            continue
        # the expensive part, only for a capture with a pinned thread (putting a leader right only
        # lowers its CPU: a capture without one before has none after)
        df = thread_rows(cap, df)
        hot, counts, pinned = _pinned(df, lim, iterations)
        if not len(pinned):
            continue
        hot = hot[hot["pid"].isin(pinned)]
        mine = df[df["proc"].isin(hot["proc"].unique())]
        per_proc = mine.groupby(["iteration", "proc"]).agg(total=("cpu_pct", "sum"), threads=("pid", "size"))
        med = df[df["pid"].isin(pinned)].groupby("pid")["cpu_pct"].median()
        command = df.drop_duplicates("pid").set_index("pid")["command"]  # as first printed
        summaries = cap.extras.summaries
        idle = pd.Series({s["iteration"]: s.get("cpu_id") for s in summaries}, dtype=float)
        # a pinned thread also counted in another process in a screen where it was not hot (its
        # sizes read while they changed) gives that process no hot row: not a candidate
        for proc, hot_rows in hot.groupby("proc"):
            its = sorted(hot_rows["iteration"].unique())
            pp = per_proc.xs(proc, level="proc").loc[its]
            threads = int(pp["threads"].median())
            total = float(pp["total"].median())
            host_idle = _median(idle.reindex(its))
            hot_tids = sorted(hot_rows["pid"].unique())
            if not (host_idle >= lim["min_host_idle_pct"]):
                continue
            if threads > 1 and (
                len(hot_tids) > lim["max_hot_threads"] or total > threads * 100 - lim["min_headroom_pct"]
            ):
                continue
            # the hottest pinned thread speaks for the process; the others are listed
            tid = max(hot_tids, key=lambda t: (med[t], -t))
            ev: dict[str, Any] = {
                "process": str(command[proc]),
                "pid": int(proc),
                "thread": str(command[tid]),
                "tid": int(tid),
                "cpu_pct_median": float(med[tid]),
                "hot_iterations": int(counts[tid]),
                "iterations": iterations,
                "hot_share": int(counts[tid]) / iterations,
                "process_threads": threads,
                "process_cpu_pct_median": total,
                "host_idle_pct_median": host_idle,
                "hot_threads": len(hot_tids),
                "source": cap.path,
            }
            if len(hot_tids) > 1:
                ev["other_hot_threads"] = ", ".join(f"{command[t]} ({t})" for t in hot_tids if t != tid)
            key = (cap.host, ev["process"], ev["thread"])
            prev = found.get(key)
            ev_steps = ([cap.step] if cap.step else []) + (prev["_steps"] if prev else [])
            if prev is None or ev["cpu_pct_median"] > prev["ev"]["cpu_pct_median"]:
                found[key] = {"ev": ev, "host": cap.host, "_steps": ev_steps}
            else:
                prev["_steps"] = ev_steps
    out = []
    for (host, _proc, _thread), item in found.items():
        ev = item["ev"]
        names = sorted(set(item["_steps"]), key=lambda s: steps[s].threads if s in steps else 0)
        if names:
            ev["steps"] = ", ".join(names)
        single = ev["process_threads"] == 1
        who = (
            f"{ev['process']} (pid {ev['pid']}) is single-threaded and"
            if single
            else f"thread {ev['thread']} (tid {ev['tid']}) of {ev['process']} (pid {ev['pid']}, "
            f"{ev['process_threads']} threads, {ev['process_cpu_pct_median']:.0f}% CPU in total)"
        )
        out.append(
            Finding(
                rule=rule,
                severity="warning",
                hosts=_hosts(host),
                window=None,
                title=f"Hot thread: {ev['thread']} of {ev['process']} at {ev['cpu_pct_median']:.0f}% "
                "of one CPU",
                summary=(
                    f"{who} ran at a median {ev['cpu_pct_median']:.0f}% of one CPU, at or above "
                    f"{th[rule]['min_thread_cpu_pct']}% in {ev['hot_iterations']} of {ev['iterations']} "
                    f"top iterations, while the host was {ev['host_idle_pct_median']:.0f}% idle"
                    + (f" (steps {ev['steps']})." if names else ".")
                ),
                evidence=ev,
                explanation=(
                    "A thread can use at most one CPU. When one thread sits near 100% while the host "
                    "has idle CPUs and the process's other threads are far from busy, the work funnelled "
                    "through that thread is a serial section: throughput stops at what that one thread "
                    "can do, and more client concurrency only lengthens its queue. Typical cases are "
                    "TiKV's raftstore, apply or grpc-server threads, a single log-flush or replication "
                    "thread, a single-threaded server or load generator."
                ),
                next_steps=[
                    f"Profile the thread: perf top -t {ev['tid']} / perf record -t {ev['tid']} -g, or "
                    "pprof for Go and TiKV's /debug/pprof/profile, to see what it spends its time on.",
                    "Spread the work if the software allows it: TiKV raftstore.store-pool-size, "
                    "apply-pool-size, server.grpc-concurrency; MySQL innodb_*_io_threads, replica parallel "
                    "workers; several load-generator processes instead of one.",
                    "Check that the thread is not pinned with other busy threads to one CPU (taskset -p, "
                    "cgroup cpusets, IRQ affinity for softirq threads).",
                ],
            )
        )
    return out


# ---------------------------------------------------------------- cpu.context-switches


def _top_switchers(
    ds: Dataset, host: str | None, step: str | None, n: int = 3
) -> list[tuple[str, int, float]]:
    """(command, pid, context switches/s) of the processes pidstat -w saw switching most.

    Without `-t` pidstat reads /proc/PID/status, the main thread's counts: a multi-threaded server
    (mysqld, tikv-server) is under-counted there, so this names candidates, it does not rank them.
    """
    rows = []
    for cap in ds.of("pidstat"):
        if cap.host != host or cap.step != step or cap.frame.empty:
            continue
        df = cap.frame
        if "tid" in df.columns:
            df = df[df["tid"].isna()]  # whole-process rows; thread rows would count twice
        cs = df["cswch_s"].astype(float) + df["nvcswch_s"].astype(float)
        per = df.assign(_cs=cs).dropna(subset=["_cs"]).groupby(["pid", "command"])["_cs"].mean()
        rows.extend((str(cmd), int(pid), float(v)) for (pid, cmd), v in per.items())
    return sorted(rows, key=lambda r: -r[2])[:n]


def context_switches(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Context switches per transaction far above normal, or growing with concurrency.

    Each statement costs a few switches (the server thread wakes on the request, sleeps after the
    reply; a client on the same host adds its own). Far more per transaction means threads block and
    wake without doing work: blocking client libraries with many threads, lock convoys, a thread pool
    handing work around (seed 004: a blocking MySQL client switched so much that the load generator
    could not push the cluster until it moved to async IO).
    """
    rule = "cpu.context-switches"
    caps = [c for c in ds.of("vmstat") if len(c.frame)]
    if not caps:
        return Skipped(rule, "no vmstat capture")
    if sweep is None or not sweep.steps:
        return Skipped(rule, "no load-generator output: no throughput to divide context switches by")
    lim = th[rule]
    steps = steps_by_name(ds, sweep)
    per_host: dict[str | None, list[dict[str, Any]]] = {}
    for cap in caps:
        step = steps.get(cap.step) if cap.step else (sweep.steps[0] if len(sweep.steps) == 1 else None)
        rows = interval_rows(cap)
        if step is None or rows.empty or not (step.tps and step.tps > 0):
            continue
        cs = _median(_num(rows["cs"]))
        if not np.isfinite(cs):
            continue
        per_host.setdefault(cap.host, []).append(
            {"cap": cap, "rows": rows, "step": step, "cs": cs, "per_txn": cs / step.tps}
        )
    if not per_host:
        return Skipped(rule, "no vmstat capture matches a sweep step (cap.step vs the load output's step)")
    out = []
    for host, pts in per_host.items():
        pts.sort(key=lambda p: p["step"].threads)
        worst = max(pts, key=lambda p: p["per_txn"] if p["cs"] >= lim["min_cs_per_s"] else -1)
        first, last = pts[0], pts[-1]
        growth = last["per_txn"] / first["per_txn"] if len(pts) > 1 and first["per_txn"] > 0 else float("nan")
        high = worst["cs"] >= lim["min_cs_per_s"] and worst["per_txn"] >= lim["max_cs_per_txn"]
        grows = growth >= lim["growth_ratio"] and last["cs"] >= lim["min_cs_per_s"]
        if not (high or grows):
            continue
        at = worst if high else last
        metric = getattr(sweep, "metric", "tps")
        ev: dict[str, Any] = {
            "step": at["cap"].step,
            "threads": at["step"].threads,
            "cs_per_s_median": at["cs"],
            metric: at["step"].tps,
            "cs_per_txn": at["per_txn"],
            "cs_per_txn_by_step": ", ".join(
                f"{p['step'].threads}: {p['per_txn']:.0f} ({p['cs']:.0f}/s at {p['step'].tps:.1f} {metric})"
                for p in pts
            ),
            "source": at["cap"].path,
        }
        if len(pts) > 1:
            ev["cs_per_txn_growth"] = growth
            ev["lowest_step_cs_per_txn"] = first["per_txn"]
        top = _top_switchers(ds, host, at["cap"].step)
        if top:
            ev["top_switcher"] = f"{top[0][0]} (pid {top[0][1]})"
            ev["top_switcher_cs_per_s"] = top[0][2]
            ev["top_switchers"] = ", ".join(f"{c} ({p}): {v:.0f}/s" for c, p, v in top)
        why = (
            f"{at['per_txn']:.0f} context switches per transaction at {count(at['step'].threads, 'thread')} "
            f"({at['cs']:.0f}/s for {at['step'].tps:.1f} {metric})"
        )
        if grows:
            why += (
                f", {growth:.1f}x the {first['per_txn']:.0f} per transaction at "
                f"{count(first['step'].threads, 'thread')}"
            )
        out.append(
            Finding(
                rule=rule,
                severity="warning",
                hosts=_hosts(host),
                window=_window([at["rows"]]),
                title=f"{at['per_txn']:.0f} context switches per transaction",
                summary=f"{host or 'The host'} made {why}"
                + (f"; {ev['top_switchers']} switch most." if top else "."),
                evidence=ev,
                explanation=(
                    "A statement normally costs a handful of context switches: the server thread wakes on "
                    "the request and sleeps after the reply, and a client on the same host does the same. "
                    "Far more per transaction, or a count per transaction that grows with concurrency, "
                    "means threads block and wake without doing work: lock convoys (mutexes handed from "
                    "thread to thread), a blocking client library run with many threads, thread pools "
                    "passing each request along. The switches cost CPU (sy time) and latency, and the "
                    "throughput no longer follows the threads added."
                ),
                next_steps=[
                    "Find who switches: pidstat -w -t 1 (voluntary cswch/s = blocking, involuntary "
                    "nvcswch/s = preempted, too many runnable threads), perf sched record / perf sched "
                    "latency.",
                    "On the client side use an async driver or fewer connections with pipelining instead "
                    "of many blocking threads (seed 004: mysql crate -> async MySQL on tokio).",
                    "On the server, look for lock contention: MySQL performance_schema "
                    "events_waits_summary_global_by_event_name, SHOW ENGINE INNODB MUTEX; a thread pool "
                    "(thread_handling=pool-of-threads) caps the runnable threads.",
                ],
            )
        )
    return out


# ---------------------------------------------------------------- mem.swapping


def swapping(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Swap-in or swap-out during the load.

    vmstat `si`/`so` are KiB/s swapped in from / out to disk (procps's default unit). Swap-in means a
    thread touched memory that was on disk and waited for a read: latency spikes unrelated to the
    query. The psutil sampler's swap rates stand in when there is no vmstat.
    """
    rule = "mem.swapping"
    lim = th[rule]
    sources: list[tuple[Capture, pd.DataFrame]] = []
    for cap in ds.of("vmstat"):
        rows = interval_rows(cap)
        if len(rows):
            sources.append(
                (
                    cap,
                    pd.DataFrame(
                        {
                            "timestamp": rows["timestamp"],
                            "si": _num(rows["si"]),
                            "so": _num(rows["so"]),
                            "swpd": _num(rows["swpd"]),
                            "free": _num(rows["free"]),
                            "cache": _num(rows["cache"]),
                        }
                    ),
                )
            )
    vm_hosts = {c.host for c, _ in sources}
    for cap in ds.of("psutil"):
        df = cap.frame.dropna(subset=["swap_in_kb_s", "swap_out_kb_s"], how="all")
        if len(df) and cap.host not in vm_hosts:
            sources.append(
                (
                    cap,
                    pd.DataFrame(
                        {
                            "timestamp": df["timestamp"],
                            "si": df["swap_in_kb_s"],
                            "so": df["swap_out_kb_s"],
                            "swpd": df["swap_used_kb"],
                            "free": df["mem_available_kb"],
                            "cache": float("nan"),
                        }
                    ),
                )
            )
    if not sources:
        return Skipped(rule, "no vmstat or psutil capture")
    steps = steps_by_name(ds, sweep)
    by_host: dict[str | None, list[tuple[Capture, pd.DataFrame]]] = {}
    for cap, df in sources:
        swap = (df["si"] >= lim["min_kb_s"]) | (df["so"] >= lim["min_kb_s"])
        n = int(swap.sum())
        if n >= lim["min_samples"] and n >= lim["min_share"] * len(df):
            by_host.setdefault(cap.host, []).append((cap, df.assign(_swap=swap)))
    out = []
    for host, hits in by_host.items():
        df = pd.concat([h[1] for h in hits])
        sw = df[df["_swap"]]
        si_share = float((df["si"] >= lim["min_kb_s"]).mean())
        names = sorted(
            {h[0].step for h in hits if h[0].step}, key=lambda s: steps[s].threads if s in steps else 0
        )
        ev: dict[str, Any] = {
            "samples": len(df),
            "swapping_samples": len(sw),
            "si_kb_s_median": _median(df["si"]),
            "si_kb_s_max": float(df["si"].max()),
            "so_kb_s_median": _median(df["so"]),
            "so_kb_s_max": float(df["so"].max()),
            "swap_in_share": si_share,
            "swpd_kb_max": float(df["swpd"].max()),
            "free_kb_median": _median(sw["free"]),
            "cache_kb_median": _median(sw["cache"]),
            "source": ", ".join(h[0].path for h in hits),
        }
        if names:
            ev["steps"] = ", ".join(names)
        if any(h[0].kind == "psutil" for h in hits):
            ev["free_is"] = "available memory (psutil)"
        # the host could have kept every swapped page in RAM: its RAM did not push them out, a limit on
        # a group of processes did (a cgroup's memory.max: a container, a systemd slice), or one full
        # NUMA node
        ev["free_exceeds_swap"] = bool(ev["free_kb_median"] > ev["swpd_kb_max"])
        local = (
            " More memory was free than in swap: not the host's RAM but a memory limit on the swapping "
            "processes' cgroup (a container, a systemd slice) or one full NUMA node pushed them out."
            if ev["free_exceeds_swap"]
            else ""
        )
        out.append(
            Finding(
                rule=rule,
                severity="critical" if si_share >= lim["critical_si_share"] else "warning",
                hosts=_hosts(host),
                window=_window([h[1] for h in hits]),
                title=f"Swapping during the load: si up to {ev['si_kb_s_max']:.0f} KiB/s, "
                f"so up to {ev['so_kb_s_max']:.0f} KiB/s",
                summary=(
                    f"{host or 'The host'} swapped in {len(sw)} of {len(df)} samples (si median "
                    f"{ev['si_kb_s_median']:.0f}, max {ev['si_kb_s_max']:.0f} KiB/s; so median "
                    f"{ev['so_kb_s_median']:.0f}, max {ev['so_kb_s_max']:.0f} KiB/s) with "
                    f"{ev['free_kb_median'] / 1024:.0f} MiB free and "
                    f"{ev['swpd_kb_max'] / 1024:.0f} MiB in swap"
                    + (f" in steps {ev['steps']}." if names else ".")
                    + local
                ),
                evidence=ev,
                explanation=(
                    "Swap-in (si) means a process touched memory the kernel had written to disk, and the "
                    "thread waited for that read: random stalls of milliseconds that show up as latency "
                    "spikes and lost throughput unrelated to the queries. Swap-out (so) alone is the kernel "
                    "making room; it turns into swap-in as soon as the pages are needed again. A database "
                    "sized for more memory than the host has (buffer pool, block cache) does this under load."
                ),
                next_steps=[
                    *(
                        [
                            "Read the swapping processes' cgroup limit: the group in /proc/PID/cgroup, its "
                            "memory.max and memory.events (v2) or memory.limit_in_bytes and memory.failcnt "
                            "(v1); docker --memory, Kubernetes resources.limits.memory."
                        ]
                        if ev["free_exceeds_swap"]
                        else []
                    ),
                    "Find who uses the memory and who is swapped: ps aux --sort=-rss, "
                    "grep VmSwap /proc/*/status, smem -s swap.",
                    "Size the caches to fit: innodb_buffer_pool_size, TiKV storage.block-cache.capacity, "
                    "several instances per host share the RAM.",
                    "Keep the database out of swap: vm.swappiness=1 (or 0), memory limits per cgroup, "
                    "or more RAM; check NUMA imbalance (numastat) if one node is full while free memory "
                    "remains.",
                ],
            )
        )
    return out


RULES = {
    "cpu.saturated": saturated,
    "cpu.hot-thread": hot_thread,
    "cpu.context-switches": context_switches,
    "mem.swapping": swapping,
}

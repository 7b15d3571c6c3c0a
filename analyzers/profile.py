"""profile.hotspots: the functions that dominate perf and Go pprof CPU samples.

Per profile (one perf capture, folded or raw `perf script`, or one Go CPU / contention profile):
the top functions by flat (the sample was taken in the function) and by cum (the function was on
the stack). Idle samples (the kernel's idle task `swapper`, cpuidle/halt leaves) are left out of
perf profiles taken with -a: they say the CPU had nothing to do, not where time goes.

A flat share is only a warning when one function (or one family: locks, GC, syscalls, the
scheduler) takes a large share: then that function, not the code around it, is where the time
goes, and the family says what usually causes it.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped
from perfkit.parsers import folded as folded_parser
from perfkit.parsers import pprof as pprof_parser

_IDLE_COMMS = frozenset({"swapper"})
_IDLE_LEAF = re.compile(
    r"^(?:pv_native_safe_halt|native_safe_halt|default_idle|intel_idle|acpi_idle_do_entry|"
    r"acpi_safe_halt|poll_idle|mwait_idle.*|cpu_idle_poll|arch_cpu_idle|cpuidle_enter_state|do_idle)$"
)

# Function families and what a large flat share of them usually means. Order matters: the first
# family whose pattern matches a function claims it.
FAMILIES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "gc",
        re.compile(
            r"^runtime\.(?:gc\w*|scanobject|scanblock|scanstack|greyobject|findObject|markBits\w*|"
            r"heapBits\w*|wbBuf\w*|bulkBarrier\w*|sweepone|mallocgc\w*|memclrNoHeapPointers|"
            r"\(\*mspan\)\.\w+|\(\*mheap\)\.\w+|\(\*gcWork\)\.\w+|\(\*mcache\)\.\w+)$"
        ),
        "garbage collection and allocation: the program allocates fast enough that the collector "
        "runs often; fewer allocations (pooling, reuse) or GOGC/GOMEMLIMIT trade memory for CPU",
    ),
    (
        "lock",
        # Go's sync mutexes by their slow paths only: the fast path (an atomic, inlined into the
        # caller's Lock/Unlock frames) is time spent locking, not waiting; an uncontended loop of
        # Lock/Unlock is 82 % "in" them, a convoy of 8 goroutines on one mutex only 35 % (Go 1.26,
        # tests/test_profile_lab.py). Since Go 1.24 the mutex lives in internal/sync.
        re.compile(
            r"(?:^runtime\.(?:futex|lock2?|unlock2?|semacquire\w*|semrelease\w*|procyield\w*|osyield)$|"
            r"^(?:internal/)?sync\.(?:\(\*(?:RW)?Mutex\)\.\w*[sS]low|runtime_Sem\w+)$|"
            r"^__lll_lock_wait|^pthread_mutex_\w*lock|^futex_\w+|"
            r"spin_lock|^osq_lock$|^mutex_spin_on_owner$|^rwsem_\w+|^ut_delay$|^os_event_wait\w*|"
            r"^sync_array_\w+|^LWLockAcquire$|^s_lock$)"
        ),
        "lock contention: threads spin or sleep on a shared lock (a hot row/region, a global mutex, "
        "the InnoDB/RocksDB internals); adding threads adds waiting, not throughput",
    ),
    (
        "syscall",
        re.compile(
            r"^(?:syscall\.(?:Syscall6?|RawSyscall6?|syscall)|internal/runtime/syscall\.Syscall6|"
            r"runtime/internal/syscall\.Syscall6|entry_SYSCALL_64\w*|do_syscall_64|__x64_sys_\w+|"
            r"syscall)$"
        ),
        "system calls: many small reads/writes/sends per request; batching (bigger buffers, "
        "pipelining, group commit) cuts the per-call cost",
    ),
    (
        "scheduler",
        re.compile(
            r"^(?:runtime\.(?:findRunnable|findrunnable|schedule|stealWork|runqgrab|usleep|notesleep|"
            r"mcall|park_m|netpoll\w*)|schedule|__schedule|finish_task_switch\S*|pick_next_task\w*|"
            r"try_to_wake_up)$"
        ),
        "the scheduler: threads/goroutines hand work to each other and wake up for little work each; "
        "fewer threads or larger batches per wake-up",
    ),
    (
        "copy",
        re.compile(r"^(?:runtime\.memmove|memcpy\S*|__memcpy\S*|__memmove\S*|copy_user\w*|rep_movs\w*)$"),
        "copying memory: large values moved between buffers (serialisation, page cache copies)",
    ),
    (
        "sync-io",
        re.compile(r"(?:fsync|fdatasync|jbd2_\w+|ext4_sync_file|xfs_file_fsync|blkdev_issue_flush)"),
        "waiting on synchronous writes: each commit forces the log to disk",
    ),
)


def family(function: str) -> str | None:
    """The family a function belongs to (see FAMILIES), or None."""
    for name, pattern, _ in FAMILIES:
        if pattern.search(function):
            return name
    return None


def _meaning(fam: str | None) -> str:
    return next((m for n, _, m in FAMILIES if n == fam), "")


def _perf_profiles(ds: Dataset) -> list[dict[str, Any]]:
    out = []
    for cap in ds.of("folded") + ds.of("perf_script"):
        frame = cap.frame
        if frame.empty:
            continue
        idle = frame["comm"].isin(_IDLE_COMMS) | frame["leaf"].fillna("").str.match(_IDLE_LEAF)
        busy = frame[~idle.astype(bool)]
        total = int(frame["count"].sum())
        comms = busy.groupby("comm")["count"].sum().sort_values(ascending=False, kind="stable")
        fc = folded_parser.flat_cum(busy) if len(busy) else folded_parser.flat_cum(busy.iloc[:0])
        table = pd.DataFrame(
            {
                "function": fc["function"],
                "flat": fc["flat_samples"],
                "flat_pct": fc["flat_pct"],
                "cum": fc["cum_samples"],
                "cum_pct": fc["cum_pct"],
            }
        )
        ev: dict[str, Any] = {
            "profile": f"perf ({cap.kind})",
            "samples": total,
            "busy_samples": int(busy["count"].sum()),
            "idle_pct": (total - int(busy["count"].sum())) / total * 100 if total else float("nan"),
        }
        if len(comms):
            ev["comm_top"] = str(comms.index[0])
            ev["comm_top_pct"] = float(comms.iloc[0] / comms.sum() * 100)
        out.append(
            {"cap": cap, "table": table, "weight": int(busy["count"].sum()), "unit": "samples", "ev": ev}
        )
    return out


def _pprof_profiles(ds: Dataset) -> tuple[list[dict[str, Any]], list[str]]:
    out, others = [], []
    for cap in ds.of("pprof"):
        frame = cap.frame
        col = cap.extras.default_value_column
        if not col or frame.empty:
            continue
        if col == "cpu_nanoseconds":
            kind = "Go CPU profile"
        elif col == "delay_nanoseconds":
            kind = "Go contention profile (mutex/block)"
        else:
            others.append(f"{cap.path} ({col})")  # heap, allocs, goroutine: memory and state, not time
            continue
        table = pprof_parser.top(frame, col)
        total_ns = int(frame[col].abs().sum())
        ev: dict[str, Any] = {"profile": kind, "value_column": col, "value_total_s": total_ns / 1e9}
        if cap.extras.duration_ns:
            ev["duration_s"] = cap.extras.duration_ns / 1e9
            if kind == "Go CPU profile":
                ev["cpu_cores_busy"] = total_ns / cap.extras.duration_ns
        if "samples_count" in frame.columns:
            ev["samples"] = int(frame["samples_count"].sum())
        weight = int(ev.get("samples", frame[col].astype(bool).sum()))
        out.append({"cap": cap, "table": table, "weight": weight, "unit": col, "ev": ev})
    return out, others


def hotspots(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Per profile, the top functions by flat and cum share; a warning when one function or one
    family (locks, GC, syscalls, scheduler) takes a large flat share of the samples."""
    perf = _perf_profiles(ds)
    go, others = _pprof_profiles(ds)
    if not perf and not go:
        why = "no perf (folded / perf_script) capture and no Go CPU or contention pprof"
        return Skipped("profile.hotspots", why + (f"; only {', '.join(others)}" if others else ""))
    lim = th["profile.hotspots"]
    out = []
    for prof in perf + go:
        f = _finding(prof, lim)
        if f is not None:
            out.append(f)
    return out


def _finding(prof: dict[str, Any], lim: dict[str, Any]) -> Finding | None:
    cap, table, ev = prof["cap"], prof["table"], dict(prof["ev"])
    if table.empty or prof["weight"] < lim["min_samples"]:
        return None  # too few (busy) samples for percentages to mean anything
    n = int(lim["top_n"])
    # `[unknown]` is a frame perf could not symbolise: on most stacks, and naming nothing.
    table = table[table["function"] != "[unknown]"]
    if table.empty:
        return None
    for i, r in enumerate(table[table["flat"] > 0].head(n).itertuples(index=False), 1):
        ev[f"flat{i}_function"] = r.function
        ev[f"flat{i}_pct"] = float(r.flat_pct)
        ev[f"flat{i}_cum_pct"] = float(r.cum_pct)
    by_cum = table.sort_values(["cum", "function"], ascending=[False, True], kind="stable").head(n)
    for i, r in enumerate(by_cum.itertuples(index=False), 1):
        ev[f"cum{i}_function"] = r.function
        ev[f"cum{i}_pct"] = float(r.cum_pct)
    fams = table.assign(family=[family(str(fn)) for fn in table["function"]]).dropna(subset=["family"])
    fam_pct = fams.groupby("family")["flat_pct"].sum().sort_values(ascending=False, kind="stable")
    top = table.iloc[0]
    top_fam = family(str(top["function"]))
    if top_fam:
        ev["top_family"] = top_fam
    hot_fam = None
    if len(fam_pct) and fam_pct.iloc[0] >= lim["warn_family_flat_pct"]:
        hot_fam = str(fam_pct.index[0])
        ev["family"] = hot_fam
        ev["family_flat_pct"] = float(fam_pct.iloc[0])
    ev["source"] = cap.path
    one = float(top["flat_pct"]) >= lim["warn_flat_pct"]
    severity = "warning" if one or hot_fam else "info"
    who = f" (comm {ev['comm_top']})" if "comm_top" in ev else ""
    busy = "non-idle samples" if "busy_samples" in ev else "samples"
    summary = (
        f"{top['function']}{who} holds {top['flat_pct']:.1f}% of the {busy} of a {ev['profile']} "
        f"flat ({top['cum_pct']:.1f}% cum)"
    )
    if hot_fam:
        summary += f"; the {hot_fam} family {ev['family_flat_pct']:.1f}% flat"
    fam_text = f" Family {hot_fam}: {_meaning(hot_fam)}." if hot_fam else ""
    if not hot_fam and top_fam:
        fam_text = f" {top['function']} is in the {top_fam} family: {_meaning(top_fam)}."
    return Finding(
        rule="profile.hotspots",
        severity=severity,
        hosts=[cap.host] if cap.host else [],
        title=f"Hotspot: {top['function']} {top['flat_pct']:.0f}% flat ({ev['profile']})",
        summary=summary + ".",
        evidence=ev,
        explanation=(
            "Flat is the share of samples taken inside a function, cum the share with the function "
            "anywhere on the stack. A large flat share says the time is spent in that function itself: "
            "making it cheaper, or calling it less, is the lever; a large cum with small flat says the "
            "cost is in what it calls. When one function or one family dominates, adding concurrency "
            "mostly adds to it." + fam_text
        ),
        next_steps=[
            f"Open the profile around the hotspot: go tool pprof -top -cum / -peek '{top['function']}' "
            "for Go; perf report --no-children -S <symbol> -g caller for perf.",
            "Compare against a profile at a lower load step: a function whose share grows with the "
            "load is the one that stops the scaling.",
            "Look at the flame graph (report) for the callers that lead into it.",
        ],
    )


RULES = {"profile.hotspots": hotspots}

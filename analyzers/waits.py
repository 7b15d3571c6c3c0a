"""Where the threads wait: the thread sampler's counts turned into average threads by wait class,
per step, host and process (0x.tools' "average active threads by state, syscall and wait channel").

A thread sample is classed by what the kernel says the thread was doing:

- cpu: state R (on a CPU or runnable); with schedstat, split into `cpu` (on a CPU) and `cpu_wait`
  (runnable, waiting for one: the run delay).
- io: state D (uninterruptible: disk, fsync) unless its wait channel is a kernel lock; asleep in an IO
  syscall (fsync, fdatasync, io_submit, pread64, ...).
- lock: futex (user-space locks and condition variables: InnoDB mutexes, group commit, row locks),
  flock, fcntl, semop, and a futex wait resumed after a signal (restart_syscall in futex_do_wait);
  state D in a kernel mutex or rwsem.
- net: poll, select, epoll_wait, recv*, send*, accept, connect, and read/write asleep (sockets, pipes).
- idle: asleep on purpose: nanosleep, clock_nanosleep, pause, signal waits, waitpid; asleep waiting
  for asynchronous IO to complete (io_getevents, io_pgetevents, io_uring_enter in io_cqring_wait);
  and the kernel's io_uring workers (`iou-wrk-*`) asleep in io_wq_worker, waiting for work. A server
  keeps such threads whatever the load (MariaDB's io_uring reaper, MySQL's InnoDB IO handler
  threads; io-wq workers linger for seconds after a burst of writes), so they say nothing of its IO:
  a request waiting on its own IO is in state D (a worker doing IO for it too), or on a futex behind
  the completion thread. (MariaDB's reaper, 1.0 thread there at rest and under load alike, made
  `perfkit collect` during a CPU-bound load say the server waited on IO behind a ceiling above its
  15 %-busy disk; after a write-heavy run two idle io-wq workers did the same.) And state I, a kernel
  thread idle by its own account (TASK_IDLE: the kernel leaves it out of the load average): kdamond and
  kworkers waiting for work, chosen as the busiest on a host whose busy processes were all named; and
  any kernel thread in state S, asleep in its own loop until work comes (ksoftirqd in
  smpboot_thread_fn, jbd2 between commits, kswapd between reclaims): the small-buffer-pool scenario's
  two ksoftirqd, the busiest for the softirqs they ran, counted 0.88 active threads each. The work a
  kernel thread does for a request shows as R (softirqs, reclaim) or D (a journal commit's IO).
- other: anything else (an unknown syscall, one the sampler could not read).

What is active: a database parks background threads on futexes and sockets whatever the load, and
those are no wait of a request. With a sweep, for a process that lives through it (a server: the same
pid at every step; a load generator starts anew each step and all its threads are the load's), a
combination's *standing* part (the least average threads it held at any step of the sweep) is counted
as idle, and only what a step adds over it as active: 10 InnoDB threads parked on futexes at every
step are idle, the 15 more at 16 threads are commits waiting behind the log flush. The steps must run
two loads at least: steps of one thread count (`--repeat`) all hold the load's own waits. A sweep of
one thread count gets its other level from `perfkit run`'s rest window, the threads sampled with no
load before the first step (step `rest`, manifest.REST_STEP): one of the baseline's steps, never a
profile returned. (One step of point selects at 4 threads without it: the 7.4 threads on futexes,
11 at rest, were lock waits.) A thread in state D is never parked: always active. A capture outside
a sweep (`perfkit collect`), or one load without a rest window, has no such baseline: only the `idle`
class is idle then, the profile says so (`baseline: false`), and so does wait.profile's summary.

What tells an idle server there is the CPU it used: schedstat's CPU time, exact where the sampler
read it. An idle MariaDB's 6-8 background threads asleep on futexes, io_uring and poll used 0.0001
cores; the lightest real load seen here (40 write IOPS allowed to the server, 11 TPS) 0.008. Where no
load is known (no load generator's output: `perfkit collect` alone), a process below `IDLE_CPU_CORES`
served nothing (`served_nothing`): its waiting threads wait for no request, so neither wait.profile
nor io.throttled (analyzers/limits.py) judges it, and the report's table still shows them. With a
load, a server at no CPU is stalled, not idle (every session behind one lock): it is judged, its
standing threads taken out by the baseline. Without schedstat, R samples are too few to tell (a
process at 0.008 cores is on a CPU in 1 of 125 thread samples): judged.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from perfkit.dataset import Capture, Dataset
from perfkit.findings import Finding, Skipped, count
from perfkit.manifest import REST_STEP

from .sweep import load_spans

# Below this much CPU (schedstat, cores) over a window a process served nothing (module docstring).
IDLE_CPU_CORES = 0.002

CLASSES = ("cpu", "cpu_wait", "io", "lock", "net", "other", "idle")
ACTIVE = ("cpu", "cpu_wait", "io", "lock", "net", "other")
WAITING = ("cpu_wait", "io", "lock", "net", "other")  # active, not on a CPU
OFF_CPU = ("io", "lock", "net", "other")  # waiting for something else than a CPU

_IO_CALLS = frozenset(
    {
        "fsync",
        "fdatasync",
        "sync_file_range",
        "syncfs",
        "sync",
        "io_submit",
        "io_uring_enter",  # submitting; asleep for completions: _COMPLETION_WAITS
        "pread64",
        "pwrite64",
        "preadv",
        "pwritev",
        "preadv2",
        "pwritev2",
        "fallocate",
        "ftruncate",
        "msync",
    }
)
# (syscall, the wait channel it sleeps in for completions; "" for any): idle (module docstring)
_COMPLETION_WAITS = {"io_getevents": "", "io_pgetevents": "", "io_uring_enter": "io_cqring_wait"}
_IDLE_WCHANS = ("io_wq_worker",)  # an io_uring worker waiting for work, whatever its syscall field says
_LOCK_CALLS = frozenset({"futex", "flock", "fcntl", "semop", "semtimedop"})
_NET_CALLS = frozenset(
    {
        "poll",
        "ppoll",
        "select",
        "pselect6",
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "recvfrom",
        "recvmsg",
        "recvmmsg",
        "sendto",
        "sendmsg",
        "sendmmsg",
        "accept",
        "accept4",
        "connect",
        "read",
        "write",
        "readv",
        "writev",
    }
)
_IDLE_CALLS = frozenset(
    {
        "nanosleep",
        "clock_nanosleep",
        "pause",
        "rt_sigtimedwait",
        "rt_sigsuspend",
        "sigsuspend",
        "wait4",
        "waitid",
    }
)
_KERNEL_LOCK_WCHANS = ("mutex", "rwsem", "down_read", "down_write", "__down", "futex")


def wait_class(state: Any, syscall: Any, wchan: Any) -> str:
    """The class of one (state, syscall, wait channel) combination (module docstring)."""
    state = str(state) if isinstance(state, str) else ""
    call = str(syscall) if isinstance(syscall, str) else ""
    chan = str(wchan) if isinstance(wchan, str) else ""
    if state == "R":
        return "cpu"
    if state == "I":
        return "idle"
    if state == "D":
        return "lock" if any(k in chan for k in _KERNEL_LOCK_WCHANS) else "io"
    if state == "S" and call == "kernel":  # a kernel thread asleep in its loop, waiting for work
        return "idle"
    if (call in _COMPLETION_WAITS and _COMPLETION_WAITS[call] in chan) or chan.startswith(_IDLE_WCHANS):
        return "idle"
    if call in _IO_CALLS:
        return "io"
    if call in _LOCK_CALLS:
        return "lock"
    if call in _NET_CALLS:
        return "net"
    if call in _IDLE_CALLS:
        return "idle"
    if call == "restart_syscall":  # a sleep resumed after a signal: what it sleeps in says which
        return "lock" if "futex" in chan else ("idle" if "nanosleep" in chan else "other")
    return "other"


@dataclass
class WaitProfile:
    """Average threads of one process by wait class over one step (or one capture window)."""

    step: str | None
    threads: int | None  # the step's load threads
    host: str | None
    process: str
    pid: int
    selected: str  # "named" (a database, load generator, proxy or --watch) or "busiest"
    samples: int  # thread-state samples taken
    classes: dict[str, float]  # class -> average threads (active part; `idle` holds the rest)
    top: list[dict[str, Any]] = field(default_factory=list)  # combinations, most threads first
    baseline: bool = False  # whether the sweep gave a standing baseline (module docstring)
    total_threads: float = 0.0  # every thread sampled, idle included
    cpu_measured: bool = False  # `cpu` is schedstat's CPU time (cores), not R samples

    @property
    def served_nothing(self) -> bool:
        """Under `IDLE_CPU_CORES` of measured CPU: its waiting threads wait for no request."""
        return self.cpu_measured and self.classes["cpu"] < IDLE_CPU_CORES

    @property
    def active(self) -> float:
        return sum(self.classes.get(c, 0.0) for c in ACTIVE)

    def dominant_wait(self, classes: tuple[str, ...] = WAITING) -> tuple[str, float] | None:
        """The waiting class holding the most threads, with its average threads."""
        waits = [(c, self.classes.get(c, 0.0)) for c in classes]
        best = max(waits, key=lambda cw: cw[1])
        return best if best[1] > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "threads": self.threads,
            "host": self.host,
            "process": self.process,
            "pid": self.pid,
            "selected": self.selected,
            "samples": self.samples,
            "baseline": self.baseline,
            "classes": {c: round(self.classes.get(c, 0.0), 3) for c in CLASSES},
            "top": self.top,
        }


def profiles(ds: Dataset, sweep: Any | None = None, top_n: int = 8) -> list[WaitProfile]:
    """Every process's wait profile per step (the `threads` captures), in step and host order; the
    rest window only sets the baseline (module docstring)."""
    step_threads = ds.step_threads()
    spans = load_spans(ds)
    raw: list[tuple[WaitProfile, pd.DataFrame]] = []
    for cap in ds.of("threads"):
        frame = _during_load(ds, cap, spans.get(cap.step or ""))
        if frame.empty:
            continue
        state = frame[frame["record"] == "state"]
        sched = frame[frame["record"] == "sched"]
        if state.empty:
            continue
        samples = int(state.drop_duplicates("timestamp")["samples"].sum())
        if samples <= 0:
            continue
        for (pid, process), rows in state.groupby(["pid", "process"], sort=True):
            combos = (
                rows.groupby(["state", "syscall", "wchan", "thread"], dropna=False)["count"].sum() / samples
            ).rename("avg")
            combos = combos.reset_index()
            combos["wait"] = [
                wait_class(s, c, w)
                for s, c, w in zip(combos["state"], combos["syscall"], combos["wchan"], strict=True)
            ]
            mine = sched[sched["pid"] == pid]
            p = WaitProfile(
                step=cap.step,
                threads=step_threads.get(cap.step),
                host=cap.host,
                process=str(process),
                pid=int(pid),
                selected=str(rows["selected"].iloc[0]),
                samples=samples,
                classes={},
                total_threads=float(combos["avg"].sum()),
            )
            _cpu_split(p, combos, mine)
            raw.append((p, combos))
    _apply_baseline(raw)
    for p, combos in raw:
        shown = combos.sort_values("avg", ascending=False, kind="stable").head(top_n)
        p.top = [
            {
                "state": _text(r.state),
                "syscall": _text(r.syscall),
                "wchan": _text(r.wchan),
                "thread": _text(r.thread),
                "class": r.wait,
                "avg_threads": round(float(r.avg), 3),
            }
            for r in shown.itertuples(index=False)
        ]
    return [p for p, _ in raw if p.step != REST_STEP]


def _during_load(ds: Dataset, cap: Capture, span: tuple[pd.Timestamp, pd.Timestamp] | None) -> pd.DataFrame:
    """A step's intervals sampled while its load ran (an interval's middle within the load's span, on
    the controller's clock): a sampler that started late on a loaded host (3.5 s after the start of a
    3 s load, in a full run of the lab tests), or sampled on after the load, would average the idle
    server into the step. Without the load's times (a window, the rest, a foreign archive): all."""
    frame = cap.frame
    if span is None or frame.empty:
        return frame
    rec = ds.records.get(cap.path)
    offset = pd.Timedelta(seconds=(rec.clock_offset_s if rec else None) or 0)
    middle = frame["timestamp"] - offset - pd.to_timedelta(frame["interval_s"].fillna(0) / 2, unit="s")
    return frame[((middle >= span[0]) & (middle <= span[1])).to_numpy(bool)]


def _cpu_split(p: WaitProfile, combos: pd.DataFrame, sched: pd.DataFrame) -> None:
    """Class totals; state R split by schedstat into on-CPU and run-queue time where it was read."""
    totals = combos.groupby("wait")["avg"].sum()
    p.classes = {c: float(totals.get(c, 0.0)) for c in CLASSES}
    if sched.empty or sched["cpu_s_per_s"].isna().all():
        return
    per_interval = sched.groupby("timestamp")[["cpu_s_per_s", "run_delay_s_per_s"]].sum()
    on_cpu, queued = (
        float(per_interval["cpu_s_per_s"].mean()),
        float(per_interval["run_delay_s_per_s"].mean()),
    )
    if math.isfinite(on_cpu) and math.isfinite(queued):
        # R samples not on a CPU were waiting for one: in the run queue (run delay) or throttled by
        # a cgroup quota (a throttled thread stays R but is off every run queue: no run delay)
        runnable = p.classes["cpu"]
        p.classes["cpu"], p.classes["cpu_wait"] = on_cpu, max(queued, runnable - on_cpu)
        p.cpu_measured = True


def _apply_baseline(raw: list[tuple[WaitProfile, pd.DataFrame]]) -> None:
    """Move each combination's standing part (its least average threads over the sweep's steps and
    its rest window, per host and process; 0 when a step lacks it) from its class to `idle`."""
    seen: dict[tuple, dict[tuple, list[float]]] = {}
    steps: dict[tuple, int] = {}
    levels: dict[tuple, set] = {}  # the loads the steps ran: two at least, or the rest and one
    key_of = _baseline_keys([p for p, _ in raw])
    for p, combos in raw:
        key = key_of[id(p)]
        if p.step is None or key is None:
            continue
        steps[key] = steps.get(key, 0) + 1
        levels.setdefault(key, set()).add(p.step if p.step == REST_STEP else p.threads or p.step)
        for combo, avg in zip(_combos(combos), combos["avg"], strict=True):
            seen.setdefault(key, {}).setdefault(combo, []).append(float(avg))
    for p, combos in raw:
        key = key_of[id(p)]
        # steps of one load (`--repeat` of one thread count) all hold the load's waits: none is standing
        if p.step is None or key is None or len(levels.get(key, ())) < 2:
            continue
        p.baseline = True
        for combo, wait in zip(_combos(combos), combos["wait"], strict=True):
            avgs = seen[key][combo]
            standing = min(avgs) if len(avgs) == steps[key] else 0.0
            # D is never parked: a thread in uninterruptible IO waits for the request it serves
            if standing > 0 and wait not in ("cpu", "idle") and combo[0] != "D":
                p.classes[wait] = max(0.0, p.classes[wait] - standing)
                p.classes["idle"] += standing


def _baseline_keys(profs: list[WaitProfile]) -> dict[int, tuple | None]:
    """The process each profile is across the steps, or None when it has no baseline: a server keeps
    its pid through the sweep and parks threads at every step; a load generator starts anew each step
    (a new pid) and every thread of it is the load's, so nothing of it is standing."""
    steps_of: dict[tuple, set] = {}
    for p in profs:
        steps_of.setdefault((p.host, p.process, p.pid), set()).add(p.step)
    keys: dict[int, tuple | None] = {}
    for p in profs:
        own = (p.host, p.process, p.pid)
        keys[id(p)] = own if len(steps_of[own]) > 1 else None
    return keys


def _combos(combos: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    return [
        (_text(a), _text(b), _text(c), _text(d))
        for a, b, c, d in zip(
            combos["state"], combos["syscall"], combos["wchan"], combos["thread"], strict=True
        )
    ]


def _text(value: Any) -> str:
    return (
        ""
        if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA
        else str(value)
    )


# ---------------------------------------------------------------- the rule

_WHY = {
    "lock": (
        "on locks (futex: InnoDB mutexes and row locks, or commits queued behind the log flush)",
        [
            "Look at what the lock waits are: SHOW ENGINE INNODB STATUS (semaphores, lock waits), "
            "performance_schema wait summaries, Innodb_row_lock_waits; TiDB/TiKV lock and latch metrics.",
            "If commits wait on the log flush (an IO-bound log writer), see io.throttled / disk findings: "
            "group commit, innodb_flush_log_at_trx_commit, a faster log device.",
            "Hot rows: spread the writes (more rows, smaller transactions), or batch them.",
        ],
    ),
    "io": (
        "on IO (fsync, pwrite, reads in uninterruptible sleep)",
        [
            "Check the device's latency and limits (iostat await, the cgroup's io.max / blkio.throttle.*, "
            "a cloud volume's IOPS cap): see disk.* and io.throttled.",
            "Fewer synchronous writes per transaction (group commit, flush settings), or a faster device.",
        ],
    ),
    "net": (
        "on the network (poll, recv: waiting for clients or for another tier)",
        [
            "For a database this is waiting for the next request (client think time, a slow or "
            "overloaded client, a proxy) or for another tier (TiDB → TiKV RPCs): compare the tiers' RTs.",
            "Check the load generator's host and the path between the tiers.",
        ],
    ),
    "cpu_wait": (
        "for a CPU (runnable, in the run queue)",
        [
            "The CPU is the limit: see cpu.saturated or cpu.throttled (a cgroup quota) for why.",
            "Fewer runnable threads than CPUs (a smaller pool), or more CPU.",
        ],
    ),
    "other": (
        "in other system calls",
        ["Look at the top rows (syscall, wait channel) for what they are."],
    ),
}


def wait_profile(ds: Dataset, sweep: Any | None, th: dict[str, dict[str, Any]]) -> list[Finding] | Skipped:
    """Most of the database's active threads wait off the CPU (on locks, IO, the network) rather than
    run or queue for a CPU, at or past the knee: the verdict says *why* throughput stops growing."""
    from .io import category

    profs = profiles(ds, sweep)
    if not profs and any(len(c.frame) for c in ds.of("threads") if c.step != REST_STEP):
        return Skipped("wait.profile", "the thread sampler took no sample while a step's load ran")
    if not profs:
        return Skipped("wait.profile", "no thread-state capture (perfkit's thread sampler: `threads`)")
    lim = th["wait.profile"]
    db = [p for p in profs if category(p.process) == "database"]
    if not db:
        return Skipped("wait.profile", "no database process among the sampled ones")
    knee = getattr(sweep, "knee_threads", None)
    out = []
    for key, group in _by_process(db).items():
        judged = [p for p in group if knee is None or (p.threads or 0) >= knee]
        if knee is None and any(p.threads for p in group):
            judged = [max(group, key=lambda p: p.threads or 0)]
        hits = []
        for p in judged:
            if sweep is None and p.served_nothing:
                continue  # no load, no CPU: its waiting threads are parked (module docstring)
            active = p.active
            # waiting for a CPU is the CPU's story (cpu.saturated, cpu.throttled): here, the rest
            waiting = sum(p.classes.get(c, 0.0) for c in OFF_CPU)
            if active >= lim["min_active_threads"] and waiting >= lim["min_wait_share"] * active:
                hits.append((p, waiting / active))
        # a wait that explains the ceiling holds where the load is heaviest: a server that waited at a
        # lighter step only (another instance's background flush or purge, CI) explains nothing
        if hits and judged and hits[-1][0] is judged[-1]:
            out.append(_finding(key, group, hits))
    return out


def _by_process(profs: list[WaitProfile]) -> dict[tuple, list[WaitProfile]]:
    """The profiles of one process over the steps: a server by its pid, a load generator (a new pid
    each step) by its name, unless another process of that name ran in the same step (a scenario's
    throwaway MariaDB beside the lab's own: one step, two servers)."""
    keys = _baseline_keys(profs)
    named = Counter((p.host, p.process, p.step) for p in profs)
    grouped: dict[tuple, list[WaitProfile]] = {}
    for p in profs:
        alone = named[(p.host, p.process, p.step)] == 1
        key = keys[id(p)] or ((p.host, p.process) if alone else (p.host, p.process, p.pid))
        grouped.setdefault(key, []).append(p)
    return {k: sorted(v, key=lambda p: (p.threads or 0, p.step or "")) for k, v in grouped.items()}


def _finding(key: tuple, group: list[WaitProfile], hits: list[tuple[WaitProfile, float]]) -> Finding:
    p, share = hits[-1]  # the highest step that waits
    dominant, dominant_threads = p.dominant_wait(OFF_CPU) or ("other", 0.0)
    why, steps_next = _WHY[dominant]
    lowest = group[0]
    growth = dominant_threads - lowest.classes.get(dominant, 0.0) if lowest is not p else None
    top = [t for t in p.top if t["class"] == dominant][:3]
    where = f"at {count(p.threads, 'thread')}" if p.threads else (f"in step {p.step}" if p.step else "")
    rows = "; ".join(
        f"{t['syscall'] or t['state']} in {t['wchan'] or '-'} ({t['avg_threads']:.1f} in all)" for t in top
    )
    since = f", {growth:+.1f} since the lowest step" if growth is not None else ""
    summary = (
        f"{where.capitalize() + ', ' if where else ''}{p.process} (pid {p.pid}) had {p.active:.1f} active "
        f"threads on average, {share * 100:.0f}% of them waiting off the CPU "
        f"({p.classes.get('cpu', 0.0):.2f} on a CPU); most wait {why}: {dominant_threads:.1f} threads{since}"
        + (f" ({rows})." if rows else ".")
        + (
            ""
            if p.baseline
            else " With no lighter step nor rest window to compare with, the threads it parks whatever "
            "the load are counted among them."
        )
    )
    return Finding(
        rule="wait.profile",
        severity="warning",
        title=f"{p.process}'s threads wait {why.split(' (')[0]}, not on a CPU",
        summary=summary,
        evidence={
            "process": p.process,
            "pid": p.pid,
            "step": p.step,
            "threads": p.threads,
            "active_threads": p.active,
            "waiting_share": share,
            "dominant": dominant,
            "dominant_threads": dominant_threads,
            "classes": {c: round(v, 3) for c, v in p.classes.items()},
            "top": [[t["state"], t["syscall"], t["wchan"], t["avg_threads"]] for t in top],
            "per_step": [
                [q.threads, q.step, round(q.active, 2), (q.dominant_wait() or ("-", 0.0))[0]] for q in group
            ],
            "baseline": p.baseline,
        },
        hosts=[p.host] if p.host else [],
        explanation=(
            "The thread sampler reads every thread's state, system call and kernel wait channel several "
            "times a second (0x.tools' method). Threads that are active but not on a CPU wait for "
            "something: the class that holds most of them is what the requests queue for. Threads parked "
            "at every load level (background pools) are counted as idle; what a step adds over them is the "
            "load's own waiting."
        ),
        next_steps=steps_next,
    )


RULES = {"wait.profile": wait_profile}

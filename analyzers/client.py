"""client.saturated: the load generator's own host, not the system under test, sets the ceiling.

A load generator that runs out of CPU cannot send requests faster, so the system under test looks idle
while throughput flattens (seeds/001: TiKV at 10 % CPU with one go-ycsb host as the limit; sysbench
issues #51/#482: the client's CPU caps the TPS). Two signs, read on the host that ran the load (the
`host` of its sysbench/go-ycsb/go-tpc records; a local `perfkit run` records `localhost` for the load
and the OS captures alike):

- the host: CPU idle (idle + iowait, vmstat or mpstat) near zero, or a vmstat run queue well above its
  CPU count (threads waiting for a CPU, so every request starts late) that PSI confirms where it was
  captured (/proc/pressure/cpu `some`: the share of time a task waited, against vmstat's one instant);
- the load process itself (top): its CPU at the limit of what its threads (or the CPUs) can use — a
  client that is its own bottleneck even on an otherwise idle machine.

Judged per sweep step (captures of the same `step` as the load output); the since-boot first vmstat
line and top's first screen (CPU since the task started) are left out.

With several load hosts (`perfkit run --client-host a,b`) each is judged on its own run of each step,
at its own share of the step's threads, and a finding per saturated host says which one limits the
sweep: the first to saturate (the step with the fewest threads; ties: the busiest). The others keep
their findings, each naming that one.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Finding, Skipped, count

from . import waits
from .cpu import cpu_pressure_pct, idle_pct, thread_rows, threads_mode
from .io import category
from .sweep import LOAD_KINDS

RULE = "client.saturated"
# the load process's name in top's COMMAND (as printed, or the start of a command line with -c)
_PROCESS = {
    "sysbench": re.compile(r"^(\S*/)?sysbench\b"),
    "goycsb": re.compile(r"^(\S*/)?(go-)?ycsb\b"),
    "gotpc": re.compile(r"^(\S*/)?go-tpc\b"),
}


@dataclass
class _Step:
    host: str
    step: str | None
    kind: str
    threads: int | None
    sources: list[str] = field(default_factory=list)
    cpus: int | None = None
    idle_pct: float | None = None
    idle_from: str = ""
    runq: float | None = None
    cpu_pressure_pct: float | None = None  # PSI cpu some: the share of time a task waited for a CPU
    samples: int = 0
    window: tuple[str, str] | None = None
    proc_cpu_pct: float | None = None
    proc_threads: int | None = None
    proc_limit_pct: float | None = None
    top_other: str | None = None
    top_other_cpu_pct: float | None = None
    quota_cores: float | None = None  # the load process's cgroup CPU quota, where it has one
    cpus_allowed: int | None = None  # the CPUs it may run on, where fewer than the host's (affinity)
    waits_on_server: float | None = None  # its active threads' share waiting on the network (sampler)
    active_threads: float | None = None
    step_threads: int | None = None  # the step's, of which `threads` is this host's share


def saturated(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """The load-generator host is CPU/run-queue bound, or the load process uses all the CPU it can."""
    loads = [(k, c) for k in LOAD_KINDS for c in ds.of(k)]
    if not loads:
        return Skipped(RULE, "no load-generator output (sysbench, go-ycsb or go-tpc)")
    hosts = sorted({c.host for _, c in loads if c.host})
    if not hosts:
        return Skipped(RULE, "the load generator's host is unknown (no manifest records its host)")
    os_kinds = ("vmstat", "mpstat", "top", "nproc", "psi")
    if not any(c.host in hosts for k in os_kinds[:3] for c in ds.of(k)):
        return Skipped(
            RULE, f"no vmstat, mpstat or top capture of the load-generator host ({', '.join(hosts)})"
        )
    lim = th[RULE]
    threads_of, step_threads = _threads_by_source(sweep)
    profiles = [p for p in waits.profiles(ds, sweep) if category(p.process) == "load generator"]
    out: list[Finding] = []
    for host in hosts:
        judged = []
        for kind, cap in loads:
            if cap.host != host:
                continue
            if sweep is not None and cap.path not in threads_of:
                continue  # a load run the sweep left out (failed, interrupted): no measure of the client
            st = _Step(host, cap.step, kind, threads_of.get(cap.path), sources=[cap.path])
            st.step_threads = step_threads.get(cap.path)
            known = ds.cpu_count(host, cap.step)
            st.cpus = known[0] if known else None
            same = [c for k in os_kinds for c in ds.of(k) if c.host == host and c.step == cap.step]
            _measure(st, same, lim)
            _quota(st, [c for c in ds.of("cgroup") if c.host == host and c.step == cap.step])
            _affinity(st, [c for c in ds.of("affinity") if c.host == host and c.step == cap.step])
            _waits(st, [p for p in profiles if p.host == host and p.step == cap.step])
            judged.append(st)
        # a busy host is not the load's ceiling while the load's own threads wait on the server
        hot = [
            s
            for s in judged
            if _process_bound(s, lim) or (_host_bound(s, lim) and not _waits_on_server(s, lim))
        ]
        if hot:
            out.append(_finding(hot, judged, lim))
    return _name_the_limit(out, hosts) if len(hosts) > 1 and out else out


def _threads_by_source(sweep: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Each load run's threads, and its step's (several load hosts: a host runs its share of the step's)."""
    own: dict[str, int] = {}
    step: dict[str, int] = {}
    for s in sweep.steps if sweep is not None else []:
        for c in s.clients or [{"source": s.source, "threads": s.threads}]:
            own[c["source"]], step[c["source"]] = c["threads"], s.threads
    return own, step


def _name_the_limit(found: list[Finding], hosts: list[str]) -> list[Finding]:
    """Several load hosts: the one that saturates first limits the sweep; every finding says which."""
    first = min(
        (f.evidence for f in found),
        key=lambda e: (e["step_threads"] or 0, -(e["load_process_cpu_pct_median"] or 0)),
    )
    calm = [h for h in hosts if h not in {f.evidence["host"] for f in found}]
    rest = f" Not saturated: {', '.join(calm)}." if calm else ""
    out = []
    for f in found:
        mine = f.evidence is first
        limit = (
            f" Of the {len(hosts)} load hosts it saturates first: it limits the sweep."
            if mine
            else f" {first['host']} saturated first, at {count(first['step_threads'], 'thread')}: "
            "it limits the sweep."
        )
        evidence = {**f.evidence, "load_hosts": hosts, "limits_the_sweep": mine}
        out.append(dataclasses.replace(f, summary=f.summary + limit + rest, evidence=evidence))
    return out


def _measure(st: _Step, caps: list[Capture], lim: dict[str, Any]) -> None:
    by = {k: [c for c in caps if c.kind == k] for k in ("vmstat", "mpstat", "top", "nproc", "psi")}
    vm = pd.concat([c.frame[~c.frame["since_boot"].astype(bool)] for c in by["vmstat"]] or [pd.DataFrame()])
    if len(vm) >= lim["min_samples"]:
        st.idle_pct = float(idle_pct("vmstat", vm).median())
        st.idle_from = "vmstat id + wa"
        st.runq = float(vm["r"].astype(float).median())
        st.samples = len(vm)
        st.window = _window(vm)
        st.sources += [c.path for c in by["vmstat"]]
    else:
        alls = pd.concat([c.frame[c.frame["cpu"] == "all"] for c in by["mpstat"]] or [pd.DataFrame()])
        if len(alls) >= lim["min_samples"]:
            st.idle_pct = float(idle_pct("mpstat", alls).median())
            st.idle_from = "mpstat all %idle + %iowait"
            st.samples = len(alls)
            st.window = _window(alls)
            st.sources += [c.path for c in by["mpstat"]]
    for c in by["top"]:
        _process(st, c, lim)
    st.cpu_pressure_pct = cpu_pressure_pct(by["psi"], lim["min_samples"])
    if st.cpu_pressure_pct is not None:
        st.sources += [c.path for c in by["psi"]]


def _process(st: _Step, cap: Capture, lim: dict[str, Any]) -> None:
    """The load process's CPU per top screen (its threads summed under -H), median over screens."""
    df = cap.frame[cap.frame["iteration"] > 0]  # screen 0: CPU since each task started
    if df["iteration"].nunique() < lim["min_samples"] - 1 or df.empty:
        return
    per_thread = threads_mode(cap)
    cmd = df["command"].fillna("").str.strip()
    mine = df[cmd.str.match(_PROCESS[st.kind])]
    if mine.empty:
        return
    df = thread_rows(cap, df)  # a leader row that holds its whole process's CPU counted once
    mine = df.loc[mine.index]
    # under -H, its threads that ran in the screen: an idle main thread (sysbench's) adds no ceiling
    ran = mine["cpu_pct"] > 0
    per = mine.assign(ran=ran).groupby("iteration").agg(cpu=("cpu_pct", "sum"), n=("ran", "sum"))
    # a process's threads each use at most one CPU: under -H the rows are its threads; a per-process
    # top shows only the total, so its threads are the configured workers (sysbench adds none that work)
    n = int(per["n"].median()) if per_thread else st.threads
    caps = [x for x in (n, st.cpus) if x]
    st.proc_cpu_pct = float(per["cpu"].median())
    st.proc_threads = n
    st.proc_limit_pct = float(min(caps) * 100) if caps else None
    others = df[~df.index.isin(mine.index)]
    if len(others):
        by = others.assign(name=cmd[others.index].str.split().str[0]).groupby(["iteration", "name"])[
            "cpu_pct"
        ]
        med = by.sum().groupby("name").median().sort_values(ascending=False)
        st.top_other, st.top_other_cpu_pct = str(med.index[0]), float(med.iloc[0])
    st.sources.append(cap.path)


def _host_bound(s: _Step, lim: dict[str, Any]) -> bool:
    if s.idle_pct is not None and s.idle_pct <= lim["max_idle_pct"]:
        return True
    queued = s.runq is not None and bool(s.cpus) and s.runq >= lim["min_runq_per_cpu"] * s.cpus  # type: ignore[operator]
    # vmstat's r is one instant a second, the instant every 1 s capture (top, pidstat, iotop, mpstat)
    # wakes too: 4 on 2 CPUs at 45 % idle beside a 1-thread sysbench, where PSI's delta says a task
    # waited for a CPU 3 % of the time. Where PSI is captured, it confirms the queue or not.
    return queued and (s.cpu_pressure_pct is None or s.cpu_pressure_pct >= lim["min_cpu_pressure_pct"])


def _quota(st: _Step, caps: list[Capture]) -> None:
    """The load process's cgroup CPU quota (the `cgroup` capture at the step's start), in cores: a
    client limited by a quota is at its ceiling at that quota, not at its threads or the host's CPUs."""
    for cap in caps:
        rows = pd.DataFrame(cap.frame)
        rows = rows[rows["process"].map(lambda name: category(str(name)) == "load generator")]
        cpu = rows[(rows["controller"] == "cpu") & ~rows["unlimited"].fillna(False).astype(bool)]
        quota = cpu.loc[cpu["key"] == "quota_usec", "value"]
        period = cpu.loc[cpu["key"] == "period_usec", "value"]
        if len(quota) and len(period) and float(period.iloc[0]) > 0:
            st.quota_cores = float(quota.iloc[0]) / float(period.iloc[0])
            limit = st.quota_cores * 100
            st.proc_limit_pct = min(st.proc_limit_pct, limit) if st.proc_limit_pct else limit
            st.sources.append(cap.path)
            return


def _affinity(st: _Step, caps: list[Capture]) -> None:
    """The CPUs the load process may run on (the `affinity` capture: taskset, numactl, a cpuset),
    where fewer than the host's: pinned, it is at its ceiling on those, not on its threads or the
    host's CPUs, and the host's other CPUs may sit idle meanwhile."""
    for cap in caps:
        rows = cap.frame[cap.frame["process"].map(lambda name: category(str(name)) == "load generator")]
        allowed = rows["cpu_count"].dropna()
        if len(allowed) and (not st.cpus or int(allowed.min()) < st.cpus):
            st.cpus_allowed = int(allowed.min())
            limit = st.cpus_allowed * 100.0
            st.proc_limit_pct = min(st.proc_limit_pct, limit) if st.proc_limit_pct else limit
            st.sources.append(cap.path)
            return


def _waits(st: _Step, profs: list[waits.WaitProfile]) -> None:
    """How much of the load process's active time waits on the network: on the server's replies."""
    active = sum(p.active for p in profs)
    if profs and active > 0:
        st.active_threads = active
        st.waits_on_server = sum(p.classes.get("net", 0.0) for p in profs) / active


def _waits_on_server(s: _Step, lim: dict[str, Any]) -> bool:
    return s.waits_on_server is not None and s.waits_on_server >= lim["min_server_wait_share"]


def _process_bound(s: _Step, lim: dict[str, Any]) -> bool:
    if s.proc_cpu_pct is None or not s.proc_limit_pct:
        return False
    return s.proc_cpu_pct >= lim["min_process_share_pct"] / 100 * s.proc_limit_pct


def _window(df: pd.DataFrame) -> tuple[str, str] | None:
    ts = df["timestamp"].dropna() if "timestamp" in df else pd.Series(dtype=object)
    return (ts.min().isoformat(), ts.max().isoformat()) if len(ts) else None


def _finding(hot: list[_Step], judged: list[_Step], lim: dict[str, Any]) -> Finding:
    first = min(hot, key=lambda s: (s.threads or 0, s.step or ""))
    proc_bound = _process_bound(first, lim)
    host_bound = _host_bound(first, lim)
    tool = {"sysbench": "sysbench", "goycsb": "go-ycsb", "gotpc": "go-tpc"}[first.kind]
    at = (
        f"at {count(first.threads, 'thread')}"
        if first.threads
        else (f"in step {first.step}" if first.step else "")
    )
    if first.threads and first.step_threads and first.step_threads != first.threads:
        at = f"at {first.threads} of the step's {count(first.step_threads, 'thread')}"
    parts = []
    if first.idle_pct is not None:
        parts.append(f"CPU idle {first.idle_pct:.0f}%")
    if first.runq is not None:
        parts.append(f"run queue {first.runq:.0f}" + (f" on {first.cpus} CPUs" if first.cpus else ""))
    if first.cpu_pressure_pct is not None:
        parts.append(f"a task waiting for a CPU {first.cpu_pressure_pct:.0f}% of the time (PSI)")
    if first.proc_cpu_pct is not None:
        limit = f" of a possible {first.proc_limit_pct:.0f}%" if first.proc_limit_pct else ""
        quota = f" (its cgroup's quota: {first.quota_cores:.2f} cores)" if first.quota_cores else ""
        if first.cpus_allowed:
            quota += f" (allowed to run on {count(first.cpus_allowed, 'CPU')} of {first.cpus or '?'})"
        parts.append(f"{tool} itself at {first.proc_cpu_pct:.0f}% CPU{limit}{quota}")
    shared = (
        f" The host is shared: {first.top_other} used {first.top_other_cpu_pct:.0f}% CPU beside the load."
        if host_bound
        and not proc_bound
        and first.top_other
        and (first.top_other_cpu_pct or 0) > (first.proc_cpu_pct or 0)
        else ""
    )
    ev: dict[str, Any] = {
        "host": first.host,
        "tool": tool,
        "step": first.step,
        "threads": first.threads,
        "step_threads": first.step_threads or first.threads,
        "cpus": first.cpus,
        "idle_pct_median": first.idle_pct,
        "idle_from": first.idle_from or None,
        "run_queue_median": first.runq,
        "cpu_pressure_pct_median": first.cpu_pressure_pct,
        "samples": first.samples,
        "load_process_cpu_pct_median": first.proc_cpu_pct,
        "load_process_threads": first.proc_threads,
        "load_process_cpu_limit_pct": first.proc_limit_pct,
        "busiest_other_process": first.top_other,
        "busiest_other_cpu_pct_median": first.top_other_cpu_pct,
        "host_bound": host_bound,
        "process_bound": proc_bound,
        "load_process_quota_cores": first.quota_cores,
        "load_process_cpus_allowed": first.cpus_allowed,
        "load_process_active_threads": first.active_threads,
        "load_process_server_wait_share": first.waits_on_server,
        "saturated_steps": [s.step or s.threads for s in sorted(hot, key=lambda s: s.threads or 0)],
        "steps_judged": len(judged),
        "sources": first.sources,
    }
    return Finding(
        rule=RULE,
        severity="critical" if proc_bound else "warning",
        title=f"The load generator's host {first.host} is CPU-bound {at}".strip(),
        summary=(
            f"On {first.host}, which ran {tool}, {at} {', '.join(parts)} "
            f"({len(hot)} of {len(judged)} steps like this): the client cannot send requests any faster."
            f"{shared}"
        ).replace("  ", " "),
        evidence=ev,
        window=first.window,
        hosts=[first.host],
        explanation=(
            "A load generator short of CPU issues each request late: its threads wait for a CPU before "
            "sending and again before reading the reply, so the measured RT includes client-side "
            "queueing and throughput stops at what the client can drive, not what the server can serve "
            "(the servers then show idle CPU, as TiKV at 10% did in seeds/001). "
            + (
                f"Here {tool}'s own threads use all the CPU they can: the client process is the ceiling."
                if proc_bound
                else "Here the host's CPUs are used up; whoever uses them, the load is throttled."
            )
            + (
                f" It may run on {count(first.cpus_allowed, 'CPU')} only (taskset, numactl or a cpuset): "
                "the host's other CPUs cannot help it."
                if first.cpus_allowed
                else ""
            )
        ),
        next_steps=[
            *(
                [f"Let {tool} run on more CPUs: check taskset -p PID, numactl and the cpuset of its cgroup."]
                if first.cpus_allowed
                else []
            ),
            "Run the load from more or bigger client machines (several go-ycsb/sysbench hosts) and check "
            "that throughput rises.",
            "Keep the load generator off the database hosts; pin it away from the server's CPUs.",
            f"Check the client's own cost per request: {tool} options (report interval, histogram, "
            "lua script work), connection reuse instead of reconnects.",
        ],
    )


RULES = {RULE: saturated}

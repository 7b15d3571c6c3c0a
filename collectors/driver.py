"""The sweep driver behind `perfkit run`: one load step per thread count, the hosts captured during
every step, the database sampled throughout, all in one archive.

For each step: the captures start on every host (session.capture, files under
`hosts/<host>/<step>/`) and, once their windows are open, the load generator runs for the step's
time with per-second reports into `load/<step>/<tool>.out`; the step ends when both are done. Then
a cool-down waits (bounded) until this machine's TIME_WAIT sockets to the database are back to
where they were before the step, so the next step does not start against a port table the last
one filled. The database sampler (`db/<host>/global_status.jsonl`) runs from the first step to
the last. Ctrl-C (or SIGTERM, SIGHUP) stops the running step and keeps every finished one.

A step is judged from the load generator's parsed output (load_sysbench.judge). A failed step
ends the sweep (`on_failure="stop"`, the default: a dead database fails every later step too)
or is skipped over (`"continue"`); a degraded step (errors, reconnects, zero-TPS seconds) is kept
and the sweep goes on.

With several load hosts (`run_sweep` given a runner per host) a step's threads are split across
them (`split_threads`: even, the remainder to the first ones) and their tools started at one moment
(`_load.StartGate`), each writing `load/<step>/<tool>@<host>.out`; the step ends when every one has.
The spread of their starts is the step's `start_skew_s`; each host's threads, figures and status are
in its `clients`, its TPS is their sum (latency: `analyzers.sweep.combine_clients`). A host whose
run fails fails the step, named in its reason, and ends the others' runs at once (what they wrote is
kept); the cool-down waits for every host's TIME_WAIT sockets.

`collectors/plan.py` (`run_plan`) calls `run_sweep` with a checked `SweepPlan`; `Plan` and
`Adaptive` refuse a bad value with a `PlanError` naming the `perfkit run` option it came from.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from perfkit.archive import MANIFEST, PACKED_SUFFIXES, check_new_output, pack
from perfkit.errors import ConfigError
from perfkit.findings import count
from perfkit.manifest import REST_S, REST_STEP, Manifest, StepOutcome, SweepRun
from perfkit.transport import HostSpec, end_local_jobs

from . import db_snapshot, session
from ._load import ERROR_SHARE, LoadHost, LoadResult, NotStarted, StartGate
from .mysql_sampler import DbTarget, StatusSampler

TIME_WAIT_SHARE = 0.1  # cool down while TIME_WAIT holds more than this share of the ephemeral ports
OPEN_TIMEOUT_S = 120  # how long the load waits for the captures' windows to open


class LoadRunner(Protocol):
    tool: str  # the program, and the name of its output file: load/<step>/<tool>.out
    kind: str  # the parser that reads that output
    version: str | None
    host: LoadHost  # where it runs

    # with several load hosts it is also given `gate=` (a `_load.StartGate`: start with the others)
    def run(self, threads: int, time_s: int, out: Path, *, stop: object | None = None) -> Any: ...


class PlanError(ConfigError, ValueError):
    """A sweep that cannot run as planned. `option` is the `perfkit run` option at fault, spelled as
    on the command line (the CLI turns it into a usage error naming it), None when no option sets it."""

    def __init__(self, option: str | None, reason: str):
        self.option, self.reason = option, reason
        super().__init__(f"{option}: {reason}" if option else reason)


@dataclass(frozen=True)
class Adaptive:
    """Search for the peak instead of a fixed list: double from `start` with short probing steps
    until throughput has clearly passed its peak (below the best by more than `noise_pct` on two
    consecutive steps), p95 breaks `p95_sla_ms`, errors appear, or `max_threads`; then measure the
    levels halfway (geometrically) between the best step and its neighbours for the full time."""

    start: int = 1
    max_threads: int = 1024
    p95_sla_ms: float | None = None
    noise_pct: float = 5.0
    probe_share: float = 0.25  # a probing step lasts this share of the full time (at least 3 s)

    def __post_init__(self) -> None:
        if not (1 <= self.start <= self.max_threads):
            raise PlanError("--start-threads/--max-threads", "adaptive: need 1 ≤ start ≤ max threads")
        if not (0 < self.probe_share <= 1) or self.noise_pct < 0:
            raise PlanError(None, "adaptive: probe share in (0, 1], noise ≥ 0")


@dataclass(frozen=True)
class Plan:
    """What to sweep. Everything here goes in the manifest (it holds no secret)."""

    threads: tuple[int, ...] = ()
    time_s: int = 60
    warmup_s: int = 0
    cooldown_max_s: float = 30
    on_failure: str = "stop"  # stop | continue
    adaptive: Adaptive | None = None
    # Rounds of the thread list (1, 4, 16, 1, 4, 16, ...): each step run this many times, the load tool
    # started afresh each time, so a sweep holds its own run-to-run spread (`perfkit compare` judges
    # a change against it); a drift over the sweep falls on every thread count alike.
    repeats: int = 1
    # Seconds of thread sampling with no load before a sweep of one thread count (`_rest`); 0: none
    rest_s: int = REST_S

    def __post_init__(self) -> None:
        if self.adaptive is None and (not self.threads or any(t < 1 for t in self.threads)):
            raise PlanError("--threads", "threads: one or more positive counts")
        if len(set(self.threads)) != len(self.threads):
            raise PlanError("--threads", "threads: a count appears twice")
        if self.time_s < 1:
            raise PlanError("--time", "a step lasts at least 1 s")
        for option, value in (("--warmup", self.warmup_s), ("--cooldown-max", self.cooldown_max_s)):
            if value < 0:
                raise PlanError(option, "must be ≥ 0 s")
        if self.rest_s < 0:
            raise PlanError("--rest", "must be ≥ 0 s")
        if self.on_failure not in ("stop", "continue"):
            raise PlanError("--on-failure", "on_failure: stop or continue")
        if self.repeats < 1 or (self.repeats > 1 and self.adaptive is not None):
            raise PlanError("--repeat", "at least 1, and repeats need a --threads list (not --adaptive)")

    def check_split(self, hosts: int) -> None:
        """PlanError unless every step can give each of `hosts` load hosts a thread (`split_threads`)."""
        if self.adaptive is not None and self.adaptive.start < hosts:
            raise PlanError("--start-threads", _too_few(self.adaptive.start, hosts))
        low = min(self.threads, default=hosts)
        if self.adaptive is None and low < hosts:
            raise PlanError("--threads", _too_few(low, hosts))


SPLIT_RULE = "split evenly across the load hosts, the remainder to the first ones"


def split_threads(threads: int, hosts: int) -> tuple[int, ...]:
    """A step's threads per load host: an even split, the remainder to the first ones (10 over 3:
    4, 3, 3). PlanError when some host would get none."""
    if threads < hosts:
        raise PlanError("--threads", _too_few(threads, hosts))
    q, r = divmod(threads, hosts)
    return tuple(q + (i < r) for i in range(hosts))


def _too_few(threads: int, hosts: int) -> str:
    return (
        f"a step of {count(threads, 'thread')} cannot be split across {hosts} load hosts "
        "(each runs at least one): give every step at least as many threads as --client-host names hosts"
    )


@dataclass
class SweepResult:
    path: Path
    run: Manifest  # as written, but for a reason added when packing failed
    steps: list[StepOutcome] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest as JSON (what `manifest.json` holds)."""
        return self.run.to_dict()

    @property
    def exit_code(self) -> int:
        status = self.run.status
        return {"complete": session.EXIT_OK, "interrupted": session.EXIT_INTERRUPTED}.get(
            status, session.EXIT_FAILED if status == "failed" else session.EXIT_PARTIAL
        )


class FixedPlanner:
    """The plan's thread list, in order, `repeats` rounds of it."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.todo = [(t, r) for r in range(1, plan.repeats + 1) for t in plan.threads]
        self.stopped_because = "every planned step ran"

    def next(self, done: list[StepOutcome]) -> StepOutcome | None:
        if not self.todo:
            return None
        return self._step(*self.todo.pop(0))

    def pending(self) -> list[StepOutcome]:
        return [self._step(t, r) for t, r in self.todo]

    def _step(self, threads: int, round_no: int) -> StepOutcome:
        name = step_name(threads) + (f"r{round_no}" if self.plan.repeats > 1 else "")
        return StepOutcome(name, threads, time_s=self.plan.time_s)


class AdaptivePlanner:
    """Doubling probes, then refinement around the best step (see `Adaptive`)."""

    def __init__(self, plan: Plan):
        assert plan.adaptive is not None
        self.plan, self.a = plan, plan.adaptive
        self.probe_s = max(3, round(plan.time_s * self.a.probe_share))
        self.refining: list[int] | None = None
        self.stopped_because = ""

    def next(self, done: list[StepOutcome]) -> StepOutcome | None:
        ran = [s for s in done if s.status in ("ok", "degraded") and s.tps is not None]
        if self.refining is None:
            why = self._why_stop(done, ran)
            if not why:
                t = done[-1].threads * 2 if done else self.a.start
                return StepOutcome(step_name(t), t, time_s=self.probe_s, role="probe")
            self.stopped_because = why
            self.refining = self._refine_levels(ran, {s.threads for s in done})
        if self.refining:
            t = self.refining.pop(0)
            return StepOutcome(step_name(t), t, time_s=self.plan.time_s, role="refine")
        return None

    def pending(self) -> list[StepOutcome]:
        return []

    def _why_stop(self, done: list[StepOutcome], ran: list[StepOutcome]) -> str:
        if not done:
            return ""
        last = done[-1]
        if last.status not in ("ok", "degraded") or last.tps is None:
            return f"the step at {last.threads} threads {last.status}: {last.reason}"
        if last.errors is not None and last.errors > ERROR_SHARE:
            return f"errors appeared at {last.threads} threads ({100 * last.errors:.1f} % of transactions)"
        sla = self.a.p95_sla_ms
        if sla is not None and last.lat_pct_ms is not None and last.lat_pct_ms > sla:
            return f"p95 {last.lat_pct_ms:g} ms at {last.threads} threads breaks the {sla:g} ms SLA"
        best = max(ran, key=lambda s: s.tps or 0)
        floor = (best.tps or 0) * (1 - self.a.noise_pct / 100)
        if len(ran) >= 2 and all((s.tps or 0) < floor for s in ran[-2:]) and ran[-2].threads > best.threads:
            a, b = ran[-2], ran[-1]
            return (
                f"throughput passed its peak: {a.tps:.1f} and {b.tps:.1f} at {a.threads} and {b.threads} "
                f"threads are more than {self.a.noise_pct:g} % below {best.tps:.1f} at {best.threads}"
            )
        if last.threads * 2 > self.a.max_threads:
            return f"the next step would pass --max-threads {self.a.max_threads}"
        return ""

    def _refine_levels(self, ran: list[StepOutcome], tried: set[int]) -> list[int]:
        if not ran:
            return []
        levels = sorted({s.threads for s in ran})
        best = max(ran, key=lambda s: s.tps or 0).threads
        i = levels.index(best)
        out = []
        for other in (levels[i - 1] if i > 0 else None, levels[i + 1] if i + 1 < len(levels) else None):
            if other is None:
                continue
            mid = round((best * other) ** 0.5)
            if mid not in tried and mid not in out and mid not in (best, other):
                out.append(mid)
        return sorted(out)


def step_name(threads: int) -> str:
    return f"t{threads:04d}"


def run_sweep(
    runner: LoadRunner | Sequence[LoadRunner],
    plan: Plan,
    out: Path,
    *,
    hosts: list[HostSpec],
    opts: session.Options,
    db: DbTarget | None = None,
    plan_record: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    stop: session.Stop | None = None,
    connector: Callable[[HostSpec], session.Transport] = session.connect,
) -> SweepResult:
    """Run the sweep into `out` (a new directory, or a .tar.gz) with `runner`, or a runner per load
    host. `opts` gives the capture set, the interval and the run id; its window is set per step.
    Raises PerfkitError for the output location, PlanError for steps the load hosts cannot split."""
    clients = list(runner) if isinstance(runner, Sequence) else [runner]
    plan.check_split(len(clients))
    lead = clients[0]
    stop = stop or session.Stop()
    t_start = time.monotonic()
    packed = out.name.endswith(PACKED_SUFFIXES)
    check_new_output(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    session.check_free_space(out.parent, what=str(out.parent))
    say = session.best_effort(progress) or (lambda _msg: None)
    old_umask = os.umask(0o077)
    restore = session.on_stop_signals(stop)
    try:
        staging = Path(tempfile.mkdtemp(prefix="perfkit-run-", dir=out.parent)) if packed else None
        root = staging / opts.run_id if staging else out
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        reserve = root / session.RESERVE
        reserve.write_bytes(b"\0" * session.RESERVE_BYTES)
        created = session._now()
        records: dict[str, list[session.Record]] = {h.name: [] for h in hosts}
        outcomes = {h.name: session.HostOutcome(h.name) for h in hosts}
        extra: list[dict] = []
        planner = AdaptivePlanner(plan) if plan.adaptive else FixedPlanner(plan)
        steps: list[StepOutcome] = []
        sampler = None
        if db is not None:
            rel = f"db/{db.name}/global_status.jsonl"
            sampler = StatusSampler(db, root / rel)
            sampler.start()
        port = db.port if db is not None else 3306
        baselines = [c.host.time_wait_to(port) for c in clients]
        aborted = False
        try:
            _rest(root, hosts, opts, plan, stop, connector, records, outcomes)
            while not stop.is_set() and (step := planner.next(steps)) is not None:
                if steps:
                    _cool_down(steps[-1], clients, port, plan.cooldown_max_s, stop, baselines)
                    if stop.is_set():
                        break
                steps.append(step)
                say(f"step {len(steps)}: {step.threads} threads for {step.time_s}s ({step.role})")
                extra += _run_step(
                    clients, plan, step, root, hosts, opts, stop, connector, records, outcomes, db=db
                )
                say(f"step {step.name}: {step.status}{' — ' + step.reason if step.reason else ''}")
                if step.status == "failed" and plan.on_failure == "stop" and not plan.adaptive:
                    planner.stopped_because = f"the step at {step.threads} threads failed"
                    break
        except KeyboardInterrupt:  # the second Ctrl-C
            stop.trigger("interrupted")
            aborted = True
            end_local_jobs()  # the step's threads are left behind: their processes here are not
        finally:
            if sampler is not None:
                sampler.stop()
                extra.append(_file_record(root, rel, db.name, "mysql_status", "SHOW GLOBAL STATUS every 1s"))
                extra[-1].update(
                    status="ok" if sampler.samples else "failed",
                    reason=sampler.last_error if sampler.errors else "",
                    samples=sampler.samples,
                    failed_samples=sampler.errors,
                )
        for s in planner.pending() if not stop.is_set() else []:
            s.status, s.reason = "skipped", "an earlier step failed"
            steps.append(s)
        if stop.is_set():
            steps += [dataclasses.replace(s, status="skipped", reason="stopped") for s in planner.pending()]
        for s in steps:
            if s.status == "pending":
                s.status, s.reason = "interrupted", stop.said()
        reserve.unlink(missing_ok=True)
        manifest = session._manifest(
            hosts, opts, created, records, outcomes, stop=stop, aborted=aborted, extra_records=extra
        )
        manifest.window_s = None  # one window per step: see sweep.steps
        manifest.sweep = sweep = SweepRun(
            tool=lead.tool,
            tool_version=lead.version,
            plan={**asdict(plan), "threads": list(plan.threads), **(plan_record or {})},
            adaptive=plan.adaptive is not None,
            steps=copy.deepcopy(steps),
            stopped_because=stop.said() if stop.is_set() else planner.stopped_because,
            load_s=round(sum(s.load_s + s.warmup_s for s in steps), 3),
            cooldown_s=round(sum(s.cooldown_s for s in steps), 3),
        )
        manifest.status, manifest.reason = _run_status(manifest, steps, stop)
        wall = time.monotonic() - t_start
        sweep.wall_s = round(wall, 3)
        sweep.overhead_s = round(wall - sweep.load_s - sweep.cooldown_s, 3)
        (root / MANIFEST).write_text(json.dumps(manifest.to_dict(), indent=1) + "\n", encoding="utf-8")
        final = root
        if packed and not aborted:
            try:
                pack(root, out)
                shutil.rmtree(staging, ignore_errors=True)
                final = out
            except OSError as exc:
                why = f"not packed ({exc.strerror}): see {root}"
                manifest.reason = f"{manifest.reason}; {why}" if manifest.reason else why
        return SweepResult(final, manifest, steps, wall)
    finally:
        restore()
        os.umask(old_umask)


def _run_step(
    clients: list[LoadRunner],
    plan: Plan,
    step: StepOutcome,
    root: Path,
    hosts: list[HostSpec],
    opts: session.Options,
    stop: session.Stop,
    connector: Callable[[HostSpec], session.Transport],
    records: dict[str, list[session.Record]],
    outcomes: dict[str, session.HostOutcome],
    *,
    db: DbTarget | None = None,
) -> list[dict]:
    step.started_at = session._now()
    split = split_threads(step.threads, len(clients))
    warmups: list[dict] = []
    if plan.warmup_s:
        t0 = time.monotonic()
        warm = _load(clients, split, plan.warmup_s, root, step.name, stop, suffix="-warmup")
        step.warmup_s = round(time.monotonic() - t0, 3)
        for runner, (rel, res) in zip(clients, warm, strict=True):
            # kept and listed, under its own kind so the sweep model does not count it as a step
            rec = _file_record(root, rel, runner.host.name, f"{runner.kind}_warmup", res.command)
            rec.update(step=step.name, started_at=_iso(res.started_at), ended_at=_iso(res.ended_at))
            warmups.append(rec)
    # the captures' last reports land at the window's end (captures.py `{reports}`): the window is the load's
    step_opts = _with(opts, window=step.time_s, step=step.name)
    opened = threading.Event()
    captured: list[session.Captured] = []
    capture = threading.Thread(
        target=lambda: captured.append(
            session.capture(hosts, root, step_opts, stop=stop, connector=connector, window_open=opened)
        ),
        name=f"capture-{step.name}",
        daemon=True,
    )
    capture.start()
    late = ""
    if hosts and not opened.wait(OPEN_TIMEOUT_S):
        late = f"captures' windows did not open within {OPEN_TIMEOUT_S}s; load ran anyway"
    # the database's own view (lock waits, InnoDB, wait summaries, variables) near the load's start and end
    snaps = db_snapshot.StepSnapshots([db], root, step.name, step.time_s) if db is not None else None
    if snaps is not None:
        snaps.start()
    t0 = time.monotonic()
    loads = _load(clients, split, step.time_s, root, step.name, stop)
    step.load_s = round(time.monotonic() - t0, 3)
    snapshots = [_snapshot_record(root, t, step.name) for t in snaps.finish()] if snaps is not None else []
    capture.join()
    _keep(captured, records, outcomes, step.name)
    _judge_step(step, clients, split, [res for _rel, res in loads], stop)
    if late:
        step.reason = "; ".join(x for x in (step.reason, late) if x)
    step.ended_at = session._now()
    out = []
    for runner, threads, (rel, load) in zip(clients, split, loads, strict=True):
        rec = _file_record(root, rel, runner.host.name, runner.kind, load.command)
        rec.update(
            redacted=load.redacted,
            step=step.name,
            started_at=_iso(load.started_at),
            ended_at=_iso(load.ended_at),
            exit_code=load.exit_code,
            timed_out=load.timed_out,
            tool_version=runner.version,
            status="ok" if load.status in ("ok", "degraded") else load.status,
            reason=load.reason,
            threads=threads,
        )
        out.append(rec)
    return warmups + out + snapshots


def _rest(
    root: Path,
    hosts: list[HostSpec],
    opts: session.Options,
    plan: Plan,
    stop: session.Stop,
    connector: Callable[[HostSpec], session.Transport],
    records: dict[str, list[session.Record]],
    outcomes: dict[str, session.HostOutcome],
) -> None:
    """The servers' threads before any load, as step REST_STEP: the thread sampler alone for
    `plan.rest_s`. What a server parks whatever the load (background pools on futexes, the io_uring
    reaper) is told from the load's own waits by it (analyzers/waits.py). Only a sweep of one thread
    count needs it: steps at two or more counts show it themselves (the least each combination held),
    and such a sweep spends no time on it."""
    specs = tuple(s for s in opts.specs if s.id == "threads")
    one_count = plan.adaptive is None and len(set(plan.threads)) == 1
    if not hosts or not specs or not plan.rest_s or not one_count or stop.is_set():
        return
    rest = _with(opts, window=plan.rest_s, step=REST_STEP, specs=specs, sampler=False, pprof=(), tidb_zip=())
    _keep([session.capture(hosts, root, rest, stop=stop, connector=connector)], records, outcomes, REST_STEP)


def _keep(
    captured: list[session.Captured],
    records: dict[str, list[session.Record]],
    outcomes: dict[str, session.HostOutcome],
    name: str,
) -> None:
    """A window's records and outcomes merged into the sweep's."""
    for cap in captured:
        for host, recs in cap.records.items():
            records.setdefault(host, []).extend(recs)
        for host, o in cap.outcomes.items():
            _merge_outcome(outcomes.setdefault(host, session.HostOutcome(host)), o, name)


class _StepEnd:
    """The stop a multi-host step's runs watch: the run's own, or a load host's run failing, which
    ends the others' with it (a step without one host's load measures nothing)."""

    def __init__(self, stop: session.Stop):
        self.stop = stop
        self.failed: list[str] = []

    def is_set(self) -> bool:
        return self.stop.is_set() or bool(self.failed)


def _load(
    clients: list[LoadRunner],
    split: tuple[int, ...],
    time_s: int,
    root: Path,
    step: str,
    stop: session.Stop,
    *,
    suffix: str = "",
) -> list[tuple[str, LoadResult]]:
    """Each load host's run of the step, (its output's path in the archive, its result), in order."""
    if len(clients) == 1:
        rel = f"load/{step}/{clients[0].tool}{suffix}.out"
        return [(rel, clients[0].run(split[0], time_s, root / rel, stop=stop))]
    rels = [f"load/{step}/{c.tool}{suffix}@{c.host.name}.out" for c in clients]
    gate, ended = StartGate(len(clients)), _StepEnd(stop)
    results: list[LoadResult | None] = [None] * len(clients)

    def one(i: int) -> None:
        runner = clients[i]
        now = time.time()
        try:
            res = runner.run(split[i], time_s, root / rels[i], stop=ended, gate=gate)
        except NotStarted as exc:  # another host's fault: that one fails the step
            res = LoadResult(
                f"{runner.tool} (not run)", None, now, now, 0, status="interrupted", reason=str(exc)
            )
        except Exception as exc:  # noqa: BLE001 - cannot start, a lost link: this host fails the step
            gate.abort()
            why = str(exc).removeprefix(f"{runner.host.name}: ") or type(exc).__name__
            res = LoadResult(f"{runner.tool} (not run)", None, now, now, 0, status="failed", reason=why)
        if res.status == "failed":
            ended.failed.append(runner.host.name)
        results[i] = res

    threads = [
        threading.Thread(target=one, args=(i,), name=f"load-{step}-{i}", daemon=True)
        for i in range(len(clients))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = []
    for rel, res in zip(rels, results, strict=True):
        if res is None:  # its thread died of something no runner raises
            res = LoadResult(
                "", None, time.time(), time.time(), 0, status="failed", reason="its load thread died"
            )
        elif res.status == "interrupted" and res.exit_code is not None and ended.failed and not stop.is_set():
            res.reason = f"ended with the step: the load host {ended.failed[0]} failed"  # not by the user
        out.append((rel, res))
    return out


def _judge_step(
    step: StepOutcome,
    clients: list[LoadRunner],
    split: tuple[int, ...],
    loads: list[LoadResult],
    stop: session.Stop,
) -> None:
    """The step's status, reason and figures from its load hosts' runs (several: the host named)."""
    for load in loads:
        if load.status == "interrupted" and stop.is_set():  # the runner cannot tell Ctrl-C from SIGTERM
            load.reason = stop.said()
    names = [c.host.name for c in clients]
    several = len(clients) > 1
    rank = ("failed", "interrupted", "degraded", "ok")
    step.status = min((x.status for x in loads), key=lambda st: rank.index(st) if st in rank else 0)
    # a failed step names the hosts that failed, not the ones it ended
    why: dict[str, list[str]] = {}
    for n, x in zip(names, loads, strict=True):
        if x.status == step.status and x.reason:
            why.setdefault(x.reason, []).append(n)
    step.reason = "; ".join(
        f"load host{'s' if len(ns) > 1 else ''} {', '.join(ns)}: {r}" if several else r
        for r, ns in why.items()
    )
    if several:
        from perfkit.analyzers.sweep import combine_clients  # one rule for the step's figures

        pct = next((float(m[1]) for k in loads[0].summary if (m := _PCT_KEY.fullmatch(k))), None)
        summary = combine_clients([x.summary for x in loads], pct)
        starts = [x.started_at for x in loads]
        step.start_skew_s = round(max(starts) - min(starts), 3)
        step.clients = [
            {
                "host": n,
                "threads": t,
                "status": x.status,
                "reason": x.reason,
                "tps": x.summary.get("tps") or x.summary.get("eps"),
                "started_at": _iso(x.started_at),
            }
            for n, t, x in zip(names, split, loads, strict=True)
        ]
    else:
        summary = loads[0].summary or {}
    step.tps = summary.get("tps") or summary.get("eps")
    pct_ms = [v for k, v in summary.items() if _PCT_KEY.fullmatch(k)]
    step.lat_pct_ms = pct_ms[0] if pct_ms else None
    if summary.get("transactions"):
        step.errors = sum(x.failed for x in loads) / summary["transactions"]


_PCT_KEY = re.compile(r"lat_p([\d.]+)_ms")


def _snapshot_record(root: Path, taken: db_snapshot.Taken, step: str) -> dict:
    rec = _file_record(root, taken.rel, taken.host, taken.kind, taken.command)
    rec.update(
        step=step,
        phase=taken.phase,
        started_at=taken.started_at,
        ended_at=taken.ended_at,
        status=taken.status,
        reason=taken.reason,
        redacted=taken.redacted,
    )
    if taken.tz:  # innodb_status prints the server's local time
        rec["tz"] = taken.tz
    return rec


def _cool_down(
    step: StepOutcome,
    clients: list[LoadRunner],
    port: int,
    limit: float,
    stop: session.Stop,
    baselines: list[int],
) -> None:
    """Wait, at most `limit`, while a load host's TIME_WAIT sockets to the database hold more than a
    tenth of its ephemeral ports (they last 60 s on Linux): the next step must not start short of
    ports. A sweep with persistent connections leaves one per thread and does not wait; a
    short-connection one does."""
    t0 = time.monotonic()
    hosts: list[LoadHost] = [c.host for c in clients]
    ceilings = [
        max(b, int(TIME_WAIT_SHARE * h.ephemeral_ports())) for h, b in zip(hosts, baselines, strict=True)
    ]
    counts = [h.time_wait_to(port) for h in hosts]
    step.time_wait_after = sum(counts)
    while (
        time.monotonic() - t0 < limit
        and not stop.is_set()
        and any(n > c for n, c in zip(counts, ceilings, strict=True))
    ):
        stop.wait(0.5)
        counts = [h.time_wait_to(port) for h in hosts]
    step.cooldown_s = round(time.monotonic() - t0, 3)


def _merge_outcome(total: session.HostOutcome, step: session.HostOutcome, name: str) -> None:
    rank = {"ok": 0, "partial": 1, "interrupted": 2, "disk_full": 2, "failed": 3}
    total.captures += step.captures
    total.bytes += step.bytes
    for k, v in step.leftovers_killed.items():
        total.leftovers_killed[k] = total.leftovers_killed.get(k, 0) + v
    if rank.get(step.status, 3) > rank.get(total.status, 0):
        total.status = "partial" if step.status == "failed" and total.captures else step.status
        total.reason = f"{name}: {step.reason}"
    if step.perfkit_cpu_pct is not None:
        total.perfkit_cpu_pct = max(total.perfkit_cpu_pct or 0.0, step.perfkit_cpu_pct)
        total.perfkit_rss_kb = max(total.perfkit_rss_kb or 0, step.perfkit_rss_kb or 0)


def _run_status(manifest: Manifest, steps: list[StepOutcome], stop: session.Stop) -> tuple[str, str]:
    if stop.reason == "disk_full":
        return "disk_full", "the archive's filesystem filled up; everything written before is kept"
    if stop.is_set():
        done = sum(s.status in ("ok", "degraded") for s in steps)
        return "interrupted", f"{stop.said()} after {done} finished step(s)"
    bad = [s for s in steps if s.status not in ("ok",)]
    if all(s.status in ("failed", "skipped") for s in steps):
        return "failed", "; ".join(f"{s.name}: {s.reason}" for s in steps if s.reason)[:500]
    hosts_bad = manifest.status not in ("complete",)
    if not bad and not hosts_bad:
        return "complete", ""
    why = [f"{s.name}: {s.status} ({s.reason})" for s in bad]
    if hosts_bad:
        why.append(manifest.reason)
    return "partial", "; ".join(why)[:500]


def _with(opts: session.Options, **changes: Any) -> session.Options:
    from dataclasses import replace

    return replace(opts, **changes)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _file_record(root: Path, rel: str, host: str, kind: str, command: str) -> dict:
    path = root / rel
    data = path.read_bytes() if path.exists() else b""
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.touch(mode=0o600)
    return {
        "id": Path(rel).stem if kind != "mysql_status" else "global_status",
        "host": host,
        "kind": kind,
        "command": command,
        "path": rel,
        "phase": "window",
        "step": None,
        "started_at": None,
        "ended_at": None,
        "exit_code": None,
        "timed_out": False,
        "truncated": False,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "stderr_path": None,
        "clock_offset_s": 0.0,
        "tool_version": None,
        "env": {},
        "status": "ok",
        "reason": "",
    }

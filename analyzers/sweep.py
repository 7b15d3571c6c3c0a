"""The sweep: throughput and latency per load level, and the rules read off its shape.

A step's figures are its steady state: the warm-up intervals and the shutdown tail (sysbench's
`thds` drops below the configured threads as workers exit) are left out. Across steps: the peak,
the knee (where the scaling elasticity d ln X / d ln N falls below a threshold — scale-free, so it
works for 8, 24, 72… as well as 1, 2, 4…), and a USL fit whose σ and κ say *why* the curve bends.

A step of `perfkit run` with several load hosts is one level made of each host's run: their
intervals are put on this machine's clock (each run's recorded start, the tool's seconds after it),
summed per second where every host reported one, and the step judged on the sums; its latency as
`combine_clients` says, each host's own figures kept in `Step.clients`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped, count
from perfkit.manifest import Record

from . import usl as usl_model

LOAD_KINDS = ("sysbench", "goycsb", "gotpc")  # the load generators' outputs, as parsers name them


@dataclass
class Step:
    """One load level."""

    threads: int
    tps: float
    qps: float | None = None
    lat_avg_ms: float | None = None
    lat_pct: float | None = None  # which percentile `lat_pct_ms` is (95 by default)
    lat_pct_ms: float | None = None
    errors_per_s: float | None = None
    stable: bool | None = None  # None: no intervals to judge by
    drift_pct: float | None = None
    cv_pct: float | None = None
    trend_r2: float | None = None  # the share of the intervals' variation the linear trend explains
    source: str = ""
    run: int | None = None
    intervals: pd.DataFrame | None = None  # steady-state interval rows (time_s, tps, lat_ms, ...)
    all_intervals: pd.DataFrame | None = None
    server_qps: float | None = None  # statements/s the database saw (Questions), during the step
    # time a transaction spent inside the database: its running threads / TPS (Little's law), so the
    # client's average RT minus this is what the path to the server added (network, client, proxy)
    server_lat_ms: float | None = None
    # several load hosts: each one's own figures (host, threads, tps, lat_avg_ms, lat_pct_ms, source),
    # and where the step's percentile comes from (`combine_clients`)
    clients: list[dict[str, Any]] = field(default_factory=list)
    lat_pct_from: str | None = None

    @property
    def little_concurrency(self) -> float | None:
        """TPS × average RT: the concurrency actually in the system (Little's law).

        None where the law says nothing: no transaction completed (the RT of none is no RT), or an
        RT of 0, which is a latency below the tool's print resolution, not a latency of zero.
        """
        if self.lat_avg_ms is None or not math.isfinite(self.lat_avg_ms) or self.lat_avg_ms <= 0:
            return None
        if not self.tps > 0:
            return None
        return self.tps * self.lat_avg_ms / 1000.0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "threads": self.threads,
            "tps": self.tps,
            "qps": self.qps,
            "lat_avg_ms": self.lat_avg_ms,
            "lat_p95_ms": self.lat_pct_ms if self.lat_pct == 95 else None,
            "errors_per_s": self.errors_per_s,
            "little_concurrency": self.little_concurrency,
            "stable": self.stable,
            "server_qps": self.server_qps,
            "server_lat_ms": self.server_lat_ms,
        }
        if self.lat_pct is not None and self.lat_pct != 95:
            d[f"lat_p{self.lat_pct:g}_ms"] = self.lat_pct_ms
        d.update(drift_pct=self.drift_pct, cv_pct=self.cv_pct, source=self.source)
        if self.clients:
            d.update(clients=self.clients, lat_pct_from=self.lat_pct_from)
        return d


@dataclass
class Sweep:
    """Steps ordered by threads, and what the curve says."""

    tool: str
    metric: str  # "tps" or "qps": what throughput means in this sweep
    steps: list[Step]
    peak: Step
    knee_threads: int | None
    elasticities: list[tuple[int, int, float]] = field(default_factory=list)  # (from N, to N, e)
    usl: usl_model.UslFit | None = None
    usl_error: str | None = None
    run: dict[str, Any] | None = None  # from `perfkit run`'s manifest: how the sweep was driven

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "metric": self.metric,
            "steps": [s.to_dict() for s in self.steps],
            "peak": {"threads": self.peak.threads, "tps": self.peak.tps},
            "knee_threads": self.knee_threads,
            "usl": self.usl.to_dict() if self.usl else None,
            "run": self.run,
        }

    def clients_note(self) -> str:
        """Several load hosts: how each step was made of them, as the reports say it ("" with one)."""
        if not self.run or not self.run.get("threads_split"):
            return ""
        froms = sorted({s.lat_pct_from for s in self.steps if s.lat_pct_from})
        pct = f"; its percentile {' or '.join(froms)}" if froms else ""
        return (
            f"Load from {self.run['load_hosts']}: each step's threads {self.run['threads_split']}, its "
            f"{self.metric.upper()} their sum per second{pct} (each host's figures in findings.json)."
        )


@dataclass(frozen=True)
class Excluded:
    """A load-generator run left out of the model, and why: its figures would be wrong as a level."""

    source: str  # the load log, relative to the archive
    threads: int | None
    status: str  # "failed", "interrupted", "skipped" (perfkit's step status) or "unlisted"
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "threads": self.threads, "status": self.status, "reason": self.reason}

    def line(self) -> str:
        """`t0004 (4 threads): failed: FATAL: …` for the terminal and the reports."""
        who = f"{self.source} ({count(self.threads, 'thread')})" if self.threads is not None else self.source
        return f"{who}: {self.status}: {self.reason}"


# ---------------------------------------------------------------- building the model

UNLISTED = "not in the manifest of this perfkit run: a copy, not one of its steps"


def build(ds: Dataset, th: Thresholds) -> Sweep | None:
    """The sweep from the dataset's load-generator captures, or None when it has none."""
    return model(ds, th)[0]


def model(ds: Dataset, th: Thresholds) -> tuple[Sweep | None, list[Excluded]]:
    """The sweep, and the load runs left out of it (failed, interrupted, stray copies).

    A run is a level only when it measured one: a step perfkit recorded as failed, interrupted or
    skipped, or a log whose tool gave up (a FATAL line and no summary: connection refused, access
    denied, the server gone mid-run) is excluded, whatever intervals it printed before the failure —
    one second before a crash is no steady state. Degraded steps (errors, reconnects, zero-TPS
    seconds) finished and stay. A log without a summary and without a FATAL line stays too: foreign
    logs are often cut (seed 000's have no summaries at all), and a perfkit run's manifest already
    says which of its steps were interrupted.
    """
    steps: list[Step] = []
    excluded: list[Excluded] = []
    tool = ""
    records = ds.records
    swept = ds.run.sweep is not None  # made by `perfkit run`: every step is recorded
    levels: dict[tuple[Any, ...], list[_HostRun]] = {}
    for kind, name in (("sysbench", "sysbench"), ("goycsb", "go-ycsb"), ("gotpc", "go-tpc")):
        for cap in ds.of(kind):
            tool = tool or name
            rec = records.get(cap.path)
            if swept and rec is None:
                excluded.append(Excluded(cap.path, None, "unlisted", UNLISTED))
                continue
            for frame, run in _LOAD_ADAPTERS[kind](cap.frame, cap.extras.runs, rec, cap.path):
                threads = _threads_of(run, rec, cap.path)
                hr = _HostRun(cap.path, cap.host, frame, run, threads, rec, _unusable(run, rec, threads))
                # a perfkit run's step is every load host's run of it; elsewhere each run is a level
                key = (
                    (kind, rec.step, run["run"])
                    if swept and rec is not None and rec.step
                    else (cap.path, run["run"])
                )
                levels.setdefault(key, []).append(hr)
    for runs in levels.values():
        step, out = _level(runs, th)
        excluded += out
        if step is not None:
            steps.append(step)
    if not steps:
        for cap in ds.of("sweep"):
            tool = "table"
            steps.extend(_table_steps(cap.path, cap.frame))
    if not steps:
        return None, excluded
    _server_side(ds, steps, records)
    steps.sort(key=lambda s: s.threads)
    metric = "qps" if all(math.isnan(s.tps) for s in steps) else "tps"
    if metric == "qps":
        for s in steps:
            s.tps = s.qps  # the table's throughput column is QPS; say so in `metric`
    peak = max(steps, key=lambda s: s.tps)
    levels = _levels(steps)
    elast = [(a, b, _elasticity(xa, xb, a, b)) for (a, xa), (b, xb) in zip(levels, levels[1:], strict=False)]
    knee = _knee(levels, elast, th["sweep.knee"]["min_elasticity"])
    sweep = Sweep(tool=tool, metric=metric, steps=steps, peak=peak, knee_threads=knee, elasticities=elast)
    driven = ds.run.sweep
    if driven is not None:
        sweep.run = {
            "adaptive": driven.adaptive,
            "steps_run": len(driven.steps),
            "stopped_because": driven.stopped_because,
            "failed_steps": [
                f"{st.name}: {st.status} ({st.reason})" for st in driven.steps if st.status != "ok"
            ],
        }
        plan = driven.plan
        if plan.get("threads_split"):  # several load hosts (perfkit run --client-host a,b)
            sweep.run.update(load_hosts=plan.get("load_host"), threads_split=plan["threads_split"])
    # A level where nothing completed is a measurement (a stall) but no point the USL can take:
    # it models throughput as positive at every concurrency.
    fitted = [s for s in steps if s.tps > 0]
    try:
        sweep.usl = usl_model.fit([s.threads for s in fitted], [s.tps for s in fitted])
    except ValueError as exc:
        sweep.usl_error = str(exc)
    return sweep, excluded


@dataclass
class _HostRun:
    """One load host's run of a level: its output's intervals and run, and why it cannot count."""

    path: str
    host: str | None
    frame: pd.DataFrame
    run: dict
    threads: int | None
    record: Record | None
    why: tuple[str, str] | None

    def step(self, th: Thresholds) -> Step | None:
        return (
            None if self.why else _load_step(self.path, self.frame, {**self.run, "threads": self.threads}, th)
        )

    def failure(self) -> tuple[str, str]:
        return self.why or ("failed", _no_figures(self.run))


def _level(runs: list[_HostRun], th: Thresholds) -> tuple[Step | None, list[Excluded]]:
    """One level from its load hosts' runs, or the runs left out: all of them when one failed (the
    others' output is kept in the archive, but a level without one host's load is no level)."""
    own = [r.step(th) for r in runs]
    bad = [r for r, st in zip(runs, own, strict=True) if st is None]
    if bad:
        with_it = f"its step failed on the load host {bad[0].host}: {bad[0].failure()[1]}"
        return None, [
            Excluded(r.path, r.threads, *(r.failure() if st is None else ("failed", with_it)))
            for r, st in zip(runs, own, strict=True)
        ]
    if len(runs) == 1:
        return own[0], []
    step = _summed(runs, [st for st in own if st is not None], th)
    if step is None:
        why = "no throughput where every load host reported"
        return None, [Excluded(r.path, r.threads, "failed", why) for r in runs]
    return step, []


def _summed(runs: list[_HostRun], own: list[Step], th: Thresholds) -> Step | None:
    """The level several load hosts made together: their intervals summed on one clock (each run's
    recorded start plus the tool's seconds, to the nearest second, halves up, so a host's seconds stay
    one apart; only seconds every host reported), their summaries combined (`combine_clients`)."""
    starts = [load_span(r.record) for r in runs]
    t0 = min((sp[0] for sp in starts if sp is not None), default=None)
    parts = []
    for i, (r, sp) in enumerate(zip(runs, starts, strict=True)):
        rows = r.frame[r.frame["run"] == r.run["run"]] if len(r.frame) else r.frame
        offset = (sp[0] - t0).total_seconds() if sp is not None and t0 is not None else 0.0
        rows = rows[_INTERVAL_COLUMNS].assign(
            host=i,
            second=np.floor(rows["time_s"].astype(float) + offset + 0.5),
            threads=rows["threads"].fillna(r.threads),
        )
        parts.append(rows)
    cat = pd.concat(parts, ignore_index=True)
    by = cat.groupby("second")
    n = len(runs)
    every = by["host"].nunique() == n
    merged = (
        pd.DataFrame(
            {
                "time_s": by["second"].first(),
                "threads": by["threads"].sum(),
                "tps": by["tps"].sum(min_count=n),
                "qps": by["qps"].sum(min_count=n),
                "lat_ms": by["lat_ms"].max(),  # the worst host's: an interval's percentiles do not add
                "lat_pct": by["lat_pct"].first(),
                "errors_s": by["errors_s"].sum(min_count=n),
            }
        )[every]
        .reset_index(drop=True)
        .assign(run=0)[_INTERVAL_COLUMNS]
    )
    pct = next((r.run.get("percentile") for r in runs if r.run.get("percentile") is not None), None)
    summaries = [{**(r.run.get("summary") or {}), "histogram": r.run.get("histogram")} for r in runs]
    summary = combine_clients(summaries, pct)
    total = sum(int(r.threads or 0) for r in runs)
    step = _load_step(
        runs[0].path, merged, {"run": 0, "threads": total, "percentile": pct, "summary": summary}, th
    )
    if step is None:
        return None
    step.lat_pct_from = summary.get("lat_pct_from")
    step.clients = [
        {
            "host": r.host,
            "threads": st.threads,
            "tps": st.tps,
            "lat_avg_ms": st.lat_avg_ms,
            "lat_pct_ms": st.lat_pct_ms,
            "source": r.path,
        }
        for r, st in zip(runs, own, strict=True)
    ]
    return step


def combine_clients(summaries: list[dict[str, Any]], percentile: float | None) -> dict[str, Any]:
    """One step's totals from its load hosts' own summaries (as the parsers give them: tps, qps,
    transactions, lat_avg_ms, lat_pNN_ms, and `histogram` [[ms, count], ...] where the tool printed one).

    Throughputs and counts add; the average latency is the transaction-weighted mean of the hosts'
    (exact). A percentile does not add. With every host's histogram (sysbench --histogram) it is read
    off their sum the way the tool reads its own; else it is the worst host's, which bounds the
    combined one from above (a mixture's p-quantile lies between its parts' smallest and largest) and
    is close to it when the hosts are alike (`lat_pct_from` says which). Keys not known for every host
    are left out: a partial sum would pass for the step's.
    """
    out: dict[str, Any] = {}
    for key in ("tps", "qps", "eps", "transactions", "ignored_errors", "reconnects", "count", "errors"):
        values = [s.get(key) for s in summaries]
        if values and all(isinstance(v, int | float) for v in values):
            out[key] = sum(values)
    weights = [s.get("transactions", s.get("tps")) for s in summaries]
    avgs = [s.get("lat_avg_ms") for s in summaries]
    if all(isinstance(v, int | float) for v in (*weights, *avgs)) and sum(weights) > 0:
        out["lat_avg_ms"] = sum(w * a for w, a in zip(weights, avgs, strict=True)) / sum(weights)
    if percentile is None:
        return out
    key = f"lat_p{percentile:g}_ms"
    hists = [s.get("histogram") for s in summaries]
    if all(hists):
        counts: dict[float, int] = {}
        for hist in hists:
            for ms, n in hist:
                counts[float(ms)] = counts.get(float(ms), 0) + int(n)
        total, seen = sum(counts.values()), 0
        for ms in sorted(counts):
            seen += counts[ms]
            if seen >= total * percentile / 100:
                out[key], out["lat_pct_from"] = ms, "the load hosts' histograms, merged"
                break
    elif all(isinstance(s.get(key), int | float) for s in summaries):
        out[key] = max(s[key] for s in summaries)
        out["lat_pct_from"] = "the worst load host's (an upper bound of the step's)"
    return out


def _unusable(run: dict, record: Record | None, threads: int | None) -> tuple[str, str] | None:
    """(status, reason) when a run must stay out of the model, from perfkit's record or the output."""
    if record is not None and record.status != "ok":
        return record.status, record.reason or "recorded as such by perfkit run"
    if record is not None and record.timed_out:
        return "failed", "the load generator did not exit in time"
    if run.get("fatal") and not run.get("summary"):
        return "failed", str(run["fatal"])
    if threads is None:
        return "failed", "thread count unknown (not printed, not in a manifest or a tNNNN directory)"
    return None


def _no_figures(run: dict) -> str:
    return "no throughput reported" + (f" ({run['fatal']})" if run.get("fatal") else "")


def load_span(rec: Record | None) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """A load run's whole span, connecting and leaving included: its manifest record's `started_at` to
    `ended_at`, or None without those times (a foreign archive)."""
    if rec is None or not rec.started_at or not rec.ended_at:
        return None
    return pd.Timestamp(rec.started_at), pd.Timestamp(rec.ended_at)


def load_spans(ds: Dataset) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """step -> its load run's span (`load_span`; several load hosts: the first start to the last
    end), on the controller's clock, for the steps whose load records carry their times."""
    out: dict[str, tuple[pd.Timestamp, pd.Timestamp]] = {}
    for kind in LOAD_KINDS:
        for cap in ds.of(kind):
            span = load_span(ds.records.get(cap.path))
            if cap.step is None or span is None:
                continue
            a, b = (t.tz_localize("UTC") if t.tzinfo is None else t for t in span)
            if b > a:
                was = out.get(cap.step, (a, b))
                out[cap.step] = (min(was[0], a), max(was[1], b))
    return out


def load_window(rec: Record | None) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The part of a step's load run the DB sampler's series is read over: `load_span` less its first
    second and last half second (threads connecting and leaving), or None without the times."""
    span = load_span(rec)
    if span is None:
        return None
    return span[0] + pd.Timedelta(seconds=1), span[1] - pd.Timedelta(seconds=0.5)


def _server_side(ds: Dataset, steps: list[Step], records: dict[str, Record]) -> None:
    """Each step's server QPS and server RT from the DB sampler, over the step's load window (its
    first second and last half second left out: threads connecting and leaving)."""
    status = [c.frame for c in ds.of("mysql_status") if len(c.frame)]
    if not status:
        return
    frame = pd.concat(status, ignore_index=True)
    for step in steps:
        window = load_window(records.get(step.source))
        if window is None:
            continue
        start, end = window
        rows = frame[(frame["timestamp"] >= start) & (frame["timestamp"] <= end)]
        rows = rows[rows["questions_s"].notna() & rows["threads_running_avg"].notna()]
        if rows.empty:
            continue
        step.server_qps = float(rows["questions_s"].mean())
        inside = float(rows["threads_running_avg"].clip(lower=0).mean())
        if step.tps and math.isfinite(step.tps) and step.tps > 0:
            step.server_lat_ms = inside / step.tps * 1000


# ---------------------------------------------------------------- load generators' output -> intervals
# Each adapter yields (intervals, run) per run in a capture: `intervals` has sysbench's interval
# columns (run, time_s, threads, tps, qps, lat_ms, lat_pct, errors_s), `run` has `run`, `threads`,
# `percentile` and `summary` (tps, qps, lat_avg_ms, lat_pNN_ms), so one step builder serves all.

_INTERVAL_COLUMNS = ["run", "time_s", "threads", "tps", "qps", "lat_ms", "lat_pct", "errors_s"]


def _sysbench_runs(
    frame: pd.DataFrame, runs: list[dict], record: Record | None, path: str
) -> Iterator[tuple[pd.DataFrame, dict]]:
    # sysbench's rows are its intervals already; _load_step picks each run's own
    for run in runs:
        yield frame, run


def _threads_of(run: dict, record: Record | None, path: str) -> int | None:
    """The run's thread count: printed by the tool, else from perfkit's manifest, else the step dir."""
    if run.get("threads"):
        return int(run["threads"])
    if record is not None and record.threads:
        return record.threads
    m = re.search(r"(?:^|/)t(\d{2,})(?:/|$)", path)
    return int(m.group(1)) if m else None


def _goycsb_runs(
    frame: pd.DataFrame, runs: list[dict], record: Record | None, path: str
) -> Iterator[tuple[pd.DataFrame, dict]]:
    """go-ycsb's periodic lines are cumulative: per-interval OPS come from the count deltas (the
    parser's interval_ops_s); its percentiles are cumulative too, so intervals carry no latency."""
    for run in runs:
        threads = _threads_of(run, record, path)
        rows = frame[(frame["run"] == run["run"]) & ~frame["final"].astype(bool)] if len(frame) else frame
        ops = rows[(rows["op"] != "TOTAL") & ~rows["error"].astype(bool)]
        errs = rows[rows["error"].astype(bool)]
        per = ops.groupby("report").agg(time_s=("time_s", "max"), tps=("interval_ops_s", "sum"))
        per["errors_s"] = errs.groupby("report")["interval_ops_s"].sum().reindex(per.index).fillna(0.0)
        intervals = per.reset_index(drop=True).assign(
            run=run["run"], threads=threads, qps=float("nan"), lat_ms=float("nan"), lat_pct=95.0
        )[_INTERVAL_COLUMNS]
        summary = run.get("summary") or {}
        yield (
            intervals,
            {
                "run": run["run"],
                "threads": threads,
                "percentile": 95,
                "summary": {**summary, "tps": summary.get("ops_s")} if summary else {},
                "fatal": run.get("fatal"),
            },
        )


def _gotpc_runs(
    frame: pd.DataFrame, runs: list[dict], record: Record | None, path: str
) -> Iterator[tuple[pd.DataFrame, dict]]:
    """go-tpc's `[Current]` lines are per interval (Takes(s) is the interval's length); the old layout's
    periodic lines are cumulative (interval_count holds the deltas). Latency per interval: NEW_ORDER's
    p95, the transaction tpmC counts."""
    for run in runs:
        threads = _threads_of(run, record, path)
        rows = frame[(frame["run"] == run["run"]) & (frame["phase"] != "summary")] if len(frame) else frame
        if rows.empty:
            intervals = pd.DataFrame(columns=_INTERVAL_COLUMNS)
        else:
            current = bool((rows["phase"] == "current").any())
            ok, err = rows[~rows["error"].astype(bool)], rows[rows["error"].astype(bool)]
            per = ok.groupby("report").agg(takes=("time_s", "max"), n=("interval_count", "sum"))
            per["errors"] = err.groupby("report")["interval_count"].sum().reindex(per.index).fillna(0)
            per["lat_ms"] = ok[ok["op"] == "NEW_ORDER"].groupby("report")["lat_p95_ms"].max()
            elapsed = per["takes"].cumsum() if current else per["takes"]
            span = per["takes"] if current else per["takes"].diff().fillna(per["takes"])
            span = span.where(span > 0)
            intervals = pd.DataFrame(
                {
                    "run": run["run"],
                    "time_s": elapsed.to_numpy(float),
                    "threads": threads,
                    "tps": (per["n"].astype(float) / span).to_numpy(float),
                    "qps": float("nan"),
                    "lat_ms": per["lat_ms"].to_numpy(float),
                    "lat_pct": 95.0,
                    "errors_s": (per["errors"].astype(float) / span).to_numpy(float),
                }
            ).dropna(subset=["tps"])
        yield (
            intervals,
            {
                "run": run["run"],
                "threads": threads,
                "percentile": 95,
                "summary": run.get("summary") or {},
                "fatal": run.get("fatal"),
            },
        )


# each: (the capture's frame, its parser's `runs`, its record, its path) -> (intervals, run) per run
_LOAD_ADAPTERS: dict[str, Callable[..., Iterator[tuple[pd.DataFrame, dict]]]] = {
    "sysbench": _sysbench_runs,
    "goycsb": _goycsb_runs,
    "gotpc": _gotpc_runs,
}


def _load_step(path: str, frame: pd.DataFrame, run: dict, th: Thresholds) -> Step | None:
    rows = frame[frame["run"] == run["run"]] if len(frame) else frame
    threads = run.get("threads")
    summary = run.get("summary") or {}
    if threads is None or (rows.empty and not summary):
        return None
    pct = run.get("percentile")
    steady = _steady(rows, int(threads), th["sweep"]["warmup_fraction"])
    if not steady.empty:
        tps = float(steady["tps"].mean())
        qps = _mean(steady["qps"])
        lat_pct_ms = _median(steady["lat_ms"])
        errors = _mean(steady["errors_s"])
        if pct is None and steady["lat_pct"].notna().any():
            pct = float(steady["lat_pct"].dropna().iloc[0])
    else:
        tps, qps = float(summary.get("tps", float("nan"))), summary.get("qps")
        lat_pct_ms, errors = None, None
    if pct is not None and f"lat_p{pct:g}_ms" in summary:
        lat_pct_ms = summary[f"lat_p{pct:g}_ms"]  # the whole run's percentile beats a median of intervals
    if not math.isfinite(tps):
        return None
    step = Step(
        threads=int(threads),
        tps=tps,
        qps=qps,
        lat_avg_ms=summary.get("lat_avg_ms"),
        lat_pct=pct,
        lat_pct_ms=lat_pct_ms,
        errors_per_s=errors,
        source=path,
        run=run["run"],
        intervals=steady if not steady.empty else None,
        all_intervals=rows if not rows.empty else None,
    )
    lim = th["sweep.unstable"]
    if len(steady) >= max(3, lim["min_intervals"]):
        (step.drift_pct, step.trend_r2), step.cv_pct = _drift(steady), _cv(steady["tps"])
        step.stable = abs(step.drift_pct) <= lim["max_drift_pct"] and step.cv_pct <= lim["max_cv_pct"]
    return step


def _steady(rows: pd.DataFrame, threads: int, warmup_fraction: float) -> pd.DataFrame:
    """The intervals that represent the step: full thread count, warm-up dropped."""
    if rows.empty:
        return rows
    full = rows[rows["threads"].fillna(threads) >= threads]
    n = len(full)
    skip = max(1, math.ceil(n * warmup_fraction)) if n >= 4 else 0
    return full.iloc[skip:]


def _table_steps(path: str, frame: pd.DataFrame) -> list[Step]:
    out = []
    for row in frame.itertuples(index=False):
        lat_pct, lat_pct_ms = (
            (95, row.lat_p95_ms)
            if pd.notna(row.lat_p95_ms)
            else ((99, row.lat_p99_ms) if pd.notna(row.lat_p99_ms) else (None, None))
        )
        out.append(
            Step(
                threads=int(row.threads),
                tps=float(row.tps),
                qps=_num(row.qps),
                lat_avg_ms=_num(row.lat_avg_ms),
                lat_pct=lat_pct,
                lat_pct_ms=_num(lat_pct_ms),
                source=path,
            )
        )
    return out


def _levels(steps: list[Step]) -> list[tuple[int, float]]:
    """(threads, mean throughput) per distinct thread count, ascending."""
    by: dict[int, list[float]] = {}
    for s in steps:
        by.setdefault(s.threads, []).append(s.tps)
    return [(n, float(np.mean(v))) for n, v in sorted(by.items())]


def _elasticity(xa: float, xb: float, na: int, nb: int) -> float:
    """d ln X / d ln N between two levels. Throughput vanishing is -inf (scaling stopped outright),
    appearing from nothing +inf; two levels where nothing completed say nothing (NaN)."""
    if xa <= 0 and xb <= 0:
        return float("nan")
    if xb <= 0:
        return float("-inf")
    if xa <= 0:
        return float("inf")
    return math.log(xb / xa) / math.log(nb / na)


def _knee(levels: list[tuple[int, float]], elast: list[tuple[int, int, float]], min_e: float) -> int | None:
    """The last level before scaling first falls below `min_e`; None while the sweep still scales."""
    for a, _b, e in elast:
        if e < min_e:
            return a
    return None


def _drift(steady: pd.DataFrame) -> tuple[float, float]:
    """Linear trend of TPS across the step, as a percentage of its mean, and the share of the
    intervals' variation it explains (R²: near 1 a fall or a rise, near 0 a swing around a level)."""
    t, x = steady["time_s"].to_numpy(float), steady["tps"].to_numpy(float)
    if np.ptp(t) == 0 or x.mean() == 0:
        return 0.0, 0.0
    slope, icept = np.polyfit(t, x, 1)
    spread = float(((x - x.mean()) ** 2).sum())
    r2 = 1 - float(((x - (slope * t + icept)) ** 2).sum()) / spread if spread else 0.0
    return float(slope * np.ptp(t) / x.mean() * 100), r2


def _cv(x: pd.Series) -> float:
    return float(x.std(ddof=0) / x.mean() * 100) if x.mean() else 0.0


def _mean(s: pd.Series) -> float | None:
    s = s.dropna()
    return float(s.mean()) if len(s) else None


def _median(s: pd.Series) -> float | None:
    s = s.dropna()
    return float(s.median()) if len(s) else None


def _num(v: Any) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def _fmt(x: float | None, nd: int = 1) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:,.{nd}f}"


# ---------------------------------------------------------------- rules

NO_LOAD = "no load-generator output (sysbench, go-ycsb or go-tpc log, or a sweep table)"


def knee(ds: Dataset, sweep: Sweep | None, th: Thresholds) -> list[Finding] | Skipped:
    """Where adding threads stops adding throughput: the knee, and the peak beyond it."""
    if sweep is None:
        return Skipped("sweep.knee", NO_LOAD)
    if len(_levels(sweep.steps)) < 3:
        return Skipped("sweep.knee", f"{len(_levels(sweep.steps))} load levels; need at least 3")
    if sweep.knee_threads is None:
        return []
    k = sweep.knee_threads
    seg = next((a, b, e) for a, b, e in sweep.elasticities if a == k)
    levels = dict(_levels(sweep.steps))
    k_tps, next_tps = levels[k], levels[seg[1]]
    m = sweep.metric.upper()
    per_thread_low = sweep.steps[0].tps / sweep.steps[0].threads
    change = f"{_fmt(k_tps)} → {_fmt(next_tps)} {m}"
    if seg[2] == float("-inf"):
        how = f"{m} falls to nothing ({change}): no transaction completed at {count(seg[1], 'thread')}"
    elif seg[2] < 0:
        how = f"{m} falls ({change}, elasticity {seg[2]:.2f})"
    else:
        how = (
            f"{m} grows only {_fmt(seg[2] * 100, 0)}% as fast as the thread count "
            f"(elasticity {seg[2]:.2f}, {change})"
        )
    return [
        Finding(
            rule="sweep.knee",
            severity="info",
            title=(
                f"Scaling stops at {count(k, 'thread')}; peak {_fmt(sweep.peak.tps)} {m} "
                f"at {sweep.peak.threads}"
            ),
            summary=(
                f"From {seg[0]} to {seg[1]} threads {how}; the peak is "
                f"{_fmt(sweep.peak.tps)} {m} at {count(sweep.peak.threads, 'thread')}."
            ),
            evidence={
                "knee_threads": k,
                "next_threads": seg[1],
                "elasticity": seg[2],
                "knee_throughput": k_tps,
                "peak_threads": sweep.peak.threads,
                "peak_throughput": sweep.peak.tps,
                "throughput_per_thread_at_first_step": per_thread_low,
                "elasticities": [
                    [a, b, round(e, 3) if math.isfinite(e) else None] for a, b, e in sweep.elasticities
                ],
                "metric": sweep.metric,
            },
            explanation=(
                "Below the knee each added thread brings its share of throughput; past it the extra "
                "threads only wait, so latency grows instead (Little's law: N = X × R). Something "
                "shared — a lock, a log, a disk, a CPU, a connection pool — is fully used at the knee."
            ),
            next_steps=[
                f"Look for the resource that saturates between {seg[0]} and {seg[1]} threads: compare "
                "host captures (CPU, disk, network) of those two steps.",
                "Run extra steps between the knee and the peak to place it precisely.",
                "Size connection pools and client concurrency near the knee, not beyond the peak.",
            ],
        )
    ]


# One USL term dominates the other at the highest level when it is this many times the other; closer,
# the prose says they weigh about the same (the retrograde scenario: 5.93 against 6.07)
USL_TERMS_APART = 1.25


def retrograde(ds: Dataset, sweep: Sweep | None, th: Thresholds) -> list[Finding] | Skipped:
    """Throughput falls after the peak; the USL's σ and κ say whether contention or coherency rules."""
    if sweep is None:
        return Skipped("sweep.retrograde", NO_LOAD)
    levels = _levels(sweep.steps)
    top_n, top_x = levels[-1]
    peak_n, peak_x = max(levels, key=lambda lv: lv[1])
    if not peak_x > 0:
        return Skipped(
            "sweep.retrograde", "no load level completed a transaction: there is no peak to fall from"
        )
    drop = (peak_x - top_x) / peak_x * 100
    if top_n == peak_n or drop < th["sweep.retrograde"]["min_drop_pct"]:
        return []
    m = sweep.metric.upper()
    ev: dict[str, Any] = {
        "peak_threads": peak_n,
        "peak_throughput": peak_x,
        "highest_threads": top_n,
        "throughput_at_highest": top_x,
        "drop_pct": drop,
        "metric": sweep.metric,
    }
    cause = ""
    fit = sweep.usl
    if fit is not None:
        contention = fit.sigma * (top_n - 1)
        coherency = fit.kappa * top_n * (top_n - 1)
        dominant = "coherency (κ)" if coherency > contention else "contention (σ)"
        if max(contention, coherency) < USL_TERMS_APART * min(contention, coherency):
            dominant = "neither"
        ev.update(
            usl_sigma=fit.sigma,
            usl_kappa=fit.kappa,
            usl_r2=fit.r2,
            usl_peak_concurrency=fit.peak_concurrency,
            contention_term=contention,
            coherency_term=coherency,
            dominant=dominant.split()[0],
        )
        terms = f"σ(N−1) = {contention:.2f}, κN(N−1) = {coherency:.2f}"
        weigh = (
            f"contention (σ) and coherency (κ) weigh about the same ({terms})"
            if dominant == "neither"
            else f"the {dominant} term dominates ({terms})"
        )
        caveat = f" ({fit.caveat()}.)" if fit.caveat() else ""
        cause = (
            f" The USL fit (R² {fit.r2:.3f}) gives σ={fit.sigma:.4f}, κ={fit.kappa:.2e}: "
            f"at {count(top_n, 'thread')} {weigh}.{caveat}"
        )
    unsteady = [s.threads for s in sweep.steps if s.threads > peak_n and s.stable is False]
    if unsteady:
        ev["unstable_steps_past_peak"] = unsteady
        steps = ", ".join(map(str, unsteady))
        cause += f" Past the peak, the {steps}-thread step(s) were not steady (sweep.unstable)."
    return [
        Finding(
            rule="sweep.retrograde",
            severity="warning",
            title=f"Throughput falls {drop:.0f}% past the peak at {count(peak_n, 'thread')}",
            summary=(
                f"{m} peaks at {_fmt(peak_x)} with {count(peak_n, 'thread')} and falls to {_fmt(top_x)} "
                f"at {count(top_n, 'thread')} ({drop:.0f}% lower).{cause}"
            ),
            evidence=ev,
            explanation=(
                "More concurrency giving less throughput is not a full resource (that gives a plateau) "
                "but work that grows with concurrency itself: workers invalidating each other's caches, "
                "lock hand-offs and convoys, retries after deadlocks or conflicts, distributed "
                "consistency traffic. The USL calls this coherency (κ); contention (σ) alone only "
                "flattens the curve."
            ),
            next_steps=[
                f"Cap client concurrency (connection pools) near {peak_n}.",
                "Look for lock waits, deadlocks and retries: SHOW ENGINE INNODB STATUS, "
                "Innodb_row_lock_waits, TiDB/TiKV lock and conflict metrics, sysbench ignored errors.",
                "Profile the server at the peak and at the highest level (perf/pprof) and compare where "
                "the extra time goes (spin locks, mutexes, cache misses).",
            ],
        )
    ]


def not_saturated(ds: Dataset, sweep: Sweep | None, th: Thresholds) -> list[Finding] | Skipped:
    """The highest level tried still scales about linearly: the system was never pushed to its limit."""
    if sweep is None:
        return Skipped("sweep.not-saturated", NO_LOAD)
    if len(sweep.elasticities) == 0:
        step = sweep.steps[0]
        return Skipped(
            "sweep.not-saturated", f"one load level ({count(step.threads, 'thread')}): scaling unknown"
        )
    a, b, e = sweep.elasticities[-1]
    # +inf: the level before the last completed nothing (a stall), which says nothing about scaling
    if not (math.isfinite(e) and e >= th["sweep.not-saturated"]["min_elasticity"]):
        return []
    m = sweep.metric.upper()
    return [
        Finding(
            rule="sweep.not-saturated",
            severity="warning",
            title=f"Still scaling at {b} threads: the limit was not reached",
            summary=(
                f"From {a} to {b} threads {m} still grew with elasticity {e:.2f} (1.0 = linear): "
                f"the sweep stopped before the system saturated."
            ),
            evidence={"from_threads": a, "to_threads": b, "elasticity": e, "metric": sweep.metric},
            explanation=(
                "While throughput grows in proportion to concurrency nothing is saturated yet; the "
                "bottleneck lies beyond the highest level tried, or the load generator is the limit."
            ),
            next_steps=[
                "Extend the sweep to higher thread counts (perfkit run --adaptive finds the peak).",
                "Check the load-generator host's CPU: one client machine may not push hard enough — "
                "add clients.",
            ],
        )
    ]


def unstable(ds: Dataset, sweep: Sweep | None, th: Thresholds) -> list[Finding] | Skipped:
    """Throughput drifts, collapses or swings inside one step."""
    if sweep is None:
        return Skipped("sweep.unstable", NO_LOAD)
    judged = [s for s in sweep.steps if s.stable is not None]
    if not judged:
        need = th["sweep.unstable"]["min_intervals"]
        return Skipped(
            "sweep.unstable",
            f"no step has {need} steady per-interval reports "
            "(run longer, or sysbench with a shorter --report-interval)",
        )
    lim = th["sweep.unstable"]
    out = []
    for s in judged:
        if s.stable:
            continue
        iv = s.all_intervals if s.all_intervals is not None else s.intervals
        tps, lat = s.intervals["tps"], s.intervals["lat_ms"].dropna()
        first, last = float(tps.iloc[0]), float(tps.iloc[-1])
        drift, r2 = s.drift_pct or 0.0, s.trend_r2 or 0.0
        # a trend the intervals follow is a fall (or a climb); variation around a level is a swing
        swing = r2 < lim["min_trend_r2"]
        collapse = not swing and drift <= -lim["max_drift_pct"]
        evidence = {
            "threads": s.threads,
            "drift_pct": s.drift_pct,
            "trend_r2": round(r2, 3),
            "cv_pct": s.cv_pct,
            "tps_first": first,
            "tps_last": last,
            "tps_min": float(tps.min()),
            "tps_max": float(tps.max()),
            "intervals": [
                [float(t), round(float(x), 2)] for t, x in zip(iv["time_s"], iv["tps"], strict=True)
            ],
            "source": s.source,
        }
        at = f"At {count(s.threads, 'thread')}"
        if swing:
            title = f"Throughput swings inside the {s.threads}-thread step"
            lat_note = (
                f"; p{s.lat_pct:g} latency up to {_fmt(float(lat.max()))} ms"
                if len(lat) and s.lat_pct
                else ""
            )
            summary = (
                f"{at} TPS swung between {_fmt(evidence['tps_min'])} and {_fmt(evidence['tps_max'])} from "
                f"one interval to the next (variation {s.cv_pct:.0f}% of its mean; a trend explains "
                f"{r2:.0%} of it){lat_note}."
            )
        else:
            shape = "collapses" if collapse else "is unstable"
            title = f"Throughput {shape} inside the {s.threads}-thread step"
            lat_note = (
                f"; p{s.lat_pct:g} latency {_fmt(float(lat.iloc[0]))} → {_fmt(float(lat.iloc[-1]))} ms"
                if len(lat) >= 2 and s.lat_pct
                else ""
            )
            summary = (
                f"{at} TPS went from {_fmt(first)} to {_fmt(last)} within the step "
                f"(trend {drift:+.0f}% of its mean, variation {s.cv_pct:.0f}%){lat_note}."
            )
        out.append(
            Finding(
                rule="sweep.unstable",
                severity="warning",
                title=title,
                summary=summary,
                evidence=evidence,
                explanation=(
                    "A step's mean means little when throughput moves inside it. A steady fall with "
                    "latency rising is the system degrading under that load (queues growing without "
                    "bound, memory or cache exhaustion, compaction or flush debt, throttling); a fall with "
                    "latency falling too means the load itself stopped arriving. Swings from one interval "
                    "to the next around a level are stalls: something stops the work for part of an "
                    "interval and lets it go, the client (a GC or VM pause, a starved load host) when the "
                    "server's captures stay calm in the low intervals, the server (a flush or checkpoint "
                    "stall, a lock held across a batch, a CPU quota's period) when its queues grow in them."
                ),
                next_steps=(
                    [
                        f"Line the low intervals of the {s.threads}-thread step up with the host captures "
                        "(1 s samples): run queue, IO wait, the database's threads on the server; CPU and "
                        "pauses on the load host.",
                        "Check the load host: client.saturated or cpu.throttled on it, steal time (vmstat "
                        "st) on a VM, the load generator's own GC.",
                        "Report the step by its percentiles, not its mean, until the stalls are gone.",
                    ]
                    if swing
                    else [
                        f"Look at host captures over the {s.threads}-thread step's window: what grows "
                        "while TPS falls (run queue, await, swap, memory)?",
                        "Run the step longer to see whether it settles or keeps falling.",
                        "Keep the load below this level in production; its mean TPS is not sustainable.",
                    ]
                ),
            )
        )
    return out


def underdriven(ds: Dataset, sweep: Sweep | None, th: Thresholds) -> list[Finding] | Skipped:
    """The load does not arrive: TPS×RT well below the configured threads, or TPS and RT falling together."""
    if sweep is None:
        return Skipped("load.underdriven", NO_LOAD)
    lim = th["load.underdriven"]
    out: list[Finding] = []
    low = []
    for s in sweep.steps:
        if not s.tps > 0:
            continue  # nothing completed: Little's law says nothing about what was inside
        inflight, how = s.little_concurrency, "TPS × average RT"
        if inflight is None and s.lat_pct_ms is not None and s.lat_pct_ms > 0:
            # The percentile exceeds the mean for any latency distribution seen in practice, so
            # TPS × p95 is an upper bound of the in-flight concurrency: below the ratio, certainly low.
            inflight, how = s.tps * s.lat_pct_ms / 1000.0, f"TPS × p{s.lat_pct:g} RT (an upper bound)"
        if inflight is not None and inflight < lim["min_concurrency_ratio"] * s.threads:
            low.append((s, inflight, how))
    if low:
        worst = min(low, key=lambda t: t[1] / t[0].threads)
        s, inflight, how = worst
        shown = _fmt(inflight, 1 if inflight >= 1 else 2)  # a rate limit leaves a fraction of one
        out.append(
            Finding(
                rule="load.underdriven",
                severity="warning",
                title=f"Only {shown} requests in flight with {count(s.threads, 'thread')}",
                summary=(
                    f"At {count(s.threads, 'thread')}, {how.replace('TPS', sweep.metric.upper())} = "
                    f"{_fmt(s.tps)} × "
                    f"{_fmt((inflight / s.tps) * 1000)} ms "
                    f"= {shown} requests in the system, {inflight / s.threads * 100:.0f}% of the "
                    f"configured concurrency ({len(low)} of {len(sweep.steps)} steps below "
                    f"{lim['min_concurrency_ratio'] * 100:.0f}%)."
                ),
                evidence={
                    "threads": s.threads,
                    "tps": s.tps,
                    "in_flight": inflight,
                    "method": how,
                    "steps": [[x.threads, c] for x, c, _ in low],
                },
                explanation=(
                    "By Little's law the concurrency inside the system equals throughput × response "
                    "time. When it is far below the threads configured, the threads spend their time "
                    "somewhere the response time does not measure: in the client (think time, CPU "
                    "starvation, connection setup), or waiting for a pool or a rate limit."
                ),
                next_steps=[
                    "Check the load generator host: CPU, run queue, and its own thread states.",
                    "Check connection pools and rate limits between client and server.",
                    "Compare client RT with server-side RT (DB sampler) to locate the gap.",
                ],
            )
        )
    records = ds.records
    status = [c.frame for c in ds.of("mysql_status") if len(c.frame)]
    server = pd.concat(status, ignore_index=True) if status else None
    for s in sweep.steps:
        together = _fall_together(s, server, records.get(s.source), th)
        if together is not None:
            out.append(together)
    return out


def _thirds_change(x: pd.Series) -> tuple[float, float, float]:
    """(mean of the first third, mean of the last third, % drop from the first to the last)."""
    third = len(x) // 3
    first, last = float(x.iloc[:third].mean()), float(x.iloc[-third:].mean())
    return first, last, (1 - last / first) * 100 if first else float("nan")


def _server_rt_in_step(server: pd.DataFrame | None, rec: Record | None, th: Thresholds) -> pd.Series | None:
    """The DB sampler's per-second server RT over the step's load window (connect and exit seconds
    and the same warm-up share as the client's intervals left out), or None without enough samples."""
    window = load_window(rec)
    if server is None or window is None:
        return None
    start, end = window
    rows = server[(server["timestamp"] >= start) & (server["timestamp"] <= end)].sort_values("timestamp")
    rt = rows["server_rt_ms"].dropna()
    if len(rt) >= 4:
        rt = rt.iloc[max(1, math.ceil(len(rt) * th["sweep"]["warmup_fraction"])) :]
    return rt if len(rt) >= th["load.underdriven"]["min_intervals"] else None


def _fall_together(
    s: Step, server: pd.DataFrame | None, rec: Record | None, th: Thresholds
) -> Finding | None:
    """Inside one step, TPS falling with the RT of the system falling too: the load stopped arriving.

    The system's RT is the database's own (DB sampler) when there is one, else the client's. The
    database's is the better witness: when requests are lost before the server (an ingress, a pool),
    the client's RT rises — it includes the wait — while the server's falls with its load (seeds/003:
    13 511 TPS at 380 ms, then TPS and the application's RT fell together while the client's RT rose).
    """
    lim = th["load.underdriven"]
    iv = s.intervals
    if iv is None or len(iv) < lim["min_intervals"]:
        return None
    tps_first, tps_last, tps_drop = _thirds_change(iv["tps"])
    lat = iv["lat_ms"]
    client = _thirds_change(lat) if lat.notna().any() else None
    srv_rt = _server_rt_in_step(server, rec, th)
    srv = _thirds_change(srv_rt) if srv_rt is not None else None
    drop = lim["together_drop_pct"]
    if not tps_drop >= drop:
        return None
    by_server = srv is not None and srv[2] >= drop
    if not by_server and not (client is not None and client[2] >= drop):
        return None
    ev: dict[str, Any] = {
        "threads": s.threads,
        "tps_drop_pct": tps_drop,
        "tps_first_third": tps_first,
        "tps_last_third": tps_last,
    }
    if client is not None:
        ev.update(lat_drop_pct=client[2], lat_first_third_ms=client[0], lat_last_third_ms=client[1])
    if srv is not None:
        ev.update(
            server_rt_drop_pct=srv[2],
            server_rt_first_third_ms=srv[0],
            server_rt_last_third_ms=srv[1],
            server_samples=len(srv_rt),
        )
    ev["judged_by"] = "server RT (DB sampler)" if by_server else "client RT"
    ev["source"] = s.source
    p = f"p{s.lat_pct:g} " if s.lat_pct else ""
    if by_server:
        client_note = (
            f"; the client's {p}RT {'rose' if client[2] < 0 else 'fell'} {abs(client[2]):.0f}% "
            f"({_fmt(client[0])} → {_fmt(client[1])} ms)"
            if client is not None
            else ""
        )
        title = f"TPS and the database's RT fall together inside the {s.threads}-thread step"
        summary = (
            f"At {count(s.threads, 'thread')} TPS fell {tps_drop:.0f}% ({_fmt(tps_first)} → "
            f"{_fmt(tps_last)}) and the "
            f"database's RT fell {srv[2]:.0f}% ({_fmt(srv[0], 2)} → {_fmt(srv[1], 2)} ms) between the first "
            f"and last third of the step{client_note}: the pressure stops before the database."
        )
    else:
        title = f"TPS and RT fall together inside the {s.threads}-thread step"
        summary = (
            f"At {count(s.threads, 'thread')} TPS fell {tps_drop:.0f}% and latency fell {client[2]:.0f}% "  # type: ignore[index]
            f"between the first and last third of the step: the pressure stopped arriving."
        )
    return Finding(
        rule="load.underdriven",
        severity="warning",
        title=title,
        summary=summary,
        evidence=ev,
        explanation=(
            "At a bottleneck TPS × RT is constant: one rises as the other falls. Both falling together "
            "means fewer requests reach the system — the load is lost before it (client, network, a "
            "pool, a load balancer). A client RT that rises meanwhile only adds the time requests wait "
            "on the way; the tier whose RT falls is getting less work, not more."
        ),
        next_steps=[
            "Look upstream of the measured tier: the client host, its connection pool, "
            "load balancers and ingress on the way.",
            "Compare the RT of each tier over the step (perfkit analyze --tiers FILE) to find where "
            "requests wait.",
        ],
    )


RULES = {
    "sweep.knee": knee,
    "sweep.retrograde": retrograde,
    "sweep.not-saturated": not_saturated,
    "sweep.unstable": unstable,
    "load.underdriven": underdriven,
}

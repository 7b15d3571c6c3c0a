"""Two sweeps side by side: did the change move the curve, and is the move beyond noise?

Pure: `compare(base, new)` takes two sides, each one `Analysis` or a `Group` of runs of one
configuration, and returns a typed `Comparison`; the CLI and the renderers only call and render it.

**Between runs (both sides with at least 2 runs of the load tool at a step: replicates, benchstat's
`-count`: several sweeps a side, or sweeps made with `perfkit run --repeat N`, whose steps each
start the tool afresh).** Each run of the tool contributes one figure per thread count: the mean of
its steady intervals (sweep.Step.intervals), else the step's own figure (a report read back). The
change is mean(NEW run means) / mean(BASE run means) − 1, with a 95 % interval from Welch's t on the
run means (each side's variance s²/k of its k run means; Welch–Satterthwaite degrees of freedom of
the difference of the two means). The interval on the *ratio* is Fieller's, not the delta method's:
with 2-3 runs a side the t quantile is 4-13 and the base mean's own uncertainty is large, so
1/mean(BASE) is far from symmetric; the delta method's symmetric interval understates the upside and
can run below −100 %. Fieller's set {θ : |mean(NEW) − θ·mean(BASE)| ≤ t·√(v_new + θ²·v_base)} is
exact for normal run means, and with the difference's degrees of freedom it excludes θ = 1 exactly
when Welch's test rejects equal means, so the interval and the test never disagree. When mean(BASE)
is itself not clear of zero (mean² ≤ t²·v_base) the set is unbounded: shown, not judged. Two sides
whose runs all have the same mean (copies of one run) have no spread to judge by: shown, not judged.
The peak likewise from each run's figure at its own peak step. This is the spread that decides on
this VM: two runs of one configuration sit at different levels, each flat within itself
(docs/benchmarks.md, compare A/A), which no statistic over one run's intervals can see.

**Within one run (a side with one run at a step).** Each run's steady intervals give its throughput
(the mean interval: what the tool's own summary reports) and its p95 (the mean of the per-interval
p95s); several runs of a side at that step are pooled. The change is new / base − 1 with a 95 %
interval from Welch's t on the interval means, each run's variance corrected for autocorrelation:
one-second samples of a load test are not independent (a flush or a GC pause spans seconds), and a
rank test or a plain bootstrap that takes them for independent draws claims more certainty than the
run holds. Measured on simulated AR(1) A/A pairs (400 each): at lag-1 correlation 0-0.5 the interval
alone false-alarms 3-6 % from 30 samples (14 % with 8), at 0.8-0.9 5-13 % from 30 (31 % with 8);
with the floor below, at a 3 % coefficient of variation, 0-5.5 % from 30 samples and up to 13.5 %
with 8. A moving-block bootstrap of the medians (blocks of n^(1/3)) reached 15-70 % at correlation
0.5-0.9 with 10-60 samples (tests/test_compare.py keeps the interval in check). Steps of 20 s and
more are what a comparison needs. Such a comparison carries `spread: "within-run"` and a warning:
it cannot tell a change from run-to-run spread (the A/A pairs in docs/benchmarks.md flagged 5 of
10); replicates can.

A change is **significant** when its interval excludes zero *and* it is at least `min_change_pct`:
the floor stands for the run-to-run spread one run's intervals cannot show (and keeps a tiny but
real change from being called one). A step with fewer than `min_intervals` steady intervals in
either run is shown, never judged within-run (between runs each run's mean counts as one figure,
however many intervals made it). Intervals that move together (a drift, a flush spanning the step)
hold few independent readings: their interval is wide, as it should be.

**The rest of a group.** The knee: from the mean of the side's runs at each thread count (the
sweep's own elasticity rule); the USL: fitted on every run's points of the side; the peak's thread
count: the one most of the side's runs peak at (the first run's on a tie). Findings: *appeared* =
in any NEW run and in no BASE run, *gone* the reverse, *changed* = in both with a different worst
severity. USE rows and wait profiles: the mean over the side's runs that have each row. The verdict
shown per side, the differential profiles and the report's per-run views: the first run's. A side
with one run is exactly today's comparison.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

from perfkit.findings import SEVERITIES, Finding

from . import Analysis
from . import usl as usl_model
from . import waits as thread_waits
from .sweep import Step, Sweep, _elasticity, _knee, _levels
from .waits import WaitProfile

MIN_CHANGE_PCT = 5.0  # below this a change is "~" however narrow its interval (run-to-run spread)
LEVEL = 0.95  # the bootstrap interval's coverage
MIN_INTERVALS = 5  # steady intervals a run needs at a step before its change is judged
# Run facts that make two sweeps measure different things: compared anyway, with a warning naming them.
WORKLOAD_KEYS = ("workload", "tables", "table_size", "time_s", "warmup_s", "percentile")
WITHIN_RUN, BETWEEN_RUNS = "within-run", "between-runs"
ONE_RUN_WARNING = (
    "one run a side ({counts}): a change is judged against each run's own second-to-second noise, "
    "which cannot tell it from run-to-run spread (two runs of one configuration on the lab VM sat up to "
    "40 % apart at 1 thread, 5 of 10 such pairs flagged: docs/benchmarks.md, compare A/A); give each side "
    "several runs (`perfkit run --repeat 3`, or a directory of runs) to judge the change against the spread "
    "between runs"
)


@dataclass(frozen=True)
class Change:
    """One figure in both runs and how it moved."""

    base: float | None
    new: float | None
    change_pct: float | None  # (new / base − 1) × 100
    ci_pct: tuple[float, float] | None  # the 95 % interval of change_pct
    significant: bool | None  # None: not judged (too few intervals, or a figure missing)
    why: str = ""  # why it was not judged, when it was not
    spread: str = WITHIN_RUN  # what the interval stands on: one run's intervals, or the runs' means
    runs: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # between runs: each run's figure
    df: float | None = None  # between runs: Welch–Satterthwaite degrees of freedom

    @property
    def sign(self) -> str:
        """How the change reads in a table: "~" when it is not beyond noise."""
        if self.change_pct is None:
            return "n/a"
        if self.significant is None:
            return f"{self.change_pct:+.1f}% (not judged)"
        return f"{self.change_pct:+.1f}%" if self.significant else "~"

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "new": self.new,
            "change_pct": self.change_pct,
            "ci_pct": list(self.ci_pct) if self.ci_pct else None,
            "significant": self.significant,
            **({"why": self.why} if self.why else {}),
            "spread": self.spread,
            **self._runs_dict(),
        }

    def _runs_dict(self, prefix: str = "") -> dict[str, Any]:
        if self.runs is None:
            return {}
        return {
            f"{prefix}run_means": {"base": list(self.runs[0]), "new": list(self.runs[1])},
            f"{prefix}df": self.df,
        }


@dataclass(frozen=True)
class StepChange:
    threads: int
    throughput: Change
    p95_ms: Change
    intervals: tuple[int, int]  # steady intervals in base and new (all runs of a side)
    runs: tuple[int, int] = (1, 1)  # runs of each side with this thread count

    def to_dict(self, metric: str) -> dict[str, Any]:
        return {
            "threads": self.threads,
            metric: [self.throughput.base, self.throughput.new],
            "p95_ms": [self.p95_ms.base, self.p95_ms.new],
            "change_pct": self.throughput.change_pct,
            "ci_pct": list(self.throughput.ci_pct) if self.throughput.ci_pct else None,
            "significant": self.throughput.significant,
            "p95_change_pct": self.p95_ms.change_pct,
            "p95_ci_pct": list(self.p95_ms.ci_pct) if self.p95_ms.ci_pct else None,
            "p95_significant": self.p95_ms.significant,
            "intervals": list(self.intervals),
            **({"why": self.throughput.why} if self.throughput.why else {}),
            "spread": self.throughput.spread,
            "runs": list(self.runs),
            **self.throughput._runs_dict(),
            **self.p95_ms._runs_dict("p95_"),
        }


@dataclass(frozen=True)
class FindingChange:
    rule: str
    hosts: tuple[str, ...]
    severity: tuple[str, str]  # base, new

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "hosts": list(self.hosts), "severity": list(self.severity)}


class UseLike(Protocol):
    """What a USE row (reports/use.py UseRow) gives a comparison."""

    resource: str
    host: str | None
    instance: str
    check: str
    metric: str
    unit: str
    threads: int | None
    mean: float


# Each USE unit's least level a relative change is read at: below it a move is noise, however far it
# went from 0 (0 -> 0.0003 % of segments retransmitted ranked beside %util 0 -> 38 in a comparison
# of two lab scenarios, ahead of the CPU going 6 -> 48 % busy)
MOVE_FLOORS = {
    "%": 1.0,
    "ratio": 0.1,
    "tasks": 1.0,
    "requests": 0.1,
    "ms": 0.1,
    "KiB/s": 100.0,
    "kB/s": 100.0,
    "segments/s": 1.0,
    "/s": 1.0,
    "sockets": 10.0,
}


@dataclass(frozen=True)
class UseChange:
    """One USE metric at one thread count in both runs."""

    resource: str
    host: str | None
    instance: str
    check: str
    metric: str
    unit: str
    threads: int
    base: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.base

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "delta": self.delta}


@dataclass(frozen=True)
class WaitChange:
    """Where one process's threads waited at one thread count in both runs: class -> average threads
    (processes with several pids, e.g. a restarted server, summed)."""

    host: str | None
    process: str
    threads: int
    base: dict[str, float]
    new: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        classes = sorted(set(self.base) | set(self.new))
        return {
            "host": self.host,
            "process": self.process,
            "threads": self.threads,
            "classes": {c: [self.base.get(c, 0.0), self.new.get(c, 0.0)] for c in classes},
        }


@dataclass(frozen=True)
class UseMean:
    """A USE row averaged over a group's runs (the runs that have it)."""

    resource: str
    host: str | None
    instance: str
    check: str
    metric: str
    unit: str
    threads: int | None
    mean: float


def mean_use_rows(runs: Sequence[Sequence[UseLike]]) -> list[UseLike]:
    """One row per (resource, host, instance, check, metric, threads): the mean over the runs that
    have it (a group's runs measure one configuration). One run's rows come back as they are."""
    if len(runs) == 1:
        return list(runs[0])
    acc: dict[tuple, tuple[UseLike, list[float]]] = {}
    for rows in runs:
        for r in rows:
            if r.threads is None or not math.isfinite(r.mean):
                continue
            key = (r.resource, r.host or "", r.instance, r.check, r.metric, r.threads)
            acc.setdefault(key, (r, []))[1].append(r.mean)
    return [
        UseMean(r.resource, r.host, r.instance, r.check, r.metric, r.unit, r.threads, float(np.mean(v)))
        for r, v in acc.values()
    ]


def use_changes(base: Sequence[UseLike], new: Sequence[UseLike]) -> list[UseChange]:
    """The USE rows both runs have at the same thread count (same resource, host, instance, metric)."""

    def keyed(rows: Sequence[UseLike]) -> dict[tuple, UseLike]:
        return {
            (r.resource, r.host or "", r.instance, r.check, r.metric, r.threads): r
            for r in rows
            if r.threads is not None and math.isfinite(r.mean)
        }

    kb, kn = keyed(base), keyed(new)
    return [
        UseChange(
            b.resource, b.host, b.instance, b.check, b.metric, b.unit, int(b.threads), b.mean, kn[k].mean
        )
        for k, b in sorted(kb.items(), key=lambda kv: tuple(str(x) for x in kv[0]))
        if k in kn
    ]


def _waits_keyed(profiles: Sequence[WaitProfile]) -> dict[tuple[str, str, int], dict[str, float]]:
    out: dict[tuple[str, str, int], dict[str, float]] = {}
    for p in profiles:
        if p.selected != "named" or p.threads is None:
            continue
        classes = out.setdefault((p.host or "", p.process, p.threads), {})
        for c, v in p.classes.items():
            classes[c] = classes.get(c, 0.0) + v
    return out


def _waits_mean(runs: Sequence[Sequence[WaitProfile]]) -> dict[tuple[str, str, int], dict[str, float]]:
    """Each (host, process, threads)'s classes averaged over the runs that have it (a class a run
    lacks counts 0 in it)."""
    keyed = [_waits_keyed(r) for r in runs]
    out: dict[tuple[str, str, int], dict[str, float]] = {}
    for key in {k for kd in keyed for k in kd}:
        have = [kd[key] for kd in keyed if key in kd]
        classes = {c for d in have for c in d}
        out[key] = {c: sum(d.get(c, 0.0) for d in have) / len(have) for c in classes}
    return out


def _wait_changes(kb: dict, kn: dict) -> list[WaitChange]:
    return [WaitChange(k[0] or None, k[1], k[2], kb[k], kn[k]) for k in sorted(kb.keys() & kn.keys())]


@dataclass(frozen=True)
class Group:
    """One side of a comparison: runs of one configuration (`perfkit run` repeated), each with its
    name and, when known, its USE rows and wait profiles (None: USE not compared; waits computed)."""

    name: str
    runs: tuple[Analysis, ...]
    run_names: tuple[str, ...]
    use: tuple[Sequence[UseLike], ...] | None = None
    waits: tuple[Sequence[WaitProfile], ...] | None = None

    def __post_init__(self) -> None:
        if not self.runs or len(self.runs) != len(self.run_names):
            raise ValueError(f"{self.name}: a group needs runs, each with a name")


@dataclass
class Comparison:
    """NEW against BASE. Empty lists where the runs have nothing in common to compare."""

    base_name: str
    new_name: str
    metric: str
    peak_threads: tuple[int | None, int | None]
    peak: Change | None  # the two peaks' throughput (each at its own thread count)
    knee_threads: tuple[int | None, int | None]
    steps: list[StepChange] = field(default_factory=list)
    only_base: list[int] = field(default_factory=list)  # thread counts one run has and the other not
    only_new: list[int] = field(default_factory=list)
    appeared: list[Finding] = field(default_factory=list)
    gone: list[Finding] = field(default_factory=list)
    changed: list[FindingChange] = field(default_factory=list)
    verdict: tuple[str | None, str | None] = (None, None)  # each run's verdict rule
    usl: tuple[dict | None, dict | None] = (None, None)
    warnings: list[str] = field(default_factory=list)
    method: str = ""
    use: list[UseChange] = field(default_factory=list)
    waits: list[WaitChange] = field(default_factory=list)
    spread: str = WITHIN_RUN  # between-runs when both sides have at least 2 runs
    runs: tuple[list[dict], list[dict]] = ([], [])  # each side's runs: name, verdict, peak, knee
    # each side's runs' sweeps (name, Sweep), for the plot; not part of compare.json
    sweeps: tuple[list[tuple[str, Sweep]], list[tuple[str, Sweep]]] = field(default=([], []), repr=False)

    def spread_note(self) -> str:
        """What the judgement stands on, in words, for the verdict box."""
        nb, nn = len(self.runs[0]), len(self.runs[1])
        if self.spread == BETWEEN_RUNS:
            # runs of the load tool: the sweeps, times their steps' repeats (`perfkit run --repeat`)
            tb = max((len(s.throughput.runs[0]) for s in self.steps if s.throughput.runs), default=nb)
            tn = max((len(s.throughput.runs[1]) for s in self.steps if s.throughput.runs), default=nn)
            how = "" if (tb, tn) == (nb, nn) else f" of the load tool, repeats included; {nb} and {nn} sweeps"
            return f"judged against the spread between runs ({tb} BASE runs, {tn} NEW runs{how})"
        return (
            f"one run a side ({nb} BASE, {nn} NEW) cannot tell a change from run-to-run spread: two runs "
            "of one configuration differed by up to 40 % (docs/benchmarks.md, compare A/A); run each "
            "side several times (`perfkit run --repeat 3`, or a directory of runs) to judge between runs"
        )

    def use_moves(self, limit: int = 20) -> list[UseChange]:
        """The USE rows that moved most, relative to the larger of the two and to at least the unit's
        `MOVE_FLOORS` level (what to look at first)."""

        def moved(u: UseChange) -> float:
            scale = max(abs(u.base), abs(u.new), MOVE_FLOORS.get(u.unit, 0.0))
            return abs(u.delta) / scale if scale > 0 else 0.0

        return sorted((u for u in self.use if moved(u) > 0), key=moved, reverse=True)[:limit]

    def regressions(self, pct: float) -> list[str]:
        """What fell by more than `pct` % with the fall significant: the peak, then common steps."""
        out = []
        if self.peak and self.peak.significant and (self.peak.change_pct or 0) < -pct:
            out.append(f"the peak fell {self.peak.change_pct:+.1f}%")
        for s in self.steps:
            c = s.throughput
            if c.significant and (c.change_pct or 0) < -pct:
                out.append(f"{s.threads} threads: {c.change_pct:+.1f}%")
        return out

    def headline(self) -> str:
        """The verdict first: what moved, in one sentence."""
        parts = []
        kb, kn = self.knee_threads
        if kb != kn:
            parts.append(
                f"a knee appeared at {kn} threads"
                if kb is None
                else (
                    f"the knee at {kb} threads is gone"
                    if kn is None
                    else f"the knee moved from {kb} to {kn} threads"
                )
            )
        if self.peak is not None and self.peak.change_pct is not None:
            tb, tn = self.peak_threads
            where = f"at {tn} threads" if tb == tn else f"from {tb} to {tn} threads"
            pct = f"{self.peak.change_pct:+.1f}%"
            if self.peak.significant is None:
                move = f"the peak moved {pct} ({where}; not judged: {self.peak.why})"
            elif self.peak.significant:
                move = f"the peak moved {pct} ({where})"
            else:
                move = f"the peak did not move beyond noise ({pct}, {where})"
            parts.append(move)
        parts += [f"`{f.rule}` appeared" for f in self.appeared[:3]]
        parts += [f"`{f.rule}` is gone" for f in self.gone[:3]]
        if not parts:
            return "no difference beyond noise"
        text = "; ".join(parts)
        return text[0].upper() + text[1:]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": {"name": self.new_name, "verdict": self.verdict[1]},
            "headline": self.headline(),
            "metric": self.metric,
            "peak": {
                "threads": list(self.peak_threads),
                **(self.peak.to_dict() if self.peak else {}),
                self.metric: [self.peak.base, self.peak.new] if self.peak else [None, None],
            },
            "knee": {"threads": list(self.knee_threads)},
            "usl": {"base": self.usl[0], "new": self.usl[1]},
            "steps": [s.to_dict(self.metric) for s in self.steps],
            "only_in_base": self.only_base,
            "only_in_new": self.only_new,
            "findings": {
                "appeared": [f.rule for f in self.appeared],
                "gone": [f.rule for f in self.gone],
                "changed": [c.to_dict() for c in self.changed],
            },
            "warnings": self.warnings,
            "spread": self.spread,
            "runs": {"base": self.runs[0], "new": self.runs[1]},
            "method": self.method,
            "use": [u.to_dict() for u in self.use],
            "waits": [w.to_dict() for w in self.waits],
        }


def _mean_variance(x: np.ndarray) -> float:
    """The variance of the mean of an autocorrelated series.

    The lag-1 autocorrelation ρ is estimated and bias-corrected (Marriott & Pope: E[ρ̂] ≈ ρ −
    (1 + 3ρ)/n), clipped to [0, 0.95]; the variance of the mean is s²/n × (1 + ρ)/(1 − ρ), an AR(1)
    series' inflation.
    """
    n = len(x)
    centred = x - x.mean()
    denom = float((centred * centred).sum())
    rho = float((centred[1:] * centred[:-1]).sum()) / denom if denom > 0 else 0.0
    rho = min(max(rho + (1 + 3 * rho) / n, 0.0), 0.95)
    return float(x.var(ddof=1)) / n * (1 + rho) / (1 - rho)


def _t_quantile(q: float, df: float) -> float:
    """Student's t quantile. scipy.stats is imported here, not with this module: `analyze` imports
    the module (through the pipeline) and never compares, and scipy.stats takes 0.4 s to import."""
    from scipy import stats

    return float(stats.t.ppf(q, df))


def interval_pct(base: np.ndarray, new: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The `level` interval of (mean(new) − mean(base)) / mean(base) × 100: Welch's t on the two
    runs' interval means, each variance corrected for autocorrelation (`_mean_variance`), degrees of
    freedom by Welch–Satterthwaite on the counts of intervals (as a HAC standard error is used: the
    correction is in the variance; taking the effective sizes for degrees of freedom as well left a
    real −80 % fall whose warm-up drifted "within noise", at t quantiles of 12 and more)."""
    vb, vn = _mean_variance(base), _mean_variance(new)
    mb = float(base.mean())
    diff = float(new.mean()) - mb
    se = math.sqrt(vb + vn)
    if se == 0:
        return diff / mb * 100, diff / mb * 100
    eb, en = len(base), len(new)
    df = (vb + vn) ** 2 / (vb**2 / (eb - 1) + vn**2 / (en - 1))
    half = _t_quantile(0.5 + level / 2, df) * se
    return (diff - half) / mb * 100, (diff + half) / mb * 100


def change(
    base: pd.Series | None, new: pd.Series | None, *, min_change_pct: float, min_intervals: int
) -> Change:
    """How the mean of `new` moved from the mean of `base` (per-interval samples)."""
    b = _finite(base)
    n = _finite(new)
    mb = float(b.mean()) if len(b) else None
    mn = float(n.mean()) if len(n) else None
    if mb is None or mn is None:
        return Change(mb, mn, None, None, None, "a run has no figure here")
    if mb <= 0:
        return Change(mb, mn, None, None, None, "the base is zero: no relative change")
    pct = (mn / mb - 1.0) * 100.0
    if min(len(b), len(n)) < min_intervals:
        why = f"{min(len(b), len(n))} steady intervals, {min_intervals} needed to judge"
        return Change(mb, mn, pct, None, None, why)
    ci = interval_pct(b, n)
    significant = (ci[0] > 0 or ci[1] < 0) and abs(pct) >= min_change_pct
    return Change(mb, mn, pct, ci, bool(significant))


def fieller_ratio(mb: float, mn: float, vb: float, vn: float, t: float) -> tuple[float, float] | None:
    """Fieller's interval for mean(NEW) / mean(BASE): the θ with (mn − θ·mb)² ≤ t²·(vn + θ²·vb), where
    vb, vn are the variances of the two means. None when it is unbounded (mb² ≤ t²·vb: the base
    mean is not clear of zero)."""
    a = mb * mb - t * t * vb
    if a <= 0:
        return None
    # discriminant / 4 = t²·(vn·mb² + vb·mn² − t²·vb·vn) ≥ 0 whenever a > 0 (θ = mn/mb is inside)
    disc = max(mn * mn * mb * mb - a * (mn * mn - t * t * vn), 0.0)
    root = math.sqrt(disc)
    return (mn * mb - root) / a, (mn * mb + root) / a


def between_runs(
    base: Sequence[float], new: Sequence[float], *, min_change_pct: float, level: float = LEVEL
) -> Change:
    """How the mean of the NEW runs' figures moved from the BASE runs' (one figure per run, at
    least 2 a side): Welch's t on the run means, Fieller's interval on the ratio (module docstring)."""
    b, n = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    runs = (tuple(float(x) for x in b), tuple(float(x) for x in n))
    mb, mn = float(b.mean()), float(n.mean())
    kw: dict[str, Any] = {"spread": BETWEEN_RUNS, "runs": runs}
    if mb <= 0:
        return Change(mb, mn, None, None, None, "the base is zero: no relative change", **kw)
    pct = (mn / mb - 1.0) * 100.0
    vb, vn = float(b.var(ddof=1)) / len(b), float(n.var(ddof=1)) / len(n)
    if vb + vn == 0:
        why = "every run of each side has the same figure (copies of one run?): no spread between runs"
        return Change(mb, mn, pct, None, None, why, **kw)
    # Welch–Satterthwaite on the difference of the means; a side with no spread adds no term
    df = (vb + vn) ** 2 / sum(v * v / (k - 1) for v, k in ((vb, len(b)), (vn, len(n))) if v > 0)
    t = _t_quantile(0.5 + level / 2, df)
    ratio = fieller_ratio(mb, mn, vb, vn, t)
    if ratio is None:
        why = "the base runs' mean is not clear of zero: the interval of the ratio is unbounded"
        return Change(mb, mn, pct, None, None, why, df=df, **kw)
    ci = ((ratio[0] - 1) * 100, (ratio[1] - 1) * 100)
    significant = (ci[0] > 0 or ci[1] < 0) and abs(pct) >= min_change_pct
    return Change(mb, mn, pct, ci, bool(significant), df=df, **kw)


def _finite(x: pd.Series | None) -> np.ndarray:
    if x is None:
        return np.array([], dtype=float)
    a = pd.to_numeric(x, errors="coerce").to_numpy(dtype=float)
    return a[np.isfinite(a)]


def _by_threads(sweep: Sweep) -> dict[int, list[Step]]:
    out: dict[int, list[Step]] = {}
    for s in sweep.steps:
        out.setdefault(s.threads, []).append(s)
    return out


def _column(steps: list[Step], col: str) -> pd.Series | None:
    """A thread count's steady intervals of `col`, repeated steps pooled."""
    parts = [s.intervals[col] for s in steps if s.intervals is not None and col in s.intervals]
    return pd.concat(parts, ignore_index=True) if parts else None


NO_INTERVALS = "one figure a step, no per-interval samples (a report read back, a sweep table): not judged"


def _figures(steps: list[Step], col: str, attr: str) -> tuple[pd.Series | None, bool]:
    """A thread count's samples of `col` and whether they are intervals: the steady intervals, else
    each step's own figure (`attr`), which can be shown but not judged."""
    series = _column(steps, col)
    if series is not None:
        return series, True
    points = [getattr(s, attr) for s in steps if getattr(s, attr) is not None]
    return (pd.Series(points, dtype=float) if points else None), False


def _change(base: tuple[pd.Series | None, bool], new: tuple[pd.Series | None, bool], judged: dict) -> Change:
    c = change(base[0], new[0], **judged)
    if base[1] and new[1] or c.change_pct is None:
        return c
    return replace(c, ci_pct=None, significant=None, why=NO_INTERVALS)


def _findings_key(f: Finding) -> tuple[str, tuple[str, ...]]:
    return f.rule, tuple(sorted(f.hosts or ()))


def _plan(analysis: Analysis) -> dict[str, Any]:
    """How `perfkit run` drove the sweep (the manifest's sweep.plan); empty for a foreign archive."""
    sweep = analysis.dataset.run.sweep
    return sweep.plan if sweep else {}


def _workload_warnings(base: Analysis, new: Analysis, sb: Sweep, sn: Sweep) -> list[str]:
    out = []
    if sb.tool != sn.tool:
        out.append(f"the load tools differ: {sb.tool} in BASE, {sn.tool} in NEW")
    if sb.metric != sn.metric:
        out.append(f"throughput means {sb.metric} in BASE and {sn.metric} in NEW: compared as tps")
    pb, pn = _plan(base), _plan(new)
    for key in WORKLOAD_KEYS:
        if key in pb and key in pn and pb[key] != pn[key]:
            out.append(f"{key} differs: {pb[key]!r} in BASE, {pn[key]!r} in NEW")
    return out


def _group_warnings(side: str, g: Group) -> list[str]:
    """A group's runs should measure one configuration: each run that differs from the first is named."""
    out = []
    first, first_name = g.runs[0], g.run_names[0]
    p0 = _plan(first)
    for run, name in zip(g.runs[1:], g.run_names[1:], strict=True):
        s0, s1 = first.sweep, run.sweep
        assert isinstance(s0, Sweep) and isinstance(s1, Sweep)
        where = f"{side} run {name}"
        if s0.tool != s1.tool:
            out.append(f"{where}: the load tool is {s1.tool}, {s0.tool} in {first_name}")
        if s0.metric != s1.metric:
            out.append(f"{where}: throughput means {s1.metric}, {s0.metric} in {first_name}")
        p1 = _plan(run)
        for key in WORKLOAD_KEYS:
            if key in p0 and key in p1 and p0[key] != p1[key]:
                out.append(f"{where}: {key} is {p1[key]!r}, {p0[key]!r} in {first_name}")
    return out


def _run_figure(steps: list[Step], col: str, attr: str) -> float | None:
    """One run's figure at a thread count: the mean of its steady intervals, else of its steps' own
    figures (a report read back)."""
    x = _finite(_figures(steps, col, attr)[0])
    return float(x.mean()) if len(x) else None


def _step_change(
    b: list[list[Step]], n: list[list[Step]], col: str, attr: str, judged: dict, min_change_pct: float
) -> Change:
    """A thread count's change: between runs when both sides have at least 2 runs of the load tool
    with a figure there (runs of several sweeps, or one sweep's repeated steps: each started the
    tool afresh, so each drew its own run-to-run level), else within-run on the intervals (pooled)."""
    fb = [f for steps in b for f in (_run_figure([s], col, attr) for s in steps) if f is not None]
    fn = [f for steps in n for f in (_run_figure([s], col, attr) for s in steps) if f is not None]
    if len(fb) >= 2 and len(fn) >= 2:
        return between_runs(fb, fn, min_change_pct=min_change_pct)
    return _change(
        _figures([s for steps in b for s in steps], col, attr),
        _figures([s for steps in n for s in steps], col, attr),
        judged,
    )


def _peak_threads(sweeps: list[Sweep]) -> int:
    """The thread count most of a side's runs peak at (the first run's on a tie)."""
    counts = Counter(s.peak.threads for s in sweeps)
    top = max(counts.values())
    return next(s.peak.threads for s in sweeps if counts[s.peak.threads] == top)


def _group_knee(sweeps: list[Sweep], min_elasticity: float | None) -> int | None:
    """A side's knee: one run's own, else the sweep's rule on the mean of the runs per thread count."""
    if len(sweeps) == 1:
        return sweeps[0].knee_threads
    if min_elasticity is None:
        from perfkit.config import load_thresholds

        min_elasticity = float(load_thresholds()["sweep.knee"]["min_elasticity"])
    levels = _levels([s for sw in sweeps for s in sw.steps])
    elast = [(a, b, _elasticity(xa, xb, a, b)) for (a, xa), (b, xb) in zip(levels, levels[1:], strict=False)]
    return _knee(levels, elast, min_elasticity)


def _group_usl(sweeps: list[Sweep]) -> dict | None:
    """A side's USL: one run's own fit, else one fit on every run's points (levels where nothing
    completed left out, as sweep.py does)."""
    if len(sweeps) == 1:
        return sweeps[0].usl.to_dict() if sweeps[0].usl else None
    points = [(s.threads, s.tps) for sw in sweeps for s in sw.steps if s.tps > 0 and math.isfinite(s.tps)]
    try:
        return usl_model.fit([p[0] for p in points], [p[1] for p in points]).to_dict()
    except ValueError:
        return None


def _group_findings(runs: tuple[Analysis, ...]) -> dict[tuple[str, tuple[str, ...]], Finding]:
    """Every finding of any run of a side, keyed by rule and hosts; the worst severity kept."""
    out: dict[tuple[str, tuple[str, ...]], Finding] = {}
    for a in runs:
        for f in a.findings:
            k = _findings_key(f)
            if k not in out or SEVERITIES.index(f.severity) < SEVERITIES.index(out[k].severity):
                out[k] = f
    return out


def _run_dict(name: str, a: Analysis, metric: str) -> dict[str, Any]:
    sw = a.sweep
    assert isinstance(sw, Sweep)
    at_peak = [s for s in sw.steps if s.threads == sw.peak.threads]
    return {
        "name": name,
        "verdict": _rule(a.verdict),
        "peak": {"threads": sw.peak.threads, metric: _run_figure(at_peak, metric, metric)},
        "knee_threads": sw.knee_threads,
    }


def _as_group(side: Analysis | Group, name: str, use: Sequence[UseLike] | None, waits: Any) -> Group:
    if isinstance(side, Group):
        return side
    return Group(
        name,
        (side,),
        (name,),
        use=(use,) if use is not None else None,
        waits=(waits,) if waits is not None else None,
    )


def compare(
    base: Analysis | Group,
    new: Analysis | Group,
    *,
    base_name: str = "BASE",
    new_name: str = "NEW",
    min_change_pct: float = MIN_CHANGE_PCT,
    min_intervals: int = MIN_INTERVALS,
    use: tuple[Sequence[UseLike], Sequence[UseLike]] | None = None,
    waits: tuple[Sequence[WaitProfile], Sequence[WaitProfile]] | None = None,
    min_elasticity: float | None = None,
) -> Comparison:
    """NEW against BASE, each one run (an `Analysis`; `base_name`/`new_name` name it) or a `Group`
    of runs of one configuration (named by the group; `use`/`waits` then come from the group).
    `use`: both runs' USE rows (reports/use.py computes them), to set side by side; `waits`: both
    runs' wait profiles (default: computed from the datasets); `min_elasticity`: the knee rule's
    threshold for a group's mean curve (default: the package's thresholds). Raises ValueError when
    a run has no sweep to compare."""
    gb = _as_group(base, base_name, use[0] if use else None, waits[0] if waits else None)
    gn = _as_group(new, new_name, use[1] if use else None, waits[1] if waits else None)
    for g in (gb, gn):
        for a, name in zip(g.runs, g.run_names, strict=True):
            if not isinstance(a.sweep, Sweep):
                raise ValueError(f"{name}: no load sweep to compare (no load generator output was read)")
    swb: list[Sweep] = [a.sweep for a in gb.runs]  # type: ignore[misc]
    swn: list[Sweep] = [a.sweep for a in gn.runs]  # type: ignore[misc]
    metrics = {s.metric for s in swb + swn}
    metric = metrics.pop() if len(metrics) == 1 else "tps"
    judged = {"min_change_pct": min_change_pct, "min_intervals": min_intervals}
    lb, ln = [_by_threads(s) for s in swb], [_by_threads(s) for s in swn]
    tb, tn = set().union(*lb), set().union(*ln)
    steps = []
    for n in sorted(tb & tn):
        b = [d[n] for d in lb if n in d]
        w = [d[n] for d in ln if n in d]
        steps.append(
            StepChange(
                threads=n,
                throughput=_step_change(b, w, metric, metric, judged, min_change_pct),
                # p95 as each interval printed it (lat_ms at lat_pct), else the step's own figure
                p95_ms=_step_change(b, w, "lat_ms", "lat_pct_ms", judged, min_change_pct),
                intervals=(
                    sum(len(_finite(_figures(x, metric, metric)[0])) for x in b),
                    sum(len(_finite(_figures(x, metric, metric)[0])) for x in w),
                ),
                runs=(len(b), len(w)),
            )
        )
    # each run's figure at its own peak
    peak = _step_change(
        [d[s.peak.threads] for d, s in zip(lb, swb, strict=True)],
        [d[s.peak.threads] for d, s in zip(ln, swn, strict=True)],
        metric,
        metric,
        judged,
        min_change_pct,
    )
    fb, fn = _group_findings(gb.runs), _group_findings(gn.runs)
    changed = [
        FindingChange(k[0], k[1], (fb[k].severity, fn[k].severity))
        for k in fb.keys() & fn.keys()
        if fb[k].severity != fn[k].severity
    ]
    # judged between runs: the peak and every common step had several runs of the load tool a side
    # (sweeps, repeats); with no thread count in common the peaks alone say how it was judged
    grouped = all(x.spread == BETWEEN_RUNS for x in (peak, *(s.throughput for s in steps)))
    warnings = _workload_warnings(gb.runs[0], gn.runs[0], swb[0], swn[0])
    warnings += _group_warnings("BASE", gb) + _group_warnings("NEW", gn)
    if not grouped:
        warnings.append(ONE_RUN_WARNING.format(counts=f"BASE {len(gb.runs)}, NEW {len(gn.runs)}"))
    use_rows = (gb.use, gn.use) if gb.use is not None and gn.use is not None else None
    if gb.waits is not None and gn.waits is not None:
        wait_rows = (gb.waits, gn.waits)
    else:
        wait_rows = (
            tuple(thread_waits.profiles(a.dataset, a.sweep) for a in gb.runs),
            tuple(thread_waits.profiles(a.dataset, a.sweep) for a in gn.runs),
        )
    return Comparison(
        base_name=gb.name,
        new_name=gn.name,
        metric=metric,
        peak_threads=(
            swb[0].peak.threads if len(swb) == 1 else _peak_threads(swb),
            swn[0].peak.threads if len(swn) == 1 else _peak_threads(swn),
        ),
        peak=peak,
        knee_threads=(_group_knee(swb, min_elasticity), _group_knee(swn, min_elasticity)),
        steps=steps,
        only_base=sorted(tb - tn),
        only_new=sorted(tn - tb),
        appeared=[f for k, f in fn.items() if k not in fb],
        gone=[f for k, f in fb.items() if k not in fn],
        changed=sorted(changed, key=lambda c: min(SEVERITIES.index(s) for s in c.severity)),
        verdict=(_rule(gb.runs[0].verdict), _rule(gn.runs[0].verdict)),
        usl=(_group_usl(swb), _group_usl(swn)),
        warnings=warnings,
        use=use_changes(mean_use_rows(use_rows[0]), mean_use_rows(use_rows[1])) if use_rows else [],
        waits=_wait_changes(_waits_mean(wait_rows[0]), _waits_mean(wait_rows[1])),
        spread=BETWEEN_RUNS if grouped else WITHIN_RUN,
        runs=(
            [_run_dict(nm, a, metric) for nm, a in zip(gb.run_names, gb.runs, strict=True)],
            [_run_dict(nm, a, metric) for nm, a in zip(gn.run_names, gn.runs, strict=True)],
        ),
        sweeps=(list(zip(gb.run_names, swb, strict=True)), list(zip(gn.run_names, swn, strict=True))),
        method=_method(grouped, min_change_pct, min_intervals),
    )


def _method(grouped: bool, min_change_pct: float, min_intervals: int) -> str:
    floor = f"significant when the interval excludes 0 and the change is at least {min_change_pct:g}%"
    if grouped:
        return (
            f"per step: each run's mean of its steady intervals; change = mean(NEW runs) / mean(BASE runs) "
            f"− 1 with a {LEVEL:.0%} interval from Welch's t on the run means (Welch–Satterthwaite degrees "
            f"of freedom, Fieller's interval on the ratio); the peak from each run's own peak; {floor}; "
            f"a step where a side has one run is judged within that run, as below. Within a run: "
            f"Welch t on the steady intervals, each run's variance corrected for its lag-1 autocorrelation"
        )
    return (
        f"per step: the mean of the steady intervals; change = NEW/BASE − 1 with a {LEVEL:.0%} Welch t "
        f"interval, each run's variance corrected for its lag-1 autocorrelation; {floor} (the run-to-run "
        f"spread a run's own intervals cannot show); steps with fewer than {min_intervals} steady intervals "
        f"are not judged"
    )


def _rule(f: Finding | None) -> str | None:
    return f.rule if f is not None else None

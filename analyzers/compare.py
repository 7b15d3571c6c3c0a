"""Two sweeps side by side: did the change move the curve, and is the move beyond noise?

Pure: `compare(base, new)` takes two `Analysis` objects and returns a typed `Comparison`; the CLI
and the renderers only call and render it.

Per thread count both runs have, each run's steady-state intervals (sweep.Step.intervals: one row
per report interval after the warm-up) give its throughput (the mean interval: what the tool's own
summary reports) and its p95 (the mean of the per-interval p95s). The change is new / base − 1 with
a 95 % interval from Welch's t on the interval means, each run's variance corrected for
autocorrelation: one-second samples of a load test are not independent (a flush or a GC pause spans
seconds), and a rank test or a plain bootstrap that takes them for independent draws claims more
certainty than the run holds. Measured on simulated AR(1) A/A pairs (400 each): at lag-1
correlation 0-0.5 the interval alone false-alarms 3-6 % from 30 samples (14 % with 8), at 0.8-0.9
5-13 % from 30 (31 % with 8); with the floor below, at a 3 % coefficient of variation, 0-5.5 %
from 30 samples and up to 13.5 % with 8. A moving-block bootstrap of the medians (blocks of n^(1/3))
reached 15-70 % at correlation 0.5-0.9 with 10-60 samples (tests/test_compare.py keeps the interval
in check). Steps of 20 s and more are what a comparison needs.

A change is **significant** when its interval excludes zero *and* it is at least `min_change_pct`:
a run's own intervals show only its second-to-second noise, never the spread between two runs of
the same configuration (a warmer cache, a background flush, the VM's neighbours). The floor stands
for that spread; A/A runs in the lab measure it (docs/benchmarks.md). A step with fewer than
`min_intervals` steady intervals in either run is shown, never judged. Intervals that move together
(a drift, a flush spanning the step) hold few independent readings: their interval is wide, as it
should be, and only a change beyond it is called one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd
from scipy import stats

from perfkit.findings import SEVERITIES, Finding

from . import Analysis
from . import waits as thread_waits
from .sweep import Step, Sweep
from .waits import WaitProfile

MIN_CHANGE_PCT = 5.0  # below this a change is "~" however narrow its interval (run-to-run spread)
LEVEL = 0.95  # the bootstrap interval's coverage
MIN_INTERVALS = 5  # steady intervals a run needs at a step before its change is judged
# Run facts that make two sweeps measure different things: compared anyway, with a warning naming them.
WORKLOAD_KEYS = ("workload", "tables", "table_size", "time_s", "warmup_s", "percentile")


@dataclass(frozen=True)
class Change:
    """One figure in both runs and how it moved."""

    base: float | None
    new: float | None
    change_pct: float | None  # (new / base − 1) × 100
    ci_pct: tuple[float, float] | None  # the bootstrap interval of change_pct
    significant: bool | None  # None: not judged (too few intervals, or a figure missing)
    why: str = ""  # why it was not judged, when it was not

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
        }


@dataclass(frozen=True)
class StepChange:
    threads: int
    throughput: Change
    p95_ms: Change
    intervals: tuple[int, int]  # steady intervals in base and new

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


def wait_changes(base: Sequence[WaitProfile], new: Sequence[WaitProfile]) -> list[WaitChange]:
    """The named processes' wait profiles both runs have at the same thread count."""

    def keyed(profiles: Sequence[WaitProfile]) -> dict[tuple[str, str, int], dict[str, float]]:
        out: dict[tuple[str, str, int], dict[str, float]] = {}
        for p in profiles:
            if p.selected != "named" or p.threads is None:
                continue
            classes = out.setdefault((p.host or "", p.process, p.threads), {})
            for c, v in p.classes.items():
                classes[c] = classes.get(c, 0.0) + v
        return out

    kb, kn = keyed(base), keyed(new)
    return [WaitChange(k[0] or None, k[1], k[2], kb[k], kn[k]) for k in sorted(kb.keys() & kn.keys())]


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

    def use_moves(self, limit: int = 20) -> list[UseChange]:
        """The USE rows that moved most, relative to the larger of the two (what to look at first)."""

        def moved(u: UseChange) -> float:
            scale = max(abs(u.base), abs(u.new))
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
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
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
    sweep = (analysis.dataset.manifest or {}).get("sweep")
    plan = sweep.get("plan") if isinstance(sweep, dict) else None
    return plan if isinstance(plan, dict) else {}


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


def compare(
    base: Analysis,
    new: Analysis,
    *,
    base_name: str = "BASE",
    new_name: str = "NEW",
    min_change_pct: float = MIN_CHANGE_PCT,
    min_intervals: int = MIN_INTERVALS,
    use: tuple[Sequence[UseLike], Sequence[UseLike]] | None = None,
    waits: tuple[Sequence[WaitProfile], Sequence[WaitProfile]] | None = None,
) -> Comparison:
    """NEW against BASE. `use`: both runs' USE rows (reports/use.py computes them), to set side by
    side; `waits`: both runs' wait profiles (default: computed from the datasets). Raises ValueError
    when either run has no sweep to compare."""
    sb, sn = base.sweep, new.sweep
    if not isinstance(sb, Sweep) or not isinstance(sn, Sweep):
        which = base_name if not isinstance(sb, Sweep) else new_name
        raise ValueError(f"{which}: no load sweep to compare (no load generator output was read)")
    metric = sb.metric if sb.metric == sn.metric else "tps"
    judged = {"min_change_pct": min_change_pct, "min_intervals": min_intervals}
    lb, ln = _by_threads(sb), _by_threads(sn)
    steps = []
    for n in sorted(set(lb) & set(ln)):
        tb, tn = _figures(lb[n], metric, metric), _figures(ln[n], metric, metric)
        steps.append(
            StepChange(
                threads=n,
                throughput=_change(tb, tn, judged),
                # p95 as each interval printed it (lat_ms at lat_pct), else the step's own figure
                p95_ms=_change(
                    _figures(lb[n], "lat_ms", "lat_pct_ms"), _figures(ln[n], "lat_ms", "lat_pct_ms"), judged
                ),
                intervals=(len(_finite(tb[0])), len(_finite(tn[0]))),
            )
        )
    peak_b, peak_n = sb.peak, sn.peak
    pb, pn = _figures(lb[peak_b.threads], metric, metric), _figures(ln[peak_n.threads], metric, metric)
    fb = {_findings_key(f): f for f in base.findings}
    fn = {_findings_key(f): f for f in new.findings}
    changed = [
        FindingChange(k[0], k[1], (fb[k].severity, fn[k].severity))
        for k in fb.keys() & fn.keys()
        if fb[k].severity != fn[k].severity
    ]
    return Comparison(
        base_name=base_name,
        new_name=new_name,
        metric=metric,
        peak_threads=(peak_b.threads, peak_n.threads),
        peak=_change(pb, pn, judged),
        knee_threads=(sb.knee_threads, sn.knee_threads),
        steps=steps,
        only_base=sorted(set(lb) - set(ln)),
        only_new=sorted(set(ln) - set(lb)),
        appeared=[f for k, f in fn.items() if k not in fb],
        gone=[f for k, f in fb.items() if k not in fn],
        changed=sorted(changed, key=lambda c: min(SEVERITIES.index(s) for s in c.severity)),
        verdict=(_rule(base.verdict), _rule(new.verdict)),
        usl=(sb.usl.to_dict() if sb.usl else None, sn.usl.to_dict() if sn.usl else None),
        warnings=_workload_warnings(base, new, sb, sn),
        use=use_changes(*use) if use is not None else [],
        waits=wait_changes(*waits) if waits is not None else wait_changes(*_profiles(base, new)),
        method=(
            f"per step: the mean of the steady intervals; change = NEW/BASE − 1 with a {LEVEL:.0%} Welch t "
            f"interval, each run's variance corrected for its lag-1 autocorrelation; significant when the "
            f"interval excludes 0 and the change is at least {min_change_pct:g}% (the run-to-run spread a "
            f"run's own intervals cannot show); steps with fewer than {min_intervals} steady intervals are "
            f"not judged"
        ),
    )


def _profiles(base: Analysis, new: Analysis) -> tuple[list[WaitProfile], list[WaitProfile]]:
    return (
        thread_waits.profiles(base.dataset, base.sweep),
        thread_waits.profiles(new.dataset, new.sweep),
    )


def _rule(f: Finding | None) -> str | None:
    return f.rule if f is not None else None

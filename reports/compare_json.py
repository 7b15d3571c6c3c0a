"""compare.json: `perfkit compare`'s machine-readable result, one shape (issue 18):

    {"perfkit_version": ..., "base": {"name", "verdict", "peak": {"threads", <metric>}, "knee_threads",
     "runs": [BASE's run names]}, "comparisons": [Comparison.to_dict() for each NEW side, in order]}

A side may be a group of runs: BASE's figures are then the group's (the peak: the mean of each run's
figure at its own peak, at the thread count most runs peak at; the knee: of the runs' mean curve;
the verdict: the first run's), and each comparison lists both sides' runs (`runs`: {"base": [...],
"new": [...]}, each run's name, verdict, peak and knee), says what a change was judged against
(`spread`: "between-runs" or "within-run", also per step and for the peak) and, between runs, gives
each run's figure (`run_means`, `p95_run_means`) and the degrees of freedom (`df`, `p95_df`).

Keys may be added over time, never renamed.
"""

from __future__ import annotations

import json
from typing import Any

from perfkit import __version__
from perfkit.analyzers import Analysis
from perfkit.analyzers.compare import Comparison
from perfkit.findings import jsonable


def build(base_name: str, base: Analysis, comparisons: list[Comparison]) -> dict[str, Any]:
    sweep = base.sweep
    peak = getattr(sweep, "peak", None)
    metric = getattr(sweep, "metric", "tps")
    first = comparisons[0] if comparisons else None
    runs = first.runs[0] if first else []
    knee = getattr(sweep, "knee_threads", None)
    if len(runs) > 1 and first is not None:  # a group: its figures, not its first run's
        peak_doc = {"threads": first.peak_threads[0], metric: first.peak.base if first.peak else None}
        knee = first.knee_threads[0]
    else:
        peak_doc = {"threads": peak.threads, metric: getattr(peak, metric)} if peak else None
    return {
        "perfkit_version": __version__,
        "base": {
            "name": base_name,
            "verdict": base.verdict.rule if base.verdict else None,
            "peak": peak_doc,
            "knee_threads": knee,
            "runs": [r["name"] for r in runs] or [base_name],
        },
        "comparisons": [c.to_dict() for c in comparisons],
    }


def render(base_name: str, base: Analysis, comparisons: list[Comparison]) -> str:
    return json.dumps(jsonable(build(base_name, base, comparisons)), indent=2, ensure_ascii=False) + "\n"

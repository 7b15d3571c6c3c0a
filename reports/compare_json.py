"""compare.json: `perfkit compare`'s machine-readable result, one shape (issue 18):

    {"perfkit_version": ..., "base": {"name", "verdict", "peak": {"threads", <metric>}, "knee_threads"},
     "comparisons": [Comparison.to_dict() for each NEW run, in the order given]}

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
    return {
        "perfkit_version": __version__,
        "base": {
            "name": base_name,
            "verdict": base.verdict.rule if base.verdict else None,
            "peak": {"threads": peak.threads, metric: getattr(peak, metric)} if peak else None,
            "knee_threads": getattr(sweep, "knee_threads", None),
        },
        "comparisons": [c.to_dict() for c in comparisons],
    }


def render(base_name: str, base: Analysis, comparisons: list[Comparison]) -> str:
    return json.dumps(jsonable(build(base_name, base, comparisons)), indent=2, ensure_ascii=False) + "\n"

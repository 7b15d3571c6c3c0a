"""findings.json: the machine-readable report, in design.md's shape (the JSON contract)."""

from __future__ import annotations

import json
from typing import Any

from perfkit import __version__
from perfkit.analyzers import Analysis
from perfkit.findings import jsonable


def build(analysis: Analysis) -> dict[str, Any]:
    """The findings.json document. Keys may be added over time, never renamed."""
    ds = analysis.dataset
    return jsonable(
        {
            "format_version": 1,
            "perfkit_version": __version__,
            "source": ds.source,
            "sweep": analysis.sweep.to_dict() if analysis.sweep is not None else None,
            "verdict": analysis.verdict.rule if analysis.verdict else None,
            "findings": [f.to_dict() for f in analysis.findings],
            "skipped": [s.to_dict() for s in analysis.skipped],
            "inputs": ds.inputs(),
        }
    )


def render(analysis: Analysis) -> str:
    return json.dumps(build(analysis), indent=2, ensure_ascii=False) + "\n"

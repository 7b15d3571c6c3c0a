"""findings.json: the machine-readable report, in design.md's shape (the JSON contract).

Beyond design.md's keys (never renamed): `verdict` (the first finding's rule, null when none
locates a bottleneck), `complete` (false when a rule failed), `failed` (each failed rule and why),
`excluded_steps` (load runs left out of the sweep model: failed, interrupted, stray copies), `use`
(the USE rows the report's tables show: reports/use.py), `processes` (the busiest processes per
host and step), `timeline` (the clock span and the steps on the controller's UTC clock) and `waits`
(per step, host and process: average threads by wait class and the top state/syscall/wchan rows,
analyzers/waits.py) and `sessions` (per database host and step: the processlist's sessions by class and
lock kind, averaged over the step's load window, analyzers/db.py `session_profiles`).
"""

from __future__ import annotations

import json
from typing import Any

from perfkit import __version__
from perfkit.analyzers import Analysis
from perfkit.analyzers.db import SessionStep, session_profiles
from perfkit.analyzers.waits import WaitProfile, profiles
from perfkit.archive import shown_name
from perfkit.findings import jsonable

from . import use


def build(
    analysis: Analysis,
    *,
    use_rows: list[use.UseRow] | None = None,
    processes: list[use.ProcessRow] | None = None,
    timeline: use.Timeline | None = None,
    waits: list[WaitProfile] | None = None,
    sessions: list[SessionStep] | None = None,
) -> dict[str, Any]:
    """The findings.json document. Keys may be added over time, never renamed."""
    ds = analysis.dataset
    rows = use.use_rows(ds) if use_rows is None else use_rows
    procs = use.top_processes(ds) if processes is None else processes
    tl = use.timeline(ds, analysis.sweep) if timeline is None else timeline
    wait_rows = profiles(ds, analysis.sweep) if waits is None else waits
    session_rows = session_profiles(ds, analysis.sweep) if sessions is None else sessions
    return _shown(
        jsonable(
            {
                "format_version": 1,
                "perfkit_version": __version__,
                "source": ds.source,
                "sweep": analysis.sweep.to_dict() if analysis.sweep is not None else None,
                "verdict": analysis.verdict.rule if analysis.verdict else None,
                "findings": [f.to_dict() for f in analysis.findings],
                "skipped": [s.to_dict() for s in analysis.skipped],
                "complete": analysis.complete,
                "failed": [f.to_dict() for f in analysis.failed],
                "excluded_steps": [e.to_dict() for e in analysis.excluded_steps],
                "inputs": ds.inputs(),
                "use": [r.to_dict() for r in rows],
                "processes": [p.to_dict() for p in procs],
                "timeline": tl.summary(),
                "waits": [w.to_dict() for w in wait_rows],
                "sessions": [s.to_dict() for s in session_rows],
            }
        )
    )


def _shown(value: Any) -> Any:
    """Every string of the document as `shown_name` gives it: a file name that is not UTF-8 (a
    capture's path, quoted in findings' evidence and text too) as `\\xNN`, not a lone surrogate that
    no UTF-8 writer accepts."""
    if isinstance(value, str):
        return shown_name(value)
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def render(analysis: Analysis, **parts: Any) -> str:
    return json.dumps(build(analysis, **parts), indent=2, ensure_ascii=False) + "\n"

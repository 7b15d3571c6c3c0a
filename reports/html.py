"""report.html: one self-contained file (CSS, PNG plots and SVG flame graphs inline, nothing remote).

Jinja2 with autoescape: every string from a capture reaches the page escaped. The only markup we
insert ourselves is the base64 data URI of our own PNGs and the flame graph SVG that
reports/flamegraph.py builds (it escapes frame names; the CSP meta tag forbids scripts and any
remote load, so even a flaw there could not run code or fetch anything).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from perfkit import __version__
from perfkit.analyzers import Analysis
from perfkit.analyzers.db import SessionStep
from perfkit.analyzers.waits import WaitProfile
from perfkit.archive import shown_name
from perfkit.findings import count, number

from . import use
from .plots import Flame, Plot


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("perfkit.reports", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # every value printed, before escaping: file names that are not UTF-8 as `\\xNN` (Markup is
        # our own escaped SVG, whose text was made from shown names already)
        finalize=lambda v: shown_name(v) if isinstance(v, str) and not isinstance(v, Markup) else v,
    )
    env.filters["num"] = number
    env.filters["count"] = count
    env.filters["cell"] = use.fmt_cell
    env.filters["compact"] = lambda v: json.dumps(v, ensure_ascii=False, default=str)[:400]
    return env


def _image(p: Plot) -> dict[str, Any]:
    return {
        "title": p.title,
        "note": p.note,
        "name": p.name,
        "src": "data:image/png;base64," + base64.b64encode(p.png).decode("ascii"),
    }


def render(
    analysis: Analysis,
    plots: list[Plot],
    flames: list[Flame] | None = None,
    *,
    use_rows: list[use.UseRow] | None = None,
    processes: list[use.ProcessRow] | None = None,
    flame_note: str = "",
    waits: list[WaitProfile] | None = None,
    sessions: list[SessionStep] | None = None,
) -> str:
    """The page: verdict, sweep, timeline, then findings and USE tables by resource and host."""
    ds = analysis.dataset
    rows = use.use_rows(ds) if use_rows is None else use_rows
    procs = use.top_processes(ds) if processes is None else processes
    per_capture = [p for p in plots if p.resource]
    by_name = {p.name: _image(p) for p in plots}
    secs = use.sections(analysis.findings, rows, procs, per_capture)
    for sec in secs:
        for b in sec.blocks:
            b.plots = [by_name[p.name] for p in b.plots]
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            a=analysis,
            ds=ds,
            sweep=analysis.sweep,
            verdict=analysis.verdict,
            plot=by_name,
            sections=secs,
            flames=[
                {"name": f.name, "title": f.title, "svg": Markup(f.svg)}  # our renderer's escaped SVG
                for f in flames or []
            ],
            flame_note=flame_note,
            waits=waits or [],
            sessions=sessions or [],
            profiles=[c for c in ds.captures if c.kind in ("folded", "perf_script", "pprof")],
            version=__version__,
        )
    )

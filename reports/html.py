"""report.html: one self-contained file (CSS and PNG plots inline, nothing remote), Jinja2 with autoescape.

Every string from a capture reaches the page through autoescaping; the only markup we build
ourselves is the base64 data URI of our own PNGs. A CSP meta tag forbids scripts and any remote load.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from perfkit import __version__
from perfkit.analyzers import Analysis

from .plots import Plot


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("perfkit.reports", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["compact"] = lambda v: json.dumps(v, ensure_ascii=False, default=str)[:400]
    return env


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def render(analysis: Analysis, plots: list[Plot]) -> str:
    images = [
        {
            "title": p.title,
            "note": p.note,
            "name": p.name,
            "src": "data:image/png;base64," + base64.b64encode(p.png).decode("ascii"),
        }
        for p in plots
    ]
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            a=analysis,
            ds=analysis.dataset,
            sweep=analysis.sweep,
            verdict=analysis.verdict,
            plots=images,
            version=__version__,
        )
    )

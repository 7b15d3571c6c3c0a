"""compare.html: `perfkit compare` as one self-contained page (like report.html: CSS, PNG and SVG
inline, a CSP that forbids scripts and remote loads, every string from a capture escaped)."""

from __future__ import annotations

from markupsafe import Markup

from perfkit import __version__
from perfkit.analyzers.compare import Comparison

from .html import _env, _image
from .plots import Flame, Plot


def render(base_name: str, comparisons: list[Comparison], plot: Plot | None, flames: list[Flame]) -> str:
    return (
        _env()
        .get_template("compare.html.j2")
        .render(
            base_name=base_name,
            comparisons=comparisons,
            plot=_image(plot) if plot is not None else None,
            flames=[{"title": f.title, "svg": Markup(f.svg)} for f in flames],  # our renderer's escaped SVG
            version=__version__,
        )
    )

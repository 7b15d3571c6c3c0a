"""Flame graphs as inline SVG, from folded stacks (`root;...;leaf`, count).

Laid out as Brendan Gregg's flamegraph.pl lays them out: the root at the bottom, each frame as wide
as its samples, children sorted alphabetically per level (so the x axis is not time and identical
profiles draw identically), colours from the "hot" palette picked by a hash of the name (stable
across runs and machines, unlike Python's `hash`). Frames narrower than 0.1 % of the width are left
out with everything above them: they could not be seen or hovered anyway.

The SVG is self-contained and needs no script: every frame is a `<g>` holding its `<rect>`, a
`<title>` (the hover text: name, samples, percent) and, when wide enough, a `<text>` label. Every
name is XML-escaped (frame names come from profiled programs and may hold `<`, `&`, quotes).

Example, for whoever wires it into a report (the string is safe markup: wrap it with
`markupsafe.Markup` rather than `|safe` in a template)::

    from perfkit.parsers import folded
    from perfkit.reports.flamegraph import svg

    frame = folded.parse("hosts/db1/perf-folded.out")
    fragment = svg(list(zip(frame["stack"], frame["count"])), title="tikv-server on db1")

    # Go pprof: pprof.folded(frame, col) gives "a;b;c N" lines
    # stacks = [(line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1])) for line in lines]
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

FRAME_HEIGHT = 16
FONT_SIZE = 12
CHAR_WIDTH = 0.59 * FONT_SIZE  # average glyph width of the sans-serif font at FONT_SIZE
MIN_FRACTION = 0.001  # frames below 0.1 % of the total are not drawn
_PAD_TOP = 2 * FRAME_HEIGHT + 8  # the title line
_PAD_SIDE = 10
_PAD_BOTTOM = 10
# Characters XML 1.0 forbids even escaped: replaced, so a stray control byte in a symbol cannot make
# the whole page's SVG invalid.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass
class _Node:
    name: str
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _text(value: str) -> str:
    """Escaped for XML text and attribute values."""
    return escape(_XML_INVALID.sub("\ufffd", value), {'"': "&quot;", "'": "&#39;"})


def _colour(name: str) -> str:
    """flamegraph.pl's "hot" palette (red to yellow), the position chosen by a CRC of the name."""
    h = zlib.crc32(name.encode("utf-8", "surrogatepass"))
    v1, v2, v3 = (h & 0xFF) / 255, ((h >> 8) & 0xFF) / 255, ((h >> 16) & 0xFF) / 255
    return f"rgb({205 + int(50 * v3)},{int(230 * v1)},{int(55 * v2)})"


def _tree(stacks: list[tuple[str, int]]) -> _Node:
    root = _Node("all")
    for stack, count in stacks:
        count = int(count)
        if count <= 0 or not stack:
            continue
        root.count += count
        node = root
        for name in stack.split(";"):
            node = node.children.setdefault(name, _Node(name))
            node.count += count
    return root


def svg(stacks: list[tuple[str, int]], *, title: str, width: int = 1200) -> str:
    """An inline SVG flame graph of folded stacks.

    Args:
        stacks: `(stack, samples)` pairs, the stack `root;...;leaf` (perf's folded stacks begin
            with the comm). Repeated stacks are summed; non-positive counts are ignored.
        title: shown above the graph (escaped).
        width: of the SVG in pixels.

    Returns:
        `<svg ...>...</svg>`, well-formed XML, deterministic for the same input.
    """
    root = _tree(stacks)
    inner = width - 2 * _PAD_SIDE
    frames: list[tuple[int, float, float, _Node]] = []  # depth, x, width, node
    depth_max = 0
    if root.count:
        scale = inner / root.count
        todo = [(root, 0, float(_PAD_SIDE))]
        while todo:
            node, depth, x = todo.pop()
            if node.count < MIN_FRACTION * root.count:
                continue
            frames.append((depth, x, node.count * scale, node))
            depth_max = max(depth_max, depth)
            cx = x
            kids = []
            for name in sorted(node.children):
                child = node.children[name]
                kids.append((child, depth + 1, cx))
                cx += child.count * scale
            todo.extend(reversed(kids))
    height = _PAD_TOP + (depth_max + 1) * FRAME_HEIGHT + _PAD_BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Verdana, sans-serif" font-size="{FONT_SIZE}">',
        f'<text x="{width / 2:.1f}" y="{FRAME_HEIGHT + 4}" text-anchor="middle" '
        f'font-size="{FONT_SIZE + 4}">{_text(title)}</text>',
    ]
    if not root.count:
        out.append(
            f'<text x="{width / 2:.1f}" y="{_PAD_TOP + FRAME_HEIGHT}" text-anchor="middle">no samples</text>'
        )
    for depth, x, w, node in sorted(frames, key=lambda f: (f[0], f[1])):
        y = height - _PAD_BOTTOM - (depth + 1) * FRAME_HEIGHT
        pct = node.count * 100 / root.count
        hover = f"{node.name} ({node.count:,} samples, {pct:.2f}%)"
        fill = "rgb(240,240,240)" if node is root else _colour(node.name)
        parts = [
            f"<g><title>{_text(hover)}</title>",
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{FRAME_HEIGHT - 1}" fill="{fill}" rx="2"/>',
        ]
        chars = int((w - 6) / CHAR_WIDTH)
        if chars >= 3:
            label = node.name if len(node.name) <= chars else node.name[: chars - 2] + ".."
            parts.append(f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 4}">{_text(label)}</text>')
        parts.append("</g>")
        out.append("".join(parts))
    out.append("</svg>")
    return "\n".join(out)

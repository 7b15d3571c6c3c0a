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


def _layout(root: _Node, width: int) -> tuple[list[tuple[int, float, float, _Node]], int]:
    """(depth, x, width, node) of every frame wide enough to draw, and the SVG's height."""
    inner = width - 2 * _PAD_SIDE
    frames: list[tuple[int, float, float, _Node]] = []
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
    return sorted(frames, key=lambda f: (f[0], f[1])), _PAD_TOP + (depth_max + 1) * FRAME_HEIGHT + _PAD_BOTTOM


def _head(width: int, height: int, title: str, extra: str = "") -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Verdana, sans-serif" font-size="{FONT_SIZE}">',
        f'<text x="{width / 2:.1f}" y="{FRAME_HEIGHT + 4}" text-anchor="middle" '
        f'font-size="{FONT_SIZE + 4}">{_text(title)}</text>',
        *([extra] if extra else []),
    ]


def _frame(x: float, y: int, w: float, name: str, hover: str, fill: str, stroke: str = "") -> str:
    parts = [
        f"<g><title>{_text(hover)}</title>",
        f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{FRAME_HEIGHT - 1}" fill="{fill}" '
        f'rx="2"{stroke}/>',
    ]
    chars = int((w - 6) / CHAR_WIDTH)
    if chars >= 3:
        label = name if len(name) <= chars else name[: chars - 2] + ".."
        parts.append(f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 4}">{_text(label)}</text>')
    parts.append("</g>")
    return "".join(parts)


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
    frames, height = _layout(root, width)
    out = _head(width, height, title)
    if not root.count:
        out.append(
            f'<text x="{width / 2:.1f}" y="{_PAD_TOP + FRAME_HEIGHT}" text-anchor="middle">no samples</text>'
        )
    for depth, x, w, node in frames:
        y = height - _PAD_BOTTOM - (depth + 1) * FRAME_HEIGHT
        pct = node.count * 100 / root.count
        hover = f"{node.name} ({node.count:,} samples, {pct:.2f}%)"
        fill = "rgb(240,240,240)" if node is root else _colour(node.name)
        out.append(_frame(x, y, w, node.name, hover, fill))
    out.append("</svg>")
    return "\n".join(out)


# A differential frame is coloured only when its share of the samples moved by at least this many
# percentage points AND the move is beyond sampling noise (a two-proportion z of at least DIFF_MIN_Z):
# a frame at 0.00 % in both, or one that wobbles by a few samples, stays neutral.
DIFF_MIN_POINTS = 0.1
DIFF_MIN_Z = 3.0
NEUTRAL = "rgb(225,225,225)"


@dataclass(frozen=True)
class FrameDiff:
    """One frame (a path from the root) in both profiles, as shares of each profile's samples."""

    path: tuple[str, ...]
    base: int
    new: int
    base_pct: float
    new_pct: float
    z: float

    @property
    def points(self) -> float:
        """The share's change, percentage points (NEW − BASE)."""
        return self.new_pct - self.base_pct

    @property
    def significant(self) -> bool:
        return abs(self.points) >= DIFF_MIN_POINTS and abs(self.z) >= DIFF_MIN_Z


def frame_diffs(base: list[tuple[str, int]], new: list[tuple[str, int]]) -> dict[tuple[str, ...], FrameDiff]:
    """Every frame path of either profile with its samples and shares in both (normalised by each
    profile's total, so a longer or busier profile is not "more" everywhere)."""
    rb, rn = _tree(base), _tree(new)
    counts: dict[tuple[str, ...], list[int]] = {}
    for i, root in enumerate((rb, rn)):
        todo = [((), root)]
        while todo:
            path, node = todo.pop()
            for name, child in node.children.items():
                key = (*path, name)
                counts.setdefault(key, [0, 0])[i] += child.count
                todo.append((key, child))
    out = {}
    for key, (a, b) in counts.items():
        pa = a / rb.count if rb.count else 0.0
        pb = b / rn.count if rn.count else 0.0
        out[key] = FrameDiff(key, a, b, pa * 100, pb * 100, _z(a, rb.count, b, rn.count))
    return out


def _z(a: int, na: int, b: int, nb: int) -> float:
    """Two-proportion z statistic of a/na against b/nb (0 when undefined)."""
    if not na or not nb:
        return 0.0
    pooled = (a + b) / (na + nb)
    se = (pooled * (1 - pooled) * (1 / na + 1 / nb)) ** 0.5
    return 0.0 if se == 0 else (b / nb - a / na) / se


def _diff_colour(d: FrameDiff) -> str:
    """Red for more in NEW, blue for less, saturating at 5 points; neutral when not significant."""
    if not d.significant:
        return NEUTRAL
    k = min(1.0, abs(d.points) / 5.0)
    light = int(225 - 170 * k)
    return f"rgb(255,{light},{light})" if d.points > 0 else f"rgb({light},{light},255)"


def diff_svg(
    base: list[tuple[str, int]],
    new: list[tuple[str, int]],
    *,
    title: str,
    base_name: str = "BASE",
    new_name: str = "NEW",
    width: int = 1200,
) -> str:
    """A differential flame graph: NEW's shape (widths are NEW's samples), each frame coloured by how
    its share of the samples moved from BASE — red more in NEW, blue less, grey within noise
    (DIFF_MIN_POINTS, DIFF_MIN_Z); a frame BASE never had is outlined. The direction is written on the
    graph, because differential graphs are routinely read backwards. Frames only BASE had cannot be
    drawn in NEW's shape: the largest are listed under the title. The values must be counts (samples,
    objects): the noise test takes them for independent draws, which nanoseconds or bytes are not."""
    diffs = frame_diffs(base, new)
    root = _tree(new)
    frames, height = _layout(root, width)
    # the topmost frame of each gone branch (its callees are gone with it)
    gone = sorted(
        (
            d
            for d in diffs.values()
            if d.new == 0 and d.significant and (len(d.path) == 1 or diffs[d.path[:-1]].new > 0)
        ),
        key=lambda d: d.base_pct,
        reverse=True,
    )
    legend = (
        f"width: samples in {new_name}; red: a larger share in {new_name} than in {base_name}, "
        f"blue: smaller; grey: within noise (< {DIFF_MIN_POINTS:g} points or |z| < {DIFF_MIN_Z:g}); "
        f"outlined: not in {base_name}"
    )
    if gone:
        names = ", ".join(f"{d.path[-1]} ({d.base_pct:.1f}%)" for d in gone[:5])
        legend += f". Gone in {new_name}: {names}."
    height += FRAME_HEIGHT
    out = _head(
        width, height, title, f'<text x="{_PAD_SIDE}" y="{2 * FRAME_HEIGHT + 6}">{_text(legend)}</text>'
    )
    if not root.count:
        y = _PAD_TOP + 2 * FRAME_HEIGHT
        out.append(f'<text x="{width / 2:.1f}" y="{y}" text-anchor="middle">no samples</text>')
    paths = _paths(root)
    for depth, x, w, node in frames:
        y = height - _PAD_BOTTOM - (depth + 1) * FRAME_HEIGHT
        if node is root:
            out.append(_frame(x, y, w, node.name, f"all ({node.count:,} samples in {new_name})", NEUTRAL))
            continue
        d = diffs[paths[id(node)]]
        hover = (
            f"{node.name}: {d.base_pct:.2f}% in {base_name} → {d.new_pct:.2f}% in {new_name} "
            f"({d.points:+.2f} points; {d.base:,} → {d.new:,} samples)"
        )
        stroke = ' stroke="black" stroke-width="1.5"' if d.base == 0 else ""
        out.append(_frame(x, y, w, node.name, hover, _diff_colour(d), stroke))
    out.append("</svg>")
    return "\n".join(out)


def _paths(root: _Node) -> dict[int, tuple[str, ...]]:
    """id(node) -> its path from the root (the root's children first)."""
    out: dict[int, tuple[str, ...]] = {}
    todo: list[tuple[tuple[str, ...], _Node]] = [((), root)]
    while todo:
        path, node = todo.pop()
        for name, child in node.children.items():
            out[id(child)] = (*path, name)
            todo.append(((*path, name), child))
    return out

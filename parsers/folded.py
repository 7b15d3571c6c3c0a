"""folded: folded stacks, one line per distinct stack: `comm;root;...;leaf COUNT`.

Brendan Gregg's stackcollapse format, as perfkit writes it on the host with
`perf script -i perf.data | awk "$_FOLD"` (collectors/captures.py, capture id `perf-folded`), and as
`stackcollapse-perf.pl` and other collapsers write it. The first frame is the process name (comm),
the last the leaf (where the sample was taken); COUNT is the number of samples. Frames may contain
spaces (`operator new(unsigned long)`), so the count is the last space-separated token. A stack that
appears on several lines (captures concatenated) is summed into one row, in first-appearance order.

Schema (one row per distinct stack):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| stack | string | the full stack `comm;root;...;leaf` as printed |
| count | int64 | samples in that stack |
| comm | string | first frame: the process (thread) name |
| leaf | string | last frame: the function the sample hit |
| depth | Int64 | number of `;`-separated frames in `stack`, the comm included |

What it reads beside its rows: `EXTRAS` (below).

Public helpers for the flame graph and hotspot code: `stacks_frame` builds this frame from
`(stack, count)` pairs (perf_script.py uses it), `flat_cum` gives per-function flat/cum samples.
Tested on: tests/fixtures/folded/ (see README.md there).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._common import Extras, Lines, Source, coerce, feed_lines


@dataclass(frozen=True)
class FoldedExtras(Extras):
    """What folded reads beside its rows (see `_common.Extras`); `dropped_lines` is a last line cut
    mid-write (its count may be cut too)."""

    total_samples: int = 0  # the sum of `count`
    merged_lines: int = 0  # lines of a stack seen before, summed into it


EXTRAS = FoldedExtras

KIND = "folded"
SCHEMA: dict[str, str] = {
    "host": "string",
    "stack": "string",
    "count": "int64",
    "comm": "string",
    "leaf": "string",
    "depth": "Int64",
}
FLAT_CUM_SCHEMA: dict[str, str] = {
    "function": "string",
    "flat_samples": "int64",
    "cum_samples": "int64",
    "flat_pct": "float64",
    "cum_pct": "float64",
}
_LINE = re.compile(r"^(\S.*?) (\d{1,15})$")  # 15 digits: sums stay within int64


def sniff(text: str) -> bool:
    """Every one of the first lines is `frames COUNT`, and some stack has more than one frame."""
    lines = [ln for ln in text[:8192].splitlines()[:20] if ln.strip()]
    if (len(text) > 8192 or not text.endswith("\n")) and len(lines) > 1:
        lines = lines[:-1]  # the 8 KiB cut, or the capture's own end, may fall inside the last line
    return bool(lines) and all(_LINE.match(ln) for ln in lines) and any(";" in ln for ln in lines)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse folded stacks into one row per distinct stack.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (folded stacks carry no time); kept for the common parser signature.

    Raises:
        ParseError: a line that is not `stack COUNT` (named by its number).
    """
    counts: Counter[str] = Counter()
    merged = dropped = 0

    def feed(line_no: int, line: str, lines: Lines) -> None:
        nonlocal merged
        if not line.strip():
            return
        m = _LINE.match(line)
        if not m:
            raise lines.error(line_no, line, "not a folded stack line (`frame;frame;... COUNT`)")
        if m[1] in counts:
            merged += 1
        counts[m[1]] += int(m[2])

    def cut(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped = 1  # `a;b 12` may be the start of `a;b 123`

    feed_lines(source, KIND, feed, cut)
    df = stacks_frame(counts.items(), host=host)
    df.attrs.update(merged_lines=merged, dropped_lines=dropped)
    return df


def stacks_frame(pairs: Iterable[tuple[str, int]], *, host: str | None = None) -> pd.DataFrame:
    """The folded frame (SCHEMA) from `(stack, count)` pairs, one row per pair, in the given order.

    attrs["total_samples"] is the sum of the counts.
    """
    rows = list(pairs)
    frames = [stack.split(";") for stack, _ in rows]
    data = {
        "host": pd.array([host] * len(rows), dtype="string"),
        "stack": pd.array([stack for stack, _ in rows], dtype="string"),
        "count": np.array([count for _, count in rows], dtype=np.int64),
        "comm": pd.array([f[0] for f in frames], dtype="string"),
        "leaf": pd.array([f[-1] for f in frames], dtype="string"),
        "depth": pd.array([len(f) for f in frames], dtype="Int64"),
    }
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs["total_samples"] = int(df["count"].sum())
    return df


def flat_cum(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-function samples from a folded frame: flat (the function is the leaf) and cum (on the stack).

    The first frame of each stack is the comm, not a function, and is left out. A function that
    recurses (`a;f;g;f`) counts once per stack in `cum`, so cum_samples never exceeds the total.
    Percentages are of all samples in the frame. Rows: most flat samples first, then most cum, then
    by name.

    Args:
        frame: a frame with `stack` and `count` columns (folded or perf_script output).

    Returns:
        A frame with FLAT_CUM_SCHEMA columns: function, flat_samples, cum_samples, flat_pct, cum_pct.
    """
    flat: Counter[str] = Counter()
    cum: Counter[str] = Counter()
    total = 0
    for stack, count in zip(frame["stack"], frame["count"], strict=True):
        count = int(count)
        total += count
        funcs = str(stack).split(";")[1:]
        if not funcs:
            continue  # a sample with only the comm: counted in the total, no function to charge
        flat[funcs[-1]] += count
        for fn in set(funcs):
            cum[fn] += count
    names = sorted(cum, key=lambda fn: (-flat[fn], -cum[fn], fn))
    flat_arr = np.array([flat[fn] for fn in names], dtype=np.int64)
    cum_arr = np.array([cum[fn] for fn in names], dtype=np.int64)
    out = pd.DataFrame(
        {
            "function": pd.array(names, dtype="string"),
            "flat_samples": flat_arr,
            "cum_samples": cum_arr,
            "flat_pct": flat_arr * 100.0 / total,
            "cum_pct": cum_arr * 100.0 / total,
        }
    )
    return coerce(out, FLAT_CUM_SCHEMA)

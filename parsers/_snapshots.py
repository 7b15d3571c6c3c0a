"""The JSON lines of perfkit's per-step database snapshots (collectors/db_snapshot.py), read once for
the parsers mysql_variables, mysql_lock_waits and mysql_waits.

Each line is one snapshot: `{"snapshot": KIND, "ts": ISO, "t": EPOCH_S, "server": VERSION, ...}` plus
the kind's own field (`variables`, `waits`, `events`). A file holds one snapshot as perfkit writes it,
or several appended.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ._common import Lines, Source

# datetime64[ns] holds the years 1678-2261: an epoch second past 9.2e9 would wrap to a wrong time
_T_LIMIT_S = 9.2e9


@dataclass
class Snapshot:
    line_no: int
    line: str
    timestamp: pd.Timestamp
    body: Any  # the kind's own field, not yet checked
    obj: dict  # the whole line (`server`, `source`)


def sniff_kind(text: str, kind: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith(f'{{"snapshot":"{kind}"')


def read(source: Source, kind: str, field: str, expected: type) -> tuple[list[Snapshot], int, Lines]:
    """The snapshots of `source`, the number of lines dropped (a last line cut off mid-write), the lines.

    Raises:
        ParseError: a line that is not a `kind` snapshot whose `field` is a `expected`, unless it is the
            cut-off last line.
    """
    lines = Lines(source, kind)
    snaps: list[Snapshot] = []
    pending = None  # a bad line and why: fatal unless it is the last, cut off
    for line_no, line in lines:
        if not line.strip():
            continue
        if pending is not None:
            raise lines.error(*pending)
        try:
            o = json.loads(line)
        except ValueError:
            pending = (line_no, line, f"not a {kind} snapshot line (not JSON)")
            continue
        if not isinstance(o, dict) or o.get("snapshot") != kind:
            pending = (line_no, line, f"not a {kind} snapshot line")
            continue
        t = o.get("t")
        if (
            isinstance(t, bool)
            or not isinstance(t, int | float)
            or not math.isfinite(t)
            or abs(t) >= _T_LIMIT_S
        ):
            pending = (line_no, line, f"snapshot time t={t!r} is not a time in the years 1678-2261")
            continue
        if not isinstance(o.get(field), expected):
            pending = (line_no, line, f"the snapshot's {field!r} is not a {expected.__name__}")
            continue
        stamp = pd.Timestamp(round(t * 1000), unit="ms", tz="UTC")
        snaps.append(Snapshot(line_no, line, stamp, o[field], o))
    if pending is not None and (lines.last_complete or pending[0] != line_no):
        raise lines.error(*pending)
    # a last line that reads as a whole object is kept even without its newline: JSON cannot be cut
    # and still parse
    return snaps, int(pending is not None), lines

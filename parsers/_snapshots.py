"""The JSON lines of perfkit's per-step database snapshots (collectors/db_snapshot.py), read once for
the parsers mysql_variables, mysql_lock_waits and mysql_waits.

Each line is one snapshot, `{"snapshot":KIND,"ts":ISO,"t":EPOCH_S,"server":VERSION,"source":TABLES,
FIELD:...}` with the kind's own FIELD (`variables`, `waits`, `events`); a file holds one, as perfkit
writes it, or several appended. A line that is not a snapshot of the kind is a ParseError naming it;
a last line cut off mid-write is dropped (`attrs["dropped_lines"]`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ._common import T_LIMIT_S, Lines, Source, records_frame


@dataclass
class Snapshot:
    line_no: int
    line: str
    timestamp: pd.Timestamp
    body: Any  # the kind's own field, not yet checked
    source: str | None  # the server tables read, where the line names them


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
            or abs(t) >= T_LIMIT_S
        ):
            pending = (line_no, line, f"snapshot time t={t!r} is not a time in the years 1678-2261")
            continue
        if not isinstance(o.get(field), expected):
            pending = (line_no, line, f"the snapshot's {field!r} is not a {expected.__name__}")
            continue
        stamp = pd.Timestamp(round(t * 1000), unit="ms", tz="UTC")
        tables = o.get("source")
        snaps.append(Snapshot(line_no, line, stamp, o[field], tables if isinstance(tables, str) else None))
    if pending is not None and (lines.last_complete or pending[0] != line_no):
        raise lines.error(*pending)
    # a last line that reads as a whole object is kept even without its newline: JSON cannot be cut
    # and still parse
    return snaps, int(pending is not None), lines


def frame(
    source: Source,
    kind: str,
    field: str,
    schema: dict[str, str],
    row_of: Callable[[Any], dict],
    what: str,
    host: str | None,
) -> pd.DataFrame:
    """A frame of `schema`: `row_of` each item of every snapshot's `field` list, with the snapshot's
    timestamp and source; `attrs["dropped_lines"]` as `read` counts them.

    Raises:
        ParseError: as `read` does, or an item `row_of` refuses with ValueError or OverflowError
            (`float()` of an integer of 309 digits; `what` names it).
    """
    snaps, dropped, lines = read(source, kind, field, list)
    rows: list[dict] = []
    for snap in snaps:
        for item in snap.body:
            try:
                fields = row_of(item)
            except (ValueError, OverflowError):
                raise lines.error(
                    snap.line_no, snap.line, f"{what} that does not read: {item!r:.80}"
                ) from None
            rows.append({**fields, "timestamp": snap.timestamp, "source": snap.source})
    df = records_frame(rows, schema, host=host)
    df.attrs["dropped_lines"] = dropped
    return df

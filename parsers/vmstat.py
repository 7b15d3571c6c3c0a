"""vmstat: procps `vmstat [-t] [-w] [-n] INTERVAL [COUNT]`.

Reads procps-ng 3.3 and 4.0 output, narrow or wide (`-w`), with or without the `gu` column
(procps 4 prints it in wide mode), with or without `-t` timestamps (`2026-11-22 08:10:06`, wall
clock of the host: the zone on the second header line is only an abbreviation, so the zone comes
from `tz`). The header may repeat every screenful; repeats are skipped.

Columns: timestamp (UTC), host, since_boot (the first row after the first header is the average
since boot), then vmstat's own names, which every reader knows: r, b (tasks), swpd, free, buff,
cache (KiB as vmstat prints by default), si, so, bi, bo (per second), in, cs (per second),
us, sy, id, wa, st, gu (percent of CPU time). A column the version does not print is NA.
Tested on: tests/fixtures/vmstat/ (see README.md there).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._common import Lines, Source, coerce, empty_frame

KIND = "vmstat"
COUNTS = (
    "r",
    "b",
    "swpd",
    "free",
    "buff",
    "cache",
    "si",
    "so",
    "bi",
    "bo",
    "in",
    "cs",
    "us",
    "sy",
    "id",
    "wa",
    "st",
    "gu",
)
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "since_boot": "bool",
    **{c: "Int64" for c in COUNTS},
}
_REQUIRED = {"r", "b", "swpd", "free", "si", "so", "bi", "bo", "in", "cs", "us", "sy", "id"}
# `vmstat -a` prints inact/active instead of buff/cache: known, not in the schema.
_KNOWN_EXTRA = {"inact", "active"}


def sniff(text: str) -> bool:
    """vmstat output starts with its two header lines."""
    lines = text.lstrip("\n").splitlines()[:2]
    return (
        len(lines) == 2
        and lines[0].lstrip().startswith("procs")
        and "-memory-" in lines[0]
        and set(lines[1].split()) >= _REQUIRED
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a vmstat capture into one row per sample.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: the capturing host's time zone, for `-t` timestamps.

    Raises:
        ParseError: a header that is not vmstat's C-locale header, or a malformed row mid-file.
    """
    lines = Lines(source, KIND)
    columns: list[str] | None = None
    has_time = False
    values: list[list[str]] = []
    stamps: list[str] = []
    unknown: list[str] = []
    pending: tuple[int, str] | None = None  # a malformed row: fatal unless it is the last line
    for line_no, line in lines:
        tokens = line.split()
        if not tokens:
            continue
        if pending is not None:
            raise lines.error(*pending, "malformed vmstat row")
        if tokens[0] == "procs" or tokens[0].startswith("--procs"):
            # The last dash group names the timestamp column (translated under other locales).
            has_time = tokens[-1].strip("-") not in ("cpu", "")
            continue
        if tokens[:2] == ["r", "b"]:
            # With -t the second header line ends with the zone abbreviation (UTC, CST, ...).
            names = tokens[:-1] if has_time else tokens
            missing = sorted(_REQUIRED - set(names))
            if missing:
                foreign = [n for n in names if n not in COUNTS and n not in _KNOWN_EXTRA]
                raise lines.error(
                    line_no,
                    line,
                    f"vmstat header lacks {', '.join(missing)} (has "
                    f"{', '.join(foreign) or 'nothing else'}): capture not taken under LC_ALL=C",
                )
            if columns is None:
                unknown = [n for n in names if n not in COUNTS and n not in _KNOWN_EXTRA]
            columns = names
            continue
        if columns is None:
            raise lines.error(
                line_no, line, "not a vmstat capture (no C-locale vmstat header before the data)"
            )
        width = len(columns) + (2 if has_time else 0)
        if len(tokens) != width or not _all_ints(tokens[: len(columns)]):
            pending = (line_no, line)
            continue
        values.append(tokens[: len(columns)])
        stamps.append(" ".join(tokens[len(columns) :]))
    dropped = 0
    if pending is not None:
        dropped = 1
    elif values and not lines.last_complete:  # cut mid-write: the last row may be a prefix of itself
        values.pop()
        stamps.pop()
        dropped = 1
    if columns is None or not values:
        df = empty_frame(SCHEMA)
        df.attrs.update(dropped_lines=dropped, unknown_columns=unknown)
        return df
    arr = np.array(values, dtype=np.int64)
    n = len(values)
    data: dict[str, object] = {name: arr[:, i] for i, name in enumerate(columns) if name in COUNTS}
    data["host"] = pd.array([host] * n, dtype="string")
    data["since_boot"] = np.arange(n) == 0
    if has_time:
        data["timestamp"] = (
            pd.to_datetime(pd.Series(stamps), format="%Y-%m-%d %H:%M:%S", errors="coerce")
            .dt.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
            .dt.tz_convert("UTC")
        )
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(dropped_lines=dropped, unknown_columns=unknown)
    return df


def _all_ints(tokens: list[str]) -> bool:
    return all(t.isdigit() or (t[:1] == "-" and t[1:].isdigit()) for t in tokens)

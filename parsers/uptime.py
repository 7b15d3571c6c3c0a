"""uptime: procps-ng `uptime` (what perfkit runs, under `LC_ALL=C`), one row per line (one line).

Reads the classic one-line form (procps-ng 4.0.2 tested, 3.3 from its source):

    ` 07:02:23 up  1:16,  0 user,  load average: 0.68, 2.43, 5.63`

- the `up` part is any of `45 min`, ` 1:16` (h:mm), `3 days,  2:04`, `1 day, 45 min` (procps);
  BSD's `2 hrs` / `27 secs` forms are read too;
- `0 user` (procps-ng 4 says `user` unless more than one) or `2 users`; the users part may be absent
  (BusyBox): users NA;
- load averages: procps prints them with `%.2f` in the process locale, so under de_DE they read
  `0,68, 2,43, 5,63` (seen here): every value has exactly two decimals, which makes the comma
  unambiguous, and they are read explicitly (a note says so). BSD's `load averages: 1.23 1.45 1.67`
  (no commas) is read too. Anything else is a ParseError, never a guess.

Also read:

- `uptime -p` (procps-ng: `up 1 week, 2 days, 5 hours, 34 minutes`, years/weeks/days/hours/minutes):
  a row with `up_s` only (clock and users NA, loads NaN), noted;
- the classic line without its clock and `up` (pt-summary's `Uptime` field cuts them:
  `1 day, 15:14,  5 users,  load average: 0.00, 0.06, 0.07`): clock NA. Sniffed only when the up part
  reads as uptime's (a `top - 07:02:23 up ...` line does not).

Any other line (`uptime -s`'s boot time `2026-11-27 07:15:57`, a shell's message saved with `2>&1`)
is skipped and counted (`attrs["skipped"]`, parsers/_common.Skips): the capture read, marked
partial; a file with no row read but lines skipped is refused naming the first. A line of uptime's
form whose up part or load averages do not read stays a ParseError.

Schema:

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| clock | string | the host's wall clock as printed (`07:02:23`); no date, no zone |
| up_s | float64 | time since boot, seconds (to the minute: uptime prints no seconds) |
| users | Int64 | logged-in sessions (utmp); NA when not printed |
| load_1, load_5, load_15 | float64 | load averages over 1, 5, 15 minutes (runnable + uninterruptible tasks) |

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `notes` (decimal commas read, `-p`),
`skipped`.
Tested on: tests/fixtures/uptime/ (README.md there).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Lines, Skips, Source, coerce, empty_frame, feed_lines

KIND = "uptime"

SCHEMA: dict[str, str] = {
    "host": "string",
    "clock": "string",
    "up_s": "float64",
    "users": "Int64",
    "load_1": "float64",
    "load_5": "float64",
    "load_15": "float64",
}

_LINE = re.compile(
    r"^\s*(?:(?P<clock>\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?)\s+up\s+)?(?P<up>[^,]+(?:,[^,]+)*?),"
    r"\s+(?:(?P<users>\d+)\s+users?,\s+)?load averages?:\s+(?P<loads>.*?)\s*$"
)
_UP_PARTS = (
    (re.compile(r"^(\d+)\s+days?$"), 86400),
    (re.compile(r"^(\d+)\s+(?:hours?|hrs?)$"), 3600),
    (re.compile(r"^(\d+)\s+mins?$"), 60),
    (re.compile(r"^(\d+)\s+secs?$"), 1),
)
# uptime -p (procps-ng print_uptime pretty): `up 2 weeks, 1 day, 5 hours, 34 minutes`
_PRETTY = re.compile(r"^up\s+(\d+\s+[a-z]+(?:,\s+\d+\s+[a-z]+)*)\s*$")
_PRETTY_UNITS = {"year": 365 * 86400, "week": 7 * 86400, "day": 86400, "hour": 3600, "minute": 60}
_HM = re.compile(r"^(\d+):([0-5]\d)$")
# procps: `%.2f, %.2f, %.2f` in the locale; BSD: `%.2f %.2f %.2f`.
_LOADS_POINT = re.compile(r"^(\d+\.\d+),?\s+(\d+\.\d+),?\s+(\d+\.\d+)$")
_LOADS_COMMA = re.compile(r"^(\d+,\d\d),\s+(\d+,\d\d),\s+(\d+,\d\d)$")
_MAX_LINE = 4096
# Counts past this are no real uptime or user count: float64 (how `up_s` and the row keep them) stops
# holding every whole number there, and a longer digit string would overflow the float or the Int64.
_MAX_COUNT = 2**53


def sniff(text: str) -> bool:
    """An uptime line: a clock, ` up `, and `load average` (or, without the clock, an up part that
    reads as uptime's)."""
    for line in text[:4096].splitlines()[:3]:
        if line.strip():
            m = _LINE.match(line)
            return m is not None and (m["clock"] is not None or _up_seconds(m["up"]) is not None)
    return False


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an uptime capture into one row.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (uptime prints a clock without date or zone); kept for the common signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`, `notes`.

    Raises:
        ParseError: a line of uptime's form that does not read (its up part, its load averages),
            with its line number; no row read while other lines were skipped.
    """
    rows: list[tuple[str, float, float, float, float, float]] = []
    notes: list[str] = []
    dropped = 0
    skips = Skips()

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if not line.strip():
            return
        if len(line) > _MAX_LINE:
            raise lines.error(line_no, line, "line too long for uptime")
        pretty = _PRETTY.match(line.strip())
        if pretty is not None:
            up = _pretty_seconds(pretty[1])
            if up is None:
                raise lines.error(line_no, line, f"unknown uptime -p part in {pretty[1][:60]!r}")
            nan = float("nan")
            rows.append((None, float(up), nan, nan, nan, nan))
            note = "uptime -p: time since boot only (no clock, users or load averages)"
            if note not in notes:
                notes.append(note)
            return
        if not _LINE.match(line):
            skips.add(line_no, line, "not an uptime line (`HH:MM:SS up ..., load average: ...`)")
            return
        row, note = _read(line_no, line, lines)
        rows.append(row)
        if note and note not in notes:
            notes.append(note)

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1  # cut mid-write: `0.6` may be the start of `0.68`

    try:
        lines = feed_lines(source, KIND, feed, cut_last)
        skips.refuse_if_nothing_read(len(rows), lines)
    except ParseError:
        raise
    except (ValueError, OverflowError) as exc:  # a safety net: nothing else escapes
        raise ParseError(KIND, None, 0, "", f"cannot parse ({type(exc).__name__}: {exc})") from exc
    attrs = {"dropped_lines": dropped, "notes": notes, "skipped": skips}
    if not rows:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    clock, up, users, l1, l5, l15 = zip(*rows, strict=True)
    data = {
        "host": pd.array([host] * len(rows), dtype="string"),
        "clock": pd.array(clock, dtype="string"),
        "up_s": np.array(up, dtype=np.float64),
        "users": pd.array([None if np.isnan(u) else int(u) for u in users], dtype="Int64"),
        "load_1": np.array(l1, dtype=np.float64),
        "load_5": np.array(l5, dtype=np.float64),
        "load_15": np.array(l15, dtype=np.float64),
    }
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(attrs)
    return df


def _up_seconds(text: str) -> int | None:
    """`3 days,  2:04` -> whole seconds (exact until checked against _MAX_COUNT); None when a part
    is not uptime's."""
    up = 0
    for part in text.split(","):
        part = part.strip()
        hm = _HM.match(part)
        if hm:
            up += int(hm[1]) * 3600 + int(hm[2]) * 60
            continue
        for rx, unit in _UP_PARTS:
            pm = rx.match(part)
            if pm:
                up += int(pm[1]) * unit
                break
        else:
            return None
    return up


def _pretty_seconds(text: str) -> int | None:
    """`2 weeks, 1 day, 5 hours` (uptime -p) -> seconds; None for a unit procps does not print."""
    up = 0
    for part in text.split(","):
        count, unit = part.split()
        factor = _PRETTY_UNITS.get(unit.removesuffix("s"))
        if factor is None or len(count) > 15:
            return None
        up += int(count) * factor
    return up


def _read(line_no: int, line: str, lines: Lines) -> tuple[tuple[str, float, float, float, float, float], str]:
    m = _LINE.match(line)
    if m is None:
        raise lines.error(line_no, line, "not an uptime line (`HH:MM:SS up ..., load average: ...`)")
    up = _up_seconds(m["up"])
    if up is None:
        part = next(p.strip() for p in m["up"].split(",") if _up_seconds(p) is None)
        raise lines.error(line_no, line, f"unknown uptime part {part!r}")
    if up >= _MAX_COUNT:
        raise lines.error(line_no, line, f"uptime {m['up'][:40]!r} too long to be a real one")
    note = ""
    loads = _LOADS_POINT.match(m["loads"])
    if loads:
        values = [float(v) for v in loads.groups()]
    else:
        loads = _LOADS_COMMA.match(m["loads"])
        if loads is None:
            raise lines.error(line_no, line, f"load averages {m['loads']!r} not read")
        values = [float(v.replace(",", ".")) for v in loads.groups()]
        note = "load averages printed with decimal commas (capture not taken under LC_ALL=C): read explicitly"
    if not all(map(math.isfinite, values)):  # float() of a few hundred digits is inf, not an error
        raise lines.error(line_no, line, f"load averages {m['loads'][:40]!r}... too large to be real")
    users = float("nan")
    if m["users"] is not None:
        if int(m["users"]) >= _MAX_COUNT:
            raise lines.error(line_no, line, f"user count {m['users'][:40]!r} too large to be real")
        users = float(m["users"])
    return (m["clock"], float(up), users, values[0], values[1], values[2]), note

"""uptime: procps-ng `uptime` (what perfkit runs, under `LC_ALL=C`), one row per line (one line).

Reads the classic one-line form (procps-ng 4.0.2 tested, 3.3 from its source):

    ` 07:02:23 up  1:16,  0 user,  load average: 0.68, 2.43, 5.63`

- the `up` part: procps' `45 min`, ` 1:16` (h:mm), `3 days,  2:04`, `1 day, 45 min`; BSD's `2 hrs`,
  `27 secs`;
- `0 user` (procps-ng 4 says `user` unless more than one) or `2 users`; absent under BusyBox: NA;
- load averages: procps prints `%.2f` in the process locale, so de_DE gives `0,68, 2,43, 5,63` (seen
  here): exactly two decimals make the comma unambiguous, and they are read explicitly (noted).
  BSD's `load averages: 1.23 1.45 1.67` (no commas) too. Anything else is a ParseError, never a guess;
- `uptime -p` (`up 1 week, 2 days, 5 hours, 34 minutes`: years/weeks/days/hours/minutes): a row with
  `up_s` only (clock and users NA, loads NaN), noted;
- the classic line without its clock and `up`, as pt-summary's `Uptime` field cuts it (`1 day,
  15:14,  5 users,  load average: 0.00, 0.06, 0.07`): clock NA. Sniffed only when the up part reads
  as uptime's (a `top - 07:02:23 up ...` line does not).

Any other line (`uptime -s`'s boot time, a shell's message saved with `2>&1`) is skipped and counted
(`skipped`, parsers/_common.Skips), the capture marked partial; a file with no row read but lines
skipped is refused naming the first. A line of uptime's form whose up part or load averages do not
read stays a ParseError.

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| clock | string | the host's wall clock as printed (`07:02:23`); no date, no zone |
| up_s | float64 | time since boot, seconds (to the minute: uptime prints no seconds) |
| users | Int64 | logged-in sessions (utmp); NA when not printed |
| load_1, load_5, load_15 | float64 | load averages over 1, 5, 15 minutes (runnable + uninterruptible tasks) |

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `notes` (decimal commas read, `-p`),
`skipped`. Tested on: tests/fixtures/uptime/ (README.md there).
"""

from __future__ import annotations

import math
import re

import pandas as pd

from ._common import Lines, Skips, Source, feed_lines, records_frame

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
_UP_PART = re.compile(r"^(\d+)\s+(day|hour|hr|min|sec)s?$")  # hr, sec: BSD's
_UP_UNITS = {"day": 86400, "hour": 3600, "hr": 3600, "min": 60, "sec": 1}
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
_PRETTY_NOTE = "uptime -p: time since boot only (no clock, users or load averages)"
_COMMA_NOTE = "load averages printed with decimal commas (capture not taken under LC_ALL=C): read explicitly"


def sniff(text: str) -> bool:
    """An uptime line: a clock, ` up `, and `load average` (or, without the clock, an up part that
    reads as uptime's)."""
    for line in text[:4096].splitlines()[:3]:
        if line.strip():
            m = _LINE.match(line)
            return m is not None and (m["clock"] is not None or _up_seconds(m["up"]) is not None)
    return False


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row per uptime line; `tz` is unused (uptime prints a clock without date or zone).

    Raises:
        ParseError: a line of uptime's form that does not read (its up part, its load averages);
            no row read while other lines were skipped.
    """
    rows: list[dict[str, object]] = []
    notes: dict[str, None] = {}  # each note once, in order
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
            rows.append({"up_s": float(up)})
            notes[_PRETTY_NOTE] = None
            return
        m = _LINE.match(line)
        if m is None:
            skips.add(line_no, line, "not an uptime line (`HH:MM:SS up ..., load average: ...`)")
            return
        rows.append(_read(m, line_no, line, lines, notes))

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1  # cut mid-write: `0.6` may be the start of `0.68`

    lines = feed_lines(source, KIND, feed, cut_last)
    skips.refuse_if_nothing_read(len(rows), lines)
    df = records_frame(rows, SCHEMA, host=host)
    df.attrs.update(dropped_lines=dropped, notes=list(notes), skipped=skips)
    return df


def _up_seconds(text: str) -> int | None:
    """`3 days,  2:04` -> whole seconds (exact until checked against _MAX_COUNT); None when a part
    is not uptime's."""
    up = 0
    for part in text.split(","):
        part = part.strip()
        if hm := _HM.match(part):
            up += int(hm[1]) * 3600 + int(hm[2]) * 60
        elif counted := _UP_PART.match(part):
            up += int(counted[1]) * _UP_UNITS[counted[2]]
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


def _read(
    m: re.Match[str], line_no: int, line: str, lines: Lines, notes: dict[str, None]
) -> dict[str, object]:
    up = _up_seconds(m["up"])
    if up is None:
        part = next(p.strip() for p in m["up"].split(",") if _up_seconds(p) is None)
        raise lines.error(line_no, line, f"unknown uptime part {part!r}")
    if up >= _MAX_COUNT:
        raise lines.error(line_no, line, f"uptime {m['up'][:40]!r} too long to be a real one")
    loads = _LOADS_POINT.match(m["loads"])
    if loads:
        values = [float(v) for v in loads.groups()]
    else:
        loads = _LOADS_COMMA.match(m["loads"])
        if loads is None:
            raise lines.error(line_no, line, f"load averages {m['loads']!r} not read")
        values = [float(v.replace(",", ".")) for v in loads.groups()]
        notes[_COMMA_NOTE] = None
    if not all(map(math.isfinite, values)):  # float() of a few hundred digits is inf, not an error
        raise lines.error(line_no, line, f"load averages {m['loads'][:40]!r}... too large to be real")
    users = None if m["users"] is None else int(m["users"])
    if users is not None and users >= _MAX_COUNT:
        raise lines.error(line_no, line, f"user count {m['users'][:40]!r} too large to be real")
    return {
        "clock": m["clock"],
        "up_s": float(up),
        "users": users,
        "load_1": values[0],
        "load_5": values[1],
        "load_15": values[2],
    }

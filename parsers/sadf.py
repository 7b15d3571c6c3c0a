"""sadf: sysstat's `sadf -d` export of a binary sa file, `;`-separated, into the same frame as parsers/sar.py.

perfkit records `sar -o FILE` during the window and converts FILE on the host with its own sysstat
(the binary format differs between versions):

    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -P ALL         (capture id sar-cpu)
    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -n DEV         (sar-net)
    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -n TCP,ETCP    (sar-tcp)

Each activity starts with its own header, `# hostname;interval;timestamp;CPU;%user;%nice;...`,
then rows `vm;1;2026-11-23 07:47:26 UTC;-1;55.56;0.00;44.44;...` (CPU `all` is printed as `-1`).
A reboot recorded in the file is a row `vm;-1;2026-11-23 07:48:28 UTC;LINUX-RESTART<TAB>(2 CPU)`
followed by the header again; `sadf -C` comments are `vm;-1;...;COM text`. Timestamps carry `UTC`
(the default); `sadf -t` prints the file's local time without a zone (read in `tz`), `-U` seconds
since the epoch. `sadf -h` puts several activities on one line: the row is split into one row per
table. Any sar activity may come through `-- OPTIONS`: the tables read, their column names, the
instance column and the unit conversions are parsers/sar.py's (its docstring has the table), so the
sar text and the sadf export of one sa file give equal frames. A header of another activity (`-B`,
`-w`, ...) is listed in `attrs["skipped_tables"]` and its rows skipped. Numbers: `sadf` follows
LC_NUMERIC, so a de_DE export prints `55,56`; with `;` as separator that is unambiguous and is read
as a decimal comma (a file mixing `,` and `.` is a ParseError: "capture not taken under LC_ALL=C").

Schema: exactly parsers/sar.py's `SCHEMA` (timestamp UTC, host from the row's hostname field unless
the `host` argument is given, table, instance, the metric columns as float64, NaN where a table has
no such column). Rows are grouped by table in sar.py's order, file order within a table.

`df.attrs`: `intervals_s` (the distinct `interval` values, seconds), `restarts` (records
`timestamp` ISO UTC, `cpus`), `comments`, `skipped_tables`, `unknown_columns`, `dropped_lines`
(a last line cut mid-write), `notes`. No `averages`: sadf -d prints none.

Not read: `sadf -j` (JSON), `-x` (XML), `-p` (awk-friendly). Tested on: tests/fixtures/sadf/*.txt
(see README.md there).
"""

from __future__ import annotations

import calendar
import re
from array import array
from datetime import datetime

import pandas as pd

from . import _common
from ._sysstat import Sysstat, utc
from .sar import _TABLES, _check_instance, _classify, _Plan, _Store
from .sar import SCHEMA as _SAR_SCHEMA

KIND = "sadf"

SCHEMA: dict[str, str] = dict(_SAR_SCHEMA)  # the same frame as parsers/sar.py: one schema for one data set

_LEAD = ["hostname", "interval", "timestamp"]
_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?: (UTC))?$")
_EPOCH = re.compile(r"^\d{9,11}$")
_CPUS = re.compile(r"\((\d+) CPU\)")
_SNIFF = re.compile(r"^# hostname;interval;timestamp;\S")


def sniff(text: str) -> bool:
    """True when the first lines hold a `sadf -d` header (`# hostname;interval;timestamp;...`)."""
    return any(_SNIFF.match(line) for line in text[: _common.SNIFF_BYTES].splitlines()[:20])


def parse(source: _common.Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse `sadf -d FILE -- OPTIONS` output into parsers/sar.py's frame.

    Args:
        source: a path, a text or binary stream, or the capture's text.
        host: the host the capture comes from (the manifest's); default: the rows' hostname field.
        tz: the zone of timestamps printed without `UTC` (`sadf -t`); `UTC` ones need none.

    Returns:
        A frame with exactly the `SCHEMA` columns; `attrs` `intervals_s`, `restarts`, `comments`,
        `skipped_tables`, `unknown_columns`, `dropped_lines`, `notes`.

    Raises:
        ParseError: a header that is not sadf's, a row before any header or with a field count other
            than its header's, an unreadable timestamp or number, an instance listed twice at one
            time, a foreign locale it cannot read safely.
    """
    return _Sadf(source, host, tz).run()


class _Sadf(Sysstat):
    """Reuses parsers/_sysstat.py for the decimal mark and errors; times come from each row."""

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.store = _Store()
        self.plans: list[_Plan] | None = None
        self.skipping = False
        self.width = 0
        self.header_line_no = 0
        self.intervals: set[int] = set()
        self.restarts: list[dict[str, object]] = []
        self.comments: list[str] = []
        self.skipped: list[str] = []
        self.unknown: list[str] = []
        self._last_stamp: tuple[str, int] = ("", 0)

    def run(self) -> pd.DataFrame:
        _common.feed_lines(self.source, KIND, self.feed, self.cut_last)
        frame = self.store.frame()
        frame.attrs.update(
            {
                "intervals_s": sorted(self.intervals),
                "restarts": self.restarts,
                "comments": self.comments,
                "skipped_tables": self.skipped,
                "unknown_columns": self.unknown,
                "dropped_lines": self.dropped,
                "notes": self.notes,
            }
        )
        return frame

    def feed(self, line_no: int, line: str, lines: _common.Lines) -> None:
        self.lines = lines
        if not line.strip():
            return
        if line.startswith("#"):
            self.header(line_no, line)
            return
        fields = line.split(";")
        if len(fields) >= 4 and fields[1] == "-1" and not fields[3].lstrip("-").isdigit():
            self.special(line_no, line, fields)
            return
        if self.plans is None and not self.skipping:
            raise self.error(line_no, line, "a row before any `# hostname;interval;timestamp;...` header")
        if len(fields) != self.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields, the header at line {self.header_line_no} has {self.width}",
            )
        if not fields[1].isdigit():
            raise self.error(line_no, line, f"interval {fields[1]!r} is not a number of seconds")
        ns = self.timestamp(line_no, line, fields[2])
        self.intervals.add(int(fields[1]))
        if self.skipping or self.plans is None:
            return
        host = self.host if self.host is not None else fields[0]
        for plan in self.plans:
            instance = fields[plan.instance] if plan.instance is not None else ""
            if _TABLES[plan.table].name == "cpu" and instance == "-1":
                instance = "all"  # sadf's code for the all-CPU row; sar text prints `all`
            if (why := _check_instance(plan.table, instance)) is not None:
                raise self.error(line_no, line, why)
            if not self.store.is_new(plan.table, ns, instance):
                raise self.error(
                    line_no, line, f"{_TABLES[plan.table].name} {instance!r} listed twice at one time"
                )
            row = self.store.row_values(plan, lambda i: self.number(line_no, line, fields[i]))
            self.store.add(plan.table, ns, host, instance, row)

    def header(self, line_no: int, line: str) -> None:
        names = line[1:].strip().split(";")
        if names[:3] != _LEAD or len(names) < 4:
            raise self.error(line_no, line, "not a sadf -d header (`# hostname;interval;timestamp;...`)")
        plans, unknown, dup = _classify(names)
        if dup is not None:
            raise self.error(line_no, line, f"column {dup!r} twice in the header")
        self.header_line_no, self.width = line_no, len(names)
        if not plans:
            self.plans, self.skipping = None, True
            text = ";".join(names[3:])
            if text not in self.skipped:
                self.skipped.append(text)
                self.notes.append(f"line {line_no}: table not read, its rows skipped: {text[:80]}")
            return
        self.plans, self.skipping = plans, False
        self.unknown.extend(n for n in unknown if n not in _LEAD and n not in self.unknown)

    def special(self, line_no: int, line: str, fields: list[str]) -> None:
        """A restart or comment record: `host;-1;TIME;LINUX-RESTART (N CPU)` / `host;-1;TIME;COM text`."""
        ns = self.timestamp(line_no, line, fields[2])
        what = ";".join(fields[3:])
        if what.startswith("LINUX-RESTART"):
            m = _CPUS.search(what)
            when = utc(array("q", [ns]))[0].isoformat()
            self.restarts.append({"timestamp": when, "cpus": int(m[1]) if m else None})
        elif what.startswith("COM "):
            self.comments.append(what[4:])
        else:
            raise self.error(
                line_no, line, "a record with interval -1 that is neither a restart nor a comment"
            )

    def timestamp(self, line_no: int, line: str, text: str) -> int:
        """UTC ns of `2026-11-23 07:47:26 UTC`, of the same without zone (in `tz`), or of epoch seconds."""
        if text == self._last_stamp[0]:
            return self._last_stamp[1]  # every row of an interval repeats the same stamp
        if _EPOCH.match(text):
            ns = int(text) * 1_000_000_000
        else:
            m = _STAMP.match(text)
            if m is None:
                raise self.error(line_no, line, f"unreadable timestamp {text!r}")
            y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
            try:
                naive = datetime(y, mo, d, h, mi, min(s, 59))
            except ValueError:
                raise self.error(line_no, line, f"impossible timestamp {text!r}") from None
            if m[7]:
                ns = calendar.timegm(naive.timetuple()) * 1_000_000_000
            else:
                ns = _common.to_utc(naive, self.tz).value
        self._last_stamp = (text, ns)
        return ns

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

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._sysstat import utc
from .sar import (
    _TABLES,
    _bad_marks,
    _check_instance,
    _Chunked,
    _classify,
    _factor,
    _numbers_ok,
    _Plan,
    _read_chunk,
    _Store,
)
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


class _Sadf(_Chunked):
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
        self._minutes: dict[str, int] = {}  # `YYYY-MM-DD HH:MM:` of a UTC stamp read -> its minute's ns

    def run(self) -> pd.DataFrame:
        self.walk()
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

    def row_start(self, line: str) -> bool:
        return line[:1].isalnum()  # a row starts with the host name

    def table_open(self) -> bool:
        return self.plans is not None and not self.skipping

    def chunk(self, rows: list[str], first: int) -> bool:
        """Read rows under the open header with pandas (`sep=";"`); False (nothing changed) unless plain.

        "Plain" is what `feed` would take without complaint: the header's field count, an interval in
        seconds (no restart or comment record), readable timestamps, numbers in sysstat's grammar with
        the file's decimal mark, each instance once per time. Anything else goes back to `feed`, so
        errors and state stay exactly the per-line ones.
        """
        plans, ncols = self.plans, self.width
        if plans is None:
            return False
        data = "\n".join(rows).encode("utf-8", "surrogateescape")
        if data.count(b";") != len(rows) * (ncols - 1) or b";+" in data:
            return False  # a row with another field count, or `+1` that isdigit() refuses
        value_cols = {i for plan in plans for i, _, _ in plan.fields}
        mark = self.decimal
        if mark is None:  # the first value with a fraction decides, as in Sysstat.number()
            fields = rows[0].split(";")
            firsts = [fields[i] for plan in plans for i, _, _ in plan.fields]
            mark = next(("," if "," in t else "." for t in firsts if "," in t or "." in t), None)
        host0 = rows[0].split(";", 1)[0].encode("utf-8", "surrogateescape") + b";"
        body = data
        dotted = host0[:1].isdigit() or b"." in host0 or b"," in host0
        if dotted and data.count(b"\n" + host0) == len(rows) - 1 and data.startswith(host0):
            body = data.replace(b"\n" + host0, b"\n")[len(host0) :]  # a dotted host name is no number
        if mark is None and (b"," in body or b"." in body):
            return False
        if (mark == "," and self.slash_date) or _bad_marks(body, mark) or b" ;" in body or b"; " in body:
            return False
        if body.endswith(b" ") or b" \n" in body or b"\r" in body:
            return False  # pandas skips blanks around a number; sadf's grammar has none
        text_cols = set(range(ncols)) - value_cols - {1}
        df = _read_chunk(data, ncols, ";", mark or ".", text_cols)
        if df is None or len(df) != len(rows) or not _numbers_ok(df, value_cols, mark):
            return False
        intervals = df[1]
        if intervals.dtype.kind not in "iu" or intervals.min() < 0:
            return False  # a restart or comment record (`-1`), or an interval `feed` refuses
        stamps = self.chunk_stamps(df[2], first, rows[0])
        if stamps is None:
            return False
        return self.commit(df, plans, stamps, mark)

    def chunk_stamps(self, col: pd.Series, first: int, line: str) -> np.ndarray | None:
        """UTC ns per row, one `timestamp()` per distinct text; None if one is not readable."""
        codes, texts = _factor(col)
        ns = np.empty(len(texts), dtype=np.int64)
        minutes = self._minutes
        for k, text in enumerate(texts.tolist()):
            # `2026-11-23 07:47:26 UTC`: a minute already read gives the time by adding its seconds
            ss = text[17:19]
            utc_form = len(text) == 23 and text[19:] == " UTC" and ss.isascii() and ss.isdigit()
            base = minutes.get(text[:17]) if utc_form else None
            if base is not None:
                ns[k] = base + min(int(ss), 59) * 1_000_000_000
                continue
            try:
                ns[k] = self.timestamp(first, line, text)
            except ParseError:
                return None
            if utc_form:
                minutes[text[:17]] = int(ns[k]) - min(int(ss), 59) * 1_000_000_000
        return ns[codes]

    def commit(self, df: pd.DataFrame, plans: list[_Plan], stamps: np.ndarray, mark: str | None) -> bool:
        """Check instances and times per table, then store the chunk; False (nothing stored) if not plain."""
        n = len(df)
        done = []
        for plan in plans:
            if plan.instance is not None:
                codes, names = _factor(df[plan.instance])
                if _TABLES[plan.table].name == "cpu":
                    names[names == "-1"] = "all"  # sadf's code for the all-CPU row; sar text prints `all`
                if any(_check_instance(plan.table, v) is not None for v in names.tolist()):
                    return False
            else:
                names = np.array([""], dtype=object)
                codes = np.zeros(n, dtype=np.int64)
            state = self.store.new_rows(plan.table, stamps, codes, names)
            if state is None:
                return False
            done.append((plan, names, codes, state))
        # the chunk is plain: from here on, state changes
        if mark is not None and self.decimal is None:
            self.decimal = mark
        self.intervals.update(np.unique(df[1].to_numpy()).tolist())
        if self.host is not None:
            hosts = [self.host] * n
        else:
            codes, names = _factor(df[0])
            hosts = names[codes].tolist()
        for plan, names, codes, state in done:
            missing = np.full(n, np.nan)  # for the table's columns this header does not print
            cols = [missing] * len(self.store.values[plan.table])
            for i, j, factor in plan.fields:
                values = df[i].to_numpy(dtype=np.float64)
                cols[j] = values * factor if factor != 1.0 else values
            self.store.extend(plan.table, stamps, hosts, names[codes].tolist(), cols)
            self.store.interval[plan.table] = state
        return True

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

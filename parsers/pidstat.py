"""pidstat: sysstat per-process statistics, `pidstat -u -d -w [-t] [-l] INTERVAL COUNT`.

perfkit runs `LC_ALL=C S_TIME_FORMAT=ISO pidstat -u -d -w 1 N`. Per interval pidstat prints up to
three tables, each with its own header line and any of them possibly empty:

    06:56:35      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command
    06:56:35      UID       PID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command
    06:56:35      UID       PID   cswch/s nvcswch/s  Command

(the header carries the interval's start, the rows its end), then the same tables labelled
`Average:` with CPU `-`. `-t` replaces `PID` by `TGID TID`: a process row prints `TID` as `-`, its
threads follow with `TGID` as `-` and the command as `|__name`; a thread whose process was not
printed shows both ids and `(process)__thread`. Columns are mapped by header name (older sysstat
lacks `%wait` or `iodelay`: NaN); unknown header names (e.g. `-r`, `-U`'s `USER`) are listed in
`attrs["unknown_columns"]` and their values not read. `Command` is the last column; with `-l` it is
the whole command line, kept verbatim (spaces included). Banner, dates, 12-hour and zh_CN clocks,
`Average:` labels, decimal commas and midnight rollover are read as in parsers/mpstat.py.

The tables of one interval are merged into one tidy frame, one row per (timestamp, pid, tid):

| column | dtype | unit / meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | end of the interval (the rows' time); NaT without a banner |
| host | string | the `host` argument, else the host in the banner |
| uid | Int64 | user id |
| pid | Int64 | process id (`PID`; with `-t` the `TGID`, taken from the row above where pidstat prints `-`) |
| tgid | Int64 | with `-t`: the thread group id (= pid); NA without `-t` |
| tid | Int64 | with `-t`: the thread id, NA on a whole-process row; NA without `-t` |
| usr_pct, system_pct, guest_pct | float64 | % of one CPU in user / kernel / guest code |
| wait_pct | float64 | % of one CPU spent runnable but waiting for a CPU |
| cpu_pct | float64 | %CPU: total % of one CPU (above 100 for a multi-threaded process) |
| cpu | Int64 | number of the CPU the task last ran on |
| kb_rd_s, kb_wr_s | float64 | kB/s read from / written to storage |
| kb_ccwr_s | float64 | kB/s of writes cancelled (page cache truncated before writeback) |
| iodelay | Int64 | block IO delay in clock ticks (usually 1/100 s) |
| cswch_s, nvcswch_s | float64 | voluntary / involuntary context switches per second |
| command | string | `Command` verbatim, from the first table listing the task (`|__name`: a thread) |

A value from a table in which the task did not appear is NaN/NA, never 0. `df.attrs`: `averages`
(the `Average:` tables merged the same way, as a list of records without `timestamp`; None for a
missing value), `unknown_columns`, `dropped_lines` (a last line cut mid-write), `notes`.

Not read: `pidstat -h` (one line per task), `-o JSON`. Tested on: tests/fixtures/pidstat/*.txt
(see README.md there).
"""

from __future__ import annotations

import math
import re
from array import array

import numpy as np
import pandas as pd

from . import _common
from ._sysstat import Sysstat, record_value, utc

KIND = "pidstat"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "uid": "Int64",
    "pid": "Int64",
    "tgid": "Int64",
    "tid": "Int64",
    "usr_pct": "float64",
    "system_pct": "float64",
    "guest_pct": "float64",
    "wait_pct": "float64",
    "cpu_pct": "float64",
    "cpu": "Int64",
    "kb_rd_s": "float64",
    "kb_wr_s": "float64",
    "kb_ccwr_s": "float64",
    "iodelay": "Int64",
    "cswch_s": "float64",
    "nvcswch_s": "float64",
    "command": "string",
}

# Header name -> schema column. UID/PID/TGID/TID/Command are handled apart (ids, placeholders).
_METRICS = {
    "%usr": "usr_pct",
    "%system": "system_pct",
    "%guest": "guest_pct",
    "%wait": "wait_pct",
    "%CPU": "cpu_pct",
    "CPU": "cpu",
    "kB_rd/s": "kb_rd_s",
    "kB_wr/s": "kb_wr_s",
    "kB_ccwr/s": "kb_ccwr_s",
    "iodelay": "iodelay",
    "cswch/s": "cswch_s",
    "nvcswch/s": "nvcswch_s",
}
_IDS = {"UID": "uid", "PID": "pid", "TGID": "tgid", "TID": "tid"}
_NUMERIC = [c for c in SCHEMA if c not in ("timestamp", "host", "command")]
_INTS = frozenset(c for c, t in SCHEMA.items() if t == "Int64")
_HEADER_FIRST = frozenset({"UID", "USER", "PID", "TGID"})
_UINT = re.compile(r"^\d+$")
_SNIFF_HEADER = re.compile(r"(?:^|\s)(?:(?:UID|USER)\s+)?(?:PID|TGID\s+TID)\s+\S.*\sCommand\s*$")
_NAN = float("nan")


def sniff(text: str) -> bool:
    """True when the first lines hold a pidstat table header (`UID PID ... Command`)."""
    return any(_SNIFF_HEADER.search(line) for line in text[: _common.SNIFF_BYTES].splitlines()[:60])


def parse(source: _common.Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a `pidstat -u -d -w [-t]` capture into one row per task per interval.

    Args:
        source: a path, a text or binary stream, or the capture's text.
        host: the host the capture comes from (the manifest's); default: the banner's host name.
        tz: the host's time zone: rows print wall-clock time of day.

    Returns:
        A frame with exactly the `SCHEMA` columns; `attrs` `averages`, `unknown_columns`,
        `dropped_lines`, `notes`.

    Raises:
        ParseError: garbage mid-file, a row whose field count does not match its header, a task
            listed twice in one table, a thread row with no process above it, a foreign locale it
            cannot read safely, `pidstat -h` output.
    """
    return _Pidstat(source, host, tz).run()


class _Table:
    """One table header: which field feeds which column."""

    __slots__ = ("width", "plan", "line_no", "threads")

    def __init__(self, width: int, plan: list[tuple[int, str]], line_no: int, threads: bool):
        self.width = width  # fields after the time label, Command included
        self.plan = plan  # (field index, schema column) for ids and metrics
        self.line_no = line_no
        self.threads = threads


class _Pidstat(Sysstat):
    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.table: _Table | None = None
        self.table_keys: set[tuple[int, int]] = set()  # (pid, tid) already in the current table
        self.last_tgid: int | None = None  # with -t: the process the `-` TGID rows belong to
        self.unknown: list[str] = []
        # the frame, column by column; ints held as float64 (exact below 2**53) until assembly
        self.stamps = array("q")
        self.cols = {c: array("d") for c in _NUMERIC}
        self.commands: list[str | None] = []
        self.interval: int | None = None
        self.rows_at: dict[tuple[int, int], int] = {}  # (pid, tid) -> row, in the current interval
        self.averages: dict[tuple[int, int], dict[str, object]] = {}

    def run(self) -> pd.DataFrame:
        _common.feed_lines(self.source, KIND, self.feed, self.cut_last)
        return self.assemble()

    def feed(self, line_no: int, line: str, lines: _common.Lines) -> None:
        self.lines = lines
        head = line.split(None, 3)  # the label (1 or 2 tokens) and the first field
        if not head or self.banner(line_no, line):
            return
        if head[0].startswith("#"):
            raise self.error(line_no, line, "pidstat -h output (one line per task) is not read")
        sod, used = self.label(line_no, line, head)
        if len(head) > used and head[used] in _HEADER_FIRST:
            self.header(line_no, line, line.split()[used:])
            return
        table = self.table
        if table is None:
            raise self.error(line_no, line, "a row before any pidstat `UID PID ... Command` header")
        parts = line.split(None, used + table.width - 1)
        fields = parts[used:]
        if len(fields) != table.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields after the time, the header at line {table.line_no} has {table.width}",
            )
        values: dict[str, float] = {}
        for i, col in table.plan:
            values[col] = self.value(line_no, line, col, fields[i])
        pid, tid = self.task(line_no, line, table, values)
        key = (pid, -1 if tid is None else tid)
        if key in self.table_keys:
            raise self.error(
                line_no, line, f"task {pid}{'' if tid is None else f'/{tid}'} twice in one table"
            )
        self.table_keys.add(key)
        command = fields[-1]
        if sod is None:
            self.average(key, values, command)
        else:
            self.sample(line_no, sod, key, values, command)

    def header(self, line_no: int, line: str, fields: list[str]) -> None:
        if fields[-1] != "Command":
            raise self.error(line_no, line, "not a pidstat table header (no `Command` last)")
        plan: list[tuple[int, str]] = []
        seen: set[str] = set()
        for i, name in enumerate(fields[:-1]):
            col = _IDS.get(name) or _METRICS.get(name)
            if col is None:
                if name not in self.unknown:
                    self.unknown.append(name)
                continue
            if col in seen:
                raise self.error(line_no, line, f"column {name!r} twice in the header")
            seen.add(col)
            plan.append((i, col))
        threads = "tgid" in seen
        if not ("pid" in seen or (threads and "tid" in seen)) or ("pid" in seen and threads):
            raise self.error(line_no, line, "a pidstat header needs `PID`, or `TGID TID` (-t)")
        self.table = _Table(len(fields), plan, line_no, threads)
        self.table_keys = set()
        self.last_tgid = None

    def value(self, line_no: int, line: str, col: str, token: str) -> float:
        if token == "-" and col in ("tgid", "tid", "cpu"):  # -t placeholders; CPU of Average rows
            return _NAN
        if col in _INTS:
            if not _UINT.match(token):
                raise self.error(line_no, line, f"{col}: not a whole number: {token!r}")
            return float(token)
        return self.number(line_no, line, token)

    def task(
        self, line_no: int, line: str, table: _Table, values: dict[str, float]
    ) -> tuple[int, int | None]:
        """(pid, tid) of a row; with -t the pid is the TGID, from the last one printed when `-`."""
        if not table.threads:
            return int(values["pid"]), None
        tgid, tid = values["tgid"], values["tid"]
        if math.isnan(tgid):
            if self.last_tgid is None or math.isnan(tid):
                raise self.error(line_no, line, "thread row (TGID `-`) without its process above it")
            values["tgid"] = float(self.last_tgid)
        else:
            self.last_tgid = int(tgid)
        values["pid"] = values["tgid"]
        return int(values["pid"]), None if math.isnan(tid) else int(tid)

    def sample(
        self, line_no: int, sod: int, key: tuple[int, int], values: dict[str, float], command: str
    ) -> None:
        ns = self.stamp(line_no, sod)
        interval = sod + 86400 * self.day
        if interval != self.interval:  # the tables of one interval share the rows' time
            self.interval = interval
            self.rows_at = {}
        row = self.rows_at.get(key)
        cols = self.cols
        if row is None:
            row = len(self.stamps)
            self.rows_at[key] = row
            self.stamps.append(ns)
            for arr in cols.values():
                arr.append(_NAN)
            self.commands.append(command)
        for col, v in values.items():
            if math.isnan(cols[col][row]):  # uid, ids: the first table's; metrics: their own table
                cols[col][row] = v

    def average(self, key: tuple[int, int], values: dict[str, float], command: str) -> None:
        rec = self.averages.get(key)
        if rec is None:
            rec = {"host": self.host_name(), **{c: None for c in _NUMERIC}, "command": command}
            self.averages[key] = rec
        for col, v in values.items():
            if rec[col] is None:
                rec[col] = record_value(int(v) if col in _INTS and v == v else v)

    def host_name(self) -> str | None:
        return self.host if self.host is not None else self.banner_host

    def assemble(self) -> pd.DataFrame:
        attrs = {
            "averages": list(self.averages.values()),
            "unknown_columns": self.unknown,
            "dropped_lines": self.dropped,
            "notes": self.notes,
        }
        n = len(self.stamps)
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
        else:
            data: dict[str, object] = {
                "timestamp": utc(self.stamps),
                "host": pd.array([self.host_name()] * n, dtype="string"),
            }
            for col in _NUMERIC:
                values = np.frombuffer(self.cols[col], dtype=np.float64)
                if col in _INTS:
                    missing = np.isnan(values)
                    data[col] = pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)
                else:
                    data[col] = values
            data["command"] = pd.array(self.commands, dtype="string")
            frame = _common.coerce(pd.DataFrame(data), SCHEMA)
        frame.attrs.update(attrs)
        return frame

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

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._sysstat import (
    CHUNK_ROWS,
    Sysstat,
    label_width,
    numbers_as_printed,
    plain_bytes,
    read_chunk,
    record_value,
    row_line_nos,
    utc,
)

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
    """One table layout: which field feeds which column (the same for every header printing it)."""

    __slots__ = ("width", "plan", "threads")

    def __init__(self, width: int, plan: list[tuple[int, str]], threads: bool):
        self.width = width  # fields after the time label, Command included
        self.plan = plan  # (field index, schema column) for ids and metrics
        self.threads = threads


# A buffered run of rows: (row index in its table's buffer, line number, table, table number, header line).
_Seg = tuple[int, int, "_Table | None", int, int]


class _Pidstat(Sysstat):
    """The line walk only sorts lines: data rows are buffered per table layout, headers handled at once.

    A chunk (the rows of many intervals) is read by pandas one layout at a time and the tables of
    each interval merged per task with a groupby (`_fast`); a chunk it cannot prove it reads as the
    per-line grammar would goes through `_row` line by line, which also names the first bad line. A
    header or banner that raises first flushes the rows above it, so errors keep file order.
    """

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.unknown: list[str] = []
        self.layouts: dict[tuple[str, ...], _Table] = {}
        self.table: _Table | None = None  # the table the next rows belong to
        self.table_no = 0  # counts header lines: rows of one table share it
        self.header_line_no = 0
        self.header_label: str | None = None
        # buffered rows per layout: rows, runs
        self.buffers: dict[int, tuple[list[str], list[_Seg]]] = {}
        # per-line state (kept right after a chunk read by pandas too)
        self.row_table_no = -1  # the table whose tasks are in table_keys
        self.table_keys: set[tuple[int, int]] = set()  # (pid, tid) already in that table
        self.last_tgid: int | None = None  # with -t: the process the `-` TGID rows belong to
        self.interval: int | None = None
        self.rows_at: dict[tuple[int, int], int] = {}  # (pid, tid) -> row, in the current interval
        self.averages: dict[tuple[int, int], dict[str, object]] = {}
        # the frame, column by column; ints held as float64 (exact below 2**53) until assembly
        self.n = 0
        self.stamps = np.empty(0, dtype=np.int64)
        self.cols = {c: np.empty(0) for c in _NUMERIC}
        self.cmd_codes = np.empty(0, dtype=np.int32)
        self.cmd_names: dict[str, int] = {}

    def run(self) -> pd.DataFrame:
        lines = self.lines
        rows, segs = self._buffer()
        pending: tuple[int, str] | None = None  # a non-row line, handled once it is known not to be cut off
        new_seg = True
        for line_no, line in lines:
            if pending is not None:
                self.structure(*pending)
                pending = None
                rows, segs = self._buffer()
            # a data row (no header word in it): the hot path
            if line[:1].isdigit() and "ID" not in line and "USER" not in line:
                if new_seg:
                    new_seg = False
                    segs.append((len(rows), line_no, self.table, self.table_no, self.header_line_no))
                rows.append(line)
            else:
                pending = (line_no, line)
                new_seg = True
        if pending is not None:
            if not lines.last_complete and pending[1].strip():
                self.cut_last(*pending, lines)
            else:
                self.structure(*pending)
        elif not lines.last_complete and rows:  # a data row cut mid-write (flushes wait for headers)
            rows.pop()
            self.cut_last(0, "", lines)
            if segs[-1][0] == len(rows):
                segs.pop()
        self.flush()
        return self.assemble()

    def _buffer(self) -> tuple[list[str], list[_Seg]]:
        key = id(self.table)
        buf = self.buffers.get(key)
        if buf is None:
            buf = self.buffers[key] = ([], [])
        return buf

    def structure(self, line_no: int, line: str) -> None:
        """A line that is not a plain data row: blank, banner, header, or a row in a rarer form."""
        head = line.split(None, 3)  # the label (1 or 2 tokens) and the first field
        if not head:
            return
        try:
            if line.startswith("Linux"):
                self.flush()  # the banner resets the date and day of the rows above it
                if self.banner(line_no, line):
                    return
            if head[0].startswith("#"):
                raise self.error(line_no, line, "pidstat -h output (one line per task) is not read")
            sod, used = self.label(line_no, line, head)
            if len(head) > used and head[used] in _HEADER_FIRST:
                label = " ".join(head[:used])
                full = sum(len(rows) for rows, _ in self.buffers.values()) >= CHUNK_ROWS
                if sod is None or (label != self.header_label and full):
                    self.flush()  # averages go line by line; a full chunk ends where an interval does
                self.header(line_no, line, line.split()[used:])
                self.header_label = label
                return
        except ParseError:
            self.flush()  # a bad row above is the first error
            raise
        rows, segs = self._buffer()
        segs.append((len(rows), line_no, self.table, self.table_no, self.header_line_no))
        rows.append(line)

    def header(self, line_no: int, line: str, fields: list[str]) -> None:
        key = tuple(fields)
        table = self.layouts.get(key)
        if table is None:
            table = self._layout(line_no, line, fields)
            self.layouts[key] = table
        self.table = table
        self.table_no += 1
        self.header_line_no = line_no

    def _layout(self, line_no: int, line: str, fields: list[str]) -> _Table:
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
        return _Table(len(fields), plan, threads)

    # ------------------------------------------------------------ chunks

    def flush(self) -> None:
        buffers = [(rows[:], segs[:]) for rows, segs in self.buffers.values() if rows]
        for rows, segs in self.buffers.values():  # taken first: an error below must not see them again
            rows.clear()
            segs.clear()
        if buffers and not self._fast(buffers):
            self._slow(buffers)

    def _fast(self, buffers: list[tuple[list[str], list[_Seg]]]) -> bool:
        """Read a chunk with pandas and keep it, or return False having changed nothing."""
        parts = [self._read(rows, segs) for rows, segs in buffers]
        if any(p is None for p in parts):
            return False
        datas = [p[0] for p in parts]
        mark = self.chunk_mark(datas)
        if mark is None or any(p[1] != mark for p in parts):
            return False
        line_nos = np.concatenate([p[2] for p in parts])
        order = np.argsort(line_nos, kind="stable")  # file order
        line_nos = line_nos[order]
        table_no = np.concatenate([p[3] for p in parts])[order]
        threads = np.concatenate([p[4] for p in parts])[order]
        cmd = np.concatenate([p[5] for p in parts])[order]
        labels = [p[6] for p in parts]
        sods = self._label_seconds(labels)
        if sods is None:
            return False
        sods = sods[order]
        cols = {c: np.concatenate([p[7][c] for p in parts])[order] for c in _NUMERIC}
        if table_no[0] == self.row_table_no:
            return False  # the table goes on from the previous chunk: its keys are per-line state
        tgid, tid = cols["tgid"], cols["tid"]
        if threads.any():
            # `-` TGID: the process printed above in the same table; the first row of a table has one
            t_rows = np.flatnonzero(threads)
            t_tgid = tgid[t_rows]
            firsts = np.concatenate(([True], table_no[t_rows][1:] != table_no[t_rows][:-1]))
            missing = np.isnan(t_tgid)
            if (missing & (firsts | np.isnan(tid[t_rows]))).any():
                return False
            filled = t_tgid[np.maximum.accumulate(np.where(missing, 0, np.arange(len(t_rows))))]
            tgid[t_rows] = filled
            cols["pid"][t_rows] = filled
        pid = cols["pid"]
        tid_key = np.where(np.isnan(tid), -1, tid)
        keys = pd.DataFrame({"t": table_no, "pid": pid, "tid": tid_key})
        if keys.duplicated().any():  # a task twice in one table: `_row` names it
            return False
        clock = self.clock_state()
        stamps, interval = self.stamp_rows(line_nos, sods)
        if interval[0] == self.interval:  # the interval goes on from the previous chunk
            self.restore_clock(clock)
            return False
        self.commit_mark(datas, mark)
        # merge the tables of each interval per task: first appearance, first value printed
        run = np.cumsum(np.concatenate(([0], interval[1:] != interval[:-1])))
        frame = pd.DataFrame({"run": run, "pid_k": pid, "tid_k": tid_key, "ts": stamps, "cmd": cmd, **cols})
        merged = frame.groupby(["run", "pid_k", "tid_k"], sort=False).first()
        start = self.n
        self._append(
            merged["ts"].to_numpy(), merged["cmd"].to_numpy(), {c: merged[c].to_numpy() for c in _NUMERIC}
        )
        # per-line state as `_row` would have left it
        last = merged.index.get_level_values(0) == run[-1]
        self.rows_at = {
            (int(p), int(t)): start + int(i)
            for i, p, t in zip(
                np.flatnonzero(last),
                merged.index.get_level_values(1)[last],
                merged.index.get_level_values(2)[last],
                strict=True,
            )
        }
        self.interval = int(interval[-1])
        in_last = table_no == table_no[-1]
        self.row_table_no = int(table_no[-1])
        self.table_keys = {(int(p), int(t)) for p, t in zip(pid[in_last], tid_key[in_last], strict=True)}
        self.last_tgid = int(tgid[in_last][-1]) if threads[-1] else None
        return True

    def _read(self, rows: list[str], segs: list[_Seg]) -> tuple | None:
        """One layout's rows -> (data, mark, line numbers, table numbers, -t flags, command codes,
        label column(s), schema columns); None if not provably what `_row` would read."""
        table = segs[0][2]
        if table is None or any(s[2] is not table for s in segs):
            return None
        width = table.width
        nlab = label_width(rows[0])
        data = "\n".join(rows).encode("utf-8", "surrogateescape")
        # `-` placeholders (TGID, TID, CPU) read as -1, then NaN; a printed -1 is no placeholder
        if b" -1 " in data:
            return None
        placeholders = 0
        for _ in range(2):  # twice: `replace` does not see the second of ` - - `
            if b" - " in data:
                placeholders += data.count(b" - ")
                data = data.replace(b" - ", b" -1 ")
        mark = self.chunk_mark([data])
        if mark is None:
            return None
        df = read_chunk(data, nlab + width, [*range(nlab), nlab + width - 1], mark)
        if df is None or len(df) != len(rows):
            return None
        commands = df[nlab + width - 1].array
        names = list(commands.categories)
        if any(not c or c[:1].isspace() for c in names):  # a short row, or blanks `_row` would strip
            return None
        counts = np.bincount(commands.codes, minlength=len(names))
        texts = [
            (b" " + c.encode("utf-8", "surrogateescape") + b"\n", int(k))
            for c, k in zip(names, counts, strict=True)
        ]
        numbers = [df[nlab + i] for i, _ in table.plan]
        if not plain_bytes(data, b"", texts) or not numbers_as_printed(data, mark, numbers, texts):
            return None
        n = len(rows)
        cols: dict[str, np.ndarray] = {}
        found = 0
        for (_, col), values in zip(table.plan, numbers, strict=True):
            arr = values.to_numpy()
            if col in _INTS:
                if arr.dtype.kind != "i":
                    return None
                holes = arr == -1
                if col in ("tgid", "tid", "cpu"):
                    found += int(holes.sum())
                if (arr < 0).sum() != (holes.sum() if col in ("tgid", "tid", "cpu") else 0):
                    return None
                arr = np.where(holes, np.nan, arr.astype(np.float64))
            cols[col] = arr.astype(np.float64, copy=False)
        if found != placeholders:  # a `-` where `_row` takes no placeholder
            return None
        for col in _NUMERIC:
            if col not in cols:
                cols[col] = np.full(n, np.nan)
        line_nos = row_line_nos([s[:2] for s in segs], n)
        counts_per_seg = np.diff(np.array([s[0] for s in segs] + [n]))
        table_no = np.repeat(np.array([s[3] for s in segs], dtype=np.int64), counts_per_seg)
        threads = np.full(n, table.threads)
        remap = np.array([self._cmd_code(c) for c in names], dtype=np.int32)
        labels = [df[i].array for i in range(nlab)]
        return data, mark, line_nos, table_no, threads, remap[commands.codes], labels, cols

    def _label_seconds(self, parts: list[list[pd.Categorical]]) -> np.ndarray | None:
        """Seconds since midnight per row (layouts concatenated), from the distinct labels."""
        out = []
        for labels in parts:
            if len(labels) == 1:
                tokens = [(t,) for t in labels[0].categories]
                codes = labels[0].codes
            else:
                first, second = labels
                n2 = len(second.categories)
                uniq, codes = np.unique(first.codes.astype(np.int64) * n2 + second.codes, return_inverse=True)
                tokens = [(first.categories[u // n2], second.categories[u % n2]) for u in uniq.tolist()]
            sods = self.label_sods(tokens)
            if sods is None:
                return None
            out.append(np.array(sods, dtype=np.int64)[codes])
        return np.concatenate(out)

    def _slow(self, buffers: list[tuple[list[str], list[_Seg]]]) -> None:
        """The chunk line by line, in file order."""
        items = []
        for rows, segs in buffers:
            bounds = [s[0] for s in segs] + [len(rows)]
            for seg, lo, hi in zip(segs, bounds, bounds[1:], strict=False):
                for k in range(lo, hi):
                    items.append((seg[1] + k - lo, rows[k], seg))
        items.sort(key=lambda item: item[0])
        for line_no, line, seg in items:
            self._row(line_no, line, seg)

    def _row(self, line_no: int, line: str, seg: _Seg) -> None:
        """One data row by the per-line grammar."""
        _, _, table, table_no, header_line_no = seg
        head = line.split(None, 3)
        sod, used = self.label(line_no, line, head)
        if table is None:
            raise self.error(line_no, line, "a row before any pidstat `UID PID ... Command` header")
        if table_no != self.row_table_no:  # a new table: its own tasks and `-` TGIDs
            self.row_table_no, self.table_keys, self.last_tgid = table_no, set(), None
        parts = line.split(None, used + table.width - 1)
        fields = parts[used:]
        if len(fields) != table.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields after the time, the header at line {header_line_no} has {table.width}",
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
            row = self.n
            self.rows_at[key] = row
            self._append(
                np.array([ns], dtype=np.int64),
                np.array([self._cmd_code(command)], dtype=np.int32),
                {c: np.array([_NAN]) for c in _NUMERIC},
            )
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

    def _append(self, stamps: np.ndarray, cmd: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        pos, end = self.n, self.n + len(stamps)
        if end > len(self.stamps):  # grow by half at least: amortised, no view of these arrays exists
            size = max(end, len(self.stamps) * 3 // 2)
            for arr in (self.stamps, self.cmd_codes, *self.cols.values()):
                arr.resize(size, refcheck=False)
        self.stamps[pos:end] = stamps
        self.cmd_codes[pos:end] = cmd
        for col, arr in self.cols.items():
            arr[pos:end] = cols[col]
        self.n = end

    def _cmd_code(self, name: str) -> int:
        return self.cmd_names.setdefault(name, len(self.cmd_names))

    def host_name(self) -> str | None:
        return self.host if self.host is not None else self.banner_host

    def assemble(self) -> pd.DataFrame:
        attrs = {
            "averages": list(self.averages.values()),
            "unknown_columns": self.unknown,
            "dropped_lines": self.dropped,
            "notes": self.notes,
        }
        n = self.n
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
        else:
            for arr in (self.stamps, self.cmd_codes, *self.cols.values()):
                arr.resize(n, refcheck=False)  # trim the spare capacity
            names = np.empty(len(self.cmd_names), dtype=object)
            names[list(self.cmd_names.values())] = list(self.cmd_names)
            data: dict[str, object] = {
                "timestamp": utc(self.stamps),
                "host": pd.array(np.full(n, self.host_name(), dtype=object), dtype="string"),
            }
            for col in _NUMERIC:
                values = self.cols[col]
                if col in _INTS:
                    missing = np.isnan(values)
                    data[col] = pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)
                else:
                    data[col] = values
            data["command"] = pd.array(names.take(self.cmd_codes), dtype="string")
            frame = pd.DataFrame(data, copy=False)  # one block per column, no copy
            if {c: str(t) for c, t in frame.dtypes.items()} != SCHEMA:  # safety net; copies the frame
                frame = _common.coerce(frame, SCHEMA)
        frame.attrs.update(attrs)
        return frame

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
missing value), `unknown_columns`, `dropped_lines` (a last line cut mid-write), `notes`, `cpus` (the
banner's `(N CPU)`, None without a banner).

Large captures (a day at 1 s is 8 M lines): the bytes are cut into data rows, headers and blank
lines with numpy over multi-MB blocks (`ByteScan`, `_block`), a header seen before but for its time
is taken without the per-line grammar, and the rows of each table layout go to pandas in chunks;
each chunk's tables are merged per interval and task with numpy. A chunk is read so only when
`plain_bytes` and `numbers_as_printed` (parsers/_sysstat.py) prove the per-line grammar would read
the same numbers, its `-` placeholders stand where that grammar takes them, and its tables have the
usual shape (each metric printed by one layout, a task at most once per table and interval, one
time per table); any other chunk goes line by line, which also names the first bad line.

`pidstat -h`: per interval one `# Time UID PID %usr ... Command` header and one line per task with
every metric on it, no `Average:` tables; its time label is a clock, or (older sysstat) seconds since
the epoch (`1646859134`: UTC whatever `tz`). Under one header, rows of another time are other tasks'
lines (`-e`, `-h`), and an `Average:` row may follow the interval's rows directly (`-e`).

Read what can be read (parsers/_common.Skips, `attrs["skipped"]`): a line that starts with neither
a time nor an `Average:` label (`pidstat -e CMD` mixes CMD's output in; stderr saved with stdout)
is skipped and counted; a line starting with a broken clock is still an error. An `iodelay` past
2**53 ticks is no delay (a small negative delta printed unsigned, `18446744073709551611` = -5, or an
`Average:` over one): read as missing, the line quoted in the skips and in `notes`, never a refusal.
Not read: `-o JSON`. Tested on: tests/fixtures/pidstat/*.txt (see README.md there).
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._chunks import ByteScan, Rows
from ._sysstat import (
    CHUNK_ROWS,
    Sysstat,
    label_width,
    numbers_as_printed,
    plain_bytes,
    read_chunk,
    record_value,
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
_TASK = frozenset({"uid", "pid", "tgid", "tid"})  # a task's ids: the same in every table listing it
_HEADER_FIRST = frozenset({"UID", "USER", "PID", "TGID"})
_HEADER_FIRST_B = frozenset(word.encode() for word in _HEADER_FIRST)
_UINT = re.compile(r"^\d+$")
_EXACT = float(1 << 53)  # whole numbers held as float64 are exact below this
_SNIFF_HEADER = re.compile(r"(?:^|\s)(?:(?:UID|USER)\s+)?(?:PID|TGID\s+TID)\s+\S.*\sCommand\s*$")
_NAN = float("nan")
# ByteScan's structure lines: those starting with neither a digit nor a line end (banner, `Average:`);
# the headers (a time, then `UID`, `USER`, `PID` or `TGID`) and blank lines among the rows are found in
# `_block`; rows in a rarer form among either go back to the rows in `structure`
_ROW_BYTES = b"0123456789\n"
_HEADER_WORDS = (b"ID", b"USER")


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
        `dropped_lines`, `notes`, `skipped`.

    Raises:
        ParseError: a row whose field count does not match its header, a task listed twice in one
            table at one time, a thread row with no process above it, a foreign locale it cannot
            read safely, a file with no row at all among lines it skipped.
    """
    return _Pidstat(source, host, tz).run()


class _Table:
    """One table layout: which field feeds which column (the same for every header printing it)."""

    __slots__ = ("width", "plan", "columns", "threads")

    def __init__(self, width: int, plan: list[tuple[int, str]], threads: bool):
        self.width = width  # fields after the time label, Command included
        self.plan = plan  # (field index, schema column) for ids and metrics
        self.columns = frozenset(col for _, col in plan)
        self.threads = threads


class _Part(NamedTuple):
    """One layout's rows of a chunk as pandas read them."""

    table: _Table
    data: bytes  # the rows, `-` placeholders made `-1`
    line_nos: np.ndarray
    table_no: np.ndarray
    sods: np.ndarray  # seconds since midnight of the rows' time
    cmd: np.ndarray  # codes into `cmd_names`
    cols: dict[str, np.ndarray]  # the layout's columns, float64, NaN for a `-`


# A buffered run of rows as `_row` takes it: (row index in its table's buffer, line number, table, table
# number, header line).
_Seg = tuple[int, int, "_Table | None", int, int]


class _Buffer:
    """The rows buffered for one table layout: runs of LF-terminated lines, and per run its first row's
    index, line number, table number and header line (lists of ints: extended run by run or in bulk)."""

    __slots__ = ("table", "blocks", "rows", "lines", "table_nos", "head_lines", "n")

    def __init__(self, table: _Table | None) -> None:
        self.table = table
        self.blocks: list[bytes] = []
        self.rows: list[int] = []
        self.lines: list[int] = []
        self.table_nos: list[int] = []
        self.head_lines: list[int] = []
        self.n = 0

    def segs(self) -> list[_Seg]:
        tables = [self.table] * len(self.rows)
        return list(zip(self.rows, self.lines, tables, self.table_nos, self.head_lines, strict=True))


class _Pidstat(Sysstat):
    """The walk only sorts lines: data rows are buffered per table layout, headers handled at once.

    A chunk (the rows of many intervals) is read by pandas one layout at a time and the tables of
    each interval merged per task (`_fast`); a chunk it cannot prove it reads as the per-line grammar
    would goes through `_row` line by line, which also names the first bad line. A header or banner
    that raises first flushes the rows above it, so errors keep file order.
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
        self.heads: dict[bytes, _Table] = {}  # a header line after its time -> its table
        self.clocks: tuple[pd.Index, np.ndarray] | None = None  # the last time labels read, their seconds
        self.buffers: dict[int, _Buffer] = {}  # by id() of the layout
        self.buffered = 0  # rows in them
        # per-line state (kept right after a chunk read by pandas too)
        self.row_table_no = -1  # the table whose tasks are in table_keys
        self.table_keys: set[tuple[int, int]] = set()  # (pid, tid) already in that table at row_sod
        self.row_sod: int | None = None  # the label of the last row read (None: `Average:`)
        self.h_mode = False  # a `# Time` header (pidstat -h) was seen
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
        self.total_bytes = 0  # the capture's size, where known: how many rows to make room for
        self.skips = _common.Skips()
        self.flushed_bytes = 0  # bytes of the rows flushed so far

    def run(self) -> pd.DataFrame:
        scan = ByteScan(self.source, KIND, row_bytes=_ROW_BYTES)
        self.lines = scan.lines
        self.total_bytes = _common.source_size(self.source, scan.lines)
        for item in scan:
            if isinstance(item, Rows):
                self._block(item.data, item.first_no, item.ends)
            else:
                self.structure(*item)
        if scan.cut is not None:
            self.cut_last(*scan.cut, scan.lines)
        self.flush()
        return self.assemble()

    def _block(self, data: bytes, line_no: int, ends: np.ndarray) -> None:
        """Lines starting with a digit, or blank: data rows, and the headers and blank lines among them
        (`ends`: where each line's `\\n` is)."""
        buf = np.frombuffer(data, dtype=np.uint8)
        starts = np.concatenate(([0], ends + 1))  # line i is data[starts[i]:ends[i]]
        found = np.concatenate([_find(buf, word) for word in _HEADER_WORDS])
        heads = np.unique(np.searchsorted(ends, found))  # the lines holding a header word
        lo = np.concatenate(([0], heads + 1))  # the runs of other lines: before, between, after them
        hi = np.append(heads, len(ends))
        # a run's rows end with its last line that is not blank (blank lines follow a table); a blank
        # line among them makes the run go one row at a time
        blank = starts[:-1] == ends
        filled = np.maximum.accumulate(np.where(blank, -1, np.arange(len(ends))))
        rows = np.where(hi > lo, filled[np.maximum(hi - 1, 0)] + 1 - lo, 0).clip(0)
        blanks = np.concatenate(([0], np.cumsum(blank)))
        clean = blanks[lo + rows] == blanks[lo]
        bounds = starts[lo].tolist(), starts[lo + rows].tolist()
        runs = zip(lo.tolist(), rows.tolist(), clean.tolist(), *bounds, strict=True)
        lines = [data[a:b] for a, b in zip(starts[heads].tolist(), ends[heads].tolist(), strict=True)]
        splits = [line.partition(b" ") for line in lines]  # (time label, blank, the rest)
        times = self._times({label for label, _, _ in splits})
        if clean.all() and self._known(data, line_no + lo, rows, *bounds, line_no + heads, splits, times):
            return
        after = [*zip((line_no + heads).tolist(), lines, splits, strict=True), None]  # each run's header
        for (first, count, regular, start, end), head in zip(runs, after, strict=True):
            if count and regular:
                self._add(data[start:end], line_no + first, count)
            elif count:
                for k, line in enumerate(data[start:end].split(b"\n")):
                    if line:
                        self._add(line + b"\n", line_no + first + k, 1)
            if head is not None:
                head_no, line, (label, _, rest) = head
                self._header_line(head_no, line, label, rest, label in times)

    def _known(
        self,
        data: bytes,
        firsts: np.ndarray,
        counts: np.ndarray,
        starts: list[int],
        ends: list[int],
        head_lines: np.ndarray,
        splits: list[tuple[bytes, bytes, bytes]],
        times: set[bytes],
    ) -> bool:
        """The block's runs and headers at once when every header is one seen before but for its time
        (`_header_line`'s first path), so no header needs `structure`: run r follows header r - 1 (run 0
        the header before the block) and gets its table, the table number it bumped and its line; a
        chunk is flushed at the first header of a new time once CHUNK_ROWS rows are buffered, as
        `_header_line` does. False, having changed nothing, for any other block."""
        tables = [self.heads.get(rest) if label in times else None for label, _, rest in splits]
        if None in tables:
            return False
        labels = [label for label, _, _ in splits]
        head_lines = head_lines.tolist()
        counts_l = counts.tolist()
        firsts_l = firsts.tolist()
        done = 0  # runs buffered so far
        pending = self.buffered  # rows buffered once the runs up to h are
        # the labels are ASCII times (`times`): compared as bytes, as `_header_line` compares their text
        previous = None if self.header_label is None else self.header_label.encode()
        for h, label in enumerate(labels):
            # `_header_line` for header h, after run h: a new time with a full chunk flushes
            pending += counts_l[h]
            if pending >= CHUNK_ROWS and label != previous:
                self._runs(data, done, h + 1, firsts_l, counts_l, starts, ends, head_lines, tables)
                done = h + 1
                self.flush()
                pending = 0
            previous = label
        self._runs(data, done, len(counts_l), firsts_l, counts_l, starts, ends, head_lines, tables)
        if tables:
            self.table = tables[-1]
            self.table_no += len(tables)
            self.header_line_no = head_lines[-1]
            self.header_label = labels[-1].decode()
        return True

    def _runs(
        self,
        data: bytes,
        lo: int,
        hi: int,
        firsts: list[int],
        counts: list[int],
        starts: list[int],
        ends: list[int],
        head_lines: list[int],
        tables: list[_Table],
    ) -> None:
        """Buffer runs lo..hi - 1 of a block `_known` reads: run r > 0 belongs to header r - 1."""
        base = self.table_no  # the table number before the block's first header
        for r in range(lo, hi):
            count = counts[r]
            if not count:
                continue
            if r:
                table, table_no, head_line = tables[r - 1], base + r, head_lines[r - 1]
            else:
                table, table_no, head_line = self.table, base, self.header_line_no
            buf = self._buffer(table)
            buf.rows.append(buf.n)
            buf.lines.append(firsts[r])
            buf.table_nos.append(table_no)
            buf.head_lines.append(head_line)
            buf.blocks.append(data[starts[r] : ends[r]])
            buf.n += count
            self.buffered += count

    def _times(self, labels: set[bytes]) -> set[bytes]:
        """The labels that are a time of day `label()` reads (all of them at once, usually)."""
        texts = {label: label.decode() for label in labels if label.isascii()}
        if self.label_sods([(text,) for text in texts.values()]) is not None:
            return set(texts)
        return {label for label, text in texts.items() if self._clock(text)}

    def _header_line(self, line_no: int, line: bytes, label: bytes, rest: bytes, time: bool) -> None:
        """A line holding a header word: `structure`, or at once for a header seen before but for its
        `time` (an ASCII one, so it has no blank in it: `structure` would do just this)."""
        table = self.heads.get(rest) if time else None
        if table is not None:
            text = label.decode()
            if text != self.header_label and self.buffered >= CHUNK_ROWS:
                self.flush()  # a full chunk ends where an interval does
            self.table = table
            self.table_no += 1
            self.header_line_no = line_no
            self.header_label = text
            return
        table_no = self.table_no
        self.structure(line_no, line.decode("utf-8", "replace"))
        # a header whose label is one token and whose fields are `rest`: the next one with these fields
        # and another time takes the path above
        first = rest.split(None, 1)[:1]
        if self.table_no != table_no and first and first[0] in _HEADER_FIRST_B and label.isascii():
            text = label.decode()
            if text.split() == [text]:
                self.heads[rest] = self.table

    def _clock(self, text: str) -> bool:
        """True when `text` is a time of day `label()` reads (it may not: `structure` then names the line)."""
        try:
            return self.label(0, text, [text])[0] is not None
        except ParseError:
            return False

    def _add(self, rows: bytes, line_no: int, count: int) -> None:
        """Buffer a run of rows of the current table."""
        buf = self._buffer(self.table)
        buf.rows.append(buf.n)
        buf.lines.append(line_no)
        buf.table_nos.append(self.table_no)
        buf.head_lines.append(self.header_line_no)
        buf.blocks.append(rows)
        buf.n += count
        self.buffered += count

    def _buffer(self, table: _Table | None) -> _Buffer:
        buf = self.buffers.get(id(table))
        if buf is None:
            buf = self.buffers[id(table)] = _Buffer(table)
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
            if head[:2] == ["#", "Time"]:  # -h: one table per interval, every metric on a task's line
                self.h_mode = self.epoch_labels = True  # -h may print seconds since the epoch
                if self.buffered >= CHUNK_ROWS:
                    self.flush()  # a full chunk ends where an interval does
                self.header(line_no, line, line.split()[2:])
                self.header_label = None
                return
            if not self._labelled(line_no, line, head):
                return
            sod, used = self.label(line_no, line, head)
            if len(head) > used and head[used] in _HEADER_FIRST:
                label = " ".join(head[:used])
                if sod is None or (label != self.header_label and self.buffered >= CHUNK_ROWS):
                    self.flush()  # averages go line by line; a full chunk ends where an interval does
                self.header(line_no, line, line.split()[used:])
                self.header_label = label
                return
        except ParseError:
            self.flush()  # a bad row above is the first error
            raise
        self._add(line.encode("utf-8", "surrogatepass") + b"\n", line_no, 1)

    def _labelled(self, line_no: int, line: str, head: list[str]) -> bool:
        """True when a line starts with a time or an `Average:` label; any other line is no pidstat
        line (a command's output under `pidstat -e`, stderr saved with stdout): skipped and counted.
        A line starting with a clock-like token (`06:56:3x`) is left to `label()` to refuse."""
        try:
            self.label(line_no, line, head)
        except ParseError:
            if ":" in head[0].rstrip(":"):
                raise
            self.skips.add(line_no, line, "not a pidstat line (no time label): another program's output")
            return False
        return True

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
        buffers = [(b"".join(buf.blocks), buf) for buf in self.buffers.values() if buf.n]
        self.flushed_bytes += sum(len(data) for data, _ in buffers)
        self.buffers.clear()  # taken first: an error below must not see them again
        self.buffered = 0
        if buffers and not self._fast(buffers):
            self._slow(buffers)

    def _fast(self, buffers: list[tuple[bytes, _Buffer]]) -> bool:
        """Read a chunk with pandas and keep it, or return False having changed nothing."""
        mark = self.chunk_mark([data for data, _ in buffers])
        if mark is None:
            return False
        parts = []
        for buf in buffers:
            part = self._read(*buf, mark)
            if part is None:
                return False
            parts.append(part)
        tables = [part.table for part in parts]
        # the merge takes a task's ids, uid and command from its first row, each metric from the one
        # table of the interval that prints it: other layouts go line by line
        metrics = [table.columns - _TASK for table in tables]
        if (
            len(set().union(*metrics)) != sum(map(len, metrics))
            or len({(table.threads, "uid" in table.columns) for table in tables}) > 1
            or any("tid" in table.columns and not table.threads for table in tables)
        ):
            return False
        line_nos = np.concatenate([part.line_nos for part in parts])
        order = np.argsort(line_nos, kind="stable")  # file order
        table_no = np.concatenate([part.table_no for part in parts])[order]
        if table_no[0] == self.row_table_no:
            return False  # the table goes on from the previous chunk: its keys are per-line state
        ids = {c: np.concatenate([part.cols[c] for part in parts])[order] for c in tables[0].columns & _TASK}
        n = len(order)
        if tables[0].threads:
            # `-` TGID: the process printed above in the same table; the first row of a table has one
            tgid, tid = ids["tgid"], ids["tid"]
            missing = np.isnan(tgid)
            firsts = np.concatenate(([True], table_no[1:] != table_no[:-1]))
            if (missing & (firsts | np.isnan(tid))).any():
                return False
            pid = tgid = tgid[np.maximum.accumulate(np.where(missing, 0, np.arange(n)))]
        else:
            pid, tid, tgid = ids["pid"], np.full(n, _NAN), np.full(n, _NAN)
        tid_key = np.where(np.isnan(tid), -1, tid)
        if pid.max() >= 2**31 or tid_key.max() >= 2**31:
            return False  # no such task ids on Linux; the key below needs them to fit
        tasks, task_keys = pd.factorize(pid.astype(np.int64) << 32 | (tid_key + 1).astype(np.int64))
        clock = self.clock_state()
        sods = np.concatenate([part.sods for part in parts])[order]
        stamps, interval = self.stamp_rows(line_nos[order], sods)
        run = np.cumsum(np.concatenate(([0], interval[1:] != interval[:-1])))
        # one row per task and interval, in order of first appearance, as `sample` makes them
        rows, groups = pd.factorize(run * len(task_keys) + tasks)
        layout = np.repeat(np.arange(len(parts)), [len(part.line_nos) for part in parts])[order]
        if (
            interval[0] == self.interval  # the interval goes on from the previous chunk
            or ((table_no[1:] == table_no[:-1]) & (run[1:] != run[:-1])).any()  # a table over two times
            or np.bincount(rows * len(parts) + layout).max() > 1  # a task twice in a layout in an interval
        ):
            self.restore_clock(clock)
            return False
        self.commit_mark([part.data for part in parts], mark)
        top = np.maximum.accumulate(rows)
        first = np.flatnonzero(np.concatenate(([True], top[1:] > top[:-1])))  # each task's first row
        start, end = self.n, self.n + len(groups)
        self._grow(end)
        self.stamps[start:end] = stamps[first]
        self.cmd_codes[start:end] = np.concatenate([part.cmd for part in parts])[order][first]
        out = self.cols
        for col, values in (("uid", ids.get("uid")), ("pid", pid), ("tgid", tgid), ("tid", tid)):
            out[col][start:end] = _NAN if values is None else values[first]
        at = np.empty(n, dtype=np.int64)
        at[order] = rows + start  # each row's row in the frame, in the order of `parts`
        bounds = np.cumsum([0] + [len(part.line_nos) for part in parts])
        for col in _NUMERIC:
            if col not in _TASK:
                out[col][start:end] = _NAN
        for part, lo, hi in zip(parts, bounds, bounds[1:], strict=False):
            for col, values in part.cols.items():
                if col not in _TASK:
                    out[col][at[lo:hi]] = values
        self.n = end
        # per-line state as `_row` would have left it
        last = first[run[first] == run[-1]]
        self.rows_at = {
            (int(p), int(t)): start + int(k)
            for k, p, t in zip(rows[last], pid[last], tid_key[last], strict=True)
        }
        self.interval = int(interval[-1])
        in_last = table_no == table_no[-1]
        self.row_table_no = int(table_no[-1])
        self.table_keys = {(int(p), int(t)) for p, t in zip(pid[in_last], tid_key[in_last], strict=True)}
        self.row_sod = int(sods[-1])
        self.last_tgid = int(tgid[-1]) if tables[0].threads else None
        return True

    def _read(self, data: bytes, buf: _Buffer, mark: str) -> _Part | None:
        """One layout's rows as pandas reads them; None if not provably what `_row` would read."""
        table, n = buf.table, buf.n
        if table is None:
            return None
        width = table.width
        nlab = label_width(data[: data.find(b"\n")].decode("utf-8", "replace"))
        # `-` placeholders (TGID, TID, CPU) read as -1, then NaN; a printed -1 is no placeholder
        placeholders, printed = _dashes(data)
        if printed:
            return None
        if placeholders:  # twice: `replace` does not see the second of ` - - `
            data = data.replace(b" - ", b" -1 ").replace(b" - ", b" -1 ")
        df = read_chunk(data, nlab + width, [*range(nlab), nlab + width - 1], mark)
        if df is None or len(df) != n:
            return None
        commands = df[nlab + width - 1].array
        names = commands.categories.tolist()
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
        cols: dict[str, np.ndarray] = {}
        found = 0
        for (_, col), values in zip(table.plan, numbers, strict=True):
            arr = values.to_numpy()
            if col in _INTS:
                if arr.dtype.kind != "i" or (len(arr) and arr.max() >= _EXACT):
                    return None  # the line walk names the value
                holes = arr == -1
                if col in ("tgid", "tid", "cpu"):
                    found += int(holes.sum())
                if (arr < 0).sum() != (holes.sum() if col in ("tgid", "tid", "cpu") else 0):
                    return None
                arr = np.where(holes, np.nan, arr.astype(np.float64))
            cols[col] = arr.astype(np.float64, copy=False)
        if found != placeholders:  # a `-` where `_row` takes no placeholder
            return None
        sods = self._label_seconds([df[i].array for i in range(nlab)])
        if sods is None or self.epoch_day is not None:  # epoch labels: `stamp` row by row
            return None
        firsts = np.array(buf.rows, dtype=np.int64)
        per_seg = np.diff(np.append(firsts, n))
        line_nos = np.repeat(np.array(buf.lines, dtype=np.int64) - firsts, per_seg) + np.arange(n)
        table_no = np.repeat(np.array(buf.table_nos, dtype=np.int64), per_seg)
        remap = np.array([self._cmd_code(c) for c in names], dtype=np.int32)
        return _Part(table, data, line_nos, table_no, sods, remap[commands.codes], cols)

    def _label_seconds(self, labels: list[pd.Categorical]) -> np.ndarray | None:
        """Seconds since midnight per row, from the distinct labels (the tables of a chunk share them)."""
        if len(labels) == 1:
            clocks = labels[0].categories
            if self.clocks is not None and clocks.equals(self.clocks[0]):
                return self.clocks[1][labels[0].codes]
            sods = self.label_sods([(t,) for t in clocks.tolist()])
            if sods is None:
                return None
            self.clocks = (clocks, np.array(sods, dtype=np.int64))
            return self.clocks[1][labels[0].codes]
        first, second = labels
        clocks, marks = first.categories.tolist(), second.categories.tolist()
        n2 = len(marks)
        uniq, codes = np.unique(first.codes.astype(np.int64) * n2 + second.codes, return_inverse=True)
        sods = self.label_sods([(clocks[u // n2], marks[u % n2]) for u in uniq.tolist()])
        return None if sods is None else np.array(sods, dtype=np.int64)[codes]

    def _slow(self, buffers: list[tuple[bytes, _Buffer]]) -> None:
        """The chunk line by line, in file order."""
        items = []
        for data, buf in buffers:
            rows = data.decode("utf-8", "replace").split("\n")
            segs = buf.segs()
            bounds = [s[0] for s in segs] + [buf.n]
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
        if not self._labelled(line_no, line, head):
            return
        sod, used = self.label(line_no, line, head)
        if table is None:
            raise self.error(line_no, line, "a row before any pidstat `UID PID ... Command` header")
        if table_no != self.row_table_no:  # a new table: its own tasks and `-` TGIDs
            self.row_table_no, self.table_keys, self.last_tgid = table_no, set(), None
        if sod != self.row_sod:  # rows of another time under one header (-e, -h): other tasks
            self.row_sod, self.table_keys = sod, set()
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
            value = float(token)
            if col == "iodelay" and value >= _EXACT:
                # 2**53 ticks are 2.8 million years: a small negative delta printed unsigned (the
                # kernel's counter went back, 18446744073709551611 is -5) or an `Average:` over one.
                # No delay to read, and never a giant one: missing, the line quoted
                big = int(token)
                why = f"{big - 2**64} wrapped past 2**64" if 2**63 <= big < 2**64 else "no real delay"
                self.notes.append(f"line {line_no}: iodelay {token} ({why}) read as missing")
                self.skips.add(line_no, line, f"iodelay {token} ({why}) read as missing")
                return _NAN
            if value >= _EXACT:  # the column holds it as float64 until assembly: it would come out wrong
                raise self.error(line_no, line, f"{col}: {token!r} is past 2**53")
            return value
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

    def _grow(self, end: int) -> None:
        """Room for rows up to `end`: grown by half at least (amortised; no view of these arrays exists),
        or at once to the rows the whole capture will hold at the rows per byte read so far. `resize`
        zero-fills what it adds: every spare row is a page touched for nothing (first touches were a
        tenth of the parse time on a day of pidstat)."""
        if end > len(self.stamps):
            size = max(end, len(self.stamps) * 3 // 2)
            if self.total_bytes and self.flushed_bytes:
                size = max(end, min(size, int(end * self.total_bytes / self.flushed_bytes * 1.05)))
            for arr in (self.stamps, self.cmd_codes, *self.cols.values()):
                arr.resize(size, refcheck=False)

    def _append(self, stamps: np.ndarray, cmd: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        pos, end = self.n, self.n + len(stamps)
        self._grow(end)
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
            "cpus": self.banner_cpus,
            "skipped": self.skips,
        }
        n = self.n
        self.skips.refuse_if_nothing_read(n + len(self.averages), self.lines)
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
        else:
            for arr in (self.stamps, self.cmd_codes, *self.cols.values()):
                arr.resize(n, refcheck=False)  # trim the spare capacity
            data: dict[str, object] = {
                "timestamp": utc(self.stamps),
                "host": _common.text_column([self.host_name()], np.zeros(n, dtype=np.intp)),
            }
            for col in _NUMERIC:
                values = self.cols[col]
                if col in _INTS:
                    data[col] = _int_array(values)
                else:
                    data[col] = values
            data["command"] = _common.text_column(list(self.cmd_names), self.cmd_codes)
            frame = pd.DataFrame(data, copy=False)  # one block per column, no copy
            if {c: str(t) for c, t in frame.dtypes.items()} != SCHEMA:  # safety net; copies the frame
                frame = _common.coerce(frame, SCHEMA)
        frame.attrs.update(attrs)
        return frame


def _int_array(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Whole numbers held as float64 (NaN: missing) as Int64, converted in place slice by slice: no
    second array of the column's size to allocate and touch."""
    missing = np.isnan(values)
    np.copyto(values, 0.0, where=missing)
    ints = values.view(np.int64)
    for start in range(0, len(values), CHUNK_ROWS):
        ints[start : start + CHUNK_ROWS] = values[start : start + CHUNK_ROWS].astype(np.int64)
    return pd.arrays.IntegerArray(ints, missing)


def _dashes(data: bytes) -> tuple[int, bool]:
    """(how many `-` stand alone between blanks, whether a ` -1 ` is printed): numpy, as a search for a
    pattern starting with a blank is slow in text that is mostly blanks. `data` ends with a line end."""
    buf = np.frombuffer(data, dtype=np.uint8)
    at = np.flatnonzero(buf == ord("-"))
    if not len(at):
        return 0, False
    blank_before = buf[np.maximum(at - 1, 0)] == ord(" ")  # at 0 this is the `-` itself
    after = buf[at + 1]
    second = buf[np.minimum(at + 2, len(buf) - 1)]  # past the end: the line end
    alone = blank_before & (after == ord(" "))
    minus_one = blank_before & (after == ord("1")) & (second == ord(" "))
    return int(np.count_nonzero(alone)), bool(minus_one.any())


def _find(buf: np.ndarray, word: bytes) -> np.ndarray:
    """Where `word` starts in `buf`: numpy, faster here than a regex or `bytes.find` scan."""
    at = np.flatnonzero(buf[: max(len(buf) - len(word) + 1, 0)] == word[0])
    for k in range(1, len(word)):
        at = at[buf[at + k] == word[k]]
    return at

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
`unknown_columns` and their values not read. `Command` is the last column; with `-l` it is
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

A value from a table that did not list the task is NaN/NA, never 0. Beside its rows: `EXTRAS`.

`pidstat -h`: one `# Time UID PID %usr ... Command` header per interval and one line per task with
every metric, no `Average:` tables; its time label is a clock or (older sysstat) epoch seconds
(`1646859134`: UTC whatever `tz`). Under one header, rows of another time are other tasks' lines
(`-e`, `-h`), and an `Average:` row may follow the interval's rows directly (`-e`).

Skipped and counted (parsers/_common.Skips, `skipped`): a line starting with neither a time nor
`Average:` (`pidstat -e CMD` mixes CMD's output in; stderr saved with stdout); a line starting with a
broken clock is still an error. An `iodelay` past 2**53 ticks is no delay (a small negative delta
printed unsigned, `18446744073709551611` = -5, or an `Average:` over one): missing, the line quoted in
the skips and in `notes`. Not read: `-o JSON`. Tested on: tests/fixtures/pidstat/*.txt (README.md).

Reading: parsers/_table.py cuts the capture and reads each layout's rows (in bulk, or row by row
naming a bad line; `Command` is a `rest` field); the tables of an interval are merged here, per chunk,
with numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._common import Extras
from ._sysstat import Sysstat, label_width, record_value, utc
from ._table import ROW, Block, Layout, Skip, Table


@dataclass(frozen=True)
class PidstatExtras(Extras):
    """What pidstat reads beside its rows (see `_common.Extras`)."""

    # the `Average:` tables, merged as the interval ones are, as records without `timestamp`; None for a
    # missing value
    averages: list[dict] = field(default_factory=list)
    # the banner's `(N CPU)`; None without a banner
    cpus: int | None = None


EXTRAS = PidstatExtras

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
_PLACEHOLDER = frozenset({"tgid", "tid", "cpu"})  # `-` with -t, and the CPU of `Average:` rows
_NUMERIC = [c for c in SCHEMA if c not in ("timestamp", "host", "command")]
_INTS = frozenset(c for c, t in SCHEMA.items() if t == "Int64")
_TASK = ("uid", "pid", "tgid", "tid")  # a task's ids: the same in every table listing it
_HEADER_FIRST = frozenset({"UID", "USER", "PID", "TGID"})
_EXACT = float(1 << 53)  # whole numbers held as float64 are exact below this
_SNIFF_HEADER = re.compile(r"(?:^|\s)(?:(?:UID|USER)\s+)?(?:PID|TGID\s+TID)\s+\S.*\sCommand\s*$")
_NAN = float("nan")
_AVERAGE = -1  # the `sods` of an `Average:` row
_FOREIGN = "not a pidstat line (no time label): another program's output"


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
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: a row whose field count does not match its header, a task listed twice in one
            table at one time, a thread row with no process above it, a foreign locale it cannot
            read safely, a file with no row at all among lines it skipped.
    """
    return _Pidstat(source, host, tz).run()


class _Part(NamedTuple):
    """One block's rows as the merge takes them."""

    block: Block
    rows: np.ndarray  # the block's rows taken (those labelled by no time are another program's)
    line_nos: np.ndarray
    headers: np.ndarray
    sods: np.ndarray  # seconds since midnight of the rows' time; `_AVERAGE` for `Average:` rows
    cmd: np.ndarray  # codes into `cmd_names`
    cols: dict[str, np.ndarray]  # the layout's columns, float64, NaN for a `-`
    threads: bool


class _Chunk(NamedTuple):
    """A chunk's rows (every pending block's), merged in file order."""

    line_nos: np.ndarray
    headers: np.ndarray
    sods: np.ndarray
    threads: np.ndarray
    values: dict[str, np.ndarray]  # the columns any block of the chunk has
    cmd: np.ndarray
    texts: _Texts


class _Pidstat(Sysstat):
    """The format for the table engine: rows start with a digit (their time), a blank (`-h`'s epoch
    labels) or `#` (`-h`'s header); headers hold `PID`, `TGID` or `USER`. The engine
    hands over one block per layout per chunk (`rows`); `chunk_end` merges them in file order."""

    row_bytes = b"0123456789 #\n"
    header_words = (b"PID", b"TGID", b"USER")

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.table = Table(source, KIND, self, self.numbers)
        self.table.foreign = self._foreign
        self.skips = self.table.skips
        self.unknown: list[str] = []
        self.pending: list[_Part] = []
        self.problems: list[tuple[int, str, str]] = []  # (line, text, reason) of the chunk's bad rows
        self.events: list[tuple[int, str, str]] = []  # (line, text, note) of the chunk's wrapped iodelays
        # carried from chunk to chunk, as the rows left it
        self.run_at: tuple[int, int] | None = None  # (header, time) of the last row read
        self.run_tasks: set[tuple[float, float]] = set()  # the tasks already in that table at that time
        self.tgid_at: tuple[int, float] | None = None  # (header, TGID) of the last -t row: `-` TGIDs
        self.interval: int | None = None  # the last interval read (seconds since the first midnight)
        self.rows_at: dict[tuple[float, float], int] = {}  # its tasks -> their frame row
        self.averages: dict[tuple[float, float], dict[str, object]] = {}
        # the frame, column by column; ints held as float64 (exact below 2**53) until assembly
        self.n = 0
        self.stamps = np.empty(0, dtype=np.int64)
        self.cols = {c: np.empty(0) for c in _NUMERIC}
        self.cmd_codes = np.empty(0, dtype=np.int32)
        self.cmd_names: dict[str, int] = {}
        self.total_bytes = _common.source_size(source, self.table.lines)  # how many rows to make room for
        self.flushed_bytes = 0  # bytes of the rows merged so far

    def run(self) -> pd.DataFrame:
        self.read()
        return self.assemble()

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout | Skip:
        tokens = text.split()
        labels = (1, 2)  # a time, with AM/PM or not
        if tokens[:2] == ["#", "Time"]:  # -h: one table per interval, every metric on a task's line
            self.epoch_labels = True  # -h may label rows with seconds since the epoch
            fields = tokens[2:]
        else:
            try:
                _, used = self.label(line_no, text, tokens)
            except ParseError:  # another program's line (-e): `structure` or `_odd_row` says so
                return ROW
            fields = tokens[used:]
            if not fields or fields[0] not in _HEADER_FIRST:
                return ROW
            labels = (used, 3 - used)  # the rows' time as the header's first (the engine's bulk read)
        if fields[-1] != "Command":
            raise self.error(line_no, text, "not a pidstat table header (no `Command` last)")
        plan: list[tuple[int, str]] = []
        kinds = ""
        for i, name in enumerate(fields[:-1]):
            col = _IDS.get(name) or _METRICS.get(name)
            if col is None:  # not read (-r, -U's USER, ...): any token
                if name not in self.unknown:
                    self.unknown.append(name)
                kinds += "t"
                continue
            if any(col == c for _, c in plan):
                raise self.error(line_no, text, f"column {name!r} twice in the header")
            plan.append((i, col))
            kinds += "I" if col in _INTS else "f"  # ids and counts: integers or `-`, judged in `_whole`
        seen = {col for _, col in plan}
        threads = "tgid" in seen
        if not ("pid" in seen or (threads and "tid" in seen)) or ("pid" in seen and threads):
            raise self.error(line_no, text, "a pidstat header needs `PID`, or `TGID TID` (-t)")
        # Command: the rest of the line (-l prints the whole command line, blanks and all)
        return Layout(kinds + "t", labels=labels, key=(tuple(plan), threads), rest=True)

    def structure(self, line_no: int, text: str) -> None:
        """A line that starts with no row's byte: the banner, an `Average:` row, another program's."""
        tokens = text.split()
        if not tokens:
            return
        if text.startswith("Linux") and self.banner(line_no, text):
            return
        if not self._labelled(line_no, text, tokens):
            return
        sod, used = self.label(line_no, text, tokens)
        layout = self.table.current
        if not isinstance(layout, Layout):
            raise self.error(line_no, text, "a row before any pidstat `UID PID ... Command` header")
        # its own label (`Average:` right under a 12-hour interval's rows: -e)
        block = self.table.read_lines([(line_no, text)], replace(layout, labels=(used,)))
        if len(block) and sod is None and block.label[0] != tokens[0]:  # `Average: x 0 123 ...`
            reason = f"label {block.label[0]!r} is neither a time nor an Average label"
            raise self.error(line_no, text, reason)
        if len(block):
            self.pending.append(self._part(block, average=sod is None))
            self.chunk_end()

    def _labelled(self, line_no: int, text: str, tokens: list[str]) -> bool:
        """True when a line starts with a time or an `Average:` label; any other line is skipped and
        counted. A line starting with a clock-like token (`06:56:3x`) is left to `label()` to refuse."""
        try:
            self.label(line_no, text, tokens)
        except ParseError:
            if ":" in tokens[0].rstrip(":"):
                raise
            self.skips.add(line_no, text, _FOREIGN)
            return False
        return True

    def _foreign(self, line_no: int, text: str) -> bool:
        """A row that does not read: another program's line (skipped) when it has no time label."""
        return not self._labelled(line_no, text, text.split() or [""])

    def rows(self, block: Block) -> None:
        self.pending.append(self._part(block, average=False))

    def _part(self, block: Block, average: bool) -> _Part:
        plan, threads = block.layout.key
        rows = np.arange(len(block))
        if average:
            sods = np.full(len(block), _AVERAGE)
        else:
            try:
                sods = self.label_seconds(block.label, block.line_nos)
            except ParseError:  # rows labelled by no time at all are another program's lines (-e)
                rows = self._timed(block)
                label = block.label[rows].remove_unused_categories()
                sods = self.label_seconds(label, block.line_nos[rows])
        names = block.fields[-1]
        remap = np.array([self._cmd_code(c) for c in names.categories], dtype=np.int32)
        cols: dict[str, np.ndarray] = {}
        for i, col in plan:
            values = np.asarray(block.fields[i], dtype=np.float64)[rows]
            if col in _INTS:
                values = self._whole(block, rows, i, col, values)
            cols[col] = values
        self.flushed_bytes += len(block.data)
        codes = remap[np.asarray(names.codes)[rows]]
        return _Part(block, rows, block.line_nos[rows], block.headers[rows], sods, codes, cols, threads)

    def _timed(self, block: Block) -> np.ndarray:
        """The rows of a block whose label is a time (or a broken clock, which `label_seconds` then
        names); the others are skipped and counted, as `_labelled` does."""
        foreign = []
        for k, label in enumerate(block.label.categories.tolist()):
            tokens = label.split()
            try:
                self.label(0, label, tokens)
            except ParseError:
                if ":" not in tokens[0].rstrip(":"):
                    foreign.append(k)
        drop = np.isin(np.asarray(block.label.codes), foreign)
        for row in np.flatnonzero(drop).tolist():
            self.skips.add(int(block.line_nos[row]), block.text(row), _FOREIGN)
        return np.flatnonzero(~drop)

    def _whole(self, block: Block, rows: np.ndarray, field: int, col: str, values: np.ndarray) -> np.ndarray:
        """Ids and counts as printed: not negative, below 2**53 (held as float64), `-` only where
        pidstat prints it; an iodelay past 2**53 is missing, noted (see the module docstring)."""
        dash = np.isnan(values) & (col not in _PLACEHOLDER)
        bad = dash | np.signbit(values) | (values >= _EXACT)
        for k in np.flatnonzero(bad).tolist():
            line_no, text = int(block.line_nos[rows[k]]), block.text(int(rows[k]))
            token = _token(text, field)
            if dash[k] or np.signbit(values[k]):
                self.problems.append((line_no, text, f"{col}: not a whole number: {token!r}"))
            elif col == "iodelay":
                big = int(token)
                why = f"{big - 2**64} wrapped past 2**64" if 2**63 <= big < 2**64 else "no real delay"
                self.events.append((line_no, text, f"iodelay {token} ({why}) read as missing"))
            else:  # the column holds it as float64 until assembly: it would come out wrong
                self.problems.append((line_no, text, f"{col}: {token!r} is past 2**53"))
        if bad.any() and col == "iodelay":
            values = np.where(values >= _EXACT, _NAN, values)
        return values

    # ------------------------------------------------------------ the merge

    def chunk_end(self) -> None:
        """Merge the pending blocks in file order: `-` TGIDs from the process above them in their
        table, a task at most once per table and time, one frame row per task and interval (its ids
        and command from its first row, each value from the first row printing it)."""
        parts, self.pending = self.pending, []
        if not parts:
            return
        line_nos = np.concatenate([part.line_nos for part in parts])
        order = np.argsort(line_nos, kind="stable")

        def joined(arrays: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(arrays)[order]

        line_nos = line_nos[order]
        headers = joined([part.headers for part in parts])
        sods = joined([part.sods for part in parts])
        values = {
            col: joined([part.cols.get(col, np.full(len(part.rows), _NAN)) for part in parts])
            for col in _NUMERIC
            if any(col in part.cols for part in parts)
        }
        threads = joined([np.full(len(part.rows), part.threads) for part in parts])
        cmd = joined([part.cmd for part in parts])
        c = _Chunk(line_nos, headers, sods, threads, values, cmd, _Texts(parts, order))
        pid, key_tid = self._tasks(c)
        tasks = _task_codes(pid, key_tid)
        self._check_tables(c, pid, key_tid, tasks)
        if self.problems:
            line_no, text, reason = min(self.problems)
            raise self.error(line_no, text, reason)
        notes_at = len(self.notes)
        average = sods == _AVERAGE
        for k in np.flatnonzero(average).tolist():
            self._average(k, pid, key_tid, values, cmd)
        sample = np.flatnonzero(~average)
        if len(sample):
            everywhere = {col for col in values if all(col in part.cols for part in parts)} | {"pid"}
            self._samples(c, sample, pid, key_tid, tasks, everywhere)
        for line_no, text, note in sorted(self.events):
            self.skips.add(line_no, text, note)
            self.notes.append(f"line {line_no}: {note}")
        self.events.clear()
        self.notes[notes_at:] = sorted(self.notes[notes_at:], key=_note_line)

    def _tasks(self, c: _Chunk) -> tuple[np.ndarray, np.ndarray]:
        """(pid, tid or -1) of each row; with -t the pid is the TGID, where `-` the process's printed
        above it in the same table. Sets `values["pid"]` and `values["tgid"]` to it."""
        line_nos, headers, threads, values = c.line_nos, c.headers, c.threads, c.values
        n = len(line_nos)
        nan = np.full(n, _NAN)
        tgid, tid = values.get("tgid", nan), values.get("tid", nan)
        printed = threads & ~np.isnan(tgid)
        above = np.maximum.accumulate(np.where(printed, np.arange(n), -1))
        same = (above >= 0) & (headers[np.maximum(above, 0)] == headers)
        dash = threads & np.isnan(tgid)
        carried = np.zeros(n, dtype=bool)
        if self.tgid_at is not None:
            carried = dash & ~same & (headers == self.tgid_at[0])
        orphan = dash & ((~same & ~carried) | np.isnan(tid))
        if orphan.any():
            k = int(np.flatnonzero(orphan)[0])
            reason = "thread row (TGID `-`) without its process above it"
            self.problems.append((int(line_nos[k]), c.texts[k], reason))
            return nan, nan
        if threads.any():
            filled = np.where(dash & same, tgid[np.maximum(above, 0)], tgid)
            if carried.any():
                filled = np.where(carried, self.tgid_at[1], filled)
            values["tgid"] = filled
            last = int(np.flatnonzero(threads)[-1])
            self.tgid_at = (int(headers[last]), float(filled[last]))
        pid = np.where(threads, values.get("tgid", nan), values.get("pid", nan))
        values["pid"] = pid
        return pid, np.where(threads & ~np.isnan(tid), tid, -1.0)

    def _check_tables(self, c: _Chunk, pid: np.ndarray, key_tid: np.ndarray, tasks: np.ndarray) -> None:
        """A table lists a task once at one time (rows of another time under one header are other
        tasks' lines: -e, -h); the last table and time carry over to the next chunk."""
        line_nos, headers, sods = c.line_nos, c.headers, c.sods
        if not len(line_nos) or np.isnan(pid).any():
            return
        change = np.concatenate(([True], (headers[1:] != headers[:-1]) | (sods[1:] != sods[:-1])))
        run = np.cumsum(change) - 1
        repeat = pd.Index(run * (int(tasks.max()) + 1) + tasks).duplicated()
        twice = int(repeat.argmax()) if repeat.any() else None
        continues = self.run_at == (int(headers[0]), int(sods[0]))
        if continues and self.run_tasks:
            first_run = np.flatnonzero(run == 0)
            before = [k for k in first_run.tolist() if (float(pid[k]), float(key_tid[k])) in self.run_tasks]
            if before and (twice is None or before[0] < twice):
                twice = before[0]
        if twice is not None:
            tid = key_tid[twice]
            task = f"{int(pid[twice])}{'' if tid < 0 else f'/{int(tid)}'}"
            self.problems.append((int(line_nos[twice]), c.texts[twice], f"task {task} twice in one table"))
            return
        last = np.flatnonzero(run == run[-1])
        tasks_last = set(zip(pid[last].tolist(), key_tid[last].tolist(), strict=True))
        self.run_tasks = tasks_last | self.run_tasks if continues and run[-1] == 0 else tasks_last
        self.run_at = (int(headers[-1]), int(sods[-1]))

    def _average(
        self, k: int, pid: np.ndarray, key_tid: np.ndarray, values: dict[str, np.ndarray], cmd: np.ndarray
    ) -> None:
        key = (float(pid[k]), float(key_tid[k]))
        rec = self.averages.get(key)
        if rec is None:
            command = list(self.cmd_names)[cmd[k]]
            rec = {"host": self.host_name(), **{c: None for c in _NUMERIC}, "command": command}
            self.averages[key] = rec
        for col, column in values.items():
            value = float(column[k])
            if rec[col] is None and value == value:
                rec[col] = record_value(int(value) if col in _INTS else value)

    def _samples(
        self,
        c: _Chunk,
        sample: np.ndarray,
        pid: np.ndarray,
        key_tid: np.ndarray,
        tasks: np.ndarray,
        everywhere: set[str],
    ) -> None:
        """The rows of samples into frame rows: one per task and interval, in order of first appearance;
        an interval going on from the chunk before fills the rows it made."""
        stamps, interval = self.stamp_rows(c.line_nos[sample], c.sods[sample])
        pid, key_tid, tasks = pid[sample], key_tid[sample], tasks[sample]
        run = np.cumsum(np.concatenate(([0], interval[1:] != interval[:-1])))
        groups, _ = pd.factorize(run * (int(tasks.max()) + 1) + tasks)  # in order of first appearance
        first = np.flatnonzero(np.concatenate(([True], groups[1:] > np.maximum.accumulate(groups)[:-1])))
        # each group's frame row: a task of the interval the last chunk ended in keeps its row
        rows_of = np.empty(len(first), dtype=np.int64)
        new = np.ones(len(first), dtype=bool)
        if interval[0] == self.interval:
            for g in np.flatnonzero(run[first] == 0).tolist():
                row = self.rows_at.get((float(pid[first[g]]), float(key_tid[first[g]])))
                if row is not None:
                    rows_of[g], new[g] = row, False
        start = self.n
        end = start + int(new.sum())
        rows_of[new] = np.arange(start, end)
        self._grow(end)
        made = first[new]
        self.stamps[start:end] = stamps[made]
        self.cmd_codes[start:end] = c.cmd[sample][made]
        for col in _NUMERIC:
            self.cols[col][start:end] = _NAN
        frame_rows = rows_of[groups]
        carried = ~new[groups]  # rows of an interval's tasks met in the chunk before
        for col, column in c.values.items():
            column = column if len(sample) == len(column) else column[sample]
            if col in everywhere and col in _TASK:  # the task's first row has its ids
                self.cols[col][start:end] = column[made]
                if carried.any():
                    _fill_first(self.cols[col], frame_rows[carried], column[carried])
            else:
                _fill_first(self.cols[col], frame_rows, column)
        self.n = end
        last = first[run[first] == run[-1]]
        at = {
            (p, t): int(r)
            for p, t, r in zip(
                pid[last].tolist(), key_tid[last].tolist(), rows_of[groups[last]].tolist(), strict=True
            )
        }
        self.rows_at = {**self.rows_at, **at} if interval[0] == self.interval and run[-1] == 0 else at
        self.interval = int(interval[-1])

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

    def _cmd_code(self, name: str) -> int:
        return self.cmd_names.setdefault(name, len(self.cmd_names))

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


_SLICE = 1 << 16  # values converted at once: a temporary of this size, not of the column's


def _int_array(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Whole numbers held as float64 (NaN: missing) as Int64, converted in place slice by slice: no
    second array of the column's size to allocate and touch."""
    missing = np.isnan(values)
    np.copyto(values, 0.0, where=missing)
    ints = values.view(np.int64)
    for start in range(0, len(values), _SLICE):
        ints[start : start + _SLICE] = values[start : start + _SLICE].astype(np.int64)
    return pd.arrays.IntegerArray(ints, missing)


class _Texts:
    """The line of a merged row, for an error naming it: found only when asked."""

    def __init__(self, parts: list[_Part], order: np.ndarray):
        self.parts, self.order = parts, order

    def __getitem__(self, k: int) -> str:
        i = int(self.order[k])
        for part in self.parts:
            if i < len(part.rows):
                return part.block.text(int(part.rows[i]))
            i -= len(part.rows)
        return ""


def _token(text: str, field: int) -> str:
    """Field `field` of a row (after its time label), as printed."""
    tokens = text.split()
    at = label_width(text) + field
    return tokens[at] if at < len(tokens) else ""


def _note_line(note: str) -> int:
    """The line a note is about (`line 122: ...`), 0 for a note about the whole file."""
    head = note.split(None, 2)
    return int(head[1].rstrip(":")) if head[:1] == ["line"] and head[1].rstrip(":").isdigit() else 0


def _task_codes(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One code per distinct (pid, tid), no packing of the ids into one int (any size)."""
    pids, _ = pd.factorize(pid)
    tids, tid_names = pd.factorize(tid)
    return pids.astype(np.int64) * len(tid_names) + tids


def _fill_first(out: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """`out[row]`, where still NaN, from the first non-NaN value of each row (in file order)."""
    ok = ~np.isnan(values)
    rows, values = rows[ok], values[ok]
    if len(rows) > 1 and not (rows[1:] > rows[:-1]).all():  # a row twice (ids: every table lists them)
        _, first = np.unique(rows, return_index=True)
        rows, values = rows[first], values[first]
    empty = np.isnan(out[rows])
    out[rows[empty]] = values[empty]

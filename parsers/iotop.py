"""iotop: `iotop -botqk -d INTERVAL -n COUNT` (what perfkit runs, as root), one row per thread and iteration.

Reads iotop 0.6 (Debian 12) batch output, with or without `-k`, `-t` or `-P`, and older builds such
as seed 000's `iotop -botq --iter=30 | sed "s/\\(..:..:.. Total\\)/\\n\\1/"` (blank lines before each
block). Per iteration iotop prints:

    07:20:10 Total DISK READ:         0.00 K/s | Total DISK WRITE:    103108.88 K/s
    07:20:10 Current DISK READ:       0.00 K/s | Current DISK WRITE:  108837.15 K/s
        TIME  TID  PRIO  USER     DISK READ  DISK WRITE  SWAPIN      IO    COMMAND
    07:20:10  1677 be/4 root        0.00 K/s 11456.54 K/s  0.00 % 43.11 % dd if=/dev/zero ...

- `Total DISK READ :` (older, a space before the colon) and `Actual DISK READ:` (older) or
  `Current DISK READ:` (0.6) are read alike: Actual/Current is what reached the disk, Total what
  tasks asked for (page cache included). They start like a task row under `-t`: found by their text.
- `-q` prints the column header once (only the first iteration), seed 000's excerpt none: rows
  before any header read as under it. `PID` instead of `TID` (`-P`): rows are processes (`notes`).
- A task row is the time (`-t`; optional), TID, PRIO, USER, DISK READ and DISK WRITE each a value and
  its unit (`B/s K/s M/s G/s ...`, iotop's 1024 steps, all converted to KiB/s; `-k` only fixes it at
  `K/s`), SWAPIN and IO each a value and `%`, and COMMAND: the rest of the line, verbatim (a process's
  full command line, a kernel thread in brackets `[jbd2/sda2-8]`, or a thread's name appended in
  brackets `... [raftstore-4-0]`). A wide value pushes the rest of the line right (`336500.29 K/s`):
  whitespace-separated tokens keep every column right. USER is text, also when printed as a uid.
- With `kernel.task_delayacct=0` a single `?unavailable?` replaces SWAPIN % IO % (one token for
  four): both are NaN then, and `delayacct_unavailable` is True. Tasks started before delay
  accounting was switched on still show 0.00 % (iotop issues #38, #21): no way to tell from the text.
- iotop prints a command line's newlines as they are (`python3 -c` with a script, `sh -c`, an awk
  program), so the lines after a task row that are none of iotop's own belong to its COMMAND: they are
  joined to it with `\\n`, and `notes` counts them. A line shaped like a task row is no such line.
- iotop formats with Python's `%.2f` and `strftime('%H:%M:%S')`: no locale changes the numbers.

The table engine (`_table`) reads the task rows by `_LAYOUT`; this module reads the Total/Current
lines, checks units and clocks, joins commands' next lines and assembles the frame.

Time: iotop prints only a time of day (`-t`) and no date banner. `clock_s` is the seconds since
midnight of the first day, +86400 each time the clock goes back by more than an hour (midnight);
a smaller step back is an NTP step, kept as printed and noted. `timestamp` is NaT unless the caller
passes the capture `date`, or `started_at` (the manifest's: the first clock's day is the one nearest
it), read as wall clock in `tz`. Without `-t` both are NaN.

Schema (one row per task line, in file order):

| column | dtype | meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | the row's time on `date` in `tz`; NaT without `date` |
| clock_s | float64 | seconds since midnight of the first day (+86400 per rollover) |
| host | string | the `host` argument |
| iteration | Int64 | 1-based, one per `Total DISK READ` line |
| tid | Int64 | TID (PID with `-P`) |
| prio | string | I/O class/priority as printed: `be/4`, `rt/0`, `idle` |
| user | string | as printed (a uid when the name is unknown) |
| read_kb_s | float64 | DISK READ, KiB/s |
| write_kb_s | float64 | DISK WRITE, KiB/s |
| swapin_pct | float64 | % of time waiting for swap-in; NaN when `?unavailable?` |
| io_pct | float64 | % of time waiting for I/O; NaN when `?unavailable?` |
| delayacct_unavailable | boolean | the row printed `?unavailable?` (task_delayacct off) |
| command | string | COMMAND verbatim |
| thread | string | the `[...]` bracket ending COMMAND (`jbd2/sda2-8`, `raftstore-4-0`); NA if none |

What it reads beside its rows: `EXTRAS` (below).

Tested on: tests/fixtures/iotop/ (README.md there).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._chunks import Interned
from ._common import (
    Extras,
    Lines,
    Parts,
    Source,
    capture_day,
    clock_stamps,
    coerce,
    empty_frame,
    parse_clock,
    source_size,
    text_column,
)
from ._table import ROW, Block, Layout, Table


@dataclass(frozen=True)
class IotopExtras(Extras):
    """What iotop reads beside its rows (see `_common.Extras`); `unknown_columns` is always empty (the
    header is fixed)."""

    # one record per iteration (its Total and Actual/Current lines): `iteration`, `clock` as printed,
    # `clock_s`, `{total,actual}_{read,write}_kb_s`; None for a value not printed
    totals: list[dict] = field(default_factory=list)
    # the capture begins with iotop's first iteration, whose rates span the moment since iotop started,
    # not an interval: its column header is under the first Total lines (`-q` prints it there only)
    from_start: bool = False


EXTRAS = IotopExtras

KIND = "iotop"
DATED_BY_START = True  # iotop -t prints a time of day only: `parse(started_at=...)` dates the rows

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "clock_s": "float64",
    "host": "string",
    "iteration": "Int64",
    "tid": "Int64",
    "prio": "string",
    "user": "string",
    "read_kb_s": "float64",
    "write_kb_s": "float64",
    "swapin_pct": "float64",
    "io_pct": "float64",
    "delayacct_unavailable": "boolean",
    "command": "string",
    "thread": "string",
}

# iotop's human_size steps by 1024: the unit -> KiB factor.
_KIB = {f"{u}/s": 1024.0 ** (i - 1) for i, u in enumerate("BKMGTP")}
_BLANKS = r"[^\S\n]+"  # `\s+` within a line: the pattern reads many lines at once
_RATE = rf"{_BLANKS}(\d+\.\d+) ([BKMGTP]/s)"
# A Total line (`Total ... Total`) or an Actual/Current line (either word in either place): groups
# 1 the clock (`-t`), 2 `Total` (else ""), 3-4 and 5-6 read and write with their units.
_HEADING = re.compile(
    rf"^(?:(\d{{2}}:\d{{2}}:\d{{2}}){_BLANKS})?(?:(Total)|Actual|Current) DISK READ ?:{_RATE}"
    rf" \| (?(2)Total|(?:Actual|Current)) DISK WRITE ?:{_RATE}$",
    re.MULTILINE,
)
_HEADER = re.compile(
    r"^\s*(?:TIME\s+)?(TID|PID)\s+PRIO\s+USER\s+DISK READ\s+DISK WRITE\s+SWAPIN\s+IO>?\s+COMMAND\s*$"
)
_HMS = re.compile(r"\d{2}:\d{2}:\d{2}")  # `\d`: the digits of any script, as `int()` reads them
_THREAD = re.compile(r"\[([^\[\]]+)\]\s*$")
# the start of a task row (time, TID, I/O class): a line so made that does not read is a broken row,
# never a command's next line
_ROWLIKE = re.compile(r"^\s*(?:\d{1,2}:\d\d:\d\d\s+)?\d+\s+(?:be|rt|idle)\b")
_ROLLOVER_S = 3600  # back by more than this: the next day; less: a clock step
_NOT_IOTOP = "not an iotop batch line (Total/Actual/Current, header or task row)"
_NONE = np.empty(0, dtype=np.int64)  # no task rows

# A task row: the time (`-t`; tried first), then TID PRIO USER, READ unit, WRITE unit, SWAPIN %, IO %,
# COMMAND (the rest of the line); `?unavailable?` stands for `SWAPIN % IO %`.
_LAYOUT = Layout("ittftftftftt", labels=(1, 0), rest=True, gap=("?unavailable?", 7, 4))
_TID, _PRIO, _USER, _READ, _READ_UNIT, _WRITE, _WRITE_UNIT, _SWAPIN, _PCT1, _IO, _PCT2, _COMMAND = range(12)


def sniff(text: str) -> bool:
    """iotop batch output starts with a `Total DISK READ` line or its column header."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            return bool((m := _HEADING.match(line)) and m[2] or _HEADER.match(line))
    return False


class _Iotop:
    """The format for the table engine: rows start with a digit (the time, or the TID) or blanks;
    Total/Current lines are found among them by their text (`aside`), or are structure lines without
    `-t`; the header by `TID PRIO USER`."""

    row_bytes = b"0123456789 \t\n"
    header_words = ()
    header_marks = (re.compile(rb"TID[ \t]+PRIO[ \t]"), re.compile(rb"PID[ \t]+PRIO[ \t]"))
    aside_words = (b"DISK READ",)  # Total/Current lines (`aside` tells them from commands)
    first_layout = _LAYOUT
    chunk_bytes = 1 << 21  # rows read at once: the peak memory of 8 MB chunks is 30 MB more, no faster

    def __init__(self, source: Source):
        self.table = Table(source, KIND, self)
        self.table.foreign = self._foreign
        # Total and Actual/Current lines: lines, which are Total, seconds of the day (NaN without `-t`),
        # read and write in KiB/s (a row each); the clocks as printed ("" without `-t`)
        self.heads = Parts(4)
        self.head_clocks: list[str] = []
        self.total_lines: list[int] = []
        self.others: list[int] = []  # lines that are iotop's own but no task row, in order
        self.header_lines: list[int] = []
        self.last_row = 0  # the last task row handed over so far
        self.last_joined = 0  # the last line joined to a command
        self.joined: dict[int, list[str]] = {}  # a task row's line -> its command's next lines
        self.row_of: dict[int, int] = {}  # a joined line -> its task row's line
        self.pending: list[tuple[int, str]] = []  # lines among the rows taken for a command's, unchecked
        self.notes: list[tuple[int, str]] = []  # (line, note): in line order at the end
        self.pid = False  # a `PID` header was seen
        # line, clock (s of day), tid, prio, user, read, write, swapin, io, command: written in place, with
        # room for a row every 32 bytes of the capture (a task row takes 40 at least), not joined at the end
        self.parts = Parts(10, capacity=source_size(source, self.table.lines) // 32)
        self.interned = {name: Interned() for name in ("prio", "user", "command")}

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout:
        if not (m := _HEADER.match(text)):
            return ROW  # a command line holding `TID PRIO USER`
        self._continued(_NONE)
        bisect.insort(self.others, line_no)
        self.header_lines.append(line_no)
        if m[1] == "PID" and not self.pid:
            self.pid = True
            self.notes.append((line_no, "header says PID: rows are processes (iotop -P), `tid` holds PIDs"))
        return _LAYOUT

    def aside(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """Which lines holding `DISK READ` among the rows are Total/Current lines (not commands): read
        at once by one pattern when all are (the usual), else line by line."""
        self._continued(_NONE)
        found = _HEADING.findall("\n".join(texts))
        if len(found) == len(texts):
            self._headings(line_nos, texts, found)
            return np.ones(len(texts), dtype=bool)
        heads = np.array([_HEADING.match(text) is not None for text in texts], dtype=bool)
        if heads.any():
            texts = [text for text, head in zip(texts, heads.tolist(), strict=True) if head]
            self._headings(line_nos[heads], texts, _HEADING.findall("\n".join(texts)))
        return heads

    def structure(self, line_no: int, text: str) -> None:
        self._continued(_NONE)
        if not text.strip():
            return
        if _HEADING.match(text):
            self._headings(np.array([line_no]), [text], _HEADING.findall(text))
            return
        if not self._after_row(line_no):
            raise self.table.error(line_no, text, _NOT_IOTOP)
        self._join(line_no, text)

    def _headings(self, line_nos: np.ndarray, texts: list[str], found: list[tuple[str, ...]]) -> None:
        """Total and Actual/Current lines (`found`: `_HEADING`'s groups of each), noted in file order."""
        total = np.array([m[1] for m in found], dtype=bool)
        if not self.total_lines and not total[0]:
            word = texts[0].split(" DISK")[0].split()[-1]
            reason = f"`{word} DISK READ` line before any `Total DISK READ` line"
            raise self.table.error(int(line_nos[0]), texts[0], reason)
        clocks = [m[0] for m in found]
        sods = _sods(clocks)
        if (sods < 0).any():
            k = int(np.argmax(sods < 0))
            raise self.table.error(int(line_nos[k]), texts[k], f"not a time of day: {clocks[k]}")
        rates = [(float(m[2]) * _KIB[m[3]], float(m[4]) * _KIB[m[5]]) for m in found]
        self.heads.add([line_nos, total, sods, np.array(rates, dtype=np.float64)])
        self.head_clocks.extend(clocks)
        self.total_lines.extend(line_nos[total].tolist())
        self.others.extend(line_nos.tolist())

    def _foreign(self, line_no: int, text: str) -> bool:
        """A line among the rows that does not read as one: a command's next line (checked by `rows`
        once the rows around it are known), unless shaped like a task row or like iotop's own lines."""
        if _ROWLIKE.match(text) or _HEADING.match(text) or _HEADER.match(text):
            return False
        self.pending.append((line_no, text))
        return True

    def _after_row(self, line_no: int) -> bool:
        """Whether the last line before `line_no` that is not blank is a task row or a command's."""
        before = bisect.bisect_left(self.others, line_no)
        return max(self.last_row, self.last_joined) > (self.others[before - 1] if before else 0)

    def _join(self, line_no: int, text: str) -> None:
        row = self.last_row if self.last_row > self.last_joined else self.row_of[self.last_joined]
        self.joined.setdefault(row, []).append(text)
        self.row_of[line_no] = row
        self.last_joined = line_no

    def rows(self, block: Block) -> None:
        nos = block.line_nos
        if not len(nos):  # every line a command's next line
            self._continued(nos)
            return
        if not self.total_lines or self.total_lines[0] > nos[0]:
            raise self.table.error(int(nos[0]), block.text(0), "task row before any `Total DISK READ` line")

        def refuse(bad: np.ndarray, reason: str, values: np.ndarray | pd.Categorical) -> None:
            """A ParseError naming the first row where `bad` holds, `reason` formatted with its value."""
            if bad.any():
                k = int(np.argmax(bad))
                raise self.table.error(int(nos[k]), block.text(k), reason.format(values[k]))

        f = block.fields
        refuse(f[_TID] < 0, "not a TID: {}", f[_TID])
        for col in (_READ, _WRITE, _SWAPIN, _IO):
            refuse(np.signbit(f[col]), "not a rate or share: {}", f[col])
        for pct in (_PCT1, _PCT2):  # `%`, or NA where `?unavailable?` stood for it
            cat = f[pct]
            other = np.array([c != "%" for c in cat.categories.tolist()] + [False], dtype=bool)
            refuse(other[cat.codes], "not `%`: {!r}", cat)
        factors = []
        for unit in (_READ_UNIT, _WRITE_UNIT):
            cat = f[unit]
            factor = np.array([_KIB.get(c, np.nan) for c in cat.categories.tolist()])[cat.codes]
            refuse(np.isnan(factor), "not a rate unit: {!r}", cat)
            factors.append(factor)
        clocks = np.full(len(nos), np.nan)
        if (label := block.label) is not None:  # `-t`: the clock of each row ("" or none without)
            clocks = _sods(label.categories.tolist())[label.codes]
            refuse(clocks < 0, "not a time of day: {}", label)
        self._continued(nos)
        columns = [nos, clocks, f[_TID]]
        columns += [self._codes(name, f[i]) for name, i in (("prio", _PRIO), ("user", _USER))]
        columns += [f[_READ] * factors[0], f[_WRITE] * factors[1], f[_SWAPIN], f[_IO]]
        self.parts.add([*columns, self._codes("command", f[_COMMAND])])
        self.last_row = max(self.last_row, int(nos[-1]))

    def _codes(self, name: str, cat: pd.Categorical) -> np.ndarray:
        interned = self.interned[name]
        return np.array([interned.code(t) for t in cat.categories.tolist()], dtype=np.int64)[cat.codes]

    def _continued(self, nos: np.ndarray) -> None:
        """The lines among these rows (`_NONE`: before the line now read) taken for a command's next
        lines: each must follow a task row or another such line (blank lines aside), not a Total/Current
        line or the header."""
        pending, self.pending = self.pending, []
        for line_no, text in pending:
            at = int(np.searchsorted(nos, line_no))
            if at:
                self.last_row = max(self.last_row, int(nos[at - 1]))
            if not self._after_row(line_no):
                raise self.table.error(line_no, text, _NOT_IOTOP)
            self._join(line_no, text)

    # ------------------------------------------------------------ the frame

    def frame(
        self, host: str | None, tz: str, day0: date | None, started_at: pd.Timestamp | None
    ) -> pd.DataFrame:
        self._continued(_NONE)
        if self.parts.rows:
            line, sod, tid, prio, user, read, write, swapin, io, command = self.parts.columns()
        else:
            line, sod = np.empty(0, dtype=np.int64), np.empty(0)
        clock_s = self._days(line, sod)
        notes = [note for _, note in sorted(self.notes)]
        if self.row_of:
            notes.append(
                f"{len(self.row_of)} line(s) joined to the COMMAND above them (command lines with newlines)"
            )
        attrs = {
            "totals": self._records(),
            "from_start": self._from_start(),
            "dropped_lines": int(self.table.cut is not None),
            "unknown_columns": [],
            "notes": notes,
        }
        n = len(line)
        if n == 0:
            df = empty_frame(SCHEMA)
            df.attrs.update(attrs)
            return df
        names = self.interned["command"]
        if self.joined:  # a command line with newlines: its row's COMMAND is all of its lines
            texts = list(names.index)
            rows = np.searchsorted(line, list(self.joined))
            for row, more in zip(rows.tolist(), self.joined.values(), strict=True):
                command[row] = names.code("\n".join([texts[command[row]], *more]))
        if day0 is None and started_at is not None and not np.isnan(clock_s).all():
            day0 = capture_day(clock_s[~np.isnan(clock_s)][0], started_at, tz)
        if day0 is not None:
            stamps = clock_stamps(clock_s, day0, tz)
        else:  # no capture date: NaT
            stamps = pd.array(np.full(n, np.datetime64("NaT", "ns")), dtype="datetime64[ns, UTC]")
        data: dict[str, object] = {
            "timestamp": stamps,
            "clock_s": clock_s,
            "host": text_column([host], np.zeros(n, dtype=np.intp)),
            "iteration": pd.array(np.searchsorted(np.array(self.total_lines), line), dtype="Int64"),
            "tid": pd.array(tid, dtype="Int64"),
            "prio": self.interned["prio"].array(prio),
            "user": self.interned["user"].array(user),
            "read_kb_s": read,
            "write_kb_s": write,
            "swapin_pct": swapin,
            "io_pct": io,
            "delayacct_unavailable": pd.array(np.isnan(swapin), dtype="boolean"),
            "command": names.array(command),
        }
        # the `[...]` ending each distinct command, taken per row as the commands are
        threads = [m[1] if (m := _THREAD.search(text)) else None for text in names.index]
        data["thread"] = text_column(threads, command)
        df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
        df.attrs.update(attrs)
        return df

    def _days(self, line: np.ndarray, sod: np.ndarray) -> np.ndarray:
        """`clock_s` of the rows, and of the Total/Current lines into `self.head_s`: every timed line in
        file order, +86400 each time the clock goes back by more than an hour, a smaller step noted."""
        no_heads = [np.empty(0, dtype=np.int64), np.empty(0, dtype=bool), np.empty(0), np.empty((0, 2))]
        heads = self.heads.columns() if self.heads.rows else no_heads
        self.head_lines, self.head_total, head_sod, self.head_values = heads
        lines = np.concatenate([line, self.head_lines])
        sods = np.concatenate([sod, head_sod])
        order = np.argsort(lines, kind="stable")
        timed = order[~np.isnan(sods[order])]
        values = sods[timed]
        back = np.concatenate([[0], values[:-1] - values[1:]])
        for i in np.flatnonzero((back > 0) & (back <= _ROLLOVER_S)).tolist():
            line_no = int(lines[timed[i]])
            note = f"line {line_no}: clock went back {int(back[i])} s (clock step), kept as printed"
            self.notes.append((line_no, note))
        sods[timed] = values + 86400 * np.cumsum(back > _ROLLOVER_S)
        self.head_s = sods[len(line) :]
        return sods[: len(line)]

    def _from_start(self) -> bool:
        """`IotopExtras.from_start`: a column header after the first Total line, before the second."""
        if not self.total_lines:
            return False
        end = self.total_lines[1] if len(self.total_lines) > 1 else float("inf")
        return any(self.total_lines[0] < h < end for h in self.header_lines)

    def _records(self) -> list[dict]:
        """`IotopExtras.totals`: one record per Total line, with the Actual/Current line after it."""
        lines, total, values = self.head_lines, self.head_total, self.head_values
        # each Actual/Current line's iteration: the last Total line before it (the last such line wins)
        actual = np.flatnonzero(~total)
        of = np.searchsorted(lines[total], lines[actual]) - 1
        kept, last = np.unique(of[::-1], return_index=True)
        got = np.full((int(total.sum()), 2), np.nan)
        got[kept] = values[actual[::-1][last]]
        at = np.flatnonzero(total)
        # flat lists of floats (NaN: not printed): no list per record for the garbage collector to walk
        columns = [self.head_s[at], values[at, 0], values[at, 1], got[:, 0], got[:, 1]]
        clocks = [self.head_clocks[k] or None for k in at.tolist()]
        rows = zip(clocks, *([None if v != v else v for v in c.tolist()] for c in columns), strict=True)
        return [
            {
                "iteration": i + 1,
                "clock": clock,
                "clock_s": clock_s,
                "total_read_kb_s": read,
                "total_write_kb_s": write,
                "actual_read_kb_s": actual_read,
                "actual_write_kb_s": actual_write,
            }
            for i, (clock, clock_s, read, write, actual_read, actual_write) in enumerate(rows)
        ]


def _sods(clocks: list[str]) -> np.ndarray:
    """`_sod` of each clock, with numpy where all are `HH:MM:SS` in ASCII; NaN for "" (no `-t`), -1 for
    no time of day."""
    raw = "".join(clocks).encode()
    if len(raw) != 8 * len(clocks):
        return np.array([np.nan if not c else -1 if (sod := _sod(c)) is None else sod for c in clocks])
    d = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 8).astype(np.int64) - ord("0")
    h, m, s = d[:, 0] * 10 + d[:, 1], d[:, 3] * 10 + d[:, 4], d[:, 6] * 10 + d[:, 7]
    digits = ((d[:, [0, 1, 3, 4, 6, 7]] >= 0) & (d[:, [0, 1, 3, 4, 6, 7]] <= 9)).all(axis=1)
    ok = digits & (d[:, 2] == d[:, 5]) & (d[:, 2] == ord(":") - ord("0")) & (h <= 23) & (m <= 59) & (s <= 60)
    return np.where(ok, h * 3600 + m * 60 + np.minimum(s, 59), -1).astype(np.float64)


def _sod(clock: str) -> int | None:
    """Seconds of the day of `HH:MM:SS` (a leap second read as :59); None for no time of day."""
    hms = parse_clock(clock) if _HMS.fullmatch(clock) else None
    return None if hms is None else hms[0] * 3600 + hms[1] * 60 + hms[2]


def parse(
    source: Source,
    *,
    host: str | None = None,
    tz: str = "UTC",
    date: date | str | None = None,
    started_at: pd.Timestamp | None = None,
) -> pd.DataFrame:
    """Parse an iotop batch capture into one row per task line.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: the capturing host's time zone (for `timestamp`, with `date`).
        date: the capture's date, `datetime.date` or `YYYY-MM-DD`; iotop prints none.
        started_at: when the capture started (the manifest's), instead of `date`: the day of the
            first clock is the one nearest it (`_common.capture_day`).

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: a line that is none of iotop's (named by number), a row before any `Total` line.
    """
    lines = Lines(source, KIND)
    try:
        ZoneInfo(tz)
    except (ValueError, KeyError, OSError) as exc:
        raise ParseError(KIND, lines.path, 0, "", f"unknown time zone {tz!r} ({exc})") from None
    day0 = _day(date, lines)
    fmt = _Iotop(source)
    fmt.table.run()
    return fmt.frame(host, tz, day0, started_at)


def _day(value: date | str | None, lines: Lines) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise ParseError(KIND, lines.path, 0, "", f"capture date {value!r} is not YYYY-MM-DD") from None

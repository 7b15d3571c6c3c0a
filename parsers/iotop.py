"""iotop: `iotop -botqk -d INTERVAL -n COUNT` (what perfkit runs, as root), one row per thread and iteration.

Reads iotop 0.6 (Debian 12) batch output, with or without `-k`, and older builds such as seed 000's
`iotop -botq --iter=30 | sed "s/\\(..:..:.. Total\\)/\\n\\1/"` (blank lines before each block). Per
iteration iotop prints:

    07:20:10 Total DISK READ:         0.00 K/s | Total DISK WRITE:    103108.88 K/s
    07:20:10 Current DISK READ:       0.00 K/s | Current DISK WRITE:  108837.15 K/s
        TIME  TID  PRIO  USER     DISK READ  DISK WRITE  SWAPIN      IO    COMMAND
    07:20:10  1677 be/4 root        0.00 K/s 11456.54 K/s  0.00 % 43.11 % dd if=/dev/zero ...

- `Total DISK READ :` (older, a space before the colon) and `Actual DISK READ:` (older) or
  `Current DISK READ:` (0.6) are read alike: Actual/Current is what reached the disk, Total what
  tasks asked for (page cache included).
- `-q` prints the column header once (only the first iteration); repeats are skipped. The header
  names hold spaces (`DISK READ`): it is matched as a whole, and rows by a regex, not by a split.
- Every rate carries its unit, with `-k` too (`-k` only fixes it at `K/s`): `B/s K/s M/s G/s ...`
  (iotop's 1024 steps), all converted to KiB/s. A wide value pushes the rest of the line right
  (`336500.29 K/s`): whitespace-separated tokens keep every column right.
- With `kernel.task_delayacct=0` a single `?unavailable?` replaces both SWAPIN and IO (one token
  fewer): both are NaN then, and `delayacct_unavailable` is True. Tasks started before delay
  accounting was switched on still show 0.00 % (iotop issues #38, #21): no way to tell from the text.
- COMMAND is the rest of the line, verbatim: a process's full command line, a kernel thread in
  brackets (`[jbd2/sda2-8]`), or a thread's name appended in brackets (`... [raftstore-4-0]`).
  iotop prints a command line's newlines as they are (`python3 -c` with a script, `sh -c`, an awk
  program), so the lines after a task row that are none of iotop's own belong to its COMMAND: they are
  joined to it with `\n`, and `notes` counts them.
- Rows are threads (TID) unless `-P` (header `PID`): then they are processes, said in `notes`.
- iotop formats with Python's `%.2f` and `strftime('%H:%M:%S')`: no locale changes the numbers.

Time: iotop prints only a time of day (`-t`) and no date banner. `clock_s` is the seconds since
midnight of the first day, +86400 each time the clock goes back by more than an hour (midnight);
a smaller step back is an NTP step, kept as printed and noted. `timestamp` is NaT unless the caller
passes the capture `date` (the manifest's), read as wall clock in `tz`. Without `-t` both are NaN.

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

`df.attrs`: `totals` (one record per iteration: `iteration`, `clock` as printed, `clock_s`,
`total_read_kb_s`, `total_write_kb_s`, `actual_read_kb_s`, `actual_write_kb_s`; None for a value
not printed), `dropped_lines` (a last line cut off mid-write), `unknown_columns` (always empty: the
header is fixed), `notes`.

Fast path (a path or a string, read as bytes): one regex (`_FAST_BLOCK`) matches a whole iteration,
its Total and Current lines, the header and task rows that all print the Total line's time; the rows
of many iterations then go to pandas' C reader at once, split on spaces up to SWAPIN's `%` for TID,
PRIO, USER and the rates, and to Arrow's CSV reader split on `%` for IO and COMMAND (`?unavailable?`
is read as `-1.00 % -1.00 %`). The regex is stricter than the line walk (spaces only, ASCII digits,
`%.2f` values of at most 15 digits, printable ASCII PRIO and USER, COMMAND starting with one); a `%`
in COMMAND sends those iterations through the line walk (a USER printed as a uid is read again as
text), as do streams, CR line ends and captures without `-t`. The line walk also names the first bad
line.

Tested on: tests/fixtures/iotop/ (README.md there).
"""

from __future__ import annotations

import csv
import io
import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from perfkit.errors import ParseError

from ._chunks import Interned, byte_pieces, walk_text
from ._common import Lines, Source, capture_day, clock_stamps, coerce, empty_frame, text_column

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

# iotop's human_size steps by 1024: the unit letter -> KiB factor.
_KIB = {"B": 1 / 1024, "K": 1.0, "M": 1024.0, "G": 1024.0**2, "T": 1024.0**3, "P": 1024.0**4}
_CLOCK = r"(?:(\d{2}):(\d{2}):(\d{2})\s+)?"
_RATE = r"(\d+\.\d+) ([BKMGTP])/s"
_TOTAL = re.compile(rf"^{_CLOCK}Total DISK READ ?:\s+{_RATE} \| Total DISK WRITE ?:\s+{_RATE}$")
_ACTUAL = re.compile(
    rf"^{_CLOCK}(Actual|Current) DISK READ ?:\s+{_RATE} \| (?:Actual|Current) DISK WRITE ?:\s+{_RATE}$"
)
_HEADER = re.compile(
    r"^\s*(?:TIME\s+)?(TID|PID)\s+PRIO\s+USER\s+DISK READ\s+DISK WRITE\s+SWAPIN\s+IO>?\s+COMMAND\s*$"
)
_ROW = re.compile(
    rf"^{_CLOCK}\s*(\d{{1,10}})\s+(\S+)\s+(\S+)\s+{_RATE}\s+{_RATE}\s+"
    r"(?:(\d+\.\d+) %\s+(\d+\.\d+) %|(\?unavailable\?))\s+(\S.*)$"
)
_THREAD = re.compile(r"\[([^\[\]]+)\]\s*$")
_ROLLOVER_S = 3600  # back by more than this: the next day; less: a clock step

# The fast path's iteration, in bytes: `_TOTAL`, `_ACTUAL`, `_HEADER` and `_ROW` lines with spaces only,
# ASCII digits and the clock printed on every line (group 1, matched again by `\1`). Values are `%.2f`
# with at most 15 digits: an integer below 2**53 divided by 100, which pandas' converter (any version)
# rounds as float() does. PRIO and USER are printable ASCII without `%`; COMMAND is the rest of the
# line from a printable ASCII character (`\S` for the line walk too), and `_read_rows` checks that it
# holds no `%`. Possessive: no backtracking.
# Groups: 1 clock; 2-5 Total and 6-9 Actual/Current rates and units; 10 TID/PID; 11 the task rows;
# 12, 13 a READ, WRITE unit other than K in any row (a group keeps its last match: None if every row
# printed K/s).
_F_VALUE = r"[0-9]{1,13}+\.[0-9][0-9]"
_F_RATE = rf" ++({_F_VALUE}) ([BKMGTP])/s"
_F_TOKEN = r"[!-$&-~]"  # printable ASCII but `%`
_F_ROW_RATE = rf" ++{_F_VALUE} (?:K|([BMGTP]))/s"
_FAST_BLOCK = re.compile(
    (
        r"(?: *+\n)*+"
        r"((?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60))"
        rf" ++Total DISK READ ?:{_F_RATE} \| Total DISK WRITE ?:{_F_RATE}\n"
        rf"\1 ++(?:Actual|Current) DISK READ ?:{_F_RATE} \| (?:Actual|Current) DISK WRITE ?:{_F_RATE}\n"
        r"(?: *+TIME ++(TID|PID) ++PRIO ++USER ++DISK READ ++DISK WRITE ++SWAPIN ++IO>? ++COMMAND *+\n)?"
        rf"((?:\1 ++[0-9]{{1,10}} ++{_F_TOKEN}++ ++{_F_TOKEN}++{_F_ROW_RATE}{_F_ROW_RATE}"
        rf" ++(?:{_F_VALUE} % ++{_F_VALUE} %|\?unavailable\?) ++{_F_TOKEN}[^\n]*+\n)*+)"
        r"(?: *+\n)*+"
    ).encode()
)
_KIB_BYTES = {letter.encode(): factor for letter, factor in _KIB.items()}
_DICT = pa.dictionary(pa.int32(), pa.string())
# `?unavailable?` takes the place of `SWAPIN % IO %`: pandas reads this instead (a negative value no
# row prints), so every row has the same fields.
_UNAVAILABLE = b"?unavailable?"
_UNAVAILABLE_AS = b"-1.00 % -1.00 %"
FAST_ROWS = 1 << 17  # rows read by pandas at once: bounds the buffered text, amortises the call
# Fewer queued rows than this go through the line walk: pandas' fixed cost per call exceeds it (a
# capture whose every iteration has a row the regex refuses alternates between the two paths).
FAST_MIN_ROWS = 512


def sniff(text: str) -> bool:
    """iotop batch output starts with a `Total DISK READ` line or its column header."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            return bool(_TOTAL.match(line) or _HEADER.match(line))
    return False


CHUNK_ROWS = 16384  # task rows converted at once: bounds the buffered text, amortises numpy calls
# Matched rows are regrouped into columns every STAGE_ROWS rows: few enough that the group tuples
# are still in the CPU cache (holding 16 k rows of them costs more than the match itself).
STAGE_ROWS = 256
_STRING_GROUPS = {4: "prio", 5: "user", 13: "command"}  # _ROW group index -> column
_COMMAND_GROUP = 13
# the start of a task row (time, TID, I/O class): a line so made that is no row is a broken row, never
# a command's next line
_ROWLIKE = re.compile(r"^\s*(?:\d{1,2}:\d\d:\d\d\s+)?\d+\s+(?:be|rt|idle)\b")
_NUMBER_GROUPS = {3: "tid", 6: "read", 8: "write", 10: "swapin", 11: "io"}
_UNIT_GROUPS = {7: "read_unit", 9: "write_unit"}
_UNIT_KIB = np.ones(256)  # unit letter byte -> KiB factor
for _letter, _factor in _KIB.items():
    _UNIT_KIB[ord(_letter)] = _factor


class _State:
    """What the walk over the capture collects: row chunks (in file order), totals, clock, notes.

    The line walk matches each row with `_ROW` (which checks every value) and keeps its groups; every
    STAGE_ROWS rows `stage` joins each number column's texts with newlines, and every CHUNK_ROWS
    rows `flush` converts each column with one numpy call instead of one float() per value. The fast
    path queues whole iterations (`queue`) and `commit` reads their rows with pandas.
    """

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.groups: list[tuple] = []  # matched rows not yet staged
        self.clocks: list[float] = []
        self.texts: dict[str, list[str]] = {}  # staged: column -> joined numbers / units
        self.unavailable: list[bool] = []
        self.iterations: list[int] = []
        self.strings: dict[str, list[str]] = {name: [] for name in _STRING_GROUPS.values()}
        # every row converted so far, in file order; string columns as codes into `interned`
        self.chunks: list[dict[str, np.ndarray]] = []
        self.interned = {name: Interned() for name in _STRING_GROUPS.values()}
        self.n = 0
        self.totals: list[dict] = []
        self.notes: list[str] = []
        self.dropped = 0
        self.day = 0
        self.prev_sod: int | None = None
        self._last_clock: tuple[tuple[str, str, str], float] | None = None
        # the fast path's iterations not yet read: (first line number, `_FAST_BLOCK` match, task rows)
        self.fast: list[tuple[int, re.Match[bytes], int]] = []
        self.fast_text: list[memoryview] = []  # their task rows
        self.fast_rows = 0
        self.after_row = False  # the last line walked was a task row (or a continuation of one)
        self.continued = 0  # lines joined to the COMMAND above them

    def clock(self, line_no: int, line: str, hms: tuple[str, str, str] | tuple[None, None, None]) -> float:
        """Seconds since the first day's midnight of a line's leading time; NaN without `-t`."""
        if hms[0] is None:
            return float("nan")
        if self._last_clock is not None and self._last_clock[0] == hms:
            return self._last_clock[1]  # the same time as the line before: nothing moves
        h, mi, s = int(hms[0]), int(hms[1]), int(hms[2])
        if h > 23 or mi > 59 or s > 60:
            raise self.lines.error(line_no, line, f"not a time of day: {hms[0]}:{hms[1]}:{hms[2]}")
        sod = h * 3600 + mi * 60 + min(s, 59)
        prev = self.prev_sod
        if prev is not None and sod < prev:
            if prev - sod > _ROLLOVER_S:
                self.day += 1
            else:
                self.notes.append(
                    f"line {line_no}: clock went back {prev - sod} s (clock step), kept as printed"
                )
        self.prev_sod = sod
        value = float(sod + 86400 * self.day)
        self._last_clock = (hms, value)
        return value

    def total(self, line_no: int, line: str, groups: tuple) -> None:
        """A `Total DISK READ` line: clock groups, then read, read unit, write, write unit."""
        h, mi, s, read, read_unit, write, write_unit = groups
        clock_s = self.clock(line_no, line, (h, mi, s))
        self.totals.append(
            {
                "iteration": len(self.totals) + 1,
                "clock": f"{h}:{mi}:{s}" if h else None,
                "clock_s": None if np.isnan(clock_s) else clock_s,
                "total_read_kb_s": float(read) * _KIB[read_unit],
                "total_write_kb_s": float(write) * _KIB[write_unit],
                "actual_read_kb_s": None,
                "actual_write_kb_s": None,
            }
        )

    def actual(self, line_no: int, line: str, groups: tuple) -> None:
        """An `Actual`/`Current DISK READ` line (after a Total line), groups as in `total`."""
        h, mi, s, read, read_unit, write, write_unit = groups
        self.clock(line_no, line, (h, mi, s))
        self.totals[-1]["actual_read_kb_s"] = float(read) * _KIB[read_unit]
        self.totals[-1]["actual_write_kb_s"] = float(write) * _KIB[write_unit]

    def header(self, task: str) -> None:
        if task == "PID" and not any("-P" in n for n in self.notes):
            self.notes.append("header says PID: rows are processes (iotop -P), `tid` holds PIDs")

    def line(self, line_no: int, line: str, lines: Lines | None = None) -> None:
        """The line walk: a task row, or Total, Actual/Current, the header, blank; else an error.
        (`lines`: `walk_text` passes it; `self.lines` is the same.)"""
        row, self.after_row = self.after_row, False
        if m := _ROW.match(line):
            if not self.totals:
                raise self.lines.error(line_no, line, "task row before any `Total DISK READ` line")
            self.groups.append(m.groups())
            self.clocks.append(self.clock(line_no, line, (m[1], m[2], m[3])))
            self.iterations.append(len(self.totals))
            self.after_row = True
            if len(self.groups) >= STAGE_ROWS:
                self.stage()
            return
        if not line.strip():
            # seed 000's sed put a blank line before every block; a command's script may hold one too
            self.after_row = row
            return
        if row and not (
            _TOTAL.match(line) or _ACTUAL.match(line) or _HEADER.match(line) or _ROWLIKE.match(line)
        ):
            self.continue_command(line)
            return
        if m := _TOTAL.match(line):
            self.total(line_no, line, m.groups())
            return
        if m := _ACTUAL.match(line):
            if not self.totals:
                raise self.lines.error(
                    line_no, line, f"`{m[4]} DISK READ` line before any `Total DISK READ` line"
                )
            self.actual(line_no, line, m.group(1, 2, 3, 5, 6, 7, 8))
            return
        if m := _HEADER.match(line):
            self.header(m[1])
            return
        raise self.lines.error(
            line_no, line, "not an iotop batch line (Total/Actual/Current, header or task row)"
        )

    def continue_command(self, line: str) -> None:
        """A line of the COMMAND above: a command line with a newline in it."""
        if self.groups:
            last = list(self.groups[-1])
            last[_COMMAND_GROUP] = f"{last[_COMMAND_GROUP]}\n{line}"
            self.groups[-1] = tuple(last)
        else:  # the row was staged already
            self.strings["command"][-1] = f"{self.strings['command'][-1]}\n{line}"
        self.continued += 1
        self.after_row = True

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        """A last line without newline was cut mid-write: its numbers or command may be cut too."""
        self.dropped += 1

    def stage(self) -> None:
        """Regroup the matched rows into columns: numbers as newline-joined text, units as letters."""
        columns = list(zip(*self.groups, strict=True))
        texts = self.texts
        for index, name in _NUMBER_GROUPS.items():
            values = columns[index]
            if name in ("swapin", "io") and None in values:  # `?unavailable?` rows print neither
                values = ["nan" if v is None else v for v in values]
            texts.setdefault(name, []).append("\n".join(values))
        for index, name in _UNIT_GROUPS.items():
            texts.setdefault(name, []).append("".join(columns[index]))
        for index, name in _STRING_GROUPS.items():
            self.strings[name].extend(columns[index])
        self.unavailable.extend(v is not None for v in columns[12])
        self.groups.clear()
        if len(self.unavailable) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        """Convert the line walk's staged rows into one chunk."""
        if self.groups:
            self.stage()
        rows = len(self.unavailable)
        if not rows:
            return
        joined = {name: ("" if "unit" in name else "\n").join(parts) for name, parts in self.texts.items()}
        chunk: dict[str, np.ndarray] = {}
        tid = joined["tid"]
        # _ROW's \d also takes other scripts' digits, which only int()/float() read
        if tid.isascii():
            chunk["tid"] = np.fromstring(tid, dtype=np.int64, sep="\n")
        else:
            chunk["tid"] = np.array([int(t) for t in tid.split("\n")], dtype=np.int64)
        for name in ("read", "write", "swapin", "io"):
            text = joined[name]
            if text.isascii():
                chunk[name] = np.fromstring(text, dtype=np.float64, sep="\n")
            else:
                chunk[name] = np.array([float(t) for t in text.split("\n")], dtype=np.float64)
        for name in ("read", "write"):  # rate x unit factor, as float(m[7]) * _KIB[m[8]]
            units = np.frombuffer(joined[f"{name}_unit"].encode("ascii"), dtype=np.uint8)
            chunk[name] = chunk[name] * _UNIT_KIB[units]
        chunk["unavailable"] = np.array(self.unavailable, dtype=bool)
        chunk["clock_s"] = np.array(self.clocks, dtype=np.float64)
        chunk["iteration"] = np.array(self.iterations, dtype=np.int64)
        for name, texts in self.strings.items():
            chunk[name] = self.interned[name].codes(texts)
            texts.clear()
        self.clocks.clear()
        self.iterations.clear()
        if any(len(v) != rows for v in chunk.values()):  # cannot happen: every row matched _ROW
            raise ValueError(f"column lengths {[len(v) for v in chunk.values()]} for {rows} rows")
        self.append(chunk)
        self.texts = {}
        self.unavailable = []

    def append(self, chunk: dict[str, np.ndarray]) -> None:
        self.chunks.append(chunk)
        self.n += len(chunk["tid"])

    def queue(self, line_no: int, m: re.Match[bytes], view: memoryview) -> int:
        """An iteration `_FAST_BLOCK` matched in `view` (its first line is `line_no`), to be read by
        `commit`; returns how many lines it holds."""
        piece = m.string
        rows_at, rows_end = m.span(11)
        rows = piece.count(b"\n", rows_at, rows_end)
        self.fast.append((line_no, m, rows))
        self.fast_text.append(view[rows_at:rows_end])
        self.fast_rows += rows
        if self.fast_rows >= FAST_ROWS:
            self.commit()
        if m.start(1) == m.start() and rows_end == m.end():  # no blank lines: Total, Current, header?
            return rows + (2 if m.start(10) < 0 else 3)
        return piece.count(b"\n", m.start(), rows_at) + rows + piece.count(b"\n", rows_end, m.end())

    def commit(self) -> None:
        """Read the queued iterations: their rows by pandas, or all their lines by the line walk when
        they are few or pandas does not read them as the regex did."""
        blocks, text, rows = self.fast, self.fast_text, self.fast_rows
        if not blocks:
            return
        self.fast, self.fast_text, self.fast_rows = [], [], 0
        chunk = None
        if rows >= FAST_MIN_ROWS:
            units = any(m.group(12) or m.group(13) for _, m, _ in blocks)
            chunk = self._read_rows(b"".join(text), rows, units)
        if chunk is None:
            for line_no, m, _ in blocks:
                for i, line in enumerate(m.string[m.start() : m.end() - 1].decode().split("\n")):
                    self.line(line_no + i, line)
            return
        first = len(self.totals) + 1
        clocks = self.heads(blocks)
        counts = [n for _, _, n in blocks]
        chunk["clock_s"] = np.repeat(clocks, counts)
        chunk["iteration"] = np.repeat(np.arange(first, first + len(blocks), dtype=np.int64), counts)
        self.flush()  # the line walk's rows before these
        self.append(chunk)

    def heads(self, blocks: list[tuple[int, re.Match[bytes], int]]) -> np.ndarray:
        """`total`, `clock` and `header` over the Total, Current and header lines of queued iterations at
        once; returns each one's `clock_s`. `_FAST_BLOCK` took only valid times, and the same time on
        every line of an iteration: `clock` moves at its Total line only."""
        heads = [m.group(*range(1, 11)) for _, m, _ in blocks]  # clock, 4 x (rate, unit), TID/PID
        d = np.frombuffer(b"".join(h[0] for h in heads), dtype=np.uint8).reshape(-1, 8).astype(np.int64)
        d -= ord("0")
        hours, minutes, seconds = d[:, 0] * 10 + d[:, 1], d[:, 3] * 10 + d[:, 4], d[:, 6] * 10 + d[:, 7]
        sod = hours * 3600 + minutes * 60 + np.minimum(seconds, 59)
        prev = np.concatenate([[sod[0] if self.prev_sod is None else self.prev_sod], sod[:-1]])
        back = prev - sod
        days = self.day + np.cumsum(back > _ROLLOVER_S)
        clock_s = (sod + 86400 * days).astype(np.float64)
        # notes in line order: a clock step's at its Total line, the PID header's after its iteration's
        tasks = [h[9] for h in heads]
        pid = tasks.index(b"PID") if b"PID" in tasks else len(blocks)
        for i in np.flatnonzero((back > 0) & (back <= _ROLLOVER_S)):
            if i > pid:
                self.header("PID")
                pid = len(blocks)
            line_no, m, _ = blocks[i]
            line_no += m.string.count(b"\n", m.start(), m.start(1))  # the Total line's
            self.notes.append(f"line {line_no}: clock went back {back[i]} s (clock step), kept as printed")
        if pid < len(blocks):
            self.header("PID")
        self.day, self.prev_sod = int(days[-1]), int(sod[-1])
        last = heads[-1][0].decode()
        self._last_clock = ((last[:2], last[3:5], last[6:]), float(clock_s[-1]))
        kib = _KIB_BYTES
        first = len(self.totals) + 1
        self.totals.extend(
            {
                "iteration": first + i,
                "clock": h[0].decode(),
                "clock_s": value,
                "total_read_kb_s": float(h[1]) * kib[h[2]],
                "total_write_kb_s": float(h[3]) * kib[h[4]],
                "actual_read_kb_s": float(h[5]) * kib[h[6]],
                "actual_write_kb_s": float(h[7]) * kib[h[8]],
            }
            for i, (h, value) in enumerate(zip(heads, clock_s.tolist(), strict=True))
        )
        return clock_s

    def _read_rows(self, data: bytes, rows: int, units: bool) -> dict[str, np.ndarray] | None:
        """Task rows `_FAST_BLOCK` matched -> columns (strings as codes); None if a reader refuses them
        or reads them otherwise than the line walk would. `units`: some rate is not in K/s (read the
        unit columns)."""
        unavailable = data.count(_UNAVAILABLE) if b"?" in data else 0
        if unavailable:
            data = data.replace(_UNAVAILABLE, _UNAVAILABLE_AS)
        # each row is PREFIX % IO % COMMAND: a `%` in COMMAND would cut it short
        if data.count(b"%") != 2 * rows:
            return None
        common = {"header": None, "index_col": False, "na_filter": False, "quoting": csv.QUOTE_NONE}
        common |= {"engine": "c", "low_memory": False}  # a batch at once: no chunks to stitch
        fields = {1: np.int64, 2: "category", 3: "category", 4: np.float64, 6: np.float64, 8: np.float64}
        if units:
            fields.update({5: "category", 7: "category"})

        def prefix_columns(dtypes: dict[int, object]) -> pd.DataFrame:
            """TIME TID PRIO USER READ UNIT WRITE UNIT SWAPIN (a row after its `%` is skipped)."""
            return pd.read_csv(
                io.BytesIO(data),
                sep=" ",
                skipinitialspace=True,
                comment="%",
                names=range(9),
                usecols=list(dtypes),
                dtype=dtypes,
                **common,
            )

        try:
            prefix = prefix_columns(fields)
            # IO and COMMAND, split on the row's two `%` by Arrow's reader (threaded; it reads ` 4.68 `
            # as 4.68 and keeps the blanks before COMMAND, which are stripped below)
            rest = pa_csv.read_csv(
                io.BytesIO(data),
                read_options=pa_csv.ReadOptions(column_names=["prefix", "io", "command"]),
                parse_options=pa_csv.ParseOptions(delimiter="%", quote_char=False),
                convert_options=pa_csv.ConvertOptions(
                    column_types={"io": pa.float64(), "command": _DICT}, include_columns=["io", "command"]
                ),
            )
            if not all(pd.api.types.is_string_dtype(prefix[i].cat.categories) for i in (2, 3)):
                # a user printed as a uid (no name for it: containers) made a category of numbers, which
                # is not the text as printed (`007` -> 7): these two columns again, as text
                text = prefix_columns({2: str, 3: str})
                prefix[2], prefix[3] = text[2], text[3]
        except (ValueError, pd.errors.ParserError, pa.ArrowInvalid):
            return None
        if len(prefix) != rows or rest.num_rows != rows:
            return None
        commands = rest.column("command").unify_dictionaries().combine_chunks()
        texts = {
            "prio": _distinct(prefix[2]),
            "user": _distinct(prefix[3]),
            "command": (
                [t.lstrip(" ") for t in commands.dictionary.to_pylist()],
                commands.indices.to_numpy(zero_copy_only=False),
            ),
        }
        chunk: dict[str, np.ndarray] = {"tid": prefix[1].to_numpy()}
        for name, (distinct, codes) in texts.items():
            interned = self.interned[name]
            table = np.array([interned.code(t) for t in distinct], dtype=np.int64)
            chunk[name] = table[codes]
        for name, value, unit in (("read", 4, 5), ("write", 6, 7)):
            chunk[name] = prefix[value].to_numpy()  # K/s: KiB/s already
            if units:
                factors = np.array([_KIB[u[0]] for u in prefix[unit].cat.categories], dtype=np.float64)
                chunk[name] = chunk[name] * factors[prefix[unit].cat.codes.to_numpy()]
        swapin, io_pct = prefix[8].to_numpy(), rest.column("io").to_numpy()
        flags = swapin < 0  # only `_UNAVAILABLE_AS` prints a sign
        if int(flags.sum()) != unavailable:  # a COMMAND held the text too
            return None
        chunk["swapin"] = np.where(flags, np.nan, swapin)
        chunk["io"] = np.where(flags, np.nan, io_pct)
        chunk["unavailable"] = flags
        return chunk


def _distinct(column: pd.Series) -> tuple[list[str], np.ndarray]:
    """A text column as (distinct texts, index per row): a category's, or factorized from text."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.categories.tolist(), column.cat.codes.to_numpy()
    codes, uniques = pd.factorize(column.to_numpy())
    return list(uniques), codes


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
        A frame with exactly the `SCHEMA` columns; `attrs` `totals`, `dropped_lines`,
        `unknown_columns`, `notes`.

    Raises:
        ParseError: a line that is none of iotop's (named by number), a row before any `Total` line.
    """
    lines = Lines(source, KIND)
    try:
        ZoneInfo(tz)
    except (ValueError, KeyError, OSError) as exc:
        raise ParseError(KIND, lines.path, 0, "", f"unknown time zone {tz!r} ({exc})") from None
    day0 = _day(date, lines)
    st = _State(lines)
    if not _fast(source, st):  # a stream, or CR line ends: the line walk over the whole capture
        st = _State(lines)
        _walk(st)
    st.flush()
    if st.continued:
        st.notes.append(
            f"{st.continued} line(s) joined to the COMMAND above them (command lines with newlines)"
        )
    attrs = {"totals": st.totals, "dropped_lines": st.dropped, "unknown_columns": [], "notes": st.notes}
    n = st.n
    if n == 0:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df

    def column(name: str) -> np.ndarray:
        """A column joined from its chunks, which let it go: the chunks and the frame are not all held."""
        return np.concatenate([chunk.pop(name) for chunk in st.chunks])

    clock_s = column("clock_s")
    if day0 is None and started_at is not None and not np.isnan(clock_s).all():
        day0 = capture_day(clock_s[~np.isnan(clock_s)][0], started_at, tz)
    data: dict[str, object] = {
        "timestamp": _stamps(clock_s, day0, tz) if day0 is not None else _no_stamps(n),
        "clock_s": clock_s,
        "host": text_column([host], np.zeros(n, dtype=np.intp)),
        "iteration": pd.array(column("iteration"), dtype="Int64"),
        "tid": pd.array(column("tid"), dtype="Int64"),
        "prio": st.interned["prio"].array(column("prio")),
        "user": st.interned["user"].array(column("user")),
        "read_kb_s": column("read"),
        "write_kb_s": column("write"),
        "swapin_pct": column("swapin"),
        "io_pct": column("io"),
        "delayacct_unavailable": pd.array(column("unavailable"), dtype="boolean"),
    }
    commands = st.interned["command"]
    codes = column("command")
    data["command"] = commands.array(codes)
    # the `[...]` ending each distinct command, taken per row as the commands are
    threads = [m[1] if (m := _THREAD.search(text)) else None for text in commands.index]
    data["thread"] = text_column(threads, codes)
    df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    df.attrs.update(attrs)
    return df


def _fast(source: Source, st: _State) -> bool:
    """Read a path or string piece by piece (pieces end where an iteration starts): whole iterations by
    `_FAST_BLOCK`, any other line by the line walk, in file order. False for a stream or CR line ends."""
    pieces = byte_pieces(source, st.lines, b"Total DISK READ")
    if pieces is None:
        return False
    try:
        for piece, first_no in pieces:
            if b"\r" in piece:  # CR ends a line for `Lines`, not for the regex
                return False
            body = piece.rfind(b"\n") + 1  # a cut last line goes to the line walk
            view = memoryview(piece)
            line_no = first_no
            pos = 0
            while pos < body:
                if m := _FAST_BLOCK.match(piece, pos):
                    line_no += st.queue(line_no, m, view)
                    pos = m.end()
                    continue
                end = piece.index(b"\n", pos) + 1
                st.commit()
                st.line(line_no, piece[pos : end - 1].decode())
                line_no += 1
                pos = end
            if body < len(piece):
                st.commit()
                walk_text(piece[body:].decode(), line_no, st.lines, st.line, st.cut_last)
    except OSError:
        return False  # the line walk raises it as a ParseError
    st.commit()
    return True


def _walk(st: _State) -> None:
    """The line walk over the whole capture; the last line is held back until it is known to end with
    a newline (cut mid-write: dropped)."""
    lines = st.lines
    held_no, held = 0, ""
    line_no = 0
    try:
        for line_no, line in lines:  # noqa: B007 - line_no is read in the handler
            if held_no:
                st.line(held_no, held)
            held_no, held = line_no, line
    except (UnicodeDecodeError, OSError) as exc:
        raise lines.error(line_no + 1, "", f"cannot read: {exc}") from None
    if held_no:
        if not lines.last_complete and held.strip():
            st.dropped += 1
        else:
            st.line(held_no, held)


def _stamps(clock_s: np.ndarray, day0: date, tz: str) -> pd.Series:
    """`clock_stamps` of each distinct clock (a few per iteration), spread over the rows."""
    distinct, where = np.unique(clock_s, return_inverse=True)
    return clock_stamps(distinct, day0, tz).iloc[where.ravel()].reset_index(drop=True)


def _no_stamps(n: int) -> pd.api.extensions.ExtensionArray:
    """The `timestamp` column without a capture date: NaT."""
    return pd.array(np.full(n, np.datetime64("NaT", "ns")), dtype="datetime64[ns, UTC]")


def _day(value: date | str | None, lines: Lines) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise ParseError(KIND, lines.path, 0, "", f"capture date {value!r} is not YYYY-MM-DD") from None

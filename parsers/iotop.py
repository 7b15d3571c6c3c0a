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

Tested on: tests/fixtures/iotop/ (README.md there).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Lines, Source, clock_stamps, coerce, empty_frame

KIND = "iotop"

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
_NUMBER_GROUPS = {3: "tid", 6: "read", 8: "write", 10: "swapin", 11: "io"}
_UNIT_GROUPS = {7: "read_unit", 9: "write_unit"}
_UNIT_KIB = np.ones(256)  # unit letter byte -> KiB factor
for _letter, _factor in _KIB.items():
    _UNIT_KIB[ord(_letter)] = _factor


class _State:
    """What the walk over the lines collects: rows (matched, staged, converted per chunk), totals, clock.

    The walk matches each row with `_ROW` (which checks every value) and keeps its groups; every
    STAGE_ROWS rows `_stage` joins each number column's texts with newlines, and every CHUNK_ROWS
    rows `_flush` converts each column with one numpy call instead of one float() per value.
    """

    def __init__(self) -> None:
        self.groups: list[tuple] = []  # matched rows not yet staged
        self.clocks: list[float] = []
        self.texts: dict[str, list[str]] = {}  # staged: column -> joined numbers / strings / units
        self.unavailable: list[bool] = []
        self.iterations: list[int] = []
        self.chunks: list[dict[str, np.ndarray]] = []
        self.strings: dict[str, list[str]] = {name: [] for name in _STRING_GROUPS.values()}
        self.string_chunks: dict[str, list[pd.api.extensions.ExtensionArray]] = {}
        self.n = 0
        self.totals: list[dict] = []
        self.notes: list[str] = []
        self.dropped = 0
        self.day = 0
        self.prev_sod: int | None = None
        self._last_clock: tuple[tuple[str, str, str], float] | None = None

    def clock(self, line_no: int, m: re.Match, lines: Lines, line: str) -> float:
        """Seconds since the first day's midnight of a line's leading time; NaN without `-t`."""
        if m[1] is None:
            return float("nan")
        key = (m[1], m[2], m[3])
        if self._last_clock is not None and self._last_clock[0] == key:
            return self._last_clock[1]  # the same time as the line before: nothing moves
        h, mi, s = int(m[1]), int(m[2]), int(m[3])
        if h > 23 or mi > 59 or s > 60:
            raise lines.error(line_no, line, f"not a time of day: {m[1]}:{m[2]}:{m[3]}")
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
        self._last_clock = (key, value)
        return value

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
        """Convert the staged rows into one chunk of number columns."""
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
        for name, texts in self.strings.items():  # Python strings held for a chunk only
            self.string_chunks.setdefault(name, []).append(_strings(texts))
            texts.clear()
        self.clocks.clear()
        self.iterations.clear()
        if any(len(v) != rows for v in chunk.values()):  # cannot happen: every row matched _ROW
            raise ValueError(f"column lengths {[len(v) for v in chunk.values()]} for {rows} rows")
        self.chunks.append(chunk)
        self.n += rows
        self.texts = {}
        self.unavailable = []


def parse(
    source: Source, *, host: str | None = None, tz: str = "UTC", date: date | str | None = None
) -> pd.DataFrame:
    """Parse an iotop batch capture into one row per task line.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: the capturing host's time zone (for `timestamp`, with `date`).
        date: the capture's date (manifest), `datetime.date` or `YYYY-MM-DD`; iotop prints none.

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
    st = _State()

    def other(line_no: int, line: str) -> None:
        """Any line but a task row: Total, Actual/Current, the header, blank; else an error."""
        if not line.strip():
            return  # seed 000's sed put a blank line before every block
        if m := _TOTAL.match(line):
            clock_s = st.clock(line_no, m, lines, line)
            st.totals.append(
                {
                    "iteration": len(st.totals) + 1,
                    "clock": f"{m[1]}:{m[2]}:{m[3]}" if m[1] else None,
                    "clock_s": None if np.isnan(clock_s) else clock_s,
                    "total_read_kb_s": float(m[4]) * _KIB[m[5]],
                    "total_write_kb_s": float(m[6]) * _KIB[m[7]],
                    "actual_read_kb_s": None,
                    "actual_write_kb_s": None,
                }
            )
            return
        if m := _ACTUAL.match(line):
            if not st.totals:
                raise lines.error(line_no, line, f"`{m[4]} DISK READ` line before any `Total DISK READ` line")
            st.clock(line_no, m, lines, line)
            st.totals[-1]["actual_read_kb_s"] = float(m[5]) * _KIB[m[6]]
            st.totals[-1]["actual_write_kb_s"] = float(m[7]) * _KIB[m[8]]
            return
        if m := _HEADER.match(line):
            if m[1] == "PID" and not any("-P" in n for n in st.notes):
                st.notes.append("header says PID: rows are processes (iotop -P), `tid` holds PIDs")
            return
        raise lines.error(line_no, line, "not an iotop batch line (Total/Actual/Current, header or task row)")

    groups, clocks, iterations = st.groups, st.clocks, st.iterations
    row_match = _ROW.match
    held_no, held = 0, ""
    line_no = 0
    try:
        # The last line is held back until it is known to end with a newline (cut mid-write: dropped).
        for line_no, line in lines:  # noqa: B007 - line_no is read in the handler
            if held_no:
                if (m := row_match(held)) and st.totals:  # the hot path: a task row
                    groups.append(m.groups())
                    clocks.append(st.clock(held_no, m, lines, held))
                    iterations.append(len(st.totals))
                    if len(groups) >= STAGE_ROWS:
                        st.stage()
                elif m:
                    raise lines.error(held_no, held, "task row before any `Total DISK READ` line")
                else:
                    other(held_no, held)
            held_no, held = line_no, line
    except (UnicodeDecodeError, OSError) as exc:
        raise lines.error(line_no + 1, "", f"cannot read: {exc}") from None
    if held_no:
        if not lines.last_complete and held.strip():
            st.dropped += 1  # cut mid-write: its numbers or command may be a prefix of themselves
        elif (m := row_match(held)) and st.totals:
            groups.append(m.groups())
            clocks.append(st.clock(held_no, m, lines, held))
            iterations.append(len(st.totals))
        elif m:
            raise lines.error(held_no, held, "task row before any `Total DISK READ` line")
        else:
            other(held_no, held)
    st.flush()
    attrs = {"totals": st.totals, "dropped_lines": st.dropped, "unknown_columns": [], "notes": st.notes}
    n = st.n
    if n == 0:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df

    def column(name: str) -> np.ndarray:
        return np.concatenate([chunk[name] for chunk in st.chunks])

    def strings(name: str) -> pd.Series:
        return pd.concat([pd.Series(part) for part in st.string_chunks[name]], ignore_index=True)

    unavailable = column("unavailable")
    data: dict[str, object] = {
        "clock_s": column("clock_s"),
        "iteration": pd.array(column("iteration"), dtype="Int64"),
        "tid": pd.array(column("tid"), dtype="Int64"),
        "prio": strings("prio"),
        "user": strings("user"),
        "read_kb_s": column("read"),
        "write_kb_s": column("write"),
        "swapin_pct": column("swapin"),
        "io_pct": column("io"),
        "delayacct_unavailable": pd.array(unavailable, dtype="boolean"),
    }
    command = strings("command")
    data["command"] = command
    data["thread"] = command.str.extract(_THREAD, expand=False).astype("string")
    data["host"] = pd.array([host] * n, dtype="string")
    if day0 is not None:
        data["timestamp"] = clock_stamps(data["clock_s"], day0, tz)
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(attrs)
    return df


def _strings(texts: list[str]) -> pd.api.extensions.ExtensionArray:
    """A string array built from the distinct texts (users, classes, commands repeat: cheaper)."""
    codes, uniques = pd.factorize(np.array(texts, dtype=object))
    return pd.array(uniques, dtype="string").take(codes)


def _day(value: date | str | None, lines: Lines) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise ParseError(KIND, lines.path, 0, "", f"capture date {value!r} is not YYYY-MM-DD") from None

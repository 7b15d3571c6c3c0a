"""top: procps-ng `top -b` batch output, processes or threads (`-H`), one row per task per iteration.

Reads:

- `LC_ALL=C S_TIME_FORMAT=ISO top -b -H -w 512 -d 1 -n 3` (what perfkit runs; procps-ng 4.0.2
  tested): `Threads:` summary line, one row per thread (PID column = TID);
- `top -b -n 2 -w 512` (processes, `Tasks:`), `top -b -c ...` (COMMAND is the command line);
- seed 000's `top -d 1 -n 30 -b` / `-H` (procps-ng 3.3, `KiB Mem :`, no `-w`: COMMAND cut to the
  terminal width, kept as printed).

Each iteration is a summary (`top - 08:10:11 up 46 min,  0 user,  load average: ...`, `Tasks:` or
`Threads:`, `%Cpu(s):`, `KiB|MiB|GiB Mem :`, `... Swap:`), a blank line, the column header
(`PID USER PR NI VIRT RES SHR S %CPU %MEM TIME+ COMMAND`) and the rows. Columns are mapped by their
header names; a header this parser does not know is listed in `df.attrs["unknown_columns"]` and its
values skipped. Rows are split on whitespace: every column but COMMAND is one word; COMMAND must be
the last column and is the rest of the line VERBATIM (spaces, `<script>`, non-ASCII; under LC_ALL=C
top prints each byte of a non-ASCII argument as `?`).

top prints a time of day and no date, and parsers do not read the clock: `timestamp` is NaT (the
capture date is the manifest's); `clock_s` is the iteration's `top - HH:MM:SS` in seconds since
midnight, +86400 at each midnight rollover, so the caller adds it to the capture date.

Schema:

| column | dtype | header | meaning |
|---|---|---|---|
| timestamp | datetime64[ns, UTC] | | NaT: top prints no date (see above) |
| host | string | | the `host` argument |
| iteration | Int64 | | 0-based screen number |
| clock_s | float64 | | seconds since midnight of the iteration's clock (+86400 per rollover) |
| pid | Int64 | PID | the TID under `-H` |
| user | string | USER | verbatim (`systemd+` when cut) |
| pr | string | PR | priority: a number or `rt` |
| ni | Int64 | NI | nice |
| virt_kb, res_kb, shr_kb | float64 | VIRT RES SHR | KiB; a suffixed value (`8193.3g`) is converted |
| state | string | S | `R`, `S`, `D`, `I`, `Z`, ... |
| cpu_pct | float64 | %CPU | share of one CPU over the interval (iteration 0: since the task started) |
| mem_pct | float64 | %MEM | RES / physical memory |
| time_s | float64 | TIME+ / TIME | CPU time in seconds |
| command | string | COMMAND | verbatim rest of the line |

Sizes: an unsuffixed value is KiB (top's default). `-e m|g|...` scaling (or `E` in a toprc) prints
the values with a suffix letter, which is converted; a capture whose scaling prints unsuffixed
non-KiB values cannot be told apart and is read as KiB. TIME+ is `m:ss.hh` (minutes unbounded),
then `mmmm:ss` (minutes:seconds) when it no longer fits, then `h,mm` (hours,minutes), `Nd+Nh`.

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `unknown_columns`, `notes` (iteration 0's
cpu_pct is no interval figure), `summaries` (one record per iteration: iteration, clock, up (as
printed), users, load_1/5/15, tasks_total/running/sleeping/stopped/zombie, threads_mode,
cpu_us/sy/ni/id/wa/hi/si/st, mem_total/free/used/buff_cache_mib, swap_total/free/used_mib,
mem_avail_mib: memory converted to MiB; NaN when absent or printed overflowed as `12345678+total`).

Other locales: top translates its labels and prints decimal commas (de_DE: `load average: 0,54`,
`MiB Spch`, `ZEIT+ BEFEHL`): refused with "capture not taken under LC_ALL=C", never misread.
Tested on: tests/fixtures/top/ (README.md there).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Lines, Source, coerce, empty_frame, parse_clock

KIND = "top"
CHUNK_ROWS = 16384  # task rows converted at once: bounds the buffered text, amortises numpy calls
# Split rows are regrouped into columns every STAGE_ROWS rows: few enough that the split lists are
# still in the CPU cache (holding 16 k rows of lists costs 3x the split itself).
STAGE_ROWS = 256

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "iteration": "Int64",
    "clock_s": "float64",
    "pid": "Int64",
    "user": "string",
    "pr": "string",
    "ni": "Int64",
    "virt_kb": "float64",
    "res_kb": "float64",
    "shr_kb": "float64",
    "state": "string",
    "cpu_pct": "float64",
    "mem_pct": "float64",
    "time_s": "float64",
    "command": "string",
}

# top header label -> schema column
_HEADERS = {
    "PID": "pid",
    "USER": "user",
    "PR": "pr",
    "NI": "ni",
    "VIRT": "virt_kb",
    "RES": "res_kb",
    "SHR": "shr_kb",
    "S": "state",
    "%CPU": "cpu_pct",
    "%MEM": "mem_pct",
    "TIME+": "time_s",
    "TIME": "time_s",
    "COMMAND": "command",
}
_LOCALE = "capture not taken under LC_ALL=C"
_TOP = re.compile(
    r"^top - (\d{1,2}:\d{2}:\d{2}) up\s+(.+?),\s+(\d{1,9}) users?,\s+"
    r"load average: (\d+\.\d+), (\d+\.\d+), (\d+\.\d+)\s*$"
)
_TASKS = re.compile(
    r"^(Tasks|Threads):\s*(\d{1,12}) total,\s*(\d{1,12}) running,\s*(\d{1,12}) sleeping,"
    r"\s*(\d{1,12}) stopped,\s*(\d{1,12}) zombie\s*$"
)
_CPU_PAIR = re.compile(r"(\d+\.\d+)\s+(us|sy|ni|id|wa|hi|si|st)\b")
_MEM = re.compile(r"^([KMGTPE]iB) (Mem|Swap)\s*:(.*)$")
_MEM_PAIR = re.compile(r"(\d+(?:\.\d+)?)(\+?)\s*(total|free|used|buff/cache|avail Mem)")
_TO_MIB = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2, "PiB": 1024.0**3, "EiB": 1024.0**4}
_SIZE = re.compile(r"^(\d{1,20}(?:\.\d{1,6})?)([kmgtpe]?)$")
_SIZE_KB = {"": 1.0, "k": 1.0, "m": 1024.0, "g": 1024.0**2, "t": 1024.0**3, "p": 1024.0**4, "e": 1024.0**5}
_FLOAT = re.compile(r"^\d{1,12}(?:\.\d{1,6})?$")
_INT = re.compile(r"^-?\d{1,10}$")
_TIME_HUND = re.compile(r"^(\d{1,9}):([0-5]\d)\.(\d{2})$")  # minutes:seconds.hundredths
_TIME_MS = re.compile(r"^(\d{1,9}):([0-5]\d)$")  # minutes:seconds
_TIME_HM = re.compile(r"^(\d{1,9}),([0-5]\d)$")  # hours,minutes
_TIME_DH = re.compile(r"^(\d{1,9})d\+(\d{1,2})h$")  # days+hours
_COMMA_DECIMAL = re.compile(r"\d,\d")
_SUMMARY_KEYS = [
    "iteration",
    "clock",
    "up",
    "users",
    "load_1",
    "load_5",
    "load_15",
    "tasks_total",
    "tasks_running",
    "tasks_sleeping",
    "tasks_stopped",
    "tasks_zombie",
    "threads_mode",
    "cpu_us",
    "cpu_sy",
    "cpu_ni",
    "cpu_id",
    "cpu_wa",
    "cpu_hi",
    "cpu_si",
    "cpu_st",
    "mem_total_mib",
    "mem_free_mib",
    "mem_used_mib",
    "mem_buff_cache_mib",
    "swap_total_mib",
    "swap_free_mib",
    "swap_used_mib",
    "mem_avail_mib",
]
_MEM_KEYS = {
    ("Mem", "total"): "mem_total_mib",
    ("Mem", "free"): "mem_free_mib",
    ("Mem", "used"): "mem_used_mib",
    ("Mem", "buff/cache"): "mem_buff_cache_mib",
    ("Swap", "total"): "swap_total_mib",
    ("Swap", "free"): "swap_free_mib",
    ("Swap", "used"): "swap_used_mib",
    ("Swap", "avail Mem"): "mem_avail_mib",
}
_MAX_LINE = 1 << 20


def sniff(text: str) -> bool:
    """top -b output starts with its `top - HH:MM:SS up ...` line."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            return bool(re.match(r"^top - \d{1,2}:\d{2}:\d{2} up ", line))
    return False


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a `top -b` capture into one row per task (thread under -H) per iteration.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (top prints no date and no zone); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`, `unknown_columns`,
        `notes`, `summaries`.

    Raises:
        ParseError: not top output, another locale, a header without COMMAND last, a malformed line
            mid-file.
    """
    st = _State(Lines(source, KIND))
    try:
        st.run()
    except ParseError:
        raise
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        raise ParseError(KIND, None, st.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})") from exc
    notes = []
    if st.n:
        notes.append(
            "iteration 0's cpu_pct is CPU time since each task started (top's first screen), "
            "not an interval figure: use iterations >= 1 for rates"
        )
    notes.append("top prints no date: timestamp is NaT, clock_s is seconds since midnight of the capture day")
    attrs = {
        "dropped_lines": st.dropped,
        "unknown_columns": st.unknown,
        "notes": notes,
        "summaries": st.summaries,
    }
    if not st.n:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    n = st.n
    data: dict[str, object] = {
        "timestamp": pd.Series(pd.NaT, index=range(n), dtype="datetime64[ns, UTC]"),
        "host": pd.array([host] * n, dtype="string"),
    }
    for col in ("iteration", "clock_s", *(c for c in _HEADERS.values() if c in st.present)):
        parts = [chunk.get(col) for chunk in st.chunks]
        if all(isinstance(p, np.ndarray) for p in parts):
            data[col] = np.concatenate(parts)  # float64 columns
        else:  # Int64 / string arrays, or a column a later header dropped: NA there
            sizes = [len(chunk["iteration"]) for chunk in st.chunks]
            data[col] = pd.concat(
                [pd.Series(_missing(col, k) if p is None else p) for p, k in zip(parts, sizes, strict=True)],
                ignore_index=True,
            )
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(attrs)
    return df


class _State:
    """The line walk: summary lines open an iteration, the header names the columns, then rows.

    Task rows are only split during the walk (the hot path); every STAGE_ROWS rows `_stage` joins
    each column's texts with newlines; every CHUNK_ROWS rows (and before a header with another
    layout) `_flush` checks and converts each column with one regex and one numpy call instead of
    one per value.
    """

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.summaries: list[dict[str, object]] = []
        self.unknown: list[str] = []
        self.present: set[str] = set()
        self.header: list[str | None] | None = None  # column per header position, None = skipped
        self.width = 0  # fields of a task row under the current header; 0: no header (yet)
        self.layout: list[str | None] = []  # the header of the buffered rows
        self.dropped = 0
        self.line_no = 0
        self.iteration = -1
        self.clock_s = math.nan
        self._day = 0
        self._prev_sod = -1
        self._header_line = ""
        # buffered task rows: split, not yet staged; their text and line number; where each
        # iteration starts; per printed column the staged texts (joined numbers, or strings)
        self.buf: list[list[str]] = []
        self.raws: list[str] = []
        self.nos: list[int] = []
        self.pieces: list[list[str]] = []
        self.segs: list[tuple[int, int, float]] = []  # (buffer index, iteration, clock_s)
        # converted rows: one dict of column arrays per chunk
        self.chunks: list[dict[str, object]] = []
        self.n = 0

    def run(self) -> None:
        """Walk the lines; the last line is held back until it is known to end with a newline."""
        buf, raws, nos = self.buf, self.raws, self.nos
        width = 0
        held_no, held = 0, ""
        line_no = 0
        try:
            for line_no, line in self.lines:  # noqa: B007 - line_no is read in the handler
                if width:
                    parts = held.split(None, width - 1)
                    # The hot path: under a header, a line whose first field is a number is a task
                    # row (no summary line or header starts so); feed() sees every other line.
                    if len(parts) == width and parts[0].isdigit() and len(held) <= _MAX_LINE:
                        buf.append(parts)
                        raws.append(held)
                        nos.append(held_no)
                        if len(buf) >= STAGE_ROWS:
                            self._stage()
                        held_no, held = line_no, line
                        continue
                if held_no:
                    self.feed(held_no, held)
                    width = self.width
                held_no, held = line_no, line
            if held_no:
                if not self.lines.last_complete and held.strip():
                    self.cut_last(held_no, held)
                else:
                    self.feed(held_no, held)
        except (UnicodeDecodeError, OSError) as exc:
            raise self.lines.error(line_no + 1, "", f"cannot read: {exc}") from None
        except ParseError:
            self._flush()  # the buffered rows come before the bad line: an error in them comes first
            raise
        self._flush()

    def feed(self, line_no: int, line: str) -> None:
        lines = self.lines
        self.line_no = line_no
        if not line.strip():
            return
        if len(line) > _MAX_LINE:
            raise lines.error(line_no, line, f"line longer than {_MAX_LINE} characters: not top output")
        if line.startswith("top - "):
            self._top_line(line_no, line)
            return
        if self.iteration < 0:
            raise lines.error(line_no, line, "not a top capture (no `top - HH:MM:SS up ...` line first)")
        summary = self.summaries[-1]
        if line.startswith(("Tasks:", "Threads:")):
            m = _TASKS.match(line)
            if not m:
                raise self._bad(line_no, line, "unreadable Tasks:/Threads: line")
            summary["threads_mode"] = m[1] == "Threads"
            for key, val in zip(
                ("total", "running", "sleeping", "stopped", "zombie"), m.groups()[1:], strict=True
            ):
                summary[f"tasks_{key}"] = int(val)
        elif line.startswith("%Cpu(s):"):
            if _COMMA_DECIMAL.search(line):
                raise lines.error(line_no, line, f"decimal comma: {_LOCALE}")
            pairs = _CPU_PAIR.findall(line)
            if not pairs:
                raise lines.error(line_no, line, "unreadable %Cpu(s) line")
            for val, key in pairs:
                summary[f"cpu_{key}"] = float(val)
        elif line.startswith(("%Cpu", "%Node")):
            return  # per-CPU / per-node lines (toggled in a toprc): not in the summary records
        elif _MEM.match(line):
            m = _MEM.match(line)
            assert m is not None
            if _COMMA_DECIMAL.search(line):
                raise lines.error(line_no, line, f"decimal comma: {_LOCALE}")
            pairs = _MEM_PAIR.findall(m[3])
            if not pairs:
                raise lines.error(line_no, line, "unreadable memory line")
            for val, overflow, label in pairs:
                key = _MEM_KEYS.get((m[2], label))
                if key is not None:
                    # `12345678+total`: the value did not fit its field and was cut: unknown, not wrong.
                    summary[key] = math.nan if overflow else float(val) * _TO_MIB[m[1]]
        elif "PID" in line.split() and not line.split()[0].isdigit():
            self._read_header(line_no, line)
        elif self.header is None:
            raise self._bad(line_no, line, "not a top summary line or task header")
        else:
            self._row(line_no, line)

    def cut_last(self, line_no: int, line: str) -> None:
        # Cut mid-write: a number or the command may be a prefix of itself. Dropped and counted.
        if self.iteration < 0 and not line.startswith("top - "):
            raise self.lines.error(line_no, line, "not a top capture (no `top - HH:MM:SS up ...` line first)")
        self.dropped += 1

    def _bad(self, line_no: int, line: str, reason: str) -> ParseError:
        if _COMMA_DECIMAL.search(line):
            return self.lines.error(line_no, line, f"decimal comma: {_LOCALE}")
        return self.lines.error(line_no, line, f"{reason} ({_LOCALE}?)")

    def _top_line(self, line_no: int, line: str) -> None:
        m = _TOP.match(line)
        if not m:
            raise self._bad(line_no, line, "unreadable `top - ` line")
        hms = parse_clock(m[1])
        if hms is None:
            raise self.lines.error(line_no, line, f"unreadable clock {m[1]!r}")
        sod = hms[0] * 3600 + hms[1] * 60 + hms[2]
        if sod < self._prev_sod:  # the clock went back: midnight passed
            self._day += 1
        self._prev_sod = sod
        self.iteration += 1
        self.clock_s = float(sod + 86400 * self._day)
        self.header = None
        self.width = 0
        self.segs.append((len(self.nos), self.iteration, self.clock_s))
        summary: dict[str, object] = {k: math.nan for k in _SUMMARY_KEYS}
        summary.update(
            iteration=self.iteration,
            clock=m[1],
            up=m[2],
            users=int(m[3]),
            load_1=float(m[4]),
            load_5=float(m[5]),
            load_15=float(m[6]),
            threads_mode=False,
        )
        self.summaries.append(summary)

    def _read_header(self, line_no: int, line: str) -> None:
        if line == self._header_line:  # every iteration prints the same header: read it once
            self.header = self.layout
            self.width = len(self.layout)
            return
        labels = line.split()
        if "COMMAND" not in labels or labels[-1] != "COMMAND" or "%CPU" not in labels:
            raise self.lines.error(
                line_no,
                line,
                f"top header without %CPU or COMMAND last ({_LOCALE}, or a toprc moved COMMAND)",
            )
        columns: list[str | None] = []
        seen: set[str] = set()
        for label in labels:
            col = _HEADERS.get(label)
            if col is None or col in seen:
                if label not in self.unknown:
                    self.unknown.append(label)
                columns.append(None)
            else:
                seen.add(col)
                columns.append(col)
        self.present |= seen
        if columns != self.layout:
            self._flush()  # the buffered rows were split by the previous header
            self.layout = columns
        self.header = columns
        self.width = len(columns)
        self._header_line = line

    def _row(self, line_no: int, line: str) -> None:
        """A task row off the hot path (first field not a number, a row before the header...)."""
        n = self.width
        # The last piece (COMMAND) is the rest of the line as printed: split() with a maximum keeps
        # the blanks inside and after it, and drops only those before it.
        parts = line.split(None, n - 1)
        if len(parts) < n:
            raise self.lines.error(line_no, line, f"task row with {len(parts)} fields, header has {n}")
        self.buf.append(parts)
        self.raws.append(line)
        self.nos.append(line_no)
        if len(self.buf) >= STAGE_ROWS:
            self._stage()

    def _stage(self) -> None:
        """Regroup the split rows into their columns; numbers as one newline-joined text per stage."""
        if not self.pieces:
            self.pieces = [[] for _ in self.layout]
        for pos, texts in enumerate(zip(*self.buf, strict=True)):
            if self.layout[pos] in _STRINGS:
                self.pieces[pos].extend(texts)
            elif self.layout[pos] is not None:
                self.pieces[pos].append("\n".join(texts))
        self.buf.clear()
        if len(self.nos) >= CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        """Convert the buffered rows into one chunk of columns; empty the buffer, even on an error."""
        if not self.nos:
            return
        try:
            if self.buf:
                self._stage()
            self._convert()
        finally:
            self.buf.clear()
            self.raws.clear()
            self.nos.clear()
            self.pieces = []
            self.segs = [(0, self.iteration, self.clock_s)]  # rows that follow continue this iteration

    def _convert(self) -> None:
        rows = len(self.nos)
        chunk: dict[str, object] = {}
        starts = [s[0] for s in self.segs]
        counts = np.diff(np.array([*starts, rows], dtype=np.int64))
        chunk["iteration"] = pd.array(
            np.repeat(np.array([s[1] for s in self.segs], dtype=np.int64), counts), dtype="Int64"
        )
        chunk["clock_s"] = np.repeat(np.array([s[2] for s in self.segs], dtype=np.float64), counts)
        slow: list[tuple[int, str, list[str], list[object]]] = []  # (printed position, column, texts, values)
        for pos, col in enumerate(self.layout):
            if col is None:
                continue
            if col in _STRINGS:
                chunk[col] = _strings(self.pieces[pos])
                continue
            joined = "\n".join(self.pieces[pos])
            values = _fast(col, joined, rows)
            if values is None:  # a rare form (TIME+ `h,mm`), or a bad value: one value at a time
                texts = joined.split("\n")
                slow.append((pos, col, texts, [_value(col, text) for text in texts]))
            else:
                chunk[col] = values
        bad = [(values.index(None), pos, col, texts) for pos, col, texts, values in slow if None in values]
        if bad:
            index, _, col, texts = min(bad)  # the first bad row, its first bad column: as a row walk finds it
            raise self.lines.error(
                self.nos[index], self.raws[index], f"unreadable {col} value {texts[index]!r}"
            )
        for _, col, _, values in slow:
            chunk[col] = _typed(col, values)
        self.chunks.append(chunk)
        self.n += rows


def _all(value: str) -> re.Pattern[str]:
    """A pattern for a whole column joined by newlines, every line one `value` (ASCII digits only)."""
    return re.compile(rf"(?:{value})(?:\n(?:{value}))*+")


# Whole-column checks: the same forms as `_value` accepts, ASCII only (any other digit goes value
# by value through `_value`, which decides as before).
_COLUMN_FORMS = {
    "pid": _all(r"[0-9]{1,10}"),
    "ni": _all(r"-?[0-9]{1,10}"),
    "size": _all(r"[0-9]{1,20}(?:\.[0-9]{1,6})?[kmgtpe]?"),
    "pct": _all(r"[0-9]{1,12}(?:\.[0-9]{1,6})?"),
    "time": _all(r"[0-9]{1,9}:[0-5][0-9]\.[0-9]{2}"),  # m:ss.hh, what top prints until 10000 min
}
_STRINGS = frozenset({"user", "pr", "state", "command"})
_SUFFIXES = b"kmgtpe"
_SUFFIX_KB = np.ones(256)  # last byte of a size -> KiB factor (a digit: 1)
for _letter, _factor in _SIZE_KB.items():
    if _letter:
        _SUFFIX_KB[ord(_letter)] = _factor
_TIME_SEPARATORS = bytes.maketrans(b":.", b"\n\n")


def _fast(col: str, joined: str, rows: int) -> np.ndarray | pd.api.extensions.ExtensionArray | None:
    """A whole column (its texts joined by newlines) converted at once; None when a value is not in
    the common form. np.fromstring reads decimals correctly rounded, as float() does."""
    if col in ("pid", "ni"):
        if not _COLUMN_FORMS[col].fullmatch(joined):
            return None
        values = np.fromstring(joined, dtype=np.int64, sep="\n")
        return pd.array(values, dtype="Int64") if len(values) == rows else None
    if col in ("cpu_pct", "mem_pct"):
        if not _COLUMN_FORMS["pct"].fullmatch(joined):
            return None
        values = np.fromstring(joined, dtype=np.float64, sep="\n")
    elif col in ("virt_kb", "res_kb", "shr_kb"):
        if not _COLUMN_FORMS["size"].fullmatch(joined):
            return None
        data = joined.encode("ascii")
        digits = data.translate(None, _SUFFIXES)
        values = np.fromstring(digits, dtype=np.float64, sep="\n")
        if len(digits) != len(data) and len(values) == rows:
            # `8193.3g`: the byte before each newline (and the last byte) is the suffix, or a digit
            raw = np.frombuffer(data, dtype=np.uint8)
            values *= _SUFFIX_KB[raw[np.append(np.flatnonzero(raw == 10) - 1, len(raw) - 1)]]
    elif col == "time_s":
        if not _COLUMN_FORMS["time"].fullmatch(joined):
            return None
        mss = np.fromstring(joined.encode("ascii").translate(_TIME_SEPARATORS), dtype=np.int64, sep="\n")
        if len(mss) != 3 * rows:
            return None
        mss = mss.reshape(-1, 3)  # minutes, seconds, hundredths; the arithmetic of `_seconds`
        values = (mss[:, 0] * 60 + mss[:, 1]).astype(np.float64) + mss[:, 2] / 100
    else:
        return None
    return values if len(values) == rows else None


def _strings(texts: list[str]) -> pd.api.extensions.ExtensionArray:
    """A string array built from the distinct texts (users, states, commands repeat: cheaper)."""
    codes, uniques = pd.factorize(np.array(texts, dtype=object))
    return pd.array(uniques, dtype="string").take(codes)


def _typed(col: str, values: list[object]) -> np.ndarray | pd.api.extensions.ExtensionArray:
    if col in ("pid", "ni"):
        return pd.array(values, dtype="Int64")
    return np.array(values, dtype=np.float64)


def _missing(col: str, size: int) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """A chunk's column its header did not print: NaN / NA."""
    if col in ("pid", "ni"):
        return pd.array([pd.NA] * size, dtype="Int64")
    if col in _STRINGS:
        return pd.array([pd.NA] * size, dtype="string")
    return np.full(size, np.nan)


def _value(col: str, text: str) -> object | None:
    """A typed value of a task row's column, or None if the text is not one."""
    if col in ("pid", "ni"):
        return int(text) if _INT.match(text) and (col == "ni" or text[0] != "-") else None
    if col in ("virt_kb", "res_kb", "shr_kb"):
        m = _SIZE.match(text)
        return float(m[1]) * _SIZE_KB[m[2]] if m else None
    if col in ("cpu_pct", "mem_pct"):
        return float(text) if _FLOAT.match(text) else None
    if col == "time_s":
        return _seconds(text)
    return text


def _seconds(text: str) -> float | None:
    if m := _TIME_HUND.match(text):
        return int(m[1]) * 60 + int(m[2]) + int(m[3]) / 100
    if m := _TIME_MS.match(text):
        return float(int(m[1]) * 60 + int(m[2]))
    if m := _TIME_HM.match(text):
        return float(int(m[1]) * 3600 + int(m[2]) * 60)
    if m := _TIME_DH.match(text):
        return float(int(m[1]) * 86400 + int(m[2]) * 3600)
    return None

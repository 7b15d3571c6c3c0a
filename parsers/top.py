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

from ._common import Lines, Source, coerce, empty_frame, feed_lines, parse_clock

KIND = "top"

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
    st = _State()
    try:
        feed_lines(source, KIND, st.feed, st.cut_last)
    except ParseError:
        raise
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        raise ParseError(KIND, None, st.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})") from exc
    notes = []
    if st.rows:
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
    if not st.rows:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    n = len(st.rows)
    data: dict[str, object] = {
        "timestamp": pd.Series(pd.NaT, index=range(n), dtype="datetime64[ns, UTC]"),
        "host": pd.array([host] * n, dtype="string"),
    }
    for col in ("iteration", "clock_s", *(c for c in _HEADERS.values() if c in st.present)):
        values = [r[col] for r in st.rows]
        if col in ("iteration", "pid", "ni"):
            data[col] = pd.array(values, dtype="Int64")
        elif col in ("user", "pr", "state", "command"):
            data[col] = pd.array(values, dtype="string")
        else:
            data[col] = np.array(values, dtype=np.float64)
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(attrs)
    return df


class _State:
    """The line walk: summary lines open an iteration, the header names the columns, then rows."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []
        self.summaries: list[dict[str, object]] = []
        self.unknown: list[str] = []
        self.present: set[str] = set()
        self.header: list[str | None] | None = None  # column per header position, None = skipped
        self.dropped = 0
        self.line_no = 0
        self.iteration = -1
        self.clock_s = math.nan
        self._day = 0
        self._prev_sod = -1

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.line_no = line_no
        if not line.strip():
            return
        if len(line) > _MAX_LINE:
            raise lines.error(line_no, line, f"line longer than {_MAX_LINE} characters: not top output")
        if line.startswith("top - "):
            self._top_line(line_no, line, lines)
            return
        if self.iteration < 0:
            raise lines.error(line_no, line, "not a top capture (no `top - HH:MM:SS up ...` line first)")
        summary = self.summaries[-1]
        if line.startswith(("Tasks:", "Threads:")):
            m = _TASKS.match(line)
            if not m:
                raise self._bad(line_no, line, lines, "unreadable Tasks:/Threads: line")
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
            self._read_header(line_no, line, lines)
        elif self.header is None:
            raise self._bad(line_no, line, lines, "not a top summary line or task header")
        else:
            self.rows.append(self._row(line_no, line, lines))

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        # Cut mid-write: a number or the command may be a prefix of itself. Dropped and counted.
        if self.iteration < 0 and not line.startswith("top - "):
            raise lines.error(line_no, line, "not a top capture (no `top - HH:MM:SS up ...` line first)")
        self.dropped += 1

    def _bad(self, line_no: int, line: str, lines: Lines, reason: str) -> ParseError:
        if _COMMA_DECIMAL.search(line):
            return lines.error(line_no, line, f"decimal comma: {_LOCALE}")
        return lines.error(line_no, line, f"{reason} ({_LOCALE}?)")

    def _top_line(self, line_no: int, line: str, lines: Lines) -> None:
        m = _TOP.match(line)
        if not m:
            raise self._bad(line_no, line, lines, "unreadable `top - ` line")
        hms = parse_clock(m[1])
        if hms is None:
            raise lines.error(line_no, line, f"unreadable clock {m[1]!r}")
        sod = hms[0] * 3600 + hms[1] * 60 + hms[2]
        if sod < self._prev_sod:  # the clock went back: midnight passed
            self._day += 1
        self._prev_sod = sod
        self.iteration += 1
        self.clock_s = float(sod + 86400 * self._day)
        self.header = None
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

    def _read_header(self, line_no: int, line: str, lines: Lines) -> None:
        labels = line.split()
        if "COMMAND" not in labels or labels[-1] != "COMMAND" or "%CPU" not in labels:
            raise lines.error(
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
        self.header = columns

    def _row(self, line_no: int, line: str, lines: Lines) -> dict[str, object]:
        assert self.header is not None
        n = len(self.header)
        # The last piece (COMMAND) is the rest of the line as printed: split() with a maximum keeps
        # the blanks inside and after it, and drops only those before it.
        parts = line.split(None, n - 1)
        if len(parts) < n:
            raise lines.error(line_no, line, f"task row with {len(parts)} fields, header has {n}")
        row: dict[str, object] = {"iteration": self.iteration, "clock_s": self.clock_s}
        for col, text in zip(self.header, parts, strict=True):
            if col is None:
                continue
            value = _value(col, text)
            if value is None:
                raise lines.error(line_no, line, f"unreadable {col} value {text!r}")
            row[col] = value
        return row


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

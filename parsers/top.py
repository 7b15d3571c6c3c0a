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
values skipped. Rows are split on whitespace: every column before COMMAND is one word; COMMAND last
is the rest of the line VERBATIM (spaces, `<script>`, non-ASCII; under LC_ALL=C top prints each byte
of a non-ASCII argument as `?`).

Fields a toprc adds (`f` then `W`: `P`, `nTH`, `SWAP`, `CODE`, `WCHAN`, `ENVIRON`, `nsIPC`, ... ; jc's
"allfields" captures) are shown after COMMAND, which top then pads to a fixed width (`+` where it cut
a longer one): COMMAND is the text between its label's column and the next label's (its padding
dropped; a number wider than its label that reaches left of it is not taken), and the fields after
it are not read (their labels, known or not, go to `unknown_columns`). A field moved before COMMAND
must be one word, as every field top prints there is. %CPU must come before COMMAND.

A task table saved without the summary (`top -b -n 1 | tail -n +7`) starts with the task header:
sniffed as top (its `PR VIRT RES SHR TIME+` are labels ps never prints) and read as iteration 0 with
clock_s NaN, a summary record of NaN and a note.

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
| command | string | COMMAND | verbatim rest of the line (fields after it: see below) |

Sizes: an unsuffixed value is KiB (top's default). `-e m|g|...` scaling (or `E` in a toprc) prints
the values with a suffix letter, which is converted; a capture whose scaling prints unsuffixed
non-KiB values cannot be told apart and is read as KiB. TIME+ is `m:ss.hh` (minutes unbounded),
then `mmmm:ss` (minutes:seconds) when it no longer fits, then `h,mm` (hours,minutes), `Nd+Nh`.

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `unknown_columns`, `notes` (iteration 0's
cpu_pct is no interval figure; a table without summary), `summaries` (one record per iteration:
iteration, clock, up (as printed), users, load_1/5/15, tasks_total/running/sleeping/stopped/zombie,
threads_mode, cpu_us/sy/ni/id/wa/hi/si/st, mem_total/free/used/buff_cache_mib,
swap_total/free/used_mib, mem_avail_mib: memory converted to MiB; NaN when absent or printed
overflowed as `12345678+total`).

Large captures (a day of `-H -d 1` is millions of rows): a file is read in pieces of whole iterations
(`_pieces`). A piece whose iterations are all regular (summary lines as top prints them, one header
with COMMAND last, rows whose words sit between columns that are blank in every row:
`_State._read_piece`) is converted at once: numpy cuts the rows' bytes into the header's columns,
each column is converted once per distinct text (with the checks and conversions of the line walk),
strings become codes into one table.
Any other piece, and a stream or a string, goes through the line walk, which also names a bad line.

Other locales: top translates its labels and prints decimal commas (de_DE: `load average: 0,54`,
`MiB Spch`, `ZEIT+ BEFEHL`): refused with "capture not taken under LC_ALL=C", never misread.
Tested on: tests/fixtures/top/ (README.md there).
"""

from __future__ import annotations

import io
import math
import operator
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Lines, Source, capture_day, clock_stamps, coerce, empty_frame, parse_clock, text_column

KIND = "top"
DATED_BY_START = True  # top prints a time of day only: `parse(started_at=...)` dates the rows
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
_TOP_ONLY = frozenset({"PR", "VIRT", "RES", "SHR", "TIME+"})
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
_PIECE_BYTES = 8 << 20  # of a file read at once: about 100 k task rows, converted together
# The 7 lines that open an iteration, as top prints them. On a line of printable ASCII whose blanks are
# spaces these are the per-line patterns above (`_TOP`, `_TASKS`, `_CPU_PAIR`, `_MEM`, `_MEM_PAIR`), so a
# match reads the values they read; the header is the last group. The newline before `top - ` anchors it.
_BLOCK = re.compile(
    rb"\ntop - (\d{1,2}:\d{2}:\d{2}) up +([ -~]+?), +(\d{1,9}) users?, +"
    rb"load average: (\d+\.\d+), (\d+\.\d+), (\d+\.\d+) *\n"
    rb"(Tasks|Threads): *(\d{1,12}) total, *(\d{1,12}) running, *(\d{1,12}) sleeping,"
    rb" *(\d{1,12}) stopped, *(\d{1,12}) zombie *\n"
    rb"%Cpu\(s\): *(\d+\.\d+) us, *(\d+\.\d+) sy, *(\d+\.\d+) ni, *(\d+\.\d+) id,"
    rb" *(\d+\.\d+) wa, *(\d+\.\d+) hi, *(\d+\.\d+) si, *(\d+\.\d+) st *\n"
    rb"([KMGTPE]iB) Mem : *(\d+(?:\.\d+)?) total, *(\d+(?:\.\d+)?) free,"
    rb" *(\d+(?:\.\d+)?) used, *(\d+(?:\.\d+)?) buff/cache *\n"
    rb"([KMGTPE]iB) Swap: *(\d+(?:\.\d+)?) total, *(\d+(?:\.\d+)?) free,"
    rb" *(\d+(?:\.\d+)?) used\. *(\d+(?:\.\d+)?) avail Mem *\n"
    rb"\n"
    rb"( *PID [ -~]*)\n"
)
_BLOCK_LINES = 7
_SPACES = np.uint64(0x2020202020202020)
_LOW_BYTES = np.array([(1 << 8 * n) - 1 for n in range(9)], dtype=np.uint64)  # mask of the first n bytes


def sniff(text: str) -> bool:
    """top -b output starts with its `top - HH:MM:SS up ...` line, or (a task table saved without its
    summary, `top -b -n 1 | tail -n +7`) with top's task header."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            return bool(re.match(r"^top - \d{1,2}:\d{2}:\d{2} up ", line)) or is_task_header(line.split())
    return False


def is_task_header(labels: list[str]) -> bool:
    """top's task header: PID, %CPU and COMMAND with a label only top prints (ps prints VSZ/RSS, PRI,
    TIME, never VIRT/RES/SHR, PR or TIME+): ps's sniff leaves such a header to top."""
    return {"PID", "%CPU", "COMMAND"} <= set(labels) and not _TOP_ONLY.isdisjoint(labels)


def parse(
    source: Source, *, host: str | None = None, tz: str = "UTC", started_at: pd.Timestamp | None = None
) -> pd.DataFrame:
    """Parse a `top -b` capture into one row per task (thread under -H) per iteration.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: the host's time zone, for `started_at`'s wall clock (top prints no date and no zone).
        started_at: when the capture started (the manifest's): the day of the first screen's clock is
            the one nearest it (`_common.capture_day`); without it `timestamp` is NaT.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`, `unknown_columns`,
        `notes`, `summaries`.

    Raises:
        ParseError: not top output, another locale, a header without COMMAND last, a malformed line
            mid-file.
    """
    st = _State(Lines(source, KIND))
    try:
        st.run(source)
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
    if started_at is None:
        notes.append(
            "top prints no date: timestamp is NaT, clock_s is seconds since midnight of the capture day"
        )
    if st.headless:
        notes.append("a task table without top's summary lines first: clock_s NaN, no summary values")
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
        "host": text_column([host], np.zeros(n, dtype=np.intp)),
    }
    sizes = [len(chunk["iteration"]) for chunk in st.chunks]
    for col in dict.fromkeys(("iteration", "clock_s", *(c for c in _HEADERS.values() if c in st.present))):
        parts = [chunk.get(col) for chunk in st.chunks]
        if col in _STRINGS:  # NA where a later header dropped the column
            data[col] = _join_strings(
                [(np.full(k, -1), []) if p is None else p for p, k in zip(parts, sizes, strict=True)]
            )
        elif any(p is None for p in parts):  # a column a later header dropped: NA there
            data[col] = pd.concat(
                [pd.Series(_missing(col, k) if p is None else p) for p, k in zip(parts, sizes, strict=True)],
                ignore_index=True,
            )
        elif SCHEMA[col] == "Int64":  # no NA inside a chunk: concatenated as plain integers
            data[col] = pd.array(
                np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]), dtype="Int64"
            )
        else:
            data[col] = np.concatenate(parts)
    clocks = np.asarray(data["clock_s"], dtype=np.float64)
    if started_at is not None and not np.isnan(clocks).all():
        day = capture_day(clocks[~np.isnan(clocks)][0], started_at, tz)
        data["timestamp"] = clock_stamps(clocks, day, tz)
    # copy=False: the columns are new arrays; copying them into one block would only cost time
    df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    df.attrs.update(attrs)
    return df


class _State:
    """The line walk: summary lines open an iteration, the header names the columns, then rows; and
    `_read_piece`, which reads a regular piece of a file at once, leaving the same state behind.

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
        self.cut: tuple[int, int] | None = None  # COMMAND's columns when fields follow it (else None)
        self.dropped = 0
        self.line_no = 0
        self.headless = False  # the capture starts with the task header: no summary, no clock
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
        self.held = (0, "")  # the last line walked (line number, text), not fed yet
        self.next_no = 1  # the line number of the next piece of a file

    def run(self, source: Source) -> None:
        """Walk the capture: a file in pieces of whole iterations, each read at once by `_read_piece` when
        it is regular, line by line otherwise; a stream or a string line by line."""
        try:
            if self.lines.path is not None and isinstance(source, str | Path):
                complete = self._walk_file(self.lines.path)
            else:
                self._walk(self.lines)
                complete = self.lines.last_complete
            held_no, held = self.held
            if held_no:
                if not complete and held.strip():
                    self.cut_last(held_no, held)
                else:
                    self.feed(held_no, held)
        except (UnicodeDecodeError, OSError) as exc:
            raise self.lines.error(self.next_no, "", f"cannot read: {exc}") from None
        except ParseError:
            self._flush()  # the buffered rows come before the bad line: an error in them comes first
            raise
        self._flush()

    def _walk_file(self, path: str) -> bool:
        """Walk a file piece by piece; True if its last line ends with a newline (`Lines.last_complete`)."""
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise ParseError(KIND, path, 0, "", f"cannot read: {exc.strerror}") from None
        complete = True
        with fh:
            for data, end in _pieces(fh):
                complete = data[end - 1] == ord("\n")
                whole = data.rfind(b"\n", 0, end) + 1  # the last line of the capture may be cut
                start = whole if whole > 1 and self._read_piece(data, whole) else 1
                if start < end:
                    # decoded as `Lines` decodes; StringIO ends lines where a text file does (CR too)
                    text = io.StringIO(str(data[start:end], "utf-8", errors="replace"), newline="")
                    self._walk((no, line.rstrip("\r\n")) for no, line in enumerate(text, self.next_no))
        return complete

    def _walk(self, lines: Iterable[tuple[int, str]]) -> None:
        """Feed lines one by one; the last is held back in `held`: only the end of the capture tells
        whether it was cut mid-write."""
        buf, raws, nos = self.buf, self.raws, self.nos
        width = self.width
        held_no, held = self.held
        try:
            for line_no, line in lines:
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
        finally:
            self.held = (held_no, held)
            self.next_no = held_no + 1

    def _read_piece(self, data: bytearray, end: int) -> bool:
        """Read a piece of whole iterations, `data[1:end]` (as `_pieces` gives it, ending with a newline),
        at once if it is regular; False, with nothing changed, otherwise: the line walk then reads it
        and names any bad line.

        Regular: no CR or NUL byte; every iteration is the 7 lines `_BLOCK` matches (the summary as top
        prints it, a blank line, the header: one header in the piece, PID first), then task rows and
        blank lines. A row's bytes before the header's COMMAND column are printable ASCII, cut by the
        columns that are blank in every row into exactly one word per header label before COMMAND (so
        these are the words `split()` finds), and COMMAND starts at its header column with no blank:
        the rest of the line, which the line walk keeps verbatim. Each column is converted once per
        distinct text, as the line walk converts it (`_fast`, else `_value`), so every value reads the
        same or the piece goes line by line.
        """
        if not data.startswith(b"\ntop - ") or data.find(b"\r", 1, end) >= 0 or data.find(b"\0", 1, end) >= 0:
            return False
        blocks = _BLOCK.findall(data, 0, end)
        header = blocks[0][-1] if blocks else b""
        if any(block[-1] != header for block in blocks):
            return False
        labels = header.decode("ascii").split()
        layout = _columns(labels)
        if not _good_header(labels) or labels[-1] != "COMMAND" or layout[0] != "pid":
            return False
        sods = [_sod(block[0]) for block in blocks]
        if None in sods:
            return False
        buf = np.frombuffer(data, dtype=np.uint8, count=end)
        newlines = np.flatnonzero(buf == ord("\n"))  # the first is the one before the piece
        starts = newlines[:-1] + 1
        lengths = np.diff(newlines) - 1
        tops = np.flatnonzero(buf[starts] == ord("t"))  # the `top - ` lines: no other line starts so
        if len(tops) != len(blocks) or lengths.max() > _MAX_LINE:
            return False
        is_row = lengths > 0  # blank lines are skipped, as the line walk skips them
        is_row[(tops[:, None] + np.arange(_BLOCK_LINES)).ravel()] = False
        rows = np.flatnonzero(is_row)
        at = starts[rows]
        cmd_at = len(header.rstrip()) - len(b"COMMAND")
        size = lengths[rows] - cmd_at  # of COMMAND
        if not len(rows) or (size < 1).any():
            return False
        chunk = _task_columns(data, at, size, cmd_at, layout)
        if chunk is None:
            return False

        # Regular: commit, in the order the line walk would
        self._release()
        self._flush()
        self._read_header(self.next_no + _BLOCK_LINES - 1, header.decode("ascii"))
        clocks = []
        for sod in sods:
            if sod < self._prev_sod:  # the clock went back: midnight passed
                self._day += 1
            self._prev_sod = sod
            clocks.append(float(sod + 86400 * self._day))
        first = self.iteration + 1
        self.summaries += _summaries(first, blocks)
        self.iteration += len(blocks)
        self.clock_s = clocks[-1]
        block_of = np.searchsorted(tops, rows, side="right") - 1
        chunk["iteration"] = block_of + first
        chunk["clock_s"] = np.array(clocks)[block_of]
        self.chunks.append(chunk)
        self.n += len(rows)
        self.segs = [(0, self.iteration, self.clock_s)]  # rows that follow continue this iteration
        self.line_no = self.next_no + len(starts) - 1
        self.next_no += len(starts)
        return True

    def _release(self) -> None:
        """Feed the held line: a piece follows, so it was not cut."""
        held_no, held = self.held
        if held_no:
            self.held = (0, "")
            self.feed(held_no, held)

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
            if not is_task_header(line.split()):
                raise lines.error(line_no, line, "not a top capture (no `top - HH:MM:SS up ...` line first)")
            self._open_iteration(math.nan)  # a task table saved without its summary
            self.headless = True
            no_summary = {k: math.nan for k in _SUMMARY_KEYS}
            self.summaries.append(no_summary | {"iteration": 0, "clock": None, "up": None})
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
        self._open_iteration(float(sod + 86400 * self._day))
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

    def _open_iteration(self, clock_s: float) -> None:
        self.iteration += 1
        self.clock_s = clock_s
        self.header = None
        self.width = 0
        self.segs.append((len(self.nos), self.iteration, self.clock_s))

    def _read_header(self, line_no: int, line: str) -> None:
        if line == self._header_line:  # every iteration prints the same header: read it once
            self.header = self.layout
            self.width = len(self.layout)
            return
        labels = line.split()
        if not _good_header(labels):
            raise self.lines.error(
                line_no, line, f"top header without COMMAND, or %CPU after it ({_LOCALE}, or a toprc?)"
            )
        # Fields a toprc adds (P, SWAP, nTH, WCHAN, ENVIRON, ...) come after COMMAND, which top then
        # pads to a fixed width: the labels up to COMMAND are split as usual, COMMAND is cut at the
        # next label, the rest of the row is not read (its labels go to unknown_columns).
        cmd = labels.index("COMMAND")
        columns = _columns(labels[: cmd + 1])
        for label, col in zip(labels, [*columns, *[None] * (len(labels) - cmd - 1)], strict=True):
            if col is None and label not in self.unknown:
                self.unknown.append(label)
        self.present |= {col for col in columns if col is not None}
        cut = None
        if cmd + 1 < len(labels):
            start = line.index(" COMMAND ") + 1
            cut = (start, line.index(labels[cmd + 1], start + len("COMMAND")))
        if columns != self.layout or cut != self.cut:
            self._flush()  # the buffered rows were split by the previous header
            self.layout = columns
            self.cut = cut
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
        if self.cut is not None:  # COMMAND before other fields: its text is cut out of the row
            raws = self.raws[len(self.raws) - len(self.buf) :]
            for parts, raw in zip(self.buf, raws, strict=True):
                parts[-1] = _command_between(raw, *self.cut)
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


def _pieces(fh: BinaryIO) -> Iterator[tuple[bytearray, int]]:
    """A file in pieces of about `_PIECE_BYTES` that end where a `top - ` line starts, or at a line end
    when no iteration starts for long, or at the end of the file: `(data, end)`, the piece being
    `data[1:end]`, after a newline at `data[0]` and with at least 8 more bytes of `data` after it.
    `data` is one buffer, reused for the next piece (fresh memory for each would cost page faults)."""
    data = bytearray(b"\n")
    filled = 1
    while True:
        if len(data) < filled + _PIECE_BYTES + 8:
            data += bytes(filled + _PIECE_BYTES + 8 - len(data))
        read = fh.readinto(memoryview(data)[filled : filled + _PIECE_BYTES])
        if not read:
            break
        filled += read
        cut = data.rfind(b"\ntop - ", 1, filled) + 1
        if not cut and filled > 4 * _PIECE_BYTES:
            cut = data.rfind(b"\n", 1, filled) + 1
        if cut:
            yield data, cut
            data[: filled - cut + 1] = data[cut - 1 : filled]  # the newline before the rest comes first
            filled -= cut - 1
    if filled > 1:
        yield data, filled


def _sod(clock: bytes) -> int | None:
    """Seconds since midnight of a `_BLOCK` clock, as `parse_clock` reads it; None if it is none."""
    h, mi, s = (int(part) for part in clock.split(b":"))
    return h * 3600 + mi * 60 + min(s, 59) if h <= 23 and mi <= 59 and s <= 60 else None


def _summaries(first: int, blocks: list[tuple[bytes, ...]]) -> list[dict[str, object]]:
    """The summary records of `_BLOCK` matches (iterations `first`, ...) with the values the per-line
    reading gives; built column by column (a day holds 86400)."""
    g = list(zip(*blocks, strict=True))
    floats: dict[bytes, float] = {}  # few distinct texts (`0.0`, totals) repeat: each converted once

    def numbers(i: int) -> Iterator[float]:
        floats.update((text, float(text)) for text in set(g[i]).difference(floats))
        return map(floats.__getitem__, g[i])

    mem = [_TO_MIB[unit.decode()] for unit in g[20]]
    swap = [_TO_MIB[unit.decode()] for unit in g[25]]
    columns = [
        range(first, first + len(blocks)),
        map(bytes.decode, g[0]),
        map(bytes.decode, g[1]),
        map(int, g[2]),
        *(numbers(i) for i in range(3, 6)),
        *(map(int, g[i]) for i in range(7, 12)),
        map(b"Threads".__eq__, g[6]),
        *(numbers(i) for i in range(12, 20)),
        *(map(operator.mul, numbers(i), mem) for i in range(21, 25)),
        *(map(operator.mul, numbers(i), swap) for i in range(26, 30)),
    ]
    return [dict(zip(_SUMMARY_KEYS, values, strict=True)) for values in zip(*columns, strict=True)]


def _one_word_each(texts: np.ndarray) -> str | None:
    """Texts of equal width (rows of bytes) joined by newlines without their blanks; None unless each
    is printable ASCII holding exactly one word (the blanks around it are spaces)."""
    blank = texts == ord(" ")
    starts = ~blank
    starts[:, 1:] &= blank[:, :-1]
    if ((texts - 0x20) > 0x7E - 0x20).any() or (starts.sum(axis=1) != 1).any():
        return None
    lines = np.concatenate([texts, np.full((len(texts), 1), ord("\n"), dtype=np.uint8)], axis=1)
    return lines.tobytes().translate(None, b" ")[:-1].decode("ascii")


def _task_columns(
    data: bytearray, at: np.ndarray, size: np.ndarray, cmd_at: int, layout: list[str | None]
) -> dict[str, object] | None:
    """The columns of the task rows that start at offsets `at` of `data` (their COMMAND at `cmd_at`,
    `size` bytes long, at least 1), as `_State._read_piece` describes; None if a row is not regular.
    `data` goes on for 8 bytes after the last row (`_pieces`)."""
    # each row's bytes before COMMAND as 8-byte integers (to compare and hash 8 at once): one gather
    width = -(-cmd_at // 8) * 8
    heads = np.ndarray(len(data) - width + 1, dtype=f"V{width}", buffer=data, strides=(1,))[at]
    heads = heads.view("<u8").reshape(len(at), -1)
    used = np.bitwise_or.reduce(heads ^ _SPACES, axis=0).view(np.uint8)[:cmd_at] != 0  # non-blank in a row
    runs = np.flatnonzero(np.diff(used, prepend=False, append=False)).reshape(-1, 2).tolist()
    if used[-1] or len(runs) != len(layout) - 1:
        return None
    chunk: dict[str, object] = {}
    for (a, b), col in zip(runs, layout, strict=False):
        codes, distinct = _distinct(_keys(heads, a, b))
        joined = _one_word_each(distinct.view(np.uint8)[:, : b - a])
        if joined is None:
            return None
        if col is None:
            continue
        if col in _STRINGS:
            chunk[col] = (codes, joined.split("\n"))
            continue
        values = _fast(col, joined, len(distinct))
        if values is None:  # a rare form (TIME+ `h,mm`) or a bad value: one distinct text at a time
            typed = [_value(col, text) for text in joined.split("\n")]
            if None in typed:
                return None
            values = _typed(col, typed)
        chunk[col] = values.take(codes)
    # COMMAND (even under a repeated label: its text decides how the line walk splits the row), 8 bytes
    # at a time; bytes past the end of the line are masked out (so a word may come from anywhere in
    # `data`), and as `data` holds no NUL byte the first zero byte ends the text
    words = np.ndarray(len(data) - 7, dtype="<u8", buffer=data, strides=(1,))  # the 8 bytes from byte i
    at = at + cmd_at
    last = len(words) - 1
    keys = [
        words[np.minimum(at + k, last)] & _LOW_BYTES[np.clip(size - k, 0, 8)] for k in range(0, size.max(), 8)
    ]
    codes, distinct = _distinct(keys)
    commands = [
        text.tobytes().rstrip(b"\0").decode("utf-8", errors="replace") for text in distinct.view(np.uint8)
    ]
    if any(text[0].isspace() for text in commands):  # `split()` would have taken it off
        return None
    if layout[-1] is not None:
        chunk["command"] = (codes, commands)
    return chunk


def _keys(heads: np.ndarray, a: int, b: int) -> list[np.ndarray]:
    """Bytes `a` to `b` of each row of `heads` (rows of 8-byte integers) as integers of up to 8 bytes."""
    keys = []
    for k in range(a, b, 8):
        word, shift = divmod(k, 8)
        key = heads[:, word] >> np.uint64(8 * shift)
        if shift and word + 1 < heads.shape[1]:
            key |= heads[:, word + 1] << np.uint64(64 - 8 * shift)
        keys.append(key & _LOW_BYTES[min(b - k, 8)])
    return keys


def _distinct(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rows numbered by their distinct tuple of `keys` (uint64 columns): (the code of each row, the
    distinct tuples as rows of a C-ordered matrix, in the order of the codes)."""
    codes, distinct = pd.factorize(keys[0])
    distinct = distinct[:, None]
    for key in keys[1:]:
        more, values = pd.factorize(key)
        codes, pairs = pd.factorize(codes * len(values) + more)
        distinct = np.column_stack([distinct[pairs // len(values)], values[pairs % len(values)]])
    return codes, np.ascontiguousarray(distinct)


def _command_between(row: str, start: int, stop: int) -> str:
    """COMMAND's text when other fields follow it: left-justified from its label's column, padded to
    the next label's. A number wider than its label (right-justified) reaches left of that column:
    then its head is the last word before it, not part of the command."""
    text = row[start:stop]
    if stop < len(row) and row[stop - 1] != " ":
        text = text.rsplit(None, 1)[0] if len(text.split()) > 1 else ""
    return text.rstrip()


def _good_header(labels: list[str]) -> bool:
    """COMMAND, and %CPU before it (the columns after COMMAND are not read)."""
    return "COMMAND" in labels and "%CPU" in labels[: labels.index("COMMAND")]


def _columns(labels: list[str]) -> list[str | None]:
    """The schema column of each header label; None for a label not known, or known but repeated."""
    columns: list[str | None] = []
    seen: set[str] = set()
    for label in labels:
        col = _HEADERS.get(label)
        if col is None or col in seen:
            columns.append(None)
        else:
            seen.add(col)
            columns.append(col)
    return columns


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


def _strings(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """A chunk's string column as (a code per row, the distinct texts): users, states, commands repeat."""
    codes, uniques = pd.factorize(np.array(texts, dtype=object))
    return codes, list(uniques)


def _join_strings(parts: list[tuple[np.ndarray, list[str]]]) -> pd.api.extensions.ExtensionArray:
    """The string column of all chunks (each as `_strings` gives it; code -1: NA), built by one take."""
    table: dict[str, int] = {}
    codes = []
    for local, texts in parts:
        # a local code -1 picks the -1 appended to the chunk's table: NA
        codes.append(np.array([*(table.setdefault(t, len(table)) for t in texts), -1], dtype=np.intp)[local])
    return text_column(list(table), np.concatenate(codes))


def _typed(col: str, values: list[object]) -> np.ndarray | pd.api.extensions.ExtensionArray:
    if col in ("pid", "ni"):
        return pd.array(values, dtype="Int64")
    return np.array(values, dtype=np.float64)


def _missing(col: str, size: int) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """A chunk's column its header did not print: NaN / NA."""
    if col in ("pid", "ni"):
        return pd.array([pd.NA] * size, dtype="Int64")
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

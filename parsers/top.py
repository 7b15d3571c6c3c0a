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
header names; a label this parser does not know goes to `unknown_columns`, its values skipped.
Rows are split on whitespace: every column before COMMAND is one word; COMMAND last is the rest of
the line VERBATIM (spaces, `<script>`, non-ASCII; under LC_ALL=C top prints each byte of a non-ASCII
argument as `?`).

Fields a toprc adds (`f` then `W`: `P`, `nTH`, `SWAP`, `CODE`, `WCHAN`, `ENVIRON`, `nsIPC`, ... ; jc's
"allfields" captures) are shown after COMMAND, which top then pads to a fixed width (`+` where it cut
a longer one): COMMAND is the text between its label's column and the next label's (its padding
dropped; a number wider than its label that reaches left of it is not taken), and the fields after
it are not read (their labels, known or not, go to `unknown_columns`). A field moved before COMMAND
must be one word, as every field top prints there is. %CPU must come before COMMAND.

A task table saved without the summary (`top -b -n 1 | tail -n +7`) starts with the task header:
sniffed as top (its `PR VIRT RES SHR TIME+` are labels ps never prints) and read as iteration 0 with
clock_s NaN, a summary record of NaN and a note.

top prints a time of day and no date: `timestamp` is dated from the capture's start (`started_at`,
the manifest's), else NaT; `clock_s` is the iteration's `top - HH:MM:SS` in seconds since
midnight, +86400 at each midnight rollover, so the caller adds it to the capture date.

Schema:

| column | dtype | header | meaning |
|---|---|---|---|
| timestamp | datetime64[ns, UTC] | | the iteration's clock on the capture's day; NaT without `started_at` |
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
| command | string | COMMAND | verbatim rest of the line (fields after it: see above) |

Sizes: an unsuffixed value is KiB (top's default). `-e m|g|...` scaling (or `E` in a toprc) prints
the values with a suffix letter, which is converted; a capture whose scaling prints unsuffixed
non-KiB values cannot be told apart and is read as KiB. TIME+ is `m:ss.hh` (minutes unbounded),
then `mmmm:ss` (minutes:seconds) when it no longer fits, then `h,mm` (hours,minutes), `Nd+Nh`.
Beside its rows top gives `EXTRAS` (the summaries, below).

The table engine (parsers/_table.py) reads the rows, the summary lines as its aside lines. A row is
read under the last task header above it (a screen whose header was lost: the one before) and
belongs to the iteration of the last `top - ` line above it.

procps-ng 4.0.0 to 4.0.3 print a multi-threaded process's leader under `-H` with the whole process's
%CPU and TIME+ (procps issue 280); the rows are kept as printed, and analyzers/cpu.py `own_cpu` puts
such a leader's %CPU right where threads are added up or judged.

Other locales: top translates its labels and prints decimal commas (de_DE: `load average: 0,54`,
`MiB Spch`, `ZEIT+ BEFEHL`): refused with "capture not taken under LC_ALL=C", never misread.
Tested on: tests/fixtures/top/ (README.md there).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import (
    Extras,
    Parts,
    Source,
    capture_day,
    clock_stamps,
    coerce,
    empty_frame,
    source_size,
    text_column,
)
from ._table import ROW, Block, Layout, Numbers, Table


@dataclass(frozen=True)
class TopExtras(Extras):
    """What top reads beside its rows (see `_common.Extras`); `notes` says that iteration 0's cpu_pct is
    no interval figure, and when a table came without its summary."""

    # one record per iteration, its summary lines: iteration, clock, up (as printed), users,
    # load_1/5/15, tasks_total/running/sleeping/stopped/zombie, threads_mode, cpu_us/sy/ni/id/wa/hi/si/st,
    # mem_total/free/used/buff_cache_mib, swap_total/free/used_mib, mem_avail_mib (memory converted to
    # MiB); NaN when absent or printed overflowed as `12345678+total`
    summaries: list[dict] = field(default_factory=list)
    # whether -H leader rows hold the whole process's %CPU and TIME+ (procps issue 280); None: unknown
    leader_holds_process: bool | None = None


EXTRAS = TopExtras

KIND = "top"
DATED_BY_START = True  # top prints a time of day only: `parse(started_at=...)` dates the rows
READS_TOOL_VERSION = True  # `parse(tool_version=...)`: a release's known flaw (`leader_holds_process`)
_PROCPS = re.compile(r"procps(?:-ng)? (?:version )?(\d+)\.(\d+)\.(\d+)")

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
_VALUES = list(dict.fromkeys(_HEADERS.values()))  # the columns read from rows, in schema order
_STRINGS = frozenset({"user", "pr", "state", "command"})
_INTEGERS = frozenset({"pid", "ni"})  # read as integers, held as float64 (NaN: a header without it)
_NUMBERS = frozenset({"cpu_pct", "mem_pct"})
_LOCALE = "capture not taken under LC_ALL=C"
_NOT_TOP = "not a top capture (no `top - HH:MM:SS up ...` line first)"
_TOP_ONLY = frozenset({"PR", "VIRT", "RES", "SHR", "TIME+"})
# Whole lines, read one at a time or all of a kind at once (joined by newlines: a blank is `[^\S\n]`)
_TOP = re.compile(
    r"^top - ((\d{1,2}):(\d{2}):(\d{2})) up[^\S\n]+(.+?),[^\S\n]+(\d{1,9}) users?,[^\S\n]+"
    r"load average: (\d+\.\d+), (\d+\.\d+), (\d+\.\d+)[^\S\n]*$",
    re.MULTILINE,
)
_TASKS = re.compile(
    r"^(Tasks|Threads):[^\S\n]*(\d{1,12}) total,[^\S\n]*(\d{1,12}) running,[^\S\n]*(\d{1,12}) sleeping,"
    r"[^\S\n]*(\d{1,12}) stopped,[^\S\n]*(\d{1,12}) zombie[^\S\n]*$",
    re.MULTILINE,
)
_TOP_LINE, _TASKS_LINE, _CPU_LINE, _OTHER_LINE, _MEM_LINE = range(5)  # summary lines by how they start
# how each line starts (`%Cpu0`, `%Node0`: summary lines not read; "": none), one match a line
_START = re.compile(
    r"^(top - |Tasks:|Threads:|%Cpu\(s\):|%Cpu|%Node|[KMGTPE]iB (?:Mem|Swap)[^\S\n]*:|).*", re.MULTILINE
)
_KINDS = {"top - ": _TOP_LINE, "Tasks:": _TASKS_LINE, "Threads:": _TASKS_LINE, "%Cpu(s):": _CPU_LINE, "": -1}
_KINDS |= {"%Cpu": _OTHER_LINE, "%Node": _OTHER_LINE}  # any other: `KiB Mem :` ...
_CPU_PAIR = re.compile(r"(\d+\.\d+)[^\S\n]+(us|sy|ni|id|wa|hi|si|st)\b")  # a line not of the usual form
_CPU_LABELS = ("us", "sy", "ni", "id", "wa", "hi", "si", "st")
_CPU_USUAL = r"%Cpu\(s\):" + ",".join(rf" *[0-9]+\.[0-9]+ {label}" for label in _CPU_LABELS) + " *"
_CPU_ALL = re.compile(rf"{_CPU_USUAL}(?:\n{_CPU_USUAL})*+")  # %Cpu(s) lines of the usual form, joined
_CPU_WORDS = ("%Cpu(s):" + "".join(_CPU_LABELS) + ",").encode()  # all but their numbers
_MEM_PAIR = re.compile(r"(\d+(?:\.\d+)?)(\+?)\s*(total|free|used|buff/cache|avail Mem)")
_TO_MIB = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2, "PiB": 1024.0**3, "EiB": 1024.0**4}
_COMMA_DECIMAL = re.compile(r"\d,\d")
# (memory line, label) -> summary key (top prints `avail Mem` on its Swap line)
_MEM_KEYS = {("Mem", label): f"mem_{label}_mib" for label in ("total", "free", "used")}
_MEM_KEYS[("Mem", "buff/cache")] = "mem_buff_cache_mib"
_MEM_KEYS |= {("Swap", label): f"swap_{label}_mib" for label in ("total", "free", "used")}
_MEM_KEYS[("Swap", "avail Mem")] = "mem_avail_mib"
_TASK_KEYS = ("tasks_total", "tasks_running", "tasks_sleeping", "tasks_stopped", "tasks_zombie")
# a summary record's keys, in order
_SUMMARY_KEYS = ["iteration", "clock", "up", "users", "load_1", "load_5", "load_15", *_TASK_KEYS]
_SUMMARY_KEYS += ["threads_mode", *(f"cpu_{label}" for label in _CPU_LABELS), *_MEM_KEYS.values()]
# Value forms of the columns the engine reads as text (ASCII digits: any other digit is refused)
_SIZE = r"([0-9]{1,20}(?:\.[0-9]{1,6})?)([kmgtpe]?)"  # KiB, or scaled by its suffix
_ONE_SIZE = re.compile(_SIZE)
_ALL_SIZES = re.compile(rf"{_SIZE}(?:\n{_SIZE})*+")
_SIZE_KB = {"": 1.0, "k": 1.0, "m": 1024.0, "g": 1024.0**2, "t": 1024.0**3, "p": 1024.0**4, "e": 1024.0**5}
_SUFFIX_KB = np.ones(256)  # last byte of a size -> KiB factor (a digit: 1)
_SUFFIX_KB[[ord(letter) for letter in "kmgtpe"]] = [_SIZE_KB[letter] for letter in "kmgtpe"]
_TIME_HUND = r"([0-9]{1,9}):([0-5][0-9])\.([0-9]{2})"  # minutes:seconds.hundredths, up to 10000 minutes
_ONE_HUNDREDTHS = re.compile(_TIME_HUND)
_ALL_HUNDREDTHS = re.compile(rf"{_TIME_HUND}(?:\n{_TIME_HUND})*+")
_TIME_SEPARATORS = str.maketrans(":.", "\n\n")
_TIME_FORMS = (  # then minutes:seconds, hours,minutes, days+hours: (form, seconds of its two numbers)
    (re.compile(r"([0-9]{1,9}):([0-5][0-9])"), (60, 1)),
    (re.compile(r"([0-9]{1,9}),([0-5][0-9])"), (3600, 60)),
    (re.compile(r"([0-9]{1,9})d\+([0-9]{1,2})h"), (86400, 3600)),
)


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
    source: Source,
    *,
    host: str | None = None,
    tz: str = "UTC",
    started_at: pd.Timestamp | None = None,
    tool_version: str | None = None,
) -> pd.DataFrame:
    """Parse a `top -b` capture into one row per task (thread under -H) per iteration.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: the host's time zone, for `started_at`'s wall clock (top prints no date and no zone).
        started_at: when the capture started (the manifest's): the day of the first screen's clock is
            the one nearest it (`_common.capture_day`); without it `timestamp` is NaT.
        tool_version: `top -V`'s line (the manifest's), for `leader_holds_process`.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: not top output, another locale, a header without COMMAND last, a malformed line
            mid-file.
    """
    df = _Top(source).run(host, tz, started_at)
    df.attrs["leader_holds_process"] = leader_holds_process(tool_version)
    return df


def leader_holds_process(tool_version: str | None) -> bool | None:
    """Whether this top prints a multi-threaded process's leader under -H with the process's CPU:
    procps-ng 4.0.0 to 4.0.3 do (a change for the leader's autogroup read /proc/PID/stat, the whole
    process's; 4.0.4 went back to /proc/PID/task/PID/stat). None: not a procps version it names."""
    m = _PROCPS.search(tool_version or "")
    if m is None:
        return None
    return (4, 0, 0) <= tuple(map(int, m.groups())) <= (4, 0, 3)


@dataclass(frozen=True)
class _Plan:
    """What the rows under a task header are: the schema column of each field up to COMMAND (None: not
    read), and COMMAND's columns when fields follow it (`cut`, else None)."""

    columns: tuple[str | None, ...]
    cut: tuple[int, int] | None


class _Top:
    """The format for the table engine: every line is in its runs of rows; the summary lines (a
    letter or `%` first) are its aside lines, each `top - ` line opening an iteration; the task
    header holds `PID`; a row starts with a blank or a digit (its right-aligned PID), or with a letter
    when a toprc puts another field first (`aside` leaves such a line to the rows)."""

    structure_bytes = b""
    aside_bytes = (string.ascii_letters + "%").encode()
    header_words = (b"PID",)

    def __init__(self, source: Source):
        numbers = Numbers()
        numbers.comma_refusal = f"decimal comma: {_LOCALE}"
        self.table = Table(source, KIND, self, numbers)
        self.unknown: list[str] = []
        self.present: set[str] = set()
        self.headless = False
        self.iteration_lines: list[int] = []  # each iteration's `top - ` line (a headless table's header)
        # summary values by key: (the `top - ` line of each one's iteration, the values)
        self.kept: dict[str, list[tuple[np.ndarray, list]]] = {}
        # iteration starts (`top - ` lines, or a headless table's header): the last one before this
        # stretch of the file, then this stretch's; the iteration number of the first; their clocks
        self.starts = np.empty(0, dtype=np.int64)
        self.start_iteration = 0
        self.clocks = np.empty(0, dtype=np.float64)
        self._day = 0
        self._prev_sod = -1
        self.pending: ParseError | None = None  # the first bad summary line, raised in file order
        self.held: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []  # this chunk's blocks
        # iteration, clock_s, the values (strings as codes); a task row takes 24 bytes at least (12 fields)
        size = source_size(source, self.table.lines)
        self.parts = Parts(2 + len(_VALUES), capacity=size // 24)
        self.texts: dict[str, dict[str, int]] = {col: {} for col in _STRINGS}

    def run(self, host: str | None, tz: str, started_at: pd.Timestamp | None) -> pd.DataFrame:
        try:
            self.table.run()
            self.chunk_end()
        except ParseError as exc:  # a bad summary line above it comes first
            raise min(filter(None, (exc, self.pending)), key=lambda e: e.line_no) from None
        self._check(None)
        cut = self.table.cut
        # a cut last line is dropped and counted (a number or the command may be a prefix of itself)
        if cut is not None and not self.iteration_lines and not cut[1].startswith("top - "):
            raise self.table.error(*cut, _NOT_TOP)
        return self._frame(host, tz, started_at)

    def _check(self, line_no: int | None) -> None:
        """Raise the pending summary-line error once the file is read past it (None: read to the end)."""
        if self.pending is not None and (line_no is None or self.pending.line_no < line_no):
            raise self.pending

    def _bad(self, line_no: int, line: str, reason: str) -> ParseError:
        if _COMMA_DECIMAL.search(line):
            return self.table.error(line_no, line, f"decimal comma: {_LOCALE}")
        return self.table.error(line_no, line, f"{reason} ({_LOCALE}?)")

    # ------------------------------------------------------------ the summary lines

    def aside(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """The summary lines among those starting with a letter or `%` (any other is a task row), read
        into the iteration they follow. An unreadable one is held (`pending`) until the rows before it
        are read, so the first bad line of the file is the one named."""
        joined = "\n".join(texts)  # how each line starts: one regex over all (each match a whole line)
        starts, uniq = pd.factorize(np.array(_START.findall(joined), dtype=object))
        kinds = np.array([_KINDS.get(start, _MEM_LINE) for start in uniq], dtype=np.int8)[starts]
        if self.pending is None:
            try:
                self._summaries(line_nos, texts, kinds)
            except ParseError as exc:
                self.pending = exc
        return kinds >= 0

    def _summaries(self, line_nos: np.ndarray, texts: list[str], kinds: np.ndarray) -> None:
        """Each kind of summary line of a stretch of the file read at once, its values kept by the line
        of the iteration's `top - ` line (`_records` makes the records)."""
        errors: list[ParseError] = []
        index = {
            kind: np.flatnonzero(kinds == kind) for kind in (_TOP_LINE, _TASKS_LINE, _CPU_LINE, _MEM_LINE)
        }
        at = {kind: line_nos[rows] for kind, rows in index.items()}
        of = {kind: [texts[i] for i in rows.tolist()] for kind, rows in index.items()}  # each kind's lines
        if len(at[_TOP_LINE]):
            found = self._each(_TOP, at[_TOP_LINE], of[_TOP_LINE], errors, "unreadable `top - ` line")
            values = np.array(found, dtype=object).reshape(-1, 9)
            clocks = self._clocks(at[_TOP_LINE], of[_TOP_LINE], values, errors)
            tops, values = at[_TOP_LINE][: len(clocks)], values[: len(clocks)]
            self._keep(tops, "clock", values[:, 0].tolist())
            self._keep(tops, "up", values[:, 4].tolist())
            self._keep(tops, "users", values[:, 5].astype(np.int64).tolist())
            for k, key in enumerate(("load_1", "load_5", "load_15"), 6):
                self._keep(tops, key, values[:, k].astype(np.float64).tolist())
            self._keep(tops, "threads_mode", [False] * len(tops))
            self.start_iteration += max(len(self.starts) - 1, 0)
            self.starts = np.concatenate((self.starts[-1:], tops))
            self.clocks = np.concatenate((self.clocks[-1:], clocks))
            self.iteration_lines += tops.tolist()
        # the other lines: each in the iteration of the last `top - ` line above it
        for kind in (_TASKS_LINE, _CPU_LINE, _MEM_LINE):
            above = np.searchsorted(self.starts, at[kind], side="right") - 1
            if len(above) and above[0] < 0:
                errors.append(self.table.error(int(at[kind][0]), of[kind][0], _NOT_TOP))
                continue
            owner = self.starts[above]
            if kind == _TASKS_LINE:
                found = self._each(_TASKS, at[kind], of[kind], errors, "unreadable Tasks:/Threads: line")
                values = np.array(found, dtype=object).reshape(-1, 6)
                owner = owner[: len(found)]
                self._keep(owner, "threads_mode", (values[:, 0] == "Threads").tolist())
                for k, key in enumerate(_TASK_KEYS, 1):
                    self._keep(owner, key, values[:, k].astype(np.int64).tolist())
            elif kind == _CPU_LINE:
                self._cpu(owner, at[kind], of[kind], errors)
            else:
                self._by_line(owner, at[kind], of[kind], errors, _memory_values)
        if errors:
            raise min(errors, key=lambda exc: exc.line_no)

    def _each(
        self, rx: re.Pattern[str], at: np.ndarray, texts: list[str], errors: list[ParseError], what: str
    ) -> list[tuple[str, ...]]:
        """`rx`'s groups in each of `texts` (lines `at`), all matched at once; up to the first that does
        not match, which is added to `errors`."""
        found = rx.findall("\n".join(texts))
        if len(found) == len(texts):  # each line matches at most once (`rx` spans one line)
            return found
        k = next(k for k, text in enumerate(texts) if not rx.match(text))
        errors.append(self._bad(int(at[k]), texts[k], what))
        return found[:k]

    def _clocks(
        self, at: np.ndarray, texts: list[str], found: np.ndarray, errors: list[ParseError]
    ) -> np.ndarray:
        """The `top - ` lines' clocks in seconds since the first one's midnight (+86400 each time the
        clock goes back), up to the first unreadable one (added to `errors`). `found`: `_TOP`'s groups."""
        hms = found[:, 1:4].astype(np.int64)
        wrong = (hms[:, 0] > 23) | (hms[:, 1] > 59) | (hms[:, 2] > 60)  # as `parse_clock` reads them
        if wrong.any():
            k = int(np.argmax(wrong))
            errors.append(self.table.error(int(at[k]), texts[k], f"unreadable clock {found[k, 0]!r}"))
            hms = hms[:k]
        sod = hms[:, 0] * 3600 + hms[:, 1] * 60 + np.minimum(hms[:, 2], 59)
        day = self._day + np.cumsum(sod < np.concatenate(([self._prev_sod], sod[:-1])))
        if len(sod):
            self._day, self._prev_sod = int(day[-1]), int(sod[-1])
        return (sod + 86400 * day).astype(np.float64)

    def _cpu(self, owner: np.ndarray, at: np.ndarray, texts: list[str], errors: list[ParseError]) -> None:
        """`%Cpu(s):` lines (each second's differs): all at once when all are of the usual form."""
        joined = "\n".join(texts)
        if not _CPU_ALL.fullmatch(joined):
            self._by_line(owner, at, texts, errors, _cpu_values)
            return
        numbers = np.fromstring(joined.encode().translate(None, _CPU_WORDS), sep=" ")
        values = numbers.reshape(-1, len(_CPU_LABELS))
        for k, label in enumerate(_CPU_LABELS):
            self._keep(owner, f"cpu_{label}", values[:, k].tolist())

    def _by_line(
        self,
        owner: np.ndarray,
        at: np.ndarray,
        texts: list[str],
        errors: list[ParseError],
        read: Callable[[str], dict[str, float] | str],
    ) -> None:
        """Summary lines read one by one (`read`: a line's values by key, or what is wrong with it), each
        distinct line once (a Swap line rarely changes); up to the first bad one, added to `errors`."""
        code = {text: k for k, text in enumerate(dict.fromkeys(texts))}
        codes = np.array([code[text] for text in texts], dtype=np.int64)
        found = [read(text) for text in code]
        wrong = [k for k, values in enumerate(found) if isinstance(values, str)]
        if wrong:
            k = int(np.flatnonzero(np.isin(codes, wrong))[0])
            errors.append(self.table.error(int(at[k]), texts[k], found[codes[k]]))  # type: ignore[arg-type]
            codes, owner = codes[:k], owner[:k]
        good = [values if isinstance(values, dict) else {} for values in found]  # a bad one: none left
        for key in dict.fromkeys(key for values in good for key in values):
            has = np.array([key in values for values in good])[codes]
            value = np.array([values.get(key, math.nan) for values in good])
            self._keep(owner[has], key, value[codes[has]].tolist())

    def _keep(self, lines: np.ndarray, key: str, values: list) -> None:
        self.kept.setdefault(key, []).append((lines, values))

    def _records(self) -> list[dict[str, object]]:
        """One summary record per iteration (a headless table's first: clock and up None, the rest NaN)."""
        starts = np.array(self.iteration_lines, dtype=np.int64)
        n = len(starts)
        columns = {key: np.full(n, math.nan, dtype=object) for key in _SUMMARY_KEYS}
        columns["iteration"] = np.arange(n, dtype=object)
        if self.headless:
            columns["clock"][0] = columns["up"][0] = None
        for key, parts in self.kept.items():
            for lines, values in parts:
                columns[key][np.searchsorted(starts, lines)] = values
        rows = zip(*(column.tolist() for column in columns.values()), strict=True)
        return [dict(zip(_SUMMARY_KEYS, row, strict=True)) for row in rows]

    # ------------------------------------------------------------ the task table

    def layout(self, line_no: int, text: str) -> Layout:
        self._check(line_no)
        labels = text.split()
        if "PID" not in labels or labels[0].isdigit():
            return ROW  # a task row whose command names PID
        if not len(self.starts) or self.starts[0] > line_no:  # no `top - ` line above
            if not is_task_header(labels):
                raise self.table.error(line_no, text, _NOT_TOP)
            self._headless(line_no)
        if not ("COMMAND" in labels and "%CPU" in labels[: labels.index("COMMAND")]):
            raise self.table.error(
                line_no, text, f"top header without COMMAND, or %CPU after it ({_LOCALE}, or a toprc?)"
            )
        cmd = labels.index("COMMAND")
        columns: list[str | None] = []  # None: a label not known, or a column repeated
        for label in labels[: cmd + 1]:
            col = _HEADERS.get(label)
            columns.append(col if col not in columns else None)
        after = [None] * (len(labels) - cmd - 1)  # fields after COMMAND: not read
        for label, col in zip(labels, columns + after, strict=True):
            if col is None and label not in self.unknown:
                self.unknown.append(label)
        self.present |= {col for col in columns if col is not None}
        cut = None
        if after:
            start = text.index(" COMMAND ") + 1
            cut = (start, text.index(labels[cmd + 1], start + len("COMMAND")))
        kinds = "".join("i" if col in _INTEGERS else "f" if col in _NUMBERS else "t" for col in columns)
        return Layout(kinds, labels=(0,), key=_Plan(tuple(columns), cut), rest=True)

    def _headless(self, line_no: int) -> None:
        """A task table without the summary lines first: iteration 0, no clock, a summary of NaN."""
        self.headless = True
        self.iteration_lines.insert(0, line_no)
        self.starts = np.concatenate(([line_no], self.starts))
        self.clocks = np.concatenate(([math.nan], self.clocks))

    def structure(self, line_no: int, text: str) -> None:
        """A line before any task header that is no summary line."""
        self._check(line_no)
        if not self.iteration_lines:
            raise self.table.error(line_no, text, _NOT_TOP)
        raise self._bad(line_no, text, "not a top summary line or task header")

    def rows(self, block: Block) -> None:
        """A block's rows as schema columns (strings as codes), their iteration and clock; held until
        `chunk_end` puts the chunk's in file order."""
        nos = block.line_nos
        self._check(int(nos[-1]))
        plan: _Plan = block.layout.key  # type: ignore[assignment]
        at = np.searchsorted(self.starts, nos, side="right") - 1
        out = {"iteration": self.start_iteration + at, "clock_s": self.clocks[at]}
        bad: list[tuple[int, str]] = []  # (row, reason): the first is raised
        for cells, col in zip(block.fields, plan.columns, strict=True):
            if col is None:
                continue
            if col in _STRINGS:
                table = self.texts[col]
                remap = np.array(
                    [table.setdefault(t, len(table)) for t in cells.categories.tolist()], dtype=np.int64
                )
                out[col] = remap[cells.codes]
                continue
            numeric = col in _INTEGERS or col in _NUMBERS
            if numeric:
                values = np.asarray(cells, dtype=np.float64)
                # as top prints them: no sign but NI's, at most 10 digits
                wrong = (np.abs(values) >= 1e10) | ((values < 0) if col != "ni" else False)
            else:  # sizes and TIME+, read as text: each distinct text converted once
                converted = (_sizes if col != "time_s" else _seconds)(cells.categories.tolist())
                values = converted[cells.codes]
                wrong = np.isnan(values)
            if wrong.any():
                row = int(np.argmax(wrong))
                shown = _shown(values[row]) if numeric else cells[row]
                bad.append((row, f"unreadable {col} value {shown!r}"))
            out[col] = values
        if plan.cut is not None:  # COMMAND before other fields: its text is cut out of the row
            lines = block.data.decode("utf-8", "replace").split("\n")[: len(nos)]
            table, (start, stop) = self.texts["command"], plan.cut
            codes = [table.setdefault(_command_between(line, start, stop), len(table)) for line in lines]
            out["command"] = np.array(codes, dtype=np.int64)
        if bad:
            row, reason = min(bad)
            raise self.table.error(int(nos[row]), block.text(row), reason)
        self.held.append((nos, out))

    def chunk_end(self) -> None:
        """The held rows in file order (blocks of several headers' layouts interleave), as parts."""
        held, self.held = self.held, []
        if not held:
            return
        self._check(int(max(nos[-1] for nos, _ in held)) + 1)
        columns = [[] for _ in range(2 + len(_VALUES))]
        for nos, out in held:
            n = len(nos)
            for k, col in enumerate(("iteration", "clock_s", *_VALUES)):
                default = -1 if col in _STRINGS else math.nan
                columns[k].append(out[col] if col in out else np.full(n, default))
        if len(held) == 1:
            self.parts.add([parts[0] for parts in columns])
            return
        order = np.argsort(np.concatenate([nos for nos, _ in held]), kind="stable")
        self.parts.add([np.concatenate(parts)[order] for parts in columns])

    # ------------------------------------------------------------ the frame

    def _frame(self, host: str | None, tz: str, started_at: pd.Timestamp | None) -> pd.DataFrame:
        n = self.parts.rows
        notes = []
        if n:
            notes.append(
                "iteration 0's cpu_pct is CPU time since each task started (top's first screen), "
                "not an interval figure: use iterations >= 1 for rates"
            )
        if started_at is None:
            notes.append(
                "top prints no date: timestamp is NaT, clock_s is seconds since midnight of the capture day"
            )
        if self.headless:
            notes.append("a task table without top's summary lines first: clock_s NaN, no summary values")
        attrs = {
            "dropped_lines": int(self.table.cut is not None),
            "unknown_columns": self.unknown,
            "notes": notes,
            "summaries": self._records(),
        }
        if not n:
            df = empty_frame(SCHEMA)
        else:
            iteration, clocks, *values = self.parts.columns()
            data: dict[str, object] = {
                "timestamp": pd.Series(pd.NaT, index=range(n), dtype="datetime64[ns, UTC]"),
                "host": text_column([host], np.zeros(n, dtype=np.intp)),
                "iteration": _integers(iteration),
                "clock_s": clocks,
            }
            for col, column in zip(_VALUES, values, strict=True):
                if col not in self.present:
                    continue
                if col in _STRINGS:
                    data[col] = text_column(list(self.texts[col]), column)
                elif col in _INTEGERS:
                    data[col] = _integers(column)  # NaN (a header without it): NA
                else:
                    data[col] = column
            if started_at is not None and not np.isnan(clocks).all():
                day = capture_day(clocks[~np.isnan(clocks)][0], started_at, tz)
                data["timestamp"] = clock_stamps(clocks, day, tz)
            # copy=False: the columns are new arrays; copying them into one block would only cost time
            df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
        df.attrs.update(attrs)
        return df


def _cpu_values(text: str) -> dict[str, float] | str:
    """A `%Cpu(s):` line's values by summary key, or what is wrong with it."""
    if _COMMA_DECIMAL.search(text):
        return f"decimal comma: {_LOCALE}"
    pairs = _CPU_PAIR.findall(text)
    if not pairs:
        return "unreadable %Cpu(s) line"
    return {f"cpu_{label}": float(value) for value, label in pairs}


def _memory_values(text: str) -> dict[str, float] | str:
    """A memory line's values in MiB by summary key (NaN: printed overflowed, `12345678+total`), or what
    is wrong with it."""
    if _COMMA_DECIMAL.search(text):
        return f"decimal comma: {_LOCALE}"
    pairs = _MEM_PAIR.findall(text)
    if not pairs:
        return "unreadable memory line"
    to_mib, table = _TO_MIB[text[:3]], text[4:8].strip(" :")  # `MiB Swap: ... avail Mem`
    found = [(_MEM_KEYS.get((table, label)), value, plus) for value, plus, label in pairs]
    return {key: math.nan if plus else float(value) * to_mib for key, value, plus in found if key is not None}


def _integers(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Integers held as float64 (exact: below 1e10) as Int64, NaN as NA: the masked array built at once
    (`pd.array` checks each value is whole, a tenth of the frame's time)."""
    missing = np.isnan(values)
    return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)


def _shown(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _sizes(texts: list[str]) -> np.ndarray:
    """KiB of each size as printed (`_SIZE`), NaN where a text is none; one regex and one numpy call
    for all when every text reads."""
    joined = "\n".join(texts)
    if _ALL_SIZES.fullmatch(joined):
        data = joined.encode("ascii")
        digits = data.translate(None, b"kmgtpe")
        values = np.fromstring(digits, dtype=np.float64, sep="\n")
        if len(digits) != len(data):  # `8193.3g`: a suffix or a digit before each newline (and last)
            raw = np.frombuffer(data, dtype=np.uint8)
            values *= _SUFFIX_KB[raw[np.append(np.flatnonzero(raw == 10) - 1, len(raw) - 1)]]
        return values
    out = np.full(len(texts), np.nan)
    for i, text in enumerate(texts):
        if m := _ONE_SIZE.fullmatch(text):
            out[i] = float(m[1]) * _SIZE_KB[m[2]]
    return out


def _seconds(texts: list[str]) -> np.ndarray:
    """CPU seconds of each TIME+ as printed (`_TIME_FORMS`), NaN where a text is none; the common
    `m:ss.hh` of all texts at once."""
    joined = "\n".join(texts)
    if _ALL_HUNDREDTHS.fullmatch(joined):
        mss = np.fromstring(joined.translate(_TIME_SEPARATORS), dtype=np.int64, sep="\n").reshape(-1, 3)
        return (mss[:, 0] * 60 + mss[:, 1]).astype(np.float64) + mss[:, 2] / 100
    out = np.full(len(texts), np.nan)
    for i, text in enumerate(texts):
        if m := _ONE_HUNDREDTHS.fullmatch(text):
            out[i] = int(m[1]) * 60 + int(m[2]) + int(m[3]) / 100  # the arithmetic of the line above
            continue
        for form, (first, second) in _TIME_FORMS:
            if m := form.fullmatch(text):
                out[i] = float(int(m[1]) * first + int(m[2]) * second)
                break
    return out


def _command_between(row: str, start: int, stop: int) -> str:
    """COMMAND's text when other fields follow it: left-justified from its label's column, padded to
    the next label's. A number wider than its label (right-justified) reaches left of that column:
    then its head is the last word before it, not part of the command."""
    text = row[start:stop]
    if stop < len(row) and row[stop - 1] != " ":
        text = text.rsplit(None, 1)[0] if len(text.split()) > 1 else ""
    return text.rstrip()

"""ps: procps-ng `ps auxww` (what perfkit runs, under `LC_ALL=C`), one row per process.

Reads:

- `ps auxww` / `ps aux` / `ps auxw --sort=%cpu` (seed 000's script) / `ps uww -p PID,...`: the BSD
  user format `USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND` (procps-ng 4.0.2 tested);
- any `ps -o`/`-eo` custom header (`ps -eo pid,ppid,comm,args`), `ps -f` (`UID ... STIME TTY TIME
  CMD`): columns are mapped by their header names, never by position. A header this parser does
  not know is listed in `df.attrs["unknown_columns"]` and its values skipped, not guessed.

Rows are split on whitespace: every column but the last is one word; the last column is the rest
of the line, VERBATIM (spaces, quotes, `<script>`, non-ASCII: escaping is the renderer's job). A
value wider than its column (mariadbd's VSZ `8591349976`) pushes the rest of the line right; splitting
on whitespace, not on fixed widths, keeps every column right. `auxw` (one `w`) cuts COMMAND at the
terminal width: what is there is kept. Under `LC_ALL=C`, ps prints each byte of a non-ASCII
argument as `?` (`数据库` -> `?????????`); a UTF-8 locale keeps the characters. ps translates neither
its header nor its numbers (de_DE prints `0.5`, not `0,5`, procps-ng 4.0.2): a number with a decimal
comma is refused ("capture not taken under LC_ALL=C"), never read as another number.

Schema (one row per process line, in file order):

| column | dtype | header(s) | meaning |
|---|---|---|---|
| host | string | | the `host` argument |
| user | string | USER, UID (`-f`) | verbatim: a name longer than 8 chars shows as `systemd+` or the uid |
| pid | Int64 | PID | |
| cpu_pct | float64 | %CPU | CPU time / elapsed time since the process started (not a current rate) |
| mem_pct | float64 | %MEM | RSS / physical memory |
| vsz_kb | Int64 | VSZ | virtual size, KiB (ps prints KiB) |
| rss_kb | Int64 | RSS, RSZ | resident set, KiB |
| tty | string | TTY, TT | `?` for none |
| stat | string | STAT | state and flags (`Ssl`, `R+`, `I<`) |
| start | string | START, STIME | verbatim: `07:02` (today), `Nov22` (this year), `2025` (older) |
| time | string | TIME | CPU time as printed: `0:18`, `123:45` (aux: M:SS), `1-02:03:04` (-o) |
| cpu_time_s | float64 | TIME | `time` in seconds |
| command | string | COMMAND, CMD, ARGS | the last of these columns, verbatim |

A column the header lacks is NA. `ps -eo pid,ppid,comm,args` prints `COMMAND` twice: the earlier one
(`comm`, the 15-character kernel name) is listed in unknown_columns and skipped. A `comm` that
contains a space in a non-last column cannot be told from the next column: use `args` last.
Columns whose values hold several words (`LSTART`, `STARTED`) are refused at the header.
A header with top's labels (`PR`, `VIRT`, `RES`, `SHR`, `TIME+`: a top task table saved without its
summary) is not sniffed as ps: it is top's (`top.is_task_header`).

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `unknown_columns` (header names not
mapped), `notes`. ps prints no date: the capture time is the manifest's.

The table engine (parsers/_table.py) splits the rows by the header's layout; this module checks what
is ps's own (no signs, times, printable text) on each block's distinct values.
Tested on: tests/fixtures/ps/ (README.md there).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ._common import Parts, Source, coerce, empty_frame, text_column
from ._table import ROW, Block, Layout, Numbers, Table
from .top import is_task_header

KIND = "ps"

SCHEMA: dict[str, str] = {
    "host": "string",
    "user": "string",
    "pid": "Int64",
    "cpu_pct": "float64",
    "mem_pct": "float64",
    "vsz_kb": "Int64",
    "rss_kb": "Int64",
    "tty": "string",
    "stat": "string",
    "start": "string",
    "time": "string",
    "cpu_time_s": "float64",
    "command": "string",
}

# ps header label -> schema column (procps-ng's labels for the format specifiers).
_HEADERS = {
    "USER": "user",
    "UID": "user",  # `ps -f` prints the name under UID
    "PID": "pid",
    "%CPU": "cpu_pct",
    "%MEM": "mem_pct",
    "VSZ": "vsz_kb",
    "RSS": "rss_kb",
    "RSZ": "rss_kb",
    "TTY": "tty",
    "TT": "tty",
    "STAT": "stat",
    "START": "start",
    "STIME": "start",
    "TIME": "time",
}
_COMMAND = {"COMMAND", "CMD", "ARGS"}
# the layout's field kind of each schema column (`_table.Layout`); any other column is text
_KINDS = {"pid": "i", "vsz_kb": "i", "rss_kb": "i", "cpu_pct": "f", "mem_pct": "f"}
_DTYPES = {"i": np.int64, "f": np.float64}  # how the engine reads each kind
_TEXTS = ("user", "tty", "stat", "start", "time", "command")
# Values of several words: a whitespace split would shift every later column.
_MULTIWORD = {"LSTART", "STARTED"}
# `M:SS` (minutes unbounded, aux), `H:MM:SS` or `D-HH:MM:SS` (-o time).
_TIME = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]\d)(?::([0-5]\d))?$")
# lines of times, each read at once by `_seconds` (digits bounded: no int64 overflow)
_TIMES = re.compile(r"(?:(?:[0-9]{1,9}-[0-9]{1,9}:[0-5][0-9]:|[0-9]{1,12}:(?:[0-5][0-9]:)?)[0-5][0-9]\n)*")
# A header: ps labels only (upper case, digits, % + - _ :), at least one we know.
_LABEL = re.compile(r"^[A-Z%][A-Z0-9%+_:-]*$")
_NOT_PS = "not a ps capture (no ps header line with PID first)"
_LOCALE = "decimal comma: capture not taken under LC_ALL=C"  # ps prints `0.5` in every locale


def sniff(text: str) -> bool:
    """ps output starts with its header: ps labels only, PID among them, and two known ones more."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            labels = line.split()
            known = sum(1 for t in labels if t in _HEADERS or t in _COMMAND)
            ours = "PID" in labels and known >= 3 and all(_LABEL.match(t) for t in labels)
            return ours and not is_task_header(labels)  # `PR NI VIRT RES SHR ... TIME+`: top's task table
    return False


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a ps capture into one row per process.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (ps prints no date); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`, `unknown_columns`, `notes`.

    Raises:
        ParseError: no ps header first, a header with multi-word columns, a malformed row mid-file,
            a decimal comma (capture not taken under LC_ALL=C).
    """
    del tz
    return _Ps(source).run(host)


class _Ps:
    """The format for the table engine: every line is a row but the header (found by its `PID`); the
    first line must be the header, a later copy of it (captures joined) is skipped."""

    structure_bytes = b""  # no structure lines: blank lines and repeated headers leave the rows in bulk
    header_words = (b"PID",)
    # rows read at once: as fast as 8 MB, whose wide rows (their commands apart, their fields laid out
    # again) held 20 MB more at the peak of a 100,000-process snapshot
    chunk_bytes = 1 << 21

    def __init__(self, source: Source):
        numbers = Numbers()
        numbers.comma_refusal = _LOCALE
        self.table = Table(source, KIND, self, numbers)
        self.header: list[str] | None = None
        self.columns: list[str | None] = []  # schema column per header position, None = skipped
        self.layout_: Layout | None = None
        self.unknown: list[str] = []
        self.notes: list[str] = []
        self.parts = Parts(len(_KINDS))
        self.texts: dict[str, list[pd.Categorical]] = {c: [] for c in _TEXTS}
        self.seconds: list[np.ndarray] = []

    def run(self, host: str | None) -> pd.DataFrame:
        self.table.run()
        if self.table.cut is not None and self.header is None:  # a cut header is no ps
            self.layout(*self.table.cut)
        return self.frame(host)

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout:
        labels = text.split()
        if self.header is not None:
            return self.layout_ if labels == self.header else ROW  # type: ignore[return-value]
        if "PID" not in labels or not all(_LABEL.match(t) for t in labels):
            raise self.table.error(line_no, text, _NOT_PS)
        multi = [t for t in labels if t in _MULTIWORD]
        if multi:
            reason = f"column {multi[0]} prints several words: cannot split its rows by whitespace"
            raise self.table.error(line_no, text, reason)
        last_cmd = max((i for i, t in enumerate(labels) if t in _COMMAND), default=None)
        for i, label in enumerate(labels):
            col = "command" if i == last_cmd else _HEADERS.get(label)
            if col is None or col in self.columns:  # not known, or a column seen before
                col = None
                self.unknown.append(label)
                if label in _COMMAND:
                    note = f"an earlier {label} column (comm) was skipped: command is the last one"
                    self.notes.append(note)
            self.columns.append(col)
        if last_cmd is not None and last_cmd != len(labels) - 1:
            self.notes.append(f"{labels[last_cmd]} is not the last column: taken as one word")
        self.header = labels
        kinds = "".join(_KINDS.get(c or "", "t") for c in self.columns)
        # the last column keeps the rest of the line verbatim (a command's blanks) when it is text
        self.layout_ = Layout(kinds, labels=(0,), rest=kinds[-1] == "t")
        return self.layout_

    def structure(self, line_no: int, text: str) -> None:
        """A line before the header."""
        if text.strip():
            raise self.table.error(line_no, text, _NOT_PS)

    def rows(self, block: Block) -> None:
        fields = {c: f for c, f in zip(self.columns, block.fields, strict=True) if c is not None}
        wrong = {col: np.signbit(fields[col]) for col in _KINDS if col in fields}  # ps prints no sign
        seconds = None
        if "time" in fields:
            cat = fields["time"]
            seconds = np.append(_seconds(cat.categories.tolist()), np.nan)[cat.codes]
            wrong["time"] = np.isnan(seconds)
        for col in ("user", "tty", "stat", "start"):
            if col in fields:
                cat = fields[col]
                odd = [not t.isprintable() for t in cat.categories.tolist()]
                wrong[col] = np.array(odd + [False])[cat.codes]  # code -1 (NA): nothing printed
        # each check's first bad row: the first of them is raised
        bad = [(int(np.argmax(rows)), col) for col, rows in wrong.items() if rows.any()]
        if bad:
            k, reason = min((k, f"malformed ps row: {col} {fields[col][k]!r}") for k, col in bad)
            raise self.table.error(int(block.line_nos[k]), block.text(k), reason)
        n = len(block)
        self.parts.add([fields.get(c, np.zeros(n, dtype=_DTYPES[k])) for c, k in _KINDS.items()])
        for col in _TEXTS:
            if col in fields:
                self.texts[col].append(fields[col])
        if seconds is not None:
            self.seconds.append(seconds)

    # ------------------------------------------------------------ the frame

    def frame(self, host: str | None) -> pd.DataFrame:
        """The rows read, typed, with exactly the `SCHEMA` columns."""
        attrs = {"dropped_lines": int(self.table.cut is not None), "unknown_columns": self.unknown}
        attrs["notes"] = self.notes
        n = self.parts.rows
        if not n:
            df = empty_frame(SCHEMA)
            df.attrs.update(attrs)
            return df
        data: dict[str, object] = {"host": text_column([host], np.zeros(n, dtype=np.intp))}
        for (col, kind), values in zip(_KINDS.items(), self.parts.columns(), strict=True):
            if col in self.columns:
                data[col] = pd.arrays.IntegerArray(values, np.zeros(n, dtype=bool)) if kind == "i" else values
        while self.texts:  # each column's chunks let go once it is built: one text column held twice
            col, cats = self.texts.popitem()
            if cats:
                cat = cats[0] if len(cats) == 1 else pd.api.types.union_categoricals(cats)
                del cats
                data[col] = text_column(cat.categories.tolist(), cat.codes)
        if self.seconds:
            data["cpu_time_s"] = np.concatenate(self.seconds)
        # in SCHEMA order, so that `coerce` keeps the arrays instead of copying them
        df = coerce(pd.DataFrame({c: data[c] for c in SCHEMA if c in data}, copy=False), SCHEMA)
        df.attrs.update(attrs)
        return df


def _seconds(texts: list[str]) -> np.ndarray:
    """Each `M:SS` (aux; minutes past 59 allowed), `H:MM:SS` or `D-HH:MM:SS` in seconds, NaN for any
    other text: its numbers read at once, weighted by their place from the end (1, 60, 3600, 86400)."""
    if not texts:
        return np.empty(0)
    joined = "\n".join(texts)
    if not joined.isascii() or not _TIMES.fullmatch(joined + "\n"):  # one is no time: each on its own
        return np.array([_one_seconds(t) for t in texts], dtype=np.float64)
    numbers = np.array(joined.replace("-", ":").replace("\n", ":").split(":"), dtype=np.int64)
    counts = np.array([t.count(":") + 1 + ("-" in t) for t in texts])
    last = np.cumsum(counts)  # one past each text's last number
    place = np.repeat(last, counts) - 1 - np.arange(len(numbers))
    weighted = numbers * np.array([1, 60, 3600, 86400])[place]
    return np.add.reduceat(weighted, last - counts).astype(np.float64)


def _one_seconds(text: str) -> float:
    m = _TIME.match(text)
    if m is None:
        return np.nan
    days, a, b, c = m.groups()
    if c is None:
        return np.nan if days else float(int(a) * 60 + int(b))
    return float(int(days or 0) * 86400 + int(a) * 3600 + int(b) * 60 + int(c))

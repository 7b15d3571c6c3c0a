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

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `unknown_columns` (header names not
mapped), `notes`.

ps prints no date: the capture time is the manifest's. Tested on: tests/fixtures/ps/ (README.md there).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Lines, Source, coerce, empty_frame, feed_lines

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
# Values of several words: a whitespace split would shift every later column.
_MULTIWORD = {"LSTART", "STARTED"}
_INT = re.compile(r"^\d+$")
_FLOAT = re.compile(r"^\d+(?:\.\d+)?$")
_COMMA_FLOAT = re.compile(r"^\d+,\d+$")
# `M:SS` (minutes unbounded, aux), `H:MM:SS` or `D-HH:MM:SS` (-o time).
_TIME = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]\d)(?::([0-5]\d))?$")
# A header: ps labels only (upper case, digits, % + - _ :), at least one we know.
_LABEL = re.compile(r"^[A-Z%][A-Z0-9%+_:-]*$")
_MAX_LINE = 1 << 20  # ARG_MAX-sized command lines exist (2 MiB is the kernel's default cap)


def sniff(text: str) -> bool:
    """ps output starts with its header: ps labels only, PID among them, and two known ones more."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            labels = line.split()
            known = sum(1 for t in labels if t in _HEADERS or t in _COMMAND)
            return "PID" in labels and known >= 3 and all(_LABEL.match(t) for t in labels)
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
    state = _State()
    try:
        feed_lines(source, KIND, state.feed, state.cut_last)
    except ParseError:
        raise
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        raise ParseError(
            KIND, None, state.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})"
        ) from exc
    attrs = {"dropped_lines": state.dropped, "unknown_columns": state.unknown, "notes": state.notes}
    if not state.rows:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    n = len(state.rows)
    data: dict[str, object] = {"host": pd.array([host] * n, dtype="string")}
    for i, col in enumerate(state.columns):
        if col is None:
            continue
        values = [row[i] for row in state.rows]
        if col in ("pid", "vsz_kb", "rss_kb"):
            data[col] = pd.array([int(v) for v in values], dtype="Int64")
        elif col in ("cpu_pct", "mem_pct"):
            data[col] = np.array(values, dtype=np.float64)
        else:
            data[col] = pd.array(values, dtype="string")
        if col == "time":
            data["cpu_time_s"] = np.array([_seconds(v) for v in values], dtype=np.float64)  # validated
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(attrs)
    return df


class _State:
    """The line walk: the first line is the header, every later line a process."""

    def __init__(self) -> None:
        self.header: list[str] | None = None
        self.columns: list[str | None] = []  # schema column per header position, None = skipped
        self.rows: list[list[str]] = []
        self.unknown: list[str] = []
        self.notes: list[str] = []
        self.dropped = 0
        self.line_no = 0

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.line_no = line_no
        if not line.strip():
            return
        if len(line) > _MAX_LINE:
            raise lines.error(line_no, line, f"line longer than {_MAX_LINE} characters: not ps output")
        if self.header is None:
            self._read_header(line_no, line, lines)
            return
        if line.split() == self.header:  # the same header again (captures joined): skip it
            return
        self.rows.append(self._split(line_no, line, lines))

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        # Cut mid-write: the command (or a number) may be a prefix of itself. A cut header is no ps.
        if self.header is None:
            self._read_header(line_no, line, lines)
        self.dropped += 1

    def _read_header(self, line_no: int, line: str, lines: Lines) -> None:
        labels = line.split()
        if "PID" not in labels or not all(_LABEL.match(t) for t in labels):
            raise lines.error(line_no, line, "not a ps capture (no ps header line with PID first)")
        multi = [t for t in labels if t in _MULTIWORD]
        if multi:
            raise lines.error(
                line_no, line, f"column {multi[0]} prints several words: cannot split its rows by whitespace"
            )
        last_cmd = max((i for i, t in enumerate(labels) if t in _COMMAND), default=None)
        columns: list[str | None] = []
        seen: set[str] = set()
        for i, label in enumerate(labels):
            col = "command" if i == last_cmd else _HEADERS.get(label)
            if col is None or col in seen:
                self.unknown.append(label)
                if label in _COMMAND:
                    self.notes.append(
                        f"an earlier {label} column (comm) was skipped: command is the last one"
                    )
                columns.append(None)
                continue
            seen.add(col)
            columns.append(col)
        if last_cmd is not None and last_cmd != len(labels) - 1:
            self.notes.append(f"{labels[last_cmd]} is not the last column: taken as one word")
        self.header = labels
        self.columns = columns

    def _split(self, line_no: int, line: str, lines: Lines) -> list[str]:
        width = len(self.columns)
        # maxsplit keeps the rest of the line (the last column) verbatim, inner spaces included
        parts = line.split(None, width - 1)
        if len(parts) != width:
            raise lines.error(line_no, line, f"malformed ps row: {len(parts)} fields, header has {width}")
        for value, col in zip(parts, self.columns, strict=True):
            if col is None or col == "command":
                continue
            if col in ("pid", "vsz_kb", "rss_kb"):
                ok = bool(_INT.match(value))
            elif col in ("cpu_pct", "mem_pct"):
                if _COMMA_FLOAT.match(value):
                    raise lines.error(
                        line_no, line, f"decimal comma {value!r}: capture not taken under LC_ALL=C"
                    )
                ok = bool(_FLOAT.match(value))
            elif col == "time":
                ok = _seconds(value) is not None
            else:
                ok = value.isprintable()
            if not ok:
                raise lines.error(line_no, line, f"malformed ps row: {col} {value!r}")
        return parts


def _seconds(text: str) -> float | None:
    """`M:SS` (aux; minutes past 59 allowed), `H:MM:SS`, `D-HH:MM:SS` -> seconds; None if neither."""
    m = _TIME.match(text)
    if m is None:
        return None
    days, a, b, c = m.groups()
    if c is None:
        return None if days else float(int(a) * 60 + int(b))
    return float(int(days or 0) * 86400 + int(a) * 3600 + int(b) * 60 + int(c))

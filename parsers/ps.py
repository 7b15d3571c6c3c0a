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
mapped), `notes`.

ps prints no date: the capture time is the manifest's. Tested on: tests/fixtures/ps/ (README.md there).

Large captures (a path or a string) are split a chunk of rows at a time, without a Python call per
row: one numpy pass finds every token's start and end, each column's tokens are taken by position,
integers are read from their digits (8 at a time, in place), other values are checked and converted
once per distinct token, and text columns and commands are cut out of the chunk's bytes as arrow
strings. A chunk goes this way only when the row-by-row split provably reads it the same:

- no control byte but the newline, so the blank is the only whitespace in it; valid UTF-8, and every
  byte of a row up to its command's first is ASCII (U+00A0 is whitespace to `str.split`);
- the last column is the command; integers are digits only (up to 16 of them); every other value
  passes the line grammar's own checks (`_FLOAT`, `_seconds`, printable).

A blank line or a repeated header is skipped there as the line walk skips it; any other row the chunk
cannot take (a short row, a bad number, a decimal comma, a line over the length cap) sends the whole
chunk through the line walk, which then names the first bad line. A capture with a CR in it (a line end
for the line walk) and text streams are read by the line walk whole.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perfkit.errors import ParseError

from ._common import Lines, Source, coerce, empty_frame, feed_lines
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
_INTS = ("pid", "vsz_kb", "rss_kb")
_FLOATS = ("cpu_pct", "mem_pct")
# How a chunk reads a column (`_State._columns`); any other column but the command is text.
_KIND = {**dict.fromkeys(_INTS, "int"), **dict.fromkeys(_FLOATS, "percent"), "time": "time"}
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

_CHUNK_BYTES = 1 << 19  # split at once: its working arrays stay small (RSS), numpy calls amortised
_PAD = b" " * 32  # blanks around a chunk: 8-byte reads near its ends stay inside it, and make no token
_LOW_BYTES = np.array([(1 << 8 * n) - 1 for n in range(9)], dtype=np.uint64)  # a word's first n bytes
_ZEROS = np.uint64(0x3030303030303030)  # b"00000000"
_SIXES = np.uint64(0x0606060606060606)
_HIGH_NIBBLES = np.uint64(0xF0F0F0F0F0F0F0F0)
_LOW_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)
_INLINE = 12  # an arrow string view holds up to 12 bytes itself, longer ones point into a buffer
# Arrow's default pool (mimalloc) keeps the pages of freed temporaries resident: with the string arrays
# cast chunk by chunk, that was ~10 MB more peak RSS than malloc's on a 100 k-process capture.
_POOL = pa.system_memory_pool()
_INT64_MAX = (1 << 63) - 1
_NO_WORDS = np.empty(0, dtype=np.uint64)
_NO_VALUES = np.empty(0, dtype=np.float64)


def sniff(text: str) -> bool:
    """ps output starts with its header: ps labels only, PID among them, and two known ones more."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            labels = line.split()
            known = sum(1 for t in labels if t in _HEADERS or t in _COMMAND)
            if is_task_header(labels):  # `PR NI VIRT RES SHR ... TIME+`: top's task table, not ps
                return False
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
        if not _read_chunks(source, state):
            state = _State()  # a stream, or a CR somewhere: the line walk reads it all
            feed_lines(source, KIND, state.feed, state.cut_last)
    except ParseError:
        raise
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        raise ParseError(
            KIND, None, state.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})"
        ) from exc
    attrs = {"dropped_lines": state.dropped, "unknown_columns": state.unknown, "notes": state.notes}
    df = state.frame(host)
    df.attrs.update(attrs)
    return df


def _read_chunks(source: Source, state: _State) -> bool:
    """Feed a path or a string to `state` a chunk of whole lines at a time; False (nothing read) for a
    stream or a capture with a CR, which only the line walk splits into the lines `Lines` gives."""
    lines = Lines(source, KIND)
    if lines.path is not None and isinstance(source, str | Path):
        blocks = _file_blocks(source, lines, state)
    elif isinstance(source, str):
        try:
            text = source.encode()
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for it
            return False
        if b"\r" in text:
            return False
        state.size = len(text)
        blocks = (text[i : i + _CHUNK_BYTES] for i in range(0, len(text), _CHUNK_BYTES))
    else:
        return False
    line_no = 1
    rest = [b"\n"]  # the newline ending the previous chunk, then the start of the line it cut
    try:
        for block in blocks:
            if b"\r" in block:
                return False
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # a line longer than a block
                rest.append(block)
                continue
            data = b"".join((_PAD, *rest, memoryview(block)[:cut], _PAD))
            rest = [block[cut - 1 :]]
            del block  # one copy of the chunk in memory while it is split
            line_no = state.chunk(data, line_no, lines)
    except OSError as exc:
        raise lines.error(line_no, "", f"cannot read: {exc}") from None
    last = b"".join(rest)[1:].decode("utf-8", errors="replace")
    if last.strip():  # no newline after it: cut off while ps wrote it
        state.cut_last(line_no, last, lines)
    elif last:
        state.feed(line_no, last, lines)
    return True


def _file_blocks(path: str | Path, lines: Lines, state: _State) -> Iterator[bytes]:
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise lines.error(0, "", f"cannot read: {exc.strerror}") from None
    with fh:
        state.size = os.fstat(fh.fileno()).st_size
        while block := fh.read(_CHUNK_BYTES):
            yield block


class _State:
    """The line walk: the first line is the header, every later line a process.

    Rows go to the columns in file order: the line walk's (`rows`) as they are, before each chunk
    split at once (`chunk`) and at the end. Numbers fill arrays sized from the first chunk (`numbers`),
    strings are kept as one arrow array per chunk (`strings`).
    """

    def __init__(self) -> None:
        self.header: list[str] | None = None
        self.columns: list[str | None] = []  # schema column per header position, None = skipped
        self.fast = False  # the header allows splitting chunks at once (the command is last)
        self.kinds: dict[str, list[tuple[int, str]]] = {}  # kind of column -> (position, column) of each
        self.rows: list[list[str]] = []  # split by the line walk, not yet in the columns
        self.n = 0  # rows in the columns
        self.size = 0  # bytes in the capture, if known: `numbers` get room for its rows at the first chunk
        self.capacity = 0  # rows `numbers` are first made for
        self.numbers: dict[str, np.ndarray] = {}  # number column -> its values (the first n)
        self.strings: dict[str, list[pa.Array]] = {}
        # kind of column -> `_values` of each distinct token seen so far: tokens of up to 8 bytes by
        # their word (`_words`; sorted words, values), longer ones (rare) by their text
        self.known_words: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.known_texts: dict[str, dict[str, float]] = {}
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

    def chunk(self, data: bytes, line_no: int, lines: Lines) -> int:
        """Feed the whole lines of `_PAD + b"\\n" + lines + _PAD`, the first numbered `line_no`; returns
        the number of the line after them."""
        lo, end = len(_PAD), len(data) - len(_PAD)  # lo: the newline before the next line
        while self.header is None and lo + 1 < end:
            nl = data.index(b"\n", lo + 1)
            self.feed(line_no, data[lo + 1 : nl].decode("utf-8", errors="replace"), lines)
            line_no, lo = line_no + 1, nl
        if lo + 1 == end:
            return line_no
        count = self._split_chunk(data, lo, end) if self.fast else 0
        if not count:
            rows = data[lo + 1 : end].decode("utf-8", errors="replace").split("\n")[:-1]
            for i, line in enumerate(rows):
                self.feed(line_no + i, line, lines)
            count = len(rows)
        self.line_no = line_no + count - 1
        return line_no + count

    def _split_chunk(self, data: bytes, lo: int, end: int) -> int:
        """Split the lines of `data[lo + 1:end]` at once (module docstring) and return how many they
        are; 0, having kept nothing, when the line walk might read them differently."""
        v = np.frombuffer(data, dtype=np.uint8)
        words = _words(data)
        nl = np.flatnonzero(v[lo:end] < 0x20)
        nl += lo
        if not (v[nl] == 0x0A).all() or len(data) >= 1 << 31:  # string view offsets are int32
            return 0
        ascii_only = data.isascii()
        if not ascii_only:
            try:
                data[lo:end].decode()
            except UnicodeDecodeError:  # the line walk reads it with replacement characters
                return 0
        # Blanks and newlines are the only whitespace left: a token is a run of any other byte. The
        # chunk starts and ends with blanks (_PAD), so the edges alternate: a token's start, its end,
        # the next token's start ...; a line's first edge is the start of its first token.
        blank = v <= 0x20
        edges = np.flatnonzero(blank[1:] != blank[:-1])
        edges += 1
        if not len(edges):  # blank lines only: the line walk skips them
            return 0
        line_start, line_end = nl[:-1] + 1, nl[1:]
        width = len(self.columns)
        first = np.searchsorted(edges, line_start)  # edge index of each line's first token's start
        last = first + 2 * (width - 1)  # ... and of its command's start, if it has that many tokens
        cmd_start = edges.take(last, mode="clip")
        take = (last < len(edges)) & (cmd_start < line_end) & (line_end - line_start <= _MAX_LINE)
        # a row starting with the header's first label may be the header again: the line walk decides
        label = self.header[0].encode()
        word = int.from_bytes(label[:8].ljust(8, b"\0"), "little")
        label_start = edges.take(first, mode="clip")
        take &= (edges.take(first + 1, mode="clip") - label_start != len(label)) | (
            words[label_start] & _LOW_BYTES[min(len(label), 8)] != word
        )
        if not ascii_only:  # `str.split` splits on non-ASCII blanks too: none up to a command's first byte
            high = np.flatnonzero(v[lo:end] >= 0x80) + lo
            row, at = np.unique(np.searchsorted(line_start, high, side="right") - 1, return_index=True)
            first_high = np.full(len(line_start), len(data))
            first_high[row] = high[at]
            take &= first_high > cmd_start
        for r in np.flatnonzero(~take).tolist():  # blank lines and headers, as `feed` skips them
            line = data[line_start[r] : line_end[r]].decode("utf-8", errors="replace")
            if line.strip() and (len(line) > _MAX_LINE or line.split() != self.header):
                return 0
        if not take.all():
            rows = np.flatnonzero(take)
            first, cmd_start, line_end = first[rows], cmd_start[rows], line_end[rows]
        columns = self._columns(data, words, edges, first, cmd_start, line_end)
        if columns is None:
            return 0
        self._flush()
        if not self.numbers:  # the first chunk: room for as many rows per byte in the whole capture
            self.capacity = int(len(first) * self.size / (end - lo) * 1.1)
        self._append(columns, len(first))
        return len(take)

    def _columns(
        self,
        data: bytes,
        words: np.ndarray,
        edges: np.ndarray,
        first: np.ndarray,
        cmd_start: np.ndarray,
        cmd_end: np.ndarray,
    ) -> dict[str, np.ndarray | pa.Array] | None:
        """The columns of a chunk's rows, given their token edges; None if the line grammar refuses a
        token. The columns of a kind are read as one array of (columns x rows) tokens: a handful of
        numpy calls per chunk, not per column."""
        n = len(first)
        columns: dict[str, np.ndarray | pa.Array] = {}
        if not n:
            return columns
        bounds = {}
        for kind, cols in self.kinds.items():
            at = first + 2 * np.array([i for i, _ in cols], dtype=np.int64)[:, None]
            bounds[kind] = edges[at].ravel(), edges[at + 1].ravel()
        if self.kinds["int"]:
            start, stop = bounds["int"]
            values = _integers(words, stop, stop - start)
            if values is None:
                return None
            columns.update((col, values[j * n : (j + 1) * n]) for j, (_, col) in enumerate(self.kinds["int"]))
        for kind in ("percent", "text", "time"):
            if self.kinds[kind]:
                start, stop = bounds[kind]
                values = self._token_values(kind, data, words, start, stop - start)
                if values is None:
                    return None
                if kind == "percent":
                    columns.update(
                        (col, values[j * n : (j + 1) * n]) for j, (_, col) in enumerate(self.kinds[kind])
                    )
                elif kind == "time":
                    columns["cpu_time_s"] = values
        # text and time columns and the command as one string array, cut into columns after
        texts = self.kinds["text"] + self.kinds["time"] + [(-1, "command")]
        start = np.concatenate([bounds[k][0] for k in ("text", "time")] + [cmd_start])
        stop = np.concatenate([bounds[k][1] for k in ("text", "time")] + [cmd_end])
        strings = _strings(words, data, start, stop - start)
        columns.update((col, strings.slice(j * n, n)) for j, (_, col) in enumerate(texts))
        return columns

    def _token_values(
        self, kind: str, data: bytes, words: np.ndarray, start: np.ndarray, length: np.ndarray
    ) -> np.ndarray | None:
        """`_values` of each token, worked out once per distinct token; None if one is refused."""
        if length.max() <= 8:
            return self._word_values(kind, words[start] & _LOW_BYTES[length])
        encoded = pc.dictionary_encode(_strings(words, data, start, length))
        values = self._text_values(kind, encoded.dictionary.to_pylist())
        return None if values is None else values[encoded.indices.to_numpy()]

    def _word_values(self, kind: str, keys: np.ndarray) -> np.ndarray | None:
        """`_values` of each token given as its word (`_words`); None if one is refused."""
        codes, uniques = pd.factorize(keys)
        known, values = self.known_words.get(kind, (_NO_WORDS, _NO_VALUES))
        at = np.searchsorted(known, uniques)
        found = at < len(known)
        found[found] = known[at[found]] == uniques[found]
        if not found.all():
            new = uniques[~found]
            # no NUL in a token (no control byte in the chunk): the zero bytes of its word are padding;
            # no non-ASCII byte either (checked before a row's command)
            added = self._values(kind, new.astype("<u8").view("S8").astype("U8").tolist())
            if added is None:
                return None
            known, values = np.concatenate([known, new]), np.concatenate([values, added])
            order = np.argsort(known)
            known, values = known[order], values[order]
            self.known_words[kind] = known, values
            at = np.searchsorted(known, uniques)
        return values[at][codes]

    def _text_values(self, kind: str, texts: list[str]) -> np.ndarray | None:
        """`_values` of distinct texts, worked out once per text over the capture; None if one is refused."""
        known = self.known_texts.setdefault(kind, {})
        new = [t for t in texts if t not in known]
        added = self._values(kind, new)
        if added is None:
            return None
        known.update(zip(new, added, strict=True))
        return np.array([known[t] for t in texts], dtype=np.float64)

    @staticmethod
    def _values(kind: str, texts: list[str]) -> list[float] | None:
        """What `_split` makes of texts of a kind of column: a percentage's value, a time's seconds (other
        texts: 0, unused); None if it refuses one."""
        if kind == "percent":
            return [float(t) for t in texts] if all(_FLOAT.match(t) for t in texts) else None
        if kind == "time":
            seconds = [_seconds(t) for t in texts]
            return None if None in seconds else seconds
        return [0.0] * len(texts) if all(t.isprintable() for t in texts) else None

    def frame(self, host: str | None) -> pd.DataFrame:
        """The rows read, typed, with exactly the `SCHEMA` columns."""
        self._flush()
        n = self.n
        if not n:
            return empty_frame(SCHEMA)
        data: dict[str, object] = {
            "host": pd.arrays.ArrowStringArray(
                pa.repeat(pa.scalar(host, type=pa.large_string()), n, memory_pool=_POOL)
            )
        }
        for col in [c for c in self.columns if c is not None] + ["cpu_time_s"] * ("time" in self.columns):
            if SCHEMA[col] == "string":
                data[col] = pd.arrays.ArrowStringArray(
                    pa.chunked_array(self.strings[col], type=pa.large_string())
                )
                continue
            values = self.numbers[col][:n]
            if col in _INTS:
                data[col] = pd.arrays.IntegerArray(values, np.zeros(n, dtype=bool))
            else:
                data[col] = values
        # in SCHEMA order, so that `coerce` keeps the arrays instead of copying them
        return coerce(pd.DataFrame({c: data[c] for c in SCHEMA if c in data}, copy=False), SCHEMA)

    def _flush(self) -> None:
        """Type the line walk's rows (checked by `_split`) into the columns."""
        rows, self.rows = self.rows, []
        if not rows:
            return
        columns: dict[str, np.ndarray | pa.Array] = {}
        for i, col in enumerate(self.columns):
            if col is None:
                continue
            values = [row[i] for row in rows]
            if col in _INTS:
                columns[col] = np.array([int(v) for v in values], dtype=np.int64)
            elif col in _FLOATS:
                columns[col] = np.array(values, dtype=np.float64)
            else:
                columns[col] = pa.array(values, type=pa.large_string())
            if col == "time":
                columns["cpu_time_s"] = np.array([_seconds(v) for v in values], dtype=np.float64)
        self._append(columns, len(rows))

    def _append(self, columns: dict[str, np.ndarray | pa.Array], n: int) -> None:
        """Add `n` rows to the columns; a number column grows by half when full (a copy)."""
        for col, values in columns.items():
            if isinstance(values, pa.Array):
                self.strings.setdefault(col, []).append(values)
                continue
            array = self.numbers.get(col)
            if array is None or self.n + n > len(array):
                room = max(self.n + n, self.capacity, len(array) * 3 // 2 if array is not None else 0)
                grown = np.empty(room, dtype=values.dtype)
                if array is not None:
                    grown[: self.n] = array[: self.n]
                self.numbers[col] = array = grown
            array[self.n : self.n + n] = values
        self.n += n

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
        self.fast = columns[-1] == "command"
        self.kinds = {
            kind: [
                (i, c) for i, c in enumerate(columns[:-1]) if c is not None and _KIND.get(c, "text") == kind
            ]
            for kind in ("int", "percent", "text", "time")
        }

    def _split(self, line_no: int, line: str, lines: Lines) -> list[str]:
        width = len(self.columns)
        # maxsplit keeps the rest of the line (the last column) verbatim, inner spaces included
        parts = line.split(None, width - 1)
        if len(parts) != width:
            raise lines.error(line_no, line, f"malformed ps row: {len(parts)} fields, header has {width}")
        for value, col in zip(parts, self.columns, strict=True):
            if col is None or col == "command":
                continue
            if col in _INTS:
                # past int64 the value cannot be stored: garbage, not a number to wrap or clip
                ok = bool(_INT.match(value)) and (len(value) < 19 or int(value) <= _INT64_MAX)
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


def _words(data: bytes) -> np.ndarray:
    """The 8 bytes at each offset of `data` as a little-endian word (overlapping, read in place)."""
    return np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))


def _integers(words: np.ndarray, stop: np.ndarray, length: np.ndarray) -> np.ndarray | None:
    r"""The tokens ending at `stop` as `\d+`; None if one is not, or has more than 16 digits."""
    if length.max() > 16:
        return None
    value, ok = _eight_digits(words[stop - 8], np.minimum(length, 8))
    if length.max() > 8:  # the digits before the last 8
        high, high_ok = _eight_digits(words[stop - 16], np.maximum(length - 8, 0))
        value += high * np.uint64(100_000_000)
        ok &= high_ok
    return value.astype(np.int64) if ok.all() else None


def _eight_digits(word: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The last `n` bytes of each word (the end of a token) read as decimal digits, and whether all
    of them are digits; the bytes before them count as `0`. SWAR: the digits are combined in pairs,
    then fours, then eights, each step one multiply-add over the whole word."""
    pad = _LOW_BYTES[8 - n]
    x = (word & ~pad) | (_ZEROS & pad)
    ok = ((x & _HIGH_NIBBLES) == _ZEROS) & (((x + _SIXES) & _HIGH_NIBBLES) == _ZEROS)  # '0'..'9' only
    x &= _LOW_NIBBLES
    x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    x = (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return x, ok


def _strings(words: np.ndarray, data: bytes, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """`data[start:start + length]` per row as a large_string array, via arrow string views (no Python
    object per row). A view is 16 bytes: the length, then up to 12 bytes inline, zero-padded; or
    then the first 4 bytes, buffer 0 and the offset."""
    views = np.empty((len(start), 2), dtype="<u8")
    prefix = words[start] & _LOW_BYTES[np.minimum(length, 4)]
    views[:, 0] = length.astype(np.uint64) | (prefix << np.uint64(32))
    inline = words[start + 4] & _LOW_BYTES[np.minimum(np.maximum(length - 4, 0), 8)]
    views[:, 1] = np.where(length > _INLINE, start.astype(np.uint64) << np.uint64(32), inline)
    array = pa.Array.from_buffers(
        pa.string_view(), len(start), [None, pa.py_buffer(views), pa.py_buffer(data)]
    )
    return array.cast(pa.large_string(), memory_pool=_POOL)

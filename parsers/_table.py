"""The table engine: one reader for the whitespace tables of sysstat-style captures.

A format states what is its own and nothing else:

- which lines are data rows (`row_bytes`: the bytes a row starts with) and which words mark a header
  line (`header_words`: `CPU` for mpstat);
- `layout(line_no, text)`: how the rows under a header read (a `Layout`: how many label tokens lead
  a row, then each field's kind), or `Skip(reason)` for a table it does not read, or `ROW` when the
  line only looks like a header;
- `structure(line_no, text)`: any other line (a banner, an `Average:` row, a foreign line);
- `rows(block)`: a run of rows under one layout, as typed columns (`Block`);
- optionally `Table.odd_row`: the tokens of a row whose field count is not the layout's, when the
  format knows that form (mpstat -T's `all` row without its topology fields).

The engine does the rest, once for every format: it cuts a capture into runs of rows and structure
lines (`_chunks.ByteScan`, numpy over multi-MB blocks), takes blank lines and repeated headers out of
the runs in bulk (a header whose text from its first marker word on was seen before keeps its layout
without a call to the format: sysstat repeats it each interval), and reads each run of rows by the
layout. That reading is the one grammar of a row: tokens split at blanks, label tokens kept as text,
`t` fields as text, `f` fields as numbers `[-+]?\\d+([.,]\\d+)?` in the file's decimal mark, `i` fields as
integers. It is carried out in bulk by pandas' C reader when the bytes of the run prove the reader
would give exactly that (`_bulk`), else row by row (`_walk`), which also names a bad line; both are
this module's, so no format holds its grammar twice.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._chunks import ByteScan, Rows
from ._common import Lines, Skips, Source

CHUNK_ROWS = 65536  # rows read at once: bounds memory, amortises each pandas call
_LOCALE_HINT = "capture not taken under LC_ALL=C"
_POINT = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
_COMMA = re.compile(r"^[-+]?\d+(?:,\d+)?$")
_INT = re.compile(r"^[-+]?\d+$")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# The bytes a run may hold outside its text fields for pandas to read it: digits, blanks, signs,
# decimal marks, the `:` of clocks, AM/PM and non-ASCII (zh_CN clocks). Any other byte could make a
# token pandas reads as a number and the grammar refuses (`1e5`, `inf`, `+5`).
_PLAIN = b"0123456789 .,:-\nAMP" + bytes(range(0x80, 0x100))


@dataclass(frozen=True)
class Layout:
    """How the rows under one header read: `labels` tokens lead each row (the time: 1, or 2 with
    AM/PM; 0 for none), then one token per field of `kinds` — `t` text, `f` number, `i` integer.

    `labels` may allow several counts: a row's count is its tokens minus `len(kinds)`. `key` is the
    format's own (which table, which columns), handed back with each block.
    """

    kinds: str
    labels: tuple[int, ...] = (1,)
    key: object = None

    @property
    def text_fields(self) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == "t"]


@dataclass(frozen=True)
class Skip:
    """The rows under this header belong to a table the format does not read: counted, not read."""

    reason: str


ROW = Skip("")  # `layout()`'s answer for a line that holds a header word but is a data row


@dataclass
class Block:
    """Rows under one layout: `label` (the label tokens joined by a blank) and text fields as
    Categoricals, numbers as float64, integers as int64; `line_nos` each row's line number."""

    layout: Layout
    header_line_no: int
    line_nos: np.ndarray
    label: pd.Categorical | None
    fields: list[pd.Categorical | np.ndarray]

    def __len__(self) -> int:
        return len(self.line_nos)


class Format(Protocol):
    row_bytes: bytes
    header_words: Sequence[bytes]

    def layout(self, line_no: int, text: str) -> Layout | Skip: ...

    def structure(self, line_no: int, text: str) -> None: ...

    def rows(self, block: Block) -> None: ...


class Numbers:
    """The file's decimal mark, decided by the first value with a fraction; `comma_refusal` is a
    reason a comma cannot be read (set by a format: sysstat's slash dates with a comma are ambiguous)."""

    def __init__(self) -> None:
        self.decimal: str | None = None
        self.comma_refusal: str | None = None

    def number(self, token: str) -> float:
        """A value as printed; ValueError (its reason) on anything else."""
        if "," in token:
            if self.decimal is None:
                if self.comma_refusal:
                    raise ValueError(self.comma_refusal)
                self.decimal = ","
            if self.decimal != "," or not _COMMA.match(token):
                raise ValueError(self._bad(token))
            return float(token.replace(",", "."))
        if not _POINT.match(token):
            raise ValueError(self._bad(token))
        if "." in token:
            if self.decimal is None:
                self.decimal = "."
            elif self.decimal != ".":
                raise ValueError(self._bad(token))
        return float(token)

    def _bad(self, token: str) -> str:
        reason = f"not a number: {token!r}"
        if self.decimal is not None and ("," in token or "." in token):
            reason += f" (the file so far used {self.decimal!r} as decimal mark: {_LOCALE_HINT})"
        return reason

    def chunk_mark(self, data: bytes) -> str | None:
        """The decimal mark pandas must read `data` with for `number()` to agree; None: it would not."""
        comma, point = b"," in data, b"." in data
        if comma and point:
            return None
        if comma:
            return None if self.decimal == "." or (self.decimal is None and self.comma_refusal) else ","
        if point and self.decimal == ",":
            return None
        return "." if point or self.decimal is None else self.decimal


def integer(token: str) -> int:
    """An integer as printed; ValueError (its reason) on anything else or past int64."""
    if not _INT.match(token):
        raise ValueError(f"not an integer: {token!r}")
    value = int(token)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"integer {token} past int64")
    return value


class Table:
    """Read a capture through a `Format`: see the module docstring. `skips` counts the rows of skipped
    tables and whatever the format adds; `cut` is a last line cut off mid-write (not read)."""

    def __init__(self, source: Source, kind: str, fmt: Format, numbers: Numbers | None = None):
        self.source = source
        self.kind = kind
        self.fmt = fmt
        self.numbers = numbers or Numbers()
        self.skips = Skips()
        self.lines = Lines(source, kind)
        self.cut: tuple[int, str] | None = None
        self._layouts: dict[bytes, Layout | Skip] = {}
        self._current: Layout | Skip | None = None
        self._header_line_no = 0
        self._pending: list[Rows] = []
        self._pending_rows = 0
        self._marks = [re.compile(re.escape(w)) for w in fmt.header_words]
        self.odd_row: Callable[[int, str, list[str], Layout], list[str] | None] | None = None

    def error(self, line_no: int, line: str, reason: str) -> ParseError:
        return self.lines.error(line_no, line, reason)

    def run(self) -> None:
        scan = ByteScan(self.source, self.kind, row_bytes=self.fmt.row_bytes)
        self.lines = scan.lines
        for item in scan:
            if isinstance(item, Rows):
                self._pending.append(item)
                self._pending_rows += item.count
                if self._pending_rows >= CHUNK_ROWS:
                    self._flush()
            else:
                self._flush()
                self._line(*item)
        self._flush()
        self.cut = scan.cut

    def _line(self, line_no: int, text: str) -> None:
        """A structure line: a header if it holds a header word and the format says so."""
        if any(w.decode() in text for w in self.fmt.header_words):
            found = self.fmt.layout(line_no, text)
            if found is not ROW:
                self._switch(found, line_no, text)
                return
        self.fmt.structure(line_no, text)

    def _switch(self, layout: Layout | Skip, line_no: int, text: str) -> None:
        self._current, self._header_line_no = layout, line_no
        if isinstance(layout, Skip):
            self.skips.add(line_no, text, layout.reason)

    # ------------------------------------------------------------ runs of rows

    def _flush(self) -> None:
        if not self._pending:
            return
        raw = b"".join(r.data for r in self._pending)
        first_no = self._pending[0].first_no
        self._pending.clear()
        self._pending_rows = 0
        buf = np.frombuffer(raw, dtype=np.uint8)
        ends = np.flatnonzero(buf == 10)  # runs hold whole lines
        starts = np.concatenate(([0], ends[:-1] + 1))
        at = np.sort(np.concatenate([[m.start() for m in rx.finditer(raw)] for rx in self._marks] or [[]]))
        at = at.astype(np.int64)
        heads, first = np.unique(np.searchsorted(ends, at), return_index=True)  # header lines, first word
        is_row = starts != ends  # blank lines are no rows
        lo = 0  # the first line of the current segment
        for k, word_at in zip(heads.tolist(), at[first].tolist(), strict=True):
            ident = raw[word_at : ends[k]]
            found = self._layouts.get(ident)
            text = None
            if found is None:
                text = raw[starts[k] : ends[k]].decode("utf-8", "replace")
                found = self.fmt.layout(first_no + k, text)
                self._layouts[ident] = found
            if found is ROW:
                continue
            is_row[k] = False
            if found == self._current and not isinstance(found, Skip):
                continue  # a repeat: the rows go on under the same layout
            self._segment(raw, starts, ends, is_row, lo, k, first_no)
            lo = k + 1
            if text is None:
                text = raw[starts[k] : ends[k]].decode("utf-8", "replace")
            self._switch(found, first_no + k, text)
        self._segment(raw, starts, ends, is_row, lo, len(ends), first_no)

    def _segment(
        self,
        raw: bytes,
        starts: np.ndarray,
        ends: np.ndarray,
        is_row: np.ndarray,
        lo: int,
        hi: int,
        first_no: int,
    ) -> None:
        """Read the rows among lines lo..hi-1 under the current layout."""
        rows = np.flatnonzero(is_row[lo:hi]) + lo
        if not len(rows):
            return
        layout = self._current
        if isinstance(layout, Skip):
            self.skips.count += len(rows)
            return
        if layout is None:  # rows before any header: the format says what they are
            for k in rows.tolist():
                self.fmt.structure(first_no + k, raw[starts[k] : ends[k]].decode("utf-8", "replace"))
            return
        gaps = np.flatnonzero(np.diff(rows) != 1)
        run_first = rows[np.concatenate(([0], gaps + 1))]
        run_last = rows[np.concatenate((gaps, [len(rows) - 1]))]
        data = b"".join(
            raw[a : b + 1] for a, b in zip(starts[run_first].tolist(), ends[run_last].tolist(), strict=True)
        )
        line_nos = first_no + rows
        block = self._bulk(data, line_nos, layout)
        if block is None:
            texts = data.decode("utf-8", "replace").split("\n")[:-1]
            block = self.read_lines(list(zip(line_nos.tolist(), texts, strict=True)), layout)
        self.fmt.rows(block)

    def _bulk(self, data: bytes, line_nos: np.ndarray, layout: Layout) -> Block | None:
        """The run read by pandas, or None when it cannot be proven to read as `read_lines` would."""
        nlab = len(data[: data.find(b"\n")].split()) - len(layout.kinds)
        mark = self.numbers.chunk_mark(data)
        if nlab not in layout.labels or mark is None:
            return None
        text_cols = list(range(nlab)) + [nlab + i for i in layout.text_fields]
        df = _read_csv(data, nlab + len(layout.kinds), text_cols, mark)
        if df is None or len(df) != len(line_nos):
            return None
        texts = [(str(c).encode(), int(n)) for i in text_cols for c, n in _counts(df[i])]
        if not _plain(data, texts):
            return None
        fields: list[pd.Categorical | np.ndarray] = []
        numbers = []
        for i, kind in enumerate(layout.kinds):
            col = df[nlab + i]
            if kind == "t":
                fields.append(col.array)
                continue
            values = col.to_numpy()
            if values.dtype.kind not in "if" or (kind == "i" and values.dtype.kind != "i"):
                return None
            numbers.append(values)
            fields.append(np.asarray(values, dtype=np.float64) if kind == "f" else values)
        if not _as_printed(data, mark, numbers, texts):
            return None
        if self.numbers.decimal is None and mark.encode() in data:
            self.numbers.decimal = mark
        return Block(layout, self._header_line_no, line_nos, _joined_label(df, nlab), fields)

    def read_lines(self, items: Sequence[tuple[int, str]], layout: Layout) -> Block:
        """Rows read one by one by the layout (the grammar `_bulk` proves it agrees with); the first
        bad row is a ParseError naming its line. Formats call it for rows they hold apart (`Average:`)."""
        labels: list[str] = []
        columns: list[list] = [[] for _ in layout.kinds]
        nos: list[int] = []
        width = len(layout.kinds)
        for line_no, text in items:
            tokens = text.split()
            nlab = len(tokens) - width
            if nlab not in layout.labels and self.odd_row is not None:
                fixed = self.odd_row(line_no, text, tokens, layout)
                if fixed is not None:
                    tokens, nlab = fixed, len(fixed) - width
            if nlab not in layout.labels:
                raise self.error(
                    line_no,
                    text,
                    f"{len(tokens)} fields, the header at line {self._header_line_no} has "
                    f"{width + layout.labels[0]}",
                )
            labels.append(" ".join(tokens[:nlab]))
            for col, kind, token in zip(columns, layout.kinds, tokens[nlab:], strict=True):
                try:
                    col.append(
                        token
                        if kind == "t"
                        else integer(token)
                        if kind == "i"
                        else self.numbers.number(token)
                    )
                except ValueError as exc:
                    raise self.error(line_no, text, str(exc)) from None
            nos.append(line_no)
        fields: list[pd.Categorical | np.ndarray] = [
            pd.Categorical(col)
            if kind == "t"
            else np.array(col, dtype=np.int64 if kind == "i" else np.float64)
            for col, kind in zip(columns, layout.kinds, strict=True)
        ]
        label = pd.Categorical(labels) if any(layout.labels) else None
        return Block(layout, self._header_line_no, np.array(nos, dtype=np.int64), label, fields)


def _counts(col: pd.Series) -> list[tuple[object, int]]:
    cat = col.array
    counts = np.bincount(cat.codes[cat.codes >= 0], minlength=len(cat.categories))
    return [(c, n) for c, n in zip(cat.categories.tolist(), counts.tolist(), strict=True) if n]


def _joined_label(df: pd.DataFrame, nlab: int) -> pd.Categorical | None:
    if nlab == 0:
        return None
    first = df[0].array
    if nlab == 1:
        return first
    second = df[1].array
    n2 = len(second.categories)
    pair = first.codes.astype(np.int64) * n2 + second.codes
    uniq, codes = np.unique(pair, return_inverse=True)
    names = [f"{first.categories[u // n2]} {second.categories[u % n2]}" for u in uniq.tolist()]
    return pd.Categorical.from_codes(codes.astype(np.int32), names)


def _read_csv(data: bytes, ncols: int, text_cols: list[int], mark: str) -> pd.DataFrame | None:
    """Rows separated by one or more spaces -> frame, `text_cols` as category; None if refused.

    Values are separated by spaces only, which pandas' fast `sep=" "` tokenizer reads. A row with too
    many fields makes it fail; a row with too few leaves `""` in a column, which `_as_printed` refuses.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. a first row with a field too many would be cut silently
            df = pd.read_csv(
                io.BytesIO(data),
                sep=" ",
                skipinitialspace=True,
                header=None,
                names=range(ncols),
                index_col=False,
                dtype={i: "category" for i in text_cols},
                na_filter=False,
                decimal=mark,
                engine="c",
                low_memory=False,  # one pass over the chunk: a fifth faster; chunks are bounded anyway
            )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal goes row by row
        return None
    # categories of all-numeric text are converted to numbers (`007` -> 7): not the text as printed
    if not all(pd.api.types.is_string_dtype(df[i].cat.categories) for i in text_cols):
        return None
    return df


def _plain(data: bytes, texts: list[tuple[bytes, int]]) -> bool:
    """True when `data` holds only `_PLAIN` bytes outside its text values (`(value, rows holding it)`)."""
    other = len(data.translate(None, _PLAIN))
    return other == sum(len(t.translate(None, _PLAIN)) * n for t, n in texts)


def _as_printed(data: bytes, mark: str, numbers: list[np.ndarray], texts: list[tuple[bytes, int]]) -> bool:
    """True when pandas read every number as the grammar `[-+]?\\d+([.,]\\d+)?` would.

    After `_plain`, the forms pandas reads and the grammar refuses are a mark without a digit on one
    side (`.5`, `5.`), an empty field (a row too short) and a `-0` read as 0: every `-` must be the
    sign of a negative value or in a text value.
    """
    if _bare_marks(data, mark) != sum(_bare_marks(t, mark) * n for t, n in texts):
        return False
    minus = sum(t.count(b"-") * n for t, n in texts)
    for values in numbers:
        if values.dtype.kind == "f":
            if not np.isfinite(values).all():
                return False
            minus += int(np.signbit(values).sum())
        else:
            minus += int((values < 0).sum())
    return data.count(b"-") == minus


def _bare_marks(data: bytes, mark: str) -> int:
    """How many decimal marks in `data` lack a digit on either side (`.5`, `5.`): numpy, no regex."""
    buf = np.frombuffer(b" " + data + b" ", dtype=np.uint8)
    at = np.flatnonzero(buf == ord(mark))
    if not len(at):
        return 0
    digit_before = (buf[at - 1] - ord("0")) < 10  # uint8 wraps below "0"
    digit_after = (buf[at + 1] - ord("0")) < 10
    return int(len(at) - np.count_nonzero(digit_before & digit_after))

"""The table engine: one reader for the whitespace tables of sysstat-style captures.

A format states only what is its own:

- `row_bytes`: the bytes a data row starts with; or `structure_bytes`, those the other lines start
  with, when rows start with almost anything (iostat's device names);
- `header_words`: words marking a header line (`CPU` for mpstat); or `header_marks`: byte regexes,
  the header's text taken from group 1 (else the match start) on, searched with what precedes the
  run (a line end, plus a blank line if the line before was blank; a file starts as after one), so
  `rb"\\n\\n\\S+ +(\\S)"` marks every line after a blank line (sar's headers);
- optionally `aside_bytes` (first bytes, among a row's) or `aside_words` (bytes in the line: iotop's
  `-t` Total lines, which start like its rows): lines among the rows, too many to cut the runs at
  (iostat's `-t` stamp and `avg-cpu:` block). They are taken out in bulk and handed to
  `aside(line_nos, texts)`, which returns which are indeed no rows, before the rows of the same
  stretch (a format ties rows to them by line number); with `aside_joined` the texts come as one
  bytes object, each line ending with a line end;
- `layout(line_no, text)`: a `Layout` for the rows under a header, `Skip(reason)` for a table it does
  not read, `ROW` for a line that only looks like a header, `STRUCTURE` for a structure line that
  starts like a row (sar's `LINUX RESTART`: the rows around it stay under their layout), or `LEAD`
  for a line that only leads the header below it (vmstat's `procs ---`: removed like a repeat);
- `structure(line_no, text)`: any other line (a banner, an `Average:` row, a foreign line);
- `rows(block)`: a run of rows under one layout, as typed columns (`Block`);
- optionally `blank_ends` (a blank line ends the table above: later rows go to `structure()` until
  the next header, ss's transport table), `first_layout` (rows before any header: iotop prints its
  header once), `Table.odd_row` (the tokens of a row of another field count, when the format knows
  it: mpstat -T's `all` row without topology) and `Table.foreign` (a line among the rows that does
  not read, taken by the format as none: iotop's command lines with newlines).

The engine does the rest once for every format: it cuts a capture into runs of rows and structure
lines (`_chunks.ByteScan`, numpy over multi-MB blocks), takes blank lines and repeated headers out in
bulk (a header whose text from its first marker word on was seen before keeps its layout without a
call to the format: sysstat repeats it each interval), and reads the rows of each layout together
even where tables alternate (one Block per layout per chunk, `Block.headers` telling each row's
table). That reading is the one grammar of a row: tokens split at blanks (or `Layout.sep`: sadf -d's
`;`), label tokens and `t` fields as text, `f` numbers `[-+]?\\d+([.,]\\d+)?` in the file's decimal
mark, `i` integers, `I` integers or `-` (NaN), `d` fixed shapes (`Layout.shapes`) as the integers of
their digits, `Layout.rest` the last field verbatim, `Layout.gap` one token standing for missing
fields. pandas' or Arrow's C readers do it in bulk where the bytes of the run prove they agree
(`_bulk`), else `read_lines` does it row by row and names a bad line; both are here, so no format
holds its grammar twice.
"""

from __future__ import annotations

import dataclasses
import io
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from perfkit.errors import ParseError

from ._chunks import ByteScan, Rows
from ._common import Lines, Skips, Source

CHUNK_ROWS = 65536  # rows read at once: bounds memory, amortises each pandas call
# and bytes, unless a format bounds them lower (`Format.chunk_bytes`: vmstat's few wide rows per header
# read as fast in 1 MB, in a third of the memory; mpstat's headers every few rows cost a call per chunk)
CHUNK_BYTES = 1 << 23
_LOCALE_HINT = "capture not taken under LC_ALL=C"
_POINT = re.compile(r"^[-+]?\d+(?:\.\d+)?$", re.ASCII)  # ASCII: `\d` alone takes `٣`, which int() reads as 3
_COMMA = re.compile(r"^[-+]?\d+(?:,\d+)?$", re.ASCII)
_INT = re.compile(r"^[-+]?\d+$", re.ASCII)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# `integer()` and `Numbers.number()` in either decimal mark, for bytes (`_few_numbers`)
_NUMBER_FORMS = {
    "i": re.compile(rb"[-+]?[0-9]+"),
    ".": re.compile(rb"[-+]?[0-9]+(?:\.[0-9]+)?"),
    ",": re.compile(rb"[-+]?[0-9]+(?:,[0-9]+)?"),
}
_NAN = float("nan")
_LOW_BYTES = np.array([(1 << 8 * n) - 1 for n in range(9)], dtype=np.uint64)  # a word's first n bytes
_BLANKS8 = np.uint64(0x2020202020202020)
_WHITE = np.zeros(256, dtype=bool)  # the ASCII bytes `str.split` splits at
_WHITE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_SLICE = 1 << 18  # bytes per numpy pass in `_bare_marks`
_STAND_IN = b"\x01"  # `Layout.gap`'s text fields in bulk: a byte no capture prints
_REST_MARK = b"\x02"  # where a row's tokens before its `Layout.rest` field end, in bulk: likewise
# the blanks `str.split` splits at besides the space (and the line end): pandas keeps them in a value
_BLANK = re.compile(
    rb"[\t\x0b\x0c\r\x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)
# The bytes a run may hold outside its text fields for pandas to read it: digits, blanks, signs,
# decimal marks, the `:` of clocks, AM/PM and non-ASCII (zh_CN clocks). Any other byte could make a
# token pandas reads as a number and the grammar refuses (`1e5`, `inf`, `+5`).
_PLAIN = b"0123456789 .,:-\nAMP" + bytes(range(0x80, 0x100))
_NUMERAL = b"0123456789-; \n"  # `_fixed`: the bytes of its number fields but decimal marks
_DIGIT_OR_BLANK = np.zeros(256, dtype=bool)  # `_digits`
_DIGIT_OR_BLANK[list(b"0123456789 ")] = True


@dataclass(frozen=True)
class Layout:
    """How the rows under one header read: `labels` tokens lead each row (the time: 1, or 2 with
    AM/PM; 0 for none; several counts allowed: a row's is its tokens minus `len(kinds)`), then one
    token per field of `kinds`: `t` text, `f` number, `i` integer, `I` integer or `-` (sysstat's
    placeholder, e.g. pidstat's TID of a process row) as float64, NaN for `-`, exact below 2**53.

    - `key`: the format's own (which table, which columns), handed back with each block.
    - `rest`: the last field (text) takes the rest of the row verbatim, blanks kept (pidstat's
      command line); a row's label count is then the first of `labels` under which its fields read.
    - `gap`: `(token, field, count)`: a row may print `token` for the `count` fields from `field` on
      (iotop's `?unavailable?` for `SWAPIN % IO %`), read as missing (NaN, text NA): so no `i` field
      among them, and at least one `t` field for the bulk reader to tell them by.
    - `shapes`: one per `d` field: a token of that shape (`####-##-##`: `#` an ASCII digit, any other
      character as printed) read as the integer of its digits (vmstat's stamp: 20261122 and 134700);
      read in bulk when they end every row, one blank apart.
    - `sep`: fields split at this character (`str.split(sep)`: an empty field is one; sadf -d's `;`);
      no `rest`, `gap` or `shapes` with it.
    - `mixed`: rows of `labels`' largest count and rows without labels alternate (iftop's `=>` line
      with its rank, the `<=` line without; `labels` holds 0): read in bulk as a byte grid, a row
      without labels having label ""; no `rest`, `gap` or `sep` with it.
    """

    kinds: str
    labels: tuple[int, ...] = (1,)
    key: object = None
    rest: bool = False
    gap: tuple[str, int, int] | None = None
    shapes: tuple[str, ...] = ()
    sep: str | None = None
    mixed: bool = False


@dataclass(frozen=True)
class Skip:
    """The rows under this header belong to a table the format does not read: counted, not read."""

    reason: str


# `layout()`'s answers besides a Layout or Skip (module docstring); LEAD cuts no segment
ROW = Skip("")
STRUCTURE = Skip("\n")
LEAD = Skip("\n\n")


@dataclass
class Block:
    """Rows under one layout: `label` (label tokens joined by a blank) and text fields as Categoricals,
    numbers float64, integers int64; `headers`: each row's header line (a block may hold several
    tables of one layout)."""

    layout: Layout
    header_line_no: int
    line_nos: np.ndarray
    label: pd.Categorical | None
    fields: list[pd.Categorical | np.ndarray]
    data: bytes = b""  # the rows as read, for `text()`
    headers: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.line_nos)

    def text(self, row: int) -> str:
        """The line of row `row` as printed (for an error naming it); "" when the block has no bytes."""
        lines = self.data.split(b"\n")
        return lines[row].decode("utf-8", "replace") if row < len(lines) else ""


class Format(Protocol):
    row_bytes: bytes  # or `structure_bytes`; and `aside_bytes` with `aside()` (module docstring)
    header_words: Sequence[bytes]

    def layout(self, line_no: int, text: str) -> Layout | Skip: ...

    def structure(self, line_no: int, text: str) -> None: ...

    def rows(self, block: Block) -> None: ...

    # optional `chunk_end()`: called after the blocks of one stretch are handed over (pidstat merges there)


class Numbers:
    """The file's decimal mark, set by the first value with a fraction; `comma_refusal`: why a comma
    cannot be read (set by a format: sysstat's slash dates with a comma are ambiguous)."""

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


def _whole(token: str) -> float:
    """An `I` field's integer as float64, whatever its size (exact below 2**53)."""
    if not _INT.match(token):
        raise ValueError(f"not an integer: {token!r}")
    return float(int(token))


def _shaped(token: str, shape: str) -> int:
    """A `d` field (`Layout.shapes`) as the integer of its digits; ValueError (its reason) otherwise."""
    if len(token) != len(shape) or not all(
        ("0" <= c <= "9") if s == "#" else c == s for c, s in zip(token, shape, strict=True)
    ):
        raise ValueError(f"{token!r} is no {shape} (# a digit)")
    return int("".join(c for c, s in zip(token, shape, strict=True) if s == "#"))


def _shaped_tail(data: bytes, layout: Layout) -> bytes | None:
    """`data` without the non-digits of its `d` fields, when those fields end every row in their shapes,
    one blank apart and after one (` 2026-11-22 13:47:00`): numpy on the rows' last bytes, and no such
    byte elsewhere; pandas then reads them as integers. None otherwise (the rows go one by one)."""
    width = len(layout.kinds) - layout.kinds.find("d")
    if "d" * width != layout.kinds[-width:] or len(layout.shapes) != width:
        return None
    tail = (" " + " ".join(layout.shapes) + "\n").encode()
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    if not len(ends) or (np.diff(ends, prepend=-1) <= len(tail)).any():  # a token before the tail too
        return None
    rows = buf[ends[:, None] + np.arange(1 - len(tail), 1)]
    shape = np.frombuffer(tail, dtype=np.uint8)
    digit = shape == ord("#")
    if not ((rows[:, ~digit] == shape[~digit]).all() and ((rows[:, digit] - ord("0")) <= 9).all()):
        return None
    marks = bytes(sorted(set(tail) - set(b"# \n")))
    digits = data.translate(None, marks)
    if len(data) - len(digits) != len(ends) * len(tail.translate(None, b"# \n")):  # one elsewhere: `-5`
        return None
    return digits


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
        # rows before any header: the format's `first_layout` if it has one (iotop -q prints its header
        # once, seed 000's excerpt none), else each goes to `structure()`
        self._current: Layout | Skip | None = getattr(fmt, "first_layout", None)
        self._header_line_no = 0
        self._pending: list[Rows] = []
        self._pending_rows = self._pending_bytes = 0
        self._chunk_bytes = min(CHUNK_BYTES, getattr(fmt, "chunk_bytes", CHUNK_BYTES))
        words = [re.compile(re.escape(w)) for w in fmt.header_words]
        self._marks = list(getattr(fmt, "header_marks", ())) or words
        self._words = [] if getattr(fmt, "header_marks", ()) else list(fmt.header_words)  # found by numpy
        self._after_blank = True  # whether the line before the next run or structure line is blank
        self._aside_first = np.zeros(256, dtype=bool)
        self._aside_first[np.frombuffer(getattr(fmt, "aside_bytes", b""), dtype=np.uint8)] = True
        self._aside_words: Sequence[bytes] = getattr(fmt, "aside_words", ())
        self.odd_row: Callable[[int, str, list[str], Layout], list[str] | None] | None = None
        # a line among the rows that reads under no label count: True when the format takes it as none
        # of its rows (iotop: the next line of a command line with newlines), else it is a bad row
        self.foreign: Callable[[int, str], bool] | None = None
        # the chunk `_flush` reads: its bytes and lines, the rows' segments (lines, layout) not read yet,
        # its header lines and the header line in force before it (`_deliver`)
        self._chunk: tuple[bytes, np.ndarray, np.ndarray, np.ndarray, int] = (b"", *[np.empty(0)] * 3, 0)
        self._segments: list[tuple[int, int, Layout | Skip | None]] = []
        self._interned: dict[Layout | Skip, Layout | Skip] = {}
        self._taken: list[int] = []
        self._head0 = 0
        self._run_ends: tuple[bytes, np.ndarray] = (b"", np.empty(0))  # `_deliver`'s run, its line ends

    def error(self, line_no: int, line: str, reason: str) -> ParseError:
        return self.lines.error(line_no, line, reason)

    @property
    def current(self) -> Layout | Skip | None:
        """The layout rows are read by at this point of the file (None before any header)."""
        return self._current

    def run(self) -> None:
        row_bytes = getattr(self.fmt, "row_bytes", None)
        if row_bytes is None:  # every byte but the structure lines' first bytes
            row_bytes = bytes(sorted(set(range(256)) - set(self.fmt.structure_bytes)))
        scan = ByteScan(self.source, self.kind, row_bytes=row_bytes, read_bytes=self._chunk_bytes)
        self.lines = scan.lines
        for item in scan:
            if isinstance(item, Rows):
                for part in _parts(item, self._chunk_bytes):
                    self._pending.append(part)
                    self._pending_rows += part.count
                    self._pending_bytes += len(part.data)
                    if self._pending_rows >= CHUNK_ROWS or self._pending_bytes >= self._chunk_bytes:
                        self._flush()
            else:
                self._flush()
                self._line(*item)
        self._flush()
        self.cut = scan.cut

    def _line(self, line_no: int, text: str) -> None:
        """A structure line: a header if a header mark finds it and the format says so."""
        line = (b"\n\n" if self._after_blank else b"\n") + text.encode() + b"\n"
        self._after_blank = not text.strip()
        if self._after_blank and getattr(self.fmt, "blank_ends", False):
            self._current = None
        if any(rx.search(line) for rx in self._marks):
            found = self.fmt.layout(line_no, text)
            if found is LEAD:
                return
            if found is not ROW and found is not STRUCTURE:
                self._switch(found, line_no, text)
                return
        self.fmt.structure(line_no, text)

    def _switch(self, layout: Layout | Skip, line_no: int, text: str) -> None:
        self._current, self._header_line_no = self._intern(layout), line_no
        if isinstance(layout, Skip):
            self.skips.add(line_no, text, layout.reason)

    def _intern(self, layout: Layout | Skip) -> Layout | Skip:
        """One object per distinct layout, so that `_flush` tells a repeated header by identity (an
        equality test per header was a tenth of a pidstat run); a key that cannot be hashed is kept."""
        try:
            return self._interned.setdefault(layout, layout)
        except TypeError:
            return layout

    # ------------------------------------------------------------ runs of rows

    def _flush(self) -> None:
        if not self._pending:
            return
        raw = b"".join(r.data for r in self._pending)
        first_no = self._pending[0].first_no
        ends = None
        if all(r.ends is not None for r in self._pending):  # the line ends ByteScan found
            at = np.cumsum([0, *(len(r.data) for r in self._pending[:-1])])
            ends = np.concatenate([r.ends + a for r, a in zip(self._pending, at.tolist(), strict=True)])
        self._pending.clear()
        self._pending_rows = self._pending_bytes = 0
        buf = np.frombuffer(raw, dtype=np.uint8)
        if ends is None:
            ends = np.flatnonzero(buf == 10)  # runs hold whole lines
        starts = np.concatenate(([0], ends[:-1] + 1))
        sample = np.bincount(buf[: 1 << 16], minlength=256)  # which bytes are rare: `_word_starts`
        if self._words:  # no Python step per header: a capture of small tables has one every few lines
            found = [_word_starts(buf, word, sample) for word in self._words]  # each in order
            at = found[0] if len(found) == 1 else np.sort(np.concatenate(found))
        else:
            at = _mark_starts(b"\n\n" if self._after_blank else b"\n", raw, self._marks)
        self._after_blank = raw == b"\n" or raw.endswith(b"\n\n")
        # the header lines, and the first mark of each: the marks in order, so without a sort (numastat's
        # four `Node` a header, every 10 lines: np.unique's sorts were a tenth of its parse)
        lines = np.searchsorted(ends, at)
        first = np.flatnonzero(np.diff(lines, prepend=-1))
        heads = lines[first]
        is_row = starts != ends  # blank lines are no rows
        for k in np.flatnonzero(is_row & (buf[starts] == 32) & (buf[ends - 1] == 32)).tolist():
            is_row[k] = bool(raw[starts[k] : ends[k]].strip())  # nor lines of blanks (vmstat's rows)
        blanks = np.flatnonzero(~is_row) if getattr(self.fmt, "blank_ends", False) else None
        aside = self._aside_first[buf[starts]] & is_row
        for word in self._aside_words:
            aside[np.searchsorted(ends, _word_starts(buf, word, sample))] = True
        aside &= is_row
        if aside.any():
            at_aside = np.flatnonzero(aside)
            # gathered with their line ends (a byte mask: `starts` and `ends` cover `raw`), decoded at once
            gathered = buf[np.repeat(aside, ends - starts + 1)].tobytes()
            texts = gathered  # `aside_joined`: as they are, else a str each
            if not getattr(self.fmt, "aside_joined", False):
                texts = gathered.decode("utf-8", "replace").split("\n")[:-1]
            aside[at_aside] = self.fmt.aside(first_no + at_aside, texts)  # type: ignore[attr-defined]
            is_row &= ~aside
        self._chunk, self._taken = (raw, starts, ends, is_row, first_no), []
        self._head0 = self._header_line_no
        lo = 0  # the first line of the current segment
        events, repeats, known = self._events(raw, ends, is_row, heads, at[first], aside, blanks)
        done = 0  # the repeats taken so far
        # stretches of headers of layouts seen before, each another than the one before it (pidstat's
        # tables in turn each interval): cut into segments at once, no Python step each
        simple = np.array([type(f) is Layout for f in known] + [False], dtype=bool)
        breaks = np.flatnonzero(~simple)  # the events that are none: where each stretch ends
        ks = np.array([e[0] for e in events], dtype=np.int64)
        i = 0
        while i < len(events):
            k, word_at = events[i]
            stop = i  # the end of a stretch from here
            if simple[i] and known[i] is not self._current:
                stop = int(breaks[np.searchsorted(breaks, i)])
            if stop - i > 1:
                lo, done = self._stretch(ks[i:stop], known[i:stop], repeats, done, lo, first_no, is_row)
                i = stop
                continue
            i += 1
            while done < len(repeats) and repeats[done] < k:  # repeats before it, in order
                self._taken.append(repeats[done])
                self._header_line_no = first_no + repeats[done]
                done += 1
            if word_at < 0:  # a blank line ending the table above it (`blank_ends`): rows after it are none
                self._segment(lo, k)
                lo, self._current = k + 1, None
                continue
            ident = raw[word_at : ends[k]]
            found = self._layouts.get(ident)
            text = None
            if found is None:  # the format sees it after the rows before it: notes, errors in file order
                self._segment(lo, k)
                self._deliver()
                lo = k
                text = raw[starts[k] : ends[k]].decode("utf-8", "replace")
                found = self.fmt.layout(first_no + k, text)
                if found is not ROW and found is not STRUCTURE:  # those may hang on text before the mark
                    self._layouts[ident] = found = self._intern(found)
            if found is ROW:
                continue
            is_row[k] = False
            if found is LEAD:
                continue
            if found is not STRUCTURE:
                self._taken.append(k)
            if found is self._current and not isinstance(found, Skip):
                self._header_line_no = first_no + k
                continue  # a repeat: the rows go on under the same layout
            self._segment(lo, k)
            lo = k + 1
            if type(found) is Layout:  # no text needed: no decoding per header
                self._current, self._header_line_no = found, first_no + k
                continue
            if text is None:
                text = raw[starts[k] : ends[k]].decode("utf-8", "replace")
            if found is STRUCTURE:
                self._deliver()
                self.fmt.structure(first_no + k, text)
            else:
                self._switch(found, first_no + k, text)
        if done < len(repeats):
            self._taken += repeats[done:]
            self._header_line_no = first_no + repeats[-1]
        self._segment(lo, len(ends))
        self._deliver()

    def _stretch(
        self,
        ks: np.ndarray,
        known: list,
        repeats: list[int],
        done: int,
        lo: int,
        first_no: int,
        is_row: np.ndarray,
    ) -> tuple[int, int]:
        """`_flush`'s step for headers at lines `ks` of layouts `known` (each seen before, each unlike
        the one before it), all at once. Returns (the next segment's first line, repeats taken so far)."""
        last = int(ks[-1])
        upto = done + int(np.searchsorted(np.asarray(repeats[done:], dtype=np.int64), last))
        is_row[ks] = False
        taken = np.concatenate([np.asarray(repeats[done:upto], dtype=np.int64), ks])
        self._taken += np.sort(taken).tolist()
        los = np.concatenate(([lo], ks[:-1] + 1))
        cut = ks > los
        layouts = [self._current, *known[:-1]]
        spans = zip(los[cut].tolist(), ks[cut].tolist(), np.flatnonzero(cut).tolist(), strict=True)
        self._segments += [(a, b, layouts[m]) for a, b, m in spans]
        self._current, self._header_line_no = known[-1], first_no + last
        return last + 1, upto

    def _events(
        self,
        raw: bytes,
        ends: np.ndarray,
        is_row: np.ndarray,
        heads: np.ndarray,
        words: np.ndarray,
        aside: np.ndarray,
        blanks: np.ndarray | None,
    ) -> tuple[list[tuple[int, int]], list[int], list]:
        """(the header lines `_flush` steps through as (line, mark offset), blank lines ending a table
        with mark -1; the plain repeats, a seen header of the layout before it, taken out at once:
        sysstat's header each interval; each event's layout known when the chunk began, or None)."""
        mine = ~aside[heads]
        found = self._known(raw, words[mine], ends[heads[mine]])
        heads, words = heads[mine].tolist(), words[mine].tolist()
        events = list(zip(heads, words, strict=True))
        if blanks is not None and len(blanks):
            ending = _ending_blanks(blanks, is_row, np.asarray(heads, dtype=np.int64)).tolist()
            if ending:
                merged = sorted([*zip(events, found, strict=True), *(((k, -1), None) for k in ending)])
                events, found = [e for e, _ in merged], [f for _, f in merged]
        before = [self._current, *found][: len(found)]
        plain = [type(f) is Layout and f is b for f, b in zip(found, before, strict=True)]
        repeats = [e[0] for e, p in zip(events, plain, strict=True) if p]
        if repeats:
            is_row[repeats] = False
        kept = [(e, f) for e, f, p in zip(events, found, plain, strict=True) if not p]
        return [e for e, _ in kept], repeats, [f for _, f in kept]

    def _known(self, raw: bytes, words: np.ndarray, stops: np.ndarray) -> list:
        """The layout (or None) each header text `raw[words:stops]` was seen with: many told apart by
        numpy (bytes and length hashed as rows), a lookup per distinct text."""
        sizes = stops - words
        if len(words) < 256 or int(sizes.max()) > 1024:
            return [self._layouts.get(raw[w:e]) for w, e in zip(words.tolist(), stops.tolist(), strict=True)]
        width = int(sizes.max())
        buf = np.frombuffer(raw + bytes(width), dtype=np.uint8)
        texts = np.empty((len(words), width + 2), dtype=np.uint8)
        texts[:, :width] = np.lib.stride_tricks.sliding_window_view(buf, width)[words]
        texts[:, :width][np.arange(width) >= sizes[:, None]] = 0
        texts[:, width:] = sizes.astype("<u2").view(np.uint8).reshape(-1, 2)
        codes, firsts = _factor_rows(texts)
        distinct = np.empty(len(firsts), dtype=object)
        spans = zip(words[firsts].tolist(), stops[firsts].tolist(), strict=True)
        distinct[:] = [self._layouts.get(raw[w:e]) for w, e in spans]
        return distinct[codes].tolist()

    def _segment(self, lo: int, hi: int) -> None:
        """The rows among lines lo..hi-1 are under the current layout: noted, read by `_deliver`."""
        if hi > lo:
            self._segments.append((lo, hi, self._current))

    def _deliver(self) -> None:
        """Read the rows noted so far and hand them to the format: one Block per layout in order of
        first rows (pidstat's -u, -d, -w tables interleave), then `chunk_end()`. Called before the
        format sees any other line, so it sees the file in order; the first bad row of the chunk is
        raised after every layout was tried."""
        segments, self._segments = self._segments, []
        if not segments:
            return
        raw, starts, ends, is_row, first_no = self._chunk
        los = np.array([s[0] for s in segments], dtype=np.int64)
        rows = np.flatnonzero(is_row[los[0] : segments[-1][1]]) + los[0]
        seg = np.searchsorted(los, rows, side="right") - 1
        groups: dict[int, int] = {}  # id(layout) -> group, in order of first segment
        layouts = [s[2] for s in segments]
        seg_group = np.array([groups.setdefault(id(x), len(groups)) for x in layouts], dtype=np.int64)
        row_group = seg_group[seg]
        taken = np.array([*self._taken, -1], dtype=np.int64)  # -1: no header in this chunk yet
        above = np.searchsorted(taken[:-1], rows) - 1  # the last header above each row in this chunk
        headers = np.where(above >= 0, first_no + taken[above], self._head0)
        blocks: list[Block] = []
        errors: list[ParseError] = []
        for g, layout in enumerate({id(x): x for x in layouts}.values()):
            mine = row_group == g
            lines = rows[mine]
            if not len(lines):
                continue
            if isinstance(layout, Skip):
                self.skips.count += len(lines)
                continue
            if layout is None:  # rows before any header: the format says what they are
                for k in lines.tolist():
                    self.fmt.structure(first_no + k, raw[starts[k] : ends[k]].decode("utf-8", "replace"))
                continue
            gaps = np.flatnonzero(np.diff(lines) != 1)
            run_first = lines[np.concatenate(([0], gaps + 1))]
            run_last = lines[np.concatenate((gaps, [len(lines) - 1]))]
            data = b"".join(
                raw[a : b + 1]
                for a, b in zip(starts[run_first].tolist(), ends[run_last].tolist(), strict=True)
            )
            self._run_ends = (data, np.cumsum(ends[lines] - starts[lines] + 1) - 1)  # no search for them
            line_nos = first_no + lines
            try:
                block = self._bulk(data, line_nos, layout)
                if block is None:
                    texts = data.decode("utf-8", "replace").split("\n")[:-1]
                    items = list(zip(line_nos.tolist(), texts, strict=True))
                    block = self.read_lines(items, layout, headers[mine])
                else:
                    block.data, block.headers = data, headers[mine]
            except ParseError as exc:
                errors.append(exc)
                continue
            if len(block):  # none when `foreign` claimed every row
                block.header_line_no = int(block.headers[0])
                blocks.append(block)
        if errors:
            raise min(errors, key=lambda exc: exc.line_no)
        for block in blocks:
            self.fmt.rows(block)
        chunk_end = getattr(self.fmt, "chunk_end", None)
        if blocks and chunk_end is not None:
            chunk_end()

    def _bulk(self, data: bytes, line_nos: np.ndarray, layout: Layout) -> Block | None:
        """The run read by pandas, or None when it cannot be proven to read as `read_lines` would."""
        if layout.gap is not None and layout.gap[0].encode() not in data:  # no row prints the gap token:
            block = self._bulk(data, line_nos, _gapless(layout))  # read as without it (the byte grids)
            if block is not None:
                block.layout = layout
            return block
        kinds, rest, gaps = layout.kinds, None, 0
        if layout.gap is not None:
            if (stood := _stand_in(data, layout)) is None:
                return None
            data, gaps = stood
        if layout.rest:  # the rest fields read apart, the tokens before them as any run's
            if (cut := self._cut_rest(data, layout)) is None:
                return None
            nlab, data, rest, marked = cut
            kinds = kinds[:-1]
        else:
            sep = layout.sep.encode() if layout.sep else None
            nlab, marked = len(data[: data.find(b"\n")].split(sep)) - len(kinds), None
        if layout.shapes and (data := _shaped_tail(data, layout)) is None:
            return None
        if layout.mixed and (mark := self.numbers.chunk_mark(data)) is not None:  # rows of either count
            fixed = _fixed(data, len(line_nos), layout, max(layout.labels), mark)
            if fixed is not None:
                if self.numbers.decimal is None and fixed[2]:
                    self.numbers.decimal = mark
                return Block(layout, self._header_line_no, line_nos, *fixed[:2])
        scope = data if marked is None else marked.scope  # the bytes that hold the numbers' marks
        mark = self.numbers.chunk_mark(scope)
        if nlab not in layout.labels or mark is None:
            return None
        # with `rest`, the tokens before it (`_cut_rest`), when each row reads under the first label count
        first = rest is None or nlab == layout.labels[0]
        grid = first and marked is None and layout.sep is None  # `_fixed` reads blank-separated grids
        fixed = _fixed(data, len(line_nos), layout, nlab, mark) if grid else None
        # `d` fields too, their digits alone by now (`_shaped_tail`): vmstat -w -t's rows a wide value
        # pushes, else pandas' (24 h: 0.21 -> 0.18 s)
        if fixed is None and grid and rest is None and not layout.gap and not set(kinds) - set("tfiId"):
            ends = self._run_ends[1] if self._run_ends[0] is data else None
            realigned = _realigned_rows(data, nlab + len(kinds), ends)  # fields not in columns, or tabs
            fixed = None if realigned is None else _fixed(realigned, len(line_nos), layout, nlab, mark)
        if fixed is not None:
            label, fields, marked = fixed
            if rest is not None:
                if len(rest) != len(line_nos):
                    return None
                fields.append(rest)
            if self.numbers.decimal is None and marked:
                self.numbers.decimal = mark
            return Block(layout, self._header_line_no, line_nos, label, fields)
        text_cols = list(range(nlab)) + [nlab + i for i, kind in enumerate(kinds) if kind == "t"]
        placeholders = "I" in kinds and layout.sep is None and b" -" in data  # `-` read as -1, made NaN below
        if placeholders:  # so no -1 may be printed
            if b" -1 " in data or b" -1\n" in data:
                return None
            data = data.replace(b" - ", b" -1 ").replace(b" - ", b" -1 ").replace(b" -\n", b" -1\n")
        comment = None if marked is None else _REST_MARK.decode()
        if layout.sep is None:
            df = _read_csv(data, nlab + len(kinds), text_cols, mark, comment)
        else:
            df = _read_sep(data, nlab, kinds, layout.sep, mark)
        if df is None or len(df) != len(line_nos):
            return None
        # `Layout.sep` rows of text alone: Arrow's fields are the text as printed, nothing to prove
        verbatim = layout.sep is not None and set(kinds) == {"t"}
        texts = [] if verbatim else _counts(df, text_cols, layout.sep)
        blank = layout.sep is None and any(_BLANK.search(t) for t, _ in texts or ())  # `split()` splits there
        if texts is None or blank:
            return None
        texts += [] if marked is None else marked.texts
        if not verbatim and not _plain(data, texts, layout.sep):  # None: a "" value, a row cut short
            return None
        fields: list[pd.Categorical | np.ndarray] = []
        numbers = []
        dashes = 0  # `-` placeholders read as -1
        for i, kind in enumerate(kinds):
            col = df[nlab + i]
            if kind == "t":
                fields.append(col.array)
                continue
            values = col.to_numpy()
            if values.dtype.kind not in "if" or (kind in "iId" and values.dtype.kind != "i"):
                return None
            numbers.append(values)
            if kind == "I":
                holes = values == -1
                dashes += int(holes.sum())
                values = np.where(holes, np.nan, values)
            fields.append(values if kind in "id" else np.asarray(values, dtype=np.float64))
        if not verbatim and not _as_printed(data, mark, numbers, texts):
            return None
        # a `-` read as -1 elsewhere (text); counted only where `-` was replaced (a fifth of a run's time)
        if placeholders and dashes != data.count(b" -1 ") + data.count(b" -1\n"):
            return None
        if rest is not None:
            if len(rest) != len(df) or (nlab != layout.labels[0] and not self._others_fail(df, nlab, layout)):
                return None
            fields.append(rest)
        if gaps and not _fill_gaps(fields, layout, gaps):
            return None
        if self.numbers.decimal is None and mark.encode() in scope:
            self.numbers.decimal = mark
        return Block(layout, self._header_line_no, line_nos, _joined_label(df, nlab), fields)

    def _cut_rest(
        self, data: bytes, layout: Layout
    ) -> tuple[int, bytes, pd.Categorical, _Marked | None] | None:
        """A run of `rest` rows as (label count, tokens before the rest fields, rest fields, None) when
        the rest fields start in one column or can be laid out so (`_aligned_rest`, `_realigned_rest`),
        else (label count, `data` marked by `_marked_rest`, rest fields, `_Marked`). The label count is
        the first of `labels` the first row reads under (`_others_fail` proves the others)."""
        width = len(layout.kinds)
        tokens = data[: data.find(b"\n")].split()
        first = (n for n in layout.labels if len(tokens) >= n + width and _reads(tokens[n], layout.kinds[0]))
        nlab = next(first, None)
        line_ends = self._run_ends[1] if self._run_ends[0] is data else None
        # laid out again only for `_fixed`, which reads no gap and the first label count alone
        grid = not layout.gap and nlab == layout.labels[0] and not set(layout.kinds[:-1]) - set("tfiI")
        if nlab is not None and (
            aligned := _aligned_rest(data, nlab + width - 1, line_ends)
            or (grid and _realigned_rest(data, nlab + width - 1, line_ends))
        ):
            return nlab, *aligned, None
        if nlab is None or (cut := _marked_rest(data, nlab + width - 1)) is None:
            return None
        return nlab, *cut

    def _others_fail(self, df: pd.DataFrame, nlab: int, layout: Layout) -> bool:
        """Whether `_row` reads no row of `df` (read with `nlab` labels) under the label count it tries
        first: two counts, a number first field, and no row printing a number at that token."""
        if len(layout.labels) != 2 or layout.kinds[0] == "t" or self.odd_row is not None:
            return False
        if layout.gap is not None and layout.gap[1] == 0:
            return False
        other = layout.labels[0]  # token `other` of each row is column `other` of `df`, as text or not
        if other >= len(df.columns) or not isinstance(df[other].dtype, pd.CategoricalDtype):
            return False
        return not any(_reads(str(v).encode(), layout.kinds[0]) for v in df[other].cat.categories)

    def read_lines(
        self, items: Sequence[tuple[int, str]], layout: Layout, headers: np.ndarray | None = None
    ) -> Block:
        """Rows read one by one by the layout (the grammar `_bulk` proves it agrees with); the first
        bad row is a ParseError naming its line. Formats call it for rows they hold apart (`Average:`).
        `headers`: each row's header line (default the current); rows `foreign` claims are left out."""
        labels: list[str] = []
        columns: list[list] = [[] for _ in layout.kinds]
        nos: list[int] = []
        kept: list[int] = []
        for k, (line_no, text) in enumerate(items):
            header = self._header_line_no if headers is None else int(headers[k])
            row = self._row(line_no, text, layout, header)
            if row is None:
                continue
            labels.append(row[0])
            for col, value in zip(columns, row[1], strict=True):
                col.append(value)
            nos.append(line_no)
            kept.append(k)
        fields: list[pd.Categorical | np.ndarray] = [
            pd.Categorical(col)
            if kind == "t"
            else np.array(col, dtype=np.int64 if kind in "id" else np.float64)
            for col, kind in zip(columns, layout.kinds, strict=True)
        ]
        label = pd.Categorical(labels) if any(layout.labels) else None
        at = np.array(kept, dtype=np.int64)
        head = np.full(len(at), self._header_line_no, dtype=np.int64) if headers is None else headers[at]
        data = "".join(items[k][1] + "\n" for k in kept).encode("utf-8", "replace")
        first = int(head[0]) if len(head) else self._header_line_no
        return Block(layout, first, np.array(nos, dtype=np.int64), label, fields, data, head)

    def _row(self, line_no: int, text: str, layout: Layout, header: int) -> tuple[str, list] | None:
        """One row's label and values (None: `foreign` claimed it), else a ParseError naming the line."""
        width = len(layout.kinds)
        reason = ""
        for tokens in _tries(text, layout):
            nlab = len(tokens) - width
            if nlab not in layout.labels and self.odd_row is not None:
                fixed = self.odd_row(line_no, text, tokens, layout)
                if fixed is not None:
                    tokens, nlab = fixed, len(fixed) - width
            if nlab not in layout.labels:
                count = f"{len(tokens)} fields, the header at line {header} has {width + layout.labels[0]}"
                reason = reason or count
                continue
            try:
                shapes = iter(layout.shapes)
                values = [
                    token
                    if kind == "t"
                    else _NAN
                    if token is None  # a field `Layout.gap` stands for
                    else integer(token)
                    if kind == "i"
                    else _shaped(token, next(shapes))
                    if kind == "d"
                    else (_NAN if token == "-" else _whole(token))
                    if kind == "I"
                    else self.numbers.number(token)
                    for kind, token in zip(layout.kinds, tokens[nlab:], strict=True)
                ]
            except ValueError as exc:
                reason = reason or str(exc)
                continue
            return " ".join(tokens[:nlab]), values
        if self.foreign is not None and self.foreign(line_no, text):
            return None
        raise self.error(line_no, text, reason)


_GAPLESS: dict[int, tuple[Layout, Layout]] = {}


def _gapless(layout: Layout) -> Layout:
    """`layout` without its `gap`, for a run where no row prints the gap token (one per layout: by
    identity, as a `key` may not hash)."""
    kept = _GAPLESS.get(id(layout))
    if kept is None or kept[0] is not layout:
        kept = _GAPLESS[id(layout)] = (layout, dataclasses.replace(layout, gap=None))
    return kept[1]


def _tries(text: str, layout: Layout) -> Iterator[list]:
    """A row's tokens as `_row` tries them: split at blanks; with `rest` once per label count, the last
    field keeping its blanks; a `gap` token in place of its fields becomes a None for each."""
    width = len(layout.kinds)
    token, at, count = layout.gap or ("", 0, 1)
    if layout.sep is not None:
        yield text.split(layout.sep)
        return
    if not layout.rest:
        tokens = text.split()
        n = len(tokens) - (width - count + 1)  # the label count if the row prints the gap
        if layout.gap is not None and n in layout.labels and tokens[n + at] == token:
            tokens[n + at : n + at + 1] = [None] * count
        yield tokens
        return
    for n in layout.labels:
        tokens = text.split(None, n + width - 1)
        if layout.gap is not None and len(tokens) > n + at and tokens[n + at] == token:
            tokens = text.split(None, n + width - count)
            tokens[n + at : n + at + 1] = [None] * count
        yield tokens


def _reads(token: bytes, kind: str) -> bool:
    """Whether `token` reads as a field of `kind` (a number in either decimal mark)."""
    text = token.decode("utf-8", "replace")
    if kind == "t":
        return True
    if kind == "f":
        return bool(_POINT.match(text) or _COMMA.match(text))
    return bool(_INT.match(text)) or (kind == "I" and text == "-")


def _stand_in(data: bytes, layout: Layout) -> tuple[bytes, int] | None:
    """`data` with each `Layout.gap` token (between blanks) replaced by a token per field it stands for,
    `0` for a number and `\\x01` for text (a byte no capture holds: `_fill_gaps` finds the rows by it),
    and how many were replaced; None when the gap cannot be read so (no text field among its fields,
    the rest field among them, a `\\x01` printed)."""
    token, at, count = layout.gap or ("", 0, 0)
    kinds = layout.kinds[at : at + count]
    if "t" not in kinds or _STAND_IN in data or (layout.rest and at + count >= len(layout.kinds)):
        return None
    fill = b" " + b" ".join(_STAND_IN if kind == "t" else b"0" for kind in kinds)
    gap = b" " + token.encode()
    found = data.count(gap + b" ") + data.count(gap + b"\n")
    return data.replace(gap + b" ", fill + b" ").replace(gap + b"\n", fill + b"\n"), found


def _fill_gaps(fields: list[pd.Categorical | np.ndarray], layout: Layout, gaps: int) -> bool:
    """The fields of the rows `_stand_in` filled made missing (NaN, text NA); False unless each of
    the `gaps` stand-ins is in one row's gap fields (as `_row` reads them), one to a row."""
    _, at, count = layout.gap or ("", 0, 0)
    span = range(at, at + count)
    texts = [np.asarray(fields[i] == _STAND_IN.decode()) for i in span if layout.kinds[i] == "t"]
    rows = texts[0]
    if int(rows.sum()) != gaps or any(not np.array_equal(rows, other) for other in texts[1:]):
        return False
    for i in span:
        if layout.kinds[i] == "t":
            fields[i] = fields[i].remove_categories([_STAND_IN.decode()])
        else:
            fields[i] = np.where(rows, np.nan, fields[i])
    return True


@dataclass(frozen=True)
class _Marked:
    """What `_bulk` checks a run marked by `_marked_rest` by: `scope`, the decimal marks printed before
    the rest fields (`,` and `.` as found), and `texts`, the rest fields and marks as `_counts` gives."""

    scope: bytes
    texts: list[tuple[bytes, int]]


def _marked_rest(data: bytes, before: int) -> tuple[bytes, pd.Categorical, _Marked] | None:
    """`data` with `_REST_MARK` put after each row's token number `before - 1` (0-based, tokens between
    spaces: pandas' `comment` there stops the row), and each row's rest from its token `before` on, read
    by Arrow from the same bytes; None when a row has no such token or the rest would start elsewhere
    for `str.split` (a blank other than a space first: left in the rest field, refused here)."""
    if before < 1 or _REST_MARK in data:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    sep = buf == 10
    line_ends = np.flatnonzero(sep)
    sep |= buf == 32
    starts = np.flatnonzero(sep[:-1] > sep[1:]) + 1  # where tokens start, but at 0
    if not sep[0]:
        starts = np.concatenate(([0], starts))
    at = np.searchsorted(starts, np.concatenate(([0], line_ends[:-1] + 1))) + before
    if at[-1] >= len(starts) or (starts[at] > line_ends).any():
        return None
    end = starts[at] - 1  # a blank: back to the one after the last token before the rest
    while (blank := buf[end - 1] == 32).any():
        end -= blank
    marked = bytearray(data)
    np.frombuffer(marked, dtype=np.uint8)[end] = _REST_MARK[0]
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(pa.py_buffer(marked)),
            read_options=pa_csv.ReadOptions(column_names=["head", "rest"]),
            parse_options=pa_csv.ParseOptions(delimiter=_REST_MARK.decode(), quote_char=False),
            convert_options=pa_csv.ConvertOptions(
                column_types={"rest": pa.dictionary(pa.int32(), pa.string())}, include_columns=["rest"]
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    column = table.column("rest").unify_dictionaries().combine_chunks()
    values = [v.lstrip(" ") for v in column.dictionary.to_pylist()]  # the blanks before the rest
    if len(column) != len(line_ends) or any(not v or v[0].isspace() for v in values):
        return None
    distinct, where = np.unique(np.array(values, dtype=object), return_inverse=True)
    codes = where.ravel()[column.indices.to_numpy(zero_copy_only=False)]
    counts = np.bincount(codes, minlength=len(distinct)).tolist()
    texts = [(v.encode(), n) for v, n in zip(distinct.tolist(), counts, strict=True) if n]
    texts.append((_REST_MARK, len(line_ends)))
    # the decimal marks before the rest fields: those of `data` but the rest fields'
    scope = b"".join(m for m in (b",", b".") if data.count(m) > sum(t.count(m) * n for t, n in texts))
    rest = pd.Categorical.from_codes(codes, categories=distinct.tolist())
    return bytes(marked), rest, _Marked(scope, texts)


def _aligned_rest(
    data: bytes, before: int, ends: np.ndarray | None = None
) -> tuple[bytes, pd.Categorical] | None:
    """(tokens before the rest field as rows of one length for `_fixed`, rest fields) when every row's
    rest field starts in the first row's column (top pads the fields before COMMAND), else None."""
    spans = [m.start() for m in re.finditer(rb"[^ ]+", data[: data.find(b"\n")])]
    if before < 1 or len(spans) <= before or b"\0" in data:  # NUL: the byte that pads the rest fields
        return None
    col = spans[before]
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10) if ends is None else ends  # `ends`: where the caller knows them
    starts = np.concatenate(([0], ends[:-1] + 1))
    at = starts + col
    # each row longer than that, a blank before it and a printable ASCII byte at it (none `split` skips)
    if (at >= ends).any() or (buf[at - 1] != 32).any() or ((buf[at] - 0x21) > 0x5D).any():
        return None
    heads = np.lib.stride_tricks.sliding_window_view(buf, col)[starts]
    heads[:, -1] = 10  # over the blank before the rest field
    rest = _rest_column(data, buf, at, ends)
    return None if rest is None else (heads.tobytes(), rest)


def _rest_column(data: bytes, buf: np.ndarray, at: np.ndarray, ends: np.ndarray) -> pd.Categorical | None:
    """The rest fields `data[at:ends]` as a Categorical, each distinct one decoded once (valid UTF-8:
    Arrow string views, a fifth of the time); None when one is over 4096 bytes (NUL pads them)."""
    size = ends - at
    if len(data) < 1 << 31 and _utf8(data):
        return _view_texts(data, at, size)
    longest = int(size.max())
    if longest > 4096:
        return None
    # the rest fields NUL-padded to one length: the rows reaching the end of `data` from a padded copy
    # of their bytes alone (a copy of the whole run cost a tenth of a top run)
    tail = int(np.searchsorted(at, len(buf) - longest, side="right"))
    rests = np.empty((len(at), longest), dtype=np.uint8)
    rests[:tail] = np.lib.stride_tricks.sliding_window_view(buf, longest)[at[:tail]]
    if tail < len(at):
        last = np.frombuffer(data[at[tail] :] + bytes(longest), dtype=np.uint8)
        rests[tail:] = np.lib.stride_tricks.sliding_window_view(last, longest)[at[tail:] - at[tail]]
    rests[np.arange(longest) >= size[:, None]] = 0
    codes, firsts = _factor_rows(rests)
    bounds = zip(at[firsts].tolist(), ends[firsts].tolist(), strict=True)
    texts = np.array([data[a:b].decode("utf-8", "replace") for a, b in bounds], dtype=object)
    distinct, uniq = pd.factorize(texts)  # undecodable bytes may read alike
    return pd.Categorical.from_codes(distinct[codes], categories=uniq)


def _utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _view_texts(data: bytes, at: np.ndarray, size: np.ndarray) -> pd.Categorical:
    """`data[at:at + size]` per row (valid UTF-8, under 2 GB) as a Categorical via Arrow string views
    (16 bytes: length, then 12 bytes inline or the first 4 and the offset): a str per distinct text."""
    padded = data + bytes(16)  # 8-byte reads at every offset stay inside
    words = np.ndarray((len(data) + 9,), dtype="<u8", buffer=padded, strides=(1,))
    views = np.empty((len(at), 2), dtype="<u8")
    views[:, 0] = size.astype(np.uint64) | ((words[at] & _LOW_BYTES[np.minimum(size, 4)]) << np.uint64(32))
    inline = words[at + 4] & _LOW_BYTES[np.clip(size - 4, 0, 8)]
    views[:, 1] = np.where(size > 12, at.astype(np.uint64) << np.uint64(32), inline)
    buffers = [None, pa.py_buffer(views), pa.py_buffer(padded)]
    array = pa.Array.from_buffers(pa.string_view(), len(at), buffers)
    encoded = pc.dictionary_encode(array)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    return pd.Categorical.from_codes(codes, categories=encoded.dictionary.to_pylist())


def _realigned_rest(
    data: bytes, before: int, ends: np.ndarray | None = None
) -> tuple[bytes, pd.Categorical] | None:
    """`_aligned_rest`'s cut where a wide value pushes the rest fields right (ps's VSZ): the first
    `before` tokens laid out by `_grid`, the rest from the next token on. None when a row lacks that
    token, a non-ASCII blank (`_BLANK`) is before its rest field, or `data` holds a NUL."""
    if before < 1 or b"\0" in data:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10) if ends is None else ends
    starts = np.concatenate(([0], ends[:-1] + 1))
    found = _token_starts(buf, starts, ends, before + 1, data.isascii(), exact=False)
    if found is None:
        return None
    tokens, stops, ascii_only = found
    at = tokens[:, before]
    if not ascii_only and _blank_before(data, starts, at + 1):  # allowed in a rest field, after its start
        return None
    rest = _rest_column(data, buf, at, ends)
    return None if rest is None else (_grid(data, tokens[:, :-1], stops[:, :-1]), rest)


def _realigned_rows(data: bytes, count: int, ends: np.ndarray | None = None) -> bytes | None:
    """Rows of exactly `count` tokens laid out by `_grid` for `_fixed` (values pushed right by a wide
    one, tabs: ss); None when a row has another count or a non-ASCII blank (`_BLANK`)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10) if ends is None else ends
    starts = np.concatenate(([0], ends[:-1] + 1))
    ascii_only = data.isascii()
    if not ascii_only and _blank_before(data, starts, ends):
        return None
    found = _token_starts(buf, starts, ends, count, ascii_only, exact=True)
    return None if found is None else _grid(data, found[0], found[1])


def _blank_before(data: bytes, starts: np.ndarray, limit: np.ndarray) -> bool:
    """Whether a non-ASCII blank `str.split` splits at (`_BLANK`) is in a row before its `limit`."""
    for m in _BLANK.finditer(data):
        if m.group()[0] >= 0x80:
            row = int(np.searchsorted(starts, m.start(), side="right")) - 1
            if m.start() < limit[row]:
                return True
    return False


def _grid(data: bytes, tokens: np.ndarray, stops: np.ndarray) -> bytes:
    """The tokens (starts, stops: rows x fields) as rows of one length, each field right-aligned to its
    widest token, one blank between, each row ending with a line end."""
    sizes = stops - tokens
    widths = sizes.max(axis=0).tolist()
    pad = max(widths) + 8  # blanks before `data`: 8-byte reads before the first row's tokens stay in
    padded = b" " * pad + data + bytes(8)
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))  # `words[i]`: 8 bytes
    grid = np.empty((len(tokens), sum(widths) + len(widths)), dtype=np.uint8)
    for lo in range(0, len(grid), 8192):  # 8192 rows at a time: the grid's rows written stay in the cache
        part, col = grid[lo : lo + 8192], 0
        for j, width in enumerate(widths):
            stop, size = stops[lo : lo + 8192, j] + (pad - 8), sizes[lo : lo + 8192, j]
            for k in range(0, width, 8):  # each token right-aligned, 8 bytes from its end at a time
                keep = ~_LOW_BYTES[8 - np.clip(size - k, 0, 8)]  # its own bytes: a blank for the others
                word = (words[stop - k] & keep) | (_BLANKS8 & ~keep)
                take = min(8, width - k)
                cells = word.view(np.uint8).reshape(-1, 8)[:, 8 - take :]
                part[:, col + width - k - take : col + width - k] = cells
            part[:, col + width] = 32
            col += width + 1
    grid[:, -1] = 10
    return grid.tobytes()


def _token_starts(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, count: int, ascii_only: bool, exact: bool
) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(starts, ends of each row's first `count` tokens split at ASCII blanks, whether ASCII); None
    when a row has fewer (`exact`: other) tokens. 512 kB at a time: temporaries stay in the cache."""
    if len(buf) >= 1 << 31:  # offsets kept as int32
        return None
    step = 1 << 19
    cuts = np.unique([0, *np.searchsorted(starts, np.arange(step, len(buf), step)).tolist(), len(starts)])
    firsts, lasts = [], []
    for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        a0 = int(starts[lo])
        piece = buf[a0 : int(ends[hi - 1]) + 1]
        low = np.count_nonzero(piece < 32)
        # the line end (and tabs: ss) the only bytes below the blank (the usual): no lookup per byte
        usual = low == hi - lo or low == hi - lo + np.count_nonzero(piece == 9)
        blank = piece <= 32 if usual else _WHITE[piece]
        edges = np.flatnonzero(blank[1:] != blank[:-1]) + (a0 + 1)  # each token's start and end (a blank)
        if not blank[0]:
            edges = np.concatenate(([a0], edges))
        tok_start, tok_end = edges[0::2], edges[1::2]
        first = np.searchsorted(tok_start, starts[lo:hi])  # each row's first token
        found = np.searchsorted(tok_start, ends[lo:hi]) - first
        if (found != count).any() if exact else (found < count).any():
            return None
        at = first[:, None] + np.arange(count)
        firsts.append(tok_start[at].astype(np.int32))  # offsets in a chunk (< 2 GB): half the memory
        lasts.append(tok_end[at].astype(np.int32))
    return np.concatenate(firsts), np.concatenate(lasts), ascii_only


def _parts(rows: Rows, size: int) -> Iterator[Rows]:
    """A run of rows in pieces of about `size` bytes (whole lines: `ByteScan` reads 4 MB at once)."""
    if len(rows.data) <= size or rows.ends is None:
        yield rows
        return
    ends = rows.ends
    cuts = np.searchsorted(ends, np.arange(size, len(rows.data), size))  # a line end past each
    lo = at = 0  # the piece's first line, its first byte
    for k in [*np.unique(np.minimum(cuts, len(ends) - 1)).tolist(), len(ends) - 1]:
        if k >= lo:
            end = int(ends[k]) + 1
            yield Rows(rows.data[at:end], rows.first_no + lo, k + 1 - lo, ends[lo : k + 1] - at)
            lo, at = k + 1, end


def _ending_blanks(blanks: np.ndarray, is_row: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """The blank lines (`blank_ends`) not followed by a header line, which ends the table anyway (ss's
    blank line above each `Transport` header costs no Python step)."""
    rows = np.flatnonzero(is_row)
    after = np.searchsorted(rows, blanks)
    if not len(rows):  # no row follows any of them: each ends its table (an array, not a scalar -1)
        return blanks
    nxt = np.where(after < len(rows), rows[np.minimum(after, len(rows) - 1)], -1)
    header_next = np.isin(nxt, heads)
    return blanks[~header_next]


def _word_starts(buf: np.ndarray, word: bytes, counts: np.ndarray | None = None) -> np.ndarray:
    """Where `word` is in `buf`: the places of its rarest non-blank byte (by `counts`, a sample's byte
    counts; else its first non-blank), kept while the other bytes match, rarest first."""
    rarity = [0] * 256 if counts is None else counts.tolist()
    order = sorted(range(len(word)), key=lambda k: (word[k] == 32, rarity[word[k]], k))
    first = order[0]
    at = np.flatnonzero(buf[first : len(buf) - len(word) + 1 + first] == word[first])
    for k in order[1:]:
        at = at[buf[at + k] == word[k]]
    return at


def _mark_starts(before: bytes, raw: bytes, marks: Sequence[re.Pattern[bytes]]) -> np.ndarray:
    """Where the header marks find text in `raw` (group 1, else the match start), sorted, as if
    searched in `before + raw` (only the first two lines are searched again, with `before`)."""
    head = before + raw[: raw.find(b"\n", raw.find(b"\n") + 1) + 1 or len(raw)]
    found = {m.start(g) for rx in marks for g in [1 if rx.groups else 0] for m in rx.finditer(raw)}
    found.update(m.start(1 if rx.groups else 0) - len(before) for rx in marks for m in rx.finditer(head))
    return np.sort(np.array([f for f in found if f >= 0], dtype=np.int64))


def _fixed(
    data: bytes, count: int, layout: Layout, nlab: int, mark: str
) -> tuple[pd.Categorical | None, list[pd.Categorical | np.ndarray], bool] | None:
    """The run read as a byte grid when its rows are laid out alike (sysstat pads its fields): (label,
    fields, whether a value has a decimal mark) as `read_lines` would read them, else None.

    Rows as long as the first; fields the runs of columns not blank in every row, as many as its
    tokens, so rows split into them as `str.split()` does unless a field holds a blank or none. With
    `rest`, `data` holds the tokens before the rest field (`_cut_rest`). Text is checked once per
    distinct field. Number fields, `;`-joined, go to Arrow's CSV reader (rounded as `float()`, refusing
    a blank inside); holding only digits, `-` and the mark between digits where the first row has it
    rules out forms Arrow reads and the grammar refuses (`1e5`, `inf`, `+5`, `.5`, `5.`).
    """
    size = data.find(b"\n") + 1
    kinds = layout.kinds[:-1] if layout.rest else layout.kinds  # `rest`: `data` holds the tokens before it
    if size == 0 or len(data) != size * count or layout.gap or set(kinds) - set("tfiId"):
        return None  # `d` fields: their digits alone (`_shaped_tail`), read as `i`
    row = data[: size - 1]
    grid = np.frombuffer(data, dtype=np.uint8).reshape(count, size)
    # the fields: runs of columns not blank in every row (text may be left-aligned: top's USER)
    used = np.zeros(size - 1, dtype=np.uint8)
    for lo in range(0, count, 4096):  # OR of each byte but the blank, a slice at a time: no mask of the grid
        used |= np.bitwise_or.reduce(grid[lo : lo + 4096, :-1] ^ 32, axis=0)
    used = (used != 0).view(np.int8)
    edges = np.flatnonzero(np.diff(used, prepend=np.int8(0), append=np.int8(0))).tolist()
    if len(edges) != 2 * (nlab + len(kinds)) or not (grid[:, -1] == 10).all():
        return None
    seps = edges[1:-1:2]  # the blank column after each field but the last
    bounds = [0, *seps, size - 1]  # field c: from bounds[c] (its blank) up to bounds[c + 1]
    cells = grid  # a copy once an `I` field's `-` is written over
    texts = [(None, 0, nlab)] if nlab else []  # (field, columns): the label's tokens, each `t` field
    texts += [(i, nlab + i, nlab + i + 1) for i, kind in enumerate(kinds) if kind == "t"]
    label, fields = None, {}
    for i, lo, hi in texts:  # the columns some row prints in (the blank ones before: no hashing)
        words = _words(grid[:, edges[2 * lo] : edges[2 * hi - 1]], hi - lo, i is None and layout.mixed)
        if words is None:
            return None
        if i is None:
            label = words
        else:
            fields[i] = words
    numbers, marked = [], False  # the number fields left to Arrow; whether a value read apart has a mark
    holes = {}  # `I` fields: the rows printing `-` alone, read as 0 and made NaN
    for i, kind in enumerate(kinds):
        c = nlab + i
        if kind == "t":
            continue
        field = grid[:, edges[2 * c] : edges[2 * c + 1]]
        if kind == "I":  # a row's field is `-` alone: its one byte that is no blank (columns contiguous:
            columns = np.ascontiguousarray(field.T)  # reductions over rows are 7 times as fast)
            holes[i] = ((columns != 32).sum(axis=0, dtype=np.int32) == 1) & (columns == ord("-")).any(axis=0)
            if holes[i].any():
                dash = field == ord("-")
                cells = grid.copy() if cells is grid else cells
                cells[:, edges[2 * c] : edges[2 * c + 1]][dash & holes[i][:, None]] = ord("0")
                field = cells[:, edges[2 * c] : edges[2 * c + 1]]
        if (digits := _digits(field, "i" if kind == "d" else kind)) is not None:
            fields[i] = digits
            continue
        few = _few_numbers(field, "i" if kind in "Id" else kind, mark)
        if few is None:
            numbers.append(c)
            continue
        fields[i], point = few
        marked |= point
    points = [at for c in numbers if (at := row.find(mark.encode(), bounds[c], bounds[c + 1])) >= 0]
    if points:
        at = np.array(points)
        digit = 9  # uint8 arithmetic: anything but 0-9 minus "0" wraps above 9
        if not (
            (grid[:, at] == ord(mark)).all()
            and ((grid[:, at - 1] - ord("0")) <= digit).all()
            and ((grid[:, at + 1] - ord("0")) <= digit).all()
        ):
            return None
    if numbers:  # those fields alone, each from the blank before it (a `;` but the first's) to Arrow
        columns = [*(k for c in numbers for k in range(bounds[c], bounds[c + 1])), size - 1]
        packed = cells.take(columns, axis=1)  # C order (`cells[:, columns]` may not be)
        packed[:, np.cumsum([bounds[c + 1] - bounds[c] for c in numbers[:-1]], dtype=np.int64)] = ord(";")
        if len(packed.tobytes().translate(None, _NUMERAL)) != count * len(points):  # C: a third of numpy's
            return None
        types = {k: pa.int64() if kinds[c - nlab] in "iId" else pa.float64() for k, c in enumerate(numbers)}
        table = _read_fields(pa.py_buffer(packed), len(numbers), types, mark)
        if table is None or table.num_rows != count:
            return None
        for k, c in enumerate(numbers):
            fields[c - nlab] = table.column(str(k)).to_numpy()
    for i, hole in holes.items():
        fields[i] = np.where(hole, np.nan, fields[i].astype(np.float64))
    return label, [fields[i] for i in range(len(kinds))], bool(points) or marked


def _digits(block: np.ndarray, kind: str) -> np.ndarray | None:
    """A number field of ASCII digits alone, right-aligned behind blanks (counts, `numastat -c`'s MB), as
    `read_lines` reads it, from its digits (no parser: a tenth of Arrow's time); None for any other form
    (a sign, a decimal mark, left-aligned) or more than 18 digits (int64; a float rounds as `float()`)."""
    width = block.shape[1]
    if width > 18:
        return None
    if not _DIGIT_OR_BLANK[block[0]].all():  # the usual refusal (a decimal mark) seen in the first row
        return None
    columns = np.ascontiguousarray(block.T)  # a column at a time, contiguous: 4 times as fast
    digit = (columns - ord("0")) < 10  # uint8 arithmetic: anything but 0-9 minus "0" wraps above 9
    if not digit[-1].all() or np.count_nonzero(digit) + np.count_nonzero(columns == 32) != columns.size:
        return None
    if (digit[:-1] > digit[1:]).any():  # a blank after a digit: two tokens
        return None
    value = np.zeros(len(block), dtype=np.int64)
    for column in columns:
        value *= 10
        value += column & 15  # a blank's low bits are 0
    return value if kind == "i" else value.astype(np.float64)


def _few_numbers(block: np.ndarray, kind: str, mark: str) -> tuple[np.ndarray, bool] | None:
    """A number field of few distinct values (top's PID, NI, %CPU) as `read_lines` reads it, each distinct
    value read once: (the values, whether one has the decimal mark); None when they are many (Arrow reads
    those faster) or one does not read (a blank inside, another form: Arrow or the rows say)."""
    if len(block) > 8192 and len(_factor_rows(block[:1024])[1]) > 128:  # many already: Arrow's
        return None
    codes, firsts = _factor_rows(block)
    if len(firsts) * 8 > len(block):
        return None
    tokens = [block[i].tobytes().strip(b" ") for i in firsts.tolist()]
    form = _NUMBER_FORMS["i" if kind == "i" else mark]
    if not all(form.fullmatch(token) for token in tokens):
        return None
    if kind == "i":
        ints = [int(token) for token in tokens]
        if not all(_INT64_MIN <= value <= _INT64_MAX for value in ints):
            return None
        return np.array(ints, dtype=np.int64)[codes], False
    values = np.array([float(token.replace(b",", b".")) for token in tokens])
    return values[codes], any(mark.encode() in token for token in tokens)


def _words(block: np.ndarray, tokens: int, blank: bool = False) -> pd.Categorical | None:
    """The fields of a uint8 matrix (one a row) as text, their `tokens` tokens joined by a blank; None
    when one splits otherwise (`blank`: or is blank, read as ""). Checked once per distinct field; one
    printable ASCII word after blanks (times, names: the usual) with numpy alone."""
    codes, firsts = _factor_rows(block)
    uniq = np.ascontiguousarray(block[firsts])
    word = uniq != 32
    if tokens == 1 and ((uniq < 127) & (uniq >= 32)).all() and (word[:, :-1] <= word[:, 1:]).all():
        spaced = np.full((len(uniq), uniq.shape[1] + 1), 32, dtype=np.uint8)  # a blank after each
        spaced[:, :-1] = uniq
        texts = spaced.tobytes().decode("ascii").split()  # a quarter of numpy's strings' time
        if len(texts) == len(uniq):  # none blank
            return pd.Categorical.from_codes(codes, categories=texts)
    words = [field.tobytes().decode("utf-8", "replace").split() for field in uniq]
    if any(len(w) != tokens and not (blank and not w) for w in words):
        return None
    texts, found = pd.factorize(np.array([" ".join(w) for w in words], dtype=object))  # a tab for a blank
    return pd.Categorical.from_codes(texts[codes], categories=found)


def _factor_rows(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code per row, the first row of each code) of a uint8 matrix: pandas' hash table over 8-byte words."""
    n, width = block.shape
    words = np.zeros((n, -(-width // 8) * 8), dtype=np.uint8)
    words[:, :width] = block
    columns = words.view(np.uint64).T
    codes = pd.factorize(columns[0])[0]  # then each further word told apart within each code so far
    for word in columns[1:]:
        part, uniques = pd.factorize(word)
        codes = pd.factorize(codes * len(uniques) + part)[0]
    firsts = np.empty(int(codes.max()) + 1, dtype=np.int64)
    firsts[codes[::-1]] = np.arange(n - 1, -1, -1)
    return codes, firsts


def _read_fields(
    data: bytes | bytearray | pa.Buffer, ncols: int, types: dict[int, pa.DataType], mark: str, sep: str = ";"
) -> pa.Table | None:
    """`sep`-separated rows -> Arrow table of the columns in `types` (named "0", "1" ...); None if
    refused (another field count, a field not of its type). Numbers rounded as `float()`, blanks
    around them trimmed; quotes are plain characters, no text is missing."""
    try:
        return pa_csv.read_csv(
            pa.BufferReader(data),
            read_options=pa_csv.ReadOptions(column_names=[str(i) for i in range(ncols)]),
            parse_options=pa_csv.ParseOptions(delimiter=sep, quote_char=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(
                column_types={str(i): t for i, t in types.items()},
                include_columns=[str(i) for i in sorted(types)],
                null_values=[],
                strings_can_be_null=False,
                decimal_point=mark,
            ),
        )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal means: read another way
        return None


def _read_sep(data: bytes, nlab: int, kinds: str, sep: str, mark: str) -> pd.DataFrame | None:
    """`Layout.sep` rows -> frame as `_read_csv` gives it, by Arrow's CSV reader (`_read_fields`)."""
    text, number = pa.dictionary(pa.int32(), pa.string()), {"i": pa.int64(), "d": pa.int64()}
    types = {c: text for c in range(nlab)}
    types |= {nlab + i: text if k == "t" else number.get(k, pa.float64()) for i, k in enumerate(kinds)}
    table = _read_fields(data, nlab + len(kinds), types, mark, sep)
    if table is None:
        return None
    columns: dict[int, object] = {}
    for c, kind in types.items():
        column = table.column(str(c))
        if kind != text:
            columns[c] = column.to_numpy()
            continue
        column = column.unify_dictionaries()  # as a Categorical by hand: twice as fast as `to_pandas`
        codes = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks])
        names = pd.Index(column.chunk(0).dictionary.to_pylist(), dtype=object)
        columns[c] = pd.Categorical.from_codes(codes, categories=names)
    return pd.DataFrame(columns, copy=False)


def _counts(df: pd.DataFrame, cols: list[int], sep: str | None = None) -> list[tuple[bytes, int]] | None:
    """The text columns' values as (values held by n rows joined by a blank, or `sep`; n): what
    `_plain` and `_as_printed` count adds up over a join, so distinct values (vmstat's clocks) cost a
    step per count. None when a value is "" without `sep` (a row cut short)."""
    out, join = [], sep or " "
    for i in cols:
        cat = df[i].array
        counts = np.bincount(cat.codes[cat.codes >= 0], minlength=len(cat.categories))
        values = np.asarray(cat.categories, dtype=object)
        if sep is None and (values[counts > 0] == "").any():
            return None
        out += [(join.join(values[counts == n]).encode(), n) for n in np.unique(counts[counts > 0]).tolist()]
    return out


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


def _read_csv(
    data: bytes,
    ncols: int,
    text_cols: list[int],
    mark: str,
    comment: str | None = None,
) -> pd.DataFrame | None:
    """Space-separated rows -> frame by pandas' fast `sep=" "` reader, `text_cols` as category; None
    if refused (a row too long; one too short leaves `""`, which `_as_printed` refuses).

    A text column whose first rows repeat values is read as "category" (built in C, twice as fast),
    and again as text if pandas took its categories for numbers or bools (`007` -> 7); one of distinct
    values (vmstat's clocks) is read as str and made categorical here (as "category" pandas tries
    each value as a bool in Python).
    """
    kinds = _text_kinds(data, text_cols, comment)
    try:
        df = _read_columns(data, ncols, kinds, mark, comment)
        read = [i for i in text_cols if kinds[i] == "category"]
        again = [i for i in read if not pd.api.types.is_string_dtype(df[i].cat.categories)]
        if again:
            text = _read_columns(data, ncols, dict.fromkeys(again, str), mark, comment, again)
            for i in again:
                df[i] = text[i]
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal goes row by row
        return None
    for i in text_cols:
        if not isinstance(df[i].dtype, pd.CategoricalDtype):
            df[i] = df[i].astype("category")
    return df


def _text_kinds(data: bytes, text_cols: list[int], comment: str | None) -> dict[int, object]:
    """Each text column's dtype for `_read_csv`: "category" where its first rows repeat values."""
    rows = data[:16384].split(b"\n")[:-1][:128]
    if comment:
        rows = [row.split(comment.encode())[0] for row in rows]
    tokens = [row.split() for row in rows]
    kinds: dict[int, object] = {}
    for i in text_cols:
        distinct = {t[i] for t in tokens if len(t) > i}
        kinds[i] = "category" if len(distinct) * 4 <= len(tokens) else str
    return kinds


def _read_columns(
    data: bytes,
    ncols: int,
    dtypes: dict[int, object],
    mark: str,
    comment: str | None,
    usecols: list[int] | None = None,
) -> pd.DataFrame:
    """pandas' C reader over the rows: `_read_csv`'s one call (a warning is an error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. a first row with a field too many would be cut silently
        return pd.read_csv(
            io.BytesIO(data),
            sep=" ",
            skipinitialspace=True,
            header=None,
            names=range(ncols),
            index_col=False,
            usecols=usecols,
            dtype=dtypes,
            na_filter=False,
            decimal=mark,
            comment=comment,  # `_marked_rest`: where the tokens before a rest field end
            engine="c",
            low_memory=False,  # one pass over the chunk: a fifth faster; chunks are bounded anyway
        )


def _plain(data: bytes, texts: list[tuple[bytes, int]], sep: str | None = None) -> bool:
    """True when `data` holds only `_PLAIN` bytes outside its text values (`_counts`); with `sep`,
    that character in place of the blank (a reader may trim blanks off a number)."""
    plain = _PLAIN if sep is None else _PLAIN.replace(b" ", sep.encode())
    other = len(data.translate(None, plain))
    return other == sum(len(t.translate(None, plain)) * n for t, n in texts)


def _as_printed(data: bytes, mark: str, numbers: list[np.ndarray], texts: list[tuple[bytes, int]]) -> bool:
    """True when pandas read every number as the grammar would: after `_plain` what is left to refuse
    is a mark without a digit on one side (`.5`, `5.`), an empty field, and `-0` read as 0 (every `-`
    must be a negative value's sign or in a text value)."""
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
    """How many decimal marks in `data` lack a digit on either side (`.5`, `5.`): numpy a slice at a
    time (temporaries stay in the cache: twice as fast)."""
    code = ord(mark)
    if code not in data:
        return 0
    buf = np.frombuffer(data, dtype=np.uint8)
    bare = int(buf[0] == code) + int(len(buf) > 1 and buf[-1] == code)  # nothing on one side
    for lo in range(1, len(buf) - 1, _SLICE):
        hi = min(lo + _SLICE, len(buf) - 1)
        zero = ord("0")  # uint8 arithmetic: anything but 0-9 minus "0" wraps above 9
        lone = ((buf[lo - 1 : hi - 1] - zero) > 9) | ((buf[lo + 1 : hi + 1] - zero) > 9)
        bare += int(np.count_nonzero((buf[lo:hi] == code) & lone))
    return bare

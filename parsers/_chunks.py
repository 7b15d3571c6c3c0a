"""Chunked reading for long, regular captures: whole chunks of lines per regex or numpy call, not a
Python call per line.

- `text_chunks`/`walk_text` (perf_stat): chunks of whole lines; a piece with a cut last line is walked
  with the parser's own `feed`.
- `ByteScan` (`_table`): finds the few structure lines (headers, banners, blanks) in multi-MB byte
  chunks and hands the runs of data rows between them over as bytes, not a string per line.
- `Interned` builds string columns without an object per row; `byte_windows` takes fixed-width byte
  windows at many offsets (perf stat's fields).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ._common import Lines, Source, _is_path, text_column

_CHUNK_CHARS = 1 << 18  # text read at once: bounds memory (the frame is small), amortises the regex call
_CHUNK_BYTES = 1 << 22  # bytes `ByteScan` reads at once: a few ms of regex per chunk, a few MB of memory


def text_chunks(source: Source) -> Iterator[str] | None:
    """Chunks of whole lines of a path or a string (None for streams: they go line by line)."""
    if _is_path(source):
        return _file_chunks(source)
    if isinstance(source, str):
        return _str_chunks(source)
    return None


def _str_chunks(text: str) -> Iterator[str]:
    start = 0
    while start < len(text):
        end = text.find("\n", start + _CHUNK_CHARS)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _file_chunks(path: str | Path) -> Iterator[str]:
    # opened as `Lines` opens it: undecodable bytes replaced, line ends untranslated (CR is refused below)
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        rest = ""
        while block := fh.read(_CHUNK_CHARS):
            cut = block.rfind("\n") + 1
            if cut == 0:
                rest += block
                continue
            yield rest + block[:cut]
            rest = block[cut:]
        if rest:
            yield rest


def walk_text(
    text: str,
    first_no: int,
    lines: Lines,
    feed: Callable[[int, str, Lines], None],
    cut_last: Callable[[int, str, Lines], None],
) -> None:
    """`feed_lines` over a piece of a capture that starts at line `first_no` (no CR in it: see `has_cr`).

    A piece that does not end with a newline is the end of the capture: its last line was cut.
    """
    rows = text.split("\n")
    complete = rows[-1] == ""
    if complete:
        rows.pop()
    last = len(rows) - 1
    for i, line in enumerate(rows):
        if i == last and not complete and line.strip():
            cut_last(first_no + i, line, lines)
        else:
            feed(first_no + i, line, lines)


def byte_windows(buf: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    """The `size` bytes at each offset, one row each (no index array as large as the result)."""
    return np.lib.stride_tricks.sliding_window_view(buf, size)[offsets]


def has_cr(text: str) -> bool:
    """CR ends a line for `Lines` (universal newlines) but not for the chunk regexes: such a capture
    goes through `feed_lines` whole, so its line numbers stay those `Lines` counts."""
    return "\r" in text


class Interned:
    """A string column built chunk by chunk: int codes into one table of distinct texts (-1: NA).

    A capture repeats a few texts (event names, addresses) many times: one Python object each.
    """

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def codes(self, values: Sequence[str | None]) -> np.ndarray:
        local, uniques = pd.factorize(np.asarray(values, dtype=object))
        if len(uniques) == 0:
            return np.full(len(local), -1, dtype=np.int64)
        table = np.array([self.code(u) for u in uniques], dtype=np.int64)
        return np.where(local >= 0, table[local], -1)

    def code(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def array(self, codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
        return text_column(list(self.index), codes)


class Rows(NamedTuple):
    """A run of consecutive data rows: whole lines, each ending with `\\n` (CR already turned into LF)."""

    data: bytes
    first_no: int  # line number of the first row
    count: int
    ends: np.ndarray | None = None  # where each row's line end is in `data` (ByteScan always sets it)


class ByteScan:
    """Iterate a capture as `Rows` runs and `(line_no, text)` structure lines, in file order.

    `row_bytes`: every line whose first byte is not among these is a structure line (`b"0123456789\\n"`:
    all but rows starting with a digit and blank lines), found with numpy from the line ends, which
    each `Rows` then carries in `ends` (a regex stopping at every line end cost a Python-level match
    per line). `marks` instead (the tests' oracle): byte regexes, a match marking the line that holds
    the byte at its end, so `rb"\\n(?![0-9])"` marks every line not starting with a digit.

    Lines are numbered and decoded as `Lines` does (CR, LF and CRLF end a line; undecodable bytes
    replaced in structure lines). A last line cut off mid-write (no line end, not blank) is not
    yielded: it is left in `cut` for the parser's `cut_last`, as `feed_lines` does.
    """

    def __init__(
        self,
        source: Source,
        kind: str,
        marks: Sequence[re.Pattern[bytes]] = (),
        *,
        row_bytes: bytes | None = None,
        read_bytes: int | None = None,
    ):
        self.lines = Lines(source, kind)  # the path, and `error()` for the parser
        self.cut: tuple[int, str] | None = None
        self._source = source
        self._marks = marks
        self._read_bytes = read_bytes
        self._row_first: np.ndarray | None = None
        if row_bytes is not None:
            self._row_first = np.zeros(256, dtype=bool)
            self._row_first[np.frombuffer(row_bytes, dtype=np.uint8)] = True

    def __iter__(self) -> Iterator[Rows | tuple[int, str]]:
        line_no = 1
        rest = b""
        raws = self._raw()
        while True:
            try:
                raw = next(raws, None)
            except (UnicodeDecodeError, OSError) as exc:  # a strict text stream, a failing disk
                raise self.lines.error(line_no, "", f"cannot read: {exc}") from None
            if raw is None:
                break
            block = rest + raw
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                rest = block
                continue
            # no name left on the read block or its copies while the parser works on its lines: a few
            # MB off the peak (each is a chunk's size)
            rest, whole = block[cut:], block[:cut]
            raw = block = None
            line_no = yield from self._split(_lf(whole), line_no)
        if not rest:
            return
        # no LF after the last line: the lines of `rest` end at CRs, the last one at none (or at a CR,
        # which `Lines` does not count as a complete line either)
        cut = rest.rfind(b"\r", 0, len(rest) - 1) + 1
        line_no = yield from self._split(_lf(rest[:cut]), line_no)
        last = rest[cut:].decode("utf-8", "replace").rstrip("\r")
        if last.strip():
            self.cut = (line_no, last)
        else:
            yield from self._split(last.encode("utf-8", "surrogatepass") + b"\n", line_no)

    def _split(self, buf: bytes, line_no: int) -> Generator[Rows | tuple[int, str], None, int]:
        """`buf`: whole LF-terminated lines, the first numbered `line_no`; returns the next line's number."""
        if not buf:
            return line_no
        arr = np.frombuffer(buf, dtype=np.uint8)
        ends = np.flatnonzero(arr == 0x0A)
        starts = np.empty(len(ends), dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        lo = 0  # the first line not yielded yet
        for k in self._marked(buf, arr[starts], ends):
            if k > lo:
                yield Rows(buf[starts[lo] : starts[k]], line_no + lo, k - lo, ends[lo:k] - starts[lo])
            yield line_no + k, buf[starts[k] : ends[k]].decode("utf-8", "replace")
            lo = k + 1
        if lo < len(ends):
            yield Rows(buf[starts[lo] :], line_no + lo, len(ends) - lo, ends[lo:] - starts[lo])
        return line_no + len(ends)

    def _marked(self, buf: bytes, first_bytes: np.ndarray, ends: np.ndarray) -> list[int]:
        """The indices of the structure lines among `buf`'s lines, in order."""
        if self._row_first is not None:
            return np.flatnonzero(~self._row_first[first_bytes]).tolist()
        hay = b"\n" + buf  # every line, the first too, follows a newline; hay[i] is buf[i - 1]
        at = [m.end() - 1 for rx in self._marks for m in rx.finditer(hay) if m.end() < len(hay)]
        return np.unique(np.searchsorted(ends, np.array(at, dtype=np.int64))).tolist()

    def _raw(self) -> Iterator[bytes]:
        src = self._source
        size = _CHUNK_BYTES if self._read_bytes is None else min(_CHUNK_BYTES, self._read_bytes)
        if self.lines.path is not None and isinstance(src, str | Path):
            try:
                fh = open(src, "rb")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise self.lines.error(0, "", f"cannot read: {exc.strerror}") from None
            with fh:
                while data := fh.read(size):
                    yield data
        elif isinstance(src, str):
            for start in range(0, len(src), size):
                yield src[start : start + size].encode("utf-8", "surrogatepass")
        elif isinstance(src, io.TextIOBase) or hasattr(src, "encoding"):
            while text := src.read(size):  # type: ignore[union-attr]
                yield text.encode("utf-8", "surrogatepass")
        else:
            while data := src.read(size):  # type: ignore[union-attr]
                yield data


def _lf(data: bytes) -> bytes:
    """CRLF and lone CR as LF: `Lines` ends a line at either."""
    if b"\r" not in data:
        return data
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

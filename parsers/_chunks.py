"""Chunked reading shared by the parsers of long, regular captures (ss, iftop, perf_stat, numastat).

Their fast paths read whole chunks of lines with one regex each instead of a Python call per line;
these helpers cut the text into pieces at block boundaries, walk the irregular pieces line by line
with the parser's own `feed`, and build string columns without one object per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Lines, Source, _looks_like_path

_CHUNK_CHARS = 1 << 18  # text read at once: bounds memory (the frame is small), amortises the regex call


def text_chunks(source: Source) -> Iterator[str] | None:
    """Chunks of whole lines of a path or a string (None for streams: they go line by line)."""
    if isinstance(source, Path) or (isinstance(source, str) and _looks_like_path(source)):
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


def block_pieces(chunks: Iterator[str], start: Callable[[str], int]) -> Iterator[tuple[str, int]]:
    """Re-cut chunks so each piece ends where a block starts: `(piece, line number of its first line)`.

    `start(text)` is the offset of the last block start in `text` (the start of a line), or -1 if
    there is none: the text from there on waits for the next chunk. A piece without any block start
    is yielded whole once it grows past four chunks (the parser then walks it line by line).
    """
    carry = ""
    line_no = 1
    for chunk in chunks:
        text = carry + chunk
        cut = start(text)
        if cut <= 0:
            if len(text) <= 4 * _CHUNK_CHARS:
                carry = text
                continue
            cut = len(text)
        yield text[:cut], line_no
        line_no += text.count("\n", 0, cut)
        carry = text[cut:]
    if carry:
        yield carry, line_no


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

    def codes(self, values: Sequence[str | None], *, empty_is_na: bool = False) -> np.ndarray:
        local, uniques = pd.factorize(np.asarray(values, dtype=object))
        if len(uniques) == 0:
            return np.full(len(local), -1, dtype=np.int64)
        table = np.array([self.index.setdefault(u, len(self.index)) for u in uniques], dtype=np.int64)
        if empty_is_na and "" in self.index:
            table[table == self.index[""]] = -1
        return np.where(local >= 0, table[local], -1)

    def code(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def array(self, codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
        return pd.array(list(self.index), dtype="string").take(codes, allow_fill=True)

"""Plumbing the go-ycsb and go-tpc parsers share (not a parser: the registry skips `_` modules).

Both Go tools print `NAME - Takes(s): ..., Count: ..., Avg(us): ...` lines on stdout and end with a
message without newline when they give up, so both readers treat a malformed line the same way: fatal
when more lines follow it, dropped as cut off when it is the last; and both drop a last line without
newline unless it is such a fatal message.
"""

from __future__ import annotations

import math
import re
from typing import ClassVar

from ._common import Lines

# control characters or U+FFFD (what Lines makes of invalid UTF-8): a binary file, not a capture
GARBAGE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")

_UNIT_DIVISOR = {"ms": 1.0, "us": 1000.0, "s": 0.001}


class Malformed(Exception):
    """A line that looks like the tool's output but cannot be read; becomes a ParseError (or is dropped)."""


class GoReader:
    """Per-line plumbing of a go-ycsb or go-tpc reader: garbage, refused styles, malformed and cut lines.

    A subclass sets the class attributes below, reads one non-blank line in `_line` (raising `Malformed`,
    ValueError or OverflowError for a line it cannot read) and records a fatal message in `_fatal`.
    """

    # output styles the parser does not read (a ParseError at once), and the reason given for them
    REFUSED: ClassVar[tuple[re.Pattern[str], ...]]
    REFUSAL: ClassVar[str]
    # the tool's give-up message: kept even as a cut last line (Go's Fatalf ends without newline)
    FATAL: ClassVar[re.Pattern[str]]
    # a cut last line matching one of these still shows the text is the tool's output
    CUT_STRUCTURE: ClassVar[tuple[re.Pattern[str], ...]]
    # the reason given for text without any of the tool's structure
    NOT_FOUND: ClassVar[str]

    def __init__(self) -> None:
        self.dropped = 0
        self.structure = False
        self.first_text: tuple[int, str] | None = None
        self.pending: tuple[int, str, str] | None = None  # a malformed line: fatal unless it is the last

    def feed(self, line_no: int, text: str, lines: Lines) -> None:
        """Read one line that is not a cut-off last line."""
        if not text.strip():
            return
        self._raise_pending(lines)
        if self.first_text is None:
            self.first_text = (line_no, text)
        if GARBAGE.search(text):
            self.pending = (line_no, text, "binary garbage (control characters or invalid UTF-8)")
            return
        if any(rx.match(text) for rx in self.REFUSED):
            raise lines.error(line_no, text, self.REFUSAL)
        try:
            self._line(text)
        except Malformed as exc:
            self.pending = (line_no, text, str(exc))
        except (ValueError, OverflowError) as exc:
            self.pending = (line_no, text, f"unreadable number: {exc}")

    def cut_last(self, line_no: int, text: str, lines: Lines) -> None:
        """A last line without newline: cut off mid-write, so the numbers in it may be cut too."""
        self._raise_pending(lines)
        if self.first_text is None:
            self.first_text = (line_no, text)
        if self.FATAL.match(text) and not GARBAGE.search(text):
            self._fatal(text)
            return
        self.dropped += 1
        if any(rx.match(text) for rx in self.CUT_STRUCTURE):
            self.structure = True

    def check_end(self, lines: Lines) -> None:
        """After the last line: count a malformed last line as dropped; raise if nothing was the tool's."""
        if self.pending is not None:  # a malformed last line: cut off, not garbage mid-file
            self.dropped += 1
        if not self.structure and self.first_text is not None:
            line_no, text = self.first_text
            if self.pending is not None and self.pending[0] == line_no:
                raise lines.error(line_no, text, self.pending[2])
            raise lines.error(line_no, text, self.NOT_FOUND)

    def _raise_pending(self, lines: Lines) -> None:
        if self.pending is not None:
            p_no, p_text, reason = self.pending
            raise lines.error(p_no, p_text, reason)

    def _line(self, text: str) -> None:
        raise NotImplementedError

    def _fatal(self, text: str) -> None:
        raise NotImplementedError


def column(
    key: str, plain_keys: dict[str, str], lat_key: re.Pattern[str], schema: dict[str, str]
) -> tuple[str | None, float]:
    """A printed key -> (column, divisor to the column's unit); (None, 1) for a key perfkit does not know.

    `plain_keys` maps keys read as they are (`Count`); `lat_key` matches `Avg(us)`, `99.9th(ms)`, ... with
    the name in group 1, the percentile in group 2 and the unit in group 3; its column must be in `schema`.
    """
    if key in plain_keys:
        return plain_keys[key], 1.0
    m = lat_key.match(key)
    if m:
        name = f"p{m[2].replace('.', '')}" if m[2] else m[1].lower()
        col = "sum_ms" if name == "sum" else f"lat_{name}_ms"
        if col in schema:
            return col, _UNIT_DIVISOR[m[3]]  # dividing keeps 207 us == 0.207 ms exactly
    return None, 1.0


def nan_to_none(value: float) -> float | None:
    """NaN -> None, so attrs stay valid JSON."""
    return None if math.isnan(value) else value

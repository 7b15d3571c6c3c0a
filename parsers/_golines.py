"""Plumbing the sysbench, go-ycsb and go-tpc parsers share (not a parser: the registry skips `_` modules).

The three tools print report lines on stdout, runs one after another, and stop mid-line when killed,
so their readers treat lines alike: a malformed line is fatal when more lines follow it and dropped as
cut off when it is the last; a last line without newline is dropped, unless it is a Go tool's fatal
message (Go's Fatalf ends without newline). The Go tools' `NAME - Takes(s): ..., Count: ...,
Avg(us): ...` lines are read by key (`GoReader`).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

import pandas as pd

from ._common import Lines, Source, feed_lines, records_frame

# a number as the tools print it, nan and inf included
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
IS_NUMBER = re.compile(rf"^(?:{NUMBER})$", re.I)
_INT64_MAX = 2**63 - 1
# control characters or U+FFFD (what Lines makes of invalid UTF-8): a binary file, not a capture
GARBAGE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")

_UNIT_DIVISOR = {"ms": 1.0, "us": 1000.0, "s": 0.001}


class Malformed(Exception):
    """A line that looks like the tool's output but cannot be read; becomes a ParseError (or is dropped)."""


class LineReader:
    """Reads a capture line by line into rows (a dict each) and run records (`RUN`: `index`, `touched`
    once anything of the run was read, `fatal`, `as_dict()`). A subclass reads one non-blank line in
    `_line`, raising `Malformed`, ValueError or OverflowError for a line it cannot read, and sets:

    - `REFUSED`: output styles not read (a ParseError at once, giving `REFUSAL`);
    - `FATAL`: the tool's give-up message, kept even as a cut last line (None: such a line is dropped);
    - `CUT_STRUCTURE`: a cut last line matching one of these still shows the text is the tool's;
    - `NOT_FOUND`: the reason given for text without any of the tool's structure.
    """

    KIND: ClassVar[str]
    SCHEMA: ClassVar[dict[str, str]]
    RUN: ClassVar[type]
    REFUSED: ClassVar[tuple[re.Pattern[str], ...]] = ()
    REFUSAL: ClassVar[str] = ""
    FATAL: ClassVar[re.Pattern[str] | None] = None
    CUT_STRUCTURE: ClassVar[tuple[re.Pattern[str], ...]]
    NOT_FOUND: ClassVar[str]

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.runs: list[Any] = [self.RUN(0)]
        self.unknown: set[str] = set()
        self.dropped = 0
        self.structure = False
        self.first_text: tuple[int, str] | None = None
        self.pending: tuple[int, str, str] | None = None  # a malformed line: fatal unless it is the last

    @classmethod
    def read(cls, source: Source, host: str | None) -> pd.DataFrame:
        """The rows of `source` as a frame of `SCHEMA`; the runs, dropped lines and unknown keys in attrs."""
        reader = cls()
        lines = feed_lines(source, cls.KIND, reader.feed, reader.cut_last)
        reader.check_end(lines)
        df = records_frame(reader.rows, cls.SCHEMA, host=host)
        df.attrs["runs"] = [r.as_dict() for r in reader.runs if r.touched]
        df.attrs["dropped_lines"] = reader.dropped
        if reader.unknown:
            df.attrs["unknown_columns"] = sorted(reader.unknown)
        return df

    @property
    def cur(self) -> Any:
        return self.runs[-1]

    def new_run(self) -> Any:
        """The current run while nothing was read into it, else the next one."""
        if self.cur.touched:
            self.runs.append(self.RUN(len(self.runs)))
        return self.cur

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
        if self.FATAL is not None and self.FATAL.match(text) and not GARBAGE.search(text):
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
            raise lines.error(*self.pending)

    def _fatal(self, text: str) -> None:
        """The tool's message that it gave up: the run's first one is kept."""
        self.structure = self.cur.touched = True
        if self.cur.fatal is None:
            self.cur.fatal = text.strip()

    def _line(self, text: str) -> None:
        raise NotImplementedError


class GoReader(LineReader):
    """A go-ycsb or go-tpc reader: `PLAIN_KEYS` maps the keys every operation line prints (`Count`) to
    their columns; `LAT_KEY` matches `Avg(us)`, `99.9th(ms)`, ... with the name in group 1, the
    percentile in group 2 and the unit in group 3."""

    PLAIN_KEYS: ClassVar[dict[str, str]]
    LAT_KEY: ClassVar[re.Pattern[str]]

    def _keep(self, fields: dict[str, float], key: str, value: str) -> None:
        """`value` of printed `key` into `fields` under its column, in the column's unit; an unknown
        key (or a latency without a column) into `unknown`."""
        if key in self.PLAIN_KEYS:
            fields[self.PLAIN_KEYS[key]] = float(value)
            return
        m = self.LAT_KEY.match(key)
        if m:
            name = f"p{m[2].replace('.', '')}" if m[2] else m[1].lower()
            col = "sum_ms" if name == "sum" else f"lat_{name}_ms"
            if col in self.SCHEMA:
                fields[col] = float(value) / _UNIT_DIVISOR[m[3]]  # dividing keeps 207 us == 0.207 ms exactly
                return
        self.unknown.add(key)

    def _count(self, fields: dict[str, float], what: str) -> int:
        """The Count of a `what` ("operation") line that holds every plain key, else Malformed."""
        for label, col in self.PLAIN_KEYS.items():
            if col not in fields:
                raise Malformed(f"{what} line without {label}")
        count = fields["count"]
        if not count.is_integer() or not 0 <= count <= _INT64_MAX:
            raise Malformed("Count is not a whole number")
        return int(count)


def nan_to_none(value: float) -> float | None:
    """NaN -> None, so attrs stay valid JSON."""
    return None if math.isnan(value) else value


def per_op(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """A summary's `ops`: op -> its `count` and `keys` (NaN as None), for every op of `rows`."""
    return {r["op"]: {"count": r["count"], **{k: nan_to_none(r[k]) for k in keys}} for r in rows}

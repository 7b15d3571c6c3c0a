"""MySQL's vertical output (`mysql -e '...\\G'`, `mariadb -E`): blocks of `key: value` lines, each
under a `*************************** N. row ***************************` line.

The client right-aligns every key of a result to the longest one, so the `: ` after the key sits in
one column for the whole row: a line with a name and `: ` in that column starts a field, any other
line continues the field before it (a query spanning lines keeps its newlines). `NULL` is None; an
empty value (`State: `, its trailing space sometimes stripped) is the empty string.

Row numbers restart at 1 with each statement's result. `read` hands back the lines outside any row
(a blank line, a `TS <epoch>` stamp, a title a script printed) as they are. `Samples` walks pt-stalk's
files of results appended once a second (`-processlist`, `-lock-waits`, `-transactions`): a `TS`
stamp starts a sample, as does a `1. row` of its first result unless a stamp just did; the lines
outside rows but blank ones, and the rows its reader `skip`s, are counted (`attrs["skipped"]`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pandas as pd

from perfkit.errors import ParseError

from ._common import PT_STALK_STAMP, Lines, Skips, Source, records_frame, stamp_seconds

ROW = re.compile(r"^\*{27} (\d+)\. row \*{27}$")
_FIELD = re.compile(r"^ *([A-Za-z_][A-Za-z0-9_]*): ?")


@dataclass
class Row:
    line_no: int  # of its `N. row` line
    number: int  # N: 1 starts a statement's result
    fields: dict[str, str | None]  # key -> value as printed (multi-line joined by "\n"), NULL -> None
    last_line: int  # the row's last line


@dataclass
class Other:
    line_no: int
    text: str  # a line outside any row


def sniff_keys(text: str, keys: tuple[str, ...]) -> bool:
    """The text starts (blank lines, one `TS` stamp aside) with `1. row` whose first keys are `keys`."""
    lines = [ln for ln in text.splitlines()[:40] if ln.strip()]
    if lines and lines[0].startswith("TS "):
        lines = lines[1:]
    if not lines or not ROW.match(lines[0]) or len(lines) <= len(keys):
        return False
    found = [m.group(1) if (m := _FIELD.match(ln)) else None for ln in lines[1 : 1 + len(keys)]]
    return tuple(found) == keys


def read(lines: Iterable[tuple[int, str]]) -> Iterator[Row | Other]:
    """The rows of vertical output and the lines outside them, in file order."""
    row: Row | None = None
    colon = -1  # the column of `:` after every key of the current row
    key = ""
    for line_no, text in lines:
        m = ROW.match(text)
        stamp = m is None and PT_STALK_STAMP.match(text)
        if m or stamp:  # a new row; a stamp between results ends a value, never continues it
            if row is not None:
                yield _done(row)
            row, colon, key = None, -1, ""
            if m:
                row = Row(line_no, int(m.group(1)), {}, line_no)
                continue
        if row is None:
            yield Other(line_no, text)
            continue
        f = _FIELD.match(text)
        if f and (colon < 0 or f.end(1) == colon):
            colon, key = f.end(1), f.group(1)
            row.fields[key] = text[f.end() :]
            row.last_line = line_no
        elif key and (text.strip() or row.last_line == line_no - 1):
            # a value spanning lines (a blank line inside a query too)
            row.fields[key] = f"{row.fields[key]}\n{text}"
            row.last_line = line_no
        else:
            yield _done(row)
            row, colon, key = None, -1, ""
            yield Other(line_no, text)
    if row is not None:
        yield _done(row)


def _done(row: Row) -> Row:
    # trailing blank lines taken into a value belong between results, not to it
    row.fields = {k: (None if v == "NULL" else v.rstrip("\n")) for k, v in row.fields.items()}
    return row


class Samples:
    """The rows of a pt-stalk file of vertical results (above); `outside` says why a line outside a row
    is skipped, `dated` reads the stamps' times into `stamp` (where the frame has them)."""

    def __init__(self, source: Source, kind: str, outside: str, *, dated: bool = False):
        self.lines = Lines(source, kind)
        self.skips = Skips()
        self.sample = -1
        self.opened = False  # a stamp (or a summary) opened `sample`: a `1. row` does not start another
        self.stamp = pd.NaT
        self.taken = 0  # rows read
        self._outside = outside
        self._dated = dated

    def __iter__(self) -> Iterator[Row]:
        for item in read(self.lines):
            if isinstance(item, Row):
                yield item
            elif m := PT_STALK_STAMP.match(item.text):
                self.sample += 1
                self.opened = True
                if self._dated:
                    self.stamp = pd.Timestamp(stamp_seconds(m, item.line_no, self.lines), unit="s", tz="UTC")
            elif item.text.strip():
                self.skips.add(item.line_no, item.text, self._outside)

    def take(self, row: Row) -> int:
        """Count `row` as read; the sample it is in."""
        if row.number == 1:
            self.sample += 0 if self.opened else 1
            self.opened = False
        self.taken += 1
        return self.sample

    def skip(self, row: Row, reason: str) -> None:
        self.skips.add(row.line_no, f"{row.number}. row: {', '.join(row.fields)}", reason)

    def error(self, row: Row, reason: str) -> ParseError:
        return self.lines.error(row.line_no, f"{row.number}. row", reason)

    def frame(self, rows: list[dict], schema: dict[str, str], **same: object) -> pd.DataFrame:
        """`rows` as a frame of `schema` (`same` as `records_frame`), the skipped lines in its attrs.

        Raises:
            ParseError: no row was taken and lines were skipped.
        """
        self.skips.refuse_if_nothing_read(self.taken, self.lines)
        df = records_frame(rows, schema, **same)
        df.attrs["skipped"] = self.skips
        return df

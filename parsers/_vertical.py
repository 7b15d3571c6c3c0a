"""MySQL's vertical output (`mysql -e '...\\G'`, `mariadb -E`): blocks of `key: value` lines, each
under a `*************************** N. row ***************************` line.

The client right-aligns every key of a result to the longest one, so the `: ` after the key sits in
one column for the whole row: a line with a name and `: ` in that column starts a field, any other
line continues the field before it (a query spanning lines keeps its newlines). `NULL` is None; an
empty value (`State: `, its trailing space sometimes stripped) is the empty string.

Row numbers restart at 1 with each statement's result, which is how a file of results appended one
after another (pt-stalk's `-processlist`, `-lock-waits`, `-transactions`) is cut into samples by its
readers. Lines outside any row (a blank line, a `TS <epoch>` stamp, a title a script printed) are
handed back as they are: the reader that knows the file decides what they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ._common import PT_STALK_STAMP

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

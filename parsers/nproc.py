"""nproc: GNU coreutils `nproc` (what perfkit runs, under `LC_ALL=C`): one line, one integer.

`nproc` prints the number of processing units available to the process (its CPU affinity and
cgroup quota included, OMP_NUM_THREADS honoured), not the machine's total (`nproc --all`): it is
what a benchmark started the same way would get. Tested with coreutils 9.1.

Schema:

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| cpus | Int64 | the count nproc printed |

Anything else on the line (a word, a sign, a second number) is a ParseError, and so is a second
line: nproc prints exactly one. A last line without its newline may be cut (`1` of `16`): it is
dropped and counted in `df.attrs["dropped_lines"]`, never read. Tested on: tests/fixtures/nproc/.
"""

from __future__ import annotations

import re

import pandas as pd

from ._common import Lines, Source, coerce, empty_frame, feed_lines

KIND = "nproc"

SCHEMA: dict[str, str] = {"host": "string", "cpus": "Int64"}

_COUNT = re.compile(r"^\s*([1-9]\d{0,6})\s*$")  # at least 1; a million CPUs is past any machine


def sniff(text: str) -> bool:
    """nproc output is one positive integer alone on the first line, and nothing after it."""
    lines = [ln for ln in text[:256].splitlines() if ln.strip()]
    return len(lines) == 1 and bool(_COUNT.match(lines[0]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an nproc capture into one row.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (no time); kept for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`.

    Raises:
        ParseError: a line that is not one positive integer, or a second line.
    """
    counts: list[int] = []
    dropped = 0

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if not line.strip():
            return
        if counts:
            raise lines.error(line_no, line, "nproc prints one line: a second one follows")
        m = _COUNT.match(line) if len(line) < 64 else None
        if m is None:
            raise lines.error(line_no, line, "not nproc output (one positive integer alone on the line)")
        counts.append(int(m[1]))

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        if counts:
            raise lines.error(line_no, line, "nproc prints one line: a second one follows")
        if not _COUNT.match(line[:64]):
            raise lines.error(line_no, line, "not nproc output (one positive integer alone on the line)")
        dropped += 1

    feed_lines(source, KIND, feed, cut_last)
    if not counts:
        df = empty_frame(SCHEMA)
        df.attrs.update(dropped_lines=dropped)
        return df
    df = coerce(
        pd.DataFrame({"host": pd.array([host], dtype="string"), "cpus": pd.array(counts, dtype="Int64")}),
        SCHEMA,
    )
    df.attrs.update(dropped_lines=dropped)
    return df

"""nproc: GNU coreutils `nproc` (what perfkit runs, under `LC_ALL=C`): one line, one integer.

`nproc` prints the processing units available to the process (CPU affinity and cgroup quota
included, OMP_NUM_THREADS honoured), not the machine's total (`nproc --all`): what a benchmark
started the same way would get. Tested with coreutils 9.1.

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| cpus | Int64 | the count nproc printed |

Anything else on the line (a word, a sign, a second number), or a second line, is a ParseError. A
last line without its newline may be cut (`1` of `16`): dropped and counted in
`df.attrs["dropped_lines"]`, never read. Tested on: tests/fixtures/nproc/.
"""

from __future__ import annotations

import re

import pandas as pd

from ._common import Lines, Source, feed_lines, records_frame

KIND = "nproc"

SCHEMA: dict[str, str] = {"host": "string", "cpus": "Int64"}

_COUNT = re.compile(r"^\s*([1-9]\d{0,6})\s*$")  # at least 1; a million CPUs is past any machine


def sniff(text: str) -> bool:
    """One positive integer alone on the first line, and nothing after it."""
    lines = [ln for ln in text[:256].splitlines() if ln.strip()]
    return len(lines) == 1 and bool(_COUNT.match(lines[0]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row; `tz` is unused (no time).

    Raises:
        ParseError: a line that is not one positive integer, or a second line.
    """
    counts: list[int] = []
    dropped = 0

    def count(line_no: int, line: str, lines: Lines, match: re.Match[str] | None) -> int:
        if counts:
            raise lines.error(line_no, line, "nproc prints one line: a second one follows")
        if match is None:
            raise lines.error(line_no, line, "not nproc output (one positive integer alone on the line)")
        return int(match[1])

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if line.strip():
            match = _COUNT.match(line) if len(line) < 64 else None
            counts.append(count(line_no, line, lines, match))

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        count(line_no, line, lines, _COUNT.match(line[:64]))  # garbage is still an error
        dropped += 1

    feed_lines(source, KIND, feed, cut_last)
    df = records_frame([{"cpus": c} for c in counts], SCHEMA, host=host)
    df.attrs.update(dropped_lines=dropped)
    return df

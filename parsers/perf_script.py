"""perf_script: raw `perf script` text, folded into stacks in Python (as a foreign tarball may carry it).

Reads `perf script -i perf.data` after `perf record [-a] -g ...` (perf 5.x/6.x): each sample is an
event header line starting in column 0, in its usual forms

    python3 28855  7398.543791:   10101010 cpu-clock:ppp:
    swapper     0 [000]  7401.002808:   10101010 cpu-clock:ppp:
    comm PID/TID [CPU] TIME: [PERIOD] EVENT: ...

followed by indented frames `ADDR SYMBOL+0xOFF (DSO)`, leaf first, and a blank line. perfkit itself
folds this text on the host with the awk program `_FOLD` in collectors/captures.py (kind `folded`);
this module applies exactly the same rules, so both give the same stacks and counts:

- the comm is the first blank-separated word of the header (`busy worker` folds as `busy`);
- a frame line is blanks, hex digits, a space; its symbol is the words between the address and
  the last word (the DSO), joined by one space; a line of only address and symbol has no DSO;
- a trailing `+0x...` offset is dropped; a `[unknown]` symbol is named by its DSO's file name,
  `[libc.so.6]`, unless the DSO is `[unknown]` too; `;` in a symbol becomes `:`;
- the stack is `comm;root;...;leaf` (frames reversed), counted once per sample (not by period);
  a sample without frames is not counted; other indented lines (srcline, tracepoint args) are skipped.

Unlike the awk, a non-indented line that is no event header (`comm PID[/TID] [CPU] TIME:`) is a
ParseError naming its line, and a last line cut mid-write drops its whole sample (its stack would
lack the root) and is counted. Lines starting with `#` (`perf script --header`) are skipped.

Schema: the folded frame of parsers/folded.py (host, stack, count, comm, leaf, depth), one row per
distinct stack in first-seen order. What it reads beside its rows: `EXTRAS` (below).
Tested on: tests/fixtures/perf_script/ (see README.md there).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from . import folded
from ._common import Extras, Lines, Source, feed_lines


@dataclass(frozen=True)
class PerfScriptExtras(Extras):
    """What perf_script reads beside its rows (see `_common.Extras`)."""

    total_samples: int = 0  # samples read
    samples_without_stack: int = 0  # left out


EXTRAS = PerfScriptExtras

KIND = "perf_script"
SCHEMA: dict[str, str] = dict(folded.SCHEMA)
_BLANKS = re.compile(r"[ \t]+")
_FRAME = re.compile(r"^[ \t]+[0-9a-f]+ ")  # the awk's frame pattern, byte for byte
_HEADER = re.compile(r"^\S.*?[ \t]+-?\d+(?:/-?\d+)?[ \t]+(?:\[\d+\][ \t]+)?\d+\.\d+:")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def sniff(text: str) -> bool:
    """An event header line followed by an indented frame line, near the start."""
    lines = text[:8192].splitlines()[:80]
    return any(
        _HEADER.match(a) is not None and _FRAME.match(b) is not None
        for a, b in zip(lines, lines[1:], strict=False)
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Fold `perf script` text into one row per distinct stack (the folded.py frame).

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (sample times are seconds since boot); kept for the common parser signature.

    Raises:
        ParseError: a non-indented line that is not a perf script event header.
    """
    counts: Counter[str] = Counter()
    frames: list[str] = []  # of the current sample, leaf first
    comm = ""  # of the last header: frames after a blank line and no header still take it, as in the awk
    in_sample = False  # a header was read and its sample not yet emitted
    no_stack = dropped = 0

    def emit() -> None:
        nonlocal in_sample, no_stack
        if frames:
            counts[";".join([comm, *reversed(frames)])] += 1
        elif in_sample:
            no_stack += 1
        frames.clear()
        in_sample = False

    def feed(line_no: int, line: str, lines: Lines) -> None:
        nonlocal comm, in_sample
        if line[:1] not in ("", " ", "\t"):
            emit()
            if line.startswith("#"):
                return
            if not _HEADER.match(line):
                raise lines.error(
                    line_no, line, "not a perf script event header (`comm pid [cpu] time: ...`)"
                )
            comm = _BLANKS.split(line, 1)[0]
            in_sample = True
        elif _FRAME.match(line):
            frames.append(_symbol(_BLANKS.split(line.strip(" \t"))))
        elif not line.strip(" \t"):
            emit()

    def cut(line_no: int, line: str, lines: Lines) -> None:
        nonlocal in_sample, dropped
        frames.clear()  # the sample's root frames may be missing: drop it whole
        in_sample = False
        dropped = 1

    feed_lines(source, KIND, feed, cut)
    emit()
    df = folded.stacks_frame(counts.items(), host=host)
    df.attrs.update(samples_without_stack=no_stack, dropped_lines=dropped)
    return df


def _symbol(fields: list[str]) -> str:
    """A frame's name from its fields `[addr, sym..., dso]`, by the awk's rules."""
    if len(fields) == 1:
        return ""  # `  7f00 ` with nothing after the address: the awk's $2 is empty
    has_dso = len(fields) >= 3
    sym = _OFFSET.sub("", " ".join(fields[1:-1]) if has_dso else fields[1])
    if sym == "[unknown]" and has_dso:
        dso = fields[-1].replace("(", "").replace(")", "").rsplit("/", 1)[-1]
        if dso != "[unknown]":
            sym = f"[{dso}]"
    return sym.replace(";", ":")

"""iostat: sysstat extended device report, `iostat -x [-d] [-t] [-k|-m] [-y] [-p ...] INTERVAL [COUNT]`.

Reads the plain-text report of every sysstat header generation (formats.md, "iostat -x"):

- `sysstat<=11.4` (CentOS 7): `Device: rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await
  r_await w_await svctm %util` (avgrq-sz in 512-byte sectors);
- `sysstat-11.5-12.0` (Ubuntu 18.04): `Device r/s w/s rkB/s wkB/s rrqm/s wrqm/s %rrqm %wrqm r_await
  w_await aqu-sz rareq-sz wareq-sz svctm %util` (request sizes in kB);
- `sysstat-12.1-12.2` (Ubuntu 20.04): `Device r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s ... d/s dkB/s
  drqm/s %drqm d_await dareq-sz aqu-sz %util` (svctm gone, discards added);
- `sysstat>=12.3` (Debian 12, 12.6.1 tested): as 12.1 plus `f/s f_await` before `aqu-sz %util`.

Columns are mapped by header name (parsers/_columns.py), never by position. `-m` (`rMB/s`) is
converted to kB (x1024), `rsec/s` (POSIXLY_CORRECT, 512-byte sectors) to kB (/2). With or without
`-d` (`avg-cpu:` blocks are skipped), `-t` timestamps in C (`11/22/26 08:09:54`), en_US
(`11/22/2026 08:09:59 AM`, 12-hour clock read by hand), de_DE (`22.11.2026 08:09:59`, values with a
decimal comma are read as such), zh_CN / ja_JP (`2026年11月27日 12时46分44秒`, ja_JP `時`; such a
capture goes through the line walk) and ISO (`2026-11-22T08:09:55+0000`, the only form with a zone;
the others are wall-clock time in `tz`). Headerless row fragments (seed 000) take the last header
seen; with no header at all in the file the column order is inferred from the value count (13:
sysstat <= 11.4, 22: sysstat 12.3+) and said so in `attrs["notes"]`. Not read: `iostat -h`
(human-readable units), the basic report without `-x`, `-o JSON` (its own format).

Schema (one row per device per report):

| column | dtype | unit / meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | the report's `-t` stamp; NaT without `-t` |
| host | string | the `host` argument, else the host in the `Linux ... (host)` banner |
| sample | Int64 | report index 0, 1, 2 ... in file order (reports that printed device rows) |
| since_boot | bool | True for the first report after a `Linux` banner (averages since boot), unless `-y` |
| device | string | device name as printed |
| r_s, w_s, d_s, f_s | float64 | read / write / discard / flush requests per second |
| rkb_s, wkb_s, dkb_s | float64 | kB per second |
| rrqm_s, wrqm_s | float64 | merged requests per second |
| r_await_ms, w_await_ms, d_await_ms, f_await_ms | float64 | mean time per request, ms |
| await_ms | float64 | printed by <= 11.4; else the IO-weighted mean of r_await and w_await |
| aqu_sz | float64 | mean queue length (`avgqu-sz` / `aqu-sz`) |
| areq_kb | float64 | mean request size over reads and writes, kB (below) |
| rareq_kb, wareq_kb | float64 | mean read / write request size, kB (>= 11.5 only) |
| util_pct | float64 | %util |
| svctm_ms | float64 | svctm (<= 12.0 only; untrustworthy) |

A column the version does not print is NaN, never 0; derived columns are NaN when there was no IO.
`areq_kb` is what iostat computed from its exact counters, never the printed rates (`-m` rounds them
to 0.01 MB/s: a 26 kB request came out 43 kB, a busy device 0): `avgrq-sz` / 2 (<= 11.4, 512-byte
sectors; a 0 with r/s and w/s 0 is NaN, a size beside rates rounded to 0.00 stands), `areq-sz`, else
`rareq-sz`/`wareq-sz` (kB) weighted by r/s and w/s; (rkb_s+wkb_s)/(r_s+w_s) only when none is printed.
`df.attrs`: `header_generation`, `unknown_columns` (header names in no table), `dropped_lines`
(a truncated last line), `notes`, `cpus` (the last banner's `(N CPU)`, None without a banner).

The first report after the banner is the average since boot (`since_boot=True`); sysstat 12.x
with `-y` prints a second blank line after the banner instead, and then nothing is marked.

Large captures (`_Parser.run_bulk`, paths and text): the lines up to the first device row go through
the line walk's own methods; after that, a capture whose every line is a device row, a blank line, a
stamp or the same header again (`iostat -x -d [-t]`, ASCII, LF line ends, a complete last line) is
read in 8 MB blocks: numpy sorts the lines by their first byte, the stamps' minutes are read once
each by the line walk's `_timestamp` and their seconds with numpy, and runs of device rows are handed
to pandas as bytes in the very chunks the line walk would make (so pandas reads the same bytes the
same way). Anything else (banners or `avg-cpu:` mid-file, a changed header, indented rows, a cut-off
last line, a chunk pandas refuses, a stream) starts over with the line walk, which names the bad line.

Tested on: tests/fixtures/iostat/*.txt (see README.md there).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._columns import CONVERT, IOSTAT_IGNORED, RENAME
from ._sysstat import banner_cpus

KIND = "iostat"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "sample": "Int64",
    "since_boot": "bool",
    "device": "string",
    "r_s": "float64",
    "w_s": "float64",
    "rkb_s": "float64",
    "wkb_s": "float64",
    "rrqm_s": "float64",
    "wrqm_s": "float64",
    "r_await_ms": "float64",
    "w_await_ms": "float64",
    "await_ms": "float64",
    "aqu_sz": "float64",
    "areq_kb": "float64",
    "rareq_kb": "float64",
    "wareq_kb": "float64",
    "util_pct": "float64",
    "svctm_ms": "float64",
    "d_s": "float64",
    "dkb_s": "float64",
    "d_await_ms": "float64",
    "f_s": "float64",
    "f_await_ms": "float64",
}

_NUMERIC = [col for col, dtype in SCHEMA.items() if dtype == "float64"]
_J = {col: j for j, col in enumerate(_NUMERIC)}

CHUNK_ROWS = 131072  # device rows handed to pandas at once: bounds memory, amortises the call
_BLOCK_BYTES = 1 << 23  # read at once by the fast path: a few ms of numpy per block, a few MB of memory
# What the per-line methods raise on input they cannot read (an out-of-range date, ...).
_CANNOT_PARSE = (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeError)
_NAT = np.iinfo(np.int64).min  # the int64 behind NaT

# Value count after the device name -> the header that version prints (headerless fragments only).
_FALLBACK_HEADERS = {
    13: "Device: rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util",
    22: "Device r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s wkB/s wrqm/s %wrqm w_await wareq-sz "
    "d/s dkB/s drqm/s %drqm d_await dareq-sz f/s f_await aqu-sz %util",
}
_EXTENDED_MARKS = frozenset({"r/s", "w/s", "rrqm/s", "aqu-sz", "avgqu-sz", "areq-sz"})


_TIMESTAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2}|\d{2}/\d{2}/\d{2,4}|\d{2}\.\d{2}\.\d{4})[T ]\s*"  # date
    r"(\d{1,2}:\d{2}):(\d{2})"  # clock, seconds apart (cached per minute)
    r"(\s*[AaPp]\.?[Mm]\.?)?"  # 12-hour clock
    r"\s*([+-]\d{2}:?\d{2}|Z)?\s*$"  # ISO zone
)
# zh_CN / ja_JP: `2026年11月27日 12时46分44秒` (ja_JP writes 時); read into the parts `_TIMESTAMP` gives
_CJK_TIMESTAMP = re.compile(r"(\d{4}年\d{1,2}月\d{1,2}日)\s+(\d{1,2})[时時](\d{2})分(\d{2})秒\s*$")
_BANNER_HOST = re.compile(r"^Linux\s+\S+\s+\(([^)]*)\)")
_SNIFF_HEADER = re.compile(r"^Device:?\s+(?=.*(?:\br/s\b|\brrqm/s\b|\bw/s\b|\baqu-sz\b))")


def sniff(text: str) -> bool:
    """True when the first lines hold an iostat extended device header (`Device:` / `Device` + r/s ...)."""
    return any(_SNIFF_HEADER.match(line) for line in text[: _common.SNIFF_BYTES].splitlines()[:60])


def parse(source: _common.Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an `iostat -x` capture into one row per device per report.

    Args:
        source: a path, a text or binary stream, or the capture's text.
        host: the host the capture comes from (the manifest's); default: the banner's host name.
        tz: the host's time zone, for `-t` stamps without a zone (all but ISO).

    Returns:
        A frame with exactly the `SCHEMA` columns and `attrs` `header_generation`,
        `unknown_columns`, `dropped_lines`, `notes`.

    Raises:
        ParseError: garbage mid-file, a row whose value count does not match its header, an
            unknown timestamp form, a report this parser does not read (`-h`, no `-x`).
    """
    lines = _common.Lines(source, KIND)
    try:
        ZoneInfo(tz)
    except (ValueError, KeyError, OSError) as exc:
        raise ParseError(KIND, lines.path, 0, "", f"unknown time zone {tz!r} ({exc})") from None
    if isinstance(source, str | Path):  # a stream cannot be read twice: it goes line by line
        try:
            frame = _Parser(lines, host, tz).run_bulk(source)
        except (ParseError, OSError, *_CANNOT_PARSE):
            frame = None  # the line walk below raises it again, with its line
        if frame is not None:
            return frame
    state = _Parser(lines, host, tz)
    try:
        return state.run()
    except ParseError:
        raise
    except _CANNOT_PARSE as exc:
        raise lines.error(state.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})") from exc


class _Layout:
    """One header's column plan: which printed column feeds which schema column, times what."""

    __slots__ = (
        "ncols",
        "plan",
        "missing",
        "generation",
        "unknown",
        "line_no",
        "has_rates",
        "prints_await",
        "prints_areq",
        "prints_rwareq",
    )

    def __init__(self, tokens: list[str], line_no: int, line: str, lines: _common.Lines):
        names = tokens[1:]
        self.line_no = line_no
        self.ncols = len(tokens)
        self.unknown: list[str] = []
        self.plan: list[tuple[int, int, float]] = []  # (printed column, schema numeric index, factor)
        seen: dict[str, str] = {}  # schema column -> printed name
        for i, name in enumerate(names, 1):
            if name in RENAME:
                col, factor = RENAME[name], 1.0
            elif name in CONVERT:
                col, factor = CONVERT[name]
            else:
                if name not in IOSTAT_IGNORED:
                    self.unknown.append(name)
                continue
            if col in seen:
                raise lines.error(line_no, line, f"columns {seen[col]!r} and {name!r} both give {col}")
            seen[col] = name
            self.plan.append((i, _J[col], factor))
        if not _EXTENDED_MARKS & set(names):
            raise lines.error(line_no, line, "not an extended device report: capture iostat with -x")
        self.missing = [j for col, j in _J.items() if col not in seen]
        printed = set(seen.values())
        self.has_rates = {"r_s", "w_s", "rkb_s", "wkb_s"} <= set(seen)
        self.prints_await = "await" in printed
        # the request size as iostat computed it from its exact counters: never recomputed from the
        # printed rates, which `-m` rounds to 0.01 MB/s (a 26 kB request read as 43 kB, or 0)
        self.prints_areq = "areq_kb" in seen
        self.prints_rwareq = {"r_s", "w_s", "rareq_kb", "wareq_kb"} <= set(seen)
        if tokens[0] == "Device:" or "avgrq-sz" in printed or "avgqu-sz" in printed:
            self.generation = "sysstat<=11.4"
        elif "f/s" in printed:
            self.generation = "sysstat>=12.3"
        elif "d/s" in printed:
            self.generation = "sysstat-12.1-12.2"
        elif "rareq-sz" in printed:
            self.generation = "sysstat-11.5-12.0"
        elif "areq-sz" in printed:
            self.generation = "sysstat>=12.0-short"
        else:
            self.generation = "unknown"


class _Parser:
    """State of one parse: the line walk buffers device rows; full chunks go to pandas' C reader.

    Numbers land in one growing float64 array per schema column (grown in place by realloc, so no
    concatenation and no second copy at the end); the frame is built on those arrays without copying.
    """

    def __init__(self, lines: _common.Lines, host: str | None, tz: str):
        self.lines = lines
        self.host = host
        self.banner_host: str | None = None
        self.banner_cpus: int | None = None
        self.tz = tz
        self.line_no = 0
        # a bad structural line: fatal, unless it turns out to be the cut-off last line
        self.pending: ParseError | None = None
        # the report being read
        self.layout: _Layout | None = None
        self.layouts: dict[str, _Layout] = {}
        self.header_line: str | None = None
        self.ts = _NAT
        self.sample = -1
        self.since_boot_armed = False
        self.after_banner = False
        self.banner_blanks = 0
        self.in_cpu = False
        self.watch_blanks = False  # in_cpu or after_banner: blank lines mean something
        self.last_struct = 0  # line number of the last non-blank line that is not a device row
        # buffered rows of the current chunk, and where each report starts in it
        self.rows: list[str] = []
        self.segs: list[tuple[int, int, int, int, bool]] = []  # (row index, line_no, sample, ts, since_boot)
        # parsed rows, column by column
        self.n = 0
        self.numbers = [np.empty(0) for _ in _NUMERIC]
        self.codes = np.empty(0, dtype=np.int32)
        self.stamps = np.empty(0, dtype=np.int64)
        self.samples = np.empty(0, dtype=np.int64)
        self.boots = np.empty(0, dtype=bool)
        self.device_codes: dict[str, int] = {}
        self.generations: list[str] = []
        self.unknown: list[str] = []
        self.notes: list[str] = []
        self.dropped = 0
        self._minutes: dict[str, int] = {}  # stamp without its seconds -> UTC ns of that minute
        self._seconds_at: dict[int, int] = {}  # stamp length -> where its seconds are
        # the fast path's chunk: runs of row lines as bytes, and its reports (arrays per block)
        self._pieces: list[bytes] = []
        self._piece_rows = 0
        self._reports: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._in_run = False  # the last line read in bulk was a device row: a report may go on
        self._last_row: tuple[int, bytes] | None = None  # line number and text of the last device row

    # ------------------------------------------------------------ the line walk

    def run(self) -> pd.DataFrame:
        rows_append = self.rows.append
        new_report = True
        header_line = None
        it = iter(self.lines)
        line_no = 0
        for line_no, line in it:  # noqa: B007 - line_no is read after the loop
            if line >= "b":  # a device row (sda, vda, nvme0n1, ...): the hot path
                if new_report:
                    new_report = False
                    self._begin(line_no, line)
                rows_append(line)
            elif not line:
                new_report = True
                if self.watch_blanks:
                    self._blank()
            elif line == header_line:  # the same header again: every report prints it
                new_report = True
                self.last_struct = line_no
            else:
                row = self._structural(line_no, line)
                header_line = self.header_line
                if row is None:
                    new_report = True
                    if self.pending is not None:
                        break
                    continue
                # an indented row, or a device whose name looks like structure (DM-0, 8:0 ...)
                if new_report:
                    new_report = False
                    self._begin(line_no, row)
                rows_append(row)
        self.line_no = line_no
        if self.pending is not None:
            if next(it, None) is not None or self.lines.last_complete:
                raise self.pending
            self.dropped += 1  # the cut-off last line was structure, not a device row
        else:
            self._trim_tail(line_no)
        self._flush()
        return self._assemble()

    def _blank(self) -> None:
        self.in_cpu = False
        if self.after_banner:
            self.banner_blanks += 1
        self.watch_blanks = self.after_banner

    def _leave_banner(self) -> None:
        self.after_banner = False
        self.watch_blanks = self.in_cpu
        if self.banner_blanks >= 2:  # sysstat 12.x -y: the skipped first report leaves a blank line
            self.since_boot_armed = False

    def _structural(self, line_no: int, line: str) -> str | None:
        """Handle a line that may be structure; return its row text when it is a device row after all."""
        c = line[0]
        if c.isdigit():
            if line.count(" ") > 8:
                return line  # a device whose name starts with a digit (e.g. -j UUID names)
            self._struct(line_no)
            self._timestamp(line_no, line)
            return None
        if c == "D" and (line.startswith(("Device ", "Device:", "Device\t")) or line == "Device"):
            self._struct(line_no)
            self._header(line_no, line)
            return None
        if c == "a" and line.startswith("avg-cpu"):
            self._struct(line_no)
            self.in_cpu = self.watch_blanks = True
            return None
        if c == "L" and (banner := _BANNER_HOST.match(line)):
            self.last_struct = line_no
            self.banner_host = banner[1] or None
            self.banner_cpus = banner_cpus(line) or self.banner_cpus
            self.since_boot_armed = self.after_banner = self.watch_blanks = True
            self.banner_blanks = 0
            return None
        if c.isspace():
            stripped = line.strip()
            if not stripped:
                self._blank()
                return None
            if self.in_cpu:  # the avg-cpu values line
                self.last_struct = line_no
                return None
            if stripped.endswith("Device") and not stripped.startswith("Device"):
                self.pending = self.lines.error(
                    line_no, line, "iostat -h (human-readable) output is not read: capture without -h"
                )
                return None
            return stripped  # an indented device row (pasted fragment, `-g` group name)
        return line

    def _struct(self, line_no: int) -> None:
        self.last_struct = line_no
        if self.after_banner:
            self._leave_banner()

    def _header(self, line_no: int, line: str) -> None:
        layout = self.layouts.get(line)
        if layout is None:
            layout = _Layout(line.split(), line_no, line, self.lines)
            self.layouts[line] = layout
            self.unknown.extend(name for name in layout.unknown if name not in self.unknown)
        self.header_line = line
        if layout is not self.layout:
            old = self.layout
            if self.rows and old is not None and (layout.ncols, layout.plan) != (old.ncols, old.plan):
                self._flush()  # buffered rows belong to the previous header
            self.layout = layout
            if layout.generation not in self.generations:
                self.generations.append(layout.generation)

    def _begin(self, line_no: int, line: str) -> None:
        """First row of a report: flush a full chunk (a report never spans two), open the report."""
        if self.after_banner:
            self._leave_banner()
        if len(self.rows) >= CHUNK_ROWS:
            self._flush()
        if self.layout is None:
            self._fallback_layout(line_no, line)
        self.sample += 1
        boot = self.since_boot_armed
        self.since_boot_armed = False
        self.segs.append((len(self.rows), line_no, self.sample, self.ts, boot))

    def _fallback_layout(self, line_no: int, line: str) -> None:
        nvals = len(line.split()) - 1
        header = _FALLBACK_HEADERS.get(nvals)
        if header is None:
            raise self.lines.error(
                line_no,
                line,
                f"no iostat -x header before this line, and {nvals} values after the device name "
                "(a headerless fragment must have 13 (sysstat<=11.4) or 22 (sysstat 12.3+))",
            )
        layout = _Layout(header.split(), 0, header, self.lines)
        self.layout = layout
        self.generations.append(layout.generation)
        self.notes.append(
            f"no header before line {line_no}: {nvals} values per row read in the {layout.generation} "
            f"-x column order ({header})"
        )

    # ------------------------------------------------------------ the fast path

    def run_bulk(self, source: str | Path) -> pd.DataFrame | None:
        """The fast path (module docstring): the frame `run()` would give, or None when the capture is
        not that plain (the caller then starts over with `run()`)."""
        line_no = 1  # of the next block's first line
        started = False
        cut = False
        for block, end in _line_blocks(source, self.lines):
            cut = end < len(block)
            if not end:
                continue
            if not block.isascii() or b"\r" in block:
                return None  # decoding and CR line ends are the line walk's
            start, first_no = 0, line_no
            if not started:
                found = self._prologue(block, end, line_no)
                if found is None or self.layout is None or self.watch_blanks or self.after_banner:
                    return None
                start, first_no = found
                self._reserve(_row_bound(source, self.lines, self.layout.ncols))
                started = True
            count = self._bulk_block(block, start, end, first_no)
            if count is None:
                return None
            line_no = first_no + count
        if cut or not started:
            return None  # a cut-off last line: `run()` decides what to drop
        last_no, last = self._last_row  # set: the prologue ends at a device row
        if last_no > self.last_struct and len(last.decode("ascii").split()) < self.layout.ncols:
            return None  # a short last row: `run()` drops it
        if not self._flush_pieces():
            return None
        self.line_no = line_no - 1
        return self._assemble()

    def _prologue(self, block: bytes, end: int, line_no: int) -> tuple[int, int] | None:
        """Walk the lines of `block[:end]` before the first device row as `run()` does: (byte offset, line
        number) of that row, or None when one of them is not structure."""
        pos = 0
        while pos < end:
            stop = block.index(b"\n", pos)
            line = block[pos:stop].decode("ascii")
            if line >= "b":
                return pos, line_no
            if not line:
                if self.watch_blanks:
                    self._blank()
            elif line == self.header_line:
                self.last_struct = line_no
            elif self._structural(line_no, line) is not None or self.pending is not None:
                return None
            pos = stop + 1
            line_no += 1
        return None

    def _bulk_block(self, block: bytes, start: int, end: int, first_no: int) -> int | None:
        """Take the whole lines `block[start:end]`, the first numbered `first_no`: how many they are, or
        None. Offsets into the block are absolute (no copy of it is made)."""
        buf = np.frombuffer(block, dtype=np.uint8, count=end - start, offset=start)
        ends = np.flatnonzero(buf == ord("\n"))
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        first = buf[starts]  # a blank line's is its "\n"
        row = first >= ord("b")  # `run()`'s test for a device row
        stamp = (first - ord("0")) < 10  # uint8: a byte below "0" wraps past 9
        head = first == ord("D")
        if not (row | stamp | head | (first == ord("\n"))).all():
            return None
        header = self.header_line.encode()
        # every "D" line is the header again (an occurrence of it is a whole line, the count says all)
        heads = block.count(b"\n" + header + b"\n", start, end) + block.startswith(header + b"\n", start)
        if np.count_nonzero(head) != heads:
            return None
        carried = self.ts  # the stamp of rows before the block's first stamp line
        at = np.flatnonzero(stamp)
        ts_at = np.empty(0, dtype=np.int64)
        if len(at):
            ts_at = self._bulk_stamps(buf, starts[at], ends[at], first_no + at)
            if ts_at is None:
                return None
        structure = np.flatnonzero(stamp | head)
        if len(structure):
            self.last_struct = first_no + int(structure[-1])
        # runs of device rows: each a report, but for a first one that goes on from the previous block
        shifted = np.zeros_like(row)
        shifted[1:] = row[:-1]
        firsts = np.flatnonzero(row & ~shifted)
        shifted[:] = False
        shifted[:-1] = row[1:]
        lasts = np.flatnonzero(row & ~shifted)
        run_ts = np.append(carried, ts_at)[np.searchsorted(at, firsts)]  # the last stamp before the run
        if len(ts_at):
            self.ts = int(ts_at[-1])
        if not len(firsts):
            self._in_run = False
            return len(ends)
        new = np.ones(len(firsts), dtype=bool)
        new[0] = not (self._in_run and firsts[0] == 0)
        self._in_run = bool(row[-1])
        run_samples = self.sample + np.cumsum(new)
        self.sample = int(run_samples[-1])
        run_boots = np.zeros(len(firsts), dtype=bool)
        if self.since_boot_armed and new.any():
            run_boots[np.argmax(new)] = True
            self.since_boot_armed = False
        counts = lasts - firsts + 1
        lo_bytes, hi_bytes = (starts[firsts] + start).tolist(), (ends[lasts] + start + 1).tolist()
        self._last_row = (first_no + int(lasts[-1]), block[lo_bytes[-1] : hi_bytes[-1] - 1])
        # a report starting when CHUNK_ROWS rows are buffered starts the next chunk, as in `_begin`
        lo = 0
        while lo < len(firsts):
            before = self._piece_rows + np.cumsum(counts[lo:]) - counts[lo:]
            due = np.flatnonzero((before >= CHUNK_ROWS) & new[lo:])
            hi = lo + int(due[0]) if len(due) else len(firsts)
            if hi > lo:
                part = np.flatnonzero(new[lo:hi]) + lo  # the runs that start a report
                self._reports.append((before[part - lo], run_samples[part], run_ts[part], run_boots[part]))
                self._pieces.extend(block[a:b] for a, b in zip(lo_bytes[lo:hi], hi_bytes[lo:hi], strict=True))
                self._piece_rows += int(counts[lo:hi].sum())
            if hi < len(firsts) and not self._flush_pieces():
                return None
            lo = hi
        return len(ends)

    def _bulk_stamps(
        self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, line_nos: np.ndarray
    ) -> np.ndarray | None:
        """UTC ns of a block's stamp lines, as `_timestamp` gives them: it reads the first line of each
        minute, numpy adds the seconds of the others as its cached path does. None when a line is one
        this cannot vouch for (another length, a line `_structural` takes for a device row, an error)."""
        width = int(ends[0] - starts[0])
        if (ends - starts != width).any():
            return None
        text = buf[starts[:, None] + np.arange(width)]
        if ((text == ord(" ")).sum(axis=1) > 8).any():
            return None
        self._timestamp(int(line_nos[0]), text[0].tobytes().decode("ascii"))
        pos = self._seconds_at.get(width)
        if self.pending is not None or pos is None:
            return None
        digits = text[:, pos : pos + 2] - ord("0")
        if digits.shape[1] != 2 or (digits > 9).any():
            return None
        seconds = digits[:, 0].astype(np.int64) * 10 + digits[:, 1]
        minute = np.delete(text, [pos, pos + 1], axis=1)
        new = np.ones(len(text), dtype=bool)
        np.any(minute[1:] != minute[:-1], axis=1, out=new[1:])
        firsts = np.flatnonzero(new)
        bases = np.empty(len(firsts), dtype=np.int64)
        for k, i in enumerate(firsts.tolist()):
            line = text[i].tobytes().decode("ascii")
            if i:
                self._timestamp(int(line_nos[i]), line)
            base = self._minutes.get(line[:pos] + line[pos + 2 :])
            if self.pending is not None or self._seconds_at.get(width) != pos or base is None:
                return None
            if self.ts != base + int(seconds[i]) * 1_000_000_000:
                return None
            bases[k] = base
        return np.repeat(bases, np.diff(np.append(firsts, len(text)))) + seconds * 1_000_000_000

    def _flush_pieces(self) -> bool:
        """Hand the fast path's chunk to `_store`; False when pandas refuses it."""
        if not self._piece_rows:
            return True
        data = b"".join(self._pieces)
        first_row = data[: data.index(b"\n")].decode("ascii")
        seg_rows, samples, stamps, boots = (np.concatenate(part) for part in zip(*self._reports, strict=True))
        ok = self._store(data, first_row, self._piece_rows, seg_rows, samples, stamps, boots)
        self._pieces.clear()
        self._reports.clear()
        self._piece_rows = 0
        return ok

    # ------------------------------------------------------------ timestamps

    def _timestamp(self, line_no: int, line: str) -> None:
        # Fast path: a stamp equal to an earlier one but for the seconds reuses that minute.
        pos = self._seconds_at.get(len(line))
        if pos is not None:
            base = self._minutes.get(line[:pos] + line[pos + 2 :])
            seconds = line[pos : pos + 2]
            if base is not None and seconds.isdigit():
                self.ts = base + int(seconds) * 1_000_000_000
                return
        m = _TIMESTAMP.match(line)
        if m is not None:
            day, hhmm, pos, ampm, zone = m[1], m[2], m.start(3), m[4], m[5]
        elif cjk := _CJK_TIMESTAMP.match(line):
            day, hhmm, pos, ampm, zone = cjk[1], f"{cjk[2]}:{cjk[3]}", cjk.start(4), None, None
        else:
            self.pending = self.lines.error(
                line_no, line, "not a timestamp form this parser reads (capture not taken under LC_ALL=C?)"
            )
            return
        key = line[:pos] + line[pos + 2 :]
        base = self._minutes.get(key)
        if base is None:
            base = self._minute(line_no, line, day, hhmm, ampm, zone)
            if base is None:
                return
            self._minutes[key] = base
            self._seconds_at[len(line)] = pos
        self.ts = base + int(line[pos : pos + 2]) * 1_000_000_000

    def _minute(self, line_no: int, line: str, day: str, hhmm: str, ampm: str | None, zone: str | None):
        """UTC nanoseconds at the start of the stamp's minute, or None (and a pending error)."""
        d = _common.parse_date(day)
        clock = _common.parse_clock(f"{hhmm}:00{ampm or ''}")
        if d is None or clock is None:
            self.pending = self.lines.error(line_no, line, "invalid date or time in the timestamp line")
            return None
        naive = datetime(d.year, d.month, d.day, clock[0], clock[1])
        if zone:
            offset = 0 if zone == "Z" else int(zone[0] + "1") * (int(zone[1:3]) * 60 + int(zone[-2:]))
            return pd.Timestamp(naive - timedelta(minutes=offset), tz="UTC").value
        return _common.to_utc(naive, self.tz).value

    # ------------------------------------------------------------ rows -> numbers

    def _row_line(self, index: int) -> int:
        """File line number of buffered row `index`: rows of one report are consecutive lines."""
        start, first = 0, 0
        for seg_start, seg_line, *_ in self.segs:
            if seg_start > index:
                break
            start, first = seg_start, seg_line
        return first + index - start

    def _trim_tail(self, last_line_no: int) -> None:
        """Drop a cut-off last line: no final newline, or a final row with too few values."""
        rows = self.rows
        if not self.lines.last_complete:
            self.dropped += 1
            if rows and self._row_line(len(rows) - 1) == last_line_no:
                rows.pop()
            return
        last_is_row = rows and self.layout is not None and self._row_line(len(rows) - 1) > self.last_struct
        if last_is_row and len(rows[-1].split()) < self.layout.ncols:
            rows.pop()
            self.dropped += 1

    def _flush(self) -> None:
        """Hand the buffered rows to pandas' C reader; append the numbers to the columns."""
        rows, segs, layout = self.rows, self.segs, self.layout
        if not rows or layout is None:
            rows.clear()
            segs.clear()
            return
        data = "\n".join(rows).encode("utf-8", "surrogateescape")
        seg_rows, _, samples, stamps, boots = (np.array(field) for field in zip(*segs, strict=True))
        if not self._store(data, rows[0], len(rows), seg_rows, samples, stamps, boots):
            raise self._locate(layout)
        rows.clear()
        segs.clear()

    def _store(
        self,
        data: bytes,
        first_row: str,
        nrows: int,
        seg_rows: np.ndarray,
        samples: np.ndarray,
        stamps: np.ndarray,
        boots: np.ndarray,
    ) -> bool:
        """Read a chunk of `nrows` rows (`data`, starting with `first_row`) with pandas' C reader and
        append the numbers to the columns; False when pandas refuses it.

        Each report of the chunk starts at row `seg_rows[k]`, with sample number, stamp and since-boot
        flag `samples[k]`, `stamps[k]`, `boots[k]`.
        """
        layout = self.layout
        decimal = "," if "," in first_row else "."
        df = _read_rows(data, first_row, nrows, layout, decimal)
        if df is None:
            return False
        pos = self.n
        end = pos + nrows
        self._reserve(end)
        numbers = self.numbers
        for i, j, factor in layout.plan:
            values = df[i].to_numpy(dtype=np.float64, copy=False)
            if factor == 1.0:
                numbers[j][pos:end] = values
            else:
                np.multiply(values, factor, out=numbers[j][pos:end])
        for j in layout.missing:
            numbers[j][pos:end] = np.nan
        _derive([col[pos:end] for col in numbers], layout)
        devices = df[0].array
        remap = np.array([self._device_code(name) for name in devices.categories], dtype=np.int32)
        self.codes[pos:end] = remap[devices.codes]
        del df, devices

        counts = np.diff(np.append(seg_rows, nrows))
        self.stamps[pos:end] = np.repeat(stamps, counts)
        self.samples[pos:end] = np.repeat(samples, counts)
        self.boots[pos:end] = np.repeat(boots, counts)
        self.n = end
        return True

    def _device_code(self, name: str) -> int:
        return self.device_codes.setdefault(name, len(self.device_codes))

    def _reserve(self, size: int) -> None:
        """Grow every column array to `size` rows, in place (realloc: no copy of what is there)."""
        if size <= len(self.stamps):
            return
        if self.n == 0:  # nothing to keep: new arrays, whose pages take memory only once written
            self.numbers = [np.empty(size) for _ in _NUMERIC]
            self.codes = np.empty(size, dtype=np.int32)
            self.stamps = np.empty(size, dtype=np.int64)
            self.samples = np.empty(size, dtype=np.int64)
            self.boots = np.empty(size, dtype=bool)
            return
        for arr in (*self.numbers, self.codes, self.stamps, self.samples, self.boots):
            arr.resize(size, refcheck=False)  # no views of these arrays exist while parsing

    def _locate(self, layout: _Layout) -> ParseError:
        """pandas refused a chunk: find the first bad row in Python and name its line."""
        rows, segs = self.rows, self.segs
        decimal = "," if "," in rows[0] else "."
        starts = np.array([s[0] for s in segs] + [len(rows)], dtype=np.int64)
        firsts = np.array([s[1] for s in segs], dtype=np.int64)
        line_nos = np.repeat(firsts - starts[:-1], np.diff(starts)) + np.arange(len(rows))
        number = re.compile(r"[-+]?\d+(?:" + re.escape(decimal) + r"\d+)?")
        for index, row in enumerate(rows):
            tokens = row.split()
            line_no = int(line_nos[index])
            if len(tokens) != layout.ncols:
                where = f"header at line {layout.line_no}" if layout.line_no else "assumed header"
                return self.lines.error(
                    line_no,
                    row,
                    f"{len(tokens) - 1} values after the device name, the {where} has {layout.ncols - 1}",
                )
            for token in tokens[1:]:
                if not number.fullmatch(token):
                    reason = f"not a number: {token!r}"
                    if ("," in token) != (decimal == ","):
                        reason += " (mixed decimal comma and point: capture not taken under LC_ALL=C)"
                    return self.lines.error(line_no, row, reason)
        return self.lines.error(int(line_nos[0]), rows[0], "pandas could not read the rows from here")

    # ------------------------------------------------------------ the frame

    def _assemble(self) -> pd.DataFrame:
        attrs = {
            "header_generation": "+".join(self.generations) or None,
            "unknown_columns": list(self.unknown),
            "dropped_lines": self.dropped,
            "notes": list(self.notes),
            "cpus": self.banner_cpus,
        }
        n = self.n
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
            frame.attrs.update(attrs)
            return frame
        for arr in (*self.numbers, self.codes, self.stamps, self.samples, self.boots):
            arr.resize(n, refcheck=False)  # trim the spare capacity
        host = self.host if self.host is not None else self.banner_host
        data = {
            "timestamp": pd.DatetimeIndex(self.stamps.view("M8[ns]")).tz_localize("UTC"),
            "host": _common.text_column([host], np.zeros(n, dtype=np.intp)),
            "sample": pd.arrays.IntegerArray(self.samples, np.zeros(n, dtype=bool)),
            "since_boot": self.boots,
            "device": _common.text_column(list(self.device_codes), self.codes),  # codes in insertion order
            **dict(zip(_NUMERIC, self.numbers, strict=True)),
        }
        frame = pd.DataFrame(data, copy=False)  # one block per column, no copy
        frame.attrs.update(attrs)
        if {c: str(t) for c, t in frame.dtypes.items()} != SCHEMA:  # safety net; copies the frame
            frame = _common.coerce(frame, SCHEMA)
        return frame


def _line_blocks(source: str | Path, lines: _common.Lines) -> Iterator[tuple[bytes, int]]:
    """The source in blocks `(data, end)` whose whole lines are `data[:end]`; the rest of a block is
    the line it cut in two, which comes whole as a block of its own next. A block whose rest is left is
    the last: the source ends in a cut-off line. No block is copied to cut it at a line end (that would
    cost as much as reading it)."""
    if lines.path is not None:
        with open(source, "rb") as fh:
            while data := fh.read(_BLOCK_BYTES):
                end = data.rfind(b"\n") + 1
                yield data, end
                if end < len(data):
                    line = data[end:] + fh.readline()
                    yield line, line.rfind(b"\n") + 1
    else:
        text = str(source)
        start = 0
        while start < len(text):
            stop = text.find("\n", start + _BLOCK_BYTES) + 1 or len(text)
            data = text[start:stop].encode("utf-8", "surrogatepass")
            yield data, data.rfind(b"\n") + 1
            start = stop


def _row_bound(source: str | Path, lines: _common.Lines, ncols: int) -> int:
    """Rows a capture of this size holds at most when each has `ncols` values: room reserved once
    (pages not written cost no memory; the arrays are trimmed at the end)."""
    size = os.path.getsize(source) if lines.path is not None else len(source)
    return size // (2 * ncols) + 1


def _read_rows(data: bytes, first_row: str, nrows: int, layout: _Layout, decimal: str) -> pd.DataFrame | None:
    """`nrows` rows -> frame (column 0 the device as category, then one number per header column); None
    if refused.

    sysstat separates values by spaces only, which pandas' fast `sep=" "` tokenizer reads; tabs or
    trailing blanks (pasted fragments) go through `\\s+`. With `sep=" "` a first row with one value
    too many would be cut silently (a ParserWarning), so the first row's count is checked here;
    any later row with a wrong count makes the tokenizer fail.
    """
    if len(first_row.split()) != layout.ncols:
        return None
    for sep, extra in ((" ", {"skipinitialspace": True}), (r"\s+", {})):
        try:
            df = pd.read_csv(
                io.BytesIO(data),
                sep=sep,
                header=None,
                names=range(layout.ncols),
                index_col=False,
                dtype={0: "category"},  # numbers are inferred: faster than asking for float64
                na_filter=False,
                decimal=decimal,
                engine="c",
                **extra,
            )
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - any refusal (a warning made an error too) is located row by row
            continue
        if len(df) == nrows and all(df[i].dtype.kind in "fiu" for i in range(1, layout.ncols)):
            return df
    return None


def _derive(cols: list[np.ndarray], layout: _Layout) -> None:
    """areq_kb where the version does not print it (`avgrq-sz`/`areq-sz` are kept as printed): the
    printed `rareq-sz`/`wareq-sz` weighted by r/s and w/s (sysstat >= 11.5), else (rkb_s+wkb_s)/(r_s+w_s);
    await_ms where the version does not print it."""
    if not layout.has_rates and not layout.prints_rwareq:
        return
    r, w = cols[_J["r_s"]], cols[_J["w_s"]]
    ios = r + w
    idle = ios == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        areq = cols[_J["areq_kb"]]
        if layout.prints_areq:  # a 0 with no IO is no request at all; rates rounded to 0.00 keep theirs
            areq[idle & (areq == 0)] = np.nan
        else:
            if layout.prints_rwareq:
                np.divide(r * cols[_J["rareq_kb"]] + w * cols[_J["wareq_kb"]], ios, out=areq)
            else:
                np.divide(cols[_J["rkb_s"]] + cols[_J["wkb_s"]], ios, out=areq)
            areq[idle] = np.nan
        if layout.has_rates and not layout.prints_await:
            await_ms = cols[_J["await_ms"]]
            np.divide(r * cols[_J["r_await_ms"]] + w * cols[_J["w_await_ms"]], ios, out=await_ms)
            await_ms[idle] = np.nan

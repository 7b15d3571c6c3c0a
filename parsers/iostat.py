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
decimal comma are read as such), zh_CN / ja_JP (`2026年11月27日 12时46分44秒`, ja_JP `時`) and ISO
(`2026-11-22T08:09:55+0000`, the only form with a zone; the others are wall-clock time in `tz`).
Headerless row fragments (seed 000) take the last header seen; with no header at all in the file the
column order is inferred from the value count (13: sysstat <= 11.4, 22: sysstat 12.3+) and said so
in `notes`. Not read: `iostat -h` (human-readable units), the basic report without `-x`,
`-o JSON` (its own format).

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
What it reads beside its rows: `EXTRAS` (below).

A report is a run of device rows on consecutive lines (a stamp, header, blank or `avg-cpu:` line
ends it). The first report after the banner is the average since boot (`since_boot=True`); sysstat
12.x with `-y` prints a second blank line after the banner instead, and then nothing is marked.

Read by the table engine (parsers/_table.py: device rows in bulk, a bad one named); this module gives
it each header's column plan and sorts out the lines among the rows that are none (`_Iostat`).

Tested on: tests/fixtures/iostat/*.txt (see README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._columns import CONVERT, IOSTAT_IGNORED, RENAME
from ._common import Extras
from ._sysstat import banner_cpus
from ._table import ROW, Block, Layout, Skip, Table


@dataclass(frozen=True)
class IostatExtras(Extras):
    """What iostat reads beside its rows (see `_common.Extras`); `dropped_lines` also counts a last
    device row with too few values, `unknown_columns` lists header names in no table."""

    # which sysstat header form the capture prints (`sysstat>=12.3`, ...; `+`-joined when several)
    header_generation: str | None = None
    cpus: int | None = None  # the last banner's `(N CPU)`; None without a banner


EXTRAS = IostatExtras

KIND = "iostat"

_NUMERIC = (
    "r_s", "w_s", "rkb_s", "wkb_s", "rrqm_s", "wrqm_s", "r_await_ms", "w_await_ms", "await_ms", "aqu_sz",
    "areq_kb", "rareq_kb", "wareq_kb", "util_pct", "svctm_ms", "d_s", "dkb_s", "d_await_ms", "f_s",
    "f_await_ms",
)  # fmt: skip
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "sample": "Int64",
    "since_boot": "bool",
    "device": "string",
    **dict.fromkeys(_NUMERIC, "float64"),
}
_J = {col: j for j, col in enumerate(_NUMERIC)}
_NAT = np.iinfo(np.int64).min  # the int64 behind NaT

# printed header name -> (schema column, factor to its unit)
_SOURCES = {**{name: (col, 1.0) for name, col in RENAME.items()}, **CONVERT}
_KNOWN = _SOURCES.keys() | IOSTAT_IGNORED
# The first of these names a header prints tells its generation (`Device:` alone tells <= 11.4).
_GENERATIONS = (
    ("avgrq-sz", "sysstat<=11.4"),
    ("avgqu-sz", "sysstat<=11.4"),
    ("f/s", "sysstat>=12.3"),
    ("d/s", "sysstat-12.1-12.2"),
    ("rareq-sz", "sysstat-11.5-12.0"),
    ("areq-sz", "sysstat>=12.0-short"),
)
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
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: garbage mid-file, a row whose value count does not match its header, an
            unknown timestamp form, a report this parser does not read (`-h`, no `-x`).
    """
    return _Iostat(source, host, tz).run()


@dataclass(frozen=True)
class _Plan:
    """One header's column plan (a `Layout`'s key): which printed field feeds which schema column."""

    where: str  # the header at line N, or an assumed one
    fields: tuple[tuple[int, int, float], ...]  # (field, schema numeric index, factor)
    generation: str
    has_rates: bool
    prints_await: bool
    prints_areq: bool  # the request size as iostat computed it from its exact counters
    prints_rwareq: bool


def _plan(line_no: int, text: str, lines: _common.Lines) -> _Plan:
    """The plan of a `Device ...` header (`line_no` 0: assumed); ParseError for a report this parser
    does not read."""
    tokens = text.split()
    names = tokens[1:]
    fields: list[tuple[int, int, float]] = []
    seen: dict[str, str] = {}  # schema column -> printed name
    for i, name in enumerate(names, 1):
        if name not in _SOURCES:
            continue
        col, factor = _SOURCES[name]
        if col in seen:
            raise lines.error(line_no, text, f"columns {seen[col]!r} and {name!r} both give {col}")
        seen[col] = name
        fields.append((i, _J[col], factor))
    if not _EXTENDED_MARKS & set(names):
        raise lines.error(line_no, text, "not an extended device report: capture iostat with -x")
    if tokens[0] == "Device:":
        generation = "sysstat<=11.4"
    else:
        generation = next((gen for name, gen in _GENERATIONS if name in names), "unknown")
    return _Plan(
        f"header at line {line_no}" if line_no else "assumed header",
        tuple(fields),
        generation,
        has_rates={"r_s", "w_s", "rkb_s", "wkb_s"} <= seen.keys(),
        prints_await="await" in names,
        prints_areq="areq_kb" in seen,
        prints_rwareq={"r_s", "w_s", "rareq_kb", "wareq_kb"} <= seen.keys(),
    )


class _Iostat:
    """The format for the table engine: headers hold `Device`; aside lines (taken out of the runs of
    rows) start with a digit (`-t` stamps), `a` (`avg-cpu:`) or a blank (its values); structure lines
    with `L` (the banner) or a tab, or come before any header: read one by one."""

    structure_bytes = b"L\t"
    aside_bytes = b"0123456789a "
    header_words = (b"Device",)

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        self.table = Table(source, KIND, self)
        self.table.odd_row = self._odd_row
        try:
            ZoneInfo(tz)
        except (ValueError, KeyError, OSError) as exc:
            raise ParseError(
                KIND, self.table.lines.path, 0, "", f"unknown time zone {tz!r} ({exc})"
            ) from None
        self.tz = tz
        self.host = host
        self.banner_host: str | None = None
        self.banner_cpus: int | None = None
        self.generations: list[str] = []
        self.unknown: list[str] = []
        self.notes: list[str] = []
        # stamps: the last one read before this stretch of the file, then this stretch's (line, UTC ns)
        self.stamp_lines = np.empty(0, dtype=np.int64)
        self.stamp_ns = np.empty(0, dtype=np.int64)
        self._minutes: dict[str, int] = {}  # stamp without its seconds -> UTC ns of that minute
        self._seconds_at: dict[int, int] = {}  # stamp length -> where its seconds are
        # reports
        self.sample = -1
        self.last_row = -1  # line of the last device row read: a row on the next line goes on its report
        self.last_struct = 0  # line of the last non-blank line that is no device row
        self.banner_at: int | None = None  # a banner whose first report is still to come
        self.after_banner: int | None = None  # the first non-blank line after it
        self.cpu_at = -1  # line of the last `avg-cpu:` header or values
        self.boot_sample = -1  # the report since boot
        self.fallback: Layout | None = None  # assumed from the value count: no header in the file
        self.short: tuple[int, str, str] | None = None  # a row with too few values: fine if the last
        self.held: list[list[np.ndarray]] = []  # rows of this chunk: line numbers, devices, numbers
        self.parts = _common.Parts(4 + len(_NUMERIC))  # stamps, samples, since boot, devices, numbers
        self.size = _common.source_size(source, self.table.lines)
        self.devices: dict[str, int] = {}

    def run(self) -> pd.DataFrame:
        try:
            self.table.run()
        except ParseError as exc:  # a short row held back is the first error
            if self.short is not None and self.short[0] < exc.line_no:
                raise self.table.error(*self.short) from None
            raise
        cut = self.table.cut is not None
        if self.short is not None and (max(self.last_row, self.last_struct) > self.short[0] or cut):
            raise self.table.error(*self.short)
        return self._assemble(dropped=(self.short is not None) + cut)  # a last row cut mid-write

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout | Skip:
        if not (text.startswith(("Device ", "Device:", "Device\t")) or text == "Device"):
            return ROW  # `-h` prints `Device` last; a line of another kind mentions it
        self._seen(line_no)
        plan = _plan(line_no, text, self.table.lines)
        names = text.split()[1:]
        self.unknown.extend(n for n in dict.fromkeys(names) if n not in _KNOWN and n not in self.unknown)
        if plan.generation not in self.generations:
            self.generations.append(plan.generation)
        return Layout("t" + "f" * len(names), labels=(0,), key=plan)

    def aside(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """Which lines starting with a digit, `a` or a blank are no device rows: `-t` stamps (a device
        named like `8:0` has more than 8 blanks), `avg-cpu:` and the indented lines under it (its
        values), blank ones; any other indented line is a device row (a pasted fragment)."""
        codes = np.array(texts).view(np.uint32).reshape(len(texts), -1)
        digit = (codes[:, 0] - ord("0")) < 10  # uint32 wraps
        stamp = digit & ((codes == ord(" ")).sum(axis=1) <= 8)
        aside = stamp.copy()
        for k in np.flatnonzero(~digit).tolist():  # `avg-cpu:` blocks, blank lines
            line_no, text = int(line_nos[k]), texts[k]
            if text.startswith("avg-cpu") or (text[0] == " " and line_no == self.cpu_at + 1):
                self.cpu_at = line_no  # the header, then the values indented under it
            elif (
                text[0] == " " and text.rstrip().endswith("Device") and not text.lstrip().startswith("Device")
            ):
                raise self.table.error(
                    line_no, text, "iostat -h (human-readable) output is not read: capture without -h"
                )
            elif text.strip():
                continue  # a device row
            aside[k] = True
        if stamp.any():
            at = np.flatnonzero(stamp)
            self.stamp_lines = np.concatenate((self.stamp_lines[-1:], line_nos[at]))
            self.stamp_ns = np.concatenate(
                (self.stamp_ns[-1:], self._stamps(line_nos[at], [texts[k] for k in at]))
            )
        if aside.any():
            seen = line_nos[aside]
            self._seen(int(seen[0]))
            self._seen(int(seen[-1]))
        return aside

    def structure(self, line_no: int, text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        if text.startswith("Linux") and (banner := _BANNER_HOST.match(text)):
            self.banner_host = banner[1] or None
            self.banner_cpus = banner_cpus(text) or self.banner_cpus
            self.banner_at, self.after_banner = line_no, None
            self.last_struct = line_no
            return
        # a device row after all: named like a banner (`LVM`), tab-indented, or before any header
        layout = self.table.current
        if layout is None:
            layout = self.fallback or self._assume(line_no, stripped)
        self.rows(self.table.read_lines([(line_no, stripped)], layout))  # type: ignore[arg-type]
        self.chunk_end()

    def _odd_row(self, line_no: int, text: str, tokens: list[str], layout: Layout) -> list[str]:
        """A row whose value count is not its header's: an error, unless too few values end the file
        (a last row cut mid-write: `run` drops it)."""
        width = len(layout.kinds)
        reason = f"{len(tokens) - 1} values after the device name, the {layout.key.where} has {width - 1}"
        if self.short is not None:
            raise self.table.error(*self.short)
        if len(tokens) > width:
            raise self.table.error(line_no, text, reason)
        self.short = (line_no, text, reason)
        return [tokens[0]] + ["0"] * (width - 1)  # its values may be cut too: `rows` keeps it out

    def rows(self, block: Block) -> None:
        """A block's rows as schema columns, held until `chunk_end` puts the chunk's in file order (the
        engine hands over one block per layout)."""
        line_nos, fields = block.line_nos, block.fields
        if self.short is not None:
            short_at = self.short[0]
            if line_nos[-1] > short_at:
                raise self.table.error(*self.short)
            if line_nos[-1] == short_at:  # the short row, last so far: kept out
                self.last_row = max(self.last_row, short_at)
                line_nos, fields = line_nos[:-1], [f[:-1] for f in fields]
                if not len(line_nos):
                    return
        n = len(line_nos)
        plan: _Plan = block.layout.key  # type: ignore[assignment]
        if not self.parts.rows and not self.held:  # room for as many rows as these in the whole capture
            width = len(block.data) / n if block.data else 2 * len(block.layout.kinds)  # more: chunks then
            self.parts.capacity = int(self.size / width) + 1
        printed = {j: fields[i] if factor == 1.0 else fields[i] * factor for i, j, factor in plan.fields}
        numbers = [printed[j] if j in printed else np.full(n, np.nan) for j in range(len(_NUMERIC))]
        _derive(numbers, plan)
        devices = fields[0]
        remap = np.array([self.devices.setdefault(d, len(self.devices)) for d in devices.categories])
        self.held.append([line_nos, remap[devices.codes].astype(np.int32), *numbers])

    def chunk_end(self) -> None:
        """The held rows in file order, with their stamp, report and since-boot flag."""
        held, self.held = self.held, []
        if not held:
            return
        if len(held) == 1:
            line_nos, codes, *numbers = held[0]
        else:
            order = np.argsort(np.concatenate([h[0] for h in held]), kind="stable")
            line_nos, codes, *numbers = (np.concatenate(col)[order] for col in zip(*held, strict=True))
        n = len(line_nos)
        # reports: runs of rows on consecutive lines
        new = np.empty(n, dtype=bool)
        new[0] = line_nos[0] != self.last_row + 1
        np.not_equal(np.diff(line_nos), 1, out=new[1:])
        samples = self.sample + np.cumsum(new)
        if self.banner_at is not None and new.any():
            first = int(np.argmax(new))
            first_line = min(int(line_nos[first]) - 1, self.after_banner or int(line_nos[first]))
            if first_line - self.banner_at - 1 < 2:  # `-y`: a second blank line, no report since boot
                self.boot_sample = int(samples[first])
            self.banner_at = None
        boots = samples == self.boot_sample
        self.sample, self.last_row = int(samples[-1]), int(line_nos[-1])
        # stamps: the last one above each row
        at = np.searchsorted(self.stamp_lines, line_nos) - 1
        stamps = np.full(n, _NAT, dtype=np.int64)
        if len(self.stamp_ns):
            stamps[at >= 0] = self.stamp_ns[at[at >= 0]]
        self.parts.add([stamps, samples, boots, codes, *numbers])

    # ------------------------------------------------------------ helpers

    def _seen(self, line_no: int) -> None:
        """A non-blank line that is no device row: it ends a report, and the blank lines after a banner."""
        self.last_struct = max(self.last_struct, line_no)
        if self.banner_at is not None and line_no > self.banner_at:
            self.after_banner = min(self.after_banner or line_no, line_no)

    def _assume(self, line_no: int, text: str) -> Layout:
        """The layout of rows before any header, from their value count (seed 000's fragments)."""
        nvals = len(text.split()) - 1
        header = _FALLBACK_HEADERS.get(nvals)
        if header is None:
            raise self.table.error(
                line_no,
                text,
                f"no iostat -x header before this line, and {nvals} values after the device name "
                "(a headerless fragment must have 13 (sysstat<=11.4) or 22 (sysstat 12.3+))",
            )
        plan = _plan(0, header, self.table.lines)
        self.generations.append(plan.generation)
        self.notes.append(
            f"no header before line {line_no}: {nvals} values per row read in the {plan.generation} "
            f"-x column order ({header})"
        )
        self.fallback = Layout("t" + "f" * nvals, labels=(0,), key=plan)
        return self.fallback

    def _stamps(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """UTC nanoseconds of `-t` stamp lines: `_stamp` reads the first of each minute, numpy the
        seconds of the others, which differ from it only there (as `_stamp`'s cache would read them)."""
        codes = np.array(texts).view(np.uint32).reshape(len(texts), -1)
        self._stamp(int(line_nos[0]), texts[0])  # where a stamp of its length has its seconds
        pos = self._seconds_at.get(codes.shape[1])
        if pos is not None:
            digits = codes[:, pos : pos + 2].astype(np.int64) - ord("0")
            if ((digits >= 0) & (digits <= 9)).all() and (codes[:, -1] != 0).all():  # as long, 2 digits
                minute = np.delete(codes, [pos, pos + 1], axis=1)
                new = np.ones(len(texts), dtype=bool)
                new[1:] = (minute[1:] != minute[:-1]).any(axis=1)
                firsts = np.flatnonzero(new).tolist()
                bases = []
                for k in firsts:
                    self._stamp(int(line_nos[k]), texts[k])  # the minute read, or refused
                    bases.append(self._minutes.get(texts[k][:pos] + texts[k][pos + 2 :]))
                if None not in bases:  # None: another form of this length, its seconds elsewhere
                    seconds = digits[:, 0] * 10 + digits[:, 1]
                    counts = np.diff([*firsts, len(texts)])
                    return np.repeat(np.array(bases, dtype=np.int64), counts) + seconds * 1_000_000_000
        return np.array(
            [self._stamp(n, t) for n, t in zip(line_nos.tolist(), texts, strict=True)], dtype=np.int64
        )

    def _stamp(self, line_no: int, line: str) -> int:
        """UTC nanoseconds of a `-t` stamp line; the minute is read once, its seconds each time."""
        pos = self._seconds_at.get(len(line))
        if pos is not None:
            base = self._minutes.get(line[:pos] + line[pos + 2 :])
            seconds = line[pos : pos + 2]
            if base is not None and seconds.isdigit():
                return base + int(seconds) * 1_000_000_000
        m = _TIMESTAMP.match(line)
        if m is not None:
            day, hhmm, pos, ampm, zone = m[1], m[2], m.start(3), m[4], m[5]
        elif cjk := _CJK_TIMESTAMP.match(line):
            day, hhmm, pos, ampm, zone = cjk[1], f"{cjk[2]}:{cjk[3]}", cjk.start(4), None, None
        else:
            raise self.table.error(
                line_no, line, "not a timestamp form this parser reads (capture not taken under LC_ALL=C?)"
            )
        key = line[:pos] + line[pos + 2 :]
        base = self._minutes.get(key)
        if base is None:  # the minute's start in UTC
            d = _common.parse_date(day)
            clock = _common.parse_clock(f"{hhmm}:00{ampm or ''}")
            if d is None or clock is None:
                raise self.table.error(line_no, line, "invalid date or time in the timestamp line")
            naive = datetime(d.year, d.month, d.day, clock[0], clock[1])
            if zone:
                offset = 0 if zone == "Z" else int(zone[0] + "1") * (int(zone[1:3]) * 60 + int(zone[-2:]))
                base = pd.Timestamp(naive - timedelta(minutes=offset), tz="UTC").value
            else:
                base = _common.to_utc(naive, self.tz).value
            self._minutes[key] = base
            self._seconds_at[len(line)] = pos
        return base + int(line[pos : pos + 2]) * 1_000_000_000

    # ------------------------------------------------------------ the frame

    def _assemble(self, dropped: int) -> pd.DataFrame:
        n = self.parts.rows
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
        else:
            stamps, samples, boots, codes, *numbers = self.parts.columns()
            host = self.host if self.host is not None else self.banner_host
            data = {
                "timestamp": pd.DatetimeIndex(stamps.view("M8[ns]")).tz_localize("UTC"),
                "host": _common.text_column([host], np.zeros(n, dtype=np.intp)),
                "sample": pd.arrays.IntegerArray(samples, np.zeros(n, dtype=bool)),
                "since_boot": boots,
                "device": _common.text_column(list(self.devices), codes),  # codes in insertion order
                **dict(zip(_NUMERIC, numbers, strict=True)),
            }
            frame = pd.DataFrame(data, copy=False)  # one block per column, no copy
        frame.attrs.update(
            header_generation="+".join(self.generations) or None,
            unknown_columns=list(self.unknown),
            dropped_lines=dropped,
            notes=list(self.notes),
            cpus=self.banner_cpus,
        )
        return frame


def _derive(cols: list[np.ndarray], plan: _Plan) -> None:
    """areq_kb where the version does not print it (`avgrq-sz`/`areq-sz` are kept as printed): the
    printed `rareq-sz`/`wareq-sz` weighted by r/s and w/s (sysstat >= 11.5), else (rkb_s+wkb_s)/(r_s+w_s);
    await_ms where the version does not print it."""
    if not plan.has_rates and not plan.prints_rwareq:
        return
    r, w = cols[_J["r_s"]], cols[_J["w_s"]]
    ios = r + w
    idle = ios == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        j = _J["areq_kb"]
        if plan.prints_areq:  # a 0 with no IO is no request at all; rates rounded to 0.00 keep theirs
            cols[j] = np.where(idle & (cols[j] == 0), np.nan, cols[j])
        else:
            if plan.prints_rwareq:
                areq = (r * cols[_J["rareq_kb"]] + w * cols[_J["wareq_kb"]]) / ios
            else:
                areq = (cols[_J["rkb_s"]] + cols[_J["wkb_s"]]) / ios
            areq[idle] = np.nan
            cols[j] = areq
        if plan.has_rates and not plan.prints_await:
            await_ms = (r * cols[_J["r_await_ms"]] + w * cols[_J["w_await_ms"]]) / ios
            await_ms[idle] = np.nan
            cols[_J["await_ms"]] = await_ms

"""Plumbing every parser shares: reading lines from a path/stream/str, dates and clocks, typed frames.

Parsers are pure functions of their input: nothing here reads the clock, the process locale or globals.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perfkit.errors import ParseError

Source = str | Path | IO[str] | IO[bytes]

SNIFF_BYTES = 8192
# Dates whose times datetime64[ns] (1677-09-21 to 2262-04-11) holds, with a year of room at each end for
# a capture's days and any zone's offset: beyond them int64 ns stamps wrap (wrong times).
FIRST_DATE, PAST_DATE = date(1678, 1, 1), date(2262, 1, 1)
SKIP_QUOTES = 3  # skipped lines a capture keeps to quote; the rest are only counted


@dataclass(frozen=True)
class SkippedLine:
    line_no: int
    text: str  # cut to 200 characters
    reason: str


@dataclass
class Skips:
    """Lines a parser did not know and left out (a table a newer tool version added, another tool's
    block, stderr saved with the output): counted, the first few quoted. A capture with any is
    *partial* in the report's inputs table and findings.json. A file is refused whole only when no data
    row was read (`refuse_if_nothing_read`): one readable table among twenty unknown (`sar -A`) is read.
    Kept in the frame's attrs as `skipped`.
    """

    count: int = 0
    quoted: list[SkippedLine] = field(default_factory=list)

    def add(self, line_no: int, text: str, reason: str) -> None:
        self.count += 1
        if len(self.quoted) < SKIP_QUOTES:
            self.quoted.append(SkippedLine(line_no, text[:200], reason))

    def add_block(self, first_line_no: int, lines: list[str], reason: str) -> None:
        """A block of unknown lines (a whole table): counted line by line, its first line quoted."""
        if lines:
            self.add(first_line_no, lines[0], reason)
            self.count += len(lines) - 1

    def refuse_if_nothing_read(self, rows: int, lines: Lines) -> None:
        if rows == 0 and self.quoted:
            first = self.quoted[0]
            raise lines.error(
                first.line_no, first.text, f"nothing readable ({self.count} lines skipped): {first.reason}"
            )

    def summary(self) -> str:
        """`12 lines skipped, e.g. line 40 'Summary: ...' (a summary line)`; empty when none."""
        if not self.count:
            return ""
        first = self.quoted[0]
        return f"{self.count} lines skipped, e.g. line {first.line_no} {first.text[:60]!r} ({first.reason})"


def skips_of(frame: pd.DataFrame) -> Skips:
    """The lines a parser skipped in the capture behind `frame` (none when it records no `skipped`)."""
    found = frame.attrs.get("skipped")
    return found if isinstance(found, Skips) else Skips()


@dataclass(frozen=True)
class Extras:
    """What a parser read beside its rows; a parser giving more declares `EXTRAS`, a subclass (top's
    per-iteration summaries, the sysctl port range). Parsers put them in the frame's attrs; `extras_of`
    moves them into this type where the dataset takes a capture in, so rules read typed fields and
    pandas no longer deep-copies them into every derived frame."""

    dropped_lines: int = 0  # a last line cut off mid-write
    skipped: Skips = field(default_factory=Skips)  # lines not known, left out: the capture is partial
    unknown_columns: list[str] = field(default_factory=list)  # header labels not in the schema
    notes: list[str] = field(default_factory=list)  # what the parser wants the reader to know


def extras_of(declared: type[Extras], frame: pd.DataFrame) -> Extras:
    """The frame's attrs as `declared`, and the attrs emptied. Raises TypeError for a key the parser
    gives but did not declare (a programming error: tests parse every fixture through this)."""
    undeclared = sorted(set(frame.attrs) - set(declared.__dataclass_fields__))
    if undeclared:
        raise TypeError(f"{declared.__qualname__} does not declare {', '.join(undeclared)}")
    extras = declared(**frame.attrs)
    frame.attrs = {}
    return extras


class Lines:
    """Iterate `(line_no, text)` over a path, a text/binary stream or a string, one line at a time.

    Lines come without their line terminator (CRLF included). Undecodable bytes are replaced, never
    fatal: the parser then sees garbage and says where. After iteration `last_complete` tells
    whether the final line ended with a newline; a capture cut off mid-write does not.
    """

    def __init__(self, source: Source, kind: str):
        self.kind = kind
        self.path: str | None = None
        self.last_complete = True
        self._source = source
        if _is_path(source):
            self.path = str(source)
        elif isinstance(getattr(source, "name", None), str):
            self.path = source.name

    def __iter__(self) -> Iterator[tuple[int, str]]:
        src = self._source
        if self.path is not None and isinstance(src, str | Path):
            try:
                fh: IO[str] = open(src, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise self.error(0, "", f"cannot read: {exc.strerror}") from None
            with fh:
                yield from self._walk(fh)
        elif isinstance(src, str):
            yield from self._walk(io.StringIO(src, newline=""))
        elif isinstance(src, io.TextIOBase) or hasattr(src, "encoding"):
            yield from self._walk(src)  # type: ignore[arg-type]
        else:
            yield from self._walk(io.TextIOWrapper(src, encoding="utf-8", errors="replace", newline=""))

    def _walk(self, fh: IO[str]) -> Iterator[tuple[int, str]]:
        line_no = 0
        line = ""
        for line_no, line in enumerate(fh, 1):  # noqa: B007 - line is read after the loop
            yield line_no, line.rstrip("\r\n")
        self.last_complete = line_no == 0 or line.endswith("\n")

    def error(self, line_no: int, line: str, reason: str) -> ParseError:
        return ParseError(self.kind, self.path, line_no, line, reason)


def feed_lines(
    source: Source,
    kind: str,
    feed: Callable[[int, str, Lines], None],
    cut_last: Callable[[int, str, Lines], None],
) -> Lines:
    """Hand each `(line_no, text, lines)` of `source` to `feed`; a last line cut off mid-write to `cut_last`.

    The last line is held back: only at the end is it known whether it ended with a newline. A
    non-blank one without it was cut while the tool wrote it (its numbers may be cut too); `cut_last`
    decides whether to drop it (a message may end without newline).

    Returns:
        The `Lines` that were read, for error messages after the walk.

    Raises:
        ParseError: the source cannot be read, or `feed`/`cut_last` raised it.
    """
    lines = Lines(source, kind)
    prev: tuple[int, str] | None = None
    line_no = 0
    try:
        for line_no, text in lines:
            if prev is not None:
                feed(*prev, lines)
            prev = (line_no, text)
    except (UnicodeDecodeError, OSError) as exc:
        raise lines.error(line_no + 1, "", f"cannot read: {exc}") from None
    if prev is not None:
        if not lines.last_complete and prev[1].strip():
            cut_last(*prev, lines)
        else:
            feed(*prev, lines)
    return lines


def source_size(source: Source, lines: Lines) -> int:
    """The capture's size in bytes (a string's in characters) where it is known before reading it, else 0."""
    if lines.path is not None and isinstance(source, str | Path):
        try:
            return os.stat(source).st_size
        except OSError:
            return 0
    return len(source) if isinstance(source, str) else 0


def _is_path(source: Source) -> bool:
    return isinstance(source, Path) or (isinstance(source, str) and _looks_like_path(source))


def _looks_like_path(text: str) -> bool:
    if "\n" in text or len(text) >= 4096:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a capture's one line is no file name (too long, NUL bytes)
        return False


def head(source: Source, size: int = SNIFF_BYTES) -> str:
    """The first `size` characters of a source, for sniffing; does not consume a stream's position."""
    if _is_path(source):
        with open(source, "rb") as fh:
            return fh.read(size).decode("utf-8", errors="replace")
    if isinstance(source, str):
        return source[:size]
    pos = source.tell()
    data = source.read(size)
    source.seek(pos)
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


# ---------------------------------------------------------------- dates and clocks

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\s*([AaPp])\.?[Mm]\.?)?$")
_CJK_CLOCK = re.compile(r"^(\d{1,2})[时時](\d{2})分(\d{2})秒$")  # zh_CN 12时46分44秒, ja_JP 時
T_LIMIT_S = 9.2e9  # epoch seconds datetime64[ns] holds (2**63 ns, in 2262): beyond, times wrap, not fail
# pt-stalk's snapshot series (-diskstats, -netstat_s, ...): `TS <epoch seconds>[ <date time>]` before each
PT_STALK_STAMP = re.compile(r"^TS (\d+(?:\.\d+)?)(?: .*)?$")


def stamp_seconds(stamp: re.Match[str], line_no: int, lines: Lines) -> float:
    """A `PT_STALK_STAMP` match's epoch seconds.

    Raises:
        ParseError: a time past 2261, which datetime64[ns] cannot hold.
    """
    seconds = float(stamp[1])
    if seconds >= T_LIMIT_S:
        raise lines.error(line_no, stamp.string, "a TS time past the year 2261")
    return seconds


_DATE_FORMS = (
    (re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"), ("y", "m", "d")),  # ISO 2026-11-22
    (re.compile(r"^(\d{2})/(\d{2})/(\d{4})$"), ("m", "d", "y")),  # en_US 11/22/2026
    (re.compile(r"^(\d{2})/(\d{2})/(\d{2})$"), ("m", "d", "yy")),  # C 11/22/26
    (re.compile(r"^(\d{2})\.(\d{2})\.(\d{4})$"), ("d", "m", "y")),  # de_DE 22.11.2026
    (re.compile(r"^(\d{4})年(\d{1,2})月(\d{1,2})日$"), ("y", "m", "d")),  # zh_CN 2026年11月22日
)


def parse_clock(text: str) -> tuple[int, int, int] | None:
    """`08:09:59`, `08:09:59 AM`, `12:05:00 AM` (= 00:05), `08时09分59秒` (zh_CN; ja_JP `時`) ->
    (h, m, s); None if not a clock. AM/PM is read by hand: strptime's %p follows the process locale.
    """
    text = text.strip()
    m = _CLOCK.match(text) or _CJK_CLOCK.match(text)
    if not m:
        return None
    h, mi, s = int(m[1]), int(m[2]), int(m[3])
    if m.re is _CLOCK and m[4]:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if m[4] in "Pp" else 0)
    if h > 23 or mi > 59 or s > 60:
        return None
    return h, mi, min(s, 59)


def parse_date(text: str) -> date | None:
    """A date in any of the forms sysstat/procps print under C, en_US, de_DE, zh_CN or ISO; else None."""
    text = text.strip()
    for rx, order in _DATE_FORMS:
        m = rx.match(text)
        if m:
            parts = dict(zip(order, (int(g) for g in m.groups()), strict=True))
            year = parts.get("y", 2000 + parts.get("yy", 0))
            try:
                return date(year, parts["m"], parts["d"])
            except ValueError:
                return None
    return None


def to_utc(naive: datetime, tz: str) -> pd.Timestamp:
    """A wall-clock time on a host whose zone is `tz`, as a UTC timestamp."""
    return pd.Timestamp(naive.replace(tzinfo=ZoneInfo(tz))).tz_convert("UTC")


# Zone abbreviations naming one UTC offset (hours) wherever strftime's `%Z` prints them. Not here, as
# only the host's zone can tell which they mean: CST (China, Cuba, US Central), CDT, IST, BST, AST.
FIXED_ABBREVIATIONS: dict[str, float] = {
    "UTC": 0, "GMT": 0, "WET": 0, "WEST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
    "PST": -8, "PDT": -7, "MST": -7, "MDT": -6, "EDT": -4, "EST": -5, "HST": -10, "AKST": -9,
    "AKDT": -8, "HKT": 8, "SGT": 8, "AWST": 8, "JST": 9, "KST": 9, "ACST": 9.5, "ACDT": 10.5,
    "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
}  # fmt: skip


def zone_names(tz: str, naive: datetime, *, standard_all_year: bool = False) -> set[str]:
    """The abbreviations zone `tz` prints for wall-clock time `naive`: the one in force; with
    `standard_all_year` also the zone's standard-time one that year (sysstat prints glibc's
    `tzname[0]` in every season: `CET` on a summer clock that is CEST). Empty for an unknown zone."""
    try:
        zone = ZoneInfo(tz)
    except (ValueError, KeyError, OSError):
        return set()
    names = {naive.replace(tzinfo=zone).tzname()}
    if standard_all_year:
        for month in (1, 7):
            probe = datetime(naive.year, month, 1, tzinfo=zone)
            if not probe.dst():
                names.add(probe.tzname())
    return {n for n in names if n}


def printed_zone(printed: str, tz: str, naive: datetime) -> str | timezone | None:
    """The zone to read wall-clock time `naive` in, when strftime's `%Z` printed `printed` beside it:
    UTC for `UTC`/`GMT`; `tz` when `tz` prints that then (its daylight rules apply); else the fixed
    offset of an abbreviation naming one (`PDT`: UTC−7); None for one naming several (`CST`): the
    caller asks for the host's zone.
    """
    if printed in ("UTC", "GMT"):
        return "UTC"
    if printed in zone_names(tz, naive):
        return tz
    hours = FIXED_ABBREVIATIONS.get(printed)
    return None if hours is None else timezone(timedelta(hours=hours), printed)


@dataclass(frozen=True)
class ParseContext:
    """What the archive knows of a capture that its text may not say: the host, its time zone, and
    when the capture started (the manifest's `started_at`, a pt-stalk sample's prefix), which dates a
    capture printing only a time of day (top, iotop)."""

    host: str | None = None
    tz: str = "UTC"
    started_at: pd.Timestamp | None = None
    # a pt-stalk capture printing no time (iostat/vmstat without -t, mysqladmin): `date_samples`
    samples_from: pd.Timestamp | None = None
    # as the record names it (`top from procps-ng 4.0.2`): for a flaw of one release its text does
    # not show (a parser that reads it declares `READS_TOOL_VERSION`)
    tool_version: str | None = None


def date_samples(frame: pd.DataFrame, start: pd.Timestamp) -> None:
    """Date in place the samples of a capture that prints no time (iostat/vmstat without -t,
    mysqladmin): sample k at `start` + k × its interval (pt-stalk runs them every second)."""
    if frame.empty or ("timestamp" in frame.columns and frame["timestamp"].notna().any()):
        return
    if "snapshot" in frame.columns and "timestamp" in frame.columns:
        # lock waits, transactions: printed only in the seconds that had some, so the snapshot's
        # second is unknown; each snapshot stays apart by `snapshot`
        frame["timestamp"] = pd.Timestamp(start)
        frame.attrs.setdefault("notes", []).append(
            "the file prints no time and skips the seconds with nothing to show: every snapshot dated "
            "at the pt-stalk collection's start"
        )
        return
    if "sample" in frame.columns:  # mysqladmin's long form has no timestamp column: it gains one
        k = pd.to_numeric(frame["sample"], errors="coerce").astype("float64")
    elif "timestamp" in frame.columns and "since_boot" in frame.columns:  # vmstat: a row per report
        k = pd.Series(range(len(frame)), index=frame.index, dtype="float64")
    else:
        return
    interval = float(frame.attrs.get("interval_s", 1.0) or 1.0)
    frame["timestamp"] = pd.Timestamp(start) + pd.to_timedelta(k * interval, unit="s")
    frame.attrs.setdefault("notes", []).append(
        "dated from the pt-stalk collection's start (its file name) + sample × interval: about a second off"
    )


def capture_day(first_clock_s: float, started_at: pd.Timestamp, tz: str) -> date:
    """The day of a time-of-day capture's first clock (seconds since midnight): the one that puts
    it nearest the capture's start, so a capture started at 23:59:59.9 whose first screen says
    00:00:00 lands on the next day."""
    start = pd.Timestamp(started_at)
    start = (start.tz_localize("UTC") if start.tzinfo is None else start).tz_convert(tz).tz_localize(None)
    first = timedelta(seconds=float(first_clock_s))
    midnight = datetime(start.year, start.month, start.day)
    day = min((midnight + timedelta(days=d) for d in (-1, 0, 1)), key=lambda m: abs(m + first - start))
    return day.date()


def clock_stamps(clock_s: np.ndarray, day0: date, tz: str) -> pd.Series:
    """UTC timestamps of seconds since the first midnight on `day0` in `tz` (NaN: NaT), for tools that
    print a time of day and no date (top, iotop). The distinct clocks are localised at once by
    `wall_utc`: a day of top -H is 5 M rows and 86 k clocks; a zone lookup each took 0.9 s."""
    clock_s = np.asarray(clock_s, dtype=np.float64)
    # a clock holds for a screen's rows: the distinct ones among the runs' (a fifth of a hash per row)
    first = np.ones(len(clock_s), dtype=bool)
    first[1:] = clock_s[1:] != clock_s[:-1]  # NaN != NaN: each its own run
    starts = np.flatnonzero(first)
    run_codes, distinct = pd.factorize(clock_s[starts])  # NaN: code -1
    codes = np.repeat(run_codes, np.diff(np.append(starts, len(clock_s))))
    whole = distinct == np.floor(distinct)  # a fraction (none that top or iotop print): `to_utc`'s rounding
    midnight = datetime(day0.year, day0.month, day0.day)
    epoch_s = (midnight - datetime(1970, 1, 1)) // timedelta(seconds=1)
    ns = wall_utc(epoch_s + np.where(whole, distinct, 0).astype(np.int64), tz)
    for k in np.flatnonzero(~whole).tolist():
        ns[k] = to_utc(midnight + timedelta(seconds=float(distinct[k])), tz).value
    out = np.append(ns, np.iinfo(np.int64).min)[codes]  # code -1 takes the last: NaT
    # localised as UTC, not `pd.to_datetime(out, utc=True)`: that took 15 times as long
    return pd.Series(pd.DatetimeIndex(out.view("M8[ns]")).tz_localize("UTC"))


def wall_utc(seconds: np.ndarray, tz: str) -> np.ndarray:
    """UTC ns of wall-clock times `seconds` after 1970-01-01 in `tz`, as `to_utc` gives them: pandas
    localises every time the zone maps to one instant; a time skipped or repeated at a DST change goes
    through `to_utc` (whose fold rule pandas does not have)."""
    naive = np.asarray(seconds, dtype=np.int64) * 1_000_000_000
    local = pd.DatetimeIndex(naive.view("M8[ns]")).tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
    ns = local.asi8.copy()
    for k in np.flatnonzero(local.isna()).tolist():
        ns[k] = to_utc(datetime(1970, 1, 1) + timedelta(seconds=int(seconds[k])), tz).value
    return ns


# ---------------------------------------------------------------- frames


def empty_frame(schema: dict[str, str]) -> pd.DataFrame:
    """A frame with exactly the schema's columns and dtypes, and no rows."""
    return pd.DataFrame({col: pd.Series(dtype=dtype) for col, dtype in schema.items()})


def coerce(df: pd.DataFrame, schema: dict[str, str]) -> pd.DataFrame:
    """Exactly the schema's columns, in order, typed; a column the input lacks is all-NaN."""
    if list(df.columns) == list(schema) and all(str(df[c].dtype) == t for c, t in schema.items()):
        return df.reset_index(drop=True)  # already conforming: no copy of a large frame
    out = {}
    n = len(df)
    for col, dtype in schema.items():
        if col in df.columns:
            out[col] = df[col].astype(dtype) if str(df[col].dtype) != dtype else df[col]
        elif dtype.startswith("float"):
            out[col] = pd.Series(np.full(n, np.nan), index=df.index, dtype=dtype)
        else:
            out[col] = pd.Series(pd.array([pd.NA] * n, dtype=dtype), index=df.index)
    frame = pd.DataFrame(out, index=df.index).reset_index(drop=True)
    frame.attrs.update(df.attrs)
    return frame


def records_frame(rows: list[dict], schema: dict[str, str], **same: object) -> pd.DataFrame:
    """A frame of exactly `schema` from one dict per row (a key missing or None: NA); each `same`
    column (the host, a source) holds one value for every row."""
    n = len(rows)
    data: dict[str, object] = {}
    for col, dtype in schema.items():
        if col in same:
            data[col] = pd.array([same[col]] * n, dtype=dtype)
            continue
        values = [r.get(col) for r in rows]
        if dtype.startswith("datetime"):
            data[col] = pd.to_datetime(pd.Series(values, dtype="object"), utc=True)
        elif dtype == "float64":
            data[col] = np.array([np.nan if v is None else v for v in values], dtype="float64")
        else:
            data[col] = pd.array(values, dtype=dtype)
    return coerce(pd.DataFrame(data), schema)


class Parts:
    """A frame's columns as numpy chunks, joined once at the end (growing arrays is no cheaper: once
    pandas has freed its chunk buffers, glibc serves arrays of a few MB from the heap, where every
    growth copies them).

    With a `capacity` (a bound on rows from the capture's size, set before the first `add`) each column
    is one array, written in place and trimmed at the end: pages never written cost no memory and no
    joined copy is made (a day of iostat: peak RSS 717 -> 480 MB). Past the bound, or with another
    dtype, chunks again.
    """

    def __init__(self, width: int, capacity: int = 0):
        self.chunks: list[list[np.ndarray]] = [[] for _ in range(width)]
        self.rows = 0
        self.capacity = capacity
        self._arrays: list[np.ndarray] = []

    def add(self, columns: list[np.ndarray]) -> None:
        n = len(columns[0])
        if not self.rows and 0 < n <= self.capacity:
            self._arrays = [np.empty(self.capacity, dtype=col.dtype) for col in columns]
        arrays, at = self._arrays, self.rows
        fits = bool(arrays) and at + n <= self.capacity
        if fits and all(a.dtype == c.dtype for a, c in zip(arrays, columns, strict=True)):
            for arr, col in zip(arrays, columns, strict=True):
                arr[at : at + n] = col
        else:
            if arrays:  # past the bound, or another dtype: the rows written so far are the first chunk
                for chunks, arr in zip(self.chunks, arrays, strict=True):
                    chunks.append(arr[:at])
                self._arrays = []
            for chunks, col in zip(self.chunks, columns, strict=True):
                chunks.append(col)
        self.rows += n

    def columns(self) -> Iterator[np.ndarray]:
        """Each column joined, its chunks freed as it goes (at most one column held twice)."""
        if self._arrays:
            arrays, self._arrays = self._arrays, []
            for arr in arrays:
                arr.resize(self.rows, refcheck=False)  # trimmed in place: no view of it was handed out
                yield arr
            return
        for chunks in self.chunks:
            joined = np.concatenate(chunks) if len(chunks) != 1 else chunks[0]
            chunks.clear()
            yield joined


def text_column(table: list[str | None], codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """A string column from its distinct texts and one index into them per row (-1: NA), by one Arrow
    `take`, not a Python object per row.

    The system allocator, not Arrow's mimalloc: that asks for huge pages, which the kernel compacts
    fragmented memory for on first touch (0.28 s of system time for a 70 MB column, 0.09 s here). A
    column of one value (the host, numastat's section) is laid out directly: `take` copies each row's
    bytes one at a time (30 ms per column of 2.6 M rows, 5 ms laid out).
    """
    if len(codes) and (first := int(codes[0])) == codes.min() == codes.max():
        return _constant_text(table[first] if first >= 0 else None, len(codes))
    missing = codes < 0
    taken = pc.take(
        pa.array(table, type=pa.large_string()),
        pa.array(codes, mask=missing) if missing.any() else pa.array(codes),
        memory_pool=pa.system_memory_pool(),
    )
    return pd.arrays.ArrowStringArray(taken)


def _constant_text(text: str | None, n: int) -> pd.api.extensions.ExtensionArray:
    """`n` rows of `text` (None: NA) as `text_column` makes them."""
    if text is None:
        return pd.arrays.ArrowStringArray(pa.nulls(n, type=pa.large_string()))
    raw = text.encode()
    offsets = np.arange(0, (n + 1) * len(raw), len(raw), dtype=np.int64) if raw else np.zeros(n + 1, np.int64)
    column = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n))
    return pd.arrays.ArrowStringArray(column)


def number(text: str) -> float:
    """A float from a capture's token; NaN for the tokens tools print for 'no value'. Raises ValueError."""
    if text in ("", "-", "N/A", "n/a", "?unavailable?"):
        return float("nan")
    return float(text)

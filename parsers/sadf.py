"""sadf: sysstat's `sadf -d` export of a binary sa file, `;`-separated, into the same frame as parsers/sar.py.

perfkit records `sar -o FILE` during the window and converts FILE on the host with its own sysstat
(the binary format differs between versions):

    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -P ALL         (capture id sar-cpu)
    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -n DEV         (sar-net)
    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -n TCP,ETCP    (sar-tcp)

Each activity starts with its own header, `# hostname;interval;timestamp;CPU;%user;%nice;...`,
then rows `vm;1;2026-11-23 07:47:26 UTC;-1;55.56;0.00;44.44;...` (CPU `all` is printed as `-1`).
A reboot recorded in the file is a row `vm;-1;2026-11-23 07:48:28 UTC;LINUX-RESTART<TAB>(2 CPU)`
followed by the header again; `sadf -C` comments are `vm;-1;...;COM text`. `sadf -h` puts several
activities on one line: the row is split into one row per table.

Timestamps carry `UTC` (the default); `-U` prints seconds since the epoch. `-T` (local time) and `-t`
(the file's own zone) print the wall clock without a zone up to sysstat 12.6 (read in `tz`) and with
the zone's abbreviation since 12.7 (`2026-11-27 13:45:13 CET`). `UTC`, `GMT` and numeric offsets
(`+0100`, `-05:00`, `+01`) are exact. An abbreviation is ambiguous in general (`IST`, `CST`), so it
is read in the caller's `tz` when it is one of that zone's names for the time: the one in force or
the zone's standard-time name, which sysstat prints all year (glibc's `tzname[0]`: `CET` on a summer
clock that is really CEST; the zone's rules give the right offset). Any other abbreviation is a
ParseError naming the line and asking for the zone (`--tz`): read in a wrong zone every row would be
hours off.

Any sar activity may come through `-- OPTIONS`; the tables read, their columns, instances and unit
conversions, the `SCHEMA` and the row order (by table, file order within one) are parsers/sar.py's,
so the sar text and the sadf export of one sa file give equal frames; `host` is the rows' hostname
field unless the `host` argument is given. A header of another activity (`-B`, `-w`, ...; `sadf -d
-- -A` prints some thirty) is skipped as a block (parsers/_common.py `Skips`: the header quoted,
every row counted, not checked against it: `INTR;CPU*` rows carry one column per CPU) and listed in
`skipped_tables`; a file with no row of a read table is a ParseError "nothing readable". Numbers:
`sadf` follows LC_NUMERIC, so a de_DE export prints `55,56`; with `;` as separator that is
unambiguous and is read as a decimal comma (a file mixing `,` and `.` is a ParseError: "capture not
taken under LC_ALL=C"). What it reads beside its rows: `EXTRAS` (below); no `averages`: sadf -d
prints none.

Read by the table engine (parsers/_table.py: runs of rows read in bulk, a bad row named by its line)
with `;` as separator: headers are the `#` lines, restart and comment records among the rows are none.
Not read: `sadf -j` (JSON), `-x` (XML), `-p` (awk-friendly). Tested on: tests/fixtures/sadf/*.txt
(see README.md there).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from . import _common
from ._common import Extras
from ._table import ROW, STRUCTURE, Block, Layout, Skip
from .sar import _TABLES, _codes, _instances, _Report
from .sar import SCHEMA as _SAR_SCHEMA


@dataclass(frozen=True)
class SadfExtras(Extras):
    """What sadf reads beside its rows (see `_common.Extras`)."""

    # the distinct `interval` values of read rows, seconds
    intervals_s: list = field(default_factory=list)
    # LINUX RESTART records: `timestamp` (ISO UTC), `cpus`
    restarts: list = field(default_factory=list)
    # COMMENT records
    comments: list = field(default_factory=list)
    # tables not read (no schema for them)
    skipped_tables: list = field(default_factory=list)


EXTRAS = SadfExtras

KIND = "sadf"

SCHEMA: dict[str, str] = dict(_SAR_SCHEMA)  # the same frame as parsers/sar.py: one schema for one data set

_LEAD = ["hostname", "interval", "timestamp"]
_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?: (\S+))?$")
_OFFSET = re.compile(r"^([-+])(\d{2}):?(\d{2})?$")  # `+0100`, `-05:00`, `+01`
_ABBREVIATION = re.compile(r"^[A-Za-z]{2,6}$")  # `CET`, `EST`, `AEDT`
_EPOCH = re.compile(r"^\d{9,11}$")
_SNIFF = re.compile(r"^# hostname;interval;timestamp;\S")
_NS_MIN, _NS_MAX = -(1 << 63) + 1, (1 << 63) - 1  # what datetime64[ns] holds (-2**63 is NaT)


def sniff(text: str) -> bool:
    """True when the first lines hold a `sadf -d` header (`# hostname;interval;timestamp;...`)."""
    return any(_SNIFF.match(line) for line in text[: _common.SNIFF_BYTES].splitlines()[:20])


def parse(source: _common.Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse `sadf -d FILE -- OPTIONS` output into parsers/sar.py's frame.

    Args:
        source: a path, a text or binary stream, or the capture's text.
        host: the host the capture comes from (the manifest's); default: the rows' hostname field.
        tz: the zone sadf ran in, for timestamps printed without a zone or with an abbreviation
            (`sadf -T`/`-t`); `UTC` ones and numeric offsets need none.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: a header that is not sadf's, a row before any header or with a field count other
            than its header's, an unreadable timestamp or number, a zone abbreviation that is not
            `tz`'s, an instance listed twice at one time, a foreign locale it cannot read safely, no
            row of a table this parser reads.
    """
    return _Sadf(source, host, tz).run()


class _Sadf(_Report):
    """The format for the table engine (parsers/_table.py): `;`-separated rows under `#` headers.
    parsers/_sysstat.py gives the decimal mark and errors; times come from each row's own stamp."""

    structure_bytes = b"#"  # the headers; any other line is a row or a record among the rows
    header_words = ()
    header_marks = (
        # a header: a `#` line (`structure_bytes`), searched alone with the line end before it; anchored
        # at the start, it costs nothing on a run of rows (which starts with a row); `layout` refuses a
        # `#` line that is not sadf's header
        re.compile(rb"\A\n\n?(#)"),
        # restart and comment records among the rows (`layout` says whether the line is one): literals
        # whose first byte rows lack are searched fastest (`COM ` by its `OM `: a `C` is in each `UTC`)
        re.compile(rb"LINUX-RESTART"),
        re.compile(rb"OM "),
    )

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, host, tz)
        self.intervals: set[int] = set()

    def run(self) -> pd.DataFrame:
        self.read()
        return self.frame(intervals_s=sorted(self.intervals))

    def layout(self, line_no: int, text: str) -> Layout | Skip:
        if not text.startswith("#"):  # a mark found `LINUX-RESTART` or `COM ` in a line among the rows
            return STRUCTURE if _record(text.split(";")) else ROW
        names = text[1:].strip().split(";")
        if names[:3] != _LEAD or len(names) < 4:
            raise self.error(line_no, text, "not a sadf -d header (`# hostname;interval;timestamp;...`)")
        # a table not read: its rows counted, not checked (some print one column per CPU: `INTR;CPU*`)
        return self.header(line_no, text, names, 0, sep=";", lead=len(_LEAD))

    def structure(self, line_no: int, text: str) -> None:
        """A restart or comment record (`host;-1;TIME;LINUX-RESTART (N CPU)` / `host;-1;TIME;COM text`),
        or a row before any header."""
        fields = text.split(";")
        if not _record(fields):
            raise self.error(line_no, text, "a row before any `# hostname;interval;timestamp;...` header")
        try:
            ns = self.timestamp(fields[2])
        except ValueError as exc:
            raise self.error(line_no, text, str(exc)) from None
        what = ";".join(fields[3:])
        if what.startswith("LINUX-RESTART"):
            self.restart(ns, what)
        else:
            self.comments.append(what[4:])

    def rows(self, block: Block) -> None:
        stamps = self.stamps(block)
        if self.host is not None:
            hosts = np.full(len(block), self.store.hosts.code(self.host), dtype=np.int64)
        else:
            column = block.fields[0]
            hosts = _codes(
                self.store.hosts, column.categories.tolist(), np.asarray(column.codes, dtype=np.int64)
            )
        for plan in block.layout.key:
            alias = {"-1": "all"} if _TABLES[plan.table].name == "cpu" else None  # as sar prints it
            names, codes = _instances(block, plan, self.error, alias)
            self.store.take(block, plan, stamps, (stamps, hosts, names, codes), self.error, "at one time")

    def stamps(self, block: Block) -> np.ndarray:
        """UTC ns of each row, each distinct stamp read once (numpy for ISO ones); the intervals noted.
        A ParseError at the first row whose interval is no number of seconds or stamp does not read."""
        n = len(block)
        intervals = block.fields[1].categories.tolist()
        good = np.array([t.isascii() and t.isdigit() for t in intervals])
        bad = np.flatnonzero(~good[np.asarray(block.fields[1].codes)])
        first_bad = int(bad[0]) if len(bad) else n
        column = block.fields[2]
        codes = np.asarray(column.codes, dtype=np.int64)
        texts = column.categories.tolist()
        ns = _iso_stamps(texts, self.tz)
        if ns is None:
            ns = np.empty(len(texts), dtype=np.int64)
            for row in np.sort(np.unique(codes, return_index=True)[1]).tolist():  # each stamp's first row
                if row > first_bad:
                    break
                try:
                    ns[codes[row]] = self.timestamp(texts[codes[row]])
                except ValueError as exc:
                    raise self.error(int(block.line_nos[row]), block.text(row), str(exc)) from None
        if first_bad < n:
            why = f"interval {intervals[block.fields[1].codes[first_bad]]!r} is not a number of seconds"
            raise self.error(int(block.line_nos[first_bad]), block.text(first_bad), why)
        self.intervals.update(int(t) for t in intervals)
        return ns[codes]

    def timestamp(self, text: str) -> int:
        """UTC ns of `2026-11-23 07:47:26 UTC`, of the same with another zone or none (see `_zoned`),
        or of epoch seconds; ValueError (its reason) otherwise."""
        if _EPOCH.match(text):
            ns = int(text) * 1_000_000_000
        else:
            m = _STAMP.match(text)
            if m is None:
                raise ValueError(f"unreadable timestamp {text!r}")
            y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
            try:
                naive = datetime(y, mo, d, h, mi, min(s, 59))
            except ValueError:
                raise ValueError(f"impossible timestamp {text!r}") from None
            ns = self._zoned(naive, m[7])
        if ns is None or not _NS_MIN <= ns <= _NS_MAX:  # the frame's datetime64[ns] cannot hold it
            raise ValueError(f"timestamp {text!r} outside 1677-2262 (datetime64[ns])")
        return ns

    def _zoned(self, naive: datetime, zone: str | None) -> int | None:
        """UTC ns of a wall-clock time printed with `zone` (None: without one, read in `tz`); None when
        pandas cannot hold it. An abbreviation that is not one of `tz`'s names for the time (module
        docstring) is a ValueError saying which zone to give: read in another zone every row would be
        hours off."""
        if zone in ("UTC", "GMT"):
            return calendar.timegm(naive.timetuple()) * 1_000_000_000
        if m := _OFFSET.match(zone or ""):
            offset = (-1 if m[1] == "-" else 1) * (int(m[2]) * 3600 + int(m[3] or 0) * 60)
            return (calendar.timegm(naive.timetuple()) - offset) * 1_000_000_000
        if zone and not _ABBREVIATION.match(zone):
            raise ValueError(f"unreadable time zone {zone!r} in the timestamp")
        try:
            ns = _common.to_utc(naive, self.tz).value
        except (OverflowError, ValueError):  # pandas' own range check (OutOfBoundsDatetime)
            return None
        if zone is None:
            return ns
        names = _common.zone_names(self.tz, naive, standard_all_year=True)
        if zone not in names:
            raise ValueError(
                f"timestamp in {zone!r}, not in the time zone given, {self.tz!r} ({'/'.join(sorted(names))} "
                "then): pass the zone sadf ran in (--tz, an IANA name such as Europe/Berlin)"
            )
        return ns


def _record(fields: list[str]) -> bool:
    """Whether a line's fields are a restart or comment record (interval `-1`), not a row."""
    return len(fields) >= 4 and fields[1] == "-1" and fields[3].startswith(("LINUX-RESTART", "COM "))


def _iso_stamps(texts: list[str], tz: str) -> np.ndarray | None:
    """UTC ns of `2026-11-23 07:47:26 UTC` texts (or all without the zone: wall-clock time in `tz`) as
    `_Sadf.timestamp()` reads them, by numpy; None unless all have one of these forms and can be read."""
    raw = "".join(texts).encode()
    width = len(texts[0]) if texts else 0
    if width not in (19, 23) or len(raw) != width * len(texts) or not raw.isascii():
        return None
    grid = np.frombuffer(raw, dtype=np.uint8).reshape(len(texts), width)
    if width == 23 and not (grid[:, 19:] == np.frombuffer(b" UTC", dtype=np.uint8)).all():
        return None
    if not ((grid[:, [4, 7]] == ord("-")).all() and (grid[:, 10] == ord(" ")).all()):
        return None
    if not (grid[:, [13, 16]] == ord(":")).all():
        return None
    digits = grid[:, [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]] - ord("0")
    if (digits > 9).any():  # uint8: anything but 0-9 wraps above 9
        return None
    d = digits.astype(np.int64)
    year = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    month, day, h, mi, s = (d[:, k] * 10 + d[:, k + 1] for k in range(4, 14, 2))
    # years pandas' nanoseconds hold (others go the per-text way and fail there as they always did)
    if not (((year > 1677) & (year < 2262) & (month >= 1) & (month <= 12)).all() and (h < 24).all()):
        return None
    first = ((year - 1970) * 12 + month - 1).astype("M8[M]")
    start = first.astype("M8[D]").astype(np.int64)
    if not ((day >= 1) & (day <= (first + 1).astype("M8[D]").astype(np.int64) - start) & (mi < 60)).all():
        return None
    seconds = (start + day - 1) * 86400 + h * 3600 + mi * 60 + np.minimum(s, 59)
    if width == 23:
        return seconds * 1_000_000_000
    return _common.wall_utc(seconds, tz)

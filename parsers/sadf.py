"""sadf: sysstat's `sadf -d` export of a binary sa file, `;`-separated, into the same frame as parsers/sar.py.

perfkit records `sar -o FILE` during the window and converts FILE on the host with its own sysstat
(the binary format differs between versions):

    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -P ALL         (capture id sar-cpu)
    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -n DEV         (sar-net)
    LC_ALL=C S_TIME_FORMAT=ISO sadf -d FILE -- -n TCP,ETCP    (sar-tcp)

Each activity starts with its own header, `# hostname;interval;timestamp;CPU;%user;%nice;...`,
then rows `vm;1;2026-11-23 07:47:26 UTC;-1;55.56;0.00;44.44;...` (CPU `all` is printed as `-1`).
A reboot recorded in the file is a row `vm;-1;2026-11-23 07:48:28 UTC;LINUX-RESTART<TAB>(2 CPU)`
followed by the header again; `sadf -C` comments are `vm;-1;...;COM text`.

Timestamps carry `UTC` (the default); `-U` prints seconds since the epoch. `-T` (local time) and `-t`
(the file's own zone) print the wall clock without a zone up to sysstat 12.6 (read in `tz`) and with
the zone's abbreviation since 12.7 (`2026-11-27 13:45:13 CET`). `UTC`, `GMT` and numeric offsets
(`+0100`, `-05:00`, `+01`) are exact. An abbreviation is ambiguous in general (`IST`, `CST`), so it
is read in the caller's `tz` when it is one of that zone's names for the time: the one in force or
the zone's standard-time name, which sysstat prints all year (glibc's `tzname[0]`: `CET` on a summer
clock that is really CEST; the zone's rules give the right offset). Any other abbreviation is a
ParseError naming the line and asking for the zone (`--tz`): read in a wrong zone every row would be
hours off. `sadf -h` puts several activities on one line: the row is split into one row per
table. Any sar activity may come through `-- OPTIONS`: the tables read, their column names, the
instance column and the unit conversions are parsers/sar.py's (its docstring has the table), so the
sar text and the sadf export of one sa file give equal frames. A header of another activity (`-B`,
`-w`, ...; `sadf -d -- -A` prints some thirty) is skipped as a block (parsers/_common.py `Skips`,
`attrs["skipped"]`: the header quoted, every row counted, not checked against it: `INTR;CPU*` rows
carry one column per CPU) and listed in `attrs["skipped_tables"]`; a file with no row of a read
table is a ParseError "nothing readable". Numbers: `sadf` follows
LC_NUMERIC, so a de_DE export prints `55,56`; with `;` as separator that is unambiguous and is read
as a decimal comma (a file mixing `,` and `.` is a ParseError: "capture not taken under LC_ALL=C").

Schema: exactly parsers/sar.py's `SCHEMA` (timestamp UTC, host from the row's hostname field unless
the `host` argument is given, table, instance, the metric columns as float64, NaN where a table has
no such column). Rows are grouped by table in sar.py's order, file order within a table.

`df.attrs`: `skipped`, `intervals_s` (the distinct `interval` values of read rows, seconds),
`restarts` (records `timestamp` ISO UTC, `cpus`), `comments`, `skipped_tables`, `unknown_columns`,
`dropped_lines` (a last line cut mid-write), `notes`. No `averages`: sadf -d prints none.

Large captures are read a few MB at a time: Arrow's CSV reader reads the numbers, text fields are
checked once per distinct text (`_Sadf.chunk` says what that proves). A run holding anything else
(a header, a restart) is halved until its irregular lines go through the per-line code, which also
names the first bad line.

Not read: `sadf -j` (JSON), `-x` (XML), `-p` (awk-friendly). Tested on: tests/fixtures/sadf/*.txt
(see README.md there).
"""

from __future__ import annotations

import calendar
import re
from array import array
from datetime import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perfkit.errors import ParseError

from . import _common
from ._sysstat import utc
from .sar import (
    _TABLES,
    _check_instance,
    _Chunked,
    _classify,
    _Plan,
    _read_fields,
    _Store,
    _table_columns,
    _wall_utc,
)
from .sar import SCHEMA as _SAR_SCHEMA

KIND = "sadf"

SCHEMA: dict[str, str] = dict(_SAR_SCHEMA)  # the same frame as parsers/sar.py: one schema for one data set

_LEAD = ["hostname", "interval", "timestamp"]
_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?: (\S+))?$")
_OFFSET = re.compile(r"^([-+])(\d{2}):?(\d{2})?$")  # `+0100`, `-05:00`, `+01`
_ABBREVIATION = re.compile(r"^[A-Za-z]{2,6}$")  # `CET`, `EST`, `AEDT`
_EPOCH = re.compile(r"^\d{9,11}$")
_CPUS = re.compile(r"\((\d+) CPU\)")
_SNIFF = re.compile(r"^# hostname;interval;timestamp;\S")
_DICT = pa.dictionary(pa.int32(), pa.string())
_SLICE = 1 << 18  # bytes per numpy pass in `_bare_marks`
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
        A frame with exactly the `SCHEMA` columns; `attrs` `skipped`, `intervals_s`, `restarts`,
        `comments`, `skipped_tables`, `unknown_columns`, `dropped_lines`, `notes`.

    Raises:
        ParseError: a header that is not sadf's, a row before any header or with a field count other
            than its header's, an unreadable timestamp or number, a zone abbreviation that is not
            `tz`'s, an instance listed twice at one time, a foreign locale it cannot read safely, no
            row of a table this parser reads.
    """
    return _Sadf(source, host, tz).run()


class _Sadf(_Chunked):
    """Reuses parsers/_sysstat.py for the decimal mark and errors; times come from each row."""

    # no structure marks: a header, restart or comment record among the rows fails `chunk` (Arrow refuses
    # its field count or values) and `rows` halves the run around it; most files hold one header
    MARKS = ()

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.store = _Store()
        self.plans: list[_Plan] | None = None
        self.skipping = False
        self.width = 0
        self.header_line_no = 0
        self.intervals: set[int] = set()
        self.restarts: list[dict[str, object]] = []
        self.comments: list[str] = []
        self.skipped: list[str] = []
        self.unknown: list[str] = []
        self.skips = _common.Skips()
        self._last_stamp: tuple[str, int] = ("", 0)

    def run(self) -> pd.DataFrame:
        self.walk()
        frame = self.store.frame()
        self.skips.refuse_if_nothing_read(len(frame), self.lines)
        frame.attrs.update(
            {
                "skipped": self.skips,
                "intervals_s": sorted(self.intervals),
                "restarts": self.restarts,
                "comments": self.comments,
                "skipped_tables": self.skipped,
                "unknown_columns": self.unknown,
                "dropped_lines": self.dropped,
                "notes": self.notes,
            }
        )
        return frame

    def table_open(self) -> bool:
        return self.plans is not None and not self.skipping

    def chunk(self, data: bytes, first: int, count: int) -> bool:
        """Read rows under the open header with Arrow (`;`); False (nothing changed) unless plain.

        "Plain" is what `feed` would take without complaint: the header's field count, an interval in
        seconds (no restart or comment record), readable timestamps, numbers in sysstat's grammar with
        the file's decimal mark, each instance once per time. Arrow refuses a row with another field
        count and a value that is no number. The bytes outside the text fields (their own counts times
        their rows taken off) prove the rest: nothing but digits, `-` and the decimal mark (no `1e5`,
        `inf`, `+5`, blank that Arrow trims) and a digit on both sides of every mark (no `.5`, `5.`).
        Text fields (host, interval, timestamp, instance) are checked once per distinct text. Anything
        else goes back to `feed`, so errors and state stay exactly the per-line ones.
        """
        plans, ncols = self.plans, self.width
        if plans is None:
            return False
        values = {i for plan in plans for i, _, _ in plan.fields}
        line = data[: data.index(b"\n")].decode("utf-8", "replace")
        mark = self.decimal
        fields = line.split(";")
        if len(fields) != ncols:
            return False
        if mark is None:  # the first value with a fraction decides, as in Sysstat.number()
            firsts = [fields[i] for plan in plans for i, _, _ in plan.fields]
            mark = next(("," if "," in t else "." for t in firsts if "," in t or "." in t), None)
        if mark == "," and self.slash_date:
            return False
        # one host and interval on every row (the usual): Arrow need not convert them
        lead = data[: data.index(b";", data.index(b";") + 1) + 1]
        same = data.count(b"\n" + lead) == count - 1
        texts = [i for i in range(ncols) if i not in values and not (same and i < 2)]  # timestamp, instance
        types = {**dict.fromkeys(texts, _DICT), **dict.fromkeys(values, pa.float64())}
        table = _read_fields(data, ncols, types, mark or ".")  # refuses a row with another field count
        if table is None:
            return False
        factors = {i: _dictionary(table.column(str(i))) for i in texts}
        if same:
            factors |= {i: (np.zeros(count, dtype=np.int64), [fields[i]]) for i in (0, 1)}
        keep = b"0123456789-;\n" + (mark or "").encode()
        other = bare = 0
        for codes, names in factors.values():
            counts = _text_counts(names, np.bincount(codes, minlength=len(names)), keep, mark)
            other, bare = other + counts[0], bare + counts[1]
        if len(data.translate(None, keep)) != other:
            return False
        if mark is not None and _bare_marks(data, mark) != bare:
            return False
        if not all(t.isdigit() for t in factors[1][1]):
            return False  # a restart or comment record (`-1`), or an interval `feed` refuses
        try:
            intervals = [int(t) for t in factors[1][1]]
        except ValueError:  # a digit int() does not read (`²`): `feed` fails on it
            return False
        cols = {i: table.column(str(i)) for i in values}
        stamps = self.chunk_stamps(*factors[2], first, line)
        if stamps is None:
            return False
        return self.commit(cols, factors, plans, stamps, intervals, mark)

    def chunk_stamps(self, codes: np.ndarray, texts: list[str], first: int, line: str) -> np.ndarray | None:
        """UTC ns per row: numpy for ISO stamps, else one `timestamp()` per distinct text; None if one is
        not readable."""
        ns = _iso_stamps(texts, self.tz)
        if ns is None:
            ns = np.empty(len(texts), dtype=np.int64)
            for k, text in enumerate(texts):
                try:
                    ns[k] = self.timestamp(first, line, text)
                except ParseError:
                    return None
        return ns[codes]

    def commit(
        self,
        cols: dict[int, pa.ChunkedArray],
        factors: dict[int, tuple[np.ndarray, list[str]]],
        plans: list[_Plan],
        stamps: np.ndarray,
        intervals: list[int],
        mark: str | None,
    ) -> bool:
        """Check instances and times per table, then store the chunk; False (nothing stored) if not plain."""
        n = len(stamps)
        done = []
        for plan in plans:
            if plan.instance is not None:
                codes, texts = factors[plan.instance]
                names = np.array(texts, dtype=object)
                if _TABLES[plan.table].name == "cpu":
                    names[names == "-1"] = "all"  # sadf's code for the all-CPU row; sar text prints `all`
                if any(_check_instance(plan.table, v) is not None for v in names.tolist()):
                    return False
            else:
                names = np.array([""], dtype=object)
                codes = np.zeros(n, dtype=np.int64)
            state = self.store.new_rows(plan.table, stamps, codes, names)
            if state is None:
                return False
            done.append((plan, names, codes, state))
        # the chunk is plain: from here on, state changes
        if mark is not None and self.decimal is None:
            self.decimal = mark
        self.intervals.update(intervals)
        if self.host is not None:
            hosts = np.full(n, self.store.hosts.code(self.host), dtype=np.int64)
        else:
            hosts = self.store.codes(self.store.hosts, *factors[0][::-1])
        for plan, names, codes, state in done:
            row_cols: list[pa.ChunkedArray | None] = [None] * len(_table_columns(_TABLES[plan.table]))
            for i, j, factor in plan.fields:
                row_cols[j] = pc.multiply(cols[i], factor) if factor != 1.0 else cols[i]
            instance_codes = self.store.codes(self.store.instances, names.tolist(), codes)
            self.store.extend(plan.table, stamps, hosts, instance_codes, row_cols)
            self.store.interval[plan.table] = state
        return True

    def feed(self, line_no: int, line: str, lines: _common.Lines) -> None:
        self.lines = lines
        if not line.strip():
            return
        if line.startswith("#"):
            self.header(line_no, line)
            return
        fields = line.split(";")
        if len(fields) >= 4 and fields[1] == "-1" and not fields[3].lstrip("-").isdigit():
            self.special(line_no, line, fields)
            return
        if self.plans is None and not self.skipping:
            raise self.error(line_no, line, "a row before any `# hostname;interval;timestamp;...` header")
        if self.skipping:
            # a row of the table whose header `header` quoted (add_block's count); not checked against
            # that header: some print a variable number of columns (`INTR;CPU*`: one per CPU)
            self.skips.count += 1
            return
        if len(fields) != self.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields, the header at line {self.header_line_no} has {self.width}",
            )
        if not fields[1].isdigit():
            raise self.error(line_no, line, f"interval {fields[1]!r} is not a number of seconds")
        ns = self.timestamp(line_no, line, fields[2])
        self.intervals.add(int(fields[1]))
        if self.plans is None:
            return
        host = self.host if self.host is not None else fields[0]
        for plan in self.plans:
            instance = fields[plan.instance] if plan.instance is not None else ""
            if _TABLES[plan.table].name == "cpu" and instance == "-1":
                instance = "all"  # sadf's code for the all-CPU row; sar text prints `all`
            if (why := _check_instance(plan.table, instance)) is not None:
                raise self.error(line_no, line, why)
            if not self.store.is_new(plan.table, ns, instance):
                raise self.error(
                    line_no, line, f"{_TABLES[plan.table].name} {instance!r} listed twice at one time"
                )
            row = self.store.row_values(plan, lambda i: self.number(line_no, line, fields[i]))
            self.store.add(plan.table, ns, host, instance, row)

    def header(self, line_no: int, line: str) -> None:
        names = line[1:].strip().split(";")
        if names[:3] != _LEAD or len(names) < 4:
            raise self.error(line_no, line, "not a sadf -d header (`# hostname;interval;timestamp;...`)")
        plans, unknown, dup = _classify(names)
        if dup is not None:
            raise self.error(line_no, line, f"column {dup!r} twice in the header")
        self.header_line_no, self.width = line_no, len(names)
        if not plans:
            self.plans, self.skipping = None, True
            self.skips.add(line_no, line, "a sar table perfkit does not read")
            text = ";".join(names[3:])
            if text not in self.skipped:
                self.skipped.append(text)
                self.notes.append(f"line {line_no}: table not read, its rows skipped: {text[:80]}")
            return
        self.plans, self.skipping = plans, False
        self.unknown.extend(n for n in unknown if n not in _LEAD and n not in self.unknown)

    def special(self, line_no: int, line: str, fields: list[str]) -> None:
        """A restart or comment record: `host;-1;TIME;LINUX-RESTART (N CPU)` / `host;-1;TIME;COM text`."""
        ns = self.timestamp(line_no, line, fields[2])
        what = ";".join(fields[3:])
        if what.startswith("LINUX-RESTART"):
            m = _CPUS.search(what)
            when = utc(array("q", [ns]))[0].isoformat()
            self.restarts.append({"timestamp": when, "cpus": int(m[1]) if m else None})
        elif what.startswith("COM "):
            self.comments.append(what[4:])
        else:
            raise self.error(
                line_no, line, "a record with interval -1 that is neither a restart nor a comment"
            )

    def timestamp(self, line_no: int, line: str, text: str) -> int:
        """UTC ns of `2026-11-23 07:47:26 UTC` (or a zone, see `_zoned`), of the same without zone
        (wall-clock time in `tz`), or of epoch seconds."""
        if text == self._last_stamp[0]:
            return self._last_stamp[1]  # every row of an interval repeats the same stamp
        if _EPOCH.match(text):
            ns = int(text) * 1_000_000_000
        else:
            m = _STAMP.match(text)
            if m is None:
                raise self.error(line_no, line, f"unreadable timestamp {text!r}")
            y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
            try:
                naive = datetime(y, mo, d, h, mi, min(s, 59))
            except ValueError:
                raise self.error(line_no, line, f"impossible timestamp {text!r}") from None
            if m[7]:
                ns = self._zoned(line_no, line, naive, m[7])
            else:
                try:
                    ns = _common.to_utc(naive, self.tz).value
                except (OverflowError, ValueError):  # pandas' own range check (OutOfBoundsDatetime)
                    ns = None
        if ns is None or not _NS_MIN <= ns <= _NS_MAX:  # the frame's datetime64[ns] cannot hold it
            raise self.error(line_no, line, f"timestamp {text!r} outside 1677-2262 (datetime64[ns])")
        self._last_stamp = (text, ns)
        return ns

    def _zoned(self, line_no: int, line: str, naive: datetime, zone: str) -> int | None:
        """UTC ns of a wall-clock time printed with a zone; None when pandas cannot hold it.

        `UTC`/`GMT` and numeric offsets are exact. An abbreviation (`sadf -T`/`-t` print one since
        sysstat 12.7) names no zone by itself (`IST`, `CST` are three each), so it is read in the
        caller's `tz` when it is one of that zone's names for this time: the one in force, or the
        zone's standard-time name, which sysstat prints all year (glibc's `tzname[0]`: `CET` on a
        summer wall clock that is CEST). Any other abbreviation is a ParseError saying which zone to
        give: reading the stamp in another zone would shift every row by hours.
        """
        if zone in ("UTC", "GMT"):
            return calendar.timegm(naive.timetuple()) * 1_000_000_000
        if m := _OFFSET.match(zone):
            sign = -1 if m[1] == "-" else 1
            offset = sign * (int(m[2]) * 3600 + int(m[3] or 0) * 60)
            return (calendar.timegm(naive.timetuple()) - offset) * 1_000_000_000
        if not _ABBREVIATION.match(zone):
            raise self.error(line_no, line, f"unreadable time zone {zone!r} in the timestamp")
        try:
            ns = _common.to_utc(naive, self.tz).value
        except (OverflowError, ValueError):  # pandas' own range check (OutOfBoundsDatetime)
            return None
        names = _common.zone_names(self.tz, naive, standard_all_year=True)
        if zone not in names:
            raise self.error(
                line_no,
                line,
                f"timestamp in {zone!r}, not in the time zone given, {self.tz!r} ({'/'.join(sorted(names))} "
                "then): pass the zone sadf ran in (--tz, an IANA name such as Europe/Berlin)",
            )
        return ns


def _dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """A dictionary-typed column -> (index per row, distinct texts)."""
    column = column.unify_dictionaries()
    codes = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks]
    texts = column.chunk(0).dictionary.to_pylist() if column.num_chunks else []
    return np.concatenate(codes).astype(np.int64), texts


def _text_counts(texts: list[str], rows: np.ndarray, keep: bytes, mark: str | None) -> tuple[int, int]:
    """What the text fields add to a chunk's counts: (bytes not in `keep`, decimal marks without a digit
    on both sides), each distinct text's counts times the `rows` that hold it."""
    raw = [t.encode() for t in texts]
    lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    chars = np.frombuffer(b"".join(raw), dtype=np.uint8)
    weight = np.repeat(rows, lengths)  # per byte: how many rows hold it
    other = np.ones(256, dtype=bool)
    other[list(keep)] = False
    if mark is None:
        return int(weight[other[chars]].sum()), 0
    digit = (chars - ord("0")) <= 9  # uint8: anything but 0-9 wraps above 9
    starts = np.cumsum(lengths) - lengths
    before, after = np.zeros_like(digit), np.zeros_like(digit)
    before[1:], after[:-1] = digit[:-1], digit[1:]
    before[starts[lengths > 0]] = False  # a text field's neighbours are `;` or a line end
    after[(starts + lengths - 1)[lengths > 0]] = False
    return int(weight[other[chars]].sum()), int(weight[(chars == ord(mark)) & ~(before & after)].sum())


def _bare_marks(data: bytes, mark: str) -> int:
    """How many decimal marks in `data` (whole lines) lack a digit on one side: numpy, a slice at a time
    (small temporaries stay in the cache and are reused by the allocator)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    code = ord(mark)
    bare = int(buf[0] == code)  # nothing before it; the last byte is a newline, no mark
    for lo in range(1, len(buf) - 1, _SLICE):
        hi = min(lo + _SLICE, len(buf) - 1)
        lone = ((buf[lo - 1 : hi - 1] - ord("0")) > 9) | (
            (buf[lo + 1 : hi + 1] - ord("0")) > 9
        )  # uint8 wraps
        bare += int(np.count_nonzero((buf[lo:hi] == code) & lone))
    return bare


def _iso_stamps(texts: list[str], tz: str) -> np.ndarray | None:
    """UTC ns of `2026-11-23 07:47:26 UTC` texts (or all without the zone: wall-clock time in `tz`) as
    `_Sadf.timestamp()` reads them, by numpy; None unless all have one of these forms and can be read."""
    raw = "".join(texts).encode()
    width = len(texts[0])
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
    return _wall_utc(datetime(1970, 1, 1), seconds, tz)

"""vmstat: procps `vmstat [-t] [-w] [-n] [-a] INTERVAL [COUNT]`, one run or several in one file.

Reads procps-ng 3.3 and 4.0 output, narrow or wide (`-w`), with or without the `gu` column
(procps 4 prints it in wide mode), with or without `-t` timestamps (`2026-11-22 08:10:06`, wall
clock of the host, in the zone below), with buff/cache or (`-a`) inact/active.

Time zone: with `-t` vmstat prints the zone's abbreviation (`%Z`) as the last word of the column-name
line (told from the lowercase names), and the stamps are read in it (`_common.printed_zone`): `UTC`
and `GMT` exactly, whatever `tz` says; `tz`, the capturing host's IANA zone, when that is what `tz`
prints at the run's first stamp; else an abbreviation that names one offset (`PDT`: UTC−7, `CET`:
UTC+1, the DST state is in the name) at that offset. One that names several zones (`CST`: China,
Cuba or US Central; `IST`) and is not `tz`'s is a ParseError naming that header line (wrong times
are wrong values: pass the host's zone, e.g. `tz="Asia/Shanghai"` for China's `CST`).

Columns: timestamp (UTC), host, since_boot (the first row of each run is the average since boot),
then vmstat's own names, which every reader knows: r, b (tasks), swpd, free, buff, cache, inact,
active (KiB as vmstat prints by default), si, so, bi, bo (per second), in, cs (per second),
us, sy, id, wa, st, gu (percent of CPU time). A column the run does not print is NA (buff and
cache in a `-a` run, inact and active in any other, gu before procps 4 -w), never 0.
Tested on: tests/fixtures/vmstat/ (see README.md there).

Runs: a file may hold several runs (a script appending `vmstat 1 5` then `vmstat -a 1 5`, or the
same command twice). Each run keeps its own columns for its own rows, and its first row is flagged
since_boot. What the text shows (procps-ng 3.3 and 4.0 vmstat.c): a run prints its header pair, the
since-boot row, then one row per INTERVAL (after `sleep`, so a run's stamps move on by at least a
second), and prints the pair again before sample i when i % height == 0, where height is the rows of
the terminal on stdout minus 3, 21 when stdout is no terminal (a file, a pipe, ssh without a tty:
how captures are taken); never with -n. So a header pair starts a new run when
  - it differs from the run's own (its column-name line as printed, the zone left out: -a, -w, -t,
    gu; the `procs` group line above it follows from it), or
  - it follows a block of other than 21 rows since the run's last header pair (a repeat comes
    after exactly 21), or
  - with -t, the row after it is stamped no later than the row before it.
Otherwise it is vmstat's own repeat and skipped. Undecidable from the text, and read as said:
a run of exactly 21·k rows followed at once by the same command (without -t, or when the next
run's first row falls in a later second: read as one run, its since-boot row a sample); vmstat on
a terminal of another height (a `script` log, a pasted screen) repeats every rows−3 rows, which is
`vmstat 1 rows−3` run again: each screenful's first row is flagged since_boot; `-y` (no since-boot
row) prints the same header: its first row is flagged, and its first repeat, after 20 rows, reads as
a new run; a wall clock set back (DST's end) just across a repeated header reads as a new run.

Reading: the table engine (parsers/_table.py) reads the rows, in bulk or row by row naming the first
bad one: every column an integer (`[-+]?digits`, ASCII, at most int64), then with `-t` the stamp's
date and clock (`2026-11-22 13:47:00` exactly, read as the integers 20261122 and 134700:
`_table.Layout.shapes`); the header pair's `procs` line only leads the column names (`_table.LEAD`).
What is vmstat's own is done here, vectorised: the stamps (numpy; each distinct date looked up once),
the runs (above) and the zones. A malformed row is a ParseError naming it; a last line cut off
mid-write (no line end) is dropped and counted (`attrs["dropped_lines"]`); `attrs["unknown_columns"]`
lists header names not above (read as integers, kept out of the frame).
"""

from __future__ import annotations

from datetime import date, timezone
from typing import NamedTuple

import numpy as np
import pandas as pd

from ._common import FIRST_DATE, PAST_DATE, Parts, Source, empty_frame, printed_zone, text_column
from ._sysstat import utc
from ._table import LEAD, ROW, Block, Layout, Table

KIND = "vmstat"
COUNTS = (
    "r", "b",  # tasks
    "swpd", "free", "buff", "cache", "inact", "active",  # KiB
    "si", "so", "bi", "bo", "in", "cs",  # per second
    "us", "sy", "id", "wa", "st", "gu",  # percent of CPU time
)  # fmt: skip
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "since_boot": "bool",
    **{c: "Int64" for c in COUNTS},
}
_REQUIRED = {"r", "b", "swpd", "free", "si", "so", "bi", "bo", "in", "cs", "us", "sy", "id"}
# vmstat reprints its header pair before every 21st row when stdout is no terminal (module docstring)
_HEADER_EVERY = 21
_NAT = np.iinfo(np.int64).min
_STAMP = ("####-##-##", "##:##:##")  # -t: the row's last two fields, `_table.Layout.shapes`
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_DAY_NS = 86400 * 10**9


def sniff(text: str) -> bool:
    """vmstat output starts with its two header lines."""
    lines = text.lstrip("\n").splitlines()[:2]
    return (
        len(lines) == 2
        and _is_procs(lines[0].split() or [""])  # `procs ---` or procps 4's wide `--procs--`
        and "-memory-" in lines[0]
        and set(lines[1].split()) >= _REQUIRED
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a vmstat capture into one row per sample.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: the capturing host's time zone, for `-t` timestamps.

    Raises:
        ParseError: a header that is not vmstat's C-locale header, a malformed row, or `-t` stamps in
            a zone abbreviation that is neither UTC/GMT nor `tz`'s at the run's start.
    """
    return _Vmstat(source, host, tz).run()


class _Header(NamedTuple):
    """A column-name line: its names (the zone left out), the zone `-t` printed (None without -t), and
    the line as printed with the zone as `%Z` (a run's identity: a zone of its own is no new run)."""

    names: tuple[str, ...]
    zone: str | None
    run: str


class _Vmstat:
    """The format for the table engine: rows start with a blank or a digit (right-aligned numbers);
    the header pair's `procs` line (`procs`, wide `--procs--`) is kept among them so that vmstat's
    repeat every 21 rows costs no cut of a run, and both header lines are found by their words."""

    row_bytes = b" 0123456789\n-p"
    header_words = (b"procs", b"swpd")
    chunk_bytes = 1 << 19  # about 3700 rows: within issue 5's memory budget (1 MB: 13 MB more), as fast

    def __init__(self, source: Source, host: str | None, tz: str):
        self.host, self.tz = host, tz
        self.table = Table(source, KIND, self)
        self.unknown: list[str] = []
        self.headers: dict[_Header, int] = {}  # each header's code, in order of first sight
        self.header_texts: list[str] = []
        self.parts = Parts(4 + len(COUNTS))  # line numbers, header line numbers, header codes, stamps
        self.days: dict[int, int | None] = {}  # YYYYMMDD -> ns of its midnight (None: no date)

    def run(self) -> pd.DataFrame:
        self.table.run()
        return self.assemble(dropped=int(self.table.cut is not None))

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout:
        tokens = text.split()
        if _is_procs(tokens):
            return LEAD
        if tokens[:2] != ["r", "b"]:
            return ROW
        zone = None if tokens[-1].islower() else tokens[-1]  # -t: `UTC`, `PDT`, `+08` after the names
        names = tokens[:-1] if zone else tokens
        missing = sorted(_REQUIRED - set(names))
        if missing:
            foreign = _unknown(names)
            raise self.table.error(
                line_no,
                text,
                f"vmstat header lacks {', '.join(missing)} (has {', '.join(foreign) or 'nothing else'}): "
                "capture not taken under LC_ALL=C",
            )
        self.unknown += [n for n in _unknown(names) if n not in self.unknown]
        run = text.rstrip()
        key = _Header(tuple(names), zone, run[: -len(zone)] + "%Z" if zone else run)
        if key not in self.headers:
            self.headers[key] = len(self.headers)
            self.header_texts.append(text)
        stamp = ("dd", _STAMP) if zone else ("", ())  # `2026-11-22 13:47:00`: integers of their digits
        return Layout("i" * len(names) + stamp[0], labels=(0,), key=key, shapes=stamp[1])

    def structure(self, line_no: int, text: str) -> None:
        """A line that starts like no row and no header (or a row before any header)."""
        if not text.strip():
            return
        if self.table.current is None:
            reason = "not a vmstat capture (no C-locale vmstat header before the data)"
            raise self.table.error(line_no, text, reason)
        raise self.table.error(line_no, text, "malformed vmstat row")

    def rows(self, block: Block) -> None:
        key: _Header = block.layout.key
        n = len(block)
        stamps = self._stamps(block) if key.zone else np.full(n, _NAT, dtype=np.int64)
        at = {name: i for i, name in enumerate(key.names) if name in COUNTS}  # a repeated name: its last
        values = [block.fields[at[c]] if c in at else np.zeros(n, dtype=np.int64) for c in COUNTS]
        code = np.full(n, self.headers[key], dtype=np.int64)
        self.parts.add([block.line_nos, block.headers, code, stamps, *values])

    def _stamps(self, block: Block) -> np.ndarray:
        """A `-t` block's stamps (read as YYYYMMDD and HHMMSS) as naive wall-clock ns, each distinct date
        looked up once; one that is no time is a ParseError naming the first row holding it."""
        dates, clocks = block.fields[-2], block.fields[-1]
        days, at = np.unique(dates, return_inverse=True)
        day_ns = [self._day(int(d)) for d in days.tolist()]
        day_ok = np.array([d is not None for d in day_ns])[at]
        h, m, s = clocks // 10000, clocks // 100 % 100, clocks % 100
        bad = ~day_ok | (h > 23) | (m > 59) | (s > 59)
        if bad.any():
            i = int(np.argmax(bad))
            d, c = int(dates[i]), int(clocks[i])
            stamp = f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} "
            stamp += f"{c // 10000:02d}:{c // 100 % 100:02d}:{c % 100:02d}"
            raise self.table.error(
                int(block.line_nos[i]),
                block.text(i),
                f"timestamp {stamp!r} is no date and time (YYYY-MM-DD HH:MM:SS) in 1678-2261",
            )
        return np.array([d or 0 for d in day_ns], dtype=np.int64)[at] + ((h * 60 + m) * 60 + s) * 10**9

    def _day(self, ymd: int) -> int | None:
        """ns of a date's midnight (read as YYYYMMDD); None for one that is none or outside 1678-2261."""
        if ymd not in self.days:
            try:
                day = date(ymd // 10000, ymd // 100 % 100, ymd % 100)
            except ValueError:  # month 13, February 30, year 0
                day = None
            ok = day is not None and FIRST_DATE <= day < PAST_DATE
            self.days[ymd] = (day.toordinal() - _EPOCH_DAY) * _DAY_NS if ok else None
        return self.days[ymd]

    # ------------------------------------------------------------ the frame

    def assemble(self, dropped: int) -> pd.DataFrame:
        frame = self._frame(self.parts.rows) if self.parts.rows else empty_frame(SCHEMA)
        frame.attrs.update({"dropped_lines": dropped, "unknown_columns": self.unknown})
        return frame

    def _frame(self, n: int) -> pd.DataFrame:
        line_nos, header_nos, codes, naive, *values = self.parts.columns()
        if (np.diff(line_nos) < 0).any():  # the engine hands a chunk's rows over layout by layout
            order = np.argsort(line_nos, kind="stable")
            header_nos, codes, naive = header_nos[order], codes[order], naive[order]
            values = [v[order] for v in values]
        keys = list(self.headers)
        timed = np.array([k.zone is not None for k in keys])[codes]
        runs = np.unique([k.run for k in keys], return_inverse=True)[1][codes]
        data: dict[str, object] = {
            "timestamp": utc(self._utc(naive, codes, header_nos)),
            "host": text_column([self.host], np.zeros(n, dtype=np.intp)),
            "since_boot": _since_boot(header_nos, runs, np.where(timed, naive, _NAT)),
        }
        present = np.array([[c in k.names for c in COUNTS] for k in keys])[codes]
        for j, (name, col) in enumerate(zip(COUNTS, values, strict=True)):
            data[name] = pd.arrays.IntegerArray(col, ~present[:, j])
        return pd.DataFrame(data, copy=False)

    def _utc(self, naive: np.ndarray, codes: np.ndarray, header_nos: np.ndarray) -> np.ndarray:
        """Naive stamps -> UTC ns, each stretch of rows under one printed zone read in it (resolved at
        its first row's stamp, `_common.printed_zone`); rows without `-t` NaT."""
        out = np.full(len(naive), _NAT, dtype=np.int64)
        zones = [k.zone for k in self.headers]
        rows = np.flatnonzero(np.array([z is not None for z in zones])[codes])
        if not len(rows):
            return out
        zone_of = np.unique([z or "" for z in zones], return_inverse=True)[1][codes[rows]]
        cuts = np.flatnonzero(np.concatenate(([True], zone_of[1:] != zone_of[:-1]))).tolist()
        names = [self._zone(int(codes[rows[c]]), int(naive[rows[c]]), int(header_nos[rows[c]])) for c in cuts]
        if len(set(names)) == 1:
            cuts, names = cuts[:1], names[:1]
        for a, b, name in zip(cuts, [*cuts[1:], len(rows)], names, strict=True):
            local = pd.DatetimeIndex(naive[rows[a:b]].view("M8[ns]"))
            out[rows[a:b]] = local.tz_localize(name, ambiguous="NaT", nonexistent="NaT").asi8
        return out

    def _zone(self, code: int, first: int, header_no: int) -> str | timezone:
        """The zone the stamps under header `code` are read in, from the first one on; a ParseError
        naming the header for an abbreviation that names several zones and is not `tz`'s."""
        printed = list(self.headers)[code].zone
        when = pd.Timestamp(first)
        found = printed_zone(printed, self.tz, when.to_pydatetime())
        if found is not None:
            return found
        raise self.table.error(
            header_no,
            self.header_texts[code],
            f"vmstat -t stamps are in {printed}, which names several zones, and the time zone given "
            f"({self.tz}) is not one of them at {when}: pass the capturing host's IANA zone (--tz)",
        )


def _since_boot(header_nos: np.ndarray, runs: np.ndarray, stamps: np.ndarray) -> np.ndarray:
    """The first row of each run by the module docstring's rule, given each row's header line, run
    identity and `-t` stamp (naive ns; NaT without -t): judged at the first row under each header."""
    after = np.flatnonzero(np.concatenate(([True], header_nos[1:] != header_nos[:-1])))
    at, before = after[1:], after[1:] - 1
    new = np.ones(len(after), dtype=bool)
    new[1:] = (
        (np.diff(after) != _HEADER_EVERY)
        | (runs[at] != runs[before])
        | ((stamps[before] != _NAT) & (stamps[at] <= stamps[before]))
    )
    flags = np.zeros(len(header_nos), dtype=bool)
    flags[after[new]] = True
    return flags


def _is_procs(tokens: list[str]) -> bool:
    """The first header line (`procs -----memory----- ...`, procps 4 wide `--procs-- ...`)."""
    return bool(tokens) and (tokens[0] == "procs" or tokens[0].startswith("--procs"))


def _unknown(names: list[str]) -> list[str]:
    return [n for n in names if n not in COUNTS]

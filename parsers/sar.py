"""sar: sysstat's system activity report as text, one tidy frame for every table it prints.

perfkit runs `LC_ALL=C S_TIME_FORMAT=ISO sar -o FILE INTERVAL COUNT` (its stdout is the `-u` CPU
table; the binary FILE is converted on the host by `sadf -d`, see parsers/sadf.py). This parser also
reads what `sar -u [-P ALL] -q -r -d -n DEV,TCP,ETCP ...` prints live, and the `sar -f FILE ...` and
`sar -A`-style replays: a `Linux 6.18.44 (host) <TAB>2026-11-23 <TAB>_x86_64_<TAB>(2 CPU)` banner
(the only date), then blocks, each opened by its own header line (`07:47:25  CPU %user ...`,
`07:47:25  runq-sz plist-sz ...`), rows labelled with a time of day, `Average:` rows closing each
block, and `07:48:28  LINUX RESTART (2 CPU)` lines where the sa file holds a reboot. Live sar
alternates the tables every interval; a replay prints each table over the whole file, then the next.

Tables read (by header name, never by position; the table is told by a key column):

- `cpu` (key `%idle`, instance `CPU`: `all`, `0`, ...): `%user` user_pct, `%usr` usr_pct,
  `%nice` nice_pct, `%system` system_pct, `%sys` sys_pct, `%iowait` iowait_pct, `%steal` steal_pct,
  `%irq` irq_pct, `%soft` soft_pct, `%guest` guest_pct, `%gnice` gnice_pct, `%idle` idle_pct;
- `queue` (key `runq-sz`, no instance): runq_sz, plist_sz, ldavg_1, ldavg_5, ldavg_15, blocked;
- `memory` (key `kbmemfree`, no instance; KiB): kbmemfree, kbavail, kbmemused, memused_pct,
  kbbuffers, kbcached, kbcommit, commit_pct, kbactive, kbinact, kbdirty, and with `-r ALL`
  kbanonpg, kbslab, kbkstack, kbpgtbl, kbvmused;
- `disk` (key `tps` with `DEV`, instance `DEV`: `vda`, `dev253-0`): tps, rkb_s, wkb_s, dkb_s,
  areq_kb, aqu_sz, await_ms, svctm_ms, util_pct;
- `net_dev` (key `rxpck/s`, instance `IFACE`): rxpck_s, txpck_s, rxkb_s, txkb_s, rxcmp_s,
  txcmp_s, rxmcst_s, ifutil_pct;
- `net_tcp` (key `active/s`, no instance): active_s, passive_s, iseg_s, oseg_s;
- `net_etcp` (key `atmptf/s`, no instance): atmptf_s, estres_s, retrans_s, isegerr_s, orsts_s.

Names follow parsers/mpstat.py, pidstat.py and iostat.py: `%x` -> `x_pct`, `x/s` -> `x_s`, `kB` ->
`kb`, `-` -> `_`, a unit where sar's name has none (`await` ms, `areq-sz` kB). `-u` prints `%user
%system` (guest time in user, irq/softirq time in system); `-u ALL` prints `%usr %sys` without
them, as mpstat does: different quantities, so different columns. The old `sar -d` header
(sysstat <= 11.4: `rd_sec/s wr_sec/s avgrq-sz avgqu-sz`, 512-byte sectors) is converted to kB.

Schema: long in tables, wide in metrics. One row per (table, instance, interval); the metric
columns are the union over the tables, all float64, NaN where the row's table has no such column
(or the sysstat version does not print it), never 0. Rows are grouped by table in the order above,
in file order within a table, so a live capture (interleaved) and a replay (one table after the
other) of the same data give the same frame, and so does parsers/sadf.py.

| column | dtype | meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | end of the interval (the row's time) in `tz`; NaT without a banner |
| host | string | the `host` argument, else the host in the banner |
| table | string | cpu, queue, memory, disk, net_dev, net_tcp, net_etcp |
| instance | string | CPU (`all` or a number), device or interface; `""` for tables without one |
| user_pct ... orsts_s | float64 | the metric columns of the table above |

Locales: dates ISO, C `11/23/26`, en_US `11/23/2026`, de_DE `23.11.2026`, zh_CN `2026年11月23日`;
clocks `07:47:26`, `07:47:26 AM` (read by hand), `07时47分26秒`; `Average:`, `Durchschn.:`,
`平均时间:`; decimal commas read as such when the whole file uses them (parsers/_sysstat.py). A
file mixing marks, or with commas and a slash date, is a ParseError saying "capture not taken under
LC_ALL=C". Rows carry only a time of day: each table rolls the banner's date forward when its own
clock goes back by more than an hour (a replay restarts every table at the file's start, so the
rollover is tracked per table, not per file).

`df.attrs`: `averages` (the `Average:` rows as records: host, table, instance and the table's
metric columns; None for a missing value), `restarts` (records `timestamp` ISO UTC, `cpus`),
`comments` (`COM` lines), `skipped_tables` (headers of tables not read, e.g. `-B`, `-w`, `-n SOCK`
in a `sar -A` capture: their rows are skipped, not guessed), `unknown_columns` (header names of a
read table this parser does not know), `dropped_lines` (a last line cut mid-write), `notes`.

Not read: `sar -o JSON`-less binary files (use `sadf`), `sadf` output (parsers/sadf.py). Tested
on: tests/fixtures/sar/*.txt (see README.md there).
"""

from __future__ import annotations

import csv
import io
import re
from array import array
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._sysstat import Sysstat, record_value, utc

KIND = "sar"
_ROLLOVER_S = 3600  # as parsers/_sysstat.py: a clock going back by more is the next day


@dataclass(frozen=True)
class _Table:
    name: str
    key: str  # the header name that tells this table
    instance: str | None  # the header name of its instance column, if any
    columns: dict[str, tuple[str, float]]  # header name -> (column, factor to the column's unit)


def _same(*pairs: tuple[str, str]) -> dict[str, tuple[str, float]]:
    return {name: (col, 1.0) for name, col in pairs}


_TABLES: tuple[_Table, ...] = (
    _Table(
        "cpu",
        "%idle",
        "CPU",
        _same(
            ("%user", "user_pct"),
            ("%usr", "usr_pct"),
            ("%nice", "nice_pct"),
            ("%system", "system_pct"),
            ("%sys", "sys_pct"),
            ("%iowait", "iowait_pct"),
            ("%steal", "steal_pct"),
            ("%irq", "irq_pct"),
            ("%soft", "soft_pct"),
            ("%guest", "guest_pct"),
            ("%gnice", "gnice_pct"),
            ("%idle", "idle_pct"),
        ),
    ),
    _Table(
        "queue",
        "runq-sz",
        None,
        _same(
            ("runq-sz", "runq_sz"),
            ("plist-sz", "plist_sz"),
            ("ldavg-1", "ldavg_1"),
            ("ldavg-5", "ldavg_5"),
            ("ldavg-15", "ldavg_15"),
            ("blocked", "blocked"),
        ),
    ),
    _Table(
        "memory",
        "kbmemfree",
        None,
        _same(
            ("kbmemfree", "kbmemfree"),
            ("kbavail", "kbavail"),
            ("kbmemused", "kbmemused"),
            ("%memused", "memused_pct"),
            ("kbbuffers", "kbbuffers"),
            ("kbcached", "kbcached"),
            ("kbcommit", "kbcommit"),
            ("%commit", "commit_pct"),
            ("kbactive", "kbactive"),
            ("kbinact", "kbinact"),
            ("kbdirty", "kbdirty"),
            ("kbanonpg", "kbanonpg"),
            ("kbslab", "kbslab"),
            ("kbkstack", "kbkstack"),
            ("kbpgtbl", "kbpgtbl"),
            ("kbvmused", "kbvmused"),
        ),
    ),
    _Table(
        "disk",
        "tps",
        "DEV",
        {
            **_same(
                ("tps", "tps"),
                ("rkB/s", "rkb_s"),
                ("wkB/s", "wkb_s"),
                ("dkB/s", "dkb_s"),
                ("areq-sz", "areq_kb"),
                ("aqu-sz", "aqu_sz"),
                ("avgqu-sz", "aqu_sz"),
                ("await", "await_ms"),
                ("svctm", "svctm_ms"),
                ("%util", "util_pct"),
            ),
            # sysstat <= 11.4 counted 512-byte sectors: to kB
            "rd_sec/s": ("rkb_s", 0.5),
            "wr_sec/s": ("wkb_s", 0.5),
            "avgrq-sz": ("areq_kb", 0.5),
        },
    ),
    _Table(
        "net_dev",
        "rxpck/s",
        "IFACE",
        _same(
            ("rxpck/s", "rxpck_s"),
            ("txpck/s", "txpck_s"),
            ("rxkB/s", "rxkb_s"),
            ("txkB/s", "txkb_s"),
            ("rxcmp/s", "rxcmp_s"),
            ("txcmp/s", "txcmp_s"),
            ("rxmcst/s", "rxmcst_s"),
            ("%ifutil", "ifutil_pct"),
        ),
    ),
    _Table(
        "net_tcp",
        "active/s",
        None,
        _same(
            ("active/s", "active_s"), ("passive/s", "passive_s"), ("iseg/s", "iseg_s"), ("oseg/s", "oseg_s")
        ),
    ),
    _Table(
        "net_etcp",
        "atmptf/s",
        None,
        _same(
            ("atmptf/s", "atmptf_s"),
            ("estres/s", "estres_s"),
            ("retrans/s", "retrans_s"),
            ("isegerr/s", "isegerr_s"),
            ("orsts/s", "orsts_s"),
        ),
    ),
)


def _table_columns(table: _Table) -> list[str]:
    return list(dict.fromkeys(col for col, _ in table.columns.values()))


_METRIC_COLS: list[str] = list(dict.fromkeys(c for t in _TABLES for c in _table_columns(t)))
# a column belongs to exactly one table: the union frame must not mix two quantities in one column
if len(_METRIC_COLS) != sum(len(_table_columns(t)) for t in _TABLES):
    raise RuntimeError("sar: two tables share a metric column")

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "table": "string",
    "instance": "string",
    **{col: "float64" for col in _METRIC_COLS},
}

_KEYS = frozenset(t.key for t in _TABLES)
# fields that make `feed` read a line as no data row ("" is what pandas pads a short row with)
_NOT_ROW_WORDS = _KEYS | {"LINUX", "COM", ""}
_CPU_ID = re.compile(r"^(?:all|\d+)$")
_AMPM = re.compile(r"^[AaPp]\.?[Mm]\.?$")  # as parsers/_sysstat.py: a 12-hour clock's second token
_NUMBER = re.compile(r"^[-+]?\d+(?:[.,]\d+)?$")
_CPUS = re.compile(r"\((\d+) CPU\)")
_SNIFF_HEADER = re.compile(
    r"\bCPU\s+%user\s+%nice\s+%system\s+%iowait\s+%steal\s+%idle\b"
    r"|\bCPU\s+%usr\s+%nice\s+%sys\s+%iowait\s+%steal\s+%irq\b"
    r"|\brunq-sz\s+plist-sz\s+ldavg-1\b"
    r"|\bkbmemfree\s+kbavail\s+kbmemused\b"
    r"|\bDEV\s+tps\s+\S+/s\b"
    r"|\bIFACE\s+rxpck/s\s+txpck/s\b"
    r"|\bactive/s\s+passive/s\s+iseg/s\b"
    r"|\batmptf/s\s+estres/s\s+retrans/s\b"
)


def sniff(text: str) -> bool:
    """True when the first lines hold a sar table header (`CPU %user ...`, `runq-sz ...`), no `;` line."""
    return any(
        ";" not in line and _SNIFF_HEADER.search(line)
        for line in text[: _common.SNIFF_BYTES].splitlines()[:80]
    )


def parse(source: _common.Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse sar text (live, `sar -f` replay, several tables) into one row per table, instance, interval.

    Args:
        source: a path, a text or binary stream, or the capture's text.
        host: the host the capture comes from (the manifest's); default: the banner's host name.
        tz: the host's time zone: rows print wall-clock time of day.

    Returns:
        A frame with exactly the `SCHEMA` columns; `attrs` `averages`, `restarts`, `comments`,
        `skipped_tables`, `unknown_columns`, `dropped_lines`, `notes`.

    Raises:
        ParseError: garbage mid-file, a row whose field count does not match its header, an instance
            listed twice in one interval, a row before any header, a foreign locale it cannot read
            safely.
    """
    return _Sar(source, host, tz).run()


# ---------------------------------------------------------------- shared with parsers/sadf.py


@dataclass(frozen=True)
class _Plan:
    """How one header feeds one table: the instance field and (field, column slot, factor) triples."""

    table: int  # index in _TABLES
    instance: int | None
    fields: tuple[tuple[int, int, float], ...]


def _classify(names: list[str]) -> tuple[list[_Plan], list[str], str | None]:
    """Which known tables a header line holds: (plans, unknown names, the first duplicated name)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return [], [], name
        seen.add(name)
    index = {name: i for i, name in enumerate(names)}
    plans: list[_Plan] = []
    claimed: set[str] = set()
    for t_no, table in enumerate(_TABLES):
        if table.key not in index or (table.instance is not None and table.instance not in index):
            continue
        cols = _table_columns(table)
        fields = tuple(
            (i, cols.index(table.columns[n][0]), table.columns[n][1])
            for i, n in enumerate(names)
            if n in table.columns
        )
        claimed.update(n for n in names if n in table.columns)
        inst = None
        if table.instance is not None:
            inst = index[table.instance]
            claimed.add(table.instance)
        plans.append(_Plan(t_no, inst, fields))
    unknown = [n for n in names if n not in claimed] if plans else []
    return plans, unknown, None


class _Store:
    """Rows per table in file order, as typed arrays; one frame at the end, tables in _TABLES order."""

    def __init__(self) -> None:
        self.stamps = [array("q") for _ in _TABLES]
        self.hosts: list[list[str | None]] = [[] for _ in _TABLES]
        self.instances: list[list[str]] = [[] for _ in _TABLES]
        self.values = [[array("d") for _ in _table_columns(t)] for t in _TABLES]
        self.interval: list[tuple[object, set[str]]] = [(None, set()) for _ in _TABLES]

    def row_values(self, plan: _Plan, read: object) -> list[float]:
        """The table's values in column order; `read(field_index)` gives one value."""
        row = [float("nan")] * len(self.values[plan.table])
        for i, j, factor in plan.fields:
            v = read(i)  # type: ignore[operator]
            row[j] = v * factor if factor != 1.0 else v
        return row

    def is_new(self, t_no: int, key: object, instance: str) -> bool:
        """False if `instance` was already listed in this table for the interval `key`."""
        at, seen = self.interval[t_no]
        if key != at:
            seen = set()
            self.interval[t_no] = (key, seen)
        if instance in seen:
            return False
        seen.add(instance)
        return True

    def add(self, t_no: int, ns: int, host: str | None, instance: str, row: list[float]) -> None:
        self.stamps[t_no].append(ns)
        self.hosts[t_no].append(host)
        self.instances[t_no].append(instance)
        for col, v in zip(self.values[t_no], row, strict=True):
            col.append(v)

    def extend(
        self,
        t_no: int,
        stamps: np.ndarray,
        hosts: list[str | None],
        instances: list[str],
        cols: list[np.ndarray],
    ) -> None:
        """Append a chunk of rows of one table at once (the vectorised path's `add`)."""
        self.stamps[t_no].frombytes(np.ascontiguousarray(stamps, dtype=np.int64).tobytes())
        self.hosts[t_no].extend(hosts)
        self.instances[t_no].extend(instances)
        for col, values in zip(self.values[t_no], cols, strict=True):
            col.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())

    def new_rows(
        self, t_no: int, keys: np.ndarray, codes: np.ndarray, names: np.ndarray
    ) -> tuple[object, set[str]] | None:
        """`is_new` over a chunk: the table's interval state after it, or None if an instance repeats.

        `keys` are the rows' interval keys, `codes` index `names` (the instances). Nothing changes here:
        the caller commits the returned state once the whole chunk is known to be good.
        """
        at, seen = self.interval[t_no]
        n = len(keys)
        new_run = np.empty(n, dtype=bool)
        new_run[0] = keys[0] != at
        new_run[1:] = keys[1:] != keys[:-1]
        run = np.cumsum(new_run)
        if pd.Series(run * len(names) + codes).duplicated().any():
            return None
        starts = np.flatnonzero(new_run)
        first_end = starts[0] if len(starts) else n
        if not new_run[0] and seen and not seen.isdisjoint(names[codes[:first_end]].tolist()):
            return None  # the chunk continues the interval before it and repeats one of its instances
        last = starts[-1] if len(starts) else 0
        tail = set(names[codes[last:]].tolist())
        return (int(keys[-1]), tail if len(starts) else seen | tail)

    def frame(self) -> pd.DataFrame:
        """One frame, tables in _TABLES order; each column built once (no per-table frames to concat)."""
        counts = [len(names) for names in self.instances]
        n = sum(counts)
        if n == 0:
            return _common.empty_frame(SCHEMA)
        ends = np.cumsum(counts)
        metrics = {col: np.full(n, np.nan) for col in _METRIC_COLS}
        for t_no, table in enumerate(_TABLES):
            start = ends[t_no] - counts[t_no]
            for col, values in zip(_table_columns(table), self.values[t_no], strict=True):
                metrics[col][start : ends[t_no]] = np.frombuffer(values, dtype=np.float64)
        data: dict[str, object] = {
            "timestamp": utc(array("q", b"".join(self.stamps))),
            "host": _strings([h for hosts in self.hosts for h in hosts]),
            "table": _strings(np.repeat([t.name for t in _TABLES], counts).tolist()),
            "instance": _strings([i for names in self.instances for i in names]),
            **metrics,
        }
        frame = pd.DataFrame(data, copy=False)  # one block per column: no consolidation copy
        if {c: str(t) for c, t in frame.dtypes.items()} != SCHEMA:  # safety net; copies the frame
            frame = _common.coerce(frame, SCHEMA)
        return frame


def _strings(values: list[str | None]) -> pd.api.extensions.ExtensionArray:
    """A "string" array (None -> NA) built from its few distinct values: cheaper than one per row."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return pd.array(np.asarray(uniques, dtype=object), dtype="string").take(codes, allow_fill=True)


def _record(host: str | None, t_no: int, instance: str, row: list[float]) -> dict[str, object]:
    cols = _table_columns(_TABLES[t_no])
    return {
        "host": host,
        "table": _TABLES[t_no].name,
        "instance": instance,
        **{c: record_value(v) for c, v in zip(cols, row, strict=True)},
    }


CHUNK_ROWS = 65536  # data rows handed to pandas at once: bounds memory, amortises the call
_SMALL_RUN = 48  # fewer rows than this go through the per-line code: read_csv costs more than it saves


def _read_chunk(data: bytes, ncols: int, sep: str, mark: str, text_cols: set[int]) -> pd.DataFrame | None:
    """Rows -> frame via pandas' C reader; `text_cols` as text, the rest inferred; None if refused.

    Quotes are plain characters (QUOTE_NONE), empty fields stay "" (na_filter off): a field the reader
    cannot type comes back as text and the caller falls back to the per-line code.
    """
    try:
        return pd.read_csv(
            io.BytesIO(data),
            sep=sep,
            skipinitialspace=sep == " ",
            header=None,
            names=range(ncols),
            index_col=False,
            dtype=dict.fromkeys(text_cols, str),  # not "category": it turns `07` into 7
            na_filter=False,
            decimal=mark,
            quoting=csv.QUOTE_NONE,
            engine="c",
        )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal (a warning made an error too) means: read line by line
        return None


def _factor(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values as str objects) of a text column: checks run once per distinct value."""
    codes, names = pd.factorize(col)
    return codes.astype(np.int64, copy=False), np.asarray(names, dtype=object)


def _bad_marks(data: bytes, mark: str | None) -> bool:
    """True if the chunk may hold a number pandas reads but sysstat's grammar (`[-+]?d+([.,]d+)?`) refuses.

    pandas also takes `.5`, `5.`, `1e5` and skips tabs around a value. These tests look at bytes
    (numpy, no Python per value) and only ever send a chunk to the per-line code, which decides.
    """
    if b"\t" in data or b"\x0b" in data or b"\x0c" in data:
        return True
    raw = np.frombuffer(data, dtype=np.uint8)
    if b"e" in data or b"E" in data:  # an exponent: `e` right after a digit or a mark (`1e5`, `1.e5`)
        at = np.flatnonzero((raw[1:] | 0x20) == ord("e"))
        before = raw[at]
        if ((before - 48 <= 9) | (before == ord(".")) | (before == ord(","))).any():
            return True
    if mark is None:
        return False
    at = np.flatnonzero(raw == ord(mark))
    if len(at) == 0:
        return False
    if at[0] == 0 or at[-1] == len(raw) - 1:
        return True
    before, after = raw[at - 1] - 48, raw[at + 1] - 48  # uint8: anything but 0-9 wraps above 9
    return bool((before > 9).any() or (after > 9).any())


def _numbers_ok(df: pd.DataFrame, cols: set[int], mark: str | None) -> bool:
    """Every value column typed as a number by pandas, finite, and fractions only with a decimal mark."""
    for c in cols:
        kind = df[c].dtype.kind
        if kind in "iu":
            continue
        if kind != "f" or mark is None or not np.isfinite(df[c].to_numpy()).all():
            return False
    return True


def _rollover(sods: np.ndarray, track: tuple[int, int | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sysstat.stamp()'s midnight rule over a table's chunk: (days, clock steps' row indexes, their sizes)."""
    day0, prev0 = track
    prevs = np.empty_like(sods)
    prevs[0] = sods[0] if prev0 is None else prev0
    prevs[1:] = sods[:-1]
    back = prevs - sods
    roll = back > _ROLLOVER_S
    steps = np.flatnonzero((back > 0) & ~roll)
    return day0 + np.cumsum(roll), steps, back[steps]


def _check_instance(t_no: int, instance: str) -> str | None:
    """Why an instance value cannot be right for its table, or None."""
    if _TABLES[t_no].name == "cpu" and not _CPU_ID.match(instance):
        return f"CPU {instance!r} is neither `all` nor a number"
    return None


# ---------------------------------------------------------------- sar text


class _Chunked(Sysstat):
    """The line walk shared by sar and sadf: `feed` for structure, pandas for runs of plain rows.

    Subclasses say what starts a row and when a table is open for the fast lane, and read a run of
    rows in `chunk` (False: nothing changed, the rows go through `feed` one by one).
    """

    def row_start(self, line: str) -> bool:
        raise NotImplementedError

    def table_open(self) -> bool:
        raise NotImplementedError

    def chunk(self, rows: list[str], first: int) -> bool:
        raise NotImplementedError

    def walk(self) -> None:
        """`_common.feed_lines` with a fast lane: data rows of a table are buffered, then read in chunks.

        A line is buffered when the line before it left a readable table open (`table_open`) and it
        starts like a row (`row_start`). Anything else is structure for `feed`, held back one line:
        the last line, cut mid-write, is dropped as `feed_lines` drops it.
        """
        lines = self.lines = _common.Lines(self.source, self.kind)
        rows: list[str] = []
        first = 0  # line number of rows[0]: rows of a run are consecutive lines
        pending: tuple[int, str] | None = None  # a structure line not yet fed
        fast = False
        line_no = limit = 0
        try:
            for line_no, line in lines:  # noqa: B007 - line_no is read after the loop
                if fast and self.row_start(line):
                    if not rows:
                        first, limit = line_no, line_no + CHUNK_ROWS - 1
                    rows.append(line)
                    if line_no >= limit:  # CHUNK_ROWS buffered: bounds memory
                        self.flush(rows, first)
                        first, limit = line_no + 1, line_no + CHUNK_ROWS
                    continue
                if rows:
                    self.flush(rows, first)
                if pending is not None:
                    self.feed(*pending, lines)
                    fast = self.table_open()
                    if fast and self.row_start(line):
                        first, limit, pending = line_no, line_no + CHUNK_ROWS - 1, None
                        rows.append(line)
                        continue
                pending = (line_no, line)
                fast = False
        except (UnicodeDecodeError, OSError) as exc:
            raise lines.error(line_no + 1, "", f"cannot read: {exc}") from None
        if rows and not lines.last_complete:
            rows.pop()  # the last line, a row cut mid-write
            self.cut_last(line_no, "", lines)
        if rows:
            self.flush(rows, first)
        if pending is not None:
            if not lines.last_complete and pending[1].strip():
                self.cut_last(*pending, lines)
            else:
                self.feed(*pending, lines)

    def flush(self, rows: list[str], first: int) -> None:
        """Read a run of rows: in one chunk when it is plain, else line by line (the exact rules)."""
        if len(rows) < _SMALL_RUN or not self.chunk(rows, first):
            for k, row in enumerate(rows):
                self.feed(first + k, row, self.lines)
        rows.clear()


class _Sar(_Chunked):
    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.store = _Store()
        self.plans: list[_Plan] | None = None
        self.skipping = False  # inside a table this parser does not read
        self.width = 0
        self.header_line_no = 0
        self.after_blank = True  # sar prints a blank line before every header
        self.tracks: dict[object, tuple[int, int | None]] = {}  # per table: (day, previous time)
        self.averages: list[dict[str, object]] = []
        self.restarts: list[dict[str, object]] = []
        self.comments: list[str] = []
        self.skipped: list[str] = []
        self.unknown: list[str] = []

    def run(self) -> pd.DataFrame:
        self.walk()
        frame = self.store.frame()
        frame.attrs.update(
            {
                "averages": self.averages,
                "restarts": self.restarts,
                "comments": self.comments,
                "skipped_tables": self.skipped,
                "unknown_columns": self.unknown,
                "dropped_lines": self.dropped,
                "notes": self.notes,
            }
        )
        return frame

    def row_start(self, line: str) -> bool:
        return line[:1].isdigit()  # a row starts with its time

    def table_open(self) -> bool:
        return self.plans is not None and not self.skipping and not self.after_blank

    def chunk(self, rows: list[str], first: int) -> bool:
        """Read rows of the open table with pandas; False (nothing changed) when any row is not plain.

        "Plain" is what `feed` would take as a data row without complaint: the header's field count,
        times and instances `feed` reads, numbers in sysstat's grammar with the file's decimal mark,
        each instance once per interval. Everything else (an error, a header without a blank line,
        a restart) goes back to `feed`, so errors, notes and state stay exactly the per-line ones.
        """
        plans = self.plans
        if plans is None:
            return False
        tokens = rows[0].split()
        try:
            sod, used = self.label(first, rows[0], tokens)
        except ParseError:
            return False
        ncols = used + self.width
        if sod is None or len(tokens) != ncols:  # also keeps pandas from cutting a long first row
            return False
        value_cols = {used + i for plan in plans for i, _, _ in plan.fields}
        mark = self.decimal
        if mark is None:  # the first value with a fraction decides, as in Sysstat.number()
            firsts = [tokens[c] for plan in plans for c in (used + i for i, _, _ in plan.fields)]
            mark = next(("," if "," in t else "." for t in firsts if "," in t or "." in t), None)
        data = "\n".join(rows).encode("utf-8", "surrogateescape")
        if mark is None and (b"," in data or b"." in data):
            return False
        if (mark == "," and self.slash_date) or _bad_marks(data, mark):
            return False
        text_cols = set(range(ncols)) - value_cols
        df = _read_chunk(data, ncols, " ", mark or ".", text_cols)
        if df is None or len(df) != len(rows) or not _numbers_ok(df, value_cols, mark):
            return False
        factors = {c: _factor(df[c]) for c in text_cols}
        for c, (_, names) in factors.items():
            if c >= used and not _NOT_ROW_WORDS.isdisjoint(names.tolist()):
                return False  # a header without a blank line before it, a restart, a comment, a short row
            if c == used == 1 and any(_AMPM.match(v) for v in names.tolist()):
                return False  # `feed` would read this field as half of a 12-hour time
        sods = self.chunk_clock(factors, used, first, rows[0])
        if sods is None:
            return False
        return self.commit(df, factors, plans, used, sods, first, mark)

    def chunk_clock(
        self, factors: dict[int, tuple[np.ndarray, np.ndarray]], used: int, first: int, line: str
    ) -> np.ndarray | None:
        """Seconds since midnight per row, one `label()` per distinct time; None if one is not a time."""
        codes, names = factors[0]
        if used == 2:
            codes2, names2 = factors[1]
            uniq, codes = np.unique(codes * len(names2) + codes2, return_inverse=True)
            labels = [[names[u // len(names2)], names2[u % len(names2)]] for u in uniq.tolist()]
        else:
            labels = [[name, "-"] for name in names.tolist()]
        sods = np.empty(len(labels), dtype=np.int64)
        for k, tokens in enumerate(labels):
            try:
                sod, got = self.label(first, line, tokens)
            except ParseError:
                return None
            if sod is None or got != used:
                return None
            sods[k] = sod
        return sods[codes]

    def commit(
        self,
        df: pd.DataFrame,
        factors: dict[int, tuple[np.ndarray, np.ndarray]],
        plans: list[_Plan],
        used: int,
        sods: np.ndarray,
        first: int,
        mark: str | None,
    ) -> bool:
        """Check instances and intervals per table, then store the chunk; False (nothing stored) if not."""
        n = len(df)
        host = self.host_name()
        done = []
        notes: list[tuple[int, int, int, str]] = []  # (row, plan, order, text): per-line order
        for p_no, plan in enumerate(plans):
            if plan.instance is not None:
                codes, names = factors[used + plan.instance]
                if any(_check_instance(plan.table, v) is not None for v in names.tolist()):
                    return False
            else:
                names = np.array([""], dtype=object)
                codes = np.zeros(n, dtype=np.int64)
            days, steps, sizes = _rollover(sods, self.tracks.get(plan.table, (0, None)))
            keys = days * 86400 + sods
            state = self.store.new_rows(plan.table, keys, codes, names)
            if state is None:
                return False
            for row, size in zip(steps.tolist(), sizes.tolist(), strict=True):
                notes.append(
                    (
                        row,
                        p_no,
                        0,
                        f"line {first + row}: clock went back {size} s (clock step), kept as printed",
                    )
                )
            done.append((plan, names, codes, days, keys, state))
        # the chunk is plain: from here on, state changes
        if mark is not None and self.decimal is None:
            self.decimal = mark
        if self.date is None and not self._no_date_noted:
            self._no_date_noted = True
            notes.append((0, 0, 1, "no `Linux ...` banner before the rows: no date, timestamps are NaT"))
        self.notes.extend(text for *_, text in sorted(notes))
        for plan, names, codes, days, keys, state in done:
            missing = np.full(n, np.nan)  # for the table's columns this header does not print
            cols = [missing] * len(self.store.values[plan.table])
            for i, j, factor in plan.fields:
                values = df[used + i].to_numpy(dtype=np.float64)
                cols[j] = values * factor if factor != 1.0 else values
            self.store.extend(plan.table, self.chunk_stamps(keys), [host] * n, names[codes].tolist(), cols)
            self.store.interval[plan.table] = state
            self.day, self.prev_sod = int(days[-1]), int(sods[-1])
            self.tracks[plan.table] = (self.day, self.prev_sod)
        return True

    def chunk_stamps(self, keys: np.ndarray) -> np.ndarray:
        """UTC ns of rows `keys` seconds after the banner's midnight: Sysstat.stamp() per distinct key."""
        if self.date is None:
            return np.full(len(keys), np.iinfo(np.int64).min, dtype=np.int64)
        midnight = datetime(self.date.year, self.date.month, self.date.day)
        if self.tz == "UTC":  # no zone rules: plain arithmetic
            return pd.Timestamp(midnight).value + keys * 1_000_000_000
        uniq, inverse = np.unique(keys, return_inverse=True)
        ns = [_common.to_utc(midnight + timedelta(seconds=k), self.tz).value for k in uniq.tolist()]
        return np.asarray(ns, dtype=np.int64)[inverse]

    def feed(self, line_no: int, line: str, lines: _common.Lines) -> None:
        self.lines = lines  # errors name the path the walk read
        tokens = line.split()
        if not tokens:
            self.after_blank = True
            return
        if self.banner(line_no, line):
            self.tracks.clear()  # a new capture: every table starts again on the banner's date
            self.after_blank = True
            return
        after_blank, self.after_blank = self.after_blank, False
        sod, used = self.label(line_no, line, tokens)
        fields = tokens[used:]
        if not fields:
            raise self.error(line_no, line, "a time label with nothing after it")
        if fields[0] == "LINUX" and fields[1:2] == ["RESTART"]:
            self.restart(line_no, line, sod)
            return
        if fields[0] == "COM" and sod is not None:
            self.comments.append(" ".join(fields[1:]))
            return
        if any(f in _KEYS for f in fields) or (
            after_blank and len(fields) > 1 and not any(_NUMBER.match(f) for f in fields)
        ):
            self.header(line_no, line, fields)
            return
        if self.skipping:
            return
        if self.plans is None:
            raise self.error(line_no, line, "a row before any sar table header")
        if len(fields) != self.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields after the time, "
                f"the header at line {self.header_line_no} has {self.width}",
            )
        host = self.host_name()
        for plan in self.plans:
            instance = fields[plan.instance] if plan.instance is not None else ""
            if (why := _check_instance(plan.table, instance)) is not None:
                raise self.error(line_no, line, why)
            row = self.store.row_values(plan, lambda i: self.number(line_no, line, fields[i]))
            if sod is None:
                self.averages.append(_record(host, plan.table, instance, row))
                continue
            ns, key = self.table_stamp(plan.table, line_no, sod)
            if not self.store.is_new(plan.table, key, instance):
                raise self.error(
                    line_no, line, f"{_TABLES[plan.table].name} {instance!r} listed twice in one interval"
                )
            self.store.add(plan.table, ns, host, instance, row)

    def header(self, line_no: int, line: str, fields: list[str]) -> None:
        plans, unknown, dup = _classify(fields)
        if dup is not None:
            raise self.error(line_no, line, f"column {dup!r} twice in the header")
        self.header_line_no, self.width = line_no, len(fields)
        if not plans:
            self.plans, self.skipping = None, True
            text = " ".join(fields)
            if text not in self.skipped:
                self.skipped.append(text)
                self.notes.append(f"line {line_no}: table not read, its rows skipped: {text[:80]}")
            return
        self.plans, self.skipping = plans, False
        self.unknown.extend(n for n in unknown if n not in self.unknown)

    def restart(self, line_no: int, line: str, sod: int | None) -> None:
        if sod is None:
            raise self.error(line_no, line, "a restart line without a time")
        ns, _ = self.table_stamp("restart", line_no, sod)
        m = _CPUS.search(line)
        when = None if self.date is None else utc(array("q", [ns]))[0].isoformat()
        self.restarts.append({"timestamp": when, "cpus": int(m[1]) if m else None})

    def table_stamp(self, track: object, line_no: int, sod: int) -> tuple[int, int]:
        """UTC ns of a row, rolling midnight per table (a replay restarts every table at the file's start)."""
        self.day, self.prev_sod = self.tracks.get(track, (0, None))
        ns = self.stamp(line_no, sod)
        self.tracks[track] = (self.day, self.prev_sod)
        return ns, self.day * 86400 + sod

    def host_name(self) -> str | None:
        return self.host if self.host is not None else self.banner_host

"""sar: sysstat's system activity report as text, one tidy frame for every table it prints.

perfkit runs `LC_ALL=C S_TIME_FORMAT=ISO sar -o FILE INTERVAL COUNT` (its stdout is the `-u` CPU
table; the binary FILE is converted on the host by `sadf -d`, see parsers/sadf.py). This parser also
reads what `sar -u [-P ALL] -q -r -d -n DEV,TCP,ETCP ...` prints live, and the `sar -f FILE ...` and
`sar -A`-style replays: a `Linux 6.18.44 (host) <TAB>2026-11-23 <TAB>_x86_64_<TAB>(2 CPU)` banner
(the only date), then blocks, each opened by its own header line (`07:47:25  CPU %user ...`,
`07:47:25  runq-sz plist-sz ...`), rows labelled with a time of day, `Average:` rows closing each
block, and `07:48:28  LINUX RESTART (2 CPU)` lines where the sa file holds a reboot. Live sar
alternates the tables every interval; a replay prints each table over the whole file, then the next.
`sar -A` prints some thirty tables, most of which this parser does not read; where an average means
nothing (`-F` filesystems, USB devices) sysstat >= 12 closes the table with a `Summary:` block
(`Zusammenfassung:`, `总计:`) instead. `sar -dp`/`--pretty` print the device name last.

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
- `net_etcp` (key `atmptf/s`, no instance): atmptf_s, estres_s, retrans_s (`retrseg/s` since
  sysstat 12.7.6), isegerr_s, orsts_s.

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

Read what can be read (parsers/_common.py `Skips`, `attrs["skipped"]`): a table this parser does not
read (`-B`, `-w`, `-I ALL`, `-n SOCK`, `-F` ... in a `sar -A` capture) is skipped as a block, its
header quoted and every row, `Average:` and `Summary:` ones included, counted, never guessed at. A
`Summary:` block is a table like any other (its header says which); a `Summary:` row under a table
this parser reads (no sysstat 12.6-12.7 prints one) is skipped and quoted: the last values, neither
an interval nor an average. A file holding no row of a read table (`sar -F` alone) is a ParseError
"nothing readable" naming the first skipped header; sniff claims `sar -F` so that this is said.

`df.attrs`: `skipped` (the `Skips`), `averages` (the `Average:` rows as records: host, table,
instance and the table's metric columns; None for a missing value), `restarts` (records `timestamp`
ISO UTC, `cpus`), `comments` (`COM` lines), `skipped_tables` (the distinct headers of tables not
read), `unknown_columns` (header names of a read table this parser does not know), `dropped_lines`
(a last line cut mid-write), `notes`, `cpus` (the last banner's `(N CPU)`, None without a banner).

Large captures are read a few MB at a time (parsers/_chunks.py `ByteScan`). sar pads a table's fields
to fixed widths, so a run of rows laid out like its first row is cut into fields as bytes: Arrow's
CSV reader reads the numbers, times and instances are checked once per distinct text (`_Sar.chunk`
says what that proves). Any other run is halved until its irregular lines go through the per-line
code, which also names the first bad line.

Not read: `sar -o JSON`-less binary files (use `sadf`), `sadf` output (parsers/sadf.py). Tested
on: tests/fixtures/sar/*.txt (see README.md there).
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from perfkit.errors import ParseError

from . import _common
from ._chunks import ByteScan, Interned, Rows
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
            ("retrseg/s", "retrans_s"),  # sysstat >= 12.7.6's name for it (retrans/s is also -n NFS's)
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
# sar's label for the last block of a report where an average means nothing (`-F` filesystems, USB
# devices: the last values), per locale; only tables this parser does not read print it in 12.6-12.7
_SUMMARY_LABELS = frozenset({"Summary:", "Zusammenfassung:", "总计:"})
_SNIFF_HEADER = re.compile(
    r"\bCPU\s+%user\s+%nice\s+%system\s+%iowait\s+%steal\s+%idle\b"
    r"|\bCPU\s+%usr\s+%nice\s+%sys\s+%iowait\s+%steal\s+%irq\b"
    r"|\brunq-sz\s+plist-sz\s+ldavg-1\b"
    r"|\bkbmemfree\s+kbavail\s+kbmemused\b"
    r"|\bDEV\s+tps\s+\S+/s\b"
    r"|\btps\s+(?:rkB/s|rd_sec/s)\s.*\sDEV\s*$"  # `sar -dp`/`--pretty`: the device name last
    r"|\bMBfsfree\s+MBfsused\b"  # `sar -F`: claimed so that its refusal ("nothing readable") is said
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
        A frame with exactly the `SCHEMA` columns; `attrs` `skipped`, `averages`, `restarts`,
        `comments`, `skipped_tables`, `unknown_columns`, `dropped_lines`, `notes`, `cpus`.

    Raises:
        ParseError: garbage mid-file, a row whose field count does not match its header, an instance
            listed twice in one interval, a row before any header, a foreign locale it cannot read
            safely, no row of a table this parser reads.
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


class _Pending:
    """Rows of one table added one at a time by `feed`, not yet part of a segment."""

    def __init__(self, width: int) -> None:
        self.stamps = array("q")
        self.hosts = array("q")
        self.instances = array("q")
        self.values = [array("d") for _ in range(width)]


@dataclass(frozen=True)
class _Segment:
    """Consecutive rows of one table: UTC ns, codes into `_Store.hosts` / `_Store.instances`, values."""

    stamps: np.ndarray
    hosts: np.ndarray
    instances: np.ndarray
    values: list[pa.ChunkedArray | np.ndarray | None]  # per table column; None: the header lacks it


class _Store:
    """Rows per table in file order, as numpy segments; one frame at the end, tables in _TABLES order.

    Host and instance names are kept as codes into one table of distinct texts each: a day of
    1-second rows repeats a few names millions of times.
    """

    def __init__(self) -> None:
        self.hosts = Interned()
        self.instances = Interned()
        self.segments: list[list[_Segment]] = [[] for _ in _TABLES]
        self.pending = [_Pending(len(_table_columns(t))) for t in _TABLES]
        self.interval: list[tuple[object, set[str]]] = [(None, set()) for _ in _TABLES]

    def row_values(self, plan: _Plan, read: object) -> list[float]:
        """The table's values in column order; `read(field_index)` gives one value."""
        row = [float("nan")] * len(_table_columns(_TABLES[plan.table]))
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
        rows = self.pending[t_no]
        rows.stamps.append(ns)
        rows.hosts.append(-1 if host is None else self.hosts.code(host))
        rows.instances.append(self.instances.code(instance))
        for col, v in zip(rows.values, row, strict=True):
            col.append(v)

    def extend(
        self,
        t_no: int,
        stamps: np.ndarray,
        hosts: np.ndarray,
        instances: np.ndarray,
        cols: list[np.ndarray | None],
    ) -> None:
        """Append a chunk of rows of one table at once (the chunked path's `add`); codes from `codes()`."""
        self._seal(t_no)
        self.segments[t_no].append(_Segment(stamps, hosts, instances, cols))

    @staticmethod
    def codes(table: Interned, names: list[str | None], index: np.ndarray) -> np.ndarray:
        """Codes into `table` of the rows' names: `names[index]`, None as -1 (NA)."""
        known = np.array([-1 if name is None else table.code(name) for name in names], dtype=np.int64)
        return known[index]

    def _seal(self, t_no: int) -> None:
        rows = self.pending[t_no]
        if not rows.stamps:
            return
        self.segments[t_no].append(
            _Segment(
                np.frombuffer(rows.stamps, dtype=np.int64),
                np.frombuffer(rows.hosts, dtype=np.int64),
                np.frombuffer(rows.instances, dtype=np.int64),
                [np.frombuffer(col, dtype=np.float64) for col in rows.values],
            )
        )
        self.pending[t_no] = _Pending(len(rows.values))

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
        for t_no in range(len(_TABLES)):
            self._seal(t_no)
        counts = [sum(len(s.stamps) for s in segments) for segments in self.segments]
        n = sum(counts)
        if n == 0:
            return _common.empty_frame(SCHEMA)
        segments = [s for table in self.segments for s in table]
        # the columns of tables the capture lacks share one array: copy-on-write copies it before a write
        nan = np.full(n, np.nan)
        metrics: dict[str, object] = {}
        start = 0
        for t_no, table in enumerate(_TABLES):
            end = start + counts[t_no]
            for j, col in enumerate(_table_columns(table)):
                if all(s.values[j] is None for s in self.segments[t_no]):
                    metrics[col] = pd.Series(nan, copy=False)
                    continue
                values = np.empty(n)
                values[:start] = np.nan
                values[end:] = np.nan
                at = start
                for s in self.segments[t_no]:
                    if s.values[j] is None:
                        values[at : at + len(s.stamps)] = np.nan
                        at += len(s.stamps)
                        continue
                    for piece in _arrays(s.values[j]):
                        values[at : at + len(piece)] = piece
                        at += len(piece)
                metrics[col] = values
            start = end
        data: dict[str, object] = {
            "timestamp": utc(np.concatenate([s.stamps for s in segments])),
            "host": _text_runs(list(self.hosts.index), np.concatenate([s.hosts for s in segments])),
            "table": _text_runs([t.name for t in _TABLES], np.repeat(np.arange(len(_TABLES)), counts)),
            "instance": _text_runs(
                list(self.instances.index), np.concatenate([s.instances for s in segments])
            ),
            **metrics,
        }
        frame = pd.DataFrame(data, copy=False)  # one block per column: no consolidation copy
        if {c: str(t) for c, t in frame.dtypes.items()} != SCHEMA:  # safety net; copies the frame
            frame = _common.coerce(frame, SCHEMA)
        return frame


def _arrays(column: pa.ChunkedArray | np.ndarray) -> list[np.ndarray]:
    """A stored column as numpy arrays, without copying: Arrow's chunks, or the array itself."""
    return [chunk.to_numpy() for chunk in column.chunks] if isinstance(column, pa.ChunkedArray) else [column]


def _text_runs(texts: list[str], codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """A string column from distinct `texts` and a code per row (-1: NA), as `_common.text_column`.

    Columns made of a few long runs (host, table) are built run by run: Arrow repeats a text per run
    ten times faster than it takes one per row.
    """
    changes = codes[1:] != codes[:-1]
    if np.count_nonzero(changes) >= _FEW_RUNS:
        return _common.text_column(texts, codes)
    starts = [0, *(np.flatnonzero(changes) + 1).tolist(), len(codes)]
    runs = [
        pa.repeat(pa.scalar(texts[code] if code >= 0 else None, pa.large_string()), end - start)
        for start, end, code in zip(starts[:-1], starts[1:], codes[starts[:-1]].tolist(), strict=True)
    ]
    return pd.array(pa.concat_arrays(runs), dtype="string")


def _record(host: str | None, t_no: int, instance: str, row: list[float]) -> dict[str, object]:
    cols = _table_columns(_TABLES[t_no])
    return {
        "host": host,
        "table": _TABLES[t_no].name,
        "instance": instance,
        **{c: record_value(v) for c, v in zip(cols, row, strict=True)},
    }


_FEW_RUNS = 64  # a string column with more runs of one text than this is built row by row
_SMALL_RUN = 48  # fewer rows than this go through the per-line code: a chunk costs more than it saves


def _read_fields(data: bytes, ncols: int, types: dict[int, pa.DataType], mark: str) -> pa.Table | None:
    """`;`-separated rows -> Arrow table of the columns in `types` (named "0", "1" ...); None if refused.

    Arrow's reader converts numbers with correct rounding (as `float()`), trims blanks around them,
    and refuses a row with another field count or a field that is not of its type. Quotes are plain
    characters and no text is read as missing.
    """
    try:
        return pa_csv.read_csv(
            pa.BufferReader(data),
            read_options=pa_csv.ReadOptions(column_names=[str(i) for i in range(ncols)]),
            parse_options=pa_csv.ParseOptions(delimiter=";", quote_char=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(
                column_types={str(i): t for i, t in types.items()},
                include_columns=[str(i) for i in sorted(types)],
                null_values=[],
                strings_can_be_null=False,
                decimal_point=mark,
            ),
        )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal means: read line by line
        return None


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


def _wall_utc(midnight: datetime, seconds: np.ndarray, tz: str) -> np.ndarray:
    """UTC ns of wall-clock times `seconds` after `midnight` in `tz`, as `_common.to_utc` gives them.

    pandas localises every time the zone maps to one instant; a time skipped or repeated at a DST
    change goes through `to_utc` (whose fold rule pandas does not have).
    """
    naive = np.datetime64(midnight, "ns").astype(np.int64) + seconds * 1_000_000_000
    local = pd.DatetimeIndex(naive.view("M8[ns]")).tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
    ns = local.asi8.copy()
    for k in np.flatnonzero(local.isna()).tolist():
        ns[k] = _common.to_utc(midnight + timedelta(seconds=int(seconds[k])), tz).value
    return ns


def _factor_rows(block: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    """(code per row, distinct rows as bytes) of a uint8 matrix: pandas' hash table over 8-byte words."""
    n, width = block.shape
    words = np.zeros((n, -(-width // 8) * 8), dtype=np.uint8)
    words[:, :width] = block
    codes = np.zeros(n, dtype=np.int64)
    for word in words.view(np.uint64).T:
        part, uniques = pd.factorize(word)
        codes = pd.factorize(codes * len(uniques) + part)[0]
    firsts = np.empty(int(codes.max()) + 1, dtype=np.int64)
    firsts[codes[::-1]] = np.arange(n - 1, -1, -1)
    return codes, [block[i].tobytes() for i in firsts.tolist()]


def _clock_seconds(labels: np.ndarray) -> np.ndarray | None:
    """Seconds since midnight of rows `HH:MM:SS` (uint8 matrix) as `label()` reads them, or None."""
    if labels.shape[1] != 8 or not (labels[:, [2, 5]] == ord(":")).all():
        return None
    digits = labels[:, [0, 1, 3, 4, 6, 7]] - ord("0")  # uint8: anything but 0-9 wraps above 9
    if (digits > 9).any():
        return None
    d = digits.astype(np.int64)
    h, mi, s = d[:, 0] * 10 + d[:, 1], d[:, 2] * 10 + d[:, 3], d[:, 4] * 10 + d[:, 5]
    if (h > 23).any() or (mi > 59).any() or (s > 60).any():
        return None
    return h * 3600 + mi * 60 + np.minimum(s, 59)


def _is_header(fields: list[str], after_blank: bool) -> bool:
    """Whether a line's fields after its time label are a table header: a known table's key, or
    words without a number right after the blank line sar prints before every header."""
    return any(f in _KEYS for f in fields) or (
        after_blank and len(fields) > 1 and not any(_NUMBER.match(f) for f in fields)
    )


def _check_instance(t_no: int, instance: str) -> str | None:
    """Why an instance value cannot be right for its table, or None."""
    if _TABLES[t_no].name == "cpu" and not _CPU_ID.match(instance):
        return f"CPU {instance!r} is neither `all` nor a number"
    return None


# ---------------------------------------------------------------- sar text


class _Chunked(Sysstat):
    """The line walk shared by sar and sadf: `feed` for structure, whole chunks for runs of plain rows.

    `MARKS` find the structure lines (`_chunks.ByteScan`); the runs of lines between them are rows.
    Subclasses say when a table is open for the chunked lane and read a run in `chunk` (False:
    nothing changed, the rows go through `feed` one by one).
    """

    MARKS: tuple[re.Pattern[bytes], ...] = ()

    def table_open(self) -> bool:
        raise NotImplementedError

    def chunk(self, data: bytes, first: int, count: int) -> bool:
        raise NotImplementedError

    def walk(self) -> None:
        """`_common.feed_lines`, but runs of rows go to `chunk` as bytes (the last line, cut, is dropped)."""
        scan = ByteScan(self.source, self.kind, self.MARKS)  # a read that fails is its ParseError
        self.lines = scan.lines
        for item in scan:
            if isinstance(item, Rows):
                self.rows(item.data, item.first_no, item.count)
            else:
                self.feed(*item, scan.lines)
        if scan.cut is not None:
            self.cut_last(*scan.cut, scan.lines)

    def rows(self, data: bytes, first: int, count: int) -> None:
        """A run of rows: as one chunk if plain, else halved until the irregular ones go through `feed`.

        Rows before a table is open (a header at the run's start) go through `feed` first. A header,
        restart or comment among the rows costs a few halvings, not the whole run line by line.
        Halves go in file order, so state, notes and the first error stay the per-line ones.
        """
        pos = 0
        while count and not self.table_open():
            end = data.index(b"\n", pos)
            self.feed(first, data[pos:end].decode("utf-8", "replace"), self.lines)
            pos, first, count = end + 1, first + 1, count - 1
        if pos:
            data = data[pos:]
        if count >= _SMALL_RUN and self.chunk(data, first, count):
            return
        if count >= 2 * _SMALL_RUN:
            cut = data.index(b"\n", len(data) // 2) + 1
            head = data.count(b"\n", 0, cut)
            if head < count:
                self.rows(data[:cut], first, head)
                self.rows(data[cut:], first + head, count - head)
                return
        for k, line in enumerate(data.decode("utf-8", "replace").split("\n")[:-1]):
            self.feed(first + k, line, self.lines)


class _Sar(_Chunked):
    # structure: lines not starting with a time (blank, banner, `Average:`), so that live output, which
    # alternates tables every interval, splits into short runs at once; the header after a blank line,
    # a restart or a comment among the rows are found by `rows` (a pass each would cost more)
    MARKS = (re.compile(rb"\n(?![0-9])"),)

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
        self.skips = _common.Skips()

    def run(self) -> pd.DataFrame:
        self.walk()
        frame = self.store.frame()
        self.skips.refuse_if_nothing_read(len(frame), self.lines)
        frame.attrs.update(
            {
                "skipped": self.skips,
                "averages": self.averages,
                "restarts": self.restarts,
                "comments": self.comments,
                "skipped_tables": self.skipped,
                "unknown_columns": self.unknown,
                "dropped_lines": self.dropped,
                "notes": self.notes,
                "cpus": self.banner_cpus,
            }
        )
        return frame

    def table_open(self) -> bool:
        return self.plans is not None and not self.skipping and not self.after_blank

    def chunk(self, data: bytes, first: int, count: int) -> bool:
        """Read rows of the open table as a grid of bytes; False (nothing changed) when any row is not plain.

        sar pads the fields of a table to fixed widths. When every row is as long as the first, with a
        blank after each of the first row's fields and none at their ends, the rows split into the same
        fields as `str.split()` splits them, unless a field holds a blank: Arrow refuses such a number,
        `words` such a text. The value fields, `;` put at those blanks, go to Arrow, which refuses
        anything but a number; that they hold nothing but digits, `-` and the file's decimal mark where
        the first row has it, between digits, rules out the forms Arrow reads and sysstat's grammar
        refuses (`1e5`, `inf`, `+5`, `.5`, `5.`). The other fields (time, instance) are checked once per
        distinct text: times `label()` reads, instances `feed` takes, each once per interval.
        Everything else (an error, a header without a blank line, a restart) goes back to `feed`, so
        errors, notes and state stay exactly the per-line ones.
        """
        plans = self.plans
        size = data.index(b"\n") + 1
        if plans is None or len(data) != size * count:
            return False
        grid = np.frombuffer(data, dtype=np.uint8).reshape(count, size)
        row = data[: size - 1]
        line = row.decode("utf-8", "replace")
        tokens = line.split()
        try:
            sod, used = self.label(first, line, tokens)
        except ParseError:
            return False
        ncols = used + self.width
        spans = [m.span() for m in re.finditer(rb"[^ ]+", row)]
        if sod is None or len(tokens) != ncols or len(spans) != ncols:
            return False
        ends = [end - 1 for _, end in spans]
        seps = [end for _, end in spans[:-1]]
        if not ((grid[:, -1] == 10).all() and (grid[:, ends] != 32).all() and (grid[:, seps] == 32).all()):
            return False
        values = sorted({used + i for plan in plans for i, _, _ in plan.fields})
        mark = self.decimal
        if mark is None:  # the first value with a fraction decides, as in Sysstat.number()
            firsts = [tokens[used + i] for plan in plans for i, _, _ in plan.fields]
            mark = next(("," if "," in t else "." for t in firsts if "," in t or "." in t), None)
        if mark == "," and self.slash_date:
            return False
        points = []  # where the first row's values hold the decimal mark: every row must hold it there
        if mark is not None:
            for c in values:
                at = row.find(mark.encode(), *spans[c])
                if at >= 0:
                    points.append(at)
        digit = 9  # uint8 arithmetic: anything but 0-9 minus "0" wraps above 9
        if points and not (
            (grid[:, points] == ord(mark)).all()
            and ((grid[:, [p - 1 for p in points]] - ord("0")) <= digit).all()
            and ((grid[:, [p + 1 for p in points]] - ord("0")) <= digit).all()
        ):
            return False
        bounds = [0, *seps, size - 1]  # field c: from bounds[c] (its blank), up to bounds[c + 1]
        texts = [c for c in range(used, ncols) if c not in values]
        names = {}
        for c in texts:
            codes, raw = _factor_rows(grid[:, bounds[c] : bounds[c + 1]])
            words = self.words(c, used, raw)
            if words is None:
                return False
            names[c] = (codes, np.array(words, dtype=object))
        sods = self.chunk_sods(grid[:, : bounds[used]], used, first, line)
        if sods is None:
            return False
        buf = bytearray(data)
        cells = np.frombuffer(buf, dtype=np.uint8).reshape(count, size)
        cells[:, : bounds[used]] = ord(" ")  # the fields not read as numbers
        for c in texts:
            cells[:, bounds[c] : bounds[c + 1]] = ord(" ")
        cells[:, seps] = ord(";")
        if len(buf.translate(None, b"0123456789-; \n")) != count * len(points):
            return False
        table = _read_fields(buf, ncols, dict.fromkeys(values, pa.float64()), mark or ".")
        if table is None:
            return False
        cols = {c: table.column(str(c)) for c in values}
        return self.commit(cols, names, plans, used, sods, first, mark)

    @staticmethod
    def words(c: int, used: int, raw: list[bytes]) -> list[str] | None:
        """The distinct texts of a text field as `feed` would see them; None if one is no row's field."""
        out = []
        for text in raw:
            words = text.decode("utf-8", "replace").split()
            if len(words) != 1 or words[0] in _NOT_ROW_WORDS:
                return None  # a blank inside a field, a header without a blank line, a restart, a comment
            if c == used == 1 and _AMPM.match(words[0]):
                return None  # `feed` would read this field as half of a 12-hour time
            out.append(words[0])
        return out

    def chunk_sods(self, labels: np.ndarray, used: int, first: int, line: str) -> np.ndarray | None:
        """Seconds since midnight of each row's time label (a uint8 matrix); None if one is not a time
        `label()` reads. `HH:MM:SS` is read with numpy, other forms once per distinct label."""
        if used == 1 and (sods := _clock_seconds(labels)) is not None:
            return sods
        codes, raw = _factor_rows(labels)
        sods = np.empty(len(raw), dtype=np.int64)
        for k, text in enumerate(raw):
            tokens = text.decode("utf-8", "replace").split()
            if len(tokens) != used:
                return None
            try:
                sod, got = self.label(first, line, tokens if used == 2 else [*tokens, "-"])
            except ParseError:
                return None
            if sod is None or got != used:
                return None
            sods[k] = sod
        return sods[codes]

    def commit(
        self,
        cols: dict[int, pa.ChunkedArray],
        instances: dict[int, tuple[np.ndarray, np.ndarray]],
        plans: list[_Plan],
        used: int,
        sods: np.ndarray,
        first: int,
        mark: str | None,
    ) -> bool:
        """Check instances and intervals per table, then store the chunk; False (nothing stored) if not."""
        n = len(sods)
        host = self.host_name()
        done = []
        notes: list[tuple[int, int, int, str]] = []  # (row, plan, order, text): per-line order
        for p_no, plan in enumerate(plans):
            if plan.instance is not None:
                codes, names = instances[used + plan.instance]
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
        hosts = np.full(n, -1 if host is None else self.store.hosts.code(host), dtype=np.int64)
        for plan, names, codes, days, keys, state in done:
            row_cols: list[pa.ChunkedArray | None] = [None] * len(_table_columns(_TABLES[plan.table]))
            for i, j, factor in plan.fields:
                values = cols[used + i]
                row_cols[j] = pc.multiply(values, factor) if factor != 1.0 else values
            instance_codes = self.store.codes(self.store.instances, names.tolist(), codes)
            self.store.extend(plan.table, self.chunk_stamps(keys), hosts, instance_codes, row_cols)
            self.store.interval[plan.table] = state
            self.day, self.prev_sod = int(days[-1]), int(sods[-1])
            self.tracks[plan.table] = (self.day, self.prev_sod)
        return True

    def chunk_stamps(self, keys: np.ndarray) -> np.ndarray:
        """UTC ns of rows `keys` seconds after the banner's midnight, as Sysstat.stamp() gives them."""
        if self.date is None:
            return np.full(len(keys), np.iinfo(np.int64).min, dtype=np.int64)
        midnight = datetime(self.date.year, self.date.month, self.date.day)
        if self.tz == "UTC":  # no zone rules: plain arithmetic
            return pd.Timestamp(midnight).value + keys * 1_000_000_000
        uniq, inverse = np.unique(keys, return_inverse=True)
        return _wall_utc(midnight, uniq, self.tz)[inverse]

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
        if tokens[0] in _SUMMARY_LABELS:
            self.summary(line_no, line, tokens[1:], after_blank)
            return
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
        if _is_header(fields, after_blank):
            self.header(line_no, line, fields)
            return
        if self.skipping:
            self.skips.count += 1  # a row of the table whose header `header` quoted (add_block's count)
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
            self.skips.add(line_no, line, "a sar table perfkit does not read")
            if text not in self.skipped:
                self.skipped.append(text)
                self.notes.append(f"line {line_no}: table not read, its rows skipped: {text[:80]}")
            return
        self.plans, self.skipping = plans, False
        self.unknown.extend(n for n in unknown if n not in self.unknown)

    def summary(self, line_no: int, line: str, fields: list[str], after_blank: bool) -> None:
        """A `Summary:` line: the header of a summary block (a table as any other: read, or skipped
        and quoted), or one of its rows: skipped in a table this parser does not read (counted with
        its block), else skipped and quoted (the last values, neither an interval nor an average)."""
        if not fields:
            raise self.error(line_no, line, "a Summary label with nothing after it")
        if _is_header(fields, after_blank):
            self.header(line_no, line, fields)
        elif self.skipping:
            self.skips.count += 1
        else:
            self.skips.add(line_no, line, "a Summary: row (the last values, not an interval)")

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

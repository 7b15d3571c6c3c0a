"""sar: sysstat's system activity report as text, one tidy frame for every table it prints.

perfkit runs `LC_ALL=C S_TIME_FORMAT=ISO sar -o FILE INTERVAL COUNT` (its stdout is the `-u` CPU
table; the binary FILE is converted on the host by `sadf -d`, see parsers/sadf.py). This parser also
reads what `sar -u [-P ALL] -q -r -d -n DEV,TCP,ETCP ...` prints live, and the `sar -f FILE ...` and
`sar -A`-style replays: a `Linux 6.18.44 (host) <TAB>2026-11-23 <TAB>_x86_64_<TAB>(2 CPU)` banner
(the only date), then blocks, each opened by its own header line (`07:47:25  CPU %user ...`), rows
labelled with a time of day, `Average:` rows closing each block, and `07:48:28  LINUX RESTART (2
CPU)` lines where the sa file holds a reboot. Live sar alternates the tables every interval; a
replay prints each table over the whole file, then the next. `sar -A` prints some thirty tables,
most not read here; where an average means nothing (`-F` filesystems, USB devices) sysstat >= 12
closes the table with a `Summary:` block (`Zusammenfassung:`, `总计:`) instead. `sar -dp`/`--pretty`
print the device name last.

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
`kb`, `-` -> `_`, a unit where sar's name has none (`await` ms, `areq-sz` kB: parsers/_columns.py).
`-u` prints `%user %system` (guest time in user, irq/softirq time in system); `-u ALL` prints `%usr
%sys` without them, as mpstat does: different quantities, so different columns. The old `sar -d`
header (sysstat <= 11.4: `rd_sec/s wr_sec/s avgrq-sz avgqu-sz`, 512-byte sectors) is converted to kB.

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
clock goes back by more than an hour (parsers/_sysstat.py's rule, tracked per table: a replay
restarts every table at the file's start).

Read what can be read (parsers/_common.py `Skips`): a table not read (`-B`, `-w`, `-I ALL`, `-n
SOCK`, `-F` ... in a `sar -A` capture) is skipped as a block, its header quoted and every row,
`Average:` and `Summary:` ones included, counted, never guessed at. A `Summary:` block is a table
like any other (its header says which); a `Summary:` row under a table read (no sysstat 12.6-12.7
prints one) is skipped and quoted: the last values, neither an interval nor an average. A file with
no row of a read table (`sar -F` alone) is a ParseError "nothing readable" naming the first skipped
header; sniff claims `sar -F` so that this is said. What it reads beside its rows: `EXTRAS` (below).

Read by the table engine (parsers/_table.py: runs of rows read in bulk, a bad row named by its
line): a header is the line after a blank line (sar prints one before each) whose fields after its
label are words, none a number; `LINUX RESTART` and `COM` lines among the rows are no rows. Not
read: binary sa files and `sadf` output (parsers/sadf.py). Tested on: tests/fixtures/sar/*.txt (see
README.md there).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import pyarrow as pa

from perfkit.errors import ParseError

from . import _common
from ._chunks import Interned
from ._columns import CONVERT, RENAME
from ._common import Extras
from ._sysstat import Sysstat, record_value, utc
from ._table import ROW, STRUCTURE, Block, Layout, Skip, Table


@dataclass(frozen=True)
class SarExtras(Extras):
    """What sar reads beside its rows (see `_common.Extras`); `unknown_columns` lists header names of a
    read table this parser does not know."""

    # the `Average:` rows, as records: host, table, instance and the table's metric columns; None for a
    # missing value
    averages: list[dict] = field(default_factory=list)
    # LINUX RESTART lines, as records: `timestamp` (ISO UTC), `cpus`
    restarts: list = field(default_factory=list)
    # COMMENT (`COM`) lines
    comments: list = field(default_factory=list)
    # the distinct headers of tables not read (no schema for them)
    skipped_tables: list = field(default_factory=list)
    # the last banner's `(N CPU)`; None without a banner
    cpus: int | None = None


EXTRAS = SarExtras

KIND = "sar"


@dataclass(frozen=True)
class _Table:
    name: str
    key: str  # the header name that tells this table
    instance: str | None  # the header name of its instance column, if any
    columns: tuple[str, ...]  # its metric columns, in order
    slots: dict[str, tuple[int, float]]  # header name -> (index in `columns`, factor to the column's unit)


# beyond iostat's names (parsers/_columns.py): sysstat >= 12.7.6's name for retrans/s (which is also
# -n NFS's), and the old `sar -d` sector counts (sysstat <= 11.4: 512-byte sectors, to kB)
_RENAME = {**RENAME, "retrseg/s": "retrans_s"}
_CONVERT = {**CONVERT, "rd_sec/s": ("rkb_s", 0.5), "wr_sec/s": ("wkb_s", 0.5)}


def _column(header: str) -> tuple[str, float]:
    """A header name's column and the factor to its unit, by the naming rule in the module docstring."""
    if header in _CONVERT:
        return _CONVERT[header]
    if header in _RENAME:
        return _RENAME[header], 1.0
    if header.startswith("%"):
        return header[1:] + "_pct", 1.0
    return header.replace("kB", "kb").replace("/s", "_s").replace("-", "_"), 1.0


def _table(name: str, key: str, instance: str | None, headers: str) -> _Table:
    """A table read from the header names sar prints for it (blank-separated), its columns in their order."""
    named = {header: _column(header) for header in headers.split()}
    columns = tuple(dict.fromkeys(col for col, _ in named.values()))
    slots = {header: (columns.index(col), factor) for header, (col, factor) in named.items()}
    return _Table(name, key, instance, columns, slots)


_TABLES: tuple[_Table, ...] = (
    _table(
        "cpu", "%idle", "CPU", "%user %usr %nice %system %sys %iowait %steal %irq %soft %guest %gnice %idle"
    ),
    _table("queue", "runq-sz", None, "runq-sz plist-sz ldavg-1 ldavg-5 ldavg-15 blocked"),
    _table(
        "memory",
        "kbmemfree",
        None,
        "kbmemfree kbavail kbmemused %memused kbbuffers kbcached kbcommit %commit kbactive kbinact kbdirty "
        "kbanonpg kbslab kbkstack kbpgtbl kbvmused",
    ),
    _table(
        "disk",
        "tps",
        "DEV",
        "tps rkB/s wkB/s dkB/s areq-sz aqu-sz avgqu-sz await svctm %util rd_sec/s wr_sec/s avgrq-sz",
    ),
    _table("net_dev", "rxpck/s", "IFACE", "rxpck/s txpck/s rxkB/s txkB/s rxcmp/s txcmp/s rxmcst/s %ifutil"),
    _table("net_tcp", "active/s", None, "active/s passive/s iseg/s oseg/s"),
    _table("net_etcp", "atmptf/s", None, "atmptf/s estres/s retrans/s retrseg/s isegerr/s orsts/s"),
)

_METRIC_COLS: list[str] = [col for table in _TABLES for col in table.columns]
# a column belongs to exactly one table: the union frame must not mix two quantities in one column
if len(set(_METRIC_COLS)) != len(_METRIC_COLS):
    raise RuntimeError("sar: two tables share a metric column")

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "table": "string",
    "instance": "string",
    **{col: "float64" for col in _METRIC_COLS},
}

_CPU_ID = re.compile(r"^(?:all|\d+)$")
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
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: garbage mid-file, a row whose field count does not match its header, an instance
            listed twice in one interval, a row before any header, a foreign locale it cannot read
            safely, no row of a table this parser reads.
    """
    return _Sar(source, host, tz).run()


# ---------------------------------------------------------------- sar text, and what parsers/sadf.py shares

_NOT_READ = Skip("a sar table perfkit does not read")


class _Report(Sysstat):
    """What sar's text and sadf's export share: the tables read into `_Store`, the headers of the
    tables not read, the restart and comment records, the frame and its attrs."""

    def __init__(self, kind: str, source: _common.Source, host: str | None, tz: str):
        super().__init__(kind, source, tz)
        self.host = host
        self.table = Table(source, kind, self, self.numbers)
        self.store = _Store()
        self.restarts: list[dict[str, object]] = []
        self.comments: list[str] = []
        self.skipped: list[str] = []
        self.unknown: list[str] = []

    def header(
        self, line_no: int, text: str, names: list[str], labels: int, sep: str | None = None, lead: int = 0
    ) -> Layout | Skip:
        """How the rows under a header of `names` read, by the tables it holds (`_classify`); a header
        of none is listed in `skipped_tables` and its rows skipped. `labels` tokens lead each row (sar's
        time) before the fields `names` name; `names[:lead]` (sadf's hostname;interval;timestamp) are
        text fields, and no unknown columns."""
        plans, unknown, dup = _classify(names)
        if dup is not None:
            raise self.error(line_no, text, f"column {dup!r} twice in the header")
        if not plans:
            shown = (sep or " ").join(names[lead:])
            if shown not in self.skipped:
                self.skipped.append(shown)
                self.notes.append(f"line {line_no}: table not read, its rows skipped: {shown[:80]}")
            return _NOT_READ
        self.unknown.extend(n for n in unknown if n not in names[:lead] and n not in self.unknown)
        values = {i for plan in plans for i, _, _ in plan.fields}
        kinds = "".join("f" if i in values else "t" for i in range(len(names)))  # instance, unknown: text
        return Layout(kinds, labels=(labels,), key=tuple(plans), sep=sep)

    def restart(self, ns: int | None, text: str) -> None:
        """A LINUX RESTART record at UTC ns `ns` (None: no date)."""
        m = _CPUS.search(text)
        when = None if ns is None else pd.Timestamp(ns, tz="UTC").isoformat()
        self.restarts.append({"timestamp": when, "cpus": int(m[1]) if m else None})

    def frame(self, **attrs: object) -> pd.DataFrame:
        """The frame of the rows read, with the attrs both give and `attrs`; ParseError with none read."""
        frame = self.store.frame()
        skips = self.table.skips
        skips.refuse_if_nothing_read(len(frame), self.lines)
        frame.attrs.update(
            {
                "skipped": skips,
                "restarts": self.restarts,
                "comments": self.comments,
                "skipped_tables": self.skipped,
                "unknown_columns": self.unknown,
                "dropped_lines": self.dropped,
                "notes": self.notes,
                **attrs,
            }
        )
        return frame


class _Sar(_Report):
    """The format for the table engine (parsers/_table.py): rows start with a digit (their time);
    headers are found by `header_marks`, told from rows by `layout`."""

    row_bytes = b"0123456789\n"
    header_words = ()
    header_marks = (
        re.compile(rb"\n\n\S+ +(\S)"),  # the line after a blank line, from its first field after the time
        # a restart, a comment, anywhere among the rows (`layout` says whether it is one); no blank
        # before the word: a literal first byte that rows lack is searched fast
        re.compile(rb"(LINUX) RESTART"),
        re.compile(rb"(COM)[ \n]"),
    )

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, host, tz)
        self.tracks: dict[object, tuple[int, int | None]] = {}  # per table: (day, previous time)
        self.averages: list[dict[str, object]] = []
        self.held: list[tuple[int, str]] = []  # `Average:` rows not read yet (read together: `averages`)
        self.held_layout: Layout | None = None

    def run(self) -> pd.DataFrame:
        self.read()
        self.read_averages()
        return self.frame(averages=self.averages, cpus=self.banner_cpus)

    def layout(self, line_no: int, text: str) -> Layout | Skip:
        self.read_averages()
        tokens = text.split()
        if tokens[:1] and tokens[0] in _SUMMARY_LABELS:
            sod, used = None, 1
        else:
            try:
                sod, used = self.label(line_no, text, tokens)
            except ParseError:  # a banner, or garbage: `structure` says which
                return ROW
        fields = tokens[used:]
        if fields[:2] == ["LINUX", "RESTART"] or (sod is not None and fields[:1] == ["COM"]):
            return STRUCTURE
        if len(fields) < 2 or any(_NUMBER.match(f) for f in fields):
            return ROW
        return self.header(line_no, text, fields, used)

    def structure(self, line_no: int, text: str) -> None:
        tokens = text.split()
        if not tokens:
            return
        current = self.table.current
        if self.held and (current is not self.held_layout or not tokens[0].endswith(":")):
            self.read_averages()
        if text.startswith("Linux") and self.banner(line_no, text):
            self.tracks.clear()  # a new capture: every table starts again on the banner's date
            return
        if tokens[0] in _SUMMARY_LABELS:  # a row of a summary block (its header is the engine's)
            if len(tokens) == 1:
                raise self.error(line_no, text, "a Summary label with nothing after it")
            if isinstance(current, Skip):
                self.table.skips.count += 1
            else:  # under a table read: the last values, neither an interval nor an average
                self.table.skips.add(line_no, text, "a Summary: row (the last values, not an interval)")
            return
        sod, used = self.label(line_no, text, tokens)  # raises on a line that is neither
        fields = tokens[used:]
        if not fields:
            raise self.error(line_no, text, "a time label with nothing after it")
        if fields[:2] == ["LINUX", "RESTART"]:
            if sod is None:
                raise self.error(line_no, text, "a restart line without a time")
            self.day, self.prev_sod = self.tracks.get("restart", (0, None))
            ns = self.stamp(line_no, sod)
            self.tracks["restart"] = (self.day, self.prev_sod)
            self.restart(None if self.date is None else ns, text)
        elif sod is not None and fields[0] == "COM":
            self.comments.append(" ".join(fields[1:]))
        elif isinstance(current, Skip):
            self.table.skips.count += 1  # an `Average:` row of a table skipped: its header is quoted
        elif sod is not None or current is None:
            raise self.error(line_no, text, "a row before any sar table header")
        else:  # read with the next ones: one call for the block (a call costs a millisecond)
            self.held.append((line_no, text))
            self.held_layout = current

    def rows(self, block: Block) -> None:
        self.read_averages()
        sods = self.label_seconds(block.label, block.line_nos)
        host = self.host_name()
        hosts = np.full(len(block), -1 if host is None else self.store.hosts.code(host), dtype=np.int64)
        for plan in block.layout.key:
            names, codes = _instances(block, plan, self.error)
            self.day, self.prev_sod = self.tracks.get(plan.table, (0, None))
            stamps, keys = self.stamp_rows(block.line_nos, sods)
            self.tracks[plan.table] = (self.day, self.prev_sod)
            self.store.take(block, plan, keys, (stamps, hosts, names, codes), self.error, "in one interval")

    def read_averages(self) -> None:
        """The `Average:` rows held, read under their table's layout, kept as records."""
        if not self.held:
            return
        held, self.held, layout = self.held, [], self.held_layout
        assert layout is not None
        block = self.table.read_lines(held, replace(layout, labels=(1,)))
        block.data = "\n".join(text for _, text in held).encode()
        tables = [(plan, *_instances(block, plan, self.error)) for plan in layout.key]
        for k in range(len(block)):
            for plan, names, codes in tables:
                table = _TABLES[plan.table]
                average = {"host": self.host_name(), "table": table.name, "instance": names[codes[k]]}
                average.update(dict.fromkeys(table.columns))  # None: a missing value
                for i, j, factor in plan.fields:
                    average[table.columns[j]] = record_value(float(block.fields[i][k]) * factor)
                self.averages.append(average)


# ---------------------------------------------------------------- tables, headers, rows (sadf too)


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
        fields = tuple((i, *table.slots[name]) for i, name in enumerate(names) if name in table.slots)
        claimed.update(name for name in names if name in table.slots or name == table.instance)
        plans.append(_Plan(t_no, None if table.instance is None else index[table.instance], fields))
    unknown = [name for name in names if name not in claimed] if plans else []
    return plans, unknown, None


@dataclass(frozen=True)
class _Segment:
    """Consecutive rows of one table: UTC ns, codes into `_Store.hosts` / `_Store.instances`, values."""

    stamps: np.ndarray
    hosts: np.ndarray
    instances: np.ndarray
    values: list[np.ndarray | None]  # per table column; None: the header lacks it


class _Store:
    """Rows per table in file order, as numpy segments; one frame at the end, tables in _TABLES order.

    Host and instance names are kept as codes into one table of distinct texts each: a day of
    1-second rows repeats a few names millions of times.
    """

    def __init__(self) -> None:
        self.hosts = Interned()
        self.instances = Interned()
        self.segments: list[list[_Segment]] = [[] for _ in _TABLES]
        self.interval: list[tuple[object, set[str]]] = [(None, set()) for _ in _TABLES]

    def take(
        self,
        block: Block,
        plan: _Plan,
        keys: np.ndarray,
        rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        error: Callable[[int, str, str], ParseError],
        when: str,
    ) -> None:
        """Store one table's rows of a block (`plan`): `rows` are their UTC ns, host codes, distinct
        instances and each row's index into them; `keys` their intervals. An instance listed twice in
        one interval is a ParseError (`error`) at its row: "listed twice `when`"."""
        stamps, hosts, names, codes = rows
        twice, state = self.repeats(plan.table, keys, codes, names)
        if twice is not None:
            why = f"{_TABLES[plan.table].name} {names[codes[twice]]!r} listed twice {when}"
            raise error(int(block.line_nos[twice]), block.text(twice), why)
        self.interval[plan.table] = state
        cols: list[np.ndarray | None] = [None] * len(_TABLES[plan.table].columns)
        for i, j, factor in plan.fields:
            cols[j] = block.fields[i] * factor if factor != 1.0 else block.fields[i]
        instances = _codes(self.instances, names.tolist(), codes)
        self.segments[plan.table].append(_Segment(stamps, hosts, instances, cols))

    def repeats(
        self, t_no: int, keys: np.ndarray, codes: np.ndarray, names: np.ndarray
    ) -> tuple[int | None, tuple[object, set[str]]]:
        """(the first row whose instance its interval listed before, or None; the table's interval state
        after the rows): `interval` holds each table's (last interval key, instances listed in it).

        `keys` are the rows' interval keys, `codes` index `names` (the instances). Nothing changes here:
        the caller commits the returned state once the rows are known to be good.
        """
        at, seen = self.interval[t_no]
        n = len(keys)
        new_run = np.empty(n, dtype=bool)
        new_run[0] = keys[0] != at
        new_run[1:] = keys[1:] != keys[:-1]
        twice = np.array(pd.Series(np.cumsum(new_run) * len(names) + codes).duplicated())
        starts = np.flatnonzero(new_run)
        first_end = starts[0] if len(starts) else n
        if not new_run[0] and seen:  # the rows continue the interval before them: its instances count
            twice[:first_end] |= np.isin(codes[:first_end], [k for k, v in enumerate(names) if v in seen])
        last = starts[-1] if len(starts) else 0
        tail = set(names[codes[last:]].tolist())
        first = np.flatnonzero(twice)
        return (int(first[0]) if len(first) else None), (int(keys[-1]), tail if len(starts) else seen | tail)

    def frame(self) -> pd.DataFrame:
        """One frame, tables in _TABLES order; each column built once (no per-table frames to concat)."""
        counts = [sum(len(s.stamps) for s in segments) for segments in self.segments]
        n = sum(counts)
        if n == 0:
            return _common.empty_frame(SCHEMA)
        segments = [s for table in self.segments for s in table]
        # the columns of tables the capture lacks share one array: copy-on-write copies it before a write
        nan = np.full(n, np.nan)
        metrics: dict[str, object] = {}
        start = 0
        for table, mine, count in zip(_TABLES, self.segments, counts, strict=True):
            end = start + count
            for j, col in enumerate(table.columns):
                if all(s.values[j] is None for s in mine):
                    metrics[col] = pd.Series(nan, copy=False)
                    continue
                parts = [nan[: len(s.stamps)] if s.values[j] is None else s.values[j] for s in mine]
                metrics[col] = np.concatenate([nan[:start], *parts, nan[end:]])  # each row written once
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
        return pd.DataFrame(data, copy=False)  # one block per column: no consolidation copy


def _codes(table: Interned, names: list[str | None], index: np.ndarray) -> np.ndarray:
    """Codes into `table` of the rows' names: `names[index]`, None as -1 (NA)."""
    known = np.array([-1 if name is None else table.code(name) for name in names], dtype=np.int64)
    return known[index]


_FEW_RUNS = 64  # a string column with more runs of one text than this is built row by row


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


def _instances(
    block: Block,
    plan: _Plan,
    error: Callable[[int, str, str], ParseError],
    alias: dict[str, str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct instances of a block's rows of one table, each row's index into them), `alias`
    renaming some (sadf's CPU `-1` is `all`); a CPU neither `all` nor a number is a ParseError
    (`error`) at its first row."""
    if plan.instance is None:
        return np.array([""], dtype=object), np.zeros(len(block), dtype=np.int64)
    column = block.fields[plan.instance]
    names = np.array(column.categories.tolist(), dtype=object)
    codes = np.asarray(column.codes, dtype=np.int64)
    if alias and any(name in alias for name in names.tolist()):
        merged, uniq = pd.factorize(np.array([alias.get(n, n) for n in names.tolist()], dtype=object))
        names, codes = np.asarray(uniq, dtype=object), merged[codes]  # one instance however printed
    if _TABLES[plan.table].name == "cpu":
        bad = [k for k, name in enumerate(names.tolist()) if not _CPU_ID.match(name)]
        if bad:
            row = int(np.flatnonzero(np.isin(codes, bad))[0])
            why = f"CPU {names[codes[row]]!r} is neither `all` nor a number"
            raise error(int(block.line_nos[row]), block.text(row), why)
    return names, codes

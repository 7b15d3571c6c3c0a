"""mpstat: sysstat per-CPU utilisation, `mpstat -P ALL INTERVAL COUNT` (perfkit runs `mpstat -P ALL 1 N`).

Reads the plain-text report of sysstat 12.6.1 (and any version printing the same `CPU %usr ...`
header): a `Linux 6.18.44 (host) <TAB>2026-11-23 <TAB>_x86_64_<TAB>(2 CPU)` banner that carries the
only date, then per interval a header line `HH:MM:SS CPU %usr %nice %sys %iowait %irq %soft %steal
%guest %gnice %idle` and one row for `all` and one per CPU number, and at the end the same table
labelled `Average:`. Columns are mapped by header name, never by position: a column the version does
not print is NaN, a header name this parser does not know is listed in `unknown_columns`.

Locales (captures should be `LC_ALL=C S_TIME_FORMAT=ISO`; foreign archives are not): dates
`2026-11-23` (ISO), `11/23/26` (C), `11/23/2026` (en_US), `23.11.2026` (de_DE), `2026年11月23日`
(zh_CN); clocks `06:56:01`, `06:56:03 AM` (en_US; AM/PM read by hand, `12:xx AM` is 00:xx),
`06时56分07秒` (zh_CN); `Average:`, `Durchschn.:` (de_DE), `平均时间:` (zh_CN) label the averages;
decimal commas (`49,75`, de_DE) are read as such once the whole file is seen to use them. A file
mixing `,` and `.`, or using commas with a slash date (dd/mm or mm/dd cannot be told apart), is a
ParseError saying "capture not taken under LC_ALL=C".

Rows carry only a time of day: the date is the banner's, rolled forward a day when the clock goes
back by more than an hour (midnight); a smaller step back is a clock step, kept as printed and noted
in `notes`. Times are wall clock in `tz`.

Schema (one row per CPU per interval; `Average:` rows are never in the frame):

| column | dtype | unit / meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | end of the interval (the row's time); NaT without a banner |
| host | string | the `host` argument, else the host in the banner |
| cpu | string | `all` or the CPU number as printed (`0`, `1`, ...) |
| usr_pct, nice_pct, sys_pct | float64 | % of CPU time in user, niced user, kernel code |
| iowait_pct | float64 | % idle with outstanding disk IO |
| irq_pct, soft_pct | float64 | % servicing hard / soft interrupts |
| steal_pct | float64 | % stolen by the hypervisor |
| guest_pct, gnice_pct | float64 | % running a (niced) virtual CPU; also counted in usr/nice by the kernel |
| idle_pct | float64 | % idle without outstanding IO |

What it reads beside its rows: `EXTRAS` (below).

`mpstat -T` adds `CORE SOCK NODE` after `CPU` (listed in `unknown_columns`; the `all` row leaves
them blank and is read). `mpstat -A` / `-I` / `-N` print more tables per interval (per-NODE
utilisation, `intr/s`, per-IRQ and soft-IRQ rates per CPU): the CPU table is read, every other
table skipped as a block (parsers/_common.Skips, `skipped`: its header quoted, its rows
counted); a capture of none but such tables is refused (nothing readable).
Epoch-second labels (`mpstat -U`, sysstat 12.7: `1591016001   all ...`) are read as UTC, whatever
`tz` (parsers/_sysstat.py `epoch_labels`, shared with pidstat -h).
Not read: per-NODE rows (the CPU table holds the machine's), `-o JSON`. Tested on:
tests/fixtures/mpstat/*.txt (see README.md there).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._common import Extras
from ._sysstat import Sysstat, label_width, record_value, utc
from ._table import ROW, Block, Layout, Skip, Table


@dataclass(frozen=True)
class MpstatExtras(Extras):
    """What mpstat reads beside its rows (see `_common.Extras`)."""

    # the `Average:` rows, as records with the `SCHEMA` columns but `timestamp`; None for a missing value
    averages: list[dict] = field(default_factory=list)
    # the banner's `(N CPU)`; None without a banner
    cpus: int | None = None


EXTRAS = MpstatExtras

KIND = "mpstat"

_METRICS = {
    f"%{name}": f"{name}_pct"
    for name in ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle")
}
_COLS = list(_METRICS.values())

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "cpu": "string",
    **{col: "float64" for col in _COLS},
}

_SNIFF_HEADER = re.compile(
    r"\bCPU(?:\s+(?:CORE|SOCK|NODE))*\s+%usr\s+%nice\s+%sys\s+%iowait\s+%irq\b"
)  # sar -u ALL: %steal before %irq; -T: topology columns after CPU
_CPU_ID = re.compile(r"^(?:all|\d+)$")
_TOPOLOGY = ("CORE", "SOCK", "NODE")


def sniff(text: str) -> bool:
    """True when the first lines hold mpstat's CPU header (`CPU %usr %nice %sys %iowait %irq ...`)."""
    return any(_SNIFF_HEADER.search(line) for line in text[: _common.SNIFF_BYTES].splitlines()[:60])


def parse(source: _common.Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an `mpstat -P ALL` capture into one row per CPU per interval.

    Args:
        source: a path, a text or binary stream, or the capture's text.
        host: the host the capture comes from (the manifest's); default: the banner's host name.
        tz: the host's time zone: rows print wall-clock time of day.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: garbage mid-file, a row whose field count does not match its header, a CPU listed
            twice in one interval, a foreign locale it cannot read safely.
    """
    return _Mpstat(source, host, tz).run()


@dataclass(frozen=True)
class _Plan:
    """What a CPU header's fields are: (field, column) of each metric; topology fields after CPU."""

    pairs: tuple[tuple[int, int], ...]
    topology: int


class _Mpstat(Sysstat):
    """The format for the table engine (parsers/_table.py): rows start with a digit (their time),
    headers hold `CPU` (or `NODE`: -A's per-NODE table, skipped)."""

    row_bytes = b"0123456789\n"
    header_words = (b"CPU", b"NODE")

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.epoch_labels = True  # `mpstat -U` (sysstat 12.7): seconds since the epoch as labels
        self.host = host
        self.table = Table(source, KIND, self, self.numbers)
        self.table.odd_row = self._odd_row
        self.current: Layout | Skip | None = None
        self.unknown: list[str] = []
        self.averages: list[dict[str, object]] = []
        self.seen_at: int | None = None  # the last interval read (seconds since the first midnight)
        self.seen: set[str] = set()  # its CPUs
        self.parts = _common.Parts(len(_COLS) + 2)  # stamps, CPU codes, values
        self.cpu_names: dict[str, int] = {}

    def run(self) -> pd.DataFrame:
        self.read()
        return self.assemble()

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout | Skip:
        tokens = text.split()
        try:
            _, used = self.label(line_no, text, tokens)
        except ParseError:  # the banner's `(2 CPU)`, or garbage: `structure` says which
            return ROW
        fields = tokens[used:]
        if not fields or fields[0] not in ("CPU", "NODE"):
            return ROW
        if fields[0] != "CPU" or not any(name in _METRICS for name in fields):
            # -A/-I/-N: interrupts per CPU, per-IRQ and soft-IRQ rates, per-NODE utilisation (the CPU
            # table of the same capture holds the machine's): skipped, counted, header quoted
            what = "per-NODE utilisation" if fields[0] == "NODE" else "interrupts"
            self.current = Skip(f"mpstat {what} table: not read")
            return self.current
        topology = len(list(itertools.takewhile(lambda name: name in _TOPOLOGY, fields[1:])))
        pairs: list[tuple[int, int]] = []
        seen: set[str] = set()
        for i, name in enumerate(fields[1:], 1):
            if name in seen:
                raise self.error(line_no, text, f"column {name!r} twice in the header")
            seen.add(name)
            if name in _METRICS:
                pairs.append((i, _COLS.index(_METRICS[name])))
            elif name not in self.unknown:
                self.unknown.append(name)
        kinds = "".join("f" if name in _METRICS else "t" for name in fields)  # unknown columns: not read
        self.current = Layout(kinds, labels=(1, 2), key=_Plan(tuple(pairs), topology))
        return self.current

    def structure(self, line_no: int, text: str) -> None:
        tokens = text.split()
        if not tokens:
            return
        if text.startswith("Linux") and self.banner(line_no, text):
            return
        sod, _ = self.label(line_no, text, tokens)  # raises on a line that is neither
        if sod is not None or self.current is None:
            raise self.error(line_no, text, "a row before any mpstat `CPU %usr ...` header")
        if isinstance(self.current, Skip):
            self.table.skips.count += 1  # an `Average:` row of a table skipped: its header is quoted
            return
        block = self.table.read_lines([(line_no, text)], self.current)
        self._check_cpus(block)
        average: dict[str, object] = {
            "host": self.host_name(),
            "cpu": block.fields[0][0],
            **dict.fromkeys(_COLS),
        }
        for i, j in self.current.key.pairs:
            average[_COLS[j]] = record_value(float(block.fields[i][0]))
        self.averages.append(average)

    def _odd_row(self, line_no: int, text: str, tokens: list[str], layout: Layout) -> list[str] | None:
        """-T: the `all` row leaves CORE SOCK NODE blank."""
        used = label_width(text)
        topology = layout.key.topology
        fields = tokens[used:]
        if topology and fields[:1] == ["all"] and len(fields) == len(layout.kinds) - topology:
            return [*tokens[:used], "all", *["-"] * topology, *fields[1:]]
        return None

    def rows(self, block: Block) -> None:
        cpus = self._check_cpus(block)
        sods = self.label_seconds(block.label, block.line_nos)
        stamps, keys = self.stamp_rows(block.line_nos, sods)
        codes = np.asarray(cpus.codes, dtype=np.int64)
        run = np.cumsum(np.concatenate(([0], keys[1:] != keys[:-1])))  # intervals of this block
        continues = (run == 0) & (keys[0] == self.seen_at)  # the interval the last block ended in
        names = cpus.categories
        listed = continues & np.isin(codes, [k for k, c in enumerate(names) if c in self.seen])
        twice = pd.Series(run * len(names) + codes).duplicated().to_numpy() | listed
        if twice.any():
            i = int(np.argmax(twice))
            raise self.error(
                int(block.line_nos[i]), "", f"CPU {names[codes[i]]} listed twice in the same interval"
            )
        last = run == run[-1]
        seen = set(names[np.unique(codes[last])])
        self.seen = seen | self.seen if keys[-1] == self.seen_at else seen
        self.seen_at = int(keys[-1])
        remap = np.array([self.cpu_names.setdefault(c, len(self.cpu_names)) for c in names], dtype=np.int32)
        values = [np.full(len(block), np.nan)] * len(_COLS)
        for i, j in block.layout.key.pairs:
            values[j] = block.fields[i]
        self.parts.add([stamps, remap[codes], *values])

    def _check_cpus(self, block: Block) -> pd.Categorical:
        cpus = block.fields[0]
        for k, name in enumerate(cpus.categories):
            if not _CPU_ID.match(name):
                i = int(np.flatnonzero(np.asarray(cpus.codes) == k)[0])
                raise self.error(int(block.line_nos[i]), "", f"CPU {name!r} is neither `all` nor a number")
        return cpus

    # ------------------------------------------------------------ the frame

    def assemble(self) -> pd.DataFrame:
        skips = self.table.skips
        attrs = {
            "averages": self.averages,
            "unknown_columns": self.unknown,
            "dropped_lines": self.dropped,
            "notes": self.notes,
            "cpus": self.banner_cpus,
            "skipped": skips,
        }
        n = self.parts.rows
        skips.refuse_if_nothing_read(n + len(self.averages), self.lines)
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
        else:
            stamps, codes, *values = self.parts.columns()
            data: dict[str, object] = {
                "timestamp": utc(stamps),
                "host": _common.text_column([self.host_name()], np.zeros(n, dtype=np.intp)),
                "cpu": _common.text_column(list(self.cpu_names), codes),
                **dict(zip(_COLS, values, strict=True)),
            }
            frame = pd.DataFrame(data, copy=False)  # one block per column, no copy
        frame.attrs.update(attrs)
        return frame

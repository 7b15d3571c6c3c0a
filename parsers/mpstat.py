"""mpstat: sysstat per-CPU utilisation, `mpstat -P ALL INTERVAL COUNT` (perfkit runs `mpstat -P ALL 1 N`).

Reads the plain-text report of sysstat 12.6.1 (and any version printing the same `CPU %usr ...`
header): a `Linux 6.18.44 (host) <TAB>2026-11-23 <TAB>_x86_64_<TAB>(2 CPU)` banner that carries the
only date, then per interval a header line `HH:MM:SS CPU %usr %nice %sys %iowait %irq %soft %steal
%guest %gnice %idle` and one row for `all` and one per CPU number, and at the end the same table
labelled `Average:`. Columns are mapped by header name, never by position: a column the version does
not print is NaN, a header name this parser does not know is listed in `attrs["unknown_columns"]`.

Locales (the capture should be `LC_ALL=C S_TIME_FORMAT=ISO`, but foreign archives are not):

- dates `2026-11-23` (ISO), `11/23/26` (C), `11/23/2026` (en_US), `23.11.2026` (de_DE),
  `2026年11月23日` (zh_CN);
- clocks `06:56:01`, `06:56:03 AM` (en_US; AM/PM read by hand, `12:xx AM` is 00:xx), `06时56分07秒`
  (zh_CN);
- `Average:`, `Durchschn.:` (de_DE), `平均时间:` (zh_CN) label the averages;
- decimal commas (`49,75`, de_DE) are read as such, once the whole file is seen to use them; a file
  mixing `,` and `.`, or using commas with a slash date (dd/mm or mm/dd cannot be told apart), is a
  ParseError saying "capture not taken under LC_ALL=C".

Rows carry only a time of day: the date is the banner's, rolled forward a day when the clock goes
back by more than an hour (midnight); a smaller step back is a clock step, kept as printed and noted
in `attrs["notes"]`. Times are wall clock in `tz`.

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

`df.attrs`: `averages` (the `Average:` rows as a list of records with the columns above but
`timestamp`; None for a missing value), `unknown_columns`, `dropped_lines` (a last line cut
mid-write), `notes`, `cpus` (the banner's `(N CPU)`, None without a banner).

`mpstat -T` adds `CORE SOCK NODE` after `CPU` (listed in `unknown_columns`; the `all` row leaves
them blank and is read). `mpstat -A` / `-I` / `-N` print more tables per interval (per-NODE
utilisation, `intr/s`, per-IRQ and soft-IRQ rates per CPU): the CPU table is read, every other
table skipped as a block (parsers/_common.Skips, `attrs["skipped"]`: its header quoted, its rows
counted); a capture of none but such tables is refused (nothing readable).
Epoch-second labels (`mpstat -U`, sysstat 12.7: `1591016001   all ...`) are read as UTC, whatever
`tz` (parsers/_sysstat.py `epoch_labels`, shared with pidstat -h).
Not read: per-NODE rows (the CPU table holds the machine's), `-o JSON`. Tested on:
tests/fixtures/mpstat/*.txt (see README.md there).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd

from . import _common
from ._chunks import ByteScan, Rows
from ._sysstat import (
    CHUNK_ROWS,
    Sysstat,
    iso_clocks,
    numbers_as_printed,
    plain_bytes,
    read_chunk,
    record_value,
    utc,
)

KIND = "mpstat"

_METRICS = {
    "%usr": "usr_pct",
    "%nice": "nice_pct",
    "%sys": "sys_pct",
    "%iowait": "iowait_pct",
    "%irq": "irq_pct",
    "%soft": "soft_pct",
    "%steal": "steal_pct",
    "%guest": "guest_pct",
    "%gnice": "gnice_pct",
    "%idle": "idle_pct",
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
# lines read one by one: those starting with neither a digit nor a line end (banner, `Average:`);
# rows, headers (time + `CPU`) and blank lines come in runs, read by `_chunk` in bulk
_ROW_BYTES = b"0123456789\n"
_HEADER_WORD = re.compile(rb"CPU")


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
        A frame with exactly the `SCHEMA` columns; `attrs` `averages`, `unknown_columns`,
        `dropped_lines`, `notes`.

    Raises:
        ParseError: garbage mid-file, a row whose field count does not match its header, a CPU listed
            twice in one interval, a table this parser does not read, a foreign locale it cannot
            read safely.
    """
    state = _Mpstat(source, host, tz)
    return state.run()


# ---------------------------------------------------------------- the sysstat line grammar
# Shared with parsers/pidstat.py: every time-only sysstat report (mpstat, pidstat, sar) has the same
# banner, the same time labels and the same locale damage.


class _Mpstat(Sysstat):
    """No Python call per line: `ByteScan` hands over runs of rows, headers and blank lines as bytes.

    A run is cut at its last header into chunks of whole intervals; `_chunk` takes the repeated
    headers and blank lines out in bulk and `_fast` reads the rows with pandas. A chunk either
    cannot prove it reads as the per-line grammar would goes through `walk` line by line, which
    also names the first bad line; so do banners and `Average:` lines, after the rows above them.
    """

    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.epoch_labels = True  # `mpstat -U` (sysstat 12.7): seconds since the epoch as labels
        self.host = host
        self.plan: list[tuple[int, int]] | None = None  # (field after the label, metric index)
        self.fields: list[str] | None = None  # the current header's fields after the label
        self.width = 0
        self.header_line_no = 0
        self.unknown: list[str] = []
        self.averages: list[dict[str, object]] = []
        self.seen: set[str] = set()  # CPUs of the current interval
        self.seen_at: int | None = None
        self.pending: list[Rows] = []  # runs of rows, headers and blank lines not yet read
        self.pending_lines = 0
        # the frame, column by column, grown in place (realloc: no second copy at the end)
        self.parts = _common.Parts(len(_COLS) + 2)  # the frame's columns: stamps, CPU codes, values
        self.cpu_names: dict[str, int] = {}
        self.skips = _common.Skips()
        self.skip_reason: str | None = None  # the rows below belong to a table not read
        self.topology = 0  # -T: CORE SOCK NODE after CPU, left blank on the `all` row

    def run(self) -> pd.DataFrame:
        scan = ByteScan(self.source, KIND, row_bytes=_ROW_BYTES)
        self.lines = scan.lines
        for item in scan:
            if isinstance(item, Rows):
                self.pending.append(item)
                self.pending_lines += item.count
                if self.pending_lines >= CHUNK_ROWS:
                    self.flush(final=False)
            else:
                self.flush()
                self.walk([item])
        if scan.cut is not None:
            self.cut_last(*scan.cut, scan.lines)
        self.flush()
        return self.assemble()

    def structure(self, line_no: int, line: str) -> bool:
        """A line that is not a plain data row: blank, banner, header (False), or a row in a rarer form
        (True: the caller reads it as a row)."""
        tokens = line.split()
        if not tokens:
            return False
        if line.startswith("Linux") and self.banner(line_no, line):
            return False
        sod, used = self.label(line_no, line, tokens)
        fields = tokens[used:]
        if fields and fields[0] in ("CPU", "NODE"):
            if fields != self.fields or sod is None:
                self.header(line_no, line, fields)  # averages go apart
            self.header_line_no = line_no
            return False
        return True

    def header(self, line_no: int, line: str, fields: list[str]) -> None:
        if fields[0] != "CPU" or not any(name in _METRICS for name in fields):
            # -A/-I/-N: interrupts per CPU, per-IRQ and soft-IRQ rates, per-NODE utilisation (the
            # CPU table of the same capture holds the machine's): skipped, counted, header quoted
            what = "per-NODE utilisation" if fields[0] == "NODE" else "interrupts"
            self.skip_reason = f"mpstat {what} table: not read"
            self.skips.add(line_no, line, self.skip_reason)
            self.fields = None
            return
        self.skip_reason = None
        topology = list(itertools.takewhile(lambda name: name in ("CORE", "SOCK", "NODE"), fields[1:]))
        self.topology = len(topology)
        plan: list[tuple[int, int]] = []
        seen: set[str] = set()
        for i, name in enumerate(fields[1:], 1):
            if name in seen:
                raise self.error(line_no, line, f"column {name!r} twice in the header")
            seen.add(name)
            if name in _METRICS:
                plan.append((i, _COLS.index(_METRICS[name])))
            elif name not in self.unknown:
                self.unknown.append(name)
        if not plan:
            raise self.error(
                line_no, line, "not a CPU utilisation table (mpstat -I/-N/-A tables are not read)"
            )
        self.plan, self.fields, self.width, self.header_line_no = plan, fields, len(fields), line_no

    # ------------------------------------------------------------ chunks

    def flush(self, *, final: bool = True) -> None:
        """Read the pending lines; unless `final`, only up to the last header: a chunk read by pandas
        must start with an interval (the per-line state of one going on is not carried over)."""
        if not self.pending:
            return
        raw = b"".join(r.data for r in self.pending)
        first_no = self.pending[0].first_no
        self.pending.clear()  # taken first: an error below must not see them again
        self.pending_lines = 0
        buf = np.frombuffer(raw, dtype=np.uint8)
        ends = np.flatnonzero(buf == 10)  # the runs are whole lines
        starts = np.concatenate(([0], ends[:-1] + 1))
        cpu_at = np.array([m.start() for m in _HEADER_WORD.finditer(raw)], dtype=np.int64)
        heads = np.searchsorted(ends, cpu_at)  # the line holding each `CPU`
        if not final and len(heads) and heads[-1] > 0:
            last = int(heads[-1])
            self.pending.append(Rows(raw[starts[last] :], first_no + last, len(ends) - last))
            self.pending_lines = len(ends) - last
            raw, ends, starts = raw[: starts[last]], ends[:last], starts[:last]
            keep = heads < last
            cpu_at, heads = cpu_at[keep], heads[keep]
        if not self._chunk(raw, first_no, starts, ends, heads, cpu_at):
            text = raw.decode("utf-8", "replace").split("\n")[:-1]
            self.walk(list(enumerate(text, first_no)))

    def _chunk(
        self,
        raw: bytes,
        first_no: int,
        starts: np.ndarray,
        ends: np.ndarray,
        heads: np.ndarray,
        cpu_at: np.ndarray,
    ) -> bool:
        """Take the repeated headers and blank lines out of a chunk in bulk and read its rows with
        pandas; False (nothing changed but perhaps the plan its first header sets) if it cannot
        prove that gives what `walk` would."""
        if len(heads) != len(np.unique(heads)):
            return False
        rows = np.ones(len(ends), dtype=bool)
        rows[heads] = False
        rows[starts == ends] = False  # blank lines
        lines = np.flatnonzero(rows)
        if len(heads):
            # every header ends like the first (`CPU` once in it, so each occurrence is one header)
            tail = raw[cpu_at[0] : ends[heads[0]] + 1]
            if tail.count(b"CPU") != 1 or raw.count(tail) != len(heads):
                return False
            if not self._header_labels(raw, starts[heads], cpu_at):
                return False
            fields = tail.decode("utf-8", "replace").split()
            if fields[0] != "CPU" or not any(name in _METRICS for name in fields):
                return False  # a table not read: the walk skips it
            if fields != self.fields:
                if len(lines) and lines[0] < heads[0]:
                    return False  # rows read with the previous plan above the new header
                first = int(heads[0])
                self.header(
                    first_no + first, raw[starts[first] : ends[first]].decode("utf-8", "replace"), fields
                )
        if len(lines):
            gaps = np.flatnonzero(np.diff(lines) != 1)
            run_first = lines[np.concatenate(([0], gaps + 1))]
            run_last = lines[np.concatenate((gaps, [len(lines) - 1]))]
            data = b"".join(
                raw[a : b + 1]
                for a, b in zip(starts[run_first].tolist(), ends[run_last].tolist(), strict=True)
            )
            if not self._fast(data, len(lines), first_no + lines):
                return False
        if len(heads):
            self.header_line_no = first_no + int(heads[-1])
        return True

    def _header_labels(self, raw: bytes, starts: np.ndarray, cpu_at: np.ndarray) -> bool:
        """True when the text before `CPU` in each header is a time `label()` reads (and no more)."""
        width = cpu_at - starts
        size = int(width[0])
        if size > 8 and (width == size).all():  # the usual `HH:MM:SS` and blanks: numpy
            block = np.frombuffer(raw, dtype=np.uint8)[starts[:, None] + np.arange(size)]
            if (block[:, 8:] == ord(" ")).all() and iso_clocks(block[:, :8])[0].all():
                return True
        labels = {
            tuple(raw[a:b].decode("utf-8", "replace").split())
            for a, b in zip(starts.tolist(), cpu_at.tolist(), strict=True)
        }
        return self.label_sods(list(labels)) is not None

    def _fast(self, data: bytes, n: int, line_nos: np.ndarray) -> bool:
        """Read a chunk with pandas and keep it, or return False having changed nothing."""
        plan, width = self.plan, self.width
        if (
            plan is None or len(plan) != width - 1 or self.skip_reason is not None
        ):  # unknown columns: their values are not read
            return False
        nlab = len(data[: data.find(b"\n")].split()) - width
        mark = self.chunk_mark([data])
        if nlab not in (1, 2) or mark is None or not plain_bytes(data, b"al"):
            return False
        df = read_chunk(data, nlab + width, list(range(nlab + 1)), mark)
        if df is None or len(df) != n:
            return False
        numbers = [df[nlab + i] for i, _ in plan]
        if not numbers_as_printed(data, mark, numbers):
            return False
        cpus = df[nlab].array
        if not all(_CPU_ID.match(c) for c in cpus.categories):
            return False
        sods = self._label_seconds(df, nlab)
        if sods is None:
            return False
        clock = self.clock_state()
        stamps, keys = self.stamp_rows(line_nos, sods)
        # a CPU twice in one interval (a run of equal keys) is an error `_row` names
        run = np.cumsum(np.concatenate(([0], keys[1:] != keys[:-1])))
        codes = cpus.codes.astype(np.int64)
        pairs = run * len(cpus.categories) + codes
        if keys[0] == self.seen_at or _repeats(pairs):
            self.restore_clock(clock)
            return False
        self.commit_mark([data], mark)
        last = run == run[-1]
        self.seen_at = int(keys[-1])
        self.seen = set(cpus.categories[np.unique(codes[last])])
        remap = np.array([self._cpu_code(c) for c in cpus.categories], dtype=np.int32)
        columns: list[np.ndarray | float] = [np.nan] * len(_COLS)
        for (_, j), col in zip(plan, numbers, strict=True):
            columns[j] = col.to_numpy(dtype=np.float64)
        self._append(stamps, remap[codes], columns)
        return True

    def _append(self, stamps: np.ndarray, codes: np.ndarray, columns: list[np.ndarray | float]) -> None:
        n = len(stamps)
        values = [np.full(n, col) if isinstance(col, float) else col for col in columns]
        self.parts.add([stamps, codes, *values])

    def _label_seconds(self, df: pd.DataFrame, nlab: int) -> np.ndarray | None:
        """Seconds since midnight per row, from the distinct labels of the chunk."""
        first = df[0].array
        if nlab == 1:
            tokens = [(t,) for t in first.categories.tolist()]
            codes = first.codes
        else:
            second = df[1].array
            pair = first.codes.astype(np.int64) * len(second.categories) + second.codes
            uniq, codes = np.unique(pair, return_inverse=True)
            n2 = len(second.categories)
            tokens = [(first.categories[u // n2], second.categories[u % n2]) for u in uniq.tolist()]
        sods = self.label_sods(tokens)
        return None if sods is None else np.array(sods, dtype=np.int64)[codes]

    def walk(self, items: list[tuple[int, str]]) -> None:
        """Lines by the per-line grammar, in file order: the rare forms, and chunks `_chunk` refused."""
        stamps: list[int] = []
        cpus: list[int] = []
        values: list[list[float]] = [[] for _ in _COLS]
        for line_no, line in items:
            if not (line[:1].isdigit() and "CPU" not in line and "NODE" not in line) and not self.structure(
                line_no, line
            ):
                continue
            if self.skip_reason is not None:
                self.skips.count += 1  # a row of the table skipped: its header is quoted
                continue
            got = self._row(line_no, line, self.header_line_no)
            if got is not None:
                stamps.append(got[0])
                cpus.append(self._cpu_code(got[1]))
                for col, v in zip(values, got[2], strict=True):
                    col.append(v)
        if stamps:
            self._append(
                np.array(stamps, dtype=np.int64),
                np.array(cpus, dtype=np.int32),
                [np.array(col, dtype=np.float64) for col in values],
            )

    def _row(self, line_no: int, line: str, header_line_no: int) -> tuple[int, str, list[float]] | None:
        """One data row by the per-line grammar: (UTC ns, CPU, values), or None for an `Average:` row."""
        tokens = line.split()
        sod, used = self.label(line_no, line, tokens)
        fields = tokens[used:]
        if self.plan is None:
            raise self.error(line_no, line, "a row before any mpstat `CPU %usr ...` header")
        if self.topology and fields[:1] == ["all"] and len(fields) == self.width - self.topology:
            fields = [fields[0], *["-"] * self.topology, *fields[1:]]  # -T: `all` has no core/socket/node
        if len(fields) != self.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields after the time, the header at line {header_line_no} has {self.width}",
            )
        cpu = fields[0]
        if not _CPU_ID.match(cpu):
            raise self.error(line_no, line, f"CPU {cpu!r} is neither `all` nor a number")
        row = [float("nan")] * len(_COLS)
        for i, j in self.plan:
            row[j] = self.number(line_no, line, fields[i])
        if sod is None:
            self.averages.append(
                {
                    "host": self.host_name(),
                    "cpu": cpu,
                    **{c: record_value(v) for c, v in zip(_COLS, row, strict=True)},
                }
            )
            return None
        ns = self.stamp(line_no, sod)
        key = sod + 86400 * self.day
        if key != self.seen_at:
            self.seen_at = key
            self.seen = set()
        if cpu in self.seen:
            raise self.error(line_no, line, f"CPU {cpu} listed twice in the same interval")
        self.seen.add(cpu)
        return ns, cpu, row

    def _cpu_code(self, name: str) -> int:
        return self.cpu_names.setdefault(name, len(self.cpu_names))

    def host_name(self) -> str | None:
        return self.host if self.host is not None else self.banner_host

    def assemble(self) -> pd.DataFrame:
        attrs = {
            "averages": self.averages,
            "unknown_columns": self.unknown,
            "dropped_lines": self.dropped,
            "notes": self.notes,
            "cpus": self.banner_cpus,
            "skipped": self.skips,
        }
        n = self.parts.rows
        self.skips.refuse_if_nothing_read(n + len(self.averages), self.lines)
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
            if {c: str(t) for c, t in frame.dtypes.items()} != SCHEMA:  # safety net; copies the frame
                frame = _common.coerce(frame, SCHEMA)
        frame.attrs.update(attrs)
        return frame


def _repeats(values: np.ndarray) -> bool:
    """True when a non-negative int appears twice; a count per value where that is cheap (it is here:
    values are interval × CPUs + CPU, so their range is about the number of rows), else a hash."""
    top = int(values.max())
    if top < 4 * len(values):
        return bool(np.bincount(values, minlength=top + 1).max() > 1)
    return len(np.unique(values)) != len(values)

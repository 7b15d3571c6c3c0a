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
mid-write), `notes`.

Not read: `mpstat -I` / `-N` / `-A` tables (other headers), `-o JSON`. Tested on:
tests/fixtures/mpstat/*.txt (see README.md there).
"""

from __future__ import annotations

import re
from array import array

import numpy as np
import pandas as pd

from . import _common
from ._sysstat import Sysstat, record_value, utc

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
    r"\bCPU\s+%usr\s+%nice\s+%sys\s+%iowait\s+%irq\b"
)  # sar -u ALL: %steal before %irq
_CPU_ID = re.compile(r"^(?:all|\d+)$")


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
    def __init__(self, source: _common.Source, host: str | None, tz: str):
        super().__init__(KIND, source, tz)
        self.host = host
        self.plan: list[tuple[int, int]] | None = None  # (field after the label, metric index)
        self.width = 0
        self.header_line_no = 0
        self.unknown: list[str] = []
        self.stamps = array("q")
        self.cpus: list[str] = []
        self.values = [array("d") for _ in _COLS]
        self.averages: list[dict[str, object]] = []
        self.seen: set[str] = set()  # CPUs of the current interval
        self.seen_at: int | None = None

    def run(self) -> pd.DataFrame:
        _common.feed_lines(self.source, KIND, self.feed, self.cut_last)
        return self.assemble()

    def feed(self, line_no: int, line: str, lines: _common.Lines) -> None:
        self.lines = lines  # errors name the path the walk read
        tokens = line.split()
        if not tokens or self.banner(line_no, line):
            return
        sod, used = self.label(line_no, line, tokens)
        fields = tokens[used:]
        if fields and fields[0] == "CPU":
            self.header(line_no, line, fields)
            return
        if self.plan is None:
            raise self.error(line_no, line, "a row before any mpstat `CPU %usr ...` header")
        if len(fields) != self.width:
            raise self.error(
                line_no,
                line,
                f"{len(fields)} fields after the time, "
                f"the header at line {self.header_line_no} has {self.width}",
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
            return
        ns = self.stamp(line_no, sod)
        key = sod + 86400 * self.day
        if key != self.seen_at:
            self.seen_at = key
            self.seen = set()
        if cpu in self.seen:
            raise self.error(line_no, line, f"CPU {cpu} listed twice in the same interval")
        self.seen.add(cpu)
        self.stamps.append(ns)
        self.cpus.append(cpu)
        for col, v in zip(self.values, row, strict=True):
            col.append(v)

    def header(self, line_no: int, line: str, fields: list[str]) -> None:
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
        self.plan, self.width, self.header_line_no = plan, len(fields), line_no

    def host_name(self) -> str | None:
        return self.host if self.host is not None else self.banner_host

    def assemble(self) -> pd.DataFrame:
        attrs = {
            "averages": self.averages,
            "unknown_columns": self.unknown,
            "dropped_lines": self.dropped,
            "notes": self.notes,
        }
        n = len(self.cpus)
        if n == 0:
            frame = _common.empty_frame(SCHEMA)
        else:
            data: dict[str, object] = {
                "timestamp": utc(self.stamps),
                "host": pd.array([self.host_name()] * n, dtype="string"),
                "cpu": pd.array(self.cpus, dtype="string"),
            }
            for col, values in zip(_COLS, self.values, strict=True):
                data[col] = np.frombuffer(values, dtype=np.float64)
            frame = _common.coerce(pd.DataFrame(data), SCHEMA)
        frame.attrs.update(attrs)
        return frame

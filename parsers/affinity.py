"""affinity: each process's name and the CPUs it may run on, from `/proc/PID/status`.

perfkit runs (collectors/captures.py, the `affinity` capture, once at the start)::

    grep -s -H -e '^Name:' -e '^Cpus_allowed_list:' /proc/[0-9]*/status

two lines per process, in the shell's glob order (`1`, `10`, `100`, `2` ...), a TAB after the field::

    /proc/23128/status:Name:	mariadbd
    /proc/23128/status:Cpus_allowed_list:	0-1

`Name` is the kernel's `comm` (at most 15 bytes; only a newline and a backslash are escaped, so a
name may hold spaces and TABs: everything after the first TAB is kept verbatim).
`Cpus_allowed_list` is the main thread's affinity (sched_setaffinity, taskset, numactl
--cpunodebind, a cpuset cgroup) as the kernel's `%*pbl` list (`0-3,8-11`); threads may narrow
their own further, and /proc/[0-9]* lists processes only. A process that exits between the glob
and grep's read is absent (`-s`). The text is the same under every locale.

Schema (one row per process, in file order):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| pid | Int64 | process id |
| process | string | `Name:` as printed; NA when the capture holds only the CPU line |
| cpus_allowed | string | `Cpus_allowed_list:` as printed (`0-3,8-11`); NA when absent |
| cpu_count | Int64 | CPUs in that list |

attrs: dropped_lines (a last line cut mid-write: `0-1` may have been `0-15`).
`cpu_list(text)` expands such a list (and numactl's `0 1 2 3`) into CPU numbers for the rules.
Tested on: tests/fixtures/affinity/ (see README.md there).
"""

from __future__ import annotations

import re

import pandas as pd

from ._common import Lines, Source, feed_lines, records_frame

KIND = "affinity"

SCHEMA: dict[str, str] = {
    "host": "string",
    "pid": "Int64",
    "process": "string",
    "cpus_allowed": "string",
    "cpu_count": "Int64",
}

_LINE = re.compile(r"^/proc/(\d{1,10})/status:(Name|Cpus_allowed_list):\t(.*)$")
_KERNEL_LIST = re.compile(r"^\d{1,7}(?:-\d{1,7})?(?:,\d{1,7}(?:-\d{1,7})?)*$")
_ITEM = re.compile(r"^(\d{1,7})(?:-(\d{1,7}))?$")
_MAX_CPU = 1 << 20  # the kernel's NR_CPUS is far smaller: bigger is garbage
_FIELDS = {"Name": "process", "Cpus_allowed_list": "cpus_allowed"}


def sniff(text: str) -> bool:
    """The first non-blank line is grep's `/proc/PID/status:Name:<TAB>...` (or the CPU line)."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            return bool(_LINE.match(line))
    return False


def cpu_list(text: str) -> list[int]:
    """`0-3,8,10-11` (the kernel's list) or `0 1 2 3` (numactl's) -> sorted CPU numbers.

    Raises:
        ValueError: an item that is not a CPU number or an ascending range.
    """
    out: set[int] = set()
    for item in text.replace(",", " ").split():
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"bad CPU list item {item!r}")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo or hi >= _MAX_CPU:
            raise ValueError(f"bad CPU range {item!r}")
        out.update(range(lo, hi + 1))
    return sorted(out)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row per process; `tz` is unused (no time).

    Raises:
        ParseError: a line that is not grep's `/proc/PID/status:Field:<TAB>value`, a field printed
            twice for one process, or a CPU list that is not a list of CPUs.
    """
    rows: dict[int, dict[str, object]] = {}
    dropped = 0

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if not line.strip():
            return
        m = _LINE.match(line)
        if m is None:
            raise lines.error(
                line_no, line, "not grep's `/proc/PID/status:Name:` or `Cpus_allowed_list:` line"
            )
        pid, field, value = int(m[1]), _FIELDS[m[2]], m[3]
        row = rows.setdefault(pid, {"pid": pid})
        if field in row:
            raise lines.error(line_no, line, f"{m[2]} printed twice for pid {pid}")
        if field == "cpus_allowed":
            if not _KERNEL_LIST.match(value):
                raise lines.error(line_no, line, "Cpus_allowed_list is not a kernel CPU list (`0-3,8`)")
            try:
                row["cpu_count"] = len(cpu_list(value))
            except ValueError as exc:
                raise lines.error(line_no, line, str(exc)) from None
        row[field] = value

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1  # `0-15` cut to `0-1` would be a narrower affinity: never keep it

    feed_lines(source, KIND, feed, cut_last)
    df = records_frame(list(rows.values()), SCHEMA, host=host)
    df.attrs.update(dropped_lines=dropped)
    return df

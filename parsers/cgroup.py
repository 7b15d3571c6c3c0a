"""cgroup: CPU, IO and memory limits and counters of the watched processes' cgroups (v1 and v2).

perfkit runs (collectors/captures.py, `cgroup-start` when the window opens and `cgroup-end` after
it, in the control shell; POSIX sh and awk, no Python)::

    t=$(date +%s); grep -s -H '' /proc/[0-9]*/comm | awk -v t="$t" -v watch='mariadbd ... sleep' '...'

For every process whose `/proc/PID/comm` is one of the watched names, awk reads `/proc/PID/cgroup`,
finds where each hierarchy is mounted from `/proc/self/mountinfo` (the mount's root is taken off the
path: a container that sees `/docker/ID` mounted as its `/` still finds its files), and prints each
cgroup's files once, however many processes share it::

    cgroup snapshot at 1795766907 of: mariadbd mysqld sysbench pkburn
    mount v1 rw,cpu,cpuacct root / at /sys/fs/cgroup/cpu,cpuacct
    mount v2 rw,nsdelegate root / at /sys/fs/cgroup/unified
    == pid 11010 mariadbd
    cgroup v1 cpu,cpuacct /system.slice/mariadb.service
    cgroup v2 /system.slice/mariadb.service
    == cgroup v1 cpu,cpuacct /system.slice/mariadb.service
    dir /sys/fs/cgroup/cpu,cpuacct/system.slice/mariadb.service
    file cpu.cfs_quota_us
      50000
    missing cpuacct.usage
    == cgroup v2 /system.slice/mariadb.service
    dir /sys/fs/cgroup/unified/system.slice/mariadb.service
    controllers memory pids
    missing cpu.max (controller cpu not enabled for this cgroup)
    file io.stat
      254:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0
    device 254:0 vda

`file NAME` is followed by the file's lines, each indented by two spaces (an empty file: no lines).
`missing ...` (a file, a controller, a process that exited, a device without a name),
`unreachable ...` (a cgroup whose directory is not visible here: outside this cgroup namespace, or
below no mount's root) and `controllers ...` (v2's `cgroup.controllers`) are kept in `attrs["notes"]`
with their process or cgroup, as are files this parser does not read; `attrs["dropped_lines"]` counts
a last line cut mid-write.
`device MAJ:MIN NAME` names the block devices that IO files list (`/sys/dev/block/MAJ:MIN/uevent`'s
DEVNAME, else /proc/partitions): the name iostat prints.

Schema (one row per process, hierarchy, cgroup, key and device; a cgroup shared by several
processes repeats under each of them):

| column | dtype | meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | when the snapshot was taken (the header's epoch second); NaT if absent |
| host | string | the `host` argument |
| pid | Int64 | process id |
| process | string | its `/proc/PID/comm` |
| version | Int64 | 1 (cgroup v1) or 2 (the unified hierarchy) |
| controller | string | the file's: v1 `cpu`, `cpuacct`, `blkio`, `memory`; v2 `cpu`, `io`, `memory` |
| cgroup | string | the cgroup's path as /proc/PID/cgroup prints it (`/system.slice/mariadb.service`) |
| file | string | the file read (`cpu.stat`) |
| key | string | what the value is, the same name in v1 and v2, the unit in the name (below) |
| device | string | `MAJ:MIN` for per-device IO rows, else NA |
| device_name | string | the device's name (`vda`), NA when unknown or not a device row |
| value | float64 | the number in the key's unit; NaN when `unlimited` |
| unlimited | boolean | True for a limit set to none (v1 quota -1, memory limit ≥ 2**62; v2 `max`) |

Keys, one name for v1 and v2, by the file read (v1: the `cpu`, `cpuacct`, `blkio`, `memory`
hierarchies, co-mounted or not; times in microseconds: v1's nanosecond counters are divided by 1000):

- CPU: `quota_usec`, `period_usec` (v1 cpu.cfs_quota_us, cpu.cfs_period_us; v2 cpu.max `QUOTA
  PERIOD`); from cpu.stat `nr_periods`, `nr_throttled` (counts), `throttled_usec` (v1 `throttled_time`
  ns, v2 `throttled_usec`), `nr_bursts`, `burst_usec` (v1 `burst_time` ns), `wait_usec` (v1 `wait_sum`
  ns, with schedstats on), v2's `usage_usec`, `user_usec`, `system_usec`, `nice_usec`, and any other
  key under its own name (a count, or already `*_usec`); `usage_usec` also from v1 cpuacct.usage (ns;
  controller `cpuacct`); `weight` (v2 cpu.weight).
- IO, per device: limits `read_max_bytes_s`, `write_max_bytes_s`, `read_max_iops`, `write_max_iops`
  (v1 blkio.throttle.{read,write}_{bps,iops}_device list only the devices with a limit: a device
  absent from them has none; v2 io.max prints `max` for the unlimited ones of a limited device);
  counters since the cgroup was made `read_ios`, `write_ios`, `read_bytes`, `write_bytes`,
  `discard_ios`, `discard_bytes` (v2 io.stat rios/wios/rbytes/wbytes/dios/dbytes; v1
  blkio.throttle.io_serviced and io_service_bytes Read/Write/Discard), v1 also `sync_*`, `async_*`,
  `total_*`. v1's last `Total N` line (the sum over devices) is no row. Other io.stat keys (iocost's
  `cost.usage`) keep their name.
- Memory: `max_bytes` (v1 memory.limit_in_bytes, v2 memory.max), `high_bytes` (v2 memory.high),
  `current_bytes` (v1 memory.usage_in_bytes, v2 memory.current), `peak_bytes` (v1
  memory.max_usage_in_bytes, v2 memory.peak), `failcnt` (v1 memory.failcnt: times usage hit the
  limit), `oom_kill_disable`, `under_oom`, `oom_kill` (v1 memory.oom_control; v2 memory.events
  `oom_kill`), v2 memory.events' `low_events`, `high_events`, `max_events`, `oom_events`,
  `oom_group_kill`.

How a rule reads one step (the `cgroup-start` and `cgroup-end` frames of that step and host, rows
matched on pid, version, controller, cgroup, key and device; counters are cumulative):

- quota in cores: `quota_usec / period_usec` of one snapshot, when `unlimited` is False.
- throttled share of periods: Δ`nr_throttled` / Δ`nr_periods` (Δ = end − start). Δ`nr_periods`
  0 means the quota never bit (no quota, or the group never ran a whole period).
- throttled seconds: Δ`throttled_usec` / 1e6; per second of the step: ÷ Δtimestamp.
- CPU used in cores: Δ`usage_usec` / 1e6 / Δtimestamp (v1 from `cpuacct`, v2 from `cpu.stat`).
- IOPS done against an IOPS limit: Δ`write_ios` / Δtimestamp on a device beside `write_max_iops`
  on the same device (`device_name` is iostat's name for it); likewise reads and bytes/s.
- memory: `current_bytes` against `max_bytes`; Δ`failcnt`, Δ`max_events` or Δ`oom_kill` > 0 says
  the limit was hit in the step.

Before summing over processes, keep one row per (version, controller, cgroup, key, device): the
processes of one cgroup show the same counters. A cgroup removed and made again between the
snapshots restarts its counters (Δ < 0: not a delta).

Limits of what is read: the process's own cgroup only (a parent's quota or limit also applies and
is not read); the main thread's cgroup (v1 threads may sit elsewhere); `/proc/PID/cgroup` paths
outside this cgroup namespace (`/..`) and cgroups below no mount's root are `unreachable`.

Tested on: tests/fixtures/cgroup/ (see README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ._common import T_LIMIT_S, Lines, Source, feed_lines, records_frame

KIND = "cgroup"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "pid": "Int64",
    "process": "string",
    "version": "Int64",
    "controller": "string",
    "cgroup": "string",
    "file": "string",
    "key": "string",
    "device": "string",
    "device_name": "string",
    "value": "float64",
    "unlimited": "boolean",
}

_HEADER = re.compile(r"^cgroup snapshot at (\d{0,12}) of: ?(.*)$")
_PID = re.compile(r"^== pid (\d{1,10}) (.*)$")
_MEMBER = re.compile(r"^cgroup (?:v1 (\S+)|v2) (/.*)$")
_BLOCK = re.compile(r"^== cgroup (?:v1 (\S+)|v2) (/.*)$")
_DEVICE = re.compile(r"^device (\d{1,10}:\d{1,10}) (\S.*)$")
_INT = re.compile(r"^-?\d{1,20}$")
_NUM = re.compile(r"^-?\d{1,20}(?:\.\d{1,20})?$")
_DEV = r"(\d{1,10}:\d{1,10})"
_DEV_VALUE = re.compile(rf"^{_DEV} (\d{{1,20}})$")
_DEV_OP_VALUE = re.compile(rf"^{_DEV} (Read|Write|Sync|Async|Discard|Total) (\d{{1,20}})$")
_TOTAL = re.compile(r"^Total \d{1,20}$")
_DEV_PAIRS = re.compile(rf"^{_DEV}((?: [A-Za-z0-9_.]{{1,40}}=\S{{1,40}})*)$")
_KEY_VALUE = re.compile(r"^([A-Za-z0-9_.]{1,64}) (-?\d{1,20})$")

# A v1 memory limit this large is the kernel's "no limit" (PAGE_COUNTER_MAX pages: 9223372036854771712
# with 4 kB pages, 9223372036854710272 with 64 kB ones); no machine holds 4 EiB.
_V1_UNLIMITED_BYTES = 2**62
# One value per file: file -> (key, divisor to the key's unit, how "no limit" is written)
_SINGLE: dict[str, tuple[str, float, str]] = {
    "cpu.cfs_quota_us": ("quota_usec", 1, "negative"),
    "cpu.cfs_period_us": ("period_usec", 1, ""),
    "cpuacct.usage": ("usage_usec", 1000, ""),
    "cpu.weight": ("weight", 1, ""),
    "memory.limit_in_bytes": ("max_bytes", 1, "huge"),
    "memory.usage_in_bytes": ("current_bytes", 1, ""),
    "memory.max_usage_in_bytes": ("peak_bytes", 1, ""),
    "memory.failcnt": ("failcnt", 1, ""),
    "memory.max": ("max_bytes", 1, "max"),
    "memory.high": ("high_bytes", 1, "max"),
    "memory.current": ("current_bytes", 1, ""),
    "memory.peak": ("peak_bytes", 1, ""),
}
_V1_CPU_STAT_NS = {"throttled_time": "throttled_usec", "burst_time": "burst_usec", "wait_sum": "wait_usec"}
# memory.events keys that take an `_events` suffix (the others keep their name)
_MEMORY_EVENTS = frozenset({"low", "high", "max", "oom"})
_V1_IO_LIMITS = {
    "blkio.throttle.read_bps_device": "read_max_bytes_s",
    "blkio.throttle.write_bps_device": "write_max_bytes_s",
    "blkio.throttle.read_iops_device": "read_max_iops",
    "blkio.throttle.write_iops_device": "write_max_iops",
}
_V1_IO_COUNTS = {"blkio.throttle.io_serviced": "_ios", "blkio.throttle.io_service_bytes": "_bytes"}
_IO_MAX = {
    "rbps": "read_max_bytes_s",
    "wbps": "write_max_bytes_s",
    "riops": "read_max_iops",
    "wiops": "write_max_iops",
}
_IO_STAT = {
    "rbytes": "read_bytes",
    "wbytes": "write_bytes",
    "rios": "read_ios",
    "wios": "write_ios",
    "dbytes": "discard_bytes",
    "dios": "discard_ios",
}
_FLAT = ("cpu.stat", "memory.oom_control", "memory.events")
KNOWN_FILES = frozenset((*_SINGLE, *_FLAT, *_V1_IO_LIMITS, *_V1_IO_COUNTS, "cpu.max", "io.max", "io.stat"))

# a content line's rows: (key, device, value, unlimited)
_Row = tuple[str, str | None, float, bool]
# (file, key, device, value, unlimited)
Entry = tuple[str, str, str | None, float, bool]
_UNLIMITED = float("nan"), True


@dataclass
class _Block:
    version: int
    entries: list[Entry] = field(default_factory=list)
    files: set[str] = field(default_factory=set)


def sniff(text: str) -> bool:
    """The first non-blank line is the capture's `cgroup snapshot at EPOCH of: NAMES`."""
    for line in text[:4096].splitlines()[:5]:
        if line.strip():
            return bool(_HEADER.match(line))
    return False


def _hierarchy(m: re.Match[str]) -> tuple[int, str, str]:
    """(version, v1 controllers or "", path) of a `cgroup ...` or `== cgroup ...` line."""
    return (1 if m[1] else 2, m[1] or "", m[2])


def _content(file: str, version: int, text: str, first: bool) -> list[_Row]:
    """The rows one content line of `file` gives; ValueError says what the line should have been."""
    if file in _SINGLE:
        key, divisor, unlimited_as = _SINGLE[file]
        if not first:
            raise ValueError(f"{file} holds one value; a second line")
        if unlimited_as == "max" and text == "max":
            return [(key, None, *_UNLIMITED)]
        if not _INT.match(text):
            raise ValueError(f"{file} is not an integer" + (" or `max`" if unlimited_as == "max" else ""))
        n = int(text)
        if (unlimited_as == "negative" and n < 0) or (unlimited_as == "huge" and n >= _V1_UNLIMITED_BYTES):
            return [(key, None, *_UNLIMITED)]
        return [(key, None, n / divisor, False)]
    if file in _FLAT:
        m = _KEY_VALUE.match(text)
        if m is None:
            raise ValueError(f"{file} line is not `key integer`")
        name, n = m[1], int(m[2])
        if file == "cpu.stat" and version == 1 and name in _V1_CPU_STAT_NS:
            return [(_V1_CPU_STAT_NS[name], None, n / 1000, False)]
        if file == "memory.events" and name in _MEMORY_EVENTS:
            name = f"{name}_events"
        return [(name, None, float(n), False)]
    if file == "cpu.max":
        parts = text.split(" ")
        if (
            not first
            or len(parts) != 2
            or not _INT.match(parts[1])
            or not (parts[0] == "max" or _INT.match(parts[0]))
        ):
            raise ValueError("cpu.max is not one `QUOTA PERIOD` line (QUOTA an integer or `max`)")
        quota = _UNLIMITED if parts[0] == "max" else (float(parts[0]), False)
        return [("quota_usec", None, *quota), ("period_usec", None, float(parts[1]), False)]
    if file in _V1_IO_LIMITS:
        m = _DEV_VALUE.match(text)
        if m is None:
            raise ValueError(f"{file} line is not `MAJ:MIN value`")
        return [(_V1_IO_LIMITS[file], m[1], float(m[2]), False)]
    if file in _V1_IO_COUNTS:
        if _TOTAL.match(text):
            return []  # the sum over devices: each device's own Total is a row
        m = _DEV_OP_VALUE.match(text)
        if m is None:
            raise ValueError(f"{file} line is not `MAJ:MIN Read|Write|Sync|Async|Discard|Total value`")
        return [(m[2].lower() + _V1_IO_COUNTS[file], m[1], float(m[3]), False)]
    # io.max, io.stat: `MAJ:MIN key=value ...`
    m = _DEV_PAIRS.match(text)
    if m is None:
        raise ValueError(f"{file} line is not `MAJ:MIN key=value ...`")
    rows: list[_Row] = []
    for pair in m[2].split():
        name, value = pair.split("=", 1)
        if file == "io.stat":
            if not _NUM.match(value):
                raise ValueError(f"io.stat {name} is not a number")
            rows.append((_IO_STAT.get(name, name), m[1], float(value), False))
        elif name not in _IO_MAX:
            raise ValueError(f"io.max key {name!r} is none of rbps wbps riops wiops")
        elif value == "max":
            rows.append((_IO_MAX[name], m[1], *_UNLIMITED))
        elif not _INT.match(value):
            raise ValueError(f"io.max {name} is not an integer or `max`")
        else:
            rows.append((_IO_MAX[name], m[1], float(value), False))
    return rows


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a `cgroup-start`/`cgroup-end` snapshot into one row per process, cgroup, key and device.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (the header holds an epoch second); kept for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`, `notes`.

    Raises:
        ParseError: no `cgroup snapshot at ...` first line, a line that is none of the capture's,
            a file's line that does not follow the kernel's format for that file, a value outside
            a `file` (or a `file` outside a cgroup), or a cgroup or file printed twice.
    """
    stamp: pd.Timestamp | None = None
    seen_header = False
    processes: dict[int, str] = {}
    members: dict[int, list[tuple[int, str, str]]] = {}  # pid -> its hierarchies
    blocks: dict[tuple[int, str, str], _Block] = {}
    devices: dict[str, str] = {}
    notes: list[str] = []
    dropped = 0
    current_pid: int | None = None  # the `== pid` whose `cgroup` lines follow
    block: _Block | None = None
    where = ""  # the process or cgroup the lines belong to, for notes
    file: str | None = None  # the file whose lines follow; "" for one this parser does not read
    first = True

    def feed(line_no: int, line: str, lines: Lines) -> None:
        nonlocal stamp, seen_header, current_pid, block, where, file, first
        if not line.strip():
            return
        if not seen_header:
            m = _HEADER.match(line)
            if m is None:
                raise lines.error(
                    line_no, line, "not a cgroup snapshot: no `cgroup snapshot at EPOCH of: NAMES` line first"
                )
            if m[1] and int(m[1]) >= T_LIMIT_S:
                raise lines.error(line_no, line, f"snapshot time {m[1]} is not a time in the years 1678-2261")
            seen_header = True
            stamp = pd.Timestamp(int(m[1]), unit="s", tz="UTC") if m[1] else None
            return
        if line.startswith("  "):
            if file is None or block is None:
                raise lines.error(line_no, line, "a value outside any `file` of a cgroup")
            if file == "":
                return
            try:
                rows = _content(file, block.version, line[2:], first)
            except ValueError as exc:
                raise lines.error(line_no, line, str(exc)) from None
            first = False
            block.entries.extend((file, *row) for row in rows)
            return
        file = None
        if line.startswith("== pid "):
            m = _PID.match(line)
            if m is None:
                raise lines.error(line_no, line, "not `== pid PID NAME`")
            current_pid, block = int(m[1]), None
            if current_pid in processes:
                raise lines.error(line_no, line, f"pid {current_pid} printed twice")
            processes[current_pid] = m[2]
            members[current_pid] = []
            where = f"pid {current_pid} {m[2]}"
        elif line.startswith("== cgroup "):
            m = _BLOCK.match(line)
            if m is None:
                raise lines.error(line_no, line, "not `== cgroup v1 CONTROLLERS PATH` or `== cgroup v2 PATH`")
            hierarchy = _hierarchy(m)
            if hierarchy in blocks:
                raise lines.error(line_no, line, "this cgroup printed twice")
            current_pid, block = None, blocks.setdefault(hierarchy, _Block(hierarchy[0]))
            where = line[3:]  # `cgroup v1 cpu,cpuacct /system.slice/mariadb.service`
        elif line.startswith("cgroup "):
            m = _MEMBER.match(line)
            if m is None or current_pid is None:
                raise lines.error(
                    line_no, line, "not `cgroup v1 CONTROLLERS PATH` or `cgroup v2 PATH` under `== pid`"
                )
            members[current_pid].append(_hierarchy(m))
        elif line.startswith("file "):
            name = line[5:]
            if block is None:
                raise lines.error(line_no, line, "a `file` outside any `== cgroup`")
            if name in block.files:
                raise lines.error(line_no, line, f"{name} printed twice for this cgroup")
            block.files.add(name)
            file, first = name, True
            if name not in KNOWN_FILES:
                file = ""
                notes.append(f"{where}: {name} is not a file this parser reads: skipped")
        elif line.startswith(("missing ", "unreachable ", "controllers")):
            notes.append(f"{where}: {line}" if where else line)
        elif line.startswith("device "):
            m = _DEVICE.match(line)
            if m is None:
                raise lines.error(line_no, line, "not `device MAJ:MIN NAME`")
            devices[m[1]] = m[2]
        elif not line.startswith(("mount ", "dir ")):  # those say where the files were read from
            raise lines.error(line_no, line, "not a line of perfkit's cgroup snapshot")

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1  # `9223372036854771712` cut short would read as a limit: never keep it

    feed_lines(source, KIND, feed, cut_last)
    rows = [
        {
            "pid": pid,
            "process": processes[pid],
            "version": version,
            "controller": name.split(".", 1)[0],
            "cgroup": path,
            "file": name,
            "key": key,
            "device": device,
            "device_name": devices.get(device) if device else None,
            "value": value,
            "unlimited": unlimited,
        }
        for pid, hierarchies in members.items()
        for version, controllers, path in hierarchies
        if (version, controllers, path) in blocks
        for name, key, device, value, unlimited in blocks[version, controllers, path].entries
    ]
    df = records_frame(rows, SCHEMA, timestamp=stamp, host=host)
    df.attrs.update(dropped_lines=dropped, notes=notes)
    return df

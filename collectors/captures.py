"""What perfkit captures on a host, declared as data; collectors/session.py runs them.

The default profile is the Netflix 60-second checklist plus what the seed 000 script collects.
Each capture is one shell command whose stdout becomes `hosts/<host>/<id>.out` byte for byte.
Placeholders: `{interval}` (s), `{count}` (samples in the window), `{reports}` (count + 1, for
tools whose first report comes at once with no interval behind it — vmstat's and iostat's since-boot
averages, top's and iotop's first screen, the ss loop's first block — so their last report lands at
the window's end, as mpstat's, pidstat's and sar's do), `{window}` (s), `{workdir}` (a 0700 scratch
directory on the host, removed at the end), `{watch}` (the process names whose threads and cgroups
are followed: WATCHED plus the user's `--watch`, one shell word). Every command later runs under
`LC_ALL=C S_TIME_FORMAT=ISO` and a `timeout` tied to the window (session.py), so nothing
outlives the run.

Phases: `start` snapshots run when the window opens, `window` captures sample through it, `end`
snapshots and conversions run after it (sar's binary file is converted on the host with its own
`sadf`, because the binary format differs between sysstat versions).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

PHASES = ("start", "window", "end")
# The processes whose threads, waits and cgroups matter in a database load test, by the name the
# kernel gives them (/proc/PID/comm, at most 15 characters): databases, load generators, proxies.
WATCHED: tuple[str, ...] = (
    "mariadbd",
    "mysqld",
    "tidb-server",
    "tikv-server",
    "pd-server",
    "tiflash",
    "sysbench",
    "go-ycsb",
    "go-tpc",
    "haproxy",
    "proxysql",
)
_NAME = re.compile(r"^[A-Za-z0-9._:+-]{1,64}$")


def watch_names(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """WATCHED and the user's names, each once; ValueError for a name that is no process name."""
    for name in extra:
        if not _NAME.match(name):
            raise ValueError(f"invalid process name {name!r}: letters, digits and . _ : + - only")
    return tuple(dict.fromkeys((*WATCHED, *extra)))


@dataclass(frozen=True)
class CaptureSpec:
    """One capture: a shell command template and how to treat its output."""

    id: str  # file stem in the archive: hosts/<host>/<id>.out
    kind: str  # the parser module that reads it (design.md); may not exist yet
    command: str  # POSIX shell template with {interval} {count} {reports} {window} {workdir} {watch}
    tool: str  # the binary that must exist on the host (checked with `command -v`)
    phase: str = "window"
    version: str = ""  # shell command whose first output line names the tool's version
    needs_root: bool = False
    intrusive: bool = False  # costs the host something: only with an explicit opt-in
    max_bytes: int = 64 << 20
    # What it writes on the host itself (not streamed back), at most: bytes per sample, per sample
    # and CPU, and a fixed cap; the free-space check counts it before anything starts.
    host_bytes: tuple[int, int, int] = (0, 0, 0)

    def host_bytes_at_most(self, *, samples: int, cpus: int) -> int:
        per_sample, per_cpu, fixed = self.host_bytes
        return samples * (per_sample + per_cpu * max(1, cpus)) + fixed

    def render(self, *, interval: int, window: int, workdir: str, watch: tuple[str, ...] = ()) -> str:
        """The command with its placeholders filled (`watch`: the user's names beside WATCHED);
        values are numbers or quoted words."""
        count = max(1, window // interval)
        return self.command.format(
            interval=int(interval),
            count=count,
            reports=count + 1,
            window=int(window),
            workdir=shlex.quote(workdir),
            watch=shlex.quote(" ".join(watch_names(watch))),
        )


_SS_LOOP = (
    # One block per second: a stamp, `ss -s`, and the count of sockets in TIME-WAIT proper (`ss -s`
    # counts orphaned FIN-WAIT-2 too). The count asks netlink (`ss state`), not /proc/net/tcp, whose
    # read walks the whole established hash: 6.5 ms of CPU against 2.8 ms on the benchmark's VM, every
    # second. No -H (iproute2 < 4.16): the header line is subtracted, and a failing `ss` prints no
    # count rather than 0. No sleep after the last block: the capture ends with the window.
    'i=0; while :; do echo "== $(date +%s)"; ss -s; '
    'n=$(ss -tan state time-wait 2>/dev/null | wc -l); [ "$n" -gt 0 ] && echo "timewait: $((n - 1))"; '
    "i=$((i+1)); [ $i -lt {reports} ] || break; sleep {interval}; done"
)
# `iotop --version` starts a Python interpreter: 53 ms of CPU on the benchmark's VM, half of what the
# rest of the preflight costs. The Python iotop's version is one line of its package; iotop-c (C) is
# asked directly. `read` and `case` are builtins: one `sed` in the common case (the preflight keeps
# the first line).
_IOTOP_VERSION = (
    'p=$(command -v iotop); l=; read -r l < "$p"; case $l in "#!"*python*) '
    'sed -n "s/^VERSION *= *[\'\\"]\\([^\'\\"]*\\).*/iotop \\1/p" '
    "/usr/lib/python3*/*-packages/iotop/version.py ;; *) iotop --version ;; esac"
)
_SYSCTL_KEYS = (
    "net.ipv4.ip_local_port_range net.ipv4.tcp_tw_reuse net.ipv4.tcp_fin_timeout "
    "net.core.somaxconn net.ipv4.tcp_max_syn_backlog kernel.task_delayacct vm.swappiness"
)

DEFAULT: tuple[CaptureSpec, ...] = (
    CaptureSpec("vmstat", "vmstat", "vmstat -w -t {interval} {reports}", "vmstat", version="vmstat -V"),
    CaptureSpec("iostat", "iostat", "iostat -x -d -t {interval} {reports}", "iostat", version="iostat -V"),
    CaptureSpec("mpstat", "mpstat", "mpstat -P ALL {interval} {count}", "mpstat", version="mpstat -V"),
    CaptureSpec("pidstat", "pidstat", "pidstat -u -d -w {interval} {count}", "pidstat", version="pidstat -V"),
    # sa.bin grows by about 4.3 kB a sample on 2 CPUs here: budget 16 kB plus 1 kB per CPU.
    CaptureSpec(
        "sar",
        "sar",
        "sar -o {workdir}/sa.bin {interval} {count}",
        "sar",
        version="sar -V",
        host_bytes=(16 << 10, 1 << 10, 0),
    ),
    CaptureSpec(
        "top", "top", "top -b -H -w 512 -d {interval} -n {reports}", "top", version="top -V || top -v"
    ),
    CaptureSpec(
        "iotop",
        "iotop",
        "iotop -botqk -d {interval} -n {reports}",
        "iotop",
        needs_root=True,
        version=_IOTOP_VERSION,
    ),
    CaptureSpec("ss", "ss", _SS_LOOP, "ss", version="ss -V"),
    CaptureSpec("ps-start", "ps", "ps auxww", "ps", phase="start", version="ps -V"),
    CaptureSpec("sysctl", "sysctl", f"sysctl {_SYSCTL_KEYS}", "sysctl", phase="start"),
    CaptureSpec("numactl", "numactl", "numactl --hardware", "numactl", phase="start"),
    CaptureSpec("numastat-start", "numastat", "numastat -c", "numastat", phase="start"),
    # Each process's allowed CPUs (taskset/numactl/cpuset), to hold against where its memory is.
    # One grep over every /proc/PID/status: 0.1 ms a process here, where a sh `read` loop costs 4x
    # (dash reads one byte per syscall). Exit 2 is a process that exited after the glob (-s hides it).
    CaptureSpec(
        "affinity",
        "affinity",
        "grep -s -H -e '^Name:' -e '^Cpus_allowed_list:' /proc/[0-9]*/status || [ $? -eq 2 ]",
        "grep",
        phase="start",
        version="grep -V",
    ),
    # Per-node memory of the 10 largest processes by RSS (the database, the load generator): reading
    # numa_maps walks a process's mappings under its mmap lock (a large buffer pool's page faults
    # wait meanwhile), so only those that matter, once, after the window, when the load is over and
    # its memory is placed. One numastat per process: with several pids, one that exits between `ps`
    # and numastat's read (or one it may not read) fails them all.
    CaptureSpec(
        "numastat-procs",
        "numastat",
        "for p in $(ps -eo pid= --sort=-rss | head -n 10); do "
        'numastat -p "$p" || echo "numastat -p $p failed: the process exited or is not readable" >&2; '
        "done",
        "numastat",
        phase="end",
    ),
    CaptureSpec("df", "df", "df -P -k", "df", phase="start"),
    CaptureSpec("uptime", "uptime", "uptime", "uptime", phase="start"),
    CaptureSpec("nproc", "nproc", "nproc", "nproc", phase="start"),
    CaptureSpec("uname", "uname", "uname -a", "uname", phase="start"),
    CaptureSpec("ps-end", "ps", "ps auxww", "ps", phase="end"),
    CaptureSpec("numastat-end", "numastat", "numastat -c", "numastat", phase="end"),
    CaptureSpec("sar-cpu", "sadf", "sadf -d {workdir}/sa.bin -- -P ALL", "sadf", phase="end"),
    CaptureSpec("sar-net", "sadf", "sadf -d {workdir}/sa.bin -- -n DEV", "sadf", phase="end"),
    CaptureSpec("sar-tcp", "sadf", "sadf -d {workdir}/sa.bin -- -n TCP,ETCP", "sadf", phase="end"),
    CaptureSpec("sar-binary", "sa", "cat {workdir}/sa.bin", "cat", phase="end"),
)

# Lighter set for a quick look: no per-thread top, no per-process tables.
MINIMAL: tuple[CaptureSpec, ...] = tuple(
    s for s in DEFAULT if s.id in ("vmstat", "iostat", "mpstat", "ss", "sysctl", "nproc", "uname", "df")
)

PROFILES: dict[str, tuple[CaptureSpec, ...]] = {"default": DEFAULT, "minimal": MINIMAL}

# `perf script` text → folded stacks (`comm;root;...;leaf count`), in POSIX awk so it runs on any
# host's own awk (mawk on Debian). A frame without a symbol is named by its DSO, e.g. [libcrypto.so.3].
_FOLD = r"""
function emit(   s, i) { if (n) { s = comm; for (i = n; i >= 1; i--) s = s ";" st[i]; count[s]++ } n = 0 }
/^[^ \t]/ { emit(); comm = $1; next }
/^[ \t]+[0-9a-f]+ / {
  sym = $2; for (i = 3; i < NF; i++) sym = sym " " $i
  if (NF == 2) sym = $2
  sub(/\+0x[0-9a-f]+$/, "", sym)
  if (sym == "[unknown]" && NF >= 3) {
    dso = $NF; gsub(/[()]/, "", dso); sub(/.*\//, "", dso); if (dso != "[unknown]") sym = "[" dso "]"
  }
  gsub(/;/, ":", sym); st[++n] = sym; next
}
/^[ \t]*$/ { emit() }
END { emit(); for (k in count) print k, count[k] }
"""
# perf.data stays on the host (it is folded there): bounded, so a busy process cannot fill the disk
PERF_MAX_MB = 512


def perf_specs(process: str) -> tuple[CaptureSpec, CaptureSpec]:
    """`perf record -F 99 -g` on the oldest process named `process` for the window, then its stacks
    folded on the host (perf.data needs the host's binaries and symbols: it is never shipped)."""
    if not _NAME.match(process):
        raise ValueError(f"invalid process name {process!r}: letters, digits and . _ : + - only")
    name = shlex.quote(process)
    record = CaptureSpec(
        "perf-record",
        "perf_record",
        f"if ! pid=$(pgrep -o -x {name}); then echo 'no process named '{name} >&2; exit 3; fi; "
        f'perf record -F 99 -g --max-size={PERF_MAX_MB}M -p "$pid" -o {{workdir}}/perf.data '
        "-- sleep {window} 2>&1",
        "perf",
        version="perf --version",
        intrusive=True,
        host_bytes=(0, 0, PERF_MAX_MB << 20),
    )
    folded = CaptureSpec(
        "perf-folded",
        "folded",
        "perf script -i {workdir}/perf.data 2>/dev/null | awk "
        + shlex.quote(_FOLD).replace("{", "{{").replace("}", "}}"),
        "perf",
        phase="end",
        intrusive=True,
    )
    return record, folded


def iftop_spec(interface: str) -> CaptureSpec:
    """iftop on one interface for the window (it waits forever for a packet: the window's timeout ends it)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,15}", interface):
        raise ValueError(f"invalid interface name {interface!r}")
    return CaptureSpec(
        "iftop",
        "iftop",
        f"iftop -t -s {{window}} -n -N -B -i {shlex.quote(interface)}",
        "iftop",
        needs_root=True,
        intrusive=True,
        version="iftop -h 2>&1 | head -n 1",
    )


def profile(name: str) -> tuple[CaptureSpec, ...]:
    """The captures of a named profile; KeyError names the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None

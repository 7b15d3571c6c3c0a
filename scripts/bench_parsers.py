#!/usr/bin/env python3
"""Benchmark every whitespace-table parser: lines/s and peak RSS on generated day-long captures.

Issue 5's acceptance: for each parser, on a generated 24 h x 1 s capture, >= 250 k lines/s and at
most 3x a plain `for line in f: line.split()` loop over the same file; peak RSS at most the bare
interpreter (+ pandas) plus 3x the frame's `memory_usage(deep=True)`; jc's figures beside ours
where jc has a parser for the tool.

Every capture is generated once (seeded RNG) into a temporary directory in the exact layout the
real tool prints (taken from tests/fixtures/<kind>/ and the parser docstrings), checked by a first
perfkit parse (it must succeed and give the expected row count, else the kind is reported as
failed and nothing of it is timed), then timed. Each contender runs in a fresh interpreter so its
peak RSS (VmHWM) is its own, as in scripts/bench_parse.py, whose runner preamble and iostat
generator are reused:

- `split`: `for line in f: line.split()` (the floor of any line-oriented parser);
- `perfkit`: `perfkit.parsers.parse(kind, path, context)`, the call `perfkit analyze` makes, with the
  context a manifest record gives (host, zone, the capture's start: top and iotop are dated by it);
- `jc`: `jc.parsers.<name>.parse(text, quiet=True)` on at most `--jc-lines` lines (its time
  extrapolated linearly to the whole file; jc needs the whole text in memory and is ~20x slower);
- `baseline`: the interpreter with pandas imported, doing nothing (the RSS floor).

split and perfkit alternate `--repeat` times (the first perfkit run is the check); the fastest is
kept, and the highest VmHWM.

    python scripts/bench_parsers.py                              # print the Markdown section
    python scripts/bench_parsers.py --kinds vmstat,top           # a subset
    python scripts/bench_parsers.py --hours 0.25 --repeat 1      # a quick validation
    python scripts/bench_parsers.py --out docs/benchmarks.md     # write the section there

The full run (24 h, 3 repeats) generates ~33 M lines (~2.7 GB on disk, in the temp dir, removed at
the end) and takes about 10 minutes on 2 quiet vCPUs (--budget caps the repeats of the slowest parsers).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import PEAK, ROOT, write_bytecode, write_section  # noqa: E402  (sibling script, not a package)
from bench_parse import generate as generate_iostat  # noqa: E402

TITLE = "parsers: throughput and memory"
SPEED_LINES_S = 250_000
SPEED_RATIO = 3.0
RSS_FACTOR = 3.0
START = dt.datetime(2026, 11, 22, 8, 0, 0)  # 08:00, so a 24 h capture crosses midnight mid-file
BANNER = "Linux 6.1.0-26-amd64 (bench) \t{date} \t_x86_64_\t({cpus} CPU)"

# One runner for every contender: argv = mode, kind, path, jc parser, line limit. The peak is read
# before `memory_usage(deep=True)`, which walks the frame and could raise the high-water mark.
RUNNER = (
    PEAK
    + """
import sys, time, json
mode, kind, path, jc_name, limit, started = sys.argv[1:5] + [int(sys.argv[5]), sys.argv[6]]
out = {"seconds": 0.0, "rows": 0, "frame_mb": 0.0, "error": None}
if mode == "baseline":
    import pandas
elif mode == "split":
    t0 = time.perf_counter()
    n = 0
    with open(path) as f:
        for line in f:
            line.split()
            n += 1
    out["seconds"], out["rows"] = time.perf_counter() - t0, n
elif mode == "perfkit":
    import pandas
    from perfkit import parsers
    from perfkit.parsers._common import ParseContext
    parsers.get(kind)  # imported before the clock starts
    # the call `perfkit analyze` makes, with what a manifest record gives it: top and iotop print a
    # time of day only and are dated from the capture's start (DATED_BY_START)
    context = ParseContext(host="bench", tz="UTC", started_at=pandas.Timestamp(started, tz="UTC"))
    t0 = time.perf_counter()
    try:
        df = parsers.parse(kind, path, context)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:400]
    else:
        out["seconds"], out["rows"] = time.perf_counter() - t0, len(df)
        out["maxrss_kb"] = peak_kb()
        out["undated"] = int(df["timestamp"].isna().sum()) if "timestamp" in df.columns else 0
        out["frame_mb"] = float(df.memory_usage(deep=True).sum()) / 2**20
elif mode == "jc":
    import importlib
    parser = importlib.import_module("jc.parsers." + jc_name)
    with open(path) as f:
        text = "".join(line for _, line in zip(range(limit), f)) if limit else f.read()
    t0 = time.perf_counter()
    try:
        res = parser.parse(text, quiet=True)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:400]
    else:
        out["seconds"], out["rows"] = time.perf_counter() - t0, len(res)
out.setdefault("maxrss_kb", peak_kb())
print(json.dumps(out))
"""
)


# --------------------------------------------------------------------------------------------
# Generators. Each writes one capture and returns (lines, rows perfkit must return).


class Sink:
    """Buffered line writer that counts lines (generators emit ~30 M lines: no per-line write)."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "w")  # noqa: SIM115  (closed by close())
        self.buf: list[str] = []
        self.lines = 0

    def add(self, *lines: str) -> None:
        self.buf.extend(lines)
        if len(self.buf) >= 65536:
            self.flush()

    def extend(self, lines: Iterable[str]) -> None:
        self.buf.extend(lines)
        if len(self.buf) >= 65536:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.f.write("\n".join(self.buf) + "\n")
            self.lines += len(self.buf)
            self.buf = []

    def close(self) -> int:
        self.flush()
        self.f.close()
        return self.lines


def aligned(header: str) -> Callable[..., str]:
    """A row formatter for sysstat/procps tables: every value right-aligned to end where its header
    word ends, one space apart at least (a wide value pushes the rest right, as the tools do)."""
    ends = [m.end() for m in re.finditer(r"\S+", header)]
    widths = [ends[0]] + [b - a - 1 for a, b in zip(ends, ends[1:], strict=False)]
    fmt = "%" + str(widths[0]) + "s" + "".join(f" %{w}s" for w in widths[1:])

    def row(*values: object) -> str:
        return fmt % values

    return row


def table_format(header: str, convs: str) -> str:
    """Like aligned(), as one %-format (faster: ~30 M lines are formatted); convs e.g. "s d .2f"."""
    ends = [m.end() for m in re.finditer(r"\S+", header)]
    widths = [ends[0]] + [b - a - 1 for a, b in zip(ends, ends[1:], strict=False)]
    return " ".join(f"%{w}{c}" for w, c in zip(widths, convs.split(), strict=True))


def clock(second: int) -> str:
    return (START + dt.timedelta(seconds=second)).strftime("%H:%M:%S")


def seconds(hours: float) -> int:
    return max(2, int(hours * 3600))


def f2(values: np.ndarray) -> list[str]:
    return [f"{v:.2f}" for v in values]


def gen_vmstat(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """`vmstat -w -t 1`, procps-ng 4.0.2 (with `gu`); the two header lines repeat every 21 rows."""
    h1 = (
        "--procs-- -----------------------memory---------------------- ---swap-- -----io---- -system-- "
        "----------cpu---------- -----timestamp-----"
    )
    h2 = (
        "   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs"
        "  us  sy  id  wa  st  gu                 UTC"
    )
    row = aligned(h2)
    n = seconds(hours)
    out = Sink(path)
    free = 24_332_236
    for i in range(n):
        if i % 21 == 0:
            out.add(h1, h2)
        free = max(1_000_000, free + int(rng.integers(-20_000, 20_000)))
        us = int(rng.integers(0, 60))
        sy = int(rng.integers(0, 25))
        wa = int(rng.integers(0, 10))
        stamp = (START + dt.timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S")
        out.add(
            row(
                int(rng.integers(0, 8)), int(rng.integers(0, 3)), 0, free, 1864, 262_120, 0, 0,
                int(rng.integers(0, 3000)), int(rng.integers(0, 50_000)), int(rng.integers(400, 16_000)),
                int(rng.integers(900, 40_000)), us, sy, 100 - us - sy - wa, wa, 0, 0, stamp,
            )
        )  # fmt: skip
    return out.close(), n


def gen_iostat(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """scripts/bench_parse.py's capture: `iostat -x -d -t 1`, sysstat 12.6, 16 devices, ISO stamps."""
    return generate_iostat(path, hours, 16), seconds(hours) * 16


MPSTAT_HEADER = (
    "06:56:01     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle"
)


def cpu_block(rng: np.random.Generator, cpus: int) -> np.ndarray:
    """Per-CPU utilisation rows summing to 100 (`all` first): usr sys iowait soft steal."""
    usr = rng.uniform(0, 70, cpus)
    sys_ = rng.uniform(0, 25, cpus)
    iow = rng.gamma(1.0, 1.5, cpus)
    soft = rng.gamma(1.0, 0.5, cpus)
    steal = rng.gamma(1.0, 0.2, cpus)
    block = np.column_stack([usr, sys_, iow, soft, steal])
    block = np.vstack([block.mean(axis=0), block])
    return np.round(block, 2)


def gen_mpstat(path: Path, hours: float, rng: np.random.Generator, cpus: int = 16) -> tuple[int, int]:
    """`mpstat -P ALL 1`, sysstat 12.6, ISO date, 16 CPUs: per interval a header (its start time),
    `all` + one row per CPU (its end time), a blank line; `Average:` rows at the end."""
    row = table_format(MPSTAT_HEADER, "s s" + " .2f" * 10)
    head = MPSTAT_HEADER[8:]
    n = seconds(hours)
    out = Sink(path)
    out.add(BANNER.format(date=START.date().isoformat(), cpus=cpus), "")
    names = ["all", *map(str, range(cpus))]
    for i in range(n):
        t = clock(i + 1)
        b = cpu_block(rng, cpus)
        out.add(clock(i) + head)
        for name, (usr, sy, iow, soft, st) in zip(names, b.tolist(), strict=True):
            idle = max(0.0, 100 - usr - sy - iow - soft - st)
            out.add(row % (t, name, usr, 0.0, sy, iow, 0.0, soft, st, 0.0, 0.0, idle))
        out.add("")
    out.add("Average:" + head)
    for name in names:
        out.add(row % ("Average:", name, 30, 0, 12, 1, 0, 0.2, 0.1, 0, 0, 56.7))
    return out.close(), n * (cpus + 1)


PIDSTAT_U = "06:56:35      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command"
PIDSTAT_D = "06:56:35      UID       PID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command"
PIDSTAT_W = "06:56:35      UID       PID   cswch/s nvcswch/s  Command"


def gen_pidstat(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """`pidstat -u -d -w 1`, sysstat 12.6: per interval a -u table of 40 processes, a -d table of
    10 of them, a -w table of 30 of them plus 10 idle kernel threads (50 distinct pids, 96 lines)."""
    pool_pids = np.sort(rng.choice(np.arange(1, 60_000), 120, replace=False))
    pool_cmds = [
        rng.choice(["mariadbd", "sysbench", "kworker/1:1H-kblockd", "ksoftirqd/0", "jbd2/vda1-8", "sshd"])
        for _ in pool_pids
    ]
    pool_uid = rng.choice([0, 0, 0, 102, 1000], len(pool_pids)).tolist()
    pool_pids, cmd = pool_pids.tolist(), [str(c) for c in pool_cmds]
    fu = table_format(PIDSTAT_U[:-9], "s d d" + " .2f" * 5 + " d") + "  %s"
    fd = table_format(PIDSTAT_D[:-9], "s d d .2f .2f .2f d") + "  %s"
    fw = table_format(PIDSTAT_W[:-9], "s d d .2f .2f") + "  %s"
    n = seconds(hours)
    out = Sink(path)
    out.add(BANNER.format(date=START.date().isoformat(), cpus=16), "")
    expected = 0
    for i in range(n):
        t0, t = clock(i), clock(i + 1)
        busy = np.sort(rng.choice(80, 40, replace=False))  # indexes into the pool
        io = np.sort(rng.choice(busy, 10, replace=False)).tolist()
        idle = rng.choice(np.arange(80, 120), 10, replace=False)
        sw = np.sort(np.concatenate([rng.choice(busy, 30, replace=False), idle])).tolist()
        busy = busy.tolist()
        expected += len(set(busy) | set(sw))
        cpu = rng.gamma(1.0, 8.0, (len(busy), 2)).tolist()
        rw = rng.gamma(1.0, (20.0, 2000.0), (len(io), 2)).tolist()
        cs = rng.gamma(1.0, (40.0, 2.0), (len(sw), 2)).tolist()
        out.add(t0 + PIDSTAT_U[8:])
        out.extend(
            fu % (t, pool_uid[j], pool_pids[j], u, s, 0.0, 0.0, u + s, j % 16, cmd[j])
            for j, (u, s) in zip(busy, cpu, strict=True)
        )
        out.add("", t0 + PIDSTAT_D[8:])
        out.extend(
            fd % (t, pool_uid[j], pool_pids[j], r, w, 0.0, 0, cmd[j])
            for j, (r, w) in zip(io, rw, strict=True)
        )
        out.add("", t0 + PIDSTAT_W[8:])
        out.extend(
            fw % (t, pool_uid[j], pool_pids[j], v, nv, cmd[j]) for j, (v, nv) in zip(sw, cs, strict=True)
        )
        out.add("")
    return out.close(), expected


SAR_HEADER = "07:47:25        CPU     %user     %nice   %system   %iowait    %steal     %idle"


def gen_sar(path: Path, hours: float, rng: np.random.Generator, cpus: int = 16) -> tuple[int, int]:
    """`sar -P ALL -f sa.bin` replay, sysstat 12.6, ISO banner date, 16 CPUs: one header, then per
    interval `all` + 16 CPU rows (no blank lines, as a replay prints), `Average:` rows at the end."""
    row = table_format(SAR_HEADER, "s s" + " .2f" * 6)
    n = seconds(hours)
    out = Sink(path)
    out.add(BANNER.format(date=START.date().isoformat(), cpus=cpus), "", clock(0) + SAR_HEADER[8:])
    names = ["all", *map(str, range(cpus))]
    for i in range(n):
        t = clock(i + 1)
        for name, (usr, sy, iow, _soft, st) in zip(names, cpu_block(rng, cpus).tolist(), strict=True):
            idle = max(0.0, 100 - usr - sy - iow - st)
            out.add(row % (t, name, usr, 0.0, sy, iow, st, idle))
    for name in names:
        out.add(row % ("Average:", name, 30, 0, 12, 1, 0.1, 56.9))
    return out.close(), n * (cpus + 1)


def gen_sadf(path: Path, hours: float, rng: np.random.Generator, cpus: int = 16) -> tuple[int, int]:
    """`sadf -d sa.bin -- -P ALL`, sysstat 12.6, 16 CPUs: `;` rows, CPU `all` printed as -1."""
    n = seconds(hours)
    out = Sink(path)
    out.add("# hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle")
    for i in range(n):
        stamp = (START + dt.timedelta(seconds=i + 1)).strftime("%Y-%m-%d %H:%M:%S UTC")
        for c, (usr, sy, iow, _soft, st) in enumerate(cpu_block(rng, cpus).tolist()):
            idle = max(0.0, 100 - usr - sy - iow - st)
            out.add(f"bench;1;{stamp};{c - 1};{usr:.2f};0.00;{sy:.2f};{iow:.2f};{st:.2f};{idle:.2f}")
    return out.close(), n * (cpus + 1)


TOP_HEADER = "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND"


def gen_top(path: Path, hours: float, rng: np.random.Generator, threads: int = 60) -> tuple[int, int]:
    """`top -b -H -w 512 -d 1`, procps-ng 4.0.2: per iteration the 5 summary lines, a blank, the
    column header and 60 thread rows (sorted by %CPU), a blank line between iterations."""
    tids = rng.choice(np.arange(100, 400_000), threads, replace=False)
    names = [
        rng.choice(["mariadbd", "ib_io_wr-1", "ib_pg_flush_co", "sysbench", "kworker/0:1-eve", "sshd"])
        for _ in tids
    ]
    users = ["mysql" if nm in ("mariadbd", "ib_io_wr-1", "ib_pg_flush_co") else "root" for nm in names]
    cputime = np.zeros(threads)
    n = seconds(hours)
    out = Sink(path)
    for i in range(n):
        up = 12 * 86400 + 3 * 3600 + i
        days, rem = divmod(up, 86400)
        cpu = np.round(rng.gamma(0.6, 15.0, threads), 1)
        cputime += cpu / 100
        running = int((cpu > 5).sum())
        us, sy = rng.uniform(20, 60), rng.uniform(5, 20)
        if i:
            out.add("")
        out.add(
            f"top - {clock(i)} up {days} days, {rem // 3600:2d}:{rem % 3600 // 60:02d},  0 user,  "
            f"load average: {rng.uniform(1, 9):.2f}, {rng.uniform(1, 9):.2f}, {rng.uniform(1, 9):.2f}",
            f"Threads: {threads:3d} total, {running:3d} running, {threads - running:3d} sleeping,"
            "   0 stopped,   0 zombie",
            f"%Cpu(s): {us:4.1f} us, {sy:4.1f} sy,  0.0 ni,{100 - us - sy - 1.2:5.1f} id,  1.0 wa,"
            "  0.0 hi,  0.2 si,  0.0 st ",
            "MiB Mem :  24105.6 total,  21250.8 free,   2513.4 used,    643.0 buff/cache     ",
            "MiB Swap:      0.0 total,      0.0 free,      0.0 used.  21592.1 avail Mem ",
            "",
            TOP_HEADER,
        )
        for j in np.argsort(-cpu, kind="stable"):
            cs = int(cputime[j] * 100)  # top prints hundredths, truncated (never `0:60.00`)
            plus = f"{cs // 6000}:{cs // 100 % 60:02d}.{cs % 100:02d}"
            out.add(
                f"{tids[j]:7d} {users[j]:<8} {20:>3} {0:>3} {'8193.4g' if users[j] == 'mysql' else 22584:>7}"
                f" {812_344 if users[j] == 'mysql' else 8768:>6} {6936:>6} {'R' if cpu[j] > 5 else 'S'}"
                f" {cpu[j]:5.1f} {0.5 if users[j] == 'mysql' else 0.0:5.1f} {plus:>9} {names[j]}"
            )
    return out.close(), n * threads


def iotop_rate(kbs: float) -> str:
    return f"{kbs:.2f} K/s"


def gen_iotop(path: Path, hours: float, rng: np.random.Generator, threads: int = 20) -> tuple[int, int]:
    """`iotop -botqk -d 1`, iotop 0.6, delay accounting on: per iteration the Total and Current
    lines and 20 thread rows; the column header only in the first iteration (`-q`)."""
    tids = rng.choice(np.arange(100, 400_000), threads, replace=False)
    cmds = [
        rng.choice(
            [
                "mariadbd --basedir=/usr [ib_io_wr-1]",
                "mariadbd --basedir=/usr [ib_pg_flush_co]",
                "[jbd2/vda1-8]",
                "dd if=/dev/zero of=/tmp/f bs=4k count=2000000 oflag=dsync",
                "[kworker/u8:2-ext4-rsv-conversion]",
            ]
        )
        for _ in tids
    ]
    n = seconds(hours)
    out = Sink(path)
    for i in range(n):
        t = clock(i)
        rd = rng.gamma(1.0, 50.0, threads) * (rng.random(threads) < 0.3)
        wr = rng.gamma(1.0, 3000.0, threads)
        out.add(
            f"{t} {'Total DISK READ:' + iotop_rate(rd.sum()).rjust(17)} | "
            f"{'Total DISK WRITE:' + iotop_rate(wr.sum()).rjust(16)}",
            f"{t} {'Current DISK READ:' + iotop_rate(rd.sum() * 0.9).rjust(15)} | "
            f"{'Current DISK WRITE:' + iotop_rate(wr.sum() * 1.1).rjust(14)}",
        )
        if i == 0:
            out.add("    TIME  TID  PRIO  USER     DISK READ  DISK WRITE  SWAPIN      IO    COMMAND")
        io = rng.uniform(0, 70, threads)
        for j in range(threads):
            out.add(
                f"{t} {tids[j]:5d} be/4 {'mysql' if 'mariadbd' in cmds[j] else 'root':<8}"
                f" {iotop_rate(rd[j]):>11} {iotop_rate(wr[j]):>11} {'0.00 %':>7}"
                f" {f'{io[j]:.2f} %':>7} {cmds[j]}"
            )
    return out.close(), n * threads


def gen_ss(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """perfkit's `ss` loop (collectors/captures.py `_SS_LOOP`), iproute2 6.1: per second a
    `== epoch` stamp, `ss -s` (Total, TCP, blank, the transport table, blank) and `timewait: N`."""
    n = seconds(hours)
    out = Sink(path)
    epoch = int(START.replace(tzinfo=dt.UTC).timestamp())
    tw = 200
    for i in range(n):
        tw = max(0, tw + int(rng.integers(-40, 41)))
        estab = int(rng.integers(4, 64))
        tcp = estab + 3
        out.add(
            f"== {epoch + i}",
            f"Total: {tcp + 12}",
            f"TCP:   {tcp + tw} (estab {estab}, closed {tw + 1}, orphaned 0, timewait {tw})",
            "",
            "Transport Total     IP        IPv6",
            f"RAW\t  {0:<10}{0:<10}{0:<9}",
            f"UDP\t  {2:<10}{2:<10}{0:<9}",
            f"TCP\t  {tcp:<10}{tcp:<10}{0:<9}",
            f"INET\t  {tcp + 2:<10}{tcp + 2:<10}{0:<9}",
            f"FRAG\t  {0:<10}{0:<10}{0:<9}",
            "",
            f"timewait: {tw}",
        )
    return out.close(), n


def ps_count(hours: float) -> int:
    """100 k processes at 24 h; scaled with --hours so a short validation run stays short."""
    return max(1000, int(100_000 * min(hours, 24.0) / 24.0))


def gen_ps(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """`ps auxww`, procps-ng 4.0.2: ONE snapshot (ps is not a time series) of 100 k processes."""
    n = ps_count(hours)
    out = Sink(path)
    out.add("USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND")
    cmds = [
        "/usr/sbin/mariadbd --basedir=/usr --datadir=/var/lib/mysql --plugin-dir=/usr/lib/mysql/plugin",
        "sleep 60",
        "sh -c i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done",
        "[kworker/1:1H-kblockd]",
        "sysbench oltp_read_write --tables=2 --table-size=10000 --threads=64 --time=600 run",
        "/usr/bin/python3 -m http.server 8000",
    ]
    pids = np.sort(rng.choice(np.arange(1, 4_000_000), n, replace=False))
    pick = rng.integers(0, len(cmds), n)
    cpu = np.round(rng.gamma(0.3, 2.0, n), 1)
    for pid, c, pc in zip(pids, pick, cpu, strict=True):
        user = "mysql" if c == 0 else "root"
        vsz, rss = (8_591_349_976, 812_344) if c == 0 else (22584 + int(pid % 977) * 8, 1724 + int(pid % 311))
        mins = int(pid % 5000)
        out.add(
            f"{user:<8} {pid:7d} {pc:4.1f} {0.5 if c == 0 else 0.0:4.1f} {vsz:6d} {rss:5d} "
            f"{'?':<8} {'Ssl' if c == 0 else 'S':<4} {'Nov21':>5}"
            f" {f'{mins // 60}:{mins % 60:02d}':>6} {cmds[c]}"
        )
    return out.close(), n


def gen_numastat(path: Path, hours: float, rng: np.random.Generator, nodes: int = 4) -> tuple[int, int]:
    """`numastat -c` every second (a loop like the ss capture's; perfkit itself runs it at start and
    end), numactl 2.0.16, 4 nodes, not a tty (never folded): 10 lines and 30 cells per table."""
    labels = ["Numa_Hit", "Numa_Miss", "Numa_Foreign", "Interleave_Hit", "Local_Node", "Other_Node"]
    heads = [f"Node {k}" for k in range(nodes)] + ["Total"]
    hit = rng.integers(1_000_000, 3_000_000, nodes).astype(np.int64)
    miss = rng.integers(0, 10_000, nodes).astype(np.int64)
    n = seconds(hours)
    out = Sink(path)
    for _ in range(n):
        hit += rng.integers(0, 400, nodes)
        miss += rng.integers(0, 3, nodes)
        table = np.array([hit, miss, miss[::-1], np.full(nodes, 40), hit, miss + 1])
        table = np.column_stack([table, table.sum(axis=1)])
        widths = [max(len(h), len(str(int(table[:, c].max())))) for c, h in enumerate(heads)]
        out.add(
            "",
            "Per-node numastat info (in MBs):",
            " " * 16 + " ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True)),
            " " * 16 + " ".join("-" * w for w in widths),
        )
        for label, vals in zip(labels, table, strict=True):
            out.add(
                f"{label:<16}" + " ".join(str(int(v)).rjust(w) for v, w in zip(vals, widths, strict=True))
            )
    return out.close(), n * len(labels) * (nodes + 1)


def readable(v: float) -> str:
    """iftop's readable_size with -B: 1024 steps, 3 significant digits."""
    if v < 1024:
        return f"{int(v)}B"
    for unit in ("KB", "MB", "GB"):
        v /= 1024
        if v < 1024 or unit == "GB":
            break
    return (f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}") + unit


def gen_iftop(path: Path, hours: float, rng: np.random.Generator, conns: int = 20) -> tuple[int, int]:
    """`iftop -t -n -N -B -i eth0` (no -s: a block every 2 s until stopped), iftop 1.0pre4, 20
    connections per block: 2 lines each, plus the rules, totals, peak and cumulative lines (50)."""
    pairs = [(f"10.0.{k // 250}.{k % 250 + 1}", f"10.1.0.{k % 200 + 1}") for k in range(conns)]
    rule = "-" * 92
    blocks = max(1, seconds(hours) // 2)
    out = Sink(path)
    out.add("Listening on eth0")
    cum = np.zeros((conns, 2))
    for _ in range(blocks):
        rates = rng.gamma(1.0, 40_000.0, (conns, 2)) * np.array([0.05, 1.0])
        cum += rates * 2
        order = np.argsort(-rates.sum(axis=1), kind="stable")
        out.add(
            "   # Host name (port/service if enabled)            last 2s   last 10s   last 40s cumulative",
            rule,
        )
        for rank, k in enumerate(order, 1):
            (a, z), (snd, rcv) = pairs[k], rates[k]
            out.add(
                f"{rank:4d} {a:<40} => {readable(snd):>10} {readable(snd * 0.9):>10}"
                f" {readable(snd * 0.8):>10}"
                f" {readable(cum[k, 0]):>10}",
                f"     {z:<40} <= {readable(rcv):>10} {readable(rcv * 0.9):>10} {readable(rcv * 0.8):>10}"
                f" {readable(cum[k, 1]):>10}",
            )
        s, r = rates.sum(axis=0)
        out.add(
            rule,
            f"{'Total send rate:':<48} {readable(s):>10} {readable(s * 0.9):>10} {readable(s * 0.8):>10}",
            f"{'Total receive rate:':<48} {readable(r):>10} {readable(r * 0.9):>10} {readable(r * 0.8):>10}",
            f"{'Total send and receive rate:':<48} {readable(s + r):>10} {readable((s + r) * 0.9):>10}"
            f" {readable((s + r) * 0.8):>10}",
            rule,
            f"{'Peak rate (sent/received/total):':<48} {readable(s):>10} {readable(r):>10}"
            f" {readable(s + r):>10}",
            f"{'Cumulative (sent/received/total):':<48} {readable(cum[:, 0].sum()):>10}"
            f" {readable(cum[:, 1].sum()):>10} {readable(cum.sum()):>10}",
            "=" * 92,
        )
    return out.close(), blocks * conns * 2


def gen_perf_stat(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """`perf stat -I 1000 -a` (default events) to stderr, perf 6.1 on a VM without a PMU: 8 event
    lines per interval (4 software counts, 4 `<not supported>`), the `# time` header every 25."""
    n = seconds(hours)
    out = Sink(path)
    soft = [("msec", "cpu-clock"), ("", "context-switches"), ("", "cpu-migrations"), ("", "page-faults")]
    hard = ["cycles", "instructions", "branches", "branch-misses"]
    for i in range(n):
        if i % 25 == 0:
            out.add("#           time             counts unit events")
        t = f"{i + 1 + 0.000260702 + i * 1e-6:16.9f}"
        clk = rng.uniform(1500, 2000)
        counts = [clk, int(rng.integers(2000, 40_000)), int(rng.integers(0, 60)), int(rng.integers(0, 3000))]
        for (unit, name), value in zip(soft, counts, strict=True):
            if unit:
                metric = f"# {clk / 1000:8.3f} {'CPUs utilized':<23}"
                shown = f"{value:.2f}"
            else:
                rate = value / (clk / 1000)
                metric = (
                    f"# {rate / 1000:8.3f} {'K/sec':<23}" if rate >= 1000 else f"# {rate:8.3f} {'/sec':<23}"
                )
                shown = str(value)
            out.add(f"{t} {shown:>18} {unit:<4} {name:<33}{metric}")
        for name in hard:
            out.add(f"{t} {'<not supported>':>18} {'':<4} {name:<60}")
    return out.close(), n * 8


def mysqladmin_hours(hours: float) -> float:
    """1 h instead of 24: MariaDB's 562 variables a second would make 24 h 49 M lines."""
    return min(hours, 1.0)


def gen_mysqladmin(path: Path, hours: float, rng: np.random.Generator) -> tuple[int, int]:
    """`mysqladmin extended-status -r -i1`, MariaDB 10.11: one box of all 562 variables per
    second (names from the uncut fixture), first block absolute, later ones differences (567 lines)."""
    full = (ROOT / "tests/fixtures/mysqladmin/mariadb-10.11-ext-full.out").read_text().splitlines()
    rule, head = full[0], full[1]
    names = [ln.split("|")[1].strip() for ln in full[3:] if ln.startswith("| ")]
    width = len(rule.split("+")[1]) - 2
    absolute = rng.integers(0, 10_000_000, len(names))
    n = seconds(mysqladmin_hours(hours))
    out = Sink(path)
    uptime = names.index("Uptime")
    for i in range(n):
        vals = absolute if i == 0 else rng.poisson(3.0, len(names)) * (rng.random(len(names)) < 0.3)
        if i:
            vals[uptime] = 1
            out.add("")
        out.add(rule, head, rule)
        out.extend(f"| {name:<{width}} | {int(v):<{width}} |" for name, v in zip(names, vals, strict=True))
        out.add(rule)
    return out.close(), n * len(names)


# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    name: str  # perfkit parser module
    command: str  # the command whose output is generated
    generate: Callable[[Path, float, np.random.Generator], tuple[int, int]]
    layout: str  # per-interval shape, for the report
    jc: str | None = None  # jc parser module, when jc has one for this tool
    jc_note: str = ""  # why jc has no figure, when it has none


KINDS: tuple[Kind, ...] = (
    Kind("vmstat", "vmstat -w -t 1", gen_vmstat, "1 row/s, 2 header lines every 21 rows", "vmstat"),
    Kind("iostat", "iostat -x -d -t 1", gen_iostat, "stamp + header + 16 devices + 2 blanks /s", "iostat"),
    Kind("mpstat", "mpstat -P ALL 1", gen_mpstat, "header + all + 16 CPUs + blank /s", "mpstat"),
    Kind(
        "pidstat",
        "pidstat -u -d -w 1",
        gen_pidstat,
        "-u 40 + -d 10 + -w 40 rows, 3 headers, 3 blanks /s (50 pids)",
        "pidstat",
        "jc's pidstat reads only `pidstat -h`/`-H` (one line per task with every field)",
    ),
    Kind(
        "sar", "sar -P ALL -f sa.bin", gen_sar, "all + 16 CPUs /s, one header", None, "jc has no sar parser"
    ),
    Kind(
        "sadf",
        "sadf -d sa.bin -- -P ALL",
        gen_sadf,
        "17 `;` rows /s, one header",
        None,
        "jc has no sadf parser",
    ),
    Kind(
        "top", "top -b -H -w 512 -d 1", gen_top, "5 summary + blank + header + 60 threads + blank /s", "top"
    ),
    Kind(
        "iotop",
        "iotop -botqk -d 1",
        gen_iotop,
        "Total + Current + 20 threads /s",
        None,
        "jc has no iotop parser",
    ),
    Kind(
        "ss",
        "ss -s loop (collectors/captures.py _SS_LOOP)",
        gen_ss,
        "one 12-line block /s",
        None,
        "jc's ss parser reads socket lists (`ss -a`), not the `ss -s` summary",
    ),
    Kind("ps", "ps auxww", gen_ps, "one snapshot: header + 100 k processes (not a time series)", "ps"),
    Kind(
        "numastat",
        "numastat -c (every second, 4 nodes)",
        gen_numastat,
        "one 10-line table /s, 6 rows × 5 columns",
        None,
        "jc has no numastat parser",
    ),
    Kind(
        "iftop",
        "iftop -t -n -N -B -i eth0",
        gen_iftop,
        "one 50-line block every 2 s (20 connections)",
        "iftop",
    ),
    Kind(
        "perf_stat",
        "perf stat -I 1000 -a",
        gen_perf_stat,
        "8 event lines /s, header every 25 s",
        None,
        "jc has no perf stat parser",
    ),
    Kind(
        "mysqladmin",
        "mysqladmin extended-status -r -i1",
        gen_mysqladmin,
        "one 567-line box /s (562 variables); 1 h, not 24",
        None,
        "jc has no mysqladmin parser",
    ),
)


def run(mode: str, kind: Kind, path: Path, limit: int = 0) -> dict:
    """One contender in a fresh interpreter; returns its JSON line (seconds, rows, frame_mb, maxrss_kb)."""
    args = [mode, kind.name, str(path), kind.jc or "-", str(limit), START.isoformat()]
    argv = [sys.executable, "-c", RUNNER, *args]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        return {
            "seconds": 0.0,
            "rows": 0,
            "frame_mb": 0.0,
            "maxrss_kb": 0,
            "error": proc.stderr.strip()[-400:],
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass
class Result:
    kind: Kind
    lines: int
    size_mb: float
    expected: int
    gen_s: float
    split: list[dict]
    mine: list[dict]
    jc: dict | None
    jc_lines: int
    error: str | None = None


def bench_kind(kind: Kind, path: Path, args: argparse.Namespace) -> Result:
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    lines, expected = kind.generate(path, args.hours, rng)
    gen_s = time.perf_counter() - t0
    size_mb = path.stat().st_size / 2**20
    print(f"{kind.name}: {lines:,} lines, {size_mb:.0f} MiB, generated in {gen_s:.1f} s", file=sys.stderr)
    res = Result(kind, lines, size_mb, expected, gen_s, [], [], None, 0)
    # The check is the first perfkit run: a parse that fails, returns the wrong row count or leaves
    # rows undated (the dating is part of what is timed) makes every figure for that kind
    # meaningless, so nothing else of it is timed.
    first = run("perfkit", kind, path)
    res.error = (
        first.get("error")
        or (first["rows"] != expected and f"{first['rows']:,} rows, expected {expected:,}")
        or (first.get("undated") and f"{first['undated']:,} rows without a timestamp")
        or None
    )
    if res.error:
        print(f"  CHECK FAILED: {res.error}", file=sys.stderr)
        return res
    res.mine.append(first)
    began = time.perf_counter()
    for k in range(args.repeat):  # alternate, so drift on a shared machine hits both alike
        res.split.append(run("split", kind, path))
        # The slowest parsers would take most of the run's time on their own: once a kind has used
        # --budget seconds, it keeps the runs it has (the section says how many).
        if k and time.perf_counter() - began + first["seconds"] <= args.budget:
            res.mine.append(run("perfkit", kind, path))
    if kind.jc:
        res.jc_lines = lines if lines <= args.jc_lines else args.jc_lines
        res.jc = run("jc", kind, path, 0 if res.jc_lines == lines else res.jc_lines)
    return res


def best(results: list[dict]) -> dict:
    """The fastest run, with the highest peak RSS of all runs (RSS varies little; time does)."""
    fastest = dict(min(results, key=lambda r: r["seconds"]))
    fastest["maxrss_kb"] = max(r["maxrss_kb"] for r in results)
    return fastest


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    import jc
    import pandas

    return (
        f"{cpu}, `nproc` {len(os.sched_getaffinity(0))}, {mem_kb / 2**20:.0f} GiB RAM; "
        f"Linux {platform.release()}; Python {platform.python_version()}, pandas {pandas.__version__}, "
        f"numpy {np.__version__}, jc {jc.__version__}"
    )


def code_version() -> str:
    def git(*a: str) -> str:
        return subprocess.run(
            ["git", *a], capture_output=True, text=True, cwd=ROOT, check=False
        ).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + (" (dirty)" if git("status", "--porcelain") else "")


def section(results: list[Result], base: dict, args: argparse.Namespace, wall_s: float) -> str:
    base_mb = base["maxrss_kb"] / 1024
    head = (
        "| parser | command | lines | file MB | split s | perfkit s | × split | lines/s | peak RSS MB "
        "| frame MB | RSS budget MB | speed | memory | jc s | jc RSS MB |"
    )
    rows = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|"]
    notes: list[str] = []
    missed: list[str] = []
    for r in results:
        k = r.kind
        lead = f"| {k.name} | `{k.command}` | {r.lines:,} | {r.size_mb:.0f} |"
        if r.error:
            rows.append(lead + " - | FAILED | - | - | - | - | - | - | - | - | - |")
            notes.append(f"- {k.name}: the check parse failed: {r.error}")
            missed.append(k.name)
            continue
        split, mine = best(r.split), best(r.mine)
        ratio = mine["seconds"] / split["seconds"]
        rate = r.lines / mine["seconds"]
        rss = mine["maxrss_kb"] / 1024
        budget = base_mb + RSS_FACTOR * mine["frame_mb"]
        speed_ok = rate >= SPEED_LINES_S and ratio <= SPEED_RATIO
        mem_ok = rss <= budget
        if not (speed_ok and mem_ok):
            missed.append(k.name)
        jc_s = jc_rss = "-"
        if r.jc is None:
            notes.append(f"- {k.name}: no jc figure: {k.jc_note}.")
        elif r.jc.get("error") or not r.jc["rows"]:
            jc_s = "cannot read"
            why = r.jc.get("error") or "0 records"
            notes.append(
                f"- {k.name}: jc `{k.jc}` cannot read this format ({why}). {k.jc_note}".rstrip() + "."
            )
        else:
            scale = r.lines / r.jc_lines
            est = " (est.)" if scale != 1 else ""
            jc_s = f"{r.jc['seconds'] * scale:.2f}{est}"
            jc_rss = f"{r.jc['maxrss_kb'] / 1024:.0f}" + (" (slice)" if scale != 1 else "")
            if scale != 1:
                notes.append(
                    f"- {k.name}: jc `{k.jc}` parsed the first {r.jc_lines:,} lines "
                    f"({r.jc['rows']:,} records) in {r.jc['seconds']:.2f} s; "
                    f"time × {scale:.1f}, RSS of that slice."
                )
            else:
                notes.append(f"- {k.name}: jc `{k.jc}` parsed the whole file ({r.jc['rows']:,} records).")
        rows.append(
            lead
            + f" {split['seconds']:.2f} | {mine['seconds']:.2f} | {ratio:.2f} | {rate:,.0f} | {rss:.0f} | "
            f"{mine['frame_mb']:.0f} | {budget:.0f} | {'met' if speed_ok else '**MISSED**'} | "
            f"{'met' if mem_ok else '**MISSED**'} | {jc_s} | {jc_rss} |"
        )
    layouts = "\n".join(
        f"- {r.kind.name}: {r.kind.layout}; {r.expected:,} rows expected and returned"
        + ("" if not r.error else " (check FAILED)")
        for r in results
    )
    spans = (
        f"{args.hours:g} h × 1 s (mysqladmin {mysqladmin_hours(args.hours):g} h: "
        "562 variables a second would "
        f"make 24 h 49 M lines; ps one snapshot of {ps_count(args.hours):,} processes)"
    )
    runs = "; ".join(
        f"{r.kind.name} " + ", ".join(f"{x['seconds']:.2f}" for x in r.mine) for r in results if not r.error
    )
    command = " ".join(["python scripts/bench_parsers.py", *sys.argv[1:]])
    verdict = (
        f"All {len(results)} parsers met both targets."
        if not missed
        else f"Missed a target (or failed): {', '.join(missed)}."
    )
    return "\n".join(
        [
            f"## {TITLE}",
            "",
            f"Targets (issue 5): ≥ {SPEED_LINES_S // 1000} k lines/s and ≤ {SPEED_RATIO:g}× a plain "
            f"`for line in f: line.split()` over the same file; peak RSS ≤ baseline + {RSS_FACTOR:g} × frame "
            f"(`memory_usage(deep=True)`), baseline = interpreter + `import pandas` = {base_mb:.0f} MB.",
            "",
            f"Input: generated captures (seeded RNG, layouts from tests/fixtures/), {spans}. Each contender "
            f"ran in a fresh interpreter; time is the parse only (imports excluded), best of {args.repeat} "
            "(see the runs below); "
            "peak RSS is the VmHWM of that process (the highest of the runs), perfkit's bytecode written "
            "first as installing it does. perfkit's parse is the call "
            "`perfkit analyze` makes, `parsers.parse(kind, path, context)` with a manifest's host, zone and "
            "start (top and iotop are dated by it). The first perfkit run checked the row count and that "
            "every row is dated.",
            "",
            "\n".join(rows),
            "",
            verdict,
            "",
            "Layouts (per interval):",
            "",
            layouts,
            "",
            "jc:",
            "",
            "\n".join(notes),
            "",
            f"perfkit runs (s; fewer than {args.repeat} where a kind hit the {args.budget:g} s "
            f"budget): {runs}.",
            "",
            f"Command: `{command}` (ran {wall_s:.0f} s)  ",
            f"Machine: {machine()}  ",
            f"Code: {code_version()}  ",
            f"Date: {dt.date.today().isoformat()}",
            "",
        ]
    )


def pick(names: str | None) -> list[Kind]:
    if not names:
        return list(KINDS)
    by_name = {k.name: k for k in KINDS}
    unknown = [n for n in names.split(",") if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown kinds {unknown}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24.0, help="span of each time series (default 24)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender; the fastest is kept")
    ap.add_argument("--kinds", help="comma-separated subset, e.g. vmstat,top (default: all)")
    ap.add_argument("--jc-lines", type=int, default=20_000, help="lines given to jc at most (extrapolated)")
    ap.add_argument(
        "--budget", type=float, default=30.0, help="seconds of repeats per kind before it stops repeating"
    )
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--out", type=Path, help=f"write/replace the '{TITLE}' section of this Markdown file")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.hours <= 0:
        raise SystemExit("--repeat must be >= 1 and --hours > 0")
    kinds = pick(args.kinds)

    start = time.perf_counter()
    results = []
    write_bytecode()
    with tempfile.TemporaryDirectory(prefix="perfkit-bench-") as tmp:
        base = run("baseline", KINDS[0], Path(tmp))
        for kind in kinds:
            path = Path(tmp) / f"{kind.name}.txt"
            results.append(bench_kind(kind, path, args))
            path.unlink()  # one capture on disk at a time (the 24 h set is ~2.7 GB)
    text = section(results, base, args, time.perf_counter() - start)
    print(text)
    if args.out:
        write_section(args.out, text, TITLE)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An in-process psutil sampler for the local host: per-second system counters and the top processes.

It needs no external tool, so a machine without sysstat still yields a usable archive, and it
measures perfkit itself (CPU share, RSS) while the window runs. One JSON object per line
(kind `psutil`, read by parsers/psutil.py); counters are written raw (cumulative), rates are
derived by the parser, so a missed sample loses nothing.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import psutil

TOP_PROCESSES = 10


def sample(me: psutil.Process, procs: dict[int, psutil.Process]) -> dict[str, Any]:
    """One observation of the whole machine, the busiest processes and perfkit itself."""
    cpu = psutil.cpu_times()
    mem, swap = psutil.virtual_memory(), psutil.swap_memory()
    disks = psutil.disk_io_counters(perdisk=True) or {}
    nics = psutil.net_io_counters(pernic=True) or {}
    rows = []
    seen = set()
    for p in psutil.process_iter(["pid", "name"]):
        seen.add(p.pid)
        proc = procs.setdefault(p.pid, p)  # keep the object: cpu_percent() measures since its last call
        try:
            with proc.oneshot():
                io = proc.io_counters() if hasattr(proc, "io_counters") else None
                rows.append(
                    {
                        "pid": proc.pid,
                        "name": proc.name(),
                        "cpu_pct": proc.cpu_percent(None),
                        "rss_kb": proc.memory_info().rss >> 10,
                        "read_bytes": io.read_bytes if io else None,
                        "write_bytes": io.write_bytes if io else None,
                    }
                )
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    for pid in list(procs):
        if pid not in seen:
            del procs[pid]
    rows.sort(key=lambda r: r["cpu_pct"], reverse=True)
    with me.oneshot():
        mine = {"cpu_pct": me.cpu_percent(None), "rss_kb": me.memory_info().rss >> 10}
    return {
        "t": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "ncpu": psutil.cpu_count(),
        "cpu_s": {
            k: getattr(cpu, k)
            for k in ("user", "nice", "system", "idle", "iowait", "steal")
            if hasattr(cpu, k)
        },
        "load1": os.getloadavg()[0],
        "mem_kb": {"total": mem.total >> 10, "available": mem.available >> 10, "swap_used": swap.used >> 10},
        "swap_io": {"sin": swap.sin, "sout": swap.sout},
        "disk": {
            d: {
                "read_bytes": c.read_bytes,
                "write_bytes": c.write_bytes,
                "reads": c.read_count,
                "writes": c.write_count,
                "busy_ms": getattr(c, "busy_time", None),
            }
            for d, c in disks.items()
        },
        "net": {n: {"rx_bytes": c.bytes_recv, "tx_bytes": c.bytes_sent} for n, c in nics.items()},
        "top": rows[:TOP_PROCESSES],
        "perfkit": mine,
    }


class Sampler:
    """Writes one `sample()` per interval to `out` until stopped; remembers perfkit's own figures."""

    def __init__(self, out: IO[str], interval: float, samples: int):
        self.out, self.interval, self.samples = out, interval, samples
        self.stop = threading.Event()
        self.own_cpu_pct: list[float] = []
        self.own_rss_kb = 0
        self.error: str | None = None
        self.thread = threading.Thread(target=self._loop, name="psutil-sampler", daemon=True)

    def _loop(self) -> None:
        me, procs = psutil.Process(), {}
        sample(me, procs)  # prime cpu_percent(): the first call of each process has no interval yet
        start = time.monotonic()
        try:
            for i in range(1, self.samples + 1):
                if self.stop.wait(max(0.0, start + i * self.interval - time.monotonic())):
                    break
                obs = sample(me, procs)
                self.own_cpu_pct.append(obs["perfkit"]["cpu_pct"])
                self.own_rss_kb = max(self.own_rss_kb, obs["perfkit"]["rss_kb"])
                self.out.write(json.dumps(obs, separators=(",", ":")) + "\n")
                self.out.flush()
        except OSError as exc:  # disk full on the archive side: keep what was written
            self.error = exc.strerror or str(exc)

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)


def run_sampler(path: Path, interval: float, samples: int) -> Sampler:
    fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by the caller via sampler.out
    return Sampler(fh, interval, samples).start()

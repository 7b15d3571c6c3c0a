"""psutil: perfkit's in-process sampler (collectors/sampler.py), one JSON object per line.

Reads `hosts/<host>/psutil.out` from `perfkit collect --local`. The sampler writes raw cumulative
counters; rates here are the differences between consecutive samples over their time apart (the
first row's rates are NaN). Disk sums skip loop/ram devices and partitions of a listed disk, so
no IO is counted twice.

Columns: timestamp (UTC), host, ncpu, cpu_user_pct, cpu_system_pct, cpu_iowait_pct,
cpu_steal_pct, cpu_idle_pct (share of all CPUs' time in the interval), load1, mem_total_kb,
mem_available_kb, swap_used_kb, swap_in_kb_s, swap_out_kb_s, disk_read_kb_s, disk_write_kb_s,
disk_reads_s, disk_writes_s, net_rx_kb_s, net_tx_kb_s, perfkit_cpu_pct (perfkit's own process,
percent of one CPU), perfkit_rss_kb.
Tested on: tests/fixtures/psutil/ (see README.md there).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ._common import Lines, Source, coerce, empty_frame

KIND = "psutil"
_CPU_STATES = ("user", "system", "iowait", "steal", "idle")
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "ncpu": "Int64",
    **{f"cpu_{k}_pct": "float64" for k in _CPU_STATES},
    "load1": "float64",
    "mem_total_kb": "float64",
    "mem_available_kb": "float64",
    "swap_used_kb": "float64",
    "swap_in_kb_s": "float64",
    "swap_out_kb_s": "float64",
    "disk_read_kb_s": "float64",
    "disk_write_kb_s": "float64",
    "disk_reads_s": "float64",
    "disk_writes_s": "float64",
    "net_rx_kb_s": "float64",
    "net_tx_kb_s": "float64",
    "perfkit_cpu_pct": "float64",
    "perfkit_rss_kb": "float64",
}


def sniff(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith('{"t":') and '"cpu_s":' in first and '"perfkit":' in first


def _whole_disks(names: list[str]) -> list[str]:
    """Disks without loop/ram devices and without partitions of a disk that is also listed."""
    keep = [n for n in names if not n.startswith(("loop", "ram", "zram"))]
    return [n for n in keep if not any(n != o and n.startswith(o) for o in keep)]


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse sampler output. `tz` is unused: the sampler writes UTC.

    Raises:
        ParseError: a line that is not a sampler object, unless it is the cut-off last line.
    """
    lines = Lines(source, KIND)
    obs: list[dict] = []
    pending: tuple[int, str] | None = None  # a bad line: fatal unless it is the last
    for line_no, line in lines:
        if not line.strip():
            continue
        if pending is not None:
            raise lines.error(*pending, "not a psutil sampler line")
        try:
            o = json.loads(line)
            if not isinstance(o, dict) or "t" not in o or "cpu_s" not in o:
                raise ValueError
            obs.append(o)
        except ValueError:
            pending = (line_no, line)
    # dropped: the bad last line, or a good one cut off mid-write (its numbers may be cut too)
    dropped = int(pending is not None or (bool(obs) and not lines.last_complete))
    if dropped and pending is None:
        obs.pop()
    try:
        df = _frame(obs, host) if obs else empty_frame(SCHEMA)
    except (KeyError, TypeError, ValueError) as exc:
        raise lines.error(1, "", f"sampler object lacks a field: {exc}") from None
    df.attrs["dropped_lines"] = dropped
    return df


def _frame(obs: list[dict], host: str | None) -> pd.DataFrame:
    t = pd.to_datetime([o["t"] for o in obs], utc=True, format="ISO8601")
    secs = np.asarray((t - t[0]) / pd.Timedelta(seconds=1), dtype=float)  # whatever unit pandas chose
    dt = np.diff(secs, prepend=np.nan)
    dt[~(dt > 0)] = np.nan  # a repeated or backwards stamp (clock step): no rate, never inf
    busy = pd.DataFrame([o["cpu_s"] for o in obs]).astype(float).diff()
    total = busy.sum(axis=1, min_count=1)
    total = total.where(total > 0)

    def rate(values: list[float], scale: float = 1.0) -> np.ndarray:
        return np.diff(np.asarray(values, dtype=float), prepend=np.nan) / dt / scale

    def summed(group: str, names: list[str], key: str) -> list[float]:
        return [sum(o[group].get(name, {}).get(key, 0) for name in names) for o in obs]

    data: dict[str, object] = {
        "timestamp": t,
        "host": pd.array([host] * len(obs), dtype="string"),
        "ncpu": pd.array([o.get("ncpu") for o in obs], dtype="Int64"),
        **{f"cpu_{k}_pct": busy[k] / total * 100 if k in busy else np.nan for k in _CPU_STATES},
        "load1": [o.get("load1") for o in obs],
        "mem_total_kb": [o["mem_kb"]["total"] for o in obs],
        "mem_available_kb": [o["mem_kb"]["available"] for o in obs],
        "swap_used_kb": [o["mem_kb"]["swap_used"] for o in obs],
        "swap_in_kb_s": rate([o["swap_io"]["sin"] for o in obs], 1024),
        "swap_out_kb_s": rate([o["swap_io"]["sout"] for o in obs], 1024),
    }
    disks = _whole_disks(list(obs[-1]["disk"]))
    data["disk_read_kb_s"] = rate(summed("disk", disks, "read_bytes"), 1024)
    data["disk_write_kb_s"] = rate(summed("disk", disks, "write_bytes"), 1024)
    data["disk_reads_s"] = rate(summed("disk", disks, "reads"))
    data["disk_writes_s"] = rate(summed("disk", disks, "writes"))
    nics = [n for n in obs[-1]["net"] if n != "lo"]
    data["net_rx_kb_s"] = rate(summed("net", nics, "rx_bytes"), 1024)
    data["net_tx_kb_s"] = rate(summed("net", nics, "tx_bytes"), 1024)
    data["perfkit_cpu_pct"] = [o["perfkit"]["cpu_pct"] for o in obs]
    data["perfkit_rss_kb"] = [o["perfkit"]["rss_kb"] for o in obs]
    return coerce(pd.DataFrame(data), SCHEMA)

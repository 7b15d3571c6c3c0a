"""The USE view (utilization, saturation, errors per resource and host) and the aligned timeline.

Pure functions of the Dataset (and the sweep model): no I/O, no plotting. The report renderers
lay these rows out; findings.json carries them as `use` and `timeline`.

Sources, best first where several captures measure the same thing (the others are not repeated):

| resource | check | metric | sources |
|---|---|---|---|
| cpu | utilization | busy % = 100 − idle − iowait (`analyzers/cpu.idle_pct`) | mpstat, vmstat, sar, psutil |
| cpu | utilization | hottest CPU busy % (the busiest single CPU's mean) | mpstat, sar/sadf `-P ALL` |
| cpu | saturation | run queue / CPU (> 1: runnable tasks wait) | vmstat `r`, sar `-q` runq-sz, psutil load1 |
| mem | utilization | used % | sar/sadf `-r` %memused, psutil (1 − available / total) |
| mem | saturation | swap in, swap out (KiB/s) | vmstat si/so, psutil |
| disk | utilization | %util per device | iostat, sar/sadf `-d` |
| disk | saturation | aqu-sz, await (ms) per device | iostat, sar/sadf `-d` |
| net | utilization | rx+tx kB/s per interface (not lo) | sar/sadf `-n DEV` |
| net | saturation | TIME_WAIT sockets | ss |
| net | errors | TCP retransmits/s | sar/sadf `-n ETCP`, nstat / `netstat -s` series |
| net | errors | TCP retransmits % of segments sent | nstat / `netstat -s` series |
| net | errors | listen queue drops/s (what a full accept queue dropped) | nstat / `netstat -s` series |

The CPU count for run queue / CPU is `Dataset.cpu_count` (nproc, sysstat banners, listed CPUs, psutil).
Rows are per host and per sweep step (a `perfkit run` archive has captures per step); the first
report of vmstat and iostat (averages since boot) is left out. Idle disks and interfaces (below
`IDLE_IOPS` / `IDLE_KB_S` on average) are not listed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from perfkit.analyzers.cpu import idle_pct, thread_rows
from perfkit.dataset import Capture, Dataset
from perfkit.findings import count
from perfkit.manifest import Record

IDLE_IOPS = 1.0  # mean r/s + w/s below this: the device did no work worth a row
IDLE_KB_S = 1.0  # mean rx + tx kB/s below this: an unused interface

CHECKS = ("utilization", "saturation", "errors")


@dataclass(frozen=True)
class UseRow:
    """One metric of one resource instance on one host during one step (or the whole capture)."""

    resource: str  # cpu | mem | disk | net
    host: str | None
    instance: str  # "all", a device, an interface
    check: str  # utilization | saturation | errors
    metric: str
    unit: str
    step: str | None
    threads: int | None
    mean: float
    max: float
    samples: int
    source: str  # capture path, so a reader can recompute

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProcessRow:
    """A process (or thread) among a host's busiest, from top, pidstat or ps."""

    host: str | None
    step: str | None
    command: str
    pid: int | None
    cpu_pct_mean: float
    cpu_pct_max: float
    source: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------- USE rows


def use_rows(ds: Dataset) -> list[UseRow]:
    """Every USE row the dataset has data for, ordered by resource, host, step, metric."""
    cpus = _cpu_counts(ds)
    threads = ds.step_threads()
    candidates: list[tuple[int, UseRow]] = []
    for cap in ds.captures:
        for rank, row in _rows_of(cap, cpus):
            candidates.append((rank, _with_threads(row, threads)))
    best: dict[tuple, tuple[int, UseRow]] = {}
    for rank, row in candidates:
        key = (row.resource, row.host, row.instance, row.check, row.metric, row.step)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, row)
    order = {r: i for i, r in enumerate(("cpu", "mem", "disk", "net"))}
    rows = [r for _, r in best.values()]
    return sorted(
        rows,
        key=lambda r: (
            order[r.resource],
            r.host or "",
            r.threads if r.threads is not None else -1,
            r.step or "",
            CHECKS.index(r.check),
            r.instance,
            r.metric,
        ),
    )


def _with_threads(row: UseRow, threads: dict[str, int]) -> UseRow:
    if row.step is None or row.step not in threads:
        return row
    return UseRow(**{**asdict(row), "threads": threads[row.step]})


def _cpu_counts(ds: Dataset) -> dict[tuple[str | None, str | None], int]:
    """(host, step) -> CPUs, from `Dataset.cpu_count`, the one place a host's CPU count comes from."""
    out: dict[tuple[str | None, str | None], int] = {}
    for key in {(c.host, c.step) for c in ds.captures}:
        known = ds.cpu_count(*key)
        if known is not None:
            out[key] = known[0]
    return out


def _stats(values: pd.Series) -> tuple[float, float, int] | None:
    v = pd.to_numeric(values, errors="coerce").astype(float).dropna()
    if v.empty:
        return None
    return float(v.mean()), float(v.max()), int(len(v))


def _row(cap: Capture, resource: str, instance: str, check: str, metric: str, unit: str, values) -> list:
    s = _stats(values)
    if s is None:
        return []
    return [
        UseRow(
            resource=resource,
            host=cap.host,
            instance=instance,
            check=check,
            metric=metric,
            unit=unit,
            step=cap.step,
            threads=None,
            mean=s[0],
            max=s[1],
            samples=s[2],
            source=cap.path,
        )
    ]


# named with what they count: a report of perfkit's before 2026-11-29 counted iowait as busy, and
# `compare` pairs rows by name, so it never sets those numbers beside these
BUSY = "busy % (100 − idle − iowait)"
HOTTEST = "hottest CPU busy % (100 − idle − iowait)"
RUNQ = "run queue / CPU"
RUNQ_RAW = "run queue (CPU count unknown)"


def _runq(cap: Capture, values: pd.Series, cpus: dict[tuple[str | None, str | None], int]) -> list[UseRow]:
    n = cpus.get((cap.host, cap.step))
    if n:
        return _row(cap, "cpu", "all", "saturation", RUNQ, "ratio", values.astype(float) / n)
    return _row(cap, "cpu", "all", "saturation", RUNQ_RAW, "tasks", values)


def _rows_of(cap: Capture, cpus: dict[tuple[str | None, str | None], int]) -> list[tuple[int, UseRow]]:
    """(rank, row) pairs: rank orders the sources of one metric (0 = preferred)."""
    f = cap.frame
    if f.empty:
        return []
    out: list[tuple[int, UseRow]] = []

    def add(rank: int, rows: list[UseRow]) -> None:
        out.extend((rank, r) for r in rows)

    if cap.kind == "vmstat":
        f = f[~f["since_boot"].astype(bool)]
        add(1, _row(cap, "cpu", "all", "utilization", BUSY, "%", 100 - idle_pct("vmstat", f)))
        add(0, _runq(cap, f["r"], cpus))
        add(0, _row(cap, "mem", "swap", "saturation", "swap in", "KiB/s", f["si"]))
        add(0, _row(cap, "mem", "swap", "saturation", "swap out", "KiB/s", f["so"]))
    elif cap.kind == "mpstat":
        busy = 100 - idle_pct("mpstat", f[f["cpu"] == "all"])
        add(0, _row(cap, "cpu", "all", "utilization", BUSY, "%", busy))
        add(0, _hottest(cap, f, "cpu"))
    elif cap.kind in ("sar", "sadf"):
        rank = 2 if cap.kind == "sar" else 1  # sadf -P ALL lists every CPU; sar's stdout only `all`
        cpu = f[f["table"] == "cpu"]
        add(
            rank,
            _row(
                cap,
                "cpu",
                "all",
                "utilization",
                BUSY,
                "%",
                100 - idle_pct(cap.kind, cpu[cpu["instance"] == "all"]),
            ),
        )
        add(rank, _hottest(cap, cpu, "instance"))
        add(1, _runq(cap, f.loc[f["table"] == "queue", "runq_sz"], cpus))
        add(
            0,
            _row(
                cap, "mem", "ram", "utilization", "used %", "%", f.loc[f["table"] == "memory", "memused_pct"]
            ),
        )
        disk = f[f["table"] == "disk"]
        for dev, g in disk.groupby("instance", sort=True):
            if g["tps"].astype(float).mean() < IDLE_IOPS and not (g["util_pct"].astype(float).mean() >= 1):
                continue
            add(1, _disk_rows(cap, str(dev), g))
        net = f[(f["table"] == "net_dev") & (f["instance"] != "lo")]
        for iface, g in net.groupby("instance", sort=True):
            kb = g["rxkb_s"].astype(float) + g["txkb_s"].astype(float)
            if not kb.mean() >= IDLE_KB_S:
                continue
            add(0, _row(cap, "net", str(iface), "utilization", "rx+tx", "kB/s", kb))
            if (g["ifutil_pct"].astype(float) > 0).any():
                add(0, _row(cap, "net", str(iface), "utilization", "interface util %", "%", g["ifutil_pct"]))
        etcp = f[f["table"] == "net_etcp"]
        add(0, _row(cap, "net", "tcp", "errors", "TCP retransmits", "segments/s", etcp["retrans_s"]))
    elif cap.kind == "iostat":
        f = f[~f["since_boot"].astype(bool)]
        for dev, g in f.groupby("device", sort=True):
            iops = g["r_s"].astype(float).fillna(0) + g["w_s"].astype(float).fillna(0)
            if iops.mean() < IDLE_IOPS and not (g["util_pct"].astype(float).mean() >= 1):
                continue
            add(0, _disk_rows(cap, str(dev), g))
    elif cap.kind == "ss":
        tw = f["timewait_sockets"] if f["timewait_sockets"].notna().any() else f["tcp_timewait"]
        add(0, _row(cap, "net", "tcp", "saturation", "TIME_WAIT sockets", "sockets", tw))
    elif cap.kind == "netstat_s":
        add(1, _tcp_errors(cap))
    elif cap.kind == "psutil":
        add(3, _row(cap, "cpu", "all", "utilization", BUSY, "%", 100 - idle_pct("psutil", f)))
        add(2, _runq(cap, f["load1"], cpus))
        avail = 100 * (1 - f["mem_available_kb"].astype(float) / f["mem_total_kb"].astype(float))
        add(1, _row(cap, "mem", "ram", "utilization", "used %", "%", avail))
        add(1, _row(cap, "mem", "swap", "saturation", "swap in", "KiB/s", f["swap_in_kb_s"]))
        add(1, _row(cap, "mem", "swap", "saturation", "swap out", "KiB/s", f["swap_out_kb_s"]))
    return out


def _hottest(cap: Capture, f: pd.DataFrame, col: str) -> list[UseRow]:
    """The busiest single CPU: a host 40% busy overall can still have one CPU pinned at 100%."""
    ids = f[col].astype(str)
    per = f[ids.str.fullmatch(r"\d+")]
    if per.empty or per[col].nunique() < 2:
        return []
    busy = 100 - idle_pct(cap.kind, per)
    means = busy.groupby(per[col].astype(str)).mean().dropna()
    if means.empty:
        return []
    cpu = str(means.idxmax())
    return _row(cap, "cpu", f"cpu {cpu}", "utilization", HOTTEST, "%", busy[per[col].astype(str) == cpu])


def _tcp_errors(cap: Capture) -> list[UseRow]:
    """TCP's error counters a second, from perfkit's nstat capture or a `netstat -s` series (the rates
    the net.* rules read: analyzers/net.py `tcp_rates`)."""
    from perfkit.analyzers.net import tcp_rates  # analysis imports nothing of reports: no cycle

    r = tcp_rates(cap.frame, cap.kind)
    rows: list[UseRow] = []
    if "retrans" in r:
        rows += _row(cap, "net", "tcp", "errors", "TCP retransmits", "segments/s", r["retrans"])
        if "out_segs" in r:
            share = 100 * r["retrans"] / r["out_segs"].where(r["out_segs"] > 0)
            rows += _row(cap, "net", "tcp", "errors", "TCP retransmits % of segments sent", "%", share)
    drops = r["drops"] if "drops" in r else r.get("overflows")
    if drops is not None:
        rows += _row(cap, "net", "tcp", "errors", "listen queue drops", "/s", drops)
    return rows


def _disk_rows(cap: Capture, dev: str, g: pd.DataFrame) -> list[UseRow]:
    return (
        _row(cap, "disk", dev, "utilization", "%util", "%", g["util_pct"])
        + _row(cap, "disk", dev, "saturation", "aqu-sz", "requests", g["aqu_sz"])
        + _row(cap, "disk", dev, "saturation", "await", "ms", g["await_ms"])
    )


# ---------------------------------------------------------------- the table layout


@dataclass
class UseTable:
    """One resource on one host: a row per (check, instance, metric), a column per step."""

    resource: str
    host: str | None
    columns: list[str]  # "8 threads (t0008)" or "whole capture"
    rows: list[dict[str, Any]] = field(default_factory=list)  # check, instance, metric, unit, cells, sources


def use_tables(rows: list[UseRow]) -> list[UseTable]:
    """Pivot the rows: one table per (resource, host), steps as columns in thread order."""
    tables: dict[tuple[str, str | None], UseTable] = {}
    steps: dict[tuple[str, str | None], list[tuple[str | None, int | None]]] = {}
    for r in rows:
        key = (r.resource, r.host)
        steps.setdefault(key, [])
        if (r.step, r.threads) not in steps[key]:
            steps[key].append((r.step, r.threads))
    for key, st in steps.items():
        st.sort(key=lambda s: (s[1] if s[1] is not None else -1, s[0] or ""))
        tables[key] = UseTable(resource=key[0], host=key[1], columns=[_column(s, t) for s, t in st])
    lines: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        key = (r.resource, r.host)
        line_key = (*key, r.check, r.instance, r.metric)
        if line_key not in lines:
            line = {
                "check": r.check,
                "instance": r.instance,
                "metric": r.metric,
                "unit": r.unit,
                "cells": [None] * len(tables[key].columns),
                "sources": [],
            }
            lines[line_key] = line
            tables[key].rows.append(line)
        line = lines[line_key]
        line["cells"][steps[key].index((r.step, r.threads))] = (r.mean, r.max)
        if r.source not in line["sources"]:
            line["sources"].append(r.source)
    for t in tables.values():
        t.rows.sort(key=lambda x: (CHECKS.index(x["check"]), x["instance"], x["metric"]))
    return list(tables.values())


def _column(step: str | None, threads: int | None) -> str:
    if step is None:
        return "whole capture"
    return f"{count(threads, 'thread')} ({step})" if threads is not None else step


def fmt_cell(cell: tuple[float, float] | None) -> str:
    """`mean (max)`, compact: the figure to read first, then the peak."""
    if cell is None:
        return "–"
    return f"{_short(cell[0])} ({_short(cell[1])})"


def _short(v: float) -> str:
    if not math.isfinite(v):
        return "n/a"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


# ---------------------------------------------------------------- busiest processes


def top_processes(ds: Dataset, n: int = 5) -> list[ProcessRow]:
    """Per host and step, the `n` busiest processes/threads by mean %CPU: pidstat, else top, else ps.

    ps's %CPU is the average over the process's lifetime, not over the window: said in `note`.
    """
    by_key: dict[tuple[str | None, str | None], list[ProcessRow]] = {}
    for kind in ("pidstat", "top", "ps"):
        for cap in ds.of(kind):
            key = (cap.host, cap.step)
            if key in by_key or cap.frame.empty:
                continue
            rows = _busiest(cap, n)
            if rows:
                by_key[key] = rows
    return [r for key in sorted(by_key, key=lambda k: (k[0] or "", k[1] or "")) for r in by_key[key]]


def _busiest(cap: Capture, n: int) -> list[ProcessRow]:
    f = cap.frame
    if cap.kind == "pidstat":
        f = f[f["cpu_pct"].notna()]
        ids = f["tid"].fillna(f["pid"]) if "tid" in f else f["pid"]
        f = f.assign(_id=ids)
    else:
        f = f[f["cpu_pct"].notna()]
        if cap.kind == "top":  # a leader row that holds its whole process is no busy thread
            f = thread_rows(cap, f)
        f = f.assign(_id=f["pid"])
    if f.empty:
        return []
    g = f.groupby(["_id", "command"], dropna=False)["cpu_pct"].agg(["mean", "max"])
    g = g.sort_values(["mean", "max"], ascending=False).head(n)
    note = "ps: average over the process's lifetime" if cap.kind == "ps" else ""
    return [
        ProcessRow(
            host=cap.host,
            step=cap.step,
            command=str(cmd),
            pid=None if pd.isna(pid) else int(pid),
            cpu_pct_mean=float(row["mean"]),
            cpu_pct_max=float(row["max"]),
            source=cap.path,
            note=note,
        )
        for (pid, cmd), row in g.iterrows()
    ]


# ---------------------------------------------------------------- the timeline


@dataclass
class StepSpan:
    """A load step on the controller's clock (UTC)."""

    name: str
    threads: int | None
    start: pd.Timestamp
    end: pd.Timestamp


@dataclass
class Timeline:
    """Load intervals and host series on one clock: the controller's, in UTC.

    `load`: timestamp, threads, tps, lat_ms, lat_pct (one row per load-generator interval).
    `series`: timestamp, panel (`cpu` busy %, `disk` %util), label (host or host:device), value.
    Host timestamps are shifted by the capture's `clock_offset_s` (host minus controller).
    """

    load: pd.DataFrame
    series: pd.DataFrame
    steps: list[StepSpan]

    @classmethod
    def none(cls) -> Timeline:
        """A timeline with nothing aligned on it."""
        return cls(pd.DataFrame(columns=_LOAD_COLUMNS), pd.DataFrame(columns=_SERIES_COLUMNS), [])

    @property
    def empty(self) -> bool:
        return self.load.empty and self.series.empty

    def summary(self) -> dict[str, Any]:
        """The `timeline` block of findings.json: the clock span, the steps, what was aligned."""
        # each column's ends, not one concatenated column: an empty load frame's object column would
        # turn a day of host timestamps into Python objects (1.1 s for 4 hosts x 3 h)
        cols = (self.load["timestamp"], self.series["timestamp"])
        ends = [t for col in cols for t in (col.min(), col.max()) if pd.notna(t)]
        iso = _iso
        return {
            "clock": "controller, UTC",
            "start": iso(min(ends)) if ends else None,
            "end": iso(max(ends)) if ends else None,
            "steps": [
                {"name": s.name, "threads": s.threads, "start": iso(s.start), "end": iso(s.end)}
                for s in self.steps
            ],
            "load_intervals": int(len(self.load)),
            "series": sorted(
                f"{p}:{lab}"
                for p, lab in self.series[["panel", "label"]].drop_duplicates().itertuples(index=False)
            ),
        }


def _iso(ts: pd.Timestamp) -> str:
    return ts.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


_LOAD_COLUMNS = ["timestamp", "threads", "tps", "lat_ms", "lat_pct"]
_SERIES_COLUMNS = ["timestamp", "panel", "label", "value"]


def timeline(ds: Dataset, sweep: Any | None) -> Timeline:
    """Align the load's intervals and every host's CPU and disk series on the controller's clock.

    A load interval's time is its record's `started_at` plus the tool's elapsed `time_s`. Captures
    without timestamps (a foreign archive's sysbench logs, top without a date) are left out.
    """
    records = ds.records
    load_parts, spans = [], []
    for s in getattr(sweep, "steps", None) or []:
        rec = records.get(s.source)
        iv = s.all_intervals
        if rec is None or not rec.started_at:
            continue
        start = pd.Timestamp(rec.started_at) - pd.Timedelta(seconds=rec.clock_offset_s or 0)
        end = pd.Timestamp(rec.ended_at) if rec.ended_at else None
        if iv is not None and not iv.empty:
            t = start + pd.to_timedelta(iv["time_s"].astype(float).to_numpy(), unit="s")
            load_parts.append(
                pd.DataFrame(
                    {
                        "timestamp": t,
                        "threads": s.threads,
                        "tps": iv["tps"].astype(float).to_numpy(),
                        "lat_ms": iv["lat_ms"].astype(float).to_numpy(),
                        "lat_pct": iv["lat_pct"].astype(float).to_numpy(),
                    }
                )
            )
            end = end or t.max()
        if end is not None:
            spans.append(StepSpan(name=rec.step or s.source, threads=s.threads, start=start, end=end))
    if not spans:
        spans = _manifest_spans(ds)
    load = pd.concat(load_parts, ignore_index=True) if load_parts else pd.DataFrame(columns=_LOAD_COLUMNS)
    series = _host_series(ds, records)
    return Timeline(load=load, series=series, steps=sorted(spans, key=lambda s: s.start))


def _manifest_spans(ds: Dataset) -> list[StepSpan]:
    sweep = ds.run.sweep
    out = []
    for st in sweep.steps if sweep else []:
        if st.started_at and st.ended_at:
            out.append(
                StepSpan(
                    name=st.name,
                    threads=st.threads,
                    start=pd.Timestamp(st.started_at),
                    end=pd.Timestamp(st.ended_at),
                )
            )
    return out


def _host_series(ds: Dataset, records: dict[str, Record]) -> pd.DataFrame:
    """CPU busy % per host (one source per host, the best the host has) and %util per busy disk."""
    cpu_rank = {"mpstat": 0, "vmstat": 1, "sadf": 2, "sar": 3, "psutil": 4}
    frames = [(cap, cap.frame) for cap in ds.captures]
    best_cpu: dict[str | None, int] = {}
    for cap, f in frames:
        if cap.kind in cpu_rank and _has_times(f):
            best_cpu[cap.host] = min(best_cpu.get(cap.host, 99), cpu_rank[cap.kind])
    disk_kind: dict[str | None, str] = {}
    for cap, f in frames:
        if _has_times(f) and (
            cap.kind == "iostat" or (cap.kind in ("sar", "sadf") and (f["table"] == "disk").any())
        ):
            disk_kind[cap.host] = "iostat" if cap.kind == "iostat" else disk_kind.get(cap.host, cap.kind)
    parts = []
    for cap, f in frames:
        if not _has_times(f):
            continue
        rec = records.get(cap.path)
        offset = pd.Timedelta(seconds=(rec.clock_offset_s if rec else None) or 0)
        host = cap.host or "?"
        if cap.kind in cpu_rank and cpu_rank[cap.kind] == best_cpu.get(cap.host):
            busy = _busy_series(cap.kind, f)
            if busy is not None:
                parts.append(
                    pd.DataFrame(
                        {"timestamp": busy[0] - offset, "panel": "cpu", "label": host, "value": busy[1]}
                    )
                )
        if disk_kind.get(cap.host) == cap.kind:
            if cap.kind == "iostat":
                d = f[~f["since_boot"].astype(bool)]
                dev_col, iops = "device", d["r_s"].astype(float).fillna(0) + d["w_s"].astype(float).fillna(0)
            else:
                d = f[f["table"] == "disk"]
                dev_col, iops = "instance", d["tps"].astype(float)
            for dev, g in d.assign(_iops=iops).groupby(dev_col, sort=True):
                if g["_iops"].mean() < IDLE_IOPS and not (g["util_pct"].astype(float).mean() >= 1):
                    continue
                parts.append(
                    pd.DataFrame(
                        {
                            "timestamp": g["timestamp"] - offset,
                            "panel": "disk",
                            "label": f"{host}:{dev}",
                            "value": g["util_pct"].astype(float),
                        }
                    )
                )
    if not parts:
        return pd.DataFrame(columns=_SERIES_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out = out[out["timestamp"].notna() & out["value"].notna()]
    return out.sort_values(["panel", "label", "timestamp"], kind="stable").reset_index(drop=True)


def _has_times(f: pd.DataFrame) -> bool:
    return "timestamp" in f.columns and len(f) > 0 and f["timestamp"].notna().any()


def _busy_series(kind: str, f: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    if kind == "mpstat":
        f = f[f["cpu"] == "all"]
        return f["timestamp"], 100 - idle_pct(kind, f)
    if kind == "vmstat":
        f = f[~f["since_boot"].astype(bool)]
        return f["timestamp"], 100 - idle_pct(kind, f)
    if kind in ("sar", "sadf"):
        f = f[(f["table"] == "cpu") & (f["instance"] == "all")]
        return (f["timestamp"], 100 - idle_pct(kind, f)) if len(f) else None
    if kind == "psutil":
        return f["timestamp"], 100 - idle_pct(kind, f)
    return None


def tier_rt(ds: Dataset, sweep: Any | None) -> pd.DataFrame:
    """RT per tier per thread count: columns threads, tier, rt_ms.

    The client's average RT and the server's (Little's law on Threads_running) come from the sweep;
    further tiers from `tiers` captures (threads, tier, rt_ms) when a parser for them exists.
    """
    rows = []
    for s in getattr(sweep, "steps", None) or []:
        if s.lat_avg_ms is not None and math.isfinite(s.lat_avg_ms):
            rows.append({"threads": s.threads, "tier": "client (avg)", "rt_ms": float(s.lat_avg_ms)})
        if s.server_lat_ms is not None and math.isfinite(s.server_lat_ms):
            rows.append(
                {"threads": s.threads, "tier": "server (Little's law)", "rt_ms": float(s.server_lat_ms)}
            )
    for cap in ds.of("tiers"):
        f = cap.frame
        if not {"threads", "tier", "rt_ms"} <= set(f.columns):
            continue
        g = f.dropna(subset=["threads", "tier", "rt_ms"]).groupby(["tier", "threads"])["rt_ms"].mean()
        rows.extend({"threads": int(th), "tier": str(tier), "rt_ms": float(v)} for (tier, th), v in g.items())
    out = pd.DataFrame(rows, columns=["threads", "tier", "rt_ms"])
    return out.groupby(["tier", "threads"], as_index=False, sort=True)["rt_ms"].mean()[
        ["threads", "tier", "rt_ms"]
    ]


# ---------------------------------------------------------------- report layout: resources x hosts

RESOURCES: dict[str, str] = {
    "sweep": "Sweep",
    "cpu": "CPU",
    "mem": "Memory",
    "disk": "Disk",
    "io": "IO by process",
    "net": "Network",
    "numa": "NUMA",
    "client": "Load client",
    "load": "Load delivery",
    "rt": "Response time by tier",
    "profile": "Profiles",
    "collector": "perfkit's own overhead",
}


@dataclass
class HostBlock:
    """What the report shows for one resource on one host (or a set of hosts a finding names)."""

    host: str | None
    table: UseTable | None = None
    findings: list[tuple[int, Any]] = field(default_factory=list)  # (index in analysis.findings, Finding)
    processes: list[ProcessRow] = field(default_factory=list)
    plots: list[Any] = field(default_factory=list)


@dataclass
class Section:
    resource: str
    title: str
    blocks: list[HostBlock] = field(default_factory=list)


def resource_of(rule: str) -> str:
    """The resource heading of a rule id: its prefix (`disk.saturated` -> `disk`)."""
    prefix = rule.split(".", 1)[0]
    return prefix if prefix in RESOURCES else "other"


def sections(
    findings: list[Any], rows: list[UseRow], processes: list[ProcessRow], plots: list[Any] = ()
) -> list[Section]:
    """Findings and USE tables grouped by resource (RESOURCES order, the sweep first), then host.

    A finding naming several hosts gets its own block labelled with all of them; one naming none
    sits with the rows whose host is unknown (a foreign archive's captures). Plots are attached by
    their `resource` and `host` attributes. Empty resources are left out.
    """
    out: dict[str, Section] = {}

    def block(resource: str, host: str | None) -> HostBlock:
        sec = out.setdefault(resource, Section(resource, RESOURCES.get(resource, "Other")))
        for b in sec.blocks:
            if b.host == host:
                return b
        sec.blocks.append(HostBlock(host))
        return sec.blocks[-1]

    for table in use_tables(rows):
        block(table.resource, table.host).table = table
    for p in processes:
        block("cpu", p.host).processes.append(p)
    for i, f in enumerate(findings):
        block(resource_of(f.rule), ", ".join(f.hosts) if f.hosts else None).findings.append((i, f))
    for p in plots:
        if getattr(p, "resource", ""):
            block(p.resource, p.host).plots.append(p)
    order = list(RESOURCES) + ["other"]
    secs = sorted(out.values(), key=lambda s: order.index(s.resource))
    for s in secs:
        s.blocks.sort(key=lambda b: (b.host is None, b.host or ""))
    return secs

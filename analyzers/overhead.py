"""collector.overhead: perfkit's own captures visibly loading the host they measure.

Every capture costs something: top -H walks every thread each interval, iotop is a Python program
reading taskstats for every task, and `perf record --call-graph=dwarf` copies 8 KiB of stack per
sample into perf.data (seed 000: 2 MB/s written by perf, more than TiKV wrote). Past a point the
measurement changes what it measures, on the same CPUs and disk as the database. The figures come
from the captures themselves (top, pidstat, iotop list the tools like any process) and from
perfkit's own psutil sampler and manifest (`hosts[].perfkit_cpu_pct`, `controller`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped
from perfkit.manifest import Controller

from .cpu import thread_rows
from .io import Tasks, category, per_sample, per_value, program_name, tasks


def _is_ours(command: Any) -> bool:
    """A capture tool, or any command carrying perfkit's run tag (`sh -c ... perfkit-<run id>`)."""
    if command is None or pd.isna(command):
        return False
    return category(program_name(command)) == "capture" or " perfkit-" in f" {command}"


def _tool(command: Any) -> str:
    name = program_name(command)
    return name if category(name) == "capture" else "perfkit wrapper"


def _top_cpu(ds: Dataset) -> dict[str | None, tuple[pd.Series, list[str]]]:
    """host -> (mean %CPU per tool over top's intervals, paths). top's first screen is CPU since
    each task started, not an interval figure: left out."""
    rows_by_host: dict[str | None, list[pd.DataFrame]] = {}
    samples: dict[str | None, list[str]] = {}
    for cap in ds.of("top"):
        df = thread_rows(cap, cap.frame)  # perfkit's own are multi-threaded: a leader row counted once
        df = df.loc[df["iteration"] >= 1, ["iteration", "command", "cpu_pct"]]
        its = df["iteration"].unique()  # in order of appearance
        samples.setdefault(cap.host, []).extend(f"{cap.path}#{i}" for i in its)
        ours = df[np.asarray(per_value(_is_ours, df["command"]), dtype=bool)]
        rows_by_host.setdefault(cap.host, []).append(
            pd.DataFrame(
                {
                    "sample": cap.path + "#" + ours["iteration"].astype("string"),
                    "tool": per_value(_tool, ours["command"]),
                    "cpu_pct": ours["cpu_pct"],
                    "source": cap.path,
                }
            )
        )
    out = {}
    for host, parts in rows_by_host.items():
        rows = pd.concat(parts, ignore_index=True)
        listed = list(dict.fromkeys(samples[host]))
        at = pd.Series(range(len(listed)), index=listed)
        rows = rows.assign(sample=rows["sample"].map(at))
        ok = len(rows) and listed
        mean = per_sample(rows, "tool", "cpu_pct", listed).mean() if ok else pd.Series(dtype=float)
        out[host] = (mean, list(dict.fromkeys(c.path for c in ds.of("top") if c.host == host)))
    return out


def _task_means(by_host: dict[str | None, Tasks], col: str) -> dict[str | None, tuple[pd.Series, list[str]]]:
    out = {}
    for host, t in by_host.items():
        rows = t.rows
        if not t.samples or (len(rows) and rows[col].notna().sum() == 0):
            continue  # no interval, or pidstat without the table this column comes from
        ours = rows[np.asarray(per_value(_is_ours, rows["command"]), dtype=bool)]
        ours = ours.assign(tool=per_value(_tool, ours["command"]))
        mean = per_sample(ours, "tool", col, t.samples).mean() if len(ours) else pd.Series(dtype=float)
        out[host] = (mean, list(rows["source"].unique()))
    return out


def _iotop_total_write(by_host: dict[str | None, Tasks]) -> dict[str | None, float]:
    """host -> mean of iotop's Total DISK WRITE (all tasks), when every interval printed it."""
    out = {}
    for host, t in by_host.items():
        vals = [t.totals.get(s, {}).get("total_write_kb_s") for s in t.samples]
        if vals and None not in vals:
            out[host] = sum(vals) / len(vals)
    return out


def _manifest_cpu(ds: Dataset) -> tuple[dict[str | None, float], Controller]:
    """host -> perfkit's own %CPU (psutil sampler, else the manifest's hosts[] record); controller."""
    own: dict[str | None, float] = {}
    for cap in ds.of("psutil"):
        col = cap.frame["perfkit_cpu_pct"].dropna()
        if len(col):
            own[cap.host] = max(own.get(cap.host, 0.0), float(col.mean()))
    for rec in ds.run.hosts:
        if rec.perfkit_cpu_pct is not None and rec.host not in own:
            own[rec.host or None] = rec.perfkit_cpu_pct
    return own, ds.run.controller


def overhead(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """perfkit's capture tools (or perfkit itself) using more than a set share of a core or writing
    more than a set rate: the measurement is visibly loading the host it measures."""
    pidstat, iotop = tasks(ds, "pidstat"), tasks(ds, "iotop")
    pid_cpu = _task_means(pidstat, "cpu_pct")
    # top -H is the CPU fallback for hosts without pidstat: millions of thread rows over a day
    top = _top_cpu(ds) if {c.host for c in ds.of("top")} - set(pid_cpu) else {}
    pid_wr = _task_means(pidstat, "write_kb_s")
    io_wr = _task_means(iotop, "write_kb_s")
    io_rd = _task_means(iotop, "read_kb_s")
    own, controller = _manifest_cpu(ds)
    io_total = _iotop_total_write(iotop)
    hosts = set(top) | set(pid_cpu) | set(pid_wr) | set(io_wr) | set(own)
    if not hosts:
        return Skipped(
            "collector.overhead",
            "no top, pidstat, iotop or psutil capture and no perfkit_cpu_pct in the manifest",
        )
    lim = th["collector.overhead"]
    out = []
    for host in sorted(hosts, key=str):
        cpu, cpu_src = pid_cpu.get(host) or top.get(host) or (pd.Series(dtype=float), [])
        wr, wr_src = io_wr.get(host) or pid_wr.get(host) or (pd.Series(dtype=float), [])
        rd = (io_rd.get(host) or (pd.Series(dtype=float), []))[0]
        cpu_hot = cpu[cpu >= lim["max_tool_cpu_pct"]].sort_values(ascending=False, kind="stable")
        wr_hot = wr[wr >= lim["max_tool_write_kb_s"]].sort_values(ascending=False, kind="stable")
        own_pct = own.get(host)
        own_hot = own_pct is not None and own_pct >= lim["max_perfkit_cpu_pct"]
        if cpu_hot.empty and wr_hot.empty and not own_hot:
            continue
        ev: dict[str, Any] = {}
        for tool, v in cpu_hot.items():
            ev[f"{tool}_cpu_pct_mean"] = float(v)
        for tool, v in wr_hot.items():
            ev[f"{tool}_write_kb_s_mean"] = float(v)
            if tool in rd.index:
                ev[f"{tool}_read_kb_s_mean"] = float(rd[tool])
        if cpu_src:
            ev["tools_cpu_pct_mean"] = float(cpu.sum())
        if wr_src:
            ev["tools_write_kb_s_mean"] = float(wr.sum())
            if host in io_total and io_total[host] > 0:
                ev["tools_write_share_pct"] = float(wr.sum() / io_total[host] * 100)
        if own_pct is not None:
            ev["perfkit_cpu_pct"] = own_pct
        if controller.cpu_s is not None:
            ev["controller_cpu_s"] = controller.cpu_s
        if cpu_src:
            ev["cpu_source"] = "; ".join(cpu_src)
        if wr_src:
            ev["io_source"] = "; ".join(wr_src)
        parts = [f"{t} {v:.0f}% of a core" for t, v in cpu_hot.items()]
        parts += [f"{t} writing {v:.0f} KiB/s" for t, v in wr_hot.items()]
        if own_hot:
            parts.append(f"perfkit itself {own_pct:.0f}% of a core")
        named = set(cpu_hot.index) | set(wr_hot.index)
        steps = []
        if "perf" in named:
            steps.append(
                "perf record: use -g (frame pointers) instead of --call-graph=dwarf (8 KiB of stack per "
                "sample), lower -F, profile one process (-p) rather than -a, and write perf.data to a "
                "disk the database does not use."
            )
        if "iotop" in named:
            steps.append(
                "Drop iotop (`perfkit collect --profile minimal`) or raise --interval: it is a "
                "Python program reading every task's IO counters each interval."
            )
        steps += [
            "Raise the capture interval (--interval 5) for long windows: per-thread top and pidstat "
            "cost grows with the thread count, not with the load.",
            "Rerun one step without the heavy capture and compare its throughput: the difference is "
            "the measurement's cost.",
        ]
        out.append(
            Finding(
                rule="collector.overhead",
                severity="warning",
                hosts=[host] if host else [],
                title="Captures load the host: " + ", ".join(parts[:2]),
                summary=f"During the window perfkit's own captures used: {'; '.join(parts)}.",
                evidence=ev,
                explanation=(
                    "The capture tools run on the host under test and compete with the database for the "
                    "same CPUs and disk. A profiler writing megabytes per second of stack samples (seed "
                    "000: perf record --call-graph=dwarf at 2 MB/s, more than TiKV itself) adds IO to "
                    "exactly the device a write benchmark saturates, and per-thread samplers cost CPU in "
                    "proportion to the number of threads. Figures are % of one core averaged over the "
                    "intervals (pidstat or top -H) and KiB/s written (iotop or pidstat -d)."
                ),
                next_steps=steps,
            )
        )
    return out


RULES = {"collector.overhead": overhead}

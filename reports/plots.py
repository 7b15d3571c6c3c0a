"""Plots for the reports: matplotlib's object API on the Agg backend, returned as named PNG artifacts.

Plots draw what the analysis computed; they compute nothing new. Each long series is drawn as is
up to `MAX_POINTS` per line and thinned evenly beyond, so a 24 h capture stays a small image.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from perfkit.analyzers import Analysis  # noqa: E402
from perfkit.analyzers import usl as usl_model  # noqa: E402

MAX_POINTS = 2000


@dataclass(frozen=True)
class Plot:
    name: str  # file-name-safe id, e.g. "sweep"
    title: str
    png: bytes
    note: str = ""  # e.g. what was thinned or why an axis is a sample index


def all_plots(analysis: Analysis) -> list[Plot]:
    """Every plot the analysis has data for, in report order."""
    out: list[Plot] = []
    sweep = analysis.sweep
    if sweep is not None:
        out.append(_sweep_plot(sweep))
        if any(s.all_intervals is not None for s in sweep.steps):
            out.append(_timeline_plot(sweep))
    for i, cap in enumerate(analysis.dataset.of("iostat")):
        p = _iostat_plot(cap, i)
        if p:
            out.append(p)
    for i, cap in enumerate(analysis.dataset.of("vmstat")):
        if len(cap.frame):
            out.append(_vmstat_plot(cap, i))
    return out


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _thin(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    if len(df) <= MAX_POINTS:
        return df, ""
    step = int(np.ceil(len(df) / MAX_POINTS))
    return df.iloc[::step], f"every {step}th sample drawn ({len(df)} samples)"


def _sweep_plot(sweep) -> Plot:
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    n = np.array([s.threads for s in sweep.steps], float)
    x = np.array([s.tps for s in sweep.steps], float)
    metric = sweep.metric.upper()
    ax.plot(n, x, "o-", color="#1f77b4", label=f"measured {metric}")
    if sweep.usl is not None:
        grid = np.linspace(max(n.min() * 0.5, 0.5), n.max() * 1.1, 200)
        ax.plot(
            grid,
            usl_model.usl(grid, sweep.usl.sigma, sweep.usl.kappa, sweep.usl.lam),
            "--",
            color="#888",
            label=f"USL fit (σ={sweep.usl.sigma:.3g}, κ={sweep.usl.kappa:.2g}, R²={sweep.usl.r2:.3f})",
        )
    ax.plot([sweep.peak.threads], [sweep.peak.tps], "*", ms=14, color="#d62728", label="peak")
    if sweep.knee_threads is not None:
        ax.axvline(sweep.knee_threads, color="#ff7f0e", ls=":", label=f"knee ({sweep.knee_threads})")
    ax.set_xlabel("threads")
    ax.set_ylabel(f"{metric} (steady state)")
    ax.set_title(f"{metric} vs threads")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    lat_avg = [s.lat_avg_ms if s.lat_avg_ms is not None else np.nan for s in sweep.steps]
    lat_pct = [s.lat_pct_ms if s.lat_pct_ms is not None else np.nan for s in sweep.steps]
    pct = next((s.lat_pct for s in sweep.steps if s.lat_pct), None)
    if not np.all(np.isnan(lat_avg)):
        ax2.plot(n, lat_avg, "o-", label="average")
    if not np.all(np.isnan(lat_pct)):
        ax2.plot(n, lat_pct, "s-", label=f"p{pct:g}" if pct else "percentile")
    ax2.set_xlabel("threads")
    ax2.set_ylabel("latency (ms)")
    ax2.set_title("Latency vs threads")
    ax2.grid(alpha=0.3)
    if ax2.lines:
        ax2.legend(fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no latency in the input", ha="center", transform=ax2.transAxes)
    return Plot("sweep", f"{metric} and latency vs threads", _png(fig))


def _timeline_plot(sweep) -> Plot:
    """Every step's intervals end to end, boundaries marked: where inside a step things moved."""
    fig, ax = plt.subplots(figsize=(11, 3.6))
    offset = 0.0
    for s in sweep.steps:
        iv = s.all_intervals
        if iv is None or iv.empty:
            continue
        t = iv["time_s"].to_numpy(float)
        ax.plot(offset + t, iv["tps"].to_numpy(float), "-", lw=1.2)
        ax.axvline(offset, color="#999", lw=0.8)
        # x in data units, y in axes units: the label sits at the top of each segment.
        ax.text(offset, 0.97, f" {s.threads}", fontsize=8, va="top", transform=ax.get_xaxis_transform())
        offset += float(t.max())
    ax.set_xlabel("seconds (steps end to end)")
    ax.set_ylabel("TPS per interval")
    ax.set_title("Throughput over time, one segment per step (labelled with its threads)")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return Plot("timeline", "Throughput over time per step", _png(fig))


def _time_axis(df: pd.DataFrame) -> tuple[pd.Series | np.ndarray, str]:
    """Timestamps when every row has one; else the rows' order (one device's rows: one per sample)."""
    if len(df) and df["timestamp"].notna().all():
        return df["timestamp"].dt.tz_convert("UTC").dt.tz_localize(None), "time (UTC)"
    return np.arange(len(df)), "sample, in capture order (no timestamps in capture)"


def _iostat_plot(cap, index: int) -> Plot | None:
    df = cap.frame[~cap.frame["since_boot"]]
    iops = df["r_s"].fillna(0) + df["w_s"].fillna(0)
    busy = [d for d, g in df.assign(iops=iops).groupby("device", sort=True) if g["iops"].mean() >= 1]
    if not busy:
        return None
    fig, axes = plt.subplots(3, 1, figsize=(11, 7), sharex=True)
    notes = []
    for dev in busy[:8]:
        rows, note = _thin(df[df["device"] == dev])
        if note:
            notes.append(f"{dev}: {note}")
        t, label = _time_axis(rows)
        axes[0].plot(t, rows["util_pct"], label=str(dev))
        axes[1].plot(t, rows["await_ms"], label=str(dev))
        axes[2].plot(t, rows["areq_kb"], label=str(dev))
    axes[0].set_ylabel("%util")
    axes[1].set_ylabel("await (ms)")
    axes[2].set_ylabel("request size (kB)")
    axes[2].set_xlabel(label)
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, ncol=4)
    if len(busy) > 8:
        notes.append(f"{len(busy) - 8} more busy devices not drawn")
    host = f" on {cap.host}" if cap.host else ""
    fig.suptitle(f"iostat{host}: {cap.path}", fontsize=9)
    return Plot(
        f"iostat-{index}", f"Disk utilisation, await and request size{host}", _png(fig), "; ".join(notes)
    )


def _vmstat_plot(cap, index: int) -> Plot:
    df, note = _thin(cap.frame[~cap.frame["since_boot"]].reset_index(drop=True))
    t, label = _time_axis(df)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 5), sharex=True)
    cols = [c for c in ("us", "sy", "wa", "st") if df[c].notna().any()]
    ax.stackplot(t, *[df[c].astype(float).fillna(0) for c in cols], labels=cols, alpha=0.8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("CPU %")
    ax.legend(fontsize=8, loc="upper left", ncol=4)
    ax2.plot(t, df["r"].astype(float), label="r (run queue)")
    ax2.plot(t, df["b"].astype(float), label="b (blocked)")
    ax2.set_ylabel("tasks")
    ax2.set_xlabel(label)
    ax2.legend(fontsize=8)
    for a in (ax, ax2):
        a.grid(alpha=0.3)
    host = f" on {cap.host}" if cap.host else ""
    fig.suptitle(f"vmstat{host}: {cap.path}", fontsize=9)
    return Plot(f"vmstat-{index}", f"CPU and run queue{host}", _png(fig), note)

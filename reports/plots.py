"""Plots for the reports: matplotlib's object API on the Agg backend, returned as named PNG artifacts.

Plots draw what the analysis computed; they compute nothing new. Each long series is drawn as is
up to `MAX_POINTS` per line; beyond, as the lowest and highest sample of each run of samples
(`_envelope`: spikes stay visible), stacked shares as each run's mean (`_means`), so a 24 h capture
stays a small image that looks as the whole series would. Only plots are thinned; rules read every
sample.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from PIL import Image  # noqa: E402

from perfkit.analyzers import Analysis, attempt, describe  # noqa: E402
from perfkit.analyzers import usl as usl_model  # noqa: E402
from perfkit.analyzers.waits import WaitProfile  # noqa: E402
from perfkit.archive import shown_name  # noqa: E402
from perfkit.findings import RuleFailure  # noqa: E402

from . import use  # noqa: E402

MAX_POINTS = 2000
MAX_LINES = 8  # per timeline panel: more hosts/devices than this are listed in the note, not drawn


@dataclass(frozen=True)
class Plot:
    name: str  # file-name-safe id, e.g. "sweep"
    title: str
    png: bytes
    note: str = ""  # e.g. what was thinned or why an axis is a sample index
    resource: str = ""  # a per-capture plot's resource heading (`cpu`, `disk`); "" for report-wide plots
    host: str | None = None


@dataclass(frozen=True)
class Flame:
    """A flame graph of one profile capture: inline SVG from reports/flamegraph.py."""

    name: str
    title: str
    svg: str
    host: str | None
    path: str


def all_plots(
    analysis: Analysis,
    tl: use.Timeline | None = None,
    *,
    failed: list[RuleFailure] | None = None,
    waits: list[WaitProfile] | None = None,
) -> list[Plot]:
    """Every plot the analysis has data for, in report order.

    Names: `sweep`, `tiers` (RT per tier vs threads), `timeline` (one UTC clock, or the steps end to
    end when nothing has timestamps), `iostat-N`, `vmstat-N` (one per capture). With `failed`, a plot
    that raises is left out and recorded there (`plot NAME`) instead of ending the report.
    """
    sweep = analysis.sweep
    ds = analysis.dataset
    tl = tl if tl is not None else use.timeline(ds, sweep)
    metric = sweep.metric.upper() if sweep is not None else "TPS"
    drawn: list[tuple[str, Callable[[], Plot | None]]] = [
        ("sweep", lambda: _sweep_plot(sweep) if sweep is not None else None),
        ("tiers", lambda: _tier_plot(t) if (t := use.tier_rt(ds, sweep))["tier"].nunique() >= 2 else None),
        ("timeline", lambda: _any_timeline(tl, sweep, metric)),
        ("waits", lambda: _waits_plot(waits) if waits else None),
    ]
    out = []
    for name, draw in drawn:
        p = draw() if failed is None else attempt(failed, f"plot {name}", draw, None)
        if p is not None:
            out.append(p)
    for kind in _CAPTURE_PLOTS:
        for i, cap in enumerate(ds.of(kind)):
            done = cap.view(capture_plot)  # drawn where it was parsed (`capture_views`), else now
            if done.failure and failed is None:
                raise RuntimeError(done.failure)
            if done.failure:
                failed.append(RuleFailure(f"plot {kind}-{i}", done.failure))
            elif done.plot is not None:
                out.append(replace(done.plot, name=f"{kind}-{i}"))  # numbered among the captures read
    return out


@dataclass(frozen=True)
class Drawn:
    """A capture's own plot (`capture_plot`): the plot (None: nothing to draw), or why drawing failed."""

    plot: Plot | None
    failure: str = ""


def capture_plot(cap: Any) -> Drawn:
    """The report's plot of one capture (iostat, vmstat), a capture view (`Capture.view`): drawn
    where the capture was parsed, in a worker with `--jobs` (the plots of a 10-host day are a third of
    the report's time). Never raises: what went wrong is in `failure`, for the report's failed parts."""
    draw = _CAPTURE_PLOTS.get(cap.kind)
    try:
        return Drawn(draw(cap) if draw is not None and len(cap.frame) else None)
    except Exception as exc:  # noqa: BLE001 - any bug: one plot left out, see analyzers.attempt
        return Drawn(None, describe(exc))


_WAIT_COLOURS = {
    "cpu": "#2e7d32",
    "cpu_wait": "#9ccc65",
    "io": "#1565c0",
    "lock": "#c62828",
    "net": "#f9a825",
    "other": "#9e9e9e",
}


def _waits_plot(profiles: list[WaitProfile]) -> Plot | None:
    """Average active threads by wait class per step, stacked: one panel per database and load
    generator (idle threads left out: they wait for nothing the requests need)."""
    from perfkit.analyzers.io import category

    panels: dict[tuple, list[WaitProfile]] = {}
    for p in profiles:
        if p.selected == "named" and category(p.process) in ("database", "load generator") and p.step:
            panels.setdefault((p.host, p.process, p.pid if p.baseline else None), []).append(p)
    panels = {k: v for k, v in panels.items() if any(x.active >= 0.05 for x in v)}
    if not panels:
        return None
    shown = sorted(panels.items(), key=lambda kv: (str(kv[0][0]), kv[0][1], kv[0][2] or 0))[:4]
    fig, axes = plt.subplots(1, len(shown), figsize=(5.5 * len(shown), 3.6), squeeze=False)
    for ax, ((host, process, pid), rows) in zip(axes[0], shown, strict=True):
        rows = sorted(rows, key=lambda p: (p.threads or 0, p.step or ""))
        labels = [str(p.threads) if p.threads else str(p.step) for p in rows]
        bottom = np.zeros(len(rows))
        for cls, colour in _WAIT_COLOURS.items():
            values = np.array([p.classes.get(cls, 0.0) for p in rows])
            ax.bar(labels, values, bottom=bottom, color=colour, label=cls.replace("_", " "))
            bottom += values
        ax.set_xlabel("threads")
        ax.set_ylabel("average active threads")
        ax.set_title(f"{process}{f' {pid}' if pid else ''}{f' on {host}' if host else ''}", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return Plot("waits", "Where threads wait: average active threads by class per step", _png(fig))


def _any_timeline(tl: use.Timeline, sweep: Any, metric: str) -> Plot | None:
    """The aligned timeline, else the steps end to end when nothing has timestamps, else none."""
    if not tl.empty:
        return _aligned_timeline_plot(tl, metric)
    if sweep is not None and any(s.all_intervals is not None for s in sweep.steps):
        return _timeline_plot(sweep)
    return None


def _png(fig: Figure) -> bytes:
    # a file name that is not UTF-8 (titles, legends) as \xNN: matplotlib cannot lay out a lone surrogate
    for text in fig.findobj(Text):
        text.set_text(shown_name(text.get_text()))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    # 256 colours, not 32-bit RGBA: a plot holds a few line colours and their anti-aliasing, and a
    # long noisy series is a dense band that compresses badly; a third of the bytes (146 -> 53 KB
    # for a 16-device iostat), so a 10-host day's report stays a few MB
    buf.seek(0)
    small = io.BytesIO()
    Image.open(buf).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(small, "PNG")
    return small.getvalue()


def _envelope(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, str]:
    """A long series cut to `MAX_POINTS`: in each of `MAX_POINTS / 2` runs of consecutive samples,
    its lowest and its highest sample, in time order. Drawn at the plot's width (about one run per
    pixel column) it looks as the whole series would, spikes included, where every k-th sample would
    drop most of them. For plots only: rules read every sample. (An all-NaN run stays a gap.)"""
    xs, ys = np.asarray(x), np.asarray(y, dtype=float)
    n = len(ys)
    if n <= MAX_POINTS:
        return xs, ys, ""
    k = int(np.ceil(n / (MAX_POINTS // 2)))
    runs = int(np.ceil(n / k))
    padded = np.full(runs * k, np.nan)
    padded[:n] = ys
    grid = padded.reshape(runs, k)
    start = np.arange(runs) * k
    lo = start + np.argmin(np.where(np.isnan(grid), np.inf, grid), axis=1)
    hi = start + np.argmax(np.where(np.isnan(grid), -np.inf, grid), axis=1)
    idx = np.unique(np.minimum(np.concatenate([lo, hi]), n - 1))  # sorted: time order kept
    return xs[idx], ys[idx], f"{n} samples drawn as the lowest and highest of every {k}"


def _means(df: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, str]:
    """A long frame cut to `MAX_POINTS` rows: each run of consecutive rows as its first row with the
    runs' means of `columns` (for stacked shares, whose areas must stay the averages)."""
    n = len(df)
    if n <= MAX_POINTS:
        return df, ""
    k = int(np.ceil(n / MAX_POINTS))
    run = np.arange(n) // k
    out = df.iloc[::k].copy()
    for c in columns:
        out[c] = pd.Series(df[c].astype(float).to_numpy()).groupby(run).mean().to_numpy()
    return out, f"{n} samples drawn as means of every {k}"


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


def _tier_plot(tiers: pd.DataFrame) -> Plot:
    """Where RT grows as threads grow is where the bottleneck is (rt.localized reads the same)."""
    fig, ax = plt.subplots(figsize=(11, 3.8))
    for tier, g in tiers.groupby("tier", sort=True):
        g = g.sort_values("threads")
        ax.plot(g["threads"].to_numpy(float), g["rt_ms"].to_numpy(float), "o-", label=str(tier))
    ax.set_xlabel("threads")
    ax.set_ylabel("RT (ms)")
    ax.set_title("Response time per tier vs threads")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return Plot("tiers", "Response time per tier vs threads", _png(fig))


def _aligned_timeline_plot(tl: use.Timeline, metric: str) -> Plot:
    """Load and hosts on one UTC clock, panels sharing the x axis, each step a shaded band."""
    panels = [
        p
        for p in ("load", "cpu", "disk")
        if (not tl.load.empty if p == "load" else (tl.series["panel"] == p).any())
    ]
    heights = {"load": 2.6, "cpu": 2.2, "disk": 2.2}
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(11, sum(heights[p] for p in panels) + 0.6), sharex=True, squeeze=False
    )
    axes = axes[:, 0]
    notes: list[str] = []
    for ax, panel in zip(axes, panels, strict=True):
        if panel == "load":
            ld = tl.load.sort_values("timestamp")
            t = ld["timestamp"].dt.tz_convert("UTC").dt.tz_localize(None)
            for _, g in ld.groupby("threads", sort=True):
                # one line per step, so the gap between steps is not drawn as a slope
                ax.plot(t[g.index], g["tps"], "-", color="#1f77b4", lw=1.3)
            ax.set_ylabel(f"{metric} per interval")
            ax.set_ylim(bottom=0)
            if ld["lat_ms"].notna().any():
                ax2 = ax.twinx()
                pct = ld["lat_pct"].dropna()
                for _, g in ld.groupby("threads", sort=True):
                    ax2.plot(t[g.index], g["lat_ms"], "-", color="#d62728", lw=1, alpha=0.8)
                ax2.set_ylabel(f"p{pct.iloc[0]:g} ms" if len(pct) else "latency ms", color="#d62728")
                ax2.set_ylim(bottom=0)
        else:
            rows = tl.series[tl.series["panel"] == panel]
            labels = list(rows["label"].unique())  # in order of appearance
            if len(labels) > MAX_LINES:
                means = rows.groupby("label")["value"].mean().sort_values(ascending=False)
                labels = list(means.index[:MAX_LINES])
                notes.append(f"{panel}: {len(means) - MAX_LINES} quieter series not drawn")
            thinned = []
            for label in labels:
                g = rows[rows["label"] == label]
                t, v, note = _envelope(g["timestamp"].dt.tz_convert("UTC").dt.tz_localize(None), g["value"])
                thinned.append(note)
                ax.plot(t, v, "-", lw=1.1, label=label)
            notes += [f"{panel}: {n}" for n in dict.fromkeys(thinned) if n]
            ax.set_ylabel("CPU busy %" if panel == "cpu" else "disk %util")
            ax.set_ylim(0, 105)
            ax.legend(fontsize=7, ncol=4, loc="upper left")
        ax.grid(alpha=0.3)
    for i, s in enumerate(tl.steps):
        a, b = s.start.tz_convert("UTC").tz_localize(None), s.end.tz_convert("UTC").tz_localize(None)
        for ax in axes:
            ax.axvspan(a, b, color="#999" if i % 2 else "#bbb", alpha=0.15, lw=0)
            ax.axvline(a, color="#777", lw=0.6)
        label = f"{s.threads} thr" if s.threads is not None else s.name
        axes[0].text(a, 1.01, label, fontsize=7, va="bottom", transform=axes[0].get_xaxis_transform())
    if tl.steps or not tl.load.empty:
        # the load's window sets the x range: a capture left running for hours, or a host clock far
        # off, must not squeeze the steps into a sliver
        ends = [s.start for s in tl.steps] + [s.end for s in tl.steps] + list(tl.load["timestamp"])
        lo, hi = min(ends), max(ends)
        pad = max(pd.Timedelta(seconds=5), (hi - lo) * 0.05)
        lo, hi = lo - pad, hi + pad
        outside = int(((tl.series["timestamp"] < lo) | (tl.series["timestamp"] > hi)).sum())
        if outside:
            notes.append(f"{outside} host samples outside the load's window not shown")
        axes[-1].set_xlim(lo.tz_convert("UTC").tz_localize(None), hi.tz_convert("UTC").tz_localize(None))
    axes[-1].set_xlabel("time (UTC, controller clock; host clocks corrected by their recorded offset)")
    fig.autofmt_xdate()
    return Plot("timeline", "Load and hosts on one clock (UTC), steps shaded", _png(fig), "; ".join(notes))


def flame_graphs(ds) -> tuple[list[Flame], str]:
    """A flame graph per folded / perf_script / pprof capture, and a note when none can be drawn.

    reports/flamegraph.py is imported lazily: without it the section says so and nothing else changes.
    """
    caps = [c for c in ds.captures if c.kind in ("folded", "perf_script", "pprof") and len(c.frame)]
    if not caps:
        return [], ""
    try:
        flamegraph = importlib.import_module(f"{__package__}.flamegraph")
    except ImportError:
        return [], "flame graph renderer (reports/flamegraph.py) not installed: profiles listed, not drawn"
    out = []
    for i, cap in enumerate(caps):
        stacks, what = _stacks(cap)
        if not stacks:
            continue
        host = f" on {cap.host}" if cap.host else ""
        title = f"{cap.kind} {shown_name(cap.path)}{host} ({what})"  # the SVG is written as UTF-8
        out.append(Flame(f"flame-{i}", title, flamegraph.svg(stacks, title=title), cap.host, cap.path))
    return out, ""


def _stacks(cap, *, counts: bool = False) -> tuple[list[tuple[str, int]], str]:
    """(stack, value) pairs of a profile capture and what the value is. `counts`: a pprof profile's
    count column (samples, objects, contentions) rather than its default (nanoseconds, bytes) — what
    a test of sampling noise needs."""
    f = cap.frame
    if cap.kind == "pprof":
        col = cap.extras.default_value_column
        if counts:
            col = next((c for c in f.columns if c.endswith("_count")), col)
        if not col or col not in f.columns:
            return [], ""
        g = f[f["stack"].notna()].groupby("stack", sort=False)[col].sum()
        return [(str(s), int(v)) for s, v in g.items() if v > 0], col
    g = f[f["stack"].notna()].groupby("stack", sort=False)["count"].sum()
    return [(str(s), int(v)) for s, v in g.items() if v > 0], "samples"


def _time_axis(df: pd.DataFrame) -> tuple[pd.Series | np.ndarray, str]:
    """Timestamps when every row has one; else the rows' order (one device's rows: one per sample)."""
    if len(df) and df["timestamp"].notna().all():
        return df["timestamp"].dt.tz_convert("UTC").dt.tz_localize(None), "time (UTC)"
    return np.arange(len(df)), "sample, in capture order (no timestamps in capture)"


def _iostat_plot(cap) -> Plot | None:
    df = cap.frame[~cap.frame["since_boot"]]
    iops = df["r_s"].fillna(0) + df["w_s"].fillna(0)
    busy = [d for d, g in df.assign(iops=iops).groupby("device", sort=True) if g["iops"].mean() >= 1]
    if not busy:
        return None
    fig, axes = plt.subplots(3, 1, figsize=(11, 7), sharex=True)
    notes = []
    thinned = []
    for dev in busy[:8]:
        rows = df[df["device"] == dev]
        t, label = _time_axis(rows)
        for ax, col in zip(axes, ("util_pct", "await_ms", "areq_kb"), strict=True):
            x, y, note = _envelope(t, rows[col])
            ax.plot(x, y, label=str(dev))
        thinned.append(note)
    notes += [f"each device: {n}" if len(busy) > 1 else n for n in dict.fromkeys(thinned) if n]
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
        "iostat",
        f"Disk utilisation, await and request size{host}{_during(cap)}",
        _png(fig),
        "; ".join(notes),
        "disk",
        cap.host,
    )


def _vmstat_plot(cap) -> Plot:
    full = cap.frame[~cap.frame["since_boot"]].reset_index(drop=True)
    cols = [c for c in ("us", "sy", "wa", "st") if full[c].notna().any()]
    df, note = _means(full, cols)  # stacked shares: each drawn point the mean of its run
    t, label = _time_axis(df)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 5), sharex=True)
    ax.stackplot(t, *[df[c].astype(float).fillna(0) for c in cols], labels=cols, alpha=0.8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("CPU %")
    ax.legend(fontsize=8, loc="upper left", ncol=4)
    t_full, _ = _time_axis(full)
    for col, what in (("r", "r (run queue)"), ("b", "b (blocked)")):
        x, y, queue_note = _envelope(t_full, full[col])
        ax2.plot(x, y, label=what)
    note = "; ".join(n for n in (note and f"CPU %: {note}", queue_note and f"r, b: {queue_note}") if n)
    ax2.set_ylabel("tasks")
    ax2.set_xlabel(label)
    ax2.legend(fontsize=8)
    for a in (ax, ax2):
        a.grid(alpha=0.3)
    host = f" on {cap.host}" if cap.host else ""
    fig.suptitle(f"vmstat{host}: {cap.path}", fontsize=9)
    return Plot("vmstat", f"CPU and run queue{host}{_during(cap)}", _png(fig), note, "cpu", cap.host)


_CAPTURE_PLOTS: dict[str, Callable[[Any], Plot | None]] = {"iostat": _iostat_plot, "vmstat": _vmstat_plot}


# A plot takes 0.2-0.5 s whatever its capture's size, as parsing 20-50 MB does (on the 2-vCPU lab VM,
# 3 h of vmstat, 1.6 MB, parses in 0.02 s and is drawn in 0.24 s). Counted as its bytes alone, the
# small captures with plots were parsed last, in the parent alone, after the workers had nothing left
# (1.4 s of 8.8 on 4 hosts x 3 h): `dataset.view_cost` counts this too.
capture_plot.fixed_bytes = 25 << 20  # type: ignore[attr-defined]


def capture_views() -> dict[str, tuple[Callable, ...]]:
    """kind -> `capture_plot`, for `load_dataset(views=...)`: the kinds with a plot of their own."""
    return {kind: (capture_plot,) for kind in _CAPTURE_PLOTS}


def _during(cap) -> str:
    return f" during step {cap.step}" if cap.step else ""


def standalone_svg(svg: str) -> str:
    """The flame graph as a file of its own: outside HTML an SVG needs its namespace to render."""
    if "xmlns=" in svg[:500]:
        return svg
    return svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)


def compare_plot(runs: list[tuple[str, Any]]) -> Plot:
    """`perfkit compare`: every run's sweep on one pair of axes (throughput, then the step
    percentile latency, against threads), each run's peak starred and knee marked."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    metric = runs[0][1].metric.upper()
    for i, (name, sweep) in enumerate(runs):
        colour = f"C{i}"
        label = shown_name(name) if len(name) <= 40 else "…" + shown_name(name)[-39:]
        n = np.array([s.threads for s in sweep.steps], float)
        ax.plot(n, [s.tps for s in sweep.steps], "o-", color=colour, label=label)
        ax.plot([sweep.peak.threads], [sweep.peak.tps], "*", ms=14, color=colour)
        if sweep.knee_threads is not None:
            ax.axvline(sweep.knee_threads, color=colour, ls=":", alpha=0.8)
        lat = [s.lat_pct_ms if s.lat_pct_ms is not None else np.nan for s in sweep.steps]
        if not np.all(np.isnan(lat)):
            ax2.plot(n, lat, "s-", color=colour, label=label)
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())  # 16, not 2⁴
        a.set_xlabel("threads")
        a.grid(alpha=0.3)
    ax.set_ylabel(f"{metric} (steady state)")
    ax.set_title(f"{metric} vs threads (★ peak, dotted: knee)")
    ax.legend(fontsize=8)
    ax2.set_ylabel("latency percentile (ms)")
    ax2.set_title("Latency vs threads")
    if ax2.lines:
        ax2.legend(fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no latency in the inputs", ha="center", transform=ax2.transAxes)
    return Plot("compare", f"{metric} and latency vs threads, every run", _png(fig))


def _profiles_by_step(analysis: Analysis) -> dict[tuple[str, str, int | None], Any]:
    """(kind, file name, threads) -> a profile capture; threads from the dataset's `step_threads`."""
    threads = analysis.dataset.step_threads()
    out = {}
    for cap in analysis.dataset.captures:
        if cap.kind in ("folded", "perf_script", "pprof") and len(cap.frame):
            name = cap.path.rsplit("/", 1)[-1]
            out[(cap.kind, f"{cap.host or ''}/{name}", threads.get(cap.step))] = cap
    return out


def compare_flames(
    base: Analysis, new: Analysis, *, base_name: str, new_name: str, steps: tuple[int, int] | None = None
) -> list[Flame]:
    """Differential flame graphs: NEW against BASE for each profile both runs took at the same
    thread count (the same file on the same host), and with `steps` (a, b) each run's profile at b
    against its own at a — what grows with concurrency."""
    from .flamegraph import diff_svg

    pb, pn = _profiles_by_step(base), _profiles_by_step(new)
    pairs = [(pb[k], pn[k], base_name, new_name, k) for k in sorted(pb.keys() & pn.keys(), key=str)]
    if steps is not None:
        a, b = steps
        for run, caps in ((base_name, pb), (new_name, pn)):
            for kind, file, n in sorted(caps, key=str):
                if n == a and (kind, file, b) in caps:
                    pairs.append(
                        (caps[(kind, file, a)], caps[(kind, file, b)], f"{a} threads", f"{b} threads", (run,))
                    )
    out = []
    for i, (cb, cn, nb, nn, key) in enumerate(pairs):
        sb, what = _stacks(cb, counts=True)
        sn, _ = _stacks(cn, counts=True)
        if not sb and not sn:
            continue
        where = f"{key[1]} at {key[2]} threads" if len(key) == 3 else f"{cn.path} in {key[0]}"
        title = f"{cn.kind} {where} ({what}): {nn} against {nb}"
        svg = diff_svg(sb, sn, title=title, base_name=nb, new_name=nn)
        out.append(Flame(f"diff-{i}", title, svg, cn.host, cn.path))
    return out

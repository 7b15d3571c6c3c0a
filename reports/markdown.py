"""report.md: the report as GitHub-renderable Markdown, plots linked as PNG files beside it."""

from __future__ import annotations

import json
import re
from typing import Any

from perfkit.analyzers import Analysis

from .plots import Plot

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def esc(text: Any) -> str:
    """Text from captures, safe in Markdown: no markup, no HTML (GitHub renders raw HTML in .md)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, list | dict):
        return esc(json.dumps(value, ensure_ascii=False, default=str)[:300])
    return esc("n/a" if value is None else value)


def render(analysis: Analysis, plots: list[Plot], plot_dir: str = "plots") -> str:
    ds = analysis.dataset
    out = [f"# perfkit report: {esc(ds.source)}", ""]
    v = analysis.verdict
    if v:
        out += [f"**Verdict: {esc(v.title)}.** {esc(v.summary)}", ""]
    else:
        out += ["**Verdict: no rule found a bottleneck in these inputs.**", ""]
    sweep = analysis.sweep
    if sweep is not None:
        metric = sweep.metric.upper()
        out += [
            "## Sweep",
            "",
            f"Tool: {esc(sweep.tool)}. Peak {sweep.peak.tps:,.1f} {metric} at "
            f"{sweep.peak.threads} threads; knee: {sweep.knee_threads if sweep.knee_threads else 'none'}."
            + (
                f" {'Adaptive search' if sweep.run['adaptive'] else 'Sweep'}: {sweep.run['steps_run']} "
                f"steps, stopped because {esc(sweep.run['stopped_because'])}."
                if sweep.run and sweep.run["stopped_because"]
                else ""
            ),
            "",
        ]
        if sweep.usl is not None:
            u = sweep.usl
            out += [
                f"USL fit: σ = {u.sigma:.4g}, κ = {u.kappa:.4g}, λ = {u.lam:.4g}, R² = {u.r2:.3f}; "
                f"peak concurrency {fmt(u.peak_concurrency)}, peak throughput {fmt(u.peak_throughput)}, "
                f"limit λ/σ {fmt(u.limit_throughput)}.",
                "",
            ]
        elif sweep.usl_error:
            out += [f"USL fit: not done ({esc(sweep.usl_error)}).", ""]
        out += [
            f"| threads | {metric} | QPS | avg ms | pctl ms | err/s | TPS×RT | server QPS | server ms "
            "| stable |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|",
        ]
        for s in sweep.steps:
            stable = "n/a" if s.stable is None else ("yes" if s.stable else "**no**")
            out.append(
                f"| {s.threads} | {fmt(s.tps)} | {fmt(s.qps)} | {fmt(s.lat_avg_ms)} | "
                f"{fmt(s.lat_pct_ms)}{f' (p{s.lat_pct:g})' if s.lat_pct else ''} | {fmt(s.errors_per_s)} | "
                f"{fmt(s.little_concurrency)} | {fmt(s.server_qps)} | {fmt(s.server_lat_ms)} | {stable} |"
            )
        out.append("")
    out += ["## Findings", ""]
    if not analysis.findings:
        out += ["None.", ""]
    for f in analysis.findings:
        hosts = f" — {esc(', '.join(f.hosts))}" if f.hosts else ""
        out += [
            f"### [{f.severity}] {esc(f.title)}{hosts}",
            "",
            f"`{f.rule}` — {esc(f.summary)}",
            "",
            "| evidence | value |",
            "|---|---|",
        ]
        out += [f"| {esc(k)} | {fmt(val)} |" for k, val in f.evidence.items()]
        out += ["", f"*Why:* {esc(f.explanation)}", "", "*Next steps:*", ""]
        out += [f"- {esc(step)}" for step in f.next_steps]
        out.append("")
    if plots:
        out += ["## Plots", ""]
        for p in plots:
            out += [f"![{esc(p.title)}]({plot_dir}/{p.name}.png)", ""]
            if p.note:
                out += [f"*{esc(p.note)}*", ""]
    if analysis.skipped:
        out += ["## Rules not run", "", "| rule | reason |", "|---|---|"]
        out += [f"| `{s.rule}` | {esc(s.reason)} |" for s in analysis.skipped]
        out.append("")
    out += ["## Inputs", "", "| file | kind | host | rows | dropped lines |", "|---|---|---|---:|---:|"]
    out += [
        f"| {esc(c.path)} | {c.kind} | {esc(c.host or '-')} | {len(c.frame)} | {c.dropped_lines} |"
        for c in ds.captures
    ]
    out.append("")
    if ds.unparsed:
        out += ["Not read:", "", "| file | reason |", "|---|---|"]
        out += [f"| {esc(u['path'])} | {esc(u['reason'])} |" for u in ds.unparsed]
        out.append("")
    if ds.problems:
        out += ["Archive problems:", "", "| file | problem |", "|---|---|"]
        out += [f"| {esc(p['path'])} | {esc(p['reason'])} |" for p in ds.problems]
        out.append("")
    return "\n".join(out)

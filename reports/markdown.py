"""report.md: the report as GitHub-renderable Markdown, plots linked as PNG files beside it."""

from __future__ import annotations

import json
import re
from typing import Any

from perfkit.analyzers import Analysis, is_context
from perfkit.analyzers.db import SessionStep
from perfkit.analyzers.waits import WaitProfile
from perfkit.archive import shown_name
from perfkit.findings import count, number

from . import use
from .plots import Flame, Plot

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def esc(text: Any) -> str:
    """Text from captures, safe in Markdown: no markup, no HTML (GitHub renders raw HTML in .md), file
    names that are not UTF-8 as `\\xNN` (`shown_name`)."""
    return _MD_SPECIAL.sub(r"\\\1", shown_name(str(text))).replace("\n", " ")


def fmt(value: Any) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return number(value)
    if isinstance(value, list | dict):
        return esc(json.dumps(value, ensure_ascii=False, default=str)[:300])
    return esc("n/a" if value is None else value)


def _finding(i: int, f: Any) -> list[str]:
    hosts = f" — {esc(', '.join(f.hosts))}" if f.hosts else ""
    verdict = " (the verdict)" if i == 0 and not is_context(f) else ""  # ranked: context comes last
    out = [
        f"#### [{f.severity}] {esc(f.title)}{hosts}{verdict}",
        "",
        f"`{f.rule}` — {esc(f.summary)}",
        "",
        "| evidence | value |",
        "|---|---|",
    ]
    out += [f"| {esc(k)} | {fmt(val)} |" for k, val in f.evidence.items()]
    out.append("")
    if f.window:
        out += [f"Window: {esc(f.window[0])} – {esc(f.window[1])}", ""]
    out += [f"*Why:* {esc(f.explanation)}", "", "*Next steps:*", ""]
    out += [f"- {esc(step)}" for step in f.next_steps]
    out.append("")
    return out


def _waits(rows: list[WaitProfile]) -> list[str]:
    """Where threads wait: average threads by class per step and process, and the top rows."""
    out = [
        "## Where threads wait",
        "",
        "Average threads per class (idle: parked at every step, or asleep on purpose); the top "
        "(state, syscall, wait channel) rows as 0x.tools' psn prints them.",
        "",
        "| step | process | active | cpu | cpu wait | io | lock | net | other | idle | top rows |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for w in rows:
        top = "; ".join(
            f"{t['state']} {t['syscall'] or '-'} {t['wchan'] or '-'}: {t['avg_threads']:.1f}"
            for t in w.top[:3]
        )
        who = f"{w.process} {w.pid}" + (" (busiest)" if w.selected == "busiest" else "")
        who += f" on {w.host}" if w.host else ""
        step = (w.step or "-") + (f" ({w.threads})" if w.threads else "")
        cells = " | ".join(
            f"{w.classes.get(k, 0.0):.2f}" for k in ("cpu", "cpu_wait", "io", "lock", "net", "other", "idle")
        )
        out.append(f"| {esc(step)} | {esc(who)} | {w.active:.2f} | {cells} | {esc(top)} |")
    return [*out, ""]


def _sessions(rows: list[SessionStep]) -> list[str]:
    """Where sessions wait, as the database says: its sessions by class per step (processlist)."""
    out = [
        "## Where sessions wait (the database's processlist)",
        "",
        "Average sessions per class over each step's load window, from the DB sampler's processlist "
        "every second (idle: Sleep and the server's own daemons); lock split by kind (row: the "
        "transaction table's LOCK WAIT; metadata, global, table, user: the State).",
        "",
        "| step | database | samples | active | lock | commit | io | cpu | net | other | idle "
        "| locks by kind |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        step = (r.step or "-") + (f" ({r.threads})" if r.threads is not None else "")  # a window: none
        cells = " | ".join(
            f"{r.classes.get(k, 0.0):.2f}" for k in ("lock", "commit", "io", "cpu", "net", "other", "idle")
        )
        kinds = "; ".join(f"{k} {n:.2f}" for k, n in r.locks.items() if n > 0) or "-"
        out.append(f"| {esc(step)} | {esc(r.host)} | {r.samples} | {r.active:.2f} | {cells} | {esc(kinds)} |")
    return [*out, ""]


def _image(p: Plot, plot_dir: str) -> list[str]:
    out = [f"![{esc(p.title)}]({plot_dir}/{p.name}.png)", ""]
    if p.note:
        out += [f"*{esc(p.note)}*", ""]
    return out


def _block(sec: use.Section, b: use.HostBlock, plot_dir: str) -> list[str]:
    out: list[str] = []
    if b.host is not None:
        out += [f"### {esc(b.host)}", ""]
    elif b.table or b.processes:
        out += ["### host not recorded in the archive", ""]
    if b.table:
        t = b.table
        out += [
            "| USE | instance | metric | " + " | ".join(esc(c) + " mean (max)" for c in t.columns) + " |",
            "|---|---|---|" + "---:|" * len(t.columns),
        ]
        for r in t.rows:
            unit = "" if r["unit"] in ("%", "ratio") else f" ({esc(r['unit'])})"
            cells = " | ".join(use.fmt_cell(c) for c in r["cells"])
            out.append(f"| {r['check']} | {esc(r['instance'])} | {esc(r['metric'])}{unit} | {cells} |")
        out += ["", f"Sources: {esc(', '.join(sorted({s for r in t.rows for s in r['sources']})))}", ""]
    if b.processes:
        out += [
            "| busiest processes | pid | step | %CPU mean | %CPU max | source |",
            "|---|---:|---|---:|---:|---|",
        ]
        for p in b.processes:
            note = f" ({esc(p.note)})" if p.note else ""
            out.append(
                f"| {esc(p.command[:100])} | {fmt(p.pid)} | {esc(p.step or '-')} | {fmt(p.cpu_pct_mean)} | "
                f"{fmt(p.cpu_pct_max)} | {esc(p.source)}{note} |"
            )
        out.append("")
    for i, f in b.findings:
        out += _finding(i, f)
    return out


def render(
    analysis: Analysis,
    plots: list[Plot],
    plot_dir: str = "plots",
    *,
    flames: list[Flame] | None = None,
    use_rows: list[use.UseRow] | None = None,
    processes: list[use.ProcessRow] | None = None,
    flame_note: str = "",
    waits: list[WaitProfile] | None = None,
    sessions: list[SessionStep] | None = None,
) -> str:
    """The same content as report.html: verdict, sweep, timeline, then resources by host."""
    ds = analysis.dataset
    rows = use.use_rows(ds) if use_rows is None else use_rows
    procs = use.top_processes(ds) if processes is None else processes
    by_name = {p.name: p for p in plots}
    secs = use.sections(analysis.findings, rows, procs, [p for p in plots if p.resource])
    out = [f"# perfkit report: {esc(ds.source)}", ""]
    v = analysis.verdict
    if v:
        out += [f"**Verdict: {esc(v.title)}.** {esc(v.summary)}", ""]
        if len(analysis.findings) > 1:
            out += ["Also found:", ""]
            out += [
                f"- [{f.severity}] {esc(f.title)}" + (f" — {esc(', '.join(f.hosts))}" if f.hosts else "")
                for f in analysis.findings[1:]
            ]
            out.append("")
    else:
        out += ["**Verdict: no rule found a bottleneck in these inputs.**", ""]
        if analysis.findings:
            out += ["(The findings below qualify the evidence: they locate no bottleneck.)", ""]
    if analysis.failed:
        out += [
            f"**The analysis is incomplete: {len(analysis.failed)} of perfkit's rules failed on these "
            "inputs.** Every other rule ran; please report this with the archive.",
            "",
        ]
        out += [f"- `{f.rule}`: {esc(f.reason)}" for f in analysis.failed] + [""]
    if analysis.excluded_steps:
        out += ["**Load runs left out of the sweep model** (their figures would be wrong as a level):", ""]
        out += [f"- {esc(e.line())}" for e in analysis.excluded_steps] + [""]
    sweep = analysis.sweep
    if sweep is not None:
        metric = sweep.metric.upper()
        out += [
            "## Sweep",
            "",
            f"Tool: {esc(sweep.tool)}. Peak {number(sweep.peak.tps)} {metric} at "
            f"{count(sweep.peak.threads, 'thread')}; knee: {sweep.knee_threads or 'none'}."
            + (
                f" {'Adaptive search' if sweep.run['adaptive'] else 'Sweep'}: "
                f"{count(sweep.run['steps_run'], 'step')}, "
                f"stopped because {esc(sweep.run['stopped_because'])}."
                if sweep.run and sweep.run["stopped_because"]
                else ""
            )
            + (f" {esc(sweep.clients_note())}" if sweep.clients_note() else ""),
            "",
        ]
        if sweep.usl is not None:
            u = sweep.usl
            out += [
                f"USL fit: σ = {number(u.sigma)}, κ = {number(u.kappa)}, λ = {number(u.lam)}, "
                f"R² = {u.r2:.3f}; "
                f"peak concurrency {fmt(u.peak_concurrency)}, peak throughput {fmt(u.peak_throughput)}, "
                f"limit λ/σ {fmt(u.limit_throughput)}." + (f" {esc(u.caveat())}." if u.caveat() else ""),
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
        for name in ("sweep", "tiers"):
            if name in by_name:
                out += _image(by_name[name], plot_dir)
        for sec in secs:
            if sec.resource == "sweep":
                for b in sec.blocks:
                    out += _block(sec, b, plot_dir)
    if "timeline" in by_name:
        out += ["## Timeline", ""] + _image(by_name["timeline"], plot_dir)
    if waits:
        out += _waits(waits)
        if "waits" in by_name:
            out += _image(by_name["waits"], plot_dir)
    if sessions:  # beside the OS thread states: the database's own account
        out += _sessions(sessions)
    for sec in secs:
        if sec.resource == "sweep" and sweep is not None:
            continue
        out += [f"## {esc(sec.title)}", ""]
        for b in sec.blocks:
            out += _block(sec, b, plot_dir)
            for p in b.plots:
                out += _image(p, plot_dir)
    if not analysis.findings:
        out += ["No findings.", ""]
    profiles = [c for c in ds.captures if c.kind in ("folded", "perf_script", "pprof")]
    if profiles:
        out += ["## Flame graphs", ""]
        if flame_note:
            out += [f"*{esc(flame_note)}*", ""] + [f"- {c.kind} {esc(c.path)}" for c in profiles] + [""]
        for f in flames or []:
            out += [f"![{esc(f.title)}]({plot_dir}/{f.name}.svg)", ""]
    if analysis.skipped:
        out += ["## Rules not run", "", "| rule | reason |", "|---|---|"]
        out += [f"| `{s.rule}` | {esc(s.reason)} |" for s in analysis.skipped]
        out.append("")
    out += [
        "## Inputs",
        "",
        "| file | kind | host | step | rows | dropped lines | skipped (partial) |",
        "|---|---|---|---|---:|---:|---|",
    ]
    out += [
        f"| {esc(c.path)} | {c.kind} | {esc(c.host or '-')} | {esc(c.step or '-')} | {len(c.frame)} | "
        f"{c.dropped_lines} | {esc(c.skipped.summary() or '-')} |"
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
    # a name that reached the text without esc() (a plot title, a finding's own words) still shows as \xNN
    return shown_name("\n".join(out))

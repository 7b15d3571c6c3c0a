"""compare.md: `perfkit compare` as Markdown — the verdict first (with what it was judged against:
the spread between runs, or one run's own noise, which cannot tell a change from run-to-run spread),
each side's runs when a side is a group, then per step with "~" for no change beyond noise, then
what changed underneath (findings), then how the changes were judged."""

from __future__ import annotations

from perfkit.analyzers.compare import Change, Comparison
from perfkit.findings import number

from .markdown import esc

_WAIT_CLASSES = ("cpu", "cpu_wait", "io", "lock", "net")


def _fig(x: float | None, unit: str = "") -> str:
    return "n/a" if x is None else f"{number(x)}{unit}"


def _ci(c: Change) -> str:
    if c.ci_pct is None:
        return esc(c.why) if c.why else ""
    return f"{c.ci_pct[0]:+.1f}% … {c.ci_pct[1]:+.1f}%"


def _runs(c: Comparison) -> list[str]:
    """Each side's runs and their own figures (a group)."""
    out = [
        "### Runs",
        "",
        f"| side | run | peak {c.metric} | at threads | knee (threads) | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for side, runs in (("BASE", c.runs[0]), ("NEW", c.runs[1])):
        for r in runs:
            pk = r["peak"]
            out.append(
                f"| {side} | {esc(r['name'])} | {_fig(pk.get(c.metric))} | {pk['threads']} | "
                f"{_fig(r['knee_threads'])} | {esc(r['verdict'] or 'none')} |"
            )
    return [*out, ""]


def render(base_name: str, comparisons: list[Comparison]) -> str:
    out = [f"# perfkit compare: BASE {esc(base_name)}", ""]
    for c in comparisons:
        out += [f"## NEW {esc(c.new_name)}", "", f"**{esc(c.headline())}.** ({esc(c.spread_note())}.)", ""]
        if len(c.runs[0]) > 1 or len(c.runs[1]) > 1:
            out += _runs(c)
        out += [f"- {esc(w)}" for w in c.warnings]
        if c.warnings:
            out.append("")
        kb, kn = c.knee_threads
        pb, pn = c.peak_threads
        out += [
            "| | BASE | NEW | change | 95% interval |",
            "|---|---|---|---|---|",
            f"| peak {c.metric} | {_fig(c.peak.base if c.peak else None)} at {pb} | "
            f"{_fig(c.peak.new if c.peak else None)} at {pn} | {c.peak.sign if c.peak else 'n/a'} | "
            f"{_ci(c.peak) if c.peak else ''} |",
            f"| knee (threads) | {_fig(kb)} | {_fig(kn)} | | |",
            f"| verdict | {esc(c.verdict[0] or 'none')} | {esc(c.verdict[1] or 'none')} | | |",
            "",
            "### Per step (same thread count)",
            "",
            f"| threads | BASE {c.metric} | NEW {c.metric} | change | 95% interval "
            "| BASE p95 ms | NEW p95 ms | p95 change | intervals | runs | judged |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for s in c.steps:
            t, p = s.throughput, s.p95_ms
            out.append(
                f"| {s.threads} | {_fig(t.base)} | {_fig(t.new)} | {t.sign} | {_ci(t)} | {_fig(p.base)} | "
                f"{_fig(p.new)} | {p.sign} | {s.intervals[0]} / {s.intervals[1]} | {s.runs[0]} / {s.runs[1]} "
                f"| {t.spread} |"
            )
        if c.only_base or c.only_new:
            out += [
                "",
                f"Steps in one run only: BASE {', '.join(map(str, c.only_base)) or 'none'}; "
                f"NEW {', '.join(map(str, c.only_new)) or 'none'} (threads).",
            ]
        out += ["", "### Findings", ""]
        out += [f"- appeared: `{f.rule}` ({f.severity}) — {esc(f.title)}" for f in c.appeared]
        out += [f"- gone: `{f.rule}` ({f.severity}) — {esc(f.title)}" for f in c.gone]
        out += [f"- changed: `{x.rule}` {x.severity[0]} → {x.severity[1]}" for x in c.changed]
        if not (c.appeared or c.gone or c.changed):
            out.append("- the same findings in both runs")
        moves = c.use_moves()
        if moves:
            out += [
                "",
                "### What changed underneath (USE, the largest moves)",
                "",
                "| resource | host | instance | metric | threads | BASE | NEW | change |",
                "|---|---|---|---|---|---|---|---|",
            ]
            out += [
                f"| {esc(u.resource)} | {esc(u.host or '')} | {esc(u.instance)} | {esc(u.metric)} "
                f"({esc(u.unit)}) | {u.threads} | {_fig(u.base)} | {_fig(u.new)} | {u.delta:+.3g} |"
                for u in moves
            ]
        if c.waits:
            out += [
                "",
                "### Where threads wait (average threads, BASE → NEW)",
                "",
                "| host | process | threads | cpu | cpu wait | io | lock | net |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for w in c.waits:
                moved = [f"{w.base.get(k, 0.0):.2f} → {w.new.get(k, 0.0):.2f}" for k in _WAIT_CLASSES]
                out.append(f"| {esc(w.host or '')} | {esc(w.process)} | {w.threads} | {' | '.join(moved)} |")
        out += ["", f"How: {esc(c.method)}.", ""]
    return "\n".join(out)

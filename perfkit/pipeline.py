"""The analysis pipeline as library calls: archive → dataset → analysis → report files."""

from __future__ import annotations

from pathlib import Path

from perfkit.analyzers import Analysis, analyze
from perfkit.archive import open_archive
from perfkit.config import load_thresholds
from perfkit.dataset import load_dataset
from perfkit.errors import AnalysisError
from perfkit.reports import findings_json, html, markdown
from perfkit.reports.plots import all_plots


def analyze_path(source: Path, *, thresholds: Path | None = None, tz: str = "UTC") -> Analysis:
    """Read an archive directory, a .tar.gz or a single file, and run every rule on it.

    Raises:
        ArchiveError: the source cannot be opened safely.
        ConfigError: the thresholds file is invalid.
        AnalysisError: nothing in the source could be parsed.
    """
    th = load_thresholds(thresholds)
    with open_archive(source) as archive:
        ds = load_dataset(archive, tz=tz)
    if not ds.captures:
        reasons = "; ".join(f"{u['path']}: {u['reason']}" for u in ds.unparsed[:3]) or "it holds no files"
        raise AnalysisError(f"{source}: nothing perfkit can read ({reasons})")
    return analyze(ds, th)


def write_reports(analysis: Analysis, outdir: Path) -> list[Path]:
    """Write report.html, report.md (with plots/*.png beside it) and findings.json into `outdir`."""
    outdir.mkdir(parents=True, exist_ok=True)
    plots = all_plots(analysis)
    plot_dir = outdir / "plots"
    plot_dir.mkdir(exist_ok=True)
    for p in plots:
        (plot_dir / f"{p.name}.png").write_bytes(p.png)
    files = {
        "report.html": html.render(analysis, plots),
        "report.md": markdown.render(analysis, plots),
        "findings.json": findings_json.render(analysis),
    }
    for name, text in files.items():
        (outdir / name).write_text(text, encoding="utf-8")
    return [outdir / name for name in files]


def summary_lines(analysis: Analysis) -> list[str]:
    """A few lines for the terminal: the verdict, each finding, what was not read."""
    ds = analysis.dataset
    lines = [f"{ds.source}: {len(ds.captures)} captures read, {len(ds.unparsed)} not read"]
    sweep = analysis.sweep
    if sweep is not None:
        knee = sweep.knee_threads if sweep.knee_threads else "none"
        lines.append(
            f"sweep ({sweep.tool}): {len(sweep.steps)} steps, peak {sweep.peak.tps:,.1f} "
            f"{sweep.metric.upper()} at {sweep.peak.threads} threads, knee {knee}"
        )
        if sweep.run and sweep.run["stopped_because"]:
            why = sweep.run["stopped_because"]
            lines.append(f"{sweep.run['steps_run']} steps run; stopped because {why}")
    for f in analysis.findings:
        lines.append(f"[{f.severity}] {f.rule}: {f.summary}")
    if not analysis.findings:
        lines.append("no findings")
    for u in ds.unparsed:
        lines.append(f"not read: {u['path']}: {u['reason']}")
    return [_printable(line) for line in lines]


def _printable(text: str) -> str:
    """Control characters from captures (ESC sequences in file names) shown escaped, never executed."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)

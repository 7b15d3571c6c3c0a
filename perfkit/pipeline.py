"""The analysis pipeline as library calls: archive → dataset → analysis → report files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from perfkit.analyzers import Analysis, analyze, attempt, capture_views, db, waits
from perfkit.analyzers.compare import Comparison, Group, compare
from perfkit.analyzers.sweep import Step, Sweep
from perfkit.analyzers.usl import UslFit
from perfkit.analyzers.waits import WaitProfile
from perfkit.archive import PACKED_SUFFIXES, open_archive, printable, shown_name
from perfkit.config import load_thresholds, time_zone
from perfkit.dataset import Capture, Dataset, load_dataset
from perfkit.errors import AnalysisError
from perfkit.findings import Finding, RuleFailure, count, number
from perfkit.reports import compare_html, compare_json, compare_md, findings_json, html, markdown, use
from perfkit.reports.plots import (
    all_plots,
    compare_flames,
    compare_plot,
    flame_graphs,
    standalone_svg,
)
from perfkit.reports.plots import capture_views as plot_views


def analyze_path(
    source: Path,
    *,
    thresholds: Path | None = None,
    tz: str = "UTC",
    tiers: Path | None = None,
    jobs: int | None = 1,
    plots: bool = False,
) -> Analysis:
    """Read an archive directory, a .tar.gz or a single file, and run every rule on it.

    Args:
        tiers: a file of per-tier response times per load level (parsers/tiers.py), added to the
            dataset as a `tiers` capture for the rt.localized rule.
        jobs: captures parsed at once (`load_dataset`): 1 in this process only, N with N-1 worker
            processes, None the CPUs once the captures are large enough to repay the workers' start.
        plots: draw each capture's report plot where it is parsed (for `write_reports`; with workers
            they are drawn in parallel), not when the report is written.

    Raises:
        ArchiveError: the source cannot be opened safely.
        ConfigError: the thresholds file or the time zone is invalid.
        ParseError: the tiers file cannot be read.
        AnalysisError: nothing in the source could be parsed.
    """
    th = load_thresholds(thresholds)
    tz = time_zone(tz)  # a typo would otherwise drop every capture that needs it as unreadable
    tier_capture = _tiers_capture(tiers) if tiers is not None else None
    with open_archive(source, digests=False) as archive:  # each file hashed where it is parsed
        ds = load_dataset(archive, tz=tz, jobs=jobs, views=_views(plots))
    if tier_capture is not None:
        ds.captures.append(tier_capture)
    if not ds.captures:
        reasons = "; ".join(f"{u['path']}: {u['reason']}" for u in ds.unparsed[:3]) or "it holds no files"
        raise AnalysisError(f"{source}: nothing perfkit can read ({reasons})")
    return analyze(ds, th)


def _views(plots: bool) -> dict[str, tuple[Callable, ...]]:
    """kind -> what is made of each capture where it is parsed: the rules' per-capture steps, and
    with `plots` the capture's own plot."""
    views = capture_views()
    for kind, fns in (plot_views() if plots else {}).items():
        views[kind] = views.get(kind, ()) + fns
    return views


def _tiers_capture(path: Path) -> Capture:
    """The user's tiers file as a capture: its RTs belong to no host and no single step."""
    from perfkit.parsers import tiers as tiers_parser

    return Capture(path=str(path), kind="tiers", host=None, step=None, frame=tiers_parser.parse(path))


def write_reports(analysis: Analysis, outdir: Path) -> list[Path]:
    """Write report.html, report.md (with plots/*.png beside it) and findings.json into `outdir`."""
    outdir.mkdir(parents=True, exist_ok=True)
    ds = analysis.dataset
    # computed once, rendered three times (HTML, Markdown, JSON); a part that raises is left out and
    # listed with the failed rules, so the rest of the report is still written
    failed = analysis.failed
    tl = attempt(failed, "timeline", lambda: use.timeline(ds, analysis.sweep), use.Timeline.none())
    rows = attempt(failed, "USE table", lambda: use.use_rows(ds), [])
    procs = attempt(failed, "busiest processes", lambda: use.top_processes(ds), [])
    wait_rows = attempt(failed, "thread waits", lambda: waits.profiles(ds, analysis.sweep), [])
    session_rows = attempt(failed, "database sessions", lambda: db.session_profiles(ds, analysis.sweep), [])
    plots = all_plots(analysis, tl, failed=failed, waits=wait_rows)
    flames, flame_note = attempt(failed, "flame graphs", lambda: flame_graphs(ds), ([], ""))
    plot_dir = outdir / "plots"
    plot_dir.mkdir(exist_ok=True)
    for p in plots:
        (plot_dir / f"{p.name}.png").write_bytes(p.png)
    for f in flames:
        (plot_dir / f"{f.name}.svg").write_text(standalone_svg(f.svg), encoding="utf-8")
    files = {
        "report.html": html.render(
            analysis,
            plots,
            flames,
            use_rows=rows,
            processes=procs,
            flame_note=flame_note,
            waits=wait_rows,
            sessions=session_rows,
        ),
        "report.md": markdown.render(
            analysis,
            plots,
            flames=flames,
            use_rows=rows,
            processes=procs,
            flame_note=flame_note,
            waits=wait_rows,
            sessions=session_rows,
        ),
        "findings.json": findings_json.render(
            analysis, use_rows=rows, processes=procs, timeline=tl, waits=wait_rows, sessions=session_rows
        ),
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
        peak = (
            f"peak {number(sweep.peak.tps)} {sweep.metric.upper()} at {count(sweep.peak.threads, 'thread')}"
            if sweep.peak.tps > 0
            else "no level completed a transaction"
        )
        lines.append(f"sweep ({sweep.tool}): {count(len(sweep.steps), 'step')}, {peak}, knee {knee}")
        if sweep.run and sweep.run["stopped_because"]:
            why = sweep.run["stopped_because"]
            lines.append(f"{count(sweep.run['steps_run'], 'step')} run; stopped because {why}")
    for ex in analysis.excluded_steps:
        lines.append(f"left out of the sweep: {ex.line()}")
    for f in analysis.findings:
        lines.append(f"[{f.severity}] {f.rule}: {f.summary}")
    if not analysis.findings:
        lines.append("no findings")
    for failure in analysis.failed:
        lines.append(f"rule {failure.rule} failed: {failure.reason} (analysis incomplete)")
    for u in ds.unparsed:
        lines.append(f"not read: {u['path']}: {u['reason']}")
    for p in ds.problems:  # the manifest and the files disagree: listed but absent, size or hash wrong
        lines.append(f"archive problem: {p['path']}: {p['reason']}")
    return [printable(line) for line in lines]


# A run for `compare`: its analysis, USE rows and wait profiles (from an archive, or read back from a
# report perfkit wrote: `findings.json` or the directory holding it)
Run = tuple[Analysis, list[use.UseRow], list[WaitProfile]]


def load_run(path: Path, *, thresholds: Path | None = None, tz: str = "UTC", jobs: int | None = 1) -> Run:
    """An archive, directory or single file analyzed now (`jobs`: as `analyze_path`'s), or an analyzed
    output read back.

    Raises what `analyze_path` raises, and AnalysisError for a findings.json perfkit cannot read.
    """
    report = path / "findings.json" if path.is_dir() and not (path / "manifest.json").exists() else path
    if report.name == "findings.json" and report.is_file():
        return _from_report(report)
    analysis = analyze_path(path, thresholds=thresholds, tz=tz, jobs=jobs)
    return analysis, use.use_rows(analysis.dataset), waits.profiles(analysis.dataset, analysis.sweep)


def group_members(path: Path) -> list[Path] | None:
    """The runs of a group (runs of one configuration, e.g. `perfkit run … -o base/r1`, `-o base/r2`):
    a directory with no manifest.json or findings.json of its own whose entries are runs — run
    directories (a manifest.json), .tar.gz/.tgz archives, analyzed outputs (a findings.json) — in
    name order. None when `path` is one run (an archive, a capture directory, a file).

    Raises AnalysisError naming an entry that is not a run (hidden entries are passed over)."""
    if not path.is_dir() or (path / "manifest.json").exists() or (path / "findings.json").exists():
        return None

    def is_run(p: Path) -> bool:
        if p.is_dir():
            return (p / "manifest.json").is_file() or (p / "findings.json").is_file()
        return p.is_file() and p.name.endswith(PACKED_SUFFIXES)

    entries = sorted((p for p in path.iterdir() if not p.name.startswith(".")), key=lambda p: p.name)
    runs = [p for p in entries if is_run(p)]
    if not runs:
        return None  # a capture directory (a foreign collection, loose files): one run
    stray = [p for p in entries if not is_run(p)]
    if stray:
        raise AnalysisError(
            f"{path}: a group of runs holds only runs (run directories, .tar.gz archives, analyzed "
            f"outputs); {stray[0].name} is none of these"
        )
    return runs


def load_side(path: Path, *, thresholds: Path | None = None, tz: str = "UTC", jobs: int | None = 1) -> Group:
    """One side of a comparison: a group of runs (`group_members`) or one run (`load_run`)."""
    name = shown_name(str(path))
    members = group_members(path) or [path]
    loaded = [load_run(m, thresholds=thresholds, tz=tz, jobs=jobs) for m in members]
    return Group(
        name,
        tuple(r[0] for r in loaded),
        tuple(name if m == path else shown_name(str(m)) for m in members),
        use=tuple(r[1] for r in loaded),
        waits=tuple(r[2] for r in loaded),
    )


def _from_report(path: Path) -> Run:
    """A run read back from its findings.json: the sweep's steps (their figures, not their intervals:
    a comparison shows them side by side without judging them), the findings, USE rows, waits."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("format_version") != 1:
            raise ValueError(f"not a perfkit findings.json (format_version {doc.get('format_version')!r})")
        sw = doc.get("sweep")
        steps = [
            Step(
                threads=int(st["threads"]),
                tps=float(st["tps"]),
                qps=st.get("qps"),
                lat_avg_ms=st.get("lat_avg_ms"),
                lat_pct=95 if st.get("lat_p95_ms") is not None else None,
                lat_pct_ms=st.get("lat_p95_ms"),
                source=str(st.get("source") or ""),
            )
            for st in (sw or {}).get("steps", [])
        ]
        sweep = None
        if steps:
            peak = max(steps, key=lambda st: st.tps)
            usl_doc = sw.get("usl")
            sweep = Sweep(
                tool=str(sw.get("tool") or "unknown"),
                metric=str(sw.get("metric") or "tps"),
                steps=steps,
                peak=next((st for st in steps if st.threads == sw["peak"]["threads"]), peak),
                knee_threads=sw.get("knee_threads"),
                usl=UslFit(**{("lam" if k == "lambda" else k): v for k, v in usl_doc.items()})
                if usl_doc
                else None,
                run=sw.get("run"),
            )
        found = [
            Finding(**{**f, "window": tuple(f["window"]) if f.get("window") else None})
            for f in doc.get("findings", [])
        ]
        rows = [use.UseRow(**r) for r in doc.get("use", [])]
        profs = [WaitProfile(**{**w, "classes": dict(w["classes"])}) for w in doc.get("waits", [])]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AnalysisError(f"{path}: cannot read it back as an analyzed run: {exc}") from None
    ds = Dataset(source=str(doc.get("source") or path.parent.name), manifest=None)
    return Analysis(dataset=ds, sweep=sweep, findings=found), rows, profs


def compare_paths(
    base: Path,
    news: list[Path],
    *,
    thresholds: Path | None = None,
    tz: str = "UTC",
    min_change_pct: float,
    jobs: int | None = 1,
) -> tuple[Analysis, list[Analysis], list[Comparison]]:
    """Analyze BASE and every NEW (archives, directories, single files, reports perfkit wrote:
    `load_run`; or groups of such runs: `group_members`) and compare each NEW with BASE: (BASE's
    first run's analysis, each NEW's first run's, each comparison).

    `jobs`: captures of each archive parsed at once, as `analyze_path`'s.

    Raises what `analyze_path` raises, and AnalysisError when a run has no load sweep to compare.
    """
    base_side = load_side(base, thresholds=thresholds, tz=tz, jobs=jobs)
    knee_e = float(load_thresholds(thresholds)["sweep.knee"]["min_elasticity"])
    out, analyses = [], []
    for new in news:
        side = load_side(new, thresholds=thresholds, tz=tz, jobs=jobs)
        try:
            out.append(compare(base_side, side, min_change_pct=min_change_pct, min_elasticity=knee_e))
        except ValueError as exc:
            raise AnalysisError(str(exc)) from None
        analyses.append(side.runs[0])
    return base_side.runs[0], analyses, out


def write_compare(
    base: Path,
    base_analysis: Analysis,
    comparisons: list[Comparison],
    news: list[Analysis],
    outdir: Path,
    *,
    steps: tuple[int, int] | None = None,
    failed: list[RuleFailure],
) -> list[Path]:
    """Write compare.html, compare.md and compare.json into `outdir` (`news`: each NEW's analysis, in
    the order of `comparisons`; `steps`: also each run's profiles at the second against the first).
    A part that raises (the plot, a differential profile) is left out and added to `failed`."""
    outdir.mkdir(parents=True, exist_ok=True)
    name = shown_name(str(base))
    pairs = list(zip(comparisons, news, strict=True))
    # every run of every side (a group's runs each drawn); the first runs' profiles below
    runs = [*comparisons[0].sweeps[0], *(r for c in comparisons for r in c.sweeps[1])]
    plot = attempt(failed, "compare plot", lambda: compare_plot(runs), None)
    flames = []
    for c, a in pairs:
        flames += attempt(
            failed,
            "differential profiles",
            lambda a=a, c=c: compare_flames(
                base_analysis, a, base_name=name, new_name=c.new_name, steps=steps
            ),
            [],
        )
    files = {
        "compare.html": compare_html.render(name, comparisons, plot, flames),
        "compare.md": compare_md.render(name, comparisons),
        "compare.json": compare_json.render(name, base_analysis, comparisons),
    }
    for fname, text in files.items():
        (outdir / fname).write_text(text, encoding="utf-8")
    return [outdir / fname for fname in files]

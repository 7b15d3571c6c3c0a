"""Whole analyses on generated inputs (issue 14): a report or one clear line, never a traceback, and
never a peak or knee taken from a failed step.

Sweep tables are drawn with the values real tables hold and the ones they should not (zero, NaN,
inf, negative, blank, duplicate, missing); archives are `perfkit run`-shaped, built from real sysbench
captures (tests/fixtures/sysbench/) with drawn step statuses, and hosts with or without captures.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfkit.analyzers import Analysis
from perfkit.errors import PerfkitError
from perfkit.pipeline import analyze_path, summary_lines, write_reports

from .conftest import FIXTURES
from .test_analysis_robustness import _run_archive

SB = FIXTURES / "sysbench"
# (file, threads it ran with, whether it measured a level: a summary, or intervals and no FATAL)
LOGS = [
    (SB / "1.0.20-rw-t4-summary.txt", 4, True),
    (SB / "1.0.20-point-select-rate.txt", None, True),
    (SB / "1.0.20-rw-forced-shutdown.txt", 16, True),
    (SB / "1.0.20-rw-killed-sigint.txt", 4, True),  # cut by SIGINT: no summary, no FATAL
    (SB / "1.0.20-ro-connection-killed.txt", 2, False),  # FATAL 2013 after three seconds
    (SB / "1.0.20-access-denied.txt", 2, False),
    (SB / "1.0.20-run-update-denied.txt", 2, False),
]
HOST_CAPTURES = [
    ("vmstat", FIXTURES / "vmstat" / "procps-4.0.2-t.txt"),
    ("iostat", FIXTURES / "iostat" / "sysstat-12.6-x-d-t-iso.txt"),
    ("mpstat", FIXTURES / "mpstat" / "sysstat-12.6-P-ALL-iso.txt"),
]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(source: Path) -> Analysis | None:
    """Analyze and write the reports: the analysis, or None after a PerfkitError (one line), the only
    other way out."""
    try:
        result = analyze_path(source)
    except PerfkitError as exc:
        assert "\n" not in str(exc) and str(exc)
        return None
    assert result.failed == [], result.failed
    summary_lines(result)
    with tempfile.TemporaryDirectory() as out:
        write_reports(result, Path(out))
        doc = json.loads((Path(out) / "findings.json").read_text())
        assert doc["complete"] is True
    return result


# ---------------------------------------------------------------- sweep tables

_NUMBER_TEXT = st.one_of(
    st.integers(-5, 5000).map(str),
    st.floats(-10, 1e5, allow_nan=False).map(lambda x: f"{x:.3f}"),
    st.sampled_from(["0", "0.0", "", "nan", "NaN", "inf", "-inf", "-1", "1e309", "1,234", "1.234,5", " "]),
)


@st.composite
def sweep_table(draw: st.DrawFn) -> str:
    columns = draw(
        st.sampled_from([["threads", "tps"], ["threads", "tps", "lat_ms"], ["threads", "qps", "p95_ms"]])
    )
    sep = draw(st.sampled_from([",", ";", "\t"]))
    rows = draw(st.lists(st.lists(_NUMBER_TEXT, min_size=len(columns), max_size=len(columns)), max_size=8))
    good = draw(st.lists(st.tuples(st.integers(1, 512), st.floats(0, 1e5)), max_size=6))
    rows += [[str(n), f"{x:.2f}", *["5.0"] * (len(columns) - 2)] for n, x in good]
    body = [sep.join(columns)] + [sep.join(r) for r in draw(st.permutations(rows))]
    return "\n".join(body) + "\n"


@SETTINGS
@given(sweep_table())
def test_any_sweep_table_reports_or_says_why(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep.csv"
        path.write_text(text)
        _outcome(path)


# ---------------------------------------------------------------- small perfkit-run archives


@st.composite
def run_archive(draw: st.DrawFn) -> tuple[list[tuple[int, Path, str, bool]], list[str]]:
    """Steps (threads, log, recorded status, measured) and the host captures present."""
    n = draw(st.integers(1, 4))
    threads = draw(st.lists(st.sampled_from([1, 2, 4, 8, 16, 64]), min_size=n, max_size=n))
    steps = []
    for t in threads:
        log, _printed, measured = draw(st.sampled_from(LOGS))
        status = draw(st.sampled_from(["ok", "ok", "degraded", "failed", "interrupted"]))
        steps.append((t, log, status, measured))
    hosts = draw(st.lists(st.sampled_from([k for k, _ in HOST_CAPTURES]), unique=True, max_size=3))
    return steps, hosts


def _write_run(root: Path, steps: list[tuple[int, Path, str, bool]], hosts: list[str]) -> None:
    named = [
        (name, threads, log, status, f"{status} in the test")
        for (name, _ok), (threads, log, status, _measured) in zip(_names(steps), steps, strict=True)
    ]
    _run_archive(root, named, [(kind, dict(HOST_CAPTURES)[kind]) for kind in hosts])


@SETTINGS
@given(run_archive())
def test_no_peak_or_knee_from_a_failed_step(
    case: tuple[list[tuple[int, Path, str, bool]], list[str]],
) -> None:
    steps, hosts = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "run"
        _write_run(root, steps, hosts)
        result = _outcome(root)
        if result is None:
            return  # _outcome checked it is one clear line
        # a level exists only from a step that ran to the end by perfkit's record and by its output
        usable = {f"load/{name}/sysbench.out" for name, ok in _names(steps) if ok}
        for s in result.sweep.steps if result.sweep else []:
            assert s.source in usable, (s.source, usable)
        bad = {f"load/{name}/sysbench.out" for name, ok in _names(steps) if not ok}
        assert bad <= {e.source for e in result.excluded_steps}
        if result.sweep is not None:
            assert result.sweep.peak.source in usable
            assert result.sweep.knee_threads is None or result.sweep.knee_threads in {
                s.threads for s in result.sweep.steps
            }


def _names(steps: list[tuple[int, Path, str, bool]]) -> list[tuple[str, bool]]:
    """(step name as _write_run names it, whether the step measured a level)."""
    out = []
    for i, (threads, _log, status, measured) in enumerate(steps):
        name = f"t{threads:04d}" + (f"-{i}" if any(s[0] == threads for s in steps[:i]) else "")
        out.append((name, measured and status in ("ok", "degraded")))
    return out

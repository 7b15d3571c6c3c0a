"""perfkit compare (analyzers/compare.py, reports/compare_*.py, `perfkit compare`).

The interval's false-alarm rate is checked on simulated autocorrelated series, because no finite set
of real runs pins a rate down; the comparisons themselves run on real archives
(tests/fixtures/archives/, README there).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from perfkit.analyzers.compare import (
    Comparison,
    Group,
    UseChange,
    between_runs,
    change,
    compare,
    interval_pct,
)
from perfkit.cli import EXIT_FINDINGS, main
from perfkit.pipeline import analyze_path
from perfkit.reports import compare_md
from perfkit.reports import use as use_report

from .conftest import FIXTURES, PERFKIT

HOT, CONTROL = FIXTURES / "archives" / "db-hot-rows", FIXTURES / "archives" / "db-hot-rows-control"
IOPS = FIXTURES / "archives" / "scn-db-write-iops"


def ar1(n: int, phi: float, rng: np.random.Generator, mean: float = 1000.0, cv: float = 0.03) -> np.ndarray:
    """A stationary AR(1) series: how per-second throughput wanders around its level."""
    e = rng.normal(0.0, 1.0, n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + np.sqrt(1 - phi**2) * e[i]
    return mean * (1 + cv * x)


@pytest.mark.parametrize(("phi", "n"), [(0.0, 10), (0.0, 60), (0.5, 30), (0.8, 30), (0.8, 120), (0.9, 60)])
def test_the_interval_keeps_its_false_alarm_rate_on_autocorrelated_intervals(phi: float, n: int) -> None:
    # A/A: both series from the same process; a 95 % interval should exclude 0 about 5 % of the time.
    # Taking the samples for independent (a plain t or rank test) gives 20-60 % at phi 0.8-0.9.
    rng = np.random.default_rng(7)
    alarms = 0
    for _ in range(400):
        lo, hi = interval_pct(ar1(n, phi, rng), ar1(n, phi, rng))
        alarms += lo > 0 or hi < 0
    assert alarms / 400 <= 0.11, alarms


def test_a_real_shift_is_found() -> None:
    rng = np.random.default_rng(3)
    found = sum(
        (
            c := change(
                pd.Series(ar1(30, 0.5, rng)),
                pd.Series(ar1(30, 0.5, rng, mean=900.0)),
                min_change_pct=5,
                min_intervals=5,
            )
        ).significant
        is True
        and c.change_pct is not None
        and c.change_pct < -5
        for _ in range(100)
    )
    assert found >= 95


def test_a_small_change_is_noise_however_narrow_its_interval() -> None:
    # 2 % with almost no second-to-second noise: the interval excludes 0, but a 2 % move between two
    # runs is within what two runs of one configuration differ by
    base = pd.Series(np.full(30, 1000.0) + np.arange(30) % 2)
    new = base * 1.02
    c = change(base, new, min_change_pct=5, min_intervals=5)
    assert c.ci_pct is not None and c.ci_pct[0] > 0
    assert (c.significant, c.sign) == (False, "~")
    assert change(base, new, min_change_pct=1, min_intervals=5).sign == "+2.0%"


def test_intervals_that_move_together_make_a_wide_interval() -> None:
    # 12 seconds in two plateaus: about 2 independent readings, whatever the count says; a 9.5 % fall
    # is well inside what such runs can do (taken for 12 independent seconds it would be "significant")
    base = pd.Series([1000.0] * 6 + [1100.0] * 6)
    new = pd.Series([900.0] * 6 + [1000.0] * 6)
    c = change(base, new, min_change_pct=5, min_intervals=5)
    assert c.change_pct == pytest.approx(-9.52, abs=0.01) and c.ci_pct is not None
    assert c.ci_pct[0] < 0 < c.ci_pct[1] and (c.significant, c.sign) == (False, "~")


def test_too_few_intervals_are_shown_never_judged() -> None:
    c = change(pd.Series([100.0, 101, 99]), pd.Series([50.0, 51, 49]), min_change_pct=5, min_intervals=5)
    assert c.change_pct == pytest.approx(-50.0)
    assert (c.significant, c.ci_pct) == (None, None)
    assert c.why == "3 steady intervals, 5 needed to judge" and c.sign == "-50.0% (not judged)"


def test_a_zero_base_has_no_relative_change() -> None:
    c = change(pd.Series([0.0] * 6), pd.Series([5.0] * 6), min_change_pct=5, min_intervals=5)
    assert (c.change_pct, c.significant, c.sign) == (None, None, "n/a")


def test_a_run_against_itself_changes_nothing() -> None:
    a = analyze_path(IOPS)
    c = compare(a, a, min_intervals=3)  # 4-second steps: 4 steady intervals
    assert [s.threads for s in c.steps] == [1, 4, 16]
    # no change, and none called one (4 one-second intervals a step: some too few to judge at all)
    assert all(s.throughput.change_pct == 0 and s.throughput.significant is not True for s in c.steps)
    assert (c.appeared, c.gone, c.changed) == ([], [], [])
    # one run a side: said, since its intervals cannot show the spread between runs
    assert c.spread == "within-run" and [w[:31] for w in c.warnings] == ["one run a side (BASE 1, NEW 1):"]
    assert "+0.0%" in c.headline() and c.regressions(0) == []


def test_hot_rows_against_its_control_names_what_appeared_and_the_workload_difference() -> None:
    base, new = analyze_path(CONTROL), analyze_path(HOT)
    c = compare(base, new)
    doc = c.to_dict()
    # the figures are the two sweeps' own step means
    for s in c.steps:
        b = next(x for x in base.sweep.steps if x.threads == s.threads)
        n = next(x for x in new.sweep.steps if x.threads == s.threads)
        assert s.throughput.base == pytest.approx(b.intervals["tps"].mean())
        assert s.throughput.new == pytest.approx(n.intervals["tps"].mean())
    assert "db.lock-contention" in doc["findings"]["appeared"]
    assert doc["knee"]["threads"] == [None, new.sweep.knee_threads] and new.sweep.knee_threads is not None
    assert doc["warnings"][0] == "table_size differs: 10000 in BASE, 4 in NEW"
    assert doc["warnings"][1].startswith("one run a side (BASE 1, NEW 1)") and len(doc["warnings"]) == 2
    # 4-second steps: 3 steady intervals each, shown with their change but not judged
    assert all(
        s["significant"] is None and s["why"] == "3 steady intervals, 5 needed to judge" for s in doc["steps"]
    )
    assert c.regressions(1) == []  # a fall that was not judged never trips the gate


def test_cli_writes_compare_md_and_json(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["compare", str(CONTROL), str(HOT), "-o", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert doc["base"]["name"] == str(CONTROL) and len(doc["comparisons"]) == 1
    assert doc["comparisons"][0]["run"] == {"name": str(HOT), "verdict": "db.lock-contention"}
    md = (tmp_path / "c" / "compare.md").read_text()
    assert "appeared: `db.lock-contention`" in md and "table\\_size differs" in md
    assert r.output.splitlines()[0].startswith(f"{HOT}: A knee appeared at")


def test_cli_parses_each_archive_with_workers_as_analyze_does(tmp_path: Path) -> None:
    one, two = (
        CliRunner().invoke(main, ["compare", str(CONTROL), str(HOT), "--json", "--jobs", j])
        for j in ("1", "2")
    )
    assert one.exit_code == two.exit_code == 0, two.output
    assert json.loads(one.output) == json.loads(two.output)
    assert "--jobs" in CliRunner().invoke(main, ["compare", "--help"]).output


def test_cli_without_a_sweep_is_one_clear_line(tmp_path: Path) -> None:
    vmstat = next((FIXTURES / "vmstat").glob("*.txt"))
    r = CliRunner().invoke(main, ["compare", str(CONTROL), str(vmstat)])
    assert r.exit_code == 1
    assert r.output.strip().endswith("no load sweep to compare (no load generator output was read)")
    assert "Traceback" not in r.output


def test_fail_on_regression_needs_a_significant_fall(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["compare", str(IOPS), str(IOPS), "--fail-on-regression", "0"])
    assert r.exit_code == 0, r.output
    assert EXIT_FINDINGS == 4


def _with_profiles(src: Path, dst: Path, profiles: dict[str, str]) -> Path:
    """A copy of a real run archive with real pprof captures added as steps' captures (step name ->
    fixture), the way `perfkit run --pprof` records them."""
    import shutil

    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    for step, fixture in profiles.items():
        rel = f"hosts/db1/{step}/tidb-cpu.pb.gz"
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / "pprof" / fixture, dst / rel)
        manifest["captures"].append(
            {"id": "tidb-cpu", "host": "db1", "kind": "pprof", "path": rel, "step": step, "status": "ok"}
        )
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def test_differential_profiles_pair_the_same_capture_at_the_same_step(tmp_path: Path) -> None:
    from perfkit.reports.plots import compare_flames

    sha, md5 = "go1.26-cpu-sha256-2s.pb.gz", "go1.26-cpu-md5-2s.pb.gz"
    base = analyze_path(_with_profiles(HOT, tmp_path / "b", {"t0001": sha, "t0016": sha}))
    new = analyze_path(_with_profiles(HOT, tmp_path / "n", {"t0001": sha, "t0016": md5}))
    flames = compare_flames(base, new, base_name="B", new_name="N")
    assert [f.title for f in flames] == [
        "pprof db1/tidb-cpu.pb.gz at 1 threads (samples_count): N against B",
        "pprof db1/tidb-cpu.pb.gz at 16 threads (samples_count): N against B",
    ]
    assert "crypto/md5.block" not in flames[0].svg and "crypto/md5.block" in flames[1].svg
    # --steps 1,16: each run's 16-thread profile against its own 1-thread one
    within = compare_flames(base, new, base_name="B", new_name="N", steps=(1, 16))[2:]
    assert [f.title.split(": ")[-1] for f in within] == ["16 threads against 1 threads"] * 2
    assert "crypto/md5.block" in within[1].svg and "crypto/md5.block" not in within[0].svg


def test_a_move_from_zero_below_its_unit_s_floor_is_not_among_the_largest() -> None:
    """Two lab scenarios compared (db-write-iops against small-redo-log, 4 threads): the retransmitted
    share went 0 -> 0.000276 %, which relative to the larger of the two is as far as %util 0 -> 38;
    it was listed second, ahead of the CPU's 6.4 -> 47.9 % busy."""
    rows = [
        ("net", "tcp", "TCP retransmits % of segments sent", "%", 0.0, 0.000276),
        ("disk", "vda", "%util", "%", 0.0, 37.95),
        ("cpu", "all", use_report.BUSY, "%", 6.431, 47.87),
        ("net", "tcp", "TIME_WAIT sockets", "sockets", 5.333, 5.556),
        ("disk", "vda", "await", "ms", 0.2893, 0.075),
    ]
    c = Comparison("b", "n", "tps", (4, 4), None, (None, None))
    c.use = [UseChange(r, "localhost", i, "x", m, unit, 4, b, n) for r, i, m, unit, b, n in rows]
    order = [u.metric for u in c.use_moves()]
    assert order[:3] == ["%util", use_report.BUSY, "await"]
    assert order[-1] == "TCP retransmits % of segments sent"  # 0.000276 of its 1-point floor


def test_what_changed_underneath_sets_both_runs_side_by_side() -> None:
    from perfkit.reports.use import use_rows

    quota = FIXTURES / "archives" / "scn-client-cpu-quota"
    base, new = analyze_path(quota), analyze_path(IOPS)
    c = compare(base, new, use=(use_rows(base.dataset), use_rows(new.dataset)))
    # the USE rows both runs have at 4 threads, each run's own figure
    rb = {(r.metric, r.threads): r.mean for r in use_rows(base.dataset) if r.resource == "cpu"}
    rn = {(r.metric, r.threads): r.mean for r in use_rows(new.dataset) if r.resource == "cpu"}
    busy = next(u for u in c.use if u.metric.startswith("busy") and u.threads == 4)
    assert (busy.base, busy.new) == (rb[(busy.metric, 4)], rn[(busy.metric, 4)])
    assert c.use_moves()[0].threads in (1, 4, 16)
    # the database's threads: the throttled disk's run waits on IO where the quota's run did not
    w = next(x for x in c.waits if x.process == "mariadbd" and x.threads == 16)
    assert w.new["io"] >= 0.5 > w.base.get("io", 0.0)
    md = compare_md.render("b", [c])
    assert "| localhost | mariadbd | 16 |" in md and "What changed underneath" in md


# ---------------------------------------------------------------- lab: a real change, and no change


@pytest.mark.lab
def test_a_cpu_quota_on_the_database_is_a_fall_beyond_noise(tmp_path: Path) -> None:
    """Issue 18's acceptance: two real sweeps on a throwaway MariaDB (scripts/scenarios), one with its
    threads under a 0.4-core CPU quota and one without; `perfkit compare` calls the fall significant,
    its interval clear of zero, and names the finding that appeared. 12 s steps: about 10 steady
    one-second intervals a run, twice what a step needs to be judged (MIN_INTERVALS)."""
    from scripts.scenarios.lab import run_scenario

    from .test_scenarios import _need_lab

    _need_lab("cpu")
    kw = {"threads": "8", "time_s": 12, "workload": "oltp_read_write", "log": lambda m: None}
    kw["analyze"] = False  # compared below: the runner's own report is not needed
    limited = run_scenario("db-cpu-quota", tmp_path / "quota", quota=0.4, **kw)
    free = run_scenario("control", tmp_path / "control", **kw)
    assert limited["restore"] == [] and free["restore"] == []
    r = CliRunner().invoke(
        main,
        ["compare", str(tmp_path / "control" / "archive"), str(tmp_path / "quota" / "archive"),
         "-o", str(tmp_path / "cmp"), "--fail-on-regression", "10"],
    )  # fmt: skip
    assert r.exit_code == EXIT_FINDINGS, r.output  # the gate trips on a significant fall
    [c] = json.loads((tmp_path / "cmp" / "compare.json").read_text())["comparisons"]
    peak = c["peak"]
    assert peak["significant"] is True and peak["change_pct"] < -30 and peak["ci_pct"][1] < 0
    # the figures are the two runs' own: each step's steady intervals, near sysbench's own summary TPS
    means = [
        analyze_path(tmp_path / d / "archive").sweep.steps[0].intervals["tps"].mean()
        for d in ("control", "quota")
    ]
    assert peak["tps"] == pytest.approx(means)
    summary = [rec["steps"][0]["tps"] for rec in (free, limited)]
    assert peak["tps"] == pytest.approx(summary, rel=0.15)
    assert [s["threads"] for s in c["steps"]] == [8] and c["steps"][0]["significant"] is True
    assert "cpu.throttled" in c["findings"]["appeared"]
    assert "regression in" in r.output


def test_analyzed_outputs_compare_side_by_side_without_judging(tmp_path: Path) -> None:
    # reports perfkit wrote (a findings.json, or the directory holding it), read back: the steps'
    # figures and the findings, never a verdict on a change (no per-interval samples in a report)
    for src, out in ((CONTROL, "r0"), (HOT, "r1")):
        assert CliRunner().invoke(main, ["analyze", str(src), "-o", str(tmp_path / out)]).exit_code == 0
    r = CliRunner().invoke(
        main, ["compare", str(tmp_path / "r0"), str(tmp_path / "r1" / "findings.json"), "--json"]
    )
    assert r.exit_code == 0, r.output
    [c] = json.loads(r.output)["comparisons"]
    doc0 = json.loads((tmp_path / "r0" / "findings.json").read_text())
    doc1 = json.loads((tmp_path / "r1" / "findings.json").read_text())
    assert [s["tps"] for s in c["steps"]] == [
        [a["tps"], b["tps"]] for a, b in zip(doc0["sweep"]["steps"], doc1["sweep"]["steps"], strict=True)
    ]
    assert all(s["significant"] is None and s["why"].startswith("one figure a step") for s in c["steps"])
    assert c["steps"][0]["p95_ms"] == [
        doc0["sweep"]["steps"][0]["lat_p95_ms"],
        doc1["sweep"]["steps"][0]["lat_p95_ms"],
    ]
    assert "db.lock-contention" in c["findings"]["appeared"] and c["knee"]["threads"] == [None, 4]
    # an archive against a report: the same figures as report against report
    mixed = CliRunner().invoke(main, ["compare", str(CONTROL), str(tmp_path / "r1"), "--json"])
    assert json.loads(mixed.output)["comparisons"][0]["findings"] == c["findings"]


def test_a_findings_json_perfkit_cannot_read_back_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "findings.json"
    bad.write_text('{"format_version": 1, "sweep": {"steps": [{"threads": "many"}]}}')
    r = CliRunner().invoke(main, ["compare", str(bad), str(HOT)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.strip().startswith(f"Error: {bad}: cannot read it back as an analyzed run:")


@pytest.mark.lab
def test_a_real_run_with_perf_compares_its_own_steps(lab_mariadb: Path, tmp_path: Path) -> None:
    """`perfkit run --perf mariadbd` folds the database's stacks in every step; `compare --steps 1,4`
    draws each run's 4-thread profile against its own 1-thread one, from those real captures."""
    import os
    import subprocess

    from .conftest import lab_password, need_tool

    need_tool("perf")
    env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": lab_password(lab_mariadb)}
    run = tmp_path / "run"
    proc = subprocess.run(
        [*PERFKIT, "run", "sysbench", "--mysql-user", "perfkit", "--workload", "oltp_point_select",
         "--tables", "2", "--table-size", "10000", "--threads", "1,4", "--time", "4",
         "--profile", "minimal", "--perf", "mariadbd", "--no-report", "-o", str(run)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((run / "manifest.json").read_text())
    folded = {r["step"]: r for r in manifest["captures"] if r["kind"] == "folded"}
    recorded = {r["step"]: r for r in manifest["captures"] if r["kind"] == "perf_record"}
    assert sorted(folded) == ["t0001", "t0004"] and all(r["status"] == "ok" for r in folded.values())
    for step, rec in folded.items():
        rows = [line.rsplit(" ", 1) for line in (run / rec["path"]).read_text().splitlines()]
        assert rows and all(stack.startswith("mariadbd;") for stack, _ in rows)
        # 99 Hz on each CPU the server ran on, for the window perf recorded: no more stacks than that
        # (a step's share of the CPU is not asserted: on 2 vCPUs four clients may leave the server less)
        window = datetime.fromisoformat(recorded[step]["ended_at"]) - datetime.fromisoformat(
            recorded[step]["started_at"]
        )
        assert 0 < sum(int(n) for _, n in rows) <= 99 * (os.cpu_count() or 1) * (window.total_seconds() + 1)
    cmp = tmp_path / "cmp"
    r = CliRunner().invoke(main, ["compare", str(run), str(run), "--steps", "1,4", "-o", str(cmp)])
    assert r.exit_code == 0, r.output
    html = (cmp / "compare.html").read_text()
    assert html.count("4 threads against 1 threads") >= 2  # each run's own, titled with the direction
    assert "red: a larger share in 4 threads than in 1 threads" in html


# ---------------------------------------------------------------- replicates: groups of runs a side

REDO, REDO_CONTROL = (
    FIXTURES / "archives" / "db-small-redo-log",
    FIXTURES / "archives" / "db-small-redo-log-control",
)


def _group(name: str, *paths: Path) -> Group:
    return Group(name, tuple(analyze_path(p) for p in paths), tuple(p.name for p in paths))


def _run_means(paths: tuple[Path, ...], threads: int) -> list[float]:
    """Each run's steady-interval mean at `threads`, straight from its sweep."""
    out = []
    for p in paths:
        steps = [s for s in analyze_path(p).sweep.steps if s.threads == threads]
        out.append(float(pd.concat([s.intervals["tps"] for s in steps]).mean()))
    return out


def test_groups_judge_each_step_by_the_spread_between_run_means() -> None:
    from scipy import stats

    # real runs: BASE two oltp_write_only sweeps (a 4 MiB redo log and the default), NEW two
    # oltp_update_non_index sweeps (4 hot rows and 10,000 rows): 1, 4 and 16 threads in each
    bp, np_ = (REDO_CONTROL, REDO), (CONTROL, HOT)
    c = compare(_group("B", *bp), _group("N", *np_))
    doc = c.to_dict()
    assert doc["spread"] == "between-runs" and [s["threads"] for s in doc["steps"]] == [1, 4, 16]
    assert [r["name"] for r in doc["runs"]["base"]] == [REDO_CONTROL.name, REDO.name]
    assert [r["name"] for r in doc["runs"]["new"]] == [CONTROL.name, HOT.name]
    for s in doc["steps"]:
        b, n = _run_means(bp, s["threads"]), _run_means(np_, s["threads"])
        assert s["run_means"] == {"base": pytest.approx(b), "new": pytest.approx(n)}
        assert s["spread"] == "between-runs" and s["runs"] == [2, 2]
        assert s["change_pct"] == pytest.approx((np.mean(n) / np.mean(b) - 1) * 100)
        # Welch's t on the run means, as scipy does it: the same degrees of freedom and decision
        welch = stats.ttest_ind(n, b, equal_var=False)
        assert s["df"] == pytest.approx(welch.df)
        # Fieller: the ratios θ where (mean(n) − θ mean(b))² = t² (v_n + θ² v_b), by numpy's roots
        vb, vn = np.var(b, ddof=1) / 2, np.var(n, ddof=1) / 2
        t = stats.t.ppf(0.975, welch.df)
        mb, mn = np.mean(b), np.mean(n)
        roots = np.sort(np.roots([mb**2 - t**2 * vb, -2 * mb * mn, mn**2 - t**2 * vn]).real)
        if mb**2 - t**2 * vb > 0:
            assert s["ci_pct"] == pytest.approx(list((roots - 1) * 100))
            assert (s["ci_pct"][0] > 0 or s["ci_pct"][1] < 0) == (welch.pvalue < 0.05)
            assert s["significant"] == (welch.pvalue < 0.05 and abs(s["change_pct"]) >= 5)
        else:
            assert s["ci_pct"] is None and s["significant"] is None and "unbounded" in s["why"]
    assert any(s["ci_pct"] is not None for s in doc["steps"])  # the arithmetic was checked somewhere
    # the peak from each run's own peak figure
    peaks = [[r["peak"]["tps"] for r in doc["runs"][k]] for k in ("base", "new")]
    assert doc["peak"]["run_means"] == {"base": peaks[0], "new": peaks[1]}
    assert doc["peak"]["change_pct"] == pytest.approx((np.mean(peaks[1]) / np.mean(peaks[0]) - 1) * 100)
    # the workloads: between the sides (first runs), and inside NEW the run that differs, named
    assert "workload differs: 'oltp_write_only' in BASE, 'oltp_update_non_index' in NEW" in c.warnings
    assert f"NEW run {HOT.name}: table_size is 4, 10000 in {CONTROL.name}" in c.warnings
    assert not any(w.startswith("one run a side") for w in c.warnings)

    # findings (by rule and hosts): appeared = in a NEW run and in no BASE run, gone the reverse
    def keys(paths: tuple[Path, ...]) -> set[tuple[str, tuple[str, ...]]]:
        return {(f.rule, tuple(f.hosts or ())) for p in paths for f in analyze_path(p).findings}

    kb, kn = keys(bp), keys(np_)
    assert sorted((f.rule, tuple(f.hosts or ())) for f in c.appeared) == sorted(kn - kb)
    assert sorted((f.rule, tuple(f.hosts or ())) for f in c.gone) == sorted(kb - kn)
    # db.log-wait in one BASE run only: gone all the same (hot-rows' NEW run has none)
    assert "db.log-wait" in doc["findings"]["gone"] and "rt.localized" not in doc["findings"]["gone"]
    # the USL fitted on every run's points of a side
    from perfkit.analyzers.usl import fit

    pts = [(s.threads, s.tps) for p in bp for s in analyze_path(p).sweep.steps]
    assert doc["usl"]["base"]["sigma"] == pytest.approx(fit(*zip(*pts, strict=True)).sigma)
    assert doc["usl"]["base"]["n_points"] == 6


def test_copies_of_one_run_have_no_spread_to_judge_by() -> None:
    c = between_runs([100.0, 100.0], [120.0, 120.0], min_change_pct=5)
    assert (c.change_pct, c.significant, c.ci_pct) == (pytest.approx(20.0), None, None)
    assert "no spread between runs" in c.why and c.spread == "between-runs"
    # one side flat, the other spread: Welch's df from the spread side alone (k − 1 = 2)
    c = between_runs([100.0, 100.0, 100.0], [118.0, 120.0, 122.0], min_change_pct=5)
    assert c.df == pytest.approx(2.0) and c.ci_pct is not None and c.significant is True


def test_cli_compares_a_group_of_runs_with_another(tmp_path: Path) -> None:
    import shutil

    for side, runs in (("base", (REDO_CONTROL, REDO)), ("new", (CONTROL, HOT))):
        shutil.copytree(runs[0], tmp_path / side / "r1")
        shutil.copytree(runs[1], tmp_path / side / "r2")
    # a packed run beside them: .tar.gz entries are runs too
    shutil.copy(
        FIXTURES / "archives" / "db-max-connections-control" / "archive.tar.gz",
        tmp_path / "new" / "r3.tar.gz",
    )
    out = tmp_path / "cmp"
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "base"), str(tmp_path / "new"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "compare.json").read_text())
    base_runs = [str(tmp_path / "base" / n) for n in ("r1", "r2")]
    assert doc["base"]["runs"] == base_runs
    [c] = doc["comparisons"]
    assert c["run"]["name"] == str(tmp_path / "new") and c["spread"] == "between-runs"
    assert [r["name"] for r in c["runs"]["new"]] == [
        str(tmp_path / "new" / n) for n in ("r1", "r2", "r3.tar.gz")
    ]
    one = next(s for s in c["steps"] if s["threads"] == 1)
    assert one["runs"] == [2, 3] and len(one["run_means"]["new"]) == 3
    assert c["only_in_new"] == [8]  # the packed run's 8-thread step, in no BASE run
    md, html = (out / "compare.md").read_text(), (out / "compare.html").read_text()
    assert "judged against the spread between runs (2 BASE runs, 3 NEW runs)" in html
    assert "judged against the spread between runs \\(2 BASE runs, 3 NEW runs\\)" in md
    assert "### Runs" in md and "r3.tar.gz" in md and "<h3>Runs</h3>" in html
    # a stray entry: one clear line, not a traceback
    (tmp_path / "base" / "notes.txt").write_text("x")
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "base"), str(tmp_path / "new")])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.strip().endswith(
        "a group of runs holds only runs (run directories, .tar.gz archives, "
        "analyzed outputs); notes.txt is none of these"
    )


def test_one_run_a_side_says_it_cannot_see_the_spread_between_runs(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["compare", str(CONTROL), str(HOT), "-o", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    [c] = json.loads((tmp_path / "c" / "compare.json").read_text())["comparisons"]
    assert c["spread"] == "within-run" and all(s["spread"] == "within-run" for s in c["steps"])
    [w] = [w for w in c["warnings"] if w.startswith("one run a side (BASE 1, NEW 1)")]
    assert "cannot tell it from run-to-run spread" in w and "docs/benchmarks.md" in w
    assert "run_means" not in c["steps"][0]
    md = (tmp_path / "c" / "compare.md").read_text()
    verdict = next(line for line in md.splitlines() if line.startswith("**"))
    assert "one run a side \\(1 BASE, 1 NEW\\) cannot tell a change from run-to-run spread" in verdict
    html = (tmp_path / "c" / "compare.html").read_text()
    assert "one run a side (1 BASE, 1 NEW) cannot tell a change from run-to-run spread" in html
    assert "warning: one run a side" in r.output


def test_one_sweep_a_side_with_repeats_is_judged_between_its_runs() -> None:
    # `perfkit run sysbench --repeat 2` twice (tests/fixtures/archives/README.md): each step ran twice
    # in one sweep, the load tool started afresh each time, so each side holds its own spread
    pa, pb = FIXTURES / "archives" / "repeat-a", FIXTURES / "archives" / "repeat-b"
    a, b = analyze_path(pa), analyze_path(pb)
    c = compare(a, b, base_name="a", new_name="b")
    assert c.spread == "between-runs" and not any(w.startswith("one run a side") for w in c.warnings)
    one = next(s for s in c.steps if s.threads == 1)
    means = {
        p: [
            s["tps"]
            for s in json.loads((p / "manifest.json").read_text())["sweep"]["steps"]
            if s["threads"] == 1
        ]
        for p in (pa, pb)
    }
    # each run's figure is its steady intervals' mean: near the tool's own summary, one per repeat
    assert one.throughput.runs is not None and [len(r) for r in one.throughput.runs] == [2, 2]
    for got, summary in zip(one.throughput.runs, means.values(), strict=True):
        assert got == pytest.approx(summary, rel=0.1)
    assert one.throughput.change_pct == pytest.approx(
        (np.mean(one.throughput.runs[1]) / np.mean(one.throughput.runs[0]) - 1) * 100
    )
    assert "(2 BASE runs, 2 NEW runs of the load tool, repeats included; 1 and 1 sweeps)" in c.spread_note()


def test_sweeps_without_a_common_thread_count_are_judged_by_their_peaks_between_runs() -> None:
    # repeat-a kept at 1 thread, repeat-b at 2: no step in common, yet each side's peak has 2 runs
    from dataclasses import replace

    def only(path: Path, threads: int):
        a = analyze_path(path)
        steps = [s for s in a.sweep.steps if s.threads == threads]
        return replace(a, sweep=replace(a.sweep, steps=steps, peak=steps[0], knee_threads=None))

    c = compare(only(FIXTURES / "archives" / "repeat-a", 1), only(FIXTURES / "archives" / "repeat-b", 2))
    assert c.steps == [] and c.only_base == [1] and c.only_new == [2]
    assert c.peak.spread == "between-runs" and c.peak.runs is not None
    assert [len(r) for r in c.peak.runs] == [2, 2]
    assert c.spread == "between-runs" and not any(w.startswith("one run a side") for w in c.warnings)

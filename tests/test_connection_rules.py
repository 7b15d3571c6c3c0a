"""db.connection-limit (analyzers/connections.py) on real archives, and the max-connections scenario.

Unit tests read tests/fixtures/archives/db-max-connections and db-max-connections-control (README
there: the exact runs). The figures are worked out from the raw sampler lines (json, not the parser):
over the whole run a counter's delta is its last value minus its first; a load run's delta is the
value at the first sample at or after the run's end minus the one at the last sample before its start
(the samples whose intervals overlap the run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analyzers import analyze, connections
from analyzers.db import NO_SAMPLER
from analyzers.sweep import model
from perfkit.archive import open_archive
from perfkit.config import load_thresholds
from perfkit.dataset import Capture, Dataset, load_dataset
from perfkit.findings import Finding, Skipped

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "archives"
LIMIT = FIX / "db-max-connections" / "archive.tar.gz"
CONTROL = FIX / "db-max-connections-control" / "archive.tar.gz"
TH = load_thresholds()
RULE = "db.connection-limit"


def dataset(path: Path) -> Dataset:
    with open_archive(path) as a:
        return load_dataset(a)


def run(ds: Dataset) -> list[Finding] | Skipped:
    return connections.connection_limit(ds, model(ds, TH)[0], TH)


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def raw(archive: Path) -> tuple[dict, list[dict]]:
    """The manifest and the sampler's lines, read straight from the archive's files (a tarball here)."""
    if archive.is_dir():
        manifest = json.loads((archive / "manifest.json").read_text())
        (jsonl,) = archive.glob("db/*/global_status.jsonl")
        return manifest, [json.loads(x) for x in jsonl.read_text().splitlines()]
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("archive/manifest.json"))  # type: ignore[arg-type]
        (jsonl,) = [n for n in names if n.endswith("global_status.jsonl")]
        lines = tar.extractfile(jsonl).read().decode().splitlines()  # type: ignore[union-attr]
    return manifest, [json.loads(x) for x in lines]


def by_hand(archive: Path, step: str | None, key: str) -> float:
    """Δ`key` over the whole run (step None) or over the samples covering the step's load run."""
    manifest, lines = raw(archive)
    if step is None:
        return lines[-1]["status"][key] - lines[0]["status"][key]
    rec = next(r for r in manifest["captures"] if r.get("step") == step and r["kind"] == "sysbench")
    start, end = _stamp(rec["started_at"]), _stamp(rec["ended_at"])
    before = [o for o in lines if o["t"] < start][-1]
    after = next(o for o in lines if o["t"] >= end)
    return after["status"][key] - before["status"][key]


def gauge_max(archive: Path, step: str, key: str) -> float:
    manifest, lines = raw(archive)
    rec = next(r for r in manifest["captures"] if r.get("step") == step and r["kind"] == "sysbench")
    start, end = _stamp(rec["started_at"]), _stamp(rec["ended_at"])
    return max(o["status"][key] for o in lines if start <= o["t"] <= end)


def with_variables(ds: Dataset, value: float) -> Dataset:
    """`ds` plus a variables capture (kind mysql_variables: timestamp, host, name, value, number)
    saying max_connections = `value` at the first step's start, in place of the archive's own."""
    host = ds.of("mysql_status")[0].host
    t = ds.of("mysql_status")[0].frame["timestamp"].iloc[0]
    frame = pd.DataFrame(
        {
            "timestamp": [t, t],
            "host": pd.array([host, host], dtype="string"),
            "name": pd.array(["max_connections", "max_user_connections"], dtype="string"),
            "value": pd.array([f"{value:g}", "0"], dtype="string"),
            "number": np.array([value, 0.0], dtype="float64"),
        }
    )
    cap = Capture(f"db/{host}/t0001/variables.txt", "mysql_variables", host, "t0001", frame)
    return Dataset(ds.source, ds.manifest, [*without(ds, "mysql_variables").captures, cap])


def without(ds: Dataset, kind: str) -> Dataset:
    return Dataset(ds.source, ds.manifest, [c for c in ds.captures if c.kind != kind])


def test_refusals_and_the_failed_step_are_the_status_deltas() -> None:
    (f,) = run(dataset(LIMIT))
    ev = f.evidence
    # the sampler at 10:09:52.218 and 10:09:53.218 around t0016's load run (10:09:52.261-.451):
    # Connection_errors_max_connections 0 -> 3, Aborted_connects 0 -> 7; none in any other second
    assert by_hand(LIMIT, None, "Connection_errors_max_connections") == 3
    assert by_hand(LIMIT, "t0016", "Connection_errors_max_connections") == 3
    assert by_hand(LIMIT, None, "Aborted_connects") == by_hand(LIMIT, "t0016", "Aborted_connects") == 7
    assert (ev["refused"], ev["aborted_connects"]) == (3, 7)
    assert f.severity == "critical"
    assert ev["failed_steps"] == ["t0016"] and ev["failed_threads"] == [16]
    assert ev["limit_errors"] == ["max_connections"] and "1040" in ev["failed_reasons"][0]
    assert ev["highest_ok_threads"] == 8
    # Max_used_connections 1 at the first sample, 11 after the refusals: max_connections (10) + the
    # connect MariaDB lets in before it checks the limit; Threads_connected sampled reaches the limit at
    # t0008 (8 sysbench threads, the sampler, the step's snapshot); t0016's run lasted 190 ms: no sample
    manifest, lines = raw(LIMIT)
    used = [o["status"]["Max_used_connections"] for o in lines]
    assert (used[0], used[-1]) == (1, 11)
    assert (ev["max_used_connections_before"], ev["max_used_connections"]) == (used[0], used[-1])
    assert ev["threads_connected_peak"] == gauge_max(LIMIT, "t0008", "Threads_connected") == 10
    assert ev["connections_in_use_peak"] == 11
    rows = {r[0]: dict(zip(ev["step_columns"], r, strict=True)) for r in ev["steps"]}
    assert list(rows) == ["t0001", "t0004", "t0008", "t0016"]
    for step in rows:
        assert rows[step]["refused"] == by_hand(LIMIT, step, "Connection_errors_max_connections")
        assert rows[step]["aborted_connects"] == by_hand(LIMIT, step, "Aborted_connects")
    assert [rows[s]["threads_connected_max"] for s in ("t0001", "t0004", "t0008")] == [2, 5, 10]
    assert rows["t0016"]["status"] == "failed" and rows["t0016"]["threads_connected_max"] is None
    assert "3 connects refused" in f.summary
    assert "Too many connections (1040) at t0016 (16 threads)" in f.summary
    assert "up to 8 threads" in f.summary
    assert f.hosts == [next(r["host"] for r in manifest["captures"] if r["kind"] == "mysql_status")]


def test_the_failed_step_is_out_of_the_sweep_model_yet_in_the_finding() -> None:
    ds = dataset(LIMIT)
    sweep, excluded = model(ds, TH)
    assert [s.threads for s in sweep.steps] == [1, 4, 8]
    (ex,) = excluded
    assert (ex.threads, ex.status) == (16, "failed") and "Too many connections" in ex.reason
    # the rule reads the manifest's load runs, not the model: the same without a sweep at all
    assert [f.evidence for f in connections.connection_limit(ds, None, TH)] == [f.evidence for f in run(ds)]


def test_it_is_the_verdict_above_the_sweep_shape() -> None:
    result = analyze(dataset(LIMIT), TH)
    assert not result.failed
    rules = [f.rule for f in result.findings]
    assert result.verdict is not None and result.verdict.rule == RULE
    assert "sweep.knee" in rules  # the 1-8 thread sweep bends too: the shape ranks below the cause
    assert rules.index(RULE) < rules.index("sweep.knee")
    assert [e.source for e in result.excluded_steps] == ["load/t0016/sysbench.out"]


def test_the_control_with_300_connections_is_silent() -> None:
    ds = dataset(CONTROL)
    assert run(ds) == []
    found = connections.host_connections(ds, connections.load_runs(ds))
    assert not isinstance(found, Skipped)
    (hc,) = found.values()
    assert by_hand(CONTROL, None, "Connection_errors_max_connections") == 0 and hc.refused == 0
    # 16 sysbench threads, the sampler and the step's snapshot, of the 300 the variables capture says
    assert hc.connected_peak == gauge_max(CONTROL, "t0016", "Threads_connected") == 18
    assert hc.max_connections == 300
    assert [s.run.status for s in hc.steps] == ["ok"] * 4


def test_max_connections_from_the_variables_capture() -> None:
    ds = dataset(LIMIT)
    # every snapshot (each step's start and end) read max_connections 10, as the server was started
    values = {
        float(v)
        for c in ds.of("mysql_variables")
        for v in c.frame.loc[c.frame["name"] == "max_connections", "number"]
    }
    assert values == {10.0} and len(ds.of("mysql_variables")) == 8
    (f,) = run(ds)
    assert f.evidence["max_connections"] == 10
    assert f.evidence["basis"].startswith("max_connections from the variables capture")
    assert "not captured" not in f.evidence["basis"]
    assert (
        "(max_connections 10)" in f.title and "11 connections in use against max_connections 10" in f.summary
    )
    # without it: the refusals and Max_used_connections, said as the basis
    (g,) = run(without(ds, "mysql_variables"))
    assert g.evidence["max_connections"] is None and "(max_connections not captured)" in g.evidence["basis"]
    assert g.evidence["refused"] == f.evidence["refused"] and g.severity == "critical"


def test_near_the_limit_without_refusals_is_a_warning() -> None:
    # the control's 18 connections in use against a limit of 20: 90%
    (f,) = run(with_variables(dataset(CONTROL), 20))
    assert f.severity == "warning" and f.evidence["refused"] == 0 and f.evidence["failed_steps"] == []
    assert f.evidence["connections_in_use_peak"] == 18
    assert f.title == "Connections at the server's limit: 18 of 20 in use"
    assert run(with_variables(dataset(CONTROL), 21)) == []  # 18 of 21 = 86%, under near_share 0.9


def test_without_the_sampler_the_load_generators_error_still_says_it() -> None:
    ds = dataset(LIMIT)
    (f,) = run(without(ds, "mysql_status"))
    assert f.severity == "critical" and f.evidence["failed_steps"] == ["t0016"]
    assert f.evidence["refused"] is None and f.evidence["basis"] == "the load generator's connection errors"
    out = run(without(dataset(CONTROL), "mysql_status"))
    assert isinstance(out, Skipped) and out.reason == NO_SAMPLER


def test_skipped_without_the_connection_counters() -> None:
    ds = dataset(CONTROL)
    for c in ds.of("mysql_status"):
        for col in ("threads_connected", "max_used_connections", connections.REFUSED, connections.ABORTED):
            c.frame[col] = np.nan
    out = run(ds)
    assert isinstance(out, Skipped) and out.reason == connections.NO_COUNTERS


def test_skipped_without_load_runs_in_a_manifest() -> None:
    ds = dataset(CONTROL)
    out = run(Dataset(ds.source, None, ds.captures))
    assert isinstance(out, Skipped) and out.reason == connections.NO_STEPS


USER_LIMIT = "max_user_connections"


def test_a_users_max_user_connections_is_told_apart() -> None:
    ds = dataset(LIMIT)
    manifest = json.loads(json.dumps(ds.manifest))
    for rec in manifest["captures"]:
        if rec.get("step") == "t0016" and rec["kind"] == "sysbench":
            rec["reason"] = (
                f"MySQL error 1203: User pkscn already has more than '{USER_LIMIT}' active connections"
            )
    (f,) = run(replace(ds, manifest=manifest))
    assert f.evidence["limit_errors"] == [USER_LIMIT]
    assert "max_user_connections (1203)" in f.summary


# ---------------------------------------------------------------- lab: the max-connections scenario

# 1,4,16, not the fixture's 1,4,8,16: 8 threads, the sampler and a step's DB snapshot are exactly the
# 10 allowed, and a snapshot overlapping another (start, end) would be refused in a step meant to pass
THREADS = "1,4,16"
_RUNS: dict[str, Path] = {}


def scenario(name: str, tmp_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """Run a scenario once per session (several tests read it): scenario.json and its output dir."""
    if name not in _RUNS:
        out = tmp_factory.mktemp(name) / "run"
        cmd = [sys.executable, "-m", "scripts.scenarios", "run", name, "--threads", THREADS, "--time", "4"]
        proc = subprocess.run([*cmd, "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        _RUNS[name] = out
    out = _RUNS[name]
    info = json.loads((out / "scenario.json").read_text())
    assert info["restore"] == []
    return info, out


@pytest.mark.lab
def test_lab_max_connections_is_the_verdict(tmp_path_factory: pytest.TempPathFactory) -> None:
    info, out = scenario("max-connections", tmp_path_factory)
    assert info["server_options"] == ["--max-connections=10"]
    # the run is partial (exit 3): its last step failed on the limit; the report still comes out
    assert info["perfkit_run"]["exit_code"] == 3, (out / "perfkit-run.log").read_text()[-2000:]
    assert info["perfkit_analyze"]["exit_code"] == 0
    assert (out / "report" / "findings.json").exists() and (out / "report" / "report.md").exists()
    statuses = [(s["threads"], s["status"]) for s in info["steps"]]
    assert statuses == [(1, "ok"), (4, "ok"), (16, "failed")]
    assert info["perfkit_analyze"]["verdict"] == RULE
    archive = out / "archive"
    ds = dataset(archive)
    result = analyze(ds, TH)
    assert not result.failed, result.failed
    (f,) = [g for g in result.findings if g.rule == RULE]
    assert result.findings[0] is f and f.severity == "critical"
    ev = f.evidence
    refused = by_hand(archive, None, "Connection_errors_max_connections")
    assert refused >= 1 and ev["refused"] == refused
    assert ev["aborted_connects"] == by_hand(archive, None, "Aborted_connects")
    rows = {r[0]: dict(zip(ev["step_columns"], r, strict=True)) for r in ev["steps"]}
    assert rows["t0016"]["refused"] == refused  # all of them at 16 threads
    assert ev["failed_steps"] == ["t0016"] and ev["highest_ok_threads"] == 4
    # connected at the limit: the server held max_connections (+1 for the connect it refuses after)
    assert ev["max_used_connections"] >= 10
    # the limit itself from the per-step variables snapshots (collectors/db_snapshot.py), where taken
    assert ev["max_connections"] == (10 if ds.of("mysql_variables") else None)
    manifest, _ = raw(archive)
    (failed,) = [s for s in manifest["sweep"]["steps"] if s["status"] == "failed"]
    assert failed["name"] == "t0016" and "1040" in failed["reason"]


@pytest.mark.lab
def test_lab_max_connections_control_is_silent(tmp_path_factory: pytest.TempPathFactory) -> None:
    info, out = scenario("max-connections-control", tmp_path_factory)
    assert info["server_options"] == []
    assert info["perfkit_run"]["exit_code"] == 0
    assert [(s["threads"], s["status"]) for s in info["steps"]] == [(1, "ok"), (4, "ok"), (16, "ok")]
    archive = out / "archive"
    assert by_hand(archive, None, "Connection_errors_max_connections") == 0
    findings = analyze(dataset(archive), TH).findings
    assert [g for g in findings if g.rule == RULE] == []

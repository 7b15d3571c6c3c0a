"""db.lock-contention (analyzers/db.py) on real archives, and the hot-rows scenario in the lab.

Unit tests read tests/fixtures/archives/db-hot-rows and db-hot-rows-control (README there: the exact
runs). The figures are worked out from the raw sampler lines (json, not the parser): a step's window
is its sysbench record's started_at + 1 s .. ended_at - 0.5 s; the samples inside it are i0..i1, and
a counter's delta is its value at i1 minus its value at the sample before i0, over t[i1] - t[i0 - 1].
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from analyzers import analyze, db
from analyzers.sweep import model
from perfkit.archive import open_archive
from perfkit.config import load_thresholds
from perfkit.dataset import Dataset, load_dataset
from perfkit.findings import Finding, Skipped

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "archives"
HOT, CONTROL = FIX / "db-hot-rows", FIX / "db-hot-rows-control"
TH = load_thresholds()


def dataset(path: Path) -> Dataset:
    with open_archive(path) as a:
        return load_dataset(a)


def run(ds: Dataset) -> list[Finding] | Skipped:
    sweep, _ = model(ds, TH)
    return db.lock_contention(ds, sweep, TH)


def by_hand(archive: Path, step: str) -> dict[str, float]:
    """The step's deltas from the raw sampler lines and the manifest (module docstring's recipe)."""
    manifest = json.loads((archive / "manifest.json").read_text())
    rec = next(r for r in manifest["captures"] if r["path"] == f"load/{step}/sysbench.out")
    stamp = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()  # noqa: E731
    start, end = stamp(rec["started_at"]) + 1, stamp(rec["ended_at"]) - 0.5
    (jsonl,) = archive.glob("db/*/global_status.jsonl")
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    inside = [i for i, o in enumerate(lines) if start <= round(o["t"], 3) <= end]
    a, b = lines[inside[0] - 1], lines[inside[-1]]
    dt = round(b["t"], 3) - round(a["t"], 3)  # the frame keeps milliseconds
    delta = lambda k: b["status"][k] - a["status"][k]  # noqa: E731
    return {
        "seconds": dt,
        "lock_time_s": delta("Innodb_row_lock_time") / 1000,
        "lock_waits": delta("Innodb_row_lock_waits"),
        "samples": len(inside),
        "inside": sum(lines[i]["threads_running_avg"] for i in inside) / len(inside),
    }


def test_hot_rows_lock_time_per_second_is_the_status_delta() -> None:
    ds = dataset(HOT)
    (f,) = run(ds)
    ev = f.evidence
    hand = by_hand(HOT, "t0016")
    # t0016's window 08:58:49.638-52.199 holds the samples at :50.336 and :51.336; the one before is
    # :49.336: Innodb_row_lock_time 5190 - 987 = 4203 ms, Innodb_row_lock_waits 10478 - 3026 = 7452,
    # over 2.000 s: 2.1015 transactions waiting on average, 3726 waits a second
    assert hand == pytest.approx(
        {"seconds": 2.0, "lock_time_s": 4.203, "lock_waits": 7452, "samples": 2, "inside": 15.1115}
    )
    assert ev["threads"] == 16 and ev["knee_threads"] == 4
    assert ev["seconds"] == pytest.approx(hand["seconds"], rel=1e-9)
    assert ev["lock_time_s"] == pytest.approx(hand["lock_time_s"], rel=1e-9)
    assert ev["lock_waits"] == pytest.approx(hand["lock_waits"], rel=1e-9)
    assert ev["lock_waiting"] == pytest.approx(4.203 / 2.0, rel=1e-9)
    assert ev["waits_s"] == pytest.approx(7452 / 2.0, rel=1e-9)
    # waits per transaction: oltp_update_non_index runs autocommit statements (Com_commit stays 0),
    # so the basis is the sweep's steady TPS at 16 threads (sysbench's per-second lines)
    sweep, _ = model(ds, TH)
    tps = next(s.tps for s in sweep.steps if s.threads == 16)
    assert ev["txn_basis"] == "sweep TPS" and ev["transactions_s"] == tps
    assert ev["waits_per_txn"] == pytest.approx(3726 / tps, rel=1e-9)
    assert ev["concurrency"] == pytest.approx(hand["inside"], rel=1e-9)
    assert ev["lock_waiting_share"] == pytest.approx(2.1015 / 15.1115, rel=1e-9)
    assert ev["avg_wait_ms"] == pytest.approx(4203 / 7452, rel=1e-9)
    assert f.severity == "warning"  # 2.1 of 16 threads: not most of them
    assert f.hosts == ["127.0.0.1:46581"]
    assert "At 16 threads, 2.1 transactions waiting on row locks" in f.summary
    assert "4.2 s of lock time in 2.0 s" in f.summary and "0.43 waits per transaction" in f.summary
    # every step's figures, lowest first: none at 1 thread, a few at 4, thousands at 16
    for row, step in zip(ev["steps"], ("t0001", "t0004", "t0016"), strict=True):
        h = by_hand(HOT, step)
        assert row[1] == pytest.approx(round(h["lock_time_s"] / h["seconds"], 3), abs=1e-9)
        assert row[2] == pytest.approx(round(h["lock_waits"] / h["seconds"], 1), abs=1e-9)
    assert [r[0] for r in ev["steps"]] == [1, 4, 16]
    assert ev["steps"][0][1] == 0.0 and ev["steps"][1][1] < 0.01


def test_the_control_with_10000_rows_is_silent() -> None:
    ds = dataset(CONTROL)
    assert run(ds) == []
    steps = db.lock_steps(ds, model(ds, TH)[0], 2)
    assert not isinstance(steps, Skipped)
    (top,) = [s for s in next(iter(steps.values())) if s.threads == 16]
    hand = by_hand(CONTROL, "t0016")
    # window 08:59:12.833-15.444: samples :12.925, :13.920, :14.920 after :11.920: Innodb_row_lock_time
    # 2 - 0 = 2 ms, Innodb_row_lock_waits 62 - 6 = 56, over 3.000 s
    assert (hand["lock_time_s"], hand["lock_waits"], hand["samples"]) == (0.002, 56, 3)
    assert top.lock_time_s == pytest.approx(0.002, rel=1e-6) and top.lock_waits == pytest.approx(56, rel=1e-6)
    assert top.waiting < 0.001


def test_in_the_whole_analysis_it_is_a_cause() -> None:
    result = analyze(dataset(HOT), TH)
    assert not result.failed
    rules = [f.rule for f in result.findings]
    assert "db.lock-contention" in rules
    assert rules.index("db.lock-contention") < rules.index("sweep.knee")  # a cause above the shape


def test_skipped_without_a_db_sampler_capture() -> None:
    ds = dataset(HOT)
    bare = Dataset(ds.source, ds.manifest, [c for c in ds.captures if c.kind != "mysql_status"])
    out = run(bare)
    assert isinstance(out, Skipped) and out.reason == db.NO_SAMPLER


def test_skipped_when_the_status_has_no_row_lock_counters(tmp_path: Path) -> None:
    """TiDB's SHOW GLOBAL STATUS has no Innodb_row_lock_*: said, not read as no contention."""
    copy = tmp_path / "tidb-like"
    shutil.copytree(HOT, copy)
    (jsonl,) = copy.glob("db/*/global_status.jsonl")
    lines = []
    for line in jsonl.read_text().splitlines():
        o = json.loads(line)
        o["status"] = {k: v for k, v in o["status"].items() if not k.startswith("Innodb_row_lock")}
        lines.append(json.dumps(o))
    jsonl.write_text("\n".join(lines) + "\n")
    manifest = json.loads((copy / "manifest.json").read_text())
    for rec in manifest["captures"]:  # the file changed: its recorded size and digest no longer hold
        if rec["path"].startswith("db/"):
            rec["bytes"], rec["sha256"] = jsonl.stat().st_size, None
    (copy / "manifest.json").write_text(json.dumps(manifest))
    out = run(dataset(copy))
    assert isinstance(out, Skipped) and out.reason == db.NO_ROW_LOCKS and "TiDB" in out.reason


def test_skipped_without_a_sweep() -> None:
    ds = dataset(HOT)
    out = db.lock_contention(ds, None, TH)
    assert isinstance(out, Skipped) and "load" in out.reason


def test_the_statements_that_block_most_are_counted_from_the_lock_wait_polls() -> None:
    """db-hot-rows-blockers: the hot-rows scenario with the per-step lock-wait snapshots and the
    second's polls between them; the finding names the blocking statement and table, with the waits
    counted here from the raw JSON lines of the 16-thread step's files."""
    archive = FIX / "db-hot-rows-blockers"
    found = run(dataset(archive))
    assert isinstance(found, list)
    f = next(x for x in found if x.evidence.get("lock_waits") is not None)
    assert f.evidence["threads"] == 16
    waits: dict[tuple[str, str], set[tuple[float, str]]] = {}
    for path in sorted(archive.glob("db/*/t0016/lock_waits-*.jsonl")):
        for line in path.read_text().splitlines():
            snap = json.loads(line)
            for w in snap["waits"]:
                key = (w["table"], w["blocking_query"])
                waits.setdefault(key, set()).add((snap["t"], w["waiting_trx_id"]))
    assert waits, "the fixture's polls caught no wait"
    (table, query), seen = max(waits.items(), key=lambda kv: len(kv[1]))
    top = f.evidence["blockers"][0]
    assert top["table"] == table == "`sbtest`.`sbtest1`"
    assert top["statement"] == "UPDATE sbtest1 SET c=? WHERE id=?" and query.startswith(
        "UPDATE sbtest1 SET c="
    )
    assert top["waiting"] == len(seen)
    assert f"UPDATE sbtest1 SET c=? WHERE id=? on `sbtest`.`sbtest1` ({len(seen)} waits on it)" in f.summary


def test_without_lock_wait_snapshots_the_blockers_are_empty_not_guessed() -> None:
    found = run(dataset(HOT))  # made before the snapshots existed
    assert isinstance(found, list) and found[0].evidence["blockers"] == []
    assert "Blocking most" not in found[0].summary


def test_a_step_outside_the_sampler_is_left_out() -> None:
    """Samples from another time (a sampler started late) are no step's: no figures, no finding."""
    ds = dataset(HOT)
    for c in ds.of("mysql_status"):
        c.frame["timestamp"] = c.frame["timestamp"] + timedelta(hours=1)
    out = run(ds)
    assert isinstance(out, Skipped) and "fewer than 2 status samples" in out.reason


# ---------------------------------------------------------------- lab: the hot-rows scenario


def scenario(name: str, out: Path, *more: str) -> tuple[dict, list[Finding]]:
    cmd = [
        sys.executable,
        "-m",
        "scripts.scenarios",
        "run",
        name,
        "--threads",
        "1,8,32",
        "--time",
        "6",
        "--no-analyze",  # analyzed below, in this process
        *more,
    ]
    proc = subprocess.run([*cmd, "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads((out / "scenario.json").read_text())
    assert info["restore"] == []
    result = analyze(dataset(out / "archive"), TH)
    assert not result.failed, result.failed
    return info, result.findings


def ours(findings: list[Finding], info: dict) -> list[Finding]:
    """This run's instance only (other helpers' scenarios may be sampled beside it)."""
    port = info["instance"]["port"]
    return [f for f in findings if f.rule == "db.lock-contention" and f.evidence["host"].endswith(f":{port}")]


@pytest.mark.lab
def test_lab_hot_rows_is_lock_contention(tmp_path: Path) -> None:
    info, findings = scenario("hot-rows", tmp_path / "run", "--table-size", "3")
    assert info["table_size"] == 3 and info["workload"] == "oltp_update_non_index"
    (f,) = ours(findings, info)
    assert f.evidence["threads"] in (8, 32) and f.evidence["lock_waiting"] >= 0.5
    assert f.evidence["waits_per_txn"] > 0.05
    # the verdict, or right after what is also true on this 2-vCPU machine: the CPU, and the thread
    # sampler's view of the same waits (wait.profile ranks above causes: mariadbd's threads on locks)
    above = findings[: findings.index(f)]
    assert all(
        g.rule in ("cpu.saturated", "cpu.hot-thread")
        or (g.rule == "wait.profile" and g.evidence.get("dominant") == "lock")
        for g in above
    ), [(g.rule, g.summary) for g in findings]


@pytest.mark.lab
def test_lab_control_is_not_lock_contention(tmp_path: Path) -> None:
    info, findings = scenario("control", tmp_path / "run", "--workload", "oltp_update_non_index")
    assert info["table_size"] == 10000
    assert ours(findings, info) == []


def test_current_lock_waits_and_deadlocks_are_in_the_evidence() -> None:
    # the samples at :50.336 and :51.336 inside t0016's window both say Innodb_row_lock_current_waits
    # 8; Innodb_deadlocks stays 0 through the run (4 rows updated one statement at a time deadlock not)
    (f,) = run(dataset(HOT))
    assert f.evidence["current_waits_median"] == 8.0
    assert f.evidence["deadlocks"] == 0.0 and "deadlocks" not in f.summary

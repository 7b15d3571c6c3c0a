"""Analysis that survives what real runs leave behind (issue 14): a failing rule, zero throughput,
failed and interrupted steps, stray copies of load logs, bad thresholds and time zones, Ctrl-C.

Archives are built from real captures (tests/fixtures/<kind>/, commands in the README there) with a
manifest the way `perfkit run` writes one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfkit import analyzers
from perfkit.analyzers import analyze, is_context
from perfkit.archive import open_archive
from perfkit.cli import EXIT_INCOMPLETE, EXIT_INTERRUPTED, main
from perfkit.config import default_thresholds, load_thresholds, threshold_problem, time_zone
from perfkit.dataset import Capture, Dataset, load_dataset
from perfkit.errors import ConfigError
from perfkit.findings import Finding, count, data_size, number
from perfkit.parsers import sweep as sweep_parser
from perfkit.pipeline import analyze_path, summary_lines, write_reports

from .conftest import FIXTURES, ROOT
from .test_run_robustness import scratch  # noqa: F401 - a fixture

EXAMPLE = ROOT / "examples" / "seed000-tidb-write-only.tar.gz"
SB = FIXTURES / "sysbench"
KILLED = SB / "1.0.20-ro-connection-killed.txt"  # 3 good seconds at 2 threads, then the server gone
T4 = SB / "1.0.20-rw-t4-summary.txt"  # a complete 4-thread run: 893.7 TPS
T1_T4_T16 = SB / "1.0.20-rw-sweep-t1-t4-t16.txt"


def table(text: str) -> Dataset:
    return Dataset("t.csv", None, [Capture("t.csv", "sweep", None, None, sweep_parser.parse(text))])


# ---------------------------------------------------------------- one rule's exception


def _boom(ds, sweep, th):  # noqa: ANN001, ANN202 - a rule's signature
    return 1 / 0


def test_a_failing_rule_is_listed_and_every_other_rule_still_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = analyzers.rules()
    monkeypatch.setattr(analyzers, "rules", lambda: {**real, "sweep.knee": _boom})
    result = analyze_path(EXAMPLE)
    assert [f.rule for f in result.failed] == ["sweep.knee"]
    assert result.failed[0].reason.startswith("ZeroDivisionError: division by zero (tests/")
    assert not result.complete
    # the rest of the analysis is intact: the example's verdict and its retrograde finding
    assert result.verdict.rule == "disk.serial-small-io"
    assert "sweep.retrograde" in {f.rule for f in result.findings}
    assert "sweep.knee" not in {f.rule for f in result.findings}
    assert any(line.startswith("rule sweep.knee failed: ZeroDivisionError") for line in summary_lines(result))
    write_reports(result, tmp_path)
    doc = json.loads((tmp_path / "findings.json").read_text())
    assert doc["complete"] is False
    assert doc["failed"] == [{"rule": "sweep.knee", "reason": result.failed[0].reason}]
    assert "The analysis is incomplete: 1 of perfkit" in (tmp_path / "report.md").read_text()
    assert "The analysis is incomplete: 1 of perfkit" in (tmp_path / "report.html").read_text()
    cli = CliRunner().invoke(main, ["analyze", str(EXAMPLE)])
    assert cli.exit_code == EXIT_INCOMPLETE, cli.output
    assert "rule sweep.knee failed: ZeroDivisionError" in cli.output
    assert "Traceback" not in cli.output


def test_a_failing_sweep_model_is_named_and_the_host_rules_still_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.analyzers import sweep as sweep_model

    monkeypatch.setattr(sweep_model, "model", lambda ds, th: (_ for _ in ()).throw(ValueError("bad step")))
    result = analyze_path(EXAMPLE)
    assert [(f.rule, f.reason.split(" (")[0]) for f in result.failed] == [
        ("sweep model", "ValueError: bad step")
    ]
    assert result.verdict.rule == "disk.serial-small-io"  # iostat's rule does not need the sweep
    knee = next(s for s in result.skipped if s.rule == "sweep.knee")
    assert knee.reason == "the sweep model failed (see the failed rules)"


# ---------------------------------------------------------------- zero throughput (bug 1)


@pytest.mark.parametrize(
    "text",
    [
        "threads,tps,lat_ms\n8,0,12\n",  # one row: a step where nothing got through
        "threads,tps,lat_avg_ms\n1,0,5\n2,0,5\n4,0,7\n",  # nothing at any level (FTWRL held throughout)
        "threads,tps,lat_avg_ms\n1,100,5\n2,0,5\n4,0,7\n",  # connects failing (error 99) past 1 thread
        "threads,tps\n1,100\n2,0\n4,150\n8,100\n",  # a stall in the middle
    ],
)
def test_zero_throughput_levels_are_analyzed_not_a_crash(text: str) -> None:
    result = analyze(table(text), default_thresholds())
    assert result.failed == []
    for f in result.findings:  # no "0 requests in the system" from Little's law on no completions
        assert f.rule != "load.underdriven" or f.evidence["tps"] > 0


def test_throughput_vanishing_is_the_knee_and_a_retrograde() -> None:
    result = analyze(table("threads,tps,lat_avg_ms\n1,100,5\n2,190,8\n4,0,9\n"), default_thresholds())
    fired = {f.rule: f for f in result.findings}
    assert result.sweep.knee_threads == 2
    assert (
        "falls to nothing (190.0 → 0.0 TPS): no transaction completed at 4 threads"
        in fired["sweep.knee"].summary
    )
    assert fired["sweep.retrograde"].evidence["drop_pct"] == 100
    assert result.sweep.usl is None or result.sweep.usl.n_points == 2  # the zero level is no USL point


def test_nothing_completed_at_any_level_says_so() -> None:
    result = analyze(table("threads,tps\n1,0\n2,0\n4,0\n"), default_thresholds())
    assert result.failed == []
    retro = next(s for s in result.skipped if s.rule == "sweep.retrograde")
    assert "no load level completed a transaction" in retro.reason
    assert "sweep (table): 3 steps, no level completed a transaction, knee none" in summary_lines(result)


# ---------------------------------------------------------------- failed and stray steps (bugs 2, 19)


def _run_archive(
    root: Path, steps: list[tuple[str, int, Path, str, str]], host_captures: Sequence[tuple[str, Path]] = ()
) -> Path:
    """A `perfkit run`-style archive: (step, threads, load output, status, reason) per step, and the
    (kind, capture) of host db1 in every step."""
    records, sweep_steps = [], []
    for name, threads, src, status, reason in steps:
        rel = f"load/{name}/sysbench.out"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, root / rel)
        data = (root / rel).read_bytes()
        records.append(
            {
                "id": "sysbench",
                "host": "localhost",
                "kind": "sysbench",
                "path": rel,
                "step": name,
                "threads": threads,
                "bytes": len(data),
                "status": "ok" if status in ("ok", "degraded") else status,
                "reason": reason,
            }
        )
        sweep_steps.append({"name": name, "threads": threads, "status": status, "reason": reason})
        for kind, capture in host_captures:
            rel = f"hosts/db1/{name}/{kind}.out"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(capture, root / rel)
            records.append(
                {"id": kind, "host": "db1", "kind": kind, "path": rel, "step": name, "status": "ok"}
            )
    manifest = {
        "format_version": 1,
        "perfkit_version": "0.1.0",
        "run_id": "t",
        "status": "partial",
        "sweep": {"tool": "sysbench", "steps": sweep_steps, "stopped_because": "every planned step ran"},
        "captures": records,
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_a_failed_step_is_left_out_of_the_model_and_said(tmp_path: Path) -> None:
    # the 2-thread step died with the server (error 2013) after 3 good seconds at ~1,100 TPS: its
    # intervals beat the 4-thread step's 893.7, and used to become the sweep's peak
    root = _run_archive(
        tmp_path / "run",
        [
            ("t0002", 2, KILLED, "failed", "FATAL: mysql_stmt_execute() returned error 2013"),
            ("t0004", 4, T4, "ok", ""),
        ],
    )
    result = analyze_path(root)
    assert [s.threads for s in result.sweep.steps] == [4]
    assert result.sweep.peak.tps == pytest.approx(893.7, rel=0.2)
    [ex] = result.excluded_steps
    assert (ex.source, ex.threads, ex.status) == ("load/t0002/sysbench.out", 2, "failed")
    lines = summary_lines(result)
    assert (
        "left out of the sweep: load/t0002/sysbench.out (2 threads): failed: "
        "FATAL: mysql_stmt_execute() returned error 2013" in lines
    )
    out = tmp_path / "out"
    write_reports(result, out)
    doc = json.loads((out / "findings.json").read_text())
    assert doc["excluded_steps"][0]["threads"] == 2 and doc["sweep"]["peak"]["threads"] == 4
    assert "Load runs left out of the sweep model" in (out / "report.html").read_text()


def test_an_interrupted_step_is_left_out_even_with_a_summary(tmp_path: Path) -> None:
    root = _run_archive(
        tmp_path / "run",
        [("t0001", 1, T4, "ok", ""), ("t0004", 4, T4, "interrupted", "stopped by the user")],
    )
    result = analyze_path(root)
    assert [(e.threads, e.status) for e in result.excluded_steps] == [(4, "interrupted")]


def test_a_log_that_died_is_left_out_without_a_manifest(tmp_path: Path) -> None:
    # a foreign tarball: the FATAL line and the missing summary are all there is to go by
    (tmp_path / "sysbench_2.log").write_bytes(KILLED.read_bytes())
    (tmp_path / "sysbench_4.log").write_bytes(T4.read_bytes())
    (tmp_path / "sysbench_8.log").write_bytes((SB / "1.0.20-access-denied.txt").read_bytes())
    result = analyze_path(tmp_path)
    assert [s.threads for s in result.sweep.steps] == [4]
    assert sorted((e.source, e.status) for e in result.excluded_steps) == [
        ("sysbench_2.log", "failed"),
        ("sysbench_8.log", "failed"),
    ]
    denied = next(e for e in result.excluded_steps if e.source == "sysbench_8.log")
    assert denied.reason.startswith("FATAL:")


def test_a_go_ycsb_log_that_died_says_why(tmp_path: Path) -> None:
    # go-ycsb printed only its error: the reason is that error, not a missing thread count
    (tmp_path / "goycsb_16.log").write_bytes((FIXTURES / "goycsb" / "1.0.3-access-denied.txt").read_bytes())
    (tmp_path / "sysbench_4.log").write_bytes(T4.read_bytes())
    [ex] = analyze_path(tmp_path).excluded_steps
    assert (ex.source, ex.status) == ("goycsb_16.log", "failed")
    assert ex.reason.startswith("create db mysql failed Error 1045: Access denied")


def test_an_unlisted_copy_of_a_load_log_is_no_extra_step(tmp_path: Path) -> None:
    root = _run_archive(tmp_path / "run", [("t0004", 4, T4, "ok", "")])
    shutil.copy(root / "load/t0004/sysbench.out", root / "load/t0004/sysbench.out.orig")
    result = analyze_path(root)
    assert len(result.sweep.steps) == 1
    assert [(e.source, e.status) for e in result.excluded_steps] == [
        ("load/t0004/sysbench.out.orig", "unlisted")
    ]


def test_a_file_listed_but_missing_is_said_on_the_terminal(tmp_path: Path) -> None:
    root = _run_archive(tmp_path / "run", [("t0001", 1, T4, "ok", ""), ("t0004", 4, T4, "ok", "")])
    (root / "load/t0001/sysbench.out").unlink()
    cli = CliRunner().invoke(main, ["analyze", str(root)])
    assert cli.exit_code == 0, cli.output
    assert "archive problem: load/t0001/sysbench.out: listed in manifest but absent" in cli.output


# ---------------------------------------------------------------- the verdict (bug 22)


def _finding(rule: str, severity: str, **evidence: object) -> Finding:
    return Finding(rule, severity, "t", "s", dict(evidence), "e", [])


def test_perfkits_own_writes_are_context_never_the_verdict() -> None:
    localized = _finding("rt.localized", "warning")
    capture = _finding("io.top-writer", "warning", writer1="perfkit", writer1_category="capture")
    database = _finding("io.top-writer", "info", writer1="mariadbd", writer1_category="database")
    journal = _finding("io.top-writer", "warning", writer1="jbd2/sda2-8", writer1_category="journaling")
    assert is_context(capture) and is_context(database) and not is_context(journal)
    ds = Dataset("x", None)
    result = analyzers.Analysis(ds, None, findings=sorted([capture, localized], key=analyzers._rank))
    assert result.verdict is localized
    only = analyzers.Analysis(ds, None, findings=[capture])
    assert only.verdict is None  # context alone: no rule located a bottleneck


def test_a_write_rate_no_disk_would_notice_is_no_warning() -> None:
    # seed 000: perf writes 4,373 KiB/s, 88.8 % of all writes: a warning under the defaults ...
    from perfkit.analyzers import io

    iotop = FIXTURES / "iotop" / "seed000-iotop-botq-actual.txt"
    from perfkit.parsers import iotop as iotop_parser

    ds = Dataset("x", None, [Capture("i", "iotop", "h", None, iotop_parser.parse(iotop))])
    th = default_thresholds()
    [f] = io.top_writer(ds, None, th)
    assert f.severity == "warning" and f.evidence["writer1_write_kb_s_mean"] > 4000
    # ... and info once the floor is above its rate: the same share of a trickle says nothing
    th["io.top-writer"]["min_warn_write_kb_s"] = 5000
    [f] = io.top_writer(ds, None, th)
    assert f.severity == "info"


# ---------------------------------------------------------------- numbers a person reads (bug 23)


def test_numbers_are_printed_as_people_write_them(tmp_path: Path) -> None:
    assert [
        number(x) for x in (11337.0, 18860.4, 949.3, 12.345, 0.5, 2.8e-06, 0.0, 7, float("nan"), None)
    ] == [
        "11,337",
        "18,860",
        "949.3",
        "12.35",
        "0.5",
        "2.8e-06",
        "0",
        "7",
        "n/a",
        "n/a",
    ]
    assert (count(1, "thread"), count(4, "thread"), count(1, "step")) == ("1 thread", "4 threads", "1 step")
    # sizes: what is left of a full disk is not "0.0 GiB" (the disk-full lab test's 32 MiB)
    sizes = (7.9 * 2**30, 250 * 2**30, (32 << 20) - 4096, 6 << 20, 512 << 10)
    assert [data_size(n) for n in sizes] == ["7.9 GiB", "250 GiB", "32 MiB", "6.0 MiB", "512 KiB"]
    sweep = tmp_path / "sweep.csv"
    sweep.write_text("threads,tps,lat_avg_ms\n1,11337,0.5\n2,18860.4,0.6\n4,19001,1.1\n8,12000,3\n")
    result = analyze_path(sweep)
    write_reports(result, tmp_path / "out")
    for name in ("report.md", "report.html"):
        text = (tmp_path / "out" / name).read_text()
        assert "e+0" not in text, name
        assert "19,001" in text, name
    md = (tmp_path / "out" / "report.md").read_text()
    assert "every planned step ran.USL" not in md and " 1 threads" not in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert "ran.USL" not in html


def test_the_sweep_sentence_has_a_space_before_the_usl(tmp_path: Path) -> None:
    root = _run_archive(
        tmp_path / "run",
        [("t0001", 1, T4, "ok", ""), ("t0002", 2, T4, "ok", ""), ("t0004", 4, T4, "ok", "")],
    )
    result = analyze_path(root)
    write_reports(result, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    assert "stopped because every planned step ran. " in html


# ---------------------------------------------------------------- thresholds and time zones (bugs 18, 8)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("sweep:\n  warmup_fraction: 1.5\n", "must be at least 0 and below 1"),
        ("sweep.knee:\n  min_elasticity: .nan\n", "is not a finite number"),
        ("disk.saturated:\n  min_util_pct: 150\n", "between 0 and 100"),
        ("cpu.saturated:\n  min_samples: 2.5\n", "whole number"),
        ("load.underdriven:\n  min_concurrency_ratio: -1\n", "must not be negative"),
        ("cpu.saturated:\n  min_share: 1.2\n", "between 0 and 1"),
        ("mem.swapping:\n  min_kb_s: .inf\n", "is not a finite number"),
    ],
)
def test_a_threshold_that_would_switch_a_rule_off_is_refused(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "th.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=why):
        load_thresholds(path)
    cli = CliRunner().invoke(main, ["analyze", str(EXAMPLE), "--thresholds", str(path)])
    assert cli.exit_code == 1 and why in cli.output and "Traceback" not in cli.output


def test_every_default_threshold_is_in_its_range() -> None:
    for rule, values in default_thresholds().items():
        for key, value in values.items():
            assert threshold_problem(key, value) is None, (rule, key, value)


@pytest.mark.parametrize(
    ("given", "zone"),
    [("Asia/Shanghai", "Asia/Shanghai"), ("asia/shanghai", "Asia/Shanghai"), ("+08:00", "Etc/GMT-8")]
    + [("UTC-5", "Etc/GMT+5"), ("+0000", "UTC"), ("utc", "UTC"), ("Europe/Berlin", "Europe/Berlin")],
)
def test_time_zones_are_read_as_given(given: str, zone: str) -> None:
    assert time_zone(given) == zone


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("CST", "abbreviations are ambiguous"),
        ("Asia/Shangai", "did you mean Asia/Shanghai"),
        ("+05:30", "whole-hour"),
    ],
)
def test_a_bad_time_zone_is_one_clear_line(given: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        time_zone(given)
    cli = CliRunner().invoke(main, ["analyze", str(EXAMPLE), "--tz", given])
    assert cli.exit_code == 2 and why in cli.output and "Traceback" not in cli.output


def test_an_offset_time_zone_reads_a_foreign_tarballs_captures() -> None:
    # the example's OS captures (iostat, vmstat, ...) need the zone: none may be dropped for it
    result = analyze_path(EXAMPLE, tz="+08:00")
    assert result.dataset.unparsed == []
    iostat = result.dataset.of("iostat")[0].frame
    shanghai = analyze_path(EXAMPLE, tz="Asia/Shanghai").dataset.of("iostat")[0].frame
    assert iostat["timestamp"].equals(shanghai["timestamp"])


# ---------------------------------------------------------------- Ctrl-C (bug 16)


def test_ctrl_c_during_analyze_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    import perfkit.pipeline

    def interrupted(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT, as the terminal sends it
        time.sleep(5)

    monkeypatch.setattr(perfkit.pipeline, "analyze_path", interrupted)
    cli = CliRunner().invoke(main, ["analyze", str(EXAMPLE)])
    assert cli.exit_code == EXIT_INTERRUPTED
    assert "interrupted" in cli.output and "Aborted" not in cli.output


def test_the_example_still_reads_as_before() -> None:
    # the seed 000 sweep has no summaries and no FATAL lines: every level stays in the model
    result = analyze_path(EXAMPLE)
    assert [s.threads for s in result.sweep.steps] == [8, 24, 72, 216, 648, 800, 1200]
    assert result.excluded_steps == [] and result.complete
    assert math.isclose(result.sweep.peak.tps, 949.3, rel_tol=0.01)
    with open_archive(EXAMPLE) as ar:
        assert len(load_dataset(ar).of("sysbench")) == 7


# ---------------------------------------------------------------- the real thing (lab)


@pytest.mark.lab
def test_a_step_whose_server_connections_died_is_left_out_of_the_report(scratch, tmp_path: Path) -> None:  # noqa: F811
    """A real sweep: the 2-thread step's connections are killed mid-step (what a crashed or restarted
    server does to them); the report's peak and knee come from the steps that ran."""
    from .test_run_robustness import load_tables, mariadb, perfkit_run

    db, make_user = scratch
    password = "pk-" + uuid.uuid4().hex
    name = make_user(password)
    load_tables(db, 1, 2000)
    stop, killed = threading.Event(), []

    def kill_the_second_step() -> None:
        # once this run's 2-thread sysbench runs and has connected (its 2 and the DB sampler's: 3).
        # A count alone raced: the per-step DB snapshots also connect as the user, so 3 connections
        # were seen between the steps, and the kill missed step 2 (CI)
        this = "sysbench .*--table-size=2000 --threads=2 --time=4 "
        while not stop.is_set() and not killed:
            step_2 = subprocess.run(["pgrep", "-f", this], capture_output=True).returncode == 0
            ids = mariadb(f"SELECT id FROM information_schema.processlist WHERE user = '{name}'").split()
            if step_2 and len(ids) >= 3:
                for i in ids:
                    # one may have closed meanwhile: KILL of a gone id is an error, not a kill
                    subprocess.run(
                        ["mariadb", "-e", f"KILL CONNECTION {int(i)}"], capture_output=True, timeout=30
                    )
                killed.extend(ids)
            stop.wait(0.2)

    killer = threading.Thread(target=kill_the_second_step, daemon=True)
    killer.start()
    try:
        out = tmp_path / "run"
        proc = perfkit_run(
            name,
            password,
            db,
            out,
            "--table-size",
            "2000",
            "--threads",
            "1,2,4",
            "--time",
            "4",
            "--on-failure",
            "continue",
        )
    finally:
        stop.set()
        killer.join(10)
    assert killed, proc.stdout + proc.stderr
    steps = {s["name"]: s for s in json.loads((out / "manifest.json").read_text())["sweep"]["steps"]}
    assert steps["t0002"]["status"] == "failed", steps
    assert steps["t0001"]["status"] in ("ok", "degraded") and steps["t0004"]["status"] in ("ok", "degraded")
    assert "Traceback" not in proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "run-report" / "findings.json").read_text())
    assert [s["threads"] for s in doc["sweep"]["steps"]] == [1, 4]
    assert doc["sweep"]["peak"]["threads"] in (1, 4)
    assert [(e["source"], e["status"]) for e in doc["excluded_steps"]] == [
        ("load/t0002/sysbench.out", "failed")
    ]
    assert "left out of the sweep: load/t0002/sysbench.out (2 threads): failed: MySQL error" in proc.stdout


@pytest.mark.lab
def test_a_run_whose_report_lost_a_rule_exits_5(
    scratch,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from .test_run_robustness import load_tables

    db, make_user = scratch
    password = "pk-" + uuid.uuid4().hex
    name = make_user(password)
    load_tables(db, 1, 2000)
    real = analyzers.rules()
    monkeypatch.setattr(analyzers, "rules", lambda: {**real, "sweep.knee": _boom})
    out = tmp_path / "run"
    args = ["run", "sysbench", "--mysql-user", name, "--mysql-db", db, "--table-size", "2000"]
    args += ["--threads", "1,2", "--time", "2"]
    args += ["--cooldown-max", "0", "--profile", "minimal", "-o", str(out)]
    cli = CliRunner().invoke(main, args, env={"PERFKIT_MYSQL_PASSWORD": password})
    assert cli.exit_code == EXIT_INCOMPLETE, cli.output
    assert "complete: wrote" in cli.output and "rule sweep.knee failed: ZeroDivisionError" in cli.output
    assert (tmp_path / "run-report" / "report.html").exists()


def test_a_name_that_is_not_utf8_is_shown_escaped_on_the_terminal(tmp_path: Path) -> None:
    # a directory input keeps the name as the file system gives it (a lone surrogate); the summary
    # line must show `\xfe` as the report does, not `\udcfe`
    (tmp_path / "sweep.csv").write_text("threads,tps\n1,100\n2,190\n4,200\n")
    with open(os.fsencode(tmp_path) + b"/junk_\xfe", "wb") as fh:
        fh.write(b"nothing any parser reads\n")
    cli = CliRunner().invoke(main, ["analyze", str(tmp_path)])
    assert cli.exit_code == 0, cli.output
    assert "not read: junk_\\xfe: no parser recognises this format" in cli.output
    assert "udcfe" not in cli.output


def test_a_plot_or_table_that_raises_costs_only_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from perfkit.reports import plots, use

    monkeypatch.setattr(plots, "_sweep_plot", lambda sweep: 1 / 0)
    monkeypatch.setattr(use, "top_processes", lambda ds: [][1])
    result = analyze_path(EXAMPLE)
    write_reports(result, tmp_path)
    assert [(f.rule, f.reason.split(":")[0]) for f in result.failed] == [
        ("busiest processes", "IndexError"),
        ("plot sweep", "ZeroDivisionError"),
    ]
    assert not (tmp_path / "plots" / "sweep.png").exists()
    assert (tmp_path / "plots" / "timeline.png").exists()  # the other plots are drawn
    doc = json.loads((tmp_path / "findings.json").read_text())
    assert doc["complete"] is False and doc["verdict"] == "disk.serial-small-io"
    assert "plot sweep" in (tmp_path / "report.html").read_text()

"""The perfkit command: every subcommand, the bundled example, and bad input as one clear line."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from perfkit import __version__
from perfkit.archive import open_archive
from perfkit.cli import EXIT_FINDINGS, main

from .conftest import FIXTURES, ROOT

EXAMPLE = ROOT / "examples" / "seed000-tidb-write-only.tar.gz"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def test_version_and_help() -> None:
    code, out, _ = run("--version")
    assert code == 0 and __version__ in out
    for cmd in ([], ["analyze"], ["parse"]):
        code, out, _ = run(*cmd, "--help")
        assert code == 0 and "Usage:" in out


@pytest.fixture(scope="module")
def example_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("report")
    code, stdout, stderr = run("analyze", str(EXAMPLE), "-o", str(out))
    assert code == 0, stderr
    return out, json.loads((out / "findings.json").read_text())


def test_example_report_files(example_json: tuple[Path, dict]) -> None:
    out, _ = example_json
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
    assert (out / "report.md").read_text().startswith("# perfkit report")
    assert sorted(p.name for p in (out / "plots").iterdir())[:2] == ["iostat-0.png", "sweep.png"]


def test_example_finds_what_the_seed_data_says(example_json: tuple[Path, dict]) -> None:
    _, doc = example_json
    sweep = doc["sweep"]
    assert [s["threads"] for s in sweep["steps"]] == [8, 24, 72, 216, 648, 800, 1200]
    assert sweep["knee_threads"] == 648 and sweep["peak"]["threads"] == 800
    rules = {f["rule"]: f for f in doc["findings"]}
    assert rules["sweep.unstable"]["evidence"]["threads"] == 1200
    assert rules["sweep.unstable"]["evidence"]["drift_pct"] < -25
    serial = rules["disk.serial-small-io"]["evidence"]
    assert serial["device"] == "sda" and 270 <= serial["serial_iops_ceiling"] <= 290
    assert doc["inputs"]["unparsed"] == []  # every file of the example has a parser now
    parsed = {p["path"]: p for p in doc["inputs"]["parsed"]}
    assert {p["kind"] for p in parsed.values()} == {"iostat", "sysbench", "iotop"}
    assert parsed["os_seed000/iotop_1"]["rows"] == 8  # seed 000's one iotop iteration: 8 threads
    # A queue of ~1 with await near service time is a serial stream, not a disk out of capacity.
    assert "disk.saturated" not in rules


def test_json_on_stdout_for_a_directory() -> None:
    with open_archive(EXAMPLE) as archive:
        code, out, _ = run("analyze", str(archive.root), "--json")
    assert code == 0
    assert json.loads(out)["sweep"]["peak"]["threads"] == 800


def test_sweep_table_and_fail_on() -> None:
    table = str(FIXTURES / "sweep" / "seed002-qps-p95.txt")
    code, out, _ = run("analyze", table)
    assert code == 0 and "peak 3,844 QPS at 32 threads" in out and "sweep.retrograde" in out
    assert run("analyze", table, "--fail-on", "warning")[0] == EXIT_FINDINGS
    assert run("analyze", table, "--fail-on", "critical")[0] == 0


def test_parse_to_csv_and_json(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    code, _, _ = run(
        "parse", str(FIXTURES / "vmstat" / "procps-4.0.2-t.txt"), "--format", "csv", "-o", str(out)
    )
    assert code == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("timestamp,host,since_boot,r,b,swpd,free") and len(lines) == 5
    code, text, _ = run(
        "parse", str(FIXTURES / "sweep" / "spec-sdm91.txt"), "--kind", "sweep", "--format", "json"
    )
    assert code == 0 and json.loads(text)[-1] == {
        "host": None,
        "threads": 216,
        "tps": 1702.2,
        "qps": None,
        "lat_avg_ms": None,
        "lat_p95_ms": None,
        "lat_p99_ms": None,
    }
    code, text, _ = run("parse", "--list")
    assert code == 0 and "iostat" in text and "vmstat" in text
    listed = dict(line.split(None, 1) for line in text.splitlines())
    assert listed["mpstat"].startswith("sysstat per-CPU utilisation, `mpstat -P ALL")


def test_parse_to_parquet_keeps_types(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    code, _, _ = run(
        "parse", str(FIXTURES / "vmstat" / "procps-4.0.2-t.txt"), "--format", "parquet", "-o", str(out)
    )
    assert code == 0
    back = pd.read_parquet(out)
    assert str(back["timestamp"].dtype) == "datetime64[ns, UTC]" and len(back) == 4
    code, _, err = run("parse", str(FIXTURES / "vmstat" / "procps-4.0.2-t.txt"), "--format", "parquet")
    assert code == 2 and "give it with -o" in err


def test_parse_says_what_it_dropped_and_skipped(tmp_path: Path) -> None:
    cut = tmp_path / "vmstat.txt"
    cut.write_text((FIXTURES / "vmstat" / "procps-4.0.2-plain.txt").read_text().rstrip("\n")[:-3])
    code, _, err = run("parse", str(cut), "--kind", "vmstat", "--format", "csv")
    assert code == 0 and f"{cut}: 1 cut-off last line dropped" in err
    code, _, err = run(
        "parse", str(FIXTURES / "sar" / "sysstat-12.6-A.txt"), "--kind", "sar", "--format", "csv"
    )
    assert code == 0 and "sysstat-12.6-A.txt: partial: " in err


def test_parse_finds_a_pprof_profile_by_its_bytes(tmp_path: Path) -> None:
    code, text, _ = run("parse", str(FIXTURES / "pprof" / "go1.26-heap.pb.gz"), "--format", "json")
    rows = json.loads(text)
    assert (
        code == 0 and rows and all(";" in r["stack"] or r["stack"] == r["leaf"] for r in rows if r["stack"])
    )


def one_line_error(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert code == 1
    text = stderr.strip()
    assert "Traceback" not in stdout + stderr and len(text.splitlines()) == 1, stderr
    for needle in needles:
        assert needle in text


def test_garbage_file_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    one_line_error(*run("analyze", str(junk)), "junk.bin", "nothing perfkit can read")
    one_line_error(*run("parse", str(junk)), "junk.bin", "no parser recognises")


def test_truncated_gzip_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "cut.tar.gz"
    bad.write_bytes(EXAMPLE.read_bytes()[:700])
    one_line_error(*run("analyze", str(bad)), "cut.tar.gz")


def test_unknown_manifest_version_is_one_line(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = json.dumps({"format_version": 7, "perfkit_version": "9.9"}).encode()
        info = tarfile.TarInfo("run/manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    path = tmp_path / "future.tar.gz"
    path.write_bytes(gzip.compress(raw.getvalue()))
    one_line_error(*run("analyze", str(path)), "7", "9.9")


def test_bad_thresholds_file_is_one_line(tmp_path: Path) -> None:
    th = tmp_path / "th.yaml"
    th.write_text("sweep.knee:\n  min_elastcity: 0.2\n")
    one_line_error(
        *run("analyze", str(FIXTURES / "sweep" / "spec-sdm91.txt"), "--thresholds", str(th)), "min_elastcity"
    )


def test_thresholds_override_changes_the_knee(tmp_path: Path) -> None:
    table = str(FIXTURES / "sweep" / "spec-sdm91.txt")
    th = tmp_path / "th.yaml"
    th.write_text("sweep.knee:\n  min_elasticity: 0.8\n")
    default = json.loads(run("analyze", table, "--json")[1])["sweep"]["knee_threads"]
    strict = json.loads(run("analyze", table, "--json", "--thresholds", str(th))[1])["sweep"]["knee_threads"]
    assert (default, strict) == (36, 18)


def test_collect_dry_run_prints_what_would_run_and_runs_nothing(tmp_path: Path) -> None:
    code, out, _ = run(
        "collect",
        "--hosts",
        "root@10.0.0.1,admin@db2:2222",
        "-d",
        "60",
        "--profile",
        "minimal",
        "-o",
        str(tmp_path / "run"),
        "--dry-run",
    )
    assert code == 0 and not (tmp_path / "run").exists()
    assert "# 10.0.0.1 (ssh root@10.0.0.1)" in out and "# db2:2222 (ssh admin@db2:2222)" in out
    vm = [line for line in out.splitlines() if "vmstat" in line]
    assert len(vm) == 2 and vm[0].startswith("[window] cd /tmp/perfkit-")
    assert (
        "export LC_ALL=C S_TIME_FORMAT=ISO && exec timeout -k 5 -s TERM 70 sh -c 'vmstat -w -t 1 61' perfkit-"
        in vm[0]
    )
    # snapshots run in the control shell, whose own stdin is its script: theirs is closed
    uname = [line for line in out.splitlines() if "uname" in line]
    assert len(uname) == 2 and uname[0].startswith("[start] (cd /tmp/perfkit-")
    assert uname[0].endswith(") </dev/null") and "-s TERM 30 sh -c 'uname -a' perfkit-" in uname[0]


def test_collect_usage_errors() -> None:
    code, _, err = run("collect", "-d", "5", "-o", "x")
    assert code == 2 and "--hosts" in err
    code, _, err = run("collect", "--hosts", "db1;reboot", "-d", "5", "-o", "x")
    assert code == 1 and "db1;reboot" in err and "Traceback" not in err


def test_collect_dry_run_from_a_tiup_topology(tmp_path: Path) -> None:
    code, out, _ = run(
        "collect",
        "--inventory",
        str(ROOT / "configs" / "tiup-topology.yaml"),
        "-d",
        "10",
        "--profile",
        "minimal",
        "-o",
        str(tmp_path / "run"),
        "--dry-run",
    )
    assert code == 0
    hosts = [line for line in out.splitlines() if line.startswith("# ")]
    assert "# 10.0.1.15 (ssh tidb@10.0.1.15:2222)" in hosts and len(hosts) == len(set(hosts))


def test_a_password_in_a_host_string_is_never_echoed() -> None:
    code, _, err = run("collect", "--hosts", "bob:hunter2@db1", "-d", "5", "-o", "x")
    assert code == 1 and "hunter2" not in err and "bob:***@db1" in err

"""pt-stalk collection directories: recognised, grouped by prefix, analyzed (perfkit/ptstalk.py).

The fixture is a real collection (tests/fixtures/archives/ptstalk-mariadb/README.md); the lab test
runs pt-stalk against the lab MariaDB under a small sysbench load and analyzes what it wrote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzers.disk import _busy_devices
from perfkit.cli import main
from perfkit.pipeline import analyze_path

FIX = Path(__file__).parent / "fixtures" / "archives" / "ptstalk-mariadb"
PREFIXES = ("2026_11_27_12_48_02", "2026_11_27_12_48_05")
# rules the collection's data supports: CPU from mpstat/vmstat, disk from iostat/diskstats, df
SUPPORTED = ("cpu.saturated", "disk.serial-small-io", "disk.saturated", "disk.full")


def test_collection_recognised_grouped_and_dated() -> None:
    ds = analyze_path(FIX).dataset
    caps = {c.path: c for c in ds.captures}
    for prefix in PREFIXES:
        for what, kind in (
            ("iostat", "iostat"),
            ("diskstats", "diskstats"),
            ("netstat_s", "netstat_s"),
            ("mysqladmin", "mysqladmin"),
            ("innodbstatus1", "innodb_status"),
            ("top", "top"),
        ):
            cap = caps[f"{prefix}-{what}"]
            assert (cap.kind, cap.host, cap.step) == (kind, "vm", prefix)
    unparsed = {u["path"]: u["reason"] for u in ds.unparsed}
    assert "average of the -iostat file" in unparsed[f"{PREFIXES[0]}-iostat-overall"]
    assert "host name" in unparsed[f"{PREFIXES[0]}-hostname"]
    assert not any(c.path.endswith("-overall") for c in ds.captures)  # not counted twice
    # iostat prints no time: sample k at the prefix (12:48:02 UTC) + k s; top's clock gets its day
    io = caps[f"{PREFIXES[0]}-iostat"].frame
    assert str(io["timestamp"].iloc[0]) == "2026-11-27 12:48:02+00:00"
    assert str(io["timestamp"].iloc[4]) == "2026-11-27 12:48:06+00:00"
    top = caps[f"{PREFIXES[0]}-top"].frame
    assert top["timestamp"].notna().all() and str(top["timestamp"].iloc[0].date()) == "2026-11-27"
    assert ds.cpu_count("vm", PREFIXES[0])[0] == 2


def test_analyze_runs_the_rules_its_data_supports(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["analyze", str(FIX), "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "findings.json").read_text())
    not_run = {s["rule"] for s in doc["skipped"]}
    assert not not_run & set(SUPPORTED), not_run
    saturated = [f for f in doc["findings"] if f["rule"] == "cpu.saturated"]
    assert saturated and saturated[0]["hosts"] == ["vm"]
    assert {u["step"] for u in doc["use"] if u["resource"] == "cpu"} == set(PREFIXES)


def test_disk_rules_read_diskstats_where_no_iostat(tmp_path: Path) -> None:
    both = analyze_path(FIX).dataset
    # with iostat in the same window, diskstats is not judged a second time
    assert {p.rsplit("-", 1)[1] for *_, p in _busy_devices(both)} == {"iostat"}
    only = tmp_path / "stalk"
    shutil.copytree(FIX, only)
    for f in only.glob("*-iostat*"):
        f.unlink()
    analysis = analyze_path(only)
    busy = _busy_devices(analysis.dataset)
    assert [(h, d, p) for h, d, _, p in busy] == [("vm", "vda", f"{x}-diskstats") for x in PREFIXES]
    assert not {s.rule for s in analysis.skipped} & {"disk.serial-small-io", "disk.saturated"}
    rows = busy[0][2]
    assert 700 < rows["iops"].median() < 1300 and (rows["util_pct"] < 30).all()


@pytest.mark.lab
def test_lab_pt_stalk_directory_analyzed(lab_mariadb: Path, tmp_path: Path) -> None:
    if shutil.which("pt-stalk") is None:
        pytest.skip("pt-stalk not installed (apt-get install percona-toolkit)")
    from tests.conftest import lab_password

    cfg = {k: v for k, _, v in (ln.partition("=") for ln in lab_mariadb.read_text().splitlines())}
    defaults = tmp_path / "my.cnf"
    defaults.touch(mode=0o600)
    defaults.write_text(
        f"[client]\nuser={cfg['mysql-user']}\npassword={lab_password(lab_mariadb)}\n"
        f"host={cfg.get('mysql-host', '127.0.0.1')}\nport={cfg.get('mysql-port', '3306')}\n"
    )
    dest = tmp_path / "stalk"
    load = subprocess.Popen(
        [
            "sysbench",
            "oltp_read_write",
            f"--config-file={lab_mariadb}",
            "--tables=1",
            "--threads=4",
            "--time=12",
            "run",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        threading.Event().wait(2)
        subprocess.run(
            [
                "pt-stalk",
                "--no-stalk",
                "--run-time",
                "5",
                "--iterations",
                "1",
                f"--dest={dest}",
                f"--defaults-file={defaults}",
                f"--log={tmp_path / 'stalk.log'}",
                f"--pid={tmp_path / 'stalk.pid'}",
            ],
            check=True,
            timeout=90,
            capture_output=True,
        )
    finally:
        load.wait(timeout=60)
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["analyze", str(dest), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "findings.json").read_text())
    kinds = {p["kind"] for p in doc["inputs"]["parsed"]}
    assert {"iostat", "vmstat", "mpstat", "diskstats", "netstat_s", "mysqladmin", "top", "ps"} <= kinds
    not_run = {s["rule"] for s in doc["skipped"]}
    assert not not_run & set(SUPPORTED), not_run
    # diskstats' IOPS against iostat's over the same seconds: same device, same order of magnitude
    ds = analyze_path(dest).dataset
    (ios,) = [c.frame for c in ds.of("iostat")]
    (dks,) = [c.frame for c in ds.of("diskstats")]
    dev = str(dks.groupby("device")["w_s"].sum().idxmax())
    io_iops = ios[(ios["device"] == dev) & ~ios["since_boot"]][["r_s", "w_s"]].sum(axis=1).mean()
    dk_iops = dks[dks["device"] == dev][["r_s", "w_s"]].sum(axis=1).mean()
    assert io_iops > 0 and 0.5 < dk_iops / io_iops < 2, (dev, io_iops, dk_iops)
    # netstat_s' segment rate is real traffic (sysbench over TCP to 127.0.0.1)
    (net,) = [c.frame for c in ds.of("netstat_s")]
    assert net.loc[net["counter"] == "TcpOutSegs", "per_s"].median() > 100

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
# rules the collection's data supports: CPU from mpstat/vmstat, disk from iostat/diskstats, df, and
# the database's waits from its mysqladmin extended-status series (one window per collection)
SUPPORTED = (
    "cpu.saturated",
    "disk.serial-small-io",
    "disk.saturated",
    "disk.full",
    "db.lock-contention",
    "db.buffer-pool-miss",
    "db.log-wait",
)


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


def _status(path: Path) -> dict[str, dict[int, float]]:
    """variable -> {block: value} of a pt-stalk -mysqladmin file (mysqladmin ext -i1, absolute)."""
    out: dict[str, dict[int, float]] = {}
    block = -1
    for line in path.read_text().splitlines():
        if line.startswith("| Variable_name"):
            block += 1
        elif line.startswith("| "):
            name, value = (x.strip() for x in line.strip("|").split("|"))
            if value.lstrip("-").isdigit():
                out.setdefault(name, {})[block] = float(value)
    return out


def test_db_rules_judge_each_collection_window_from_its_mysqladmin_series() -> None:
    from perfkit.analyzers import db, innodb

    a = analyze_path(FIX)
    steps = db.lock_steps(a.dataset, a.sweep)
    pools = innodb.pool_steps(a.dataset, a.sweep)
    assert [s.name for s in steps["vm"]] == list(PREFIXES) == [s.name for s in pools["vm"]]
    for lock, pool, prefix in zip(steps["vm"], pools["vm"], PREFIXES, strict=True):
        raw = _status(FIX / f"{prefix}-mysqladmin")
        last = max(raw["Uptime"])
        # the window's deltas are the raw counters' first to last block, 1 s apart
        assert lock.threads is None and lock.seconds == last
        lock_ms = raw["Innodb_row_lock_time"][last] - raw["Innodb_row_lock_time"][0]
        assert lock.lock_time_s == pytest.approx(lock_ms / 1000, rel=1e-12)  # not `* 1000 ==`: float rounding
        assert lock.lock_waits == raw["Innodb_row_lock_waits"][last] - raw["Innodb_row_lock_waits"][0]
        txn = sum(raw[k][last] - raw[k][0] for k in ("Com_commit", "Com_rollback")) / last
        assert lock.transactions_s == pytest.approx(txn) and lock.basis == "Com_commit + Com_rollback"
        # Threads_running less mysqladmin's own connection, over the samples with a rate
        running = [raw["Threads_running"][b] - 1 for b in range(1, last + 1)]
        assert lock.inside == pytest.approx(sum(running) / len(running))
        reads = raw["Innodb_buffer_pool_read_requests"]
        assert pool.read_requests == reads[last] - reads[0]
    # a light load: nothing waits, and no rule says otherwise
    assert not [f for f in a.findings if f.rule.startswith("db.")]


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


def _stalk(cfg_file: Path, tmp_path: Path, load: list[str], seconds: int = 12) -> Path:
    """pt-stalk (one 5 s collection) against the lab MariaDB while sysbench runs `load`; its
    directory. The password only in a 0600 defaults file, never on argv."""
    if shutil.which("pt-stalk") is None:
        pytest.skip("pt-stalk not installed (apt-get install percona-toolkit)")
    from tests.conftest import lab_password

    cfg = {k: v for k, _, v in (ln.partition("=") for ln in cfg_file.read_text().splitlines())}
    defaults = tmp_path / "my.cnf"
    defaults.touch(mode=0o600)
    defaults.write_text(
        f"[client]\nuser={cfg['mysql-user']}\npassword={lab_password(cfg_file)}\n"
        f"host={cfg.get('mysql-host', '127.0.0.1')}\nport={cfg.get('mysql-port', '3306')}\n"
    )
    dest = tmp_path / "stalk"
    run = ["sysbench", *load, f"--config-file={cfg_file}", f"--time={seconds}", "run"]
    proc = subprocess.Popen(run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        proc.wait(timeout=60)
    return dest


@pytest.mark.lab
def test_lab_pt_stalk_directory_analyzed(lab_mariadb: Path, tmp_path: Path) -> None:
    dest = _stalk(lab_mariadb, tmp_path, ["oltp_read_write", "--tables=1", "--threads=4"])
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
    # the control of the hot-rows run below: 4 threads over 10,000 rows wait on no lock
    assert not [f for f in doc["findings"] if f["rule"] == "db.lock-contention"]


@pytest.mark.lab
def test_lab_pt_stalk_on_hot_rows_is_lock_contention(lab_mariadb: Path, tmp_path: Path) -> None:
    """16 writers on 2 rows (a scratch table in the lab's tpcc database): pt-stalk's mysqladmin series
    says how many transactions wait on a row lock, and db.lock-contention names its window."""
    # the lab's config with the scratch database: sysbench's --config-file wins over a --mysql-db
    # given beside it, and the lab's sbtest tables must stay as they are
    scratch = tmp_path / "tpcc.cfg"
    scratch.touch(mode=0o600)
    lines = [ln for ln in lab_mariadb.read_text().splitlines() if not ln.startswith("mysql-db=")]
    scratch.write_text("\n".join([*lines, "mysql-db=tpcc"]) + "\n")
    hot = ["oltp_update_non_index", "--tables=1", "--table-size=2"]
    cfg = f"--config-file={scratch}"
    subprocess.run(["sysbench", *hot, cfg, "cleanup"], capture_output=True, timeout=60)
    subprocess.run(["sysbench", *hot, cfg, "prepare"], check=True, capture_output=True, timeout=60)
    try:
        dest = _stalk(scratch, tmp_path, [*hot, "--threads=16"])
    finally:
        subprocess.run(["sysbench", *hot, cfg, "cleanup"], capture_output=True, timeout=60)
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["analyze", str(dest), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "findings.json").read_text())
    (f,) = [f for f in doc["findings"] if f["rule"] == "db.lock-contention"]
    ev = f["evidence"]
    (mysqladmin,) = dest.glob("*-mysqladmin")
    prefix = mysqladmin.name.removesuffix("-mysqladmin")
    assert ev["window_name"] == prefix and ev["threads"] is None
    assert f["summary"].startswith(f"In the window {prefix}, ")
    # the lock time is the raw counter's growth (ms) over the window's samples, 1 s apart, in seconds
    # (to float precision: 16.059 * 1000 is not 16059 in floats)
    raw = _status(mysqladmin)["Innodb_row_lock_time"]
    assert ev["lock_time_s"] == pytest.approx((raw[max(raw)] - raw[0]) / 1000, rel=1e-12)
    assert ev["seconds"] == max(raw)
    assert ev["lock_waiting"] >= 0.5 and ev["lock_waiting_share"] >= 0.1  # measured here: about 2 of 15


def _root_defaults(tmp_path: Path) -> Path:
    """A defaults file for MariaDB's root over the unix socket (no password: unix_socket auth): the lab
    user lacks PROCESS, and pt-stalk needs it for -lock-waits and -transactions (INNODB_TRX)."""
    root = tmp_path / "root.cnf"
    root.touch(mode=0o600)
    root.write_text("[client]\nuser=root\nsocket=/run/mysqld/mysqld.sock\n")
    probe = ["mariadb", f"--defaults-file={root}", "-e", "SELECT 1"]
    if subprocess.run(probe, capture_output=True, timeout=20).returncode != 0:
        pytest.skip("MariaDB's root is not reachable over the unix socket here")
    return root


def _hot_row_collection(lab: Path, tmp_path: Path, *, holder: bool) -> Path:
    """pt-stalk (as root, one 5 s collection) while 8 sysbench writers update one row of a scratch table
    in the lab's tpcc database; with `holder`, a client keeps that row locked in transactions that run
    `SELECT SLEEP(1)` before COMMIT, so the writers queue on it. Without, a read-only load (control)."""
    from tests.conftest import lab_password

    tmp_path.mkdir(parents=True, exist_ok=True)
    scratch = tmp_path / "tpcc.cfg"  # sysbench's --config-file wins over a --mysql-db beside it
    scratch.touch(mode=0o600)
    lines = [ln for ln in lab.read_text().splitlines() if not ln.startswith("mysql-db=")]
    scratch.write_text("\n".join([*lines, "mysql-db=tpcc"]) + "\n")
    cfg = {k: v for k, _, v in (ln.partition("=") for ln in lines)}
    client = tmp_path / "lab.cnf"
    client.touch(mode=0o600)
    client.write_text(
        f"[client]\nuser={cfg['mysql-user']}\npassword={lab_password(lab)}\n"
        f"host={cfg.get('mysql-host', '127.0.0.1')}\nport={cfg.get('mysql-port', '3306')}\n"
    )
    root = _root_defaults(tmp_path)
    one = ["--tables=1", "--table-size=1", f"--config-file={scratch}"]
    table = ["sysbench", "oltp_update_non_index", *one]
    subprocess.run([*table, "cleanup"], capture_output=True, timeout=60)
    subprocess.run([*table, "prepare"], check=True, capture_output=True, timeout=60)
    load = "oltp_update_non_index" if holder else "oltp_point_select"
    procs = [
        subprocess.Popen(
            ["sysbench", load, *one, "--threads=8", "--time=12", "run"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    if holder:
        hold = "BEGIN; UPDATE sbtest1 SET k=k+1 WHERE id=1; SELECT SLEEP(1); COMMIT; " * 12
        procs.append(
            subprocess.Popen(
                ["mariadb", f"--defaults-file={client}", "tpcc", "-e", hold],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    dest = tmp_path / "stalk"
    try:
        threading.Event().wait(2)
        subprocess.run(
            [
                "pt-stalk",
                "--no-stalk",
                "--run-time=5",
                "--iterations=1",
                f"--dest={dest}",
                f"--defaults-file={root}",
                f"--log={tmp_path / 'stalk.log'}",
                f"--pid={tmp_path / 'stalk.pid'}",
            ],
            check=True,
            timeout=90,
            capture_output=True,
        )
    finally:
        for p in procs:
            p.wait(timeout=60)
        subprocess.run([*table, "cleanup"], capture_output=True, timeout=60)
    return dest


@pytest.mark.lab
def test_lab_pt_stalk_names_blocker_waiter_and_sessions(lab_mariadb: Path, tmp_path: Path) -> None:
    """-lock-waits names who blocks whom in the window, -processlist (joined with -transactions' LOCK
    WAIT) says how many sessions wait on a row; the control (reads only) leaves both silent."""
    if shutil.which("pt-stalk") is None:
        pytest.skip("pt-stalk not installed (apt-get install percona-toolkit)")
    dest = _hot_row_collection(lab_mariadb, tmp_path / "hot", holder=True)
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["analyze", str(dest), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "findings.json").read_text())
    kinds = {p["kind"] for p in doc["inputs"]["parsed"]}
    assert {"ptstalk_lock_waits", "mysql_processlist", "mysql_transactions", "mysql_variables"} <= kinds
    (f,) = [f for f in doc["findings"] if f["rule"] == "db.lock-contention"]
    top = f["evidence"]["blockers"][0]
    # the holder's statement blocks; sysbench's prepared UPDATE waits (as pt-stalk's file prints both)
    (lw,) = dest.glob("*-lock-waits")
    assert "blocking_query: SELECT SLEEP(1)" in lw.read_text()
    assert top["statement"] == "SELECT SLEEP(?)" and top["table"] == "`tpcc`.`sbtest1`"
    assert top["waiting_statement"] == "UPDATE sbtest1 SET c=? WHERE id=?" and top["waiting"] >= 5
    assert "SELECT SLEEP(?) on `tpcc`.`sbtest1`" in f["summary"]
    (s,) = doc["sessions"]
    assert s["threads"] is None and s["samples"] >= 3  # one a second for 5 s, on a busy machine fewer
    # measured here: 8.0 of 8 writers waiting on the row in every sample
    assert s["lock_kinds"]["row"] >= 4 and s["classes"]["lock"] >= 4

    ctl = _hot_row_collection(lab_mariadb, tmp_path / "control", holder=False)
    out = tmp_path / "control-report"
    res = CliRunner().invoke(main, ["analyze", str(ctl), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "findings.json").read_text())
    assert not list(ctl.glob("*-lock-waits"))  # pt-stalk removes it: no wait in any second
    assert not [f for f in doc["findings"] if f["rule"] == "db.lock-contention"]
    (s,) = doc["sessions"]
    assert s["classes"]["lock"] == 0 and s["samples"] >= 3

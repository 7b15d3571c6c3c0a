"""The lab of real bottlenecks (scripts/scenarios): the limits really take effect, and the machine is
restored however a scenario ends.

Unit tier: the cgroup v2 file writes on a directory tree standing for /sys/fs/cgroup (this machine's
v2 hierarchy has no controllers), layout detection, the per-step figures, the undo stack. Real v2
membership (a process in and out of a group of the unified hierarchy) where the machine has one.

Lab tier (`lab`): each scenario on its own throwaway MariaDB with short steps (threads 1 and 8, 4 s),
its measured figures asserted (throttled periods, CPU at the quota, write IOPS at the limit, TPS
against the control), and nothing left after it: no cgroup with the run's id, no mariadbd on its
datadir, no datadir; the same after a run sent SIGTERM mid-sweep, and after a run SIGKILLed and
then `cleanup`. perfkit's verdicts are not asserted here yet (the rules of issue 15 come next).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.scenarios import cgroups
from scripts.scenarios.cgroups import PREFIX, CgroupError, Group, Layout
from scripts.scenarios.instance import BASE_DIR, mariadbd_pids
from scripts.scenarios.lab import Restorer, run_scenario, step_figures

from .conftest import ROOT

THREADS, TIME_S = "1,8", 4
# other numbers than the runs (0.5 core, 40 IOPS) and tests/test_limits_rules.py's: the rules
# must find the limit that is there, not a figure they were tuned on. The client's quota binds at one
# thread too: sysbench alone at 1 thread takes ~0.25 cores here (25,000 point selects a second on a
# fast day), so a 0.25-core quota held it in some runs and not in others
DB_QUOTA, CLIENT_QUOTA, IOPS = 0.3, 0.1, 25
DB_CPU_WORKLOAD = "oltp_read_write"
CLI = [sys.executable, "-m", "scripts.scenarios"]


# ---------------------------------------------------------------------------------------- unit tier


@pytest.fixture
def fake_v2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """A directory tree standing for a cgroup2 root with cpu, io and memory; rmdir of a fake group
    removes its files too (a real cgroupfs does that itself)."""
    root = tmp_path / "unified"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu io memory\n")
    (root / "cgroup.subtree_control").write_text("memory\n")
    (root / "cgroup.procs").write_text("")
    monkeypatch.setattr(cgroups, "_remove_dir", shutil.rmtree)
    return Layout(v2=root, v2_controllers=frozenset({"cpu", "io", "memory"}))


def test_v2_cpu_group_writes_cpu_max_and_procs_and_undoes_all(fake_v2: Layout) -> None:
    root = fake_v2.v2
    assert root is not None
    g = Group(PREFIX + "u1-db", ("cpu",), fake_v2)
    assert g.version == 2
    g.create()
    d = root / (PREFIX + "u1-db")
    assert d.is_dir()
    assert (root / "cgroup.subtree_control").read_text() == "+cpu"  # enabled for the run
    g.set_cpu_quota(0.5)
    assert (d / "cpu.max").read_text() == "50000 100000"
    g.set_cpu_quota(1.5, period_us=50_000)
    assert (d / "cpu.max").read_text() == "75000 50000"
    g.add_process(os.getpid())
    assert (d / "cgroup.procs").read_text() == str(os.getpid())
    (d / "cpu.stat").write_text(
        "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"
        "nr_periods 40\nnr_throttled 30\nthrottled_usec 1250000\n"
    )
    assert g.stats() == {"nr_periods": 40, "nr_throttled": 30, "throttled_s": 1.25, "usage_s": 2.5}
    (d / "cgroup.procs").write_text("4242\n")
    assert g.release() == []
    assert (root / "cgroup.procs").read_text() == "4242"  # moved back to the root group
    assert not d.exists()
    assert (root / "cgroup.subtree_control").read_text() == "-cpu"  # what it enabled, disabled
    assert g.release() == []  # idempotent


def test_v2_io_group_writes_io_max_and_reads_wios(fake_v2: Layout) -> None:
    root = fake_v2.v2
    assert root is not None
    (root / "cgroup.subtree_control").write_text("io memory\n")
    g = Group(PREFIX + "u2-db", ("io",), fake_v2)
    g.create()
    assert g.enabled == []  # already on: left as it was
    g.set_write_iops((254, 0), 40)
    d = root / (PREFIX + "u2-db")
    assert (d / "io.max").read_text() == "254:0 wiops=40"
    (d / "io.stat").write_text(
        "254:0 rbytes=0 wbytes=819200 rios=0 wios=200 dbytes=0 dios=0\n"
        "253:0 rbytes=4096 wbytes=4096 rios=1 wios=1 dbytes=0 dios=0\n"
    )
    assert g.stats() == {"write_ios": 201}
    assert g.release() == []
    assert (root / "cgroup.subtree_control").read_text() == "io memory\n"


def test_memory_groups_write_their_limit(
    fake_v2: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = Group(PREFIX + "u4-hog", ("memory",), fake_v2)
    g.create()
    assert g.enabled == []  # memory already on in the fake root's subtree
    g.set_memory_limit(64 << 20)
    assert (fake_v2.v2 / (PREFIX + "u4-hog") / "memory.max").read_text() == str(64 << 20)  # type: ignore[operator]
    assert g.release() == []
    v1_root = tmp_path / "v1-memory"
    v1_root.mkdir()
    (v1_root / "tasks").write_text("")
    g1 = Group(PREFIX + "u5-hog", ("memory",), Layout(v1={"memory": v1_root}))
    assert g1.version == 1 and g1.dirs == {"memory": v1_root / (PREFIX + "u5-hog")}
    g1.create()
    g1.set_memory_limit(32 << 20)
    assert (v1_root / (PREFIX + "u5-hog") / "memory.limit_in_bytes").read_text() == str(32 << 20)
    assert g1.release() == []


def test_a_group_never_removes_a_dir_it_did_not_make(fake_v2: Layout) -> None:
    root = fake_v2.v2
    assert root is not None
    theirs = root / (PREFIX + "u3-db")
    theirs.mkdir()  # another run's group, by the same name
    g = Group(PREFIX + "u3-db", ("cpu",), fake_v2)
    with pytest.raises(CgroupError, match="exists already"):
        g.create()
    assert g.release() == []
    assert theirs.is_dir()


def test_detect_and_pick_name_what_is_missing(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
        "cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n"
        "cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\n"
        f"cgroup2 {tmp_path} cgroup2 rw,relatime 0 0\n"
    )
    (tmp_path / "cgroup.controllers").write_text("hugetlb\n")
    layout = cgroups.detect(mounts)
    assert layout.v1 == {
        "cpu": Path("/sys/fs/cgroup/cpu"),
        "cpuacct": Path("/sys/fs/cgroup/cpuacct"),
        "blkio": Path("/sys/fs/cgroup/blkio"),
    }
    assert (layout.v2, layout.v2_controllers) == (tmp_path, frozenset({"hugetlb"}))
    assert layout.pick("cpu") == layout.pick("io") == 1
    with pytest.raises(CgroupError, match=r"cgroup v2: no cpu controller \(.*/cgroup.controllers\)"):
        layout.pick("cpu", 2)  # v2 holds no cpu controller here: said, not silently v1
    v2_only = Layout(v2=tmp_path, v2_controllers=frozenset({"memory"}))
    with pytest.raises(CgroupError, match="no cgroup controller for io"):
        v2_only.pick("io")
    with pytest.raises(ValueError, match="must start with"):
        Group("mygroup", ("cpu",), layout)


def test_block_device_is_the_whole_disk() -> None:
    maj, mnr = cgroups.block_device(BASE_DIR)
    sysdir = Path(f"/sys/dev/block/{maj}:{mnr}")
    assert sysdir.exists() and not (sysdir / "partition").exists()
    st = os.stat(BASE_DIR).st_dev
    if os.major(st) != 0:  # the filesystem's own device is this disk or one of its partitions
        own = Path(f"/sys/dev/block/{os.major(st)}:{os.minor(st)}").resolve()
        assert own == sysdir.resolve() or own.parent == sysdir.resolve()


def test_step_figures_are_rates_over_the_load_window() -> None:
    manifest = {
        "captures": [
            {"kind": "sysbench", "step": "t0001", "started_at": "2026-01-01T00:00:10.000Z",
             "ended_at": "2026-01-01T00:00:14.000Z"},
        ],
        "sweep": {"steps": [{"name": "t0001", "threads": 1, "status": "ok", "tps": 12.5}]},
    }  # fmt: skip
    t0 = 1767225610.0  # 2026-01-01T00:00:10Z
    samples = [
        {"t": t0 - 0.5, "instance_cpu_s": 0.0, "group": {"write_ios": 0}, "disk_writes": 0},
        {"t": t0 + 0.5, "instance_cpu_s": 1.0, "group": {"write_ios": 10}, "disk_writes": 100},
        {"t": t0 + 3.5, "instance_cpu_s": 1.3, "group": {"write_ios": 130}, "disk_writes": 250},
        {"t": t0 + 4.5, "instance_cpu_s": 9.0, "group": {"write_ios": 999}, "disk_writes": 999},
    ]
    [row] = step_figures(manifest, samples)
    assert row["tps"] == 12.5 and row["window_s"] == 3.0
    assert row["instance_cores"] == pytest.approx(0.1)
    assert row["group_write_iops"] == 40.0
    assert row["disk_write_iops"] == 50.0


def test_restorer_runs_every_undo_last_first_even_after_one_raises() -> None:
    done: list[str] = []
    lab = Restorer(log=lambda m: None)
    lab.push("a", lambda: done.append("a"))
    lab.push("b", lambda: 1 / 0)
    lab.push("c", lambda: (done.append("c"), ["c: something left"])[1])
    try:
        problems = lab.restore()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    assert done == ["c", "a"]
    assert problems == ["c: something left", "b: ZeroDivisionError: division by zero"]


def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (cgroups)")


def test_v2_membership_for_real() -> None:
    """A process into a group of this machine's cgroup2 hierarchy and back (no controller needed)."""
    _need_root()
    layout = cgroups.detect()
    if layout.v2 is None:
        pytest.skip("no cgroup2 hierarchy mounted")
    name = f"{PREFIX}{os.getpid()}-v2t"
    proc = subprocess.Popen(["sleep", "30"])
    g = Group(name, (), layout, version=2)
    try:
        g.create()
        g.add_process(proc.pid)
        assert f"0::/{name}\n" in Path(f"/proc/{proc.pid}/cgroup").read_text()
        assert g.members() == [proc.pid]
    finally:
        problems = g.release()
        proc.kill()
        proc.wait()
    assert problems == []
    assert not (layout.v2 / name).exists()


# ----------------------------------------------------------------------------------------- lab tier


def _need_lab(limit: str | None = None) -> Layout:
    _need_root()
    for tool in ("mariadbd", "mariadb-install-db", "sysbench"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (scripts/lab.sh installs it)")
    layout = cgroups.detect()
    if limit is not None:
        try:
            layout.pick(limit)
        except CgroupError as exc:
            pytest.skip(str(exc))
    return layout


def _left_behind(rec: dict) -> list[str]:
    """What a finished run left: its cgroups, a mariadbd on its base dir, the base dir itself."""
    run_id = rec["run_id"]
    left = [
        str(d) for d, _root, _v in cgroups.leftovers(cgroups.detect()) if d.name.startswith(PREFIX + run_id)
    ]
    base = Path(rec["instance"]["base"])
    left += [f"mariadbd pid {p}" for p in mariadbd_pids(base)]
    left += [str(p) for p in BASE_DIR.glob(f"{PREFIX}{run_id}*")]
    return left


_RUNS: dict[str, dict] = {}


def _scenario(name: str, tmp_factory: pytest.TempPathFactory, **kw: object) -> dict:
    """Run a scenario once per test session (several tests read the same run)."""
    key = name + json.dumps(kw, sort_keys=True)
    if key not in _RUNS:
        out = tmp_factory.mktemp(name) / "out"
        rec = run_scenario(name, out, threads=THREADS, time_s=TIME_S, log=lambda m: None, **kw)  # type: ignore[arg-type]
        rec["out"] = out
        _RUNS[key] = rec
    return _RUNS[key]


def _check_common(rec: dict) -> None:
    """The harness's own promises: perfkit ran and reported, the machine is as before."""
    out: Path = rec["out"]
    assert rec["perfkit_run"]["exit_code"] == 0, (out / "perfkit-run.log").read_text()[-2000:]
    assert rec["perfkit_analyze"]["exit_code"] in (0, 5)  # 5: a rule failed, the report still written
    assert (out / "report" / "findings.json").exists()
    assert [s["threads"] for s in rec["steps"]] == [1, 8]
    assert all(s["status"] == "ok" and s["tps"] > 0 for s in rec["steps"]), rec["steps"]
    argv = " ".join(rec["perfkit_run"]["argv"])
    assert "password" not in argv.lower()
    assert json.loads((out / "scenario.json").read_text())["restore"] == []
    assert rec["restore"] == []
    assert _left_behind(rec) == []


@pytest.mark.lab
def test_db_cpu_quota_throttles_the_instance(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab("cpu")
    rec = _scenario("db-cpu-quota", tmp_path_factory, quota=DB_QUOTA, workload=DB_CPU_WORKLOAD)
    _check_common(rec)
    assert rec["limit"]["quota_cores"] == DB_QUOTA and rec["limit"]["threads_moved"] >= 5
    for s in rec["steps"]:
        assert s["group"]["nr_throttled"] > 0, s  # the quota bit in every step
        assert s["group_cores"] <= DB_QUOTA * 1.1, s  # never above the quota (CFS enforces it)
        assert s["instance_cores"] <= DB_QUOTA * 1.1, s  # every thread is in: the process is capped
    top = rec["steps"][-1]
    assert top["throttled_share"] >= 0.5, top  # 8 threads want more than half a core
    assert top["instance_cores"] >= DB_QUOTA * 0.6, top  # and use (near) all of it
    assert rec["totals"]["throttled_s"] > 1.0


@pytest.mark.lab
def test_db_write_iops_limit_holds_the_instance_at_the_limit(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _need_lab("io")
    rec = _scenario("db-write-iops", tmp_path_factory, iops=IOPS)
    control = _scenario("control", tmp_path_factory, workload="oltp_write_only")
    _check_common(rec)
    _check_common(control)
    assert rec["limit"]["write_iops"] == IOPS and rec["workload"] == control["workload"] == "oltp_write_only"
    for s in rec["steps"]:
        assert s["group_write_iops"] <= IOPS * 1.25, s  # the throttle holds
    one = rec["steps"][0]
    assert one["group_write_iops"] >= IOPS * 0.5, one  # and the 1-thread step runs into it
    # a commit waits on throttled writes: 1-thread TPS collapses against the control's
    assert one["tps"] < 0.2 * control["steps"][0]["tps"], (one, control["steps"][0])


@pytest.mark.lab
def test_client_cpu_quota_throttles_sysbench(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab("cpu")
    rec = _scenario("client-cpu-quota", tmp_path_factory, quota=CLIENT_QUOTA)
    _check_common(rec)
    assert "--bin" in rec["perfkit_run"]["argv"]  # sysbench started through the joining wrapper
    for s in rec["steps"]:
        assert s["group"]["usage_s"] > 0.3, s  # sysbench ran inside the group in every step
        assert s["group"]["nr_throttled"] > 0, s
        assert s["group_cores"] <= CLIENT_QUOTA * 1.1, s
    top = rec["steps"][-1]
    assert top["throttled_share"] >= 0.5, top


@pytest.mark.lab
def test_control_has_no_limit(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab()
    rec = _scenario("control", tmp_path_factory, workload="oltp_write_only")
    _check_common(rec)
    assert rec["limit"] is None
    assert all("group" not in s for s in rec["steps"])
    assert all("group" not in s for s in rec["timeline"])


def _start_cli(out: Path, name: str, *, new_session: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "run", name, "-o", str(out), "--threads", "1,8,16", "--time", str(TIME_S)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=new_session,
    )


def _members(d: Path) -> list[str]:
    """The tasks (v1) or processes (v2) in a cgroup dir now."""
    for f in ("tasks", "cgroup.procs"):
        if (d / f).exists():
            return (d / f).read_text().split()
    return []


def _wait_mid_run(proc: subprocess.Popen[str], out: Path) -> tuple[str, list[Path]]:
    """Wait until the sweep runs with the limit on; the run id and the run's cgroup dirs then."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        groups = [d for d, _r, _v in cgroups.leftovers(cgroups.detect()) if _members(d)]
        log = out / "perfkit-run.log"
        if groups and log.exists() and "t0001" in log.read_text(errors="replace"):
            run_id = groups[0].name[len(PREFIX) :].split("-", 1)[0]
            return run_id, [d for d in groups if d.name.startswith(PREFIX + run_id)]
        time.sleep(0.2)
    pytest.fail("the scenario did not reach its sweep within 90 s")


def _nothing_left(run_id: str) -> list[str]:
    left = [str(d) for d, _r, _v in cgroups.leftovers(cgroups.detect()) if d.name.startswith(PREFIX + run_id)]
    for base in BASE_DIR.glob(f"{PREFIX}{run_id}*"):
        left += [str(base)] + [f"mariadbd pid {p}" for p in mariadbd_pids(base)]
    ps = subprocess.run(["pgrep", "-af", f"{PREFIX}{run_id}"], capture_output=True, text=True).stdout
    left += [ln for ln in ps.splitlines() if "pgrep" not in ln]
    return left


@pytest.mark.lab
def test_sigterm_mid_run_restores_the_machine(tmp_path: Path) -> None:
    _need_lab("cpu")
    out = tmp_path / "out"
    proc = _start_cli(out, "db-cpu-quota")
    run_id, groups = _wait_mid_run(proc, out)
    assert groups and all(_members(d) for d in groups)  # mariadbd's threads are in
    proc.send_signal(signal.SIGTERM)
    text, _ = proc.communicate(timeout=150)
    assert proc.returncode == 130, text
    assert "interrupted by SIGTERM; machine restored" in text
    assert _nothing_left(run_id) == []
    rec = json.loads((out / "scenario.json").read_text())
    assert rec["restore"] == []
    assert json.loads((out / "archive" / "manifest.json").read_text())["status"] == "interrupted"


@pytest.mark.lab
def test_cleanup_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    _need_lab("io")
    out = tmp_path / "out"
    proc = _start_cli(out, "db-write-iops", new_session=True)
    run_id, groups = _wait_mid_run(proc, out)
    os.killpg(proc.pid, signal.SIGKILL)  # the harness and perfkit die; the instance and cgroup stay
    proc.communicate(timeout=30)
    left = _nothing_left(run_id)
    assert any("blkio" in x for x in left) and any(x.startswith("mariadbd pid") for x in left), left
    clean = subprocess.run([*CLI, "cleanup"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert _nothing_left(run_id) == []


# ---------------------------------------------------------------- what perfkit says (issue 15's acceptance)


def _report(rec: dict) -> dict:
    return json.loads((rec["out"] / "report" / "findings.json").read_text())


def _db_waits(rec: dict, doc: dict) -> list[dict]:
    """The scenario instance's wait profile per step (the lab's own MariaDB may be sampled beside it)."""
    pid = rec["instance"]["pid"]
    return sorted((w for w in doc["waits"] if w["pid"] == pid), key=lambda w: w["threads"] or 0)


def _active(w: dict) -> float:
    return sum(v for k, v in w["classes"].items() if k != "idle")


@pytest.mark.lab
def test_a_cpu_quota_on_the_database_is_the_verdict(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab("cpu")
    rec = _scenario("db-cpu-quota", tmp_path_factory, quota=DB_QUOTA, workload=DB_CPU_WORKLOAD)
    doc = _report(rec)
    assert doc["verdict"] == "cpu.throttled", [(f["rule"], f["summary"]) for f in doc["findings"]]
    ev = doc["findings"][0]["evidence"]
    assert ev["quota_cores"] == pytest.approx(DB_QUOTA, abs=0.01)
    # under load the database's threads are on a CPU or waiting for one (throttled), not on IO or
    # locks (at 1 thread its one connection also waits half the time for the client's next statement)
    high = _db_waits(rec, doc)[-1]
    assert high["classes"]["cpu"] + high["classes"]["cpu_wait"] >= 0.5 * _active(high), high


@pytest.mark.lab
def test_an_io_limit_on_the_database_is_the_verdict(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab("io")
    rec = _scenario("db-write-iops", tmp_path_factory, iops=IOPS)
    doc = _report(rec)
    assert doc["verdict"] == "io.throttled", [(f["rule"], f["summary"]) for f in doc["findings"]]
    ev = doc["findings"][0]["evidence"]
    assert ev["limit_key"] == "write_max_iops" and ev["limit"] == IOPS
    assert IOPS * 0.7 <= ev["done_per_s_max"] <= IOPS * 1.1
    # at the lowest step the database's active threads are mostly in IO (one fsync at a time)
    low = _db_waits(rec, doc)[0]
    assert low["classes"]["io"] >= 0.5 * _active(low), low


@pytest.mark.lab
def test_a_cpu_quota_on_the_load_generator_is_client_saturated(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _need_lab("cpu")
    rec = _scenario("client-cpu-quota", tmp_path_factory, quota=CLIENT_QUOTA)
    doc = _report(rec)
    assert doc["verdict"] == "client.saturated", [(f["rule"], f["summary"]) for f in doc["findings"]]
    ev = doc["findings"][0]["evidence"]
    assert ev["load_process_quota_cores"] == pytest.approx(CLIENT_QUOTA, abs=0.01)
    assert ev["process_bound"] is True
    assert "cpu.throttled" not in {f["rule"] for f in doc["findings"]}  # the client's case, not the server's


@pytest.mark.lab
def test_the_control_run_is_neither_throttled(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab()
    rec = _scenario("control", tmp_path_factory, workload="oltp_write_only")
    doc = _report(rec)
    pid = rec["instance"]["pid"]
    mine = [f for f in doc["findings"] if f["rule"] in ("cpu.throttled", "io.throttled")]
    assert not [
        f for f in mine if f["evidence"].get("pid") == pid or pid in (f["evidence"].get("pids") or [])
    ]

"""cpu.throttled and io.throttled (analyzers/limits.py) on real scenario archives.

Unit tests read tests/fixtures/limits/ (README there: the exact runs); every figure asserted is
worked out by hand from the files, the arithmetic in the comment beside it. Lab tests analyze the
scenario runs (scripts/scenarios) that tests/test_scenarios.py makes, one per scenario and settings
in a test session, and assert the rule ids and key evidence.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analyzers import analyze, limits
from analyzers.sweep import model
from perfkit.archive import open_archive
from perfkit.config import load_thresholds
from perfkit.dataset import Dataset, load_dataset
from perfkit.findings import Finding, Skipped

from .test_scenarios import DB_CPU_WORKLOAD, DB_QUOTA, IOPS, _need_lab, _scenario

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "limits"
TH = load_thresholds()


def dataset(path: Path) -> Dataset:
    with open_archive(path) as a:
        return load_dataset(a)


def run(ds: Dataset, rule: str) -> list[Finding] | Skipped:
    sweep, _ = model(ds, TH)
    return limits.RULES[rule](ds, sweep, TH)


def without(ds: Dataset, *kinds: str) -> Dataset:
    return Dataset(ds.source, ds.manifest, [c for c in ds.captures if c.kind not in kinds])


def by_step(f: Finding) -> dict[str, dict]:
    return {s["step"]: s for s in f.evidence["per_step"]}


# ---------------------------------------------------------------- cpu.throttled


def test_cpu_quota_run_is_throttled_with_the_figures_of_its_cgroup_files() -> None:
    out = run(dataset(FIX / "scn-db-cpu-quota"), "cpu.throttled")
    assert isinstance(out, list) and len(out) == 1
    f = out[0]
    ev = f.evidence
    assert f.severity == "critical"  # throttled in most periods at every step (knee at 1 thread)
    assert f.hosts == ["localhost"]
    assert ev["process"] == "mariadbd" and ev["pids"] == [27533]
    assert ev["cgroup"] == "/perfkit-scn-bae2abef-db" and ev["cgroup_version"] == 1
    assert ev["quota_cores"] == 0.5  # cpu.cfs_quota_us 50000 / cpu.cfs_period_us 100000
    assert ev["period_ms"] == 100.0
    assert ev["steps_held"] == ["t0001", "t0004", "t0016"]
    s1, s16 = by_step(f)["t0001"], by_step(f)["t0016"]
    # t0001: nr_periods 6 -> 60, nr_throttled 0 -> 48, throttled_time 0 -> 890584837 ns
    assert (s1["periods"], s1["throttled_periods"]) == (54, 48)
    assert s1["throttled_share"] == pytest.approx(48 / 54)
    assert s1["throttled_s"] == pytest.approx(0.890584837)
    # the load run covers 08:31:43.446 (cgroup-start) .. 08:31:48.374 (sysbench ended) = 4.928 s;
    # cpuacct.usage 27029262 -> 2501062201 ns
    assert s1["time_base"] == "load run" and s1["seconds"] == pytest.approx(4.928)
    assert s1["used_cores"] == pytest.approx((2501062201 - 27029262) / 1e9 / 4.928)  # 0.502
    assert s1["host_idle_pct"] == 61.0  # vmstat id 49 63 61 55 63 (since-boot line dropped), wa 0
    # t0016: periods 127 -> 184, throttled 98 -> 148, throttled_time 6381041978 -> 11900536983 ns;
    # 08:31:55.895 .. 08:32:00.814 = 4.919 s; usage 5131665957 -> 7594712968 ns
    assert (s16["periods"], s16["throttled_periods"]) == (57, 50)
    assert s16["throttled_s"] == pytest.approx((11900536983 - 6381041978) / 1e9)
    assert s16["used_cores"] == pytest.approx((7594712968 - 5131665957) / 1e9 / 4.919)  # 0.501
    assert s16["host_idle_pct"] == 51.0  # vmstat id 4 51 61 60 24
    assert "0.50 cores" in f.summary and "84–89 %" in f.summary
    assert "cpu.max" in " ".join(f.next_steps) and "CPUQuota=" in " ".join(f.next_steps)


def test_cpu_throttled_silent_on_the_io_limited_and_control_runs() -> None:
    # the only quota'd cgroups there: none (mariadbd and sysbench in the root cpu group, quota -1)
    assert run(dataset(FIX / "scn-db-write-iops"), "cpu.throttled") == []
    assert run(dataset(FIX / "scn-control"), "cpu.throttled") == []


def test_cpu_throttled_needs_idle_on_the_host() -> None:
    th = {**TH, "cpu.throttled": {**TH["cpu.throttled"], "min_host_idle_pct": 62}}
    ds = dataset(FIX / "scn-db-cpu-quota")
    sweep, _ = model(ds, TH)
    # every step's median idle (61, 25, 51) is below 62: the host had no spare CPU to give
    assert limits.cpu_throttled(ds, sweep, th) == []


def test_a_throttled_load_generator_is_not_cpu_throttled() -> None:
    ds = dataset(FIX / "scn-db-cpu-quota")
    for cap in ds.of("cgroup"):  # the same counters, as if they were sysbench's
        names = cap.frame["process"].astype(object).replace("mariadbd", "sysbench")
        cap.frame = cap.frame.assign(process=names)
    assert run(ds, "cpu.throttled") == []


def test_cpu_throttled_skips_without_cgroup_snapshots() -> None:
    out = run(without(dataset(FIX / "scn-db-cpu-quota"), "cgroup"), "cpu.throttled")
    assert out == Skipped("cpu.throttled", "no cgroup capture (cgroup-start/cgroup-end snapshots)")


# ---------------------------------------------------------------- io.throttled


def test_iops_limited_run_is_io_throttled_against_its_limit() -> None:
    out = run(dataset(FIX / "scn-db-write-iops"), "io.throttled")
    assert isinstance(out, list) and len(out) == 1
    f = out[0]
    ev = f.evidence
    assert f.severity == "critical"
    assert ev["process"] == "mariadbd" and ev["pid"] == 22522
    assert ev["io_from"] == "thread sampler"
    assert ev["limit_visible"] is True
    assert ev["limit_key"] == "write_max_iops" and ev["limit"] == 40.0  # write_iops_device 254:0 40
    assert ev["limit_device"] == "vda" and ev["device"] == "vda" and ev["device_chosen"] == "limited"
    assert ev["steps_held"] == ["t0001", "t0004", "t0016"]
    s1, s16 = by_step(f)["t0001"], by_step(f)["t0016"]
    # threads.out t0001: 10 samples (5 intervals x 2); pid 22522 in state D 1+1+2+2+2+1 = 9 times
    assert s1["io_threads"] == pytest.approx(0.9)
    # io_serviced 254:0 Write 9 -> 201 over 08:29:05.569 (cgroup-start) .. 08:29:10.453 (sysbench end)
    assert s1["done_count"] == 192 and s1["seconds"] == pytest.approx(4.884)
    assert s1["done_per_s"] == pytest.approx(192 / 4.884)  # 39.3
    # iostat vda after the since-boot report: %util 0.80 0.40 0.40 0.40 0.00, aqu-sz .06 .01 .01 .02 .01
    assert s1["util_pct_median"] == pytest.approx(0.40) and s1["aqu_sz_median"] == pytest.approx(0.01)
    # t0016: Write 412 -> 613 over 08:29:17.309 .. 08:29:22.354 = 5.045 s; %util 0.40 0 0 0 0
    assert s16["done_count"] == 201 and s16["done_per_s"] == pytest.approx(201 / 5.045)  # 39.8
    assert s16["util_pct_median"] == 0.0
    assert "40 write IOPS allowed on vda, 39.2–39.8 done" in f.summary
    assert "innodb_flush_log_at_trx_commit" in " ".join(f.next_steps)


def test_without_a_visible_limit_the_ios_wait_above_the_device_a_warning() -> None:
    ds = dataset(FIX / "scn-db-write-iops")
    for cap in ds.of("cgroup"):  # as under a parent cgroup's limit: the same waits, none in its own
        cap.frame = cap.frame[cap.frame["key"] != "write_max_iops"]
    (f,) = run(ds, "io.throttled")
    assert f.severity == "warning"
    assert f.evidence["limit_visible"] is False and "limit" not in f.evidence
    assert f.evidence["device"] == "vda" and f.evidence["device_chosen"] == "busiest"
    assert "the IOs wait above the device (a parent cgroup's limit, a network filesystem)" in f.summary
    assert "would hold requests already issued and show as a busy device" in f.explanation


def test_io_throttled_silent_on_the_cpu_quota_and_control_runs() -> None:
    # mariadbd's io class there: 0.0 (cpu quota) and at most 0.3 threads (control, 16 threads)
    assert run(dataset(FIX / "scn-db-cpu-quota"), "io.throttled") == []
    assert run(dataset(FIX / "scn-control"), "io.throttled") == []


def test_io_throttled_silent_when_the_device_is_busy() -> None:
    ds = dataset(FIX / "scn-db-write-iops")
    sweep, _ = model(ds, TH)
    # the limit used up holds the run while the device is busier than nearly idle (t0001 and t0004:
    # median %util 0.40; t0016: 0.0) ...
    th = {**TH, "io.throttled": {**TH["io.throttled"], "max_util_pct": 0.3}}
    [f] = limits.io_throttled(ds, sweep, th)
    assert f.evidence["steps_held"] == ["t0001", "t0004", "t0016"] and f.evidence["limit_visible"]
    # ... unless the device is near full too
    th["io.throttled"]["max_util_pct_limited"] = 0.3
    out = limits.io_throttled(ds, sweep, th)
    assert [f.evidence["steps_held"] for f in out] == [["t0016"]]
    # without a visible limit, only a nearly idle device says the ceiling is above it
    for cap in ds.of("cgroup"):
        cap.frame = cap.frame[cap.frame["key"] != "write_max_iops"]
    th["io.throttled"]["max_util_pct_limited"] = 70
    out = limits.io_throttled(ds, sweep, th)
    assert [f.evidence["steps_held"] for f in out] == [["t0016"]] and not out[0].evidence["limit_visible"]


def test_io_throttled_skips_without_thread_states_and_with_iotop_lacking_io_pct() -> None:
    ds = dataset(FIX / "scn-db-write-iops")
    out = run(without(ds, "threads"), "io.throttled")  # iotop.out of t0001 prints ?unavailable?
    assert isinstance(out, Skipped) and "kernel.task_delayacct=0" in out.reason
    out = run(without(ds, "threads", "iotop"), "io.throttled")
    assert out == Skipped("io.throttled", "no thread-state (threads) or iotop capture: IO waits unknown")


def test_an_archive_without_the_new_captures_still_analyzes() -> None:
    ds = without(dataset(FIX / "scn-db-write-iops"), "threads", "iotop", "cgroup")
    result = analyze(ds, TH)
    assert not [r for r in result.failed if r.rule in ("cpu.throttled", "io.throttled")]
    reasons = {s.rule: s.reason for s in result.skipped}
    assert reasons["cpu.throttled"].startswith("no cgroup capture")
    assert reasons["io.throttled"].startswith("no thread-state (threads) or iotop capture")


def test_evidence_is_json() -> None:
    (f,) = run(dataset(FIX / "scn-db-write-iops"), "io.throttled")
    (g,) = run(dataset(FIX / "scn-db-cpu-quota"), "cpu.throttled")
    for x in (f, g):
        back = json.loads(json.dumps(x.to_dict()))
        assert back["evidence"]["per_step"][0]["step"] == "t0001"


# ---------------------------------------------------------------- lab: the real scenarios


def scenario(name: str, tmp_factory: pytest.TempPathFactory, **kw: object) -> tuple[dict, list[Finding]]:
    """The scenario's run (1 and 8 threads x 4 s), shared with tests/test_scenarios.py (one run per
    scenario and settings in a test session), and its archive analyzed here."""
    rec = _scenario(name, tmp_factory, **kw)
    result = analyze(dataset(rec["out"] / "archive"), TH)
    assert not result.failed, result.failed
    return rec, result.findings


def ours(findings: list[Finding], rule: str, group: str | None) -> list[Finding]:
    """The rule's findings about this run's own group: other helpers' scenarios may run on the lab
    machine at the same time, and their throttled mariadbd is watched too."""
    key = "cgroup" if rule == "cpu.throttled" else "limit_cgroup"
    return [f for f in findings if f.rule == rule and (group is None or f.evidence.get(key) == f"/{group}")]


def io_diagnosis(out: Path) -> str:
    """What io.throttled measured at each step, its thresholds opened wide: why a lab run missed."""
    ds = dataset(out / "archive")
    sweep, _ = model(ds, TH)
    wide = {"min_io_threads": 0.0, "max_util_pct": 100.0, "max_queue": 1e9, "max_util_pct_limited": 100.0}
    found = limits.io_throttled(ds, sweep, {**TH, "io.throttled": {**TH["io.throttled"], **wide}})
    if not isinstance(found, list):
        return f"io.throttled skipped: {found.reason}"
    return f"knee {sweep.knee_threads}; " + "; ".join(
        f"pid {f.evidence['pid']}: {f.evidence['per_step']}" for f in found
    )


def idle_somewhere(out: Path) -> float:
    """The most idle step of the run's host (vmstat median), for the quota test's precondition."""
    ds = dataset(out / "archive")
    idles = [limits.host_idle(ds, c.host, c.step) for c in ds.of("vmstat")]
    return max((i[0] for i in idles if i), default=0.0)


@pytest.mark.lab
def test_lab_db_cpu_quota_is_cpu_throttled(tmp_path_factory: pytest.TempPathFactory) -> None:
    # cpu.throttled asks for idle CPU on the host; other lab tests run at the same time on a
    # developer's machine can take both vCPUs (then mariadbd cannot even reach its quota): skip saying so
    _need_lab("cpu")
    info, findings = scenario("db-cpu-quota", tmp_path_factory, quota=DB_QUOTA, workload=DB_CPU_WORKLOAD)
    idle = idle_somewhere(info["out"])
    if idle < TH["cpu.throttled"]["min_host_idle_pct"]:
        pytest.skip(f"the lab host had no idle CPU (best step {idle:.0f} % idle): other load")
    group = info["limit"]["cgroup"]["name"]
    (f,) = ours(findings, "cpu.throttled", group)
    assert f.evidence["quota_cores"] == pytest.approx(DB_QUOTA, abs=0.01)
    assert f.evidence["steps_held"]  # at least one step; both when the host had idle CPU
    held = [s for s in f.evidence["per_step"] if s["held"]]
    assert max(s["throttled_share"] for s in held) >= 0.5  # 0.87-0.89 at 0.5 cores on an idle lab host
    for s in held:
        assert s["used_cores"] == pytest.approx(DB_QUOTA, abs=0.08)
    pid = info["instance"]["pid"]
    assert not [g for g in findings if g.rule == "io.throttled" and g.evidence["pid"] == pid]


@pytest.mark.lab
def test_lab_db_write_iops_is_io_throttled_at_its_limit(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab("io")
    info, findings = scenario("db-write-iops", tmp_path_factory, iops=IOPS)
    group = info["limit"]["cgroup"]["name"]
    found = ours(findings, "io.throttled", group)
    assert len(found) == 1, io_diagnosis(info["out"])
    (f,) = found
    assert f.evidence["pid"] == info["instance"]["pid"]
    assert f.evidence["limit_key"] == "write_max_iops" and f.evidence["limit"] == IOPS
    # every step it held at ran at the limit (30-44 of 40 before the runs were shared, at 5 s steps)
    assert 0.7 * IOPS <= f.evidence["done_per_s_min"] <= f.evidence["done_per_s_max"] <= 1.1 * IOPS
    assert not ours(findings, "cpu.throttled", group)


@pytest.mark.lab
def test_lab_control_is_neither(tmp_path_factory: pytest.TempPathFactory) -> None:
    _need_lab()
    info, findings = scenario("control", tmp_path_factory, workload="oltp_write_only")
    pid = info["instance"]["pid"]
    assert not [f for f in findings if f.rule == "cpu.throttled" and pid in f.evidence["pids"]]
    assert not [f for f in findings if f.rule == "io.throttled" and f.evidence["pid"] == pid]


def test_under_a_limit_used_up_the_threads_waiting_for_the_io_count() -> None:
    """CI: at 8 threads under 25 write IOPS the sampler saw mariadbd with 0.375 threads in IO and
    5.375 in lock waits: InnoDB's group commit has one thread flush the log while the others wait for
    it on a futex. With the limit used up those waiters count; without one, a lock wait stays one."""
    ds = dataset(FIX / "scn-db-write-iops")
    sweep, _ = model(ds, TH)
    [before] = limits.io_throttled(ds, sweep, TH)
    pid = before.evidence["pid"]
    for cap in ds.of("threads"):
        if cap.step == "t0016":  # 10 samples: 1.0 thread in D (fdatasync, pwrite64), 14.9 on a futex
            f = cap.frame
            in_io = np.flatnonzero(
                f["pid"].eq(pid).fillna(False).to_numpy(bool)
                & f["state"].eq("D").fillna(False).to_numpy(bool)
            )
            f.loc[f.index[in_io], "count"] = 0
            f.loc[f.index[in_io[:2]], "count"] = 1  # 0.2 threads in IO: a second the flush came quick
    [f] = limits.io_throttled(ds, sweep, TH)
    last = next(s for s in f.evidence["per_step"] if s["step"] == "t0016")
    assert last["io_threads"] == pytest.approx(0.2) and TH["io.throttled"]["min_io_threads"] > 0.2
    assert last["io_queued_threads"] == last["lock_threads"] == pytest.approx(14.9)
    assert "t0016" in f.evidence["steps_held"] and f.evidence["io_queued_threads_max"] == pytest.approx(14.9)
    assert "14.9 waiting for it (lock waits behind the IO)" in f.summary
    # no cgroup snapshot, so no limit used up: the same lock waits are no IO wait
    ds.captures = [c for c in ds.captures if c.kind != "cgroup"]
    assert limits.io_throttled(ds, sweep, TH) == []


def test_a_limit_that_does_not_hold_at_the_heaviest_step_is_no_ceiling() -> None:
    """CI: with the knee at 1 thread, the lab's own MariaDB flushing in the background at the
    lightest step came out `io.throttled` in another scenario. The IOPS-limited run with its database's
    threads running at 16 threads: held at 1 and 4 threads only, it is not the sweep's ceiling."""
    from dataclasses import replace

    ds = dataset(FIX / "scn-db-write-iops")
    sweep, _ = model(ds, TH)
    knee_at_1 = replace(sweep, knee_threads=1)
    [f] = limits.io_throttled(ds, knee_at_1, TH)
    assert "t0016" in f.evidence["steps_held"]
    for cap in ds.of("threads"):
        if cap.step == "t0016":
            cap.frame.loc[cap.frame["pid"] == f.evidence["pid"], "state"] = "R"
    assert limits.io_throttled(ds, knee_at_1, TH) == []

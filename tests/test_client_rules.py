"""client.saturated on real captures of a CPU-bound and an idle load-generator host."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.analyzers import client
from perfkit.analyzers import sweep as sweep_model
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.parsers import affinity, nproc, psi, sysbench, top, vmstat

from .conftest import FIXTURES

TH = default_thresholds()
LOAD = FIXTURES / "sysbench" / "1.0.20-rw-t4-summary.txt"


def cap(kind: str, mod, name: str, host: str = "lg1", step: str = "t0004") -> Capture:
    path = FIXTURES / kind / name
    return Capture(f"hosts/{host}/{step}/{name}", kind, host, step, mod.parse(path, host=host))


def load(host: str | None = "lg1", step: str = "t0004") -> Capture:
    return Capture(f"load/{step}/sysbench.out", "sysbench", host, step, sysbench.parse(LOAD, host=host))


def run(ds: Dataset, th: dict | None = None):
    th = th or TH
    return client.saturated(ds, sweep_model.build(ds, th), th)


def test_cpu_bound_load_host_fires() -> None:
    ds = Dataset(
        "x",
        None,
        [
            load(),
            cap("vmstat", vmstat, "procps-4.0.2-wide-t-cpu-bound.txt"),
            cap("nproc", nproc, "coreutils-9.1.txt"),
        ],
    )
    [f] = run(ds)
    ev = f.evidence
    # vmstat after the since-boot row: id 0 and wa 0 in all 7 lines; r = 6,5,5,5,5,5,5 -> median 5
    assert ev["idle_pct_median"] == 0 and ev["run_queue_median"] == 5 and ev["samples"] == 7
    assert ev["cpus"] == 2 and ev["host"] == "lg1" and ev["threads"] == 4
    assert ev["host_bound"] is True and ev["process_bound"] is False
    assert f.severity == "warning" and f.hosts == ["lg1"]
    assert f.window == ("2026-11-23T08:14:28+00:00", "2026-11-23T08:14:34+00:00")


def test_load_process_at_its_limit_is_critical() -> None:
    # top -H: sysbench's 2 worker threads at 98.0+95.0 = 193.0 % (screen 1) and 99.0+95.0 = 194.0 %
    # (screen 2); screen 0 (since start) left out: median 193.5 % of 2 threads x 100 %. Its main thread
    # (TID 3, 99.9 %) is the whole process's as procps-ng 4.0.2 prints it (TIME+ 3.90 = 1.96 + 1.92 +
    # its own): it did nothing of its own, and adds neither CPU nor a thread (it was counted: 293.4 %)
    ds = Dataset("x", None, [load(), cap("top", top, "procps-4.0.2-H-w512.txt")])
    [f] = run(ds)
    assert f.evidence["load_process_cpu_pct_median"] == pytest.approx(193.5)
    assert f.evidence["load_process_threads"] == 2 and f.evidence["load_process_cpu_limit_pct"] == 200
    assert f.evidence["process_bound"] is True and f.severity == "critical"


def test_idle_load_host_fires_nothing() -> None:
    ds = Dataset("x", None, [load(), cap("vmstat", vmstat, "procps-4.0.2-wide-t-idle.txt")])
    assert run(ds) == []


def test_busy_database_host_is_not_the_client() -> None:
    # the CPU-bound vmstat belongs to db1, not to the host that ran sysbench
    ds = Dataset(
        "x",
        None,
        [
            load(),
            cap("vmstat", vmstat, "procps-4.0.2-wide-t-cpu-bound.txt", host="db1"),
            cap("vmstat", vmstat, "procps-4.0.2-wide-t-idle.txt"),
        ],
    )
    assert run(ds) == []


def test_thresholds_override_changes_the_outcome() -> None:
    th = default_thresholds()
    th["client.saturated"].update(max_idle_pct=-1, min_runq_per_cpu=100)
    ds = Dataset("x", None, [load(), cap("vmstat", vmstat, "procps-4.0.2-wide-t-cpu-bound.txt")])
    assert run(ds, th) == []


def test_skipped_when_inputs_are_missing() -> None:
    assert "no load-generator output" in run(Dataset("x", None, [])).reason
    unknown = Dataset("x", None, [load(host=None), cap("vmstat", vmstat, "procps-4.0.2-wide-t-idle.txt")])
    assert "host is unknown" in run(unknown).reason
    elsewhere = Dataset(
        "x", None, [load(), cap("vmstat", vmstat, "procps-4.0.2-wide-t-idle.txt", host="db1")]
    )
    assert run(elsewhere).reason == "no vmstat, mpstat or top capture of the load-generator host (lg1)"


# ---------------------------------------------------------------- thread sampler and cgroups (issue 15)
ARCHIVES = FIXTURES / "archives"


def test_a_load_generator_held_by_its_cgroup_quota_is_the_ceiling() -> None:
    # scn-client-cpu-quota: sysbench in a v1 cpu cgroup with a 0.25-core quota (tests/fixtures/archives/
    # README.md); the host's 2 CPUs are not all busy, sysbench itself is at its quota
    from perfkit.pipeline import analyze_path

    result = analyze_path(ARCHIVES / "scn-client-cpu-quota")
    assert result.verdict is not None and result.verdict.rule == "client.saturated"
    ev = result.verdict.evidence
    assert ev["load_process_quota_cores"] == pytest.approx(0.25)
    assert ev["load_process_cpu_limit_pct"] == pytest.approx(25.0)  # the quota, not 1 thread x 100 %
    assert ev["process_bound"] is True and result.verdict.severity == "critical"
    assert "its cgroup's quota: 0.25 cores" in result.verdict.summary
    # its threads wait for a CPU (throttled), not on the server
    assert ev["load_process_server_wait_share"] < 0.5


def test_a_busy_host_is_not_the_ceiling_while_the_load_waits_on_the_server() -> None:
    # scn-db-write-iops: the database's writes are held to 40 IOPS; sysbench's 16 threads wait in
    # poll for its replies (16.0 of 17.07 active threads): whatever else keeps the host busy, the
    # client is not what limits the sweep
    from perfkit.pipeline import analyze_path

    result = analyze_path(ARCHIVES / "scn-db-write-iops")
    assert "client.saturated" not in {f.rule for f in result.findings}


def test_a_load_run_the_sweep_left_out_is_not_judged(tmp_path: Path) -> None:
    # the quota archive with its 16-thread step marked failed (as a step that died on error 1040 in
    # 190 ms is): that step is out of the sweep, so its seconds say nothing about the client
    import json
    import shutil

    from perfkit.pipeline import analyze_path

    copy = tmp_path / "run"
    shutil.copytree(ARCHIVES / "scn-client-cpu-quota", copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    failed = {"status": "failed", "reason": "MySQL error 1040: Too many connections"}
    for st in manifest["sweep"]["steps"]:
        if st["name"] == "t0016":
            st.update(failed)
    for rec in manifest["captures"]:
        if rec["path"] == "load/t0016/sysbench.out":
            rec.update(failed)  # what perfkit run records for such a step
    (copy / "manifest.json").write_text(json.dumps(manifest))
    whole = analyze_path(ARCHIVES / "scn-client-cpu-quota").verdict
    assert whole is not None and "t0016" in whole.evidence["saturated_steps"]
    result = analyze_path(copy)
    assert [e.source for e in result.excluded_steps] == ["load/t0016/sysbench.out"]
    [f] = [f for f in result.findings if f.rule == "client.saturated"]
    assert "t0016" not in f.evidence["saturated_steps"] and f.evidence["steps_judged"] == 2


# ---------------------------------------------------------------- the run queue, confirmed by PSI

STEPS = FIXTURES / "client"
_KINDS = {
    "vmstat.out": ("vmstat", vmstat),
    "psi.out": ("psi", psi),
    "nproc.out": ("nproc", nproc),
    "top.out": ("top", top),
    "affinity.out": ("affinity", affinity),
}


def one_step(name: str, *files: str) -> Dataset:
    """A real step's load output and the named captures of its host (tests/fixtures/client)."""
    d, step = STEPS / name, name.rsplit("-", 1)[1]
    caps = [
        Capture(
            f"load/{step}/sysbench.out", "sysbench", "localhost", step, sysbench.parse(d / "sysbench.out")
        )
    ]
    for f in files:
        kind, mod = _KINDS[f]
        caps.append(
            Capture(
                f"hosts/localhost/{step}/{f}", kind, "localhost", step, mod.parse(d / f, host="localhost")
            )
        )
    return Dataset("x", None, caps)


def test_a_run_queue_that_psi_does_not_confirm_is_no_saturation() -> None:
    # vmstat after the since-boot row: r 4,2,2,4,4 (median 4, twice the 2 CPUs), id + wa 42-50 %
    [f] = run(one_step("sweep-t0001", "vmstat.out", "nproc.out"))
    ev = f.evidence
    assert ev["run_queue_median"] == 4 and ev["idle_pct_median"] == 48 and ev["cpus"] == 2
    assert ev["host_bound"] and ev["cpu_pressure_pct_median"] is None
    # PSI: cpu some total grew 33,196 / 31,869 / 53,351 / 44,017 us over the 4 seconds after the first
    # stamp (3.3, 3.2, 5.3, 4.4 %): a task waited for a CPU 4 % of the time, so the queue was an instant
    assert run(one_step("sweep-t0001", "vmstat.out", "nproc.out", "psi.out")) == []


def test_a_load_generator_pinned_to_one_cpu_is_told_with_its_affinity_first() -> None:
    pinned = ("vmstat.out", "nproc.out", "psi.out", "top.out")
    [f] = run(one_step("pinned-t0008", *pinned, "affinity.out"))
    ev = f.evidence
    # affinity: sysbench (pid 29784) Cpus_allowed_list 0, of the 2 CPUs nproc counts; top -H: its
    # threads at 49.5, 55.5, 57.0, 53.5 % in the screens after the first (median 54.5 % of the 100 %
    # one CPU allows: it shares that CPU with mariadbd). Its main thread's row (49.5, 52.5, 57.0, 53.5
    # %) is the whole process's, as procps-ng 4.0.2 prints it, less its threads': 2.9, 0, 3.0, 0.2 %.
    # Counted as printed it made 107.4 %, more than the one CPU sysbench may use.
    assert ev["load_process_cpus_allowed"] == 1 and ev["load_process_cpu_limit_pct"] == 100
    assert ev["load_process_cpu_pct_median"] == pytest.approx(54.5)
    assert not ev["process_bound"] and f.severity == "warning"
    assert "allowed to run on 1 CPU of 2" in f.summary and "taskset" in f.next_steps[0]
    # PSI confirms vmstat's queue here: 89.2, 86.7, 90.2, 45.2 % of each second (median 88.2)
    assert ev["run_queue_median"] == 10 and ev["cpu_pressure_pct_median"] == pytest.approx(88.17, abs=0.01)
    # without the affinity capture its ceiling is its threads or the CPUs: 200 %, not reached
    [g] = run(one_step("pinned-t0008", *pinned))
    assert g.evidence["load_process_cpu_limit_pct"] == 200 and not g.evidence["process_bound"]
    assert g.evidence["load_process_cpus_allowed"] is None and g.severity == "warning"

"""cpu.saturated, cpu.hot-thread, cpu.context-switches and mem.swapping: cases that fire and cases
that must not, on captures from the lab VM (tests/fixtures/vmstat, top, nproc) parsed with the real
parsers, and on vmstat text in the parser's format where no real capture shows the case."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from perfkit.analyzers import cpu
from perfkit.analyzers.sweep import Step, Sweep
from perfkit.archive import open_archive
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset, load_dataset
from perfkit.findings import Skipped
from perfkit.parsers import nproc, psi, top, vmstat
from perfkit.pipeline import analyze_path

from .conftest import FIXTURES

TH = default_thresholds()
CPU_BOUND = FIXTURES / "vmstat" / "procps-4.0.2-wide-t-cpu-bound.txt"
IDLE = FIXTURES / "vmstat" / "procps-4.0.2-wide-t-idle.txt"
HOT = FIXTURES / "top" / "procps-4.0.2-H-w512-hot-thread.txt"
TWO_CPUS = FIXTURES / "nproc" / "coreutils-9.1.txt"  # `2`

VM_HEADER = (
    "--procs-- -----------------------memory---------------------- ---swap-- -----io---- -system-- "
    "----------cpu---------- -----timestamp-----\n"
    "   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs  us  sy"
    "  id  wa  st  gu                 UTC\n"
)


def vm_text(rows: list[str]) -> str:
    return VM_HEADER + "".join(r + "\n" for r in rows)


def cap(
    kind: str, frame: pd.DataFrame, host: str | None = "db1", step: str | None = None, path: str = ""
) -> Capture:
    return Capture(path or f"hosts/{host}/{step or ''}/{kind}.out", kind, host, step, frame)


def vm_ds(source, *, cpus: bool = True, host: str = "db1") -> Dataset:
    caps = [cap("vmstat", vmstat.parse(source, host=host), host)]
    if cpus:
        caps.append(cap("nproc", nproc.parse(TWO_CPUS, host=host), host))
    return Dataset("x", None, caps)


def with_th(rule: str, **values: float) -> dict:
    th = copy.deepcopy(TH)
    th[rule].update(values)
    return th


# ---------------------------------------------------------------- cpu.saturated


def test_cpu_bound_capture_is_saturated() -> None:
    # sysbench cpu --threads=4 on 2 CPUs. After the since-boot row, r = 6 5 5 5 5 5 5 and id = 0 in
    # all 7 rows: median 5, p90 = 5 + 0.4 * (6 - 5) = 5.4 (numpy linear, sorted 5 5 5 5 5 5 6).
    [f] = cpu.saturated(vm_ds(CPU_BOUND), None, TH)
    ev = f.evidence
    assert (ev["cpus"], ev["samples"], ev["saturated_samples"]) == (2, 7, 7)
    assert ev["r_median"] == 5 and ev["r_p90"] == pytest.approx(5.4)
    assert ev["idle_pct_median"] == 0 and ev["us_pct_median"] == 100  # us 98 100 98 100 100 100 96
    assert ev["sy_pct_median"] == 1  # sy 2 1 2 0 1 0 5
    assert f.severity == "critical"  # every sample, r 2.5 per CPU
    assert f.hosts == ["db1"] and f.window == ("2026-11-23T08:14:28+00:00", "2026-11-23T08:14:34+00:00")
    assert ev["cpus_source"].endswith("nproc.out")


def test_idle_capture_is_not_saturated() -> None:
    assert cpu.saturated(vm_ds(IDLE), None, TH) == []


def test_since_boot_row_is_dropped() -> None:
    # The idle capture's since-boot row (r 1, id 58) and 7 idle rows: even with r > 0 counting as a
    # queue, only rows with id + wa <= 10 match, and none of the interval rows do.
    th = with_th("cpu.saturated", run_queue_per_cpu=0.0, max_idle_pct=60, min_samples=1, min_share=0.1)
    assert cpu.saturated(vm_ds(IDLE), None, th) == []


def test_cpu_count_comes_from_psutil_or_mpstat_when_no_nproc() -> None:
    ds = vm_ds(CPU_BOUND, cpus=False)
    assert isinstance(cpu.saturated(ds, None, TH), Skipped)
    ds.captures.append(cap("psutil", pd.DataFrame({"ncpu": pd.array([8], dtype="Int64")})))
    # 8 CPUs: r of 5 is below the CPU count, so nothing is saturated
    assert cpu.saturated(ds, None, TH) == []


MPSTAT_ALL_ONLY = FIXTURES / "mpstat" / "sysstat-12.6-C-all-cpu-bound.txt"  # `(2 CPU)`, `all` rows only
SAME_WINDOW_VMSTAT = FIXTURES / "mpstat" / "same-window" / "vmstat-procps-4.0.2-t.txt"


@pytest.mark.parametrize("manifest", [False, True], ids=["foreign", "manifest"])
def test_cpu_count_from_the_mpstat_banner_alone(tmp_path: Path, manifest: bool) -> None:
    # An archive directory without nproc: `mpstat 1 3` (no -P ALL, so no per-CPU rows; its banner says
    # `(2 CPU)`) and vmstat of the same window. The rule used to skip with "CPU count unknown".
    host_dir = tmp_path / "hosts" / "db1"
    host_dir.mkdir(parents=True)
    shutil.copy(MPSTAT_ALL_ONLY, host_dir / "mpstat.out")
    shutil.copy(SAME_WINDOW_VMSTAT, host_dir / "vmstat.out")
    if manifest:
        records = [{"path": f"hosts/db1/{k}.out", "kind": k, "host": "db1"} for k in ("mpstat", "vmstat")]
        (tmp_path / "manifest.json").write_text(json.dumps({"format_version": 1, "captures": records}))
    result = analyze_path(tmp_path)
    assert "cpu.saturated" not in {s.rule for s in result.skipped}
    [f] = [f for f in result.findings if f.rule == "cpu.saturated"]
    ev = f.evidence
    assert (ev["cpus"], ev["cpus_source"]) == (2, "hosts/db1/mpstat.out")
    # after the since-boot row: r 9 9 9 9 (4.5 per CPU), id 0, us 94 91 95 87, sy 6 9 5 14
    assert (ev["samples"], ev["saturated_samples"], ev["r_median"]) == (4, 4, 9)
    assert ev["idle_pct_median"] == 0 and ev["us_pct_median"] == 92.5 and ev["sy_pct_median"] == 7.5
    assert f.severity == "critical"
    assert f.hosts == (["db1"] if manifest else [])
    assert f.title == "CPU saturated: run queue 9 on 2 CPUs, 0% idle"


def test_iowait_is_not_cpu_saturation() -> None:
    # idle 0 but the time is iowait: r above the CPUs comes and goes, the CPUs wait on the disk
    rows = [
        f"6 4 0 23161576 129164 1125184 0 0 0 9000 554 602 5 5 0 90 0 0 2026-11-23 08:14:{s:02d}"
        for s in range(28, 35)
    ]
    assert cpu.saturated(vm_ds(vm_text(rows)), None, TH) == []


def test_a_deep_queue_psi_confirms_is_saturation_though_iowait_is_left() -> None:
    # the small-buffer-pool scenario's 16-thread step (tests/fixtures/cpu/README.md): after the
    # since-boot row r = 19 19 17 18 11 18 13 20 on 2 CPUs, id + wa = 15 10 9 14 14 12 12 11 (2 of 8
    # samples within 10 %: no finding by idle alone); PSI cpu some 75.4-86.3 %, median 82.36
    d = FIXTURES / "cpu" / "small-buffer-pool-t0016"
    caps = [
        cap("vmstat", vmstat.parse(d / "vmstat.out", host="db1"), step="t0016"),
        cap("nproc", nproc.parse(d / "nproc.out", host="db1"), step="t0016"),
    ]
    assert cpu.saturated(Dataset("x", None, caps), None, TH) == []
    caps.append(cap("psi", psi.parse(d / "psi.out", host="db1"), step="t0016"))
    [f] = cpu.saturated(Dataset("x", None, caps), None, TH)
    ev = f.evidence
    assert (ev["samples"], ev["saturated_samples"], ev["r_median"]) == (8, 8, 18)
    assert ev["cpu_pressure_pct_median"] == pytest.approx(82.36, abs=0.01)
    assert (ev["idle_pct_median"], ev["wa_pct_median"], ev["st_pct_median"]) == (1, 10.5, 7)
    assert f.severity == "critical" and "a task waited for a CPU 82% of the time (PSI)" in f.summary
    assert "gaps between bursts" in f.explanation
    # the threshold is the rule's: at 90 % PSI does not count, and idle alone finds 2 samples
    assert (
        cpu.saturated(Dataset("x", None, caps), None, with_th("cpu.saturated", min_cpu_pressure_pct=90)) == []
    )


def test_a_queue_psi_does_not_confirm_stays_judged_by_idle() -> None:
    # tests/fixtures/client/sweep-t0001: r 4 2 2 4 4 on 2 CPUs at 42-50 % idle, PSI 3-5 %: no saturation
    d = FIXTURES / "client" / "sweep-t0001"
    caps = [
        cap(kind, mod.parse(d / f"{kind}.out", host="db1"), step="t0001")
        for kind, mod in (("vmstat", vmstat), ("nproc", nproc), ("psi", psi))
    ]
    assert cpu.saturated(Dataset("x", None, caps), None, TH) == []


def test_high_steal_is_said_and_not_critical() -> None:
    rows = [
        f"5 0 0 23161576 129164 1125184 0 0 0 0 554 602 60 5 0 0 35 0 2026-11-23 08:14:{s:02d}"
        for s in range(28, 35)
    ]
    [f] = cpu.saturated(vm_ds(vm_text(rows)), None, TH)
    assert f.evidence["st_pct_median"] == 35 and "hypervisor" in f.explanation and f.severity == "warning"


def test_saturated_steps_are_named() -> None:
    loaded = vmstat.parse(CPU_BOUND, host="db1")
    idle = vmstat.parse(IDLE, host="db1")
    ds = Dataset(
        "x",
        None,
        [
            cap("vmstat", idle, step="t0002"),
            cap("vmstat", loaded, step="t0008"),
            cap("nproc", nproc.parse(TWO_CPUS, host="db1"), step="t0002"),
        ],
    )
    [f] = cpu.saturated(ds, sweep([(2, 700.0), (8, 1000.0)]), TH)
    assert f.evidence["steps"] == "t0008" and f.evidence["first_saturated_threads"] == 8
    assert f.evidence["samples"] == 7  # only the saturated step's rows


def test_saturated_threshold_override() -> None:
    assert cpu.saturated(vm_ds(CPU_BOUND), None, with_th("cpu.saturated", run_queue_per_cpu=3.0)) == []


def test_saturated_skipped_without_vmstat() -> None:
    out = cpu.saturated(Dataset("x", None, []), None, TH)
    assert isinstance(out, Skipped) and "vmstat" in out.reason


# ---------------------------------------------------------------- cpu.hot-thread


def top_ds(frame: pd.DataFrame) -> Dataset:
    return Dataset("x", None, [cap("top", frame, path="hosts/db1/top.out")])


def test_single_threaded_spinner_is_a_hot_thread() -> None:
    # python3 TID 3 at 99.9 99.0 99.9 99.9 99.9 in the 5 screens; screen 0 (since start) is dropped:
    # median of 99.0 99.9 99.9 99.9 = 99.9. Host idle in screens 1-4: 49.6 49.2 48.7 49.8 -> 49.4.
    [f] = cpu.hot_thread(top_ds(top.parse(HOT, host="db1")), None, TH)
    ev = f.evidence
    assert (ev["process"], ev["pid"], ev["thread"], ev["tid"]) == ("python3", 3, "python3", 3)
    assert ev["cpu_pct_median"] == pytest.approx(99.9)
    assert (ev["hot_iterations"], ev["iterations"], ev["process_threads"]) == (4, 4, 1)
    assert ev["host_idle_pct_median"] == pytest.approx(49.4)
    assert "single-threaded" in f.summary
    # the idle 5-thread python3 (TIDs 2, 5-8) is not reported
    assert all(x.evidence["pid"] != 2 for x in cpu.hot_thread(top_ds(top.parse(HOT)), None, TH))


def test_hot_thread_of_a_multi_threaded_process() -> None:
    # The spinner's rows given the sizes of the 5-thread python3 (VIRT 315372, RES 9012, SHR 5488):
    # one process of 6 threads, main thread TID 2, one of them pinned, 99.9 % in total of 600.
    df = top.parse(HOT, host="db1")
    df.attrs = top.parse(HOT).attrs
    spin = df["pid"] == 3
    df.loc[spin, ["virt_kb", "res_kb", "shr_kb"]] = [315372.0, 9012.0, 5488.0]
    [f] = cpu.hot_thread(top_ds(df), None, TH)
    ev = f.evidence
    assert (ev["pid"], ev["tid"], ev["process_threads"]) == (2, 3, 6)
    assert ev["process_cpu_pct_median"] == pytest.approx(99.9)
    assert "thread python3 (tid 3)" in f.summary


def test_hot_thread_whose_sizes_changed_in_a_quiet_screen() -> None:
    # Bug fix: the multi-threaded spinner above, but in screen 4 it was not hot and top read its RES
    # while it changed, so that screen counts it as a process of its own (pid 3) with no hot row.
    # The rule used to fail on it (int() of the median of no screens); now it is no candidate, and
    # the thread is still reported in its real process, hot in 3 of 4 screens.
    df = top.parse(HOT, host="db1")
    df.attrs = top.parse(HOT).attrs
    spin = df["pid"] == 3
    df.loc[spin, ["virt_kb", "res_kb", "shr_kb"]] = [315372.0, 9012.0, 5488.0]
    quiet = spin & (df["iteration"] == 4)
    df.loc[quiet, ["res_kb", "cpu_pct"]] = [9016.0, 5.0]
    [f] = cpu.hot_thread(top_ds(df), None, TH)
    ev = f.evidence
    assert (ev["pid"], ev["tid"], ev["process_threads"]) == (2, 3, 6)
    assert (ev["hot_iterations"], ev["iterations"]) == (3, 4)


LEADER = FIXTURES / "top" / "procps-4.0.2-H-leader-holds-the-process.txt"


def _times(screen: str, process: str) -> dict[int, float]:
    """TID -> TIME+ seconds of the scenario's `process` rows (SHR 24076; the lab's has 24704) in one
    screen of top -H text (m:ss.hh)."""
    out = {}
    for line in screen.splitlines():
        f = line.split()
        if len(f) == 12 and f[0].isdigit() and f[11] == process and f[6] == "24076":
            minutes, seconds = f[10].split(":")
            out[int(f[0])] = int(minutes) * 60 + float(seconds)
    return out


def test_a_leader_row_that_holds_its_process_s_cpu_is_no_hot_thread() -> None:
    """procps-ng 4.0.0-4.0.3 print a multi-threaded process's leader under -H with the whole process's
    CPU (Debian 12 ships 4.0.2). The hot-rows scenario's mariadbd at 16 threads: its main thread idled
    in poll(), and top printed it at 99.9 % in every screen: perfkit called it a hot thread (and
    counted its process at 233 % on 2 CPUs, 14 % idle). The fixture keeps mariadbd's rows."""
    screens = LEADER.read_text().split("\ntop - ")[1:]
    assert len(screens) == 8  # after the first (%CPU since each task started)
    for screen in screens:  # read without perfkit: the leader's TIME+ holds its threads' together
        times = _times(screen, "mariadbd")
        assert len(times) == 31 and times[11292] >= sum(t for tid, t in times.items() if tid != 11292)
    df = top.parse(LEADER, host="db1")
    assert cpu.hot_thread(top_ds(df), None, TH) == []
    later = df[df["iteration"] > 0]
    later = later.assign(proc=cpu.thread_groups(later))
    own = later.assign(cpu_pct=cpu.own_cpu(later, None))  # no version: told by TIME+
    db = own["proc"] == 11292
    main = own[db & (own["pid"] == 11292)]
    assert (later.loc[main.index, "cpu_pct"] == 99.9).sum() == 8 and main["cpu_pct"].max() == 0.0
    # the process a screen: 216.3, 231.7, 236.3, 234.3, 232.3, 235.3, 232.8, 201.3 % as printed; its
    # leader's 99.9 % less the 116.4, 131.8, 136.4, 134.4, 132.4, 135.4, 132.9, 101.4 % its other
    # threads used is none: those are the process's
    assert later[db].groupby("iteration")["cpu_pct"].sum().median() == pytest.approx(232.55)
    assert own[db].groupby("iteration")["cpu_pct"].sum().median() == pytest.approx(132.65)


@pytest.mark.parametrize(
    ("version", "holds", "hot"),
    [
        ("top from procps-ng 4.0.2", True, False),
        ("top from procps-ng 4.0.4", False, True),
        (None, None, False),
    ],
)
def test_top_s_version_says_whether_a_leader_row_holds_its_process(
    version: str | None, holds: bool | None, hot: bool
) -> None:
    # the same text, read as 4.0.4 would print it (the leader's own CPU): then it is a hot thread
    df = top.parse(LEADER, host="db1", tool_version=version)
    assert df.attrs["leader_holds_process"] is holds
    assert bool(cpu.hot_thread(top_ds(df), None, TH)) is hot


def test_a_capture_s_record_gives_top_its_version() -> None:
    with open_archive(FIXTURES / "archives" / "scn-client-cpu-quota") as archive:
        tops = load_dataset(archive).of("top")
    assert len(tops) == 3 and all(c.extras.leader_holds_process is True for c in tops)


def test_a_leader_that_is_itself_the_hot_thread_stays_one() -> None:
    # The spinner (TID 3) made the leader of the 5-thread python3 (its sizes, and TID 2 renumbered
    # 9), its idle threads given 0.01 s of TIME+ each: its TIME+ holds theirs, as a leader printed
    # with its process's CPU would, but what they leave of its 99.9 % is 99.9 %: still hot.
    df = top.parse(HOT, host="db1")
    df.attrs = top.parse(HOT).attrs
    spin = df["pid"] == 3
    df.loc[spin, ["virt_kb", "res_kb", "shr_kb"]] = [315372.0, 9012.0, 5488.0]
    df.loc[df["pid"] == 2, "pid"] = 9
    df.loc[df["pid"].isin([5, 6, 7, 8, 9]), "time_s"] = 0.01
    [f] = cpu.hot_thread(top_ds(df), None, TH)
    assert (f.evidence["pid"], f.evidence["tid"], f.evidence["cpu_pct_median"]) == (3, 3, pytest.approx(99.9))


def test_existing_threads_capture_has_no_hot_thread() -> None:
    # sysbench cpu --threads=2 on 2 CPUs: its threads are pinned, but the host has no idle CPU left.
    assert cpu.hot_thread(top_ds(top.parse(FIXTURES / "top" / "procps-4.0.2-H-w512.txt")), None, TH) == []


def test_hot_thread_threshold_override() -> None:
    frame = top.parse(HOT, host="db1")
    assert cpu.hot_thread(top_ds(frame), None, with_th("cpu.hot-thread", min_host_idle_pct=60)) == []


def test_hot_thread_skipped_without_threads_mode_top() -> None:
    out = cpu.hot_thread(top_ds(top.parse(FIXTURES / "top" / "procps-4.0.2-w512.txt")), None, TH)
    assert isinstance(out, Skipped) and "top -H" in out.reason


# ---------------------------------------------------------------- cpu.context-switches

# vmstat rows of the lab's `perfkit run sysbench` oltp_read_write sweep at 8 threads (2026-11-23,
# hosts/localhost/t0008/vmstat.out, since-boot row first): cs 36265 36085 46647 52198 51979 51679.
T0008 = [
    "10 0 0 23994660 616 355344 0 0 1943 2601 2631 8546 30 16 53 1 0 0 2026-11-23 06:29:33",
    "9 0 0 23994660 616 355344 0 0 4332 3616 6835 36265 52 46 1 0 0 0 2026-11-23 06:29:34",
    "10 1 0 23994660 616 355344 0 0 0 3660 8074 36085 53 46 1 1 0 0 2026-11-23 06:29:35",
    "11 0 0 23994660 616 355344 0 0 0 4672 10404 46647 45 54 2 0 0 0 2026-11-23 06:29:36",
    "8 0 0 23994660 616 355344 0 0 16 5012 10679 52198 49 50 1 1 0 0 2026-11-23 06:29:37",
    "9 0 0 23994660 616 355344 0 0 0 4976 10264 51979 50 49 2 0 0 0 2026-11-23 06:29:38",
]


def sweep(levels: list[tuple[int, float]]) -> Sweep:
    steps = [Step(threads=n, tps=x, source=f"load/t{n:04d}/sysbench.out") for n, x in levels]
    return Sweep(
        tool="sysbench", metric="tps", steps=steps, peak=max(steps, key=lambda s: s.tps), knee_threads=None
    )


def cs_ds(step: str = "t0008") -> Dataset:
    return Dataset("x", None, [cap("vmstat", vmstat.parse(vm_text(T0008), host="db1"), step=step)])


def test_normal_switches_per_transaction_do_not_fire() -> None:
    # the real step ran 1045 tps: median cs 46647 (of 36085 36265 46647 51979 52198) / 1045 = 44.6
    assert cpu.context_switches(cs_ds(), sweep([(8, 1045.0)]), TH) == []


def test_switches_per_transaction_far_above_normal() -> None:
    # the same switching for 100 tps (a blocking client spinning threads): 46647 / 100 = 466 per txn
    [f] = cpu.context_switches(cs_ds(), sweep([(8, 100.0)]), TH)
    assert f.evidence["cs_per_s_median"] == 46647
    assert f.evidence["cs_per_txn"] == pytest.approx(466.47)
    assert f.evidence["threads"] == 8 and f.evidence["step"] == "t0008"


def test_switches_per_transaction_growing_across_steps() -> None:
    # 46647/400 = 116.6 per txn at 64 threads vs 46647/1045 = 44.6 at 8: 2.6x, below the 3x default
    ds = Dataset("x", None, cs_ds("t0008").captures + cs_ds("t0064").captures)
    assert cpu.context_switches(ds, sweep([(8, 1045.0), (64, 400.0)]), TH) == []
    [f] = cpu.context_switches(
        ds, sweep([(8, 1045.0), (64, 400.0)]), with_th("cpu.context-switches", growth_ratio=2)
    )
    assert f.evidence["cs_per_txn_growth"] == pytest.approx(1045 / 400)
    assert f.evidence["threads"] == 64


def test_context_switches_skipped_without_vmstat_or_sweep() -> None:
    assert isinstance(cpu.context_switches(Dataset("x", None, []), None, TH), Skipped)
    out = cpu.context_switches(cs_ds(), None, TH)
    assert isinstance(out, Skipped) and "throughput" in out.reason


# ---------------------------------------------------------------- mem.swapping


def test_no_swapping_on_the_lab_captures() -> None:
    assert cpu.swapping(vm_ds(CPU_BOUND), None, TH) == []
    assert cpu.swapping(vm_ds(IDLE), None, TH) == []


def test_swap_in_during_the_load_fires() -> None:
    # si 0 120 340 0 88 / so 0 0 512 64 0 KiB/s after the since-boot row: 4 of 5 samples swap,
    # si median 88, max 340; so median 0, max 512; swap-in in 3 of 5 (0.6 >= 0.5: critical)
    vals = [(5, 5), (0, 0), (120, 0), (340, 512), (0, 64), (88, 0)]
    rows = [
        f"2 1 524288 81234 1200 90112 {si} {so} 500 800 2000 9000 40 20 30 10 0 0 2026-11-23 09:00:{i:02d}"
        for i, (si, so) in enumerate(vals)
    ]
    [f] = cpu.swapping(vm_ds(vm_text(rows), cpus=False), None, TH)
    ev = f.evidence
    assert (ev["samples"], ev["swapping_samples"]) == (5, 4)
    assert (ev["si_kb_s_median"], ev["si_kb_s_max"], ev["so_kb_s_median"], ev["so_kb_s_max"]) == (
        88,
        340,
        0,
        512,
    )
    assert ev["free_kb_median"] == 81234 and f.severity == "critical"
    # 79 MiB free, 512 MiB in swap: the host's RAM was short, no cgroup limit is suggested
    assert ev["free_exceeds_swap"] is False and "cgroup" not in f.summary + f.next_steps[0]
    # 8 GiB free, the same 512 MiB in swap: what pushed the pages out was no lack of RAM
    roomy = [r.replace(" 81234 ", " 8388608 ") for r in rows]
    [g] = cpu.swapping(vm_ds(vm_text(roomy), cpus=False), None, TH)
    assert g.evidence["free_exceeds_swap"] is True
    assert "memory limit on the swapping processes' cgroup" in g.summary and "memory.max" in g.next_steps[0]
    # a stricter share: 4 of 5 samples is below 0.9
    assert cpu.swapping(vm_ds(vm_text(rows), cpus=False), None, with_th("mem.swapping", min_share=0.9)) == []


def test_swapping_skipped_without_vmstat() -> None:
    out = cpu.swapping(Dataset("x", None, []), None, TH)
    assert isinstance(out, Skipped) and "vmstat" in out.reason

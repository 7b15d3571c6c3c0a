"""Where threads wait (analyzers/waits.py): classes, the standing baseline, wait.profile, and what
client.saturated and the reports take from it — on a real sweep of the scenario lab.

tests/fixtures/archives/scn-db-write-iops/ is the archive of
`python3 -m scripts.scenarios run db-write-iops --threads 1,4,16 --time 5 -o DIR` (a throwaway MariaDB
whose writes a blkio cgroup holds to 40 IOPS; sysbench oltp_write_only), trimmed to the threads,
cgroup, psi, vmstat, iostat, nproc and sysbench captures (the manifest lists only those; its
`output` option rewritten to `archive`). The figures below were computed by hand from its
threads.out files with awk: `c` lines of pid 22522 summed per (state, syscall, wchan), divided by the
samples of the step's `=` lines (2 per interval, 5 intervals: 10).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from perfkit.analyzers import analyze, waits
from perfkit.archive import open_archive
from perfkit.config import default_thresholds
from perfkit.dataset import load_dataset
from perfkit.pipeline import analyze_path, write_reports

from .conftest import FIXTURES

ARCHIVE = FIXTURES / "archives" / "scn-db-write-iops"
DB = 22522  # the scenario's throwaway mariadbd (11010 is the lab's own, idle)


@pytest.mark.parametrize(
    ("state", "syscall", "wchan", "cls"),
    [
        ("R", "running", "0", "cpu"),
        ("D", "fdatasync", "submit_bio_wait", "io"),
        ("D", "pwrite64", "__iomap_dio_rw", "io"),
        ("D", "read", "rwsem_down_read_slowpath", "lock"),
        ("S", "futex", "futex_do_wait", "lock"),
        ("S", "io_uring_enter", "io_cqring_wait", "idle"),  # a completion thread: parked whatever the load
        ("S", "io_getevents", "read_events", "idle"),
        ("S", "io_uring_enter", "io_wq_worker", "idle"),  # an io-wq worker (iou-wrk-*) waiting for work
        ("S", "restart_syscall", "futex_do_wait", "lock"),
        ("S", "restart_syscall", "hrtimer_nanosleep", "idle"),
        ("S", "io_submit", "blk_mq_get_tag", "io"),  # the device's queue full: this request waits
        ("D", "io_uring_enter", "io_schedule", "io"),
        ("S", "poll", "poll_schedule_timeout.constprop.0", "net"),
        ("S", "recvfrom", "wait_woken", "net"),
        ("S", "clock_nanosleep", "hrtimer_nanosleep", "idle"),
        ("S", "rt_sigtimedwait", "do_sigtimedwait.isra.0", "idle"),
        ("S", None, None, "other"),
        ("S", "ioctl", "0", "other"),
        # an idle kernel thread (TASK_IDLE), the sampler's syscall `kernel`: the hot-rows scenario's
        # kdamond came out `other`, an active thread, as the busiest beside the named processes
        ("I", "kernel", "kdamond_fn", "idle"),
        ("I", "kernel", "worker_thread", "idle"),
        # a kernel thread asleep waiting for work: the small-buffer-pool scenario's busiest ksoftirqd
        # came out `other`, 0.88 active threads each; its work is R, a kernel thread's IO D
        ("S", "kernel", "smpboot_thread_fn", "idle"),
        ("S", "kernel", "kjournald2", "idle"),
        ("D", "kernel", "jbd2_journal_commit_transaction", "io"),
        ("R", "kernel", "0", "cpu"),
    ],
)
def test_wait_class(state: str, syscall: str | None, wchan: str | None, cls: str) -> None:
    assert waits.wait_class(state, syscall, wchan) == cls


def _profiles() -> dict[tuple[str, int], waits.WaitProfile]:
    with open_archive(ARCHIVE) as ar:
        ds = load_dataset(ar)
    return {(p.step, p.pid): p for p in waits.profiles(ds)}


def test_the_standing_threads_are_idle_and_what_the_load_adds_is_active() -> None:
    got = _profiles()
    low, high = got[("t0001", DB)], got[("t0016", DB)]
    # futex_do_wait: 10.1 threads at 1 thread, 25.0 at 16: 14.9 are commits queued behind the flush
    assert high.classes["lock"] == pytest.approx(25.0 - 10.1)
    assert low.classes["lock"] == pytest.approx(0.0)
    # D is never standing: fdatasync + pwrite64 in uninterruptible sleep, 0.8 + 0.1 and 0.4 + 0.6
    assert low.classes["io"] == pytest.approx(0.9) and high.classes["io"] == pytest.approx(1.0)
    # parked: 10.1 on futexes, 2.0 in poll, 1.0 in io_uring_enter, 1.0 waiting for signals
    assert high.classes["idle"] == pytest.approx(14.1) and high.baseline
    assert high.total_threads == pytest.approx(30.0)  # 25.0 futex + 2.0 poll + 1.0 + 1.0 + 0.6 + 0.4
    lab = got[("t0016", 11010)]  # the lab's idle MariaDB: every thread parked
    assert lab.active == pytest.approx(0.0, abs=0.01)


def test_a_load_generator_has_no_standing_part() -> None:
    # a new sysbench each step: all its threads are the load's; at 16 threads 16.0 wait in poll on
    # the server's replies (and its main thread on a futex for its workers)
    sb = next(p for (step, _), p in _profiles().items() if step == "t0016" and p.process == "sysbench")
    assert not sb.baseline
    assert sb.classes["net"] == pytest.approx(16.0) and sb.classes["lock"] == pytest.approx(1.0)
    assert sb.dominant_wait() == ("net", pytest.approx(16.0))


def test_wait_profile_names_the_lock_waits_of_the_io_limited_database() -> None:
    result = analyze_path(ARCHIVE)
    [f] = [f for f in result.findings if f.rule == "wait.profile"]
    ev = f.evidence
    assert (ev["pid"], ev["step"], ev["threads"], ev["dominant"]) == (DB, "t0016", 16, "lock")
    assert ev["dominant_threads"] == pytest.approx(14.9)
    assert ev["active_threads"] == pytest.approx(16.22, abs=0.01)
    assert ev["waiting_share"] > 0.95
    assert ev["top"][0][:3] == ["S", "futex", "futex_do_wait"]
    assert "+14.9 since the lowest step" in f.summary
    # the same archive's client is not the ceiling: sysbench's threads wait on the server
    assert "client.saturated" not in {x.rule for x in result.findings}


def test_wait_profile_stays_silent_when_the_database_runs() -> None:
    # the same sweep with every thread of the database on a CPU: a CPU-bound server is no wait story
    with open_archive(ARCHIVE) as ar:
        ds = load_dataset(ar)
    for cap in ds.of("threads"):
        f = cap.frame
        f.loc[f["pid"] == DB, "state"] = "R"
    result = analyze(ds, default_thresholds())
    assert "wait.profile" not in {x.rule for x in result.findings}


def test_wait_profile_skips_without_a_thread_capture() -> None:
    result = analyze_path(FIXTURES.parent.parent / "examples" / "seed000-tidb-write-only.tar.gz")
    skipped = {s.rule: s.reason for s in result.skipped}
    assert skipped["wait.profile"].startswith("no thread-state capture")


def test_findings_json_and_the_reports_carry_the_waits(tmp_path: Path) -> None:
    result = analyze_path(ARCHIVE)
    write_reports(result, tmp_path)
    doc = json.loads((tmp_path / "findings.json").read_text())
    db = [w for w in doc["waits"] if w["pid"] == DB]
    assert [w["step"] for w in db] == ["t0001", "t0004", "t0016"]
    high = db[-1]
    assert high["threads"] == 16 and high["process"] == "mariadbd" and high["host"] == "localhost"
    assert set(high["classes"]) == {"cpu", "cpu_wait", "io", "lock", "net", "other", "idle"}
    assert high["classes"]["lock"] == pytest.approx(14.9)
    assert high["top"][0] == {
        "state": "S",
        "syscall": "futex",
        "wchan": "futex_do_wait",
        "thread": "mariadbd",
        "class": "lock",
        "avg_threads": 25.0,
    }
    assert "Where threads wait" in (tmp_path / "report.md").read_text()
    assert 'id="waits"' in (tmp_path / "report.html").read_text()
    assert (tmp_path / "plots" / "waits.png").stat().st_size > 5000  # mariadbd and sysbench, stacked


def test_a_wait_must_hold_where_the_load_is_heaviest() -> None:
    """CI: with the knee at 1 thread, another MariaDB's background flush at the lightest step was
    taken for the verdict. The same archive with the database's threads running at 16 threads: its
    waits at 1 and 4 threads explain no ceiling."""
    from dataclasses import replace

    from perfkit.analyzers import sweep as sweep_model

    with open_archive(ARCHIVE) as ar:
        ds = load_dataset(ar)
    th = default_thresholds()
    sweep, _ = sweep_model.model(ds, th)
    knee_at_1 = replace(sweep, knee_threads=1)
    found = waits.wait_profile(ds, knee_at_1, th)
    assert [f.evidence["threads"] for f in found if f.evidence["pid"] == DB] == [16]
    for cap in ds.of("threads"):
        if cap.step == "t0016":
            cap.frame.loc[cap.frame["pid"] == DB, "state"] = "R"
    found = waits.wait_profile(ds, knee_at_1, th)
    assert [f for f in found if f.evidence["pid"] == DB] == []


IDLE = FIXTURES / "archives" / "idle-server-window"


def test_an_idle_server_outside_a_sweep_waits_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfkit collect --local -d 6` of the idle lab VM (tests/fixtures/archives/idle-server-window):
    MariaDB's background threads asleep on futexes, io_uring and poll, no sweep to take them out as
    standing. It used 0.0001 cores (schedstat): it served nothing, so no finding says its threads wait
    on locks (wait.profile) or on IO behind a ceiling above the idle disk (io.throttled)."""
    result = analyze_path(IDLE)
    [db] = [p for p in waits.profiles(result.dataset) if p.process == "mariadbd"]
    assert db.cpu_measured and db.classes["cpu"] < 0.0002 and db.served_nothing and not db.baseline
    # the parked threads, as sampled; the io_uring reaper waits for completions: idle by its class
    assert db.classes["lock"] == 6.0 and db.classes["io"] == 0.0 and db.classes["idle"] == 2.0
    rules = {f.rule for f in result.findings}
    assert not rules & {"wait.profile", "io.throttled"}, rules
    # the CPU bar is what keeps wait.profile silent
    monkeypatch.setattr(waits, "IDLE_CPU_CORES", 0.0)
    warned = [f.rule for f in analyze_path(IDLE).findings if f.severity == "warning"]
    assert warned == ["wait.profile"]


def test_a_server_at_no_cpu_under_a_load_is_judged() -> None:
    """With a load known (a sweep), a server that used no CPU is stalled, not idle: the same capture is
    judged then (here with no knee, as a one-window foreign archive gives)."""
    result = analyze_path(IDLE)
    with_load = SimpleNamespace(knee_threads=None)
    [f] = waits.wait_profile(result.dataset, with_load, default_thresholds())
    assert f.evidence["process"] == "mariadbd" and f.evidence["dominant"] == "lock"


# `perfkit run sysbench --mysql-user perfkit --tables 2 --table-size 10000 --time 5 --threads 4
# --workload oltp_point_select -o DIR` against the lab MariaDB (tests/fixtures/archives/README.md): one
# step, the 2-vCPU host CPU-bound, and the rest window before it
ONE_STEP = FIXTURES / "archives" / "one-step-point-select"
LAB_DB = 25969
# `python3 -m scripts.scenarios run db-write-iops --threads 8 --time 5 -o DIR`: one step of 8 threads
# against a throwaway MariaDB held to 40 write IOPS, the lab's own idle one beside it
ONE_STEP_IO = FIXTURES / "archives" / "scn-db-write-iops-one-step"
IO_DB = 30848


def _avg_threads(threads_out: Path, pid: int, syscall: str, wchan: str, load: Path | None = None) -> float:
    """A combination's average threads, read from the thread sampler's text without perfkit: its `c`
    lines' counts over the samples of the `=` lines; with `load` (a load output in the same archive),
    only the intervals whose middle, on the controller's clock, falls within that load's run."""
    archive = next(d for d in threads_out.parents if (d / "manifest.json").exists())
    records = {r["path"]: r for r in json.loads((archive / "manifest.json").read_text())["captures"]}
    offset = records[str(threads_out.relative_to(archive))]["clock_offset_s"]
    run = records[str(load.relative_to(archive))] if load else None
    start, end = (
        (datetime.fromisoformat(run[k]).timestamp() for k in ("started_at", "ended_at")) if run else (0, 1e12)
    )
    samples, count, inside = 0, 0, False
    for fields in (x.replace("\t", " ").split() for x in threads_out.read_text().splitlines()):
        if fields[0] == "=":
            middle = float(fields[1]) - offset - float(fields[2]) / 2
            inside = start <= middle <= end
            samples += int(fields[3]) if inside else 0
        elif fields[0] == "c" and inside and (int(fields[1]), fields[3], fields[4]) == (pid, syscall, wchan):
            count += int(fields[5])
    return count / samples


def test_a_one_step_sweep_takes_the_parked_threads_from_its_rest_window() -> None:
    """A sweep of one thread count has no lighter step to show what the server parks whatever the
    load: the rest window before it does. Without it, perfkit took MariaDB's parked futex threads for
    lock waits (wait.profile), on a host whose CPU was the limit."""
    rest, step = (ONE_STEP / "hosts" / "localhost" / s / "threads.out" for s in ("rest", "t0004"))
    result = analyze_path(ONE_STEP)
    [db] = [p for p in waits.profiles(result.dataset) if p.pid == LAB_DB]
    assert (db.step, db.threads, db.baseline) == ("t0004", 4, True)  # the rest is no profile of its own
    assert db.classes["io"] == 0.0
    futex = ("202", "futex_do_wait")
    load = ONE_STEP / "load" / "t0004" / "sysbench.out"
    parked, held = _avg_threads(rest, LAB_DB, *futex), _avg_threads(step, LAB_DB, *futex, load)
    assert (parked, held) == (11.0, 7.0) and db.classes["lock"] == 0.0  # fewer under the load than at rest
    rules = {f.rule for f in result.findings}
    assert "cpu.saturated" in rules and not rules & {"io.throttled", "wait.profile"}, rules
    # the same archive without its rest window: the false alarm, said to count the parked threads
    ds = result.dataset
    ds.captures = [c for c in ds.captures if c.step != "rest"]
    [f] = [f for f in analyze(ds, default_thresholds()).findings if f.rule == "wait.profile"]
    assert f.evidence["baseline"] is False and f.evidence["dominant_threads"] == held
    assert "the threads it parks whatever the load are counted among them" in f.summary


def test_a_one_step_sweep_under_an_io_limit_still_names_its_waits() -> None:
    """The rest window takes out only what was parked: the IO-limited server's commits queued behind
    the log flush are still its wait, judged apart from the lab's idle MariaDB in the same step."""
    rest, step = (ONE_STEP_IO / "hosts" / "localhost" / s / "threads.out" for s in ("rest", "t0008"))
    result = analyze_path(ONE_STEP_IO)
    found = {f.rule: f for f in result.findings}
    io = found["io.throttled"].evidence
    assert (io["pid"], io["limit_key"], io["limit"]) == (IO_DB, "write_max_iops", 40)
    ev = found["wait.profile"].evidence
    futex = ("202", "futex_do_wait")
    load = ONE_STEP_IO / "load" / "t0008" / "sysbench.out"
    queued = _avg_threads(step, IO_DB, *futex, load) - _avg_threads(rest, IO_DB, *futex)
    assert (ev["pid"], ev["threads"], ev["dominant"], ev["baseline"]) == (IO_DB, 8, "lock", True)
    assert ev["dominant_threads"] == pytest.approx(queued) and queued >= 7.0


def test_repeated_steps_of_one_load_have_no_standing_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps of one thread count (`--repeat`) all hold the load's waits, so the least of them is no
    standing part: the sweep above, its steps read as three runs of 16 threads, keeps its 25.0
    futex threads as lock waits instead of taking 25.0 out."""
    from perfkit.dataset import Dataset

    monkeypatch.setattr(Dataset, "step_threads", lambda self: dict.fromkeys(("t0001", "t0004", "t0016"), 16))
    high = _profiles()[("t0016", DB)]
    assert not high.baseline and high.classes["lock"] == pytest.approx(25.0)


# `perfkit collect --local -d 6 -o DIR` on the lab VM 2 s into `sysbench oltp_read_write --threads=8
# --time=12` against the lab MariaDB (tests/fixtures/archives/README.md): no sweep, no baseline
UNDER_LOAD = FIXTURES / "archives" / "collect-under-load"
LAB_DB_UNDER_LOAD = 10825


def test_a_capture_under_someone_elses_load_has_no_io_wait_from_the_completion_thread() -> None:
    """`perfkit collect` while another tool's load runs, the CPU the limit: MariaDB's io_uring reaper
    sleeps for completions (1.0 thread, read from the text) at rest and under load alike; counted as an
    IO wait it drew io.throttled ("the ceiling is above the device") with vda 15 % busy."""
    text = UNDER_LOAD / "hosts" / "localhost" / "threads.out"
    assert _avg_threads(text, LAB_DB_UNDER_LOAD, "426", "io_cqring_wait") == 1.0
    result = analyze_path(UNDER_LOAD)
    [db] = [p for p in waits.profiles(result.dataset) if p.pid == LAB_DB_UNDER_LOAD]
    assert not db.baseline and db.classes["io"] == 0.0
    rules = {f.rule: f for f in result.findings}
    assert "io.throttled" not in rules and rules["cpu.saturated"].severity == "critical"
    # its futex threads, parked and waiting alike, are said to be counted together
    assert "counted among them" in rules["wait.profile"].summary


# `sysbench oltp_write_only --threads=16 --time=20` on the lab MariaDB, then tests/test_threads_lab.py's
# capture: `perfkit collect --local --profile minimal -d 4 -o DIR` while `sysbench oltp_read_write
# --threads=8 --time=8` runs (tests/fixtures/archives/README.md)
AFTER_WRITES = FIXTURES / "archives" / "collect-after-writes"


def test_idle_io_uring_workers_are_no_io_wait() -> None:
    """After a burst of writes the kernel keeps io_uring workers (`iou-wrk-*`) for a while, asleep in
    io_wq_worker waiting for work, at almost no CPU (schedstat): two of them drew io.throttled as
    two threads in IO wait behind a ceiling above the 17 %-busy disk."""
    text = AFTER_WRITES / "hosts" / "localhost" / "threads.out"
    workers = [x.split("\t") for x in text.read_text().splitlines() if "\tiou-wrk-" in x]
    assert {(w[0], w[4]) for w in workers if w[0] == "c"} == {("c", "io_wq_worker")}
    assert sum(int(w[3]) for w in workers if w[0] == "d") < 1_000_000  # under 1 ms of CPU in 4 s
    result = analyze_path(AFTER_WRITES)
    [db] = [p for p in waits.profiles(result.dataset) if p.process == "mariadbd"]
    assert db.classes["io"] == 0.0 and not db.baseline
    rules = {f.rule for f in result.findings}
    assert "io.throttled" not in rules and "cpu.saturated" in rules, rules


def test_only_the_intervals_sampled_while_the_load_ran_count() -> None:
    """In a full run of the lab tests the thread sampler began 3.5 s after a 3 s load had started (the
    host busy starting every capture at once) and sampled the idle server after it: wait.profile
    warned of 1.0 thread on a lock at 0.01 cores. The same one-step archive with its load moved to
    end before the sampler's first interval: no interval of the step is the load's."""
    result = analyze_path(ONE_STEP)
    ds = result.dataset
    [load] = [r for r in ds.records.values() if r.kind == "sysbench"]
    first = ds.of("threads")[-1].frame["timestamp"].min() - pd.Timedelta(seconds=1)  # t0004's first start
    load.started_at, load.ended_at = (str(first - pd.Timedelta(seconds=s)) for s in (4, 1))
    assert [p.step for p in waits.profiles(ds)] == []
    [skipped] = [s for s in analyze(ds, default_thresholds()).skipped if s.rule == "wait.profile"]
    assert skipped.reason == "the thread sampler took no sample while a step's load ran"

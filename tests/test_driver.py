"""The sweep driver's planning, with a fake load generator (the real one: tests/test_run_lab.py)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from perfkit.collectors import captures, driver, session
from perfkit.collectors._load import LoadHost, LoadResult
from perfkit.errors import PerfkitError
from perfkit.manifest import REST_STEP
from perfkit.transport import LOCAL

# A curve like oltp_read_write on this 2-vCPU VM: the peak at 4 threads, a slow decline after it.
CURVE = {1: 200, 2: 380, 3: 600, 4: 820, 5: 805, 6: 790, 8: 780, 11: 760, 16: 700, 32: 650, 64: 600, 128: 560}


class FakeRunner:
    """Writes a sysbench-like summary for the curve's TPS; no process, no database."""

    tool = kind = "sysbench"
    version = "sysbench 1.0.20 (fake)"

    def __init__(self, curve: dict[int, float], p95: dict[int, float] | None = None):
        self.curve, self.p95, self.calls = curve, p95 or {}, []
        self.host = LoadHost()  # this machine: the cool-down reads its TIME_WAIT count

    def run(self, threads: int, time_s: int, out: Path, *, stop: object | None = None) -> LoadResult:
        self.calls.append((threads, time_s))
        time.sleep(0.01)  # a load takes time, however little
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(f"{threads} threads\n")
        tps = self.curve[threads]
        p95 = self.p95.get(threads, 5)
        summary = {"tps": tps, "transactions": tps * time_s, "ignored_errors": 0, "lat_p95_ms": p95}
        return LoadResult("fake", 0, 0.0, float(time_s), 10, summary=summary)


def sweep(tmp_path: Path, plan: driver.Plan, runner: FakeRunner) -> driver.SweepResult:
    opts = session.Options(window=1, specs=captures.MINIMAL)
    return driver.run_sweep(runner, plan, tmp_path / "run", hosts=[], opts=opts)


def test_adaptive_doubles_until_past_the_peak_then_refines_around_it(tmp_path: Path) -> None:
    runner = FakeRunner(CURVE)
    res = sweep(tmp_path, driver.Plan(time_s=60, adaptive=driver.Adaptive(start=1, max_threads=1024)), runner)
    assert runner.calls == [(1, 15), (2, 15), (4, 15), (8, 15), (16, 15), (32, 15), (3, 60), (6, 60)]
    assert [s.role for s in res.steps] == ["probe"] * 6 + ["refine"] * 2
    why = res.manifest["sweep"]["stopped_because"]
    assert why.startswith("throughput passed its peak: 700.0 and 650.0 at 16 and 32 threads")
    # half the load time of the exhaustive 1..64 sweep at 60 s a step (7 × 60 s)
    assert sum(t for _, t in runner.calls) == 210 <= 0.6 * 7 * 60


def test_adaptive_stops_at_the_sla_and_at_max_threads(tmp_path: Path) -> None:
    p95 = {1: 5, 2: 6, 4: 9, 8: 40, 16: 90}
    slow = FakeRunner(CURVE, p95)
    res = sweep(tmp_path / "a", driver.Plan(time_s=12, adaptive=driver.Adaptive(p95_sla_ms=30)), slow)
    assert res.manifest["sweep"]["stopped_because"] == "p95 40 ms at 8 threads breaks the 30 ms SLA"
    assert [t for t, _ in slow.calls] == [1, 2, 4, 8, 3, 6]
    rising = FakeRunner({t: 100 * t for t in CURVE})
    capped = driver.Plan(time_s=12, adaptive=driver.Adaptive(start=2, max_threads=16))
    res = sweep(tmp_path / "b", capped, rising)
    assert res.manifest["sweep"]["stopped_because"] == "the next step would pass --max-threads 16"
    assert [t for t, _ in rising.calls] == [2, 4, 8, 16, 11]


def test_fixed_plan_records_every_step_and_the_overhead(tmp_path: Path) -> None:
    runner = FakeRunner(CURVE)
    res = sweep(tmp_path, driver.Plan(threads=(1, 2, 4), time_s=5, cooldown_max_s=0), runner)
    sw = res.manifest["sweep"]
    assert [s["threads"] for s in sw["steps"]] == [1, 2, 4] and sw["adaptive"] is False
    assert [s["status"] for s in sw["steps"]] == ["ok"] * 3
    assert sw["stopped_because"] == "every planned step ran"
    assert sw["overhead_s"] == pytest.approx(sw["wall_s"] - sw["load_s"] - sw["cooldown_s"], abs=1e-3)
    assert [r["path"] for r in res.manifest["captures"]] == [f"load/t000{t}/sysbench.out" for t in (1, 2, 4)]


def test_repeats_run_the_thread_list_in_rounds(tmp_path: Path) -> None:
    runner = FakeRunner(CURVE)
    res = sweep(tmp_path, driver.Plan(threads=(1, 4), time_s=5, cooldown_max_s=0, repeats=3), runner)
    assert runner.calls == [(1, 5), (4, 5)] * 3  # rounds: a drift over the sweep falls on both alike
    steps = res.manifest["sweep"]["steps"]
    assert [(s["name"], s["threads"]) for s in steps] == [
        ("t0001r1", 1), ("t0004r1", 4), ("t0001r2", 1), ("t0004r2", 4), ("t0001r3", 1), ("t0004r3", 4)
    ]  # fmt: skip
    assert res.manifest["sweep"]["plan"]["repeats"] == 3
    assert [r["path"] for r in res.manifest["captures"]][:2] == [
        "load/t0001r1/sysbench.out",
        "load/t0004r1/sysbench.out",
    ]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"threads": ()}, "threads"),
        ({"threads": (4, 4)}, "twice"),
        ({"threads": (1,), "on_failure": "retry"}, "on_failure"),
        ({"threads": (1,), "repeats": 0}, "at least 1"),
        ({"adaptive": driver.Adaptive(), "repeats": 2}, "not --adaptive"),
    ],
)
def test_bad_plans_are_refused(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        driver.Plan(**kw)
    with pytest.raises(ValueError, match="start"):
        driver.Adaptive(start=8, max_threads=4)


def test_a_warm_up_runs_before_each_measured_step(tmp_path: Path) -> None:
    runner = FakeRunner(CURVE)
    res = sweep(tmp_path, driver.Plan(threads=(2, 4), time_s=5, warmup_s=2, cooldown_max_s=0), runner)
    assert runner.calls == [(2, 2), (2, 5), (4, 2), (4, 5)]
    assert (tmp_path / "run" / "load" / "t0002" / "sysbench-warmup.out").exists()
    assert all(s.warmup_s > 0 for s in res.steps)
    # the warm-up's output is kept and listed, but not as a measured step
    kinds = [(r["path"].split("/")[1], r["kind"]) for r in res.manifest["captures"]]
    assert kinds == [(step, kind) for step in ("t0002", "t0004") for kind in ("sysbench_warmup", "sysbench")]


def test_an_existing_archive_is_refused_before_any_step(tmp_path: Path) -> None:
    (tmp_path / "run.tar.gz").write_bytes(b"the previous sweep")
    runner = FakeRunner(CURVE)
    opts = session.Options(window=1, specs=captures.MINIMAL)
    with pytest.raises(PerfkitError, match="run.tar.gz: exists; perfkit never overwrites"):
        driver.run_sweep(
            runner, driver.Plan(threads=(1,), time_s=1), tmp_path / "run.tar.gz", hosts=[], opts=opts
        )
    assert runner.calls == [] and (tmp_path / "run.tar.gz").read_bytes() == b"the previous sweep"
    assert not list(tmp_path.glob("perfkit-run-*"))


def test_an_archive_that_appears_during_the_sweep_is_not_replaced(tmp_path: Path) -> None:
    class Meanwhile(FakeRunner):
        def run(self, threads: int, time_s: int, out: Path, *, stop: object | None = None) -> LoadResult:
            (tmp_path / "run.tar.gz").write_bytes(b"written meanwhile")
            return super().run(threads, time_s, out, stop=stop)

    opts = session.Options(window=1, specs=captures.MINIMAL, run_id="meanwhile")
    plan = driver.Plan(threads=(1,), time_s=1, cooldown_max_s=0)
    res = driver.run_sweep(Meanwhile(CURVE), plan, tmp_path / "run.tar.gz", hosts=[], opts=opts)
    assert (tmp_path / "run.tar.gz").read_bytes() == b"written meanwhile"
    [staging] = tmp_path.glob("perfkit-run-*")
    assert res.path == staging / "meanwhile" and "not packed (File exists)" in res.manifest["reason"]


THREADS_ONLY = tuple(s for s in captures.MINIMAL if s.id == "threads")


@pytest.mark.parametrize(
    ("plan", "rest"),
    [
        (driver.Plan(threads=(4,), time_s=1, cooldown_max_s=0), True),
        (driver.Plan(threads=(4,), time_s=1, cooldown_max_s=0, repeats=2), True),
        (driver.Plan(threads=(1, 2), time_s=1, cooldown_max_s=0), False),
        (driver.Plan(threads=(4,), time_s=1, cooldown_max_s=0, rest_s=0), False),
    ],
)
def test_a_sweep_of_one_thread_count_samples_the_threads_at_rest_first(
    tmp_path: Path, plan: driver.Plan, rest: bool
) -> None:
    """The real thread sampler on this machine, the fake load: a sweep of one thread count (repeated
    or not) has no lighter step to show what a server parks whatever the load, so its threads are
    sampled for `rest_s` seconds before the first step (analyzers/waits.py's baseline); steps at two
    counts show it themselves."""
    opts = session.Options(window=1, specs=THREADS_ONLY)
    res = driver.run_sweep(FakeRunner(CURVE), plan, tmp_path / "run", hosts=[LOCAL], opts=opts)
    recs = [r for r in res.manifest["captures"] if r.get("step") == REST_STEP]
    assert res.manifest["sweep"]["plan"]["rest_s"] == plan.rest_s
    if not rest:
        assert recs == [] and not (tmp_path / "run" / "hosts" / "localhost" / REST_STEP).exists()
        return
    [rec] = recs
    assert (rec["kind"], rec["status"], rec["path"]) == ("threads", "ok", "hosts/localhost/rest/threads.out")
    text = (tmp_path / "run" / rec["path"]).read_text()
    # one report a second of the window, each before the first step's load began
    stamps = [float(line.split()[1]) for line in text.splitlines() if line.startswith("= ")]
    assert len(stamps) >= plan.rest_s
    first = datetime.fromisoformat(res.manifest["sweep"]["steps"][0]["started_at"]).timestamp()
    assert max(stamps) <= first


class TimedRunner(FakeRunner):
    """The fake load, noting when each step's load began (this machine's clock)."""

    def __init__(self, curve: dict[int, float]):
        super().__init__(curve)
        self.began: list[float] = []

    def run(self, threads: int, time_s: int, out: Path, *, stop: object | None = None) -> LoadResult:
        self.began.append(time.time())
        return super().run(threads, time_s, out, stop=stop)


def test_a_step_s_load_begins_once_the_thread_sampler_samples(tmp_path: Path) -> None:
    """The real captures of the minimal set on this machine: the thread sampler takes most of a second
    to start and choose its processes (then, a 0.3 s probe for the busiest). Started with the window's
    other captures, it began sampling after a short step's load had begun, and on a busy host after
    it had ended (analyzers/waits.py then has no interval of the load). It starts first now, and the
    load waits until it samples."""
    runner = TimedRunner(CURVE)
    plan = driver.Plan(threads=(1, 2), time_s=2, cooldown_max_s=0)
    opts = session.Options(window=2, specs=captures.MINIMAL, sampler=False)
    res = driver.run_sweep(runner, plan, tmp_path / "run", hosts=[LOCAL], opts=opts)
    threads = [r for r in res.manifest["captures"] if r["kind"] == "threads"]
    assert [(r["step"], r["status"]) for r in threads] == [("t0001", "ok"), ("t0002", "ok")]
    for rec, began in zip(threads, runner.began, strict=True):
        text = (tmp_path / "run" / rec["path"]).read_text()
        selected = [float(line.split()[2]) for line in text.splitlines() if line.startswith("# select ")]
        assert selected, text[:500]  # this machine always has processes to choose
        # stamps are printed to the millisecond: a choice made 0.1 ms before the load reads as after it
        assert min(selected) <= began + 0.0005, (rec["step"], min(selected) - began)

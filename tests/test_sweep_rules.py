"""Sweep model and sweep.* / load.underdriven rules on the seeds' data and on counter-examples."""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.analyzers import analyze
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.parsers import sweep as sweep_parser

from .conftest import FIXTURES


def table(text: str) -> Dataset:
    return Dataset(
        source="t.csv",
        manifest=None,
        captures=[Capture("t.csv", "sweep", None, None, sweep_parser.parse(text))],
    )


def rules_fired(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in analyze(table(text), default_thresholds()).findings:
        out.setdefault(f.rule, []).append(f)
    return out


def test_seed002_peak_32_and_retrograde() -> None:
    ds = Dataset(
        "seed002",
        None,
        [
            Capture(
                "s.csv", "sweep", None, None, sweep_parser.parse(FIXTURES / "sweep" / "seed002-qps-p95.txt")
            )
        ],
    )
    result = analyze(ds, default_thresholds())
    assert result.sweep.metric == "qps"
    assert result.sweep.peak.threads == 32 and result.sweep.peak.tps == 3844
    retro = [f for f in result.findings if f.rule == "sweep.retrograde"]
    assert len(retro) == 1
    ev = retro[0].evidence
    assert ev["peak_threads"] == 32 and ev["highest_threads"] == 256
    assert ev["drop_pct"] == pytest.approx((3844 - 1456) / 3844 * 100)
    assert ev["dominant"] == "coherency"  # κ·N(N−1) beats σ(N−1) at 256 threads
    assert "the coherency (κ) term dominates" in retro[0].summary
    assert "by construction" not in retro[0].summary  # more levels than coefficients: a real fit
    # QPS × p95 is an upper bound of in-flight requests: 1456 × 14.73 ms ≈ 21 of 256 threads.
    under = [f for f in result.findings if f.rule == "load.underdriven"][0]
    assert under.evidence["threads"] == 256
    assert under.evidence["in_flight"] == pytest.approx(1456 * 14.73 / 1000)


def test_a_fit_through_three_levels_says_it_tests_nothing() -> None:
    """The small-redo-log scenario's sweep (sysbench oltp_write_only at 1, 4, 16 threads on a 4 MiB
    redo log, TPS from its report): the USL has 3 coefficients, so through 3 levels it is exact (R²
    1.000), and its two terms at 16 threads were 5.93 and 6.07. The finding said "the coherency (κ) term
    dominates (5.93 vs 6.07)", unlabelled and from a fit that could not miss."""
    [f] = rules_fired("threads,tps\n1,2594.3\n4,4168.5\n16,3193.9\n")["sweep.retrograde"]
    ev = f.evidence
    assert ev["usl_r2"] == pytest.approx(1.0) and ev["dominant"] == "neither"
    assert ev["contention_term"] == pytest.approx(ev["usl_sigma"] * 15)
    assert ev["coherency_term"] == pytest.approx(ev["usl_kappa"] * 16 * 15)
    assert 1 < ev["coherency_term"] / ev["contention_term"] < 1.25
    assert "weigh about the same (σ(N−1) = 5.93, κN(N−1) = 6.07)" in f.summary
    assert "3 load levels for 3 coefficients" in f.summary and "dominates" not in f.summary


def test_linear_sweep_is_not_saturated_and_has_no_knee() -> None:
    fired = rules_fired("threads,tps\n1,100\n2,199\n4,395\n8,780\n")
    assert set(fired) == {"sweep.not-saturated"}
    assert fired["sweep.not-saturated"][0].evidence["elasticity"] == pytest.approx(0.981, abs=0.01)


def test_plateau_has_knee_but_no_retrograde() -> None:
    fired = rules_fired("threads,tps\n1,100\n2,195\n4,380\n8,420\n16,425\n")
    assert fired["sweep.knee"][0].evidence["knee_threads"] == 4
    assert "sweep.retrograde" not in fired and "sweep.not-saturated" not in fired


def test_consistent_little_concurrency_is_not_underdriven() -> None:
    # 8 threads × (1000 / 8 ms) ... TPS × RT = 8 exactly: every thread is in a request.
    fired = rules_fired("threads,tps,lat_ms\n8,1000,8\n16,1900,8.4\n32,2000,16\n")
    assert "load.underdriven" not in fired


def test_low_little_concurrency_is_underdriven() -> None:
    fired = rules_fired("threads,tps,lat_ms\n8,1000,8\n64,1100,10\n")
    f = fired["load.underdriven"][0]
    assert f.evidence["threads"] == 64 and f.evidence["in_flight"] == pytest.approx(11.0)


def _sysbench_capture(rows: list[tuple[float, int, float, float]], threads: int) -> Capture:
    frame = pd.DataFrame(
        {
            "run": 0,
            "time_s": [r[0] for r in rows],
            "threads": [r[1] for r in rows],
            "tps": [r[2] for r in rows],
            "qps": float("nan"),
            "lat_ms": [r[3] for r in rows],
            "lat_pct": 95.0,
            "errors_s": 0.0,
        }
    )
    frame.attrs["runs"] = [{"run": 0, "threads": threads, "percentile": 95, "summary": {}}]
    return Capture(f"t{threads}.log", "sysbench", None, None, frame)


def test_tps_and_rt_falling_together_inside_a_step_is_underdriven() -> None:
    # seed 003's pattern: both TPS and RT fall: the pressure stops arriving.
    rows = [
        (t, 100, tps, lat)
        for t, tps, lat in [
            (1, 900, 50),
            (2, 1000, 100),
            (3, 1000, 100),
            (4, 1000, 100),
            (5, 950, 95),
            (6, 800, 80),
            (7, 700, 70),
            (8, 600, 60),
            (9, 500, 50),
            (10, 450, 45),
        ]
    ]
    ds = Dataset("x", None, [_sysbench_capture(rows, 100)])
    found = [f for f in analyze(ds, default_thresholds()).findings if f.rule == "load.underdriven"]
    assert any("fall together" in f.title for f in found)


def test_tps_falling_with_rt_rising_is_unstable_not_underdriven() -> None:
    rows = [
        (t, 100, tps, lat)
        for t, tps, lat in [
            (1, 900, 50),
            (2, 1000, 100),
            (3, 950, 105),
            (4, 900, 110),
            (5, 800, 125),
            (6, 700, 140),
            (7, 600, 170),
            (8, 500, 200),
            (9, 450, 220),
            (10, 400, 250),
        ]
    ]
    ds = Dataset("x", None, [_sysbench_capture(rows, 100)])
    fired = {f.rule for f in analyze(ds, default_thresholds()).findings}
    assert "sweep.unstable" in fired and "load.underdriven" not in fired


def test_steady_step_is_stable() -> None:
    rows = [(t, 8, 100 + (t % 3), 10.0) for t in range(1, 11)] + [(11, 5, 30.0, 10.0)]
    ds = Dataset("x", None, [_sysbench_capture(rows, 8)])
    result = analyze(ds, default_thresholds())
    assert result.sweep.steps[0].stable is True
    assert "sweep.unstable" not in {f.rule for f in result.findings}
    # warm-up: the first of 10 intervals is dropped, the shutdown tail (thds below 8) too
    assert len(result.sweep.steps[0].intervals) == 9


def test_rules_skip_without_load_data() -> None:
    result = analyze(Dataset("x", None, []), default_thresholds())
    skipped = {s.rule: s.reason for s in result.skipped}
    assert "sweep.knee" in skipped and "no load-generator output" in skipped["sweep.knee"]
    assert skipped["disk.serial-small-io"] == "no iostat or diskstats capture"


# seed 003: 13 511 TPS at 380 ms, then TPS falls and the client's RT rises while the inner tier's RT
# falls. Client intervals (sysbench's shape) with TPS 13500 -> 9000 and p95 380 -> 520 ms; the DB
# sampler's per-second server RT over the same window.
_SEED003_ROWS = [
    (1, 100, 1000.0, 300.0),  # warm-up interval, dropped
    (2, 100, 13500.0, 380.0),
    (3, 100, 13500.0, 380.0),
    (4, 100, 13500.0, 380.0),
    (5, 100, 12000.0, 420.0),
    (6, 100, 11000.0, 450.0),
    (7, 100, 10000.0, 480.0),
    (8, 100, 9000.0, 520.0),
    (9, 100, 9000.0, 520.0),
    (10, 100, 9000.0, 520.0),
]
_T0 = pd.Timestamp("2026-11-23T08:00:00Z")


def _server_ds(server_rt_ms: list[float]) -> Dataset:
    """The sysbench step above plus mysql_status samples at T0+1 s .. T0+10 s, as the parser gives them
    (questions_s, threads_running_avg = Little's law's in-flight statements, server_rt_ms)."""
    status = pd.DataFrame(
        {
            "timestamp": [_T0 + pd.Timedelta(seconds=i) for i in range(1, len(server_rt_ms) + 1)],
            "host": "127.0.0.1:3306",
            "questions_s": 1000.0,
            "threads_running_avg": [rt / 1000 * 1000 for rt in server_rt_ms],
            "server_rt_ms": server_rt_ms,
        }
    )
    load = _sysbench_capture(_SEED003_ROWS, 100)
    manifest = {
        "captures": [
            {
                "path": load.path,
                "started_at": _T0.isoformat(),
                "ended_at": (_T0 + pd.Timedelta(seconds=11)).isoformat(),
            }
        ]
    }
    return Dataset(
        "x", manifest, [load, Capture("db/global_status.jsonl", "mysql_status", "db", None, status)]
    )


def test_tps_and_server_rt_falling_while_client_rt_rises_is_underdriven() -> None:
    # 10 samples in [T0+1, T0+10.5]; the first (warm-up share, ceil(10 x 0.1) = 1) dropped: 9 left.
    ds = _server_ds([210, 200, 200, 200, 180, 170, 160, 150, 150, 150])
    [f] = [f for f in analyze(ds, default_thresholds()).findings if f.rule == "load.underdriven"]
    ev = f.evidence
    # steady client intervals 2..10 (9): first third 13500 TPS / 380 ms, last third 9000 / 520 ms
    assert ev["tps_drop_pct"] == pytest.approx((1 - 9000 / 13500) * 100)
    assert ev["lat_drop_pct"] == pytest.approx((1 - 520 / 380) * 100)  # negative: the client's RT rose
    # server RT: first third 200 ms, last third 150 ms
    assert (ev["server_rt_first_third_ms"], ev["server_rt_last_third_ms"]) == (200, 150)
    assert ev["server_rt_drop_pct"] == pytest.approx(25.0) and ev["judged_by"] == "server RT (DB sampler)"
    assert "fall together" in f.title and "pressure stops before the database" in f.summary


def test_server_rt_rising_with_falling_tps_is_not_underdriven() -> None:
    # the same client data, but the database slows down: it is degrading, the load does arrive
    ds = _server_ds([200, 200, 200, 200, 230, 260, 290, 320, 320, 320])
    fired = {f.rule for f in analyze(ds, default_thresholds()).findings}
    assert "load.underdriven" not in fired and "sweep.unstable" in fired


def test_together_threshold_override_stops_the_server_case() -> None:
    th = default_thresholds()
    th["load.underdriven"]["together_drop_pct"] = 30  # TPS fell 33%, server RT only 25%
    ds = _server_ds([210, 200, 200, 200, 180, 170, 160, 150, 150, 150])
    assert "load.underdriven" not in {f.rule for f in analyze(ds, th).findings}


def test_real_sysbench_intervals_without_a_server_do_not_fall_together() -> None:
    # seed 000's 1200-thread run collapses with p95 rising (856 -> 435 TPS, 2.9 s -> 10.5 s): degrading
    from perfkit.parsers import sysbench as sb

    frame = sb.parse(FIXTURES / "sysbench" / "seed000-write-only-multi-run.txt")
    ds = Dataset("x", None, [Capture("seed000.log", "sysbench", None, None, frame)])
    under = [f for f in analyze(ds, default_thresholds()).findings if f.rule == "load.underdriven"]
    assert not any("fall together" in f.title for f in under)


def _unstable(path: str) -> list:
    from perfkit.parsers import sysbench as sb

    frame = sb.parse(FIXTURES / "sysbench" / path)
    ds = Dataset("x", None, [Capture(path, "sysbench", None, None, frame)])
    return [f for f in analyze(ds, default_thresholds()).findings if f.rule == "sweep.unstable"]


def test_a_step_that_swings_is_told_from_one_that_collapses() -> None:
    # sysbench stopped a second in every two: TPS alternates around a level (no trend to speak of)
    [f] = _unstable("1.0.20-ro-client-stopped.txt")
    ev = f.evidence
    assert f.title == "Throughput swings inside the 4-thread step"
    assert ev["trend_r2"] < 0.5 and ev["cv_pct"] > 20
    # the steady intervals (the first second dropped as warm-up), as printed
    assert (ev["tps_min"], ev["tps_max"]) == (846.85, 1846.0)
    assert "swung between 846.9 and 1,846.0" in f.summary and "p95 latency up to 995.5 ms" in f.summary
    assert "stalls" in f.explanation and any("low intervals" in s for s in f.next_steps)
    # seed 000's 1200-thread run falls along its trend (856 -> 435 TPS): a collapse, not a swing
    [g] = [g for g in _unstable("seed000-write-only-multi-run.txt") if g.evidence["threads"] == 1200]
    assert g.title == "Throughput collapses inside the 1200-thread step" and g.evidence["trend_r2"] > 0.8

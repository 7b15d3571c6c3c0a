"""parsers/sysbench.py against real captures (tests/fixtures/sysbench/, see README.md there).

Values asserted here are read off the raw fixture text; the full records live in the
`.expected.json` files checked by test_fixtures.py.
"""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import sysbench

FIX = Path(__file__).resolve().parent / "fixtures" / "sysbench"
SEED000 = FIX / "seed000-write-only-multi-run.txt"
SEED002 = FIX / "seed002-1.0.14-point-select.txt"


def runs(df: pd.DataFrame) -> list[dict]:
    return df.attrs["runs"]


def row(df: pd.DataFrame, run: int, time_s: float) -> pd.Series:
    hit = df[(df["run"] == run) & (df["time_s"] == time_s)]
    assert len(hit) == 1, f"no single row for run {run} at {time_s}s"
    return hit.iloc[0]


# ---------------------------------------------------------------- seeds


def test_seed000_splits_into_seven_runs_with_their_threads() -> None:
    df = sysbench.parse(SEED000)
    assert [r["threads"] for r in runs(df)] == [8, 24, 72, 216, 648, 800, 1200]
    assert [r["run"] for r in runs(df)] == list(range(7))
    assert df.groupby("run").size().tolist() == [6] * 7
    assert df.groupby("run")["time_s"].agg(list).tolist() == [[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]] * 7
    assert all(r["version"] is None and r["summary"] == {} for r in runs(df))


def test_seed000_keeps_the_1200_thread_collapse_verbatim() -> None:
    df = sysbench.parse(SEED000)
    r = row(df, 6, 50.0)
    assert r["threads"] == 1200
    assert r["tps"] == pytest.approx(434.60)
    assert r["qps"] == pytest.approx(2608.60)
    assert r["lat_ms"] == pytest.approx(10531.32)
    assert r["lat_pct"] == 95
    assert r["errors_s"] == pytest.approx(0.20)
    assert (r["reads_s"], r["writes_s"], r["other_s"]) == pytest.approx((0.0, 1740.80, 867.80))
    first = row(df, 0, 10.0)
    assert (first["threads"], first["tps"], first["lat_ms"]) == (8, 25.09, 411.96)


def test_seed002_summary() -> None:
    df = sysbench.parse(SEED002)
    (run,) = runs(df)
    assert run["version"] == "1.0.14"
    assert run["threads"] == 8
    assert run["report_interval_s"] == 10
    assert run["percentile"] == 95
    s = run["summary"]
    assert s["transactions"] == 402895
    assert s["tps"] == pytest.approx(3357.33)
    assert s["queries"] == 402895 and s["qps"] == pytest.approx(3357.33)
    assert s["ignored_errors"] == 0 and s["reconnects"] == 0
    assert s["total_time_s"] == pytest.approx(120.0029)
    assert s["events"] == 402895
    assert (s["lat_min_ms"], s["lat_avg_ms"], s["lat_max_ms"]) == pytest.approx((1.81, 2.38, 18.26))
    assert s["lat_p95_ms"] == pytest.approx(2.76)
    assert s["lat_sum_ms"] == pytest.approx(959205.88)
    assert len(df) == 12 and df["time_s"].iloc[-1] == 120.0
    assert row(df, 0, 80.0)["lat_ms"] == pytest.approx(2.71)


# ---------------------------------------------------------------- lab captures


def test_multi_run_file_split_at_banners() -> None:
    df = sysbench.parse(FIX / "1.0.20-rw-sweep-t1-t4-t16.txt")
    assert [r["threads"] for r in runs(df)] == [1, 4, 16]
    assert [r["summary"]["transactions"] for r in runs(df)] == [772, 2176, 2016]
    assert df.groupby("run")["threads"].first().tolist() == [1, 4, 16]


def test_a_second_printed_twice_is_the_same_run() -> None:
    """sysbench stopped a second at a time: after each stop its reporter prints the late report and
    the one due at once with the same second. One run, every line a row in the printed order."""
    path = FIX / "1.0.20-ro-client-stopped.txt"
    df = sysbench.parse(path)
    assert len(runs(df)) == 1 and df["run"].eq(0).all()
    printed = [ln for ln in path.read_text().splitlines() if ln.startswith("[ ")]
    assert len(df) == len(printed) == 12
    assert df["time_s"].tolist() == [float(ln.split("s ]")[0][2:]) for ln in printed]
    assert df["time_s"].tolist()[1:3] == [3.0, 3.0] and df["tps"].tolist()[1:3] == [847.64, 1591.05]
    assert runs(df)[0]["summary"]["transactions"] == 12004


def test_err_s_counts_deadlocks() -> None:
    df = sysbench.parse(FIX / "1.0.20-rw-t4-summary.txt")
    assert df["errors_s"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert runs(df)[0]["summary"]["ignored_errors"] == 1
    assert row(df, 0, 1.0)["qps"] == pytest.approx(18481.45)


def test_percentile_zero_means_disabled() -> None:
    df = sysbench.parse(FIX / "1.0.20-point-select-percentile-0.txt")
    assert df["lat_ms"].isna().all()
    assert (df["lat_pct"] == 0).all()
    run = runs(df)[0]
    assert run["percentile"] == 0
    assert not any(k.startswith("lat_p") for k in run["summary"])
    assert run["summary"]["lat_avg_ms"] == pytest.approx(0.04)


def test_percentile_99_and_histogram() -> None:
    df = sysbench.parse(FIX / "1.0.20-point-select-p99-histogram.txt")
    run = runs(df)[0]
    assert run["percentile"] == 99 and (df["lat_pct"] == 99).all()
    assert run["summary"]["lat_p99_ms"] == pytest.approx(0.18)
    assert "lat_p95_ms" not in run["summary"]
    hist = run["histogram"]
    assert len(hist) == 190
    assert hist[0] == [0.026, 2] and hist[-1] == [4.176, 2]
    assert sum(count for _, count in hist) == run["summary"]["events"] == 172761


def test_rate_queue_lines_are_not_rows() -> None:
    df = sysbench.parse(FIX / "1.0.20-point-select-rate.txt")
    assert df["time_s"].tolist() == [1.0, 2.0, 3.0]
    assert len(runs(df)) == 1 and df["tps"].tolist() == [209.76, 223.11, 209.98]


def test_cpu_eps_lines() -> None:
    df = sysbench.parse(FIX / "1.0.20-cpu-eps.txt")
    assert df["tps"].tolist() == [8698.37, 8769.58]
    assert df["threads"].tolist() == [2, 0]  # the shutdown tail stays: the analyzer trims it
    assert df[["qps", "reads_s", "errors_s"]].isna().all().all()
    run = runs(df)[0]
    assert run["threads"] == 2 and run["summary"]["eps"] == pytest.approx(8729.29)
    assert "transactions" not in run["summary"]


def test_forced_shutdown() -> None:
    df = sysbench.parse(FIX / "1.0.20-rw-forced-shutdown.txt")
    run = runs(df)[0]
    assert run["unfinished_transactions"] == 16
    assert run["fatal"] == "FATAL: The --max-time limit has expired, forcing shutdown..."
    assert run["summary"]["transactions"] == 1476


def test_access_denied_is_a_run_with_fatal_and_no_rows() -> None:
    df = sysbench.parse(FIX / "1.0.20-access-denied.txt")
    assert len(df) == 0 and list(df.columns) == list(sysbench.SCHEMA)
    (run,) = runs(df)
    assert run["fatal"].startswith("FATAL: unable to connect to MySQL server")
    assert run["threads"] == 2 and run["summary"] == {}


def test_killed_run_has_no_summary() -> None:
    df = sysbench.parse(FIX / "1.0.20-rw-killed-sigint.txt")
    assert len(df) == 2 and runs(df)[0]["summary"] == {} and df.attrs["dropped_lines"] == 0


def test_byte_capped_capture_drops_the_cut_line() -> None:
    path = FIX / "1.0.20-rw-byte-capped.txt"
    assert not path.read_bytes().endswith(b"\n")
    df = sysbench.parse(path)
    assert df["time_s"].tolist() == [1.0, 2.0]
    assert df.attrs["dropped_lines"] == 1


# ---------------------------------------------------------------- line forms (inline)

BANNER = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n"


def test_err_s_without_colon() -> None:
    # sysbench.report_default (Lua hook) prints "err/s 0.00" without the colon
    text = BANNER + (
        "[ 1s ] thds: 4 tps: 100.00 qps: 2000.00 (r/w/o: 1400.00/400.00/200.00) "
        "lat (ms,95%): 40.37 err/s 3.00 reconn/s: 0.00\n"
    )
    r = sysbench.parse(text).iloc[0]
    assert (r["tps"], r["errors_s"], r["lat_ms"], r["reconnects_s"]) == (100.0, 3.0, 40.37, 0.0)


def test_legacy_05_line() -> None:
    text = (
        "[   8s] threads: 25000, tps: 0.00, reads: 33187.01, writes: 0.00, "
        "response time: 979.24ms (95%), errors: 0.00, reconnects:  0.00\n"
    )
    df = sysbench.parse(text)
    r = df.iloc[0]
    assert (r["time_s"], r["threads"], r["tps"]) == (8.0, 25000, 0.0)
    assert (r["reads_s"], r["writes_s"]) == (33187.01, 0.0)
    assert math.isnan(r["qps"]) and math.isnan(r["other_s"])
    assert (r["lat_ms"], r["lat_pct"]) == (979.24, 95.0)
    assert runs(df)[0]["threads"] == 25000


def test_legacy_05_reads_per_second_form() -> None:
    text = (
        "[  10s] threads: 8, tps: 1111.51, reads/s: 15568.42, writes/s: 4446.13, response time: 9.95ms (99%)"
    )
    r = sysbench.parse(text + "\n").iloc[0]
    assert (r["reads_s"], r["writes_s"], r["lat_ms"], r["lat_pct"]) == (15568.42, 4446.13, 9.95, 99.0)
    assert math.isnan(r["errors_s"])


def test_legacy_synthetic_fixture() -> None:
    df = sysbench.parse(FIX / "0.5-oltp-legacy.synthetic.txt")
    run = runs(df)[0]
    assert run["version"] == "0.5" and run["threads"] == 16 and run["report_interval_s"] == 2
    assert run["summary"]["lat_p95_ms"] == pytest.approx(36.12)
    assert run["summary"]["lat_max_ms"] == pytest.approx(2104.57)
    assert "queries" not in run["summary"]  # 0.5 prints read/write requests, not queries
    no_events = row(df, 0, 8.0)
    assert no_events["tps"] == 0 and math.isnan(no_events["lat_ms"])


def test_sysbench_11_throughput_layout() -> None:
    text = """sysbench 1.1.0-df89d34 (using bundled LuaJIT 2.1.0-beta3)

[ 1s ] thds: 8 tps: 540.00 qps: 10800.00 (r/w/o: 7560.00/2160.00/1080.00) lat (ms,99%): 27.17 err/s: 0.00
SQL statistics:
    queries performed:
        read:                            61109440
        write:                           17459840
        other:                           8729920
        total:                           87299200
    transactions:                        4364960 (7268.30 per sec.)
    queries:                             87299200 (145366.09 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

Throughput:
    events/s (eps):                      7268.3045
    time elapsed:                        600.5472s
    total number of events:              4364960

Latency (ms):
         min:                                    2.41
         avg:                                    8.80
         max:                                 2133.89
         95th percentile:                        9.39
         99th percentile:                       27.17
        999th percentile:                      816.63
         sum:                             38403928.94
"""
    run = runs(sysbench.parse(text))[0]
    s = run["summary"]
    assert run["version"] == "1.1.0-df89d34"
    assert (s["transactions"], s["tps"], s["queries"], s["qps"]) == (4364960, 7268.30, 87299200, 145366.09)
    assert (s["eps"], s["total_time_s"], s["events"]) == (7268.3045, 600.5472, 4364960)
    assert (s["lat_p95_ms"], s["lat_p99_ms"], s["lat_p999_ms"]) == (9.39, 27.17, 816.63)
    assert run["percentile"] == 99  # from the report line


def test_new_run_when_reports_resume_after_a_summary() -> None:
    one = (FIX / "1.0.20-rw-t4-summary.txt").read_text()
    body = one[one.index("[ 1s ]") :]  # no banner, no options: as a grep'd log would hold it
    df = sysbench.parse(body + body)
    assert [r["run"] for r in runs(df)] == [0, 1]
    assert df.groupby("run").size().tolist() == [5, 5]
    assert [r["summary"]["transactions"] for r in runs(df)] == [4474, 4474]
    assert [r["threads"] for r in runs(df)] == [4, 4]  # max thds seen: no "Number of threads" line


def test_unrelated_lines_are_fine_and_host_is_set() -> None:
    text = BANNER + (
        "WARNING: Both event and time limits are disabled, running an endless test\n"
        "Initializing worker threads...\n\nThreads started!\n\n"
        "[ 1s ] thds: 2 tps: 10.00 qps: 200.00 (r/w/o: 140.00/40.00/20.00) lat (ms,95%): 1.00 err/s: 0.00\n"
        "some note someone appended\n"
        "[ 2s ] thds: 2 tps: 11.00 qps: 220.00 (r/w/o: 154.00/44.00/22.00) lat (ms,95%): 1.10 err/s: 0.00\n"
    )
    df = sysbench.parse(text, host="db1")
    assert df["tps"].tolist() == [10.0, 11.0]
    assert df["host"].tolist() == ["db1", "db1"]
    assert {c: str(t) for c, t in df.dtypes.items()} == sysbench.SCHEMA


def test_streams_and_crlf() -> None:
    raw = SEED002.read_bytes().replace(b"\n", b"\r\n")
    from_bytes = sysbench.parse(io.BytesIO(raw))
    from_text = sysbench.parse(io.StringIO(SEED002.read_text()))
    assert from_bytes.equals(from_text)
    assert runs(from_bytes)[0]["summary"]["transactions"] == 402895


# ---------------------------------------------------------------- robustness


def test_empty_input() -> None:
    for text in ("", "\n\n"):
        df = sysbench.parse(text)
        assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == sysbench.SCHEMA
        assert runs(df) == [] and df.attrs["dropped_lines"] == 0


def test_truncated_last_line_dropped_and_counted() -> None:
    text = SEED000.read_text()
    cut = text[: text.rindex("reconn/s: 0.00") + len("reconn/s: 0.0")]  # "0.0" of "0.00", no newline
    df = sysbench.parse(cut)
    assert len(df) == 41 and df.attrs["dropped_lines"] == 1
    # a half line that kept its newline (e.g. the shell added one) is dropped too, at the very end only
    half = text[: text.rindex("[ 60s ] thds: 1200") + len("[ 60s ] thds: 1200 tps:")] + "\n"
    df = sysbench.parse(half)
    assert len(df) == 41 and df.attrs["dropped_lines"] == 1


def test_malformed_report_line_mid_file_names_its_line() -> None:
    lines = SEED002.read_text().splitlines(keepends=True)
    assert lines[14].startswith("[ 30s ]")  # line 15 of the file
    lines[14] = "[ 30s ] thds: 8 tps: 33x5.28 qps: 3345.28\n"
    with pytest.raises(ParseError) as info:
        sysbench.parse("".join(lines))
    assert info.value.line_no == 15
    assert info.value.kind == "sysbench" and "33x5.28" in info.value.line


@pytest.mark.parametrize("thds", ["99999999999999999999999", "9007199254740993"])
def test_thds_past_what_a_float_holds_names_its_line(thds: str) -> None:
    lines = SEED002.read_text().splitlines(keepends=True)
    lines[14] = lines[14].replace("thds: 8 ", f"thds: {thds} ", 1)  # line 15, `[ 30s ]`
    with pytest.raises(ParseError, match="thds") as info:
        sysbench.parse("".join(lines))
    assert info.value.line_no == 15 and thds in info.value.line


def test_garbage_mid_file_names_its_line(tmp_path: Path) -> None:
    lines = SEED000.read_text().splitlines(keepends=True)
    lines.insert(20, "\x00\x00\x7fELF\x02\x01\x01\n")
    path = tmp_path / "sysbench.log"
    path.write_text("".join(lines))
    with pytest.raises(ParseError) as info:
        sysbench.parse(path)
    assert info.value.line_no == 21
    assert info.value.path == str(path)
    assert "garbage" in info.value.reason


def test_invalid_utf8_mid_file() -> None:
    raw = SEED002.read_bytes().split(b"\n")
    raw.insert(5, b"\xff\xfe\xfa broken")
    with pytest.raises(ParseError) as info:
        sysbench.parse(io.BytesIO(b"\n".join(raw)))
    assert info.value.line_no == 6


def test_malformed_summary_value_is_an_error() -> None:
    text = SEED002.read_text().replace(
        "transactions:                        402895 (3357.33 per sec.)", "transactions: lots"
    )
    with pytest.raises(ParseError) as info:
        sysbench.parse(text)
    assert "transactions: lots" in info.value.line


def test_text_without_sysbench_structure() -> None:
    for text in ("hello world\nthis is a readme\n", "\x00\x01\x02\ufffd binary\n" * 20):
        with pytest.raises(ParseError) as info:
            sysbench.parse(text)
        assert info.value.line_no >= 1


def test_only_parse_error_escapes_on_mutations() -> None:
    text = (FIX / "1.0.20-point-select-p99-histogram.txt").read_text()
    for cut in range(0, len(text), 97):  # every prefix shape: mid-banner, mid-row, mid-histogram ...
        try:
            df = sysbench.parse(text[:cut])
        except ParseError:
            continue
        assert list(df.columns) == list(sysbench.SCHEMA)
    for pos in range(0, len(text), 211):
        for junk in ("\x00", "[ 5s ]", ":", "|", "nan", "\n[ 1s ] thds:"):
            with contextlib.suppress(ParseError):
                sysbench.parse(text[:pos] + junk + text[pos:])


# ---------------------------------------------------------------- sniff


@pytest.mark.parametrize("path", sorted(FIX.glob("*.txt")), ids=lambda p: p.name)
def test_sniff_claims_every_fixture(path: Path) -> None:
    assert sysbench.sniff(path.read_text(errors="replace")[:8192])


@pytest.mark.parametrize(
    "text",
    [
        "hello world\nthis is a readme\n",
        "Linux 6.1.0-18-amd64 (vm) \t11/22/26 \t_x86_64_\t(2 CPU)\n\n"
        "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s\n"
        "vda              0.00      0.00     0.00   0.00    0.00     0.00    3.00     20.00\n",
        "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n"
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"
        " 1  0      0 123456  7890 456789    0    0     1     2   30   40  5  1 94  0  0\n",
        "sysbench --config-file=cfg oltp_read_write run\n",  # a command echo is not output
        "[Current] NEW_ORDER - Takes(s): 10.0, Count: 1599, TPM: 9633.3\n",
    ],
    ids=["text", "iostat", "vmstat", "command-echo", "go-tpc"],
)
def test_sniff_rejects(text: str) -> None:
    assert not sysbench.sniff(text)

"""parsers/goycsb.py against real captures (tests/fixtures/goycsb/, see README.md there).

Values asserted here are read off the raw fixture lines (and the arithmetic on them is done by hand in
the comments); the full records live in the `.expected.json` files checked by test_fixtures.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import gotpc, goycsb

FIX = Path(__file__).resolve().parent / "fixtures" / "goycsb"
SIGTERM = FIX / "1.0.3-run-workloada-interval1-sigterm.txt"
LOAD = FIX / "1.0.3-load-workloada-1000.txt"
SEED001 = FIX / "seed001-tikv-raw-load-insert.txt"
SEED002 = FIX / "seed002-mysql-read-update-final-only.txt"


def row(df: pd.DataFrame, op: str, report: int, run: int = 0) -> pd.Series:
    hit = df[(df["run"] == run) & (df["report"] == report) & (df["op"] == op)]
    assert len(hit) == 1, f"no single {op} row in run {run} report {report}"
    return hit.iloc[0]


def line_no_of(path: Path, start: str) -> int:
    """1-based number of the first raw line starting with `start`."""
    for i, text in enumerate(path.read_text().splitlines(), 1):
        if text.startswith(start):
            return i
    raise AssertionError(f"{start!r} not in {path.name}")


# ---------------------------------------------------------------- v1.0.3 run ended by SIGTERM


def test_blocks_and_final_block() -> None:
    df = goycsb.parse(SIGTERM)
    # 4 periodic blocks of READ/TOTAL/UPDATE, then the final block of 5 ops after "Run finished"
    assert df["report"].tolist() == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3 + [4] * 5
    assert df["final"].tolist() == [False] * 12 + [True] * 5
    assert df[df["report"] == 4]["op"].tolist() == ["READ", "READ_ERROR", "TOTAL", "UPDATE", "UPDATE_ERROR"]
    assert df["time_s"].tolist()[:12:3] == [1.0, 2.0, 3.0, 4.0]
    assert (df["run"] == 0).all()


def test_interval_ops_s_is_delta_count_over_delta_takes() -> None:
    df = goycsb.parse(SIGTERM)
    # READ   - Takes(s): 1.0, Count: 2676 ... / READ   - Takes(s): 2.0, Count: 5272
    assert row(df, "READ", 0)["interval_ops_s"] == pytest.approx(2676 / 1.0)
    assert row(df, "READ", 1)["interval_ops_s"] == pytest.approx((5272 - 2676) / (2.0 - 1.0))
    # TOTAL  - Takes(s): 3.0, Count: 15263 / TOTAL  - Takes(s): 4.0, Count: 20896
    assert row(df, "TOTAL", 3)["interval_ops_s"] == pytest.approx((20896 - 15263) / (4.0 - 3.0))
    # the printed OPS stays the cumulative average: OPS: 2636.6 at 2.0 s
    assert row(df, "READ", 1)["ops_s"] == 2636.6
    assert df[df["final"]]["interval_ops_s"].isna().all()


def test_microseconds_become_milliseconds() -> None:
    df = goycsb.parse(SIGTERM)
    # READ   - Takes(s): 1.0, ... Avg(us): 330, Min(us): 35, Max(us): 51807, 50th(us): 210, 90th(us): 457,
    #          95th(us): 604, 99th(us): 2523, 99.9th(us): 11671, 99.99th(us): 51807
    r = row(df, "READ", 0)
    assert r["lat_avg_ms"] == 0.330 and r["lat_min_ms"] == 0.035 and r["lat_max_ms"] == 51.807
    assert (r["lat_p50_ms"], r["lat_p90_ms"], r["lat_p95_ms"]) == (0.210, 0.457, 0.604)
    assert (r["lat_p99_ms"], r["lat_p999_ms"], r["lat_p9999_ms"]) == (2.523, 11.671, 51.807)


def test_error_ops_and_summary() -> None:
    df = goycsb.parse(SIGTERM)
    assert df[df["error"]]["op"].tolist() == ["READ_ERROR", "UPDATE_ERROR"]
    (run,) = df.attrs["runs"]
    assert run["signal"] == "terminated"
    assert run["finished_s"] == 4.954340102  # Run finished, takes 4.954340102s
    s = run["summary"]
    assert s["errors"] == 1 + 3  # READ_ERROR Count: 1, UPDATE_ERROR Count: 3
    assert s["count"] == 26786 == 13401 + 13385  # TOTAL = READ + UPDATE: errors are not in it
    assert s["ops_s"] == 5407.4
    assert (s["lat_avg_ms"], s["lat_p95_ms"], s["lat_p99_ms"]) == (0.734, 1.942, 5.675)
    assert s["total_time_s"] == 4.954340102
    assert s["ops"]["UPDATE_ERROR"] == {"count": 3, "ops_s": 26553.8, "lat_avg_ms": 0.546}
    assert set(s["ops"]) == {"READ", "READ_ERROR", "TOTAL", "UPDATE", "UPDATE_ERROR"}
    assert run["fatal"] is None and df.attrs["dropped_lines"] == 0


def test_properties_command_threads_and_masked_password() -> None:
    run = goycsb.parse(SIGTERM).attrs["runs"][0]
    assert run["command"] == "run" and run["threads"] == 4
    assert run["properties"]["mysql.password"] == "***"
    assert run["properties"]["operationcount"] == "100000000"
    assert len(run["properties"]) == 19


def test_password_like_properties_are_masked_whatever_was_printed() -> None:
    text = (
        "***************** properties *****************\n"
        '"mysql.password"="hunter2"\n"tikv.apiToken"="abc"\n"s3.secretkey"="k"\n"db.PWD"="p"\n'
        '"mysql.passwd"="q"\n"mysql.user"="root"\n"threadcount"="8"\n'
        "**********************************************\n"
    )
    run = goycsb.parse(text).attrs["runs"][0]
    assert run["properties"] == {
        "db.PWD": "***",
        "mysql.passwd": "***",
        "mysql.password": "***",
        "mysql.user": "root",
        "s3.secretkey": "***",
        "threadcount": "8",
        "tikv.apiToken": "***",
    }
    assert run["threads"] == 8 and run["command"] is None


# ---------------------------------------------------------------- load, failures, cut captures


def test_load_has_only_a_final_block() -> None:
    df = goycsb.parse(LOAD)
    assert df["op"].tolist() == ["INSERT", "TOTAL"] and df["final"].all()
    assert df["count"].tolist() == [1000, 1000]
    (run,) = df.attrs["runs"]
    assert run["command"] == "load" and run["threads"] == 4
    assert run["finished_s"] == pytest.approx(0.376064004)  # takes 376.064004ms
    assert run["summary"]["ops_s"] == 2685.6 and run["signal"] is None


def test_wrong_password_gives_fatal_and_no_rows() -> None:
    df = goycsb.parse(FIX / "1.0.3-access-denied.txt")
    assert len(df) == 0 and list(df.columns) == list(goycsb.SCHEMA)
    (run,) = df.attrs["runs"]
    assert run["fatal"] == (
        "create db mysql failed Error 1045: Access denied for user 'perfkit'@'localhost' "
        "(using password: YES)"
    )
    assert run["summary"] == {} and run["properties"] == {} and run["command"] is None


def test_stderr_alone_ends_without_newline_and_keeps_its_fatal() -> None:
    path = FIX / "1.0.3-access-denied-stderr-only.txt"
    assert not path.read_bytes().endswith(b"\n")
    df = goycsb.parse(path)
    assert df.attrs["runs"][0]["fatal"].startswith("create db mysql failed Error 1045")
    assert df.attrs["dropped_lines"] == 0


def test_cut_last_line_is_dropped_and_counted() -> None:
    path = FIX / "1.0.3-run-byte-capped.txt"
    assert path.read_text().endswith("50th(us): 389, 9")
    df = goycsb.parse(path)
    assert df.attrs["dropped_lines"] == 1
    # block 0 (READ, TOTAL, UPDATE) and block 1's READ; block 1's TOTAL was cut
    assert list(zip(df["report"], df["op"], strict=True)) == [
        (0, "READ"),
        (0, "TOTAL"),
        (0, "UPDATE"),
        (1, "READ"),
    ]
    assert df.attrs["runs"][0]["summary"] == {} and df.attrs["runs"][0]["finished_s"] is None


def test_a_truncated_string_drops_the_cut_line_too() -> None:
    text = SIGTERM.read_text()
    cut = text.index("Count: 10438") + len("Count: 104")  # inside block 1's TOTAL line
    df = goycsb.parse(text[:cut])
    assert len(df) == 4 and df.attrs["dropped_lines"] == 1


def test_malformed_op_line_mid_file_names_its_line() -> None:
    path = SIGTERM
    line_no = line_no_of(path, "TOTAL  - Takes(s): 2.0")
    text = path.read_text().replace("Count: 10438,", "Count: 10x438,")
    with pytest.raises(ParseError) as info:
        goycsb.parse(text)
    assert info.value.line_no == line_no == 27
    assert info.value.line.startswith("TOTAL  - Takes(s): 2.0")


def test_op_line_without_ops_is_malformed() -> None:
    text = "READ   - Takes(s): 1.0, Count: 5, Avg(us): 3\nREAD   - Takes(s): 2.0, Count: 9, OPS: 4.5\n"
    with pytest.raises(ParseError) as info:
        goycsb.parse(text)
    assert info.value.line_no == 1 and "OPS" in info.value.reason


def test_text_without_go_ycsb_structure_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        goycsb.parse("hello\nworld\n")
    assert info.value.line_no == 1 and "no go-ycsb output" in info.value.reason


def test_json_output_style_asks_for_plain() -> None:
    text = '[{"Operation":"READ","Takes(s)":"1.0","Count":"5"}]\n'
    with pytest.raises(ParseError, match="outputstyle=plain"):
        goycsb.parse(text)


def test_unknown_keys_are_listed() -> None:
    df = goycsb.parse("READ   - Takes(s): 1.0, Count: 5, OPS: 5.0, Avg(us): 3, 75th(us): 4, Retries: 0\n")
    assert df.attrs["unknown_columns"] == ["75th(us)", "Retries"]
    assert df["lat_avg_ms"].tolist() == [0.003]


# ---------------------------------------------------------------- block and run boundaries


def test_error_op_with_its_own_takes_stays_in_its_block() -> None:
    # A periodic block where READ_ERROR was first measured late: its Takes(s) differs from the others'.
    text = (
        "READ   - Takes(s): 1.0, Count: 100, OPS: 100.0, Avg(us): 200\n"
        "READ_ERROR - Takes(s): 0.3, Count: 2, OPS: 6.7, Avg(us): 500\n"
        "TOTAL  - Takes(s): 1.0, Count: 100, OPS: 100.0, Avg(us): 200\n"
        "READ   - Takes(s): 2.0, Count: 250, OPS: 125.0, Avg(us): 210\n"
        "READ_ERROR - Takes(s): 1.3, Count: 5, OPS: 3.8, Avg(us): 480\n"
        "TOTAL  - Takes(s): 2.0, Count: 250, OPS: 125.0, Avg(us): 210\n"
    )
    df = goycsb.parse(text)
    assert df["report"].tolist() == [0, 0, 0, 1, 1, 1]
    assert row(df, "READ_ERROR", 0)["interval_ops_s"] == pytest.approx(2 / 0.3)
    assert row(df, "READ_ERROR", 1)["interval_ops_s"] == pytest.approx((5 - 2) / (1.3 - 0.3))
    assert row(df, "READ", 1)["interval_ops_s"] == pytest.approx(150.0)


def test_each_properties_banner_starts_a_run() -> None:
    df = goycsb.parse(LOAD.read_text() + SIGTERM.read_text())
    runs = df.attrs["runs"]
    assert [(r["run"], r["command"]) for r in runs] == [(0, "load"), (1, "run")]
    assert df.groupby("run").size().tolist() == [2, 17]
    assert df[df["run"] == 1]["report"].max() == 4  # report numbering restarts per run


def test_a_block_after_the_final_block_is_another_run() -> None:
    df = goycsb.parse(SEED002.read_text() * 2)
    assert [r["finished_s"] for r in df.attrs["runs"]] == [0.517175465, 0.517175465]
    assert df["run"].tolist() == [0, 0, 1, 1]


# ---------------------------------------------------------------- seeds (older builds)


def test_seed001_older_keys_and_no_total() -> None:
    df = goycsb.parse(SEED001)
    assert df["op"].tolist() == ["INSERT"] * 3 and df["final"].tolist() == [False, False, True]
    # INSERT - Takes(s): 10.0, Count: 42991 ... / INSERT - Takes(s): 20.0, Count: 99892, ... 95th(us): 43000
    assert df["interval_ops_s"].iloc[1] == pytest.approx((99892 - 42991) / (20.0 - 10.0))
    assert df["lat_p95_ms"].iloc[1] == 43.0 and df["lat_p99_ms"].iloc[1] == 63.0
    assert df[["lat_p50_ms", "lat_p90_ms", "lat_p999_ms", "lat_p9999_ms"]].isna().all().all()
    (run,) = df.attrs["runs"]
    assert run["command"] == "load"  # "dotransactions"="false"; that build printed no "command"
    assert run["threads"] is None
    s = run["summary"]
    assert (s["count"], s["ops_s"], s["lat_avg_ms"]) == (100000, 4952.2, 19.936)
    assert s["lat_p95_ms"] is None and s["total_time_s"] == 20.236090571


def test_seed002_summary_sums_ops_without_total() -> None:
    df = goycsb.parse(SEED002)
    assert df["final"].all() and df["report"].tolist() == [0, 0]
    (run,) = df.attrs["runs"]
    assert run["finished_s"] == pytest.approx(0.517175465)  # takes 517.175465ms
    s = run["summary"]
    assert s["count"] == 510 + 482
    assert s["ops_s"] == pytest.approx(1011.2 + 975.1)
    assert s["lat_avg_ms"] == pytest.approx((510 * 3.518 + 482 * 11.138) / 992)
    assert s["errors"] == 0 and s["lat_p99_ms"] is None
    assert math.isnan(df["lat_p95_ms"].iloc[0]) and df["lat_p9999_ms"].iloc[1] == 21.0


# ---------------------------------------------------------------- sniff


@pytest.mark.parametrize("path", sorted(FIX.glob("*.txt")), ids=lambda p: p.name)
def test_sniff_claims_go_ycsb_output_but_not_go_tpc(path: Path) -> None:
    text = path.read_text()
    assert not gotpc.sniff(text)
    if "stderr-only" not in path.name:
        assert goycsb.sniff(text)


def test_go_ycsb_does_not_claim_go_tpc_lines() -> None:
    for path in sorted((FIX.parent / "gotpc").glob("*.txt")):
        assert not goycsb.sniff(path.read_text()), path.name


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("59.950856061s", 59.950856061), ("517.175465ms", 0.517175465), ("1m0.5s", 60.5), ("2h0m0s", 7200.0)],
)
def test_run_finished_reads_go_durations(value: str, seconds: float) -> None:
    run = goycsb.parse(f"Run finished, takes {value}\n").attrs["runs"][0]
    assert run["finished_s"] == pytest.approx(seconds)

"""parsers/gotpc.py against real captures (tests/fixtures/gotpc/, see README.md there).

Values asserted here are read off the raw fixture lines (and the arithmetic on them is done by hand in
the comments); the full records live in the `.expected.json` files checked by test_fixtures.py.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import gotpc, goycsb

FIX = Path(__file__).resolve().parent / "fixtures" / "gotpc"
RUN = FIX / "1.0.12-run-interval-1s.txt"
DEFAULT = FIX / "1.0.12-run-default-interval-no-current.txt"
ERRORS = FIX / "1.0.12-run-lock-wait-errors.txt"
JSON = FIX / "1.0.12-run-output-json.txt"
SEED002 = FIX / "seed002-1.0.0-tpcc-run.txt"


def row(df: pd.DataFrame, op: str, report: int, run: int = 0) -> pd.Series:
    hit = df[(df["run"] == run) & (df["report"] == report) & (df["op"] == op)]
    assert len(hit) == 1, f"no single {op} row in run {run} report {report}"
    return hit.iloc[0]


# ---------------------------------------------------------------- v1.0.12


def test_current_lines_are_per_interval() -> None:
    df = gotpc.parse(RUN)
    cur = df[df["phase"] == "current"]
    assert cur["report"].tolist() == [0] * 5 + [1] * 5 + [2] * 5
    assert (cur["interval_count"] == cur["count"]).all()
    # [Current] NEW_ORDER - Takes(s): 1.0, Count: 318, TPM: 19090.0, Sum(ms): 1137.9, Avg(ms): 3.6,
    #   50th(ms): 3.1, 90th(ms): 6.3, 95th(ms): 7.9, 99th(ms): 10.5, 99.9th(ms): 17.8, Max(ms): 17.8
    r = row(df, "NEW_ORDER", 1)
    assert (r["count"], r["tpm"], r["sum_ms"], r["lat_avg_ms"]) == (318, 19090.0, 1137.9, 3.6)
    assert (r["lat_p50_ms"], r["lat_p90_ms"], r["lat_p95_ms"]) == (3.1, 6.3, 7.9)
    assert (r["lat_p99_ms"], r["lat_p999_ms"], r["lat_max_ms"]) == (10.5, 17.8, 17.8)
    assert row(df, "ORDER_STATUS", 0)["time_s"] == 0.9


def test_summary_lines_and_tpmc() -> None:
    df = gotpc.parse(RUN)
    summ = df[df["phase"] == "summary"]
    assert summ["report"].unique().tolist() == [3] and summ["interval_count"].isna().all()
    assert summ["count"].tolist() == [94, 1092, 99, 1036, 91]
    (run,) = df.attrs["runs"]
    assert run["finished"] is True and run["threads"] is None and run["fatal"] is None
    s = run["summary"]
    # tpmC: 16426.0, tpmTotal: 36341.1, efficiency: 127729.3%
    assert (s["tpmc"], s["tpm_total"], s["efficiency_pct"]) == (16426.0, 36341.1, 127729.3)
    assert s["count"] == 94 + 1092 + 99 + 1036 + 91 == 2412
    assert s["errors"] == 0 and s["total_time_s"] == 4.0
    assert s["tps"] == pytest.approx(2412 / 4.0)
    assert s["lat_avg_ms"] == pytest.approx((673.7 + 4307.3 + 114.1 + 2434.7 + 177.6) / 2412)
    assert (s["lat_p95_ms"], s["lat_p99_ms"]) == (9.4, 13.6)  # NEW_ORDER's 95th/99th
    assert s["ops"]["PAYMENT"] == {"count": 1036, "tpm": 15611.6, "lat_avg_ms": 2.4, "lat_p95_ms": 5.8}


def test_run_shorter_than_the_interval_has_only_a_summary() -> None:
    df = gotpc.parse(DEFAULT)
    assert (df["phase"] == "summary").all() and (df["report"] == 0).all()
    s = df.attrs["runs"][0]["summary"]
    assert s["tpmc"] == 19780.9 and s["count"] == 123 + 1316 + 103 + 1212 + 131


def test_failed_transactions() -> None:
    df = gotpc.parse(ERRORS)
    # the second in which both threads waited on the lock printed one line: NEW_ORDER_ERR, Count: 2
    assert df[df["report"] == 2]["op"].tolist() == ["NEW_ORDER_ERR"]
    # the next block's Takes(s) differ (0.7 and 0.8) and it is still one block
    nxt = df[df["report"] == 3]
    assert nxt["op"].tolist() == ["DELIVERY", "NEW_ORDER", "ORDER_STATUS", "PAYMENT", "STOCK_LEVEL"]
    assert sorted(set(nxt["time_s"])) == [0.7, 0.8]
    assert df[df["error"]]["op"].tolist() == ["NEW_ORDER_ERR", "NEW_ORDER_ERR"]
    (run,) = df.attrs["runs"]
    assert run["fatal"] is None  # "[2026-11-23 06:00:24] execute run failed" is one failed transaction
    s = run["summary"]
    assert s["errors"] == 2
    assert s["count"] == 61 + 630 + 53 + 593 + 57  # *_ERR not counted
    assert s["ops"]["NEW_ORDER_ERR"]["count"] == 2 and s["tpmc"] == 9472.3


def test_json_output_reads_like_plain() -> None:
    df = gotpc.parse(JSON)
    assert df["phase"].tolist() == ["current"] * 10 + ["summary"] * 5
    # {"50th(ms)":"7.3",...,"Count":"31","Max(ms)":"14.7","Operation":"DELIVERY","Prefix":"[Current] ",
    #  "Sum(ms)":"240.2","TPM":"1897.8","Takes(s)":"1.0"}
    r = row(df, "DELIVERY", 0)
    assert (r["count"], r["tpm"], r["sum_ms"], r["lat_p50_ms"], r["lat_max_ms"]) == (
        31,
        1897.8,
        240.2,
        7.3,
        14.7,
    )
    s = df.attrs["runs"][0]["summary"]
    assert (s["tpmc"], s["tpm_total"], s["efficiency_pct"]) == (19333.4, 42817.0, 150337.3)


def test_wrong_password_gives_fatal_and_no_rows() -> None:
    df = gotpc.parse(FIX / "1.0.12-access-denied.txt")
    assert len(df) == 0 and list(df.columns) == list(gotpc.SCHEMA)
    (run,) = df.attrs["runs"]
    assert run["fatal"] == (
        "failed to ping db, err Error 1045 (28000): Access denied for user 'perfkit'@'localhost' "
        "(using password: YES)"
    )
    assert run["finished"] is False and run["summary"] == {}


# ---------------------------------------------------------------- v1.0.0 layout (seed 002)


def test_seed002_cumulative_lines_give_interval_counts() -> None:
    df = gotpc.parse(SEED002)
    assert (df[df["report"] < 11]["phase"] == "cumulative").all()
    # NEW_ORDER - Takes(s): 9.7, Count: 691 ... / NEW_ORDER - Takes(s): 19.7, Count: 1402
    assert row(df, "NEW_ORDER", 0)["interval_count"] == 691
    assert row(df, "NEW_ORDER", 1)["interval_count"] == 1402 - 691
    # DELIVERY - Takes(s): 109.5, Count: 678 after DELIVERY - Takes(s): 99.5, Count: 624
    assert row(df, "DELIVERY", 10)["interval_count"] == 678 - 624
    # integer ms, and no 50th/90th/Max in that version
    assert row(df, "NEW_ORDER", 0)["sum_ms"] == 77505.0
    assert df[["lat_p50_ms", "lat_p90_ms", "lat_max_ms"]].isna().all().all()


def test_seed002_lines_after_finished_are_the_summary() -> None:
    df = gotpc.parse(SEED002)
    summ = df[df["phase"] == "summary"]
    assert summ["report"].unique().tolist() == [11]
    assert summ["op"].tolist() == [
        "DELIVERY",
        "DELIVERY_ERR",
        "NEW_ORDER",
        "NEW_ORDER_ERR",
        "ORDER_STATUS",
        "PAYMENT",
        "PAYMENT_ERR",
        "STOCK_LEVEL",
    ]
    assert summ["interval_count"].isna().all()
    s = df.attrs["runs"][0]["summary"]
    assert s["errors"] == 2 + 9 + 3
    assert s["count"] == 729 + 8358 + 770 + 8177 + 729
    assert s["tpmc"] is None and s["efficiency_pct"] is None  # that version printed no tpmC line
    assert s["total_time_s"] == 119.8
    assert (s["lat_p95_ms"], s["lat_p99_ms"]) == (192.0, 256.0)


# ---------------------------------------------------------------- cut, malformed, boundaries


def test_cut_last_line_is_dropped_and_counted() -> None:
    text = RUN.read_text()
    cut = text.index("Count: 318") + len("Count: 31")  # inside block 1's NEW_ORDER line
    df = gotpc.parse(text[:cut])
    assert df.attrs["dropped_lines"] == 1
    assert len(df) == 6  # block 0's five lines and block 1's DELIVERY
    assert df.attrs["runs"][0]["summary"] == {} and df.attrs["runs"][0]["finished"] is False


def test_malformed_line_mid_file_names_its_line() -> None:
    lines = RUN.read_text().splitlines(keepends=True)
    line_no = next(i for i, t in enumerate(lines, 1) if "TPM: 19090.0" in t)
    lines[line_no - 1] = lines[line_no - 1].replace("TPM: 19090.0", "TPM: 19O90.0")
    with pytest.raises(ParseError) as info:
        gotpc.parse("".join(lines))
    assert info.value.line_no == line_no == 8
    assert "TPM" in info.value.reason


def test_runs_split_at_maxprocs_and_after_a_summary() -> None:
    both = RUN.read_text() + DEFAULT.read_text()
    df = gotpc.parse(both)
    assert [r["run"] for r in df.attrs["runs"]] == [0, 1]
    assert df.groupby("run").size().tolist() == [20, 5]
    # stdout alone (no maxprocs lines): a second Finished, and [Current] after a summary, still split
    stdout = "".join(
        t for t in (RUN.read_text() * 2 + DEFAULT.read_text()).splitlines(True) if "maxprocs" not in t
    )
    df = gotpc.parse(stdout)
    assert [r["summary"]["tpmc"] for r in df.attrs["runs"]] == [16426.0, 16426.0, 19780.9]


def test_cumulative_time_going_back_starts_a_run() -> None:
    lines = SEED002.read_text().splitlines(keepends=True)
    df = gotpc.parse("".join(lines[:10] + lines[:5]))  # two cumulative blocks, then a restart at 9.5 s
    assert df["run"].tolist() == [0] * 10 + [1] * 5
    assert df[df["run"] == 1]["interval_count"].tolist() == [65, 691, 65, 654, 61]


def test_table_output_asks_for_plain() -> None:
    text = "+-----------+--------------+\n| PREFIX    | OPERATION    |\n"
    with pytest.raises(ParseError, match="--output plain"):
        gotpc.parse(text)


def test_text_without_go_tpc_structure_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        gotpc.parse("\nhello\nworld\n")
    assert info.value.line_no == 2


# ---------------------------------------------------------------- sniff


@pytest.mark.parametrize("path", sorted(FIX.glob("*.txt")), ids=lambda p: p.name)
def test_sniff_claims_go_tpc_output_but_go_ycsb_does_not(path: Path) -> None:
    text = path.read_text()
    assert not goycsb.sniff(text)
    if "access-denied" not in path.name:
        assert gotpc.sniff(text)

"""How a go-ycsb or go-tpc step is judged from its parsed output (reliability.md L3), on real captures."""

from __future__ import annotations

import pytest

from perfkit.collectors._load import LoadResult, judge_go_tool

from .conftest import FIXTURES


def judged(fixture: str, exit_code: int, time_s: int, *, ended_by_perfkit: bool) -> LoadResult:
    kind = fixture.split("/")[0]
    tool = {"goycsb": "go-ycsb", "gotpc": "go-tpc"}[kind]
    res = LoadResult(f"/opt/bin/{tool} run ...", exit_code, 0.0, float(time_s), 1)
    judge_go_tool(res, FIXTURES / fixture, time_s, tool=tool, kind=kind, ended_by_perfkit=ended_by_perfkit)
    return res


def test_go_ycsb_ended_by_perfkits_sigterm_is_ok_with_the_operations_cut_in_flight() -> None:
    # 4 errors of 26 786 operations: the in-flight ones the SIGTERM cut
    res = judged("goycsb/1.0.3-run-workloada-interval1-sigterm.txt", 124, 5, ended_by_perfkit=True)
    assert (res.status, res.reason) == ("ok", "")
    assert res.summary["tps"] == 5407.4 and res.summary["ignored_errors"] == 4


def test_go_ycsb_without_final_totals_failed() -> None:
    res = judged("goycsb/1.0.3-run-byte-capped.txt", 124, 5, ended_by_perfkit=True)
    assert res.status == "failed" and "no totals printed" in res.reason


def test_go_ycsb_access_denied_failed_with_its_message() -> None:
    res = judged("goycsb/1.0.3-access-denied.txt", 1, 5, ended_by_perfkit=True)
    assert res.status == "failed" and "Error 1045" in res.reason and res.fatal == [res.reason]


def test_a_run_far_shorter_than_planned_is_degraded() -> None:
    res = judged("goycsb/1.0.3-run-workloada-interval1-sigterm.txt", 124, 10, ended_by_perfkit=True)
    assert res.status == "degraded" and res.reason == "ran 5.0s of 10s"


def test_go_tpc_a_few_failed_transactions_below_the_share_are_ok() -> None:
    # 2 failed NEW_ORDERs of 1396 transactions is 0.14 %: under the 1 % share
    assert judged("gotpc/1.0.12-run-lock-wait-errors.txt", 0, 4, ended_by_perfkit=False).status == "ok"


@pytest.mark.parametrize("exit_code", [124, 2])
def test_go_tpc_that_had_to_be_stopped_or_exited_badly(exit_code: int) -> None:
    res = judged("gotpc/1.0.12-run-interval-1s.txt", exit_code, 4, ended_by_perfkit=False)
    if exit_code == 124:  # perfkit's timeout had to end it: go-tpc stops itself at --time
        assert res.status == "failed" and "did not exit by itself" in res.reason
    else:
        assert res.status == "degraded" and res.reason == "exit 2 after its totals"


def test_go_tpc_access_denied_failed() -> None:
    res = judged("gotpc/1.0.12-access-denied.txt", 2, 4, ended_by_perfkit=False)
    assert res.status == "failed" and "Access denied" in res.reason

"""How a go-ycsb or go-tpc step is judged from its parsed output (reliability.md L3), on real captures."""

from __future__ import annotations

import pytest

from perfkit.collectors._load import LoadResult, judge_go_tool
from perfkit.collectors.load_goycsb import property_value
from perfkit.collectors.load_sysbench import config_value, failure_reason, judge
from perfkit.errors import PerfkitError

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


def judged_sysbench(fixture: str, exit_code: int, time_s: int = 2) -> LoadResult:
    res = LoadResult("/usr/bin/sysbench oltp_read_write ... run", exit_code, 0.0, float(time_s), 1)
    judge(res, FIXTURES / "sysbench" / fixture, time_s)
    return res


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        (  # the first FATAL line said "unable to connect"
            "1.0.20-run-too-many-connections.txt",
            "MySQL error 1040: Too many connections (unable to connect to MySQL server on host "
            "'127.0.0.1', port 43687, aborting...)",
        ),
        (  # the first FATAL line said "mysql_stmt_prepare() failed"
            "1.0.20-run-update-denied.txt",
            "MySQL error 1142: UPDATE command denied to user 'pk_r'@'localhost' for table "
            "`pk_repro`.`sbtest1` (mysql_stmt_prepare() failed)",
        ),
        (  # the error is in the first line already: no context repeated
            "1.0.20-run-update-denied-no-ps.txt",
            "MySQL error 1142: UPDATE command denied to user 'pk_r'@'localhost' for table "
            "`pk_repro`.`sbtest2`",
        ),
        ("1.0.20-rw-server-killed.txt", "MySQL error 2013: Lost connection to server during query"),
    ],
)
def test_a_failed_sysbench_step_names_the_mysql_error(fixture: str, reason: str) -> None:
    res = judged_sysbench(fixture, 1)
    assert res.status == "failed" and res.reason == reason
    assert res.fatal[0].startswith("FATAL: ")  # the raw lines are kept as they were


def test_a_fatal_line_without_a_server_error_is_the_reason_as_printed() -> None:
    res = judged_sysbench("1.0.20-rw-forced-shutdown.txt", 2)
    assert res.status == "degraded" and res.reason == "The --max-time limit has expired, forcing shutdown..."


def test_the_prepare_fixture_exit_0_with_fatal_has_its_cause() -> None:
    text = (FIXTURES / "sysbench" / "1.0.20-prepare-create-denied.txt").read_text()
    fatal = [line for line in text.splitlines() if line.startswith("FATAL: ")]
    assert failure_reason(fatal) == (
        "MySQL error 1142: CREATE command denied to user 'pk_r'@'localhost' for table `pk_repro`.`sbtest2`"
    )


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("plain", "plain"),
        ("", ""),
        (" sp ace ", "' sp ace '"),
        ("a,b", "'a,b'"),
        ("#lead", "'#lead'"),
        ("it's x", '"it\'s x"'),
        ("it's", "it's"),  # a quote inside an unquoted value is literal
        ("back\\slash=#", "back\\slash=#"),
        ("x" * 239, "x" * 239),  # 255 bytes with its key and newline: sysbench reads 255 a line (tried)
    ],
)
def test_sysbench_config_values_are_quoted_the_way_its_reader_reads_them(value: str, written: str) -> None:
    assert config_value("mysql-password", value) == written


@pytest.mark.parametrize("value", ["both ' and \" and a space", "x" * 240, "line\nbreak"])
def test_what_sysbenchs_config_file_cannot_carry_is_refused_without_the_value(value: str) -> None:
    with pytest.raises(PerfkitError) as info:
        config_value("mysql-password", value)
    assert "mysql-password" in str(info.value) and value not in str(info.value)


def test_go_ycsb_property_values_are_escaped_and_expansion_refused() -> None:
    assert property_value("mysql.password", " a b\\c\t=#") == "\\ a\\ b\\\\c\\t=#"
    with pytest.raises(PerfkitError, match=r"mysql.password: its property files expand \$\{\.\.\.\}"):
        property_value("mysql.password", "x${HOME}")


def test_deadlocks_sysbench_retried_by_default_leave_the_step_ok() -> None:
    # 4055 ignored errors against 3315 transactions: lock conflicts rolled back and run again — the
    # workload's contention (db.lock-contention's subject), not a measurement gone wrong
    res = judged_sysbench("1.0.20-write-only-deadlock-storm.txt", 0, 3)
    assert (res.status, res.reason) == ("ok", "")
    assert (res.summary["ignored_errors"], res.summary["transactions"]) == (4055, 3315)


@pytest.mark.parametrize("ignore", ["all", "1213,2013"])
def test_errors_ignored_by_a_list_the_user_set_count_as_failed(ignore: str) -> None:
    # `all` also hides lost connections, so an ignored error can no longer be taken for a retry
    res = LoadResult(f"/usr/bin/sysbench oltp_write_only --mysql-ignore-errors={ignore} run", 0, 0.0, 3.0, 1)
    judge(res, FIXTURES / "sysbench" / "1.0.20-write-only-deadlock-storm.txt", 3)
    assert (res.status, res.reason) == ("degraded", "4055 errors, 0 reconnects")

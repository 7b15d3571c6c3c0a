"""innodb_status: figures checked by hand against the raw dumps (the comments quote the lines)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import innodb_status

from .conftest import FIXTURES

DIR = FIXTURES / "innodb_status"


def _text(name: str) -> str:
    return (DIR / name).read_text()


def test_mariadb_hot_row_lock_wait() -> None:
    df = innodb_status.parse(DIR / "mariadb-10.11-hot-row-lock-wait.txt", host="db1")
    assert len(df) == 1
    row = df.iloc[0]
    assert row["timestamp"] == pd.Timestamp("2026-11-27 08:58:18", tz="UTC")  # header, server in UTC
    assert row["host"] == "db1"
    assert row["interval_s"] == 3  # Per second averages calculated from the last 3 seconds
    assert row["history_list_length"] == 3752
    assert row["transactions_active"] == 4  # four ---TRANSACTION n, ACTIVE 0 sec
    assert row["lock_wait_transactions"] == 1  # LOCK WAIT 2 lock struct(s), ...
    assert row["lock_wait_max_s"] == pytest.approx(731e-6)  # TRX HAS BEEN WAITING 731 us
    assert row["buffer_pool_pages"] == 8112  # Buffer pool size   8112
    assert row["free_pages"] == 7032  # Free buffers       7032
    assert row["database_pages"] == 1080
    assert row["modified_pages"] == 664  # Modified db pages  664
    assert row["hit_rate_per_1000"] == 1000  # Buffer pool hit rate 1000 / 1000
    assert row["pages_created_per_s"] == pytest.approx(170.28)  # 0.00 reads/s, 170.28 creates/s
    assert row["fsyncs_per_s"] == pytest.approx(2104.63)  # FILE I/O: ..., 2104.63 fsyncs/s
    assert row["os_fsyncs"] == 6329
    # Log sequence number 2585926878, Log flushed up to 2585925295, Last checkpoint at 2577604976
    assert row["log_sequence_number"] == 2585926878
    assert row["checkpoint_age_bytes"] == 2585926878 - 2577604976
    assert row["log_unflushed_bytes"] == 2585926878 - 2585925295
    # MariaDB 10.11 prints no sync wait array, no log i/o's, no rows per second: NaN, not 0
    for col in ("semaphore_spins", "long_semaphore_waits", "log_ios_per_s", "rows_read_per_s"):
        assert math.isnan(row[col]), col
    assert pd.isna(row["deadlock_at"])
    (wait,) = df.attrs["lock_waits"]
    assert wait["trx_id"] == "938638" and wait["thread_id"] == 27
    assert wait["query"] == "UPDATE sbtest1 SET c=? WHERE id=?"
    assert wait["table"] == "`pk_innodb_scratch`.`sbtest1`"
    assert wait["lock"].endswith("lock_mode X locks rec but not gap waiting")


def test_several_dumps_in_one_file_and_the_deadlocks_lock_waits_are_not_counted() -> None:
    df = innodb_status.parse(DIR / "mariadb-10.11-three-dumps-hot-row.txt")
    assert list(df["timestamp"].dt.strftime("%H:%M:%S")) == ["08:58:36", "08:58:37", "08:58:38"]
    # every dump repeats the earlier deadlock, whose two transactions print LOCK WAIT lines: only
    # the 2nd dump's TRANSACTIONS has transactions waiting (155, 3141, 4146 and 2747 us)
    assert list(df["lock_wait_transactions"]) == [0, 4, 0]
    assert df["lock_wait_sum_s"][1] == pytest.approx((155 + 3141 + 4146 + 2747) * 1e-6)
    assert df["lock_wait_max_s"][1] == pytest.approx(4146e-6)
    assert math.isnan(df["lock_wait_max_s"][0]) and df["lock_wait_sum_s"][0] == 0
    assert list(df["trx_id_counter"]) == [1053215, 1079727, 1106929]
    assert (df["deadlock_at"] == pd.Timestamp("2026-11-27 08:58:29", tz="UTC")).all()
    assert len(df.attrs["deadlocks"]) == 1  # the same deadlock three times is one
    assert [w["waited_s"] for w in df.attrs["lock_waits"]] == pytest.approx(
        [155e-6, 3141e-6, 4146e-6, 2747e-6]
    )


def test_deadlock() -> None:
    df = innodb_status.parse(DIR / "mariadb-10.11-deadlock.txt")
    assert df["deadlock_at"][0] == pd.Timestamp(
        "2026-11-27 08:58:29", tz="UTC"
    )  # 2026-11-27 08:58:29 0x77c7...
    (dl,) = df.attrs["deadlocks"]
    assert dl["rolled_back"] == 1  # *** WE ROLL BACK TRANSACTION (1)
    assert "UPDATE sbtest1 SET k=k+1 WHERE id=1" in dl["text"]
    assert df["lock_wait_transactions"][0] == 0


def test_header_time_is_the_servers_local_time() -> None:
    df = innodb_status.parse(DIR / "mariadb-10.11-hot-row-lock-wait.txt", tz="Asia/Shanghai")
    assert df["timestamp"][0] == pd.Timestamp("2026-11-27 00:58:18", tz="UTC")


def test_mysql_80_manual_sample() -> None:
    row = innodb_status.parse(DIR / "mysql-8.0-manual-lock-wait-fk.txt").iloc[0]
    assert row["lock_wait_transactions"] == 1
    assert row["lock_wait_max_s"] == 23  # ------- TRX HAS BEEN WAITING 23 SEC FOR THIS LOCK TO BE GRANTED:
    assert row["trx_active_max_s"] == 23  # ---TRANSACTION 7747, ACTIVE 23 sec starting index read
    # RW-shared spins 4, rounds 8, OS waits 4 / RW-excl spins 2, rounds 60, OS waits 2 / RW-sx 0, 0, 0
    assert row["semaphore_spins"] == 6 and row["semaphore_os_waits"] == 6
    assert row["os_wait_reservations"] == 24 and row["long_semaphore_waits"] == 0
    assert row["log_ios"] == 129  # 129 log i/o's done, 0.00 log i/o's/second
    assert math.isnan(row["pending_log_flushes"])  # 8.0 dropped that line
    assert row["buffer_pool_pages"] == 131072  # the total, not an instance's 65536
    assert (
        row["pages_read"] == 810 and row["pages_written"] == 404
    )  # Pages read 810, created 163, written 404
    assert row["pending_fsyncs"] == 0  # Pending flushes (fsync) log: 0; buffer pool: 0
    wait = innodb_status.parse(DIR / "mysql-8.0-manual-lock-wait-fk.txt").attrs["lock_waits"][0]
    assert wait["query"] == "DELETE FROM t WHERE i = 1" and wait["table"] == "`test`.`t`"


def test_mysql_57_manual_sample() -> None:
    row = innodb_status.parse(DIR / "mysql-5.7-manual-deadlock-fk.txt").iloc[0]
    # Mutex spin waits 0, OS waits 0; RW-shared spins 38, OS waits 38; RW-excl spins 2, OS waits 3
    assert row["semaphore_spins"] == 40 and row["semaphore_os_waits"] == 41
    assert row["checkpoint_age_bytes"] == 165913808 - 130503656  # Log sequence number / Last checkpoint at
    assert row["pending_log_flushes"] == 0  # 0 pending log flushes, 0 pending chkp writes
    assert row["log_ios_per_s"] == pytest.approx(6.65)
    assert row["lock_wait_transactions"] == 0  # the LOCK WAIT is the deadlock's
    assert row["deadlock_at"] == pd.Timestamp("2014-10-16 18:36:30", tz="UTC")
    assert row["rows_inserted_per_s"] == pytest.approx(52671.72)
    assert row["hit_rate_per_1000"] == 1000  # a line the manual wrapped after "not"


def test_no_page_gets_is_nan_not_a_rate() -> None:
    text = _text("mysql-8.0-manual-lock-wait-fk.txt").replace(
        "Buffer pool hit rate 1000 / 1000, young-making rate 0 / 1000 not 0 / 1000",
        "No buffer pool page gets since the last printout",
        1,
    )
    assert math.isnan(innodb_status.parse(text)["hit_rate_per_1000"][0])


def test_cut_last_dump_is_dropped_and_counted() -> None:
    df = innodb_status.parse(DIR / "mariadb-10.11-cut-last-dump.txt")
    assert len(df) == 2
    assert df.attrs["dropped_lines"] == 85  # lines 367-451 of the file
    assert "dump at line 367 is cut off" in df.attrs["notes"][0]


def test_cut_line_that_would_not_read_is_dropped_with_its_dump() -> None:
    text = _text("mariadb-10.11-hot-row-lock-wait.txt")
    cut = text[: text.index("---TRANSACTION 938638") + len("---TRANSACTION 93")]  # no newline
    df = innodb_status.parse(cut)
    assert len(df) == 0 and df.attrs["dropped_lines"] > 0


def test_unreadable_last_header_after_an_unfinished_dump_counts_each_line_once() -> None:
    one = _text("mariadb-10.11-idle.txt")
    unfinished = one[: one.index("--------\nFILE I/O")]  # ends with a newline
    bad_header = "2026-13-27 08:58:15 0x7fc8081ca6c0 INNODB MONITOR OUTPUT"  # no month 13, no newline
    df = innodb_status.parse(unfinished + bad_header)
    start = next(i for i, line in enumerate(unfinished.splitlines(), 1) if "INNODB MONITOR OUTPUT" in line)
    dump_lines = unfinished.count("\n") - start + 1
    assert len(df) == 0 and df.attrs["dropped_lines"] == dump_lines + 1  # the dump, then the header
    assert len(df.attrs["notes"]) == 1 and f"({dump_lines} lines)" in df.attrs["notes"][0]


def test_dump_without_end_before_the_next_one_is_dropped() -> None:
    one = _text("mariadb-10.11-idle.txt")
    unfinished = one[: one.index("--------\nFILE I/O")]
    df = innodb_status.parse(unfinished + one)
    assert len(df) == 1
    assert "before the next dump" in df.attrs["notes"][0]


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("Buffer pool size   8112", "Buffer pool size   8x12", "figures do not read"),
        ("0.00 reads/s, 170.28 creates/s", "0,00 reads/s, 170,28 creates/s", "figures do not read"),
        ("Log sequence number 2585926878", "Log sequence number 99999999999999999999999", "too large"),
        ("------- TRX HAS BEEN WAITING 731 us", "------- TRX HAS BEEN WAITING x us", "time does not read"),
        # two words whose low one is not a 32-bit word: not 5.0's form, not a number to guess at
        ("Log sequence number 2585926878", "Log sequence number 1 4294967296", "out of range"),
    ],
)
def test_garbage_inside_a_dump_names_the_line(old: str, new: str, reason: str) -> None:
    text = _text("mariadb-10.11-hot-row-lock-wait.txt")
    assert old in text
    line_no = text[: text.index(old)].count("\n") + 1
    with pytest.raises(ParseError) as info:
        innodb_status.parse(text.replace(old, new))
    assert info.value.line_no == line_no and reason in info.value.reason


CORPUS = FIXTURES / "corpus" / "innodb_status"


def test_mysql_50_two_word_lsns_and_trx_ids() -> None:
    # MySQL 5.0/5.1 print 64-bit LSNs and ids as two 32-bit words: high * 2**32 + low
    row = innodb_status.parse(CORPUS / "pt-lib-is001.txt").iloc[0]
    assert row["trx_id_counter"] == 769  # Trx id counter 0 769
    assert row["log_sequence_number"] == 43655  # Log sequence number 0 43655
    assert row["last_checkpoint_at"] == 43655 and row["checkpoint_age_bytes"] == 0
    df = innodb_status.parse(CORPUS / "pt-mysql-summary-innodb-status.004.txt")
    row = df.iloc[0]
    assert row["trx_id_counter"] == 94997420  # Trx id counter 0 94997420
    assert row["log_sequence_number"] == 208 * 2**32 + 1379356250 == 894732553818
    assert row["log_flushed_up_to"] == 894732391148  # Log flushed up to   208 1379193580
    assert row["last_checkpoint_at"] == 894634856623  # Last checkpoint at  208 1281659055
    assert row["checkpoint_age_bytes"] == 1379356250 - 1281659055
    assert row["log_unflushed_bytes"] == 162670
    # ---TRANSACTION 0 94886750, ACTIVE 263 sec: the two-word id no longer hides the ACTIVE part
    assert row["transactions_active"] == 9 and row["trx_active_max_s"] == 263


def test_text_that_is_not_the_monitor_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        innodb_status.parse("*************************** 1. row ***************************\nhello world\n")
    assert info.value.line_no == 2 and "not SHOW ENGINE INNODB STATUS" in info.value.reason


def test_sniff() -> None:
    for path in DIR.glob("*.txt"):
        assert innodb_status.sniff(path.read_text()[:8192]), path.name
    assert not innodb_status.sniff("+---------------+-------+\n| Variable_name | Value |\n")
    assert not innodb_status.sniff("INNODB MONITOR OUTPUT is what SHOW ENGINE INNODB STATUS prints\n")

"""iotop parser: values, units, ?unavailable?, seed 000's older layout, time of day, cut-off and garbage."""

from __future__ import annotations

import io
import subprocess

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import iotop

from .conftest import FIXTURES, bulk_spy, need_tool, row_by_row

D = FIXTURES / "iotop"


def test_delayacct_on_values() -> None:
    # Hand-read from iotop-0.6-botqk-delayacct1.txt line 4:
    # `07:20:10  1677 be/4 root        0.00 K/s 11456.54 K/s  0.00 % 43.11 % dd if=... oflag=dsync`
    df = iotop.parse(D / "iotop-0.6-botqk-delayacct1.txt", host="db1")
    assert len(df) == 4 and df["host"].eq("db1").all()
    assert df["iteration"].tolist() == [1, 1, 2, 3]
    assert df.loc[0, "tid"] == 1677 and df.loc[0, "prio"] == "be/4" and df.loc[0, "user"] == "root"
    assert df.loc[0, "read_kb_s"] == 0.0 and df.loc[0, "write_kb_s"] == 11456.54
    assert df.loc[0, "swapin_pct"] == 0.0 and df.loc[0, "io_pct"] == 43.11
    assert df.loc[0, "command"] == "dd if=/dev/zero of=/tmp/iotop-fixture1 bs=4k count=20000 oflag=dsync"
    assert not df["delayacct_unavailable"].any() and df["thread"].isna().all()
    # 07:20:10 = 7*3600 + 20*60 + 10 s after midnight; no date banner -> NaT
    assert df.loc[0, "clock_s"] == 26410.0 and df["timestamp"].isna().all()


def test_totals_per_iteration() -> None:
    # Lines 1-2 of the same file: Total 0.00 / 103108.88 K/s, Current 0.00 / 108837.15 K/s.
    totals = iotop.parse(D / "iotop-0.6-botqk-delayacct1.txt").attrs["totals"]
    assert [t["iteration"] for t in totals] == [1, 2, 3]
    assert totals[0]["clock"] == "07:20:10" and totals[0]["total_write_kb_s"] == 103108.88
    assert totals[0]["actual_write_kb_s"] == 108837.15 and totals[1]["actual_read_kb_s"] == 3.98


def test_unavailable_replaces_both_swapin_and_io() -> None:
    # Line 4: `... 0.00 K/s 336500.29 K/s ?unavailable?  dd if=...`: the wide value overflows its field.
    df = iotop.parse(D / "iotop-0.6-botqk-delayacct0.txt")
    assert len(df) == 3 and df["delayacct_unavailable"].all()
    assert df["swapin_pct"].isna().all() and df["io_pct"].isna().all()
    assert df.loc[0, "write_kb_s"] == 336500.29 and df.loc[0, "tid"] == 1643
    assert df.loc[0, "command"].startswith("dd if=/dev/zero of=/tmp/iotop-fixture2 bs=64k")


def test_units_without_k_are_converted_to_kib() -> None:
    # iotop-0.6-botq-units.txt: `19.52 M/s` -> 19.52 * 1024 KiB/s; `0.00 B/s` -> 0.
    df = iotop.parse(D / "iotop-0.6-botq-units.txt")
    assert df.loc[1, "write_kb_s"] == pytest.approx(19.52 * 1024)
    assert df.loc[0, "write_kb_s"] == 0.0 and df.loc[0, "io_pct"] == 89.67
    totals = df.attrs["totals"]
    # line 2: `Current DISK READ:       0.00 B/s | Current DISK WRITE:      39.04 M/s`
    assert totals[0]["actual_write_kb_s"] == pytest.approx(39.04 * 1024)
    # line 6: `Current DISK READ:       3.99 K/s`
    assert totals[1]["actual_read_kb_s"] == 3.99


def test_iteration_without_rows_still_counts() -> None:
    df = iotop.parse(D / "iotop-0.6-botq-delayacct0-empty-iteration.txt")
    assert df["iteration"].tolist() == [2, 3] and len(df.attrs["totals"]) == 3
    assert df.attrs["totals"][0]["total_write_kb_s"] == 0.0


def test_seed000_actual_layout_kernel_and_named_threads() -> None:
    # seed 000: `Total DISK READ :` (space before colon), `Actual DISK ...`, K/s and M/s mixed.
    df = iotop.parse(D / "seed000-iotop-botq-actual.txt")
    assert len(df) == 8
    assert df.loc[0, "tid"] == 418 and df.loc[0, "prio"] == "be/3" and df.loc[0, "io_pct"] == 42.33
    assert df.loc[0, "command"] == "[jbd2/sda2-8]" and df.loc[0, "thread"] == "jbd2/sda2-8"
    assert df.loc[1, "thread"] == "raftstore-4-0" and df.loc[1, "user"] == "tidb"
    # `23371 be/4 root 72.00 K/s 2.05 M/s`: perf record itself writes 2.05 * 1024 KiB/s
    perf = df[df["command"].str.startswith("perf record")]
    assert perf.loc[2, "read_kb_s"] == 72.0 and perf.loc[2, "write_kb_s"] == pytest.approx(2.05 * 1024)
    assert pd.isna(df.loc[2, "thread"])
    t = df.attrs["totals"][0]
    assert t["total_write_kb_s"] == pytest.approx(4.81 * 1024) and t["actual_write_kb_s"] == 1811.28
    assert t["total_read_kb_s"] == 117.47 == t["actual_read_kb_s"]


def test_capture_date_gives_utc_timestamps_and_midnight_rolls_over() -> None:
    text = (
        "23:59:59 Total DISK READ:         0.00 K/s | Total DISK WRITE:         4.00 K/s\n"
        "23:59:59 Current DISK READ:       0.00 K/s | Current DISK WRITE:       4.00 K/s\n"
        "    TIME  TID  PRIO  USER     DISK READ  DISK WRITE  SWAPIN      IO    COMMAND\n"
        "23:59:59   418 be/3 root        0.00 K/s    4.00 K/s  0.00 %  1.00 % [jbd2/sda2-8]\n"
        "00:00:00 Total DISK READ:         0.00 K/s | Total DISK WRITE:         8.00 K/s\n"
        "00:00:00 Current DISK READ:       0.00 K/s | Current DISK WRITE:       8.00 K/s\n"
        "00:00:00   418 be/3 root        0.00 K/s    8.00 K/s  0.00 %  2.00 % [jbd2/sda2-8]\n"
    )
    df = iotop.parse(text, date="2026-11-22", tz="Asia/Shanghai")
    assert df["clock_s"].tolist() == [86399.0, 86400.0]
    # 23:59:59 in Shanghai (UTC+8) is 15:59:59 UTC; the next row is the next day's midnight.
    assert df.loc[0, "timestamp"] == pd.Timestamp("2026-11-22 15:59:59", tz="UTC")
    assert df.loc[1, "timestamp"] == pd.Timestamp("2026-11-22 16:00:00", tz="UTC")
    assert df.attrs["totals"][1]["clock_s"] == 86400.0


def test_cut_last_line_dropped_and_counted() -> None:
    df = iotop.parse(D / "truncated-last-line.txt")
    assert len(df) == 3 and df.attrs["dropped_lines"] == 1 and len(df.attrs["totals"]) == 3


def test_garbage_mid_file_names_the_line() -> None:
    text = (D / "iotop-0.6-botqk-delayacct1.txt").read_text().splitlines()
    text.insert(4, "07:20:10  1679 be/4 root   oops K/s 1.00 K/s  0.00 %  0.00 % x")
    with pytest.raises(ParseError) as info:
        iotop.parse("\n".join(text) + "\n")
    assert info.value.line_no == 5 and "oops" in info.value.line


def test_row_before_total_is_refused() -> None:
    with pytest.raises(ParseError, match="before any"):
        iotop.parse("07:20:10  1677 be/4 root  0.00 K/s 1.00 K/s  0.00 %  1.00 % dd\n")


def test_empty_and_header_only() -> None:
    df = iotop.parse("")
    assert list(df.columns) == list(iotop.SCHEMA) and len(df) == 0
    header = "    TIME  TID  PRIO  USER     DISK READ  DISK WRITE  SWAPIN      IO    COMMAND\n"
    df = iotop.parse(header)
    assert len(df) == 0 and df.attrs["totals"] == [] and df.attrs["dropped_lines"] == 0


def test_sniff() -> None:
    for f in D.glob("*.txt"):
        assert iotop.sniff(f.read_text()), f.name
    others = [p for p in FIXTURES.glob("*/*.txt") if p.parent.name != "iotop"]
    assert others
    for f in others:
        assert not iotop.sniff(f.read_text(errors="replace")), f


@pytest.mark.lab
def test_real_iotop_here() -> None:
    need_tool("iotop")
    out = subprocess.run(
        ["iotop", "-botqk", "-d", "1", "-n", "2"],
        capture_output=True,
        text=True,
        timeout=20,
        env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=False,
    )
    if out.returncode != 0:
        pytest.skip(f"iotop cannot run here: {out.stderr.strip()[:200]}")
    df = iotop.parse(out.stdout)
    assert len(df.attrs["totals"]) == 2


def _long_capture(iterations: int) -> str:
    """A capture long enough for the bulk path (rows read by pandas and Arrow in batches), in the layouts
    of the fixtures above: K/s and other units, `?unavailable?`, kernel threads, named threads, commands
    with blanks, a `Total DISK READ` text inside a COMMAND, a clock step, midnight, seed 000's blank
    lines, one row with a `%` in its COMMAND and a PID header (`-P`) late in the capture."""
    out = []
    sod = 23 * 3600 + 50 * 60  # 23:50:00: crosses midnight after 600 iterations
    for k in range(iterations):
        sod = (sod + (1 if k != 300 else -5)) % 86400  # iteration 300 steps the clock back 5 s
        clock = f"{sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}"
        unit = "M/s" if k % 97 == 0 else "K/s"
        if k % 250 == 7:
            out.append("")
        out.append(
            f"{clock} Total DISK READ:       {k % 13}.50 K/s | Total DISK WRITE:    {k * 7 % 1000}.25 {unit}"
        )
        out.append(f"{clock} Current DISK READ:     0.00 K/s | Current DISK WRITE:   {k % 500}.75 K/s")
        if k in (0, 1500):
            task = "PID" if k else "TID"
            out.append(f"    TIME  {task}  PRIO  USER     DISK READ  DISK WRITE  SWAPIN      IO    COMMAND")
        out.append(
            f"{clock} {1000 + k % 7:5d} be/4 mysql      {k % 50}.25 K/s  {k * 3 % 997}.50 {unit}  0.00 % "
            f"{k % 90:2d}.11 % mariadbd --basedir=/usr [ib_io_wr-{k % 4}]"
        )
        out.append(f"{clock}   418 be/3 root        0.00 B/s    0.00 B/s  0.00 % 42.33 % [jbd2/sda2-8]")
        if k % 3 == 0:
            out.append(
                f"{clock}  1643 be/4 root        0.00 K/s 336500.29 K/s ?unavailable?  dd bs=64k oflag=dsync"
            )
        if k % 5 == 0:
            user = "1001" if 1000 <= k < 1100 else "www"  # a uid: pandas takes it for a number
            rates = "1.00 G/s    2.00 B/s  0.00 %  0.00 %"
            out.append(f"{clock}  1700 idle {user}  {rates} sh -c 'echo Total DISK READ'")
        if k == 900:
            out.append(f"{clock}  1701 be/4 root        0.00 K/s    0.00 K/s  0.00 %  0.00 % printf 50%%")
        if k % 250 == 7:
            out.append("")
    return "\n".join(out) + "\n"


def test_bulk_reads_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _long_capture(2000)
    expected = row_by_row(iotop.parse, text, date="2026-11-22", tz="Asia/Shanghai")
    batches = bulk_spy(monkeypatch, 600, 30_000, 40_000)
    bulk = iotop.parse(text, date="2026-11-22", tz="Asia/Shanghai")
    assert sum(batches) == len(bulk) and 0 not in batches  # `%` in a COMMAND, uids, ?unavailable?: bulk
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs == expected.attrs
    pd.testing.assert_frame_equal(iotop.parse(io.StringIO(text), date="2026-11-22", tz="Asia/Shanghai"), bulk)
    assert len(bulk) == 2000 * 2 + 667 + 400 + 1
    assert bulk.attrs["notes"][0].endswith("clock went back 5 s (clock step), kept as printed")
    assert bulk["write_kb_s"].max() == max(k * 3 % 997 + 0.5 for k in range(0, 2000, 97)) * 1024  # M/s
    threads = {"ib_io_wr-0", "ib_io_wr-1", "ib_io_wr-2", "ib_io_wr-3", "jbd2/sda2-8"}
    assert set(bulk["thread"].dropna()) == threads
    assert bulk["command"].str.contains("Total DISK READ").sum() == 400
    assert (bulk["command"] == "printf 50%%").sum() == 1 and bulk["delayacct_unavailable"].sum() == 667


def test_without_t_and_with_a_command_over_lines_bulk_reads_as_row_by_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no `-t`: rows start with the TID (no clock: NaN), Total lines with `Total`; a command line with
    # newlines mid-capture: its lines (one starting with a blank, one with a digit) are its COMMAND's
    lines = _long_capture(1500).replace("    TIME  ", "  ").split("\n")
    lines = [line[9:] if line[:2].isdigit() and line[2] == ":" else line for line in lines]
    at = next(k for k, line in enumerate(lines) if k > 2000 and "jbd2" in line)
    lines[at + 1 : at + 1] = ["import os", "    os.sync()", "x = 3 + 4", "5 * 6"]
    text = "\n".join(lines)
    expected = row_by_row(iotop.parse, text)
    batches = bulk_spy(monkeypatch, 600, 30_000, 40_000)
    bulk = iotop.parse(text)
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs == expected.attrs and sum(batches) > 0.9 * len(bulk) and 0 in batches
    assert bulk["clock_s"].isna().all() and bulk.attrs["totals"][0]["clock"] is None
    assert (
        bulk["command"].str.endswith("[jbd2/sda2-8]\nimport os\n    os.sync()\nx = 3 + 4\n5 * 6").sum() == 1
    )
    assert bulk.attrs["notes"][-1].startswith("4 line(s) joined to the COMMAND")


def test_bulk_names_a_bad_line_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _long_capture(2000).split("\n")
    lines[5000] = lines[5000].replace(".", ",", 1)
    text = "\n".join(lines)
    with pytest.raises(ParseError) as want:
        row_by_row(iotop.parse, text)
    bulk_spy(monkeypatch, 600, 30_000, 40_000)
    with pytest.raises(ParseError) as got:
        iotop.parse(text)
    assert str(got.value) == str(want.value) and got.value.line_no == 5001


def test_users_printed_as_uids_are_read_in_bulk_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # iotop prints the uid where the user has no name (a container's): `1001`, kept as text, `0007` too
    rows = ["07:20:10  1677 be/4 1001        0.00 K/s 11456.54 K/s  0.00 % 43.11 % dd if=/dev/zero"]
    rows.append("07:20:10  1678 be/4 0007        1.00 K/s     2.00 K/s  0.00 %  1.00 % sh")
    head = "07:20:10 Total DISK READ:  0.00 K/s | Total DISK WRITE:  1.00 K/s\n"
    head += "07:20:10 Current DISK READ:  0.00 K/s | Current DISK WRITE:  1.00 K/s\n"
    text = (head + "\n".join(rows) + "\n") * 400
    batches = bulk_spy(monkeypatch, 600, 30_000, 40_000)
    df = iotop.parse(text)
    assert batches and 0 not in batches
    assert df["user"].tolist() == ["1001", "0007"] * 400 and df["user"].dtype == "string"
    pd.testing.assert_frame_equal(df, row_by_row(iotop.parse, text))


def test_a_command_line_with_newlines_belongs_to_its_row() -> None:
    # iotop prints `python3 -c "<script>"` with the script's newlines raw: the next lines are the
    # COMMAND's, not garbage (a real capture; the whole file was refused before)
    df = iotop.parse(D / "iotop-0.6-botqk-multiline-command.txt")
    scripts = df[df["command"].str.startswith("python3 -c", na=False)]
    assert len(scripts) == 3 and scripts["write_kb_s"].min() > 100_000
    assert scripts["command"].iloc[0].split("\n")[1:3] == ["import mmap, os, sys, time", "t=time.time()"]
    assert df.attrs["notes"] == ["15 line(s) joined to the COMMAND above them (command lines with newlines)"]
    assert df["iteration"].max() == 3 and (df["command"].str.startswith("awk function esc(s)")).sum() == 3

"""pidstat parser: the three tables merged per task, -t threads, -l commands, averages, locales, errors.

Expected values are read off the raw fixture lines (quoted in the comments), not off the parser.
"""

from __future__ import annotations

import io
import subprocess

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import pidstat
from perfkit.parsers._common import skips_of

from .conftest import FIXTURES, bulk_spy, need_tool, row_by_row

P = FIXTURES / "pidstat"
OLTP = P / "sysstat-12.6-u-d-w-iso-oltp.txt"


def _task(df: pd.DataFrame, stamp: str, pid: int, tid: int | None = None) -> pd.Series:
    hit = df[(df["timestamp"] == pd.Timestamp(stamp, tz="UTC")) & (df["pid"] == pid)]
    hit = hit[hit["tid"].isna()] if tid is None else hit[hit["tid"] == tid]
    assert len(hit) == 1
    return hit.iloc[0]


def test_three_tables_merged_per_task() -> None:
    df = pidstat.parse(OLTP)
    # mariadbd at 06:56:36: `102  27592  45.54  36.63  0.00  0.00  82.18  0  mariadbd` (-u) and
    # `102  27592  0.00  4265.35  0.00  0  mariadbd` (-d); absent from that interval's -w table
    r = _task(df, "2026-11-23 06:56:36", 27592)
    assert (r["uid"], r["usr_pct"], r["system_pct"], r["cpu_pct"], r["cpu"]) == (102, 45.54, 36.63, 82.18, 0)
    assert (r["kb_rd_s"], r["kb_wr_s"], r["kb_ccwr_s"], r["iodelay"]) == (0.0, 4265.35, 0.0, 0)
    assert pd.isna(r["cswch_s"]) and pd.isna(r["nvcswch_s"]) and r["command"] == "mariadbd"
    # kworker 44 is in the -u table (`1.98` %system, CPU 1) and the -w table (`875.25  0.00`)
    k = _task(df, "2026-11-23 06:56:36", 44)
    assert (k["system_pct"], k["cpu"], k["cswch_s"], k["nvcswch_s"]) == (1.98, 1, 875.25, 0.0)
    assert pd.isna(k["kb_wr_s"]) and pd.isna(k["iodelay"])  # not in the -d table: NA, never 0


def test_one_row_per_timestamp_and_task() -> None:
    df = pidstat.parse(OLTP)
    # 46 = distinct (time, PID) pairs over the non-Average rows, counted with awk (README.md)
    assert len(df) == 46 and not df.duplicated(["timestamp", "pid", "tid"]).any()
    assert df["tgid"].isna().all() and df["tid"].isna().all()  # no -t
    assert sorted(df["timestamp"].unique()) == [
        pd.Timestamp(f"2026-11-23 06:56:{s}", tz="UTC") for s in (36, 37, 38)
    ]  # the rows' times; header lines carry the interval start (06:56:35 ...)


def test_averages_are_kept_apart() -> None:
    df = pidstat.parse(OLTP)
    avg = {a["pid"]: a for a in df.attrs["averages"]}
    # `Average:      102     27592   43.52   36.54    0.00    0.00   80.07     -  mariadbd`
    # `Average:      102     27592      0.00   4241.86      0.00       0  mariadbd`
    m = avg[27592]
    assert (m["usr_pct"], m["system_pct"], m["cpu_pct"], m["kb_wr_s"], m["iodelay"]) == (
        43.52,
        36.54,
        80.07,
        4241.86,
        0,
    )
    assert m["cpu"] is None and m["cswch_s"] is None and m["command"] == "mariadbd"
    assert "timestamp" not in m and m["host"] == "vm"
    assert df["timestamp"].notna().all()  # no Average row became a sample


def test_empty_io_table() -> None:
    df = pidstat.parse(P / "sysstat-12.6-u-d-w-iso-cpu.txt")
    first = df[df["timestamp"] == pd.Timestamp("2026-11-23 06:56:15", tz="UTC")]
    assert first[["kb_rd_s", "kb_wr_s", "kb_ccwr_s"]].isna().all().all()  # header, then a blank line
    # `06:56:15        0     29992  197.00    2.00    0.00    0.00  199.00     1  sysbench`
    s = _task(df, "2026-11-23 06:56:15", 29992)
    assert (s["usr_pct"], s["cpu_pct"], s["cpu"]) == (197.0, 199.0, 1)


def test_threads() -> None:
    df = pidstat.parse(P / "sysstat-12.6-u-d-w-t-iso-oltp.txt")
    # `06:56:39      102         -     27612   20.59   19.61    0.00   24.51   40.20     0  |__mariadbd`
    # `06:56:39      102         -     27612      0.00   2160.78      0.00       0  |__mariadbd`
    # `06:56:39      102         -     27612   8553.92   2540.20  |__mariadbd`
    t = _task(df, "2026-11-23 06:56:39", 27592, 27612)
    assert (t["tgid"], t["wait_pct"], t["cpu_pct"], t["kb_wr_s"], t["cswch_s"]) == (
        27592,
        24.51,
        40.2,
        2160.78,
        8553.92,
    )
    assert t["command"] == "|__mariadbd"
    # the process row: `102     27592         -   42.16   38.24 ... 80.39     0  mariadbd`
    p = _task(df, "2026-11-23 06:56:39", 27592)
    assert (p["tgid"], p["cpu_pct"], p["command"]) == (27592, 80.39, "mariadbd")
    # both ids printed: `102     27592     27595      2.94      2.94  (mariadbd)__mariadbd`
    b = _task(df, "2026-11-23 06:56:39", 27592, 27595)
    assert (b["cswch_s"], b["command"]) == (2.94, "(mariadbd)__mariadbd") and pd.isna(b["cpu_pct"])
    # `-` TGID rows belong to the process printed above: sysbench's threads
    assert set(df.loc[df["tid"].isin([30210, 30211]), "pid"]) == {30209}
    assert len(df) == 20 and not df.duplicated(["timestamp", "pid", "tid"]).any()


def test_thread_row_without_process_is_an_error() -> None:
    text = (
        "Linux 6.1.0 (db2) \t2026-11-22 \t_x86_64_\t(1 CPU)\n\n"
        "08:00:00      UID      TGID       TID   cswch/s nvcswch/s  Command\n"
        "08:00:01        0         -        75      0.98      0.00  |__worker\n"
    )
    with pytest.raises(ParseError, match="without its process") as info:
        pidstat.parse(text)
    assert info.value.line_no == 4


def test_long_command_kept_verbatim() -> None:
    # pidstat -l prints the whole command line as the last column, spaces included
    text = (
        "Linux 6.1.0 (db2) \t2026-11-22 \t_x86_64_\t(1 CPU)\n\n"
        "08:00:00      UID       PID   cswch/s nvcswch/s  Command\n"
        "08:00:01      102       812      3.00      1.00  /usr/sbin/mariadbd --user=mysql  --port=3306 \n"
    )
    df = pidstat.parse(text)
    assert df.loc[0, "command"] == "/usr/sbin/mariadbd --user=mysql  --port=3306 "
    assert (df.loc[0, "pid"], df.loc[0, "cswch_s"]) == (812, 3.0)


def test_en_us_twelve_hour_clock_and_zone() -> None:
    df = pidstat.parse(P / "sysstat-12.6-u-d-w-en_US-12h.txt", tz="America/New_York")
    # `06:56:20 AM     0     29992  192.08 ...` on 11/23/2026, EST = UTC-5
    s = _task(df, "2026-11-23 11:56:20", 29992)
    assert s["usr_pct"] == 192.08 and s["cpu"] == 1


def test_midnight_and_de_de_commas() -> None:
    # header at 23:59:59 (interval start), rows at 00:00:00 of the next day; de_DE decimal commas
    text = (
        "Linux 6.1.0 (db2) \t22.11.2026 \t_x86_64_\t(1 CPU)\n\n"
        "23:59:58      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command\n"
        "23:59:59        0       100   12,50    1,00    0,00    0,00   13,50     0  app\n\n"
        "23:59:59      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command\n"
        "00:00:00        0       100   10,00    2,00    0,00    0,00   12,00     0  app\n\n"
        "Durchschn.:      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command\n"
        "Durchschn.:        0       100   11,25    1,50    0,00    0,00   12,75     -  app\n"
    )
    df = pidstat.parse(text)
    assert df["timestamp"].tolist() == [
        pd.Timestamp("2026-11-22 23:59:59", tz="UTC"),
        pd.Timestamp("2026-11-23 00:00:00", tz="UTC"),
    ]
    assert df["usr_pct"].tolist() == [12.5, 10.0]
    assert df.attrs["averages"][0]["cpu_pct"] == 12.75


def test_task_twice_in_one_table_is_an_error() -> None:
    lines = OLTP.read_text().splitlines(keepends=True)
    lines.insert(4, lines[3])  # `06:56:36        0         1 ... process_api` again as line 5
    with pytest.raises(ParseError, match="twice") as info:
        pidstat.parse("".join(lines))
    assert info.value.line_no == 5


def test_cut_last_line_dropped_and_counted() -> None:
    df = pidstat.parse(P / "sysstat-12.6-u-d-w-iso-truncated-last-line.txt")
    assert len(df) == 46 and df.attrs["dropped_lines"] == 1
    assert 30215 not in {a["pid"] for a in df.attrs["averages"] if a["cswch_s"] is not None}


def test_garbage_mid_file_names_the_line() -> None:
    lines = OLTP.read_text().splitlines(keepends=True)
    lines.insert(10, "06:56:36        0        77    oops\n")
    with pytest.raises(ParseError) as info:
        pidstat.parse("".join(lines))
    assert info.value.line_no == 11 and "oops" in info.value.line


@pytest.mark.parametrize(
    ("pid", "ok"), [("9007199254740991", True), ("9007199254740992", False), ("9" * 25, False)]
)
def test_ids_past_two_to_the_53_name_the_line(pid: str, ok: bool) -> None:
    # ids are held as float64 until the frame is built: past 2**53 they would come out changed
    lines = OLTP.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace("27592", pid)  # `06:56:36      102     27592   45.54 ... mariadbd`
    for source in ("".join(lines), io.StringIO("".join(lines))):
        if ok:
            assert int(pidstat.parse(source)["pid"].iloc[2]) == int(pid)
            continue
        with pytest.raises(ParseError, match="past 2\\*\\*53") as info:
            pidstat.parse(source)
        assert info.value.line_no == 6


def _row_of(df: pd.DataFrame, stamp: str, pid: int) -> pd.Series:
    rows = df[(df["timestamp"] == pd.Timestamp(stamp, tz="UTC")) & (df["pid"] == pid)]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.parametrize("name", ["sysstat-12.6-h-u-d-w-C.txt", "sysstat-12.6-h-u-d-w-iso.txt"])
def test_h_output_is_read(name: str) -> None:
    # `pidstat -h -u -d -w 1 2`: one `# Time UID PID %usr ... nvcswch/s Command` header per interval,
    # every metric of a task on its line; no Average tables
    for source in (P / name, io.StringIO((P / name).read_text())):
        df = pidstat.parse(source)
        assert len(df) == (73 if "C" in name else 56) and df.attrs["averages"] == []
        assert (
            skips_of(df).count == 0 and df[["usr_pct", "kb_wr_s", "iodelay", "cswch_s"]].notna().all().all()
        )
    if (
        "C" in name
    ):  # `12:45:29      102     29285    0.99 ... 39.60     31.68       0      6.93      0.99  mariadbd`
        r = _row_of(df, "2026-11-27 12:45:29", 29285)
        assert (r["uid"], r["usr_pct"], r["kb_wr_s"], r["kb_ccwr_s"], r["cswch_s"]) == (
            102,
            0.99,
            39.6,
            31.68,
            6.93,
        )
        assert (
            r["command"] == "mariadbd"
            and (df["timestamp"] == pd.Timestamp("2026-11-27 12:45:30", tz="UTC")).sum() == 37
        )
    else:  # `12:45:32      102     29285    0.00 ... 32.00     32.00       0     13.00      0.00  mariadbd`
        r = _row_of(df, "2026-11-27 12:45:32", 29285)
        assert (r["kb_wr_s"], r["cswch_s"], r["nvcswch_s"]) == (32.0, 13.0, 0.0)


def test_h_output_with_epoch_seconds_is_read() -> None:
    # jc's centos-7.7 `pidstat -hl` (sysstat 10.1): `#      Time   UID ...`, rows labelled 1646859134
    df = pidstat.parse(P / "jc-centos-7.7-hl-epoch.txt", tz="Asia/Shanghai")  # epoch seconds: UTC whatever tz
    assert len(df) == 43 and df["timestamp"].eq(pd.Timestamp("2022-03-09 20:52:14", tz="UTC")).all()
    r = _row_of(
        df, "2022-03-09 20:52:14", 9
    )  # ` 1646859134     0         9    0.00    0.01    0.00    0.01     0  rcu_sched`
    assert (r["system_pct"], r["cpu_pct"], r["command"]) == (0.01, 0.01, "rcu_sched")
    assert df.loc[0, "command"].startswith("/usr/lib/systemd/systemd --switched-root")  # -l: the command line


@pytest.mark.parametrize("name", ["sysstat-12.6-u-d-w-e-iso.txt", "sysstat-12.6-e-C.txt"])
def test_e_output_skips_the_commands_lines(name: str) -> None:
    # `pidstat -e sh -c 'echo ...'`: the command's stdout/stderr lines come between banner and tables
    df = pidstat.parse(P / name)
    skipped = skips_of(df)
    assert len(df) == 1 and len(df.attrs["averages"]) == 1 and df.loc[0, "command"] == "sh"
    if "iso" in name:  # `hello from the command`, `done`, `ls: cannot access '/nonexistent': ...`
        assert skipped.count == 3 and [q.line_no for q in skipped.quoted] == [2, 3, 4]
        assert (df.loc[0, "kb_rd_s"], df.loc[0, "cswch_s"], df.loc[0, "nvcswch_s"]) == (1.99, 2.49, 0.5)
    else:  # `hi`, `bye`; then its `Average:` row right below the interval's row, under the same header
        assert skipped.count == 2 and skipped.quoted[1].text == "bye"
        assert df.attrs["averages"][0]["pid"] == 7153 and df.loc[0, "timestamp"] == pd.Timestamp(
            "2026-11-27 12:45:36", tz="UTC"
        )


def test_wrapped_iodelay_is_missing_not_a_refusal() -> None:
    # sysstat's own tests/expected1.pidstat-At: `12:53:26 1000 8741 8785 ... 18446744073709551611
    # (firefox)__disk_cache:0` (2**64 - 5) and its `Average:` row's 3074457345618258432
    name = P / "sysstat-tests-expected1-pidstat-At-iodelay-wrap.txt"
    for source in (name, io.StringIO(name.read_text())):
        df = pidstat.parse(source)
        skipped = skips_of(df)
        assert len(df) == 59 and skipped.count == 2 and [q.line_no for q in skipped.quoted] == [122, 270]
        assert "-5 wrapped past 2**64" in skipped.quoted[0].reason
        r = _row_of(df[df["tid"] == 8785], "2020-06-01 12:53:26", 8741)
        assert pd.isna(r["iodelay"]) and r["kb_wr_s"] == 0.05  # the rest of the line is read
        assert df["iodelay"].max() < 1000
        assert any("line 122: iodelay 18446744073709551611" in note for note in df.attrs["notes"])


def test_empty_frame() -> None:
    df = pidstat.parse("")
    assert list(df.columns) == list(pidstat.SCHEMA) and len(df) == 0
    assert df.attrs["averages"] == [] and df.attrs["dropped_lines"] == 0


def test_sniff() -> None:
    for path in sorted(P.glob("*.txt")):
        assert pidstat.sniff(path.read_text()), path.name
    for path in sorted(FIXTURES.glob("*/*.txt")):
        if path.parent.name != "pidstat":
            assert not pidstat.sniff(path.read_text(errors="replace")), path


@pytest.mark.lab
def test_real_pidstat_here() -> None:
    need_tool("pidstat")
    out = subprocess.run(
        ["pidstat", "-u", "-d", "-w", "1", "2"],
        capture_output=True,
        text=True,
        timeout=15,
        env={"LC_ALL": "C", "S_TIME_FORMAT": "ISO", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    df = pidstat.parse(out)
    assert len(df) > 0 and not df.duplicated(["timestamp", "pid", "tid"]).any()
    assert df.attrs["averages"]


_U = "     UID      TGID       TID    %usr %system  %guest   %wait    %CPU   CPU  Command"
_D = "     UID      TGID       TID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command"
_W = "     UID      TGID       TID   cswch/s nvcswch/s  Command"


def _long_capture(intervals: int, threads: bool) -> str:
    """`pidstat -u -d -w [-t] 1` in sysstat 12.6's layout (the fixtures'), long enough for many chunks:
    tasks that come and go, an empty -d table now and then, midnight, a clock step back, `Average:`
    tables, and with -t process rows (TID `-`), their threads (TGID `-`, `|__name`) and a thread
    printed with both ids."""
    u, d, w = (
        (_U, _D, _W) if threads else (h.replace("      TGID       TID", "       PID") for h in (_U, _D, _W))
    )
    out = ["Linux 6.1.0-26-amd64 (db1) \t2026-11-22 \t_x86_64_\t(16 CPU)", ""]
    sod = 23 * 3600 + 55 * 60  # 23:55:00: midnight after 300 intervals

    def ids(pid: int, tid: int | None) -> str:
        if not threads:
            return f"{pid:>9}"
        return f"{pid:>9}         -" if tid is None else f"        - {tid:>9}"

    for k in range(intervals):
        t0 = sod
        sod = (sod + (1 if k != 450 else -3)) % 86400  # interval 450 steps the clock back 3 s
        c0 = f"{t0 // 3600:02d}:{t0 // 60 % 60:02d}:{t0 % 60:02d}"
        c = f"{sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}"
        tasks = [(1, None, "systemd"), (27592, None, "mariadbd")] + [(30000 + k % 7, None, "sysbench")]
        if threads:
            tasks[2:2] = [(27592, 27612, "|__mariadbd"), (27592, 27600 + k % 3, "|__mariadbd")]
        out.append(c0 + u)
        for j, (pid, tid, cmd) in enumerate(tasks):
            out.append(
                f"{c} {102 if pid == 27592 else 0:>8}{ids(pid, tid)}   {k % 50:2d}.{j}5   {j}.98    0.00"
                f"    0.00   {k % 50 + j:2d}.33   {j % 2:>3}  {cmd}"
            )
        out += ["", c0 + d]
        if k % 9:
            for pid, tid, cmd in tasks[1:3]:
                kb = f"     0.00   {k * 13 % 4000:5d}.50      0.00  {k % 5:>6}"
                out.append(f"{c} {0:>8}{ids(pid, tid)} {kb}  {cmd}")
        out += ["", c0 + w]
        for pid, tid, cmd in tasks[:2]:
            out.append(f"{c} {0:>8}{ids(pid, tid)}   {k % 97:5d}.00      2.00  {cmd}")
        if threads and k % 4 == 0:
            out.append(f"{c} {102:>8}     27592     27595      2.94      2.94  (mariadbd)__mariadbd")
        out.append("")
    avg = u.replace("   CPU  Command", "   CPU  Command")
    out.append("Average:" + avg)
    out.append(f"Average: {0:>8}{ids(1, None)}    0.00    0.33    0.00    0.00    0.33     -  systemd")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("threads", [False, True])
def test_bulk_path_reads_as_the_line_grammar(monkeypatch: pytest.MonkeyPatch, threads: bool) -> None:
    from perfkit.parsers import _table

    text = _long_capture(900, threads)
    walk = row_by_row(pidstat.parse, text, tz="Asia/Shanghai")  # the per-row grammar alone
    # small chunks: intervals and tables cut anywhere, every layout's rows of a chunk read at once
    reads = bulk_spy(monkeypatch, 300, _table.CHUNK_BYTES, 4093)
    bulk = pidstat.parse(text, tz="Asia/Shanghai")
    assert len(reads) > 30 and sum(map(bool, reads)) >= len(reads) - 3  # nearly all blocks read in bulk
    pd.testing.assert_frame_equal(bulk, walk)
    assert bulk.attrs == walk.attrs
    (note,) = bulk.attrs["notes"]
    assert note.endswith(": clock went back 3 s (clock step), kept as printed")
    # the first row of interval 450, whose rows print 00:02:27 after 00:02:30
    assert text.splitlines()[int(note.split()[1].rstrip(":")) - 1].startswith("00:02:27 ")
    # 23:55:00 + 899 s - 4 s of step = 00:09:56 on the 23rd in +08:00
    assert bulk["timestamp"].iloc[-1] == pd.Timestamp("2026-11-22 16:09:56", tz="UTC")
    # one row per task and interval: 3 processes, with -t 2 threads more and every 4th interval a third
    assert len(bulk) == (900 * 5 + 225 if threads else 900 * 3)

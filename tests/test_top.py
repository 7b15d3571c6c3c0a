"""top parser: values of real `top -b` / `-H` captures, summaries, clocks, verbatim commands, failures."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import top

from .conftest import FIXTURES, row_by_row

P = FIXTURES / "top"
THREADS = P / "procps-4.0.2-H-w512.txt"
SEED = P / "procps-3.3-seed000.synthetic.txt"


def test_threads_capture_values() -> None:
    df = top.parse(THREADS, host="db1")
    # 3 iterations x 6 thread rows (each `Threads:   6 total`)
    assert len(df) == 18 and df["host"].eq("db1").all()
    assert df["iteration"].tolist() == [0] * 6 + [1] * 6 + [2] * 6
    # `top - 07:20:01` -> 7*3600 + 20*60 + 1
    assert df.loc[0, "clock_s"] == 26401.0 and df.loc[6, "clock_s"] == 26402.0
    assert df["timestamp"].isna().all() and str(df["timestamp"].dtype) == "datetime64[ns, UTC]"
    # first row: `      3 root      20   0   22584   8768   6936 S  99.9   0.0   0:01.98 sysbench`
    r = df.loc[0]
    assert (r["pid"], r["user"], r["pr"], r["ni"], r["state"]) == (3, "root", "20", 0, "S")
    assert (r["virt_kb"], r["res_kb"], r["shr_kb"]) == (22584.0, 8768.0, 6936.0)
    assert r["cpu_pct"] == 99.9 and r["mem_pct"] == 0.0
    assert r["time_s"] == pytest.approx(1.98) and r["command"] == "sysbench"
    # the sysbench worker threads are TIDs 5 and 6 in every iteration
    for _, it in df[df["command"] == "sysbench"].groupby("iteration"):
        assert sorted(it["pid"]) == [3, 5, 6]
    assert df.loc[4, "user"] == "systemd+"  # systemd-timesync, cut to 8 by top
    assert df.attrs["dropped_lines"] == 0 and df.attrs["unknown_columns"] == []
    assert any("iteration 0" in n for n in df.attrs["notes"])


def test_threads_summary() -> None:
    s = top.parse(THREADS).attrs["summaries"]
    assert len(s) == 3
    first = s[0]
    # `top - 07:20:01 up  1:34,  0 user,  load average: 0.78, 1.17, 2.67`
    assert (first["clock"], first["up"], first["users"]) == ("07:20:01", "1:34", 0)
    assert (first["load_1"], first["load_5"], first["load_15"]) == (0.78, 1.17, 2.67)
    # `Threads:   6 total,   3 running,   3 sleeping,   0 stopped,   0 zombie`
    assert first["threads_mode"] is True
    assert [first[f"tasks_{k}"] for k in ("total", "running", "sleeping", "stopped", "zombie")] == [
        6,
        3,
        3,
        0,
        0,
    ]
    # iteration 1: `%Cpu(s): 98.7 us,  1.3 sy,  0.0 ni,  0.0 id, ...`
    assert (s[1]["cpu_us"], s[1]["cpu_sy"], s[1]["cpu_id"], s[1]["cpu_st"]) == (98.7, 1.3, 0.0, 0.0)
    # `MiB Mem :  24105.6 total,  23250.8 free,    513.4 used,    643.0 buff/cache`
    assert (first["mem_total_mib"], first["mem_free_mib"]) == (24105.6, 23250.8)
    assert (first["mem_used_mib"], first["mem_buff_cache_mib"]) == (513.4, 643.0)
    # `MiB Swap:      0.0 total,      0.0 free,      0.0 used.  23592.1 avail Mem`
    assert first["swap_total_mib"] == 0.0 and first["mem_avail_mib"] == 23592.1


def test_summary_lines_of_another_form_read_among_the_usual() -> None:
    # each kind of summary line is read for all of a stretch at once: one %Cpu(s) line of another form
    # (fewer pairs, another order) is read by its pairs, the others as usual; a bad clock names its line
    lines = THREADS.read_text().splitlines(keepends=True)
    lines[16] = "%Cpu(s):  1.3 sy, 98.7 us,  0.0 id\n"  # line 17, iteration 1
    s = top.parse("".join(lines)).attrs["summaries"]
    assert (s[1]["cpu_us"], s[1]["cpu_sy"], s[1]["cpu_id"]) == (98.7, 1.3, 0.0)
    assert math.isnan(s[1]["cpu_st"]) and math.isnan(s[1]["cpu_wa"])
    assert (s[0]["cpu_id"], s[2]["cpu_us"], s[2]["cpu_st"]) == (100.0, 98.0, 0.0)
    lines[28] = lines[28].replace("07:20:03", "24:00:03")  # line 29
    with pytest.raises(ParseError, match="unreadable clock '24:00:03'") as info:
        top.parse("".join(lines))
    assert info.value.line_no == 29


def test_processes_capture_is_tasks_mode() -> None:
    df = top.parse(P / "procps-4.0.2-w512.txt")
    assert df.attrs["summaries"][0]["threads_mode"] is False
    assert df["iteration"].max() == 1


def test_size_suffix_converted_to_kib() -> None:
    df = top.parse(P / "procps-4.0.2-suffix-g.txt")
    # `32689 mysql 20 0 8193.3g 132784 24672 S 0.0 0.5 0:00.66 mariadbd`: g = KiB * 1024**2
    assert df.loc[0, "virt_kb"] == pytest.approx(8193.3 * 1024**2)
    assert df.loc[0, "res_kb"] == 132784.0
    assert (df.loc[1, "virt_kb"], df.loc[1, "command"]) == (0.0, "kthreadd")


def test_seed000_layout_kib_rollover_and_time_forms() -> None:
    df = top.parse(SEED)
    s = df.attrs["summaries"]
    # 23:59:59 then 00:00:00: midnight passed, the clock keeps counting
    assert df["clock_s"].unique().tolist() == [86399.0, 86400.0]
    assert s[0]["up"] == "3 days,  2:05" and s[0]["tasks_zombie"] == 1
    # `KiB Mem : 16266092 total` -> / 1024 MiB
    assert s[0]["mem_total_mib"] == pytest.approx(16266092 / 1024)
    assert s[0]["mem_avail_mib"] == pytest.approx(12729492 / 1024)
    mysql = df.loc[0]
    assert mysql["time_s"] == 10123 * 60 + 45  # `10123:45`: minutes:seconds once hundredths don't fit
    assert mysql["res_kb"] == pytest.approx(1.2 * 1024**2)  # `1.2g`
    assert df.loc[1, "pr"] == "rt" and df.loc[1, "time_s"] == pytest.approx(0.52)
    assert df.loc[2, "time_s"] == pytest.approx(312 * 60 + 7.33)
    assert df.loc[3, "time_s"] == 2 * 3600 + 5 * 60  # `2,05`: hours,minutes
    assert df.loc[2, "command"] == "tidb-server --store=tikv --path=10.0.0.5:2379 --config=conf/"


def test_command_kept_verbatim() -> None:
    c = top.parse(P / "procps-4.0.2-c-html-cjk-C.txt")
    assert c.loc[0, "command"] == 'sh -c sleep 60; : <img src=x onerror=alert(1)> ????????? "q"'
    utf8 = top.parse(P / "locale-en_US-c-html-cjk.txt")
    assert utf8.loc[0, "command"] == 'sh -c sleep 60; : <img src=x onerror=alert(1)> 数据库 "q"'


def test_inner_and_trailing_blanks_of_command_kept() -> None:
    text = THREADS.read_text().split("\n\n")[0] + "\n\n"
    text += "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
    text += (
        "      9 root      20   0    2592   1076    972 R   1.0   0.0   0:00.01 a  b   <script>x</script> \n"
    )
    assert top.parse(text).loc[0, "command"] == "a  b   <script>x</script> "


def test_unknown_columns_listed_and_skipped() -> None:
    text = (
        "top - 07:20:01 up 46 min,  1 user,  load average: 0.78, 1.17, 2.67\n\n"
        "    PID USER     nMaj  %CPU COMMAND\n"
        "      9 root        3   1.5 x y\n"
    )
    df = top.parse(text)
    assert df.attrs["unknown_columns"] == ["nMaj"]
    assert (df.loc[0, "cpu_pct"], df.loc[0, "command"]) == (1.5, "x y")
    assert math.isnan(df.loc[0, "mem_pct"]) and df["virt_kb"].isna().all()


def test_overflowed_memory_value_is_nan() -> None:
    text = (
        "top - 07:20:01 up 46 min,  1 user,  load average: 0.78, 1.17, 2.67\n"
        "KiB Mem : 13174609+total, 12345678+free,  1000000 used,  2000000 buff/cache\n"
    )
    s = top.parse(text).attrs["summaries"][0]
    assert math.isnan(s["mem_total_mib"]) and math.isnan(s["mem_free_mib"])
    assert s["mem_used_mib"] == pytest.approx(1000000 / 1024)


def test_cut_last_line_dropped_and_counted() -> None:
    df = top.parse(P / "truncated-last-line.txt")
    assert len(df) == 17 and df.attrs["dropped_lines"] == 1  # the last thread row (TID 7, `top`) is cut


def test_garbage_mid_file_names_the_line() -> None:
    lines = THREADS.read_text().splitlines(keepends=True)
    lines[9] = "      5 root      20   0   22584   8768 garbage\n"  # line 10 of the file
    with pytest.raises(ParseError) as info:
        top.parse("".join(lines))
    assert info.value.line_no == 10


def test_de_DE_refused() -> None:
    with pytest.raises(ParseError, match="capture not taken under LC_ALL=C") as info:
        top.parse(P / "locale-de_DE.txt")
    assert info.value.line_no == 1  # `load average: 0,54, 1,14, 2,67`


def test_empty_and_summary_only() -> None:
    for text in ("", "top - 07:20:01 up 46 min,  1 user,  load average: 0.78, 1.17, 2.67\n"):
        df = top.parse(text)
        assert len(df) == 0 and list(df.columns) == list(top.SCHEMA)
        assert {c: str(t) for c, t in df.dtypes.items()} == top.SCHEMA


def test_sniff() -> None:
    for f in sorted(P.glob("*.txt")):
        assert top.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "top"]
    assert others and not [f for f in others if top.sniff(f.read_text(errors="replace"))]


def test_the_capture_start_dates_the_rows() -> None:
    # top prints the host's wall clock, `top - 07:20:01`: started 2026-11-22 23:20:00.95 UTC, which is
    # 07:20:00.95 on the 23rd in Shanghai, the first screen is 2026-11-23 07:20:01 +08:00
    import pandas as pd

    start = pd.Timestamp("2026-11-22T23:20:00.950Z")
    df = top.parse(THREADS, tz="Asia/Shanghai", started_at=start)
    assert df["timestamp"].iloc[0] == pd.Timestamp("2026-11-22T23:20:01Z")
    assert (df["timestamp"] - df["timestamp"].iloc[0]).dt.total_seconds().tolist() == (
        df["clock_s"] - df["clock_s"].iloc[0]
    ).tolist()
    assert not any("timestamp is NaT" in n for n in df.attrs["notes"])
    # the same start through the registry's context
    from perfkit import parsers
    from perfkit.parsers._common import ParseContext

    via = parsers.parse("top", THREADS, ParseContext("db1", "Asia/Shanghai", start))
    assert via["timestamp"].equals(df["timestamp"]) and via["host"].eq("db1").all()


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, want)
    assert {k: v for k, v in got.attrs.items() if k != "summaries"} == {
        k: v for k, v in want.attrs.items() if k != "summaries"
    }
    pd.testing.assert_frame_equal(pd.DataFrame(got.attrs["summaries"]), pd.DataFrame(want.attrs["summaries"]))


@pytest.mark.parametrize("path", sorted(P.glob("*.txt")), ids=lambda p: p.name)
def test_bulk_reads_as_row_by_row(path: Path) -> None:
    try:
        want = row_by_row(top.parse, path)
    except ParseError as exc:  # de_DE
        with pytest.raises(ParseError) as got:
            top.parse(path)
        assert str(got.value) == str(exc)
        return
    _same(top.parse(path), want)


def test_long_capture_in_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # 400 screens of the -H capture, clocks from 23:50:00 on (midnight passes), and `-c` command lines
    # with blanks in every other screen: chunks cut inside screens, between a `top - ` line and its rows
    from perfkit.parsers import _chunks, _table

    screens = THREADS.read_text().split("\n\n")[:2]  # summary, then header and rows
    rows = screens[1].splitlines()
    text = []
    for i in range(400):
        clock = (23 * 3600 + 50 * 60 + i) % 86400
        head = screens[0].replace("07:20:01", f"{clock // 3600:02d}:{clock // 60 % 60:02d}:{clock % 60:02d}")
        extra = " --config x.cnf" if i % 2 else ""
        body = [rows[0]] + [r + (extra if k % 2 else "") for k, r in enumerate(rows[1:])]
        text.append(head + "\n\n" + "\n".join(body) + "\n")
    text = "\n".join(text)
    want = row_by_row(top.parse, text)
    monkeypatch.setattr(_table, "CHUNK_ROWS", 97)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 4093)
    got = top.parse(text)
    _same(got, want)
    assert len(got) == 2400 and got["iteration"].max() == 399
    assert got["clock_s"].iloc[-1] == 23 * 3600 + 50 * 60 + 399  # past midnight: + 86400, not 0:06:39
    assert (got["command"] == "sysbench --config x.cnf").sum() == 200  # TID 5 in every other screen

"""ps parser: values, custom headers, verbatim commands, cut-off and malformed captures."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import ps

from .conftest import FIXTURES, bulk_spy, row_by_row

P = FIXTURES / "ps"
AUXWW = P / "procps-4.0.2-auxww.txt"


def test_auxww_values() -> None:
    df = ps.parse(AUXWW, host="db1")
    # 8 lines in the file: the header and 7 processes (PIDs 1-6 and 8, `ps` itself)
    assert len(df) == 7 and df["host"].eq("db1").all()
    assert df["pid"].tolist() == [1, 2, 3, 4, 5, 6, 8]
    # row `root 5  100  0.0 2592 1712 ? R 07:02 0:02 sh -c i=0; while ...` (the busy loop)
    busy = df.loc[4]
    assert busy["cpu_pct"] == 100.0 and busy["mem_pct"] == 0.0
    assert busy["vsz_kb"] == 2592 and busy["rss_kb"] == 1712
    assert busy["tty"] == "?" and busy["stat"] == "R" and busy["start"] == "07:02"
    assert busy["time"] == "0:02" and busy["cpu_time_s"] == 2.0
    assert busy["command"] == "sh -c i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done"
    assert df.loc[2, "user"] == "systemd+"  # systemd-timesync, cut by ps to 8 characters
    assert df.attrs["unknown_columns"] == [] and df.attrs["dropped_lines"] == 0


def test_command_kept_verbatim() -> None:
    # Under LC_ALL=C ps prints each of the 9 UTF-8 bytes of 数据库 as `?`
    c = ps.parse(AUXWW)
    assert c.loc[3, "command"] == 'sh -c sleep 60; : <img src=x onerror=alert(1)> ????????? "q"'
    utf8 = ps.parse(P / "locale-en_US-auxww.txt")
    assert utf8.loc[3, "command"] == 'sh -c sleep 60; : <img src=x onerror=alert(1)> 数据库 "q"'


def test_inner_and_trailing_spaces_of_command_kept() -> None:
    text = (
        "USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\n"
        "root 7 0.0 0.1 10 20 pts/0 S+ Nov22 123:45 a  b   <script>x</script> \n"
    )
    row = ps.parse(text).loc[0]
    assert row["command"] == "a  b   <script>x</script> "
    assert row["start"] == "Nov22" and row["tty"] == "pts/0"
    assert row["cpu_time_s"] == 123 * 60 + 45  # aux TIME is minutes:seconds, minutes past 59


@pytest.mark.parametrize(
    ("printed", "seconds"),
    [("0:18", 18.0), ("00:00:02", 2.0), ("1:02:03", 3723.0), ("2-01:00:05", 2 * 86400 + 3605.0)],
)
def test_cpu_time_forms(printed: str, seconds: float) -> None:
    df = ps.parse(f"  PID     TIME CMD\n    1 {printed} init\n")
    assert df.loc[0, "time"] == printed and df.loc[0, "cpu_time_s"] == seconds


def test_vsz_wider_than_its_column() -> None:
    # `mysql 27592 4.0 0.6 8591354564 171436 ?   Sl ...`: VSZ overflows into RSS's place
    df = ps.parse(P / "procps-4.0.2-uww-vsz-overflow.txt")
    assert df.loc[1, "vsz_kb"] == 8591354564 and df.loc[1, "rss_kb"] == 171436
    assert df.loc[1, "stat"] == "Sl" and df.loc[1, "command"].startswith("/usr/sbin/mariadbd --user=mysql")
    assert df.loc[0, "command"] == "[kthreadd]"


def test_custom_header_by_name() -> None:
    df = ps.parse(P / "procps-4.0.2-eo-pid-ppid-comm-args.txt")
    # `      4       1 sh              sh -c sleep 60; : <img ...`: args, not comm, is the command
    assert df.loc[3, "pid"] == 4 and df.loc[3, "command"].startswith("sh -c sleep 60; :")
    assert df["cpu_pct"].isna().all() and df["user"].isna().all()
    assert df.attrs["unknown_columns"] == ["PPID", "COMMAND"]
    eo = ps.parse(P / "procps-4.0.2-eo-etime-wchan.txt")
    assert eo.attrs["unknown_columns"] == ["ELAPSED", "WCHAN"]
    assert eo.loc[4, "time"] == "00:00:02" and eo.loc[4, "rss_kb"] == 1712 and eo.loc[4, "command"] == "sh"


def test_multiword_column_refused() -> None:
    with pytest.raises(ParseError, match="several words"):
        ps.parse("  PID                  STARTED CMD\n    1 Mon Nov 23 05:45:01 2026 init\n")


def test_cut_last_line_dropped_and_counted() -> None:
    df = ps.parse(P / "truncated-last-line.txt")
    assert len(df) == 6 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    lines = AUXWW.read_text().splitlines()
    lines.insert(3, "root  x  0.0 0.0 1 1 ? S 07:02 0:00 oops")
    with pytest.raises(ParseError) as info:
        ps.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4 and "oops" in info.value.line


@pytest.mark.parametrize("column", [1, 4, 5])  # PID, VSZ, RSS
@pytest.mark.parametrize("number", ["9223372036854775808", "99999999999999999999999"])
def test_integer_past_int64_names_the_line(column: int, number: str, tmp_path: Path) -> None:
    lines = AUXWW.read_text().splitlines(keepends=True)
    fields = lines[2].split(None, 10)
    fields[column] = number
    lines[2] = " ".join(fields)  # line 3: `root 2 ... sleep 60`
    path = tmp_path / "ps.txt"
    path.write_text("".join(lines))
    for source in ("".join(lines), path, io.StringIO("".join(lines))):
        with pytest.raises(ParseError) as info:
            ps.parse(source)
        assert info.value.line_no == 3 and number in info.value.line


def test_int64_max_is_read() -> None:
    lines = AUXWW.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace("2500  1480", f"{2**63 - 1}  1480")
    assert ps.parse("".join(lines)).loc[1, "vsz_kb"] == 2**63 - 1


def test_decimal_comma_refused() -> None:
    with pytest.raises(ParseError, match="LC_ALL=C") as info:
        ps.parse(
            "USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\nroot 1 0,5 0.0 1 1 ? S 07:02 0:00 x\n"
        )
    assert info.value.line_no == 2


def test_empty_and_header_only() -> None:
    for text in ("", "USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\n"):
        df = ps.parse(text)
        assert len(df) == 0 and list(df.columns) == list(ps.SCHEMA)


def test_sniff() -> None:
    for f in sorted(P.glob("*.txt")):
        assert ps.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "ps"]
    assert others and not [f for f in others if ps.sniff(f.read_text(errors="replace"))]


def _long_capture(n: int) -> str:
    """`ps auxww` of n processes: VSZ wider than its column (the rest of the row pushed right), commands
    with inner and trailing blanks, a tab, non-ASCII, `-` and numbers; the header again halfway."""
    head = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"
    cmds = ["sleep 60", "/usr/sbin/mariadbd --user=mysql  -x ", "sh -c a\tb", "数据库 -5 1e5"]
    cmds.append("[kworker/1:1H]")
    rows = [head]
    for k in range(n):
        vsz = 8591349976 if k % 7 == 0 else 2592 + k % 977
        user = "systemd+" if k % 5 == 0 else "root"
        mins = k % 700
        rows.append(
            f"{user:<8} {k + 1:7d} {k % 13 / 10:4.1f}  0.{k % 10} {vsz:6d} {1724 + k % 311:5d} "
            f"{'?' if k % 3 else 'pts/0':<8} {'Ssl' if k % 2 else 'R+':<4} {'07:02':>5} "
            f"{f'{mins // 60}:{mins % 60:02d}':>6} "
            f"{cmds[k % len(cmds)]}"
        )
        if k == n // 2:
            rows.append(head)
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("fixture", sorted(P.glob("*.txt")), ids=lambda p: p.name)
def test_fixture_bulk_reads_as_row_by_row(fixture: Path) -> None:
    bulk = ps.parse(fixture)
    pd.testing.assert_frame_equal(bulk, row_by_row(ps.parse, fixture))


def test_long_capture_bulk_reads_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _long_capture(5000)
    expected = row_by_row(ps.parse, text)
    batches = bulk_spy(monkeypatch)
    bulk = ps.parse(text)
    assert len(batches) > 5 and 0 not in batches and sum(batches) == len(bulk) == 5000
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs == expected.attrs
    assert bulk.loc[2, "command"] == "sh -c a\tb" and bulk.loc[1, "command"].endswith("-x ")
    assert bulk.loc[0, "vsz_kb"] == 8591349976 and bulk.loc[0, "user"] == "systemd+"
    assert bulk.loc[3, "command"] == "数据库 -5 1e5" and bulk.loc[700, "cpu_time_s"] == 0.0


def test_bad_line_named_alike_in_bulk_and_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("0.5", "1:5", "-3", "0,5"):
        lines = _long_capture(3000).split("\n")
        fields = lines[2001].split(None, 10)
        fields[2 if bad in ("0,5", "-3") else 9] = bad  # %CPU, or TIME
        lines[2001] = " ".join(fields)
        text = "\n".join(lines)
        with pytest.raises(ParseError) as want:
            row_by_row(ps.parse, text)
        bulk_spy(monkeypatch)
        with pytest.raises(ParseError) as got:
            ps.parse(text)
        assert str(got.value) == str(want.value) and got.value.line_no == 2002, bad


def test_a_blank_other_than_the_space_before_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # `str.split` splits at a tab or U+00A0 too: a tab between two fields is read in bulk, a stretch
    # holding U+00A0 (no ASCII) before a command row by row; both as the split reads them
    lines = _long_capture(3000).split("\n")
    lines[10] = lines[10].replace(" 07:02", "\t07:02", 1)
    lines[2020] = lines[2020].replace(" 07:02", "\u00a007:02", 1)
    text = "\n".join(lines)
    expected = row_by_row(ps.parse, text)
    batches = bulk_spy(monkeypatch)
    bulk = ps.parse(text)
    pd.testing.assert_frame_equal(bulk, expected)
    assert batches.count(0) == 1 and sum(batches) > 2000
    assert bulk.loc[8, "start"] == bulk.loc[2017, "start"] == "07:02"

"""sadf -d parser: the collector's three exports, restarts, decimal commas, and the same frame as sar text.

Expected values are read off the raw fixture lines (quoted in the comments), not off the parser.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import sadf, sar

from .conftest import FIXTURES, bulk_spy, need_tool, row_by_row

D = FIXTURES / "sadf"


def _row(df: pd.DataFrame, table: str, stamp: str, instance: str = "") -> pd.Series:
    hit = df[
        (df["table"] == table)
        & (df["timestamp"] == pd.Timestamp(stamp, tz="UTC"))
        & (df["instance"] == instance)
    ]
    assert len(hit) == 1
    return hit.iloc[0]


def test_cpu_export_all_is_minus_one() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-P-ALL.txt")
    assert len(df) == 15 and df["table"].eq("cpu").all() and df["host"].eq("vm").all()
    assert df["instance"].tolist()[:3] == ["all", "0", "1"]  # `-1` is sar's `all`
    # `vm;1;2026-11-23 07:47:28 UTC;1;31.31;0.00;67.68;1.01;0.00;0.00`
    r = _row(df, "cpu", "2026-11-23 07:47:28", "1")
    assert (r["user_pct"], r["system_pct"], r["iowait_pct"], r["idle_pct"]) == (31.31, 67.68, 1.01, 0.0)
    assert df.attrs["intervals_s"] == [1]


def test_net_dev_export() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-n-DEV.txt")
    assert df["instance"].tolist()[:4] == ["lo", "ifb0", "ifb1", "eth0"]
    # `vm;1;2026-11-23 07:47:26 UTC;lo;17.00;17.00;1.57;1.57;0.00;0.00;0.00;0.00`
    r = _row(df, "net_dev", "2026-11-23 07:47:26", "lo")
    assert (r["rxpck_s"], r["txpck_s"], r["rxkb_s"], r["txkb_s"]) == (17.0, 17.0, 1.57, 1.57)


def test_tcp_etcp_two_headers() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-n-TCP-ETCP.txt")
    assert df["table"].value_counts().to_dict() == {"net_tcp": 5, "net_etcp": 5}
    # `vm;1;2026-11-23 07:47:28 UTC;5.00;5.00;57.00;57.00`
    assert _row(df, "net_tcp", "2026-11-23 07:47:28")["active_s"] == 5.0
    assert df.loc[df["table"] == "net_etcp", "active_s"].isna().all()


def test_one_header_for_several_activities_is_split() -> None:
    # `sadf -d -h FILE -- -n TCP,ETCP` prints both activities on one line (real header, row from it)
    text = (
        "# hostname;interval;timestamp;active/s;passive/s;iseg/s;oseg/s;atmptf/s;estres/s;retrans/s;"
        "isegerr/s;orsts/s\n"
        "vm;1;2026-11-23 07:47:26 UTC;2.00;2.00;17.00;17.00;0.00;0.00;3.00;0.00;0.00\n"
    )
    df = sadf.parse(text)
    assert df["table"].tolist() == ["net_tcp", "net_etcp"]
    assert df.loc[0, "iseg_s"] == 17.0 and df.loc[1, "retrans_s"] == 3.0


def test_same_frame_as_sar_text_of_the_same_file() -> None:
    # both fixtures come from one sa.bin: `sar -f sa.bin -u -P ALL -q -r -d -n DEV,TCP,ETCP` and
    # `sadf -d sa.bin -- (same options)`; sar text printed in UTC, so tz="UTC" on both
    text = sar.parse(FIXTURES / "sar" / "sysstat-12.6-f-multi-iso.txt")
    export = sadf.parse(D / "sysstat-12.6-d-multi.txt")
    assert len(text) == 60
    pd.testing.assert_frame_equal(text, export)


def test_same_frame_as_sar_text_fresh_capture(tmp_path: Path) -> None:
    need_tool("sar")
    need_tool("sadf")
    env = {**os.environ, "LC_ALL": "C", "S_TIME_FORMAT": "ISO", "TZ": "UTC"}
    sa = tmp_path / "sa.bin"
    subprocess.run(["sar", "-o", str(sa), "1", "2"], env=env, capture_output=True, check=True, timeout=30)
    opts = ["-u", "-P", "ALL", "-q", "-n", "DEV,TCP,ETCP"]
    as_text = subprocess.run(
        ["sar", "-f", str(sa), *opts], env=env, capture_output=True, text=True, check=True
    )
    as_csv = subprocess.run(
        ["sadf", "-d", str(sa), "--", *opts], env=env, capture_output=True, text=True, check=True
    )
    a, b = sar.parse(as_text.stdout), sadf.parse(as_csv.stdout)
    assert len(a) > 0 and set(a["table"]) >= {"cpu", "queue", "net_dev", "net_tcp", "net_etcp"}
    pd.testing.assert_frame_equal(a, b)


def test_restart_record() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-P-ALL-restart.txt")
    # `vm;-1;2026-11-23 07:48:28 UTC;LINUX-RESTART	(2 CPU)` then a new header and 07:48:30 rows
    assert df.attrs["restarts"] == [{"timestamp": "2026-11-23T07:48:28+00:00", "cpus": 2}]
    # `vm;1;2026-11-23 07:48:30 UTC;-1;65.48;0.00;6.09;0.00;0.00;28.43`
    assert _row(df, "cpu", "2026-11-23 07:48:30", "all")["idle_pct"] == 28.43
    assert len(df) == 18


def test_de_de_decimal_commas() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-P-ALL-de_DE.txt")
    # `vm;1;2026-11-23 07:47:26 UTC;-1;55,56;0,00;44,44;0,00;0,00;0,00`
    assert _row(df, "cpu", "2026-11-23 07:47:26", "all")["system_pct"] == 44.44
    pd.testing.assert_frame_equal(df, sadf.parse(D / "sysstat-12.6-d-P-ALL.txt"))


def test_mixed_decimal_marks_are_refused() -> None:
    lines = (D / "sysstat-12.6-d-P-ALL.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("78.00", "78,00")  # line 4
    with pytest.raises(ParseError, match="LC_ALL=C") as info:
        sadf.parse("".join(lines))
    assert info.value.line_no == 4


def test_local_and_epoch_timestamps() -> None:
    head = "# hostname;interval;timestamp;runq-sz;plist-sz;ldavg-1;ldavg-5;ldavg-15;blocked\n"
    # `sadf -d -t` (no zone: the host's local time, here UTC+8) and `sadf -d -U` (epoch seconds)
    local = sadf.parse(head + "vm;1;2026-11-23 15:47:26;5;114;0.50;0.94;1.48;1\n", tz="Asia/Shanghai")
    epoch = sadf.parse(head + "vm;1;1795420046;5;114;0.50;0.94;1.48;1\n")
    assert (
        local.loc[0, "timestamp"]
        == epoch.loc[0, "timestamp"]
        == pd.Timestamp("2026-11-23 07:47:26", tz="UTC")
    )


def test_host_argument_wins() -> None:
    assert sadf.parse(D / "sysstat-12.6-d-n-DEV.txt", host="db1")["host"].eq("db1").all()


def test_cut_last_line_dropped_and_counted() -> None:
    df = sadf.parse(D / "sysstat-12.6-d-n-TCP-ETCP-truncated-last-line.txt")
    assert len(df) == 9 and df.attrs["dropped_lines"] == 1


def test_malformed_row_mid_file_names_the_line() -> None:
    lines = (D / "sysstat-12.6-d-n-DEV.txt").read_text().splitlines(keepends=True)
    lines.insert(3, "vm;1;2026-11-23 07:47:26 UTC;eth9;1.00;oops\n")
    with pytest.raises(ParseError) as info:
        sadf.parse("".join(lines))
    assert info.value.line_no == 4 and "oops" in info.value.line


def test_row_before_header_and_bad_timestamp() -> None:
    with pytest.raises(ParseError, match="before any") as info:
        sadf.parse("vm;1;2026-11-23 07:47:26 UTC;2.00;2.00;17.00;17.00\n")
    assert info.value.line_no == 1
    text = "# hostname;interval;timestamp;active/s;passive/s;iseg/s;oseg/s\nvm;1;yesterday;1;1;1;1\n"
    with pytest.raises(ParseError, match="timestamp") as info:
        sadf.parse(text)
    assert info.value.line_no == 2


QUEUE_HEAD = "# hostname;interval;timestamp;runq-sz;plist-sz;ldavg-1;ldavg-5;ldavg-15;blocked\n"


@pytest.mark.parametrize(
    "stamp,tz",
    [
        ("9999-11-23 07:47:26 UTC", "UTC"),
        ("2262-04-11 23:47:17 UTC", "UTC"),  # one second past datetime64[ns]
        ("9999-11-23 07:47:26", "Asia/Shanghai"),  # `sadf -t`
        ("1000-11-23 07:47:26", "Asia/Shanghai"),
        ("99999999999", "UTC"),  # `sadf -U`
    ],
)
@pytest.mark.parametrize("rows", [3, 200])  # per line; a run long enough for the Arrow chunk
def test_timestamp_outside_datetime64_ns_names_the_line(stamp: str, tz: str, rows: int) -> None:
    row = "vm;1;2026-11-23 07:{:02d}:{:02d} UTC;5;114;0.50;0.94;1.48;1\n"
    lines = [row.format(*divmod(k, 60)) for k in range(rows)]
    lines[1] = f"vm;1;{stamp};5;114;0.50;0.94;1.48;1\n"  # line 3 of the file
    with pytest.raises(ParseError, match="outside") as info:
        sadf.parse(QUEUE_HEAD + "".join(lines), tz=tz)
    assert info.value.line_no == 3 and stamp in info.value.line


def test_last_second_of_datetime64_ns_is_read() -> None:
    df = sadf.parse(QUEUE_HEAD + "vm;1;2262-04-11 23:47:16 UTC;5;114;0.50;0.94;1.48;1\n")
    assert df.loc[0, "timestamp"] == pd.Timestamp("2262-04-11 23:47:16", tz="UTC")


def test_empty_frame() -> None:
    df = sadf.parse("")
    assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == sadf.SCHEMA == sar.SCHEMA


def test_sniff_own_fixtures_and_not_others() -> None:
    for path in sorted(FIXTURES.glob("*/*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        assert sadf.sniff(text) == (path.parent.name == "sadf"), path


_ZONES = {"Europe_Berlin": "Europe/Berlin", "New_York": "America/New_York", "-T-tz": "America/New_York"}


@pytest.mark.parametrize("path", sorted(D.glob("*.txt")), ids=lambda p: p.name)
def test_engine_bulk_reads_as_row_by_row(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.parsers import _table

    tz = next((zone for key, zone in _ZONES.items() if key in path.name), "UTC")
    tz = "Europe/Berlin" if "-t-tz" in path.name else tz
    text = path.read_text()
    expected = row_by_row(sadf.parse, text, tz=tz)
    read = bulk_spy(monkeypatch, 7, _table.CHUNK_BYTES, 997)  # small chunks: runs and tables cut across reads
    got = sadf.parse(text, tz=tz)
    pd.testing.assert_frame_equal(got, expected)
    for key in ("intervals_s", "restarts", "comments", "notes", "skipped_tables", "unknown_columns"):
        assert got.attrs[key] == expected.attrs[key], key
    assert got.attrs["skipped"].count == expected.attrs["skipped"].count
    assert any(read)  # the `;` rows were read in bulk, not one by one


@pytest.mark.parametrize("value", ["1e5", " 5.00", "5.00 ", ".5", "5.", "inf", "", '"5"'])
def test_number_outside_the_grammar_names_its_line(value: str) -> None:
    # forms Arrow's reader takes (or trims) and the grammar `[-+]?\d+([.,]\d+)?` refuses: the bulk
    # read must fall back to the rows, which name the line
    rows = [
        f"vm;1;2026-11-23 07:{47 + s // 60}:{s % 60:02d} UTC;5;114;0.50;0.94;1.48;1\n" for s in range(100)
    ]
    rows[60] = rows[60].replace(";0.94;", f";{value};")
    with pytest.raises(ParseError) as info:
        sadf.parse(QUEUE_HEAD + "".join(rows))
    assert info.value.line_no == 62 and "not a number" in str(info.value)

"""sar text parser: tables, replays, locales, 12-hour clock, midnight per table, restarts, averages apart.

Expected values are read off the raw fixture lines (quoted in the comments), not off the parser.
"""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import sar

from .conftest import FIXTURES, row_by_row

S = FIXTURES / "sar"


def _row(df: pd.DataFrame, table: str, stamp: str, instance: str = "") -> pd.Series:
    hit = df[
        (df["table"] == table)
        & (df["timestamp"] == pd.Timestamp(stamp, tz="UTC"))
        & (df["instance"] == instance)
    ]
    assert len(hit) == 1
    return hit.iloc[0]


def test_perfkit_capture_values() -> None:
    df = sar.parse(S / "sysstat-12.6-u-iso.txt")
    # five `all` rows 07:47:26..07:47:30; `Average:` kept apart
    assert len(df) == 5 and df["table"].eq("cpu").all() and df["instance"].eq("all").all()
    # `07:47:28        all     51.50      0.00     48.00      0.50      0.00      0.00`
    r = _row(df, "cpu", "2026-11-23 07:47:28", "all")
    assert (r["user_pct"], r["system_pct"], r["iowait_pct"], r["idle_pct"]) == (51.5, 48.0, 0.5, 0.0)
    assert pd.isna(r["usr_pct"]) and pd.isna(r["runq_sz"])  # `-u` prints %user, not %usr: NaN, never 0
    assert df["host"].eq("vm").all()


def test_multi_block_replay_tables_and_values() -> None:
    df = sar.parse(S / "sysstat-12.6-f-multi-iso.txt")
    counts = df["table"].value_counts().to_dict()
    # 5 intervals: cpu all+0+1, one memory/queue/tcp/etcp row, one disk (vda), four interfaces
    assert counts == {
        "cpu": 15, "memory": 5, "queue": 5, "disk": 5, "net_dev": 20, "net_tcp": 5, "net_etcp": 5
    }  # fmt: skip
    # rows grouped by table in the documented order, file order within a table
    assert list(dict.fromkeys(df["table"])) == [
        "cpu", "queue", "memory", "disk", "net_dev", "net_tcp", "net_etcp"
    ]  # fmt: skip
    # `07:47:28          1     31.31      0.00     67.68      1.01      0.00      0.00`
    assert _row(df, "cpu", "2026-11-23 07:47:28", "1")["system_pct"] == 67.68
    # `07:47:29            9       131      0.50      0.94      1.48         0`
    q = _row(df, "queue", "2026-11-23 07:47:29")
    assert (q["runq_sz"], q["plist_sz"], q["ldavg_15"], q["blocked"]) == (9, 131, 1.48, 0)
    # `07:47:27     23993472  24231368    108064      0.44      1912    295280    845900      3.43 ...`
    m = _row(df, "memory", "2026-11-23 07:47:27")
    assert (m["kbmemfree"], m["memused_pct"], m["kbcommit"], m["commit_pct"]) == (
        23993472,
        0.44,
        845900,
        3.43,
    )
    # `07:47:26          vda  10571.00  47020.00 146444.00     16.00     18.30      0.71      0.07     57.20`
    d = _row(df, "disk", "2026-11-23 07:47:26", "vda")
    assert (d["tps"], d["rkb_s"], d["wkb_s"], d["dkb_s"]) == (10571.0, 47020.0, 146444.0, 16.0)
    assert (d["areq_kb"], d["aqu_sz"], d["await_ms"], d["util_pct"]) == (18.3, 0.71, 0.07, 57.2)
    assert pd.isna(d["svctm_ms"])  # gone in sysstat 12.6
    # `07:47:28           lo     57.00     57.00     12.21     12.21      0.00 ...`
    n = _row(df, "net_dev", "2026-11-23 07:47:28", "lo")
    assert (n["rxpck_s"], n["txkb_s"], n["ifutil_pct"]) == (57.0, 12.21, 0.0)
    # `07:47:28         5.00      5.00     57.00     57.00`
    t = _row(df, "net_tcp", "2026-11-23 07:47:28")
    assert (t["active_s"], t["passive_s"], t["iseg_s"], t["oseg_s"]) == (5.0, 5.0, 57.0, 57.0)
    assert _row(df, "net_etcp", "2026-11-23 07:47:28")["retrans_s"] == 0.0
    # a metric of another table is NaN in a row, never 0
    assert df.loc[df["table"] == "net_tcp", "user_pct"].isna().all()
    assert df.loc[df["table"] == "queue", "instance"].eq("").all()


def test_live_interleaved_tables_grouped_by_table() -> None:
    df = sar.parse(S / "sysstat-12.6-u-q-n-TCP-ETCP-live-iso.txt")
    # the tables alternate every interval in the file; the frame groups them, file order within a table
    assert df["table"].tolist() == ["cpu"] * 2 + ["queue"] * 2 + ["net_tcp"] * 2 + ["net_etcp"] * 2
    # second interval: `07:54:38            5       136      4.14      2.58      2.02         0`
    assert _row(df, "queue", "2026-11-23 07:54:38")["runq_sz"] == 5
    # `07:54:37         2.00      2.00  59139.00  59139.00`
    assert _row(df, "net_tcp", "2026-11-23 07:54:37")["iseg_s"] == 59139.0
    assert len(df.attrs["averages"]) == 4


def test_averages_are_kept_apart() -> None:
    df = sar.parse(S / "sysstat-12.6-f-multi-iso.txt")
    assert df["timestamp"].notna().all()
    avg = df.attrs["averages"]
    # 3 cpu + memory + queue + disk + 4 ifaces + tcp + etcp
    assert len(avg) == 12
    # `Average:          vda  12811.40  40069.60  46306.40      3.20      6.74      0.76      0.06     48.08`
    (disk,) = [a for a in avg if a["table"] == "disk"]
    assert disk["instance"] == "vda" and disk["tps"] == 12811.4 and disk["svctm_ms"] is None
    assert "timestamp" not in disk and "user_pct" not in disk  # only the table's own columns


def test_c_date_with_two_digit_year() -> None:
    df = sar.parse(S / "sysstat-12.6-f-P-ALL-C.txt")
    # banner `11/23/26`, first rows `07:47:26`
    assert df.loc[0, "timestamp"] == pd.Timestamp("2026-11-23 07:47:26", tz="UTC")


def test_en_us_twelve_hour_clock() -> None:
    df = sar.parse(S / "sysstat-12.6-f-en_US-12h.txt")
    # `07:47:27 AM       0     51.49      0.00     48.51      0.00      0.00      0.00`
    assert _row(df, "cpu", "2026-11-23 07:47:27", "0")["user_pct"] == 51.49
    # `07:47:28 AM     5.00      5.00     57.00     57.00`
    assert _row(df, "net_tcp", "2026-11-23 07:47:28")["active_s"] == 5.0


def test_midnight_rollover_is_per_table() -> None:
    df = sar.parse(S / "sysstat-12.6-f-en_US-midnight.txt")
    # cpu block `11:59:58 PM` .. `12:00:02 AM`, then the IFACE block starts again at `11:59:58 PM`
    want = [pd.Timestamp(f"2026-11-23 23:59:{s}", tz="UTC") for s in (58, 59)] + [
        pd.Timestamp(f"2026-11-24 00:00:0{s}", tz="UTC") for s in (0, 1, 2)
    ]
    for table in ("cpu", "net_dev"):
        assert df.loc[df["table"] == table, "timestamp"].drop_duplicates().tolist() == want
    # `12:00:00 AM     all     51.50      0.00     48.00      0.50      0.00      0.00`
    assert _row(df, "cpu", "2026-11-24 00:00:00", "all")["system_pct"] == 48.0


def test_midnight_iso_and_zone() -> None:
    df = sar.parse(S / "sysstat-12.6-f-iso-midnight.txt", tz="Asia/Shanghai")
    q = df[df["table"] == "queue"]["timestamp"].tolist()
    # wall clock 23:59:58 .. 00:00:02 in UTC+8
    assert q[0] == pd.Timestamp("2026-11-23 15:59:58", tz="UTC")
    assert q[-1] == pd.Timestamp("2026-11-23 16:00:02", tz="UTC")


def test_de_de_decimal_commas_read_explicitly() -> None:
    df = sar.parse(S / "sysstat-12.6-f-de_DE.txt")
    # banner `23.11.2026`; `07:47:26     all     55,56      0,00     44,44 ...`
    assert _row(df, "cpu", "2026-11-23 07:47:26", "all")["user_pct"] == 55.56
    # `07:47:28           lo     57,00     57,00     12,21     12,21 ...`
    assert _row(df, "net_dev", "2026-11-23 07:47:28", "lo")["rxkb_s"] == 12.21
    # `Durchschn.:         7       124      0,67      0,97      1,49         0`
    (q,) = [a for a in df.attrs["averages"] if a["table"] == "queue"]
    assert q["ldavg_1"] == 0.67


def test_zh_cn_clock_and_average_label() -> None:
    df = sar.parse(S / "sysstat-12.6-f-zh_CN.txt")
    # `07时47分29秒         9       131      0.50      0.94      1.48         0`
    assert _row(df, "queue", "2026-11-23 07:47:29")["plist_sz"] == 131
    assert len(df.attrs["averages"]) == 8  # 3 cpu + queue + 4 interfaces, `平均时间:`


def test_de_de_comma_with_slash_date_is_refused() -> None:
    text = (S / "sysstat-12.6-f-de_DE.txt").read_text().replace("23.11.2026", "23/11/2026")
    with pytest.raises(ParseError, match="capture not taken under LC_ALL=C"):
        sar.parse(text)


def test_restart_recorded_and_rows_continue() -> None:
    df = sar.parse(S / "sysstat-12.6-f-restart-iso.txt")
    # `07:48:28     LINUX RESTART	(2 CPU)`
    assert df.attrs["restarts"] == [{"timestamp": "2026-11-23T07:48:28+00:00", "cpus": 2}]
    # `07:48:30        14.00     14.00    168.00    168.00` after the restart
    assert _row(df, "net_tcp", "2026-11-23 07:48:30")["iseg_s"] == 168.0
    assert df.loc[df["table"] == "queue", "timestamp"].is_monotonic_increasing
    assert len(df.attrs["averages"]) == 6  # each segment closes its three blocks


def test_tables_not_read_are_skipped_and_listed() -> None:
    df = sar.parse(S / "sysstat-12.6-f-B-q-w-iso.txt")
    assert df["table"].eq("queue").all() and len(df) == 5
    assert df.attrs["skipped_tables"][0] == "proc/s cswch/s"
    assert df.attrs["skipped_tables"][1].startswith("pgpgin/s pgpgout/s")


def test_header_driven_old_disk_header_converted() -> None:
    # sysstat <= 11.4 `sar -d` header (sectors), columns reordered and one unknown
    text = (
        "Linux 3.10.0 (db2) \t11/22/2026 \t_x86_64_\t(4 CPU)\n\n"
        "08:00:00 PM  DEV  tps  rd_sec/s  wr_sec/s  avgrq-sz  avgqu-sz  await  svctm  %util  foo\n"
        "08:00:01 PM  dev8-0  10.00  100.00  300.00  40.00  0.50  2.00  1.00  1.00  7\n"
    )
    df = sar.parse(text)
    r = df.iloc[0]
    assert r["timestamp"] == pd.Timestamp("2026-11-22 20:00:01", tz="UTC") and r["host"] == "db2"
    # 512-byte sectors -> kB: 100 -> 50, 300 -> 150, 40 -> 20
    assert (r["rkb_s"], r["wkb_s"], r["areq_kb"], r["aqu_sz"], r["svctm_ms"]) == (50.0, 150.0, 20.0, 0.5, 1.0)
    assert df.attrs["unknown_columns"] == ["foo"]


def test_host_argument_wins_over_banner() -> None:
    df = sar.parse(S / "sysstat-12.6-u-iso.txt", host="db1")
    assert df["host"].eq("db1").all() and df.attrs["averages"][0]["host"] == "db1"


def test_cut_last_line_dropped_and_counted() -> None:
    df = sar.parse(S / "sysstat-12.6-u-iso-truncated-last-line.txt")
    assert len(df) == 5 and df.attrs["dropped_lines"] == 1 and df.attrs["averages"] == []


def test_garbage_mid_file_names_the_line() -> None:
    lines = (S / "sysstat-12.6-f-multi-iso.txt").read_text().splitlines(keepends=True)
    lines.insert(4, "07:47:26          0     oops\n")
    with pytest.raises(ParseError) as info:
        sar.parse("".join(lines))
    assert info.value.line_no == 5 and "oops" in info.value.line


def test_unknown_word_row_inside_a_table_is_an_error() -> None:
    lines = (S / "sysstat-12.6-u-iso.txt").read_text().splitlines(keepends=True)
    lines.insert(5, "07:47:28        all     fifty      zero\n")  # no blank line before: not a header
    with pytest.raises(ParseError) as info:
        sar.parse("".join(lines))
    assert info.value.line_no == 6


def test_instance_listed_twice_in_one_interval_is_an_error() -> None:
    lines = (S / "sysstat-12.6-f-P-ALL-C.txt").read_text().splitlines(keepends=True)
    lines.insert(5, lines[4])  # `07:47:26          0 ...` again as line 6
    with pytest.raises(ParseError, match="twice") as info:
        sar.parse("".join(lines))
    assert info.value.line_no == 6


def test_empty_and_banner_only() -> None:
    for text in ("", "Linux 6.18.44 (vm) \t2026-11-23 \t_x86_64_\t(2 CPU)\n\n"):
        df = sar.parse(text)
        assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == sar.SCHEMA


def test_sniff_own_fixtures_and_not_others() -> None:
    for path in sorted(FIXTURES.glob("*/*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        assert sar.sniff(text) == (path.parent.name == "sar"), path
    assert "sar" in parsers.registry()


@pytest.mark.parametrize(
    "name",
    [
        "sysstat-12.6-A.txt",
        "sysstat-12.6-f-multi-iso.txt",
        "sysstat-12.6-f-en_US-midnight.txt",
        "sysstat-12.6-f-de_DE.txt",
        "sysstat-12.6-f-zh_CN.txt",
        "sysstat-12.6-f-restart-iso.txt",
        "sysstat-12.6-u-q-n-TCP-ETCP-live-iso.txt",
    ],
)
def test_engine_bulk_reads_as_row_by_row(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.parsers import _chunks, _table

    text = (S / name).read_text()
    text += text  # a second capture joined on: a banner mid-file, every table again
    expected = row_by_row(sar.parse, text, tz="Europe/Berlin")
    monkeypatch.setattr(_table, "CHUNK_ROWS", 7)  # small chunks: runs and tables cut across reads
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 997)
    got = sar.parse(text, tz="Europe/Berlin")
    pd.testing.assert_frame_equal(got, expected)
    for key in ("averages", "restarts", "notes", "skipped_tables", "unknown_columns"):
        assert got.attrs[key] == expected.attrs[key], key
    assert got.attrs["skipped"].count == expected.attrs["skipped"].count

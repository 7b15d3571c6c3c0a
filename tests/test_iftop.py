"""iftop -t parser: connection rows, units to bytes/s, totals, cut-off and malformed captures."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import _table, iftop

from .conftest import FIXTURES, bulk_spy, row_by_row

F = FIXTURES / "iftop"
KB, MB = 1024.0, 1024.0**2


def test_perfkit_command_on_lo() -> None:
    df = iftop.parse(F / "iftop-1.0pre4-t-s3-B-lo.txt", host="db1")
    # line 4 `1 127.0.0.1  =>  7.78KB  6.92KB  6.92KB  27.7KB`; line 5 `<=  0B ...`
    send, recv = df.iloc[0], df.iloc[1]
    assert (send["direction"], send["src"], send["dst"], send["rank"]) == (
        "send",
        "127.0.0.1",
        "127.0.0.1",
        1,
    )
    assert send["rate_2s_bytes_s"] == pytest.approx(7.78 * KB) and send["cumulative_bytes"] == pytest.approx(
        27.7 * KB
    )
    assert recv["direction"] == "recv" and recv["rate_40s_bytes_s"] == 0 and recv["cumulative_bytes"] == 0
    assert df["src_port"].isna().all() and df["host"].eq("db1").all()
    assert df.attrs["interface"] == "lo" and df.attrs["rate_unit"] == "bytes"
    tot = df.attrs["totals"][0]
    # `Peak rate (sent/received/total):  7.78KB  0B  7.78KB`
    assert tot["peak_send_bytes_s"] == pytest.approx(7.78 * KB) and tot["peak_recv_bytes_s"] == 0
    assert tot["cumulative_total_bytes"] == pytest.approx(27.7 * KB)


def test_bits_converted_to_bytes_cumulative_stays_bytes() -> None:
    df = iftop.parse(F / "iftop-1.0pre4-t-s3-bits-lo.txt")
    # `=>  188Kb  142Kb  142Kb  71.0KB`: 188 * 1024 bits / 8 = 24064 bytes/s
    assert df.iloc[0]["rate_2s_bytes_s"] == 24064 and df.iloc[0]["cumulative_bytes"] == 71.0 * KB
    assert df.attrs["rate_unit"] == "bits"
    veth = iftop.parse(F / "iftop-1.0pre4-t-s3-bits-P-L4-veth.txt")
    # `Total receive rate:  24.6Mb  18.4Mb  18.4Mb` -> 24.6 * 2^20 / 8
    assert veth.attrs["totals"][0]["recv_2s_bytes_s"] == pytest.approx(24.6 * MB / 8)


def test_two_way_traffic_ipv6_ports() -> None:
    df = iftop.parse(F / "iftop-1.0pre4-t-s3-B-P-L4-veth.txt")
    # line 4 `1 [fd99::1]:35930 => 586B 293B 293B 1.14KB`; line 5 `[fd99::2]:18081 <= 98.4KB ... 197KB`
    send, recv = df.iloc[0], df.iloc[1]
    assert (send["src"], send["src_port"], send["dst"], send["dst_port"]) == (
        "fd99::1",
        35930,
        "fd99::2",
        18081,
    )
    assert (recv["src"], recv["src_port"], recv["dst_port"]) == ("fd99::1", 35930, 18081)
    assert send["rate_2s_bytes_s"] == 586 and recv["rate_2s_bytes_s"] == pytest.approx(98.4 * KB)
    assert recv["cumulative_bytes"] == 197 * KB
    assert df["rank"].tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    v4 = iftop.parse(F / "iftop-1.0pre4-t-s3-B-veth-v4v6.txt")
    # line 7 `10.99.0.2  <=  1.53MB  1.15MB  1.15MB  4.60MB`
    assert v4.iloc[3]["dst"] == "10.99.0.2" and v4.iloc[3]["rate_2s_bytes_s"] == pytest.approx(1.53 * MB)


def test_several_blocks_and_sigterm_cut() -> None:
    df = iftop.parse(F / "iftop-1.0pre4-t-B-P-L4-lo-sigterm.txt")
    # blocks 1 and 2 have 4 pairs; block 3 stops after connection 4's `=>` line (4096-byte flush)
    assert df.groupby("block").size().to_dict() == {1: 8, 2: 8, 3: 6}
    assert [t["block"] for t in df.attrs["totals"]] == [1, 2]
    assert df.attrs["dropped_lines"] == 1 and any("unfinished" in n for n in df.attrs["notes"])
    # block 2 line 23: `1 127.0.0.1:18080 => 704B 352B 352B 1.38KB`, port 38798 on the `<=` line
    row = df[(df["block"] == 2) & (df["rank"] == 1)].iloc[0]
    assert row["rate_10s_bytes_s"] == 352 and row["dst_port"] == 38798 and row["src_port"] == 18080


def test_cut_last_line_dropped_and_counted() -> None:
    df = iftop.parse(F / "truncated-last-line.txt")
    assert df.attrs["dropped_lines"] == 1 and len(df) == 8 and df.attrs["totals"] == []


def test_malformed_line_mid_file_names_its_line() -> None:
    lines = (F / "iftop-1.0pre4-t-s3-B-lo.txt").read_text().splitlines()
    lines[3] = lines[3].replace("7.78KB", "7,78KB", 1)
    with pytest.raises(ParseError) as info:
        iftop.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4


def test_packet_units_refused() -> None:
    text = (
        (F / "iftop-1.0pre4-t-s3-B-lo.txt").read_text().replace("7.78KB     6.92KB", "7.78Kp     6.92Kp", 1)
    )
    with pytest.raises(ParseError, match="packet"):
        iftop.parse(text)


def test_recv_line_without_send_line() -> None:
    lines = (F / "iftop-1.0pre4-t-s3-B-lo.txt").read_text().splitlines()
    del lines[3]
    with pytest.raises(ParseError, match="without the `=>` line") as info:
        iftop.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4


def test_service_names_leave_port_na() -> None:
    text = (
        (F / "iftop-1.0pre4-t-s3-B-P-L4-veth.txt").read_text().replace("[fd99::2]:18081", "[fd99::2]:http ")
    )
    df = iftop.parse(text)
    assert df["dst_port"].isna().all() and df["dst"].eq("fd99::2").all() and df.attrs["notes"]


@pytest.mark.parametrize("port", ["\u00b2", "\u0663"])  # str.isdigit() takes both; float() takes only ٣
def test_a_port_of_other_digits_is_a_name_not_a_number(port: str) -> None:
    text = (
        (F / "iftop-1.0pre4-t-s3-B-P-L4-veth.txt")
        .read_text()
        .replace("[fd99::2]:18081", f"[fd99::2]:{port}    ")
    )
    df = iftop.parse(text)
    assert df["dst_port"].isna().all() and df["dst"].eq("fd99::2").all() and df.attrs["notes"]


def test_empty_frame() -> None:
    df = iftop.parse("")
    assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == iftop.SCHEMA


def test_sniff_own_fixtures_and_not_others() -> None:
    for path in F.glob("*.txt"):
        assert iftop.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "iftop":
            assert not iftop.sniff(path.read_text(errors="replace")), path
    assert "iftop" in parsers.registry()


def test_stderr_saved_with_stdout_is_read_not_refused() -> None:
    # `iftop -t -s 2 -i lo > f 2>&1`: `interface: lo`, `IP address is: 127.0.0.1`, `IPv6 address is: ::1`,
    # `MAC address is: 00:...` before `Listening on lo`: iftop's own messages, passed over, not partial
    df = iftop.parse(F / "iftop-1.0pre4-t-s2-lo-stderr.txt")
    assert len(df) == 2 and df.attrs["interface"] == "lo" and df.attrs["rate_unit"] == "bits"
    assert df.attrs["skipped"].count == 0
    # line 8 `1 localhost  =>  8.75Mb  8.75Mb  8.75Mb  2.19MB`
    send = df.iloc[0]
    assert (send["src"], send["dst"], send["direction"]) == ("localhost", "localhost", "send")
    assert send["rate_2s_bytes_s"] == pytest.approx(8.75 * MB / 8)
    assert send["cumulative_bytes"] == pytest.approx(2.19 * MB)
    assert df.attrs["totals"][0]["cumulative_total_bytes"] == pytest.approx(2.19 * MB)
    df = iftop.parse(F / "iftop-1.0pre4-t-s2-n-N-P-B-lo-stderr.txt")
    assert len(df) == 20 and df["rank"].max() == 10 and df.attrs["skipped"].count == 0
    # line 8 `1 127.0.0.1:18081  =>  100KB  100KB  100KB  201KB`, line 9 `127.0.0.1:57122  <=  0B ...`
    assert (df.at[0, "src_port"], df.at[0, "dst_port"]) == (18081, 57122)
    assert df.at[0, "rate_10s_bytes_s"] == pytest.approx(100 * KB)
    assert df.attrs["totals"][0]["send_2s_bytes_s"] == pytest.approx(1.09 * MB)
    assert parsers.sniff_kind((F / "iftop-1.0pre4-t-s2-lo-stderr.txt").read_text()) == "iftop"


def test_unknown_line_outside_a_block_is_skipped_and_counted() -> None:
    text = (F / "iftop-1.0pre4-t-s2-lo-stderr.txt").read_text()
    df = iftop.parse("bash: warning: setlocale: LC_ALL: cannot change locale (de_DE)\n" + text)
    assert len(df) == 2 and df.attrs["skipped"].count == 1
    assert df.attrs["skipped"].quoted[0].line_no == 1
    with pytest.raises(ParseError, match=r"interface 'eth0' on stderr, listening on 'lo'"):
        iftop.parse(text.replace("interface: lo", "interface: eth0"))
    with pytest.raises(ParseError, match=r":1: nothing readable \(2 lines skipped\)"):
        iftop.parse("pcap_open_live(eth9): eth9: No such device exists\nsome other line\n")
    # inside a block an unknown line stays an error: it sits among the rows
    lines = text.splitlines()
    lines.insert(8, "garbage")
    with pytest.raises(ParseError, match="not an iftop -t line") as info:
        iftop.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 9


def test_whole_rule_without_final_newline_ends_the_block() -> None:
    # a copy that lost its last newline (jc's fixtures, `$(...)`): the 92-wide `=====` is whole
    text = (F / "iftop-1.0pre4-t-s2-n-N-P-B-lo-stderr.txt").read_text().rstrip("\n")
    df = iftop.parse(text)
    assert df.attrs["dropped_lines"] == 0 and df.attrs["notes"] == [] and len(df.attrs["totals"]) == 1
    # a rule cut shorter was cut mid-write: dropped, the block unfinished (as before)
    df = iftop.parse(text[:-10])
    assert df.attrs["dropped_lines"] == 1 and df.attrs["totals"] == []


# values as iftop prints them (3 significant digits, 1024 steps), picked by index
_VALUES = ["0B", "586B", "1.14KB", "9.85KB", "98.4KB", "197KB", "3.07MB", "9.21MB", "47.8MB", "1.02GB"]


def _long_capture(blocks: int, pairs: int = 7, host: str = "10.0.{}.{}:{}") -> str:
    """`iftop -t -n -N -B -P` until stopped: `blocks` blocks of up to `pairs` connections (every 9th
    block none), iftop's 92-column lines, values of every unit."""
    rule = "-" * 92
    out = ["Listening on eth0"]
    for b in range(blocks):
        out.append(
            "   # Host name (port/service if enabled)            last 2s   last 10s   last 40s cumulative"
        )
        out.append(rule)
        for rank in range(1, 0 if b % 9 == 4 else pairs + 1):
            a, z = host.format(b % 3, rank, 40000 + rank), host.format(9, rank % 4, 3306)
            send = [_VALUES[(b * 7 + rank * 3 + k) % 10] for k in range(4)]
            out.append(f"{rank:4d} {a:<40} => " + " ".join(f"{v:>10}" for v in send))
            recv = [_VALUES[(b + rank + 2 * k) % 10] for k in range(4)]
            out.append(f"     {z:<40} <= " + " ".join(f"{v:>10}" for v in recv))
        total = [_VALUES[(b + k) % 10] for k in range(3)]
        out.append(rule)
        for name in ("Total send rate:", "Total receive rate:", "Total send and receive rate:"):
            out.append(f"{name:<48} " + " ".join(f"{v:>10}" for v in total))
        out.append(rule)
        out.append(f"{'Peak rate (sent/received/total):':<48} " + " ".join(f"{v:>10}" for v in total))
        out.append(f"{'Cumulative (sent/received/total):':<48} " + " ".join(f"{v:>10}" for v in total))
        out.append("=" * 92)
        if b % 5 == 2:
            out.append("")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("path", sorted(F.glob("*.txt")), ids=lambda p: p.name)
def test_fixture_bulk_reads_as_row_by_row(path: object) -> None:
    bulk = iftop.parse(path)
    expected = row_by_row(iftop.parse, path)
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs == expected.attrs


def test_long_capture_bulk_reads_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _long_capture(400)
    expected = row_by_row(iftop.parse, text)
    bulk_spy(monkeypatch, 301, 30_001, 40_000)  # small chunks: a pair's two lines often in two
    monkeypatch.setattr(_table.Table, "read_lines", None)  # `=>` and `<=` lines read together in bulk
    bulk = iftop.parse(text)
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs == expected.attrs
    pd.testing.assert_frame_equal(iftop.parse(io.StringIO(text)), bulk)
    blocks = [b for b in range(400) if b % 9 != 4]
    assert len(bulk) == len(blocks) * 7 * 2 and len(bulk.attrs["totals"]) == 400
    assert bulk["block"].unique().tolist() == [b + 1 for b in blocks]  # a block without connections
    assert bulk["rank"].tolist()[:4] == [1, 1, 2, 2] and bulk["direction"].tolist()[:2] == ["send", "recv"]
    assert (bulk["dst_port"] == 3306).all() and bulk["src_port"].max() == 40007
    assert bulk.attrs["totals"][3]["recv_40s_bytes_s"] == pytest.approx(197 * KB)  # `197KB`


def test_a_host_past_its_column_reads_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    # without -n a name may overflow iftop's 40 columns: the lines are no longer one width
    text = _long_capture(60).replace("10.0.1.3:40003", "a-very-long-host-name.example.internal:40003")
    expected = row_by_row(iftop.parse, text)
    bulk_spy(monkeypatch, 301, 30_001, 40_000)  # small chunks: a pair's two lines often in two
    bulk = iftop.parse(text)
    pd.testing.assert_frame_equal(bulk, expected)
    assert (bulk["src"] == "a-very-long-host-name.example.internal").sum() == 2 * 13


def test_bulk_names_a_bad_line_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _long_capture(200).split("\n")
    at = next(k for k in range(1500, len(lines)) if "<=" in lines[k] and "KB " in lines[k])
    lines[at] = lines[at].replace("KB ", "KQ ", 1)
    text = "\n".join(lines)
    with pytest.raises(ParseError) as want:
        row_by_row(iftop.parse, text)
    bulk_spy(monkeypatch, 301, 30_001, 40_000)  # small chunks: a pair's two lines often in two
    with pytest.raises(ParseError) as got:
        iftop.parse(text)
    assert str(got.value) == str(want.value) and got.value.line_no == at + 1
    assert "unknown unit 'KQ'" in str(got.value)


def test_connection_lines_outside_a_block_skipped_inside_refused() -> None:
    text = (F / "iftop-1.0pre4-t-s3-B-lo.txt").read_text()
    stray = "   1 10.0.0.1                                 =>       586B       293B       293B     1.14KB"
    df = iftop.parse(stray + "\n" + text + stray + "\n")
    assert len(df) == 2 and df.attrs["skipped"].count == 2
    lines = text.splitlines()
    lines.insert(5, "   2 10.0.0.1      =>   586B   293B")  # two values short
    with pytest.raises(ParseError, match="not an iftop -t line") as info:
        iftop.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 6

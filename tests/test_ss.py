"""ss parser: the capture loop's blocks, plain and old `ss -s`, cut-off and malformed captures.

Expected values below are read off the raw fixture lines by eye (the `TCP:` line, the transport
table and the `timewait:` line of the block named), and epochs were converted with `date -u -d @N`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import ss

from .conftest import FIXTURES, bulk_spy, need_tool, row_by_row

S = FIXTURES / "ss"


def test_loop_blocks_with_time_wait() -> None:
    df = ss.parse(S / "iproute2-6.1-loop-timewait.txt", host="db1")
    assert len(df) == 4 and df["host"].eq("db1").all()
    # `== 1795416970` is 2026-11-23 06:56:10 UTC; blocks are one second apart.
    assert df.loc[0, "timestamp"] == pd.Timestamp("2026-11-23 06:56:10", tz="UTC")
    assert df["timestamp"].diff().dropna().eq(pd.Timedelta(seconds=1)).all()
    # Block 2: `TCP:   252 (estab 6, closed 243, orphaned 0, timewait 243)`, `TCP 9 9 0`, `timewait: 243`.
    row = df.loc[2]
    assert (row["tcp_total"], row["tcp_estab"], row["tcp_closed"]) == (252, 6, 243)
    assert (row["tcp_orphaned"], row["tcp_timewait"], row["timewait_sockets"]) == (0, 243, 243)
    assert (row["tcp_sockets"], row["tcp_ipv4_sockets"], row["tcp_ipv6_sockets"]) == (9, 9, 0)
    assert row["total"] == 21 and row["udp_sockets"] == 0 and row["frag_queues"] == 0
    # iproute2 6.1 prints neither synrecv nor ports: NA, not 0.
    assert df["tcp_synrecv"].isna().all() and df["tcp_ports"].isna().all() and df["total_kernel"].isna().all()
    assert df.attrs["dropped_lines"] == 0 and df.attrs["unknown_columns"] == []


def test_fin_wait_2_counts_in_ss_s_timewait_only() -> None:
    df = ss.parse(S / "iproute2-6.1-loop-finwait2.txt")
    # Block 2: `timewait 129` on the TCP: line but `timewait: 9` from `ss state time-wait`.
    assert df.loc[2, "tcp_timewait"] == 129 and df.loc[2, "timewait_sockets"] == 9


def test_plain_ss_s_has_no_timestamp() -> None:
    df = ss.parse(S / "iproute2-6.1-plain.txt")
    assert len(df) == 1 and df["timestamp"].isna().all()
    assert df.loc[0, "total"] == 14 and df.loc[0, "tcp_timewait"] == 10 and df.loc[0, "tcp_sockets"] == 2
    assert pd.isna(df.loc[0, "timewait_sockets"])


def test_plain_outputs_one_after_another_are_separate_rows() -> None:
    text = (S / "iproute2-6.1-plain.txt").read_text()
    df = ss.parse(text + text)
    assert len(df) == 2 and df["tcp_total"].tolist() == [12, 12]


def test_old_iproute2_layout_read_by_key() -> None:
    df = ss.parse(S / "iproute2-3.x-plain.synthetic.txt")
    row = df.loc[0]
    # `TCP:   63 (estab 32, closed 27, orphaned 0, synrecv 0, timewait 26/0), ports 0`
    assert (row["tcp_total"], row["tcp_estab"], row["tcp_closed"]) == (63, 32, 27)
    assert (row["tcp_synrecv"], row["tcp_timewait"], row["tcp_ports"]) == (0, 26, 0)
    # `Total: 151 (kernel 182)` and the `*  182  -  -` row; `UDP 9 6 3`.
    assert row["total"] == 151 and row["total_kernel"] == 182
    assert (row["udp_sockets"], row["udp_ipv4_sockets"], row["udp_ipv6_sockets"]) == (9, 6, 3)


def test_keys_in_any_order_and_unknown_keys_listed() -> None:
    text = "Total: 5\nTCP:   7 (timewait 3, estab 2, synsent 1, closed 4, orphaned 0)\n"
    df = ss.parse(text)
    assert df.loc[0, "tcp_timewait"] == 3 and df.loc[0, "tcp_estab"] == 2 and df.loc[0, "tcp_closed"] == 4
    assert df.attrs["unknown_columns"] == ["TCP synsent"]


def test_cut_last_line_dropped_and_counted() -> None:
    df = ss.parse(S / "truncated-last-line.txt")
    # The last line `timewait: 243` was cut to `timewait: 24`: never kept as 24.
    assert len(df) == 4 and df.attrs["dropped_lines"] == 1
    assert pd.isna(df.loc[3, "timewait_sockets"]) and df.loc[3, "tcp_timewait"] == 243


def test_last_block_with_only_its_stamp_is_dropped() -> None:
    text = (S / "iproute2-6.1-loop-idle.txt").read_text() + "== 1795416954\n"
    df = ss.parse(text)
    assert len(df) == 4 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    lines = (S / "iproute2-6.1-loop-idle.txt").read_text().splitlines()
    lines.insert(5, "UDP oops")
    with pytest.raises(ParseError) as info:
        ss.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 6 and "oops" in info.value.line


def test_value_twice_in_one_block_is_an_error() -> None:
    lines = (S / "iproute2-6.1-loop-idle.txt").read_text().splitlines()
    lines.insert(3, lines[2])  # the TCP: line twice
    with pytest.raises(ParseError, match="twice") as info:
        ss.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4


def test_data_before_any_block_is_an_error() -> None:
    with pytest.raises(ParseError, match="not an ss -s capture") as info:
        ss.parse("TCP:   7 (estab 2, closed 4, orphaned 0, timewait 3)\n")
    assert info.value.line_no == 1


def test_empty_capture() -> None:
    df = ss.parse("")
    assert len(df) == 0 and list(df.columns) == list(ss.SCHEMA) and df.attrs["dropped_lines"] == 0


def test_sniff() -> None:
    for path in S.glob("*.txt"):
        assert ss.sniff(path.read_text()), path.name
    others = [p for p in FIXTURES.glob("*/*.txt") if p.parent.name != "ss"]
    assert others and not any(ss.sniff(p.read_text(errors="replace")) for p in others)


@pytest.mark.lab
def test_real_ss_here() -> None:
    need_tool("ss")
    from perfkit.collectors import captures

    spec = next(s for s in captures.DEFAULT if s.id == "ss")
    out = subprocess.run(
        ["sh", "-c", spec.render(interval=1, window=1, workdir="/tmp")],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
    ).stdout
    df = ss.parse(out)
    assert len(df) == 2 and df["timestamp"].notna().all() and df["tcp_total"].notna().all()


def test_socket_list_saved_with_the_summary_is_skipped() -> None:
    # `ss -s; ss -tan` in one file: the summary read, the list's 3 lines skipped and counted
    df = ss.parse(S / "iproute2-6.1-s-then-tan.txt")
    assert len(df) == 1 and df.at[0, "total"] == 19 and df.at[0, "tcp_total"] == 3
    assert df.at[0, "inet_ipv4_sockets"] == 3 and df.at[0, "frag_queues"] == 0
    skipped = df.attrs["skipped"]
    assert skipped.count == 3 and skipped.quoted[0].line_no == 11
    assert skipped.quoted[1].text.startswith("LISTEN 0      5          127.0.0.1:18081")
    # the list first: skipped before the first `Total:`
    df = ss.parse(S / "iproute2-6.1-tln-then-s.txt")
    assert len(df) == 1 and df.at[0, "total"] == 19 and df.attrs["skipped"].count == 3
    assert df.attrs["skipped"].quoted[0].line_no == 1


def test_malformed_summary_line_after_a_list_names_the_line() -> None:
    text = (S / "iproute2-6.1-s-then-tan.txt").read_text()
    with pytest.raises(ParseError, match="not an ss -s line") as info:
        ss.parse(text + "TCP: 7\n")
    assert info.value.line_no == 14
    with pytest.raises(ParseError, match=r"nothing readable \(3 lines skipped\)"):
        ss.parse(text.split("\n\n")[-1])  # the list alone: a socket list is not read


def _loop(n: int) -> str:
    """n blocks of the capture loop, their counts varying (wider values push a table row's columns)."""
    blocks = []
    for k in range(n):
        tcp, estab = 100 + k * 37 % 9000, k % 50
        blocks.append(
            f"== {1795416970 + k}\nTotal: {20 + k % 7}\n"
            f"TCP:   {tcp} (estab {estab}, closed {tcp - estab}, orphaned 0, timewait {k % 300})\n\n"
            "Transport Total     IP        IPv6\n"
            "RAW\t  0         0         0        \n"
            f"UDP\t  {k % 3}         {k % 3}         0        \n"
            f"TCP\t  {estab + 3}        {estab + 3}        0        \n"
            f"INET\t  {estab + 3 + k % 3}        {estab + 3 + k % 3}        0        \n"
            "FRAG\t  0         0         0        \n\n"
            f"timewait: {k % 300}\n"
        )
    return "".join(blocks)


@pytest.mark.parametrize("fixture", sorted(S.glob("*.txt")), ids=lambda p: p.name)
def test_fixture_bulk_reads_as_row_by_row(fixture: Path) -> None:
    bulk = ss.parse(fixture)
    expected = row_by_row(ss.parse, fixture)
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs["skipped"].count == expected.attrs["skipped"].count


def test_long_loop_bulk_reads_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _loop(3000)
    expected = row_by_row(ss.parse, text)
    batches = bulk_spy(monkeypatch, 500, 20_000)
    bulk = ss.parse(text)
    assert len(batches) > 10 and 0 not in batches and sum(batches) == 5 * 3000  # tabs, wide values: bulk
    pd.testing.assert_frame_equal(bulk, expected)
    assert bulk.attrs["dropped_lines"] == 0 and bulk.attrs["unknown_columns"] == []
    row = bulk.loc[2999]
    assert row["tcp_total"] == 100 + 2999 * 37 % 9000 and row["inet_ipv4_sockets"] == 49 + 3 + 2
    assert row["timestamp"] == pd.Timestamp(1795416970 + 2999, unit="s", tz="UTC")
    assert row["timewait_sockets"] == row["tcp_timewait"] == 2999 % 300


def test_blocks_handed_over_in_pieces_read_as_each_block_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 200 bytes: every block's lines come in two or three stretches, and each stretch's
    numbers go to their blocks' cells before the next is read. The frame is the blocks' frames one
    after another, and a value printed twice is found when its first copy came in a stretch before."""
    text = _loop(40)
    blocks = ["== " + b for b in text.split("== ")[1:]]
    alone = pd.concat([ss.parse(b) for b in blocks], ignore_index=True)
    batches = bulk_spy(monkeypatch, 5, 200)
    df = ss.parse(text)
    assert len(batches) >= 40
    pd.testing.assert_frame_equal(df, alone)
    # block 30's `TCP:` line again at its end, 10 lines (300 bytes) after the first
    lines = text.split("\n")
    twice = [*lines[: 12 * 31], lines[12 * 30 + 2], *lines[12 * 31 :]]
    with pytest.raises(ParseError, match="tcp_total printed twice in one block") as info:
        ss.parse("\n".join(twice))
    assert info.value.line_no == 12 * 31 + 1
    # old iproute2: the `*` row (after FRAG) repeats `(kernel N)` from the Total: line 8 lines above
    old = [*lines[: 12 * 30 + 1], "Total: 22 (kernel 182)", *lines[12 * 30 + 2 :]]
    for star, fails in (("182", False), ("183", True)):
        kernel = "\n".join([*old[: 12 * 30 + 10], f"*\t  {star}        -         -", *old[12 * 30 + 10 :]])
        if fails:
            with pytest.raises(ParseError, match="`\\*` row disagrees") as info:
                ss.parse(kernel)
            assert info.value.line_no == 12 * 30 + 11
        else:
            read = ss.parse(kernel)
            assert read.at[30, "total_kernel"] == 182 and read["total_kernel"].count() == 1
            assert read.at[30, "total"] == 22 and read.attrs["skipped"].count == 0


def test_stray_rows_in_every_stretch_are_read_again_only_to_be_quoted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stamp inside each block's table makes the rows under it stray (other output). Their texts are
    read again from the file only for the few quoted, once at the end: read per stretch, a day of such a
    capture was re-read from its start a few times for every 512 kB."""
    blocks = ["== " + b for b in _loop(40).split("== ")[1:]]
    text = "".join(b.replace("RAW", b.split("\n", 1)[0] + "\nRAW", 1) for b in blocks)
    reads: list[int] = []
    again = ss._Ss._text
    monkeypatch.setattr(ss._Ss, "_text", lambda self, line_no: reads.append(line_no) or again(self, line_no))
    bulk_spy(monkeypatch, 5, 200)
    df = ss.parse(text)
    skipped = df.attrs["skipped"]
    assert len(df) == 80 and skipped.count == 40 * 5  # each table's 5 rows under the second stamp
    assert [q.line_no for q in skipped.quoted] == [7, 8, 9][: len(skipped.quoted)]
    assert skipped.quoted[0].text.startswith("RAW")
    assert reads == [q.line_no for q in skipped.quoted]


def test_bad_table_row_named_alike_in_bulk_and_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _loop(2000).split("\n")
    lines[12 * 1500 + 6] = "UDP\t  1         x         0"
    text = "\n".join(lines)
    with pytest.raises(ParseError) as want:
        row_by_row(ss.parse, text)
    bulk_spy(monkeypatch, 500, 20_000)
    with pytest.raises(ParseError) as got:
        ss.parse(text)
    assert str(got.value) == str(want.value) and got.value.line_no == 12 * 1500 + 7


def test_a_blank_line_ends_the_table() -> None:
    # a row named like the table's after its blank line is other output (skipped), not a second UDP row;
    # one right under the table is the table's (read twice: an error)
    text = (S / "iproute2-6.1-plain.txt").read_text()
    df = ss.parse(text + "UDP 1 2 3\n")
    assert len(df) == 1 and df.at[0, "udp_sockets"] == 0 and df.attrs["skipped"].count == 1
    assert df.attrs["skipped"].quoted[0].line_no == 11
    with pytest.raises(ParseError, match="udp_sockets printed twice") as info:
        ss.parse(text.rstrip("\n") + "\nUDP 1 2 3\n")
    assert info.value.line_no == 10


def test_blocks_without_a_transport_table_are_read() -> None:
    # a loop of `ss -s` where each block prints no transport table, a blank line after its TCP line
    # (tests/fixtures/net seed 003's client loops): a chunk with blank lines and no table row at all
    text = "".join(
        f"== {1795421600 + k}\nTotal: 50100\n"
        "TCP:   49870 (estab 12, closed 49856, orphaned 0, timewait 49850)\n\ntimewait: 49850\n"
        for k in range(4)
    )
    df = ss.parse(text)
    assert len(df) == 4 and df["tcp_timewait"].eq(49850).all() and df["timewait_sockets"].eq(49850).all()
    assert df["tcp_sockets"].isna().all()  # no table, no per-transport counts


def test_a_count_past_float64s_exact_integers_keeps_its_value() -> None:
    # 2**53 + 1 on a Total: line, read with the table's counts (floats until checked): exact all the same
    text = (S / "iproute2-6.1-loop-timewait.txt").read_text()
    df = ss.parse(re.sub(r"Total: \d+", "Total: 9007199254740993", text, count=1))
    assert df.at[0, "total"] == 9007199254740993 and df.at[0, "tcp_sockets"] == 9


def test_counts_past_four_bytes_keep_their_value(tmp_path: Path) -> None:
    """Numbers are kept in 4 bytes while they fit: a count past 2**31 in a later block (and a stream,
    whose line count is unknown) must come out exact all the same."""
    text = (S / "iproute2-6.1-loop-timewait.txt").read_text()
    big = 5_000_000_123
    later = text.replace("TCP:   252 (estab 6,", f"TCP:   {big} (estab 6,", 1)
    assert later != text
    path = tmp_path / "ss.out"
    path.write_text(text + later)
    with path.open() as stream:
        frames = [ss.parse(path), ss.parse(stream)]
    for df in frames:
        assert len(df) == 8 and df.loc[6, "tcp_total"] == big
        assert (
            df.loc[2, "tcp_total"] == 252
            and df["tcp_estab"].tolist() == ss.parse(text)["tcp_estab"].tolist() * 2
        )

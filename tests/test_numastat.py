"""numastat parser: every form, folded tables joined, cut-off and malformed captures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import _chunks, _table, numastat

from .conftest import FIXTURES, row_by_row

N = FIXTURES / "numastat"


def _cell(df: pd.DataFrame, metric: str, node: int | None, pid: int | None = None) -> pd.Series:
    sel = df["metric"].eq(metric) & (df["node"].isna() if node is None else df["node"].eq(node))
    sel &= df["pid"].isna() if pid is None else df["pid"].eq(pid)
    rows = df[sel.fillna(False)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_plain_compat_mode_is_pages() -> None:
    df = numastat.parse(N / "numastat-2.0.16-plain-1node.txt", host="db1")
    # line 2: `numa_hit                76452152`, line 5: `interleave_hit              1127`
    assert _cell(df, "numa_hit", 0)["pages"] == 76452152
    assert _cell(df, "interleave_hit", 0)["pages"] == 1127
    assert df["mb"].isna().all() and not df["is_total"].any() and df["host"].eq("db1").all()
    assert df["metric"].tolist() == [
        "numa_hit",
        "numa_miss",
        "numa_foreign",
        "interleave_hit",
        "local_node",
        "other_node",
    ]
    assert df["section"].eq("numa").all() and df.attrs["nodes"] == [0]


def test_c_form_mb_with_total_column() -> None:
    df = numastat.parse(N / "numastat-2.0.16-c-1node.txt")
    # line 5: `Numa_Hit        298656 298656` -> lowercase metric, node 0 and the Total column
    assert _cell(df, "numa_hit", 0)["mb"] == 298656 and _cell(df, "numa_hit", None)["mb"] == 298656
    assert _cell(df, "numa_hit", None)["is_total"]
    assert _cell(df, "interleave_hit", 0)["mb"] == 4 and df["pages"].isna().all()
    assert len(df) == 12


def test_m_form_meminfo_and_token_notes() -> None:
    df = numastat.parse(N / "numastat-2.0.16-m-1node.txt")
    # line 9: `MemTotal                 6618.21         6618.21`; line 14 `Active(anon)   1.53`
    assert _cell(df, "MemTotal", 0)["mb"] == 6618.21 and _cell(df, "Active(anon)", 0)["mb"] == 1.53
    assert df["section"].eq("meminfo").all()
    assert any("SwapCached" in n for n in df.attrs["notes"])


def test_single_process_table() -> None:
    df = numastat.parse(N / "numastat-2.0.16-p-pid-1node.txt")
    # title `... for PID 21614 (bash)`; `Private  3.73`, `Total  3.98`
    assert df["pid"].eq(21614).all() and df["process"].eq("bash").all()
    assert _cell(df, "private", 0, 21614)["mb"] == 3.73 and _cell(df, "total", None, 21614)["mb"] == 3.98
    assert df["metric"].unique().tolist() == ["huge", "heap", "stack", "private", "total"]


def test_several_processes_one_table_names_with_spaces_and_cut() -> None:
    df = numastat.parse(N / "numastat-2.0.16-p-two-pids-1node.txt")
    # `32744 (Web Content)   13.30   13.30`, `Total   26.61   26.61`
    row = _cell(df, "total", 0, 32744)
    assert row["process"] == "Web Content" and row["mb"] == 13.30
    assert _cell(df, "total", 0, None)["mb"] == 26.61  # Total row over both processes: pid NA
    cut = numastat.parse(N / "numastat-2.0.16-c-p-two-pids-1node.txt")
    assert _cell(cut, "total", 0, 32744)["process"] == "Web Conte"  # `32744 (Web Conte` as printed
    assert _cell(cut, "total", None, None)["mb"] == 27


def test_verbose_gives_one_table_per_process() -> None:
    df = numastat.parse(N / "numastat-2.0.16-v-c-p-two-pids-1node.txt")
    assert df.groupby("table")["pid"].unique().map(list).tolist() == [[32744], [32745]]
    assert _cell(df, "heap", 0, 32745)["mb"] == 2


def test_seed003_folded_table_joined_not_shifted() -> None:
    df = numastat.parse(N / "seed003-c-qemu-kvm-16node-folded.txt")
    assert df.attrs["nodes"] == list(range(16)) and df["table"].eq(0).all()
    # 7 processes + Total row, 16 nodes + Total column
    assert len(df) == 8 * 17
    # line 6 `111105 (qemu-kvm     33  11840 ...  17 ...` and line 18 `111105 (qemu-kvm  0 ... 0 11891`
    assert _cell(df, "total", 1, 111105)["mb"] == 11840 and _cell(df, "total", 5, 111105)["mb"] == 17
    assert _cell(df, "total", None, 111105)["mb"] == 11891
    # line 21 `112182 (qemu-kvm  0 0 0 0 0 0 1 11921`: node 15 is in the second part
    assert _cell(df, "total", 15, 112182)["mb"] == 1 and _cell(df, "total", 14, 112182)["mb"] == 0
    # line 26 `Total  0 0 0 0 1 1 3 80124`
    assert _cell(df, "total", None, None)["mb"] == 80124 and _cell(df, "total", 13, None)["mb"] == 1
    assert df["process"].dropna().eq("qemu-kvm").all()
    # every process sums to its Total column (the parts line up)
    per_node = df[~df["is_total"]].groupby("pid")["mb"].sum()
    totals = df[df["is_total"]].set_index("pid")["mb"].dropna()
    assert (per_node - totals.reindex(per_node.index)).abs().max() <= 2  # -c rounds each cell


def test_folded_compat_and_three_part_tables() -> None:
    df = numastat.parse(N / "fake-sysfs-6node-plain-width80.synthetic.txt")
    # second part line 10 `numa_hit               455682901       498770432` -> node4, node5
    assert _cell(df, "numa_hit", 4)["pages"] == 455682901 and _cell(df, "numa_hit", 5)["pages"] == 498770432
    assert _cell(df, "numa_hit", 3)["pages"] == 498765432 and len(df) == 36
    three = numastat.parse(N / "fake-sysfs-6node-c-width40.synthetic.txt")
    # parts `Node 0..2`, `Node 3..5`, `Total`: Numa_Hit total 13716277
    assert _cell(three, "numa_hit", None)["mb"] == 13716277 and _cell(three, "numa_miss", 4)["mb"] == 9178
    assert len(three) == 6 * 7


def test_cut_last_line_dropped_and_counted() -> None:
    df = numastat.parse(N / "truncated-last-line.txt")
    assert df.attrs["dropped_lines"] == 1 and len(df) == 10
    assert "other_node" not in set(df["metric"])


def test_malformed_value_mid_file_names_its_line() -> None:
    lines = (N / "numastat-2.0.16-c-1node.txt").read_text().splitlines()
    lines[5] = "Numa_Miss          0,5      0"  # a decimal comma
    with pytest.raises(ParseError) as info:
        numastat.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 6 and "not a number" in info.value.reason


def test_overflowing_value_is_an_error_not_a_shift() -> None:
    lines = (N / "numastat-2.0.16-c-1node.txt").read_text().splitlines()
    lines[4] = "Numa_Hit        2986560298656"  # no gutter between two columns
    with pytest.raises(ParseError, match="overflows") as info:
        numastat.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 5


def test_folded_part_with_other_rows_is_an_error() -> None:
    text = (
        (N / "fake-sysfs-6node-c-width40.synthetic.txt")
        .read_text()
        .replace("Numa_Miss           135    9178", "Numa_Other          135    9178")
    )
    with pytest.raises(ParseError, match="folded part"):
        numastat.parse(text)


def test_empty_frame() -> None:
    df = numastat.parse("")
    assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == numastat.SCHEMA
    assert np.isnan(numastat.parse(N / "numastat-2.0.16-c-1node.txt")["pages"]).all()


def test_sniff_own_fixtures_and_not_others() -> None:
    for path in N.glob("*.txt"):
        assert numastat.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "numastat":
            assert not numastat.sniff(path.read_text(errors="replace")), path
    assert "numastat" in parsers.registry()


def test_other_output_around_a_table_is_skipped() -> None:
    # `numastat -V; numastat; uptime` in one file: the version line and the uptime line skipped
    df = numastat.parse(N / "numastat-2.0.16-V-plain-uptime-1node.txt")
    assert len(df) == 6 and df.attrs["nodes"] == [0]
    hit = df[df["metric"] == "numa_hit"]
    assert hit["pages"].tolist() == [213633423] and hit["node"].tolist() == [0]  # `numa_hit  213633423`
    assert df.loc[df["metric"] == "interleave_hit", "pages"].tolist() == [1269]
    skipped = df.attrs["skipped"]
    assert skipped.count == 2 and [q.line_no for q in skipped.quoted] == [1, 9]
    assert skipped.quoted[0].text == "numastat version: 20130723: Dec 26 2022"
    # a compatibility row that starts like one but is malformed stays an error naming its line
    lines = (N / "numastat-2.0.16-V-plain-uptime-1node.txt").read_text().splitlines()
    lines[3] = "numa_miss   oops"
    with pytest.raises(ParseError) as info:
        numastat.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4
    with pytest.raises(ParseError, match=r"nothing readable \(1 lines skipped\)"):
        numastat.parse("numastat version: 20130723: Dec 26 2022\n")


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b)
    for key in ("nodes", "dropped_lines", "notes"):
        assert a.attrs[key] == b.attrs[key], key
    assert a.attrs["skipped"].count == b.attrs["skipped"].count


@pytest.mark.parametrize("path", sorted(N.glob("*.txt")), ids=lambda p: p.name)
def test_engine_bulk_reads_as_row_by_row(path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = numastat.parse(path)
    _same(whole, row_by_row(numastat.parse, path))
    monkeypatch.setattr(_table, "CHUNK_ROWS", 3)  # tables and folded parts cut across chunks
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 97)
    _same(whole, numastat.parse(path))
    _same(whole, row_by_row(numastat.parse, path))


def test_repeated_tables_in_chunks_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # `numastat -c` then `numastat -m`, 40 times (the bench's loop, two layouts alternating)
    one = (N / "fake-sysfs-4node-c.synthetic.txt").read_text() + (
        N / "fake-sysfs-4node-m.synthetic.txt"
    ).read_text()
    df = numastat.parse(one * 40)
    single = numastat.parse(one)
    assert df["table"].max() == 79 and len(df) == 40 * len(single)
    again = df[df["table"].isin([78, 79])].reset_index(drop=True).assign(table=lambda d: d["table"] - 78)
    pd.testing.assert_frame_equal(again, single)
    monkeypatch.setattr(_table, "CHUNK_ROWS", 7)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 301)
    _same(df, numastat.parse(one * 40))
    _same(df, row_by_row(numastat.parse, one * 40))


def test_blank_cell_is_nan_and_a_label_with_spaces_is_sliced() -> None:
    lines = (N / "fake-sysfs-4node-n-width80.synthetic.txt").read_text().splitlines()
    # line 6 `Numa_Miss                   4.82          221.83 ...`: Node 1's cell left blank
    lines[5] = lines[5][:32] + " " * 16 + lines[5][48:]
    df = numastat.parse("\n".join(lines) + "\n")
    assert np.isnan(_cell(df, "numa_miss", 1)["mb"]) and _cell(df, "numa_miss", 2)["mb"] == 9162.80
    _same(df, row_by_row(numastat.parse, "\n".join(lines) + "\n"))

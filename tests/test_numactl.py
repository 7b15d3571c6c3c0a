"""numactl --hardware parser: nodes, SLIT distances, layouts, cut-off and foreign captures."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import numactl

from .conftest import FIXTURES, need_tool

N = FIXTURES / "numactl"


def test_real_single_node() -> None:
    df = numactl.parse(N / "numactl-2.0.16-1node.txt", host="db1")
    # lines 2-4: `node 0 cpus: 0 1`, `node 0 size: 6618 MB`, `node 0 free: 5986 MB`
    assert df.to_dict("records") == [
        {"host": "db1", "node": 0, "cpus": "0 1", "cpu_count": 2, "size_mb": 6618.0, "free_mb": 5986.0}
    ]
    # lines 6-7: `node   0 ` / `  0:  10 ` (numactl ends each matrix line with a space)
    assert df.attrs["distances"] == {"nodes": [0], "matrix": [[10]]}
    assert df.attrs["available_nodes"] == 1 and df.attrs["dropped_lines"] == 0


def test_two_nodes() -> None:
    df = numactl.parse(N / "two-socket-2node.synthetic.txt")
    assert df["node"].tolist() == [0, 1] and df["cpu_count"].tolist() == [16, 16]
    # `node 1 cpus: 8 9 ... 15 24 ... 31`: the list is kept as printed
    assert df.loc[1, "cpus"] == "8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31"
    assert df["size_mb"].tolist() == [64314, 64507] and df["free_mb"].tolist() == [60712, 61944]
    assert df.attrs["distances"] == {"nodes": [0, 1], "matrix": [[10, 21], [21, 10]]}
    assert df.attrs["available_nodes"] == 2


def test_memory_only_node_and_gap_in_node_numbers() -> None:
    df = numactl.parse(N / "memory-only-node.synthetic.txt")
    # `available: 3 nodes (0-1,3)`; `node 3 cpus:` with nothing after the colon
    assert df["node"].tolist() == [0, 1, 3]
    assert df.loc[2, "cpus"] == "" and df.loc[2, "cpu_count"] == 0 and df.loc[2, "size_mb"] == 65536
    assert df.attrs["distances"] == {"nodes": [0, 1, 3], "matrix": [[10, 21, 14], [21, 10, 24], [14, 24, 10]]}


def test_seed003_sixteen_nodes_on_two_sockets() -> None:
    df = numactl.parse(N / "seed003-16node-2socket.synthetic.txt")
    assert df["node"].tolist() == list(range(16)) and df["cpu_count"].eq(8).all()
    assert df["cpu_count"].sum() == 128 and df.loc[15, "cpus"] == "120 121 122 123 124 125 126 127"
    dist = df.attrs["distances"]
    assert dist["nodes"] == list(range(16))
    m = dist["matrix"]
    # line 51: `  0:  10  11  12  12  13  14  15  16  28  29  29  30  30  31  31  32 `
    assert m[0] == [10, 11, 12, 12, 13, 14, 15, 16, 28, 29, 29, 30, 30, 31, 31, 32]
    for a in range(16):
        assert m[a][a] == 10
        for b in range(16):
            assert m[a][b] == m[b][a]
            if a != b:
                assert (11 <= m[a][b] <= 16) if a // 8 == b // 8 else (28 <= m[a][b] <= 32)


def test_no_numa_is_an_empty_frame_not_an_error() -> None:
    df = numactl.parse(N / "no-numa.synthetic.txt")
    assert len(df) == 0 and list(df.columns) == list(numactl.SCHEMA)
    assert df.attrs["available_nodes"] == 0 and df.attrs["distances"] == {"nodes": [], "matrix": []}
    assert "No NUMA available" in df.attrs["notes"][0]


def test_cut_last_line_dropped_and_counted() -> None:
    df = numactl.parse(N / "truncated-last-line.txt")
    assert len(df) == 1 and df.attrs["dropped_lines"] == 1
    # the matrix lost its only row: no half matrix is handed on
    assert df.attrs["distances"] == {"nodes": [], "matrix": []}


def test_cut_size_line_is_not_read_as_a_smaller_number() -> None:
    text = "available: 1 nodes (0)\nnode 0 cpus: 0 1\nnode 0 size: 66"  # `6618 MB` cut after `66`
    df = numactl.parse(text)
    assert pd.isna(df.loc[0, "size_mb"]) and df.attrs["dropped_lines"] == 1


def test_not_available_memory_is_nan() -> None:
    text = "available: 1 nodes (0)\nnode 0 cpus: 0 1\nnode 0 size: <not available>\nnode 0 free: 12 MB\n"
    df = numactl.parse(text)
    assert pd.isna(df.loc[0, "size_mb"]) and df.loc[0, "free_mb"] == 12


def test_compressed_cpu_ranges_are_counted() -> None:
    text = "available: 1 nodes (0)\nnode 0 cpus: 0-7,16-23 (16)\nnode 0 size: 100 MB\n"
    df = numactl.parse(text)
    assert df.loc[0, "cpus"] == "0-7,16-23 (16)" and df.loc[0, "cpu_count"] == 16


def test_no_distance_information() -> None:
    text = "available: 1 nodes (0)\nnode 0 cpus: 0\nNo distance information available.\n"
    df = numactl.parse(text)
    assert df.attrs["distances"] == {"nodes": [], "matrix": []} and df.attrs["notes"]


def test_garbage_mid_file_names_the_line() -> None:
    lines = (N / "two-socket-2node.synthetic.txt").read_text().splitlines()
    lines.insert(3, "node 0 size: 64314 GB")
    with pytest.raises(ParseError) as info:
        numactl.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4 and "GB" in info.value.line


def test_short_distance_row_mid_file_names_the_line() -> None:
    lines = (N / "two-socket-2node.synthetic.txt").read_text().splitlines()
    lines[9] = "  0:  10 "  # one value under a two-node header
    with pytest.raises(ParseError, match="1 distances for 2 nodes") as info:
        numactl.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 10


def test_node_not_announced_is_an_error() -> None:
    text = "available: 1 nodes (0)\nnode 0 cpus: 0\nnode 1 cpus: 1\n"
    with pytest.raises(ParseError, match="not on the `available:` line") as info:
        numactl.parse(text)
    assert info.value.line_no == 3


def test_empty_frame() -> None:
    df = numactl.parse("")
    assert len(df) == 0 and {c: str(t) for c, t in df.dtypes.items()} == numactl.SCHEMA
    assert df.attrs["available_nodes"] is None


def test_sniff() -> None:
    for path in N.glob("*.txt"):
        assert numactl.sniff(path.read_text()), path.name
    others = [p for p in FIXTURES.glob("*/*.txt") if p.parent.name != "numactl"]
    assert others
    for path in others:
        assert not numactl.sniff(path.read_text(encoding="utf-8", errors="replace")), path.name
    assert parsers.sniff_kind((N / "numactl-2.0.16-1node.txt").read_text()) == "numactl"


@pytest.mark.lab
def test_real_numactl_here() -> None:
    need_tool("numactl")
    out = subprocess.run(
        ["numactl", "--hardware"],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
        check=False,  # exits 1 on a kernel without NUMA, after saying so
    ).stdout
    df = numactl.parse(out)
    assert len(df) == df.attrs["available_nodes"]
    if len(df):
        assert all(row[i] == 10 for i, row in enumerate(df.attrs["distances"]["matrix"]))


def test_hardware_then_show_reads_both() -> None:
    # `numactl --hardware; numactl --show` saved in one file: the node and the shell's policy
    df = numactl.parse(N / "numactl-2.0.16-hardware-show.txt")
    assert df["node"].tolist() == [0] and df.at[0, "size_mb"] == 7514 and df.at[0, "free_mb"] == 5541
    assert df.attrs["distances"] == {"nodes": [0], "matrix": [[10]]}
    assert df.attrs["show"] == {
        "policy": "default",
        "preferred_node": "current",
        "physcpubind": [0, 1],
        "cpubind": [0],
        "nodebind": [0],
        "membind": [0],
        "preferred": [],
    }
    assert df.attrs["skipped"].count == 0
    # run under `numactl --interleave=all`: the interleave lines
    show = numactl.parse(N / "numactl-2.0.16-interleave-hardware-show.txt").attrs["show"]
    assert show["policy"] == "interleave" and show["preferred_node"] == "0 (interleave next)"
    assert show["interleavemask"] == [0] and show["interleavenode"] == 0 and show["preferred"] == [0]


def test_show_then_hardware_is_sniffed_and_read() -> None:
    path = N / "numactl-2.0.16-bind-show-hardware.txt"
    assert parsers.sniff_kind(path.read_text()) == "numactl"
    df = numactl.parse(path)
    assert df["cpu_count"].tolist() == [2] and df.attrs["available_nodes"] == 1
    # `numactl --membind=0 --physcpubind=1`: policy bind, one CPU
    assert df.attrs["show"]["policy"] == "bind" and df.attrs["show"]["physcpubind"] == [1]
    assert df.attrs["show"]["membind"] == [0]


def test_unknown_lines_skipped_numactl_lines_still_checked() -> None:
    text = (N / "numactl-2.0.16-hardware-show.txt").read_text()
    df = numactl.parse(text + "sh: 1: numastat: not found\n")
    assert len(df) == 1 and df.attrs["skipped"].count == 1
    assert df.attrs["skipped"].quoted[0].line_no == 15
    with pytest.raises(ParseError, match="not a list of numbers") as info:
        numactl.parse(text.replace("membind: 0 ", "membind: zero"))
    assert info.value.line_no == 13
    with pytest.raises(ParseError, match=r"nothing readable \(1 lines skipped\)"):
        numactl.parse("numactl: command not found\n")
    # no NUMA: --show prints the CPUs it may run on and says so (numactl.c `show()`)
    df = numactl.parse(
        "No NUMA available on this system\nphyscpubind: 0 1 \nNo NUMA support available on this system.\n"
    )
    assert df.empty and df.attrs["show"] == {"physcpubind": [0, 1]} and df.attrs["skipped"].count == 0

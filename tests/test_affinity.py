"""affinity parser: grep's `/proc/PID/status` Name and Cpus_allowed_list lines, one row per process."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import affinity

from .conftest import FIXTURES, need_tool

A = FIXTURES / "affinity"


def test_all_processes_capture() -> None:
    df = affinity.parse(A / "grep-3.8-all-processes.txt", host="db1")
    # 160 lines, two per process; glob order: `1`, `10`, `100`, ...
    assert len(df) == 80 and df["pid"].iloc[:2].tolist() == [1, 10]
    first = df.iloc[1]
    assert first["process"] == "kworker/0:0H-kblockd" and first["cpus_allowed"] == "0"
    assert first["cpu_count"] == 1 and first["host"] == "db1"
    assert set(df["cpus_allowed"]) == {"0", "1", "0-1"}


def test_pinned_process_and_a_name_with_a_tab() -> None:
    df = affinity.parse(A / "grep-3.8-taskset-and-odd-name.txt")
    rows = df.to_dict("records")
    assert [(r["process"], r["cpus_allowed"], r["cpu_count"]) for r in rows] == [
        ("sleep", "1", 1),  # taskset -c 1
        ("Web Content\tx", "0-1", 2),
    ]


def test_cut_last_line_dropped_and_counted() -> None:
    df = affinity.parse(A / "truncated-last-line.txt")
    assert df.attrs["dropped_lines"] == 1
    last = df.iloc[-1]
    assert last["pid"] == 8 and last["process"] == "kworker/R-netns"
    assert pd.isna(last["cpus_allowed"]) and pd.isna(last["cpu_count"])


def test_comma_list_and_cpu_list_helper() -> None:
    df = affinity.parse("/proc/7/status:Cpus_allowed_list:\t0-3,8,10-11\n/proc/7/status:Name:\tx\n")
    assert df.loc[0, "cpu_count"] == 7 and df.loc[0, "process"] == "x"
    assert affinity.cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert affinity.cpu_list("0 1 2 3 16 17") == [0, 1, 2, 3, 16, 17]  # numactl --hardware's form
    with pytest.raises(ValueError):
        affinity.cpu_list("3-1")


@pytest.mark.parametrize(
    ("text", "line_no"),
    [
        ("/proc/7/status:Name:\tx\n/proc/7/status:Name:\ty\n", 2),  # a field twice
        ("/proc/7/status:Cpus_allowed_list:\t0-1 \n", 1),  # not the kernel's list
        ("/proc/7/status:Cpus_allowed_list:\t5-2\n", 1),
        ("/proc/7/status:Cpus_allowed_list:\tff\n", 1),
        ("/proc/7/status:Cpus_allowed:\t3\n", 1),  # the hex mask: not a line perfkit asks for
        ("Name:\tx\n", 1),  # grep without -H
    ],
)
def test_anything_else_is_a_parse_error(text: str, line_no: int) -> None:
    with pytest.raises(ParseError) as info:
        affinity.parse(text)
    assert info.value.line_no == line_no


def test_sniff() -> None:
    for f in sorted(A.glob("*.txt")):
        assert affinity.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "affinity"]
    assert not [f for f in others if affinity.sniff(f.read_text(errors="replace"))]


@pytest.mark.lab
def test_real_capture_here() -> None:
    need_tool("grep")
    from perfkit.collectors import captures

    spec = next(s for s in captures.DEFAULT if s.id == "affinity")
    out = subprocess.run(
        ["sh", "-c", spec.render(interval=1, window=1, workdir="/tmp")],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
    ).stdout
    df = affinity.parse(out)
    assert len(df) > 1 and 1 in df["pid"].tolist()
    assert df["cpu_count"].dropna().ge(1).all()

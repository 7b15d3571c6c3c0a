"""perf_script parser: the Python fold gives what perfkit's awk `_FOLD` gives on the host."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfkit.collectors.captures import _FOLD
from perfkit.errors import ParseError
from perfkit.parsers import folded, perf_script

from .conftest import FIXTURES, need_tool

S = FIXTURES / "perf_script"

# Hand-made samples for the awk's corner rules (frames leaf first, as perf prints them).
EDGES = """\
web server 10/11 [001]  5.000001:   10101010 cpu-clock:ppp:
\t    7f01 foo;bar+0x10 (/usr/lib/libx.so.1)
\t    7f02 operator new(unsigned long)+0x2a (/usr/lib/libstdc++.so.6)
\t    7f03 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    7f04 [unknown] ([unknown])
\t    7f05 nodso

web 10/12 [000]  5.000002:   10101010 cpu-clock:ppp:
\t    7f06 main+0x1 (/usr/bin/web)
\t    srcline.c:12

web 10/12 [000]  5.000003:   10101010 cpu-clock:ppp:

"""


def _awk(text: str) -> dict[str, int]:
    need_tool("awk")
    out = subprocess.run(
        ["awk", _FOLD], input=text, capture_output=True, text=True, check=True, timeout=30
    ).stdout
    stack_counts: dict[str, int] = {}
    for line in out.splitlines():
        stack, count = line.rsplit(" ", 1)
        stack_counts[stack] = int(count)
    return stack_counts


def _py(source: str | Path) -> dict[str, int]:
    df = perf_script.parse(source)
    return dict(zip(df["stack"], (int(c) for c in df["count"]), strict=True))


@pytest.mark.parametrize("name", ["perf-6.1-record-g-python.txt", "perf-6.1-record-a-g-swapper.txt"])
def test_same_stacks_as_the_awk_on_real_output(name: str) -> None:
    text = (S / name).read_text()
    assert _py(S / name) == _awk(text)


def test_edge_rules_match_awk_and_hand_fold() -> None:
    # root first: nodso, [unknown] (its DSO is [unknown] too), [libc.so.6], `operator new(...)`, `foo:bar`
    expect = {
        "web;nodso;[unknown];[libc.so.6];operator new(unsigned long);foo:bar": 1,
        "web;main": 1,  # the srcline line is skipped; the frameless third sample is not counted
    }
    assert _py(EDGES) == expect == _awk(EDGES)
    assert perf_script.parse(EDGES).attrs["samples_without_stack"] == 1


def test_real_values() -> None:
    df = perf_script.parse(S / "perf-6.1-record-g-python.txt", host="db1")
    # the 302-line cut holds 66 sample headers (grep -c cpu-clock); all have frames
    assert df.attrs["total_samples"] == 66 and df["host"].eq("db1").all()
    assert list(df.columns) == list(folded.SCHEMA)
    swap = perf_script.parse(S / "perf-6.1-record-a-g-swapper.txt")
    assert len(swap) == 1 and swap.loc[0, "count"] == 12 and swap.loc[0, "depth"] == 13
    assert swap.loc[0, "leaf"] == "pv_native_safe_halt"


def test_cut_last_line_drops_its_sample() -> None:
    df = perf_script.parse(S / "truncated-last-line.txt")
    assert df.attrs["dropped_lines"] == 1 and df.attrs["total_samples"] == 11


def test_bad_header_names_its_line() -> None:
    text = (S / "perf-6.1-record-a-g-swapper.txt").read_text().splitlines()
    text.insert(14, "garbage here, no header")
    with pytest.raises(ParseError) as info:
        perf_script.parse("\n".join(text) + "\n")
    assert info.value.line_no == 15


def test_empty_and_idle_target() -> None:
    assert len(perf_script.parse("")) == 0
    df = perf_script.parse("# ========\n# captured on: x\n# ========\n")
    assert len(df) == 0 and df.attrs["total_samples"] == 0


def test_sniff() -> None:
    for path in S.glob("*.txt"):
        assert perf_script.sniff(path.read_text()), path.name
    assert perf_script.sniff(EDGES)
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "perf_script":
            assert not perf_script.sniff(path.read_text(errors="replace")), path

"""nproc parser: one integer, nothing else."""

from __future__ import annotations

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import nproc

from .conftest import FIXTURES

N = FIXTURES / "nproc"


def test_real_values() -> None:
    # the files hold `2\n` (2 vCPUs) and `1\n` (taskset -c 0)
    assert nproc.parse(N / "coreutils-9.1.txt", host="db1").to_dict("records") == [{"host": "db1", "cpus": 2}]
    assert nproc.parse(N / "coreutils-9.1-taskset-c0.txt").loc[0, "cpus"] == 1


@pytest.mark.parametrize("text", ["2 CPUs\n", "-2\n", "0\n", "2.0\n", "two\n", "2 4\n", "2\n3\n"])
def test_anything_else_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        nproc.parse(text)
    assert info.value.line_no == (2 if text == "2\n3\n" else 1)


def test_cut_last_line_dropped_and_counted() -> None:
    df = nproc.parse("1")  # no newline: could be the start of `16`
    assert len(df) == 0 and df.attrs["dropped_lines"] == 1


def test_empty() -> None:
    df = nproc.parse("")
    assert len(df) == 0 and list(df.columns) == list(nproc.SCHEMA)


def test_sniff() -> None:
    for f in sorted(N.glob("*.txt")):
        assert nproc.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "nproc"]
    assert not [f for f in others if nproc.sniff(f.read_text(errors="replace"))]

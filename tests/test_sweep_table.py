"""The sweep-table parser."""

from __future__ import annotations

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import sweep

from .conftest import FIXTURES


def test_seed002_table() -> None:
    df = sweep.parse(FIXTURES / "sweep" / "seed002-qps-p95.txt")
    assert df["threads"].tolist() == [8, 16, 32, 64, 128, 256]
    assert df["qps"].tolist()[2] == 3844 and df["lat_p95_ms"].tolist()[-1] == 14.73
    assert df["tps"].isna().all()


def test_decimal_comma_with_semicolons() -> None:
    df = sweep.parse(FIXTURES / "sweep" / "semicolon-decimal-comma.synthetic.txt")
    assert df["tps"].tolist() == [64.9, 995.9] and df["lat_avg_ms"].tolist() == [15.4, 18.1]


def test_aliases_and_whitespace() -> None:
    df = sweep.parse("Concurrency  Throughput  p99_ms\n10 100 5\n20 190 6\n")
    assert df["threads"].tolist() == [10, 20] and df["tps"].tolist() == [100, 190]
    assert df["lat_p99_ms"].tolist() == [5, 6]


@pytest.mark.parametrize(
    "text,line_no",
    [
        ("threads,tps\n8,1\n16,x\n", 3),
        ("threads,tps\n8.5,1\n", 2),
        ("hello,world\n1,2\n", 1),
        ("threads,tps\n8,1\n99999999999999999999999,2\n", 3),  # past int64: read as a float
        ("threads,tps\n8,1\n9223372036854775808,2\n", 3),  # read as uint64
    ],
)
def test_bad_tables(text: str, line_no: int) -> None:
    with pytest.raises(ParseError) as info:
        sweep.parse(text)
    assert info.value.line_no == line_no

"""mysql_status parser: sample times and counters too large for the frame are errors, not wrong values.

The values themselves are checked against the `.expected.json` files by test_fixtures.py.
"""

from __future__ import annotations

import re

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import mysql_status

from .conftest import FIXTURES

SAMPLES = FIXTURES / "mysql_status" / "sysbench-rw-2-4-threads.txt"


def _with(line_no: int, pattern: str, replacement: str) -> str:
    lines = SAMPLES.read_text().splitlines(keepends=True)
    lines[line_no - 1], n = re.subn(pattern, replacement, lines[line_no - 1], count=1)
    assert n == 1
    return "".join(lines)


@pytest.mark.parametrize(
    "t",
    [
        "253402300799",  # 9999-12-31: past datetime64[ns]
        "1e25",  # past the int64 milliseconds it is rounded to (wrapped to a wrong time before)
        "NaN",  # Python's json reads these
        "Infinity",
    ],
)
def test_sample_time_outside_datetime64_ns_names_the_line(t: str) -> None:
    with pytest.raises(ParseError, match="outside") as info:
        mysql_status.parse(_with(2, r'"t":[0-9.]+', f'"t":{t}'))
    assert info.value.line_no == 2


def test_sample_time_outside_datetime64_ns_in_the_last_line_is_dropped() -> None:
    n = len(SAMPLES.read_text().splitlines())
    df = mysql_status.parse(_with(n, r'"t":[0-9.]+', '"t":253402300799'))
    assert len(df) == n - 1 and df.attrs["dropped_lines"] == 1


@pytest.mark.parametrize("key", ["Questions", "Uptime", "Threads_running"])
def test_counter_too_large_for_a_float_names_the_line(key: str) -> None:
    with pytest.raises(ParseError, match="too large") as info:
        mysql_status.parse(_with(2, rf'"{key}":[0-9]+', f'"{key}":{"9" * 400}'))
    assert info.value.line_no == 2


def test_long_digit_string_in_a_text_value_is_no_error() -> None:
    df = mysql_status.parse(_with(2, r'"status":\{', '"status":{"Version_comment":"' + "9" * 400 + '",'))
    assert len(df) == len(SAMPLES.read_text().splitlines()) and df.attrs["dropped_lines"] == 0

"""What the sysstat text parsers (sar, mpstat, pidstat) share through parsers/_sysstat.py."""

from __future__ import annotations

import re

import pytest

from perfkit import parsers
from perfkit.errors import ParseError

from .conftest import FIXTURES

# one ISO capture per parser on `_sysstat`, and captures with other locales' dates and clocks
_ISO = [
    "mpstat/sysstat-12.6-P-ALL-iso.txt",
    "sar/sysstat-12.6-u-iso.txt",
    "pidstat/sysstat-12.6-u-d-w-iso-oltp.txt",
]
_LOCALES = [
    "mpstat/sysstat-12.6-P-ALL-en_US-12h.txt",
    "mpstat/sysstat-12.6-P-ALL-zh_CN.txt",
    "sar/sysstat-12.6-f-en_US-12h.txt",
    "sar/sysstat-12.6-f-de_DE.txt",
]


@pytest.mark.parametrize("path", _ISO + _LOCALES)
def test_banner_date_outside_datetime64_ns_names_the_line(path: str) -> None:
    # the rows' int64 ns stamps wrapped: year 9999 came out as 1816, a wrong time instead of an error
    kind = path.split("/")[0]
    text = (FIXTURES / path).read_text()
    late = text.replace("2026", "9999", 1)  # the banner's date
    with pytest.raises(ParseError, match="outside 1678-2261") as info:
        parsers.get(kind).parse(late)
    assert info.value.line_no == 1
    with pytest.raises(ParseError, match="outside 1678-2261") as info:  # a second capture joined on
        parsers.get(kind).parse(text + late)
    assert info.value.line_no == len(text.splitlines()) + 1


@pytest.mark.parametrize("path", _ISO)
def test_midnight_past_2261_names_the_row(path: str) -> None:
    # dated 2261-12-31 and shifted so the rows cross midnight into 2262, which datetime64[ns] cannot hold
    kind = path.split("/")[0]
    lines = (FIXTURES / path).read_text().splitlines()
    first = next(ln[:8] for ln in lines if re.match(r"\d\d:\d\d:\d\d ", ln))
    shift = 86400 - 2 - sum(int(x) * f for x, f in zip(first.split(":"), (3600, 60, 1), strict=True))

    def later(m: re.Match[str]) -> str:
        t = (int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]) + shift) % 86400
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"

    text = "\n".join(re.sub(r"^(\d\d):(\d\d):(\d\d)", later, ln) for ln in lines) + "\n"
    text = re.sub(r"\d{4}-\d\d-\d\d", "2261-12-31", text, count=1)
    with pytest.raises(ParseError, match="past 2261") as info:
        parsers.get(kind).parse(text)
    assert text.splitlines()[info.value.line_no - 1].startswith("00:00:0")

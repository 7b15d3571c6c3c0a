"""What the sysstat text parsers (sar, mpstat, pidstat) share through parsers/_sysstat.py."""

from __future__ import annotations

import pytest

from perfkit import parsers
from perfkit.errors import ParseError

from .conftest import FIXTURES


@pytest.mark.parametrize(
    "path",
    [
        "mpstat/sysstat-12.6-P-ALL-iso.txt",
        "mpstat/sysstat-12.6-P-ALL-en_US-12h.txt",
        "mpstat/sysstat-12.6-P-ALL-zh_CN.txt",
        "sar/sysstat-12.6-u-iso.txt",
        "sar/sysstat-12.6-f-en_US-12h.txt",
        "sar/sysstat-12.6-f-de_DE.txt",
        "pidstat/sysstat-12.6-u-d-w-iso-oltp.txt",
    ],
)
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

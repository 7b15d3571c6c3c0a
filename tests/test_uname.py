"""uname parser: both ends of the line, verbatim kernel version, missing OS field."""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import uname

from .conftest import FIXTURES

U = FIXTURES / "uname"


def test_real_values() -> None:
    # `Linux vm 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux`
    row = uname.parse(U / "coreutils-9.1-a.txt", host="db1").loc[0]
    assert (row["host"], row["kernel_name"], row["nodename"]) == ("db1", "Linux", "vm")
    assert row["kernel_release"] == "6.18.44-fc-v657"
    assert row["kernel_version"] == "#1 SMP PREEMPT_DYNAMIC @0"
    assert (row["machine"], row["operating_system"]) == ("x86_64", "GNU/Linux")


def test_debian_version_with_spaces() -> None:
    row = uname.parse(U / "debian-12.synthetic.txt").loc[0]
    assert row["kernel_version"] == "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)"
    assert row["kernel_release"] == "6.1.0-28-amd64" and row["machine"] == "x86_64"


def test_rhel_processor_and_platform() -> None:
    df = uname.parse(U / "centos-7.synthetic.txt")
    assert df.loc[0, "kernel_version"] == "#1 SMP Mon Oct 19 16:18:59 UTC 2020"
    assert df.loc[0, "machine"] == "x86_64" and "not kept" in df.attrs["notes"][0]


def test_macos_without_os_field_keeps_double_space() -> None:
    row = uname.parse(U / "macos-14.synthetic.txt").loc[0]
    assert row["machine"] == "arm64" and pd.isna(row["operating_system"])
    assert "Mon Oct  9 21:27:24 PDT 2023;" in row["kernel_version"]


def test_unknown_machine_taken_as_printed() -> None:
    df = uname.parse("Linux box 5.4.0 #1 SMP e2k GNU/Linux\n")
    assert df.loc[0, "machine"] == "e2k" and df.loc[0, "kernel_version"] == "#1 SMP"
    assert "no known architecture" in df.attrs["notes"][0]


def test_cut_last_line_dropped_and_counted() -> None:
    df = uname.parse(U / "truncated-last-line.txt")  # ends `x86_64 GN`
    assert len(df) == 0 and df.attrs["dropped_lines"] == 1


@pytest.mark.parametrize(
    "text", ["Linux vm 6.1\n", "hello world this is text\n", "Linux a 6 #1 x86_64\nLinux\n"]
)
def test_not_uname_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        uname.parse(text)
    assert info.value.line_no == (2 if text.count("\n") == 2 else 1)


def test_empty() -> None:
    df = uname.parse("")
    assert len(df) == 0 and list(df.columns) == list(uname.SCHEMA)


def test_sniff() -> None:
    for f in sorted(U.glob("*.txt")):
        if "truncated" not in f.name:
            assert uname.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "uname"]
    assert not [f for f in others if uname.sniff(f.read_text(errors="replace"))]

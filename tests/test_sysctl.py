"""sysctl parser: values verbatim, numbers, the ephemeral port range, cut-off and malformed captures.

Expected values below are read off the raw fixture lines by eye; the port count is
60999 - 32768 + 1 = 28232 from `net.ipv4.ip_local_port_range = 32768<TAB>60999`.
"""

from __future__ import annotations

import math
import subprocess

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import sysctl

from .conftest import FIXTURES, need_tool

S = FIXTURES / "sysctl"


def test_perfkit_keys() -> None:
    df = sysctl.parse(S / "procps-4.0.2-perfkit-keys.txt", host="db1")
    assert len(df) == 7 and df["host"].eq("db1").all()
    by_key = df.set_index("key")
    assert by_key.loc["net.ipv4.ip_local_port_range", "value"] == "32768\t60999"
    assert math.isnan(by_key.loc["net.ipv4.ip_local_port_range", "value_num"])
    assert by_key.loc["net.ipv4.tcp_tw_reuse", "value_num"] == 2.0
    assert by_key.loc["net.core.somaxconn", "value_num"] == 4096.0
    assert by_key.loc["vm.swappiness", "value"] == "60"
    assert df.attrs["port_range_low"] == 32768 and df.attrs["port_range_high"] == 60999
    assert df.attrs["ephemeral_ports"] == 28232 and df.attrs["dropped_lines"] == 0


def test_whole_tree_with_tabs_and_empty_values() -> None:
    df = sysctl.parse(S / "procps-4.0.2-net.ipv4.txt")
    assert len(df) == 437 and df["key"].is_unique
    by_key = df.set_index("key")
    assert by_key.loc["net.ipv4.tcp_rmem", "value"] == "4096\t131072\t33554432"
    assert by_key.loc["net.ipv4.ip_local_reserved_ports", "value"] == ""
    assert math.isnan(by_key.loc["net.ipv4.ip_local_reserved_ports", "value_num"])
    assert df.attrs["ephemeral_ports"] == 28232


def test_multi_line_file_is_one_row() -> None:
    df = sysctl.parse(S / "procps-4.0.2-multiline-empty.txt")
    by_key = df.set_index("key")
    assert len(df) == 6
    assert by_key.loc["kernel.core_modes", "value"] == "file\npipe\nsocket"
    assert by_key.loc["kernel.domainname", "value"] == "(none)"
    assert by_key.loc["net.ipv4.tcp_allowed_congestion_control", "value"] == "reno bbr"
    assert by_key.loc["fs.file-max", "value_num"] == 2466177.0
    assert "ephemeral_ports" not in df.attrs


def test_missing_key_is_absent_not_an_error() -> None:
    df = sysctl.parse(S / "procps-4.0.2-missing-key.txt")
    assert df["key"].tolist() == ["net.ipv4.ip_local_port_range", "vm.swappiness"]


def test_port_range_split_on_spaces_too() -> None:
    df = sysctl.parse("net.ipv4.ip_local_port_range = 1024 65535\n")
    assert df.attrs["ephemeral_ports"] == 64512


def test_bad_port_range_names_its_line() -> None:
    with pytest.raises(ParseError, match="ip_local_port_range") as info:
        sysctl.parse("vm.swappiness = 60\nnet.ipv4.ip_local_port_range = 60999\t32768\n")
    assert info.value.line_no == 2


def test_negative_value_is_a_number() -> None:
    df = sysctl.parse("kernel.perf_event_paranoid = -1\n")
    assert df.loc[0, "value_num"] == -1.0


def test_cut_last_line_dropped_and_counted() -> None:
    df = sysctl.parse(S / "truncated-last-line.txt")
    # `vm.swappiness = 60` was cut to `vm.swappiness = 6`: dropped, never read as 6.
    assert len(df) == 6 and "vm.swappiness" not in set(df["key"]) and df.attrs["dropped_lines"] == 1


def test_stderr_line_mid_file_is_skipped_and_counted() -> None:
    # issue 17: sysctl's message saved with stdout no longer refuses the file; it is quoted
    lines = (S / "procps-4.0.2-perfkit-keys.txt").read_text().splitlines()
    lines.insert(2, "sysctl: cannot stat /proc/sys/net/ipv4/no_such_key: No such file or directory")
    df = sysctl.parse("\n".join(lines) + "\n")
    skipped = df.attrs["skipped"]
    assert len(df) == 7 and skipped.count == 1
    assert skipped.quoted[0].line_no == 3 and "cannot stat" in skipped.quoted[0].text


def test_key_line_in_another_form_names_the_line() -> None:
    lines = (S / "procps-4.0.2-perfkit-keys.txt").read_text().splitlines()
    lines.insert(2, "net.core.somaxconn: 4096")  # BSD's form: a key, but no ` = `
    with pytest.raises(ParseError) as info:
        sysctl.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 3 and "somaxconn" in info.value.line
    with pytest.raises(ParseError, match=r":1: nothing readable \(2 lines skipped\)"):
        sysctl.parse("sysctl: permission denied on key 'kernel.cad_pid'\nsysctl: cannot stat x\n")


def test_sysctl_a_as_a_user_with_stderr() -> None:
    # `su nobody -c 'sysctl -a' > f 2>&1`: 16 `sysctl: permission denied on key '...'` lines among the keys
    df = sysctl.parse(S / "procps-4.0.2-a-nobody-stderr.txt")
    skipped = df.attrs["skipped"]
    assert skipped.count == 16 and skipped.quoted[0].line_no == 70
    assert skipped.quoted[0].text == "sysctl: permission denied on key 'kernel.cad_pid'"
    values = dict(zip(df["key"], df["value"], strict=True))
    assert "kernel.cad_pid" not in values and values["kernel.hostname"] == "vm"
    assert values["net.ipv4.ip_local_port_range"] == "32768\t60999" and df.attrs["ephemeral_ports"] == 28232
    assert values["vm.swappiness"] == "60"


def test_empty_capture() -> None:
    df = sysctl.parse("")
    assert len(df) == 0 and list(df.columns) == list(sysctl.SCHEMA) and df.attrs["dropped_lines"] == 0


def test_sniff() -> None:
    for path in S.glob("*.txt"):
        assert sysctl.sniff(path.read_text()), path.name
    others = [p for p in FIXTURES.glob("*/*.txt") if p.parent.name != "sysctl"]
    assert others and not any(sysctl.sniff(p.read_text(errors="replace")) for p in others)


@pytest.mark.lab
def test_real_sysctl_here() -> None:
    need_tool("sysctl")
    out = subprocess.run(
        ["sysctl", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_fin_timeout"],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
    ).stdout
    df = sysctl.parse(out)
    assert len(df) == 2 and df.attrs["ephemeral_ports"] > 0

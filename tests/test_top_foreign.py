"""top captures other tools' users make (issue 17): extra fields from a toprc, a task table saved alone."""

from __future__ import annotations

import math

from perfkit import parsers
from perfkit.parsers import _common, ps, top

from .conftest import FIXTURES

P = FIXTURES / "top"
EXTRA = ["P", "nTH", "SWAP", "CODE", "WCHAN", "nsIPC"]


def test_toprc_fields_after_command_are_skipped_and_the_known_ones_read() -> None:
    # toprc: P moved before COMMAND, nTH SWAP CODE WCHAN nsIPC shown after it (COMMAND padded to 400+)
    df = top.parse(P / "procps-4.0.2-toprc-fields.txt")
    assert len(df) == 12 and sorted(set(df["iteration"])) == [0, 1]
    assert df.attrs["unknown_columns"] == EXTRA
    spin = df.iloc[0]
    assert (spin["pid"], spin["state"], spin["cpu_pct"], spin["time_s"], spin["command"]) == (
        4,
        "R",
        33.3,
        0.22,
        "sh",
    )
    assert set(df["command"]) == {"sh", "sleep", "top"}  # no padding, no `1 0 76 - 4026531839`


def test_toprc_fields_with_command_lines_keep_their_spaces() -> None:
    df = top.parse(P / "procps-4.0.2-toprc-fields-c.txt")
    commands = list(df[df["iteration"] == 1]["command"])
    assert commands[0] == "sh -c i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done perfkit-spin"
    assert 'sh -c sleep 60; : two words "q"' in commands and "sleep 60" in commands
    assert df[df["iteration"] == 1].iloc[0]["cpu_pct"] == 29.4


def test_a_number_wider_than_its_label_is_not_taken_into_command() -> None:
    # the same capture with nTH 1 printed as 1234 (a right-justified field wider than `nTH`)
    lines = (P / "procps-4.0.2-toprc-fields-c.txt").read_text().splitlines(keepends=True)
    header, row = lines[6], lines[7]
    at = header.index(" nTH") + len(" nTH")
    assert row[at - 4 : at] == "   1"
    lines[7] = row[: at - 4] + "1234" + row[at:]
    df = top.parse("".join(lines))
    assert df.iloc[0]["command"] == "sh -c i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done perfkit-spin"


def test_jc_all_fields_captures_are_read() -> None:
    # jc's fixtures: every field shown, ENVIRON and CGROUPS (values with spaces) after COMMAND
    centos = top.parse(P / "jc-centos-7.7-b-n1-gib-allfields-w.txt")
    first = centos.iloc[0]
    assert len(centos) == 108 and (first["pid"], first["command"], first["cpu_pct"]) == (2225, "top", 12.5)
    assert first["virt_kb"] == 158.1 * 1024 and first["res_kb"] == 2.2 * 1024  # `158.1m`, `2.2m`
    assert centos.attrs["summaries"][0]["tasks_total"] == 108
    ubuntu = top.parse(P / "jc-ubuntu-20.10-b-allfields.txt")
    assert len(ubuntu) == 215 and list(ubuntu["command"][:3]) == ["top", "systemd", "kthreadd"]
    assert {"ENVIRON", "CGROUPS", "nsIPC", "WCHAN"} <= set(ubuntu.attrs["unknown_columns"])


def test_a_task_table_saved_alone_is_top_not_ps() -> None:
    path = P / "procps-4.0.2-tasks-only.txt"
    head = _common.head(path)
    assert head.split()[:3] == ["PID", "USER", "PR"]
    assert parsers.sniff_kind(head) == "top" and not ps.sniff(head)
    df = top.parse(path)
    assert len(df) == 7 and set(df["iteration"]) == {0} and df["clock_s"].map(math.isnan).all()
    assert (df.iloc[0]["pid"], df.iloc[0]["cpu_pct"], df.iloc[0]["command"]) == (4, 18.8, "sh")
    assert any("without top's summary" in note for note in df.attrs["notes"])
    assert df.attrs["summaries"][0]["clock"] is None


def test_a_task_table_with_toprc_fields_saved_alone_is_read() -> None:
    df = top.parse(P / "procps-4.0.2-toprc-fields-tasks-only.txt")
    assert len(df) == 7 and df.attrs["unknown_columns"] == EXTRA and df.iloc[0]["cpu_pct"] == 44.4


def test_ps_headers_stay_ps() -> None:
    for name in ("jc-centos-7.7-axu.txt", "jc-ubuntu-18.04-axu.txt", "procps-4.0.2-auxww.txt"):
        head = _common.head(FIXTURES / "ps" / name)
        assert ps.sniff(head) and not top.sniff(head), name

"""df parser: values, block sizes, spaces, wrapped lines, locales, cut-off and foreign captures."""

from __future__ import annotations

import math
import subprocess
import time

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import df as dfp

from .conftest import FIXTURES, need_tool

D = FIXTURES / "df"
# The two tmpfs rows are the same in every real capture (nothing wrote to them between captures);
# / changes by a few KiB from one capture to the next, so cross-capture checks use these rows.
STATIC = ["devtmpfs", "tmpfs", "proc", "pkspace", "pk scratch"]


def _static(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["filesystem"].isin(STATIC)].reset_index(drop=True)


def test_real_df_P_k_values() -> None:
    df = dfp.parse(D / "coreutils-9.1-P-k.txt", host="db1")
    assert len(df) == 6 and df["host"].eq("db1").all()
    # line 2: `/dev/vda  264212084 15578712  79922552  17% /`
    root = df.iloc[0]
    assert (root["filesystem"], root["mount"]) == ("/dev/vda", "/")
    assert (root["size_kb"], root["used_kb"], root["avail_kb"]) == (264212084, 15578712, 79922552)
    # df's capacity is used / (used + avail) rounded up: 15578712 / 95501264 = 16.3 % -> 17,
    # not used / size (5.9 %): root's reserved blocks are left out.
    assert root["capacity_pct"] == 17 == math.ceil(100 * 15578712 / (15578712 + 79922552))
    assert {k: v for k, v in df.attrs.items() if k != "skipped"} == {
        "dropped_lines": 0,
        "block_size": 1024,
        "notes": [],
    }
    assert df.attrs["skipped"].count == 0


def test_spaces_in_name_and_mount_point_kept_verbatim() -> None:
    df = dfp.parse(D / "coreutils-9.1-P-k.txt")
    # line 6: `pkspace  2048  1952  96  96% /tmp/pk data vol` (the tmpfs filled by dd to 96 %)
    full = df[df["mount"] == "/tmp/pk data vol"].iloc[0]
    assert full["filesystem"] == "pkspace"
    assert (full["size_kb"], full["used_kb"], full["avail_kb"], full["capacity_pct"]) == (2048, 1952, 96, 96)
    # line 7: `pk scratch  8192  3000  5192  37% /tmp/pkscratch` (mounted with source "pk scratch")
    scratch = df[df["filesystem"] == "pk scratch"].iloc[0]
    assert scratch["mount"] == "/tmp/pkscratch" and scratch["used_kb"] == 3000


def test_pseudo_filesystem_capacity_dash_is_nan_not_zero() -> None:
    df = dfp.parse(D / "coreutils-9.1-P-k.txt")
    proc = df[df["mount"] == "/proc"].iloc[0]  # `proc  0  0  0  - /proc`
    assert pd.isna(proc["capacity_pct"]) and proc["size_kb"] == 0


def test_512_blocks_are_converted_to_kib() -> None:
    df = dfp.parse(D / "coreutils-9.1-P-512.txt")
    # `pkspace  4096  3904  192  96%` in 512-byte blocks = 2048 / 1952 / 96 KiB
    row = df[df["filesystem"] == "pkspace"].iloc[0]
    assert (row["size_kb"], row["used_kb"], row["avail_kb"]) == (2048, 1952, 96)
    # `/dev/vda  528424168 31157432 159845096` halves to 264212084 / 15578716 / 79922548
    assert tuple(df.iloc[0][["size_kb", "used_kb", "avail_kb"]]) == (264212084, 15578716, 79922548)
    assert df.attrs["block_size"] == 512 and df.attrs["notes"] == ["512-byte blocks converted to KiB"]
    pd.testing.assert_frame_equal(_static(df), _static(dfp.parse(D / "coreutils-9.1-P-k.txt")))


def test_odd_512_block_count_keeps_the_half_kib() -> None:
    text = "Filesystem 512-blocks Used Available Capacity Mounted on\n/dev/sdb 1001 3 997 1% /data\n"
    row = dfp.parse(text).iloc[0]
    assert (row["size_kb"], row["used_kb"], row["avail_kb"]) == (500.5, 1.5, 498.5)


def test_plain_df_header_gives_the_same_rows() -> None:
    df = dfp.parse(D / "coreutils-9.1-plain.txt")
    pd.testing.assert_frame_equal(_static(df), _static(dfp.parse(D / "coreutils-9.1-P-k.txt")))


@pytest.mark.parametrize("name", ["locale-de_DE.txt", "locale-zh_CN.txt"])
def test_translated_header_rows_read_by_shape(name: str) -> None:
    df = dfp.parse(D / name)
    assert len(df) == 6 and "another locale" in df.attrs["notes"][0]
    pd.testing.assert_frame_equal(_static(df), _static(dfp.parse(D / "coreutils-9.1-P-k.txt")))


def test_thousands_separators_refused_not_misread() -> None:
    with pytest.raises(ParseError, match="capture not taken under LC_ALL=C") as info:
        dfp.parse(D / "locale-de_DE-thousands.txt")
    assert info.value.line_no == 2 and "270.553.174.016" in info.value.line


@pytest.mark.parametrize(
    "header",
    [
        "Filesystem      Size  Used Avail Use% Mounted on",  # -h
        "Filesystem       Inodes  IUsed    IFree IUse% Mounted on",  # -i
    ],
)
def test_other_df_reports_refused_at_the_header(header: str) -> None:
    with pytest.raises(ParseError) as info:
        dfp.parse(header + "\n/dev/vda ext4 100 50 50 50% /\n")
    assert info.value.line_no == 1


def test_unit_suffix_values_refused() -> None:
    text = (
        "Filesystem     1048576-blocks   Used Available Capacity Mounted on\n"
        "/dev/vda              258020M 15214M    78050M      17% /\n"
    )
    with pytest.raises(ParseError, match="unit suffix") as info:
        dfp.parse(text)
    assert info.value.line_no == 2


def test_wrapped_long_names_are_joined() -> None:
    df = dfp.parse(D / "coreutils-8.4-plain-wrapped-nfs.synthetic.txt")
    assert df["filesystem"].tolist() == [
        "/dev/mapper/VolGroup-lv_root",
        "tmpfs",
        "/dev/sda1",
        "nfs01.example.com:/export/data/mysql-backups",
    ]
    # lines 6-7: the NFS name, then `1056894976 1003542528  53352448  95% /backup`
    nfs = df.iloc[3]
    assert (nfs["size_kb"], nfs["used_kb"], nfs["avail_kb"]) == (1056894976, 1003542528, 53352448)
    assert nfs["capacity_pct"] == 95 and nfs["mount"] == "/backup"


def test_wrapped_name_without_numbers_mid_file_names_its_line() -> None:
    text = (
        "Filesystem 1K-blocks Used Available Use% Mounted on\n"
        "nfs01:/export/a\n"
        "/dev/sda1 495844 66131 404113 15% /boot\n"
    )
    with pytest.raises(ParseError) as info:
        dfp.parse(text)
    assert info.value.line_no == 2 and info.value.line == "nfs01:/export/a"


def test_wrapped_name_as_last_line_is_dropped_and_counted() -> None:
    text = (
        "Filesystem 1K-blocks Used Available Use% Mounted on\n"
        "/dev/sda1 495844 66131 404113 15% /boot\n"
        "nfs01:/a\n"
    )
    df = dfp.parse(text)
    assert len(df) == 1 and df.attrs["dropped_lines"] == 1


def test_cut_last_line_dropped_and_counted() -> None:
    df = dfp.parse(D / "truncated-last-line.txt")
    assert len(df) == 5 and df.attrs["dropped_lines"] == 1
    assert "pk scratch" not in df["filesystem"].tolist()


def test_cut_mount_point_is_not_kept() -> None:
    # the last row stops inside its mount point: it still matches a row, but cannot be trusted
    text = (D / "coreutils-9.1-P-k.txt").read_text()[:-8]
    assert text.endswith("/tmp/pk")
    df = dfp.parse(text)
    assert len(df) == 5 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    lines = (D / "coreutils-9.1-P-k.txt").read_text().splitlines()
    lines.insert(3, "tmpfs  24684092  oops  24684092  0% /run")
    with pytest.raises(ParseError) as info:
        dfp.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4 and "oops" in info.value.line


def test_rows_without_header_refused() -> None:
    with pytest.raises(ParseError, match="header") as info:
        dfp.parse("/dev/vda 264212084 15578712 79922552 17% /\n")
    assert info.value.line_no == 1


def test_huge_line_is_refused_quickly() -> None:
    text = "Filesystem 1024-blocks Used Available Capacity Mounted on\nx" + " " * 2_000_000 + "y\n"
    start = time.perf_counter()
    with pytest.raises(ParseError):
        dfp.parse(text)
    assert time.perf_counter() - start < 2


def test_header_only_and_empty() -> None:
    df = dfp.parse("Filesystem 1024-blocks Used Available Capacity Mounted on\n")
    assert len(df) == 0 and list(df.columns) == list(dfp.SCHEMA)
    assert {c: str(t) for c, t in dfp.parse("").dtypes.items()} == dfp.SCHEMA


def test_sniff() -> None:
    for name in [
        "coreutils-9.1-P-k.txt",
        "coreutils-9.1-P-512.txt",
        "coreutils-9.1-plain.txt",
        "locale-de_DE.txt",
        "locale-zh_CN.txt",
        "coreutils-8.4-plain-wrapped-nfs.synthetic.txt",
    ]:
        assert dfp.sniff((D / name).read_text()), name
    others = [p for p in FIXTURES.glob("*/*.txt") if p.parent.name != "df"]
    assert others
    for path in others:
        assert not dfp.sniff(path.read_text(encoding="utf-8", errors="replace")), path.name
    assert parsers.sniff_kind((D / "coreutils-9.1-P-k.txt").read_text()) == "df"


@pytest.mark.lab
def test_real_df_here() -> None:
    need_tool("df")
    out = subprocess.run(
        ["df", "-P", "-k"],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    df = dfp.parse(out)
    assert len(df) >= 1 and df["mount"].str.startswith("/").all()
    assert (df["used_kb"] <= df["size_kb"]).all()


def test_df_T_type_column_read_past() -> None:
    df = dfp.parse(D / "coreutils-9.1-P-k-T.txt")
    # `/dev/vda  ext4  264212084 16961968  78539296  18% /`
    assert df["filesystem"].tolist() == ["/dev/vda", "tmpfs"] and df["mount"].tolist() == ["/", "/dev/shm"]
    assert (
        df.at[0, "size_kb"] == 264212084
        and df.at[0, "avail_kb"] == 78539296
        and df.at[0, "capacity_pct"] == 18
    )
    assert df.attrs["notes"] == ["df -T: the Type column is not kept"] and dfp.sniff(
        (D / "coreutils-9.1-P-k-T.txt").read_text()
    )
    # jc's generic fixture: values as jc's JSON gives them; `-  /proc` (two blanks) is mount `/proc`
    df = dfp.parse(D / "jc-generic-df-long-filesystem-T.txt")
    assert df["filesystem"].tolist() == ["/dev/mapper/VolGroup00-LogVol00", "proc", "sysfs"]
    assert df["mount"].tolist() == ["/", "/proc", "/sys"]
    assert df.loc[0, ["size_kb", "used_kb", "avail_kb", "capacity_pct"]].tolist() == [
        6030784,
        1147932,
        4571556,
        21,
    ]
    assert df["capacity_pct"].iloc[1:].isna().all()


def test_df_message_on_stderr_skipped_and_counted() -> None:
    path = D / "coreutils-9.1-P-k-missing-stderr.txt"
    df = dfp.parse(path)
    assert df["mount"].tolist() == ["/", "/dev/shm"] and df.at[0, "used_kb"] == 16961988
    skipped = df.attrs["skipped"]
    assert skipped.count == 1 and skipped.quoted[0].line_no == 1
    assert skipped.quoted[0].text == "df: /nonexistent: No such file or directory"
    assert dfp.sniff(path.read_text())
    with pytest.raises(ParseError, match=r"nothing readable \(1 lines skipped\)"):
        dfp.parse("df: /nonexistent: No such file or directory\n")

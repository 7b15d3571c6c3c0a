"""dd parser: summaries in four locales, progress lines, several runs, old and BusyBox forms."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import dd

from .conftest import FIXTURES

D = FIXTURES / "dd"


def test_dsync_values() -> None:
    df = dd.parse(D / "coreutils-9.1-dsync.txt", host="db1")
    r = df.iloc[0]
    # raw: 2000+0 records in/out, "8192000 bytes (8.2 MB, 7.8 MiB) copied, 5.06517 s, 1.6 MB/s"
    assert (r["records_in_full"], r["records_in_partial"], r["records_out_full"]) == (2000, 0, 2000)
    assert r["bytes"] == 8192000 and r["elapsed_s"] == 5.06517 and r["rate_text"] == "1.6 MB/s"
    assert r["bytes_per_s"] == pytest.approx(8192000 / 5.06517)  # not the rounded 1.6 MB/s
    assert r["record_ms"] == pytest.approx(5.06517 * 1000 / 2000) and r["host"] == "db1"


@pytest.mark.parametrize(
    ("name", "seconds"),
    [("coreutils-9.1-dsync-de_DE.txt", 0.524324), ("coreutils-9.1-dsync-zh_CN.txt", 0.483018)],
)
def test_other_locales_read_right(name: str, seconds: float) -> None:
    # de_DE: "8192000 Bytes (8,2 MB, 7,8 MiB) kopiert, 0,524324 s, 15,6 MB/s"; zh_CN full-width commas
    df = dd.parse(D / name)
    assert df.loc[0, "bytes"] == 8192000 and df.loc[0, "elapsed_s"] == seconds
    assert df.loc[0, "records_out_full"] == 2000


def test_progress_lines_are_counted_not_rows() -> None:
    df = dd.parse(D / "coreutils-9.1-status-progress.txt")
    # raw: 12 "\r"-separated progress lines, then "3145728000 bytes ... copied, 13.0296 s, 241 MB/s"
    assert len(df) == 1 and df.loc[0, "progress_lines"] == 12
    assert df.loc[0, "bytes"] == 3145728000 and df.loc[0, "elapsed_s"] == 13.0296


def test_several_runs_and_error_message() -> None:
    df = dd.parse(D / "coreutils-9.1-several-runs.txt")
    assert df["run"].tolist() == [0, 1, 2, 3, 4]
    assert df["bytes"].tolist() == [2048000, 2048000, 0, 0, 2097152]
    assert df.loc[2, "elapsed_s"] == 3.4501e-05 and math.isnan(df.loc[2, "record_ms"])  # 0 records out
    assert df.loc[3, "messages"] == "dd: error writing '/dev/full': No space left on device"
    assert df.loc[3, "records_in_full"] == 1 and df.loc[3, "records_out_full"] == 0


def test_old_coreutils_and_busybox() -> None:
    old = dd.parse(D / "coreutils-8.22-centos7.synthetic.txt")
    bb = dd.parse(D / "busybox.synthetic.txt")
    assert old.loc[0, "elapsed_s"] == 2.34 and bb.loc[0, "elapsed_s"] == 2.34
    assert bb.loc[0, "rate_text"] == "3.3MB/s" and bb.loc[0, "bytes_per_s"] == pytest.approx(8192000 / 2.34)


def test_truncated_record_line() -> None:
    text = "0+1 records in\n0+1 records out\n1 truncated record\n2 bytes copied, 4.2744e-05 s, 46.8 kB/s\n"
    df = dd.parse(text)
    assert (
        df.loc[0, "truncated_records"] == 1
        and df.loc[0, "records_out_partial"] == 1
        and df.loc[0, "bytes"] == 2
    )


def test_cut_last_line_dropped_and_counted() -> None:
    df = dd.parse(D / "truncated-last-line.txt")
    assert len(df) == 5 and df.attrs["dropped_lines"] == 1
    assert pd.isna(df.loc[4, "bytes"]) and df.loc[4, "records_out_full"] == 2


def test_garbage_mid_file_names_the_line() -> None:
    lines = (D / "coreutils-9.1-several-runs.txt").read_text().splitlines()
    lines.insert(3, "500+0 oops 7")
    with pytest.raises(ParseError) as info:
        dd.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 4 and "oops" in info.value.line


def test_records_in_without_records_out() -> None:
    with pytest.raises(ParseError, match="records out") as info:
        dd.parse("2000+0 records in\n8192000 bytes (8.2 MB, 7.8 MiB) copied, 2 s, 4 MB/s\n")
    assert info.value.line_no == 2


def test_empty() -> None:
    df = dd.parse("")
    assert len(df) == 0 and list(df.columns) == list(dd.SCHEMA)


def test_sniff() -> None:
    for path in D.glob("*.txt"):
        assert dd.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "dd" and path.parent.name in parsers.registry():
            assert not dd.sniff(path.read_text(errors="replace")[:8192]), path

"""The table engine's byte grid for rows whose fields are pushed out of their columns by a wide value
(`_realigned_rows`), with `d` fields (`Layout.shapes`: vmstat -t's stamp) among them: read in bulk
without pandas, as row by row."""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.parsers import _table, vmstat

from .conftest import FIXTURES, bulk_spy, row_by_row


def _pushed_capture(rows: int) -> str:
    """`vmstat -w -t 1` rows (header every 21) where `in` and `cs` grow past their columns every few
    rows, pushing the fields after them right, as vmstat prints them."""
    lines = (FIXTURES / "vmstat" / "procps-4.0.2-wide-t-gu.txt").read_text().splitlines(keepends=True)
    head = "".join(lines[:2])
    out, clock = [], pd.Timestamp("2026-11-22 23:59:30")
    for i in range(rows):
        if i % 21 == 0:
            out.append(head)
        wide = i % 7 == 3
        fields = ["2", "0", "0", "24332236", "1864", "262120", "0", "0", str(i), "44740"]
        fields += [str(1234567 + i) if wide else "478", str(9876543) if wide else "907"]
        fields += ["14", "7", "78", "1", "0", "0"]
        widths = [4, 4, 12, 12, 12, 12, 4, 4, 5, 5, 4, 4, 3, 3, 3, 3, 3, 3]
        row = " ".join(f.rjust(w) for f, w in zip(fields, widths, strict=True))
        out.append(f"{row} {(clock + pd.Timedelta(seconds=i)).strftime('%Y-%m-%d %H:%M:%S')}\n")
    return "".join(out)


def test_pushed_rows_with_stamps_read_by_the_grid_as_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _pushed_capture(3000)
    expected = row_by_row(vmstat.parse, text)

    def no_pandas(*args: object) -> None:
        raise AssertionError("a run read by pandas, not the byte grid")

    batches = bulk_spy(monkeypatch)
    monkeypatch.setattr(_table, "_read_csv", no_pandas)
    got = vmstat.parse(text)
    assert len(batches) > 5 and 0 not in batches and sum(batches) == len(got) == 3000
    pd.testing.assert_frame_equal(got, expected)
    assert got.loc[3, "in"] == 1234570 and got.loc[3, "cs"] == 9876543 and got.loc[4, "in"] == 478
    assert str(got.loc[31, "timestamp"]) == "2026-11-23 00:00:01+00:00"  # past midnight

"""mysqladmin extended-status parser: absolute and -r blocks, rates, text values, cut-off captures."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import _chunks, _table, mysqladmin

from .conftest import FIXTURES, row_by_row

M = FIXTURES / "mysqladmin"


def _at(df, sample: int, variable: str):  # noqa: ANN001, ANN202 - test helper
    row = df[(df["sample"] == sample) & (df["variable"] == variable)]
    assert len(row) == 1
    return row.iloc[0]


def test_relative_blocks() -> None:
    df = mysqladmin.parse(M / "mariadb-10.11-ext-r-i1-c3.txt", host="db1")
    assert df.attrs["relative"] is True and df.attrs["runs"] == 3 and len(df) == 3 * 29
    # raw Questions: 75278 (absolute), then 19176 and 15653 (differences over -i1)
    q = [_at(df, i, "Questions") for i in range(3)]
    assert [r["value"] for r in q] == [75278, 19176, 15653]
    assert [r["absolute"] for r in q] == [75278, 75278 + 19176, 75278 + 19176 + 15653]
    assert math.isnan(q[0]["per_s"]) and q[1]["per_s"] == 19176 and q[2]["per_s"] == 15653
    assert [r["relative"] for r in q] == [False, True, True]
    # raw Threads_running: 2, -1, 2 -> a gauge: values 2, 1, 3; no rate
    t = [_at(df, i, "Threads_running") for i in range(3)]
    assert [r["absolute"] for r in t] == [2, 1, 3] and all(math.isnan(r["per_s"]) for r in t)
    # raw Compression "0" and Query_time "2": strtoull's work under -r, not values
    assert math.isnan(_at(df, 0, "Compression")["value"]) and math.isnan(_at(df, 0, "Query_time")["value"])
    assert df["host"].eq("db1").all()


def test_absolute_blocks_are_differenced() -> None:
    df = mysqladmin.parse(M / "mariadb-10.11-ext-i1-c3.txt", interval_s=2)
    assert df.attrs["relative"] is False
    # raw Com_select: 90380, 104081, 117201 -> (104081-90380)/2, (117201-104081)/2
    rates = [_at(df, i, "Com_select")["per_s"] for i in range(3)]
    assert math.isnan(rates[0]) and rates[1:] == [13701 / 2, 13120 / 2]
    assert _at(df, 1, "Compression")["text"] == "OFF" and math.isnan(_at(df, 1, "Compression")["value"])
    assert _at(df, 2, "Query_time")["value"] == 5.211076
    assert not _at(df, 1, "Innodb_buffer_pool_pages_dirty")["counter"]  # a gauge: no rate
    assert math.isnan(_at(df, 1, "Innodb_buffer_pool_pages_dirty")["per_s"])


def test_single_block_text_values() -> None:
    df = mysqladmin.parse(M / "mariadb-10.11-ext.txt")
    assert _at(df, 0, "Max_memory_used")["text"] == "NULL" and _at(df, 0, "Ssl_cipher")["text"] == ""
    assert (
        _at(df, 0, "Innodb_buffer_pool_load_status")["text"]
        == "Buffer pool(s) load completed at 261123  7:49:50"
    )
    assert df["per_s"].isna().all()


def test_full_mariadb_block() -> None:
    df = mysqladmin.parse(M / "mariadb-10.11-ext-full.out")
    # 566 lines: 3 border/header lines on top, 1 border at the end, 562 variables (wc -l)
    assert len(df) == 562 and df["variable"].is_unique
    assert df["variable"].iloc[0] == "Aborted_clients" and df["variable"].iloc[-1] == "wsrep_thread_count"
    assert df["text"].notna().sum() == 32  # non-numeric values: awk on the raw file
    assert _at(df, 0, "Com_select")["counter"] and not _at(df, 0, "Threads_connected")["counter"]


def test_cut_last_line_dropped_and_counted() -> None:
    df = mysqladmin.parse(M / "truncated-last-line.txt")
    assert df.attrs["dropped_lines"] == 1 and len(df) == 3 * 29 - 1
    assert "Uptime_since_flush_status" not in set(df[df["sample"] == 2]["variable"])


def test_malformed_row_mid_file_names_the_line() -> None:
    lines = (M / "mariadb-10.11-ext.txt").read_text().splitlines()
    lines.insert(5, "| Com_select 12 |")
    with pytest.raises(ParseError) as info:
        mysqladmin.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 6


def test_duplicate_variable_is_refused() -> None:
    lines = (M / "mariadb-10.11-ext.txt").read_text().splitlines()
    lines.insert(5, lines[4])
    with pytest.raises(ParseError, match="twice"):
        mysqladmin.parse("\n".join(lines) + "\n")


def test_undetectable_relative_needs_the_argument() -> None:
    block = "+------+-----+\n| Variable_name | Value |\n+------+-----+\n| Questions | 5 |\n+------+-----+\n\n"
    with pytest.raises(ParseError, match="relative="):
        mysqladmin.parse(block * 2)
    df = mysqladmin.parse(block * 2, relative=True)
    assert df["absolute"].tolist() == [5, 10] and df["per_s"].tolist()[1] == 5


def test_empty() -> None:
    df = mysqladmin.parse("")
    assert len(df) == 0 and list(df.columns) == list(mysqladmin.SCHEMA)


def test_sniff() -> None:
    for path in list(M.glob("*.txt")) + [M / "mariadb-10.11-ext-full.out"]:
        assert mysqladmin.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "mysqladmin" and path.parent.name in parsers.registry():
            assert not mysqladmin.sniff(path.read_text(errors="replace")[:8192]), path


def _r_capture(blocks: int) -> str:
    """`mysqladmin extended-status -r -i1` boxes: block k prints Uptime 1 and Questions k * 7 (block 0:
    absolute values), then a variable `Variable_name` inside the box (a row all the same)."""
    rule = "+---------------+-------+"
    out = []
    for k in range(blocks):
        uptime, questions = (100, 1000) if k == 0 else (1, k * 7)
        out += [rule, "| Variable_name | Value |", rule]
        out += [f"| Questions     | {questions:<5} |", f"| Uptime        | {uptime:<5} |"]
        out += ["| Variable_name | 3     |", rule, ""]
    return "\n".join(out[:-1]) + "\n"


def test_long_capture_in_chunks_from_every_kind_of_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_table, "CHUNK_ROWS", 64)  # many chunks, blocks cut across them
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 1000)
    text = _r_capture(400)
    path = tmp_path / "ext.txt"
    path.write_text(text)
    frames = [
        mysqladmin.parse(src, host="db1")
        for src in (path, text, io.StringIO(text), io.BytesIO(text.encode()))
    ]
    df = frames[0]
    for other in frames[1:]:
        pd.testing.assert_frame_equal(df, other)
    assert df.attrs["relative"] is True and df.attrs["runs"] == 400 and len(df) == 400 * 3
    q = df[df["variable"] == "Questions"]
    assert q["value"].tolist() == [1000] + [k * 7 for k in range(1, 400)]
    assert q["absolute"].iloc[-1] == 1000 + 7 * sum(range(400))
    assert q["per_s"].iloc[1:].tolist() == [k * 7.0 for k in range(1, 400)]
    assert df[df["variable"] == "Variable_name"]["value"].eq(3).all()


def test_a_variable_twice_in_a_box_cut_across_chunks_after_a_new_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Box 2 prints V3-V5 for the first time, then V0 again: found however the chunks cut the box (the
    duplicate keys once carried the width from before the new names and missed it)."""
    rule = "+---------------+-------+"

    def box(names: list[str]) -> list[str]:
        return [
            rule,
            "| Variable_name | Value |",
            rule,
            *[f"| {n:<13} | {i:<5} |" for i, n in enumerate(names)],
            rule,
        ]

    text = "\n".join(box(["V0", "V1", "V2"]) + box(["V0", "V1", "V2", "V3", "V4", "V5", "V0"])) + "\n"
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 120)
    for rows in range(1, 12):
        monkeypatch.setattr(_table, "CHUNK_ROWS", rows)
        with pytest.raises(ParseError, match="V0 printed twice in one block") as info:
            mysqladmin.parse(text, relative=False)
        assert info.value.line_no == 17, rows


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b)
    assert {k: v for k, v in a.attrs.items()} == {k: v for k, v in b.attrs.items()}


@pytest.mark.parametrize(
    "path", sorted([*M.glob("*.txt"), M / "mariadb-10.11-ext-full.out"]), ids=lambda p: p.name
)
def test_engine_bulk_reads_as_row_by_row(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = mysqladmin.parse(path)
    _same(whole, row_by_row(mysqladmin.parse, path))
    monkeypatch.setattr(_table, "CHUNK_ROWS", 5)  # boxes cut across chunks
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 333)
    _same(whole, mysqladmin.parse(path))
    _same(whole, row_by_row(mysqladmin.parse, path))


def test_value_with_a_bar_message_and_box_errors() -> None:
    rule = "+---------------+-------+"
    box = [
        rule,
        "| Variable_name | Value |",
        rule,
        "| Ssl_cipher    | a|b   |",
        "| Questions     | 5     |",
        rule,
    ]
    df = mysqladmin.parse(
        "mysqladmin: [Warning] Using a password on the command line\n" + "\n".join(box) + "\n"
    )
    assert _at(df, 0, "Ssl_cipher")["text"] == "a|b" and _at(df, 0, "Questions")["value"] == 5
    assert df.attrs["notes"] == [
        "mysqladmin said: mysqladmin: [Warning] Using a password on the command line"
    ]
    cases = {  # (lines, the line named, its reason)
        "blank in the header": ([rule, "", "| Variable_name | Value |", rule], 2, "blank line"),
        "border for the header": ([rule, rule], 2, "header belongs"),
        "no header": ([rule, "| Questions     | 5     |"], 2, "Variable_name | Value |` header"),
        "a row outside a box": ([*box, "| Questions     | 6     |"], 7, "not mysqladmin"),
        "another program inside": ([*box[:4], "oops", *box[4:]], 5, "malformed"),
        "another program after": ([*box, "", "uptime 5"], 8, "not mysqladmin"),
    }
    for name, (lines, line_no, reason) in cases.items():
        with pytest.raises(ParseError, match=reason) as info:
            mysqladmin.parse("\n".join(lines) + "\n")
        assert info.value.line_no == line_no, name

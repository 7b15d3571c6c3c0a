"""The partial-capture contract (parsers/_common.Skips): lines a parser did not know are counted and
quoted, the capture marked partial in findings.json's inputs; a file is refused only when nothing was read."""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.dataset import Capture, Dataset
from perfkit.errors import ParseError
from perfkit.parsers._common import SKIP_QUOTES, Lines, Skips, skips_of


def test_skips_count_every_line_and_quote_the_first_few() -> None:
    s = Skips()
    for n in range(1, 6):
        s.add(n, f"unknown {n}" + "x" * 300, "not a vmstat line")
    s.add_block(10, ["IFACE rxpck/s", "lo 1.0", "eth0 2.0"], "sar's network table: not read")
    assert s.count == 8 and len(s.quoted) == SKIP_QUOTES
    assert s.quoted[0].line_no == 1 and len(s.quoted[0].text) == 200
    assert s.summary().startswith("8 lines skipped, e.g. line 1 'unknown 1")
    assert Skips().summary() == ""


def test_a_file_is_refused_only_when_no_row_was_read() -> None:
    s = Skips()
    s.add(3, "garbage", "not a vmstat line")
    s.refuse_if_nothing_read(1, Lines("x", "vmstat"))  # one row read: partial, not refused
    with pytest.raises(ParseError, match=r"vmstat: <text>:3: nothing readable \(1 lines skipped\)"):
        s.refuse_if_nothing_read(0, Lines("x", "vmstat"))
    Skips().refuse_if_nothing_read(0, Lines("x", "vmstat"))  # an empty capture is not a refusal here


def test_a_partial_capture_is_said_in_the_inputs() -> None:
    frame = pd.DataFrame({"a": [1, 2]})
    frame.attrs["skipped"] = s = Skips()
    s.add(7, "Summary: all", "a summary line")
    whole = pd.DataFrame({"a": [1]})
    ds = Dataset(source="x", manifest=None)
    ds.captures += [Capture("a.txt", "sar", "h", None, frame), Capture("b.txt", "sar", "h", None, whole)]
    part, full = ds.inputs()["parsed"]
    assert part["partial"] is True and part["skipped_lines"] == 1
    assert part["skipped"] == [{"line": 7, "text": "Summary: all", "reason": "a summary line"}]
    assert full["partial"] is False and full["skipped"] == [] and skips_of(whole).count == 0

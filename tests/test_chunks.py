"""ByteScan, the chunked reader under the sysstat parsers: it numbers and splits lines as `Lines` does.

Oracle: `Lines` (line numbers, CR/LF/CRLF, undecodable bytes replaced, a cut last line). Each way of
finding the structure lines (a regex per line start, or numpy over the first byte of every line) must
give the same items, and the rows' line ends where `Rows.ends` says.
"""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import _chunks
from perfkit.parsers._chunks import ByteScan, Rows
from perfkit.parsers._common import Lines

_REGEX = (re.compile(rb"\n(?![0-9\n])"),)  # what pidstat and mpstat mark: neither a digit nor blank first
_ROW_BYTES = b"0123456789\n"
_PIECES = [b"12 3\n", b"08:00:01 x\n", b"\n", b"Linux 6.1\n", b"Average: 1\n", b"\r\n", b"\r", b"9", b" \n"]
_PIECES += [b"\xff\xfe\n", b"7\r\n", b"\xe5\xb9\xb3\xe5\x9d\x87: 1\n", b"a", b"0"]


def _items(data: bytes, **kwargs: object) -> tuple[list[tuple[int, str]], tuple[int, str] | None, list[Rows]]:
    """Every line ByteScan yields, as (line number, text), in order; its `cut`; the Rows themselves."""
    scan = ByteScan(io.BytesIO(data), "test", **kwargs)
    out: list[tuple[int, str]] = []
    runs: list[Rows] = []
    for item in scan:
        if isinstance(item, Rows):
            runs.append(item)
            lines = item.data.decode("utf-8", "replace").split("\n")[:-1]
            assert len(lines) == item.count
            out += [(item.first_no + k, line) for k, line in enumerate(lines)]
        else:
            out.append(item)
    return out, scan.cut, runs


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.integers(1, 9))
def test_both_ways_of_marking_read_lines_as_lines_does(pieces: list[bytes], chunk: int) -> None:
    data = b"".join(pieces)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_chunks, "_CHUNK_BYTES", chunk)  # lines cut across reads
        by_regex, cut_regex, _ = _items(data, marks=_REGEX)
        by_bytes, cut_bytes, runs = _items(data, row_bytes=_ROW_BYTES)
    assert by_bytes == by_regex and cut_bytes == cut_regex
    lines = Lines(io.BytesIO(data), "test")
    want = list(lines)
    if not lines.last_complete and want and want[-1][1].strip():
        assert cut_bytes == want.pop()  # a cut last line is left to the parser
    assert by_bytes == want
    for run in runs:  # the rows' line ends, where `ends` says they are
        assert run.ends is not None and len(run.ends) == run.count
        assert all(run.data[e] == 0x0A for e in run.ends.tolist()) and run.ends[-1] == len(run.data) - 1
        assert run.data[:1] in {b"\n", *(bytes([b]) for b in b"0123456789")}


def test_structure_lines_by_first_byte() -> None:
    data = b"Linux 6.1 (h)\n\n08:00:00 UID\n08:00:01 0 1\n\nAverage: 0 1\n"
    items, cut, runs = _items(data, row_bytes=_ROW_BYTES)
    assert [(run.first_no, run.count) for run in runs] == [(2, 4)]
    assert [i for i in items if i[0] in (1, 6)] == [(1, "Linux 6.1 (h)"), (6, "Average: 0 1")]
    assert runs[0].ends.tolist() == [0, 13, 26, 27] and cut is None


@pytest.mark.parametrize("kind", ["mysqladmin", "pidstat", "mpstat", "sar"])
def test_a_stream_that_cannot_be_read_is_a_parse_error(kind: str) -> None:
    # a text stream opened strictly on bytes that are not UTF-8: UnicodeDecodeError while reading
    stream = io.TextIOWrapper(io.BytesIO(b"08:00:00 x\n" * 3 + b"\xff\xfe\n"), encoding="utf-8")
    with pytest.raises(ParseError, match="cannot read"):
        parsers.get(kind).parse(stream)

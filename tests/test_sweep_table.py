"""The sweep-table parser."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfkit.errors import ParseError
from perfkit.parsers import sweep

from .conftest import FIXTURES


def test_seed002_table() -> None:
    df = sweep.parse(FIXTURES / "sweep" / "seed002-qps-p95.txt")
    assert df["threads"].tolist() == [8, 16, 32, 64, 128, 256]
    assert df["qps"].tolist()[2] == 3844 and df["lat_p95_ms"].tolist()[-1] == 14.73
    assert df["tps"].isna().all()


def test_decimal_comma_with_semicolons() -> None:
    df = sweep.parse(FIXTURES / "sweep" / "semicolon-decimal-comma.synthetic.txt")
    assert df["tps"].tolist() == [64.9, 995.9] and df["lat_avg_ms"].tolist() == [15.4, 18.1]


def test_aliases_and_whitespace() -> None:
    df = sweep.parse("Concurrency  Throughput  p99_ms\n10 100 5\n20 190 6\n")
    assert df["threads"].tolist() == [10, 20] and df["tps"].tolist() == [100, 190]
    assert df["lat_p99_ms"].tolist() == [5, 6]


@pytest.mark.parametrize(
    "text,line_no",
    [
        ("threads,tps\n8,1\n16,x\n", 3),
        ("threads,tps\n8.5,1\n", 2),
        ("hello,world\n1,2\n", 1),
        ("threads,tps\n8,1\n99999999999999999999999,2\n", 3),  # past int64: read as a float
        ("threads,tps\n8,1\n9223372036854775808,2\n", 3),  # read as uint64
    ],
)
def test_bad_tables(text: str, line_no: int) -> None:
    with pytest.raises(ParseError) as info:
        sweep.parse(text)
    assert info.value.line_no == line_no


# ---------------------------------------------------------------- issue 14 #9: read exactly or refuse


def _refused(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        sweep.parse(text)
    return info.value


@pytest.mark.parametrize(
    "text,line_no,says",
    [
        ("threads;tps\n8;1.234\n", 2, "reads two ways"),  # 1234 or 1.234? nothing in the table tells
        ("threads\ttps\n8\t1,234\n", 2, "reads two ways"),
        ("threads tps\n8 1 234\n", 2, "3 values but the header names 2"),  # was threads 1, tps 234
        ("threads,tps\n8,-5\n", 2, "negative"),
        ("threads,tps\n8,100\n16,nan\n32,300\n", 3, "no value"),  # NaN switched the knee off
        ("threads,tps\n8,100\n16,\n", 3, "no value"),
        ("threads,tps\n8,\n16,\n", 2, "no value"),  # all blank: was a traceback downstream
        ("threads,tps\n8,inf\n", 2, "not finite"),
        ("threads,tps\n8,1e999\n", 2, "not finite"),
        ("threads,tps\n-8,5\n", 2, "thread count"),
        ("threads,tps\n0,5\n", 2, "thread count"),
        ("threads,tps\n8.5,5\n", 2, "whole number"),
        ("threads,tps\ninf,5\n", 2, "not finite"),
        ("threads,tps,lat_ms\n8,5,-1\n", 2, "negative"),
        ('threads,tps\n8,"64,9"\n', 2, "decimal comma in a ','-separated table"),
        ("threads;tps\n8;1.234,5\n16;2.5\n", 3, "different decimal marks"),
        ("threads,tps,throughput\n8,5,5\n", 1, "both mean tps"),
        ("threads;tps,qps\n8;5\n", 1, "mixes separators"),
    ],
)
def test_wrong_numbers_are_refused_naming_the_line(text: str, line_no: int, says: str) -> None:
    err = _refused(text)
    assert (err.line_no, err.kind) == (line_no, "sweep") and says in err.reason
    assert str(err).endswith(repr(text.splitlines()[line_no - 1]))  # the line, and with it the value


def test_refusal_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sweep.csv"
    path.write_text("threads;tps\n8;1.234\n")
    err = _refused(str(path))
    assert str(err).startswith(f"sweep: {path}:2: tps '1.234' reads two ways")


@pytest.mark.parametrize(
    "text,tps",
    [
        ("threads;tps;lat_ms\n8;1.234;15,4\n", [1234.0]),  # the decimal comma says '.' groups thousands
        ("threads;tps\n8;1.234\n16;2,5\n", [1234.0, 2.5]),
        ("threads;tps\n8;1.234.567\n", [1234567.0]),  # a repeated mark only groups
        ("threads,tps\n8,1.234\n", [1.234]),  # a ','-separated table has a decimal point
        ('threads,tps\n8,"1,234"\n16,"1,234.5"\n', [1234.0, 1234.5]),
        ("threads\ttps\n8\t1 234\n16\t1\u202f234,5\n", [1234.0, 1234.5]),  # blanks group (fr_FR)
        ("threads;tps\n8;1'234.5\n", [1234.5]),  # de_CH
        ("threads tps\n8 0.512\n16 1.024\n", [0.512, 1.024]),  # 0.512 cannot be grouped: '.' is decimal
        ("threads,tps\n8,0\n16,5\n", [0.0, 5.0]),  # a step where nothing got through is real
        ("threads,tps\n8,-0\n", [0.0]),
    ],
)
def test_numbers_read_exactly(text: str, tps: list[float]) -> None:
    assert sweep.parse(text)["tps"].tolist() == tps


def test_zero_latency_is_below_the_resolution_not_zero() -> None:
    df = sweep.parse("threads,tps,lat_ms,p95_ms\n8,100,0,0.9\n16,190,0.52,0.00\n")
    lat, p95 = df["lat_avg_ms"].tolist(), df["lat_p95_ms"].tolist()
    assert math.isnan(lat[0]) and lat[1] == 0.52 and p95[0] == 0.9 and math.isnan(p95[1])
    assert df.attrs["notes"] == [
        "line 2: lat_ms '0' is below the table's print resolution, not zero: kept as missing",
        "line 3: p95_ms '0.00' is below the table's print resolution, not zero: kept as missing",
    ]


def test_repeated_thread_counts_are_kept_and_blank_latency_is_missing() -> None:
    df = sweep.parse("threads,tps,qps,lat_ms\n8,100,,\n8,110,2000,-\n16,190,NA,n/a\n,,,\n")
    assert df["threads"].tolist() == [8, 8, 16] and df["tps"].tolist() == [100, 110, 190]
    assert df["qps"].isna().tolist() == [True, False, True] and df["lat_avg_ms"].isna().all()


@pytest.mark.parametrize("last", ["3,3", "# end", "   "])
def test_only_a_cut_last_row_is_dropped(last: str) -> None:
    """A last line without its newline may be a row cut mid-write (`3,3` of `3,30`): dropped. A comment
    or blanks there are no row, and the row before them was written whole."""
    df = sweep.parse("threads,tps\n1,10\n2,20\n" + last)
    assert list(df["threads"]) == [1, 2]
    assert df.attrs["dropped_lines"] == (1 if last == "3,3" else 0)


def test_thread_counts_are_exact_integers() -> None:
    df = sweep.parse("threads;tps\n1.024;5\n8,0;6\n2e3;7\n9223372036854775807;8\n")
    assert df["threads"].tolist() == [1024, 8, 2000, 2**63 - 1]


# A random table: each value is drawn as the number it means (or a hostile token), then written in a
# dialect: a separator, a decimal mark and an optional thousands separator. The parser must give back
# exactly the numbers meant, or refuse with a ParseError; no other exception, no other number.

_DIALECTS = [  # (separator, decimal mark, thousands separators it may write)
    (",", ".", ["", ","]),  # a ',' grouping is quoted
    (";", ",", ["", ".", " ", "\u202f"]),
    (";", ".", ["", ",", "'"]),
    ("\t", ".", ["", ",", " "]),
    ("\t", ",", ["", ".", " "]),
    (" ", ".", ["", ","]),
    (" ", ",", ["", "."]),
]
_HOSTILE = ["", "nan", "NaN", "inf", "-inf", "Infinity", "-", "1e999", "abc", "1,2,3", "1..2", "0x10"]


def _write(value: float, decimal: str, group: str, digits: int) -> str:
    text = f"{value:,.{digits}f}" if group else f"{value:.{digits}f}"
    return text.replace(",", "\0").replace(".", decimal).replace("\0", group)


@st.composite
def tables(draw: st.DrawFn) -> tuple[str, list[dict[str, float | None]]]:
    sep, decimal, groups = draw(st.sampled_from(_DIALECTS))
    cols = ["threads", "tps"] + draw(st.sampled_from([[], ["lat_ms"], ["lat_ms", "p95_ms"]]))
    meant: list[dict[str, float | None]] = []
    lines = [sep.join(cols)]
    for _ in range(draw(st.integers(1, 6))):
        cells, row = [], {}
        for col in cols:
            if draw(st.integers(0, 9)) == 0:
                token, value = draw(st.sampled_from(_HOSTILE)), None
            else:
                digits = 0 if col == "threads" else draw(st.integers(0, 4))
                value = draw(
                    st.one_of(
                        st.integers(1, 5_000_000),
                        st.integers(-3, 0),
                        st.floats(-5, 1e7, allow_nan=False),
                    )
                )
                value = round(float(value), digits)
                token = _write(value, decimal, draw(st.sampled_from(groups)), digits)
            if sep == " " and not token:
                token = "-"  # a blank-separated table cannot hold an empty cell
            if sep == "," and "," in token:
                token = f'"{token}"'
            cells.append(token)
            row[col] = value
        if any(cells):  # a row of empty cells is a spreadsheet's filler, skipped
            meant.append(row)
        lines.append(sep.join(cells))
    return "\n".join(lines) + "\n", meant


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_random_tables_read_exactly_or_refused(case: tuple[str, list[dict[str, float | None]]]) -> None:
    text, meant = case
    try:
        df = sweep.parse(text)
    except ParseError as exc:
        assert exc.kind == "sweep" and exc.line_no >= 1
        return
    assert len(df) == len(meant)
    for i, row in enumerate(meant):
        assert row["threads"] is not None and row["threads"] >= 1
        assert df["threads"].iloc[i] == row["threads"]
        assert row["tps"] is not None and row["tps"] >= 0 and df["tps"].iloc[i] == row["tps"]
        for col, name in (("lat_ms", "lat_avg_ms"), ("p95_ms", "lat_p95_ms")):
            if col in row:
                got, want = df[name].iloc[i], row[col]
                if want is None or want == 0:
                    assert math.isnan(got)  # blank, or below the print resolution
                else:
                    assert want > 0 and got == want

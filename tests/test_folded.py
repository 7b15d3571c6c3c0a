"""folded parser and flat_cum: real awk output, hand-made small inputs, cut-off and bad lines."""

from __future__ import annotations

import pytest

from perfkit.errors import ParseError
from perfkit.parsers import folded

from .conftest import FIXTURES

F = FIXTURES / "folded"


def test_real_awk_output() -> None:
    df = folded.parse(F / "perf-6.1-python-awk.txt", host="db1")
    # 9 lines; counts 1+7+1+1+49+1+6+5+25 = 96 (perf record said 96 samples)
    assert len(df) == 9 and df.attrs["total_samples"] == 96 and df["host"].eq("db1").all()
    row = df[df["stack"] == "busy;[unknown];[unknown];_PyEval_EvalFrameDefault"].iloc[0]
    assert row["count"] == 49 and row["comm"] == "busy" and row["leaf"] == "_PyEval_EvalFrameDefault"
    assert row["depth"] == 4
    assert str(df["count"].dtype) == "int64"


def test_frames_with_spaces_and_duplicates() -> None:
    text = "app;main;operator new(unsigned long) 4\napp;main 2\napp;main;operator new(unsigned long) 3\n"
    df = folded.parse(text)
    assert df["stack"].tolist() == ["app;main;operator new(unsigned long)", "app;main"]
    assert df["count"].tolist() == [7, 2] and df.attrs["merged_lines"] == 1
    assert df["leaf"].tolist() == ["operator new(unsigned long)", "main"]
    assert df.attrs["total_samples"] == 9


def test_cut_last_line_dropped_and_counted() -> None:
    df = folded.parse(F / "truncated-last-line.txt")
    assert len(df) == 8 and df.attrs["dropped_lines"] == 1 and df.attrs["total_samples"] == 96 - 25


def test_malformed_line_names_it() -> None:
    with pytest.raises(ParseError) as info:
        folded.parse("a;b 3\na;c three\na;d 1\n")
    assert info.value.line_no == 2 and "three" in info.value.line


def test_empty() -> None:
    df = folded.parse("")
    assert len(df) == 0 and df.attrs["total_samples"] == 0
    assert {c: str(t) for c, t in df.dtypes.items()} == folded.SCHEMA


def test_flat_cum_hand_computed() -> None:
    df = folded.parse("p;main;f;g 3\np;main;f 2\np;main;f;f;f 1\np;main;h 4\nq 1\n")
    # total 3+2+1+4+1 = 11 (the comm-only `q 1` counts in the total, charges no function)
    # flat: g 3, f 2+1 = 3, h 4, main 0; cum: main 3+2+1+4 = 10, f 3+2+1 = 6 (once per stack), g 3, h 4
    out = folded.flat_cum(df)
    assert out["function"].tolist() == ["h", "f", "g", "main"]  # flat desc, then cum desc
    got = {r.function: (r.flat_samples, r.cum_samples) for r in out.itertuples()}
    assert got == {"h": (4, 4), "f": (3, 6), "g": (3, 3), "main": (0, 10)}
    f = out.set_index("function")
    assert f.loc["h", "flat_pct"] == pytest.approx(400 / 11) and f.loc["main", "cum_pct"] == pytest.approx(
        1000 / 11
    )
    assert (out["cum_samples"] <= 11).all()
    assert {c: str(t) for c, t in out.dtypes.items()} == folded.FLAT_CUM_SCHEMA


def test_flat_cum_recursion_only_stack() -> None:
    out = folded.flat_cum(folded.parse("p;f;f;f 5\n"))
    assert out.to_dict("records") == [
        {"function": "f", "flat_samples": 5, "cum_samples": 5, "flat_pct": 100.0, "cum_pct": 100.0}
    ]


def test_flat_cum_empty() -> None:
    out = folded.flat_cum(folded.parse(""))
    assert len(out) == 0 and list(out.columns) == list(folded.FLAT_CUM_SCHEMA)


def test_sniff() -> None:
    for path in F.glob("*.txt"):
        assert folded.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "folded":
            assert not folded.sniff(path.read_text(errors="replace")), path

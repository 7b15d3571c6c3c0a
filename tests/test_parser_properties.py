"""Every parser, fed truncated, mutated or random input, either parses or raises ParseError.

Nothing else may escape: a traceback on a stranger's capture is a bug.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfkit import parsers
from perfkit.errors import ParseError

from .conftest import FIXTURES

SAMPLES = sorted(p for p in FIXTURES.glob("*/*.txt") if p.parent.name in parsers.registry())
TEXTS = [(p.parent.name, p.read_text(encoding="utf-8", errors="replace")) for p in SAMPLES]


def _check(kind: str, text: str) -> None:
    try:
        df = parsers.get(kind).parse(text)
    except ParseError as exc:
        assert exc.kind == kind and exc.line_no >= 0
        return
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(parsers.get(kind).SCHEMA)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    kind, text = draw(st.sampled_from(TEXTS))
    how = draw(st.sampled_from(["truncate", "insert", "swap_decimal", "dup_line", "delete_line"]))
    if how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "insert":
        at = draw(st.integers(0, len(text)))
        junk = draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
        text = text[:at] + junk + text[at:]
    elif how == "swap_decimal":
        text = text.replace(".", ",")
    else:
        lines = text.splitlines(keepends=True)
        if lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines[i : i + 1] = [lines[i], lines[i]] if how == "dup_line" else []
        text = "".join(lines)
    return kind, text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_fixtures_parse_or_raise_parse_error(sample: tuple[str, str]) -> None:
    _check(*sample)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(parsers.registry())), st.text(max_size=300))
def test_random_text_parses_or_raises_parse_error(kind: str, text: str) -> None:
    _check(kind, text)


def test_there_are_samples() -> None:
    assert {k for k, _ in TEXTS} >= {"vmstat", "sweep"}
    assert all(isinstance(p, Path) for p in SAMPLES)

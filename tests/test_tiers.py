"""The tiers parser: long and wide CSV, YAML, and what it refuses."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from perfkit.errors import ParseError
from perfkit.parsers import sweep, tiers

from .conftest import FIXTURES, ROOT

SEED003 = [("seed003-long.txt", "long"), ("seed003-wide.txt", "wide"), ("seed003-yaml.txt", "yaml")]


@pytest.mark.parametrize("name,form", SEED003)
def test_seed003_in_every_form_gives_the_same_tiers(name: str, form: str) -> None:
    df = tiers.parse(FIXTURES / "tiers" / name, host="x")
    assert df.attrs["form"] == form
    rt = {(r.tier, r.threads): r.rt_ms for r in df.itertuples()}
    assert rt == {
        ("pts", 3000): 290,
        ("mhpt", 3000): 225,
        ("drds", 3000): 6,
        ("pts", 5000): 499,
        ("mhpt", 5000): 195,
        ("drds", 5000): 6,
    }
    order = dict(zip(df["tier"], df["tier_order"], strict=True))
    assert order == {"pts": 0, "mhpt": 1, "drds": 2}  # client inward, as written
    assert (df["host"] == "x").all()


def test_long_form_keeps_a_partial_tps_column() -> None:
    df = tiers.parse(FIXTURES / "tiers" / "seed003-long.txt")
    assert df.loc[(df["tier"] == "pts") & (df["threads"] == 5000), "tps"].item() == 9856
    assert df["tps"].isna().sum() == 5


def test_semicolons_decimal_comma_and_missing_values() -> None:
    df = tiers.parse(FIXTURES / "tiers" / "semicolon-missing.synthetic.txt")
    assert df["tier"].tolist()[:3] == ["lb", "app", "db"]  # `<tier>_rt_ms` columns
    assert df["rt_ms"].tolist()[0] == 12.5 and df["rt_ms"].isna().tolist() == [False] * 3 + [
        True,
        False,
        False,
    ]
    assert df["tps"].tolist()[:3] == [8000.0] * 3 and df["tps"].iloc[3:].isna().all()


def test_yaml_shared_and_per_tier_tps() -> None:
    text = (
        "tiers:\n  - name: lb\n    rt_ms: {10: 5, 20: 9}\n    tps: {10: 100, 20: 110}\n"
        "  - name: db\n    rt_ms: {10: 1, 20: 1}\ntps: {10: 99, 20: 98}\n"
    )
    df = tiers.parse(text)
    assert df[df["tier"] == "lb"]["tps"].tolist() == [100, 110]
    assert df[df["tier"] == "db"]["tps"].tolist() == [99, 98]


@pytest.mark.parametrize(
    "text,line_no,reason",
    [
        ("threads,client_ms,app_ms\n10,1,2\n20,-3,1\n", 3, "must be a finite number >= 0"),
        ("threads,client_ms,app_ms\n10.5,1,2\n", 2, "whole number"),
        ("threads,client_ms,app_ms\n10,1\n", 2, "2 fields, the header has 3"),
        ("threads,tier,rt_ms\n10,,3\n", 2, "the tier is empty"),
        ("tiers:\n  - name: a\n    rt_ms: {10: x}\n", 3, "rt_ms is not a number"),
        ("tiers:\n  - name: a\n    rt_ms: {10: 1}\n  - name: a\n    rt_ms: {10: 1}\n", 4, "listed twice"),
        ("tiers:\n  - name: a\n", 2, "needs 'name:' and 'rt_ms:'"),
        ("tiers: 3\n", 1, "expected a list"),
        ("just words\n", 1, "not a tiers file"),
    ],
)
def test_bad_files_name_the_line(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as info:
        tiers.parse(text)
    assert info.value.line_no == line_no and reason in info.value.reason


def test_sniff() -> None:
    for name, _ in SEED003:
        assert tiers.sniff((FIXTURES / "tiers" / name).read_text())
    assert not tiers.sniff("threads,tps,lat_avg_ms,p95_ms\n8,100,3,4\n")  # a sweep table's latencies
    assert not tiers.sniff((FIXTURES / "sweep" / "seed002-qps-p95.txt").read_text())
    # a long tiers CSV with a tps column (blank on most rows) is a tiers table, not a sweep table
    assert not sweep.sniff("threads,tier,rt_ms,tps\n") and tiers.sniff("threads,tier,rt_ms,tps\n")


TEXTS = [(FIXTURES / "tiers" / n).read_text() for n, _ in SEED003]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TEXTS), st.integers(0, 400), st.text(max_size=20))
@example("threads,pts_ms,mhpt_ms,drds_ms\n3000,290,225,6\n", 0, "0\t")  # a tab before the first comma
def test_mutated_tiers_files_parse_or_raise_parse_error(text: str, at: int, junk: str) -> None:
    mutated = text[:at] + junk + text[at:]
    try:
        df = tiers.parse(mutated)
    except ParseError as exc:
        assert exc.kind == "tiers" and exc.line_no >= 0
        return
    assert list(df.columns) == list(tiers.SCHEMA)


def test_the_example_config_is_seed_003() -> None:
    example = tiers.parse(ROOT / "configs" / "tiers.yaml")
    fixture = tiers.parse(FIXTURES / "tiers" / "seed003-yaml.txt")
    pd.testing.assert_frame_equal(example, fixture)

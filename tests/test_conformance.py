"""Every parser module keeps the design.md contract."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from perfkit import parsers
from perfkit.errors import ParseError

from .conftest import FIXTURES

KINDS = sorted(parsers.registry())


def test_there_are_parsers() -> None:
    assert {"iostat", "sysbench", "vmstat", "sweep"} <= set(KINDS)


def test_kinds_are_known_without_importing_them_and_get_imports_only_its_own() -> None:
    # a parse pays for its own module only: the 50 modules' code is 4.5 MB of a parse's peak RSS
    code = (
        "import json, sys; from perfkit import parsers; assert 'ss' in parsers.kinds(); parsers.get('ss'); "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('perfkit.parsers.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert [m for m in json.loads(out) if not m.startswith("perfkit.parsers._")] == ["perfkit.parsers.ss"]
    assert tuple(KINDS) == parsers.kinds()
    with pytest.raises(KeyError, match="unknown kind 'nope'; known: affinity, cgroup"):
        parsers.get("nope")


@pytest.mark.parametrize("kind", KINDS)
def test_parser_contract(kind: str) -> None:
    mod = parsers.get(kind)
    assert mod.__doc__ and len(mod.__doc__.strip()) > 40, "docstring with command lines and schema"
    assert isinstance(mod.SCHEMA, dict) and mod.SCHEMA
    params = inspect.signature(mod.parse).parameters
    assert "host" in params and params["host"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "tz" in params and params["tz"].kind is inspect.Parameter.KEYWORD_ONLY
    assert callable(mod.sniff)
    assert (FIXTURES / kind).is_dir(), f"tests/fixtures/{kind}/ holds its fixtures"


@pytest.mark.parametrize("kind", KINDS)
def test_empty_input_gives_empty_frame_with_schema(kind: str) -> None:
    df = parsers.get(kind).parse("")
    assert list(df.columns) == list(parsers.get(kind).SCHEMA)
    assert len(df) == 0
    assert {c: str(t) for c, t in df.dtypes.items()} == parsers.get(kind).SCHEMA


@pytest.mark.parametrize("kind", KINDS)
def test_binary_garbage_is_a_parse_error(kind: str) -> None:
    garbage = "\x00\x01\x02\ufffd\ufffd binary \x7f\n" * 20
    with pytest.raises(ParseError) as info:
        parsers.get(kind).parse(garbage)
    assert info.value.line_no >= 1


@pytest.mark.parametrize("kind", KINDS)
def test_sniff_rejects_unrelated_text(kind: str) -> None:
    assert not parsers.get(kind).sniff("hello world\nthis is a readme\n")

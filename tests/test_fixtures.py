"""Every parser fixture parses to the records beside it (tests/fixtures/<kind>/<variant>.txt).

The expected files are written by scripts/regen_expected.py and reviewed by hand; this test
only says the parser still gives the same answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perfkit import parsers
from perfkit.errors import ParseError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from regen_expected import expected_for, expected_path, fixture_files  # noqa: E402

FILES = fixture_files()


@pytest.mark.parametrize("fixture", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fixture_matches_expected(fixture: Path) -> None:
    exp = expected_path(fixture)
    assert exp.exists(), f"no expected file: run scripts/regen_expected.py {fixture.relative_to(ROOT)}"
    assert expected_for(fixture) == json.loads(exp.read_text())


@pytest.mark.parametrize("fixture", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_what_a_parser_gives_beside_the_rows_is_declared(fixture: Path) -> None:
    kind = fixture.parent.name
    try:
        df = parsers.get(kind).parse(fixture)
    except ParseError:
        return  # a fixture of a refused file: nothing beside the rows
    given = dict(df.attrs)
    extras = parsers.extras(kind, df)  # TypeError: a key its EXTRAS does not declare
    assert df.attrs == {} and {k: getattr(extras, k) for k in given} == given


def test_no_two_parsers_claim_one_file() -> None:
    # sniff answers yes or no, so a tie would be settled by the kinds' names (`sniff_kind`): no file of
    # the fixtures, the corpus or the example archives may be claimed twice
    from perfkit.parsers._common import head

    files = [
        p
        for p in (ROOT / "tests" / "fixtures").rglob("*")
        if p.is_file() and p.suffix not in (".json", ".md")
    ]
    ties = {}
    for path in files:
        if b"\x00" in path.read_bytes()[:4096]:
            continue  # binary: sniff_bytes
        text = head(path)
        claims = [kind for kind, mod in parsers.registry().items() if mod.sniff(text)]
        if len(claims) > 1:
            ties[str(path.relative_to(ROOT))] = claims
    assert len(files) > 600 and ties == {}


def test_every_fixture_dir_has_a_readme() -> None:
    for kind_dir in {p.parent for p in FILES}:
        assert (kind_dir / "README.md").exists(), f"{kind_dir.name}: README.md says which commands made them"

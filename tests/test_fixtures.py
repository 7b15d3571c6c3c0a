"""Every parser fixture parses to the records beside it (tests/fixtures/<kind>/<variant>.txt).

The expected files are written by scripts/regen_expected.py and reviewed by hand; this test
only says the parser still gives the same answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from regen_expected import expected_for, expected_path, fixture_files  # noqa: E402

FILES = fixture_files()


@pytest.mark.parametrize("fixture", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fixture_matches_expected(fixture: Path) -> None:
    exp = expected_path(fixture)
    assert exp.exists(), f"no expected file: run scripts/regen_expected.py {fixture.relative_to(ROOT)}"
    assert expected_for(fixture) == json.loads(exp.read_text())


def test_every_fixture_dir_has_a_readme() -> None:
    for kind_dir in {p.parent for p in FILES}:
        assert (kind_dir / "README.md").exists(), f"{kind_dir.name}: README.md says which commands made them"

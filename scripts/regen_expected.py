#!/usr/bin/env python3
"""Write `<variant>.expected.json` beside parser fixtures: the parsed records, or the error raised.

Run it after adding or changing a fixture, then review the diff (git diff tests/fixtures): the
expected files are the parser's answers, and a reviewer checks them against the raw capture.

    python scripts/regen_expected.py tests/fixtures/iostat/sysstat-12.6-x-d-t-iso.txt ...
    python scripts/regen_expected.py --missing      # every fixture without an expected file
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
ATTR_KEYS = ("dropped_lines", "unknown_columns", "runs", "header_generation", "notes")


def expected_for(path: Path) -> dict:
    """What the parser named by the fixture's directory makes of the fixture."""
    from perfkit import parsers
    from perfkit.errors import ParseError

    kind = path.parent.name
    try:
        df = parsers.get(kind).parse(path)
    except ParseError as exc:
        return {"error": "ParseError", "line_no": exc.line_no, "reason": exc.reason}
    attrs = {k: df.attrs[k] for k in ATTR_KEYS if k in df.attrs}
    records = json.loads(df.to_json(orient="records", date_format="iso", date_unit="ms"))
    return {"rows": len(df), "attrs": json.loads(json.dumps(attrs, default=str)), "records": records}


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*.txt") if not p.name.startswith("README"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--missing", action="store_true", help="every fixture without an expected file")
    args = ap.parse_args()
    paths = args.paths or [p for p in fixture_files() if args.missing and not expected_path(p).exists()]
    for path in paths:
        out = expected_path(path)
        out.write_text(json.dumps(expected_for(path), indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {out}")
    return 0


def expected_path(fixture: Path) -> Path:
    return fixture.with_name(fixture.name[: -len(".txt")] + ".expected.json")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())

"""The public corpus (tests/fixtures/corpus, origins in ORIGINS.md): real captures from jc's fixtures,
sysstat's test suite and Percona Toolkit's samples, each with oracle values beside it.

Every value perfkit reads must agree with the oracle (a disagreement is a wrong number). The files
perfkit still refuses, reads partially or does not sniff are listed below with the reason: a file read
today and refused tomorrow fails; one listed here and read now passes (then drop it from the list:
`python scripts/corpus_report.py` shows the state).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from corpus_report import CORPUS, check_values, corpus_files, evaluate, markdown  # noqa: E402

FILES = corpus_files()

# Refused whole today, with why (the ParseError's reason, short).
EXPECTED_REFUSED: dict[str, str] = {}

# Read with lines skipped (Skips).
EXPECTED_PARTIAL = {
    "mpstat/jc-centos77-mpstat-A.out": "mpstat -A: the intr/s and soft-IRQ tables",
    "mpstat/jc-ubuntu1804-mpstat-A.out": "mpstat -A: the NODE and interrupt tables",
    "mpstat/sysstat-mpstat-A": "mpstat -A: the NODE and interrupt tables",
    "mysql_variables/pt-mysql-summary-temp002-mysql-variables": "pt-mysql-summary's own lines (no tab)",
    "pidstat/sysstat-pidstat-At": "iodelay wrapped past 2**64 read as missing, the line counted",
    "sadf/sysstat-sadf-d": "sadf -d -- -A: tables other than cpu, queue, memory, disk, net",
    "sadf/sysstat-sadf-d-T-tz": "the pcsw table of -uw",
    "sadf/sysstat-sadf-d-t-tz": "the pcsw table of -uw",
    "sadf/sysstat-sadf-d-tz": "the pcsw table of -uw",
    "sar/sysstat-sar-A": "sar -A: tables other than cpu, queue, memory, disk, net",
    "sar/sysstat-sar-iface": "the EDEV table",
}

# Not recognised as their kind by sniff() (so `perfkit analyze` passes them over).
EXPECTED_UNSNIFFED: dict[str, str] = {}

IDS = [p.relative_to(CORPUS).as_posix() for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_corpus_file_read_and_values_agree(path: Path) -> None:
    out = evaluate(path)
    assert out.status != "crashed", f"{out.name}: a traceback, not a ParseError: {out.reason}"
    if out.status == "refused":
        assert out.name in EXPECTED_REFUSED, f"{out.name}: refused ({out.reason}), not in EXPECTED_REFUSED"
        return
    assert not out.disagree, f"{out.name}: wrong values: " + "; ".join(out.disagree)
    if out.status == "partial":
        assert out.name in EXPECTED_PARTIAL or out.name in EXPECTED_REFUSED, (
            f"{out.name}: now partial: {out.reason}"
        )
    else:  # read whole: every value the oracle names must be there
        assert not out.unread, f"{out.name}: values not read: " + "; ".join(out.unread)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_corpus_file_sniffed_as_its_kind(path: Path) -> None:
    out = evaluate(path)
    if out.name not in EXPECTED_UNSNIFFED:
        assert out.sniffed == out.kind, f"{out.name}: sniffed as {out.sniffed}, is {out.kind}"


def test_lists_name_corpus_files_with_origins() -> None:
    names = set(IDS)
    assert len(names) >= 60
    for listed in (EXPECTED_REFUSED, EXPECTED_PARTIAL, EXPECTED_UNSNIFFED):
        assert set(listed) <= names, set(listed) - names
    origins = (CORPUS / "ORIGINS.md").read_text(encoding="utf-8")
    assert not [n for n in names if f"| {n} |" not in origins], "every corpus file has its row in ORIGINS.md"


def test_checks_compare_instants_and_wall_clocks() -> None:
    """An offset in an oracle's timestamp means an instant; none, the printed wall clock."""
    frame = pd.DataFrame(
        {"timestamp": pd.to_datetime(["2021-09-17 03:31:30"]).tz_localize("UTC"), "x": [1.0], "n": [pd.NA]}
    )
    checks = [
        {"column": "timestamp", "value": "2021-09-16T20:31:30-07:00"},
        {"column": "timestamp", "value": "2021-09-17 03:31:30"},
        {"where": {"clock": "03:31:30"}, "column": "x", "value": 1.0},
        {"column": "n", "value": None},
        {"column": "x", "value": 1.1},
        {"column": "y", "value": 1},
    ]
    agree, disagree, unread = check_values(frame, checks)
    assert (agree, len(disagree), len(unread)) == (4, 1, 1)
    assert "read 1.0, the file says 1.1" in disagree[0]


def test_report_table_counts_every_file() -> None:
    outcomes = [evaluate(p) for p in FILES[:3]]
    text = markdown(outcomes)
    assert text.startswith("## corpus:")
    assert f"| **{len(outcomes)}** |" in text

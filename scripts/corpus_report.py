#!/usr/bin/env python3
"""How perfkit reads the public corpus (tests/fixtures/corpus): per kind, files read fully, partially
(lines skipped) or refused, sniffed as the right kind or not, and oracle values agreeing or not.

Each corpus file `<kind>/<name>` has `<name>.oracle.json` beside it (ORIGINS.md says where the file
comes from and where its oracle values were read):

    {"kind": "vmstat", "rows": 1,          # rows perfkit should read (null: not pinned)
     "source": "jc's JSON" | "by eye",
     "tz": "America/Los_Angeles",          # the --tz a user gives (the capture's zone); default UTC
     "checks": [{"where": {"device": "sda"}, "nth": 0, "column": "r_s", "value": 0.06, "tol": 0.01}]}

`where` selects rows (all rows when absent), `nth` picks one of them (default 0, -1 the last), and
`column` must hold `value` (null: missing; numbers within `tol`, default 1e-6 relative). A datetime
column compares with a value that has a UTC offset as an instant, without one as the printed wall
clock; the pseudo-column `clock` is a timestamp's `HH:MM:SS`.

    python scripts/corpus_report.py                          # the Markdown tables on stdout
    python scripts/corpus_report.py --out docs/benchmarks.md # replace this script's section there
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
ORACLE_SUFFIX = ".oracle.json"
SECTION = "## corpus: public captures read, partial, refused"


@dataclass
class Outcome:
    """What perfkit made of one corpus file."""

    path: Path
    kind: str
    sniffed: str | None
    status: str  # "read" | "partial" | "refused" | "crashed"
    reason: str = ""
    rows: int | None = None
    rows_expected: int | None = None
    agree: int = 0
    disagree: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.relative_to(CORPUS).as_posix()


def corpus_files() -> list[Path]:
    """Every corpus file that has an oracle beside it."""
    return sorted(p.with_name(p.name.removesuffix(ORACLE_SUFFIX)) for p in CORPUS.glob(f"*/*{ORACLE_SUFFIX}"))


def oracle_of(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name + ORACLE_SUFFIX).read_text(encoding="utf-8"))


def _column(frame: pd.DataFrame, name: str) -> pd.Series | None:
    if name == "clock" and "timestamp" in frame:
        return frame["timestamp"].dt.strftime("%H:%M:%S")
    return frame.get(name)


def _matches(series: pd.Series, want: Any) -> pd.Series:
    """Which values of `series` equal `want` (see the module's docstring for datetimes)."""
    if pd.api.types.is_datetime64_any_dtype(series):
        stamp = pd.Timestamp(want)
        if stamp.tzinfo is not None and series.dt.tz is not None:
            return series == stamp
        return series.dt.strftime("%Y-%m-%d %H:%M:%S") == stamp.strftime("%Y-%m-%d %H:%M:%S")
    if want is None:
        return series.isna()
    if isinstance(want, bool) or not isinstance(want, (int, float)):
        return series.astype(str) == str(want)
    return pd.to_numeric(series, errors="coerce").sub(want).abs() <= 1e-9 * max(1.0, abs(want))


def _agrees(got: Any, want: Any, tol: float | None) -> bool:
    if want is None:
        return bool(pd.isna(got))
    if isinstance(got, pd.Timestamp):
        return bool(_matches(pd.Series([got]), want).iloc[0])
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        try:
            got = float(got)
        except (TypeError, ValueError):
            return False
        limit = tol if tol is not None else 1e-6 * max(1.0, abs(want))
        return not math.isnan(got) and abs(got - want) <= limit
    return str(got) == str(want)


def check_values(frame: pd.DataFrame, checks: list[dict[str, Any]]) -> tuple[int, list[str], list[str]]:
    """(agreeing, disagreeing descriptions, unread descriptions) of an oracle's checks on a frame."""
    agree, disagree, unread = 0, [], []
    for check in checks:
        where = check.get("where", {})
        label = f"{check['column']} where {where}" + (f"[{check['nth']}]" if check.get("nth") else "")
        mask = pd.Series(True, index=frame.index)
        missing = [c for c in [*where, check["column"]] if _column(frame, c) is None]
        if missing:
            unread.append(f"{label}: no column {', '.join(missing)}")
            continue
        for col, want in where.items():
            mask &= _matches(_column(frame, col), want).to_numpy()
        picked = _column(frame, check["column"])[mask.to_numpy()]
        nth = check.get("nth", 0)
        if not -len(picked) <= nth < len(picked):
            unread.append(f"{label}: no such row")
            continue
        got = picked.iloc[nth]
        if _agrees(got, check["value"], check.get("tol")):
            agree += 1
        else:
            shown = got.item() if isinstance(got, np.generic) else got  # 1.0, not np.float64(1.0)
            disagree.append(f"{label}: read {shown!r}, the file says {check['value']!r}")
    return agree, disagree, unread


def evaluate(path: Path) -> Outcome:
    """Sniff `path`, parse it as its oracle's kind and check the oracle's values."""
    from perfkit import parsers
    from perfkit.errors import ParseError
    from perfkit.parsers._common import head, skips_of

    oracle = oracle_of(path)
    kind = oracle["kind"]
    out = Outcome(path, kind, parsers.sniff_kind(head(path)), "read", rows_expected=oracle.get("rows"))
    if kind not in parsers.registry():
        out.status, out.reason = "refused", f"no parser for kind {kind!r}"
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = parsers.get(kind).parse(path, host="corpus", tz=oracle.get("tz", "UTC"))
    except ParseError as exc:
        out.status, out.reason = "refused", f"line {exc.line_no}: {exc.reason}"
        return out
    except Exception as exc:  # a traceback for a user: the worst outcome, reported as such
        out.status, out.reason = "crashed", f"{type(exc).__name__}: {exc}"
        return out
    out.rows = len(frame)
    skips = skips_of(frame)
    if skips.count:
        out.status, out.reason = "partial", skips.summary()
    out.agree, out.disagree, out.unread = check_values(frame, oracle.get("checks", []))
    if out.rows_expected is not None and out.rows != out.rows_expected:
        out.disagree.append(f"rows: read {out.rows}, the file holds {out.rows_expected}")
    return out


def evaluate_all() -> list[Outcome]:
    return [evaluate(p) for p in corpus_files()]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(outcomes: list[Outcome]) -> str:
    """The section for docs/benchmarks.md: a table per kind, then every file not read cleanly."""
    kinds = sorted({o.kind for o in outcomes})
    lines = [
        SECTION,
        "",
        f"`python scripts/corpus_report.py`: {len(outcomes)} real captures from public test suites "
        "(jc's fixtures, sysstat's tests, Percona Toolkit's samples; tests/fixtures/corpus/ORIGINS.md), "
        "each parsed as the kind its oracle names; values are the oracle's (jc's own parse, or read by eye).",
        "",
        "| kind | files | read | partial | refused | sniffed right | values agree | disagree | not read |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = dict.fromkeys(
        ("files", "read", "partial", "refused", "sniffed", "agree", "disagree", "unread"), 0
    )
    for kind in kinds:
        mine = [o for o in outcomes if o.kind == kind]
        row = {
            "files": len(mine),
            "read": sum(o.status == "read" for o in mine),
            "partial": sum(o.status == "partial" for o in mine),
            "refused": sum(o.status in ("refused", "crashed") for o in mine),
            "sniffed": sum(o.sniffed == o.kind for o in mine),
            "agree": sum(o.agree for o in mine),
            "disagree": sum(len(o.disagree) for o in mine),
            "unread": sum(len(o.unread) for o in mine),
        }
        for k, v in row.items():
            total[k] += v
        lines.append(f"| {kind} | " + " | ".join(str(v) for v in row.values()) + " |")
    lines.append("| **all** | " + " | ".join(f"**{v}**" for v in total.values()) + " |")
    odd = [o for o in outcomes if o.status != "read" or o.disagree or o.sniffed != o.kind]
    if odd:
        lines += ["", "| file | status | sniffed as | why / what disagrees |", "|---|---|---|---|"]
        for o in odd:
            why = "; ".join([o.reason] * bool(o.reason) + o.disagree)
            lines.append(f"| {o.name} | {o.status} | {o.sniffed or '—'} | {_cell(why[:300])} |")
    return "\n".join(lines) + "\n"


def replace_section(doc: Path, section: str) -> None:
    """Put `section` in `doc` in place of the previous one (up to the next `## `), or append it."""
    text = doc.read_text(encoding="utf-8")
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(SECTION))
        rest = text[end + 1 :] if end >= 0 else ""
        text = text[:start] + section + ("\n" + rest if rest else "")
    doc.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="Markdown file whose corpus section to replace")
    args = ap.parse_args(argv)
    text = markdown(evaluate_all())
    if args.out:
        replace_section(args.out, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

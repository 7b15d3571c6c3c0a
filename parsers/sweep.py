"""sweep: a plain sweep table, one row per load level, as people keep them in a spreadsheet.

Reads CSV (`,`), TSV, `;`-separated or whitespace-separated text with a header row naming:
concurrency as `threads`, `concurrency`, `thds`, `clients` or `users`; throughput as `tps`,
`throughput`, `ops`, `ops_s` and/or `qps`; latency optionally as `lat_ms`/`lat_avg_ms`/`avg_ms`
(average) and `lat_p95_ms`/`p95_ms`/`lat_p99_ms`/`p99_ms`. Header names are matched
case-insensitively; two columns meaning the same thing are refused (which one is the TPS?).

Columns: host, threads (configured concurrency), tps and qps (per second; NaN when the table has
no such column), lat_avg_ms, lat_p95_ms, lat_p99_ms (milliseconds).

A table is read exactly or refused with a ParseError naming the file, the line and the value; a wrong
number would pass for a measurement, so nothing is guessed:

- The separator is the header's: `,`, `;` or a tab (only one of them), else runs of blanks. Cells may be
  quoted (`"1,234"`). A row with more non-empty cells than the header is refused (`8 1 234` in a
  blank-separated table is not threads 1, TPS 234); fewer cells, or empty trailing ones, are blanks.
- Numbers: digits with an optional sign, decimal mark and exponent; thousands separators `,` `.` (in
  groups of three: `1.234.567`, `1,234.5`) and blanks or `'` (`1 234`, `1'234`). The decimal mark is
  the table's, from its cells: a mark that cannot be a thousands separator (`64,9`, `0.512`, `1.5e3`,
  the last of `1.234,5`) fixes it. A `,`-separated table has a decimal point (its unquoted cells cannot
  hold a decimal comma; a quoted `"64,9"` is refused). A number that reads two ways (`1.234`, `1,234`:
  one mark and three digits) in a table that fixes no mark is refused, as are cells fixing both marks.
  `inf` and other non-numbers are refused in every column; an empty cell, `-`, `NA`, `n/a` and `nan`
  mean "not measured" and are allowed for latency only (and for `qps` beside a `tps` column).
- threads: a whole number from 1 to 2**63-1 (`8.0` is 8; 0, negative or fractional is refused).
- tps (or qps, when it is the table's only throughput): finite, >= 0, in every row. 0 is a real step
  where nothing got through and is kept; a blank is refused (a hole in the curve would move the knee).
- latencies: finite and >= 0. A latency printed as 0 is below the table's print resolution (a
  sub-millisecond average rounded to `0` or `0.00`), not zero: as 0 it would put no requests in the
  system through Little's law, so it is kept as NaN and `attrs["notes"]` says which line and column.
- Repeated thread counts are kept, one row each (repeat runs are legitimate). The sweep model keeps a
  step per row: the knee and the elasticities use the mean throughput of each thread count, the peak is
  the best single row, and the USL fit sees every row.

Blank lines, `#` comments and rows whose cells are all empty (a spreadsheet's `;;;`) are skipped; a
last line without a newline was cut mid-write and is dropped (`attrs["dropped_lines"]`).
`attrs`: `dropped_lines`, `unknown_columns` (header names not read), `notes`.
Tested on: tests/fixtures/sweep/ (see README.md there) and tests/test_sweep_table.py.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from decimal import Decimal

import pandas as pd

from ._common import Lines, Source, empty_frame, records_frame

KIND = "sweep"
SCHEMA: dict[str, str] = {
    "host": "string",
    "threads": "Int64",
    "tps": "float64",
    "qps": "float64",
    "lat_avg_ms": "float64",
    "lat_p95_ms": "float64",
    "lat_p99_ms": "float64",
}
ALIASES = {
    **dict.fromkeys(("threads", "concurrency", "thds", "clients", "users"), "threads"),
    **dict.fromkeys(("tps", "throughput", "ops", "ops_s"), "tps"),
    "qps": "qps",
    **dict.fromkeys(("lat_ms", "lat_avg_ms", "avg_ms", "latency_ms"), "lat_avg_ms"),
    **dict.fromkeys(("lat_p95_ms", "p95_ms"), "lat_p95_ms"),
    **dict.fromkeys(("lat_p99_ms", "p99_ms"), "lat_p99_ms"),
}
_LATENCIES = ("lat_avg_ms", "lat_p95_ms", "lat_p99_ms")
_SPLIT = re.compile(r"[,;\t ]+")
_MISSING = frozenset({"", "-", "na", "n/a", "nan"})
_MAX_THREADS = 2**63 - 1  # the Int64 column's range

# A number as written: sign, body (digits, marks, group blanks), exponent. The body's shape is judged
# by _cell; these only split it.
_NUMBER = re.compile(r"([+-]?)([0-9.,' \u00a0\u202f]*[0-9][0-9.,' \u00a0\u202f]*)([eE][+-]?[0-9]+)?")
_GROUP_BLANKS = " '\u00a0\u202f"  # blank, apostrophe (de_CH), no-break space, narrow no-break (fr_FR)
_OTHER = {".": ",", ",": "."}


def _header_names(line: str) -> list[str]:
    return [t.strip().strip('"').lower() for t in _SPLIT.split(line.strip()) if t.strip()]


def sniff(text: str) -> bool:
    """The first non-empty line is a header naming a concurrency and a throughput column, and the
    table is not a tiers table (per-tier RTs, which may have a `tps` column too but leave it blank on
    most rows: read as a sweep it would be refused)."""
    from . import tiers  # tiers imports this module's ALIASES

    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    mapped = {ALIASES.get(n) for n in _header_names(first)}
    return "threads" in mapped and bool(mapped & {"tps", "qps"}) and not tiers.sniff(text)


@dataclass(frozen=True)
class _Cell:
    """One numeric cell as written. `proves` is the decimal mark its shape proves (`64,9`, `1.234,5` and
    `1.234.567` prove `,`), if any; `mark` the one `.`/`,` it holds when that mark could be either a
    decimal or a thousands separator (`1.234`)."""

    sign: str
    whole: str  # digits before the decimal mark, thousands separators removed
    frac: str | None  # digits after the decimal mark; None when the cell has none
    exp: str
    proves: str | None = None
    mark: str | None = None

    def text(self, decimal: str | None) -> str:
        """The number in Python's syntax under the table's decimal mark (None: the table fixed none)."""
        whole, frac = self.whole, self.frac
        if self.mark is not None and decimal != self.mark:  # a thousands separator: 1.234 -> 1234
            whole, frac = whole + (frac or ""), None
        return f"{self.sign}{whole}{'.' + frac if frac else ''}{self.exp}"


def _grouped(sep: str) -> str:
    """The pattern of a whole number in groups of three digits split by `sep` (`1.234.567`)."""
    return rf"[1-9][0-9]{{0,2}}(?:{re.escape(sep)}[0-9]{{3}})+"


def _cell(text: str) -> _Cell | None:
    """The shape of a number, or None when `text` is not one (units, words, bad grouping)."""
    m = _NUMBER.fullmatch(text)
    if m is None:
        return None
    sign, body, exp = m[1], m[2], m[3] or ""
    blanks = {c for c in body if c in _GROUP_BLANKS}
    marks = [c for c in body if c in ".,"]
    if blanks:  # 1 234 / 1'234,5: blanks group, the mark (if any) is the decimal one
        if len(blanks) > 1 or exp or len(marks) > 1:
            return None
        blank = blanks.pop()
        grouped = re.fullmatch(rf"({_grouped(blank)})(?:([.,])([0-9]+))?", body)
        if grouped is None:
            return None
        return _Cell(sign, grouped[1].replace(blank, ""), grouped[3], exp, proves=grouped[2])
    if not marks:
        return _Cell(sign, body, None, exp)
    if len(set(marks)) == 2:  # 1.234,5 / 1,234.5: the last mark is the decimal, the other groups
        dec = marks[-1]
        grouped = re.fullmatch(rf"({_grouped(_OTHER[dec])}){re.escape(dec)}([0-9]+)", body)
        if grouped is None or exp:
            return None
        return _Cell(sign, grouped[1].replace(_OTHER[dec], ""), grouped[2], exp, proves=dec)
    mark = marks[0]
    if len(marks) > 1:  # 1.234.567: only a thousands separator repeats
        if exp or not re.fullmatch(_grouped(mark), body):
            return None
        return _Cell(sign, body.replace(mark, ""), None, exp, proves=_OTHER[mark])
    whole, _, frac = body.partition(mark)
    if not whole and not frac:
        return None
    if not exp and 1 <= len(whole) <= 3 and whole[0] != "0" and len(frac) == 3:
        return _Cell(sign, whole, frac, exp, mark=mark)  # 1.234: a decimal or a thousands separator
    return _Cell(sign, whole or "0", frac or None, exp, proves=mark)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a sweep table. `tz` is unused (the table has no time) and kept for the common contract.

    Raises:
        ParseError: no concurrency/throughput header, a row that does not fit it, or a value that is
            not a number, reads two ways, or is out of its column's range (see the module docstring);
            names the file, the line and the value.
    """
    lines = Lines(source, KIND)
    rows: list[tuple[int, str]] = []  # the header, then the rows
    line_no = 0
    try:
        for line_no, line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                rows.append((line_no, line))
    except (UnicodeDecodeError, OSError) as exc:
        raise lines.error(line_no + 1, "", f"cannot read: {exc}") from None
    if not rows:
        return _empty(0)
    (h_no, h_line), rows = rows[0], rows[1:]
    found = [s for s in (",", ";", "\t") if s in h_line]
    if len(found) > 1:
        shown = " and ".join(repr(s) for s in found)
        raise lines.error(h_no, h_line, f"the header mixes separators {shown}: which one splits the rows?")
    sep = found[0] if found else None

    def cells(no: int, line: str) -> list[str]:
        if sep is None:
            return [t.strip('"') for t in line.split()]
        try:
            return [
                c.strip() for c in next(csv.reader([line], delimiter=sep, skipinitialspace=True, strict=True))
            ]
        except csv.Error as exc:
            raise lines.error(no, line, f"unreadable row: {exc}") from None

    names = [n.lower() for n in cells(h_no, h_line)]
    mapped = [ALIASES.get(n) for n in names]
    if "threads" not in mapped or not {"tps", "qps"} & set(mapped):
        need = "a threads/concurrency column and a tps/throughput/qps column"
        raise lines.error(h_no, h_line, f"not a sweep table: the header needs {need}")
    where: dict[str, int] = {}  # column -> its index in the header
    for i, target in enumerate(mapped):
        if target in where:
            both = f"columns {names[where[target]]!r} and {names[i]!r} both mean {target}"
            raise lines.error(h_no, h_line, f"{both}: keep one")
        if target is not None:
            where[target] = i
    throughput = "tps" if "tps" in where else "qps"
    dropped = 0
    if rows and not lines.last_complete and rows[-1][0] == line_no:  # the file's last line, cut mid-write
        rows.pop()
        dropped = 1

    # first pass: every cell's shape, and the decimal mark the table's cells prove
    table: list[tuple[int, str, dict[str, tuple[str, _Cell | None]]]] = []
    proof: dict[str, tuple[int, str, str]] = {}  # decimal mark -> (line no, line, cell) that proves it
    for no, line in rows:
        values = cells(no, line)
        if not any(values):
            continue  # a spreadsheet's empty row
        extra = [v for v in values[len(names) :] if v]
        if extra:
            header = f"the header names {len(names)} columns"
            why = "a thousands separator that is also the column separator?"
            raise lines.error(no, line, f"{len(names) + len(extra)} values but {header} ({why})")
        got: dict[str, tuple[str, _Cell | None]] = {}
        for target, i in where.items():
            text = values[i] if i < len(values) else ""
            if text.lower() in _MISSING:
                got[target] = (text, None)
                continue
            cell = _cell(text)
            if cell is None:
                what = "not finite" if text.lower().lstrip("+-") in ("inf", "infinity") else "not a number"
                raise lines.error(no, line, f"{names[i]} {text!r} is {what}")
            got[target] = (text, cell)
            if cell.proves is not None:
                proof.setdefault(cell.proves, (no, line, text))
        table.append((no, line, got))
    if sep == ",":
        if "," in proof:
            no, line, text = proof[","]
            raise lines.error(no, line, f"{text!r} has a decimal comma in a ','-separated table (use ';')")
        decimal: str | None = "."
    elif len(proof) == 2:
        (no, line, text), (first_no, _, first) = max(proof.values()), min(proof.values())
        raise lines.error(no, line, f"{text!r} and {first!r} (line {first_no}) use different decimal marks")
    else:
        decimal = next(iter(proof), None)

    # second pass: the values, each checked against its column's range
    out: list[dict[str, float | int]] = []
    notes: list[str] = []
    for no, line, got in table:
        row: dict[str, float | int] = {}
        for target, (text, cell) in got.items():
            name = names[where[target]]
            if cell is None:
                if target == "threads" or target == throughput:
                    raise lines.error(no, line, f"{name} has no value ({text!r}): every row needs one")
                row[target] = math.nan
                continue
            if cell.mark is not None and decimal is None:
                two_ways = f"{cell.mark!r} as thousands separator or decimal mark"
                unknown = "no other value shows the table's decimal mark: write it without the separator"
                raise lines.error(no, line, f"{name} {text!r} reads two ways ({two_ways}) and {unknown}")
            number = cell.text(decimal)
            if target == "threads":
                row[target] = _threads(lines, no, line, name, text, number)
                continue
            value = float(number)
            if not math.isfinite(value):
                raise lines.error(no, line, f"{name} {text!r} is not finite")
            if value < 0:
                raise lines.error(no, line, f"{name} {text!r} is negative")
            if value == 0 and target in _LATENCIES:
                below = "below the table's print resolution, not zero: kept as missing"
                notes.append(f"line {no}: {name} {text!r} is {below}")
                value = math.nan
            row[target] = value + 0.0  # -0 -> 0
        out.append(row)
    if not out:
        return _empty(dropped)
    df = records_frame(out, SCHEMA, host=host)
    df.attrs.update(
        dropped_lines=dropped,
        unknown_columns=[n for n, t in zip(names, mapped, strict=True) if t is None],
        notes=notes,
    )
    return df


def _threads(lines: Lines, no: int, line: str, name: str, text: str, number: str) -> int:
    """A thread count: a whole number from 1 to 2**63-1, read exactly (no float rounding)."""
    d = Decimal(number)
    if not d.is_finite() or d.adjusted() > 18 or d != d.to_integral_value():
        raise lines.error(no, line, f"{name} {text!r} is not a whole number below 2**63")
    n = int(d)
    if not 1 <= n <= _MAX_THREADS:
        raise lines.error(no, line, f"{name} {text!r} is not a thread count (a whole number from 1 up)")
    return n


def _empty(dropped: int) -> pd.DataFrame:
    df = empty_frame(SCHEMA)
    df.attrs.update(dropped_lines=dropped, unknown_columns=[], notes=[])
    return df

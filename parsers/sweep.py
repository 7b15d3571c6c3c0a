"""sweep: a plain sweep table, one row per load level, as people keep them in a spreadsheet.

Reads CSV (`,`), TSV, `;`-separated or whitespace-separated text with a header row naming:
concurrency as `threads`, `concurrency`, `thds`, `clients` or `users`; throughput as `tps`,
`throughput`, `ops`, `ops_s` and/or `qps`; latency optionally as `lat_ms`/`lat_avg_ms`/`avg_ms`
(average) and `lat_p95_ms`/`p95_ms`/`lat_p99_ms`/`p99_ms`. With `;` separators a decimal comma is
read as such. Header names are matched case-insensitively.

Columns: host, threads (configured concurrency), tps and qps (per second; NaN when the table has
no such column), lat_avg_ms, lat_p95_ms, lat_p99_ms (milliseconds).
Tested on: tests/fixtures/sweep/ (see README.md there).
"""

from __future__ import annotations

import io
import re

import pandas as pd

from ._common import Lines, Source, coerce, empty_frame

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
    "threads": "threads",
    "concurrency": "threads",
    "thds": "threads",
    "clients": "threads",
    "users": "threads",
    "tps": "tps",
    "throughput": "tps",
    "ops": "tps",
    "ops_s": "tps",
    "qps": "qps",
    "lat_ms": "lat_avg_ms",
    "lat_avg_ms": "lat_avg_ms",
    "avg_ms": "lat_avg_ms",
    "latency_ms": "lat_avg_ms",
    "lat_p95_ms": "lat_p95_ms",
    "p95_ms": "lat_p95_ms",
    "lat_p99_ms": "lat_p99_ms",
    "p99_ms": "lat_p99_ms",
}
_SPLIT = re.compile(r"[,;\t ]+")


def _header_names(line: str) -> list[str]:
    return [t.strip().strip('"').lower() for t in _SPLIT.split(line.strip()) if t.strip()]


def sniff(text: str) -> bool:
    """The first non-empty line is a header naming a concurrency and a throughput column."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    mapped = {ALIASES.get(n) for n in _header_names(first)}
    return "threads" in mapped and bool(mapped & {"tps", "qps"})


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a sweep table. `tz` is unused (the table has no time) and kept for the common contract.

    Raises:
        ParseError: no concurrency/throughput header, or a value that is not a number.
    """
    lines = Lines(source, KIND)
    body: list[str] = []
    line_nos: list[int] = []
    header: tuple[int, str] | None = None
    for line_no, line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if header is None:
            header = (line_no, line)
            continue
        body.append(line)
        line_nos.append(line_no)
    if header is None:
        return _empty(0)
    names = _header_names(header[1])
    mapped = [ALIASES.get(n) for n in names]
    if "threads" not in mapped or not {"tps", "qps"} & set(mapped):
        raise lines.error(
            header[0],
            header[1],
            "not a sweep table: the header needs a threads/concurrency "
            "column and a tps/throughput/qps column",
        )
    dropped = 0
    if body and not lines.last_complete:
        body.pop()
        line_nos.pop()
        dropped = 1
    if not body:
        return _empty(dropped)
    sep = next((s for s in (",", "\t", ";") if s in header[1]), r"\s+")
    decimal = "," if sep == ";" else "."
    try:
        raw = pd.read_csv(
            io.StringIO("\n".join(body)),
            sep=sep,
            header=None,
            names=names,
            dtype=str,
            skipinitialspace=True,
            decimal=decimal,
        )
    except (ValueError, pd.errors.ParserError) as exc:
        raise lines.error(header[0], header[1], f"unreadable table: {exc}") from None
    data = {}
    for name, target in zip(names, mapped, strict=True):
        if target is None or target in data:
            continue
        col = (
            raw[name].str.strip().str.replace(",", ".", regex=False)
            if decimal == ","
            else raw[name].str.strip()
        )
        values = pd.to_numeric(col, errors="coerce")
        bad = values.isna() & col.notna() & ~col.isin(["", "-", "NaN", "nan", "NA"])
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise lines.error(line_nos[i], body[i], f"{name} is not a number: {col.iloc[i]!r}")
        data[target] = values
    frame = pd.DataFrame(data)
    threads = frame["threads"]
    # past int64 the Int64 column cannot hold it (pandas reads such a column as uint64 or float64)
    huge = threads.abs() >= 2.0**63 if threads.dtype.kind == "f" else threads.abs() > 2**63 - 1
    bad = threads.isna() | (threads % 1 != 0) | huge
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise lines.error(line_nos[i], body[i], "threads must be a whole number (below 2**63)")
    frame["host"] = pd.array([host] * len(frame), dtype="string")
    df = coerce(frame, SCHEMA)
    df.attrs.update(
        dropped_lines=dropped, unknown_columns=[n for n, t in zip(names, mapped, strict=True) if t is None]
    )
    return df


def _empty(dropped: int) -> pd.DataFrame:
    df = empty_frame(SCHEMA)
    df.attrs.update(dropped_lines=dropped, unknown_columns=[])
    return df

"""gotpc: the text `go-tpc tpcc ... run` prints, one row per transaction line.

Reads the stdout and stderr (merged, or either one alone) of

    go-tpc tpcc -H HOST -P PORT -U USER -p PASS -D DB --warehouses W run --time D --threads N
           [--interval 1s] [--ignore-error] [--output plain|json]

from go-tpc v1.0.12 (checked) and the older v1.0.0 layout (seed 002). Line forms (v1.0.12):

    2026/11/22 07:58:12 maxprocs: Leaving GOMAXPROCS=2: CPU quota undefined       (stderr, first)
    [Current] NEW_ORDER - Takes(s): 1.0, Count: 249, TPM: 15145.5, Sum(ms): 1014.1, Avg(ms): 4.1,
              50th(ms): 3.7, 90th(ms): 6.8, 95th(ms): 10.5, 99th(ms): 15.2, 99.9th(ms): 16.8,
              Max(ms): 16.8                                                       (one line in the output)
    [2026-11-23 06:00:24] execute run failed, err ... Error 1205 ...   a failed transaction (NEW_ORDER_ERR)
    Finished
    [Summary] NEW_ORDER - Takes(s): 4.0, Count: 1092, TPM: 16426.2, ...
    tpmC: 16426.0, tpmTotal: 36341.1, efficiency: 127729.3%
    failed to ping db, err Error 1045 (28000): Access denied ...      fatal (then a Go panic, rc 2)

`[Current]` lines are PER INTERVAL (go-tpc resets the histograms every `--interval`, default 10s; a run
shorter than the interval prints none) and `Takes(s)` is the time since that interval's first
transaction of the kind. `[Summary]` lines are cumulative over the run. v1.0.0 printed no prefixes:
its periodic lines were cumulative (phase "cumulative"), the lines after `Finished` the summary; it
printed integer ms, no 50th/90th/Max and no tpmC line. Failed transactions are separate operations
`NEW_ORDER_ERR`, `PAYMENT_ERR`, ... (tpmTotal excludes them). `--output json` (one JSON array per
block, string values, `"Prefix": "[Current] "`) is read too; `--output table` is a ParseError (use
plain). Fields are read by key, not position; unknown keys go to `unknown_columns`.
Wait-time lines of `--wait` (`[Current] KEYINGTIME-NEW_ORDER - 18.0s`) are not rows.

Columns (SCHEMA):
    host            string   the host given to parse(), else NA
    run             Int64    0, 1, 2 ... one per go-tpc run inside the file
    report          Int64    0, 1, 2 ... the block within the run; the summary block has its own index
    phase           string   "current" (`[Current]`, per interval), "summary" (`[Summary]`, or v1.0.0
                             lines after `Finished`), "cumulative" (v1.0.0 periodic lines)
    time_s          float64  Takes(s) as printed
    op              string   DELIVERY, NEW_ORDER, ORDER_STATUS, PAYMENT, STOCK_LEVEL, NEW_ORDER_ERR, ...
    error           boolean  the operation ends with `_ERR`
    count           Int64    Count as printed
    interval_count  Int64    transactions in the interval: count for current lines, Δcount against the
                             previous cumulative line of the same op for cumulative lines (count for
                             the first); NA for summary lines
    tpm             float64  TPM as printed (transactions per minute)
    sum_ms, lat_avg_ms, lat_p50_ms, lat_p90_ms, lat_p95_ms, lat_p99_ms, lat_p999_ms, lat_max_ms
                    float64  Sum(ms), Avg(ms), percentiles and Max in ms; NaN where a version prints none

What it reads beside its rows: `EXTRAS` (below). A last line without newline is dropped and counted
(`dropped_lines`: the capture was cut off), unless it is a fatal message.

A block ends where the operation names stop ascending (go-tpc sorts them), where the phase changes and
at `Finished`. A new run starts at a maxprocs line after a run's output, when per-interval or cumulative
lines follow a run's summary, and when cumulative time goes backwards.

Errors: ParseError naming the line for a malformed transaction or tpmC line that is not the last line,
for binary garbage, for `--output table`, and for text without any go-tpc structure. Empty input gives
an empty frame. No timestamp column: go-tpc prints none (go-tpc #79; the manifest's started_at anchors
the blocks). Tested on: tests/fixtures/gotpc/*.txt (see README.md there).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._common import SNIFF_BYTES, Extras, Source
from ._golines import IS_NUMBER, GoReader, Malformed, nan_to_none, per_op


@dataclass(frozen=True)
class GotpcExtras(Extras):
    """What gotpc reads beside its rows (see `_common.Extras`)."""

    # one record per run: `run`, `threads` (None: go-tpc does not print it; the caller knows), `summary`
    # ({} without `[Summary]` lines or tpmC line: `tpmc`, `tpm_total`, `efficiency_pct` from the tpmC
    # line (None without one), `count` and `errors` (sums of the non-error / `*_ERR` summary counts),
    # `total_time_s` (largest summary Takes(s)), `lat_avg_ms` (Σsum_ms / Σcount over non-error summary
    # ops), `lat_p95_ms` and `lat_p99_ms` (NEW_ORDER's), `tps` (count / total_time_s), `ops` (op ->
    # {count, tpm, lat_avg_ms, lat_p95_ms})), `fatal` (the first line that says the run failed: `failed
    # to ping db ...`, `panic: ...`, `[mysql] ...`, a worker that quit with `execute run failed ...`; a
    # timestamped `[...] execute run failed` is one failed transaction, counted in `*_ERR`, not fatal)
    # and `finished` (a `Finished` line was seen)
    runs: list[dict] = field(default_factory=list)


EXTRAS = GotpcExtras

KIND = "gotpc"

_LATS = ["sum_ms", *(f"lat_{name}_ms" for name in ("avg", "p50", "p90", "p95", "p99", "p999", "max"))]
SCHEMA: dict[str, str] = {
    "host": "string",
    "run": "Int64",
    "report": "Int64",
    "phase": "string",
    "time_s": "float64",
    "op": "string",
    "error": "boolean",
    "count": "Int64",
    "interval_count": "Int64",
    "tpm": "float64",
    **dict.fromkeys(_LATS, "float64"),
}

_OP = re.compile(r"^(?:\[(Current|Summary)\] )?([A-Z][A-Z0-9_]*)\s+- (Takes\(s\):.*?)\s*$")
_TPMC = re.compile(r"^tpmC: (.*?)\s*$")
_TPMC_KEYS = {"tpmC": "tpmc", "tpmTotal": "tpm_total", "efficiency": "efficiency_pct"}
_FINISHED = re.compile(r"^Finished\s*$")
_MAXPROCS = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d maxprocs: ")
_JSON_LINE = re.compile(r"^\[\{")
_FATAL = re.compile(
    r"""^(?:failed\ to\ ping\ db
          | panic:\ | fatal\ error:[ ]
          | Failed\ to\ init\ work\ loader
          | execute\ \S+\ failed,\ err
          | check\ prepare\ failed
          | \[mysql\][ ]
          | Error\ \d+)""",
    re.X,
)
_SNIFF = re.compile(
    r"""^(?:\[(?:Current|Summary)\]\ [A-Z][A-Z0-9_]*\s+-\ Takes\(s\):[ ]
          | [A-Z][A-Z0-9_]*\s+-\ Takes\(s\):\ [^\n]*TPM:[ ]
          | tpmC:[ ]
          | \[\{[^\n]*"Prefix":"\[(?:Current|Summary)\]\ ")""",
    re.M | re.X,
)


@dataclass
class _Run:
    index: int
    fatal: str | None = None
    finished: bool = False
    reports: int = 0
    summary_rows: list[dict[str, Any]] = field(default_factory=list)
    tpmc: dict[str, float] | None = None
    cumulative: dict[str, tuple[int, float]] = field(default_factory=dict)  # op -> last (count, time_s)
    touched: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.index,
            "threads": None,
            "summary": _summary(self.summary_rows, self.tpmc),
            "fatal": self.fatal,
            "finished": self.finished,
        }


def sniff(text: str) -> bool:
    """True for go-tpc TPC-C output: `[Current]`/`[Summary]` lines, v1.0.0 lines with `TPM:`, `tpmC:`."""
    return bool(_SNIFF.search(text[:SNIFF_BYTES]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Transaction lines of every run in `source` as a typed frame; runs and their summaries in `EXTRAS`.

    `tz` is accepted for the common parser signature; go-tpc prints no wall-clock time on its lines.
    """
    del tz
    return _Reader.read(source, host)


class _Reader(GoReader):
    KIND = KIND
    SCHEMA = SCHEMA
    RUN = _Run
    REFUSED = (re.compile(r"^\|\s*(?:PREFIX|TPMC)\s*\|"),)
    REFUSAL = "go-tpc --output table is not read; use --output plain"
    FATAL = _FATAL
    CUT_STRUCTURE = (_OP, _TPMC, _FINISHED, _MAXPROCS)
    NOT_FOUND = "no go-tpc output found (no transaction lines, Finished or tpmC)"
    PLAIN_KEYS = {"Takes(s)": "time_s", "Count": "count", "TPM": "tpm"}
    LAT_KEY = re.compile(r"^(Sum|Avg|Max|(\d+(?:\.\d+)?)th)\((ms|us|s)\)$")

    def __init__(self) -> None:
        super().__init__()
        self.block: tuple[str, str] | None = None  # (phase, last op) of the open block; None: none open

    def new_run(self) -> _Run:
        self.block = None
        return super().new_run()

    def _line(self, text: str) -> None:
        if m := _OP.match(text):
            self._op(m[1], m[2], self._fields(_pairs(m[3])))
        elif _JSON_LINE.match(text):
            self._json(text)
        elif m := _TPMC.match(text):
            self._tpmc(m[1])
        elif _FINISHED.match(text):
            run = self.new_run() if self.cur.finished else self.cur  # runs appended without maxprocs line
            self.structure = run.touched = run.finished = True
            self.block = None
        elif _MAXPROCS.match(text):
            self.structure = True
            self.new_run()
        elif _FATAL.match(text):
            self._fatal(text)
        # anything else (per-transaction errors, prepare progress, wait times) is not ours to judge

    def _fields(self, pairs: list[tuple[str, str]]) -> dict[str, float]:
        fields: dict[str, float] = {}
        for key, value in pairs:
            if not IS_NUMBER.match(value):
                raise Malformed(f"{key} is not a number: {value[:30]!r}")
            self._keep(fields, key, value)
        return fields

    def _op(self, prefix: str | None, op: str, fields: dict[str, float]) -> None:
        n = self._count(fields, "transaction")
        time_s = fields["time_s"]
        self.structure = True
        run = self.cur
        if prefix == "Current":
            phase = "current"
        elif prefix == "Summary" or (prefix is None and run.finished):
            phase = "summary"
        else:
            phase = "cumulative"
        if phase != "summary" and (run.finished or run.summary_rows or run.tpmc is not None):
            run = self.new_run()  # periodic lines after a summary: the next run, appended
        elif phase == "cumulative" and op in run.cumulative and time_s < run.cumulative[op][1]:
            run = self.new_run()  # cumulative time went back: a new run without Finished
        if self.block is None or self.block[0] != phase or op <= self.block[1]:
            run.reports += 1  # go-tpc sorts ops: a repeat (or one going back) opens a block
        self.block = (phase, op)
        run.touched = True
        interval: int | None = None
        if phase == "current":
            interval = n
        elif phase == "cumulative":
            p_count = run.cumulative.get(op, (0, 0.0))[0]
            interval = n - p_count if n >= p_count else None  # never a negative count
            run.cumulative[op] = (n, time_s)
        row = {
            "run": run.index,
            "report": run.reports - 1,
            "phase": phase,
            "time_s": time_s,
            "op": op,
            "error": op.endswith("_ERR"),
            "count": n,
            "interval_count": interval,
            "tpm": fields["tpm"],
            **{c: fields.get(c, math.nan) for c in _LATS},
        }
        self.rows.append(row)
        if phase == "summary":
            run.summary_rows.append(row)

    def _json(self, text: str) -> None:
        """One `--output json` block: `[{"Prefix":"[Current] ","Operation":"NEW_ORDER","Count":"249"}]`."""
        try:
            records = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise Malformed(f"malformed JSON block: {exc}") from None
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise Malformed("JSON block is not a list of objects")
        for rec in records:
            if not all(isinstance(v, str) for v in rec.values()):
                raise Malformed("JSON values are not strings")
            if "Operation" in rec:
                prefix = rec.get("Prefix", "").strip()
                op = rec["Operation"]
                if prefix not in ("", "[Current]", "[Summary]") or not re.fullmatch(r"[A-Z][A-Z0-9_]*", op):
                    raise Malformed("unknown JSON record; use --output plain")
                pairs = [(k, v) for k, v in rec.items() if k not in ("Prefix", "Operation")]
                self._op(prefix[1:-1] or None, op, self._fields(pairs))
            elif "tpmC" in rec:
                self._tpmc(", ".join(f"{k}: {v}" for k, v in rec.items()), first="")
            else:
                raise Malformed("unknown JSON record; use --output plain")

    def _tpmc(self, rest: str, first: str = "tpmC: ") -> None:
        """`tpmC: 9806.5, tpmTotal: 21512.5, efficiency: 76256.0%` (`rest` is what follows `first`)."""
        values: dict[str, float] = {}
        for part in (first + rest).split(","):
            key, sep, value = part.strip().partition(":")
            value = value.strip().removesuffix("%")
            if not sep or not IS_NUMBER.match(value):
                raise Malformed(f"malformed tpmC field {part.strip()[:30]!r}")
            key = key.strip()
            if key in _TPMC_KEYS:
                values[_TPMC_KEYS[key]] = float(value)
            else:
                self.unknown.add(key)
        if "tpmc" not in values:
            raise Malformed("tpmC line without tpmC")
        run = self.new_run() if self.cur.tpmc is not None else self.cur
        self.structure = run.touched = True
        run.tpmc = values
        self.block = None


def _pairs(body: str) -> list[tuple[str, str]]:
    """`Takes(s): 1.0, Count: 249, ...` as (key, value) texts."""
    pairs = []
    for part in body.split(","):
        key, sep, value = part.strip().partition(":")
        if not sep:
            raise Malformed(f"malformed field {part.strip()[:30]!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def _summary(rows: list[dict[str, Any]], tpmc: dict[str, float] | None) -> dict[str, Any]:
    """The run's totals from its summary lines and tpmC line ({} when it printed neither)."""
    if not rows and tpmc is None:
        return {}
    tpmc = tpmc or {}
    ok = [r for r in rows if not r["error"]]
    count = sum(r["count"] for r in ok)
    times = [r["time_s"] for r in rows if not math.isnan(r["time_s"])]
    total_time = max(times) if times else None
    sum_ms = sum(r["sum_ms"] for r in ok)
    new_order = next((r for r in rows if r["op"] == "NEW_ORDER"), None)
    return {
        "tpmc": tpmc.get("tpmc"),
        "tpm_total": tpmc.get("tpm_total"),
        "efficiency_pct": tpmc.get("efficiency_pct"),
        "count": count,
        "errors": sum(r["count"] for r in rows if r["error"]),
        "total_time_s": total_time,
        "lat_avg_ms": nan_to_none(sum_ms / count) if count else None,
        "lat_p95_ms": nan_to_none(new_order["lat_p95_ms"]) if new_order else None,
        "lat_p99_ms": nan_to_none(new_order["lat_p99_ms"]) if new_order else None,
        "tps": count / total_time if total_time and total_time > 0 else None,
        "ops": per_op(rows, ("tpm", "lat_avg_ms", "lat_p95_ms")),
    }

"""goycsb: the text `go-ycsb load|run ...` prints, one row per operation line.

Reads the stdout and stderr (merged, or either one alone) of

    go-ycsb load|run mysql|tikv|... -P workloads/workloada [-P db.properties] [-p key=value ...]
            [--threads N] [--interval N]

from go-ycsb v1.0.3 (checked) and older builds that print fewer latency keys (seed 001 prints
`Avg, Min, Max, 95th, 99th`; seed 002 `Avg, Min, Max, 99th, 99.9th, 99.99th`). Line forms:

    ***************** properties *****************          a run starts; `"key"="value"` lines follow
    READ   - Takes(s): 1.0, Count: 4278, OPS: 4285.9, Avg(us): 242, Min(us): 39, Max(us): 4447,
             50th(us): 201, 90th(us): 419, 95th(us): 522, 99th(us): 801, 99.9th(us): 3221,
             99.99th(us): 4447                                 (one line in the output)
    Got signal [terminated] to exit.                           SIGTERM/SIGINT: go-ycsb stops and summarises
    Run finished, takes 59.950856061s                          (or `517.175465ms`) the final block follows
    create db mysql failed Error 1045: Access denied ...      fatal: go-ycsb exits 1, no rows

Every `--interval` seconds (default 10) go-ycsb prints a block with one line per operation, sorted by
name; after `Run finished` the final block. Counts, OPS and percentiles are CUMULATIVE since that
operation's first measurement, and so is `Takes(s)`: an operation first seen late (a `READ_ERROR` at the
end of a run) has a small Takes(s) and a meaningless OPS. `TOTAL` aggregates the successful operations;
failed ones are the separate operations `READ_ERROR`, `UPDATE_ERROR`, ... (not in TOTAL). Fields are
read by key, not position; a key not in the tables below is listed in `unknown_columns`.

Columns (SCHEMA):
    host            string   the host given to parse(), else NA
    run             Int64    0, 1, 2 ... a new run at each properties block
    report          Int64    0, 1, 2 ... the block within the run; the final block has its own index
    final           boolean  the line belongs to the block after `Run finished`
    time_s          float64  Takes(s): seconds since the operation's first measurement (0.1 s resolution)
    op              string   READ, UPDATE, INSERT, SCAN, READ_MODIFY_WRITE, TOTAL, READ_ERROR, ...
    error           boolean  the operation ends with `_ERROR`
    count           Int64    operations so far (cumulative)
    ops_s           float64  OPS as printed: count / time_s (cumulative average)
    interval_ops_s  float64  Δcount / Δtime_s against the previous non-final report of the same op in
                             the run (count / time_s for the first); NaN for final rows and when
                             Δtime_s <= 0. Takes(s) is rounded to 0.1 s, so at `--interval 1` this is
                             good to about ±10 %; per-interval percentiles cannot be recovered.
    lat_avg_ms, lat_min_ms, lat_max_ms, lat_p50_ms, lat_p90_ms, lat_p95_ms, lat_p99_ms, lat_p999_ms,
    lat_p9999_ms    float64  latencies printed in µs (`Avg(us)`, `99.9th(us)`) converted to ms;
                             NaN for keys a build does not print

What it reads beside its rows: `EXTRAS` (below). A last line without newline (the capture was cut
off; its numbers may be cut too) is dropped and counted (`dropped_lines`), unless it is a fatal
message (stderr alone ends without newline).

A block ends where the operation names stop ascending (go-ycsb sorts them; a name repeats or goes back)
and at the banner, star lines, `Got signal` and `Run finished`. A new run starts at a properties banner,
at a second `Run finished`, and when a block follows a run's final block (logs appended without banner).

Errors: ParseError naming the line for a malformed operation line (`NAME - Takes(s): ...`) or `Run
finished` line that is not the last line, for binary garbage, for `outputstyle=json|table` output
(use the default plain style), and for text without any go-ycsb structure. Other lines (the go-ycsb
banner, `Using request distribution ...`, blank lines) are ignored. Empty input gives an empty frame.
No timestamp column: go-ycsb prints no wall-clock time (the manifest's started_at anchors time_s).
Tested on: tests/fixtures/goycsb/*.txt (see README.md there).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._common import SNIFF_BYTES, Extras, Source
from ._golines import IS_NUMBER, GoReader, Malformed, nan_to_none, per_op


@dataclass(frozen=True)
class GoycsbExtras(Extras):
    """What goycsb reads beside its rows (see `_common.Extras`)."""

    # one record per run: `run`, `command` ("run"/"load" from the `command` property, else from
    # `dotransactions`, else None), `threads` (the `threadcount` property, else None), `properties`
    # (every printed property; values of keys containing password/passwd/pwd/secret/token are "***"),
    # `finished_s` (from `Run finished, takes ...`, else None), `signal` ("terminated" from `Got signal
    # [terminated] to exit.`, else None), `summary` (the final block's totals, {} without one: see
    # `_summary`) and `fatal` (the first line that says go-ycsb failed: `create db ... failed ...`,
    # `panic: ...`, else None)
    runs: list[dict] = field(default_factory=list)


EXTRAS = GoycsbExtras

KIND = "goycsb"

_LATS = [f"lat_{name}_ms" for name in ("avg", "min", "max", "p50", "p90", "p95", "p99", "p999", "p9999")]
SCHEMA: dict[str, str] = {
    "host": "string",
    "run": "Int64",
    "report": "Int64",
    "final": "boolean",
    "time_s": "float64",
    "op": "string",
    "error": "boolean",
    "count": "Int64",
    "ops_s": "float64",
    "interval_ops_s": "float64",
    **dict.fromkeys(_LATS, "float64"),
}

_OP = re.compile(r"^([A-Z][A-Z0-9_]*)\s+- (Takes\(s\):.*?)\s*$")
_BANNER = re.compile(r"^\*+ properties \*+\s*$")
_STARS = re.compile(r"^\*{10,}\s*$")
_PROPERTY = re.compile(r'^"(.*?)"="(.*)"\s*$')
_FINISHED = re.compile(r"^Run finished, takes (\S*)\s*$")
_SIGNAL = re.compile(r"^Got signal \[([^\]]*)\] (?:again )?to exit\.")
_DISTRIBUTION = re.compile(r"^Using request distribution '")
_FATAL = re.compile(
    r"""^(?:create\ (?:db|workload)\ \S+\ failed
          | \S+\ is\ not\ registered\s*$
          | totalOpCount\(
          | (?:\d{4}/\d\d/\d\d\ \d\d:\d\d:\d\d\ )?bad\ property:
          | panic:\ | fatal\ error:[ ]
          | Wait\ \d+s\ for\ closed,\ force\ exit)""",
    re.X,
)
_SECRET_KEY = re.compile(r"password|passwd|pwd|secret|token", re.I)
_GO_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)(s|ms|µs|us|ns))?$")
_DURATION_UNIT = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
_SNIFF = re.compile(
    r"""^(?:\*+\ properties\ \*+\s*$
          | [A-Z][A-Z0-9_]*\s+-\ Takes\(s\):\ [^\n]*Count:\ [^\n]*OPS:[ ]
          | Using\ request\ distribution\ ')""",
    re.M | re.X,
)


@dataclass
class _Run:
    index: int
    properties: dict[str, str] = field(default_factory=dict)
    finished_s: float | None = None
    finished: bool = False
    signal: str | None = None
    fatal: str | None = None
    reports: int = 0
    final_rows: list[dict[str, Any]] = field(default_factory=list)
    prev: dict[str, tuple[int, float]] = field(default_factory=dict)  # op -> last non-final (count, time_s)
    touched: bool = False

    def as_dict(self) -> dict[str, Any]:
        props = self.properties
        command = props.get("command")
        if command is None and props.get("dotransactions") in ("true", "false"):
            command = "run" if props["dotransactions"] == "true" else "load"
        threads = props.get("threadcount", "")
        return {
            "run": self.index,
            "command": command,
            "threads": int(threads) if threads.isascii() and threads.isdigit() else None,
            "properties": dict(sorted(props.items())),
            "finished_s": self.finished_s,
            "signal": self.signal,
            "summary": _summary(self.final_rows, self.finished_s),
            "fatal": self.fatal,
        }


def sniff(text: str) -> bool:
    """True for go-ycsb output: the properties banner, an op line with `Count:` and `OPS:` (go-tpc's have
    `TPM:`), or the workload's `Using request distribution '...'` line (printed even when the DB fails)."""
    return bool(_SNIFF.search(text[:SNIFF_BYTES]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Operation lines of every run in `source` as a typed frame; runs and their summaries in `EXTRAS`.

    `tz` is accepted for the common parser signature; go-ycsb prints no wall-clock time.
    """
    del tz
    return _Reader.read(source, host)


class _Reader(GoReader):
    KIND = KIND
    SCHEMA = SCHEMA
    RUN = _Run
    REFUSED = (re.compile(r'^\[\{.*"Operation":'), re.compile(r"^\|\s*OPERATION\s*\|"))
    REFUSAL = "go-ycsb outputstyle json/table is not read; use outputstyle=plain"
    FATAL = _FATAL
    CUT_STRUCTURE = (_OP, _BANNER, _FINISHED)
    NOT_FOUND = "no go-ycsb output found (no properties, operation lines or summary)"
    PLAIN_KEYS = {"Takes(s)": "time_s", "Count": "count", "OPS": "ops_s"}
    LAT_KEY = re.compile(r"^(Avg|Min|Max|(\d+(?:\.\d+)?)th)\((us|ms)\)$")

    def __init__(self) -> None:
        super().__init__()
        self.in_props = False
        self.block_last: str | None = None  # last op of the open block; None: no block open
        self.block_final = False

    def new_run(self) -> _Run:
        self.in_props = False
        self.block_last = None
        return super().new_run()

    def _line(self, text: str) -> None:
        if m := _OP.match(text):
            self._op(m[1], m[2])
        elif self.in_props and (m := _PROPERTY.match(text)):
            key, value = m[1], m[2]
            self.cur.properties[key] = "***" if _SECRET_KEY.search(key) else value
        elif _BANNER.match(text):
            self.structure = True
            self.new_run().touched = True
            self.in_props = True
        elif _STARS.match(text):
            self.in_props = False
            self.block_last = None
        elif m := _FINISHED.match(text):
            seconds = _go_duration(m[1])
            run = self.new_run() if self.cur.finished else self.cur
            self.structure = run.touched = run.finished = True
            run.finished_s = seconds
            self.in_props = False
            self.block_last = None
        elif m := _SIGNAL.match(text):
            self.structure = self.cur.touched = True
            self.block_last = None
            if self.cur.signal is None:
                self.cur.signal = m[1]
        elif _FATAL.match(text):
            self._fatal(text)
        elif _DISTRIBUTION.match(text):
            self.structure = True
        # anything else (the go-ycsb banner, `operation err: ...` with silence=false) is not ours to judge

    def _op(self, op: str, body: str) -> None:
        fields: dict[str, float] = {}
        for part in body.split(","):
            key, sep, value = part.strip().partition(":")
            value = value.strip()
            if not sep or not IS_NUMBER.match(value):
                raise Malformed(f"malformed field {part.strip()[:30]!r}")
            self._keep(fields, key.strip(), value)
        n = self._count(fields, "operation")
        self.structure = True
        self.in_props = False
        run = self.cur
        if self.block_last is None or op <= self.block_last:  # go-ycsb sorts ops: a repeat opens a block
            if run.final_rows:  # a block after the final one: another run's output, without its banner
                run = self.new_run()
            self.block_final = run.finished
            run.reports += 1
        self.block_last = op
        run.touched = True
        time_s = fields["time_s"]
        if self.block_final:
            interval = math.nan
        else:
            p_count, p_time = run.prev.get(op, (0, 0.0))
            dt = time_s - p_time
            interval = (n - p_count) / dt if dt > 0 else math.nan
            run.prev[op] = (n, time_s)
        row = {
            "run": run.index,
            "report": run.reports - 1,
            "final": self.block_final,
            "time_s": time_s,
            "op": op,
            "error": op.endswith("_ERROR"),
            "count": n,
            "ops_s": fields["ops_s"],
            "interval_ops_s": interval,
            **{c: fields.get(c, math.nan) for c in _LATS},
        }
        self.rows.append(row)
        if self.block_final:
            run.final_rows.append(row)


def _go_duration(text: str) -> float:
    """Go's time.Duration.String(): `59.950856061s`, `517.175465ms`, `1m0.5s`, `1h2m3s` -> seconds."""
    m = _GO_DURATION.match(text)
    if not text or not m:
        raise Malformed(f"not a Go duration: {text!r}")
    hours, minutes, value, unit = m.groups()
    seconds = float(hours or 0) * 3600 + float(minutes or 0) * 60
    if value is not None:
        seconds += float(value) * _DURATION_UNIT[unit]
    return seconds


def _summary(rows: list[dict[str, Any]], finished_s: float | None) -> dict[str, Any]:
    """The run's totals from its final block.

    `ops_s`, `count`, `lat_avg_ms`: TOTAL's, else summed (count-weighted average) over the non-error ops;
    `errors`: the sum of the `*_ERROR` counts (TOTAL excludes them); `lat_p95_ms`, `lat_p99_ms`: TOTAL's
    or None (percentiles of several ops cannot be combined); `total_time_s`: `Run finished` else the
    largest Takes(s); `ops`: op -> {count, ops_s, lat_avg_ms} for every op printed.
    """
    if not rows:
        return {}
    total = next((r for r in rows if r["op"] == "TOTAL"), None)
    ok = [r for r in rows if not r["error"] and r["op"] != "TOTAL"]
    if total is not None:
        ops_s, count, lat_avg = total["ops_s"], total["count"], total["lat_avg_ms"]
    else:
        ops_s = round(math.fsum(r["ops_s"] for r in ok), 6)  # 1011.2 + 975.1 is 1986.3, not ...0002
        count = sum(r["count"] for r in ok)
        weighted = sum(r["count"] * r["lat_avg_ms"] for r in ok)
        lat_avg = weighted / count if count else math.nan
    times = [r["time_s"] for r in rows if not math.isnan(r["time_s"])]
    return {
        "ops_s": nan_to_none(ops_s),
        "count": count,
        "errors": sum(r["count"] for r in rows if r["error"]),
        "lat_avg_ms": nan_to_none(lat_avg),
        "lat_p95_ms": nan_to_none(total["lat_p95_ms"]) if total is not None else None,
        "lat_p99_ms": nan_to_none(total["lat_p99_ms"]) if total is not None else None,
        "total_time_s": finished_s if finished_s is not None else (max(times) if times else None),
        "ops": per_op(rows, ("ops_s", "lat_avg_ms")),
    }

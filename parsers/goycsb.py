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

import numpy as np
import pandas as pd

from ._common import SNIFF_BYTES, Extras, Lines, Source, coerce, empty_frame, feed_lines
from ._golines import GoReader, Malformed, column, nan_to_none


@dataclass(frozen=True)
class GoycsbExtras(Extras):
    """What goycsb reads beside its rows (see `_common.Extras`)."""

    # one record per run: `run`, `command` ("run"/"load" from the `command` property, else from
    # `dotransactions`, else None), `threads` (the `threadcount` property, else None), `properties`
    # (every printed property; values of keys containing password/passwd/pwd/secret/token are "***"),
    # `finished_s` (from `Run finished, takes ...`, else None), `signal` ("terminated" from `Got signal
    # [terminated] to exit.`, else None), `summary` (from the final block; {} without one: `ops_s`,
    # `count`, `errors`, `lat_avg_ms`, `lat_p95_ms`, `lat_p99_ms`, `total_time_s`, `ops`; see `_summary`)
    # and `fatal` (the first line that says go-ycsb failed: `create db ... failed ...`, `panic: ...`,
    # else None)
    runs: list[dict] = field(default_factory=list)


EXTRAS = GoycsbExtras

KIND = "goycsb"

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
    "lat_avg_ms": "float64",
    "lat_min_ms": "float64",
    "lat_max_ms": "float64",
    "lat_p50_ms": "float64",
    "lat_p90_ms": "float64",
    "lat_p95_ms": "float64",
    "lat_p99_ms": "float64",
    "lat_p999_ms": "float64",
    "lat_p9999_ms": "float64",
}
_FLOATS = [c for c, t in SCHEMA.items() if t == "float64"]
_LATS = [c for c in _FLOATS if c.startswith("lat_")]

_N = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
_NUM = re.compile(rf"^(?:{_N})$", re.I)
_INT64_MAX = 2**63 - 1

_OP = re.compile(r"^([A-Z][A-Z0-9_]*)\s+- (Takes\(s\):.*?)\s*$")
_LAT_KEY = re.compile(r"^(Avg|Min|Max|(\d+(?:\.\d+)?)th)\((us|ms)\)$")
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
_JSON_STYLE = re.compile(r'^\[\{.*"Operation":')
_TABLE_STYLE = re.compile(r"^\|\s*OPERATION\s*\|")
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
    reader = _Reader()
    lines = feed_lines(source, KIND, reader.feed, reader.cut_last)
    return reader.finish(lines, host)


class _Reader(GoReader):
    """Walks the lines once; keeps rows as column lists and the per-run facts."""

    REFUSED = (_JSON_STYLE, _TABLE_STYLE)
    REFUSAL = "go-ycsb outputstyle json/table is not read; use outputstyle=plain"
    FATAL = _FATAL
    CUT_STRUCTURE = (_OP, _BANNER, _FINISHED)
    NOT_FOUND = "no go-ycsb output found (no properties, operation lines or summary)"

    def __init__(self) -> None:
        super().__init__()
        self.cols: dict[str, list[Any]] = {c: [] for c in SCHEMA if c != "host"}
        self.runs: list[_Run] = [_Run(0)]
        self.unknown: set[str] = set()
        self.in_props = False
        self.block_last: str | None = None  # last op of the open block; None: no block open
        self.block_final = False

    @property
    def cur(self) -> _Run:
        return self.runs[-1]

    def new_run(self) -> _Run:
        if self.cur.touched:
            self.runs.append(_Run(len(self.runs)))
        self.in_props = False
        self.block_last = None
        return self.cur

    # ------------------------------------------------------------ per line
    def _line(self, text: str) -> None:
        m = _OP.match(text)
        if m:
            self._op(m[1], m[2])
            return
        if self.in_props:
            m = _PROPERTY.match(text)
            if m:
                key, value = m[1], m[2]
                self.cur.properties[key] = "***" if _SECRET_KEY.search(key) else value
                return
        if _BANNER.match(text):
            self.structure = True
            self.new_run().touched = True
            self.in_props = True
            return
        if _STARS.match(text):
            self.in_props = False
            self.block_last = None
            return
        m = _FINISHED.match(text)
        if m:
            self._finished(m[1])
            return
        m = _SIGNAL.match(text)
        if m:
            self.structure = self.cur.touched = True
            self.block_last = None
            if self.cur.signal is None:
                self.cur.signal = m[1]
            return
        if _FATAL.match(text):
            self._fatal(text)
            return
        if _DISTRIBUTION.match(text):
            self.structure = True
        # anything else (the go-ycsb banner, `operation err: ...` with silence=false) is not ours to judge

    def _fatal(self, text: str) -> None:
        self.structure = self.cur.touched = True
        if self.cur.fatal is None:
            self.cur.fatal = text.strip()

    def _finished(self, value: str) -> None:
        seconds = _go_duration(value)
        run = self.cur
        if run.finished:
            run = self.new_run()
        self.structure = run.touched = run.finished = True
        run.finished_s = seconds
        self.in_props = False
        self.block_last = None

    # ------------------------------------------------------------ operation lines
    def _op(self, op: str, body: str) -> None:
        fields = self._fields(body)
        for key in ("time_s", "count", "ops_s"):
            if key not in fields:
                raise Malformed(f"operation line without {_LABEL[key]}")
        count = fields["count"]
        if not count.is_integer() or not 0 <= count <= _INT64_MAX:
            raise Malformed("Count is not a whole number")
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
        final = self.block_final
        time_s = fields["time_s"]
        n = int(count)
        if final:
            interval = math.nan
        else:
            p_count, p_time = run.prev.get(op, (0, 0.0))
            dt = time_s - p_time
            interval = (n - p_count) / dt if dt > 0 else math.nan
            run.prev[op] = (n, time_s)
        row = {
            "run": run.index,
            "report": run.reports - 1,
            "final": final,
            "time_s": time_s,
            "op": op,
            "error": op.endswith("_ERROR"),
            "count": n,
            "ops_s": fields["ops_s"],
            "interval_ops_s": interval,
            **{c: fields.get(c, math.nan) for c in _LATS},
        }
        for col, value in row.items():
            self.cols[col].append(value)
        if final:
            run.final_rows.append(row)

    def _fields(self, body: str) -> dict[str, float]:
        fields: dict[str, float] = {}
        for part in body.split(","):
            key, sep, value = part.strip().partition(":")
            value = value.strip()
            if not sep or not _NUM.match(value):
                raise Malformed(f"malformed field {part.strip()[:30]!r}")
            col, scale = column(key.strip(), _PLAIN_KEYS, _LAT_KEY, SCHEMA)
            if col is None:
                self.unknown.add(key.strip())
                continue
            fields[col] = float(value) / scale
        return fields

    # ------------------------------------------------------------ end
    def finish(self, lines: Lines, host: str | None) -> pd.DataFrame:
        self.check_end(lines)
        n = len(self.cols["run"])
        if n == 0:
            df = empty_frame(SCHEMA)
        else:
            data: dict[str, Any] = {"host": pd.array([host] * n, dtype="string")}
            for col in ("run", "report", "count"):
                data[col] = np.asarray(self.cols[col], dtype="int64")
            for col in ("final", "error"):
                data[col] = np.asarray(self.cols[col], dtype="bool")
            data["op"] = pd.array(self.cols["op"], dtype="string")
            for col in _FLOATS:
                data[col] = np.asarray(self.cols[col], dtype="float64")
            df = coerce(pd.DataFrame(data), SCHEMA)
        df.attrs["runs"] = [r.as_dict() for r in self.runs if r.touched]
        df.attrs["dropped_lines"] = self.dropped
        if self.unknown:
            df.attrs["unknown_columns"] = sorted(self.unknown)
        return df


_LABEL = {"time_s": "Takes(s)", "count": "Count", "ops_s": "OPS"}
_PLAIN_KEYS = {"Takes(s)": "time_s", "Count": "count", "OPS": "ops_s"}


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
        "ops": {
            r["op"]: {
                "count": r["count"],
                "ops_s": nan_to_none(r["ops_s"]),
                "lat_avg_ms": nan_to_none(r["lat_avg_ms"]),
            }
            for r in rows
        },
    }

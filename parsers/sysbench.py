"""sysbench: the text a `sysbench ... run` prints, one row per intermediate report line.

Reads the stdout (stderr merged or not) of

    sysbench <test> [--threads=N] [--time=S] --report-interval=N [--percentile=P] [--histogram=on]
             [--rate=R] [--config-file=FILE] run

from sysbench 1.0.x (1.0.14, 1.0.20 checked), the 1.1/master summary layout (`Throughput:`,
`events/s (eps):`, `time elapsed:`) and the legacy 0.5 / early-1.0 report lines. Line forms:

    [ 10s ] thds: 64 tps: 2057.53 qps: 41150.60 (r/w/o: 28805.42/8230.12/4115.06) lat (ms,95%): 56.84
            err/s: 0.00 reconn/s: 0.00                                  (1.0.x, 1.1; one line in the output)
    [ 1s ] thds: 4 eps: 1234.00 lat (ms,95%): 3.25                       (cpu, memory, ...: tps = eps)
    [   8s] threads: 25000, tps: 0.00, reads: 33187.01, writes: 0.00, response time: 979.24ms (95%),
            errors: 0.00, reconnects:  0.00                                          (0.5, early 1.0)

Fields are read by keyword, not position (`err/s` with or without its colon, `reads/s` of old 0.5
builds); a keyword not in the tables below is listed in `unknown_columns`. `--rate` queue
lines (`[ 10s ] queue length: 0, concurrency: 12`) are not rows and are ignored.

Columns (SCHEMA):
    host          string   the host given to parse(), else NA
    run           Int64    0, 1, 2 ... one per sysbench run inside the file
    time_s        float64  seconds since the run started, as printed in the bracket (excludes warm-up)
    threads       Int64    `thds` / `threads`: threads running in that interval (drops at shutdown)
    tps           float64  transactions per second (`eps`, events per second, for non-DB tests)
    qps           float64  queries per second (NaN for non-DB tests and legacy lines)
    reads_s, writes_s, other_s   float64  queries per second by kind (`r/w/o`; legacy `reads`/`writes`)
    lat_ms        float64  latency percentile of the interval in ms; NaN when disabled
                           (`lat (ms,0%): 0.00`) and when the interval had no events (tps 0, lat 0.00)
    lat_pct       float64  which percentile lat_ms is (95 by default, 0 = disabled)
    errors_s      float64  ignored errors per second (`err/s`, legacy `errors`)
    reconnects_s  float64  reconnects per second

Nothing is dropped or derived: warm-up and shutdown-tail lines stay (the analyzer trims them). What it
reads beside its rows: `EXTRAS` (below).

A new run starts at a banner (`sysbench 1.0.20 ...`), at `Running the test with following options:`
after a run's report lines, when report time goes backwards (not when it repeats: a late reporter
prints two lines of one second), and when report lines resume after a summary block (several runs
appended to one log, as in seeds/000).

Errors: ParseError naming the line for a malformed report, summary or histogram line that is not the
last line, for binary garbage, and for text without any sysbench structure. Empty input gives an
empty frame. No timestamp column: sysbench prints none (the manifest's started_at anchors time_s).
Tested on: tests/fixtures/sysbench/*.txt (see README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._common import SNIFF_BYTES, Extras, Lines, Source
from ._golines import IS_NUMBER, NUMBER, LineReader, Malformed


@dataclass(frozen=True)
class SysbenchExtras(Extras):
    """What sysbench reads beside its rows (see `_common.Extras`); `dropped_lines` counts lines dropped
    because the capture was cut off (a last line without newline, or a malformed last line)."""

    # one record per run, in order: `run`, `threads` (from `Number of threads: N`, else the largest
    # `thds` seen), `version` ("1.0.20" from the banner, or None), `report_interval_s`, `percentile`,
    # `summary` (printed totals, {} without a summary block: `transactions`, `tps`, `queries`, `qps`,
    # `ignored_errors`, `reconnects`, `total_time_s`, `events`, `eps`, `lat_min_ms`, `lat_avg_ms`,
    # `lat_max_ms`, `lat_sum_ms`, `lat_pNN_ms` named after the percentile; only the keys that were
    # printed), `histogram` ([[value_ms, count], ...] with `--histogram=on`, else None),
    # `unfinished_transactions` (forced shutdown) and `fatal` (the first `FATAL:` line)
    runs: list[dict] = field(default_factory=list)


EXTRAS = SysbenchExtras

KIND = "sysbench"

SCHEMA: dict[str, str] = {
    "host": "string",
    "run": "Int64",
    "time_s": "float64",
    "threads": "Int64",
    "tps": "float64",
    "qps": "float64",
    "reads_s": "float64",
    "writes_s": "float64",
    "other_s": "float64",
    "lat_ms": "float64",
    "lat_pct": "float64",
    "errors_s": "float64",
    "reconnects_s": "float64",
}

# ---------------------------------------------------------------- report lines
_BRACKET = re.compile(r"^\[\s*(\d+(?:\.\d+)?)s\s*\]\s*(.*?)\s*$")
_FIELD = re.compile(
    rf"""
      \(r/w/o:\s*(?P<r>{NUMBER})/(?P<w>{NUMBER})/(?P<o>{NUMBER})\)
    | lat\s*\(ms,\s*(?P<lat_pct>{NUMBER})%\):?\s*(?P<lat>{NUMBER})(?=[\s,]|$)
    | response\ time:\s*(?P<rt>{NUMBER})\s*ms\s*\(\s*(?P<rt_pct>{NUMBER})%\)
    | (?P<key>[a-z][a-z/]*(?:\ [a-z]+)*)(?::\s*|\s+)(?P<val>{NUMBER})(?=[\s,]|$)
    """,
    re.X | re.I,
)
_SEP = re.compile(r"[\s,]*")
_ROW_KEYS = {
    **dict.fromkeys(("thds", "threads"), "threads"),
    **dict.fromkeys(("tps", "eps"), "tps"),
    "qps": "qps",
    **dict.fromkeys(("reads", "reads/s"), "reads_s"),
    **dict.fromkeys(("writes", "writes/s"), "writes_s"),
    **dict.fromkeys(("err/s", "errors"), "errors_s"),
    **dict.fromkeys(("reconn/s", "reconnects"), "reconnects_s"),
}
_QUEUE_KEYS = {"queue length", "concurrency"}

# ---------------------------------------------------------------- everything else
_BANNER = re.compile(r"^sysbench\s+(\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z]+)?)\b")
_OPTIONS = re.compile(r"^Running the test with following options:\s*$")
_THREADS = re.compile(r"^Number of threads:\s*(\S+)\s*$")
_INTERVAL = re.compile(r"^Report intermediate results every\s+(\S+)\s+second")
_UNFINISHED = re.compile(r"^Number of unfinished transactions on forced shutdown:\s*(\S+)\s*$")
_FATAL = re.compile(r"^FATAL:")
_SECTION = re.compile(r"^([A-Z][A-Za-z0-9 ()/,.-]*):\s*$")
_SUMMARY_SECTIONS = {
    "sql statistics",
    "oltp test statistics",  # 0.5
    "general statistics",
    "throughput",  # 1.1/master
    "cpu speed",
    "latency (ms)",
    "threads fairness",
    "file operations",
    "operations performed",
}
_KEYVAL = re.compile(r"^\s+([^:]+?):\s*(.*?)\s*$")
_HIST_START = re.compile(r"^Latency histogram \(values are in milliseconds\)")
_HIST_HEADER = re.compile(r"^\s*value\s+-+\s*distribution\s*-+\s*count\s*$")
_HIST_ROW = re.compile(rf"^\s*({NUMBER})\s*\|[* ]*?\s*(\d+)\s*$")
_COUNT_RATE = re.compile(rf"^(\d+)\s*\(\s*({NUMBER})\s+per sec\.\)$")
_SECONDS = re.compile(rf"^({NUMBER})\s*s$")
_MS = re.compile(rf"^({NUMBER})\s*(?:ms)?$")
_PCT_KEY = re.compile(r"^(?:(\d+)th percentile|approx\.\s+(\d+) percentile)$")
_SNIFF = re.compile(
    r"^(?:sysbench [01]\.|\[\s*\d+(?:\.\d+)?s\s*\]\s+(?:thds|threads):|(?:SQL|OLTP test) statistics:)",
    re.M,
)


@dataclass
class _Run:
    index: int
    version: str | None = None
    threads_opt: int | None = None
    max_thds: int | None = None
    report_interval_s: int | float | None = None
    percentile: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    histogram: list[list[float | int]] | None = None
    unfinished: int | None = None
    fatal: str | None = None
    options_seen: bool = False
    rows: int = 0
    last_time: float | None = None
    sections: set[str] = field(default_factory=set)
    touched: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.index,
            "threads": self.threads_opt if self.threads_opt is not None else self.max_thds,
            "version": self.version,
            "report_interval_s": self.report_interval_s,
            "percentile": _plain(self.percentile),
            "summary": self.summary,
            "histogram": self.histogram,
            "unfinished_transactions": self.unfinished,
            "fatal": self.fatal,
        }


def sniff(text: str) -> bool:
    """True for sysbench output: a banner, 1.0 or 0.5 report lines, or a summary block."""
    return bool(_SNIFF.search(text[:SNIFF_BYTES]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Report lines of every run in `source` as a typed frame; runs, summaries and histograms in `EXTRAS`.

    `tz` is accepted for the common parser signature; sysbench prints no wall-clock time.
    """
    del tz
    return _Reader.read(source, host)


class _Reader(LineReader):
    KIND = KIND
    SCHEMA = SCHEMA
    RUN = _Run
    CUT_STRUCTURE = (_BRACKET, _BANNER)
    NOT_FOUND = "no sysbench output found (no banner, report lines or summary)"

    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.subsection: str | None = None
        self.in_hist = False

    def new_run(self) -> _Run:
        self.section = self.subsection = None
        self.in_hist = False
        return super().new_run()

    def feed(self, line_no: int, text: str, lines: Lines) -> None:
        if not text.strip():
            self.in_hist = False  # the histogram ends with a line holding one space
        super().feed(line_no, text, lines)

    def _line(self, text: str) -> None:
        run = self.cur
        if m := _BRACKET.match(text):
            self._report(float(m[1]), m[2])
        elif self.in_hist:
            self._hist_row(text)
        elif m := _BANNER.match(text):
            self.structure = True
            run = self.new_run()
            run.version = m[1]
            run.touched = True
        elif _OPTIONS.match(text):
            self.structure = True
            if run.options_seen or run.rows or run.sections:
                run = self.new_run()
            run.options_seen = run.touched = True
            self.section = None
        elif _FATAL.match(text):
            self._fatal(text)
        elif _HIST_START.match(text):
            self.structure = run.touched = True
            run.histogram = []
            self.in_hist = True
        elif (m := _SECTION.match(text)) and m[1].strip().lower() in _SUMMARY_SECTIONS:
            self._section(m[1].strip().lower())
        elif m := _THREADS.match(text):
            run.threads_opt = _int(m[1])
            run.touched = True
        elif m := _INTERVAL.match(text):
            run.report_interval_s = _plain(_float(m[1]))
        elif m := _UNFINISHED.match(text):
            run.unfinished = _int(m[1])
        elif self.section is not None and (m := _KEYVAL.match(text)):
            self._summary(m[1].strip().lower(), m[2])
        # anything else (warnings, "Threads started!", Lua messages) is not ours to judge

    def _section(self, title: str) -> None:
        if title in self.cur.sections:  # the same block again without a banner: the next run's summary
            self.new_run()
        self.structure = self.cur.touched = True
        self.cur.sections.add(title)
        self.section, self.subsection = title, None

    # ------------------------------------------------------------ report lines
    def _report(self, time_s: float, body: str) -> None:
        fields: dict[str, float] = {}
        pos = _SEP.match(body).end()  # type: ignore[union-attr]
        while pos < len(body):
            m = _FIELD.match(body, pos)
            if not m:
                raise Malformed(f"malformed report line at {body[pos : pos + 30]!r}")
            if m["r"] is not None:
                fields.update(reads_s=float(m["r"]), writes_s=float(m["w"]), other_s=float(m["o"]))
            elif m["lat"] is not None:
                fields.update(lat_pct=float(m["lat_pct"]), lat_ms=float(m["lat"]))
            elif m["rt"] is not None:
                fields.update(lat_pct=float(m["rt_pct"]), lat_ms=float(m["rt"]))
            else:
                key = m["key"].lower()
                if key in _ROW_KEYS:
                    fields[_ROW_KEYS[key]] = float(m["val"])
                elif key in _QUEUE_KEYS:
                    fields.setdefault("_queue", 1.0)
                else:
                    self.unknown.add(key)
            pos = _SEP.match(body, m.end()).end()  # type: ignore[union-attr]
        self.structure = True
        if "threads" not in fields or "tps" not in fields:
            if "_queue" in fields:
                return  # --rate: "[ 10s ] queue length: 0, concurrency: 12" is not a row
            raise Malformed("report line without thds and tps/eps")
        threads = fields["threads"]
        # read as a float: past 2**53 it is no longer the printed whole number (and past 2**63 no int64)
        if not threads.is_integer() or not 0 <= threads < 2**53:
            raise Malformed("thds is not a whole number (below 2**53)")
        run = self.cur
        # the same time again is the same run: a reporter that missed its second (sysbench stopped or
        # starved for longer than the interval) prints the late report and the one due at once
        if run.sections or (run.last_time is not None and time_s < run.last_time):
            run = self.new_run()
        run.touched = True
        run.rows += 1
        run.last_time = time_s
        run.max_thds = max(run.max_thds or 0, int(threads))
        if fields.get("lat_pct") == 0:
            fields["lat_ms"] = np.nan  # --percentile=0: "lat (ms,0%): 0.00" means disabled
        elif fields.get("tps") == 0 and fields.get("lat_ms") == 0:
            fields["lat_ms"] = np.nan  # no events in the interval: 0.00 is a placeholder
        if run.percentile is None and "lat_pct" in fields:
            run.percentile = fields["lat_pct"]
        self.rows.append({**fields, "run": run.index, "time_s": time_s, "threads": int(threads)})

    def _hist_row(self, text: str) -> None:
        if _HIST_HEADER.match(text):
            return
        m = _HIST_ROW.match(text)
        if not m:
            raise Malformed("malformed latency histogram row")
        self.cur.histogram.append([float(m[1]), int(m[2])])  # type: ignore[union-attr]

    # ------------------------------------------------------------ summary block
    def _summary(self, key: str, value: str) -> None:
        run = self.cur
        s = run.summary
        if value == "":
            self.subsection = key  # "queries performed:", 0.5's "response time:"
            return
        if key in ("transactions", "queries"):
            s[key], s["tps" if key == "transactions" else "qps"] = _count_rate(value)
        elif key in ("ignored errors", "reconnects"):
            s[key.replace(" ", "_")] = _count_rate(value)[0]
        elif key in ("total time", "time elapsed"):
            m = _SECONDS.match(value)
            if not m:
                raise Malformed(f"malformed {key}")
            s["total_time_s"] = float(m[1])
        elif key == "total number of events":
            s["events"] = _int(value)
        elif key in ("events per second", "events/s (eps)"):
            s["eps"] = _float(value)
        elif self.section == "latency (ms)" or self.subsection == "response time":
            self._latency(key, value)

    def _latency(self, key: str, value: str) -> None:
        run = self.cur
        if key == "percentile stats":  # --percentile=0 prints "percentile stats: disabled"
            if run.percentile is None:
                run.percentile = 0.0
            return
        m = _PCT_KEY.match(key)
        if key in ("min", "avg", "max", "sum") or m:
            v = _MS.match(value)
            if not v:
                raise Malformed(f"malformed latency {key}")
            if m:
                pct = m[1] or m[2]
                run.summary[f"lat_p{pct}_ms"] = float(v[1])
                if run.percentile is None:
                    run.percentile = float(pct)
            else:
                run.summary[f"lat_{key}_ms"] = float(v[1])


def _plain(value: float | None) -> int | float | None:
    """95.0 -> 95 for attrs that sysbench prints as whole numbers (JSON stays readable)."""
    return int(value) if value is not None and value.is_integer() else value


def _float(text: str) -> float:
    if not IS_NUMBER.match(text):
        raise Malformed(f"not a number: {text!r}")
    return float(text)


def _int(text: str) -> int:
    if not text.isdigit():
        raise Malformed(f"not a whole number: {text!r}")
    return int(text)


def _count_rate(value: str) -> tuple[int, float]:
    m = _COUNT_RATE.match(value)
    if not m:
        raise Malformed("expected 'N (X per sec.)'")
    return int(m[1]), float(m[2])

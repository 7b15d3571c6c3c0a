"""fio: the JSON report of `fio --output-format=json` (or `json+`), one row per job per direction.

Reads the stdout of

    fio [--name=JOB --rw=... --bs=... --size=... --runtime=S --time_based --ioengine=... --fsync=N ...]
        --output-format=json|json+  [JOBFILE]

from fio 3.x (3.33 tested; latencies in ns: `lat_ns`, `clat_ns`, `slat_ns`) and fio 2.x (`lat`,
`clat`, `slat` in µs, converted). Lines fio prints before the JSON on stdout, e.g.
`note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1`,
are kept in `preamble`; the JSON starts at the first line beginning with `{` and ends at the
line holding only `}` (fio's pretty-printer puts the closing brace of the document alone at column 0).
Several documents one after another (several runs appended to one file) give runs 0, 1, 2 ...
`json+` only adds histogram `bins`, which are not read. The JSON does not depend on the locale.

Schema (one row per job and direction that did IO: `read`, `write`, `trim` with `total_ios > 0`,
and `sync` with `total_ios > 0`, i.e. jobs with `--fsync`/`--fdatasync`):

| column | dtype | unit / meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | when fio wrote the report (`timestamp_ms`, epoch: no zone needed) |
| host | string | the `host` argument |
| run | Int64 | JSON document index in the file, 0, 1, ... |
| jobname | string | `jobname` |
| groupid | Int64 | `groupid` (one row per group with `group_reporting`) |
| direction | string | `read`, `write`, `trim` or `sync` |
| error | Int64 | the job's `error` (errno, 0 = none) |
| iops | float64 | IO per second over the direction's runtime |
| bw_kib_per_s | float64 | `bw`: KiB/s (fio's `bw` is in 1024-byte units) |
| io_bytes | Int64 | bytes moved |
| total_ios | Int64 | IOs completed (fsync calls for `sync`) |
| runtime_ms | float64 | the direction's runtime, ms |
| lat_mean_us, lat_stddev_us, lat_min_us, lat_max_us | float64 | total latency (submit to completion), µs |
| clat_mean_us | float64 | completion latency, µs |
| slat_mean_us | float64 | submission latency, µs (NaN for sync engines: fio does not time it, `N: 0`) |
| clat_p50_us ... clat_p99_us, clat_p99_9_us | float64 | completion latency p50, p90, p95, p99, p99.9, µs |
| usr_cpu_pct, sys_cpu_pct | float64 | the job's CPU use (same on each of its rows) |

All latencies are in µs (fio 3 prints ns: divided by 1000) so they compare with iostat's `*_await_ms`
after /1000. For `sync` rows fio times only the whole fsync call (`sync.lat_ns`), so the `lat_*`
and `clat_*` columns both hold the fsync latency, and iops, bw, io_bytes, runtime are NaN. A
percentile fio did not print (`--percentile_list` without it, `clat_percentiles=0`) is NaN.

What it reads beside its rows: `EXTRAS` (below).
Tested on: tests/fixtures/fio/ (see README.md there).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._common import Extras, Lines, Source, coerce, empty_frame


@dataclass(frozen=True)
class FioExtras(Extras):
    """What fio reads beside its rows (see `_common.Extras`); `dropped_lines` counts the lines of a JSON
    document cut off at the end of the capture."""

    # as the first document prints it
    fio_version: str | None = None
    # fio runs (JSON documents) in the file
    runs: int = 0
    # the job file's [global] options, from the first document; {} without global options
    global_options: dict = field(default_factory=dict)
    # jobname -> its options
    job_options: dict = field(default_factory=dict)
    # fio's per-device utilisation, one record per disk and run: run, name, read_ios, write_ios,
    # read_merges, write_merges, read_ticks_ms, write_ticks_ms, in_queue_ms, util_pct
    disk_util: list[dict] = field(default_factory=list)
    # lines outside the JSON (fio's notes before it)
    preamble: list[str] = field(default_factory=list)


EXTRAS = FioExtras

KIND = "fio"
DIRECTIONS = ("read", "write", "trim", "sync")
PERCENTILES = {"50": 50.0, "90": 90.0, "95": 95.0, "99": 99.0, "99_9": 99.9}
_LAT_STATS = ("mean", "stddev", "min", "max")
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "run": "Int64",
    "jobname": "string",
    "groupid": "Int64",
    "direction": "string",
    "error": "Int64",
    "iops": "float64",
    "bw_kib_per_s": "float64",
    "io_bytes": "Int64",
    "total_ios": "Int64",
    "runtime_ms": "float64",
    **{f"lat_{stat}_us": "float64" for stat in _LAT_STATS},
    "clat_mean_us": "float64",
    "slat_mean_us": "float64",
    **{f"clat_p{name}_us": "float64" for name in PERCENTILES},
    "usr_cpu_pct": "float64",
    "sys_cpu_pct": "float64",
}
# Text fio may print on stdout outside the JSON starts with a word (`note:`, `fio:`, `Warning:`);
# anything else outside a document (indented keys, braces, binary) is a broken capture.
_PROSE = re.compile(r"^[A-Za-z]")
_NAN = float("nan")


def sniff(text: str) -> bool:
    """A JSON document starting at a line's beginning that carries fio's `"fio version"` key."""
    return (
        re.search(r"^\{", text, re.M) is not None
        and re.search(r'^\s*"fio version"\s*:', text, re.M) is not None
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse fio JSON output into one row per job and direction.

    Args:
        source: path, text stream or string (fio's stdout).
        host: host name for the `host` column.
        tz: unused: fio's timestamps are epoch seconds.

    Raises:
        ParseError: no fio JSON document, malformed JSON, a document that is not fio's, or stray
            non-prose text outside the JSON.
    """
    lines = Lines(source, KIND)
    preamble: list[str] = []
    docs: list[tuple[int, dict[str, Any]]] = []
    buf: list[str] = []  # the lines of the document being read
    start = 0
    first_text: tuple[int, str] | None = None
    for line_no, line in lines:
        if not buf:
            if not line.strip():
                continue
            if first_text is None:
                first_text = (line_no, line)
            if not line.startswith("{"):
                if not _PROSE.match(line):
                    raise lines.error(line_no, line, "text outside the fio JSON document")
                preamble.append(line)
                continue
            start = line_no
        buf.append(line)
        # the document's closing brace alone, or a whole document on one line (minified JSON)
        if line.rstrip() == "}" or (len(buf) == 1 and line.rstrip().endswith("}")):
            docs.append((start, _decode(lines, start, buf)))
            buf = []
    dropped = len(buf)  # the lines of a document the capture cut off while fio wrote it
    notes = []
    if dropped:
        notes.append(f"fio JSON document starting at line {start} cut off: {dropped} lines dropped")
    if not docs and first_text is not None and not dropped:
        raise lines.error(*first_text, "no fio JSON document (not --output-format=json?)")
    rows: list[dict[str, Any]] = []
    attrs: dict[str, Any] = {
        "fio_version": None,
        "runs": len(docs),
        "global_options": {},
        "job_options": {},
        "disk_util": [],
    }
    for run, (doc_line, doc) in enumerate(docs):
        try:
            _read_doc(run, doc, rows, attrs)
        except _Bad as exc:
            raise lines.error(doc_line, "{", f"fio JSON document {run}: {exc}") from None
    if rows:
        df = pd.DataFrame(rows)
        df["host"] = host
        df["timestamp"] = pd.to_datetime(df["timestamp"], unit="ms", utc=True)
        df = coerce(df, SCHEMA)
    else:
        df = empty_frame(SCHEMA)
    df.attrs.update(attrs, preamble=preamble, dropped_lines=dropped, notes=notes)
    return df


class _Bad(Exception):
    """A document that breaks fio's layout (the reason); `parse` names the document."""


def _decode(lines: Lines, start: int, buf: list[str]) -> dict[str, Any]:
    try:
        doc = json.loads("\n".join(buf))
    except json.JSONDecodeError as exc:
        at = min(exc.lineno, len(buf))
        raise lines.error(start + at - 1, buf[at - 1], f"malformed fio JSON: {exc.msg}") from None
    except RecursionError:
        raise lines.error(start, buf[0], "malformed fio JSON: nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise lines.error(start, buf[0], "JSON without a fio `jobs` array (not fio output)")
    return doc


def _read_doc(run: int, doc: dict[str, Any], rows: list[dict[str, Any]], attrs: dict[str, Any]) -> None:
    if attrs["fio_version"] is None and isinstance(doc.get("fio version"), str):
        attrs["fio_version"] = doc["fio version"]
        if isinstance(doc.get("global options"), dict):
            attrs["global_options"] = dict(doc["global options"])
    stamp = _num(doc, "timestamp_ms")
    if math.isnan(stamp):
        stamp = _num(doc, "timestamp") * 1000
    if not 0 <= stamp < 9e15 and not math.isnan(stamp):  # NaN: no timestamp; 9e15 ms is year 2255
        raise _Bad(f"timestamp_ms {stamp!r} out of range")
    for i, job in enumerate(doc["jobs"]):
        if not isinstance(job, dict) or not isinstance(job.get("jobname"), str):
            raise _Bad(f"job {i} has no jobname")
        if isinstance(job.get("job options"), dict):
            attrs["job_options"].setdefault(job["jobname"], dict(job["job options"]))
        common = {
            "timestamp": stamp if stamp == stamp else None,
            "run": run,
            "jobname": job["jobname"],
            "groupid": _int(job, "groupid"),
            "error": _int(job, "error"),
            "usr_cpu_pct": _num(job, "usr_cpu"),
            "sys_cpu_pct": _num(job, "sys_cpu"),
        }
        for direction in DIRECTIONS:
            part = job.get(direction)
            if part is None:
                continue
            if not isinstance(part, dict):
                raise _Bad(f"job {job['jobname']!r}: {direction} is not an object")
            if not _num(part, "total_ios") > 0:
                continue  # fio prints every direction; only those that did IO are rows
            rows.append({**common, "direction": direction, **_direction(direction, part)})
    for disk in doc.get("disk_util") or []:
        if not isinstance(disk, dict):
            raise _Bad("disk_util entry is not an object")
        attrs["disk_util"].append(
            {
                "run": run,
                "name": str(disk.get("name")),
                "read_ios": _int(disk, "read_ios"),
                "write_ios": _int(disk, "write_ios"),
                "read_merges": _int(disk, "read_merges"),
                "write_merges": _int(disk, "write_merges"),
                "read_ticks_ms": _int(disk, "read_ticks"),
                "write_ticks_ms": _int(disk, "write_ticks"),
                "in_queue_ms": _int(disk, "in_queue"),
                "util_pct": _num(disk, "util"),
            }
        )


def _direction(direction: str, part: dict[str, Any]) -> dict[str, Any]:
    """The metrics of one direction; latencies converted to µs whatever fio's generation."""
    lat, lat_scale = _lat_block(part, "lat")
    if direction == "sync":
        # fio times only the whole fsync call: its completion latency is its total latency.
        clat, clat_scale = lat, lat_scale
        slat, slat_scale = {}, 1.0
        out: dict[str, Any] = {"total_ios": _int(part, "total_ios")}
    else:
        clat, clat_scale = _lat_block(part, "clat")
        slat, slat_scale = _lat_block(part, "slat")
        out = {
            "iops": _num(part, "iops"),
            "bw_kib_per_s": _num(part, "bw"),
            "io_bytes": _int(part, "io_bytes"),
            "total_ios": _int(part, "total_ios"),
            "runtime_ms": _num(part, "runtime"),
        }
    for stat in _LAT_STATS:
        out[f"lat_{stat}_us"] = _num(lat, stat) * lat_scale
    out["clat_mean_us"] = _num(clat, "mean") * clat_scale
    out["slat_mean_us"] = _num(slat, "mean") * slat_scale
    pct = clat.get("percentile")
    if pct is not None and not isinstance(pct, dict):
        raise _Bad(f"{direction}: percentile is not an object")
    by_value: dict[float, float] = {}
    for key in pct or {}:
        try:
            by_value[round(float(key), 6)] = _num(pct, key) * clat_scale
        except ValueError:
            raise _Bad(f"{direction}: percentile key {key!r} is not a number") from None
    for name, p in PERCENTILES.items():
        out[f"clat_p{name}_us"] = by_value.get(p, _NAN)
    return out


def _lat_block(part: dict[str, Any], name: str) -> tuple[dict[str, Any], float]:
    """fio 3 `<name>_ns` (ns -> µs: /1000) or fio 2 `<name>` (already µs); {} if neither."""
    for key, scale in ((f"{name}_ns", 1e-3), (name, 1.0)):
        block = part.get(key)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise _Bad(f"{key} is not an object")
        if block.get("N") == 0:  # not measured (slat of sync engines): fio's 0.000 is no value
            return {}, scale
        return block, scale
    return {}, 1.0


def _num(obj: dict[str, Any], key: str) -> float:
    """A JSON number as float; NaN if the key is absent; `_Bad` for a value of another type."""
    value = obj.get(key)
    if value is None:
        return _NAN
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"{key} is {value!r}, not a number")
    return float(value)


def _int(obj: dict[str, Any], key: str) -> int | None:
    value = _num(obj, key)
    if math.isnan(value):
        return None
    if not value.is_integer() or abs(value) >= 2**63:
        raise _Bad(f"{key} is {obj.get(key)!r}, not an integer")
    return int(value)

"""perf_stat: the counter report `perf stat` writes to **stderr** (a capture holds that text).

Command lines read (any combination of `-a`, `-A`, `-I MSEC`, `-r N`, `-e EVENTS`):

- `perf stat [-a] [-A] [-I MSEC] [-r N] -- CMD 2> FILE` text, perf 5.x/6.x form:
  `1.36 msec task-clock  #  0.007 CPUs utilized`, unit in its own column;
- the perf 4.x form: `1.360000  task-clock (msec)  #  ...` (unit in parentheses after the name) and
  the perf 3.x form `2.164836 task-clock  # ...` (clock events in msec, no unit printed);
- `perf stat -x, ...`: CSV `[time,][CPU0,]value,unit,event,run-time,pct-running,metric-value,metric-unit`
  (older perfs print only the first 3 or 5 of those fields).

With `-I` the first column is the time in seconds since the start; with `-a -A` a `CPU0` column comes
next (`--per-socket`/`--per-core` ids `S0`, `S0-D0-C1` are kept in `cpu`, their cpu count skipped).
`<not supported>` (no PMU, as in most VMs) and `<not counted>` give value NaN and say so in `status`.
Multiplexing `(45.23%)` (perf 3.x: `[45.23%]`) goes to `running_pct`; perf prints no percentage when
the counter ran the whole time, so a counted row without one is 100. `-r N` spreads `( +- 1.34% )`
are not kept (attrs `runs` says the values are means). Lines before the first perf line (the target's
own stderr, e.g. dd's `records in`) are skipped and counted; after it, an unknown line is a ParseError.

en_US grouping (`4,010.58`, `32,840`) is read as such. Decimal-comma locales (de_DE `143,38 msec`,
`#  0,754 CPUs`, `0,190115028 seconds`, CSV `1,10,msec,...`) raise ParseError "capture not taken under
LC_ALL=C": a grouped `1.234` there would otherwise be read as 1.234.

Schema (one row per interval, cpu and event):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| interval_s | float64 | `-I` time since start, s; NaN without `-I` |
| cpu | string | `CPU0`... with `-A` (or an aggregation id); NA otherwise |
| event | string | event name as printed (`task-clock`, `cycles:u`, `cpu_core/.../`) |
| value | float64 | the count (unit in `unit`); NaN when not supported / not counted |
| unit | string | `msec` for clock events, else empty |
| running_pct | float64 | share of the time the counter was scheduled (multiplexing); NaN if not counted |
| status | string | `counted`, `not supported`, `not counted` |
| metric_value | float64 | perf's derived metric after `#` (`0.007`), NaN if none |
| metric_unit | string | its text (`CPUs utilized`, `K/sec`, `insn per cycle`) |
| ipc | float64 | on `instructions` rows: instructions / cycles of the same interval and cpu |

IPC is a derived column (not attrs) so it follows intervals and CPUs; NaN where either counter is
missing, not counted or zero. attrs: `header_generation` (`text`/`csv`), `target` (`'sleep 0.2'`,
`system wide`), `runs`, `elapsed_s`, `user_s`, `sys_s`, `preamble_lines`, `notes` (perf's advice
lines after the footer), `dropped_lines` (a last line cut mid-write).
Tested on: tests/fixtures/perf_stat/ (see README.md there).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ._chunks import Interned, has_cr, text_chunks, walk_text
from ._common import Lines, Source, coerce, empty_frame, feed_lines

KIND = "perf_stat"
SCHEMA: dict[str, str] = {
    "host": "string",
    "interval_s": "float64",
    "cpu": "string",
    "event": "string",
    "value": "float64",
    "unit": "string",
    "running_pct": "float64",
    "status": "string",
    "metric_value": "float64",
    "metric_unit": "string",
    "ipc": "float64",
}
_LOCALE = "decimal comma: capture not taken under LC_ALL=C"
_HEADER = re.compile(r"^Performance counter stats for (.*?)(?:\s+\((\d+) runs\))?:?$")
_INTERVAL_HEADER = re.compile(r"^#\s+time\b")
_FOOTER = re.compile(
    r"^(\d+(?:[.,]\d+)?)(?:\s+\+-\s+[\d.,]+)?\s+seconds\s+(time elapsed|user|sys)"
    r"(?:\s+\(\s*\+-\s*[\d.,]+%\s*\))?$"
)
_TIME = re.compile(r"^\d+\.\d{9}$")  # perf prints the -I time as %lu.%09lu in every locale
_AGGR = re.compile(r"^(?:CPU\d+|S\d+(?:-D\d+)?(?:-C\d+)?|N\d+)$")
_PLAIN = re.compile(r"^\d+(?:\.\d+)?$")
_GROUPED = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")  # en_US thousands separators
_DOT_GROUPED = re.compile(r"^\d{1,3}(?:\.\d{3})+$")  # de_DE grouping of an integer count
_EVENT = re.compile(r"^[A-Za-z_][^\s]*$")
_UNIT = re.compile(r"^[A-Za-z%/]*$")
_OLD_UNIT = re.compile(r"^\((\w+)\)$")
_PCT_TAIL = re.compile(r"\s*[(\[]\s*(\d+(?:[.,]\d+)?)%\s*[)\]]\s*$")
_SPREAD = re.compile(r"\(\s*\+-\s*[\d.,]+%\s*\)")
_METRIC = re.compile(r"^(-?[\d.,]+|nan|inf|-inf)\s*(.*)$")
_DE_CSV = re.compile(r",[A-Za-z][^,]*,\d+,\d{1,3},\d{2}(?:,|$)")  # run-time, then pct `100,00`
_NOT = {"<not supported>": "not supported", "<not counted>": "not counted"}
# The common `-I` line of perf 5.x/6.x under LC_ALL=C, read by one regex: time, a plain count (or
# `<not supported>`), an optional unit, the event, an optional `# value unit` metric whose words are
# one space apart (as `_text_row` joins them). Anything else (a cpu column, a percentage, grouping,
# spreads, a count with a point but no unit) goes through `_text_row`, which knows every form.
_FAST_ROW = re.compile(
    r"^(\d+\.\d{9}) +(?:(\d+(?:\.\d+)?)|(<not supported>)) +(?:([A-Za-z%/]+) +)?([A-Za-z_][^\s#(\[]*)"
    r"(?: +#(?: +(-?\d+(?:\.\d+)?)(?: +([^\s(\[]+(?: [^\s(\[]+)*))?)?)?$"
)

# `_FAST_ROW` over a whole chunk (leading/trailing spaces as `strip` removes them): `findall` gives one
# tuple per row; with the `# time` headers they must account for every line. Stricter than
# `_FAST_ROW` (ASCII only, in the classes `_EVENT_CH`/`_WORD_CH`: `[^\s#(\[]`, `[^\s(\[]`), with
# possessive quantifiers: Python's regex engine costs per character tried, and backtracking over
# perf's column padding doubled it. A count with a point must have a unit (the lookahead): without one
# it is a perf 3.x msec clock or a de_DE count, which `_text_row` decides (the chunk is walked).
_EVENT_CH = r"[\x21\x22\x24-\x27\x29-\x5a\x5c-\x7e]"
_WORD_CH = r"[\x21-\x27\x29-\x5a\x5c-\x7e]"
_CHUNK_ROW = re.compile(
    r"^ *([0-9]+\.[0-9]{9}) ++(?:([0-9]+(?:\.[0-9]+(?= ++[A-Za-z%/]+ ++[A-Za-z_]))?)|<not supported>)"
    r" ++(?:([A-Za-z%/]+) ++)?"
    rf"([A-Za-z_]{_EVENT_CH}*+)"
    rf"(?: ++#(?: ++(-?[0-9]+(?:\.[0-9]+)?)(?: ++({_WORD_CH}++(?: {_WORD_CH}++)*+))?)?)? *\n",
    re.MULTILINE,
)
# after a newline: the regex engine then jumps from one `\n#` to the next instead of trying every character
_CHUNK_HEAD = re.compile(r"\n#[ \t]+time\b[^\n]*")
_STRING_COLS = ("cpu", "event", "unit", "status", "metric_unit")


def sniff(text: str) -> bool:
    """A `perf stat` report header, its `-I` header, or `-x,` rows within the first lines."""
    lines = [ln.strip() for ln in text[:8192].splitlines()[:60] if ln.strip()]
    if any(_HEADER.match(ln) for ln in lines) or any(
        _INTERVAL_HEADER.match(ln) and "counts" in ln for ln in lines
    ):
        return True
    rows = [ln for ln in lines if ln.count(",") >= 2]
    good = sum(_csv_row(ln) is not None or _DE_CSV.search(ln) is not None for ln in rows)
    return bool(rows) and good >= max(1, len(rows) // 2)


class _Report:
    """State of one walk over a capture: the mode, the rows so far and the attrs."""

    def __init__(self) -> None:
        self.mode: str | None = None
        self.cols: dict[str, list] = {k: [] for k in SCHEMA if k not in ("host", "ipc")}
        self.attrs: dict[str, object] = {"preamble_lines": 0, "notes": [], "dropped_lines": 0}
        self.first_preamble: tuple[int, str] | None = None
        self.after_footer = False

    def add(self, row: tuple) -> None:
        for key, val in zip(self.cols, row, strict=True):
            self.cols[key].append(val)

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        s = line.strip()
        if not s:
            return
        m = _FAST_ROW.match(s) if self.mode == "text" and not self.after_footer else None
        # a count with a point and no unit is a perf 3.x msec clock or a de_DE count: `_text_row` decides
        if m is not None and (m[2] is None or m[4] is not None or "." not in m[2]):
            self._fast_row(m)
            return
        head = _HEADER.match(s)
        if head:
            self.mode, self.after_footer = "text", False
            self.attrs["target"] = head[1].strip("'")
            if head[2]:
                self.attrs["runs"] = int(head[2])
            return
        if s.startswith("#"):
            if s.startswith("# started on"):
                self.attrs["started"] = s[len("# started on") :].strip()
            elif _INTERVAL_HEADER.match(s) and self.mode is None:
                self.mode = "text"
            elif self.mode is None:
                self._preamble(line_no, line)
            return  # a metric continuation line (`#  0.21  stalled cycles per insn`)
        foot = _FOOTER.match(s)
        if foot and self.mode == "text":
            if "," in foot[1]:
                raise lines.error(line_no, line, _LOCALE)
            key = {"time elapsed": "elapsed_s", "user": "user_s", "sys": "sys_s"}[foot[2]]
            self.attrs[key] = float(foot[1])
            self.after_footer = True
            return
        if self.after_footer:
            self.attrs["notes"].append(s)  # perf's advice (`Some events weren't counted...`)
            return
        if self.mode == "text":
            self.add(_text_row(s, lines, line_no, line))
            return
        if _DE_CSV.search(s):
            raise lines.error(line_no, line, _LOCALE)
        row = _csv_row(s)
        if row is not None:
            self.mode = "csv"
            self.add(row)
        elif self.mode == "csv":
            raise lines.error(line_no, line, "not a `perf stat -x,` row")
        else:
            self._preamble(line_no, line)

    def _fast_row(self, m: re.Match[str]) -> None:
        """The row `_text_row` gives for a line `_FAST_ROW` matched, without its token walk."""
        c = self.cols
        counted = m[2] is not None
        metric = m[6]
        c["interval_s"].append(float(m[1]))
        c["cpu"].append(None)
        c["event"].append(m[5])
        c["value"].append(float(m[2]) if counted else math.nan)
        c["unit"].append(m[4])
        c["running_pct"].append(100.0 if counted else math.nan)
        c["status"].append("counted" if counted else "not supported")
        c["metric_value"].append(float(metric) if metric is not None else math.nan)
        c["metric_unit"].append(m[7])

    def _preamble(self, line_no: int, line: str) -> None:
        self.attrs["preamble_lines"] += 1  # type: ignore[operator]
        if self.first_preamble is None:
            self.first_preamble = (line_no, line)

    def cut(self, line_no: int, line: str, lines: Lines) -> None:
        self.attrs["dropped_lines"] = 1  # its numbers may be cut: never read a prefix as a value


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a `perf stat` capture (its stderr) into one row per interval, cpu and event.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (perf stat prints no wall-clock time); kept for the common parser signature.

    Raises:
        ParseError: no perf stat report in the text, a malformed line after the report began, or a
            decimal-comma locale.
    """
    rep = _Report()
    segments = _Segments()
    lines = _fast(source, rep, segments)
    if lines is None:  # a stream, or CR line ends: the line walk over the whole capture
        rep, segments = _Report(), _Segments()
        lines = feed_lines(source, KIND, rep.feed, rep.cut)
    segments.flush(rep)
    if rep.mode is None and rep.first_preamble is not None:
        raise lines.error(
            *rep.first_preamble,
            "not a perf stat capture (no `Performance counter stats` header, no -x, rows)",
        )
    attrs = {"header_generation": rep.mode, **rep.attrs}
    cols = segments.columns()
    n = len(cols["interval_s"])
    if not n:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    data: dict[str, object] = {"host": pd.array([host] * n, dtype="string")}  # SCHEMA's order: no copy
    data.update({k: segments.strings[k].array(v) if k in segments.strings else v for k, v in cols.items()})
    data["ipc"] = _ipc(cols, list(segments.strings["event"].index))
    df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    df.attrs.update(attrs)
    return df


class _Segments:
    """Rows as arrays, in file order: chunks read by `_CHUNK_ROW`, and the line walk's rows between
    them (flushed from `_Report.cols`). String columns are codes into one `Interned` table each."""

    def __init__(self) -> None:
        self.strings = {k: Interned() for k in _STRING_COLS}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in SCHEMA if k not in ("host", "ipc")}

    def flush(self, rep: _Report) -> None:
        """Move the line walk's rows so far into the arrays."""
        if not rep.cols["event"]:
            return
        for k, v in rep.cols.items():
            self.parts[k].append(
                self.strings[k].codes(v) if k in self.strings else np.array(v, dtype=np.float64)
            )
            v.clear()

    def add_chunk(self, found: list[tuple[str, ...]]) -> None:
        """Rows of `_CHUNK_ROW` matches, as `_Report._fast_row` makes them."""
        times, values, units, events, mvals, munits = zip(*found, strict=True)
        counted = np.fromiter(map(bool, values), dtype=bool, count=len(values))
        n = len(times)
        # the groups are digit runs checked by the regex: numpy's text reader converts them at once
        # (empty groups, `<not supported>` counts and absent metrics, are skipped by the separator)
        value = np.full(n, np.nan)
        value[counted] = _floats(values)
        has_metric = np.fromiter(map(bool, mvals), dtype=bool, count=n)
        metric = np.full(n, np.nan)
        metric[has_metric] = _floats(mvals)
        st = self.strings
        p = self.parts
        p["interval_s"].append(_floats(times))
        p["cpu"].append(np.full(n, -1, dtype=np.int64))
        p["event"].append(st["event"].codes(events))
        p["value"].append(value)
        p["unit"].append(st["unit"].codes(units, empty_is_na=True))
        p["running_pct"].append(np.where(counted, 100.0, np.nan))
        status = st["status"]
        p["status"].append(np.where(counted, status.code("counted"), status.code("not supported")))
        p["metric_value"].append(metric)
        p["metric_unit"].append(st["metric_unit"].codes(munits, empty_is_na=True))

    def columns(self) -> dict[str, np.ndarray]:
        return {
            k: np.concatenate(v) if v else np.empty(0, dtype=np.int64 if k in self.strings else np.float64)
            for k, v in self.parts.items()
        }


def _floats(texts: tuple[str, ...]) -> np.ndarray:
    """Numbers (checked by a regex) as float64, exactly as `float` reads them; empty texts skipped."""
    return np.fromstring(" ".join(texts), dtype=np.float64, sep=" ")


def _fast(source: Source, rep: _Report, segments: _Segments) -> Lines | None:
    """Read a path or string chunk by chunk: a chunk of only `-I` rows and `# time` headers (the body
    of a `perf stat -I` capture) by one `findall`, any other chunk by the line walk; None for a stream
    or a capture with CR line ends (the caller walks it whole)."""
    chunks = text_chunks(source)
    if chunks is None:
        return None
    lines = Lines(source, KIND)
    first_no = 1
    try:
        for chunk in chunks:
            if has_cr(chunk):
                return None
            body = chunk[: chunk.rfind("\n") + 1]  # a cut last line is the line walk's
            start = 0
            if rep.mode is None:  # the walk finds the header (and skips a preamble) line by line
                while rep.mode is None and start < len(body):
                    end = body.index("\n", start) + 1
                    rep.feed(first_no + body.count("\n", 0, start), body[start : end - 1], lines)
                    start = end
            rest = body[start:]
            if rest and _fast_chunk(rest, rep, segments):
                start = len(body)
            walk_text(chunk[start:], first_no + chunk.count("\n", 0, start), lines, rep.feed, rep.cut)
            first_no += chunk.count("\n")
    except OSError:
        return None  # the line walk raises it as a ParseError
    return lines


def _fast_chunk(text: str, rep: _Report, segments: _Segments) -> bool:
    """Add the rows of `text` if it is only `-I` rows and `# time` headers in the text mode; else False."""
    if rep.mode != "text" or rep.after_footer:
        return False
    found = _CHUNK_ROW.findall(text)
    # matches start at a line start and end at a newline: equal counts mean no line was skipped
    if not found or len(found) + len(_CHUNK_HEAD.findall("\n" + text)) != text.count("\n"):
        return False
    segments.flush(rep)
    segments.add_chunk(found)
    return True


def _ipc(cols: dict[str, np.ndarray], events: list[str]) -> np.ndarray:
    """instructions / cycles per (interval, cpu), on the instructions row (`events`: the event codes)."""
    out = np.full(len(cols["event"]), np.nan)
    base = [ev.split(":")[0] for ev in events]
    cycle_codes = [i for i, b in enumerate(base) if b in ("cycles", "cpu-cycles")]
    insn_codes = [i for i, b in enumerate(base) if b == "instructions"]
    value = cols["value"]
    is_cycles = np.isin(cols["event"], cycle_codes) & (value > 0)
    is_insn = np.isin(cols["event"], insn_codes)
    if not is_cycles.any() or not is_insn.any():
        return out
    # only the cycles and instructions rows: a dict keyed as before (NaN intervals match each other)
    times, cpus = cols["interval_s"].tolist(), cols["cpu"].tolist()
    cycles = {(repr(times[i]), cpus[i]): value[i] for i in np.flatnonzero(is_cycles).tolist()}
    for i in np.flatnonzero(is_insn).tolist():
        key = (repr(times[i]), cpus[i])
        if key in cycles:
            out[i] = value[i] / cycles[key]
    return out


def _value(tok: str, lines: Lines, line_no: int, line: str) -> float:
    if _PLAIN.match(tok):
        return float(tok)
    if _GROUPED.match(tok):
        return float(tok.replace(",", ""))
    if "," in tok:
        raise lines.error(line_no, line, _LOCALE)
    raise lines.error(line_no, line, f"not a perf stat value: {tok!r}")


def _text_row(s: str, lines: Lines, line_no: int, line: str) -> tuple:
    """One text event line -> (interval_s, cpu, event, value, unit, pct, status, mval, munit)."""
    for text, _ in _NOT.items():
        s = s.replace(text, text.replace(" ", "_"))
    running = math.nan
    tail = _PCT_TAIL.search(s)
    if tail:
        if "," in tail[1]:
            raise lines.error(line_no, line, _LOCALE)
        running = float(tail[1])
        s = s[: tail.start()]
    left, _, right = _SPREAD.sub(" ", s).partition("#")
    toks = left.split()
    interval = math.nan
    if len(toks) >= 2 and _TIME.match(toks[0]) and (_is_value(toks[1]) or _AGGR.match(toks[1])):
        interval = float(toks.pop(0))
    cpu = None
    if toks and _AGGR.match(toks[0]):
        cpu = toks.pop(0)
        if not cpu.startswith("CPU") and len(toks) >= 2 and toks[0].isdigit() and _is_value(toks[1]):
            toks.pop(0)  # --per-socket/--per-core: how many CPUs the aggregate covers
    if toks and "," in toks[0] and re.match(r"^[\d.,]+$", toks[0]) and not _GROUPED.match(toks[0]):
        raise lines.error(line_no, line, _LOCALE)  # de_DE `143,38` or `1.234,56`
    if len(toks) < 2 or not _is_value(toks[0]):
        raise lines.error(line_no, line, "not a perf stat event line")
    raw = toks.pop(0)
    old_unit = None
    if len(toks) >= 2 and _OLD_UNIT.match(toks[-1]):
        old_unit = _OLD_UNIT.match(toks.pop())[1]  # type: ignore[index]
    if len(toks) == 1:
        unit, event = old_unit or "", toks[0]
    elif len(toks) == 2 and old_unit is None and _UNIT.match(toks[0]):
        unit, event = toks
    else:
        raise lines.error(line_no, line, "not a perf stat event line")
    if not _EVENT.match(event):
        raise lines.error(line_no, line, f"not a perf stat event name: {event!r}")
    status = _NOT.get(raw.replace("_", " "), "counted")
    if status != "counted":
        value, running = math.nan, math.nan
    else:
        if not unit and _DOT_GROUPED.match(raw) and not event.endswith("clock"):
            raise lines.error(line_no, line, _LOCALE)  # C prints counts without a decimal point
        value = _value(raw, lines, line_no, line)
        if math.isnan(running):
            running = 100.0  # perf omits the percentage when the counter ran all the time
        if not unit and event.endswith("clock") and "." in raw:
            unit = "msec"  # perf 3.x printed clock events in msec without saying so
    mval, munit = math.nan, None
    right = right.strip()
    if right:
        m = _METRIC.match(right)
        if m:
            if "," in m[1]:
                raise lines.error(line_no, line, _LOCALE)  # perf never groups metric values
            try:
                mval = float(m[1])
            except ValueError:
                raise lines.error(line_no, line, f"not a metric value: {m[1]!r}") from None
            munit = " ".join(m[2].split()) or None
        else:
            munit = " ".join(right.split())
    return interval, cpu, event, value, unit or None, running, status, mval, munit


def _is_value(tok: str) -> bool:
    return tok in ("<not_supported>", "<not_counted>") or bool(_PLAIN.match(tok) or _GROUPED.match(tok))


def _csv_row(s: str) -> tuple | None:
    """One `-x,` row -> the same tuple as `_text_row`, or None when the line is no such row."""
    f = [x.strip() for x in s.split(",")]
    interval = math.nan
    if len(f) >= 4 and _TIME.match(f[0]) and (f[1] in _NOT or _PLAIN.match(f[1]) or _AGGR.match(f[1])):
        interval = float(f.pop(0))
    cpu = None
    if f and _AGGR.match(f[0]):
        cpu = f.pop(0)
        if not cpu.startswith("CPU") and len(f) >= 4 and f[0].isdigit():
            f.pop(0)
    if not 3 <= len(f) <= 7:
        return None
    f += [""] * (7 - len(f))
    raw, unit, event, run, pct, mval, munit = f
    if not (raw in _NOT or _PLAIN.match(raw)) or not _UNIT.match(unit) or not _EVENT.match(event):
        return None
    if not re.match(r"^\d*$", run) or not re.match(r"^(\d+(\.\d+)?)?$", pct):
        return None
    if mval and not re.match(r"^-?\d+(\.\d+)?(e[-+]?\d+)?$|^-?nan$|^-?inf$", mval):
        return None
    status = _NOT.get(raw, "counted")
    value = math.nan if status != "counted" else float(raw)
    running = float(pct) if pct and status == "counted" else math.nan
    return (
        interval,
        cpu,
        event,
        value,
        unit or None,
        running,
        status,
        float(mval) if mval else math.nan,
        munit or None,
    )

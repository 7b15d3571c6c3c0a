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
are not kept (`runs` says the values are means). Lines before the first perf line (the target's
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

IPC is a derived column (not in `EXTRAS`) so it follows intervals and CPUs; NaN where either counter
is missing, not counted or zero. What it reads beside its rows: `EXTRAS` (below).
Tested on: tests/fixtures/perf_stat/ (see README.md there).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._chunks import Interned, byte_windows, has_cr, text_chunks, walk_text
from ._common import Extras, Lines, Source, coerce, empty_frame, feed_lines


@dataclass(frozen=True)
class PerfStatExtras(Extras):
    """What perf_stat reads beside its rows (see `_common.Extras`); `notes` holds perf's advice lines
    after the footer."""

    # `text` or `csv` (`-x,`)
    header_generation: str | None = None
    # what perf measured: `'sleep 0.2'`, `system wide`
    target: str | None = None
    # `-r N`: the values are means of N runs
    runs: int | None = None
    # `# started on ...` as printed
    started: str | None = None
    # the footer's `seconds time elapsed`, `user`, `sys`
    elapsed_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    # lines before the first perf line (the target's own stderr), skipped
    preamble_lines: int = 0


EXTRAS = PerfStatExtras

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

# A chunk of `-I` rows and `# time` headers is read at once as bytes (`_chunk_rows`): numpy splits it
# into space-separated tokens and checks each row against `_FAST_ROW`'s grammar token by token, a bit
# stricter: only ASCII, the event and the metric's words in `_EVENT_CH`/`_WORD_CH` (`[^\s#(\[]`,
# `[^\s(\[]`), numbers of at most 15 digits (converted exactly from their digits), and a count with a
# point only before a unit and an event (without one it is a perf 3.x msec clock or a de_DE count,
# which `_text_row` decides). A chunk with any other line is walked line by line.
_CHUNK_HEAD = re.compile(r"#[ \t]+time\b")
_EVENT_CH = r"[\x21\x22\x24-\x27\x29-\x5a\x5c-\x7e]"
_WORD_CH = r"[\x21-\x27\x29-\x5a\x5c-\x7e]"
_UNIT_TEXT = re.compile(r"[A-Za-z%/]+")
_EVENT_TEXT = re.compile(rf"[A-Za-z_]{_EVENT_CH}*")
_WORDS_TEXT = re.compile(rf"{_WORD_CH}+(?: {_WORD_CH}+)*")
_SOLID = bytes(0 if b in b" \n" else 1 for b in range(256))  # `bytes.translate`: 1 in a token
# spaces around a chunk's bytes: its fixed-width windows (17 bytes up to a number's end, `<not supported>`,
# 8-byte words from a text's start) stay inside
_PAD = 32
_BLOCK = 8
_NOT_SUPPORTED = np.frombuffer(b"<not supported>", dtype=np.uint8)
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
    # in SCHEMA's order: no copy
    data: dict[str, object] = {"host": pd.array([host], dtype="string").take(np.zeros(n, dtype=np.intp))}
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

    def add_rows(self, cols: dict[str, np.ndarray]) -> None:
        """Rows read by `_chunk_rows`, after the line walk's rows before them."""
        for k, v in cols.items():
            self.parts[k].append(v)

    def columns(self) -> dict[str, np.ndarray]:
        return {
            k: np.concatenate(v) if v else np.empty(0, dtype=np.int64 if k in self.strings else np.float64)
            for k, v in self.parts.items()
        }


def _fast(source: Source, rep: _Report, segments: _Segments) -> Lines | None:
    """Read a path or string a block of chunks at a time: a block of only `-I` rows and `# time` headers
    (the body of a `perf stat -I` capture) at once (`_chunk_rows`), any other by the line walk; None for
    a stream or a capture with CR line ends (the caller walks it whole)."""
    chunks = text_chunks(source)
    if chunks is None:
        return None
    lines = Lines(source, KIND)
    first_no = 1
    try:
        for chunk in _blocks(chunks):
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
            n_lines = chunk.count("\n")
            if rest and _fast_chunk(rest, rep, segments):
                start = len(body)
            line_no = first_no + (n_lines if start == len(body) else chunk.count("\n", 0, start))
            walk_text(chunk[start:], line_no, lines, rep.feed, rep.cut)
            first_no += n_lines
    except OSError:
        return None  # the line walk raises it as a ParseError
    return lines


def _blocks(chunks: Iterator[str]) -> Iterator[str]:
    """Chunks joined `_BLOCK` at a time: numpy's cost per call is then spread over more rows."""
    batch: list[str] = []
    for chunk in chunks:
        batch.append(chunk)
        if len(batch) == _BLOCK:
            yield "".join(batch)
            batch.clear()
    if batch:
        yield "".join(batch)


def _fast_chunk(text: str, rep: _Report, segments: _Segments) -> bool:
    """Add the rows of `text` if it is only `-I` rows and `# time` headers in the text mode; else False."""
    if rep.mode != "text" or rep.after_footer:
        return False
    cols = _chunk_rows(text, segments.strings)
    if cols is None:
        return False
    segments.flush(rep)
    segments.add_rows(cols)
    return True


def _chunk_rows(text: str, strings: dict[str, Interned]) -> dict[str, np.ndarray] | None:
    """The rows of `text` (whole lines) as `_Report._fast_row` makes them (string columns as codes of
    `strings`), if every line is a `# time` header (`_CHUNK_HEAD`) or a row of the grammar of
    `_FAST_ROW`, tokens separated by spaces: time, count (or `<not supported>`), unit (optional: a
    count with a point needs one), event, then optionally `#`, the metric value and its words (one
    space apart). None otherwise."""
    if not text.isascii():
        return None
    pad = b" " * _PAD
    raw = b"".join((pad, text.encode("ascii"), pad))
    buf = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate(([_PAD], ends[:-1] + 1))
    head = buf[starts] == ord("#")
    heads = zip(starts[head] - _PAD, ends[head] - _PAD, strict=True)
    if head.all() or not all(_CHUNK_HEAD.match(text, start, end) for start, end in heads):
        return None
    # tokens: runs of bytes other than space and newline (the pads make them start and end inside)
    solid = np.frombuffer(raw.translate(_SOLID), dtype=bool)
    edges = np.flatnonzero(solid[1:] != solid[:-1]) + 1
    tok_start, tok_end = edges[0::2], edges[1::2]
    if not len(tok_start):
        return None
    # the rows: k their first token, n their token count
    k = np.searchsorted(tok_start, starts[~head])
    n = np.searchsorted(tok_start, ends[~head]) - k

    def token(j: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Whether each row has a token `j`, and its start and end."""
        at = np.minimum(k + j, len(tok_start) - 1)
        return j < n, tok_start[at], tok_end[at]

    def hash_at(j: np.ndarray) -> np.ndarray:
        has, start, end = token(j)
        return has & (end - start == 1) & (buf[start] == ord("#"))

    has, start, end = token(1)
    not_sup = np.zeros(len(k), dtype=bool)
    maybe = np.flatnonzero(has & (end - start == 4) & (buf[start] == ord("<")))
    after = np.minimum(k[maybe] + 2, len(tok_start) - 1)  # if the bytes match: `supported>`, all of it
    not_sup[maybe] = (byte_windows(buf, start[maybe], len(_NOT_SUPPORTED)) == _NOT_SUPPORTED).all(axis=1) & (
        tok_end[after] - tok_start[after] == 10
    )
    i = 2 + not_sup  # the token after the count: the unit if two tokens come before `#` (or the end)
    with_unit = (n > i + 1) & ~hash_at(i + 1)
    tail = i + 1 + with_unit  # where `#` may be
    n_tail = n - tail
    if not ((n > i) & ((n_tail == 0) | hash_at(tail))).all():
        return None
    counted = ~not_sup
    count, mval = k[counted] + 1, (k + tail + 1)[n_tail >= 2]
    # the rows of an interval share its time: each run of one text is read once
    new = np.ones(len(k), dtype=bool)
    length = tok_end[k] - tok_start[k]
    width = int(length.max())
    if width > 17:
        return None  # 16 digits at least
    windows = byte_windows(buf, tok_end[k] - width, width)
    times = np.where(np.arange(width) >= (width - length)[:, None], windows, 0)
    new[1:] = (times[1:] != times[:-1]).any(axis=1)
    interval = _number(buf, tok_start[k][new], tok_end[k][new], signed=False)
    value = _number(buf, tok_start[count], tok_end[count], signed=False)
    metric = _number(buf, tok_start[mval], tok_end[mval], signed=True)
    if interval is None or value is None or metric is None:
        return None
    # the time has nine decimals; a count with a point is a perf 3.x clock or de_DE without a unit
    if (interval[1] != 9).any() or (value[1][~with_unit[counted]] != 0).any():
        return None
    interval_s = interval[0][np.cumsum(new) - 1]
    unit, event = (k + i)[with_unit], k + i + with_unit
    worded = n_tail >= 3
    words_from, words_to = (k + tail + 2)[worded], (k + n - 1)[worded]
    events = _codes(strings["event"], _EVENT_TEXT, buf, tok_start[event], tok_end[event])
    units = _codes(strings["unit"], _UNIT_TEXT, buf, tok_start[unit], tok_end[unit])
    metric_units = _codes(strings["metric_unit"], _WORDS_TEXT, buf, tok_start[words_from], tok_end[words_to])
    if events is None or units is None or metric_units is None:
        return None
    status = strings["status"]
    return {
        "interval_s": interval_s,
        "cpu": np.full(len(k), -1, dtype=np.int64),
        "event": events,
        "value": _scatter(value[0], counted, np.nan),
        "unit": _scatter(units, with_unit, -1),
        "running_pct": np.where(counted, 100.0, np.nan),
        "status": np.where(counted, status.code("counted"), status.code("not supported")),
        "metric_value": _scatter(metric[0], n_tail >= 2, np.nan),
        "metric_unit": _scatter(metric_units, worded, -1),
    }


def _scatter(values: np.ndarray, where: np.ndarray, missing: float) -> np.ndarray:
    """`values` at the places `where` is true, `missing` elsewhere."""
    out = np.full(len(where), missing, dtype=values.dtype)
    out[where] = values
    return out


def _number(
    buf: np.ndarray, start: np.ndarray, end: np.ndarray, *, signed: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """`float` of the tokens `buf[start:end]` and their decimal places, if each is `[0-9]+(\\.[0-9]+)?`
    (with `-?` first if `signed`) of at most 15 digits; else None. The value comes from the digits:
    as one integer (exact in float64), divided by a power of ten, it rounds as `float` rounds the text."""
    if not len(start):
        return np.empty(0), np.empty(0, dtype=np.int64)
    length = end - start
    width = int(length.max())
    if width > 17:
        return None  # 16 digits at least
    col = np.arange(width)
    window = byte_windows(buf, end - width, width)  # right-aligned: a token's last byte in the last column
    lead = width - length  # the column of its first byte
    digit = (col >= lead[:, None]) & (window - ord("0") < 10)
    point = (col >= lead[:, None]) & (window == ord("."))
    sign = window[np.arange(len(start)), lead] == ord("-") if signed else np.zeros(len(start), dtype=bool)
    n_digits, n_points = digit.sum(axis=1), point.sum(axis=1)
    at_point = np.where(n_points > 0, point.argmax(axis=1), -1)
    # only digits, the sign and one point at most, with a digit before it (not the sign) and after it
    if (n_digits + n_points + sign != length).any() or (n_points > 1).any() or (n_digits > 15).any():
        return None
    if (n_digits == 0).any() or (
        (n_points > 0) & ((at_point <= lead + sign) | (at_point == width - 1))
    ).any():
        return None
    places = np.where(n_points > 0, width - 1 - at_point, 0)
    # the digits as one integer, the point read as a 0 digit (then taken out): at most 17 digits
    whole = np.where(digit, window & 15, 0).astype(np.int64) @ 10 ** np.arange(width - 1, -1, -1)
    low = whole % 10**places
    mantissa = np.where(n_points > 0, (whole - low) // 10 + low, whole)  # < 10**15: exact as a float
    number = mantissa / 10.0**places
    return np.where(sign, -number, number), places


def _codes(
    interned: Interned, grammar: re.Pattern[str], buf: np.ndarray, start: np.ndarray, end: np.ndarray
) -> np.ndarray | None:
    """`interned` codes of the texts `buf[start:end]` (ASCII), told apart by a hash of their bytes;
    None if one does not match `grammar` or two texts share a hash (then the chunk is walked)."""
    if not len(start):
        return np.empty(0, dtype=np.int64)
    words = -(-int((end - start).max()) // 8)
    window = byte_windows(buf, start, 8 * words)
    window[np.arange(8 * words) >= (end - start)[:, None]] = 0
    columns = window.view(np.uint64)
    key = columns[:, 0].copy()
    for j in range(1, words):
        key = key * np.uint64(0x9E3779B97F4A7C15) + columns[:, j]  # wraps around: a hash
    codes, uniques = pd.factorize(key)
    sample = np.empty(len(uniques), dtype=np.int64)
    sample[codes] = np.arange(len(codes))  # a row of each hash
    if words > 1 and (window != window[sample[codes]]).any():
        return None
    texts = [buf[start[row] : end[row]].tobytes().decode("ascii") for row in sample]
    if not all(grammar.fullmatch(text) for text in texts):
        return None
    return np.array([interned.code(text) for text in texts], dtype=np.int64)[codes]


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

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
from dataclasses import dataclass
from itertools import islice

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._chunks import Interned, byte_windows, has_cr, text_chunks, walk_text
from ._common import Extras, Lines, Source, coerce, empty_frame, feed_lines


@dataclass(frozen=True)
class PerfStatExtras(Extras):
    """What perf_stat reads beside its rows (see `_common.Extras`); `notes` holds perf's advice lines
    after the footer."""

    header_generation: str | None = None  # `text` or `csv` (`-x,`)
    target: str | None = None  # what perf measured: `'sleep 0.2'`, `system wide`
    runs: int | None = None  # `-r N`: the values are means of N runs
    started: str | None = None  # `# started on ...` as printed
    elapsed_s: float | None = None  # the footer's `seconds time elapsed`, `user`, `sys`
    user_s: float | None = None
    sys_s: float | None = None
    preamble_lines: int = 0  # lines before the first perf line (the target's own stderr), skipped


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
_HEADER = re.compile(r"^Performance counter stats for (.*?)(?:\s+\(([0-9]+) runs\))?:?$")
_INTERVAL_HEADER = re.compile(r"^#\s+time\b")
_FOOTER = re.compile(
    r"^([0-9]+(?:[.,][0-9]+)?)(?:\s+\+-\s+[0-9.,]+)?\s+seconds\s+(time elapsed|user|sys)"
    r"(?:\s+\(\s*\+-\s*[0-9.,]+%\s*\))?$"
)
_TIME = re.compile(r"^[0-9]+\.[0-9]{9}$")  # perf prints the -I time as %lu.%09lu in every locale
_AGGR = re.compile(r"^(?:CPU[0-9]+|S[0-9]+(?:-D[0-9]+)?(?:-C[0-9]+)?|N[0-9]+)$")
# ASCII digits only (`\d` takes `٣`): what these let through is converted by Arrow, and a line of
# another skeleton's digits must not read
_PLAIN = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")
_GROUPED = re.compile(r"^[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?$")  # en_US thousands separators
_DOT_GROUPED = re.compile(r"^[0-9]{1,3}(?:\.[0-9]{3})+$")  # de_DE grouping of an integer count
_EVENT = re.compile(r"^[A-Za-z_][^\s]*$")
_UNIT = re.compile(r"^[A-Za-z%/]*$")
_OLD_UNIT = re.compile(r"^\((\w+)\)$")
_PCT_TAIL = re.compile(r"\s*[(\[]\s*([0-9]+(?:[.,][0-9]+)?)%\s*[)\]]\s*$")
_SPREAD = re.compile(r"\(\s*\+-\s*[0-9.,]+%\s*\)")
_METRIC = re.compile(r"^(-?[0-9.,]+|nan|inf|-inf)\s*(.*)$")
_DE_CSV = re.compile(r",[A-Za-z][^,]*,[0-9]+,[0-9]{1,3},[0-9]{2}(?:,|$)")  # run-time, then pct `100,00`
_NOT = {"<not supported>": "not supported", "<not counted>": "not counted"}
_COLUMNS = [k for k in SCHEMA if k not in ("host", "ipc")]  # what a row gives, in order
_STRING_COLS = ("cpu", "event", "unit", "status", "metric_unit")
_TOKEN = re.compile(r"\S+")
# Digits made alike: two text lines with the same skeleton have every other character in the same
# place, so the one grammar (`_plan`) read on one of them says where each field is in all of them.
_SKELETON = str.maketrans("0123456789", "0" * 10)
_DIGIT = re.compile("[0-9]")  # what `_SKELETON` makes alike
_BLOCK = 16  # `text_chunks`' chunks read as one block: a few calls per skeleton, whatever its size
_WALK_LINES = 50_000  # lines of a stream (or a capture with CR line ends) read as one block

Span = tuple[int, int]  # a field's place in its line: [start, end) in characters


@dataclass(frozen=True)
class _Plan:
    """Where a text event line's fields are (spans of the line), or their value where the line's form
    fixes it: the same for every line of its skeleton."""

    interval: Span | None
    cpu: Span | None
    value: Span | None  # None: `<not supported>` / `<not counted>`
    grouped: bool  # the value has en_US thousands separators
    unit: Span | str | None  # perf 3.x clocks: "msec", which the line does not print
    event: Span
    status: str
    running: Span | float  # the multiplexing percentage, or 100 (ran all the time) / NaN
    metric_value: Span | None
    metric_unit: Span | None  # its words, blanks between them made one


def _plan(line: str) -> _Plan | str:
    """The grammar of a text event line (perf 3.x to 6.x, `-I`, `-A`, `--per-socket`, `-r`): where its
    fields are, or why it is no such line. The only place a text row is read: every line of the same
    skeleton (`_SKELETON`) has its fields in the same places, so `_Block` asks this once per skeleton."""
    s = line
    for text in _NOT:  # one token, the same length: the places stay
        s = s.replace(text, text.replace(" ", "_"))
    running: Span | float = math.nan
    tail = _PCT_TAIL.search(s)
    if tail:
        if "," in tail[1]:
            return _LOCALE
        running = tail.span(1)
        s = s[: tail.start()]
    s = _SPREAD.sub(lambda m: " " * len(m[0]), s)  # `( +- 1.34% )`: not kept
    hash_at = s.find("#")
    toks = [m.span() for m in _TOKEN.finditer(s, 0, len(s) if hash_at < 0 else hash_at)]

    def text(span: Span) -> str:
        return s[span[0] : span[1]]

    interval, cpu = None, None
    lead = [text(t) for t in toks[:2]]  # the first two tokens
    if len(lead) == 2 and _TIME.match(lead[0]) and (_is_value(lead[1]) or _AGGR.match(lead[1])):
        interval = toks.pop(0)
    if toks and _AGGR.match(text(toks[0])):
        cpu = toks.pop(0)
        lead = [text(t) for t in toks[:2]]
        if not text(cpu).startswith("CPU") and len(lead) == 2 and lead[0].isdigit() and _is_value(lead[1]):
            toks.pop(0)  # --per-socket/--per-core: how many CPUs the aggregate covers
    first = text(toks[0]) if toks else ""
    if "," in first and re.match(r"^[0-9.,]+$", first) and not _GROUPED.match(first):
        return _LOCALE  # de_DE `143,38` or `1.234,56`
    if len(toks) < 2 or not _is_value(first):
        return "not a perf stat event line"
    raw = toks.pop(0)
    old_unit = None
    if len(toks) >= 2 and _OLD_UNIT.match(text(toks[-1])):
        start, end = toks.pop()
        old_unit = (start + 1, end - 1)  # `(msec)`: the word inside
    if len(toks) == 1:
        unit, event = old_unit, toks[0]
    elif len(toks) == 2 and old_unit is None and _UNIT.match(text(toks[0])):
        unit, event = toks
    else:
        return "not a perf stat event line"
    name = text(event)
    if not _EVENT.match(name):
        return f"not a perf stat event name: {name!r}"
    status = _NOT.get(text(raw).replace("_", " "), "counted")
    value, grouped, unit_text = None, False, text(unit) if unit else ""
    if status == "counted":
        if not unit_text and _DOT_GROUPED.match(first) and not name.endswith("clock"):
            return _LOCALE  # C prints counts without a decimal point
        if _GROUPED.match(first):
            grouped = True
        elif "," in first:
            return _LOCALE
        elif not _PLAIN.match(first):
            return f"not a perf stat value: {first!r}"
        value = raw
        running = 100.0 if isinstance(running, float) else running  # perf omits it when it ran throughout
        if not unit_text and name.endswith("clock") and "." in first:
            unit = "msec"  # perf 3.x printed clock events in msec without saying so
    else:
        running = math.nan
    metric_value, metric_unit = None, None
    if hash_at >= 0:
        right = s[hash_at + 1 :]
        start = hash_at + 1 + len(right) - len(right.lstrip())
        right = right.strip()
        m = _METRIC.match(right)
        if m is None:
            metric_unit = (start, start + len(right)) if right else None
        else:
            if "," in m[1]:
                return _LOCALE  # perf never groups metric values
            try:
                float(m[1])
            except ValueError:
                return f"not a metric value: {m[1]!r}"
            metric_value = (start + m.start(1), start + m.end(1))
            metric_unit = (start + m.start(2), start + m.end(2)) if m[2] else None
    return _Plan(interval, cpu, value, grouped, unit, event, status, running, metric_value, metric_unit)


def _is_value(tok: str) -> bool:
    return tok in ("<not_supported>", "<not_counted>") or bool(_PLAIN.match(tok) or _GROUPED.match(tok))


def sniff(text: str) -> bool:
    """A `perf stat` report header, its `-I` header, or `-x,` rows within the first lines."""
    lines = [ln.strip() for ln in text[:8192].splitlines()[:60] if ln.strip()]
    if any(_HEADER.match(ln) or (_INTERVAL_HEADER.match(ln) and "counts" in ln) for ln in lines):
        return True
    rows = [ln for ln in lines if ln.count(",") >= 2]
    good = sum(_csv_row(ln) is not None or _DE_CSV.search(ln) is not None for ln in rows)
    return bool(rows) and good >= max(1, len(rows) // 2)


class _Report:
    """The report: its rows as arrays in file order (string columns as codes into one `Interned` table
    each), and the walk over the lines that are no text rows (headers, comments, the footer, `-x,` rows,
    the target's own stderr): the mode, the `-x,` rows since the last text rows and the attrs."""

    def __init__(self) -> None:
        self.mode: str | None = None
        self.strings = {k: Interned() for k in _STRING_COLS}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in _COLUMNS}
        self.csv_rows: dict[str, list] = {k: [] for k in _COLUMNS}
        self.attrs: dict[str, object] = {"preamble_lines": 0, "notes": [], "dropped_lines": 0}
        self.first_preamble: tuple[int, str] | None = None
        self.after_footer = False

    @property
    def rows_in_bulk(self) -> bool:
        """Whether text rows here are the report's (read by `_Block`), not the target's or perf's advice."""
        return self.mode == "text" and not self.after_footer

    def add_rows(self, cols: dict[str, np.ndarray]) -> None:
        """Text rows as arrays, after the `-x,` rows read before them."""
        self._flush_csv()
        for k, v in cols.items():
            self.parts[k].append(v)

    def columns(self) -> dict[str, np.ndarray]:
        self._flush_csv()
        return {
            k: np.concatenate(v) if v else np.empty(0, dtype=np.int64 if k in self.strings else np.float64)
            for k, v in self.parts.items()
        }

    def _flush_csv(self) -> None:
        if not self.csv_rows["event"]:
            return
        for k, v in self.csv_rows.items():
            self.parts[k].append(
                self.strings[k].codes(v) if k in self.strings else np.array(v, dtype=np.float64)
            )
            v.clear()

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        s = line.strip()
        if not s:
            return
        if head := _HEADER.match(s):
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
        if (foot := _FOOTER.match(s)) and self.mode == "text":
            if "," in foot[1]:
                raise lines.error(line_no, line, _LOCALE)
            key = {"time elapsed": "elapsed_s", "user": "user_s", "sys": "sys_s"}[foot[2]]
            self.attrs[key] = float(foot[1])
            self.after_footer = True
            return
        if self.after_footer:
            self.attrs["notes"].append(s)  # perf's advice (`Some events weren't counted...`)
            return
        if self.mode == "text":  # `_Block` hands over no line `_plan` reads: this one is none
            why = _plan(line)
            raise lines.error(line_no, line, why if isinstance(why, str) else "not a perf stat event line")
        if _DE_CSV.search(s):
            raise lines.error(line_no, line, _LOCALE)
        row = _csv_row(s)
        if row is not None:
            self.mode = "csv"
            for values, value in zip(self.csv_rows.values(), row, strict=True):
                values.append(value)
        elif self.mode == "csv":
            raise lines.error(line_no, line, "not a `perf stat -x,` row")
        else:
            self._preamble(line_no, line)

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
    block = _Block()
    lines = block.read_chunks(source)
    if lines is None:  # a stream, or CR line ends: line by line (as `Lines` counts them), in blocks
        block = _Block()
        lines = feed_lines(source, KIND, block.feed, block.rep.cut)
        block.flush(lines)
    rep = block.rep
    if rep.mode is None and rep.first_preamble is not None:
        raise lines.error(
            *rep.first_preamble,
            "not a perf stat capture (no `Performance counter stats` header, no -x, rows)",
        )
    cols = rep.columns()
    if n := len(cols["interval_s"]):
        # in SCHEMA's order: no copy
        data: dict[str, object] = {"host": pd.array([host], dtype="string").take(np.zeros(n, dtype=np.intp))}
        data.update({k: rep.strings[k].array(v) if k in rep.strings else v for k, v in cols.items()})
        data["ipc"] = _ipc(cols, list(rep.strings["event"].index))
        df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    else:
        df = empty_frame(SCHEMA)
    df.attrs.update({"header_generation": rep.mode, **rep.attrs})
    return df


class _Block:
    """Reads a capture a block of whole lines at a time. Lines are grouped by skeleton; `_plan` reads
    one line of each, and says whether they are text rows and where their fields are: the rows of a
    skeleton are then cut out of the block as one character matrix, a field its columns, its numbers
    converted by Arrow (correctly rounded, as `float()`). Every other line, in order, goes to the walk
    (`_Report.feed`), which keeps the mode: text rows count only in the report (`rows_in_bulk`)."""

    def __init__(self) -> None:
        self.rep = _Report()
        self.pending: list[str] = []
        self.first_no = 1

    def read_chunks(self, source: Source) -> Lines | None:
        """A path's or a string's blocks; None for a stream or a capture with CR line ends."""
        chunks = text_chunks(source)
        if chunks is None:
            return None
        lines = Lines(source, KIND)
        first_no = 1
        try:
            while chunk := "".join(islice(chunks, _BLOCK)):
                if has_cr(chunk):
                    return None
                body = chunk[: chunk.rfind("\n") + 1]  # a cut last line is the walk's
                self.read(body, first_no, lines)
                first_no += body.count("\n")  # a cut line is the capture's last
                walk_text(chunk[len(body) :], first_no, lines, self.rep.feed, self.rep.cut)
        except OSError:
            return None  # the line walk raises it as a ParseError
        return lines

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        """`feed_lines`' call: lines gathered into blocks."""
        if not self.pending:
            self.first_no = line_no
        self.pending.append(line)
        if len(self.pending) >= _WALK_LINES:
            self.flush(lines)

    def flush(self, lines: Lines) -> None:
        if self.pending:
            self.read("\n".join(self.pending) + "\n", self.first_no, lines)
            self.pending.clear()

    def read(self, body: str, first_no: int, lines: Lines) -> None:
        """The lines of `body` (each ending with a line end), the first numbered `first_no`."""
        text = _Text(body)
        codes, uniques = pd.factorize(np.array(body.translate(_SKELETON).split("\n")[:-1], dtype=object))
        plans = [self._plan_of(text.line(i)) for i in np.unique(codes, return_index=True)[1].tolist()]
        is_row = np.array([p is not None for p in plans], dtype=bool)[codes]
        bulk = np.zeros(len(codes), dtype=bool)
        rep, start = self.rep, 0
        for i in [*np.flatnonzero(~is_row).tolist(), len(codes)]:
            if rep.rows_in_bulk:
                bulk[start:i] = True
            else:  # the target's stderr before the report, perf's advice after it: the walk's
                for j in range(start, i):
                    rep.feed(first_no + j, text.line(j), lines)
            if i < len(codes):
                rep.feed(first_no + i, text.line(i), lines)
            start = i + 1
        rows = np.flatnonzero(bulk)
        if len(rows):
            rep.add_rows(self._rows(text, rows, codes[rows], plans))

    @staticmethod
    def _plan_of(line: str) -> _Plan | None:
        """The line's plan if it is a text row; None for a line the walk reads (or refuses)."""
        s = line.strip()
        if not s or s.startswith("#") or _HEADER.match(s) or _FOOTER.match(s):
            return None
        plan = _plan(line)
        return plan if isinstance(plan, _Plan) else None

    def _rows(
        self, text: _Text, rows: np.ndarray, codes: np.ndarray, plans: list[_Plan | None]
    ) -> dict[str, np.ndarray]:
        """The columns of the text rows `rows` (lines of the block; `codes` their skeletons), in order."""
        strings = self.rep.strings
        out = {
            k: np.full(len(rows), -1, dtype=np.int64) if k in strings else np.full(len(rows), np.nan)
            for k in _COLUMNS
        }
        order = np.argsort(codes, kind="stable")
        for at in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):  # one skeleton's rows
            plan = plans[codes[at[0]]]
            field = _Fields(text, rows[at], strings)
            out["interval_s"][at] = field.number(plan.interval)
            out["cpu"][at] = field.code("cpu", plan.cpu)
            out["event"][at] = field.code("event", plan.event)
            out["value"][at] = field.number(plan.value, plan.grouped)
            out["unit"][at] = field.code("unit", plan.unit)
            out["running_pct"][at] = field.number(plan.running)
            out["status"][at] = strings["status"].code(plan.status)
            out["metric_value"][at] = field.number(plan.metric_value)
            out["metric_unit"][at] = field.code("metric_unit", plan.metric_unit, words=True)
        return out


class _Text:
    """A block's characters as one array (a byte each when ASCII, else a UTF-32 unit each: a line's
    spans index it either way) and where its lines start and end."""

    def __init__(self, body: str) -> None:
        self.body, self.wide = body, not body.isascii()
        self.chars = np.frombuffer(
            body.encode("utf-32-le" if self.wide else "ascii"), dtype=np.uint32 if self.wide else np.uint8
        )
        self.ends = np.flatnonzero(self.chars == 10)
        self.starts = np.concatenate(([0], self.ends[:-1] + 1))

    def line(self, i: int) -> str:
        return self.body[self.starts[i] : self.ends[i]]


class _Fields:
    """The fields of one skeleton's rows (`rows`: lines of the block), read at the places its plan says."""

    def __init__(self, text: _Text, rows: np.ndarray, strings: dict[str, Interned]) -> None:
        self.text, self.rows, self.strings = text, rows, strings
        self.line = text.line(int(rows[0]))  # every row is as long, its digits elsewhere the same

    def cells(self, span: Span) -> np.ndarray:
        """The field's characters, a fixed-width string (bytes when ASCII) a row."""
        width = span[1] - span[0]
        chars = byte_windows(self.text.chars, self.text.starts[self.rows] + span[0], width)
        return np.ascontiguousarray(chars).view(f"{'U' if self.text.wide else 'S'}{width}").ravel()

    def number(self, span: Span | float | None, grouped: bool = False) -> np.ndarray | float:
        """The field's numbers (digits, `.`, en_US `,`, or `nan`/`inf`), converted by Arrow; NaN for no
        span, the value the form fixes for a float."""
        if span is None:
            return math.nan
        if isinstance(span, float):
            return span
        texts = pa.array(self.cells(span))
        if not self.text.wide:
            texts = texts.cast(pa.string())
        if grouped:
            texts = pc.replace_substring(texts, ",", "")
        return pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False)

    def code(self, k: str, span: Span | str | None, words: bool = False) -> np.ndarray | int:
        """Codes of the column's texts (`words`: blanks between words made one): -1 (NA) for no span, one
        code for a text the form fixes or for a field without a digit (the same in every row), else
        each row's, each distinct text read once."""
        if span is None:
            return -1
        if isinstance(span, str):
            return self.strings[k].code(span)
        text = self.line[span[0] : span[1]]
        if not _DIGIT.search(text):
            return self.strings[k].code(_text(text, words))
        local, uniques = pd.factorize(self.cells(span))
        table = [_text(u if self.text.wide else u.decode("ascii"), words) for u in uniques]
        return np.array([self.strings[k].code(t or "") for t in table], dtype=np.int64)[local]


def _text(text: str, words: bool) -> str:
    return " ".join(text.split()) if words else text


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


def _csv_row(s: str) -> tuple | None:
    """One `-x,` row -> (interval_s, cpu, event, value, unit, pct, status, mval, munit), or None when the
    line is no such row."""
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
    metric = float(mval) if mval else math.nan
    return interval, cpu, event, value, unit or None, running, status, metric, munit or None

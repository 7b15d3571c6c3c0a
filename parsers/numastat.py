"""numastat: every form of numactl's `numastat` (perfkit runs `numastat -c`), in long form.

Reads numastat 20130723 (numactl 2.0.x, Debian 12's numactl 2.0.16). numastat does not translate
its output, so there is no locale variant. The forms, each told apart by its own lines:

- `numastat` with no option (compatibility mode, the old perl script's layout): no title, a header
  of `node0 node1 ...`, lowercase rows `numa_hit numa_miss numa_foreign interleave_hit local_node
  other_node` in **pages**, cumulative since boot (diff two captures for a rate). No `Total`.
- `numastat -c` / `-n`: `Per-node numastat info (in MBs):`, Title_Case rows (`Numa_Hit`), headers
  `Node 0 ... Total` over a dashed ruler, values in MB (pages x page size). `-c` prints whole MB in
  compact columns; without `-c` two decimals in 16-wide columns.
- `numastat -m`: `Per-node system memory usage (in MBs):`, /proc/meminfo-like rows (`MemTotal`,
  `Active(anon)`, `HugePages_Total` ...). Kernel fields numastat does not know print
  `Token SwapCached not in hash table.` on stdout before the table: kept in `notes`.
- `numastat -p PID|PATTERN` (one process, or `-v`): per process a title
  `Per-node process memory usage (in MBs) for PID 1234 (mysqld)` and rows `Huge Heap Stack Private`,
  a dashed rule, `Total`. Several processes without `-v`: one title
  `Per-node process memory usage (in MBs)`, header `PID`, one row per process `1234 (mysqld)` (its
  total), a rule, and a `Total` row over all of them. With `-c` the `PID (name)` label is cut to the
  column (`111105 (qemu-kvm`, seed 003): the name is kept as printed, without the parentheses.

Wide tables fold: numastat prints as many columns as fit the terminal (`NUMASTAT_WIDTH`, the tty
width; unlimited when stdout is not a tty), then a blank line and the next columns under the same
row labels, `Total` in the last part (seed 003: 16 nodes as `Node 0..8` then `Node 9..15 Total`).
The parts are joined back into one table by row position and label, never shifted. Titled tables
are sliced on their dashed ruler (numastat right-justifies every data column behind exactly one
space of gutter, and a label may fill its column or hold spaces: `20469 (Web Content)`); a cell
whose gutter is not blank overflowed and is a ParseError. Compatibility-mode tables have no ruler
and single-word labels: split on whitespace, one value per `nodeN` header.

Schema (long form: one row per table cell, tables and rows in file order, columns left to right):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| table | Int64 | 0-based index of the table in the file (one per title; folded parts are one table) |
| section | string | `numa` (numa_hit ... counters), `meminfo` (`-m`), `process` (`-p`) |
| pid | Int64 | the process (`-p`); NA for numa/meminfo and for the `Total` row over several processes |
| process | string | the process name as printed (may be cut with `-c`; `(null)` if it had exited) |
| metric | string | the row, see below |
| node | Int64 | NUMA node number; NA in the `Total` column |
| is_total | boolean | the cell is in numastat's `Total` column (sum over nodes) |
| pages | float64 | value in pages (compatibility mode only), else NaN |
| mb | float64 | value in MB (MiB, bytes / 2^20) for every titled form, else NaN |

`metric`: numa rows by their kernel name (`numa_hit`, for `Numa_Hit` too); meminfo rows as printed
(`MemTotal`, `Active(anon)`); process rows `huge heap stack private total`. In the several-process
table each `PID (name)` row is that process's `total`; its `Total` row (the sum over the listed
processes) has metric `total` and pid NA.

Exactly one of `pages` and `mb` is set per row (pages are never converted: the page size is not in
the capture). A blank cell (no data for that node) is NaN.

Lines of other output saved with numastat (a shell's message, `numastat -V`, another tool's lines)
are skipped and counted (`attrs["skipped"]`, parsers/_common.Skips), the capture read and marked
partial: before any table, and after a compatibility-mode table (a line that does not start with a
lowercase row name ends it). Inside a titled table a line stays a ParseError naming it, and so does
a compatibility row that starts like one (`numa_hit 12 x`); a file with no cell read but lines
skipped is refused naming the first.

`df.attrs`: `skipped`, `nodes` (sorted node numbers seen), `dropped_lines` (a cut-off last line),
`unknown_columns` (always empty: headers are `Node N`/`nodeN`/`Total` or a ParseError), `notes`
(skipped kernel tokens, `Found no processes ...`, `Table has no data.`, cut tables).

Tested on: tests/fixtures/numastat/ (README.md there).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._chunks import Interned, block_pieces, byte_windows, has_cr, text_chunks, walk_text
from ._common import Lines, Skips, Source, coerce, empty_frame, feed_lines

KIND = "numastat"

SCHEMA: dict[str, str] = {
    "host": "string",
    "table": "Int64",
    "section": "string",
    "pid": "Int64",
    "process": "string",
    "metric": "string",
    "node": "Int64",
    "is_total": "boolean",
    "pages": "float64",
    "mb": "float64",
}

_MAX_NODE = 1 << 20  # libnuma's masks are far smaller: bigger is garbage
_TITLE_NUMA = "Per-node numastat info (in MBs):"
_TITLE_MEMINFO = "Per-node system memory usage (in MBs):"
_TITLE_PROCESSES = "Per-node process memory usage (in MBs)"
_TITLE_PROCESS = re.compile(r"^Per-node process memory usage \(in MBs\) for PID (\d{1,10}) \((.*)\)$")
_TOKEN_NOTE = re.compile(r"^Token (\S+) not in hash table\.$")
_NO_MATCH = re.compile(r'^Found no processes containing pattern: ".*"$')
_NO_DATA = ("Table has no data.", "Table has no non-zero data.")
_COMPAT_HEADER = re.compile(r"^\s+node\d{1,7}(?:\s+node\d{1,7})*$")
_COMPAT_ROW = re.compile(r"^([a-z_]+)((?:\s+\d{1,20})+)$")
_COMPAT_LABEL = re.compile(r"^[a-z_]+\s")  # what a compatibility row starts with, well-formed or not
_RULER = re.compile(r"^[ -]*-[ -]*$")
_RUN = re.compile(r"-+")
_NODE_HEAD = re.compile(r"^Node (\d{1,7})$")
_VALUE = re.compile(r"^-?\d{1,20}(?:\.\d{1,6})?$")
_PID_LABEL = re.compile(r"^(\d{1,10}) \((.*?)\)?$")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_()]*$")

# The fast paths read whole numa or meminfo tables (not folded): their title, header and ruler by
# `_FAST_TITLE`, the header and ruler parsed once per distinct layout by the line walk itself
# (`_layout`). A run of tables that repeat one layout and one set of row labels (a capture of
# `numastat -c` every second) is read as bytes by numpy (`_fast_run`): each row exactly as wide as the
# ruler, each cell sliced as `_row` slices it and converted from its digits (`_numbers`). Any other such
# table is read by a regex made for its layout (`_Layout.rows`), its cells checked all at once
# (`_FAST_CELL`: one number per cell) and converted by numpy (`_fast_table`).
_FAST_TITLE = re.compile(
    r"(Per-node numastat info \(in MBs\):|Per-node system memory usage \(in MBs\):) *\n([^\n]*)\n([^\n]*)\n"
)
_FAST_CELL = re.compile(r"^ *(-?[0-9]{1,20}(?:\.[0-9]{1,6})?)$", re.MULTILINE)  # `_VALUE`, ASCII, not blank
_STRINGS = ("section", "process", "metric")
_MIN_RUN = 16  # fewer tables than this in a run (layouts alternating): `_fast_table` reads them faster
_TITLE_START = np.frombuffer(b"Per-node ", dtype=np.uint8)
_FAST_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_()]* *")  # `_LABEL` padded to its column


class _Fallback(Exception):
    """A cell the fast path cannot read as the line walk would: the line walk reads the whole capture."""


@dataclass
class _Layout:
    section: str
    columns: list[str]
    nodes: list[int | None]
    totals: list[bool]
    rows: re.Pattern[str]
    label_end: int
    spans: list[tuple[int, int]]


def sniff(text: str) -> bool:
    """A numastat title, or the compatibility header `node0 ...` followed by a `numa_hit` row."""
    lines = [ln.rstrip() for ln in text[:4096].splitlines()[:40]]
    for i, line in enumerate(lines):
        if _is_title(line):
            return True
        if _COMPAT_HEADER.match(line) and i + 1 < len(lines) and lines[i + 1].startswith("numa_hit "):
            return True
    return False


def _is_title(line: str) -> bool:
    """A line the line walk reads as a title (a line that only starts with `Per-node ` may be a row)."""
    text = line.rstrip()
    return text in (_TITLE_NUMA, _TITLE_MEMINFO, _TITLE_PROCESSES) or _TITLE_PROCESS.match(text) is not None


def _title_at(text: str, pos: int) -> bool:
    """The line at `pos` is a title (not if it has no newline: it may be cut)."""
    end = text.find("\n", pos)
    return end >= 0 and _is_title(text[pos:end])


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a numastat capture (any form above) into one row per table cell.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (numastat prints no time); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `nodes`, `dropped_lines`,
        `unknown_columns`, `notes`.

    Raises:
        ParseError: a line numastat does not print inside a titled table, a header that is not
            `Node N`/`Total`, a value that is not a number or overflows its column, a folded part
            whose row labels differ; no cell read while other lines were skipped.
    """
    st = _State()
    try:
        try:
            fast = _fast(source, st)
        except _Fallback:
            fast = False
        if not fast:  # a stream, CR line ends, or a blank cell: the line walk over the whole capture
            st = _State()
            feed_lines(source, KIND, st.feed, st.cut_last)
    except ParseError:
        raise
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        path = st.lines.path if st.lines is not None else None
        raise ParseError(KIND, path, st.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})") from exc
    st.close_table()
    st.flush()
    c = {k: np.concatenate(v) if v else np.empty(0) for k, v in st.parts.items()}
    if st.lines is not None:
        st.skips.refuse_if_nothing_read(len(c["metric"]), st.lines)
    attrs = {
        "skipped": st.skips,
        "nodes": sorted(int(n) for n in pd.unique(c["node"][~np.isnan(c["node"])])),
        "dropped_lines": st.dropped,
        "unknown_columns": [],
        "notes": st.notes,
    }
    n = len(c["metric"])
    if not n:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    data: dict[str, object] = {"host": pd.array([host], dtype="string").take(np.zeros(n, dtype=np.intp))}
    for k in SCHEMA:
        if k in _STRINGS:
            data[k] = st.strings[k].array(c[k])
        elif k in ("table", "pid", "node"):
            na = np.isnan(c[k])
            c[k][na] = 0  # the others are whole numbers: tables counted, numbers read as int
            data[k] = pd.arrays.IntegerArray(c[k].astype(np.int64), na)
        elif k == "is_total":
            data[k] = pd.array(c[k], dtype="boolean")
        elif k != "host":
            data[k] = c[k]
    df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    df.attrs.update(attrs)
    return df


def _fast(source: Source, st: _State) -> bool:
    """Read a path or string piece by piece (pieces end where a title starts): a piece of repeated
    numa/meminfo tables at once (`_fast_run`), else whole tables by regex and any other line by the
    line walk (`_fast_piece`), in file order. False for a stream or CR."""
    chunks = text_chunks(source)
    if chunks is None:
        return False
    lines = Lines(source, KIND)
    st.lines = lines
    layouts: dict[tuple[str, str, str], _Layout | None] = {}
    try:
        pieces = block_pieces(chunks, lambda text: text.rfind("\nPer-node ") + 1)
        ahead = next(pieces, None)
        while ahead is not None:
            piece, first_no = ahead
            ahead = next(pieces, None)
            if has_cr(piece):
                return False
            # a piece grown past four chunks without a title ends mid-table: its last table goes on
            closed = ahead is None or _title_at(ahead[0], 0)
            while closed and piece:
                if piece.startswith("Per-node "):
                    read = _fast_run(st, piece, layouts)
                elif read := piece.find("\nPer-node ") + 1:  # the lines before the first title
                    _fast_piece(st, piece[:read], first_no, layouts, lines, closed=_title_at(piece, read))
                if not read:
                    break
                piece, first_no = piece[read:], first_no + piece.count("\n", 0, read)
            if piece:
                _fast_piece(st, piece, first_no, layouts, lines, closed=closed)
    except OSError:
        return False  # the line walk raises it as a ParseError
    return True


def _fast_piece(st: _State, piece: str, first_no: int, layouts: dict, lines: Lines, *, closed: bool) -> None:
    """Whole numa/meminfo tables by regex (`_fast_table`), any other line by the line walk."""
    body = piece[: piece.rfind("\n") + 1]  # a cut last line goes to the line walk
    line_no = first_no
    pos = 0
    while pos < len(body):
        if body.startswith("Per-node ", pos) and (title := _FAST_TITLE.match(body, pos)):
            end = _fast_table(st, body, title, layouts, complete=closed and len(body) == len(piece))
            if end:
                line_no += body.count("\n", pos, end)
                pos = end
                continue
        end = body.index("\n", pos) + 1
        st.flush_fast()
        st.feed(line_no, body[pos : end - 1], lines)
        line_no += 1
        pos = end
    st.flush_fast()
    walk_text(piece[len(body) :], line_no, lines, st.feed, st.cut_last)


def _fast_run(st: _State, piece: str, layouts: dict) -> int:
    """Read the numa or meminfo tables at the start of a piece (which ends where a table ends) that
    repeat its first title, header, ruler and row labels (numastat run every second prints the same
    table each time, until a number outgrows a `-c` column): all their cells at once.

    It takes only what the line walk reads the same way: each line that starts with `Per-node ` starts
    the same title, header and ruler (a layout `_layout` accepts) up to the first that does not; each
    table has the same number of rows right after its ruler, each exactly as wide as the ruler, with
    the first table's labels (checked once) and cells `_numbers` reads; every other line is empty.

    Returns:
        The offset after the tables read (where the next title starts); 0 if none, and for a run of
        fewer than `_MIN_RUN` tables that does not end the piece.
    """
    if not (piece.startswith("Per-node ") and piece.endswith("\n") and piece.isascii()):
        return 0
    title = _FAST_TITLE.match(piece)
    if title is None:
        return 0
    key = title.groups()
    layout = layouts[key] if key in layouts else layouts.setdefault(key, _layout(*key))
    if layout is None:
        return 0
    buf = np.frombuffer(piece.encode("ascii"), dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    maybe = np.flatnonzero((buf[starts] == _TITLE_START[0]) & (ends - starts >= len(_TITLE_START)))
    heads = maybe[(byte_windows(buf, starts[maybe], len(_TITLE_START)) == _TITLE_START).all(axis=1)]
    if (np.diff(heads) < 3).any():
        return 0  # a header or ruler that starts like a title
    block = np.frombuffer(piece[: title.end()].encode("ascii"), dtype=np.uint8)
    same = np.zeros(len(heads), dtype=bool)
    fits = heads[starts[heads] + len(block) <= len(buf)]
    same[: len(fits)] = (byte_windows(buf, starts[fits], len(block)) == block).all(axis=1)
    n_tables = len(heads) if same.all() else int(same.argmin())
    if n_tables < len(heads):
        if n_tables < _MIN_RUN or not _title_at(piece, int(starts[heads[n_tables]])):
            return 0  # a few tables, or a line like a title that the line walk reads in the last one
        heads, ends, starts = heads[:n_tables], ends[: heads[n_tables]], starts[: heads[n_tables] + 1]
    length = ends - starts[: len(ends)]
    width = layout.spans[-1][1]
    kind = np.zeros(len(ends), dtype=np.int8)  # 0 other, 1 row, 2 empty, 3 title/header/ruler
    kind[length == width] = 1
    kind[length == 0] = 2
    kind[np.concatenate((heads, heads + 1, heads + 2))] = 3
    rows = np.flatnonzero(kind == 1)
    n_rows, rest = divmod(len(rows), len(heads))
    if (kind == 0).any() or rest or not n_rows:
        return 0
    # equal counts are not enough: row i of table k must be line heads[k] + 3 + i
    if (rows.reshape(len(heads), n_rows) != heads[:, None] + 3 + np.arange(n_rows)).any():
        return 0
    text = byte_windows(buf, starts[heads + 3], n_rows * (width + 1)).reshape(len(rows), width + 1)
    labels = text[:n_rows, : layout.label_end]
    if not (text[:, : layout.label_end].reshape(len(heads), -1) == labels.reshape(1, -1)).all():
        return 0
    names = [label.tobytes().decode("ascii") for label in labels]
    if not all(_FAST_LABEL.fullmatch(name) for name in names) or len({*names}) != n_rows:
        return 0  # the line walk reports the label or the duplicate
    if len(widths := {end - start for start, end in layout.spans}) == 1:  # all cells at once
        values = _numbers(text[:, layout.label_end : width].reshape(-1, widths.pop()))
    else:
        columns = [_numbers(np.ascontiguousarray(text[:, start:end])) for start, end in layout.spans]
        values = None if any(c is None for c in columns) else np.column_stack(columns).ravel()
    if values is None:
        return 0
    metric = [name.rstrip().lower() if layout.section == "numa" else name.rstrip() for name in names]
    st.close_table()
    st.flush_fast()
    k = len(layout.columns)
    st.add(
        table=np.repeat(np.arange(st.tables, st.tables + len(heads)), n_rows * k),
        section=np.broadcast_to(st.strings["section"].code(layout.section), values.shape),
        metric=np.tile(np.repeat([st.strings["metric"].code(m) for m in metric], k), len(heads)),
        node=np.tile(np.array(layout.nodes, dtype=np.float64), len(rows)),
        is_total=np.tile(layout.totals, len(rows)),
        mb=values,
    )
    st.open_fast = st.tables + len(heads) - 1
    st.tables += len(heads)
    return len(piece) if len(ends) == len(starts) else int(starts[-1])


def _numbers(cells: np.ndarray) -> np.ndarray | None:
    """`float(cell)` of each cell (one row of ASCII codes per cell: the gutter space, then a
    right-justified `_VALUE`), from its digits; None unless every cell is one with at most 15 digits
    (then the digits as an integer, divided by a power of ten, round as `float` rounds the text)."""
    space = cells == 32
    digit = cells - 48 < 10  # unsigned: wraps below `0`
    if not space[:, 0].all() or not digit[:, -1].all():
        return None  # no gutter, or not right-justified
    # spaces, then no space up to the end: the only space after a non-space is the next gutter
    flat = space.ravel()
    if np.count_nonzero(flat[1:] > flat[:-1]) != len(cells) - 1:
        return None
    if cells.shape[1] > 16 and (digit.sum(axis=1) > 15).any():
        return None
    powers = 10.0 ** np.arange(cells.shape[1] - 1, -1, -1)
    if (digit | space).all():  # whole numbers, as `numastat -c` prints them
        return (cells & 15) @ powers  # the digit's value; 0 for a space
    minus = cells == 45
    dot = cells == 46
    if not (digit | space | minus | dot).all():
        return None
    # a sign right after the spaces and before a digit; a dot after a digit (and so before one)
    signs, dots, digits, flat = minus.ravel(), dot.ravel(), digit.ravel(), space.ravel()
    if (signs[1:] & ~flat[:-1]).any() or (signs[:-1] & ~digits[1:]).any() or (dots[1:] & ~digits[:-1]).any():
        return None
    fraction = np.where(dot.any(axis=1), cells.shape[1] - 1 - dot.argmax(axis=1), 0)
    if (dot.sum(axis=1) > 1).any() or (fraction > 6).any():
        return None
    mantissa = np.zeros(len(cells), dtype=np.int64)
    for j in range(1, cells.shape[1]):
        mantissa = np.where(digit[:, j], mantissa * 10 + (cells[:, j] & 15), mantissa)
    value = mantissa / 10.0**fraction
    return np.where(minus.any(axis=1), -value, value)


def _layout(title: str, header: str, ruler: str) -> _Layout | None:
    """The columns and the row regex of a table with this title, header and ruler, read by the line
    walk itself (its checks included); None when the walk refuses them or the spans are not contiguous."""
    probe = _State()
    dummy = Lines("", KIND)
    try:
        for no, line in enumerate((title, header, ruler), 1):
            probe.feed(no, line, dummy)
    except ParseError:
        return None
    t = probe.table
    if t is None or probe.expect != "rows" or t.part != 0:
        return None
    spans = t.spans
    if spans[0][0] != t.label_end or any(a[1] != b[0] for a, b in zip(spans, spans[1:], strict=False)):
        return None  # text between spans is ignored by `_row`: not read by a fixed-width regex
    cells = "".join(f"( [ 0-9.\\-]{{{end - start - 1}}})" for start, end in spans)
    rows = re.compile(f"^([A-Za-z][A-Za-z0-9_() ]{{{t.label_end - 1}}}){cells}\n", re.MULTILINE)
    nodes = [None if col == "Total" else int(col.split()[-1].removeprefix("node")) for col in t.part_cols]
    totals = [col == "Total" for col in t.part_cols]
    return _Layout(t.section, list(t.part_cols), nodes, totals, rows, t.label_end, spans)


def _fast_table(st: _State, body: str, title: re.Match[str], layouts: dict, *, complete: bool) -> int:
    """Queue the table whose title `title` matched and return the offset after it (and the blank lines
    after it), or 0 when it is not read whole here (the line walk reads it)."""
    key = title.groups()
    layout = layouts[key] if key in layouts else layouts.setdefault(key, _layout(*key))
    if layout is None:
        return 0
    start = title.end()
    # the table ends at the next title: a blank line then a header there would be a folded part
    end = body.find("\nPer-node ", start - 1) + 1 or len(body)
    if end == len(body) and not complete:
        return 0  # the capture's cut last table: the line walk notes it
    if end < len(body) and not _title_at(body, end):
        return 0  # not a title: the line walk reads it in this table
    # only empty lines after the rows: a line of spaces or a row with trailing ones is the line walk's
    rows_end = start + len(body[start:end].rstrip("\n")) + 1
    rows = layout.rows.findall(body, start, rows_end)
    # matches start at a line start and end at a newline: equal counts mean no line was skipped
    if not rows or len(rows) != body.count("\n", start, rows_end) or rows_end > end:
        return 0
    labels = [row[0].rstrip() for row in rows]
    if len(set(labels)) != len(labels) or any(" " in label for label in labels):
        return 0  # the line walk reports the duplicate or the label
    st.close_table()
    st.fast.append((st.tables, layout, labels, rows))
    st.open_fast = st.tables
    st.tables += 1
    return end


class _Table:
    """One titled (or compatibility-mode) table, its folded parts joined."""

    def __init__(self, index: int, section: str, unit: str, pid: int | None, process: str | None, mode: str):
        self.index, self.section, self.unit = index, section, unit
        self.pid, self.process = pid, process
        self.mode = mode  # "single" (one process / system table), "list" (PID rows), "compat"
        self.labels: list[str] = []  # row labels in the order of the first part
        self.columns: list[str] = []  # `Node 3`/`node3`/`Total`, in print order over all parts
        self.cells: dict[tuple[int, str], float] = {}
        self.part = 0  # folded part being read (0 = first)
        self.part_rows = 0  # rows read in the current part
        self.part_cols: list[str] = []
        self.spans: list[tuple[int, int]] = []  # data column slices from the ruler
        self.label_end = 0


class _State:
    """The line walk: titles, headers, rulers and rows; folded parts joined per table."""

    def __init__(self) -> None:
        self.lines: Lines | None = None
        self.line_no = 0
        self.tables = 0
        self.table: _Table | None = None
        self.expect = "any"  # "header" (after a title or blank line in a table), "ruler", "rows"
        self.header: tuple[int, str] | None = None
        self.dropped = 0
        self.notes: list[str] = []
        self.skips = Skips()
        self.cols: dict[str, list] = {k: [] for k in SCHEMA if k != "host"}
        self.fast: list[tuple[int, _Layout, list[str], list[tuple[str, ...]]]] = []  # queued fast tables
        self.open_fast: int | None = None  # a fast table the line walk would still hold open (until a title)
        # cells converted so far, in file order: arrays per column (string columns as `Interned` codes)
        self.strings = {k: Interned() for k in _STRINGS}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in SCHEMA if k != "host"}

    def flush(self) -> None:
        """Move the line walk's cells so far into `parts`."""
        c = self.cols
        if not c["metric"]:
            return
        for k, v in c.items():
            if k in _STRINGS:
                self.parts[k].append(self.strings[k].codes(v))
            elif k == "is_total":
                self.parts[k].append(np.array(v, dtype=bool))
            else:
                self.parts[k].append(np.array(v, dtype=np.float64))
            v.clear()

    def add(
        self,
        *,
        table: np.ndarray,
        section: np.ndarray,
        metric: np.ndarray,
        node: np.ndarray,
        is_total: np.ndarray,
        mb: np.ndarray,
    ) -> None:
        """Append cells of numa/meminfo tables read whole (after the line walk's cells before them);
        `section` and `metric` as `Interned` codes."""
        self.flush()
        n = len(mb)
        p = self.parts
        p["table"].append(table)
        p["section"].append(section)
        # constant columns as read-only views of one value: only their concatenation takes memory
        p["pid"].append(np.broadcast_to(np.nan, n))
        p["process"].append(np.broadcast_to(-1, n))
        p["metric"].append(metric)
        p["node"].append(node)
        p["is_total"].append(is_total)
        p["pages"].append(np.broadcast_to(np.nan, n))
        p["mb"].append(mb)

    def flush_fast(self) -> None:
        """Convert the queued fast tables into `parts` (after the line walk's cells before them).

        Raises:
            _Fallback: a blank or unreadable cell (the line walk reads it as NaN or reports it).
        """
        if not self.fast:
            return
        cells = list(itertools.chain.from_iterable(row[1:] for *_, rows in self.fast for row in rows))
        found = _FAST_CELL.findall("\n".join(cells))
        if len(found) != len(cells):  # one match a line at most: a cell was blank or not a number
            raise _Fallback()
        values = np.fromstring(" ".join(found), dtype=np.float64, sep=" ")
        table: list[int] = []
        metric: list[str] = []
        node: list[int | None] = []
        is_total: list[bool] = []
        section: list[str] = []
        for index, layout, labels, _ in self.fast:
            k = len(layout.columns)
            n = len(labels) * k
            table += [index] * n
            section += [layout.section] * n
            for label in labels:
                metric += [label.lower() if layout.section == "numa" else label] * k
            node += layout.nodes * len(labels)
            is_total += layout.totals * len(labels)
        self.add(
            table=np.array(table),
            section=self.strings["section"].codes(section),
            metric=self.strings["metric"].codes(metric),
            node=np.array(node, dtype=np.float64),
            is_total=np.array(is_total, dtype=bool),
            mb=values,
        )
        self.fast.clear()

    # ------------------------------------------------------------ walk

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.lines, self.line_no = lines, line_no
        text = line.rstrip()
        if not text:
            if self.table is not None and self.expect in ("rows", "ruler"):
                self.expect = "header"  # a blank line ends a folded part: the next part's header follows
            return
        if self._title(text):
            return
        if m := _TOKEN_NOTE.match(text):
            note = f"numastat skipped kernel field {m[1]} (not in its table)"
            if note not in self.notes:
                self.notes.append(note)
            return
        if _NO_MATCH.match(text) or text in _NO_DATA:
            self.notes.append(f"numastat: {text}")
            return
        if _COMPAT_HEADER.match(text):
            self._compat_header(line_no, line, text, lines)
            return
        t = self.table
        if t is not None and t.mode == "compat" and not _COMPAT_LABEL.match(text):
            self.close_table()  # no row of the table: the compatibility table has ended
            t = None
        if t is None:
            self.skips.add(line_no, line, "not a numastat line (no title or `node0` header before it)")
            return
        if t.mode == "compat":
            self._compat_row(line_no, line, text, lines)
        elif self.expect == "header":
            self.header = (line_no, line)
            self.expect = "ruler"
        elif self.expect == "ruler":
            self._ruler(line_no, line, text, lines)
        else:
            self._row(line_no, line, text, lines)

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        """A last line without newline was cut mid-write (`298650` may be `2986503`): dropped."""
        self.lines, self.line_no = lines, line_no
        self.dropped += 1
        index = self.table.index if self.table is not None else self.open_fast
        if index is not None:
            self.notes.append(f"table {index} cut off: its last line was dropped")

    # ------------------------------------------------------------ titles and headers

    def _title(self, text: str) -> bool:
        if text == _TITLE_NUMA:
            self._open("numa", "mb", None, None, "single")
        elif text == _TITLE_MEMINFO:
            self._open("meminfo", "mb", None, None, "single")
        elif text == _TITLE_PROCESSES:
            self._open("process", "mb", None, None, "list")
        elif m := _TITLE_PROCESS.match(text):
            self._open("process", "mb", int(m[1]), m[2], "single")
        else:
            return False
        return True

    def _open(self, section: str, unit: str, pid: int | None, process: str | None, mode: str) -> None:
        self.close_table()
        self.open_fast = None
        self.table = _Table(self.tables, section, unit, pid, process, mode)
        self.tables += 1
        self.expect = "header"

    def close_table(self) -> None:
        """Emit the finished table's cells: rows in first-part order, columns in print order."""
        t = self.table
        if t is None:
            return
        self.table = None
        if self.expect == "ruler" and self.header is not None:
            self.notes.append(f"table {t.index}: a header without its dashed ruler was ignored")
        self.header = None
        c = self.cols
        for r, label in enumerate(t.labels):
            pid, process, metric = self._row_key(t, label)
            for col in t.columns:
                if (r, col) not in t.cells:
                    continue  # a folded part cut off at the end of the file
                value = t.cells[(r, col)]
                node = None if col == "Total" else int(col.split()[-1].removeprefix("node"))
                c["table"].append(t.index)
                c["section"].append(t.section)
                c["pid"].append(pid)
                c["process"].append(process)
                c["metric"].append(metric)
                c["node"].append(node)
                c["is_total"].append(col == "Total")
                c["pages"].append(value if t.unit == "pages" else np.nan)
                c["mb"].append(value if t.unit == "mb" else np.nan)

    @staticmethod
    def _row_key(t: _Table, label: str) -> tuple[int | None, str | None, str]:
        if t.section == "meminfo":
            return None, None, label
        if t.section == "numa":
            return None, None, label.lower()
        if label == "Total":
            return t.pid, t.process, "total"
        if t.mode == "list":
            m = _PID_LABEL.match(label)  # checked when the row was read
            return (int(m[1]), m[2], "total") if m else (None, None, "total")
        return t.pid, t.process, label.lower()

    def _compat_header(self, line_no: int, line: str, text: str, lines: Lines) -> None:
        names = text.split()
        t = self.table
        if t is None or t.mode != "compat" or self.expect != "header":
            self._open("numa", "pages", None, None, "compat")
            t = self.table
        else:
            self._next_part(t, line_no, line, lines)
        if t is None:
            return
        for name in names:
            self._add_column(t, name, int(name[4:]), line_no, line, lines)
        t.part_cols, t.part_rows = names, 0
        self.expect = "rows"

    def _compat_row(self, line_no: int, line: str, text: str, lines: Lines) -> None:
        t = self.table
        m = _COMPAT_ROW.match(text)
        if t is None or m is None or self.expect != "rows":
            raise lines.error(line_no, line, "not a `numastat` row (`numa_hit   123   456`)")
        values = m[2].split()
        if len(values) != len(t.part_cols):
            raise lines.error(line_no, line, f"{len(values)} values under {len(t.part_cols)} node columns")
        row = self._row_index(t, m[1], line_no, line, lines)
        for name, value in zip(t.part_cols, values, strict=True):
            t.cells[(row, name)] = float(value)

    def _ruler(self, line_no: int, line: str, text: str, lines: Lines) -> None:
        t = self.table
        if t is None or self.header is None:
            return
        if not _RULER.match(text):
            raise lines.error(line_no, line, "expected the dashed ruler under the `Node N` header")
        runs = [(m.start(), m.end()) for m in _RUN.finditer(text)]
        if runs[0][0] == 0:
            runs = runs[1:]  # the label column's own dashes (`PID` tables)
        if not runs:
            raise lines.error(line_no, line, "ruler without a data column")
        # numastat right-justifies data columns: `width - 1` dashes behind one space of gutter
        spans = [(start - 1, end) for start, end in runs]
        if spans[0][0] < 1 or any(a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False)):
            raise lines.error(line_no, line, "ruler columns overlap")
        h_no, h_line = self.header
        head = h_line.rstrip()
        if len(head) > spans[-1][1]:
            raise lines.error(h_no, h_line, "header text beyond the ruler")
        label_head = head[: spans[0][0]].strip()
        if label_head not in ("", "PID") or (label_head == "PID") != (t.mode == "list"):
            raise lines.error(h_no, h_line, f"unexpected label header {label_head!r}")
        self._next_part(t, h_no, h_line, lines)
        names = []
        for start, end in spans:
            name = head[start:end].strip()
            if name == "Total":
                self._add_column(t, name, None, h_no, h_line, lines)
            elif m := _NODE_HEAD.match(name):
                self._add_column(t, name, int(m[1]), h_no, h_line, lines)
            else:
                raise lines.error(h_no, h_line, f"column header {name!r} is not `Node N` or `Total`")
            names.append(name)
        t.spans, t.label_end, t.part_cols, t.part_rows = spans, spans[0][0], names, 0
        self.header = None
        self.expect = "rows"

    def _add_column(
        self, t: _Table, name: str, node: int | None, line_no: int, line: str, lines: Lines
    ) -> None:
        if node is not None and node >= _MAX_NODE:
            raise lines.error(line_no, line, f"implausible node number {node}")
        if name in t.columns:
            raise lines.error(line_no, line, f"column {name!r} appears twice in one table")
        t.columns.append(name)

    def _next_part(self, t: _Table, line_no: int, line: str, lines: Lines) -> None:
        """A header after the first part starts a folded part: the previous part must have had every row."""
        if not t.columns:
            return
        if t.part_rows != len(t.labels):
            raise lines.error(
                line_no, line, f"folded part after a part of {t.part_rows} rows, not {len(t.labels)}"
            )
        t.part += 1

    # ------------------------------------------------------------ rows

    def _row(self, line_no: int, line: str, text: str, lines: Lines) -> None:
        t = self.table
        if t is None:
            return
        if _RULER.match(text):
            return  # the rule numastat draws above a `Total` row
        if len(text) > t.spans[-1][1]:
            raise lines.error(line_no, line, "text beyond the last column")
        label = text[: t.label_end].rstrip()
        if not label:
            raise lines.error(line_no, line, "row without a label")
        if label != "Total":
            if t.mode == "list":
                if not _PID_LABEL.match(label):
                    raise lines.error(line_no, line, f"row label {label!r} is not `PID (name)`")
            elif not _LABEL.match(label):
                raise lines.error(line_no, line, f"row label {label!r} is not a numastat row name")
        row = self._row_index(t, label, line_no, line, lines)
        for (start, end), name in zip(t.spans, t.part_cols, strict=True):
            cell = text[start:end]
            if cell[:1] not in ("", " "):
                raise lines.error(line_no, line, f"value overflows its column under {name!r}")
            cell = cell.strip()
            if not cell:
                t.cells[(row, name)] = np.nan  # numastat leaves a cell blank when a node had no data
            elif _VALUE.match(cell):
                t.cells[(row, name)] = float(cell)
            else:
                raise lines.error(line_no, line, f"{cell!r} under {name!r} is not a number")

    def _row_index(self, t: _Table, label: str, line_no: int, line: str, lines: Lines) -> int:
        """Rows of a later folded part must repeat the first part's labels in the same order."""
        row = t.part_rows
        t.part_rows += 1
        if t.part == 0:
            if label in t.labels:
                raise lines.error(line_no, line, f"row {label!r} appears twice in one table")
            t.labels.append(label)
            return row
        if row >= len(t.labels) or t.labels[row] != label:
            want = t.labels[row] if row < len(t.labels) else "no more rows"
            raise lines.error(line_no, line, f"folded part: row {label!r} where the first part has {want!r}")
        return row

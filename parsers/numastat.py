"""numastat: every form of numactl's `numastat` (perfkit runs `numastat -c`), in long form.

Reads numastat 20130723 (numactl 2.0.x, Debian 12's 2.0.16), which is not translated (no locale
variant). The forms, each told apart by its own lines:

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
Each header starts a part; the parts of one table (up to the next title; compatibility parts while
their node numbers go on) are joined back by row position and label, never shifted: a part of
another row count or other labels is a ParseError, but for the last part of a table (cut off).

A row is a one-word label, then one number per header column (titled tables `[-+]?\\d+(.\\d+)?`, a
decimal comma refused; compatibility rows integers), read by the table engine (parsers/_table.py).
numastat right-justifies each data column behind one space of gutter under its dashed ruler, so a
row that does not split into the header's columns is sliced on the ruler: a label that holds spaces
(`20469 (Web Content)`), a blank cell (no data for that node: NaN); a cell whose gutter is not blank
overflowed and is a ParseError.

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
processes) has metric `total` and pid NA. Exactly one of `pages` and `mb` is set per row (pages are
never converted: the page size is not in the capture).

Lines of other output saved with numastat (a shell's message, `numastat -V`, another tool's lines)
are skipped and counted (`skipped`, parsers/_common.Skips), the capture read and marked partial:
before any table, and after a compatibility-mode table (a line that does not start with a lowercase
row name ends it). Inside a titled table a line stays a ParseError naming it, and so does a
compatibility row that starts like one (`numa_hit 12 x`); a file with no cell read but lines skipped
is refused naming the first.

What it reads beside its rows: `EXTRAS` (below).

Tested on: tests/fixtures/numastat/ (README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from ._chunks import Interned
from ._common import Extras, Source, coerce, empty_frame, text_column
from ._table import ROW, Block, Layout, Table


@dataclass(frozen=True)
class NumastatExtras(Extras):
    """What numastat reads beside its rows (see `_common.Extras`); `unknown_columns` is always empty
    (headers are `Node N`/`nodeN`/`Total` or a ParseError), `notes` says skipped kernel tokens, `Found
    no processes ...`, `Table has no data.`, cut tables."""

    nodes: list[int] = field(default_factory=list)  # the node numbers seen, sorted


EXTRAS = NumastatExtras

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
_TITLES = {
    "Per-node numastat info (in MBs):": ("numa", None, None, "single"),
    "Per-node system memory usage (in MBs):": ("meminfo", None, None, "single"),
    "Per-node process memory usage (in MBs)": ("process", None, None, "list"),
}
_TITLE_PROCESS = re.compile(r"^Per-node process memory usage \(in MBs\) for PID (\d{1,10}) \((.*)\)$")
_TOKEN_NOTE = re.compile(r"^Token (\S+) not in hash table\.$")
_NO_MATCH = re.compile(r'^Found no processes containing pattern: ".*"$')
_NO_DATA = ("Table has no data.", "Table has no non-zero data.")
_COMPAT_HEADER = re.compile(r"^\s+node\d{1,7}(?:\s+node\d{1,7})*$")
_HEADER = re.compile(r"^(PID)?((?: +(?:Node \d{1,7}|Total))+) *$")
_COLUMN = re.compile(r"Node \d+|\S+")
_RULER = re.compile(r"^[ -]*-[ -]*$")
_RUN = re.compile(r"-+")
_COMPAT_LABEL = re.compile(r"^[a-z_]+$")
_COMPAT_START = re.compile(r"^[a-z_]+\s")  # what a compatibility row starts with, well-formed or not
_PID_LABEL = re.compile(r"^(\d{1,10}) \((.*?)\)?$")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_()]*$")
_NOT_NUMASTAT = "not a numastat line (no title or `node0` header before it)"


class _Head(NamedTuple):
    """A header's columns (its `Layout.key`): names as printed, node numbers (-1: `Total`), whether it
    is a compatibility header (`node0`, pages)."""

    names: tuple[str, ...]
    nodes: tuple[int, ...]
    compat: bool


def sniff(text: str) -> bool:
    """A numastat title, or the compatibility header `node0 ...` followed by a `numa_hit` row."""
    lines = [ln.rstrip() for ln in text[:4096].splitlines()[:40]]
    for i, line in enumerate(lines):
        if _title(line) is not None:
            return True
        if _COMPAT_HEADER.match(line) and i + 1 < len(lines) and lines[i + 1].startswith("numa_hit "):
            return True
    return False


def _title(line: str) -> tuple[str, int | None, str | None, str] | None:
    """(section, pid, process, mode) of a title line; None for any other line. Mode: `single` (one
    system or process table), `list` (one `PID (name)` row per process)."""
    text = line.rstrip()
    if text in _TITLES:
        return _TITLES[text]
    m = _TITLE_PROCESS.match(text)
    return ("process", int(m[1]), m[2], "single") if m else None


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a numastat capture (any form above) into one row per table cell.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (numastat prints no time); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: a line numastat does not print inside a titled table, a header that is not
            `Node N`/`Total`, a value that is not a number or overflows its column, a folded part
            whose row labels differ; no cell read while other lines were skipped.
    """
    numastat = _Numastat(source, host)
    numastat.table.run()
    return numastat.frame()


class _Numastat:
    """The format for the table engine: every line goes in the runs of rows (a capture of `numastat -c`
    every second is read in bulk), headers found by their words; titles, dashed lines (rulers, the
    rule above `Total`) and numastat's notes taken aside by their words."""

    structure_bytes = b""
    # headers by their columns' words after a blank (`Local_Node`, `local_node`, `HugePages_Total` are
    # rows); a folded part's header may hold `Total` alone
    header_words = (b" Node ", b" Total", b" node")
    # titles (`Per-node`), notes (`Token`, `Found no processes`, `Table has no data`), dashed lines
    aside_bytes = b"PTF"
    aside_words = (b"-\n", b"- ")  # a ruler's dash before its end or a blank (`--`: at every dash)

    def __init__(self, source: Source, host: str | None):
        self.host = host
        self.table = Table(source, KIND, self)
        self.table.odd_row = self._odd_row
        self.table.foreign = self._foreign
        self.table.numbers.comma_refusal = "not a number: numastat prints a decimal point, never a comma"
        self.notes: list[str] = []
        self.heads: dict[_Head, tuple[int, str]] = {}  # each header: its code, its text as printed
        # titles (section, pid, process, mode) and dashed lines (their spans; None: not a ruler) by code
        self.infos: list[tuple[str, int | None, str | None, str]] = []
        self.spans: list[tuple[tuple[int, int], ...] | None] = []
        self.dash_texts: list[str] = []
        self._aside: dict[str, tuple[str, int]] = {}
        none = np.empty(0, dtype=np.int64)
        self.where = {"title": (none, none), "dash": (none, none)}  # their line numbers and codes so far
        self._checked: set[tuple[_Head, int, int]] = set()
        self.ended: list[int] = []  # lines that ended a compatibility table (`_foreign`)
        self.labels = Interned()
        self.texts = Interned()  # metric, process and section names
        self._meta: dict[tuple[int, int, bool], tuple[int, float, int, int]] = {}
        # per row: line, header line, title (its index in the file; -1: none), header code, label,
        # pid, metric, process, section; per cell: node (-1: Total), value
        self.rows_: list[list[np.ndarray]] = []
        self.cells: list[list[np.ndarray]] = []

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout:
        stripped = text.rstrip()
        if _COMPAT_HEADER.match(stripped):
            names = tuple(stripped.split())
            head = _Head(names, tuple(int(n[4:]) for n in names), compat=True)
        elif m := _HEADER.match(stripped):
            names = tuple(_COLUMN.findall(m[2]))
            head = _Head(names, tuple(-1 if n == "Total" else int(n[5:]) for n in names), compat=False)
        elif text[:1] == " " or text.startswith("PID "):
            words = _COLUMN.findall(stripped.removeprefix("PID"))
            bad = next((w for w in words if not re.fullmatch(r"Node \d{1,7}|Total", w)), stripped)
            raise self.table.error(line_no, text, f"column header {bad!r} is not `Node N` or `Total`")
        else:
            return ROW  # a row holding a header's word
        if max(head.nodes) >= _MAX_NODE:
            raise self.table.error(line_no, text, f"implausible node number {max(head.nodes)}")
        if len(set(names)) < len(names):
            raise self.table.error(line_no, text, "a column appears twice in one table")
        self.heads.setdefault(head, (len(self.heads), text))
        return Layout(("i" if head.compat else "f") * len(names), key=head)

    def aside(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """Which of the lines holding an aside word are titles, dashed lines or numastat's notes (each
        distinct text judged once); the others are rows."""
        codes, uniq = pd.factorize(np.array(texts, dtype=object))
        found = [self._judge(t) for t in uniq.tolist()]
        what = np.array([f[0] for f in found], dtype=object)[codes]
        code = np.array([f[1] for f in found], dtype=np.int64)[codes]
        for kind in ("title", "dash"):
            if (at := what == kind).any():
                lines, codes_so_far = self.where[kind]
                self.where[kind] = (np.append(lines, line_nos[at]), np.append(codes_so_far, code[at]))
        for k in np.flatnonzero(what == "note").tolist():
            text = texts[k].rstrip()
            if token := _TOKEN_NOTE.match(text):
                note = f"numastat skipped kernel field {token[1]} (not in its table)"
            else:
                note = f"numastat: {text}"
            if not (token and note in self.notes):  # each kernel field once
                self.notes.append(note)
        return what != ""

    def _judge(self, text: str) -> tuple[str, int]:
        """What an aside line is: ("title", info), ("dash", spans), ("note", 0) or ("", 0) for a row."""
        if text in self._aside:
            return self._aside[text]
        stripped = text.rstrip()
        found = ("", 0)
        if (info := _title(stripped)) is not None:
            found = ("title", len(self.infos))
            self.infos.append(info)
        elif _RULER.match(stripped):
            runs = [(m.start(), m.end()) for m in _RUN.finditer(stripped)]
            if runs[0][0] == 0:
                runs = runs[1:]  # the label column's own dashes (`PID` tables, the rule above `Total`)
            # numastat right-justifies data columns: `width - 1` dashes behind one space of gutter
            spans = tuple((start - 1, end) for start, end in runs)
            apart = all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
            found = ("dash", len(self.spans))
            self.spans.append(spans if spans and spans[0][0] >= 1 and apart else None)
            self.dash_texts.append(text)
        elif _TOKEN_NOTE.match(stripped) or _NO_MATCH.match(stripped) or stripped in _NO_DATA:
            found = ("note", 0)
        self._aside[text] = found
        return found

    def structure(self, line_no: int, text: str) -> None:
        """A line before any header: another program's (skipped), or after a title a row without header."""
        titles = self.where["title"][0]
        if len(titles) and titles[0] < line_no:
            raise self.table.error(line_no, text, "expected the `Node N` header under the title")
        self.table.skips.add(line_no, text, _NOT_NUMASTAT)

    def _odd_row(self, line_no: int, text: str, tokens: list[str], layout: Layout) -> list | None:
        """A titled row that does not split into its header's columns, sliced on the dashed line above
        it: its label (which may hold spaces), then each cell (None where blank)."""
        head: _Head = layout.key
        lines, codes = self.where["dash"]
        at = int(np.searchsorted(lines, line_no)) - 1
        spans = self.spans[int(codes[at])] if at >= 0 and not head.compat else None
        if spans is None or len(spans) != len(head.names):
            return None
        stripped = text.rstrip()
        if len(stripped) > spans[-1][1]:
            raise self.table.error(line_no, text, "text beyond the last column")
        label = stripped[: spans[0][0]].rstrip()
        if not label:
            raise self.table.error(line_no, text, "row without a label")
        cells: list[str | None] = [label]
        for (start, end), name in zip(spans, head.names, strict=True):
            cell = stripped[start:end]
            if cell[:1] not in ("", " "):
                raise self.table.error(line_no, text, f"value overflows its column under {name!r}")
            cells.append(cell.strip() or None)  # numastat leaves a cell blank when a node had no data
        return cells

    def _foreign(self, line_no: int, text: str) -> bool:
        """A line under a compatibility table that does not start like its rows: another program's, the
        table ended there (skipped, counted); any other line that does not read is an error."""
        layout = self.table.current
        if not isinstance(layout, Layout) or not layout.key.compat or _COMPAT_START.match(text):
            return False
        self.ended.append(line_no)
        self.table.skips.add(line_no, text, _NOT_NUMASTAT)
        return True

    def rows(self, block: Block) -> None:
        """A block's rows tied to their title (titled tables: their ruler checked), each distinct label
        checked once; rows with no table (no title, or after a compatibility table ended) skipped."""
        head: _Head = block.layout.key
        lines, headers = block.line_nos, block.headers
        firsts, counts = _runs(headers)  # the rows of each header (in file order: one run each)
        parts = headers[firsts]
        if head.compat:
            title = np.full(len(lines), -1, dtype=np.int64)
            ended = np.array([*self.ended, np.iinfo(np.int64).max], dtype=np.int64)
            keep = lines < np.repeat(ended[np.searchsorted(ended, parts)], counts)  # not after its end
        else:
            part_title = np.searchsorted(self.where["title"][0], parts) - 1
            self._check_rulers(block, head, parts, part_title, firsts)
            title = np.repeat(part_title, counts)
            keep = title >= 0
        for k in np.flatnonzero(~keep).tolist():
            self.table.skips.add(int(lines[k]), block.text(k), _NOT_NUMASTAT)
        if not keep.any():
            return
        labels = np.array([self.labels.code(c) for c in block.label.categories], dtype=np.int64)
        labels = labels[block.label.codes]
        info = _at(self.where["title"][1], title)
        back, pairs = pd.factorize(labels * (len(self.infos) + 1) + info + 1)
        first = np.empty(len(pairs), dtype=np.int64)
        first[back[::-1]] = np.arange(len(back) - 1, -1, -1)  # each pair's first row
        meta = [self._row_meta(block, i, int(labels[i]), int(info[i]), head.compat) for i in first.tolist()]
        metric, pid, process, section = np.array(meta)[back][keep].T
        n = int(keep.sum())
        code = np.full(n, self.heads[head][0], dtype=np.int64)
        texts = [c.astype(np.int64) for c in (metric, process, section)]
        self.rows_.append([lines[keep], headers[keep], title[keep], code, labels[keep], pid, *texts])
        values = np.column_stack([np.asarray(f, dtype=np.float64) for f in block.fields])[keep]
        self.cells.append([np.tile(np.array(head.nodes, dtype=np.int64), n), values.ravel()])

    def _check_rulers(
        self, block: Block, head: _Head, parts: np.ndarray, title: np.ndarray, firsts: np.ndarray
    ) -> None:
        """Each titled header's dashed ruler on the next line, its columns the header's, the `PID` label
        header where the title lists processes (once per header, ruler and title kind)."""
        lines, codes = self.where["dash"]
        at = np.minimum(np.searchsorted(lines, parts + 1), max(len(lines) - 1, 0))
        missing = ~(lines[at] == parts + 1) if len(lines) else np.ones(len(parts), dtype=bool)
        if missing.any():
            k = int(np.argmax(missing))
            row = int(firsts[k])
            text = block.text(row) if block.line_nos[row] == parts[k] + 1 else ""
            reason = "expected the dashed ruler under the `Node N` header"
            raise self.table.error(int(parts[k]) + 1, text, reason)
        ruler = codes[at]
        mode = _at(self.where["title"][1], title)
        for k in np.unique(ruler * (len(self.infos) + 1) + mode + 1, return_index=True)[1].tolist():
            key = (head, int(ruler[k]), int(mode[k]))
            if key in self._checked:
                continue
            spans, line_no = self.spans[key[1]], int(parts[k]) + 1
            if spans is None:
                reason = "ruler columns overlap or none is a data column"
                raise self.table.error(line_no, self.dash_texts[key[1]], reason)
            if len(spans) != len(head.names):
                reason = f"{len(head.names)} column headers over a ruler of {len(spans)} columns"
                raise self.table.error(line_no - 1, self.heads[head][1], reason)
            self._checked.add(key)

    def _row_meta(
        self, block: Block, row: int, label_id: int, info: int, compat: bool
    ) -> tuple[int, float, int, int]:
        """(metric, pid, process, section) codes of a row label under a title (info -1: compatibility);
        a label that is no row name of its table is a ParseError naming the first row holding it."""
        key = (label_id, info, compat)
        if key in self._meta:
            return self._meta[key]
        label = block.label.categories[block.label.codes[row]]
        section, pid, process, mode = self.infos[info] if info >= 0 else ("numa", None, None, "compat")
        metric, bad = label, ""
        if mode == "compat":
            if not _COMPAT_LABEL.match(label):
                bad = "not a `numastat` row (`numa_hit   123   456`)"
        elif label == "Total":
            metric = "total"
        elif mode == "list":
            if m := _PID_LABEL.match(label):
                pid, process, metric = int(m[1]), m[2], "total"
            else:
                bad = f"row label {label!r} is not `PID (name)`"
        elif not _LABEL.match(label):
            bad = f"row label {label!r} is not a numastat row name"
        elif section != "meminfo":
            metric = label.lower()
        if bad:
            raise self.table.error(int(block.line_nos[row]), block.text(row), bad)
        code = self.texts.code
        found = (code(metric), np.nan if pid is None else pid, code(process), code(section))
        self._meta[key] = found
        return found

    # ------------------------------------------------------------ the frame

    def frame(self) -> pd.DataFrame:
        if self.rows_:
            df, nodes = self._cells()
        else:
            self.table.skips.refuse_if_nothing_read(0, self.table.lines)
            self._note_cut(self.where["title"][0])  # no compatibility table (no row), none ended (refused)
            df, nodes = empty_frame(SCHEMA), []
        dropped = int(self.table.cut is not None)
        df.attrs.update(
            skipped=self.table.skips, nodes=nodes, dropped_lines=dropped, unknown_columns=[], notes=self.notes
        )
        return df

    def _cells(self) -> tuple[pd.DataFrame, list[int]]:
        """The rows read as one row per cell, tables joined from their parts; the node numbers seen."""
        titles = self.where["title"][0]
        rows = [np.concatenate(c) for c in zip(*self.rows_, strict=True)]
        node, value = (np.concatenate(c) for c in zip(*self.cells, strict=True))
        heads = list(self.heads)
        width = np.array([len(h.names) for h in heads])[rows[3]]  # cells per row, as handed over
        cell_row = None  # each cell's row, where the rows or cells move
        moved = bool((np.diff(rows[0]) < 0).any())  # the engine hands a chunk's rows over layout by layout
        if moved:
            order = np.argsort(rows[0], kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            cell_row = rank[np.repeat(np.arange(len(order)), width)]
            rows = [r[order] for r in rows]
        line, header, title, code, label, pid, metric, process, section = rows
        # parts: one per header line; each titled part in its title's table, compatibility parts joined
        # while their node numbers go on (no title or end between them)
        part_first, part_rows = _runs(header)
        part_at, part_title = header[part_first], title[part_first]
        start = np.where(part_title >= 0, _at(titles, part_title), part_at)
        ends = np.array(self.ended, dtype=np.int64)
        compat = np.flatnonzero(part_title < 0).tolist()
        for a, b in zip(compat, compat[1:], strict=False):
            ha, hb = part_at[a], part_at[b]
            between = (np.searchsorted(titles, hb) != np.searchsorted(titles, ha)) or (
                np.searchsorted(ends, hb) != np.searchsorted(ends, ha)
            )
            nodes_a, nodes_b = heads[code[part_first[a]]].nodes, heads[code[part_first[b]]].nodes
            if b == a + 1 and not between and min(nodes_b) > max(nodes_a):
                start[b] = start[a]
        starts = np.union1d(titles, start[part_title < 0])  # titles, compatibility tables
        part_table = np.searchsorted(starts, start)
        part_no = np.arange(len(part_at)) - np.searchsorted(part_table, part_table)  # rank within its table
        row_part = np.repeat(np.arange(len(part_at)), part_rows)
        self._check_parts(part_at, part_first, part_table, part_no, row_part, line, code, label)
        self._note_cut(starts)
        if (part_no > 0).any():  # a folded table: each row's cells of every part together
            if cell_row is None:
                cell_row = np.repeat(np.arange(len(line)), width)
            col = np.arange(len(node)) - np.repeat(np.cumsum(width) - width, width)
            r = row_part[cell_row]
            row_pos = np.arange(len(line)) - part_first[row_part]
            at = np.lexsort((col, part_no[r], row_pos[cell_row], part_table[r]))
            cell_row, node, value = cell_row[at], node[at], value[at]
        elif moved:
            at = np.argsort(cell_row, kind="stable")
            cell_row, node, value = cell_row[at], node[at], value[at]
        same = bool((width == width[0]).all())

        def cells(rows: np.ndarray) -> np.ndarray:
            """A value per row as one per cell."""
            if cell_row is not None:
                return rows[cell_row]
            return np.repeat(rows, width[0] if same else width)  # a count for all: 3 times as fast

        pages = cells(title < 0)
        pid = cells(pid)
        n = len(node)
        data = {
            "host": text_column([self.host], np.zeros(n, dtype=np.intp)),
            "table": pd.arrays.IntegerArray(cells(part_table[row_part]), np.zeros(n, dtype=bool)),
            "section": self.texts.array(cells(section)),
            "pid": pd.arrays.IntegerArray(np.where(np.isnan(pid), 0, pid).astype(np.int64), np.isnan(pid)),
            "process": self.texts.array(cells(process)),
            "metric": self.texts.array(cells(metric)),
            "node": pd.arrays.IntegerArray(np.maximum(node, 0), node < 0),
            "is_total": pd.arrays.BooleanArray(node < 0, np.zeros(n, dtype=bool)),
            "pages": np.where(pages, value, np.nan),
            "mb": np.where(pages, np.nan, value),
        }
        nodes = sorted({n for c in np.unique(code).tolist() for n in heads[c].nodes if n >= 0})
        return coerce(pd.DataFrame(data, copy=False), SCHEMA), nodes

    def _note_cut(self, starts: np.ndarray) -> None:
        """The last table cut off (the capture's last line dropped), unless a foreign line ended it."""
        if self.table.cut is not None and len(starts) and not (self.ended and self.ended[-1] > starts[-1]):
            self.notes.append(f"table {len(starts) - 1} cut off: its last line was dropped")

    def _check_parts(self, part_at, part_first, part_table, part_no, row_part, line, code, label) -> None:
        """Within a table no row label twice in a part, no column twice; a later part repeats the
        first part's labels in order (the last part may stop short: cut off)."""
        labels = list(self.labels.index)
        twice = pd.Series(row_part * (len(labels) + 1) + label).duplicated().to_numpy()
        if twice.any():
            k = int(np.argmax(twice))
            name = labels[label[k]]
            raise self.table.error(int(line[k]), name, f"row {name!r} appears twice in one table")
        heads = list(self.heads.items())
        for table in np.unique(part_table[part_no > 0]).tolist():
            parts = np.flatnonzero(part_table == table).tolist()
            first = label[row_part == parts[0]]
            columns: set[str] = set()
            for p in parts:
                head, (_, text) = heads[code[part_first[p]]]
                if columns & set(head.names):
                    raise self.table.error(int(part_at[p]), text, "a column appears twice in one table")
                columns |= set(head.names)
                mine = np.flatnonzero(row_part == p)
                n = min(len(mine), len(first))
                differ = np.flatnonzero(label[mine[:n]] != first[:n])
                if len(differ) or len(mine) > len(first):
                    k = int(mine[differ[0] if len(differ) else n])
                    want = repr(labels[first[differ[0]]]) if len(differ) else "no more rows"
                    reason = f"folded part: row {labels[label[k]]!r} where the first part has {want}"
                    raise self.table.error(int(line[k]), labels[label[k]], reason)
                if len(mine) < len(first) and p != parts[-1]:  # the last part of a table may be cut off
                    _, (_, after) = heads[code[part_first[p + 1]]]
                    reason = f"folded part after a part of {len(mine)} rows, not {len(first)}"
                    raise self.table.error(int(part_at[p + 1]), after, reason)


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal values starts in a sorted array, and its length."""
    firsts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    return firsts, np.diff(np.append(firsts, len(values)))


def _at(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """`values[index]`, -1 where `index` is -1 (no title)."""
    if not len(values):
        return np.full(len(index), -1, dtype=np.int64)
    return np.where(index >= 0, values[np.maximum(index, 0)], -1)

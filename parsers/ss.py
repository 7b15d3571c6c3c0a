"""ss: iproute2 `ss -s` socket summaries, as perfkit's `ss` capture loop writes them.

The capture (collectors/captures.py `_SS_LOOP`) prints one block per interval::

    == 1795416970                                  <- `date +%s`: the block's time
    Total: 21
    TCP:   173 (estab 6, closed 164, orphaned 0, timewait 164)

    Transport Total     IP        IPv6
    RAW       0         0         0
    UDP       0         0         0
    TCP       9         9         0
    INET      9         9         0
    FRAG      0         0         0

    timewait: 164                                  <- `ss -Htan state time-wait | wc -l`

A plain `ss -s` (a foreign archive, one or several outputs one after another) has no `==` stamps:
its rows have no timestamp (NaT). Older iproute2 (which read /proc/slabinfo) prints
`Total: 151 (kernel 182)`, `TCP:   63 (estab 32, closed 27, orphaned 0, synrecv 0, timewait 26/0),
ports 0` and a `*` row with the slab count; the parenthesised list is read by key, so keys come and
go without shifting anything, and `timewait 26/0` is the sockstat count 26 (the `/0` is the slab's).
ss prints the same text under every locale (checked under de_DE and zh_CN).

Other output saved beside `ss -s` (`ss -s; ss -tan > f`, `ss -tinp` first, a shell's message): the
transport table ends at its blank line, and a line that is none of ss -s's own (`== N`, `Total:`,
`TCP:`, `timewait:`, `Transport`, a table row) is skipped and counted (`skipped`,
parsers/_common.Skips). A line that starts as ss -s's own but does not match (`TCP: 7`, a table row
of the wrong width) is a ParseError; so is a file with lines skipped and no summary. Sniffing claims
a file that starts with a socket list when a summary follows within its first 8 kB.

Columns (all counts, NA where the version or the block lacks them):
  timestamp (UTC, from the stamp's epoch seconds; `tz` is not needed), host,
  total (`Total:`: sockets of every family, /proc/net/sockstat `sockets: used`),
  total_kernel (old iproute2 only: `(kernel N)`, the slab count),
  tcp_total, tcp_estab, tcp_closed, tcp_orphaned, tcp_synrecv (old only), tcp_timewait,
  tcp_ports (old only: bound ports), all from the `TCP:` line; tcp_total and tcp_closed include
  the TIME_WAIT sockets, and tcp_timewait is the kernel's timewait-socket count, which also holds
  orphaned FIN-WAIT-2 sockets (a client closed, the peer did not yet): `ss state time-wait` does not
  count those.
  timewait_sockets (the loop's `timewait:` line: sockets in state TIME-WAIT proper),
  then the transport table, one column per row and column (`IP` is IPv4):
  raw_sockets, raw_ipv4_sockets, raw_ipv6_sockets, udp_*, tcp_* (TCP sockets in a hash table:
  no TIME_WAIT), inet_* (RAW+UDP+TCP), frag_queues, frag_ipv4_queues, frag_ipv6_queues (IP
  reassembly queues).

attrs: dropped_lines (a last line cut mid-write, or a last block holding only its stamp),
unknown_columns (unknown `TCP:` keys, table rows or columns), skipped (lines of other output).
Tested on: tests/fixtures/ss/ (see README.md there).

Reading: parsers/_table.py reads the transport tables (`blank_ends`) and hands over ss -s's other
lines as aside lines, a stretch at a time; this module reads those by their shape (the line with its
numbers taken out: few distinct ones, each understood once) and, once every block a stretch's numbers
are in has started, puts each in its block's cell, all with numpy.
"""

from __future__ import annotations

import io
import mmap
import re

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import SKIP_QUOTES, Lines, Skips, Source, empty_frame, source_size, text_column
from ._table import ROW, Block, Layout, Table

KIND = "ss"

_TABLE_ROWS = {"RAW": "raw", "UDP": "udp", "TCP": "tcp", "INET": "inet"}
_TABLE_COLS = {"Total": "", "IP": "ipv4_", "IPv6": "ipv6_"}
_TABLE_FIELDS = [f"{p}_{c}sockets" for p in _TABLE_ROWS.values() for c in _TABLE_COLS.values()]
_FRAG_FIELDS = {c: f"frag_{c}queues" for c in _TABLE_COLS.values()}
_TCP_KEYS = {
    "estab": "tcp_estab",
    "closed": "tcp_closed",
    "orphaned": "tcp_orphaned",
    "synrecv": "tcp_synrecv",
    "timewait": "tcp_timewait",
}
COUNTS = (
    "total",
    "total_kernel",
    "tcp_total",
    *_TCP_KEYS.values(),
    "tcp_ports",
    "timewait_sockets",
    *_TABLE_FIELDS,
    *_FRAG_FIELDS.values(),
)
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    **{c: "Int64" for c in COUNTS},
}

_STAMP = re.compile(r"^== (\d{1,11})\s*$")
_TOTAL = re.compile(r"^Total:\s+(\d+)(?:\s+\(kernel\s+(\d+)\))?\s*$")
_TCP = re.compile(r"^TCP:\s+(\d+)\s+\(([^()]*)\)(?:,\s*ports\s+(\d+))?\s*$")
_LIST_HEADER = re.compile(r"^(?:Netid\s+)?State\s+Recv-Q\s+Send-Q\s")  # ss's socket list
# ss -s's other lines, as `_shape` reads them: each ASCII number a group, in order
_N = "([0-9]+)"
_SHAPES = {
    "==": (re.compile(rf"== {_N}"), ("stamp",)),
    "Total:": (re.compile(rf"Total:\s+{_N}(?:\s+\(kernel\s+{_N}\))?"), ("total", "total_kernel")),
    "TCP:": (re.compile(rf"TCP:\s+{_N}\s+\(([^()]*)\)(?:,\s*ports\s+{_N})?"), ()),
    "timewait:": (re.compile(rf"timewait:\s*{_N}"), ("timewait_sockets",)),
}
_TCP_ITEM = re.compile(r"^([a-z_]+)\s+([0-9]+)(?:/([0-9]+))?$")
_ROW_NAME = re.compile(r"^(?:\*|[A-Z][A-Z0-9]*)$")
_FIELDS = ("stamp", *COUNTS, "kernel_row")  # what a number may be: `_FIELD` its code
_FIELD = {name: i for i, name in enumerate(_FIELDS)}
_STAMP_F, _TOTAL_F, _KERNEL_F, _ROW_F = (_FIELD[f] for f in ("stamp", "total", "total_kernel", "kernel_row"))
_MAX_DIGITS = 18  # keeps every count inside Int64
_MAX_EPOCH = 1 << 33  # year 2242: inside pandas' nanosecond range
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[np.frombuffer(b"0123456789", dtype=np.uint8)] = True
_SPACES = bytes(c if 48 <= c <= 57 else 32 for c in range(256))  # `bytes.translate`: all but digits blank
_SKIPPED = "not an ss -s summary line (other output saved with it; socket lists are not read)"
_NOT_SS = "not an ss -s capture (no `== <epoch>` or `Total:` line first)"


def sniff(text: str) -> bool:
    """An `ss -s` summary: a `Total:` line then a `TCP:` line, optionally after a `== <epoch>` stamp;
    or a socket list (`State  Recv-Q Send-Q ...`) with such a summary after it within the head."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and _LIST_HEADER.match(lines[0]):
        return any(_TOTAL.match(a) and _TCP.match(b) for a, b in zip(lines[1:], lines[2:], strict=False))
    lines = lines[:3]
    if lines and _STAMP.match(lines[0]):
        lines = lines[1:]
    return len(lines) >= 2 and bool(_TOTAL.match(lines[0])) and bool(_TCP.match(lines[1]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an `ss` capture (stamped loop or plain `ss -s`) into one row per summary.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: unused: the loop's stamps are epoch seconds.

    Raises:
        ParseError: a line that starts as ss -s's own but does not match it, a value printed twice in
            one block, a table row that does not fit its header; no summary but lines skipped.
    """
    del tz
    return _Ss(source).run(host)


class _Ss:
    """The format for the table engine: every line is a row (no structure line: the loop's blocks stay
    in bulk), the transport tables' headers found by `Transport`, the other lines of ss -s aside lines
    (by `=` first, `Total:`/`TCP:`/`timewait:` anywhere: `aside()` keeps its own)."""

    structure_bytes = b""
    header_words = (b"Transport",)
    aside_bytes = b"="
    aside_words = (b"Total:", b"TCP:", b"timewait:")
    aside_joined = True
    blank_ends = True  # rows after the table's blank line are other output
    chunk_bytes = 1 << 19  # rows read at once: 1 MB peaked 16 MB higher, no faster; 256 kB 10 % slower

    def __init__(self, source: Source):
        self.source = source
        self.table = Table(source, KIND, self)
        self.table.foreign = self.foreign
        # the numbers read since the last `_resolve`, as (field (`_FIELD`), line, value, header line of
        # a table row's, -1 for the other lines): a stretch's at most. Each is put in its block's cell
        # of `values` once its block is known, so that no column of all the numbers is ever held (a
        # day of the loop is 2 M numbers: kept to the end, with their line numbers, they were twice
        # the frame and the parse's peak)
        self.pending: list[tuple[np.ndarray, ...]] = []
        size = source_size(source, self.table.lines)
        room = max(64, size // 256)  # the loop's blocks are 320 bytes; doubled past that
        self.values = _zeros(room, np.int64)  # field x block
        self.filled = _zeros(room, np.bool_)
        self.first_lines: list[np.ndarray] = []  # each block's first line (its stamp or Total:), in order
        self.epochs: list[np.ndarray] = []  # each block's stamp (-1: none)
        self.blocks = 0
        self.last_start = -1  # the last block's first line
        self.last_kinds = np.zeros(0, dtype=bool)  # whether the last two block-starting lines were Total:
        self.headers: list[tuple[np.ndarray, str]] = []  # transport header lines, with their text
        self.errors: list[tuple[int, str, str, bool]] = []  # (line, text, reason, own: a capture's line)
        self.unknown: list[tuple[int, str]] = []
        # the first few of each kind, quoted in file order (None: read again at the end, if quoted)
        self.skipped: list[tuple[int, str | None]] = []
        self.skip_count = 0
        self.first_start = np.iinfo(np.int64).max  # the first stamp or Total: line seen

    def run(self, host: str | None) -> pd.DataFrame:
        try:
            self.table.run()
        except ParseError as exc:  # one before it in what was handed over (an aside line, a value twice)
            self._resolve()
            self._check(before=exc.line_no)
            raise
        return self._frame(host)

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Layout:
        names = text.split()
        if names[:1] != ["Transport"]:
            return ROW
        self.unknown += [(line_no, f"Transport {n}") for n in names[1:] if n not in _TABLE_COLS]
        self.headers.append((np.array([line_no]), text))
        suffixes = tuple(_TABLE_COLS.get(n, "?") for n in names[1:])
        # integers or `-` (old iproute2's `*` row prints it for IP and IPv6): NaN, not kept
        return Layout("I" * len(suffixes), key=(text, suffixes))

    def structure(self, line_no: int, text: str) -> None:
        """A line under no table: before the first, or after a table's blank line."""
        if text.strip():
            self._skip([line_no], [text])

    def foreign(self, line_no: int, text: str) -> bool:
        """A line among a table's rows that does not read: other output unless it is named as a row of a
        table after a summary's first line (one before is other output whatever it holds)."""
        tokens = text.split()
        if tokens and _ROW_NAME.match(tokens[0]) and line_no > self.first_start:
            return False
        self._skip([line_no], [text])
        return True

    def aside(self, line_nos: np.ndarray, data: bytes) -> np.ndarray:
        """Which of these lines (`aside_joined`: one bytes object) are ss -s's own (`== N`, `Total:`,
        `TCP:`, `timewait:`): their numbers read at once, and each line understood by its shape (the
        line with each number one mark: the loop's blocks have four), the first line of a shape alone."""
        self._resolve()  # every line of the stretches before this one was handed over
        buf = np.frombuffer(data, dtype=np.uint8)
        line_end = np.flatnonzero(buf == 10)
        line_start = np.concatenate(([0], line_end[:-1] + 1))
        digit = _DIGIT[buf]
        run_start = np.flatnonzero(digit & ~np.concatenate(([False], digit[:-1])))
        size = np.flatnonzero(digit & ~np.concatenate((digit[1:], [False]))) + 1 - run_start
        runs = np.bincount(np.searchsorted(line_end, run_start), minlength=len(line_end))
        start = np.cumsum(runs) - runs  # each line's first number
        codes, firsts = _shapes(buf, digit, run_start, len(line_end))
        numbers = _numbers(data, size)
        own = np.zeros(len(line_end), dtype=bool)
        for code, first in enumerate(firsts.tolist()):
            text = data[line_start[first] : line_end[first]].decode("utf-8", "replace")
            found = self._shape(int(line_nos[first]), text)
            if found is None:
                continue
            rows = np.flatnonzero(codes == code)
            own[rows] = True
            if isinstance(found, str):  # a line of ss -s's that does not read: the first of its shape
                self.errors.append((int(line_nos[first]), text, found, True))
                continue
            for j, field in enumerate(found):
                if field is None:
                    continue
                at = start[rows] + j
                bad = size[at] > (11 if field == _STAMP_F else _MAX_DIGITS)
                if field == _STAMP_F:
                    bad |= numbers[at] >= _MAX_EPOCH
                if bad.any():
                    k = int(rows[np.argmax(bad)])
                    reason = "stamp is not `date +%s` epoch seconds" if field == _STAMP_F else "not a count"
                    self.errors.append((int(line_nos[k]), "", reason, True))
                self._add(field, line_nos[rows], numbers[at])
                if field in (_STAMP_F, _TOTAL_F):
                    self.first_start = min(self.first_start, int(line_nos[rows[0]]))
        return own

    def _shape(self, line_no: int, text: str) -> list[int | None] | str | None:
        """The field of each number of a line of this shape (`_FIELD`; None: not kept), a reason when it
        starts as ss -s's own line but does not read, None when it is not one of them."""
        text = text.strip()
        prefix = next((p for p in _SHAPES if text.startswith(p)), None)
        if prefix is None:
            return None
        rx, names = _SHAPES[prefix]
        m = rx.fullmatch(text)
        if m is None:
            return "not an ss -s line"
        if prefix != "TCP:":
            return [_FIELD[n] for n, g in zip(names, m.groups(), strict=False) if g is not None]
        fields: list[int | None] = [_FIELD["tcp_total"]]
        for item in m[2].split(","):
            im = _TCP_ITEM.match(item.strip())
            if im is None:
                return f"unreadable item {item.strip()!r} in the TCP: line"
            if im[1] not in _TCP_KEYS:
                self.unknown.append((line_no, f"TCP {im[1]}"))
            fields.append(_FIELD[_TCP_KEYS[im[1]]] if im[1] in _TCP_KEYS else None)
            fields += [None] * (im[3] is not None)  # `timewait 26/0`: the slab's count
        return fields + [_FIELD["tcp_ports"]] * (m[3] is not None)

    def rows(self, block: Block) -> None:
        """Transport table rows: each value to its field by the row's name and the column's header."""
        text, suffixes = block.layout.key
        names = block.label.categories.tolist()
        named = np.array([bool(_ROW_NAME.match(n)) for n in names] + [False])[block.label.codes]
        skip = np.flatnonzero(~named)  # a line under the table that names no row: other output
        if len(skip):
            self._skip(block.line_nos[skip], [block.text(int(k)) for k in skip[:SKIP_QUOTES]])
        for k, n in enumerate(names):
            mine = named & (block.label.codes == k)
            if n not in _TABLE_ROWS and n not in ("FRAG", "*") and mine.any():
                self.unknown.append((int(block.line_nos[np.argmax(mine)]), f"Transport row {n}"))
        heads = block.headers  # in line order: each header where it changes
        self.headers.append((heads[np.concatenate(([True], heads[1:] != heads[:-1]))], text))
        for suffix, values in zip(suffixes, block.fields, strict=True):
            if suffix == "?":
                continue
            huge = values >= 2.0**53  # read as float64 (`I`): exact below
            if huge.any():
                k = int(np.argmax(huge))
                self.errors.append((int(block.line_nos[k]), block.text(k), "not a count", False))
            kept = ~np.isnan(values)
            for k, n in enumerate(names):
                if (f := _cell(n, suffix)) >= 0:
                    at = kept & (block.label.codes == k)
                    self._add(f, block.line_nos[at], values[at], heads[at])

    def _add(self, field: int, nos: np.ndarray, values: np.ndarray, heads: np.ndarray | None = None) -> None:
        if len(nos):
            n = len(nos)
            head = np.full(n, -1, dtype=np.int64) if heads is None else np.asarray(heads, dtype=np.int64)
            # integers: a table's (read as float64, exact below 2**53) joined with a summary line's
            # larger ones would make all of them float64
            values = np.asarray(values, dtype=np.int64)
            self.pending.append((np.full(n, field, dtype=np.int8), np.asarray(nos, np.int64), values, head))

    def _skip(self, line_nos: object, texts: list[str | None]) -> None:
        """Lines of other output: counted, the first few (`texts`) kept to quote."""
        nos = np.asarray(line_nos).tolist()
        self.skip_count += len(nos)
        self.skipped += list(zip(nos, texts[:SKIP_QUOTES], strict=False))

    # ------------------------------------------------------------ the blocks

    def _resolve(self) -> None:
        """Put the numbers read since the last call in their blocks' cells. Every line before the last
        of them has been handed over (the table engine hands over a stretch's aside lines first, then
        its rows), so every block they are in has started. A number under no summary, or a table row
        whose header is in another block, is no cell; one twice in a block is an error."""
        if not self.pending:
            return
        fields, line_nos, values, heads = (np.concatenate(c) for c in zip(*self.pending, strict=True))
        self.pending.clear()
        before = self.blocks
        # a block starts at each stamp, and at a Total: line after none or after another Total:
        st = np.flatnonzero((fields == _STAMP_F) | (fields == _TOTAL_F))
        st = st[np.argsort(line_nos[st], kind="stable")]
        total = fields[st] == _TOTAL_F
        kinds, off = np.concatenate((self.last_kinds, total)), len(self.last_kinds)
        after_total = np.concatenate(([True], kinds[:-1]))[off:]
        stamped = total & after_total & np.concatenate(([False, False], ~kinds[:-2]))[off : len(kinds)]
        self.last_kinds = kinds[-2:]
        if stamped.any():
            self.errors.append(
                (int(line_nos[st[np.argmax(stamped)]]), "", "second Total: line in one stamped block", False)
            )
        starts = st[~total | after_total]
        self.first_lines.append(line_nos[starts])
        self.epochs.append(np.where(fields[starts] == _STAMP_F, values[starts], -1))
        self.blocks += len(starts)
        # the block of a line: the last block started before it (the one before these: `last_start`)
        known = np.concatenate(([self.last_start] if before else [], line_nos[starts]))
        first = before - 1 if before else 0  # the block of `known[0]`

        def block_of(lines: np.ndarray) -> np.ndarray:  # -1 before `known[0]`: an earlier block, or none
            found = np.searchsorted(known, lines, side="right") - 1
            return np.where(found >= 0, found + first, -1)

        if len(starts):
            self.last_start = int(line_nos[starts[-1]])
        block = block_of(line_nos)
        # a table's rows are its header's block's: one under a header in another block (or in none, before
        # the first summary) is other output (`stray`), as is a number in no block under no header. A
        # header before `last_start` is in an earlier block than these numbers, whichever it is
        stray = (heads >= 0) & (block_of(heads) != block)
        outside = (block < 0) & (heads < 0)
        if outside.any():
            self.errors.append((int(line_nos[outside].min()), "", _NOT_SS, False))
        if stray.any():
            lines = np.unique(line_nos[stray])
            self._skip(lines, [None] * SKIP_QUOTES)  # read again only if quoted: once, not each stretch
        # the cells: the `*` row's number is `(kernel N)` again; a value twice in one block is an error,
        # the `*` row's unless it agrees
        kept = (block >= 0) & ~stray & (fields != _STAMP_F)
        fields, line_nos, values, block = (a[kept] for a in (fields, line_nos, values, block))
        cell = np.where(fields == _ROW_F, _KERNEL_F, fields).astype(np.int64) - 1  # a row of `values`
        if self.blocks > self.values.shape[1]:
            self._grow(self.blocks)
        by = np.lexsort((line_nos, block * len(COUNTS) + cell))  # each cell's numbers, in line order
        key = (block * len(COUNTS) + cell)[by]
        again = np.concatenate(([False], key[1:] == key[:-1]))  # the same cell as the number before
        was = self.filled[cell[by], block[by]]  # filled by a stretch before
        firsts = np.maximum.accumulate(np.where(again, 0, np.arange(len(key))))  # each cell's first here
        for k in np.flatnonzero(again | was).tolist():
            i = by[k]
            old = self.values[cell[i], block[i]] if was[k] else values[by[firsts[k]]]
            if fields[i] != _ROW_F:
                self.errors.append(
                    (int(line_nos[i]), "", f"{_FIELDS[fields[i]]} printed twice in one block", False)
                )
            elif values[i] != old:
                self.errors.append(
                    (int(line_nos[i]), "", "`*` row disagrees with `Total: (kernel N)`", False)
                )
        first_of = by[~again & ~was]
        self.values[cell[first_of], block[first_of]] = values[first_of]
        self.filled[cell[first_of], block[first_of]] = True

    def _grow(self, blocks: int) -> None:
        """Room for `blocks` blocks in `values` and `filled` (doubled: the file's size guessed short)."""
        room = max(blocks, 2 * self.values.shape[1])
        for name in ("values", "filled"):
            old = getattr(self, name)
            new = _zeros(room, old.dtype)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)

    def _check(self, before: int | None = None) -> None:
        """A ParseError for the first line (before line `before`, if given) that breaks ss -s's order:
        errors found by `_resolve`, a table's header before any summary (skipped), two transport
        tables in one block."""
        errors = list(self.errors)
        first_lines = np.concatenate(self.first_lines) if self.first_lines else np.empty(0, np.int64)
        heads, at = np.unique(
            np.concatenate([h for h, _ in self.headers] or [np.empty(0, np.int64)]), return_index=True
        )
        texts = np.repeat(np.arange(len(self.headers)), [len(h) for h, _ in self.headers])[at]
        early = heads[: np.searchsorted(heads, first_lines[0]) if len(first_lines) else len(heads)]
        if len(early) and before is None:
            self._skip(early, [self.headers[t][1] for t in texts[:SKIP_QUOTES].tolist()])
        head_block = np.searchsorted(first_lines, heads, side="right") - 1
        twice = np.flatnonzero((head_block[1:] == head_block[:-1]) & (head_block[1:] >= 0)) + 1
        for k in twice[:1].tolist():
            text = self.headers[int(texts[k])][1]
            errors.append((int(heads[k]), text, "second transport table in one block", False))
        self._raise_first(errors, first_lines[:1], before)

    def _raise_first(self, errors: list, first_start: np.ndarray, before: int | None) -> None:
        errors = [e for e in errors if before is None or e[0] < before]
        if not errors:
            return
        line_no, text, reason, own = min(errors, key=lambda e: e[0])
        if own and (not len(first_start) or line_no < first_start[0]):
            reason = _NOT_SS  # one of ss -s's lines before any summary
        raise self.table.error(line_no, text or self._text(line_no), reason)

    def _text(self, line_no: int) -> str:
        """The text of a line, read again (for an error naming it)."""
        source = self.source
        if isinstance(source, io.TextIOBase) and source.seekable():
            source.seek(0)
        elif not isinstance(source, str) and not hasattr(source, "__fspath__"):
            return ""
        return next((text for no, text in Lines(source, KIND) if no == line_no), "")

    def _frame(self, host: str | None) -> pd.DataFrame:
        self._resolve()
        self._check()
        dropped = int(self.table.cut is not None)
        n = self.blocks
        epochs = np.concatenate(self.epochs) if self.epochs else np.empty(0, np.int64)
        if n and epochs[-1] >= 0 and not self.filled[:, n - 1].any():
            n, dropped = n - 1, dropped + 1  # the capture stopped after `date`, before ss -s printed
        skips = Skips()
        for line_no, text in sorted(self.skipped, key=lambda e: e[0])[:SKIP_QUOTES]:
            skips.add(line_no, self._text(line_no) if text is None else text, _SKIPPED)
        skips.count = self.skip_count
        skips.refuse_if_nothing_read(n, self.table.lines)
        start = int(self.first_lines[0][0]) if n else 0
        seen = [u for _, u in sorted(self.unknown) if _ >= start]
        attrs = {"dropped_lines": dropped, "unknown_columns": list(dict.fromkeys(seen)), "skipped": skips}
        if not n:
            df = empty_frame(SCHEMA)
        else:
            stamp = np.where(epochs[:n] >= 0, epochs[:n], np.nan)
            data: dict[str, object] = {
                "timestamp": pd.to_datetime(stamp, unit="s", utc=True).as_unit("ns"),
                "host": text_column([host], np.zeros(n, dtype=np.intp)),
            }
            for k, name in enumerate(COUNTS):  # views of the field's row: no second copy of the values
                data[name] = pd.arrays.IntegerArray(self.values[k, :n], ~self.filled[k, :n])
            df = pd.DataFrame(data, copy=False)
        df.attrs.update(attrs)
        return df


def _zeros(blocks: int, dtype: type | np.dtype) -> np.ndarray:
    """A field x block table of zeros in pages of its own (an anonymous mapping): a page costs memory
    only once a block's value is written in it. `np.zeros` comes from the heap at this size once the
    parse has freed a few arrays as large (glibc's mmap threshold rises), and is cleared whole there:
    the room guessed for a day of the loop, 21 MB, was all resident from the start."""
    pages = mmap.mmap(-1, len(COUNTS) * blocks * np.dtype(dtype).itemsize)
    return np.frombuffer(pages, dtype=dtype).reshape(len(COUNTS), blocks)


def _shapes(
    buf: np.ndarray, digit: np.ndarray, run_start: np.ndarray, lines: int
) -> tuple[np.ndarray, np.ndarray]:
    """Lines of one shape (their bytes with each number one \\x01): a code per line and each code's first
    line. Where a line holds a NUL or \\x01 itself, each line is a shape of its own."""
    if (buf < 2).any():
        return np.arange(lines), np.arange(lines)
    kept = ~digit
    kept[run_start] = True
    shapes = np.where(digit, 1, buf)[kept].tobytes().split(b"\n")[:-1]
    codes = pd.factorize(np.array(shapes, dtype=object))[0]
    return codes, np.unique(codes, return_index=True)[1]


def _numbers(data: bytes, size: np.ndarray) -> np.ndarray:
    """The ASCII digit runs of `data` as integers (a run too long for int64 as 0: it is refused)."""
    if not len(size):
        return np.empty(0, dtype=np.int64)
    if size.max() <= _MAX_DIGITS:
        return np.fromstring(data.translate(_SPACES), dtype=np.int64, sep=" ")
    return np.array([int(r) if len(r) <= _MAX_DIGITS else 0 for r in data.translate(_SPACES).split()])


def _cell(name: str, suffix: str) -> int:
    """The field (`_FIELD`) of a table row's cell under a column; -1 for none."""
    if name == "*":  # old iproute2's slab count: the `(kernel N)` of the Total: line again
        return _ROW_F if suffix == "" else -1
    if name == "FRAG":
        return _FIELD[_FRAG_FIELDS[suffix]]
    if name in _TABLE_ROWS:
        return _FIELD[f"{_TABLE_ROWS[name]}_{suffix}sockets"]
    return -1

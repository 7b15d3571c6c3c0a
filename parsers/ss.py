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

Scripts save other output beside `ss -s` (`ss -s; ss -tan > f`, `ss -tinp` first, a shell's
message): the transport table ends at its blank line, and any line that is not one of ss -s's own
(`== N`, `Total:`, `TCP:`, `timewait:`, `Transport`, a table row) is skipped and counted
(`attrs["skipped"]`, parsers/_common.Skips), the capture read and marked partial. A line that starts
as one of ss -s's own but does not match its form (`TCP: 7`, a table row of the wrong width) stays a
ParseError naming it; so does a file without any summary but with lines skipped. Sniffing still
claims a file that starts with a socket list when a summary follows within its first 8 kB.

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

attrs: dropped_lines (a last line cut mid-write, or a last block that holds only its stamp),
unknown_columns (keys of the `TCP:` list or table rows/columns this parser does not know),
skipped (lines of other output).
Tested on: tests/fixtures/ss/ (see README.md there).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd

from ._chunks import block_pieces, has_cr, text_chunks, walk_text
from ._common import Lines, Skips, Source, coerce, empty_frame, feed_lines

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
_TCP_ITEM = re.compile(r"^([a-z_]+)\s+(\d+)(?:/\d+)?$")
_TIMEWAIT = re.compile(r"^timewait:\s*(\d+)\s*$")
_ROW_NAME = re.compile(r"^(?:\*|[A-Z][A-Z0-9]*)$")
_LIST_HEADER = re.compile(r"^(?:Netid\s+)?State\s+Recv-Q\s+Send-Q\s")  # ss's socket list
_OWN = re.compile(r"^(?:==|Total:|TCP:|timewait:)")  # ss -s's (and the loop's) own line starts
_MAX_DIGITS = 18  # keeps every count inside Int64
_MAX_EPOCH = 1 << 33  # year 2242: inside pandas' nanosecond range


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


class _Block:
    """One `ss -s` output and what the loop printed around it; values are kept as ints."""

    def __init__(self, line_no: int, epoch: int | None):
        self.line_no = line_no
        self.epoch = epoch
        self.values: dict[str, int] = {}
        self.table: list[str] | None = None  # the table's column suffixes, once its header is seen
        self.table_open = False  # until the blank line after the table: rows after it are not its
        self.lines = 1 if epoch is not None else 0  # non-blank lines read into it, the stamp included


class _Reader:
    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.unknown: list[str] = []
        self.dropped = 0
        self.skips = Skips()

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        text = line.strip()
        if not text:
            if self.blocks:
                self.blocks[-1].table_open = False
            return
        m = _STAMP.match(line)
        if m:
            if int(m[1]) >= _MAX_EPOCH:
                raise lines.error(line_no, line, "stamp is not `date +%s` epoch seconds")
            self.blocks.append(_Block(line_no, int(m[1])))
            return
        block = self.blocks[-1] if self.blocks else None
        m = _TOTAL.match(text)
        if m:
            if block is None or "total" in block.values:
                if block is not None and block.epoch is not None:
                    raise lines.error(line_no, line, "second Total: line in one stamped block")
                block = _Block(line_no, None)  # plain `ss -s` outputs one after another: no stamps
                self.blocks.append(block)
            block.lines += 1
            self._set(block, "total", m[1], line_no, line, lines)
            if m[2] is not None:
                self._set(block, "total_kernel", m[2], line_no, line, lines)
            return
        if block is None:
            if _OWN.match(text):
                raise lines.error(
                    line_no, line, "not an ss -s capture (no `== <epoch>` or `Total:` line first)"
                )
            self.skips.add(
                line_no,
                line,
                "not an ss -s summary line (other output saved with it; socket lists are not read)",
            )
            return
        m = _TCP.match(text)
        if m:
            block.lines += 1
            self._tcp(block, m, line_no, line, lines)
            return
        m = _TIMEWAIT.match(text)
        if m:
            block.lines += 1
            self._set(block, "timewait_sockets", m[1], line_no, line, lines)
            return
        tokens = text.split()
        if tokens[0] == "Transport":
            if block.table is not None:
                raise lines.error(line_no, line, "second transport table in one block")
            block.lines += 1
            block.table = []
            block.table_open = True
            for name in tokens[1:]:
                if name not in _TABLE_COLS:
                    self._unknown(f"Transport {name}")
                block.table.append(_TABLE_COLS.get(name, "?"))
            return
        if block.table is not None and block.table_open and _ROW_NAME.match(tokens[0]):
            block.lines += 1
            self._row(block, block.table, tokens, line_no, line, lines)
            return
        if _OWN.match(text):
            raise lines.error(line_no, line, "not an ss -s line")
        self.skips.add(
            line_no, line, "not an ss -s summary line (other output saved with it; socket lists are not read)"
        )

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        # Cut mid-write: `timewait: 243` may have become `timewait: 24`; never keep a shortened number.
        self.dropped += 1

    def _tcp(self, block: _Block, m: re.Match[str], line_no: int, line: str, lines: Lines) -> None:
        self._set(block, "tcp_total", m[1], line_no, line, lines)
        if m[3] is not None:
            self._set(block, "tcp_ports", m[3], line_no, line, lines)
        for item in m[2].split(","):
            im = _TCP_ITEM.match(item.strip())
            if not im:
                raise lines.error(line_no, line, f"unreadable item {item.strip()!r} in the TCP: line")
            if im[1] in _TCP_KEYS:
                self._set(block, _TCP_KEYS[im[1]], im[2], line_no, line, lines)
            else:
                self._unknown(f"TCP {im[1]}")

    def _row(
        self, block: _Block, table: list[str], tokens: list[str], line_no: int, line: str, lines: Lines
    ) -> None:
        name, cells = tokens[0], tokens[1:]
        if len(cells) != len(table):
            raise lines.error(line_no, line, f"{len(cells)} values under {len(table)} table columns")
        for suffix, cell in zip(table, cells, strict=True):
            if cell == "-":  # the old `*` row prints `-` for IP and IPv6
                continue
            if suffix == "?":
                continue
            if name == "*":
                field = "total_kernel" if suffix == "" else None
            elif name == "FRAG":
                field = _FRAG_FIELDS[suffix]
            elif name in _TABLE_ROWS:
                field = f"{_TABLE_ROWS[name]}_{suffix}sockets"
            else:
                self._unknown(f"Transport row {name}")
                return
            if field is None:
                continue
            if name == "*" and field in block.values:
                # The old `*` row repeats `(kernel N)` of the Total: line: it must agree.
                if block.values[field] != self._int(cell, line_no, line, lines):
                    raise lines.error(line_no, line, "`*` row disagrees with `Total: (kernel N)`")
                continue
            self._set(block, field, cell, line_no, line, lines)

    def _set(self, block: _Block, field: str, text: str, line_no: int, line: str, lines: Lines) -> None:
        if field in block.values:
            raise lines.error(line_no, line, f"{field} printed twice in one block")
        block.values[field] = self._int(text, line_no, line, lines)

    @staticmethod
    def _int(text: str, line_no: int, line: str, lines: Lines) -> int:
        if not text.isdigit() or len(text) > _MAX_DIGITS:
            raise lines.error(line_no, line, f"not a count: {text!r}")
        return int(text)

    def _unknown(self, name: str) -> None:
        if name not in self.unknown:
            self.unknown.append(name)


# The loop's block exactly as iproute2 6.x prints it (12 lines, every count present). A capture made
# only of these blocks is read by one regex per chunk, its counts converted column-wise; anything
# else (old iproute2, plain `ss -s`, unknown keys, a cut last line, CR line ends) goes line by line.
_N = "([0-9]{1,18})"
_T = "[ \t]+"
_FAST_BLOCK = re.compile(
    "^== ([0-9]{1,11})[ \t]*\n"
    f"Total:{_T}{_N}[ \t]*\n"
    f"TCP:{_T}{_N}{_T}\\(estab {_N}, closed {_N}, orphaned {_N}, timewait {_N}\\)[ \t]*\n"
    "\n"
    f"Transport{_T}Total{_T}IP{_T}IPv6[ \t]*\n"
    + "".join(f"{name}{_T}{_N}{_T}{_N}{_T}{_N}[ \t]*\n" for name in ("RAW", "UDP", "TCP", "INET", "FRAG"))
    + "\n"
    f"timewait:[ \t]*{_N}[ \t]*\n",
    re.MULTILINE,
)
_FAST_LINES = 12
# the fast block's groups after the epoch, in order
_FAST_FIELDS = (
    "total",
    "tcp_total",
    "tcp_estab",
    "tcp_closed",
    "tcp_orphaned",
    "tcp_timewait",
    *_TABLE_FIELDS,
    *_FRAG_FIELDS.values(),
    "timewait_sockets",
)


def _fast(source: Source) -> tuple[list[np.ndarray], str, int] | None:
    """Counts of the complete loop blocks, one row per block (epoch first), an array per piece; and the
    capture's last piece when that is not only complete blocks (a cut last line, a last block cut by
    SIGTERM) with its first line number, for the line walk; None if the capture is not the loop's."""
    chunks = text_chunks(source)
    if chunks is None:
        return None
    parts: list[np.ndarray] = []
    tail: tuple[str, int] | None = None
    try:
        # every block starts with its stamp: pieces are cut there
        for piece, first_no in block_pieces(chunks, lambda text: text.rfind("\n== ") + 1):
            if tail is not None or has_cr(piece):
                return None  # an irregular piece before the last one: the line walk reads the capture
            if not _fast_blocks(piece, parts):
                tail = (piece, first_no)
    except OSError:
        return None  # the line walk raises it as a ParseError
    if not parts or any((part[:, 0] >= _MAX_EPOCH).any() for part in parts):
        return None  # no loop block, or a bad stamp, which the line walk names
    return (parts, *(tail or ("", 0)))


def _fast_blocks(text: str, parts: list[np.ndarray]) -> bool:
    """Append the counts of `text` to `parts` if it is only complete loop blocks; else False."""
    if not text.endswith("\n"):
        return False  # a cut last line: the line walk handles it
    found = _FAST_BLOCK.findall(text)
    # matches start at a line start and end at a newline: equal counts mean no line was skipped
    if not found or text.count("\n") != _FAST_LINES * len(found):
        return False
    # every group is a digit run (checked by the regex): numpy's text reader converts them at once
    flat = " ".join(itertools.chain.from_iterable(found))
    parts.append(np.fromstring(flat, dtype=np.int64, sep=" ").reshape(len(found), -1))
    return True


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an `ss` capture (stamped loop or plain `ss -s`) into one row per summary.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: unused: the loop's stamps are epoch seconds, which need no zone.

    Raises:
        ParseError: a line that starts as ss -s's own but does not match it, a value printed twice
            in one block, a table row that does not fit the table's header; no summary read while
            other lines were skipped.
    """
    del tz
    fast = _fast(source)
    reader = _Reader()
    if fast is None:
        feed_lines(source, KIND, reader.feed, reader.cut_last)
    elif fast[1]:
        walk_text(fast[1], fast[2], Lines(source, KIND), reader.feed, reader.cut_last)
    blocks = reader.blocks
    if blocks and not blocks[-1].values:
        # The capture stopped after `date` but before `ss -s` printed a number: nothing measured.
        reader.dropped += blocks.pop().lines
    rows = len(blocks) + (sum(len(p) for p in fast[0]) if fast is not None else 0)
    reader.skips.refuse_if_nothing_read(rows, Lines(source, KIND))
    attrs = {"dropped_lines": reader.dropped, "unknown_columns": reader.unknown, "skipped": reader.skips}
    frames = [] if fast is None else [_fast_frame(fast[0], host)]
    if blocks:
        frames.append(_blocks_frame(blocks, host))
    if not frames:
        df = empty_frame(SCHEMA)
    elif len(frames) == 1:
        df = frames[0]
    else:
        df = coerce(pd.concat(frames, ignore_index=True), SCHEMA)
    df.attrs.clear()
    df.attrs.update(attrs)
    return df


def _blocks_frame(blocks: list[_Block], host: str | None) -> pd.DataFrame:
    """The frame of the line walk's blocks."""
    n = len(blocks)
    data: dict[str, object] = {
        col: pd.array([b.values.get(col) for b in blocks], dtype="Int64") for col in COUNTS
    }
    epochs = np.array([np.nan if b.epoch is None else b.epoch for b in blocks], dtype=np.float64)
    data["timestamp"] = pd.to_datetime(epochs, unit="s", utc=True)
    data["host"] = pd.array([host] * n, dtype="string")
    return coerce(pd.DataFrame(data, copy=False), SCHEMA)


def _fast_frame(parts: list[np.ndarray], host: str | None) -> pd.DataFrame:
    """The frame of `_fast`'s counts: what the line walk builds for the same blocks."""
    # one column at a time from the pieces' arrays: no second copy of the whole table
    n = sum(len(part) for part in parts)
    epochs = np.concatenate([part[:, 0] for part in parts]).astype(np.float64)
    # in SCHEMA's order: `coerce` then keeps the frame as it is, without a copy
    data: dict[str, object] = {
        "timestamp": pd.to_datetime(epochs, unit="s", utc=True).as_unit("ns"),
        "host": pd.array([host] * n, dtype="string"),
    }
    for col in COUNTS:
        if col in _FAST_FIELDS:
            j = 1 + _FAST_FIELDS.index(col)
            values = np.concatenate([part[:, j] for part in parts])
            data[col] = pd.arrays.IntegerArray(values, np.zeros(n, dtype=bool))
        else:
            data[col] = pd.array([None] * n, dtype="Int64")
    return coerce(pd.DataFrame(data, copy=False), SCHEMA)

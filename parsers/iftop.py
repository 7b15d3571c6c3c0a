"""iftop: `iftop -t -s SECONDS -n -N -B -i IFACE` (perfkit runs it as root), one row per connection line.

Reads iftop 1.0pre4 (Debian 12) text mode (`-t`), with or without `-B` (bytes or bits) and `-P`
(ports). `-t -s N` prints one block after N seconds and exits; `-t` alone prints one every 2 s until
killed (a SIGTERM'd iftop loses its unflushed stdio buffer: the last block is often cut). iftop
prints no time, so blocks are numbered, not timestamped. A block:

    Listening on lo                                              (once, before the first block)
       # Host name (port/service if enabled)            last 2s   last 10s   last 40s cumulative
    --------------------------------------------------------------------------------------------
       1 10.99.0.1:35930                          =>       586B       293B       293B     1.14KB
         10.99.0.2:18081                          <=     98.4KB     49.2KB     49.2KB      197KB
    --------------------------------------------------------------------------------------------
    Total send rate:                                     15.9KB     12.0KB     12.0KB
    Total receive rate:                                  3.07MB     2.30MB     2.30MB
    Total send and receive rate:                         3.09MB     2.31MB     2.31MB
    --------------------------------------------------------------------------------------------
    Peak rate (sent/received/total):                     15.9KB     3.07MB     3.09MB
    Cumulative (sent/received/total):                    47.8KB     9.21MB     9.26MB
    ============================================================================================

- Each connection is two lines: `src => dst` traffic on the `=>` line, `dst => src` on the `<=`
  line (src/dst as iftop orders the pair, usually the local side first). On `lo` every packet is
  seen once: all traffic shows on `=>`, `<=` is 0B.
- Rates are averages over the last 2 s, 10 s and 40 s (shorter while iftop has run less long).
  Units step by 1024 (iftop's `readable_size`): `B KB MB GB` with `-B`, bits `b Kb Mb Gb` without
  it; all converted to bytes per second. `cumulative` (bytes since start) is always in `B KB MB GB`.
  iftop prints 3 significant digits, so converted values carry that rounding. Packet units
  (`-u packets`: `p Kp Mp`) are refused with a ParseError.
- A last line without newline was cut mid-write and is dropped (`dropped_lines`), unless it is the
  whole 92-wide `=====` rule: then only the final newline is missing and the block is complete.
- Saved with stderr (`iftop -t ... > f 2>&1`): iftop's own messages before the first block
  (`interface: lo`, `IP address is: ...`, `IPv6 address is: ...`, `MAC address is: ...`) are passed
  over without making the capture partial (`interface:` must agree with `Listening on`). Any other
  line outside a block (a shell's or pcap's message) is skipped and counted (`skipped`): the capture
  is read, marked partial; a file with nothing else is refused, naming its first skipped line.
  Inside a block an unknown line is a ParseError: it sits among rows whose numbers it could be.
- Hosts: `-n` numeric; IPv6 with a port is printed `[fd99::1]:35930`. Ports are numbers with
  `-N`; without `-N` a service name (`:http`) leaves the port NA (said in `notes`). A host column
  is 40 characters wide: longer names overflow it and are still read (split on whitespace).

Schema (one row per connection line, blocks in file order):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| block | Int64 | 1-based block (refresh) number |
| rank | Int64 | iftop's `#` (order by the sort column, 2 s rate by default) |
| src | string | the first host of the pair, as printed (no port, no brackets) |
| src_port | Int64 | its port (`-P`); NA without ports or for a service name |
| dst | string | the second host of the pair |
| dst_port | Int64 | its port |
| direction | string | `send` (the `=>` line: src to dst) or `recv` (the `<=` line: dst to src) |
| rate_2s_bytes_s | float64 | average over the last 2 s, bytes/s |
| rate_10s_bytes_s | float64 | over the last 10 s, bytes/s |
| rate_40s_bytes_s | float64 | over the last 40 s, bytes/s |
| cumulative_bytes | float64 | bytes in that direction since iftop started |

What it reads beside its rows: `EXTRAS` (below). The table engine (`_table`) reads the connection
lines by `_LAYOUT`; this module reads iftop's other lines, pairs the connection lines, numbers the
blocks and converts each distinct text once.

Tested on: tests/fixtures/iftop/ (README.md there).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._chunks import Interned
from ._common import Extras, Parts, Source, coerce, empty_frame, text_column
from ._table import ROW, Block, Layout, Skip, Table


@dataclass(frozen=True)
class IftopExtras(Extras):
    """What iftop reads beside its rows (see `_common.Extras`); `unknown_columns` is always empty,
    `notes` says an unfinished last block and service names, `skipped` counts unknown lines outside
    blocks."""

    # one record per complete block: `block`, `send_{2s,10s,40s}_bytes_s`, `recv_...`, `total_...`,
    # `peak_{send,recv,total}_bytes_s`, `cumulative_{send,recv,total}_bytes`
    totals: list[dict] = field(default_factory=list)
    interface: str | None = None  # as iftop's banner names it (`Listening on`)
    rate_unit: str | None = None  # `bytes` or `bits` (per second), as printed


EXTRAS = IftopExtras

KIND = "iftop"

SCHEMA: dict[str, str] = {
    "host": "string",
    "block": "Int64",
    "rank": "Int64",
    "src": "string",
    "src_port": "Int64",
    "dst": "string",
    "dst_port": "Int64",
    "direction": "string",
    "rate_2s_bytes_s": "float64",
    "rate_10s_bytes_s": "float64",
    "rate_40s_bytes_s": "float64",
    "cumulative_bytes": "float64",
}

# unit -> (bytes factor, family): iftop steps by 1024; bits are divided by 8
_UNITS: dict[str, tuple[float, str]] = {
    prefix + unit: (1024.0**power / per_byte, family)
    for unit, per_byte, family in (("B", 1, "bytes"), ("b", 8, "bits"))
    for power, prefix in enumerate(("", "K", "M", "G"))
}
_PACKETS = ("p", "Kp", "Mp")
_FAMILIES = {"bytes": 1, "bits": 2}  # as numbers (0: no value)
_VALUE = re.compile(r"^(\d{1,12}(?:\.\d{1,6})?)([A-Za-z]{1,2})$", re.ASCII)
_LISTENING = re.compile(r"^Listening on (\S+)$")
# what iftop writes to stderr before it listens (packet_init): known, so not counted as skipped
_STDERR_INTERFACE = re.compile(r"^interface: (\S+)$")
_STDERR_ADDRESS = re.compile(r"^(?:IP address is|IPv6 address is|MAC address is): \S+$")
_HEADER = re.compile(
    r"^\s*# Host name \(port/service if enabled\)\s+last 2s\s+last 10s\s+last 40s\s+cumulative$"
)
# the engine's aside lines but totals: the header (group 1), a `-` rule (2) or the closing `=` rule (3)
_RULES = re.compile(
    r"(?:([ \t]*# Host name \(port/service if enabled\)[ \t]+last 2s[ \t]+last 10s[ \t]+last 40s"
    r"[ \t]+cumulative)|(-{20,})|(={20,}))[ \t]*$"
)
# a totals line: one of `_TOTAL_NAMES`, a colon, `_VALUES`; each name -> the `totals` keys of its values
_VALUES = re.compile(r"(?: +\S+){3}[ \t]*")
_SPANS, _WAYS = ("2s", "10s", "40s"), ("send", "recv", "total")
_TOTAL_NAMES = {
    "Total send rate": [f"send_{span}_bytes_s" for span in _SPANS],
    "Total receive rate": [f"recv_{span}_bytes_s" for span in _SPANS],
    "Total send and receive rate": [f"total_{span}_bytes_s" for span in _SPANS],
    "Peak rate (sent/received/total)": [f"peak_{way}_bytes_s" for way in _WAYS],
    "Cumulative (sent/received/total)": [f"cumulative_{way}_bytes" for way in _WAYS],
}
_CUMULATIVE = "Cumulative (sent/received/total)"  # the one totals line not in bytes/s
_TOTAL_KEYS = [key for keys in _TOTAL_NAMES.values() for key in keys]
_SLOTS = {name: 3 * k for k, name in enumerate(_TOTAL_NAMES)}  # a totals line's first key in `_TOTAL_KEYS`
_HEAD, _RULE, _END, _TOTALS = 1, 2, 3, 4  # the aside lines (0: none)
_RANK = re.compile(r"[0-9]{1,9}")  # a whole token: no sign
_RULE_WIDTH = 92  # iftop's `=====` line, whole
_OUTSIDE = "not an iftop -t line (outside a block)"
_NOT_IFTOP = "not an iftop -t line"

# A connection line: the rank (`=>` lines only), host, arrow, the 2 s, 10 s, 40 s rates and cumulative bytes
_LAYOUT = Layout("tttttt", labels=(1, 0), mixed=True)
_ADDR, _ARROW, _VALUE_FIELDS = 0, 1, (2, 3, 4, 5)
_COLUMNS = list(SCHEMA)[1:]  # `_Iftop.parts`: all but the host


def sniff(text: str) -> bool:
    """iftop's text header `# Host name (port/service if enabled) ... cumulative` near the top."""
    return any(_HEADER.match(line.rstrip()) for line in text[:4096].splitlines()[:10])


class _Iftop:
    """The format for the table engine: connection lines start with a blank or the rank's digits; the
    header (found by its words), rules and totals lines are aside lines among them; `Listening on`,
    iftop's stderr and anything else are structure lines."""

    row_bytes = b" \t\n0123456789TPC-="
    aside_bytes = b"TPC-="
    aside_words = (b"# Host name",)
    header_words = ()
    first_layout = _LAYOUT  # no header switches layouts: the connection lines read alike throughout
    chunk_bytes = 1 << 22  # rows read at once: 8 MB chunks peak 20 MB higher (4 h), no faster

    def __init__(self, source: Source):
        self.table = Table(source, KIND, self)
        self.table.foreign = self._foreign
        self.opens: list[int] = []  # the header lines, the `=====` lines: which block a line is in
        self.closes: list[int] = []
        self.current: dict[str, float | int | None] = {}  # the open block's totals
        self.totals: list[dict[str, float | int | None]] = []
        self.last_line = 0  # the last line seen besides the connection lines
        self.interface: str | None = None
        self.interface_said: str | None = None  # stderr's `interface: X`
        self.unit: str | None = None  # `bytes` or `bits`: the rates' unit family
        self.notes: list[str] = []
        self.tokens: dict[str, tuple[float, str] | str] = {}  # a value -> (bytes, family), or why not
        self.addresses: dict[str, tuple[int, float]] = {}  # a host token -> (its host's code, port)
        self.hosts = Interned()
        self.parts = Parts(len(_COLUMNS))
        self.pending: dict[str, np.ndarray] | None = None  # a `=>` row whose `<=` row is not read yet
        self.pending_text = ""  # its line

    @property
    def in_block(self) -> bool:
        return len(self.opens) > len(self.closes)

    def _inside(self, line_no: int) -> bool:
        return bisect.bisect(self.opens, line_no) > bisect.bisect(self.closes, line_no)

    # ------------------------------------------------------------ the format

    def layout(self, line_no: int, text: str) -> Skip:
        return ROW  # never called: without header words no line is a header

    def aside(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """Which lines among the connection lines are iftop's header, rules and totals lines, and the
        blocks they open, close and total. Rules and headers repeat: each distinct text and value is
        read once."""
        codes, distinct = _factorize(texts)
        kinds = np.zeros(len(distinct), dtype=np.int8)
        names: list[str] = []  # the distinct totals lines': their names, their values (3 a line)
        tokens: list[str] = []
        for k, text in enumerate(distinct):
            name, _, values = text.partition(":")
            if name in _TOTAL_NAMES and _VALUES.fullmatch(values):
                kinds[k] = _TOTALS
                names.append(name)
                tokens += values.split()
            elif m := _RULES.match(text):
                kinds[k] = _HEAD if m[1] else _RULE if m[2] else _END
        kind = kinds[codes]
        keep = kind > 0
        if not keep.any():
            return keep
        self.last_line = max(self.last_line, int(line_nos[keep][-1]))
        at, read = _factorize(tokens)
        rates = np.array([n != _CUMULATIVE for n in names], dtype=bool)[:, None]
        values, reasons = self._read(read, at.reshape(-1, 3), rates)
        line_of = np.full(len(distinct), -1)  # a distinct text -> its row in `values`
        line_of[kinds == _TOTALS] = np.arange(len(names))
        # each header opens a block, each `=====` closes it: they must alternate
        marks = np.flatnonzero((kind == _HEAD) | (kind == _END))
        is_head = kind[marks] == _HEAD
        wrong = np.flatnonzero(is_head != ((np.arange(len(marks)) % 2 == 0) != self.in_block))
        stop = int(marks[wrong[0]]) if len(wrong) else len(kind)  # lines before it are in order
        heads_before = np.cumsum(kind == _HEAD)
        inside = heads_before - np.cumsum(kind == _END) + self.in_block > 0
        totals = np.flatnonzero(kind[:stop] == _TOTALS)
        bad = totals[inside[totals] & np.isin(line_of[codes[totals]], list(reasons))]
        if len(bad):
            k = int(bad[0])
            raise self.table.error(int(line_nos[k]), texts[k], reasons[int(line_of[codes[k]])])
        if len(wrong):
            reason = "`=====` without a block header before it"
            if is_head[wrong[0]]:
                open_block = len(self.opens) + int(heads_before[stop]) - 1
                reason = f"new block before block {open_block} ended (`=====`)"
            raise self.table.error(int(line_nos[stop]), texts[stop], reason)
        for k in totals[~inside[totals]].tolist():
            self.table.skips.add(int(line_nos[k]), texts[k], _OUTSIDE)
        # the totals of each block this stretch fills (the open one first), 3 slots a totals line
        opened = int(is_head.sum())
        filled = np.full((opened + self.in_block, len(_TOTAL_KEYS)), np.nan)
        printed = np.zeros(filled.shape, dtype=bool)
        mine = totals[inside[totals]]
        at = (heads_before[mine] - 1 + self.in_block)[:, None]  # each totals line's block
        read = line_of[codes[mine]]
        slots = np.array([_SLOTS[n] for n in names], dtype=np.int64)[read][:, None] + np.arange(3)
        filled[at, slots] = values[read]
        printed[at, slots] = True
        first = len(self.opens) + 1
        blocks = [self.current] if self.in_block else []
        blocks += [{"block": b} for b in range(first, first + opened)]
        for record, row, there in zip(blocks, filled.tolist(), printed.tolist(), strict=True):
            record.update((k, v) for k, v, t in zip(_TOTAL_KEYS, row, there, strict=True) if t)
        self.totals += blocks[: len(is_head) - opened]
        self.opens += line_nos[marks[is_head]].tolist()
        self.closes += line_nos[marks[~is_head]].tolist()
        if self.in_block:
            self.current = blocks[-1]
        return keep

    def _read(
        self, distinct: list[str], codes: np.ndarray, rates: np.ndarray
    ) -> tuple[np.ndarray, dict[int, str]]:
        """Values in bytes(/s), a row of them per line (`codes` into `distinct` tokens, each read once;
        `rates` where they are rates, else cumulative bytes), and for each line that does not read why
        (its first bad value): no value, bits after bytes (the first rate sets the unit), cumulative
        bytes in bits."""
        read = [self._token(t) for t in distinct]
        values = np.array([np.nan if isinstance(f, str) else f[0] for f in read])[codes]
        family = np.array([0 if isinstance(f, str) else _FAMILIES[f[1]] for f in read], dtype=np.int8)[codes]
        is_rate = np.broadcast_to(rates, codes.shape)
        firsts = family[is_rate][:1]
        if self.unit is None and len(firsts):
            self.unit = [None, "bytes", "bits"][firsts[0]]
        wanted = np.where(rates, _FAMILIES.get(self.unit or "", -1), _FAMILIES["bytes"]).astype(np.int8)
        reasons: dict[int, str] = {}
        for k, j in zip(*np.nonzero(family != wanted), strict=True):
            token, found = distinct[codes[k, j]], read[codes[k, j]]
            if isinstance(found, str):
                reason = found
            elif is_rate[k, j]:
                reason = f"{token!r}: {found[1]} after {self.unit} in one capture"
            else:
                reason = f"{token!r}: iftop prints cumulative totals in bytes"
            reasons.setdefault(int(k), reason)
        return values, reasons

    def structure(self, line_no: int, text: str) -> None:
        self.last_line = line_no
        line = text.rstrip()
        if m := _LISTENING.match(line):
            if self.interface is not None and self.interface != m[1]:
                raise self.table.error(line_no, text, f"second interface {m[1]!r} after {self.interface!r}")
            self.interface = m[1]
            self._check_interface(line_no, text)
        elif self._inside(line_no):
            raise self.table.error(line_no, text, _NOT_IFTOP)
        elif m := _STDERR_INTERFACE.match(line):
            self.interface_said = m[1]
            self._check_interface(line_no, text)
        elif not _STDERR_ADDRESS.match(line):
            self.table.skips.add(line_no, text, _OUTSIDE)

    def _foreign(self, line_no: int, text: str) -> bool:
        """A line among the connection lines that does not read as one: skipped outside a block."""
        if self._inside(line_no):
            raise self.table.error(line_no, text, _NOT_IFTOP)
        self.table.skips.add(line_no, text, _OUTSIDE)
        return True

    def _check_interface(self, line_no: int, text: str) -> None:
        said, listening = self.interface_said, self.interface
        if said is not None and listening is not None and said != listening:
            raise self.table.error(line_no, text, f"interface {said!r} on stderr, listening on {listening!r}")

    def rows(self, block: Block) -> None:
        """Connection lines: each `=>` line with the `<=` line after it, values in bytes(/s)."""
        blocks = np.searchsorted(np.array(self.opens, dtype=np.int64), block.line_nos)
        outside = blocks <= np.searchsorted(np.array(self.closes, dtype=np.int64), block.line_nos)
        for k in np.flatnonzero(outside).tolist():  # iftop prints connection lines inside blocks only
            self.table.skips.add(int(block.line_nos[k]), block.text(k), _OUTSIDE)
        row = np.flatnonzero(~outside)  # the rows read, as rows of `block`
        nos = block.line_nos[row]
        errors: list[tuple[int, int, str]] = []  # (line, row of `block`, reason): the first is raised
        label = block.label if block.label is not None else pd.Categorical([""] * len(block))
        texts = label.categories.tolist()  # the rank (`=>` lines), or "" (`<=` lines)
        ranks = np.array([float(t) if _RANK.fullmatch(t) else np.nan for t in texts])[label.codes[row]]
        odd = np.array([t != "" and not _RANK.fullmatch(t) for t in texts], dtype=bool)[label.codes[row]]
        send = ~np.isnan(ranks)
        arrows = block.fields[_ARROW]
        arrow = np.array([{"=>": 1, "<=": 0}.get(t, -1) for t in arrows.categories.tolist()])
        bad = odd | (arrow[arrows.codes[row]] != send)
        errors += [(int(nos[k]), int(row[k]), _NOT_IFTOP) for k in np.flatnonzero(bad)[:1]]
        fields = [block.fields[i] for i in _VALUE_FIELDS]
        where, distinct = _factorize([t for f in fields for t in f.categories.tolist()])  # each read once
        per_field = np.split(where, np.cumsum([len(f.categories) for f in fields])[:-1])
        at = np.column_stack([w[f.codes[row]] for w, f in zip(per_field, fields, strict=True)])
        values, reasons = self._read(distinct, at, np.array([True, True, True, False]))
        errors += [(int(nos[k]), int(row[k]), reasons[k]) for k in sorted(reasons)[:1]]
        hosts = block.fields[_ADDR]
        split = [self._address(t) for t in hosts.categories.tolist()]
        cols = {
            "line": nos,
            "block": blocks[row],
            "send": send,
            "rank": ranks,
            "host": np.array([h for h, _ in split], dtype=np.int64)[hosts.codes[row]],
            "port": np.array([p for _, p in split], dtype=np.float64)[hosts.codes[row]],
            "values": values,
        }
        if self.pending is not None:  # the `=>` row the last rows ended with: its `<=` row first
            prev, self.pending = self.pending, None
            if not len(row) or cols["send"][0] or cols["line"][0] != prev["line"][0] + 1:
                raise self.table.error(int(prev["line"][0]), self.pending_text, _unpaired(prev["rank"][0]))
            self._add({k: np.concatenate((prev[k], v[:1])) for k, v in cols.items()})
            cols, row = {k: v[1:] for k, v in cols.items()}, row[1:]
        nos, send = cols["line"], cols["send"]
        paired = send & np.append((nos[1:] == nos[:-1] + 1) & ~send[1:], False)  # its `<=` row next
        lone_recv = np.flatnonzero(~send & ~np.concatenate(([False], paired[:-1])))
        lone_send = np.flatnonzero(send & ~paired)
        pending = None
        if len(lone_send) and lone_send[-1] == len(send) - 1:  # its `<=` line may start the next rows
            pending, lone_send = {k: v[-1:] for k, v in cols.items()}, lone_send[:-1]
        recv_reason = "`<=` line without the `=>` line of its pair"
        errors += [(int(nos[k]), int(row[k]), recv_reason) for k in lone_recv[:1]]
        errors += [(int(nos[k]), int(row[k]), _unpaired(cols["rank"][k])) for k in lone_send[:1]]
        if errors:
            line_no, k, reason = min(errors)
            raise self.table.error(line_no, block.text(k), reason)
        if pending is not None:
            self.pending, self.pending_text = pending, block.text(int(row[-1]))
            cols = {k: v[:-1] for k, v in cols.items()}
        self._add(cols)

    def _add(self, cols: dict[str, np.ndarray]) -> None:
        """Rows that pair up (`=>`, `<=`, ...) into the frame's columns: each takes its pair's hosts."""
        first = np.flatnonzero(cols["send"])  # the `=>` row of each pair
        src, dst = np.repeat(first, 2), np.repeat(first + 1, 2)
        direction = np.tile(np.array([0, 1], dtype=np.int64), len(cols["send"]) // 2)
        hosts = [cols["host"][src], cols["port"][src], cols["host"][dst], cols["port"][dst]]
        rank = cols["rank"][src].astype(np.int64)
        self.parts.add([cols["block"], rank, *hosts, direction, *cols["values"].T])

    def _token(self, token: str) -> tuple[float, str] | str:
        """A value with its unit -> (bytes, unit family), or why it is none (`12.3KB`, `188Kb`)."""
        if (hit := self.tokens.get(token)) is not None:
            return hit
        m = _VALUE.match(token)
        if m is None:
            found: tuple[float, str] | str = f"{token!r} is not an iftop value (`12.3KB`, `188Kb`)"
        elif m[2] in _PACKETS:
            found = "packet rates (iftop -u packets) are not read: capture with -B"
        elif m[2] not in _UNITS:
            found = f"unknown unit {m[2]!r} in {token!r}"
        else:
            factor, family = _UNITS[m[2]]
            found = (float(m[1]) * factor, family)
        self.tokens[token] = found
        return found

    def _address(self, text: str) -> tuple[int, float]:
        """`10.0.0.1:3306`, `[fd99::1]:35930`, `fd99::1`, `db1:mysql` -> (host's code, port or NaN)."""
        if (hit := self.addresses.get(text)) is not None:
            return hit
        port: str | None = None
        if text.startswith("[") and "]:" in text:
            addr, _, port = text[1:].partition("]:")
        elif text.count(":") == 1:
            addr, _, port = text.partition(":")
        else:
            addr = text  # no port, or an IPv6 address without one
        number = np.nan
        if port is not None and port.isascii() and port.isdigit() and len(port) <= 5:  # not `²`, `٣`
            number = float(port)
        elif port is not None:
            note = "port names shown (capture without -N): their ports are NA"
            if note not in self.notes:
                self.notes.append(note)
        found = (self.hosts.code(addr), number)
        self.addresses[text] = found
        return found

    # ------------------------------------------------------------ the end

    def finish(self) -> int:
        """After the run: a cut last line, a pair or block left open. Returns the lines dropped."""
        dropped = 0
        if (cut := self.table.cut) is not None:
            line_no, text = cut
            # a whole `=====` rule holds no number to cut: the file only lost its last newline
            if self.in_block and len(text) == _RULE_WIDTH and (m := _RULES.match(text)) and m[3]:
                self.aside(np.array([line_no]), [text])
            else:
                dropped += 1
        if self.pending is not None:  # the capture ended between the two lines of a pair
            line_no, rank = int(self.pending["line"][0]), int(self.pending["rank"][0])
            if self.last_line > line_no:
                raise self.table.error(line_no, self.pending_text, _unpaired(rank))
            dropped += 1
            block = int(self.pending["block"][0])
            self.notes.append(f"block {block}: connection {rank} has no `<=` line (cut off): dropped")
        if self.in_block:
            self.notes.append(f"block {len(self.opens)} unfinished (capture cut off): its totals are missing")
        return dropped


def _unpaired(rank: float) -> str:
    return f"connection {int(rank)}: `=>` line without its `<=` line"


def _factorize(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """(code per text, the distinct texts): a dict, faster than pandas for a few thousand strings."""
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))
    return codes, list(index)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an `iftop -t` capture into one row per connection line (two per connection) and block.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (iftop prints no time); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: a line iftop does not print inside a block, a value without a known unit, packet
            units, bits and bytes mixed, a `<=` line without its `=>` line; no block read at all
            while other lines were skipped.
    """
    fmt = _Iftop(source)
    fmt.table.run()
    dropped = fmt.finish()
    rows = fmt.parts.rows
    fmt.table.skips.refuse_if_nothing_read(len(fmt.totals) + rows, fmt.table.lines)
    if not rows:
        df = empty_frame(SCHEMA)
    else:
        data: dict[str, object] = {"host": text_column([host], np.zeros(rows, dtype=np.intp))}
        for name, column in zip(_COLUMNS, fmt.parts.columns(), strict=True):
            if name in ("src", "dst"):
                data[name] = fmt.hosts.array(column)
            elif name == "direction":
                data[name] = text_column(["send", "recv"], column)
            elif name in ("src_port", "dst_port"):  # NaN: no port
                missing = np.isnan(column)
                data[name] = pd.arrays.IntegerArray(np.where(missing, 0, column).astype(np.int64), missing)
            elif name in ("block", "rank"):
                data[name] = pd.arrays.IntegerArray(column, np.zeros(rows, dtype=bool))
            else:
                data[name] = column
        df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    df.attrs.update(
        totals=fmt.totals,
        interface=fmt.interface,
        rate_unit=fmt.unit,
        dropped_lines=dropped,
        unknown_columns=[],
        notes=fmt.notes,
        skipped=fmt.table.skips,
    )
    return df

"""iftop: `iftop -t -s SECONDS -n -N -B -i IFACE` (perfkit runs it as root), one row per connection line.

Reads iftop 1.0pre4 (Debian 12) text mode (`-t`), with or without `-B` (bytes or bits), with or
without `-P` (ports). `-t -s N` prints one block after N seconds and exits; `-t` alone prints one
block every 2 s until killed (a SIGTERM'd iftop loses its unflushed stdio buffer: the last block is
often cut). iftop prints no time, so blocks are numbered, not timestamped. A block:

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
  Units step by 1024 (iftop's `readable_size`): `B KB MB GB` with `-B`, bits `b Kb Mb Gb`
  without it; all converted to bytes per second. `cumulative` (bytes since start) is always in
  `B KB MB GB`. iftop prints 3 significant digits, so converted values carry that rounding.
  Packet units (`-u packets`: `p Kp Mp`) are refused with a ParseError.
- A last line without newline was cut mid-write and is dropped (`dropped_lines`), unless it is the
  whole 92-wide `=====` rule: then only the final newline is missing and the block is complete.
- Saved with stderr (`iftop -t ... > f 2>&1`): iftop's own messages before the first block
  (`interface: lo`, `IP address is: ...`, `IPv6 address is: ...`, `MAC address is: ...`) are known
  and passed over without making the capture partial (`interface:` must agree with `Listening on`).
  Any other line outside a block (a shell's or pcap's message) is skipped and counted
  (`attrs["skipped"]`, parsers/_common.Skips): the capture is read, marked partial. Inside a block
  an unknown line is still a ParseError naming it: it sits among rows whose numbers it could be.
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

`df.attrs`: `totals` (one record per complete block: `block`, `send_{2s,10s,40s}_bytes_s`,
`recv_...`, `total_...`, `peak_{send,recv,total}_bytes_s`, `cumulative_{send,recv,total}_bytes`),
`interface` (from `Listening on`), `rate_unit` (`bytes` or `bits`, as printed),
`dropped_lines` (a cut-off last line), `unknown_columns` (always empty), `notes` (an unfinished
last block, service names), `skipped` (a `Skips`: unknown lines outside blocks). A file with no block
and no connection read, but lines skipped, is refused naming its first skipped line.

Fast path (a path or a string, read as bytes): one regex (`_FAST_BLOCK`) matches a whole block; the
connection pairs of many blocks are then read at once, by column when every line has iftop's 92-column
layout (values factorised as 8-byte keys, hosts by an exact hash), else by pandas' C reader; each
distinct value token is converted once. Anything the regex or those checks refuse goes through the
line walk, as do streams and CR line ends; a value the line walk would refuse sends the whole capture
through it, so that it names the line.

Tested on: tests/fixtures/iftop/ (README.md there).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._chunks import Interned, byte_pieces, walk_text
from ._common import Lines, Skips, Source, coerce, empty_frame, feed_lines

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

_RATES = ("rate_2s_bytes_s", "rate_10s_bytes_s", "rate_40s_bytes_s")
# unit -> (bytes factor, family): iftop steps by 1024; bits are divided by 8
_UNITS: dict[str, tuple[float, str]] = {
    "B": (1.0, "bytes"),
    "KB": (1024.0, "bytes"),
    "MB": (1024.0**2, "bytes"),
    "GB": (1024.0**3, "bytes"),
    "b": (1 / 8, "bits"),
    "Kb": (1024.0 / 8, "bits"),
    "Mb": (1024.0**2 / 8, "bits"),
    "Gb": (1024.0**3 / 8, "bits"),
}
_PACKETS = ("p", "Kp", "Mp")
_VALUE = re.compile(r"^(\d{1,12}(?:\.\d{1,6})?)([A-Za-z]{1,2})$")
_VALUE_LINES = re.compile(r"^([0-9]{1,12}(?:\.[0-9]{1,6})?)([A-Za-z]{1,2})$", re.MULTILINE)  # `_VALUE`, ASCII
_LISTENING = re.compile(r"^Listening on (\S+)$")
# what iftop writes to stderr before it listens (packet_init): known, so not counted as skipped
_STDERR_INTERFACE = re.compile(r"^interface: (\S+)$")
_STDERR_ADDRESS = re.compile(r"^(?:IP address is|IPv6 address is|MAC address is): \S+$")
_HEADER = re.compile(
    r"^\s*# Host name \(port/service if enabled\)\s+last 2s\s+last 10s\s+last 40s\s+cumulative$"
)
_SEND = re.compile(r"^ {0,4}(\d{1,9}) +(\S+) +=>((?: +\S+){4})$")
_RECV = re.compile(r"^ {2,}(\S+) +<=((?: +\S+){4})$")
_TOTAL = re.compile(r"^(Total send rate|Total receive rate|Total send and receive rate):((?: +\S+){3})$")
_PEAK = re.compile(r"^(Peak rate|Cumulative) \(sent/received/total\):((?: +\S+){3})$")
_DASHES = re.compile(r"^-{20,}$")
_EQUALS = re.compile(r"^={20,}$")
_RULE_WIDTH = 92  # iftop's `=====` line, whole
_TOTAL_KEYS = {
    "Total send rate": "send",
    "Total receive rate": "recv",
    "Total send and receive rate": "total",
}

# The fast path reads a whole block (in bytes) with one regex: its header and rule, its connection pairs
# (group 1), the rule, totals and `=====` after them and the blank lines up to the next block (groups
# 2-16: the totals' values). It is stricter than the line walk's (spaces only, printable ASCII tokens); a
# block it does not read whole goes line by line. Possessive: no backtracking.
_V = r" ++([!-~]++)"  # a value
_FAST_BLOCK = re.compile(
    (
        r" *+# Host name \(port/service if enabled\) ++last 2s ++last 10s ++last 40s ++cumulative *+\n"
        r"-{20,} *+\n"
        r"((?: {0,4}[0-9]{1,9} ++[!-~]++ ++=>(?: ++[!-~]++){4} *+\n"
        r" {2,}[!-~]++ ++<=(?: ++[!-~]++){4} *+\n)*+)"
        r"-{20,} *+\n"
        rf"Total send rate:{_V}{_V}{_V} *+\n"
        rf"Total receive rate:{_V}{_V}{_V} *+\n"
        rf"Total send and receive rate:{_V}{_V}{_V} *+\n"
        r"-{20,} *+\n"
        rf"Peak rate \(sent/received/total\):{_V}{_V}{_V} *+\n"
        rf"Cumulative \(sent/received/total\):{_V}{_V}{_V} *+\n"
        r"={20,} *+\n(?:[ \t]*+\n)*+"
    ).encode()
)
# iftop prints a connection line 92 characters wide (`%4d %-40s %s %10s %10s %10s %10s`) unless a host
# overflows its 40 columns: `_fixed_pairs` reads a pair (`=>` line, `<=` line) by column, `_split_pairs`
# splits any other on blanks. Columns below count from a pair's first character.
_PAIR = 2 * 93  # with the newlines
_RECV_AT = 93  # the `<=` line
_VALUE_AT = (51, 62, 73, 84)  # each value's last 8 columns (in both lines); the 3 before are blank
_PAIR_BYTES: dict[int, int] = {92: ord("\n"), _PAIR - 1: ord("\n"), 46: ord("="), 47: ord(">")}
_PAIR_BYTES |= {_RECV_AT + 46: ord("<"), _RECV_AT + 47: ord("=")}
# blanks around the rank, the hosts and the arrows, and before each value
_PAIR_BYTES |= dict.fromkeys([4, 45, _RECV_AT, _RECV_AT + 1, _RECV_AT + 45], ord(" "))
_PAIR_BYTES |= dict.fromkeys(
    [line + at - k for line in (0, _RECV_AT) for at in _VALUE_AT for k in (1, 2, 3)], ord(" ")
)
_PAIR_CHECKED = np.array(list(_PAIR_BYTES))
_PAIR_EXPECTED = np.array(list(_PAIR_BYTES.values()), dtype=np.uint8)
_PAIR_FILLED = np.array([3] + [line + at + 7 for line in (0, _RECV_AT) for at in _VALUE_AT])  # tokens' ends
_RATE_COLUMNS = np.concatenate(
    [np.arange(line + at, line + at + 8) for line in (0, _RECV_AT) for at in _VALUE_AT[:3]]
)
_CUMULATIVE_COLUMNS = np.concatenate(
    [np.arange(line + _VALUE_AT[3], line + _VALUE_AT[3] + 8) for line in (0, _RECV_AT)]
)
FAST_PAIRS = 1 << 16  # pairs read at once: bounds the buffered text, amortises the numpy and pandas calls
FAST_MIN_PAIRS = 256  # fewer go through the line walk: the fixed cost of a batch exceeds theirs
_TOTAL_NAMES = tuple(
    [f"{key}_{span}_bytes_s" for key in ("send", "recv", "total") for span in ("2s", "10s", "40s")]
    + ["peak_send_bytes_s", "peak_recv_bytes_s", "peak_total_bytes_s"]
    + ["cumulative_send_bytes", "cumulative_recv_bytes", "cumulative_total_bytes"]
)
_STRINGS = ("src", "dst", "direction")
_INTS = ("block", "rank", "src_port", "dst_port")  # Int64 columns, kept as float64 (NaN: NA) until the end


class _Fallback(Exception):
    """A value the fast path cannot read as the line walk would: the line walk reads the whole capture."""


def sniff(text: str) -> bool:
    """iftop's text header `# Host name (port/service if enabled) ... cumulative` near the top."""
    return any(_HEADER.match(line.rstrip()) for line in text[:4096].splitlines()[:10])


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse an `iftop -t` capture into one row per connection line (two per connection) and block.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (iftop prints no time); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `totals`, `interface`, `rate_unit`,
        `dropped_lines`, `unknown_columns`, `notes`.

    Raises:
        ParseError: a line iftop does not print inside a block, a value without a known unit, packet
            units, bits and bytes mixed, a `<=` line without its `=>` line; no block read at all
            while other lines were skipped.
    """
    st = _State()
    try:
        try:
            fast = _fast(source, st)
        except _Fallback:
            fast = False
        if not fast:  # a stream, CR line ends, or a value to report: the line walk over the whole capture
            st = _State()
            feed_lines(source, KIND, st.feed, st.cut_last)
    except ParseError:
        raise
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        path = st.lines.path if st.lines is not None else None
        raise ParseError(KIND, path, st.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})") from exc
    if st.pending is not None:  # the capture ended between the two lines of a pair
        for col in st.cols.values():
            col.pop()
        st.dropped += 1
        st.notes.append(f"block {st.block}: connection {st.pending[0]} has no `<=` line (cut off): dropped")
    if st.in_block:
        st.notes.append(f"block {st.block} unfinished (capture cut off): its totals are missing")
    st.flush()
    if st.lines is not None:
        st.skips.refuse_if_nothing_read(len(st.totals) + sum(len(b) for b in st.parts["block"]), st.lines)
    attrs = {
        "totals": st.totals,
        "interface": st.interface,
        "rate_unit": st.unit,
        "dropped_lines": st.dropped,
        "unknown_columns": [],
        "notes": st.notes,
        "skipped": st.skips,
    }
    # each column's parts are let go once joined: the parts and the frame are not all held at once
    c = {k: np.concatenate(st.parts.pop(k)) if st.parts[k] else np.empty(0) for k in list(st.parts)}
    n = len(c["block"])
    if not n:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    data: dict[str, object] = {"host": pd.array([host], dtype="string").take(np.zeros(n, dtype=np.intp))}
    for k in SCHEMA:
        if k in _STRINGS:
            data[k] = st.strings[k].array(c[k])
        elif k in _INTS:
            data[k] = pd.array(c[k], dtype="Int64")
        elif k != "host":
            data[k] = c[k]
    df = coerce(pd.DataFrame(data, copy=False), SCHEMA)
    df.attrs.update(attrs)
    return df


def _fast(source: Source, st: _State) -> bool:
    """Read a path or string piece by piece (pieces end where a block starts): whole blocks by
    regex, any other line by the line walk, in file order. False for a stream or CR line ends."""
    lines = Lines(source, KIND)
    st.lines = lines
    pieces = byte_pieces(source, lines, b"# Host name (port")
    if pieces is None:
        return False
    try:
        for piece, first_no in pieces:
            if b"\r" in piece:  # CR ends a line for `Lines`, not for the regex
                return False
            body = piece.rfind(b"\n") + 1  # a cut last line goes to the line walk
            view = memoryview(piece)
            line_no = first_no
            pos = 0
            while pos < body:
                if not st.in_block and (m := _FAST_BLOCK.match(piece, pos)):
                    line_no += st.queue(line_no, m, view)
                    pos = m.end()
                    continue
                end = piece.index(b"\n", pos) + 1
                st.flush_fast()
                st.feed(line_no, piece[pos : end - 1].decode(), lines)
                line_no += 1
                pos = end
            if body < len(piece):
                st.flush_fast()
                walk_text(piece[body:].decode(), line_no, lines, st.feed, st.cut_last)
    except OSError:
        return False  # the line walk raises it as a ParseError
    st.flush_fast()
    return True


class _Pairs(NamedTuple):
    """A batch's connection pairs: the ranks, and the tokens at each other place as a code per pair
    into the texts printed there."""

    rank: np.ndarray
    src: tuple[np.ndarray, list[str]]
    dst: tuple[np.ndarray, list[str]]
    rates: tuple[np.ndarray, list[str]]  # codes (pairs, 6): send 2s 10s 40s, recv 2s 10s 40s
    cumulative: tuple[np.ndarray, list[str]]  # codes (pairs, 2): send, recv


def _read_pairs(data: bytes, n: int) -> _Pairs:
    """The `n` pairs `_FAST_BLOCK` matched (two lines each) -> `_Pairs`.

    Raises:
        _Fallback: pandas did not read them as the regex did (a text column that looks numeric).
    """
    return _fixed_pairs(data, n) or _split_pairs(data, n)


def _fixed_pairs(data: bytes, n: int) -> _Pairs | None:
    """`_read_pairs` for pairs in iftop's columns; None for any other. The regex has split each line into
    blank-separated tokens; the checked columns put each token in its field: the rank ends in column
    3 (1 to 4 digits), the hosts end before the arrows in 46-47, a value ends each 11-column field
    after them and is at most 8 long."""
    if len(data) != n * _PAIR:
        return None
    pairs = np.frombuffer(data, dtype=np.uint8).reshape(n, _PAIR)
    if not (np.take(pairs, _PAIR_CHECKED, axis=1) == _PAIR_EXPECTED).all():
        return None
    if (np.take(pairs, _PAIR_FILLED, axis=1) == ord(" ")).any():
        return None
    digits = pairs[:, :4].astype(np.int64) - ord("0")
    digits[digits < 0] = 0  # the blanks before the rank
    src = _distinct(np.take(pairs, np.arange(5, 45), axis=1), slice(0, 40))
    dst = _distinct(np.take(pairs, np.arange(_RECV_AT, _RECV_AT + 48), axis=1), slice(0, 45))
    if src is None or dst is None:
        return None
    values = []
    for columns, width in ((_RATE_COLUMNS, 6), (_CUMULATIVE_COLUMNS, 2)):
        codes, keys = pd.factorize(np.take(pairs, columns, axis=1).view(np.uint64).ravel())
        values.append((codes.reshape(n, width), [k.decode().strip() for k in keys.view("S8")]))
    return _Pairs(digits @ np.array([1000, 100, 10, 1]), src, dst, *values)


def _distinct(field: np.ndarray, text: slice) -> tuple[np.ndarray, list[str]] | None:
    """Rows of bytes (a multiple of 8 wide) -> (a code per row, each code's `text` columns without
    blanks); None on a hash collision. The rows are hashed (a wrapping multiply-add over their 8-byte
    words) and factorised; every row is then compared with its code's first row: exact codes."""
    words = field.view(np.uint64)
    key = words[:, 0].copy()
    for i in range(1, words.shape[1]):
        key = key * np.uint64(0x9E3779B97F4A7C15) + words[:, i]
    codes, uniques = pd.factorize(key)
    first = np.empty(len(uniques), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # the last write wins: each code's first row
    if not (field == field[first[codes]]).all():
        return None
    return codes, [field[i, text].tobytes().decode().strip() for i in first]


def _split_pairs(data: bytes, n: int) -> _Pairs:
    """`_read_pairs` by pandas' C reader: blank-separated, a pair a line (its first newline a blank), so
    rank src => 2s 10s 40s cumulative dst <= 2s 10s 40s cumulative."""
    text = bytearray(data)
    buf = np.frombuffer(text, dtype=np.uint8)
    buf[np.flatnonzero(buf == ord("\n"))[0::2]] = ord(" ")
    places = (1, 3, 4, 5, 9, 10, 11, 6, 12, 7)  # src, the rates, the cumulatives, dst
    fields = {0: np.int64} | dict.fromkeys(places, "category")
    try:
        # usecols: a trailing blank makes an empty last field
        df = pd.read_csv(
            io.BytesIO(text),
            sep=" ",
            skipinitialspace=True,
            header=None,
            names=range(13),
            usecols=list(fields),
            dtype=fields,
            index_col=False,
            na_filter=False,
            quoting=csv.QUOTE_NONE,
            engine="c",
        )
    except (ValueError, pd.errors.ParserError):
        raise _Fallback() from None
    if len(df) != n or not all(pd.api.types.is_string_dtype(df[k].cat.categories) for k in places):
        raise _Fallback()  # numeric-looking texts were read as numbers

    def joint(columns: tuple[int, ...]) -> tuple[np.ndarray, list[str]]:
        """The columns' codes side by side, into their texts one after the other."""
        texts: list[str] = []
        codes = []
        for k in columns:
            codes.append(df[k].cat.codes.to_numpy().astype(np.int64) + len(texts))
            texts += df[k].cat.categories.tolist()
        return np.column_stack(codes), texts

    src, dst = joint((1,)), joint((7,))
    return _Pairs(
        df[0].to_numpy(),
        (src[0][:, 0], src[1]),
        (dst[0][:, 0], dst[1]),
        joint(places[1:7]),
        joint(places[7:9]),
    )


class _State:
    """The line walk: `Listening on`, then blocks of header, connection pairs and totals."""

    def __init__(self) -> None:
        self.lines: Lines | None = None
        self.line_no = 0
        self.interface: str | None = None
        self.unit: str | None = None  # "bytes" or "bits", from the first rate
        self.block = 0
        self.in_block = False
        self.pending: tuple[int, str, int | None] | None = None  # the `=>` line's rank, src, src_port
        self.current: dict[str, float | int | None] = {}
        self.totals: list[dict[str, float | int | None]] = []
        self.dropped = 0
        self.skips = Skips()
        self.interface_said: str | None = None  # stderr's `interface: X`
        self.notes: list[str] = []
        self.cols: dict[str, list] = {k: [] for k in SCHEMA if k != "host"}
        self._token_cache: dict[str, tuple[float, str]] = {}  # a value token -> (bytes, unit family)
        # the fast path's blocks, not yet converted: (first line number, `_FAST_BLOCK` match, pairs)
        self.fast: list[tuple[int, re.Match[bytes], int]] = []
        self.fast_text: list[memoryview] = []  # their pairs
        self.fast_pairs = 0
        # rows converted so far, in file order: arrays per column (string columns as `Interned` codes)
        self.strings = {k: Interned() for k in _STRINGS}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in SCHEMA if k != "host"}
        self._address_cache: dict[str, tuple[str, int | None]] = {}

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.lines, self.line_no = lines, line_no
        text = line.rstrip()
        if self.in_block and self._connection(text, line_no, line, lines):
            return  # the common line first: no other form can match a connection line
        if not text or _DASHES.match(text):
            return
        if m := _LISTENING.match(text):
            if self.interface is not None and self.interface != m[1]:
                raise lines.error(line_no, line, f"second interface {m[1]!r} after {self.interface!r}")
            self.interface = m[1]
            self._check_interface(line_no, line, lines)
            return
        if _HEADER.match(text):
            if self.in_block:
                raise lines.error(line_no, line, f"new block before block {self.block} ended (`=====`)")
            self.block += 1
            self.in_block = True
            self.current = {"block": self.block}
            return
        if _EQUALS.match(text):
            if not self.in_block:
                raise lines.error(line_no, line, "`=====` without a block header before it")
            self._end_pair(line_no, line, lines)
            self.in_block = False
            self.totals.append(self.current)
            return
        if not self.in_block:
            if m := _STDERR_INTERFACE.match(text):
                self.interface_said = m[1]
                self._check_interface(line_no, line, lines)
            elif not _STDERR_ADDRESS.match(text):
                self.skips.add(line_no, line, "not an iftop -t line (outside a block)")
            return
        if m := _TOTAL.match(text):
            self._end_pair(line_no, line, lines)
            key = _TOTAL_KEYS[m[1]]
            vals = self._tokens(m[2], line_no, line, lines, rates=3)
            for span, v in zip(("2s", "10s", "40s"), vals, strict=True):
                self.current[f"{key}_{span}_bytes_s"] = v
            return
        if m := _PEAK.match(text):
            self._end_pair(line_no, line, lines)
            if m[1] == "Peak rate":
                vals = self._tokens(m[2], line_no, line, lines, rates=3)
                names = ("peak_send_bytes_s", "peak_recv_bytes_s", "peak_total_bytes_s")
            else:
                vals = self._tokens(m[2], line_no, line, lines, rates=0)
                names = ("cumulative_send_bytes", "cumulative_recv_bytes", "cumulative_total_bytes")
            self.current.update(zip(names, vals, strict=True))
            return
        raise lines.error(line_no, line, "not an iftop -t line")

    def _check_interface(self, line_no: int, line: str, lines: Lines) -> None:
        said, listening = self.interface_said, self.interface
        if said is not None and listening is not None and said != listening:
            raise lines.error(line_no, line, f"interface {said!r} on stderr, listening on {listening!r}")

    def flush(self) -> None:
        """Move the line walk's rows so far into `parts`."""
        c = self.cols
        if not c["block"]:
            return
        for k, v in c.items():
            if k in _STRINGS:
                self.parts[k].append(self.strings[k].codes(v))
            else:
                self.parts[k].append(np.array(v, dtype=np.float64))
            v.clear()

    def queue(self, line_no: int, m: re.Match[bytes], view: memoryview) -> int:
        """A block `_FAST_BLOCK` matched in `view` (its first line is `line_no`), to be read by
        `flush_fast`; returns how many lines it holds."""
        pairs_at, pairs_end = m.span(1)
        pairs = m.string.count(b"\n", pairs_at, pairs_end) // 2
        self.fast.append((line_no, m, pairs))
        self.fast_text.append(view[pairs_at:pairs_end])
        self.fast_pairs += pairs
        if self.fast_pairs >= FAST_PAIRS:
            self.flush_fast()
        return 2 + 2 * pairs + m.string.count(b"\n", pairs_end, m.end())  # header and rule, pairs, the rest

    def flush_fast(self) -> None:
        """Convert the fast path's queued blocks into `parts` (after the line walk's rows before them);
        a few go through the line walk instead.

        Raises:
            _Fallback: a value the line walk would report or read differently.
        """
        blocks, text, n = self.fast, self.fast_text, self.fast_pairs
        if not blocks:
            return
        self.fast, self.fast_text, self.fast_pairs = [], [], 0
        if n < FAST_MIN_PAIRS:
            for line_no, m, _ in blocks:
                for i, line in enumerate(m.string[m.start() : m.end() - 1].decode().split("\n")):
                    self.feed(line_no + i, line, self.lines)
            return
        self.flush()
        pairs = _read_pairs(b"".join(text), n)
        p = self.parts

        def rows(send: np.ndarray, recv: np.ndarray) -> np.ndarray:
            out = np.empty(2 * n, dtype=send.dtype)
            out[0::2], out[1::2] = send, recv  # the `=>` row, then the `<=` row of each pair
            return out

        first = self.block + 1
        self.block += len(blocks)
        block_ids = np.repeat(np.arange(first, self.block + 1, dtype=np.float64), [k for _, _, k in blocks])
        p["block"].append(rows(block_ids, block_ids))
        ranks = pairs.rank.astype(np.float64)
        p["rank"].append(rows(ranks, ranks))
        src_codes, src_ports = self._addresses(pairs.src, "src")
        dst_codes, dst_ports = self._addresses(pairs.dst, "dst")
        p["src"].append(rows(src_codes, src_codes))
        p["src_port"].append(rows(src_ports, src_ports))
        p["dst"].append(rows(dst_codes, dst_codes))
        p["dst_port"].append(rows(dst_ports, dst_ports))
        d = self.strings["direction"]
        p["direction"].append(np.tile(np.array([d.code("send"), d.code("recv")], dtype=np.int64), n))
        codes, texts = pairs.rates
        rates = self._values(tuple(texts), rate=True)[codes]
        for i, k in enumerate(_RATES):
            p[k].append(rows(rates[:, i], rates[:, 3 + i]))
        codes, texts = pairs.cumulative
        cumulative = self._values(tuple(texts), rate=False)[codes]
        p["cumulative_bytes"].append(rows(cumulative[:, 0], cumulative[:, 1]))
        # the totals' 15 values of every block: 12 rates, then 3 cumulative
        tails = b" ".join(b" ".join(m.group(*range(2, 17))) for _, m, _ in blocks).decode().split(" ")
        tokens = np.array(tails, dtype=object).reshape(len(blocks), 15)
        rates = self._values(tokens[:, :12].ravel(), rate=True)
        cums = self._values(tokens[:, 12:].ravel(), rate=False)
        block_rates = rates.reshape(len(blocks), 12).tolist()
        block_cums = cums.reshape(len(blocks), 3).tolist()
        for block, r, c in zip(range(first, self.block + 1), block_rates, block_cums, strict=True):
            self.totals.append({"block": block, **dict(zip(_TOTAL_NAMES, r + c, strict=True))})

    def _values(self, tokens: Sequence[str] | np.ndarray, *, rate: bool) -> np.ndarray:
        """Value tokens -> bytes(/s) by `_tokens`' rules, each distinct token read once, in bulk: a
        regex over the distinct tokens (one a line), their numbers by numpy, a factor per unit.

        Raises:
            _Fallback: a token `_tokens` would refuse (the line walk then names its line).
        """
        codes, uniques = pd.factorize(np.asarray(tokens, dtype=object))
        found = _VALUE_LINES.findall("\n".join(uniques))
        if len(found) != len(uniques):  # one match a line at most: a token did not match whole
            raise _Fallback()
        numbers, units = zip(*found, strict=True)
        unit_codes, unit_names = pd.factorize(np.asarray(units, dtype=object))
        if any(u not in _UNITS for u in unit_names):
            raise _Fallback()
        families = {_UNITS[u][1] for u in unit_names}
        if rate:
            if len(families) != 1 or (self.unit is not None and self.unit not in families):
                raise _Fallback()  # bits and bytes mixed
            self.unit = families.pop()
        elif families != {"bytes"}:
            raise _Fallback()
        factors = np.array([_UNITS[u][0] for u in unit_names])
        table = np.fromstring(" ".join(numbers), dtype=np.float64, sep=" ") * factors[unit_codes]
        return table[codes]

    def _addresses(self, tokens: tuple[np.ndarray, list[str]], column: str) -> tuple[np.ndarray, np.ndarray]:
        """Address tokens as (codes, texts) -> (`column` codes of the hosts, ports as float64 with NaN
        for none), each distinct token split once."""
        codes, uniques = tokens
        cache = self._address_cache
        split = [cache[t] if t in cache else cache.setdefault(t, self._address(t)) for t in uniques]
        interned = self.strings[column]
        hosts = np.array([interned.code(a) for a, _ in split], dtype=np.int64)
        ports = np.array([np.nan if q is None else q for _, q in split], dtype=np.float64)
        return hosts[codes], ports[codes]

    def _connection(self, text: str, line_no: int, line: str, lines: Lines) -> bool:
        """A `=>` or `<=` line of a connection pair: stored, True; any other line: False."""
        if m := _SEND.match(text):
            self._end_pair(line_no, line, lines)
            values = self._tokens(m[3], line_no, line, lines, rates=3)
            addr, port = self._address(m[2])
            self.pending = (int(m[1]), addr, port)
            self._append(int(m[1]), "send", values, addr, port)
            return True
        if m := _RECV.match(text):
            if self.pending is None:
                raise lines.error(line_no, line, "`<=` line without the `=>` line of its pair")
            rank, src, src_port = self.pending
            self.pending = None
            values = self._tokens(m[2], line_no, line, lines, rates=3)
            dst, dst_port = self._address(m[1])
            # the `=>` row waits for its partner's address: fill it in now
            self.cols["dst"][-1], self.cols["dst_port"][-1] = dst, dst_port
            self._append(rank, "recv", values, src, src_port)
            self.cols["dst"][-1], self.cols["dst_port"][-1] = dst, dst_port
            return True
        return False

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        """A last line without newline was cut mid-write (`1.38KB` may read `1.3`): dropped. A whole
        `=====` rule (iftop prints it 92 wide) holds no number to cut: the file only lost its last
        newline (a copy through `$(...)`, an editor, a repository), and the block is complete."""
        if self.in_block and len(line) == _RULE_WIDTH and _EQUALS.match(line):
            self.feed(line_no, line, lines)
            return
        self.lines, self.line_no = lines, line_no
        self.dropped += 1

    def _end_pair(self, line_no: int, line: str, lines: Lines) -> None:
        if self.pending is not None:
            raise lines.error(line_no, line, f"connection {self.pending[0]}: `=>` line without its `<=` line")

    def _append(self, rank: int, direction: str, values: list[float], src: str, src_port: int | None) -> None:
        c = self.cols
        c["block"].append(self.block)
        c["rank"].append(rank)
        c["src"].append(src)
        c["src_port"].append(src_port)
        c["dst"].append(None)
        c["dst_port"].append(None)
        c["direction"].append(direction)
        for k, v in zip((*_RATES, "cumulative_bytes"), values, strict=True):
            c[k].append(v)

    def _tokens(self, text: str, line_no: int, line: str, lines: Lines, *, rates: int) -> list[float]:
        """Values with units -> bytes(/s): the first `rates` in the rate unit, the rest in bytes."""
        out = []
        cache = self._token_cache
        for i, tok in enumerate(text.split()):
            hit = cache.get(tok)  # iftop's 3 significant digits: a few thousand distinct tokens
            if hit is not None and (i >= rates or hit[1] == self.unit) and (i < rates or hit[1] == "bytes"):
                out.append(hit[0])
                continue
            m = _VALUE.match(tok)
            if m is None:
                raise lines.error(line_no, line, f"{tok!r} is not an iftop value (`12.3KB`, `188Kb`)")
            if m[2] in _PACKETS:
                raise lines.error(
                    line_no, line, "packet rates (iftop -u packets) are not read: capture with -B"
                )
            if m[2] not in _UNITS:
                raise lines.error(line_no, line, f"unknown unit {m[2]!r} in {tok!r}")
            factor, family = _UNITS[m[2]]
            if i < rates:
                if self.unit is None:
                    self.unit = family
                elif family != self.unit:
                    raise lines.error(line_no, line, f"{tok!r}: {family} after {self.unit} in one capture")
            elif family != "bytes":
                raise lines.error(line_no, line, f"{tok!r}: iftop prints cumulative totals in bytes")
            value = float(m[1]) * factor
            cache[tok] = (value, family)
            out.append(value)
        return out

    def _address(self, text: str) -> tuple[str, int | None]:
        """`10.0.0.1:3306`, `[fd99::1]:35930`, `fd99::1`, `db1:mysql` -> (host, port or None)."""
        if text.startswith("[") and "]:" in text:
            addr, _, port = text[1:].partition("]:")
        elif text.count(":") == 1:
            addr, _, port = text.partition(":")
        else:
            return text, None  # no port, or an IPv6 address without one
        if port.isdigit() and len(port) <= 5:
            return addr, int(port)
        note = "port names shown (capture without -N): their ports are NA"
        if note not in self.notes:
            self.notes.append(note)
        return addr, None

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
last block, service names).

Tested on: tests/fixtures/iftop/ (README.md there).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._chunks import Interned, block_pieces, has_cr, text_chunks, walk_text
from ._common import Lines, Source, coerce, empty_frame, feed_lines

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
_HEADER = re.compile(
    r"^\s*# Host name \(port/service if enabled\)\s+last 2s\s+last 10s\s+last 40s\s+cumulative$"
)
_SEND = re.compile(r"^ {0,4}(\d{1,9}) +(\S+) +=>((?: +\S+){4})$")
_RECV = re.compile(r"^ {2,}(\S+) +<=((?: +\S+){4})$")
_TOTAL = re.compile(r"^(Total send rate|Total receive rate|Total send and receive rate):((?: +\S+){3})$")
_PEAK = re.compile(r"^(Peak rate|Cumulative) \(sent/received/total\):((?: +\S+){3})$")
_DASHES = re.compile(r"^-{20,}$")
_EQUALS = re.compile(r"^={20,}$")
_TOTAL_KEYS = {
    "Total send rate": "send",
    "Total receive rate": "recv",
    "Total send and receive rate": "total",
}

# The fast path reads a whole block with three regexes: its header and rule (`_FAST_HEAD`), its
# connection pairs by one `findall` (`_FAST_PAIR`, two lines a match), and the rule, totals and
# `=====` after them (`_FAST_TAIL`, with the blank lines up to the next block). They are stricter
# than the line walk's (spaces only, ASCII digits); a block they do not read whole goes line by line.
_FAST_HEAD = re.compile(
    r" *# Host name \(port/service if enabled\) +last 2s +last 10s +last 40s +cumulative *\n-{20,} *\n"
)
_V = r" ++([!-~]++)"  # a value: printable ASCII (stricter than `\S`); possessive: no backtracking
_FAST_PAIR = re.compile(
    rf"^ {{0,4}}([0-9]{{1,9}}) ++([!-~]++) ++=>{_V}{_V}{_V}{_V} *\n {{2,}}([!-~]++) ++<={_V}{_V}{_V}{_V} *\n",
    re.MULTILINE,
)
_FAST_TAIL = re.compile(
    r"-{20,} *\n"
    rf"Total send rate:{_V}{_V}{_V} *\n"
    rf"Total receive rate:{_V}{_V}{_V} *\n"
    rf"Total send and receive rate:{_V}{_V}{_V} *\n"
    r"-{20,} *\n"
    rf"Peak rate \(sent/received/total\):{_V}{_V}{_V} *\n"
    rf"Cumulative \(sent/received/total\):{_V}{_V}{_V} *\n"
    r"={20,} *\n(?:[ \t]*\n)*"
)
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
        ParseError: a line iftop does not print, a value without a known unit, packet units, bits
            and bytes mixed, a `<=` line without its `=>` line.
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
    attrs = {
        "totals": st.totals,
        "interface": st.interface,
        "rate_unit": st.unit,
        "dropped_lines": st.dropped,
        "unknown_columns": [],
        "notes": st.notes,
    }
    c = {k: np.concatenate(v) if v else np.empty(0) for k, v in st.parts.items()}
    n = len(c["block"])
    if not n:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    data: dict[str, object] = {"host": pd.array([host] * n, dtype="string")}
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
    chunks = text_chunks(source)
    if chunks is None:
        return False
    lines = Lines(source, KIND)
    st.lines = lines
    try:
        for piece, first_no in block_pieces(chunks, _last_block_start):
            if has_cr(piece):
                return False
            body = piece[: piece.rfind("\n") + 1]  # a cut last line goes to the line walk
            line_no = first_no
            pos = 0
            while pos < len(body):
                if not st.in_block and (head := _FAST_HEAD.match(body, pos)):
                    end = _fast_block(st, body, head.end())
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
    except OSError:
        return False  # the line walk raises it as a ParseError
    return True


def _last_block_start(text: str) -> int:
    """Offset of the line holding the last block header in `text`, -1 if none."""
    at = text.rfind("# Host name (port")
    return -1 if at < 0 else text.rfind("\n", 0, at) + 1


def _fast_block(st: _State, body: str, start: int) -> int:
    """Queue the block whose pairs start at `start` (after its header and rule) and return the offset
    after it, or 0 when the regexes do not read it whole (the line walk reads it)."""
    rule = body.find("\n-", start - 1) + 1  # pair lines start with spaces or a rank: the first rule ends them
    if rule <= 0:
        return 0
    tail = _FAST_TAIL.match(body, rule)
    if tail is None:
        return 0
    pairs = _FAST_PAIR.findall(body, start, rule)
    # matches start at a line start and end at a newline: equal counts mean no line was skipped
    if 2 * len(pairs) != body.count("\n", start, rule):
        return 0
    st.block += 1
    st.fast_pairs.extend(pairs)
    st.fast_blocks.append((st.block, len(pairs)))
    st.fast_totals.append(tail.groups())
    return tail.end()


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
        self.notes: list[str] = []
        self.cols: dict[str, list] = {k: [] for k in SCHEMA if k != "host"}
        self._token_cache: dict[str, tuple[float, str]] = {}  # a value token -> (bytes, unit family)
        # the fast path's blocks, not yet converted: pair tuples, (block, pairs) and totals tokens
        self.fast_pairs: list[tuple[str, ...]] = []
        self.fast_blocks: list[tuple[int, int]] = []
        self.fast_totals: list[tuple[str, ...]] = []
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
            raise lines.error(line_no, line, "not an iftop -t line (outside a block)")
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

    def flush_fast(self) -> None:
        """Convert the fast path's queued blocks into `parts` (after the line walk's rows before them).

        Raises:
            _Fallback: a value the line walk would report or read differently.
        """
        if not self.fast_blocks:
            return
        self.flush()
        pairs, blocks, totals = self.fast_pairs, self.fast_blocks, self.fast_totals
        n = len(pairs)
        (rank, src, s2, s10, s40, scum, dst, r2, r10, r40, rcum) = (
            zip(*pairs, strict=True) if n else [()] * 11
        )
        p = self.parts

        def rows(send: np.ndarray, recv: np.ndarray) -> np.ndarray:
            out = np.empty(2 * n, dtype=send.dtype)
            out[0::2], out[1::2] = send, recv  # the `=>` row, then the `<=` row of each pair
            return out

        block_ids = np.repeat(np.array([b for b, _ in blocks], dtype=np.float64), [k for _, k in blocks])
        p["block"].append(rows(block_ids, block_ids))
        ranks = (
            np.fromstring(" ".join(rank), dtype=np.int64, sep=" ").astype(np.float64) if n else np.empty(0)
        )
        p["rank"].append(rows(ranks, ranks))
        src_codes, src_ports = self._addresses(src, "src")
        dst_codes, dst_ports = self._addresses(dst, "dst")
        p["src"].append(rows(src_codes, src_codes))
        p["src_port"].append(rows(src_ports, src_ports))
        p["dst"].append(rows(dst_codes, dst_codes))
        p["dst_port"].append(rows(dst_ports, dst_ports))
        d = self.strings["direction"]
        p["direction"].append(np.tile(np.array([d.code("send"), d.code("recv")], dtype=np.int64), n))
        # every value token of the queued blocks converted at once: rates, then cumulative bytes
        rates = self._values(
            (*s2, *r2, *s10, *r10, *s40, *r40, *itertools.chain.from_iterable(t[:12] for t in totals)),
            rate=True,
        )
        cums = self._values(
            (*scum, *rcum, *itertools.chain.from_iterable(t[12:] for t in totals)), rate=False
        )
        for i, k in enumerate(_RATES):
            p[k].append(rows(rates[2 * i * n : (2 * i + 1) * n], rates[(2 * i + 1) * n : (2 * i + 2) * n]))
        p["cumulative_bytes"].append(rows(cums[:n], cums[n : 2 * n]))
        block_rates = rates[6 * n :].reshape(len(blocks), 12).tolist()
        block_cums = cums[2 * n :].reshape(len(blocks), 3).tolist()
        for (block, _), r, c in zip(blocks, block_rates, block_cums, strict=True):
            self.totals.append({"block": block, **dict(zip(_TOTAL_NAMES, r + c, strict=True))})
        pairs.clear()
        blocks.clear()
        totals.clear()

    def _values(self, tokens: tuple[str, ...], *, rate: bool) -> np.ndarray:
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

    def _addresses(self, texts: tuple[str, ...], column: str) -> tuple[np.ndarray, np.ndarray]:
        """Address tokens -> (`column` codes of the hosts, ports as float64 with NaN for none), each
        distinct token split once."""
        codes, uniques = pd.factorize(np.asarray(texts, dtype=object))
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
        """A last line without newline was cut mid-write (`1.38KB` may read `1.3`): dropped."""
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

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

import re

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

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
    attrs = {
        "totals": st.totals,
        "interface": st.interface,
        "rate_unit": st.unit,
        "dropped_lines": st.dropped,
        "unknown_columns": [],
        "notes": st.notes,
    }
    c = st.cols
    if not c["block"]:
        df = empty_frame(SCHEMA)
        df.attrs.update(attrs)
        return df
    n = len(c["block"])
    data: dict[str, object] = {
        "host": pd.array([host] * n, dtype="string"),
        "block": pd.array(c["block"], dtype="Int64"),
        "rank": pd.array(c["rank"], dtype="Int64"),
        "src": pd.array(c["src"], dtype="string"),
        "src_port": pd.array(c["src_port"], dtype="Int64"),
        "dst": pd.array(c["dst"], dtype="string"),
        "dst_port": pd.array(c["dst_port"], dtype="Int64"),
        "direction": pd.array(c["direction"], dtype="string"),
    }
    for k in (*_RATES, "cumulative_bytes"):
        data[k] = np.array(c[k], dtype=np.float64)
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(attrs)
    return df


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

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.lines, self.line_no = lines, line_no
        text = line.rstrip()
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
        if m := _SEND.match(text):
            self._end_pair(line_no, line, lines)
            values = self._tokens(m[3], line_no, line, lines, rates=3)
            addr, port = self._address(m[2])
            self.pending = (int(m[1]), addr, port)
            self._append(int(m[1]), "send", values, addr, port)
            return
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
        for i, tok in enumerate(text.split()):
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
            out.append(float(m[1]) * factor)
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

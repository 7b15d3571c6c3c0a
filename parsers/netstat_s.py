"""netstat_s: the kernel's network counters as `netstat -s` or `nstat` print them, one snapshot or a
series (pt-stalk's `<prefix>-netstat_s`: a `TS <epoch> <date>` line before each snapshot), in long form
with per-second rates between snapshots.

`netstat -s` (net-tools 2.10 tested) prints a section per MIB, its counters indented under it:

    TS 1795783554.010583266 2026-11-27 12:45:54     a snapshot's stamp (pt-stalk), epoch seconds
    Tcp:                                            a section: `Name:` at the margin
        321 segments retransmitted                  `N text`
        Quick ack mode was activated 312 times      `text N text`
        TCPTimeouts: 15                             `Name: N`
        ICMP input histogram:                       a sub-heading (no number): not a counter
            destination unreachable: 3              `text: N` (under the sub-heading)

`nstat` (iproute2) prints `#kernel`, then `NameOfCounter  value  rate` lines: absolute values with
`-a`, else increments since its last run (noted; the rates below are then wrong). perfkit's own
`nstat` capture (collectors/captures.py) is such a series: `date '+TS %s.%N %F %T'` and `nstat -asz`
with the TCP counters the net.* rules read, once a second.

`netstat -s` prints most TcpExt counters only when not zero (net-tools' `opt_number`), so a counter
may be absent from a snapshot; analyzers/net.py takes the ones it reads as 0 in a snapshot with a
TcpExt section.

A counter gets its nstat name (`TcpRetransSegs`, `TcpExtListenOverflows`) where netstat's text is a
known one (`_NAMES`, from net-tools' statistics.c), else `<Section>:<text>` with the number written
`N`; `Name: N` lines become `<Section><Name>` (`TcpExtTCPTimeouts`), as nstat names them.

| column | dtype | unit / meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | the snapshot's `TS` stamp; NaT without stamps |
| host | string | the `host` argument |
| sample | Int64 | snapshot index 0, 1, ... |
| section | string | `Tcp`, `TcpExt`, `Ip`, ... (nstat: the name's MIB prefix is not split off: empty) |
| counter | string | nstat name, or `<Section>:<text>` |
| value | float64 | as printed |
| per_s | float64 | Δvalue / Δt since its previous snapshot (NaN: first, gauge, no stamp, went back) |

Gauges (no rate): `GAUGES` below. Lines of none of the forms above (two numbers in one text, an error
message) are skipped and counted (`Skips`). What it reads beside its rows: `EXTRAS` (below).
Tested on: tests/fixtures/netstat_s/ (README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._common import (
    PT_STALK_STAMP,
    Extras,
    Lines,
    Skips,
    Source,
    coerce,
    empty_frame,
    feed_lines,
    stamp_seconds,
)


@dataclass(frozen=True)
class NetstatSExtras(Extras):
    """What netstat_s reads beside its rows (see `_common.Extras`)."""

    # netstat -s / nstat readings in the capture
    snapshots: int = 0


EXTRAS = NetstatSExtras

KIND = "netstat_s"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "sample": "Int64",
    "section": "string",
    "counter": "string",
    "value": "float64",
    "per_s": "float64",
}

# netstat -s's text (the number as N) -> nstat's name, for the counters people read. net-tools'
# statistics.c holds the full table; these are the ones rules and engineers use.
_NAMES = {
    ("Tcp", "N active connection openings"): "TcpActiveOpens",
    ("Tcp", "N active connections openings"): "TcpActiveOpens",
    ("Tcp", "N passive connection openings"): "TcpPassiveOpens",
    ("Tcp", "N failed connection attempts"): "TcpAttemptFails",
    ("Tcp", "N connection resets received"): "TcpEstabResets",
    ("Tcp", "N connections established"): "TcpCurrEstab",
    ("Tcp", "N segments received"): "TcpInSegs",
    ("Tcp", "N segments sent out"): "TcpOutSegs",
    ("Tcp", "N segments send out"): "TcpOutSegs",
    ("Tcp", "N segments retransmitted"): "TcpRetransSegs",
    ("Tcp", "N segments retransmited"): "TcpRetransSegs",
    ("Tcp", "N bad segments received."): "TcpInErrs",
    ("Tcp", "N bad segments received"): "TcpInErrs",
    ("Tcp", "N resets sent"): "TcpOutRsts",
    ("TcpExt", "N times the listen queue of a socket overflowed"): "TcpExtListenOverflows",
    ("TcpExt", "N SYNs to LISTEN sockets dropped"): "TcpExtListenDrops",
    ("TcpExt", "N SYNs to LISTEN sockets ignored"): "TcpExtListenDrops",
    ("TcpExt", "N TCP sockets finished time wait in fast timer"): "TcpExtTW",
    ("TcpExt", "N delayed acks sent"): "TcpExtDelayedACKs",
    ("TcpExt", "N connections reset due to unexpected data"): "TcpExtTCPAbortOnData",
    ("TcpExt", "N connections reset due to early user close"): "TcpExtTCPAbortOnClose",
    ("TcpExt", "N connections aborted due to timeout"): "TcpExtTCPAbortOnTimeout",
    ("TcpExt", "N fast retransmits"): "TcpExtTCPFastRetrans",
    ("TcpExt", "N retransmits in slow start"): "TcpExtTCPSlowStartRetrans",
    ("TcpExt", "N other TCP timeouts"): "TcpExtTCPTimeouts",
    ("Ip", "N total packets received"): "IpInReceives",
    ("Ip", "N incoming packets discarded"): "IpInDiscards",
    ("Ip", "N incoming packets delivered"): "IpInDelivers",
    ("Ip", "N requests sent out"): "IpOutRequests",
    ("Udp", "N packets received"): "UdpInDatagrams",
    ("Udp", "N packets sent"): "UdpOutDatagrams",
    ("Udp", "N packet receive errors"): "UdpInErrors",
    ("Udp", "N receive buffer errors"): "UdpRcvbufErrors",
    ("Udp", "N send buffer errors"): "UdpSndbufErrors",
    ("Udp", "N packets to unknown port received."): "UdpNoPorts",
    ("Udp", "N packets to unknown port received"): "UdpNoPorts",
}
GAUGES = frozenset(
    {
        "TcpCurrEstab",
        "IpForwarding",
        "IpDefaultTTL",
        "TcpRtoAlgorithm",
        "TcpRtoMin",
        "TcpRtoMax",
        "TcpMaxConn",
    }
)

_SECTION = re.compile(r"^([A-Za-z][A-Za-z0-9]*):\s*$")
_KEYED = re.compile(r"^\s+([A-Za-z][A-Za-z0-9]*): (-?\d+)\s*$")  # `TCPTimeouts: 15`
_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?![\w.])")
_SUBHEAD = re.compile(r"^\s+[^\d]*:\s*$")  # `ICMP input histogram:`
_NSTAT_HEAD = re.compile(r"^#kernel\s*$")
_NSTAT = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s+(\d+)\s+(\d+(?:\.\d+)?)\s*$")


def sniff(text: str) -> bool:
    """`netstat -s`'s `Ip:`/`Tcp:` sections with indented counters, or nstat's `#kernel`."""
    lines = [ln for ln in text.lstrip("\ufeff").splitlines()[:6] if ln.strip()]
    if lines and PT_STALK_STAMP.match(lines[0]):
        lines = lines[1:]
    if lines and _NSTAT_HEAD.match(lines[0]):
        return len(lines) > 1 and bool(_NSTAT.match(lines[1]))
    return (
        len(lines) >= 2
        and bool(_SECTION.match(lines[0]))
        and lines[0].rstrip(": ") in ("Ip", "Icmp", "Tcp", "Udp", "IpExt", "TcpExt", "Ip6")
        and lines[1].startswith((" ", "\t"))
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row per snapshot and counter; `tz` is unused (the stamps are epoch seconds).

    Raises:
        ParseError: lines that are all unknown (no counter read).
    """
    rows: list[tuple[int, float, str, str, float]] = []  # sample, stamp, section, counter, value
    skips = Skips()
    st = {"sample": -1, "stamp": float("nan"), "section": "", "nstat": False}
    seen: set[str] = set()  # sections of the current snapshot: one met again starts the next snapshot
    dropped = 0

    def new_snapshot(stamp: float) -> None:
        st["sample"] += 1
        st["stamp"] = stamp
        st["section"] = ""
        seen.clear()

    def add(section: str, counter: str, value: str) -> None:
        rows.append((st["sample"], st["stamp"], section, counter, float(value)))

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if not line.strip():
            return
        line = line.lstrip("\ufeff")
        m = PT_STALK_STAMP.match(line)
        if m:
            new_snapshot(stamp_seconds(m, line_no, lines))
            return
        if st["sample"] < 0:
            new_snapshot(float("nan"))  # a snapshot without a stamp
        m = _SECTION.match(line) or _NSTAT_HEAD.match(line)
        if m:
            name = m[1] if m.lastindex else "#kernel"
            if name in seen:
                new_snapshot(float("nan"))  # the next snapshot, appended without a stamp
            seen.add(name)
            st["section"] = name
            st["nstat"] = st["nstat"] or name == "#kernel"
            return
        section = st["section"]
        if section == "#kernel":
            m = _NSTAT.match(line)
            if m:
                add("", m[1], m[2])
            else:
                skips.add(line_no, line, "not an nstat line ('Name value rate')")
            return
        if not section or not line.startswith((" ", "\t")):
            skips.add(line_no, line, "not a netstat -s section or counter line")
            return
        m = _KEYED.match(line)
        numbers = _NUMBER.findall(line)
        if m:
            add(section, section + m[1], m[2])
        elif len(numbers) == 1:
            text = " ".join(_NUMBER.sub("N", line, count=1).split())
            add(section, _NAMES.get((section, text), f"{section}:{text}"), numbers[0])
        elif numbers or not _SUBHEAD.match(line):  # a sub-heading (`ICMP input histogram:`) is no counter
            skips.add(line_no, line, "a netstat -s line with no single number")

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1

    lines = feed_lines(source, KIND, feed, cut_last)
    skips.refuse_if_nothing_read(len(rows), lines)
    if not rows:
        df = empty_frame(SCHEMA)
        df.attrs.update(snapshots=0, dropped_lines=dropped, notes=[], skipped=skips)
        return df
    notes = (
        ["nstat: values are increments since its previous run unless it ran with -a"] if st["nstat"] else []
    )
    df = _frame(rows, host)
    df.attrs.update(snapshots=st["sample"] + 1, dropped_lines=dropped, notes=notes, skipped=skips)
    return df


def _frame(rows: list[tuple[int, float, str, str, float]], host: str | None) -> pd.DataFrame:
    sample, stamp, section, counter, value = (list(c) for c in zip(*rows, strict=True))
    frame = pd.DataFrame(
        {
            "sample": sample,
            "section": pd.array(section, dtype="string"),
            "counter": pd.array(counter, dtype="string"),
            "value": np.asarray(value, dtype="float64"),
        }
    )
    t = np.asarray(stamp, dtype="float64")
    # microseconds: what an epoch in a float64 holds exactly; no stamp (NaN) is NaT
    frame["timestamp"] = pd.to_datetime(np.round(t * 1e6), unit="us", utc=True).astype("datetime64[ns, UTC]")
    frame["host"] = pd.array([host] * len(frame), dtype="string")
    by = frame["counter"]
    d_v = frame["value"].groupby(by).diff()
    d_t = pd.Series(t).groupby(by).diff()
    rate = (d_v / d_t.where(d_t > 0)).where(d_v >= 0)
    frame["per_s"] = rate.where(~by.isin(GAUGES).to_numpy()).astype("float64").to_numpy()
    return coerce(frame, SCHEMA)

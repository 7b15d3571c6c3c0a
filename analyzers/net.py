"""Network rules: short connections running out of ephemeral ports (the `ss` loop and `sysctl`), and
the kernel's TCP counters (perfkit's `nstat` capture, pt-stalk's `-netstat_s`, sar's `-n TCP,ETCP`).

`net.port-exhaustion`: a connection is named by (src ip, src port, dst ip, dst port). A client
connecting to one server ip:port has only its ephemeral ports (`net.ipv4.ip_local_port_range`) to
vary, and the side that closes first keeps each closed connection's port in TIME_WAIT for 60 s (the
kernel's fixed TCP_TIMEWAIT_LEN; `tcp_fin_timeout` is the FIN-WAIT-2 timeout, not this). So short
connections cap a client at `ports / 60 s` new connections a second per destination, whatever the
server could do (seed 003: 12 load clients × 50 000 ports / 60 s = 10 000 TPS, and the TPS sat at 10 000).

`net.retransmits` and `net.listen-overflow` read the counters per host and window (`tcp_windows`):
a sweep step's load window (sweep.load_window) where the capture belongs to a step the sweep knows,
else the capture's whole span (a `perfkit collect` archive, a pt-stalk collection: one window per
collection prefix). Over a window, a counter's delta is Σ rate × interval over the samples with a
rate (a counter that went back, a reset, has none: left out of the delta and of the seconds, never
read as zero). The retransmitted share is ΔTcpRetransSegs / ΔTcpOutSegs (sar: retrans/s / oseg/s);
listen drops are ΔTcpExtListenDrops (every SYN or handshake-ending ACK a listening socket dropped,
accept-queue overflows included), else ΔTcpExtListenOverflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped, count
from perfkit.parsers.sysctl import PORT_RANGE_KEY

from .db import server_variables, variables_for
from .sweep import load_window

RULE = "net.port-exhaustion"


def _rate(x: float) -> str:
    """A rate as people say it: 16.7/s for a namespace's 1000 ports, 10000/s for seed 003's fleet."""
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _sysctl_of(ds: Dataset) -> dict[str | None, tuple[Any, dict[str, float]]]:
    """host -> (the last sysctl capture with a port range, its numeric values by key)."""
    out: dict[str | None, tuple[Any, dict[str, float]]] = {}
    for cap in ds.of("sysctl"):
        if cap.extras.ephemeral_ports is None:
            continue
        values = dict(zip(cap.frame["key"].astype(str), cap.frame["value_num"], strict=True))
        out[cap.host] = (cap, values)
    return out


def _timewait(frame: pd.DataFrame) -> pd.Series:
    """TIME-WAIT sockets per block: the loop's own count (TIME-WAIT proper), else `ss -s`'s
    `timewait` (which also holds orphaned FIN-WAIT-2 sockets, and they hold a port too)."""
    tw = frame["timewait_sockets"].astype("Float64")
    return tw.fillna(frame["tcp_timewait"].astype("Float64")).dropna().astype(float)


def port_exhaustion(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """TIME_WAIT near the ephemeral port range, and throughput at `ports × clients / 60 s`.

    Per host, its ss samples against its own sysctl port range. A host with `tcp_tw_reuse = 1` is
    left out: connect() reuses TIME_WAIT ports there, so the 60 s ceiling does not hold. Critical
    only when the sweep's TPS sits at the ceiling too (peak and at least two steps within tolerance).
    """
    if not ds.of("ss"):
        return Skipped(RULE, "no ss capture")
    ranges = _sysctl_of(ds)
    if not ranges:
        return Skipped(RULE, f"no sysctl capture with {PORT_RANGE_KEY}")
    lim = th[RULE]
    hosts: dict[str | None, list] = {}
    for cap in ds.of("ss"):
        hosts.setdefault(cap.host, []).append(cap)
    hit = []
    for host, caps in hosts.items():
        if host not in ranges:
            continue
        sys_cap, values = ranges[host]
        if values.get("net.ipv4.tcp_tw_reuse") == 1:
            continue  # connect() reuses TIME_WAIT ports (timestamps 1 s apart): no 60 s ceiling
        ports = int(sys_cap.extras.ephemeral_ports)
        frames = [(c, c.frame.assign(tw=_timewait(c.frame))) for c in caps]
        rows = pd.concat([f.dropna(subset=["tw"]) for _, f in frames], ignore_index=True)
        if rows.empty:
            continue
        at_range = rows[rows["tw"] >= lim["min_range_share"] * ports]
        if len(at_range) < lim["min_samples"]:
            continue
        hit.append((host, ports, rows, at_range, sys_cap, values, [c.path for c in caps]))
    if not hit:
        return []
    return [_finding(hit, sweep, lim)]


def _finding(hit: list, sweep: Any, lim: dict[str, Any]) -> Finding:
    # The host closest to its range speaks for all; every host at its range counts as one client
    # address with its own ports (the ceiling is per source ip and destination ip:port).
    host, ports, rows, at_range, sys_cap, values, paths = max(hit, key=lambda h: h[3]["tw"].max() / h[1])
    tw_s = float(lim["timewait_s"])
    ports_total = sum(h[1] for h in hit)
    clients = len(hit)
    ceiling = ports_total / tw_s
    tw_max, tw_med = float(rows["tw"].max()), float(rows["tw"].median())
    low, high = sys_cap.extras.port_range_low, sys_cap.extras.port_range_high
    ev: dict[str, Any] = {
        "host": host,
        "port_range": f"{low}-{high}",
        "ephemeral_ports": ports,
        "timewait_max": tw_max,
        "timewait_median": tw_med,
        "range_share_max": tw_max / ports,
        "samples_at_range": len(at_range),
        "samples": len(rows),
        "tcp_tw_reuse": values.get("net.ipv4.tcp_tw_reuse", math.nan),
        "tcp_fin_timeout_s": values.get("net.ipv4.tcp_fin_timeout", math.nan),
        "timewait_s": tw_s,
        "client_addresses": clients,
        "ports_total": ports_total,
        "ceiling_per_s": ceiling,
        # Little's law on TIME_WAIT: sockets held / time held = connections closed per second
        "close_rate_per_s": float(at_range["tw"].median()) / tw_s,
        "source": ", ".join([*paths, sys_cap.path]),
    }
    severity, verdict = "warning", ""
    if sweep is not None and getattr(sweep, "metric", "") == "tps" and sweep.steps:
        tol = lim["ceiling_tolerance_pct"] / 100
        near = [s for s in sweep.steps if abs(s.tps - ceiling) <= tol * ceiling]
        ev.update(
            sweep_peak_tps=sweep.peak.tps,
            sweep_peak_threads=sweep.peak.threads,
            peak_over_ceiling=sweep.peak.tps / ceiling,
            steps_at_ceiling=len(near),
            steps_at_ceiling_threads=",".join(str(s.threads) for s in near),
        )
        if abs(sweep.peak.tps - ceiling) <= tol * ceiling and len(near) >= 2:
            # TIME_WAIT fills the range and the throughput is flat at the arithmetic limit it sets
            severity = "critical"
            verdict = (
                f" The sweep's TPS is flat at it: {len(near)} steps within {lim['ceiling_tolerance_pct']:g}% "
                f"of {_rate(ceiling)}/s, peak {_rate(sweep.peak.tps)} at {sweep.peak.threads} threads."
            )
    ts = at_range["timestamp"].dropna()
    window = (ts.min().isoformat(), ts.max().isoformat()) if len(ts) else None
    where = f" on {host}" if host else ""
    return Finding(
        rule=RULE,
        severity=severity,
        title=f"Ephemeral ports exhausted by TIME_WAIT{where}: ceiling ≈{_rate(ceiling)} connections/s",
        summary=(
            f"TIME_WAIT reached {tw_max:.0f} sockets{where}, {tw_max / ports:.0%} of its {ports} ephemeral "
            f"ports ({low}-{high}) in {len(at_range)} of {len(rows)} samples, so {clients} client "
            f"address{'es' if clients > 1 else ''} × {ports_total // clients if clients else 0} ports / "
            f"{tw_s:.0f} s caps new connections at ≈{_rate(ceiling)}/s.{verdict}"
        ),
        evidence=ev,
        hosts=[h[0] for h in hit if h[0]],
        window=window,
        explanation=(
            "With short connections every transaction opens and closes a TCP connection. TIME_WAIT is "
            "held by the side that closes first (here the host with the sockets), for 60 s (2 MSL, fixed "
            "in Linux), and its local port cannot be used again for the same peer meanwhile. A connection "
            "is unique per (src ip, dst ip, dst port) tuple plus the source port, so the ceiling is per "
            "tuple: ephemeral ports × client addresses (× destination ip:ports) / 60 s new connections a "
            "second. When TIME_WAIT fills the range, connect() fails with EADDRNOTAVAIL or spins looking "
            "for a free port, and throughput sits at that arithmetic ceiling while server resources stay "
            "idle. The count is host-wide: if the host talks to several destinations, each has its own "
            "range, and a server's TIME_WAIT (closing first on its listening port) uses no ephemeral ports."
        ),
        next_steps=[
            "Use long-lived or pooled connections in the load generator / application "
            "(keep-alive, a connection pool) — the real fix, as in seed 003.",
            "Count TIME_WAIT per destination: ss -tan state time-wait | awk '{print $4}' | sort | "
            f"uniq -c | sort -rn | head on {host or 'the client'}.",
            "Widen the range: sysctl -w net.ipv4.ip_local_port_range='1024 65000' (mind listening ports; "
            "reserve them in net.ipv4.ip_local_reserved_ports).",
            "Allow reuse for outgoing connections: sysctl -w net.ipv4.tcp_tw_reuse=1 (needs "
            "net.ipv4.tcp_timestamps=1); never tcp_tw_recycle (removed in Linux 4.12, broke NAT).",
            "Spread load over more client addresses or destination ip:ports (more load clients, "
            "several VIPs / proxy ports), or let the server close first.",
        ],
    )


# ---------------------------------------------------------------- the kernel's TCP counters

RETRANSMITS = "net.retransmits"
LISTEN = "net.listen-overflow"
# nstat's names -> `tcp_rates`' columns (netstat -s's texts get the same names: parsers/netstat_s.py)
COUNTERS = {
    "TcpOutSegs": "out_segs",
    "TcpRetransSegs": "retrans",
    "TcpExtTCPTimeouts": "timeouts",  # retransmission timer expiries (RTO): the costly kind
    "TcpExtTCPFastRetrans": "fast_retrans",  # resent on duplicate ACKs, without waiting for the timer
    "TcpExtTCPLossProbes": "loss_probes",  # tail loss probes: counted in RetransSegs, not always a loss
    "TcpExtTCPSynRetrans": "syn_retrans",  # SYNs (and SYN-ACKs) sent again: connects that waited
    "TcpExtListenOverflows": "overflows",
    "TcpExtListenDrops": "drops",
}
NO_COUNTERS = (
    "no TCP counters (perfkit's nstat capture, pt-stalk's -netstat_s, `netstat -s`/`nstat -a` series, "
    "or sar -n TCP,ETCP)"
)
WHOLE = "whole capture"  # the window of a capture no sweep step cuts
BACKLOG_KEYS = ("net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog")


def tcp_rates(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One row per sample: `timestamp`, `dt_s` (the interval its rates cover) and a per-second rate
    column per counter it has (`COUNTERS`' values), from a netstat_s frame or sar/sadf's TCP tables."""
    if kind == "netstat_s":
        stamps = frame.groupby("sample")["timestamp"].first()
        f = frame[frame["counter"].isin(list(COUNTERS))]
        if f.empty:
            return pd.DataFrame(columns=["timestamp", "dt_s"])
        values = f.groupby(["sample", "counter"])["value"].first().unstack("counter").reindex(stamps.index)
        # `netstat -s` prints a TcpExt counter only when it is not zero (net-tools' opt_number): in a
        # snapshot with a TcpExt section, one it left out is 0 (nstat -z prints every one)
        ext = frame.loc[frame["section"] == "TcpExt", "sample"].unique()
        for name in (n for n in COUNTERS if n.startswith("TcpExt")):
            col = values[name] if name in values else pd.Series(float("nan"), index=values.index)
            values[name] = col.where(~values.index.isin(ext) | col.notna(), 0.0)
        values = values.dropna(axis=1, how="all").astype(float)
        dt = stamps.diff().dt.total_seconds()
        step = values.diff()
        # the parser's per_s, over the filled values: a counter that went back (a reset) has no rate
        wide = step.where(step >= 0).div(dt.where(dt > 0), axis=0).rename(columns=COUNTERS)
        wide.insert(0, "timestamp", stamps)
        wide = wide.reset_index(drop=True)
    else:
        tcp = frame.loc[frame["table"] == "net_tcp", ["timestamp", "oseg_s"]]
        etcp = frame.loc[frame["table"] == "net_etcp", ["timestamp", "retrans_s"]]
        if tcp.empty or etcp.empty:
            return pd.DataFrame(columns=["timestamp", "dt_s"])
        wide = tcp.merge(etcp, on="timestamp").rename(columns={"oseg_s": "out_segs", "retrans_s": "retrans"})
    wide = wide.dropna(subset=["timestamp"]).sort_values("timestamp").reset_index(drop=True)
    dt = wide["timestamp"].diff().dt.total_seconds()
    if kind != "netstat_s" and len(dt) > 1:
        # sar's rates are averages over its interval, the first one's included: it ends at its stamp
        dt.iloc[0] = float(dt.iloc[1:].median())
    wide["dt_s"] = dt
    return wide


@dataclass
class TcpWindow:
    """One host's TCP counters over one window: a sweep step's load window or a whole capture."""

    host: str | None
    name: str  # the step (`t0016`), a pt-stalk prefix, or `whole capture`
    threads: int | None
    source: str
    rows: pd.DataFrame  # tcp_rates' rows inside the window
    start: pd.Timestamp
    end: pd.Timestamp

    @property
    def window(self) -> tuple[str, str]:
        return (self.start.isoformat(), self.end.isoformat())

    def has(self, *cols: str) -> bool:
        return all(c in self.rows and self.rows[c].notna().any() for c in cols)

    def _rated(self, *cols: str) -> pd.DataFrame:
        r = self.rows
        return r[r["dt_s"].notna() & r[list(cols)].notna().all(axis=1)]

    def delta(self, col: str, *, beside: tuple[str, ...] = ()) -> float:
        """Σ rate × interval over the samples with a rate in `col` (and in `beside`): a gap or a reset
        is left out, never read as zero."""
        r = self._rated(col, *beside)
        return float((r[col] * r["dt_s"]).sum())

    def seconds(self, *cols: str) -> float:
        return float(self._rated(*cols)["dt_s"].sum())

    def samples(self, *cols: str) -> int:
        return len(self._rated(*cols))

    def label(self, *, first: bool = False) -> str:
        """`at 16 threads (t0016)`, `in the window 2026_11_27_12_48_02` (pt-stalk) or `over the whole
        capture`; capitalised to start a sentence with `first`."""
        if self.threads is not None:
            text = f"at {count(self.threads, 'thread')} ({self.name})"
        elif self.name == WHOLE:
            text = f"over the {WHOLE}"
        else:
            text = f"in the window {self.name}"
        return text[:1].upper() + text[1:] if first else text


def tcp_windows(ds: Dataset, sweep: Any) -> list[TcpWindow]:
    """Every host's TCP counter windows, in host, threads and time order: per capture, its step's load
    window when the sweep has that step, else the capture's whole span. A host and step with an nstat
    or netstat -s capture does not read sar's beside it (the same kernel counters)."""
    records = ds.records
    steps = {}
    for s in getattr(sweep, "steps", None) or []:
        parts = str(s.source).split("/")
        if len(parts) >= 2:
            steps[parts[-2]] = s
    threads = ds.step_threads()
    counted = {(c.host, c.step) for c in ds.of("netstat_s")}
    caps = [
        *ds.of("netstat_s"),
        *[c for c in [*ds.of("sadf"), *ds.of("sar")] if (c.host, c.step) not in counted],
    ]
    out: list[TcpWindow] = []
    for cap in caps:
        rates = tcp_rates(cap.frame, cap.kind)
        if rates.empty or rates["dt_s"].notna().sum() == 0:
            continue
        t = rates["timestamp"]
        step = steps.get(cap.step) if cap.step else None
        span = load_window(records.get(step.source)) if step is not None else None
        if span is not None:
            rows = rates[(t >= span[0]) & (t <= span[1])]
            a, b = span
        else:
            rows, a, b = rates, t.iloc[0], t.iloc[-1]
        n = step.threads if step is not None else threads.get(cap.step or "")
        out.append(TcpWindow(cap.host, cap.step or WHOLE, n, cap.path, rows, a, b))
    return sorted(
        out, key=lambda w: (w.host or "", w.threads if w.threads is not None else -1, w.start, w.source)
    )


def _by_host(windows: list[TcpWindow]) -> dict[str | None, list[TcpWindow]]:
    out: dict[str | None, list[TcpWindow]] = {}
    for w in windows:
        out.setdefault(w.host, []).append(w)
    return out


def _rate_s(w: TcpWindow, col: str) -> float | None:
    if not w.has(col):
        return None
    sec = w.seconds(col)
    return w.delta(col) / sec if sec > 0 else None


# ---------------------------------------------------------------- net.retransmits


@dataclass
class RetransStep:
    """One window's retransmission figures (the evidence's `steps` rows)."""

    name: str
    threads: int | None
    seconds: float
    samples: int
    out_segs_s: float
    retrans_s: float
    share: float | None  # Δretransmitted / Δsent
    timeouts_s: float | None
    fast_retrans_s: float | None
    loss_probes_s: float | None
    syn_retrans_s: float | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _retrans_step(w: TcpWindow) -> RetransStep | None:
    if not w.has("out_segs", "retrans"):
        return None
    pair = ("out_segs", "retrans")
    sec = w.seconds(*pair)
    if sec <= 0:
        return None
    out = w.delta("out_segs", beside=("retrans",))
    re_ = w.delta("retrans", beside=("out_segs",))
    return RetransStep(
        name=w.name,
        threads=w.threads,
        seconds=sec,
        samples=w.samples(*pair),
        out_segs_s=out / sec,
        retrans_s=re_ / sec,
        share=re_ / out if out > 0 else None,
        timeouts_s=_rate_s(w, "timeouts"),
        fast_retrans_s=_rate_s(w, "fast_retrans"),
        loss_probes_s=_rate_s(w, "loss_probes"),
        syn_retrans_s=_rate_s(w, "syn_retrans"),
        source=w.source,
    )


def retransmits(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """TCP segments retransmitted: at least `min_retrans_share` of those sent over a window, with
    enough sent to make the share a rate (packet loss, or a congested or shaped path between tiers)."""
    windows = tcp_windows(ds, sweep)
    if not any(w.has("out_segs", "retrans") for w in windows):
        return Skipped(RETRANSMITS, NO_COUNTERS)
    lim = th[RETRANSMITS]
    found = []
    for host, ws in _by_host(windows).items():
        pairs = [(s, w) for w in ws if (s := _retrans_step(w)) is not None]
        steps = [s for s, _ in pairs]
        hits = [
            (s, w)
            for s, w in pairs
            if s.share is not None
            and s.share >= lim["min_retrans_share"]
            and s.out_segs_s >= lim["min_out_segs_s"]
            and s.samples >= lim["min_samples"]
        ]
        if hits:
            found.append(_retrans_finding(host, steps, hits, lim))
    return found


def _retrans_finding(
    host: str | None, steps: list[RetransStep], hits: list[tuple[RetransStep, TcpWindow]], lim: dict[str, Any]
) -> Finding:
    s, w = max(hits, key=lambda h: h[0].share or 0.0)
    first = hits[0][0]
    critical = (s.share or 0.0) >= lim["critical_retrans_share"]
    where = f" on {host}" if host else ""
    kinds = []
    if s.timeouts_s is not None:
        kinds.append(f"{s.timeouts_s:,.1f} retransmission timeouts/s")
    if s.fast_retrans_s is not None:
        kinds.append(f"{s.fast_retrans_s:,.1f} fast retransmits/s")
    if s.loss_probes_s is not None:
        kinds.append(f"{s.loss_probes_s:,.1f} loss probes/s")
    detail = f" ({', '.join(kinds)})" if kinds else ""
    since = (
        f" It starts at {first.name if first.threads is None else count(first.threads, 'thread')} "
        f"({first.share:.1%})."
        if first is not s and first.share is not None
        else ""
    )
    quiet = [x for x in steps if x.share is not None and x.share < lim["min_retrans_share"]]
    return Finding(
        rule=RETRANSMITS,
        severity="critical" if critical else "warning",
        title=f"TCP retransmits{where}: {s.share:.1%} of the segments sent, {w.label()}",
        summary=(
            f"{w.label(first=True)}{where}, {s.retrans_s:,.0f} of the {s.out_segs_s:,.0f} TCP segments "
            f"sent a second were retransmissions: {s.share:.1%} over {s.seconds:.1f} s{detail}."
            f"{since}"
            + (
                f" {len(quiet)} other window{'s' if len(quiet) != 1 else ''} stayed below "
                f"{lim['min_retrans_share']:.0%}."
                if quiet
                else ""
            )
        ),
        evidence={
            "host": host,
            "window_name": s.name,
            "threads": s.threads,
            "retrans_share": s.share,
            "retrans_s": s.retrans_s,
            "out_segs_s": s.out_segs_s,
            "timeouts_s": s.timeouts_s,
            "fast_retrans_s": s.fast_retrans_s,
            "loss_probes_s": s.loss_probes_s,
            "syn_retrans_s": s.syn_retrans_s,
            "seconds": s.seconds,
            "samples": s.samples,
            "first_window": first.name,
            "first_threads": first.threads,
            "windows_over": len(hits),
            "steps": [x.to_dict() for x in steps],
            "source": s.source,
        },
        hosts=[host] if host else [],
        window=w.window,
        explanation=(
            "TCP resends a segment that was not acknowledged in time (the retransmission timer, at least "
            "200 ms on Linux and doubling each time) or that the receiver's duplicate ACKs say was lost "
            "(fast retransmit, one round trip). Either way the bytes behind it wait: a request/response "
            "protocol such as a database's sees the stall as query latency, and the sender halves its "
            "congestion window. A share above about 1 % of segments means packets are lost or dropped on "
            "the path — a lossy or overloaded link, a NIC or switch dropping (ring buffers, policers), a "
            "shaped or congested path between tiers — and shows as response time the server does not "
            "account for (its own time stays flat while the client's grows). Tail loss probes count as "
            "retransmits too and can fire without loss when ACKs come late (a receiver short of CPU). "
            "The counters are host-wide: every connection of the host, whichever peer."
        ),
        next_steps=[
            f"Find the peer: ss -ti on {host or 'the host'} shows each connection's retrans and lost "
            "counters (and its rtt): the connections to one tier or one address are the path to look at.",
            "Look for drops below TCP: ip -s link (RX/TX dropped, errors), ethtool -S IFACE "
            "(rx_missed, rx_no_buffer, discards), tc -s qdisc (drops, overlimits of a shaper or netem), "
            "and the switches' port counters between the tiers.",
            "Compare TcpExtTCPTimeouts with TcpExtTCPFastRetrans (nstat -az): timeouts are whole lost "
            "windows or lost ACKs and cost hundreds of ms each; fast retransmits a round trip.",
            "On a virtual machine, check the host's vNIC and the hypervisor's network queues; on a cloud "
            "instance, its bandwidth or packets-per-second allowance (ethtool -S *_allowance_exceeded).",
            "If retransmits grow with load, the path saturates: measure it alone (iperf3 between the "
            "tiers) and compare with the traffic the test pushes (sar -n DEV).",
        ],
    )


# ---------------------------------------------------------------- net.listen-overflow


@dataclass
class ListenStep:
    """One window's listen-queue figures (the evidence's `steps` rows)."""

    name: str
    threads: int | None
    seconds: float
    samples: int
    drops: float  # ΔListenDrops, else ΔListenOverflows
    drops_s: float
    overflows_s: float | None
    syn_retrans_s: float | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _listen_step(w: TcpWindow) -> ListenStep | None:
    col = "drops" if w.has("drops") else "overflows" if w.has("overflows") else None
    if col is None:
        return None
    sec = w.seconds(col)
    if sec <= 0:
        return None
    drops = w.delta(col)
    return ListenStep(
        name=w.name,
        threads=w.threads,
        seconds=sec,
        samples=w.samples(col),
        drops=drops,
        drops_s=drops / sec,
        overflows_s=_rate_s(w, "overflows"),
        syn_retrans_s=_rate_s(w, "syn_retrans"),
        source=w.source,
    )


def _backlog_settings(ds: Dataset) -> dict[str | None, tuple[str, dict[str, float]]]:
    """host -> (the sysctl capture's path, somaxconn and tcp_max_syn_backlog as it read them)."""
    out: dict[str | None, tuple[str, dict[str, float]]] = {}
    for cap in ds.of("sysctl"):
        f = cap.frame[cap.frame["key"].astype(str).isin(BACKLOG_KEYS)]
        if len(f):
            out[cap.host] = (
                cap.path,
                dict(zip(f["key"].astype(str), f["value_num"].astype(float), strict=True)),
            )
    return out


def listen_overflow(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Listening sockets dropping connections: ΔListenDrops over a window at least `min_drops`. The
    accept queue (backlog) was full: the application accepts slower than clients connect."""
    windows = tcp_windows(ds, sweep)
    if not any(w.has("drops") or w.has("overflows") for w in windows):
        return Skipped(
            LISTEN,
            "no listen-queue counters (perfkit's nstat capture, pt-stalk's -netstat_s, "
            "or a `netstat -s`/`nstat -a` series)",
        )
    lim = th[LISTEN]
    settings = _backlog_settings(ds)
    db_vars = server_variables(ds, ("back_log", "max_connections"))
    found = []
    for host, ws in _by_host(windows).items():
        pairs = [(s, w) for w in ws if (s := _listen_step(w)) is not None]
        steps = [s for s, _ in pairs]
        hits = [
            (s, w)
            for s, w in pairs
            if s.drops > 0 and s.drops >= lim["min_drops"] and s.samples >= lim["min_samples"]
        ]
        if hits:
            found.append(
                _listen_finding(host, steps, hits, lim, settings.get(host), variables_for(str(host), db_vars))
            )
    return found


def _listen_finding(
    host: str | None,
    steps: list[ListenStep],
    hits: list[tuple[ListenStep, TcpWindow]],
    lim: dict[str, Any],
    sysctl: tuple[str, dict[str, float]] | None,
    db: dict[str, Any],
) -> Finding:
    s, w = max(hits, key=lambda h: h[0].drops_s)
    first = hits[0][0]
    critical = s.drops_s >= lim["critical_drops_s"]
    where = f" on {host}" if host else ""
    values = sysctl[1] if sysctl else {}
    somaxconn = values.get("net.core.somaxconn")
    back_log = db.get("back_log")
    limits = []
    if somaxconn is not None and math.isfinite(somaxconn):
        limits.append(f"net.core.somaxconn {somaxconn:.0f}")
    if isinstance(back_log, float):
        limits.append(f"the database's back_log {back_log:.0f}")
    limit_text = (
        f" The accept queue holds at most min(listen()'s backlog, somaxconn): {', '.join(limits)}."
        if limits
        else ""
    )
    syn = f"; clients here sent {s.syn_retrans_s:,.1f} SYNs again a second" if s.syn_retrans_s else ""
    before = [
        x for x in steps if x is not first and (x.threads or -1) < (first.threads or -1) and x.drops == 0
    ]
    since = (
        f" They start at {first.name if first.threads is None else count(first.threads, 'thread')}"
        + (f" ({len(before)} lower step{'s' if len(before) != 1 else ''} without)" if before else "")
        + "."
        if len(steps) > 1
        else ""
    )
    return Finding(
        rule=LISTEN,
        severity="critical" if critical else "warning",
        title=(
            f"Listen queue overflows{where}: {s.drops_s:,.1f} connection attempts dropped a second, "
            f"{w.label()}"
        ),
        summary=(
            f"{w.label(first=True)}{where}, listening sockets dropped {s.drops:,.0f} "
            f"connection attempts in {s.seconds:.1f} s ({s.drops_s:,.1f}/s{syn}): the accept queue was "
            f"full, so each dropped client waits for its SYN to be sent again (1 s, then 3 s, 7 s).{since}"
            f"{limit_text}"
        ),
        evidence={
            "host": host,
            "window_name": s.name,
            "threads": s.threads,
            "drops": s.drops,
            "drops_s": s.drops_s,
            "overflows_s": s.overflows_s,
            "syn_retrans_s": s.syn_retrans_s,
            "seconds": s.seconds,
            "samples": s.samples,
            "first_window": first.name,
            "first_threads": first.threads,
            "windows_over": len(hits),
            "somaxconn": somaxconn,
            "tcp_max_syn_backlog": values.get("net.ipv4.tcp_max_syn_backlog"),
            "back_log": back_log,
            "max_connections": db.get("max_connections"),
            "steps": [x.to_dict() for x in steps],
            "source": ", ".join([s.source, *([sysctl[0]] if sysctl else [])]),
        },
        hosts=[host] if host else [],
        window=w.window,
        explanation=(
            "A listening socket keeps the connections whose handshake completed in its accept queue until "
            "the server calls accept(); the queue holds min(the backlog passed to listen(), "
            "net.core.somaxconn) connections (MariaDB/MySQL pass back_log). When it is full the kernel "
            "drops the client's SYN, or the ACK that ends the handshake (TcpExtListenOverflows, "
            "TcpExtListenDrops), and the client sends it again after its retransmission timeout: 1 s, "
            "then 3 s and 7 s in total. Connects that normally take microseconds take seconds, a client "
            "with a short connect timeout fails, and throughput steps down while the server's own time "
            "per query stays low. It happens under connection storms (short connections, a pool opening "
            "at once, reconnects after a failover) or when the accepting thread stalls."
        ),
        next_steps=[
            f"See which port overflows: ss -ltn on {host or 'the server'} (a listening socket's Recv-Q is "
            "its accept queue now, Send-Q its limit); nstat -az TcpExtListenOverflows while it happens.",
            "Raise the queue: sysctl -w net.core.somaxconn=4096 (and net.ipv4.tcp_max_syn_backlog), and "
            "the server's own backlog (MySQL/MariaDB back_log, then restart; nginx `listen ... backlog=`, "
            "Java's ServerSocket backlog): the smaller of the two wins.",
            "Make connections last: a connection pool in the clients instead of a connect per "
            "transaction, and pool warm-up instead of opening every connection at once.",
            "Check the accept side: a thread that accepts (MySQL's main thread, thread_cache_size, "
            "thread_handling) stalled by CPU starvation or a lock empties the queue too slowly.",
        ],
    )


RULES = {RULE: port_exhaustion, RETRANSMITS: retransmits, LISTEN: listen_overflow}

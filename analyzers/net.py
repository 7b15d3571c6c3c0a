"""Network rules from the `ss` loop and `sysctl`: short connections running out of ephemeral ports.

A connection is named by (src ip, src port, dst ip, dst port). A client connecting to one server
ip:port has only its ephemeral ports (`net.ipv4.ip_local_port_range`) to vary, and the side that
closes first keeps each closed connection's port in TIME_WAIT for 60 s (the kernel's fixed
TCP_TIMEWAIT_LEN; `tcp_fin_timeout` is the FIN-WAIT-2 timeout, not this). So short connections cap
a client at `ports / 60 s` new connections a second per destination, whatever the server could do
(seed 003: 12 load clients × 50 000 ports / 60 s = 10 000 TPS, and the TPS sat at 10 000).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped
from perfkit.parsers.sysctl import PORT_RANGE_KEY

RULE = "net.port-exhaustion"


def _rate(x: float) -> str:
    """A rate as people say it: 16.7/s for a namespace's 1000 ports, 10000/s for seed 003's fleet."""
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _sysctl_of(ds: Dataset) -> dict[str | None, tuple[Any, dict[str, float]]]:
    """host -> (the last sysctl capture with a port range, its numeric values by key)."""
    out: dict[str | None, tuple[Any, dict[str, float]]] = {}
    for cap in ds.of("sysctl"):
        if "ephemeral_ports" not in cap.frame.attrs:
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
        ports = int(sys_cap.frame.attrs["ephemeral_ports"])
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
    low, high = sys_cap.frame.attrs["port_range_low"], sys_cap.frame.attrs["port_range_high"]
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


RULES = {RULE: port_exhaustion}

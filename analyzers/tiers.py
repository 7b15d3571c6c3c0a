"""rt.localized: the bottleneck is the tier whose own response time grows once throughput stops growing.

A request crosses tiers from the client inward (load generator → load balancer / ingress → application
→ database). Each tier's RT includes everything inside it, so a tier's *own* RT is its RT minus the
next inner tier's: the time spent in that tier and on the way to the next one. Adding concurrency
must raise either throughput or RT (Little's law: N = X × R); once throughput no longer rises, the
extra concurrency waits somewhere, and the tier whose own RT grows is where it waits (seeds/003:
3000 → 5000 users, the client's RT 290 → 499 ms while the application's fell 225 → 195 ms and the
database stayed at ~6 ms: the requests queued between the client and the application, in the ingress).

Tiers, outermost first: the load generator's average RT per step (`client`), the tiers of a user's
tiers file (`perfkit analyze --tiers FILE`, parsers/tiers.py) in file order, and the database's RT
from the DB sampler (`server`, Little's law on Threads_running). A file tier named like a built-in one
replaces it (the user measured it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped, count

RULE = "rt.localized"


@dataclass
class _Tier:
    name: str
    rt_ms: dict[int, float]  # threads -> average RT
    source: str


def _tiers(ds: Dataset, sweep: Any) -> list[_Tier]:
    """Tiers, outermost first, each with its RT per load level (levels without a value left out)."""
    listed: list[_Tier] = []
    for cap in ds.of("tiers"):
        df = cap.frame.dropna(subset=["rt_ms", "threads"])
        for _, rows in df.sort_values("tier_order", kind="stable").groupby("tier_order", sort=True):
            name = str(rows["tier"].iloc[0])
            if any(t.name == name for t in listed):
                continue  # a second file naming the same tier: the first one read wins
            per = rows.groupby("threads")["rt_ms"].mean()  # repeated runs of a level: their mean
            listed.append(_Tier(name, {int(n): float(v) for n, v in per.items()}, cap.path))
    names = {t.name for t in listed}
    out: list[_Tier] = []
    steps = sweep.steps if sweep is not None else []
    client = _per_level([(s.threads, s.lat_avg_ms) for s in steps])
    if client and "client" not in names:
        out.append(_Tier("client", client, ", ".join(sorted({s.source for s in steps}))))
    out += listed
    server = _per_level([(s.threads, s.server_lat_ms) for s in steps])
    if server and "server" not in names:
        out.append(_Tier("server", server, "DB sampler (mysql_status: Threads_running / TPS)"))
    return out


def _per_level(pairs: list[tuple[int, float | None]]) -> dict[int, float]:
    by: dict[int, list[float]] = {}
    for n, v in pairs:
        if v is not None and math.isfinite(v):
            by.setdefault(int(n), []).append(float(v))
    return {n: float(np.mean(v)) for n, v in sorted(by.items())}


def _throughput(ds: Dataset, sweep: Any, levels: list[int], outer: _Tier) -> tuple[dict[int, float], str]:
    """Throughput per level: the load generator's, else the tiers file's, else threads / outermost RT."""
    if sweep is not None:
        by = _per_level([(s.threads, s.tps) for s in sweep.steps])
        if all(n in by for n in levels):
            return by, f"load generator ({sweep.tool})"
    tps: dict[int, float] = {}
    for cap in ds.of("tiers"):
        df = cap.frame.dropna(subset=["tps", "threads"]).sort_values("tier_order", kind="stable")
        for n, rows in df.groupby("threads"):
            tps.setdefault(int(n), float(rows["tps"].iloc[0]))  # the outermost tier's: end to end
    if all(n in tps for n in levels):
        return tps, "tiers file"
    # A closed-loop load (each user waits for its reply, no think time) runs X = N / R (Little's law).
    return {n: n / (outer.rt_ms[n] / 1000) for n in levels}, f"threads / {outer.name} RT (Little's law)"


def _start_level(levels: list[int], tps: dict[int, float], knee: int | None, max_e: float) -> int | None:
    """The level from which throughput stopped growing: the sweep's knee, else where the elasticity
    d ln X / d ln N between consecutive levels first falls below `max_e`; None while it still grows."""
    if knee is None:
        for a, b in zip(levels, levels[1:], strict=False):
            xa, xb = tps[a], tps[b]
            if xa <= 0 or xb <= 0 or math.log(xb / xa) / math.log(b / a) < max_e:
                knee = a
                break
        if knee is None:
            return None
    before = [n for n in levels if n <= knee]
    return before[-1] if before else levels[0]


def localized(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """The tier whose own RT (its RT minus the next inner tier's) grew most once throughput stopped."""
    lim = th[RULE]
    tiers = [t for t in _tiers(ds, sweep) if len(t.rt_ms) >= 2]
    if len(tiers) < 2:
        return Skipped(
            RULE,
            "fewer than two tiers with an RT at two load levels: needs the load generator's RT with the "
            "DB sampler's (perfkit run), or a tiers file (perfkit analyze --tiers FILE)",
        )
    levels = sorted(set.intersection(*(set(t.rt_ms) for t in tiers)))
    if len(levels) < 2:
        return Skipped(RULE, "fewer than two load levels with an RT for every tier")
    outer = tiers[0]
    tps, method = _throughput(ds, sweep, levels, outer)
    sweep_knee = sweep.knee_threads if sweep is not None and method.startswith("load generator") else None
    if sweep is not None and method.startswith("load generator") and sweep_knee is None:
        return []  # the sweep still scales: RT growth there is not yet a bottleneck
    a = _start_level(levels, tps, sweep_knee, lim["max_elasticity"])
    if a is None:
        return []
    b = levels[-1]
    if a >= b:
        return Skipped(RULE, f"no load level with every tier's RT past the knee ({count(a, 'thread')})")
    own = {n: _own(tiers, n) for n in levels}
    growth = [own[b][i] - own[a][i] for i in range(len(tiers))]
    total = outer.rt_ms[b] - outer.rt_ms[a]
    if total < lim["min_total_growth_pct"] / 100 * outer.rt_ms[a]:
        return []  # end-to-end RT did not grow: nothing is queueing more
    i = int(np.argmax(growth))
    if growth[i] < lim["min_share_pct"] / 100 * total:
        return []  # the growth is spread over the tiers: no single place to point at
    tier = tiers[i]
    inner = tiers[i + 1].name if i + 1 < len(tiers) else None
    where = f"between {tier.name} and {inner}" if inner else f"inside {tier.name}"
    x_change = (tps[b] / tps[a] - 1) * 100 if tps[a] > 0 else float("nan")
    ev: dict[str, Any] = {
        "bottleneck_tier": tier.name,
        "next_inner_tier": inner,
        "tiers": [t.name for t in tiers],
        "steps_compared": [a, b],
        "own_rt_ms_from": own[a][i],
        "own_rt_ms_to": own[b][i],
        "own_rt_growth_ms": growth[i],
        "end_to_end_rt_ms_from": outer.rt_ms[a],
        "end_to_end_rt_ms_to": outer.rt_ms[b],
        "end_to_end_growth_ms": total,
        "share_of_growth_pct": growth[i] / total * 100,
        "own_rt_growth_ms_by_tier": {t.name: g for t, g in zip(tiers, growth, strict=True)},
        "throughput_from": tps[a],
        "throughput_to": tps[b],
        "throughput_change_pct": x_change,
        "throughput_method": method,
        # [threads, tier, RT, own RT] for every level every tier was measured at
        "rt_table_ms": [[n, t.name, t.rt_ms[n], own[n][k]] for n in levels for k, t in enumerate(tiers)],
        "sources": sorted({t.source for t in tiers}),
    }
    rt_line = ", ".join(f"{t.name} {_f(t.rt_ms[a])} → {_f(t.rt_ms[b])} ms" for t in tiers)
    own_rt = (
        f"{tier.name}'s own RT ({tier.name} minus {inner})"
        if inner
        else f"{tier.name}'s RT (the innermost tier measured)"
    )
    return [
        Finding(
            rule=RULE,
            severity="warning",
            title=f"Response time grows {where}: {tier.name}'s own RT {_f(own[a][i])} → {_f(own[b][i])} ms",
            summary=(
                f"From {a} to {b} threads throughput changed {x_change:+.0f}% "
                f"({_f(tps[a])} → {_f(tps[b])}/s) "
                f"while RT went {rt_line}: {own_rt} grew {_f(own[a][i])} → {_f(own[b][i])} ms, "
                f"{growth[i] / total * 100:.0f}% of the end-to-end growth of {_f(total)} ms."
            ),
            evidence=ev,
            explanation=(
                "Adding concurrency must raise either throughput or response time (Little's law: "
                "N = X × R). Past the knee throughput stays flat, so the added requests wait; a tier's "
                "RT includes its inner tiers, so the wait sits where the RT minus the next inner tier's "
                "RT grows. Tiers inside it whose RT stays flat or falls are receiving no more work — "
                "they are not the bottleneck however busy they look."
                + (
                    f" Here the time between {tier.name} and {inner} grew: the path between them (network, "
                    "load balancer, ingress or proxy, connection pools, or the client itself) is where "
                    "requests queue."
                    if inner
                    else f" Here {tier.name}, the innermost tier measured, is where the time goes."
                )
            ),
            next_steps=_next_steps(tier.name, inner),
        )
    ]


def _next_steps(tier: str, inner: str | None) -> list[str]:
    if inner is None:
        return [
            f"Profile {tier} at the two steps and compare where the extra time goes (perf/pprof, its "
            "own wait and lock metrics, slow log).",
            f"Check {tier}'s host resources over the steps (cpu.saturated, disk.* findings).",
        ]
    steps = [
        f"Measure each hop between {tier} and {inner}: packet captures on both sides (tcpdump: RT per "
        "hop, retransmits), the balancer's/proxy's own latency, queue and worker/connection limits.",
        f"Bypass the hop (point {tier} straight at {inner}) and repeat the step: if throughput rises, "
        "the hop was the limit.",
    ]
    if tier == "client":
        steps.append("Check the load-generator host's CPU and its connection pool (client.saturated).")
    return steps


def _own(tiers: list[_Tier], n: int) -> list[float]:
    rts = [t.rt_ms[n] for t in tiers]
    return [rt - (rts[k + 1] if k + 1 < len(rts) else 0.0) for k, rt in enumerate(rts)]


def _f(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}"


RULES = {RULE: localized}

"""NUMA rules: a process whose memory sits on nodes other than the ones its CPUs belong to.

Inputs: `numastat -p` (MB per node per process), the process's allowed CPUs (the `affinity`
capture: /proc/PID/status `Cpus_allowed_list`) and `numactl --hardware` (each node's CPUs and the
SLIT distance matrix, where 10 is local access). Seed 003: VMs bound to CPUs of one socket whose
memory the hypervisor had put on the other ran ~3× slower per memory access; once bound with their
memory, `numastat -c qemu-kvm` showed each VM's memory on its own node.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped
from perfkit.parsers.affinity import cpu_list

RULE = "numa.remote-memory"
_COUNT = re.compile(r"\(\d+\)")  # numactl's `0-7 (8)`: the printed count, not a CPU


def _topology(ds: Dataset) -> dict[str | None, tuple[dict[int, set[int]], dict[tuple[int, int], float]]]:
    """host -> ({node: its CPUs}, {(from node, to node): distance}), from the last numactl capture."""
    out = {}
    for cap in ds.of("numactl"):
        df = cap.frame
        if df.empty:
            continue
        cpus = {
            int(n): set(cpu_list(_COUNT.sub(" ", str(c))))
            for n, c in zip(df["node"], df["cpus"].fillna(""), strict=True)
        }
        dist = cap.extras.distances
        nodes, matrix = dist.get("nodes") or [], dist.get("matrix") or []
        d = {
            (a, b): float(v)
            for a, row in zip(nodes, matrix, strict=True)
            for b, v in zip(nodes, row, strict=True)
        }
        out[cap.host] = (cpus, d)
    return out


def _affinity(ds: Dataset) -> dict[tuple[str | None, int], tuple[str, str]]:
    """(host, pid) -> (name, Cpus_allowed_list), later captures winning."""
    out = {}
    for cap in ds.of("affinity"):
        df = cap.frame.dropna(subset=["cpus_allowed"])
        for pid, name, cpus in zip(df["pid"], df["process"], df["cpus_allowed"], strict=True):
            out[(cap.host, int(pid))] = ("" if pd.isna(name) else str(name), str(cpus))
    return out


def _processes(ds: Dataset) -> dict[tuple[str | None, int], tuple[str, dict[int, float], str]]:
    """(host, pid) -> (name as numastat printed it, {node: MB}, path), later captures winning."""
    out = {}
    for cap in ds.of("numastat"):
        df = cap.frame
        rows = df[
            (df["section"] == "process")
            & (df["metric"] == "total")
            & df["pid"].notna()
            & df["node"].notna()
            & df["mb"].notna()
        ]
        for (pid, name), g in rows.groupby(["pid", "process"], sort=False, dropna=False):
            mb = {int(n): float(v) for n, v in zip(g["node"], g["mb"], strict=True)}
            out[(cap.host, int(pid))] = ("" if pd.isna(name) else str(name), mb, cap.path)
    return out


def remote_memory(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """Most of a pinned process's memory on nodes its CPUs do not belong to: every access is remote."""
    procs = _processes(ds)
    if not procs:
        return Skipped(RULE, "no numastat -p capture (per-process memory per node)")
    topo = _topology(ds)
    if not topo:
        return Skipped(RULE, "no numactl --hardware capture")
    aff = _affinity(ds)
    if not aff:
        return Skipped(RULE, "no affinity capture (/proc/PID/status Cpus_allowed_list)")
    lim = th[RULE]
    out = []
    for (host, pid), (np_name, mb, path) in procs.items():
        if host not in topo or (host, pid) not in aff:
            continue
        node_cpus, dist = topo[host]
        name, allowed_text = aff[(host, pid)]
        allowed = set(cpu_list(allowed_text))
        local = sorted(n for n, c in node_cpus.items() if c & allowed)
        cpu_nodes = [n for n, c in node_cpus.items() if c]
        if not local or set(local) >= set(cpu_nodes):
            continue  # unpinned: the scheduler may run it next to any of its memory
        total = sum(mb.values())
        remote = {n: v for n, v in mb.items() if n not in local and v > 0}
        remote_mb = sum(remote.values())
        if total < lim["min_process_mb"] or remote_mb < lim["min_remote_share"] * total:
            continue
        out.append(_finding(host, pid, name or np_name, allowed_text, local, mb, remote, total, dist, path))
    return out


def _finding(
    host: str | None,
    pid: int,
    name: str,
    allowed: str,
    local: list[int],
    mb: dict[int, float],
    remote: dict[int, float],
    total: float,
    dist: dict[tuple[int, int], float],
    path: str,
) -> Finding:
    remote_mb = sum(remote.values())
    share = remote_mb / total
    # Each remote node is reached from the nearest node the process may run on; weighted by MB.
    local_d = [dist[(n, n)] for n in local if (n, n) in dist]
    reach = [
        (min(dist[(a, r)] for a in local if (a, r) in dist), v)
        for r, v in remote.items()
        if any((a, r) in dist for a in local)
    ]
    d_local = sum(local_d) / len(local_d) if local_d else math.nan
    d_remote = sum(d * v for d, v in reach) / sum(v for _, v in reach) if reach else math.nan
    ratio = d_remote / d_local if local_d and reach else math.nan
    blended = (1 - share) + share * ratio
    ev: dict[str, Any] = {
        "process": name,
        "pid": pid,
        "allowed_cpus": allowed,
        "allowed_nodes": ",".join(map(str, local)),
        **{f"node{n}_mb": v for n, v in sorted(mb.items())},
        "total_mb": total,
        "remote_mb": remote_mb,
        "remote_share": share,
        "distance_local": d_local,
        "distance_remote": d_remote,
        "distance_ratio": ratio,
        "expected_access_cost": blended,
        "source": path,
    }
    where = f" on {host}" if host else ""
    penalty = f"≈{ratio:.1f}× the local latency per access" if math.isfinite(ratio) else "remote latency"
    nodes_txt = ",".join(map(str, local))
    return Finding(
        rule=RULE,
        severity="warning",
        title=f"{name} ({pid}){where}: {share:.0%} of its memory is remote to its CPUs",
        summary=(
            f"{name} (pid {pid}){where} may run only on CPUs {allowed} (node {nodes_txt}) but "
            f"{remote_mb:.0f} of its {total:.0f} MB ({share:.0%}) sit on node "
            f"{','.join(map(str, sorted(remote)))}: distance {d_remote:g} vs {d_local:g}, {penalty}."
        ),
        evidence=ev,
        hosts=[host] if host else [],
        window=None,
        explanation=(
            "A memory access is served by the node that holds the page; from a CPU of another node it "
            "crosses the interconnect (between dies or sockets). The SLIT distances in numactl --hardware "
            "give the relative cost (10 = local), and measured latencies follow them (seed 003: 149 ns "
            "local, 420-490 ns across sockets, ~3×). A process pinned to CPUs of one node whose memory "
            "was allocated elsewhere (allocated before it was pinned, by a parent or hypervisor elsewhere, "
            "or because its node was full) pays that on every cache miss: fewer instructions per cycle, "
            "higher RT, while CPU and disk look unremarkable."
        ),
        next_steps=[
            f"Start it with its memory bound where it runs: numactl --cpunodebind={nodes_txt} "
            f"--membind={nodes_txt} (or --preferred), or the VM's/container's NUMA placement settings.",
            f"Migrate the pages already there: migratepages {pid} "
            f"{','.join(map(str, sorted(remote)))} {nodes_txt}.",
            f"Check why the local node lacks memory: numastat -m (MemFree per node), numastat -p {pid} again "
            "after warm-up; kernel.numa_balancing.",
            "Compare latency: perf stat -e node-load-misses,node-loads -p PID, or a pinned lat_mem_rd.",
        ],
    )


RULES = {RULE: remote_memory}

"""numa.remote-memory: seed 003's VMs with their memory on their own node (no finding), the same VM
pinned to the other socket, a two-node database server with its memory on the wrong node, and an
unpinned or single-node process (no finding)."""

from __future__ import annotations

import copy

import pytest

from perfkit.analyzers import numa
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Skipped
from perfkit.parsers import affinity, numactl, numastat

from .conftest import FIXTURES

TH = default_thresholds()
SEED_NUMASTAT = FIXTURES / "numastat" / "seed003-c-qemu-kvm-16node-folded.txt"
SEED_NUMACTL = FIXTURES / "numactl" / "seed003-16node-2socket.synthetic.txt"
TWO_NODE = FIXTURES / "numactl" / "two-socket-2node.synthetic.txt"

# `numastat -p 4242 -p 4343` on a 2-node machine, laid out as numastat prints it (a 16-wide label
# column, 15-wide right-justified data columns behind one space): mysqld's memory on node 1.
NUMASTAT_2NODE = """
Per-node process memory usage (in MBs)
PID                       Node 0          Node 1           Total
----------------  --------------- --------------- ---------------
4242 (mysqld)             512.00        30208.00        30720.00
4343 (sysbench)            90.00            2.00           92.00
----------------  --------------- --------------- ---------------
Total                     602.00        30210.00        30812.00
"""


def grep_affinity(procs: dict[int, tuple[str, str]]) -> str:
    """What the `affinity` capture prints for {pid: (name, Cpus_allowed_list)}."""
    return "".join(
        f"/proc/{pid}/status:Name:\t{name}\n/proc/{pid}/status:Cpus_allowed_list:\t{cpus}\n"
        for pid, (name, cpus) in procs.items()
    )


def dataset(numastat_src, numactl_src, affinity_text: str | None, host: str = "db1") -> Dataset:
    caps = []
    if numastat_src is not None:
        caps.append(
            Capture("numastat-procs.out", "numastat", host, None, numastat.parse(numastat_src, host=host))
        )
    if numactl_src is not None:
        caps.append(Capture("numactl.out", "numactl", host, None, numactl.parse(numactl_src, host=host)))
    if affinity_text is not None:
        caps.append(Capture("affinity.out", "affinity", host, None, affinity.parse(affinity_text, host=host)))
    return Dataset("x", None, caps)


# seed 003 after the fix: each VM bound to the CPUs of the node that holds its memory (node N has
# CPUs 8N..8N+7 in the synthetic seed-003 topology)
SEED_BOUND = {
    111105: ("qemu-kvm", "8-15"),
    111305: ("qemu-kvm", "16-23"),
    111763: ("qemu-kvm", "24-31"),
    112182: ("qemu-kvm", "32-39"),
    112504: ("qemu-kvm", "40-47"),
    112679: ("qemu-kvm", "48-55"),
    112837: ("qemu-kvm", "56-63"),
}


def test_seed003_vms_bound_with_their_memory_do_not_fire() -> None:
    ds = dataset(SEED_NUMASTAT, SEED_NUMACTL, grep_affinity(SEED_BOUND))
    assert numa.remote_memory(ds, None, TH) == []


def test_seed003_vm_pinned_to_the_other_socket_fires() -> None:
    # 111105's memory (node 0: 33, node 1: 11840, node 5: 17 MB) with its vCPUs on node 9 (72-79).
    ds = dataset(SEED_NUMASTAT, SEED_NUMACTL, grep_affinity({**SEED_BOUND, 111105: ("qemu-kvm", "72-79")}))
    [f] = numa.remote_memory(ds, None, TH)
    ev = f.evidence
    assert ev["pid"] == 111105 and ev["allowed_nodes"] == "9" and ev["allowed_cpus"] == "72-79"
    assert ev["total_mb"] == 33 + 11840 + 17 and ev["remote_mb"] == ev["total_mb"]
    assert ev["remote_share"] == 1.0
    # row `9:` of the matrix: to node 0 29, node 1 28, node 5 30; weighted by MB over 11890
    assert ev["distance_local"] == 10
    assert ev["distance_remote"] == pytest.approx((29 * 33 + 28 * 11840 + 30 * 17) / 11890)
    assert ev["distance_ratio"] == pytest.approx(332987 / 11890 / 10)  # ≈2.8: the seed measured ~3×
    assert f.hosts == ["db1"] and f.severity == "warning"


def test_two_node_database_with_memory_on_the_other_node_fires() -> None:
    aff = grep_affinity({4242: ("mysqld", "0-7,16-23"), 4343: ("sysbench", "8-15,24-31")})
    [f] = numa.remote_memory(dataset(NUMASTAT_2NODE, TWO_NODE, aff), None, TH)
    ev = f.evidence
    # node 0 holds CPUs 0-7 and 16-23: mysqld's 30208 of 30720 MB on node 1 are remote
    assert ev["process"] == "mysqld" and ev["pid"] == 4242 and ev["allowed_nodes"] == "0"
    assert ev["node0_mb"] == 512 and ev["node1_mb"] == 30208
    assert ev["remote_share"] == pytest.approx(30208 / 30720)
    assert ev["distance_ratio"] == pytest.approx(21 / 10)
    assert ev["expected_access_cost"] == pytest.approx(512 / 30720 + 30208 / 30720 * 2.1)
    assert "2.1×" in f.summary
    # sysbench (92 MB, below min_process_mb) is not reported although it sits on node 0 too


def test_unpinned_process_does_not_fire() -> None:
    aff = grep_affinity({4242: ("mysqld", "0-31")})
    assert numa.remote_memory(dataset(NUMASTAT_2NODE, TWO_NODE, aff), None, TH) == []


def test_real_single_node_captures_do_not_fire() -> None:
    two_pids = FIXTURES / "numastat" / "numastat-2.0.16-p-two-pids-1node.txt"
    aff = grep_affinity({32744: ("Web Content", "0-1"), 32745: ("mysqld", "0")})
    ds = dataset(two_pids, FIXTURES / "numactl" / "numactl-2.0.16-1node.txt", aff)
    th = copy.deepcopy(TH)
    th["numa.remote-memory"]["min_process_mb"] = 0  # even the 13 MB processes: all memory is local
    assert numa.remote_memory(ds, None, th) == []


def test_skipped_when_an_input_is_missing() -> None:
    aff = grep_affinity({4242: ("mysqld", "0-7")})
    out = numa.remote_memory(dataset(None, TWO_NODE, aff), None, TH)
    assert isinstance(out, Skipped) and "numastat -p" in out.reason
    system_only = (
        FIXTURES / "numastat" / "fake-sysfs-4node-c.synthetic.txt"
    )  # `numastat -c`: no process table
    out = numa.remote_memory(dataset(system_only, TWO_NODE, aff), None, TH)
    assert isinstance(out, Skipped) and "numastat -p" in out.reason
    out = numa.remote_memory(dataset(NUMASTAT_2NODE, None, aff), None, TH)
    assert isinstance(out, Skipped) and "numactl" in out.reason
    out = numa.remote_memory(dataset(NUMASTAT_2NODE, TWO_NODE, None), None, TH)
    assert isinstance(out, Skipped) and "affinity" in out.reason


def test_thresholds_override_changes_the_outcome() -> None:
    aff = grep_affinity({4242: ("mysqld", "0-7,16-23")})
    th = copy.deepcopy(TH)
    th["numa.remote-memory"]["min_remote_share"] = 0.99  # 98.3% remote is not enough
    assert numa.remote_memory(dataset(NUMASTAT_2NODE, TWO_NODE, aff), None, th) == []
    th = copy.deepcopy(TH)
    th["numa.remote-memory"]["min_process_mb"] = 40000  # mysqld's 30720 MB is below
    assert numa.remote_memory(dataset(NUMASTAT_2NODE, TWO_NODE, aff), None, th) == []

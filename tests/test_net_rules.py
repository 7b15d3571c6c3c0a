"""net.port-exhaustion on a real capture of a namespace whose ephemeral ports ran out, seed 003's
12 load clients, and ordinary captures that must not fire."""

from __future__ import annotations

import copy

import pytest

from perfkit.analyzers import net
from perfkit.analyzers import sweep as sweep_model
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Skipped
from perfkit.parsers import ss, sysctl
from perfkit.parsers import sweep as sweep_parser

from .conftest import FIXTURES

TH = default_thresholds()
SS = FIXTURES / "ss"
SYSCTL = FIXTURES / "sysctl"
EXHAUSTED = SS / "iproute2-6.1-loop-netns-ports-exhausted.txt"
NETNS_SYSCTL = SYSCTL / "procps-4.0.2-perfkit-keys-netns-1000-ports.txt"


def caps(host: str | None, ss_text, sysctl_text) -> list[Capture]:
    out = []
    if ss_text is not None:
        out.append(Capture(f"hosts/{host}/ss.out", "ss", host, None, ss.parse(ss_text, host=host)))
    if sysctl_text is not None:
        out.append(
            Capture(f"hosts/{host}/sysctl.out", "sysctl", host, None, sysctl.parse(sysctl_text, host=host))
        )
    return out


def with_sweep(ds: Dataset, table: str) -> object:
    ds.captures.append(Capture("sweep.csv", "sweep", None, None, sweep_parser.parse(table)))
    return sweep_model.build(ds, TH)


def test_real_namespace_with_1000_ports_fires() -> None:
    ds = Dataset("netns", None, caps("c1", EXHAUSTED, NETNS_SYSCTL))
    [f] = net.port_exhaustion(ds, None, TH)
    ev = f.evidence
    # sysctl: `net.ipv4.ip_local_port_range = 40000<TAB>40999` -> 40999 - 40000 + 1 = 1000 ports;
    # ss: the 13 `timewait:` lines are 6 190 382 564 751 923 1000 1000 1000 1000 1000 1000 1000.
    assert ev["ephemeral_ports"] == 1000 and ev["port_range"] == "40000-40999"
    assert ev["timewait_max"] == 1000 and ev["timewait_median"] == 1000  # 7th of 13 sorted values
    assert ev["range_share_max"] == 1.0
    assert ev["samples"] == 13 and ev["samples_at_range"] == 8  # 923 and the seven 1000s are >= 800
    assert ev["tcp_tw_reuse"] == 0 and ev["tcp_fin_timeout_s"] == 60
    assert ev["client_addresses"] == 1 and ev["ceiling_per_s"] == pytest.approx(1000 / 60)
    assert ev["close_rate_per_s"] == pytest.approx(1000 / 60)  # median of the 8 at-range blocks: 1000
    assert f.severity == "warning"  # no sweep to compare with
    assert f.hosts == ["c1"]
    # the 923 block is 2026-11-23 08:13:46 UTC (1795421626), the last 08:13:53 (1795421633)
    assert f.window == ("2026-11-23T08:13:46+00:00", "2026-11-23T08:13:53+00:00")
    assert "closes first" in f.explanation and "(src ip, dst ip, dst port)" in f.explanation


def test_real_namespace_with_tps_flat_at_the_ceiling_is_critical() -> None:
    ds = Dataset("netns", None, caps("c1", EXHAUSTED, NETNS_SYSCTL))
    # One short connection per transaction: TPS flat near 1000 / 60 = 16.7 from 4 threads on.
    sw = with_sweep(ds, "threads,tps\n1,6.1\n2,12.0\n4,16.2\n8,16.5\n16,16.4\n")
    [f] = net.port_exhaustion(ds, sw, TH)
    assert f.severity == "critical"
    assert f.evidence["sweep_peak_tps"] == 16.5 and f.evidence["sweep_peak_threads"] == 8
    assert f.evidence["steps_at_ceiling"] == 3 and f.evidence["steps_at_ceiling_threads"] == "4,8,16"
    assert f.evidence["peak_over_ceiling"] == pytest.approx(16.5 / (1000 / 60))
    assert "≈16.7/s" in f.summary and "peak 16.5 at 8 threads" in f.summary


def seed003_client(n: int) -> list[Capture]:
    """One of seed 003's load clients: port range 10000-60000 (50001 ports), TIME_WAIT about 50000."""
    stamp = 1795421600
    blocks = "".join(
        f"== {stamp + i}\nTotal: 50100\n"
        f"TCP:   {tw + 20} (estab 12, closed {tw + 6}, orphaned 0, timewait {tw})\n\ntimewait: {tw}\n"
        for i, tw in enumerate((49850, 49990, 50001, 49996))
    )
    return caps(
        f"pts{n:02d}", blocks, "net.ipv4.ip_local_port_range = 10000\t60000\nnet.ipv4.tcp_tw_reuse = 0\n"
    )


def test_seed003_twelve_clients_cap_at_10000_tps() -> None:
    ds = Dataset("seed003", None, [c for n in range(1, 13) for c in seed003_client(n)])
    # seed 003: 9856 TPS at 5000 concurrency, flat around 10 000 (the other steps are illustrative)
    sw = with_sweep(ds, "threads,tps\n1000,7400\n2000,9700\n3000,9950\n5000,9856\n")
    [f] = net.port_exhaustion(ds, sw, TH)
    ev = f.evidence
    assert ev["client_addresses"] == 12 and ev["ports_total"] == 12 * 50001
    assert ev["ceiling_per_s"] == pytest.approx(12 * 50001 / 60)  # 10000.2: the seed's 10 000 TPS
    assert ev["steps_at_ceiling"] == 3 and f.severity == "critical"
    assert len(f.hosts) == 12


@pytest.mark.parametrize(
    "ss_fixture",
    [
        "iproute2-6.1-loop-idle.txt",  # 21 .. 10 TIME_WAIT
        "iproute2-6.1-loop-timewait.txt",  # 164 -> 243 of 28232 ports
        "iproute2-6.1-loop-finwait2.txt",
    ],
)
def test_ordinary_captures_do_not_fire(ss_fixture: str) -> None:
    ds = Dataset("lab", None, caps("db1", SS / ss_fixture, SYSCTL / "procps-4.0.2-perfkit-keys.txt"))
    assert net.port_exhaustion(ds, None, TH) == []


def test_tw_reuse_1_lifts_the_ceiling() -> None:
    reuse = NETNS_SYSCTL.read_text().replace("tcp_tw_reuse = 0", "tcp_tw_reuse = 1")
    assert net.port_exhaustion(Dataset("x", None, caps("c1", EXHAUSTED, reuse)), None, TH) == []


def test_port_range_of_another_host_is_not_used() -> None:
    ds = Dataset("x", None, caps("c1", EXHAUSTED, None) + caps("c2", None, NETNS_SYSCTL))
    assert net.port_exhaustion(ds, None, TH) == []


def test_skipped_without_ss_or_port_range() -> None:
    out = net.port_exhaustion(Dataset("x", None, caps("c1", None, NETNS_SYSCTL)), None, TH)
    assert isinstance(out, Skipped) and out.reason == "no ss capture"
    out = net.port_exhaustion(Dataset("x", None, caps("c1", EXHAUSTED, None)), None, TH)
    assert isinstance(out, Skipped) and "ip_local_port_range" in out.reason


def test_thresholds_override_changes_the_outcome() -> None:
    ds = Dataset("netns", None, caps("c1", EXHAUSTED, NETNS_SYSCTL))
    th = copy.deepcopy(TH)
    th["net.port-exhaustion"]["min_samples"] = 9  # only 8 blocks reach 800 of 1000 ports
    assert net.port_exhaustion(ds, None, th) == []
    th = copy.deepcopy(TH)
    th["net.port-exhaustion"]["timewait_s"] = 30  # a stack with a 30 s TIME_WAIT: twice the ceiling
    [f] = net.port_exhaustion(ds, None, th)
    assert f.evidence["ceiling_per_s"] == pytest.approx(1000 / 30)

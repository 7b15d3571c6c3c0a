"""Dataset.cpu_count: the one place a host's CPU count comes from (issue 14 #21, issue 17), on real
captures: nproc, then the `(N CPU)` banner of mpstat/sar/pidstat/iostat, then the CPUs mpstat or
sar/sadf list, then psutil; a capture of the same step first."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from perfkit.dataset import Capture, Dataset
from perfkit.parsers import iostat, mpstat, nproc, pidstat, sar

from .conftest import FIXTURES

MP_ALL_ONLY = FIXTURES / "mpstat" / "sysstat-12.6-C-all-cpu-bound.txt"  # `(2 CPU)`, no per-CPU rows
MP_PER_CPU = FIXTURES / "mpstat" / "sysstat-12.6-P-ALL-iso.txt"  # `(2 CPU)`, CPUs 0 and 1
TWO_CPUS = FIXTURES / "nproc" / "coreutils-9.1.txt"  # `2`


def cap(kind: str, frame: pd.DataFrame, host: str | None = "db1", step: str | None = None) -> Capture:
    return Capture(f"hosts/{host}/{step or '-'}/{kind}.out", kind, host, step, frame)


def banner(path, cpus: int) -> str:
    """A real capture whose banner says `cpus` CPUs (as if taken on a bigger machine)."""
    return path.read_text().replace("(2 CPU)", f"({cpus} CPU)")


@pytest.mark.parametrize(
    "kind,parser,fixture,cpus",
    [
        ("mpstat", mpstat, MP_ALL_ONLY, 2),
        ("sar", sar, FIXTURES / "sar" / "sysstat-12.6-f-B-q-w-iso.txt", 2),
        ("pidstat", pidstat, FIXTURES / "pidstat" / "sysstat-12.6-u-d-w-iso-cpu.txt", 2),
        ("iostat", iostat, FIXTURES / "iostat" / "sysstat-10.1-x-d-t-en_US-12h.synthetic.txt", 8),
        ("iostat", iostat, FIXTURES / "iostat" / "sysstat-11.6-x-t.synthetic.txt", 1),
    ],
)
def test_each_sysstat_banner_gives_the_count(kind: str, parser, fixture, cpus: int) -> None:
    frame = parser.parse(fixture, host="db1")
    assert frame.attrs["cpus"] == cpus
    ds = Dataset("x", None, [cap(kind, frame)])
    assert ds.cpu_count("db1") == (cpus, f"hosts/db1/-/{kind}.out")
    assert ds.cpu_count("db2") is None  # another host's banner says nothing about this one


def test_order_nproc_then_banner_then_listed_cpus_then_psutil() -> None:
    per_cpu = cap("mpstat", mpstat.parse(banner(MP_PER_CPU, 8), host="db1"), step="a")  # lists 2 CPUs
    ds = Dataset("x", None, [per_cpu])
    assert ds.cpu_count("db1") == (8, per_cpu.path)  # the banner first
    per_cpu.extras = replace(per_cpu.extras, cpus=None)  # as from a capture without a banner
    assert ds.cpu_count("db1") == (2, per_cpu.path)  # then the CPUs its rows list
    ds.captures.insert(0, cap("psutil", pd.DataFrame({"ncpu": pd.array([16], dtype="Int64")})))
    assert ds.cpu_count("db1") == (2, per_cpu.path)  # psutil last
    ds.captures.append(cap("mpstat", mpstat.parse(banner(MP_ALL_ONLY, 4), host="db1"), step="b"))
    assert ds.cpu_count("db1")[0] == 4  # any banner before listed CPUs
    ds.captures.append(cap("nproc", nproc.parse(TWO_CPUS, host="db1")))
    assert ds.cpu_count("db1") == (2, "hosts/db1/-/nproc.out")  # nproc first
    assert Dataset("x", None, []).cpu_count("db1") is None


def test_a_capture_of_the_same_step_first() -> None:
    caps = [
        cap("mpstat", mpstat.parse(banner(MP_ALL_ONLY, n), host="db1"), step=s)
        for n, s in ((4, "a"), (8, "b"))
    ]
    ds = Dataset("x", None, caps)
    assert ds.cpu_count("db1", "b") == (8, caps[1].path)
    assert ds.cpu_count("db1", "a") == (4, caps[0].path)
    assert ds.cpu_count("db1", "c") == (4, caps[0].path)  # none of that step: archive order

"""profile.hotspots on real perf (folded, perf script) and Go pprof captures."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from perfkit.analyzers import profile
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Skipped
from perfkit.parsers import folded, perf_script, pprof

FIX = Path(__file__).parent / "fixtures"
TH = default_thresholds()
PYTHON = FIX / "folded" / "perf-6.1-python-awk.txt"

# A Go server whose CPU goes to GC, no single function above 50 %, as perfkit's awk folds it.
GC_HEAVY = """tidb-server;runtime.goexit;main.handle;main.compute 45
tidb-server;runtime.goexit;runtime.gcBgMarkWorker;runtime.gcDrain;runtime.scanobject 25
tidb-server;runtime.goexit;runtime.gcBgMarkWorker;runtime.gcDrain;runtime.greyobject 10
tidb-server;runtime.goexit;main.handle;main.encode 20
"""


def cap(kind: str, path: Path | str, host: str | None = "db1") -> Capture:
    mod = {"folded": folded, "perf_script": perf_script, "pprof": pprof}[kind]
    return Capture(str(path), kind, host, None, mod.parse(path, host=host))


def ds(*caps: Capture) -> Dataset:
    return Dataset("x", None, list(caps))


def test_perf_folded_dominant_function_warns() -> None:
    [f] = profile.hotspots(ds(cap("folded", PYTHON)), None, TH)
    assert f.severity == "warning"
    ev = f.evidence
    # _PyEval_EvalFrameDefault as the leaf: lines with 49 + 7 + 25 samples, of 96
    assert ev["samples"] == 96 and ev["busy_samples"] == 96 and ev["idle_pct"] == 0.0
    assert ev["flat1_function"] == "_PyEval_EvalFrameDefault"
    assert ev["flat1_pct"] == pytest.approx(81 / 96 * 100)
    # ... and on the stack (not as leaf) in the three interrupt stacks: 81 + 1 + 1 + 1
    assert ev["flat1_cum_pct"] == pytest.approx(84 / 96 * 100)
    # every line but `python3;...` (1 sample) is comm `busy`
    assert ev["comm_top"] == "busy" and ev["comm_top_pct"] == pytest.approx(95 / 96 * 100)
    assert "[unknown]" not in {v for k, v in ev.items() if k.endswith("_function")}


def test_raw_perf_script_gives_the_same_kind_of_finding() -> None:
    path = FIX / "perf_script" / "perf-6.1-record-g-python.txt"
    [f] = profile.hotspots(ds(cap("perf_script", path)), None, TH)
    assert f.evidence["samples"] == 66 and f.evidence["flat1_function"] == "_PyEval_EvalFrameDefault"


def test_go_cpu_profile() -> None:
    [f] = profile.hotspots(ds(cap("pprof", FIX / "pprof" / "go1.26-cpu-2s.pb.gz")), None, TH)
    assert f.severity == "warning" and f.evidence["profile"] == "Go CPU profile"
    # 195 of the 198 10-ms samples end in blockSHANI (go tool pprof -top: 1.95s of 1.98s)
    assert f.evidence["flat1_function"] == "crypto/internal/fips140/sha256.blockSHANI"
    assert f.evidence["flat1_pct"] == pytest.approx(195 / 198 * 100)
    assert f.evidence["samples"] == 198 and f.evidence["value_total_s"] == pytest.approx(1.98)


def test_idle_only_perf_profile_fires_nothing() -> None:
    # `perf record -a` on an idle machine: 12 samples of swapper in pv_native_safe_halt.
    assert profile.hotspots(ds(cap("folded", FIX / "folded" / "perf-6.1-swapper-awk.txt")), None, TH) == []


def test_family_share_warns_and_is_explained() -> None:
    [f] = profile.hotspots(ds(cap("folded", GC_HEAVY)), None, TH)
    # main.compute 45 % is under the single-function bar; GC leaves 25 + 10 = 35 % are over the family bar
    assert f.severity == "warning"
    assert f.evidence["flat1_function"] == "main.compute" and f.evidence["flat1_pct"] == 45.0
    assert f.evidence["family"] == "gc" and f.evidence["family_flat_pct"] == pytest.approx(35.0)
    assert f.evidence["cum1_function"] == "runtime.goexit" and f.evidence["cum1_pct"] == 100.0
    assert "garbage collection" in f.explanation


def test_family_threshold_override() -> None:
    th = copy.deepcopy(TH)
    th["profile.hotspots"]["warn_family_flat_pct"] = 40
    [f] = profile.hotspots(ds(cap("folded", GC_HEAVY)), None, th)
    assert f.severity == "info" and "family" not in f.evidence
    th["profile.hotspots"]["min_samples"] = 200  # 100 samples: too few to say anything
    assert profile.hotspots(ds(cap("folded", GC_HEAVY)), None, th) == []


def test_families() -> None:
    assert profile.family("runtime.futex") == "lock"
    assert profile.family("sync.(*Mutex).lockSlow") == "lock"
    # Go 1.24 moved the mutex to internal/sync; its fast path (inlined Lock/Unlock) is no waiting
    assert profile.family("internal/sync.(*Mutex).lockSlow") == "lock"
    assert profile.family("runtime.procyieldAsm") == "lock"
    assert profile.family("internal/sync.(*Mutex).Lock") is None
    assert profile.family("sync.(*RWMutex).RUnlock") is None
    assert profile.family("native_queued_spin_lock_slowpath") == "lock"
    assert profile.family("runtime.gcBgMarkWorker") == "gc"
    assert profile.family("syscall.Syscall6") == "syscall"
    assert profile.family("main.compute") is None


def test_skipped_without_a_cpu_profile() -> None:
    out = profile.hotspots(ds(cap("pprof", FIX / "pprof" / "go1.26-heap.pb.gz")), None, TH)
    assert isinstance(out, Skipped) and "inuse_space_bytes" in out.reason
    assert isinstance(profile.hotspots(ds(), None, TH), Skipped)

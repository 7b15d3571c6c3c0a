"""io.top-writer and collector.overhead on real iotop/pidstat/top captures, firing and not firing."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from perfkit.analyzers import io, overhead
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Skipped
from perfkit.parsers import iotop, pidstat, psutil, top

FIX = Path(__file__).parent / "fixtures"
TH = default_thresholds()
SEED000 = FIX / "iotop" / "seed000-iotop-botq-actual.txt"
OLTP = FIX / "pidstat" / "sysstat-12.6-u-d-w-iso-oltp.txt"

# An idle pidstat interval as sysstat 12.6 prints it: empty kB_rd/s table (header, blank line).
IDLE_PIDSTAT = """Linux 6.18.44-fc-v657 (vm) \t2026-11-23 \t_x86_64_\t(2 CPU)

06:56:35      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command
06:56:36        0         1    0.00    0.99    0.00    0.00    0.99     0  process_api

06:56:35      UID       PID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command

06:56:35      UID       PID   cswch/s nvcswch/s  Command
06:56:36        0        14     37.62      0.00  ksoftirqd/0
"""


def cap(kind: str, path: Path | str, host: str | None = "db1") -> Capture:
    mod = {"iotop": iotop, "pidstat": pidstat, "top": top, "psutil": psutil}[kind]
    return Capture(str(path), kind, host, None, mod.parse(path, host=host))


def ds(*caps: Capture, manifest: dict | None = None) -> Dataset:
    return Dataset("x", manifest, list(caps))


# ---------------------------------------------------------------- io.top-writer


def test_seed000_capture_tool_is_the_top_writer() -> None:
    [f] = io.top_writer(ds(cap("iotop", SEED000)), None, TH)
    assert f.severity == "warning" and f.hosts == ["db1"]
    ev = f.evidence
    # perf record rows: 2.05 M/s + 2.05 M/s + 174.31 K/s = 2099.2 + 2099.2 + 174.31 KiB/s
    assert ev["writer1"] == "perf" and ev["writer1_category"] == "capture"
    assert ev["writer1_write_kb_s_mean"] == pytest.approx(4372.71)
    assert ev["writer1_write_kb_s_median"] == pytest.approx(4372.71)  # one iteration
    # share of iotop's `Total DISK WRITE : 4.81 M/s` = 4925.44 KiB/s
    assert ev["total_write_kb_s_mean"] == pytest.approx(4925.44)
    assert ev["writer1_write_share_pct"] == pytest.approx(4372.71 / 4925.44 * 100)
    # tikv-server threads raftstore-4-0, raftstore-4-1, apply-1: 200.83 + 219.78 + 49.26
    assert ev["writer2"] == "tikv-server" and ev["writer2_category"] == "database"
    assert ev["writer2_write_kb_s_mean"] == pytest.approx(469.87)
    assert ev["device_write_kb_s_mean"] == pytest.approx(1811.28)  # `Actual DISK WRITE: 1811.28 K/s`
    # jbd2 writes 0 B/s itself but waits on the disk 42.33 % of the time: the journal commits
    assert ev["io_wait_top_task"] == "418 jbd2/sda2-8" and ev["io_wait_top_pct_mean"] == 42.33
    assert "jbd2/sda2-8" in f.summary


def test_iotops_first_iteration_is_left_out_where_the_capture_begins_with_it() -> None:
    """iotop's first iteration spans the moment since iotop started (dd, writing 10 MB/s throughout,
    is absent from it); its header under the first Total lines says the capture begins there. The
    rates are those of the iterations after it, as printed."""
    path = FIX / "iotop" / "iotop-0.6-botqk-from-start.txt"
    capture = cap("iotop", path, host="localhost")
    assert capture.extras.from_start and not cap("iotop", SEED000).extras.from_start
    [f] = io.top_writer(ds(capture), None, TH)
    ev = f.evidence
    printed = re.findall(r" ([\d.]+) K/s \?unavailable\?  dd of=", path.read_text())
    later = [float(x) for x in printed]  # one a second from the second iteration: none in the first
    assert ev["writer1"] == "dd" and ev["intervals"] == len(later) == 4
    assert ev["writer1_write_kb_s_mean"] == pytest.approx(sum(later) / 4)


def test_database_as_top_writer_is_info() -> None:
    [f] = io.top_writer(ds(cap("pidstat", OLTP)), None, TH)
    assert f.severity == "info" and f.evidence["writer1"] == "mariadbd"
    # mariadbd kB_wr/s over the three intervals: 4265.35, 4264.00, 4196.00 (the only writer)
    assert f.evidence["writer1_write_kb_s_mean"] == pytest.approx((4265.35 + 4264.00 + 4196.00) / 3)
    assert f.evidence["writer1_write_kb_s_median"] == pytest.approx(4264.00)
    assert f.evidence["writer1_write_share_pct"] == pytest.approx(100.0)
    # reads: kworker 328.00 in interval 2 only (0 in the others), pidstat 4.00
    assert f.evidence["reader1"] == "kworker"
    assert f.evidence["reader1_read_kb_s_mean"] == pytest.approx(328.0 / 3)
    assert f.window == ("2026-11-23T06:56:36+00:00", "2026-11-23T06:56:38+00:00")


def test_idle_io_fires_nothing() -> None:
    assert io.top_writer(ds(cap("pidstat", IDLE_PIDSTAT)), None, TH) == []


def test_top_writer_share_threshold_override() -> None:
    th = copy.deepcopy(TH)
    th["io.top-writer"]["min_share_pct"] = 95  # perf's 88.8 % is no longer enough for a warning
    [f] = io.top_writer(ds(cap("iotop", SEED000)), None, th)
    assert f.severity == "info"


def test_top_writer_skipped_without_iotop_or_pidstat() -> None:
    out = io.top_writer(ds(cap("top", FIX / "top" / "procps-4.0.2-H-w512.txt")), None, TH)
    assert isinstance(out, Skipped) and "iotop" in out.reason


def test_program_names() -> None:
    assert io.program_name("[jbd2/sda2-8]") == "jbd2/sda2-8"
    assert io.program_name("[kworker/u8:2-flush-8:0]") == "kworker"
    assert io.program_name("python3 /usr/sbin/iotop -botqk -d 1") == "iotop"
    assert io.program_name("bin/tikv-server --addr 0.0.0.0:20160 [raftstore-4-0]") == "tikv-server"
    assert io.category("jbd2/sda2-8") == "journaling" and io.category("perf") == "capture"
    # `python -m perfkit` (a forked sampler keeps its parent's command line): perfkit's own, not "python3"
    assert io.program_name("python3 -m perfkit run sysbench --threads=1,4,16 -o out") == "perfkit"
    assert io.program_name("/usr/bin/python3.11 -u -m perfkit collect --local") == "perfkit"
    assert io.category(io.program_name("python3 -m perfkit run sysbench")) == "capture"
    assert io.program_name("python3 -c import sys; print(1)") == "python3"
    assert io.program_name("python3 -m") == "python3"


# ---------------------------------------------------------------- collector.overhead


def test_seed000_perf_record_writing_is_overhead() -> None:
    [f] = overhead.overhead(ds(cap("iotop", SEED000)), None, TH)
    assert f.severity == "warning"
    # same perf rows as above; reads 72.00 + 34.10 + 11.37 KiB/s
    assert f.evidence["perf_write_kb_s_mean"] == pytest.approx(4372.71)
    assert f.evidence["perf_read_kb_s_mean"] == pytest.approx(117.47)
    assert f.evidence["tools_write_share_pct"] == pytest.approx(4372.71 / 4925.44 * 100)
    assert any("dwarf" in s for s in f.next_steps)


def test_light_captures_are_not_overhead() -> None:
    # pidstat lists itself at 0.99-1.00 %CPU and 4 kB/s read; top -H lists top at 0.0 %CPU.
    assert overhead.overhead(ds(cap("pidstat", OLTP)), None, TH) == []
    assert overhead.overhead(ds(cap("top", FIX / "top" / "procps-4.0.2-H-w512.txt")), None, TH) == []


def test_perfkit_s_main_thread_row_under_top_h_is_counted_once() -> None:
    # top -H of the pinned sysbench run (procps-ng 4.0.2, no pidstat read): perfkit's rows make 14.9,
    # 13.9, 5.0, 8.9, 7.9 % a screen (mean 10.12), its main thread's (TID 29689: 6.9, 7.9, 3.0, 5.9,
    # 6.9 %) the whole process's; what its 5-7 threads leave of it, added to theirs: 8.0, 7.9, 3.0,
    # 5.9, 6.9 % (mean 6.34)
    th = copy.deepcopy(TH)
    th["collector.overhead"]["max_tool_cpu_pct"] = 5
    [f] = overhead.overhead(ds(cap("top", FIX / "client" / "pinned-t0008" / "top.out")), None, th)
    assert f.evidence["perfkit_cpu_pct_mean"] == pytest.approx(6.34)


def test_perfkit_own_cpu_from_the_manifest() -> None:
    manifest = {"hosts": [{"host": "db1", "perfkit_cpu_pct": 23.5}], "controller": {"cpu_s": 41.2}}
    [f] = overhead.overhead(ds(cap("pidstat", OLTP), manifest=manifest), None, TH)
    assert f.evidence["perfkit_cpu_pct"] == 23.5 and f.evidence["controller_cpu_s"] == 41.2


def test_overhead_threshold_override() -> None:
    th = copy.deepcopy(TH)
    th["collector.overhead"]["max_tool_write_kb_s"] = 5000
    assert overhead.overhead(ds(cap("iotop", SEED000)), None, th) == []


def test_overhead_skipped_without_captures() -> None:
    out = overhead.overhead(ds(), None, TH)
    assert isinstance(out, Skipped) and "psutil" in out.reason

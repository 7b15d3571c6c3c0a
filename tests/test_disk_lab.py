"""disk.serial-small-io and disk.saturated on IO made for real, each the other's control.

The device is a loop device over a sparse file in the test's temporary directory, attached with
`losetup --direct-io=on` (its IOs reach the file with O_DIRECT, so it has a latency and a queue of
its own, and iostat lists it as a device) and always detached however the test ends; nothing else of
the machine is written. fio writes 4 KiB blocks at random offsets with O_DIRECT through libaio over the
whole window of `perfkit collect --local --profile minimal`:

- iodepth 1: one IO in flight at a time, what a log fsync'ed per commit does. Seen on the lab VM:
  loop0 86-88 % busy, aqu-sz 0.86-0.90, 4 kB requests, ~22,000 IOPS at 0.035 ms each;
- iodepth 16: the same IO sixteen at a time: aqu-sz 11-15, 95-100 % busy, await 0.2 ms against
  0.013 ms of service per IO.

Each run's evidence is checked against the archive's own iostat text, read here without perfkit.

io.top-writer, with the default profile (iotop): a program that lives through the window copies
about 10 MB/s of zeros from a pipe into a file in the test's temporary directory (a copy that ends
between two iotop samples is never seen by iotop). `cp` is a backup tool: the rule warns; the same
bytes written by `dd` (no category: what an application writes) are only named (info).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from perfkit.findings import Finding
from perfkit.pipeline import analyze_path

from .conftest import collect_local

pytestmark = pytest.mark.lab

WINDOW_S = 6


@contextlib.contextmanager
def loop_device(tmp: Path) -> Iterator[str]:
    """A 2 GiB sparse file attached as a loop device with direct IO; its name (`loop3`)."""
    if os.geteuid() != 0:
        pytest.skip("losetup needs root")
    for tool in ("losetup", "fio", "iostat"):
        assert shutil.which(tool), f"{tool} not installed (scripts/lab.sh installs it)"
    backing = tmp / "disk.img"
    with open(backing, "wb") as fh:
        fh.truncate(2 << 30)
    dev = subprocess.run(
        ["losetup", "--find", "--show", "--direct-io=on", str(backing)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    try:
        yield Path(dev).name
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)
        # still open (a writer not yet reaped), the kernel detaches it when the last user closes it
        for _ in range(50):
            attached = subprocess.run(["losetup", "-j", backing], capture_output=True, text=True, timeout=30)
            if not attached.stdout.strip():
                break
            time.sleep(0.2)
        assert not attached.stdout.strip(), f"loop device left attached: {attached.stdout}"


def collect_under_io(tmp: Path, dev: str, iodepth: int) -> Path:
    """`perfkit collect --local` while fio writes to /dev/`dev` `iodepth` IOs at a time, from before
    the window opens to after it closes; the archive directory."""
    log = tmp / f"fio{iodepth}.log"
    with open(log, "w") as err:
        fio = subprocess.Popen(
            ["fio", "--name=perfkit-test", f"--filename=/dev/{dev}", "--rw=randwrite", "--bs=4k"]
            + [f"--iodepth={iodepth}", "--ioengine=libaio", "--direct=1", "--time_based"]
            + [f"--runtime={WINDOW_S + 60}", "--output=/dev/null"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        out = collect_local(tmp / f"iodepth{iodepth}", WINDOW_S, "minimal")
        assert fio.poll() is None, f"fio ended before the window did: {log.read_text()}"
        return out
    finally:
        _kill_tree(fio.pid)
        fio.wait(timeout=30)


def _kill_tree(pid: int) -> None:
    """The process and its children: fio runs each job in a process of its own session."""
    with contextlib.suppress(psutil.NoSuchProcess):
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        psutil.wait_procs(procs, timeout=30)


def raw_rows(archive: Path, dev: str) -> list[dict[str, float]]:
    """The device's rows of the archive's iostat.out by the column names of the header above them
    (the first report, since boot, left out), read here without perfkit."""
    [path] = archive.glob("hosts/*/iostat.out")
    rows, header, reports = [], None, 0
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] == ["Device"]:
            header, reports = words, reports + 1
        elif header and words[:1] == [dev] and reports > 1:
            rows.append(dict(zip(header[1:], map(float, words[1:]), strict=True)))
    assert len(rows) >= WINDOW_S - 1, f"{dev}: {len(rows)} iostat rows"
    return rows


def findings(archive: Path, rule: str, dev: str) -> list:
    return [f for f in analyze_path(archive).findings if f.rule == rule and f.evidence["device"] == dev]


def test_serial_small_io_on_a_queue_of_one(tmp_path: Path) -> None:
    with loop_device(tmp_path) as dev:
        archive = collect_under_io(tmp_path, dev, iodepth=1)
    rows = raw_rows(archive, dev)
    [f] = findings(archive, "disk.serial-small-io", dev)
    ev = f.evidence
    busy = [r for r in rows if r["%util"] >= 80]
    assert ev["busy_samples"] == len(busy) and ev["all_samples"] == len(rows)
    assert ev["samples"] >= 3 and ev["request_kb_median"] == 4.0  # fio's block, as iostat prints it
    assert 0.5 <= ev["aqu_sz_median"] <= 1.5 and ev["util_pct_median"] >= 80
    assert ev["w_s_median"] > 1000 and ev["flushes_per_s_median"] == 0  # O_DIRECT: no flush requests
    if ev["samples"] == len(busy):  # the medians are then those of the raw busy rows
        assert ev["aqu_sz_median"] == statistics.median(r["aqu-sz"] for r in busy)
        assert ev["w_s_median"] == statistics.median(r["w/s"] for r in busy)
    assert ev["serial_iops_ceiling"] == pytest.approx(1000 / ev["await_ms_median"])
    assert f"{dev}: one small synchronous IO at a time" in f.title
    assert not findings(archive, "disk.saturated", dev)  # the control of the test below


def test_saturated_on_sixteen_at_once(tmp_path: Path) -> None:
    with loop_device(tmp_path) as dev:
        archive = collect_under_io(tmp_path, dev, iodepth=16)
    rows = raw_rows(archive, dev)
    [f] = findings(archive, "disk.saturated", dev)
    ev = f.evidence
    assert ev["all_samples"] == len(rows) and ev["samples"] >= 0.5 * len(rows)
    assert ev["aqu_sz_median"] >= 4 and ev["util_pct_median"] >= 90 and ev["request_kb_median"] == 4.0
    # IOs wait behind each other: await several times the device's time per IO (%util / IOPS)
    assert ev["await_ms_median"] >= 3 * ev["service_ms_median"] > 0
    if ev["samples"] == len(rows):
        assert ev["aqu_sz_median"] == statistics.median(r["aqu-sz"] for r in rows)
    assert f"{dev} is saturated" in f.title and " 0.0 ms service" not in f.title
    assert not findings(archive, "disk.serial-small-io", dev)  # the control of the test above


def collect_under_copy(tmp: Path, writer: str) -> tuple[Path, int]:
    """`perfkit collect --local` (default profile) while `writer` (`cp` or `dd`) copies 1 MiB of zeros
    every 0.1 s from a pipe into a file; the archive and the bytes the file got."""
    dst = tmp / "copy.img"
    sink = {"cp": f"cp /dev/stdin {dst}", "dd": f"dd of={dst} bs=64k status=none"}[writer]
    feeder = subprocess.Popen(
        ["sh", "-c", f"while :; do head -c 1048576 /dev/zero; sleep 0.1; done | {sink}"],
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(0.5)  # the writer has started and written before the window opens
        out = collect_local(tmp / writer, WINDOW_S)
        assert feeder.poll() is None, "the copy ended before the window did"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(feeder.pid, 9)
        feeder.wait(timeout=30)
    size = dst.stat().st_size
    dst.unlink()
    return out, size


def _top_writer(archive: Path, size: int, writer: str) -> Finding:
    """The io.top-writer finding, its top writer `writer` and its rate checked against the file's size."""
    [f] = [f for f in analyze_path(archive).findings if f.rule == "io.top-writer"]
    ev = f.evidence
    assert ev["writer1"] == writer and ev["writer1_write_share_pct"] >= 90
    # what iotop saw the writer write over the window is part of what the file got (the writer ran
    # before and after it: 0.5 s before, the archive's writing after), most of it
    seen = ev["writer1_write_kb_s_mean"] * ev["intervals"] * 1024
    assert 0.5 * size <= seen <= 1.1 * size, (seen, size)
    assert ev["writer1_write_kb_s_mean"] >= 1024  # the rate a warning needs
    return f


def test_top_writer_warns_on_a_backup_tool(tmp_path: Path) -> None:
    archive, size = collect_under_copy(tmp_path, "cp")
    f = _top_writer(archive, size, "cp")
    assert f.severity == "warning" and f.evidence["writer1_category"] == "backup"
    assert f.title.startswith("Top writer: cp (backup)")


def test_top_writer_names_an_application_without_warning(tmp_path: Path) -> None:
    archive, size = collect_under_copy(tmp_path, "dd")
    f = _top_writer(archive, size, "dd")
    assert f.severity == "info" and f.evidence["writer1_category"] == "other"

"""The cgroup capture on this machine for real: a throwaway process in v1 cgroups with a CPU quota and
a write-IOPS limit (scripts/scenarios/cgroups.py makes and always removes them), through the capture
command and through `perfkit collect --local --watch`; a process in a v2 cgroup.

`python3 -m tests.test_cgroup_lab` rewrites the real fixtures (tests/fixtures/cgroup/README.md).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from perfkit.cli import main
from perfkit.collectors import captures
from perfkit.parsers import cgroup
from perfkit.pipeline import analyze_path
from scripts.scenarios import cgroups

from .conftest import FIXTURES, need_tool

pytestmark = pytest.mark.lab

NAME = "pkcgtest"  # the throwaway process's comm, as `--watch` names it
# Two processes named NAME in one group: a busy loop (throttled by the CPU quota) and a writer of 4 kB
# O_DIRECT blocks (no page cache: v1 blkio throttles only IO the process submits itself) on the disk
# the blkio limit names, as fast as the write-IOPS limit lets it.
BURNER = """
import mmap, os, sys
with open('/proc/self/comm', 'w') as f:
    f.write(sys.argv[1])
if sys.argv[3] == 'cpu':
    while True:
        pass
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
buf = mmap.mmap(-1, 4096)
n = 0
while True:
    os.pwrite(fd, buf, (n % 256) * 4096)
    n += 1
"""
SLEEPER = "import sys, time\nopen('/proc/self/comm', 'w').write(sys.argv[1])\ntime.sleep(60)\n"
V2_NAME = "pkcgv2"
SCRATCH = Path("/var/tmp")  # on the root disk (vda here); /tmp may be a tmpfs


def _comm(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip()
    return ""


@contextlib.contextmanager
def throttled(
    cores: float = 0.2, write_iops: int = 20
) -> Iterator[tuple[list[subprocess.Popen], tuple[int, int]]]:
    """The burner and the writer named NAME in v1 groups `cpu,cpuacct` (quota `cores`) and `blkio`
    (`write_iops` on the scratch disk); killed, moved back and the groups removed however the body
    ends."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make cgroups")
    layout = cgroups.detect()
    if not {"cpu", "cpuacct", "blkio"} <= set(layout.v1):
        pytest.skip("no cgroup v1 cpu, cpuacct and blkio here")
    device = cgroups.block_device(SCRATCH)
    group = cgroups.Group(f"{cgroups.PREFIX}cgtest{os.getpid()}-burn", ("cpu", "io"), layout, 1)
    data = SCRATCH / f"{cgroups.PREFIX}cgtest{os.getpid()}.bin"
    procs = [subprocess.Popen([sys.executable, "-c", BURNER, NAME, str(data), m]) for m in ("cpu", "io")]
    try:
        group.create()
        group.set_cpu_quota(cores)
        group.set_write_iops(device, write_iops)
        for proc in procs:
            deadline = time.monotonic() + 10
            while _comm(proc.pid) != NAME and time.monotonic() < deadline:
                time.sleep(0.02)
            assert _comm(proc.pid) == NAME, "the throwaway process did not name itself"
            group.add_process(proc.pid)
        yield procs, device
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        problems = group.release()
        data.unlink(missing_ok=True)
        assert problems == [], problems


@contextlib.contextmanager
def in_v2_child() -> Iterator[subprocess.Popen]:
    """A sleeping process named V2_NAME in a new child of the v2 hierarchy (no controllers can be
    enabled here: they are bound to v1); moved back to the root and the child removed at the end."""
    layout = cgroups.detect()
    if os.geteuid() != 0 or layout.v2 is None:
        pytest.skip("needs root and a cgroup2 mount")
    child = layout.v2 / f"{cgroups.PREFIX}cgtest{os.getpid()}-v2"
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER, V2_NAME])
    try:
        deadline = time.monotonic() + 10
        while _comm(proc.pid) != V2_NAME and time.monotonic() < deadline:
            time.sleep(0.02)
        child.mkdir()
        (child / "cgroup.procs").write_text(str(proc.pid))
        yield proc
    finally:
        proc.kill()
        proc.wait()
        problems = cgroups.remove_leftover(child, layout.v2, 2) if child.exists() else []
        assert problems == [], problems


def capture(watch: tuple[str, ...] = ()) -> str:
    """The `cgroup-start` capture's command as perfkit runs it (dash, C locale), its stdout."""
    spec = next(s for s in captures.DEFAULT if s.id == "cgroup-start")
    return subprocess.run(
        ["sh", "-c", spec.render(interval=1, window=1, workdir="/tmp", watch=watch)],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
    ).stdout


def one(df: pd.DataFrame, **match: object) -> pd.Series:
    mask = pd.Series(True, index=df.index)
    for col, v in match.items():
        mask &= df[col] == v
    found = df[mask]
    assert len(found) == 1, (match, found)
    return found.iloc[0]


def test_capture_of_a_throttled_process_parses_to_its_limits_and_counters() -> None:
    need_tool("awk")
    with throttled(cores=0.2, write_iops=20) as (procs, device):
        time.sleep(1)
        start = cgroup.parse(capture((NAME,)))
        time.sleep(2)
        end = cgroup.parse(capture((NAME,)))
    dev = f"{device[0]}:{device[1]}"
    mine = [df[df["pid"] == procs[0].pid] for df in (start, end)]
    # the writer shares the burner's cgroups: the same rows under its pid, each file read once
    writer = start[start["pid"] == procs[1].pid]
    cols = ["cgroup", "key", "device", "value", "unlimited"]
    assert writer[cols].reset_index(drop=True).equals(mine[0][cols].reset_index(drop=True))
    for df in mine:
        assert set(df["process"]) == {NAME}
        assert set(df[df["version"] == 2]["key"]) <= {"usage_usec", "user_usec", "system_usec", "nice_usec"}
        assert one(df, key="quota_usec")["value"] / one(df, key="period_usec")["value"] == 0.2
        assert one(df, key="write_max_iops", device=dev)["value"] == 20
    d = {
        k: one(mine[1], key=k)["value"] - one(mine[0], key=k)["value"]
        for k in ("nr_periods", "nr_throttled", "throttled_usec")
    }
    assert d["nr_throttled"] > 0 and d["nr_periods"] >= d["nr_throttled"]
    assert d["nr_throttled"] / d["nr_periods"] > 0.5  # a busy loop at 0.2 core: throttled most periods
    assert d["throttled_usec"] > 0
    wios = [one(df, key="write_ios", device=dev)["value"] for df in mine]
    seconds = (mine[1]["timestamp"].iloc[0] - mine[0]["timestamp"].iloc[0]).total_seconds()
    assert seconds >= 1 and 20 * 0.5 <= (wios[1] - wios[0]) / seconds <= 20 * 1.5  # at its limit
    # the cgroup is read once however many processes share it, and the shared lab MariaDB (watched
    # by default) is in the root groups, unlimited
    text = capture((NAME,))  # after release: the process is gone
    assert f"== pid {procs[0].pid} " not in text
    db = start[start["process"] == "mariadbd"]
    if not db.empty:
        assert db[db["key"] == "quota_usec"]["unlimited"].all()


def test_collect_local_with_watch_captures_quota_and_throttling(tmp_path: Path) -> None:
    need_tool("awk")
    out = tmp_path / "run.tar.gz"
    with throttled(cores=0.25, write_iops=30) as (procs, _device):
        res = CliRunner().invoke(
            main, ["collect", "--local", "-d", "3", "--profile", "minimal", "--watch", NAME, "-o", str(out)]
        )
    assert res.exit_code == 0, res.output
    result = analyze_path(out)
    snaps = {Path(c.path).stem: c.frame for c in result.dataset.captures if c.kind == "cgroup"}
    assert set(snaps) == {"cgroup-start", "cgroup-end"}
    start, end = (snaps[k][snaps[k]["pid"] == procs[0].pid] for k in ("cgroup-start", "cgroup-end"))
    assert one(start, key="quota_usec")["value"] / one(start, key="period_usec")["value"] == 0.25
    assert not one(start, key="quota_usec")["unlimited"]
    assert one(end, key="nr_throttled")["value"] > one(start, key="nr_throttled")["value"]
    assert one(end, key="write_max_iops")["value"] == 30
    recs = {r["id"]: r for r in result.dataset.manifest["captures"]}
    assert recs["cgroup-start"]["status"] == recs["cgroup-end"]["status"] == "ok"


def test_v2_child_without_controllers() -> None:
    need_tool("awk")
    with in_v2_child() as proc:
        text = capture((V2_NAME,))
    df = cgroup.parse(text)
    mine = df[(df["pid"] == proc.pid) & (df["version"] == 2)]
    assert set(mine["cgroup"]) == {f"/{cgroups.PREFIX}cgtest{os.getpid()}-v2"}
    assert set(mine["key"]) >= {"usage_usec", "user_usec", "system_usec"}  # cpu.stat is always there
    assert mine[mine["key"] == "quota_usec"].empty  # no cpu controller in v2 here: said, not an error
    assert any(
        n.endswith("missing cpu.max (controller cpu not enabled for this cgroup)") for n in df.attrs["notes"]
    )


def write_fixtures() -> None:
    """Rewrite the real fixtures (this machine, root): see tests/fixtures/cgroup/README.md."""
    outdir = FIXTURES / "cgroup"
    (outdir / "v1-lab-mariadb-unconstrained.txt").write_text(capture())
    with throttled(cores=0.2, write_iops=20):
        time.sleep(1)
        (outdir / "v1-quota-0.2-write-iops-20-start.txt").write_text(capture((NAME,)))
        time.sleep(3)
        (outdir / "v1-quota-0.2-write-iops-20-end.txt").write_text(capture((NAME,)))
    with in_v2_child():
        (outdir / "v2-child-no-controllers.txt").write_text(capture((V2_NAME,)))


if __name__ == "__main__":
    write_fixtures()

"""mem.swapping on memory pressure made for real, against the same process without it.

The lab VM has no swap and 24 GiB of RAM. The test adds a 256 MiB swap file in its temporary
directory (`mkswap`, `swapon`) and a memory cgroup limited to 64 MiB (scripts/scenarios/cgroups.py,
v1 here), and a Python process that joins the group before it allocates 160 MiB and then writes
one byte a page over it, again and again: the kernel keeps 64 MiB of it in RAM and swaps the rest
out and back in. `perfkit collect --local --profile minimal -d 6` runs meanwhile. On the lab VM:
si and so about 270 MB/s in every sample, 160 MiB in swap, 22 GiB free. The control is the same
process outside the group: nothing swapped here, a few pages once on CI, under the rule's bar. The
swap file and the group are removed however the test ends (`swapoff` first), and the process killed.

The evidence is checked against the archive's own vmstat text, read here without perfkit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.config import default_thresholds
from perfkit.pipeline import analyze_path
from scripts.scenarios.cgroups import PREFIX, Group, detect

from .conftest import collect_local, python_process

pytestmark = pytest.mark.lab

WINDOW_S = 6
LIMIT_MB, HOG_MB, SWAP_MB = 64, 160, 256
# joins the group named by its argument (a tasks / cgroup.procs file) before it allocates: a page is
# charged to the group of the process that first touched it
HOG = """
import os, sys
if sys.argv[2]:
    with open(sys.argv[2], "w") as f:
        f.write(str(os.getpid()))
buf = bytearray(int(sys.argv[1]) << 20)
print("ready", flush=True)
while True:
    for i in range(0, len(buf), 4096):
        buf[i] = (buf[i] + 1) & 255
"""


def _need() -> None:
    if os.geteuid() != 0:
        pytest.skip("swapon and cgroups need root")
    for tool in ("mkswap", "swapon", "swapoff"):
        assert shutil.which(tool), f"{tool} not installed (util-linux)"


@contextlib.contextmanager
def swap_file(tmp: Path) -> Iterator[Path]:
    """A `SWAP_MB` swap file in use, switched off and removed when the block ends."""
    path = tmp / "swapfile"
    with open(path, "wb") as fh:  # written out: swapon refuses a file with holes
        for _ in range(SWAP_MB):
            fh.write(bytes(1 << 20))
    path.chmod(0o600)
    subprocess.run(["mkswap", str(path)], check=True, capture_output=True, timeout=30)
    subprocess.run(["swapon", str(path)], check=True, capture_output=True, timeout=30)
    try:
        yield path
    finally:
        subprocess.run(["swapoff", str(path)], capture_output=True, timeout=120)
        assert str(path) not in Path("/proc/swaps").read_text(), "swap file left on"
        path.unlink()


@contextlib.contextmanager
def hog(group: Group | None) -> Iterator[int]:
    """The process writing over `HOG_MB` MiB, in `group` when given; killed when the block ends."""
    join = str(group.tasks_file()[0]) if group is not None else ""
    with python_process(HOG, str(HOG_MB), join) as pid:
        yield pid


def raw_vmstat(archive: Path) -> list[dict[str, float]]:
    """The archive's vmstat rows by column name (the first, since boot, left out), without perfkit."""
    [path] = archive.glob("hosts/*/vmstat.out")
    header, rows = None, []
    for line in path.read_text().splitlines():
        words = line.split()
        if "si" in words and "so" in words:
            header = words
        elif header and words and words[0].isdigit():
            rows.append({k: float(v) for k, v in zip(header, words, strict=False) if k not in ("UTC",)})
    return rows[1:]


def test_a_process_over_its_memory_limit_swaps(tmp_path: Path) -> None:
    _need()
    group = Group(PREFIX + f"{os.getpid()}-hog", ("memory",), detect())
    with swap_file(tmp_path):
        try:
            group.create()
            group.set_memory_limit(LIMIT_MB << 20)
            with hog(group):
                archive = collect_local(tmp_path / "limited", WINDOW_S, "minimal")
        finally:
            assert group.release() == []
    [f] = [f for f in analyze_path(archive).findings if f.rule == "mem.swapping"]
    ev, rows = f.evidence, raw_vmstat(archive)
    assert f.severity == "critical" and ev["swapping_samples"] == ev["samples"] == len(rows)
    assert ev["si_kb_s_median"] == statistics.median(r["si"] for r in rows) > 1024
    assert ev["so_kb_s_max"] == max(r["so"] for r in rows) > 1024
    # what does not fit in the limit is in swap, and the host had GiBs free: the group's limit, not RAM
    assert (HOG_MB - LIMIT_MB) << 10 <= ev["swpd_kb_max"] <= SWAP_MB << 10
    assert ev["free_exceeds_swap"] and "memory limit on the swapping processes' cgroup" in f.summary


def test_the_same_process_without_a_limit_does_not_swap(tmp_path: Path) -> None:
    _need()
    with swap_file(tmp_path), hog(None):
        archive = collect_local(tmp_path / "free", WINDOW_S, "minimal")
    assert "mem.swapping" not in {f.rule for f in analyze_path(archive).findings}
    # with swap on, the kernel may page out a few idle pages of anything, limit or none (CI saw it
    # once): the control is silent because the samples stay under the rule's bar, read from the text
    bar, rows = default_thresholds()["mem.swapping"], raw_vmstat(archive)
    swapping = [r for r in rows if max(r["si"], r["so"]) >= bar["min_kb_s"]]
    assert rows and (len(swapping) < bar["min_samples"] or len(swapping) < bar["min_share"] * len(rows)), rows
    # and far from the limited run's hundreds of MB/s: a few pages at most
    assert max(max(r["si"], r["so"]) for r in rows) < 1024, rows

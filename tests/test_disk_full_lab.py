"""disk.full on a real MariaDB whose data dir's filesystem is filled, against the same one with room.

A throwaway mariadbd (scripts/scenarios/instance.py) keeps its data dir on an ext4 filesystem of its
own: an 8 GiB sparse file mounted through a loop device in a `perfkit-test-diskfull-*` dir under /var/tmp
(ext4 without its inode tables zeroed, so it costs a few MB of the host's disk). `perfkit collect
--local -d 2` runs twice as a user runs it: first with the filesystem as made (7.5 GiB free, the
control), then after `fallocate` took all but 32 MiB of what the mysql user may write (ext4 keeps
its 5 % root reserve). The instance is stopped, the filesystem unmounted and every file removed
however the test ends.

The evidence is checked against the archive's own `df -P -k` text, read here without perfkit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.config import default_thresholds
from perfkit.pipeline import analyze_path
from scripts.scenarios.instance import BASE_DIR, Instance, mariadbd_pids

from .conftest import collect_local

pytestmark = pytest.mark.lab

FS_GIB, KEEP_MB = 8, 32


@contextlib.contextmanager
def filesystem(top: Path) -> Iterator[Path]:
    """An `FS_GIB` GiB ext4 filesystem mounted at `top/fs`; unmounted and its image removed after."""
    image, mount = top / "fs.img", top / "fs"
    with open(image, "wb") as fh:
        fh.truncate(FS_GIB << 30)
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-N", "8192", "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    mount.mkdir()
    subprocess.run(
        ["mount", "-o", "loop,noinit_itable", str(image), str(mount)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        yield mount
    finally:
        # the loop device goes with the mount (mount -o loop sets autoclear)
        res = subprocess.run(["umount", str(mount)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, f"{mount} left mounted: {res.stderr}"
        image.unlink()


@contextlib.contextmanager
def mariadb_on_own_fs() -> Iterator[tuple[Instance, Path]]:
    """A started throwaway mariadbd whose data dir is on a filesystem of its own: it and the mount."""
    if os.geteuid() != 0:
        pytest.skip("mount and mariadbd --user=mysql need root")
    for tool in ("mkfs.ext4", "mount", "umount", "fallocate", "mariadbd", "mariadb-install-db"):
        assert shutil.which(tool), f"{tool} not installed (scripts/lab.sh installs it)"
    # under /var/tmp, not pytest's 0700 tmp: mysql must reach its files. Not with the scenarios'
    # prefix: their `cleanup` would remove a crashed run's dir with the filesystem still mounted in it
    top = Path(tempfile.mkdtemp(prefix="perfkit-test-diskfull-", dir=BASE_DIR))
    try:
        top.chmod(0o755)
        (top / "inst").mkdir()
        with filesystem(top) as mount:
            inst = Instance(top / "inst", datadir=mount / "data")
            try:
                inst.start()
                assert mariadbd_pids(inst.base, inst.datadir) == [inst.pid]  # what the check after sees
                yield inst, mount
            finally:
                assert inst.stop() == [] and mariadbd_pids(inst.base, inst.datadir) == []
    finally:
        shutil.rmtree(top, ignore_errors=True)


def raw_df(archive: Path, mount: Path) -> dict[str, int]:
    """The archive's `df -P -k` line of `mount`, by column, without perfkit."""
    [path] = archive.glob("hosts/*/df.out")
    for line in path.read_text().splitlines():
        words = line.split()
        if words and words[-1] == str(mount):
            size, used, avail, cap = words[-5:-1]
            return {
                "size_kb": int(size),
                "used_kb": int(used),
                "avail_kb": int(avail),
                "capacity_pct": int(cap[:-1]),
            }
    raise AssertionError(f"{mount} not in {path}")


def disk_full(archive: Path, mount: Path) -> list:
    return [
        f
        for f in analyze_path(archive).findings
        if f.rule == "disk.full" and f.evidence["mount"] == str(mount)
    ]


def test_a_data_dir_on_a_full_filesystem_is_critical_and_the_same_with_room_is_not(tmp_path: Path) -> None:
    bar = default_thresholds()["disk.full"]
    with mariadb_on_own_fs() as (inst, mount):
        roomy = collect_local(tmp_path / "roomy", 2)
        st = os.statvfs(mount)
        subprocess.run(
            ["fallocate", "-l", str(st.f_bavail * st.f_frsize - (KEEP_MB << 20)), str(mount / "filler")],
            check=True,
            timeout=120,
        )
        inst.sql("CREATE DATABASE still_writable")  # a full disk, not a dead server
        full = collect_local(tmp_path / "full", 2)

    # the control: the same data dir with 7.5 GiB free, under both of the rule's bars: silent
    df = raw_df(roomy, mount)
    assert (
        df["capacity_pct"] < bar["data_dir_capacity_pct"]
        and df["avail_kb"] > bar["data_dir_min_free_gib"] << 20
    )
    assert disk_full(roomy, mount) == []

    [f] = disk_full(full, mount)
    ev, df = f.evidence, raw_df(full, mount)
    # df rounds Capacity up: 32 MiB left of 7.5 GiB is 100 %, past the critical bar (writes stop)
    assert (
        ev["capacity_pct"] == df["capacity_pct"] >= bar["critical_capacity_pct"] and f.severity == "critical"
    )
    assert (
        ev["free_gib"] == df["avail_kb"] / 1024**2 and (KEEP_MB - 1) << 10 <= df["avail_kb"] <= KEEP_MB << 10
    )
    assert ev["size_gib"] == df["size_kb"] / 1024**2
    # named by the mariadbd command line in ps: the mount is a loop device, judged only because it holds it
    assert ev["data_dir"] == str(inst.datadir) and Path(ev["data_dir_program"]).name == "mariadbd"
    # what is left said in MiB: 32 MiB is not "0.0 GiB free"
    mib = round(df["avail_kb"] / 1024)
    assert f.title == f"{mount} is 100% full, {mib} MiB free (holds mariadbd's data dir {inst.datadir})"

"""cgroup v1 and v2 groups for the scenario lab: make a group, limit it, move processes in, read its
counters, and always undo it all (move every task back to the root group, remove the group).

Every group the lab makes is named `PREFIX<run id>-<role>` directly under the hierarchy's root, so
`leftovers()` finds the groups of a crashed run by name.

- **v1** (controllers mounted one per directory, as on this machine kind): a group is one directory
  per controller it needs (`cpu` + `cpuacct` for a CPU quota and its accounting, `blkio` for an IO
  limit, `memory` for a memory limit). A process is moved by writing **every thread id** to `tasks`
  (threads created later inherit their creator's group); a thread created while the ids are written
  is caught by going over `/proc/PID/task` again until every thread is in. Counters: `cpu.stat`
  (`throttled_time` in ns), `cpuacct.usage` (ns), `blkio.throttle.io_serviced`.
- **v2** (unified): one directory; the pid goes to `cgroup.procs` (all its threads move), the limits
  are `cpu.max`, `io.max` and `memory.max`, the counters `cpu.stat` (`usage_usec`, `throttled_usec`)
  and `io.stat`. A controller missing from the root's `cgroup.subtree_control` is enabled for the run
  and disabled again at the end.

Paths are parameters (`Layout`), so the v2 file writes are unit-tested on a directory tree where the
machine has no v2 controllers (this one: the v2 hierarchy holds none; remounting is not an option).
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "perfkit-scn-"
CGROUP_ROOT = Path("/sys/fs/cgroup")
# how long release() keeps moving tasks out and retrying rmdir (a dying thread can hold a group busy)
RELEASE_S = 10.0


class CgroupError(RuntimeError):
    """A cgroup operation failed: the message names the file."""


@dataclass(frozen=True)
class Layout:
    """Where the controllers are: v1 mount points by controller, and the v2 root with its controllers."""

    v1: dict[str, Path] = field(default_factory=dict)
    v2: Path | None = None
    v2_controllers: frozenset[str] = frozenset()

    def pick(self, need: str, version: int | None = None) -> int:
        """The cgroup version that offers `need` ("cpu", "io" or "memory"): v1 first (a controller bound
        to v1 is not available in v2 at the same time), or `version` when asked; CgroupError otherwise."""
        v1_name = {"cpu": "cpu", "io": "blkio", "memory": "memory"}[need]
        have_v1 = v1_name in self.v1 and (need != "cpu" or "cpuacct" in self.v1)
        have_v2 = self.v2 is not None and need in self.v2_controllers
        if version == 1 or (version is None and have_v1):
            if not have_v1:
                raise CgroupError(f"cgroup v1: no {v1_name} controller mounted (see /proc/self/mounts)")
            return 1
        if have_v2:
            return 2
        if version == 2:
            where = f"{self.v2}/cgroup.controllers" if self.v2 else "no cgroup2 mount"
            raise CgroupError(f"cgroup v2: no {need} controller ({where})")
        where = f"{self.v2}/cgroup.controllers" if self.v2 else "no cgroup2 mount"
        raise CgroupError(f"no cgroup controller for {need}: not mounted as v1, not in v2 ({where})")


def detect(mounts: Path = Path("/proc/self/mounts")) -> Layout:
    """The cgroup layout of this machine, from its mount table."""
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mounts.read_text().splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        where, fstype, opts = Path(parts[1].replace("\\040", " ")), parts[2], parts[3].split(",")
        if fstype == "cgroup":
            for opt in opts:
                if opt in ("cpu", "cpuacct", "blkio", "memory", "cpuset", "pids"):
                    v1.setdefault(opt, where)
        elif fstype == "cgroup2" and v2 is None:
            v2 = where
    ctrls: frozenset[str] = frozenset()
    if v2 is not None:
        with contextlib.suppress(OSError):
            ctrls = frozenset((v2 / "cgroup.controllers").read_text().split())
    return Layout(v1=v1, v2=v2, v2_controllers=ctrls)


def _write(path: Path, text: str) -> None:
    """One write(2) of `text` (cgroup files take one value per write); the error names the file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise CgroupError(f"{path}: cannot write {text.strip()!r}: {exc.strerror}") from None


def _ints(path: Path) -> list[int]:
    with contextlib.suppress(OSError, ValueError):
        return [int(x) for x in path.read_text().split()]
    return []


def _keyed(path: Path) -> dict[str, int]:
    """`key value` lines (cpu.stat) as a dict; {} when the file is absent."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[k] = int(v)
    return out


def _remove_dir(path: Path) -> None:
    """rmdir of a cgroup (its control files go with it); a unit test's fake tree replaces this."""
    os.rmdir(path)


def thread_ids(pid: int) -> list[int]:
    """The thread ids of `pid` now ([] once it is gone)."""
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except (FileNotFoundError, ProcessLookupError):
        return []


class Group:
    """One cgroup of the lab, v1 or v2 (`version`), under `layout`'s roots. Use `create()` first;
    `release()` always at the end (idempotent)."""

    def __init__(self, name: str, needs: tuple[str, ...], layout: Layout, version: int | None = None):
        if not name.startswith(PREFIX) or "/" in name:
            raise ValueError(f"cgroup name {name!r} must start with {PREFIX!r} and have no '/'")
        self.name, self.layout = name, layout
        if not needs and version is None:
            raise ValueError("a group with no controller (membership only) needs its version")
        versions = {layout.pick(n, version) for n in needs} or {version}
        if not needs and version == 1:
            raise ValueError("a v1 group needs a controller: v1 has no hierarchy without one")
        if len(versions) != 1:
            raise CgroupError(f"{needs} are split between cgroup v1 and v2 here: not supported")
        self.version = int(versions.pop() or 0)
        if self.version == 1:
            v1_ctrls = {"cpu": ("cpu", "cpuacct"), "io": ("blkio",), "memory": ("memory",)}
            ctrls = sorted({c for n in needs for c in v1_ctrls[n]})
            self.roots = {c: layout.v1[c] for c in ctrls}
        else:
            if layout.v2 is None:
                raise CgroupError("no cgroup2 hierarchy mounted (see /proc/self/mounts)")
            self.roots = {"unified": layout.v2}
            self.needs = needs
        self.enabled: list[str] = []  # v2 controllers this group turned on in the root's subtree_control
        self.made: list[str] = []  # the controllers whose dir this group made (only those are removed)

    @property
    def dirs(self) -> dict[str, Path]:
        return {c: root / self.name for c, root in self.roots.items()}

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "version": self.version, "dirs": [str(d) for d in self.dirs.values()]}

    def create(self) -> None:
        if self.version == 2:
            root = self.roots["unified"]
            on: set[str] = set()
            with contextlib.suppress(OSError):
                on = set((root / "cgroup.subtree_control").read_text().split())
            for ctrl in self.needs:
                if ctrl not in on:
                    _write(root / "cgroup.subtree_control", f"+{ctrl}")
                    self.enabled.append(ctrl)
        for ctrl, d in self.dirs.items():
            try:
                d.mkdir()
                self.made.append(ctrl)
            except FileExistsError:
                raise CgroupError(f"{d} exists already (a crashed run? `scenarios cleanup`)") from None
            except OSError as exc:
                raise CgroupError(f"{d}: cannot create: {exc.strerror}") from None

    # ------------------------------------------------------------------ limits

    def set_cpu_quota(self, cores: float, period_us: int = 100_000) -> None:
        """CFS quota of `cores` CPUs per period."""
        quota = max(1000, round(cores * period_us))
        if self.version == 1:
            d = self.dirs["cpu"]
            _write(d / "cpu.cfs_period_us", str(period_us))
            _write(d / "cpu.cfs_quota_us", str(quota))
        else:
            _write(self.dirs["unified"] / "cpu.max", f"{quota} {period_us}")

    def set_write_iops(self, device: tuple[int, int], iops: int) -> None:
        """Write IOPS limit on the block device `device` (major, minor)."""
        maj, mnr = device
        if self.version == 1:
            _write(self.dirs["blkio"] / "blkio.throttle.write_iops_device", f"{maj}:{mnr} {iops}")
        else:
            _write(self.dirs["unified"] / "io.max", f"{maj}:{mnr} wiops={iops}")

    def set_memory_limit(self, nbytes: int) -> None:
        """The most memory the group's processes may hold in RAM; beyond it the kernel reclaims theirs
        (anonymous pages go to swap when there is swap: the group's own limit on swap is left off)."""
        if self.version == 1:
            _write(self.dirs["memory"] / "memory.limit_in_bytes", str(nbytes))
        else:
            _write(self.dirs["unified"] / "memory.max", str(nbytes))

    # ------------------------------------------------------------------ membership

    def tasks_file(self) -> list[Path]:
        """Where a process writes its own pid to join (v1: every controller's tasks; v2: cgroup.procs)."""
        if self.version == 1:
            return [d / "tasks" for d in self.dirs.values()]
        return [self.dirs["unified"] / "cgroup.procs"]

    def add_process(self, pid: int) -> int:
        """Move `pid` and all its threads in; the number of threads moved (CgroupError if none)."""
        if self.version == 2:
            _write(self.dirs["unified"] / "cgroup.procs", str(pid))
            return len(thread_ids(pid)) or 1
        moved: set[int] = set()
        for d in self.dirs.values():
            for _ in range(20):  # threads born while we write are picked up on the next pass
                inside = set(_ints(d / "tasks"))
                todo = [t for t in thread_ids(pid) if t not in inside]
                if not todo:
                    break
                for tid in todo:
                    try:
                        _write(d / "tasks", str(tid))
                        moved.add(tid)
                    except CgroupError:
                        if os.path.exists(f"/proc/{pid}/task/{tid}"):
                            raise  # a thread that exited meanwhile is fine, a live one refused is not
            else:
                raise CgroupError(f"{d}/tasks: threads of pid {pid} keep appearing; not all moved")
        if not moved and not thread_ids(pid):
            raise CgroupError(f"pid {pid} is gone: nothing moved into {self.name}")
        return len(moved)

    def members(self) -> list[int]:
        """Thread ids (v1, union over controllers) or pids (v2) in the group now."""
        files = (
            [d / "tasks" for d in self.dirs.values()]
            if self.version == 1
            else [self.dirs["unified"] / "cgroup.procs"]
        )
        return sorted({t for f in files for t in _ints(f)})

    # ------------------------------------------------------------------ counters

    def stats(self) -> dict[str, float]:
        """Counters now: nr_periods, nr_throttled, throttled_s, usage_s (CPU groups); write_ios (IO
        groups, summed over devices). Absent counters are left out."""
        out: dict[str, float] = {}
        if self.version == 1:
            d = self.dirs
            if "cpu" in d:
                st = _keyed(d["cpu"] / "cpu.stat")
                for k in ("nr_periods", "nr_throttled"):
                    if k in st:
                        out[k] = st[k]
                if "throttled_time" in st:
                    out["throttled_s"] = st["throttled_time"] / 1e9
            if "cpuacct" in d:
                usage = _ints(d["cpuacct"] / "cpuacct.usage")
                if usage:
                    out["usage_s"] = usage[0] / 1e9
            if "blkio" in d:
                with contextlib.suppress(OSError):
                    text = (d["blkio"] / "blkio.throttle.io_serviced").read_text()
                    out["write_ios"] = sum(
                        int(p[2])
                        for p in (ln.split() for ln in text.splitlines())
                        if len(p) == 3 and p[1] == "Write"
                    )
            return out
        d2 = self.dirs["unified"]
        st = _keyed(d2 / "cpu.stat")
        for k in ("nr_periods", "nr_throttled"):
            if k in st:
                out[k] = st[k]
        if "throttled_usec" in st:
            out["throttled_s"] = st["throttled_usec"] / 1e6
        if "usage_usec" in st:
            out["usage_s"] = st["usage_usec"] / 1e6
        with contextlib.suppress(OSError):
            wios = [
                int(kv.split("=", 1)[1])
                for ln in (d2 / "io.stat").read_text().splitlines()
                for kv in ln.split()[1:]
                if kv.startswith("wios=")
            ]
            if wios:
                out["write_ios"] = sum(wios)
        return out

    # ------------------------------------------------------------------ undo

    def release(self) -> list[str]:
        """Move every member back to the root group, remove the group's directories and disable the v2
        controllers it enabled. Never raises: returns the problems (empty when all is undone)."""
        problems: list[str] = []
        dirs = self.dirs
        for ctrl in reversed(self.made):
            problems += _empty_and_remove(dirs[ctrl], self.roots[ctrl], self.version)
        self.made = []
        if self.version == 2:
            sub = self.roots["unified"] / "cgroup.subtree_control"
            for ctrl in reversed(self.enabled):
                try:
                    _write(sub, f"-{ctrl}")
                except CgroupError as exc:
                    problems.append(str(exc))
            self.enabled = []
        return problems


def _empty_and_remove(d: Path, root: Path, version: int) -> list[str]:
    """Move all tasks of cgroup dir `d` to `root` and rmdir `d` (retrying while threads die)."""
    member_file, root_file = ("tasks", "tasks") if version == 1 else ("cgroup.procs", "cgroup.procs")
    deadline = time.monotonic() + RELEASE_S
    last = ""
    while True:
        for tid in _ints(d / member_file):
            try:
                _write(root / root_file, str(tid))
            except CgroupError as exc:
                last = str(exc)  # a task that exited meanwhile: the next pass will not list it
        try:
            _remove_dir(d)
            return []
        except FileNotFoundError:
            return []
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return [f"{d}: cannot remove: {exc.strerror}" + (f" ({last})" if last else "")]
        time.sleep(0.05)


def leftovers(layout: Layout, prefix: str = PREFIX) -> list[tuple[Path, Path, int]]:
    """Every lab cgroup still there: (its dir, its hierarchy root, version)."""
    found: list[tuple[Path, Path, int]] = []
    seen: set[Path] = set()
    for root in layout.v1.values():
        if root in seen:
            continue
        seen.add(root)
        found += [(d, root, 1) for d in sorted(root.glob(prefix + "*")) if d.is_dir()]
    if layout.v2 is not None:
        found += [(d, layout.v2, 2) for d in sorted(layout.v2.glob(prefix + "*")) if d.is_dir()]
    return found


def remove_leftover(d: Path, root: Path, version: int) -> list[str]:
    """Undo one leftover group (its tasks back to the root, the dir removed)."""
    return _empty_and_remove(d, root, version)


def block_device(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> tuple[int, int]:
    """(major, minor) of the whole disk under `path`'s filesystem: a partition's parent disk; for a
    filesystem whose st_dev is not a block device (btrfs, overlay: major 0), the mount's source."""
    st_dev = os.stat(path).st_dev
    maj, mnr = os.major(st_dev), os.minor(st_dev)
    if maj == 0:
        real = os.path.realpath(path)
        best, source = "", ""
        for line in mountinfo.read_text().splitlines():
            left, _, right = line.partition(" - ")
            mnt = left.split()[4].replace("\\040", " ")
            inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
            if inside and len(mnt) >= len(best):
                best, source = mnt, (right.split() + ["", ""])[1]
        if not source.startswith("/dev/"):
            raise CgroupError(f"{path}: on {best or '?'} from {source or '?'}, not a block device")
        rdev = os.stat(source).st_rdev
        maj, mnr = os.major(rdev), os.minor(rdev)
    sysdir = Path(f"/sys/dev/block/{maj}:{mnr}")
    if not sysdir.exists():
        raise CgroupError(f"{path}: device {maj}:{mnr} is not in /sys/dev/block")
    if (sysdir / "partition").exists():
        parent = sysdir.resolve().parent / "dev"
        a, _, b = parent.read_text().strip().partition(":")
        maj, mnr = int(a), int(b)
    return maj, mnr

"""cgroup parser, and the cgroup capture's awk run on trees of files in the kernel's formats.

`python3 -m tests.test_cgroup` rewrites the synthetic fixtures (tests/fixtures/cgroup/README.md).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from perfkit.collectors import captures
from perfkit.errors import ParseError
from perfkit.parsers import cgroup

from .conftest import FIXTURES

C = FIXTURES / "cgroup"
STAMP = 1795766400  # 2026-11-27 08:00:00 UTC
H = "cgroup snapshot at 1 of: x\n"  # a header for hand-written snapshots

# A host on cgroup v2 only (systemd, nsdelegate), as Documentation/admin-guide/cgroup-v2.rst
# describes the files: MariaDB's service with a CPU quota of half a core, a write-IOPS limit and a
# memory limit; sysbench (two processes, one cgroup) in a session scope where only memory and pids
# are enabled; a device-mapper disk named by /proc/partitions only.
V2_TREE: dict[str, str] = {
    "proc/self/mountinfo": (
        "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n"
    ),
    "proc/4242/cgroup": "0::/system.slice/mariadb.service\n",
    "proc/4300/cgroup": "0::/user.slice/user-1000.slice/session-3.scope\n",
    "proc/4301/cgroup": "0::/user.slice/user-1000.slice/session-3.scope\n",
    "proc/partitions": (
        "major minor  #blocks  name\n\n   8       16  104857600 sdb\n 253        0  52428800 dm-0\n"
    ),
    "sys/dev/block/8:16/uevent": "MAJOR=8\nMINOR=16\nDEVNAME=sdb\nDEVTYPE=disk\n",
    "sys/fs/cgroup/system.slice/mariadb.service/cgroup.controllers": "cpuset cpu io memory pids\n",
    "sys/fs/cgroup/system.slice/mariadb.service/cpu.max": "50000 100000\n",
    "sys/fs/cgroup/system.slice/mariadb.service/cpu.weight": "100\n",
    "sys/fs/cgroup/system.slice/mariadb.service/cpu.stat": (
        "usage_usec 26113582\nuser_usec 20386178\nsystem_usec 5727404\ncore_sched.force_idle_usec 0\n"
        "nr_periods 520\nnr_throttled 390\nthrottled_usec 19500000\nnr_bursts 0\nburst_usec 0\n"
    ),
    "sys/fs/cgroup/system.slice/mariadb.service/io.max": "8:16 rbps=max wbps=max riops=max wiops=40\n",
    "sys/fs/cgroup/system.slice/mariadb.service/io.stat": (
        "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
        "253:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n"
    ),
    "sys/fs/cgroup/system.slice/mariadb.service/memory.max": "4294967296\n",
    "sys/fs/cgroup/system.slice/mariadb.service/memory.high": "max\n",
    "sys/fs/cgroup/system.slice/mariadb.service/memory.current": "3221225472\n",
    "sys/fs/cgroup/system.slice/mariadb.service/memory.peak": "3300917248\n",
    "sys/fs/cgroup/system.slice/mariadb.service/memory.events": (
        "low 0\nhigh 0\nmax 12\noom 0\noom_kill 0\noom_group_kill 0\n"
    ),
    "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cgroup.controllers": "memory pids\n",
    "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cpu.stat": (
        "usage_usec 912000\nuser_usec 700000\nsystem_usec 212000\n"
    ),
    "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.max": "max\n",
    "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.high": "max\n",
    "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.current": "52428800\n",
    "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.events": (
        "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"
    ),
}
V2_COMMS = [
    "/proc/1/comm:systemd",
    "/proc/4242/comm:mariadbd",
    "/proc/4300/comm:sysbench",
    "/proc/4301/comm:sysbench",
]

# A Docker container on a v1 host without a cgroup namespace (Documentation/admin-guide/cgroup-v1/):
# each hierarchy is mounted with the container's cgroup as its root, so /proc/PID/cgroup's
# `/docker/abc123` is the mount point itself; `cpu,cpuacct` co-mounted; memory mounted where the
# mount point holds a space (mountinfo writes \040). mysqld has a 1.5-core quota, a write-IOPS and a
# read-bytes limit on 8:0, a 2 GiB memory limit; haproxy sits in another container's cgroup (below no
# mount's root here) and outside this namespace for memory; pid 79 exits before awk reads it.
V1_TREE: dict[str, str] = {
    "proc/self/mountinfo": (
        "1290 1289 0:120 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
        "1296 1295 0:29 /docker/abc123 /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime "
        "master:11 - cgroup cgroup rw,cpu,cpuacct\n"
        "1297 1295 0:30 /docker/abc123 /sys/fs/cgroup/blkio ro,nosuid,nodev,noexec,relatime master:12 "
        "- cgroup cgroup rw,blkio\n"
        "1298 1295 0:31 /docker/abc123 /sys/fs/cgroup/mem\\040ory ro,nosuid,nodev,noexec,relatime "
        "master:13 - cgroup cgroup rw,memory\n"
        "1299 1295 0:32 /docker/abc123 /sys/fs/cgroup/systemd ro,nosuid,nodev,noexec,relatime "
        "master:14 - cgroup cgroup rw,xattr,name=systemd\n"
    ),
    "proc/77/cgroup": (
        "12:memory:/docker/abc123\n4:cpu,cpuacct:/docker/abc123\n3:blkio:/docker/abc123\n"
        "1:name=systemd:/docker/abc123\n0::/system.slice/docker.service\n"
    ),
    "proc/78/cgroup": "12:memory:/../other\n4:cpu,cpuacct:/docker/other\n1:name=systemd:/docker/other\n",
    "proc/partitions": "major minor  #blocks  name\n\n   8        0  104857600 sda\n",
    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "150000\n",
    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    "sys/fs/cgroup/cpu,cpuacct/cpu.stat": (
        "nr_periods 1000\nnr_throttled 250\nthrottled_time 12500000000\nnr_bursts 0\nburst_time 0\n"
    ),
    "sys/fs/cgroup/cpu,cpuacct/cpuacct.usage": "98765432100\n",
    "sys/fs/cgroup/blkio/blkio.throttle.read_bps_device": "8:0 10485760\n",
    "sys/fs/cgroup/blkio/blkio.throttle.write_bps_device": "",
    "sys/fs/cgroup/blkio/blkio.throttle.read_iops_device": "",
    "sys/fs/cgroup/blkio/blkio.throttle.write_iops_device": "8:0 40\n",
    "sys/fs/cgroup/blkio/blkio.throttle.io_serviced": (
        "8:0 Read 1200\n8:0 Write 4800\n8:0 Sync 5000\n8:0 Async 1000\n8:0 Discard 0\n"
        "8:0 Total 6000\nTotal 6000\n"
    ),
    "sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes": (
        "8:0 Read 4915200\n8:0 Write 19660800\n8:0 Sync 20480000\n8:0 Async 4096000\n8:0 Discard 0\n"
        "8:0 Total 24576000\nTotal 24576000\n"
    ),
    "sys/fs/cgroup/mem ory/memory.limit_in_bytes": "2147483648\n",
    "sys/fs/cgroup/mem ory/memory.usage_in_bytes": "1073741824\n",
    "sys/fs/cgroup/mem ory/memory.max_usage_in_bytes": "2147479552\n",
    "sys/fs/cgroup/mem ory/memory.failcnt": "3\n",
    "sys/fs/cgroup/mem ory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
}
V1_COMMS = ["/proc/1/comm:tini", "/proc/77/comm:mysqld", "/proc/78/comm:haproxy", "/proc/79/comm:mysqld"]

SYNTHETIC = {
    "synthetic-v2-systemd-host.txt": (V2_TREE, V2_COMMS),
    "synthetic-v1-docker-container.txt": (V1_TREE, V1_COMMS),
}


def run_capture_awk(awk: list[str], tree: dict[str, str], comms: list[str], root: Path) -> str:
    """The capture's own awk program over `tree` (paths below `root`) for these `/proc/PID/comm`
    lines, as the capture feeds it from grep."""
    for rel, text in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    watch = " ".join(captures.watch_names())
    return subprocess.run(
        [*awk, "-v", f"t={STAMP}", "-v", f"watch={watch}", "-v", f"R={root}", captures._CGROUP_AWK],
        input="".join(line + "\n" for line in comms),
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout


def awks() -> list[list[str]]:
    found = [[a] for a in ("mawk",) if shutil.which(a)]
    if shutil.which("gawk"):
        found.append(["gawk", "--posix"])
    return found


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_fixture_is_what_the_capture_prints(name: str, tmp_path: Path) -> None:
    """The committed synthetic fixtures are the capture's awk output under mawk and gawk --posix."""
    tree, comms = SYNTHETIC[name]
    if not awks():
        pytest.skip("neither mawk nor gawk installed")
    for awk in awks():
        out = run_capture_awk(awk, tree, comms, tmp_path / awk[0])
        assert out == (C / name).read_text(), awk


def rows(df: pd.DataFrame, **match: object) -> pd.DataFrame:
    mask = pd.Series(True, index=df.index)
    for col, value in match.items():
        mask &= df[col] == value
    return df[mask]


def value(df: pd.DataFrame, **match: object) -> float:
    found = rows(df, **match)
    assert len(found) == 1, (match, found)
    return float(found["value"].iloc[0])


def test_v2_host_limits_counters_and_units() -> None:
    df = cgroup.parse(C / "synthetic-v2-systemd-host.txt", host="db1")
    assert set(df["version"]) == {2} and set(df["host"]) == {"db1"}
    assert df["timestamp"].iloc[0] == pd.Timestamp(STAMP, unit="s", tz="UTC")
    db = rows(df, pid=4242)
    assert set(db["cgroup"]) == {"/system.slice/mariadb.service"} and set(db["process"]) == {"mariadbd"}
    quota, period = value(db, key="quota_usec"), value(db, key="period_usec")
    assert quota / period == 0.5
    assert value(db, key="nr_throttled") == 390 and value(db, key="throttled_usec") == 19_500_000
    assert value(db, key="core_sched.force_idle_usec") == 0  # other keys keep their name
    assert value(db, key="write_max_iops") == 40
    unl = rows(db, key="read_max_iops").iloc[0]
    assert unl["unlimited"] and math.isnan(unl["value"]) and unl["device_name"] == "sdb"
    assert value(db, key="write_ios", device="8:16") == 353
    assert value(db, key="read_bytes", device="253:0") == 4096
    assert rows(db, device="253:0")["device_name"].eq("dm-0").all()  # from /proc/partitions
    assert value(db, key="max_bytes") == 4 << 30 and value(db, key="max_events") == 12
    high = rows(db, key="high_bytes").iloc[0]
    assert high["unlimited"] and math.isnan(high["value"])
    assert set(rows(db, file="io.stat")["controller"]) == {"io"}
    assert not db.loc[
        ~db["key"].isin(["read_max_bytes_s", "write_max_bytes_s", "read_max_iops", "high_bytes"]), "unlimited"
    ].any()
    # two sysbench processes, one cgroup: read once, a row set under each
    sb = rows(df, process="sysbench")
    assert sorted(set(sb["pid"])) == [4300, 4301]
    assert len(rows(sb, pid=4300)) == len(rows(sb, pid=4301)) == 11
    assert value(rows(sb, pid=4301), key="usage_usec") == 912000
    assert rows(sb, key="max_bytes")["unlimited"].all()
    text = (C / "synthetic-v2-systemd-host.txt").read_text()
    assert text.count("== cgroup v2 /user.slice/user-1000.slice/session-3.scope") == 1
    notes = df.attrs["notes"]
    assert (
        "cgroup v2 /user.slice/user-1000.slice/session-3.scope: missing cpu.max "
        "(controller cpu not enabled for this cgroup)"
    ) in notes
    assert "cgroup v2 /user.slice/user-1000.slice/session-3.scope: missing memory.peak" in notes


def test_v1_container_mount_roots_comount_and_unreachable() -> None:
    df = cgroup.parse(C / "synthetic-v1-docker-container.txt")
    assert set(df["pid"]) == {77} and set(df["version"]) == {1}  # haproxy: unreachable; 79: exited
    assert set(df["cgroup"]) == {"/docker/abc123"}
    assert value(df, key="quota_usec") / value(df, key="period_usec") == 1.5
    # v1's nanoseconds in microseconds, one key name with v2
    assert value(df, key="throttled_usec") == 12_500_000
    assert value(df, key="usage_usec", controller="cpuacct") == 98_765_432.1
    assert value(df, key="write_max_iops", device="8:0") == 40
    assert value(df, key="read_max_bytes_s") == 10 << 20
    assert rows(df, key="write_max_bytes_s").empty  # v1 lists only the limited devices
    assert value(df, key="write_ios") == 4800 and value(df, key="total_ios") == 6000
    assert value(df, key="write_bytes") == 19660800
    assert rows(df, controller="blkio")["device_name"].eq("sda").all()
    assert value(df, key="max_bytes") == 2 << 30 and value(df, key="failcnt") == 3
    assert value(df, key="oom_kill") == 1
    assert set(df["controller"]) == {"cpu", "cpuacct", "blkio", "memory"}
    notes = df.attrs["notes"]
    assert (
        "cgroup v2 /system.slice/docker.service: unreachable no cgroup2 mount in /proc/self/mountinfo"
        in notes
    )
    assert (
        "cgroup v1 cpu,cpuacct /docker/other: unreachable the path is not below the root /docker/abc123 "
        "mounted at /sys/fs/cgroup/cpu,cpuacct"
    ) in notes
    assert "cgroup v1 memory /../other: unreachable the cgroup is outside this cgroup namespace" in notes
    assert "pid 79 mysqld: missing /proc/79/cgroup (the process exited)" in notes
    assert "pid 78 haproxy: missing controller blkio (in no hierarchy of /proc/78/cgroup)" in notes
    assert "dir /sys/fs/cgroup/mem ory" in (C / "synthetic-v1-docker-container.txt").read_text()


def test_real_v1_step_deltas_as_the_rules_compute_them() -> None:
    """The docstring's recipes on a real start/end pair: two throwaway processes (one cgroup) under a
    0.2-core quota and a 20 write-IOPS limit on vda, 3 s apart."""
    start, end = (
        cgroup.parse(C / f"v1-quota-0.2-write-iops-20-{p}.txt", host="lab") for p in ("start", "end")
    )
    s, e = (df[df["process"] == "pkcgtest"] for df in (start, end))
    assert len(set(s["pid"])) == 2 and len(set(s["cgroup"])) == 3  # the test group, memory, v2 root
    pid = int(s["pid"].min())
    s, e = (df[(df["pid"] == pid) & (df["version"] == 1)] for df in (s, e))
    seconds = (e["timestamp"].iloc[0] - s["timestamp"].iloc[0]).total_seconds()
    assert seconds == 3

    def delta(key: str, **match: object) -> float:
        return value(e, key=key, **match) - value(s, key=key, **match)

    assert value(s, key="quota_usec") / value(s, key="period_usec") == 0.2  # quota in cores
    assert delta("nr_throttled") / delta("nr_periods") == 1.0  # throttled in every period
    assert delta("throttled_usec") / 1e6 == pytest.approx(2.310428371)  # throttled seconds
    assert delta("usage_usec", controller="cpuacct") / 1e6 / seconds == pytest.approx(0.2, abs=0.01)
    iops = delta("write_ios", device="254:0") / seconds
    limit = rows(s, key="write_max_iops").iloc[0]
    assert iops == 20 == limit["value"] and limit["device_name"] == "vda"  # IOPS at the limit
    mem = rows(s, key="max_bytes").iloc[0]
    assert mem["unlimited"] and mem["cgroup"].startswith("/process_api/")


def test_real_lab_mariadb_unconstrained() -> None:
    df = cgroup.parse(C / "v1-lab-mariadb-unconstrained.txt")
    db = df[(df["process"] == "mariadbd") & (df["version"] == 1)]
    assert set(db["cgroup"]) >= {"/"}
    assert rows(db, key="quota_usec")["unlimited"].all() and rows(db, key="max_bytes")["unlimited"].all()
    assert rows(db, controller="blkio", key="write_max_iops").empty  # no IO limit anywhere
    assert value(db, key="nr_periods") == 0  # no quota: CFS bandwidth never ran a period


def test_real_v2_child_without_controllers() -> None:
    df = cgroup.parse(C / "v2-child-no-controllers.txt")
    v2 = df[(df["process"] == "pkcgv2") & (df["version"] == 2)]
    assert set(v2["cgroup"]) == {"/perfkit-scn-cgtest32229-v2"}
    assert set(v2["key"]) == {"usage_usec", "user_usec", "system_usec", "nice_usec"}
    assert (
        "cgroup v2 /perfkit-scn-cgtest32229-v2: missing cpu.max (controller cpu not enabled for this cgroup)"
    ) in df.attrs["notes"]


def test_v1_unlimited_values() -> None:
    text = (
        "cgroup snapshot at 1795766400 of: mariadbd\n== pid 9 mariadbd\ncgroup v1 cpu,cpuacct /\n"
        "cgroup v1 memory /\n== cgroup v1 cpu,cpuacct /\nfile cpu.cfs_quota_us\n  -1\n"
        "== cgroup v1 memory /\nfile memory.limit_in_bytes\n  9223372036854771712\n"
        "file memory.max_usage_in_bytes\n  9223372036854771712\n"
    )
    df = cgroup.parse(text)
    q = rows(df, key="quota_usec").iloc[0]
    assert q["unlimited"] and math.isnan(q["value"])
    m = rows(df, key="max_bytes").iloc[0]
    assert m["unlimited"] and math.isnan(m["value"])  # never read as a 8 EiB limit
    assert value(df, key="peak_bytes") == 9223372036854771712  # a counter is not a limit
    # 64 kB pages: the kernel's "no limit" is 9223372036854710272
    big = cgroup.parse(text.replace("  9223372036854771712\nfile", "  9223372036854710272\nfile"))
    assert rows(big, key="max_bytes")["unlimited"].all()


def test_v2_cpu_max_unlimited() -> None:
    df = cgroup.parse(
        "cgroup snapshot at 1 of: x\n== pid 9 x\ncgroup v2 /a\n== cgroup v2 /a\nfile cpu.max\n  max 100000\n"
    )
    assert rows(df, key="quota_usec")["unlimited"].all() and value(df, key="period_usec") == 100000


def test_no_watched_process_and_no_timestamp() -> None:
    df = cgroup.parse(
        "cgroup snapshot at  of: mariadbd\nmissing processes (none of the watched names is running)\n"
    )
    assert df.empty and list(df.columns) == list(cgroup.SCHEMA)
    assert df.attrs["notes"] == ["missing processes (none of the watched names is running)"]


def test_unknown_file_is_skipped_with_a_note() -> None:
    df = cgroup.parse(
        H + "== pid 9 x\ncgroup v2 /a\n== cgroup v2 /a\nfile cpu.idle\n  0\nfile cpu.weight\n  100\n"
    )
    assert df["key"].tolist() == ["weight"]
    assert df.attrs["notes"] == ["cgroup v2 /a: cpu.idle is not a file this parser reads: skipped"]


def test_cut_last_line_dropped() -> None:
    text = (C / "synthetic-v1-docker-container.txt").read_text()
    cut = text[: text.index("  2147483648") + len("  21474")]
    df = cgroup.parse(cut)
    assert df.attrs["dropped_lines"] == 1 and rows(df, key="max_bytes").empty


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        ("== pid 9 x\n", 1, "not a cgroup snapshot"),
        ("cgroup snapshot at 1 of: x\n  12\n", 2, "outside any `file`"),
        ("cgroup snapshot at 1 of: x\nfile cpu.max\n", 2, "outside any `== cgroup`"),
        ("cgroup snapshot at 1 of: x\ncgroup v2 /a\n", 2, "under `== pid`"),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\nfile cpu.max\n  50000\n", 4, "QUOTA PERIOD"),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\nfile memory.max\n  1G\n", 4, "integer or `max`"),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\nfile memory.current\n  1\n  2\n", 5, "one value"),
        (
            "cgroup snapshot at 1 of: x\n== cgroup v1 memory /a\nfile memory.limit_in_bytes\n  max\n",
            4,
            "integer",
        ),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\nfile io.max\n  8:0 wiops=40 foo=1\n", 4, "none of"),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\nfile io.stat\n  8:0 rios=x\n", 4, "not a number"),
        (
            H + "== cgroup v1 blkio /a\nfile blkio.throttle.io_serviced\n  8:0 Foo 1\n",
            4,
            "Read|Write",
        ),
        (
            H + "== cgroup v1 blkio /a\nfile blkio.throttle.write_iops_device\n  sda 40\n",
            4,
            "MAJ:MIN",
        ),
        ("cgroup snapshot at 1 of: x\n== cgroup v1 cpu /a\nfile cpu.stat\n  nr_periods\n", 4, "key integer"),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\nfile cpu.stat\nfile cpu.stat\n", 4, "twice"),
        ("cgroup snapshot at 1 of: x\n== cgroup v2 /a\n== cgroup v2 /a\n", 3, "twice"),
        ("cgroup snapshot at 1 of: x\n== pid 9 x\n== pid 9 x\n", 3, "twice"),
        ("cgroup snapshot at 1 of: x\ndevice 8:0\n", 2, "device MAJ:MIN NAME"),
        ("cgroup snapshot at 1 of: x\nhello\n", 2, "not a line"),
        ("cgroup snapshot at 9200000000 of: x\n", 1, "years 1678-2261"),  # would wrap to 1970-ish
    ],
)
def test_bad_lines_are_parse_errors_naming_the_line(text: str, line_no: int, reason: str) -> None:
    with pytest.raises(ParseError) as info:
        cgroup.parse(text)
    assert info.value.line_no == line_no and reason in info.value.reason


def test_sniff() -> None:
    for f in sorted(C.glob("*.txt")):
        assert cgroup.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "cgroup"]
    assert not [f for f in others if cgroup.sniff(f.read_text(errors="replace"))]


def test_spec_in_both_profiles_with_the_watch_names() -> None:
    for name in ("default", "minimal"):
        specs = {s.id: s for s in captures.profile(name)}
        assert specs["cgroup-start"].phase == "start" and specs["cgroup-end"].phase == "end"
        assert specs["cgroup-start"].kind == specs["cgroup-end"].kind == "cgroup"
    cmd = specs["cgroup-start"].render(interval=1, window=5, workdir="/tmp", watch=("pkburn",))
    assert "-v watch='mariadbd mysqld " in cmd and " pkburn' " in cmd
    assert "python" not in cmd


def write_synthetic() -> None:
    """Rewrite the synthetic fixtures from V2_TREE and V1_TREE with mawk (the capture's own awk)."""
    import tempfile

    for name, (tree, comms) in SYNTHETIC.items():
        with tempfile.TemporaryDirectory() as tmp:
            (C / name).write_text(run_capture_awk(["mawk"], tree, comms, Path(tmp)))
        print(f"wrote {C / name}")


if __name__ == "__main__":
    sys.exit(write_synthetic())

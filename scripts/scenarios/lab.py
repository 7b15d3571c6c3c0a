"""The scenarios: each starts its own MariaDB, induces one real limit, runs `perfkit run sysbench`
and `perfkit analyze`, and restores the machine however it ends.

`run_scenario()` leaves in its output directory:

- `archive/` — what `perfkit run sysbench` wrote (a directory archive);
- `report/` — what `perfkit analyze archive -o report` wrote (findings.json, report.md/html);
- `perfkit-run.log`, `perfkit-analyze.log` — their terminal output;
- `scenario.json` — what was induced and measured beside perfkit: the limit (cgroup version and
  dirs, quota or device and IOPS), perfkit's exit codes, verdict and finding ids, per step (from the
  archive's manifest: the load's own start and end) the TPS, the instance's CPU in cores, the
  group's CPU, periods, throttled periods and seconds, write IOPS, and the host disk's write IOPS;
  the sampled timeline (every 0.5 s) those come from; and `restore`, the problems met while undoing
  (empty when the machine was restored).

Restoring: every step that changes the machine registers its undo on a `Restorer` first thing after
it succeeds; the undos run in reverse order in a `finally`, with SIGINT/SIGTERM/SIGHUP blocked so a
second signal cannot cut them short (it is delivered after, and the run exits 130). A harness killed
with SIGKILL leaves its dirs and groups behind, named with `PREFIX`: `cleanup()` removes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import cgroups, side
from .cgroups import PREFIX, Group, Layout
from .instance import (
    BASE_DIR,
    DB,
    USER,
    Instance,
    cpu_seconds,
    leftover_bases,
    mariadbd_pids,
    owner_alive,
    stop_by_pidfile,
    write_owner,
)

PERFKIT = [sys.executable, "-m", "perfkit"]
SAMPLE_S = 0.5
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PERFKIT_STOP_S = 90.0  # how long perfkit gets to write its interrupted archive after our SIGTERM


@dataclass(frozen=True)
class Scenario:
    name: str
    induces: str
    workload: str
    limit: str | None  # "db-cpu" | "db-write-iops" | "client-cpu" | None
    table_size: int = 10000  # rows per table unless the run says otherwise (hot-rows: a few)
    server_options: tuple[str, ...] = ()  # mariadbd options the limit is (a small buffer pool, ...)
    sysbench_options: tuple[str, ...] = ()  # more `--key=value` for sysbench's Lua script (perfkit --sb-opt)
    side: str | None = None  # side sessions held open through the run (side.SIDES: "metadata-lock")


# small-buffer-pool's table: ~23 MiB of rows and index, four times the 6 MiB pool (prepared in a few s)
SMALL_POOL_ROWS = 100_000
SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "db-cpu-quota",
            "every mariadbd thread in a cpu cgroup with a CFS quota (default 0.5 core)",
            "oltp_read_only",
            "db-cpu",
        ),
        Scenario(
            "db-write-iops",
            "mariadbd's writes to its data disk limited by cgroup blkio/io.max (default 40 IOPS)",
            "oltp_write_only",
            "db-write-iops",
        ),
        Scenario(
            "client-cpu-quota",
            "sysbench (through a wrapper that joins the group, then execs it) under a CFS quota "
            "(default 0.25 core)",
            "oltp_point_select",
            "client-cpu",
        ),
        Scenario(
            "hot-rows",
            "no limit: every transaction updates one of a few rows (default 4), so transactions queue "
            "on each other's row locks",
            "oltp_update_non_index",
            None,
            table_size=4,
        ),
        Scenario(
            "small-buffer-pool",
            "no limit but the server's: a 6 MiB buffer pool (MariaDB 10.11's minimum with 16 KiB pages) "
            "under point selects spread uniformly over a table several times larger",
            "oltp_point_select",
            None,
            table_size=SMALL_POOL_ROWS,
            server_options=("--innodb-buffer-pool-size=6M",),
            sysbench_options=("--rand-type=uniform",),
        ),
        Scenario(
            "small-buffer-pool-control",
            "the small-buffer-pool run with a 256 MiB pool that holds the table",
            "oltp_point_select",
            None,
            table_size=SMALL_POOL_ROWS,
            server_options=("--innodb-buffer-pool-size=256M",),
            sysbench_options=("--rand-type=uniform",),
        ),
        Scenario(
            "max-connections",
            "no limit but the server's: max_connections=10, below the sweep's 16 threads (perfkit's "
            "DB sampler holds one more connection through the run, a step's DB snapshot one while it "
            "reads): the load generator's connects are refused (error 1040)",
            "oltp_point_select",
            None,
            server_options=("--max-connections=10",),
        ),
        Scenario(
            "max-connections-control",
            "the max-connections run with the harness's own max_connections (300)",
            "oltp_point_select",
            None,
        ),
        Scenario(
            "small-redo-log",
            "no limit but the server's: MariaDB 10.11's smallest redo log (4 MiB) and log buffer (2 MiB) "
            "under a write load",
            "oltp_write_only",
            None,
            server_options=("--innodb-log-file-size=4M", "--innodb-log-buffer-size=2M"),
        ),
        Scenario(
            "small-redo-log-control",
            "the small-redo-log run with the defaults (96 MiB redo log, 16 MiB log buffer)",
            "oltp_write_only",
            None,
        ),
        Scenario(
            "metadata-lock",
            "no limit but another session's: a transaction that read sbtest1 held open 2 s of every 3 "
            "with an ALTER TABLE pending behind it, so the load's UPDATEs wait for the table's metadata "
            "lock (side.py)",
            "oltp_update_non_index",
            None,
            side="metadata-lock",
        ),
        Scenario("control", "no limit: the same instance and sweep, unconstrained", "oltp_read_write", None),
    )
}
DEFAULT_QUOTA = {"db-cpu": 0.5, "client-cpu": 0.25}
DEFAULT_IOPS = 40


class ScenarioError(RuntimeError):
    """A scenario could not run: one line for the user."""


class Interrupted(BaseException):
    """SIGTERM or SIGHUP (SIGINT stays KeyboardInterrupt): unwinds like Ctrl-C so the undos run."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Interrupted` in the main thread while the scenario runs."""
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for s in old:
        if old[s] is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(s, _raise_interrupted)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class Restorer:
    """Undo actions, run last-registered first; each one's problems collected, none stops the rest."""

    def __init__(self, log: Callable[[str], None]):
        self.undos: list[tuple[str, Callable[[], list[str] | None]]] = []
        self.log = log
        self.problems: list[str] = []

    def push(self, what: str, undo: Callable[[], list[str] | None]) -> None:
        self.undos.append((what, undo))

    def restore(self) -> list[str]:
        """Run every undo with the stop signals blocked (a pending one is delivered by the caller)."""
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        while self.undos:
            what, undo = self.undos.pop()
            try:
                problems = undo() or []
            except Exception as exc:  # an undo that raises must not skip the others
                problems = [f"{what}: {type(exc).__name__}: {exc}"]
            for p in problems:
                self.log(f"restore: {what}: {p}")
            self.problems += problems
        return self.problems


class Monitor(threading.Thread):
    """Samples, every SAMPLE_S: the instance's CPU seconds, the group's counters and the data disk's
    completed writes (/proc/diskstats, the whole host's)."""

    def __init__(self, pid: int, group: Group | None, device: tuple[int, int] | None):
        super().__init__(name="scenario-monitor", daemon=True)
        self.pid, self.group, self.device = pid, group, device
        self.samples: list[dict[str, Any]] = []
        self.done = threading.Event()

    def sample(self) -> dict[str, Any]:
        s: dict[str, Any] = {"t": round(time.time(), 3), "instance_cpu_s": cpu_seconds(self.pid)}
        if self.group is not None:
            s["group"] = self.group.stats()
        if self.device is not None:
            s["disk_writes"] = disk_writes(self.device)
        return s

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append(self.sample())
            self.done.wait(SAMPLE_S)

    def stop(self) -> None:
        if self.done.is_set():
            return
        self.done.set()
        self.join(timeout=5)
        self.samples.append(self.sample())


def disk_writes(device: tuple[int, int]) -> int | None:
    """Writes completed on `device` since boot (/proc/diskstats field 8)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/diskstats").read_text().splitlines():
            p = line.split()
            if len(p) > 7 and (int(p[0]), int(p[1])) == device:
                return int(p[7])
    return None


def wrapper_script(path: Path, join: list[Path], sysbench: str) -> None:
    """The `--bin` perfkit runs for the client-side limit: joins the group, then execs sysbench (same
    pid, so perfkit's kill and its captures see sysbench itself)."""
    lines = [
        "#!/bin/sh",
        "# perfkit scenario lab: become a member of the load generator's cgroup, then sysbench",
    ]
    lines += [f"echo $$ > '{f}' || exit 125" for f in join]
    lines += [f'exec {sysbench} "$@"', ""]
    path.write_text("\n".join(lines))
    path.chmod(0o755)


def _parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def step_figures(manifest: dict[str, Any], samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per sweep step: perfkit's TPS and status, and over the load's own window (the sysbench file
    record's started_at/ended_at) the deltas of the sampled counters, as rates."""
    loads = {
        f.get("step"): f
        for f in manifest.get("captures") or manifest.get("files") or []
        if f.get("kind") == "sysbench" and f.get("started_at") and f.get("ended_at")
    }
    out = []
    for st in (manifest.get("sweep") or {}).get("steps", []):
        row: dict[str, Any] = {k: st.get(k) for k in ("name", "threads", "status", "tps", "lat_pct_ms")}
        rec = loads.get(st.get("name"))
        if rec is not None:
            t0, t1 = _parse_iso(rec["started_at"]), _parse_iso(rec["ended_at"])
            inside = [s for s in samples if t0 <= s["t"] <= t1]
            if len(inside) >= 2:
                a, b = inside[0], inside[-1]
                dt = b["t"] - a["t"]
                row["window_s"] = round(dt, 2)
                if a.get("instance_cpu_s") is not None and b.get("instance_cpu_s") is not None:
                    row["instance_cores"] = round((b["instance_cpu_s"] - a["instance_cpu_s"]) / dt, 3)
                if "group" in a:
                    ga, gb = a["group"], b["group"]
                    d = {k: gb[k] - ga[k] for k in gb if k in ga}
                    row["group"] = {k: round(v, 3) for k, v in d.items()}
                    if "usage_s" in d:
                        row["group_cores"] = round(d["usage_s"] / dt, 3)
                    if "write_ios" in d:
                        row["group_write_iops"] = round(d["write_ios"] / dt, 1)
                    if d.get("nr_periods"):
                        row["throttled_share"] = round(d.get("nr_throttled", 0) / d["nr_periods"], 3)
                if a.get("disk_writes") is not None and b.get("disk_writes") is not None:
                    row["disk_write_iops"] = round((b["disk_writes"] - a["disk_writes"]) / dt, 1)
        out.append(row)
    return out


def _totals(samples: list[dict[str, Any]]) -> dict[str, float]:
    if len(samples) < 2 or "group" not in samples[0]:
        return {}
    a, b = samples[0]["group"], samples[-1]["group"]
    return {k: round(b[k] - a[k], 3) for k in b if k in a}


def run_perfkit(argv: list[str], log: Path, env: dict[str, str]) -> int:
    """One perfkit command, its output into `log`. Interrupted (Ctrl-C, SIGTERM): perfkit gets a
    SIGTERM and PERFKIT_STOP_S to write its interrupted archive, then SIGKILL; the exception goes on."""
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=env)
        try:
            return proc.wait()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # the restore comes next
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=PERFKIT_STOP_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            raise


def run_scenario(
    name: str,
    out: Path,
    *,
    threads: str = "1,4,16",
    time_s: int = 5,
    workload: str | None = None,
    quota: float | None = None,
    iops: int | None = None,
    cgroup_version: int | None = None,
    tables: int = 1,
    table_size: int | None = None,
    profile: str = "default",
    layout: Layout | None = None,
    analyze: bool = True,
    log: Callable[[str], None] = lambda m: print(f"scenarios: {m}", file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Run scenario `name` into the new directory `out`; scenario.json's content (also written there).
    `analyze=False` leaves out `perfkit analyze` (report/, `perfkit_analyze`): for a caller that
    analyzes the archive itself."""
    if name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)}")
    sc = SCENARIOS[name]
    table_size = table_size or sc.table_size
    if os.geteuid() != 0:
        raise ScenarioError("scenarios need root (cgroups, mariadbd --user=mysql)")
    for tool in ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-admin", "sysbench"):
        if shutil.which(tool) is None:
            raise ScenarioError(f"{tool} not found (scripts/lab.sh installs it)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ScenarioError(f"{out}: exists and is not an empty directory")
    layout = layout or cgroups.detect()
    run_id = uuid.uuid4().hex[:8]
    record: dict[str, Any] = {
        "scenario": name,
        "induces": sc.induces,
        "run_id": run_id,
        "workload": workload or sc.workload,
        "threads": threads,
        "time_s": time_s,
        "tables": tables,
        "table_size": table_size,
        "profile": profile,
        "limit": None,
        "server_options": list(sc.server_options),
        "sysbench_options": list(sc.sysbench_options),
        "side": sc.side,
    }
    group: Group | None = None
    role = "client" if sc.limit == "client-cpu" else "db"
    if sc.limit is not None:  # an unusable cgroup layout is said before anything is started
        needs = ("io",) if sc.limit == "db-write-iops" else ("cpu",)
        group = Group(f"{PREFIX}{run_id}-{role}", needs, layout, cgroup_version)
    out.mkdir(parents=True, exist_ok=True)
    lab = Restorer(log)
    monitor: Monitor | None = None
    try:
        base = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{run_id}-", dir=BASE_DIR))
        lab.push(f"remove {base}", lambda: _remove_base(base))
        write_owner(base)
        inst = Instance(base, extra=sc.server_options)
        record["instance"] = {"base": str(base), "port": inst.port}
        log(f"{name}: starting mariadbd in {base} on 127.0.0.1:{inst.port}")
        lab.push(f"stop mariadbd ({base})", inst.stop)
        inst.start()
        record["instance"]["pid"] = inst.pid
        inst.create_user()
        inst.prepare(tables=tables, table_size=table_size)
        assert inst.pid is not None

        device: tuple[int, int] | None = None
        binary: str | None = None
        with contextlib.suppress(cgroups.CgroupError):
            device = cgroups.block_device(inst.datadir)
        if group is not None and sc.limit is not None:
            lab.push(f"release cgroup {group.name}", group.release)
            group.create()
            limit: dict[str, Any] = {"kind": sc.limit, "cgroup": group.describe()}
            if sc.limit == "db-write-iops":
                if device is None:
                    device = cgroups.block_device(inst.datadir)  # raises, naming why
                n = iops or DEFAULT_IOPS
                group.set_write_iops(device, n)
                limit.update(device=f"{device[0]}:{device[1]}", write_iops=n)
            else:
                cores = quota or DEFAULT_QUOTA[sc.limit]
                group.set_cpu_quota(cores)
                limit.update(quota_cores=cores, period_us=100_000)
            if role == "db":
                limit["threads_moved"] = group.add_process(inst.pid)
            else:
                binary = str(base / "sysbench-wrapper")
                wrapper_script(Path(binary), group.tasks_file(), shutil.which("sysbench") or "sysbench")
            record["limit"] = limit
            log(f"{name}: {json.dumps(limit)}")

        monitor = Monitor(inst.pid, group, device)
        monitor.start()
        lab.push("stop the monitor", lambda: monitor.stop() if monitor is not None else None)

        argv = [
            *PERFKIT,
            "run",
            "sysbench",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={inst.port}",
            f"--mysql-user={USER}",
            f"--mysql-db={DB}",
            f"--workload={workload or sc.workload}",
            f"--tables={tables}",
            f"--table-size={table_size}",
            f"--threads={threads}",
            f"--time={time_s}",
            f"--profile={profile}",
            "--no-report",
            "-o",
            str(out / "archive"),
        ]
        if binary is not None:
            argv += ["--bin", binary]
        argv += [f"--sb-opt={o}" for o in sc.sysbench_options]
        env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": inst.password}
        record["perfkit_run"] = {"argv": argv[len(PERFKIT) :]}
        if sc.side is not None:  # opened last, closed first: before the instance stops
            cycle = side.SIDES[sc.side](inst)
            lab.push(f"close the {sc.side} side sessions", cycle.stop)
            cycle.start_sessions()
            record["side"] = cycle.describe()
        log(f"{name}: perfkit run sysbench --workload={workload or sc.workload} --threads={threads}")
        rc = run_perfkit(argv, out / "perfkit-run.log", env)
        record["perfkit_run"]["exit_code"] = rc
        monitor.stop()
        if sc.side is not None:  # stopped now (the Restorer's undo then has nothing left to do)
            lab.problems += cycle.stop()
            record["side"] = cycle.describe()
        manifest_path = out / "archive" / "manifest.json"
        if not manifest_path.exists():
            raise ScenarioError(f"perfkit run exited {rc} without an archive: see {out / 'perfkit-run.log'}")
        manifest = json.loads(manifest_path.read_text())
        record["steps"] = step_figures(manifest, monitor.samples)
        record["totals"] = _totals(monitor.samples)
        record["timeline"] = monitor.samples

        if not analyze:
            return record
        log(f"{name}: perfkit analyze")
        rc = run_perfkit(
            [*PERFKIT, "analyze", str(out / "archive"), "-o", str(out / "report")],
            out / "perfkit-analyze.log",
            dict(os.environ),
        )
        record["perfkit_analyze"] = {"exit_code": rc}
        findings = out / "report" / "findings.json"
        if findings.exists():
            fj = json.loads(findings.read_text())
            record["perfkit_analyze"].update(
                verdict=fj.get("verdict"),
                findings=[f["rule"] for f in fj.get("findings", [])],
                titles=[f["title"] for f in fj.get("findings", [])],
            )
        return record
    finally:
        record["restore"] = lab.restore()
        if monitor is not None and "timeline" not in record:
            record["timeline"] = monitor.samples
        with contextlib.suppress(OSError):
            (out / "scenario.json").write_text(json.dumps(record, indent=1) + "\n")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # a signal held during restore lands now


def _remove_base(base: Path) -> list[str]:
    if not base.exists():
        return []
    if mariadbd_pids(base):
        return [f"{base}: not removed, a mariadbd still serves it"]
    shutil.rmtree(base, ignore_errors=True)
    return [f"{base}: could not be removed"] if base.exists() else []


def cleanup(
    *, force: bool = False, layout: Layout | None = None, log: Callable[[str], None] = print
) -> list[str]:
    """Remove what crashed runs left: their mariadbd (stopped by pid file), base dirs and cgroups.
    A run whose harness still runs is left alone unless `force`. Returns the problems."""
    layout = layout or cgroups.detect()
    problems: list[str] = []
    live = {_run_id(b) for b in leftover_bases() if owner_alive(b) and not force}
    # cgroups first: a process moved back is no longer throttled, so its instance stops quickly
    for d, root, version in cgroups.leftovers(layout):
        if _run_id(d) in live:
            continue
        log(f"cleanup: cgroup v{version} {d}: tasks back to {root}, removed")
        problems += cgroups.remove_leftover(d, root, version)
    for base in leftover_bases():
        if _run_id(base) in live:
            log(f"cleanup: {base}: its run is still going (owner alive), left alone")
            continue
        log(f"cleanup: stopping and removing {base}")
        problems += stop_by_pidfile(base)
        problems += _remove_base(base)
    return problems


def _run_id(path: Path) -> str:
    """The run id in a lab dir or cgroup name: `perfkit-scn-<run id>-...`."""
    return path.name[len(PREFIX) :].split("-", 1)[0]

"""A throwaway MariaDB instance for one scenario (lab.md §9), never the shared lab instance.

`mariadb-install-db --no-defaults` into `BASE/data`, `mariadbd --no-defaults` on a free loopback
port with its socket and pid file in `BASE` (BASE = `/var/tmp/perfkit-scn-<run id>`, on the disk
the IO limit throttles), a user with a generated password (SQL over the root socket on stdin: the
password is in no argv), sysbench tables prepared as root over the socket. `stop()` ends it by its
pid file and removes BASE; `stop_leftover()` does the same for a crashed run's BASE.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from .cgroups import PREFIX

BASE_DIR = Path("/var/tmp")
USER = "pkscn"
DB = "sbtest"
START_S = 60.0
STOP_S = 60.0


class InstanceError(RuntimeError):
    """The throwaway instance could not be made, started or stopped."""


def free_port() -> int:
    """A loopback TCP port free now (the bind races another process at worst: start() then fails)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the pid,
    it names one process even after pid reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def cmdline(pid: int) -> list[str]:
    try:
        return [
            a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0") if a
        ]
    except OSError:
        return []


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of the whole process (all its threads, the dead ones included)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Instance:
    """One throwaway mariadbd. `base` must be new; use start(), then stop() whatever happened."""

    def __init__(
        self, base: Path, *, port: int | None = None, extra: tuple[str, ...] = (), datadir: Path | None = None
    ):
        self.base = base
        self.datadir = datadir or base / "data"  # elsewhere: on a filesystem of the scenario's own
        self.sock = base / "sock"
        self.pidfile = base / "pid"
        self.errlog = base / "error.log"
        self.port = port or free_port()
        self.extra = extra
        self.password = secrets.token_urlsafe(18)
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None

    def start(self) -> None:
        import pwd

        mysql = pwd.getpwnam("mysql")
        os.chown(self.base, mysql.pw_uid, mysql.pw_gid)  # mariadbd writes its socket and pid file here
        os.chmod(self.base, 0o755)
        inst = subprocess.run(
            ["mariadb-install-db", "--no-defaults", "--user=mysql", f"--datadir={self.datadir}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if inst.returncode != 0:
            tail = (inst.stderr or inst.stdout).strip().splitlines()[-3:]
            raise InstanceError(f"mariadb-install-db --datadir={self.datadir} failed: {' | '.join(tail)}")
        argv = [
            "mariadbd",
            "--no-defaults",
            "--user=mysql",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.sock}",
            f"--pid-file={self.pidfile}",
            f"--log-error={self.errlog}",
            "--max-connections=300",
            *self.extra,
        ]
        # own session: a Ctrl-C at the terminal reaches the harness, which stops the instance in order
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise InstanceError(f"mariadbd exited ({self.proc.returncode}) at start: {self._log_tail()}")
            if self.sock.exists() and self.ping():
                return
            time.sleep(0.1)
        raise InstanceError(f"mariadbd on {self.sock} did not answer within {START_S:g}s: {self._log_tail()}")

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.errlog.read_text(errors="replace").strip().splitlines()[-3:])
        return "(no error log)"

    def ping(self) -> bool:
        r = subprocess.run(
            ["mariadb-admin", "--no-defaults", f"--socket={self.sock}", "-uroot", "ping"],
            capture_output=True,
            timeout=10,
        )
        return r.returncode == 0

    def sql(self, text: str, *, timeout: float = 60) -> str:
        """SQL as root over the socket, on stdin (unix_socket auth: no password anywhere)."""
        r = subprocess.run(
            ["mariadb", "--no-defaults", f"--socket={self.sock}", "-uroot", "-N", "-B"],
            input=text,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode != 0:
            raise InstanceError(f"SQL on {self.sock} failed: {r.stderr.strip()[:300]}")
        return r.stdout

    def create_user(self) -> None:
        """`pkscn` on 127.0.0.1 and localhost, ALL on sbtest and PROCESS (the DB sampler reads status)."""
        self.sql(
            f"CREATE DATABASE IF NOT EXISTS {DB};"
            + "".join(
                f"CREATE OR REPLACE USER '{USER}'@'{h}' IDENTIFIED BY '{self.password}';"
                f"GRANT ALL ON {DB}.* TO '{USER}'@'{h}'; GRANT PROCESS ON *.* TO '{USER}'@'{h}';"
                for h in ("127.0.0.1", "localhost")
            )
        )

    def prepare(self, *, tables: int, table_size: int) -> None:
        """sysbench's tables, made as root over the socket (oltp_common's prepare serves every oltp_*)."""
        r = subprocess.run(
            [
                "sysbench",
                "oltp_read_write",
                f"--mysql-socket={self.sock}",
                "--mysql-user=root",
                f"--mysql-db={DB}",
                f"--tables={tables}",
                f"--table-size={table_size}",
                f"--threads={min(tables, 4)}",
                "prepare",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if r.returncode != 0 or "FATAL" in r.stdout + r.stderr:
            why = [ln for ln in (r.stdout + r.stderr).splitlines() if "FATAL" in ln or "error" in ln.lower()]
            raise InstanceError(
                f"sysbench prepare failed (exit {r.returncode}): {(why or ['no output'])[-1]}"
            )

    def stop(self) -> list[str]:
        """Stop mariadbd by its pid file (else the pid it started with) and remove the base dir.
        Never raises: returns the problems."""
        problems = stop_by_pidfile(self.base, child=self.proc, datadir=self.datadir)
        if not problems:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(self.base)
        return problems


def _ours(pid: int, base: Path, datadir: Path | None = None) -> bool:
    """Whether `pid` is a mariadbd serving `datadir` (by default `base`'s), not some other process
    by now."""
    argv = cmdline(pid)
    return bool(argv) and any(a == f"--datadir={datadir or base / 'data'}" for a in argv)


def stop_by_pidfile(
    base: Path, child: subprocess.Popen[bytes] | None = None, datadir: Path | None = None
) -> list[str]:
    """SIGTERM the mariadbd of `base` (pid file, else `child`), wait for it, SIGKILL after STOP_S."""
    pid: int | None = None
    with contextlib.suppress(OSError, ValueError):
        pid = int((base / "pid").read_text().split()[0])
    if pid is None and child is not None and child.poll() is None:
        pid = child.pid
    if pid is None or not _ours(pid, base, datadir):
        if child is not None:
            with contextlib.suppress(ProcessLookupError, ChildProcessError, subprocess.TimeoutExpired):
                child.wait(timeout=1)
        return []
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_S
    killed = False
    while _alive(pid, child):
        if time.monotonic() > deadline and not killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed, deadline = True, time.monotonic() + 10
        elif time.monotonic() > deadline:
            return [f"mariadbd pid {pid} ({base}) did not exit after SIGKILL"]
        time.sleep(0.1)
    return []


def _alive(pid: int, child: subprocess.Popen[bytes] | None) -> bool:
    if child is not None and child.pid == pid:
        return child.poll() is None  # reaps our own child (else it stays a zombie)
    state = ""
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state not in ("", "Z", "X")


def leftover_bases(base_dir: Path = BASE_DIR) -> list[Path]:
    return sorted(p for p in base_dir.glob(PREFIX + "*") if p.is_dir())


def owner_alive(base: Path) -> bool:
    """Whether the harness that made `base` still runs (its `owner` file: pid and start time)."""
    try:
        pid_s, start = (base / "owner").read_text().split()
    except (OSError, ValueError):
        return False
    return proc_start_time(int(pid_s)) == start


def write_owner(base: Path) -> None:
    (base / "owner").write_text(f"{os.getpid()} {proc_start_time(os.getpid())}\n")


def mariadbd_pids(base: Path, datadir: Path | None = None) -> list[int]:
    """Live mariadbd processes serving `datadir` (by default `base`'s): what a test checks is gone."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _ours(int(entry), base, datadir) and _alive(int(entry), None):
            pids.append(int(entry))
    return pids

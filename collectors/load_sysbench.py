"""sysbench as perfkit's load generator: preflight, prepare/cleanup, one measured run per sweep step.

The password reaches sysbench through a 0600 `--config-file` in perfkit's private work dir, removed
when the runner closes; it is never in argv, so `ps`/`top -c` captures and /proc/*/cmdline never show
it (reliability.md K1). sysbench's output is written as it arrives to `load/<step>/sysbench.out`, with
the password's exact value masked should it ever appear (K2). Success is judged from the parsed
output (a summary, throughput > 0, the duration reached, errors), not from the exit code alone (L3).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from perfkit.errors import PerfkitError

from .mysql_sampler import DbTarget

BUILTIN = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
    "bulk_insert",
)
_FATAL = re.compile(rb"^FATAL: .*$", re.M)
# a few ignored errors (deadlocks under oltp_read_write) are normal; more than this share per
# transaction make a step degraded
ERROR_SHARE = 0.01


@dataclass(frozen=True)
class Workload:
    """Which Lua workload and its table options. `name` is built-in, or `script` is a path to one."""

    name: str = "oltp_read_write"
    script: Path | None = None
    tables: int = 1
    table_size: int = 10000
    percentile: int = 95
    histogram: bool = False
    extra: tuple[str, ...] = ()  # further `--key=value` options for the Lua script

    def __post_init__(self) -> None:
        if self.script is None and self.name not in BUILTIN:
            raise ValueError(f"unknown sysbench workload {self.name!r}; built-in: {', '.join(BUILTIN)}")
        if self.script is not None and not Path(self.script).is_file():
            raise ValueError(f"{self.script}: Lua script not found")
        for opt in self.extra:
            if not re.fullmatch(r"--[a-z][a-z0-9_-]*=[^\s]*", opt) or "password" in opt:
                raise ValueError(f"sysbench option {opt!r}: must be --key=value (no password)")
        if not (0 <= self.percentile <= 100):
            raise ValueError("percentile must be 0..100")

    @property
    def test(self) -> str:
        return str(self.script) if self.script is not None else self.name


@dataclass
class LoadResult:
    """One sysbench invocation: its exit, timing and whether its output says it worked."""

    command: str
    exit_code: int | None
    started_at: float
    ended_at: float
    bytes: int
    timed_out: bool = False
    interrupted: bool = False
    status: str = "ok"  # ok | degraded | failed | interrupted
    reason: str = ""
    fatal: list[str] = field(default_factory=list)
    summary: dict = field(default_factory=dict)  # sysbench's printed totals (parsers/sysbench.py)


class SysbenchRunner:
    """Runs sysbench on this machine against `target`. Use as a context manager (it owns a temp dir)."""

    tool = "sysbench"

    def __init__(self, target: DbTarget, workload: Workload, *, binary: str = "sysbench"):
        self.target, self.workload = target, workload
        self.binary = shutil.which(binary) or binary
        self._dir = Path(tempfile.mkdtemp(prefix="perfkit-sysbench-"))
        os.chmod(self._dir, 0o700)
        self.config = self._dir / "sysbench.cfg"
        fd = os.open(self.config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            opts = {
                "db-driver": "mysql",
                "mysql-host": target.host,
                "mysql-port": str(target.port),
                "mysql-user": target.user,
                "mysql-password": target.password,
                "mysql-db": target.db,
            }
            if target.socket:
                opts["mysql-socket"] = target.socket
            for k, v in opts.items():
                if "\n" in v:
                    raise PerfkitError(f"sysbench option {k}: a newline is not allowed")
                fh.write(f"{k}={v}\n")
        self.version: str | None = None

    def __enter__(self) -> SysbenchRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    # ------------------------------------------------------------------ commands

    def argv(self, command: str, *, threads: int = 1, time_s: int | None = None) -> list[str]:
        """The sysbench command line: never holds the password (it is in the config file)."""
        w = self.workload
        args = [
            self.binary,
            w.test,
            f"--config-file={self.config}",
            f"--tables={w.tables}",
            f"--table-size={w.table_size}",
            f"--threads={threads}",
            *w.extra,
        ]
        if command == "run":
            args += [
                f"--time={time_s}",
                "--report-interval=1",
                f"--percentile={w.percentile}",
                f"--histogram={'on' if w.histogram else 'off'}",
                "--events=0",
                "--db-ps-mode=auto",
            ]
        return [*args, command]

    def shown(self, argv: list[str]) -> str:
        """A command line for the manifest and messages: the private config path is named, not shown."""
        return " ".join("--config-file=<0600 file>" if a.startswith("--config-file=") else a for a in argv)

    # ------------------------------------------------------------------ steps

    def preflight(self) -> None:
        """sysbench exists and the database answers to these credentials; else PerfkitError (L1)."""
        try:
            out = subprocess.run([self.binary, "--version"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PerfkitError(f"sysbench: cannot run {self.binary!r}: {exc}") from None
        self.version = out.stdout.strip() or None
        if out.returncode != 0 or not self.version:
            raise PerfkitError(f"sysbench: `{self.binary} --version` failed: {out.stderr.strip()[:200]}")
        check_database(self.target)

    def prepare(self, *, timeout: float = 3600) -> None:
        self._admin("cleanup", timeout=timeout, check=False)
        self._admin("prepare", timeout=timeout)

    def cleanup(self, *, timeout: float = 600) -> None:
        self._admin("cleanup", timeout=timeout)

    def _admin(self, command: str, *, timeout: float, check: bool = True) -> None:
        argv = self.argv(command, threads=max(1, min(self.workload.tables, os.cpu_count() or 1)))
        try:
            done = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise PerfkitError(f"sysbench {command} did not finish within {timeout:.0f}s") from None
        if check and done.returncode != 0:
            text = self.target.redact((done.stderr or done.stdout).decode(errors="replace"))
            fatal = _FATAL.findall(text.encode()) or [text.strip().encode()[-300:]]
            raise PerfkitError(f"sysbench {command} failed (exit {done.returncode}): {fatal[0].decode()}")

    def run(self, threads: int, time_s: int, out: Path, *, stop: object | None = None) -> LoadResult:
        """One measured run, its output streamed into `out`. `stop` (an Event) ends it early."""
        argv = self.argv("run", threads=threads, time_s=time_s)
        out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        started = time.time()
        # sysbench would otherwise receive the terminal's Ctrl-C too: perfkit decides what stops.
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + time_s + 30  # sysbench's own --time, plus its shutdown
        size, timed_out, interrupted = 0, False, False
        secret = self.target.password.encode()
        with open(out, "wb") as fh:
            assert proc.stdout is not None
            os.set_blocking(proc.stdout.fileno(), False)
            while True:
                chunk = proc.stdout.read(65536)
                if chunk:
                    if secret and secret in chunk:
                        chunk = chunk.replace(secret, b"***")
                    fh.write(chunk)
                    fh.flush()
                    size += len(chunk)
                    continue
                if chunk == b"" and proc.poll() is not None:
                    break
                if stop is not None and getattr(stop, "is_set", lambda: False)() and not interrupted:
                    interrupted = True
                    _signal_group(proc, signal.SIGINT)  # sysbench prints what it has, then exits
                    deadline = min(deadline, time.monotonic() + 5)
                if time.monotonic() > deadline:
                    timed_out = not interrupted
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait()
                    break
                time.sleep(0.05)
            rest = proc.stdout.read() or b""
            if rest:
                fh.write(rest.replace(secret, b"***") if secret else rest)
                size += len(rest)
        proc.stdout.close()
        res = LoadResult(
            command=self.shown(argv),
            exit_code=proc.returncode,
            started_at=started,
            ended_at=time.time(),
            bytes=size,
            timed_out=timed_out,
            interrupted=interrupted,
        )
        judge(res, out, time_s)
        return res


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def judge(res: LoadResult, out: Path, time_s: int) -> None:
    """Set `res.status`/`reason` from what sysbench printed (L3: the exit code alone can lie)."""
    from perfkit.errors import ParseError
    from perfkit.parsers import sysbench as sb_parser

    text = out.read_bytes()
    res.fatal = [m.decode(errors="replace") for m in _FATAL.findall(text)][:5]
    if res.interrupted:
        res.status, res.reason = "interrupted", "stopped by the user"
        return
    try:
        frame = sb_parser.parse(out)
    except ParseError as exc:
        res.status, res.reason = "failed", f"output not readable: {exc}"
        return
    runs = frame.attrs.get("runs") or []
    summary = runs[-1]["summary"] if runs else {}
    res.summary = summary
    if res.timed_out:
        res.status, res.reason = "failed", f"sysbench did not exit within {time_s + 30}s"
    elif not summary:
        why = res.fatal[0] if res.fatal else f"exit {res.exit_code}, no summary printed"
        res.status, res.reason = "failed", why
    elif not summary.get("tps") and not summary.get("eps"):
        res.status, res.reason = "failed", "no transaction completed"
    elif res.fatal or res.exit_code != 0:
        res.status = "degraded"
        res.reason = res.fatal[0] if res.fatal else f"exit {res.exit_code} after a summary"
    elif summary.get("total_time_s", time_s) < 0.9 * time_s:
        res.status, res.reason = "degraded", f"ran {summary['total_time_s']:.1f}s of {time_s}s"
    elif summary.get("reconnects") or (summary.get("ignored_errors") or 0) > ERROR_SHARE * (
        summary.get("transactions") or 0
    ):
        res.status = "degraded"
        res.reason = f"{summary.get('ignored_errors', 0)} errors, {summary.get('reconnects', 0)} reconnects"
    elif not frame.empty and (frame["tps"] == 0).any():
        zero = int((frame["tps"] == 0).sum())
        res.status, res.reason = "degraded", f"{zero} one-second intervals with no transaction"


def check_database(target: DbTarget) -> str:
    """Log in once and return the server version; PerfkitError with no secret in it otherwise."""
    try:
        conn = target.connect()
    except pymysql.MySQLError as exc:
        code = exc.args[0] if exc.args else "?"
        text = target.redact(str(exc.args[1]) if len(exc.args) > 1 else str(exc))
        hint = {
            1045: "wrong user or password (PERFKIT_MYSQL_PASSWORD or --mysql-password-file)",
            1049: f"database {target.db!r} does not exist",
            2003: "nothing answers there (server down, wrong host or port, firewall)",
        }.get(code, "")
        raise PerfkitError(
            f"database {target.user}@{target.name}: cannot log in: error {code}: {text}"
            + (f" — {hint}" if hint else "")
        ) from None
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            (version,) = cur.fetchone()
        return str(version)
    finally:
        conn.close()

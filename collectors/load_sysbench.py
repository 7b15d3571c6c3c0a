"""sysbench as perfkit's load generator: preflight, prepare/cleanup, one measured run per sweep step.

sysbench runs on this machine or on a client host (collectors/_load.py). The password reaches it
through a 0600 `--config-file` in a private temp dir on that host, removed when the runner closes;
it is never in argv, so `ps`/`top -c` captures and /proc/*/cmdline never show it (reliability.md
K1). sysbench's output is written as it arrives to `load/<step>/sysbench.out`, with the password's
exact value masked should it ever appear (K2). Success is judged from the parsed
output (a summary, throughput > 0, the duration reached, errors), not from the exit code alone (L3).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql

from perfkit.errors import PerfkitError

from ._load import ERROR_SHARE, HostedRunner, LoadHost, LoadResult, StartGate
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


class SysbenchRunner(HostedRunner):
    """Runs sysbench against `target`, on this machine or on `host` (a client host over SSH).
    Use as a context manager: the host holds the 0600 config file until the runner closes."""

    tool = kind = "sysbench"

    def __init__(
        self, target: DbTarget, workload: Workload, *, binary: str = "sysbench", host: LoadHost | None = None
    ):
        self.target, self.workload = target, workload
        self.host = host or LoadHost(secrets=(target.password,))
        self.binary = binary
        self.config: str | None = None
        self.version: str | None = None
        self.test = workload.test  # a custom Lua script: its path on the load host, after preflight

    def _config_text(self) -> str:
        t = self.target
        opts = {
            "db-driver": "mysql",
            "mysql-host": t.host,
            "mysql-port": str(t.port),
            "mysql-user": t.user,
            "mysql-password": t.password,
            "mysql-db": t.db,
        }
        if t.socket:
            opts["mysql-socket"] = t.socket
        return "".join(f"{k}={config_value(k, v)}\n" for k, v in opts.items())

    # ------------------------------------------------------------------ commands

    def argv(self, command: str, *, threads: int = 1, time_s: int | None = None) -> list[str]:
        """The sysbench command line: never holds the password (it is in the config file)."""
        w = self.workload
        args = [
            self.binary,
            self.test,
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
        """sysbench exists on the load host and the database answers to these credentials (L1)."""
        self.binary = self.host.which(self.binary)
        rc, out = self.host.run(f"{shlex.quote(self.binary)} --version", timeout=30)
        self.version = out.strip().splitlines()[0] if rc == 0 and out.strip() else None
        if not self.version:
            raise PerfkitError(f"sysbench: `{self.binary} --version` failed on {self.host.name}: {out[:200]}")
        check_database(self.target)
        self.config = self.host.secret_file("sysbench.cfg", self._config_text())
        script = self.workload.script
        if script is not None and self.host.transport.spec.hostname is not None:
            # a client host has no copy of the user's script: it goes into the runner's private dir
            # there (one file: a script that `require`s its own modules must be installed there)
            name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(script).name)
            self.test = self.host.secret_file(name, Path(script).read_text(encoding="utf-8"))

    def prepare(self, *, timeout: float = 3600) -> None:
        self._admin("cleanup", timeout=timeout, check=False)
        self._admin("prepare", timeout=timeout)

    def cleanup(self, *, timeout: float = 600) -> None:
        self._admin("cleanup", timeout=timeout)

    def _admin(self, command: str, *, timeout: float, check: bool = True) -> None:
        """prepare/cleanup, judged by their output too: sysbench's parallel prepare (a thread per
        table) exits 0 after a thread's `FATAL: ... error 1142`, with that table never made."""
        argv = self.argv(command, threads=max(1, min(self.workload.tables, 8)))
        res, text = self.host.admin(argv, limit_s=timeout, shown=self.shown(argv))
        if not check:
            return
        if res.timed_out or res.exit_code == 124:
            raise PerfkitError(f"sysbench {command} did not finish within {timeout:g}s")
        fatal = [m.decode(errors="replace") for m in _FATAL.findall(text.encode())]
        errors = fatal or [line for line in text.splitlines() if re.search(r"\berror\b", line, re.I)]
        if res.exit_code != 0 or errors:
            last = (errors or text.strip().splitlines() or ["no output"])[-1]
            why = failure_reason(fatal) if fatal else last
            raise PerfkitError(f"sysbench {command} failed (exit {res.exit_code}): {why[:300]}")

    def check_tables(self) -> dict[str, Any]:
        """How many rows the workload's tables hold, counted exactly (`SELECT COUNT(*)`, one index
        scan a table: a fraction of what prepare took to write them); PerfkitError when a table is
        missing or holds fewer rows than --table-size (the run would ask for rows that are not
        there). A custom Lua script's or bulk_insert's tables are not sysbench's sbtestN of
        table_size rows: not counted."""
        w = self.workload
        if w.script is not None or w.name == "bulk_insert":
            why = "a custom Lua script" if w.script is not None else "bulk_insert writes its own tables"
            return {"method": None, "reason": f"not counted: {why}"}
        tables = [f"sbtest{i}" for i in range(1, w.tables + 1)]
        rows = count_rows(self.target, tables)
        short = {t: n for t, n in rows.items() if n < w.table_size}
        if short:
            t, n = next(iter(short.items()))
            has = "does not exist" if n < 0 else f"holds {n:,} rows"
            raise PerfkitError(
                f"table {self.target.db}.{t} {has}, --table-size is {w.table_size:,}"
                f"{f' ({len(short)} tables short)' if len(short) > 1 else ''}: "
                "run with --prepare, or give the size the tables have"
            )
        return {"method": "SELECT COUNT(*)", "rows": rows}

    def run(
        self,
        threads: int,
        time_s: int,
        out: Path,
        *,
        stop: object | None = None,
        gate: StartGate | None = None,
    ) -> LoadResult:
        """One measured run, its output streamed into `out`. `stop` (an Event) ends it early; `gate`
        starts it with the step's other load hosts."""
        argv = self.argv("run", threads=threads, time_s=time_s)
        # sysbench ends itself at --time; the limit (its shutdown included) only guards a hang
        res = self.host.stream(argv, out, limit_s=time_s + 30, stop=stop, shown=self.shown(argv), gate=gate)
        judge(res, out, time_s)
        return res


def judge(res: LoadResult, out: Path, time_s: int) -> None:
    """Set `res.status`/`reason` from what sysbench printed (L3: the exit code alone can lie)."""
    from perfkit.errors import ParseError
    from perfkit.parsers import sysbench as sb_parser

    text = out.read_bytes()
    fatal = [m.decode(errors="replace") for m in _FATAL.findall(text)]
    res.fatal = fatal[:5]
    if res.interrupted:
        res.status, res.reason = "interrupted", "stopped by the user"
        return
    try:
        frame = sb_parser.parse(out)
    except ParseError as exc:
        res.status, res.reason = "failed", f"output not readable: {exc}"
        return
    runs = frame.attrs.get("runs") or []
    # the histogram (--histogram) goes with the totals: several load hosts' are merged for the step
    summary = runs[-1]["summary"] if runs else {}
    if summary:
        summary = {**summary, "histogram": runs[-1].get("histogram")}
    res.summary, res.failed = summary, _failed_operations(res, summary)
    if res.timed_out or res.exit_code == 124:
        res.status, res.reason = "failed", f"sysbench did not exit within {time_s + 30}s"
    elif not summary:
        why = failure_reason(fatal) if fatal else f"exit {res.exit_code}, no summary printed"
        res.status, res.reason = "failed", why
    elif not summary.get("tps") and not summary.get("eps"):
        res.status, res.reason = "failed", "no transaction completed"
    elif res.fatal or res.exit_code != 0:
        res.status = "degraded"
        res.reason = failure_reason(fatal) if fatal else f"exit {res.exit_code} after a summary"
    elif summary.get("total_time_s", time_s) < 0.9 * time_s:
        res.status, res.reason = "degraded", f"ran {summary['total_time_s']:.1f}s of {time_s}s"
    elif summary.get("reconnects") or res.failed > ERROR_SHARE * (summary.get("transactions") or 0):
        res.status = "degraded"
        res.reason = f"{summary.get('ignored_errors', 0)} errors, {summary.get('reconnects', 0)} reconnects"
    elif not frame.empty and (frame["tps"] == 0).any():
        zero = int((frame["tps"] == 0).sum())
        res.status, res.reason = "degraded", f"{zero} one-second intervals with no transaction"


def _failed_operations(res: LoadResult, summary: dict) -> int:
    """The step's failed operations: sysbench's ignored errors, unless they are its own retries.

    With sysbench's default `--mysql-ignore-errors` (1213 deadlock, 1020 record changed, 1205 lock
    wait timeout) an ignored error is a transaction rolled back by a lock conflict and run again:
    the workload's contention, which `db.lock-contention` reports, not a fault of the measurement
    (a write sweep at 8 threads on a throttled disk had 1 in 84). A list the user set may hide
    lost connections (`all`), so then every ignored error counts as failed.
    """
    ignored = int(summary.get("ignored_errors") or 0)
    return ignored if "--mysql-ignore-errors" in res.command else 0


# How sysbench 1.0 prints the server's error among its FATAL lines (tests/fixtures/sysbench/1.0.20-*):
# a failed connect, a failed prepared statement, a failed query, the Lua error that ends a thread.
_MYSQL_ERROR = (
    re.compile(r"^FATAL: error (\d+): (.+)$"),
    re.compile(r'^FATAL: MySQL error: (\d+) "(.*)"$'),
    re.compile(r"^FATAL: mysql_\w+\(\) returned error (\d+) \((.*)\) for query"),
    re.compile(r"SQL error, errno = (\d+), state = '[^']*': (.+)$"),
)


def failure_reason(fatal: list[str]) -> str:
    """Why sysbench failed, from its FATAL lines: the server's error (number and message) when it
    printed one, with the first FATAL line as context when that line does not already say it
    ("unable to connect" is the first line of a `Too many connections`)."""
    first = fatal[0].removeprefix("FATAL: ").strip()
    for line in fatal:
        for pattern in _MYSQL_ERROR:
            if m := pattern.search(line):
                error = f"MySQL error {m.group(1)}: {m.group(2).strip()}"
                return error if m.group(2).strip() in first else f"{error} ({first})"
    return first


def config_value(key: str, value: str) -> str:
    """`value` as sysbench's --config-file reader gets it back intact (sb_options.c `read_config`:
    a line is read into 256 bytes, an unquoted value ends at whitespace or `,`, a value in `'` or
    `"` runs to the same quote). PerfkitError, naming the option but never the value, for what the
    format cannot carry: a newline, both quote characters where quoting is needed, an over-long line."""
    if "\n" in value or "\r" in value or "\0" in value:
        raise PerfkitError(f"sysbench --config-file: {key}: a line break or NUL is not allowed")
    plain = value == "" or (not re.search(r"[\s,]", value) and value[0] not in "#'\"")
    if plain:
        text = value
    elif "'" not in value:
        text = f"'{value}'"
    elif '"' not in value:
        text = f'"{value}"'
    else:
        raise PerfkitError(
            f"sysbench --config-file cannot carry this {key}: it holds both quote characters and a space, "
            "a comma or a leading # (sysbench's file format has no escapes; change it for the test user)"
        )
    if len(f"{key}={text}\n".encode()) > 255:
        raise PerfkitError(f"sysbench --config-file: {key} is too long (sysbench reads 255 bytes a line)")
    return text


def count_rows(target: DbTarget, tables: list[str], *, timeout: float = 600) -> dict[str, int]:
    """`SELECT COUNT(*)` of each table (-1: it does not exist); PerfkitError naming the table otherwise."""
    rows: dict[str, int] = {}
    what = target.db
    try:
        with target.connect(read_timeout=timeout) as conn, conn.cursor() as cur:
            for table in tables:
                what = f"{target.db}.{table}"
                try:
                    cur.execute(f"SELECT COUNT(*) FROM `{table}`")
                    rows[table] = int(cur.fetchone()[0])
                except pymysql.err.ProgrammingError as exc:
                    if not (exc.args and exc.args[0] == 1146):  # ER_NO_SUCH_TABLE
                        raise
                    rows[table] = -1
    except pymysql.MySQLError as exc:
        raise PerfkitError(f"cannot count the rows of {what}: {db_error(target, exc)}") from None
    return rows


def db_error(target: DbTarget, exc: pymysql.MySQLError) -> str:
    """`error N: message` of a pymysql error, the password masked."""
    code = exc.args[0] if exc.args else "?"
    return f"error {code}: " + target.redact(str(exc.args[1]) if len(exc.args) > 1 else str(exc))


def check_database(target: DbTarget) -> str:
    """Log in once and return the server version; PerfkitError with no secret in it otherwise."""
    try:
        conn = target.connect()
    except pymysql.MySQLError as exc:
        code = exc.args[0] if exc.args else "?"
        hint = {
            1045: "wrong user or password (PERFKIT_MYSQL_PASSWORD or --mysql-password-file)",
            1049: f"database {target.db!r} does not exist",
            2003: "nothing answers there (server down, wrong host or port, firewall)",
        }.get(code, "")
        raise PerfkitError(
            f"database {target.user}@{target.name}: cannot log in: {db_error(target, exc)}"
            + (f" — {hint}" if hint else "")
        ) from None
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            (version,) = cur.fetchone()
        return str(version)
    finally:
        conn.close()

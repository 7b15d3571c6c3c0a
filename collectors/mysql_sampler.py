"""MySQL/MariaDB status sampler: `SHOW GLOBAL STATUS` and the sessions by state every second.

One JSON object per line (kind `mysql_status`, parsers/mysql_status.py):

    {"ts": "2026-11-22T18:00:01.002Z", "t": 1795370401.002, "status": {"Questions": 1234, ...},
     "processlist": {"total": 9, "active": 5, "by_command": {"Query": 5, "Sleep": 4},
                     "by_state": [["Query", "Updating", "LOCK WAIT", 3], ["Query", "Updating", "RUNNING", 2],
                                  ["Sleep", "", null, 4]],
                     "trx": "innodb_trx",
                     "sessions": {"lock": 3, "commit": 0, "io": 0, "cpu": 2, "net": 0, "other": 0,
                                  "idle": 4}},
     "threads_running_avg": 4.3, "threads_running_n": 10}

The processlist (`SHOW PROCESSLIST`, its columns read by name: MariaDB, MySQL and TiDB print Id,
Command and State) is kept as sessions by (Command, State, transaction state) with their counts —
the raw rows the parser classifies (parsers/mysql_status.session_class) — and, for a reader of the
file, the classes it made of them (`sessions`). This sampler's own session (CONNECTION_ID()) is left
out of all of it. A row-lock wait does not show in State (the waiter says "Updating"), so each
sample also reads the transactions' states: information_schema.INNODB_TRX (MariaDB, MySQL), else
TIDB_TRX (TiDB: LockWaiting, Committing); `trx` names the one read, or says why none could be
(no PROCESS privilege, neither table): the transaction state is then null and row-lock waits are
not seen per session (the status counters still count them). TiDB's State column is the session's
status flags ("in transaction; autocommit"), not a wait: its sessions class `other` unless TIDB_TRX
says they wait on a lock or commit.

Threads_running is a gauge: one reading a second says little about a 5 ms transaction, so between
the full samples the sampler reads it alone ten times a second (one row of
information_schema.GLOBAL_STATUS) and records the mean since the last line, its own reading thread
left out. Server RT by Little's law rests on that mean.

A sample that fails (the server died, a query timed out) is a line with `"error"` instead, and the
sampler reconnects on the next tick, so a DB that restarts mid-step shows as a gap with its reason.
When stopped it writes one closing line, so the counters at the run's end are read: a last step that
fails between two ticks (refused connects end a sysbench run in milliseconds) is counted.
The password reaches pymysql as an argument in this process, never argv; errors are redacted.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pymysql

from perfkit.parsers.mysql_status import SESSION_CLASSES, session_class
from perfkit.redact import redact

CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 5


@dataclass(frozen=True)
class DbTarget:
    """Where the database is and how to log in. `password` never reaches argv, logs or repr."""

    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    db: str = "sbtest"
    password: str = field(default="", repr=False)
    socket: str | None = None

    @property
    def name(self) -> str:
        return self.socket or f"{self.host}:{self.port}"

    def redact(self, text: str) -> str:
        """`text` with the password masked where it stands as a word (K2; perfkit.redact's rule)."""
        return redact(text, (self.password,)) if self.password else text

    def connect(
        self, *, database: bool = True, read_timeout: float = READ_TIMEOUT_S
    ) -> pymysql.connections.Connection:
        """A connection; `read_timeout` longer than the sampler's for a query that scans a table."""
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=self.db if database else None,
            unix_socket=self.socket,
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=read_timeout,
            write_timeout=READ_TIMEOUT_S,
            autocommit=True,
        )


def _value(text: Any) -> Any:
    """Status values come back as strings: numbers become numbers, the rest stay text."""
    if not isinstance(text, str):
        return text
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


# The transaction tables that say which session waits on a row lock or commits, tried in order.
TRX_SQL = (
    ("innodb_trx", "SELECT trx_mysql_thread_id, trx_state FROM information_schema.INNODB_TRX"),
    ("tidb_trx", "SELECT SESSION_ID, STATE FROM information_schema.TIDB_TRX"),
)


def _trx_states(cur: Any) -> tuple[dict[Any, str], str]:
    """session id -> its transaction's state, and which table said it (else why none could)."""
    why = []
    for name, sql in TRX_SQL:
        try:
            cur.execute(sql)
        except (pymysql.err.ProgrammingError, pymysql.err.OperationalError, pymysql.err.InternalError) as exc:
            # no such table (TiDB, MySQL without it), no privilege: said, not fatal; a lost
            # connection (2006, 2013) fails the sample like any other query's
            if isinstance(exc, pymysql.err.OperationalError) and exc.args and exc.args[0] in (2006, 2013):
                raise
            why.append(f"{name}: {exc.args[-1] if exc.args else exc}")
        else:
            return {row[0]: str(row[1]) for row in cur.fetchall() if row[0] is not None}, name
    return {}, "none readable (" + "; ".join(why) + ")"


def sample(conn: pymysql.connections.Connection, own_id: int | None = None) -> dict[str, Any]:
    """One sample from an open connection; `own_id` is its CONNECTION_ID(), left out of the sessions."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS")
        status = {name: _value(value) for name, value in cur.fetchall()}
        cur.execute("SHOW PROCESSLIST")
        names = [d[0].lower() for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        trx, trx_source = _trx_states(cur)
    if own_id is not None:
        rows = [r for r in rows if r.get("id") != own_id]
    else:  # unknown: one session running SHOW PROCESSLIST is ours (as before by_state)
        mine = next((r for r in rows if (r.get("info") or "").upper().startswith("SHOW PROCESSLIST")), None)
        rows = [r for r in rows if r is not mine]
    commands = Counter(r.get("command") for r in rows)
    states = Counter((r.get("command") or "", r.get("state") or "", trx.get(r.get("id"))) for r in rows)
    sessions = dict.fromkeys(SESSION_CLASSES, 0)
    for (cmd, state, trx_state), n in states.items():
        sessions[session_class(cmd, state, trx_state)[0]] += n
    active = sum(n for cmd, n in commands.items() if cmd not in ("Sleep", "Daemon", "Binlog Dump"))
    return {
        "status": status,
        "processlist": {
            "total": sum(commands.values()),
            "active": active,
            "by_command": dict(commands),
            "by_state": [[c, s, t, n] for (c, s, t), n in sorted(states.items(), key=_by_count)],
            "trx": trx_source,
            "sessions": sessions,
        },
    }


def _connection_id(conn: pymysql.connections.Connection) -> int | None:
    """This connection's id as the processlist shows it (TiDB's are 64-bit: not the handshake's)."""
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        row = cur.fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _by_count(item: tuple[tuple[str, str, str | None], int]) -> tuple[int, str, str, str]:
    (cmd, state, trx), n = item
    return (-n, cmd, state, trx or "")


RUNNING_SQL = (
    "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'THREADS_RUNNING'"
)


class StatusSampler(threading.Thread):
    """Samples every `interval` seconds into `out` until `stop()`; `samples`/`errors` count lines."""

    def __init__(self, target: DbTarget, out: Path, interval: float = 1.0, running_hz: int = 10):
        self.running_hz = running_hz
        super().__init__(name=f"mysql-sampler-{target.name}", daemon=True)
        self.target, self.out, self.interval = target, out, interval
        self._stop_event = threading.Event()
        self.samples = self.errors = 0
        self.last_error = ""

    def stop(self, timeout: float = 10) -> None:
        self._stop_event.set()
        self.join(timeout)

    def run(self) -> None:
        conn = None
        own_id: int | None = None
        running: list[int] = []
        next_at = time.monotonic()
        self.out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.out, "a", encoding="utf-8") as fh:
            while not self._stop_event.is_set():
                conn, own_id = self._line(fh, conn, own_id, running)
                next_at += self.interval
                running = self._read_running(conn, next_at)
                self._stop_event.wait(max(0.0, next_at - time.monotonic()))
            # One closing line as the run ends: a step that fails between two ticks (a refused
            # connect ends a sysbench run within milliseconds) still has its counters read.
            conn, own_id = self._line(fh, conn, own_id, running)
        if conn is not None:
            conn.close()

    def _line(
        self, fh: Any, conn: pymysql.connections.Connection | None, own_id: int | None, running: list[int]
    ) -> tuple[pymysql.connections.Connection | None, int | None]:
        """Write one sample line (or its error); the connection to keep, None after a failure."""
        now = time.time()
        stamp = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
        line: dict[str, Any] = {"ts": stamp.replace("+00:00", "Z"), "t": round(now, 3)}
        try:
            if conn is None:
                conn = self.target.connect(database=False)
                own_id = _connection_id(conn)
            line.update(sample(conn, own_id))
            if running:
                line["threads_running_avg"] = round(sum(running) / len(running), 3)
                line["threads_running_n"] = len(running)
            self.samples += 1
        except (pymysql.MySQLError, OSError) as exc:
            self.errors += 1
            self.last_error = self.target.redact(f"{type(exc).__name__}: {exc}")
            line["error"] = self.last_error
            if conn is not None:
                with contextlib.suppress(Exception):  # a dead connection may fail to close
                    conn.close()
            conn = None
        fh.write(json.dumps(line, separators=(",", ":")) + "\n")
        fh.flush()
        return conn, own_id

    def _read_running(self, conn: pymysql.connections.Connection | None, until: float) -> list[int]:
        """Threads_running read `running_hz` times a second until `until` (monotonic), minus this
        reader's own thread; empty when there is no connection or a read fails."""
        values: list[int] = []
        if conn is None or self.running_hz <= 0:
            return values
        step = 1.0 / self.running_hz
        while not self._stop_event.is_set() and time.monotonic() + step < until:
            try:
                with conn.cursor() as cur:
                    cur.execute(RUNNING_SQL)
                    row = cur.fetchone()
                values.append(max(0, int(row[0]) - 1))
            except (pymysql.MySQLError, OSError, TypeError, ValueError):
                return values
            self._stop_event.wait(step)
        return values

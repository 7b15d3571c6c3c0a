"""MySQL/MariaDB status sampler: `SHOW GLOBAL STATUS` and a `SHOW PROCESSLIST` summary every second.

One JSON object per line (kind `mysql_status`, parsers/mysql_status.py):

    {"ts": "2026-11-22T18:00:01.002Z", "t": 1795370401.002, "status": {"Questions": 1234, ...},
     "processlist": {"total": 9, "active": 5, "by_command": {"Query": 5, "Sleep": 4}},
     "threads_running_avg": 4.3, "threads_running_n": 10}

Threads_running is a gauge: one reading a second says little about a 5 ms transaction, so between
the full samples the sampler reads it alone ten times a second (one row of
information_schema.GLOBAL_STATUS) and records the mean since the last line, its own reading thread
left out. Server RT by Little's law rests on that mean.

A sample that fails (the server died, a query timed out) is a line with `"error"` instead, and the
sampler reconnects on the next tick, so a DB that restarts mid-step shows as a gap with its reason.
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


def sample(conn: pymysql.connections.Connection) -> dict[str, Any]:
    """One sample from an open connection."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS")
        status = {name: _value(value) for name, value in cur.fetchall()}
        cur.execute("SHOW PROCESSLIST")
        commands = Counter(row[4] for row in cur.fetchall())
    active = sum(n for cmd, n in commands.items() if cmd not in ("Sleep", "Daemon", "Binlog Dump"))
    return {
        "status": status,
        # this sampler's own connection runs SHOW PROCESSLIST: not part of the load
        "processlist": {
            "total": sum(commands.values()) - 1,
            "active": active - 1,
            "by_command": dict(commands),
        },
    }


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
        running: list[int] = []
        next_at = time.monotonic()
        self.out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.out, "a", encoding="utf-8") as fh:
            while not self._stop_event.is_set():
                now = time.time()
                stamp = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
                line: dict[str, Any] = {"ts": stamp.replace("+00:00", "Z"), "t": round(now, 3)}
                try:
                    if conn is None:
                        conn = self.target.connect(database=False)
                    line.update(sample(conn))
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
                next_at += self.interval
                running = self._read_running(conn, next_at)
                self._stop_event.wait(max(0.0, next_at - time.monotonic()))
        if conn is not None:
            conn.close()

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

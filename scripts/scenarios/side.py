"""Side sessions a scenario holds open on its instance while `perfkit run` loads it.

`metadata-lock` (MetadataLockCycle): what blocks sysbench's DML on MariaDB 10.11 the way a
long transaction and a schema change do in production. Each cycle, session A opens a transaction
and reads one row of sbtest1 (its shared metadata lock on the table now lasts until COMMIT);
session B runs `ALTER TABLE sbtest1 COMMENT ...`, which needs the exclusive metadata lock and
queues behind A; every later statement on the table — the load's UPDATEs and SELECTs — queues
behind the pending ALTER in "Waiting for table metadata lock" (seen in the lab: MDL grants a
pending exclusive request before new shared ones). After `hold_s` A commits, the ALTER (metadata
only) runs at once and the load goes on for `free_s`; then the next cycle. No step is blocked
whole, so every step completes transactions and stays in the sweep model.

FLUSH TABLES WITH READ LOCK would block the writes too (MariaDB 10.4+ shows "Waiting for backup
lock"), but needs RELOAD and blocks the whole server; the pending ALTER blocks only the load's
table, as the issue's "long transaction touching the table" does.

Both sessions log in as the scenario's user over TCP (its password stays in this process). `stop()`
ends the cycle (A commits at once, which lets a waiting ALTER finish) and closes both sessions
(closing rolls back whatever a failed cycle left open); it never raises.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pymysql

from .instance import DB, USER, Instance

LOCK_WAIT_S = 60  # B's lock_wait_timeout: a cycle that went wrong ends, not the run


class MetadataLockCycle(threading.Thread):
    """Holds sbtest1's metadata lock behind a pending ALTER for `hold_s` of every `hold_s + free_s`."""

    def __init__(self, inst: Instance, hold_s: float = 2.0, free_s: float = 1.0, table: str = "sbtest1"):
        super().__init__(name="scenario-metadata-lock", daemon=True)
        self.inst, self.hold_s, self.free_s, self.table = inst, hold_s, free_s, table
        self.done = threading.Event()
        self.cycles = 0
        self.held_s = 0.0  # seconds an ALTER was pending (the load's table blocked), summed
        self.errors: list[str] = []
        self._holder: pymysql.connections.Connection | None = None
        self._alter: pymysql.connections.Connection | None = None

    def _connect(self) -> pymysql.connections.Connection:
        return pymysql.connect(
            host="127.0.0.1",
            port=self.inst.port,
            user=USER,
            password=self.inst.password,
            database=DB,
            autocommit=True,
            connect_timeout=10,
            read_timeout=LOCK_WAIT_S + 10,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "metadata-lock",
            "what": f"a transaction that read {self.table} held open, an ALTER TABLE pending behind it",
            "hold_s": self.hold_s,
            "free_s": self.free_s,
            "cycles": self.cycles,
            "held_s": round(self.held_s, 2),
            "errors": self.errors,
        }

    def start_sessions(self) -> None:
        """Open both sessions (raises if the instance refuses them), then start cycling."""
        self._holder = self._connect()
        self._alter = self._connect()
        with self._alter.cursor() as cur:
            cur.execute(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_S}")
        self.start()

    def run(self) -> None:
        assert self._holder is not None and self._alter is not None
        while not self.done.is_set():
            try:
                self._cycle(self._holder, self._alter)
            except (pymysql.MySQLError, OSError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return
            self.done.wait(self.free_s)

    def _cycle(self, holder: pymysql.connections.Connection, alter: pymysql.connections.Connection) -> None:
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"SELECT id FROM {self.table} LIMIT 1")
            cur.fetchall()
        failed: list[BaseException] = []

        def run_alter() -> None:
            try:
                with alter.cursor() as cur:
                    cur.execute(
                        f"ALTER TABLE {self.table} COMMENT 'perfkit scenario metadata-lock {self.cycles}'"
                    )
            except BaseException as exc:  # reported by the cycle
                failed.append(exc)

        t0 = time.monotonic()
        worker = threading.Thread(target=run_alter, name="scenario-alter", daemon=True)
        worker.start()
        self.done.wait(self.hold_s)
        with holder.cursor() as cur:
            cur.execute("COMMIT")
        worker.join(LOCK_WAIT_S + 15)
        self.held_s += time.monotonic() - t0
        self.cycles += 1
        if failed:
            raise failed[0]

    def stop(self) -> list[str]:
        """End the cycle and close both sessions; the problems met (never raises)."""
        self.done.set()  # the cycle commits at once (its wait ends) and lets the ALTER through
        problems: list[str] = []
        if self.is_alive():
            self.join(self.hold_s + LOCK_WAIT_S + 20)
            if self.is_alive():
                problems.append("the metadata-lock cycle did not end")
        for conn in (self._holder, self._alter):
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
        self._holder = self._alter = None
        return problems


SIDES = {"metadata-lock": MetadataLockCycle}

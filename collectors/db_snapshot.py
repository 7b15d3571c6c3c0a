"""Per-step database snapshots: what the server says about its own waits, near each step's start and end.

The status sampler (mysql_sampler.py) reads counters every second; some of what a rule needs is not a
counter: who blocks whom right now, the InnoDB monitor's view, the wait instruments, the settings the
counters are compared against. Each sweep step takes, on every database, two snapshots of four
captures each (the manifest record of each says `phase` start or end):

| kind | file (in `db/<host>/<step>/`) | what |
|---|---|---|
| mysql_variables | `variables-<phase>.jsonl` | `SHOW GLOBAL VARIABLES` (whole: a few hundred rows) |
| innodb_status | `innodb_status-<phase>.txt` | `SHOW ENGINE INNODB STATUS`: Status as `\\G` prints it |
| mysql_lock_waits | `lock_waits-<phase>.jsonl` | each lock wait: the waiting and the blocking transaction |
| mysql_waits | `waits-<phase>.jsonl` | performance_schema.events_waits_summary_global_by_event_name |

The JSON files hold one object per snapshot, `{"snapshot": KIND, "ts": ..., "t": ..., ...}` (the
parsers `parsers/mysql_variables.py`, `mysql_lock_waits.py`, `mysql_waits.py` say the fields).

Why inside the load and not around it: a lock wait exists only while the load runs, so a snapshot
taken before the load starts or after it ends would always find none. The start snapshot is taken
`lead` seconds after the load starts, the end snapshot `lead` seconds before its planned end (at once
if the load ends early); the wait summaries and InnoDB's counters are cumulative, so a rule's delta
end - start covers the load between the two snapshots' own timestamps.

Lock waits by server (chosen from `version` in the variables, then what the server has):
MariaDB and MySQL 5.7 `information_schema.innodb_lock_waits` + `innodb_locks` + `innodb_trx`;
MySQL 8.0 `performance_schema.data_lock_waits` + `data_locks` + `information_schema.innodb_trx`;
TiDB `information_schema.data_lock_waits` + `cluster_tidb_trx`.

What the server does not have, or the user may not read (SHOW ENGINE INNODB STATUS and innodb_trx
need the PROCESS privilege; TiDB has no InnoDB; performance_schema is OFF by MariaDB's default), is a
capture with status `unavailable` and the reason; a query that fails is `failed`, one that times out
`timed_out`. Each query has a read timeout and each snapshot a budget (`BUDGET_S`), so a slow or
dead server costs a step a few seconds at most; the run goes on. The password reaches pymysql as an
argument in this process (DbTarget.connect), never argv; error texts are redacted.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pymysql

from perfkit.config import time_zone
from perfkit.errors import ConfigError

from .mysql_sampler import DbTarget

READ_TIMEOUT_S = 3.0  # one query
BUDGET_S = 6.0  # one snapshot on one server: queries not started by then are skipped
JOIN_S = 12.0  # the driver waits this long for a snapshot thread; what is not done by then is timed out
LEAD_S = 1.0  # the start snapshot this long into the load, the end one this long before its end
POLL_S = 1.0  # lock waits polled this often between the start and end snapshots
MAX_WAITS = 1000  # lock-wait rows kept per snapshot (a pile-up of thousands says enough by its count)
MAX_EVENTS = 500  # wait-event rows kept per snapshot (every event that counted: deltas need both ends)

# (kind, file stem, the statement shown in the manifest)
PARTS: tuple[tuple[str, str, str], ...] = (
    ("mysql_variables", "variables", "SHOW GLOBAL VARIABLES"),
    ("innodb_status", "innodb_status", "SHOW ENGINE INNODB STATUS"),
    ("mysql_lock_waits", "lock_waits", "lock waits: waiting and blocking transactions"),
    ("mysql_waits", "waits", "SELECT ... FROM performance_schema.events_waits_summary_global_by_event_name"),
)

# Server errors that mean "not readable by this user" or "not on this server": recorded, not failed.
_DENIED = {1044, 1142, 1143, 1227, 1370, 8121}  # access denied / needs a privilege (8121: TiDB)
_ABSENT = {1049, 1064, 1109, 1146, 1235, 1286}  # no such schema/table, syntax or engine not supported
_TIMEOUT = re.compile(r"timed? ?out", re.IGNORECASE)

LOCK_WAITS_I_S = f"""
SELECT r.trx_id, r.trx_mysql_thread_id, r.trx_query,
       b.trx_id, b.trx_mysql_thread_id, b.trx_query,
       rl.lock_table, rl.lock_index, rl.lock_mode, bl.lock_mode,
       r.trx_wait_started, TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW())
FROM information_schema.innodb_lock_waits w
JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id
LEFT JOIN information_schema.innodb_locks rl ON rl.lock_id = w.requested_lock_id
LEFT JOIN information_schema.innodb_locks bl ON bl.lock_id = w.blocking_lock_id
ORDER BY r.trx_wait_started LIMIT {MAX_WAITS}"""

LOCK_WAITS_P_S = f"""
SELECT r.trx_id, r.trx_mysql_thread_id, r.trx_query,
       b.trx_id, b.trx_mysql_thread_id, b.trx_query,
       CONCAT('`', rl.OBJECT_SCHEMA, '`.`', rl.OBJECT_NAME, '`'), rl.INDEX_NAME, rl.LOCK_MODE, bl.LOCK_MODE,
       r.trx_wait_started, TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW())
FROM performance_schema.data_lock_waits w
JOIN information_schema.innodb_trx r ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID
JOIN information_schema.innodb_trx b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID
LEFT JOIN performance_schema.data_locks rl ON rl.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID
LEFT JOIN performance_schema.data_locks bl ON bl.ENGINE_LOCK_ID = w.BLOCKING_ENGINE_LOCK_ID
ORDER BY r.trx_wait_started LIMIT {MAX_WAITS}"""

# TiDB: pessimistic lock waits from TiKV; the statements are digests (normalised text) and the table
# is in KEY_INFO's JSON. CLUSTER_TIDB_TRX: a blocking transaction may live on another TiDB server.
LOCK_WAITS_TIDB = f"""
SELECT w.TRX_ID, r.SESSION_ID, w.SQL_DIGEST_TEXT,
       w.CURRENT_HOLDING_TRX_ID, b.SESSION_ID, b.CURRENT_SQL_DIGEST_TEXT,
       w.KEY_INFO, w.SQL_DIGEST, b.CURRENT_SQL_DIGEST,
       r.WAITING_START_TIME, TIMESTAMPDIFF(MICROSECOND, r.WAITING_START_TIME, NOW(6)) / 1000000
FROM information_schema.DATA_LOCK_WAITS w
LEFT JOIN information_schema.CLUSTER_TIDB_TRX r ON r.ID = w.TRX_ID
LEFT JOIN information_schema.CLUSTER_TIDB_TRX b ON b.ID = w.CURRENT_HOLDING_TRX_ID
LIMIT {MAX_WAITS}"""

WAITS_SQL = f"""
SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT, MAX_TIMER_WAIT
FROM performance_schema.events_waits_summary_global_by_event_name
WHERE COUNT_STAR > 0 ORDER BY SUM_TIMER_WAIT DESC LIMIT {MAX_EVENTS}"""

# The zone InnoDB's monitor prints its times in: the server process's own (SYSTEM), as an offset.
SYSTEM_OFFSET_SQL = (
    "SELECT TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), CONVERT_TZ(UTC_TIMESTAMP(), '+00:00', 'SYSTEM'))"
)


@dataclass
class Taken:
    """One capture of one snapshot: where its file is and how it went (the driver makes the record)."""

    kind: str
    rel: str  # the file, relative to the archive root
    host: str  # the DbTarget's name
    command: str
    phase: str  # start | end | during (the lock waits polled between them)
    status: str = "skipped"  # ok | unavailable | failed | timed_out | skipped
    reason: str = "not taken"
    started_at: str | None = None
    ended_at: str | None = None
    tz: str | None = None  # the server's zone, where the capture prints local times (innodb_status)
    redacted: bool = False  # the login's password stood in the text and was masked (design.md)


class _Unavailable(Exception):
    """The server has no such thing, or the user may not read it: recorded as `unavailable`."""


def _iso(t: float) -> str:
    """Epoch seconds as ISO UTC to the millisecond, rounded as the JSON's `t` is (isoformat truncates)."""
    ms = round(t * 1000)
    stamp = datetime.fromtimestamp(ms // 1000, UTC).replace(microsecond=ms % 1000 * 1000)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _head(kind: str, t: float) -> dict[str, Any]:
    t = round(t, 3)
    return {"snapshot": kind, "ts": _iso(t), "t": t}


def host_dir(target: DbTarget) -> str:
    """The server's folder under `db/`: its name, a socket path's slashes made underscores (a path
    inside the archive has no empty or absolute parts)."""
    return target.name.strip("/").replace("/", "_") or "db"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def flavor(variables: dict[str, str]) -> tuple[str, int]:
    """(`mariadb` | `mysql` | `tidb`, major version) from SHOW GLOBAL VARIABLES' `version`."""
    version = variables.get("version", "")
    comment = variables.get("version_comment", "")
    major = int(m[1]) if (m := re.match(r"(\d+)\.", version)) else 0
    if "TiDB" in version or "TiDB" in comment:
        return "tidb", major
    if "MariaDB" in version or "mariadb" in comment.lower():
        return "mariadb", major
    return "mysql", major


def read_variables(cur: Any) -> dict[str, str]:
    cur.execute("SHOW GLOBAL VARIABLES")
    return {_text(name) or "": _text(value) or "" for name, value in cur.fetchall()}


def read_innodb_status(cur: Any, server: tuple[str, int]) -> str:
    """The monitor's text as the client's `\\G` prints the Status field (parsers/innodb_status reads it)."""
    if server[0] == "tidb":
        raise _Unavailable("TiDB has no InnoDB: SHOW ENGINE INNODB STATUS does not apply")
    cur.execute("SHOW ENGINE INNODB STATUS")
    row = cur.fetchone()
    text = _text(row[2]) if row is not None and len(row) >= 3 else None
    if not text or "INNODB MONITOR OUTPUT" not in text:
        raise _Unavailable("the server returned no InnoDB monitor output")
    return text if text.endswith("\n") else text + "\n"


def system_tz(cur: Any) -> str | None:
    """The server process's zone as perfkit names it (UTC, Etc/GMT-8), or None when not a whole hour."""
    try:
        cur.execute(SYSTEM_OFFSET_SQL)
        minutes = _int(cur.fetchone()[0])
        if minutes is None or minutes % 60:
            return None
        return time_zone(f"{'+' if minutes >= 0 else '-'}{abs(minutes) // 60}")
    except (pymysql.MySQLError, ConfigError, TypeError):
        return None


def read_lock_waits(cur: Any, server: tuple[str, int], variables: dict[str, str]) -> tuple[str, list[dict]]:
    """(the table read, one dict per lock wait: the waiting and the blocking transaction)."""
    kind, major = server
    if kind == "tidb":
        cur.execute(LOCK_WAITS_TIDB)
        return "information_schema.data_lock_waits", [_tidb_wait(row) for row in cur.fetchall()]
    if kind == "mysql" and major >= 8:
        # 8.0 removed information_schema.innodb_lock_waits: performance_schema is the only place
        if variables.get("performance_schema", "").upper() not in ("ON", "1"):
            raise _Unavailable(
                "performance_schema is OFF: MySQL 8.0 lists lock waits only in data_lock_waits"
            )
        source, sql = "performance_schema.data_lock_waits", LOCK_WAITS_P_S
    else:
        source, sql = "information_schema.innodb_lock_waits", LOCK_WAITS_I_S
    cur.execute(sql)
    return source, [_innodb_wait(row) for row in cur.fetchall()]


def _innodb_wait(row: Sequence[Any]) -> dict[str, Any]:
    return {
        "waiting_trx_id": _text(row[0]),
        "waiting_thread_id": _int(row[1]),
        "waiting_query": _text(row[2]),
        "blocking_trx_id": _text(row[3]),
        "blocking_thread_id": _int(row[4]),
        "blocking_query": _text(row[5]),
        "table": _text(row[6]),
        "index": _text(row[7]),
        "waiting_lock_mode": _text(row[8]),
        "blocking_lock_mode": _text(row[9]),
        "wait_started": _text(row[10]),
        "wait_age_s": _float(row[11]),
    }


def _tidb_wait(row: Sequence[Any]) -> dict[str, Any]:
    table = index = None
    with contextlib.suppress(ValueError, TypeError):
        info = json.loads(_text(row[6]) or "")
        if isinstance(info, dict) and info.get("table_name"):
            table = f"`{info.get('db_name', '')}`.`{info['table_name']}`"
            index = info.get("index_name")
    return {
        "waiting_trx_id": _text(row[0]),
        "waiting_thread_id": _int(row[1]),
        "waiting_query": _text(row[2]),
        "blocking_trx_id": _text(row[3]),
        "blocking_thread_id": _int(row[4]),
        "blocking_query": _text(row[5]),
        "table": table,
        "index": index,
        "waiting_lock_mode": None,
        "blocking_lock_mode": None,
        "wait_started": _text(row[9]),
        "wait_age_s": _float(row[10]),
        "waiting_digest": _text(row[7]),
        "blocking_digest": _text(row[8]),
    }


def read_waits(cur: Any, server: tuple[str, int], variables: dict[str, str]) -> list[dict]:
    if server[0] == "tidb":
        raise _Unavailable("TiDB keeps no performance_schema wait summaries")
    if variables.get("performance_schema", "").upper() not in ("ON", "1"):
        why = "MariaDB's default" if server[0] == "mariadb" else "set at server start"
        raise _Unavailable(
            f"performance_schema is OFF ({why}; start the server with --performance-schema=ON)"
        )
    cur.execute(WAITS_SQL)
    return [
        {
            "event_name": _text(r[0]),
            "count_star": _int(r[1]),
            "sum_timer_wait": _int(r[2]),
            "max_timer_wait": _int(r[3]),
        }
        for r in cur.fetchall()
    ]


def _classify(exc: BaseException, redact: Callable[[str], str]) -> tuple[str, str]:
    """(status, reason) for what a query raised."""
    code = exc.args[0] if isinstance(exc, pymysql.MySQLError) and exc.args else None
    text = redact(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, _Unavailable):
        return "unavailable", str(exc)
    if code in _DENIED:
        return "unavailable", f"the user may not read it: {text}"
    if code in _ABSENT:
        return "unavailable", f"the server does not have it: {text}"
    if _TIMEOUT.search(str(exc)) or isinstance(exc, TimeoutError):
        return "timed_out", f"no answer within {READ_TIMEOUT_S:g} s: {text}"
    return "failed", text


def _connection_lost(exc: BaseException) -> bool:
    """Whether the connection is gone (the server died, a read timed out), not just one query refused."""
    if isinstance(exc, pymysql.err.InterfaceError | OSError):
        return True
    code = exc.args[0] if isinstance(exc, pymysql.MySQLError) and exc.args else None
    return code in (2003, 2006, 2013, 2055)


def planned(target: DbTarget, step: str, phase: str) -> list[Taken]:
    """The captures of one snapshot of one server, not yet taken."""
    return [
        Taken(kind, f"db/{host_dir(target)}/{step}/{stem}-{phase}.{ext}", target.name, command, phase)
        for kind, stem, command in PARTS
        for ext in ("txt" if kind == "innodb_status" else "jsonl",)
    ]


def take(
    target: DbTarget,
    root: Path,
    step: str,
    phase: str,
    *,
    connect: Callable[[], Any] | None = None,
    keep: Callable[[], bool] = lambda: True,
) -> list[Taken]:
    """One snapshot of one server into `root/db/<host>/<step>/`; a `Taken` per capture, whatever happened.

    Args:
        connect: makes the connection (tests pass a fake); default `target.connect` with a short read
            timeout.
        keep: asked before each file is written; False once the driver stopped waiting for this
            snapshot, so a late answer never lands after its manifest record was made.
    """
    parts = {p.kind: p for p in planned(target, step, phase)}
    t0 = time.monotonic()
    try:
        conn = (connect or (lambda: target.connect(database=False, read_timeout=READ_TIMEOUT_S)))()
    except Exception as exc:  # noqa: BLE001 - whatever the driver raised, every part says so; the run goes on
        status, reason = _classify(exc, target.redact)
        for p in parts.values():
            p.status = "timed_out" if status == "timed_out" else "failed"
            p.reason = f"cannot connect: {reason}"
        return list(parts.values())
    variables: dict[str, str] = {}
    server = ("mysql", 0)
    dead = ""  # why the connection cannot be used any more

    def run(part: Taken, read: Callable[[Any], str | dict]) -> None:
        nonlocal dead
        if dead:
            part.status, part.reason = "skipped", dead
            return
        if time.monotonic() - t0 > BUDGET_S:
            part.status, part.reason = "skipped", f"the snapshot's {BUDGET_S:g} s budget was spent"
            return
        started = time.time()
        part.started_at = _iso(started)
        try:
            with conn.cursor() as cur:
                content = read(cur)
        except (_Unavailable, pymysql.MySQLError, OSError) as exc:
            part.status, part.reason = _classify(exc, target.redact)
            if _connection_lost(exc):
                dead = f"the connection was lost in an earlier query ({part.kind})"
            part.ended_at = _iso(time.time())
            return
        part.ended_at = _iso(time.time())
        if not keep():
            part.status, part.reason = "timed_out", f"not done within {JOIN_S:g} s"
            return
        path = root / part.rel
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if isinstance(content, dict):
            content = json.dumps({**_head(part.kind, started), **content}, separators=(",", ":")) + "\n"
        masked = target.redact(content)  # a statement in a lock wait may quote it
        part.redacted = masked != content
        path.write_text(masked, encoding="utf-8")
        path.chmod(0o600)
        part.status, part.reason = "ok", ""

    def variables_read(cur: Any) -> dict:
        nonlocal variables, server
        variables = read_variables(cur)
        server = flavor(variables)
        return {"server": variables.get("version"), "variables": variables}

    def innodb_read(cur: Any) -> str:
        text = read_innodb_status(cur, server)
        parts["innodb_status"].tz = system_tz(cur)
        return text

    def locks_read(cur: Any) -> dict:
        source, waits = read_lock_waits(cur, server, variables)
        return {"server": variables.get("version"), "source": source, "waits": waits}

    def waits_read(cur: Any) -> dict:
        events = read_waits(cur, server, variables)
        return {"server": variables.get("version"), "source": "performance_schema", "events": events}

    try:
        run(parts["mysql_variables"], variables_read)
        run(parts["innodb_status"], innodb_read)
        run(parts["mysql_lock_waits"], locks_read)
        run(parts["mysql_waits"], waits_read)
    finally:
        with contextlib.suppress(Exception):  # a dead connection may fail to close
            conn.close()
    return list(parts.values())


def poll_lock_waits(
    targets: Sequence[DbTarget],
    root: Path,
    step: str,
    until: float,
    *,
    stop: threading.Event,
    keep: Callable[[], bool],
    every: float = POLL_S,
) -> list[Taken]:
    """Lock waits every `every` s until `until` (monotonic) or `stop`, one JSON line a poll, into
    `db/<host>/<step>/lock_waits-during.jsonl` (phase `during`) on each server.

    Why, beside the start and end snapshots: a row-lock wait of a hot-row load lasts milliseconds, so
    two instants a step usually see none even while several transactions wait on average; a second's
    poll over the whole step catches the blockers that keep coming back. One connection per server,
    the query as the snapshot's; a server whose poll fails stops being polled, the reason recorded.
    """
    polls: list[tuple[DbTarget, Taken, Any, tuple[str, int], dict[str, str]]] = []
    for target in targets:
        part = Taken(
            "mysql_lock_waits",
            f"db/{host_dir(target)}/{step}/lock_waits-during.jsonl",
            target.name,
            f"lock waits every {every:g} s: waiting and blocking transactions",
            "during",
        )
        try:
            conn = target.connect(database=False, read_timeout=READ_TIMEOUT_S)
            with conn.cursor() as cur:
                variables = read_variables(cur)
        except Exception as exc:  # noqa: BLE001 - recorded for this server; the run goes on
            status, reason = _classify(exc, target.redact)  # as `take` says it
            part.status = "timed_out" if status == "timed_out" else "failed"
            part.reason = f"cannot connect: {reason}"
            polls.append((target, part, None, ("mysql", 0), {}))
            continue
        polls.append((target, part, conn, flavor(variables), variables))
    try:
        while time.monotonic() < until and not stop.is_set():
            for i, (target, part, conn, server, variables) in enumerate(polls):
                if conn is None:
                    continue
                started = time.time()
                try:
                    with conn.cursor() as cur:
                        source, waits = read_lock_waits(cur, server, variables)
                except (_Unavailable, pymysql.MySQLError, OSError) as exc:
                    part.status, part.reason = _classify(exc, target.redact)
                    with contextlib.suppress(Exception):
                        conn.close()
                    polls[i] = (target, part, None, server, variables)
                    continue
                if not keep():
                    return [p[1] for p in polls]
                line = {**_head(part.kind, started), "server": variables.get("version"), "source": source}
                text = json.dumps({**line, "waits": waits}, separators=(",", ":")) + "\n"
                masked = target.redact(text)
                path = root / part.rel
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write(masked)
                path.chmod(0o600)
                part.redacted = part.redacted or masked != text
                part.started_at = part.started_at or _iso(started)
                part.ended_at = _iso(time.time())
                part.status, part.reason = "ok", ""
            stop.wait(max(0.0, min(every, until - time.monotonic())))
    finally:
        for _target, _part, conn, _server, _variables in polls:
            if conn is not None:
                with contextlib.suppress(Exception):  # a dead connection may fail to close
                    conn.close()
    for _target, part, conn, _server, _variables in polls:
        if conn is not None and part.status == "skipped":
            part.reason = "the step ended before the first poll"
    return [p[1] for p in polls]


class StepSnapshots(threading.Thread):
    """The snapshots of one step, timed against its load: `start()` as the load starts, `finish()`
    once it has ended (every `Taken`; the ones not done in time say timed_out). Between the start and
    end snapshots, the lock waits are polled every second (`poll_lock_waits`)."""

    def __init__(
        self, targets: Sequence[DbTarget], root: Path, step: str, load_s: float, lead: float = LEAD_S
    ):
        super().__init__(name=f"db-snapshot-{step}", daemon=True)
        self.targets, self.root, self.step = list(targets), root, step
        self.load_s = load_s
        self.lead = min(lead, load_s / 4)
        self.taken: list[Taken] = []
        self._ended = threading.Event()
        self._keep = True

    def run(self) -> None:
        t0 = time.monotonic()
        for phase, at in (("start", self.lead), ("end", self.load_s - self.lead)):
            self._ended.wait(max(0.0, t0 + at - time.monotonic()))
            for target in self.targets:
                self.taken += take(target, self.root, self.step, phase, keep=lambda: self._keep)
            if phase == "start":
                until = t0 + self.load_s - self.lead
                self.taken += poll_lock_waits(
                    self.targets, self.root, self.step, until, stop=self._ended, keep=lambda: self._keep
                )

    def finish(self, timeout: float = JOIN_S) -> list[Taken]:
        self._ended.set()
        self.join(timeout)
        self._keep = False
        taken = list(self.taken)
        done = {(t.host, t.phase, t.kind) for t in taken}
        for phase in ("start", "end"):
            for target in self.targets:
                for t in planned(target, self.step, phase):
                    if (t.host, t.phase, t.kind) not in done:
                        t.status, t.reason = "timed_out", f"not done within {timeout:g} s"
                        taken.append(t)
        return taken

"""mysql_status: perfkit's MySQL/MariaDB sampler (collectors/mysql_sampler.py), one JSON object per line.

Reads `db/<host>/global_status.jsonl`: `SHOW GLOBAL STATUS` and a `SHOW PROCESSLIST` summary taken
every second by `perfkit run`. Counters become per-second rates (the difference to the previous good
sample over the time between them; NaN on the first row, after a failed sample, and where a counter
went backwards — a server restart resets them). Gauges are kept as read.

Columns (SCHEMA): timestamp (UTC), host, uptime_s, questions_s, queries_s, com_select_s,
com_insert_s, com_update_s, com_delete_s, com_commit_s, com_rollback_s, innodb_rows_read_s,
innodb_rows_inserted_s, innodb_rows_updated_s, innodb_rows_deleted_s, innodb_data_fsyncs_s,
innodb_os_log_fsyncs_s, innodb_row_lock_waits_s, innodb_row_lock_time_ms_s, innodb_deadlocks_s
(MariaDB), created_tmp_disk_tables_s, slow_queries_s, aborted_connects_s, the buffer pool's
innodb_buffer_pool_read_requests_s / _reads_s / _wait_free_s and innodb_pages_read_s, the redo log's
innodb_log_waits_s / _write_requests_s / _writes_s and innodb_os_log_written_s (bytes), connections_s,
connection_errors_max_connections_s, threads_created_s; gauges as read: threads_running,
threads_connected, innodb_row_lock_current_waits (transactions waiting on a row lock),
innodb_buffer_pool_pages_free / _data / _total, innodb_checkpoint_age / _max_age (bytes, MariaDB),
innodb_data_pending_fsyncs, innodb_os_log_pending_fsyncs (MySQL), max_used_connections,
threadpool_threads, threadpool_idle_threads (MariaDB); processlist_active, threads_running_avg (the
sampler's 10 Hz mean over the second before the line, without its own thread; else threads_running
- 1), server_rt_ms (Little's law: threads_running_avg / questions_s), error (the reason a sample
failed, else NA).

Questions counts the statements clients sent (not those inside stored programs), so server_rt_ms is
the mean time a client statement spent inside the server, queueing included.

Sessions by state (the database's own "where sessions wait", Oracle ASH's nearest MySQL equivalent):
from each sample's `processlist.by_state` rows ([Command, State, the session's transaction state or
null, count]; the sampler's own session left out), one column per class of SESSION_CLASSES,
`sessions_<class>` (sessions in it at the sample), and per lock kind of LOCK_KINDS
`sessions_lock_<kind>` (their sum is sessions_lock); NaN in older captures without by_state and on
failed samples. `session_class` is the one mapping (its sources and reasons above SESSION_CLASSES).
Tested on: tests/fixtures/mysql_status/ (see README.md there).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from ._common import T_LIMIT_S, Lines, Source, coerce, empty_frame

KIND = "mysql_status"
# float() fails on an int of 309 digits or more: only a line with such a run of digits is checked value
# by value (`_overflows`), so the usual line costs one regex scan.
_LONG_DIGITS = re.compile(r"\d{300}")
COUNTERS = {
    "uptime_s": None,  # a gauge of sorts: kept as read
    "questions_s": "Questions",
    "queries_s": "Queries",
    "com_select_s": "Com_select",
    "com_insert_s": "Com_insert",
    "com_update_s": "Com_update",
    "com_delete_s": "Com_delete",
    "com_commit_s": "Com_commit",
    "com_rollback_s": "Com_rollback",
    "innodb_rows_read_s": "Innodb_rows_read",
    "innodb_rows_inserted_s": "Innodb_rows_inserted",
    "innodb_rows_updated_s": "Innodb_rows_updated",
    "innodb_rows_deleted_s": "Innodb_rows_deleted",
    "innodb_data_fsyncs_s": "Innodb_data_fsyncs",
    "innodb_os_log_fsyncs_s": "Innodb_os_log_fsyncs",
    "innodb_row_lock_waits_s": "Innodb_row_lock_waits",
    "innodb_row_lock_time_ms_s": "Innodb_row_lock_time",
    "innodb_deadlocks_s": "Innodb_deadlocks",  # MariaDB; MySQL counts none in its status
    "created_tmp_disk_tables_s": "Created_tmp_disk_tables",
    "slow_queries_s": "Slow_queries",
    "aborted_connects_s": "Aborted_connects",
    # the buffer pool: logical reads, the ones that went to disk, waits for a free page
    "innodb_buffer_pool_read_requests_s": "Innodb_buffer_pool_read_requests",
    "innodb_buffer_pool_reads_s": "Innodb_buffer_pool_reads",
    "innodb_buffer_pool_wait_free_s": "Innodb_buffer_pool_wait_free",
    "innodb_pages_read_s": "Innodb_pages_read",
    # the redo log: waits for log buffer space, writes, bytes written
    "innodb_log_waits_s": "Innodb_log_waits",
    "innodb_log_write_requests_s": "Innodb_log_write_requests",
    "innodb_log_writes_s": "Innodb_log_writes",
    "innodb_os_log_written_s": "Innodb_os_log_written",  # bytes per second
    # connections: accepted, refused at max_connections, new threads
    "connections_s": "Connections",
    "connection_errors_max_connections_s": "Connection_errors_max_connections",
    "threads_created_s": "Threads_created",
}
GAUGES = {
    "threads_running": "Threads_running",
    "threads_connected": "Threads_connected",
    "innodb_row_lock_current_waits": "Innodb_row_lock_current_waits",
    "innodb_buffer_pool_pages_free": "Innodb_buffer_pool_pages_free",
    "innodb_buffer_pool_pages_data": "Innodb_buffer_pool_pages_data",
    "innodb_buffer_pool_pages_total": "Innodb_buffer_pool_pages_total",
    "innodb_checkpoint_age": "Innodb_checkpoint_age",  # bytes (MariaDB; MySQL: INNODB STATUS only)
    "innodb_checkpoint_max_age": "Innodb_checkpoint_max_age",  # bytes (MariaDB)
    "innodb_data_pending_fsyncs": "Innodb_data_pending_fsyncs",
    "innodb_os_log_pending_fsyncs": "Innodb_os_log_pending_fsyncs",  # MySQL; MariaDB 10.5+ has none
    "max_used_connections": "Max_used_connections",
    "threadpool_threads": "Threadpool_threads",  # MariaDB's pool (0 or absent: a thread per connection)
    "threadpool_idle_threads": "Threadpool_idle_threads",
}
# Sessions by state: what a performance engineer reads at a glance, a FIXED set of classes.
#
# Sources: MariaDB's "General Thread States" (https://mariadb.com/kb/en/general-thread-states/, 10.11)
# and MySQL 8.0's (https://dev.mysql.com/doc/refman/8.0/en/general-thread-states.html), the Command
# values of both, and what the lab's MariaDB 10.11 printed with the waits induced by hand (an UPDATE
# behind another transaction's row lock shows "Updating"; DML behind FLUSH TABLES WITH READ LOCK or
# BACKUP STAGE shows "Waiting for backup lock" since 10.4, not "Waiting for global read lock"; DML
# behind a pending ALTER TABLE or LOCK TABLES ... WRITE shows "Waiting for table metadata lock").
#
# - idle: Command Sleep (a connection between statements), Daemon and the replication dump/worker
#   commands (the server's own standing threads), and State "User sleep" (SELECT SLEEP(): the client
#   asked to wait, no resource is contended). Not active: left out of every active class.
# - lock: waiting for another session. Row locks are invisible in State (the waiter shows
#   "Updating"/"Sending data"/"executing"), so the sampler reads the session's transaction state
#   (`_TRX_STATES`) and a session in a lock wait is `lock` (kind `row`) whatever its State. The other
#   kinds come from State.
# - commit: the commit path waiting on the redo/binary log.
# - io: states the manuals tie to the disk. Page reads into the buffer pool are NOT visible here: a
#   statement reading pages from disk shows an executing state (cpu); the OS thread states beside this
#   table tell CPU from IO.
# - cpu: the executing stages. Read it as "executing inside the server", not as proof of CPU.
# - net: a client slow to read its result or to send the statement.
# - other: anything else — "Opening tables" (the manual: fast unless an ALTER TABLE or LOCK TABLE
#   prevents it, or table_open_cache is too small: the table cache, neither a disk wait nor a lock
#   the processlist can name), "System lock"/"Table lock" (the name of a call, "a very general
#   state"), an empty State on a running command, a state this list does not know (MySQL 5.x/8.x
#   states not below, a future version's), and TiDB's: its State is the session's status flags
#   ("in transaction; autocommit"), not a wait; only TIDB_TRX's LockWaiting/Committing say more.
SESSION_CLASSES = ("lock", "commit", "io", "cpu", "net", "other", "idle")
ACTIVE_CLASSES = SESSION_CLASSES[:-1]
LOCK_KINDS = ("row", "metadata", "global", "table", "user")
_IDLE_COMMANDS = frozenset(
    ("sleep", "daemon", "binlog dump", "binlog dump gtid", "slave_io", "slave_sql", "slave_worker")
)
# (class, lock kind) -> its States, lowercased
_STATE_GROUPS: dict[tuple[str, str | None], tuple[str, ...]] = {
    # DDL, a long transaction holding a table, FLUSH TABLES
    ("lock", "metadata"): (
        "waiting for table metadata lock", "waiting for schema metadata lock",
        "waiting for stored function metadata lock", "waiting for stored procedure metadata lock",
        "waiting for stored package body metadata lock", "waiting for trigger metadata lock",
        "waiting for event metadata lock", "waiting for tablespace metadata lock", "waiting for table flush",
    ),
    # FLUSH TABLES WITH READ LOCK, BACKUP STAGE, LOCK INSTANCE FOR BACKUP
    ("lock", "global"): (
        "waiting for global read lock", "waiting for backup lock", "waiting for commit lock",
    ),
    # LOCK TABLES, MyISAM/Aria/MEMORY table locks
    ("lock", "table"): ("waiting for table level lock", "locked", "waiting for table lock"),
    ("lock", "user"): ("user lock", "waiting for user lock"),  # GET_LOCK()
    # "waiting for handler commit": MySQL 8.0, a transaction waits to commit; "commit", "commit implicit":
    # MariaDB; "query end" (after the statement, before freeing items): where MySQL 5.7 and MariaDB sit in
    # binlog group commit and the durable flush under a slow log (InnoDB's trx_state "COMMITTING" and
    # TiDB's "Committing" are commit too: `_TRX_STATES`). MariaDB's "updating status": set at every
    # statement's end (sql_parse.cc, before the response), where since 10.6 a commit waits for its redo
    # log flush: InnoDB hands the flush over as the connection's pending operation
    # (trx_flush_log_if_needed_low, `innodb_thd_increment_pending_ops`) and the server answers the
    # client only once it completed. Seen here: mariadbd held at 40 write IOPS, 16 threads, 15 of 16
    # sessions in it while the thread sampler had them on futexes; a read-only load, 1 in 11.
    ("commit", None): (
        "waiting for handler commit", "commit", "commit implicit", "waiting for prior transaction to commit",
        "query end", "updating status",
    ),
    # "closing tables": flushing changes ("will only persist if the disk is full or under extremely high
    # load"); temporary tables converted to or copied on disk
    ("io", None): (
        "closing tables", "copying to tmp table on disk", "converting heap to ondisk",
        "converting heap to aria", "converting heap to myisam",
    ),
    ("net", None): (
        "writing to net", "reading from net", "sending to client", "waiting for net, reading from net",
        "waiting for net, writing to net",
    ),
    # MySQL 8.0.17+ "executing", earlier and MariaDB "sending data" (whose description warns it "tend[s]
    # to perform large amounts of disk access": executing in the engine, on a CPU or reading pages), the
    # statement's other stages; "copying to tmp table" is in memory
    ("cpu", None): (
        "executing", "sending data", "updating", "update", "updating main table", "updating reference tables",
        "deleting from main table", "deleting from reference tables", "searching rows for update",
        "sorting result", "sorting for group", "sorting for order", "sorting index", "creating sort index",
        "copying to tmp table", "copying to group table", "creating tmp table", "removing duplicates",
        "removing tmp table", "statistics", "optimizing", "preparing", "init", "init for update", "starting",
        "checking permissions", "after opening tables", "filling schema table", "end", "freeing items",
        "cleaning up", "reset for next command", "unlocking tables", "insert", "delete", "end of update loop",
    ),
    ("idle", None): ("user sleep",),
}  # fmt: skip
_STATES = {state: group for group, states in _STATE_GROUPS.items() for state in states}
_TRX_STATES: dict[str, tuple[str, str | None]] = {
    "lock wait": ("lock", "row"),  # InnoDB's information_schema.INNODB_TRX trx_state
    "lockwaiting": ("lock", "row"),  # TiDB's information_schema.TIDB_TRX STATE
    "committing": ("commit", None),  # both
}


def session_class(command: object, state: object, trx: object = None) -> tuple[str, str | None]:
    """(class of SESSION_CLASSES, lock kind of LOCK_KINDS or None) of one session (see above)."""
    cmd = command.strip().lower() if isinstance(command, str) else ""
    if cmd in _IDLE_COMMANDS:
        return ("idle", None)
    trx_state = trx.strip().lower() if isinstance(trx, str) else ""
    if trx_state in _TRX_STATES:
        return _TRX_STATES[trx_state]
    text = state.strip().lower() if isinstance(state, str) else ""
    return _STATES.get(text, ("other", None))


SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    **{col: "float64" for col in COUNTERS},
    **{col: "float64" for col in GAUGES},
    "processlist_active": "float64",
    **{f"sessions_{c}": "float64" for c in SESSION_CLASSES},
    **{f"sessions_lock_{k}": "float64" for k in LOCK_KINDS},
    "threads_running_avg": "float64",
    "server_rt_ms": "float64",
    "error": "string",
}


def sniff(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith('{"ts":') and ('"status":' in first or '"error":' in first)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse sampler output. `tz` is unused: the sampler writes UTC.

    Raises:
        ParseError: a line that is not a sampler object, unless it is the cut-off last line.
    """
    lines = Lines(source, KIND)
    obs: list[dict] = []
    pending: tuple[int, str, str] | None = None  # a bad line and why: fatal unless it is the last
    for line_no, line in lines:
        if not line.strip():
            continue
        if pending is not None:
            raise lines.error(*pending)
        try:
            o = json.loads(line)
            if not isinstance(o, dict) or "t" not in o or not ("status" in o or "error" in o):
                raise ValueError
            t = float(o["t"])
        except (ValueError, TypeError, OverflowError):  # OverflowError: float() of a 400-digit int
            pending = (line_no, line, "not a mysql_status sampler line")
            continue
        if not abs(t) < T_LIMIT_S:  # NaN and inf too
            pending = (line_no, line, f"sample time t={o['t']!r} outside the years 1678-2261")
            continue
        if _LONG_DIGITS.search(line) and _overflows(o):
            pending = (line_no, line, "a number too large for a float")
            continue
        obs.append(o)
    dropped = 1 if pending is not None else 0
    if obs and not lines.last_complete and pending is None:
        obs.pop()
        dropped = 1
    df = _frame(obs, host) if obs else empty_frame(SCHEMA)
    df.attrs["dropped_lines"] = dropped
    return df


def _overflows(o: dict) -> bool:
    """Whether a number `_frame` reads from this sample is an int that float() cannot hold."""
    status = o.get("status") if isinstance(o.get("status"), dict) else {}
    plist = o.get("processlist") if isinstance(o.get("processlist"), dict) else {}
    by_state = plist.get("by_state") if isinstance(plist.get("by_state"), list) else []
    counts = [row[3] for row in by_state if isinstance(row, list) and len(row) == 4]
    for value in [*status.values(), plist.get("active"), o.get("threads_running_avg"), *counts]:
        if isinstance(value, int):
            try:
                float(value)
            except OverflowError:
                return True
    return False


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else np.nan


def _frame(obs: list[dict], host: str | None) -> pd.DataFrame:
    t = np.array([float(o["t"]) for o in obs])
    status = [o.get("status") if isinstance(o.get("status"), dict) else None for o in obs]
    good = np.array([s is not None for s in status])

    def read(name: str) -> np.ndarray:
        return np.array([_number((s or {}).get(name)) for s in status])

    # A rate needs this sample and the previous one to be good, and time to have moved forward.
    prev_good = np.concatenate([[False], good[:-1]])
    dt = np.diff(t, prepend=np.nan)
    usable = good & prev_good & (dt > 0)
    data: dict[str, object] = {
        "timestamp": pd.to_datetime(np.round(t * 1000).astype("int64"), unit="ms", utc=True),
        "host": pd.array([host] * len(obs), dtype="string"),
    }
    for col, name in COUNTERS.items():
        if name is None:  # uptime_s
            data[col] = read("Uptime")
        else:
            delta = np.diff(read(name), prepend=np.nan)
            data[col] = np.where(usable & (delta >= 0), delta / np.where(dt > 0, dt, np.nan), np.nan)
    for col, name in GAUGES.items():
        data[col] = read(name)
    lists = [o.get("processlist") if isinstance(o.get("processlist"), dict) else {} for o in obs]
    data["processlist_active"] = [_number(p.get("active")) for p in lists]
    data.update(_sessions(lists, good))
    # the mean of the 10 Hz readings (already without the reader), else the one reading minus the
    # sampler's own SHOW STATUS
    averaged = np.array([_number(o.get("threads_running_avg")) for o in obs])
    running = np.where(np.isfinite(averaged), averaged, np.asarray(data["threads_running"], dtype=float) - 1)
    data["threads_running_avg"] = running
    qps = np.asarray(data["questions_s"], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        data["server_rt_ms"] = np.where(qps > 0, np.clip(running, 0, None) / qps * 1000, np.nan)
    errors = [o.get("error") if isinstance(o.get("error"), str) else None for o in obs]
    data["error"] = pd.array(errors, dtype="string")
    return coerce(pd.DataFrame(data), SCHEMA)


def from_mysqladmin(frame: pd.DataFrame, host: str | None) -> pd.DataFrame | None:
    """A `mysqladmin extended-status -i N` series (parsers/mysqladmin.py, long form) as this sampler's
    frame: its blocks read as samples of SHOW GLOBAL STATUS, through the same rates as ours (no
    processlist: the sessions columns are NaN; threads_running_avg is Threads_running less mysqladmin's
    own connection). None when its samples have no time (the dataset dates pt-stalk's from the
    collection's start; a bare capture has none)."""
    if frame.empty or "timestamp" not in frame.columns or frame["timestamp"].isna().all():
        return None
    rows = frame.dropna(subset=["timestamp"])
    obs = []
    for (_, t), block in rows.groupby(["sample", "timestamp"], sort=True):
        values = block["absolute"].astype("float64")
        status = {str(k): float(v) for k, v in zip(block["variable"], values, strict=True) if v == v}
        obs.append({"t": pd.Timestamp(t).timestamp(), "status": status})
    return _frame(obs, host) if obs else None


def _sessions(lists: list[dict], good: np.ndarray) -> dict[str, np.ndarray]:
    """sessions_<class> and sessions_lock_<kind> per sample from its by_state rows; NaN without them."""
    cols = [f"sessions_{c}" for c in SESSION_CLASSES] + [f"sessions_lock_{k}" for k in LOCK_KINDS]
    out = {c: np.full(len(lists), np.nan) for c in cols}
    for i, plist in enumerate(lists):
        rows = plist.get("by_state")
        if not good[i] or not isinstance(rows, list):
            continue
        for c in cols:
            out[c][i] = 0.0
        for row in rows:
            # [command, state, trx state or null, count]; a malformed row is left out, not guessed
            if not (isinstance(row, list) and len(row) == 4):
                continue
            n = _number(row[3])
            if not n >= 0:
                continue
            cls, kind = session_class(row[0], row[1], row[2])
            out[f"sessions_{cls}"][i] += n
            if kind is not None:
                out[f"sessions_lock_{kind}"][i] += n
    return out

"""mysql_lock_waits: who blocks whom, one row per lock wait per snapshot.

Reads perfkit's per-step snapshot (parsers/_snapshots.py, `db/<host>/<step>/lock_waits-<phase>.jsonl`)
as `"source":TABLE,"waits":[{...}, ...]`, `source` naming the server tables read:

- `information_schema.innodb_lock_waits` (MariaDB, MySQL 5.7): joined with `innodb_trx` (both
  transactions) and `innodb_locks` (the table, index and modes of both locks);
- `performance_schema.data_lock_waits` (MySQL 8.0): joined with `data_locks` and
  `information_schema.innodb_trx`;
- `information_schema.data_lock_waits` (TiDB's pessimistic locks): joined with `cluster_tidb_trx`;
  the statements are digest texts, the table comes from KEY_INFO.

A snapshot in which nothing waits has `"waits":[]` and gives no row. Where the user may not read
these tables (they need the PROCESS privilege) there is no file: the capture's manifest record says
`unavailable` and why.

Columns (SCHEMA), one row per waiting transaction per snapshot (NA where the server has no such field):
- timestamp (UTC, when the snapshot was taken), host (the `host` argument), source (string, above)
- waiting_trx_id, blocking_trx_id (string): the transactions' ids
- waiting_thread_id, blocking_thread_id (Int64): their connections (`SHOW PROCESSLIST` Id; TiDB's
  session id)
- waiting_query, blocking_query (string): the statement each runs now (NA: none, e.g. a blocker idle
  in its transaction or between statements)
- table (string): `` `db`.`table` `` of the lock waited for; index_name (string): its index
  (`PRIMARY`, NA for a table lock)
- waiting_lock_mode, blocking_lock_mode (string): `X`, `S`, `X,GAP`, `X,REC_NOT_GAP`, ...
- wait_started (string): when the wait began, in the server's own clock as it printed it
- wait_age_s (float64, s): how long it had waited when the snapshot was taken (whole seconds on
  MariaDB and MySQL, whose innodb_trx keeps trx_wait_started to the second)
- waiting_digest, blocking_digest (string): the statements' digests (TiDB)

A wait that is not an object of scalars is a ParseError naming its line.
Tested on: tests/fixtures/mysql_lock_waits/ (README.md there: MariaDB 10.11, real).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import _snapshots
from ._common import Source

KIND = "mysql_lock_waits"
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "source": "string",
    "waiting_trx_id": "string",
    "waiting_thread_id": "Int64",
    "waiting_query": "string",
    "blocking_trx_id": "string",
    "blocking_thread_id": "Int64",
    "blocking_query": "string",
    "table": "string",
    "index_name": "string",
    "waiting_lock_mode": "string",
    "blocking_lock_mode": "string",
    "wait_started": "string",
    "wait_age_s": "float64",
    "waiting_digest": "string",
    "blocking_digest": "string",
}
# A wait's text fields: its string columns past host and source, each under the column's name but
# index_name, which the snapshot calls `index` (a column `index` would hide DataFrame.index)
_TEXT = {
    column: "index" if column == "index_name" else column
    for column, dtype in SCHEMA.items()
    if dtype == "string" and column not in ("host", "source")
}
_INT64_MAX = 2**63 - 1


def sniff(text: str) -> bool:
    return _snapshots.sniff_kind(text, KIND)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse lock-wait snapshots. `tz` is unused: snapshots are in UTC (`wait_started` stays as printed).

    Raises:
        ParseError: a line that is not a mysql_lock_waits snapshot, or a wait that does not read.
    """
    return _snapshots.frame(source, KIND, "waits", SCHEMA, _wait, "a lock wait", host)


def _wait(wait: object) -> dict:
    if not isinstance(wait, dict):
        raise ValueError(wait)
    row = {column: _text(wait.get(key)) for column, key in _TEXT.items()}
    row["waiting_thread_id"] = _thread(wait.get("waiting_thread_id"))
    row["blocking_thread_id"] = _thread(wait.get("blocking_thread_id"))
    row["wait_age_s"] = _age(wait.get("wait_age_s"))
    return row


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # an id the server gave as a number
    raise ValueError(value)


def _thread(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _INT64_MAX:
        raise ValueError(value)
    return value


def _age(value: object) -> float:
    if value is None:
        return np.nan
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(value)
    return float(value)

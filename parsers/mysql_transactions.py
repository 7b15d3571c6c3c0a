"""mysql_transactions: `SELECT * FROM information_schema.INNODB_TRX\\G` snapshots (pt-stalk's
`-transactions`), one row per open InnoDB transaction per snapshot.

Each second of a collection pt-stalk 3.x appends three vertical results (parsers/_vertical.py):
INNODB_TRX (`trx_id`, `trx_state`, `trx_started`, ...), INNODB_LOCKS (`lock_id`, ...) and
INNODB_LOCK_WAITS (`requesting_trx_id`, ...), each printing nothing when empty. The INNODB_TRX rows
are read; the locks and lock waits are known and left out (the `-lock-waits` file joins them already:
parsers/ptstalk_lock_waits.py). A `1. row` of INNODB_TRX starts a snapshot. The file prints no time
and skips the seconds with no transaction: `timestamp` is NaT (perfkit/ptstalk.py dates every snapshot
at its collection's start) and `snapshot` (0, 1, ...) tells them apart.

Columns (SCHEMA): timestamp, host, snapshot (Int64), trx_id (string), state (string: `RUNNING`,
`LOCK WAIT`, `ROLLING BACK`, `COMMITTING`), started (UTC: trx_started, printed in the server's clock,
read in `tz`), wait_started (UTC, NaT when not waiting), thread_id (Int64: trx_mysql_thread_id),
query (string, NA when between statements: idle in its transaction or about to commit), rows_locked,
rows_modified, tables_locked, lock_structs (float64), isolation (string).

Rows of another shape are skipped as blocks and counted (`attrs["skipped"]`); a time or a count that
does not read is a ParseError naming the row.
Tested on: tests/fixtures/archives/ptstalk-mariadb/*-transactions (MariaDB 10.11, pt-stalk 3.2.1).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from . import _vertical
from ._common import Source, to_utc

KIND = "mysql_transactions"
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "snapshot": "Int64",
    "trx_id": "string",
    "state": "string",
    "started": "datetime64[ns, UTC]",
    "wait_started": "datetime64[ns, UTC]",
    "thread_id": "Int64",
    "query": "string",
    "rows_locked": "float64",
    "rows_modified": "float64",
    "tables_locked": "float64",
    "lock_structs": "float64",
    "isolation": "string",
}
_COUNTS = {
    "trx_rows_locked": "rows_locked",
    "trx_rows_modified": "rows_modified",
    "trx_tables_locked": "tables_locked",
    "trx_lock_structs": "lock_structs",
}
_KNOWN = ("lock_id", "requesting_trx_id")  # INNODB_LOCKS, INNODB_LOCK_WAITS: not read (see above)


def sniff(text: str) -> bool:
    return _vertical.sniff_keys(text, ("trx_id", "trx_state", "trx_started"))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse INNODB_TRX snapshots; `tz` is the server's time zone (trx_started is in its clock).

    Raises:
        ParseError: a time or count that does not read, or nothing readable at all.
    """
    walk = _vertical.Samples(source, KIND, "not a row of pt-stalk's transactions queries")
    rows: list[dict] = []
    for row in walk:
        f = row.fields
        if "trx_id" not in f or "trx_state" not in f:
            if not any(k in f for k in _KNOWN):
                walk.skip(row, "not an INNODB_TRX row")
            continue
        snapshot = walk.take(row)
        try:
            record = {
                "snapshot": snapshot,
                "trx_id": f["trx_id"],
                "state": f["trx_state"],
                "started": _time(f.get("trx_started"), tz),
                "wait_started": _time(f.get("trx_wait_started"), tz),
                "thread_id": int(f["trx_mysql_thread_id"]) if f.get("trx_mysql_thread_id") else None,
                "query": f.get("trx_query"),
                "isolation": f.get("trx_isolation_level"),
                **{col: float(f[key]) if f.get(key) else np.nan for key, col in _COUNTS.items()},
            }
        except ValueError:
            raise walk.error(row, "a time or count that does not read") from None
        rows.append(record)
    return walk.frame(rows, SCHEMA, host=host)


def _time(text: str | None, tz: str) -> pd.Timestamp:
    if not text:
        return pd.NaT
    return to_utc(datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S"), tz)

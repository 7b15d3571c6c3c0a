"""ptstalk_lock_waits: pt-stalk's `-lock-waits` file, who blocks whom, in parsers/mysql_lock_waits.py's
frame (the same SCHEMA, `source` naming this file's query), so db.lock-contention's blockers read it.

Each second of a collection pt-stalk 3.x appends two results of `mysql -e '...\\G'` (vertical,
parsers/_vertical.py) on information_schema.INNODB_LOCK_WAITS joined with INNODB_TRX, INNODB_LOCKS
and PROCESSLIST, printing nothing when nothing waits:

1. per blocker: `who_blocks` (`thread 224 from localhost:52588`), `idle_in_trx`, `max_wait_time`,
   `num_waiters` — a summary of the rows of 2., used here only to tell snapshots apart;
2. per wait: `waiting_trx_id`, `waiting_thread`, `wait_time` (s), `waiting_query`,
   `waiting_table_lock` (`` `db`.`table` ``), `blocking_trx_id`, `blocking_thread`, `blocking_host`,
   `blocking_port`, `idle_in_trx` (s the blocker has slept in its transaction), `blocking_query`.

A snapshot starts at a `1. row` of 1., or of 2. not preceded by 1.'s rows. The file prints no time
and skips the seconds in which nothing waited, so a snapshot's second is unknown: `timestamp` is NaT
(perfkit/ptstalk.py dates every snapshot at its collection's start) and `snapshot` (0, 1, ...: an
extra column beside SCHEMA's) tells the snapshots apart. Rows of 2. map to: waiting_trx_id,
waiting_thread_id, wait_age_s, waiting_query, table, blocking_trx_id, blocking_thread_id,
blocking_query; index_name, lock modes, wait_started and digests are NA (this query does not ask).

Rows of another shape are skipped as blocks and counted (`attrs["skipped"]`); a thread id or wait
time that is no number is a ParseError naming the row.
Tested on: tests/fixtures/archives/ptstalk-mariadb/*-lock-waits (MariaDB 10.11, pt-stalk 3.2.1).
"""

from __future__ import annotations

import pandas as pd

from . import _vertical
from ._common import Source
from .mysql_lock_waits import SCHEMA as _WAITS

KIND = "ptstalk_lock_waits"
SOURCE = "pt-stalk lock-waits (information_schema.innodb_lock_waits)"
SCHEMA: dict[str, str] = {**_WAITS, "snapshot": "Int64"}
_FIELDS = {
    "waiting_trx_id": "waiting_trx_id",
    "waiting_query": "waiting_query",
    "waiting_table_lock": "table",
    "blocking_trx_id": "blocking_trx_id",
    "blocking_query": "blocking_query",
}
_NUMBERS = {
    "waiting_thread": ("waiting_thread_id", int),
    "blocking_thread": ("blocking_thread_id", int),
    "wait_time": ("wait_age_s", float),
}


def sniff(text: str) -> bool:
    return _vertical.sniff_keys(text, ("who_blocks",)) or _vertical.sniff_keys(
        text, ("waiting_trx_id", "waiting_thread", "wait_time")
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse pt-stalk's lock-waits file. `tz` is unused: the file prints no time.

    Raises:
        ParseError: a thread id or wait time that is no number, or nothing readable at all.
    """
    walk = _vertical.Samples(source, KIND, "not a row of pt-stalk's lock-waits queries")
    rows: list[dict] = []
    for row in walk:
        summary = "who_blocks" in row.fields
        if not summary and ("waiting_trx_id" not in row.fields or "blocking_trx_id" not in row.fields):
            walk.skip(row, "not a lock-wait row")
            continue
        snapshot = walk.take(row)
        walk.opened = summary  # the waits after a summary are in its snapshot
        if summary:
            continue
        record: dict = {"snapshot": snapshot, **{col: row.fields.get(key) for key, col in _FIELDS.items()}}
        try:
            for key, (col, cast) in _NUMBERS.items():
                value = row.fields.get(key)
                record[col] = None if value in (None, "") else cast(value)
        except ValueError:
            raise walk.error(row, f"a {key} that is no number") from None
        rows.append(record)
    return walk.frame(rows, SCHEMA, host=host, source=SOURCE)

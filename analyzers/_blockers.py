"""Who blocks most: the lock-wait snapshots (kind `mysql_lock_waits`) of one database inside a window,
grouped by the table waited on and the statement the blocking transaction runs.

A snapshot lists every transaction waiting on a lock at that instant with the one it waits for
(collectors/db_snapshot.py). Seen over a step's snapshots, the blocking statements that come up again
and again are the hot spot: the same `UPDATE ... WHERE id = ?` on the same table holding the rows
the others queue for. Statements are compared with their literals replaced by `?` (TiDB gives its
own digest text, used as it is), so `id = 5` and `id = 7` count as one statement. A blocker that runs
no statement (idle inside its transaction, or committing) is `IDLE`: the wait is on the client's
side of the transaction, not on any statement.

pt-stalk's `-lock-waits` (kind `ptstalk_lock_waits`, the same columns) is read alike: its snapshots
carry no second of their own (all dated at the collection's start), so they are told apart by their
`snapshot` number, and a capture window takes only its own collection's (`step`): collections overlap.

`db.lock-contention` puts the first few in its evidence ("the statements and tables that block most").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

from perfkit.dataset import Dataset

KIND = "mysql_lock_waits"
KINDS = (KIND, "ptstalk_lock_waits")  # perfkit's snapshots, pt-stalk's -lock-waits (the same columns)
IDLE = "(no statement: idle in its transaction or committing)"

_STRING = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"")
_NUMBER = re.compile(r"(?<![\w`.])[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w`])")
_LIST = re.compile(r"\(\s*\?(?:\s*,\s*\?)+\s*\)")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Blocker:
    """One blocking statement on one table, over the window's snapshots."""

    table: str | None  # `db`.`table` of the locks waited for (None: the server did not say)
    statement: str  # the blocker's statement with literals as `?`, its digest text (TiDB), or IDLE
    blocking: int  # blocking transactions seen running it, counted once per snapshot
    waiting: int  # waits on it: waiting transactions, counted once per snapshot
    longest_wait_s: float  # the longest wait on it (NaN: no wait age given)
    snapshots: int  # snapshots it was seen in
    waiting_statement: str = IDLE  # the statement most of its waiters run, literals as `?`


def statement_shape(text: object) -> str:
    """A statement with its literals replaced by `?` and its spacing collapsed; IDLE for none."""
    if not isinstance(text, str) or not text.strip():  # None, NA
        return IDLE
    shape = _STRING.sub("?", text)
    shape = _NUMBER.sub("?", shape)
    shape = _LIST.sub("(?)", shape)  # IN (1, 2, 3) and IN (4, 5) alike
    return _SPACE.sub(" ", shape).strip()


def blockers(
    ds: Dataset, host: str, start: pd.Timestamp, end: pd.Timestamp, step: str | None = None
) -> list[Blocker]:
    """The blocking statements and tables of `host`'s lock-wait snapshots taken in [start, end] (and
    captured in `step` when given: pt-stalk's collections overlap in time), the most waited-on first
    (then the longest wait). Empty when no snapshot in the window saw a wait."""
    frames = [
        c.frame
        for kind in KINDS
        for c in ds.of(kind)
        if c.host == host and not c.frame.empty and (step is None or c.step == step)
    ]
    if not frames:
        return []
    waits = pd.concat(frames, ignore_index=True)
    waits = waits[(waits["timestamp"] >= start) & (waits["timestamp"] <= end)]
    if waits.empty:
        return []
    # TiDB's blocking_query is its digest text, already in this shape: shaping it again changes nothing
    waits = waits.assign(
        statement=[statement_shape(q) for q in waits["blocking_query"].astype("object")],
        waited=[statement_shape(q) for q in waits["waiting_query"].astype("object")],
        table_key=waits["table"].astype("object").fillna(""),
    )
    # a snapshot is its time; pt-stalk's, all dated at the collection's start, also their number
    snap = ["timestamp", "snapshot"] if "snapshot" in waits.columns else ["timestamp"]
    out = []
    for (table, stmt), group in waits.groupby(["table_key", "statement"], sort=False):
        ages = group["wait_age_s"].dropna()
        out.append(
            Blocker(
                table=str(table) or None,
                statement=str(stmt),
                blocking=len(group[[*snap, "blocking_trx_id"]].drop_duplicates()),
                waiting=len(group[[*snap, "waiting_trx_id"]].drop_duplicates()),
                longest_wait_s=float(ages.max()) if len(ages) else float("nan"),
                snapshots=len(group[snap].drop_duplicates()),
                waiting_statement=str(group["waited"].value_counts().index[0]),
            )
        )
    # most waits first, then the longest wait (an unknown one last)
    return sorted(
        out, key=lambda b: (-b.waiting, -b.longest_wait_s if math.isfinite(b.longest_wait_s) else 1.0)
    )

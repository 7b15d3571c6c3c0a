"""mysql_processlist: `SHOW FULL PROCESSLIST\\G` samples (pt-stalk's `-processlist`), one row per session.

pt-stalk appends the client's vertical output (parsers/_vertical.py) once a second: rows `Id`,
`User`, `Host`, `db`, `Command`, `Time`, `State`, `Info` (MariaDB adds `Progress`), numbered from 1
in each sample, so a `1. row` starts the next sample. The file prints no time: `timestamp` is NaT and
`sample` (0, 1, ...) orders the samples (perfkit/ptstalk.py dates sample k at the collection's start +
k s, pt-stalk's loop). A `TS <epoch>` stamp before a sample, where a script writes one, dates it.

Columns (SCHEMA), one row per session per sample:
- timestamp (UTC; NaT without a stamp), host (the `host` argument), sample (Int64)
- id (Int64): the connection id; user, client (the `Host` column: `host:port` or `localhost`), db
- command (string): `Sleep`, `Query`, `Daemon`, ...; time_s (float64): seconds in it
- state (string, "" when empty), info (string: the statement, NA for none)

`by_class` turns the samples into the DB sampler's sessions by state (parsers/mysql_status.py
`session_class`, its classes and lock kinds): what analyzers/db.py reads for a pt-stalk window.

A row with another set of keys (another statement's result in the file) is skipped as a block and
counted (`attrs["skipped"]`), as is any line outside a row but blank ones; an `Id` or `Time` that is
no number is a ParseError naming the row.
Tested on: tests/fixtures/archives/ptstalk-mariadb/*-processlist (MariaDB 10.11, pt-stalk 3.2.1).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from . import _vertical
from ._common import Source
from .mysql_status import LOCK_KINDS, SESSION_CLASSES, session_class

KIND = "mysql_processlist"
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "sample": "Int64",
    "id": "Int64",
    "user": "string",
    "client": "string",
    "db": "string",
    "command": "string",
    "time_s": "float64",
    "state": "string",
    "info": "string",
}
_ID = re.compile(r"\d{1,18}", re.ASCII)
_KEYS = ("Id", "User", "Host", "db", "Command", "Time", "State", "Info")
_COLUMNS = dict(zip(_KEYS, ("id", "user", "client", "db", "command", "time_s", "state", "info"), strict=True))
# Statements that read the server's state: pt-stalk's own (this SHOW FULL PROCESSLIST, mysqladmin's
# SHOW GLOBAL STATUS, its SELECT SQL_NO_CACHE on INFORMATION_SCHEMA, SHOW ENGINE INNODB STATUS ...),
# left out of the sessions by state as the DB sampler leaves out its own session.
MONITOR = re.compile(r"^\s*(?:SHOW\b|SELECT\s+SQL_NO_CACHE\b)", re.IGNORECASE)


def sniff(text: str) -> bool:
    return _vertical.sniff_keys(text, ("Id", "User", "Host", "db", "Command"))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse processlist samples. `tz` is unused: the file prints no time (a `TS` stamp is epoch).

    Raises:
        ParseError: an Id or Time that does not read, or nothing readable at all.
    """
    walk = _vertical.Samples(source, KIND, "not a row of SHOW PROCESSLIST\\G", dated=True)
    rows: list[dict] = []
    for row in walk:
        if not {"Id", "Command"} <= row.fields.keys():
            walk.skip(row, "not a processlist row")
            continue
        record: dict = {"timestamp": walk.stamp, "sample": walk.take(row)}
        record.update({col: row.fields.get(key) for key, col in _COLUMNS.items()})
        try:
            if not _ID.fullmatch(record["id"] or ""):  # NULL, a sign, past Int64: no connection id
                raise ValueError
            record["id"] = int(record["id"])
            record["time_s"] = float(record["time_s"]) if record["time_s"] not in (None, "") else np.nan
        except ValueError:
            raise walk.error(row, "an Id or Time that is no number") from None
        rows.append(record)
    return walk.frame(rows, SCHEMA, host=host)


def by_class(frame: pd.DataFrame, lock_wait: dict[int, set[int]] | None = None) -> pd.DataFrame:
    """One row per sample (timestamp, sample): `sessions_<class>` and `sessions_lock_<kind>` counts,
    the DB sampler's columns (parsers/mysql_status.py), the monitoring statements (MONITOR) left out.

    `lock_wait`: sample -> the ids of the sessions whose transaction was in LOCK WAIT then (INNODB_TRX,
    as the sampler joins it): a row-lock wait that the State shows only as `Updating`."""
    cols = [f"sessions_{c}" for c in SESSION_CLASSES] + [f"sessions_lock_{k}" for k in LOCK_KINDS]
    out = []
    for (sample, t), group in frame.groupby(["sample", "timestamp"], sort=True, dropna=False):
        counts = dict.fromkeys(cols, 0.0)
        waiting = (lock_wait or {}).get(int(sample), set())
        for sid, command, state, info in zip(
            group["id"], group["command"], group["state"], group["info"], strict=True
        ):
            if isinstance(info, str) and MONITOR.match(info):
                continue
            cls, kind = session_class(command, state, "LOCK WAIT" if sid in waiting else None)
            counts[f"sessions_{cls}"] += 1
            if kind is not None:
                counts[f"sessions_lock_{kind}"] += 1
        out.append({"timestamp": t, "sample": sample, **counts})
    return pd.DataFrame(out, columns=["timestamp", "sample", *cols])

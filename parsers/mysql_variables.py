"""mysql_variables: `SHOW GLOBAL VARIABLES` of a MySQL, MariaDB or TiDB server, one row per variable.

Reads two forms:

- perfkit's per-step snapshot (collectors/db_snapshot.py, `db/<host>/<step>/variables-<phase>.jsonl`):
  one JSON object per snapshot, `{"snapshot":"mysql_variables","ts":ISO,"t":EPOCH_S,"server":VERSION,
  "variables":{NAME: VALUE, ...}}`, values as the server returned them (strings);
- the client's batch output, `mysql -B -e 'SHOW GLOBAL VARIABLES'` (or `mariadb -B`, pt-stalk's
  `variables` file): a `Variable_name<TAB>Value` header, then one `name<TAB>value` line per variable.
  It carries no time: `timestamp` is NaT.

Columns (SCHEMA), one row per variable per snapshot, in the server's order:
- timestamp (UTC): when the snapshot was taken (`t`); host (the `host` argument)
- name (string): the variable as the server spells it (`max_connections`, `innodb_buffer_pool_size`)
- value (string): as the server printed it (`151`, `ON`, `/var/lib/mysql/`, an empty string)
- number (float64): the value when it is a plain decimal number (`151`, `100.000000`, `-1`); NaN
  otherwise (`ON`/`OFF` too: a switch is not a quantity; sizes are bytes as the server prints them)

Bad input (a line that is neither form, a variable that is not a name and a scalar) is a ParseError
naming the line; a snapshot line cut off mid-write at the end is dropped (`attrs["dropped_lines"]`).
Tested on: tests/fixtures/mysql_variables/ (see README.md there: MariaDB 10.11, real).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from . import _snapshots
from ._common import Lines, Source, coerce, empty_frame, head

KIND = "mysql_variables"
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "name": "string",
    "value": "string",
    "number": "float64",
}
_BATCH_HEADER = "Variable_name\tValue"
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def sniff(text: str) -> bool:
    return _snapshots.sniff_kind(text, KIND) or text.lstrip("\n").startswith(_BATCH_HEADER + "\n")


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse variable snapshots or the client's batch output. `tz` is unused: snapshots are in UTC.

    Raises:
        ParseError: a line of neither form, or a variable whose name or value does not read.
    """
    if head(source, 64).lstrip("\n").startswith(_BATCH_HEADER):
        rows, dropped = _batch(Lines(source, KIND))
    else:
        snaps, dropped, lines = _snapshots.read(source, KIND, "variables", dict)
        rows = []
        for snap in snaps:
            for name, value in snap.body.items():
                if not _NAME.fullmatch(name) or not (value is None or isinstance(value, str | int | float)):
                    raise lines.error(snap.line_no, snap.line, f"variable {name!r} is not a name and a value")
                rows.append((snap.timestamp, name, None if value is None else str(value)))
    df = _frame(rows, host) if rows else empty_frame(SCHEMA)
    df.attrs["dropped_lines"] = dropped
    return df


def _batch(lines: Lines) -> tuple[list[tuple], int]:
    rows: list[tuple] = []
    seen_header = False
    for line_no, line in lines:
        if not line.strip():
            continue
        if not seen_header:
            if line != _BATCH_HEADER:
                raise lines.error(line_no, line, "not the `Variable_name<TAB>Value` header")
            seen_header = True
            continue
        name, tab, value = line.partition("\t")
        if not tab or not _NAME.fullmatch(name):
            raise lines.error(line_no, line, "not a `name<TAB>value` line of SHOW GLOBAL VARIABLES")
        rows.append((pd.NaT, name, value))
    if rows and not lines.last_complete:  # the client was cut while printing it: the value may be cut
        rows.pop()
        return rows, 1
    return rows, 0


def number(value: str | None) -> float:
    """The value as a number when it is a plain decimal one, else NaN (`ON`, a path, a list)."""
    if value is None or not _NUMBER.fullmatch(value.strip()):
        return np.nan
    return float(value)


def _frame(rows: list[tuple], host: str | None) -> pd.DataFrame:
    values = [r[2] for r in rows]
    data = {
        "timestamp": pd.to_datetime(pd.Series([r[0] for r in rows], dtype="object"), utc=True),
        "host": pd.array([host] * len(rows), dtype="string"),
        "name": pd.array([r[1] for r in rows], dtype="string"),
        "value": pd.array(values, dtype="string"),
        "number": np.array([number(v) for v in values], dtype="float64"),
    }
    return coerce(pd.DataFrame(data), SCHEMA)

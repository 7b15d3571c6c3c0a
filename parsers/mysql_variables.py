"""mysql_variables: `SHOW GLOBAL VARIABLES` of a MySQL, MariaDB or TiDB server, one row per variable.

Reads:
- perfkit's per-step snapshot (parsers/_snapshots.py, `db/<host>/<step>/variables-<phase>.jsonl`) with
  `"variables":{NAME: VALUE, ...}`, values as the server returned them (strings);
- the client's batch output, `mysql -B -e 'SHOW GLOBAL VARIABLES'` (or `mariadb -B`, pt-stalk's
  `variables` file): a `Variable_name<TAB>Value` header, then one `name<TAB>value` line per variable;
- pt-stalk's `-variables`: a blank line, the title `SHOW GLOBAL VARIABLES`, a blank line, then the
  batch output; pt-stalk's per-thread tables after the blank line that ends it (each under a
  `select * from performance_schema...` title; empty on MariaDB) are no variables of the server:
  skipped and counted (`attrs["skipped"]`);
- the batch output without its header, `mysql -ss -e 'SHOW VARIABLES'` (pt-mysql-summary's
  `mysql-variables`): read when the first line is `name<TAB>...`; sniffed when every one of the first
  lines is `lowercase_name<TAB>value` and at least two of the names are ones every server has
  (`max_connections`, `datadir`, ...: SHOW STATUS's names are capitalised, so its -ss output is not
  claimed). A line with no tab (pt-mysql-summary's own `pt-summary-internal-now   ...` lines after
  the variables, a client's warning) is no variable: skipped and counted; a line with a tab whose
  name does not read is still a ParseError.
The batch forms carry no time: `timestamp` is NaT.

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
from ._common import Lines, Skips, Source, head, records_frame

KIND = "mysql_variables"
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "name": "string",
    "value": "string",
    "number": "float64",
}
_BATCH_HEADER = "Variable_name\tValue"
_TITLE = "SHOW GLOBAL VARIABLES"  # pt-stalk's line above the batch output
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADERLESS = re.compile(r"[a-z_][a-z0-9_]*\t")  # the first line of `mysql -ss` output
_SNIFF_ROW = re.compile(r"[a-z_][a-z0-9_]*\t[^\t]*")
# variables every MySQL/MariaDB server has (5.0 on): two of them among the first lines of a
# headerless name<TAB>value file make it SHOW VARIABLES rather than any other two-column table
_KNOWN = frozenset({
    "autocommit", "back_log", "basedir", "binlog_format", "character_set_server", "datadir", "hostname",
    "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "innodb_log_file_size",
    "interactive_timeout", "key_buffer_size", "log_bin", "max_allowed_packet", "max_connections", "port",
    "read_only", "server_id", "socket", "sql_mode", "table_open_cache", "tmpdir", "version", "wait_timeout",
})  # fmt: skip


def sniff(text: str) -> bool:
    start = text.lstrip("\n")
    return (
        _snapshots.sniff_kind(text, KIND)
        or start.startswith(_BATCH_HEADER + "\n")
        or start.startswith(f"{_TITLE}\n\n{_BATCH_HEADER}\n")
        or _sniff_ss(start)
    )


def _sniff_ss(text: str) -> bool:
    """`mysql -ss` SHOW VARIABLES: the first lines all `name<TAB>value`, two well-known names."""
    lines = text.split("\n")[:41]
    lines.pop()  # cut by the sniffed head, or the empty string after the last newline
    names = [m.group().partition("\t")[0] for m in map(_SNIFF_ROW.fullmatch, lines) if m]
    return len(lines) >= 3 and len(names) == len(lines) and len(_KNOWN.intersection(names)) >= 2


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse variable snapshots or the client's batch output. `tz` is unused: snapshots are in UTC.

    Raises:
        ParseError: a line of neither form, or a variable whose name or value does not read.
    """
    start = head(source, 256).lstrip("\n")
    skips = Skips()
    titled = start.startswith(_TITLE + "\n")
    headerless = _HEADERLESS.match(start) is not None
    if titled or headerless or start.startswith(_BATCH_HEADER):
        lines = Lines(source, KIND)
        rows, dropped = _batch(lines, skips, header=not headerless, titled=titled)
        skips.refuse_if_nothing_read(len(rows), lines)
    else:
        snaps, dropped, lines = _snapshots.read(source, KIND, "variables", dict)
        rows = []
        for snap in snaps:
            for name, value in snap.body.items():
                if not _NAME.fullmatch(name) or not (value is None or isinstance(value, str | int | float)):
                    raise lines.error(snap.line_no, snap.line, f"variable {name!r} is not a name and a value")
                rows.append((snap.timestamp, name, None if value is None else str(value)))
    records = [
        {"timestamp": t, "name": name, "value": value, "number": number(value)} for t, name, value in rows
    ]
    df = records_frame(records, SCHEMA, host=host)
    df.attrs["dropped_lines"] = dropped
    df.attrs["skipped"] = skips
    return df


def _batch(lines: Lines, skips: Skips, header: bool, titled: bool) -> tuple[list[tuple], int]:
    rows: list[tuple] = []
    # the lines above the variables, each with why another line there is refused
    preamble = [(_TITLE, f"not pt-stalk's `{_TITLE}` title")] if titled else []
    if header:
        preamble.append((_BATCH_HEADER, "not the `Variable_name<TAB>Value` header"))
    ended = False
    for line_no, line in lines:
        if ended:  # pt-stalk's per-thread tables after the variables
            if line.strip():
                skips.add(line_no, line, "pt-stalk's per-thread table after SHOW GLOBAL VARIABLES: not read")
            continue
        if not line.strip():
            ended = titled and bool(rows)
            continue
        if preamble:
            expected, reason = preamble.pop(0)
            if line != expected:
                raise lines.error(line_no, line, reason)
            continue
        name, tab, value = line.partition("\t")
        if not tab:  # not a name<TAB>value line at all: pt-mysql-summary's own line, a warning
            skips.add(line_no, line, "not a `name<TAB>value` line (no tab): not a variable")
            continue
        if not _NAME.fullmatch(name):
            raise lines.error(line_no, line, "not a `name<TAB>value` line of SHOW GLOBAL VARIABLES")
        rows.append((pd.NaT, name, value))
    if rows and not lines.last_complete and not ended:  # cut while printing it: the value may be cut
        rows.pop()
        return rows, 1
    return rows, 0


def number(value: str | None) -> float:
    """The value as a number when it is a plain decimal one, else NaN (`ON`, a path, a list)."""
    if value is None or not _NUMBER.fullmatch(value.strip()):
        return np.nan
    return float(value)

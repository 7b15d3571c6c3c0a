"""mysqladmin: `mysqladmin extended-status` boxes (MariaDB `mariadb-admin`, MySQL), in long form.

Reads the stdout of

    mysqladmin [-uUSER] extended-status                       one absolute block
    mysqladmin [-uUSER] extended-status -i INTERVAL -c N      N absolute blocks
    mysqladmin [-uUSER] extended-status -r -i INTERVAL -c N   first block absolute, later blocks the
                                                              difference to the previous block

(MariaDB 10.11 `mysqladmin Ver 10.0` tested; MySQL's layout is the same). Each block is a box:
`+---+---+`, `| Variable_name | Value |`, `+---+---+`, one `| name | value |` row per variable,
`+---+---+`, then a blank line before the next block. The output carries no time of day and no flag
saying whether `-r` was given, so:

- **-r is detected**: `Uptime` dropping from one block to the next (a difference of about the
  interval after the first block's absolute uptime), or a known text/fractional variable
  (`Compression`, `Query_time`, ...) printed as an integer. Pass `relative=True/False` to say it.
- **-r destroys non-integers**: mysqladmin runs every value of a -r capture through `strtoull`,
  so `OFF` prints as `0` and `Query_time 2.18` as `2` in every block, the first included. Known
  text/fractional variables (`_NOT_INTEGER` below) are NaN there, never that fake 0; unknown ones
  cannot be recognised. Take one plain `extended-status` block too when they matter.
- **Rates** use `interval_s` (the `-i` given, default 1 s): the per-second rate of a counter is
  the difference between consecutive samples / interval_s. With -r mysqladmin printed that
  difference; without -r it is computed from consecutive absolute blocks. mysqladmin sleeps
  `interval` between polls, so the real spacing is slightly longer (the query time): rates are
  a little high, by well under 1 % at -i1 on an idle box.
- Counters vs gauges: the counters of perfkit's sampler (parsers/mysql_status.py `COUNTERS`)
  plus the families below (`Com_*`, `Handler_*`, `Bytes_*`, `Innodb_rows_*`, ...); its `GAUGES` and
  every other variable are gauges (no rate: NaN). A negative counter difference (FLUSH STATUS,
  restart, a counter wrap) is NaN, not a negative rate.

Schema (long form: one row per block and variable):

| column | dtype | unit / meaning |
|---|---|---|
| host | string | the `host` argument (no timestamp column: mysqladmin prints no time) |
| sample | Int64 | block index 0, 1, 2 ... |
| variable | string | `Variable_name` as printed |
| value | float64 | the number printed (a -r difference in later -r blocks); NaN for text |
| text | string | the value when not a number (`ON`, `OFF`, `NULL`, empty, status text); else NA |
| relative | bool | True when `value` is a difference to the previous block (-r, sample > 0) |
| absolute | float64 | the variable's value at that sample (with -r: first block + printed differences) |
| counter | bool | whether the variable is a cumulative counter (has a rate) |
| per_s | float64 | counters: change since the previous sample / interval_s; NaN on sample 0, gauges, text |

`df.attrs`: `runs` (number of blocks), `relative` (bool, as detected or given), `interval_s`,
`dropped_lines` (a last line cut off mid-write), `notes`.
Tested on: tests/fixtures/mysqladmin/ (see README.md there).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ._common import Lines, Source, coerce, empty_frame, feed_lines
from .mysql_status import COUNTERS as _SAMPLER_COUNTERS
from .mysql_status import GAUGES as _SAMPLER_GAUGES

KIND = "mysqladmin"
SCHEMA: dict[str, str] = {
    "host": "string",
    "sample": "Int64",
    "variable": "string",
    "value": "float64",
    "text": "string",
    "relative": "bool",
    "absolute": "float64",
    "counter": "bool",
    "per_s": "float64",
}
_KNOWN_COUNTERS = frozenset(name for name in _SAMPLER_COUNTERS.values() if name)
_KNOWN_GAUGES = frozenset(_SAMPLER_GAUGES.values())
# Cumulative families (MariaDB 10.11 / MySQL 8 server status docs). Anything else is a gauge:
# a missing rate is NaN, a wrong one would mislead.
_COUNTER_FAMILY = re.compile(
    r"^(?:Com_|Handler_|Bytes_|Select_|Sort_|Created_tmp_|Feature_|Innodb_rows_|Innodb_dblwr_"
    r"|Innodb_data_(?:fsyncs|reads|writes|read|written)$|Innodb_os_log_(?:fsyncs|written)$"
    r"|Innodb_log_(?:writes|write_requests|waits)$|Innodb_pages_(?:created|read|written)$"
    r"|Innodb_row_lock_(?:waits|time)$|Innodb_buffer_pool_(?:read_requests|reads|write_requests"
    r"|pages_flushed|pages_lru_flushed|pages_made_young|pages_made_not_young|wait_free|read_ahead\w*)$"
    r"|Key_(?:read_requests|reads|write_requests|writes)$|Aborted_|Access_denied_errors$|Opened_"
    r"|Qcache_(?:hits|inserts|not_cached|lowmem_prunes)$|Table_locks_|Table_open_cache_(?:hits|misses|overflows)$"
    r"|Binlog_(?:commits|group_commits|bytes_written|cache_use|cache_disk_use|stmt_cache_use|stmt_cache_disk_use)$"
    r"|Rows_(?:read|sent|tmp_read)$|Connections$|Empty_queries$|Slow_queries$|Questions$|Queries$"
    r"|Busy_time$|Cpu_time$|Query_time$|Max_statement_time_exceeded$|Connection_errors_)"
)
# Text or fractional variables (MariaDB 10.11 as captured here, plus MySQL 8 ones): under -r
# mysqladmin prints them as a truncated integer (`OFF` -> 0), which must not pass for a value.
_NOT_INTEGER = frozenset(
    (
        "Binlog_snapshot_file",
        "Busy_time",
        "Compression",
        "Cpu_time",
        "Innodb_buffer_pool_dump_status",
        "Innodb_buffer_pool_load_status",
        "Innodb_buffer_pool_resize_status",
        "Innodb_buffer_pool_load_incomplete",
        "Innodb_have_lz4",
        "Innodb_have_lzo",
        "Innodb_have_lzma",
        "Innodb_have_bzip2",
        "Innodb_have_snappy",
        "Innodb_have_punch_hole",
        "Last_query_cost",
        "Max_memory_used",
        "Query_time",
        "Rpl_semi_sync_master_status",
        "Rpl_semi_sync_slave_status",
        "Rpl_status",
        "Slave_heartbeat_period",
        "Slave_running",
        "Ssl_cipher",
        "Ssl_cipher_list",
        "Ssl_server_not_after",
        "Ssl_server_not_before",
        "Ssl_session_cache_mode",
        "Ssl_version",
        "wsrep_cluster_capabilities",
        "wsrep_cluster_state_uuid",
        "wsrep_cluster_status",
        "wsrep_connected",
        "wsrep_provider_capabilities",
        "wsrep_provider_name",
        "wsrep_provider_vendor",
        "wsrep_provider_version",
        "wsrep_ready",
        "Rsa_public_key",
        "Caching_sha2_password_rsa_public_key",
        "Current_tls_ca",
        "Current_tls_capath",
        "Current_tls_cert",
        "Current_tls_cipher",
        "Current_tls_ciphersuites",
        "Current_tls_crl",
        "Current_tls_crlpath",
        "Current_tls_key",
        "Current_tls_version",
        "Innodb_redo_log_enabled",
        "Innodb_redo_log_read_only",
        "Innodb_redo_log_resize_status",
        "Mysqlx_address",
        "Mysqlx_socket",
        "Resource_group_supported",
        "Rpl_semi_sync_source_status",
        "Rpl_semi_sync_replica_status",
        "Tls_library_version",
    )
)
_BORDER = re.compile(r"^\+-+\+-+\+$")
_HEADER = re.compile(r"^\|\s*Variable_name\s*\|\s*Value\s*\|$")
# `| Innodb_buffer_pool_load_status | Buffer pool(s) load completed at 261123  7:49:50 |`:
# names have no blanks; a value may, and may be empty.
_ROW = re.compile(r"^\| (\S+) +\|(?: (.*?))? *\|$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_MESSAGE = re.compile(r"^(?:mysqladmin|mariadb-admin): ")


def sniff(text: str) -> bool:
    """A `+---+---+` border followed by the `| Variable_name | Value |` header."""
    lines = [ln.strip() for ln in text[:2048].splitlines() if ln.strip()][:2]
    return len(lines) == 2 and bool(_BORDER.match(lines[0])) and bool(_HEADER.match(lines[1]))


class _Reader:
    """Box walker: border -> header -> border -> rows -> border, then the next block."""

    def __init__(self) -> None:
        self.state = "none"  # "head": border seen; "sep": header seen; "rows": inside a block
        self.sample = -1
        self.seen: set[str] = set()
        self.names: list[str] = []
        self.values: list[str] = []
        self.samples: list[int] = []
        self.first_line: dict[int, int] = {}
        self.messages: list[str] = []
        self.dropped = 0

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        text = line.rstrip()
        if not text.strip():
            if self.state in ("head", "sep"):
                raise lines.error(line_no, line, "blank line inside a mysqladmin box header")
            return
        if _BORDER.match(text):
            if self.state in ("none", "sep"):
                self.state = "head" if self.state == "none" else "rows"
            elif self.state == "rows":
                self.state = "none"
            else:
                raise lines.error(line_no, line, "border where the `Variable_name | Value` header belongs")
            return
        if self.state == "head":
            if not _HEADER.match(text):
                raise lines.error(line_no, line, "not the `| Variable_name | Value |` header")
            self.sample += 1
            self.first_line[self.sample] = line_no
            self.seen = set()
            self.state = "sep"
            return
        if self.state == "rows":
            m = _ROW.match(text)
            if not m:
                raise lines.error(line_no, line, "malformed mysqladmin row")
            if m[1] in self.seen:
                raise lines.error(line_no, line, f"{m[1]} printed twice in one block")
            self.seen.add(m[1])
            self.names.append(m[1])
            self.values.append(m[2] or "")
            self.samples.append(self.sample)
            return
        if self.state == "none" and _MESSAGE.match(text):
            self.messages.append(text)
            return
        raise lines.error(line_no, line, "not mysqladmin extended-status output")

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        self.dropped += 1


def parse(
    source: Source,
    *,
    host: str | None = None,
    tz: str = "UTC",
    interval_s: float = 1.0,
    relative: bool | None = None,
) -> pd.DataFrame:
    """Parse `mysqladmin extended-status` boxes into one row per block and variable.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused: mysqladmin prints no time.
        interval_s: the `-i` interval the capture was taken with, for `per_s`.
        relative: whether `-r` was given; None detects it (module docstring).

    Raises:
        ParseError: a line that is not part of a box, a variable twice in one block, or -r that
            cannot be detected and was not given.
    """
    if not interval_s > 0:
        raise ValueError(f"interval_s must be > 0, not {interval_s!r}")
    reader = _Reader()
    lines = feed_lines(source, KIND, reader.feed, reader.cut_last)
    notes: list[str] = []
    if reader.messages:
        notes.append("mysqladmin said: " + " | ".join(reader.messages))
    if reader.state != "none" and reader.sample >= 0:
        notes.append(f"block {reader.sample} has no closing border (capture cut off)")
    blocks = reader.sample + 1
    if not reader.names:
        df = empty_frame(SCHEMA)
        df.attrs.update(
            runs=max(blocks, 0),
            relative=bool(relative),
            interval_s=interval_s,
            dropped_lines=reader.dropped,
            notes=notes,
        )
        return df
    raw = pd.DataFrame({"sample": reader.samples, "variable": reader.names, "printed": reader.values})
    numeric = raw["printed"].str.match(_NUMBER.pattern)
    raw["value"] = pd.to_numeric(raw["printed"].where(numeric), errors="coerce").astype("float64")
    raw["text"] = raw["printed"].where(~numeric)
    if relative is None:
        relative = _detect_relative(raw, blocks)
        if relative is None:
            raise lines.error(
                reader.first_line.get(1, 1), "", "cannot tell whether mysqladmin ran with -r: pass relative="
            )
    if relative:
        known = raw["variable"].isin(_NOT_INTEGER)
        raw.loc[known, "value"] = np.nan  # strtoull's 0 for OFF, 2 for 2.18: not the value
        raw.loc[known, "text"] = None
        if known.any():
            notes.append(
                f"-r capture: {raw.loc[known, 'variable'].nunique()} text or fractional variables NaN "
                "(mysqladmin -r prints them as truncated integers)"
            )
        complete = (
            raw if reader.state == "none" else raw[raw["sample"] < reader.sample]
        )  # a cut block is short
        if complete.groupby("sample")["variable"].agg(tuple).nunique() > 1:
            notes.append(
                "-r blocks list different variables: mysqladmin pairs rows by position (differences suspect)"
            )
    raw["relative"] = bool(relative) & (raw["sample"] > 0)
    raw = raw.sort_values(["variable", "sample"], kind="stable")
    by_var = raw.groupby("variable", sort=False)
    raw["absolute"] = by_var["value"].cumsum() if relative else raw["value"]
    raw["counter"] = raw["variable"].map(_is_counter).astype(bool)
    step = by_var["sample"].diff()
    change = by_var["absolute"].diff()
    rate = change / (step * interval_s)
    raw["per_s"] = rate.where(raw["counter"] & (change >= 0))
    raw = raw.sort_index()  # back to the order mysqladmin printed
    raw["host"] = host
    df = coerce(raw, SCHEMA)
    df.attrs.update(
        runs=blocks, relative=bool(relative), interval_s=interval_s, dropped_lines=reader.dropped, notes=notes
    )
    return df


def _is_counter(name: str) -> bool:
    if name in _KNOWN_GAUGES:
        return False
    return name in _KNOWN_COUNTERS or _COUNTER_FAMILY.match(name) is not None


def _detect_relative(raw: pd.DataFrame, blocks: int) -> bool | None:
    """True for -r, False for absolute blocks, None when the text does not say."""
    integer = raw["printed"].str.match(r"^-?\d+$")
    if not integer.all():
        return False  # -r prints integers only (text and fractions go through strtoull)
    if raw["variable"].isin(_NOT_INTEGER).any():
        return True  # a known text/fraction variable printed as an integer: strtoull did that
    if blocks < 2:
        return False  # one block is absolute either way
    uptime: Any = raw[raw["variable"] == "Uptime"].set_index("sample")["value"]
    if len(uptime) >= 2:
        return bool((uptime.diff().dropna() < 0).any())
    return None

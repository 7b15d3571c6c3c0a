"""mysqladmin: `mysqladmin extended-status` boxes (MariaDB `mariadb-admin`, MySQL), in long form.

Reads the stdout of

    mysqladmin [-uUSER] extended-status                       one absolute block
    mysqladmin [-uUSER] extended-status -i INTERVAL -c N      N absolute blocks
    mysqladmin [-uUSER] extended-status -r -i INTERVAL -c N   first block absolute, later blocks the
                                                              difference to the previous block

(MariaDB 10.11 `mysqladmin Ver 10.0` tested; MySQL's layout is the same; pt-stalk's `<stamp>-mysqladmin`
files are `mysqladmin ext -i1 -c N`, absolute blocks). Each block is a box: `+---+---+`,
`| Variable_name | Value |`, `+---+---+`, one `| name | value |` row per variable, `+---+---+`, then a
blank line. The output carries no time of day and no flag saying whether `-r` was given, so:

- **-r is detected**: `Uptime` dropping from one block to the next (a difference of about the
  interval after the first block's absolute uptime), or a known text/fractional variable
  (`Compression`, `Query_time`, ...) printed as an integer. Pass `relative=True/False` to say it.
- **-r destroys non-integers**: mysqladmin runs every value of a -r capture through `strtoull`,
  so `OFF` prints as `0` and `Query_time 2.18` as `2` in every block, the first included. Known
  text/fractional variables (`_NOT_INTEGER` below) are NaN there, never that fake 0; unknown ones
  cannot be recognised. Take one plain `extended-status` block too when they matter.
- **Rates** use `interval_s` (the `-i` given, default 1 s): a counter's per-second rate is the
  difference between consecutive samples (printed by -r, else computed from absolute blocks) /
  interval_s. mysqladmin sleeps `interval` between polls, so the real spacing is slightly longer (the
  query time): rates are a little high, by well under 1 % at -i1 on an idle box.
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

Reading: the table engine (parsers/_table.py) reads the rows in bulk, or row by row naming a bad one:
each `| name | value |` split at its `|` (`_table.Layout.sep`; a value holding a `|` keeps it), the
name one word after one blank, the value after one blank (or none), blanks after it dropped. Borders
and the `Variable_name` header are taken aside and checked in order (border, header, border, rows,
border); each distinct name and value is judged once. Any other line is an error, but mysqladmin's own
messages before a box (`mysqladmin: ...`) are kept in `notes`.

What it reads beside its rows: `EXTRAS` (below).
Tested on: tests/fixtures/mysqladmin/ (see README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._common import Extras, Source, coerce, empty_frame, text_column
from ._table import Block, Layout, Table
from .mysql_status import COUNTERS as _SAMPLER_COUNTERS
from .mysql_status import GAUGES as _SAMPLER_GAUGES


@dataclass(frozen=True)
class MysqladminExtras(Extras):
    """What mysqladmin reads beside its rows (see `_common.Extras`)."""

    runs: int = 0  # status blocks in the file
    relative: bool = False  # -r: values are per interval, not since start (detected, or `relative=`)
    interval_s: float | None = None  # -i seconds


EXTRAS = MysqladminExtras

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
_NOT_INTEGER = frozenset({
    "Binlog_snapshot_file", "Busy_time", "Compression", "Cpu_time", "Last_query_cost", "Max_memory_used",
    "Query_time", "Innodb_buffer_pool_dump_status", "Innodb_buffer_pool_load_status",
    "Innodb_buffer_pool_resize_status", "Innodb_buffer_pool_load_incomplete", "Innodb_have_lz4",
    "Innodb_have_lzo", "Innodb_have_lzma", "Innodb_have_bzip2", "Innodb_have_snappy",
    "Innodb_have_punch_hole", "Rpl_semi_sync_master_status", "Rpl_semi_sync_slave_status", "Rpl_status",
    "Slave_heartbeat_period", "Slave_running", "Ssl_cipher", "Ssl_cipher_list", "Ssl_server_not_after",
    "Ssl_server_not_before", "Ssl_session_cache_mode", "Ssl_version", "wsrep_cluster_capabilities",
    "wsrep_cluster_state_uuid", "wsrep_cluster_status", "wsrep_connected", "wsrep_provider_capabilities",
    "wsrep_provider_name", "wsrep_provider_vendor", "wsrep_provider_version", "wsrep_ready",
    # MySQL 8
    "Rsa_public_key", "Caching_sha2_password_rsa_public_key", "Current_tls_ca", "Current_tls_capath",
    "Current_tls_cert", "Current_tls_cipher", "Current_tls_ciphersuites", "Current_tls_crl",
    "Current_tls_crlpath", "Current_tls_key", "Current_tls_version", "Innodb_redo_log_enabled",
    "Innodb_redo_log_read_only", "Innodb_redo_log_resize_status", "Mysqlx_address", "Mysqlx_socket",
    "Resource_group_supported", "Rpl_semi_sync_source_status", "Rpl_semi_sync_replica_status",
    "Tls_library_version",
})  # fmt: skip
_BORDER = re.compile(r"^\+-+\+-+\+$")
_HEADER = re.compile(r"^\|\s*Variable_name\s*\|\s*Value\s*\|$")
# A row split at `|`: `'' | ' NAME   ' | ' VALUE   ' | tail`: names have no blanks; a value may hold
# blanks (`Buffer pool(s) load completed at 261123  7:49:50`), a `|`, or be empty.
_NAME_FIELD = re.compile(r"^ (\S+) +$")
_NUMBER = r"^-?\d+(?:\.\d+)?$"
_INTEGER = r"^-?\d+$"  # all -r prints
_MESSAGE = re.compile(r"^(?:mysqladmin|mariadb-admin): ")
_MALFORMED = "malformed mysqladmin row"
_FOREIGN = "not mysqladmin extended-status output"
_NOT_HEADER = "not the `| Variable_name | Value |` header"
_BLANK_IN_HEADER = "blank line inside a mysqladmin box header"


def sniff(text: str) -> bool:
    """A `+---+---+` border followed by the `| Variable_name | Value |` header."""
    lines = [ln.strip() for ln in text[:2048].splitlines() if ln.strip()][:2]
    return len(lines) == 2 and bool(_BORDER.match(lines[0])) and bool(_HEADER.match(lines[1]))


class _Mysqladmin:
    """The format for the table engine: every `|`, `+` and blank line goes in the runs of rows (no cut
    per box), rows read by one layout from the start (`first_layout`); borders (`+`) and the header
    (`Variable_name`) taken aside, where the boxes' order is checked. A problem found there is raised
    once the rows before it are read (the first error of the file is the one named)."""

    row_bytes = b"|+\n"
    header_words = ()
    aside_bytes = b"+"
    aside_words = (b"Variable_name",)
    first_layout = Layout("tttt", labels=(0,), sep="|")

    def __init__(self, source: Source):
        self.table = Table(source, KIND, self)
        self.table.odd_row = self._odd_row
        self.state = "none"  # "head": border seen; "sep": header seen; "rows": inside a block
        # per block (sample): its first border, header, the border under the header, the closing one
        self.opened: list[int] = []
        self.heads: list[int] = []
        self.tops: list[int] = []
        self.closes: list[int] = []
        self.problem: tuple[int, str, str] | None = None  # the first one the boxes' order shows
        self.messages: list[str] = []
        self.names: dict[str, int] = {}  # variable -> code, in order of first appearance
        self.texts: dict[str, int] = {}  # non-numeric value -> code
        self.parts: list[list[np.ndarray]] = []  # per chunk: sample, code, value, text code
        self.integers = True  # every value printed as an integer: what -r prints
        # the last sample's variable codes so far (a variable twice in it): codes, not keys, since the
        # key's width grows with each new variable name
        self.carry = (-1, np.empty(0, dtype=np.int64))

    def run(self) -> None:
        self.table.run()
        self._raise_before(None)

    # ------------------------------------------------------------ the boxes

    def aside(self, line_nos: np.ndarray, texts: list[str]) -> np.ndarray:
        """Borders and the header where a box expects it, in order; a `Variable_name` line elsewhere is a
        row (a variable of that name)."""
        out = np.zeros(len(texts), dtype=bool)
        for k, (line_no, text) in enumerate(zip(line_nos.tolist(), texts, strict=True)):
            if text[:1] == "+":
                out[k] = True
                self._border(line_no, text)
            elif self.state == "head" and _HEADER.match(text.rstrip()):
                out[k] = True
                if line_no != self.opened[-1] + 1:  # the line between is blank (a row there: its error)
                    self._problem(self.opened[-1] + 1, "", _BLANK_IN_HEADER)
                self.heads.append(line_no)
                self.state = "sep"
        return out

    def _border(self, line_no: int, text: str) -> None:
        if not _BORDER.match(text.rstrip()):
            self._problem(line_no, text, _MALFORMED if self.state == "rows" else _FOREIGN)
        elif self.state == "none":
            self.opened.append(line_no)
            self.state = "head"
        elif self.state == "head":
            self._problem(line_no, text, "border where the `Variable_name | Value` header belongs")
        elif self.state == "sep":
            if line_no != self.heads[-1] + 1:
                self._problem(self.heads[-1] + 1, "", _BLANK_IN_HEADER)
            self.tops.append(line_no)
            self.state = "rows"
        else:
            self.closes.append(line_no)
            self.state = "none"

    def _problem(self, line_no: int, text: str, reason: str) -> None:
        if self.problem is None or line_no < self.problem[0]:
            self.problem = (line_no, text, reason)

    def _raise_before(self, line_no: int | None) -> None:
        """The problem the boxes showed, when it comes before `line_no` (None: anywhere)."""
        if self.problem is not None and (line_no is None or self.problem[0] < line_no):
            raise self.table.error(*self.problem)

    def structure(self, line_no: int, text: str) -> None:
        """A line starting with neither `|` nor `+`: mysqladmin's message before a box, else an error."""
        self._raise_before(line_no)
        if not text.strip():
            if self.state in ("head", "sep"):
                raise self.table.error(line_no, text, _BLANK_IN_HEADER)
            return
        if self.state == "head":
            raise self.table.error(line_no, text, _NOT_HEADER)
        if self.state == "rows":
            raise self.table.error(line_no, text, _MALFORMED)
        if self.state == "none" and _MESSAGE.match(text):
            self.messages.append(text.rstrip())
            return
        raise self.table.error(line_no, text, _FOREIGN)

    def _odd_row(self, line_no: int, text: str, tokens: list[str], layout: Layout) -> list[str]:
        """A row of more `|` than four: the value holds them; of fewer, malformed."""
        self._raise_before(line_no)
        if len(tokens) < 4:
            raise self.table.error(line_no, text, _MALFORMED)
        return [tokens[0], tokens[1], "|".join(tokens[2:-1]), tokens[-1]]

    # ------------------------------------------------------------ the rows

    def rows(self, block: Block) -> None:
        """Rows inside a box (after the border under its header, before its closing one), each distinct
        name and value checked once; a variable twice in one block is an error."""
        lines = block.line_nos
        closes = np.array([*self.closes, np.iinfo(np.int64).max], dtype=np.int64)
        sample = np.searchsorted(np.array(self.tops, dtype=np.int64), lines) - 1
        inside = (sample >= 0) & (lines < closes[np.clip(sample, 0, len(closes) - 1)])
        _, name_field, value_field, tail = block.fields
        found = [_NAME_FIELD.match(name) for name in name_field.categories.tolist()]
        remap = np.array(
            [self.names.setdefault(m[1], len(self.names)) if m else -1 for m in found], dtype=np.int64
        )
        code = remap[name_field.codes]
        values = value_field.categories.tolist()
        printed = [v[1:].rstrip(" ") if not v or v[0] == " " else None for v in values]
        well = np.array([p is not None for p in printed], dtype=bool)[value_field.codes]
        well &= np.array([not t or t.isspace() for t in tail.categories.tolist()], dtype=bool)[tail.codes]
        bad = ~inside | (code < 0) | ~well
        width = len(self.names) + 1  # a bad row's code -1 is none of a sample's keys
        key = sample * width + code
        carried = self.carry[1] if sample[0] == self.carry[0] else np.empty(0, dtype=np.int64)
        joined = pd.Series(np.concatenate((self.carry[0] * width + carried, key)), copy=False)
        twice = joined.duplicated().to_numpy()[len(carried) :] & ~bad
        if bad.any() or twice.any() or self.problem is not None:
            self._first_error(block, bad | twice, inside, twice)
        last = int(sample[-1])
        before = carried if last == self.carry[0] else np.empty(0, dtype=np.int64)  # still that sample
        self.carry = (last, np.concatenate((before, code[sample == last])))
        # values: the same tests as on every row, once per distinct printed text (Arrow: no Python step each)
        texts = pa.array([p or "" for p in printed], type=pa.string())
        numeric = pc.match_substring_regex(texts, _NUMBER).to_numpy(zero_copy_only=False)
        value = np.full(len(printed), np.nan)
        value[numeric] = pc.cast(texts.filter(pa.array(numeric)), pa.float64()).to_numpy(zero_copy_only=False)
        if self.integers:
            self.integers = pc.all(pc.match_substring_regex(texts, _INTEGER)).as_py() is not False
        text_code = np.full(len(printed), -1, dtype=np.int32)
        for k in np.flatnonzero(~numeric).tolist():
            text_code[k] = self.texts.setdefault(printed[k] or "", len(self.texts))
        at = value_field.codes
        self.parts.append([sample, code.astype(np.int32), value[at], text_code[at]])

    def _first_error(self, block: Block, bad: np.ndarray, inside: np.ndarray, twice: np.ndarray) -> None:
        """Raise the first error among the rows and the problem the boxes showed."""
        if not bad.any():
            self._raise_before(None)
        k = int(np.argmax(bad))
        line_no = int(block.line_nos[k])
        self._raise_before(line_no)
        text = block.text(k)
        if not inside[k]:
            opened = np.array(self.opened, dtype=np.int64)
            j = int(np.searchsorted(opened, line_no)) - 1
            reason = _NOT_HEADER if j >= 0 and line_no == opened[j] + 1 else _FOREIGN
            raise self.table.error(line_no, text, reason)
        if twice[k]:
            name = _NAME_FIELD.match(text.split("|")[1])
            raise self.table.error(line_no, text, f"{name[1] if name else '?'} printed twice in one block")
        raise self.table.error(line_no, text, _MALFORMED)


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
    reader = _Mysqladmin(source)
    reader.run()
    notes: list[str] = []
    if reader.messages:
        notes.append("mysqladmin said: " + " | ".join(reader.messages))
    blocks = len(reader.heads)
    if reader.state != "none" and blocks:
        notes.append(f"block {blocks - 1} has no closing border (capture cut off)")
    if reader.parts:
        df, relative = _long_form(reader, host, interval_s, relative, notes)
    else:
        df = empty_frame(SCHEMA)
    dropped = int(reader.table.cut is not None)
    df.attrs.update(
        runs=blocks, relative=bool(relative), interval_s=interval_s, dropped_lines=dropped, notes=notes
    )
    return df


def _long_form(
    reader: _Mysqladmin, host: str | None, interval_s: float, relative: bool | None, notes: list[str]
) -> tuple[pd.DataFrame, bool]:
    """The frame of the rows read, and whether they are -r differences (detected when None)."""
    sample, code, value, text_code = (np.concatenate(c) for c in zip(*reader.parts, strict=True))
    names = np.array(list(reader.names), dtype=object)
    blocks = len(reader.heads)
    if relative is None:
        relative = _detect_relative(sample, code, value, names, reader.integers, blocks)
        if relative is None:
            line_no = reader.heads[1] if blocks > 1 else 1
            raise reader.table.error(
                line_no, "", "cannot tell whether mysqladmin ran with -r: pass relative="
            )
    if relative:
        known_name = np.array([n in _NOT_INTEGER for n in names])
        known = known_name[code]
        value[known] = np.nan  # strtoull's 0 for OFF, 2 for 2.18: not the value
        text_code[known] = -1
        if known_name.any():
            notes.append(
                f"-r capture: {int(known_name.sum())} text or fractional variables NaN "
                "(mysqladmin -r prints them as truncated integers)"
            )
        complete = len(sample) if reader.state == "none" else int(np.searchsorted(sample, blocks - 1))
        if _blocks_differ(sample[:complete], code[:complete]):  # a cut block is short
            notes.append(
                "-r blocks list different variables: mysqladmin pairs rows by position (differences suspect)"
            )
    # Per variable in file order (= sample order): cumulative sums and differences, by code.
    values = pd.Series(value, copy=False)
    absolute = values.groupby(code, sort=False).cumsum() if relative else values
    counter = np.array([_is_counter(n) for n in names], dtype=bool)[code]
    step = pd.Series(sample, copy=False).groupby(code, sort=False).diff()
    change = absolute.groupby(code, sort=False).diff()
    per_s = (change / (step * interval_s)).where(counter & (change >= 0))
    n = len(sample)
    df = pd.DataFrame(
        {
            "host": text_column([host], np.zeros(n, dtype=np.int32)),
            "sample": pd.arrays.IntegerArray(sample, np.zeros(n, dtype=bool)),
            "variable": text_column(names.tolist(), code),
            "value": value,
            "text": text_column(list(reader.texts), text_code),
            "relative": bool(relative) & (sample > 0),
            "absolute": absolute.to_numpy(dtype=np.float64),
            "counter": counter,
            "per_s": per_s.to_numpy(dtype=np.float64),
        },
        copy=False,
    )
    return coerce(df, SCHEMA), relative  # coerce: a no-op safety net when the dtypes are right


def _blocks_differ(sample: np.ndarray, code: np.ndarray) -> bool:
    """Whether the blocks (runs of one sample) list different variables, or in another order."""
    if len(sample) == 0:
        return False
    starts = np.flatnonzero(np.r_[True, sample[1:] != sample[:-1]])
    sizes = np.diff(np.r_[starts, len(sample)])
    if (sizes != sizes[0]).any():
        return True
    return bool((code.reshape(len(starts), sizes[0]) != code[: sizes[0]]).any())


def _is_counter(name: str) -> bool:
    return name not in _KNOWN_GAUGES and (name in _KNOWN_COUNTERS or _COUNTER_FAMILY.match(name) is not None)


def _detect_relative(
    sample: np.ndarray, code: np.ndarray, value: np.ndarray, names: np.ndarray, integers: bool, blocks: int
) -> bool | None:
    """True for -r, False for absolute blocks, None when the text does not say."""
    if not integers:
        return False  # -r prints integers only (text and fractions go through strtoull)
    if any(n in _NOT_INTEGER for n in names):
        return True  # a known text/fraction variable printed as an integer: strtoull did that
    if blocks < 2:
        return False  # one block is absolute either way
    uptime_at = np.flatnonzero(names == "Uptime")
    uptime = value[code == uptime_at[0]] if len(uptime_at) else value[:0]
    return bool((np.diff(uptime) < 0).any()) if len(uptime) >= 2 else None

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

import io
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from perfkit.errors import ParseError

from ._chunks import ByteScan, Rows
from ._common import Lines, Source, coerce, empty_frame, text_column
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
# The name field of a row split on `|`, as `_ROW` reads it.
_NAME_FIELD = re.compile(r"^ (\S+) +$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_MESSAGE = re.compile(r"^(?:mysqladmin|mariadb-admin): ")
_DICT = pa.dictionary(pa.int32(), pa.string())
# `ByteScan`'s structure lines: those not starting with `| ` (borders, blanks, messages) and the header
_MARKS = (re.compile(rb"\n(?!\| )"), re.compile(rb"\n\| Variable_name"))
CHUNK_ROWS = 131072  # rows split at once: bounds the raw text held, amortises the reader call


def sniff(text: str) -> bool:
    """A `+---+---+` border followed by the `| Variable_name | Value |` header."""
    lines = [ln.strip() for ln in text[:2048].splitlines() if ln.strip()][:2]
    return len(lines) == 2 and bool(_BORDER.match(lines[0])) and bool(_HEADER.match(lines[1]))


class _Reader:
    """Box walker: border -> header -> border -> rows -> border, then the next block.

    `ByteScan` hands over the runs of rows inside a box as bytes (no Python step per line) and every
    other line one at a time, for the state machine. Rows are buffered and split in chunks
    (`_flush`) by Arrow's CSV reader, a chunk never cutting a block in two; names and values are then
    checked once per distinct text, not once per line (a capture repeats both).
    """

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.state = "none"  # "head": border seen; "sep": header seen; "rows": inside a block
        self.sample = -1
        self.seen_rows = False
        self.first_line: dict[int, int] = {}
        self.messages: list[str] = []
        self.dropped = 0
        # rows of the current chunk (LF-terminated lines), how many, and (row index, line number,
        # sample) where each run of rows starts
        self.rows: list[bytes] = []
        self.n_rows = 0
        self.segs: list[tuple[int, int, int]] = []
        # parsed chunks, column by column
        self.names: dict[str, int] = {}  # variable -> code, in order of first appearance
        self.texts: dict[str, int] = {}  # non-numeric value -> code
        self.samples: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.text_codes: list[np.ndarray] = []
        self.integers = True  # every value printed as an integer (`^-?\d+$`): what -r prints

    def run(self, scan: ByteScan) -> None:
        """Runs of rows inside a block are buffered whole; any other line goes through the state
        machine (a last line cut off mid-write is left out by `ByteScan`: dropped and counted)."""
        for item in scan:
            if not isinstance(item, Rows):
                self._line(*item)
            elif self.state == "rows":
                self._add(item.data, item.first_no, item.count)
            else:  # `| ` lines outside a block: line by line, as any other line (the first one raises)
                text = item.data.decode("utf-8", "replace").split("\n")[:-1]
                for k, line in enumerate(text):
                    self._line(item.first_no + k, line)
        if scan.cut is not None:
            self.dropped += 1
        self._flush()

    def _line(self, line_no: int, line: str) -> None:
        """A line the scan did not take for a row: one inside a block that starts with `| ` is one
        all the same (a variable named `Variable_name`), the rest go through the state machine."""
        if self.state == "rows" and line[:2] == "| ":
            self._add(line.encode("utf-8", "surrogatepass") + b"\n", line_no, 1)
        else:
            self._feed(line_no, line)

    def _add(self, rows: bytes, line_no: int, count: int) -> None:
        self.segs.append((self.n_rows, line_no, self.sample))
        self.rows.append(rows)
        self.n_rows += count

    def _feed(self, line_no: int, line: str) -> None:
        try:
            self._structural(line_no, line.rstrip("\r\n"))
        except ParseError:
            self._flush()  # a bad row before this line is the first error in the file
            raise
        if self.state == "sep" and self.n_rows >= CHUNK_ROWS:
            self._flush()  # between two blocks: a block's duplicates are found within one chunk

    def _structural(self, line_no: int, line: str) -> None:
        """Every line but a row inside a block (the state machine, one line at a time, no line end)."""
        lines = self.lines
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
            self.state = "sep"
            return
        if self.state == "rows":  # not `| `: no row (a row is checked in _flush)
            raise lines.error(line_no, line, "malformed mysqladmin row")
        if self.state == "none" and _MESSAGE.match(text):
            self.messages.append(text)
            return
        raise lines.error(line_no, line, "not mysqladmin extended-status output")

    def _flush(self) -> None:
        """Split the buffered rows into names and values; append them to the columns."""
        segs, n = self.segs, self.n_rows
        data = b"".join(self.rows)
        self.rows, self.n_rows = [], 0
        if not n:
            segs.clear()
            return
        split = _split_fast(data, n)
        name_idx, names, printed_idx, printed = split if split is not None else _split_slow(_texts(data))
        starts = np.array([s[0] for s in segs] + [n], dtype=np.int64)
        counts = np.diff(starts)
        samples = np.repeat(np.array([s[2] for s in segs], dtype=np.int64), counts)
        remap = np.array([self.names.setdefault(n, len(self.names)) for n in names] + [-1], dtype=np.int64)
        codes = remap[name_idx]  # -1: malformed row (name_idx -1 takes the appended -1)
        bad = (codes < 0) | (printed_idx < 0)
        # a variable twice in one block: (sample, code) seen before; malformed rows never match
        key = np.where(bad, -1 - np.arange(n), (samples - samples[0]) * (len(self.names) + 1) + codes)
        dup = pd.Series(key).duplicated().to_numpy()
        if bad.any() or dup.any():
            index = int(np.argmax(bad | dup))
            line_no = int((np.repeat(np.array([s[1] for s in segs]) - starts[:-1], counts))[index]) + index
            row = _texts(data)[index]
            if bad[index]:
                raise self.lines.error(line_no, row, "malformed mysqladmin row")
            raise self.lines.error(line_no, row, f"{names[name_idx[index]]} printed twice in one block")
        # Values: the same tests as on every row, run once per distinct printed text.
        uniq = pd.Series(printed)
        numeric = uniq.str.match(_NUMBER.pattern)
        value = pd.to_numeric(uniq.where(numeric), errors="coerce").astype("float64").to_numpy()
        self.integers = self.integers and bool(uniq.str.match(r"^-?\d+$").all())
        text_code = np.array(
            [
                -1 if num else self.texts.setdefault(t, len(self.texts))
                for t, num in zip(printed, numeric, strict=True)
            ],
            dtype=np.int32,
        )
        self.samples.append(samples)
        self.codes.append(codes.astype(np.int32))
        self.values.append(value[printed_idx])
        self.text_codes.append(text_code[printed_idx])
        self.seen_rows = True
        segs.clear()


def _texts(data: bytes) -> list[str]:
    """The rows of a chunk as text (decoded as `ByteScan` decodes lines), without line ends."""
    return data.decode("utf-8", "replace").split("\n")[:-1]


def _split_fast(data: bytes, n: int) -> tuple[np.ndarray, list[str], np.ndarray, list[str]] | None:
    """`n` rows -> (name index, names, printed index, printed values) by Arrow's CSV reader, split on `|`.

    Each row starts with `| ` (the walk checked). A row with exactly three `|` reads as
    `'' | ' NAME   ' | ' VALUE   ' | tail`, where `_ROW` gives the same answer field by field (a
    name cannot hold a `|`, nor can the value with three `|` in all); each distinct field text is
    checked once. Index -1 marks a malformed row. None when Arrow refuses the chunk (a row with
    more or fewer `|`, a `\\r` inside a line ...): `_split_slow` then reads it with `_ROW`, the
    rare forms (and the error) row by row. (pandas' reader would turn ` 1 ` into the number 1.)
    """
    try:
        table = pa_csv.read_csv(
            io.BytesIO(data),  # invalid UTF-8 raises
            read_options=pa_csv.ReadOptions(column_names=["lead", "name", "value", "tail"]),
            parse_options=pa_csv.ParseOptions(delimiter="|", quote_char=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(("name", "value", "tail"), _DICT),
                include_columns=["name", "value", "tail"],
            ),
        )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal goes the slow way, which finds the bad row
        return None
    if table.num_rows != n:
        return None
    (name_field, name_codes), (value_field, value_codes), (tail, tail_codes) = (
        _dictionary(table.column(c)) for c in ("name", "value", "tail")
    )
    names: list[str] = []
    name_at = np.full(len(name_field), -1, dtype=np.int64)
    for i, field in enumerate(name_field):
        m = _NAME_FIELD.match(field)
        if m:
            name_at[i] = len(names)
            names.append(m[1])
    printed: list[str] = []
    value_at = np.full(len(value_field), -1, dtype=np.int64)
    for i, field in enumerate(value_field):
        if not field or field[0] == " ":  # `(?: (.*?))? *\|$`: one blank, the value, blanks
            value_at[i] = len(printed)
            printed.append(field[1:].rstrip(" "))
    tail_ok = np.array([not t or t.isspace() for t in tail], dtype=bool)  # what rstrip() removed
    name_idx = name_at[name_codes]
    name_idx[~tail_ok[tail_codes]] = -1
    return name_idx, names, value_at[value_codes], printed


def _dictionary(column: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """A dictionary-typed column -> (distinct texts, index per row)."""
    column = column.unify_dictionaries()
    values = column.chunk(0).dictionary.to_pylist() if column.num_chunks else []
    codes = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks]
    return values, np.concatenate(codes).astype(np.int64) if codes else np.empty(0, dtype=np.int64)


def _split_slow(rows: list[str]) -> tuple[np.ndarray, list[str], np.ndarray, list[str]]:
    """`_split_fast`'s result by `_ROW`, row by row."""
    names: dict[str, int] = {}
    printed: dict[str, int] = {}
    name_idx = np.full(len(rows), -1, dtype=np.int64)
    printed_idx = np.full(len(rows), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        m = _ROW.match(row.rstrip())
        if m:
            name_idx[i] = names.setdefault(m[1], len(names))
            printed_idx[i] = printed.setdefault(m[2] or "", len(printed))
    return name_idx, list(names), printed_idx, list(printed)


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
    scan = ByteScan(source, KIND, _MARKS)
    lines = scan.lines
    reader = _Reader(lines)
    reader.run(scan)
    notes: list[str] = []
    if reader.messages:
        notes.append("mysqladmin said: " + " | ".join(reader.messages))
    if reader.state != "none" and reader.sample >= 0:
        notes.append(f"block {reader.sample} has no closing border (capture cut off)")
    blocks = reader.sample + 1
    if not reader.seen_rows:
        df = empty_frame(SCHEMA)
        df.attrs.update(
            runs=max(blocks, 0),
            relative=bool(relative),
            interval_s=interval_s,
            dropped_lines=reader.dropped,
            notes=notes,
        )
        return df
    sample = np.concatenate(reader.samples)
    code = np.concatenate(reader.codes)
    value = np.concatenate(reader.values)
    text_code = np.concatenate(reader.text_codes)
    names = np.array(list(reader.names), dtype=object)
    if relative is None:
        relative = _detect_relative(sample, code, value, names, reader.integers, blocks)
        if relative is None:
            raise lines.error(
                reader.first_line.get(1, 1), "", "cannot tell whether mysqladmin ran with -r: pass relative="
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
        complete = len(sample) if reader.state == "none" else int(np.searchsorted(sample, reader.sample))
        if _blocks_differ(sample[:complete], code[:complete]):  # a cut block is short
            notes.append(
                "-r blocks list different variables: mysqladmin pairs rows by position (differences suspect)"
            )
    # Per variable in file order (= sample order): cumulative sums and differences, by code.
    by_var = pd.Series(value).groupby(code, sort=False)
    absolute = by_var.cumsum() if relative else pd.Series(value)
    counter = np.array([_is_counter(n) for n in names], dtype=bool)[code]
    step = pd.Series(sample).groupby(code, sort=False).diff()
    change = absolute.groupby(code, sort=False).diff()
    rate = change / (step * interval_s)
    per_s = rate.where(counter & (change >= 0))
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
    df = coerce(df, SCHEMA)  # a no-op safety net when the dtypes are right
    df.attrs.update(
        runs=blocks, relative=bool(relative), interval_s=interval_s, dropped_lines=reader.dropped, notes=notes
    )
    return df


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
    if name in _KNOWN_GAUGES:
        return False
    return name in _KNOWN_COUNTERS or _COUNTER_FAMILY.match(name) is not None


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
    uptime_code = np.flatnonzero(names == "Uptime")
    uptime = value[code == uptime_code[0]] if len(uptime_code) else value[:0]
    if len(uptime) >= 2:
        return bool((np.diff(uptime) < 0).any())
    return None

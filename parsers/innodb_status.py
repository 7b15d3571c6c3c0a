"""innodb_status: `SHOW ENGINE INNODB STATUS\\G` (the InnoDB monitor), one row per dump.

Reads the text the client prints for

    mysql -e 'SHOW ENGINE INNODB STATUS\\G'        (mariadb -e ... on MariaDB)
    pt-stalk's innodbstatus1 / innodbstatus2        (`SHOW /*!40100 ENGINE*/ INNODB STATUS\\G`)

one dump or several appended to one file. Each dump starts at its header
`2026-11-27 08:58:18 0x7fc8... INNODB MONITOR OUTPUT` (5.5's `YYMMDD HH:MM:SS` too), written in the
server's local time: `tz` says which zone that is. Between dumps only the client's own lines may stand
(`*** 1. row ***`, `Type: InnoDB`, `Name:`, `Status:`, `=====`, a `mysql>` echo); anything else is not
this capture and is a ParseError naming the line. Inside a dump the sections are found by their titles
between dash lines; a known line whose numbers do not read (`Buffer pool size   abc`) is a ParseError;
free text (queries, record dumps, foreign key errors, thread states) is skipped. A dump with no
`END OF INNODB MONITOR OUTPUT` (the capture was cut, or the client killed) is dropped: its lines are
counted in `dropped_lines` and said in `notes`.

Columns (SCHEMA), one row per complete dump; NaN/NA where the server printed no such line. Which
server prints it: M = MariaDB 10.11, 8 = MySQL 8.0, 7 = MySQL 5.7 (the fixtures), else all three.

- timestamp (UTC, the dump's header), host (the `host` argument)
- interval_s (s): `Per second averages calculated from the last N seconds`
- SEMAPHORES (7, 8; MariaDB 10.6+ has no sync wait array and prints none of these):
  os_wait_reservations, os_wait_signals (count since start): `OS WAIT ARRAY INFO: reservation count
  N` / `signal count N`; semaphore_spins, semaphore_os_waits (count since start): summed over
  `Mutex spin waits N, rounds R, OS waits W` (7) and `RW-shared/RW-excl/RW-sx spins N, ...`;
  long_semaphore_waits (threads): `--Thread T has waited at F line L for S seconds the semaphore:`
  lines (0 when the wait array is printed and lists none); semaphore_wait_max_s (s): the longest S.
- deadlock_at (UTC): first line of LATEST DETECTED DEADLOCK, the last deadlock since the server
  started (NaT: no deadlock yet). A new deadlock between two dumps changes it.
- TRANSACTIONS: trx_id_counter (id), history_list_length (undo logs not purged);
  transactions_active (`---TRANSACTION id, ACTIVE N sec` lines), trx_active_max_s (s, the oldest
  N; NaN: none active); lock_wait_transactions (`LOCK WAIT` lines of TRANSACTIONS, not those of the
  deadlock section); lock_wait_sum_s, lock_wait_max_s (s): `TRX HAS BEEN WAITING N SEC` (7, 8) or
  `N us` (M); the sum is 0 and the max NaN when no transaction waits.
- FILE I/O: pending_fsyncs (`Pending flushes (fsync): N` (M), `... log: N; buffer pool: M` (7, 8),
  summed); os_file_reads, os_file_writes, os_fsyncs (count since start); file_reads_per_s,
  file_writes_per_s, fsyncs_per_s (`R reads/s, B avg bytes/read, W writes/s, F fsyncs/s`).
- LOG: log_sequence_number, log_flushed_up_to, pages_flushed_up_to, last_checkpoint_at (LSN, a
  byte offset in the redo stream); checkpoint_age_bytes = LSN - last checkpoint (how much redo a
  crash would replay; near the redo log's capacity InnoDB flushes pages furiously);
  log_unflushed_bytes = LSN - flushed up to; pending_log_flushes, pending_checkpoint_writes
  (`N pending log flushes, M pending chkp writes`: 7); log_ios, log_ios_per_s (`N log i/o's done,
  X log i/o's/second`: 7, 8).
  MySQL 5.0/5.1 print an LSN, like `Trx id counter` and a `---TRANSACTION` id, as two 32-bit
  words (`Log sequence number 208 1379356250`): read as high * 2**32 + low; a low word of 2**32 or
  more is a ParseError.
- BUFFER POOL AND MEMORY (the totals; the per-instance INDIVIDUAL BUFFER POOL INFO is skipped):
  total_memory_bytes (`Total large memory allocated`; 8.0.30+ prints 0); buffer_pool_pages,
  free_pages, database_pages, old_database_pages, modified_pages, pending_reads (pages of
  innodb_page_size, 16 KiB by default: `Buffer pool size`, `Free buffers`, `Database pages`, `Old
  database pages`, `Modified db pages`, `Pending reads`); pages_read, pages_created, pages_written
  (pages since start; pages read are the reads from disk); pages_read_per_s, pages_created_per_s,
  pages_written_per_s (`R reads/s, C creates/s, W writes/s`); hit_rate_per_1000 (`Buffer pool hit
  rate N / 1000`; NaN after `No buffer pool page gets since the last printout`); read_ahead_per_s,
  evicted_without_access_per_s (`Pages read ahead X/s, evicted without access Y/s`).
- ROW OPERATIONS: queries_inside, queries_queued (`N queries inside InnoDB, M queries in queue`: 7,
  8); read_views (`N read views open inside InnoDB`); rows_inserted_per_s, rows_updated_per_s,
  rows_deleted_per_s, rows_read_per_s (the rate line after `Number of rows inserted ...`, not the
  system rows' line of 8.0: 7, 8).

Counters "since start" are cumulative from server start; the `_per_s` figures are the server's own
averages over `interval_s` (since the previous dump, whoever asked for it).

What it reads beside its rows (what is not a number): `EXTRAS` (below).

Tested on: tests/fixtures/innodb_status/ (see README.md there: MariaDB 10.11 real, MySQL 5.7 and 8.0
from the reference manual's examples; TiDB does not implement the statement).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Extras, Lines, Source, feed_lines, records_frame, to_utc


@dataclass(frozen=True)
class InnodbStatusExtras(Extras):
    """What innodb_status reads beside its rows (see `_common.Extras`)."""

    # one record per transaction in LOCK WAIT: `timestamp` (its dump, ISO UTC), `trx_id`, `thread_id`,
    # `active_s`, `waited_s`, `query` (the first line of its statement), `lock` (the lock it waits for:
    # the line after `TRX HAS BEEN WAITING`), `table` (`db`.`table` from that line)
    lock_waits: list[dict] = field(default_factory=list)
    # the distinct latest deadlocks seen (LATEST DETECTED DEADLOCK): `at` (ISO UTC), `rolled_back`
    # (`*** WE ROLL BACK TRANSACTION (N)`: N, else None), `text` (the section as printed)
    deadlocks: list[dict] = field(default_factory=list)


EXTRAS = InnodbStatusExtras

KIND = "innodb_status"
_INT64_MAX = 2**63 - 1

_LSN = ("log_sequence_number", "log_flushed_up_to", "pages_flushed_up_to", "last_checkpoint_at")
_INT_COLUMNS = (*_LSN, "checkpoint_age_bytes", "log_unflushed_bytes", "trx_id_counter")
_COLUMNS = (
    "interval_s",
    "os_wait_reservations", "os_wait_signals", "semaphore_spins", "semaphore_os_waits",
    "long_semaphore_waits", "semaphore_wait_max_s",
    "deadlock_at",
    "trx_id_counter", "history_list_length", "transactions_active", "trx_active_max_s",
    "lock_wait_transactions", "lock_wait_sum_s", "lock_wait_max_s",
    "pending_fsyncs", "os_file_reads", "os_file_writes", "os_fsyncs",
    "file_reads_per_s", "file_writes_per_s", "fsyncs_per_s",
    *_LSN, "checkpoint_age_bytes", "log_unflushed_bytes", "pending_log_flushes", "pending_checkpoint_writes",
    "log_ios", "log_ios_per_s",
    "total_memory_bytes", "buffer_pool_pages", "free_pages", "database_pages", "old_database_pages",
    "modified_pages", "pending_reads", "pages_read", "pages_created", "pages_written",
    "pages_read_per_s", "pages_created_per_s", "pages_written_per_s", "hit_rate_per_1000",
    "read_ahead_per_s", "evicted_without_access_per_s",
    "queries_inside", "queries_queued", "read_views",
    "rows_inserted_per_s", "rows_updated_per_s", "rows_deleted_per_s", "rows_read_per_s",
)  # fmt: skip
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    **{col: "Int64" if col in _INT_COLUMNS else "float64" for col in _COLUMNS},
}
SCHEMA["deadlock_at"] = "datetime64[ns, UTC]"  # the one time column, in its place

_HEADER = re.compile(
    r"^(?:(\d{4})-(\d{2})-(\d{2})|(\d{2})(\d{2})(\d{2})) +(\d{1,2}):(\d{2}):(\d{2})"
    r"(?: +\S+)? +INNODB MONITOR OUTPUT\s*$"  # the thread id: 0x7f.. (5.7+), 7f.. (5.6), decimal (8.0.3x)
)
_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) +(\d{1,2}):(\d{2}):(\d{2})\b")
_END = "END OF INNODB MONITOR OUTPUT"
# the client's lines around the Status text, and a pasted prompt
_OUTSIDE = re.compile(
    r"^(?:\s*|\*+ \d+\. row \*+|\s*Type: InnoDB\s*|\s*Name:\s*|\s*Status:\s*|=+|mysql> .*|MariaDB \[.*\]> .*"
    r"|Type\tName\tStatus|InnoDB\t\t)$"
)
_SECTIONS = frozenset({
    "BACKGROUND THREAD", "SEMAPHORES", "LATEST FOREIGN KEY ERROR", "LATEST DETECTED DEADLOCK",
    "TRANSACTIONS", "FILE I/O", "INSERT BUFFER AND ADAPTIVE HASH INDEX", "LOG", "BUFFER POOL AND MEMORY",
    "INDIVIDUAL BUFFER POOL INFO", "ROW OPERATIONS",
})  # fmt: skip
_DASHES = re.compile(r"^-{3,}$")


def _id(text: str) -> int:
    """An id or LSN: one word, or 5.0/5.1's two 32-bit words `high low`."""
    high, _, low = text.partition(" ")
    if not low:
        return int(high)
    if int(low) >= 2**32:  # not a 32-bit word: the line is not what it looks like
        raise ValueError(text)
    return int(high) * 2**32 + int(low)


@dataclass
class _Dump:
    """The figures of one dump as they are read; `_Reader.finish` makes the frame's record."""

    line_no: int
    stamp: pd.Timestamp
    n_lines: int = 1
    section: str = ""
    values: dict[str, float | int] = field(default_factory=dict)
    deadlock_at: pd.Timestamp | None = None
    deadlock_lines: list[str] = field(default_factory=list)
    spins: list[int] = field(default_factory=list)
    os_waits: list[int] = field(default_factory=list)
    wait_array: bool = False  # the sync wait array is printed (MySQL): it lists every long wait
    semaphore_waits: list[float] = field(default_factory=list)
    active: list[float] = field(default_factory=list)
    lock_waits: list[dict] = field(default_factory=list)
    trx: dict | None = None  # the transaction being read in TRANSACTIONS
    expect: str | None = None  # the next line is this transaction's "query" or "lock"
    rows_rates_next: bool = False

    def leave_section(self) -> None:
        self.trx = None
        self.expect = None
        self.rows_rates_next = False


def sniff(text: str) -> bool:
    return any(_HEADER.match(line) for line in text[:8192].splitlines()[:40])


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse one or more `SHOW ENGINE INNODB STATUS\\G` dumps; `tz` is the server's zone.

    Raises:
        ParseError: a line outside a dump that the client does not print, a dump header or known
            line whose numbers do not read, a number too large for its column.
    """
    reader = _Reader(tz)
    feed_lines(source, KIND, reader.step, reader.cut_last)
    reader.drop("is cut off (no END OF INNODB MONITOR OUTPUT)")
    df = records_frame(reader.rows, SCHEMA, host=host)
    df.attrs["dropped_lines"] = reader.dropped
    df.attrs["notes"] = reader.notes
    df.attrs["lock_waits"] = reader.lock_waits
    df.attrs["deadlocks"] = list(reader.deadlocks.values())
    return df


class _Reader:
    """Walks the lines: outside a dump only the client's lines; inside, sections and figures."""

    def __init__(self, tz: str):
        self.tz = tz
        self.rows: list[dict] = []
        self.lock_waits: list[dict] = []
        self.deadlocks: dict[tuple[str, str], dict] = {}
        self.notes: list[str] = []
        self.dropped = 0
        self.dump: _Dump | None = None
        self.prev = ""

    def drop(self, why: str) -> None:
        if self.dump is not None:
            self.dropped += self.dump.n_lines
            self.notes.append(f"dump at line {self.dump.line_no} {why}: dropped ({self.dump.n_lines} lines)")

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        """A last line cut off mid-write: read if it reads, else dropped (with its dump, if any)."""
        in_dump = self.dump.n_lines if self.dump is not None else None
        try:
            self.step(line_no, line, lines)
        except ParseError:
            if self.dump is None or self.dump.n_lines == in_dump:  # else counted with its dump
                self.dropped += 1

    def step(self, line_no: int, line: str, lines: Lines) -> None:
        prev, self.prev = self.prev, line
        if m := _HEADER.match(line):
            # YYYY-MM-DD, or 5.5's YYMMDD
            day = (int(m[1]), int(m[2]), int(m[3])) if m[1] else (2000 + int(m[4]), int(m[5]), int(m[6]))
            stamp = _stamp(lines, line_no, line, self.tz, *day, int(m[7]), int(m[8]), int(m[9]))
            # a new dump; one still open never ended (the client was killed): drop it
            self.drop("has no END OF INNODB MONITOR OUTPUT before the next dump")
            self.dump = _Dump(line_no, stamp)
            return
        dump = self.dump
        if dump is None:
            if not _OUTSIDE.match(line):
                raise lines.error(line_no, line, "not SHOW ENGINE INNODB STATUS\\G output")
            return
        dump.n_lines += 1
        title = line.strip()
        if title == _END:
            self.finish(dump)
            self.dump = None
        elif title in _SECTIONS and _DASHES.match(prev.strip()):
            dump.leave_section()
            dump.section = title
        else:
            _read_line(dump, lines, line_no, line, self.tz)

    def finish(self, dump: _Dump) -> None:
        """The dump's row; its lock waits and deadlock to the extras."""
        dump.leave_section()
        vals = dump.values
        row: dict[str, object] = {**vals, "timestamp": dump.stamp, "deadlock_at": dump.deadlock_at}
        if dump.spins:
            row["semaphore_spins"] = float(sum(dump.spins))
            row["semaphore_os_waits"] = float(sum(dump.os_waits))
        if dump.wait_array:
            row["long_semaphore_waits"] = float(len(dump.semaphore_waits))
            row["semaphore_wait_max_s"] = max(dump.semaphore_waits, default=np.nan)
        row["transactions_active"] = float(len(dump.active))
        row["trx_active_max_s"] = max(dump.active, default=np.nan)
        waited = [w["waited_s"] for w in dump.lock_waits if w["waited_s"] is not None]
        row["lock_wait_transactions"] = float(len(dump.lock_waits))
        row["lock_wait_sum_s"] = float(sum(waited))
        row["lock_wait_max_s"] = max(waited, default=np.nan)
        # both LSNs are 0 to 2**63 - 1 (checked as read): the difference fits Int64
        if "log_sequence_number" in vals and "last_checkpoint_at" in vals:
            row["checkpoint_age_bytes"] = vals["log_sequence_number"] - vals["last_checkpoint_at"]
        if "log_sequence_number" in vals and "log_flushed_up_to" in vals:
            row["log_unflushed_bytes"] = vals["log_sequence_number"] - vals["log_flushed_up_to"]
        self.rows.append(row)
        if dump.deadlock_lines:
            text = "\n".join(dump.deadlock_lines).strip("\n")
            at = dump.deadlock_at.isoformat() if dump.deadlock_at is not None else None
            victim = re.search(r"^\*\*\* WE ROLL BACK TRANSACTION \((\d+)\)", text, re.M)
            self.deadlocks.setdefault(
                (at or "", text), {"at": at, "rolled_back": int(victim[1]) if victim else None, "text": text}
            )
        keys = ("timestamp", "trx_id", "thread_id", "active_s", "waited_s", "query", "lock", "table")
        self.lock_waits.extend({k: w[k] for k in keys} for w in dump.lock_waits)


def _stamp(lines: Lines, line_no: int, line: str, tz: str, *parts: int) -> pd.Timestamp:
    try:
        naive = datetime(*parts)  # type: ignore[misc]
        if not 1678 <= naive.year < 2262:
            raise ValueError("year outside 1678-2261")
        return to_utc(naive, tz)
    except ValueError as exc:
        raise lines.error(line_no, line, f"not a date and time: {exc}") from None


_Handler = Callable[[_Dump, re.Match[str]], None]


def _set(*cols: str) -> _Handler:
    """Store the match's groups in `cols` ("": a group not kept; a group not printed stays unset)."""

    def handle(dump: _Dump, m: re.Match[str]) -> None:
        for col, text in zip(cols, m.groups(), strict=True):
            if col and text is not None:
                dump.values[col] = _id(text) if col in _INT_COLUMNS else float(text)

    return handle


def _spins(dump: _Dump, m: re.Match[str]) -> None:
    for part in _SPIN_PART.finditer(m.string):  # 5.0/5.1: `RW-shared ...; RW-excl ...` on one line
        dump.spins.append(int(part[1]))
        dump.os_waits.append(int(part[3]))


def _reservations(dump: _Dump, m: re.Match[str]) -> None:
    dump.wait_array = True
    _set("os_wait_reservations", "os_wait_signals")(dump, m)  # 5.6 prints both counts on one line


def _semaphore_wait(dump: _Dump, m: re.Match[str]) -> None:
    dump.semaphore_waits.append(float(m[1]))


def _pending_fsyncs(dump: _Dump, m: re.Match[str]) -> None:
    dump.values["pending_fsyncs"] = float(m[1]) + (float(m[2]) if m[2] is not None else 0.0)


def _rows_line(dump: _Dump, m: re.Match[str]) -> None:
    dump.rows_rates_next = m[1] is None  # the user rows' rates follow; not the system rows'


def _rows_rates(dump: _Dump, m: re.Match[str]) -> None:
    if dump.rows_rates_next:
        _set("rows_inserted_per_s", "rows_updated_per_s", "rows_deleted_per_s", "rows_read_per_s")(dump, m)
    dump.rows_rates_next = False


def _no_page_gets(dump: _Dump, m: re.Match[str]) -> None:
    dump.values["hit_rate_per_1000"] = float("nan")


_N = r"(\d+)"
_F = r"(\d+(?:\.\d+)?)"
_ID = r"(\d+(?: \d+)?)"  # see `_id`
_SPIN = r"(?:Mutex spin waits|RW-(?:shared|excl|sx) spins) (\d+), (?:rounds (\d+), )?OS waits (\d+)"
_SPIN_PART = re.compile(_SPIN)
# A known line of a section: (trigger, pattern, handler), both regexes matched at the line's start.
# A line that matches the trigger must match the pattern, else it is a ParseError; others are free text.
_RULE_TEXT: dict[str, list[tuple[str, str, _Handler]]] = {
    "": [
        ("Per second averages", rf"Per second averages calculated from the last {_N} seconds",
         _set("interval_s")),
    ],
    "SEMAPHORES": [
        ("OS WAIT ARRAY INFO: reservation count",
         rf"OS WAIT ARRAY INFO: reservation count {_N}(?:, signal count {_N})?", _reservations),
        ("OS WAIT ARRAY INFO: signal count", rf"OS WAIT ARRAY INFO: signal count {_N}",
         _set("os_wait_signals")),
        ("Mutex spin waits|RW-", _SPIN, _spins),
        ("--Thread ", rf"--Thread \d+ has waited at .* for {_F} seconds the semaphore", _semaphore_wait),
    ],
    "TRANSACTIONS": [
        ("Trx id counter", rf"Trx id counter {_ID}", _set("trx_id_counter")),
        ("History list length", rf"History list length {_N}", _set("history_list_length")),
    ],
    "FILE I/O": [
        (r"Pending flushes \(fsync\)", rf"Pending flushes \(fsync\)(?: log)?: {_N}(?:; buffer pool: {_N})?",
         _pending_fsyncs),
        (r"\S+ OS file reads", rf"{_N} OS file reads, {_N} OS file writes, {_N} OS fsyncs",
         _set("os_file_reads", "os_file_writes", "os_fsyncs")),
        (r"\S+ reads/s, ", rf"{_F} reads/s, {_F} avg bytes/read, {_F} writes/s, {_F} fsyncs/s",
         _set("file_reads_per_s", "", "file_writes_per_s", "fsyncs_per_s")),
    ],
    "LOG": [
        ("Log sequence number", rf"Log sequence number\s+{_ID}\s*$", _set("log_sequence_number")),
        ("Log flushed up to", rf"Log flushed up to\s+{_ID}\s*$", _set("log_flushed_up_to")),
        ("Pages flushed up to", rf"Pages flushed up to\s+{_ID}\s*$", _set("pages_flushed_up_to")),
        ("Last checkpoint at", rf"Last checkpoint at\s+{_ID}\s*$", _set("last_checkpoint_at")),
        (r"\S+ pending log flushes", rf"{_N} pending log flushes, {_N} pending chkp writes",
         _set("pending_log_flushes", "pending_checkpoint_writes")),
        (r"\S+ log i/o's done", rf"{_N} log i/o's done, {_F} log i/o's/second",
         _set("log_ios", "log_ios_per_s")),
    ],
    "BUFFER POOL AND MEMORY": [
        ("Total large memory allocated", rf"Total large memory allocated {_N}\s*$",
         _set("total_memory_bytes")),
        ("Buffer pool size ", rf"Buffer pool size\s+{_N}\s*$", _set("buffer_pool_pages")),
        ("Free buffers", rf"Free buffers\s+{_N}\s*$", _set("free_pages")),
        ("Database pages", rf"Database pages\s+{_N}\s*$", _set("database_pages")),
        ("Old database pages", rf"Old database pages\s+{_N}\s*$", _set("old_database_pages")),
        ("Modified db pages", rf"Modified db pages\s+{_N}\s*$", _set("modified_pages")),
        ("Pending reads", rf"Pending reads\s+{_N}\s*$", _set("pending_reads")),
        ("Pages read ahead", rf"Pages read ahead {_F}/s, evicted without access {_F}/s",
         _set("read_ahead_per_s", "evicted_without_access_per_s")),
        ("Pages read ", rf"Pages read {_N}, created {_N}, written {_N}\s*$",
         _set("pages_read", "pages_created", "pages_written")),
        (r"\S+ reads/s, ", rf"{_F} reads/s, {_F} creates/s, {_F} writes/s",
         _set("pages_read_per_s", "pages_created_per_s", "pages_written_per_s")),
        ("Buffer pool hit rate", rf"Buffer pool hit rate {_N} / 1000", _set("hit_rate_per_1000")),
        ("No buffer pool page gets", "No buffer pool page gets since the last printout", _no_page_gets),
    ],
    "ROW OPERATIONS": [
        (r"\S+ queries inside InnoDB", rf"{_N} queries inside InnoDB, {_N} queries in queue",
         _set("queries_inside", "queries_queued")),
        (r"\S+ read views open", rf"{_N} read views open inside InnoDB", _set("read_views")),
        ("Number of ", r"Number of (system )?rows inserted \d+, updated \d+, deleted \d+, read \d+",
         _rows_line),
        (r"\S+ inserts/s, ", rf"{_F} inserts/s, {_F} updates/s, {_F} deletes/s, {_F} reads/s", _rows_rates),
    ],
}  # fmt: skip
_RULES = {
    section: [(re.compile(trigger), re.compile(pattern), handle) for trigger, pattern, handle in rules]
    for section, rules in _RULE_TEXT.items()
}

_TRX = re.compile(r"---TRANSACTION (\d+ \d+|\S+?),? (?:ACTIVE (?:\(PREPARED\) )?(\d+) sec)?")
_THREAD = re.compile(r"(?:MySQL|MariaDB) thread id (\d+),")
_WAITED = re.compile(r"------- TRX HAS BEEN WAITING (\d+) (SEC|us) FOR THIS LOCK TO BE GRANTED:")
_TABLE = re.compile(r"(?:of table|TABLE LOCK table) (`[^`]*`\.`[^`]*`)")


def _read_line(dump: _Dump, lines: Lines, line_no: int, line: str, tz: str) -> None:
    section = dump.section
    if section == "LATEST DETECTED DEADLOCK":
        if not dump.deadlock_lines:
            if not line.strip() or _DASHES.match(line):
                return  # the title's underline
            if m := _STAMP.match(line):
                dump.deadlock_at = _stamp(lines, line_no, line, tz, *(int(g) for g in m.groups()))
        dump.deadlock_lines.append(line)
        return
    if section == "TRANSACTIONS":
        _read_transaction(dump, lines, line_no, line)
    for trigger, pattern, handle in _RULES.get(section, ()):
        if not trigger.match(line):
            continue
        m = pattern.match(line)
        if m is None:
            raise lines.error(line_no, line, f"a {section or 'header'} line whose figures do not read")
        try:
            handle(dump, m)
        except (ValueError, OverflowError):
            raise lines.error(line_no, line, "a number out of range") from None
        if any(isinstance(v, int) and v > _INT64_MAX for v in dump.values.values()):
            raise lines.error(line_no, line, "a number too large for a 64-bit counter")
        return


def _read_transaction(dump: _Dump, lines: Lines, line_no: int, line: str) -> None:
    """Follow one transaction's lines: `---TRANSACTION`, `LOCK WAIT`, thread, statement, wait, lock."""
    if line.startswith("---TRANSACTION "):
        m = _TRX.match(line)
        if m is None:
            raise lines.error(line_no, line, "a transaction line that does not read")
        trx_id = m[1].strip("()")
        if " " in trx_id:  # 5.0/5.1's two words: the id as later servers print it
            try:
                trx_id = str(_id(trx_id))
            except ValueError:
                raise lines.error(line_no, line, "a transaction id whose low word is not 32-bit") from None
        dump.trx = {"trx_id": trx_id, "active_s": float(m[2]) if m[2] else None}
        dump.expect = None
        if m[2]:
            dump.active.append(float(m[2]))
        return
    trx = dump.trx
    if trx is None:
        return
    expect, dump.expect = dump.expect, None
    if expect == "query" and not line.startswith(("------- TRX HAS BEEN WAITING", "---", "Trx read view")):
        trx["query"] = line
    elif expect == "lock":
        table = _TABLE.search(line)
        trx.update(lock=line, table=table[1] if table else None)
    elif line.startswith("LOCK WAIT "):
        # the record is the transaction's own dict: what follows (thread, statement, lock) fills it
        trx.update(
            timestamp=dump.stamp.isoformat(), thread_id=None, waited_s=None, query=None, lock=None, table=None
        )
        dump.lock_waits.append(trx)
    elif m := _THREAD.match(line):
        trx["thread_id"] = int(m[1])
        dump.expect = "query"
    elif m := _WAITED.match(line):
        trx["waited_s"] = float(m[1]) / (1e6 if m[2] == "us" else 1.0)
        dump.expect = "lock"
    elif line.startswith("------- TRX HAS BEEN WAITING"):
        raise lines.error(line_no, line, "a lock wait line whose time does not read")

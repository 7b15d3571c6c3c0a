"""InnoDB's own account of two waits, from the DB sampler's `SHOW GLOBAL STATUS` per database host and
sweep step (analyzers/db.py `status_windows`: the samples inside each step's load window, deltas as
Σ rate × interval), with the server's variables where the per-step `mysql_variables` capture has them.

`db.buffer-pool-miss` — logical reads that go to disk. Per step:

- miss ratio = ΔInnodb_buffer_pool_reads / ΔInnodb_buffer_pool_read_requests (reads InnoDB could not
  serve from the pool), disk reads per second and per transaction;
- pool turnover = ΔInnodb_pages_read / Innodb_buffer_pool_pages_total: more pages read from disk in
  the step than the pool holds means reads evict pages that are read again — a pool smaller than the
  working set, not a cold pool filling up (a cold pool reads fewer pages than it has free);
- free pages (Innodb_buffer_pool_pages_free / _total) and ΔInnodb_buffer_pool_wait_free (threads that
  waited for a free page). Free pages near zero is *not* required: MariaDB 10.5+'s page cleaner evicts
  to keep up to innodb_lru_scan_depth (1,536) pages free, so a 379-page pool missing 30 % of its reads
  keeps a third or more of it free (measured: small-buffer-pool scenario).

`db.log-wait` — commits waiting on the redo log. Per step:

- log buffer waits: ΔInnodb_log_waits (the log buffer was full and the writer had to flush it first:
  innodb_log_buffer_size too small for the redo written between log writes) per second and per
  transaction. MariaDB 10.11 counts one only when unwritten redo fills the whole buffer (it starts a
  write at half full), so small transactions under the default innodb_flush_log_at_trx_commit=1 never
  do: the lab could not induce it with sysbench (see tests/test_innodb_rules.py);
- checkpoint age near its maximum: Innodb_checkpoint_age / Innodb_checkpoint_max_age as sampled
  (MariaDB; MySQL prints the age only in SHOW ENGINE INNODB STATUS). MariaDB flushes dirty pages
  ahead ("furious flushing") from 7/8 of the maximum and makes writers wait for the flush at it: the
  redo log is too small for the write rate, and writes stall on page flushing (a flush storm);
- redo bytes per second (ΔInnodb_os_log_written) against the log's capacity: how many seconds of this
  step's writes the log holds (innodb_log_file_size × innodb_log_files_in_group from the variables,
  else Innodb_checkpoint_max_age, the share of it InnoDB lets the checkpoint lag);
- fsyncs per second and per transaction: Innodb_os_log_fsyncs where the server counts it (MySQL);
  MariaDB 10.5+ has no such counter (NaN), so Innodb_data_fsyncs, which counts every fsync InnoDB
  issues, the log's included — said in the evidence (`fsync_counter`). Their latency is not in the
  status: where `disk.serial-small-io` (analyzers/disk.py, from iostat) sees one small synchronous IO
  at a time on the database's machine, its await is the fsync latency and the finding says both
  (commit-serial: each commit waits for the previous one's log fsync).

Both are judged at or past the sweep's knee (the highest step without one), like db.lock-contention;
the finding describes the highest step that matches. Thresholds: analyzers/thresholds.yaml.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import pandas as pd

from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped, count, data_size

from . import disk
from .db import (
    StatusWindow,
    at,
    in_order,
    judged,
    judged_from,
    server_variables,
    status_windows,
    variables_for,
    window_name,
)

POOL_RULE = "db.buffer-pool-miss"
LOG_RULE = "db.log-wait"
NO_POOL_COUNTERS = (
    "the server's status has no buffer pool counters (Innodb_buffer_pool_reads, _read_requests): "
    "TiDB has none — its cache is TiKV's RocksDB block cache, whose hit rate is in TiKV's metrics "
    "(Grafana TiKV-Details › RocksDB › Block cache hit; Prometheus tikv_engine_cache_efficiency), "
    "which perfkit does not collect"
)
NO_LOG_COUNTERS = (
    "the server's status has no redo log counters (Innodb_log_waits, Innodb_checkpoint_age): "
    "TiDB has none — its write-ahead log is TiKV's raft log (raft-engine), whose waits are in TiKV's "
    "metrics (Grafana TiKV-Details › Raft IO › Append log duration), which perfkit does not collect"
)
# the MariaDB point past which InnoDB flushes pages ahead of the checkpoint (log_t::set_capacity:
# max_modified_age_async = max_checkpoint_age - max_checkpoint_age / 8)
ASYNC_FLUSH_SHARE = 7 / 8
_VARIABLES = (
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_log_buffer_size",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "innodb_lru_scan_depth",
    "innodb_read_ahead_threshold",
    "innodb_random_read_ahead",
)


def _ratio_median(rows: pd.DataFrame, num: str, den: str) -> float | None:
    x = (rows[num] / rows[den].where(rows[den] > 0)).dropna()
    return float(x.median()) if len(x) else None


def _ratio_min_max(rows: pd.DataFrame, num: str, den: str) -> tuple[float | None, float | None]:
    x = (rows[num] / rows[den].where(rows[den] > 0)).dropna()
    return (float(x.min()), float(x.max())) if len(x) else (None, None)


def _median(rows: pd.DataFrame, col: str) -> float | None:
    x = rows[col].dropna()
    return float(x.median()) if len(x) else None


def _counted(w: StatusWindow, col: str) -> float | None:
    """Δ`col` over the window, None where the server does not count it (never read as zero)."""
    return w.delta(col) if w.rows[col].notna().any() else None


def _windows(
    ds: Dataset, sweep: Any, rule: str, col: str, min_samples: int
) -> dict[str, list[StatusWindow]] | Skipped:
    """host -> its steps' status windows with at least `min_samples` samples with a rate in `col`
    (hosts whose server never reported `col` left out), or Skipped naming what is missing."""
    found = status_windows(ds, sweep, rule)
    if isinstance(found, Skipped):
        return found
    out: dict[str, list[StatusWindow]] = {}
    any_counters = False
    for host, status in found.items():
        if not status.has(col):
            continue
        any_counters = True
        ok = [
            w for w in status.windows if int(w.rows[col].notna().sum()) >= min_samples and w.seconds(col) > 0
        ]
        if ok:
            out[host] = sorted(ok, key=lambda w: (-1 if w.step.threads is None else w.step.threads, w.start))
    if not any_counters:
        return Skipped(rule, NO_POOL_COUNTERS if rule == POOL_RULE else NO_LOG_COUNTERS)
    if not out:
        return Skipped(
            rule, f"fewer than {count(min_samples, 'status sample')} inside any step's load window"
        )
    return out


# ---------------------------------------------------------------------------- db.buffer-pool-miss


@dataclass
class PoolStep:
    """One sweep step's (or capture window's) buffer pool figures on one database host (deltas over
    the step's load window)."""

    threads: int | None
    step_source: str
    seconds: float  # Δt the deltas cover (samples with a rate in Innodb_buffer_pool_reads)
    samples: int
    read_requests: float  # ΔInnodb_buffer_pool_read_requests: logical page reads
    reads: float  # ΔInnodb_buffer_pool_reads: the ones the pool could not serve (read from disk)
    pages_read: float | None  # ΔInnodb_pages_read: pages read from disk (read-ahead included)
    wait_free: float | None  # ΔInnodb_buffer_pool_wait_free: waits for a free page
    pages_total: float | None  # Innodb_buffer_pool_pages_total (median of the samples)
    free_share: float | None  # Innodb_buffer_pool_pages_free / _total, median of the samples
    free_share_min: float | None
    transactions_s: float | None
    basis: str
    window: tuple[str, str]
    name: str | None = None  # the step's or capture window's name

    @property
    def miss_ratio(self) -> float | None:
        return self.reads / self.read_requests if self.read_requests > 0 else None

    @property
    def reads_s(self) -> float:
        return self.reads / self.seconds

    @property
    def reads_per_txn(self) -> float | None:
        return self.reads_s / self.transactions_s if self.transactions_s else None

    @property
    def turnover(self) -> float | None:
        """Pages read from disk in the step / the pool's pages: above 1, reads evicted pages."""
        read = self.pages_read if self.pages_read is not None else self.reads
        return read / self.pages_total if self.pages_total else None

    def to_list(self) -> list[Any]:
        r = lambda x, n: None if x is None else round(x, n)  # noqa: E731
        return [
            self.threads if self.threads is not None else self.name,
            r(self.miss_ratio, 4),
            round(self.reads_s, 1),
            r(self.reads_per_txn, 3),
            round(self.read_requests / self.seconds, 1),
            r(self.turnover, 2),
            r(self.free_share, 3),
            r(self.wait_free, 0),
            round(self.seconds, 2),
        ]


POOL_COLUMNS = [
    "threads",
    "miss_ratio",
    "disk_reads_s",
    "disk_reads_per_txn",
    "read_requests_s",
    "pool_turnover",
    "free_share",
    "wait_free",
    "seconds",
]


def pool_steps(ds: Dataset, sweep: Any, min_samples: int = 1) -> dict[str, list[PoolStep]] | Skipped:
    """host -> its steps' buffer pool figures (ordered by threads), or Skipped with the reason."""
    found = _windows(ds, sweep, POOL_RULE, "innodb_buffer_pool_reads_s", min_samples)
    if isinstance(found, Skipped):
        return found
    out: dict[str, list[PoolStep]] = {}
    for host, windows in found.items():
        steps = []
        for w in windows:
            # the counters are read on the samples that have the disk-read rate: one Δt for all
            rows = w.rows[w.rows["innodb_buffer_pool_reads_s"].notna()]
            sub = StatusWindow(w.step, rows, w.start, w.end)
            txn, basis = sub.tps(sweep)
            lo, _hi = _ratio_min_max(rows, "innodb_buffer_pool_pages_free", "innodb_buffer_pool_pages_total")
            steps.append(
                PoolStep(
                    threads=w.step.threads,
                    name=window_name(w.step),
                    step_source=w.step.source,
                    seconds=sub.seconds("innodb_buffer_pool_reads_s"),
                    samples=len(rows),
                    read_requests=sub.delta("innodb_buffer_pool_read_requests_s"),
                    reads=sub.delta("innodb_buffer_pool_reads_s"),
                    pages_read=_counted(sub, "innodb_pages_read_s"),
                    wait_free=_counted(sub, "innodb_buffer_pool_wait_free_s"),
                    pages_total=_median(rows, "innodb_buffer_pool_pages_total"),
                    free_share=_ratio_median(
                        rows, "innodb_buffer_pool_pages_free", "innodb_buffer_pool_pages_total"
                    ),
                    free_share_min=lo,
                    transactions_s=txn,
                    basis=basis,
                    window=sub.window,
                )
            )
        out[host] = steps
    return out


def _pool_hit(s: PoolStep, lim: dict[str, Any]) -> bool:
    # read requests are 0 on MariaDB 10.11.6 (MDEV-31309): then the disk reads and turnover decide alone
    miss_ok = s.miss_ratio is None or s.miss_ratio >= lim["min_miss_ratio"]
    turnover = s.turnover
    return (
        miss_ok
        and s.reads_s >= lim["min_reads_s"]
        and turnover is not None
        and turnover >= lim["min_turnover"]
    )


def buffer_pool_miss(
    ds: Dataset, sweep: Any | None, th: dict[str, dict[str, Any]]
) -> list[Finding] | Skipped:
    """Logical reads go to disk: a share of the pool's reads miss, the pool turns over (reads evict
    pages read again), at or past the knee (the highest step without one)."""
    lim = th[POOL_RULE]
    found = pool_steps(ds, sweep, int(lim["min_samples"]))
    if isinstance(found, Skipped):
        return found
    knee = getattr(sweep, "knee_threads", None)
    variables = server_variables(ds, _VARIABLES)
    out = []
    for host, steps in found.items():
        hits = [s for s in judged(steps, knee) if _pool_hit(s, lim)]
        if hits:
            out.append(_pool_finding(host, steps, hits[-1], knee, lim, variables_for(host, variables)))
    return out


def _pool_finding(
    host: str,
    steps: list[PoolStep],
    s: PoolStep,
    knee: int | None,
    lim: dict[str, Any],
    variables: dict[str, Any],
) -> Finding:
    miss = s.miss_ratio
    critical = (miss is not None and miss >= lim["critical_miss_ratio"]) or bool(s.wait_free)
    low = steps[0] if s.threads is not None else s  # capture windows have no order by load
    growth = s.reads_s / low.reads_s if low is not s and low.reads_s > 0 else None
    size = variables.get("innodb_buffer_pool_size")
    pool = (
        f"a {data_size(size)} pool ({s.pages_total:,.0f} pages)"
        if isinstance(size, float) and s.pages_total
        else (f"a pool of {s.pages_total:,.0f} pages" if s.pages_total else "the pool")
    )
    ratio = (
        f"{miss * 100:.1f}% of {s.read_requests / s.seconds:,.0f} page reads a second miss"
        if miss is not None
        else ("page reads miss (Innodb_buffer_pool_read_requests does not count on this server)")
    )
    per_txn = f", {s.reads_per_txn:.2f} per transaction" if s.reads_per_txn is not None else ""
    since = (
        f"; {low.reads_s:,.0f}/s {at(low.threads, low.name)} ({growth:.1f}× less)"
        if growth is not None
        else (f"; none {at(low.threads, low.name)}" if low is not s else "")
    )
    free = (
        f"; {s.free_share * 100:.0f}% of the pages free (median"
        + (
            "; the page cleaner evicts ahead, so free pages do not show the shortage)"
            if s.free_share >= 0.1
            else ")"
        )
        if s.free_share is not None
        else ""
    )
    waits = f"; {s.wait_free:,.0f} waits for a free page" if s.wait_free else ""
    summary = (
        f"{at(s.threads, s.name, first=True)}, {ratio}: {s.reads_s:,.0f} disk reads a second"
        f"{per_txn}{since}. "
        f"{pool[0].upper()}{pool[1:]} read {s.turnover:,.1f} times its size from disk in {s.seconds:.1f} s: "
        f"reads evict pages that are read again{free}{waits}."
    )
    return Finding(
        rule=POOL_RULE,
        severity="critical" if critical else "warning",
        title=(
            f"Reads go to disk: {miss * 100:.0f}% buffer pool misses, {s.reads_s:,.0f} disk reads/s"
            if miss is not None
            else f"Reads go to disk: {s.reads_s:,.0f} buffer pool misses a second"
        ),
        summary=summary,
        evidence={
            "host": host,
            "threads": s.threads,
            "window_name": s.name,
            "miss_ratio": miss,  # ΔInnodb_buffer_pool_reads / ΔInnodb_buffer_pool_read_requests
            "reads": s.reads,  # ΔInnodb_buffer_pool_reads
            "read_requests": s.read_requests,  # ΔInnodb_buffer_pool_read_requests
            "disk_reads_s": s.reads_s,
            "disk_reads_per_txn": s.reads_per_txn,
            "pages_read": s.pages_read,  # ΔInnodb_pages_read (read-ahead included)
            "pool_turnover": s.turnover,  # pages read / pool pages
            "pages_total": s.pages_total,
            "free_share": s.free_share,  # median Innodb_buffer_pool_pages_free / _total
            "free_share_min": s.free_share_min,
            "wait_free": s.wait_free,  # ΔInnodb_buffer_pool_wait_free; None: not counted
            "seconds": s.seconds,
            "samples": s.samples,
            "txn_basis": s.basis,
            "transactions_s": s.transactions_s,
            "knee_threads": knee,
            "judged_from": judged_from(steps, knee),
            "growth": growth,  # disk reads per second at this step / at the lowest step
            "variables": variables,  # the per-step variables capture's, where there is one
            "innodb_buffer_pool_size": size if isinstance(size, float) else None,
            "step_columns": POOL_COLUMNS,
            "steps": [x.to_list() for x in steps],
            "source": s.step_source,
        },
        hosts=[host],
        window=s.window,
        explanation=(
            "InnoDB serves a row from the buffer pool when its page is there (a read request) and reads "
            "the page from disk when it is not (Innodb_buffer_pool_reads). A miss costs a disk read — "
            "milliseconds instead of microseconds — inside the query. When the pages read from disk in a "
            "step exceed the pool's size, the pool is smaller than the pages the load touches: each read "
            "evicts a page that will be needed again, and more threads only queue more reads on the disk. "
            "(TiDB's analogue is TiKV's RocksDB block cache: a wider working set blows through it and "
            "reads slow down, as in the seed 004 story; TiDB's status has no such counter.)"
        ),
        next_steps=[
            "Compare innodb_buffer_pool_size with the working set: SELECT table_name, data_length, "
            "index_length FROM information_schema.tables (the tables and indexes the load reads), and "
            "size the pool to hold the hot part of them (on a dedicated server typically 50–75 % of RAM); "
            "MariaDB 10.11 resizes it online in whole innodb_buffer_pool_chunk_size units.",
            "Find the query that reads the most pages: "
            "performance_schema.events_statements_summary_by_digest (SUM_ROWS_EXAMINED against "
            "SUM_ROWS_SENT) or the slow log with log_slow_verbosity=innodb; "
            "a scan or a missing index reads pages no point lookup would.",
            "Check the access pattern: uniform random reads over a large table miss whatever the "
            "read-ahead; sequential scans are helped by linear read-ahead (innodb_read_ahead_threshold) — "
            "compare Innodb_buffer_pool_read_ahead with _read_ahead_evicted (read ahead, never used).",
            "Watch for warm-up after a restart: innodb_buffer_pool_dump_at_shutdown / load_at_startup "
            "keep the hot pages across restarts (free pages then fall while the misses do).",
            "On TiDB, read TiKV's block cache hit rate (Grafana TiKV-Details › RocksDB) and "
            "storage.block-cache.capacity; a wider working set blows through it (seed 004).",
        ],
    )


# ---------------------------------------------------------------------------- db.log-wait


@dataclass
class LogStep:
    """One sweep step's (or capture window's) redo log figures on one database host (deltas over the
    step's load window)."""

    threads: int | None
    step_source: str
    seconds: float
    samples: int
    log_waits: float | None  # ΔInnodb_log_waits; None where the server does not count it
    redo_bytes: float | None  # ΔInnodb_os_log_written
    log_writes: float | None  # ΔInnodb_log_writes
    fsyncs: float | None  # ΔInnodb_os_log_fsyncs, else ΔInnodb_data_fsyncs (fsync_counter says which)
    fsync_counter: str | None
    checkpoint_share: float | None  # median Innodb_checkpoint_age / Innodb_checkpoint_max_age
    checkpoint_share_max: float | None
    checkpoint_max_age: float | None  # bytes (median)
    transactions_s: float | None
    basis: str
    window: tuple[str, str]
    name: str | None = None  # the step's or capture window's name

    @property
    def log_waits_s(self) -> float | None:
        return None if self.log_waits is None else self.log_waits / self.seconds

    @property
    def log_waits_per_txn(self) -> float | None:
        w = self.log_waits_s
        return w / self.transactions_s if w is not None and self.transactions_s else None

    @property
    def redo_bytes_s(self) -> float | None:
        return None if self.redo_bytes is None else self.redo_bytes / self.seconds

    @property
    def fsyncs_s(self) -> float | None:
        return None if self.fsyncs is None else self.fsyncs / self.seconds

    @property
    def fsyncs_per_txn(self) -> float | None:
        f = self.fsyncs_s
        return f / self.transactions_s if f is not None and self.transactions_s else None

    @property
    def fsync_counter_name(self) -> str | None:
        """The status counter the fsyncs are (MariaDB 10.5+ counts no log fsyncs apart)."""
        return {
            "innodb_os_log_fsyncs_s": "Innodb_os_log_fsyncs",
            "innodb_data_fsyncs_s": "Innodb_data_fsyncs: every InnoDB fsync, the log's included",
        }.get(self.fsync_counter or "")

    def to_list(self) -> list[Any]:
        r = lambda x, n: None if x is None else round(x, n)  # noqa: E731
        return [
            self.threads if self.threads is not None else self.name,
            r(self.log_waits_s, 2),
            r(self.checkpoint_share, 3),
            r(self.checkpoint_share_max, 3),
            r(None if self.redo_bytes_s is None else self.redo_bytes_s / 2**20, 3),
            r(self.fsyncs_s, 1),
            r(self.fsyncs_per_txn, 3),
            r(self.transactions_s, 1),
            round(self.seconds, 2),
        ]


LOG_COLUMNS = [
    "threads",
    "log_waits_s",
    "checkpoint_share",
    "checkpoint_share_max",
    "redo_mib_s",
    "fsyncs_s",
    "fsyncs_per_txn",
    "transactions_s",
    "seconds",
]


def log_steps(ds: Dataset, sweep: Any, min_samples: int = 1) -> dict[str, list[LogStep]] | Skipped:
    """host -> its steps' redo log figures (ordered by threads), or Skipped with the reason."""
    found = status_windows(ds, sweep, LOG_RULE)
    if isinstance(found, Skipped):
        return found
    out: dict[str, list[LogStep]] = {}
    any_counters = False
    for host, status in found.items():
        if not (status.has("innodb_log_waits_s") or status.has("innodb_checkpoint_age")):
            continue
        any_counters = True
        # MariaDB 10.5+ has no Innodb_os_log_fsyncs: every InnoDB fsync (the log's included) instead
        fsync_col = next(
            (c for c in ("innodb_os_log_fsyncs_s", "innodb_data_fsyncs_s") if status.has(c)), None
        )
        steps = []
        for w in status.windows:
            rows = w.rows[w.rows["dt_s"].notna()]
            if len(rows) < min_samples or not rows["dt_s"].sum() > 0:
                continue
            sub = StatusWindow(w.step, rows, w.start, w.end)
            txn, basis = sub.tps(sweep)
            lo_hi = _ratio_min_max(rows, "innodb_checkpoint_age", "innodb_checkpoint_max_age")
            steps.append(
                LogStep(
                    threads=w.step.threads,
                    name=window_name(w.step),
                    step_source=w.step.source,
                    seconds=float(rows["dt_s"].sum()),
                    samples=len(rows),
                    log_waits=_counted(sub, "innodb_log_waits_s"),
                    redo_bytes=_counted(sub, "innodb_os_log_written_s"),
                    log_writes=_counted(sub, "innodb_log_writes_s"),
                    fsyncs=_counted(sub, fsync_col) if fsync_col else None,
                    fsync_counter=fsync_col,
                    checkpoint_share=_ratio_median(
                        rows, "innodb_checkpoint_age", "innodb_checkpoint_max_age"
                    ),
                    checkpoint_share_max=lo_hi[1],
                    checkpoint_max_age=_median(rows, "innodb_checkpoint_max_age"),
                    transactions_s=txn,
                    basis=basis,
                    window=sub.window,
                )
            )
        if steps:
            out[host] = in_order(steps)
    if not any_counters:
        return Skipped(LOG_RULE, NO_LOG_COUNTERS)
    if not out:
        return Skipped(
            LOG_RULE, f"fewer than {count(min_samples, 'status sample')} inside any step's load window"
        )
    return out


def _log_causes(s: LogStep, lim: dict[str, Any]) -> list[str]:
    causes = []
    if s.log_waits_s is not None and s.log_waits_s >= lim["min_log_waits_s"]:
        causes.append("log-buffer")
    if s.checkpoint_share is not None and s.checkpoint_share >= lim["min_checkpoint_share"]:
        causes.append("checkpoint")
    return causes


def _same_machine(db_host: str, os_host: str | None, os_hosts: set[str]) -> bool:
    """Whether the sampler's `host:port` is on the machine an OS capture calls `os_host`."""
    name = (
        db_host.rsplit(":", 1)[0].strip("[]")
        if db_host.count(":") == 1 or db_host.startswith("[")
        else db_host
    )
    if os_host is None:
        return len(os_hosts) <= 1
    if name == os_host:
        return True
    try:
        loopback = ipaddress.ip_address(name).is_loopback
    except ValueError:
        loopback = name == "localhost"
    # a database on 127.0.0.1 is on the collecting machine: perfkit names it `localhost`
    return loopback and (os_host == "localhost" or len(os_hosts) == 1)


def _serial_disk(ds: Dataset, sweep: Any, th: dict[str, dict[str, Any]], host: str) -> Finding | None:
    """disk.serial-small-io's finding on the database's machine, if it fires there."""
    found = disk.serial_small_io(ds, sweep, th)
    if isinstance(found, Skipped):
        return None
    os_hosts = {c.host for c in ds.of("iostat") if c.host}
    mine = [f for f in found if _same_machine(host, f.hosts[0] if f.hosts else None, os_hosts)]
    return max(mine, key=lambda f: f.evidence["util_pct_median"]) if mine else None


def log_wait(ds: Dataset, sweep: Any | None, th: dict[str, dict[str, Any]]) -> list[Finding] | Skipped:
    """Commits wait on the redo log: log buffer waits, or the checkpoint age held near its maximum
    (writes wait on page flushing), at or past the knee (the highest step without one)."""
    lim = th[LOG_RULE]
    found = log_steps(ds, sweep, int(lim["min_samples"]))
    if isinstance(found, Skipped):
        return found
    knee = getattr(sweep, "knee_threads", None)
    variables = server_variables(ds, _VARIABLES)
    out = []
    for host, steps in found.items():
        hits = [s for s in judged(steps, knee) if _log_causes(s, lim)]
        if hits:
            serial = _serial_disk(ds, sweep, th, host)
            out.append(_log_finding(host, steps, hits[-1], knee, lim, variables_for(host, variables), serial))
    return out


def _log_capacity(s: LogStep, variables: dict[str, Any]) -> tuple[float | None, str | None]:
    size = variables.get("innodb_log_file_size")
    if isinstance(size, float) and size > 0:
        files = variables.get("innodb_log_files_in_group")
        n = files if isinstance(files, float) and files > 0 else 1.0
        return size * n, "innodb_log_file_size" + (" × innodb_log_files_in_group" if n > 1 else "")
    if s.checkpoint_max_age:
        return s.checkpoint_max_age, "Innodb_checkpoint_max_age"
    return None, None


def _log_finding(
    host: str,
    steps: list[LogStep],
    s: LogStep,
    knee: int | None,
    lim: dict[str, Any],
    variables: dict[str, Any],
    serial: Finding | None,
) -> Finding:
    causes = _log_causes(s, lim)
    capacity, capacity_basis = _log_capacity(s, variables)
    rate = s.redo_bytes_s
    log_seconds = capacity / rate if capacity and rate else None
    parts = []
    if "log-buffer" in causes:
        per = f" ({s.log_waits_per_txn:.3f} per transaction)" if s.log_waits_per_txn is not None else ""
        buf = variables.get("innodb_log_buffer_size")
        parts.append(
            f"{s.log_waits_s:,.1f} waits a second for log buffer space{per}"
            + (f" with a {data_size(buf)} innodb_log_buffer_size" if isinstance(buf, float) else "")
        )
    if "checkpoint" in causes:
        holds = (
            f"; the log ({data_size(capacity)}, {capacity_basis}) holds {log_seconds:.1f} s of the "
            f"{rate / 2**20:.2f} MiB of redo written a second"
            if log_seconds is not None and capacity is not None and rate is not None
            else ""
        )
        parts.append(
            f"the checkpoint age at {s.checkpoint_share * 100:.0f}% of its maximum (median; up to "
            f"{(s.checkpoint_share_max or 0) * 100:.0f}%): InnoDB flushes pages ahead from "
            f"{ASYNC_FLUSH_SHARE * 100:.1f}% and writes wait for the flush at 100%{holds}"
        )
    fs = (
        f" {s.fsyncs_s:,.0f} fsyncs a second ({s.fsync_counter_name})"
        + (f", {s.fsyncs_per_txn:.2f} per transaction" if s.fsyncs_per_txn is not None else "")
        + "."
        if s.fsyncs_s is not None
        else ""
    )
    both = ""
    fsync_busy = None
    if serial is not None:
        aw = serial.evidence["await_ms_median"]
        fsync_busy = s.fsyncs_s * aw / 1000 if s.fsyncs_s is not None else None
        both = (
            f" disk.serial-small-io sees the same on {serial.evidence['device']}: one small synchronous IO "
            f"at a time at {aw:.2f} ms each — commits wait for each other's log fsync (commit-serial)."
        )
    critical = ("checkpoint" in causes and s.checkpoint_share >= lim["critical_checkpoint_share"]) or (
        "log-buffer" in causes and (s.log_waits_per_txn or 0) >= lim["critical_log_waits_per_txn"]
    )
    summary = f"{at(s.threads, s.name, first=True)}, " + " and ".join(parts) + "." + fs + both
    if causes == ["log-buffer"]:
        title = "Commits wait for log buffer space"
    elif causes == ["checkpoint"]:
        title = f"The redo log is full: checkpoint age at {s.checkpoint_share * 100:.0f}% of its maximum"
    else:
        title = "Commits wait on the redo log: log buffer waits and checkpoint age near its maximum"
    return Finding(
        rule=LOG_RULE,
        severity="critical" if critical else "warning",
        title=title,
        summary=summary,
        evidence={
            "host": host,
            "threads": s.threads,
            "window_name": s.name,
            "causes": causes,  # log-buffer (Innodb_log_waits), checkpoint (age near its maximum)
            "log_waits": s.log_waits,  # ΔInnodb_log_waits; None: not counted
            "log_waits_s": s.log_waits_s,
            "log_waits_per_txn": s.log_waits_per_txn,
            "checkpoint_share": s.checkpoint_share,  # median Innodb_checkpoint_age / _max_age
            "checkpoint_share_max": s.checkpoint_share_max,
            "checkpoint_max_age": s.checkpoint_max_age,
            "redo_bytes": s.redo_bytes,  # ΔInnodb_os_log_written
            "redo_bytes_s": rate,
            "log_writes": s.log_writes,
            "log_capacity": capacity,
            "log_capacity_basis": capacity_basis,
            "log_seconds": log_seconds,  # seconds of this step's redo the log holds
            "fsyncs": s.fsyncs,
            "fsyncs_s": s.fsyncs_s,
            "fsyncs_per_txn": s.fsyncs_per_txn,
            "fsync_counter": s.fsync_counter_name,
            "serial_device": serial.evidence["device"] if serial is not None else None,
            "serial_await_ms": serial.evidence["await_ms_median"] if serial is not None else None,
            "fsync_busy": fsync_busy,  # fsyncs a second × the serial device's await: time spent syncing
            "seconds": s.seconds,
            "samples": s.samples,
            "txn_basis": s.basis,
            "transactions_s": s.transactions_s,
            "knee_threads": knee,
            "judged_from": judged_from(steps, knee),
            "variables": variables,
            "step_columns": LOG_COLUMNS,
            "steps": [x.to_list() for x in steps],
            "source": s.step_source,
        },
        hosts=[host],
        window=s.window,
        explanation=(
            "Every change InnoDB makes is first appended to the redo log buffer and written to the redo "
            "log; a commit waits for its redo to be written (and synced, with "
            "innodb_flush_log_at_trx_commit=1). A full log buffer makes the writer flush it before going "
            "on (Innodb_log_waits). The redo log is a ring: a page's change can be overwritten only once "
            "the page is flushed to its tablespace, so the checkpoint age — redo not yet covered by "
            "flushed pages — must stay below the log's capacity. Near its maximum InnoDB flushes pages "
            "ahead of the load and, at it, makes every writer wait for the flush: throughput falls to what "
            "the page flushing sustains, in bursts (a flush storm)."
        ),
        next_steps=[
            "Size the redo log for the write rate: innodb_log_file_size several times the redo written "
            "between checkpoints at peak (the log holding an hour of peak writes is the usual advice; "
            "MariaDB 10.11 resizes it with SET GLOBAL innodb_log_file_size, MySQL 8.0.30+ with "
            "innodb_redo_log_capacity).",
            "Let the page cleaner keep up: innodb_io_capacity / innodb_io_capacity_max to what the "
            "data disk sustains (calibrate with fio), innodb_adaptive_flushing_lwm.",
            "Raise innodb_log_buffer_size when Innodb_log_waits grows (large transactions, BLOBs, "
            "innodb_flush_log_at_trx_commit=0/2).",
            "When commits sync one at a time (disk.serial-small-io on the log's device): group commit "
            "(more concurrent committers per fsync, binlog_commit_wait_count/usec on MariaDB), a log "
            "device with lower sync latency, or innodb_flush_log_at_trx_commit=2 where losing the last "
            "second on an OS crash is acceptable.",
            "On TiDB the write-ahead log is TiKV's raft log: read TiKV's append/apply log durations and "
            "raftstore's write stall metrics instead.",
        ],
    )


RULES = {POOL_RULE: buffer_pool_miss, LOG_RULE: log_wait}

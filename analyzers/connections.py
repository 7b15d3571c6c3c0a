"""The connection ceiling, from the DB sampler's `SHOW GLOBAL STATUS` (parsers/mysql_status.py) and
the load generator's own errors, per database host.

`db.connection-limit`: the server turned connections away at `max_connections`, or ran at it.

- refused: ΔConnection_errors_max_connections (connects refused because every slot was taken) and
  ΔAborted_connects (every connect that did not complete: the refusals, and clients that gave up).
- the load generator's `Too many connections` (MySQL error 1040; 1203 is a user's own
  max_user_connections): sysbench gives up the whole run when one thread cannot connect, so perfkit
  marks the step failed and the sweep model leaves it out (`Analysis.excluded_steps`). Those steps are
  this rule's evidence, so it reads every load run perfkit recorded (the manifest's load records,
  failed ones included), not only the sweep's steps.
- the connections in use: Threads_connected as sampled each second, and Max_used_connections (the
  server's high-water mark since it started; read only when it rose during the run) against
  max_connections when the variables capture has it (kind `mysql_variables`).

A failed connect lasts milliseconds, so a step's counters are read over the load run's whole span
(its record's started_at to ended_at, connecting included: `sweep.load_window`'s first second, where
the connects happen, is exactly what matters here), from every sample whose interval overlaps it; a
sample overlapping two runs goes to the later one (a run's refusals come at its start).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped, count

from .db import NO_SAMPLER, HostStatus, StatusWindow, server_variables, status_windows, variables_for
from .sweep import LOAD_KINDS, load_span

RULE = "db.connection-limit"
REFUSED, ABORTED = "connection_errors_max_connections_s", "aborted_connects_s"
NO_STEPS = "no load run with its start and end in a perfkit run manifest"
NO_COUNTERS = (
    "the server's status has neither Connection_errors_max_connections nor Threads_connected "
    "(MySQL before 5.6.5 has no connection error counters) and no load run failed on a connection limit"
)
# how the server's refusal reaches a MySQL client: the load runners' reasons keep the error number
# (collectors/load_sysbench.py failure_reason: "MySQL error 1040: Too many connections")
_SERVER_LIMIT = re.compile(r"\b1040\b|too many connections", re.IGNORECASE)
_USER_LIMIT = re.compile(r"\b1203\b|max_user_connections", re.IGNORECASE)


@dataclass
class LoadRun:
    """One load-generator run perfkit recorded (a sweep step, whether the model kept it or not)."""

    name: str  # the step (t0016)
    threads: int | None
    source: str  # its output, relative to the archive: what status_windows reads the window of
    status: str  # perfkit's verdict on the step: ok, degraded, failed, interrupted
    reason: str
    start: pd.Timestamp
    end: pd.Timestamp

    @property
    def limit_error(self) -> str | None:
        """Which limit refused the run's connects (max_connections, max_user_connections), if one did."""
        if self.status not in ("failed", "degraded"):
            return None
        if _USER_LIMIT.search(self.reason):
            return "max_user_connections"
        return "max_connections" if _SERVER_LIMIT.search(self.reason) else None


@dataclass
class _Runs:
    """What status_windows reads of a sweep (`steps`, each with its `source`): here every recorded run,
    so the runs the sweep model left out get their samples too."""

    steps: list[LoadRun]


@dataclass
class StepConnections:
    """One load run's connection figures on one database host."""

    run: LoadRun
    refused: float | None  # ΔConnection_errors_max_connections over the samples covering the run
    aborted: float | None  # ΔAborted_connects, the same samples
    seconds: float  # the time those samples' intervals cover
    connected_max: float | None  # Threads_connected, the highest sampled inside the run

    def to_list(self) -> list[Any]:
        return [
            self.run.name,
            self.run.threads,
            self.run.status,
            self.refused,
            self.aborted,
            self.connected_max,
        ]


STEP_COLUMNS = ["step", "threads", "status", "refused", "aborted_connects", "threads_connected_max"]


@dataclass
class HostConnections:
    """The evidence for one database host: the limit, what was in use, what was turned away."""

    host: str
    max_connections: float | None  # the server's variable, from the variables capture
    refused: float | None  # ΔConnection_errors_max_connections over the whole series; None: not counted
    aborted: float | None  # ΔAborted_connects over the whole series
    seconds: float  # the time the whole-series deltas cover
    connected_peak: float | None  # Threads_connected, the highest sampled
    max_used_first: float | None  # Max_used_connections at the first and last sample
    max_used_last: float | None
    steps: list[StepConnections] = field(default_factory=list)

    @property
    def max_used(self) -> float | None:
        """Max_used_connections when this run raised it (before the run it may be any earlier peak)."""
        first, last = self.max_used_first, self.max_used_last
        return last if last is not None and (first is None or last > first) else None

    @property
    def in_use_peak(self) -> float | None:
        """The most connections the server held at once during the run, as far as it said."""
        values = [v for v in (self.connected_peak, self.max_used) if v is not None]
        return max(values) if values else None

    @property
    def limit_failures(self) -> list[StepConnections]:
        return [s for s in self.steps if s.run.limit_error]

    @property
    def basis(self) -> str:
        """What the finding rests on, strongest first."""
        said = []
        if self.max_connections is not None:
            said.append("max_connections from the variables capture")
        if self.refused:
            said.append("refusals counted by the server (Connection_errors_max_connections)")
        if self.limit_failures:
            said.append("the load generator's connection errors")
        if self.max_connections is None and self.max_used is not None:
            said.append("Max_used_connections (max_connections not captured)")
        return "; ".join(said)

    def evidence(self) -> dict[str, Any]:
        failed = self.limit_failures
        return {
            "host": self.host,
            "basis": self.basis,
            "max_connections": self.max_connections,
            "connections_in_use_peak": self.in_use_peak,
            "threads_connected_peak": self.connected_peak,
            "max_used_connections": self.max_used_last,
            "max_used_connections_before": self.max_used_first,
            "refused": self.refused,  # ΔConnection_errors_max_connections over the run
            "aborted_connects": self.aborted,
            "seconds": self.seconds,
            "failed_steps": [s.run.name for s in failed],
            "failed_threads": [s.run.threads for s in failed],
            "failed_reasons": [s.run.reason for s in failed],
            "limit_errors": sorted({s.run.limit_error for s in failed if s.run.limit_error}),
            "highest_ok_threads": max(
                (s.run.threads for s in self.steps if s.run.status in ("ok", "degraded") and s.run.threads),
                default=None,
            ),
            "step_columns": STEP_COLUMNS,
            "steps": [s.to_list() for s in self.steps],
        }


# ---------------------------------------------------------------- detection


def load_runs(ds: Dataset) -> list[LoadRun]:
    """Every load run the manifest records with its start and end, in time order."""
    runs = []
    for path, rec in ds.records.items():
        span = load_span(rec)
        if rec.kind not in LOAD_KINDS or span is None:
            continue
        runs.append(
            LoadRun(
                name=rec.step or path,
                threads=rec.threads,
                source=path,
                status=rec.status,
                reason=rec.reason,
                start=span[0],
                end=span[1],
            )
        )
    return sorted(runs, key=lambda r: r.start)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, float) else None


def _gauge_max(rows: pd.DataFrame, col: str) -> float | None:
    x = rows[col].dropna() if col in rows else pd.Series(dtype=float)
    return float(x.max()) if len(x) else None


def _counted(status: HostStatus, window: StatusWindow, col: str) -> float | None:
    """Δ`col` over the window's samples, None where the server does not count it at all.

    A whole number: the counters count connects, and Σ rate × interval is off by a few parts in a
    million (the parser's rates divide by the sampler's raw times, the frame keeps milliseconds)."""
    return float(round(window.delta(col))) if status.has(col) else None


def host_connections(ds: Dataset, runs: list[LoadRun]) -> dict[str, HostConnections] | Skipped:
    """host -> its connection figures over the run and per load run, or Skipped naming what is missing."""
    found = status_windows(ds, _Runs(runs), RULE)
    if isinstance(found, Skipped):
        return found
    limits = server_variables(ds, ("max_connections",))
    out: dict[str, HostConnections] = {}
    for host, status in found.items():
        frame = status.frame
        t, prev = frame["timestamp"], frame["timestamp"].shift(1)
        # each sample to the last run its interval (prev, t] overlaps: a run's refusals come at its start
        owner = pd.Series(-1, index=frame.index)
        for i, run in enumerate(runs):
            owner[(t >= run.start) & (prev <= run.end)] = i
        whole = StatusWindow(None, frame, t.iloc[0], t.iloc[-1])
        used = frame["max_used_connections"].dropna() if "max_used_connections" in frame else pd.Series()
        hc = HostConnections(
            host=host,
            max_connections=_number(variables_for(host, limits).get("max_connections")),
            refused=_counted(status, whole, REFUSED),
            aborted=_counted(status, whole, ABORTED),
            seconds=whole.seconds(REFUSED) if status.has(REFUSED) else whole.seconds("questions_s"),
            connected_peak=_gauge_max(frame, "threads_connected"),
            max_used_first=float(used.iloc[0]) if len(used) else None,
            max_used_last=float(used.iloc[-1]) if len(used) else None,
        )
        for i, run in enumerate(runs):
            span = StatusWindow(run, frame[owner == i], run.start, run.end)
            inside = frame[(t >= run.start) & (t <= run.end)]
            hc.steps.append(
                StepConnections(
                    run=run,
                    refused=_counted(status, span, REFUSED),
                    aborted=_counted(status, span, ABORTED),
                    seconds=span.seconds(REFUSED) if status.has(REFUSED) else 0.0,
                    connected_max=_gauge_max(inside, "threads_connected"),
                )
            )
        out[host] = hc
    return out


def connection_limit(
    ds: Dataset, sweep: Any | None, th: dict[str, dict[str, Any]]
) -> list[Finding] | Skipped:
    """The server turned connects away at max_connections (critical), or its connections in use
    reached near it (warning, where max_connections was captured).

    `sweep` is not read: the runs that failed on the limit are the evidence and the sweep model
    leaves them out, so every recorded load run comes from the manifest instead.
    """
    lim = th[RULE]
    runs = load_runs(ds)
    found = host_connections(ds, runs) if runs else Skipped(RULE, NO_STEPS)
    if isinstance(found, Skipped):
        # without the sampler the load generator's own errors still say it (the limit's figures do not)
        failed = [r for r in runs if r.limit_error]
        if not failed or found.reason not in (NO_SAMPLER, NO_STEPS):
            return found
        hc = HostConnections("db", None, None, None, 0.0, None, None, None)
        hc.steps = [StepConnections(r, None, None, 0.0, None) for r in runs]
        return [_finding(hc, lim)]
    out = []
    counted = False
    for hc in found.values():
        counted = counted or hc.refused is not None or hc.connected_peak is not None
        refused = (hc.refused or 0) >= lim["min_refused"]
        near = (
            hc.max_connections is not None
            and hc.in_use_peak is not None
            and hc.in_use_peak >= lim["near_share"] * hc.max_connections
        )
        if refused or hc.limit_failures or near:
            out.append(_finding(hc, lim))
    if not out and not counted:
        return Skipped(RULE, NO_COUNTERS)
    return out


# ---------------------------------------------------------------- prose


def _n(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:,.0f}"


def _finding(hc: HostConnections, lim: dict[str, Any]) -> Finding:
    failed = hc.limit_failures
    refused = (hc.refused or 0) >= lim["min_refused"]
    critical = refused or bool(failed)
    user_limit = any(s.run.limit_error == "max_user_connections" for s in failed)
    limit = f"max_connections {_n(hc.max_connections)}" if hc.max_connections is not None else None
    peak = hc.in_use_peak
    parts = []
    if hc.refused:
        parts.append(
            f"{_n(hc.refused)} connects refused at the limit (Connection_errors_max_connections)"
            + (f", {_n(hc.aborted)} aborted connects" if hc.aborted else "")
        )
    if failed:
        steps = ", ".join(f"{s.run.name} ({count(s.run.threads or 0, 'thread')})" for s in failed)
        err = "max_user_connections (1203)" if user_limit else "Too many connections (1040)"
        parts.append(f"the load generator failed with {err} at {steps}: out of the sweep model")
    if peak is not None:
        held = f"at most {_n(peak)} connections in use"
        parts.append(f"{held} against {limit}" if limit else f"{held} (Max_used_connections)")
    elif limit:
        parts.append(limit)
    ok = hc.evidence()["highest_ok_threads"]
    if critical:
        first = failed[0].run.threads if failed else None
        title = f"Connections refused at the server's limit{f' ({limit})' if limit else ''}" + (
            f": the load failed from {count(first, 'thread')}" if first else ""
        )
    else:
        title = f"Connections at the server's limit: {_n(peak)} of {_n(hc.max_connections)} in use"
    summary = (
        "; ".join(parts)
        + (f"; the sweep measured up to {count(ok, 'thread')}" if ok and failed else "")
        + "."
    )
    return Finding(
        rule=RULE,
        severity="critical" if critical else "warning",
        title=title,
        summary=summary[0].upper() + summary[1:],
        evidence=hc.evidence(),
        hosts=[hc.host],
        window=(failed[0].run.start.isoformat(), failed[-1].run.end.isoformat()) if failed else None,
        explanation=(
            "A MySQL or MariaDB server accepts at most max_connections client connections (one more "
            "for an administrator: MariaDB's Max_used_connections can read max_connections + 1); the next "
            "connect is refused with error 1040 'Too many connections' and counted in "
            "Connection_errors_max_connections and Aborted_connects. A load generator that cannot "
            "open its connections measures nothing at that level (sysbench gives up the whole run), "
            "and an application sees errors, not slowness. perfkit's DB sampler holds one connection "
            "through the run, counted among them. Error 1203 is a per-user cap (max_user_connections), "
            "not the server's."
        ),
        next_steps=[
            "Raise max_connections only with memory in mind: every connection costs its thread stack "
            "and per-session buffers (sort, join, read buffers, tmp tables) when it works; check "
            "the server's memory at the new peak and open_files_limit/table_open_cache with it.",
            "Put a connection pool in front (ProxySQL, MaxScale, or the application's pool): many "
            "client connections share a few server sessions, and the server keeps a working concurrency.",
            "Size the client's own pool: more connections than the server can run at once only "
            "queue inside it (the sweep's knee is a good upper bound).",
            "MariaDB's thread pool (thread_handling=pool-of-threads) keeps many connections cheap "
            "and caps the active ones; Threadpool_threads/Threadpool_idle_threads show its queue.",
            "Tell the two limits apart: 1040 'Too many connections' is the server's max_connections, "
            "1203 '... max_user_connections' is the account's; raise the one that refused.",
        ],
    )


RULES = {RULE: connection_limit}

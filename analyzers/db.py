"""The database's own view of where transactions wait, from the DB sampler's `SHOW GLOBAL STATUS`
(parsers/mysql_status.py), per database host and sweep step.

`db.lock-contention`: over a step's load window (sweep.load_window), the status counters' deltas:

- lock waiting = ΔInnodb_row_lock_time (ms) / 1000 / Δt: seconds spent waiting on row locks per
  second, i.e. the number of transactions waiting on a row lock at any moment, on average (Little's
  law over the waits). Set against the step's threads it says how much of the offered concurrency
  is queued on rows rather than working.
- waits per second (ΔInnodb_row_lock_waits / Δt), per transaction (waits per second / the step's TPS
  from the sweep; without one, / Δ(Com_commit + Com_rollback) per second), and the mean wait.

The parser turns counters into per-second rates over each sample's own interval (NaN after a failed
sample or a restart), so a delta over a window is Σ rate × interval and Δt is Σ interval over the
samples with a rate: a gap is left out of both, never read as zero.

Sessions by state (`session_steps`): the sampler's processlist classes (parsers/mysql_status.py
`session_class`: lock, commit, io, cpu, net, other, idle; lock split by kind: row, metadata, global,
table, user) averaged over each step's load window — the database's own "where sessions wait"
series, shown beside the OS thread states (analyzers/waits.py) in the report. `db.lock-contention`
also reads it: sessions waiting on a metadata, global (FLUSH TABLES WITH READ LOCK, BACKUP STAGE),
table-level or user lock on average, at or past the knee, are a finding of their own (the row-lock
figures above stay the status counters'; a row lock does not show in State).

Without a load perfkit drove (a pt-stalk collection: `mysqladmin extended-status -i1` series, one
per collection window), each capture's window is judged on its own (`CaptureWindow`): no threads
were offered, so the share is of the transactions inside the server (Threads_running less
mysqladmin's own), and there is no knee to order the windows by. The sessions by state come from
the collection's own processlist samples (`-processlist`, parsers/mysql_processlist.py `by_class`:
the same classes, pt-stalk's monitoring statements left out; a row-lock wait shows there as the
statement's State, e.g. `Updating`, as SHOW PROCESSLIST prints it), and who blocks whom from its
`-lock-waits` (parsers/ptstalk_lock_waits.py) in that collection only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from perfkit.dataset import Dataset
from perfkit.findings import Finding, Skipped, count
from perfkit.parsers.mysql_processlist import by_class
from perfkit.parsers.mysql_status import ACTIVE_CLASSES, LOCK_KINDS, SESSION_CLASSES, from_mysqladmin

from ._blockers import Blocker, blockers
from .sweep import NO_LOAD, load_span, load_window

RULE = "db.lock-contention"
TOP_BLOCKERS = 5  # blocking statements named in the evidence
NO_SAMPLER = (
    "no DB status series (perfkit run's DB sampler, db/<host>/global_status.jsonl, or a `mysqladmin "
    "extended-status -i N` capture with times, as pt-stalk takes)"
)
NO_ROW_LOCKS = (
    "the server's status has no row-lock counters (Innodb_row_lock_time, Innodb_row_lock_waits): "
    "TiDB has none (its lock waits are in information_schema.data_lock_waits and TiKV's metrics)"
)


@dataclass(frozen=True)
class CaptureWindow:
    """A window of status samples without a load perfkit drove (a pt-stalk collection): its name
    and file; its threads and throughput are unknown."""

    name: str
    source: str
    threads: int | None = None
    tps: float | None = None


def window_name(step: Any) -> str | None:
    """A sweep step's name (`load/t0016/sysbench.out` -> `t0016`), or a capture window's."""
    if isinstance(step, CaptureWindow):
        return step.name
    parts = str(step.source).split("/")
    return parts[-2] if len(parts) >= 2 else None


def at(threads: int | None, name: str | None, *, first: bool = False) -> str:
    """`at 16 threads`, or `in the window NAME` for a capture window (no threads offered); capitalised
    to start a sentence with `first`."""
    text = f"at {count(threads, 'thread')}" if threads is not None else f"in the window {name}"
    return text[:1].upper() + text[1:] if first else text


def judged(steps: list[Any], knee: int | None) -> list[Any]:
    """The steps a rule judges: at or past the knee, the highest without one; every capture window
    (nothing orders them by load)."""
    if any(s.threads is None for s in steps):
        return list(steps)
    return [s for s in steps if s.threads >= knee] if knee is not None else steps[-1:]


def judged_from(steps: list[Any], knee: int | None) -> str:
    if any(s.threads is None for s in steps):
        return "every capture window (no load perfkit drove: no knee)"
    return f"the knee ({count(knee, 'thread')})" if knee is not None else "the highest step (no knee)"


def in_order(items: list[Any]) -> list[Any]:
    """Steps by threads; capture windows by their start."""
    return sorted(items, key=lambda s: (s.threads if s.threads is not None else -1, s.window[0]))


@dataclass
class LockStep:
    """One sweep step's (or capture window's) row-lock figures on one database host."""

    threads: int | None
    step_source: str  # the load output the step came from
    seconds: float  # Δt the deltas cover (samples with a rate in the load window)
    samples: int
    lock_time_s: float  # ΔInnodb_row_lock_time / 1000
    lock_waits: float  # ΔInnodb_row_lock_waits
    transactions_s: float | None  # the sweep's TPS, else (ΔCom_commit + ΔCom_rollback) / Δt
    basis: str  # what transactions_s is
    window: tuple[str, str]
    inside: float | None = None  # transactions inside the server on average (the sampler's Threads_running)
    deadlocks: float | None = None  # ΔInnodb_deadlocks (MariaDB), None where the server counts none
    current_waits_median: float | None = None  # Innodb_row_lock_current_waits as sampled each second
    name: str | None = None  # the step's or capture window's name

    @property
    def waiting(self) -> float:
        """Transactions waiting on a row lock on average: lock seconds per second."""
        return self.lock_time_s / self.seconds

    @property
    def concurrency(self) -> float:
        """What the waiters are a share of: the transactions inside the server when the sampler
        measured them (a CPU-bound client keeps fewer there than its threads), else the step's threads."""
        return self.inside if self.inside is not None and self.inside > 0 else float(self.threads or 0)

    @property
    def waits_s(self) -> float:
        return self.lock_waits / self.seconds

    @property
    def waits_per_txn(self) -> float | None:
        return self.waits_s / self.transactions_s if self.transactions_s else None

    @property
    def avg_wait_ms(self) -> float | None:
        return self.lock_time_s * 1000 / self.lock_waits if self.lock_waits > 0 else None

    def to_list(self) -> list[Any]:
        return [
            self.threads if self.threads is not None else self.name,
            round(self.waiting, 3),
            round(self.waits_s, 1),
            None if self.waits_per_txn is None else round(self.waits_per_txn, 3),
            round(self.lock_time_s, 2),
            round(self.seconds, 2),
            round(self.concurrency, 2),
        ]


STEP_COLUMNS = [
    "threads",
    "lock_waiting",
    "waits_s",
    "waits_per_txn",
    "lock_time_s",
    "seconds",
    "concurrency",
]


def _mean(x: pd.Series) -> float | None:
    x = x.dropna()
    return float(x.mean()) if len(x) else None


def _median(x: pd.Series) -> float | None:
    x = x.dropna()
    return float(x.median()) if len(x) else None


def _delta(rows: pd.DataFrame, col: str) -> float:
    return float((rows[col] * rows["dt_s"]).sum())


@dataclass
class StatusWindow:
    """One sweep step's status samples on one database host: the rows inside the step's load window
    with `dt_s`, the interval each sample's rates cover (the rules' deltas are Σ rate × dt_s)."""

    step: Any  # sweep.Step
    rows: pd.DataFrame
    start: pd.Timestamp
    end: pd.Timestamp

    @property
    def window(self) -> tuple[str, str]:
        return (self.start.isoformat(), self.end.isoformat())

    def delta(self, col: str) -> float:
        """Σ rate × interval over the samples with a rate in `col` (a gap is left out, never zero)."""
        return _delta(self.rows[self.rows[col].notna()], col)

    def seconds(self, col: str) -> float:
        """Δt the delta of `col` covers."""
        return float(self.rows.loc[self.rows[col].notna(), "dt_s"].sum())

    def tps(self, sweep: Any) -> tuple[float | None, str]:
        """Transactions per second: the sweep's TPS, else (ΔCom_commit + ΔCom_rollback) / Δt."""
        tps = self.step.tps
        if tps and math.isfinite(tps) and tps > 0 and sweep is not None and sweep.metric == "tps":
            return float(tps), "sweep TPS"
        rows = self.rows[self.rows["dt_s"].notna()]
        seconds = float(rows["dt_s"].sum())
        commits = rows[["com_commit_s", "com_rollback_s"]].fillna(0).sum(axis=1)
        txn = float((commits * rows["dt_s"]).sum()) / seconds if seconds > 0 else 0.0
        return (txn or None), "Com_commit + Com_rollback"


@dataclass
class HostStatus:
    """One database host's sampled status: the whole series (`frame`, with `dt_s`) and its steps'."""

    frame: pd.DataFrame
    windows: list[StatusWindow]

    def has(self, col: str) -> bool:
        """Whether the server reported `col` at all (TiDB lacks most InnoDB counters)."""
        return bool(self.frame[col].notna().any()) if col in self.frame else False


def status_series(ds: Dataset) -> list[tuple[str, str | None, str, pd.DataFrame]]:
    """(host, capture step, path, frame) of every DB status series: perfkit's sampler, and
    `mysqladmin extended-status` captures read as one (parsers/mysql_status.py `from_mysqladmin`)."""
    out = []
    for cap in ds.of("mysql_status"):
        if len(cap.frame):
            f = cap.frame
            host = cap.host or str(f["host"].dropna().iloc[0] if f["host"].notna().any() else "db")
            out.append((host, cap.step, cap.path, f))
    for cap in ds.of("mysqladmin"):
        f = from_mysqladmin(cap.frame, cap.host)
        if f is not None and len(f):
            out.append((cap.host or "db", cap.step, cap.path, f))
    return out


def status_windows(ds: Dataset, sweep: Any, rule: str) -> dict[str, HostStatus] | Skipped:
    """host -> its status series and steps' samples (in step order), or Skipped naming what is missing.

    The steps are the sweep's, over their load windows; without a sweep, the windows of the series
    captured in one (a pt-stalk collection: `CaptureWindow`)."""
    series = status_series(ds)
    if not series:
        return Skipped(rule, NO_SAMPLER)
    if sweep is None:
        return _capture_windows(series) or Skipped(rule, NO_LOAD)
    windows = [(s, load_window(ds.records.get(s.source))) for s in sweep.steps]
    windows = [(s, w) for s, w in windows if w is not None]
    if not windows:
        return Skipped(rule, "no step has its load run's start and end in a perfkit run manifest")
    out: dict[str, HostStatus] = {}
    for host, _step, _path, f in series:
        frame = _with_dt(f)
        t = frame["timestamp"]
        steps = [StatusWindow(step, frame[(t >= a) & (t <= b)], a, b) for step, (a, b) in windows]
        out[host] = HostStatus(frame, steps)
    return out


def _with_dt(f: pd.DataFrame) -> pd.DataFrame:
    frame = f.sort_values("timestamp").reset_index(drop=True)
    # each rate covers the interval since the previous sample
    frame["dt_s"] = frame["timestamp"].diff().dt.total_seconds()
    return frame


def _capture_windows(series: list[tuple[str, str | None, str, pd.DataFrame]]) -> dict[str, HostStatus]:
    """host -> one window per series captured in a window of its own (its step: a pt-stalk prefix)."""
    out: dict[str, HostStatus] = {}
    for host, step, path, f in series:
        if step is None:
            continue  # a whole run's series without its steps' times: nothing to cut it by
        frame = _with_dt(f)
        t = frame["timestamp"].dropna()
        if t.empty:
            continue
        w = StatusWindow(CaptureWindow(step, path), frame, t.iloc[0], t.iloc[-1])
        if host in out:
            both = pd.concat([out[host].frame, frame], ignore_index=True)
            out[host] = HostStatus(both, [*out[host].windows, w])
        else:
            out[host] = HostStatus(frame, [w])
    return out


def server_variables(ds: Dataset, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """host -> {variable: its number, else its value as printed}: the last reading of the per-step
    variables snapshots (kind `mysql_variables`) of the variables `names` (lower case)."""
    found: dict[str, dict[str, Any]] = {}
    for cap in ds.of("mysql_variables"):
        f = cap.frame
        rows = f[f["name"].astype("string").str.lower().isin(names)]
        for _, row in rows.sort_values("timestamp").iterrows():
            host = row["host"] if isinstance(row["host"], str) and row["host"] else cap.host
            value = float(row["number"]) if pd.notna(row["number"]) else str(row["value"])
            found.setdefault(str(host), {})[str(row["name"]).lower()] = value
    return found


def variables_for(host: str, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`host`'s variables; the only server's when the two captures name it differently (the status
    sampler's host:port, a snapshot's alias)."""
    got = found.get(host)
    if got is None and len(found) == 1:
        got = next(iter(found.values()))
    return dict(got or {})


def lock_steps(
    ds: Dataset, sweep: Any, min_samples: int = 1, windows: dict[str, HostStatus] | Skipped | None = None
) -> dict[str, list[LockStep]] | Skipped:
    """host -> its steps' row-lock figures (ordered by threads), or Skipped with the reason.
    `windows`: status_windows' answer when the caller has it already."""
    found_windows = status_windows(ds, sweep, RULE) if windows is None else windows
    if isinstance(found_windows, Skipped):
        return found_windows
    out: dict[str, list[LockStep]] = {}
    any_counters = False
    for host, status in found_windows.items():
        if not status.has("innodb_row_lock_time_ms_s"):
            continue
        any_counters = True
        found = []
        for w in status.windows:
            rows = w.rows
            rows = rows[rows["innodb_row_lock_time_ms_s"].notna() & rows["innodb_row_lock_waits_s"].notna()]
            if len(rows) < min_samples or not rows["dt_s"].sum() > 0:
                continue
            txn, basis = StatusWindow(w.step, rows, w.start, w.end).tps(sweep)
            found.append(
                LockStep(
                    threads=w.step.threads,
                    step_source=w.step.source,
                    seconds=float(rows["dt_s"].sum()),
                    samples=len(rows),
                    lock_time_s=_delta(rows, "innodb_row_lock_time_ms_s") / 1000,
                    lock_waits=_delta(rows, "innodb_row_lock_waits_s"),
                    transactions_s=txn,
                    basis=basis,
                    window=w.window,
                    inside=_mean(rows["threads_running_avg"].clip(lower=0)),
                    deadlocks=_delta(rows, "innodb_deadlocks_s")
                    if rows["innodb_deadlocks_s"].notna().any()
                    else None,
                    current_waits_median=_median(rows["innodb_row_lock_current_waits"]),
                    name=window_name(w.step),
                )
            )
        if found:
            out[host] = in_order(found)
    if not any_counters:
        return Skipped(RULE, NO_ROW_LOCKS)
    if not out:
        return Skipped(
            RULE, f"fewer than {count(min_samples, 'status sample')} inside any step's load window"
        )
    return out


@dataclass
class SessionStep:
    """One sweep step's sessions by class on one database host: the mean over the step's samples."""

    host: str
    step: str | None  # the step's name (load/<step>/...), or a capture window's (pt-stalk prefix)
    threads: int | None  # None: a capture window (no load perfkit drove)
    source: str
    samples: int  # processlist samples with by_state inside the load window
    classes: dict[str, float]  # class -> sessions in it on average
    locks: dict[str, float]  # lock kind -> sessions waiting on it on average
    window: tuple[str, str]

    @property
    def active(self) -> float:
        return sum(self.classes.get(c, 0.0) for c in ACTIVE_CLASSES)

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "step": self.step,
            "threads": self.threads,
            "samples": self.samples,
            "active": round(self.active, 3),
            "classes": {c: round(self.classes.get(c, 0.0), 3) for c in SESSION_CLASSES},
            "lock_kinds": {k: round(self.locks.get(k, 0.0), 3) for k in LOCK_KINDS},
            "window": list(self.window),
        }


def session_steps(found: dict[str, HostStatus]) -> dict[str, list[SessionStep]]:
    """host -> its steps' sessions by class (ordered by threads); hosts without by_state left out."""
    out: dict[str, list[SessionStep]] = {}
    for host, status in found.items():
        if not status.has("sessions_idle"):
            continue
        steps = []
        for w in status.windows:
            if w.step.threads is None:
                continue  # a capture window's series holds no processlist (module docstring)
            rows = w.rows[w.rows["sessions_idle"].notna()]
            if rows.empty:
                continue
            steps.append(
                SessionStep(
                    host=host,
                    step=window_name(w.step),
                    threads=w.step.threads,
                    source=w.step.source,
                    samples=len(rows),
                    classes={c: float(rows[f"sessions_{c}"].mean()) for c in SESSION_CLASSES},
                    locks={k: float(rows[f"sessions_lock_{k}"].mean()) for k in LOCK_KINDS},
                    window=w.window,
                )
            )
        if steps:
            out[host] = sorted(steps, key=lambda s: s.threads)
    return out


def capture_sessions(ds: Dataset) -> dict[str, list[SessionStep]]:
    """host -> its capture windows' sessions by class, from processlist samples captured in a window
    of their own (pt-stalk's `-processlist`, its prefix the step), in window order."""
    out: dict[str, list[SessionStep]] = {}
    trx = {(c.host, c.step): c.frame for c in ds.of("mysql_transactions") if c.step is not None}
    for cap in ds.of("mysql_processlist"):
        waiting = _lock_wait(cap.frame, trx.get((cap.host, cap.step)))
        rows = by_class(cap.frame, waiting).dropna(subset=["timestamp"])
        if cap.step is None or rows.empty:
            continue
        t = rows["timestamp"]
        out.setdefault(cap.host or "db", []).append(
            SessionStep(
                host=cap.host or "db",
                step=cap.step,
                threads=None,
                source=cap.path,
                samples=len(rows),
                classes={c: float(rows[f"sessions_{c}"].mean()) for c in SESSION_CLASSES},
                locks={k: float(rows[f"sessions_lock_{k}"].mean()) for k in LOCK_KINDS},
                window=(t.min().isoformat(), t.max().isoformat()),
            )
        )
    return {h: sorted(steps, key=lambda s: s.window) for h, steps in out.items()}


def _lock_wait(plist: pd.DataFrame, trx: pd.DataFrame | None) -> dict[int, set[int]] | None:
    """sample -> sessions in LOCK WAIT, from the same collection's INNODB_TRX snapshots, when both were
    taken each second and count alike (pt-stalk starts both at once; the transactions file skips a
    second with no transaction, and then its snapshots no longer line up with the samples: None)."""
    if trx is None or trx.empty or trx["snapshot"].nunique() != plist["sample"].nunique():
        return None
    waiting = trx[trx["state"] == "LOCK WAIT"]
    by_snap = {int(k): {int(x) for x in g.dropna()} for k, g in waiting.groupby("snapshot")["thread_id"]}
    return {int(s): by_snap.get(i, set()) for i, s in enumerate(sorted(plist["sample"].dropna().unique()))}


def _with_captures(sessions: dict[str, list[SessionStep]], ds: Dataset) -> dict[str, list[SessionStep]]:
    for host, steps in capture_sessions(ds).items():
        sessions[host] = [*sessions.get(host, []), *steps]
    return sessions


def session_profiles(ds: Dataset, sweep: Any | None) -> list[SessionStep]:
    """Every database host's sessions by class per step (for the report), in host and step order;
    empty without a sampler that kept them, a sweep or step times."""
    found = status_windows(ds, sweep, RULE)
    sessions = session_steps(found) if not isinstance(found, Skipped) else {}
    return [s for steps in _with_captures(sessions, ds).values() for s in steps]


def lock_contention(ds: Dataset, sweep: Any | None, th: dict[str, dict[str, Any]]) -> list[Finding] | Skipped:
    """Transactions queue on row locks: a large share of the transactions inside the server (else of
    the step's threads) wait on a row lock on average, at or past the knee (the highest step
    without one). And sessions queue on metadata, global, table or user locks (the processlist's
    states): its own finding, from the sessions by state."""
    lim = th[RULE]
    windows = status_windows(ds, sweep, RULE)
    found = lock_steps(ds, sweep, int(lim["min_samples"]), windows)
    sessions = _with_captures(session_steps(windows) if not isinstance(windows, Skipped) else {}, ds)
    if isinstance(found, Skipped) and not sessions:
        return found
    knee = getattr(sweep, "knee_threads", None)
    records = ds.records
    out = []
    for host, steps in ({} if isinstance(found, Skipped) else found).items():
        hits = [
            s
            for s in judged(steps, knee)
            if s.waiting >= lim["min_waiting"] and s.waiting >= lim["min_concurrency_share"] * s.concurrency
        ]
        if hits:
            hit = hits[-1]
            if hit.threads is None:  # a capture window: its own collection's lock waits
                span, step = (pd.Timestamp(hit.window[0]), pd.Timestamp(hit.window[1])), hit.name
            else:
                span, step = load_span(records.get(hit.step_source)), None
            top = blockers(ds, host, *span, step=step)[:TOP_BLOCKERS] if span is not None else []
            out.append(_finding(host, steps, hit, knee, lim, top))
    for host, steps in sessions.items():
        f = _session_lock_finding(host, steps, knee, lim)
        if f is not None:
            out.append(f)
    return out


# The kinds the sessions' states name (row locks are the status counters' finding above).
SESSION_LOCKS = ("metadata", "global", "table", "user")
_LOCK_WORDS = {
    "metadata": (
        "a table metadata lock",
        "a long transaction that touched the table, or DDL (ALTER TABLE, LOCK TABLES ... WRITE) "
        "queued behind one, holds the table",
    ),
    "global": (
        "the global read lock or backup lock",
        "FLUSH TABLES WITH READ LOCK (as a backup takes it), BACKUP STAGE or LOCK INSTANCE FOR "
        "BACKUP holds every write",
    ),
    "table": (
        "a table-level lock",
        "LOCK TABLES, or a non-transactional engine's table lock, holds the table",
    ),
    "user": ("a user lock (GET_LOCK)", "the application serializes on a named lock"),
}


def _session_lock_finding(
    host: str, steps: list[SessionStep], knee: int | None, lim: dict[str, Any]
) -> Finding | None:
    """Sessions waiting on metadata/global/table/user locks on average, at or past the knee (every
    capture window: the share is then of the sessions active in the server)."""
    windows = [s for s in steps if s.threads is None]
    steps = [s for s in steps if s.threads is not None] or windows
    if steps is windows:
        judged = windows
    else:
        judged = [s for s in steps if s.threads >= knee] if knee is not None else [steps[-1]]
    judged = [s for s in judged if s.samples >= int(lim["min_samples"])]

    def waiting(s: SessionStep) -> float:
        return sum(s.locks.get(k, 0.0) for k in SESSION_LOCKS)

    def offered(s: SessionStep) -> float:
        return float(s.threads) if s.threads is not None else s.active

    hits = [
        s
        for s in judged
        if waiting(s) >= lim["min_session_waiting"] and waiting(s) >= lim["min_session_share"] * offered(s)
    ]
    if not hits:
        return None
    s = hits[-1]
    total = waiting(s)
    kinds = sorted(
        ((k, s.locks.get(k, 0.0)) for k in SESSION_LOCKS if s.locks.get(k, 0.0) > 0), key=lambda kv: -kv[1]
    )
    kind = kinds[0][0]
    what, why = _LOCK_WORDS[kind]
    share = total / offered(s)
    critical = total >= lim["critical_thread_share"] * offered(s)
    low = steps[0] if s.threads is not None else s  # capture windows have no order by load
    since = f"; {waiting(low):.2f} waiting at {count(low.threads, 'thread')}" if low is not s else ""
    others = "".join(f", {n:.1f} on {_LOCK_WORDS[k][0]}" for k, n in kinds[1:])
    where = judged_from(steps, knee)
    of = "the step's threads" if s.threads is not None else "the sessions active"
    summary = (
        f"{at(s.threads, s.step, first=True)}, {s.locks[kind]:.1f} sessions waiting for {what} on "
        f"average{others} ({share * 100:.0f}% of {of}; {s.active:.1f} sessions active, mean of "
        f"{count(s.samples, 'processlist sample')}): {why}{since}."
    )
    return Finding(
        rule=RULE,
        severity="critical" if critical else "warning",
        title=f"Sessions wait for {what}: {total:.1f} of {s.threads} threads on average"
        if s.threads is not None
        else f"Sessions wait for {what}: {total:.1f} of {s.active:.1f} active on average in {s.step}",
        summary=summary,
        evidence={
            "host": host,
            "threads": s.threads,
            "lock_kind": kind,  # the kind most sessions wait on
            "sessions_waiting": total,  # on metadata, global, table and user locks, on average
            "sessions_by_kind": {k: s.locks.get(k, 0.0) for k in LOCK_KINDS},
            "sessions_active": s.active,
            "sessions_share": share,  # of the step's threads (the concurrency offered)
            "sessions_by_class": dict(s.classes),
            "samples": s.samples,
            "knee_threads": knee,
            "judged_from": where,
            "session_columns": ["threads", "waiting", *LOCK_KINDS, "active"],
            "session_steps": [
                [
                    x.threads,
                    round(waiting(x), 3),
                    *(round(x.locks.get(k, 0.0), 3) for k in LOCK_KINDS),
                    round(x.active, 3),
                ]
                for x in steps
            ],
            "source": s.source,
        },
        hosts=[host],
        window=s.window,
        explanation=(
            "The database's processlist, sampled every second, shows sessions in a lock-wait state "
            '("Waiting for table metadata lock", "Waiting for backup lock", "Waiting for global read '
            'lock", "Waiting for table level lock", ...): each waits for another session to release a '
            "lock on the table or on the whole server, not for a row. The mean over the step is the "
            "sessions queued on it at any moment, on average; while the holder keeps it, adding threads adds "
            "waiters, not throughput, and the server's own response time grows by the wait."
        ),
        next_steps=[
            "Name the holder: SHOW PROCESSLIST (the oldest transaction, a session in ALTER TABLE or "
            "FLUSH TABLES), performance_schema.metadata_locks (MariaDB 10.5+, MySQL 8.0; "
            "sys.schema_table_lock_waits on MySQL) or information_schema.METADATA_LOCK_INFO (MariaDB's "
            "plugin); INNODB_TRX's trx_started finds the long transaction.",
            "Keep transactions short: a transaction left open after reading a table holds its metadata "
            "lock until COMMIT, and a pending ALTER TABLE behind it queues every later statement.",
            "Run DDL with online algorithms and a short lock_wait_timeout (ALTER ... WAIT n / NOWAIT on "
            "MariaDB) or through pt-online-schema-change/gh-ost, outside the peak.",
            "Backups: take InnoDB backups without a global lock (mariadb-backup with BACKUP STAGE, "
            "mysqldump --single-transaction without --lock-all-tables) or on a replica.",
        ],
    )


def _finding(
    host: str, steps: list[LockStep], s: LockStep, knee: int | None, lim: dict[str, Any], top: list[Blocker]
) -> Finding:
    share = s.waiting / s.concurrency if s.concurrency > 0 else None
    offered = s.threads if s.threads is not None else s.concurrency
    critical = s.waiting >= lim["critical_thread_share"] * offered
    # what grew with concurrency: against the lowest step (capture windows have no order by load)
    low = steps[0] if s.threads is not None else s
    growth = s.waiting / low.waiting if low is not s and low.waiting > 0 else None
    per_txn = f", {s.waits_per_txn:.2f} waits per transaction" if s.waits_per_txn is not None else ""
    mean = f", {s.avg_wait_ms:.1f} ms each" if s.avg_wait_ms is not None else ""
    since = (
        f"; {low.waiting:.2f} waiting {at(low.threads, low.name)} ({growth:.0f}× less)"
        if growth is not None
        else (f"; none {at(low.threads, low.name)}" if low is not s else "")
    )
    where = judged_from(steps, knee)
    of = (
        f"{share * 100:.0f}% of the {s.concurrency:.1f} transactions inside the server"
        if share is not None
        else "no transaction counted inside the server"
    )
    summary = (
        f"{at(s.threads, s.name, first=True)}, {s.waiting:.1f} transactions waiting on row locks on "
        "average "
        f"({s.lock_time_s:.1f} s of lock time in {s.seconds:.1f} s; {of}): "
        f"{s.waits_s:,.0f} waits a second{mean}{per_txn}{since}"
        + (f"; {s.deadlocks:.0f} deadlocks" if s.deadlocks else "")
        + "."
        + (
            f" Blocking most in the step's lock-wait snapshots: {top[0].statement} on "
            f"{top[0].table or 'a table'} ({count(top[0].waiting, 'wait')} on it); the waiters run "
            f"{top[0].waiting_statement}."
            if top
            else ""
        )
    )
    return Finding(
        rule=RULE,
        severity="critical" if critical else "warning",
        title=(
            f"Transactions wait on row locks: {s.waiting:.1f} of {s.threads} threads on average"
            if s.threads is not None
            else f"Transactions wait on row locks: {s.waiting:.1f} on average in {s.name}"
        ),
        summary=summary,
        evidence={
            "host": host,
            "threads": s.threads,
            "window_name": s.name,
            "lock_waiting": s.waiting,  # lock time per second = transactions waiting on average
            "lock_waiting_share": share,  # of `concurrency`
            "concurrency": s.concurrency,
            "server_concurrency": s.inside,
            "lock_time_s": s.lock_time_s,
            "seconds": s.seconds,
            "samples": s.samples,
            "lock_waits": s.lock_waits,
            "waits_s": s.waits_s,
            "waits_per_txn": s.waits_per_txn,
            "txn_basis": s.basis,
            "transactions_s": s.transactions_s,
            "avg_wait_ms": s.avg_wait_ms,
            "current_waits_median": s.current_waits_median,  # Innodb_row_lock_current_waits, each second
            "deadlocks": s.deadlocks,  # ΔInnodb_deadlocks over the step (MariaDB); None: not counted
            "knee_threads": knee,
            "judged_from": where,
            "growth": growth,  # lock waiting at this step / at the lowest step
            "step_columns": STEP_COLUMNS,
            "steps": [x.to_list() for x in steps],
            "source": s.step_source,
            # who blocks whom in the step's lock-wait snapshots (collectors/db_snapshot.py), most waits
            # first; empty without them (no PROCESS privilege, no snapshot caught a wait)
            "blockers": [asdict(b) for b in top],
        },
        hosts=[host],
        window=s.window,
        explanation=(
            "InnoDB adds the time every transaction spends waiting for a row lock to Innodb_row_lock_time; "
            "its growth per second of wall time is the average number of transactions waiting on a lock "
            "(Little's law). When that is a large share of the threads offered, adding threads adds "
            "waiters, not throughput: transactions queue on the same rows and run one after another. "
            "The server's own response time grows because of it (rt.localized's server tier)."
        ),
        next_steps=[
            "Find the hot rows: SHOW ENGINE INNODB STATUS (TRANSACTIONS) and "
            "information_schema.innodb_lock_waits/innodb_trx (performance_schema.data_lock_waits on "
            "MySQL 8.0) during the load name who blocks whom; counters, sequences and status rows "
            "updated by every transaction are the usual ones.",
            "Spread the keys (shard a counter over N rows and sum them; avoid monotonic hot spots) "
            "and keep transactions short: take the hot row's lock last, commit right after.",
            "Batch updates to a hot row in the application (one update of +N instead of N of +1).",
            "Check the isolation level: REPEATABLE READ's gap and next-key locks block more than "
            "READ COMMITTED's record locks.",
            "On TiDB, compare optimistic and pessimistic transactions: optimistic ones do not wait "
            "but fail and retry at commit — watch for retry storms (write conflicts, "
            "tidb_retry_limit) instead of waits.",
            "Cap concurrency on the hot path (a connection pool near the knee): more threads only "
            "lengthen the lock queue.",
        ],
    )


RULES = {RULE: lock_contention}

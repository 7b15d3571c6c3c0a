"""A collection session's records (design.md's manifest record per capture, an outcome per host),
the one place that changes them, and the manifest made of them.

A capture's record is written by its host's thread (preflight, output stream, sampler, clean-up),
read by the main thread about five times a second for the status line, and written into the
manifest by the main thread, while host threads may still run after a second Ctrl-C; HTTP profile
threads add records of their own. So one `Ledger` per `session.capture` owns them: after a record is
made, only the ledger changes it, under its lock, from fields a worker hands it (`merge`), and every
reader gets copies. A worker never holds a shared record to mutate.
"""

from __future__ import annotations

import copy
import dataclasses
import resource
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from perfkit import __version__
from perfkit.archive import MANIFEST_VERSION
from perfkit.manifest import Controller, HostOutcome, InventoryHost, Manifest, Record

if TYPE_CHECKING:
    from perfkit.transport import HostSpec

    from .session import Options

SAMPLER_ID = "psutil"


class Stop(threading.Event):
    """Set when the run must end early; `reason` says why ("interrupted" or "disk_full") and `by` who
    interrupted it ("the user" for Ctrl-C, else the signal's name: "SIGTERM", "SIGHUP")."""

    reason = ""
    by = "the user"

    def trigger(self, reason: str, *, by: str | None = None) -> None:
        if not self.is_set():
            self.reason = reason
            self.by = by or self.by
        self.set()

    def said(self) -> str:
        """Why the run stopped, as the manifest's reasons put it."""
        return "archive disk full" if self.reason == "disk_full" else f"stopped by {self.by}"


def host_dir(host: str, step: str | None) -> str:
    """Where a host's files go in the archive: `hosts/<host>`, or `hosts/<host>/<step>` in a sweep."""
    return f"hosts/{host}/{step}" if step else f"hosts/{host}"


def now() -> str:
    """The records' clock: UTC, milliseconds, `Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(Record))
_OUTCOME_FIELDS = frozenset(f.name for f in dataclasses.fields(HostOutcome))


class Ledger:
    """The records and host outcomes of one window of captures, and the only code that changes them.

    Host threads `add` their records and `merge` what they learn; the HTTP profile threads
    `add_profiles`; the main thread reads copies (`records`, `outcomes`, `profiles`). A host's
    outcome is settled from its own records (`settle_host`); the profile records' share of an
    outcome is added on reading, so it never depends on which thread finished first.
    """

    def __init__(self, hosts: list[str]):
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Record]] = {h: {} for h in hosts}
        self._outcomes = {h: HostOutcome(h) for h in hosts}
        self._profiles: list[dict] = []

    def add(self, record: Record) -> None:
        """A new record, pending; its host's thread adds it before the host's work starts."""
        with self._lock:
            self._records.setdefault(record.host, {})[record.id] = copy.copy(record)

    def merge(self, host: str, capture_id: str, **fields: Any) -> None:
        """Set `fields` on one capture's record."""
        unknown = set(fields) - _RECORD_FIELDS
        if unknown:
            raise TypeError(f"not a record field: {', '.join(sorted(unknown))}")
        with self._lock:
            rec = self._records[host][capture_id]
            for name, value in fields.items():
                setattr(rec, name, value)

    def merge_outcome(self, host: str, **fields: Any) -> None:
        """Set `fields` on a host's outcome; `leftovers_killed` is merged key by key."""
        unknown = set(fields) - _OUTCOME_FIELDS
        if unknown:
            raise TypeError(f"not an outcome field: {', '.join(sorted(unknown))}")
        with self._lock:
            outcome = self._outcomes.setdefault(host, HostOutcome(host))
            for name, value in fields.items():
                if name == "leftovers_killed":
                    outcome.leftovers_killed = {**outcome.leftovers_killed, **value}
                else:
                    setattr(outcome, name, value)

    def get(self, host: str, capture_id: str) -> Record | None:
        """A copy of one record (None when the host has no such capture)."""
        with self._lock:
            rec = self._records.get(host, {}).get(capture_id)
            return copy.copy(rec) if rec is not None else None

    def fail_host(self, host: str, reason: str, *, skip: str | None) -> None:
        """The host failed: its outcome says why and, with `skip`, its captures still pending are
        skipped with that reason."""
        with self._lock:
            outcome = self._outcomes.setdefault(host, HostOutcome(host))
            outcome.status, outcome.reason = "failed", reason
            for rec in self._records.get(host, {}).values():
                if skip is not None and rec.status == "pending":
                    rec.status, rec.reason = "skipped", skip

    def settle_host(self, host: str, stop: Stop) -> HostOutcome:
        """A host's outcome once its thread is done with it, from its records: interrupted when the
        run was stopped, partial when a capture was lost, timed out, failed or cut; a copy."""
        with self._lock:
            outcome = self._outcomes.setdefault(host, HostOutcome(host))
            records = list(self._records.get(host, {}).values())
            bad = [r for r in records if r.status in ("lost", "timed_out", "failed") or r.truncated]
            if outcome.status == "ok" and stop.is_set():
                outcome.status = stop.reason or "interrupted"
                outcome.reason = stop.said()
            elif outcome.status == "ok" and bad:
                outcome.status = "partial"
                outcome.reason = "; ".join(f"{r.id}: {r.reason or r.status}" for r in bad[:5])
            outcome.captures = sum(r.status == "ok" for r in records)
            outcome.bytes = sum(r.bytes for r in records)
            return copy.deepcopy(outcome)

    def add_profiles(self, records: list[dict]) -> None:
        """Records of HTTP profile fetches (`pprof.collect_profiles`), complete when added."""
        with self._lock:
            self._profiles.extend(records)

    def records(self) -> dict[str, list[Record]]:
        """Copies of every host's records, in the order they were added."""
        with self._lock:
            return {h: [copy.copy(r) for r in rs.values()] for h, rs in self._records.items()}

    def profiles(self) -> list[dict]:
        with self._lock:
            return [dict(r) for r in self._profiles]

    def outcomes(self) -> dict[str, HostOutcome]:
        """Copies of the host outcomes with the profile records' share: a failed fetch makes an ok
        host partial; every fetch's bytes and each ok one count; a service on no captured host gets
        an outcome of its own, after the hosts."""
        with self._lock:
            out = {h: copy.deepcopy(o) for h, o in self._outcomes.items()}
            for rec in self._profiles:
                outcome = out.setdefault(rec["host"], HostOutcome(rec["host"]))
                if rec["status"] != "ok" and outcome.status == "ok":
                    outcome.status, outcome.reason = "partial", f"{rec['id']}: {rec['reason']}"
                outcome.captures += rec["status"] == "ok"
                outcome.bytes += rec.get("bytes", 0)
            return out


def manifest(
    hosts: list[HostSpec],
    opts: Options,
    created: str,
    records: dict[str, list[Record]],
    outcomes: dict[str, HostOutcome],
    *,
    stop: Stop,
    aborted: bool = False,
    roles: dict[str, tuple[str, ...]] | None = None,
    extra_records: list[dict] | None = None,  # written elsewhere (the sweep's, the profiles'): as Records
) -> Manifest:
    """The archive's manifest (format v1, design.md) from the records and outcomes of a run."""
    states = [o.status for o in outcomes.values()]
    if stop.reason == "disk_full":
        status, reason = "disk_full", "the archive's filesystem filled up; everything written before is kept"
    elif stop.is_set():
        status = "interrupted"
        reason = (
            f"{stop.said()}; a second Ctrl-C ended the waiting: minimal manifest" if aborted else stop.said()
        )
    elif all(s == "ok" for s in states):
        status, reason = "complete", ""
    elif all(s == "failed" for s in states):
        status, reason = "failed", "; ".join(o.reason for o in outcomes.values())[:500]
    else:
        status = "partial"
        reason = "; ".join(f"{o.host}: {o.status}" for o in outcomes.values() if o.status != "ok")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Manifest(
        format_version=MANIFEST_VERSION,
        perfkit_version=__version__,
        run_id=opts.run_id,
        created_at=created,
        ended_at=now(),
        status=status,
        reason=reason,
        window_s=opts.window,
        interval_s=opts.interval,
        inventory=[
            InventoryHost(
                name=h.name,
                hostname=h.hostname,
                port=h.port,
                user=h.user,
                accept_new_host_key=h.accept_new_host_key,
                roles=list((roles or {}).get(h.name, ())),
            )
            for h in hosts
        ],
        hosts=copy.deepcopy(list(outcomes.values())),  # as they were now: the manifest is their record
        controller=Controller(
            cpu_s=round(usage.ru_utime + usage.ru_stime, 3),
            max_rss_kb=usage.ru_maxrss,
            # psutil's view during the window, when the local host was captured
            window_cpu_pct=next(
                (o.perfkit_cpu_pct for o in outcomes.values() if o.perfkit_cpu_pct is not None), None
            ),
        ),
        captures=copy.deepcopy([r for rs in records.values() for r in rs])
        + [_as_record(r) for r in extra_records or []],
    )


def _as_record(fields: dict[str, Any]) -> Record:
    """A record another writer built as fields, through the one type (a field it does not know is a
    bug here, never dropped from the manifest)."""
    unknown = set(fields) - _RECORD_FIELDS
    if unknown:
        raise TypeError(f"not a record field: {', '.join(sorted(unknown))}")
    return Record.from_dict(fields)

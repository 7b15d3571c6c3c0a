"""The per-host runner: one thread per host, from connecting to clean-up.

In order: the host's records are made (each with its empty file: the manifest never lies), the
preflight (`_preflight`), the samplers that say when they sample (the thread sampler) started and
waited for, the gate that opens every host's window together, the other window captures each on a
channel of its own while the start snapshots run in the control shell, the end snapshots,
the clean-up (work dir removed; this run's stragglers swept). What it learns goes to the run's
`Ledger`, never into a shared record.
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from perfkit.errors import PerfkitError
from perfkit.redact import Redactor
from perfkit.transport import HostSpec, Job, Transport

from . import _preflight
from ._records import SAMPLER_ID, Ledger, Record, Stop, host_dir, now
from ._shell import (
    KILL_AFTER_S,
    SNAPSHOT_TIMEOUT_S,
    ControlShell,
    Segment,
    leftovers_killed,
    sweep_command,
    wait_readable,
    workdir,
    wrap,
)
from ._streams import Stream
from .captures import PHASES, CaptureSpec
from .sampler import Sampler, run_sampler

if TYPE_CHECKING:
    from .session import Options

# sshd's default MaxSessions is 10 channels per connection, the control shell's included: window
# captures get the rest while it is open, all of them once its snapshots are done (`_run_phase`).
MAX_CHANNELS = 10
# How long a host waits at most for its samplers to sample (`HostRun._lead`) before it goes on to the
# window. The Python thread sampler takes 0.1-0.5 s here to start and choose the named processes.
LEAD_WAIT_S = 3.0


class Gate:
    """Holds every host at the start of its window until all hosts are there or have dropped out, so
    the windows open together; a host more than `slack` seconds behind the first one does not hold
    the others back (it starts late, and its records' times say so)."""

    def __init__(self, parties: int, slack: float, opened: threading.Event | None = None):
        self.opened = opened or threading.Event()  # set when the first host's window opens
        self._cond = threading.Condition()
        self._pending = parties
        self._first: float | None = None
        self._slack = slack
        self._done: set[str] = set()

    def leave(self, who: str) -> None:
        """`who` will not reach the window (failed, stopped): stop waiting for it."""
        with self._cond:
            if who not in self._done:
                self._done.add(who)
                self._pending -= 1
                self._cond.notify_all()

    def wait(self, who: str, stop: threading.Event) -> None:
        with self._cond:
            if self._first is None:
                self._first = time.monotonic()
            if who not in self._done:
                self._done.add(who)
                self._pending -= 1
                self._cond.notify_all()
            while self._pending > 0 and not stop.is_set():
                left = self._first + self._slack - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.2))
            self.opened.set()


def host_main(
    spec: HostSpec,
    root: Path,
    opts: Options,
    ledger: Ledger,
    stop: Stop,
    connector: Callable[[HostSpec], Transport],
    progress: Callable[[str], None] | None,
    gate: Gate | None = None,
) -> None:
    """One host's thread: records, connection, the run, and its outcome settled in the ledger.
    One host failing never stops the others: its outcome says why."""
    gate = gate or Gate(1, 0)
    rel = host_dir(spec.name, opts.step)
    hostdir = root / rel
    hostdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for s in opts.specs:
        ledger.add(
            Record(
                id=s.id,
                host=spec.name,
                kind=s.kind,
                command="",
                path=f"{rel}/{s.id}.out",
                phase=s.phase,
                step=opts.step,
            )
        )
        # Every record has its file, empty when the capture never ran: the manifest never lies.
        (hostdir / f"{s.id}.out").touch(mode=0o600)
    if spec.hostname is None and opts.sampler:
        ledger.add(
            Record(
                id=SAMPLER_ID,
                host=spec.name,
                kind="psutil",
                command="psutil sampler (in perfkit)",
                path=f"{rel}/{SAMPLER_ID}.out",
                phase="window",
                step=opts.step,
                env={},
            )
        )
        (hostdir / f"{SAMPLER_ID}.out").touch(mode=0o600)
    try:
        with connector(spec) as tr:
            HostRun(spec, tr, hostdir, opts, ledger, stop, gate).run()
    except PerfkitError as exc:
        ledger.fail_host(spec.name, str(exc), skip=f"host failed: {exc}")
    except Exception as exc:  # a bug must not lose the other hosts' data
        ledger.fail_host(spec.name, f"internal error: {type(exc).__name__}: {exc}", skip=None)
    finally:
        gate.leave(spec.name)  # no-op once the host went through
    outcome = ledger.settle_host(spec.name, stop)
    if progress:
        progress(f"{spec.name}: {outcome.status}{' — ' + outcome.reason if outcome.reason else ''}")


class HostRun:
    """The steps on one connected host: preflight, start and window captures, end captures, cleanup."""

    def __init__(
        self,
        spec: HostSpec,
        tr: Transport,
        hostdir: Path,
        opts: Options,
        ledger: Ledger,
        stop: Stop,
        gate: Gate | None = None,
    ):
        self.spec, self.tr, self.hostdir, self.opts, self.ledger, self.stop = (
            spec,
            tr,
            hostdir,
            opts,
            ledger,
            stop,
        )
        self.host = spec.name
        self.workdir = workdir(opts.run_id, spec.name)
        self.gate = gate or Gate(1, 0)
        self.abandoned = False
        self.control = ControlShell(tr, self.workdir, opts.run_id)

    def _status(self, capture_id: str) -> str:
        record = self.ledger.get(self.host, capture_id)
        return record.status if record is not None else "missing"

    def run(self) -> None:
        try:
            self._run()
        except Exception:
            # Whatever went wrong here (the archive side's disk, a bug), the host keeps nothing of the
            # run: its work dir goes, and captures that may still run are swept. The error is the one
            # reported, not a failing clean-up's.
            with contextlib.suppress(Exception):
                self._clean_up(sweep=True)
            raise
        else:
            self._clean_up(sweep=self.abandoned)
        finally:
            self.control.close()

    def _run(self) -> None:
        self._preflight()
        by_phase = {p: [s for s in self.opts.specs if s.phase == p] for p in PHASES}
        lead = self._lead([s for s in by_phase["window"] if s.sampling])
        self.gate.wait(self.host, self.stop)
        if self.tr.alive() and not self.stop.is_set():
            sampler = self._start_sampler()
            # the start snapshots run in the control shell as the window opens, not before it
            rest = [s for s in by_phase["window"] if not s.sampling]
            self._run_phase(rest, batch=by_phase["start"], running=lead)
            if sampler is not None:
                self._finish_sampler(sampler)
        else:
            self._run_phase([], batch=[], running=lead)  # ends them: stopped, or the connection is lost
        if self.tr.alive() and not self.stop.is_set():
            self._run_phase([], batch=by_phase["end"])
        reason = "connection lost before it ran" if not self.tr.alive() else "stopped"
        for r in self.ledger.records().get(self.host, []):
            if r.status == "pending":
                self.ledger.merge(self.host, r.id, status="skipped", reason=reason)

    def _clean_up(self, *, sweep: bool) -> None:
        """Remove this host entry's work dir and, with `sweep`, kill its captures still alive there
        (only a capture given up on before it exited can have left a process behind); another entry
        for the same machine keeps its dir and its captures."""
        if not self.tr.alive():
            return
        kill = f"\n{sweep_command(self.opts.run_id, mine=True, host=self.host)}" if sweep else ""
        _, out, _ = self.control.run(
            f"cd / && rm -rf {shlex.quote(self.workdir)}{kill}", timeout=SNAPSHOT_TIMEOUT_S
        )
        self.ledger.merge_outcome(self.host, leftovers_killed={"end": leftovers_killed(out)})

    def _preflight(self) -> None:
        """Work dir, clock, tools and versions, free space, orphans: one round trip (`_preflight`)."""
        found = _preflight.run(self.control, self.host, self.opts.specs, self.opts.run_id)
        if found.leftovers is not None:
            self.ledger.merge_outcome(self.host, leftovers_killed={"start": found.leftovers})
        _preflight.check_space(
            self.host,
            self.workdir,
            found,
            self.opts.specs,
            window=self.opts.window,
            interval=self.opts.interval,
        )
        for s in self.opts.specs:
            self.ledger.merge(self.host, s.id, **found.record_fields(s))

    def _start_sampler(self) -> Sampler | None:
        if self.ledger.get(self.host, SAMPLER_ID) is None:
            return None
        self.ledger.merge(self.host, SAMPLER_ID, started_at=now())
        return run_sampler(
            self.hostdir / f"{SAMPLER_ID}.out",
            self.opts.interval,
            max(1, self.opts.window // self.opts.interval),
        )

    def _finish_sampler(self, sampler: Sampler) -> None:
        sampler.stop.set()
        sampler.join(self.opts.interval + 5)
        try:
            sampler.out.close()
        except OSError as exc:  # its last buffered line did not fit (a full archive disk): the rest is kept
            sampler.error = sampler.error or exc.strerror or str(exc)
        data = (self.hostdir / f"{SAMPLER_ID}.out").read_bytes()
        status, code = ("failed", 1) if sampler.error else ("ok", 0)
        self.ledger.merge(
            self.host,
            SAMPLER_ID,
            ended_at=now(),
            bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            status=status,
            exit_code=code,
            reason=sampler.error or "",
            tool_version=f"psutil {psutil.__version__}",
        )
        if sampler.own_cpu_pct:
            self.ledger.merge_outcome(
                self.host,
                perfkit_cpu_pct=round(sum(sampler.own_cpu_pct) / len(sampler.own_cpu_pct), 2),
                perfkit_rss_kb=sampler.own_rss_kb,
            )

    def _lead(self, specs: list[CaptureSpec]) -> list[Stream]:
        """Start the window captures that say when they sample (`CaptureSpec.sampling`), and wait
        until each does, has ended, or LEAD_WAIT_S has passed: the window opens (and a sweep's load
        starts) only then. They run their window from their start, a little before the others."""
        if not specs or not self.tr.alive() or self.stop.is_set():
            return []
        lead = [self._start(s, self.opts.window + self.opts.grace) for s in specs]
        until = time.monotonic() + LEAD_WAIT_S
        while not all(j.sampling or j.done for j in lead) and not self.stop.is_set():
            left = until - time.monotonic()
            if left <= 0:
                break
            wait_readable([j.job for j in lead if not j.done], min(left, 0.1))
            for j in lead:
                if not j.done:
                    j.pump()
        return lead

    def _run_phase(
        self, specs: list[CaptureSpec], *, batch: list[CaptureSpec], running: list[Stream] | None = None
    ) -> None:
        """Run `specs` (window captures) each on its own channel, and meanwhile `batch` (snapshots)
        one after another in the control shell, until these and the captures already `running` have
        ended. At most MAX_CHANNELS channels at a time, the control shell's included (sshd's
        MaxSessions is 10): when the window captures need its channel, the shell is closed once its
        snapshots are done."""
        queue = [s for s in specs if self._status(s.id) == "pending"]
        todo = [s for s in batch if self._status(s.id) == "pending"]
        deadline = self.opts.window + self.opts.grace
        running = list(running or [])
        segments: list[Segment] = []
        # Locally, give up a little after the remote `timeout` would have killed everything.
        hard_stop = (
            time.monotonic()
            + max(deadline if queue or running else 0, len(todo) * (SNAPSHOT_TIMEOUT_S + KILL_AFTER_S))
            + KILL_AFTER_S
            + 5
        )
        while queue or todo or any(not j.done for j in running):
            channels = sum(not j.done and not isinstance(j.job, Segment) for j in running)
            limit = MAX_CHANNELS - self.control.alive()
            while queue and channels < limit and not self.stop.is_set():
                running.append(self._start(queue.pop(0), deadline))
                channels += 1
            if todo and not self.stop.is_set():
                commands = self._commands(todo)
                for spec, seg in zip(todo, self.control.batch(commands, SNAPSHOT_TIMEOUT_S), strict=True):
                    running.append(self._stream(spec, seg))
                    segments.append(seg)
                todo = []
            if queue and segments and all(seg.code is not None for seg in segments):
                self.control.close()  # its channel is wanted by a window capture
            if self.stop.is_set():
                queue.clear()
                todo = []
            wait_readable([j.job for j in running if not j.done], 0.5)
            for j in running:
                if not j.done:
                    j.pump()
            if self.stop.is_set() or time.monotonic() > hard_stop:
                for j in running:
                    if not j.done:
                        self.abandoned = True  # its process may outlive the channel: sweep at the end
                        if self.stop.is_set():
                            j.abort(self.stop.reason, f"{self.stop.said()}; output so far kept")
                        else:
                            j.abort("timed_out", "no exit after the deadline")
                queue.clear()
        for j in running:
            j.close()
        for j in running:
            seg = j.job
            if not isinstance(seg, Segment):
                continue
            if seg.started_at is None:  # the shell died before this snapshot's turn
                self.ledger.merge(
                    self.host,
                    j.spec.id,
                    status="skipped",
                    truncated=False,
                    exit_code=None,
                    started_at=None,
                    ended_at=None,
                    reason="connection lost before it ran" if not self.tr.alive() else "stopped",
                )
            else:
                self.ledger.merge(self.host, j.spec.id, started_at=seg.started_at)

    def _commands(self, specs: list[CaptureSpec]) -> list[str]:
        commands = []
        for spec in specs:
            command = spec.render(
                interval=self.opts.interval,
                window=self.opts.window,
                workdir=self.workdir,
                watch=self.opts.watch,
            )
            self.ledger.merge(self.host, spec.id, command=command)
            commands.append(command)
        return commands

    def _stream(self, spec: CaptureSpec, job: Job) -> Stream:
        return Stream(spec, self.host, self.ledger, self.hostdir, job, self.stop, Redactor(self.opts.secrets))

    def _start(self, spec: CaptureSpec, deadline: float) -> Stream:
        (command,) = self._commands([spec])
        wrapped = wrap(command, deadline_s=deadline, workdir=self.workdir, run_id=self.opts.run_id)
        return self._stream(spec, self.tr.start(wrapped))

"""A collection session: start every capture on every host at once, stream the output home for
the window, and write an archive in format v1 (design.md) with a record for every capture.

Output is streamed over one connection per host while the captures run, not fetched at the end,
so bytes captured before a host dies are kept (and the record says `truncated`). Every remote
command runs in its own process group under `timeout -k`, tied to the window and tagged with the
run id, so nothing outlives the run even when perfkit or the link dies.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import resource
import select
import shlex
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import psutil

from perfkit import __version__
from perfkit.archive import MANIFEST, MANIFEST_VERSION, PACKED_SUFFIXES, check_new_output, pack
from perfkit.errors import CollectError, CommandTimeout, ConfigError, PerfkitError
from perfkit.redact import Redactor
from perfkit.transport import LOST, HostSpec, Job, Transport, connect

from . import captures, pprof
from .captures import PHASES, CaptureSpec
from .sampler import Sampler, run_sampler

ENV = {"LC_ALL": "C", "S_TIME_FORMAT": "ISO"}
SNAPSHOT_TIMEOUT_S = 30
KILL_AFTER_S = 5
GRACE_S = 10  # a window capture may run this long past the window before it counts as hung
GATE_SLACK_S = 10  # the windows open together unless a host is this much later than the first
FREE_FLOOR_BYTES = 100 << 20
FREE_FLOOR_PCT = 5
RESERVE, RESERVE_BYTES = ".perfkit-reserve", 1 << 20
# What stops a run the way a first Ctrl-C does: SIGTERM (a cancelled CI job, `timeout`, `kill`) and
# SIGHUP (the terminal or the SSH session to the controller went away) too.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SAMPLER_ID = "psutil"
_DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)  # a write failing so means the archive side is full
# sshd's default MaxSessions is 10 channels per connection, the control shell's included: window
# captures get the rest while it is open, all of them once its snapshots are done (`_run_phase`).
MAX_CHANNELS = 10

EXIT_OK, EXIT_FAILED, EXIT_PARTIAL, EXIT_INTERRUPTED = 0, 1, 3, 130


@dataclass(frozen=True)
class Options:
    window: int  # seconds
    specs: tuple[CaptureSpec, ...]
    interval: int = 1
    run_id: str = field(
        default_factory=lambda: datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    )
    grace: float = GRACE_S
    sampler: bool = True  # the in-process psutil sampler, on the local host only
    pprof: tuple[str, ...] = ()  # base URLs of Go services whose pprof endpoints perfkit fetches
    tidb_zip: tuple[str, ...] = ()  # base URLs of TiDB status ports whose /debug/zip perfkit fetches
    step: str | None = None  # a sweep step's name: files go under hosts/<host>/<step>/
    # exact values masked in every capture before it is written (a password a load generator takes in
    # argv shows in `ps auxww` and `iotop`); never recorded anywhere
    secrets: tuple[str, ...] = field(default=(), repr=False)
    watch: tuple[str, ...] = ()  # process names followed beside captures.WATCHED (`--watch`)

    def __post_init__(self) -> None:
        captures.watch_names(self.watch)  # ValueError: refused before anything runs
        # The run id names directories here and on every host and is matched in process lists there.
        for what, value in (("run id", self.run_id), ("step", self.step or "x")):
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", value):
                raise ValueError(f"invalid {what} {value!r}: letters, digits and . _ - only (at most 64)")
        for base in (*self.pprof, *self.tidb_zip):
            pprof.parse_base(base)  # ValueError: refused before anything runs
        both = {pprof.parse_base(b)[0] for b in self.pprof} & {pprof.parse_base(b)[0] for b in self.tidb_zip}
        if both:
            raise ValueError(
                f"{', '.join(sorted(both))}: --pprof and --tidb-zip on one service would run two CPU "
                "profiles at once (Go allows one); the debug zip already holds a CPU profile"
            )
        window = [s.id for s in self.specs if s.phase == "window"]
        if len(window) > MAX_CHANNELS:
            raise ConfigError(
                f"{len(window)} captures must run through the window at once, but one SSH "
                f"connection carries at most {MAX_CHANNELS} (sshd MaxSessions): {', '.join(window)}"
            )
        if len({s.id for s in self.specs}) != len(self.specs):
            raise ConfigError("two captures share an id")


@dataclass
class Record:
    """One capture's manifest record (design.md's fields, plus status and reason)."""

    id: str
    host: str
    kind: str
    command: str
    path: str
    phase: str
    step: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    bytes: int = 0
    sha256: str | None = None
    stderr_path: str | None = None
    clock_offset_s: float | None = None
    tool_version: str | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(ENV))
    status: str = "pending"  # ok | unavailable | failed | lost | timed_out | skipped
    reason: str = ""
    redacted: bool = False  # a secret's exact value was masked in the output (design.md)


@dataclass
class HostOutcome:
    host: str
    status: str = "ok"  # ok | partial | failed | interrupted
    reason: str = ""
    captures: int = 0
    bytes: int = 0
    # capture process groups killed by the sweeps: an earlier run's orphans at the start, this run's
    # stragglers (a capture whose channel timed out) at the end
    leftovers_killed: dict[str, int] = field(default_factory=lambda: {"start": 0, "end": 0})
    perfkit_cpu_pct: float | None = None  # perfkit's own CPU share during the window (local host only)
    perfkit_rss_kb: int | None = None


@dataclass
class Result:
    path: Path
    manifest: dict[str, Any]
    hosts: list[HostOutcome]

    @property
    def exit_code(self) -> int:
        status = self.manifest["status"]
        return {
            "complete": EXIT_OK,
            "partial": EXIT_PARTIAL,
            "disk_full": EXIT_PARTIAL,
            "interrupted": EXIT_INTERRUPTED,
        }.get(status, EXIT_FAILED)


def host_dir(host: str, step: str | None) -> str:
    """Where a host's files go in the archive: `hosts/<host>`, or `hosts/<host>/<step>` in a sweep."""
    return f"hosts/{host}/{step}" if step else f"hosts/{host}"


def tag(run_id: str) -> str:
    """The string every remote command carries, so leftovers can be found with `pgrep -f`."""
    return f"perfkit-{run_id}"


def workdir(run_id: str, host: str) -> str:
    """A host's scratch dir for this run: `/tmp/perfkit-<run id>-<6 hex of the host's name>`.

    One per host name, not per run: two names for one machine (ssh_config aliases, 127.0.0.1 and
    localhost, one IP under several TiUP roles) must not share a dir that the first one's clean-up
    removes while the other still works in it. Hashed, so any name makes a short, safe path."""
    return f"/tmp/{tag(run_id)}-{hashlib.sha256(host.encode()).hexdigest()[:6]}"


def wrap(command: str, *, deadline_s: float, workdir: str, run_id: str) -> str:
    """The shell line that runs one capture: C locale, ISO times, own process group, hard deadline.

    `timeout` makes itself a process-group leader and signals the whole group, so a pipeline or
    loop inside `command` dies with it; `-k` follows TERM with KILL. The run tag is `sh`'s $0.
    """
    return f"cd {shlex.quote(workdir)} && {_EXPORT} && exec {_timed(command, deadline_s, run_id)}"


def snapshot_line(command: str, *, deadline_s: float, workdir: str, run_id: str) -> str:
    """The line the control shell runs for one snapshot: `wrap`'s, in a subshell whose stdin is
    closed (the shell reads its own script from stdin)."""
    return f"({wrap(command, deadline_s=deadline_s, workdir=workdir, run_id=run_id)}) </dev/null"


# `export` is a builtin; `env VAR=… cmd` would cost every capture one more exec on the host
_EXPORT = "export " + " ".join(f"{k}={v}" for k, v in ENV.items())


def _timed(command: str, deadline_s: float, run_id: str) -> str:
    return (
        f"timeout -k {KILL_AFTER_S} -s TERM {int(deadline_s)} sh -c {shlex.quote(command)} "
        f"{shlex.quote(tag(run_id))}"
    )


# A capture's wrapper is `timeout -k … sh -c CMD perfkit-<run id>`: `timeout` leads its own process
# group, so killing that group ends the capture and everything it forked. While a run is alive the
# wrapper's parent is the SSH session's sshd (OpenSSH ≥ 9.8: sshd-session), locally perfkit's Python,
# or for a snapshot the control shell (`sh`); a wrapper whose parent is anything else (init, a
# subreaper) lost its run. At its end a run kills its own wrappers that hang off this connection (the
# sweep shell's parent, or the sweep shell itself: several "hosts" can be one machine) or lost
# theirs. `pgrep` (C, one pass over /proc) finds the wrappers; the tag is split in two shell
# variables so the sweep never matches its own command line. At a start the scan
# only runs when another run's work dir is in /tmp (this run's are `workdir`'s, one per host name):
# a run removes its own when it ends, so one that died leaves its dir behind, and a host with none
# has nothing to sweep.
_SWEEP = r"""n=0; pre=perfkit-; rid=%(rid)s; mine=%(mine)s; other=$mine; h=[0-9a-f]
for d in /tmp/"$pre"*; do
  case $d in "/tmp/$pre$rid-"$h$h$h$h$h$h) continue ;; esac
  [ -d "$d" ] && other=1
done
for p in $([ $other = 1 ] && pgrep -f '^timeout -k [0-9]+ -s TERM [0-9]+ sh -c ' 2>/dev/null); do
  tag=$(tr '\0' '\n' < /proc/$p/cmdline 2>/dev/null | tail -n 1)
  case $tag in "$pre"*) ;; *) continue ;; esac
  set -- $(sed 's/.*) //' /proc/$p/stat 2>/dev/null); ppid=$2; pgrp=$3
  case $(cat /proc/$ppid/comm 2>/dev/null) in
    sshd|sshd-session|sh|perfkit|pytest|python*) live=1 ;; *) live=0 ;;
  esac
  if [ "$tag" = "$pre$rid" ]; then ours=1; else ours=0; fi
  if { [ $mine = 1 ] && [ $ours = 1 ] && { [ "$ppid" = "$PPID" ] || [ "$ppid" = $$ ] || [ $live = 0 ]; }; } ||
     { [ $mine = 0 ] && [ $ours = 0 ] && [ $live = 0 ]; }; then
    kill -s KILL -- "-$pgrp" 2>/dev/null && n=$((n+1))
  fi
done
echo "@@leftovers $n"
"""


def sweep_command(run_id: str, *, mine: bool) -> str:
    """Shell that kills leftover capture process groups and prints `@@leftovers N`: with `mine`, this
    run's groups on this connection or orphaned (at its end); without, other runs' orphans (at a start)."""
    return _SWEEP % {"rid": shlex.quote(run_id), "mine": int(mine)}


def leftovers_killed(out: bytes) -> int:
    for line in out.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "@@leftovers" and value.strip().isdigit():
            return int(value)
    return 0


class _Gate:
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


@dataclass(frozen=True)
class Status:
    """A snapshot for a live display, taken about five times a second."""

    hosts_running: int
    hosts_done: int
    hosts_failed: int
    captures_running: int
    captures_done: int
    captures_total: int
    bytes: int
    seconds_left: float

    def line(self) -> str:
        left = f"{max(0, self.seconds_left):.0f}s left" if self.seconds_left > 0 else "finishing"
        failed = f", {self.hosts_failed} failed" if self.hosts_failed else ""
        return (
            f"hosts {self.hosts_done}/{self.hosts_done + self.hosts_running} done{failed} | captures "
            f"{self.captures_done}/{self.captures_total} done, {self.captures_running} running | "
            f"{self.bytes / 2**20:.1f} MiB | {left}"
        )


def _status(
    records: dict[str, list[Record]],
    outcomes: dict[str, HostOutcome],
    threads: list[threading.Thread],
    left: float,
) -> Status:
    recs = [r for rs in records.values() for r in rs]
    running_hosts = sum(t.is_alive() for t in threads)
    return Status(
        hosts_running=running_hosts,
        hosts_done=len(threads) - running_hosts,
        hosts_failed=sum(o.status == "failed" for o in outcomes.values()),
        captures_running=sum(r.status == "pending" and r.started_at is not None for r in recs),
        captures_done=sum(r.status != "pending" for r in recs),
        captures_total=len(recs),
        bytes=sum(r.bytes for r in recs),
        seconds_left=left,
    )


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


def check_free_space(path: Path, *, what: str) -> None:
    """Refuse to start below the floor (pt-stalk's: 100 MB or 5 % of the filesystem, whichever is more)."""
    st = os.statvfs(path)
    free, size = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    floor = max(FREE_FLOOR_BYTES, int(size * FREE_FLOOR_PCT / 100))
    if free < floor:
        raise PerfkitError(
            f"{what}: only {free // 2**20} MiB free of {size // 2**20} MiB; collection needs at "
            f"least {floor // 2**20} MiB ({FREE_FLOOR_BYTES // 2**20} MiB or {FREE_FLOOR_PCT}%)"
        )


def collect(
    hosts: list[HostSpec],
    out: Path,
    opts: Options,
    *,
    progress: Callable[[str], None] | None = None,
    stop: Stop | None = None,
    connector: Callable[[HostSpec], Transport] = connect,
    roles: dict[str, tuple[str, ...]] | None = None,
    status: Callable[[Status], None] | None = None,
) -> Result:
    """Collect on every host for `opts.window` seconds into `out` (a directory, or a .tar.gz).

    One host failing never stops the others; its outcome says why. The first Ctrl-C (or SIGTERM, or
    SIGHUP: `on_stop_signals`) stops the captures, keeps what arrived and writes the archive marked
    `interrupted`; a second Ctrl-C stops waiting at once and writes a minimal manifest into the
    unpacked directory. A full disk on the archive side stops the run the same way, marked `disk_full`.

    Raises:
        PerfkitError: only for the output location itself (a non-empty directory, an existing
            archive, too little free space); `archive.pack` never replaces a file that appears there
            meanwhile: the unpacked run is kept and the manifest's reason says so.
    """
    stop = stop or Stop()
    packed = out.name.endswith(PACKED_SUFFIXES)
    parent = out.parent
    check_new_output(out)
    parent.mkdir(parents=True, exist_ok=True)
    check_free_space(parent, what=str(parent))
    old_umask = os.umask(0o077)
    restore = on_stop_signals(stop)
    try:
        staging = Path(tempfile.mkdtemp(prefix="perfkit-collect-", dir=parent)) if packed else None
        root = staging / opts.run_id if staging else out
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        reserve = root / RESERVE  # freed before the manifest is written, so a full disk still gets one
        reserve.write_bytes(b"\0" * RESERVE_BYTES)
        created = _now()
        cap = capture(hosts, root, opts, stop=stop, connector=connector, progress=progress, status=status)
        records, outcomes, profile_records, aborted = (
            cap.records,
            cap.outcomes,
            cap.profile_records,
            cap.aborted,
        )
        reserve.unlink(missing_ok=True)
        manifest = _manifest(
            hosts,
            opts,
            created,
            records,
            outcomes,
            stop=stop,
            aborted=aborted,
            roles=roles or {},
            extra_records=profile_records,
        )
        (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        final = root
        if packed and not aborted:
            try:
                pack(root, out)
            except OSError as exc:  # keep the unpacked run: it is complete and readable
                manifest["reason"] = f"{manifest['reason']}; not packed ({exc.strerror}): see {root}".lstrip(
                    "; "
                )
                return Result(root, manifest, list(outcomes.values()))
            shutil.rmtree(staging, ignore_errors=True)
            final = out
        return Result(final, manifest, list(outcomes.values()))
    finally:
        restore()
        os.umask(old_umask)


@dataclass
class Captured:
    """What one window of captures left: records per host, host outcomes, HTTP profile records."""

    records: dict[str, list[Record]]
    outcomes: dict[str, HostOutcome]
    profile_records: list[dict]
    aborted: bool  # a second Ctrl-C stopped the waiting


def capture(
    hosts: list[HostSpec],
    root: Path,
    opts: Options,
    *,
    stop: Stop,
    connector: Callable[[HostSpec], Transport] = connect,
    progress: Callable[[str], None] | None = None,
    status: Callable[[Status], None] | None = None,
    window_open: threading.Event | None = None,
) -> Captured:
    """One window of captures on every host (and HTTP profile fetch) into the directory `root`; no
    manifest, no packing: `collect` does those for a single window, the sweep driver once per sweep.
    `window_open` is set when the windows open (a load can start then)."""
    progress, status = best_effort(progress), best_effort(status)
    records: dict[str, list[Record]] = {h.name: [] for h in hosts}
    outcomes = {h.name: HostOutcome(h.name) for h in hosts}
    gate = _Gate(len(hosts) + len(opts.pprof) + len(opts.tidb_zip), GATE_SLACK_S, window_open)
    threads = [
        threading.Thread(
            target=_host_main,
            name=f"collect-{h.name}",
            daemon=True,
            args=(h, root, opts, records[h.name], outcomes[h.name], stop, connector, progress, gate),
        )
        for h in hosts
    ]
    profile_records: list[dict] = []
    for base, is_zip in [(b, False) for b in opts.pprof] + [(b, True) for b in opts.tidb_zip]:
        url, host = pprof.parse_base(base)
        threads.append(
            threading.Thread(
                target=lambda u=url, h=host, z=is_zip: (
                    gate.wait(f"http:{u}", stop),
                    profile_records.extend(
                        pprof.collect_profiles(
                            u, h, root, host_dir(h, opts.step), opts.window, stop.is_set, _now, tidb_zip=z
                        )
                    ),
                ),
                name=f"pprof-{host}",
                daemon=True,
            )
        )
    for t in threads:
        t.start()
    aborted = False
    started = time.monotonic()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
                if status:
                    status(_status(records, outcomes, threads, opts.window - (time.monotonic() - started)))
    except KeyboardInterrupt:  # the second Ctrl-C: stop waiting, keep what is on disk
        stop.trigger("interrupted")
        aborted = True
    for rec in profile_records:
        outcome = outcomes.setdefault(rec["host"], HostOutcome(rec["host"]))
        if rec["status"] != "ok" and outcome.status == "ok":
            outcome.status, outcome.reason = "partial", f"{rec['id']}: {rec['reason']}"
        outcome.captures += rec["status"] == "ok"
        outcome.bytes += rec.get("bytes", 0)
    return Captured(records, outcomes, profile_records, aborted)


def on_stop_signals(stop: Stop) -> Callable[[], None]:
    """Until the returned undo is called, the STOP_SIGNALS stop the run cleanly: `stop` is set with
    reason "interrupted" and who did it. A second Ctrl-C raises KeyboardInterrupt in the main thread
    (stop waiting, minimal manifest); a repeated SIGTERM or SIGHUP changes nothing, since `timeout`
    sends its TERM twice (to perfkit, then to its process group) and its echo must not cut the clean
    stop short. A signal ignored when perfkit started (`nohup`) stays ignored. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: object) -> None:
        if signum == signal.SIGINT and stop.is_set() and stop.reason == "interrupted":
            raise KeyboardInterrupt
        stop.trigger("interrupted", by="the user" if signum == signal.SIGINT else signal.Signals(signum).name)

    previous = {
        sig: signal.signal(sig, handler) for sig in STOP_SIGNALS if signal.getsignal(sig) != signal.SIG_IGN
    }

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def best_effort(callback: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """`callback` (a progress or status display) made harmless: after SIGHUP the terminal is gone and
    every write to it fails (EIO; a closed pipe: EPIPE). The first failure silences it; the run goes
    on and still writes its archive."""
    if callback is None:
        return None
    failed = threading.Event()

    def call(arg: Any) -> None:
        if not failed.is_set():
            try:
                callback(arg)
            except OSError:
                failed.set()

    return call


# ---------------------------------------------------------------- one host


def _host_main(
    spec: HostSpec,
    root: Path,
    opts: Options,
    records: list[Record],
    outcome: HostOutcome,
    stop: Stop,
    connector: Callable[[HostSpec], Transport],
    progress: Callable[[str], None] | None,
    gate: _Gate | None = None,
) -> None:
    gate = gate or _Gate(1, 0)
    rel = host_dir(spec.name, opts.step)
    hostdir = root / rel
    hostdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for s in opts.specs:
        records.append(
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
        records.append(
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
            _HostRun(spec, tr, hostdir, opts, records, stop, progress, outcome, gate).run()
    except PerfkitError as exc:
        outcome.status, outcome.reason = "failed", str(exc)
        for r in records:
            if r.status == "pending":
                r.status, r.reason = "skipped", f"host failed: {exc}"
    except Exception as exc:  # a bug must not lose the other hosts' data
        outcome.status, outcome.reason = "failed", f"internal error: {type(exc).__name__}: {exc}"
    finally:
        gate.leave(spec.name)  # no-op once the host went through
    bad = [r for r in records if r.status in ("lost", "timed_out", "failed") or r.truncated]
    if outcome.status == "ok" and stop.is_set():
        outcome.status = stop.reason or "interrupted"
        outcome.reason = stop.said()
    elif outcome.status == "ok" and bad:
        outcome.status = "partial"
        outcome.reason = "; ".join(f"{r.id}: {r.reason or r.status}" for r in bad[:5])
    outcome.captures = sum(r.status == "ok" for r in records)
    outcome.bytes = sum(r.bytes for r in records)
    if progress:
        progress(f"{spec.name}: {outcome.status}{' — ' + outcome.reason if outcome.reason else ''}")


class _HostRun:
    """The steps on one connected host: preflight, start and window captures, end captures, cleanup."""

    def __init__(
        self,
        spec: HostSpec,
        tr: Transport,
        hostdir: Path,
        opts: Options,
        records: list[Record],
        stop: Stop,
        progress: Callable[[str], None] | None,
        outcome: HostOutcome | None = None,
        gate: _Gate | None = None,
    ):
        self.spec, self.tr, self.hostdir, self.opts, self.stop, self.progress = (
            spec,
            tr,
            hostdir,
            opts,
            stop,
            progress,
        )
        self.records = {r.id: r for r in records}
        self.workdir = workdir(opts.run_id, spec.name)
        self.outcome = outcome
        self.versions: dict[str, str | None] = {}
        self.offset: float | None = None
        self.gate = gate or _Gate(1, 0)
        self.abandoned = False
        self.control = _Control(tr, self.workdir, opts.run_id)

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
        self.gate.wait(self.spec.name, self.stop)
        if self.tr.alive() and not self.stop.is_set():
            sampler = self._start_sampler()
            # the start snapshots run in the control shell as the window opens, not before it
            self._run_phase(by_phase["window"], batch=by_phase["start"])
            if sampler is not None:
                self._finish_sampler(sampler)
        if self.tr.alive() and not self.stop.is_set():
            self._run_phase([], batch=by_phase["end"])
        for r in self.records.values():
            if r.status == "pending":
                r.status, r.reason = (
                    "skipped",
                    "connection lost before it ran" if not self.tr.alive() else "stopped",
                )

    def _clean_up(self, *, sweep: bool) -> None:
        """Remove this host's work dir and, with `sweep`, kill this run's captures still alive there
        (only a capture given up on before it exited can have left a process behind)."""
        if not self.tr.alive():
            return
        kill = f"\n{sweep_command(self.opts.run_id, mine=True)}" if sweep else ""
        _, out, _ = self.control.run(
            f"cd / && rm -rf {shlex.quote(self.workdir)}{kill}", timeout=SNAPSHOT_TIMEOUT_S
        )
        if self.outcome is not None:
            self.outcome.leftovers_killed["end"] = leftovers_killed(out)

    def _preflight(self) -> None:
        """Work dir, clock, and which tools exist (with their versions), in one round trip.

        Every process here costs the host CPU on every run, so only what this run's captures need is
        asked, with builtins where they do (`read`, `command -v`) and one process per version probe."""
        specs = self.opts.specs
        wd = shlex.quote(self.workdir)
        lines = [f"umask 077; mkdir -p {wd} || exit 90", "nl='\n'"]
        if any(s.needs_root for s in specs):
            lines.append('echo "@@id $(id -u)"')
        for tool in sorted({s.tool for s in specs}):
            version = next((s.version for s in specs if s.tool == tool and s.version), "")
            probe = (
                f'v=$({{ {version}; }} 2>&1); printf "%s\\n" "${{v%%"$nl"*}}"' if version else "echo present"
            )
            lines.append(
                f"if command -v {shlex.quote(tool)} >/dev/null 2>&1; then printf '@@tool %s ' "
                f"{shlex.quote(tool)}; {probe}; else echo '@@missing {tool}'; fi"
            )
        lines.append(f"echo @@df; df -Pk {wd}")
        if any(s.host_bytes[1] for s in specs):
            lines.append('echo "@@nproc $(nproc 2>/dev/null || echo 1)"')
        if "iotop" in self.records:
            lines.append(
                'd=; { read -r d </proc/sys/kernel/task_delayacct; } 2>/dev/null; echo "@@delayacct $d"'
            )
        lines.append(sweep_command(self.opts.run_id, mine=False))
        lines.append('echo "@@clock $(date +%s.%N)"')
        t0 = time.time()
        code, out, err = self.control.run("\n".join(lines), timeout=SNAPSHOT_TIMEOUT_S)
        t1 = time.time()
        if code != 0:
            raise CollectError(
                self.spec.name, f"preflight failed (exit {code}): {err.decode(errors='replace')[:200]}"
            )
        uid, cpus, df_fields = None, 1, ""
        lines = out.decode(errors="replace").splitlines()
        for i, line in enumerate(lines):
            key, _, rest = line.partition(" ")
            if key == "@@tool":
                tool, _, version = rest.partition(" ")
                self.versions[tool] = version.strip() or None
            elif key == "@@missing":
                self.versions[rest.strip()] = "MISSING"
            elif key == "@@clock":
                try:
                    self.offset = round(float(rest) - (t0 + t1) / 2, 3)
                except ValueError:
                    self.offset = None
            elif key == "@@id":
                uid = rest.strip()
            elif key == "@@leftovers" and self.outcome is not None and rest.strip().isdigit():
                self.outcome.leftovers_killed["start"] = int(rest)
            elif key == "@@nproc":
                cpus = int(rest) if rest.strip().isdigit() else 1
            elif key == "@@df":
                # `df -P`: a header, then one line per filesystem; the device name may hold spaces
                fields = lines[i + 2].split() if len(lines) > i + 2 else []
                df_fields = f"{fields[-3]} {fields[-5]}" if len(fields) >= 6 else rest
            elif key == "@@delayacct" and rest.strip() == "0" and "iotop" in self.records:
                # iotop then prints ?unavailable? for SWAPIN and IO%: say so where readers look.
                self.records["iotop"].reason = "kernel.task_delayacct=0: SWAPIN and IO% unavailable"
        self._check_space(df_fields, cpus)
        for s in self.opts.specs:
            r = self.records[s.id]
            r.clock_offset_s = self.offset
            version = self.versions.get(s.tool)
            if version == "MISSING":
                r.status, r.reason = "unavailable", f"{s.tool} not installed"
            else:
                r.tool_version = version
                if s.needs_root and uid not in (None, "0"):
                    r.status, r.reason = "unavailable", f"{s.tool} needs root (connected as uid {uid})"

    def _start_sampler(self) -> Sampler | None:
        record = self.records.get(SAMPLER_ID)
        if record is None:
            return None
        record.started_at = _now()
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
        r = self.records[SAMPLER_ID]
        data = (self.hostdir / f"{SAMPLER_ID}.out").read_bytes()
        r.ended_at, r.bytes, r.sha256 = _now(), len(data), hashlib.sha256(data).hexdigest()
        r.status, r.exit_code = ("failed", 1) if sampler.error else ("ok", 0)
        r.reason = sampler.error or ""
        r.tool_version = f"psutil {psutil.__version__}"
        if self.outcome is not None and sampler.own_cpu_pct:
            self.outcome.perfkit_cpu_pct = round(sum(sampler.own_cpu_pct) / len(sampler.own_cpu_pct), 2)
            self.outcome.perfkit_rss_kb = sampler.own_rss_kb

    def _check_space(self, df_fields: str, cpus: int) -> None:
        """Refuse a host below the free-space floor plus what this run will write there (G1): captures
        must never fill a production disk. Everything else streams back to the controller, and what
        stays on the host is bounded up front (perf's --max-size, sar's samples), so once this check
        passes the run cannot take the host below its floor."""
        try:
            free_kb, size_kb = (int(x) for x in df_fields.split())
        except ValueError:
            return  # df printed something unexpected; the byte caps still bound what we write
        samples = max(1, self.opts.window // self.opts.interval)
        planned = {
            s.id: s.host_bytes_at_most(samples=samples, cpus=cpus)
            for s in self.opts.specs
            if s.host_bytes != (0, 0, 0)
        }
        floor_kb = max(FREE_FLOOR_BYTES >> 10, size_kb * FREE_FLOOR_PCT // 100)
        need_kb = floor_kb + (sum(planned.values()) >> 10)
        if free_kb < need_kb:
            plan = ", ".join(f"{k} up to {v >> 20} MiB" for k, v in planned.items())
            raise CollectError(
                self.spec.name,
                f"only {free_kb >> 10} MiB free of {size_kb >> 10} MiB for {self.workdir}; collection "
                f"needs at least {need_kb >> 10} MiB (floor {floor_kb >> 10} MiB"
                + (f"; on the host: {plan}" if plan else "")
                + ")",
            )

    def _run_phase(self, specs: list[CaptureSpec], *, batch: list[CaptureSpec]) -> None:
        """Run `specs` (window captures) each on its own channel, and meanwhile `batch` (snapshots)
        one after another in the control shell. At most MAX_CHANNELS channels at a time, the control
        shell's included (sshd's MaxSessions is 10): when the window captures need its channel, the
        shell is closed once its snapshots are done."""
        queue = [s for s in specs if self.records[s.id].status == "pending"]
        todo = [s for s in batch if self.records[s.id].status == "pending"]
        deadline = self.opts.window + self.opts.grace
        running: list[_Running] = []
        segments: list[_Segment] = []
        # Locally, give up a little after the remote `timeout` would have killed everything.
        hard_stop = (
            time.monotonic()
            + max(deadline if queue else 0, len(todo) * (SNAPSHOT_TIMEOUT_S + KILL_AFTER_S))
            + KILL_AFTER_S
            + 5
        )
        while queue or todo or any(not j.done for j in running):
            channels = sum(not j.done and not isinstance(j.job, _Segment) for j in running)
            limit = MAX_CHANNELS - self.control.alive()
            while queue and channels < limit and not self.stop.is_set():
                running.append(self._start(queue.pop(0), deadline))
                channels += 1
            if todo and not self.stop.is_set():
                commands = self._commands(todo)
                for spec, seg in zip(todo, self.control.batch(commands, SNAPSHOT_TIMEOUT_S), strict=True):
                    running.append(self._running(spec, seg))
                    segments.append(seg)
                todo = []
            if queue and segments and all(seg.code is not None for seg in segments):
                self.control.close()  # its channel is wanted by a window capture
            if self.stop.is_set():
                queue.clear()
                todo = []
            _wait_readable([j.job for j in running if not j.done], 0.5)
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
            if not isinstance(seg, _Segment):
                continue
            if seg.started_at is None:  # the shell died before this snapshot's turn
                r = j.record
                r.status, r.truncated, r.exit_code, r.started_at, r.ended_at = (
                    "skipped",
                    False,
                    None,
                    None,
                    None,
                )
                r.reason = "connection lost before it ran" if not self.tr.alive() else "stopped"
            else:
                j.record.started_at = seg.started_at

    def _commands(self, specs: list[CaptureSpec]) -> list[str]:
        for spec in specs:
            self.records[spec.id].command = spec.render(
                interval=self.opts.interval,
                window=self.opts.window,
                workdir=self.workdir,
                watch=self.opts.watch,
            )
        return [self.records[spec.id].command for spec in specs]

    def _running(self, spec: CaptureSpec, job: Job) -> _Running:
        return _Running(
            spec, self.records[spec.id], self.hostdir, job, self.stop, Redactor(self.opts.secrets)
        )

    def _start(self, spec: CaptureSpec, deadline: float) -> _Running:
        (command,) = self._commands([spec])
        wrapped = wrap(command, deadline_s=deadline, workdir=self.workdir, run_id=self.opts.run_id)
        return self._running(spec, self.tr.start(wrapped))


class _Control:
    """One `sh` per host, fed over its stdin, for what perfkit runs there besides the window captures:
    the preflight, the start and end snapshots (one after another), the clean-up.

    Each channel costs the host a login shell and sshd's bookkeeping (about 5 ms of CPU on the
    benchmark's VM, far more where rc files run), so a host pays one channel for this shell plus one
    per window capture instead of one per command. Each piece of script ends with a marker carrying a
    random token, on stdout and on stderr, so what came before it is that piece's output. A dead
    shell (lost link, killed) is replaced by a new one for the next piece; at EOF it exits.
    """

    def __init__(self, tr: Transport, workdir: str, run_id: str):
        self.tr, self.workdir, self.run_id = tr, workdir, run_id
        self.token = uuid.uuid4().hex
        self.job: Job | None = None
        self.out, self.err = bytearray(), bytearray()
        self.segments: list[_Segment] = []
        self.code: int | None = None  # the shell's exit code once it is gone

    def alive(self) -> bool:
        return self.job is not None and self.job.poll() is None

    def run(self, script: str, *, timeout: float) -> tuple[int, bytes, bytes]:
        """Like `Transport.run`, in this shell (`exit` ends the shell: the next piece starts another)."""
        (seg,) = self._send([("run", "{\n" + script + "\n} </dev/null")])
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        while seg.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                exc = CommandTimeout(self.tr.spec.name, f"command not done within {timeout:g}s")
                exc.stdout, exc.stderr = bytes(out), bytes(err)
                raise exc
            _wait_readable([seg], 0.1)
            o, e = seg.read()
            out += o
            err += e
        o, e = seg.read()
        return seg.code if seg.code is not None else LOST, bytes(out + o), bytes(err + e)

    def batch(self, commands: list[str], deadline_s: float) -> list[_Segment]:
        """Start `commands` one after another, each wrapped like a window capture; one job each."""
        return self._send(
            [
                (str(i), snapshot_line(c, deadline_s=deadline_s, workdir=self.workdir, run_id=self.run_id))
                for i, c in enumerate(commands)
            ]
        )

    def _send(self, pieces: list[tuple[str, str]]) -> list[_Segment]:
        if self.job is None or self.job.poll() is not None:
            self.job = self.tr.start("exec sh -s", keep_stdin=True)
            self.out.clear()
            self.err.clear()
            self.code = None
        script = "".join(
            f"{body}\nprintf '\\n@@end {self.token} {sid} %s\\n' \"$?\"; "
            f"printf '\\n@@end {self.token} {sid}\\n' >&2\n"
            for sid, body in pieces
        )
        self.segments = [_Segment(self, sid) for sid, _ in pieces]
        self.segments[0].started_at = _now()
        self.job.send(script.encode())
        return list(self.segments)

    def fileno(self) -> int:
        return self.job.fileno() if self.job is not None else -1

    def pump(self) -> None:
        if self.job is None:
            return
        o, e = self.job.read()
        self.out += o
        self.err += e
        if self.code is None and (code := self.job.poll()) is not None:
            o, e = self.job.read()  # what arrived with the exit status
            self.out += o
            self.err += e
            self.code = code
        self._split()

    def _split(self) -> None:
        for seg in self.segments:
            if seg.code is not None:
                continue
            seg.started_at = seg.started_at or _now()
            if seg.rc is None:
                seg.rc = _take(self.out, seg.out, f"\n@@end {self.token} {seg.id} ".encode(), rc=True)
            if not seg.err_done:
                seg.err_done = (
                    _take(self.err, seg.err, f"\n@@end {self.token} {seg.id}\n".encode()) is not None
                )
            if seg.rc is not None and seg.err_done:
                seg.code = seg.rc
                continue
            if self.code is not None:  # the shell is gone: what it printed was this piece's
                seg.out += self.out
                seg.err += self.err
                self.out.clear()
                self.err.clear()
                seg.code = self.code
                for rest in self.segments:
                    if rest.code is None:
                        rest.code = self.code
            return

    def kill(self) -> None:
        if self.job is not None:
            self.job.kill()
            self.pump()

    def close(self) -> None:
        """EOF to the shell: it exits once its piece is done; bounded by SNAPSHOT_TIMEOUT_S."""
        if self.job is None:
            return
        job, self.job = self.job, None
        if job.poll() is None:
            job.end_input()
            deadline = time.monotonic() + SNAPSHOT_TIMEOUT_S
            while job.poll() is None and time.monotonic() < deadline:
                _wait_readable([job], 0.1)
                job.read()
            if job.poll() is None:
                job.kill()
        job.close()


def _take(src: bytearray, dst: bytearray, marker: bytes, *, rc: bool = False) -> int | None:
    """Move what precedes `marker` in `src` to `dst` and drop the marker (and, with `rc`, the exit
    code and newline after it): its value (the code, or 0), or None when the marker is not there yet —
    then all but a tail that could be the marker's start moves."""
    at = src.find(marker)
    if at < 0:
        keep = len(marker) + 8
        if len(src) > keep:
            dst += src[: len(src) - keep]
            del src[: len(src) - keep]
        return None
    end = at + len(marker)
    code = 0
    if rc:
        nl = src.find(b"\n", end)
        if nl < 0:
            dst += src[:at]
            del src[:at]
            return None
        code = int(src[end:nl]) if src[end:nl].isdigit() else LOST
        end = nl + 1
    dst += src[:at]
    del src[:end]
    return code


class _Segment(Job):
    """One piece of what the control shell prints, as a job of its own (so `_Running` takes it)."""

    def __init__(self, control: _Control, sid: str):
        self.command, self.control, self.id = "", control, sid
        self.out, self.err = bytearray(), bytearray()
        self.rc: int | None = None  # from its stdout marker
        self.err_done = False
        self.code: int | None = None
        self.started_at: str | None = None

    def fileno(self) -> int:
        return self.control.fileno()

    def read(self) -> tuple[bytes, bytes]:
        self.control.pump()
        out, err = bytes(self.out), bytes(self.err)
        self.out.clear()
        self.err.clear()
        return out, err

    def poll(self) -> int | None:
        self.control.pump()
        return self.code

    def kill(self) -> None:
        self.control.kill()


def _wait_readable(jobs: list[Job], timeout: float) -> None:
    fds = [fd for fd in (j.fileno() for j in jobs) if fd is not None and fd >= 0]
    if fds:
        try:
            select.select(fds, [], [], timeout)
            return
        except (OSError, ValueError):
            pass
    time.sleep(min(timeout, 0.1))


class _Running:
    """A started capture: pumps its output into the archive, enforces the byte cap, fills the record."""

    def __init__(
        self, spec: CaptureSpec, record: Record, hostdir: Path, job: Job, stop: Stop, redactor: Redactor
    ):
        self.spec, self.record, self.job, self.stop, self.redactor = spec, record, job, stop, redactor
        self.out: IO[bytes] = open(hostdir / f"{spec.id}.out", "wb", buffering=0)  # noqa: SIM115 - see close()
        self.err_path = hostdir / f"{spec.id}.err"
        self.err = bytearray()
        self.sha = hashlib.sha256()
        self.done = False
        self.aborted: tuple[str, str] | None = None
        record.started_at = _now()

    def pump(self) -> None:
        out, err = self.job.read()
        self._write(self.redactor.feed(out))
        if len(self.err) < 1 << 20:
            self.err += err[: (1 << 20) - len(self.err)]
        code = self.job.poll()
        if code is not None:
            out, err = self.job.read()  # what arrived with the exit status
            self._write(self.redactor.feed(out) + self.redactor.flush())
            self.err += err[: max(0, (1 << 20) - len(self.err))]
            self._finish(code)

    def _write(self, data: bytes) -> None:
        if not data or self.record.truncated:
            return
        room = self.spec.max_bytes - self.record.bytes
        if len(data) > room:
            data = data[:room]
            self.record.truncated = True
            self.record.reason = f"output over the {self.spec.max_bytes} byte cap"
            self.job.kill()
        view = memoryview(data)
        try:
            while view:  # unbuffered: a partial write on a filling disk is counted exactly
                n = self.out.write(view) or 0
                if n == 0:
                    raise OSError(errno.ENOSPC, "no room to write")
                self.sha.update(view[:n])
                self.record.bytes += n
                view = view[n:]
        except OSError as exc:
            if exc.errno not in _DISK_FULL:
                raise
            self.record.truncated = True
            self.record.reason = f"archive disk full ({exc.strerror}); output so far kept"
            self.stop.trigger("disk_full")
            self.job.kill()

    def _finish(self, code: int | None) -> None:
        r = self.record
        r.exit_code, r.ended_at, self.done = code, _now(), True
        if self.aborted:  # we ended it: say why, whatever exit status the kill produced
            r.status, r.truncated = self.aborted[0], True
            r.reason = r.reason or self.aborted[1]
            r.timed_out = r.status == "timed_out"
        elif code == -1:
            r.status, r.truncated = "lost", True
            r.reason = r.reason or "connection lost during the capture; output so far kept"
        elif code == 124 or code == 137:
            r.status, r.timed_out = "timed_out", True
            r.reason = r.reason or "still running at the deadline; killed, output so far kept"
        elif code in (126, 127):
            r.status = "unavailable"
            r.reason = (
                self.err.decode(errors="replace").strip().splitlines()[-1:][0]
                if self.err.strip()
                else f"exit {code}"
            )
        elif code != 0 and not r.truncated:
            r.status = "failed"
            r.reason = r.reason or f"exit {code}: " + self.err.decode(errors="replace").strip()[-200:]
        else:
            r.status = "ok" if not r.truncated else "failed"

    def abort(self, status: str, reason: str) -> None:
        """End the capture early; `status` is timed_out, interrupted or disk_full."""
        self.aborted = (status, reason)
        self.job.kill()
        self.pump()
        if not self.done:
            self._finish(None)

    def close(self) -> None:
        self.job.close()
        self._write(self.redactor.flush())
        self.out.close()
        self.record.sha256 = self.sha.hexdigest()
        if self.err:
            try:
                self.err_path.write_bytes(self.redactor.mask(bytes(self.err)))
            except OSError as exc:
                if exc.errno not in _DISK_FULL:
                    raise
                self.err_path.unlink(missing_ok=True)  # no half file the manifest does not list
                self.record.reason = (
                    self.record.reason or f"stderr not kept: archive disk full ({exc.strerror})"
                )
                self.stop.trigger("disk_full")
            else:
                self.record.stderr_path = self.record.path[: -len(".out")] + ".err"
        self.record.redacted = self.redactor.hits > 0


# ---------------------------------------------------------------- manifest


def _manifest(
    hosts: list[HostSpec],
    opts: Options,
    created: str,
    records: dict[str, list[Record]],
    outcomes: dict[str, HostOutcome],
    *,
    stop: Stop,
    aborted: bool = False,
    roles: dict[str, tuple[str, ...]] | None = None,
    extra_records: list[dict] | None = None,
) -> dict[str, Any]:
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
    return {
        "format_version": MANIFEST_VERSION,
        "perfkit_version": __version__,
        "run_id": opts.run_id,
        "created_at": created,
        "ended_at": _now(),
        "status": status,
        "reason": reason,
        "window_s": opts.window,
        "interval_s": opts.interval,
        "inventory": [
            {
                "name": h.name,
                "hostname": h.hostname,
                "port": h.port,
                "user": h.user,
                "accept_new_host_key": h.accept_new_host_key,
                "roles": list((roles or {}).get(h.name, ())),
            }
            for h in hosts
        ],
        "hosts": [asdict(o) for o in outcomes.values()],
        "controller": {
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "max_rss_kb": usage.ru_maxrss,
            # psutil's view during the window, when the local host was captured
            "window_cpu_pct": next(
                (o.perfkit_cpu_pct for o in outcomes.values() if o.perfkit_cpu_pct is not None), None
            ),
        },
        "captures": [asdict(r) for rs in records.values() for r in rs] + list(extra_records or []),
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

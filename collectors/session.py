"""A collection session: start every capture on every host at once, stream the output home for
the window, and write an archive in format v1 (design.md) with a record for every capture.

Output is streamed over one connection per host while the captures run, not fetched at the end,
so bytes captured before a host dies are kept (and the record says `truncated`). Every remote
command runs in its own process group under `timeout -k`, tied to the window and tagged with the
run id, so nothing outlives the run even when perfkit or the link dies.

This module holds the entry points (`collect`, `capture`, `Options`, `Result`, the stop signals);
the work is in its parts: `_shell` (the lines run on a host and the control shell's protocol),
`_streams` (a capture's output coming home), `_preflight`, `_host` (the per-host runner) and
`_records` (the records, the one `Ledger` that changes them, the manifest). What callers imported
from here before the split is still importable from here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfkit.archive import MANIFEST, PACKED_SUFFIXES, check_new_output, pack
from perfkit.errors import ConfigError, PerfkitError
from perfkit.manifest import ENV, HostOutcome, Manifest, Record
from perfkit.transport import HostSpec, Transport, connect, end_local_jobs

from . import captures, pprof
from ._host import MAX_CHANNELS, Gate, host_main
from ._preflight import FREE_FLOOR_BYTES, FREE_FLOOR_PCT
from ._records import SAMPLER_ID, Ledger, Stop, host_dir
from ._records import manifest as _manifest
from ._records import now as _now
from ._shell import (
    KILL_AFTER_S,
    SNAPSHOT_TIMEOUT_S,
    leftovers_killed,
    snapshot_line,
    sweep_command,
    tag,
    workdir,
    wrap,
)
from .captures import CaptureSpec

# What other modules and the tests import from here, wherever it is defined now.
__all__ = [
    "ENV",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "FREE_FLOOR_BYTES",
    "FREE_FLOOR_PCT",
    "GATE_SLACK_S",
    "GRACE_S",
    "KILL_AFTER_S",
    "MAX_CHANNELS",
    "RESERVE",
    "RESERVE_BYTES",
    "SAMPLER_ID",
    "SNAPSHOT_TIMEOUT_S",
    "STOP_SIGNALS",
    "Captured",
    "HostOutcome",
    "HostSpec",
    "Options",
    "Record",
    "Result",
    "Status",
    "Stop",
    "Transport",
    "_manifest",
    "_now",
    "best_effort",
    "capture",
    "check_free_space",
    "check_names",
    "collect",
    "connect",
    "host_dir",
    "leftovers_killed",
    "on_stop_signals",
    "snapshot_line",
    "sweep_command",
    "tag",
    "workdir",
    "wrap",
]

GRACE_S = 10  # a window capture may run this long past the window before it counts as hung
GATE_SLACK_S = 10  # the windows open together unless a host is this much later than the first
RESERVE, RESERVE_BYTES = ".perfkit-reserve", 1 << 20
# What stops a run the way a first Ctrl-C does: SIGTERM (a cancelled CI job, `timeout`, `kill`) and
# SIGHUP (the terminal or the SSH session to the controller went away) too.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

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
class Result:
    path: Path
    run: Manifest  # as written, but for a reason added when packing failed
    hosts: list[HostOutcome]

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest as JSON (what `manifest.json` holds)."""
        return self.run.to_dict()

    @property
    def exit_code(self) -> int:
        status = self.run.status
        return {
            "complete": EXIT_OK,
            "partial": EXIT_PARTIAL,
            "disk_full": EXIT_PARTIAL,
            "interrupted": EXIT_INTERRUPTED,
        }.get(status, EXIT_FAILED)


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


def _status(ledger: Ledger, threads: list[threading.Thread], left: float) -> Status:
    records, outcomes = ledger.records(), ledger.outcomes()
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


def check_names(hosts: list[HostSpec]) -> None:
    """Refuse two host entries of one name: the name keys the entry's records, its directory in the
    archive and its work dir and process sweep on the host (`workdir`), so two entries under one
    name (the same machine twice) would share and remove each other's."""
    seen: set[str] = set()
    for h in hosts:
        if h.name in seen:
            raise ConfigError(f"host name {h.name!r} appears twice; give each host entry a name of its own")
        seen.add(h.name)


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
        ConfigError: two host entries of one name (`check_names`), before anything is written.
        PerfkitError: otherwise only for the output location itself (a non-empty directory, an existing
            archive, too little free space); `archive.pack` never replaces a file that appears there
            meanwhile: the unpacked run is kept and the manifest's reason says so.
    """
    check_names(hosts)
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
        (root / MANIFEST).write_text(json.dumps(manifest.to_dict(), indent=1) + "\n", encoding="utf-8")
        final = root
        if packed and not aborted:
            try:
                pack(root, out)
            except OSError as exc:  # keep the unpacked run: it is complete and readable
                manifest.reason = f"{manifest.reason}; not packed ({exc.strerror}): see {root}".lstrip("; ")
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
    check_names(hosts)
    progress, status = best_effort(progress), best_effort(status)
    # The one owner of this window's records: host and profile threads hand it what they learn, and
    # what is returned are copies, so a host thread still running after a second Ctrl-C cannot change
    # a record while the manifest is written from it.
    ledger = Ledger([h.name for h in hosts])
    gate = Gate(len(hosts) + len(opts.pprof) + len(opts.tidb_zip), GATE_SLACK_S, window_open)
    threads = [
        threading.Thread(
            target=host_main,
            name=f"collect-{h.name}",
            daemon=True,
            args=(h, root, opts, ledger, stop, connector, progress, gate),
        )
        for h in hosts
    ]
    for base, is_zip in [(b, False) for b in opts.pprof] + [(b, True) for b in opts.tidb_zip]:
        url, host = pprof.parse_base(base)
        threads.append(
            threading.Thread(
                target=lambda u=url, h=host, z=is_zip: (
                    gate.wait(f"http:{u}", stop),
                    ledger.add_profiles(
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
                    status(_status(ledger, threads, opts.window - (time.monotonic() - started)))
    except KeyboardInterrupt:  # the second Ctrl-C: stop waiting, keep what is on disk
        stop.trigger("interrupted")
        aborted = True
        end_local_jobs()  # the host threads are left behind: their captures here are not
    return Captured(ledger.records(), ledger.outcomes(), ledger.profiles(), aborted)


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

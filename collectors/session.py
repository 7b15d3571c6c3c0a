"""A collection session: start every capture on every host at once, stream the output home for
the window, and write an archive in format v1 (design.md) with a record for every capture.

Output is streamed over one connection per host while the captures run, not fetched at the end,
so bytes captured before a host dies are kept (and the record says `truncated`). Every remote
command runs in its own process group under `timeout -k`, tied to the window and tagged with the
run id, so nothing outlives the run even when perfkit or the link dies.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import select
import shlex
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from perfkit import __version__
from perfkit.archive import MANIFEST, MANIFEST_VERSION, pack
from perfkit.errors import CollectError, ConfigError, PerfkitError
from perfkit.transport import HostSpec, Job, Transport, connect

from .captures import PHASES, CaptureSpec

ENV = {"LC_ALL": "C", "S_TIME_FORMAT": "ISO"}
SNAPSHOT_TIMEOUT_S = 30
KILL_AFTER_S = 5
GRACE_S = 10  # a window capture may run this long past the window before it counts as hung
# sshd's default MaxSessions is 10 channels per connection; keep one free for control commands.
MAX_CHANNELS = 9

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

    def __post_init__(self) -> None:
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


@dataclass
class HostOutcome:
    host: str
    status: str = "ok"  # ok | partial | failed | interrupted
    reason: str = ""
    captures: int = 0
    bytes: int = 0


@dataclass
class Result:
    path: Path
    manifest: dict[str, Any]
    hosts: list[HostOutcome]

    @property
    def exit_code(self) -> int:
        status = self.manifest["status"]
        return {"complete": EXIT_OK, "partial": EXIT_PARTIAL, "interrupted": EXIT_INTERRUPTED}.get(
            status, EXIT_FAILED
        )


def tag(run_id: str) -> str:
    """The string every remote command carries, so leftovers can be found with `pgrep -f`."""
    return f"perfkit-{run_id}"


def wrap(command: str, *, deadline_s: float, workdir: str, run_id: str) -> str:
    """The shell line that runs one capture: C locale, ISO times, own process group, hard deadline.

    `timeout` makes itself a process-group leader and signals the whole group, so a pipeline or
    loop inside `command` dies with it; `-k` follows TERM with KILL. The run tag is `sh`'s $0.
    """
    env = " ".join(f"{k}={v}" for k, v in ENV.items())
    return (
        f"cd {shlex.quote(workdir)} && exec env {env} timeout -k {KILL_AFTER_S} -s TERM "
        f"{int(deadline_s)} sh -c {shlex.quote(command)} {shlex.quote(tag(run_id))}"
    )


def collect(
    hosts: list[HostSpec],
    out: Path,
    opts: Options,
    *,
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    connector: Callable[[HostSpec], Transport] = connect,
) -> Result:
    """Collect on every host for `opts.window` seconds into `out` (a directory, or a .tar.gz).

    One host failing never stops the others; its outcome says why. Raises PerfkitError only for
    problems with the output location itself.
    """
    stop = stop or threading.Event()
    packed = out.name.endswith((".tar.gz", ".tgz"))
    old_umask = os.umask(0o077)
    try:
        if packed:
            out.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix="perfkit-collect-", dir=out.parent))
            root = staging / opts.run_id
        else:
            if out.exists() and any(out.iterdir()):
                raise PerfkitError(f"{out}: output directory exists and is not empty")
            root, staging = out, None
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        created = _now()
        records: dict[str, list[Record]] = {h.name: [] for h in hosts}
        outcomes = {h.name: HostOutcome(h.name) for h in hosts}
        threads = [
            threading.Thread(
                target=_host_main,
                name=f"collect-{h.name}",
                daemon=True,
                args=(h, root, opts, records[h.name], outcomes[h.name], stop, connector, progress),
            )
            for h in hosts
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            stop.set()  # hosts stop their captures and write what they have
            for t in threads:
                t.join(KILL_AFTER_S + 5)
        manifest = _manifest(hosts, opts, created, records, outcomes, interrupted=stop.is_set())
        (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        final = root
        if packed:
            pack(root, out)
            shutil.rmtree(staging, ignore_errors=True)
            final = out
        return Result(final, manifest, list(outcomes.values()))
    finally:
        os.umask(old_umask)


# ---------------------------------------------------------------- one host


def _host_main(
    spec: HostSpec,
    root: Path,
    opts: Options,
    records: list[Record],
    outcome: HostOutcome,
    stop: threading.Event,
    connector: Callable[[HostSpec], Transport],
    progress: Callable[[str], None] | None,
) -> None:
    hostdir = root / "hosts" / spec.name
    hostdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for s in opts.specs:
        records.append(
            Record(
                id=s.id,
                host=spec.name,
                kind=s.kind,
                command="",
                path=f"hosts/{spec.name}/{s.id}.out",
                phase=s.phase,
            )
        )
        # Every record has its file, empty when the capture never ran: the manifest never lies.
        (hostdir / f"{s.id}.out").touch(mode=0o600)
    try:
        with connector(spec) as tr:
            _HostRun(spec, tr, hostdir, opts, records, stop, progress).run()
    except PerfkitError as exc:
        outcome.status, outcome.reason = "failed", str(exc)
        for r in records:
            if r.status == "pending":
                r.status, r.reason = "skipped", f"host failed: {exc}"
    except Exception as exc:  # a bug must not lose the other hosts' data
        outcome.status, outcome.reason = "failed", f"internal error: {type(exc).__name__}: {exc}"
    bad = [r for r in records if r.status in ("lost", "timed_out", "failed") or r.truncated]
    if outcome.status == "ok" and stop.is_set():
        outcome.status, outcome.reason = "interrupted", "stopped by the user"
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
        stop: threading.Event,
        progress: Callable[[str], None] | None,
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
        self.workdir = f"/tmp/{tag(opts.run_id)}"
        self.versions: dict[str, str | None] = {}
        self.offset: float | None = None

    def run(self) -> None:
        self._preflight()
        for phase in PHASES:
            if not self.tr.alive() or self.stop.is_set():
                break
            deadline = self.opts.window + self.opts.grace if phase == "window" else SNAPSHOT_TIMEOUT_S
            self._run_phase([s for s in self.opts.specs if s.phase == phase], deadline=deadline)
        for r in self.records.values():
            if r.status == "pending":
                r.status, r.reason = (
                    "skipped",
                    "connection lost before it ran" if not self.tr.alive() else "stopped",
                )
        if self.tr.alive():
            self.tr.run(f"rm -rf {shlex.quote(self.workdir)}", timeout=SNAPSHOT_TIMEOUT_S)

    def _preflight(self) -> None:
        """Work dir, clock, and which tools exist (with their versions), in one round trip."""
        tools = sorted({s.tool for s in self.opts.specs})
        lines = [f"umask 077; mkdir -p {shlex.quote(self.workdir)} || exit 90", 'echo "@@id $(id -u)"']
        for tool in tools:
            version = next((s.version for s in self.opts.specs if s.tool == tool and s.version), "")
            probe = f"({version}) 2>&1 | head -n 1" if version else "echo present"
            lines.append(
                f"if command -v {shlex.quote(tool)} >/dev/null 2>&1; then printf '@@tool %s ' "
                f"{shlex.quote(tool)}; {probe} || echo; else echo '@@missing {tool}'; fi"
            )
        lines.append('echo "@@clock $(date +%s.%N)"')
        t0 = time.time()
        code, out, err = self.tr.run("\n".join(lines), timeout=SNAPSHOT_TIMEOUT_S)
        t1 = time.time()
        if code != 0:
            raise CollectError(
                self.spec.name, f"preflight failed (exit {code}): {err.decode(errors='replace')[:200]}"
            )
        uid = None
        for line in out.decode(errors="replace").splitlines():
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

    def _run_phase(self, specs: list[CaptureSpec], *, deadline: float) -> None:
        """Run one phase's captures, at most MAX_CHANNELS at a time (sshd's MaxSessions is 10)."""
        queue = [s for s in specs if self.records[s.id].status == "pending"]
        running: list[_Running] = []
        # Locally, give up a little after the remote `timeout` would have killed everything.
        hard_stop = time.monotonic() + deadline + KILL_AFTER_S + 5
        while queue or any(not j.done for j in running):
            while queue and sum(not j.done for j in running) < MAX_CHANNELS and not self.stop.is_set():
                running.append(self._start(queue.pop(0), deadline))
            if self.stop.is_set():
                queue.clear()
            _wait_readable([j.job for j in running if not j.done], 0.5)
            for j in running:
                if not j.done:
                    j.pump()
            if self.stop.is_set() or time.monotonic() > hard_stop:
                for j in running:
                    if not j.done:
                        j.abort("stopped by the user" if self.stop.is_set() else "no exit after the deadline")
                queue.clear()
        for j in running:
            j.close()

    def _start(self, spec: CaptureSpec, deadline: float) -> _Running:
        record = self.records[spec.id]
        record.command = spec.render(
            interval=self.opts.interval, window=self.opts.window, workdir=self.workdir
        )
        wrapped = wrap(record.command, deadline_s=deadline, workdir=self.workdir, run_id=self.opts.run_id)
        return _Running(spec, record, self.hostdir, self.tr.start(wrapped))


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

    def __init__(self, spec: CaptureSpec, record: Record, hostdir: Path, job: Job):
        self.spec, self.record, self.job = spec, record, job
        self.out: IO[bytes] = open(hostdir / f"{spec.id}.out", "wb")  # noqa: SIM115 - closed in close()
        self.err_path = hostdir / f"{spec.id}.err"
        self.err = bytearray()
        self.sha = hashlib.sha256()
        self.done = False
        record.started_at = _now()

    def pump(self) -> None:
        out, err = self.job.read()
        self._write(out)
        if len(self.err) < 1 << 20:
            self.err += err[: (1 << 20) - len(self.err)]
        code = self.job.poll()
        if code is not None:
            out, err = self.job.read()  # what arrived with the exit status
            self._write(out)
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
        self.out.write(data)
        self.sha.update(data)
        self.record.bytes += len(data)

    def _finish(self, code: int) -> None:
        r = self.record
        r.exit_code, r.ended_at, self.done = code, _now(), True
        if code == -1:
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

    def abort(self, reason: str) -> None:
        self.job.kill()
        self.pump()
        if not self.done:
            self.record.reason = reason
            self._finish(124)
            self.record.timed_out = True

    def close(self) -> None:
        self.job.close()
        self.out.close()
        self.record.sha256 = self.sha.hexdigest()
        if self.err:
            self.err_path.write_bytes(bytes(self.err))
            self.record.stderr_path = self.record.path[: -len(".out")] + ".err"


# ---------------------------------------------------------------- manifest


def _manifest(
    hosts: list[HostSpec],
    opts: Options,
    created: str,
    records: dict[str, list[Record]],
    outcomes: dict[str, HostOutcome],
    *,
    interrupted: bool,
) -> dict[str, Any]:
    states = [o.status for o in outcomes.values()]
    if interrupted:
        status, reason = "interrupted", "stopped by the user"
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
            }
            for h in hosts
        ],
        "hosts": [asdict(o) for o in outcomes.values()],
        "controller": {"cpu_s": round(usage.ru_utime + usage.ru_stime, 3), "max_rss_kb": usage.ru_maxrss},
        "captures": [asdict(r) for rs in records.values() for r in rs],
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

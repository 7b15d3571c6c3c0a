"""Where a load generator runs: this machine or a client host over SSH, through one Transport.

Every runner (sysbench, go-ycsb, go-tpc) starts its tool the same way, so `--client-host` works for
all of them and a local run is the same code path with the local transport:

- secrets travel on stdin into a 0600 file in a 0700 temp dir on the load host (`secret_file`), and
  the dir is removed when the runner closes; the password is never in perfkit's own argv or logs;
- the tool runs as `exec timeout --foreground -s SIG -k K LIMIT tool ...` with stdout and stderr
  merged, after printing its shell's pid on stderr: perfkit signals that pid with a separate `kill`
  (sshd refuses signal requests for root logins, and `timeout` forwards what it receives to the
  tool), and the `timeout` ends the tool on its own if perfkit dies. `--foreground` because without
  it `timeout` signals the tool twice (directly and through the process group), and go-ycsb takes a
  second SIGTERM as "exit now", without its final totals;
- output is streamed into `load/<step>/<tool>.out` as it arrives, with the known secrets' exact
  values masked (go-ycsb echoes its password property; go-tpc's is in its argv);
- several load hosts start one step together through a `StartGate`: each host's shell is started
  first and waits for a line on its stdin, and once every one waits they are all sent it at once (so
  the SSH round trips of starting a command fall before the start, not between the hosts). A run's
  `started_at` is when its shell's pid line came back, the moment it went on to exec the tool, on
  this machine's clock: the spread of those over the hosts is the step's start skew.
"""

from __future__ import annotations

import contextlib
import re
import select
import shlex
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from perfkit.errors import CollectError, ParseError, PerfkitError
from perfkit.redact import Redactor, redact
from perfkit.transport import LOCAL, Job, Transport, connect

_PID = re.compile(rb"perfkit-load-pid (\d+)")
_READY = b"perfkit-load-ready"  # a gated start's shell is up and waits for the go line
KILL_AFTER_S = 10  # `timeout -k`: how long a signalled tool has to exit before SIGKILL
# failed operations above this share make a step degraded; a run ended by a signal cuts a few in flight
ERROR_SHARE = 0.01
GATE_TIMEOUT_S = 120  # how long the load hosts wait for each other's commands to be started


class NotStarted(PerfkitError):
    """The step's other load hosts did not all get ready: this one's tool was not started."""


class StartGate:
    """The start line of one step's load hosts: `wait` returns True once all `parties` wait, False when
    one gave up (`abort`: its command could not be started) or `timeout` passed."""

    def __init__(self, parties: int, *, timeout: float = GATE_TIMEOUT_S):
        self._barrier = threading.Barrier(parties, timeout=timeout)

    def wait(self) -> bool:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            return False
        return True

    def abort(self) -> None:
        self._barrier.abort()


@dataclass
class LoadResult:
    """One load-generator invocation: its exit, timing and whether its output says it worked."""

    command: str
    exit_code: int | None
    started_at: float
    ended_at: float
    bytes: int
    timed_out: bool = False
    interrupted: bool = False
    status: str = "ok"  # ok | degraded | failed | interrupted
    reason: str = ""
    fatal: list[str] = field(default_factory=list)
    summary: dict = field(default_factory=dict)  # the tool's printed totals, as its parser gives them
    failed: int = 0  # operations that failed (a tool's own retries of lock conflicts are not failures)
    redacted: bool = False


class LoadHost:
    """The machine a load generator runs on. Use as a context manager (it owns a temp dir there)."""

    def __init__(self, transport: Transport | None = None, *, secrets: tuple[str, ...] = ()):
        self.transport = transport or connect(LOCAL)
        self.secrets = tuple(s for s in secrets if s)
        self._dir: str | None = None

    @property
    def name(self) -> str:
        return self.transport.spec.name

    def __enter__(self) -> LoadHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._dir is not None and self.transport.alive():
            # a lost link leaves the 0700 dir on the host: nothing else can be done
            with contextlib.suppress(PerfkitError):
                self.transport.run(f"rm -rf {shlex.quote(self._dir)}", timeout=30)
        self._dir = None
        self.transport.close()

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)

    def run(self, command: str, *, timeout: float) -> tuple[int, str]:
        """A short command to completion: (exit code, stdout+stderr as text, secrets masked)."""
        rc, out, err = self.transport.run(command, timeout=timeout)
        return rc, self.redact((out + err).decode(errors="replace"))

    def time_wait_to(self, port: int) -> int:
        """TIME_WAIT sockets on the load host whose remote port is `port` (/proc/net/tcp and tcp6)."""
        with contextlib.suppress(PerfkitError):
            _rc, out, _err = self.transport.run("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null", timeout=30)
            return count_time_wait(out.decode(errors="replace"), port)
        return 0

    def ephemeral_ports(self) -> int:
        """How many ephemeral ports the load host has (Linux's default range, 32768-60999, if unknown)."""
        with contextlib.suppress(PerfkitError, ValueError):
            _rc, out, _err = self.transport.run("cat /proc/sys/net/ipv4/ip_local_port_range", timeout=30)
            low, high = (int(x) for x in out.split())
            return high - low + 1
        return 28232

    def which(self, binary: str) -> str:
        """The tool's path on the load host; PerfkitError when it is not there."""
        rc, out = self.run(f"command -v {shlex.quote(binary)}", timeout=30)
        path = out.strip().splitlines()[-1] if out.strip() else ""
        if rc != 0 or not path:
            raise PerfkitError(f"{self.name}: {binary!r} not found (not installed, or not on PATH there)")
        return path

    def secret_file(self, name: str, content: str) -> str:
        """Write `content` to a 0600 file in this runner's 0700 temp dir on the host; its path."""
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            raise ValueError(f"bad file name {name!r}")
        if self._dir is None:
            rc, out = self.run("umask 077; mktemp -d /tmp/perfkit-load.XXXXXX", timeout=30)
            if rc != 0:
                raise PerfkitError(f"{self.name}: cannot make a private temp dir: {out.strip()[:200]}")
            self._dir = out.strip().splitlines()[-1]
        path = f"{self._dir}/{name}"
        rc, _out, err = self.transport.run(
            f"umask 077; cat > {shlex.quote(path)}", timeout=30, stdin=content.encode()
        )
        if rc != 0:
            raise PerfkitError(f"{self.name}: cannot write {path}: {self.redact(err.decode())[:200]}")
        return path

    def stream(
        self,
        argv: list[str],
        out: Path,
        *,
        limit_s: float,
        end_signal: str = "INT",
        stop: object | None = None,
        shown: str,
        secret_arg: tuple[str, str] | None = None,
        gate: StartGate | None = None,
    ) -> LoadResult:
        """Run `argv` on the host under `timeout -s end_signal limit_s`, its output streamed into `out`.

        `stop` (an Event) sends SIGINT early: the tools print what they have and exit. A tool still
        running `KILL_AFTER_S` after its signal is killed by `timeout`; perfkit gives up on it
        `KILL_AFTER_S + 20` s after `limit_s` (`timed_out`). `shown` is the command line recorded
        in the manifest (the caller hides what should not be shown).

        `secret_arg` (flag, value) is for a tool that takes the password only in argv (go-tpc's `-p`):
        the value travels on stdin into a shell variable, so it is in no command line perfkit builds,
        logs or records, only in the tool's own argv on the load host (which captures mask).

        `gate`: the tool starts when every load host of the step is ready (see the module's doc);
        PerfkitError, nothing run, when another gave up.
        """
        prefix, tail, stdin = "", "", None
        if secret_arg is not None:
            flag, value = secret_arg
            if "\n" in value:
                raise PerfkitError(f"{argv[0]} {flag}: a newline is not allowed")
            prefix, tail = "IFS= read -r PERFKIT_SECRET; ", f' {flag} "$PERFKIT_SECRET"'
            stdin = value.encode() + b"\n"
        if gate is not None:  # the shell says it is up, then waits for the go line (EOF: nothing runs)
            prefix += f"echo {_READY.decode()} >&2; IFS= read -r PERFKIT_GO || exit 125; "
        command = (
            f"{prefix}echo perfkit-load-pid $$ >&2; exec timeout --foreground "
            f"-s {end_signal} -k {KILL_AFTER_S} {limit_s:g} {shlex.join(argv)}{tail} 2>&1"
        )
        out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        started = time.time()
        try:
            job = self.transport.start(command, stdin=stdin, keep_stdin=gate is not None)
        except CollectError as exc:
            raise PerfkitError(f"{self.name}: cannot start {argv[0]}: {exc}") from None
        errbuf = b""
        if gate is not None:
            # a login's shell can take a few hundred ms to come up: the go line is sent only once
            # every host's shell waits for it, so that their starts are apart by a round trip at most
            errbuf, up = _read_until(job, _READY, GATE_TIMEOUT_S)
            if not up:
                gate.abort()
            if not (up and gate.wait()):
                job.end_input()  # EOF for the waiting `read`: the shell exits without running the tool
                job.kill()
                job.close()
                if not up:
                    raise PerfkitError(f"{self.name}: cannot start {argv[0]}: its shell did not come up")
                raise NotStarted(f"{argv[0]} not started: another load host could not start")
            job.send(b"go\n")
            job.end_input()
            started = time.time()
        deadline = time.monotonic() + limit_s + KILL_AFTER_S + 20
        redactor = Redactor(self.secrets)
        size, pid, timed_out, interrupted, code = 0, None, False, False, None
        with open(out, "wb") as fh:

            def write(data: bytes) -> None:
                nonlocal size
                if data:
                    fh.write(data)
                    fh.flush()
                    size += len(data)

            try:
                while True:
                    o, e = job.read()
                    write(redactor.feed(o))
                    if pid is None and e:
                        errbuf += e
                        m = _PID.search(errbuf)
                        if m:  # the shell goes on to exec the tool now: the run's start
                            pid, started = int(m.group(1)), time.time()
                    code = job.poll()
                    if code is not None:
                        o, _e = job.read()
                        write(redactor.feed(o))
                        break
                    if stop is not None and getattr(stop, "is_set", lambda: False)() and not interrupted:
                        interrupted = True
                        self._signal(pid, "INT")
                        deadline = min(deadline, time.monotonic() + KILL_AFTER_S + 5)
                    if time.monotonic() > deadline:
                        timed_out = not interrupted
                        job.kill()
                        o, _e = job.read()
                        write(redactor.feed(o))
                        code = job.poll()
                        break
                    # the pid line comes on stderr, which a local job's select does not watch:
                    # look often until it is there, so that the start is timed to a few ms
                    select.select([job], [], [], 0.1 if pid is not None else 0.005)
            except (KeyboardInterrupt, SystemExit) as exc:
                # Ctrl-C or SIGTERM in perfkit itself: the tool must not outlive it (a remote one,
                # or a local one in its own session, would go on loading the tables for hours)
                self._end(job, pid, errbuf, lambda data: write(redactor.feed(data)))
                raise exc
            finally:
                write(redactor.flush())
                job.close()
        return LoadResult(
            command=shown,
            exit_code=code,
            started_at=started,
            ended_at=time.time(),
            bytes=size,
            timed_out=timed_out,
            interrupted=interrupted,
            redacted=redactor.hits > 0,
        )

    def _end(self, job: Job, pid: int | None, errbuf: bytes, keep: Callable[[bytes], None]) -> None:
        """Stop a tool whose perfkit was interrupted: its pid read if not yet (the shell prints it
        first), SIGINT, `KILL_AFTER_S + 5` s to exit (`timeout` SIGKILLs it after `KILL_AFTER_S`),
        then the job killed. What it prints meanwhile is kept through `keep`."""
        deadline = time.monotonic() + KILL_AFTER_S + 5
        while pid is None and job.poll() is None and time.monotonic() < deadline - KILL_AFTER_S:
            o, e = job.read()
            keep(o)
            errbuf += e
            m = _PID.search(errbuf)
            pid = int(m.group(1)) if m else None
            select.select([job], [], [], 0.1)
        self._signal(pid, "INT")
        while job.poll() is None and time.monotonic() < deadline:
            keep(job.read()[0])
            select.select([job], [], [], 0.1)
        if job.poll() is None:
            job.kill()
        keep(job.read()[0])

    def admin(
        self,
        argv: list[str],
        *,
        limit_s: float,
        shown: str,
        secret_arg: tuple[str, str] | None = None,
    ) -> tuple[LoadResult, str]:
        """A tool's prepare/load/cleanup run to completion through `stream` (so an interrupted
        perfkit stops it by pid, here or on a client host): the result and its output as text,
        secrets masked. The output goes to a private temp file on this machine, removed after."""
        with tempfile.TemporaryDirectory(prefix="perfkit-admin-") as tmp:
            out = Path(tmp) / "admin.out"
            res = self.stream(argv, out, limit_s=limit_s, shown=shown, secret_arg=secret_arg)
            return res, out.read_text(errors="replace")

    def _signal(self, pid: int | None, sig: str) -> None:
        if pid is None:
            return
        # gone already, or the link is: `timeout` ends the tool on the host
        with contextlib.suppress(PerfkitError):
            self.transport.run(f"kill -{sig} {pid}", timeout=10)


def _read_until(job: Job, marker: bytes, limit_s: float) -> tuple[bytes, bool]:
    """A starting job's stderr until `marker` (True), its exit or `limit_s` (False). Its stdout is
    empty until then: the tool has not run."""
    errbuf = b""
    deadline = time.monotonic() + limit_s
    while marker not in errbuf:
        if job.poll() is not None or time.monotonic() > deadline:
            return errbuf, False
        errbuf += job.read()[1]
        select.select([job], [], [], 0.005)  # a local job's select does not watch stderr
    return errbuf, True


class HostedRunner:
    """What every load runner shares: it owns its LoadHost, and closing the runner closes the host
    (its private dir with the secrets goes)."""

    host: LoadHost | None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.host is not None:
            self.host.close()


def count_time_wait(tables: str, port: int) -> int:
    """TIME_WAIT entries (state 06) to remote port `port` in /proc/net/tcp{,6} text."""
    n = 0
    for line in tables.splitlines():
        f = line.split()
        if len(f) > 3 and f[3] == "06" and ":" in f[2]:
            with contextlib.suppress(ValueError):
                n += int(f[2].rsplit(":", 1)[1], 16) == port
    return n


def judge_go_tool(
    res: LoadResult, out: Path, time_s: int, *, tool: str, kind: str, ended_by_perfkit: bool
) -> None:
    """Set `res.status`/`reason` for go-ycsb or go-tpc from their parsed output (reliability.md L3:
    their exit codes lie). `ended_by_perfkit`: the run was ended at --time by `timeout`'s signal (exit
    124 is the plan, and the operations cut in flight show as a few errors), not by the tool itself."""
    from perfkit import parsers

    if res.interrupted:
        res.status, res.reason = "interrupted", "stopped by the user"
        return
    try:
        frame = parsers.get(kind).parse(out)
    except ParseError as exc:
        res.status, res.reason = "failed", f"output not readable: {exc}"
        return
    runs = frame.attrs.get("runs") or []
    run = runs[-1] if runs else {}
    summary = dict(run.get("summary") or {})
    fatal = run.get("fatal")
    res.fatal = [fatal] if fatal else []
    ok, errors = summary.get("count") or 0, summary.get("errors") or 0
    if summary:  # the keys the sweep driver reads from every tool's summary
        summary.update(
            tps=summary.get("tps", summary.get("ops_s")),
            transactions=summary.get("count"),
            ignored_errors=errors,
        )
    res.summary, res.failed = summary, errors
    if res.timed_out or (res.exit_code == 124 and not ended_by_perfkit):
        res.status, res.reason = "failed", f"{tool} did not exit by itself after {time_s}s"
    elif not summary:
        lines = out.read_text(errors="replace").strip().splitlines()
        last = f"; last line: {lines[-1][:240]}" if lines else ""
        res.status, res.reason = "failed", fatal or f"exit {res.exit_code}, no totals printed{last}"
    elif not summary.get("tps"):
        res.status, res.reason = "failed", "nothing completed"
    elif res.exit_code not in ((0, 124) if ended_by_perfkit else (0,)):
        res.status, res.reason = "degraded", fatal or f"exit {res.exit_code} after its totals"
    elif (summary.get("total_time_s") or time_s) < 0.9 * time_s:
        res.status, res.reason = "degraded", f"ran {summary['total_time_s']:.1f}s of {time_s}s"
    elif errors > ERROR_SHARE * (ok + errors):
        res.status, res.reason = "degraded", f"{errors} failed operations of {ok + errors}"

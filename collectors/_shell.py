"""The shell side of a collection session: the lines perfkit runs on a host, and the control shell
that runs most of them.

Every capture runs under `wrap`: C locale, ISO times, its own process group under `timeout -k`, tied
to the window, the run tag as `sh`'s $0 so leftovers are found with `pgrep -f` and killed by
`sweep_command`. `ControlShell` is one `sh -s` per host fed pieces of script over stdin, each
piece's output ended by a marker with a random token; `Segment` is one piece's output seen as a
`Job` of its own, so the output streams (`_streams.Stream`) take a snapshot like a window capture.
"""

from __future__ import annotations

import hashlib
import select
import shlex
import time
import uuid

from perfkit.errors import CommandTimeout
from perfkit.manifest import ENV
from perfkit.transport import LOST, Job, Transport

from ._records import now

SNAPSHOT_TIMEOUT_S = 30
KILL_AFTER_S = 5


def tag(run_id: str) -> str:
    """The string every remote command carries, so leftovers can be found with `pgrep -f`."""
    return f"perfkit-{run_id}"


def entry(host: str) -> str:
    """A host entry's mark in this run's names: 6 hex of its name as given (never of the machine it
    resolves to), so two entries for one machine differ and any name makes a short, safe path."""
    return hashlib.sha256(host.encode()).hexdigest()[:6]


def workdir(run_id: str, host: str) -> str:
    """A host entry's scratch dir for this run: `/tmp/perfkit-<run id>-<entry(host)>`.

    One per host entry, not per run: two entries for one machine (ssh_config aliases, 127.0.0.1 and
    localhost, one IP under several TiUP roles) must not share a dir that the first one's clean-up
    removes while the other still works in it. Every capture's wrapper starts in it, which is how the
    end-of-run sweep tells an entry's processes from another's (`sweep_command`)."""
    return f"/tmp/{tag(run_id)}-{entry(host)}"


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
# subreaper) lost its run. At its end a host entry kills its own wrappers that hang off its connection
# (the sweep shell's parent, or the sweep shell itself) or lost theirs. Several entries can be one
# machine and share the run tag, and locally all their wrappers hang off perfkit's Python: an
# entry's own are those whose working directory is its work dir (`wrap` starts them there; the
# clean-up has removed it by then, hence " (deleted)"; matched by name, as /tmp may be a link),
# so one entry's sweep never kills or counts another's captures. `pgrep` (C, one pass over /proc)
# finds the wrappers; the tag is split in shell variables so the sweep never matches its own
# command line. At a start the scan only runs when another run's work dir is in /tmp (this run's
# are `workdir`'s, one per host entry): a run removes its own when it ends, so one that died leaves
# its dir behind, and a host with none has nothing to sweep.
_SWEEP = r"""n=0; pre=perfkit-; rid=%(rid)s; mine=%(mine)s; entry=%(entry)s; other=$mine; h=[0-9a-f]
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
  if [ $mine = 1 ] && [ $ours = 1 ] && [ -n "$entry" ]; then
    case $(readlink /proc/$p/cwd 2>/dev/null) in
      */"$pre$rid-$entry" | */"$pre$rid-$entry (deleted)") ;;
      *) continue ;;
    esac
  fi
  if { [ $mine = 1 ] && [ $ours = 1 ] && { [ "$ppid" = "$PPID" ] || [ "$ppid" = $$ ] || [ $live = 0 ]; }; } ||
     { [ $mine = 0 ] && [ $ours = 0 ] && [ $live = 0 ]; }; then
    kill -s KILL -- "-$pgrp" 2>/dev/null && n=$((n+1))
  fi
done
echo "@@leftovers $n"
"""


def sweep_command(run_id: str, *, mine: bool, host: str | None = None) -> str:
    """Shell that kills leftover capture process groups and prints `@@leftovers N`: with `mine`, this
    run's groups on this connection or orphaned (at its end), and with `host` only that host entry's;
    without `mine`, other runs' orphans (at a start)."""
    return _SWEEP % {"rid": shlex.quote(run_id), "mine": int(mine), "entry": entry(host) if host else "''"}


def leftovers_killed(out: bytes) -> int:
    """How many process groups a `sweep_command` killed, from its output (0 if it printed no count)."""
    for line in out.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "@@leftovers" and value.strip().isdigit():
            return int(value)
    return 0


class ControlShell:
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
        self.segments: list[Segment] = []
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
            wait_readable([seg], 0.1)
            o, e = seg.read()
            out += o
            err += e
        o, e = seg.read()
        return seg.code if seg.code is not None else LOST, bytes(out + o), bytes(err + e)

    def batch(self, commands: list[str], deadline_s: float) -> list[Segment]:
        """Start `commands` one after another, each wrapped like a window capture; one job each."""
        return self._send(
            [
                (str(i), snapshot_line(c, deadline_s=deadline_s, workdir=self.workdir, run_id=self.run_id))
                for i, c in enumerate(commands)
            ]
        )

    def _send(self, pieces: list[tuple[str, str]]) -> list[Segment]:
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
        self.segments = [Segment(self, sid) for sid, _ in pieces]
        self.segments[0].started_at = now()
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
            seg.started_at = seg.started_at or now()
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
                wait_readable([job], 0.1)
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


class Segment(Job):
    """One piece of what the control shell prints, as a job of its own (so `_streams.Stream` takes it)."""

    def __init__(self, control: ControlShell, sid: str):
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


def wait_readable(jobs: list[Job], timeout: float) -> None:
    """Sleep until one of `jobs` has output, at most `timeout` s (a job without a file number: 0.1 s)."""
    fds = [fd for fd in (j.fileno() for j in jobs) if fd is not None and fd >= 0]
    if fds:
        try:
            select.select(fds, [], [], timeout)
            return
        except (OSError, ValueError):
            pass
    time.sleep(min(timeout, 0.1))

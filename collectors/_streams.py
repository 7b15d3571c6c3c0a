"""Output streams: a started capture's stdout and stderr coming home into the archive.

stdout streams into `hosts/<host>[/<step>]/<id>.out` while the capture runs (so bytes captured
before a host dies are kept), masked by the run's `Redactor`, hashed as written and cut at the
capture's byte cap; stderr is kept in memory (1 MiB at most) and written to `<id>.err` at the end.
A window capture's job is its own channel, a snapshot's is a `_shell.Segment` of the control shell:
one `Stream` serves both.
"""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path
from typing import IO

from perfkit.redact import Redactor
from perfkit.transport import Job

from ._records import Ledger, Stop, now
from .captures import CaptureSpec

# a write failing so means the archive side is full
DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
ERR_CAP = 1 << 20  # stderr kept per capture

# What a stream says about its capture: these fields of the record are its, from its start to its close.
_OWN = (
    "started_at",
    "ended_at",
    "exit_code",
    "timed_out",
    "truncated",
    "bytes",
    "sha256",
    "stderr_path",
    "status",
    "reason",
    "redacted",
)


class Stream:
    """A started capture: pumps its output into the archive, enforces the byte cap, and hands what
    it learns (bytes, status, exit code, ...) to the ledger after every pump.

    It works on a copy of the capture's record that no other thread sees, so its checks (`truncated`,
    a reason set before, the bytes so far) read its own state; the ledger only ever receives fields.
    """

    def __init__(
        self,
        spec: CaptureSpec,
        host: str,
        ledger: Ledger,
        hostdir: Path,
        job: Job,
        stop: Stop,
        redactor: Redactor,
    ):
        self.spec, self.host, self.ledger = spec, host, ledger
        self.job, self.stop, self.redactor = job, stop, redactor
        record = ledger.get(host, spec.id)
        if record is None:
            raise KeyError(f"{host}: no record for capture {spec.id}")
        self.record = record
        self.out: IO[bytes] = open(hostdir / f"{spec.id}.out", "wb", buffering=0)  # noqa: SIM115 - see close()
        self.err_path = hostdir / f"{spec.id}.err"
        self.err = bytearray()
        self.sha = hashlib.sha256()
        self.done = False
        self.aborted: tuple[str, str] | None = None
        # whether it samples yet: from its start, unless its spec names the lines that say so
        self.sampling = not spec.sampling
        self._line_end = b"\n"  # the output's last bytes, for a line start split across reads
        record.started_at = now()
        self._publish()

    def _publish(self) -> None:
        self.ledger.merge(self.host, self.spec.id, **{name: getattr(self.record, name) for name in _OWN})

    def pump(self) -> None:
        out, err = self.job.read()
        self._watch(out)
        self._write(self.redactor.feed(out))
        if len(self.err) < ERR_CAP:
            self.err += err[: ERR_CAP - len(self.err)]
        code = self.job.poll()
        if code is not None:
            out, err = self.job.read()  # what arrived with the exit status
            self._watch(out)
            self._write(self.redactor.feed(out) + self.redactor.flush())
            self.err += err[: max(0, ERR_CAP - len(self.err))]
            self._finish(code)
        self._publish()

    def _watch(self, data: bytes) -> None:
        """`sampling` once a line starting with one of the spec's `sampling` marks has arrived."""
        if self.sampling or not data:
            return
        seen = self._line_end + data
        self.sampling = any(b"\n" + mark in seen for mark in self.spec.sampling)
        self._line_end = seen[-max(len(m) for m in self.spec.sampling) :]

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
            if exc.errno not in DISK_FULL:
                raise
            self.record.truncated = True
            self.record.reason = f"archive disk full ({exc.strerror}); output so far kept"
            self.stop.trigger("disk_full")
            self.job.kill()

    def _finish(self, code: int | None) -> None:
        r = self.record
        r.exit_code, r.ended_at, self.done = code, now(), True
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
            self._publish()

    def close(self) -> None:
        self.job.close()
        self._write(self.redactor.flush())
        self.out.close()
        self.record.sha256 = self.sha.hexdigest()
        if self.err:
            try:
                self.err_path.write_bytes(self.redactor.mask(bytes(self.err)))
            except OSError as exc:
                if exc.errno not in DISK_FULL:
                    raise
                self.err_path.unlink(missing_ok=True)  # no half file the manifest does not list
                self.record.reason = (
                    self.record.reason or f"stderr not kept: archive disk full ({exc.strerror})"
                )
                self.stop.trigger("disk_full")
            else:
                self.record.stderr_path = self.record.path[: -len(".out")] + ".err"
        self.record.redacted = self.redactor.hits > 0
        self._publish()

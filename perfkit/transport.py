"""Transports: run shell commands on this machine (subprocess) or on a host over SSH (paramiko).

Both transports share one small interface so the capture runner never cares where a command
runs: ``connect(spec)`` gives a `Transport`; ``Transport.start(command)`` gives a running `Job`
whose output is read incrementally without blocking; ``Transport.run`` is the blocking helper.

SSH rules (reliability.md S1-S6):

- **One connection per host** for the whole collection window: one `paramiko.SSHClient`, one
  paramiko Transport, one channel per command.
- **Host keys** come from known_hosts (``HostSpec.known_hosts``, else the ssh config's
  ``UserKnownHostsFile``, else ``~/.ssh/known_hosts``; ``/etc/ssh/ssh_known_hosts`` is read too when no
  file is given). An unknown key is refused before authentication with its SHA256 fingerprint and
  the command that trusts it; ``accept_new_host_key`` (explicit opt-in) appends an *unknown* key to
  the file and records it in ``SSHTransport.added_host_key``. A changed key always fails, whatever
  the options. ``StrictHostKeyChecking`` in the ssh config is deliberately ignored.
- **Auth** uses keys only: ``HostSpec.key_filename`` plus the config's ``IdentityFile``\\ s, then
  ssh-agent keys (unless ``IdentitiesOnly yes``), then ``~/.ssh/id_*`` when no key was named. Never a
  password, never a keyboard-interactive prompt, never agent forwarding.
- **Timeouts** per phase (connect, banner, kex, auth), each named in the error message; after
  login a watchdog sends ``keepalive@openssh.com`` requests (which the server must answer) and ends
  the connection when nothing at all arrived for ``channel_timeout`` seconds, so a dead link is
  noticed in seconds, not after TCP's ~15 minutes. A job on a lost connection polls ``-1``.
- ``ProxyJump`` (one or more hops) reuses these rules for each hop and tunnels through a
  ``direct-tcpip`` channel. ``ProxyCommand`` is refused (it would run a local shell command).

Exit codes from ``Job.poll``: the command's own status; ``128 + N`` when it died of signal N
(local), ``255`` when an SSH server closed the channel without an exit status (the remote command
died of a signal, as ``ssh`` reports it), ``-1`` only when the connection was lost.
"""

from __future__ import annotations

import abc
import base64
import contextlib
import errno
import getpass
import hashlib
import ipaddress
import logging
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST

from perfkit.errors import (
    AuthFailed,
    CollectError,
    CommandTimeout,
    ConfigError,
    HostKeyError,
    HostUnreachable,
)

# K3: paramiko's DEBUG output carries key fingerprints, usernames and tracebacks of connect
# arguments. Hold it at WARNING; the NullHandler keeps its transport-thread tracebacks (e.g. for a
# banner timeout we report ourselves) off stderr when the application configured no logging.
logging.getLogger("paramiko").setLevel(logging.WARNING)
logging.getLogger("paramiko").addHandler(logging.NullHandler())

LOST = -1
"""``Job.poll()`` value: the connection to the host was lost; the command's fate is unknown."""

KILL_GRACE_S = 1.0
"""Seconds between SIGTERM and SIGKILL in ``Job.kill()``."""

_MAX_JUMPS = 4
_READ_CHUNK = 65536
_HOST_RE = re.compile(r"[A-Za-z0-9._:@\[\]-]+")
_USER_RE = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*")
_LABEL_RE = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]*)")
_known_hosts_lock = threading.Lock()


# --------------------------------------------------------------------------- host specs


@dataclass(frozen=True)
class HostSpec:
    """Where and how to connect. Build it with `parse_host`; ``LOCAL`` is this machine."""

    name: str  # display/archive name: the host as the user wrote it (port included when given)
    hostname: str | None  # None => the local machine (no SSH); else an alias or address
    port: int | None = None  # None => from ssh config, else 22
    user: str | None = None  # None => from ssh config, else the local user name
    key_filename: str | None = None
    known_hosts: str | None = None  # file; default: ssh config UserKnownHostsFile, else ~/.ssh/known_hosts
    ssh_config: str | None = None  # file; default ~/.ssh/config when it exists
    accept_new_host_key: bool = False  # opt-in: add an UNKNOWN key to known_hosts (never a changed one)
    connect_timeout: float = 10.0
    banner_timeout: float = 10.0
    auth_timeout: float = 10.0
    channel_timeout: float = 15.0  # no data and no keepalive answer for this long = connection lost


LOCAL = HostSpec(name="localhost", hostname=None)

_SPEC_FIELDS = {f.name for f in fields(HostSpec)}


def _masked(text: str) -> str:
    """The host text for messages: a `user:secret@host` password is never echoed (K2)."""
    user, at, rest = text.rpartition("@")
    return f"{user.split(':', 1)[0]}:***@{rest}" if at and ":" in user else text


def parse_host(text: str, **defaults) -> HostSpec:
    """Parse ``host``, ``user@host``, ``host:port``, ``[v6]:port``, ``user@[v6]:port`` (or a bare IPv6).

    Args:
        text: the host as the user wrote it. Only ``[A-Za-z0-9._:@[]-]`` is accepted, so no shell
            metacharacter, space or option-looking value (leading ``-``) can reach anything.
        **defaults: other `HostSpec` fields (``key_filename``, ``known_hosts``, timeouts ...);
            ``user`` and ``port`` here are used only when ``text`` has none. ``name`` overrides the
            display name.

    Raises:
        ConfigError: on junk, naming the text and what is wrong with it.
    """
    unknown = set(defaults) - (_SPEC_FIELDS - {"hostname"})
    if unknown:
        raise ConfigError(f"unknown host option(s): {', '.join(sorted(unknown))}")
    if not isinstance(text, str) or not text:
        raise ConfigError("empty host")
    if not _HOST_RE.fullmatch(text):
        raise ConfigError(
            f"invalid host {_masked(text)!r}: only letters, digits and . _ - : @ [ ] are allowed"
        )
    user, at, rest = text.rpartition("@")
    if at:
        if not _USER_RE.fullmatch(user):
            raise ConfigError(f"invalid host {_masked(text)!r}: bad user name")
    else:
        user = None
    port: int | None = None
    if rest.startswith("["):
        host, sep, tail = rest[1:].partition("]")
        if not sep or not _is_ipv6(host):
            raise ConfigError(f"invalid host {_masked(text)!r}: brackets must hold an IPv6 address")
        if tail:
            if not tail.startswith(":"):
                raise ConfigError(f"invalid host {_masked(text)!r}: junk after ']'")
            port = _parse_port(text, tail[1:])
    elif rest.count(":") >= 2:
        if not _is_ipv6(rest):
            raise ConfigError(
                f"invalid host {_masked(text)!r}: not an IPv6 address (write [addr]:port for a port)"
            )
        host = rest
    else:
        host, sep, port_text = rest.partition(":")
        if sep:
            port = _parse_port(text, port_text)
        _check_hostname(text, host)
    name = defaults.pop("name", None)
    if name is None:
        shown = f"[{host}]" if ":" in host and port is not None else host
        name = shown if port is None else f"{shown}:{port}"
    if user is None:
        user = defaults.pop("user", None)
    else:
        defaults.pop("user", None)
    if port is None:
        port = defaults.pop("port", None)
    else:
        defaults.pop("port", None)
    return HostSpec(name=name, hostname=host, port=port, user=user, **defaults)


def _is_ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
    except ValueError:
        return False


def _parse_port(text: str, port_text: str) -> int:
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"invalid host {text!r}: port must be 1-65535, got {port_text!r}")
    return int(port_text)


def _check_hostname(text: str, host: str) -> None:
    if not host or len(host) > 253 or "[" in host or "]" in host:
        raise ConfigError(f"invalid host {text!r}: bad host name {host!r}")
    for label in host.rstrip(".").split("."):
        if len(label) > 63 or not _LABEL_RE.fullmatch(label):
            raise ConfigError(f"invalid host {text!r}: bad host name {host!r}")


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key (as ``ssh-keygen -lf`` prints it)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


# --------------------------------------------------------------------------- interface


class Job(abc.ABC):
    """One running command. Read with `read` (never blocks) until `poll` returns an exit code.

    After `poll` returns a code, call `read` once more: output that arrived with the exit is
    returned then. `close` releases the job's file descriptors (its transport closes it too).
    """

    command: str

    @abc.abstractmethod
    def fileno(self) -> int:
        """A descriptor for ``select()``: readable when output, EOF or the exit is ready."""

    @abc.abstractmethod
    def read(self) -> tuple[bytes, bytes]:
        """All stdout and stderr bytes available now; never blocks; ``(b"", b"")`` when none."""

    @abc.abstractmethod
    def poll(self) -> int | None:
        """None while running; else the exit code (``-1``: connection lost, never success)."""

    @abc.abstractmethod
    def kill(self) -> None:
        """Stop the command (best effort, bounded by about ``KILL_GRACE_S``)."""

    def send(self, data: bytes) -> None:
        """Write to the command's stdin (started with ``keep_stdin``); a dead command ignores it."""
        raise NotImplementedError(f"{type(self).__name__} has no open stdin")

    def end_input(self) -> None:
        """Close the command's stdin (started with ``keep_stdin``): it reads EOF. Idempotent."""
        raise NotImplementedError(f"{type(self).__name__} has no open stdin")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the job's descriptors. Buffered output stays readable; idempotent."""


class Transport(abc.ABC):
    """Runs POSIX shell commands (``sh -c``) on one host. A context manager; `close` is idempotent."""

    spec: HostSpec

    @abc.abstractmethod
    def start(self, command: str, *, stdin: bytes | None = None, keep_stdin: bool = False) -> Job:
        """Start ``command`` under ``sh -c``; stdin is empty (EOF) unless ``stdin`` is given, and
        stays open for `Job.send` with ``keep_stdin`` (until `Job.end_input`)."""

    @abc.abstractmethod
    def alive(self) -> bool:
        """True while commands can be started."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop jobs still running (best effort), then release the connection. Idempotent."""

    def run(self, command: str, *, timeout: float, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
        """Run to completion: ``(exit code, stdout, stderr)``; exit code ``-1`` = connection lost.

        Raises:
            CommandTimeout: not done within ``timeout`` seconds; the job is killed first and the
                output read so far is on the exception as ``.stdout`` / ``.stderr``.
        """
        job = self.start(command, stdin=stdin)
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        try:
            while True:
                o, e = job.read()
                out += o
                err += e
                rc = job.poll()
                if rc is not None:
                    o, e = job.read()
                    return rc, bytes(out + o), bytes(err + e)
                left = deadline - time.monotonic()
                if left <= 0:
                    job.kill()
                    o, e = job.read()
                    exc = CommandTimeout(
                        self.spec.name, f"command not done within {timeout:g}s: {_short(command)}"
                    )
                    exc.stdout, exc.stderr = bytes(out + o), bytes(err + e)
                    raise exc
                ready, _, _ = select.select([job], [], [], min(left, 0.1))
                if ready and not (o or e):
                    time.sleep(0.01)  # readable at EOF while the process lives on: do not spin
        finally:
            job.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def connect(spec: HostSpec) -> Transport:
    """`LocalTransport` when ``spec.hostname`` is None, else a connected, authenticated `SSHTransport`.

    Raises:
        HostUnreachable, AuthFailed, HostKeyError (all `CollectError`): the host failed, with the
            phase in the message. ConfigError: the ssh config itself is unusable.
    """
    if spec.hostname is None:
        return LocalTransport(spec)
    return SSHTransport(spec)


def _short(command: str, limit: int = 80) -> str:
    return repr(command if len(command) <= limit else command[: limit - 3] + "...")


# --------------------------------------------------------------------------- local

# Process groups of local jobs not yet closed: a second Ctrl-C leaves host threads behind, so
# `end_local_jobs` ends these from the main thread before perfkit exits (nothing it started on this
# machine outlives it), and any job a straggling thread starts after that is ended at once.
_LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()
_ENDING = False


def end_local_jobs() -> None:
    """SIGTERM every local job's process group still running, SIGKILL what is left after the grace;
    jobs started from now on are ended as they start."""
    global _ENDING
    with _LIVE_LOCK:
        _ENDING = True
        groups = list(_LIVE)
    for pgid in groups:
        _killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while any(_group_exists(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.02)
    for pgid in groups:
        if _group_exists(pgid):
            _killpg(pgid, signal.SIGKILL)


class LocalJob(Job):
    """A ``sh -c`` child in its own session/process group (so Ctrl-C reaches perfkit first).

    ``fileno()`` is the stdout pipe; stderr-only output is found by `read` on the next poll, so
    callers should select with a short timeout (``Transport.run`` uses 0.1 s).
    """

    def __init__(self, command: str, stdin: bytes | None = None, keep_stdin: bool = False):
        self.command = command
        self._proc = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.PIPE if stdin is not None or keep_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._pgid = self._proc.pid
        with _LIVE_LOCK:
            _LIVE.add(self._pgid)
            ending = _ENDING
        if ending:
            _killpg(self._pgid, signal.SIGKILL)
        self._rc: int | None = None
        self._pipes = [self._proc.stdout, self._proc.stderr]
        for pipe in self._pipes:
            os.set_blocking(pipe.fileno(), False)
        self._stdout_fd = self._proc.stdout.fileno()
        if keep_stdin:
            self.send(stdin or b"")
        elif stdin is not None:
            threading.Thread(target=self._feed, args=(stdin,), daemon=True, name="perfkit-stdin").start()

    def _feed(self, data: bytes) -> None:
        self.send(data)
        self.end_input()

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._proc.stdin.write(data)
            self._proc.stdin.flush()

    def end_input(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._proc.stdin.close()

    def fileno(self) -> int:
        return self._stdout_fd

    def read(self) -> tuple[bytes, bytes]:
        return _drain(self._proc.stdout), _drain(self._proc.stderr)

    def poll(self) -> int | None:
        if self._rc is None:
            rc = self._proc.poll()
            if rc is not None:
                self._rc = rc if rc >= 0 else 128 - rc  # killed by signal N -> 128+N, as shells say
        return self._rc

    def kill(self) -> None:
        """SIGTERM to the whole process group, up to ``KILL_GRACE_S`` to exit, then SIGKILL."""
        _killpg(self._pgid, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline:
            self.poll()
            if not _group_exists(self._pgid):
                break
            time.sleep(0.02)
        else:
            _killpg(self._pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        self.poll()

    def close(self) -> None:
        for pipe in (self._proc.stdout, self._proc.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
        self.poll()
        with _LIVE_LOCK:
            _LIVE.discard(self._pgid)


def _drain(pipe) -> bytes:
    if pipe.closed:
        return b""
    chunks = []
    while True:
        try:
            data = os.read(pipe.fileno(), _READ_CHUNK)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_exists(pgid: int) -> bool:
    """True while a live (non-zombie) process is in the group.

    Zombies count as gone: once the leader dies, its orphans are reaped by init, which on some
    machines takes a second, and waiting for that would only delay the SIGKILL decision.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.scandir("/proc")
    except OSError:
        return True  # no procfs: trust killpg
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            state, _ppid, pgrp = stat[stat.rfind(b")") + 2 :].split()[:3]
            if int(pgrp) == pgid and state != b"Z":
                return True
    return False


class LocalTransport(Transport):
    """This machine, no SSH. `close` kills jobs that are still running."""

    def __init__(self, spec: HostSpec = LOCAL):
        self.spec = spec
        self._jobs: list[LocalJob] = []
        self._closed = False

    def start(self, command: str, *, stdin: bytes | None = None, keep_stdin: bool = False) -> Job:
        if self._closed:
            raise CollectError(self.spec.name, "transport is closed")
        job = LocalJob(command, stdin, keep_stdin)
        self._jobs = [j for j in self._jobs if j.poll() is None] + [job]
        return job

    def alive(self) -> bool:
        return not self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for job in self._jobs:
            if job.poll() is None:
                job.kill()
            job.close()
        self._jobs = []


# --------------------------------------------------------------------------- ssh: settings


@dataclass(frozen=True)
class _Target:
    """A HostSpec with the ssh config applied."""

    hostname: str
    port: int
    user: str
    key_files: tuple[str, ...]
    explicit_keys: bool  # a key was named (HostSpec or IdentityFile): no ~/.ssh/id_* guessing
    use_agent: bool
    known_hosts: tuple[str, ...]  # the first one is where accept-new writes
    system_known_hosts: tuple[str, ...]
    jump: tuple[str, ...]  # ProxyJump hops, first hop first

    @property
    def addr(self) -> str:
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{host}:{self.port}"

    @property
    def key_name(self) -> str:
        """The host's name in known_hosts (``host`` on port 22, else ``[host]:port``)."""
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"


def _ssh_config(spec: HostSpec) -> paramiko.SSHConfig | None:
    path = spec.ssh_config
    if path is None:
        default = Path("~/.ssh/config").expanduser()
        if not default.is_file():
            return None
        path = str(default)
    try:
        return paramiko.SSHConfig.from_path(os.path.expanduser(path))
    except OSError as e:
        raise ConfigError(f"ssh config {path}: {e.strerror or e}") from None
    except Exception as e:  # paramiko raises assorted errors on bad lines
        raise ConfigError(f"ssh config {path}: {e}") from None


def _resolve(spec: HostSpec) -> _Target:
    cfg = _ssh_config(spec)
    try:
        opts = cfg.lookup(spec.hostname) if cfg is not None else {}
    except Exception as e:  # e.g. "Match exec" without the invoke package
        raise ConfigError(f"ssh config {spec.ssh_config or '~/.ssh/config'}: {e}") from None
    if opts.get("proxycommand", "none").lower() != "none":
        raise ConfigError(
            f"{spec.name}: ProxyCommand in the ssh config is not supported (it runs a local shell "
            "command); use ProxyJump"
        )
    hostname = opts.get("hostname") or spec.hostname
    try:
        port = spec.port or int(opts.get("port", 22))
    except ValueError:
        raise ConfigError(f"{spec.name}: bad Port {opts.get('port')!r} in the ssh config") from None
    user = spec.user or opts.get("user") or getpass.getuser()
    keys = [os.path.expanduser(spec.key_filename)] if spec.key_filename else []
    keys += [
        os.path.expanduser(k) for k in opts.get("identityfile", []) if os.path.exists(os.path.expanduser(k))
    ]
    identities_only = opts.get("identitiesonly", "no").lower() == "yes"
    if spec.known_hosts:
        known = (os.path.expanduser(spec.known_hosts),)
        system: tuple[str, ...] = ()
    else:
        known = tuple(os.path.expanduser(p) for p in opts.get("userknownhostsfile", "").split()) or (
            os.path.expanduser("~/.ssh/known_hosts"),
        )
        system = tuple(p for p in opts.get("globalknownhostsfile", "/etc/ssh/ssh_known_hosts").split())
    jump = opts.get("proxyjump", "none")
    hops = () if jump.lower() == "none" else tuple(h.strip() for h in jump.split(",") if h.strip())
    return _Target(
        hostname=hostname,
        port=port,
        user=user,
        key_files=tuple(dict.fromkeys(keys)),
        explicit_keys=bool(keys),
        use_agent=not (identities_only and keys),
        known_hosts=known,
        system_known_hosts=system,
        jump=hops,
    )


def _jump_spec(hop: str, spec: HostSpec) -> HostSpec:
    """A ProxyJump hop inherits files, timeouts and the accept-new choice, never the target's user/port."""
    text = hop[len("ssh://") :] if hop.startswith("ssh://") else hop
    return parse_host(
        text,
        key_filename=spec.key_filename,
        known_hosts=spec.known_hosts,
        ssh_config=spec.ssh_config,
        accept_new_host_key=spec.accept_new_host_key,
        connect_timeout=spec.connect_timeout,
        banner_timeout=spec.banner_timeout,
        auth_timeout=spec.auth_timeout,
        channel_timeout=spec.channel_timeout,
    )


# --------------------------------------------------------------------------- ssh: host keys


class _HostKeys:
    """known_hosts content for one connection: trusted keys (paramiko HostKeys) and @revoked blobs."""

    def __init__(self, target: _Target, trusted: paramiko.HostKeys):
        self.files = target.known_hosts
        self.revoked: set[bytes] = set()
        self.trusted = trusted
        for path in target.system_known_hosts + target.known_hosts:
            self._load(path)

    def _load(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return
        except OSError as e:
            raise ConfigError(f"known_hosts {path}: {e.strerror or e}") from None
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("@"):
                marker, _, rest = line.partition(" ")
                parts = rest.split()
                if marker == "@revoked" and len(parts) >= 3:
                    with contextlib.suppress(ValueError):
                        self.revoked.add(base64.b64decode(parts[2]))
                continue  # @cert-authority: paramiko cannot check host certificates
            try:
                entry = paramiko.hostkeys.HostKeyEntry.from_line(line)
            except Exception:  # a line paramiko cannot read (unknown key type, bad base64)
                continue
            if entry is not None:
                for name in entry.hostnames:
                    self.trusted.add(name, entry.key.get_name(), entry.key)

    def append(self, name: str, key: paramiko.PKey) -> str:
        """Append ``name keytype base64`` to the first known_hosts file (0600, dir 0700). Returns it."""
        path = self.files[0]
        line = f"{name} {key.get_name()} {key.get_base64()}\n"
        with _known_hosts_lock:
            os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = "\n" + line
                os.write(fd, line.encode("ascii"))
            finally:
                os.close(fd)
        self.trusted.add(name, key.get_name(), key)
        return path


class _UnknownHostKey(paramiko.SSHException):
    def __init__(self, key: paramiko.PKey, revoked: bool = False):
        super().__init__("unknown host key")
        self.key, self.revoked = key, revoked


class _HostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko only for a host with no known key: refuse (capturing the key) or accept-new."""

    def __init__(self, keys: _HostKeys, accept_new: bool):
        self.keys, self.accept_new = keys, accept_new
        self.added: str | None = None

    def missing_host_key(self, client, hostname, key):
        if key.asbytes() in self.keys.revoked:
            raise _UnknownHostKey(key, revoked=True)
        if not self.accept_new:
            raise _UnknownHostKey(key)
        path = self.keys.append(hostname, key)
        self.added = f"{hostname} {key.get_name()} {fingerprint(key)} (added to {path})"


def _keyscan_type(key: paramiko.PKey) -> str:
    name = key.get_name()
    if name.startswith("ecdsa-"):
        return "ecdsa"
    return {"ssh-ed25519": "ed25519", "ssh-rsa": "rsa"}.get(name, name)


def _unknown_key_message(t: _Target, key: paramiko.PKey, via: str | None) -> str:
    fp, path = fingerprint(key), t.known_hosts[0]
    port = "" if t.port == 22 else f"-p {t.port} "
    scan = f"ssh-keyscan {port}-t {_keyscan_type(key)} {shlex.quote(t.hostname)} >> {shlex.quote(path)}"
    where = f" (run on jump host {via}, then append its output to {path} here)" if via else ""
    return (
        f"unknown host key {key.get_name()} {fp}, not in {', '.join(t.known_hosts)} "
        f"(refused before login). Verify the fingerprint on the host first "
        f"(ssh-keygen -lf /etc/ssh/ssh_host_{_keyscan_type(key)}_key.pub), then trust it with: "
        f"{scan}{where}; or opt in to accept-new-host-key"
    )


# --------------------------------------------------------------------------- ssh: transport


class _TrackedSocket:
    """The socket (or jump channel) under one paramiko Transport.

    Remembers when bytes last arrived. Once ``silence_limit`` is set (after login), a read that
    finds the link silent for longer than that returns EOF, which ends the Transport cleanly: the
    watchdog's keepalives guarantee a live server sends something well within the limit.
    """

    def __init__(self, sock):
        self._sock = sock
        self.last_recv = time.monotonic()
        self.silence_limit: float | None = None
        self.eof = False  # the peer closed the link or it failed
        self.expired = False  # we ended it: silent too long

    def recv(self, n: int) -> bytes:
        try:
            data = self._sock.recv(n)
        except TimeoutError:
            if self.silence_limit is not None and time.monotonic() - self.last_recv > self.silence_limit:
                self.expired = True
                return b""
            raise
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                self.eof = True
            raise
        if not data:
            self.eof = True
        self.last_recv = time.monotonic()
        return data

    def __getattr__(self, name):
        return getattr(self._sock, name)


class SSHJob(Job):
    """One exec channel. ``fileno()`` is paramiko's channel pipe: stdout, stderr and close all wake it."""

    def __init__(self, transport: SSHTransport, chan: paramiko.Channel, command: str):
        self.command = command
        self._transport = transport
        self._chan = chan
        self._rc: int | None = None
        self._killed = False

    def fileno(self) -> int:
        return self._chan.fileno()

    def read(self) -> tuple[bytes, bytes]:
        out, err = bytearray(), bytearray()
        while self._chan.recv_ready():
            out += self._chan.recv(_READ_CHUNK)
        while self._chan.recv_stderr_ready():
            err += self._chan.recv_stderr(_READ_CHUNK)
        return bytes(out), bytes(err)

    def poll(self) -> int | None:
        if self._rc is None:
            self._rc = self._status()
        return self._rc

    def _status(self) -> int | None:
        chan = self._chan
        if not chan.exit_status_ready():  # neither an exit status nor closed
            return None if self._transport._link_ok() else LOST
        status = chan.recv_exit_status()  # ready: does not block
        if status >= 0:
            return status
        if not self._transport._link_ok():
            return LOST
        time.sleep(0.05)  # a dying Transport closes its channels just before it goes inactive
        if not self._transport._link_ok():
            return LOST
        return 143 if self._killed else 255

    def kill(self) -> None:
        """Close the channel; for a non-root login first SIGTERM (then SIGKILL) the session.

        The signal is an RFC 4254 ``signal`` request: OpenSSH's sshd delivers it to the session's
        process group, but refuses it for root logins ("session signalling requires privilege
        separation"), and a process in another group (``timeout`` makes one) is not reached. So a
        remote command can outlive ``kill()``: it must run under ``timeout`` and carry a tag for
        cleanup (reliability.md R3). Closing the channel is all a root login gets.
        """
        self._killed = True
        if (
            self._chan.exit_status_ready()
            or not self._transport._link_ok()
            or not self._transport._can_signal
        ):
            self.close()
            return
        self.signal("TERM")
        deadline = time.monotonic() + KILL_GRACE_S
        while (
            time.monotonic() < deadline and not self._chan.exit_status_ready() and self._transport._link_ok()
        ):
            time.sleep(0.02)
        if not self._chan.exit_status_ready():
            self.signal("KILL")
        self.poll()
        self.close()

    def send(self, data: bytes) -> None:
        with contextlib.suppress(Exception):
            self._chan.sendall(data)

    def end_input(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.shutdown_write()

    def signal(self, name: str) -> None:
        """Send an RFC 4254 ``signal`` request (``TERM``, ``KILL``, ``INT`` ...); best effort."""
        send = getattr(self._chan.transport, "_send_user_message", None)
        if send is None or self._chan.closed:
            return
        m = paramiko.Message()
        m.add_byte(cMSG_CHANNEL_REQUEST)
        m.add_int(self._chan.remote_chanid)
        m.add_string("signal")
        m.add_boolean(False)
        m.add_string(name)
        with contextlib.suppress(Exception):
            send(m)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.close()


class SSHTransport(Transport):
    """One authenticated SSH connection (one `paramiko.SSHClient`) used for every command on the host.

    Attributes:
        added_host_key: ``"[host]:port TYPE SHA256:... (added to FILE)"`` when ``accept_new_host_key``
            added this host's key during connect, else None (record it in the manifest).
        added_host_keys: the same for every hop (jump hosts first); empty when nothing was added.
    """

    def __init__(
        self,
        spec: HostSpec,
        *,
        _via: tuple[str, ...] | None = None,
        _depth: int = 0,
        _seen: frozenset[str] = frozenset(),
    ):
        self.spec = spec
        self.added_host_key: str | None = None
        self.added_host_keys: list[str] = []
        self._closed = False
        self._jobs: list[SSHJob] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._jump: SSHTransport | None = None
        self._client: paramiko.SSHClient | None = None
        self._target = target = _resolve(spec)
        self._can_signal = target.user != "root"  # see SSHJob.kill
        if _via is not None:  # a hop of a ProxyJump list: reached through the hops before it
            self._target = target = replace(target, jump=_via)
        if target.addr in _seen or _depth > _MAX_JUMPS:
            raise ConfigError(f"{spec.name}: ProxyJump loop or more than {_MAX_JUMPS} hops at {target.addr}")
        try:
            raw = self._open_socket(target, _depth, _seen | {target.addr})
            self._sock = _TrackedSocket(raw)
            self._login(target)
        except BaseException:
            self.close()
            raise
        self._sock.silence_limit = spec.channel_timeout
        self._watchdog = threading.Thread(target=self._watch, daemon=True, name=f"perfkit-ssh-{spec.name}")
        self._watchdog.start()

    # ---- connecting

    def _fail(self, cls: type[CollectError], what: str) -> CollectError:
        addr = self._target.addr
        return cls(self.spec.name, what if addr == self.spec.name else f"{addr}: {what}")

    def _open_socket(self, t: _Target, depth: int, seen: frozenset[str]):
        spec = self.spec
        if t.jump:
            *before, last = t.jump
            jump_spec = _jump_spec(last, spec)
            via = tuple(before) if before else None
            self._jump = SSHTransport(jump_spec, _via=via, _depth=depth + 1, _seen=seen)
            self.added_host_keys.extend(self._jump.added_host_keys)
            try:
                return self._jump._client.get_transport().open_channel(
                    "direct-tcpip",
                    dest_addr=(t.hostname, t.port),
                    src_addr=("127.0.0.1", 0),
                    timeout=spec.connect_timeout,
                )
            except paramiko.ChannelException as e:
                raise self._fail(
                    HostUnreachable, f"jump host {jump_spec.name} could not connect: {e.text} (connect phase)"
                ) from None
            except (paramiko.SSHException, OSError, EOFError) as e:
                raise self._fail(
                    HostUnreachable,
                    f"no tunnel through jump host {jump_spec.name} within {spec.connect_timeout:g}s "
                    f"(connect phase): {e or type(e).__name__}",
                ) from None
        try:
            sock = socket.create_connection((t.hostname, t.port), timeout=spec.connect_timeout)
        except socket.gaierror as e:
            raise self._fail(
                HostUnreachable, f"cannot resolve {t.hostname!r}: {e.strerror} (connect phase)"
            ) from None
        except ConnectionRefusedError:
            raise self._fail(HostUnreachable, "connection refused (connect phase)") from None
        except TimeoutError:
            raise self._fail(
                HostUnreachable, f"no TCP connection within {spec.connect_timeout:g}s (connect phase)"
            ) from None
        except OSError as e:
            raise self._fail(HostUnreachable, f"{e.strerror or e} (connect phase)") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _login(self, t: _Target) -> None:
        spec = self.spec
        client = self._client = paramiko.SSHClient()
        keys = _HostKeys(t, client.get_host_keys())
        policy = _HostKeyPolicy(keys, spec.accept_new_host_key)
        client.set_missing_host_key_policy(policy)
        auth = _KeyAuth(self, t)
        t0 = time.monotonic()
        try:
            client.connect(
                t.hostname,
                port=t.port,
                username=t.user,
                sock=self._sock,
                timeout=spec.banner_timeout + spec.connect_timeout,  # whole handshake: banner + kex
                banner_timeout=spec.banner_timeout,
                auth_timeout=spec.auth_timeout,
                channel_timeout=spec.channel_timeout,
                auth_strategy=auth,
            )
        except CollectError:
            raise
        except _UnknownHostKey as e:
            if e.revoked:
                raise self._fail(
                    HostKeyError,
                    f"host key {e.key.get_name()} {fingerprint(e.key)} is REVOKED in known_hosts",
                ) from None
            via = self._jump.spec.name if self._jump else None
            raise self._fail(HostKeyError, _unknown_key_message(t, e.key, via)) from None
        except paramiko.BadHostKeyException as e:
            raise self._fail(
                HostKeyError,
                f"host key CHANGED: the server offers {e.key.get_name()} {fingerprint(e.key)} but "
                f"{', '.join(t.known_hosts)} has {e.expected_key.get_name()} {fingerprint(e.expected_key)} "
                f"for {t.key_name}. This can be a man-in-the-middle attack, or the host was reinstalled; "
                f"refusing. If the change is expected: ssh-keygen -R {shlex.quote(t.key_name)} "
                f"-f {shlex.quote(t.known_hosts[0])}",
            ) from None
        except (paramiko.SSHException, EOFError, OSError) as e:
            raise self._handshake_error(e, time.monotonic() - t0) from None
        tr = client.get_transport()
        if tr is None or not tr.is_authenticated():
            raise self._fail(
                AuthFailed,
                "the server wants more than a public key (AuthenticationMethods with a second factor); "
                "perfkit authenticates with keys only (auth phase)",
            )
        if policy.added:
            self.added_host_key = policy.added
            self.added_host_keys.append(policy.added)

    def _handshake_error(self, e: BaseException, elapsed: float) -> CollectError:
        spec, tr = self.spec, self._client.get_transport() if self._client else None
        text = str(e) or type(e).__name__
        if tr is None or not tr.remote_version:
            if self._sock.eof:
                return self._fail(HostUnreachable, "connection closed before the SSH banner (banner phase)")
            if elapsed >= spec.banner_timeout - 0.05:
                return self._fail(
                    HostUnreachable, f"no SSH banner within {spec.banner_timeout:g}s (banner phase)"
                )
            return self._fail(HostUnreachable, f"bad SSH banner: {text[:120]!r} (banner phase)")
        if not tr.initial_kex_done:
            if self._sock.eof:
                return self._fail(HostUnreachable, "connection closed during key exchange (kex phase)")
            if "No existing session" in text:  # start_client gave up waiting
                budget = spec.banner_timeout + spec.connect_timeout
                return self._fail(HostUnreachable, f"key exchange not done within {budget:g}s (kex phase)")
            return self._fail(CollectError, f"key exchange failed: {text[:200]} (kex phase)")
        return self._fail(
            HostUnreachable, f"connection lost during authentication: {text[:200]} (auth phase)"
        )

    # ---- running

    def _link_ok(self) -> bool:
        tr = self._client.get_transport() if self._client else None
        return bool(tr and tr.is_active() and not self._sock.eof and not self._sock.expired)

    def _watch(self) -> None:
        """Keepalive with a reply (OpenSSH ServerAliveInterval): a quiet but live link answers."""
        interval = max(0.2, self.spec.channel_timeout / 3)
        while not self._stop.wait(interval):
            tr = self._client.get_transport() if self._client else None
            if tr is None or not tr.is_active():
                return
            if time.monotonic() - self._sock.last_recv >= interval:
                try:
                    # blocks until the answer (any answer) or until the Transport ends, which
                    # _TrackedSocket forces once the link has been silent for channel_timeout
                    tr.global_request("keepalive@openssh.com", wait=True)
                except Exception:
                    return

    def start(self, command: str, *, stdin: bytes | None = None, keep_stdin: bool = False) -> Job:
        """Run ``command`` under ``/bin/sh -c`` (whatever the login shell is), no PTY.

        Raises:
            HostUnreachable: the connection is lost. CollectError: sshd refused a new session
                (e.g. ``MaxSessions``, 10 by default, concurrent channels per connection).
        """
        if self._closed:
            raise CollectError(self.spec.name, "transport is closed")
        tr = self._client.get_transport()
        chan = None
        try:
            chan = tr.open_session(timeout=self.spec.channel_timeout)
            chan.exec_command("exec /bin/sh -c " + shlex.quote(command))
        except paramiko.ChannelException as e:
            raise self._fail(
                CollectError,
                f"sshd refused a new session: {e.text} (MaxSessions, 10 by default, limits concurrent "
                "commands per connection)",
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as e:
            if chan is not None:
                chan.close()
            if not self._link_ok():
                raise self._fail(HostUnreachable, "connection lost") from None
            raise self._fail(CollectError, f"cannot start command: {e or type(e).__name__}") from None
        job = SSHJob(self, chan, command)
        if keep_stdin:
            job.send(stdin or b"")
        elif stdin is None:
            chan.shutdown_write()
        else:
            threading.Thread(
                target=_feed_channel, args=(chan, stdin), daemon=True, name="perfkit-stdin"
            ).start()
        with self._lock:
            self._jobs = [j for j in self._jobs if j._rc is None] + [job]
        return job

    def alive(self) -> bool:
        return not self._closed and self._link_ok()

    def close(self) -> None:
        """TERM to commands still running (non-root logins, ~1 s in all), then close the connection.

        Closing does not stop remote commands by itself (no PTY, no SIGHUP): see `SSHJob.kill`.
        """
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with self._lock:
            jobs, self._jobs = self._jobs, []
        running = [j for j in jobs if j.poll() is None]
        if running and self._link_ok() and self._can_signal:
            for job in running:
                job._killed = True
                job.signal("TERM")
            deadline = time.monotonic() + KILL_GRACE_S
            while time.monotonic() < deadline and any(not j._chan.exit_status_ready() for j in running):
                time.sleep(0.02)
        for job in jobs:
            job.close()
        if self._client is not None:
            self._client.close()
        if self._jump is not None:
            self._jump.close()
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None and watchdog is not threading.current_thread():
            watchdog.join(timeout=2)


def _feed_channel(chan: paramiko.Channel, data: bytes) -> None:
    with contextlib.suppress(Exception):
        chan.sendall(data)
    with contextlib.suppress(Exception):
        chan.shutdown_write()


class _KeyAuth(paramiko.AuthStrategy):
    """Public keys only, in OpenSSH's order: named keys, agent keys, then ``~/.ssh/id_*``.

    Replaces SSHClient's built-in auth, which falls back to a keyboard-interactive prompt on
    stdin when a server asks for a second factor.
    """

    def __init__(self, owner: SSHTransport, target: _Target):
        super().__init__(ssh_config=None)
        self.owner, self.target = owner, target

    def _keys(self, notes: list[str]):
        t = self.target
        for path in t.key_files:
            key = self._load(path, notes, named=True)
            if key is not None:
                yield f"key {path}", key
        if t.use_agent:
            agent = None
            try:
                agent = paramiko.Agent()
                for key in agent.get_keys():
                    yield f"agent key {key.get_name()} {fingerprint(key)}", key
            except paramiko.SSHException as e:
                notes.append(f"ssh-agent unusable ({e})")
            finally:
                if agent is not None:
                    agent.close()
        if not t.explicit_keys:
            for name in ("id_rsa", "id_ecdsa", "id_ed25519"):
                path = os.path.expanduser(f"~/.ssh/{name}")
                if os.path.isfile(path):
                    key = self._load(path, notes, named=False)
                    if key is not None:
                        yield f"key {path}", key

    def _load(self, path: str, notes: list[str], *, named: bool) -> paramiko.PKey | None:
        try:
            return paramiko.PKey.from_path(path)
        except paramiko.PasswordRequiredException:
            notes.append(f"key {path} is passphrase-protected (load it into ssh-agent)")
        except TypeError as e:  # cryptography's way to say the same for new-format OpenSSH keys
            if "password" not in str(e).lower():
                notes.append(f"key file {path} unreadable (TypeError)")
            else:
                notes.append(f"key {path} is passphrase-protected (load it into ssh-agent)")
        except FileNotFoundError:
            notes.append(f"key file {path} not found")
        except OSError as e:
            notes.append(f"key file {path}: {e.strerror or e}")
        except Exception as e:
            notes.append(f"key file {path} unreadable ({type(e).__name__})")
        return None

    def authenticate(self, transport):
        owner, t = self.owner, self.target
        tried: list[str] = []
        notes: list[str] = []
        for label, key in self._keys(notes):
            try:
                transport.auth_publickey(t.user, key)
                return None  # accepted (the caller checks for a demanded second factor)
            except paramiko.BadAuthenticationType as e:
                raise owner._fail(
                    AuthFailed,
                    f"server does not accept public keys for {t.user!r} "
                    f"(allowed: {', '.join(e.allowed_types)}); perfkit uses keys only (auth phase)",
                ) from None
            except paramiko.AuthenticationException as e:
                if "timeout" in str(e).lower():
                    raise owner._fail(
                        HostUnreachable,
                        f"no answer to authentication within {owner.spec.auth_timeout:g}s (auth phase)",
                    ) from None
                tried.append(label)
            if not transport.is_active():
                break
        what = f"rejected {', '.join(tried)}" if tried else "no key to offer"
        extra = f"; {'; '.join(notes)}" if notes else ""
        raise owner._fail(AuthFailed, f"authentication failed as {t.user!r}: {what}{extra} (auth phase)")

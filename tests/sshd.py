"""Throwaway real sshd instances (and a silent listener) for transport tests.

Each `Sshd` lives in its own directory under the test's tmp dir with its own host key, client key,
authorized_keys, known_hosts and sshd_config (lab.md §3), listens on a free 127.0.0.1 port and runs
in the foreground (``sshd -D``) as our child, so it is stopped by pid, never by name.

Use from a test module::

    from tests.sshd import sshd, sshd_factory  # noqa: F401 (fixtures)

    @pytest.mark.lab
    def test_x(sshd):
        with connect(sshd.spec(banner_timeout=2)) as t: ...

The fixtures skip (with the reason) when ``/usr/sbin/sshd`` or ``ssh-keygen`` is missing or when
not running as root (sshd needs root to log users in).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import paramiko
import psutil
import pytest

from perfkit.transport import HostSpec, parse_host

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 5.0


def sshd_missing() -> str | None:
    """Why real-sshd tests cannot run here, or None."""
    if not os.path.exists(SSHD):
        return f"{SSHD} not installed (scripts/lab.sh installs openssh-server)"
    if not shutil.which("ssh-keygen"):
        return "ssh-keygen not installed (openssh-client)"
    if os.geteuid() != 0:
        return "real-sshd tests need root (sshd must switch to the login user)"
    return None


def free_port(addr: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (bind to 0, read it, close)."""
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def keygen(path: Path, *, passphrase: str = "", key_type: str = "ed25519") -> Path:
    """A new key pair at ``path`` / ``path.pub``; returns ``path``."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, "-N", passphrase, "-C", "perfkit-test", "-f", str(path)],
        check=True,
        timeout=30,
    )
    return path


def public_line(key_path: Path) -> str:
    """``keytype base64`` of a key pair's .pub file (no comment)."""
    return " ".join(Path(f"{key_path}.pub").read_text().split()[:2])


class Sshd:
    """One sshd on ``addr``:``port``, configured and started by `start`.

    Attributes:
        dir: its directory; host_key, client_key (authorized), known_hosts (``[addr]:port`` line),
        config, log: paths in it. port, pid: once started.
    """

    def __init__(self, directory: Path, *, addr: str = "127.0.0.1", extra_config: tuple[str, ...] = ()):
        self.dir = directory
        self.addr = addr
        self.extra_config = extra_config
        self.dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        self.host_key = keygen(self.dir / "host_ed25519")
        self.client_key = keygen(self.dir / "client_ed25519")
        self.authorized_keys = self.dir / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.authorized_keys.chmod(0o644)
        self.known_hosts = self.dir / "known_hosts"
        self.config = self.dir / "sshd_config"
        self.log = self.dir / "sshd.log"
        self.port = 0
        self._proc: subprocess.Popen | None = None

    # ---- lifecycle

    def _write_config(self) -> None:
        lines = [
            f"Port {self.port}",
            f"ListenAddress {self.addr}",
            f"HostKey {self.host_key}",
            f"PidFile {self.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",  # the throwaway dir sits under the world-writable temp dir
            "LogLevel VERBOSE",
            *self.extra_config,
        ]
        self.config.write_text("\n".join(lines) + "\n")

    def start(self) -> Sshd:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir (lab.md §3)
        for _attempt in range(3):  # the free port can be taken between probe and bind: retry
            self.port = free_port(self.addr)
            self._write_config()
            self.known_hosts.write_text(f"{self.host_key_name} {public_line(self.host_key)}\n")
            self._proc = subprocess.Popen(
                [SSHD, "-D", "-f", str(self.config), "-E", str(self.log)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            if self._wait_listening():
                return self
            self.stop()
        raise RuntimeError(f"sshd did not listen on {self.addr}:{self.port}: {self.log_text()[-2000:]}")

    def _wait_listening(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if any(
                c.status == psutil.CONN_LISTEN and c.laddr.port == self.port
                for c in psutil.Process(self._proc.pid).net_connections(kind="tcp")
            ):
                return True
            time.sleep(0.02)
        return False

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def stop(self) -> None:
        """Stop the listener and the sshd processes serving connections.

        The users' commands are not killed here: a login shell still in its startup files (root's
        ``.bashrc`` runs ``pyenv rehash``, which holds a lock file) must not die by SIGKILL. They end
        as they would when sshd dies; tests check their own tagged commands are gone.
        """
        if self._proc is None:
            return
        procs = self._connection_sshds()
        for p in procs:
            _signal(p, signal.SIGKILL)
        _wait_dead(procs, 5)  # while the listener lives it reaps its children at once
        if self._proc.poll() is None:
            self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._proc = None

    # ---- fault injection

    def _tree(self) -> list[psutil.Process]:
        if self._proc is None or self._proc.poll() is not None:
            return []
        try:
            return psutil.Process(self._proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def connection_pids(self) -> list[int]:
        """The per-connection sshd processes (``pgrep -P <listener pid>``)."""
        if self._proc is None:
            return []
        try:
            return [p.pid for p in psutil.Process(self._proc.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def _connection_sshds(self) -> list[psutil.Process]:
        out = []
        for p in self._tree():
            try:
                if p.name() == "sshd":
                    out.append(p)
            except psutil.NoSuchProcess:
                pass
        return out

    def kill_connections(self) -> int:
        """SIGKILL the sshd processes serving connections (as if sshd died); the listener stays.

        The users' commands are left alone: they find out the way they would in real life (a write
        to the dead pipe). Returns how many processes were killed.
        """
        procs = self._connection_sshds()
        for p in procs:
            _signal(p, signal.SIGKILL)
        _wait_dead(procs, 5)
        return len(procs)

    def freeze_connections(self) -> int:
        """SIGSTOP the sshd processes serving connections: TCP stays up, nothing answers (a hung host)."""
        procs = self._connection_sshds()
        for p in procs:
            _signal(p, signal.SIGSTOP)
        return len(procs)

    # ---- client side

    @property
    def host_key_name(self) -> str:
        return f"[{self.addr}]:{self.port}"

    def known_hosts_line(self) -> str:
        return f"{self.host_key_name} {public_line(self.host_key)}"

    def spec(self, user: str = "root", **kw) -> HostSpec:
        """A HostSpec for this daemon with its client key and known_hosts (override with ``kw``)."""
        kw.setdefault("key_filename", str(self.client_key))
        kw.setdefault("known_hosts", str(self.known_hosts))
        return parse_host(f"{user}@{self.addr}:{self.port}", **kw)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _wait_dead(procs: list[psutil.Process], timeout: float) -> None:
    """Until every process is gone or a zombie (whoever reaps it), bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
        if not alive:
            return
        time.sleep(0.02)


def _signal(p: psutil.Process, sig: int) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        p.send_signal(sig)


class Blackhole:
    """A TCP listener that accepts connections and never says a word (no SSH banner)."""

    def __init__(self, addr: str = "127.0.0.1"):
        self._sock = socket.socket()
        self._sock.bind((addr, 0))
        self._sock.listen(8)
        self._sock.settimeout(0.1)
        self.addr, self.port = self._sock.getsockname()
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="blackhole")
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self.accepted:
            conn.close()
        self._sock.close()

    def __enter__(self) -> Blackhole:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class StalledAuthServer:
    """A paramiko SSH server that finishes the handshake, then never answers authentication."""

    def __init__(self, host_key: Path, addr: str = "127.0.0.1"):
        self.key = paramiko.Ed25519Key.from_private_key_file(str(host_key))
        self._sock = socket.socket()
        self._sock.bind((addr, 0))
        self._sock.listen(4)
        self._sock.settimeout(0.1)
        self.addr, self.port = self._sock.getsockname()
        self._stop = threading.Event()
        self._transports: list[paramiko.Transport] = []
        self._thread = threading.Thread(target=self._serve, daemon=True, name="stalled-auth")
        self._thread.start()

    def known_hosts_line(self) -> str:
        return f"[{self.addr}]:{self.port} {self.key.get_name()} {self.key.get_base64()}"

    def _serve(self) -> None:
        stop = self._stop

        class Stall(paramiko.ServerInterface):
            def get_allowed_auths(self, username):
                return "publickey"

            def check_auth_publickey(self, username, key):
                stop.wait(30)
                return paramiko.AUTH_FAILED

        while not stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = paramiko.Transport(conn)
            t.add_server_key(self.key)
            t.start_server(event=threading.Event(), server=Stall())
            self._transports.append(t)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for t in self._transports:
            t.close()
        self._sock.close()

    def __enter__(self) -> StalledAuthServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class SshdFactory:
    """Starts `Sshd` instances under one directory and stops them all at `stop_all`.

    The directory is a fresh 0755 one under /tmp (removed at `stop_all`), not pytest's 0700
    tmp_path: sshd reads authorized_keys as the login user, who may not be root.
    """

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="perfkit-sshd-"))
        self.root.chmod(0o755)
        self.made: list[Sshd] = []

    def __call__(self, **kw) -> Sshd:
        sshd = Sshd(self.root / f"sshd{len(self.made)}", **kw)
        self.made.append(sshd)
        return sshd.start()

    def stop_all(self) -> None:
        for sshd in self.made:
            sshd.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def sshd_factory():
    """Make real sshd instances (``sshd_factory(extra_config=(...))``); all stopped at teardown."""
    reason = sshd_missing()
    if reason:
        pytest.skip(reason)
    factory = SshdFactory()
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def sshd(sshd_factory: SshdFactory) -> Sshd:
    """One real sshd on a free 127.0.0.1 port, root may log in with ``sshd.client_key``."""
    return sshd_factory()

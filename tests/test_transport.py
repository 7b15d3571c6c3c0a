"""perfkit.transport: local jobs, and SSH against real throwaway sshd instances (reliability.md S1-S6, R3).

The SSH tests (marked ``lab``) start their own sshd on free 127.0.0.1 ports (tests/sshd.py) and
touch no other network. HOME points at an empty tmp dir and SSH_AUTH_SOCK is unset, so the
machine's own ~/.ssh and agent cannot change an outcome. Every test that starts remote or local
processes tags them and checks that none is left.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from perfkit.errors import (
    AuthFailed,
    CollectError,
    CommandTimeout,
    ConfigError,
    HostKeyError,
    HostUnreachable,
)
from perfkit.transport import (
    LOCAL,
    LocalTransport,
    SSHTransport,
    connect,
    parse_host,
)
from tests import sshd as sshd_helpers
from tests.sshd import Blackhole, StalledAuthServer, free_port, keygen, public_line

sshd_factory = sshd_helpers.sshd_factory  # fixtures: real throwaway sshd instances
sshd = sshd_helpers.sshd

FAST = {"connect_timeout": 2.0, "banner_timeout": 2.0, "auth_timeout": 2.0, "channel_timeout": 3.0}


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture
def tag():
    """A unique string for command lines; fails the test if a process carrying it outlives it."""
    value = f"perfkit-test-{uuid.uuid4().hex[:12]}"
    yield value
    left = wait_gone(value, 5)
    assert not left, f"processes left running: {left}"


def leftovers(pattern: str) -> list[str]:
    res = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True, timeout=10)
    return res.stdout.splitlines()


def wait_gone(pattern: str, within: float) -> list[str]:
    deadline = time.monotonic() + within
    while True:
        left = leftovers(pattern)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def wait_present(pattern: str, within: float) -> list[str]:
    deadline = time.monotonic() + within
    while True:
        found = leftovers(pattern)
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def collect_until(job, marker: bytes, until: float) -> bytes:
    """Read stdout until it contains ``marker`` (returns all of it) or ``until`` passes (b"")."""
    out = b""
    while time.monotonic() < until:
        out += job.read()[0]
        if marker in out:
            return out
        select.select([job], [], [], 0.1)
    return b""


def collect(job, until: float) -> tuple[int | None, bytes, bytes]:
    """Read a job until it ends or ``until`` (monotonic) passes: (poll, stdout, stderr)."""
    out, err = b"", b""
    while time.monotonic() < until:
        o, e = job.read()
        out, err = out + o, err + e
        rc = job.poll()
        if rc is not None:
            o, e = job.read()
            return rc, out + o, err + e
        select.select([job], [], [], 0.1)
    return job.poll(), out, err


# --------------------------------------------------------------------------- parse_host


@pytest.mark.parametrize(
    ("text", "user", "host", "port", "name"),
    [
        ("db1", None, "db1", None, "db1"),
        ("root@10.0.0.1", "root", "10.0.0.1", None, "10.0.0.1"),
        ("admin@db2:2222", "admin", "db2", 2222, "db2:2222"),
        ("[::1]:2222", None, "::1", 2222, "[::1]:2222"),
        ("[::1]", None, "::1", None, "::1"),
        ("root@[fe80::1]:22", "root", "fe80::1", 22, "[fe80::1]:22"),
        ("::1", None, "::1", None, "::1"),
        ("db-1.example.com", None, "db-1.example.com", None, "db-1.example.com"),
        ("svc_user@tikv_3", "svc_user", "tikv_3", None, "tikv_3"),
    ],
)
def test_parse_host_accepts(text, user, host, port, name):
    spec = parse_host(text)
    assert (spec.user, spec.hostname, spec.port, spec.name) == (user, host, port, name)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "db 1",
        "a;rm -rf /",
        "$(id)",
        "`id`",
        "db1|nc",
        "db1&",
        "db1\n",
        "a'b",
        'a"b',
        "-oProxyCommand=x",
        "-db1",
        "@db1",
        "root@",
        "a@b@c",
        "db1:",
        "db1:0",
        "db1:65536",
        "db1:22x",
        ":22",
        "[::1",
        "[db1]:22",
        "[::1]22",
        "1:2:3:zz",
        "a..b",
        "x" * 300,
    ],
)
def test_parse_host_refuses(text):
    with pytest.raises(ConfigError):
        parse_host(text)


def test_parse_host_defaults_and_overrides():
    spec = parse_host("db1", user="ops", port=2200, key_filename="/k", accept_new_host_key=True)
    assert (spec.user, spec.port, spec.key_filename, spec.accept_new_host_key) == ("ops", 2200, "/k", True)
    spec = parse_host("admin@db1:22", user="ops", port=2200)
    assert (spec.user, spec.port) == ("admin", 22)
    assert parse_host("db1", name="primary").name == "primary"
    with pytest.raises(ConfigError, match="unknown host option"):
        parse_host("db1", pasword="x")


def test_connect_local_is_local_transport():
    with connect(LOCAL) as t:
        assert isinstance(t, LocalTransport)
        assert t.alive()
    assert not t.alive()
    t.close()  # idempotent


# --------------------------------------------------------------------------- local transport


def test_local_run_exit_code_and_streams():
    with LocalTransport() as t:
        assert t.run("echo hi; echo err >&2; exit 3", timeout=10) == (3, b"hi\n", b"err\n")
        assert t.run("cat", timeout=10, stdin=b"in put") == (0, b"in put", b"")
        assert t.run("cat", timeout=10) == (0, b"", b"")  # stdin is empty, never the terminal
        assert t.run("kill -TERM $$", timeout=10)[0] == 143  # signal N -> 128+N, never negative


def test_local_vmstat_read_incrementally():
    with LocalTransport() as t:
        job = t.start("LC_ALL=C vmstat 1 3")
        t0 = time.monotonic()
        first = None
        out = b""
        while job.poll() is None and time.monotonic() - t0 < 10:
            o, _ = job.read()
            if o and first is None:
                first = time.monotonic() - t0
            out += o
            select.select([job], [], [], 0.1)
        out += job.read()[0]
        assert job.poll() == 0
        assert first is not None and first < 1.5, "output arrived only at the end"
        assert len(out.splitlines()) == 5  # two header lines, three samples


def test_local_run_timeout_kills_the_group(tag):
    with LocalTransport() as t:
        t0 = time.monotonic()
        with pytest.raises(CommandTimeout, match="within 0.5s") as exc:
            t.run(f"echo started; sh -c 'sleep 100' {tag}; :", timeout=0.5)
        assert time.monotonic() - t0 < 3
        assert exc.value.stdout == b"started\n"
        assert not wait_gone(tag, 2)


def test_local_kill_kills_whole_process_group(tag):
    sleep = f"sleep 100.{uuid.uuid4().int % 10**9}"  # unique: other tests may sleep 100 too
    with LocalTransport() as t:
        job = t.start(f"sh -c '{sleep} & {sleep} & wait' {tag}; :")
        deadline = time.monotonic() + 5
        while len(leftovers(f"^{sleep}")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(leftovers(f"^{sleep}")) == 2
        t0 = time.monotonic()
        job.kill()
        assert time.monotonic() - t0 < 3
        assert job.poll() in (143, 137)
        assert not wait_gone(sleep, 2)
        assert not wait_gone(tag, 2)


def test_local_close_kills_running_jobs(tag):
    t = LocalTransport()
    t.start(f"sh -c 'sleep 100' {tag}; :")
    time.sleep(0.2)
    assert leftovers(tag)
    t.close()
    assert not wait_gone(tag, 3)


# --------------------------------------------------------------------------- ssh: commands


@pytest.mark.lab
def test_ssh_run_exit_code_and_streams(sshd):
    with connect(sshd.spec(**FAST)) as t:
        assert isinstance(t, SSHTransport)
        assert t.added_host_key is None
        assert t.run("echo hi; echo err >&2; exit 3", timeout=10) == (3, b"hi\n", b"err\n")
        assert t.run("cat", timeout=10, stdin=b"in put") == (0, b"in put", b"")
        assert t.run("cat", timeout=10) == (0, b"", b"")
        assert t.run("echo $0", timeout=10) == (0, b"/bin/sh\n", b"")  # sh -c, whatever the login shell
        assert t.alive()
    assert not t.alive()
    t.close()


@pytest.mark.lab
def test_ssh_vmstat_read_incrementally(sshd):
    with connect(sshd.spec(**FAST)) as t:
        job = t.start("LC_ALL=C vmstat 1 3")
        t0 = time.monotonic()
        first = None
        out = b""
        while job.poll() is None and time.monotonic() - t0 < 10:
            o, _ = job.read()
            if o and first is None:
                first = time.monotonic() - t0
            out += o
            select.select([job], [], [], 1.0)  # the channel's fd wakes us when data arrives
        out += job.read()[0]
        assert job.poll() == 0
        assert first is not None and first < 1.8, "output arrived only at the end"
        assert len(out.splitlines()) == 5


@pytest.mark.lab
def test_ssh_run_timeout_raises_bounded(sshd, tag):
    with connect(sshd.spec(**FAST)) as t:
        t0 = time.monotonic()
        with pytest.raises(CommandTimeout, match="within 1.5s") as exc:
            t.run(f"echo started; timeout -k 1 2 sh -c 'sleep 100' {tag}", timeout=1.5)
        assert time.monotonic() - t0 < 2.5
        assert exc.value.stdout == b"started\n"
        assert t.run("echo still usable", timeout=10) == (0, b"still usable\n", b"")
    assert not wait_gone(tag, 4)  # root login: no signal, the remote timeout ends it


@pytest.fixture
def login_user() -> str:
    """A non-root account sshd lets in with a key (lab.md §3: user perfkit, `usermod -p '*'`)."""
    import pwd

    try:
        pwd.getpwnam("perfkit")
    except KeyError:
        pytest.skip("no 'perfkit' user: scripts/lab.sh creates it (needed for sshd signal requests)")
    return "perfkit"


@pytest.mark.lab
def test_ssh_kill_signals_the_session_for_non_root(sshd, tag, login_user):
    with connect(sshd.spec(user=login_user, **FAST)) as t:
        job = t.start(f"echo up; sh -c 'sleep 300' {tag}; :")
        assert collect_until(job, b"up\n", time.monotonic() + 10)
        t0 = time.monotonic()
        job.kill()
        assert time.monotonic() - t0 < 2
        assert job.poll() == 143
        assert not wait_gone(tag, 2)
        job = t.start(f"echo up; sh -c 'sleep 300' {tag}; :")
        assert collect_until(job, b"up\n", time.monotonic() + 10)
    assert not wait_gone(tag, 2)  # close() stops what still runs


@pytest.mark.lab
def test_ssh_remote_timeout_ends_command_after_close(sshd, tag):
    """R3: a command under `timeout` ends on its own after close() (root logins get no signal)."""
    t = connect(sshd.spec(**FAST))
    job = t.start(f"echo up; timeout -k 1 2 sh -c 'sleep 300' {tag}")
    assert collect_until(job, b"up\n", time.monotonic() + 10)
    assert wait_present(tag, 2)
    t0 = time.monotonic()
    t.close()
    assert not wait_gone(tag, 4), "the remote timeout did not end the command"
    assert time.monotonic() - t0 < 4.5


@pytest.mark.lab
def test_ssh_remote_timeout_ends_command_after_connection_loss(sshd, tag):
    """R3 with the connection gone: nothing can be signalled, `timeout` still ends the command."""
    with connect(sshd.spec(**FAST)) as t:
        job = t.start(f"echo up; timeout -k 1 2 sh -c 'sleep 300' {tag}")
        assert collect_until(job, b"up\n", time.monotonic() + 10)
        assert wait_present(tag, 2)
        assert sshd.kill_connections() >= 1
        rc, _, _ = collect(job, time.monotonic() + 3)
        assert rc == -1
        assert not wait_gone(tag, 4)


@pytest.mark.lab
def test_ssh_connection_killed_mid_capture(sshd, tag):
    """S6: sshd dies mid-window: poll() says -1 (lost, never success) and the bytes read stay."""
    with connect(sshd.spec(**FAST)) as t:
        job = t.start(f"sh -c 'LC_ALL=C vmstat 1 20; :' {tag}")
        out, _ = b"", b""
        deadline = time.monotonic() + 5
        while out.count(b"\n") < 4 and time.monotonic() < deadline:
            out += job.read()[0]
            select.select([job], [], [], 0.5)
        assert out.count(b"\n") >= 4
        t0 = time.monotonic()
        assert sshd.kill_connections() >= 1
        rc, more, _ = collect(job, t0 + FAST["channel_timeout"] + 2)
        assert rc == -1
        assert time.monotonic() - t0 < FAST["channel_timeout"] + 2
        assert (out + more).startswith(out) and out.count(b"\n") >= 4
        assert not t.alive()
        with pytest.raises(HostUnreachable, match="connection lost"):
            t.start("true")
    assert not wait_gone(tag, 3)  # vmstat died of SIGPIPE on its next line


@pytest.mark.lab
def test_ssh_hung_server_detected_by_keepalive(sshd, tag):
    """S6, the hard case: TCP stays up but nothing answers; the keepalive watchdog ends it."""
    spec = sshd.spec(**{**FAST, "channel_timeout": 2.0})
    with connect(spec) as t:
        job = t.start(f"sh -c 'LC_ALL=C vmstat 1 20; :' {tag}")
        out = b""
        deadline = time.monotonic() + 5
        while out.count(b"\n") < 3 and time.monotonic() < deadline:
            out += job.read()[0]
            select.select([job], [], [], 0.5)
        t0 = time.monotonic()
        assert sshd.freeze_connections() >= 1
        rc, _, _ = collect(job, t0 + 10)
        elapsed = time.monotonic() - t0
        assert rc == -1
        assert elapsed < spec.channel_timeout + 2, f"loss noticed after {elapsed:.1f}s"
        assert not t.alive()
    sshd.kill_connections()
    assert not wait_gone(tag, 3)


@pytest.mark.lab
def test_ssh_quiet_connection_stays_up(sshd):
    """The keepalive watchdog must not call a live but silent connection lost."""
    with connect(sshd.spec(**{**FAST, "channel_timeout": 1.0})) as t:
        assert t.run("sleep 2.5; echo done", timeout=10) == (0, b"done\n", b"")
        time.sleep(2)
        assert t.alive()
        assert t.run("echo ok", timeout=10) == (0, b"ok\n", b"")


@pytest.mark.lab
def test_ssh_exit_codes_never_fake_success(sshd):
    with connect(sshd.spec(**FAST)) as t:
        assert t.run("exit 127", timeout=10)[0] == 127
        assert t.run("kill -9 $$", timeout=10)[0] == 255  # died of a signal: ssh's 255, not -1 or 0


@pytest.mark.lab
def test_ssh_max_sessions_is_a_clear_error(sshd, tag):
    with connect(sshd.spec(**FAST)) as t:
        jobs = [t.start(f"echo up; timeout 2 sh -c 'sleep 100' {tag}") for _ in range(10)]
        with pytest.raises(CollectError, match="MaxSessions"):
            t.start("true")
        for job in jobs:  # never drop a session while its login shell is still starting up
            assert collect_until(job, b"up\n", time.monotonic() + 10)
        for job in jobs:
            job.kill()
        assert not wait_gone(tag, 4)  # root: sshd frees a session when its command has ended
        assert t.run("echo ok", timeout=10) == (0, b"ok\n", b"")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_local_jobs_release_descriptors():
    with LocalTransport() as t:
        t.run("true", timeout=10)
        before = _open_fds()
        for _ in range(50):
            t.run("echo x; echo y >&2", timeout=10)
        assert _open_fds() <= before


@pytest.mark.lab
def test_ssh_jobs_release_descriptors(sshd):
    with connect(sshd.spec(**FAST)) as t:
        t.run("true", timeout=10)
        before = _open_fds()
        for _ in range(8):
            t.run("echo x; echo y >&2", timeout=10)
        job = t.start("echo z")
        select.select([job], [], [], 5)
        job.close()
        assert _open_fds() <= before
    assert _open_fds() < before


# --------------------------------------------------------------------------- ssh: host keys


def _ssh_keygen_fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)], capture_output=True, text=True)
    return out.stdout.split()[1]


@pytest.mark.lab
def test_unknown_host_key_refused_with_fingerprint_and_fix(sshd, tmp_path):
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    spec = sshd.spec(known_hosts=str(known), **FAST)
    with pytest.raises(HostKeyError) as exc:
        connect(spec)
    msg = str(exc.value)
    fp = _ssh_keygen_fingerprint(Path(f"{sshd.host_key}.pub"))
    assert fp.startswith("SHA256:") and fp in msg
    assert "ssh-keyscan" in msg and str(sshd.port) in msg and "127.0.0.1" in msg and "ssh-ed25519" in msg
    assert "Verify the fingerprint" in msg
    assert known.read_text() == ""
    assert "Accepted publickey" not in sshd.log_text()  # refused before authentication
    # the command in the message is the one that works: run it, then connect
    cmd = msg.split("trust it with: ")[1].split(";")[0]
    subprocess.run(["sh", "-c", cmd], check=True, timeout=10, capture_output=True)
    with connect(spec) as t:
        assert t.run("echo ok", timeout=10) == (0, b"ok\n", b"")


@pytest.mark.lab
def test_missing_known_hosts_file_is_unknown_host(sshd, tmp_path):
    with pytest.raises(HostKeyError, match="unknown host key"):
        connect(sshd.spec(known_hosts=str(tmp_path / "nope" / "known_hosts"), **FAST))
    assert not (tmp_path / "nope").exists()


@pytest.mark.lab
def test_accept_new_host_key_adds_then_plain_connect_works(sshd, _isolated_home):
    spec = sshd.spec(known_hosts=None, accept_new_host_key=True, **FAST)  # default ~/.ssh/known_hosts
    fp = _ssh_keygen_fingerprint(Path(f"{sshd.host_key}.pub"))
    with connect(spec) as t:
        assert t.added_host_key is not None and fp in t.added_host_key
        assert t.added_host_keys == [t.added_host_key]
        assert t.run("echo ok", timeout=10)[0] == 0
    known = _isolated_home / ".ssh" / "known_hosts"
    assert known.read_text() == sshd.known_hosts_line() + "\n"
    assert oct(known.stat().st_mode & 0o777) == "0o600"
    assert oct(known.parent.stat().st_mode & 0o777) == "0o700"
    plain = sshd.spec(known_hosts=None, **FAST)
    with connect(plain) as t:
        assert t.added_host_key is None
        assert t.run("echo ok", timeout=10)[0] == 0
    assert known.read_text().count("\n") == 1


@pytest.mark.lab
def test_changed_host_key_refused_even_with_accept_new(sshd, tmp_path):
    other = keygen(tmp_path / "other_host_key")
    known = tmp_path / "known_hosts"
    before = f"# a comment that must survive\n{sshd.host_key_name} {public_line(other)}\n"
    known.write_text(before)
    for accept in (False, True):
        with pytest.raises(HostKeyError) as exc:
            connect(sshd.spec(known_hosts=str(known), accept_new_host_key=accept, **FAST))
        msg = str(exc.value)
        assert "CHANGED" in msg
        assert _ssh_keygen_fingerprint(Path(f"{sshd.host_key}.pub")) in msg
        assert _ssh_keygen_fingerprint(Path(f"{other}.pub")) in msg
        assert "ssh-keygen -R" in msg
    assert known.read_text() == before
    assert "Accepted publickey" not in sshd.log_text()


# --------------------------------------------------------------------------- ssh: unreachable, auth


@pytest.mark.lab
def test_refused_port_fails_fast_naming_the_port():
    port = free_port()
    spec = parse_host(f"root@127.0.0.1:{port}", **FAST)
    t0 = time.monotonic()
    with pytest.raises(HostUnreachable) as exc:
        connect(spec)
    assert time.monotonic() - t0 < 1.0
    assert f"127.0.0.1:{port}" in str(exc.value) and "refused" in str(exc.value)
    assert "connect phase" in str(exc.value)


@pytest.mark.lab
def test_blackhole_listener_times_out_in_banner_phase():
    with Blackhole() as hole:
        spec = parse_host(f"root@127.0.0.1:{hole.port}", **{**FAST, "banner_timeout": 1.5})
        t0 = time.monotonic()
        with pytest.raises(HostUnreachable) as exc:
            connect(spec)
        elapsed = time.monotonic() - t0
        assert len(hole.accepted) == 1
    assert 1.4 < elapsed < 1.5 + 1.5
    assert "banner phase" in str(exc.value) and "no SSH banner within 1.5s" in str(exc.value)
    assert f"127.0.0.1:{hole.port}" in str(exc.value)


@pytest.mark.lab
def test_stalled_auth_times_out_in_auth_phase(tmp_path):
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen not installed (openssh-client)")
    with StalledAuthServer(keygen(tmp_path / "host_key")) as server:
        known = tmp_path / "known_hosts"
        known.write_text(server.known_hosts_line() + "\n")
        spec = parse_host(
            f"root@127.0.0.1:{server.port}",
            known_hosts=str(known),
            key_filename=str(keygen(tmp_path / "client_key")),
            **{**FAST, "auth_timeout": 1.0},
        )
        t0 = time.monotonic()
        with pytest.raises(HostUnreachable, match=r"authentication within 1s \(auth phase\)"):
            connect(spec)
        assert time.monotonic() - t0 < 1.0 + 1.5


@pytest.mark.lab
def test_wrong_client_key_is_auth_failed_without_prompt(sshd, tmp_path):
    wrong = keygen(tmp_path / "wrong_key")
    t0 = time.monotonic()
    with pytest.raises(AuthFailed) as exc:
        connect(sshd.spec(key_filename=str(wrong), **FAST))
    assert time.monotonic() - t0 < 5
    assert "auth phase" in str(exc.value) and str(wrong) in str(exc.value)
    assert "PRIVATE KEY" not in str(exc.value)


@pytest.mark.lab
def test_passphrase_key_fails_clearly_without_prompt_or_secret(sshd, tmp_path):
    secret = "canary-" + uuid.uuid4().hex
    locked = keygen(tmp_path / "locked_key", passphrase=secret)
    sshd.authorized_keys.write_text(Path(f"{locked}.pub").read_text())
    t0 = time.monotonic()
    with pytest.raises(AuthFailed) as exc:
        connect(sshd.spec(key_filename=str(locked), **FAST))
    assert time.monotonic() - t0 < 5
    assert "passphrase-protected" in str(exc.value) and secret not in str(exc.value)


@pytest.mark.lab
def test_no_key_at_all_is_auth_failed(sshd):
    t0 = time.monotonic()
    with pytest.raises(AuthFailed, match="no key to offer"):
        connect(sshd.spec(key_filename=None, **FAST))  # empty HOME, no agent
    assert time.monotonic() - t0 < 5


# --------------------------------------------------------------------------- ssh: config, jump


def _write_config(path: Path, blocks: dict[str, dict[str, object]]) -> Path:
    text = ""
    for alias, opts in blocks.items():
        text += f"Host {alias}\n" + "".join(f"    {k} {v}\n" for k, v in opts.items())
    path.write_text(text)
    return path


@pytest.mark.lab
def test_ssh_config_alias(sshd, tmp_path):
    cfg = _write_config(
        tmp_path / "ssh_config",
        {
            "db-alias": {
                "HostName": "127.0.0.1",
                "Port": sshd.port,
                "User": "root",
                "IdentityFile": sshd.client_key,
                "UserKnownHostsFile": sshd.known_hosts,
            }
        },
    )
    spec = parse_host("db-alias", ssh_config=str(cfg), **FAST)
    assert spec.name == "db-alias" and spec.port is None and spec.user is None
    with connect(spec) as t:
        assert t.run("id -un", timeout=10) == (0, b"root\n", b"")


@pytest.mark.lab
def test_default_ssh_config_is_read(sshd, _isolated_home):
    (_isolated_home / ".ssh").mkdir(mode=0o700)
    _write_config(
        _isolated_home / ".ssh" / "config",
        {"db-alias": {"HostName": "127.0.0.1", "Port": sshd.port, "User": "root"}},
    )
    spec = parse_host(
        "db-alias", key_filename=str(sshd.client_key), known_hosts=str(sshd.known_hosts), **FAST
    )
    with connect(spec) as t:
        assert t.run("true", timeout=10)[0] == 0


@pytest.mark.lab
def test_proxycommand_is_refused(tmp_path):
    cfg = _write_config(tmp_path / "ssh_config", {"db": {"ProxyCommand": "nc %h %p"}})
    with pytest.raises(ConfigError, match="ProxyCommand"):
        connect(parse_host("db", ssh_config=str(cfg), **FAST))


@pytest.mark.lab
def test_proxyjump_through_second_sshd(sshd_factory, tmp_path):
    jump, target = sshd_factory(), sshd_factory()
    known = tmp_path / "known_hosts"
    known.write_text(jump.known_hosts_line() + "\n" + target.known_hosts_line() + "\n")
    for d in (jump, target):  # one client key for both
        d.authorized_keys.write_text(Path(f"{jump.client_key}.pub").read_text())
    cfg = _write_config(
        tmp_path / "ssh_config",
        {
            "target": {"HostName": "127.0.0.1", "Port": target.port, "User": "root", "ProxyJump": "bastion"},
            "bastion": {"HostName": "127.0.0.1", "Port": jump.port, "User": "root"},
        },
    )
    spec = parse_host(
        "target", ssh_config=str(cfg), known_hosts=str(known), key_filename=str(jump.client_key), **FAST
    )
    assert not jump.connection_pids()
    with connect(spec) as t:
        assert t.run("echo via jump", timeout=10) == (0, b"via jump\n", b"")
        assert jump.connection_pids(), "no connection went through the jump host"
        assert target.connection_pids()
    assert "Starting session" not in jump.log_text()  # the jump host only forwarded, ran nothing


@pytest.mark.lab
def test_proxyjump_unknown_target_key_is_refused(sshd_factory, tmp_path):
    jump, target = sshd_factory(), sshd_factory()
    target.authorized_keys.write_text(Path(f"{jump.client_key}.pub").read_text())
    known = tmp_path / "known_hosts"
    known.write_text(jump.known_hosts_line() + "\n")  # the jump is known, the target is not
    cfg = _write_config(
        tmp_path / "ssh_config",
        {
            "target": {
                "HostName": "127.0.0.1",
                "Port": target.port,
                "ProxyJump": f"root@127.0.0.1:{jump.port}",
            }
        },
    )
    spec = parse_host(
        "root@target", ssh_config=str(cfg), known_hosts=str(known), key_filename=str(jump.client_key), **FAST
    )
    with pytest.raises(HostKeyError, match="jump host") as exc:
        connect(spec)
    assert f"-p {target.port}" in str(exc.value)
    assert "Accepted publickey" in jump.log_text() and "Accepted publickey" not in target.log_text()


@pytest.mark.lab
def test_proxyjump_hop_dies_mid_capture(sshd_factory, tmp_path, tag):
    """S6 through a jump host: the hop's sshd dies, the target's jobs poll -1 in bounded time."""
    jump, target = sshd_factory(), sshd_factory()
    target.authorized_keys.write_text(Path(f"{jump.client_key}.pub").read_text())
    known = tmp_path / "known_hosts"
    known.write_text(jump.known_hosts_line() + "\n" + target.known_hosts_line() + "\n")
    cfg = _write_config(
        tmp_path / "ssh_config",
        {"target": {"HostName": "127.0.0.1", "Port": target.port, "ProxyJump": f"127.0.0.1:{jump.port}"}},
    )
    spec = parse_host(
        "root@target", ssh_config=str(cfg), known_hosts=str(known), key_filename=str(jump.client_key), **FAST
    )
    with connect(spec) as t:
        job = t.start(f"sh -c 'LC_ALL=C vmstat 1 20; :' {tag}")
        out = b""
        deadline = time.monotonic() + 5
        while out.count(b"\n") < 3 and time.monotonic() < deadline:
            out += job.read()[0]
            select.select([job], [], [], 0.5)
        t0 = time.monotonic()
        assert jump.kill_connections() >= 1
        rc, _, _ = collect(job, t0 + FAST["channel_timeout"] + 2)
        assert rc == -1
        assert not t.alive()
    target.kill_connections()  # the target's sshd still waits on its dead tunnel
    assert not wait_gone(tag, 3)

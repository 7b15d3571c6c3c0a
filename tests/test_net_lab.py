"""net.listen-overflow and net.retransmits on conditions made for real, each against its control.

Everything happens inside network namespaces this test creates and always deletes (a `finally`),
so the host's own interfaces, qdiscs, firewall and sysctls are never touched and its TCP counters
(other tests' traffic) do not leak in: /proc/net/snmp and /proc/net/netstat are per namespace, and
`perfkit collect --local` runs inside the namespace (`ip netns exec`), so its nstat capture reads
that namespace's counters.

- listen overflow: one namespace, a Python server on its loopback that calls `listen(1)` and accepts
  a connection every 0.1 s, 32 client threads connecting in a loop (5 s connect timeout); control:
  `listen(4096)` and accepting at once, the same clients.
- retransmits: namespaces A and B joined by a veth pair; B drops 5 % of what arrives from A
  (nftables `numgen random` in B's prerouting hook: a loss on the wire as A sees it — a drop in A's
  own output hook is not one, TCP just sends the segment later, and this kernel has no sch_netem);
  8 client threads in A do 200-byte request/response round trips with an echo server in B;
  control: the same without the drop rule.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.analyzers import net
from perfkit.collectors import captures
from perfkit.parsers import netstat_s
from perfkit.pipeline import analyze_path

from .conftest import collect_local

pytestmark = pytest.mark.lab

PORT = 5001
WINDOW_S = 6

# A server that accepts one connection every DELAY seconds (the accept queue fills behind it), or at
# once; it closes each connection as soon as it has it.
LISTENER = f"""
import socket, sys, time
backlog, delay = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", {PORT})); s.listen(backlog)
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.close()
    if delay: time.sleep(delay)
"""

# Client threads that connect, close with a reset (SO_LINGER 0: no TIME_WAIT to exhaust the ports)
# and connect again, until killed.
STORM = f"""
import socket, struct, threading, time
def run():
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", {PORT}), timeout=5)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); c.close()
        except OSError:
            pass
        time.sleep(0.02)
for _ in range(32):
    threading.Thread(target=run, daemon=True).start()
time.sleep(3600)
"""

ECHO = f"""
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.231.0.2", {PORT})); s.listen(64)
print("listening", flush=True)
def serve(c):
    with c:
        while (d := c.recv(4096)):
            c.sendall(d)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

PINGPONG = f"""
import socket, threading, time
def run():
    s = socket.create_connection(("10.231.0.2", {PORT}))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg = b"q" * 200
    while True:
        s.sendall(msg); got = 0
        while got < len(msg):
            got += len(s.recv(4096))
for _ in range(8):
    threading.Thread(target=run, daemon=True).start()
time.sleep(3600)
"""

LOSS_RULES = """
table inet perfkit_loss {
  chain in {
    type filter hook prerouting priority -300; policy accept;
    iifname "%s" numgen random mod 100 < %d counter drop
  }
}
"""


def _need() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    for tool in ("ip", "nstat", "nft"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed")


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


def _namespaces() -> list[str]:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout


@contextlib.contextmanager
def namespaces(pair: bool, loss_pct: int = 0) -> Iterator[tuple[str, str]]:
    """Namespace A (and B joined to it by a veth pair, 10.231.0.1/30 - .2, B dropping `loss_pct` %
    of what arrives from A); both deleted however the test ends (their veths, rules go with them)."""
    tag = f"pk{os.getpid() % 100000}"
    a, b = f"{tag}a", f"{tag}b"
    made: list[str] = []
    try:
        for ns in (a, b) if pair else (a,):
            _run("ip", "netns", "add", ns)
            made.append(ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        if pair:
            _run("ip", "link", "add", a, "netns", a, "type", "veth", "peer", "name", b, "netns", b)
            _run("ip", "-n", a, "addr", "add", "10.231.0.1/30", "dev", a)
            _run("ip", "-n", b, "addr", "add", "10.231.0.2/30", "dev", b)
            _run("ip", "-n", a, "link", "set", a, "up")
            _run("ip", "-n", b, "link", "set", b, "up")
            if loss_pct:
                subprocess.run(
                    ["ip", "netns", "exec", b, "nft", "-f", "-"],
                    input=LOSS_RULES % (b, loss_pct),
                    text=True,
                    check=True,
                    capture_output=True,
                    timeout=30,
                )
        yield a, b
    finally:
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        left = [ns for ns in made if re.search(rf"^{ns}\b", _namespaces(), re.M)]
        assert not left, f"namespaces left behind: {left}"


@contextlib.contextmanager
def process_in(ns: str, code: str, *args: str, ready: bool = False) -> Iterator[subprocess.Popen[str]]:
    """A Python process inside `ns`, killed (its whole session) when the block ends."""
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        if ready:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.communicate(timeout=10)  # reaps it and closes its pipes


def collect_in(ns: str, out: Path) -> Path:
    """`perfkit collect --local --profile minimal` run inside `ns`; the archive's path."""
    return collect_local(out / "run.tar.gz", WINDOW_S, "minimal", prefix=("ip", "netns", "exec", ns))


def raw_counters(archive: Path) -> dict[str, list[float]]:
    """Each counter's values, block by block, read straight from the archive's nstat.out."""
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/nstat.out"))
        text = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    values: dict[str, list[float]] = {}
    for name, value in re.findall(r"^(\w+)\s+(\d+)\s+\S+$", text, re.M):
        values.setdefault(name, []).append(float(value))
    assert text.startswith("TS ") and text.count("#kernel") == len(values["TcpOutSegs"]) >= WINDOW_S
    return values


def delta(values: dict[str, list[float]], name: str) -> float:
    return values[name][-1] - values[name][0]


def _findings(archive: Path, rule: str) -> list:
    return [f for f in analyze_path(archive).findings if f.rule == rule]


def listen_run(tmp: Path, backlog: int, delay: float) -> Path:
    with (
        namespaces(pair=False) as (a, _),
        process_in(a, LISTENER, str(backlog), str(delay), ready=True),
        process_in(a, STORM),
    ):
        time.sleep(1)
        return collect_in(a, tmp)


def loss_run(tmp: Path, loss_pct: int) -> Path:
    with (
        namespaces(pair=True, loss_pct=loss_pct) as (a, b),
        process_in(b, ECHO, ready=True),
        process_in(a, PINGPONG),
    ):
        time.sleep(1)
        return collect_in(a, tmp)


def test_tiny_backlog_overflows_the_listen_queue(tmp_path: Path) -> None:
    _need()
    archive = listen_run(tmp_path, backlog=1, delay=0.1)
    raw = raw_counters(archive)
    [f] = _findings(archive, "net.listen-overflow")
    ev = f.evidence
    # no sweep: the capture's whole span is the window, so its drops are the last block's counter
    # less the first's
    assert ev["drops"] == pytest.approx(delta(raw, "TcpExtListenDrops"))
    assert ev["drops"] > 20 and ev["drops_s"] >= 1 and f.severity == "critical"
    assert ev["syn_retrans_s"] > 0  # the clients (here, the same namespace) sent their SYNs again
    assert ev["somaxconn"] == 4096 and ev["first_window"] == "whole capture"
    assert "accept queue" in f.summary and "1 s, then 3 s" in f.summary
    print(f.summary)


def test_control_backlog_that_keeps_up_is_silent(tmp_path: Path) -> None:
    _need()
    archive = listen_run(tmp_path, backlog=4096, delay=0)
    raw = raw_counters(archive)
    assert delta(raw, "TcpExtListenDrops") == 0 and delta(raw, "TcpPassiveOpens") > 1000
    assert _findings(archive, "net.listen-overflow") == []


def test_five_percent_loss_is_retransmits(tmp_path: Path) -> None:
    _need()
    archive = loss_run(tmp_path, loss_pct=5)
    raw = raw_counters(archive)
    [f] = _findings(archive, "net.retransmits")
    ev = f.evidence
    share = delta(raw, "TcpRetransSegs") / delta(raw, "TcpOutSegs")
    assert ev["retrans_share"] == pytest.approx(share)
    assert 0.02 <= ev["retrans_share"] <= 0.2  # 5 % of A's packets lost on the way to B
    assert ev["out_segs_s"] >= 100 and ev["timeouts_s"] > 0
    print(f.summary)


def test_control_without_loss_is_silent(tmp_path: Path) -> None:
    _need()
    archive = loss_run(tmp_path, loss_pct=0)
    raw = raw_counters(archive)
    assert delta(raw, "TcpOutSegs") > 1000 and delta(raw, "TcpRetransSegs") / delta(raw, "TcpOutSegs") < 0.01
    assert _findings(archive, "net.retransmits") == []


def test_the_nstat_capture_runs_here() -> None:
    if not shutil.which("nstat"):
        pytest.skip("nstat not installed")
    spec = next(s for s in captures.DEFAULT if s.id == "nstat")
    assert spec.kind == "netstat_s" and spec in captures.MINIMAL
    history = Path(os.environ.get("NSTAT_HISTORY", f"/tmp/.nstat.u{os.getuid()}"))
    before = history.stat().st_mtime_ns if history.exists() else None
    out = subprocess.run(
        ["sh", "-c", spec.render(interval=1, window=2, workdir="/tmp")],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
    ).stdout
    df = netstat_s.parse(out)
    assert df.attrs["snapshots"] == 3 and df["timestamp"].notna().all() and df.attrs["skipped"].count == 0
    assert set(net.COUNTERS) <= set(df["counter"])  # every counter the rules read, zeros included (-z)
    assert df.groupby("sample")["per_s"].count().tolist()[1:] == [24, 24]  # a rate per counter
    assert len(out) < 3 * 1600  # bytes a sample: the named counters only
    # -s: a user's own `nstat` history is not moved on by the capture
    assert (history.stat().st_mtime_ns if history.exists() else None) == before

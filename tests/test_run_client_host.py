"""`perfkit run --client-host`: the load generator on another host over a real sshd on loopback.

The "client host" is this machine reached through its own sshd (tests/sshd.py), so sysbench runs in
an SSH session and reaches the lab MariaDB at 127.0.0.1, as it would from a load-generator box.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from perfkit.collectors._load import LoadHost
from perfkit.collectors.load_sysbench import SysbenchRunner, Workload
from perfkit.collectors.mysql_sampler import DbTarget
from perfkit.transport import connect

from .conftest import PERFKIT, lab_password
from .sshd import free_port, sshd, sshd_factory  # noqa: F401 (fixtures)

pytestmark = pytest.mark.lab


def temp_dirs() -> set[str]:
    return set(glob.glob("/tmp/perfkit-load.*"))


def test_sysbench_on_a_client_host_is_captured_there(sshd, lab_mariadb: Path, tmp_path: Path) -> None:  # noqa: F811
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    password = lab_password(lab_mariadb)
    before = temp_dirs()
    out = tmp_path / "sweep"
    client = f"root@127.0.0.1:{sshd.port}"
    args = ["run", "sysbench", "--client-host", client, "-i", str(sshd.client_key)]
    args += ["--known-hosts", str(sshd.known_hosts), "--mysql-user", "perfkit", "--tables", "2"]
    args += ["--table-size", "10000", "--threads", "1,2", "--time", "3", "--profile", "minimal"]
    args += ["--no-report", "-o", str(out)]
    proc = subprocess.run(
        [*PERFKIT, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": password},
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = json.loads((out / "manifest.json").read_text())
    host = f"127.0.0.1:{sshd.port}"
    loads = [r for r in m["captures"] if r["kind"] == "sysbench"]
    assert [r["host"] for r in loads] == [host, host] and m["sweep"]["plan"]["load_host"] == host
    assert all(r["status"] == "ok" for r in loads)
    text = (out / loads[1]["path"]).read_text()
    assert "Number of threads: 2" in text and "transactions:" in text
    # the load host is captured, this machine is not (--collect-local is off with a client host)
    assert (out / "hosts" / host / "t0002" / "vmstat.out").read_bytes().startswith(b"--procs--")
    assert not (out / "hosts" / "localhost").exists()
    assert [h["name"] for h in m["inventory"]] == [host]
    assert temp_dirs() == before  # the 0600 config file's directory is gone from the client host
    leaked = [p for p in out.rglob("*") if p.is_file() and password.encode() in p.read_bytes()]
    assert leaked == [] and password not in proc.stdout + proc.stderr


def test_stopping_a_remote_run_signals_sysbench_even_for_root(
    sshd,  # noqa: F811
    lab_mariadb: Path,
    tmp_path: Path,
) -> None:
    """sshd refuses signal requests for root logins: perfkit signals the pid with `kill` instead."""
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    db = DbTarget(user="perfkit", password=lab_password(lab_mariadb))
    stop = threading.Event()
    host = LoadHost(connect(sshd.spec()), secrets=(db.password,))
    with SysbenchRunner(db, Workload("oltp_read_only", tables=2, table_size=10000), host=host) as runner:
        runner.preflight()
        threading.Timer(2.0, stop.set).start()
        t0 = time.monotonic()
        res = runner.run(2, 60, tmp_path / "sysbench.out", stop=stop)
        took = time.monotonic() - t0
    assert res.status == "interrupted" and res.interrupted and res.exit_code is not None
    assert took < 30  # not the 60 s run
    assert "[ 1s ]" in (tmp_path / "sysbench.out").read_text()  # what it printed before is kept
    left = subprocess.run(
        ["pgrep", "-f", "sysbench oltp_read_only.*--time=60"], capture_output=True, text=True
    )
    assert left.stdout == ""


def time_wait_sockets(n: int) -> int:
    """`n` connections to a fresh loopback listener, each closed by the client first: the client's end
    of each sits in TIME_WAIT for 60 s with the listener's port as its remote port. Returns that port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(n)
        port = server.getsockname()[1]
        for _ in range(n):
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            conn, _addr = server.accept()
            client.close()  # the active close: the client's socket goes to TIME_WAIT
            conn.recv(1)  # EOF
            conn.close()
    return port


def test_time_wait_is_counted_on_the_load_host_here_and_over_ssh(sshd) -> None:  # noqa: F811
    """The cool-down between steps watches the load host's TIME_WAIT sockets to the database port."""
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    port = time_wait_sockets(25)
    low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    with LoadHost() as here, LoadHost(connect(sshd.spec())) as there:
        # the "client host" is this machine through its sshd: both must see the same 25 sockets
        assert here.time_wait_to(port) == 25 and there.time_wait_to(port) == 25
        assert here.ephemeral_ports() == there.ephemeral_ports() == high - low + 1
        assert here.time_wait_to(free_port()) == 0


SELECT_1 = """-- a self-contained custom workload: one `SELECT 1` per event
function thread_init() drv = sysbench.sql.driver(); con = drv:connect() end
function event() con:query("SELECT 1") end
function thread_done() con:disconnect() end
"""


def test_a_custom_lua_script_travels_to_the_client_host(sshd, lab_mariadb: Path, tmp_path: Path) -> None:  # noqa: F811
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    script = tmp_path / "mine" / "select 1.lua"  # a space: the copy's name must be safe on the host
    script.parent.mkdir()
    script.write_text(SELECT_1)
    db = DbTarget(user="perfkit", password=lab_password(lab_mariadb))
    before = temp_dirs()
    host = LoadHost(connect(sshd.spec()), secrets=(db.password,))
    with SysbenchRunner(db, Workload(script=script), host=host) as runner:
        runner.preflight()
        assert runner.test.startswith("/tmp/perfkit-load.") and runner.test.endswith("/select_1.lua")
        res = runner.run(2, 2, tmp_path / "sysbench.out")
    assert res.status == "ok" and res.summary["tps"] > 0, res
    assert f"sysbench {runner.test} " in res.command  # the copy ran, not the controller's path
    assert temp_dirs() == before  # the copy went with the runner's private dir

"""go-ycsb against TiKV (`perfkit run ycsb --db tikv --pd ...`), as seed 001 runs it.

No TiKV or PD can be installed on this machine kind (neither is in a registry it reaches), so what is
tested for real is everything up to the cluster: the command and properties perfkit builds, the PD
preflight against a closed port, and the real go-ycsb binary failing cleanly when PD does not speak
gRPC (a stand-in answers PD's HTTP version endpoint only, to get past the preflight).
"""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
from pathlib import Path

import pytest

from perfkit.collectors.load_goycsb import GoYcsbRunner, YcsbWorkload, check_pd
from perfkit.errors import PerfkitError

from .conftest import LAB_DIR, PERFKIT
from .sshd import free_port


class _PdVersion(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b'{"version": "v4.0.0-standin"}' if self.path == "/pd/api/v1/version" else b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def pd_http():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PdVersion)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_properties_and_command_for_tikv() -> None:
    with GoYcsbRunner(None, YcsbWorkload("c", recordcount=500), pd="10.0.0.1:2379,10.0.0.2:2379") as r:
        props = dict(line.split("=", 1) for line in r._property_text().splitlines())
        r._props = "/tmp/perfkit-load.x/ycsb.properties"
        argv = r.argv("run", threads=16)
    assert props["tikv.pd"] == "10.0.0.1:2379,10.0.0.2:2379" and props["tikv.type"] == "raw"
    assert props["readproportion"] == "1" and props["recordcount"] == "500"
    assert not any(k.startswith("mysql.") for k in props)
    assert argv[1:4] == ["run", "tikv", "-P"] and argv[argv.index("--threads") + 1] == "16"


@pytest.mark.parametrize("pd", ["10.0.0.1", "h:2379;rm -rf /", "$(id):1", ""])
def test_hostile_or_malformed_pd_endpoints_are_refused(pd: str) -> None:
    with pytest.raises(ValueError, match="PD endpoints"):
        GoYcsbRunner(None, YcsbWorkload(), pd=pd)


def test_pd_preflight_names_every_endpoint_that_did_not_answer() -> None:
    a, b = free_port(), free_port()
    with pytest.raises(PerfkitError) as info:
        check_pd(f"127.0.0.1:{a},127.0.0.1:{b}", timeout=2)
    assert f"127.0.0.1:{a}" in str(info.value) and f"127.0.0.1:{b}" in str(info.value)
    assert "refused" in str(info.value).lower()


def test_pd_preflight_reads_the_version(pd_http: str) -> None:
    assert check_pd(pd_http) == "v4.0.0-standin"


def test_cli_refuses_an_unreachable_pd_before_anything_runs(tmp_path: Path) -> None:
    binary = LAB_DIR / "bin" / "go-ycsb"
    if not os.access(binary, os.X_OK):
        pytest.skip(f"{binary} missing: scripts/go_tools.sh builds it")
    out = tmp_path / "never"
    args = ["run", "ycsb", "--db", "tikv", "--pd", f"127.0.0.1:{free_port()}", "--bin", str(binary)]
    proc = subprocess.run(
        [*PERFKIT, *args, "--threads", "1", "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and "PD does not answer" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.slow
def test_real_go_ycsb_fails_cleanly_when_pd_does_not_speak_grpc(pd_http: str, tmp_path: Path) -> None:
    binary = LAB_DIR / "bin" / "go-ycsb"
    if not os.access(binary, os.X_OK):
        pytest.skip(f"{binary} missing: scripts/go_tools.sh builds it")
    with GoYcsbRunner(None, YcsbWorkload(recordcount=100), binary=str(binary), pd=pd_http) as runner:
        runner.preflight()
        res = runner.run(1, 5, tmp_path / "go-ycsb.out")
    # go-ycsb retries PD for ever and ignores SIGTERM meanwhile: `timeout -k` kills it; the step says why
    assert res.status == "failed" and res.exit_code == 137, res
    assert "no totals printed" in res.reason and "failed to get cluster id" in res.reason

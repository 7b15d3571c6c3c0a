"""`perfkit collect` over a real sshd on loopback: a fleet where some hosts fail, and a link that dies.

Every test ends with no capture process of its run left on the "host" (`pgrep -f perfkit-<run id>`).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import captures, session
from perfkit.transport import parse_host

from .sshd import Blackhole, free_port, keygen, public_line, sshd, sshd_factory  # noqa: F401 (fixtures)
from .terminal import under_pty

pytestmark = pytest.mark.lab

SPECS = tuple(s for s in captures.DEFAULT if s.id in ("vmstat", "uname"))


def wait_no_leftovers(run_id: str, within: float) -> str:
    end = time.monotonic() + within
    while True:
        left = subprocess.run(["pgrep", "-af", session.tag(run_id)], capture_output=True, text=True).stdout
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.2)


def quick(spec, name: str):
    return dataclasses.replace(spec, name=name, connect_timeout=2, banner_timeout=2, auth_timeout=2)


def test_fleet_with_failing_hosts_is_partial_and_keeps_the_rest(sshd_factory, tmp_path: Path) -> None:  # noqa: F811
    a, b, stranger, impostor = sshd_factory(), sshd_factory(), sshd_factory(), sshd_factory()
    for d in (a, b):
        d.known_hosts.write_text(d.known_hosts_line() + "\n")
    stranger.known_hosts.write_text("")  # its key is unknown: must be refused, not trusted
    # known_hosts remembers another key for this address: a changed key fails the host, always
    impostor.known_hosts.write_text(f"{impostor.host_key_name} {public_line(a.host_key)}\n")
    wrong_key = keygen(tmp_path / "not_authorized")
    # On the good hosts, beside vmstat and uname: a tool that is not installed and one that hangs.
    ghost = captures.CaptureSpec("ghost", "none", "no-such-tool-xyz 1", "no-such-tool-xyz")
    hang = captures.CaptureSpec("hang", "none", "sleep 300", "sleep")
    with Blackhole() as hole:
        hosts = [
            quick(a.spec(), "db1"),
            quick(b.spec(), "db2"),
            quick(
                parse_host(
                    f"root@127.0.0.1:{free_port()}",
                    key_filename=str(a.client_key),
                    known_hosts=str(a.known_hosts),
                ),
                "refused",
            ),
            quick(
                parse_host(
                    f"root@127.0.0.1:{hole.port}",
                    key_filename=str(a.client_key),
                    known_hosts=str(a.known_hosts),
                ),
                "blackhole",
            ),
            quick(stranger.spec(), "stranger"),
            quick(impostor.spec(), "impostor"),
            quick(b.spec(key_filename=str(wrong_key)), "badkey"),
        ]
        started = time.monotonic()
        res = session.collect(
            hosts,
            tmp_path / "fleet.tar.gz",
            session.Options(window=2, specs=(*SPECS, ghost, hang), run_id="fleet", grace=1),
        )
        took = time.monotonic() - started
    out = {h.host: h for h in res.hosts}
    assert res.manifest["status"] == "partial" and res.exit_code == session.EXIT_PARTIAL
    assert out["db1"].status == "partial" and out["db2"].status == "partial"  # the hung capture
    assert out["refused"].status == "failed" and "refused" in out["refused"].reason.lower()
    assert out["blackhole"].status == "failed" and "banner" in out["blackhole"].reason
    assert out["stranger"].status == "failed" and "SHA256:" in out["stranger"].reason
    assert out["impostor"].status == "failed" and "CHANGED" in out["impostor"].reason
    assert out["badkey"].status == "failed" and str(wrong_key) in out["badkey"].reason
    recs = {(r["host"], r["id"]): r for r in res.manifest["captures"]}
    for host in ("db1", "db2"):
        assert recs[(host, "vmstat")]["status"] == "ok" and recs[(host, "uname")]["status"] == "ok"
        ghost_rec, hang_rec = recs[(host, "ghost")], recs[(host, "hang")]
        assert ghost_rec["status"] == "unavailable" and "not installed" in ghost_rec["reason"]
        assert hang_rec["status"] == "timed_out" and hang_rec["timed_out"] and hang_rec["exit_code"] == 124
    assert took < 15  # failures cost their timeouts, in parallel with the good hosts' window
    with open_archive(res.path) as archive:
        assert archive.problems == []
        for host in ("db1", "db2"):
            vm = (archive.root / "hosts" / host / "vmstat.out").read_text()
            # 2 headers, the since-boot line and one sample per second of the 2 s window
            assert vm.startswith("--procs--") and len(vm.splitlines()) == 5
    assert wait_no_leftovers("fleet", 5) == ""


def test_link_killed_mid_window_keeps_what_arrived(sshd, tmp_path: Path) -> None:  # noqa: F811
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    spec = dataclasses.replace(quick(sshd.spec(), "db1"), channel_timeout=3)
    opts = session.Options(window=6, specs=SPECS[:1], run_id="cut", grace=1)
    killer = threading.Timer(2.5, sshd.kill_connections)
    killer.start()
    res = session.collect([spec], tmp_path / "run", opts)
    killer.join()
    rec = res.manifest["captures"][0]
    assert rec["status"] == "lost" and rec["truncated"] and rec["exit_code"] == -1
    kept = (tmp_path / "run" / "hosts" / "db1" / "vmstat.out").read_text()
    assert kept.startswith("--procs--") and 3 <= len(kept.splitlines()) < 8
    assert rec["bytes"] == len(kept.encode())
    assert res.hosts[0].status == "partial" and res.exit_code == session.EXIT_PARTIAL
    # The remote `timeout` (window + grace) ends what the dead link left behind.
    assert wait_no_leftovers("cut", opts.window + opts.grace + session.KILL_AFTER_S + 2) == ""


def test_full_default_profile_over_one_connection(sshd, tmp_path: Path) -> None:  # noqa: F811
    # 22 captures, 8 of them through the whole window: more than sshd's MaxSessions (10) at once
    # unless the runner takes the phases in turn and caps the channels in flight.
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    res = session.collect(
        [quick(sshd.spec(), "db1")],
        tmp_path / "run",
        session.Options(window=2, specs=captures.DEFAULT, run_id="full"),
    )
    bad = {r["id"]: (r["status"], r["reason"]) for r in res.manifest["captures"] if r["status"] != "ok"}
    assert bad == {} and res.exit_code == 0
    assert wait_no_leftovers("full", 5) == ""


def test_too_many_window_captures_are_refused_before_anything_runs() -> None:
    many = tuple(captures.CaptureSpec(f"v{i}", "vmstat", "vmstat 1 {count}", "vmstat") for i in range(11))
    with pytest.raises(Exception, match="at most 10"):
        session.Options(window=1, specs=many)


def test_ctrl_c_during_an_ssh_collection_stops_the_remote_captures(sshd, tmp_path: Path) -> None:  # noqa: F811
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    out = tmp_path / "run.tar.gz"
    args = ["collect", "--hosts", f"root@127.0.0.1:{sshd.port}", "-i", str(sshd.client_key)]
    args += ["--known-hosts", str(sshd.known_hosts), "-d", "30", "--profile", "minimal", "-o", str(out)]
    code, text, took = under_pty(args, ctrl_c_at=(4.0,))
    assert code == session.EXIT_INTERRUPTED, text
    assert took < 15  # not the 30 s window
    with open_archive(out) as archive:
        m = archive.manifest
        assert m["status"] == "interrupted" and archive.problems == []
        vm = next(r for r in m["captures"] if r["id"] == "vmstat")
        assert vm["host"] == f"127.0.0.1:{sshd.port}" and vm["status"] == "interrupted" and vm["truncated"]
        kept = (archive.root / vm["path"]).read_bytes()
        assert kept.startswith(b"--procs--") and vm["bytes"] == len(kept)
    # perfkit closed the channels: sshd ends the session and the remote captures with it, well
    # before their own `timeout` (window + grace) would.
    assert wait_no_leftovers(m["run_id"], 5) == ""


def test_a_silent_capture_cut_by_ctrl_c_is_swept_at_the_end(sshd, tmp_path: Path) -> None:  # noqa: F811
    # A capture that writes nothing (like `perf record -o` or `sar -o`) never feels its channel close:
    # without the end-of-run sweep it would live on until its `timeout` (window + grace).
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    silent = captures.CaptureSpec("silent", "none", "sleep {window}", "sleep")
    opts = session.Options(window=60, specs=(silent,), run_id="swept")
    ctrl_c = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    ctrl_c.start()
    res = session.collect([quick(sshd.spec(), "db1")], tmp_path / "run", opts)
    ctrl_c.join()
    assert res.manifest["status"] == "interrupted"
    assert res.hosts[0].leftovers_killed == {"start": 0, "end": 1}
    assert wait_no_leftovers("swept", 2) == ""


def test_two_names_for_one_machine_keep_their_own_work_dirs(sshd, tmp_path: Path) -> None:  # noqa: F811
    # `--hosts h1,h2` where both are this one sshd (two ssh_config aliases, one IP under two TiUP
    # roles): one host's clean-up must not remove the work dir the other still reads. The end
    # snapshot lets the first host through at once and holds the second, so the first has cleaned
    # up before the second reads its file, every time.
    sshd.known_hosts.write_text(sshd.known_hosts_line() + "\n")
    first = tmp_path / "first"  # the hosts run on this machine: a directory only one mkdir creates
    mark = captures.CaptureSpec("mark", "none", "echo {window} > {workdir}/mark; sleep {window}", "sleep")
    read = f"mkdir {first} 2>/dev/null || sleep 2; cat {{workdir}}/mark"
    readback = captures.CaptureSpec("readback", "none", read, "cat", phase="end")
    hosts = [quick(sshd.spec(), "alias1"), quick(sshd.spec(), "alias2")]
    res = session.collect(
        hosts, tmp_path / "run", session.Options(window=2, specs=(mark, readback), run_id="alias")
    )
    assert res.manifest["status"] == "complete", res.manifest["reason"]
    assert {(r["host"], r["id"]): r["status"] for r in res.manifest["captures"]} == {
        (h, c): "ok" for h in ("alias1", "alias2") for c in ("mark", "readback")
    }
    for host in ("alias1", "alias2"):
        assert (tmp_path / "run" / "hosts" / host / "readback.out").read_text() == "2\n"
    assert wait_no_leftovers("alias", 5) == ""
    assert list(Path("/tmp").glob(f"{session.tag('alias')}*")) == []

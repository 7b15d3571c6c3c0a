"""Two host entries that are one machine (issue 19: `127.0.0.1` and `localhost`, ssh_config aliases,
one IP under several TiUP roles): each keeps its own work dir and its own captures to the end.

Before each entry had its own work dir, both used `/tmp/perfkit-<run id>` and the first one's
clean-up removed it while the other still worked in it ("can't cd to /tmp/perfkit-…"); before the
end-of-run sweep told entries apart, one entry giving up killed the other's running captures
(locally all of them hang off perfkit's Python).
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import time
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import captures, session
from perfkit.errors import ConfigError
from perfkit.transport import LOCAL, connect, parse_host

from .conftest import need_tool
from .sshd import sshd, sshd_factory  # noqa: F401 (fixtures)


def wait_no_leftovers(run_id: str, within: float) -> str:
    end = time.monotonic() + within
    while True:
        left = subprocess.run(["pgrep", "-af", session.tag(run_id)], capture_output=True, text=True).stdout
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.2)


def _by_id(*ids: str) -> tuple[captures.CaptureSpec, ...]:
    specs = {s.id: s for s in captures.DEFAULT}
    return tuple(specs[i] for i in ids)


@pytest.mark.lab
def test_127_0_0_1_and_localhost_in_one_run_both_collect_completely(sshd, tmp_path: Path) -> None:  # noqa: F811
    for tool in ("sar", "sadf", "vmstat"):
        need_tool(tool)
    # one sshd, reached under two names: two connections, two host entries, one machine
    known = tmp_path / "known_hosts"
    key = sshd.known_hosts_line().split(" ", 1)[1]
    known.write_text(f"[127.0.0.1]:{sshd.port} {key}\n[localhost]:{sshd.port} {key}\n")
    hosts = [
        parse_host(f"root@{name}:{sshd.port}", key_filename=str(sshd.client_key), known_hosts=str(known))
        for name in ("127.0.0.1", "localhost")
    ]
    # The real captures that keep files in the work dir (sar's sa.bin read back by sadf at the end,
    # the thread sampler's PSI side file), and a first end snapshot that lets one host through at
    # once and holds the other 3 s: the first host has cleaned up before the second reads its
    # files, every time.
    first = tmp_path / "first"
    hold = captures.CaptureSpec(
        "hold", "none", f"mkdir {first} 2>/dev/null || sleep 3; echo held", "mkdir", phase="end"
    )
    specs = (
        *_by_id("vmstat", "sar", "threads", "uname"),
        hold,
        *_by_id("sar-cpu", "sar-net", "sar-tcp", "sar-binary", "psi"),
    )
    out = tmp_path / "run.tar.gz"
    res = session.collect(hosts, out, session.Options(window=3, specs=specs, run_id="aliases", sampler=False))
    assert res.manifest["status"] == "complete", res.manifest["reason"]
    names = [h.name for h in hosts]
    assert names == [f"127.0.0.1:{sshd.port}", f"localhost:{sshd.port}"]
    with open_archive(out) as archive:
        assert archive.problems == []
        recs = {(r["host"], r["id"]): r for r in archive.manifest["captures"]}
        assert set(recs) == {(h, s.id) for h in names for s in specs}
        for (host, cid), r in recs.items():
            assert r["status"] == "ok" and r["exit_code"] == 0, (host, cid, r["reason"])
            data = (archive.root / r["path"]).read_bytes()
            assert data and len(data) == r["bytes"], (host, cid)
            assert hashlib.sha256(data).hexdigest() == r["sha256"], (host, cid)
        for host in names:
            assert (archive.root / recs[(host, "sar-cpu")]["path"]).read_text().startswith("# hostname;")
    assert [(h.status, h.leftovers_killed) for h in res.hosts] == [("ok", {"start": 0, "end": 0})] * 2
    assert wait_no_leftovers("aliases", 5) == ""
    assert list(Path("/tmp").glob(f"{session.tag('aliases')}*")) == []


class _WindowStartFails:
    """A local transport on which starting a window capture fails (as a bug or the archive side
    would), so the host's run ends there and its clean-up sweeps this entry's leftovers."""

    def __init__(self, tr):
        self.tr = tr

    def __getattr__(self, name: str):
        return getattr(self.tr, name)

    def __enter__(self) -> _WindowStartFails:
        self.tr.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self.tr.__exit__(*exc_info)

    def start(self, command: str, **kw):
        if command.startswith("cd "):  # a window capture's wrapper; the control shell is `exec sh -s`
            raise RuntimeError("cannot start a capture here")
        return self.tr.start(command, **kw)


@pytest.mark.lab
def test_one_entrys_sweep_never_kills_another_entrys_captures(tmp_path: Path, monkeypatch) -> None:
    # Two entries for this machine, both local: every capture hangs off this Python, so the end sweep
    # must tell them apart by work dir. "late" connects 2.5 s after "steady" (past the gate's slack,
    # so steady's window is already open), then fails to start its capture and sweeps its own while
    # steady's capture still runs: steady's must live to the end of its window.
    monkeypatch.setattr(session, "GATE_SLACK_S", 0.5)
    silent = captures.CaptureSpec("silent", "none", "sleep {window}; echo done", "sleep")
    steady, late = dataclasses.replace(LOCAL, name="steady"), dataclasses.replace(LOCAL, name="late")

    def connector(spec):
        if spec.name == "late":
            time.sleep(2.5)
            return _WindowStartFails(connect(spec))
        return connect(spec)

    opts = session.Options(window=6, specs=(silent,), run_id="entries", sampler=False)
    res = session.collect([steady, late], tmp_path / "run", opts, connector=connector)
    recs = {r["host"]: r for r in res.manifest["captures"]}
    assert recs["steady"]["status"] == "ok", recs["steady"]
    assert (tmp_path / "run" / recs["steady"]["path"]).read_text() == "done\n"
    outcomes = {h.host: h for h in res.hosts}
    assert outcomes["steady"].status == "ok" and outcomes["steady"].leftovers_killed == {"start": 0, "end": 0}
    assert outcomes["late"].status == "failed" and "cannot start a capture here" in outcomes["late"].reason
    assert outcomes["late"].leftovers_killed["end"] == 0  # it started nothing: it killed nothing
    assert wait_no_leftovers("entries", 5) == ""
    assert list(Path("/tmp").glob(f"{session.tag('entries')}*")) == []


def test_two_entries_of_one_name_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    # They would share the archive's directory, the records and the work dir on the host.
    with pytest.raises(ConfigError, match="'localhost' appears twice"):
        session.collect([LOCAL, LOCAL], tmp_path / "run", session.Options(window=1, specs=captures.MINIMAL))
    assert not (tmp_path / "run").exists()

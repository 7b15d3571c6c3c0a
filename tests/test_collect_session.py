"""The collection runner's orchestration, on a fake transport that replays fixture text.

The same runner is tested against real local commands and a real sshd in tests/test_collect_lab.py.
"""

from __future__ import annotations

import json
import re
import stat
import time
from datetime import datetime
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import _host, _records, captures, session
from perfkit.collectors._streams import Stream
from perfkit.dataset import load_dataset
from perfkit.errors import HostUnreachable, PerfkitError
from perfkit.redact import Redactor
from perfkit.transport import HostSpec, Job

from .conftest import FIXTURES

VMSTAT = (FIXTURES / "vmstat" / "procps-4.0.2-wide-t-gu.txt").read_bytes()
IOSTAT = (FIXTURES / "iostat" / "sysstat-12.6-x-d-t-iso.txt").read_bytes()
SPECS = tuple(s for s in captures.DEFAULT if s.id in ("vmstat", "iostat", "uname", "iotop"))
DF = b"@@df\nFilesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sda1 %d 0 %d 1%% /\n"


class FakeJob(Job):
    def __init__(self, out: bytes, code: int | None, chunks: int = 2, lose_after: int | None = None):
        self.command = ""
        size = max(1, len(out) // chunks)
        self.parts = [out[i : i + size] for i in range(0, len(out), size)] or [b""]
        self.code, self.lose_after, self.reads, self.killed = code, lose_after, 0, False

    def fileno(self) -> int:
        return -1

    def read(self) -> tuple[bytes, bytes]:
        self.reads += 1
        if self.lose_after is not None and self.reads > self.lose_after:
            return b"", b""
        return (self.parts.pop(0) if self.parts else b""), b""

    def poll(self) -> int | None:
        if self.lose_after is not None and self.reads >= self.lose_after:
            return -1
        if self.killed:
            return 143
        return None if self.parts else self.code

    def kill(self) -> None:
        self.killed = True


class FakeShell(Job):
    """The control shell (`exec sh -s`): each piece of script it is sent is answered by the transport,
    `run` for perfkit's own commands and `output` for a snapshot, framed as the real shell frames it."""

    END = re.compile(r"printf '\\n@@end (\w+) (\S+) %s\\n' \"\$\?\"; printf '\\n@@end \w+ \S+\\n' >&2\n")

    def __init__(self, transport: FakeTransport):
        self.command, self.transport = "exec sh -s", transport
        self.out, self.err, self.code = bytearray(), bytearray(), None

    def send(self, data: bytes) -> None:
        text, start = data.decode(), 0
        for m in self.END.finditer(text):
            body, token, sid = text[start : m.start()], m.group(1), m.group(2)
            start = m.end()
            self.transport.commands.append(body)
            if sid == "run":
                code, out, err = self.transport.run(body, timeout=30)
            else:
                code, out, err = 0, self.transport.output(body), b""
            self.out += out + f"\n@@end {token} {sid} {code}\n".encode()
            self.err += err + f"\n@@end {token} {sid}\n".encode()

    def end_input(self) -> None:
        self.code = 0 if self.code is None else self.code

    def fileno(self) -> int:
        return -1

    def read(self) -> tuple[bytes, bytes]:
        out, err = bytes(self.out), bytes(self.err)
        self.out.clear()
        self.err.clear()
        return out, err

    def poll(self) -> int | None:
        return self.code

    def kill(self) -> None:
        self.code = 143


class FakeTransport:
    """Answers the preflight and replays canned outputs by capture command."""

    def __init__(
        self,
        spec: HostSpec,
        *,
        missing: tuple[str, ...] = (),
        uid: int = 0,
        lose_after: int | None = None,
        outputs: dict[str, bytes] | None = None,
    ):
        self.spec, self.missing, self.uid, self.lose_after = spec, missing, uid, lose_after
        self.outputs = outputs or {
            "vmstat": VMSTAT,
            "iostat": IOSTAT,
            "uname": b"Linux h 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 x86_64 GNU/Linux\n",
            "iotop": b"Total DISK READ: 0.00 K/s\n",
        }
        self.commands: list[str] = []
        self.jobs: list[FakeJob] = []
        self._alive = True

    def __enter__(self) -> FakeTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self._alive = False

    def run(self, command: str, *, timeout: float, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
        if "rm -rf" in command:
            return 0, b"", b""
        lines = [f"@@id {self.uid}"]
        for tool in sorted({s.tool for s in SPECS}):
            lines.append(f"@@missing {tool}" if tool in self.missing else f"@@tool {tool} {tool} 1.0")
        lines.append("@@clock 1700000000.5")
        return 0, ("\n".join(lines) + "\n").encode(), b""

    def output(self, command: str) -> bytes:
        return self.outputs[
            next(t for t in self.outputs if f" {t} " in f" {command} " or f"'{t} " in command)
        ]

    def start(self, command: str, *, keep_stdin: bool = False) -> Job:
        if command == "exec sh -s":
            return FakeShell(self)
        self.commands.append(command)
        tool = next(t for t in self.outputs if f" {t} " in f" {command} " or f"'{t} " in command)
        job = FakeJob(self.outputs[tool], 0)
        if self.lose_after is not None and tool == "vmstat":
            job = FakeJob(self.outputs[tool], 0, chunks=4, lose_after=self.lose_after)
        self.jobs.append(job)
        return job

    def alive(self) -> bool:
        return self._alive and not any(j.poll() == -1 for j in self.jobs)

    def close(self) -> None:
        self._alive = False


def run(tmp_path: Path, hosts: list[HostSpec], connector, specs=SPECS, out: str = "run") -> session.Result:
    opts = session.Options(window=2, specs=specs, run_id="testrun")
    return session.collect(hosts, tmp_path / out, opts, connector=connector)


def test_complete_run_writes_records_files_and_a_readable_archive(tmp_path: Path) -> None:
    res = run(tmp_path, [HostSpec("db1", "10.0.0.1")], lambda s: FakeTransport(s, missing=("iotop",)))
    m = res.manifest
    assert m["status"] == "complete" and res.exit_code == 0 and m["format_version"] == 1
    recs = {r["id"]: r for r in m["captures"]}
    assert recs["vmstat"]["status"] == "ok" and recs["vmstat"]["bytes"] == len(VMSTAT)
    assert recs["iotop"]["status"] == "unavailable" and recs["iotop"]["reason"] == "iotop not installed"
    assert recs["vmstat"]["tool_version"] == "vmstat 1.0" and recs["vmstat"]["env"]["LC_ALL"] == "C"
    assert (tmp_path / "run" / "hosts" / "db1" / "vmstat.out").read_bytes() == VMSTAT
    assert stat.S_IMODE((tmp_path / "run" / "hosts" / "db1" / "vmstat.out").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o700
    with open_archive(tmp_path / "run") as archive:
        assert archive.problems == []
        ds = load_dataset(archive)
    assert {c.kind for c in ds.captures} == {"vmstat", "iostat", "uname"}
    assert {u["reason"] for u in ds.unparsed} == {"not collected: iotop not installed"}


def test_every_command_is_wrapped_and_tagged(tmp_path: Path) -> None:
    seen: list[FakeTransport] = []

    def connector(spec: HostSpec) -> FakeTransport:
        seen.append(FakeTransport(spec))
        return seen[-1]

    run(tmp_path, [HostSpec("db1", "h")], connector)
    started = [c for c in seen[0].commands if "timeout" in c and "@@" not in c]  # not preflight, sweep
    # vmstat, iostat and iotop on channels of their own; uname in the control shell, stdin closed
    assert sorted(c.startswith("(cd ") for c in started) == [False, False, False, True]
    assert all("export LC_ALL=C S_TIME_FORMAT=ISO && exec timeout -k 5 -s TERM" in c for c in started)
    assert all(re.search(r" perfkit-testrun(\) </dev/null)?$", c) for c in started)
    workdir = session.workdir("testrun", "db1")
    assert re.fullmatch(r"/tmp/perfkit-testrun-[0-9a-f]{6}", workdir)
    assert all(f"cd {workdir} && export" in c for c in started)
    assert f"cd / && rm -rf {workdir}\n" in seen[0].commands[-1]  # nothing to sweep
    assert session.sweep_command("testrun", mine=False) in seen[0].commands[0]  # the preflight
    # the tag is never whole in the sweep's own command line, so `pgrep -f` cannot find it there
    assert session.tag("testrun") not in session.sweep_command("testrun", mine=True)


def test_iotop_needs_root(tmp_path: Path) -> None:
    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: FakeTransport(s, uid=1000))
    rec = next(r for r in res.manifest["captures"] if r["id"] == "iotop")
    assert rec["status"] == "unavailable" and "needs root" in rec["reason"]


def test_one_failing_host_does_not_stop_the_others(tmp_path: Path) -> None:
    def connector(spec: HostSpec) -> FakeTransport:
        if spec.name == "dead":
            raise HostUnreachable("dead", "10.9.9.9:22: connection refused (connect phase)")
        return FakeTransport(spec)

    res = run(tmp_path, [HostSpec("ok1", "a"), HostSpec("dead", "b"), HostSpec("ok2", "c")], connector)
    assert res.manifest["status"] == "partial" and res.exit_code == session.EXIT_PARTIAL
    out = {h.host: h for h in res.hosts}
    assert out["ok1"].status == "ok" and out["ok2"].status == "ok"
    assert out["dead"].status == "failed" and "connection refused" in out["dead"].reason
    dead = [r for r in res.manifest["captures"] if r["host"] == "dead"]
    assert dead and all(r["status"] == "skipped" for r in dead)


def test_all_hosts_failing_is_failed(tmp_path: Path) -> None:
    def connector(spec: HostSpec) -> FakeTransport:
        raise HostUnreachable(spec.name, "no route")

    res = run(tmp_path, [HostSpec("a", "a")], connector)
    assert res.manifest["status"] == "failed" and res.exit_code == session.EXIT_FAILED


def test_connection_lost_mid_window_keeps_bytes_and_marks_truncated(tmp_path: Path) -> None:
    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: FakeTransport(s, lose_after=2))
    rec = next(r for r in res.manifest["captures"] if r["id"] == "vmstat")
    assert rec["status"] == "lost" and rec["truncated"] and rec["exit_code"] == -1
    kept = (tmp_path / "run" / "hosts" / "db1" / "vmstat.out").read_bytes()
    assert 0 < len(kept) < len(VMSTAT) and VMSTAT.startswith(kept) and rec["bytes"] == len(kept)
    assert res.hosts[0].status == "partial" and res.exit_code == session.EXIT_PARTIAL


def test_byte_cap_truncates(tmp_path: Path) -> None:
    small = tuple(
        captures.CaptureSpec(s.id, s.kind, s.command, s.tool, max_bytes=100) if s.id == "iostat" else s
        for s in SPECS
    )
    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: FakeTransport(s), specs=small)
    rec = next(r for r in res.manifest["captures"] if r["id"] == "iostat")
    assert rec["truncated"] and rec["bytes"] == 100 and "byte cap" in rec["reason"]


def test_tar_gz_output_reads_back(tmp_path: Path) -> None:
    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: FakeTransport(s), out="run.tar.gz")
    assert res.path == tmp_path / "run.tar.gz" and not list(tmp_path.glob("perfkit-collect-*"))
    with open_archive(res.path) as archive:
        assert archive.manifest["run_id"] == "testrun" and archive.problems == []
        assert "hosts/db1/vmstat.out" in archive.files


def test_refuses_a_non_empty_output_dir(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "x").write_text("keep me")
    with pytest.raises(Exception, match="not empty"):
        run(tmp_path, [HostSpec("db1", "h")], lambda s: FakeTransport(s))


@pytest.mark.parametrize("name", ["run.tar.gz", "run.tgz"])
def test_an_existing_archive_is_refused_not_overwritten(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"the previous run")
    with pytest.raises(PerfkitError, match=rf"{name}: exists; perfkit never overwrites"):
        run(tmp_path, [HostSpec("db1", "h")], lambda s: FakeTransport(s), out=name)
    assert (tmp_path / name).read_bytes() == b"the previous run"
    assert not list(tmp_path.glob("perfkit-collect-*"))


def test_an_archive_that_appears_during_the_run_is_not_replaced(tmp_path: Path) -> None:
    # Another run (or the user) writes the same name while this one collects: packing keeps the
    # unpacked run and says so, and never replaces that file.
    def connector(spec: HostSpec) -> FakeTransport:
        (tmp_path / "run.tar.gz").write_bytes(b"written meanwhile")
        return FakeTransport(spec)

    res = run(tmp_path, [HostSpec("db1", "h")], connector, out="run.tar.gz")
    assert (tmp_path / "run.tar.gz").read_bytes() == b"written meanwhile"
    [staging] = tmp_path.glob("perfkit-collect-*")
    assert res.path == staging / "testrun" and (res.path / "manifest.json").exists()
    assert res.manifest["reason"] == f"not packed (File exists): see {res.path}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([staging.name, "run.tar.gz"])  # no .part


def test_hostile_values_are_quoted() -> None:
    cmd = session.wrap("vmstat 1 2", deadline_s=12, workdir="/tmp/x; rm -rf ~", run_id="r$(id)")
    assert "cd '/tmp/x; rm -rf ~' &&" in cmd and cmd.endswith("'perfkit-r$(id)'")
    spec = captures.CaptureSpec("sar", "sar", "sar -o {workdir}/sa.bin 1 {count}", "sar")
    assert spec.render(interval=1, window=3, workdir="/tmp/a b$(x)") == "sar -o '/tmp/a b$(x)'/sa.bin 1 3"


def test_manifest_is_json_without_secrets(tmp_path: Path) -> None:
    res = run(
        tmp_path, [HostSpec("db1", "h", user="root", key_filename="/secret/key")], lambda s: FakeTransport(s)
    )
    text = (tmp_path / "run" / "manifest.json").read_text()
    assert json.loads(text)["inventory"][0] == {
        "name": "db1",
        "hostname": "h",
        "port": None,
        "user": "root",
        "accept_new_host_key": False,
        "roles": [],
    }
    assert "/secret/key" not in text and res.exit_code == 0


def test_host_below_the_free_space_floor_is_refused(tmp_path: Path) -> None:
    class FullDisk(FakeTransport):
        def run(
            self, command: str, *, timeout: float, stdin: bytes | None = None
        ) -> tuple[int, bytes, bytes]:
            code, out, err = super().run(command, timeout=timeout)
            return code, out + DF % (104857600, 51200), err  # 50 MiB free of 100 GiB

    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: FullDisk(s))
    assert res.hosts[0].status == "failed"
    assert "only 50 MiB free of 102400 MiB" in res.hosts[0].reason and "5120 MiB" in res.hosts[0].reason
    assert all(r["status"] == "skipped" for r in res.manifest["captures"])


def test_iotop_record_says_when_delay_accounting_is_off(tmp_path: Path) -> None:
    class NoDelayAcct(FakeTransport):
        def run(self, command: str, **kw: object) -> tuple[int, bytes, bytes]:
            code, out, err = super().run(command, timeout=1)
            return code, out + b"@@delayacct 0\n", err

    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: NoDelayAcct(s))
    rec = next(r for r in res.manifest["captures"] if r["id"] == "iotop")
    assert rec["status"] == "ok" and rec["reason"] == "kernel.task_delayacct=0: SWAPIN and IO% unavailable"


def test_what_a_run_writes_on_the_host_counts_against_its_free_space(tmp_path: Path) -> None:
    class SmallDisk(FakeTransport):
        def run(self, command: str, **kw: object) -> tuple[int, bytes, bytes]:
            code, out, err = super().run(command, timeout=1)
            return code, out + DF % (10485760, 716800) + b"@@nproc 64\n", err  # 700 MiB free of 10 GiB

    perf = captures.perf_specs("tikv-server")
    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: SmallDisk(s), specs=(*SPECS, *perf))
    # floor 512 MiB (5 %) + perf.data's 512 MiB cap > 700 MiB free
    assert res.hosts[0].status == "failed"
    assert "needs at least 1024 MiB" in res.hosts[0].reason, res.hosts[0].reason
    assert "perf-record up to 512 MiB" in res.hosts[0].reason
    res = run(tmp_path, [HostSpec("db1", "h")], lambda s: SmallDisk(s), out="no-perf")
    assert res.hosts[0].status == "ok"  # sar's sa.bin: 2 samples × (16 kB + 64 × 1 kB)


def test_perf_record_is_capped_on_the_host() -> None:
    record, _ = captures.perf_specs("tikv-server")
    assert f"--max-size={captures.PERF_MAX_MB}M" in record.command
    sar = next(s for s in captures.DEFAULT if s.id == "sar")
    assert sar.host_bytes_at_most(samples=86400, cpus=128) == 86400 * (16 + 128) * 1024


@pytest.mark.parametrize("run_id", ["../x", "a b", "$(reboot)", "x;rm", "", ".hidden", "a" * 65])
def test_hostile_run_ids_are_refused(run_id: str) -> None:
    with pytest.raises(ValueError, match="invalid run id"):
        session.Options(window=1, specs=SPECS, run_id=run_id)


def window_opened(res: session.Result) -> dict[str, datetime]:
    vmstat = [r for r in res.manifest["captures"] if r["id"] == "vmstat" and r["started_at"]]
    return {r["host"]: datetime.fromisoformat(r["started_at"]) for r in vmstat}


def test_windows_open_together_however_long_each_host_takes_to_connect(tmp_path: Path) -> None:
    delays = {"fast": 0.0, "slow": 1.5}

    def connector(spec: HostSpec) -> FakeTransport:
        time.sleep(delays.get(spec.name, 0))
        if spec.name == "dead":
            raise HostUnreachable("dead", "connection refused")
        return FakeTransport(spec)

    res = run(tmp_path, [HostSpec(n, "h") for n in ("fast", "slow", "dead")], connector)
    opened = window_opened(res)
    assert set(opened) == {"fast", "slow"}  # the dead host does not hold the others back
    assert abs((opened["fast"] - opened["slow"]).total_seconds()) < 0.3


def test_a_host_later_than_the_slack_does_not_hold_the_others(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(session, "GATE_SLACK_S", 0.5)

    def connector(spec: HostSpec) -> FakeTransport:
        time.sleep(2.0 if spec.name == "late" else 0)
        return FakeTransport(spec)

    res = run(tmp_path, [HostSpec(n, "h") for n in ("early", "late")], connector)
    opened = window_opened(res)
    assert (opened["late"] - opened["early"]).total_seconds() > 1.0


def test_ten_window_captures_and_the_control_shell_stay_within_max_sessions(tmp_path: Path) -> None:
    """sshd refuses an 11th channel: with the control shell open, the 10th window capture waits until
    the shell's snapshots are done and the shell is closed."""

    class Counting(FakeTransport):
        def __init__(self, spec: HostSpec) -> None:
            super().__init__(spec)
            self.shells: list[FakeShell] = []
            self.most = 0

        def start(self, command: str, *, keep_stdin: bool = False) -> Job:
            job = super().start(command, keep_stdin=keep_stdin)
            if isinstance(job, FakeShell):
                self.shells.append(job)
            open_now = sum(j.poll() is None for j in [*self.jobs, *self.shells])
            self.most = max(self.most, open_now)
            return job

    window = tuple(
        captures.CaptureSpec(f"vmstat{i}", "vmstat", f"vmstat -w -t 1 {i + 2}", "vmstat") for i in range(10)
    )
    uname = next(s for s in captures.DEFAULT if s.id == "uname")
    seen: list[Counting] = []

    def connector(spec: HostSpec) -> Counting:
        seen.append(Counting(spec))
        return seen[0]

    res = run(tmp_path, [HostSpec("db1", "h")], connector, specs=(*window, uname))
    assert res.manifest["status"] == "complete", res.manifest["reason"]
    assert all(r["status"] == "ok" for r in res.manifest["captures"])
    assert seen[0].most <= session.MAX_CHANNELS
    assert len(seen[0].shells) == 2  # the second one runs the clean-up after the window


# A sampler that says when it samples (as the thread sampler's `# select` lines do), its tool checked
# as vmstat's so the fake preflight finds it.
SAMPLES = b"# perfkit-threads 1 mode=python3\n# select 1.0 pid=1 why=named comm=init\n= 2.0 1.000 2\n"
SAMPLER = captures.CaptureSpec("sampler", "threads", "sampler --count 2", "vmstat", sampling=(b"# select ",))


def test_a_capture_that_says_when_it_samples_starts_before_the_window(tmp_path: Path) -> None:
    """A sampler that takes most of a second to start (the thread sampler) is started before the
    window's other captures and snapshots, which start (and a sweep's load with them) once it samples."""
    seen: list[FakeTransport] = []

    def connector(spec: HostSpec) -> FakeTransport:
        seen.append(FakeTransport(spec, outputs={**FakeTransport(spec).outputs, "sampler": SAMPLES}))
        return seen[-1]

    res = run(tmp_path, [HostSpec("db1", "h")], connector, specs=(*SPECS, SAMPLER))
    assert all(r["status"] == "ok" for r in res.manifest["captures"]), res.manifest["captures"]
    commands = seen[0].commands
    first = [i for i, c in enumerate(commands) if "sampler --count" in c]
    others = [i for i, c in enumerate(commands) if re.search(r"\b(vmstat -w|iostat -x|uname -a|iotop -b)", c)]
    assert len(first) == 1 and len(others) == 4, commands
    assert first[0] < min(others)
    assert (tmp_path / "run" / "hosts" / "db1" / "sampler.out").read_bytes() == SAMPLES


def test_a_sampler_that_never_says_so_holds_the_window_at_most_lead_wait(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_host, "LEAD_WAIT_S", 0.3)
    silent = captures.CaptureSpec("sampler", "threads", "sampler --count 2", "vmstat", sampling=(b"never ",))

    class Slow(FakeTransport):
        def start(self, command: str, *, keep_stdin: bool = False) -> Job:
            job = super().start(command, keep_stdin=keep_stdin)
            if "sampler --count" in command:  # its output at once, its exit a second later
                ends = time.monotonic() + 1.0
                job.poll = lambda: None if time.monotonic() < ends else 0  # type: ignore[method-assign]
            return job

    def connector(spec: HostSpec) -> FakeTransport:
        return Slow(spec, outputs={**FakeTransport(spec).outputs, "sampler": SAMPLES})

    began = time.monotonic()
    res = run(tmp_path, [HostSpec("db1", "h")], connector, specs=(*SPECS, silent))
    waited = window_opened(res)["db1"] - datetime.fromisoformat(
        next(r for r in res.manifest["captures"] if r["id"] == "sampler")["started_at"]
    )
    assert 0.25 <= waited.total_seconds() < 3.0
    assert time.monotonic() - began < 60
    assert next(r for r in res.manifest["captures"] if r["id"] == "vmstat")["status"] == "ok"


def test_a_sampling_mark_split_across_reads_is_found_at_a_line_start_only(tmp_path: Path) -> None:
    ledger = _records.Ledger(["h"])
    ledger.add(
        _records.Record(
            id="sampler", host="h", kind="threads", command="", path="h/sampler.out", phase="window"
        )
    )
    out = b"# perfkit-threads 1 watch=x# select\n# sel" + b"ect 1.0 pid=1\n"
    job = FakeJob(out, 0, chunks=len(out))  # one byte a read
    stream = Stream(SAMPLER, "h", ledger, tmp_path, job, _records.Stop(), Redactor(()))
    states = []
    while not stream.done:
        stream.pump()
        states.append(stream.sampling)
    stream.close()
    # not on the header's `# select` (mid-line); on the second line's, once its last byte arrived
    assert states.index(True) == out.index(b"# select 1.0") + len(b"# select ") - 1

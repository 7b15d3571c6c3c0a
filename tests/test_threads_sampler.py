"""The thread-state sampler (collectors/thread_sampler.py) in-process over a fake /proc tree, and the
`threads` capture command run for real: Python 3, Python 2.7 (or the oldest Python here) and the
awk mode (a PATH without Python)."""

from __future__ import annotations

import ast
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfkit.collectors import captures, thread_sampler
from perfkit.collectors.thread_sampler import Sampler
from perfkit.parsers import psi as psi_parser
from perfkit.parsers import threads as threads_parser

SOURCE = Path(thread_sampler.__file__)
SPEC = next(s for s in captures.DEFAULT if s.id == "threads")


def _stat(pid: int, comm: str, state: str, *, pgrp: int = 1, ticks: int = 0, flags: int = 0x400040) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    return f"{pid} ({comm}) {state} 1 {pgrp} 1 0 -1 {flags} 0 0 0 0 {ticks} 0 0 0 20 0 1 0 100 0 0\n"


class FakeProc:
    """A /proc tree of regular files in the kernel's formats (pread re-reads them like proc files)."""

    def __init__(self, root: Path):
        self.root = root
        (root / "pressure").mkdir(parents=True)
        for res in ("cpu", "io", "memory"):
            self.pressure(res, 0)

    def pressure(self, res: str, total: int) -> None:
        (self.root / "pressure" / res).write_text(
            f"some avg10=1.50 avg60=0.50 avg300=0.10 total={total}\n"
            f"full avg10=0.00 avg60=0.00 avg300=0.00 total={total // 2}\n"
        )

    def process(self, pid: int, comm: str, *, ticks: int = 0, pgrp: int = 1) -> None:
        d = self.root / str(pid)
        (d / "task").mkdir(parents=True, exist_ok=True)
        (d / "comm").write_text(comm + "\n")
        (d / "stat").write_text(_stat(pid, comm, "S", pgrp=pgrp, ticks=ticks))

    def thread(
        self, pid: int, tid: int, name: str, state: str, syscall: str, wchan: str, sched: tuple[int, int]
    ) -> None:
        d = self.root / str(pid) / "task" / str(tid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "stat").write_text(_stat(tid, name, state))
        (d / "syscall").write_text(syscall + " 0x0 0x0\n" if syscall != "running" else "running\n")
        (d / "wchan").write_text(wchan)  # no newline, as the kernel prints it
        (d / "schedstat").write_text(f"{sched[0]} {sched[1]} 7\n")

    def exit_thread(self, pid: int, tid: int) -> None:
        shutil.rmtree(self.root / str(pid) / "task" / str(tid))


class Clock:
    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _sampler(fake: FakeProc, out: io.BytesIO, psi: io.BytesIO | None = None, **kw) -> Sampler:
    return Sampler(out, root=str(fake.root), watch=("mariadbd",), psi=psi, clock=Clock(), me=999, **kw)


def test_counts_per_interval_and_schedstat_deltas(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.process(10, "mariadbd")
    fake.thread(10, 10, "mariadbd", "S", "7", "poll_schedule_timeout", (1000, 50))
    fake.thread(10, 11, "ib_io_wr-1", "D", "74", "io_schedule", (5000, 100))
    fake.process(20, "bash")  # not watched, not busy: never sampled
    fake.thread(20, 20, "bash", "S", "61", "do_wait", (0, 0))
    out, psi = io.BytesIO(), io.BytesIO()
    s = _sampler(fake, out, psi, busiest=0)
    s.select_named()
    s.schedstat()  # the baseline the run loop takes before its first interval
    s.sample()
    fake.thread(10, 11, "ib_io_wr-1", "R", "running", "0", (9000, 400))
    fake.thread(10, 12, "one_connection", "S", "45", "sk_wait_data", (300, 20))  # born in the interval
    s.sample()
    s.sample()
    fake.pressure("io", 500_000)
    s.flush(1.0)
    text = out.getvalue().decode()
    assert "# select 1800000000.000 pid=10 why=named comm=mariadbd\n" in text
    assert "pid=20" not in text
    rows = [ln.split("\t") for ln in text.splitlines() if ln[:2] in ("c\t", "d\t")]
    assert text.splitlines()[1] == "= 1800000000.000 1.000 3"
    counts = {(r[2], r[3], r[4], r[7]): int(r[5]) for r in rows if r[0] == "c"}
    assert counts == {
        ("S", "7", "poll_schedule_timeout", "mariadbd"): 3,
        ("D", "74", "io_schedule", "ib_io_wr-1"): 1,
        ("R", "running", "0", "ib_io_wr-1"): 2,
        ("S", "45", "sk_wait_data", "one_connection"): 2,
    }
    sched = {r[6]: (int(r[2]), r[3], r[4]) for r in rows if r[0] == "d"}
    # deltas from the baseline; the thread born in the interval counts from its start
    assert sched == {
        "mariadbd": (1, "0", "0"),
        "ib_io_wr-1": (1, "4000", "300"),
        "one_connection": (1, "300", "20"),
    }
    # the parser's view of the same block
    df = threads_parser.parse(
        "# perfkit-threads 1 mode=python3 rate_hz=5 interval_s=1 arch=x86_64\n" + text, host="db1"
    )
    state = df[df["record"] == "state"].set_index(["thread", "state"])
    assert state.loc[("ib_io_wr-1", "R"), "avg_threads"] == pytest.approx(2 / 3)
    assert state.loc[("ib_io_wr-1", "D"), "syscall"] == "fsync"  # 74 on x86_64
    assert state.loc[("one_connection", "S"), "syscall"] == "recvfrom"
    assert set(df["selected"].dropna()) == {"named"}
    # PSI: one stamped block, the kernel's lines prefixed by the resource
    block = psi.getvalue().decode().splitlines()
    assert (
        block[0] == "= 1800000000.000" and "io some avg10=1.50 avg60=0.50 avg300=0.10 total=500000" in block
    )


def test_a_new_interval_starts_from_zero_and_exited_threads_drop(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.process(10, "mariadbd")
    fake.thread(10, 10, "mariadbd", "S", "202", "futex_do_wait", (100, 10))
    fake.thread(10, 11, "worker", "S", "202", "futex_do_wait", (100, 10))
    out = io.BytesIO()
    s = _sampler(fake, out, busiest=0)
    s.select_named()
    s.schedstat()
    s.sample()
    s.flush(1.0)
    fake.exit_thread(10, 11)
    s.sample()
    s.flush(1.0)
    blocks = out.getvalue().decode().split("= ")[1:]
    assert "worker" in blocks[0] and "worker" not in blocks[1]
    assert blocks[1].startswith("1800000000.000 1.000 1\n")  # one sample in the second interval


def test_busiest_by_cpu_ticks_not_our_own_group_and_named_refresh(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    for pid, ticks in ((30, 100), (31, 100), (32, 100), (33, 100), (34, 100)):
        fake.process(pid, f"p{pid}", ticks=ticks)
    fake.process(35, "sampler", ticks=100, pgrp=999)  # the sampler's own process group
    out = io.BytesIO()
    s = _sampler(fake, out, busiest=2)
    before = s.cpu_ticks()
    fake.process(31, "p31", ticks=150)
    fake.process(33, "p33", ticks=130)
    fake.process(34, "p34", ticks=101)
    fake.process(35, "sampler", ticks=900, pgrp=999)
    s.select_named()
    s.select_busiest(before, s.cpu_ticks())
    assert sorted((p.pid, p.why) for p in s.procs.values()) == [(31, "busiest"), (33, "busiest")]
    assert "pid=31 why=busiest cpu_ticks=50 comm=p31" in out.getvalue().decode()
    # a restarted mariadbd: found by name under its new pid at the next refresh, the old one gone
    fake.process(40, "mariadbd")
    s.select_named()
    assert s.procs[40].why == "named"
    shutil.rmtree(fake.root / "40")
    fake.process(41, "mariadbd")
    s.select_named()
    assert 40 not in s.procs and 41 in s.procs
    assert "# gone 1800000000.000 pid=40\n" in out.getvalue().decode()


def test_kernel_threads_unreadable_files_and_escaped_names(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.process(50, "mariadbd")
    d = fake.root / "50" / "task" / "50"
    d.mkdir(parents=True)
    (d / "stat").write_text(_stat(50, "a\tb) S 1 (x", "I", flags=0x208040))  # PF_KTHREAD, odd comm
    (d / "wchan").write_text("worker_thread")
    (d / "schedstat").write_text("1 2 3\n")
    fake.thread(50, 51, "w", "S", "0", "x", (0, 0))
    os.remove(fake.root / "50" / "task" / "51" / "syscall")
    out = io.BytesIO()
    s = _sampler(fake, out, busiest=0)
    s.select_named()
    s.sample()
    s.flush(0.2)
    text = out.getvalue().decode()
    assert "c\t50\tI\tkernel\tworker_thread\t1\tmariadbd\ta\\tb) S 1 (x\n" in text
    assert "c\t50\tS\t?\tx\t1\tmariadbd\tw\n" in text  # the process's pid, thread 51's name
    df = threads_parser.parse("# perfkit-threads 1 mode=python3\n" + text)
    assert "a\tb) S 1 (x" in set(df["thread"])
    assert df.loc[df["thread"] == "w", "syscall"].isna().all()


def test_no_psi_is_said_once_not_an_error(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    shutil.rmtree(fake.root / "pressure")
    out, psi = io.BytesIO(), io.BytesIO()
    s = _sampler(fake, out, psi, busiest=0)
    s.flush(1.0)
    s.flush(1.0)
    text = "# perfkit-psi 1\n" + psi.getvalue().decode()
    assert text.count("# no PSI for io:") == 1
    df = psi_parser.parse(text)
    assert df.empty and any("no PSI for cpu" in n for n in df.attrs["notes"])


def test_run_loop_samples_at_the_rate_and_writes_every_interval(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.process(10, "mariadbd")
    fake.thread(10, 10, "mariadbd", "S", "202", "futex_do_wait", (0, 0))
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    out = io.BytesIO()
    s = _sampler(fake, out, busiest=0)
    s.run(3, 1.0, 5, sleep=sleep, monotonic=lambda: now[0])
    heads = [ln for ln in out.getvalue().decode().splitlines() if ln.startswith("= ")]
    assert [h.split()[2:] for h in heads] == [["1.000", "5"]] * 3


# ------------------------------------------------------------------ the embedded source


def test_embedded_source_is_the_module_without_docstring_and_comments() -> None:
    module = ast.parse(SOURCE.read_text())
    module.body = module.body[1:]  # the docstring
    assert ast.dump(ast.parse(captures._sampler_python())) == ast.dump(module)
    assert captures._sampler_python() in SPEC.render(interval=1, window=2, workdir="/w").replace("{{", "{")


def test_source_uses_no_python3_only_syntax() -> None:
    """Python 2.7 has none of these; the real 2.7 run below checks the rest where 2.7 exists."""
    tree = ast.parse(SOURCE.read_text())
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr | ast.AnnAssign | ast.Nonlocal | ast.AsyncFunctionDef | ast.Await):
            bad.append((type(node).__name__, node.lineno))
        if isinstance(node, ast.YieldFrom | ast.NamedExpr | ast.Starred):
            bad.append((type(node).__name__, node.lineno))
        if isinstance(node, ast.FunctionDef):
            a = node.args
            if node.returns:
                bad.append(("return annotation", node.lineno))
            if a.kwonlyargs or a.posonlyargs or any(x.annotation for x in a.args):
                bad.append(("py3 arguments", node.lineno))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            bad.append(("@", node.lineno))
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            assert {a.name for a in node.names} <= {"print_function", "division", "absolute_import"}
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            assert all(b < 128 for b in node.value)  # a py2 byte string literal is ASCII source
    assert bad == []
    text = SOURCE.read_text()
    code = "\n".join(ln for ln in text.splitlines() if "# type:" not in ln)  # type comments hold "->"
    assert [w for w in ("nonlocal", "super()", "pathlib", "subprocess", " -> ") if w in code] == []


# ------------------------------------------------------------------ the capture command, for real


def _child(name: str, sleepers: int) -> subprocess.Popen:
    """A process named `name` (its comm) with `sleepers` threads waiting on an event."""
    code = (
        "import threading, time, sys\n"
        f"open('/proc/self/comm', 'w').write({name!r})\n"
        "ev = threading.Event()\n"
        f"for _ in range({sleepers}): threading.Thread(target=ev.wait, daemon=True).start()\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    return p


def _stop(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()
    if child.stdout is not None:
        child.stdout.close()


def _bin_dir(tmp: Path, python: str | None, awk: str = "/usr/bin/mawk") -> Path:
    d = tmp / "bin"
    d.mkdir()
    for tool in ("sh", "cat", "sleep", "date", "getconf", "uname", "tr"):
        (d / tool).symlink_to(shutil.which(tool))
    (d / "awk").symlink_to(awk)
    if python:
        (d / ("python2.7" if "python2" in Path(python).name else "python3")).symlink_to(python)
    return d


def _run_capture(tmp: Path, bindir: Path, name: str, window: int = 2) -> tuple[str, str]:
    wd = tmp / "wd"
    wd.mkdir()
    cmd = SPEC.render(interval=1, window=window, workdir=str(wd), watch=(name,))
    env = {"PATH": str(bindir), "LC_ALL": "C"}
    res = subprocess.run([str(bindir / "sh"), "-c", cmd], cwd=wd, env=env, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    version = subprocess.run(
        [str(bindir / "sh"), "-c", SPEC.version], env=env, capture_output=True, text=True, timeout=30
    ).stdout
    return res.stdout.decode(), version.strip() + "\n" + (wd / "psi.out").read_text()


def _check_child_threads(text: str, name: str, pid: int, sleepers: int, mode: str, rate: str) -> None:
    df = threads_parser.parse(text, host="local")
    assert df.attrs["sampler"]["mode"] == mode and df.attrs["sampler"]["rate_hz"] == rate
    mine = df[(df["pid"] == pid) & (df["record"] == "state")]
    assert set(mine["process"]) == {name} and set(mine["selected"]) == {"named"}
    per_interval = mine.groupby("timestamp")["avg_threads"].sum()
    assert len(per_interval) == 2
    assert (per_interval >= sleepers).all() and (per_interval <= sleepers + 2).all()  # + the main thread
    futex = mine[(mine["state"] == "S") & (mine["syscall"] == "futex")]
    assert futex.groupby("timestamp")["avg_threads"].sum().min() >= sleepers
    sched = df[(df["pid"] == pid) & (df["record"] == "sched")]
    assert sched["threads"].sum() >= 2 * sleepers and sched["cpu_ns"].notna().all()


@pytest.mark.parametrize("awk", ["/usr/bin/mawk", "/usr/bin/gawk"])
def test_awk_mode_for_real_without_python(tmp_path: Path, awk: str) -> None:
    if not Path(awk).exists():
        pytest.skip(f"{awk} not installed")
    child = _child("pk-awk-test", 12)
    try:
        out, extra = _run_capture(tmp_path, _bin_dir(tmp_path, None, awk), "pk-awk-test")
    finally:
        _stop(child)
    version, psi_text = extra.split("\n", 1)
    assert version == "thread sampler: awk (no Python 2.7+), 1 samples/s"
    _check_child_threads(out, "pk-awk-test", child.pid, 12, "awk", "1")
    assert len(psi_parser.parse(psi_text)) == 12  # two blocks of cpu/io/memory some/full


def _pythons() -> dict[str, str]:
    """Interpreters to run the sampler under: 2.7 and the oldest 3.x this machine has (pyenv's)."""
    found = {}
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for ver, exe in (("2.7", "python2.7"), ("3.6", "python3.6")):
        cands = [*sorted(root.glob(f"{ver}*/bin/{exe}")), shutil.which(exe)]
        for c in cands:
            if c and subprocess.run([c, "-c", "pass"], capture_output=True).returncode == 0:
                found[ver] = str(c)
                break
    return found


PYTHONS = _pythons()


@pytest.mark.parametrize("ver", ["2.7", "3.6", "current"])
def test_python_mode_for_real(tmp_path: Path, ver: str) -> None:
    python = sys.executable if ver == "current" else PYTHONS.get(ver)
    if not python:
        pytest.skip(f"no Python {ver} here (the syntax test above still checks 2.7 compatibility)")
    name = f"pk-py-{ver}"  # a comm holds 15 characters
    child = _child(name, 10)
    try:
        out, extra = _run_capture(tmp_path, _bin_dir(tmp_path, python), name)
    finally:
        _stop(child)
    version, psi_text = extra.split("\n", 1)
    major = "2" if ver == "2.7" else "3"
    exe = "python2.7" if major == "2" else "python3"
    assert version.startswith(f"thread sampler: {exe} {major}.") and version.endswith(", 2 samples/s")
    _check_child_threads(out, name, child.pid, 10, f"python{major}", "2")
    assert len(psi_parser.parse(psi_text)) == 12


@pytest.mark.parametrize("mode", ["python3", "awk"])
def test_processes_started_just_after_the_sampler_are_chosen_after_its_first_interval(
    tmp_path: Path, mode: str
) -> None:
    """The sampler starts before a step's load (collectors/_host.py `_lead`), so what the load starts
    is not there when it first chooses: a load generator (named) and a busy server it does not name
    are chosen after its first interval, the named anew and the busiest over that interval."""
    bindir = _bin_dir(tmp_path, sys.executable if mode == "python3" else None)
    wd = tmp_path / "wd"
    wd.mkdir()
    cmd = SPEC.render(interval=1, window=3, workdir=str(wd), watch=("pk-late",))
    env = {"PATH": str(bindir), "LC_ALL": "C"}
    # its own session, as perfkit starts a capture: the busiest are never of the sampler's own group
    sh = [str(bindir / "sh"), "-c", cmd]
    sampler = subprocess.Popen(sh, cwd=wd, env=env, stdout=subprocess.PIPE, start_new_session=True)
    children: list[subprocess.Popen] = []
    try:
        assert sampler.stdout is not None
        # it writes its header as it has chosen, in awk mode too: mawk in interactive mode reads the
        # shell's lines as they come (else its `# select` lines came at the window's end)
        header = sampler.stdout.readline()
        assert sampler.poll() is None  # streamed while it samples, not left for its exit
        if mode == "awk":  # its shell writes the header before it chooses
            time.sleep(0.5)
        children.append(_child("pk-late", 3))
        spin = "open('/proc/self/comm', 'w').write('pk-spin')\nwhile True: pass\n"
        children.append(subprocess.Popen([sys.executable, "-c", spin]))
        # as busy, but working in the sampler's directory as perfkit's other captures do: perfkit's own
        # (iotop and top took the busiest slots beside a named database), never chosen
        ours = spin.replace("pk-spin", "pk-ours")
        children.append(subprocess.Popen([sys.executable, "-c", ours], cwd=wd))
        out = header + sampler.stdout.read()
        assert sampler.wait(timeout=30) == 0
    finally:
        for child in children:
            _stop(child)
        sampler.kill()
        sampler.wait()
        if sampler.stdout is not None:
            sampler.stdout.close()
    assert out.startswith(f"# perfkit-threads 1 mode={mode}".encode())
    df = threads_parser.parse(out.decode(), host="local")
    stamps = sorted(df["timestamp"].unique())
    assert len(stamps) == 3
    late, spinning, ours_spinning = children
    for child, why in ((late, "named"), (spinning, "busiest")):
        rows = df[(df["pid"] == child.pid) & (df["record"] == "state")]
        assert set(rows["selected"]) == {why}, (child.pid, df.attrs["selected"])
        assert set(rows["timestamp"]) == set(stamps[1:])  # from the second interval on
    assert ours_spinning.pid not in set(df["pid"]), df.attrs["selected"]
    assert b"comm=pk-ours" not in out


def test_sampler_stops_with_its_window() -> None:
    """Started with a 2-interval window it ends by itself after about 2 s (+ its start)."""
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, str(SOURCE), "--count", "2", "--watch", "no-such-proc"],
        capture_output=True,
        timeout=30,
    )
    assert res.returncode == 0 and 2.0 <= time.monotonic() - t0 < 4.5
    assert res.stdout.decode().count("\n= ") == 2


def test_many_threads_fit_in_the_descriptors(tmp_path: Path) -> None:
    """With four descriptors a thread held open, a low RLIMIT_NOFILE falls back to open/read/close."""
    child = _child("pk-fd-test", 60)
    try:
        code = (
            "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
            f"sys.argv = ['s', '--count', '1', '--watch', 'pk-fd-test', '--busiest', '0']; "
            f"exec(open({str(SOURCE)!r}).read())"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    finally:
        _stop(child)
    assert res.returncode == 0, res.stderr
    df = threads_parser.parse(res.stdout.decode())
    assert df[(df["record"] == "state") & (df["pid"] == child.pid)]["avg_threads"].sum() >= 60


def test_thread_counts_follow_a_process_thread_pool(tmp_path: Path) -> None:
    """A thread started between samples shows from the next sample (no restart of the sampler)."""
    fake = FakeProc(tmp_path / "proc")
    fake.process(10, "mariadbd")
    out = io.BytesIO()
    s = _sampler(fake, out, busiest=0)
    s.select_named()
    s.schedstat()
    for i in range(3):
        fake.thread(10, 100 + i, "worker", "S", "202", "futex_do_wait", (0, 0))
        s.sample()
    s.flush(1.0)
    row = next(ln for ln in out.getvalue().decode().splitlines() if ln.startswith("c\t"))
    assert row.split("\t")[5] == "6"  # 1 + 2 + 3 thread-samples

"""`perfkit analyze --jobs N` (issue 19): captures parsed in worker processes give the Dataset, the
findings and the errors of the one-process path; a worker that dies, or a Ctrl-C, ends the run
cleanly. Real fixture archives (tests/fixtures/archives/); no timed assertions."""

from __future__ import annotations

import gc
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest
from click.testing import CliRunner

from perfkit import _workers, dataset
from perfkit.analyzers import analyze
from perfkit.analyzers.io import task_keys
from perfkit.archive import open_archive, size_hint
from perfkit.cli import main
from perfkit.config import load_thresholds
from perfkit.dataset import load_dataset, view_key
from perfkit.errors import AnalysisError
from perfkit.pipeline import analyze_path, write_reports
from perfkit.reports import findings_json
from perfkit.reports.plots import Drawn, capture_plot
from tests import jobs_workers

FIXTURES = Path(__file__).parent / "fixtures"
ARCHIVES = FIXTURES / "archives"
BAD_LINE = "hosts/localhost/t0004/vmstat.out"


def _same_dataset(a: dataset.Dataset, b: dataset.Dataset) -> None:
    assert [(c.path, c.kind, c.host, c.step) for c in a.captures] == [
        (c.path, c.kind, c.host, c.step) for c in b.captures
    ]
    for x, y in zip(a.captures, b.captures, strict=True):
        assert x.frame.equals(y.frame), x.path
        assert list(x.frame.dtypes) == list(y.frame.dtypes), x.path
        assert repr(x.extras) == repr(y.extras), x.path  # skipped lines, notes, cpus…
    assert a.unparsed == b.unparsed
    assert a.inputs() == b.inputs()  # partial marking, skipped lines quoted


@pytest.mark.parametrize("name", ["scn-db-write-iops", "ptstalk-mariadb"])
def test_two_jobs_give_the_one_process_dataset_and_findings(name: str) -> None:
    one = analyze_path(ARCHIVES / name, jobs=1)
    two = analyze_path(ARCHIVES / name, jobs=2)
    _same_dataset(one.dataset, two.dataset)
    assert one.findings == two.findings
    assert findings_json.render(one) == findings_json.render(two)
    if name == "ptstalk-mariadb":  # the partial captures really went through the workers
        assert any(p["partial"] for p in two.dataset.inputs()["parsed"])


def test_workers_take_the_largest_tasks_first_and_are_fewer_than_the_tasks() -> None:
    tasks = [_workers.Task(f"t{i}", size, ()) for i, size in enumerate([1, 50, 7])]
    assert sorted(i for i, _pid in _workers.run(os.getpid, tasks, jobs=1)) == [0, 1, 2]  # all here
    # one worker beside this process: the worker is handed the largest, this process the next
    ran = dict(_workers.run(os.getpid, tasks, jobs=2))
    assert sorted(ran) == [0, 1, 2]
    assert ran[1] != os.getpid() and ran[2] == os.getpid()
    ran = dict(_workers.run(os.getpid, tasks[:2], jobs=8))  # 2 tasks: at most 1 worker
    assert len(set(ran.values())) <= 2
    assert not psutil.Process().children()  # every worker gone once the run is over


def test_workers_started_ahead_import_first_and_are_the_ones_that_parse() -> None:
    # the CLI starts them before it imports pandas and opens the archive: by the first file, the
    # worker has imported what it was told to (matplotlib: nothing in the task's module imports it)
    tasks = [_workers.Task("big", 50, ("matplotlib",)), _workers.Task("small", 1, ("matplotlib",))]
    with _workers.warmed(2, 0, ("matplotlib",)):
        ahead = [w.process.pid for w in _workers._warm]
        assert len(ahead) == 1
        ran = dict(_workers.run(jobs_workers.loaded, tasks, jobs=2))
        assert ran[0] == (ahead[0], True)  # the largest went to the worker started ahead
        assert not _workers._warm
    assert not psutil.Process().children()
    # one killed before the parse (the OOM killer, a user's kill): a new one takes its place
    with _workers.warmed(2, 0, ()):
        gone = _workers._warm[0].process
        gone.kill()
        gone.wait()
        ran = dict(_workers.run(os.getpid, [_workers.Task("a", 2, ()), _workers.Task("b", 1, ())], jobs=2))
        assert ran[0] not in (gone.pid, os.getpid())
    # more started than the parse wants (2 inputs: one worker), or a parse that wants none: each
    # extra one is told to exit when the parse starts, the rest when the block ends
    with _workers.warmed(4, 0, ()):
        started = [w.process for w in _workers._warm]
        assert len(started) == 3
        list(_workers.run(jobs_workers.loaded, tasks, jobs=4))
        assert all(p.poll() is not None for p in started)
    with _workers.warmed(2, 0, ()):
        idle = [w.process for w in _workers._warm]
    assert len(idle) == 1 and idle[0].poll() is not None and not psutil.Process().children()
    # a parse that turns out to want none (below the default's threshold) ends them before it reads
    with _workers.warmed(2, 0, ()):
        idle = [w.process for w in _workers._warm]
        with open_archive(ARCHIVES / "scn-db-write-iops") as archive:
            load_dataset(archive, jobs=None)
        assert len(idle) == 1 and idle[0].poll() is not None and not _workers._warm


def test_a_worker_s_imports_are_out_of_the_collector_s_sight_and_analyze_imports_no_scipy() -> None:
    # a full collection after each result walks only what the task made, not the modules imported
    with _workers.warmed(2, 0, ("perfkit.dataset",)):
        ran = dict(
            _workers.run(
                jobs_workers.frozen, [_workers.Task("a", 2, ("a",)), _workers.Task("b", 1, ("b",))], 2
            )
        )
    (worker, frozen), (parent, _) = ran[0], ran[1]
    assert worker != parent == os.getpid() and frozen > 10_000
    # scipy (0.7 s to import) only where a sweep is fitted or runs are compared
    code = (
        "import sys, perfkit.cli, perfkit.pipeline, perfkit.dataset, perfkit.analyzers.io, "
        "perfkit.reports.plots; print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_default_starts_workers_ahead_only_for_a_large_archive(tmp_path: Path) -> None:
    with _workers.warmed(None, _workers.AUTO_MIN_BYTES - 1, ()):
        assert not _workers._warm
    with _workers.warmed(None, _workers.AUTO_MIN_BYTES, ()):
        assert len(_workers._warm) == _workers.auto_jobs(_workers.AUTO_MIN_BYTES) - 1
    # the size is known before the archive is opened: a directory's files, a gzip's trailer
    (tmp_path / "run" / "h").mkdir(parents=True)
    (tmp_path / "run" / "h" / "a.out").write_bytes(b"x" * 3000)
    (tmp_path / "run" / "b.out").write_bytes(b"y" * 500)
    assert size_hint(tmp_path / "run") == 3500
    tgz = tmp_path / "run.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "run", arcname="run")
    raw = len(gzip.decompress(tgz.read_bytes()))
    assert raw >= 3500 + 3 * 512 and size_hint(tgz) == raw > tgz.stat().st_size
    assert size_hint(tmp_path / "run" / "b.out") == 500 and size_hint(tmp_path / "gone") == 0


def test_the_last_small_tasks_are_this_process_s(monkeypatch: pytest.MonkeyPatch) -> None:
    # the last 2 % of the input (by size) is read here: while this process is busy with s1, the
    # worker, done with the large task, is told to exit rather than handed s2
    monkeypatch.setenv(jobs_workers.PARENT_ENV, str(os.getpid()))
    tasks = [_workers.Task("big", 1000, (0,)), _workers.Task("s1", 5, (2.0,)), _workers.Task("s2", 3, (0,))]
    ran = dict(_workers.run(jobs_workers.pid_after, tasks, jobs=2))
    assert ran[0] != os.getpid() and ran[1] == ran[2] == os.getpid()


def test_a_large_result_comes_back_whole_and_an_error_is_raised_here() -> None:
    # 80 MB: many socket reads into the one buffer the array then lives in
    tasks = [_workers.Task("big", 2, (10_000_000,)), _workers.Task("small", 1, (3,))]
    got = dict(_workers.run(np.arange, tasks, jobs=2))
    assert np.array_equal(got[0], np.arange(10_000_000)) and list(got[1]) == [0, 1, 2]
    # what the function raised in the worker (the largest task) is raised here, its traceback the cause
    tasks = [_workers.Task("bad", 2, ("x7q",)), _workers.Task("good", 1, ("3",))]
    with pytest.raises(ValueError, match="x7q") as raised:
        list(_workers.run(int, tasks, jobs=2))
    assert isinstance(raised.value.__cause__, _workers.RemoteTraceback)
    assert not psutil.Process().children()


def test_plots_drawn_where_the_captures_are_parsed_are_the_reports_plots(tmp_path: Path) -> None:
    source = ARCHIVES / "scn-db-write-iops"
    early, late = analyze_path(source, jobs=2, plots=True), analyze_path(source, jobs=1)
    own = [c for c in early.dataset.captures if c.kind in ("iostat", "vmstat")]
    drawn = view_key(capture_plot)
    assert len(own) >= 2 and all(isinstance(c._views[drawn], Drawn) and c._views[drawn].plot for c in own)
    assert all(drawn not in c._views for c in late.dataset.captures)
    write_reports(early, tmp_path / "early")
    write_reports(late, tmp_path / "late")  # drawn now, in this process

    def pngs(out: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in (out / "plots").glob("*stat-*.png")}

    assert pngs(tmp_path / "early") == pngs(tmp_path / "late") != {}


@pytest.fixture
def bad_archive(tmp_path: Path) -> Path:
    """scn-db-write-iops with one vmstat row made unreadable: a ParseError naming its file and line."""
    root = tmp_path / "archive"
    shutil.copytree(ARCHIVES / "scn-db-write-iops", root)
    path = root / BAD_LINE
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace(" 22603992 ", " x7q ", 1)
    path.write_text("".join(lines))
    return root


def test_a_bad_file_reads_the_same_with_workers(bad_archive: Path) -> None:
    with open_archive(bad_archive) as archive:
        one, two = load_dataset(archive, jobs=1), load_dataset(archive, jobs=2)
    _same_dataset(one, two)
    [reason] = [u["reason"] for u in two.unparsed if u["path"] == BAD_LINE]
    assert reason.startswith(f"vmstat: {BAD_LINE}:6: not an integer: 'x7q'")
    outs = [CliRunner().invoke(main, ["analyze", str(bad_archive), "--jobs", j]) for j in ("1", "2")]
    assert outs[0].exit_code == outs[1].exit_code
    assert outs[0].output == outs[1].output
    assert f"not read: {BAD_LINE}: vmstat: {BAD_LINE}:6: not an integer" in outs[1].output


def _largest_file(root: Path) -> str:
    files = [p for p in root.rglob("*") if p.is_file() and p.name != "manifest.json"]
    return max(files, key=lambda p: p.stat().st_size).relative_to(root).as_posix()


def test_a_killed_worker_is_one_clear_error_naming_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset, "parse_file", jobs_workers.dies)
    monkeypatch.setenv(jobs_workers.PARENT_ENV, str(os.getpid()))
    source = ARCHIVES / "scn-db-write-iops"
    died = f"{_largest_file(source)}: the worker process reading it died (killed by SIGKILL"
    with pytest.raises(AnalysisError, match="^" + re.escape(died)):
        analyze_path(source, jobs=2)
    res = CliRunner().invoke(main, ["analyze", str(source), "--jobs", "2"])
    assert res.exit_code == 1
    assert f"Error: {died}" in res.output
    assert "Traceback" not in res.output
    assert not psutil.Process().children()


def test_ctrl_c_ends_the_workers() -> None:
    script = (
        "import os, sys; from perfkit import dataset; from tests import jobs_workers as t; "
        "os.environ[t.PARENT_ENV] = str(os.getpid()); dataset.parse_file = t.hangs; "
        "from perfkit.cli import main; "
        f"sys.argv = ['perfkit', 'analyze', {str(ARCHIVES / 'scn-db-write-iops')!r}, '--jobs', '2']; main()"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    parent = psutil.Process(proc.pid)

    def workers() -> list[psutil.Process]:
        try:
            return parent.children()
        except psutil.NoSuchProcess:
            return []

    deadline = time.monotonic() + 60  # a bound for a loaded machine, not a timed assertion
    while not workers() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = workers()  # --jobs 2: one worker beside the parent
    if len(seen) == 1:
        proc.send_signal(signal.SIGINT)
    else:
        proc.kill()
    _out, err = proc.communicate(timeout=60)
    assert len(seen) == 1, f"one worker expected, saw {len(seen)}: {err}"
    assert proc.returncode == 130, err
    assert err.strip() == "interrupted"
    for w in seen:
        assert not w.is_running() or w.status() == psutil.STATUS_ZOMBIE


def test_a_long_series_is_drawn_with_its_spikes_and_bounded() -> None:
    """The report of a long capture (issue 19: a 10-host day stays a few MB): a series past
    MAX_POINTS is drawn as each run's lowest and highest sample, so a one-second spike survives
    where every k-th sample would drop it. Plots only: the frame the rules read is untouched."""
    import numpy as np

    from perfkit.reports import plots

    n = 86_400  # a day at 1 s
    y = np.full(n, 10.0)
    y[40_001] = 99.0  # one second; every 87th sample would not draw it
    y[50_000:50_100] = np.nan
    x, drawn, note = plots._envelope(np.arange(n), y)
    assert len(drawn) <= plots.MAX_POINTS
    assert np.nanmax(drawn) == 99.0 and np.nanmin(drawn) == 10.0
    assert (np.diff(x) > 0).all()  # time order kept
    assert note == f"{n} samples drawn as the lowest and highest of every {int(np.ceil(n / 1000))}"
    assert plots._envelope(np.arange(10), np.arange(10.0))[2] == ""  # short: drawn as is


def test_task_keys_made_where_the_captures_are_parsed_give_the_rules_findings(tmp_path: Path) -> None:
    # which program and task each iotop / pidstat -t row is: made by the process that parsed the
    # capture (a worker for the larger one), and the rules that read it say what they say unkeyed
    for name in ("iotop/seed000-iotop-botq-actual.txt", "pidstat/sysstat-12.6-u-d-w-t-iso-oltp.txt"):
        shutil.copy(FIXTURES / name, tmp_path / Path(name).name)
    keyed = analyze_path(tmp_path, jobs=2)
    caps = [c for c in keyed.dataset.captures if c.kind in ("iotop", "pidstat")]
    assert sorted(c.kind for c in caps) == ["iotop", "pidstat"]
    assert all(view_key(task_keys) in c._views for c in caps)
    with open_archive(tmp_path) as archive:
        plain = load_dataset(archive, jobs=1)  # no views: each rule that asks makes them
    assert not any(c._views for c in plain.captures)
    unkeyed = analyze(plain, load_thresholds(None))
    assert unkeyed.findings == keyed.findings
    assert {"io.top-writer", "collector.overhead"} <= {f.rule for f in keyed.findings}


def _boom(cap: dataset.Capture) -> None:
    raise ZeroDivisionError(cap.path)


def test_a_view_that_raises_is_left_for_whoever_asks_for_it() -> None:
    with open_archive(ARCHIVES / "scn-db-write-iops") as archive:
        ds = load_dataset(archive, jobs=1, views={"vmstat": (_boom,)})  # the parse is not lost
    caps = ds.of("vmstat")
    assert caps and not any(c._views for c in caps)
    with pytest.raises(ZeroDivisionError, match="vmstat"):
        caps[0].view(_boom)  # raised in the rule (or plot) that asks: analyzers.attempt records it


def test_files_hashed_where_they_are_parsed_report_what_the_archive_check_reports(tmp_path: Path) -> None:
    # analyze leaves each capture's sha256 to the process that parses it (open_archive(digests=False));
    # an altered capture, and an altered file no parser reads, are the same problems as when
    # open_archive hashes them all itself
    root = tmp_path / "run"
    shutil.copytree(ARCHIVES / "scn-db-write-iops", root)
    vmstat = root / "hosts/localhost/t0004/vmstat.out"
    text = vmstat.read_text()
    vmstat.write_text(text.replace(" 0 ", " 9 ", 1))  # the same size, other numbers
    (root / "hosts/localhost/t0001/sa01").write_bytes(b"\x00binary sar file")
    manifest = json.loads((root / "manifest.json").read_text())
    sa = {"kind": "sa", "host": "localhost", "path": "hosts/localhost/t0001/sa01", "status": "ok"}
    gone = {"kind": "vmstat", "host": "localhost", "path": "hosts/localhost/t0009/vmstat.out", "status": "ok"}
    # in the manifest's order, among the other problems: one absent before and after, one path twice
    manifest["captures"][:0] = [gone | {"bytes": 5}]
    manifest["captures"] += [sa | {"bytes": 16, "sha256": "0" * 64}, gone | {"bytes": 5}, dict(sa)]
    manifest["captures"][-1]["sha256"] = "1" * 64
    (root / "manifest.json").write_text(json.dumps(manifest))
    with open_archive(root) as archive:
        eager = archive.problems
    assert [(p["path"].rsplit("/", 2)[1:], p["reason"][:6]) for p in eager] == [
        (["t0009", "vmstat.out"], "listed"),
        (["t0004", "vmstat.out"], "sha256"),
        (["t0001", "sa01"], "sha256"),
        (["t0009", "vmstat.out"], "listed"),
        (["t0001", "sa01"], "sha256"),
    ]
    for jobs in (1, 2):
        assert analyze_path(root, jobs=jobs).dataset.problems == eager, jobs
    with open_archive(root, digests=False) as archive:
        assert [p["path"] for p in archive.problems] == ["hosts/localhost/t0009/vmstat.out"] * 2
        assert len(archive.unchecked) == len(manifest["captures"]) - 2


def test_results_mapped_from_workers_hold_no_descriptor_and_go_with_their_arrays() -> None:
    # each result's arrays are a mapping of the worker's memfd: held as long as the arrays, without
    # one open file each (mmap.mmap kept a descriptor per mapping: 1,024 captures ran out of them)
    def mapped() -> int:
        return Path("/proc/self/maps").read_text().count("perfkit-result")

    a, b = socket.socketpair()
    out, into = Connection(a.detach()), Connection(b.detach())
    gc.collect()  # results of earlier tests in this process, not held any more: unmapped
    fds, before = len(os.listdir("/proc/self/fd")), mapped()
    kept = []
    for i in range(40):
        frame = pd.DataFrame({"x": np.arange(1000.0) + i, "s": pd.array(["a", None] * 500, dtype="string")})
        _workers.send_result(out, i, frame)
        tag, got = _workers.receive_result(into)
        assert tag == i and got.equals(frame)
        kept.append(got)
    assert len(os.listdir("/proc/self/fd")) == fds
    assert mapped() == before + 40
    kept.clear()
    del got
    gc.collect()
    assert mapped() == before
    _workers.send_result(out, 41, np.array([], dtype=float))  # buffers of no byte: no memfd at all
    tag, got = _workers.receive_result(into)
    assert tag == 41 and got.dtype == float and len(got) == 0
    out.close()
    into.close()


def test_a_result_that_cannot_be_sent_is_the_task_s_error_not_a_dead_worker() -> None:
    tasks = [_workers.Task("first", 2, ("x",)), _workers.Task("second", 1, ("y",))]
    with pytest.raises(TypeError, match="cannot pickle this result"):
        list(_workers.run(jobs_workers.unpicklable, tasks, jobs=2))
    assert not psutil.Process().children()


def test_without_memfd_results_come_back_through_an_unlinked_temporary_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # macOS and the BSDs have no memfd_create: the same mapping, of a file removed once opened
    monkeypatch.delattr(os, "memfd_create")
    a, b = socket.socketpair()
    out, into = Connection(a.detach()), Connection(b.detach())
    frame = pd.DataFrame({"x": np.arange(5000.0), "s": pd.array(["a", "bb"] * 2500, dtype="string")})
    _workers.send_result(out, 7, frame)
    tag, got = _workers.receive_result(into)
    assert tag == 7 and got.equals(frame)
    maps = [line for line in Path("/proc/self/maps").read_text().splitlines() if "perfkit-result-" in line]
    assert maps and all(line.endswith("(deleted)") for line in maps)
    out.close()
    into.close()

"""reports/use.py: USE rows, the aligned timeline, tier RTs and the report's resource/host layout.

Archives are built from real parser fixtures (tests/fixtures/<kind>/) with a manifest the way
`perfkit run` writes one; expected figures are computed by hand from the raw lines (see comments).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from perfkit.analyzers import sweep as sweep_model
from perfkit.archive import open_archive
from perfkit.config import load_thresholds
from perfkit.dataset import Capture, Dataset, load_dataset
from perfkit.findings import Finding
from perfkit.parsers import top as top_parser
from perfkit.reports import use

from .conftest import FIXTURES, ROOT

STEP_START = "2026-11-22T13:46:58.000Z"  # the vmstat fixture's rows are 13:46:59 .. 13:47:02 UTC


def _rec(path: str, kind: str, host: str, **extra) -> dict:
    return {
        "id": Path(path).stem,
        "host": host,
        "kind": kind,
        "path": path,
        "step": "t0004",
        "started_at": STEP_START,
        "ended_at": "2026-11-22T13:47:04.000Z",
        "clock_offset_s": 0.0,
        "status": "ok",
        **extra,
    }


def make_run_archive(root: Path, *, host: str = "db1", top_text: str | None = None) -> Path:
    """A one-step `perfkit run`-style archive: sysbench at 4 threads, host captures of `host`, and a
    second host `db2` whose clock runs 2 s ahead (clock_offset_s = 2.0)."""
    files = {
        "hosts/h1/t0004/vmstat.out": ("vmstat", FIXTURES / "vmstat" / "procps-4.0.2-t.txt", host, {}),
        "hosts/h1/t0004/mpstat.out": (
            "mpstat",
            FIXTURES / "mpstat" / "sysstat-12.6-P-ALL-iso.txt",
            host,
            {},
        ),
        "hosts/h1/t0004/nproc.out": ("nproc", FIXTURES / "nproc" / "coreutils-9.1.txt", host, {}),
        "hosts/h1/t0004/ss.out": ("ss", FIXTURES / "ss" / "iproute2-6.1-loop-timewait.txt", host, {}),
        "hosts/h1/t0004/iostat.out": (
            "iostat",
            FIXTURES / "iostat" / "sysstat-12.6-x-d-t-iso.txt",
            host,
            {},
        ),
        "hosts/h2/t0004/vmstat.out": (
            "vmstat",
            FIXTURES / "vmstat" / "procps-4.0.2-t.txt",
            "db2",
            {"clock_offset_s": 2.0},
        ),
        "load/t0004/sysbench.out": (
            "sysbench",
            FIXTURES / "sysbench" / "1.0.20-rw-t4-summary.txt",
            "client",
            {"threads": 4},
        ),
    }
    records = []
    for rel, (kind, src, h, extra) in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, root / rel)
        records.append(_rec(rel, kind, h, **extra))
    if top_text is not None:
        rel = "hosts/h1/t0004/top.out"
        (root / rel).write_text(top_text)
        records.append(_rec(rel, "top", host))
    manifest = {
        "format_version": 1,
        "perfkit_version": "0.1.0",
        "run_id": "test",
        "status": "complete",
        "sweep": {
            "tool": "sysbench",
            "steps": [
                {
                    "name": "t0004",
                    "threads": 4,
                    "status": "ok",
                    "started_at": STEP_START,
                    "ended_at": "2026-11-22T13:47:04.000Z",
                }
            ],
            "stopped_because": "every planned step ran",
        },
        "captures": records,
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def _load(root: Path) -> tuple[Dataset, object]:
    with open_archive(root) as ar:
        ds = load_dataset(ar)
    return ds, sweep_model.build(ds, load_thresholds(None))


@pytest.fixture()
def run(tmp_path: Path) -> tuple[Dataset, object]:
    return _load(make_run_archive(tmp_path / "run"))


def _one(rows: list[use.UseRow], **kw) -> use.UseRow:
    hits = [r for r in rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0]


def test_cpu_rows_prefer_mpstat_and_divide_the_run_queue_by_nproc(run) -> None:
    ds, _ = run
    rows = use.use_rows(ds)
    # mpstat `all` %idle 49.75 and 43.65, %iowait 0.00 and 0.51 -> busy 50.25, 55.84: mean 53.045, max
    # 55.84 (iowait is idle CPU, not CPU work)
    busy = _one(rows, resource="cpu", host="db1", metric=use.BUSY)
    assert (busy.mean, busy.max, busy.samples) == (pytest.approx(53.045), pytest.approx(55.84), 2)
    assert busy.source.endswith("mpstat.out") and busy.step == "t0004" and busy.threads == 4
    # per CPU busy: cpu0 100 then 39 (idle 0, 61) -> mean 69.5; cpu1 0 then 73.2 (idle 25.77, iowait
    # 1.03) -> 36.6: cpu 0 hottest
    hot = _one(rows, resource="cpu", host="db1", metric=use.HOTTEST)
    assert hot.instance == "cpu 0" and hot.mean == pytest.approx(69.5) and hot.max == 100
    # vmstat r 2, 3, 2 after the since-boot row, nproc 2 -> 1.0, 1.5, 1.0: mean 7/6, max 1.5
    rq = _one(rows, resource="cpu", host="db1", metric=use.RUNQ)
    assert (rq.mean, rq.max, rq.unit) == (pytest.approx(7 / 6), 1.5, "ratio")
    # db2 has only vmstat: busy = 100 - id - wa for id 55, 56, 55 and wa 22, 20, 20 -> 23, 24, 25 (us + sy
    # + st, give or take vmstat's rounding); no CPU count there
    busy2 = _one(rows, resource="cpu", host="db2", metric=use.BUSY)
    assert busy2.mean == pytest.approx(24) and busy2.max == 25 and busy2.source.endswith("vmstat.out")
    raw = _one(rows, resource="cpu", host="db2", check="saturation")
    assert raw.metric == use.RUNQ_RAW and raw.mean == pytest.approx(7 / 3) and raw.unit == "tasks"


def test_a_host_waiting_on_its_disk_is_not_counted_busy() -> None:
    """The db-write-iops scenario (mariadbd held at 40 write IOPS by its cgroup): vmstat's `wa` is 37-46 %
    of a step with the CPUs idle otherwise. Counting iowait as busy made the host 95-100 % busy in the
    report beside an idle disk (`100 - id`); busy is `100 - id - wa`, as the rules count idle."""
    path = FIXTURES / "limits" / "scn-db-write-iops"
    with open_archive(path) as a:
        rows = use.use_rows(load_dataset(a))
    busy = _one(rows, resource="cpu", host="localhost", metric=use.BUSY, step="t0001")
    # the file read without perfkit: us sy id wa st gu columns, after the since-boot row
    lines = (path / "hosts/localhost/t0001/vmstat.out").read_text().splitlines()[3:]
    fields = [line.split() for line in lines]
    by_hand = [100 - int(f[14]) - int(f[15]) for f in fields]  # 63, 54, 54, 54, 54
    wa = [int(f[15]) for f in fields]
    assert min(wa) >= 37  # the capture does wait on the disk: the test means something
    assert busy.mean == pytest.approx(sum(by_hand) / len(by_hand)) and busy.max == max(by_hand)
    assert busy.max < 70  # 100 - id alone: 95-100


def test_memory_disk_and_network_rows(run) -> None:
    ds, _ = run
    rows = use.use_rows(ds)
    si = _one(rows, resource="mem", host="db1", metric="swap in")
    assert (si.mean, si.max, si.samples) == (0, 0, 3)  # vmstat si column: 0 in every non-boot row
    # ss: the loop's `timewait: N` lines, averaged (computed from the raw file, not the parser)
    raw = (FIXTURES / "ss" / "iproute2-6.1-loop-timewait.txt").read_text()
    tw = [int(x) for x in re.findall(r"^timewait: (\d+)$", raw, re.M)]
    row = _one(rows, resource="net", host="db1", metric="TIME_WAIT sockets")
    assert row.mean == pytest.approx(sum(tw) / len(tw)) and row.max == max(tw) and row.samples == len(tw)
    util = _one(rows, resource="disk", host="db1", instance="vda", metric="%util")
    frame = next(c.frame for c in ds.of("iostat"))
    kept = frame[~frame["since_boot"]]
    assert util.samples == len(kept) and util.max == kept["util_pct"].max()
    assert {r.metric for r in rows if r.resource == "disk"} == {"%util", "aqu-sz", "await"}


def test_foreign_archive_rows_have_no_host_or_step() -> None:
    with open_archive(ROOT / "examples" / "seed000-tidb-write-only.tar.gz") as ar:
        ds = load_dataset(ar)
    rows = use.use_rows(ds)
    util = _one(rows, resource="disk", instance="sda", metric="%util")
    assert util.host is None and util.step is None and util.threads is None
    tables = use.use_tables(rows)
    disk = next(t for t in tables if t.resource == "disk")
    assert disk.columns == ["whole capture"] and disk.rows[0]["check"] == "utilization"


def test_run_queue_per_cpu_from_an_mpstat_banner(tmp_path: Path) -> None:
    # no nproc, and mpstat without -P ALL lists no CPU: the banner's `(2 CPU)` is the count
    shutil.copy(FIXTURES / "mpstat" / "sysstat-12.6-C-all-cpu-bound.txt", tmp_path / "mpstat.out")
    shutil.copy(FIXTURES / "mpstat" / "same-window" / "vmstat-procps-4.0.2-t.txt", tmp_path / "vmstat.out")
    ds, _ = _load(tmp_path)
    rq = _one(use.use_rows(ds), resource="cpu", check="saturation")
    assert (rq.metric, rq.unit, rq.mean, rq.max, rq.samples) == (use.RUNQ, "ratio", 4.5, 4.5, 4)  # r 9 / 2


def test_use_tables_put_steps_in_thread_order() -> None:
    def row(step: str, threads: int, mean: float) -> use.UseRow:
        return use.UseRow("cpu", "h", "all", "utilization", use.BUSY, "%", step, threads, mean, mean, 1, "x")

    tables = use.use_tables([row("t0016", 16, 90.0), row("t0002", 2, 20.0), row("t0008", 8, 60.0)])
    assert tables[0].columns == ["2 threads (t0002)", "8 threads (t0008)", "16 threads (t0016)"]
    assert tables[0].rows[0]["cells"] == [(20.0, 20.0), (60.0, 60.0), (90.0, 90.0)]
    assert use.fmt_cell((53.3, 56.35)) == "53.3 (56.4)" and use.fmt_cell(None) == "–"


def test_timeline_aligns_load_and_hosts_on_the_controller_clock(run) -> None:
    ds, sweep = run
    tl = use.timeline(ds, sweep)
    # sysbench `[ 1s ]` .. `[ 5s ]` -> started_at + 1 s .. + 5 s
    start = pd.Timestamp(STEP_START)
    assert list(tl.load["timestamp"]) == [start + pd.Timedelta(seconds=s) for s in range(1, 6)]
    assert list(tl.load["tps"])[:2] == [920.28, 829.25] and set(tl.load["threads"]) == {4}
    assert [(s.name, s.threads, s.start) for s in tl.steps] == [("t0004", 4, start)]
    cpu = tl.series[tl.series["panel"] == "cpu"]
    # db1 uses mpstat (06:56 on its own date); db2's vmstat 13:47:00 is 13:46:58 on the controller
    db2 = cpu[cpu["label"] == "db2"]
    assert db2["timestamp"].iloc[0] == pd.Timestamp("2026-11-22T13:46:58Z")
    assert list(db2["value"]) == [23, 24, 25]  # 100 - id - wa: the host waits on its disk, not busy
    assert set(tl.series.loc[tl.series["panel"] == "disk", "label"]) == {"db1:vda"}
    summary = tl.summary()
    assert summary["steps"] == [
        {
            "name": "t0004",
            "threads": 4,
            "start": "2026-11-22T13:46:58.000Z",
            "end": "2026-11-22T13:47:04.000Z",
        }
    ]
    assert summary["load_intervals"] == 5 and "cpu:db2" in summary["series"]
    # the span over the load and every host series: db1's mpstat runs past the load's last second
    stamps = pd.concat([tl.load["timestamp"], tl.series["timestamp"]])
    assert (summary["start"], summary["end"]) == (use._iso(stamps.min()), use._iso(stamps.max()))
    assert summary["end"] > "2026-11-22T13:47:04"
    # hosts only (no load intervals): the span is the hosts'
    hosts_only = use.Timeline(tl.load.iloc[0:0], tl.series, tl.steps).summary()
    assert hosts_only["start"] == use._iso(tl.series["timestamp"].min())


def test_timeline_is_empty_without_timestamps() -> None:
    with open_archive(ROOT / "examples" / "seed000-tidb-write-only.tar.gz") as ar:
        ds = load_dataset(ar)
    tl = use.timeline(ds, sweep_model.build(ds, load_thresholds(None)))
    assert tl.empty and tl.steps == [] and tl.summary()["start"] is None


def test_tier_rt_from_the_sweep_and_tiers_captures(run) -> None:
    ds, sweep = run
    # sysbench summary `avg: ...` is the client tier; no DB sampler here, so no server tier
    base = use.tier_rt(ds, sweep)
    assert list(base["tier"]) == ["client (avg)"] and list(base["threads"]) == [4]
    frame = pd.DataFrame({"threads": [4, 4, 8], "tier": ["tikv", "tikv", "tikv"], "rt_ms": [1.0, 3.0, 5.0]})
    ds.captures.append(Capture(path="tiers.csv", kind="tiers", host=None, step=None, frame=frame))
    out = use.tier_rt(ds, sweep)
    tikv = out[out["tier"] == "tikv"]
    assert list(tikv["threads"]) == [4, 8] and list(tikv["rt_ms"]) == [2.0, 5.0]  # (1 + 3) / 2


def test_top_processes_from_top(tmp_path: Path) -> None:
    text = (FIXTURES / "top" / "procps-4.0.2-w512.txt").read_text()
    ds, _ = _load(make_run_archive(tmp_path / "r", top_text=text))
    procs = use.top_processes(ds)
    # first screen: pid 5 `sh` at 93.8 %CPU is the busiest
    first = procs[0]
    assert first.host == "db1" and first.pid == 5 and first.command == "sh" and first.cpu_pct_max >= 93.8


def test_top_processes_from_top_h_leave_out_a_leader_row_that_holds_its_process() -> None:
    # the hot-rows scenario's mariadbd under top -H (procps-ng 4.0.2): its idle main thread (11292)
    # printed at 99.9 % in 8 of 9 screens was the busiest "thread"; what it keeps is none
    df = top_parser.parse(FIXTURES / "top" / "procps-4.0.2-H-leader-holds-the-process.txt", host="db1")
    cap = Capture("hosts/db1/t0016/top.out", "top", "db1", "t0016", df)
    procs = use.top_processes(Dataset("x", None, [cap]))
    assert len(procs) == 5 and 11292 not in {p.pid for p in procs}
    assert all(p.command == "mariadbd" and p.cpu_pct_max < 20 for p in procs)


def _finding(rule: str, hosts: list[str]) -> Finding:
    return Finding(rule, "warning", "t", "s", {}, "e", [], hosts=hosts)


def test_sections_group_findings_by_resource_then_host(run) -> None:
    ds, _ = run
    findings = [
        _finding("disk.saturated", ["db1"]),
        _finding("sweep.knee", []),
        _finding("cpu.saturated", ["db2"]),
        _finding("net.port-exhaustion", ["db1", "db2"]),
    ]
    secs = use.sections(findings, use.use_rows(ds), use.top_processes(ds))
    assert [s.resource for s in secs] == ["sweep", "cpu", "mem", "disk", "net"]
    disk = next(s for s in secs if s.resource == "disk")
    assert [(b.host, [i for i, _ in b.findings]) for b in disk.blocks] == [("db1", [0])]
    cpu = next(s for s in secs if s.resource == "cpu")
    assert [(b.host, bool(b.table), [i for i, _ in b.findings]) for b in cpu.blocks] == [
        ("db1", True, []),
        ("db2", True, [2]),
    ]
    net = next(s for s in secs if s.resource == "net")
    assert [b.host for b in net.blocks] == ["db1", "db1, db2"]
    assert use.resource_of("collector.overhead") == "collector" and use.resource_of("x.y") == "other"

"""`perfkit run --client-host a,b`: several load hosts stepping together (issue 19).

Fast tests drive the real start gate and output streaming on this machine under two host names with a
scripted sysbench (a shell printing sysbench 1.0's report), then read the archive back through the
sweep model. The lab test runs real sysbench from two "client hosts" (two sshd on loopback) against a
scratch database of the lab MariaDB, and kills one client's sysbench mid-step.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from perfkit.analyzers import sweep as sweep_model
from perfkit.collectors import _load, driver, plan
from perfkit.collectors._load import LoadHost, LoadResult
from perfkit.collectors.load_sysbench import judge
from perfkit.pipeline import analyze_path, write_reports
from perfkit.transport import LOCAL, connect

from .conftest import PERFKIT
from .sshd import sshd_factory  # noqa: F401 (fixtures)
from .test_run_robustness import scratch  # noqa: F401 - the fixture: a throwaway database and users
from .test_sweep_plan import invoke, planned  # noqa: F401 - the fixture: the plans the CLI makes

# ---------------------------------------------------------------- the split


def test_threads_are_split_evenly_the_remainder_to_the_first_hosts() -> None:
    assert driver.split_threads(10, 3) == (4, 3, 3)
    assert driver.split_threads(8, 2) == (4, 4)
    assert driver.split_threads(2, 2) == (1, 1)
    assert driver.split_threads(5, 1) == (5,)
    with pytest.raises(plan.PlanError, match="1 thread cannot be split across 2 load hosts"):
        driver.split_threads(1, 2)


@pytest.mark.parametrize(
    ("args", "option"),
    [(["--threads", "4,1"], "--threads"), (["--adaptive", "--start-threads", "2"], "--start-threads")],
)
def test_a_step_with_fewer_threads_than_load_hosts_is_a_usage_error(
    planned: list,  # noqa: F811
    tmp_path: Path,
    args: list[str],
    option: str,
) -> None:
    code, out = invoke("sysbench", "--client-host", "c1,c2,c3", *args, "-o", str(tmp_path / "never"))
    error = out.strip().splitlines()[-1]
    assert code == 2 and option in error and "cannot be split across 3 load hosts" in error, out
    assert planned == []


def test_the_help_says_how_threads_are_split() -> None:
    _code, out = invoke("sysbench", "--help")
    assert "split evenly across them, the remainder to the first ones" in " ".join(out.split())


# ---------------------------------------------------------------- the summing


def sysbench_text(threads: int, tps: list[float], p95: float, hist: list[tuple[float, int]] | None) -> str:
    """sysbench 1.0.20's output for a run with these per-second TPS (and latency histogram)."""
    lines = [
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)",
        "",
        "Running the test with following options:",
        f"Number of threads: {threads}",
        "Report intermediate results every 1 second(s)",
        "",
        "Threads started!",
        "",
    ]
    for i, x in enumerate(tps, 1):
        lines.append(
            f"[ {i}s ] thds: {threads} tps: {x:.2f} qps: {x:.2f} (r/w/o: {x:.2f}/0.00/0.00) "
            f"lat (ms,95%): {p95 + i / 10:.2f} err/s: 0.00 reconn/s: 0.00"
        )
    if hist:
        lines.append("Latency histogram (values are in milliseconds)")
        lines.append("       value  ------------- distribution ------------- count")
        lines += [f"{ms:12.3f} |*                                        {n}" for ms, n in hist]
        lines.append(" ")
    n, secs = round(sum(tps)), len(tps)
    lines += [
        "SQL statistics:",
        f"    transactions:                        {n} ({n / secs:.2f} per sec.)",
        f"    queries:                             {n} ({n / secs:.2f} per sec.)",
        "    ignored errors:                      0      (0.00 per sec.)",
        "    reconnects:                          0      (0.00 per sec.)",
        "",
        "General statistics:",
        f"    total time:                          {secs:.4f}s",
        f"    total number of events:              {n}",
        "",
        "Latency (ms):",
        "         min:                                    1.00",
        f"         avg:                                    {p95 / 2:.2f}",
        "         max:                                   50.00",
        f"         95th percentile:                        {p95:.2f}",
        f"         sum:                                 {n * p95 / 2:.2f}",
        "",
    ]
    return "\n".join(lines) + "\n"


class ScriptedSysbench:
    """A load runner on a real LoadHost (this machine under a name of its own) whose tool is `sh`
    printing sysbench's report: the start gate, the streaming and the judging are perfkit's own."""

    tool = kind = "sysbench"
    version = "sysbench 1.0.20 (scripted)"

    def __init__(
        self, host: LoadHost, base: float, *, p95: float = 4.0, hist: bool = False, die: bool = False
    ):
        self.host, self.base, self.p95, self.hist, self.die = host, base, p95, hist, die

    def run(
        self,
        threads: int,
        time_s: int,
        out: Path,
        *,
        stop: object | None = None,
        gate: _load.StartGate | None = None,
    ) -> LoadResult:
        tps = [self.base * threads + 7 * i for i in range(time_s)]  # no two seconds alike
        hist = [(self.p95 / 2, 90 * threads), (self.p95 * 3, 10 * threads)] if self.hist else None
        text = sysbench_text(threads, tps, self.p95, hist)
        if self.die:  # a few lines out, then killed (SIGKILL, as the lab test's kill -9)
            script = 'printf "%s\\n" "$1" | head -10; sleep 0.3; kill -9 $$'
        else:  # its report a second at a time, slower than the dying one (ended with the step)
            script = 'printf "%s" "$1" | head -9; sleep 0.6; printf "%s" "$1" | tail -n +10'
        argv = ["sh", "-c", script, "sysbench", text]
        res = self.host.stream(
            argv, out, limit_s=time_s + 30, stop=stop, shown="sysbench (scripted)", gate=gate
        )
        judge(res, out, time_s)
        return res

    def close(self) -> None:
        self.host.close()


def two_hosts(tmp_path: Path, *runners: tuple[str, dict], threads: tuple[int, ...] = (3, 8), **kw: object):
    """A sweep from this machine under each name, nothing captured."""
    clients = [
        ScriptedSysbench(LoadHost(connect(dataclasses.replace(LOCAL, name=name))), **opts)
        for name, opts in runners
    ]
    try:
        return driver.run_sweep(
            clients,
            driver.Plan(threads=threads, time_s=5, cooldown_max_s=0, **kw),
            tmp_path / "run",
            hosts=[],
            opts=plan.capture_options("minimal"),
            plan_record={"load_host": ", ".join(n for n, _ in runners), "threads_split": driver.SPLIT_RULE},
        )
    finally:
        for c in clients:
            c.close()


def summary_tps(path: Path) -> float:
    return float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", path.read_text())[1])


def test_two_load_hosts_step_together_and_their_throughputs_add(tmp_path: Path) -> None:
    res = two_hosts(tmp_path, ("a", {"base": 100.0}), ("b", {"base": 50.0, "p95": 9.0}))
    assert res.manifest["status"] == "complete", res.manifest["reason"]
    root = res.path
    for st in res.steps:
        assert st.status == "ok" and [c["host"] for c in st.clients] == ["a", "b"]
        assert [c["threads"] for c in st.clients] == list(driver.split_threads(st.threads, 2))
        assert st.start_skew_s is not None and 0 <= st.start_skew_s < 0.5
        outs = [root / f"load/{st.name}/sysbench@{h}.out" for h in ("a", "b")]
        assert st.tps == pytest.approx(sum(summary_tps(p) for p in outs))
        assert st.lat_pct_ms == 9.0  # the worst host's p95: no histograms to merge
    steps = json.loads((root / "manifest.json").read_text())["sweep"]["steps"]
    assert steps[1]["clients"][0]["threads"] == 4 and steps[0]["start_skew_s"] == res.steps[0].start_skew_s
    lines = plan.step_lines(res)
    assert (
        lines[1].split()[:3] == ["t0003", "3", "(2+1)"] and "split evenly across the load hosts" in lines[-3]
    )

    # the model: one level a step, each second the sum of both hosts' seconds on one clock
    analysis = analyze_path(root)
    sweep = analysis.sweep
    assert sweep is not None and [s.threads for s in sweep.steps] == [3, 8]
    files = write_reports(analysis, tmp_path / "report")
    md = " ".join(next(f for f in files if f.name == "report.md").read_text().split())
    assert "Load from a, b: each step's threads split evenly across the load hosts, the remainder" in md
    records = {r["path"]: r for r in res.manifest["captures"]}
    for s in sweep.steps:
        assert [c["host"] for c in s.clients] == ["a", "b"]
        summed = s.all_intervals.set_index("time_s")["tps"].to_dict()
        assert summed == pytest.approx(one_clock(root, [records[c["source"]] for c in s.clients]))
        assert len(summed) >= 4 and s.tps == pytest.approx(float(s.intervals["tps"].mean()))
        assert s.lat_pct_ms == 9.0 and s.lat_pct_from.startswith("the worst load host's")
        assert s.to_dict()["clients"][1]["lat_pct_ms"] == 9.0


def parsed_seconds(path: Path) -> dict[float, float]:
    return {
        float(m[1]): float(m[2])
        for m in re.finditer(r"\[ (\d+)s \] thds: \d+ tps: ([\d.]+)", path.read_text())
    }


def one_clock(root: Path, records: list[dict]) -> dict[float, float]:
    """Second -> the hosts' summed TPS, from their own outputs: each second placed by its run's
    recorded start (to the nearest second), only seconds every host reported."""
    starts = [datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")).timestamp() for r in records]
    shifted = [
        {t + math.floor(s - min(starts) + 0.5): x for t, x in parsed_seconds(root / r["path"]).items()}
        for r, s in zip(records, starts, strict=True)
    ]
    common = set.intersection(*(set(d) for d in shifted))
    return {t: sum(d[t] for d in shifted) for t in sorted(common)}


def test_histograms_are_merged_when_every_host_printed_one() -> None:
    # a: 90 fast, 10 slow (p95 slow); b: 1000 fast: merged p95 is fast, the worst host's would be slow
    a = {
        "tps": 10.0,
        "transactions": 100,
        "lat_avg_ms": 3.0,
        "lat_p95_ms": 30.0,
        "histogram": [[2.0, 90], [30.0, 10]],
    }
    b = {"tps": 100.0, "transactions": 1000, "lat_avg_ms": 2.0, "lat_p95_ms": 2.0, "histogram": [[2.0, 1000]]}
    both = sweep_model.combine_clients([a, b], 95)
    assert both["tps"] == 110.0 and both["transactions"] == 1100
    assert both["lat_avg_ms"] == pytest.approx((100 * 3.0 + 1000 * 2.0) / 1100)  # weighted: exact
    assert both["lat_p95_ms"] == 2.0 and both["lat_pct_from"] == "the load hosts' histograms, merged"
    worst = sweep_model.combine_clients([{**a, "histogram": None}, b], 95)
    assert worst["lat_p95_ms"] == 30.0 and worst["lat_pct_from"].startswith("the worst load host's")
    assert "tps" not in sweep_model.combine_clients(
        [a, {"transactions": 5}], 95
    )  # a partial sum is no step's


def test_one_host_failing_mid_step_fails_the_step_naming_it_and_keeps_the_others_output(
    tmp_path: Path,
) -> None:
    res = two_hosts(tmp_path, ("a", {"base": 100.0}), ("b", {"base": 50.0, "die": True}), threads=(2,))
    (st,) = res.steps
    assert st.status == "failed" and st.reason.startswith("load host b: exit 137"), st.reason
    assert [(c["host"], c["status"]) for c in st.clients] == [("a", "interrupted"), ("b", "failed")]
    assert st.clients[0]["reason"] == "ended with the step: the load host b failed"
    recs = {r["host"]: r for r in res.manifest["captures"] if r["kind"] == "sysbench"}
    assert recs["b"]["status"] == "failed" and recs["a"]["status"] == "interrupted"
    for host in ("a", "b"):  # what both printed is in the archive
        assert "[ 1s ] thds: 1" in (res.path / recs[host]["path"]).read_text()
    assert res.manifest["status"] == "failed" and "t0002" in res.manifest["reason"]


def test_a_host_that_cannot_start_releases_the_others_at_the_gate(tmp_path: Path) -> None:
    class Unreachable(ScriptedSysbench):
        def run(self, *args: object, **kw: object) -> LoadResult:
            raise OSError("no route to host")

    clients = [
        ScriptedSysbench(LoadHost(connect(dataclasses.replace(LOCAL, name="a"))), 10.0),
        Unreachable(LoadHost(connect(dataclasses.replace(LOCAL, name="b"))), 10.0),
    ]
    t0 = time.monotonic()
    res = driver.run_sweep(
        clients,
        driver.Plan(threads=(2,), time_s=3, cooldown_max_s=0),
        tmp_path / "run",
        hosts=[],
        opts=plan.capture_options("minimal"),
    )
    (st,) = res.steps
    assert time.monotonic() - t0 < 10  # not the gate's 120 s
    assert st.status == "failed" and "load host b: no route to host" in st.reason
    assert st.reason == "load host b: no route to host"  # a was not at fault
    assert (
        st.clients[0]["status"] == "interrupted"
        and "another load host could not start" in st.clients[0]["reason"]
    )
    for c in clients:
        c.close()


# ---------------------------------------------------------------- the lab: two sshd, real sysbench


def sysbench_pids(pattern: str) -> list[tuple[int, str]]:
    """sysbench processes themselves (not the `timeout` above them) whose command line matches."""
    out = subprocess.run(["pgrep", "-af", "sysbench"], capture_output=True, text=True).stdout
    lines = [line.split(maxsplit=2) for line in out.splitlines()]
    return [
        (int(f[0]), f[2])
        for f in lines
        if len(f) == 3 and f[1].endswith("sysbench") and re.search(pattern, f[2])
    ]


@pytest.mark.lab
def test_two_client_hosts_drive_sysbench_together(sshd_factory, scratch, tmp_path: Path) -> None:  # noqa: F811
    db, user = scratch
    password = "pw-" + uuid.uuid4().hex
    name = user(password)
    a, b = sshd_factory(), sshd_factory()
    b.authorized_keys.write_text(Path(f"{a.client_key}.pub").read_text())  # one identity logs in to both
    known = tmp_path / "known_hosts"
    known.write_text(a.known_hosts_line() + "\n" + b.known_hosts_line() + "\n")
    hosts = [f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"]
    out = tmp_path / "sweep"
    args = ["run", "sysbench", "--client-host", ",".join(f"root@{h}" for h in hosts)]
    args += ["-i", str(a.client_key), "--known-hosts", str(known), "--mysql-user", name, "--mysql-db", db]
    args += ["--workload", "oltp_point_select", "--tables", "1", "--table-size", "1000", "--prepare"]
    args += ["--cleanup", "--threads", "2,3", "--time", "6", "--cooldown-max", "0", "--profile", "minimal"]
    args += ["--no-report", "-o", str(out)]

    # In the 3-thread step (2 + 1), kill the second host's sysbench (the one run with --threads=1) 2 s in.
    killed: list[str] = []

    def killer() -> None:
        end = time.monotonic() + 120
        while time.monotonic() < end and not killed:
            if sysbench_pids(r"--threads=2 .* run$"):
                time.sleep(2)
                for pid, line in sysbench_pids(r"--threads=1 .* run$"):
                    os.kill(pid, 9)
                    killed.append(line)
            time.sleep(0.05)

    watcher = threading.Thread(target=killer, daemon=True)
    watcher.start()
    proc = subprocess.run(
        [*PERFKIT, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PERFKIT_MYSQL_PASSWORD": password},
        timeout=240,
    )
    watcher.join(5)
    assert killed, proc.stderr[-2000:]
    m = json.loads((out / "manifest.json").read_text())
    steps = {s["name"]: s for s in m["sweep"]["steps"]}
    ok, cut = steps["t0002"], steps["t0003"]

    # the 2-thread step: one thread on each, started together, its TPS the sum of their own outputs
    assert ok["status"] == "ok" and [(c["host"], c["threads"]) for c in ok["clients"]] == [
        (hosts[0], 1),
        (hosts[1], 1),
    ]
    assert ok["start_skew_s"] is not None and 0 <= ok["start_skew_s"] < 1
    loads = {(r["step"], r["host"]): r for r in m["captures"] if r["kind"] == "sysbench"}
    own = [summary_tps(out / loads[("t0002", h)]["path"]) for h in hosts]
    assert all(x > 0 for x in own) and ok["tps"] == pytest.approx(sum(own), abs=0.01 * len(own))
    sweep = analyze_path(out).sweep
    (level,) = sweep.steps  # the failed step is no level
    summed = level.all_intervals.set_index("time_s")["tps"].to_dict()
    assert len(summed) >= 4 and summed == pytest.approx(one_clock(out, [loads[("t0002", h)] for h in hosts]))
    assert level.tps == pytest.approx(float(level.intervals["tps"].mean()))

    # the 3-thread step: the killed client fails it and is named; both outputs stay in the archive
    assert cut["status"] == "failed" and cut["reason"].startswith(f"load host {hosts[1]}: "), cut["reason"]
    assert [(c["host"], c["threads"]) for c in cut["clients"]] == [(hosts[0], 2), (hosts[1], 1)]
    assert loads[("t0003", hosts[1])]["status"] == "failed"
    for h in hosts:
        assert "[ 1s ] thds:" in (out / loads[("t0003", h)]["path"]).read_text()
    # every client host captured, in both steps
    for h in hosts:
        for step in ("t0002", "t0003"):
            assert (out / "hosts" / h / step / "vmstat.out").read_bytes().startswith(b"--procs--")
    assert proc.returncode != 0 and m["status"] == "partial", (m["status"], m["reason"])
    assert sysbench_pids(rf"{db}|--time=6") == []


# ---------------------------------------------------------------- client.saturated, host by host


def test_client_saturated_judges_each_load_host_and_names_the_one_that_limits() -> None:
    from perfkit.analyzers import client
    from perfkit.dataset import Capture, Dataset
    from perfkit.parsers import sysbench, vmstat

    from .test_client_rules import LOAD, TH, cap

    recs = [
        {
            "id": f"sysbench@{h}",
            "host": h,
            "kind": "sysbench",
            "command": "sysbench",
            "path": f"load/t0008/sysbench@{h}.out",
            "phase": "window",
            "step": "t0008",
            "started_at": "2026-11-23T08:14:27.000Z",
            "ended_at": "2026-11-23T08:14:37.000Z",
            "status": "ok",
            "threads": 4,
        }
        for h in ("lg1", "lg2")
    ]
    manifest = {"sweep": {"steps": [{"name": "t0008", "threads": 8}]}, "captures": recs}
    loads = [
        Capture(r["path"], "sysbench", r["host"], "t0008", sysbench.parse(LOAD, host=r["host"])) for r in recs
    ]
    busy = cap("vmstat", vmstat, "procps-4.0.2-wide-t-cpu-bound.txt", host="lg1", step="t0008")
    idle = cap("vmstat", vmstat, "procps-4.0.2-wide-t-idle.txt", host="lg2", step="t0008")
    ds = Dataset("x", manifest, [*loads, busy, idle])
    sweep = sweep_model.build(ds, TH)
    (level,) = sweep.steps  # one level of 4 + 4 threads
    assert level.threads == 8 and [c["threads"] for c in level.clients] == [4, 4]
    assert level.tps == pytest.approx(2 * sweep_model.build(Dataset("y", None, loads[:1]), TH).steps[0].tps)
    [f] = client.saturated(ds, sweep, TH)
    ev = f.evidence
    assert ev["host"] == "lg1" and ev["threads"] == 4 and ev["step_threads"] == 8
    assert ev["load_hosts"] == ["lg1", "lg2"] and ev["limits_the_sweep"] is True
    assert (
        "at 4 of the step's 8 threads" in f.summary
        and "it limits the sweep. Not saturated: lg2." in f.summary
    )

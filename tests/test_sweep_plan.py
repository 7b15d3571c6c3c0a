"""`perfkit run`'s typed plan (collectors/plan.py): built from the command's options and checked once,
then run by `run_plan`, the one entry point of the CLI, the tests and the multi-client driver."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfkit.cli import main
from perfkit.collectors import captures, driver, plan
from perfkit.collectors._load import LoadHost, LoadResult
from perfkit.collectors.load_sysbench import Workload
from perfkit.collectors.mysql_sampler import DbTarget
from perfkit.manifest import Manifest
from perfkit.transport import LOCAL, parse_host

from .test_driver import CURVE, FakeRunner
from .test_run_robustness import scratch  # noqa: F401 - the fixture: a throwaway database and users


@pytest.fixture
def planned(monkeypatch) -> list[plan.SweepPlan]:
    """The plans the CLI hands to `run_plan`, which runs nothing here."""
    seen: list[plan.SweepPlan] = []

    def fake_run_plan(p: plan.SweepPlan, **_kw: object) -> plan.RunResult:
        seen.append(p)
        return plan.RunResult(driver.SweepResult(p.output, Manifest(status="complete")))

    monkeypatch.setattr(plan, "run_plan", fake_run_plan)
    monkeypatch.delenv("PERFKIT_MYSQL_PASSWORD", raising=False)
    return seen


def invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["run", *args])
    return res.exit_code, res.output


def test_the_options_defaults_make_the_plan(planned: list[plan.SweepPlan], tmp_path: Path) -> None:
    code, out = invoke("sysbench", "--threads", "1,2", "-o", str(tmp_path / "run"))
    assert code == 0, out
    (p,) = planned
    assert p.load == plan.Sysbench(Workload(), binary="sysbench")
    assert p.steps == driver.Plan(threads=(1, 2), time_s=60, warmup_s=0, cooldown_max_s=30, on_failure="stop")
    assert p.db == DbTarget(host="127.0.0.1", port=3306, user="root", db="sbtest", password="")
    assert p.load_hosts == (LOCAL,) and p.capture_hosts == (LOCAL,)
    assert p.capture.specs == captures.profile("default") and p.capture.secrets == ()
    assert (p.db_sampler, p.prepare, p.cleanup, p.report) == (True, False, False, True)
    assert p.output == tmp_path / "run" and p.plan_file is None
    assert p.options["threads"] == (1, 2) and "plan" not in p.options  # the command line, for the record


def test_the_rest_window_is_an_option_and_a_plan_key(planned: list[plan.SweepPlan], tmp_path: Path) -> None:
    assert invoke("sysbench", "--threads", "4", "-o", str(tmp_path / "a"))[0] == 0
    assert invoke("sysbench", "--threads", "4", "--rest", "0", "-o", str(tmp_path / "b"))[0] == 0
    (tmp_path / "plan.yaml").write_text("threads: [8]\nrest: 5\n")
    code, out = invoke("sysbench", "--plan", str(tmp_path / "plan.yaml"), "-o", str(tmp_path / "c"))
    assert code == 0, out
    assert [p.steps.rest_s for p in planned] == [2, 0, 5]
    assert invoke("sysbench", "--threads", "4", "--rest", "-1", "-o", str(tmp_path / "d"))[0] == 2


def test_several_load_hosts_are_held_and_captured(planned: list[plan.SweepPlan], tmp_path: Path) -> None:
    code, out = invoke(
        "tpcc",
        "--threads",
        "4",
        "--client-host",
        "c1,perf@c2:2222",
        "--collect-on",
        "db1",
        "-o",
        str(tmp_path),
    )
    assert code == 0, out
    (p,) = planned
    assert [h.name for h in p.load_hosts] == ["c1", "c2:2222"]
    assert p.load_hosts[1].user == "perf" and p.load_hosts[1].port == 2222
    # the load hosts are captured, this machine is not (the load does not run here)
    assert [h.name for h in p.capture_hosts] == ["c1", "c2:2222", "db1"]
    assert p.load == plan.Tpcc(1, binary="go-tpc") and p.db is not None and p.db.db == "tpcc"


def test_an_inventorys_client_hosts_are_the_load_hosts(planned: list[plan.SweepPlan], tmp_path: Path) -> None:
    inv = tmp_path / "hosts.yaml"
    inv.write_text(
        "hosts:\n"
        "  - {name: db1, host: 10.0.0.1, roles: [tidb]}\n"
        "  - {name: load1, host: 10.0.0.2, roles: [client]}\n"
        "  - {name: load2, host: 10.0.0.3, port: 2222, roles: [client, pd]}\n"
    )
    code, out = invoke("sysbench", "--threads", "4", "--inventory", str(inv), "-o", str(tmp_path / "run"))
    assert code == 0, out
    (p,) = planned
    assert [h.name for h in p.load_hosts] == ["load1", "load2"] and p.load_hosts[1].port == 2222
    # every inventory host captured once, this machine not (the load runs on the clients)
    assert [h.name for h in p.capture_hosts] == ["db1", "load1", "load2"]
    # --client-host wins over the roles
    code, out = invoke(
        "sysbench",
        "--threads",
        "4",
        "--inventory",
        str(inv),
        "--client-host",
        "c9",
        "-o",
        str(tmp_path / "r2"),
    )
    assert code == 0, out
    assert [h.name for h in planned[1].load_hosts] == ["c9"]


def test_the_password_comes_from_the_environment_and_is_masked(
    planned: list[plan.SweepPlan], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PERFKIT_MYSQL_PASSWORD", "pw-canary")
    code, out = invoke("sysbench", "--adaptive", "--max-threads", "64", "-o", str(tmp_path))
    assert code == 0, out
    (p,) = planned
    assert p.db is not None and p.db.password == "pw-canary" and p.secrets == ("pw-canary",)
    assert p.steps.adaptive == driver.Adaptive(start=1, max_threads=64) and "pw-canary" not in repr(p)


@pytest.mark.parametrize(
    ("args", "option", "why"),
    [
        (["sysbench", "--threads", "4,4"], "--threads", "a count appears twice"),
        (
            ["sysbench", "--adaptive", "--start-threads", "8", "--max-threads", "4"],
            "--start-threads",
            "start",
        ),
        (
            ["sysbench", "--threads", "1", "--workload", "oltp_nope"],
            "--workload",
            "unknown sysbench workload",
        ),
        (["sysbench", "--threads", "1", "--watch", "a b"], "--watch", "invalid process name"),
        (["tpcc", "--threads", "1", "--mysql-socket", "/run/x.sock"], "--mysql-socket", "TCP only"),
        (["ycsb", "--db", "tikv", "--pd", "pd:2379", "--cleanup", "--threads", "1"], "--cleanup", "TiKV"),
        (["ycsb", "--threads", "1", "--prop", "novalue"], "--prop", "NAME=VALUE"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_option(
    planned: list[plan.SweepPlan], tmp_path: Path, args: list[str], option: str, why: str
) -> None:
    code, out = invoke(*args, "-o", str(tmp_path / "never"))
    assert code == 2 and "Traceback" not in out, out
    error = out.strip().splitlines()[-1]
    assert error.startswith("Error: Invalid value for --") and option in error and why in error, error
    assert planned == [] and not (tmp_path / "never").exists()


def test_a_password_file_others_can_read_is_refused_naming_it(planned: list, tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    pw.chmod(0o644)
    code, out = invoke(
        "sysbench", "--threads", "1", "--mysql-password-file", str(pw), "-o", str(tmp_path / "x")
    )
    assert code == 2 and "--mysql-password-file" in out and "chmod 600" in out and planned == []
    pw.chmod(0o600)
    assert (
        invoke("sysbench", "--threads", "1", "--mysql-password-file", str(pw), "-o", str(tmp_path / "x"))[0]
        == 0
    )
    assert planned[0].db is not None and planned[0].db.password == "secret"


def test_a_plan_is_checked_when_built_not_when_run(tmp_path: Path) -> None:
    steps = driver.Plan(threads=(1,))
    with pytest.raises(plan.PlanError, match="needs a MySQL-protocol database") as err:
        plan.SweepPlan(load=plan.Sysbench(), steps=steps, output=tmp_path, db=None)
    assert err.value.option == "--mysql-host"
    twice = (parse_host("db1"), parse_host("db1"))
    with pytest.raises(plan.PlanError, match="named twice: db1"):
        plan.SweepPlan(load=plan.Sysbench(), steps=steps, output=tmp_path, db=DbTarget(), capture_hosts=twice)
    with pytest.raises(plan.PlanError, match="at least one load host"):
        plan.SweepPlan(load=plan.Sysbench(), steps=steps, output=tmp_path, db=DbTarget(), load_hosts=())
    tikv = plan.Ycsb(pd="pd1:2379")
    assert plan.SweepPlan(load=tikv, steps=steps, output=tmp_path, db=None).secrets == ()


def test_a_step_smaller_than_its_load_hosts_is_refused_before_anything_connects(tmp_path: Path) -> None:
    clients = (parse_host("client1.invalid"), parse_host("client2.invalid"))
    with pytest.raises(plan.PlanError, match="1 thread cannot be split across 2 load hosts") as err:
        plan.SweepPlan(
            load=plan.Sysbench(),
            steps=driver.Plan(threads=(1, 4)),
            output=tmp_path / "x",
            db=DbTarget(),
            load_hosts=clients,
        )
    assert err.value.option == "--threads" and not (tmp_path / "x").exists()


# ---------------------------------------------------------------- run_plan with a fake load generator


class FakeLoad:
    """A load spec whose runner is test_driver's FakeRunner with the runner's other steps counted."""

    tool, options, what = "sysbench", "--workload", "fake"

    def __init__(self, interrupt_preflight: bool = False) -> None:
        self.calls: list[str] = []
        self.interrupt = interrupt_preflight

    def record(self) -> dict:
        return {"workload": "fake"}

    def runner(self, db: DbTarget | None, host: LoadHost) -> FakeRunner:
        load = self

        class Runner(FakeRunner):
            def __enter__(self) -> Runner:
                return self

            def __exit__(self, *exc: object) -> None:
                self.close()

            def close(self) -> None:
                load.calls.append("close")
                self.host.close()

            def preflight(self) -> None:
                load.calls.append("preflight")
                if load.interrupt:
                    raise KeyboardInterrupt

            def prepare(self) -> None:
                load.calls.append("prepare")

            def check_tables(self) -> dict:
                load.calls.append("check_tables")
                return {"method": "fake", "rows": {"t": 1}}

            def cleanup(self) -> None:
                load.calls.append("cleanup")
                raise OSError(13, "no DROP for you")

            def run(self, threads: int, time_s: int, out: Path, *, stop: object | None = None) -> LoadResult:
                load.calls.append(f"run {threads}")
                return super().run(threads, time_s, out, stop=stop)

        runner = Runner(CURVE)
        runner.host.close()
        runner.host = host  # the plan's load host
        return runner


def fake_plan(tmp_path: Path, load: FakeLoad, **kw: object) -> plan.SweepPlan:
    base = plan.SweepPlan(
        load=plan.Sysbench(),  # checked as sysbench, then run with the fake (the plan is frozen: replace)
        steps=driver.Plan(threads=(1, 2), time_s=1, cooldown_max_s=0),
        output=tmp_path / "run",
        db=DbTarget(password="pw-fake"),
        capture_hosts=(),
        capture=plan.capture_options("minimal"),
        db_sampler=False,
        report=False,
    )
    p = dataclasses.replace(base, **kw)
    object.__setattr__(p, "load", load)  # past __post_init__'s check, which knows the real loads only
    return p


def test_run_plan_prepares_sweeps_cleans_up_and_records(tmp_path: Path) -> None:
    load = FakeLoad()
    said: list[str] = []
    swept: list[driver.SweepResult] = []
    p = fake_plan(tmp_path, load, prepare=True, cleanup=True, options={"threads": (1, 2), "output": tmp_path})
    res = plan.run_plan(p, progress=said.append, swept=swept.append)
    assert load.calls == ["preflight", "prepare", "check_tables", "run 1", "run 2", "cleanup", "close"]
    assert swept == [res.sweep] and res.report is None  # report=False
    assert res.cleanup_error == "[Errno 13] no DROP for you" and res.exit_code == 3  # complete, tables kept
    assert said[0] == "preparing the fake tables" and said[1].startswith(
        "sweeping sysbench 1.0.20 (fake) fake"
    )
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    rec = m["sweep"]["plan"]
    assert rec["table_rows"] == {"method": "fake", "rows": {"t": 1}} and rec["workload"] == "fake"
    assert rec["options"] == {"threads": [1, 2], "output": str(tmp_path)} and rec["load_host"] == "localhost"
    assert rec["database"]["user"] == "root" and "pw-fake" not in json.dumps(m)
    lines = plan.step_lines(res.sweep)
    assert lines[1].split()[:5] == ["t0001", "1", "1s", "200.0", "ok"]
    assert lines[-2] == "2 steps; stopped: every planned step ran"
    assert lines[-1].startswith(f"complete: wrote {tmp_path / 'run'} in ")


def test_an_interrupt_before_the_sweep_writes_nothing_and_closes_the_runner(tmp_path: Path) -> None:
    load = FakeLoad(interrupt_preflight=True)
    with pytest.raises(plan.InterruptedBeforeSweep, match="nothing written to .*run"):
        plan.run_plan(fake_plan(tmp_path, load, prepare=True))
    assert load.calls[:2] == ["preflight", "close"] and "prepare" not in load.calls
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------- the real thing: lab MariaDB + sysbench


@pytest.mark.lab
def test_run_plan_sweeps_sysbench_against_the_lab_database(scratch, tmp_path: Path) -> None:  # noqa: F811
    """The library entry point without click: a tiny sweep on a scratch database it prepares and drops."""
    db, user = scratch
    password = "pw-" + uuid.uuid4().hex
    target = DbTarget(host="127.0.0.1", port=3306, user=user(password), db=db, password=password)
    p = plan.SweepPlan(
        load=plan.Sysbench(Workload(name="oltp_point_select", tables=1, table_size=1000)),
        steps=driver.Plan(threads=(1, 2), time_s=3, cooldown_max_s=0),
        output=tmp_path / "run.tar.gz",
        db=target,
        capture=plan.capture_options("minimal"),
        prepare=True,
        cleanup=True,
    )
    said: list[str] = []
    res = plan.run_plan(p, progress=said.append)
    assert res.exit_code == 0 and res.cleanup_error == "", (res.sweep.manifest["reason"], said)
    assert res.sweep.path == tmp_path / "run.tar.gz" and res.sweep.path.is_file()
    assert [(s.name, s.threads, s.status) for s in res.sweep.steps] == [
        ("t0001", 1, "ok"),
        ("t0002", 2, "ok"),
    ]
    assert all(s.tps and s.tps > 0 for s in res.sweep.steps)
    sweep = res.sweep.manifest["sweep"]
    assert sweep["plan"]["table_rows"] == {"method": "SELECT COUNT(*)", "rows": {"sbtest1": 1000}}
    assert sweep["plan"]["database"]["db"] == db and sweep["tool"] == "sysbench"
    loads = [r for r in res.sweep.manifest["captures"] if r["kind"] == "sysbench"]
    assert [r["path"] for r in loads] == ["load/t0001/sysbench.out", "load/t0002/sysbench.out"]
    assert any(r["kind"] == "mysql_status" and r["samples"] > 0 for r in res.sweep.manifest["captures"])
    # the report beside the archive, from the same call
    assert res.report is not None and res.report.error == "" and res.report.complete
    assert {f.name for f in res.report.files} >= {"report.html", "report.md", "findings.json"}
    assert all(f.parent == tmp_path / "run-report" for f in res.report.files)
    assert password not in "".join(said) and password.encode() not in res.sweep.path.read_bytes()

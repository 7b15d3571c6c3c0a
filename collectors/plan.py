"""`perfkit run` as library calls: a typed sweep plan, checked once, and `run_plan`, which does with
it everything `perfkit run sysbench|ycsb|tpcc` does.

`SweepPlan` holds what a run needs: the load (`Sysbench`, `Ycsb` or `Tpcc`: the tool, its workload
and binary), the steps (`driver.Plan`: threads or the adaptive search, step time, warm-up,
cool-down), the database, the load hosts (a tuple: each step's threads are split across them,
`driver.split_threads`), the hosts to capture and the capture options, the output and what to do
around the sweep (prepare, cleanup, the report). Building one checks it whole: a bad value is a
`driver.PlanError` naming the `perfkit run` option at fault, before any host is connected or any
table touched.

`run_plan` then connects every load host, runs the tool's preflight on each, prepares the tables
if asked and counts them (once, from the first), runs the sweep (`driver.run_sweep`, every load
host stepping together), drops the tables if asked and writes the report beside the archive. The
CLI builds the plan from its options and prints what comes back; the tests call the same function.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from perfkit.archive import check_new_output
from perfkit.errors import PerfkitError
from perfkit.findings import count
from perfkit.manifest import SweepRun
from perfkit.transport import LOCAL, HostSpec, connect

from . import captures, driver, session
from ._load import LoadHost
from .driver import PlanError
from .load_gotpc import GoTpcRunner
from .load_goycsb import GoYcsbRunner, YcsbWorkload
from .load_sysbench import SysbenchRunner, Workload
from .mysql_sampler import DbTarget

if TYPE_CHECKING:  # the analysis side is imported only to write the report
    from perfkit.analyzers import Analysis

__all__ = [
    "InterruptedBeforeSweep",
    "PlanError",
    "Report",
    "RunResult",
    "SweepPlan",
    "Sysbench",
    "Tpcc",
    "Ycsb",
    "capture_options",
    "read_password",
    "run_plan",
    "step_lines",
]

PASSWORD_ENV = "PERFKIT_MYSQL_PASSWORD"


# ------------------------------------------------------------------ the loads


@dataclass(frozen=True)
class Sysbench:
    """sysbench with a built-in Lua workload or the user's script."""

    workload: Workload = Workload()
    binary: str = SysbenchRunner.tool
    tool: ClassVar[str] = SysbenchRunner.tool
    options: ClassVar[str] = "--workload/--lua/--sb-opt"  # where a refused workload came from

    @property
    def what(self) -> str:
        return self.workload.test

    def record(self) -> dict[str, Any]:
        w = self.workload
        return {
            "workload": w.test,
            "tables": w.tables,
            "table_size": w.table_size,
            "percentile": w.percentile,
            "sysbench_options": list(w.extra),
        }

    def runner(self, db: DbTarget | None, host: LoadHost) -> SysbenchRunner:
        assert db is not None  # SweepPlan refuses a sysbench plan without a database
        return SysbenchRunner(db, self.workload, binary=self.binary, host=host)


@dataclass(frozen=True)
class Ycsb:
    """go-ycsb over the MySQL protocol, or on TiKV through its PD endpoints (`pd`; no database)."""

    workload: YcsbWorkload = YcsbWorkload()
    binary: str = GoYcsbRunner.tool
    pd: str | None = None
    tikv_type: str = "raw"
    tool: ClassVar[str] = GoYcsbRunner.tool
    options: ClassVar[str] = "--pd/--tikv-type/--mysql-socket"

    @property
    def what(self) -> str:
        return f"YCSB {self.workload.label}"

    def record(self) -> dict[str, Any]:
        w = self.workload
        out: dict[str, Any] = {"workload": w.label, "recordcount": w.recordcount, "properties": dict(w.props)}
        if self.pd is not None:
            out.update(pd=self.pd, tikv_type=self.tikv_type)
        return out

    def runner(self, db: DbTarget | None, host: LoadHost) -> GoYcsbRunner:
        return GoYcsbRunner(
            db, self.workload, binary=self.binary, host=host, pd=self.pd, tikv_type=self.tikv_type
        )


@dataclass(frozen=True)
class Tpcc:
    """go-tpc's TPC-C at `warehouses` warehouses."""

    warehouses: int = 1
    binary: str = GoTpcRunner.tool
    tool: ClassVar[str] = GoTpcRunner.tool
    options: ClassVar[str] = "--warehouses/--mysql-socket"

    @property
    def what(self) -> str:
        return f"TPC-C at {self.warehouses} warehouse(s)"

    def record(self) -> dict[str, Any]:
        return {"warehouses": self.warehouses}

    def runner(self, db: DbTarget | None, host: LoadHost) -> GoTpcRunner:
        assert db is not None  # SweepPlan refuses a go-tpc plan without a database
        return GoTpcRunner(db, warehouses=self.warehouses, binary=self.binary, host=host)


Load = Sysbench | Ycsb | Tpcc


# ------------------------------------------------------------------ the plan


def capture_options(
    profile: str = "default",
    *,
    perf: str | None = None,
    watch: tuple[str, ...] = (),
    pprof: tuple[str, ...] = (),
) -> session.Options:
    """The captures taken on every host in every step (`--profile`, `--perf`, `--watch`, `--pprof`);
    the window is set per step by the driver, the secrets from the plan's database."""
    try:
        specs = captures.profile(profile)
    except KeyError as exc:
        raise PlanError("--profile", str(exc.args[0])) from None
    try:
        if perf:
            specs += captures.perf_specs(perf)
        return session.Options(window=1, specs=specs, watch=tuple(watch), pprof=tuple(pprof))
    except ValueError as exc:
        raise PlanError("--watch/--perf/--pprof", str(exc)) from None


def read_password(file: Path | None) -> str:
    """The database password: from `file` (which only its owner may read), else $PERFKIT_MYSQL_PASSWORD,
    else empty. Never an option's value: argv is world-readable in `ps`."""
    if file is None:
        return os.environ.get(PASSWORD_ENV, "")
    mode = file.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise PlanError(
            "--mysql-password-file",
            f"{file} is readable by others (mode {stat.S_IMODE(mode):04o}); chmod 600 it",
        )
    return file.read_text(encoding="utf-8").rstrip("\n")


@dataclass(frozen=True, kw_only=True)
class SweepPlan:
    """One `perfkit run`, checked whole when built. Holds the database password (in `db`, never
    shown by repr) and nothing else secret."""

    load: Load
    steps: driver.Plan
    output: Path  # a new directory, or a .tar.gz
    db: DbTarget | None  # None: go-ycsb on TiKV (`Ycsb.pd`)
    # where the load generator runs; every step splits its threads across them (driver.split_threads)
    load_hosts: tuple[HostSpec, ...] = (LOCAL,)
    capture_hosts: tuple[HostSpec, ...] = (LOCAL,)  # the load hosts among them: the CLI adds them
    capture: session.Options = field(default_factory=capture_options)
    db_sampler: bool = True  # SHOW GLOBAL STATUS every second through the sweep
    prepare: bool = False  # create and fill the tables first (dropping old ones)
    cleanup: bool = False  # drop them at the end
    report: bool = True  # analyze the archive into <output>-report/
    plan_file: Path | None = None  # the YAML the options came from, for the record
    options: Mapping[str, Any] = field(default_factory=dict)  # the command line, for the record

    def __post_init__(self) -> None:
        if not self.load_hosts:
            raise PlanError("--client-host", "at least one load host")
        loads = [h.name for h in self.load_hosts]
        if len(set(loads)) < len(loads):
            raise PlanError("--client-host", f"a load host is named twice: {', '.join(loads)}")
        self.steps.check_split(len(self.load_hosts))
        names = [h.name for h in self.capture_hosts]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise PlanError("--collect-on", f"a host is named twice: {', '.join(twice)}")
        on_tikv = isinstance(self.load, Ycsb) and self.load.pd is not None
        if self.db is None and not on_tikv:
            raise PlanError("--mysql-host", f"{self.load.tool} needs a MySQL-protocol database")
        if on_tikv and self.cleanup:
            raise PlanError("--cleanup", "perfkit cannot delete the keys go-ycsb loaded into TiKV")
        # The runners check their own arguments (a socket go-tpc cannot use, PD endpoints): make
        # one on this machine, no process started, so that a bad plan is refused before any host
        # is connected.
        here = LoadHost(secrets=self.secrets)
        try:
            self.load.runner(self.db, here)
        except ValueError as exc:
            raise PlanError(self.load.options, str(exc)) from None
        finally:
            here.close()

    @property
    def secrets(self) -> tuple[str, ...]:
        """What every capture and load output masks: the database password."""
        return (self.db.password,) if self.db is not None and self.db.password else ()

    def record(self, load_hosts: list[str]) -> dict[str, Any]:
        """The plan as the manifest keeps it (beside `driver.Plan`'s fields): no secret."""
        db = self.db
        split = {"threads_split": driver.SPLIT_RULE} if len(load_hosts) > 1 else {}
        return {
            "plan_file": str(self.plan_file) if self.plan_file else None,
            "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in self.options.items()},
            **self.load.record(),
            "load_host": ", ".join(load_hosts),
            **split,
            "database": None
            if db is None
            else {"host": db.host, "port": db.port, "socket": db.socket, "user": db.user, "db": db.db},
        }


# ------------------------------------------------------------------ running it


class InterruptedBeforeSweep(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP during the preflight or prepare: the load tool was stopped, its
    private dir removed, and no archive written. A KeyboardInterrupt, so that a caller that does
    not catch it is interrupted as usual."""


@dataclass
class Report:
    """The report written beside the archive, or why it was not (`error`)."""

    files: list[Path] = field(default_factory=list)
    analysis: Analysis | None = None
    error: str = ""

    @property
    def complete(self) -> bool:
        """False when a rule failed (the report says which); a report not written is no rule's fault."""
        return self.analysis is None or self.analysis.complete


@dataclass
class RunResult:
    sweep: driver.SweepResult
    cleanup_error: str = ""  # --cleanup failed after the archive was written
    report: Report | None = None  # None: not asked for, or no step ran

    @property
    def exit_code(self) -> int:
        """The sweep's (session.EXIT_*); a complete sweep whose tables were not dropped is partial."""
        code = self.sweep.exit_code
        return session.EXIT_PARTIAL if self.cleanup_error and code == session.EXIT_OK else code


def run_plan(
    plan: SweepPlan,
    *,
    progress: Callable[[str], None] | None = None,
    swept: Callable[[driver.SweepResult], None] | None = None,
) -> RunResult:
    """Preflight, prepare, the sweep, cleanup and the report, for every load generator.

    Args:
        progress: one line at a time (preparing, sweeping, each step), as the CLI prints on stderr.
        swept: called with the sweep's result once the archive is written and the tables dropped,
            before the report is analyzed (the CLI prints the step table there).

    Raises:
        PerfkitError: the output is in use, the load host or the database refused (nothing written).
        InterruptedBeforeSweep: stopped before the first step (nothing written).
    """
    say = progress or (lambda _msg: None)
    check_new_output(plan.output)  # before prepare drops any table
    with contextlib.ExitStack() as stack:
        runners = []
        for spec in plan.load_hosts:  # connected now: a bad host fails before anything starts
            host = LoadHost(connect(spec), secrets=plan.secrets)
            runners.append(stack.enter_context(plan.load.runner(plan.db, host)))
        lead = runners[0]  # prepares, counts and drops the tables: they are shared
        names = [r.host.name for r in runners]
        record = plan.record(names)
        with _interrupts_raise():
            try:
                for runner in runners:
                    runner.preflight()
                if plan.prepare:
                    say(f"preparing the {plan.load.what} tables")
                    lead.prepare()
                record["table_rows"] = lead.check_tables()
            except KeyboardInterrupt:
                for runner in runners:
                    runner.close()  # its private dir with the secrets goes; a prepare was stopped by pid
                raise InterruptedBeforeSweep(
                    f"interrupted before the sweep: nothing written to {plan.output}"
                ) from None
        steps = "an adaptive search" if plan.steps.adaptive else f"{len(plan.steps.threads)} steps"
        split = f" ({driver.SPLIT_RULE})" if len(runners) > 1 else ""
        say(
            f"sweeping {lead.version} {plan.load.what} over {steps} of {plan.steps.time_s}s from "
            f"{', '.join(names)}{split}, capturing {len(plan.capture_hosts)} host(s) -> {plan.output}"
        )
        result = driver.run_sweep(
            runners,
            plan.steps,
            plan.output,
            hosts=list(plan.capture_hosts),
            opts=replace(plan.capture, secrets=plan.secrets),
            db=plan.db if plan.db_sampler else None,
            plan_record=record,
            progress=say,
        )
        cleanup_error = _cleanup(lead) if plan.cleanup and result.run.status != "interrupted" else ""
    if swept is not None:
        swept(result)
    report = None
    if plan.report and any(st.status in ("ok", "degraded") for st in result.steps):
        report = report_beside(result.path)
    return RunResult(result, cleanup_error, report)


def _cleanup(runner: SysbenchRunner | GoYcsbRunner | GoTpcRunner) -> str:
    """Drop the tables; why it failed, or "" (the archive is written: a failure is reported, not raised)."""
    try:
        runner.cleanup()
    except (PerfkitError, OSError) as exc:
        return str(exc) or type(exc).__name__
    return ""


def report_beside(archive: Path) -> Report:
    """Analyze a fresh archive and write its report into `<archive>-report/`."""
    # the analysis side, imported only here: collection does not need it otherwise
    from perfkit.pipeline import analyze_path, write_reports

    name = archive.name.removesuffix(".tar.gz").removesuffix(".tgz")
    try:
        analysis = analyze_path(archive, plots=True)
    except PerfkitError as exc:
        return Report(error=str(exc))  # the archive is the run's result; this says why no report
    return Report(write_reports(analysis, archive.with_name(f"{name}-report")), analysis)


def step_lines(result: driver.SweepResult) -> list[str]:
    """The step table and the run's outcome, as `perfkit run` prints them (text from the tool and
    the hosts unescaped: the caller makes it printable)."""
    lines = [f"{'step':8s} {'threads':>7s} {'time':>5s} {'TPS':>10s} {'status':12s} reason"]
    for st in result.steps:
        tps = f"{st.tps:,.1f}" if st.tps is not None else "-"
        # several load hosts: each one's share, in --client-host's order (8 (3+3+2))
        threads = (
            f"{st.threads} ({'+'.join(str(c['threads']) for c in st.clients)})" if st.clients else st.threads
        )
        lines.append(f"{st.name:8s} {threads:>7} {st.time_s:4d}s {tps:>10s} {st.status:12s} {st.reason}")
    sweep = result.run.sweep or SweepRun()  # run_sweep always writes one
    skews = [st.start_skew_s for st in result.steps if st.start_skew_s is not None]
    if skews:
        plan = sweep.plan
        lines.append(
            f"load hosts {plan['load_host']}: threads {plan['threads_split']}; "
            f"their starts within {max(skews):.3f}s of each other"
        )
    lines.append(f"{count(len(result.steps), 'step')}; stopped: {sweep.stopped_because}")
    lines.append(f"{result.run.status}: wrote {result.path} in {result.wall_s:.0f}s")
    return lines


@contextlib.contextmanager
def _interrupts_raise() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP raise KeyboardInterrupt once, and are ignored while it unwinds
    (the load tool stopped, its secrets' dir removed); the previous handlers come back after.
    Without this, SIGTERM killed perfkit at once and left both behind."""
    fired = False

    def handler(signum: int, frame: object) -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)

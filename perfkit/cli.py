"""The `perfkit` command: a thin click layer over library functions.

Exit codes: 0 success; 1 an error perfkit reports (bad input, unreadable archive, invalid config,
every host failed); 2 usage error (click); 3 `collect` or `run` finished partially (a host, capture or
step failed; the archive holds the rest), or `run --cleanup` failed after a complete sweep; 4 `analyze
--fail-on` found findings at or above the given severity; 5 the analysis is incomplete (a rule
raised; the report was written and names it); 130 interrupted (the archive is still written, marked
interrupted; `run` interrupted before its first step writes none).
Ctrl-C, SIGTERM and SIGHUP all stop a run cleanly: 130, not 128+signal (perfkit does not die of it).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from perfkit import __version__
from perfkit.archive import check_new_output, printable
from perfkit.config import LOAD_ROLE
from perfkit.errors import PerfkitError
from perfkit.manifest import REST_S

EXIT_ERROR = 1
EXIT_FINDINGS = 4
EXIT_INCOMPLETE = 5  # the report was written, but a rule failed: say so to scripts, not only in the text
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Group(click.Group):
    """Turns perfkit's own errors into one line on stderr, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except PerfkitError as exc:
            raise _Fail(str(exc)) from None
        except OSError as exc:
            raise _Fail(f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")) from None
        except KeyboardInterrupt:  # Ctrl-C where a command keeps no state to save (analyze, parse)
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)


class _Fail(click.ClickException):
    exit_code = EXIT_ERROR

    def format_message(self) -> str:
        return printable(self.message)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="perfkit")
def main() -> None:
    """perfkit: find why a database cluster stops scaling under load."""


# captures parsed at once: one option for every command that analyzes archives
_JOBS = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Captures parsed at once: N-1 worker processes beside this one (default: the CPUs, once "
    "there are 256 MB or more to parse); 1 parses in this process only.",
)


@main.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write report.html, report.md and findings.json into this directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print findings.json on stdout instead of a summary.")
@click.option(
    "--thresholds",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML file overriding rule thresholds (see configs/thresholds.yaml).",
)
@click.option(
    "--tz",
    default="UTC",
    show_default=True,
    callback=lambda ctx, param, value: _time_zone(value),
    help="Time zone of the captured hosts, for timestamps that carry none: an IANA name "
    "(Asia/Shanghai) or a whole-hour offset (+08:00).",
)
@click.option(
    "--fail-on",
    type=click.Choice(["critical", "warning"]),
    help=f"Exit {EXIT_FINDINGS} when a finding of this severity or worse exists (CI gates).",
)
@click.option(
    "--tiers",
    "tiers",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CSV or YAML of response time per tier per concurrency, client first (load balancers, "
    "app servers: what perfkit cannot measure); see `perfkit parse --list` (tiers).",
)
@_JOBS
def analyze(
    source: Path,
    outdir: Path | None,
    as_json: bool,
    thresholds: Path | None,
    tz: str,
    fail_on: str | None,
    tiers: Path | None,
    jobs: int | None,
) -> None:
    """Analyze an archive directory, a .tar.gz, or a single capture or sweep table (CSV)."""
    from perfkit import _workers
    from perfkit.archive import size_hint

    # the workers import the parsers, the rules' per-capture views (and the plots) while this process
    # does and opens the archive
    preload = ("perfkit.dataset", "perfkit.analyzers.io")
    preload += ("perfkit.reports.plots",) if outdir is not None else ()
    with _workers.warmed(jobs, size_hint(source), preload):
        from perfkit.pipeline import analyze_path, summary_lines, write_reports
        from perfkit.reports import findings_json

        result = analyze_path(
            source, thresholds=thresholds, tz=tz, tiers=tiers, jobs=jobs, plots=outdir is not None
        )
    if outdir is not None:
        written = write_reports(result, outdir)
    if as_json:
        click.echo(findings_json.render(result), nl=False)
    else:
        for line in summary_lines(result):
            click.echo(line)
        if outdir is not None:
            click.echo("wrote " + ", ".join(str(p) for p in written))
    if not result.complete:
        click.echo(f"analysis incomplete: {len(result.failed)} rule(s) failed (listed above)", err=True)
    if fail_on and result.has_findings(at_least=fail_on):
        sys.exit(EXIT_FINDINGS)
    if not result.complete:
        sys.exit(EXIT_INCOMPLETE)


def _two_steps(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    parts = value.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise click.BadParameter(f"{value!r}: two thread counts, e.g. 8,64")
    return int(parts[0]), int(parts[1])


@main.command()
@click.argument("base", type=click.Path(exists=True, path_type=Path))
@click.argument("new", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write compare.html, compare.md and compare.json into this directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print compare.json on stdout instead of a summary.")
@click.option(
    "--min-change",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="A change smaller than this (%) is '~' however narrow its interval: the run-to-run spread "
    "one run's intervals cannot show.",
)
@click.option(
    "--fail-on-regression",
    "fail_pct",
    type=click.FloatRange(min=0),
    help=f"Exit {EXIT_FINDINGS} when the peak or a common step's throughput fell by more than this (%) "
    "and the fall is significant (CI gates).",
)
@click.option(
    "--thresholds",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML file overriding rule thresholds, for both runs' analyses.",
)
@click.option(
    "--tz",
    default="UTC",
    show_default=True,
    callback=lambda ctx, param, value: _time_zone(value),
    help="Time zone of the captured hosts, for timestamps that carry none.",
)
@click.option(
    "--steps",
    callback=lambda ctx, param, value: _two_steps(value),
    metavar="A,B",
    help="Also draw each run's profiles at B threads against its own at A (what grows with concurrency).",
)
@_JOBS
def compare(
    base: Path,
    new: tuple[Path, ...],
    outdir: Path | None,
    as_json: bool,
    min_change: float,
    fail_pct: float | None,
    thresholds: Path | None,
    tz: str,
    steps: tuple[int, int] | None,
    jobs: int | None,
) -> None:
    """Compare NEW runs with BASE: did the change move the curve, beyond noise?

    Each run is an archive (directory or .tar.gz), a single capture, or a report perfkit wrote
    (its findings.json, or the directory holding it: figures shown side by side, not judged).

    BASE and each NEW may also be a group of runs of one configuration: a directory with no
    manifest.json or findings.json of its own whose entries are runs (run directories, .tar.gz
    archives, analyzed outputs), e.g.

    \b
      for i in 1 2 3; do perfkit run sysbench ... -o base/r$i; done
      (change one thing)
      for i in 1 2 3; do perfkit run sysbench ... -o new/r$i; done
      perfkit compare base new -o cmp

    With at least 2 runs a side, a change is judged against the spread between the runs' means
    (Welch's t); with one run a side only against that run's own second-to-second noise, which
    cannot tell a change from run-to-run spread (said as a warning)."""
    from perfkit.findings import RuleFailure
    from perfkit.pipeline import compare_paths, write_compare
    from perfkit.reports import compare_json

    base_analysis, analyses, comparisons = compare_paths(
        base, list(new), thresholds=thresholds, tz=tz, min_change_pct=min_change, jobs=jobs
    )
    failed: list[RuleFailure] = []
    if outdir is not None:
        written = write_compare(
            base, base_analysis, comparisons, analyses, outdir, steps=steps, failed=failed
        )
    if as_json:
        click.echo(compare_json.render(printable(str(base)), base_analysis, comparisons), nl=False)
    else:
        for c in comparisons:
            click.echo(printable(f"{c.new_name}: {c.headline()}"))
            for w in c.warnings:
                click.echo(printable(f"  warning: {w}"))
        if outdir is not None:
            click.echo("wrote " + ", ".join(str(p) for p in written))
    for f in failed:
        click.echo(printable(f"compare incomplete: {f.rule} failed: {f.reason}"), err=True)
    if fail_pct is not None:
        fell = [(c.new_name, r) for c in comparisons for r in c.regressions(fail_pct)]
        for name, what in fell:
            click.echo(printable(f"regression in {name}: {what}"), err=True)
        if fell:
            sys.exit(EXIT_FINDINGS)
    if failed:
        sys.exit(EXIT_INCOMPLETE)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=False)
@click.option("--kind", help="Parser to use (default: sniffed from the content). See --list.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "json", "parquet"]),
    default="csv",
    show_default=True,
    help="parquet needs -o and the `parquet` extra (pyarrow).",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not stdout."
)
@click.option("--host", help="Host name to put in the host column.")
@click.option(
    "--tz",
    default="UTC",
    show_default=True,
    callback=lambda ctx, param, value: _time_zone(value),
    help="Time zone of the host that made the capture (IANA name or +08:00).",
)
@click.option("--list", "list_kinds", is_flag=True, help="List the parser kinds and what they read.")
def parse(
    file: Path | None,
    kind: str | None,
    fmt: str,
    output: Path | None,
    host: str | None,
    tz: str,
    list_kinds: bool,
) -> None:
    """Parse one capture FILE into a table (CSV, JSON records or Parquet)."""
    from perfkit import parsers
    from perfkit.parsers._common import head

    if list_kinds:
        width = max(map(len, parsers.registry()))
        for name, mod in sorted(parsers.registry().items()):
            click.echo(f"{name:{width}s}  {mod.__doc__.strip().splitlines()[0].removeprefix(name + ': ')}")
        return
    if file is None:
        raise click.UsageError("missing FILE (or --list)")
    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet writes a binary file: give it with -o")
    if kind is None:
        with open(file, "rb") as fh:
            kind = parsers.sniff_binary_kind(fh.read(4096))
    if kind is None:
        kind = parsers.sniff_kind(head(file))
        if kind is None:
            raise _Fail(
                f"{file}: no parser recognises this format; name one with --kind "
                f"({', '.join(parsers.kinds())})"
            )
    elif kind not in parsers.kinds():
        raise click.BadParameter(
            f"unknown kind {kind!r}; known: {', '.join(parsers.kinds())}", param_hint="--kind"
        )
    df = parsers.get(kind).parse(file, host=host, tz=tz)
    extras = parsers.extras(kind, df)  # notes, totals, …: not table data (parquet could not store them)
    if fmt == "parquet":
        _write_parquet(df, output)
    else:
        if fmt == "csv":
            text = df.to_csv(index=False, date_format="%Y-%m-%dT%H:%M:%S%z")
        else:
            text = json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), indent=1) + "\n"
        if output is None:
            click.echo(text, nl=False)
        else:
            output.write_text(text, encoding="utf-8")
    if extras.dropped_lines:
        click.echo(f"{file}: {extras.dropped_lines} cut-off last line dropped", err=True)
    if extras.skipped.count:
        click.echo(f"{file}: partial: {extras.skipped.summary()}", err=True)


def _write_parquet(df: Any, output: Path) -> None:
    try:
        import pyarrow  # noqa: F401 - pandas' parquet engine
    except ImportError:
        raise _Fail("--format parquet needs pyarrow: pip install 'perfkit[parquet]'") from None
    df.to_parquet(output, index=False)


def _ssh_options(f: Any) -> Any:
    """--ssh-config, --known-hosts, -i and --accept-new-host-key, shared by collect and run."""
    for option in reversed(
        [
            click.option(
                "--ssh-config",
                type=click.Path(exists=True, dir_okay=False),
                help="ssh_config file to honour.",
            ),
            click.option(
                "--known-hosts",
                type=click.Path(dir_okay=False),
                help="known_hosts file (default: ~/.ssh/known_hosts).",
            ),
            click.option(
                "-i", "--identity", type=click.Path(exists=True, dir_okay=False), help="Private key file."
            ),
            click.option(
                "--accept-new-host-key",
                is_flag=True,
                help="Trust and record the key of a host not yet in known_hosts (never a changed key).",
            ),
        ]
    ):
        f = option(f)
    return f


@main.command()
@click.option("--local", "use_local", is_flag=True, help="Capture on this machine (no SSH).")
@click.option("--hosts", help="Comma-separated SSH targets: host, user@host, user@host:port.")
@click.option(
    "--inventory",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML inventory (configs/hosts.yaml) or a TiUP topology.yaml.",
)
@click.option("-d", "--duration", type=click.IntRange(1, 86400), required=True, help="Window in seconds.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    help="Archive to write: a new directory, or a .tar.gz file.",
)
@click.option(
    "--interval", type=click.IntRange(1, 3600), default=1, show_default=True, help="Sample interval (s)."
)
@click.option("--profile", type=click.Choice(["default", "minimal"]), default="default", show_default=True)
@_ssh_options
@click.option(
    "--perf",
    "perf_process",
    metavar="NAME",
    help="Opt-in: perf record -F 99 -g on the process NAME; stacks folded on the host.",
)
@click.option("--iftop", "iftop_interface", metavar="IFACE", help="Opt-in: iftop on interface IFACE.")
@click.option(
    "--watch",
    "watch",
    metavar="NAME",
    multiple=True,
    help="Also follow the threads and cgroup of processes named NAME (beside the databases, load "
    "generators and proxies perfkit knows). Repeatable.",
)
@click.option(
    "--pprof",
    "pprof_urls",
    metavar="URL",
    multiple=True,
    help="Opt-in: fetch Go pprof profiles (CPU over the window, heap, goroutine, mutex) from "
    "http://host:port (TiDB 10080, PD 2379, TiKV 20180). Repeatable.",
)
@click.option(
    "--tidb-zip",
    "tidb_zip_urls",
    metavar="URL",
    multiple=True,
    help="Opt-in: fetch TiDB's /debug/zip (CPU profile over the window, goroutine, heap, mutex, config) "
    "from its status port, e.g. http://10.0.0.1:10080. Repeatable; instead of --pprof for that TiDB.",
)
@click.option("--dry-run", is_flag=True, help="Print what would run where, and run nothing.")
def collect(
    use_local: bool,
    hosts: str | None,
    inventory: Path | None,
    duration: int,
    output: Path,
    interval: int,
    profile: str,
    ssh_config: str | None,
    known_hosts: str | None,
    identity: str | None,
    accept_new_host_key: bool,
    perf_process: str | None,
    iftop_interface: str | None,
    pprof_urls: tuple[str, ...],
    tidb_zip_urls: tuple[str, ...],
    watch: tuple[str, ...],
    dry_run: bool,
) -> None:
    """Capture OS activity on this machine and/or SSH hosts into one archive."""
    from perfkit.collectors import captures, session

    targets, roles = _targets(
        use_local, hosts, inventory, ssh_config, known_hosts, identity, accept_new_host_key
    )
    if not targets and not pprof_urls and not tidb_zip_urls:
        raise click.UsageError("name the hosts with --hosts or --inventory, or use --local")
    specs = captures.profile(profile)
    try:
        if perf_process:
            specs += captures.perf_specs(perf_process)
        if iftop_interface:
            specs += (captures.iftop_spec(iftop_interface),)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    try:
        opts = session.Options(
            window=duration,
            interval=interval,
            specs=specs,
            pprof=pprof_urls,
            tidb_zip=tidb_zip_urls,
            watch=watch,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--pprof/--tidb-zip/--watch") from None
    if dry_run:
        click.echo(
            "## per host: window captures on a channel each; start and end snapshots one after another "
            "in one control shell (`sh -s`, fed over stdin)"
        )
        for t in targets:
            where = (
                "local"
                if t.hostname is None
                else f"ssh {t.user + '@' if t.user else ''}{t.hostname}" + (f":{t.port}" if t.port else "")
            )
            click.echo(f"# {t.name} ({where})")
            workdir = session.workdir(opts.run_id, t.name)
            for spec in opts.specs:
                cmd = spec.render(interval=interval, window=duration, workdir=workdir, watch=watch)
                if spec.phase == "window":
                    line = session.wrap(
                        cmd, deadline_s=duration + opts.grace, workdir=workdir, run_id=opts.run_id
                    )
                else:
                    line = session.snapshot_line(
                        cmd, deadline_s=session.SNAPSHOT_TIMEOUT_S, workdir=workdir, run_id=opts.run_id
                    )
                first, *more = line.splitlines()  # the thread sampler carries its script: kilobytes
                click.echo(f"[{spec.phase}] {first}" + (f" [... {len(more)} more lines]" if more else ""))
        from perfkit.collectors import pprof

        services = [(b, pprof.plan) for b in opts.pprof] + [(b, pprof.zip_plan) for b in opts.tidb_zip]
        for base, steps in services:
            url, host = pprof.parse_base(base)
            click.echo(f"# {host} (HTTP from this machine)")
            for _cid, step in steps(url, duration):
                click.echo(f"[window] GET {step}")
        return
    click.echo(
        f"collecting {duration}s on {len(targets)} host(s), {len(opts.specs)} captures each -> {output}",
        err=True,
    )
    live = _LiveStatus(sys.stderr)
    result = session.collect(targets, output, opts, progress=live.message, roles=roles, status=live)
    # After SIGHUP the terminal is gone and these writes fail: the archive is written, and the exit
    # code must still say how the run ended.
    with contextlib.suppress(OSError):
        live.message("")
        click.echo(f"{'host':20s} {'status':12s} {'captures':>8s} {'bytes':>12s}  reason")
        for h in result.hosts:
            click.echo(f"{h.host:20s} {h.status:12s} {h.captures:8d} {h.bytes:12,d}  {h.reason}")
        click.echo(f"{result.run.status}: wrote {result.path}")
    sys.exit(result.exit_code)


def _thread_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        counts = tuple(int(x) for x in value.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter("a comma-separated list of thread counts, e.g. 1,2,4,8") from None
    if not counts or min(counts) < 1:
        raise click.BadParameter("thread counts must be ≥ 1")
    return counts


_SECRET_KEYS = ("password", "passwd", "pwd", "secret", "token")


def _load_plan(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A YAML plan becomes the command's defaults, so any flag given on the line overrides it."""
    if value is None:
        return None
    import yaml

    try:
        plan = yaml.safe_load(value.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"{value}: {exc}") from None
    if not isinstance(plan, dict):
        raise click.BadParameter(f"{value}: a mapping of option names to values")
    names = {p.name for p in ctx.command.params if p.name not in ("plan",)}
    aliases = {
        "time": "time_s",
        "rest": "rest_s",
        "lua": "lua_script",
        "sb_opt": "sb_opts",
        "prop": "props",
        "bin": "binary",
    }
    defaults: dict[str, Any] = {}
    for key, val in plan.items():
        name = aliases.get(str(key).replace("-", "_"), str(key).replace("-", "_"))
        if any(word in name.lower() for word in _SECRET_KEYS) and name != "mysql_password_file":
            raise click.BadParameter(f"{value}: {key!r}: a plan never holds a secret (use the environment)")
        if name not in names:
            raise click.BadParameter(f"{value}: unknown option {key!r}")
        defaults[name] = ",".join(map(str, val)) if name == "threads" and isinstance(val, list) else val
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


@main.group()
def run() -> None:
    """Sweep a load generator across thread counts, capturing the hosts during every step."""


def _options(*options: Any) -> Any:
    def apply(f: Any) -> Any:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def _run_options(tool: str, default_db: str) -> Any:
    """The options every `run` command shares: plan, database, sweep, captures, output."""
    return _options(
        click.option(
            "--plan",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            is_eager=True,
            expose_value=True,
            callback=_load_plan,
            help="YAML plan (configs/sweep-*.yaml) giving any of these options; flags override it.",
        ),
        click.option("--mysql-host", default="127.0.0.1", show_default=True),
        click.option("--mysql-port", type=click.IntRange(1, 65535), default=3306, show_default=True),
        click.option("--mysql-socket", help="Unix socket instead of host and port (sysbench only)."),
        click.option("--mysql-user", default="root", show_default=True),
        click.option("--mysql-db", default=default_db, show_default=True),
        click.option(
            "--mysql-password-file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="File holding the password (0600). Else $PERFKIT_MYSQL_PASSWORD; never a flag value.",
        ),
        click.option(
            "--bin", "binary", default=tool, show_default=True, help=f"The {tool} binary on the load host."
        ),
        click.option(
            "--client-host",
            help="Run the load generator on these SSH hosts (user@host[:port], comma-separated), not here; "
            "each is captured too. Several start every step together, its threads split evenly across them, "
            "the remainder to the first ones (10 over 3: 4,3,3); a step needs a thread per host. "
            f"Default: the --inventory hosts with the role `{LOAD_ROLE}`, else this machine.",
        ),
        click.option("--prepare", is_flag=True, help="Create and fill the tables first (dropping old ones)."),
        click.option("--cleanup", is_flag=True, help="Drop the tables at the end."),
        click.option(
            "--threads", callback=_thread_list, help="Thread counts to sweep, e.g. 8,24,72,216,648."
        ),
        click.option(
            "--adaptive",
            is_flag=True,
            help="Search for the peak: double from --start-threads with short probes until throughput passed "
            "its peak, p95 breaks --p95-sla-ms, errors appear or --max-threads; then refine around the best.",
        ),
        click.option("--start-threads", type=click.IntRange(1), default=1, show_default=True),
        click.option("--max-threads", type=click.IntRange(1), default=1024, show_default=True),
        click.option(
            "--p95-sla-ms", type=click.FloatRange(0, min_open=True), help="Adaptive: stop above this p95."
        ),
        click.option(
            "--time", "time_s", type=click.IntRange(1), default=60, show_default=True, help="Seconds/step."
        ),
        click.option(
            "--warmup", type=click.IntRange(0), default=0, show_default=True, help="Warm-up seconds/step."
        ),
        click.option(
            "--cooldown-max",
            type=click.FloatRange(0),
            default=30,
            show_default=True,
            help="Longest wait between steps for TIME_WAIT sockets to drain.",
        ),
        click.option(
            "--rest",
            "rest_s",
            type=click.IntRange(0),
            default=REST_S,
            show_default=True,
            help="A sweep of one thread count: seconds of thread sampling with no load before it, which "
            "tell the threads a server parks whatever the load from the load's own waits (0: none).",
        ),
        click.option(
            "--repeat",
            "repeats",
            type=click.IntRange(1),
            default=1,
            show_default=True,
            help="Run the thread list this many times over (rounds: 1,4,16,1,4,16): each step's runs show "
            "the spread between runs, which `perfkit compare` judges a change against (3 is a good start).",
        ),
        click.option(
            "--on-failure",
            type=click.Choice(["stop", "continue"]),
            default="stop",
            show_default=True,
            help="After a failed step: end the sweep, or go on with the next.",
        ),
        click.option(
            "--collect-local/--no-collect-local",
            default=None,
            help="Capture this machine too [default: when the load runs here].",
        ),
        click.option("--collect-on", "collect_on", help="Also capture these SSH hosts (comma-separated)."),
        click.option(
            "--inventory",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Also capture the hosts of this inventory or TiUP topology.",
        ),
        click.option(
            "--profile", type=click.Choice(["default", "minimal"]), default="default", show_default=True
        ),
        click.option(
            "--watch",
            "watch",
            metavar="NAME",
            multiple=True,
            help="Also follow the threads and cgroup of processes named NAME. Repeatable.",
        ),
        click.option(
            "--perf",
            "perf_process",
            metavar="NAME",
            help="Opt-in: perf record -F 99 -g on the process NAME in every step, stacks folded on the "
            "host (`perfkit compare --steps A,B`: what grows with concurrency).",
        ),
        click.option(
            "--pprof",
            "pprof_urls",
            metavar="URL",
            multiple=True,
            help="Opt-in: fetch Go pprof profiles in every step from http://host:port (TiDB 10080, PD "
            "2379, TiKV 20180). Repeatable.",
        ),
        _ssh_options,
        click.option(
            "--no-db-sampler", is_flag=True, help="Do not sample SHOW GLOBAL STATUS during the steps."
        ),
        click.option(
            "-o",
            "--output",
            type=click.Path(path_type=Path),
            required=True,
            help="Archive to write: a new directory, or a .tar.gz file.",
        ),
        click.option("--no-report", is_flag=True, help="Do not analyze the archive at the end."),
    )


@run.command("sysbench")
@_run_options("sysbench", "sbtest")
@click.option("--workload", default="oltp_read_write", show_default=True, help="Built-in Lua workload.")
@click.option(
    "--lua",
    "lua_script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Your own Lua script instead of a built-in workload.",
)
@click.option("--tables", type=click.IntRange(1), default=1, show_default=True)
@click.option("--table-size", type=click.IntRange(1), default=10000, show_default=True)
@click.option("--percentile", type=click.IntRange(0, 100), default=95, show_default=True)
@click.option("--histogram", is_flag=True, help="Ask sysbench for its latency histogram.")
@click.option("--sb-opt", "sb_opts", multiple=True, metavar="--KEY=VALUE", help="More sysbench/Lua options.")
def run_sysbench(**kw: Any) -> None:
    """sysbench against MySQL/MariaDB/TiDB, one step per thread count."""
    from perfkit.collectors.load_sysbench import Workload
    from perfkit.collectors.plan import Sysbench

    def load() -> Sysbench:
        workload = Workload(
            name=kw["workload"],
            script=kw["lua_script"],
            tables=kw["tables"],
            table_size=kw["table_size"],
            percentile=kw["percentile"],
            histogram=kw["histogram"],
            extra=tuple(kw["sb_opts"]),
        )
        return Sysbench(workload, binary=kw["binary"])

    _run_plan(_sweep_plan(kw, load, hint="--workload/--lua/--sb-opt"))


@run.command("ycsb")
@_run_options("go-ycsb", "ycsb")
@click.option(
    "--workload",
    type=click.Choice(["a", "b", "c", "d", "e", "f"]),
    default="a",
    show_default=True,
    help="YCSB core workload (go-ycsb's property files).",
)
@click.option(
    "--workload-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Your own workload property file instead.",
)
@click.option("--recordcount", type=click.IntRange(1), default=10000, show_default=True)
@click.option("--prop", "props", multiple=True, metavar="NAME=VALUE", help="More go-ycsb properties.")
@click.option(
    "--db",
    "ycsb_db",
    type=click.Choice(["mysql", "tikv"]),
    default="mysql",
    show_default=True,
    help="MySQL protocol (the --mysql-* options), or TiKV directly through --pd.",
)
@click.option("--pd", help="TiKV: PD endpoints, host:port[,host:port...].")
@click.option("--tikv-type", type=click.Choice(["raw", "txn"]), default="raw", show_default=True)
def run_ycsb(**kw: Any) -> None:
    """go-ycsb against MySQL/MariaDB/TiDB or TiKV, one step per thread count."""
    from perfkit.collectors.load_goycsb import YcsbWorkload
    from perfkit.collectors.plan import Ycsb

    tikv = kw["ycsb_db"] == "tikv"
    if tikv != bool(kw["pd"]):
        raise click.UsageError("--pd goes with --db tikv, and --db tikv needs --pd")

    def load() -> Ycsb:
        props = tuple(tuple(p.split("=", 1)) for p in kw["props"])
        if any(len(p) != 2 for p in props):
            raise click.BadParameter("takes NAME=VALUE", param_hint="--prop")
        workload = YcsbWorkload(
            name=kw["workload"], file=kw["workload_file"], recordcount=kw["recordcount"], props=props
        )
        return Ycsb(workload, binary=kw["binary"], pd=kw["pd"], tikv_type=kw["tikv_type"])

    _run_plan(_sweep_plan(kw, load, hint="--workload/--workload-file/--prop", database=not tikv))


@run.command("tpcc")
@_run_options("go-tpc", "tpcc")
@click.option("--warehouses", type=click.IntRange(1), default=1, show_default=True)
def run_tpcc(**kw: Any) -> None:
    """go-tpc TPC-C against MySQL/MariaDB/TiDB, one step per thread count."""
    from perfkit.collectors.plan import Tpcc

    _run_plan(_sweep_plan(kw, lambda: Tpcc(kw["warehouses"], binary=kw["binary"]), hint="--warehouses"))


def _sweep_plan(kw: dict[str, Any], load: Any, *, hint: str, database: bool = True) -> Any:
    """A run command's options as a checked `SweepPlan`; a bad value is a click error naming its
    option. `load()` makes the command's load (a workload it refuses raises ValueError: `hint`
    names the options it came from); `database`: False for go-ycsb on TiKV."""
    from perfkit.collectors import driver
    from perfkit.collectors.mysql_sampler import DbTarget
    from perfkit.collectors.plan import PlanError, SweepPlan, capture_options, read_password
    from perfkit.transport import LOCAL

    check_new_output(kw["output"])  # first: a used output is refused before anything else is looked at
    try:
        db = None
        if database:
            db = DbTarget(
                host=kw["mysql_host"],
                port=kw["mysql_port"],
                user=kw["mysql_user"],
                db=kw["mysql_db"],
                password=read_password(kw["mysql_password_file"]),
                socket=kw["mysql_socket"],
            )
        try:
            spec = load()
        except PlanError:
            raise
        except ValueError as exc:  # the workload's own checks
            raise click.BadParameter(str(exc), param_hint=hint) from None
        if bool(kw["threads"]) == kw["adaptive"]:
            raise click.UsageError("give either --threads or --adaptive")
        adaptive = None
        if kw["adaptive"]:
            adaptive = driver.Adaptive(
                start=kw["start_threads"], max_threads=kw["max_threads"], p95_sla_ms=kw["p95_sla_ms"]
            )
        steps = driver.Plan(
            threads=kw["threads"] or (),
            adaptive=adaptive,
            time_s=kw["time_s"],
            warmup_s=kw["warmup"],
            cooldown_max_s=kw["cooldown_max"],
            on_failure=kw["on_failure"],
            repeats=kw["repeats"],
            rest_s=kw["rest_s"],
        )

        ssh = (kw["ssh_config"], kw["known_hosts"], kw["identity"], kw["accept_new_host_key"])

        def hosts(local: bool, names: str | None, inventory: Path | None) -> tuple[Any, ...]:
            return tuple(_targets(local, names, inventory, *ssh)[0])

        load_hosts = hosts(False, kw["client_host"], None)
        if not load_hosts and kw["inventory"] is not None:  # the inventory's load hosts, by role
            everyone, roles = _targets(False, None, kw["inventory"], *ssh)
            load_hosts = tuple(t for t in everyone if LOAD_ROLE in roles.get(t.name, ()))
        local = kw["collect_local"] if kw["collect_local"] is not None else not load_hosts
        # every load host is captured too (an inventory's are among its hosts already)
        on = ",".join(x for x in (kw["client_host"], kw["collect_on"]) if x)
        return SweepPlan(
            load=spec,
            steps=steps,
            output=kw["output"],
            db=db,
            load_hosts=load_hosts or (LOCAL,),
            capture_hosts=hosts(local, on, kw["inventory"]),
            capture=capture_options(
                kw["profile"], perf=kw["perf_process"], watch=kw["watch"], pprof=tuple(kw["pprof_urls"])
            ),
            db_sampler=not kw["no_db_sampler"],
            prepare=kw["prepare"],
            cleanup=kw["cleanup"],
            report=not kw["no_report"],
            plan_file=kw["plan"],
            options={k: v for k, v in kw.items() if k != "plan"},
        )
    except PlanError as exc:
        raise click.BadParameter(exc.reason, param_hint=exc.option) from None


def _run_plan(plan: Any) -> None:
    """Run a checked plan and say what it did: progress on stderr; the step table, then the
    report's summary, on stdout; the exit code from the run, then the report."""
    from perfkit.collectors import session
    from perfkit.collectors.plan import InterruptedBeforeSweep, PlanError, run_plan, step_lines

    def table(result: Any) -> None:  # before the analysis, which takes a while on a long sweep
        for line in step_lines(result):
            click.echo(printable(line))

    try:
        result = run_plan(plan, progress=lambda msg: click.echo(printable(msg), err=True), swept=table)
    except InterruptedBeforeSweep as exc:
        with contextlib.suppress(OSError):  # after SIGHUP there is no terminal to write to
            click.echo(printable(str(exc)), err=True)
        sys.exit(session.EXIT_INTERRUPTED)
    except PlanError as exc:
        raise click.BadParameter(exc.reason, param_hint=exc.option) from None
    report = result.report
    if report is not None and report.error:
        click.echo(f"report: not written: {report.error}", err=True)
    elif report is not None:
        from perfkit.pipeline import summary_lines

        for line in summary_lines(report.analysis):
            click.echo(line)
        click.echo("wrote " + ", ".join(str(p) for p in report.files))
    if result.cleanup_error:
        click.echo(f"warning: --cleanup failed: {printable(result.cleanup_error)}", err=True)
    code = result.exit_code  # the run's own outcome first (a failed --cleanup makes it partial)
    if code == session.EXIT_OK and report is not None and not report.complete:
        code = EXIT_INCOMPLETE  # a complete run whose report lacks a failed rule's say
    sys.exit(code)


def _targets(
    use_local: bool,
    hosts: str | None,
    inventory: Path | None,
    ssh_config: str | None,
    known_hosts: str | None,
    identity: str | None,
    accept_new_host_key: bool,
) -> tuple[list, dict[str, tuple[str, ...]]]:
    """Hosts to capture on (this machine first when `use_local`), and their roles from an inventory."""
    from perfkit.transport import LOCAL, parse_host

    ssh = {
        "ssh_config": ssh_config,
        "known_hosts": known_hosts,
        "key_filename": identity,
        "accept_new_host_key": accept_new_host_key,
    }
    targets = [LOCAL] if use_local else []
    targets += [parse_host(text.strip(), **ssh) for text in (hosts or "").split(",") if text.strip()]
    roles: dict[str, tuple[str, ...]] = {}
    if inventory is not None:
        from perfkit.config import load_inventory

        inv = load_inventory(inventory, **ssh)
        targets += [h.spec for h in inv]
        roles = {h.name: h.roles for h in inv}
    if len({t.name for t in targets}) != len(targets):
        raise click.UsageError("a host is named twice")
    return targets, roles


def _time_zone(value: str) -> str:
    """--tz checked before any work: a typo would otherwise drop every capture as unreadable."""
    from perfkit.config import time_zone
    from perfkit.errors import ConfigError

    try:
        return time_zone(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--tz") from None


class _LiveStatus:
    """Redraws one status line on a terminal; elsewhere (logs, CI) prints one every 10 seconds."""

    def __init__(self, stream: Any):
        self.stream, self.tty, self.last = stream, stream.isatty(), 0.0

    def __call__(self, status: Any) -> None:
        now = time.monotonic()
        if self.tty:
            if now - self.last >= 0.5:
                self.stream.write("\r\x1b[2K" + status.line())
                self.stream.flush()
                self.last = now
        elif now - self.last >= 10:
            self.stream.write(status.line() + "\n")
            self.last = now

    def message(self, line: str) -> None:
        """A line that stays (a host finished): clears the status line first on a terminal."""
        if line or self.tty:
            self.stream.write(("\r\x1b[2K" if self.tty else "") + printable(line) + ("\n" if line else ""))
            self.stream.flush()

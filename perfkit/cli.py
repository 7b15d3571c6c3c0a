"""The `perfkit` command: a thin click layer over library functions.

Exit codes: 0 success; 1 an error perfkit reports (bad input, unreadable archive, invalid config,
every host failed); 2 usage error (click); 3 `collect` finished partially (a host or capture failed;
the archive holds the rest); 4 `analyze --fail-on` found findings at or above the given severity;
130 interrupted (the archive is still written, marked interrupted).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from perfkit import __version__
from perfkit.errors import PerfkitError

EXIT_ERROR = 1
EXIT_FINDINGS = 4


class _Group(click.Group):
    """Turns perfkit's own errors into one line on stderr, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except PerfkitError as exc:
            raise _Fail(str(exc)) from None
        except OSError as exc:
            raise _Fail(f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")) from None


class _Fail(click.ClickException):
    exit_code = EXIT_ERROR

    def format_message(self) -> str:
        return _printable(self.message)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="perfkit")
def main() -> None:
    """perfkit: find why a database cluster stops scaling under load."""


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
    help="Time zone of the captured hosts, for timestamps that carry none.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["critical", "warning"]),
    help=f"Exit {EXIT_FINDINGS} when a finding of this severity or worse exists (CI gates).",
)
def analyze(
    source: Path, outdir: Path | None, as_json: bool, thresholds: Path | None, tz: str, fail_on: str | None
) -> None:
    """Analyze an archive directory, a .tar.gz, or a single capture or sweep table (CSV)."""
    from perfkit.pipeline import analyze_path, summary_lines, write_reports
    from perfkit.reports import findings_json

    result = analyze_path(source, thresholds=thresholds, tz=tz)
    if outdir is not None:
        written = write_reports(result, outdir)
    if as_json:
        click.echo(findings_json.render(result), nl=False)
    else:
        for line in summary_lines(result):
            click.echo(line)
        if outdir is not None:
            click.echo("wrote " + ", ".join(str(p) for p in written))
    if fail_on and result.has_findings(at_least=fail_on):
        sys.exit(EXIT_FINDINGS)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=False)
@click.option("--kind", help="Parser to use (default: sniffed from the content). See --list.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not stdout."
)
@click.option("--host", help="Host name to put in the host column.")
@click.option("--tz", default="UTC", show_default=True, help="Time zone of the host that made the capture.")
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
    """Parse one capture FILE into a table (CSV or JSON records)."""
    from perfkit import parsers
    from perfkit.parsers._common import head

    if list_kinds:
        for name, mod in sorted(parsers.registry().items()):
            click.echo(f"{name:10s} {mod.__doc__.strip().splitlines()[0]}")
        return
    if file is None:
        raise click.UsageError("missing FILE (or --list)")
    if kind is None:
        kind = parsers.sniff_kind(head(file))
        if kind is None:
            raise _Fail(
                f"{file}: no parser recognises this format; name one with --kind "
                f"({', '.join(sorted(parsers.registry()))})"
            )
    elif kind not in parsers.registry():
        raise click.BadParameter(
            f"unknown kind {kind!r}; known: {', '.join(sorted(parsers.registry()))}", param_hint="--kind"
        )
    df = parsers.get(kind).parse(file, host=host, tz=tz)
    if fmt == "csv":
        text = df.to_csv(index=False, date_format="%Y-%m-%dT%H:%M:%S%z")
    else:
        text = json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), indent=1) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
    dropped = df.attrs.get("dropped_lines", 0)
    if dropped:
        click.echo(f"{file}: {dropped} cut-off last line dropped", err=True)


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
@click.option("--ssh-config", type=click.Path(exists=True, dir_okay=False), help="ssh_config file to honour.")
@click.option(
    "--known-hosts", type=click.Path(dir_okay=False), help="known_hosts file (default: ~/.ssh/known_hosts)."
)
@click.option("-i", "--identity", type=click.Path(exists=True, dir_okay=False), help="Private key file.")
@click.option(
    "--accept-new-host-key",
    is_flag=True,
    help="Trust and record the key of a host not yet in known_hosts (never a changed key).",
)
@click.option(
    "--perf",
    "perf_process",
    metavar="NAME",
    help="Opt-in: perf record -F 99 -g on the process NAME; stacks folded on the host.",
)
@click.option("--iftop", "iftop_interface", metavar="IFACE", help="Opt-in: iftop on interface IFACE.")
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
    dry_run: bool,
) -> None:
    """Capture OS activity on this machine and/or SSH hosts into one archive."""
    from perfkit.collectors import captures, session
    from perfkit.transport import LOCAL, parse_host

    targets = [LOCAL] if use_local else []
    for text in (hosts or "").split(","):
        if text.strip():
            targets.append(
                parse_host(
                    text.strip(),
                    ssh_config=ssh_config,
                    known_hosts=known_hosts,
                    key_filename=identity,
                    accept_new_host_key=accept_new_host_key,
                )
            )
    roles: dict[str, tuple[str, ...]] = {}
    if inventory is not None:
        from perfkit.config import load_inventory

        inv = load_inventory(
            inventory,
            ssh_config=ssh_config,
            known_hosts=known_hosts,
            key_filename=identity,
            accept_new_host_key=accept_new_host_key,
        )
        targets += [h.spec for h in inv]
        roles = {h.name: h.roles for h in inv}
    if not targets and not pprof_urls and not tidb_zip_urls:
        raise click.UsageError("name the hosts with --hosts or --inventory, or use --local")
    if len({t.name for t in targets}) != len(targets):
        raise click.UsageError("a host is named twice")
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
            window=duration, interval=interval, specs=specs, pprof=pprof_urls, tidb_zip=tidb_zip_urls
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--pprof/--tidb-zip") from None
    if dry_run:
        for t in targets:
            where = (
                "local"
                if t.hostname is None
                else f"ssh {t.user + '@' if t.user else ''}{t.hostname}" + (f":{t.port}" if t.port else "")
            )
            click.echo(f"# {t.name} ({where})")
            for spec in opts.specs:
                cmd = spec.render(
                    interval=interval, window=duration, workdir=f"/tmp/{session.tag(opts.run_id)}"
                )
                deadline = duration + opts.grace if spec.phase == "window" else session.SNAPSHOT_TIMEOUT_S
                click.echo(
                    f"[{spec.phase}] "
                    + session.wrap(
                        cmd,
                        deadline_s=deadline,
                        workdir=f"/tmp/{session.tag(opts.run_id)}",
                        run_id=opts.run_id,
                    )
                )
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
    live.message("")
    click.echo(f"{'host':20s} {'status':12s} {'captures':>8s} {'bytes':>12s}  reason")
    for h in result.hosts:
        click.echo(f"{h.host:20s} {h.status:12s} {h.captures:8d} {h.bytes:12,d}  {h.reason}")
    click.echo(f"{result.manifest['status']}: wrote {result.path}")
    sys.exit(result.exit_code)


def _printable(text: str) -> str:
    """Control characters from hosts or captures shown escaped, never sent to the terminal."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


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
            self.stream.write(("\r\x1b[2K" if self.tty else "") + _printable(line) + ("\n" if line else ""))
            self.stream.flush()

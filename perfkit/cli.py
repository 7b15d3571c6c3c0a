"""The `perfkit` command: a thin click layer over library functions.

Exit codes: 0 success; 1 an error perfkit reports (bad input, unreadable archive, invalid config);
2 usage error (click); 4 `analyze --fail-on` found findings at or above the given severity.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
        return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in self.message)


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

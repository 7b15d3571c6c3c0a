"""Reports: self-contained HTML, Markdown and JSON; text from captures is never markup."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfkit.cli import main
from perfkit.pipeline import analyze_path, write_reports
from perfkit.reports import html as html_report
from perfkit.reports import markdown, use

from .conftest import FIXTURES, ROOT
from .test_use import make_run_archive

PAYLOADS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>']


@pytest.fixture()
def hostile_archive(tmp_path: Path) -> Path:
    """A manifest archive whose host name, file names and capture text carry XSS payloads."""
    root = tmp_path / "run"
    host = PAYLOADS[0]
    (root / "hosts" / "h").mkdir(parents=True)
    shutil.copy(FIXTURES / "vmstat" / "procps-4.0.2-t.txt", root / "hosts" / "h" / "vmstat.out")
    (root / "hosts" / "h" / f"{PAYLOADS[1]}.out").write_text(f"{PAYLOADS[2]}\nnot a capture\n")
    shutil.copy(FIXTURES / "sweep" / "seed002-qps-p95.txt", root / "sweep.csv")
    manifest = {
        "format_version": 1,
        "perfkit_version": "0.1.0",
        "run_id": "x",
        "status": "complete",
        "captures": [{"id": "vmstat", "host": host, "kind": "vmstat", "path": "hosts/h/vmstat.out"}],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_payloads_never_reach_the_page_raw(hostile_archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    write_reports(analyze_path(hostile_archive), out)
    page = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    for payload in PAYLOADS:
        assert payload not in page and payload not in md
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # shown as text in the unparsed list
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the host name
    assert "\\<img src=x onerror=alert\\(1\\)\\>" in md
    doc = json.loads((out / "findings.json").read_text())
    assert any(PAYLOADS[1] in u["path"] for u in doc["inputs"]["unparsed"])  # JSON keeps data verbatim


def test_page_is_self_contained(hostile_archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    write_reports(analyze_path(hostile_archive), out)
    page = (out / "report.html").read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<script|<link|<iframe", page, re.I)
    for src in re.findall(r'src="([^"]*)"', page):
        assert src.startswith("data:image/png;base64,")
    # the SVG namespace of an inline flame graph is a name, not a load
    assert not re.search(r"https?://", page.replace('xmlns="http://www.w3.org/2000/svg"', ""))


def test_jinja_autoescape_is_on_and_templates_have_no_safe_filter() -> None:
    assert html_report._env().autoescape is True
    for tpl in (ROOT / "reports" / "templates").glob("*.j2"):
        assert "|safe" not in tpl.read_text().replace(" ", "")


def test_markdown_lists_what_was_and_was_not_read(tmp_path: Path) -> None:
    out = tmp_path / "r"
    analysis = analyze_path(ROOT / "examples" / "seed000-tidb-write-only.tar.gz")
    write_reports(analysis, out)
    md = (out / "report.md").read_text()
    assert "| os\\_seed000/iostatx\\_1 | iostat |" in md and "| os\\_seed000/iotop\\_1 | iotop |" in md
    assert "Not read:" not in md  # every file of the example has a parser
    # the verdict is the first line after the title (which rule wins is the analyzers' ranking)
    assert md.splitlines()[2].startswith(f"**Verdict: {markdown.esc(analysis.verdict.title)}.**")
    # a foreign directory with a file no parser claims: listed with the reason, never dropped
    foreign = tmp_path / "foreign" / "os_x"
    foreign.mkdir(parents=True)
    shutil.copy(FIXTURES / "iostat" / "sysstat-12.6-x-d-t-iso.txt", foreign / "iostatx_1")
    (foreign / "notes_1").write_text("we changed the raid controller cache on tuesday\n")
    write_reports(analyze_path(tmp_path / "foreign"), tmp_path / "r2")
    md = (tmp_path / "r2" / "report.md").read_text()
    assert "Not read:" in md and "os\\_x/notes\\_1" in md and "no parser recognises this format" in md
    assert "| os\\_x/iostatx\\_1 | iostat |" in md


def _analysis(source: Path):
    """The analysis of `source` with every rule; rules are not under test here, the renderers are."""
    return analyze_path(source)


def test_a_usl_fit_through_three_levels_is_marked_exact(tmp_path: Path) -> None:
    table = tmp_path / "sweep.csv"
    table.write_text("threads,tps\n1,2594.3\n4,4168.5\n16,3193.9\n")  # the small-redo-log sweep
    write_reports(_analysis(table), tmp_path / "r")
    caveat = "3 load levels for 3 coefficients: the curve passes through each"
    for name in ("report.md", "report.html"):
        text = (tmp_path / "r" / name).read_text()
        line = text[text.index("USL fit: σ") :].split("</p>")[0].split("\n\n")[0]  # the sweep's line
        assert caveat in line, name


def test_run_archive_report_is_organised_by_resource_and_host(tmp_path: Path) -> None:
    root = make_run_archive(tmp_path / "run")
    out = tmp_path / "r"
    write_reports(_analysis(root), out)
    page = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    # the verdict first, then the sweep, the timeline, then resources in RESOURCES order
    order = [page.index(s) for s in ('id="verdict"', 'id="sweep"', 'id="timeline"', 'id="resource-cpu"')]
    assert order == sorted(order)
    assert (
        page.index('id="resource-mem"') < page.index('id="resource-disk"') < page.index('id="resource-net"')
    )
    assert '<table class="use">' in page and "4 threads (t0004)" in page and "53.0 (55.8)" in page
    assert (out / "plots" / "timeline.png").exists()
    md_lines = md.splitlines()
    assert md_lines[2].startswith("**Verdict:")
    heads = [line for line in md_lines if line.startswith("## ")]
    assert heads[:3] == ["## Sweep", "## Timeline", "## CPU"]
    assert "### db1" in md and "| utilization | all | busy % \\(100 − idle − iowait\\) | 53.0 (55.8) |" in md
    doc = json.loads((out / "findings.json").read_text())
    for key in ("format_version", "source", "sweep", "findings", "skipped", "inputs"):
        assert key in doc  # design.md's contract, unchanged
    assert doc["timeline"]["steps"][0]["threads"] == 4
    busy = [r for r in doc["use"] if r["metric"] == use.BUSY and r["host"] == "db1"]
    assert busy and busy[0]["mean"] == pytest.approx(53.045)


def test_every_finding_is_rendered_once_under_its_resource(tmp_path: Path) -> None:
    analysis = _analysis(ROOT / "examples" / "seed000-tidb-write-only.tar.gz")
    page = html_report.render(analysis, [])
    for i, f in enumerate(analysis.findings):
        assert page.count(f'id="finding-{i}"') == 1
        section = page.rfind('<h2 id="', 0, page.index(f'id="finding-{i}"'))
        want = "sweep" if f.rule.startswith("sweep.") else f"resource-{use.resource_of(f.rule)}"
        assert page.startswith(f'<h2 id="{want}"', section), f.rule


def _profile_archive(root: Path) -> Path:
    (root / "hosts" / "h").mkdir(parents=True)
    text = (FIXTURES / "folded" / "perf-6.1-python-awk.txt").read_text()
    (root / "hosts" / "h" / "perf-folded.out").write_text(text + "evil;<script>alert(1)</script> 5\n")
    shutil.copy(FIXTURES / "sweep" / "seed002-qps-p95.txt", root / "sweep.csv")
    manifest = {
        "format_version": 1,
        "run_id": "p",
        "status": "complete",
        "captures": [
            {"id": "perf-folded", "host": "db1", "kind": "folded", "path": "hosts/h/perf-folded.out"}
        ],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_flame_graph_inlined_and_escaped(tmp_path: Path) -> None:
    pytest.importorskip("perfkit.reports.flamegraph")
    out = tmp_path / "r"
    write_reports(_analysis(_profile_archive(tmp_path / "p")), out)
    page = (out / "report.html").read_text()
    assert 'id="flame-graphs"' in page and "<svg" in page and "<title>" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert (out / "plots" / "flame-0.svg").read_text().startswith("<svg")
    assert "](plots/flame-0.svg)" in (out / "report.md").read_text()


def test_flame_graph_section_degrades_without_the_renderer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "perfkit.reports.flamegraph", None)  # import raises ImportError
    out = tmp_path / "r"
    write_reports(_analysis(_profile_archive(tmp_path / "p")), out)
    page = (out / "report.html").read_text()
    assert 'id="flame-graphs"' in page and "<svg" not in page and "not installed" in page
    assert not list((out / "plots").glob("*.svg"))
    assert "not installed" in (out / "report.md").read_text()


@pytest.mark.parametrize("packed", [False, True], ids=["directory", "tar.gz"])
def test_file_name_not_utf8_is_read_and_shown_escaped(tmp_path: Path, packed: bool) -> None:
    # a vmstat capture named b"vmstat_\xff" (not UTF-8): matplotlib crashed drawing it in a title, and
    # a .tar.gz holding it was refused whole; now it is read, and shown as `vmstat_\xff` everywhere
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "vmstat" / "procps-4.0.2-t.txt", os.fsencode(run) + b"/vmstat_\xff")
    shutil.copy(FIXTURES / "sweep" / "seed002-qps-p95.txt", run / "sweep.csv")
    target = run
    if packed:
        target = tmp_path / "run.tar.gz"
        subprocess.run(["tar", "czf", str(target), "-C", str(tmp_path), "run"], check=True)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["analyze", str(target), "-o", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "2 captures read, 0 not read" in res.output
    doc = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    [vm] = [p for p in doc["inputs"]["parsed"] if p["kind"] == "vmstat"]
    assert (vm["path"], vm["rows"]) == ("vmstat_\\xff", 4)  # since-boot row + 3
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "vmstat_\\xff" in page and "\ufffd" not in page
    assert "vmstat\\_\\\\xff" in (out / "report.md").read_text(encoding="utf-8")  # Markdown-escaped
    assert (out / "plots" / "vmstat-0.png").stat().st_size > 1000  # its title drawn
    res = CliRunner().invoke(main, ["analyze", str(target), "--json"], catch_exceptions=False)
    assert res.exit_code == 0 and '"path": "vmstat_\\\\xff"' in res.stdout

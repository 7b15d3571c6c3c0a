"""Reports: self-contained HTML, Markdown and JSON; text from captures is never markup."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from perfkit.pipeline import analyze_path, write_reports
from perfkit.reports import html as html_report

from .conftest import FIXTURES, ROOT

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
    assert not re.search(r"https?://", page)


def test_jinja_autoescape_is_on_and_templates_have_no_safe_filter() -> None:
    assert html_report._env().autoescape is True
    for tpl in (ROOT / "reports" / "templates").glob("*.j2"):
        assert "|safe" not in tpl.read_text().replace(" ", "")


def test_markdown_lists_what_was_and_was_not_read(tmp_path: Path) -> None:
    out = tmp_path / "r"
    write_reports(analyze_path(ROOT / "examples" / "seed000-tidb-write-only.tar.gz"), out)
    md = (out / "report.md").read_text()
    assert "| os\\_seed000/iostatx\\_1 | iostat |" in md and "| os\\_seed000/iotop\\_1 | iotop |" in md
    assert "Not read:" not in md  # every file of the example has a parser
    assert md.splitlines()[2].startswith("**Verdict: sda: one small synchronous IO at a time")
    # a foreign directory with a file no parser claims: listed with the reason, never dropped
    foreign = tmp_path / "foreign" / "os_x"
    foreign.mkdir(parents=True)
    shutil.copy(FIXTURES / "iostat" / "sysstat-12.6-x-d-t-iso.txt", foreign / "iostatx_1")
    (foreign / "notes_1").write_text("we changed the raid controller cache on tuesday\n")
    write_reports(analyze_path(tmp_path / "foreign"), tmp_path / "r2")
    md = (tmp_path / "r2" / "report.md").read_text()
    assert "Not read:" in md and "os\\_x/notes\\_1" in md and "no parser recognises this format" in md
    assert "| os\\_x/iostatx\\_1 | iostat |" in md

"""report.html in a real browser: headless Chromium opens it from file:// with no network.

Checks that every plot decodes and shows up in a screenshot, and that XSS payloads carried by the
captures (a process named `<img src=x onerror=alert(1)>` in top, a host named
`<script>alert(1)</script>`) never execute and are shown as text. A probe script is injected only
into the test's copies of the page: it turns `alert` into a DOM marker and writes what it saw into
a `<pre id="probe">` that `--dump-dom` returns. Needs `chromium` (scripts/lab.sh installs it).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from perfkit.pipeline import analyze_path, write_reports

from .conftest import FIXTURES, need_tool
from .test_use import make_run_archive

pytestmark = pytest.mark.lab

HOST = "<script>alert(1)</script>"
PROCESS = "<img src=x onerror=alert(1)>"
WIDTH = 1280

# Runs before anything in the page: a payload that got through would call alert -> marker.
PROBE = """<script nonce="probe">
window.alert = function () { document.documentElement.setAttribute("data-xss", "ran"); };
window.addEventListener("load", function () {
  var out = {n: document.images.length, ok: 0, broken: [], rects: []};
  for (var i = 0; i < document.images.length; i++) {
    var img = document.images[i], r = img.getBoundingClientRect();
    if (img.complete && img.naturalWidth > 0) { out.ok++; } else { out.broken.push(img.alt); }
    out.rects.push([Math.round(r.left + scrollX), Math.round(r.top + scrollY),
                    Math.round(r.width), Math.round(r.height), img.src.length]);
  }
  out.height = document.documentElement.scrollHeight;
  out.xss = document.documentElement.getAttribute("data-xss");
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _chromium(chromium: str, url: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        chromium,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # no network, even if the page asked for it
        f"--user-data-dir={tmp / 'profile'}",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--virtual-time-budget=5000",
        *args,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)


def _probe(dom: str) -> dict:
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert m, "probe script did not run (page not loaded?)"
    return json.loads(html.unescape(m.group(1)))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a run archive whose host name and top process name are XSS payloads."""
    tmp = tmp_path_factory.mktemp("browser")
    top = (FIXTURES / "top" / "procps-4.0.2-w512.txt").read_text()
    top = top.replace("R  93.8   0.0   0:04.29 sh", f"R  93.8   0.0   0:04.29 {PROCESS}", 1)
    assert PROCESS in top
    root = make_run_archive(tmp / "run", host=HOST, top_text=top)
    write_reports(analyze_path(root), tmp / "out")
    return tmp / "out" / "report.html"


def _variant(page: str, *, keep_csp: bool) -> str:
    """The test's copy: the probe first in <head>, collapsed plots opened so they are laid out."""
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">\n', page)
    assert csp and "default-src 'none'" in csp.group(1)
    if keep_csp:  # the report's own policy, plus the probe's nonce only
        page = page.replace(csp.group(1), csp.group(1) + "; script-src 'nonce-probe'")
    else:  # no policy at all: escaping alone must keep the payloads inert
        page = page.replace(csp.group(0), "")
    page = page.replace("<head>\n", "<head>\n" + PROBE, 1)
    return page.replace("<details>", "<details open>")


def test_payloads_are_text_and_never_run(report: Path, tmp_path: Path) -> None:
    chromium = need_tool("chromium")
    page = report.read_text()
    assert HOST not in page and PROCESS not in page
    assert html.escape(HOST, quote=False) in page and html.escape(PROCESS, quote=False) in page
    copy = tmp_path / "nocsp.html"
    copy.write_text(_variant(page, keep_csp=False))
    dom = _chromium(chromium, copy.as_uri(), tmp_path, f"--window-size={WIDTH},2000", "--dump-dom").stdout
    probe = _probe(dom)
    assert probe["xss"] is None and 'data-xss="ran"' not in dom
    # the browser parsed them as text: serialised back escaped, never as elements
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "&lt;img src=x onerror=alert(1)&gt;" in dom
    assert '<img src="x"' not in dom and "<script>alert(1)</script>" not in dom


def test_every_plot_renders_under_the_reports_csp(report: Path, tmp_path: Path) -> None:
    chromium = need_tool("chromium")
    page = report.read_text()
    n_img = len(re.findall(r"<img ", page))
    assert n_img >= 4  # sweep, timeline, per-capture vmstat and iostat plots at least
    copy = tmp_path / "csp.html"
    copy.write_text(_variant(page, keep_csp=True))
    dom = _chromium(chromium, copy.as_uri(), tmp_path, f"--window-size={WIDTH},2000", "--dump-dom").stdout
    probe = _probe(dom)
    assert probe["n"] == n_img and probe["ok"] == n_img and probe["broken"] == []
    # the screenshot: the whole page at once, every plot's box holds a drawn plot, not a broken icon
    height = min(int(probe["height"]) + 10, 16000)
    shot = tmp_path / "shot.png"
    _chromium(chromium, copy.as_uri(), tmp_path, f"--window-size={WIDTH},{height}", f"--screenshot={shot}")
    pixels = mpimg.imread(shot)[:, :, :3]
    assert pixels.shape[1] == WIDTH and pixels.shape[0] >= min(height, 16000) - 10
    sources = re.findall(r'<img src="data:image/png;base64,[^"]*"', page)
    for (x, y, w, h, _), _src in zip(probe["rects"], sources, strict=True):
        assert w > 100 and h > 100, "a plot laid out as a broken-image icon"
        region = pixels[y : y + h, x : x + w]
        if region.shape[0] < h:  # below a 16000 px page cap: not in the shot
            continue
        inked = float(np.mean(region.min(axis=2) < 0.8))  # axes, lines, text of the plot
        assert 0.01 < inked < 0.9, (x, y, w, h, inked)


def test_the_probe_catches_a_raw_payload_and_a_broken_plot(report: Path, tmp_path: Path) -> None:
    """Control: the same probe on a page where escaping failed and a plot is corrupt reports both."""
    chromium = need_tool("chromium")
    page = _variant(report.read_text(), keep_csp=False)
    page = page.replace("<h1>", PROCESS + "<h1>", 1)
    page = re.sub(r'src="data:image/png;base64,[^"]*"', 'src="data:image/png;base64,AAAA"', page, count=1)
    copy = tmp_path / "control.html"
    copy.write_text(page)
    probe = _probe(_chromium(chromium, copy.as_uri(), tmp_path, "--dump-dom").stdout)
    # broken: the payload's own <img src=x> (no alt) and the corrupted first plot
    assert probe["xss"] == "ran" and probe["broken"] == ["", "TPS and latency vs threads"]
    assert probe["ok"] == probe["n"] - 2


def test_compare_html_renders_and_run_names_stay_text(tmp_path: Path) -> None:
    """compare.html under its CSP: the sweeps plot decodes and draws; a run whose directory name is
    a payload is shown as text."""
    import shutil

    from perfkit.findings import RuleFailure
    from perfkit.pipeline import compare_paths, write_compare

    chromium = need_tool("chromium")
    base = tmp_path / "base"
    new = tmp_path / PROCESS.replace("/", "_")
    shutil.copytree(FIXTURES / "archives" / "db-hot-rows-control", base)
    shutil.copytree(FIXTURES / "archives" / "db-hot-rows", new)
    base_a, news, comps = compare_paths(base, [new], min_change_pct=5)
    failed: list[RuleFailure] = []
    write_compare(base, base_a, comps, news, tmp_path / "out", failed=failed)
    assert failed == []
    page = (tmp_path / "out" / "compare.html").read_text()
    assert PROCESS not in page and html.escape(PROCESS, quote=False) in page
    copy = tmp_path / "csp.html"
    copy.write_text(_variant(page, keep_csp=True))
    dom = _chromium(chromium, copy.as_uri(), tmp_path, f"--window-size={WIDTH},2000", "--dump-dom").stdout
    probe = _probe(dom)
    assert probe["xss"] is None and (probe["n"], probe["ok"]) == (1, 1)
    shot = tmp_path / "shot.png"
    _chromium(chromium, copy.as_uri(), tmp_path, f"--window-size={WIDTH},2000", f"--screenshot={shot}")
    x, y, w, h, _ = probe["rects"][0]
    region = mpimg.imread(shot)[y : y + h, x : x + w, :3]
    assert w > 100 and h > 100 and 0.01 < float(np.mean(region.min(axis=2) < 0.8)) < 0.9

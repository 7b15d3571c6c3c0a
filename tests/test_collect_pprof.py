"""pprof over HTTP from a real Go program serving net/http/pprof on 127.0.0.1, and endpoints that
answer the wrong thing."""

from __future__ import annotations

import gzip
import http.server
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.archive import open_archive
from perfkit.collectors import pprof, session

from .conftest import go_service
from .sshd import free_port

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def go_url(pprof_target: Path) -> Iterator[str]:
    with go_service(pprof_target) as url:
        yield url


class _Svg(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_profiles_from_a_go_service(go_url: str, tmp_path: Path) -> None:
    opts = session.Options(window=2, specs=(), pprof=(go_url,), run_id="pprof-ok")
    res = session.collect([], tmp_path / "run", opts)
    recs = {r["id"]: r for r in res.manifest["captures"]}
    assert set(recs) == {"pprof-cpu", "pprof-heap", "pprof-goroutine", "pprof-mutex"}
    assert all(r["status"] == "ok" and r["kind"] == "pprof" for r in recs.values()), recs
    assert recs["pprof-cpu"]["command"].endswith("/debug/pprof/profile?seconds=2")
    host = go_url.removeprefix("http://")
    data = (tmp_path / "run" / "hosts" / host / "pprof-cpu.out").read_bytes()
    assert len(data) == recs["pprof-cpu"]["bytes"] and gzip.decompress(data)  # a real gzip protobuf
    assert res.manifest["status"] == "complete" and res.exit_code == 0


def test_an_svg_answer_and_a_refused_port_are_recorded(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Svg)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        svg, dead = f"http://127.0.0.1:{server.server_address[1]}", f"http://127.0.0.1:{free_port()}"
        res = session.collect(
            [], tmp_path / "run", session.Options(window=1, specs=(), pprof=(svg, dead), run_id="pprof-bad")
        )
    finally:
        server.shutdown()
        server.server_close()
    by_host = {(r["host"], r["id"]): r for r in res.manifest["captures"]}
    svg_cpu = by_host[(svg.removeprefix("http://"), "pprof-cpu")]
    assert svg_cpu["status"] == "failed" and "SVG" in svg_cpu["reason"]
    dead_cpu = by_host[(dead.removeprefix("http://"), "pprof-cpu")]
    assert dead_cpu["status"] == "failed" and "cannot fetch" in dead_cpu["reason"]
    assert res.manifest["status"] == "partial"


@pytest.mark.parametrize("url", ["ftp://x/", "http://user:pw@db:10080", "file:///etc/passwd", "db1:10080"])
def test_bad_urls_are_refused_before_anything_runs(url: str) -> None:
    with pytest.raises(ValueError):
        pprof.parse_base(url)
    with pytest.raises(ValueError):
        session.Options(window=1, specs=(), pprof=(url,))


def test_tidb_debug_zip_spans_the_window_and_lists_its_members(go_url: str, tmp_path: Path) -> None:
    opts = session.Options(window=2, specs=(), tidb_zip=(go_url,), run_id="tidb-zip")
    res = session.collect([], tmp_path / "run", opts)
    [rec] = res.manifest["captures"]
    assert rec["id"] == "tidb-debug-zip" and rec["kind"] == "tidb_zip" and rec["status"] == "ok", rec
    assert rec["command"].endswith("/debug/zip?seconds=2")
    assert rec["members"] == ["goroutine", "heap", "mutex", "profile", "config", "version"]
    path = tmp_path / "run" / rec["path"]
    with zipfile.ZipFile(path) as zf:
        assert gzip.decompress(zf.read("profile"))  # the CPU profile: a gzip protobuf
        assert b"goroutine" in zf.read("goroutine")  # debug=2: text stacks
    assert len(path.read_bytes()) == rec["bytes"] and res.exit_code == 0
    with open_archive(tmp_path / "run") as archive:
        assert archive.problems == []


def test_pprof_and_tidb_zip_on_one_service_are_refused() -> None:
    with pytest.raises(ValueError, match="two CPU profiles"):
        session.Options(window=1, specs=(), pprof=("http://db:10080",), tidb_zip=("http://db:10080/",))


def test_a_zip_endpoint_answering_gzip_is_failed(go_url: str, tmp_path: Path) -> None:
    out = tmp_path / "x.out"
    rec = pprof.fetch(f"{go_url}/debug/pprof/heap", out, 10, pprof.ZIP_MAGIC)
    assert rec["status"] == "failed" and rec["reason"] == "not a zip: got gzip data"


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (b"404 page not found\n", "text '404 page not found'"),
        (b"\x00\x01\xfe'\"", "bytes 00 01 fe 27 22"),
        (b"\x1f\x8b\x08\x00'", "gzip data"),
        (b'<?xml version="1.0"?><svg', "an SVG (a TiKV flame graph?)"),
    ],
)
def test_what_a_wrong_answer_was_is_said_the_same_way_every_time(head: bytes, said: str) -> None:
    assert pprof._what(head) == said

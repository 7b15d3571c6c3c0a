"""Shared test helpers: fixture paths and the local lab (scripts/lab.sh)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PERFKIT = [sys.executable, "-m", "perfkit"]  # the CLI as a user runs it, in a process of its own
FIXTURES = ROOT / "tests" / "fixtures"
SEEDS_EXAMPLE = ROOT / "examples"
LAB_DIR = Path(os.environ.get("PERFKIT_LAB", "/var/lib/perfkit-lab"))


def need_tool(name: str) -> str:
    """The tool's path, or skip the test saying which tool is missing (never a silent pass)."""
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} not installed (scripts/lab.sh installs it)")
    return path


@pytest.fixture(scope="session")
def pprof_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/pprof_target/main.go built once (a small Go service serving net/http/pprof)."""
    go = need_tool("go")
    out = tmp_path_factory.mktemp("pprof") / "pprof-target"
    subprocess.run(
        [go, "build", "-o", str(out), str(ROOT / "tests" / "pprof_target" / "main.go")],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    return out


@contextlib.contextmanager
def go_service(binary: Path, *mode: str) -> Iterator[str]:
    """The pprof target running (`mode`: md5, lock, lock-own; see main.go): its base URL. Killed when
    the block ends, however it ends."""
    proc = subprocess.Popen([str(binary), "0", *mode], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.kill()
        proc.communicate(timeout=30)


@pytest.fixture(scope="session")
def lab_mariadb() -> Path:
    """The lab's sysbench config file (0600, holds the password), after checking MariaDB answers."""
    cfg = LAB_DIR / "sb.cfg"
    if not cfg.exists():
        pytest.skip(f"lab not provisioned: {cfg} missing (run scripts/lab.sh)")
    need_tool("sysbench")
    ping = subprocess.run(["mariadb-admin", "ping"], capture_output=True, text=True, timeout=10)
    if ping.returncode != 0:
        pytest.skip("MariaDB is not running (run scripts/lab.sh)")
    return cfg


def lab_password(cfg: Path) -> str:
    """The lab password from its 0600 sysbench config file."""
    for line in cfg.read_text().splitlines():
        if line.startswith("mysql-password="):
            return line.split("=", 1)[1]
    pytest.fail(f"{cfg} has no mysql-password= line (re-run scripts/lab.sh)")


def collect_local(
    out: Path,
    seconds: int,
    profile: str | None = None,
    prefix: Sequence[str] = (),
    timeout: float = 180,
    extra: Sequence[str] = (),
) -> Path:
    """`perfkit collect --local -d seconds -o out [extra]` as a user runs it, in a process of its own
    (after `prefix`, e.g. `ip netns exec NS`); `out` once it exits 0, else the test fails with its
    output."""
    args = ["collect", "--local", "-d", str(seconds), "-o", str(out), *extra]
    if profile is not None:
        args += ["--profile", profile]
    res = subprocess.run(
        [*prefix, *PERFKIT, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return out


@contextlib.contextmanager
def python_process(code: str, *args: str) -> Iterator[int]:
    """`code` run by Python with `args`, once it printed `ready`: its pid. Killed when the block
    ends, however it ends."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc.pid
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def row_by_row(parse: Callable[..., Any], source: object, **kwargs: object) -> Any:
    """`parse(source, **kwargs)` with the table engine (parsers/_table.py) reading every row one by
    one (`Table.read_lines`): the oracle its bulk reading must agree with."""
    from perfkit.parsers import _table

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_table.Table, "_bulk", lambda *args: None)
        return parse(source, **kwargs)


def bulk_spy(
    monkeypatch: pytest.MonkeyPatch, rows: int = 700, size: int = 40_000, scan: int | None = None
) -> list[int]:
    """Small chunks for the table engine (at most `rows` rows, `size` bytes; `scan` bytes for
    `_chunks.ByteScan`, default 5/4 of `size`), and each chunk's rows as read in bulk (a count) or
    not (0): a test that a long capture is read in bulk, not merely read."""
    from perfkit.parsers import _chunks, _table

    monkeypatch.setattr(_table, "CHUNK_ROWS", rows)
    monkeypatch.setattr(_table, "CHUNK_BYTES", size)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", scan if scan is not None else size * 5 // 4)
    bulk = _table.Table._bulk
    batches: list[int] = []

    def spy(self: _table.Table, data: bytes, line_nos: object, layout: _table.Layout) -> object:
        block = bulk(self, data, line_nos, layout)
        batches.append(0 if block is None else len(block))
        return block

    monkeypatch.setattr(_table.Table, "_bulk", spy)
    return batches

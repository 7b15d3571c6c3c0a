"""Shared test helpers: fixture paths and the local lab (scripts/lab.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
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

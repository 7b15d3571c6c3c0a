"""Stand-ins for `perfkit.dataset.parse_file` that tests/test_analyze_jobs.py sends to parse workers.

A module of their own, light to import: a worker imports the function by name, and importing the
test module would load pytest, click and the whole report stack in every worker. Each acts only in a
worker (a process other than the one named by PARENT_ENV); in the parent, which parses files too,
it is parse_file."""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from pathlib import Path

from perfkit import dataset

PARENT_ENV = "PERFKIT_TEST_JOBS_PARENT"
_parse_file = dataset.parse_file  # the real one: the tests put the stand-ins in its place


def _in_worker() -> bool:
    return str(os.getpid()) != os.environ.get(PARENT_ENV)


def dies(kind: str, path: Path, context: object, rel: str) -> object:
    """parse_file, except that a worker is killed (as the OOM killer would) on its first file."""
    if _in_worker():
        os.kill(os.getpid(), signal.SIGKILL)
    return _parse_file(kind, path, context, rel)  # type: ignore[arg-type]


def hangs(kind: str, path: Path, context: object, rel: str) -> object:
    """parse_file, except that a worker never finishes its first file."""
    if _in_worker():
        time.sleep(3600)
    return _parse_file(kind, path, context, rel)  # type: ignore[arg-type]


def pid_after(delay_in_parent: float) -> int:
    """This process's pid, after a sleep when it is the parent (which then stays busy a while)."""
    if not _in_worker():
        time.sleep(delay_in_parent)
    return os.getpid()


def loaded(name: str) -> tuple[int, bool]:
    """This process's pid, and whether module `name` was imported here before this call."""
    return os.getpid(), name in sys.modules


def frozen(_: str) -> tuple[int, int]:
    """This process's pid, and how many objects the garbage collector has been told to skip."""
    return os.getpid(), gc.get_freeze_count()


class Unpicklable:
    """A result no worker can send back: pickling it raises."""

    def __reduce__(self) -> tuple:
        raise TypeError("cannot pickle this result")


def unpicklable(_: str) -> Unpicklable:
    return Unpicklable()

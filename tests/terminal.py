"""Run the perfkit CLI on a pseudo-terminal and type Ctrl-C into it, the way a user does."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time
from collections.abc import Callable

import pytest

from .conftest import PERFKIT


def under_pty(
    args: list[str],
    ctrl_c_at: tuple[float, ...] = (),
    limit: float = 60,
    ctrl_c_when: Callable[[], bool] | None = None,
) -> tuple[int, str, float]:
    """Run perfkit on a pseudo-terminal, typing Ctrl-C at the given seconds, or once when `ctrl_c_when`
    first holds (a phase seen running: a fixed second races a machine's speed); (exit code, output,
    seconds)."""
    pid, fd = pty.fork()
    if pid == 0:  # child: the terminal's foreground process
        os.execv(sys.executable, [*PERFKIT, *args])
    start, out, pending = time.monotonic(), b"", list(ctrl_c_at)
    status = None
    while time.monotonic() - start < limit:
        if pending and time.monotonic() - start >= pending[0]:
            os.write(fd, b"\x03")
            pending.pop(0)
        if ctrl_c_when is not None and ctrl_c_when():
            os.write(fd, b"\x03")
            ctrl_c_when = None
        if select.select([fd], [], [], 0.05)[0]:
            with contextlib.suppress(OSError):  # EIO once the child closed the terminal
                out += os.read(fd, 65536)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail(f"perfkit did not exit within {limit}s: {out.decode(errors='replace')[-500:]}")
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace"), time.monotonic() - start

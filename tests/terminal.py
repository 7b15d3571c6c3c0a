"""Run the perfkit CLI on a pseudo-terminal and type Ctrl-C into it, the way a user does."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time

import pytest

CLI = "import sys; from perfkit.cli import main; sys.exit(main())"


def under_pty(args: list[str], ctrl_c_at: tuple[float, ...], limit: float = 60) -> tuple[int, str, float]:
    """Run perfkit on a pseudo-terminal, typing Ctrl-C at the given seconds; (exit code, output, seconds)."""
    pid, fd = pty.fork()
    if pid == 0:  # child: the terminal's foreground process
        os.execv(sys.executable, [sys.executable, "-c", CLI, *args])
    start, out, pending = time.monotonic(), b"", list(ctrl_c_at)
    status = None
    while time.monotonic() - start < limit:
        if pending and time.monotonic() - start >= pending[0]:
            os.write(fd, b"\x03")
            pending.pop(0)
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

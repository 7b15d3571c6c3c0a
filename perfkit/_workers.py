"""Worker processes for `perfkit analyze --jobs N`: one function called on many inputs in parallel, each
result handed back with a single copy.

Processes, not threads: a parse is Python and pandas work that holds the GIL most of the time.

**Start: a fresh interpreter** (`python -c` on one end of a socket pair), as multiprocessing's
`spawn` would start it, without its two costs: spawn runs the parent's main script again in each
child, and adds a resource-tracker process. `fork` copies a parent that may hold threads (Arrow's
pool once a frame was touched) and can deadlock in the child; Python 3.12+ warns about it
(DeprecationWarning). `forkserver` keeps one more interpreter with pandas loaded alive beside the
workers for the whole run, which counts against the memory bound. A fresh interpreter costs each
worker one import of the parsers (1-2 s of CPU on the 2-vCPU lab VM), paid by all workers at once.

**Transfer: pickle protocol 5 with out-of-band buffers over the worker's socket** (measured against
in-band pickle, Arrow IPC and Parquet through a temp file on a 93 MB top -H frame:
`scripts/bench_analyze.py --transfer`, docs/benchmarks.md: 119 MB more in the parent and 45 MB in
the worker, against 243 / 226 MB in-band, 190 / 328 MB Arrow IPC, 322 / 209 MB Parquet, and the
fastest of the four: 0.21 s, in-band 0.42 s, Arrow and Parquet 3-4 s on a loaded machine). The worker
pickles the result with `buffer_callback`, so the pickle itself holds only the frame's structure
(dtypes, index, attrs) and each array's memory is handed over as a buffer: the worker writes it to
the socket straight from the array, the parent reads it into a `bytearray` of its exact size, and
the unpickled arrays (numpy and Arrow alike) use that `bytearray` as their memory. One copy in all,
through the kernel; no serialised blob beside the frame on either side (in-band pickle doubles the
frame in both processes; Arrow and Parquet convert it each way).

**Scheduling**: `jobs` calls at once, `jobs - 1` of them in workers and one in the parent, which
would otherwise only wait (one interpreter fewer: its memory and its start). Workers take the
largest inputs first (the long parses start at once), the parent the smallest, between which it
collects the workers' results; each worker holds its next task already. Never more workers than
inputs; a worker with nothing left to do is told to exit at once, and gives its freed pages back to
the system after each result, so what it held is not counted twice while the parent holds the frame.

**Failures**: an exception in the function is raised again in the parent (with the worker's
traceback as its cause), exactly as a call in the parent would raise it. A worker that dies (killed,
the kernel's OOM killer) is an `AnalysisError` naming the input it was reading, never a hang. Workers
ignore SIGINT: a Ctrl-C interrupts the parent, which ends every worker before it returns.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import signal
import socket
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from perfkit.errors import AnalysisError

# Seconds a worker told to stop, or terminated, gets before it is killed.
_GRACE_S = 5.0


@dataclass(frozen=True)
class Task:
    """One call: `fn(*args)`; `label` names its input in errors, `size` orders the work (largest first)."""

    label: str
    size: int
    args: tuple[Any, ...]


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, chained as the cause of its re-raise."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    conn: Connection
    tasks: deque[int] = field(default_factory=deque)  # sent, in order: the first is the one it is on
    done: bool = False  # told to exit


def send_result(conn: Connection, tag: int, obj: Any) -> None:
    """Send `obj` as its pickle's structure, then each out-of-band buffer straight from its memory."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    conn.send(("ok", tag, head, [v.nbytes for v in views]))
    for v in views:
        conn.send_bytes(v)


def receive_result(conn: Connection) -> tuple[int, Any]:
    """The next (tag, result) from a worker; the exception it raised is raised here."""
    msg = conn.recv()
    if msg[0] == "raised":
        _, _tag, exc, remote = msg
        raise exc from RemoteTraceback(remote)
    _, tag, head, sizes = msg
    buffers = []
    for n in sizes:
        buf = bytearray(n)  # the arrays' own memory from here on: no second copy
        conn.recv_bytes_into(buf)
        buffers.append(buf)
    return tag, pickle.loads(head, buffers=buffers)


def _serve(fd: int) -> None:
    """A worker's loop on its end of the socket pair: (tag, fn, args) in, result out, until told to
    stop or the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    conn = Connection(fd)
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            tag, fn, args = msg
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001  (handed to the parent, raised there)
                conn.send(("raised", tag, *_portable(exc)))
                continue
            send_result(conn, tag, result)
            del result
            _give_back()
    except (EOFError, OSError):
        return  # the parent died or closed the pipe: nobody to report to


def _give_back() -> None:
    """Return the memory of the result just sent to the system. The C allocator keeps freed pages for
    reuse (after a 3 h pidstat parse, RSS stays at 300 MB with the frame gone, 150 MB once trimmed):
    while the parent holds the frame, a worker keeping its parse's pages would count twice."""
    gc.collect()
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim this way
        ctypes.CDLL(None).malloc_trim(0)


def _portable(exc: BaseException) -> tuple[BaseException, str]:
    """The exception as the parent can unpickle it (else a RuntimeError with its text), and its traceback."""
    remote = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001  (an exception type whose arguments do not round-trip)
        return RuntimeError(f"{type(exc).__name__}: {exc}"), remote
    return exc, remote


def run(fn: Callable[..., Any], tasks: Sequence[Task], jobs: int) -> Iterator[tuple[int, Any]]:
    """`fn(*task.args)` for every task, `jobs` at once: in `jobs - 1` worker processes and in this one;
    yields (index of the task, its result) as each one ends.

    The workers take the largest tasks first, this process the smallest: it would otherwise only
    wait, and one worker fewer is one interpreter's memory and start-up fewer. Each worker holds two
    tasks (the one it is on and the next), so it never waits for this process to finish a parse of
    its own; this process looks for finished results between two of its tasks.

    `fn` must be a module-level function (it is sent by name). Close the iterator (or exhaust it) to
    end the workers; a Ctrl-C while it runs ends them too.

    Raises:
        AnalysisError: a worker died while on a task (names the task's label).
        What `fn` raised, re-raised here (from a worker: with its traceback as the cause).
    """
    pending = deque(sorted(range(len(tasks)), key=lambda i: -tasks[i].size))
    workers: list[_Worker] = []
    try:
        for _ in range(max(0, min(jobs, len(tasks)) - 1)):
            workers.append(_start())
        for w in workers:
            _fill(w, fn, tasks, pending)
        while pending or any(w.tasks for w in workers):
            busy = [w.conn for w in workers if w.tasks]
            # results ready now; block only when nothing is left for this process to do
            for conn in wait(busy, timeout=0 if pending else None) if busy else []:
                w = next(w for w in workers if w.conn is conn)
                try:
                    tag, result = receive_result(conn)
                except (EOFError, OSError):
                    raise _died(w, tasks) from None
                w.tasks.popleft()
                _fill(w, fn, tasks, pending)
                yield tag, result
                del result
            if pending:
                i = pending.pop()  # the smallest left
                yield i, fn(*tasks[i].args)
                for w in workers:
                    _fill(w, fn, tasks, pending)
    finally:
        _end(workers)


def _start() -> _Worker:
    """A fresh interpreter running `_serve` on one end of a socket pair.

    Not multiprocessing's spawn: it re-runs the parent's main script in each child (a script without
    an `if __name__ == "__main__"` guard would run again) and adds a resource tracker process. Its own
    session, so the terminal's Ctrl-C reaches only the parent, which ends the workers.
    """
    mine, theirs = socket.socketpair()
    env = dict(os.environ)
    # the parent's import path (a checkout on sys.path, pytest's rootdir), as spawn would pass it
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from perfkit._workers import _serve; _serve({theirs.fileno()})"],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    finally:
        theirs.close()
    return _Worker(proc, Connection(mine.detach()))


def _fill(w: _Worker, fn: Callable[..., Any], tasks: Sequence[Task], pending: deque[int]) -> None:
    """Keep two tasks with the worker, the largest left; with none left, tell it to exit (its memory
    goes back now, not when the last result is in)."""
    while pending and len(w.tasks) < 2:
        i = pending.popleft()
        w.tasks.append(i)
        w.conn.send((i, fn, tasks[i].args))
    if not pending and not w.tasks and not w.done:
        w.done = True
        with contextlib.suppress(OSError):  # already gone: joined below
            w.conn.send(None)


def _died(w: _Worker, tasks: Sequence[Task]) -> AnalysisError:
    try:
        code = w.process.wait(_GRACE_S)
    except subprocess.TimeoutExpired:  # closed its end yet lives on: end it, name what it was on
        w.process.kill()
        code = w.process.wait()
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        oom = ", as the kernel's out-of-memory killer does" if -code == signal.SIGKILL else ""
        how = f"killed by {name}{oom}"
    else:
        how = f"exit status {code}"
    label = tasks[w.tasks[0]].label if w.tasks else "?"
    return AnalysisError(
        f"{label}: the worker process reading it died ({how}); try --jobs 1 to read the files one at a time"
    )


def _end(workers: list[_Worker]) -> None:
    """Every worker gone before we return: told to exit, else terminated, else killed."""
    for w in workers:
        if w.process.poll() is None and (w.tasks or not w.done):
            w.process.terminate()  # still on a task (an error or Ctrl-C cut the run short)
    for w in workers:
        try:
            w.process.wait(_GRACE_S)
        except subprocess.TimeoutExpired:
            w.process.kill()
            w.process.wait()
        w.conn.close()

"""Worker processes for `perfkit analyze --jobs N`: one function called on many inputs in parallel, each
result handed back with a single copy.

Processes, not threads: a parse is Python and pandas work that holds the GIL most of the time.

**Start: a fresh interpreter** (`python -c` on one end of a socket pair), as multiprocessing's
`spawn` would start it, without its two costs: spawn runs the parent's main script again in each
child, and adds a resource-tracker process. `fork` copies a parent that may hold threads (Arrow's
pool once a frame was touched) and can deadlock in the child; Python 3.12+ warns about it
(DeprecationWarning). `forkserver` keeps one more interpreter with pandas loaded alive beside the
workers for the whole run, which counts against the memory bound. A fresh interpreter costs each
worker one import of the parsers (1-2 s of CPU on the 2-vCPU lab VM), paid by all workers at once;
`analyze` starts them before its own imports (`warmed`), so the two overlap.

**Transfer: pickle protocol 5 with out-of-band buffers in shared memory** (measured against in-band
pickle, the same buffers written through the socket, Arrow IPC and Parquet through a temp file on a
93 MB top -H frame: `scripts/bench_analyze.py --transfer`, docs/benchmarks.md). The worker pickles the
result with `buffer_callback`, so the pickle itself holds only the frame's structure (dtypes, index,
attrs); each array's memory is written once into one memfd (`pwrite`, never mapped on this side),
whose descriptor goes to the parent over the socket (SCM_RIGHTS). The parent maps it (`_map`: no
descriptor kept open per mapping) and the unpickled arrays (numpy and Arrow alike) use the mapping as
their memory, which goes with the last of them: one copy in all, made by the worker, in parallel.
Through the socket, the parent itself allocated and read into a bytearray per array, most of it
faulting in fresh pages: 0.10-0.13 s of the parent's CPU for the 93 MB frame, against 0.04-0.05 s
mapped (the parent's time is the serial part of `analyze`). In-band pickle doubles the frame in both
processes; Arrow and Parquet convert it each way (3.0-3.2 s).

**Scheduling**: `jobs` calls at once, `jobs - 1` of them in workers and one in the parent, which
would otherwise only wait (one interpreter fewer: its memory and its start). Every process takes the
largest input left when it is free (longest first: the long parses start at once and the short ones
fill the gaps; a day of one host's captures is 9 files of 0.2-12 s, where the parent taking the
smallest left it idle 13 s of a 25 s parse). A thread of the parent (`_Feeder`) waits on the
workers: it takes in each result and hands that worker its next input at once, while the parent's
own parse runs (the thread waits in system calls, which release the GIL). The last 2 % of the
input (by size) is the parent's alone. Never more workers than inputs; a worker with nothing left
to do is told to exit at once, and gives its freed pages back to the system after each result, so
what it held is not counted twice while the parent holds the frame.

**Failures**: an exception in the function is raised again in the parent (with the worker's
traceback as its cause), exactly as a call in the parent would raise it. A worker that dies (killed,
the kernel's OOM killer) is an `AnalysisError` naming the input it was reading, never a hang. Workers
ignore SIGINT: a Ctrl-C interrupts the parent, which ends every worker before it returns.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import importlib
import mmap
import os
import pickle
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait
from typing import Any

from perfkit.errors import AnalysisError

# Where each array starts in a result's shared memory: a cache line, as numpy aligns its own.
_ALIGN = 64

# Seconds a worker told to stop, or terminated, gets before it is killed.
_GRACE_S = 5.0

# Below this many bytes to parse, the default parses in this process: a worker's start (a fresh
# interpreter importing the parsers, 1-2 s of CPU) costs more than it saves (measured on the 2-vCPU
# lab VM: 138 MB of captures parsed in 3.6 s alone, 4.9 s with a worker started for them).
AUTO_MIN_BYTES = 256 << 20


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


# Workers started ahead by `warmed`, each importing while this process imports and plans; `run`
# takes them before starting any.
_warm: list[_Worker] = []


@dataclass
class _Packed:
    """A result ready to send: its pickle's structure, where each out-of-band buffer sits in the
    shared memory file, and that file's descriptor (None: no buffer holds a byte)."""

    head: bytes
    spans: list[tuple[int, int]]
    fd: int | None


def pack_result(obj: Any) -> _Packed:
    """`obj` pickled with its out-of-band buffers copied once into one shared memory file. Made
    before anything is sent, so that what fails here (no memory, no memfd) is the task's error,
    raised in the parent, not a worker gone quiet."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    spans, end = [], 0
    for v in views:
        spans.append((end, v.nbytes))
        end += -(-v.nbytes // _ALIGN) * _ALIGN  # each array starts aligned, as numpy's own memory does
    if not end:
        return _Packed(head, spans, None)
    fd = _shared_file(end)
    try:
        # written, not copied through a mapping: the kernel allocates the pages inside the call, where
        # a mapping takes a fault for each one (300 MB: 0.12 s against 0.25 s on the lab VM)
        for v, (at, n) in zip(views, spans, strict=True):
            done = 0
            while done < n:
                done += os.pwrite(fd, v[done:], at + done)
    except BaseException:
        os.close(fd)
        raise
    return _Packed(head, spans, fd)


def send_packed(conn: Connection, tag: int, packed: _Packed) -> None:
    """The message, then the shared file's descriptor (SCM_RIGHTS); closed here once sent: the
    parent's mapping keeps the memory, nothing of it stays in this process."""
    try:
        conn.send(("ok", tag, packed.head, packed.spans))
        if packed.fd is not None:
            reduction.send_handle(conn, packed.fd, 0)
    finally:
        if packed.fd is not None:
            os.close(packed.fd)


def send_result(conn: Connection, tag: int, obj: Any) -> None:
    """`pack_result` and `send_packed` at once."""
    send_packed(conn, tag, pack_result(obj))


def receive_result(conn: Connection) -> tuple[int, Any]:
    """The next (tag, result) from a worker; the exception it raised is raised here."""
    msg = conn.recv()
    if msg[0] == "raised":
        _, _tag, exc, remote = msg
        raise exc from RemoteTraceback(remote)
    _, tag, head, spans = msg
    end = max((at + n for at, n in spans), default=0)
    if not end:  # no buffer, or only empty ones (an empty array still has its buffer)
        return tag, pickle.loads(head, buffers=[bytearray() for _ in spans])
    try:
        fd = reduction.recv_handle(conn)
    except RuntimeError as exc:  # no descriptor came with the message: the worker is gone
        raise EOFError(str(exc)) from exc
    try:
        # the arrays' memory from here on is the worker's copy, mapped: no copy on this side (a
        # socket read into a bytearray cost the parent 0.2 s per 200 MB on the lab VM, most of it
        # faulting in fresh pages; mapping them costs 0.01 s)
        whole = _map(fd, end)
    finally:
        os.close(fd)
    return tag, pickle.loads(head, buffers=[whole[at : at + n] for at, n in spans])


def _map(fd: int, size: int) -> memoryview:
    """`size` bytes of `fd` mapped shared and writable, unmapped once nothing uses them. Not
    `mmap.mmap`: before Python 3.13 (`trackfd=False`) it keeps a duplicate of `fd` open as long as
    the mapping, one descriptor per capture held, and an archive of 10 hosts x 16 steps holds more
    captures than the usual limit of 1,024 open files."""
    libc = _libc()
    addr = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:  # MAP_FAILED
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    memory = (ctypes.c_ubyte * size).from_address(addr)
    # the arrays hold views of `memory`; when the last one goes, so does the mapping. Never at exit:
    # the process's end unmaps it, and an array freed after that must not point at freed memory.
    weakref.finalize(memory, libc.munmap, addr, size).atexit = False
    return memoryview(memory).cast("B")


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    # void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset): off_t is 64-bit on
    # the LP64 systems perfkit runs on, as c_long is
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
    libc.munmap.restype = ctypes.c_int
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def _shared_file(size: int) -> int:
    """A descriptor of `size` bytes of memory another process can map: a memfd, else (not Linux) an
    unlinked temporary file."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("perfkit-result", os.MFD_CLOEXEC)
    else:
        fd, name = tempfile.mkstemp(prefix="perfkit-result-")
        os.unlink(name)
    try:
        os.ftruncate(fd, size)
    except OSError:
        os.close(fd)
        raise
    return fd


def _serve(fd: int, preload: Sequence[str] = ()) -> None:
    """A worker's loop on its end of the socket pair: (tag, fn, args) in, result out, until told to
    stop or the parent is gone. The `preload` modules are imported first, before any call arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    for name in preload:
        with contextlib.suppress(Exception):  # a call that needs it raises its error in the parent
            importlib.import_module(name)
    # the modules live as long as we do: out of the collector's sight, the full collection after each
    # result (`_give_back`) walks only that result's garbage (0.05 s a call with them, 0.1 ms without)
    gc.freeze()
    conn = Connection(fd)
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            tag, fn, args = msg
            try:
                packed = pack_result(fn(*args))  # the result itself is freed once packed
            except BaseException as exc:  # noqa: BLE001  (handed to the parent, raised there)
                conn.send(("raised", tag, *_portable(exc)))
                continue
            send_packed(conn, tag, packed)
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


def auto_jobs(nbytes: int) -> int:
    """The default jobs for `nbytes` to parse: the CPUs this process may run on (taskset, a cpuset,
    not the machine's), or 1 below `AUTO_MIN_BYTES`."""
    if nbytes < AUTO_MIN_BYTES:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def warmed(jobs: int | None, nbytes: int, preload: Sequence[str]) -> Iterator[None]:
    """Start the workers `jobs` (None: `auto_jobs(nbytes)`) will want now, importing `preload`
    while this process imports and reads the archive: a worker started when the parse begins spends
    its first 1.5-2 s importing while this one already parses. `run` takes them; any left when the
    block ends (the parse wanted fewer, or none) are told to exit."""
    n = (auto_jobs(nbytes) if jobs is None else jobs) - 1
    _warm.extend(_start(preload) for _ in range(max(0, n)))
    try:
        yield
    finally:
        cool()


def cool() -> None:
    """Workers started ahead and not taken by `run` told to exit now: the parse wants fewer, or none
    (their interpreters' memory goes back before the frames are held, not when the analysis ends)."""
    _dismiss(_warm)
    _warm.clear()


def run(fn: Callable[..., Any], tasks: Sequence[Task], jobs: int) -> Iterator[tuple[int, Any]]:
    """`fn(*task.args)` for every task, `jobs` at once: in `jobs - 1` worker processes and in this one;
    yields (index of the task, its result) as each one ends. Each process takes the largest task left
    when it is free.

    `fn` must be a module-level function (it is sent by name). Close the iterator (or exhaust it) to
    end the workers; a Ctrl-C while it runs ends them too.

    Raises:
        AnalysisError: a worker died while on a task (names the task's label).
        What `fn` raised, re-raised here (from a worker: with its traceback as the cause).
    """
    pending = deque(sorted(range(len(tasks)), key=lambda i: -tasks[i].size))
    wanted = max(0, min(jobs, len(tasks)) - 1)
    workers = [_take_warm() for _ in range(wanted)]
    cool()  # started ahead for more inputs than there are
    feeder = _Feeder(fn, tasks, pending, workers)
    try:
        feeder.begin()
        while (i := feeder.take()) is not None:
            yield i, fn(*tasks[i].args)
            yield from feeder.ready()
        yield from feeder.rest()
    finally:
        feeder.stop()
        _end(workers)


def _take_warm() -> _Worker:
    """A worker started ahead that is still alive (one killed meanwhile is reaped), else a new one."""
    while _warm:
        w = _warm.pop()
        if w.process.poll() is None:
            return w
        _end([w])
    return _start(())


def _unpack(item: tuple[int, Any] | BaseException) -> tuple[int, Any]:
    if isinstance(item, BaseException):
        raise item
    return item


class _Feeder(threading.Thread):
    """The parent's thread that keeps the workers busy: it hands each its first task, takes in each
    result and hands that worker the largest task left. Results (or what went wrong) wait in a queue
    for the generator in `run`, which takes tasks from the same `pending` under a lock."""

    def __init__(
        self, fn: Callable[..., Any], tasks: Sequence[Task], pending: deque[int], workers: list[_Worker]
    ):
        super().__init__(name="perfkit-workers", daemon=True)
        self.fn, self.tasks, self.pending, self.workers = fn, tasks, pending, workers
        self.lock = threading.Lock()
        self.out: queue.SimpleQueue[tuple[int, Any] | BaseException | None] = queue.SimpleQueue()
        self.stopping = False
        # the last 2 % of the input is this process's: the worker, told to exit, gives back its
        # interpreter's memory while the frames held here are at their most (a day of one host: the
        # tree's peak was 3 % above one process's), and small frames cost more to send than to read
        self.left = sum(t.size for t in tasks)
        self.tail = self.left // 50

    def take(self, tail: int = 0) -> int | None:
        """The largest task left, or None (also when all that is left is under `tail` in size)."""
        with self.lock:
            if not self.pending or self.left < tail:
                return None
            i = self.pending.popleft()
            self.left -= self.tasks[i].size
            return i

    def begin(self) -> None:
        """Hand each worker its first task (the largest ones, before this process takes any), then
        wait on them in the thread."""
        for w in self.workers:
            self._next(w)
        self.start()

    def run(self) -> None:
        try:
            while busy := [w for w in self.workers if w.tasks]:
                for conn in wait([w.conn for w in busy]):
                    w = next(w for w in busy if w.conn is conn)
                    try:
                        self.out.put(receive_result(conn))
                    except (EOFError, OSError):
                        if not self.stopping:
                            self.out.put(_died(w, self.tasks))
                        return
                    except BaseException as exc:  # noqa: BLE001  (what fn raised: re-raised by `run`)
                        self.out.put(exc)
                        return
                    w.tasks.popleft()
                    self._next(w)
        except BaseException as exc:  # noqa: BLE001  (a send that failed: the worker is gone)
            if not self.stopping:
                self.out.put(exc)
        finally:
            self.out.put(None)

    def _next(self, w: _Worker) -> None:
        """Hand the worker the largest task left; with none left, tell it to exit (its memory goes
        back now, not when the last result is in)."""
        i = self.take(tail=self.tail)
        if i is not None:
            w.tasks.append(i)
            w.conn.send((i, self.fn, self.tasks[i].args))
        elif not w.done:
            w.done = True
            with contextlib.suppress(OSError):  # already gone: joined by _end
                w.conn.send(None)

    def ready(self) -> Iterator[tuple[int, Any]]:
        """The results in so far, without waiting."""
        while True:
            try:
                item = self.out.get_nowait()
            except queue.Empty:
                return
            if item is None:  # the thread's last word: left for `rest`
                self.out.put(None)
                return
            yield _unpack(item)

    def rest(self) -> Iterator[tuple[int, Any]]:
        """Every result still to come, waiting for each."""
        while (item := self.out.get()) is not None:
            yield _unpack(item)

    def stop(self) -> None:
        self.stopping = True


def _start(preload: Sequence[str]) -> _Worker:
    """A fresh interpreter running `_serve` on one end of a socket pair, `preload` imported first.

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
            [
                sys.executable,
                "-c",
                f"from perfkit._workers import _serve; _serve({theirs.fileno()}, {tuple(preload)!r})",
            ],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    finally:
        theirs.close()
    return _Worker(proc, Connection(mine.detach()))


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


def _dismiss(workers: list[_Worker]) -> None:
    """Idle workers told to exit, and gone before we return."""
    for w in workers:
        w.done = True
        with contextlib.suppress(OSError):  # already gone
            w.conn.send(None)
    _end(workers)


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

# ruff: noqa: UP004, UP010, UP024, UP031, SIM105, SIM115 -- runs on the host under Python 2.7 too
"""Thread-state sampler: where a host's important threads spend their time (kind `threads`).

This file runs ON THE HOST, piped into whatever Python is there (`python3 - ARGS` or
`python2.7 - ARGS`, see `command()` in collectors/captures.py), so it is one source that Python 2.7
and 3.x both run: no f-strings, no annotations (type comments instead), stdlib only. perfkit imports
it too, for its unit tests and to embed its text into the capture command.

What it does, in the manner of 0x.tools' psn/xcapture: picks processes (those whose /proc/PID/comm is
one of `--watch`, plus the `--busiest` N that used most CPU over the first interval, not counting
perfkit's own: this sampler's process group and ancestors, and the processes working in its directory,
as every capture of the run does), then `--rate` times a second reads every thread's
/proc/PID/task/TID/{stat,syscall,wchan} and counts the samples per (pid, thread name, state,
syscall, wchan); once per interval it reads every thread's schedstat (on-CPU ns, run-queue wait
ns), writes the interval's counts and the schedstat deltas per (pid, thread name) to stdout, and
appends /proc/pressure/{cpu,io,memory} to `--psi FILE`. The sampler starts before a step's load, so
at its start it picks the named only; after the first interval (the load running) it picks the named
anew, a load generator among them, and the busiest over that interval, once; then the named every
REFRESH_S (a restarted mariadbd is found again under its new pid).

Cost: the per-thread files are opened once and re-read with pread (lseek+read on 2.7): on the lab VM
that is 8 us a thread per sample against 24 us with open/read/close. wchan is not read for a running
thread (0) nor for one still sleeping (S) in the call it slept in at the last sample (the same wait:
an idle pool's threads sit in one futex for seconds). With the parsing and counting,
about 20 us a thread per sample, so DEFAULT_RATE_HZ is 2 (5 cost 4 % of a core for 300 threads:
docs/benchmarks.md has the figures). Past the descriptors the process may hold, files are read afresh.

Output (text, one line each; names escaped: backslash, tab, CR and LF as \\\\ \\t \\r \\n):

    # perfkit-threads 1 mode=python3 version=3.11.7 rate_hz=5 interval_s=1 clk_tck=100 arch=x86_64 \
      busiest=3 refresh_s=10 watch=mariadbd,mysqld            (one line)
    # select <epoch> pid=<pid> why=named|busiest cpu_ticks=<n> comm=<process name>
    # gone <epoch> pid=<pid>
    = <epoch at the interval's end> <seconds covered> <samples taken>
    c<TAB>pid<TAB>state<TAB>syscall<TAB>wchan<TAB>count<TAB>process<TAB>thread
    d<TAB>pid<TAB>threads<TAB>cpu_ns<TAB>run_delay_ns<TAB>process<TAB>thread

`syscall` is the first field of /proc/.../syscall (a number; `-1`: blocked outside a system call;
`running`: on a CPU when read), `kernel` for kernel threads (their file says 0, which is no `read`),
`?` when unreadable; `wchan` as the kernel prints it (`0`: none), `?` when unreadable; `cpu_ns` and
`run_delay_ns` are `-` when no thread of that name had a baseline yet (its process was selected
during the interval); a thread that exits takes its last interval's CPU with it. The
collectors/captures.py awk mode writes the same format.
"""

from __future__ import print_function

import argparse
import errno
import os
import sys
import time

FORMAT = 1
DEFAULT_RATE_HZ = 2
BUSIEST = 3
REFRESH_S = 10
PF_KTHREAD = 0x00200000
_FILES = ("stat", "syscall", "wchan", "schedstat")
_monotonic = getattr(time, "monotonic", time.time)
_pread = getattr(os, "pread", None)
# Descriptors held open for re-reading, and how many may be: the soft RLIMIT_NOFILE less room for the
# files opened and closed on the way (main() sets it; a process's limit is often 1024).
HELD = [0, 1024 - 64]


def escape(name):
    # type: (bytes) -> bytes
    """A name as one tab-separated field on one line."""
    return name.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\r", b"\\r").replace(b"\n", b"\\n")


def read_file(path):
    # type: (str) -> bytes | None
    """The whole file, or None when it cannot be read (the task exited, no permission)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (OSError, IOError):
        return None
    try:
        return os.read(fd, 4096)
    except (OSError, IOError):
        return None
    finally:
        os.close(fd)


def parse_stat(data, maxsplit=-1):
    # type: (bytes, int) -> tuple[bytes, list[bytes]]
    """(comm, the fields from the state on) of a /proc stat line: [state, ppid, pgrp, session, tty,
    tpgid, flags, ...]; comm may hold ')' and spaces, so it ends at the last ')'."""
    right = data.rfind(b")")
    left = data.find(b"(")
    if right < 0 or left < 0:
        raise ValueError("not a stat line")
    return data[left + 1 : right], data[right + 2 :].split(None, maxsplit)


class Task(object):
    """One thread: its files held open (or paths, when out of descriptors) and its last schedstat."""

    __slots__ = ("base", "fds", "sched", "name", "kernel", "last", "wchan")

    def __init__(self, base, sched):
        # type: (str, tuple[int, int] | None) -> None
        self.base = base
        self.fds = {}  # type: dict[str, int]
        self.sched = sched  # (cpu_ns, delay_ns) at the last schedstat pass; None: no baseline yet
        self.name = b""
        self.kernel = None  # type: bool | None
        self.last = None  # type: tuple[bytes, bytes] | None
        self.wchan = b"?"

    def read(self, name):
        # type: (str) -> bytes | None
        fd = self.fds.get(name)
        if fd is None:
            if HELD[0] >= HELD[1]:  # out of descriptors to hold: read this one afresh
                return read_file(self.base + name)
            try:
                fd = os.open(self.base + name, os.O_RDONLY)
            except (OSError, IOError) as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    HELD[1] = HELD[0]
                return None
            self.fds[name] = fd
            HELD[0] += 1
        try:
            if _pread is not None:
                return _pread(fd, 4096, 0)
            os.lseek(fd, 0, 0)
            return os.read(fd, 4096)
        except (OSError, IOError):
            return None

    def close(self):
        # type: () -> None
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        HELD[0] -= len(self.fds)
        self.fds = {}


class Proc(object):
    """A selected process: name, why it was chosen, its threads by tid."""

    __slots__ = ("pid", "comm", "why", "tasks", "first_pass")

    def __init__(self, pid, comm, why):
        # type: (int, bytes, str) -> None
        self.pid = pid
        self.comm = comm
        self.why = why
        self.tasks = {}  # type: dict[str, Task]
        self.first_pass = True  # its threads existed before it was selected: no schedstat baseline

    def close(self):
        # type: () -> None
        for task in self.tasks.values():
            task.close()
        self.tasks = {}


class Sampler(object):
    """Samples the selected processes' threads and writes one block per interval.

    `root` is the /proc to read (a fake tree in tests); `out` a binary stream; `psi` a binary
    stream or None; `clock` gives wall-clock epoch seconds for the stamps.
    """

    def __init__(self, out, root="/proc", watch=(), busiest=BUSIEST, psi=None, clock=time.time, me=None):
        self.out = out
        self.root = root.rstrip("/")
        self.watch = set(w.encode() if not isinstance(w, bytes) else w for w in watch)
        self.busiest = busiest
        self.psi = psi
        self.clock = clock
        self.procs = {}  # type: dict[int, Proc]
        self.counts = {}  # type: dict[tuple, int]
        self.samples = 0
        self.psi_missing = set()  # type: set[str]
        self.me = os.getpgrp() if me is None else me  # this sampler's process group: never "busiest"
        self.ancestors = self.lineage(os.getppid())
        try:
            self.cwd = os.getcwd()
        except OSError:  # its directory is gone: nothing works in it
            self.cwd = None

    # ------------------------------------------------------------ selection

    def pids(self):
        # type: () -> list[int]
        try:
            names = os.listdir(self.root)
        except OSError:
            return []
        return [int(n) for n in names if n.isdigit()]

    def lineage(self, pid):
        # type: (int) -> set[int]
        """`pid` and its ancestors: perfkit itself when it runs on this host, the ssh session when not."""
        found = set()
        while pid > 1 and pid not in found:
            found.add(pid)
            data = read_file("%s/%d/stat" % (self.root, pid))
            try:
                pid = int(parse_stat(data)[1][1]) if data else 0
            except (ValueError, IndexError):
                break
        return found

    def ours(self, pid):
        # type: (int) -> bool
        """Whether `pid` is perfkit's own, never "busiest" (they took its slots on a database host:
        iotop and top beside the named database): an ancestor of this sampler, or a process working
        in this sampler's directory, where every capture of the run starts (collectors/_shell.wrap)."""
        if pid in self.ancestors:
            return True
        if self.cwd is None:
            return False
        try:
            return os.readlink("%s/%d/cwd" % (self.root, pid)) == self.cwd
        except (OSError, IOError):  # gone, or not ours to read (another user's): not perfkit's
            return False

    def cpu_ticks(self):
        # type: () -> dict[int, tuple[bytes, int]]
        """utime+stime per process not in our own process group: {pid: (comm, ticks)}."""
        found = {}
        for pid in self.pids():
            data = read_file("%s/%d/stat" % (self.root, pid))
            if not data:
                continue
            try:
                comm, fields = parse_stat(data, 14)
                if int(fields[2]) == self.me:
                    continue
                found[pid] = (comm, int(fields[11]) + int(fields[12]))  # utime + stime
            except (ValueError, IndexError):
                continue
        return found

    def select_named(self):
        # type: () -> None
        """Add every process whose comm is watched and not yet selected; drop selected ones gone."""
        for pid in list(self.procs):
            if not os.path.isdir("%s/%d/task" % (self.root, pid)):
                self.drop(pid)
        if not self.watch:
            return
        for pid in self.pids():
            if pid in self.procs:
                continue
            comm = read_file("%s/%d/comm" % (self.root, pid))
            if comm is not None and comm.rstrip(b"\n") in self.watch:
                self.add(Proc(pid, comm.rstrip(b"\n"), "named"), b"")

    def select_busiest(self, before, after):
        # type: (dict[int, tuple[bytes, int]], dict[int, tuple[bytes, int]]) -> None
        """The `busiest` processes by CPU ticks between two probes, among those not named; one that
        started between them counts all its ticks (a step's load starts just after the first)."""
        used = []
        for pid, (comm, ticks) in after.items():
            used_before = before[pid][1] if pid in before else 0
            if pid not in self.procs and ticks > used_before:
                used.append((ticks - used_before, pid, comm))
        used.sort(key=lambda u: (-u[0], u[1]))
        chosen = 0
        for ticks, pid, comm in used:
            if chosen == self.busiest:
                break
            if not self.ours(pid):
                self.add(Proc(pid, comm, "busiest"), (" cpu_ticks=%d" % ticks).encode())
                chosen += 1

    def add(self, proc, extra):
        # type: (Proc, bytes) -> None
        self.procs[proc.pid] = proc
        self.out.write(
            b"# select "
            + self.stamp()
            + (" pid=%d why=%s" % (proc.pid, proc.why)).encode()
            + extra
            + b" comm="
            + escape(proc.comm)
            + b"\n"
        )

    def drop(self, pid):
        # type: (int) -> None
        self.procs.pop(pid).close()
        self.out.write(b"# gone " + self.stamp() + (" pid=%d\n" % pid).encode())

    def stamp(self):
        # type: () -> bytes
        return ("%.3f" % self.clock()).encode()

    # ------------------------------------------------------------ sampling

    def tasks(self, proc):
        # type: (Proc) -> dict[str, Task] | None
        """The process's threads, listed afresh (None when it exited; select_named drops it)."""
        base = "%s/%d/task/" % (self.root, proc.pid)
        try:
            tids = os.listdir(base)
        except OSError:
            return None
        tasks = proc.tasks
        if len(tids) != len(tasks) or not all(t in tasks for t in tids):
            alive = set(tids)
            for tid in [t for t in tasks if t not in alive]:
                tasks.pop(tid).close()
            for tid in tids:
                if tid not in tasks:
                    # Born since the last schedstat pass (unless the process was just selected): all
                    # its CPU and run delay so far belong to this interval.
                    tasks[tid] = Task(base + tid + "/", None if proc.first_pass else (0, 0))
        return tasks

    def sample(self):
        # type: () -> None
        """One pass over every thread of the selected processes."""
        counts = self.counts
        for proc in list(self.procs.values()):
            tasks = self.tasks(proc)
            if tasks is None:
                continue
            for tid, task in list(tasks.items()):
                stat = task.read("stat")
                if not stat:
                    tasks.pop(tid).close()  # exited between the listing and the read
                    continue
                try:
                    name, fields = parse_stat(stat, 7)
                    state = fields[0]
                    if task.kernel is None:
                        task.kernel = bool(int(fields[6]) & PF_KTHREAD)
                except (ValueError, IndexError):
                    continue
                task.name = name
                if task.kernel:
                    call = b"kernel"
                else:
                    data = task.read("syscall")
                    call = data.split(None, 1)[0] if data else b"?"
                if state == b"R":
                    wchan = b"0"  # not sleeping: the kernel prints 0
                elif state == b"S" and task.last == (state, call):
                    wchan = task.wchan  # still asleep in the same call: the same wait, one read saved
                else:
                    wchan = task.read("wchan")
                    wchan = (wchan.strip() or b"0") if wchan is not None else b"?"
                task.last, task.wchan = (state, call), wchan
                key = (proc.pid, name, state, call, wchan)
                counts[key] = counts.get(key, 0) + 1
        self.samples += 1

    def schedstat(self):
        # type: () -> dict[tuple[int, bytes], list[int]]
        """Per (pid, thread name): [threads, threads with a baseline, on-CPU ns, run-delay ns] since the
        last pass. A thread that exited since then takes its last deltas with it."""
        sums = {}  # type: dict[tuple[int, bytes], list[int]]
        for proc in self.procs.values():
            tasks = self.tasks(proc)
            for task in (tasks or {}).values():
                if not task.name:
                    stat = task.read("stat")
                    try:
                        task.name = parse_stat(stat, 1)[0] if stat else b""
                    except ValueError:
                        continue
                data = task.read("schedstat")
                if not data or not task.name:
                    continue
                try:
                    fields = data.split()
                    now = (int(fields[0]), int(fields[1]))
                except (ValueError, IndexError):
                    continue
                prev, task.sched = task.sched, now
                row = sums.setdefault((proc.pid, task.name), [0, 0, 0, 0])
                row[0] += 1
                if prev is not None:
                    row[1] += 1
                    row[2] += max(0, now[0] - prev[0])
                    row[3] += max(0, now[1] - prev[1])
            proc.first_pass = False
        return sums

    def flush(self, elapsed):
        # type: (float) -> None
        """Write the interval's block: its stamp, the counts, the schedstat deltas; then PSI."""
        stamp = self.stamp()
        lines = [b"= " + stamp + (" %.3f %d\n" % (elapsed, self.samples)).encode()]
        for (pid, name, state, call, wchan), n in sorted(self.counts.items()):
            comm = self.procs[pid].comm if pid in self.procs else b"?"
            lines.append(
                b"\t".join(
                    (
                        b"c",
                        str(pid).encode(),
                        state,
                        call,
                        escape(wchan),
                        str(n).encode(),
                        escape(comm),
                        escape(name),
                    )
                )
                + b"\n"
            )
        for (pid, name), (threads, based, cpu, delay) in sorted(self.schedstat().items()):
            # "-": no thread of that name had a baseline (its process was selected this interval)
            cpu_text, delay_text = (str(cpu).encode(), str(delay).encode()) if based else (b"-", b"-")
            lines.append(
                b"\t".join(
                    (
                        b"d",
                        str(pid).encode(),
                        str(threads).encode(),
                        cpu_text,
                        delay_text,
                        escape(self.procs[pid].comm),
                        escape(name),
                    )
                )
                + b"\n"
            )
        self.out.write(b"".join(lines))
        self.out.flush()
        self.counts = {}
        self.samples = 0
        if self.psi is not None:
            self.write_psi(stamp)

    def write_psi(self, stamp):
        # type: (bytes) -> None
        """/proc/pressure/{cpu,io,memory}, stamped; a resource that cannot be read is said once."""
        lines = [b"= " + stamp + b"\n"]
        for res in ("cpu", "io", "memory"):
            path = "%s/pressure/%s" % (self.root, res)
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    data = os.read(fd, 4096)
                finally:
                    os.close(fd)
            except (OSError, IOError) as exc:
                if res not in self.psi_missing:
                    self.psi_missing.add(res)
                    reason = os.strerror(exc.errno) if exc.errno else str(exc)
                    lines.insert(0, ("# no PSI for %s: %s: %s\n" % (res, path, reason)).encode())
                continue
            for line in data.splitlines():
                if line.strip():
                    lines.append(res.encode() + b" " + line + b"\n")
        self.psi.write(b"".join(lines))
        self.psi.flush()

    # ------------------------------------------------------------ the loop

    def run(self, intervals, interval_s, rate_hz, sleep=time.sleep, monotonic=_monotonic):
        # type: (int, float, float, object, object) -> None
        """Select the named, then sample `rate_hz` times a second for `intervals` intervals; after the
        first, the named anew and the busiest over it."""
        self.select_named()
        self.out.flush()
        before = self.cpu_ticks() if self.busiest else {}
        period = 1.0 / rate_hz
        per = max(1, int(round(rate_hz * interval_s)))
        start = last = monotonic()
        refresh = start + min(interval_s, REFRESH_S)  # then every REFRESH_S
        self.schedstat()  # baselines: the first interval's deltas are its own
        for i in range(intervals):
            begin = start + i * interval_s
            end = begin + interval_s
            for j in range(per):  # on schedule; behind it, the next sample at once, none past the end
                now = monotonic()
                if now >= end:
                    break
                if begin + j * period > now:
                    sleep(begin + j * period - now)
                self.sample()
            now = monotonic()
            if now < end:
                sleep(end - now)
            now = monotonic()
            self.flush(now - last)
            last = now
            if now >= refresh:
                refresh = now + REFRESH_S
                self.select_named()
            if i == 0 and self.busiest:
                self.select_busiest(before, self.cpu_ticks())
                before = {}

    def close(self):
        # type: () -> None
        for proc in self.procs.values():
            proc.close()


def header(mode, version, rate_hz, interval_s, busiest, watch):
    # type: (str, str, float, float, int, list[str]) -> bytes
    try:
        ticks = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        ticks = 100
    return (
        "# perfkit-threads %d mode=%s version=%s rate_hz=%g interval_s=%g clk_tck=%d arch=%s busiest=%d "
        "refresh_s=%d watch=%s\n"
        % (
            FORMAT,
            mode,
            version,
            rate_hz,
            interval_s,
            ticks,
            os.uname()[4],
            busiest,
            REFRESH_S,
            ",".join(watch),
        )
    ).encode()


def main(argv=None):
    # type: (list[str] | None) -> int
    ap = argparse.ArgumentParser(description="perfkit thread-state sampler")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--count", type=int, default=1, help="intervals to write")
    ap.add_argument("--rate", type=float, default=DEFAULT_RATE_HZ, help="samples per second")
    ap.add_argument("--busiest", type=int, default=BUSIEST)
    ap.add_argument("--watch", default="", help="process names, space-separated")
    ap.add_argument("--psi", help="file the PSI blocks are appended to")
    ap.add_argument("--root", default="/proc")
    args = ap.parse_args(argv)
    out = getattr(sys.stdout, "buffer", sys.stdout)
    watch = args.watch.split()
    mode = "python%d" % sys.version_info[0]
    version = "%d.%d.%d" % tuple(sys.version_info[:3])
    try:  # room for four descriptors a thread (a few thousand threads); keep the hard limit
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        HELD[1] = max(0, (65536 if soft == resource.RLIM_INFINITY else soft) - 64)
    except (ImportError, ValueError, OSError):
        pass
    out.write(header(mode, version, args.rate, args.interval, args.busiest, watch))
    psi = None
    if args.psi:
        psi = open(args.psi, "ab")
        psi.write(("# perfkit-psi %d source=%s/pressure\n" % (FORMAT, args.root.rstrip("/"))).encode())
    sampler = Sampler(out, root=args.root, watch=watch, busiest=args.busiest, psi=psi)
    try:
        sampler.run(max(1, args.count), args.interval, args.rate)
    except KeyboardInterrupt:
        pass
    except IOError as exc:  # the reader went away (the capture was stopped): nothing to say
        if exc.errno != errno.EPIPE:
            raise
    finally:
        sampler.close()
        if psi is not None:
            psi.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

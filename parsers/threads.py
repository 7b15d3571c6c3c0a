"""threads: perfkit's thread-state sampler (`collectors/thread_sampler.py`, or its awk mode in
`collectors/captures.py`), one capture per host and window.

For the processes it selected (named by `/proc/PID/comm` from `{watch}`, plus the busiest few by CPU
over a short probe at the start), the sampler reads every thread's `/proc/PID/task/TID/stat` (state),
`syscall` (first field) and `wchan` several times a second (`rate_hz` in the header: 2 with Python
2.7/3, 1 in the awk mode; the fixtures were taken at an earlier 5 and 2), counts the samples per (pid,
thread name, state, syscall, wchan) and writes them once per interval, with every thread's
`schedstat` delta (on-CPU ns, run-queue wait ns) summed per (pid, thread name). The capture:

    # perfkit-threads 1 mode=python3 version=3.11.7 rate_hz=5 interval_s=1 clk_tck=100 arch=x86_64 ...
    # select 1795766964.519 pid=11010 why=named comm=mariadbd
    # select 1795766964.520 pid=812 why=busiest cpu_ticks=12 comm=kworker/1:1H
    # gone 1795766974.000 pid=812
    = 1795766965.520 1.000 5                   interval end (epoch s), seconds covered, samples taken
    c<TAB>11010<TAB>S<TAB>202<TAB>futex_do_wait<TAB>110<TAB>mariadbd<TAB>mariadbd
    d<TAB>11010<TAB>25<TAB>100660<TAB>12518<TAB>mariadbd<TAB>mariadbd

(`c`: pid, state, syscall, wchan, samples in that combination, process name, thread name; `d`: pid,
threads of that name, on-CPU ns, run-delay ns, process name, thread name; names escaped `\\`, `\t`,
`\r`, `\n`).

Schema — one row per `c` line (`record` = `state`) and per `d` line (`record` = `sched`):

| column | dtype | meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | the interval's end (the host's clock) |
| host | string | the `host` argument |
| interval_s | float64 | seconds the interval covered (from the previous `=` line, or the sampling start) |
| samples | Int64 | samples taken in the interval (all rows of an interval share it) |
| pid | Int64 | process id |
| process | string | the process's comm (15 characters at most) |
| selected | string | why the process was sampled: `named` (its comm is watched) or `busiest`; NA if unknown |
| thread | string | the thread's comm (`mariadbd`; TiKV: `raftstore-1`, `grpc-server-0`, …) |
| record | string | `state` (a count row) or `sched` (a schedstat row) |
| state | string | stat's state letter (below); NA on `sched` rows |
| syscall | string | the system call the thread is in, by name (below); NA: unreadable, `sched` rows |
| syscall_nr | Int64 | its number (`-1`: none); NA for running, kernel, unreadable, `sched` rows |
| wchan | string | kernel function it sleeps in; `0`: none; NA: unreadable, `sched` rows |
| count | Int64 | samples in that (pid, thread, state, syscall, wchan) combination; NA on `sched` rows |
| avg_threads | float64 | count / samples: average threads in that combination over the interval |
| threads | Int64 | `sched` rows: threads of that name at the interval's end; NA on `state` rows |
| cpu_ns | Int64 | `sched` rows: on-CPU time of those threads in the interval (schedstat field 1 delta), ns |
| run_delay_ns | Int64 | `sched` rows: time they waited runnable for a CPU (schedstat field 2 delta), ns |
| cpu_s_per_s | float64 | cpu_ns / 1e9 / interval_s: average threads on a CPU |
| run_delay_s_per_s | float64 | run_delay_ns / 1e9 / interval_s: threads waiting for a CPU |

`state`: R running or runnable, S sleeping, D uninterruptible (IO), I idle kernel thread, T/t
stopped, Z zombie. `syscall`: the name from the tables below for the header's `arch` (x86_64 when
absent or unknown), the number as text where the table has none; `running` (on a CPU when read: the
call is not known), `none` (`-1`: blocked outside a system call, e.g. a page fault), `kernel` (a
kernel thread: its file says 0, which is no `read`). `wchan`: `futex_do_wait`, `io_schedule`,
`jbd2_log_wait_commit`, … as the kernel prints it (`0` when running).

So per step and process, the average threads in a (state, syscall, wchan, thread) combination is
`sum(count) / sum(samples of the distinct intervals)` over the step's intervals (or the mean of
`avg_threads` per interval, summed over the combination's rows), and the run delay per second is
`sum(run_delay_ns) / 1e9 / sum(interval_s)`. A thread that exits takes its last interval's schedstat
delta with it; a thread first seen in an already sampled process counts from its start; `cpu_ns` and
`run_delay_ns` are NA (`-` in the capture) when no thread of that name had a baseline yet.

What it reads beside its rows: `EXTRAS` (below). A line that is none of these, a count or schedstat
row before the first `=` line, or a capture without the `# perfkit-threads 1` header is a ParseError
naming the line. Tested on: tests/fixtures/threads/ (README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._common import Extras, Lines, Source, coerce, empty_frame, feed_lines


@dataclass(frozen=True)
class ThreadsExtras(Extras):
    """What threads reads beside its rows (see `_common.Extras`); `notes` says the header's sampler
    line (mode, version, rate, interval, arch) and processes gone."""

    # the thread sampler's settings, from its header line: `mode` python3|python2|awk, `rate_hz`,
    # `interval_s`, `clk_tck`, `arch`, `busiest`, `refresh_s`, `watch`
    sampler: dict = field(default_factory=dict)
    # the processes it sampled: one {pid, process, why, cpu_ticks, at} each
    selected: list = field(default_factory=list)


EXTRAS = ThreadsExtras

KIND = "threads"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "interval_s": "float64",
    "samples": "Int64",
    "pid": "Int64",
    "process": "string",
    "selected": "string",
    "thread": "string",
    "record": "string",
    "state": "string",
    "syscall": "string",
    "syscall_nr": "Int64",
    "wchan": "string",
    "count": "Int64",
    "avg_threads": "float64",
    "threads": "Int64",
    "cpu_ns": "Int64",
    "run_delay_ns": "Int64",
    "cpu_s_per_s": "float64",
    "run_delay_s_per_s": "float64",
}

# System call names by number ("-": no call has that number). x86_64: every `#define __NR_<name> <nr>`
# of /usr/include/x86_64-linux-gnu/asm/unistd_64.h; aarch64: asm-generic/unistd.h through
# `gcc -E -dM` with arm64's uapi defines (__BITS_PER_LONG 64, __ARCH_WANT_RENAMEAT, _NEW_STAT,
# _SET_GET_RLIMIT, _TIME32_SYSCALLS, _SYS_CLONE3, _MEMFD_SECRET), the __NR3264_ aliases resolved.
# Both from this lab's Debian 12 headers (linux-libc-dev 6.1): numbers 0-450; a newer call keeps its number.
_X86_64 = """
read write open close stat fstat lstat poll lseek mmap mprotect munmap brk rt_sigaction
rt_sigprocmask rt_sigreturn ioctl pread64 pwrite64 readv writev access pipe select sched_yield
mremap msync mincore madvise shmget shmat shmctl dup dup2 pause nanosleep getitimer alarm setitimer
getpid sendfile socket connect accept sendto recvfrom sendmsg recvmsg shutdown bind listen
getsockname getpeername socketpair setsockopt getsockopt clone fork vfork execve exit wait4 kill
uname semget semop semctl shmdt msgget msgsnd msgrcv msgctl fcntl flock fsync fdatasync truncate
ftruncate getdents getcwd chdir fchdir rename mkdir rmdir creat link unlink symlink readlink chmod
fchmod chown fchown lchown umask gettimeofday getrlimit getrusage sysinfo times ptrace getuid syslog
getgid setuid setgid geteuid getegid setpgid getppid getpgrp setsid setreuid setregid getgroups
setgroups setresuid getresuid setresgid getresgid getpgid setfsuid setfsgid getsid capget capset
rt_sigpending rt_sigtimedwait rt_sigqueueinfo rt_sigsuspend sigaltstack utime mknod uselib
personality ustat statfs fstatfs sysfs getpriority setpriority sched_setparam sched_getparam
sched_setscheduler sched_getscheduler sched_get_priority_max sched_get_priority_min
sched_rr_get_interval mlock munlock mlockall munlockall vhangup modify_ldt pivot_root _sysctl prctl
arch_prctl adjtimex setrlimit chroot sync acct settimeofday mount umount2 swapon swapoff reboot
sethostname setdomainname iopl ioperm create_module init_module delete_module get_kernel_syms
query_module quotactl nfsservctl getpmsg putpmsg afs_syscall tuxcall security gettid readahead
setxattr lsetxattr fsetxattr getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr
removexattr lremovexattr fremovexattr tkill time futex sched_setaffinity sched_getaffinity
set_thread_area io_setup io_destroy io_getevents io_submit io_cancel get_thread_area lookup_dcookie
epoll_create epoll_ctl_old epoll_wait_old remap_file_pages getdents64 set_tid_address
restart_syscall semtimedop fadvise64 timer_create timer_settime timer_gettime timer_getoverrun
timer_delete clock_settime clock_gettime clock_getres clock_nanosleep exit_group epoll_wait
epoll_ctl tgkill utimes vserver mbind set_mempolicy get_mempolicy mq_open mq_unlink mq_timedsend
mq_timedreceive mq_notify mq_getsetattr kexec_load waitid add_key request_key keyctl ioprio_set
ioprio_get inotify_init inotify_add_watch inotify_rm_watch migrate_pages openat mkdirat mknodat
fchownat futimesat newfstatat unlinkat renameat linkat symlinkat readlinkat fchmodat faccessat
pselect6 ppoll unshare set_robust_list get_robust_list splice tee sync_file_range vmsplice
move_pages utimensat epoll_pwait signalfd timerfd_create eventfd fallocate timerfd_settime
timerfd_gettime accept4 signalfd4 eventfd2 epoll_create1 dup3 pipe2 inotify_init1 preadv pwritev
rt_tgsigqueueinfo perf_event_open recvmmsg fanotify_init fanotify_mark prlimit64 name_to_handle_at
open_by_handle_at clock_adjtime syncfs sendmmsg setns getcpu process_vm_readv process_vm_writev kcmp
finit_module sched_setattr sched_getattr renameat2 seccomp getrandom memfd_create kexec_file_load
bpf execveat userfaultfd membarrier mlock2 copy_file_range preadv2 pwritev2 pkey_mprotect pkey_alloc
pkey_free statx io_pgetevents rseq
"""
_AARCH64 = """
io_setup io_destroy io_submit io_cancel io_getevents setxattr lsetxattr fsetxattr getxattr lgetxattr
fgetxattr listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr getcwd
lookup_dcookie eventfd2 epoll_create1 epoll_ctl epoll_pwait dup dup3 fcntl inotify_init1
inotify_add_watch inotify_rm_watch ioctl ioprio_set ioprio_get flock mknodat mkdirat unlinkat
symlinkat linkat renameat umount2 mount pivot_root nfsservctl statfs fstatfs truncate ftruncate
fallocate faccessat chdir fchdir chroot fchmod fchmodat fchownat fchown openat close vhangup pipe2
quotactl getdents64 lseek read write readv writev pread64 pwrite64 preadv pwritev sendfile pselect6
ppoll signalfd4 vmsplice splice tee readlinkat newfstatat fstat sync fsync fdatasync sync_file_range
timerfd_create timerfd_settime timerfd_gettime utimensat acct capget capset personality exit
exit_group waitid set_tid_address unshare futex set_robust_list get_robust_list nanosleep getitimer
setitimer kexec_load init_module delete_module timer_create timer_gettime timer_getoverrun
timer_settime timer_delete clock_settime clock_gettime clock_getres clock_nanosleep syslog ptrace
sched_setparam sched_setscheduler sched_getscheduler sched_getparam sched_setaffinity
sched_getaffinity sched_yield sched_get_priority_max sched_get_priority_min sched_rr_get_interval
restart_syscall kill tkill tgkill sigaltstack rt_sigsuspend rt_sigaction rt_sigprocmask
rt_sigpending rt_sigtimedwait rt_sigqueueinfo rt_sigreturn setpriority getpriority reboot setregid
setgid setreuid setuid setresuid getresuid setresgid getresgid setfsuid setfsgid times setpgid
getpgid getsid setsid getgroups setgroups uname sethostname setdomainname getrlimit setrlimit
getrusage umask prctl getcpu gettimeofday settimeofday adjtimex getpid getppid getuid geteuid getgid
getegid gettid sysinfo mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr msgget
msgctl msgrcv msgsnd semget semctl semtimedop semop shmget shmctl shmat shmdt socket socketpair bind
listen accept connect getsockname getpeername sendto recvfrom setsockopt getsockopt shutdown sendmsg
recvmsg readahead brk munmap mremap add_key request_key keyctl clone execve mmap fadvise64 swapon
swapoff mprotect msync mlock munlock mlockall munlockall mincore madvise remap_file_pages mbind
get_mempolicy set_mempolicy migrate_pages move_pages rt_tgsigqueueinfo perf_event_open accept4
recvmmsg arch_specific_syscall - - - - - - - - - - - - - - - wait4 prlimit64 fanotify_init
fanotify_mark name_to_handle_at open_by_handle_at clock_adjtime syncfs setns sendmmsg
process_vm_readv process_vm_writev kcmp finit_module sched_setattr sched_getattr renameat2 seccomp
getrandom memfd_create bpf execveat userfaultfd membarrier mlock2 copy_file_range preadv2 pwritev2
pkey_mprotect pkey_alloc pkey_free statx io_pgetevents rseq kexec_file_load
"""
# since Linux 5.1 a new call has one number on every architecture, from 424 on
_FROM_424 = """
pidfd_send_signal io_uring_setup io_uring_enter io_uring_register open_tree move_mount fsopen
fsconfig fsmount fspick pidfd_open clone3 close_range openat2 pidfd_getfd faccessat2 process_madvise
epoll_pwait2 mount_setattr quotactl_fd landlock_create_ruleset landlock_add_rule
landlock_restrict_self memfd_secret process_mrelease futex_waitv set_mempolicy_home_node
"""


def _numbered(names: str) -> tuple[str, ...]:
    """`names` numbered from 0, `-` up to 423, then `_FROM_424`."""
    below = names.split()
    return (*below, *["-"] * (424 - len(below)), *_FROM_424.split())


SYSCALLS: dict[str, tuple[str, ...]] = {"x86_64": _numbered(_X86_64), "aarch64": _numbered(_AARCH64)}
SYSCALLS |= {"amd64": SYSCALLS["x86_64"], "arm64": SYSCALLS["aarch64"]}

_HEADER = re.compile(r"^# perfkit-threads (\d+)(?: (.*))?$")
_SELECT = re.compile(r"^# select (\d+(?:\.\d+)?) pid=(\d+) why=(\w+)(?: cpu_ticks=(\d+))? comm=(.*)$")
_GONE = re.compile(r"^# gone (\d+(?:\.\d+)?) pid=(\d+)$")
_BLOCK = re.compile(r"^= (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+)$")
_STATE = re.compile(r"^[A-Za-z]$")
_NUM = re.compile(r"^-?\d+$")
_UNESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", "t": "\t", "r": "\r", "n": "\n"}
# the columns `_row` fills, `timestamp` as epoch seconds; the others are computed from them
_ROW = [c for c in SCHEMA if c not in ("host", "avg_threads", "cpu_s_per_s", "run_delay_s_per_s")]


def sniff(text: str) -> bool:
    """The sampler's header line opens the capture."""
    return text.lstrip("\ufeff").startswith("# perfkit-threads ")


def _name(text: str) -> str:
    return _UNESCAPE.sub(lambda m: _ESCAPES.get(m[1], m[0]), text) if "\\" in text else text


def syscall_name(token: str, arch: str) -> tuple[str | None, int | None]:
    """(name, number) of the sampler's syscall field on `arch` (see the schema's `syscall`)."""
    if token in ("running", "kernel"):
        return token, None
    if token == "?":
        return None, None
    nr = int(token)
    if nr < 0:
        return "none", nr
    table = SYSCALLS.get(arch, SYSCALLS["x86_64"])
    name = table[nr] if nr < len(table) else "-"
    return (name if name != "-" else str(nr)), nr


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a thread-sampler capture into one row per count line and per schedstat line.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (the stamps are epoch seconds); kept for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: no header, an unknown line, a row before the first interval, a bad field.
    """
    rows: list[tuple] = []
    meta: dict[str, str] = {}
    selected: list[dict] = []
    why: dict[int, str] = {}
    notes: list[str] = []
    block: tuple[float, float, int] | None = None  # stamp, seconds, samples
    dropped = 0

    def feed(line_no: int, line: str, lines: Lines) -> None:
        nonlocal block
        if not line.strip():
            return
        if not meta:
            m = _HEADER.match(line.lstrip("\ufeff"))
            if not m:
                raise lines.error(
                    line_no, line, "not a perfkit thread-sampler capture (no '# perfkit-threads' header)"
                )
            if m[1] != "1":
                raise lines.error(line_no, line, f"thread-sampler format {m[1]} is not known (this reads 1)")
            meta["format"] = m[1]
            for word in (m[2] or "").split():
                key, eq, value = word.partition("=")
                if eq:
                    meta[key] = value
            notes.append("sampler: " + (m[2] or ""))
        elif line.startswith(("c\t", "d\t")):
            if block is None:
                raise lines.error(
                    line_no, line, "a row before the first interval line ('= stamp seconds samples')"
                )
            try:
                rows.append(_row(line, block, why, meta.get("arch", "x86_64")))
            except ValueError as exc:
                raise lines.error(line_no, line, str(exc)) from None
        elif m := _BLOCK.match(line):
            block = (float(m[1]), float(m[2]), int(m[3]))
        elif m := _SELECT.match(line):
            pid = int(m[2])
            why[pid] = m[3]
            cpu_ticks = int(m[4]) if m[4] else None
            selected.append(
                {"pid": pid, "process": _name(m[5]), "why": m[3], "cpu_ticks": cpu_ticks, "at": float(m[1])}
            )
        elif m := _GONE.match(line):
            notes.append(f"pid {m[2]} gone at {m[1]}")
        else:
            raise lines.error(line_no, line, "not a thread-sampler line")

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1

    feed_lines(source, KIND, feed, cut_last)
    df = _frame(rows, host) if rows else empty_frame(SCHEMA)
    df.attrs.update(dropped_lines=dropped, notes=notes, sampler=dict(meta), selected=selected)
    return df


def _row(line: str, block: tuple[float, float, int], why: dict[int, str], arch: str) -> tuple:
    """A `c` or `d` line as the values of `_ROW`; ValueError says which field is wrong."""
    f = line.split("\t")
    if f[0] == "c":
        if len(f) != 8:
            raise ValueError(f"a count row has 8 tab-separated fields, this has {len(f)}")
        pid = _int(f[1], "pid")
        if not _STATE.match(f[2]):
            raise ValueError(f"thread state {f[2]!r} is not one letter")
        if not (f[3] in ("running", "kernel", "?") or _NUM.match(f[3])):
            raise ValueError(f"syscall {f[3]!r} is neither a number nor running/kernel/?")
        call, nr = syscall_name(f[3], arch)
        count = _int(f[5], "count")
        wchan = None if f[4] == "?" else _name(f[4])
        process, thread = f[6], f[7]
        values = ("state", f[2], call, nr, wchan, count, None, None, None)
    else:
        if len(f) != 7:
            raise ValueError(f"a schedstat row has 7 tab-separated fields, this has {len(f)}")
        pid = _int(f[1], "pid")
        threads = _int(f[2], "threads")
        cpu = _int(f[3], "cpu_ns", dash=True)
        delay = _int(f[4], "run_delay_ns", dash=True)
        process, thread = f[5], f[6]
        values = ("sched", None, None, None, None, None, threads, cpu, delay)
    return (*block, pid, _name(process), why.get(pid), _name(thread), *values)


def _int(text: str, what: str, *, dash: bool = False) -> int | None:
    if dash and text == "-":
        return None
    if not _NUM.match(text):
        raise ValueError(f"{what} {text!r} is not a whole number")
    return int(text)


def _frame(rows: list[tuple], host: str | None) -> pd.DataFrame:
    data = {col: list(values) for col, values in zip(_ROW, zip(*rows, strict=True), strict=True)}
    stamps = np.asarray(data.pop("timestamp"), dtype="float64")
    frame = pd.DataFrame(
        {
            # microseconds: a float of epoch seconds holds no more
            "timestamp": pd.to_datetime(np.round(stamps * 1e6).astype("int64") * 1000, utc=True),
            "host": pd.array([host] * len(rows), dtype="string"),
            **{col: pd.array(values, dtype=SCHEMA[col]) for col, values in data.items()},
        }
    )
    frame["avg_threads"] = (frame["count"] / frame["samples"].where(frame["samples"] > 0)).astype("float64")
    secs = frame["interval_s"].where(frame["interval_s"] > 0)
    frame["cpu_s_per_s"] = (frame["cpu_ns"].astype("float64") / 1e9 / secs).astype("float64")
    frame["run_delay_s_per_s"] = (frame["run_delay_ns"].astype("float64") / 1e9 / secs).astype("float64")
    return coerce(frame, SCHEMA)

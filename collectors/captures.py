"""What perfkit captures on a host, declared as data; collectors/session.py runs them.

The default profile is the Netflix 60-second checklist plus what the seed 000 script collects.
Each capture is one shell command whose stdout becomes `hosts/<host>/<id>.out` byte for byte.
Placeholders: `{interval}` (s), `{count}` (samples in the window), `{reports}` (count + 1, for
tools whose first report comes at once with no interval behind it — vmstat's and iostat's since-boot
averages, top's and iotop's first screen, the ss loop's first block — so their last report lands at
the window's end, as mpstat's, pidstat's and sar's do), `{window}` (s), `{workdir}` (a 0700 scratch
directory on the host, removed at the end), `{watch}` (the process names whose threads and cgroups
are followed: WATCHED plus the user's `--watch`, one shell word). Every command later runs under
`LC_ALL=C S_TIME_FORMAT=ISO` and a `timeout` tied to the window (session.py), so nothing
outlives the run.

Phases: `start` snapshots run when the window opens, `window` captures sample through it, `end`
snapshots and conversions run after it (sar's binary file is converted on the host with its own
`sadf`, because the binary format differs between sysstat versions).
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

PHASES = ("start", "window", "end")
# The processes whose threads, waits and cgroups matter in a database load test, by the name the
# kernel gives them (/proc/PID/comm, at most 15 characters): databases, load generators, proxies.
WATCHED: tuple[str, ...] = (
    "mariadbd",
    "mysqld",
    "tidb-server",
    "tikv-server",
    "pd-server",
    "tiflash",
    "sysbench",
    "go-ycsb",
    "go-tpc",
    "haproxy",
    "proxysql",
)
_NAME = re.compile(r"^[A-Za-z0-9._:+-]{1,64}$")


def watch_names(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """WATCHED and the user's names, each once; ValueError for a name that is no process name."""
    for name in extra:
        if not _NAME.match(name):
            raise ValueError(f"invalid process name {name!r}: letters, digits and . _ : + - only")
    return tuple(dict.fromkeys((*WATCHED, *extra)))


@dataclass(frozen=True)
class CaptureSpec:
    """One capture: a shell command template and how to treat its output."""

    id: str  # file stem in the archive: hosts/<host>/<id>.out
    kind: str  # the parser module that reads it (design.md); may not exist yet
    command: str  # POSIX shell template with {interval} {count} {reports} {window} {workdir} {watch}
    tool: str  # the binary that must exist on the host (checked with `command -v`)
    phase: str = "window"
    version: str = ""  # shell command whose first output line names the tool's version
    needs_root: bool = False
    intrusive: bool = False  # costs the host something: only with an explicit opt-in
    max_bytes: int = 64 << 20
    # What it writes on the host itself (not streamed back), at most: bytes per sample, per sample
    # and CPU, and a fixed cap; the free-space check counts it before anything starts.
    host_bytes: tuple[int, int, int] = (0, 0, 0)
    # Line starts that show the capture has begun sampling. Such a capture starts before the window
    # opens, and its host reaches the window only once one arrives (collectors/_host.py `_lead`): a
    # sampler that takes most of a second to start would otherwise miss a short step's load.
    sampling: tuple[bytes, ...] = ()

    def host_bytes_at_most(self, *, samples: int, cpus: int) -> int:
        per_sample, per_cpu, fixed = self.host_bytes
        return samples * (per_sample + per_cpu * max(1, cpus)) + fixed

    def render(self, *, interval: int, window: int, workdir: str, watch: tuple[str, ...] = ()) -> str:
        """The command with its placeholders filled (`watch`: the user's names beside WATCHED);
        values are numbers or quoted words."""
        count = max(1, window // interval)
        return self.command.format(
            interval=int(interval),
            count=count,
            reports=count + 1,
            window=int(window),
            workdir=shlex.quote(workdir),
            watch=shlex.quote(" ".join(watch_names(watch))),
        )


_SS_LOOP = (
    # One block per second: a stamp, `ss -s`, and the count of sockets in TIME-WAIT proper (`ss -s`
    # counts orphaned FIN-WAIT-2 too). The count asks netlink (`ss state`), not /proc/net/tcp, whose
    # read walks the whole established hash: 6.5 ms of CPU against 2.8 ms on the benchmark's VM, every
    # second. No -H (iproute2 < 4.16): the header line is subtracted, and a failing `ss` prints no
    # count rather than 0. No sleep after the last block: the capture ends with the window.
    'i=0; while :; do echo "== $(date +%s)"; ss -s; '
    'n=$(ss -tan state time-wait 2>/dev/null | wc -l); [ "$n" -gt 0 ] && echo "timewait: $((n - 1))"; '
    "i=$((i+1)); [ $i -lt {reports} ] || break; sleep {interval}; done"
)
# TCP's counters once a second (parsers/netstat_s.py: a `TS <epoch> <date>` stamp as pt-stalk's
# -netstat_s has, then nstat's `#kernel` block), for the segments retransmitted against those sent
# (net.retransmits) and the listen queues' overflows (net.listen-overflow). nstat -a prints absolute
# values (the parser takes the deltas; one that goes back is a reset, no rate), -s leaves nstat's
# history file alone (a user's own `nstat` still counts from *their* last run), -z keeps zeros (0/s
# is evidence too). The named counters only: all of them are 21.7 kB a sample here (78 MB an hour),
# these 1.4 kB. One nstat costs 2.8 ms of CPU here (reading /proc/net/snmp and netstat itself).
_NSTAT_COUNTERS = (
    "TcpActiveOpens TcpPassiveOpens TcpAttemptFails TcpEstabResets TcpInSegs TcpOutSegs TcpRetransSegs "
    "TcpInErrs TcpOutRsts TcpExtListenOverflows TcpExtListenDrops TcpExtTCPReqQFullDrop "
    "TcpExtTCPReqQFullDoCookies TcpExtSyncookiesSent TcpExtTCPBacklogDrop TcpExtTCPTimeouts "
    "TcpExtTCPSynRetrans TcpExtTCPFastRetrans TcpExtTCPSlowStartRetrans TcpExtTCPLostRetransmit "
    "TcpExtTCPLossProbes TcpExtTCPAbortOnTimeout TcpExtTCPRcvQDrop TcpExtTCPZeroWindowDrop"
)
_NSTAT_LOOP = (
    "i=0; while :; do date '+TS %s.%N %F %T'; nstat -asz " + _NSTAT_COUNTERS + "; "
    "i=$((i+1)); [ $i -lt {reports} ] || break; sleep {interval}; done"
)
# `iotop --version` starts a Python interpreter: 53 ms of CPU on the benchmark's VM, half of what the
# rest of the preflight costs. The Python iotop's version is one line of its package; iotop-c (C) is
# asked directly. `read` and `case` are builtins: one `sed` in the common case (the preflight keeps
# the first line).
_IOTOP_VERSION = (
    'p=$(command -v iotop); l=; read -r l < "$p"; case $l in "#!"*python*) '
    'sed -n "s/^VERSION *= *[\'\\"]\\([^\'\\"]*\\).*/iotop \\1/p" '
    "/usr/lib/python3*/*-packages/iotop/version.py ;; *) iotop --version ;; esac"
)
_SYSCTL_KEYS = (
    "net.ipv4.ip_local_port_range net.ipv4.tcp_tw_reuse net.ipv4.tcp_fin_timeout "
    "net.core.somaxconn net.ipv4.tcp_max_syn_backlog kernel.task_delayacct vm.swappiness"
)

# cgroup limits and counters of the watched processes (parsers/cgroup.py reads it; its docstring shows
# the output): grep names every process's comm in one pass, awk keeps the watched ones and reads their
# /proc/PID/cgroup, finds each hierarchy's mount in /proc/self/mountinfo (a v1 controller may be
# co-mounted, `cpu,cpuacct`; a mount's root is taken off the path, as in a container that mounts its
# own cgroup as `/`), and prints each cgroup's CPU, IO and memory files once, however many watched
# processes share it; a file, controller or cgroup that is not there is a `missing`/`unreachable`
# line, never an error. POSIX awk (mawk): `getline < file` returns -1 for a file that is not there.
# One grep and one awk, about a dozen small reads per cgroup: taken at the window's start and end so
# the counters' deltas are the step's. `R` (unset here) prefixes every path read, so a test can
# point it at a tree of files in the kernel's formats (tests/test_cgroup.py).
_CGROUP_AWK = r"""
function unesc(s,   out, i, c) {
  out = ""
  while ((i = index(s, "\\")) > 0) {
    c = substr(s, i + 1, 3)
    if (c == "040") c = " "; else if (c == "011") c = "\t"; else if (c == "012") c = "\n"
    else if (c == "134") c = "\\"; else { out = out substr(s, 1, i); s = substr(s, i + 1); continue }
    out = out substr(s, 1, i - 1) c; s = substr(s, i + 4)
  }
  return out s
}
function has(list, item) { return index("," list ",", "," item ",") > 0 }
function wanted(list,   n, a, k) {
  n = split(list, a, ",")
  for (k = 1; k <= n; k++) if (a[k] in files1) return 1
  return 0
}
function resolve(ver, list, path,   i, n, a, k, ok, r, rel, best, dir) {
  why = ""; dir = ""; best = -1
  if (path == "/.." || substr(path, 1, 4) == "/../") {
    why = "the cgroup is outside this cgroup namespace"; return ""
  }
  for (i = 1; i <= nm; i++) {
    if (mver[i] != ver) continue
    if (ver == 1) {
      n = split(list, a, ","); ok = 1
      for (k = 1; k <= n; k++) if (!has(mopts[i], a[k])) ok = 0
      if (!ok) continue
    }
    r = mroot[i]
    if (r == "/") rel = path
    else if (path == r) rel = "/"
    else if (substr(path, 1, length(r) + 1) == r "/") rel = substr(path, length(r) + 1)
    else { why = "the path is not below the root " r " mounted at " mpoint[i]; continue }
    if (length(r) <= best) continue
    best = length(r); dir = (rel == "/" ? mpoint[i] : (mpoint[i] == "/" ? "" : mpoint[i]) rel)
  }
  if (dir == "" && why == "")
    why = (ver == 1 ? "no cgroup mount of " list : "no cgroup2 mount") " in /proc/self/mountinfo"
  return dir
}
function dump(dir, name, note,   f, line, r, d) {
  f = R dir "/" name
  r = (getline line < f)
  if (r < 0) { print "missing " name note; return }
  print "file " name
  while (r > 0) {
    print "  " line
    if (line ~ /^[0-9]+:[0-9]+ / && name ~ /^(blkio|io)\./) {
      d = substr(line, 1, index(line, " ") - 1)
      if (!(d in devs)) { devs[d] = 1; nd++; dev[nd] = d }
    }
    r = (getline line < f)
  }
  close(f)
}
BEGIN {
  n = split(watch, a, " "); for (k = 1; k <= n; k++) want[a[k]] = 1
  files1["cpu"] = "cpu.cfs_quota_us cpu.cfs_period_us cpu.stat"
  files1["cpuacct"] = "cpuacct.usage"
  tb = "blkio.throttle."
  files1["blkio"] = tb "read_bps_device " tb "write_bps_device " tb "read_iops_device " \
    tb "write_iops_device " tb "io_serviced " tb "io_service_bytes"
  files1["memory"] = "memory.limit_in_bytes memory.usage_in_bytes memory.max_usage_in_bytes " \
    "memory.failcnt memory.oom_control"
  files2 = "cpu.max cpu.weight cpu.stat io.max io.stat " \
    "memory.max memory.high memory.current memory.peak memory.events"
}
substr($0, 1, 6) == "/proc/" {
  rest = substr($0, 7); i = index(rest, "/comm:")
  if (i > 1 && substr(rest, i + 6) in want) {
    np++; pid[np] = substr(rest, 1, i - 1); comm[np] = substr(rest, i + 6)
  }
}
END {
  print "cgroup snapshot at " t " of: " watch
  f = R "/proc/self/mountinfo"
  while ((getline line < f) > 0) {
    n = split(line, a, " ")
    for (k = 7; k <= n && a[k] != "-"; k++) ;
    if (k + 3 > n || (a[k + 1] != "cgroup" && a[k + 1] != "cgroup2")) continue
    nm++; mver[nm] = (a[k + 1] == "cgroup2" ? 2 : 1); mopts[nm] = a[k + 3]
    mroot[nm] = unesc(a[4]); mpoint[nm] = unesc(a[5])
    print "mount v" mver[nm] " " mopts[nm] " root " mroot[nm] " at " mpoint[nm]
  }
  close(f)
  if (!nm) print "missing cgroup mounts (no cgroup or cgroup2 line in /proc/self/mountinfo)"
  if (!np) print "missing processes (none of the watched names is running)"
  for (p = 1; p <= np; p++) {
    print "== pid " pid[p] " " comm[p]
    f = R "/proc/" pid[p] "/cgroup"; got = ""; v2 = 0
    r = (getline line < f)
    if (r < 0) print "missing /proc/" pid[p] "/cgroup (the process exited)"
    for (; r > 0; r = (getline line < f)) {
      i = index(line, ":"); rest = substr(line, i + 1); j = index(rest, ":")
      list = substr(rest, 1, j - 1); path = substr(rest, j + 1)
      if (substr(line, 1, i - 1) == "0" && list == "") { ver = 2; v2 = 1; print "cgroup v2 " path }
      else if (wanted(list)) { ver = 1; got = got "," list; print "cgroup v1 " list " " path }
      else continue
      key = ver " " list " " path
      if (!(key in seen)) { seen[key] = 1; nb++; bver[nb] = ver; blist[nb] = list; bpath[nb] = path }
    }
    close(f)
    if (r >= 0 && !v2) {
      n = split("cpu cpuacct blkio memory", a, " ")
      for (k = 1; k <= n; k++) if (!has(got, a[k]))
        print "missing controller " a[k] " (in no hierarchy of /proc/" pid[p] "/cgroup)"
    }
  }
  for (b = 1; b <= nb; b++) {
    print "== cgroup v" bver[b] (bver[b] == 1 ? " " blist[b] : "") " " bpath[b]
    dir = resolve(bver[b], blist[b], bpath[b])
    if (dir == "") { print "unreachable " why; continue }
    print "dir " dir
    if (bver[b] == 1) {
      n = split(blist[b], a, ",")
      for (k = 1; k <= n; k++) if (a[k] in files1) {
        m = split(files1[a[k]], fl, " ")
        for (q = 1; q <= m; q++) dump(dir, fl[q], "")
      }
      continue
    }
    f = R dir "/cgroup.controllers"; ctl = ""
    if ((getline ctl < f) < 0) ctl = "unknown"
    close(f)
    print "controllers " ctl
    m = split(files2, fl, " ")
    for (q = 1; q <= m; q++) {
      c = substr(fl[q], 1, index(fl[q], ".") - 1)
      if (index(" " ctl " ", " " c " ") == 0) note = " (controller " c " not enabled for this cgroup)"
      else if (bpath[b] == "/") note = " (the root cgroup has none)"
      else note = ""
      dump(dir, fl[q], note)
    }
  }
  for (k = 1; k <= nd; k++) {
    f = R "/sys/dev/block/" dev[k] "/uevent"; name = ""
    while ((getline line < f) > 0) if (substr(line, 1, 8) == "DEVNAME=") name = substr(line, 9)
    close(f)
    if (name == "" && !parts) {
      parts = 1
      while ((getline line < (R "/proc/partitions")) > 0)
        if (split(line, a, " ") == 4 && a[1] ~ /^[0-9]+$/) part[a[1] ":" a[2]] = a[4]
      close(R "/proc/partitions")
    }
    if (name == "" && dev[k] in part) name = part[dev[k]]
    if (name == "") print "missing device " dev[k] " (in neither /sys/dev/block nor /proc/partitions)"
    else print "device " dev[k] " " name
  }
}
"""
_CGROUP = "t=$(date +%s); grep -s -H '' /proc/[0-9]*/comm | awk -v t=\"$t\" -v watch={watch} " + shlex.quote(
    _CGROUP_AWK
).replace("{", "{{").replace("}", "}}")
CGROUP: tuple[CaptureSpec, ...] = (
    CaptureSpec("cgroup-start", "cgroup", _CGROUP, "awk", phase="start"),
    CaptureSpec("cgroup-end", "cgroup", _CGROUP, "awk", phase="end"),
)

# The thread-state sampler (issue 15; parsers/threads.py reads it, its docstring shows the format):
# one window capture that, with whatever Python 2.7+ the host has, runs collectors/thread_sampler.py
# fed on stdin (its text embedded here) at 2 samples a second, and without one the same sampling in
# POSIX sh + awk at 1 a second (a `sleep` and file opens per sample: 2 a second cost 3.8 % of a core
# for 300 threads, docs/benchmarks.md). It also appends PSI to {workdir}/psi.out,
# which the `psi` end capture ships (as sar's file is). The version probe (the manifest's
# tool_version) says which mode runs and at what rate. pyenv-style shims answer `command -v` for a
# Python they cannot run, hence the probe runs each candidate.
_PICK_PYTHON = (
    "py=; for c in python3 python2.7 python2 python; do command -v $c >/dev/null 2>&1 && "
    "v=$($c -c 'import sys; sys.version_info >= (2, 7) and "
    'sys.stdout.write("%d.%d.%d" % tuple(sys.version_info[:3]))\' 2>/dev/null) && '
    '[ -n "$v" ] && py=$c && break; done'
)
# sh lists each selected process's threads (a glob: no process started per sample) and sleeps; one
# awk reads every thread's stat, syscall and wchan, counts, and at each interval's `I` line reads
# schedstat and PSI and writes the block. Selection: the named by comm from a `cat` of every
# /proc/PID/stat at the start; after the first interval (a step's load generator starts just after
# the sampler) the named anew and the busiest by utime+stime over that interval (not our own process
# group); then the named every 10 s.
_THREADS_AWK_MODE = r"""W=__W__; I=__I__; N=__N__; PSI=__PSI__
R=1; P=1  # samples a second, and the seconds between them
now() { d=$(date +%s.%N); case $d in *N*) d=${d%%.*} ;; esac; }
probe() { cat /proc/[0-9]*/stat 2>/dev/null; }
SEL='
function tail(l) { return match(l, /\) [A-Za-z] [-0-9 ]*$/) ? substr(l, RSTART + 2) : "" }
function esc(s) { gsub(/\\/, "\\\\", s); gsub(/\t/, "\\t", s); gsub(/\r/, "\\r", s); return s }
BEGIN { split(watch, w, " "); for (i in w) named[w[i]] = 1
  split(known, kn, " "); for (i in kn) old[kn[i]] = 1; split(ours, o, " "); for (i in o) own[o[i]] = 1 }
$0 == "==" { second = 1; next }
{ t = tail($0); if (t == "") next; split(t, f, " "); pid = $1 + 0
  c = substr($0, index($0, "(") + 1, RSTART - index($0, "(") - 1)
  if (pid == me) mypg = f[3]
  pg[pid] = f[3]; comm[pid] = c; tick = f[12] + f[13]
  if (second) { t1[pid] = tick } else { t0[pid] = tick } }
END {
  out = ""; lines = ""
  for (p in old) if (p in comm) out = out " " p; else lines = lines "# gone " stamp " pid=" p "\n"
  for (p in comm) if (!(p in old) && (comm[p] in named)) {
    out = out " " p; chosen[p] = 1
    lines = lines "# select " stamp " pid=" p " why=named comm=" esc(comm[p]) "\n" }
  if (busiest > 0 && second) {
    for (k = 1; k <= busiest; k++) {
      best = ""; bd = 0
      for (p in t1)  # one that started between the probes counts all its ticks
        if (!(p in chosen) && !(p in old) && !(p in own) && pg[p] != mypg &&
            t1[p] - ((p in t0) ? t0[p] : 0) > bd) {
          best = p; bd = t1[p] - ((p in t0) ? t0[p] : 0) }
      if (best == "") break
      chosen[best] = 1; out = out " " best
      lines = lines "# select " stamp " pid=" best " why=busiest cpu_ticks=" bd " comm=" esc(comm[best]) "\n"
    }
  }
  printf "%s\n%s", out, lines
}'
MAIN='
function esc(s) { gsub(/\\/, "\\\\", s); gsub(/\t/, "\\t", s); gsub(/\r/, "\\r", s); return s }
function first(f,   l, r) { l = ""; r = (getline l < f); close(f); return r > 0 ? l : "?" }
BEGIN { OFS = "\t"; print "# perfkit-psi 1 source=/proc/pressure" > psi }
/^#/ { print; fflush()  # at once: its host waits for the first `# select` (CaptureSpec.sampling)
  if ($2 == "select") { p = $4; sub(/^pid=/, "", p); c = $0; sub(/.* comm=/, "", c); comm[p] = c }
  next }
$1 == "B" { last = $2; next }
$1 == "X" { nosys[$2] = 1; next }
$1 == "T" {
  f = $2 "/stat"; l = ""; r = (getline l < f); close(f); if (r <= 0) next
  if (!match(l, /\) [A-Za-z] [-0-9 ]*$/)) next
  n = split(substr(l, RSTART + 2), s, " ")
  name = esc(substr(l, index(l, "(") + 1, RSTART - index(l, "(") - 1))
  pid = $2; sub(/^\/proc\//, "", pid); sub(/\/.*/, "", pid)
  if (int(s[7] / 2097152) % 2) call = "kernel"; else if (pid in nosys) call = "?"
  else { call = first($2 "/syscall"); sub(/ .*/, "", call) }
  # wchan: 0 for a running thread; reused while it sleeps (S) in the same call (as the Python sampler)
  if (s[1] == "R") wc = "0"
  else if (s[1] == "S" && lsc[$2] == s[1] " " call) wc = lwc[$2]
  else { wc = first($2 "/wchan"); if (wc == "") wc = "0" }
  lsc[$2] = s[1] " " call; lwc[$2] = wc
  cnt[pid SUBSEP s[1] SUBSEP call SUBSEP esc(wc) SUBSEP name]++
  if (!($2 in pc)) {  # first sight: a new thread of a known process starts from 0, else a baseline
    if (pid in known) { pc[$2] = 0; pd[$2] = 0 }
    else { split(first($2 "/schedstat"), b, " "); pc[$2] = b[1]; pd[$2] = b[2] } }
  task[$2] = name; tpid[$2] = pid; seen[pid] = 1; next }
$1 == "E" { samples++; next }
$1 == "I" {
  printf "= %s %.3f %d\n", $2, $2 - last, samples
  for (k in cnt) { split(k, a, SUBSEP); print "c", a[1], a[2], a[3], a[4], cnt[k], comm[a[1]], a[5] }
  for (t in task) {
    l = first(t "/schedstat"); if (split(l, s, " ") < 2) continue
    key = tpid[t] SUBSEP task[t]; thr[key]++
    if (s[1] >= pc[t]) cpu[key] += s[1] - pc[t]; if (s[2] >= pd[t]) del[key] += s[2] - pd[t]
    pc[t] = s[1]; pd[t] = s[2] }
  for (t in pc) if (!(t in task)) { delete pc[t]; delete pd[t]; delete lsc[t]; delete lwc[t] }
  for (key in thr) { split(key, a, SUBSEP)
    print "d", a[1], thr[key], sprintf("%.0f", cpu[key]), sprintf("%.0f", del[key]), comm[a[1]], a[2] }
  print "= " $2 > psi
  for (i = 1; i <= 3; i++) { res = (i == 1) ? "cpu" : (i == 2) ? "io" : "memory"; f = "/proc/pressure/" res
    r = 0; while ((getline l < f) > 0) { r = 1; print res " " l > psi } close(f)
    if (!r && !(res in nopsi)) { nopsi[res] = 1; print "# no PSI for " res ": " f ": not readable" > psi } }
  fflush(psi); fflush()
  for (p in seen) known[p] = 1
  split("", cnt); split("", thr); split("", cpu); split("", del); split("", task); split("", seen)
  samples = 0; last = $2; next }
'
nl='
'
# perfkit's own, never "busiest" (as the Python sampler's `ours`): this shell's ancestors, and what works
# in its directory, where every capture of the run starts
ours() {
  q=$PPID; while [ "$q" -gt 1 ] 2>/dev/null; do
    printf '%s ' "$q"; q=$(awk '{ sub(/.*\) [A-Za-z] /, ""); print $1 }' /proc/$q/stat 2>/dev/null)
  done
  for d in /proc/[0-9]*; do [ "$d/cwd" -ef . ] && printf '%s ' "${d#/proc/}"; done
}
# A process whose syscall file may not be read (ptrace rules; pid 1 here) fails the read, not the
# open, and mawk dies on a read error: such processes are tested once with cat and told to awk (X).
pick() {
  pids=${sel%%"$nl"*}; case $sel in *"$nl"*) printf '%s\n' "${sel#*"$nl"}" ;; esac
  for p in $pids; do cat /proc/$p/syscall >/dev/null 2>&1 || echo "X $p"; done
}
me=$$
# mawk fills its whole input buffer before it hands over a line: the `# select` lines reached perfkit
# at the window's end (4 s into a 4 s window), so the host waited LEAD_WAIT_S every step. Interactive
# mode reads a line at a time (gawk and busybox awk do, and know no such option)
ai=; case $(awk -W version 2>&1 </dev/null) in mawk*) ai='-W interactive' ;; esac
{
  t=$(getconf CLK_TCK 2>/dev/null || echo 100)
  echo "# perfkit-threads 1 mode=awk version=- rate_hz=$R interval_s=$I clk_tck=$t arch=$(uname -m)" \
    "busiest=3 refresh_s=10 watch=$(echo $W | tr ' ' ,)"
  a=$(probe); now
  sel=$(printf '%s\n' "$a" | awk -v watch="$W" -v me=$me -v busiest=0 -v stamp="$d" -v known= "$SEL")
  pick
  echo "B $d"
  i=0; every=$(( (10 + I - 1) / I ))
  while [ $i -lt $N ]; do
    j=0
    while [ $j -lt $((R * I)) ]; do
      for p in $pids; do printf 'T %s\n' /proc/$p/task/*; done; echo E
      sleep $P; j=$((j + 1))
    done
    now; echo "I $d"; i=$((i + 1))
    if [ $i -eq 1 ] && [ $i -lt $N ]; then  # the named anew, and the busiest over the first interval
      sel=$(printf '%s\n==\n%s\n' "$a" "$(probe)" |
        awk -v watch="$W" -v me=$me -v busiest=3 -v stamp="$d" -v known="$pids" -v ours="$(ours)" "$SEL")
      pick; a=
    elif [ $((i % every)) -eq 0 ] && [ $i -lt $N ]; then
      sel=$(probe | awk -v watch="$W" -v me=$me -v busiest=0 -v stamp="$d" -v known="$pids" "$SEL")
      pick
    fi
  done
} | awk $ai -v psi="$PSI" "$MAIN"
"""


def _sampler_python() -> str:
    """collectors/thread_sampler.py without its module docstring and comment lines (the host needs
    neither; the command and the manifest stay smaller). tests/test_threads_sampler.py checks the
    result's syntax tree is the module's."""
    text = (Path(__file__).with_name("thread_sampler.py")).read_text()
    doc = ast.parse(text).body[0]
    lines = text.splitlines()
    keep = lines[: doc.lineno - 1] + lines[doc.end_lineno :]
    return "\n".join(ln for ln in keep if not ln.lstrip().startswith("#")) + "\n"


def _threads_command() -> str:
    from . import thread_sampler

    python = _sampler_python()
    assert "PERFKIT_THREADS_EOF" not in python
    awk_mode = (
        _THREADS_AWK_MODE.replace("{", "{{")
        .replace("}", "}}")
        .replace("__W__", "{watch}")
        .replace("__I__", "{interval}")
        .replace("__N__", "{count}")
        .replace("__PSI__", "{workdir}/psi.out")
    )
    return (
        _PICK_PYTHON.replace("{", "{{").replace("}", "}}")
        + '\nif [ -n "$py" ]; then exec "$py" - --interval {interval} --count {count} '
        + f"--rate {thread_sampler.DEFAULT_RATE_HZ} --busiest {thread_sampler.BUSIEST} "
        + "--watch {watch} --psi {workdir}/psi.out <<'PERFKIT_THREADS_EOF'\n"
        + python.replace("{", "{{").replace("}", "}}")
        + "PERFKIT_THREADS_EOF\nfi\n"
        + awk_mode
    )


def _threads_version() -> str:
    from . import thread_sampler

    return (
        _PICK_PYTHON
        + '; if [ -n "$py" ]; then echo "thread sampler: $py $v, '
        + f'{thread_sampler.DEFAULT_RATE_HZ} samples/s"; '
        + 'else echo "thread sampler: awk (no Python 2.7+), 1 samples/s"; fi'
    )


THREADS: tuple[CaptureSpec, ...] = (
    # sampling from its first `# select` (the processes chosen) or, with none chosen, its first interval;
    # in awk mode mawk reads its input a block at a time, so these may come only at LEAD_WAIT_S
    CaptureSpec(
        "threads",
        "threads",
        _threads_command(),
        "sh",
        version=_threads_version(),
        sampling=(b"# select ", b"= "),
    ),
    # about 400 bytes an interval on the host
    CaptureSpec("psi", "psi", "cat {workdir}/psi.out", "cat", phase="end", host_bytes=(512, 0, 4096)),
)

DEFAULT: tuple[CaptureSpec, ...] = (
    CaptureSpec("vmstat", "vmstat", "vmstat -w -t {interval} {reports}", "vmstat", version="vmstat -V"),
    CaptureSpec("iostat", "iostat", "iostat -x -d -t {interval} {reports}", "iostat", version="iostat -V"),
    CaptureSpec("mpstat", "mpstat", "mpstat -P ALL {interval} {count}", "mpstat", version="mpstat -V"),
    CaptureSpec("pidstat", "pidstat", "pidstat -u -d -w {interval} {count}", "pidstat", version="pidstat -V"),
    # sa.bin grows by about 4.3 kB a sample on 2 CPUs here: budget 16 kB plus 1 kB per CPU.
    CaptureSpec(
        "sar",
        "sar",
        "sar -o {workdir}/sa.bin {interval} {count}",
        "sar",
        version="sar -V",
        host_bytes=(16 << 10, 1 << 10, 0),
    ),
    CaptureSpec(
        "top", "top", "top -b -H -w 512 -d {interval} -n {reports}", "top", version="top -V || top -v"
    ),
    CaptureSpec(
        "iotop",
        "iotop",
        "iotop -botqk -d {interval} -n {reports}",
        "iotop",
        needs_root=True,
        version=_IOTOP_VERSION,
    ),
    CaptureSpec("ss", "ss", _SS_LOOP, "ss", version="ss -V"),
    CaptureSpec("nstat", "netstat_s", _NSTAT_LOOP, "nstat", version="nstat -V"),
    CaptureSpec("ps-start", "ps", "ps auxww", "ps", phase="start", version="ps -V"),
    CaptureSpec("sysctl", "sysctl", f"sysctl {_SYSCTL_KEYS}", "sysctl", phase="start"),
    CaptureSpec("numactl", "numactl", "numactl --hardware", "numactl", phase="start"),
    CaptureSpec("numastat-start", "numastat", "numastat -c", "numastat", phase="start"),
    # Each process's allowed CPUs (taskset/numactl/cpuset), to hold against where its memory is.
    # One grep over every /proc/PID/status: 0.1 ms a process here, where a sh `read` loop costs 4x
    # (dash reads one byte per syscall). Exit 2 is a process that exited after the glob (-s hides it).
    CaptureSpec(
        "affinity",
        "affinity",
        "grep -s -H -e '^Name:' -e '^Cpus_allowed_list:' /proc/[0-9]*/status || [ $? -eq 2 ]",
        "grep",
        phase="start",
        version="grep -V",
    ),
    # Per-node memory of the 10 largest processes by RSS (the database, the load generator): reading
    # numa_maps walks a process's mappings under its mmap lock (a large buffer pool's page faults
    # wait meanwhile), so only those that matter, once, after the window, when the load is over and
    # its memory is placed. One numastat per process: with several pids, one that exits between `ps`
    # and numastat's read (or one it may not read) fails them all.
    CaptureSpec(
        "numastat-procs",
        "numastat",
        "for p in $(ps -eo pid= --sort=-rss | head -n 10); do "
        'numastat -p "$p" || echo "numastat -p $p failed: the process exited or is not readable" >&2; '
        "done",
        "numastat",
        phase="end",
    ),
    CaptureSpec("df", "df", "df -P -k", "df", phase="start"),
    CaptureSpec("uptime", "uptime", "uptime", "uptime", phase="start"),
    CaptureSpec("nproc", "nproc", "nproc", "nproc", phase="start"),
    CaptureSpec("uname", "uname", "uname -a", "uname", phase="start"),
    CaptureSpec("ps-end", "ps", "ps auxww", "ps", phase="end"),
    CaptureSpec("numastat-end", "numastat", "numastat -c", "numastat", phase="end"),
    CaptureSpec("sar-cpu", "sadf", "sadf -d {workdir}/sa.bin -- -P ALL", "sadf", phase="end"),
    CaptureSpec("sar-net", "sadf", "sadf -d {workdir}/sa.bin -- -n DEV", "sadf", phase="end"),
    CaptureSpec("sar-tcp", "sadf", "sadf -d {workdir}/sa.bin -- -n TCP,ETCP", "sadf", phase="end"),
    CaptureSpec("sar-binary", "sa", "cat {workdir}/sa.bin", "cat", phase="end"),
    *CGROUP,
    *THREADS,
)

# Lighter set for a quick look: no per-thread top, no per-process tables.
MINIMAL: tuple[CaptureSpec, ...] = tuple(
    s
    for s in DEFAULT
    if s.id
    in (
        "vmstat",
        "iostat",
        "mpstat",
        "ss",
        "nstat",
        "sysctl",
        "nproc",
        "uname",
        "df",
        "cgroup-start",
        "cgroup-end",
        "threads",
        "psi",
    )
)

PROFILES: dict[str, tuple[CaptureSpec, ...]] = {"default": DEFAULT, "minimal": MINIMAL}

# `perf script` text → folded stacks (`comm;root;...;leaf count`), in POSIX awk so it runs on any
# host's own awk (mawk on Debian). A frame without a symbol is named by its DSO, e.g. [libcrypto.so.3].
_FOLD = r"""
function emit(   s, i) { if (n) { s = comm; for (i = n; i >= 1; i--) s = s ";" st[i]; count[s]++ } n = 0 }
/^[^ \t]/ { emit(); comm = $1; next }
/^[ \t]+[0-9a-f]+ / {
  sym = $2; for (i = 3; i < NF; i++) sym = sym " " $i
  if (NF == 2) sym = $2
  sub(/\+0x[0-9a-f]+$/, "", sym)
  if (sym == "[unknown]" && NF >= 3) {
    dso = $NF; gsub(/[()]/, "", dso); sub(/.*\//, "", dso); if (dso != "[unknown]") sym = "[" dso "]"
  }
  gsub(/;/, ":", sym); st[++n] = sym; next
}
/^[ \t]*$/ { emit() }
END { emit(); for (k in count) print k, count[k] }
"""
# perf.data stays on the host (it is folded there): bounded, so a busy process cannot fill the disk
PERF_MAX_MB = 512


def perf_specs(process: str) -> tuple[CaptureSpec, CaptureSpec]:
    """`perf record -F 99 -g` on the oldest process named `process` for the window, then its stacks
    folded on the host (perf.data needs the host's binaries and symbols: it is never shipped)."""
    if not _NAME.match(process):
        raise ValueError(f"invalid process name {process!r}: letters, digits and . _ : + - only")
    name = shlex.quote(process)
    record = CaptureSpec(
        "perf-record",
        "perf_record",
        f"if ! pid=$(pgrep -o -x {name}); then echo 'no process named '{name} >&2; exit 3; fi; "
        f'perf record -F 99 -g --max-size={PERF_MAX_MB}M -p "$pid" -o {{workdir}}/perf.data '
        "-- sleep {window} 2>&1",
        "perf",
        version="perf --version",
        intrusive=True,
        host_bytes=(0, 0, PERF_MAX_MB << 20),
    )
    folded = CaptureSpec(
        "perf-folded",
        "folded",
        "perf script -i {workdir}/perf.data 2>/dev/null | awk "
        + shlex.quote(_FOLD).replace("{", "{{").replace("}", "}}"),
        "perf",
        phase="end",
        intrusive=True,
    )
    return record, folded


def iftop_spec(interface: str) -> CaptureSpec:
    """iftop on one interface for the window (it waits forever for a packet: the window's timeout ends it)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,15}", interface):
        raise ValueError(f"invalid interface name {interface!r}")
    return CaptureSpec(
        "iftop",
        "iftop",
        f"iftop -t -s {{window}} -n -N -B -i {shlex.quote(interface)}",
        "iftop",
        needs_root=True,
        intrusive=True,
        version="iftop -h 2>&1 | head -n 1",
    )


def profile(name: str) -> tuple[CaptureSpec, ...]:
    """The captures of a named profile; KeyError names the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None

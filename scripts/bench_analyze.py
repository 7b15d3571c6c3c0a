#!/usr/bin/env python3
"""Benchmark `perfkit analyze --jobs` (issue 19): wall time, the process tree's peak RSS, report size.

Builds two `perfkit collect` archives from scripts/bench_rules.py's archive (the vmstat, iostat,
mpstat, pidstat, top -H, iotop and ss captures of scripts/bench_parsers.py's generators, plus nproc,
sysctl and df), one copy per host: 4 hosts x 3 h and 1 host x 24 h. Then runs `perfkit analyze
ARCHIVE -o OUT` as a whole process, with `--jobs 1` and with the default (the CPUs), alternating,
the fastest of `--repeat` runs kept, and records:

- wall time of the whole command (imports, parse, rules, reports);
- peak memory of the whole process tree: psutil samples the command and every process under it
  (perfkit's parse workers) every 50 ms and sums their PSS (a page shared by k processes counts 1/k
  in each: the tree's own memory, what the target is judged on) and their RSS (a shared page counted
  once per process, the Python binary and libraries mapped in each worker: an upper bound); both
  with the results a worker handed over and the parent has mapped but not touched yet, which RSS
  leaves out (the memfd's pages exist all the same);
- the size of report.html and of the whole output directory.

Acceptance (issue 19): default jobs wall time <= 0.6x the `--jobs 1` time on this 2-vCPU machine, tree
peak PSS not above the `--jobs 1` run, on both archives.

`--transfer` measures instead how a parsed frame gets back from a worker (the choice behind
perfkit/_workers.py): a real top -H frame of `--transfer-hours` (default 3 h), sent by each method
from a forked child to its parent, timed from the child's first byte of serialising to the parent
holding the frame, with the memory each side needs beyond the frame itself.

    python scripts/bench_analyze.py                            # print the Markdown section
    python scripts/bench_analyze.py --out docs/benchmarks.md   # also write it there
    python scripts/bench_analyze.py --hours 0.5 --big-hours 0.5 --repeat 1   # a quick check
    python scripts/bench_analyze.py --transfer
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_rules  # noqa: E402
from bench_parse import write_bytecode, write_section  # noqa: E402
from bench_parsers import KINDS, code_version, machine  # noqa: E402

SECTION = "analyze: parallel parse (--jobs)"
TRANSFER_SECTION = "analyze: a frame from a worker to the parent"
ROOT = Path(__file__).resolve().parent.parent
SAMPLE_S = 0.05


def build(root: Path, hosts: int, hours: float, seed: int) -> int:
    """An archive of `hosts` hosts (db1, db2, …), each bench_rules' one-host archive with its own seed;
    returns the number of lines generated."""
    records, lines = [], 0
    (root / "hosts").mkdir(parents=True)
    for i in range(hosts):
        name, part = f"db{i + 1}", root.parent / f"part-{i}"
        lines += sum(bench_rules.build(part, hours, seed + i).values())
        (part / "hosts" / "db1").rename(root / "hosts" / name)
        for rec in json.loads((part / "manifest.json").read_text())["captures"]:
            path = rec["path"].replace("hosts/db1/", f"hosts/{name}/", 1)
            records.append({**rec, "id": f"{name}-{rec['id']}", "host": name, "path": path})
        shutil.rmtree(part)
    manifest = {
        "format_version": 1,
        "perfkit_version": "bench",
        "run_id": "bench-analyze",
        "captures": records,
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return lines


def _unseen_results(p) -> int:
    """Bytes of a process's mapped worker results (perfkit/_workers.py: memfds) that RSS does not
    count: a mapped page counts once the process touches it, yet the worker wrote every page of it."""
    return sum(m.size - m.rss for m in p.memory_maps(grouped=True) if "perfkit-result" in m.path)


def timed(archive: Path, out: Path, jobs: int | None) -> float:
    """`perfkit analyze`'s wall time as a whole process, nothing else running: the sampler of
    `measure` reads each process's smaps twice every 50 ms, and on two CPUs that is taken from the
    parallel run's workers (it made the default's 4-host run 2-4 s slower; `--jobs 1` leaves a CPU
    idle for it)."""
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.run(_command(archive, out, jobs), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 3, 4):  # 3/4: findings/incomplete exits are results, not failures
        raise SystemExit(f"perfkit analyze failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return wall


def _command(archive: Path, out: Path, jobs: int | None) -> list[str]:
    cmd = [
        sys.executable,
        "-c",
        "from perfkit.cli import main; main()",
        "analyze",
        str(archive),
        "-o",
        str(out),
    ]
    return cmd + (["--jobs", str(jobs)] if jobs else [])


def measure(archive: Path, out: Path, jobs: int | None) -> dict:
    """`perfkit analyze` as a whole process, sampled: the tree's peak RSS (sum over the command and
    its descendants), the parent's own, the workers seen, the report's size. Its wall time is
    `timed`'s."""
    import psutil

    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.Popen(_command(archive, out, jobs), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    top = psutil.Process(proc.pid)
    peak_tree = peak_main = peak_pss = 0
    pids: set[int] = set()
    while proc.poll() is None:
        try:
            procs = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        total = pss = 0
        for p in procs:
            try:
                mem = p.memory_full_info()  # rss and pss (a shared page divided among its sharers)
                unseen = _unseen_results(p)
            except psutil.NoSuchProcess:
                continue
            rss = mem.rss + unseen
            total += rss
            pss += mem.pss + unseen
            if p.pid == proc.pid:
                peak_main = max(peak_main, rss)
            else:
                pids.add(p.pid)
        peak_tree = max(peak_tree, total)
        peak_pss = max(peak_pss, pss)
        time.sleep(SAMPLE_S)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.wait() not in (0, 3, 4):
        raise SystemExit(f"perfkit analyze failed ({proc.returncode}): {err[-2000:]}")
    html = out / "report.html"
    return {
        "peak_tree_mb": peak_tree / 2**20,
        "peak_pss_mb": peak_pss / 2**20,
        "peak_main_mb": peak_main / 2**20,
        "workers": len(pids),
        "report_kb": html.stat().st_size / 1024,
        "outdir_kb": sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1024,
    }


def bench_archive(hosts: int, hours: float, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="perfkit-bench-analyze-") as tmp:
        root = Path(tmp) / "archive"
        lines = build(root, hosts, hours, args.seed)
        size_mb = sum(p.stat().st_size for p in root.rglob("*.out")) / 2**20
        files = sum(1 for _ in root.rglob("*.out"))
        sides = (("1", 1), ("default", args.jobs))
        walls: dict[str, list[float]] = {"1": [], "default": []}
        runs: dict[str, list[dict]] = {"1": [], "default": []}
        for _ in range(args.repeat):  # alternated, so that a slower spell of the VM hits both sides
            for label, jobs in sides:
                walls[label].append(timed(root, Path(tmp) / f"out-{label}", jobs))
        for _ in range(args.repeat):
            for label, jobs in sides:
                runs[label].append(measure(root, Path(tmp) / f"out-{label}", jobs))
    best = {}
    for k, v in runs.items():  # the peak over every run: a lucky sample must not hide one
        peaks = {m: max(r[m] for r in v) for m in ("peak_tree_mb", "peak_pss_mb", "peak_main_mb")}
        best[k] = {**v[0], **peaks, "wall_s": min(walls[k]), "walls": walls[k]}
    return {"hosts": hosts, "hours": hours, "lines": lines, "mb": size_mb, "files": files, **best}


def section(results: list[dict], args: argparse.Namespace, wall_s: float) -> str:
    rows = []
    verdicts = []
    for r in results:
        one, dflt = r["1"], r["default"]
        ratio = dflt["wall_s"] / one["wall_s"]
        mem_ok = dflt["peak_pss_mb"] <= one["peak_pss_mb"]
        what = f"{r['hosts']} host{'s' if r['hosts'] > 1 else ''} × {r['hours']:g} h"
        par = f"--jobs {args.jobs}" if args.jobs else "default"
        for label, m in (("--jobs 1", one), (par, dflt)):
            rows.append(
                f"| {what} ({r['files']} files, {r['mb']:,.0f} MB) | {label} | {m['wall_s']:.1f} | "
                f"{m['peak_pss_mb']:,.0f} | {m['peak_tree_mb']:,.0f} | {m['peak_main_mb']:,.0f} | "
                f"{m['workers']} | "
                f"{m['report_kb']:,.0f} | {m['outdir_kb']:,.0f} |"
            )
        spread = "; ".join(
            f"{label} " + ", ".join(f"{w:.1f}" for w in m["walls"])
            for label, m in (("--jobs 1", one), (par, dflt))
        )
        verdicts.append(
            f"- {what} (runs, s: {spread}): {par} / `--jobs 1` wall time {ratio:.2f} (target ≤ 0.6: "
            f"**{'met' if ratio <= 0.6 else 'missed'}**); tree peak PSS {dflt['peak_pss_mb']:,.0f} vs "
            f"{one['peak_pss_mb']:,.0f} MB (target not above: **{'met' if mem_ok else 'missed'}**)."
        )
    compared = f"`--jobs {args.jobs}`" if args.jobs else "the default (the CPUs)"
    cmd = "python scripts/bench_analyze.py"
    if args.hours != 3 or args.big_hours != 24 or args.hosts != 4:
        cmd += f" --hosts {args.hosts} --hours {args.hours:g} --big-hours {args.big_hours:g}"
    cmd += f" --repeat {args.repeat}" if args.repeat != 2 else ""
    cmd += f" --jobs {args.jobs}" if args.jobs else ""
    return "\n".join(
        [
            f"## {SECTION}",
            "",
            "`perfkit analyze ARCHIVE -o OUT` run as a whole process with `--jobs 1` (every capture parsed "
            f"in the one process) and with {compared} "
            "(perfkit/_workers.py: N-1 worker processes beside the parent), alternating, "
            f"fastest of {args.repeat} kept, timed with nothing else running; then {args.repeat} runs of "
            "each sampled for memory (the sampler reads each process's smaps: on two CPUs it slows the "
            "parallel run by seconds, so no wall time comes from a sampled run). perfkit's bytecode is "
            "written first, as installing it does. Archives: scripts/bench_rules.py's one-host archive "
            "(vmstat, iostat, mpstat, pidstat, top -H, iotop, the ss loop at 1 s, plus nproc, sysctl, df) "
            "once per host. Tree peak PSS / RSS: the sum over the command and every process under it, "
            "sampled every 50 ms with psutil, the highest over all runs. PSS divides a page shared by k "
            "processes (the interpreter and libraries each worker maps) among them: the tree's own "
            "memory, which the target is judged on; the RSS sum counts such a page once per process "
            "(an upper bound). Both count the results a worker handed over in shared memory that the "
            "parent has mapped but not yet touched (RSS leaves such pages out; they exist all the same). "
            "Parent: the `perfkit` process's own RSS, with those pages.",
            "",
            "| archive | jobs | wall s | tree peak PSS MB | tree peak RSS MB | parent peak RSS MB | workers "
            "| report.html KB | output dir KB |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            *verdicts,
            "",
            f"Command: `{cmd}` (ran {wall_s:.0f} s)  ",
            f"Machine: {machine()}  ",
            f"Code: {code_version()}  ",
            f"Date: {time.strftime('%Y-%m-%d')}",
            "",
        ]
    )


# ---------------------------------------------------------------------------------------------------
# --transfer: how a frame gets from a worker to the parent

TRANSFER = r"""
import json, os, pickle, socket, sys, tempfile, time
from multiprocessing.connection import Connection
method, path, kind = sys.argv[1:4]

def rss_kb(field="VmRSS:"):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))

a, b = socket.socketpair()
pid = os.fork()  # before pandas is imported: parent and child share nothing but the interpreter
if pid == 0:
    a.close()
    conn = Connection(b.detach())
    import pandas as pd
    from perfkit import parsers
    from perfkit._workers import send_result
    from perfkit.parsers._common import ParseContext
    df = parsers.parse(kind, path, ParseContext("h", "UTC", pd.Timestamp("2026-11-22T08:00:00Z")))
    frame_bytes = df.memory_usage(deep=True).sum()  # seconds of its own for string columns: not timed
    before = rss_kb()
    conn.send(("start", time.time(), frame_bytes))
    if method == "pickle in-band":
        conn.send(df)  # what multiprocessing's queues and ProcessPoolExecutor do
    elif method == "pickle 5 out-of-band, shared memory":
        send_result(conn, 0, df)
    elif method == "pickle 5 out-of-band, socket":  # perfkit's before 2026-11-28: each array written
        buffers = []
        head = pickle.dumps(df, protocol=5, buffer_callback=buffers.append)
        views = [x.raw() for x in buffers]
        conn.send((head, [v.nbytes for v in views]))
        for v in views:
            while v.nbytes:
                v = v[os.write(conn.fileno(), v):]
    elif method == "Arrow IPC":
        import pyarrow as pa
        table = pa.Table.from_pandas(df)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        del table
        conn.send_bytes(sink.getvalue())
    elif method == "Parquet temp file":
        tmp = tempfile.mktemp(suffix=".parquet")
        df.to_parquet(tmp, compression=None)
        conn.send(tmp)
    conn.send(("child", rss_kb("VmHWM:") - before))
    os._exit(0)
b.close()
conn = Connection(a.detach())
import pandas as pd
import pyarrow as pa
from perfkit._workers import receive_result
_, t0, frame_bytes = conn.recv()
before = rss_kb()
cpu0 = time.process_time()
if method == "pickle in-band":
    df = conn.recv()
elif method == "pickle 5 out-of-band, shared memory":
    _, df = receive_result(conn)
elif method == "pickle 5 out-of-band, socket":  # read into a bytearray of each array's size
    head, sizes = conn.recv()
    bufs = []
    for n in sizes:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = os.readv(conn.fileno(), [view[got:]])
            if not k:
                raise EOFError("the worker died")
            got += k
        bufs.append(buf)
    df = pickle.loads(head, buffers=bufs)
elif method == "Arrow IPC":
    data = conn.recv_bytes()
    df = pa.ipc.open_stream(data).read_all().to_pandas()
    del data
elif method == "Parquet temp file":
    tmp = conn.recv()
    df = pd.read_parquet(tmp)
    os.unlink(tmp)
seconds = time.time() - t0
parent_cpu = time.process_time() - cpu0  # the parent's own share: the serial part of `analyze`
# a byte of every page of every array read: a mapped page counts in RSS once touched, as the rules do
# (the callback's false value keeps each buffer out of band: nothing copied)
pickle.dumps(df, protocol=5, buffer_callback=lambda b: (b.raw()[::4096].tobytes(), False)[1])
parent_extra = rss_kb("VmHWM:") - before
_, child_extra = conn.recv()
os.waitpid(pid, 0)
print(json.dumps({"seconds": seconds, "parent_cpu_s": parent_cpu,
                  "frame_mb": frame_bytes / 2**20, "parent_extra_mb": parent_extra / 1024,
                  "child_extra_mb": child_extra / 1024, "attrs": sorted(df.attrs), "rows": len(df)}))
"""
METHODS = (
    "pickle in-band",
    "pickle 5 out-of-band, socket",
    "pickle 5 out-of-band, shared memory",
    "Arrow IPC",
    "Parquet temp file",
)


def transfer(args: argparse.Namespace) -> str:
    kind = next(k for k in KINDS if k.name == "top")
    with tempfile.TemporaryDirectory(prefix="perfkit-bench-transfer-") as tmp:
        path = Path(tmp) / "top.out"
        kind.generate(path, args.transfer_hours, np.random.default_rng(args.seed))
        results = {}
        for method in METHODS:
            runs = []
            for _ in range(args.repeat):
                out = subprocess.run(
                    [sys.executable, "-c", TRANSFER, method, str(path), "top"],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=ROOT,
                )
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            results[method] = min(runs, key=lambda r: r["seconds"])
    frame_mb = next(iter(results.values()))["frame_mb"]
    lines = [
        f"## {TRANSFER_SECTION}",
        "",
        f"Transfer of one parsed frame from a worker to the parent (top -H, {args.transfer_hours:g} h, "
        f"{frame_mb:,.0f} MB in memory; `--transfer`, fastest of {args.repeat}): extra memory is the peak "
        "RSS above each side's RSS just before the transfer (the frame itself is already counted on the "
        "worker's side; on the parent's side a frame's worth is the least any method can need).",
        "",
        "| method | seconds | parent CPU s | parent extra MB | worker extra MB | attrs kept |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for method, r in results.items():
        kept = "yes" if r["attrs"] else "no"
        lines.append(
            f"| {method} | {r['seconds']:.2f} | {r['parent_cpu_s']:.2f} | {r['parent_extra_mb']:,.0f} | "
            f"{r['child_extra_mb']:,.0f} | {kept} |"
        )
    cmd = "python scripts/bench_analyze.py --transfer" + (
        f" --repeat {args.repeat}" if args.repeat != 2 else ""
    )
    lines += [
        "",
        "Chosen: pickle 5 out-of-band, shared memory (perfkit/_workers.py): the worker writes each array "
        "once into a memfd (`pwrite`: since 2026-11-28; a copy through a mapping took a fault per page, "
        "0.15 s, and held the pages in the worker's RSS, 134 MB extra), the parent maps it, so the "
        "parent, whose time is the serial part of `analyze`, "
        "copies nothing and faults in no fresh pages. Through the socket, the parent allocated and read "
        "into a bytearray per array. In-band pickle (multiprocessing's queues, ProcessPoolExecutor) builds "
        "the whole pickle beside the frame on both sides; Arrow IPC and Parquet convert the frame to Arrow "
        "and back (pandas keeps `attrs` in their schema metadata, as JSON).",
        "",
        f"Command: `{cmd}`  ",
        f"Machine: {machine()}  ",
        f"Code: {code_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d')}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=4, help="hosts of the first archive (default 4)")
    ap.add_argument("--hours", type=float, default=3.0, help="their capture span (default 3)")
    ap.add_argument("--big-hours", type=float, default=24.0, help="span of the one-host archive (default 24)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each; the fastest is kept (default 2)")
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument(
        "--jobs",
        type=int,
        help="--jobs of the parallel run (default: none, perfkit's own default, which parses in one "
        "process below 256 MB: small check runs need --jobs 2)",
    )
    ap.add_argument("--transfer", action="store_true", help="measure the frame transfer methods instead")
    ap.add_argument("--transfer-hours", type=float, default=3.0, help="span of the --transfer frame")
    ap.add_argument("--out", type=Path, help="write/replace this benchmark's section of this file")
    args = ap.parse_args(argv)
    started = time.monotonic()
    if args.transfer:
        text, title = transfer(args), TRANSFER_SECTION
    else:
        if not (os.cpu_count() or 1) > 1:
            print("warning: one CPU: the default jobs is 1 here", file=sys.stderr)
        write_bytecode()
        results = [bench_archive(args.hosts, args.hours, args), bench_archive(1, args.big_hours, args)]
        text, title = section(results, args, time.monotonic() - started), SECTION
    print(text)
    if args.out:  # the section of this run's kind only: the other stays as it was
        write_section(args.out, text, title=title)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark the iostat parser on a day-long capture: time and peak memory against a plain split loop.

Generates a 24 h x 1 s, 16-device `LC_ALL=C S_TIME_FORMAT=ISO iostat -x -d -t 1` capture in the
sysstat 12.6 layout (seeded RNG, ~1.7 M lines), then runs each contender in a fresh interpreter so
that its peak RSS (VmHWM, i.e. `ru_maxrss` without the parent's high-water mark) is its own; the
split loop and perfkit runs alternate, and the fastest of `--repeat` runs is kept:

- `split loop`: `for line in f: line.split()`, the floor any line-oriented parser pays;
- `perfkit`: `perfkit.parsers.iostat.parse(path)`;
- `jc`: `jc.parsers.iostat.parse(text, quiet=True)` (needs the whole text; on a slice of the file,
  extrapolated linearly, when the full file would take too long);
- `baseline`: the interpreter with pandas imported, doing nothing (RSS floor).

    python scripts/bench_parse.py                       # print the Markdown table
    python scripts/bench_parse.py --out docs/benchmarks.md   # also write the "iostat parser" section

Acceptance (docs/benchmarks.md): perfkit <= 2.5x the split loop's time, and peak RSS <= baseline +
3x the frame's `memory_usage(deep=True)`.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

HEADER = (
    "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm "
    "w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util"
)
# sysstat prints "%-13s" then " %*.2f" per value: right-aligned under the header, always a space apart
_ENDS = [m.end() for m in re.finditer(r"\S+", HEADER)]
ROW_FMT = "%-13s" + "".join(
    f" %{end - prev - 1}.2f" for prev, end in zip([13, *_ENDS[1:-1]], _ENDS[1:], strict=True)
)

# Peak RSS of the contender's own process: VmHWM. (`ru_maxrss` would do, but Linux carries the
# parent's high-water mark across fork+exec into it, so small contenders would show this script's RSS.)
PEAK = """
import resource
def peak_kb():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

RUNNERS = {
    "baseline": """
import pandas, json
print(json.dumps({"seconds": 0.0, "rows": 0, "frame_mb": 0.0, "maxrss_kb": peak_kb()}))
""",
    "split": """
import sys, time, json
path = sys.argv[1]
t0 = time.perf_counter()
n = 0
with open(path) as f:
    for line in f:
        line.split()
        n += 1
sec = time.perf_counter() - t0
print(json.dumps({"seconds": sec, "rows": n, "frame_mb": 0.0, "maxrss_kb": peak_kb()}))
""",
    "perfkit": """
import sys, time, json
import pandas
from perfkit.parsers import iostat
path = sys.argv[1]
t0 = time.perf_counter()
df = iostat.parse(path)
sec = time.perf_counter() - t0
print(json.dumps({"seconds": sec, "rows": len(df),
                  "frame_mb": df.memory_usage(deep=True).sum() / 2**20, "maxrss_kb": peak_kb()}))
""",
    "jc": """
import sys, time, json
import jc.parsers.iostat
path, limit = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    text = "".join(line for _, line in zip(range(limit), f)) if limit else f.read()
t0 = time.perf_counter()
out = jc.parsers.iostat.parse(text, quiet=True)
sec = time.perf_counter() - t0
print(json.dumps({"seconds": sec, "rows": len(out), "frame_mb": 0.0, "maxrss_kb": peak_kb()}))
""",
}


def generate(path: Path, hours: float, devices: int, seed: int = 20261122) -> int:
    """Write the synthetic capture; returns its number of lines."""
    rng = np.random.default_rng(seed)
    half = devices // 2
    names = [f"nvme{i}n1" for i in range(half)] + [f"sd{chr(ord('a') + i)}" for i in range(devices - half)]
    reports = int(hours * 3600)
    start = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    lines = 2
    block = 3600  # reports generated per numpy batch
    with open(path, "w") as f:
        f.write("Linux 6.1.0-26-amd64 (bench) \t2026-11-22 \t_x86_64_\t(16 CPU)\n\n")
        for first in range(0, reports, block):
            count = min(block, reports - first)
            r = rng.gamma(2.0, 150.0, (count, devices))
            w = rng.gamma(2.0, 400.0, (count, devices))
            d = rng.gamma(1.0, 5.0, (count, devices))
            fl = rng.gamma(1.0, 50.0, (count, devices))
            rsz = rng.choice([4.0, 8.0, 16.0, 64.0, 128.0], (count, devices))
            wsz = rng.choice([4.0, 4.0, 8.0, 16.0, 32.0], (count, devices))
            ra = rng.gamma(2.0, 0.2, (count, devices))
            wa = rng.gamma(2.0, 0.5, (count, devices))
            util = np.minimum(100.0, (r + w) * 0.02)
            out = []
            for k in range(count):
                stamp = (start + dt.timedelta(seconds=first + k)).strftime("%Y-%m-%dT%H:%M:%S+0000")
                out.append(stamp)
                out.append(HEADER)
                for j, name in enumerate(names):
                    rr, ww = r[k, j], w[k, j]
                    out.append(
                        ROW_FMT
                        % (
                            name,
                            rr,
                            rr * rsz[k, j],
                            rr * 0.1,
                            9.09,
                            ra[k, j],
                            rsz[k, j],
                            ww,
                            ww * wsz[k, j],
                            ww * 0.2,
                            16.67,
                            wa[k, j],
                            wsz[k, j],
                            d[k, j],
                            d[k, j] * 64,
                            0.0,
                            0.0,
                            0.1,
                            64.0,
                            fl[k, j],
                            0.05,
                            (rr * ra[k, j] + ww * wa[k, j]) / 1000,
                            util[k, j],
                        )
                    )
                out.append("")
                out.append("")
            f.write("\n".join(out) + "\n")
            lines += len(out)
    return lines


def run(name: str, path: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PEAK + RUNNERS[name], str(path), *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> str:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = subprocess.run(["free", "-g"], capture_output=True, text=True, check=False).stdout.split("\n")[1]
    import pandas

    return (
        f"{os.cpu_count()} CPUs (`nproc`: {len(os.sched_getaffinity(0))}), {cpu}, "
        f"`free -g` Mem total {mem.split()[1]} GiB; Python {platform.python_version()}, "
        f"pandas {pandas.__version__}, numpy {np.__version__}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--jc-fraction", type=float, default=0.1, help="share of the file given to jc (1 = all)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender; the fastest is kept")
    ap.add_argument(
        "--out", type=Path, help="write/replace the 'iostat parser' section of this Markdown file"
    )
    args = ap.parse_args()

    write_bytecode()
    with tempfile.TemporaryDirectory(prefix="perfkit-bench-") as tmp:
        path = Path(tmp) / "iostat-x-d-t.txt"
        nlines = generate(path, args.hours, args.devices)
        size_mb = path.stat().st_size / 2**20
        print(f"generated {path.name}: {nlines} lines, {size_mb:.0f} MiB", file=sys.stderr)

        base = run("baseline", path)
        runs: dict[str, list[dict]] = {"split": [], "perfkit": []}
        for _ in range(args.repeat):  # alternate, so drift on a shared machine hits both alike
            for name, results in runs.items():
                results.append(run(name, path))
        split, mine = (min(results, key=lambda r: r["seconds"]) for results in runs.values())
        for name, fastest in (("split", split), ("perfkit", mine)):
            fastest["maxrss_kb"] = max(r["maxrss_kb"] for r in runs[name])
        jc_lines = nlines if args.jc_fraction >= 1 else int(nlines * args.jc_fraction)
        jc = run("jc", path, str(0 if args.jc_fraction >= 1 else jc_lines))

    def row(label: str, lines: int, res: dict, scale: float = 1.0, note: str = "") -> str:
        sec = res["seconds"] * scale
        ratio = sec / split["seconds"]
        frame = f"{res['frame_mb']:.0f}" if res["frame_mb"] else "-"
        return (
            f"| {label} | {lines:,} | {sec:.2f}{note} | {lines / sec:,.0f} | {ratio:.2f} | "
            f"{res['maxrss_kb'] / 1024:.0f} | {frame} |"
        )

    jc_scale = nlines / jc_lines
    jc_note = "" if jc_scale == 1 else " (est.)"
    base_mb = base["maxrss_kb"] / 1024
    rss_budget = base_mb + 3 * mine["frame_mb"]
    table = "\n".join(
        [
            "| contender | lines | seconds | lines/s | × split loop | peak RSS MB | frame MB |",
            "|---|---:|---:|---:|---:|---:|---:|",
            row("plain `for line in f: line.split()`", nlines, split),
            row("perfkit `iostat.parse(path)`", nlines, mine),
            row(
                f"jc `iostat.parse(text)` on {jc_lines:,} lines × {jc_scale:.0f}",
                nlines,
                jc,
                jc_scale,
                jc_note,
            ),
            f"| interpreter + `import pandas` (baseline) | - | - | - | - | {base_mb:.0f} | - |",
        ]
    )
    ratio = mine["seconds"] / split["seconds"]
    medians = {name: statistics.median(r["seconds"] for r in results) for name, results in runs.items()}
    spread = "; ".join(
        f"{name}: " + ", ".join(f"{r['seconds']:.2f}" for r in results) for name, results in runs.items()
    )
    verdict = (
        f"perfkit: {ratio:.2f}× the split loop (target ≤ 2.5×: {'met' if ratio <= 2.5 else 'MISSED'}); "
        f"peak RSS {mine['maxrss_kb'] / 1024:.0f} MB vs budget baseline + 3 × frame = {rss_budget:.0f} MB "
        f"({'met' if mine['maxrss_kb'] / 1024 <= rss_budget else 'MISSED'}); {mine['rows']:,} rows."
    )
    jc_detail = (
        f"jc was given the first {jc_lines:,} lines ({args.jc_fraction:.0%}) and its time multiplied by "
        f"{jc_scale:.1f}; its RSS is for that slice only. jc returned {jc['rows']:,} records."
        if jc_scale != 1
        else f"jc returned {jc['rows']:,} records."
    )
    command = " ".join(["python scripts/bench_parse.py", *sys.argv[1:]])
    section = "\n".join(
        [
            "## iostat parser",
            "",
            f"Input: generated `LC_ALL=C S_TIME_FORMAT=ISO iostat -x -d -t 1` capture, sysstat 12.6 layout, "
            f"{args.hours:g} h × 1 s × {args.devices} devices, {nlines:,} lines, {size_mb:.0f} MiB "
            f"(seeded RNG). Each contender ran in a fresh interpreter; time is the parse only (imports "
            f"excluded), best of {args.repeat}; peak RSS is the VmHWM of that process.",
            "",
            table,
            "",
            verdict,
            "",
            f"All runs (s), in order — {spread}. Median ratio: {medians['perfkit'] / medians['split']:.2f}×.",
            "",
            jc_detail,
            "",
            f"Command: `{command}`  ",
            f"Machine: {machine()}  ",
            f"Date: {dt.date.today().isoformat()}",
            "",
        ]
    )
    print(section)
    if args.out:
        write_section(args.out, section)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def write_bytecode() -> None:
    """perfkit's bytecode written, as installing it does. Where PYTHONDONTWRITEBYTECODE is set (this
    lab), every fresh interpreter a benchmark starts would otherwise compile perfkit's modules: 0.2 s
    of `analyze`'s imports, and 5-7 MB of a parse's peak RSS (the compiler's memory, kept by malloc)."""
    for package in ("perfkit", "parsers", "analyzers", "collectors", "reports"):
        compileall.compile_dir(ROOT / package, quiet=1)


def write_section(path: Path, section: str, title: str = "iostat parser") -> None:
    """Replace the `## <title>` section of a Markdown file (or append it); other sections stay."""
    head = "# Benchmarks\n\n"
    text = path.read_text() if path.exists() else head
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


if __name__ == "__main__":
    sys.exit(main())

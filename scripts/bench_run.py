#!/usr/bin/env python3
"""Benchmark `perfkit run sysbench`: the adaptive search against the exhaustive sweep, and the sweep's
own overhead, on the lab MariaDB (scripts/lab.sh).

1. Exhaustive: `oltp_read_write` at 1, 2, 4, 8, 16, 32, 64 threads, `--time T` each.
2. Adaptive: `--adaptive --start-threads 1 --max-threads 64 --time T`.
Issue 4's targets: the adaptive peak lies within one step (a factor of 2) of the exhaustive peak,
using at most 60 % of its load time; overhead (wall time minus load, warm-ups and cool-downs) ≤ 5 %
of the wall time.

    python scripts/bench_run.py                          # T = 20 s (about 6 minutes)
    python scripts/bench_run.py --time 30 --out docs/benchmarks.md

Runs perfkit's CLI as a user would (PERFKIT_MYSQL_PASSWORD from the lab's 0600 config file, the
default capture profile on this machine) and reads each run's manifest.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = Path(os.environ.get("PERFKIT_LAB", "/var/lib/perfkit-lab"))
SECTION = "## run: adaptive search and sweep overhead"
EXHAUSTIVE = "1,2,4,8,16,32,64"


def run(args: list[str], out: Path, env: dict[str, str]) -> dict:
    cmd = [sys.executable, "-m", "perfkit"]
    cmd += ["run", "sysbench", "--mysql-user", "perfkit", *args]
    cmd += ["--tables", "2", "--table-size", "10000", "--no-report", "-o", str(out)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 3):
        raise SystemExit(f"perfkit run failed ({proc.returncode}): {proc.stderr[-1500:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    sweep = manifest["sweep"]
    ok = [s for s in sweep["steps"] if s["status"] in ("ok", "degraded") and s["tps"]]
    peak = max(ok, key=lambda s: s["tps"])
    return {
        "cli_wall_s": wall,
        "wall_s": sweep["wall_s"],
        "load_s": sweep["load_s"],
        "cooldown_s": sweep["cooldown_s"],
        "overhead_s": sweep["overhead_s"],
        "steps": [(s["threads"], s["time_s"], s["tps"], s["role"]) for s in sweep["steps"]],
        "peak": (peak["threads"], peak["tps"]),
        "stopped_because": sweep["stopped_because"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=20, help="seconds per full step (default 20)")
    ap.add_argument("--out", type=Path, help=f"write/replace the '{SECTION[3:]}' section of this file")
    ap.add_argument("--replay", type=Path, help="render from the JSON lines an earlier run wrote to stderr")
    args = ap.parse_args()
    if args.replay:
        full, adaptive = (json.loads(line) for line in args.replay.read_text().splitlines()[-2:])
    else:
        cfg = (LAB / "sb.cfg").read_text()
        env = {**os.environ, "PERFKIT_MYSQL_PASSWORD": re.search(r"mysql-password=(.*)", cfg).group(1)}
        base = Path(tempfile.mkdtemp(prefix="perfkit-bench-run-"))
        t = str(args.time)
        full = run(["--threads", EXHAUSTIVE, "--time", t], base / "exhaustive", env)
        print(json.dumps(full), file=sys.stderr)
        search = ["--adaptive", "--start-threads", "1", "--max-threads", "64", "--time", t]
        adaptive = run(search, base / "adaptive", env)
        print(json.dumps(adaptive), file=sys.stderr)
    section = render(args, full, adaptive)
    print(section)
    if args.out:
        text = args.out.read_text()
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
        if pattern.search(text):
            text = pattern.sub(lambda _: section + "\n", text)
        else:
            text = text.rstrip() + "\n\n" + section
        args.out.write_text(text.rstrip("\n") + "\n")
    return 0


def render(args: argparse.Namespace, full: dict, adaptive: dict) -> str:
    def steps(r: dict) -> str:
        parts = []
        for n, secs, tps, role in r["steps"]:
            parts.append(f"{n}×{secs}s {tps or 0:,.0f}" + (f" ({role})" if role != "step" else ""))
        return ", ".join(parts)

    within = abs(math.log2(adaptive["peak"][0]) - math.log2(full["peak"][0])) <= 1
    share = adaptive["load_s"] / full["load_s"]
    rows = []
    for name, r in (("exhaustive", full), ("adaptive", adaptive)):
        cli_over = r["cli_wall_s"] - r["load_s"] - r["cooldown_s"]
        rows.append(
            f"| {name} | {len(r['steps'])} | {r['peak'][0]} | {r['peak'][1]:,.1f} | {r['load_s']:.1f} | "
            f"{r['cooldown_s']:.1f} | {r['wall_s']:.1f} | {r['overhead_s']:.1f} | "
            f"{100 * r['overhead_s'] / r['wall_s']:.1f} % | {r['cli_wall_s']:.1f} | "
            f"{100 * cli_over / r['cli_wall_s']:.1f} % |"
        )
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return "\n".join(
        [
            SECTION,
            "",
            f"`oltp_read_write`, 2 tables × 10 000 rows, against the lab MariaDB on the same 2-vCPU VM; "
            f"full steps of {args.time} s, the default capture profile on this machine, the DB sampler on. "
            "Overhead = wall time minus load (incl. warm-ups) minus cool-downs. The sweep's own figure is "
            "from its manifest (`sweep.overhead_s`: the driver's wall time, so starting each step's "
            "captures before its load and their end-of-step snapshots after it); the command's adds the "
            "preflight, packing the archive and the interpreter's start (`--no-report`).",
            "",
            "| sweep | steps | peak threads | peak TPS | load s | cool-down s | sweep wall s | overhead s "
            "| overhead | command wall s | overhead (command) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"- Exhaustive steps (threads×time TPS): {steps(full)}.",
            f"- Adaptive steps: {steps(adaptive)}; stopped because {adaptive['stopped_because']}.",
            f"- Peak: adaptive {adaptive['peak'][0]} vs exhaustive {full['peak'][0]} threads "
            f"(target: within one step): **{'met' if within else 'missed'}**; load time "
            f"{100 * share:.0f} % of the exhaustive sweep's (target ≤ 60 %): "
            f"**{'met' if share <= 0.6 else 'missed'}**.",
            "- Overhead of the sweep (target ≤ 5 % of the wall time): "
            + "; ".join(
                f"{name} {100 * r['overhead_s'] / r['wall_s']:.1f} % "
                f"**{'met' if r['overhead_s'] / r['wall_s'] <= 0.05 else 'missed'}**"
                for name, r in (("exhaustive", full), ("adaptive", adaptive))
            )
            + ".",
            "",
            f"Command: `python scripts/bench_run.py --time {args.time} --out docs/benchmarks.md`  ",
            f"Machine: {os.cpu_count()} vCPUs, Linux {platform.release()}, "
            f"Python {platform.python_version()}  ",
            f"Code: {head.stdout.strip()}  ",
            f"Date: {dt.date.today().isoformat()}",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())

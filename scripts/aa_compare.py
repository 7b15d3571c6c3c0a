"""A/A runs for `perfkit compare`: how often two sweeps of the same configuration differ "significantly".

    PERFKIT_MYSQL_PASSWORD=... python3 -m scripts.aa_compare --pairs 10 --threads 1,4 --time 10
    PERFKIT_MYSQL_PASSWORD=... python3 -m scripts.aa_compare --pairs 10 --repeats 3 --threads 1,4 --time 10
    PERFKIT_MYSQL_PASSWORD=... python3 -m scripts.aa_compare --pairs 10 --sweep-repeats 3 --time 10

Runs `perfkit run sysbench` 2 × PAIRS × REPEATS times, one after another, against the lab MariaDB
(the same options each time). Each pair is two sides of REPEATS runs each, the sides' runs
alternating (A, B, A, B, …: a drift over the measurement falls on both sides alike); the sides are
compared with `analyzers.compare` at the default level and floor — with `--repeats 1` (the default)
one run a side, judged within each run's intervals; with 2 or more, as groups, judged on the spread
between the runs' means (what `perfkit compare base/ new/` does with directories of runs). It prints
per pair the steps' changes and whether any was called significant, then the rate of pairs with a
false alarm. With `--sweep-repeats N` each side is one sweep made with `perfkit run --repeat N` (each
step run N times in rounds): two sweeps of one configuration, judged between the runs of the load
tool inside each. The acceptance (issue 18): at most 1 pair of 10. Results go in docs/benchmarks.md by
hand, with the command and the machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from perfkit.analyzers import Analysis
from perfkit.analyzers.compare import MIN_CHANGE_PCT, Change, Group, compare
from perfkit.pipeline import analyze_path

PERFKIT = [sys.executable, "-m", "perfkit"]


def run(out: Path, args: argparse.Namespace) -> Path:
    argv = [
        *PERFKIT,
        "run",
        "sysbench",
        f"--mysql-user={args.user}",
        f"--workload={args.workload}",
        "--tables=2",
        "--table-size=10000",
        f"--threads={args.threads}",
        f"--time={args.time}",
        f"--repeat={args.sweep_repeats}",
        "--profile=minimal",
        "--no-report",
        "-o",
        str(out),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"perfkit run exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return out


def _cell(threads: int, ch: Change) -> str:
    if ch.ci_pct is None or ch.change_pct is None:
        return f"{threads}: {ch.sign}"
    return f"{threads}: {ch.change_pct:+.1f}% [{ch.ci_pct[0]:+.1f}, {ch.ci_pct[1]:+.1f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument(
        "--repeats", type=int, default=1, help="runs a side (2 or more: judged between runs, as groups)"
    )
    ap.add_argument(
        "--sweep-repeats", type=int, default=1, help="perfkit run --repeat: each step this many times a sweep"
    )
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--workload", default="oltp_read_only")
    ap.add_argument("--user", default="perfkit")
    ap.add_argument("--min-change", type=float, default=MIN_CHANGE_PCT)
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    alarms = 0
    with tempfile.TemporaryDirectory(prefix="perfkit-aa-") as tmp:
        for i in range(args.pairs):
            sides: dict[str, list[tuple[str, Analysis]]] = {"a": [], "b": []}
            for r in range(args.repeats):
                for side in ("a", "b"):  # alternating: A, B, A, B, ...
                    name = f"{side}{i}r{r}"
                    sides[side].append((name, analyze_path(run(Path(tmp) / name, args))))
            a, b = (
                Group(side, tuple(x[1] for x in runs), tuple(x[0] for x in runs))
                for side, runs in sides.items()
            )
            c = compare(a, b, min_change_pct=args.min_change)
            flagged = [s for s in c.steps if s.throughput.significant]
            alarms += bool(flagged)
            cells = ", ".join(_cell(s.threads, s.throughput) for s in c.steps)
            print(f"pair {i + 1} ({c.spread}): {cells}{' — SIGNIFICANT' if flagged else ''}", flush=True)
    print(
        f"{alarms} of {args.pairs} A/A pairs had a step called significant (floor {args.min_change:g}%, "
        f"{args.repeats} run{'s' if args.repeats > 1 else ''} a side, --repeat {args.sweep_repeats})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

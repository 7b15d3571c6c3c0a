"""CLI: `python3 -m scripts.scenarios list | run NAME -o DIR [...] | cleanup [--force]`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .cgroups import CgroupError
from .instance import InstanceError
from .lab import SCENARIOS, Interrupted, ScenarioError, cleanup, run_scenario, stop_signals

EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m scripts.scenarios", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the scenarios and what each induces")
    run = sub.add_parser("run", help="run one scenario into a new directory")
    run.add_argument("name", choices=sorted(SCENARIOS))
    run.add_argument("-o", "--output", type=Path, required=True, help="new (or empty) output directory")
    run.add_argument("--threads", default="1,4,16", help="perfkit --threads (default 1,4,16)")
    run.add_argument("--time", type=int, default=5, help="seconds per step (default 5)")
    run.add_argument("--workload", help="sysbench workload instead of the scenario's own")
    run.add_argument(
        "--quota", type=float, help="CPU quota in cores (db-cpu-quota 0.5, client-cpu-quota 0.25)"
    )
    run.add_argument("--iops", type=int, help="write IOPS limit (db-write-iops, default 40)")
    run.add_argument("--cgroup-version", type=int, choices=(1, 2), help="default: v1 where mounted, else v2")
    run.add_argument("--table-size", type=int, help="rows per table (default 10,000; hot-rows 4)")
    run.add_argument("--tables", type=int, default=1)
    run.add_argument("--profile", choices=("default", "minimal"), default="default")
    run.add_argument(
        "--no-analyze",
        action="store_true",
        help="leave out `perfkit analyze` (the caller analyzes the archive)",
    )
    clean = sub.add_parser(
        "cleanup", help="remove what an earlier crashed run left (instances, dirs, cgroups)"
    )
    clean.add_argument("--force", action="store_true", help="also runs whose harness still seems alive")
    args = ap.parse_args(argv)

    if args.command == "list":
        for s in SCENARIOS.values():
            print(f"{s.name:18} {s.workload:18} {s.induces}")
        return 0
    try:
        with stop_signals():
            if args.command == "cleanup":
                problems = cleanup(force=args.force)
                for p in problems:
                    print(f"scenarios: cleanup: {p}", file=sys.stderr)
                return 1 if problems else 0
            rec = run_scenario(
                args.name,
                args.output,
                threads=args.threads,
                time_s=args.time,
                workload=args.workload,
                quota=args.quota,
                iops=args.iops,
                cgroup_version=args.cgroup_version,
                tables=args.tables,
                table_size=args.table_size,
                profile=args.profile,
                analyze=not args.no_analyze,
            )
    except (KeyboardInterrupt, Interrupted) as exc:
        what = "SIGINT" if isinstance(exc, KeyboardInterrupt) else str(exc)
        restore = _restore_problems(getattr(args, "output", None))
        said = {None: "see scenario.json", (): "machine restored"}.get(
            None if restore is None else tuple(restore), f"restore problems: {restore}"
        )
        print(f"scenarios: interrupted by {what}; {said}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ScenarioError, InstanceError, CgroupError) as exc:
        print(f"scenarios: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary(rec), indent=1))
    return 1 if rec.get("restore") else 0


def _restore_problems(out: Path | None) -> list[str] | None:
    """scenario.json's `restore` (None when there is no record, e.g. an interrupted cleanup)."""
    try:
        return json.loads((out / "scenario.json").read_text())["restore"] if out else None
    except (OSError, ValueError, KeyError):
        return None


def summary(rec: dict) -> dict:
    """What the terminal shows: the limit, per step TPS and the measured figures, perfkit's verdict."""
    keep = (
        "threads",
        "status",
        "tps",
        "instance_cores",
        "group_cores",
        "throttled_share",
        "group_write_iops",
        "disk_write_iops",
    )
    return {
        "scenario": rec["scenario"],
        "limit": rec.get("limit"),
        "steps": [{k: s[k] for k in keep if k in s} for s in rec.get("steps", [])],
        "perfkit": rec.get("perfkit_analyze"),
        "restore": rec.get("restore"),
    }


if __name__ == "__main__":
    sys.exit(main())

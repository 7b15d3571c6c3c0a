"""Analyzers: one module per rule family, each exposing `RULES = {rule_id: function}`.

A rule is a pure function `(dataset, sweep, thresholds) -> list[Finding] | Skipped`. The sweep
model is built once (analyzers/sweep.py) because most rules and every report read it.
"""

from __future__ import annotations

import importlib
import pkgutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TypeVar

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import SEVERITIES, Finding, RuleFailure, Skipped

Rule = Callable[..., "list[Finding] | Skipped"]
T = TypeVar("T")

# Rules that point at a cause (a resource, a tier, the load itself) rank above the ones that
# describe the sweep's shape: the knee says *that* scaling stopped, these say *where*. Last come the
# ones that qualify the evidence rather than locate a bottleneck: perfkit's own weight on a host, and
# where the CPU time went inside a process (read beside a cause, never as the verdict).
SYMPTOM_RULES = ("sweep.knee", "sweep.retrograde", "sweep.unstable", "sweep.not-saturated")
CONTEXT_RULES = ("collector.overhead", "profile.hotspots")


def is_context(f: Finding) -> bool:
    """Whether a finding qualifies the evidence rather than locates a bottleneck: never the verdict.

    Beside CONTEXT_RULES: `io.top-writer` at info says who does the work (the database writing most
    of the bytes), which qualifies a disk finding but explains nothing on its own; and when its top
    writer is one of perfkit's own captures it is perfkit's weight on the host (collector.overhead's
    subject), however heavy.
    """
    if f.rule in CONTEXT_RULES:
        return True
    top_writer = f.rule == "io.top-writer"
    return top_writer and (f.severity == "info" or f.evidence.get("writer1_category") == "capture")


def capture_views() -> dict[str, tuple[Callable, ...]]:
    """kind -> the rules' per-capture steps (`Capture.view`), for `load_dataset(views=...)`: made
    where each capture is parsed, in parallel with `--jobs`, instead of in this process when the rules
    run. The ones worth it: which program and task each iotop/pidstat row is, which three rules ask
    for (0.9 s of 2.4 s of rules on 4 hosts x 3 h, docs/benchmarks.md); which rows each busy device of
    an iostat/diskstats capture has, which the two disk rules ask for (and innodb's redo rule)."""
    from .disk import device_rows
    from .io import task_keys

    return {
        "iotop": (task_keys,),
        "pidstat": (task_keys,),
        "iostat": (device_rows,),
        "diskstats": (device_rows,),
    }


@cache
def rules() -> dict[str, Rule]:
    """rule id -> function, from every public module of this package."""
    found: dict[str, Rule] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for rule_id, fn in getattr(mod, "RULES", {}).items():
            if rule_id in found:
                raise RuntimeError(f"rule {rule_id} defined twice")
            found[rule_id] = fn
    return found


@dataclass
class Analysis:
    """Everything the reports render: inputs, the sweep, findings (verdict first), skipped rules and
    the rules that failed (the analysis is incomplete when there are any)."""

    dataset: Dataset
    sweep: object | None
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[RuleFailure] = field(default_factory=list)
    excluded_steps: list = field(default_factory=list)  # sweep.Excluded: load runs left out of the model

    @property
    def complete(self) -> bool:
        return not self.failed

    @property
    def verdict(self) -> Finding | None:
        """The first finding (they are ranked), unless even that one is only context."""
        return self.findings[0] if self.findings and not is_context(self.findings[0]) else None

    def has_findings(self, at_least: str) -> bool:
        """Whether any finding is at least as severe as `at_least` ("critical" or "warning")."""
        limit = SEVERITIES.index(at_least)
        return any(SEVERITIES.index(f.severity) <= limit for f in self.findings)


def analyze(ds: Dataset, th: Thresholds) -> Analysis:
    """Run every rule on the dataset.

    Each rule runs on its own: one that raises becomes a `RuleFailure` and every other rule still
    runs, so one unforeseen input never costs the user the rest of the report. (Bugs are fixed where
    they are; this net only keeps the next one from hiding every other finding.)
    """
    from . import sweep as sweep_model  # the model module is also a rule family

    result = Analysis(dataset=ds, sweep=None)
    result.sweep, result.excluded_steps = attempt(
        result.failed, "sweep model", lambda: sweep_model.model(ds, th), (None, [])
    )
    sweep, sweep_failed = result.sweep, bool(result.failed)
    for rule_id, fn in sorted(rules().items()):
        out = attempt(result.failed, rule_id, lambda fn=fn: fn(ds, sweep, th), None)
        if out is None:
            continue
        if isinstance(out, Skipped):
            if sweep_failed and out.reason == sweep_model.NO_LOAD:  # the load was there; the model failed
                out = Skipped(out.rule, "the sweep model failed (see the failed rules)")
            result.skipped.append(out)
        else:
            result.findings.extend(out)
    result.findings.sort(key=_rank)
    return result


def attempt(failed: list[RuleFailure], what: str, fn: Callable[[], T], fallback: T) -> T:
    """`fn()`, or `fallback` with the exception recorded in `failed` as `what` failing: one rule,
    plot or table that raises costs the user that part, never the rest of the report."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - any bug: recorded and shown, see analyze()
        failed.append(RuleFailure(what, describe(exc)))
        return fallback


def describe(exc: BaseException) -> str:
    """`ZeroDivisionError: division by zero (analyzers/sweep.py:512)`: what and where, for a bug report."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" ({Path(last.filename).parent.name}/{Path(last.filename).name}:{last.lineno})"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}{': ' + message[:200] if message else ''}{where}"


# A limit found (a cgroup quota, an IO cap) is the most specific answer there is; then where the
# threads and sessions wait (wait.profile, db.*), which says *why* a resource is busy or idle; then the
# resources and tiers; then the sweep's shape; then context.
LIMIT_RULES = ("cpu.throttled", "io.throttled")


def _rank(f: Finding) -> tuple[int, int, str]:
    if is_context(f):
        tier = 4
    elif f.rule in SYMPTOM_RULES:
        tier = 3
    elif f.rule in LIMIT_RULES:
        tier = 0
    elif f.rule.startswith("db.") or (f.rule == "wait.profile" and f.evidence.get("dominant") != "net"):
        # the database's own account of its waits (db.*) says the same as its threads' states, with
        # the server's numbers: the two share a tier, severity first, db.* on a tie. A database
        # waiting on the network waits for its clients: that cause is upstream (next tier)
        tier = 1
    else:
        tier = 2
    return (tier, SEVERITIES.index(f.severity), f.rule)

"""Analyzers: one module per rule family, each exposing `RULES = {rule_id: function}`.

A rule is a pure function `(dataset, sweep, thresholds) -> list[Finding] | Skipped`. The sweep
model is built once (analyzers/sweep.py) because most rules and every report read it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from perfkit.config import Thresholds
from perfkit.dataset import Dataset
from perfkit.findings import SEVERITIES, Finding, Skipped

Rule = Callable[..., "list[Finding] | Skipped"]

# Rules that point at a cause (a resource, a tier, the load itself) rank above the ones that
# describe the sweep's shape: the knee says *that* scaling stopped, these say *where*. Last come the
# ones that qualify the evidence rather than locate a bottleneck: perfkit's own weight on a host, and
# where the CPU time went inside a process (read beside a cause, never as the verdict).
SYMPTOM_RULES = ("sweep.knee", "sweep.retrograde", "sweep.unstable", "sweep.not-saturated")
CONTEXT_RULES = ("collector.overhead", "profile.hotspots")


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
    """Everything the reports render: inputs, the sweep, findings (verdict first) and skipped rules."""

    dataset: Dataset
    sweep: object | None
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def verdict(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def has_findings(self, at_least: str) -> bool:
        """Whether any finding is at least as severe as `at_least` ("critical" or "warning")."""
        limit = SEVERITIES.index(at_least)
        return any(SEVERITIES.index(f.severity) <= limit for f in self.findings)


def analyze(ds: Dataset, th: Thresholds) -> Analysis:
    """Run every rule on the dataset."""
    from . import sweep as sweep_model  # the model module is also a rule family

    sweep = sweep_model.build(ds, th)
    result = Analysis(dataset=ds, sweep=sweep)
    for _rule_id, fn in sorted(rules().items()):
        out = fn(ds, sweep, th)
        if isinstance(out, Skipped):
            result.skipped.append(out)
        else:
            result.findings.extend(out)
    result.findings.sort(key=_rank)
    return result


def _rank(f: Finding) -> tuple[int, int, str]:
    tier = 2 if f.rule in CONTEXT_RULES else 1 if f.rule in SYMPTOM_RULES else 0
    return (tier, SEVERITIES.index(f.severity), f.rule)

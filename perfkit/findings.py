"""Findings: what a rule concluded, with the numbers that made it conclude so.

The field names are the JSON contract of `findings.json` (design.md); add fields, never rename.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("critical", "warning", "info")

# design.md's stable rule ids: the JSON contract. Add new ones, never rename.
RULE_IDS = (
    "sweep.not-saturated",
    "sweep.knee",
    "sweep.retrograde",
    "sweep.unstable",
    "load.underdriven",
    "client.saturated",
    "rt.localized",
    "disk.serial-small-io",
    "disk.saturated",
    "numa.remote-memory",
    "net.port-exhaustion",
    "net.retransmits",
    "net.listen-overflow",
    "cpu.saturated",
    "cpu.hot-thread",
    "io.top-writer",
    "cpu.context-switches",
    "mem.swapping",
    "disk.full",
    "profile.hotspots",
    "collector.overhead",
    "wait.profile",
    "cpu.throttled",
    "io.throttled",
    "db.lock-contention",
    "db.buffer-pool-miss",
    "db.log-wait",
    "db.connection-limit",
)


@dataclass(frozen=True)
class Finding:
    """One conclusion of one rule. `summary` is one sentence with the numbers; `evidence` holds them."""

    rule: str
    severity: str
    title: str
    summary: str
    evidence: dict[str, Any]
    explanation: str
    next_steps: list[str]
    hosts: list[str] = field(default_factory=list)
    window: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.rule not in RULE_IDS:
            raise ValueError(f"unknown rule id {self.rule!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "title": self.title,
            "summary": self.summary,
            "evidence": {k: jsonable(v) for k, v in self.evidence.items()},
            "hosts": list(self.hosts),
            "window": list(self.window) if self.window else None,
            "explanation": self.explanation,
            "next_steps": list(self.next_steps),
        }


@dataclass(frozen=True)
class Skipped:
    """A rule that could not run, and why (usually a missing capture)."""

    rule: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


@dataclass(frozen=True)
class RuleFailure:
    """A rule (or the sweep model) that raised instead of concluding: a bug in perfkit or input it did
    not foresee. Shown beside the findings so the user knows the analysis is incomplete."""

    rule: str
    reason: str  # the exception's type and message, and where it was raised

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


def number(value: Any) -> str:
    """A figure as a person writes it: 11,337 not 1.134e+04; 949.3; 0.0123; n/a for none, NaN or inf.

    Four significant digits, but every digit before the point, and no exponent down to 0.0001;
    below that (USL κ, say) the exponent is how people write it.
    """
    if value is None:
        return "n/a"
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def data_size(n_bytes: float) -> str:
    """A size as a person writes it: `7.9 GiB`, `32 MiB`, `6.0 MiB`, `512 KiB` (binary units, three
    significant digits or so: a 32 MiB remainder is not `0.0 GiB`)."""
    gib, mib = n_bytes / 2**30, n_bytes / 2**20
    if gib >= 1:
        return f"{gib:,.0f} GiB" if gib >= 100 else f"{gib:.1f} GiB"
    if mib >= 1:
        return f"{mib:,.0f} MiB" if mib >= 10 else f"{mib:.1f} MiB"
    return f"{n_bytes / 2**10:,.0f} KiB"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 thread`, `4 threads`: a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars become Python numbers, NaN/inf become None, floats are rounded."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, 6)
    return value

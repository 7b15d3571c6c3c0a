"""A capture's manifest record as one type, written by the collectors and read back by the archive,
the dataset and every rule (design.md's archive format: `manifest.json`'s `captures`).

The writer fills a `Record` as the capture runs (collectors/_records.py's `Ledger`) and writes
`to_dict()`; a reader gets `Record.from_dict()` of whatever the file holds: a field of the wrong JSON
type reads as absent (a hostile or older manifest never breaks a rule with a type it did not expect).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import asdict, dataclass, field
from typing import Any

# The environment every capture runs in (collectors/_shell.wrap exports it), as its record says.
ENV = {"LC_ALL": "C", "S_TIME_FORMAT": "ISO"}


@dataclass
class Record:
    """One capture's manifest record (design.md's fields, plus status and reason)."""

    id: str
    host: str
    kind: str
    command: str
    path: str
    phase: str
    step: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    bytes: int = 0
    sha256: str | None = None
    stderr_path: str | None = None
    clock_offset_s: float | None = None
    tool_version: str | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(ENV))
    status: str = "pending"  # ok | unavailable | failed | lost | timed_out | skipped
    reason: str = ""
    redacted: bool = False  # a secret's exact value was masked in the output (design.md)
    # Written by some records only (and left out of `to_dict` when unset):
    threads: int | None = None  # a load run's thread count (perfkit run)
    samples: int | None = None  # a sampler's samples taken
    failed_samples: int | None = None
    tz: str | None = None  # the host's time zone, where a record says it
    members: list[str] | None = None  # TiDB's debug zip: the files inside it

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name in _OPTIONAL:
            if out[name] is None:
                del out[name]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Record:
        """The record a manifest holds; a field missing or of another JSON type is its default
        ("" for the fields every writer sets: `kind` "" is no parser's; a record without a status
        was written before records had one: `ok`)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = raw.get(f.name)
            if value is not None and _fits(value, _TYPES[f.name]):
                values[f.name] = float(value) if _TYPES[f.name] == (float,) else value
            elif f.name in _REQUIRED:
                values[f.name] = ""
            elif f.name == "status":
                values[f.name] = "ok"
            elif f.name == "env":
                values[f.name] = {}  # not known: the writer's default would claim LC_ALL=C
        return cls(**values)


_OPTIONAL = ("threads", "samples", "failed_samples", "tz", "members")
_REQUIRED = tuple(f.name for f in dataclasses.fields(Record) if f.default is dataclasses.MISSING and
                  f.default_factory is dataclasses.MISSING)  # fmt: skip


def _json_types(annotation: Any) -> tuple[type, ...]:
    hint = annotation
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(t for a in typing.get_args(hint) if a is not type(None) for t in _json_types(a))
    origin = typing.get_origin(hint) or hint
    return (float,) if origin is float else (origin,)


_TYPES = {name: _json_types(hint) for name, hint in typing.get_type_hints(Record).items()}


def _fits(value: Any, wanted: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in wanted  # JSON true is no count
    if wanted == (float,):
        return isinstance(value, int | float)
    return isinstance(value, wanted)


@dataclass
class HostOutcome:
    host: str
    status: str = "ok"  # ok | partial | failed | interrupted
    reason: str = ""
    captures: int = 0
    bytes: int = 0
    # capture process groups killed by the sweeps: an earlier run's orphans at the start, this run's
    # stragglers (a capture whose channel timed out) at the end
    leftovers_killed: dict[str, int] = field(default_factory=lambda: {"start": 0, "end": 0})
    perfkit_cpu_pct: float | None = None  # perfkit's own CPU share during the window (local host only)
    perfkit_rss_kb: int | None = None

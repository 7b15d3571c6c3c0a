"""The run's manifest as types, written by the collectors and read back by the archive, the dataset
and every rule (design.md's archive format: `manifest.json`).

`Manifest` is its top level: the run's id, times and status, the inventory, an outcome per host
(`HostOutcome`), perfkit's own cost on the controller (`Controller`), a `Record` per capture, and for
`perfkit run` the sweep (`SweepRun`: the plan, a `StepOutcome` per step, the time it took).

The writers fill these as the run goes (collectors/_records.py's `Ledger`, collectors/driver.py) and
write `to_dict()`; a reader gets `from_dict()` of whatever the file holds: a field of the wrong JSON
type reads as absent, and so does a list's entry that is not an object (a hostile or older manifest
never breaks a rule with a type it did not expect).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import asdict, dataclass, field
from typing import Any, Self

# The environment every capture runs in (collectors/_shell.wrap exports it), as its record says.
ENV = {"LC_ALL": "C", "S_TIME_FORMAT": "ISO"}


class _Typed:
    """`from_dict` and `to_dict` for a manifest dataclass (a mixin: it adds no field)."""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Self:
        """What `raw` holds, as this type: a field missing or of another JSON type is its default
        (the empty value of its type when it has none: "" or 0)."""
        return cls(**_fields(cls, raw))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass
class Record(_Typed):
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
    def from_dict(cls, raw: dict[str, Any]) -> Self:
        """The record a manifest holds; a field missing or of another JSON type is its default
        ("" for the fields every writer sets: `kind` "" is no parser's; a record without a status
        was written before records had one: `ok`)."""
        values = _fields(cls, raw)
        values.setdefault("status", "ok")
        values.setdefault("env", {})  # not known: the writer's default would claim LC_ALL=C
        return cls(**values)


_OPTIONAL = ("threads", "samples", "failed_samples", "tz", "members")


@dataclass
class HostOutcome(_Typed):
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


@dataclass
class InventoryHost(_Typed):
    """A captured host as the manifest keeps it (config.py's HostSpec): where and what, no key paths,
    no secrets."""

    name: str
    hostname: str | None = None  # None: the local machine
    port: int | None = None
    user: str | None = None
    accept_new_host_key: bool = False
    roles: list[str] = field(default_factory=list)


@dataclass
class Controller(_Typed):
    """perfkit's own cost on the machine it ran on (collectors/_records.py: getrusage at the end)."""

    cpu_s: float | None = None
    max_rss_kb: int | None = None
    window_cpu_pct: float | None = None  # psutil's view during the window, when the local host was captured


# The step name of the window before a sweep's first step: the thread sampler alone, no load
# (collectors/driver.py `_rest`); a server's standing threads for analyzers/waits.py.
REST_STEP = "rest"
REST_S = 2  # its default length (driver.Plan.rest_s, `run --rest`): 4 thread samples at 2 Hz


@dataclass
class StepOutcome(_Typed):
    """One step of a sweep (`perfkit run`), as collectors/driver.py ran it."""

    name: str
    threads: int
    time_s: int = 0
    role: str = "step"  # step | probe | refine (adaptive sweeps)
    status: str = "pending"  # ok | degraded | failed | interrupted | skipped
    reason: str = ""
    tps: float | None = None  # from the load generator's summary, for the adaptive search
    lat_pct_ms: float | None = None
    errors: float | None = None  # failed operations per transaction (LoadResult.failed)
    started_at: str | None = None
    ended_at: str | None = None
    load_s: float = 0.0
    warmup_s: float = 0.0
    cooldown_s: float = 0.0
    # TIME_WAIT sockets to the database when the step ended (all load hosts)
    time_wait_after: int | None = None
    # several load hosts: the spread of their tools' starts, and each one's run (host, threads, status,
    # reason, tps, started_at)
    start_skew_s: float | None = None
    clients: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SweepRun(_Typed):
    """How `perfkit run` drove the sweep: the manifest's `sweep`.

    `plan` stays a dict: it is driver.Plan's fields beside the load tool's own options
    (collectors/plan.py's `record`), a different set per tool, and readers only compare or show it.
    """

    tool: str = ""
    tool_version: str | None = None
    plan: dict[str, Any] = field(default_factory=dict)
    adaptive: bool = False
    steps: list[StepOutcome] = field(default_factory=list)
    stopped_because: str = ""
    load_s: float = 0.0  # the load runs' time, warm-ups included
    cooldown_s: float = 0.0
    wall_s: float = 0.0  # the driver's wall time, start to manifest
    overhead_s: float = 0.0  # wall_s - load_s - cooldown_s: perfkit's own time between steps


@dataclass
class Manifest(_Typed):
    """`manifest.json`: the run and every capture it made. A foreign archive's is the empty one."""

    format_version: int | None = None
    perfkit_version: str | None = None
    run_id: str = ""
    created_at: str | None = None
    ended_at: str | None = None
    status: str = ""  # complete | partial | failed | interrupted | disk_full
    reason: str = ""
    window_s: int | None = None  # None in a sweep: one window per step (sweep.steps)
    interval_s: int | None = None
    inventory: list[InventoryHost] = field(default_factory=list)
    hosts: list[HostOutcome] = field(default_factory=list)
    controller: Controller = field(default_factory=Controller)
    captures: list[Record] = field(default_factory=list)
    sweep: SweepRun | None = None  # `perfkit run` only (left out of `to_dict` when unset)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list):
                out[f.name] = [v.to_dict() for v in value]
            elif isinstance(value, _Typed):
                out[f.name] = value.to_dict()
            elif f.name != "sweep":
                out[f.name] = value
        return out


_ABSENT = object()


def _fields(cls: type, raw: dict[str, Any]) -> dict[str, Any]:
    """The fields of the dataclass `cls` that `raw` holds with their JSON type, each read as `cls`
    declares it; a required field missing is its type's empty value ("" or 0), the others are left
    to their defaults."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        value = raw.get(f.name)
        read = _ABSENT if value is None else _value(value, hints[f.name])
        if read is not _ABSENT:
            values[f.name] = read
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = _json_types(hints[f.name])[0]()
    return values


def _value(value: Any, hint: Any) -> Any:
    """`value` as `hint` declares it (a manifest type read by its `from_dict`, a list of them without
    the entries that are no object), or `_ABSENT` when its JSON type is another."""
    for member in _members(hint):
        origin = typing.get_origin(member) or member
        args = typing.get_args(member)
        if isinstance(origin, type) and issubclass(origin, _Typed):
            if isinstance(value, dict):
                return origin.from_dict(value)
        elif origin is list and args and isinstance(args[0], type) and issubclass(args[0], _Typed):
            if isinstance(value, list):
                return [args[0].from_dict(v) for v in value if isinstance(v, dict)]
        elif _fits(value, _json_types(member)):
            return float(value) if origin is float else value
    return _ABSENT


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _members(hint: Any) -> tuple[Any, ...]:
    """A union's types but None (`int | None` -> int), else the type itself."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return (hint,)


def _json_types(annotation: Any) -> tuple[type, ...]:
    """The JSON types a field's annotation takes (`list[str] | None` -> list)."""
    return tuple(typing.get_origin(a) or a for a in _members(annotation))


def _fits(value: Any, wanted: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in wanted  # JSON true is no count
    if wanted == (float,):
        return isinstance(value, int | float)
    return isinstance(value, wanted)

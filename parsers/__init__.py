"""Parsers: one module per capture format, each with `parse`, `sniff` and `SCHEMA` (design.md).

Modules are found by scanning this package (no hand-kept list); a module's name is its kind.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

import pandas as pd

from ._common import Extras, ParseContext, Source, date_samples, extras_of


@cache
def kinds() -> tuple[str, ...]:
    """Every public module's name in this package, found without importing them."""
    return tuple(
        sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    )


@cache
def registry() -> dict[str, ModuleType]:
    """kind -> parser module, for every public module in this package (sniffing asks them all)."""
    return {kind: get(kind) for kind in kinds()}


def get(kind: str) -> ModuleType:
    """The parser module for `kind`, the only one imported (the 50 modules' code and compiled patterns
    are 4.5 MB of a parse's peak RSS, a tenth of ss's budget); KeyError names the known kinds."""
    if kind not in kinds():
        raise KeyError(f"unknown kind {kind!r}; known: {', '.join(kinds())}")
    return importlib.import_module(f"{__name__}.{kind}")


def parse(kind: str, source: Source, context: ParseContext) -> pd.DataFrame:
    """Parse `source` as `kind` in its context. A parser that prints only a time of day declares
    `DATED_BY_START` and is given the capture's start to date its rows, one that reads its tool's
    version `READS_TOOL_VERSION`; a capture that prints no time at all is dated from the context's
    `samples_from` when it has one (`_common.date_samples`)."""
    mod = get(kind)
    extra = {"started_at": context.started_at} if getattr(mod, "DATED_BY_START", False) else {}
    if getattr(mod, "READS_TOOL_VERSION", False):
        extra["tool_version"] = context.tool_version
    frame = mod.parse(source, host=context.host, tz=context.tz, **extra)
    if context.samples_from is not None:
        date_samples(frame, context.samples_from)
    return frame


def extras(kind: str, frame: pd.DataFrame) -> Extras:
    """What the parser of `kind` read beside the frame's rows, typed (its `EXTRAS`, else the fields
    every parser may give), taken out of the frame's attrs."""
    mod = get(kind) if kind in kinds() else None
    return extras_of(getattr(mod, "EXTRAS", Extras), frame)


def sniff_kind(text: str) -> str | None:
    """The kind whose `sniff` claims this text (the first lines of a file), or None."""
    claims = [kind for kind, mod in registry().items() if mod.sniff(text)]
    return claims[0] if len(claims) == 1 else (sorted(claims)[0] if claims else None)


def sniff_binary_kind(data: bytes) -> str | None:
    """The kind whose `sniff_bytes` claims these first bytes of a binary file (e.g. a gzip'd pprof
    profile), or None. Only parsers of binary formats define `sniff_bytes`."""
    claims = [
        k for k, mod in registry().items() if getattr(mod, "sniff_bytes", None) and mod.sniff_bytes(data)
    ]
    return sorted(claims)[0] if claims else None

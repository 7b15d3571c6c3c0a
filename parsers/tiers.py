"""tiers: response time per tier per load level, for the tiers perfkit cannot measure itself.

perfkit measures the client's RT and the time inside the database; what lies between (load
balancers, ingress, app servers, proxies) comes from their own tools (APM, access logs, packet
captures) via `perfkit analyze ARCHIVE --tiers FILE`, in one of three forms, tiers ordered from the
client inward:

- CSV, long form, one row per tier per load level (`tps` optional)::

      threads,tier,rt_ms,tps
      3000,pts,290,10000
      3000,app,225,

- CSV, wide form, one column per tier named `<tier>_ms` (or `<tier>_rt_ms`), left = outermost;
  an optional `tps`/`throughput`/`qps` column::

      threads,client_ms,app_ms,db_ms
      3000,290,225,6

- YAML, a `tiers:` list (an optional top-level `tps:` mapping, or one per tier)::

      tiers:
        - name: ingress
          rt_ms: {3000: 290, 5000: 499}
        - name: app
          rt_ms: {3000: 225, 5000: 195}
      tps: {3000: 10000, 5000: 9856}

Concurrency may be called `threads`, `concurrency`, `thds`, `clients` or `users` (CSV); `,`, `;`, tab
or whitespace separate CSV fields (with `;`, a decimal comma is read as such); `#` starts a comment
line. An empty value (or `-`, `NaN`) is a tier not measured at that level (NaN). The files carry no time.

Columns (SCHEMA), one row per tier per load level, in file order:

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| tier | string | the tier's name as written |
| tier_order | Int64 | 0 for the outermost tier (nearest the client), 1, 2 ... inward |
| threads | Int64 | configured concurrency of the load level |
| rt_ms | float64 | average response time the tier sees, its inner tiers included, in ms |
| tps | float64 | throughput at that level (per second) when the file gives it, else NaN |

Beside its rows: `EXTRAS`. ParseError (with the line): a value that is not a number, a negative
RT, concurrency that is not a whole number, a row with the wrong number of fields, invalid YAML or
YAML of another shape. Tested on: tests/fixtures/tiers/ (see README.md there).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd
import yaml

from perfkit.errors import ParseError

from ._common import Extras, Lines, Source, coerce, empty_frame
from .sweep import ALIASES as _SWEEP_ALIASES


@dataclass(frozen=True)
class TiersExtras(Extras):
    """What tiers reads beside its rows (see `_common.Extras`); `unknown_columns` lists CSV columns or
    YAML keys not read."""

    # which of the tiers file's forms it is: `long`, `wide` or `yaml`
    form: str | None = None


EXTRAS = TiersExtras

KIND = "tiers"
SCHEMA: dict[str, str] = {
    "host": "string",
    "tier": "string",
    "tier_order": "Int64",
    "threads": "Int64",
    "rt_ms": "float64",
    "tps": "float64",
}
_THREADS = {"threads", "concurrency", "thds", "clients", "users"}
_TPS = {"tps", "throughput", "qps", "ops_s"}
_MISSING = {"", "-", "nan", "NaN", "NA", "n/a", "N/A"}
_MAX_THREADS = 10**9
_SPLIT = re.compile(r"[,;\t ]+")
_YAML_HEAD = re.compile(r"^tiers\s*:", re.MULTILINE)


def _names(line: str) -> list[str]:
    return [t.strip().strip('"').lower() for t in _SPLIT.split(line.strip()) if t.strip()]


def _is_data(line: str) -> bool:
    """Neither blank nor a `#` comment."""
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _wide_tier(name: str) -> str | None:
    """The tier a wide-form column names (`app_ms`, `app_rt_ms` -> `app`); None for other columns."""
    if name in _SWEEP_ALIASES or not name.endswith("_ms"):
        return None  # `lat_ms`, `p95_ms` ... are a sweep table's latencies, not a tier
    tier = name.removesuffix("_ms").removesuffix("_rt")
    return tier or None


def _csv_form(names: list[str]) -> str | None:
    if not _THREADS & set(names):
        return None
    if "tier" in names and "rt_ms" in names:
        return "long"
    if sum(_wide_tier(n) is not None for n in names) >= 2:
        return "wide"
    return None


def sniff(text: str) -> bool:
    """A CSV header naming concurrency and tiers (long or wide form), or a top-level `tiers:` key."""
    first = next((ln for ln in text.splitlines() if _is_data(ln)), "")
    if _csv_form(_names(first)) is not None:
        return True
    return bool(_YAML_HEAD.search(text[:4096]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a tiers file (`tz` unused: the file has no time). Raises ParseError: see the module docstring."""
    lines = Lines(source, KIND)
    body = list(lines)
    dropped = 0
    if body and not lines.last_complete and body[-1][1].strip():
        body.pop()  # cut off mid-write: its number may be cut too
        dropped = 1
    first = next(((n, t) for n, t in body if _is_data(t)), None)
    if first is None:
        return _frame([], host, dropped, [], "")
    form = _csv_form(_names(first[1]))
    if form is not None:
        rows, unknown = _csv(lines, body, first, form)
    else:
        rows, unknown = _yaml(lines, body)
        form = "yaml"
    return _frame(rows, host, dropped, unknown, form)


def _frame(rows: list[dict], host: str | None, dropped: int, unknown: list[str], form: str) -> pd.DataFrame:
    if not rows:
        df = empty_frame(SCHEMA)
    else:
        df = pd.DataFrame(rows)
        df["host"] = pd.array([host] * len(df), dtype="string")
        df = coerce(df, SCHEMA)
    df.attrs.update(dropped_lines=dropped, unknown_columns=unknown, form=form)
    return df


# ---------------------------------------------------------------- CSV


def _csv(
    lines: Lines, body: list[tuple[int, str]], header: tuple[int, str], form: str
) -> tuple[list[dict], list[str]]:
    head_no, head_line = header
    sep = next((s for s in (",", "\t", ";") if s in head_line), None)
    names = [n.strip('"').lower() for n in _split(head_line, sep)]
    tiers = [(i, t) for i, n in enumerate(names) if (t := _wide_tier(n)) is not None]
    # the form was told from the header split at any separator; its columns are read at the first one
    # found, so a header that mixes them (`threads\tapp_ms,db_ms`) no longer has them all
    if _csv_form(names) != form:
        raise lines.error(head_no, head_line, f"the header's columns are not all separated by {sep!r}")
    threads_at = next(i for i, n in enumerate(names) if n in _THREADS)
    tps_at = next((i for i, n in enumerate(names) if n in _TPS), None)
    if form == "long":
        tier_at, rt_at = names.index("tier"), names.index("rt_ms")  # the first of a repeated name
        used = {threads_at, tier_at, rt_at, tps_at}
        tiers = []
    else:
        used = {threads_at, tps_at, *(i for i, _ in tiers)}
    unknown = [n for i, n in enumerate(names) if i not in used]
    order: dict[str, int] = {t: k for k, (_, t) in enumerate(tiers)}
    rows: list[dict] = []
    for line_no, line in body:
        if line_no <= head_no or not _is_data(line):
            continue
        fields = _split(line, sep)
        if sep == ";":  # a European spreadsheet's export: decimal commas
            fields = [f.replace(",", ".") for f in fields]
        if len(fields) != len(names):
            raise lines.error(line_no, line, f"{len(fields)} fields, the header has {len(names)}")
        threads = _threads(lines, line_no, line, fields[threads_at])
        tps = _value(lines, line_no, line, names[tps_at], fields[tps_at]) if tps_at is not None else math.nan
        if form == "long":
            tier = fields[tier_at].strip().strip('"')
            if not tier:
                raise lines.error(line_no, line, "the tier is empty")
            order.setdefault(tier, len(order))
            rt = _value(lines, line_no, line, "rt_ms", fields[rt_at])
            rows.append(_row(tier, order[tier], threads, rt, tps))
        else:
            for i, tier in tiers:
                rt = _value(lines, line_no, line, names[i], fields[i])
                rows.append(_row(tier, order[tier], threads, rt, tps))
    return rows, unknown


def _split(line: str, sep: str | None) -> list[str]:
    return [f.strip() for f in (line.split(sep) if sep else line.split())]


def _row(tier: str, order: int, threads: int, rt: float, tps: float) -> dict[str, Any]:
    return {"tier": tier, "tier_order": order, "threads": threads, "rt_ms": rt, "tps": tps}


def _value(lines: Lines, line_no: int, line: str, name: str, text: str) -> float:
    text = text.strip().strip('"')
    if text in _MISSING:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise lines.error(line_no, line, f"{name} is not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise lines.error(line_no, line, f"{name} must be a finite number >= 0, got {text!r}")
    return value


def _threads(lines: Lines, line_no: int, line: str, text: Any) -> int:
    text = str(text).strip().strip('"')
    try:
        value = float(text)
    except ValueError:
        raise lines.error(line_no, line, f"concurrency is not a number: {text!r}") from None
    if not math.isfinite(value) or value % 1 != 0 or not 1 <= value <= _MAX_THREADS:
        raise lines.error(line_no, line, f"concurrency must be a whole number >= 1, got {text!r}")
    return int(value)


# ---------------------------------------------------------------- YAML


def _yaml(lines: Lines, body: list[tuple[int, str]]) -> tuple[list[dict], list[str]]:
    text = "\n".join(t for _, t in body)
    text_of = {n: t for n, t in body}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        # a ReaderError (control characters) carries only a character position, no mark
        at = text[: getattr(exc, "position", 0)].count("\n") + 1
        line_no = mark.line + 1 if mark is not None else at
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise lines.error(line_no, text_of.get(line_no, ""), f"invalid YAML: {reason}") from None
    except RecursionError:
        raise lines.error(1, text_of.get(1, ""), "invalid YAML: nested too deeply") from None
    if root is None:
        return [], []

    def fail(node: yaml.Node, reason: str) -> ParseError:
        n = node.start_mark.line + 1
        return lines.error(n, text_of.get(n, ""), reason)

    if not isinstance(root, yaml.MappingNode):
        raise fail(root, "not a tiers file: expected a mapping with a 'tiers:' list")
    top = _mapping(root, fail)
    unknown = [k for k in top if k not in ("tiers", "tps")]
    if "tiers" not in top:
        raise fail(root, "not a tiers file: no 'tiers:' list")
    seq = top["tiers"][1]
    if not isinstance(seq, yaml.SequenceNode):
        raise fail(seq, "tiers: expected a list of tiers, client first")
    shared_tps = _per_threads(top["tps"][1], "tps", fail, lines) if "tps" in top else {}
    rows: list[dict] = []
    names: set[str] = set()
    for order, node in enumerate(seq.value):
        if not isinstance(node, yaml.MappingNode):
            raise fail(node, "a tier must be a mapping with 'name:' and 'rt_ms:'")
        tier = _mapping(node, fail)
        unknown += [f"tiers[{order}].{k}" for k in tier if k not in ("name", "rt_ms", "tps")]
        if "name" not in tier or "rt_ms" not in tier:
            raise fail(node, "a tier needs 'name:' and 'rt_ms:'")
        name_node = tier["name"][1]
        if not isinstance(name_node, yaml.ScalarNode) or not str(name_node.value).strip():
            raise fail(name_node, "name: expected a tier name")
        name = str(name_node.value).strip()
        if name in names:
            raise fail(name_node, f"tier {name!r} is listed twice")
        names.add(name)
        rts = _per_threads(tier["rt_ms"][1], "rt_ms", fail, lines)
        tps = _per_threads(tier["tps"][1], "tps", fail, lines) if "tps" in tier else shared_tps
        for threads, rt in rts.items():
            rows.append(_row(name, order, threads, rt, tps.get(threads, math.nan)))
    return rows, unknown


def _mapping(node: yaml.MappingNode, fail: Any) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise fail(k, "keys must be plain words")
        key = str(k.value)
        if key in out:
            raise fail(k, f"key {key!r} given twice")
        out[key] = (k, v)
    return out


def _per_threads(node: yaml.Node, what: str, fail: Any, lines: Lines) -> dict[int, float]:
    """A `{threads: value}` mapping, values checked like CSV fields."""
    if not isinstance(node, yaml.MappingNode):
        raise fail(node, f"{what}: expected a mapping of concurrency to value, e.g. {{3000: 290}}")
    out: dict[int, float] = {}
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
            raise fail(k, f"{what}: expected 'concurrency: number' pairs")
        try:
            threads = _threads(lines, 0, "", k.value)
            value = _value(lines, 0, "", what, "" if v.value in ("~", "null") else v.value)
        except ParseError as exc:
            raise fail(v, exc.reason) from None
        if threads in out:
            raise fail(k, f"{what}: concurrency {threads} given twice")
        out[threads] = value
    return out

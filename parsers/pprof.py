"""pprof: Go profiles as `net/http/pprof` serves them (profile.proto, gzip-compressed protobuf).

Reads what collectors/pprof.py fetches from a Go service (TiDB, PD, any `net/http/pprof` server):
`GET /debug/pprof/profile?seconds=N` (CPU), `/heap`, `/allocs`, `/goroutine`, `/mutex`, `/block`, all
`debug=0` (the default: protobuf), gzip-compressed as served or already gunzipped. The text forms
(`?debug=1`, `?debug=2`) and TiKV's SVG flame graph are refused, saying so. The decoder is hand-written
(varints and length-delimited fields; field numbers from github.com/google/pprof proto/profile.proto):
no Go, no protobuf library.

A profile is binary, so `parse` needs its bytes: a path (what perfkit.dataset and `perfkit parse`
pass), a binary stream or `bytes`; decoded text has lost them (gzip does not survive UTF-8 decoding).
A non-empty string that is not a path is a ParseError, "" the empty frame. So `sniff(text)` is always
False: the kind comes from the manifest (`kind: pprof`) or `perfkit parse --kind pprof FILE`;
`sniff_bytes(data)` recognises a profile from its first bytes. Errors name line 1 (a profile has no
lines) and the byte offset in the reason.

Columns (one row per sample; SCHEMA lists the fixed four):
  host    the `host` argument
  stack   `root;...;leaf` function names (perf's stackcollapse folded format); functions inlined into
          a location are expanded (profile.proto: a Location's last Line is the caller the earlier
          ones were inlined into); `;` inside a name becomes `:`
  leaf    the innermost function (<NA> for a sample without locations)
  labels  `key=value,key=value` in profile order (numeric: `key=123`, `key=123unit`), <NA> if none
  then one int64 column per sample type, `<type>_<unit>` from the string table (attrs `value_columns`):
  `samples_count, cpu_nanoseconds` (CPU), `alloc_objects_count, alloc_space_bytes,
  inuse_objects_count, inuse_space_bytes` (heap, allocs), `goroutine_count`,
  `contentions_count, delay_nanoseconds` (mutex, block).
What it reads beside its rows: `EXTRAS` (below).

`top(frame, col)` is `go tool pprof -top` (function, flat, flat_pct, cum, cum_pct);
`folded(frame, col)` gives `a;b;c N` lines for flame graphs.
Tested on: tests/fixtures/pprof/ (see README.md there), against `go tool pprof -top`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from ._common import Extras, _is_path, coerce, empty_frame


@dataclass(frozen=True)
class PprofExtras(Extras):
    """What pprof reads beside its rows (see `_common.Extras`). `dropped_lines` is always 0: a cut-off
    profile cannot be read in part and is a ParseError. `drop_frames`/`keep_frames` are the regexes of
    frames pprof drops/keeps: recorded, not applied (Go's runtime sets neither)."""

    sample_types: list = field(default_factory=list)  # one {type, unit, column} per sample value
    value_columns: list[str] = field(default_factory=list)
    # the one a flame graph draws, as `go tool pprof` does: default_sample_type, else the last type
    default_value_column: str | None = None
    period: int | None = None  # the sampling period, in `period_type` (`type/unit`)
    period_type: str | None = None
    duration_ns: int | None = None
    time: object = None  # when taken: a tz-aware UTC Timestamp from time_nanos, None when unset
    drop_frames: str | None = None
    keep_frames: str | None = None
    comments: list[str] = field(default_factory=list)


EXTRAS = PprofExtras

KIND = "pprof"
ProfileSource = str | Path | bytes | IO[bytes] | IO[str]
SCHEMA: dict[str, str] = {"host": "string", "stack": "string", "leaf": "string", "labels": "string"}
GZIP_MAGIC = b"\x1f\x8b"
# A pure-Python decoder is slow on giant profiles and a small gzip can expand enormously (a zip
# bomb from a foreign archive): refuse beyond this instead of exhausting memory.
MAX_PROFILE_BYTES = 256 << 20

_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5
# Profile field number -> wire type (profile.proto): messages, strings and packed lists are
# length-delimited, the int64 fields varints (`comment` may also come packed).
_PROFILE_WIRE = {n: _WIRE_LEN for n in (1, 2, 3, 4, 5, 6, 11, 16)} | {
    n: _WIRE_VARINT for n in (7, 8, 9, 10, 12, 13, 14, 15)
}


def sniff(text: str) -> bool:
    """Always False: decoded text has lost a profile's bytes (see `sniff_bytes`)."""
    return False


def sniff_bytes(data: bytes) -> bool:
    """Whether the first bytes of a file look like a pprof profile (gzip or raw protobuf).

    A gzip stream is inflated a little. The fields at the start must all be Profile fields with
    their wire types: Go's runtime writes `period_type` or `time_nanos` first, not `sample_type`,
    so no single first byte can be required.
    """
    if data[:2] == GZIP_MAGIC:
        try:
            data = zlib.decompressobj(wbits=31).decompress(data[:4096], 256)
        except zlib.error:
            return False
    data = data[:256]
    if not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]", data):
        return False  # text: every protobuf profile has small varints (control bytes) early on
    pos = seen = 0
    try:
        while pos < len(data):
            key, pos = _varint(data, pos, len(data))
            if _PROFILE_WIRE.get(key >> 3) != key & 7 and key != 13 << 3 | _WIRE_LEN:
                return False
            value, pos = _varint(data, pos, len(data))
            if key & 7 == _WIRE_LEN:
                pos += value  # may run past the prefix: the rest of the file is not read here
            if pos <= len(data):
                seen += 1
    except _Bad:
        pass  # a field cut by the end of the prefix: judge what came before
    return seen >= 2


def parse(source: ProfileSource, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse one pprof profile into one row per sample.

    Args:
        source: a path (str or Path), a binary stream or the profile's bytes, gzipped or not.
            Text is refused (see the module docstring); "" gives the empty frame.
        host: host name to put in the `host` column.
        tz: unused: a profile's time is UTC nanoseconds since the epoch.

    Raises:
        ParseError: not a protobuf profile (text, SVG, garbage), cut off, or inconsistent (a sample
            naming a location the profile lacks, values not matching the sample types).
    """
    data, path = _read(source)
    return parse_bytes(data, host=host, path=path)


def parse_bytes(data: bytes, *, host: str | None = None, path: str | None = None) -> pd.DataFrame:
    """Parse a profile's bytes (gzip-compressed or raw protobuf); `path` only names it in errors."""
    if not data:
        return _empty()
    if len(data) > MAX_PROFILE_BYTES:
        raise ParseError(KIND, path, 1, "", f"profile larger than {MAX_PROFILE_BYTES >> 20} MiB")
    raw = _gunzip(data, path) if data[:2] == GZIP_MAGIC else bytes(data)
    if not raw:
        return _empty()
    _refuse_text(raw, path)
    try:
        return _build(_decode_profile(raw), host)
    except _Bad as exc:
        at = raw[exc.offset : exc.offset + 16].hex(" ") if exc.offset >= 0 else ""
        where = f" at byte {exc.offset}" if exc.offset >= 0 else ""
        raise ParseError(KIND, path, 1, at, f"not a valid pprof profile{where}: {exc.reason}") from None


def top(frame: pd.DataFrame, value_col: str) -> pd.DataFrame:
    """Per function, as `go tool pprof -top` lists it: flat, flat_pct, cum, cum_pct.

    flat sums the samples whose leaf is the function, cum those whose stack contains it (once per
    sample, however often recursion repeats it). Percentages are of the total of all samples'
    absolute values, samples without a stack included (pprof counts them in its total).
    Sorted as pprof sorts: flat descending, then name. Functions seen only in zero-valued samples
    are left out, as pprof skips such samples.
    """
    cols = {
        "function": "string",
        "flat": "int64",
        "flat_pct": "float64",
        "cum": "int64",
        "cum_pct": "float64",
    }
    values = frame[value_col].astype("int64")
    total = int(values.abs().sum())
    nonzero = frame.loc[values != 0, ["stack", "leaf"]].assign(v=values[values != 0])
    if nonzero.empty:
        return empty_frame(cols)
    by_stack = nonzero.groupby("stack", sort=False, dropna=True)["v"].sum()
    cum: dict[str, int] = {}
    for stack, v in by_stack.items():
        if stack:
            for name in set(str(stack).split(";")):
                cum[name] = cum.get(name, 0) + int(v)
    flat = nonzero.dropna(subset=["leaf"]).groupby("leaf")["v"].sum()
    out = pd.DataFrame({"function": list(cum), "cum": list(cum.values())})
    out["flat"] = out["function"].map(flat).fillna(0).astype("int64")
    div = float(total) if total else np.nan
    out["flat_pct"] = out["flat"] / div * 100
    out["cum_pct"] = out["cum"] / div * 100
    out["_abs"] = out["flat"].abs()
    out = out.sort_values(["_abs", "function"], ascending=[False, True], kind="stable")
    return coerce(out[list(cols)], cols)


def folded(frame: pd.DataFrame, value_col: str) -> list[str]:
    """`root;...;leaf N` lines (Brendan Gregg's folded format, as perf's stackcollapse writes it).

    Identical stacks are summed; zero sums and samples without a stack are left out; sorted by stack.
    """
    sums = frame.loc[frame["stack"].fillna("") != ""].groupby("stack")[value_col].sum()
    return [f"{stack} {int(v)}" for stack, v in sums.sort_index().items() if v != 0]


# ---------------------------------------------------------------- input


def _read(source: ProfileSource) -> tuple[bytes, str | None]:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), None
    if _is_path(source):
        try:
            with open(source, "rb") as fh:
                return fh.read(MAX_PROFILE_BYTES + 1), str(source)
        except OSError as exc:
            raise ParseError(KIND, str(source), 1, "", f"cannot read: {exc.strerror}") from None
    if isinstance(source, str):
        return _text(source, None), None
    name = getattr(source, "name", None)
    path = name if isinstance(name, str) else None
    try:
        got = source.read(MAX_PROFILE_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(KIND, path, 1, "", f"cannot read: {exc}") from None
    if isinstance(got, str):
        return _text(got, path), path
    return bytes(got), path


def _text(text: str, path: str | None) -> bytes:
    """Decoded text: empty is the empty profile; anything else cannot be a profile any more."""
    if not text.strip():
        return b""
    if text.startswith("\x1f"):
        reason = "a gzip profile decoded as text has lost its bytes: pass its path or bytes"
    else:
        reason = _text_reason(text) or "pprof profiles are binary (gzip protobuf): pass a path or bytes"
    raise ParseError(KIND, path, 1, _first_line(text), reason)


def _refuse_text(raw: bytes, path: str | None) -> None:
    """Text that reached us as bytes (a debug=1 dump, an SVG): say what it is."""
    if b"\x00" in raw[:512]:
        return
    try:
        text = raw[:512].decode("utf-8")
    except UnicodeDecodeError:
        return
    reason = _text_reason(text)
    if reason:
        raise ParseError(KIND, path, 1, _first_line(text), reason)


def _text_reason(text: str) -> str | None:
    head = text.lstrip()[:512]
    if head.startswith("<?xml") or "<svg" in head:
        return (
            "an SVG (a TiKV flame graph?), not a protobuf profile: "
            "fetch it with Content-Type: application/protobuf"
        )
    # debug=1 starts "goroutine profile: total 5" / "heap profile: ..." / "--- mutex:"; debug=2
    # starts "goroutine 1 [running]:".
    if re.match(r"(goroutine|heap|mutex|contention|block) profile:|goroutine \d+ \[|--- \w+:", head):
        return "the text form of a Go profile (debug=1/2); perfkit reads the protobuf form (debug=0)"
    return None


def _first_line(text: str) -> str:
    return text.lstrip().splitlines()[0][:120] if text.strip() else ""


def _gunzip(data: bytes, path: str | None) -> bytes:
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, MAX_PROFILE_BYTES + 1)
    except zlib.error as exc:
        raise ParseError(KIND, path, 1, data[:16].hex(" "), f"corrupt gzip stream: {exc}") from None
    if len(out) > MAX_PROFILE_BYTES:
        raise ParseError(KIND, path, 1, "", f"profile inflates to more than {MAX_PROFILE_BYTES >> 20} MiB")
    if not d.eof:
        raise ParseError(KIND, path, 1, "", "gzip stream cut off: the profile was not fetched completely")
    return out


# ---------------------------------------------------------------- protobuf


class _Bad(Exception):
    def __init__(self, reason: str, offset: int = -1):
        super().__init__(reason)
        self.reason, self.offset = reason, offset


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the base-128 varint at `pos`; at most 10 bytes (64 bits)."""
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _Bad("varint runs past the end of its message (profile cut off?)", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise _Bad("varint longer than 10 bytes", start)


def _signed(v: int) -> int:
    """protobuf int64: negative numbers are 10-byte two's complement varints."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or start, end) for each field of the message buf[pos:end].

    Varints give (no, 0, value, 0); length-delimited fields (no, 2, start, end); fixed-width fields
    are skipped over. Groups (wire types 3, 4) are obsolete and never in a profile: an error.
    """
    while pos < end:
        at = pos
        key, pos = _varint(buf, pos, end)
        no, wire = key >> 3, key & 7
        if no == 0:
            raise _Bad("field number 0", at)
        if wire == _WIRE_VARINT:
            v, pos = _varint(buf, pos, end)
            yield no, wire, v, 0
        elif wire == _WIRE_LEN:
            n, pos = _varint(buf, pos, end)
            if n > end - pos:
                raise _Bad(f"field {no} is {n} bytes long, only {end - pos} left (profile cut off?)", at)
            yield no, wire, pos, pos + n
            pos += n
        elif wire in (_WIRE_I64, _WIRE_I32):
            pos += 8 if wire == _WIRE_I64 else 4
            if pos > end:
                raise _Bad(f"fixed-width field {no} runs past the end", at)
        else:
            raise _Bad(f"field {no} has invalid wire type {wire}", at)


def _ints(buf: bytes, wire: int, a: int, b: int, out: list[int]) -> None:
    """A repeated integer field: one unpacked varint, or a packed run of them (`_fields` yields no other)."""
    if wire == _WIRE_VARINT:
        out.append(a)
        return
    pos = a
    while pos < b:
        v, pos = _varint(buf, pos, b)
        out.append(v)


def _int(wire: int, a: int, what: str) -> int:
    if wire != _WIRE_VARINT:
        raise _Bad(f"{what} is not a varint")
    return a


def _varints(buf: bytes, a: int, b: int, names: dict[int, str]) -> dict[int, int]:
    """The varint fields of message buf[a:b] that `names` lists (number -> name for errors), by number."""
    found: dict[int, int] = {}
    for no, wire, x, _ in _fields(buf, a, b):
        if no in names:
            found[no] = _int(wire, x, names[no])
    return found


_Label = tuple[int, int, int, int]  # key, str, num, num_unit (strings as table indices)


@dataclass
class _Profile:
    """The Profile message's fields the frame needs; strings are string-table indices."""

    sample_types: list[tuple[int, int]] = field(default_factory=list)  # (type, unit)
    # (location ids, values, labels) per sample
    samples: list[tuple[list[int], list[int], list[_Label]]] = field(default_factory=list)
    # id -> (address, function ids of its Lines, the innermost inlined one first)
    locations: dict[int, tuple[int, list[int]]] = field(default_factory=dict)
    functions: dict[int, tuple[int, int]] = field(default_factory=dict)  # id -> name, system_name
    strings: list[str] = field(default_factory=list)
    scalars: dict[int, int] = field(default_factory=dict)  # the int64 fields, by number
    period_type: tuple[int, int] | None = None
    comments: list[int] = field(default_factory=list)

    def string(self, i: int, what: str) -> str:
        if not 0 <= i < len(self.strings):
            raise _Bad(f"{what} names string {i}, the table has {len(self.strings)}")
        return self.strings[i]


def _decode_profile(buf: bytes) -> _Profile:
    prof = _Profile()
    for no, wire, a, b in _fields(buf, 0, len(buf)):
        if no in (1, 2, 3, 4, 5, 6, 11) and wire != _WIRE_LEN:
            raise _Bad(f"Profile field {no} should be a message or string, has wire type {wire}")
        if no == 1:
            prof.sample_types.append(_value_type(buf, a, b))
        elif no == 2:
            prof.samples.append(_sample(buf, a, b))
        elif no == 4:
            lid, addr, funcs = _location(buf, a, b)
            prof.locations[lid] = (addr, funcs)
        elif no == 5:
            fid, name, system_name = _function(buf, a, b)
            prof.functions[fid] = (name, system_name)
        elif no == 6:
            prof.strings.append(buf[a:b].decode("utf-8", errors="replace"))
        elif no == 11:
            prof.period_type = _value_type(buf, a, b)
        elif no == 13:
            _ints(buf, wire, a, b, prof.comments)
        elif no in (7, 8, 9, 10, 12, 14):
            prof.scalars[no] = _signed(_int(wire, a, f"Profile field {no}"))
        # 3 (mappings), 15, 16 and unknown fields: not needed for stacks and values.
    return prof


def _value_type(buf: bytes, a: int, b: int) -> tuple[int, int]:
    found = _varints(buf, a, b, {1: "ValueType.type", 2: "ValueType.unit"})
    return found.get(1, 0), found.get(2, 0)


def _sample(buf: bytes, a: int, b: int) -> tuple[list[int], list[int], list[_Label]]:
    loc_ids: list[int] = []
    values: list[int] = []
    labels: list[_Label] = []
    for no, wire, x, y in _fields(buf, a, b):
        if no == 1:
            _ints(buf, wire, x, y, loc_ids)
        elif no == 2:
            _ints(buf, wire, x, y, values)
        elif no == 3:
            if wire != _WIRE_LEN:
                raise _Bad("Sample.label is not a message", x)
            found = _varints(buf, x, y, dict.fromkeys((1, 2, 3, 4), "Label field"))
            labels.append((found.get(1, 0), found.get(2, 0), _signed(found.get(3, 0)), found.get(4, 0)))
    return loc_ids, [_signed(v) for v in values], labels


def _location(buf: bytes, a: int, b: int) -> tuple[int, int, list[int]]:
    """(id, address, the function id of each Line: innermost first)."""
    lid = addr = 0
    funcs: list[int] = []
    for no, wire, x, y in _fields(buf, a, b):
        if no == 1:
            lid = _int(wire, x, "Location.id")
        elif no == 3:
            addr = _int(wire, x, "Location.address")
        elif no == 4:
            if wire != _WIRE_LEN:
                raise _Bad("Location.line is not a message", x)
            funcs.append(_varints(buf, x, y, {1: "Line.function_id"}).get(1, 0))
    if lid == 0:
        raise _Bad("a Location without an id", a)
    return lid, addr, funcs


def _function(buf: bytes, a: int, b: int) -> tuple[int, int, int]:
    found = _varints(buf, a, b, {1: "Function.id", 2: "Function.name", 3: "Function.system_name"})
    if not found.get(1):
        raise _Bad("a Function without an id", a)
    return found[1], found.get(2, 0), found.get(3, 0)


# ---------------------------------------------------------------- frame


def _build(prof: _Profile, host: str | None) -> pd.DataFrame:
    if not prof.strings:
        raise _Bad("no string table (every profile has one, starting with the empty string)")
    if prof.strings[0] != "":
        raise _Bad(f"string table starts with {prof.strings[0][:40]!r}, not the empty string")
    if not prof.sample_types:
        raise _Bad("no sample types")
    s = prof.string

    types = [{"type": s(t, "sample type"), "unit": s(u, "sample unit")} for t, u in prof.sample_types]
    columns = _value_columns(types)
    for t, c in zip(types, columns, strict=True):
        t["column"] = c

    names: dict[int, str] = {}
    for fid, (n, sysn) in prof.functions.items():
        names[fid] = (s(n, "function name") or s(sysn, "function system name") or "?").replace(";", ":")
    loc_frames: dict[int, list[str]] = {}
    for lid, (addr, fids) in prof.locations.items():
        if not fids:  # not symbolized: the address stands in for the name, as in pprof
            loc_frames[lid] = [f"0x{addr:x}"]
            continue
        try:
            loc_frames[lid] = [names[f] for f in fids]
        except KeyError as exc:
            raise _Bad(f"location {lid} names function {exc.args[0]}, which the profile lacks") from None

    ntypes = len(types)
    stacks: list[str] = []
    leaves: list[str | None] = []
    labels: list[str | None] = []
    values = np.zeros((len(prof.samples), ntypes), dtype=np.int64)
    cache: dict[tuple[int, ...], tuple[str, str | None]] = {}
    for i, (loc_ids, vals, labs) in enumerate(prof.samples):
        if len(vals) != ntypes:
            raise _Bad(f"sample {i + 1} has {len(vals)} values for {ntypes} sample types")
        values[i] = vals
        key = tuple(loc_ids)
        hit = cache.get(key)
        if hit is None:
            leaf_first: list[str] = []
            for lid in loc_ids:
                frames = loc_frames.get(lid)
                if frames is None:
                    raise _Bad(f"sample {i + 1} names location {lid}, which the profile lacks")
                leaf_first.extend(frames)
            hit = cache[key] = (";".join(reversed(leaf_first)), leaf_first[0] if leaf_first else None)
        stacks.append(hit[0])
        leaves.append(hit[1])
        labels.append(_labels(labs, prof) if labs else None)

    data = {
        "host": pd.array([host] * len(stacks), dtype="string"),
        "stack": pd.array(stacks, dtype="string"),
        "leaf": pd.array(leaves, dtype="string"),
        "labels": pd.array(labels, dtype="string"),
    }
    frame = coerce(pd.DataFrame(data), SCHEMA)
    for j, col in enumerate(columns):
        frame[col] = values[:, j]

    # Profile-level facts go in attrs: they describe the whole profile, not a sample.
    sc = prof.scalars
    default = s(sc.get(14, 0), "default sample type")
    by_type = {t["type"]: t["column"] for t in types}
    default_column = by_type.get(default, columns[-1]) if default else columns[-1]
    period_type = None
    if prof.period_type is not None:
        period_type = f"{s(prof.period_type[0], 'period type')}/{s(prof.period_type[1], 'period unit')}"
    frame.attrs.update(
        sample_types=types,
        value_columns=columns,
        default_value_column=default_column,
        period=sc.get(12, 0),
        period_type=period_type,
        duration_ns=sc.get(10, 0) or None,
        time=pd.Timestamp(sc[9], unit="ns", tz="UTC") if sc.get(9) else None,
        drop_frames=s(sc.get(7, 0), "drop_frames"),
        keep_frames=s(sc.get(8, 0), "keep_frames"),
        comments=[s(c, "comment") for c in prof.comments],
        dropped_lines=0,
    )
    return frame


def _empty() -> pd.DataFrame:
    """The frame of an empty input: no value columns, nothing known of a profile."""
    frame = empty_frame(SCHEMA)
    frame.attrs.update(
        sample_types=[],
        value_columns=[],
        default_value_column=None,
        period=None,
        period_type=None,
        duration_ns=None,
        time=None,
        drop_frames="",
        keep_frames="",
        comments=[],
        dropped_lines=0,
    )
    return frame


def _value_columns(types: list[dict[str, str]]) -> list[str]:
    """`<type>_<unit>` in snake_case; unique, and never one of the fixed columns."""
    out: list[str] = []
    for i, t in enumerate(types):
        base = "_".join(p for p in (_snake(t["type"]), _snake(t["unit"])) if p) or f"value{i}"
        name, n = base, 2
        while name in out or name in SCHEMA:
            name, n = f"{base}_{n}", n + 1
        out.append(name)
    return out


def _snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _labels(labs: list[_Label], prof: _Profile) -> str:
    parts = []
    for key, sidx, num, unit in labs:
        value = prof.string(sidx, "label value") if sidx else f"{num}{prof.string(unit, 'label unit')}"
        parts.append(f"{prof.string(key, 'label key')}={value}")
    return ",".join(parts)


__all__ = ["SCHEMA", "folded", "parse", "parse_bytes", "sniff", "sniff_bytes", "top"]

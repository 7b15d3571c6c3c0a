"""vmstat: procps `vmstat [-t] [-w] [-n] [-a] INTERVAL [COUNT]`, one run or several in one file.

Reads procps-ng 3.3 and 4.0 output, narrow or wide (`-w`), with or without the `gu` column
(procps 4 prints it in wide mode), with or without `-t` timestamps (`2026-11-22 08:10:06`, wall
clock of the host, in the zone below), with buff/cache or (`-a`) inact/active.

Time zone: with `-t` vmstat prints the zone's abbreviation (`%Z`) above the stamps, on the second
header line, and the stamps are read in it (`_common.printed_zone`): `UTC` and `GMT` exactly,
whatever `tz` says; `tz`, the capturing host's IANA zone, when that is what `tz` prints at the run's
first stamp; else an abbreviation that names one offset (`PDT`: UTC−7, `CET`: UTC+1, the DST state is
in the name) at that offset. One that names several zones (`CST`: China, Cuba or US Central; `IST`)
and is not `tz`'s is a ParseError naming that header line (wrong times are wrong values: pass the
host's zone, e.g. `tz="Asia/Shanghai"` for China's `CST`).

Columns: timestamp (UTC), host, since_boot (the first row of each run is the average since boot),
then vmstat's own names, which every reader knows: r, b (tasks), swpd, free, buff, cache, inact,
active (KiB as vmstat prints by default), si, so, bi, bo (per second), in, cs (per second),
us, sy, id, wa, st, gu (percent of CPU time). A column the run does not print is NA (buff and
cache in a `-a` run, inact and active in any other, gu before procps 4 -w), never 0.
Tested on: tests/fixtures/vmstat/ (see README.md there).

Runs: a file may hold several runs (a script appending `vmstat 1 5` then `vmstat -a 1 5`, or the
same command twice). Each run keeps its own columns for its own rows, and its first row is flagged
since_boot. What the text shows (procps-ng 3.3 and 4.0 vmstat.c): a run prints its header pair, the
since-boot row, then one row per INTERVAL (after `sleep`, so a run's stamps move on by at least a
second), and prints the pair again before sample i when i % height == 0, where height is the rows of
the terminal on stdout minus 3, 21 when stdout is no terminal (a file, a pipe, ssh without a tty:
how captures are taken); never with -n. So a header pair starts a new run when
  - it differs from the run's own (its `procs` line or column names: -a, -w, -t, gu), or
  - it follows a block of other than 21 rows since the run's last header pair (a repeat comes
    after exactly 21), or
  - with -t, the row after it is stamped no later than the row before it.
Otherwise it is vmstat's own repeat and skipped. Undecidable from the text, and read as said:
a run of exactly 21·k rows followed at once by the same command (without -t, or when the next
run's first row falls in a later second: read as one run, its since-boot row a sample); vmstat on
a terminal of another height (a `script` log, a pasted screen) repeats every rows−3 rows, which is
`vmstat 1 rows−3` run again: each screenful's first row is flagged since_boot; `-y` (no since-boot
row) prints the same header: its first row is flagged, and its first repeat, after 20 rows, reads as
a new run; a wall clock set back (DST's end) just across a repeated header reads as a new run.

Fast path (`_parse_regular`, paths and text): a capture that is exactly one run of vmstat's own
output (its first two lines the header, repeats of that same header pair every 21 rows, rows of
digits and blanks ending with a `YYYY-MM-DD HH:MM:SS` stamp that moves on across each repeat, perhaps
one cut-off row at the end) is read in 1 MB blocks: numpy finds the line ends, and so the header
pairs and the rows between them, the pairs are cut out with `bytes.replace`, numpy checks that every
stamp is in place, and the rows go to pandas' C reader with the stamps' `-` and `:` deleted (two
more integers, YYYYMMDD and HHMMSS).
Anything else (blank or foreign lines, a changed header, another run, a malformed row, a minus
sign, CR line ends, an invalid date, a stream) goes to the line walk, which also names the first
bad line.
"""

from __future__ import annotations

import io
import itertools
import os
import re
from collections.abc import Iterator
from datetime import date, timezone
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ._common import FIRST_DATE, PAST_DATE, Lines, Source, coerce, empty_frame, printed_zone, text_column

KIND = "vmstat"
COUNTS = (
    "r",
    "b",
    "swpd",
    "free",
    "buff",
    "cache",
    "inact",
    "active",
    "si",
    "so",
    "bi",
    "bo",
    "in",
    "cs",
    "us",
    "sy",
    "id",
    "wa",
    "st",
    "gu",
)
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "since_boot": "bool",
    **{c: "Int64" for c in COUNTS},
}
_REQUIRED = {"r", "b", "swpd", "free", "si", "so", "bi", "bo", "in", "cs", "us", "sy", "id"}
# vmstat reprints its header pair before every 21st row when stdout is no terminal (module docstring)
_HEADER_EVERY = 21
CHUNK_ROWS = 65536  # sample rows read at once
# Bytes the C reader is trusted on (see _Chunks): anything else goes row by row.
_TRUSTED = b"0123456789 \n:-"
_BLOCK_BYTES = 1 << 20  # read at once by the fast path: bounds memory, amortises each pandas call
# The `-t` stamp with the blank before it, as the last 20 bytes of a row: where its separators and
# digits are.
_STAMP_AT = np.arange(-20, 0)
_NEWLINE = ord("\n")
_STAMP_SEPS = np.array([0, 5, 8, 11, 14, 17])
_STAMP_SEP_BYTES = np.frombuffer(b" -- ::", dtype=np.uint8)
_STAMP_DIGITS = np.array([i for i in range(20) if i not in _STAMP_SEPS])
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_STAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
_FIRST_STAMP, _PAST_STAMP = pd.Timestamp(FIRST_DATE), pd.Timestamp(PAST_DATE)  # wall-clock stamps kept
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# A cut-off last row the line walk drops: digit first, trusted bytes, no token past int64.
_CUT_ROW = re.compile(rb" *[0-9][0-9:-]{0,17}(?: +[0-9:-]{1,18})* *")


def sniff(text: str) -> bool:
    """vmstat output starts with its two header lines."""
    lines = text.lstrip("\n").splitlines()[:2]
    return (
        len(lines) == 2
        and _is_procs(lines[0].split() or [""])  # `procs ---` or procps 4's wide `--procs--`
        and "-memory-" in lines[0]
        and set(lines[1].split()) >= _REQUIRED
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a vmstat capture into one row per sample.

    Args:
        source: path, text stream or string.
        host: host name to put in the `host` column.
        tz: the capturing host's time zone, for `-t` timestamps.

    Raises:
        ParseError: a header that is not vmstat's C-locale header, a malformed row mid-file, or `-t`
            stamps in a zone abbreviation that is neither UTC/GMT nor `tz`'s at the run's start.
    """
    if isinstance(source, str | Path):  # a stream cannot be read twice: it goes line by line
        df = _parse_regular(source, host, tz)
        if df is not None:
            return df
    return _parse_lines(source, host, tz)


def _parse_lines(source: Source, host: str | None, tz: str) -> pd.DataFrame:
    """The line walk: reads every capture the fast path leaves, and names the first bad line."""
    lines = Lines(source, KIND)
    chunks = _Chunks(lines)
    columns: list[str] | None = None
    has_time = False
    unknown: list[str] = []
    width = -1
    pending: tuple[int, str] | None = None  # a malformed row: fatal unless it is the last line
    last_line = 0  # the last non-blank line
    procs: list[str] | None = None  # the last `procs` header line
    run: tuple[list[str] | None, list[str]] | None = None  # the run's header pair (zone left out)
    header_row = 0  # rows before the last header pair
    runs: list[int] = []  # the first row of each run
    maybe: list[int] = []  # rows after a repeat-like header in a -t run: a run if not stamped later
    zones: list[_Zone] = []  # where each printed zone takes effect
    buf, line_nos = chunks.buf, chunks.line_nos
    for line_no, line in lines:
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) == width and tokens[0][-1:].isdigit() and pending is None:  # a sample: the hot path
            if len(buf) >= CHUNK_ROWS:
                chunks.flush(None)  # before this row: a bad buffered row is not the last line
            buf.append(line)
            line_nos.append(line_no)
            last_line = line_no
            continue
        if pending is not None:
            chunks.flush()  # a bad row before the pending one is the first error
            raise lines.error(*pending, "malformed vmstat row")
        last_line = line_no
        if _is_procs(tokens):
            procs, has_time = tokens, _has_time(tokens)
            continue
        if tokens[:2] == ["r", "b"]:
            names = _names(tokens, has_time)
            missing = sorted(_REQUIRED - set(names))
            if missing:
                chunks.flush()
                foreign = _unknown(names)
                raise lines.error(
                    line_no,
                    line,
                    f"vmstat header lacks {', '.join(missing)} (has "
                    f"{', '.join(foreign) or 'nothing else'}): capture not taken under LC_ALL=C",
                )
            unknown += [n for n in _unknown(names) if n not in unknown]
            if has_time and (not zones or zones[-1].printed != tokens[-1]):
                zones.append(_Zone(chunks.rows, line_no, line, tokens[-1]))
            if names != columns or width != len(names) + (2 if has_time else 0):
                chunks.flush()  # rows so far have the old layout
            columns = names
            width = len(columns) + (2 if has_time else 0)
            chunks.layout(columns, has_time)
            row = chunks.rows
            if (procs, names) != run or row - header_row != _HEADER_EVERY:  # the module docstring's rule
                runs.append(row)
                run = (procs, names)
            elif has_time:
                maybe.append(row)
            header_row = row
            continue
        if columns is None:
            raise lines.error(
                line_no, line, "not a vmstat capture (no C-locale vmstat header before the data)"
            )
        if len(tokens) != width or not _all_ints(tokens[: len(columns)]):
            pending = (line_no, line)
            continue
        chunks.add(line_no, line)
    dropped = 0
    if pending is not None:
        chunks.flush()
        dropped = 1
    else:
        dropped = chunks.flush(last_line)  # a malformed last row is dropped, not fatal
        if not dropped and chunks.rows and not lines.last_complete:
            chunks.pop()  # cut mid-write: the last row may be a prefix of itself
            dropped = 1
    if columns is None or not chunks.rows:
        df = empty_frame(SCHEMA)
        df.attrs.update(dropped_lines=dropped, unknown_columns=unknown)
        return df
    n = chunks.rows
    data: dict[str, object] = chunks.columns(n)
    data["host"] = pd.array([host] * n, dtype="string")
    since_boot = np.zeros(n, dtype=bool)
    since_boot[[k for k in runs if k < n]] = True
    if any(timed for _, timed in chunks.layouts):
        stamps = chunks.stamps()  # naive wall clock, as printed
        since_boot[[k for k in maybe if k < n and stamps[k] <= stamps[k - 1]]] = True
        data["timestamp"] = _utc(stamps, zones, tz, lines)
    data["since_boot"] = since_boot
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(dropped_lines=dropped, unknown_columns=unknown)
    return df


class _Zone(NamedTuple):
    """A `-t` header's zone abbreviation, from the row after that header (`row`) on."""

    row: int
    line_no: int
    line: str
    printed: str


def _zone_name(zone: _Zone, tz: str, first: pd.Timestamp, lines: Lines) -> str | timezone:
    """The zone a run's stamps are read in (module docstring, `_common.printed_zone`); a ParseError
    naming the header for an abbreviation that names several zones and is not `tz`'s."""
    if pd.isna(first):
        return tz
    found = printed_zone(zone.printed, tz, first.to_pydatetime())
    if found is not None:
        return found
    raise lines.error(
        zone.line_no,
        zone.line,
        f"vmstat -t stamps are in {zone.printed}, which names several zones, and the time zone given "
        f"({tz}) is not one of them at {first}: pass the capturing host's IANA zone (--tz)",
    )


def _utc(naive: pd.Series, zones: list[_Zone], tz: str, lines: Lines) -> pd.Series:
    """Naive wall-clock stamps -> UTC, each run's rows in the zone its header printed (rows before the
    first `-t` header have no stamp: any zone leaves them NaT)."""
    n = len(naive)
    zones = [z for z in zones if z.row < n]
    names = [_zone_name(z, tz, naive.iloc[z.row], lines) for z in zones] or [tz]
    if len(set(names)) == 1:
        return naive.dt.tz_localize(names[0], ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
    cuts = [0, *(z.row for z in zones[1:]), n]
    pieces = [
        naive.iloc[a:b].dt.tz_localize(name, ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
        for name, a, b in zip(names, cuts, cuts[1:], strict=False)
    ]
    return pd.concat(pieces, ignore_index=True)


def _is_procs(tokens: list[str]) -> bool:
    """The first header line (`procs -----memory----- ...`)."""
    return tokens[0] == "procs" or tokens[0].startswith("--procs")


def _has_time(procs: list[str]) -> bool:
    # The last dash group names the timestamp column (translated under other locales).
    return procs[-1].strip("-") not in ("cpu", "")


def _names(header: list[str], has_time: bool) -> list[str]:
    # With -t the second header line ends with the zone abbreviation (UTC, CST, ...).
    return header[:-1] if has_time else header


def _unknown(names: list[str]) -> list[str]:
    return [n for n in names if n not in COUNTS]


def _counts_at(names: list[str]) -> dict[str, int]:
    """Schema column -> printed column (the last one if a name repeats)."""
    return {name: i for i, name in enumerate(names) if name in COUNTS}


def _parse_regular(source: str | Path, host: str | None, tz: str) -> pd.DataFrame | None:
    """The fast path (module docstring); None when the capture is not that regular.

    Every line it accepts is one the line walk reads the same way: the header lines are the first two
    lines byte for byte, every other line is a row of trusted bytes (see `_Chunks`) that pandas reads
    as `width` int64 fields, with a valid stamp in place.
    """
    is_path = Lines(source, KIND).path is not None
    blocks = _line_blocks(source, is_path)
    try:
        first = next(blocks, b"")
        parts = first.split(b"\n", 2)
        if len(parts) < 3:
            return None
        layout = _regular_layout(parts[0], parts[1])
        if layout is None:
            return None
        names, has_time = layout
        ncols = len(names)
        at = _counts_at(names)
        # room for as many rows as the source can hold (a row has at least one digit and a blank
        # per value): pages never written take no memory, and the arrays are trimmed at the end
        size = os.path.getsize(source) if is_path else len(source)
        cap = size // (2 * ncols + (20 if has_time else 0)) + 1
        out = {name: np.empty(cap, dtype=np.int64) for name in at}
        stamps = np.empty(cap, dtype=np.int64)
        procs = parts[0] + b"\n"
        head = procs + parts[1] + b"\n"  # the header pair, at the start of a block
        n = 0
        since = 0  # rows since the last header pair: vmstat repeats it after _HEADER_EVERY
        last_header = 0  # rows before the last header pair
        tail = b""  # a cut-off last line
        held = b""  # a `procs` line that ended a block: it goes with the header line in the next
        for data in itertools.chain([first[len(head) :]], blocks):
            if held:
                data, held = held + data, b""
            if not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                data, tail = data[:cut], data[cut:]
            elif data == procs or data.endswith(b"\n" + procs):
                data, held = data[: -len(procs)], procs
            # where the header pairs are, by line: a `procs` line is the only one starting with its byte
            # (a row starts with a blank or a digit; a `-` one is no repeat, see the byte count below)
            buf = np.frombuffer(data, dtype=np.uint8)
            ends = np.flatnonzero(buf == _NEWLINE)  # the data ends with a line end
            heads = np.flatnonzero(buf[ends[:-1] + 1] == procs[0]) + 1
            if data[:1] == procs[:1]:
                heads = np.insert(heads, 0, 0)
            if len(heads):
                if heads[-1] + 1 >= len(ends):
                    return None
                if since + heads[0] != _HEADER_EVERY or (np.diff(heads) != _HEADER_EVERY + 2).any():
                    return None  # a header pair that is no repeat of vmstat's: another run
                last_header = n + int(heads[0]) + _HEADER_EVERY * (len(heads) - 1)
                since = len(ends) - int(heads[-1]) - 2
            else:
                since += len(ends)
            body = data.replace(b"\n" + head, b"\n")
            if body.startswith(head):
                body = body[len(head) :]
            if len(data) - len(body) != len(head) * len(heads):
                return None  # a line taken for a header pair above that is none
            if not body:  # nothing but header pairs
                continue
            rows_at = None
            if has_time:  # the rows' line ends in `data`, for the stamp checks
                keep = np.ones(len(ends), dtype=bool)
                keep[heads] = keep[heads + 1] = False
                rows_at = (buf, ends[keep], np.diff(ends, prepend=-1)[keep])
            got = _read_block(body, ncols, rows_at)
            if got is None:
                return None
            values, when = got
            end = n + len(values)
            for name, i in at.items():
                out[name][n:end] = values[:, i]
            if has_time:
                stamps[n:end] = when
            n = end
    except OSError:
        return None  # the line walk says why the source cannot be read
    if n == 0 or held or (tail and not _CUT_ROW.fullmatch(tail)):
        return None
    for arr in (*out.values(), stamps):
        arr.resize(n, refcheck=False)  # no views of these arrays exist yet
    if has_time:
        # rows after a repeat (every 21st): one stamped no later than the row before starts a new run
        after = np.arange(_HEADER_EVERY, min(last_header, n - 1) + 1, _HEADER_EVERY)
        if (stamps[after] <= stamps[after - 1]).any():
            return None
        naive = pd.DatetimeIndex(stamps.view("M8[ns]"), copy=False)
        header = parts[1].decode()
        zone = _Zone(0, 2, header, header.split()[-1])
        name = _zone_name(zone, tz, naive[0], Lines(source, KIND))
        timestamp = naive.tz_localize(name, ambiguous="NaT", nonexistent="NaT").tz_convert("UTC").array
    else:
        timestamp = pd.array(np.full(n, np.datetime64("NaT"), dtype="M8[ns]"), dtype=SCHEMA["timestamp"])
    since_boot = np.zeros(n, dtype=bool)
    since_boot[0] = True
    data: dict[str, object] = {
        "timestamp": timestamp,
        "host": text_column([host], np.zeros(n, dtype=np.intp)),
        "since_boot": since_boot,
    }
    for name in COUNTS:
        if name in out:
            data[name] = pd.arrays.IntegerArray(out[name], np.zeros(n, dtype=bool))
        else:
            data[name] = pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
    df = pd.DataFrame(data, copy=False)
    # a cut-off last row: the line walk drops it and counts it
    df.attrs.update(dropped_lines=1 if tail else 0, unknown_columns=_unknown(names))
    return df


def _line_blocks(source: str | Path, is_path: bool) -> Iterator[bytes]:
    """The source in blocks of whole lines (the last may end in a cut-off line). A block is completed
    to its line end by reading on, not cut there: a copy to cut it costs as much as reading it."""
    if is_path:
        with open(source, "rb") as fh:
            while data := fh.read(_BLOCK_BYTES):
                yield data + fh.readline()
    else:
        text = str(source)
        start = 0
        while start < len(text):
            stop = text.find("\n", start + _BLOCK_BYTES) + 1 or len(text)
            yield text[start:stop].encode("utf-8", "surrogatepass")
            start = stop


def _regular_layout(procs: bytes, header: bytes) -> tuple[list[str], bool] | None:
    """(column names, has_time) of a header pair the line walk accepts; None for any other."""
    try:
        p, h = procs.decode().split(), header.decode().split()
    except UnicodeDecodeError:
        return None
    if b"\r" in procs + header or not p or not _is_procs(p) or h[:2] != ["r", "b"]:
        return None
    has_time = _has_time(p)
    names = _names(h, has_time)
    if _REQUIRED - set(names):
        return None
    return names, has_time


def _read_block(
    body: bytes, ncols: int, rows_at: tuple[np.ndarray, np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """Rows of a block (whole lines) -> (int64 matrix, naive stamps in ns); None when any row is not
    plainly `ncols` integers (and a stamp, with `rows_at`: see `_stamped_rows`)."""
    has_time = rows_at is not None
    width = ncols + (2 if has_time else 0)
    if len(body[: body.index(b"\n")].split()) != width:
        return None  # with sep=" " pandas would cut a first row with too many fields
    if rows_at is not None:
        rows = _stamped_rows(body, *rows_at)
        if rows is None:
            return None
        body = body.translate(None, b"-:")  # the stamp as two integers, YYYYMMDD and HHMMSS
    else:
        if body.translate(None, _TRUSTED):
            return None
        rows = body.count(b"\n")
    try:
        frame = pd.read_csv(
            io.BytesIO(body),
            sep=" ",
            skipinitialspace=True,
            header=None,
            names=range(width),
            na_filter=False,
            low_memory=False,  # one pass: no per-column concatenation of internal chunks
            engine="c",
        )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal goes to the line walk, which names the bad row
        return None
    if len(frame) != rows or any(dtype != np.int64 for dtype in frame.dtypes):
        return None
    values = frame.to_numpy()
    if not has_time:
        return values, None
    when = _stamps(values[:, ncols], values[:, ncols + 1])
    return None if when is None else (values[:, :ncols], when)


def _stamped_rows(body: bytes, buf: np.ndarray, ends: np.ndarray, lengths: np.ndarray) -> int | None:
    """How many rows a block has when each is digits and blanks ending with ` YYYY-MM-DD HH:MM:SS`
    (the block's only `-` and `:`: deleting them leaves every other token whole); else None. The
    stamps are read where the rows are in the block as read (`buf`, the rows' line `ends` there and
    their `lengths`): the line ends were found there once, for the header pairs too."""
    marks = body.translate(None, b"0123456789 ")
    rows = len(marks) // 5
    if marks != b"--::\n" * rows or rows != len(ends):
        return None
    if lengths.min() < 22:  # a line too short to hold a number and a stamp
        return None
    text = buf[ends[:, None] + _STAMP_AT]
    digits = text[:, _STAMP_DIGITS] - ord("0")  # uint8: a byte below "0" wraps past 9
    if not ((text[:, _STAMP_SEPS] == _STAMP_SEP_BYTES).all() and (digits < 10).all()):
        return None
    return rows


def _stamps(dates: np.ndarray, clocks: np.ndarray) -> np.ndarray | None:
    """Stamps read as YYYYMMDD and HHMMSS -> naive ns; None unless every stamp is one that
    `pd.to_datetime(format="%Y-%m-%d %H:%M:%S")` reads to the same instant (no NaT, in range)."""
    hour, minute, second = clocks // 10000, clocks // 100 % 100, clocks % 100
    if hour.max() > 23 or minute.max() > 59 or second.max() > 59:
        return None
    starts = np.flatnonzero(np.diff(dates, prepend=-1))  # runs of one date: a date is looked up once
    try:
        ordinals = [date(d // 10000, d // 100 % 100, d % 100).toordinal() for d in dates[starts].tolist()]
    except ValueError:  # not a date (month 13, February 30, year 0)
        return None
    if dates.min() < 1970_00_00 or dates.max() >= 2200_00_00:  # the ns range (to 2262) with room
        return None
    epoch_days = np.repeat(
        np.array(ordinals, dtype=np.int64) - _EPOCH_DAY, np.diff(starts, append=len(dates))
    )
    return (((epoch_days * 24 + hour) * 60 + minute) * 60 + second) * 1_000_000_000


class _Chunks:
    """Sample rows, buffered as text and handed to pandas' C reader per layout or CHUNK_ROWS rows.

    The reader is trusted only on text of digits, `-`, `:`, blanks and line ends, where its
    integers are exactly the `-?digits` tokens `_all_ints` accepts (anything else fails the
    int64 check); other text goes row by row, as before.
    """

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.names: list[str] = []
        self.ncols = 0
        self.has_time = False
        self.buf: list[str] = []
        self.line_nos: list[int] = []
        self.parts: list[np.ndarray] = []
        self.stamp_parts: list[pd.Series] = []  # naive wall-clock times, NaT where unreadable
        self.layouts: list[tuple[list[str], bool]] = []  # each part's columns and -t

    def layout(self, names: list[str], has_time: bool) -> None:
        self.names, self.ncols, self.has_time = names, len(names), has_time

    def add(self, line_no: int, line: str) -> None:
        if len(self.buf) >= CHUNK_ROWS:
            self.flush(None)  # before this row: a bad buffered row is not the last line
        self.buf.append(line)
        self.line_nos.append(line_no)

    def pop(self) -> None:
        if not self.buf:  # the last row was flushed already (a full chunk): take it back
            numbers, stamps = self.parts.pop(), self.stamp_parts.pop()
            self.parts.append(numbers[:-1])
            self.stamp_parts.append(stamps.iloc[:-1])
        else:
            self.buf.pop()
            self.line_nos.pop()

    @property
    def rows(self) -> int:
        """Rows kept so far, flushed or not."""
        return len(self.buf) + sum(len(p) for p in self.parts)

    def flush(self, last_line: int | None = 0) -> int:
        """Convert the buffered rows; a malformed one raises, or is dropped (returns 1) when it is
        the file's last non-blank line (`last_line`)."""
        buf = self.buf
        if not buf:
            return 0
        width = self.ncols + (2 if self.has_time else 0)
        got = _read(buf, self.ncols, width)
        if got is not None:
            numbers, when = got[0], self._when(got[1])
            if self._bad_times(when).any():
                got = None  # the row walk below names the row
        dropped = 0
        if got is None:
            tokens = [ln.split() for ln in buf]
            when = self._when(pd.Series([" ".join(t[self.ncols :]) for t in tokens], dtype=object))
            bad_time = self._bad_times(when)
            bad = next(
                (
                    i
                    for i, t in enumerate(tokens)
                    if bad_time[i] or len(t) != width or not _all_ints(t[: self.ncols])
                ),
                None,
            )
            if bad is not None:
                line_no = self.line_nos[bad]
                if line_no != last_line:
                    malformed = len(tokens[bad]) != width or not _all_ints(tokens[bad][: self.ncols])
                    reason = (
                        "malformed vmstat row"
                        if malformed
                        else f"timestamp {' '.join(tokens[bad][self.ncols :])!r} is no date and time "
                        "(YYYY-MM-DD HH:MM:SS) in 1678-2261"
                    )
                    raise self.lines.error(line_no, buf[bad], reason)
                del buf[bad], self.line_nos[bad], tokens[bad]  # the last line: dropped
                when = when.drop(index=when.index[bad]).reset_index(drop=True)
                dropped = 1
            numbers = np.array([t[: self.ncols] for t in tokens], dtype=np.int64).reshape(
                len(buf), self.ncols
            )
        self.parts.append(numbers)
        self.stamp_parts.append(when)
        self.layouts.append((self.names, self.has_time))
        buf.clear()
        self.line_nos.clear()
        return dropped

    def _bad_times(self, when: pd.Series) -> np.ndarray:
        """Rows whose stamp is no time (`2026-13-22`: NaT, which would pass for a missing value) or
        one the frame cannot hold; none without `-t`."""
        if not self.has_time:
            return np.zeros(len(when), dtype=bool)
        return (when.isna() | (when < _FIRST_STAMP) | (when >= _PAST_STAMP)).to_numpy()

    def _when(self, stamps: pd.Series) -> pd.Series:
        """Stamp texts -> naive times (NaT for a text that is no stamp); all NaT without `-t`."""
        if not self.has_time:
            return pd.Series(np.full(len(stamps), np.datetime64("NaT"), dtype="M8[ns]"))
        return pd.to_datetime(stamps, format=_STAMP_FORMAT, errors="coerce")

    def columns(self, n: int) -> dict[str, object]:
        """Every count column over the `n` rows kept, each part's values in its own rows and NA where
        its run did not print that column (a run's layout holds for its rows only)."""
        values = {name: np.zeros(n, dtype=np.int64) for name in COUNTS}
        missing = {name: np.ones(n, dtype=bool) for name in COUNTS}
        start = 0
        for numbers, (names, _) in zip(self.parts, self.layouts, strict=True):
            end = start + len(numbers)
            for name, i in _counts_at(names).items():
                values[name][start:end] = numbers[:, i]
                missing[name][start:end] = False
            start = end
        return {name: pd.arrays.IntegerArray(values[name], missing[name]) for name in COUNTS}

    def stamps(self) -> pd.Series:
        return pd.concat(self.stamp_parts, ignore_index=True)


def _read(buf: list[str], ncols: int, width: int) -> tuple[np.ndarray, pd.Series] | None:
    """Rows -> (int64 matrix, stamp texts) by pandas' C reader; None when it cannot be trusted."""
    data = "\n".join(buf).encode("utf-8", "replace")  # "?" for a lone surrogate: not trusted
    if data.translate(None, _TRUSTED):  # a byte that is none of these
        return None
    try:
        df = pd.read_csv(
            io.BytesIO(data),
            sep=" ",
            skipinitialspace=True,  # vmstat aligns with runs of blanks, from the line start
            header=None,
            names=range(width),
            dtype={i: str for i in range(ncols, width)},
            engine="c",
        )
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any refusal goes row by row, which names the bad row
        return None
    if len(df) != len(buf) or any(df[i].dtype != np.int64 for i in range(ncols)) or df.isna().any().any():
        return None
    numbers = df.iloc[:, :ncols].to_numpy(dtype=np.int64)
    if width > ncols:
        stamps = df[ncols].astype(object) + " " + df[ncols + 1].astype(object)
    else:
        stamps = pd.Series([""] * len(buf), dtype=object)
    return numbers, stamps


def _all_ints(tokens: list[str]) -> bool:
    """Tokens that are `-?digits` (ASCII: `str.isdigit` takes `²`, which `int` refuses) and fit int64: a
    longer one would overflow the int64 column, so it is a malformed row like any other, named (or
    dropped as the cut last line) instead of escaping."""
    return all(
        t.isascii()
        and (t.isdigit() or (t[:1] == "-" and t[1:].isdigit()))
        and (len(t) < 19 or _INT64_MIN <= int(t) <= _INT64_MAX)
        for t in tokens
    )

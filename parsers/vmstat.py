"""vmstat: procps `vmstat [-t] [-w] [-n] INTERVAL [COUNT]`.

Reads procps-ng 3.3 and 4.0 output, narrow or wide (`-w`), with or without the `gu` column
(procps 4 prints it in wide mode), with or without `-t` timestamps (`2026-11-22 08:10:06`, wall
clock of the host: the zone on the second header line is only an abbreviation, so the zone comes
from `tz`). The header may repeat every screenful; repeats are skipped.

Columns: timestamp (UTC), host, since_boot (the first row after the first header is the average
since boot), then vmstat's own names, which every reader knows: r, b (tasks), swpd, free, buff,
cache (KiB as vmstat prints by default), si, so, bi, bo (per second), in, cs (per second),
us, sy, id, wa, st, gu (percent of CPU time). A column the version does not print is NA.
Tested on: tests/fixtures/vmstat/ (see README.md there).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ._common import Lines, Source, coerce, empty_frame

KIND = "vmstat"
COUNTS = (
    "r",
    "b",
    "swpd",
    "free",
    "buff",
    "cache",
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
# `vmstat -a` prints inact/active instead of buff/cache: known, not in the schema.
_KNOWN_EXTRA = {"inact", "active"}
CHUNK_ROWS = 65536  # sample rows read at once
# Bytes the C reader is trusted on (see _Chunks): anything else goes row by row.
_TRUSTED = b"0123456789 \n:-"


def sniff(text: str) -> bool:
    """vmstat output starts with its two header lines."""
    lines = text.lstrip("\n").splitlines()[:2]
    return (
        len(lines) == 2
        and lines[0].lstrip().startswith("procs")
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
        ParseError: a header that is not vmstat's C-locale header, or a malformed row mid-file.
    """
    lines = Lines(source, KIND)
    chunks = _Chunks(lines)
    columns: list[str] | None = None
    has_time = False
    unknown: list[str] = []
    width = -1
    pending: tuple[int, str] | None = None  # a malformed row: fatal unless it is the last line
    last_line = 0  # the last non-blank line
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
        if tokens[0] == "procs" or tokens[0].startswith("--procs"):
            # The last dash group names the timestamp column (translated under other locales).
            has_time = tokens[-1].strip("-") not in ("cpu", "")
            continue
        if tokens[:2] == ["r", "b"]:
            # With -t the second header line ends with the zone abbreviation (UTC, CST, ...).
            names = tokens[:-1] if has_time else tokens
            missing = sorted(_REQUIRED - set(names))
            if missing:
                chunks.flush()
                foreign = [n for n in names if n not in COUNTS and n not in _KNOWN_EXTRA]
                raise lines.error(
                    line_no,
                    line,
                    f"vmstat header lacks {', '.join(missing)} (has "
                    f"{', '.join(foreign) or 'nothing else'}): capture not taken under LC_ALL=C",
                )
            if columns is None:
                unknown = [n for n in names if n not in COUNTS and n not in _KNOWN_EXTRA]
            if names != columns or width != len(names) + (2 if has_time else 0):
                chunks.flush()  # rows so far have the old layout
            columns = names
            width = len(columns) + (2 if has_time else 0)
            chunks.layout(len(columns), has_time)
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
    arr = chunks.numbers()
    n = len(arr)
    data: dict[str, object] = {name: arr[:, i] for i, name in enumerate(columns) if name in COUNTS}
    data["host"] = pd.array([host] * n, dtype="string")
    data["since_boot"] = np.arange(n) == 0
    if has_time:
        data["timestamp"] = (
            pd.to_datetime(chunks.stamps(), format="%Y-%m-%d %H:%M:%S", errors="coerce")
            .dt.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
            .dt.tz_convert("UTC")
        )
    df = coerce(pd.DataFrame(data), SCHEMA)
    df.attrs.update(dropped_lines=dropped, unknown_columns=unknown)
    return df


class _Chunks:
    """Sample rows, buffered as text and handed to pandas' C reader per layout or CHUNK_ROWS rows.

    The reader is trusted only on text of digits, `-`, `:`, blanks and line ends, where its
    integers are exactly the `-?digits` tokens `_all_ints` accepts (anything else fails the
    int64 check); other text goes row by row, as before.
    """

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.ncols = 0
        self.has_time = False
        self.buf: list[str] = []
        self.line_nos: list[int] = []
        self.parts: list[np.ndarray] = []
        self.stamp_parts: list[pd.Series] = []

    def layout(self, ncols: int, has_time: bool) -> None:
        self.ncols, self.has_time = ncols, has_time

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
        if got is None:
            bad = next(
                (
                    i
                    for i, ln in enumerate(buf)
                    if (t := ln.split()) and (len(t) != width or not _all_ints(t[: self.ncols]))
                ),
                None,
            )
            dropped = 0
            if bad is not None:
                line_no = self.line_nos[bad]
                if line_no != last_line:
                    raise self.lines.error(line_no, buf[bad], "malformed vmstat row")
                del buf[bad], self.line_nos[bad]  # the last line: dropped
                dropped = 1
            tokens = [ln.split() for ln in buf]
            numbers = np.array([t[: self.ncols] for t in tokens], dtype=np.int64).reshape(
                len(buf), self.ncols
            )
            stamps = pd.Series([" ".join(t[self.ncols :]) for t in tokens], dtype=object)
            got = numbers, stamps
        else:
            dropped = 0
        self.parts.append(got[0])
        self.stamp_parts.append(got[1])
        buf.clear()
        self.line_nos.clear()
        return dropped

    def numbers(self) -> np.ndarray:
        return np.concatenate(self.parts)

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
    return all(t.isdigit() or (t[:1] == "-" and t[1:].isdigit()) for t in tokens)

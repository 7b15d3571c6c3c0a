"""What sysstat's time-only reports share (mpstat, pidstat, sar): the `Linux` banner and its date,
time labels (ISO, C, 12-hour, zh_CN `时分秒`, epoch seconds), the `Average:` labels of each locale,
the decimal mark a slash date forbids, the date rolling over at midnight, and the timestamps.

The rows themselves are read by the table engine (parsers/_table.py); `label_seconds` and
`stamp_rows` turn a `Block`'s labels into times vectorised, one `label()` per distinct label.
"""

from __future__ import annotations

import re
from array import array
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common
from ._table import Numbers, Table

_NAT = np.iinfo(np.int64).min
_BANNER = re.compile(r"^Linux\s+\S+\s+\(([^)]*)\)\s+(\S+)")
_BANNER_CPUS = re.compile(r"\((\d{1,6}) CPU\)\s*$")  # not translated in any locale sysstat ships
_AMPM = re.compile(r"^[AaPp]\.?[Mm]\.?$")
_AVERAGE_LABELS = frozenset({"Average:", "Durchschn.:", "平均时间:"})
_ROLLOVER_S = 3600  # a clock going back by more than this is the next day; less is a clock step
_LOCALE_HINT = "capture not taken under LC_ALL=C"
_COMMA_WITH_SLASH = f"decimal comma with a slash date (day/month order unknown): {_LOCALE_HINT}"


def banner_cpus(line: str) -> int | None:
    """The CPU count a sysstat banner ends with (`... _x86_64_ (2 CPU)`: the CPUs online when the
    capture started), or None."""
    m = _BANNER_CPUS.search(line)
    return int(m[1]) or None if m else None


class Sysstat:
    """Banner, time labels, timestamps and decimal mark of one time-only sysstat capture.

    `label()` splits a row's leading time (or `Average:` label) off; `stamp()` turns a row's time of
    day into UTC nanoseconds, rolling the banner's date over at midnight; `numbers` (the table
    engine's) holds the decimal mark the file uses (decided by the first value with a fraction).
    """

    host: str | None = None  # the `host` argument: `host_name()` prefers it to the banner's
    table: Table  # the table engine reading the capture, made by the format

    def __init__(self, kind: str, source: _common.Source, tz: str):
        self.lines = _common.Lines(source, kind)  # for errors before the walk; the walk's own replaces it
        try:
            ZoneInfo(tz)
        except (ValueError, KeyError, OSError) as exc:
            raise ParseError(kind, self.lines.path, 0, "", f"unknown time zone {tz!r} ({exc})") from None
        self.tz = tz
        self.banner_host: str | None = None
        self.banner_cpus: int | None = None
        self.date: date | None = None
        self.day = 0
        self.prev_sod: int | None = None
        self.numbers = Numbers()  # the decimal mark: the table engine's, which reads the rows
        self.notes: list[str] = []
        self.dropped = 0
        self._stamps: dict[tuple[int, int], int] = {}
        self._no_date_noted = False
        self._sods: dict[tuple[str, ...], int] = {}  # time label -> seconds since midnight
        # seconds since the epoch as labels (`1646859134`: pidstat -h in older sysstat, `-U`): a
        # format turns them on; kept as seconds after the first one's UTC midnight, UTC whatever `tz`
        self.epoch_labels = False
        self.epoch_day: int | None = None

    def error(self, line_no: int, line: str, reason: str) -> ParseError:
        return self.lines.error(line_no, line, reason)

    def host_name(self) -> str | None:
        return self.host if self.host is not None else self.banner_host

    def read(self) -> None:
        """Run the table engine (`self.table`, the format's) over the capture; a last line cut off
        mid-write is dropped (`cut_last`)."""
        self.table.run()
        self.lines = self.table.lines
        if self.table.cut is not None:
            self.cut_last(*self.table.cut, self.lines)

    def banner(self, line_no: int, line: str) -> bool:
        """Read a `Linux ... (host) DATE ...` banner; False if the line is none."""
        m = _BANNER.match(line)
        if m is None:
            return False
        day = _common.parse_date(m[2])
        if day is None:
            raise self.error(line_no, line, f"unreadable date {m[2]!r} in the banner ({_LOCALE_HINT}?)")
        if not _common.FIRST_DATE <= day < _common.PAST_DATE:  # int64 ns stamps would wrap: wrong times
            raise self.error(line_no, line, f"banner date {day.isoformat()} outside 1678-2261")
        self.banner_host = m[1] or None
        self.banner_cpus = banner_cpus(line) or self.banner_cpus
        self.date = day
        slash_date = "/" in m[2]
        self.numbers.comma_refusal = _COMMA_WITH_SLASH if slash_date else None
        if slash_date and self.numbers.decimal == ",":
            raise self.error(line_no, line, _COMMA_WITH_SLASH)
        self.day, self.prev_sod = 0, None  # a new capture starts here
        self._stamps.clear()
        return True

    def label(self, line_no: int, line: str, tokens: list[str]) -> tuple[int | None, int]:
        """(seconds since midnight, or None for an `Average:` label; how many tokens the label takes)."""
        first = tokens[0]
        if first in _AVERAGE_LABELS:
            return None, 1
        if self.epoch_labels and first.isdigit() and 9 <= len(first) <= 11:
            seconds = int(first)
            if self.epoch_day is None:
                self.epoch_day = seconds // 86400
            return seconds - self.epoch_day * 86400, 1
        key = (first, tokens[1]) if len(tokens) > 1 and _AMPM.match(tokens[1]) else (first,)
        sod = self._sods.get(key)  # headers and rows repeat each clock
        if sod is not None:
            return sod, len(key)
        clock = _common.parse_clock(" ".join(key))
        if clock is None:
            hint = f" ({_LOCALE_HINT}?)" if first.endswith(":") else ""
            raise self.error(line_no, line, f"line starts with neither a time nor an Average label{hint}")
        sod = self._sods[key] = clock[0] * 3600 + clock[1] * 60 + clock[2]
        return sod, len(key)

    def stamp(self, line_no: int, sod: int) -> int:
        """UTC nanoseconds of a data row printed at `sod` seconds after midnight (NaT without a date)."""
        if self.epoch_day is not None:  # epoch labels: UTC already, no date roll-over to follow
            self.prev_sod = sod
            return (self.epoch_day * 86400 + sod) * 1_000_000_000
        prev = self.prev_sod
        if prev is not None and sod < prev:
            if prev - sod > _ROLLOVER_S:
                self.day += 1
                if self.date is not None and self.day >= (_common.PAST_DATE - self.date).days:
                    raise self.error(
                        line_no, "", "midnight rolls the date past 2261 (datetime64[ns] ends in 2262)"
                    )
            else:
                self.notes.append(
                    f"line {line_no}: clock went back {prev - sod} s (clock step), kept as printed"
                )
        self.prev_sod = sod
        if self.date is None:
            if not self._no_date_noted:
                self._no_date_noted = True
                self.notes.append("no `Linux ...` banner before the rows: no date, timestamps are NaT")
            return _NAT
        key = (self.day, sod)
        ns = self._stamps.get(key)
        if ns is None:
            naive = datetime(self.date.year, self.date.month, self.date.day) + timedelta(
                days=self.day, seconds=sod
            )
            ns = _common.to_utc(naive, self.tz).value
            self._stamps[key] = ns
        return ns

    def stamp_rows(self, line_nos: np.ndarray, sods: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(UTC ns, sod + 86400 × day) of each row, as `stamp()` row by row would give them.

        `stamp()` only changes state where the time changes, so only runs of equal times count; a
        chunk without clock steps (the usual) is stamped with numpy, else run by run with `stamp()`.
        """
        n = len(sods)
        starts = np.flatnonzero(np.concatenate(([True], sods[1:] != sods[:-1])))
        counts = np.diff(np.append(starts, n))
        at = sods[starts]
        prev = np.concatenate(([at[0] if self.prev_sod is None else self.prev_sod], at[:-1]))
        back = at < prev
        steps = back & (prev - at <= _ROLLOVER_S)
        late = self.date is not None and self.day + int(back.sum()) >= (_common.PAST_DATE - self.date).days
        if self.date is None or steps.any() or late or self.epoch_day is not None:  # `stamp()` notes each
            # step and names a late row; epoch labels are stamped by it too
            ns_at = np.empty(len(starts), dtype=np.int64)
            day_at = np.empty(len(starts), dtype=np.int64)
            for k, i in enumerate(starts.tolist()):
                ns_at[k] = self.stamp(int(line_nos[i]), int(sods[i]))
                day_at[k] = self.day
        else:
            day_at = self.day + np.cumsum(back)
            self.day, self.prev_sod = int(day_at[-1]), int(at[-1])
            ns_at = self._utc_ns(day_at, at)
        return np.repeat(ns_at, counts), np.repeat(at + 86400 * day_at, counts)

    def _utc_ns(self, days: np.ndarray, sods: np.ndarray) -> np.ndarray:
        """UTC ns of wall-clock times `days` after the banner's date plus `sods` seconds, as `stamp()`
        gives them (`_common.wall_utc`: a time skipped or repeated at a DST change as `to_utc` reads it)."""
        assert self.date is not None
        midnight = int(np.datetime64(self.date, "s").astype(np.int64))
        seconds = midnight + np.asarray(days, dtype=np.int64) * 86400 + np.asarray(sods, dtype=np.int64)
        return seconds * 1_000_000_000 if self.tz == "UTC" else _common.wall_utc(seconds, self.tz)

    def label_seconds(self, label: pd.Categorical, line_nos: np.ndarray) -> np.ndarray:
        """Seconds since midnight of each row from its time label (`Block.label`): numpy for the
        `HH:MM:SS` clocks, `label()` once per other distinct label; one that is no time is a
        ParseError naming the first row holding it."""
        texts = label.categories.tolist()
        joined = "".join(texts)
        if len(joined) == 8 * len(texts) and joined.isascii():  # only `HH:MM:SS`, the usual: numpy alone
            ok, sods = iso_clocks(joined)
            if ok.all():
                return sods[label.codes]
        cats = [tuple(c.split()) for c in texts]
        # the other `HH:MM:SS` clocks by numpy too (a day holds 86,400), the other forms by `label()`
        plain = [
            t[0] for t in cats if len(t) == 1 and len(t[0]) == 8 and t[0].isascii() and t not in self._sods
        ]
        ok, plain_sods = iso_clocks("".join(plain))
        for k in np.flatnonzero(ok).tolist():
            self._sods[(plain[k],)] = int(plain_sods[k])
        sods = np.empty(len(cats), dtype=np.int64)
        first: np.ndarray | None = None
        for k, tokens in enumerate(cats):
            sod = self._sods.get(tokens)
            if sod is None:
                if first is None:  # the first row of each label
                    first = np.full(len(cats), len(label), dtype=np.int64)
                    np.minimum.at(first, label.codes, np.arange(len(label)))
                line_no, text = int(line_nos[first[k]]), " ".join(tokens)
                sod, used = self.label(line_no, text, list(tokens))
                if sod is None or used != len(tokens):
                    raise self.error(line_no, text, "a row's time label is not a time")
            sods[k] = sod
        return sods[label.codes]

    def cut_last(self, line_no: int, line: str, lines: _common.Lines) -> None:
        """A last line without its newline was cut mid-write: its numbers may be cut too. Drop it."""
        self.dropped += 1


def iso_clocks(joined: str) -> tuple[np.ndarray, np.ndarray]:
    """ASCII texts of 8 characters each, joined -> (which are `HH:MM:SS` clocks `parse_clock` accepts,
    their seconds since midnight); vectorised for the clocks of a whole day."""
    chars = np.frombuffer(joined.encode(), dtype=np.uint8).reshape(-1, 8)
    digits = chars.astype(np.int64) - ord("0")
    h = digits[:, 0] * 10 + digits[:, 1]
    m = digits[:, 3] * 10 + digits[:, 4]
    sec = digits[:, 6] * 10 + digits[:, 7]
    ok = (
        ((digits[:, [0, 1, 3, 4, 6, 7]] >= 0) & (digits[:, [0, 1, 3, 4, 6, 7]] <= 9)).all(axis=1)
        & (chars[:, 2] == ord(":"))
        & (chars[:, 5] == ord(":"))
        & (h <= 23)
        & (m <= 59)
        & (sec <= 60)
    )
    return ok, h * 3600 + m * 60 + np.minimum(sec, 59)  # `parse_clock` reads a leap second as :59


def utc(stamps: array) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(np.frombuffer(stamps, dtype=np.int64).view("M8[ns]")).tz_localize("UTC")


def label_width(line: str) -> int:
    """How many tokens the time label of a data row takes (2 for `08:09:59 AM`), as `label()` reads it."""
    tokens = line.split(None, 2)
    return 2 if len(tokens) > 1 and _AMPM.match(tokens[1]) else 1


def record_value(value: object) -> object:
    """A JSON-friendly value for `attrs["averages"]`: None for a missing one (NaN != NaN breaks equality)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value

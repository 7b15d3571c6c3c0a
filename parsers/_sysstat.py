"""The line grammar that sysstat's time-only reports share (mpstat, pidstat; sar later): the `Linux`
banner and its date, time labels (ISO, C, 12-hour, zh_CN `时分秒`), the `Average:` labels of each
locale, decimal points or commas, the date rolling over at midnight, and the timestamp array."""

from __future__ import annotations

import re
from array import array
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from perfkit.errors import ParseError

from . import _common

_NAT = np.iinfo(np.int64).min
_BANNER = re.compile(r"^Linux\s+\S+\s+\(([^)]*)\)\s+(\S+)")
_AMPM = re.compile(r"^[AaPp]\.?[Mm]\.?$")
_ZH_CLOCK = re.compile(r"^(\d{1,2})时(\d{2})分(\d{2})秒$")
_AVERAGE_LABELS = frozenset({"Average:", "Durchschn.:", "平均时间:"})
_POINT = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
_COMMA = re.compile(r"^[-+]?\d+(?:,\d+)?$")
_ROLLOVER_S = 3600  # a clock going back by more than this is the next day; less is a clock step
_LOCALE_HINT = "capture not taken under LC_ALL=C"


class Sysstat:
    """Banner, time labels, timestamps and numbers of one time-only sysstat capture.

    `label()` splits a row's leading time (or `Average:` label) off; `stamp()` turns a row's time of
    day into UTC nanoseconds, rolling the banner's date over at midnight; `number()` reads a value
    with the decimal mark the file uses (decided by the first value with a fraction).
    """

    def __init__(self, kind: str, source: _common.Source, tz: str):
        self.kind = kind
        self.source = source
        self.lines = _common.Lines(source, kind)  # for errors before the walk; the walk's own replaces it
        try:
            ZoneInfo(tz)
        except (ValueError, KeyError, OSError) as exc:
            raise ParseError(kind, self.lines.path, 0, "", f"unknown time zone {tz!r} ({exc})") from None
        self.tz = tz
        self.banner_host: str | None = None
        self.date: date | None = None
        self.slash_date = False
        self.day = 0
        self.prev_sod: int | None = None
        self.decimal: str | None = None
        self.notes: list[str] = []
        self.dropped = 0
        self._stamps: dict[tuple[int, int], int] = {}
        self._no_date_noted = False

    def error(self, line_no: int, line: str, reason: str) -> ParseError:
        return self.lines.error(line_no, line, reason)

    def banner(self, line_no: int, line: str) -> bool:
        """Read a `Linux ... (host) DATE ...` banner; False if the line is none."""
        m = _BANNER.match(line)
        if m is None:
            return False
        day = _common.parse_date(m[2])
        if day is None:
            raise self.error(line_no, line, f"unreadable date {m[2]!r} in the banner ({_LOCALE_HINT}?)")
        self.banner_host = m[1] or None
        self.date = day
        self.slash_date = "/" in m[2]
        if self.slash_date and self.decimal == ",":
            raise self._comma_with_slash(line_no, line)
        self.day, self.prev_sod = 0, None  # a new capture starts here
        self._stamps.clear()
        return True

    def label(self, line_no: int, line: str, tokens: list[str]) -> tuple[int | None, int]:
        """(seconds since midnight, or None for an `Average:` label; how many tokens the label takes)."""
        first = tokens[0]
        if first in _AVERAGE_LABELS:
            return None, 1
        if len(tokens) > 1 and _AMPM.match(tokens[1]):
            clock, used = _common.parse_clock(f"{first} {tokens[1]}"), 2
        else:
            clock, used = _common.parse_clock(first), 1
            if clock is None and (zh := _ZH_CLOCK.match(first)):
                h, mi, s = int(zh[1]), int(zh[2]), int(zh[3])
                clock = (h, mi, min(s, 59)) if h < 24 and mi < 60 and s <= 60 else None
        if clock is None:
            hint = f" ({_LOCALE_HINT}?)" if first.endswith(":") else ""
            raise self.error(line_no, line, f"line starts with neither a time nor an Average label{hint}")
        return clock[0] * 3600 + clock[1] * 60 + clock[2], used

    def stamp(self, line_no: int, sod: int) -> int:
        """UTC nanoseconds of a data row printed at `sod` seconds after midnight (NaT without a date)."""
        prev = self.prev_sod
        if prev is not None and sod < prev:
            if prev - sod > _ROLLOVER_S:
                self.day += 1
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

    def number(self, line_no: int, line: str, token: str) -> float:
        """A value as printed, with the file's decimal mark; ParseError on anything else."""
        if "," in token:
            if self.decimal is None:
                if self.slash_date:
                    raise self._comma_with_slash(line_no, line)
                self.decimal = ","
            if self.decimal != "," or not _COMMA.match(token):
                raise self.error(line_no, line, self._bad_number(token))
            return float(token.replace(",", "."))
        if not _POINT.match(token):
            raise self.error(line_no, line, self._bad_number(token))
        if "." in token:
            if self.decimal is None:
                self.decimal = "."
            elif self.decimal != ".":
                raise self.error(line_no, line, self._bad_number(token))
        return float(token)

    def _bad_number(self, token: str) -> str:
        reason = f"not a number: {token!r}"
        if self.decimal is not None and ("," in token or "." in token):
            reason += f" (the file so far used {self.decimal!r} as decimal mark: {_LOCALE_HINT})"
        return reason

    def _comma_with_slash(self, line_no: int, line: str) -> ParseError:
        return self.error(
            line_no, line, f"decimal comma with a slash date (day/month order unknown): {_LOCALE_HINT}"
        )

    def cut_last(self, line_no: int, line: str, lines: _common.Lines) -> None:
        """A last line without its newline was cut mid-write: its numbers may be cut too. Drop it."""
        self.dropped += 1


def utc(stamps: array) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(np.frombuffer(stamps, dtype=np.int64).view("M8[ns]")).tz_localize("UTC")


def record_value(value: object) -> object:
    """A JSON-friendly value for `attrs["averages"]`: None for a missing one (NaN != NaN breaks equality)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value


# ---------------------------------------------------------------- mpstat

"""dd: the transfer summary dd writes on stderr, one row per dd run.

Reads the stderr of `dd if=... of=... bs=N count=N [oflag=dsync] [status=progress]`, one or several
runs in one file, from

- GNU coreutils >= 8.24 (9.1 tested): `2000+0 records in`, `2000+0 records out`,
  `8192000 bytes (8.2 MB, 7.8 MiB) copied, 5.06517 s, 1.6 MB/s` (`0 bytes copied, 3.4501e-05 s,
  0.0 kB/s` when nothing moved; `1 truncated record` with `conv=block`);
- older coreutils: `8192000 bytes (8.2 MB) copied, 2.34 s, 3.5 MB/s` (`seconds` before 7.0);
- BusyBox: `8192000 bytes (7.8MB) copied, 2.340000 seconds, 3.3MB/s` (its units are powers of 1024);
- other locales: de_DE `2000+0 Datensätze ein`, `8192000 Bytes (8,2 MB, 7,8 MiB) kopiert,
  0,524324 s, 15,6 MB/s` (a decimal comma: dd prints no digit grouping), zh_CN `输入了 2000+0 块记录`,
  `... 已复制，0.483018 s，17.0 MB/s` (full-width commas). Lines are read by shape, not by their
  words: a run's first `N+M` line is records in, the second records out.

`status=progress` lines (`\\r`-separated, shaped like the final bytes line but without the records
lines before them) are counted, not rows. `dd: ...` messages (`dd: error writing '/dev/full': No
space left on device`) go to the run whose summary follows them. A summary printed on SIGUSR1 looks
exactly like a final one and becomes a row too. `status=noxfer` leaves bytes and time NaN.

Schema (one row per summary):

| column | dtype | unit / meaning |
|---|---|---|
| host | string | the `host` argument (dd prints no time: no timestamp column) |
| run | Int64 | 0, 1, 2 ... in file order |
| records_in_full, records_in_partial | Int64 | `F+P records in` |
| records_out_full, records_out_partial | Int64 | `F+P records out` |
| truncated_records | Int64 | `N truncated records` (`conv=block`); 0 when dd printed none |
| bytes | Int64 | bytes copied |
| elapsed_s | float64 | seconds, as printed |
| bytes_per_s | float64 | bytes / elapsed_s, computed (the printed rate is rounded); NaN if elapsed_s is 0 |
| rate_text | string | the rate dd printed, verbatim (`1.6 MB/s`; BusyBox `3.3MB/s` means MiB/s) |
| record_ms | float64 | elapsed_s x 1000 / records out: the mean sync write latency with `oflag=dsync` |
| progress_lines | Int64 | `status=progress` lines before the summary |
| messages | string | `dd: ...` lines before the summary, newline-joined; NA if none |

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `notes` (decimal commas read, `dd:`
messages after the last summary, a run cut before its bytes line).
Tested on: tests/fixtures/dd/ (see README.md there).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ._common import Lines, Source, coerce, empty_frame, feed_lines

KIND = "dd"
SCHEMA: dict[str, str] = {
    "host": "string",
    "run": "Int64",
    "records_in_full": "Int64",
    "records_in_partial": "Int64",
    "records_out_full": "Int64",
    "records_out_partial": "Int64",
    "truncated_records": "Int64",
    "bytes": "Int64",
    "elapsed_s": "float64",
    "bytes_per_s": "float64",
    "rate_text": "string",
    "record_ms": "float64",
    "progress_lines": "Int64",
    "messages": "string",
}
# `2000+0 records in` in any language: one F+P pair, no other digit, some words.
_RECORDS = re.compile(r"^(?=.*[^\W\d_])\D*?(\d{1,18})\+(\d{1,18})\D*$")
# `1 truncated record`: one number, then words only.
_TRUNCATED = re.compile(r"^(\d{1,18}) (?=.*[^\W\d_])\D+$")
# `8192000 bytes (8.2 MB, 7.8 MiB) copied, 5.06517 s, 1.6 MB/s`: number, words, optional human size
# in parentheses, words; then time and rate after a comma (`，` under zh_CN). The decimal comma of
# de_DE is never followed by a space, the separating comma always is (or is full-width).
_BYTES = re.compile(r"^(\d{1,18}) ([^\d(,，]+?)(?: \(([^()]*)\))? ?([^\d(),，]*)(?:,\s+|，\s*)(.*)$")
_SEP = re.compile(r",\s+|，\s*")
_SECONDS = re.compile(r"^(\d+(?:[.,]\d+)?(?:e[-+]?\d+)?|\d+[.,]?)\s*(s|seconds|[^\W\d_]+)?$")
_MESSAGE = re.compile(r"^(?:dd|busybox dd): ")


def sniff(text: str) -> bool:
    """Two consecutive `N+M ...` lines (records in, records out), and only dd-shaped lines around.

    Other tools' captures embed dd's summary (perf stat's stderr when it ran dd): those go on with
    lines of their own, so every line looked at must be a dd line.
    """
    head = text[:4096]
    lines = [ln.strip() for ln in re.split(r"\r\n|\r|\n", head) if ln.strip()]
    if len(head) == 4096 and lines:
        lines.pop()  # may be cut at the window's edge
    lines = lines[:40]
    shaped = all(
        _RECORDS.match(ln) or _BYTES.match(ln) or _TRUNCATED.match(ln) or _MESSAGE.match(ln) for ln in lines
    )
    return shaped and any(
        _RECORDS.match(a) and _RECORDS.match(b) for a, b in zip(lines, lines[1:], strict=False)
    )


class _Reader:
    """Line by line: idle -> records in -> records out -> bytes line -> idle."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.run: dict[str, Any] = {}
        self.state = "idle"  # "in": records-in seen; "out": records-out seen, waiting for bytes
        self.messages: list[str] = []
        self.progress = 0
        self.dropped = 0
        self.decimal_comma = False

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        text = line.strip()
        if not text:
            return
        records = _RECORDS.match(text)
        if self.state == "in":
            if not records:
                raise lines.error(line_no, line, "dd: expected the `records out` line after `records in`")
            self.run["records_out_full"], self.run["records_out_partial"] = int(records[1]), int(records[2])
            self.state = "out"
            return
        if self.state == "out":
            truncated = _TRUNCATED.match(text)
            if truncated and not _BYTES.match(text):
                self.run["truncated_records"] = int(truncated[1])
                return
            transfer = self._transfer(text)
            self._finish(transfer)
            if transfer is not None:
                return
        if records:
            self.run = {
                "records_in_full": int(records[1]),
                "records_in_partial": int(records[2]),
                "truncated_records": 0,
                "progress_lines": self.progress,
                "messages": "\n".join(self.messages) or None,
            }
            self.progress, self.messages = 0, []
            self.state = "in"
        elif _MESSAGE.match(text):
            self.messages.append(text)
        elif self._transfer(text) is not None:
            self.progress += 1  # status=progress: the summary's shape, without records lines
        else:
            raise lines.error(line_no, line, "not a dd summary line")

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        self.dropped += 1

    def _transfer(self, text: str) -> dict[str, Any] | None:
        """The bytes line's numbers, or None if the line has another shape."""
        m = _BYTES.match(text)
        parts = _SEP.split(m[5]) if m else []
        sec = _SECONDS.match(parts[0].strip()) if len(parts) == 2 else None
        if m is None or sec is None:
            return None
        if "," in sec[1]:
            self.decimal_comma = True
        elapsed = float(sec[1].replace(",", "."))  # cannot fail: float() reads every digit `\d` matches
        return {"bytes": int(m[1]), "elapsed_s": elapsed, "rate_text": parts[1].strip()}

    def _finish(self, transfer: dict[str, Any] | None) -> None:
        self.run.update(transfer or {})
        self.rows.append(self.run)
        self.run, self.state = {}, "idle"

    def close(self) -> list[str]:
        notes: list[str] = []
        if self.state == "in":
            notes.append("last run cut off after its `records in` line: not a row")
        elif self.state == "out":
            notes.append("last run has no bytes line (status=noxfer or cut off): bytes and time NaN")
            self._finish(None)
        if self.messages:
            notes.append("dd messages after the last summary: " + " | ".join(self.messages))
        if self.decimal_comma:
            notes.append("decimal commas read (capture not taken under LC_ALL=C)")
        return notes


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row per dd run; `tz` is unused (dd prints no time of day).

    Raises:
        ParseError: a line that is neither a dd summary line, a progress line nor a `dd:` message,
            or a `records in` line not followed by `records out`.
    """
    reader = _Reader()
    feed_lines(source, KIND, reader.feed, reader.cut_last)
    notes = reader.close()
    if not reader.rows:  # only `dd:` messages (dd failed to open a file), or progress cut short
        df = empty_frame(SCHEMA)
    else:
        df = pd.DataFrame(reader.rows)
        df["run"] = range(len(df))
        df["host"] = host
        for col in ("bytes", "elapsed_s"):
            if col not in df:
                df[col] = float("nan")
        elapsed = df["elapsed_s"].astype("float64")
        df["bytes_per_s"] = df["bytes"].astype("float64") / elapsed.where(elapsed > 0)
        out = (df["records_out_full"] + df["records_out_partial"]).astype("float64")
        df["record_ms"] = elapsed * 1000 / out.where(out > 0)
        df = coerce(df, SCHEMA)
    df.attrs.update(dropped_lines=reader.dropped, notes=notes)
    return df

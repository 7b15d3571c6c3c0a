"""diskstats: `/proc/diskstats` snapshots in a series, turned into per-device rates the way
pt-diskstats and iostat do (counter deltas between consecutive snapshots / the seconds between them).

Reads pt-stalk's `<prefix>-diskstats` and anything written the same way (`while sleep 1; do echo
"TS $(date +'%s.%N %F %T')"; cat /proc/diskstats; done`):

    TS 1795783554.010583266 2026-11-27 12:45:54     a snapshot's stamp: epoch seconds (read: exact),
                                                    then the host's wall clock (not read)
     254       0 vda 2309132 106079 72883226 3500816 11697432 1190402 112723112 1098962 0 928380 ...
     253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0

A device line is `major minor name` and 11 (Linux < 4.18), 15 (4.18+: discards) or 17 (5.5+:
flushes) counters, in the order of Documentation/admin-guide/iostats.rst (`RD` ... `FL_MS` below;
IOs in flight is a gauge). Sectors are 512 bytes whatever the device's. Partitions are rows of their
own (as in iostat -p); pt-diskstats' own printed output is not this format.

One row per device per interval, with iostat -x's meaning so the disk rules read either; the first
snapshot gives none (no since-boot row: the machine's uptime is not in the file):

| column | dtype | unit / meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | the interval's end (its `TS` epoch) |
| host | string | the `host` argument |
| sample | Int64 | interval index 0, 1, ... (snapshot index − 1) |
| since_boot | bool | always False (kept for iostat's readers) |
| device | string | the kernel's name (`vda`, `nvme0n1p1`, `dm-0`) |
| interval_s | float64 | seconds between the two snapshots |
| r_s, w_s, d_s, f_s | float64 | reads, writes, discards, flushes completed per second |
| rrqm_s, wrqm_s | float64 | requests merged per second |
| rkb_s, wkb_s, dkb_s | float64 | kB per second (sectors × 512 / 1024) |
| r_await_ms, w_await_ms, d_await_ms, f_await_ms | float64 | Δms spent / Δcompleted; NaN when none completed |
| await_ms | float64 | (Δms reading + Δms writing) / (Δreads + Δwrites), iostat's old `await` |
| areq_kb, rareq_kb, wareq_kb | float64 | mean request size, kB (over reads and writes / reads / writes) |
| aqu_sz | float64 | Δweighted ms / interval ms: mean requests queued or in service |
| util_pct | float64 | Δms doing IO / interval ms × 100 |
| in_flight | Int64 | IOs in flight at the interval's end (a gauge) |

A counter that went back (a 32-bit counter wrapped on an old kernel, a device re-attached) leaves
that device's interval NaN with a note, never a negative rate. A device has rows only where both
ends of an interval hold it. Lines that are neither a stamp nor a device line (a shell's error
message) are skipped and counted (`Skips`); a device line with a non-numeric counter, or before the
first stamp, is a ParseError. What it reads beside its rows: `EXTRAS` (below).
Tested on: tests/fixtures/diskstats/ (README.md there).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._common import (
    PT_STALK_STAMP,
    Extras,
    Lines,
    Skips,
    Source,
    coerce,
    empty_frame,
    feed_lines,
    stamp_seconds,
)


@dataclass(frozen=True)
class DiskstatsExtras(Extras):
    """What diskstats reads beside its rows (see `_common.Extras`)."""

    # /proc/diskstats readings in the capture
    snapshots: int = 0


EXTRAS = DiskstatsExtras

KIND = "diskstats"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "sample": "Int64",
    "since_boot": "bool",
    "device": "string",
    "interval_s": "float64",
    "r_s": "float64",
    "w_s": "float64",
    "d_s": "float64",
    "f_s": "float64",
    "rrqm_s": "float64",
    "wrqm_s": "float64",
    "rkb_s": "float64",
    "wkb_s": "float64",
    "dkb_s": "float64",
    "r_await_ms": "float64",
    "w_await_ms": "float64",
    "d_await_ms": "float64",
    "f_await_ms": "float64",
    "await_ms": "float64",
    "areq_kb": "float64",
    "rareq_kb": "float64",
    "wareq_kb": "float64",
    "aqu_sz": "float64",
    "util_pct": "float64",
    "in_flight": "Int64",
}

# major minor name, then 11, 15 or 17 whole-number counters; _LOOSE: the shape of one with a bad value
_DEVICE = re.compile(r"^\s*\d+\s+\d+\s+\S+(?:\s+\d+){11}(?:(?:\s+\d+){4})?(?:\s+\d+\s+\d+)?\s*$")
_LOOSE = re.compile(r"^\s*\d+\s+\d+\s+\S+(?:\s+\S+){11,17}\s*$")
# counter positions after the name: reads completed, merged, sectors read, ms reading; the same for
# writes; IOs in flight, ms doing IO, weighted ms doing IO; discards as reads; flushes completed, ms
RD, RD_MRG, RD_SEC, RD_MS, WR, WR_MRG, WR_SEC, WR_MS, IN_FLIGHT, IO_MS, WEIGHTED_MS = range(11)
DC, DC_MRG, DC_SEC, DC_MS, FL, FL_MS = range(11, 17)


def sniff(text: str) -> bool:
    """A `TS <epoch>` stamp, then a /proc/diskstats device line (pt-stalk's other TS series differ)."""
    lines = [ln for ln in text.lstrip("\ufeff").splitlines()[:3] if ln.strip()]
    if not lines:
        return False
    if PT_STALK_STAMP.match(lines[0]):
        lines = lines[1:]
    return bool(lines) and bool(_DEVICE.match(lines[0]))


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Per-device rates per interval; `tz` is unused (the stamps are epoch seconds).

    Raises:
        ParseError: a device line before the first stamp or with a counter that is not a number;
            lines that are all unknown (no device line read).
    """
    stamps: list[float] = []
    devices: list[str] = []  # device lines as printed, read in bulk below
    snap_of: list[int] = []  # the snapshot each device line belongs to
    skips = Skips()
    dropped = 0

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if _DEVICE.match(line):
            if not stamps:
                raise lines.error(line_no, line, "a device line before the first 'TS <epoch>' stamp")
            devices.append(line)
            snap_of.append(len(stamps) - 1)
            return
        if not line.strip():
            return
        m = PT_STALK_STAMP.match(line.lstrip("\ufeff"))
        if m:
            stamps.append(stamp_seconds(m, line_no, lines))
            return
        if _LOOSE.match(line):
            raise lines.error(
                line_no, line, "a /proc/diskstats line needs 11, 15 or 17 whole-number counters"
            )
        skips.add(line_no, line, "neither a 'TS <epoch>' stamp nor a /proc/diskstats device line")

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1

    lines = feed_lines(source, KIND, feed, cut_last)
    skips.refuse_if_nothing_read(len(devices), lines)
    notes: list[str] = []
    if devices and len(set(snap_of)) < 2:
        notes.append("one snapshot: rates need two (counter deltas between them)")
    frame = _rates(stamps, devices, snap_of, host, notes)
    frame.attrs.update({"snapshots": len(stamps), "dropped_lines": dropped, "notes": notes, "skipped": skips})
    return frame


def _rates(
    stamps: list[float], devices: list[str], snap_of: list[int], host: str | None, notes: list[str]
) -> pd.DataFrame:
    """One row per device and pair of consecutive snapshots holding it with the same field count."""
    if not devices:
        return empty_frame(SCHEMA)
    # the device lines through pandas' C reader: whitespace-separated, 14/18/20 fields (missing: NaN)
    table = pd.read_csv(
        io.StringIO("\n".join(devices)), sep=r"\s+", header=None, names=range(20), dtype={2: str}
    )
    names = table[2].tolist()
    c = table.iloc[:, 3:].to_numpy(dtype="float64")
    idx = np.asarray(snap_of)
    t = np.asarray(stamps, dtype="float64")[idx]
    dev = pd.Series(names)
    order = np.lexsort((idx, dev.to_numpy()))  # per device, in snapshot order
    c, idx, t, dev = c[order], idx[order], t[order], dev.iloc[order].reset_index(drop=True)
    same = (dev == dev.shift()).to_numpy() & (idx - np.roll(idx, 1) == 1)
    same &= np.isnan(c).sum(axis=1) == np.roll(np.isnan(c).sum(axis=1), 1)  # same field count
    same[0] = False
    d = c - np.roll(c, 1, axis=0)
    dt = t - np.roll(t, 1)
    keep = same & (dt > 0)
    if (same & (dt <= 0)).any():
        notes.append("a snapshot is not later than the one before it: that interval is left out")
    d, dt, c1 = d[keep], dt[keep], c[keep]
    d[:, IN_FLIGHT] = 0.0  # a gauge, not a counter
    back = (d < 0).any(axis=1)
    for name, n in zip(dev[keep][back], idx[keep][back], strict=True):
        notes.append(f"{name}: a counter went back between snapshots {n - 1} and {n} (wrap or reset): NaN")
    d[back] = np.nan
    ios = d[:, RD] + d[:, WR]
    with np.errstate(divide="ignore", invalid="ignore"):

        def per(num: np.ndarray, den: np.ndarray) -> np.ndarray:
            """num / den, NaN when nothing completed (no request, no latency)."""
            return np.where(den > 0, num / den, np.nan)

        frame = pd.DataFrame(
            {
                "timestamp": pd.to_datetime(np.round(t[keep] * 1e6), unit="us", utc=True),
                "host": pd.array([host] * int(keep.sum()), dtype="string"),
                "sample": idx[keep] - 1,
                "since_boot": False,
                "device": dev[keep].to_numpy(),
                "interval_s": dt,
                "r_s": d[:, RD] / dt,
                "w_s": d[:, WR] / dt,
                "d_s": d[:, DC] / dt,
                "f_s": d[:, FL] / dt,
                "rrqm_s": d[:, RD_MRG] / dt,
                "wrqm_s": d[:, WR_MRG] / dt,
                "rkb_s": d[:, RD_SEC] / 2 / dt,
                "wkb_s": d[:, WR_SEC] / 2 / dt,
                "dkb_s": d[:, DC_SEC] / 2 / dt,
                "r_await_ms": per(d[:, RD_MS], d[:, RD]),
                "w_await_ms": per(d[:, WR_MS], d[:, WR]),
                "d_await_ms": per(d[:, DC_MS], d[:, DC]),
                "f_await_ms": per(d[:, FL_MS], d[:, FL]),
                "await_ms": per(d[:, RD_MS] + d[:, WR_MS], ios),
                "areq_kb": per((d[:, RD_SEC] + d[:, WR_SEC]) / 2, ios),
                "rareq_kb": per(d[:, RD_SEC] / 2, d[:, RD]),
                "wareq_kb": per(d[:, WR_SEC] / 2, d[:, WR]),
                "aqu_sz": d[:, WEIGHTED_MS] / (dt * 1000.0),
                "util_pct": d[:, IO_MS] / (dt * 1000.0) * 100.0,
                "in_flight": c1[:, IN_FLIGHT],
            }
        )
    # back to file order: snapshot, then the kernel's device order
    first_seen = {name: k for k, name in enumerate(dict.fromkeys(names))}
    frame = frame.iloc[np.lexsort((frame["device"].map(first_seen).to_numpy(), frame["sample"].to_numpy()))]
    return coerce(frame.reset_index(drop=True), SCHEMA)

"""Header names as the tools print them -> perfkit column names, with the unit in the name.

One table for every sysstat header generation, so the same physical quantity lands in the same
column whatever the version printed (style.md §2). A header name that is in none of the tables is
reported by the parser in `df.attrs["unknown_columns"]`, never guessed.

- `RENAME`: same unit, new name.
- `CONVERT`: name -> (column, factor); value × factor gives the column's unit.
- `IOSTAT_IGNORED`: names iostat prints that perfkit knows and does not keep (percentages of
  merged requests, discard request size, the `-s` short-report totals, the device column itself).
"""

from __future__ import annotations

RENAME: dict[str, str] = {
    "r/s": "r_s", "w/s": "w_s", "d/s": "d_s", "f/s": "f_s",
    "rkB/s": "rkb_s", "wkB/s": "wkb_s", "dkB/s": "dkb_s", "rrqm/s": "rrqm_s", "wrqm/s": "wrqm_s",
    # latencies (ms)
    "await": "await_ms", "r_await": "r_await_ms", "w_await": "w_await_ms", "d_await": "d_await_ms",
    "f_await": "f_await_ms", "svctm": "svctm_ms",
    # queue and request size (kB since sysstat 11.5)
    "avgqu-sz": "aqu_sz", "aqu-sz": "aqu_sz", "areq-sz": "areq_kb", "rareq-sz": "rareq_kb",
    "wareq-sz": "wareq_kb",
    "%util": "util_pct",
}  # fmt: skip

CONVERT: dict[str, tuple[str, float]] = {
    "avgrq-sz": ("areq_kb", 0.5),  # sysstat <= 11.4: 512-byte sectors -> kB
    # POSIXLY_CORRECT / old builds: 512-byte sectors per second
    "rsec/s": ("rkb_s", 0.5), "wsec/s": ("wkb_s", 0.5), "dsec/s": ("dkb_s", 0.5),
    "rMB/s": ("rkb_s", 1024.0), "wMB/s": ("wkb_s", 1024.0), "dMB/s": ("dkb_s", 1024.0),  # iostat -m
}  # fmt: skip

IOSTAT_IGNORED: frozenset[str] = frozenset({
    "Device", "Device:", "%rrqm", "%wrqm", "drqm/s", "%drqm", "dareq-sz",
    "tps", "kB/s", "MB/s", "sec/s", "rqm/s",  # iostat -x -s (sysstat >= 12): totals over reads and writes
})  # fmt: skip

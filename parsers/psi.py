"""psi: pressure stall information (`/proc/pressure/{cpu,io,memory}`) as perfkit's thread sampler
appends it to `{workdir}/psi.out` once per interval (collectors/thread_sampler.py, or its awk mode in
collectors/captures.py); the `psi` end capture ships that file (`cat {workdir}/psi.out`).

    # perfkit-psi 1 source=/proc/pressure
    = 1795766965.520                              the interval's end, epoch seconds (the host's clock)
    cpu some avg10=0.72 avg60=0.68 avg300=4.81 total=1010894554
    cpu full avg10=0.00 avg60=0.00 avg300=0.00 total=0
    io some avg10=0.18 avg60=0.73 avg300=1.43 total=49065552
    io full avg10=0.18 avg60=0.66 avg300=1.14 total=23546314
    memory some ...
    # no PSI for io: /proc/pressure/io: No such file or directory        (said once, not an error)

The kernel's lines (Documentation/accounting/psi.rst): `some` is the share of wall time in which at
least one task was stalled on the resource, `full` the share in which all non-idle tasks were
(system-wide `cpu full` is 0 before Linux 5.13 and undefined: reported as printed); avg10/60/300 are
running averages in percent, `total` the cumulative stall time in microseconds.

Schema (one row per resource line, in file order):

| column | dtype | meaning |
|---|---|---|
| timestamp | datetime64[ns, UTC] | the block's stamp |
| host | string | the `host` argument |
| resource | string | `cpu`, `io`, `memory` (`irq` if a sampler ever writes it) |
| scope | string | `some` or `full` |
| avg10_pct | float64 | running average over 10 s, percent of wall time |
| avg60_pct | float64 | over 60 s |
| avg300_pct | float64 | over 300 s |
| total_us | Int64 | cumulative stall time since boot, microseconds |
| stall_pct | float64 | stall share of this interval, percent (below); NaN for the first block |

`stall_pct` = the `total_us` delta from the same resource and scope's previous block / the seconds
between the two stamps. The kernel folds per-CPU stall time into `total` lazily, so a single interval
can read a little over 100 (or under) while a longer span averages right.

A host without PSI (kernel < 4.20, CONFIG_PSI off, `psi=0`) gives an empty frame whose
`df.attrs["notes"]` says why, from the file's `# no PSI` lines. `df.attrs`: `dropped_lines` (a last
line cut off mid-write), `notes`. A line that is none of these, or a resource line before the first
`=` line, is a ParseError naming it. Tested on: tests/fixtures/psi/ (README.md there).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ._common import Lines, Source, coerce, empty_frame, feed_lines

KIND = "psi"

SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "resource": "string",
    "scope": "string",
    "avg10_pct": "float64",
    "avg60_pct": "float64",
    "avg300_pct": "float64",
    "total_us": "Int64",
    "stall_pct": "float64",
}

_HEADER = re.compile(r"^# perfkit-psi (\d+)(?: .*)?$")
_STAMP = re.compile(r"^= (\d+(?:\.\d+)?)$")
_LINE = re.compile(
    r"^(cpu|io|memory|irq) (some|full) avg10=(\d+\.\d+) avg60=(\d+\.\d+) avg300=(\d+\.\d+) total=(\d+)$"
)
_MISSING = re.compile(r"^# no PSI for (\w+): (.*)$")


def sniff(text: str) -> bool:
    """The sampler's PSI header opens the file."""
    return text.lstrip("\ufeff").startswith("# perfkit-psi ")


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse the sampler's PSI file into one row per resource line.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (the stamps are epoch seconds); kept for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns; attrs `dropped_lines`, `notes`.

    Raises:
        ParseError: no header, an unknown line, a resource line before the first stamp.
    """
    rows: list[tuple[float, str, str, float, float, float, int]] = []
    notes: list[str] = []
    stamp: float | None = None
    seen_header = False
    dropped = 0

    def feed(line_no: int, line: str, lines: Lines) -> None:
        nonlocal stamp, seen_header
        if not line.strip():
            return
        if not seen_header:
            m = _HEADER.match(line.lstrip("\ufeff"))
            if not m:
                raise lines.error(line_no, line, "not a perfkit PSI file (no '# perfkit-psi' header)")
            if m[1] != "1":
                raise lines.error(line_no, line, f"PSI file format {m[1]} is not known (this reads 1)")
            seen_header = True
        elif m := _STAMP.match(line):
            stamp = float(m[1])
        elif m := _LINE.match(line):
            if stamp is None:
                raise lines.error(line_no, line, "a pressure line before the first stamp ('= epoch')")
            rows.append((stamp, m[1], m[2], float(m[3]), float(m[4]), float(m[5]), int(m[6])))
        elif m := _MISSING.match(line):
            notes.append(f"no PSI for {m[1]}: {m[2]}")
        elif not _HEADER.match(line):  # a second run's header: the file is appended to
            raise lines.error(line_no, line, "not a PSI line ('<resource> some|full avg10=… total=…')")

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1

    feed_lines(source, KIND, feed, cut_last)
    df = _frame(rows, host) if rows else empty_frame(SCHEMA)
    df.attrs.update(dropped_lines=dropped, notes=notes)
    return df


def _frame(rows: list[tuple[float, str, str, float, float, float, int]], host: str | None) -> pd.DataFrame:
    stamps, resource, scope, avg10, avg60, avg300, total = (list(c) for c in zip(*rows, strict=True))
    t = np.asarray(stamps, dtype="float64")
    frame = pd.DataFrame(
        {
            # microseconds: a float of epoch seconds holds no more
            "timestamp": pd.to_datetime(np.round(t * 1e6).astype("int64") * 1000, utc=True),
            "host": pd.array([host] * len(rows), dtype="string"),
            "resource": pd.array(resource, dtype="string"),
            "scope": pd.array(scope, dtype="string"),
            "avg10_pct": avg10,
            "avg60_pct": avg60,
            "avg300_pct": avg300,
            "total_us": pd.array(total, dtype="Int64"),
        }
    )
    key = [frame["resource"], frame["scope"]]
    d_total = pd.Series(np.asarray(total, dtype="float64")).groupby(key).diff()
    d_t = pd.Series(t).groupby(key).diff()
    # a counter that went back (a reboot between blocks) or no time between blocks: no share
    frame["stall_pct"] = (d_total / 1e6 / d_t.where(d_t > 0) * 100).where(d_total >= 0).astype("float64")
    return coerce(frame, SCHEMA)

"""sysctl: procps `sysctl KEY...`, `sysctl PREFIX` and `sysctl -a` (stdout only).

perfkit runs (collectors/captures.py `_SYSCTL_KEYS`)::

    sysctl net.ipv4.ip_local_port_range net.ipv4.tcp_tw_reuse net.ipv4.tcp_fin_timeout
           net.core.somaxconn net.ipv4.tcp_max_syn_backlog kernel.task_delayacct vm.swappiness

Each line is `name = value`, the value kept verbatim after ` = `: it may hold TABs
(`net.ipv4.ip_local_port_range = 32768<TAB>60999`), spaces (`reno bbr`), text (`(none)`) or nothing
(`net.ipv4.ip_local_reserved_ports = `). A /proc/sys file of several lines prints one line per line
under the same name (`kernel.core_modes = file`, `... = pipe`): one row, the values joined with a
newline. A missing key is reported on stderr only, so it is simply absent. Values are the same
under every locale (checked under de_DE and zh_CN).

Saved with stderr (`sysctl -a > f 2>&1`, or as a user: `sysctl: permission denied on key
'kernel.cad_pid'`, `sysctl: cannot stat /proc/sys/...`): a line that is not `name = value` and does
not start with a dotted name is skipped and counted (`skipped`, parsers/_common.Skips), the capture
partial. A line that starts with a dotted name but is not `name = value` (BSD's `kern.ostype:
FreeBSD`) is a ParseError naming it; so is a file with no key read but lines skipped.

Columns: host, key, value (string, verbatim), value_num (float64 when the value is one number,
else NaN). No timestamp: the output carries no time (the manifest's `started_at` does).
What it reads beside its rows: `EXTRAS` (below). Tested on: tests/fixtures/sysctl/ (README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from ._common import Extras, Lines, Skips, Source, feed_lines, records_frame


@dataclass(frozen=True)
class SysctlExtras(Extras):
    """What sysctl reads beside its rows (see `_common.Extras`); `dropped_lines` is a last line cut
    mid-write (its value may be cut too). The port fields are None without
    `net.ipv4.ip_local_port_range`."""

    # net.ipv4.ip_local_port_range's first port
    port_range_low: int | None = None
    # its last port
    port_range_high: int | None = None
    # ports in the range (high - low + 1): the ports a client IP has per server ip:port
    ephemeral_ports: int | None = None


EXTRAS = SysctlExtras

KIND = "sysctl"
SCHEMA: dict[str, str] = {
    "host": "string",
    "key": "string",
    "value": "string",
    "value_num": "float64",
}
PORT_RANGE_KEY = "net.ipv4.ip_local_port_range"

# Names are dotted /proc/sys paths; an interface name's dots print as `/` (`conf.eth0/100.rp_filter`).
_KEY = re.compile(r"^[A-Za-z0-9_][^\s=]*\.[^\s=]+$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def sniff(text: str) -> bool:
    """The first lines are all `dotted.name = value`."""
    lines = [ln for ln in text.splitlines()[:6] if ln.strip()]
    if len(lines) > 1 and not text.endswith("\n"):
        lines.pop()  # the sniffed head ends mid-line: that line may have lost its ` = `
    return bool(lines) and all(_split(ln) is not None for ln in lines[:5])


def _split(line: str) -> tuple[str, str] | None:
    """`name = value` -> (name, value); a trailing ` = ` with nothing after it is an empty value."""
    key, sep, value = line.partition(" = ")
    if not sep and line.endswith(" ="):  # an empty value whose trailing space was stripped
        key, sep, value = line[:-2], " =", ""
    if not sep or not _KEY.match(key):
        return None
    return key, value


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row per key; `tz` is unused (sysctl prints no time).

    Raises:
        ParseError: a line that starts with a dotted name but is not `name = value`, no key read
            while other lines were skipped, or a port range that is not two ports.
    """
    del tz
    values: dict[str, list[str]] = {}  # key -> its lines' values, in first-seen order
    where: dict[str, tuple[int, str]] = {}
    dropped = 0
    skips = Skips()

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if not line.strip():
            return
        kv = _split(line)
        if kv is None:
            first = line.split(None, 1)[0]
            if _KEY.match(first):  # a key's line in another form: never guess at its value
                raise lines.error(line_no, line, "not a sysctl `name = value` line")
            skips.add(line_no, line, "not a `name = value` line (sysctl's message on stderr?)")
            return
        values.setdefault(kv[0], []).append(kv[1])
        where.setdefault(kv[0], (line_no, line))

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        dropped += 1  # `vm.swappiness = 60` cut to `= 6`: never keep a shortened value

    lines = feed_lines(source, KIND, feed, cut_last)
    skips.refuse_if_nothing_read(len(values), lines)
    rows = []
    for key, found in values.items():
        value = "\n".join(found)
        number = float(value) if _NUMBER.match(value.strip()) else None
        rows.append({"key": key, "value": value, "value_num": number})
    df = records_frame(rows, SCHEMA, host=host)
    df.attrs.update(dropped_lines=dropped, skipped=skips)
    if PORT_RANGE_KEY in values:
        low, high = _port_range(values[PORT_RANGE_KEY], *where[PORT_RANGE_KEY], lines)
        df.attrs.update(port_range_low=low, port_range_high=high, ephemeral_ports=high - low + 1)
    return df


def _port_range(found: list[str], line_no: int, line: str, lines: Lines) -> tuple[int, int]:
    # Two ports separated by a TAB (procps) or spaces (hand-written configs): split on any whitespace.
    # The key asked for twice prints twice, the same each time; two different ranges are no range.
    parts = found[0].split() if len(set(found)) == 1 else []
    if len(parts) != 2 or not all(p.isdigit() and len(p) <= 5 for p in parts):
        raise lines.error(line_no, line, "ip_local_port_range is not two port numbers")
    low, high = int(parts[0]), int(parts[1])
    if not 0 < low <= high <= 65535:
        raise lines.error(line_no, line, "ip_local_port_range is not a range of ports")
    return low, high

"""pt-stalk collections: a directory of `YYYY_MM_DD_HH_MM_SS-<what>` files read as perfkit captures.

pt-stalk (Percona Toolkit) writes one set of files per collection, every name starting with the
collection's local start time (`2026_11_27_12_48_02-iostat`); a `--dest` directory holds as many sets
as collections ran (`--iterations`), and they may overlap (a collection runs in the background while
the next one is triggered). Here each prefix is one collection window: its files get the kind their
`<what>` names, the host from its `-hostname` file, the prefix as their step (so the rules and the
report keep windows apart), and the prefix's time as their start, which dates the captures that print
no date (iostat, vmstat, mysqladmin without -t and the processlist print none: sample k is stamped
start + k × interval, about a second off as pt-stalk starts its tools one after another; top's clock
gets its day from it). The lock waits and transactions are printed only in the seconds that had any:
their snapshots are all dated at the start, told apart by their `snapshot` number.

Files of a collection that repeat another file's numbers (`-iostat-overall`: pt-stalk's average of
`-iostat`) or hold pt-stalk's own bookkeeping are listed as not read, with why; a `<what>` this module
does not know goes to the parsers' sniff like any foreign file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from perfkit.parsers._common import to_utc

PREFIX = re.compile(r"^(?P<stamp>\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d)-(?P<what>[A-Za-z0-9_.-]+)$")

# <what> -> perfkit kind (pt-stalk 3.x's collect: `iostat -dx 1 N`, `vmstat 1 N`, `mpstat -P ALL 1 N`,
# `top -bn N`, `ps -eaF`, `mysqladmin ext -i1 -c N`, `SHOW ENGINE INNODB STATUS` at start and end,
# /proc/diskstats and `netstat -s` each second, `sysctl -a`, `df -k` as -disk-space).
KINDS = {
    "iostat": "iostat",
    "vmstat": "vmstat",
    "mpstat": "mpstat",
    "top": "top",
    "ps": "ps",
    "diskstats": "diskstats",
    "netstat_s": "netstat_s",
    "mysqladmin": "mysqladmin",
    "innodbstatus1": "innodb_status",
    "innodbstatus2": "innodb_status",
    "sysctl": "sysctl",
    "disk-space": "df",
    "variables": "mysql_variables",
    "processlist": "mysql_processlist",
    "lock-waits": "ptstalk_lock_waits",
    "transactions": "mysql_transactions",
}
NOT_READ = {
    "iostat-overall": "pt-stalk's average of the -iostat file beside it (that one is read)",
    "vmstat-overall": "pt-stalk's average of the -vmstat file beside it (that one is read)",
    "mpstat-overall": "pt-stalk's average of the -mpstat file beside it (that one is read)",
    "hostname": "pt-stalk's host name: the host of this collection's captures",
    "trigger": "pt-stalk's trigger message and options",
    "output": "pt-stalk's collector messages (the errors of the commands it ran)",
    "df": "pt-stalk's df series (TS-stamped); the -disk-space snapshot is read",
    "opentables1": "SHOW OPEN TABLES at the collection's start: no rule reads table use",
    "opentables2": "SHOW OPEN TABLES at the collection's end: no rule reads table use",
    "slave-status": "SHOW SLAVE STATUS each second: no rule reads replication",
}
# A directory is a pt-stalk collection when a prefix holds at least one of these beside a known kind.
_MARKERS = frozenset({"hostname", "trigger", "output", "disk-space", "diskstats", "mysqladmin"})


@dataclass(frozen=True)
class StalkFile:
    """One file of a pt-stalk collection: its kind (None: not read, `reason` says why), host, window."""

    prefix: str  # the collection's `YYYY_MM_DD_HH_MM_SS`: its step
    what: str
    kind: str | None
    host: str | None
    started_at: str  # ISO-8601 UTC: the prefix read in the host's time zone
    reason: str = ""


def collection(files: list[str], root: Path, tz: str = "UTC") -> dict[str, StalkFile]:
    """rel path -> StalkFile for every file of the pt-stalk collections among `files` (empty when none).

    Args:
        files: the archive's files, relative POSIX paths.
        root: the archive's root (to read the `-hostname` files).
        tz: the host's time zone: pt-stalk names files by its local clock.
    """
    groups: dict[tuple[str, str], dict[str, str]] = {}  # (dir, prefix) -> what -> rel
    for rel in files:
        parent, _, name = rel.rpartition("/")
        m = PREFIX.match(name)
        if m:
            groups.setdefault((parent, m["stamp"]), {})[m["what"]] = rel
    out: dict[str, StalkFile] = {}
    for (_, prefix), members in sorted(groups.items()):
        whats = set(members)
        if not (whats & _MARKERS and whats & set(KINDS)):
            continue
        try:
            start = datetime.strptime(prefix, "%Y_%m_%d_%H_%M_%S")
        except ValueError:
            continue  # digits in the shape of a date that is none (month 13): not pt-stalk's
        started = to_utc(start, tz).isoformat()
        host = _hostname(root, members.get("hostname"))
        for what, rel in members.items():
            kind = KINDS.get(what)
            reason = "" if kind else NOT_READ.get(what, "")
            out[rel] = StalkFile(prefix, what, kind, host, started, reason)
    return out


def _hostname(root: Path, rel: str | None) -> str | None:
    """The first line of a collection's `-hostname` file (`hostname` on the host), None if absent."""
    if rel is None:
        return None
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    name = text.strip().splitlines()[0].strip() if text.strip() else ""
    return name if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}", name) else None

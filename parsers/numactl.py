"""numactl: `numactl --hardware` (what perfkit runs, under LC_ALL=C), one row per NUMA node.

Reads the layout numactl 2.0.x prints (2.0.16 tested; numactl has no `--version` flag and does not
translate its output, so there is no locale variant):

    available: 2 nodes (0-1)
    node 0 cpus: 0 1 2 3
    node 0 size: 64314 MB
    node 0 free: 60712 MB
    node 1 cpus: 4 5 6 7
    ...
    node distances:
    node   0   1
      0:  10  21
      1:  21  10

The node list may have gaps (`available: 3 nodes (0-1,3)`: the matrix then has only the present
nodes, header `node   0   1   3`); a memory-only node (CXL, hot-plugged memory) prints
`node 3 cpus:` with an empty list; `size`/`free` may be `<not available>` (NaN); a machine
without distances prints `No distance information available.`; a kernel without NUMA makes
numactl print only `No NUMA available on this system` (exit 1): an empty frame, not an error.
CPU lists are read as printed, single numbers or ranges (`0-7`, the compressed form newer
numactl can print, with an optional `(8)` count). In VMs the size can be below the RAM (the guest's
firmware describes one node).

Scripts often save `numactl --hardware; numactl --show` in one file (either order). `--show` prints
the memory policy and bindings of the process that ran it (the script's shell, which the tools it
starts inherit), read into `show`:

    policy: default                          (bind, interleave, preferred, local, preferred-many)
    preferred node: current                  (`0`, `0 (interleave next)`, `1 (preferred-many)`)
    interleavemask: 0 1                      (interleave only, with `interleavenode: 0`)
    physcpubind: 0 1                         (the CPUs it may run on)
    cpubind: 0
    nodebind: 0                              (the nodes of those CPUs)
    membind: 0                               (the nodes it may allocate from)
    preferred:                               (numactl 2.0.16+)

A kernel without NUMA makes `--show` print `physcpubind: ...` and `No NUMA support available on
this system.`. A line of neither tool's form outside the distance matrix (a shell's message saved
with `2>&1`) is skipped and counted (`skipped`, parsers/_common.Skips): the capture is read
and marked partial; a file with no node, no `available:`/`No NUMA` line and no `--show` line, but
lines skipped, is refused naming the first. A line that starts as numactl's own (`node `,
`available:`) but does not match its form, or an unknown line inside the matrix, stays an error.

Schema (one row per node, in file order):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| node | Int64 | node number |
| cpus | string | the CPU list as printed (`0 1 2 3`; empty for a memory-only node) |
| cpu_count | Int64 | CPUs in that list (0 for a memory-only node) |
| size_mb | float64 | memory of the node, MB as numactl prints (MiB: bytes >> 20) |
| free_mb | float64 | free memory of the node, MB, at capture time |

What it reads beside its rows: `EXTRAS` (below). Tested on: tests/fixtures/numactl/ (README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from perfkit.errors import ParseError

from ._common import Extras, Lines, Skips, Source, feed_lines, records_frame


@dataclass(frozen=True)
class NumactlExtras(Extras):
    """What numactl reads beside its rows (see `_common.Extras`)."""

    # `{"nodes": [0, 1], "matrix": [[10, 21], [21, 10]]}`, rows and columns in `nodes` order: ACPI SLIT
    # distances, relative numbers where 10 means local access (21 reads as "about 2.1 times the local
    # cost"), **not nanoseconds**; both lists empty when the capture has no complete matrix (no NUMA, no
    # distance information, or a cut capture)
    distances: dict = field(default_factory=dict)
    # the count on the `available: N nodes` line; 0 for `No NUMA available`, None when it is missing
    available_nodes: int | None = None
    # what `numactl --show` printed, {} without it: `policy` and `preferred_node` (str, as printed),
    # `interleavenode` (int), and each mask (`physcpubind`, `cpubind`, `nodebind`, `membind`,
    # `preferred`, `interleavemask`) as a list of ints
    show: dict = field(default_factory=dict)


EXTRAS = NumactlExtras

KIND = "numactl"

SCHEMA: dict[str, str] = {
    "host": "string",
    "node": "Int64",
    "cpus": "string",
    "cpu_count": "Int64",
    "size_mb": "float64",
    "free_mb": "float64",
}

_MAX_ID = 1 << 20  # node and CPU numbers: libnuma's masks are far smaller; bigger is garbage
_AVAILABLE = re.compile(r"^available: (\d{1,7}) nodes \(([\d,\-]*)\)$")
_CPUS = re.compile(r"^node (\d{1,7}) cpus:(.*)$")
_MEM = re.compile(r"^node (\d{1,7}) (size|free): (?:(\d{1,15}) MB|(<not available>))$")
_DIST_HEADER = re.compile(r"^node((?:\s+\d{1,7})+)\s*$")
_DIST_ROW = re.compile(r"^\s*(\d{1,7}):((?:\s+\d{1,5})+)\s*$")
_CPU_ITEM = re.compile(r"^(\d{1,7})(?:-(\d{1,7}))?$")
_NO_NUMA = "No NUMA available on this system"
_NO_DISTANCES = "No distance information available."
# numactl --show (numactl.c `show()`): `name: value` lines, masks printed `%d ` per set bit
_SHOW = re.compile(
    r"^(policy|preferred node|interleavenode|physcpubind|cpubind|nodebind|membind|preferred|interleavemask)"
    r":(.*)$"
)
# numactl --hardware's own line starts: one that matches no form above is malformed, not foreign
_OWN = re.compile(r"^(?:node\b|available:)")
_SHOW_MASKS = frozenset({"physcpubind", "cpubind", "nodebind", "membind", "preferred", "interleavemask"})
_SHOW_NO_NUMA = "No NUMA support available on this system."


def sniff(text: str) -> bool:
    """numactl --hardware starts with `available: N nodes (...)` (or says there is no NUMA); after a
    `numactl --show` (`policy: ...` first) its `available:` line follows within a few lines."""
    lines = [line.rstrip() for line in text[:4096].splitlines()[:20] if line.strip()]
    if not lines:
        return False
    if lines[0].startswith("policy: "):
        return any(_AVAILABLE.match(line) for line in lines[1:12])
    return bool(_AVAILABLE.match(lines[0])) or lines[0].strip() == _NO_NUMA


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse a `numactl --hardware` capture into one row per NUMA node.

    Args:
        source: path, text stream or string.
        host: host name for the `host` column.
        tz: unused (numactl prints no time); accepted for the common parser signature.

    Returns:
        A frame with exactly the `SCHEMA` columns, its attrs the `EXTRAS` fields.

    Raises:
        ParseError: a line inside the distance matrix that is no distance row, a node missing from
            the `available:` list, a distance row whose length does not match the header, a bad
            `--show` mask; nothing read while lines were skipped.
    """
    state = _State()
    try:
        lines = feed_lines(source, KIND, state.feed, state.cut_last)
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        reason = f"cannot parse ({type(exc).__name__}: {exc})"
        raise ParseError(KIND, state.path, state.line_no, "", reason) from exc
    read = len(state.nodes) + (state.available is not None) + bool(state.show)
    state.skips.refuse_if_nothing_read(read, lines)
    df = records_frame([{"node": node, **fields} for node, fields in state.nodes.items()], SCHEMA, host=host)
    df.attrs.update(
        distances=state.distances(),
        available_nodes=state.available,
        show=state.show,
        dropped_lines=state.dropped,
        notes=state.notes,
        skipped=state.skips,
    )
    return df


class _State:
    """The line walk: `available:`, per-node lines, then the distance matrix."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.line_no = 0
        self.line = ""
        self.available: int | None = None
        self.listed: set[int] | None = None  # node numbers from the `available:` line
        self.nodes: dict[int, dict[str, object]] = {}  # node -> its SCHEMA fields
        self.in_distances = False
        self.dist_nodes: list[int] | None = None
        self.dist_rows: dict[int, list[int]] = {}
        self.no_numa = False
        self.show: dict[str, object] = {}
        self.dropped = 0
        self.notes: list[str] = []
        self.skips = Skips()

    def error(self, reason: str) -> ParseError:
        """A ParseError naming the line being read."""
        return ParseError(KIND, self.path, self.line_no, self.line, reason)

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.path, self.line_no, self.line = lines.path, line_no, line
        text = line.rstrip()  # numactl ends every matrix line with a space
        if not text:
            return
        if self.in_distances:
            if self._matrix_done() and not _DIST_ROW.match(text):
                self.in_distances = False  # another tool's output follows the matrix
            else:
                self._distance_line(text)
                return
        if m := _SHOW.match(text):
            self._show_line(m[1], m[2].strip())
        elif text == _SHOW_NO_NUMA:
            self.notes.append(f"numactl --show: {_SHOW_NO_NUMA}")
        elif self.no_numa:
            raise self.error(f"text after {_NO_NUMA!r}")
        elif m := _AVAILABLE.match(text):
            if self.available is not None or self.nodes:
                raise self.error("second `available:` line: two captures in one file?")
            self.available = int(m[1])
            self.listed = set()
            for item in filter(None, m[2].split(",")):
                self.listed.update(self._range(item, "node"))
            if len(self.listed) != self.available:
                raise self.error(f"{self.available} nodes announced, {len(self.listed)} listed")
        elif text == _NO_NUMA:
            if self.available is not None or self.nodes:
                raise self.error(f"{_NO_NUMA!r} after node lines")
            self.no_numa = True
            self.available = 0
            self.notes.append(f"numactl: {_NO_NUMA} (kernel without NUMA): no nodes")
        elif m := _CPUS.match(text):
            node = self._node(int(m[1]))
            node["cpus"] = m[2].strip()
            node["cpu_count"] = self._cpu_count(m[2].strip())
        elif m := _MEM.match(text):
            self._node(int(m[1]))[f"{m[2]}_mb"] = float(m[3]) if m[3] is not None else float("nan")
        elif text == "node distances:":
            self.in_distances = True
        elif text == _NO_DISTANCES:
            self.notes.append("numactl: no distance information available")
        elif _OWN.match(text):
            raise self.error("not a `numactl --hardware` line")
        else:
            self.skips.add(line_no, line, "not a `numactl --hardware` or `--show` line")

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        """A last line without newline was cut mid-write: `size: 66` may be `size: 6618 MB` cut short."""
        self.dropped += 1
        if self.in_distances:
            self.notes.append("distance matrix cut off: attrs distances left empty")

    def _matrix_done(self) -> bool:
        return self.dist_nodes is not None and set(self.dist_rows) == set(self.dist_nodes)

    def _show_line(self, key: str, value: str) -> None:
        """A `numactl --show` line into `show`: masks as lists of ints, the rest as printed."""
        name = key.replace(" ", "_")
        if name in self.show:
            raise self.error(f"second `{key}:` line: two `numactl --show` in one file?")
        if key in _SHOW_MASKS:
            tokens = value.split()
            if not all(t.isdigit() and len(t) <= 7 for t in tokens):
                raise self.error(f"`{key}:` is not a list of numbers")
            self.show[name] = [int(t) for t in tokens]
        elif key == "interleavenode":
            if not value.isdigit() or len(value) > 7:
                raise self.error("`interleavenode:` is not a node number")
            self.show[name] = int(value)
        else:
            self.show[name] = value

    def _node(self, node: int) -> dict[str, object]:
        if node >= _MAX_ID:
            raise self.error(f"implausible node number {node}")
        if self.listed is not None and node not in self.listed:
            raise self.error(f"node {node} is not on the `available:` line")
        return self.nodes.setdefault(node, {})

    def _range(self, item: str, what: str) -> range:
        """`3` or `0-7` (numactl compresses runs of numbers into ranges)."""
        m = _CPU_ITEM.match(item)
        if m is None:
            raise self.error(f"bad {what} list item {item!r}")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo or hi >= _MAX_ID:
            raise self.error(f"bad {what} range {item!r}")
        return range(lo, hi + 1)

    def _cpu_count(self, cpus: str) -> int:
        """CPUs in a list as printed: `0 1 2 3`, or ranges `0-7, 16-23 (16)` (the count wins when printed)."""
        tokens = cpus.replace(",", " ").split()
        printed: int | None = None
        if tokens and tokens[-1].startswith("(") and tokens[-1].endswith(")") and tokens[-1][1:-1].isdigit():
            printed = int(tokens.pop()[1:-1])
        count = sum(len(self._range(token, "CPU")) for token in tokens)
        if printed is not None and printed != count:
            raise self.error(f"CPU list holds {count} CPUs but says ({printed})")
        return count

    def _distance_line(self, text: str) -> None:
        if self.dist_nodes is None:
            m = _DIST_HEADER.match(text)
            if m is None:
                raise self.error("expected the distance header `node   0   1 ...`")
            self.dist_nodes = [int(t) for t in m[1].split()]
            if len(set(self.dist_nodes)) != len(self.dist_nodes):
                raise self.error("a node appears twice in the distance header")
            if self.listed is not None and set(self.dist_nodes) != self.listed:
                raise self.error("distance header does not list the `available:` nodes")
            return
        m = _DIST_ROW.match(text)
        if m is None:
            raise self.error("not a distance row `  0:  10  21 ...`")
        node, values = int(m[1]), [int(t) for t in m[2].split()]
        if node not in self.dist_nodes or node in self.dist_rows:
            raise self.error(f"distance row for node {node}: not in the header, or repeated")
        if len(values) != len(self.dist_nodes):
            raise self.error(f"{len(values)} distances for {len(self.dist_nodes)} nodes in the header")
        self.dist_rows[node] = values

    def distances(self) -> dict[str, list]:
        """The SLIT matrix in header order; empty lists unless every row came."""
        nodes = self.dist_nodes or []
        if not nodes or set(self.dist_rows) != set(nodes):
            if nodes and not any("cut off" in n for n in self.notes):
                self.notes.append("distance matrix incomplete: attrs distances left empty")
            return {"nodes": [], "matrix": []}
        return {"nodes": list(nodes), "matrix": [self.dist_rows[n] for n in nodes]}

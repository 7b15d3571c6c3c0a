"""df: GNU coreutils `df -P -k` (what perfkit runs: `LC_ALL=C df -P -k`), one row per filesystem.

Reads:

- `df -P -k`: `Filesystem 1024-blocks Used Available Capacity Mounted on` (coreutils 9.1 tested);
- `df -P` under `POSIXLY_CORRECT` (`512-blocks`): any `N-blocks` / `NK-blocks` header is honoured, the
  counts converted to KiB by the block size it names (512 -> /2, 1 -> /1024);
- plain `df` (`1K-blocks ... Use%`), including the wrapped entry of older coreutils (<= 8.20) for a
  long filesystem name: the name alone on one line, its numbers indented on the next (joined);
- other locales: df translates only its header (`Dateisystem 1024-Blöcke Benutzt Verfügbar
  Kapazität Eingehängt auf`, `文件系统 1024的块 已用 ...`); rows are integers, `N%` and the mount point
  under every locale. So the header's second token must name the block size (`1024-Blöcke`,
  `1024的块`), and each row is matched by its shape (name, four integers, `N%` or `-`, mount point),
  never by column position. Thousands separators (`df -B "'1"` under de_DE: `270.553.174.016`) are
  refused with "capture not taken under LC_ALL=C", never read as another number;
- `df -P -k -T` (`Filesystem Type 1024-blocks ...`): the type, the last word before the numbers, is
  not kept (a note says so); the filesystem name is what precedes it;
- df's messages saved with stdout (`df -P -k /gone / > f 2>&1`: `df: /gone: No such file or
  directory`, `df: /mnt/nfs: Stale file handle`): lines starting `df: ` are skipped and counted
  (`skipped`, parsers/_common.Skips), the capture marked partial (a filesystem asked for is missing).
  A file with no row read but such lines skipped is refused naming the first.

Not read (ParseError naming the header): `df -h`/`-H` (rounded sizes whose base, 1024 or 1000, is not
printed: `12G` under both), `-i` (inodes), `--output` (other columns), `-B M` (unit suffixes).

The filesystem name and the mount point may contain spaces (`pk scratch` mounted on
`/tmp/pk data vol`): the name is everything before the four numbers, the mount point everything
after the blanks that follow the capacity (one in coreutils 9; older df pads a `-` capacity with
two), verbatim: a mount point is an absolute path, so it never starts with a blank.

Schema (one row per filesystem line, in file order):

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument |
| filesystem | string | the device or source as printed (`/dev/vda`, `tmpfs`, `srv:/export`) |
| size_kb | float64 | size in KiB (float: a 512-byte count halves to .5); `-` -> NaN |
| used_kb | float64 | used KiB |
| avail_kb | float64 | KiB available to non-root users; negative once root's reserve is used |
| capacity_pct | float64 | `Capacity`/`Use%`: used / (used + avail), rounded up by df |
| mount | string | the mount point, verbatim (spaces included) |

capacity_pct leaves out root's reserved blocks, so it exceeds used / size (17 % vs 5.9 % on the real
fixture's `/`): it is what a writer sees, and what `disk.full` should read. Pseudo filesystems of
size 0 print `-` there: NaN, never 0.

What it reads beside its rows: `EXTRAS` (below). df has no time: the capture time is the manifest's.
Tested on: tests/fixtures/df/ (README.md there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from perfkit.errors import ParseError

from ._common import Extras, Lines, Skips, Source, feed_lines, records_frame


@dataclass(frozen=True)
class DfExtras(Extras):
    """What df reads beside its rows (see `_common.Extras`); `skipped` holds df's messages,
    `dropped_lines` also counts a wrapped name whose numbers never came, `notes` says conversions, a
    localised header, -T."""

    # bytes per block of the size columns as the header names it; None without a header
    block_size: int | None = None


EXTRAS = DfExtras

KIND = "df"

SCHEMA: dict[str, str] = {
    "host": "string",
    "filesystem": "string",
    "size_kb": "float64",
    "used_kb": "float64",
    "avail_kb": "float64",
    "capacity_pct": "float64",
    "mount": "string",
}

_NUM = r"-?\d++|-"
# Possessive quantifiers (`++`): whitespace and digits are never given back, so a long line of
# spaces or digits costs linear time, not quadratic backtracking.
_TAIL = (
    rf"\s++(?P<size>{_NUM})\s++(?P<used>{_NUM})\s++(?P<avail>{_NUM})\s++(?P<cap>\d++%|-)\s++(?P<mount>.+)$"
)
_MAX_LINE = 16384  # a df line is a name, four numbers and a path (PATH_MAX 4096): longer is garbage
# The name is the shortest prefix after which four counts and a capacity follow: a name with
# spaces ("pk scratch") extends until the numbers line up.
_ROW = re.compile(rf"^(?P<fs>\S(?:.*?\S)?){_TAIL}")
# The second line of a wrapped entry (old non-POSIX df): indented numbers, no name.
_CONTINUATION = re.compile(rf"^{_TAIL}")
# A row whose counts carry thousands separators (df -B "'1" under a non-C locale).
_GROUPED = re.compile(r"^\S.*?\s+\d{1,3}(?:[.,'\u00a0\u202f]\d{3})+\s")
# Values with a unit suffix (-B M, -h): `258020M`, `2.0M`.
_SUFFIXED = re.compile(r"\s\d+(?:[.,]\d+)?[KMGTPEZY]\s")
# The header's second token names the block size: 1024-blocks, 512-blocks, 1K-blocks,
# 1024-Blöcke (de_DE), 1024的块 (zh_CN), 1kB-blocks (-B kB: powers of 1000).
_BLOCK = re.compile(r"^(\d+)([kKMGTPEZY]?)(iB|B)?(?:-|的)\S*$")
_UNITS = "KMGTPEZY"
_C_HEADER_TAIL = (("Used",), ("Available", "Avail"), ("Capacity", "Use%"))
_MESSAGE = "df: "  # df's own messages on stderr: `df: /gone: No such file or directory`
_SNIFF = re.compile(r"^\S+\s+\d+[kKMGTPEZY]?(?:iB|B)?(?:-|的)\S*\s+\S+\s+\S+\s+\S+\s+\S+")


def sniff(text: str) -> bool:
    """df output starts with its header (after any `df: ...` message): a name, the block size
    (`1024-blocks`; after `Type` with -T), then 4+ words."""
    for line in text[:4096].splitlines()[:10]:
        if line.strip() and not line.startswith(_MESSAGE):
            if line.startswith("Filesystem ") and line.split()[1:2] == ["Type"]:
                line = line.replace(" Type", "", 1)
            return bool(_SNIFF.match(line)) and not any(ch.isdigit() for ch in line.split()[2])
    return False


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row per filesystem; `tz` is unused (df prints no time).

    Raises:
        ParseError: no header before the rows, a header this parser does not read (`-h`, `-i`,
            `--output`), a malformed row mid-file, thousands separators (not taken under LC_ALL=C).
    """
    state = _State()
    try:
        lines = feed_lines(source, KIND, state.feed, state.cut_last)
    except (ValueError, OverflowError, IndexError) as exc:  # a safety net: nothing else escapes
        path = state.lines.path if state.lines is not None else None
        raise ParseError(
            KIND, path, state.line_no, "", f"cannot parse ({type(exc).__name__}: {exc})"
        ) from exc
    if state.pending is not None:  # a wrapped name whose numbers never came: cut off after it
        state.dropped += 1
    state.skips.refuse_if_nothing_read(len(state.rows), lines)
    df = records_frame(state.rows, SCHEMA, host=host)
    df.attrs.update(
        dropped_lines=state.dropped, block_size=state.block_size, notes=state.notes, skipped=state.skips
    )
    return df


class _State:
    """The line walk: the header sets the block size, rows (and wrapped pairs) become records."""

    def __init__(self) -> None:
        self.lines: Lines | None = None  # for the safety net's message
        self.line_no = 0
        self.block_size: int | None = None
        self.rows: list[dict[str, object]] = []
        self.pending: tuple[int, str] | None = None  # a wrapped filesystem name awaiting its numbers
        self.dropped = 0
        self.notes: list[str] = []
        self.skips = Skips()
        self.typed = False  # df -T: a Type column after the name

    def feed(self, line_no: int, line: str, lines: Lines) -> None:
        self.lines, self.line_no = lines, line_no
        if not line.strip():
            return
        if line.startswith(_MESSAGE) and self.pending is None:
            self.skips.add(line_no, line, "df's message on stderr (a filesystem it could not read)")
            return
        if len(line) > _MAX_LINE:
            raise lines.error(line_no, line, f"line of {len(line)} characters: not df output")
        if self.pending is not None:
            name_no, name = self.pending
            cont = _CONTINUATION.match(line)
            if cont is None:
                raise lines.error(
                    name_no, name, "neither a df row nor a wrapped filesystem name followed by its numbers"
                )
            self.pending = None
            self._add(name.strip(), cont, name_no, name, lines)
            return
        row = _ROW.match(line)
        if row is not None:
            self._add(row["fs"], row, line_no, line, lines)
            return
        tokens = line.split()
        if tokens[:2] == ["Filesystem", "Type"] and self.block_size is None:
            self.typed = True
            self.notes.append("df -T: the Type column is not kept")
            del tokens[1]
        block = _BLOCK.match(tokens[1]) if len(tokens) >= 6 and not tokens[2][:1].isdigit() else None
        if block is not None:
            self._header(line_no, line, tokens, block, lines)
        elif self.block_size is None:
            raise lines.error(
                line_no,
                line,
                "not a df block-count header (`df -P -k` expected; df -h/-H/-i/-T/--output are not read)",
            )
        elif _GROUPED.match(line):
            raise lines.error(
                line_no, line, "counts with thousands separators: capture not taken under LC_ALL=C"
            )
        elif _SUFFIXED.search(f" {line} "):
            raise lines.error(
                line_no, line, "values with a unit suffix (df -h or -B M): capture with df -P -k"
            )
        elif not line[0].isspace() and len(tokens) == 1:
            self.pending = (line_no, line)  # old df wraps a long name onto its own line
        else:
            raise lines.error(line_no, line, "malformed df row")

    def cut_last(self, line_no: int, line: str, lines: Lines) -> None:
        """A last line without newline was cut mid-write: its numbers or mount point may be short."""
        self.dropped += 1

    def _header(self, line_no: int, line: str, tokens: list[str], m: re.Match[str], lines: Lines) -> None:
        unit, decimal = m[2].upper(), m[3] == "B"
        power = _UNITS.index(unit) + 1 if unit else 0
        size = int(m[1]) * (1000 if decimal else 1024) ** power
        if size <= 0 or size > 1 << 60:
            raise lines.error(line_no, line, f"implausible block size {tokens[1]!r}")
        if tokens[0] == "Filesystem":
            known = all(word in allowed for word, allowed in zip(tokens[2:5], _C_HEADER_TAIL, strict=True))
            if not known or tokens[5:] != ["Mounted", "on"]:
                raise lines.error(
                    line_no,
                    line,
                    "unexpected df columns (df -T/-i/--output are not read): capture with df -P -k",
                )
        elif "header in another locale" not in " ".join(self.notes):
            self.notes.append(
                f"header in another locale ({tokens[0]} {tokens[1]} ...): rows read by their shape"
            )
        if self.block_size is not None and size != self.block_size:
            raise lines.error(line_no, line, f"block size changes from {self.block_size} to {size} mid-file")
        if self.block_size is None and size != 1024:
            self.notes.append(f"{size}-byte blocks converted to KiB")
        self.block_size = size

    def _add(self, fs: str, m: re.Match[str], line_no: int, line: str, lines: Lines) -> None:
        """A row: `fs` is the text before its numbers (with -T, the type's word is cut off it)."""
        if self.block_size is None:
            raise lines.error(line_no, line, "df row before any header: the header gives the block size")
        if self.typed:
            fs = fs.rpartition(" ")[0]
            if not fs.strip():
                raise lines.error(line_no, line, "df -T row without a filesystem name before its type")
            fs = fs.rstrip()
        factor = self.block_size / 1024
        self.rows.append(
            {
                "filesystem": fs,
                "size_kb": _count(m["size"]) * factor,
                "used_kb": _count(m["used"]) * factor,
                "avail_kb": _count(m["avail"]) * factor,
                "capacity_pct": float("nan") if m["cap"] == "-" else float(m["cap"][:-1]),
                "mount": m["mount"],
            }
        )


def _count(token: str) -> float:
    return float("nan") if token == "-" else float(token)

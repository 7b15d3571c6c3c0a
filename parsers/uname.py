"""uname: `uname -a` (what perfkit runs, under `LC_ALL=C`), one row.

GNU coreutils prints, space separated: kernel name, node name, kernel release, kernel version,
machine, processor and hardware platform (each left out when `unknown`, as on Debian; RHEL's
patched coreutils prints them: `x86_64 x86_64 x86_64`), operating system:

    Linux vm 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22) x86_64 GNU/Linux
    Linux vm 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux      (this lab, coreutils 9.1)

The kernel version holds spaces, so the line is read from both ends: kernel name, node name and
release are the first three words. From the right, the last word is the operating system when it
looks like one (`GNU/Linux`, any `X/Y`, `Android`, `Linux`, `Cygwin`, `Msys`; BSD and macOS print
none: NA); before it, a run of up to three architecture words (`x86_64`, `aarch64`, `arm64`, `i686`,
`armv7l`, `ppc64le`, `s390x`, `riscv64`, `loongarch64`, `mips64`, `sparc64`, `amd64`, `i86pc`) is
machine, processor, platform: the machine is its first word. With no architecture word there, the
word before the operating system (or the last word) is the machine as printed, and a note says so.
The kernel version is everything between the release and the machine, verbatim.

| column | dtype | meaning |
|---|---|---|
| host | string | the `host` argument (the node name is uname's own, often different) |
| kernel_name | string | `Linux`, `Darwin`, `FreeBSD` |
| nodename | string | the host's name as the kernel knows it |
| kernel_release | string | `6.1.0-28-amd64` |
| kernel_version | string | `#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)`, verbatim |
| machine | string | hardware name: `x86_64`, `aarch64` |
| operating_system | string | `GNU/Linux`; NA when not printed |

`df.attrs`: `dropped_lines` (a last line cut off mid-write), `notes` (how the right end was read).
A second line, or fewer than five words, is a ParseError. Tested on: tests/fixtures/uname/.
"""

from __future__ import annotations

import re

import pandas as pd

from ._common import Lines, Source, feed_lines, records_frame

KIND = "uname"

SCHEMA: dict[str, str] = {
    "host": "string",
    "kernel_name": "string",
    "nodename": "string",
    "kernel_release": "string",
    "kernel_version": "string",
    "machine": "string",
    "operating_system": "string",
}

_ARCH = re.compile(
    r"^(?:x86_64|amd64|i[3-6]86|i86pc|aarch64(?:_be)?|arm64|armv\d+\w*|ppc(?:64)?(?:le)?|s390x?|"
    r"riscv(?:32|64)|loongarch64|mips(?:64)?(?:el)?|sparc(?:64)?|ia64|alpha|parisc64|sh4|m68k)$"
)
_OS = re.compile(r"^(?:[A-Za-z][\w.+-]*/[\w.+-]+|Android|Linux|Cygwin|Msys|Solaris|illumos)$")
_KERNEL = re.compile(r"^[A-Za-z][\w.+-]*$")
_WORD = re.compile(r"\S+")
_MAX_LINE = 4096


def sniff(text: str) -> bool:
    """One `uname -a` line: a kernel name, a release with a digit, an architecture or OS at the end."""
    lines = [ln for ln in text[:4096].splitlines() if ln.strip()]
    if len(lines) != 1:
        return False
    words = lines[0].split()
    return (
        len(words) >= 5
        and bool(_KERNEL.match(words[0]))
        and any(c.isdigit() for c in words[2])
        and (bool(_OS.match(words[-1])) and bool(_ARCH.match(words[-2])) or bool(_ARCH.match(words[-1])))
    )


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """One row; `tz` is unused (no time).

    Raises:
        ParseError: not a uname line (fewer than five words, no kernel name), or a second line.
    """
    rows: list[dict[str, str | None]] = []
    notes: list[str] = []
    dropped = 0

    def read(line_no: int, line: str, lines: Lines, notes_to: list[str]) -> dict[str, str | None]:
        if rows:
            raise lines.error(line_no, line, "uname -a prints one line: a second one follows")
        return _read(line_no, line, lines, notes_to)

    def feed(line_no: int, line: str, lines: Lines) -> None:
        if line.strip():
            rows.append(read(line_no, line, lines, notes))

    def cut_last(line_no: int, line: str, lines: Lines) -> None:
        nonlocal dropped
        read(line_no, line, lines, [])  # garbage is still an error; a cut line is dropped
        dropped += 1

    feed_lines(source, KIND, feed, cut_last)
    df = records_frame(rows, SCHEMA, host=host)
    df.attrs.update(dropped_lines=dropped, notes=notes)
    return df


def _read(line_no: int, line: str, lines: Lines, notes: list[str]) -> dict[str, str | None]:
    if len(line) > _MAX_LINE or not line.isprintable():
        raise lines.error(line_no, line, "not a uname -a line (unprintable or too long)")
    words = list(_WORD.finditer(line))
    if len(words) < 5 or not _KERNEL.match(words[0][0]) or not any(c.isdigit() for c in words[2][0]):
        raise lines.error(line_no, line, "not a uname -a line (kernel name, node, release, version, machine)")
    end = len(words)
    os_name: str | None = None
    if _OS.match(words[-1][0]) and not _ARCH.match(words[-1][0]):
        os_name = words[-1][0]
        end -= 1
    # machine, processor, platform: a run of up to three architecture words before the OS
    first = end
    while first > 4 and end - first < 3 and _ARCH.match(words[first - 1][0]):
        first -= 1
    if first == end:
        first = end - 1
        if first < 4:
            raise lines.error(line_no, line, "not a uname -a line (no kernel version before the machine)")
        notes.append(f"machine {words[first][0]!r} is no known architecture: taken as printed")
    elif end - first > 1:
        extra = " ".join(w[0] for w in words[first + 1 : end])
        notes.append(f"processor and hardware platform ({extra}) printed after the machine: not kept")
    return {
        "kernel_name": words[0][0],
        "nodename": words[1][0],
        "kernel_release": words[2][0],
        "kernel_version": line[words[3].start() : words[first - 1].end()],
        "machine": words[first][0],
        "operating_system": os_name,
    }

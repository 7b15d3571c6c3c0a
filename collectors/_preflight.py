"""Preflight: what a host is asked in one round trip of its control shell before its window opens.

The work dir is made; the tools this run's captures need are looked up with their versions; the
host's clock is read (its offset from the controller goes into every record); `df` tells the free
space, refused below the floor plus what the run will write on the host (G1: captures must never
fill a production disk); earlier runs' orphans are swept. Every process here costs the host CPU on
every run, so only what this run's captures need is asked, with builtins where they do (`read`,
`command -v`) and one process per version probe.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from perfkit.errors import CollectError

from ._shell import SNAPSHOT_TIMEOUT_S, ControlShell, sweep_command
from .captures import CaptureSpec

FREE_FLOOR_BYTES = 100 << 20
FREE_FLOOR_PCT = 5
_NO_DELAYACCT = "kernel.task_delayacct=0: SWAPIN and IO% unavailable"


@dataclass
class Found:
    """What the preflight found on one host."""

    versions: dict[str, str | None] = field(default_factory=dict)  # tool -> version, or "MISSING"
    offset: float | None = None  # the host's clock minus the controller's, s
    uid: str | None = None  # asked only when a capture needs root
    cpus: int = 1
    df: str = ""  # "<free KiB> <size KiB>" of the work dir's filesystem
    leftovers: int | None = None  # earlier runs' orphans killed
    no_delayacct: bool = False  # iotop then prints ?unavailable? for SWAPIN and IO%

    def record_fields(self, spec: CaptureSpec) -> dict[str, Any]:
        """What this means for a capture's record: the clock offset, and the tool's version or why
        the capture cannot run."""
        fields: dict[str, Any] = {"clock_offset_s": self.offset}
        version = self.versions.get(spec.tool)
        if version == "MISSING":
            fields.update(status="unavailable", reason=f"{spec.tool} not installed")
            return fields
        fields["tool_version"] = version
        if spec.needs_root and self.uid not in (None, "0"):
            fields.update(
                status="unavailable", reason=f"{spec.tool} needs root (connected as uid {self.uid})"
            )
        elif spec.id == "iotop" and self.no_delayacct:
            fields["reason"] = _NO_DELAYACCT  # said where readers look; the capture still runs
        return fields


def script(specs: tuple[CaptureSpec, ...], workdir: str, run_id: str) -> str:
    """The preflight's piece of shell; its `@@key value` lines are read by `read`."""
    wd = shlex.quote(workdir)
    lines = [f"umask 077; mkdir -p {wd} || exit 90", "nl='\n'"]
    if any(s.needs_root for s in specs):
        lines.append('echo "@@id $(id -u)"')
    for tool in sorted({s.tool for s in specs}):
        version = next((s.version for s in specs if s.tool == tool and s.version), "")
        probe = f'v=$({{ {version}; }} 2>&1); printf "%s\\n" "${{v%%"$nl"*}}"' if version else "echo present"
        lines.append(
            f"if command -v {shlex.quote(tool)} >/dev/null 2>&1; then printf '@@tool %s ' "
            f"{shlex.quote(tool)}; {probe}; else echo '@@missing {tool}'; fi"
        )
    lines.append(f"echo @@df; df -Pk {wd}")
    if any(s.host_bytes[1] for s in specs):
        lines.append('echo "@@nproc $(nproc 2>/dev/null || echo 1)"')
    if any(s.id == "iotop" for s in specs):
        lines.append('d=; { read -r d </proc/sys/kernel/task_delayacct; } 2>/dev/null; echo "@@delayacct $d"')
    lines.append(sweep_command(run_id, mine=False))
    lines.append('echo "@@clock $(date +%s.%N)"')
    return "\n".join(lines)


def read(out: bytes, t0: float, t1: float) -> Found:
    """The preflight's output, `t0` and `t1` the controller's clock around the round trip."""
    found = Found()
    lines = out.decode(errors="replace").splitlines()
    for i, line in enumerate(lines):
        key, _, rest = line.partition(" ")
        if key == "@@tool":
            tool, _, version = rest.partition(" ")
            found.versions[tool] = version.strip() or None
        elif key == "@@missing":
            found.versions[rest.strip()] = "MISSING"
        elif key == "@@clock":
            try:
                found.offset = round(float(rest) - (t0 + t1) / 2, 3)
            except ValueError:
                found.offset = None
        elif key == "@@id":
            found.uid = rest.strip()
        elif key == "@@leftovers" and rest.strip().isdigit():
            found.leftovers = int(rest)
        elif key == "@@nproc":
            found.cpus = int(rest) if rest.strip().isdigit() else 1
        elif key == "@@df":
            # `df -P`: a header, then one line per filesystem; the device name may hold spaces
            fields = lines[i + 2].split() if len(lines) > i + 2 else []
            found.df = f"{fields[-3]} {fields[-5]}" if len(fields) >= 6 else rest
        elif key == "@@delayacct":
            found.no_delayacct = rest.strip() == "0"
    return found


def run(control: ControlShell, host: str, specs: tuple[CaptureSpec, ...], run_id: str) -> Found:
    """Run the preflight in `control`; a shell that fails it (no work dir) fails the host."""
    t0 = time.time()
    code, out, err = control.run(script(specs, control.workdir, run_id), timeout=SNAPSHOT_TIMEOUT_S)
    t1 = time.time()
    if code != 0:
        raise CollectError(host, f"preflight failed (exit {code}): {err.decode(errors='replace')[:200]}")
    return read(out, t0, t1)


def check_space(
    host: str, workdir: str, found: Found, specs: tuple[CaptureSpec, ...], *, window: int, interval: int
) -> None:
    """Refuse a host below the free-space floor plus what this run will write there (G1): captures
    must never fill a production disk. Everything else streams back to the controller, and what
    stays on the host is bounded up front (perf's --max-size, sar's samples), so once this check
    passes the run cannot take the host below its floor."""
    try:
        free_kb, size_kb = (int(x) for x in found.df.split())
    except ValueError:
        return  # df printed something unexpected; the byte caps still bound what we write
    samples = max(1, window // interval)
    planned = {
        s.id: s.host_bytes_at_most(samples=samples, cpus=found.cpus)
        for s in specs
        if s.host_bytes != (0, 0, 0)
    }
    floor_kb = max(FREE_FLOOR_BYTES >> 10, size_kb * FREE_FLOOR_PCT // 100)
    need_kb = floor_kb + (sum(planned.values()) >> 10)
    if free_kb < need_kb:
        plan = ", ".join(f"{k} up to {v >> 20} MiB" for k, v in planned.items())
        raise CollectError(
            host,
            f"only {free_kb >> 10} MiB free of {size_kb >> 10} MiB for {workdir}; collection "
            f"needs at least {need_kb >> 10} MiB (floor {floor_kb >> 10} MiB"
            + (f"; on the host: {plan}" if plan else "")
            + ")",
        )

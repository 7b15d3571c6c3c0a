"""go-tpc's TPC-C as perfkit's load generator against MySQL/MariaDB/TiDB: preflight, prepare, runs.

go-tpc takes the password only as `-p` in its argv: perfkit sends it on stdin into a shell variable on
the load host (collectors/_load.py), so it is in no command line perfkit builds, records or logs; it
is in go-tpc's own argv there, where `ps auxww` and `iotop` captures see it, and those are masked
before they are written (design.md: redacted captures). `prepare` loads with `--no-check`: the
consistency check after loading takes minutes even at one warehouse (lab.md §6). Runs print per-second
`[Current]` lines (`--interval 1s`) and `--ignore-error` keeps a deadlock from ending a worker: failed
transactions are counted as `*_ERR` ops and judged by their share. Success is judged from the parsed
output (parsers/gotpc.py): go-tpc can exit 0 on a failure (go-tpc #206).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfkit.errors import PerfkitError

from ._load import HostedRunner, LoadHost, LoadResult, StartGate, judge_go_tool
from .load_sysbench import check_database, count_rows
from .mysql_sampler import DbTarget


@dataclass
class GoTpcRunner(HostedRunner):
    """go-tpc tpcc against a MySQL-protocol database, here or on a client host. A context manager."""

    target: DbTarget
    warehouses: int = 1
    binary: str = "go-tpc"
    host: LoadHost | None = None
    version: str | None = None
    tool: str = field(default="go-tpc", init=False)
    kind: str = field(default="gotpc", init=False)

    def __post_init__(self) -> None:
        if self.warehouses < 1:
            raise ValueError("warehouses: at least 1")
        if self.target.socket:
            raise ValueError("go-tpc connects over TCP only: give a host and port, not a socket")
        self.host = self.host or LoadHost(secrets=(self.target.password,))

    def argv(self, command: str, *, threads: int, time_s: int | None = None) -> list[str]:
        """`go-tpc tpcc ... <command>` without the password (`stream` appends `-p` from stdin)."""
        t = self.target
        args = [self.binary, "tpcc", "-H", t.host, "-P", str(t.port), "-U", t.user, "-D", t.db]
        args += ["--warehouses", str(self.warehouses), "-T", str(threads)]
        if command == "run":
            return [*args, "--interval", "1s", "--ignore-error", "run", "--time", f"{time_s}s"]
        if command == "prepare":
            return [*args, "--dropdata", "prepare", "--no-check"]
        return [*args, command]

    def shown(self, argv: list[str]) -> str:
        return shlex.join(argv) + " -p <from stdin>"

    def preflight(self) -> None:
        """go-tpc exists on the load host and the database answers to these credentials (L1)."""
        assert self.host is not None
        self.binary = self.host.which(self.binary)
        rc, out = self.host.run(f"{shlex.quote(self.binary)} version 2>&1", timeout=30)
        version = next((line for line in out.splitlines() if "Release version" in line), "")
        if rc != 0 or not version:
            raise PerfkitError(f"go-tpc: `{self.binary} version` failed on {self.host.name}: {out[:200]}")
        self.version = "go-tpc " + version.split(":", 1)[1].strip()
        check_database(self.target)

    def prepare(self, *, timeout: float = 3600) -> None:
        """Drop and load the TPC-C tables (`--no-check`)."""
        self._admin("prepare", timeout)

    def cleanup(self, *, timeout: float = 600) -> None:
        self._admin("cleanup", timeout)

    def _admin(self, command: str, timeout: float) -> None:
        assert self.host is not None
        argv = self.argv(command, threads=max(1, min(self.warehouses, 8)))
        res, text = self.host.admin(
            argv, limit_s=timeout, shown=self.shown(argv), secret_arg=("-p", self.target.password)
        )
        if res.exit_code != 0 or res.timed_out:
            last = [line for line in text.splitlines() if "rror" in line][-1:] or [f"exit {res.exit_code}"]
            raise PerfkitError(f"go-tpc {command} failed (exit {res.exit_code}): {last[0][:300]}")

    def check_tables(self) -> dict[str, Any]:
        """The warehouses loaded (`SELECT COUNT(*) FROM warehouse`, exact; the table has one row
        each), as `SysbenchRunner.check_tables`: fewer than --warehouses is refused."""
        rows = count_rows(self.target, ["warehouse"])
        if rows["warehouse"] < self.warehouses:
            has = "does not exist" if rows["warehouse"] < 0 else f"holds {rows['warehouse']:,} warehouses"
            raise PerfkitError(
                f"table {self.target.db}.warehouse {has}, --warehouses is {self.warehouses}: "
                "run with --prepare, or give the number loaded"
            )
        return {"method": "SELECT COUNT(*)", "rows": rows}

    def run(
        self,
        threads: int,
        time_s: int,
        out: Path,
        *,
        stop: object | None = None,
        gate: StartGate | None = None,
    ) -> LoadResult:
        """One measured run of `time_s` seconds (go-tpc's own `--time`), streamed into `out` (`gate`: as
        sysbench's)."""
        assert self.host is not None
        argv = self.argv("run", threads=threads, time_s=time_s)
        res = self.host.stream(
            argv,
            out,
            limit_s=time_s + 30,
            stop=stop,
            shown=self.shown(argv),
            secret_arg=("-p", self.target.password),
            gate=gate,
        )
        judge_go_tool(res, out, time_s, tool=self.tool, kind=self.kind, ended_by_perfkit=False)
        return res

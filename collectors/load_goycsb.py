"""go-ycsb as perfkit's load generator against MySQL/MariaDB/TiDB or TiKV: preflight, load, runs.

Every property, the password included, goes to go-ycsb in a 0600 property file (`-P`) on the load
host (collectors/_load.py), never in argv; go-ycsb echoes its properties (`"mysql.password"="..."`)
at the start of every run, so the stream is masked before it is written. The core workloads a-f are
carried here as data (the property files go-ycsb v1.0.3 ships), so a client host needs only the
binary. go-ycsb v1.0.3 has no time limit of its own (`maxexecutiontime` is declared but unused):
perfkit asks for an unbounded operation count and ends the run at `--time` with SIGTERM, on which
go-ycsb prints its final totals; in-flight operations cut by the signal show as a few `*_ERROR`.
Success is judged from the parsed output (parsers/goycsb.py), not the exit code (go-ycsb #176).
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql

from perfkit.errors import PerfkitError

from ._load import HostedRunner, LoadHost, LoadResult, StartGate, judge_go_tool
from .load_sysbench import check_database, count_rows, db_error
from .mysql_sampler import DbTarget

_CORE = {"workload": "core", "readallfields": "true"}
WORKLOADS: dict[str, dict[str, str]] = {
    "a": {**_CORE, "readproportion": "0.5", "updateproportion": "0.5", "requestdistribution": "uniform"},
    "b": {**_CORE, "readproportion": "0.95", "updateproportion": "0.05", "requestdistribution": "uniform"},
    "c": {**_CORE, "readproportion": "1", "requestdistribution": "uniform"},
    "d": {**_CORE, "readproportion": "0.95", "insertproportion": "0.05", "requestdistribution": "latest"},
    "e": {
        **_CORE,
        "scanproportion": "0.95",
        "insertproportion": "0.05",
        "requestdistribution": "uniform",
        "maxscanlength": "1",
        "scanlengthdistribution": "uniform",
    },
    "f": {
        **_CORE,
        "readproportion": "0.5",
        "readmodifywriteproportion": "0.5",
        "requestdistribution": "uniform",
    },
}
_PROPORTIONS = ("readproportion", "updateproportion", "scanproportion", "insertproportion")
UNBOUNDED_OPS = 1 << 40  # the run is ended by time, not by count
_SECRET_KEY = re.compile(r"pass|pwd|secret|token", re.I)
_PD = re.compile(r"[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*")


@dataclass(frozen=True)
class YcsbWorkload:
    """A core workload (a-f) or a property file, with the record count and extra properties."""

    name: str = "a"
    file: Path | None = None
    recordcount: int = 10000
    props: tuple[tuple[str, str], ...] = ()
    table: str = "usertable"

    def __post_init__(self) -> None:
        if self.file is None and self.name not in WORKLOADS:
            raise ValueError(f"unknown go-ycsb workload {self.name!r}: a-f or --workload-file")
        if self.file is not None and not Path(self.file).is_file():
            raise ValueError(f"{self.file}: workload file not found")
        for key, value in self.props:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9._-]*", key) or "\n" in value:
                raise ValueError(f"go-ycsb property {key!r}: NAME=VALUE on one line")
            if _SECRET_KEY.search(key):
                raise ValueError(f"go-ycsb property {key!r}: no secrets here (use the environment)")
        if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", self.table):
            raise ValueError(f"invalid table name {self.table!r}")

    def properties(self) -> dict[str, str]:
        base = dict(WORKLOADS.get(self.name, {})) if self.file is None else _read_props(Path(self.file))
        for key in _PROPORTIONS:
            base.setdefault(key, "0")
        base.update(recordcount=str(self.recordcount), table=self.table)
        base.update(self.props)
        return base

    @property
    def label(self) -> str:
        return str(self.file) if self.file is not None else f"workload{self.name}"


def property_value(key: str, value: str) -> str:
    """`value` written so go-ycsb's property reader (magiconair/properties 1.8, UTF-8) gives it back
    intact: a backslash escapes, leading blanks are dropped and `\\ `, `\\t`, `\\f` keep them. It
    expands `${name}` from other properties or the environment, with no escape: such a value, or a
    line break, is refused (naming the property, never the value)."""
    if "${" in value or "\n" in value or "\r" in value:
        raise PerfkitError(
            f"go-ycsb cannot be given this {key}: its property files expand ${{...}} and end a value "
            "at a line break (change it for the test user)"
        )
    return value.translate({ord("\\"): "\\\\", ord(" "): "\\ ", ord("\t"): "\\t", ord("\f"): "\\f"})


def _read_props(path: Path) -> dict[str, str]:
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise PerfkitError(f"{path}:{n}: not NAME=VALUE: {line[:80]!r}")
        if _SECRET_KEY.search(key):
            raise PerfkitError(f"{path}:{n}: {key.strip()!r}: a workload file holds no secret")
        out[key.strip()] = value.strip()
    return out


@dataclass
class GoYcsbRunner(HostedRunner):
    """go-ycsb against a MySQL-protocol database (`target`), or against TiKV through its PD endpoints
    (`pd`: `host:port[,host:port...]`, as seed 001 runs it), here or on a client host. A context manager."""

    target: DbTarget | None
    workload: YcsbWorkload
    binary: str = "go-ycsb"
    host: LoadHost | None = None
    version: str | None = None
    pd: str | None = None
    tikv_type: str = "raw"  # raw | txn
    tool: str = field(default="go-ycsb", init=False)
    kind: str = field(default="goycsb", init=False)

    def __post_init__(self) -> None:
        if (self.target is None) == (self.pd is None):
            raise ValueError("go-ycsb: a MySQL target or TiKV's PD endpoints, one of the two")
        if self.pd is not None and not _PD.fullmatch(self.pd):
            raise ValueError(f"invalid PD endpoints {self.pd!r}: host:port[,host:port...]")
        if self.tikv_type not in ("raw", "txn"):
            raise ValueError("tikv type: raw or txn")
        if self.target is not None and self.target.socket:
            raise ValueError(
                "go-ycsb's mysql driver connects over TCP here: give a host and port, not a socket"
            )
        secrets = (self.target.password,) if self.target is not None else ()
        self.host = self.host or LoadHost(secrets=secrets)
        self._props: str | None = None

    @property
    def db(self) -> str:
        return "tikv" if self.pd is not None else "mysql"

    def _property_text(self) -> str:
        t = self.target
        props = self.workload.properties()
        if t is None:
            props.update({"tikv.pd": str(self.pd), "tikv.type": self.tikv_type})
        else:
            connection = {
                "mysql.host": t.host,
                "mysql.port": str(t.port),
                "mysql.user": t.user,
                "mysql.password": t.password,
                "mysql.db": t.db,
            }
            props.update({k: property_value(k, v) for k, v in connection.items()})
        for key, value in props.items():
            if "\n" in value or "\r" in value:
                raise PerfkitError(f"go-ycsb property {key}: a line break is not allowed")
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def argv(self, command: str, *, threads: int) -> list[str]:
        """`go-ycsb load|run mysql|tikv -P <0600 file> ...`: the password is in the file, not here."""
        args = [self.binary, command, self.db, "-P", str(self._props), "--threads", str(threads)]
        if command == "run":
            args += ["-p", f"operationcount={UNBOUNDED_OPS}", "--interval", "1"]
        return args

    def shown(self, argv: list[str]) -> str:
        return " ".join("<0600 property file>" if a == self._props else a for a in argv)

    def preflight(self) -> None:
        """go-ycsb exists on the load host and the database answers (to these credentials) (L1)."""
        assert self.host is not None
        self.binary = self.host.which(self.binary)
        rc, out = self.host.run(f"{shlex.quote(self.binary)} --help", timeout=30)
        if rc != 0:
            raise PerfkitError(f"go-ycsb: `{self.binary} --help` failed on {self.host.name}: {out[:200]}")
        self.version = _module_version(self.host, self.binary)
        if self.target is not None:
            check_database(self.target)
        else:
            check_pd(str(self.pd))
        self._props = self.host.secret_file("ycsb.properties", self._property_text())

    def prepare(self, *, timeout: float = 3600) -> None:
        """Load `recordcount` records (into a freshly dropped table, on MySQL)."""
        assert self.host is not None
        if self.target is not None:
            self._drop_table("load")
        argv = self.argv("load", threads=4)
        res, text = self.host.admin(argv, limit_s=timeout, shown=self.shown(argv))
        rc = res.exit_code
        if rc != 0 or "Run finished" not in text:
            last = text.strip().splitlines()[-1:] or [f"exit {rc}"]
            raise PerfkitError(f"go-ycsb load failed (exit {rc}): {last[0][:300]}")

    def cleanup(self, *, timeout: float = 600) -> None:
        if self.target is None:
            raise PerfkitError("go-ycsb on TiKV: perfkit cannot delete the loaded keys; no cleanup")
        self._drop_table("cleanup")

    def _drop_table(self, what: str) -> None:
        assert self.target is not None
        try:
            with self.target.connect() as conn, conn.cursor() as cur:
                cur.execute(f"DROP TABLE IF EXISTS `{self.workload.table}`")
        except pymysql.MySQLError as exc:
            raise PerfkitError(
                f"go-ycsb {what}: cannot drop {self.target.db}.{self.workload.table}: "
                f"{db_error(self.target, exc)}"
            ) from None

    def check_tables(self) -> dict[str, Any]:
        """The rows in the table (`SELECT COUNT(*)`, exact), as `SysbenchRunner.check_tables`;
        fewer than --recordcount is refused. TiKV's keys are not counted."""
        if self.target is None:
            return {"method": None, "reason": "not counted: TiKV keys"}
        table = self.workload.table
        rows = count_rows(self.target, [table])
        if rows[table] < self.workload.recordcount:
            has = "does not exist" if rows[table] < 0 else f"holds {rows[table]:,} records"
            raise PerfkitError(
                f"table {self.target.db}.{table} {has}, --recordcount is {self.workload.recordcount:,}: "
                "run with --prepare, or give the count the table has"
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
        """One measured run of `time_s` seconds, ended by SIGTERM, streamed into `out` (`gate`: as
        sysbench's)."""
        assert self.host is not None
        argv = self.argv("run", threads=threads)
        shown = self.shown(argv)
        res = self.host.stream(
            argv, out, limit_s=time_s, end_signal="TERM", stop=stop, shown=shown, gate=gate
        )
        judge_go_tool(res, out, time_s, tool=self.tool, kind=self.kind, ended_by_perfkit=True)
        return res


def check_pd(endpoints: str, *, timeout: float = 5) -> str:
    """The first PD endpoint that answers its HTTP API (`/pd/api/v1/version`): its version.
    PerfkitError naming every endpoint tried otherwise."""
    tried = []
    for ep in endpoints.split(","):
        try:
            with urllib.request.urlopen(f"http://{ep}/pd/api/v1/version", timeout=timeout) as resp:
                return str(json.loads(resp.read(65536) or b"{}").get("version", "unknown"))
        except (OSError, ValueError) as exc:
            tried.append(f"{ep}: {getattr(exc, 'reason', exc)}")
    raise PerfkitError(f"TiKV's PD does not answer at {'; '.join(tried)}")


def _module_version(host: LoadHost, binary: str) -> str | None:
    """go-ycsb prints no version: the Go build info names the module's (`go version -m`, when Go is there)."""
    rc, out = host.run(f"go version -m {shlex.quote(binary)} 2>/dev/null | grep -m1 -w mod", timeout=30)
    m = re.search(r"github\.com/pingcap/go-ycsb\s+(v\S+)", out) if rc == 0 else None
    return f"go-ycsb {m.group(1)}" if m else "go-ycsb (version unknown)"

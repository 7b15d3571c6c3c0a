"""Dataset: every capture of an archive parsed into a frame, and every file that was not, with why.

Analysis trusts the manifest's `kind` first; files the manifest does not list (and every file of a
foreign archive, e.g. a tarball made by a shell script) are offered to the parsers' `sniff()`.
Nothing is dropped silently: a file no parser claims, or one whose parse failed, is listed in
`unparsed` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from perfkit import parsers, ptstalk
from perfkit.archive import Archive, file_digest, records_by_path
from perfkit.errors import ParseError
from perfkit.manifest import Manifest, Record
from perfkit.parsers._common import Extras, ParseContext, Skips, head

T = TypeVar("T")


# Kinds perfkit records on purpose without parsing them, and why.
KEPT_UNPARSED = {
    "sa": "sar's binary file, kept as it came (its format depends on the sysstat version); "
    "its tables were converted on the host by sadf -d (sar-cpu, sar-net, sar-tcp)",
}


@dataclass
class Capture:
    """One parsed file."""

    path: str  # relative to the archive root, POSIX
    kind: str
    host: str | None
    step: str | None
    frame: pd.DataFrame
    # what its parser read beside the rows (its kind's `EXTRAS`); None: taken out of the frame's attrs
    extras: Extras = None  # type: ignore[assignment]
    # `view` results by function: made where the capture was parsed (`load_dataset(views=...)`)
    _views: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.extras is None:
            self.extras = parsers.extras(self.kind, self.frame)

    def view(self, fn: Callable[[Capture], T]) -> T:
        """`fn(self)`, made once per capture: a rule's per-capture step (which program each task row
        is, ...), which several rules share. Made in the worker that parsed the capture when
        `load_dataset(views=...)` names `fn` for its kind, so it runs in parallel; else here, the
        first time a rule or report asks. A view is kept as long as the capture: keys, codes, a
        plot, never a copy of the frame's columns."""
        key = view_key(fn)
        if key not in self._views:
            self._views[key] = fn(self)
        return self._views[key]

    @property
    def dropped_lines(self) -> int:
        return self.extras.dropped_lines

    @property
    def skipped(self) -> Skips:
        """Lines its parser did not know and left out: the capture is partial when there are any."""
        return self.extras.skipped


def view_cost(fn: Callable[[Capture], Any]) -> int:
    """What a view costs beyond its capture's parse, as the bytes a parse reads in its time: its
    `fixed_bytes` (a plot's drawing: `reports.plots.capture_plot`), else nothing (a view that runs over
    the frame, as the rules' do, takes a time its capture's size already says)."""
    return getattr(fn, "fixed_bytes", 0)


def view_key(fn: Callable[[Capture], Any]) -> str:
    """The name a capture's view is kept under: the function's, which a worker sends by name too."""
    return f"{fn.__module__}.{fn.__qualname__}"


@dataclass
class Dataset:
    """What `perfkit analyze` works on: frames by kind and host, plus the inputs it could not use."""

    source: str
    manifest: dict | None
    captures: list[Capture] = field(default_factory=list)
    unparsed: list[dict[str, str]] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)
    _records: tuple[dict | None, dict[str, Record]] | None = field(default=None, repr=False, compare=False)
    _run: tuple[dict | None, Manifest] | None = field(default=None, repr=False, compare=False)

    @property
    def run(self) -> Manifest:
        """The manifest's top level, typed (`Manifest.from_dict`: a field of another JSON type reads
        as absent; the empty Manifest for a foreign archive): the one place rules and reports read the
        run's sweep, hosts and controller from. Made once per manifest."""
        if self._run is None or self._run[0] is not self.manifest:
            self._run = (self.manifest, Manifest.from_dict(self.manifest or {}))
        return self._run[1]

    @property
    def records(self) -> dict[str, Record]:
        """The manifest's capture records by the path of the file each describes (empty for a foreign
        archive): the one place rules read a capture's record from. Made once per manifest."""
        if self._records is None or self._records[0] is not self.manifest:
            self._records = (self.manifest, records_by_path(self.manifest, self.source))
        return self._records[1]

    def of(self, kind: str) -> list[Capture]:
        """Every capture of one kind, in archive order."""
        return [c for c in self.captures if c.kind == kind]

    def cpu_count(self, host: str | None, step: str | None = None) -> tuple[int, str] | None:
        """The host's CPU count and the capture it came from, or None when no capture tells.

        The one place every rule and report reads it from. Evidence, best first: nproc (the CPUs a
        process started there may use); the `(N CPU)` banner of mpstat, sar, pidstat or iostat (CPUs
        online); the CPUs mpstat's `-P ALL` rows list; the CPUs of sar/sadf's CPU table; psutil's
        count. (top's `%Cpu0` lines are not kept by its parser.) Within each, a capture of `step`
        comes first: a count can differ between steps only if CPUs went on- or offline.
        """

        def mine(*kinds: str) -> list[Capture]:
            caps = [c for c in self.captures if c.kind in kinds and c.host == host]
            return sorted(caps, key=lambda c: c.step != step)

        for cap in mine("nproc"):
            n = pd.to_numeric(cap.frame["cpus"], errors="coerce").dropna()
            if len(n) and n.iloc[0] >= 1:
                return int(n.iloc[0]), cap.path
        for cap in mine("mpstat", "sar", "pidstat", "iostat"):
            banner = cap.extras.cpus
            if banner:
                return int(banner), cap.path
        for cap in mine("mpstat", "sar", "sadf"):
            f = cap.frame
            if cap.kind != "mpstat":
                if "table" not in f.columns:
                    continue
                f = f[f["table"] == "cpu"].rename(columns={"instance": "cpu"})
            ids = f["cpu"].dropna().astype(str)
            n = int(ids[ids.str.fullmatch(r"\d+")].nunique())
            if n:
                return n, cap.path
        for cap in mine("psutil"):
            n = pd.to_numeric(cap.frame["ncpu"], errors="coerce").dropna()
            if len(n) and n.max() >= 1:
                return int(n.max()), cap.path
        return None

    def step_threads(self) -> dict[str, int]:
        """Step name (`t0016`) -> its threads: the one place every rule and report reads it from.

        From the run's manifest: its sweep steps, else the step's capture records (a step the sweep
        model left out, failed or interrupted, keeps its thread count). Empty for a foreign archive,
        whose captures have no step."""
        out: dict[str, int] = {}
        for rec in self.records.values():
            if rec.step and rec.threads:
                out.setdefault(rec.step, rec.threads)
        for st in self.run.sweep.steps if self.run.sweep else []:
            if st.name and st.threads:
                out[st.name] = st.threads
        return out

    def inputs(self) -> dict[str, list[dict]]:
        """The `inputs` block of findings.json."""
        parsed = [
            {
                "path": c.path,
                "kind": c.kind,
                "host": c.host,
                "rows": len(c.frame),
                "dropped_lines": c.dropped_lines,
                "partial": bool(c.skipped.count),
                "skipped_lines": c.skipped.count,
                "skipped": [
                    {"line": q.line_no, "text": q.text, "reason": q.reason} for q in c.skipped.quoted
                ],
            }
            for c in self.captures
        ]
        return {"parsed": parsed, "unparsed": list(self.unparsed), "problems": list(self.problems)}


def load_dataset(
    archive: Archive,
    *,
    tz: str = "UTC",
    jobs: int | None = 1,
    views: Mapping[str, Sequence[Callable[[Capture], Any]]] | None = None,
) -> Dataset:
    """Parse every file of an opened archive.

    Args:
        archive: from `perfkit.archive.open_archive`.
        tz: the captured hosts' time zone, for captures whose timestamps carry none (a manifest
            record's own `tz` wins).
        jobs: files parsed at once: N-1 worker processes and this one (`perfkit/_workers.py`); 1
            parses in this process only; None: `_workers.auto_jobs` of the bytes to parse (the
            CPUs once there are enough to repay the workers' start). The Dataset is the same
            either way: captures and unread files in archive order, a file's ParseError the same
            line in `unparsed`.
        views: kind -> module-level functions of a capture made where it was parsed (`Capture.view`):
            the rules' per-capture steps and the report's per-capture plots, in parallel with N
            jobs. One that raises is left for the rule that asks for it (made again there, raising
            in that rule only).
    """
    ds = Dataset(source=archive.name, manifest=archive.manifest, problems=list(archive.problems))
    plan = list(_plan(archive, tz))
    reads = [(n, entry) for n, entry in enumerate(plan) if isinstance(entry, _Read)]
    outcome: dict[int, Capture | str] = {}
    digests: dict[str, tuple[str | None, str]] = {}
    rel_of = {n: r.rel for n, r in reads}
    with closing(_parse_all(archive.root, reads, jobs, views or {})) as results:
        for n, result, digest in results:
            outcome[n] = result
            if digest is not None:
                digests[rel_of[n]] = digest
    ds.problems = archive.problems_with(digests)  # the files no parse read are hashed here
    for n, entry in enumerate(plan):
        if not isinstance(entry, _Read):
            ds.unparsed.append(entry)
            continue
        result = outcome.pop(n)
        if isinstance(result, str):  # the ParseError's message
            ds.unparsed.append({"path": entry.rel, "reason": result})
            continue
        ds.captures.append(result)
    return ds


@dataclass(frozen=True)
class _Read:
    """A file to parse, with what its capture is (kind, host, step) and its parse context."""

    rel: str
    kind: str
    host: str | None
    step: str | None
    context: ParseContext
    hashed: bool = False  # its sha256 made where it is read (`Archive.unchecked`)


def _plan(archive: Archive, tz: str) -> Iterator[_Read | dict[str, str]]:
    """Each file of the archive in order: what to parse it as, or its `unparsed` entry (no parse needed
    to know: not collected, no parser for its kind, nobody claims it)."""
    records = archive.records
    unchecked = {u.path for u in archive.unchecked}
    stderr_of = {r.stderr_path: p for p, r in records.items() if r.stderr_path}
    stalk = ptstalk.collection([f for f in archive.files if f not in records], archive.root, tz)
    for rel in archive.files:
        rec = records.get(rel)
        path = archive.root / rel
        if rel in stderr_of:
            continue  # a capture's stderr: described by that capture's record
        if rec is not None and rec.status != "ok" and not rec.bytes:
            yield {"path": rel, "reason": f"not collected: {rec.reason or rec.status}"}
            continue
        if rec is not None:
            kind = rec.kind
            if kind not in parsers.kinds():
                yield {"path": rel, "reason": KEPT_UNPARSED.get(kind, f"no parser for kind {kind!r}")}
                continue
            host, step, file_tz = rec.host or None, rec.step, rec.tz or tz
        elif rel in stalk and (stalk[rel].kind or stalk[rel].reason):
            kind, host, step, file_tz = stalk[rel].kind, stalk[rel].host, stalk[rel].prefix, tz
            if kind is None:
                yield {"path": rel, "reason": stalk[rel].reason}
                continue
        else:
            kind, reason = _sniff(path)
            if kind is None:
                yield {"path": rel, "reason": reason}
                continue
            host, step, file_tz = None, None, tz
            if rel in stalk:  # a pt-stalk file of a kind it does not name: sniffed, kept in its window
                host, step = stalk[rel].host, stalk[rel].prefix
        # when the capture started (its record's, its pt-stalk sample's): dates a time-of-day capture
        started = rec.started_at if rec is not None else stalk[rel].started_at if rel in stalk else None
        # a pt-stalk file without a record: its collection's start dates samples printed without a time
        samples_from = pd.Timestamp(stalk[rel].started_at) if rec is None and rel in stalk else None
        context = ParseContext(
            host,
            file_tz,
            pd.Timestamp(started) if started else None,
            samples_from,
            rec.tool_version if rec is not None else None,
        )
        yield _Read(rel, kind, host, step, context, rel in unchecked)


def _parse_all(
    root: Path,
    reads: list[tuple[int, _Read]],
    jobs: int | None,
    views: Mapping[str, Sequence[Callable[[Capture], Any]]],
) -> Iterator[tuple[int, Capture | str, tuple[str | None, str] | None]]:
    """(plan index, capture or ParseError message, `file_digest` or None) for every read: in order in
    this process with one job (or one file), else as worker processes finish them, largest first."""
    from perfkit import _workers

    sizes = [_size(root / r.rel) for _, r in reads]
    if jobs is None:
        jobs = _workers.auto_jobs(sum(sizes))
    # parse_file passed along, not looked up where it runs: a test puts a stand-in in its place
    args = [(parse_file, r, root / r.rel, tuple(views.get(r.kind, ()))) for _, r in reads]
    if jobs <= 1 or len(reads) <= 1:
        _workers.cool()  # any started ahead are not needed
        for (n, _), a in zip(reads, args, strict=True):
            yield n, *read_file(*a)
        return
    # a task's size orders the work (largest first) and sets the parent's tail: its bytes, and what its
    # views cost beyond them (`view_cost`)
    costs = [size + sum(map(view_cost, a[-1])) for size, a in zip(sizes, args, strict=True)]
    tasks = [_workers.Task(r.rel, cost, a) for (_, r), cost, a in zip(reads, costs, args, strict=True)]
    for i, (result, digest) in _workers.run(read_file, tasks, jobs):
        yield reads[i][0], result, digest


def read_file(
    parse: Callable[..., pd.DataFrame | str],
    read: _Read,
    path: Path,
    views: Sequence[Callable[[Capture], Any]] = (),
) -> tuple[Capture | str, tuple[str | None, str] | None]:
    """One file as a capture (its frame and extras, and its `views` made) or its ParseError line,
    and its `file_digest` when `open_archive` left its record's sha256 unchecked: the one call made
    for a file, in this process or in a worker (the digest made in parallel too, where the file is
    read anyway)."""
    digest = file_digest(path) if read.hashed else None
    frame = parse(read.kind, path, read.context, read.rel)
    if isinstance(frame, str):
        return frame, digest
    cap = Capture(path=read.rel, kind=read.kind, host=read.host, step=read.step, frame=frame)
    for fn in views:
        with suppress(Exception):  # left for the rule that asks: it fails there, alone
            cap.view(fn)
    return cap, digest


def parse_file(kind: str, path: Path, context: ParseContext, rel: str) -> pd.DataFrame | str:
    """One file's frame, or its ParseError as the line `unparsed` gives (named by `rel`, its path in
    the archive): the one call made for a file, in this process or in a worker."""
    try:
        return parsers.parse(kind, path, context)
    except ParseError as exc:
        return _relative_message(exc, rel)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # unreadable: its parse says why


def _sniff(path: Path) -> tuple[str | None, str]:
    """The kind whose parser claims the file, or None and the reason nobody did."""
    try:
        with open(path, "rb") as fh:
            start = fh.read(4096)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}"
    if not start:
        return None, "empty file"
    if start[:2] == b"\x1f\x8b" or start[:4] == b"PK\x03\x04" or b"\x00" in start:
        kind = parsers.sniff_binary_kind(start)
        return (kind, "") if kind else (None, "binary file (no parser reads it)")
    kind = parsers.sniff_kind(head(path))
    if kind is None:
        return None, "no parser recognises this format"
    return kind, ""


def _relative_message(exc: ParseError, rel: str) -> str:
    where = f"{rel}:{exc.line_no}" if exc.line_no else rel
    shown = f": {exc.line[:120]!r}" if exc.line else ""
    return f"{exc.kind}: {where}: {exc.reason}{shown}"

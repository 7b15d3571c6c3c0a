"""The manifest as types (its top level and each capture's record): one for the collectors that
write it and every reader."""

from __future__ import annotations

import dataclasses
import json
import tarfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfkit.analyzers import overhead
from perfkit.archive import open_archive
from perfkit.dataset import Dataset, load_dataset
from perfkit.manifest import Manifest, Record
from perfkit.reports import use

from .conftest import FIXTURES, SEEDS_EXAMPLE

HOT = FIXTURES / "archives" / "db-hot-rows"


def test_every_field_a_run_wrote_is_a_record_field_and_reads_back_as_written() -> None:
    # a real `perfkit run` manifest (tests/fixtures/archives/README.md): load, sampler, OS captures
    raw = json.loads((HOT / "manifest.json").read_text())["captures"]
    fields = {f.name for f in dataclasses.fields(Record)}
    assert {k for rec in raw for k in rec} <= fields
    for rec in raw:
        back = Record.from_dict(rec).to_dict()
        assert {k: v for k, v in back.items() if k in rec} == rec  # nothing lost or changed


def test_the_writer_writes_every_record_through_the_type(tmp_path: Path) -> None:
    # a sweep with its own records (the load runs) beside the captures': all one shape, read back whole
    from perfkit.collectors import captures, driver, session

    from .test_driver import CURVE, FakeRunner

    opts = session.Options(window=1, specs=captures.MINIMAL)
    plan = driver.Plan(threads=(1, 2), time_s=1, cooldown_max_s=0)
    res = driver.run_sweep(FakeRunner(CURVE), plan, tmp_path / "run", hosts=[], opts=opts)
    raw = res.manifest["captures"]
    assert raw and all(set(rec) == set(raw[0]) for rec in raw)
    assert [Record.from_dict(rec).to_dict() for rec in raw] == raw
    with open_archive(tmp_path / "run") as archive:
        assert archive.records["load/t0002/sysbench.out"].threads == 2


def test_the_dataset_reads_the_records_typed_by_their_files_path() -> None:
    with open_archive(HOT) as archive:
        ds = load_dataset(archive)
    load = ds.records["load/t0016/sysbench.out"]
    assert (load.kind, load.step, load.threads, load.status) == ("sysbench", "t0016", 16, "ok")
    assert load.started_at is not None and load.started_at < load.ended_at  # ISO-8601 UTC, same form
    sampler = next(r for r in ds.records.values() if r.kind == "mysql_status")
    assert sampler.samples and sampler.samples > 0 and sampler.failed_samples == 0
    assert ds.step_threads() == {"t0001": 1, "t0004": 4, "t0016": 16}


def test_a_field_of_another_json_type_reads_as_absent() -> None:
    rec = Record.from_dict(
        {"id": "x", "host": 7, "kind": "iostat", "path": "a", "bytes": "12", "threads": True,
         "clock_offset_s": 1, "timed_out": "yes", "env": [1]}
    )  # fmt: skip
    assert (rec.host, rec.bytes, rec.threads, rec.timed_out, rec.env) == ("", 0, None, False, {})
    assert rec.clock_offset_s == 1.0 and isinstance(rec.clock_offset_s, float)
    assert rec.status == "ok"  # a record without one was written before records had a status
    assert Record.from_dict({}).kind == ""  # no parser's kind: the dataset says "no parser for kind ''"


def _real_manifests() -> list[tuple[str, str]]:
    """(name, text) of every manifest.json under tests/fixtures, loose or in a tarball."""
    out = [(str(p.relative_to(FIXTURES)), p.read_text()) for p in sorted(FIXTURES.rglob("manifest.json"))]
    for tgz in sorted([*FIXTURES.rglob("*.tar.gz"), *SEEDS_EXAMPLE.glob("*.tar.gz")]):
        with tarfile.open(tgz) as tar:
            for m in tar.getmembers():
                if m.name.endswith("/manifest.json") or m.name == "manifest.json":
                    out.append((f"{tgz.name}:{m.name}", tar.extractfile(m).read().decode()))  # type: ignore[union-attr]
    return out


REAL = _real_manifests()

# Fields the writer gained after some fixtures were made: an older manifest reads them as their default.
LATER = {"redacted": False, "start_skew_s": None, "clients": []}


def _as_in(back: Any, raw: Any) -> Any:
    """`back` with only the keys `raw` has (recursively); asserts the others are LATER's defaults."""
    if isinstance(raw, dict):
        extra = {k: v for k, v in back.items() if k not in raw}
        assert all(k in LATER and LATER[k] == v for k, v in extra.items()), extra
        return {k: _as_in(back[k], v) for k, v in raw.items() if k in back}
    if isinstance(raw, list):
        return [_as_in(b, r) for b, r in zip(back, raw, strict=True)]
    return back


def test_the_real_manifests_are_found() -> None:
    # 21 loose (archives, limits) and 2 in the max-connections tarballs; examples/ has no manifest
    # (seed 000 is a foreign archive). All of `perfkit run` sweeps but three `perfkit collect` windows.
    sweeps = [name for name, text in REAL if json.loads(text).get("sweep")]
    assert len(REAL) >= 23 and len(sweeps) == len(REAL) - 3
    assert [name for name, _ in REAL if name not in sweeps] == [
        "archives/collect-after-writes/manifest.json",
        "archives/collect-under-load/manifest.json",
        "archives/idle-server-window/manifest.json",
    ]


@pytest.mark.parametrize("name,text", REAL, ids=[n for n, _ in REAL])
def test_every_real_manifest_reads_back_as_written(name: str, text: str) -> None:
    raw = json.loads(text)
    man = Manifest.from_dict(raw)
    back = man.to_dict()
    assert _as_in(back, raw) == raw  # every value kept, in its JSON type; keys in the same order
    assert list(back) == list(raw)
    if "sweep" in raw:
        assert list(back["sweep"]) == list(raw["sweep"])
        assert man.sweep is not None and man.sweep.steps
        assert all(s.name and s.threads for s in man.sweep.steps)
    else:  # a `perfkit collect` window
        assert man.sweep is None and man.window_s == raw["window_s"] and man.captures
    assert man.hosts and man.controller.cpu_s == raw["controller"]["cpu_s"]


def test_a_manifest_written_now_is_its_type_written_and_reads_back_whole(tmp_path: Path) -> None:
    from perfkit.collectors import captures, driver, session

    from .test_driver import CURVE, FakeRunner

    opts = session.Options(window=1, specs=captures.MINIMAL)
    plan = driver.Plan(threads=(1, 2), time_s=1, cooldown_max_s=0)
    res = driver.run_sweep(FakeRunner(CURVE), plan, tmp_path / "run", hosts=[], opts=opts)
    text = (tmp_path / "run" / "manifest.json").read_text()
    assert json.dumps(res.run.to_dict(), indent=1) + "\n" == text  # the typed object is what was written
    back = Manifest.from_dict(json.loads(text))
    # read back equal (a float field reads as a float: the fake load tool's TPS 200 is 200.0)
    assert back == res.run and back.to_dict() == res.manifest == json.loads(text)
    assert back.sweep is not None and back.sweep.steps[0].tps == 200.0
    assert [(s.name, s.threads, s.status) for s in back.sweep.steps] == [
        ("t0001", 1, "ok"),
        ("t0002", 2, "ok"),
    ]
    assert back.window_s is None and back.interval_s == 1 and back.status == "complete"


def test_a_foreign_archive_has_the_empty_manifest() -> None:
    ds = Dataset(source="seed000", manifest=None)
    assert ds.run == Manifest() and ds.run.sweep is None and ds.step_threads() == {}
    assert Manifest().to_dict()["captures"] == [] and "sweep" not in Manifest().to_dict()


def test_a_hostile_top_level_reads_as_absent() -> None:
    raw = {
        "format_version": 1,
        "run_id": 7,
        "window_s": "30",
        "interval_s": True,
        "inventory": {"name": "db1"},
        "hosts": ["db1", {"host": "db1", "perfkit_cpu_pct": "12", "captures": 3.5, "bytes": 10},
                  {"host": "db2", "perfkit_cpu_pct": 4}],
        "controller": [1, 2],
        "captures": [None, {"id": "x", "host": "db1", "kind": "vmstat", "path": "a"}],
        "sweep": ["t0001"],
    }  # fmt: skip
    man = Manifest.from_dict(raw)
    assert (man.run_id, man.window_s, man.interval_s, man.inventory) == ("", None, None, [])
    assert [(h.host, h.perfkit_cpu_pct, h.captures, h.bytes) for h in man.hosts] == [
        ("db1", None, 0, 10),
        ("db2", 4.0, 0, 0),
    ]
    assert man.controller.cpu_s is None and [c.kind for c in man.captures] == ["vmstat"]
    assert man.sweep is None  # a list, not the object a sweep is: no sweep


def test_a_hostile_sweep_reads_as_absent() -> None:
    raw = {
        "sweep": {
            "plan": ["threads"],
            "adaptive": "yes",
            "load_s": "12",
            "steps": [
                "t0001",
                {"name": "t0004", "threads": "4", "status": "ok"},
                {"name": "t0016", "threads": 16, "status": 1, "started_at": 5, "tps": "fast"},
                {"name": "t0032", "threads": 32.0, "status": "failed", "reason": "refused",
                 "started_at": "2026-11-27T08:58:38.374Z", "ended_at": "2026-11-27T08:58:43.794Z"},
            ],
        }
    }  # fmt: skip
    sweep = Manifest.from_dict(raw).sweep
    assert sweep is not None and (sweep.plan, sweep.adaptive, sweep.load_s) == ({}, False, 0.0)
    assert [(s.name, s.threads, s.status, s.started_at, s.tps) for s in sweep.steps] == [
        ("t0004", 0, "ok", None, None),
        ("t0016", 16, "pending", None, None),
        ("t0032", 0, "failed", "2026-11-27T08:58:38.374Z", None),
    ]


def test_readers_of_a_hostile_manifest_get_no_traceback() -> None:
    # each of these raised AttributeError on an entry that is no object before the manifest was typed
    manifest = {
        "hosts": ["db1", {"host": "db2", "perfkit_cpu_pct": 4}],
        "controller": {"cpu_s": "1.5"},
        "sweep": {"steps": ["t0001", {"name": "t0016", "threads": 16, "started_at": "2026-11-27T08:58:38Z",
                                      "ended_at": "2026-11-27T08:59:38Z"}]},
    }  # fmt: skip
    ds = Dataset(source="hostile", manifest=manifest)
    own, controller = overhead._manifest_cpu(ds)
    assert own == {"db2": 4.0} and controller.cpu_s is None
    assert ds.step_threads() == {"t0016": 16}
    [span] = use._manifest_spans(ds)
    assert (span.name, span.threads, span.end - span.start) == ("t0016", 16, pd.Timedelta(seconds=60))
    ds.manifest = {"sweep": {"steps": [{"name": "t0002", "threads": 2}]}}  # made again for a new manifest
    assert ds.step_threads() == {"t0002": 2}

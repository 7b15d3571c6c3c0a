"""The manifest's capture record: one type for the collectors that write it and every reader."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from perfkit.archive import open_archive
from perfkit.dataset import load_dataset
from perfkit.manifest import Record

from .conftest import FIXTURES

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

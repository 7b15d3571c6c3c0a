"""The dataset's own work on parsed frames: dates for captures that print only a time of day, and
binary captures found by their bytes in a foreign archive."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd

from perfkit.archive import open_archive
from perfkit.dataset import load_dataset

from .conftest import FIXTURES

TOP = FIXTURES / "top" / "procps-4.0.2-H-w512.txt"  # first screen: `top - 07:20:01 up ...`


def archive_with(tmp_path: Path, src: Path, kind: str, started_at: str, tz: str | None = None) -> Path:
    root = tmp_path / "run"
    (root / "hosts" / "db1").mkdir(parents=True)
    data = src.read_bytes()
    (root / "hosts" / "db1" / f"{kind}.out").write_bytes(data)
    record = {
        "id": kind,
        "host": "db1",
        "kind": kind,
        "path": f"hosts/db1/{kind}.out",
        "status": "ok",
        "started_at": started_at,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    } | ({"tz": tz} if tz else {})
    doc = {"format_version": 1, "perfkit_version": "0.1.0", "run_id": "r1", "captures": [record]}
    (root / "manifest.json").write_text(json.dumps(doc))
    return root


def frame_of(root: Path, kind: str) -> pd.DataFrame:
    with open_archive(root) as archive:
        ds = load_dataset(archive)
    assert ds.unparsed == [], ds.unparsed
    (cap,) = ds.of(kind)
    return cap.frame


def test_top_rows_get_the_records_date(tmp_path: Path) -> None:
    frame = frame_of(archive_with(tmp_path, TOP, "top", "2026-11-23T07:20:00.950Z"), "top")
    assert frame["timestamp"].notna().all()
    assert frame["timestamp"].iloc[0] == pd.Timestamp("2026-11-23T07:20:01Z")
    # each row keeps its own screen's clock
    assert (frame["timestamp"] - frame["timestamp"].iloc[0]).dt.total_seconds().tolist() == (
        frame["clock_s"] - frame["clock_s"].iloc[0]
    ).tolist()


def test_a_start_just_before_midnight_puts_an_after_midnight_clock_on_the_next_day(tmp_path: Path) -> None:
    # started 23:59:59.9 in UTC+8 (15:59:59.9Z); the first screen's 00:00:01 belongs to the next day
    text = TOP.read_text().replace("top - 07:20:01", "top - 00:00:01", 1)
    src = tmp_path / "top.txt"
    src.write_text(text)
    frame = frame_of(
        archive_with(tmp_path, src, "top", "2026-11-23T15:59:59.900Z", tz="Asia/Shanghai"), "top"
    )
    assert frame["timestamp"].iloc[0] == pd.Timestamp("2026-11-23T16:00:01Z")


def test_iotop_rows_get_the_records_date(tmp_path: Path) -> None:
    src = FIXTURES / "iotop" / "iotop-0.6-botqk-delayacct1.txt"
    first = src.read_text().split()[0]  # iotop -t starts every line with HH:MM:SS
    frame = frame_of(archive_with(tmp_path, src, "iotop", f"2026-11-23T{first}.000Z"), "iotop")
    assert frame["timestamp"].notna().all()
    assert frame["timestamp"].min() >= pd.Timestamp(f"2026-11-23T{first}Z")


def test_a_pprof_profile_in_a_foreign_tarball_is_found_by_its_bytes(tmp_path: Path) -> None:
    root = tmp_path / "foreign"
    root.mkdir()
    shutil.copy(FIXTURES / "pprof" / "go1.26-heap.pb.gz", root / "heap.pb.gz")
    (root / "notes.bin").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with open_archive(root) as archive:
        ds = load_dataset(archive)
    assert [c.kind for c in ds.captures] == ["pprof"]
    assert ds.unparsed == [{"path": "notes.bin", "reason": "binary file (no parser reads it)"}]

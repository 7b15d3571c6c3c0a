"""fio JSON parser: values, preamble, json+, several jobs, cut-off and foreign captures."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import fio

from .conftest import FIXTURES

F = FIXTURES / "fio"


def test_write_and_fsync_rows() -> None:
    df = fio.parse(F / "fio-3.33-randwrite-fsync.txt", host="db1")
    assert df["direction"].tolist() == ["write", "sync"] and df["host"].eq("db1").all()
    w, s = df.iloc[0], df.iloc[1]
    # raw: "write": iops 4631.868132, bw 18527, io_bytes 37982208, runtime 2002, total_ios 9273
    assert w["iops"] == pytest.approx(4631.868132) and w["bw_kib_per_s"] == 18527
    assert w["io_bytes"] == 37982208 and w["runtime_ms"] == 2002 and w["total_ios"] == 9273
    # raw lat_ns mean 7009.171466 ns, clat percentile "99.000000": 16320 ns, "99.900000": 70144 ns
    assert w["lat_mean_us"] == pytest.approx(7.009171466) and w["clat_p99_us"] == pytest.approx(16.32)
    assert w["clat_p99_9_us"] == pytest.approx(70.144) and w["clat_p50_us"] == pytest.approx(6.24)
    assert math.isnan(w["slat_mean_us"])  # psync: slat_ns N 0 = not measured, not 0
    # raw "sync": total_ios 9273, lat_ns mean 206554.670765, percentile "99.000000": 1171456
    assert s["total_ios"] == 9273 and s["lat_mean_us"] == pytest.approx(206.554670765)
    assert s["clat_p99_us"] == pytest.approx(1171.456) and math.isnan(s["iops"]) and pd.isna(s["io_bytes"])
    # raw "timestamp_ms": 1795420044584
    assert w["timestamp"] == pd.Timestamp(1795420044584, unit="ms", tz="UTC")
    assert df.attrs["fio_version"] == "fio-3.33" and df.attrs["global_options"] == {}
    assert df.attrs["disk_util"][0]["name"] == "vda" and df.attrs["disk_util"][0][
        "util_pct"
    ] == pytest.approx(57.286432)


def test_note_before_json_is_kept() -> None:
    df = fio.parse(F / "fio-3.33-note-preamble.txt")
    assert len(df) == 1 and df.loc[0, "direction"] == "read"
    assert df.attrs["preamble"] == [
        "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1"
    ]


def test_two_jobs_and_global_options() -> None:
    df = fio.parse(F / "fio-3.33-two-jobs-global.txt")
    assert df[["jobname", "direction"]].values.tolist() == [["reader", "read"], ["writer", "write"]]
    assert df.attrs["global_options"]["ioengine"] == "psync"
    assert df.attrs["job_options"]["writer"] == {"name": "writer", "rw": "randwrite"}


def test_json_plus_gives_read_and_write_of_one_job() -> None:
    df = fio.parse(F / "fio-3.33-randrw-jsonplus.txt")
    assert df["direction"].tolist() == ["read", "write"] and df["jobname"].eq("mixed").all()
    # raw read: iops 21844.077961, slat_ns mean 10067.353... (libaio times submission)
    assert df.loc[0, "iops"] == pytest.approx(21844.077961) and df.loc[0, "slat_mean_us"] == pytest.approx(
        10.067, abs=1e-3
    )


def test_cut_json_is_dropped_and_counted() -> None:
    df = fio.parse(F / "truncated-json.txt")
    assert len(df) == 0 and df.attrs["dropped_lines"] == 121 and "cut off" in df.attrs["notes"][0]


def test_malformed_json_mid_file_names_the_line() -> None:
    lines = (F / "fio-3.33-randread-direct.txt").read_text().splitlines()
    lines[20] = '        "iops" : oops,'
    with pytest.raises(ParseError) as info:
        fio.parse("\n".join(lines) + "\n")
    assert info.value.line_no == 21 and "oops" in info.value.line


def test_stray_text_and_plain_output_are_refused() -> None:
    with pytest.raises(ParseError, match="no fio JSON"):
        fio.parse("randread: (g=0): rw=randread, bs=(R) 4096B-4096B\nRun status group 0 (all jobs):\n")
    with pytest.raises(ParseError, match="not fio output"):
        fio.parse('{"jobs_wrong": []}\n')


def test_fio2_microsecond_keys() -> None:
    doc = {
        "fio version": "fio-2.2.10",
        "timestamp": 1500000000,
        "jobs": [
            {
                "jobname": "old",
                "groupid": 0,
                "error": 0,
                "read": {
                    "io_bytes": 4096,
                    "bw": 4,
                    "iops": 1.0,
                    "runtime": 1000,
                    "total_ios": 1,
                    "lat": {"min": 5, "max": 9, "mean": 7.5, "stddev": 1.0},
                    "clat": {"min": 5, "max": 9, "mean": 7.0, "stddev": 1.0, "percentile": {"99.000000": 9}},
                },
            }
        ],
    }
    df = fio.parse(json.dumps(doc, indent=1) + "\n")
    assert df.loc[0, "lat_mean_us"] == 7.5 and df.loc[0, "clat_p99_us"] == 9  # fio 2 prints µs
    assert df.loc[0, "timestamp"] == pd.Timestamp(1500000000, unit="s", tz="UTC")


def test_empty() -> None:
    df = fio.parse("")
    assert len(df) == 0 and list(df.columns) == list(fio.SCHEMA)


def test_sniff() -> None:
    for path in F.glob("fio-*.txt"):
        assert fio.sniff(path.read_text()), path.name
    for path in FIXTURES.glob("*/*.txt"):
        if path.parent.name != "fio" and path.parent.name in parsers.registry():
            assert not fio.sniff(path.read_text(errors="replace")[:8192]), path

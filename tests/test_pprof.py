"""pprof: real Go profiles (tests/fixtures/pprof/, see README.md there), hand-built protobuf for the
corners, and `go tool pprof -top` as the oracle for `top()`."""

from __future__ import annotations

import gzip
import io
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import pprof

from .conftest import FIXTURES, need_tool

FIX = FIXTURES / "pprof"
PROFILES = sorted([*FIX.glob("*.pb.gz"), *FIX.glob("*.pb")])
FIXED = list(pprof.SCHEMA)


# ---------------------------------------------------------------- a tiny protobuf writer for the corners


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64 negatives: two's complement, 10 bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _num(no: int, n: int) -> bytes:
    return _varint(no << 3) + _varint(n)


def _msg(no: int, payload: bytes) -> bytes:
    return _varint(no << 3 | 2) + _varint(len(payload)) + payload


def _packed(no: int, ns: list[int]) -> bytes:
    return _msg(no, b"".join(_varint(n) for n in ns))


def _profile(
    samples: list[tuple[list[int], list[int]]],
    *,
    locations: dict[int, list[int]] | None = None,
    functions: dict[int, str] | None = None,
    types: tuple[tuple[str, str], ...] = (("samples", "count"), ("cpu", "nanoseconds")),
    labels: list[bytes] | None = None,
    unpacked: bool = False,
) -> bytes:
    """A Profile message: functions id -> name, locations id -> function ids (innermost first)."""
    functions = functions or {1: "main.main", 2: "main.work", 3: "main.inlined"}
    locations = locations or {1: [1], 2: [2], 3: [3, 2]}
    strings = [""]

    def sid(text: str) -> int:
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    out = b"".join(_msg(1, _num(1, sid(t)) + _num(2, sid(u))) for t, u in types)
    for i, (locs, vals) in enumerate(samples):
        if unpacked:
            body = b"".join(_num(1, x) for x in locs) + b"".join(_num(2, v) for v in vals)
        else:
            body = _packed(1, locs) + _packed(2, vals)
        if labels and i < len(labels):
            body += labels[i]
        out += _msg(2, body)
    for lid, fids in locations.items():
        out += _msg(4, _num(1, lid) + b"".join(_msg(4, _num(1, f) + _num(2, 10)) for f in fids))
    for fid, name in functions.items():
        out += _msg(5, _num(1, fid) + _num(2, sid(name)))
    if labels:
        for key in ("thread", "t1", "size", "bytes"):
            sid(key)
    return out + b"".join(_msg(6, s.encode()) for s in strings) + _num(9, 1_700_000_000_000_000_000)


# ---------------------------------------------------------------- real profiles, values read by hand


def test_cpu_profile_hand_checked() -> None:
    df = pprof.parse(FIX / "go1.26-cpu-2s.pb.gz", host="db1")
    # `go tool pprof -raw` lists 55 samples; `-top` says "Total samples = 1.98s", `-sample_index=0`
    # "198 total"; PeriodType "cpu nanoseconds", Period 10000000, Time 07:50:20.656227413 UTC.
    assert list(df.columns) == [*FIXED, "samples_count", "cpu_nanoseconds"]
    assert len(df) == 55
    assert df["samples_count"].sum() == 198 and df["cpu_nanoseconds"].sum() == 1_980_000_000
    assert df["samples_count"].dtype == "int64" and (df["host"] == "db1").all()
    a = df.attrs
    assert a["value_columns"] == ["samples_count", "cpu_nanoseconds"]
    assert a["default_value_column"] == "cpu_nanoseconds"
    assert a["sample_types"][1] == {"type": "cpu", "unit": "nanoseconds", "column": "cpu_nanoseconds"}
    assert a["period"] == 10_000_000 and a["period_type"] == "cpu/nanoseconds"
    assert a["time"] == pd.Timestamp("2026-11-23T07:50:20.656227413Z")
    assert 1_900_000_000 < a["duration_ns"] < 2_100_000_000  # "Duration: 2s"
    assert a["drop_frames"] == "" and a["dropped_lines"] == 0
    # The first -raw sample is "3 30000000: 1 2 3 4 5"; -traces prints it leaf first:
    # blockSHANI, block, (*Digest).Write, Sum256, main.main.func1.
    first = df.iloc[0]
    assert first["stack"] == (
        "main.main.func1;crypto/sha256.Sum256;crypto/internal/fips140/sha256.(*Digest).Write;"
        "crypto/internal/fips140/sha256.block;crypto/internal/fips140/sha256.blockSHANI"
    )
    assert first["leaf"] == "crypto/internal/fips140/sha256.blockSHANI"
    assert (first["samples_count"], first["cpu_nanoseconds"]) == (3, 30_000_000)
    assert df["labels"].isna().all()
    # -top: "1.95s 98.48% 98.48% 1.95s 98.48% crypto/internal/fips140/sha256.blockSHANI"
    row = pprof.top(df, "cpu_nanoseconds").iloc[0]
    assert row["function"] == "crypto/internal/fips140/sha256.blockSHANI"
    assert row["flat"] == row["cum"] == 1_950_000_000
    assert round(row["flat_pct"], 2) == 98.48


def test_heap_profile_hand_checked() -> None:
    df = pprof.parse(FIX / "go1.26-heap.pb.gz")
    # -raw: "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes", 4 samples:
    # 0 0 0 0 | 1 1212696 1 1212696 bytes:[1048576] | 714 46850033 93 6135123 bytes:[65536] |
    # 5461 524336 5461 524336 bytes:[96]
    cols = ["alloc_objects_count", "alloc_space_bytes", "inuse_objects_count", "inuse_space_bytes"]
    assert list(df.columns) == FIXED + cols
    assert df[cols].values.tolist() == [
        [0, 0, 0, 0],
        [1, 1212696, 1, 1212696],
        [714, 46850033, 93, 6135123],
        [5461, 524336, 5461, 524336],
    ]
    assert df["labels"].tolist()[1:] == ["bytes=1048576", "bytes=65536", "bytes=96"]
    assert pd.isna(df["labels"].iloc[0])
    # No default_sample_type: pprof shows the last type (its header says "Type: inuse_space").
    assert df.attrs["default_value_column"] == "inuse_space_bytes"
    assert df.attrs["period"] == 524288 and df.attrs["period_type"] == "space/bytes"
    assert df.attrs["duration_ns"] is None
    # Location 1 has two Lines (-raw: "compress/flate.NewWriter" then "compress/gzip.(*Writer).Write"):
    # NewWriter was inlined into Write, so Write is the caller and NewWriter the leaf.
    assert df["stack"].iloc[0] == (
        "runtime/pprof.profileWriter;runtime/pprof.(*profileBuilder).build;"
        "compress/gzip.(*Writer).Write;compress/flate.NewWriter"
    )
    # -top: "5991.33kB 77.93% ... main.main.func2": 6135123 / 1024 = 5991.33
    top = pprof.top(df, "inuse_space_bytes")
    assert top.iloc[0].tolist()[:2] == ["main.main.func2", 6135123]
    # The zero-valued sample is skipped as pprof skips it: its functions do not appear.
    assert "compress/flate.NewWriter" not in set(top["function"])


def test_allocs_default_type_and_uncompressed_heap() -> None:
    # -raw marks "alloc_space/bytes[dflt]": the allocs endpoint sets default_sample_type.
    assert pprof.parse(FIX / "go1.26-allocs.pb.gz").attrs["default_value_column"] == "alloc_space_bytes"
    gz = pprof.parse(FIX / "go1.26-heap.pb.gz")
    raw = pprof.parse(FIX / "go1.26-heap-uncompressed.pb")
    pd.testing.assert_frame_equal(gz, raw)


def test_goroutine_profile_with_an_empty_stack() -> None:
    df = pprof.parse(FIX / "go1.26-goroutine.pb.gz")
    # -raw: five samples of 1, the fourth with no locations ("1: "); -top: "4, 80.00% of 5 total".
    assert df["goroutine_count"].tolist() == [1, 1, 1, 1, 1]
    assert df["stack"].iloc[3] == "" and pd.isna(df["leaf"].iloc[3])
    assert df["stack"].iloc[2] == "main.main.func2;time.Sleep;runtime.gopark"
    top = pprof.top(df, "goroutine_count")
    # "2 40.00% 40.00% 2 40.00% runtime.gopark": percent of all 5, the empty stack included.
    assert top.iloc[0].tolist() == ["runtime.gopark", 2, 40.0, 2, 40.0]
    assert top["flat"].sum() == 4
    lines = pprof.folded(df, "goroutine_count")
    assert len(lines) == 4 and "main.main.func2;time.Sleep;runtime.gopark 1" in lines


def test_mutex_profile_and_folded() -> None:
    df = pprof.parse(FIX / "go1.26-mutex.pb.gz")
    # -raw: "10 25788: 1 2 3 4 5 6" and "10 23985: 7 8 3 4 5 6"; -top: "49.77us ... runtime.unlock"
    assert df["contentions_count"].tolist() == [10, 10]
    assert df["delay_nanoseconds"].tolist() == [25788, 23985]
    assert (df["leaf"] == "runtime.unlock").all()
    lines = pprof.folded(df, "delay_nanoseconds")
    assert sorted(int(x.rsplit(" ", 1)[1]) for x in lines) == [23985, 25788]
    assert all(line.split(" ")[0].endswith(";runtime.unlock") for line in lines)
    top = pprof.top(df, "delay_nanoseconds")
    assert top.iloc[0].tolist() == ["runtime.unlock", 49773, 100.0, 49773, 100.0]


def test_sources_a_path_a_binary_stream_or_bytes() -> None:
    path = FIX / "go1.26-mutex.pb.gz"
    by_path = pprof.parse(str(path))
    with open(path, "rb") as fh:
        pd.testing.assert_frame_equal(pprof.parse(fh), by_path)
    pd.testing.assert_frame_equal(pprof.parse(io.BytesIO(path.read_bytes())), by_path)
    pd.testing.assert_frame_equal(pprof.parse_bytes(path.read_bytes()), by_path)


# ---------------------------------------------------------------- hand-built profiles


def test_inline_frames_expand_caller_last() -> None:
    # Sample: location 3 (lines: main.inlined, then its caller main.work), then location 1 (main.main).
    df = pprof.parse(gzip.compress(_profile([([3, 1], [2, 20])])))
    assert df["stack"].tolist() == ["main.main;main.work;main.inlined"]
    assert df["leaf"].tolist() == ["main.inlined"]
    assert df.attrs["time"] == pd.Timestamp(1_700_000_000_000_000_000, unit="ns", tz="UTC")


def test_recursion_counts_cum_once_per_sample() -> None:
    # main.main -> work -> main.main -> work (leaf), 5 samples; and main.main alone, 1 sample.
    df = pprof.parse(_profile([([2, 1, 2, 1], [5, 50]), ([1], [1, 10])]))
    top = pprof.top(df, "samples_count").set_index("function")
    assert top.loc["main.work", ["flat", "cum"]].tolist() == [5, 5]
    assert top.loc["main.main", ["flat", "cum"]].tolist() == [1, 6]
    assert top.loc["main.main", "cum_pct"] == pytest.approx(100.0)
    assert pprof.folded(df, "samples_count") == ["main.main 1", "main.main;main.work;main.main;main.work 5"]


def test_unpacked_repeated_fields_and_negative_values() -> None:
    samples = [([2, 1], [-3, -30]), ([1], [1, 10])]
    df = pprof.parse(_profile(samples, unpacked=True))
    assert df["samples_count"].tolist() == [-3, 1]  # diff profiles carry negative int64 values
    top = pprof.top(df, "samples_count").set_index("function")
    # Percent of the absolute total 4, as pprof computes it.
    assert top.loc["main.work", "flat_pct"] == pytest.approx(-75.0)


def test_string_and_numeric_labels() -> None:
    # Label{key, str} and Label{key, num, num_unit}; string indexes follow _profile's order:
    # "", samples, count, cpu, nanoseconds, main.main, main.work, main.inlined, thread, t1, size, bytes.
    label = _msg(3, _num(1, 8) + _num(2, 9)) + _msg(3, _num(1, 10) + _num(3, 128) + _num(4, 11))
    df = pprof.parse(_profile([([1], [1, 10])], labels=[label]))
    assert df["labels"].tolist() == ["thread=t1,size=128bytes"]


def test_an_empty_profile_keeps_its_value_columns() -> None:
    df = pprof.parse(gzip.compress(_profile([])))
    assert list(df.columns) == [*FIXED, "samples_count", "cpu_nanoseconds"] and len(df) == 0
    assert df.attrs["value_columns"] == ["samples_count", "cpu_nanoseconds"]


@pytest.mark.parametrize("empty", ["", b"", "  \n"])
def test_empty_input_is_the_empty_frame(empty: str | bytes) -> None:
    df = pprof.parse(empty)
    assert list(df.columns) == FIXED and len(df) == 0 and df.attrs["dropped_lines"] == 0


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_profile([([9], [1, 1])]), "names location 9"),
        (_profile([([1], [1])]), "1 values for 2 sample types"),
        (_profile([([3], [1, 1])], functions={1: "main.main"}), "names function"),
        (_profile([([1], [1, 1])])[:-40], "cut off"),
        (gzip.compress(_profile([([1], [1, 1])]))[:-12], "gzip stream cut off"),
        (b"\x1f\x8b\x08\x00garbage-not-deflate", "corrupt gzip"),
        (b"\xff" * 12, "varint longer than 10 bytes"),
        (b"\x0b\x00", "invalid wire type 3"),
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>', "SVG"),
    ],
    ids=["location", "values", "function", "cut", "gzip-cut", "gzip-bad", "varint", "wire", "svg"],
)
def test_broken_profiles_are_parse_errors(data: bytes, reason: str) -> None:
    with pytest.raises(ParseError) as info:
        pprof.parse(data)
    assert reason in info.value.reason and info.value.kind == "pprof" and info.value.line_no == 1


def test_text_is_refused_saying_why() -> None:
    with pytest.raises(ParseError, match="binary"):
        pprof.parse("hello\n")
    gz = (FIX / "go1.26-cpu-2s.pb.gz").read_bytes().decode("utf-8", errors="replace")
    with pytest.raises(ParseError, match="decoded as text"):
        pprof.parse(gz)
    with pytest.raises(ParseError, match="debug=0") as info:
        pprof.parse(FIX / "goroutine-debug1-text.txt")
    assert info.value.line == "goroutine profile: total 5"


def test_a_cut_fixture_is_an_error_not_a_partial_frame(tmp_path: Path) -> None:
    data = (FIX / "go1.26-cpu-2s.pb.gz").read_bytes()
    cut = tmp_path / "pprof-cpu.out"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParseError, match="cut off") as info:
        pprof.parse(cut)
    assert info.value.path == str(cut)


def test_sniff() -> None:
    # Text never: the kind comes from the manifest. Bytes: profiles yes, other kinds' fixtures no.
    others = [p for p in FIXTURES.glob("*/*") if p.parent.name != "pprof" and p.is_file()]
    assert others
    for path in [*PROFILES, *others]:
        assert not pprof.sniff(path.read_text(encoding="utf-8", errors="replace")[:8192]), path
    assert all(pprof.sniff_bytes(p.read_bytes()[:4096]) for p in PROFILES)
    assert not any(pprof.sniff_bytes(p.read_bytes()[:4096]) for p in others)
    assert not pprof.sniff_bytes((FIX / "goroutine-debug1-text.txt").read_bytes())


# ---------------------------------------------------------------- go tool pprof as the oracle

_ROW = re.compile(r"^\s*(\S+)\s+(\S+)%\s+(\S+)%\s+(\S+)\s+(\S+)%\s+(.+?)(?: \((?:partial-)?inline\))?$")
# pprof scales values for display: time from nanoseconds, memory from bytes (1024-based).
_UNITS = {
    "": 1,
    "ns": 1,
    "us": 1e3,
    "ms": 1e6,
    "s": 1e9,
    "mins": 60e9,
    "hrs": 3600e9,
    "B": 1,
    "kB": 1024,
    "MB": 1024**2,
    "GB": 1024**3,
    "TB": 1024**4,
}


def _printed(text: str) -> tuple[float, float]:
    """'5991.33kB' -> (value in base units, the printed precision: 0.01 kB in base units).

    pprof prints `%.2f` and trims `.00` (`2s`); plain counts are integers.
    """
    m = re.fullmatch(r"(-?[0-9.]+)([a-zA-Z]*)", text)
    assert m and m[2] in _UNITS, text
    return float(m[1]) * _UNITS[m[2]], 0.01 * _UNITS[m[2]] if m[2] or "." in m[1] else 1


def _go_top(go: str, path: Path, index: int) -> list[tuple[str, str, str, str, str]]:
    out = subprocess.run(
        [
            go,
            "tool",
            "pprof",
            "-top",
            "-nodecount=1000",
            "-nodefraction=0",
            f"-sample_index={index}",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    lines = out.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.split() == ["flat", "flat%", "sum%", "cum", "cum%"]
    )
    rows = []
    for line in lines[start + 1 :]:
        m = _ROW.match(line)
        assert m, line
        rows.append((m[6], m[1], m[2], m[4], m[5]))
    return rows


@pytest.mark.lab
@pytest.mark.parametrize("path", PROFILES, ids=[p.name for p in PROFILES])
def test_top_matches_go_tool_pprof(path: Path) -> None:
    go = need_tool("go")
    df = pprof.parse(path)
    for index, col in enumerate(df.attrs["value_columns"]):
        ours = pprof.top(df, col)
        theirs = _go_top(go, path, index)
        # Same functions in the same order (flat descending, then name).
        assert ours["function"].tolist() == [r[0] for r in theirs], (path.name, col)
        for (name, flat, flat_pct, cum, cum_pct), row in zip(theirs, ours.itertuples(), strict=True):
            for printed, mine in ((flat, row.flat), (cum, row.cum)):
                value, step = _printed(printed)
                # pprof rounds to 2 decimals of its unit: within half a step (plus float noise).
                assert abs(mine - value) <= step / 2 * 1.001, (path.name, col, name, printed, mine)
            for printed, mine in ((flat_pct, row.flat_pct), (cum_pct, row.cum_pct)):
                assert abs(mine - float(printed)) <= 0.005 * 1.001, (path.name, col, name, printed, mine)

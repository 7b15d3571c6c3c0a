"""vmstat parser: values, variants, cut-off and foreign captures."""

from __future__ import annotations

import io
import random
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import _chunks, _table, sniff_kind, vmstat
from perfkit.parsers._common import Source

from .conftest import FIXTURES, need_tool, row_by_row

V = FIXTURES / "vmstat"


def test_timestamped_values() -> None:
    df = vmstat.parse(V / "procps-4.0.2-wide-t-gu.txt", host="db1")
    assert len(df) == 4 and df["host"].eq("db1").all()
    assert df.loc[1, "bo"] == 44740 and df.loc[1, "cs"] == 36602 and df.loc[1, "wa"] == 21
    assert df.loc[1, "timestamp"] == pd.Timestamp("2026-11-22 13:47:03", tz="UTC")
    assert df["gu"].eq(0).all()
    assert df["since_boot"].tolist() == [True, False, False, False]


def test_narrow_output_has_no_gu() -> None:
    df = vmstat.parse(V / "procps-4.0.2-t.txt")
    assert df["gu"].isna().all() and df["id"].notna().all()


def test_printed_utc_wins_over_the_tz_argument() -> None:
    # header line 2 ends with `UTC`: the stamps are UTC whatever zone the caller assumed (this test
    # used to expect them read in Asia/Shanghai, 8 h early: the file says otherwise)
    for source in (V / "procps-4.0.2-t.txt", io.StringIO((V / "procps-4.0.2-t.txt").read_text())):
        df = vmstat.parse(source, tz="Asia/Shanghai")
        assert df.loc[0, "timestamp"] == pd.Timestamp("2026-11-22 13:46:59", tz="UTC")


@pytest.mark.parametrize(
    ("name", "tz", "first"),
    [
        # `TZ=America/Los_Angeles vmstat -t`: `PST` above `2026-11-27 04:45:20`
        ("procps-4.0.2-t-PST.txt", "America/Los_Angeles", "2026-11-27 12:45:20"),
        ("procps-4.0.2-wide-t-PST.txt", "America/Los_Angeles", "2026-11-27 12:45:24"),
        # `TZ=Europe/Berlin vmstat -t`: `CET` above `2026-11-27 13:45:22`
        ("procps-4.0.2-t-CET.txt", "Europe/Berlin", "2026-11-27 12:45:22"),
    ],
)
def test_printed_zone_read_in_the_host_zone_that_prints_it(name: str, tz: str, first: str) -> None:
    for source in (V / name, io.StringIO((V / name).read_text())):  # a path and a stream
        df = vmstat.parse(source, tz=tz)
        assert df.loc[0, "timestamp"] == pd.Timestamp(first, tz="UTC") and len(df) == 3


@pytest.mark.parametrize(
    ("name", "tz", "first"),
    [
        # an abbreviation that names one offset is read at it whatever the zone given
        ("procps-4.0.2-t-PST.txt", "UTC", "2026-11-27 12:45:20"),
        ("procps-4.0.2-t-CET.txt", "Asia/Shanghai", "2026-11-27 12:45:22"),
        # `TZ=Asia/Shanghai vmstat -t`: `CST` above `2026-11-27 21:00:20`, read in the zone given
        ("procps-4.0.2-t-CST.txt", "Asia/Shanghai", "2026-11-27 13:00:20"),
    ],
)
def test_printed_zone_naming_one_offset_is_read_at_it(name: str, tz: str, first: str) -> None:
    for source in (V / name, io.StringIO((V / name).read_text())):
        assert vmstat.parse(source, tz=tz).loc[0, "timestamp"] == pd.Timestamp(first, tz="UTC")


@pytest.mark.parametrize("tz", ["UTC", "America/Chicago"])  # US Central prints CST in winter too
def test_printed_zone_naming_several_is_refused_unless_the_given_zone_prints_it(tz: str) -> None:
    name = "procps-4.0.2-t-CST.txt"
    for source in (V / name, io.StringIO((V / name).read_text())):
        if tz == "America/Chicago":  # read in the zone given: 21:00:20 CST there is 03:00:20 UTC next day
            assert vmstat.parse(source, tz=tz).loc[0, "timestamp"] == pd.Timestamp(
                "2026-11-28 03:00:20", tz="UTC"
            )
            continue
        with pytest.raises(ParseError, match=r"stamps are in CST, which names several zones") as info:
            vmstat.parse(source, tz=tz)
        assert info.value.line_no == 2 and info.value.line.endswith("CST")


def test_each_run_in_the_zone_its_header_printed() -> None:
    # `(TZ=America/Los_Angeles vmstat -t 1 2; TZ=UTC vmstat -t 1 2)`: 04:47:55 PST, then 12:47:56 UTC
    df = vmstat.parse(V / "procps-4.0.2-runs-t-PST-then-UTC.txt", tz="America/Los_Angeles")
    want = ["2026-11-27 12:47:55", "2026-11-27 12:47:56", "2026-11-27 12:47:56", "2026-11-27 12:47:57"]
    assert df["timestamp"].tolist() == [pd.Timestamp(t, tz="UTC") for t in want]
    assert df["since_boot"].tolist() == [True, False, True, False] and df["bo"].tolist() == [
        1448,
        7492,
        1448,
        13968,
    ]


def test_repeated_header_is_skipped() -> None:
    df = vmstat.parse(V / "procps-4.0.2-repeated-header.txt")
    assert len(df) == 25 and df["timestamp"].isna().all() and df["since_boot"].sum() == 1


def test_cut_last_line_dropped_and_counted() -> None:
    df = vmstat.parse(V / "truncated-last-line.txt")
    assert len(df) == 3 and df.attrs["dropped_lines"] == 1


def test_garbage_mid_file_names_the_line() -> None:
    text = (V / "procps-4.0.2-plain.txt").read_text().splitlines()
    text.insert(3, " 1  0  0 oops 1 2 3")
    with pytest.raises(ParseError) as info:
        vmstat.parse("\n".join(text) + "\n")
    assert info.value.line_no == 4 and "oops" in info.value.line


# the values either side of int64: pandas reads the larger as uint64 or text, numpy refuses it
PAST_INT64 = ("9223372036854775808", "-9223372036854775809", "99999999999999999999999")


def _sources(text: str, tmp_path: Path) -> list[Source]:
    """The same capture as text, as a path and as a stream."""
    path = tmp_path / "vmstat.txt"
    path.write_text(text)
    return [text, path, io.StringIO(text)]


@pytest.mark.parametrize("number", PAST_INT64)
def test_number_past_int64_names_the_line(number: str, tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(" 24357688 ", f" {number} ", 1)  # line 4, `free`
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError) as info:
            vmstat.parse(source)
        assert info.value.line_no == 4 and number in info.value.line


@pytest.mark.parametrize("digit", ["²", "٣"])  # `str.isdigit` takes both, `\\d` and `int` take `٣`
def test_non_ascii_digit_names_the_line(digit: str) -> None:
    text = (V / "procps-4.0.2-t.txt").read_text().replace(" 24357688 ", f" {digit} ", 1)  # line 3
    for source in (text, io.StringIO(text)):
        with pytest.raises(ParseError, match="not an integer") as info:
            vmstat.parse(source)
        assert info.value.line_no == 3


@pytest.mark.parametrize(
    "tail",
    [
        " 2  0      0 99999999999999999999999   1856",
        # every field there, cut in the clock: this one escaped as OverflowError
        " 2  0      0 99999999999999999999999   1856 219108    0    0     0 39220 13752 31727  0 22 55 20  3"
        " 2026-11-22 13:47:0",
    ],
)
def test_number_past_int64_in_the_cut_last_line_is_dropped(tail: str, tmp_path: Path) -> None:
    text = (V / "truncated-last-line.txt").read_text()
    for source in _sources(text[: text.rindex("\n") + 1] + tail, tmp_path):
        df = vmstat.parse(source)
        assert len(df) == 3 and df.attrs["dropped_lines"] == 1


def test_int64_bounds_are_read(tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(" 24357688 ", " 9223372036854775807 ", 1)
    lines[4] = lines[4].replace(" 24357688 ", " -9223372036854775808 ", 1)
    for source in _sources("".join(lines), tmp_path):
        assert vmstat.parse(source)["free"].tolist()[1:3] == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize("year", ["9999", "2262", "0001"])
def test_timestamp_outside_datetime64_ns_names_the_line(year: str, tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("2026-11-22", f"{year}-11-22")  # line 4
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError, match="in 1678-2261") as info:
            vmstat.parse(source)
        assert info.value.line_no == 4


@pytest.mark.parametrize("stamp", ["2026-13-22 13:47:00", "2026-11-22 25:47:00", "2026-02-30 13:47:00"])
def test_timestamp_that_is_no_time_names_the_line(stamp: str, tmp_path: Path) -> None:
    # these were read as NaT: a row without its time, passing for a missing value
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("2026-11-22 13:47:00", stamp)  # line 4
    assert stamp in lines[3]
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError, match="is no date and time") as info:
            vmstat.parse(source)
        assert info.value.line_no == 4


def test_timestamp_outside_datetime64_ns_in_the_last_line(tmp_path: Path) -> None:
    lines = (V / "procps-4.0.2-t.txt").read_text().splitlines(keepends=True)
    lines[-1] = lines[-1].replace("2026-11-22", "9999-11-22")
    # a whole last line (its line end written) is no line cut mid-write: a bad one is named
    for source in _sources("".join(lines), tmp_path):
        with pytest.raises(ParseError, match="in 1678-2261") as info:
            vmstat.parse(source)
        assert info.value.line_no == 6
    # without its line end it may be a cut, and is dropped
    for source in _sources("".join(lines).rstrip("\n"), tmp_path):
        df = vmstat.parse(source)
        assert len(df) == 3 and df.attrs["dropped_lines"] == 1
        assert df["timestamp"].max() == pd.Timestamp("2026-11-22 13:47:01", tz="UTC")


def test_stamps_before_1970_and_lines_of_blanks_are_read(tmp_path: Path) -> None:
    lines = (
        (V / "procps-4.0.2-t.txt").read_text().replace("2026-11-22", "1969-07-20").splitlines(keepends=True)
    )
    lines.insert(4, "    \n")  # a line of blanks among the rows: no row, as an empty line
    for source in _sources("".join(lines), tmp_path):
        df = vmstat.parse(source)
        assert len(df) == 4 and df.loc[0, "timestamp"] == pd.Timestamp("1969-07-20 13:46:59", tz="UTC")


def test_german_header_is_refused_not_guessed() -> None:
    with pytest.raises(ParseError, match="LC_ALL=C"):
        vmstat.parse(V / "locale-de_DE.txt")


def test_sniff() -> None:
    assert vmstat.sniff((V / "procps-4.0.2-t.txt").read_text())
    # procps 4's wide header starts `--procs--`: `vmstat -w`, `-w -t`, `-a -w -t` are all sniffed
    for path in sorted(V.glob("*.txt")):
        assert vmstat.sniff(path.read_text()) == (path.name != "locale-de_DE.txt"), path.name
        assert sniff_kind(path.read_text()[:8192]) == (None if path.name == "locale-de_DE.txt" else "vmstat")
    assert not vmstat.sniff((FIXTURES / "sweep" / "spec-sdm91.txt").read_text())


@pytest.mark.lab
def test_real_vmstat_here() -> None:
    need_tool("vmstat")
    out = subprocess.run(
        ["vmstat", "-w", "-t", "1", "2"],
        capture_output=True,
        text=True,
        timeout=10,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    df = vmstat.parse(out)
    assert len(df) == 2 and df["timestamp"].is_monotonic_increasing
    total = df[["us", "sy", "id", "wa", "st"]].sum(axis=1)
    assert total.between(97, 103).all()  # vmstat rounds each share


# ---------------------------------------------------------------- captures holding more than one run


def _frames(path: Path, tmp_path: Path) -> list[pd.DataFrame]:
    """The capture read from each kind of source: text, path, stream."""
    return [vmstat.parse(source) for source in _sources(path.read_text(), tmp_path)]


def _boot_rows(df: pd.DataFrame) -> list[int]:
    return [i for i, flag in enumerate(df["since_boot"]) if flag]


def test_a_run_keeps_its_own_memory_columns(tmp_path: Path) -> None:
    # `vmstat 1 3; vmstat -a 1 3`: the -a run blanked buff/cache for the whole file
    for df in _frames(V / "procps-4.0.2-runs-plain-then-a.txt", tmp_path):
        assert len(df) == 6 and _boot_rows(df) == [0, 3]
        assert df["buff"].tolist()[:3] == [96516] * 3 and df["cache"].tolist()[:3] == [2651956] * 3
        assert df["inact"].tolist()[3:] == [1950516] * 3 and df["active"].tolist()[3:] == [946712] * 3
        # what a run did not print is missing, never 0
        assert df[["buff", "cache"]].iloc[3:].isna().all().all()
        assert df[["inact", "active"]].iloc[:3].isna().all().all()
        assert df["bo"].tolist() == [6919, 8, 0, 6849, 143548, 4]


def test_wide_timestamped_a_run_keeps_its_columns_and_times(tmp_path: Path) -> None:
    for df in _frames(V / "procps-4.0.2-runs-wide-t-then-a.txt", tmp_path):
        assert _boot_rows(df) == [0, 3] and df["gu"].eq(0).all()
        assert df["cache"].tolist()[:3] == [2644216] * 3 and df["cache"].iloc[3:].isna().all()
        assert df["active"].iloc[:3].isna().all() and df["active"].tolist()[3:] == [964816] * 3
        assert df["timestamp"].dt.strftime("%H:%M:%S").tolist() == [
            "07:19:23", "07:19:24", "07:19:25", "07:19:25", "07:19:26", "07:19:27",
        ]  # fmt: skip


def test_second_run_since_boot_row_is_flagged(tmp_path: Path) -> None:
    # `vmstat -t 1 3` twice: the second run's first row (us 50 sy 17 id 32: since boot) was a sample
    for df in _frames(V / "procps-4.0.2-runs-t-twice.txt", tmp_path):
        assert len(df) == 6 and _boot_rows(df) == [0, 3]
        assert df.loc[3, "id"] == 32 and df["timestamp"].notna().all()


def test_header_repeat_is_not_a_run_but_a_short_block_is(tmp_path: Path) -> None:
    # `vmstat 1 23; vmstat 1 4`: vmstat's own repeat after 21 rows, then a new run after 2 more
    for df in _frames(V / "procps-4.0.2-runs-23-then-4.txt", tmp_path):
        assert len(df) == 27 and _boot_rows(df) == [0, 23]


def test_timestamps_tell_a_run_after_21_rows_from_a_repeat(tmp_path: Path) -> None:
    # `vmstat -t 1 21; vmstat -t 1 3`: the header comes where vmstat's repeat would, but the row after
    # it is stamped 07:20:17 like the row before: a sleeping vmstat cannot print two rows in one second
    path = V / "procps-4.0.2-runs-t-21-then-3.txt"
    for df in _frames(path, tmp_path):
        assert len(df) == 24 and _boot_rows(df) == [0, 21]
    # one second later it could be either: taken for vmstat's own repeat (module docstring)
    text = path.read_text()
    first = " 2861  8172 1134 1920 58 16 25  1  0 2026-11-27 07:20:"  # the second run's since-boot row
    later = text.replace(first + "17", first + "18")
    assert later != text
    for source in _sources(later, tmp_path):
        assert _boot_rows(vmstat.parse(source)) == [0]


def test_narrow_then_wide_run_is_read(tmp_path: Path) -> None:
    # `vmstat 1 2; vmstat -w 1 2`: 17 columns then 18 (gu) escaped as a numpy ValueError
    for df in _frames(V / "procps-4.0.2-runs-narrow-then-wide.txt", tmp_path):
        assert _boot_rows(df) == [0, 2] and df["r"].tolist() == [10, 7, 7, 10]
        assert df["gu"].iloc[:2].isna().all() and df["gu"].tolist()[2:] == [0, 0]


def test_timestamps_of_a_t_run_kept_before_a_plain_run(tmp_path: Path) -> None:
    # `vmstat -t 1 2; vmstat 1 2`: the last run's layout (no -t) erased the first run's times
    for df in _frames(V / "procps-4.0.2-runs-t-then-plain.txt", tmp_path):
        assert _boot_rows(df) == [0, 2]
        assert df["timestamp"].tolist()[:2] == [
            pd.Timestamp("2026-11-27 07:20:24", tz="UTC"),
            pd.Timestamp("2026-11-27 07:20:25", tz="UTC"),
        ]
        assert df["timestamp"].iloc[2:].isna().all()


def test_terminal_height_repeat_reads_as_runs(tmp_path: Path) -> None:
    # vmstat on a 10-row terminal repeats its header every 7 rows: the text is that of `vmstat 1 7` run
    # again, so each screenful's first row is flagged (the documented limit), never counted as a sample
    for df in _frames(V / "procps-4.0.2-tty-10-rows.txt", tmp_path):
        assert len(df) == 9 and _boot_rows(df) == [0, 7]


def _long_capture(rows: int, runs_at: dict[int, str]) -> str:
    """`vmstat -w -t 1` rows with vmstat's header every 21 rows; a new run starts at each row of
    `runs_at` ("same" second as the row before, or a "short" block: header after fewer rows)."""
    fixture = (V / "procps-4.0.2-wide-t-gu.txt").read_text().splitlines(keepends=True)
    head, row = "".join(fixture[:2]), fixture[3]
    stamp = row[-20:-1]
    out, since, clock = [], 0, pd.Timestamp("2026-11-22 23:00:00")
    for i in range(rows):
        how = runs_at.get(i)
        if i == 0 or since == 21 or how:
            out.append(head)
            since = 0
        if how != "same":
            clock += pd.Timedelta(seconds=1)
        out.append(row.replace(stamp, clock.strftime("%Y-%m-%d %H:%M:%S")).replace(" 44740 ", f" {i:5d} "))
        since += 1
    return "".join(out)


def _in_bulk(source: Source) -> pd.DataFrame:
    """The capture read with every run of rows in bulk (a row read one by one fails the test)."""

    def one_by_one(*args: object) -> None:
        raise AssertionError("a run of rows was read row by row")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_table.Table, "read_lines", one_by_one)
        return vmstat.parse(source)


@pytest.mark.parametrize("runs_at", [{}, {4200: "same"}, {4210: "short"}, {840: "same", 5000: "short"}])
def test_long_capture_in_many_chunks_bulk_and_row_by_row_agree(
    runs_at: dict[int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _long_capture(6000, runs_at)
    expected = row_by_row(vmstat.parse, text)
    # small chunks: header pairs cut at every place, runs split across reads
    monkeypatch.setattr(_table, "CHUNK_ROWS", 97)
    monkeypatch.setattr(_chunks, "_CHUNK_BYTES", 5000)
    for source in _sources(text, tmp_path):
        pd.testing.assert_frame_equal(_in_bulk(source), expected)
    assert len(expected) == 6000 and expected["bo"].tolist() == list(range(6000))
    assert _boot_rows(expected) == [0, *sorted(runs_at)]


def _random_runs(rng: random.Random) -> tuple[str, list[int]]:
    """Up to 4 runs of random layouts and counts appended to one text, vmstat's header repeated every
    21 rows (or never: -n), and the first row of each run the module docstring's rule can tell."""
    layouts = {}
    for kind, name, at in (
        ("plain", "procps-4.0.2-plain.txt", 0),
        ("t", "procps-4.0.2-t.txt", 0),
        ("wide-t", "procps-4.0.2-wide-t-gu.txt", 0),
        ("a", "procps-4.0.2-runs-plain-then-a.txt", 5),
    ):
        lines = (V / name).read_text().splitlines(keepends=True)
        layouts[kind] = ("".join(lines[at : at + 2]), lines[at + 3])
    out: list[str] = []
    starts: list[int] = []
    clock = pd.Timestamp("2026-11-22 23:59:00")
    rows = last_block = 0
    last_kind = None
    for run in range(rng.randint(1, 4)):
        kind = rng.choice(sorted(layouts))
        head, row = layouts[kind]
        gap = rng.choice([0, 0, 1, 5])  # seconds from the last run's last row to this one's first
        timed = kind in ("t", "wide-t")
        if not run or kind != last_kind or last_block != 21 or (timed and gap == 0):
            starts.append(rows)
        clock += pd.Timedelta(seconds=gap if run else 0)
        every = 10**9 if rng.random() < 0.2 else 21  # -n: the header once
        for i in range(rng.choice([1, 2, 20, 21, 22, 42, 43, rng.randint(1, 70)])):
            if i % every == 0:
                out.append(head)
                last_block = 0
            clock += pd.Timedelta(seconds=1 if i else 0)
            out.append(row[:-20] + clock.strftime("%Y-%m-%d %H:%M:%S\n") if timed else row)
            last_block += 1
            rows += 1
        last_kind = kind
    return "".join(out), starts


def test_random_runs_bulk_and_row_by_row_agree_with_the_rule() -> None:
    rng = random.Random(14)
    for _ in range(150):
        text, starts = _random_runs(rng)
        walked = row_by_row(vmstat.parse, text)
        pd.testing.assert_frame_equal(_in_bulk(text), walked)
        pd.testing.assert_frame_equal(_in_bulk(io.StringIO(text)), walked)
        assert _boot_rows(walked) == starts


def test_public_capture_with_pdt_header() -> None:
    # jc's centos-7.7 `vmstat -awt` (procps 3.3): `PDT`, `2 0 0 2794864 295968 312724 ... 2021-09-16 20:31:30`
    df = vmstat.parse(V / "jc-centos-7.7-awt-PDT.txt", tz="America/Los_Angeles")
    assert df.loc[0, "timestamp"] == pd.Timestamp("2021-09-17 03:31:30", tz="UTC")
    assert (df.loc[0, "free"], df.loc[0, "inact"], df.loc[0, "active"], df.loc[0, "id"]) == (
        2794864,
        295968,
        312724,
        99,
    )
    # PDT names one offset (UTC−7): the same instants without the host's zone
    assert vmstat.parse(V / "jc-centos-7.7-awt-PDT.txt")["timestamp"].equals(df["timestamp"])

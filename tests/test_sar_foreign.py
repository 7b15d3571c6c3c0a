"""sar text from `sar -A`, `sar -F` and `sar -dp` (issue 17): every table perfkit knows read, the rest
skipped as blocks (counted, header quoted), `Summary:` blocks skipped knowingly, `-dp` sniffed.

Expected values are read off the raw fixture lines (quoted in the comments), not off the parser.
"""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit import parsers
from perfkit.errors import ParseError
from perfkit.parsers import sadf, sar
from perfkit.parsers._common import skips_of

from .conftest import FIXTURES

S = FIXTURES / "sar"


def _row(df: pd.DataFrame, table: str, stamp: str, instance: str = "") -> pd.Series:
    hit = df[
        (df["table"] == table)
        & (df["timestamp"] == pd.Timestamp(stamp, tz="UTC"))
        & (df["instance"] == instance)
    ]
    assert len(hit) == 1
    return hit.iloc[0]


@pytest.mark.parametrize("name", ["sysstat-12.6-A.txt", "sysstat-12.6-A-iso.txt"])
def test_sar_A_reads_known_tables_and_skips_the_rest(name: str) -> None:
    df = sar.parse(S / name)
    # 3 intervals: cpu all+0+1, one queue/memory/tcp/etcp row, vda, four interfaces
    assert df["table"].value_counts().to_dict() == {
        "cpu": 9, "queue": 3, "memory": 3, "disk": 3, "net_dev": 12, "net_tcp": 3, "net_etcp": 3
    }  # fmt: skip
    skips = skips_of(df)
    # 29 unknown tables x (3 intervals + Average) + the `Summary:` block, each header quoted first
    assert skips.count == 408
    assert [q.line_no for q in skips.quoted] == [8, 11, 49]
    assert skips.quoted[1].text.split()[1:] == ["INTR", "all", "CPU0", "CPU1"]
    assert "Summary:" not in " ".join(df.attrs["skipped_tables"])  # the fs table, listed once by its names
    assert "MBfsfree MBfsused %fsused %ufsused Ifree Iused %Iused FILESYSTEM" in df.attrs["skipped_tables"]


def test_sar_A_values_agree_with_the_raw_file() -> None:
    df = sar.parse(S / "sysstat-12.6-A.txt")
    # `12:45:13   all   22.63   0.00   20.00   12.11   1.05   0.00   1.05   0.00   0.00   43.16` (blanks cut)
    c = _row(df, "cpu", "2026-11-27 12:45:13", "all")
    assert (c["usr_pct"], c["sys_pct"], c["iowait_pct"], c["soft_pct"], c["idle_pct"]) == (
        22.63, 20.0, 12.11, 1.05, 43.16
    )  # fmt: skip
    # `12:45:14          vda   4565.00  18856.00  15492.00     44.00      7.53      0.52      0.11     41.20`
    d = _row(df, "disk", "2026-11-27 12:45:14", "vda")
    assert (d["tps"], d["rkb_s"], d["wkb_s"], d["areq_kb"], d["await_ms"], d["util_pct"]) == (
        4565.0, 18856.0, 15492.0, 7.53, 0.11, 41.2
    )  # fmt: skip
    # `12:45:13            1       136      0.33      0.78      1.43         0`
    q = _row(df, "queue", "2026-11-27 12:45:13")
    assert (q["runq_sz"], q["plist_sz"], q["ldavg_15"]) == (1, 136, 1.43)
    # the `Average:` rows of read tables stay apart; `Average:  vda  4227.33 ...` style rows
    assert {a["table"] for a in df.attrs["averages"]} == {
        "cpu", "queue", "memory", "disk", "net_dev", "net_tcp", "net_etcp"
    }  # fmt: skip


def test_sar_A_text_and_sadf_export_of_one_file_agree() -> None:
    # `sar -A -o sa-A.bin 1 3` printed the text; `sadf -d sa-A.bin -- -A` exported the file it wrote
    text = sar.parse(S / "sysstat-12.6-A.txt")
    export = sadf.parse(FIXTURES / "sadf" / "sysstat-12.6-d-A.txt")
    assert len(text) == 36
    pd.testing.assert_frame_equal(text, export)


@pytest.mark.parametrize("name", ["sysstat-12.6-F.txt", "sysstat-12.6-F-iso.txt"])
def test_sar_F_alone_is_refused_as_nothing_readable_naming_the_table(name: str) -> None:
    # perfkit reads no filesystem table: the capture holds no row it reads, so it is refused whole,
    # at its header, not at the `Summary:` line as before
    with pytest.raises(ParseError, match=r":3: nothing readable \(5 lines skipped\)") as err:
        sar.parse(S / name)
    assert "FILESYSTEM" in err.value.line


def test_summary_row_of_a_read_table_is_skipped_and_quoted() -> None:
    # no sysstat prints `Summary:` under a table perfkit reads; if one does, the row is no interval
    text = (S / "sysstat-12.6-dp.txt").read_text().replace("Average:", "Summary:")
    df = sar.parse(text)
    assert len(df) == 3 and df.attrs["averages"] == []
    (quoted,) = skips_of(df).quoted
    assert quoted.line_no == 7 and quoted.text.startswith("Summary:      4707.00")


@pytest.mark.parametrize(
    "name", ["sysstat-12.6-dp.txt", "sysstat-12.6-d-pretty-iso.txt", "sysstat-tests-expected.sar-pretty.txt"]
)
def test_device_name_last_is_sniffed_and_read(name: str) -> None:
    text = (S / name).read_text()
    assert sar.sniff(text)
    assert [k for k, mod in parsers.registry().items() if mod.sniff(text)] == ["sar"]
    df = sar.parse(S / name)
    assert set(df["table"]) == {"disk"}


def test_device_name_last_values() -> None:
    df = sar.parse(S / "sysstat-12.6-dp.txt")
    # `12:46:49     11031.00     28.00  32740.00   8256.00      3.72      0.58      0.04     43.20 vda`
    d = _row(df, "disk", "2026-11-27 12:46:49", "vda")
    assert (d["tps"], d["wkb_s"], d["dkb_s"], d["areq_kb"], d["aqu_sz"], d["util_pct"]) == (
        11031.0, 32740.0, 8256.0, 3.72, 0.58, 43.2
    )  # fmt: skip


def test_sysstat_own_sar_A_expected_output() -> None:
    # sysstat's tests/expected.sar-A (sysstat 12.7.x, `sar -BbdFHSvWwy -I ALL -m CPU,FREQ,USB -n ALL
    # -q ALL -r ALL -u ALL 1 2` under TZ=GMT on its fake /proc)
    df = sar.parse(S / "sysstat-tests-expected.sar-A.txt")
    assert df["table"].value_counts().to_dict() == {
        "net_dev": 12, "disk": 10, "cpu": 2, "queue": 2, "memory": 2, "net_tcp": 2, "net_etcp": 2
    }  # fmt: skip
    assert skips_of(df).count == 358 and df.attrs["unknown_columns"] == ["kbshmem"]
    assert df["retrans_s"].notna().sum() == 2  # 12.7.6 renamed ETCP's retrans/s to retrseg/s

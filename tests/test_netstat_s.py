"""netstat_s: `netstat -s` and `nstat` counters with rates between snapshots (tests/fixtures/netstat_s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit import parsers
from perfkit.parsers import netstat_s

FIX = Path(__file__).parent / "fixtures" / "netstat_s"


def _series(df, counter: str):
    return df[df["counter"] == counter].reset_index(drop=True)


def test_ptstalk_series_rates() -> None:
    df = netstat_s.parse(FIX / "ptstalk-3.2.1-netstat_s.txt", host="vm")
    assert df.attrs["snapshots"] == 5 and df.attrs["skipped"].count == 0
    out = _series(df, "TcpOutSegs")
    # 163935181 at 12:48:04.032509, 163962822 at 12:48:05.147574
    assert list(out["value"][:2]) == [163935181, 163962822]
    assert out["per_s"][1] == pytest.approx(27641 / 1.115065)
    retrans = _series(df, "TcpRetransSegs")
    assert (retrans["value"] == 322).all() and (retrans["per_s"][1:] == 0).all()
    assert _series(df, "TcpCurrEstab")["per_s"].isna().all()  # a gauge
    assert _series(df, "TcpExtTCPTimeouts")["value"][0] == 15  # `TCPTimeouts: 15` under TcpExt:
    assert _series(df, "TcpExt:Quick ack mode was activated N times")["value"][0] == 313


def test_single_netstat_and_nstat_loop() -> None:
    one = netstat_s.parse(FIX / "net-tools-netstat-s.txt")
    assert one.attrs["snapshots"] == 1 and one["timestamp"].isna().all() and one["per_s"].isna().all()
    assert _series(one, "TcpRetransSegs")["value"][0] == 323
    ns = netstat_s.parse(FIX / "nstat-az-loop.txt")
    assert ns.attrs["snapshots"] == 3 and "nstat" in ns.attrs["notes"][0]
    assert list(_series(ns, "TcpExtListenOverflows")["value"]) == [0, 0, 0]
    assert list(_series(ns, "TcpRetransSegs")["per_s"][1:]) == [0, 0]


def test_sniffed() -> None:
    for name in ("ptstalk-3.2.1-netstat_s.txt", "net-tools-netstat-s.txt", "nstat-az-loop.txt"):
        assert parsers.sniff_kind((FIX / name).read_text()[:8192]) == "netstat_s"


def test_listen_overflows_named_and_unknown_lines_skipped() -> None:
    text = (
        "TS 10.0 x\nTcpExt:\n    7 times the listen queue of a socket overflowed\n"
        "    7 SYNs to LISTEN sockets dropped\n    1 2 weird\n"
        "TS 12.0 x\nTcpExt:\n    11 times the listen queue of a socket overflowed\n"
        "    11 SYNs to LISTEN sockets dropped\n"
    )
    df = netstat_s.parse(text)
    assert list(_series(df, "TcpExtListenOverflows")["per_s"].fillna(-1)) == [-1, 2.0]
    assert list(_series(df, "TcpExtListenDrops")["value"]) == [7, 11]
    assert df.attrs["skipped"].count == 1

"""net.listen-overflow and net.retransmits on real captures (perfkit's nstat capture in network
namespaces, tests/test_net_lab.py made them; pt-stalk's netstat -s series; sadf's TCP tables), their
controls, per-step windows, counter resets, and the USE rows.

Figures worked by hand from the raw files (tests/fixtures/netstat_s/README.md):
- perfkit-nstat-listen-backlog-1.txt: TcpExtListenDrops 70 at TS 1795794142.418588565, 320 at
  1795794148.454510023: 250 drops in 6.035921458 s = 41.42/s; TcpExtTCPSynRetrans 32 -> 200: 27.83/s.
- perfkit-nstat-loss-5pct.txt: TcpOutSegs 751 -> 6192 and TcpRetransSegs 36 -> 263 between TS
  1795794159.572624959 and 1795794165.618564029: 227 of 5441 = 4.17 %, 900.0 segments/s.
"""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from perfkit.analyzers import net
from perfkit.config import default_thresholds, threshold_problem
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Skipped
from perfkit.parsers import netstat_s, sadf, sysctl
from perfkit.reports.use import use_rows

from .conftest import FIXTURES

TH = default_thresholds()
NS = FIXTURES / "netstat_s"
BACKLOG_1 = NS / "perfkit-nstat-listen-backlog-1.txt"
BACKLOG_4096 = NS / "perfkit-nstat-listen-backlog-4096.txt"
LOSS_5 = NS / "perfkit-nstat-loss-5pct.txt"
LOSS_NONE = NS / "perfkit-nstat-loss-none.txt"
SOMAXCONN = FIXTURES / "sysctl" / "procps-4.0.2-perfkit-keys-netns-somaxconn-4096.txt"
PTSTALK = NS / "ptstalk-3.2.1-netstat_s.txt"


def nstat(path, host: str = "db1", step: str | None = None) -> Capture:
    where = f"hosts/{host}/{step}/nstat.out" if step else f"hosts/{host}/nstat.out"
    return Capture(where, "netstat_s", host, step, netstat_s.parse(path, host=host))


def dataset(*caps: Capture, steps: dict[str, int] | None = None) -> Dataset:
    """The captures, and for `steps` each step's record as `perfkit run` writes it (its threads)."""
    records = [
        {"path": c.path, "step": c.step, "threads": steps[c.step]} for c in caps if c.step in (steps or {})
    ]
    return Dataset("test", {"captures": records} if steps else None, list(caps))


def with_sysctl(ds: Dataset, host: str = "db1") -> Dataset:
    ds.captures.append(
        Capture(f"hosts/{host}/sysctl.out", "sysctl", host, None, sysctl.parse(SOMAXCONN, host=host))
    )
    return ds


def test_tiny_backlog_is_a_listen_overflow_with_its_figures() -> None:
    [f] = net.listen_overflow(with_sysctl(dataset(nstat(BACKLOG_1))), None, TH)
    ev = f.evidence
    assert ev["drops"] == 250 and ev["seconds"] == pytest.approx(6.035921458)
    assert ev["drops_s"] == pytest.approx(250 / 6.035921458)
    assert ev["overflows_s"] == pytest.approx(250 / 6.035921458)  # every drop here was an overflow
    assert ev["syn_retrans_s"] == pytest.approx(168 / 6.035921458)
    assert ev["somaxconn"] == 4096 and ev["tcp_max_syn_backlog"] == 2048 and ev["back_log"] is None
    assert ev["samples"] == 6 and ev["first_window"] == "whole capture" and ev["threads"] is None
    assert f.severity == "critical" and f.hosts == ["db1"]  # 41 a second, from 1
    assert f.window == ("2026-11-27T15:42:22.418589+00:00", "2026-11-27T15:42:28.454510+00:00")
    assert f.summary.startswith(
        "Over the whole capture on db1, listening sockets dropped 250 connection attempts"
    )
    assert "41.4/s" in f.summary and "net.core.somaxconn 4096" in f.summary
    assert "hosts/db1/sysctl.out" in ev["source"]


def test_control_backlog_is_silent_but_read() -> None:
    ds = dataset(nstat(BACKLOG_4096))
    assert net.listen_overflow(ds, None, TH) == []
    [w] = net.tcp_windows(ds, None)
    assert w.delta("drops") == 0 and w.delta("overflows") == 0


def test_listen_overflow_per_step_names_where_it_starts() -> None:
    # the control's capture as the 1-thread step, the tiny backlog's as the 16-thread step
    ds = dataset(
        nstat(BACKLOG_4096, step="t0001"), nstat(BACKLOG_1, step="t0016"), steps={"t0001": 1, "t0016": 16}
    )
    [f] = net.listen_overflow(ds, None, TH)
    ev = f.evidence
    assert ev["first_window"] == "t0016" and ev["first_threads"] == 16 and ev["windows_over"] == 1
    assert [(s["name"], s["threads"], s["drops"]) for s in ev["steps"]] == [
        ("t0001", 1, 0),
        ("t0016", 16, 250),
    ]
    assert f.title.endswith("at 16 threads (t0016)")
    assert "They start at 16 threads (1 lower step without)." in f.summary


def test_five_percent_loss_is_retransmits_with_its_figures() -> None:
    [f] = net.retransmits(dataset(nstat(LOSS_5, host="app1")), None, TH)
    ev = f.evidence
    sec = 1795794165.618564029 - 1795794159.572624959
    assert ev["retrans_share"] == pytest.approx(227 / 5441)
    assert ev["out_segs_s"] == pytest.approx(5441 / sec, rel=1e-6)
    assert ev["retrans_s"] == pytest.approx(227 / sec, rel=1e-6)
    assert ev["loss_probes_s"] == pytest.approx((239 - 30) / sec, rel=1e-6)
    assert ev["timeouts_s"] > 0 and ev["samples"] == 6
    assert f.severity == "warning"  # 4.2 %: below the 5 % of critical_retrans_share
    assert "227" not in f.summary and "4.2%" in f.summary and f.hosts == ["app1"]


def test_control_without_loss_is_silent() -> None:
    ds = dataset(nstat(LOSS_NONE))
    assert net.retransmits(ds, None, TH) == []
    [w] = net.tcp_windows(ds, None)
    assert w.delta("retrans") == 0 and w.delta("out_segs") > 100_000


def test_thresholds_decide() -> None:
    th = {**TH, "net.retransmits": {**TH["net.retransmits"], "min_retrans_share": 0.05}}
    assert net.retransmits(dataset(nstat(LOSS_5)), None, th) == []
    th = {**TH, "net.retransmits": {**TH["net.retransmits"], "critical_retrans_share": 0.04}}
    assert net.retransmits(dataset(nstat(LOSS_5)), None, th)[0].severity == "critical"
    th = {**TH, "net.listen-overflow": {**TH["net.listen-overflow"], "min_drops": 251}}
    assert net.listen_overflow(dataset(nstat(BACKLOG_1)), None, th) == []
    for rule in ("net.retransmits", "net.listen-overflow"):
        for key, value in TH[rule].items():
            assert threshold_problem(key, value) is None, (rule, key)
    assert threshold_problem("min_retrans_share", 5) is not None  # a share, not a percentage


def test_ptstalk_netstat_s_windows_read_and_zero_listen_counters() -> None:
    # netstat -s prints a TcpExt counter only when it is not zero: the listen counters are absent from
    # pt-stalk's snapshots, which read 0 drops (not "no counters"); 322 retransmits all along: 0 %
    cap = Capture(
        "2026_11_27_12_48_02-netstat_s", "netstat_s", "vm", "2026_11_27_12_48_02", netstat_s.parse(PTSTALK)
    )
    ds = dataset(cap)
    [w] = net.tcp_windows(ds, None)
    assert w.name == "2026_11_27_12_48_02" and w.label() == "in the window 2026_11_27_12_48_02"
    assert w.delta("drops") == 0 and w.delta("retrans") == 0
    # `163935181 segments sent out` in the first snapshot, `164049088` in the fifth
    assert w.delta("out_segs") == pytest.approx(164_049_088 - 163_935_181)
    assert net.listen_overflow(ds, None, TH) == [] and net.retransmits(ds, None, TH) == []


def test_counter_reset_is_left_out_not_negative() -> None:
    text = "".join(
        f"TS {t}.0 x\n#kernel\nTcpOutSegs {o} 0.0\nTcpRetransSegs {r} 0.0\n"
        for t, o, r in ((10, 1000, 10), (11, 2000, 60), (12, 500, 0), (13, 1500, 50))
    )
    ds = dataset(Capture("n.out", "netstat_s", "h", None, netstat_s.parse(text, host="h")))
    [w] = net.tcp_windows(ds, None)
    # 10->11: 1000 sent, 50 resent; 11->12 went back (a reset): no rate; 12->13: 1000 sent, 50 resent
    assert w.delta("out_segs", beside=("retrans",)) == 2000 and w.seconds("out_segs", "retrans") == 2
    [f] = net.retransmits(ds, None, TH)
    assert f.evidence["retrans_share"] == 0.05 and f.evidence["samples"] == 2


def test_sadf_tcp_tables_are_read_when_no_nstat() -> None:
    f = sadf.parse(FIXTURES / "sadf" / "sysstat-12.6-d-n-TCP-ETCP.txt", host="vm")
    ds = dataset(Capture("hosts/vm/sar-tcp.out", "sadf", "vm", None, f))
    [w] = net.tcp_windows(ds, None)
    # oseg/s 17, 12, 57, 12, 12 over five 1 s intervals; retrans/s 0
    assert w.delta("out_segs") == 110 and w.seconds("out_segs") == 5 and w.delta("retrans") == 0
    assert net.retransmits(ds, None, TH) == []
    assert isinstance(net.listen_overflow(ds, None, TH), Skipped)  # sar has no listen counters
    # with nstat for the same host and step, sar's copy of the counters is not read twice
    ds.captures.append(nstat(LOSS_NONE, host="vm"))
    assert [w.source for w in net.tcp_windows(ds, None)] == ["hosts/vm/nstat.out"]


def test_no_counters_is_skipped() -> None:
    for rule in (net.retransmits, net.listen_overflow):
        got = rule(Dataset("empty", None, []), None, TH)
        assert isinstance(got, Skipped) and "nstat" in got.reason


def test_use_rows_show_tcp_errors() -> None:
    ds = dataset(nstat(LOSS_5, host="app1", step="t0008"), nstat(BACKLOG_1, host="db1", step="t0008"))
    rows = {(r.host, r.metric): r for r in use_rows(ds) if r.resource == "net" and r.check == "errors"}
    loss = rows[("app1", "TCP retransmits % of segments sent")]
    assert loss.unit == "%" and loss.samples == 6 and 2 < loss.mean < 8
    # TcpRetransSegs 36 75 115 155 193 228 263: the parser's per-second rates, averaged
    per_s = netstat_s.parse(LOSS_5).query("counter == 'TcpRetransSegs'")["per_s"].dropna()
    assert list(per_s.round(1)) == [38.4, 39.8, 39.7, 37.9, 34.8, 34.6]
    assert rows[("app1", "TCP retransmits")].mean == pytest.approx(per_s.mean())
    drops = rows[("db1", "listen queue drops")]
    assert drops.mean == pytest.approx(250 / 6, rel=0.05) and drops.step == "t0008"


def test_a_sweep_step_is_read_over_its_load_window() -> None:
    # the step's load ran from TS0 + 0.5 s to TS0 + 5 s; its window (sweep.load_window) drops the first
    # second and the last half second: [TS0 + 1.5, TS0 + 4.5] holds the blocks at +2.02, +3.02 and +4.03 s,
    # whose rates cover 107 -> 143 -> 178 -> 213 drops: 106 in 3.0 s
    ts0 = 1795794142.418588565
    at = lambda s: pd.Timestamp(ts0 + s, unit="s", tz="UTC").isoformat()  # noqa: E731
    step = SimpleNamespace(threads=16, source="load/t0016/sysbench.out")
    sweep = SimpleNamespace(steps=[step], metric="tps")
    ds = dataset(nstat(BACKLOG_1, step="t0016"))
    ds.manifest = {"captures": [{"path": step.source, "started_at": at(0.5), "ended_at": at(5.0)}]}
    [f] = net.listen_overflow(ds, sweep, TH)
    ev = f.evidence
    assert ev["drops"] == 106 and ev["samples"] == 3 and ev["threads"] == 16
    assert ev["seconds"] == pytest.approx(1795794146.446440319 - 1795794143.430650267)
    assert f.window[0].startswith("2026-11-27T15:42:23.918588") and f.window[1].startswith(
        "2026-11-27T15:42:26.918588"
    )


def test_back_log_of_the_database_in_the_evidence() -> None:
    from perfkit.parsers import mysql_variables

    # the lab MariaDB's variables (`back_log<TAB>152`): its listen() backlog, under somaxconn 4096
    path = FIXTURES / "mysql_variables" / "mariadb-10.11-client-batch-first-40.txt"
    ds = with_sysctl(dataset(nstat(BACKLOG_1)))
    ds.captures.append(
        Capture(
            "db/db1/t0016/variables.txt",
            "mysql_variables",
            "db1",
            "t0016",
            mysql_variables.parse(path, host="db1"),
        )
    )
    [f] = net.listen_overflow(ds, None, TH)
    assert f.evidence["back_log"] == 152 and f.evidence["somaxconn"] == 4096
    assert "net.core.somaxconn 4096, the database's back_log 152" in f.summary

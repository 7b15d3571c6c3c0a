"""rt.localized on seed 003's tier RTs, on counter-examples, and through `perfkit analyze --tiers`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfkit.analyzers import analyze, tiers
from perfkit.analyzers import sweep as sweep_model
from perfkit.cli import main
from perfkit.config import default_thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.parsers import sweep as sweep_parser
from perfkit.parsers import tiers as tiers_parser
from perfkit.pipeline import analyze_path

from .conftest import FIXTURES

TH = default_thresholds()


def tiers_ds(source: str | Path, *extra: Capture) -> Dataset:
    return Dataset("x", None, [*extra, Capture(str(source), "tiers", None, None, tiers_parser.parse(source))])


def rule(ds: Dataset, th: dict | None = None) -> list | object:
    th = th or TH
    return tiers.localized(ds, sweep_model.build(ds, th), th)


@pytest.mark.parametrize("name", ["seed003-long.txt", "seed003-wide.txt", "seed003-yaml.txt"])
def test_seed003_points_between_the_client_and_the_application(name: str) -> None:
    [f] = rule(tiers_ds(FIXTURES / "tiers" / name))
    ev = f.evidence
    assert ev["bottleneck_tier"] == "pts" and ev["next_inner_tier"] == "mhpt"
    assert ev["steps_compared"] == [3000, 5000]
    # own RT of pts = pts - mhpt: 290 - 225 = 65 ms at 3000, 499 - 195 = 304 ms at 5000
    assert (ev["own_rt_ms_from"], ev["own_rt_ms_to"], ev["own_rt_growth_ms"]) == (65, 304, 239)
    # mhpt's own RT 225 - 6 = 219 -> 195 - 6 = 189 (-30 ms); drds 6 -> 6
    assert ev["own_rt_growth_ms_by_tier"] == {"pts": 239, "mhpt": -30, "drds": 0}
    assert ev["end_to_end_growth_ms"] == 209  # 499 - 290
    assert ev["share_of_growth_pct"] == pytest.approx(239 / 209 * 100)
    assert [3000, "mhpt", 225, 219] in ev["rt_table_ms"] and [5000, "pts", 499, 304] in ev["rt_table_ms"]
    # no TPS for both levels in the file: closed-loop Little's law, 3000 / 0.290 s and 5000 / 0.499 s
    assert ev["throughput_from"] == pytest.approx(3000 / 0.290) and ev["throughput_to"] == pytest.approx(
        5000 / 0.499
    )
    assert "between pts and mhpt" in f.title and f.severity == "warning"
    assert "pts's own RT (pts minus mhpt) grew 65.0 → 304 ms" in f.summary


def test_sweep_client_rt_with_file_tiers() -> None:
    # The load generator's own table (client RT, TPS) plus the file's inner tiers: the client tier
    # comes from the sweep, throughput and knee from the sweep too (TPS 10000 -> 9856: knee at 3000).
    table = "threads,tps,lat_avg_ms\n3000,10000,290\n5000,9856,499\n"
    sw = Capture("sweep.csv", "sweep", None, None, sweep_parser.parse(table))
    ds = Dataset("x", None, [sw])
    yaml_text = (
        "tiers:\n  - {name: mhpt, rt_ms: {3000: 225, 5000: 195}}\n"
        "  - {name: drds, rt_ms: {3000: 6, 5000: 6}}\n"
    )
    ds.captures.append(Capture("t.yaml", "tiers", None, None, tiers_parser.parse(yaml_text)))
    [f] = rule(ds)
    assert f.evidence["tiers"] == ["client", "mhpt", "drds"] and f.evidence["bottleneck_tier"] == "client"
    assert f.evidence["throughput_method"] == "load generator (table)"
    assert f.evidence["throughput_to"] == 9856


def test_database_growing_names_the_database() -> None:
    ds = tiers_ds("threads,client_ms,app_ms,db_ms\n3000,290,225,6\n5000,499,430,215\n")
    [f] = rule(ds)
    # db's own RT 6 -> 215 (+209) is all of the end-to-end growth 290 -> 499; app's own 219 -> 215
    assert f.evidence["bottleneck_tier"] == "db" and f.evidence["next_inner_tier"] is None
    assert f.evidence["own_rt_growth_ms"] == 209 and "inside db" in f.title
    assert "db's RT (the innermost tier measured) grew 6.0 → 215 ms, 100% of the end-to-end" in f.summary


def test_flat_tiers_fire_nothing() -> None:
    assert rule(tiers_ds("threads,client_ms,app_ms,db_ms\n3000,290,225,6\n5000,300,230,6\n")) == []


def test_still_scaling_fires_nothing() -> None:
    # TPS 6000 -> 10000 for 3000 -> 5000 threads: elasticity 1, throughput still grows.
    text = "threads,tier,rt_ms,tps\n3000,c,290,6000\n3000,a,100,\n5000,c,499,10000\n5000,a,100,\n"
    assert rule(tiers_ds(text)) == []


def test_threshold_override_changes_the_outcome() -> None:
    th = default_thresholds()
    th["rt.localized"]["min_share_pct"] = 150  # pts's growth is 114% of the end-to-end growth
    assert rule(tiers_ds(FIXTURES / "tiers" / "seed003-wide.txt"), th) == []


def test_skipped_without_tiers_or_levels() -> None:
    skipped = rule(Dataset("x", None, []))
    assert skipped.rule == "rt.localized" and "--tiers" in skipped.reason
    one = rule(tiers_ds("threads,client_ms,app_ms\n3000,290,225\n"))
    assert "fewer than two tiers" in one.reason


def test_cli_tiers_option_adds_the_file(tmp_path: Path) -> None:
    table = tmp_path / "sweep.csv"
    table.write_text("threads,tps,lat_avg_ms\n3000,10000,290\n5000,9856,499\n")
    tfile = tmp_path / "tiers.yaml"
    tfile.write_text("tiers:\n  - {name: mhpt, rt_ms: {3000: 225, 5000: 195}}\n")
    res = CliRunner().invoke(main, ["analyze", str(table), "--tiers", str(tfile), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {"path": str(tfile), "kind": "tiers"}.items() <= doc["inputs"]["parsed"][-1].items()
    [f] = [f for f in doc["findings"] if f["rule"] == "rt.localized"]
    assert f["evidence"]["bottleneck_tier"] == "client" and f["evidence"]["own_rt_growth_ms"] == 239


def test_tiers_csv_in_a_foreign_archive_is_found_by_sniffing(tmp_path: Path) -> None:
    # a long CSV with a tps column: the sweep parser's sniff claims it too; it must be read as tiers
    (tmp_path / "tiers.csv").write_text((FIXTURES / "tiers" / "seed003-long.txt").read_text())
    (tmp_path / "tiers2.yaml").write_text((FIXTURES / "tiers" / "seed003-yaml.txt").read_text())
    result = analyze_path(tmp_path)
    kinds = {c.path: c.kind for c in result.dataset.captures}
    assert kinds == {"tiers.csv": "tiers", "tiers2.yaml": "tiers"}
    assert result.sweep is None  # not mistaken for a sweep table
    [f] = [f for f in result.findings if f.rule == "rt.localized"]
    assert f.evidence["bottleneck_tier"] == "pts"


def test_analyze_runs_the_rule() -> None:
    result = analyze(tiers_ds(FIXTURES / "tiers" / "seed003-yaml.txt"), TH)
    assert "rt.localized" in {f.rule for f in result.findings}

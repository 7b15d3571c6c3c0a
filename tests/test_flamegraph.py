"""The inline SVG flame graph: layout, hover text, escaping, and a real folded capture."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from perfkit.parsers import folded
from perfkit.reports.flamegraph import svg

NS = "{http://www.w3.org/2000/svg}"
FIX = Path(__file__).parent / "fixtures"


def frames(text: str) -> dict[str, tuple[float, float, str]]:
    """hover title -> (x, width, frame name) for every drawn frame; parsing proves well-formedness."""
    root = ET.fromstring(text)
    out = {}
    for g in root.iter(f"{NS}g"):
        title = g.find(f"{NS}title").text
        rect = g.find(f"{NS}rect")
        out[title] = (float(rect.get("x")), float(rect.get("width")), title.rsplit(" (", 1)[0])
    return out


def test_structure_widths_and_titles() -> None:
    stacks = [("main;b", 30), ("main;a;x", 10), ("main;a", 10), ("other", 50)]
    text = svg(stacks, title="t", width=1020)  # 1000 px inside the 10 px margins
    got = frames(text)
    # all, main, a, b, x, other: one rect per distinct frame node
    assert len(got) == 6 and text.count("<rect") == 6
    assert got["all (100 samples, 100.00%)"][:2] == (10.0, 1000.0)
    assert got["main (50 samples, 50.00%)"][:2] == (10.0, 500.0)
    # children sorted by name: a (20 samples) left of b (30), whatever the input order
    assert got["a (20 samples, 20.00%)"][:2] == (10.0, 200.0)
    assert got["b (30 samples, 30.00%)"][:2] == (210.0, 300.0)
    assert got["x (10 samples, 10.00%)"][:2] == (10.0, 100.0)
    assert got["other (50 samples, 50.00%)"][:2] == (510.0, 500.0)


def test_deterministic_colours_and_output() -> None:
    stacks = [("a;b", 3), ("a;c", 1)]
    assert svg(stacks, title="x") == svg(list(reversed(stacks)), title="x")


def test_tiny_frames_are_left_out() -> None:
    # 1 sample in 2000 is 0.05 % of the width: neither it nor its child is drawn
    got = frames(svg([("big", 1999), ("tiny;child", 1)], title="t"))
    assert {v[2] for v in got.values()} == {"all", "big"}


def test_hostile_names_are_escaped() -> None:
    evil = "<img src=x onerror=alert(1)>"
    text = svg([(f"main;{evil}", 5), ('q"&\x01', 5)], title=f"{evil} title")
    assert evil not in text and "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    root = ET.fromstring(text)  # well-formed despite the control character
    titles = [t.text for t in root.iter(f"{NS}title")]
    assert f"{evil} (5 samples, 50.00%)" in titles
    assert 'q"&\ufffd (5 samples, 50.00%)' in titles


def test_empty_input() -> None:
    root = ET.fromstring(svg([], title="none"))
    assert not list(root.iter(f"{NS}rect"))


@pytest.mark.parametrize("name", ["perf-6.1-python-awk.txt", "perf-6.1-swapper-awk.txt"])
def test_real_folded_capture_renders(name: str) -> None:
    frame = folded.parse(FIX / "folded" / name)
    text = svg(list(zip(frame["stack"], frame["count"], strict=True)), title=name)
    got = frames(text)
    total = int(frame["count"].sum())
    assert got[f"all ({total:,} samples, 100.00%)"][1] == pytest.approx(1180.0)
    comm = frame["comm"].iloc[0]
    comm_samples = int(frame.loc[frame["comm"] == comm, "count"].sum())
    [(x, w, _)] = [v for k, v in got.items() if k.startswith(f"{comm} (")]
    assert w == pytest.approx(1180.0 * comm_samples / total, abs=0.01)

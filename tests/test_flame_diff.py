"""Differential flame graphs (reports/flamegraph.py `diff_svg`, `frame_diffs`) on real profiles.

tests/fixtures/pprof/go1.26-cpu-{sha256,md5}-2s.pb.gz are the same Go program with one setting
changed (README there): the second adds a goroutine hashing with MD5. So the MD5 frames are new,
SHA-256's share of the samples falls, and nothing else moves beyond noise.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from perfkit.parsers import pprof
from perfkit.reports.flamegraph import NEUTRAL, diff_svg, frame_diffs

from .conftest import FIXTURES

SVG = "{http://www.w3.org/2000/svg}"


def stacks(name: str) -> list[tuple[str, int]]:
    frame = pprof.parse(FIXTURES / "pprof" / name)
    return [
        (line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1])) for line in pprof.folded(frame, "samples_count")
    ]


SHA, MD5 = stacks("go1.26-cpu-sha256-2s.pb.gz"), stacks("go1.26-cpu-md5-2s.pb.gz")


def fills(svg: str) -> dict[str, tuple[str, bool]]:
    """frame name -> (fill, outlined) of its widest frame, from the drawn SVG."""
    out: dict[str, tuple[str, bool, float]] = {}
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        rect = g.find(f"{SVG}rect")
        name = g.find(f"{SVG}title").text.split(":")[0].split(" (")[0]
        width = float(rect.get("width"))
        if name not in out or width > out[name][2]:
            out[name] = (rect.get("fill"), rect.get("stroke") == "black", width)
    return {k: v[:2] for k, v in out.items()}


def test_the_frames_that_grew_are_red_and_the_ones_that_shrank_blue() -> None:
    svg = diff_svg(SHA, MD5, title="cpu", base_name="sha256 only", new_name="with md5")
    f = fills(svg)
    md5_leaf, sha_leaf = f["crypto/md5.block"], f["crypto/internal/fips140/sha256.blockSHANI"]
    assert re.fullmatch(r"rgb\(255,(\d+),\1\)", md5_leaf[0]) and md5_leaf[1]  # red, outlined: new
    assert re.fullmatch(r"rgb\((\d+),\1,255\)", sha_leaf[0]) and not sha_leaf[1]  # blue: a smaller share
    # the direction is written on the graph, with the runs' names
    assert "red: a larger share in with md5 than in sha256 only" in svg


def test_shares_are_normalised_by_each_profiles_total() -> None:
    d = frame_diffs(SHA, MD5)
    sha = d[("main.main.func1",)]
    assert (sha.base, sha.new) == (73, 60)
    assert sha.base_pct == pytest.approx(100.0) and sha.new_pct == pytest.approx(60 / 118 * 100)
    md5 = d[("main.main.func2",)]
    assert (md5.base, md5.new, md5.base_pct) == (0, 58, 0.0) and md5.significant


def test_a_profile_against_itself_or_a_longer_copy_of_itself_is_all_grey() -> None:
    longer = [(s, 3 * n) for s, n in MD5]  # the same shape sampled three times as long
    for other in (MD5, longer):
        f = fills(diff_svg(MD5, other, title="same"))
        assert {fill for fill, _ in f.values()} == {NEUTRAL}


def test_frames_at_zero_in_both_or_moving_by_noise_are_never_coloured() -> None:
    # perf's folded stacks: a stack present in one profile with 1 of 96 samples and absent in the
    # other is a 1-point move of 1 sample: within noise
    base = [
        (line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1]))
        for line in (FIXTURES / "folded" / "perf-6.1-python-awk.txt").read_text().splitlines()
    ]
    one = min(base, key=lambda x: x[1])
    assert one[1] == 1
    new = [x for x in base if x != one]
    d = frame_diffs(base, new)
    assert not any(x.significant for x in d.values())
    assert {fill for fill, _ in fills(diff_svg(base, new, title="t")).values()} == {NEUTRAL}


def test_frames_only_base_had_are_listed_as_gone() -> None:
    svg = diff_svg(MD5, SHA, title="cpu", base_name="with md5", new_name="sha256 only")
    assert "Gone in sha256 only: main.main.func2 (49.2%)." in svg  # the topmost gone frame, once
    f = fills(svg)
    assert "crypto/md5.block" not in f  # NEW's shape has no MD5
    assert re.fullmatch(r"rgb\(255,(\d+),\1\)", f["crypto/internal/fips140/sha256.blockSHANI"][0])


def test_hostile_frame_names_stay_escaped() -> None:
    svg = diff_svg([("a;<script>x</script>", 5)], [("a;<script>x</script>", 5), ("a;b&c", 50)], title="<t>")
    ET.fromstring(svg)  # well-formed
    assert "<script>" not in svg

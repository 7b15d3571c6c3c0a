"""Packaging: the stage folders install under the perfkit namespace, with their package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT


def test_generic_names_do_not_land_in_site_packages(tmp_path: Path) -> None:
    code = (
        "import importlib.util as u; "
        "print(u.find_spec('parsers'), u.find_spec('perfkit.parsers.vmstat').origin)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "None"
    assert Path(out[1]).as_posix().endswith("parsers/vmstat.py")


def test_wheel_contains_templates_and_thresholds(tmp_path: Path) -> None:
    pytest.importorskip("build")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("perfkit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "perfkit/reports/templates/report.html.j2" in names
    assert "perfkit/analyzers/thresholds.yaml" in names
    assert "perfkit/parsers/iostat.py" in names and "perfkit/collectors/__init__.py" in names
    assert not any(n.startswith(("parsers/", "reports/", "analyzers/", "collectors/")) for n in names)
    assert any(n.endswith("entry_points.txt") for n in names)

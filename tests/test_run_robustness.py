"""`perfkit run` robustness (issue 14): the output location checked before anything slow, a failed
prepare or cleanup reported in one line, secrets with awkward characters, Ctrl-C before the sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.archive import check_new_output
from perfkit.errors import PerfkitError


@pytest.mark.parametrize("name", ["run.tar.gz", "run.tgz"])
def test_an_existing_archive_file_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"an earlier run")
    with pytest.raises(PerfkitError, match=rf"{name}: exists; perfkit never overwrites"):
        check_new_output(tmp_path / name)
    check_new_output(tmp_path / ("new-" + name))  # a new name is fine


def test_a_non_empty_directory_is_refused_an_empty_or_missing_one_is_not(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "manifest.json").write_text("{}")
    with pytest.raises(PerfkitError, match="full: output directory exists and is not empty"):
        check_new_output(full)
    (tmp_path / "empty").mkdir()
    check_new_output(tmp_path / "empty")
    check_new_output(tmp_path / "missing" / "deeper")


def test_a_file_where_a_directory_goes_and_a_file_as_parent_are_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(PerfkitError, match="plain: exists and is not a directory"):
        check_new_output(tmp_path / "plain")
    with pytest.raises(PerfkitError, match="plain: not a directory"):
        check_new_output(tmp_path / "plain" / "run.tar.gz")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(PerfkitError, match="dangling: exists and is not a directory"):
        check_new_output(tmp_path / "dangling")

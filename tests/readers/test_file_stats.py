"""``file_stats``: every path's size, mtime, ctime and inode in one call, the same numbers
from the compiled reader as from :func:`os.stat`, a row of -1 where a path cannot be
stat'ed."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import vocmatch.readers.file_stats as file_stats_module
from vocmatch.readers.file_stats import MISSING, file_stat, file_stats
from vocmatch.readers.scan import PURE_READER_VARIABLE

READERS = [
    pytest.param("0", id="compiled"),
    pytest.param("1", id="pure"),
]


def _expected(path: str) -> list[int]:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return list(MISSING)
    return [found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino]


def _paths(tmp_path: Path) -> list[str]:
    (tmp_path / "a.xml").write_bytes(b"12345")
    (tmp_path / "empty.xml").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "\u00e9 b.xml").write_bytes(b"x" * 70_000)
    (tmp_path / "link.xml").symlink_to(tmp_path / "a.xml")
    (tmp_path / "dangling.xml").symlink_to(tmp_path / "gone")
    return [
        str(tmp_path / "a.xml"),
        str(tmp_path / "empty.xml"),
        str(tmp_path / "sub" / "\u00e9 b.xml"),
        str(tmp_path / "link.xml"),  # followed, as os.stat does
        str(tmp_path / "dangling.xml"),
        str(tmp_path / "missing.xml"),
        str(tmp_path / "a.xml" / "below-a-file.xml"),
        str(tmp_path / "sub"),  # a folder: stat'ed as os.stat does
        str(tmp_path / "nul\0.xml"),  # no system call takes it
        str(tmp_path) + "/\udcff.xml",  # a byte no encoding decodes, missing
        str(tmp_path / "a.xml"),  # twice
    ]


@pytest.mark.parametrize("pure", READERS)
def test_each_path_has_the_numbers_of_os_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: str
) -> None:
    monkeypatch.setenv(PURE_READER_VARIABLE, pure)
    paths = _paths(tmp_path)
    found = file_stats(paths)
    assert found.dtype == np.int64
    assert found.tolist() == [_expected(p) for p in paths]


@pytest.mark.parametrize("pure", READERS)
def test_no_path_gives_no_row(monkeypatch: pytest.MonkeyPatch, pure: str) -> None:
    monkeypatch.setenv(PURE_READER_VARIABLE, pure)
    assert file_stats([]).shape == (0, 4)


@pytest.mark.parametrize("jobs", [pytest.param(1, id="one-thread"), pytest.param(2, id="two")])
def test_a_set_larger_than_a_task_keeps_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A set shared out among threads comes back in the order of its paths."""
    monkeypatch.setattr(file_stats_module, "PATHS_PER_TASK", 3)
    paths = []
    for n in range(10):
        path = tmp_path / f"{n}.xml"
        path.write_bytes(b"x" * n)
        paths.append(str(path))
    paths.insert(4, str(tmp_path / "missing.xml"))
    found = file_stats(paths, jobs)
    assert found.tolist() == [_expected(p) for p in paths]


def test_one_path_has_its_row_of_the_set(tmp_path: Path) -> None:
    """``file_stat`` of one path is its row of ``file_stats``, None where that is -1."""
    paths = _paths(tmp_path)
    assert [list(file_stat(p) or MISSING) for p in paths] == file_stats(paths).tolist()

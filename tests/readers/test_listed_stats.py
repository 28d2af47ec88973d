"""``listed_with_stats``: a folder's listing as ``list_directory`` gives it, and each listed
file's stat as :func:`os.stat` gives it, whether the compiled pass stats the files as it
reads each folder or they are stat'ed by path afterwards (pure reader, files the pass
leaves to the walk's rule, a listing its pass did not give in its order)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vocmatch.errors import InputError
from vocmatch.readers import folders, listed_stats
from vocmatch.readers.file_stats import MISSING
from vocmatch.readers.listed_stats import listed_with_stats
from vocmatch.readers.parse import list_directory
from vocmatch.readers.scan import PURE_READER_VARIABLE

READERS = [pytest.param("0", id="compiled"), pytest.param("1", id="pure")]


def _file(folder: Path, name: str | bytes, size: int = 13) -> None:
    path = os.path.join(os.fsencode(folder), os.fsencode(name))
    with open(path, "wb") as out:
        out.write(b"x" * size)


def _flat(root: Path) -> None:
    for n in range(40):
        _file(root, f"img_{n:03}.xml", n)
    _file(root, "notes.txt")


def _nested(root: Path) -> None:
    """Keys of a subfolder sort among the top folder's ('a' < 'a/b' < 'a0')."""
    for name in ("a.xml", "a0.xml", "b.xml"):
        _file(root, name)
    (root / "a").mkdir()
    _file(root / "a", "b.xml", 3)
    (root / "z").mkdir()
    _file(root / "z", "y.xml", 4)


def _odd(root: Path) -> None:
    """Entries the compiled pass leaves to the walk's rule, and keys a listing drops."""
    _file(root, "a.xml", 1)
    _file(root, "a.XML", 2)  # same key: skipped by the listing
    _file(root, "B.xml", 3)
    _file(root, "b.xml", 4)  # differs only in case: skipped
    _file(root, "caf\u00e9.xml", 5)
    _file(root, b"bad\xff.xml", 6)
    _file(root, ".hidden.xml", 7)
    (root / "to-a.xml").symlink_to(root / "a.xml")
    (root / "dangling.xml").symlink_to(root / "gone")
    (root / "sub").mkdir()
    _file(root / "sub", "inner.xml", 8)
    (root / "to-sub").symlink_to(root / "sub")


TREES = [
    pytest.param(_flat, id="flat"),
    pytest.param(_nested, id="nested"),
    pytest.param(_odd, id="links-odd-names-clashing-keys"),
]


def _os_stat(path: str) -> list[int]:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return list(MISSING)
    return [found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino]


@pytest.mark.parametrize("pure", READERS)
@pytest.mark.parametrize("tree", TREES)
def test_each_listed_file_has_the_numbers_of_os_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: str, tree: Callable[[Path], None]
) -> None:
    monkeypatch.setenv(PURE_READER_VARIABLE, pure)
    tree(tmp_path)
    found = listed_with_stats(str(tmp_path))
    assert found.listing == list_directory(str(tmp_path))
    assert found.stats.shape == (len(found.listing.files), 4)
    assert found.stats.tolist() == [_os_stat(path) for _, path in found.listing.files]


def _refused(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("stat'ed by path")


@pytest.mark.skipif(
    getattr(folders._compiled, "list_folder_stats", None) is None,
    reason="the compiled reader has no folder listing here",
)
@pytest.mark.parametrize(
    "tree", [pytest.param(_flat, id="flat"), pytest.param(_nested, id="nested")]
)
def test_the_compiled_pass_stats_the_files_as_it_lists_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tree: Callable[[Path], None]
) -> None:
    """Folders of plain files: no path is stat'ed after the listing."""
    monkeypatch.delenv(PURE_READER_VARIABLE, raising=False)
    tree(tmp_path)
    monkeypatch.setattr(listed_stats, "file_stats", _refused)
    found = listed_with_stats(str(tmp_path))
    assert found.stats.tolist() == [_os_stat(path) for _, path in found.listing.files]


@pytest.mark.parametrize("pure", READERS)
def test_a_missing_folder_is_refused_as_the_listing_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: str
) -> None:
    monkeypatch.setenv(PURE_READER_VARIABLE, pure)
    with pytest.raises(InputError) as raised:
        listed_with_stats(str(tmp_path / "gone"))
    assert str(raised.value) == f"{tmp_path / 'gone'}: not a directory"

"""A folder of the directory walk lists the same files and folders whether the compiled
reader lists it (``fastxml.list_folder``) or :func:`os.scandir` does, for every kind of
entry and name; and the walk of a whole tree is the same both ways."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vocmatch.readers import folders
from vocmatch.readers.folders import PURE_READER_VARIABLE, FolderEntries, folder_entries
from vocmatch.readers.parse import list_directory, walk_directory

pytestmark = pytest.mark.skipif(
    getattr(folders._compiled, "list_folder", None) is None,
    reason="the compiled reader has no folder listing here",
)


@pytest.fixture(autouse=True)
def compiled_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled listing, whatever the environment the tests run in."""
    monkeypatch.delenv(PURE_READER_VARIABLE, raising=False)


def _file(folder: Path, name: str | bytes) -> None:
    path = os.path.join(os.fsencode(folder), os.fsencode(name))
    with open(path, "wb") as out:
        out.write(b"<annotation/>")


def _fifo(folder: Path, name: str) -> None:
    os.mkfifo(folder / name)


def _dir(folder: Path, name: str) -> None:
    (folder / name).mkdir()
    _file(folder / name, "inner.xml")


def _link(target: str) -> Callable[[Path, str], None]:
    def make(folder: Path, name: str) -> None:
        (folder / name).symlink_to(target)

    return make


#: Entries of every kind the walk tells apart, each with a name the compiled listing reads
#: itself or leaves to the rule.
ENTRIES = [
    pytest.param(_file, "a.xml", id="plain"),
    pytest.param(_file, "B.XML", id="upper-suffix"),
    pytest.param(_file, "c.Xml", id="mixed-suffix"),
    pytest.param(_file, "a.XML", id="same-key-other-case-suffix"),
    pytest.param(_file, "notes.txt", id="other-suffix"),
    pytest.param(_file, "xml", id="suffix-without-dot"),
    pytest.param(_file, "a.xml.bak", id="suffix-inside"),
    pytest.param(_file, "a.b.xml", id="two-dots"),
    pytest.param(_file, ".xml", id="only-suffix"),
    pytest.param(_file, "..xml", id="two-leading-dots"),
    pytest.param(_file, ".hidden.xml", id="leading-dot"),
    pytest.param(_file, "caf\u00e9.xml", id="non-ascii"),
    pytest.param(_file, "\u0130.XML", id="dotted-capital-i"),
    pytest.param(_file, "K\u212a.xml", id="kelvin-sign"),
    pytest.param(_file, b"bad\xff.xml", id="not-utf-8"),
    pytest.param(_file, "sp ace.xml", id="space"),
    pytest.param(_fifo, "pipe.xml", id="named-pipe"),
    pytest.param(_dir, "sub", id="folder"),
    pytest.param(_dir, "d.xml", id="folder-named-like-a-file"),
    pytest.param(_dir, "\u00e9t\u00e9", id="non-ascii-folder"),
    pytest.param(_link("a.xml"), "to-file.xml", id="link-to-file"),
    pytest.param(_link("sub"), "to-folder", id="link-to-folder"),
    pytest.param(_link("sub"), "to-folder.xml", id="link-to-folder-named-like-a-file"),
    pytest.param(_link("gone"), "dangling.xml", id="dangling-link"),
    pytest.param(_link("."), "loop", id="link-to-itself"),
]


def _sorted(entries: FolderEntries) -> tuple[list[tuple[str, str]], ...]:
    return sorted(entries.files), sorted(entries.real_dirs), sorted(entries.linked_dirs)


def _both(monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any]) -> tuple[Any, Any]:
    """``call()`` with the compiled listing, then with os.scandir."""
    compiled = call()
    with monkeypatch.context() as pure:
        pure.setenv(PURE_READER_VARIABLE, "1")
        scanned = call()
    return compiled, scanned


@pytest.mark.parametrize(
    "trailing", [pytest.param("", id="folder"), pytest.param("/", id="folder/")]
)
@pytest.mark.parametrize(
    "prefix", [pytest.param("", id="top"), pytest.param("s\u00fcb/", id="below")]
)
@pytest.mark.parametrize(("make", "name"), ENTRIES)
def test_an_entry_lists_as_os_scandir_lists_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[Path, str], None],
    name: str,
    prefix: str,
    trailing: str,
) -> None:
    """Each kind of entry, beside plain files, gives the same files (keys and paths) and
    folders both ways."""
    _file(tmp_path, "a.xml")
    _dir(tmp_path, "sub")
    if not os.path.lexists(os.path.join(os.fsencode(tmp_path), os.fsencode(name))):
        make(tmp_path, name)
    folder = str(tmp_path) + trailing
    compiled, scanned = _both(monkeypatch, lambda: _sorted(folder_entries(folder, prefix, ".xml")))
    assert compiled == scanned
    assert (prefix + "a", os.path.join(folder, "a.xml")) in compiled[0]


def test_plain_files_come_sorted_by_key_then_path(tmp_path: Path) -> None:
    """The compiled listing gives a folder's plain files in the walk's order already."""
    for name in ["b.xml", "a.XML", "a.xml", "a-.xml", "a0.xml", "A.xml", "ab.xml", "a.Xml"]:
        _file(tmp_path, name)
    found = folder_entries(str(tmp_path), "", ".xml").files
    assert found == sorted(found)
    assert [key for key, _ in found] == ["A", "a", "a", "a", "a-", "a0", "ab", "b"]


def test_a_type_the_folder_does_not_give_is_found_by_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry of unknown type (some file systems give none) is a folder, a link to one
    or a file as a stat finds it, as os.scandir finds it."""
    for make, name in [(_dir, "sub"), (_link("sub"), "to-folder"), (_file, "x.xml"),
                       (_link("gone"), "dangling.xml"), (_fifo, "pipe.xml")]:  # fmt: skip
        make(tmp_path, name)
    list_folder = folders._compiled.list_folder

    def unknown(*args: Any) -> Any:
        files, others = list_folder(*args)
        return files, [(name, 3) for name, _ in others]

    monkeypatch.setattr(folders._compiled, "list_folder", unknown)
    compiled, scanned = _both(
        monkeypatch, lambda: _sorted(folder_entries(str(tmp_path), "", ".xml"))
    )
    assert compiled == scanned
    assert compiled[1:] == ([(str(tmp_path / "sub"), "sub/")],
                            [(str(tmp_path / "to-folder"), "to-folder/")])  # fmt: skip


def test_an_unreadable_folder_is_left_to_os_scandir(tmp_path: Path) -> None:
    """A folder the compiled listing cannot read raises os.scandir's error, with the
    system's reason."""
    with pytest.raises(FileNotFoundError):
        folder_entries(str(tmp_path / "gone"), "", ".xml")


def test_the_compiled_listing_takes_no_scandir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the compiled reader is built, a folder is listed without os.scandir; with
    VOCMATCH_PURE_READER=1, by it."""
    _file(tmp_path, "a.xml")
    calls: list[str] = []
    scandir = os.scandir

    def counted(path: Any) -> Any:
        calls.append(path)
        return scandir(path)

    monkeypatch.setattr(folders.os, "scandir", counted)
    _both(monkeypatch, lambda: folder_entries(str(tmp_path), "", ".xml"))
    assert calls == [str(tmp_path)]


def _tree(root: Path) -> None:
    """Folders, links into and around them, and files of every kind of name."""
    for make, name in [entry.values for entry in ENTRIES]:
        if not os.path.lexists(os.path.join(os.fsencode(root), os.fsencode(name))):
            make(root, name)
    deep = root / "sub" / "Deep"
    deep.mkdir()
    for name in ["z.xml", "Z.xml", "inner.xml", "\u00e9.xml"]:
        _file(deep, name)
    (deep / "up").symlink_to(root)
    (root / "SUB").mkdir()
    _file(root / "SUB", "inner.xml")


@pytest.mark.parametrize(
    "listing", [pytest.param(list_directory, id="list"), pytest.param(walk_directory, id="walk")]
)
def test_a_tree_lists_the_same_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listing: Callable[[str], Any]
) -> None:
    """The walk of a tree with loops, links, clashing keys and names of every kind gives
    the same files, skipped files and notes both ways."""
    _tree(tmp_path)
    compiled, scanned = _both(monkeypatch, lambda: listing(str(tmp_path)))
    assert compiled == scanned
    assert len(compiled.files) > 10

"""One folder of the directory walk (:func:`vocmatch.readers.parse.list_directory`): its
files with the suffix as ``(key, path)`` pairs, and its folders to walk next.

Where the package was built with a C compiler, the compiled reader lists the folder
(``fastxml.list_folder``: the folder read and its files sorted with the GIL released, the
pairs made with no Python step for each): it classifies each regular file whose name is
ASCII and does not start with ``.`` from the folder alone, and leaves every other entry (a
folder, a link, another kind of file, a type the system does not give, any other name)
to the rule below, applied here as for an entry of :func:`os.scandir`. Without it, or with
``VOCMATCH_PURE_READER=1``, :func:`os.scandir` lists the folder and that rule takes every
entry. Both give the same pairs and folders (the tests compare them on trees of every kind
of entry and name).

The rule: an entry that is a folder (following a link) is walked next, as a real folder
or as a link; any other whose name ends in the suffix in any case is a file, its key the
prefix and its name without the suffix (:func:`os.path.splitext`'s stem for a name with
leading dots), its path the folder's joined with its name (as :func:`os.scandir` joins
them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

__all__ = [
    "PURE_READER_VARIABLE",
    "FolderEntries",
    "TakenStats",
    "compiled_reader_wanted",
    "folder_entries",
]

#: Set to 1 to read with the pure-Python fast reader even where the compiled one is built
#: (the compiled listing, stats and chunk reads are then not used either).
PURE_READER_VARIABLE = "VOCMATCH_PURE_READER"

#: The kinds ``fastxml.list_folder`` gives the entries it leaves (as in fastxml.c).
_OTHER, _DIRECTORY, _LINK, _UNKNOWN = 0, 1, 2, 3


def compiled_reader_wanted() -> bool:
    """False where ``VOCMATCH_PURE_READER`` asks for the pure-Python reader."""
    return os.environ.get(PURE_READER_VARIABLE, "") in ("", "0")


@dataclass(slots=True)
class FolderEntries:
    """What one folder holds for the walk.

    Attributes:
        files: ``(key, path)`` of each file with the suffix, in no particular order.
        real_dirs: ``(path, key prefix)`` of each folder in it that is not a link.
        linked_dirs: ``(path, key prefix)`` of each link in it to a folder.
    """

    files: list[tuple[str, str]] = field(default_factory=list)
    real_dirs: list[tuple[str, str]] = field(default_factory=list)
    linked_dirs: list[tuple[str, str]] = field(default_factory=list)

    def add(
        self, name: str, path: str, is_dir: bool, is_link: bool, prefix: str, suffix: str
    ) -> None:
        """Add an entry by the walk's rule (the module's docstring)."""
        if is_dir:
            target = self.linked_dirs if is_link else self.real_dirs
            target.append((path, f"{prefix}{name}/"))
        elif name.lower().endswith(suffix):
            dot = name.rfind(".")
            # os.path.splitext's stem, its slower rule only for a name with leading dots.
            stem = name[:dot] if name[0] != "." else os.path.splitext(name)[0]
            self.files.append((prefix + stem, path))


@dataclass(slots=True)
class TakenStats:
    """The stats of the files of the folders the compiled pass listed, taken as it read
    each folder (``fastxml.list_folder_stats``: each file's ``size, mtime_ns, ctime_ns,
    inode`` as :func:`vocmatch.readers.file_stats.file_stats` gives them).

    Attributes:
        folders: Per folder so listed, in the order listed, the files it classified (its
            first files, sorted) and their stats, ``(F, 4)`` int64 bytes in that order.
    """

    folders: list[tuple[tuple[tuple[str, str], ...], bytes]] = field(default_factory=list)


def folder_entries(
    directory: str, prefix: str, suffix: str, stats: TakenStats | None = None
) -> FolderEntries:
    """The entries of one folder for the walk.

    Args:
        directory: The folder.
        prefix: The key prefix of its files (``""`` or ``"sub/"``).
        suffix: The lower-case suffix of the files to list.
        stats: Where the compiled pass adds the stats of the files it classifies, when
            given (the files it leaves to the rule have none there).

    Returns:
        Its files with the suffix and its folders.

    Raises:
        OSError: The folder cannot be listed (as :func:`os.scandir` raises it).
    """
    joined = directory if directory.endswith("/") else directory + "/"
    if _compiled is not None and compiled_reader_wanted() and os.sep == "/":
        found = None
        list_folder_stats = getattr(_compiled, "list_folder_stats", None)
        if stats is not None and list_folder_stats is not None:
            listed = list_folder_stats(directory, joined, prefix, suffix)
            if listed is not None:
                stats.folders.append((tuple(listed[0]), listed[2]))
                found = listed[0], listed[1]
        list_folder = getattr(_compiled, "list_folder", None)
        if found is None and list_folder is not None:
            found = list_folder(directory, joined, prefix, suffix)
        if found is not None:
            files, others = found
            entries = FolderEntries(files)
            for name, kind in others:
                _add_left(entries, name, joined + name, kind, prefix, suffix)
            return entries
    return _scanned_entries(directory, prefix, suffix)


def _add_left(
    entries: FolderEntries, name: str, path: str, kind: int, prefix: str, suffix: str
) -> None:
    """Add an entry the compiled listing left, deciding what it is as
    :class:`os.DirEntry` does from the type the folder gives (a stat where it gives none,
    or for a link)."""
    is_dir = kind == _DIRECTORY
    if kind in (_LINK, _UNKNOWN):
        is_dir = os.path.isdir(path)  # the stat DirEntry.is_dir makes: False on any error
    is_link = kind == _LINK or (kind == _UNKNOWN and is_dir and os.path.islink(path))
    entries.add(name, path, is_dir, is_link, prefix, suffix)


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _scanned_entries(directory: str, prefix: str, suffix: str) -> FolderEntries:
    """:func:`folder_entries` by :func:`os.scandir`."""
    with os.scandir(directory) as listing:
        found = list(listing)
    entries = FolderEntries()
    for entry in found:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        entries.add(entry.name, entry.path, is_dir, is_dir and _is_link(entry), prefix, suffix)
    return entries

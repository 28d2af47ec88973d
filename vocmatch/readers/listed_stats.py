"""A folder's annotation files listed with their stats, in one pass over each folder.

A run that keeps a cache compares every listed file's stat with the one it had when it was
read. :func:`listed_with_stats` lists a folder as :func:`vocmatch.readers.parse.list_directory`
does and gives each listed file's ``size, mtime_ns, ctime_ns, inode`` as
:func:`vocmatch.readers.file_stats.file_stats` does: where the compiled reader lists a
folder, it stats the folder's files from the folder itself as it reads it, with the GIL
released (``fastxml.list_folder_stats``), so the paths are not looked up a second time and
two folders are listed and stat'ed on two threads at once. A file that pass did not stat (a
link, a name it leaves to the walk's rule, a file of a folder listed by :func:`os.scandir`,
or everything with ``VOCMATCH_PURE_READER=1``) is stat'ed by its path afterwards. The
numbers are the same either way (the tests compare them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.readers.file_stats import file_stats
from vocmatch.readers.folders import TakenStats
from vocmatch.readers.parse import DirectoryListing, list_directory

__all__ = ["ListedStats", "listed_with_stats"]


@dataclass(frozen=True, slots=True)
class ListedStats:
    """A folder's listing and its files' stats.

    Attributes:
        listing: The listing, as :func:`~vocmatch.readers.parse.list_directory` gives it.
        stats: ``(N, 4)`` int64 ``size, mtime_ns, ctime_ns, inode`` of each of its files, in
            the order of ``listing.files`` (a row of -1 where one cannot be stat'ed).
    """

    listing: DirectoryListing
    stats: npt.NDArray[np.int64]


def listed_with_stats(
    root: str | os.PathLike[str], suffix: str = ".xml", jobs: int = 1
) -> ListedStats:
    """The annotation files below ``root`` and their stats (see the module doc).

    Args:
        root: The folder, listed recursively.
        suffix: The lower-case suffix of the files listed.
        jobs: Threads for the stats taken by path (0: every core).

    Raises:
        InputError: ``root`` is not a folder.
    """
    taken = TakenStats()
    listing = list_directory(root, suffix, taken)
    return ListedStats(listing, _stats_of(listing.files, taken, jobs))


def _stats_of(
    files: tuple[tuple[str, str], ...], taken: TakenStats, jobs: int
) -> npt.NDArray[np.int64]:
    """The stats of ``files`` in their order: those ``taken`` while listing, the others
    (or all, when none was taken) by path."""
    if not taken.folders:
        return file_stats([path for _, path in files], jobs)
    every = np.frombuffer(b"".join(s for _, s in taken.folders), dtype=np.int64).reshape(-1, 4)
    if len(taken.folders) == 1 and taken.folders[0][0] == files:
        return every  # one folder, every file classified by the pass: its order is the listing's
    if files == tuple(f for listed, _ in taken.folders for f in listed):
        return every
    rows = {
        path: row for row, (_, path) in enumerate(f for listed, _ in taken.folders for f in listed)
    }
    at = np.array([rows.get(path, -1) for _, path in files], dtype=np.int64)
    found = every[np.maximum(at, 0)] if len(every) else np.zeros((len(files), 4), np.int64)
    left = np.flatnonzero(at < 0)
    if left.size:
        found[left] = file_stats([files[i][1] for i in left.tolist()], jobs)
    return found

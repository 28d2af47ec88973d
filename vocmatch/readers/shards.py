"""Shards of a run chosen from the file names alone, so that a shard reads only its own files.

The ``k``-th of ``n`` shards holds the images whose place among the listed ground-truth keys
(sorted, restricted to the split when there is one) is ``k - 1`` modulo ``n``. Every listed
key has its place, whether its files can be read or not: which image a shard holds never
depends on the content of another shard's files, and a file that cannot be read is reported
by the one shard that holds its image.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Iterable

from vocmatch.errors import InputError
from vocmatch.readers.parse import DirectoryListing
from vocmatch.readers.scan import ColumnSet

__all__ = ["column_keys", "listed_keys", "shard_keys", "shard_listing"]


def shard_keys(keys: Iterable[str], shard: tuple[int, int]) -> frozenset[str]:
    """The keys of the ``shard[0]``-th of ``shard[1]`` shards (1-based): those at place
    ``k - 1`` modulo ``n`` among the distinct keys, sorted.

    >>> sorted(shard_keys(["c", "a", "b", "d", "a"], (2, 3)))
    ['b']
    >>> sorted(shard_keys(["c", "a", "b", "d"], (1, 3)))
    ['a', 'd']

    Raises:
        InputError: The shard does not exist (``k`` outside 1..n).
    """
    k, n = shard
    if not 1 <= k <= n:
        raise InputError(f"shard {k}/{n} does not exist")
    return frozenset(sorted(set(keys))[k - 1 :: n])


def listed_keys(listing: DirectoryListing) -> list[str]:
    """Every image key a listing names: its files' and those of files left out with a key
    (a key that differs only in case from another), sorted."""
    return sorted({key for key, _ in listing.files} | {s.key for s in listing.skipped if s.key})


def column_keys(gt: ColumnSet) -> list[str]:
    """Every image key of ground-truth columns, read or skipped with a key: the keys their
    listing named (:func:`listed_keys`), to choose a shard from columns already read."""
    return sorted(set(gt.keys) | {s.key for s in gt.skipped if s.key})


def shard_listing(listing: DirectoryListing, keys: Container[str]) -> DirectoryListing:
    """The listing restricted to the images of ``keys``: their files, and the files left out
    that belong to them or to no image (a duplicate file, a folder that could not be listed).
    """
    return dataclasses.replace(
        listing,
        files=tuple((key, path) for key, path in listing.files if key in keys),
        skipped=tuple(s for s in listing.skipped if s.key is None or s.key in keys),
    )

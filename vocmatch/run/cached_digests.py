"""The digests of a run with a cache: a file's, and those it knows already of the files of
the chunks it reads again.

A chunk is read and matched again whole when one of its files changed; its other files'
stats are those of the cache's index, which holds their digests: the reader takes them from
there instead of hashing those files' bytes again, when the stat it takes before reading a
file is still that one (:class:`~vocmatch.readers.hashed_reads.HashingReader`). The chunk's
key is the same either way: the digest of the same bytes, trusted by the same stat as a chunk
taken from the cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["file_digest", "known_digests"]

_READ_SIZE = 1 << 20


def file_digest(path: str) -> bytes | None:
    """The file's BLAKE2b digest; None when it cannot be read (its reader says why): for a
    file whose stat changed, to tell whether its content did."""
    hasher = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as stream:
            while block := stream.read(_READ_SIZE):
                hasher.update(block)
    except OSError:
        return None
    return hasher.digest()


def known_digests(
    paths: Sequence[str],
    spans: Sequence[tuple[int, int]],
    same: npt.NDArray[np.bool_],
    stats: npt.NDArray[np.int64],
    digests: npt.NDArray[np.uint8],
) -> dict[str, tuple[bytes, bytes]]:
    """Per path of the files in ``spans`` (rows ``start`` to ``end`` of ``paths``) whose
    stat is the cache index's (``same``), its stat's bytes and its digest.

    >>> stats = np.arange(12, dtype=np.int64).reshape(3, 4)
    >>> digests = np.full((3, 2), 7, dtype=np.uint8)
    >>> same = np.array([True, False, True])
    >>> found = known_digests(["a", "b", "c"], [(1, 3)], same, stats, digests)
    >>> sorted(found), found["c"] == (stats[2].tobytes(), bytes([7, 7]))
    (['c'], True)
    """
    known: dict[str, tuple[bytes, bytes]] = {}
    for start, end in spans:
        for row in (start + np.flatnonzero(same[start:end])).tolist():
            known[paths[row]] = (stats[row].tobytes(), digests[row].tobytes())
    return known

"""A reader that keeps, for each file it reads, its stat and the digest of the bytes read.

A run that keeps a cache keys each file's records by the BLAKE2b digest of the very bytes
they were read from, and keeps the file's stat to tell next time whether to hash it again.
:class:`HashingReader` is such a reader for
:func:`vocmatch.readers.scan.read_listed_columns`: it reads local paths as
:func:`~vocmatch.readers.regular_files.read_bytes` does, so a chunk of them is read in one call of
the compiled reader (``fastxml.read_chunk_kept``), which gives back, for each file it read,
the stat of the file it opened (``fstat`` of the descriptor it read, taken before reading)
and the bytes it scanned, hashed here; a file it leaves to the per-file route (and every
file where the compiled reader is not built or ``VOCMATCH_PURE_READER=1`` is set) is read
by :meth:`HashingReader.__call__`, which stats it before reading it and hashes the bytes it
hands the scanner. Either way the digest is of the bytes the records come from, never of a
second read: a file edited after it was read keeps the digest of what was matched, and a
stat taken before the edit, so the next run hashes it again.

A reader given digests ``known`` already (a run's cache holds them) takes a file's from them,
without hashing its bytes, when the stat taken before reading it is the one they go with:
the trust a run puts in a file whose stat its cache's index holds.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.readers.regular_files import read_bytes

__all__ = ["DIGEST_SIZE", "HashingReader", "KeptFiles", "KnownDigests"]

#: Bytes of a file's BLAKE2b digest.
DIGEST_SIZE = 16


#: Per path, a file's stat (its four int64 fields' bytes, as :class:`KeptFiles` keeps them)
#: and the digest of its bytes under that stat.
KnownDigests = Mapping[str, tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class KeptFiles:
    """The stats and digests of some files read, in the order asked for.

    Attributes:
        stats: ``(F, 4)`` int64 ``size, mtime_ns, ctime_ns, inode`` of each file, as
            :func:`~vocmatch.readers.file_stats.file_stats` gives them.
        digests: ``(F, DIGEST_SIZE)`` uint8 BLAKE2b digest of the bytes each was read from.
    """

    stats: npt.NDArray[np.int64]
    digests: npt.NDArray[np.uint8]


class HashingReader:
    """``read(path, max_bytes)`` by :func:`~vocmatch.readers.regular_files.read_bytes`,
    keeping the stat and digest of each file read whole (:meth:`kept`); a file's digest is
    taken from ``known`` when its stat before reading is the one given with it (see the
    module doc).

    >>> import tempfile
    >>> reader = HashingReader()
    >>> with tempfile.NamedTemporaryFile(suffix=".xml") as f:
    ...     _ = f.write(b"<annotation/>"); f.flush()
    ...     data = reader(f.name, 100)
    ...     found = reader.kept([f.name])
    >>> data, found.stats.shape, int(found.stats[0, 0])
    (b'<annotation/>', (1, 4), 13)
    >>> found.digests.tobytes() == hashlib.blake2b(data, digest_size=16).digest()
    True
    >>> reader.kept([f.name, f.name + "-gone"]) is None
    True
    """

    def __init__(self, known: KnownDigests | None = None) -> None:
        # Each file's row in the stats and digests (a path read again: its last reading).
        self._rows: dict[str, int] = {}
        self._stats = array("q")
        self._digests: list[bytes] = []
        self._known: KnownDigests = known or {}

    def __call__(self, path: str, max_bytes: int) -> bytes:
        from vocmatch.readers.file_stats import file_stat

        # Stat'ed before it is read: an edit after this has another stat next time.
        stat = file_stat(path)
        data = read_bytes(path, max_bytes)
        if stat is not None:
            self._rows[path] = len(self._digests)
            first = len(self._stats)
            self._stats.extend(stat)
            held = self._known.get(path)
            if held is not None and held[0] == self._stats[first:].tobytes():
                self._digests.append(held[1])
            else:
                self._digests.append(hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest())
        return data

    def keep_read(self, paths: Sequence[str], stats: bytes, data: bytes, ends: bytes) -> None:
        """Keep the files the compiled reader read: ``paths`` in the order read, ``stats``
        their ``(F, 4)`` int64 rows, ``data`` their bytes one after the other and ``ends``
        where each one's end, ``(F,)`` int64."""
        bounds = memoryview(ends).cast("q").tolist()
        if len(stats) != 4 * 8 * len(paths) or len(bounds) != len(paths):
            raise ValueError(f"{len(paths)} files, {len(stats)} stat bytes, {len(bounds)} ends")
        view = memoryview(data)
        blake2b = hashlib.blake2b
        first = len(self._digests)
        if self._known:
            self._digests.extend(self._known_or_hashed(paths, bytes(stats), view, bounds))
        else:
            self._digests.extend(
                blake2b(view[start:end], digest_size=DIGEST_SIZE).digest()
                for start, end in zip([0, *bounds], bounds, strict=False)
            )
        self._stats.frombytes(stats)
        self._rows.update(zip(paths, range(first, first + len(paths)), strict=True))

    def _known_or_hashed(
        self, paths: Sequence[str], stats: bytes, view: memoryview, bounds: Sequence[int]
    ) -> list[bytes]:
        """Each file's digest: the one known with its stat, else of its bytes read."""
        known, blake2b = self._known, hashlib.blake2b
        digests = []
        for n, (path, start, end) in enumerate(zip(paths, [0, *bounds], bounds, strict=False)):
            held = known.get(path)
            if held is not None and held[0] == stats[32 * n : 32 * n + 32]:
                digests.append(held[1])
            else:
                digests.append(blake2b(view[start:end], digest_size=DIGEST_SIZE).digest())
        return digests

    def kept(self, paths: Sequence[str]) -> KeptFiles | None:
        """The stats and digests of ``paths`` in their order; None when one of them was not
        read whole (it could not be opened, stat'ed or read, or was too large)."""
        rows = self._rows
        if not all(map(rows.__contains__, paths)):
            return None
        order = np.fromiter(map(rows.__getitem__, paths), dtype=np.intp, count=len(paths))
        stats = np.frombuffer(self._stats, dtype=np.int64).reshape(-1, 4)
        digests = np.frombuffer(b"".join(self._digests), dtype=np.uint8)
        return KeptFiles(stats[order], digests.reshape(-1, DIGEST_SIZE)[order])

"""A reader that keeps, for each file it reads, its stat and the digest of the bytes read.

A run that keeps a cache keys each file's records by the BLAKE2b digest of the very bytes
they were read from, and keeps the file's stat to tell next time whether to hash it again.
:class:`HashingReader` is such a reader for
:func:`vocmatch.readers.scan.read_listed_columns`: it reads local paths as
:func:`~vocmatch.readers.parse.read_bytes` does, so a chunk of them is read in one call of
the compiled reader (``fastxml.read_chunk_kept``), which gives back, for each file it read,
the stat of the file it opened (``fstat`` of the descriptor it read, taken before reading)
and the bytes it scanned, hashed here; a file it leaves to the per-file route (and every
file where the compiled reader is not built or ``VOCMATCH_PURE_READER=1`` is set) is read
by :meth:`HashingReader.__call__`, which stats it before reading it and hashes the bytes it
hands the scanner. Either way the digest is of the bytes the records come from, never of a
second read: a file edited after it was read keeps the digest of what was matched, and a
stat taken before the edit, so the next run hashes it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from vocmatch.readers.parse import read_bytes

__all__ = ["DIGEST_SIZE", "FileStat", "HashingReader"]

#: Bytes of a file's BLAKE2b digest.
DIGEST_SIZE = 16
#: A file's ``size, mtime_ns, ctime_ns, inode``, as
#: :func:`~vocmatch.readers.file_stats.file_stats` gives each row.
FileStat = tuple[int, int, int, int]


class HashingReader:
    """``read(path, max_bytes)`` by :func:`~vocmatch.readers.parse.read_bytes`, keeping in
    :attr:`found`, by path, the stat and digest of each file read whole (a file that could
    not be read is not in it).

    >>> import tempfile
    >>> reader = HashingReader()
    >>> with tempfile.NamedTemporaryFile(suffix=".xml") as f:
    ...     _ = f.write(b"<annotation/>"); f.flush()
    ...     data = reader(f.name, 100)
    ...     stat, digest = reader.found[f.name]
    >>> data, stat[0], digest == hashlib.blake2b(data, digest_size=16).digest()
    (b'<annotation/>', 13, True)
    """

    def __init__(self) -> None:
        self.found: dict[str, tuple[FileStat, bytes]] = {}

    def __call__(self, path: str, max_bytes: int) -> bytes:
        from vocmatch.readers.file_stats import file_stat

        # Stat'ed before it is read: an edit after this has another stat next time.
        stat = file_stat(path)
        data = read_bytes(path, max_bytes)
        if stat is not None:
            self.found[path] = (stat, hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest())
        return data

    def keep_read(self, paths: Sequence[str], stats: bytes, data: bytes, ends: bytes) -> None:
        """Keep the files the compiled reader read: ``paths`` in the order read, ``stats``
        their ``(F, 4)`` int64 rows, ``data`` their bytes one after the other and ``ends``
        where each one's end, ``(F,)`` int64."""
        fields = iter(memoryview(stats).cast("q").tolist())
        rows = zip(fields, fields, fields, fields, strict=True)
        view = memoryview(data)
        blake2b = hashlib.blake2b
        found = self.found
        start = 0
        for path, stat, end in zip(paths, rows, memoryview(ends).cast("q"), strict=True):
            found[path] = (stat, blake2b(view[start:end], digest_size=DIGEST_SIZE).digest())
            start = end

"""The start of a read of listed folders: its chunks, and the compiled reader's reads of
them handed to threads at once; and a run's two folders read so before the run asks.

:func:`vocmatch.readers.scan.read_listings` reads in two steps: :func:`start_read` cuts the
listings into chunks and, where the compiled reader reads chunks on threads, hands each
chunk's read (``fastxml.read_chunk``, which holds the GIL only to make its Python objects)
to the threads; :func:`vocmatch.readers.scan.finish_read` then takes each chunk's result in
chunk order and makes its columns (numpy) in the calling thread. This module imports no
numpy, so the command line can list the two folders of a run and start reading them
(:func:`early_read`) as soon as it has parsed its arguments, and import what evaluates
them while the threads read. The run reads its folders by the same two steps: where it
reads the folders the early read listed, with the same limits, it takes that read
(:func:`claimed`) in place of starting one; otherwise the early read is stopped and the run
reads as it would have. The columns are the same either way, bit for bit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from vocmatch.readers.folders import compiled_reader_wanted
from vocmatch.readers.parse import MAX_COORDINATE, DirectoryListing, list_directory
from vocmatch.readers.threads import StartedTasks
from vocmatch.readers.workers import worker_count

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

__all__ = [
    "PARSER_TEXT_LIMIT",
    "StartedRead",
    "chunk_limit",
    "claimed",
    "early_read",
    "raw_chunk",
    "start_read",
]

#: libxml2's longest text node (XML_MAX_TEXT_LENGTH) when huge trees are off, as the parser
#: reads (vocmatch.readers.parse): a longer one is refused there. A file no longer than this
#: cannot hold such a node, so the fast readers may read it; a longer file goes to the parser,
#: which refuses it exactly when it holds one.
PARSER_TEXT_LIMIT = 10_000_000

#: A chunk's files, as ``(key, path)`` pairs.
Files = Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class StartedRead:
    """A read of listings, started.

    Attributes:
        listings: The listings read, one column set each.
        jobs: The workers asked for.
        max_bytes: The per-file size limit.
        text_limit: The longest file the fast readers read (:data:`PARSER_TEXT_LIMIT`).
        parts: ``(listing index, files)`` of each chunk, in listing then file order.
        workers: The workers the chunks are read with (one for few files).
        raw: The compiled reader's reads of the chunks (:func:`raw_chunk`), handed to
            threads; None where chunks are read otherwise (by worker processes, or by the
            pure-Python reader), which happens when the read is finished.
    """

    listings: tuple[DirectoryListing, ...]
    jobs: int
    max_bytes: int
    text_limit: int
    parts: tuple[tuple[int, Files], ...]
    workers: int
    raw: StartedTasks[tuple[Any, ...]] | None

    def total(self) -> int:
        """The files to read, over every listing."""
        return sum(len(listing.files) for listing in self.listings)

    def close(self) -> None:
        """Stop the threads: the chunks not started are dropped, the running ones end."""
        if self.raw is not None:
            self.raw.close()


def chunk_limit(max_bytes: int) -> int:
    """The size limit as the compiled chunk reader takes it: no file is larger than
    ``sys.maxsize`` bytes, so a larger limit is no limit, as it is for
    :func:`~vocmatch.readers.regular_files.read_bytes`; and every file is larger than -1, so
    any lower limit refuses every file as -1 does (the per-file route then says so with the
    limit given)."""
    return max(-1, min(max_bytes, sys.maxsize))


def raw_chunk(files: Files, max_bytes: int, text_limit: int) -> tuple[Any, ...]:
    """The compiled reader's read of a chunk's files (``fastxml.read_chunk``): its columns
    as bytes, the files it left to the per-file route last."""
    assert _compiled is not None
    read: tuple[Any, ...] = _compiled.read_chunk(
        files, chunk_limit(max_bytes), MAX_COORDINATE, text_limit
    )
    return read


def start_read(
    listings: Sequence[DirectoryListing],
    jobs: int,
    max_bytes: int,
    *,
    threads: bool,
    text_limit: int = PARSER_TEXT_LIMIT,
) -> StartedRead:
    """Cut the listings into chunks and, with ``threads``, hand the compiled reader's read
    of each chunk to threads of this process (with one worker, nothing is started: the
    chunks are read as they are taken).

    Args:
        listings: The files to read, one listing per column set.
        jobs: Workers (checked: :func:`~vocmatch.checks.checked_jobs`).
        max_bytes: Per-file size limit (checked).
        threads: The compiled reader reads the chunks, on threads.
        text_limit: The longest file the fast readers read.

    Returns:
        The read, for :func:`vocmatch.readers.scan.finish_read`.
    """
    total = sum(len(listing.files) for listing in listings)
    # Chunks small enough to report progress and balance the workers, large enough that
    # sending them costs little.
    size = max(16, min(512, total // (worker_count(jobs, total) * 8) or 16))
    parts = tuple(
        (which, listing.files[i : i + size])
        for which, listing in enumerate(listings)
        for i in range(0, len(listing.files), size)
    )
    # A few files are read faster here than by starting processes.
    workers = 1 if total < 64 else jobs
    raw = None
    if threads:
        raw = StartedTasks(raw_chunk, [(part, max_bytes, text_limit) for _, part in parts], workers)
    return StartedRead(tuple(listings), jobs, max_bytes, text_limit, parts, workers, raw)


@dataclass(frozen=True, slots=True)
class _Early:
    """A read started before the run asked for it, and the folders as they were named."""

    roots: tuple[str, ...]
    read: StartedRead


#: The early read not yet claimed (at most one).
_early: list[_Early] = []


def _chunks_on_threads() -> bool:
    """Whether the compiled reader reads chunks on threads here (as
    :func:`vocmatch.readers.scan.reads_in_threads` says, without importing numpy)."""
    return (
        compiled_reader_wanted()
        and getattr(_compiled, "read_chunk", None) is not None
        and os.name == "posix"
    )


@contextmanager
def early_read(
    roots: Sequence[str | os.PathLike[str]], jobs: int, max_bytes: int, most_files: int
) -> Iterator[None]:
    """Within the block, the folders ``roots`` listed and their reading started on threads,
    for a :func:`vocmatch.readers.scan.read_column_pair` of the same folders and limits to
    claim; when the block ends, a read not claimed is stopped (its threads end with the
    chunks they were reading).

    Nothing is started where the compiled reader does not read chunks on threads, where a
    folder cannot be listed (the run lists it again and says why), with one worker, or where
    the folders hold ``most_files`` files or more (a run that reads them another way). A
    read started says nothing: a refused thread's warning comes when the run takes the
    results, as for a read the run starts.

    Args:
        roots: The folders, as the run will name them.
        jobs: The workers the run will read with (the number it will give, not 0).
        max_bytes: The per-file size limit the run will give.
        most_files: Fewer files than this are read early.
    """
    _drop_early()
    try:
        if _chunks_on_threads() and worker_count(jobs, sys.maxsize) > 1:
            named = tuple(os.fspath(root) for root in roots)
            try:
                # A folder's files are among its entries: where the entries alone reach
                # most_files, the run reads another way, and listing it here is wasted.
                listings = (
                    [list_directory(root) for root in named]
                    if _entries_below(named, most_files)
                    else []
                )
            except Exception:  # the run lists the folders again, and says why
                listings = []
            total = sum(len(listing.files) for listing in listings)
            if listings and total < most_files:
                _early.append(_Early(named, start_read(listings, jobs, max_bytes, threads=True)))
        yield
    finally:
        _drop_early()


def _entries_below(roots: Sequence[str], most: int) -> bool:
    """Whether the folders ``roots`` hold fewer than ``most`` entries in all, counted no
    further than ``most`` (a folder of 80,000 files is not walked to the end to be told
    large). A folder that cannot be read raises ``OSError``."""
    left = most
    for root in roots:
        with os.scandir(root) as entries:
            for _ in entries:
                left -= 1
                if left <= 0:
                    return False
    return True


def claimed(
    roots: Sequence[str | os.PathLike[str]],
    jobs: int,
    max_bytes: int,
    *,
    threads: bool,
    text_limit: int,
) -> StartedRead | None:
    """The early read of the folders ``roots`` (:func:`early_read`), where one was started
    for them with these limits and the caller reads chunks on ``threads``: the caller
    finishes it. Any other early read is stopped (None: the caller reads as it would
    have)."""
    if not _early:
        return None
    early = _early.pop()
    read = early.read
    asked = (tuple(os.fspath(root) for root in roots), jobs, max_bytes, text_limit)
    if threads and (early.roots, read.jobs, read.max_bytes, read.text_limit) == asked:
        return read
    read.close()
    return None


def _drop_early() -> None:
    while _early:
        _early.pop().read.close()

"""The cache file of a run with a cache (:mod:`vocmatch.run.cached`) made and written: its
bytes made by a thread while the run is accumulated and written beside the cache file
meanwhile (when its folder exists), put in its place once the run is evaluated (through
:mod:`vocmatch.files`: whole or not at all), or removed when the run is refused.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from vocmatch.errors import CacheWarning, OutputError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from vocmatch.evaluation.shards.cache_file import CacheContent
    from vocmatch.evaluation.shards.parts import PartOptions
    from vocmatch.files import StagedFile

__all__ = ["CacheEncoding", "write_cache"]


class CacheEncoding:
    """A cache file's bytes made by a thread while the run is accumulated (the arrays'
    copies and the checksum run without Python's lock), or here when no thread may run;
    written beside the cache file meanwhile when its folder exists (put in its place once
    the run is evaluated, or removed)."""

    def __init__(self, content: CacheContent, options: PartOptions, path: str) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._content, self._options, self._path = content, options, path
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="vocmatch-cache")
        self._future: Future[tuple[list[bytes | memoryview], StagedFile | None]] | None
        try:
            self._future = self._pool.submit(self._staged)
        except RuntimeError:  # no thread: made when asked for
            self._future = None

    def _make(self) -> list[bytes | memoryview]:
        from vocmatch.evaluation.shards.cache_file import cache_pieces

        options = self._options
        return cache_pieces(self._content, options.conventions, options.slices, options.preparation)

    def _staged(self) -> tuple[list[bytes | memoryview], StagedFile | None]:
        from vocmatch.files import stage_chunks

        data = self._make()
        return data, stage_chunks(self._path, data)

    def result(self) -> tuple[list[bytes | memoryview], StagedFile | None]:
        """The bytes (in pieces), and the file they are written to beside the cache's, if
        they are.

        Raises:
            OutputError: They could not be written beside it.
        """
        try:
            return self._future.result() if self._future is not None else (self._make(), None)
        finally:
            self.close()

    def close(self) -> None:
        """Let the thread go (once it has made the bytes, which are then not written)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def discard(self) -> None:
        """Let the thread go, and remove what it wrote (the cache is left as it was)."""
        self.close()
        if self._future is not None and self._future.exception() is None:
            staged = self._future.result()[1]
            if staged is not None:
                staged.discard()


def write_cache(
    folder: str, path: str, encoding: CacheEncoding, warned: list[CacheWarning]
) -> None:
    """Replace the cache file ``path`` (in ``folder``, as given) whole with the bytes of
    ``encoding``; a warning when it cannot be written (unless reading it gave one already:
    one warning a run)."""
    from vocmatch.files import save_chunks

    try:
        data, staged = encoding.result()
        if staged is not None:
            staged.commit()
        else:
            os.makedirs(folder, exist_ok=True)
            save_chunks(path, data)
    except OutputError as error:
        failed = CacheWarning(f"{error}; this run's records are not kept in the cache")
    except OSError as error:
        reason = error.strerror or str(error)
        shown = f"cannot write the cache {folder}: {reason}"
        failed = CacheWarning(f"{shown}; this run's records are not kept")
    else:
        return
    if not warned:
        warned.append(failed)

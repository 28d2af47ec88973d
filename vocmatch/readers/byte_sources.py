"""Where the bytes of listed files come from: local paths by
:func:`~vocmatch.readers.regular_files.read_bytes`, other locations (URLs) by a function given.

A reader that says so (:class:`LocalOrElsewhere`) lets
:func:`vocmatch.readers.scan.read_listed_columns` read a chunk of local paths in one call of
the compiled reader, which opens and reads them as ``read_bytes`` does, rather than calling
it file by file: the columns, skipped files and messages are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from vocmatch.readers.parse import DEFAULT_MAX_BYTES
from vocmatch.readers.regular_files import read_bytes

__all__ = ["LocalOrElsewhere"]


@dataclass(frozen=True, slots=True)
class LocalOrElsewhere:
    """``read(path, max_bytes)``: a local path's bytes by ``read_bytes``, another's by
    ``elsewhere``.

    Attributes:
        elsewhere: ``elsewhere(path, max_bytes)`` for a path ``is_elsewhere`` says is not
            local.
        is_elsewhere: Whether a path is not local (a URL).
    """

    elsewhere: Callable[[str, int], bytes]
    is_elsewhere: Callable[[str], bool]

    def __call__(self, path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        if self.is_elsewhere(path):
            return self.elsewhere(path, max_bytes)
        return read_bytes(path, max_bytes)

    def all_local(self, paths: Iterable[str]) -> bool:
        """Whether every path is local (read by ``read_bytes``)."""
        return not any(map(self.is_elsewhere, paths))

"""The stats of many files at once: each one's size, mtime, ctime and inode, as an array.

A run that keeps a cache compares every listed file's stat with the one it had when it was
read: :func:`file_stats` takes them all in one call of the compiled reader
(``fastxml.stat_files``: the system's ``stat`` of each path with the GIL released, on a few
threads for a large set), or, where it is not built or ``VOCMATCH_PURE_READER=1`` is set,
with :func:`os.stat` path by path. Both give the same numbers: what :func:`os.stat` gives,
the inode's bits as a signed 64-bit integer, and a row of -1 for a path :func:`os.stat`
refuses (missing, unreadable folder, a path no system call can take).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from vocmatch.readers.scan import PURE_READER_VARIABLE

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

__all__ = ["MISSING", "PATHS_PER_TASK", "STAT_FIELDS", "file_stat", "file_stats"]

#: The columns of :func:`file_stats`.
STAT_FIELDS = ("size", "mtime_ns", "ctime_ns", "inode")
#: The row of a file that cannot be stat'ed.
MISSING = (-1, -1, -1, -1)
#: Paths a thread stats at once (some 50 ms): a large set is shared out among a few
#: threads, and a run stopped waits for one such task at most.
PATHS_PER_TASK = 1 << 15
_INT64 = 1 << 64


def file_stats(paths: Sequence[str], jobs: int = 1) -> npt.NDArray[np.int64]:
    """Each path's ``size, mtime_ns, ctime_ns, inode`` (following links, as :func:`os.stat`).

    Args:
        paths: The files.
        jobs: Threads wanted for a large set (0: every core).

    Returns:
        ``(N, 4)`` int64, a row of :data:`MISSING` where the path cannot be stat'ed.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     _ = f.write(b"12345"); f.flush()
    ...     found = file_stats([f.name, f.name + "-gone"])
    >>> found.shape, int(found[0, 0]), found[1].tolist()
    ((2, 4), 5, [-1, -1, -1, -1])
    """
    names = list(paths)
    if _compiled is None or os.environ.get(PURE_READER_VARIABLE, "") not in ("", "0"):
        return _stats_one_by_one(names)
    tasks = [(names[k : k + PATHS_PER_TASK],) for k in range(0, len(names), PATHS_PER_TASK)]
    from vocmatch.readers.threads import thread_results

    found: list[bytes] = []
    with thread_results(_compiled.stat_files, tasks, jobs) as results:
        for data in results:
            if data is None:  # pragma: no cover - a system without stat (Windows)
                return _stats_one_by_one(names)
            found.append(data)
    return np.frombuffer(b"".join(found), dtype=np.int64).reshape(-1, 4)


def file_stat(path: str) -> tuple[int, int, int, int] | None:
    """One path's row of :func:`file_stats` (by :func:`os.stat`: for a file or two, a call
    costs less than an array's set-up), or None where it cannot be stat'ed."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    inode = found.st_ino
    return (
        found.st_size, found.st_mtime_ns, found.st_ctime_ns,
        inode - _INT64 if inode >= _INT64 >> 1 else inode,
    )  # fmt: skip


def _stats_one_by_one(paths: Sequence[str]) -> npt.NDArray[np.int64]:
    """:func:`file_stats` by :func:`os.stat`."""
    rows = [file_stat(path) or MISSING for path in paths]
    return np.array(rows, dtype=np.int64).reshape(-1, 4)

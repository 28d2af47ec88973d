"""How many threads a compiled kernel splits one call's work into.

Some compiled kernels (:mod:`vocmatch.compiled`) split a large call's work into parts, taken
in turn by the calling thread and threads the kernel starts for the call
(``vocmatch/parts.h``), each part writing its own slice of the output: the result is the same
bits whichever the number of parts and whichever thread runs one (the single-thread call is
the reference, and the test suite compares them). Starting a thread costs tens of
microseconds, so a call is split only where each part gets at least a kernel's measured
minimum of work; a small call runs in the calling thread, as it always did, and no thread
is started for it. The call returns once every part has; a thread that starts late finds
no part left and ends without touching the call's data, so evaluations running at once in
one process each split their own calls.
"""

from __future__ import annotations

import os

__all__ = ["MAX_KERNEL_THREADS", "available_cores", "kernel_threads"]

#: The most threads a kernel's call is split into.
MAX_KERNEL_THREADS = 4


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def kernel_threads(work: int, per_thread: int) -> int:
    """Threads to split ``work`` units into where each thread should get at least
    ``per_thread`` of them: at most one a core this process may use and
    :data:`MAX_KERNEL_THREADS`; 1 (the calling thread alone) below twice ``per_thread``.

    >>> kernel_threads(10, 100)
    1
    """
    parts = work // max(1, per_thread)
    if parts < 2:
        return 1
    return max(1, min(parts, available_cores(), MAX_KERNEL_THREADS))

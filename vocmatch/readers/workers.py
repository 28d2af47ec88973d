"""Worker processes for reading and linting many files, stopped at once when the run ends.

Every pool of the library (the column reader, ``lint``, ``seg``) goes through
:func:`worker_results`, which holds three guarantees:

- **Capped.** At most one worker per available core and per task; ``jobs=0`` means every
  core. Asking for 1,000 workers on two cores starts two.
- **Stopped at once.** When the caller's block ends by an exception -- Ctrl-C, SIGTERM or
  SIGHUP turned into an exception by the command line, an error, a consumer that stops
  early -- the workers are terminated there and then, not after the tasks still queued:
  :class:`concurrent.futures.ProcessPoolExecutor` alone would wait for them. Workers ignore
  SIGINT (a Ctrl-C at the terminal reaches the whole process group; the main process
  decides) and die on SIGTERM and SIGHUP.
- **Never stuck on a refused fork.** When processes cannot be started (a process limit,
  ``fork`` failing with EAGAIN or ENOMEM, no thread for the pool's manager) or the pool
  breaks (a worker killed by the system), the remaining tasks run with half the workers,
  and finally in this process, with a :class:`~vocmatch.errors.VocmatchWarning` saying so.
  The results are the same in every case, in task order.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from vocmatch.errors import VocmatchWarning
from vocmatch.lazy import lazy_attribute

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["available_cores", "worker_count", "worker_results"]

R = TypeVar("R")

#: Names of concurrent.futures.process this module gives (see :func:`__getattr__`).
_PROCESS_NAMES = {
    "BrokenProcessPool": "concurrent.futures.process",
    "ProcessPoolExecutor": "concurrent.futures.process",
}


def __getattr__(name: str) -> Any:
    # The process pool's module brings multiprocessing, its connections and sockets (some 15 ms
    # to import): it is imported when a run first starts workers, not by every reader.
    return lazy_attribute(__name__, _PROCESS_NAMES, name)


def _process(name: str) -> Any:
    """``ProcessPoolExecutor`` or ``BrokenProcessPool`` as this module holds it now (a
    test may have put another in its place)."""
    return getattr(sys.modules[__name__], name)


#: Errors that say the system would not start a process or thread, not that a task failed.
_REFUSED_ERRNOS = frozenset((errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE))


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_count(jobs: int, tasks: int) -> int:
    """Workers to start for ``tasks`` tasks when ``jobs`` are asked for (0: every core).

    >>> worker_count(1000, 3) <= 3
    True
    >>> worker_count(4, 0)
    1
    """
    wanted = available_cores() if jobs <= 0 else jobs
    return max(1, min(wanted, available_cores(), tasks))


def _worker_start() -> None:
    """Each worker's first act: Ctrl-C is the main process's to handle; SIGTERM and SIGHUP
    end the worker (the command line's handlers, inherited through fork, would raise)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, signal.SIG_DFL)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop every worker now, whatever it is doing or has queued, and let the pool's own
    threads end (so that neither they nor the interpreter's exit wait forever)."""
    terminate_workers = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate_workers is not None:
        terminate_workers()
        return
    # Before 3.14 the executor has no public way to stop running workers; its process
    # table is the one handle on them.
    table = getattr(pool, "_processes", None)
    processes = list(table.values()) if isinstance(table, dict) else []
    for process in processes:
        with suppress(OSError, ValueError, AttributeError):
            process.terminate()
    for process in processes:
        with suppress(OSError, ValueError, AttributeError, AssertionError):
            process.join(timeout=1.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=1.0)
    # The pool's manager thread may be reading a result a worker was killed in the middle
    # of sending: the result pipe's write end is open in this process too, so the read
    # would never see the end. Closing that end (no one else closes it while the pool is
    # shut down without waiting) ends the read; the manager then finds the pool broken and
    # closes the task pipe's read end itself, which frees a feeder thread blocked writing
    # tasks no worker will read. That end is the manager's to close: closing it here too
    # would race it to the same descriptor (EBADF in its thread, or worse, a descriptor
    # number already reused by another file).
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    with suppress(OSError, AttributeError):
        writer.close()  # type: ignore[union-attr]
    manager = getattr(pool, "_executor_manager_thread", None)
    with suppress(RuntimeError, AttributeError):
        manager.join(timeout=2.0)  # type: ignore[union-attr]
    pool.shutdown(wait=False, cancel_futures=True)


def _refused(error: BaseException) -> bool:
    """Whether ``error``, raised while starting or feeding the pool, means that the system
    refused a process or thread (rather than a bug)."""
    if isinstance(error, _process("BrokenProcessPool")):
        return True
    if isinstance(error, OSError):
        return error.errno in _REFUSED_ERRNOS
    # threading raises RuntimeError("can't start new thread") when no thread can be made.
    return isinstance(error, RuntimeError) and "thread" in str(error)


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


class _Run:
    """The pool of a :func:`worker_results` block, so that its end can stop it."""

    def __init__(self, wait_at_end: bool = True) -> None:
        self.pool: ProcessPoolExecutor | None = None
        self.wait_at_end = wait_at_end

    def start(self, workers: int) -> ProcessPoolExecutor:
        pool_class = _process("ProcessPoolExecutor")
        self.pool = pool_class(max_workers=workers, initializer=_worker_start)
        return self.pool

    def stop(self) -> None:
        """Terminate the workers (after an error or an interruption)."""
        pool, self.pool = self.pool, None
        if pool is not None:
            _terminate(pool)

    def close(self) -> None:
        """Let the workers finish and exit (after a complete run), waiting for them to end
        unless told not to."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=self.wait_at_end)

    def results(
        self, function: Callable[..., R], tasks: Sequence[tuple[Any, ...]], workers: int
    ) -> Iterator[R]:
        done = 0
        while workers > 1 and done < len(tasks):
            try:
                pool = self.start(workers)
                futures: list[Future[R]] = [pool.submit(function, *task) for task in tasks[done:]]
            except BaseException as error:
                self.stop()
                if not _refused(error):
                    raise
                workers = self._fewer(workers, error)
                continue
            broken: BaseException | None = None
            broken_pool = _process("BrokenProcessPool")
            for future in futures:
                try:
                    result = future.result()
                except broken_pool as error:
                    broken = error
                    break
                done += 1
                yield result
            if broken is None:
                self.close()
                return
            self.stop()
            workers = self._fewer(workers, broken)
        for task in tasks[done:]:
            yield function(*task)

    @staticmethod
    def _fewer(workers: int, error: BaseException) -> int:
        fewer = workers // 2
        where = f"{fewer} worker processes" if fewer > 1 else "this process"
        warnings.warn(
            f"worker processes failed ({_reason(error)}); going on with {where}",
            VocmatchWarning,
            stacklevel=4,
        )
        return fewer


@contextmanager
def worker_results(
    function: Callable[..., R],
    tasks: Sequence[tuple[Any, ...]],
    jobs: int,
    *,
    wait_at_end: bool = True,
) -> Iterator[Iterator[R]]:
    """``function(*task)`` for every task, in task order, computed by worker processes.

    Use it as ``with worker_results(f, tasks, jobs) as results: for r in results: ...``;
    when the block ends by an exception the workers are terminated at once.

    Args:
        function: A module-level function (it is pickled to the workers).
        tasks: The arguments of each call.
        jobs: Workers wanted; capped by :func:`worker_count` (0: every core). With one
            worker or one task, everything runs in this process.
        wait_at_end: Once every result is given, wait for the workers to exit; else they
            exit (tearing down their memory) while the caller goes on, and the
            interpreter's exit waits for any still ending.

    Yields:
        An iterator over the results, in task order.

    Warns:
        VocmatchWarning: Worker processes could not be started or broke; the rest ran with
            fewer, or in this process.
    """
    run = _Run(wait_at_end)
    try:
        yield run.results(function, tasks, worker_count(jobs, len(tasks)))
    except BaseException:
        run.stop()
        raise
    finally:
        run.stop()

"""Threads of this process for tasks that run without the GIL, stopped when the run ends.

The compiled reader reads a chunk of files with the GIL released (``fastxml.read_chunk``):
threads of this process then read chunks on several cores, with nothing to pickle and no
process to start. :func:`thread_results` (and :class:`StartedTasks`, whose tasks are
handed to the threads when it is made and whose results are taken later, as a run that
starts reading before it needs the results does: :mod:`vocmatch.readers.read_ahead`) holds
the guarantees of :func:`vocmatch.readers.workers.worker_results` that apply to threads:

- **Capped.** At most one thread per available core and per task
  (:func:`~vocmatch.readers.workers.worker_count`); ``jobs=0`` means every core; one
  thread (or one task) runs everything in the calling thread, task by task.
- **Stopped at the end of a task.** When the caller's block ends by an exception (Ctrl-C,
  SIGTERM or SIGHUP turned into an exception by the command line, an error, a consumer that
  stops early) the tasks not started are cancelled, and the block ends once the running ones
  have finished theirs: a thread cannot be killed, so a task must be short (a chunk of at
  most 512 files). Signals are handled by the main thread only, as the threads never see
  them.
- **Never stuck on a refused thread.** When the system refuses a thread, the tasks no
  thread ran run in the calling thread, with a :class:`~vocmatch.errors.VocmatchWarning`
  saying so (when the first result is taken). The results are the same in every case, in task order.

An exception raised by a task reaches the caller once, from the first failed task in task
order; the exceptions of later tasks, if any, are dropped with their results.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from vocmatch.errors import VocmatchWarning
from vocmatch.lazy import lazy_attribute
from vocmatch.readers.workers import worker_count

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["StartedTasks", "thread_results"]

R = TypeVar("R")


def __getattr__(name: str) -> Any:
    # concurrent.futures (and the logging it imports) is imported when a run first starts
    # threads, not by every reader: a run of a few files needs neither.
    return lazy_attribute(__name__, {"ThreadPoolExecutor": "concurrent.futures"}, name)


def _pool(threads: int) -> ThreadPoolExecutor:
    """A pool of ``threads`` threads, of the class this module holds now (a test may have
    put another in its place)."""
    pool_class = sys.modules[__name__].ThreadPoolExecutor
    pool: ThreadPoolExecutor = pool_class(max_workers=threads, thread_name_prefix="vocmatch-read")
    return pool


def _submitted(
    pool: ThreadPoolExecutor, function: Callable[..., R], tasks: Sequence[tuple[Any, ...]]
) -> tuple[list[Future[R]], RuntimeError | None]:
    """Every task submitted to the pool, or, when the system refuses a thread, the tasks
    submitted before (each of which a thread ran, or the pool cancelled: see
    :meth:`StartedTasks.results`) and the refusal."""
    futures: list[Future[R]] = []
    try:
        for task in tasks:
            futures.append(pool.submit(function, *task))
    except RuntimeError as error:  # "can't start new thread"
        # Cancel what no thread took (a task may sit in the queue of a pool with no thread),
        # and let the running tasks finish.
        pool.shutdown(wait=True, cancel_futures=True)
        return futures, error
    return futures, None


class StartedTasks(Generic[R]):
    """Tasks handed to threads of this process when made, their results taken later, in
    task order, by :meth:`results`; :meth:`close` stops them (the tasks not started are
    cancelled, the running ones finish theirs). With one thread (or one task) nothing is
    started: the tasks run in the thread that takes their results, one by one as taken."""

    def __init__(
        self, function: Callable[..., R], tasks: Sequence[tuple[Any, ...]], jobs: int
    ) -> None:
        self._function = function
        self._tasks = tasks
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future[R]] = []
        self._refused: RuntimeError | None = None
        threads = worker_count(jobs, len(tasks))
        if threads > 1:
            self._pool = _pool(threads)
            try:
                self._futures, self._refused = _submitted(self._pool, function, tasks)
            except BaseException:  # Ctrl-C while handing them over: the threads stop
                self.close()
                raise

    def results(self) -> Iterator[R]:
        """The results, in task order (each task's exception raised in its place).

        Warns:
            VocmatchWarning: A thread could not be started; the tasks no thread ran run in
                this thread (said when the first result is taken).
        """
        function, tasks = self._function, self._tasks
        if self._pool is None:
            yield from (function(*task) for task in tasks)
            return
        if self._refused is not None:
            warnings.warn(
                f"reading threads failed ({self._refused}); going on with this thread",
                VocmatchWarning,
                stacklevel=4,
            )
        for future, task in zip(self._futures, tasks, strict=False):
            # A task the pool cancelled after a refused thread runs here.
            yield function(*task) if future.cancelled() else future.result()
        for task in tasks[len(self._futures) :]:
            yield function(*task)

    def close(self) -> None:
        """Cancel the tasks not started and wait for the running ones (after every result
        is taken, nothing is left to wait for)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def thread_results(
    function: Callable[..., R], tasks: Sequence[tuple[Any, ...]], jobs: int
) -> Iterator[Iterator[R]]:
    """``function(*task)`` for every task, in task order, computed by threads of this
    process.

    Use it as ``with thread_results(f, tasks, jobs) as results: for r in results: ...``;
    the tasks are handed to the threads when the block starts; when the block ends by an
    exception, the tasks not started are cancelled and the block waits for the running
    ones.

    Args:
        function: A function that releases the GIL for most of its work (threads holding
            the GIL run one at a time).
        tasks: The arguments of each call.
        jobs: Threads wanted; capped by :func:`~vocmatch.readers.workers.worker_count` (0:
            every core). With one thread or one task, everything runs in the calling
            thread.

    Yields:
        An iterator over the results, in task order.

    Warns:
        VocmatchWarning: A thread could not be started; the rest ran in the calling thread.
    """
    started = StartedTasks(function, tasks, jobs)
    try:
        yield started.results()
    finally:
        # After a complete run every task is done; after an exception, the queued ones are
        # cancelled and the running ones finish their task.
        started.close()

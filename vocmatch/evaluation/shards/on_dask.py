"""Evaluation on a Dask cluster: workers read shards of the files, the client merges.

The client lists the ground-truth and prediction files (local folders the workers can see,
or fsspec URLs: :mod:`vocmatch.readers.remote`) and splits the image keys into ``parts``
deterministic parts: the ``k``-th part holds the keys whose place in key order is ``k``
modulo ``parts``, as ``--shard`` splits them. Each task reads its part's files with the
same reader as a local run, applies the class choice and the geometry, matches its images
(:class:`~vocmatch.evaluation.shards.incremental.Evaluator`) and sends back their state (a
versioned format, never pickle) with the files it could not read and the counts the notes
of the class choice and the geometry are worded from: match records, and, when the report
lists or draws boxes, each image's per-box records and boxes. The client merges the states
and accumulates them (:func:`records_on_dask`, :func:`evaluate_on_dask`), after checking
that the merged images are exactly the listed ones: a run never reports on part of the
images.

The split, the task and the checks are those of every run in parts
(:mod:`vocmatch.evaluation.shards.parts`, shared with a local run's worker processes):
the cluster is one :class:`~vocmatch.evaluation.shards.parts.PartRunner`,
:class:`DaskParts`.

A task whose worker is lost (killed, out of memory) is run again by Dask on another
worker; a task that raises is run again up to ``retries`` times. A task that fails every
time fails the run with :class:`~vocmatch.errors.DistributedError`, naming the part.

Dask (the ``dask`` extra: ``pip install '.[dask]'`` in a clone) is imported only by the
functions that need it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from vocmatch.core.protocol import Conventions, protocol
from vocmatch.errors import DistributedError, RequestError, VocmatchError
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.parts import (
    Part,
    PartListing,
    PartOptions,
    PartResult,
    check_images,
    part_state,
    read_counts,
    run_parts,
    skipped_by_path,
    split_parts,
)
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.parse import DEFAULT_MAX_BYTES
from vocmatch.readers.remote import StorageOptions
from vocmatch.readers.scan import ColumnSet
from vocmatch.readers.workers import available_cores
from vocmatch.words import plural

if TYPE_CHECKING:
    from distributed import Client

    from vocmatch.core.model import SkippedFile
    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.result import Evaluation

__all__ = [
    "DaskEvaluation",
    "DaskOptions",
    "DaskParts",
    "Part",
    "PartResult",
    "dask_client",
    "dask_installed",
    "evaluate_on_dask",
    "part_state",
    "records_on_dask",
    "split_parts",
]

#: Tries of a task that raises, after the first (a lost worker's tasks are rerun by Dask).
DEFAULT_RETRIES = 2
R = TypeVar("R")

#: ``local:N``: N a count of ASCII digits (a str pattern's [0-9] is ASCII only).
_LOCAL = re.compile(r"local:([1-9][0-9]{0,17})")
#: Seconds a scheduler's address is given to answer before the run fails (dask's own
#: default; a scheduler starting on a busy machine may take this long).
DEFAULT_CONNECT_TIMEOUT = 30.0
#: A share of the connect timeout given on top of it, so that Dask's own timeout (which
#: says what it waited for) fires first when it can.
_CONNECT_GRACE = 0.1
#: How a Dask future's cancellation names a client that lost its scheduler.
_SCHEDULER_LOST = "scheduler-connection-lost"


#: What every task needs besides its files (the options of any run in parts).
DaskOptions = PartOptions


def dask_installed() -> bool:
    """Whether dask.distributed can be imported (the ``dask`` extra)."""
    try:
        import distributed  # noqa: F401  (only to know it is there)
    except ImportError:
        return False
    return True


@contextmanager
def dask_client(scheduler: str, *, connect_timeout: float | None = None) -> Iterator[Client]:
    """A client of a scheduler, closed on leaving: ``local:N`` starts a local cluster of N
    worker processes of one thread each, at most one a core this process may use (stopped
    on leaving, its log silenced), anything else is a scheduler's address
    (``tcp://host:8786``).

    Args:
        scheduler: ``local:N`` or a scheduler's address.
        connect_timeout: Seconds to wait for the address to answer; by default
            :data:`DEFAULT_CONNECT_TIMEOUT`.

    Raises:
        ImportError: dask.distributed is not installed.
        RequestError: ``scheduler`` starts with ``local:`` but is not ``local:N``, or
            ``connect_timeout`` is not a finite number of seconds above 0.
        DistributedError: The scheduler cannot be reached within ``connect_timeout`` (also
            when it accepts the connection and never answers), or a local cluster cannot
            start.
    """
    from distributed import Client, LocalCluster

    local = _LOCAL.fullmatch(scheduler)
    if local is None and scheduler.startswith("local:"):
        raise RequestError(
            "scheduler", "is not local:N with N a whole number from 1 (at most 18 digits)",
            value=scheduler if len(scheduler) <= 40 else scheduler[:40] + "...",
        )  # fmt: skip
    if local is not None:
        # At most one worker a core this process may use, as --jobs: a worker of one thread
        # more than the cores only waits its turn, and local:100000 would start that many.
        workers = min(int(local.group(1)), available_cores())
        with ExitStack() as stack:
            try:
                cluster = stack.enter_context(
                    LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        # The scheduler serves HTTP even without a dashboard, on 8787 unless
                        # told: a port of the system's choosing on loopback, so that a busy
                        # 8787 (another cluster) costs no warning and nothing listens beyond
                        # this host.
                        dashboard_address="127.0.0.1:0",
                        # Lost workers and failed tasks are the run's to report (retried, or
                        # one error): the cluster's log lines and tracebacks would bury that.
                        silence_logs=logging.CRITICAL,
                    )
                )
                client = stack.enter_context(Client(cluster))
            except Exception as error:  # Dask's, or the system's (no process, no port)
                started = plural(workers, "worker")
                raise DistributedError(
                    f"cannot start a local Dask cluster of {started}: {_reason(error)}"
                ) from None
            yield client
        return
    wait = DEFAULT_CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
    if not 0 < wait < math.inf:  # NaN too
        raise RequestError(
            "connect_timeout", "is not a number of seconds above 0", value=str(connect_timeout)
        )
    with _connected_client(scheduler, wait) as client:
        yield client


def _connected_client(scheduler: str, wait: float) -> Client:
    """A client of the scheduler at ``scheduler``, connected within about ``wait`` seconds.

    Dask bounds the TCP connection by its ``timeout``, not the handshake after it: a server
    that accepts and never answers would hold the client forever. So the client is made in a
    thread of its own, waited for ``wait`` seconds and a tenth more; one that connects later
    is closed at once.

    Raises:
        DistributedError: The scheduler did not answer in time, or refused the client.
    """
    from distributed import Client

    made: list[Client | Exception] = []
    lock = threading.Lock()
    given_up = threading.Event()

    def connect() -> None:
        try:
            outcome: Client | Exception = Client(scheduler, timeout=wait)
        except Exception as error:  # handed to the waiting thread below
            outcome = error
        with lock:
            if not given_up.is_set():
                made.append(outcome)
                return
        if isinstance(outcome, Client):
            outcome.close()

    thread = threading.Thread(target=connect, name="vocmatch-dask-connect", daemon=True)
    thread.start()
    thread.join(wait * (1 + _CONNECT_GRACE))
    with lock:
        if not made:
            given_up.set()
            raise DistributedError(
                f"cannot reach the Dask scheduler {scheduler}: no answer within {wait:g} s"
            )
    outcome = made[0]
    if isinstance(outcome, Client):
        return outcome
    reason = " ".join(str(outcome).split()) or type(outcome).__name__
    raise DistributedError(f"cannot reach the Dask scheduler {scheduler}: {reason}") from None


def _on_cluster(
    listing: PartListing,
    options: PartOptions,
    client: Client,
    parts: int | None,
    retries: int,
) -> list[PartResult]:
    """Every part's result: the keys split into ``parts`` parts (by default
    :data:`~vocmatch.evaluation.shards.parts.PARTS_PER_WORKER` per worker thread), each
    read by a task (:func:`~vocmatch.evaluation.shards.parts.part_state`)."""
    if client.status != "running":
        raise DistributedError(f"the Dask client is {client.status}, not running; nothing reported")
    address = _address_of(client)
    try:
        return run_parts(listing, DaskParts(client, retries), part_state, options, parts=parts)
    except VocmatchError:
        raise  # the data's fault, or a failure already in the run's words
    except Exception as error:
        # Dask's own exceptions (a closed client, a lost connection) never reach the caller.
        if _scheduler_lost(client, error):
            raise DistributedError(f"lost the Dask scheduler {address}; nothing reported") from None
        raise DistributedError(
            f"the run on the Dask scheduler {address} failed: {_reason(error)}"
        ) from None


def _address_of(client: Client) -> str:
    """The scheduler's address, as the client knows it."""
    scheduler = getattr(client, "scheduler", None)
    return str(getattr(scheduler, "address", None) or "(no address)")


def _scheduler_lost(client: Client, error: BaseException) -> bool:
    """Whether ``error`` comes of the client having lost its scheduler (killed, its
    machine gone): Dask cancels every future, and the client is no longer running."""
    return getattr(error, "reason", None) == _SCHEDULER_LOST or client.status != "running"


def _reason(error: BaseException) -> str:
    """An exception's type and message on one line."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def evaluate_on_dask(
    gt: str | os.PathLike[str],
    pred: str | os.PathLike[str],
    conventions: Conventions | str = "default",
    *,
    client: Client,
    parts: int | None = None,
    fold_case: bool = False,
    score_thresholds: ScoreThresholds | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    storage_options: StorageOptions | None = None,
    retries: int = DEFAULT_RETRIES,
) -> Evaluation:
    """Evaluate the files below ``gt`` and ``pred`` on a Dask cluster: the numbers of
    :func:`~vocmatch.evaluation.engine.evaluate_columns` on the same files, read in one
    process (see :func:`records_on_dask`).

    Args:
        gt: Ground-truth folder (one every worker can read) or fsspec URL.
        pred: Prediction folder or URL.
        conventions: The protocol, or its name.
        client: A client of the cluster.
        parts: Tasks to split the images into; by default four per worker thread.
        fold_case: Lower-case class names before matching.
        score_thresholds: Count only predictions at or above their class's threshold.
        max_bytes: Per-file size limit.
        storage_options: Options of the URLs' fsspec file systems.
        retries: Tries of a task that raises, after the first.

    Returns:
        The evaluation.

    Raises:
        InputError: A location cannot be listed, or holds no annotation file.
        DistributedError: A task failed on every try.
    """
    conv = protocol(conventions) if isinstance(conventions, str) else conventions
    options = DaskOptions(conv, fold_case, score_thresholds, max_bytes, storage_options)
    found = records_on_dask(gt, pred, options, client=client, parts=parts, retries=retries)
    return found.evaluation


@dataclass(frozen=True, slots=True)
class DaskEvaluation:
    """An evaluation merged from the match records of a cluster's tasks, and the image keys
    of both sides (to judge, as a run on columns does, whether anything pairs).

    Attributes:
        evaluation: The evaluation.
        gt_keys: The keys of the ground-truth files read, in key order.
        pred_keys: The keys of every prediction file listed, read or not, sorted.
        records: The tasks' match records, merged (the bootstrap and the calibration read
            them as a run's).
        evaluator: The tasks' states merged (no file recorded as skipped in it).
        boxes: With ``keep_boxes``, the boxes of every image (ground truth, predictions),
            the roots those listed; else None.
        skipped: The files skipped, by the listing and by the tasks, by path: ground truth,
            then predictions.
        orphans: ``(key, path)`` of the prediction files without ground truth, by key.
    """

    evaluation: Evaluation
    gt_keys: tuple[str, ...]
    pred_keys: tuple[str, ...]
    records: MatchRecords
    evaluator: Evaluator
    boxes: tuple[ColumnSet, ColumnSet] | None = None
    skipped: tuple[SkippedFile, ...] = ()
    orphans: tuple[tuple[str, str], ...] = ()


def records_on_dask(
    gt: str | os.PathLike[str],
    pred: str | os.PathLike[str],
    options: DaskOptions,
    *,
    client: Client,
    parts: int | None = None,
    retries: int = DEFAULT_RETRIES,
    shard: tuple[int, int] | None = None,
) -> DaskEvaluation:
    """Evaluate the files below ``gt`` and ``pred`` on a cluster: each task reads and matches
    its part's images and sends their evaluator state (match records, about 21 bytes a
    prediction; with ``options.keep_boxes`` each image's per-box records and boxes too), the
    client merges the states and accumulates them.

    Args:
        gt: Ground-truth folder or URL (searched recursively).
        pred: Prediction folder or URL.
        options: The protocol, options and limits every task uses.
        client: A client of the cluster (:func:`dask_client`).
        parts: Tasks to split the images into; by default four per worker thread.
        retries: Tries of a task that raises, after the first.
        shard: ``(k, n)``: only the images of the k-th of n shards (1-based, as
            :func:`~vocmatch.readers.shards.shard_keys` chooses them among the listed
            ground-truth keys); the first also reads the prediction files of no
            ground-truth image. The keys of both sides are still every listed one's.

    Returns:
        The evaluation (:func:`evaluate_on_dask`'s), the keys of both sides, and the merged
        states.

    Raises:
        InputError: A location cannot be listed, or holds no annotation file; a class
            chosen is in neither set.
        DistributedError: A task failed on every try, or the merged images are not the
            listed ones.
    """
    whole = PartListing.of(gt, pred, options.storage_options)
    listing = whole.of_shard(shard) if shard is not None else whole
    options = dataclasses.replace(options, roots=(listing.gt.root, listing.pred.root))
    results = _on_cluster(listing, options, client, parts, retries)
    merged = Evaluator(
        options.conventions, fold_case=options.fold_case,
        score_thresholds=options.score_thresholds, slices=options.slices,
        keep_boxes=options.keep_boxes,
        calibration=options.calibration,
    )  # fmt: skip
    for k, result in enumerate(results):
        merged.merge(Evaluator.from_bytes(result.state, f"the state of task {k + 1}"))
    check_images(merged.keys, listing.expected(results))
    gt_skipped, pred_skipped = listing.skipped(results)
    orphans = listing.orphans(results)
    gt_notes, pred_notes = read_counts(results).notes(
        options.class_choice, options.fold_case, options.geometry
    )
    skipped = (*skipped_by_path(gt_skipped), *skipped_by_path(pred_skipped))
    evaluation = merged.result(
        skipped=skipped,
        orphan_pred=[path for _, path in orphans],
        reader_notes=[*listing.gt.notes, *gt_notes, *listing.pred.notes, *pred_notes],
    )
    unreadable_gt = {s.key for s in gt_skipped if s.key is not None}
    pred_keys = {k for k, _ in whole.pred.files} | {s.key for s in pred_skipped if s.key}
    boxes = merged.boxes()
    return DaskEvaluation(
        evaluation,
        tuple(k for k, _ in whole.gt.files if k not in unreadable_gt),
        tuple(sorted(pred_keys)),
        merged.records(),
        merged,
        boxes,
        skipped,
        tuple(orphans),
    )


@dataclass(frozen=True)
class DaskParts:
    """Tasks run by a Dask cluster's workers
    (:class:`~vocmatch.evaluation.shards.parts.PartRunner`).

    Attributes:
        client: A client of the cluster.
        retries: Tries of a task that raises, after the first (a lost worker's tasks are
            rerun by Dask).
    """

    client: Client
    retries: int = DEFAULT_RETRIES

    def workers(self) -> int:
        """The cluster's worker threads."""
        return sum(self.client.nthreads().values()) or 1

    def results(
        self, task: Callable[[Part, PartOptions], R], parts: Sequence[Part], options: PartOptions
    ) -> Iterator[tuple[Part, R]]:
        """Every part's result as it comes back, or the first failure (the other tasks are
        then cancelled).

        Raises:
            VocmatchError: A task raised one (the data's fault: the same on every try).
            DistributedError: A task failed on every try, or the scheduler was lost.
        """
        from distributed import as_completed

        client, retries = self.client, self.retries
        address = _address_of(client)
        futures = client.map(task, parts, options=options, retries=retries, pure=False)
        part_of = {future.key: part for future, part in zip(futures, parts, strict=True)}
        done = 0
        try:
            for future in as_completed(futures):
                part = part_of[future.key]
                try:
                    result = future.result()
                except VocmatchError:
                    raise  # the data's fault, not the cluster's: the same on every try
                except Exception as error:
                    if _scheduler_lost(client, error):
                        raise DistributedError(
                            f"lost the Dask scheduler {address} with {done} of "
                            f"{len(parts)} parts done; nothing reported"
                        ) from None
                    raise DistributedError(
                        f"part {part.index} of {part.count} failed on every try "
                        f"({1 + retries}; a lost worker's tasks are retried by Dask): "
                        f"{_reason(error)}"
                    ) from None
                done += 1
                yield part, result
        finally:
            if client.status == "running":
                client.cancel(futures)

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
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vocmatch.core.model import SkippedFile
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.errors import (
    DistributedError,
    InputError,
    RequestError,
    VocmatchError,
    no_annotation_files,
)
from vocmatch.evaluation.class_map import ClassChoice, choice_notes, choose_classes, class_counts
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.slice_records import SliceSpec
from vocmatch.evaluation.stages import orphan_files
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.parse import DEFAULT_MAX_BYTES, DirectoryListing
from vocmatch.readers.remote import StorageOptions, list_location, location_reader
from vocmatch.readers.scan import ColumnSet, read_listed_columns
from vocmatch.readers.shapes import Geometry, geometry_note, shape_counts, with_geometry
from vocmatch.readers.shards import listed_keys, shard_keys, shard_listing
from vocmatch.readers.workers import available_cores
from vocmatch.words import plural

if TYPE_CHECKING:
    from distributed import Client

    from vocmatch.evaluation.records import MatchRecords
    from vocmatch.evaluation.result import Evaluation

__all__ = [
    "DaskEvaluation",
    "DaskOptions",
    "Part",
    "PartResult",
    "ReadCounts",
    "dask_client",
    "dask_installed",
    "evaluate_on_dask",
    "part_state",
    "records_on_dask",
    "split_parts",
]

#: Tries of a task that raises, after the first (a lost worker's tasks are rerun by Dask).
DEFAULT_RETRIES = 2
#: Parts per worker thread by default: small enough to even out slow workers and to lose
#: little when one is lost, large enough that a part's state costs little to send.
PARTS_PER_THREAD = 4
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


@dataclass(frozen=True, slots=True)
class DaskOptions:
    """What every task needs besides its files.

    Attributes:
        conventions: The protocol.
        fold_case: Lower-case class names before matching.
        score_thresholds: Per-class score thresholds, or None.
        max_bytes: Per-file size limit; larger files are skipped unread.
        storage_options: Options of the URLs' fsspec file systems.
        slices: Slices the tasks match with their images (their states keep them).
        keep_boxes: Tasks keep each image's per-box records and boxes in their states
            (for a report that lists or draws boxes).
        class_choice: Classes renamed, selected or merged before matching, or None.
        geometry: ``shape`` or ``box`` (:func:`~vocmatch.readers.shapes.with_geometry`).
        roots: The folders (or URLs) of the ground truth and the predictions as the client
            listed them: the kept boxes name them, as one process's do.
        calibration: Those records keep what OCE and D-ECE read.
    """

    conventions: Conventions
    fold_case: bool = False
    score_thresholds: ScoreThresholds | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    storage_options: StorageOptions | None = None
    slices: tuple[SliceSpec, ...] = ()
    keep_boxes: bool = False
    class_choice: ClassChoice | None = None
    geometry: Geometry = "shape"
    roots: tuple[str, str] = ("", "")
    calibration: bool = False


@dataclass(frozen=True, slots=True)
class Part:
    """One task's files: ``(key, path)`` pairs, sorted by key.

    Attributes:
        index: The part's number, from 1.
        count: How many parts the images were split into.
        gt_files: Ground-truth files.
        pred_files: Prediction files of the same keys (and of keys without ground truth).
    """

    index: int
    count: int
    gt_files: tuple[tuple[str, str], ...]
    pred_files: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ReadCounts:
    """What the notes of the class choice and of the geometry are worded from, of the files
    as read: counts that add up over the parts of a run.

    Attributes:
        gt_classes: Each ground-truth class name and its count of objects, sorted by name.
        pred_classes: The same of the predictions.
        gt_shapes: Ground-truth objects that are a shape with a ``<bndbox>``, and alone.
        pred_shapes: The same of the predictions.
    """

    gt_classes: tuple[tuple[str, int], ...] = ()
    pred_classes: tuple[tuple[str, int], ...] = ()
    gt_shapes: tuple[int, int] = (0, 0)
    pred_shapes: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, gt: ColumnSet, pred: ColumnSet) -> ReadCounts:
        """The counts of columns as read."""
        return cls(
            tuple(sorted(class_counts(gt).items())),
            tuple(sorted(class_counts(pred).items())),
            shape_counts(gt),
            shape_counts(pred),
        )

    def plus(self, other: ReadCounts) -> ReadCounts:
        """The counts of both parts."""

        def added(
            a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]
        ) -> tuple[tuple[str, int], ...]:
            total = dict(a)
            for name, count in b:
                total[name] = total.get(name, 0) + count
            return tuple(sorted(total.items()))

        return ReadCounts(
            added(self.gt_classes, other.gt_classes),
            added(self.pred_classes, other.pred_classes),
            _pair_sum(self.gt_shapes, other.gt_shapes),
            _pair_sum(self.pred_shapes, other.pred_shapes),
        )

    def notes(self, options: DaskOptions) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The notes one process adds to the ground truth and to the predictions it read
        (the class choice's, then the geometry's).

        Raises:
            InputError: A class chosen is in neither set.
            AnnotationError: With ``fold_case``, two names of the class map fold to one
                and map to different classes.
        """
        gt_notes: tuple[str, ...] = ()
        pred_notes: tuple[str, ...] = ()
        if options.class_choice:
            gt_notes, pred_notes = choice_notes(
                dict(self.gt_classes), dict(self.pred_classes), options.class_choice,
                options.fold_case,
            )  # fmt: skip
        sides = (("ground truth", self.gt_shapes), ("predictions", self.pred_shapes))
        found = [geometry_note(options.geometry, side, *counts) for side, counts in sides]
        return (
            (*gt_notes, *([found[0]] if found[0] is not None else [])),
            (*pred_notes, *([found[1]] if found[1] is not None else [])),
        )


def _pair_sum(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


@dataclass(frozen=True, slots=True)
class PartResult:
    """What a task sends back.

    Attributes:
        state: The evaluator state of the part's images (:meth:`Evaluator.to_bytes`), their
            per-box records and boxes in it with ``keep_boxes``.
        gt_skipped: Ground-truth files that could not be read.
        pred_skipped: Prediction files that could not be read.
        orphans: ``(key, path)`` of prediction files without ground truth.
        counts: The counts the notes of the class choice and the geometry are worded from.
    """

    state: bytes
    gt_skipped: tuple[SkippedFile, ...]
    pred_skipped: tuple[SkippedFile, ...]
    orphans: tuple[tuple[str, str], ...]
    counts: ReadCounts = ReadCounts()


def split_parts(
    gt_files: Sequence[tuple[str, str]], pred_files: Sequence[tuple[str, str]], parts: int
) -> tuple[Part, ...]:
    """Split the files by key into ``parts`` parts: key ``j`` of the sorted keys of both
    sides goes to part ``j % parts + 1``, with its ground truth and its predictions.

    >>> [p.gt_files for p in split_parts([("a", "g/a"), ("b", "g/b"), ("c", "g/c")], [], 2)]
    [(('a', 'g/a'), ('c', 'g/c')), (('b', 'g/b'),)]

    Raises:
        InputError: ``parts`` is below 1.
    """
    if parts < 1:
        raise InputError(f"Expected at least one part, got {parts}")
    keys = sorted({k for k, _ in gt_files} | {k for k, _ in pred_files})
    place = {key: j % parts for j, key in enumerate(keys)}
    gt: list[list[tuple[str, str]]] = [[] for _ in range(parts)]
    pred: list[list[tuple[str, str]]] = [[] for _ in range(parts)]
    for key, path in gt_files:
        gt[place[key]].append((key, path))
    for key, path in pred_files:
        pred[place[key]].append((key, path))
    return tuple(
        Part(k + 1, parts, tuple(sorted(gt[k])), tuple(sorted(pred[k]))) for k in range(parts)
    )


def part_state(part: Part, options: DaskOptions) -> PartResult:
    """Read a part's files, apply the class choice and the geometry, and give the evaluator
    state of its images (the task run on a worker).

    Raises:
        InputError: A file holds rotated boxes or polygons scored as shapes.
    """
    read = location_reader(options.storage_options)
    gt = read_listed_columns(part.gt_files, options.max_bytes, read)
    pred = read_listed_columns(part.pred_files, options.max_bytes, read)
    counts = ReadCounts.of(gt, pred)
    gt = dataclasses.replace(gt, root=options.roots[0])
    pred = dataclasses.replace(pred, root=options.roots[1])
    if options.class_choice:
        # A chosen class may be in other parts only: the client checks the whole run's.
        gt, pred = choose_classes(gt, pred, options.class_choice, options.fold_case, whole=False)
    gt = with_geometry(gt, options.geometry, "ground truth")
    pred = with_geometry(pred, options.geometry, "predictions")
    evaluator = Evaluator(
        options.conventions, fold_case=options.fold_case,
        score_thresholds=options.score_thresholds, slices=options.slices,
        keep_boxes=options.keep_boxes, calibration=options.calibration,
    )  # fmt: skip
    evaluator.add_columns(gt, pred)
    state = evaluator.to_bytes()  # matched here, on the worker
    return PartResult(state, gt.skipped, pred.skipped, orphan_files(gt, pred), counts)


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


@dataclass(frozen=True, slots=True)
class _Listing:
    """The files of both sides, as the client listed them."""

    gt: DirectoryListing
    pred: DirectoryListing

    @classmethod
    def of(
        cls, gt: str | os.PathLike[str], pred: str | os.PathLike[str], options: DaskOptions
    ) -> _Listing:
        """The files below ``gt`` and ``pred``.

        Raises:
            InputError: A location cannot be listed, or holds no annotation file.
        """
        gt_listing = list_location(gt, options.storage_options)
        pred_listing = list_location(pred, options.storage_options)
        if not gt_listing.files:
            raise no_annotation_files(os.fspath(gt), gt_listing.skipped)
        return cls(gt_listing, pred_listing)

    def skipped(self, results: Sequence[PartResult]) -> tuple[list[SkippedFile], list[SkippedFile]]:
        """The files skipped, by the listing and by the tasks: ground truth, predictions."""
        gt = [*self.gt.skipped, *(s for r in results for s in r.gt_skipped)]
        pred = [*self.pred.skipped, *(s for r in results for s in r.pred_skipped)]
        return gt, pred

    def expected(self, results: Sequence[PartResult]) -> list[str]:
        """The keys the merged images must be: every ground-truth file read."""
        gt_skipped, pred_skipped = self.skipped(results)
        unreadable = {s.key for s in (*gt_skipped, *pred_skipped) if s.key is not None}
        return [k for k, _ in self.gt.files if k not in unreadable]

    def of_shard(self, shard: tuple[int, int]) -> _Listing:
        """The files of the ``shard[0]``-th of ``shard[1]`` shards of the images (as a local
        shard reads them: by place among the listed ground-truth keys); the first shard
        also holds the prediction files of no ground-truth image, to report them once."""
        keys = listed_keys(self.gt)
        chosen = shard_keys(keys, shard)
        pred_chosen: frozenset[str] | set[str] = chosen
        if shard[0] == 1:
            listed = set(keys)
            pred_chosen = chosen | {k for k in listed_keys(self.pred) if k not in listed}
        return _Listing(shard_listing(self.gt, chosen), shard_listing(self.pred, pred_chosen))


def _on_cluster(
    listing: _Listing, options: DaskOptions, client: Client, parts: int | None, retries: int
) -> list[PartResult]:
    """Every part's result: the keys split into ``parts`` parts (by default four per
    worker thread), each read by a task."""
    if client.status != "running":
        raise DistributedError(f"the Dask client is {client.status}, not running; nothing reported")
    address = _address_of(client)
    try:
        if parts is None:
            threads = sum(client.nthreads().values()) or 1
            parts = PARTS_PER_THREAD * threads
        gt, pred = listing.gt.files, listing.pred.files
        keys = len({k for k, _ in gt} | {k for k, _ in pred})
        shares = split_parts(gt, pred, max(1, min(parts, keys)))
        return _run_parts(client, shares, options, retries)
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


def _check_images(merged: Sequence[str], expected: Sequence[str]) -> None:
    """Refuse merged images that are not exactly the listed ones."""
    if list(merged) != list(expected):
        lost = sorted(set(expected) - set(merged))
        extra = sorted(set(merged) - set(expected))
        raise DistributedError(
            f"the merged states hold {len(merged):,} images, not the {len(expected):,} "
            f"listed ({len(lost):,} missing, {len(extra):,} not listed); nothing reported"
        )


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
    whole = _Listing.of(gt, pred, options)
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
    _check_images(merged.keys, listing.expected(results))
    gt_skipped, pred_skipped = listing.skipped(results)
    orphans = sorted(o for r in results for o in r.orphans)
    counts = ReadCounts()
    for result in results:
        counts = counts.plus(result.counts)
    gt_notes, pred_notes = counts.notes(options)
    skipped = (*_by_path(gt_skipped), *_by_path(pred_skipped))
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


def _run_parts(
    client: Client, shares: Sequence[Part], options: DaskOptions, retries: int
) -> list[PartResult]:
    """Every part's result, or the first failure (the other tasks are then cancelled)."""
    from distributed import as_completed

    address = _address_of(client)
    futures = client.map(part_state, shares, options=options, retries=retries, pure=False)
    part_of = {future.key: part for future, part in zip(futures, shares, strict=True)}
    results: list[PartResult] = []
    try:
        for future in as_completed(futures):
            part = part_of[future.key]
            try:
                results.append(future.result())
            except VocmatchError:
                raise  # the data's fault, not the cluster's: the same on every try
            except Exception as error:
                if _scheduler_lost(client, error):
                    raise DistributedError(
                        f"lost the Dask scheduler {address} with {len(results)} of "
                        f"{len(shares)} parts done; nothing reported"
                    ) from None
                raise DistributedError(
                    f"part {part.index} of {part.count} failed on every try "
                    f"({1 + retries}; a lost worker's tasks are retried by Dask): "
                    f"{_reason(error)}"
                ) from None
    finally:
        if client.status == "running":
            client.cancel(futures)
    return results


def _by_path(skipped: Sequence[SkippedFile]) -> tuple[SkippedFile, ...]:
    return tuple(sorted(skipped, key=lambda s: s.path))

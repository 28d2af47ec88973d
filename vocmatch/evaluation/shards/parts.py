"""A run in parts: the image keys split into parts, each part's files read and matched apart,
the parts' results put together once.

The one route of an evaluation (read -> class choice and geometry -> match into match
records -> join -> accumulate) has its images split here: :func:`split_parts` gives each
part its keys (the ``k``-th part holds the keys whose place in key order is ``k`` modulo the
parts, as ``--shard`` splits them), with their ground-truth and prediction files. A task
reads a part's files with the same reader as a run in one process, applies the class choice
and the geometry (:func:`read_part`) and matches its images; who runs the tasks is a
:class:`PartRunner`:

- :class:`LocalParts`, worker processes of this machine (a local run's ``jobs``): each task
  gives back its :class:`PartRecords` (:func:`part_records`: the match records themselves,
  pickled by the process pool, as the workers are this process's own children running
  this code);
- a Dask cluster (:mod:`vocmatch.evaluation.shards.on_dask`), whose workers need not be
  trusted: each task gives back a :class:`PartResult` (:func:`part_state`) holding its
  evaluator state as bytes of the versioned state format (never pickle).

Either way the joined images are checked to be exactly the listed ones (a run never
reports on part of its images), and the notes of the class choice and the geometry are
worded from the counts of every part
(:class:`~vocmatch.evaluation.shards.reading_notes.ReadCounts`): the numbers and the notes
of one process on the same files, because the records are the same and the accumulation is
the same code.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import os
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from vocmatch.core.model import SkippedFile
from vocmatch.core.preparation import Preparation
from vocmatch.core.protocol import Conventions
from vocmatch.errors import DistributedError, InputError, no_annotation_files
from vocmatch.evaluation.class_map import ClassChoice, choose_classes
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.score_counts import ScoreCounts
from vocmatch.evaluation.shards.reading_notes import ReadCounts
from vocmatch.evaluation.slice_records import SliceSpec
from vocmatch.evaluation.stages import orphan_files
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.parse import DEFAULT_MAX_BYTES, DirectoryListing
from vocmatch.readers.remote import StorageOptions, list_location, location_reader
from vocmatch.readers.scan import ColumnSet, read_listed_columns
from vocmatch.readers.shapes import Geometry, with_geometry
from vocmatch.readers.shards import listed_keys, shard_keys, shard_listing

if TYPE_CHECKING:
    from vocmatch.evaluation.preds_ahead import PredsAhead
    from vocmatch.evaluation.result import Evaluation, ImageResult

__all__ = [
    "PARTS_PER_WORKER",
    "GatheredParts",
    "ListedKeys",
    "LocalParts",
    "Part",
    "PartListing",
    "PartOptions",
    "PartRecords",
    "PartResult",
    "PartRunner",
    "check_images",
    "gathered",
    "gathered_parts",
    "key_ranges",
    "part_records",
    "part_state",
    "read_part",
    "run_parts",
    "split_parts",
    "unpickled_part_records",
]

R = TypeVar("R")

#: Parts per worker by default: small enough to even out slow workers (and, on a cluster,
#: to lose little when one is lost), large enough that a part costs little to send back.
PARTS_PER_WORKER = 4


@dataclass(frozen=True, slots=True)
class PartOptions:
    """What every task needs besides its files.

    Attributes:
        conventions: The protocol.
        fold_case: Lower-case class names before matching.
        score_thresholds: Per-class score thresholds, or None.
        max_bytes: Per-file size limit; larger files are skipped unread.
        storage_options: Options of the URLs' fsspec file systems.
        slices: Slices the tasks match with their images (their records keep them).
        keep_boxes: Tasks keep each image's per-box records and boxes in their states
            (for a report that lists or draws boxes).
        class_choice: Classes renamed, selected or merged before matching, or None.
        geometry: ``shape`` or ``box`` (:func:`~vocmatch.readers.shapes.with_geometry`).
        roots: The folders (or URLs) of the ground truth and the predictions as listed:
            the kept boxes name them, as one process's do.
        calibration: Those records keep what OCE and D-ECE read.
        preparation: Each image's predictions prepared before matching, or None.
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
    preparation: Preparation | None = None


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

    def file_count(self) -> int:
        """The files of both sides."""
        return len(self.gt_files) + len(self.pred_files)


@dataclass(frozen=True, slots=True)
class PartResult:
    """What a task on a cluster sends back.

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
    counts: ReadCounts = dataclasses.field(default_factory=ReadCounts)


@dataclass(frozen=True, slots=True)
class PartRecords:
    """What a task of a local run gives back: its images matched, and what the reading found.

    Attributes:
        records: The match records of the part's images.
        gt_skipped: Ground-truth files that could not be read.
        pred_skipped: Prediction files that could not be read.
        orphans: ``(key, path)`` of prediction files without ground truth.
        counts: The counts the notes of the class choice and the geometry are worded from.
        scores: How many boxes of each side have a score, after the class choice.
    """

    records: MatchRecords
    gt_skipped: tuple[SkippedFile, ...]
    pred_skipped: tuple[SkippedFile, ...]
    orphans: tuple[tuple[str, str], ...]
    counts: ReadCounts = dataclasses.field(default_factory=ReadCounts)
    scores: ScoreCounts = dataclasses.field(default_factory=ScoreCounts)

    def __reduce__(self) -> tuple[Callable[..., PartRecords], tuple[object, ...]]:
        """Pickled (by the process pool, back to the main process) with the records' widest
        integer arrays narrowed where they fit
        (:mod:`~vocmatch.evaluation.shards.narrowed_records`): the same records once
        unpickled, in fewer bytes."""
        from vocmatch.evaluation.shards.narrowed_records import narrowed

        fields = (self.gt_skipped, self.pred_skipped, self.orphans, self.counts, self.scores)
        return unpickled_part_records, (narrowed(self.records), *fields)


def unpickled_part_records(records: MatchRecords, *fields: Any) -> PartRecords:
    """A :class:`PartRecords` as pickled: its records' narrowed arrays widened again."""
    from vocmatch.evaluation.shards.narrowed_records import widened

    return PartRecords(widened(records), *fields)


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


def key_ranges(
    gt_files: Sequence[tuple[str, str]],
    pred_files: Sequence[tuple[str, str]],
    parts: int,
    sizes: Sequence[float] | None = None,
) -> tuple[Part, ...]:
    """Split the files by key into at most ``parts`` parts of consecutive keys, about as many
    files each (none empty): joined in part order, the parts' images are in key order as
    listed, and no image has to be moved.

    >>> [p.gt_files for p in key_ranges([("a", "g/a"), ("b", "g/b"), ("c", "g/c")], [], 2)]
    [(('a', 'g/a'), ('b', 'g/b')), (('c', 'g/c'),)]

    Args:
        gt_files: ``(key, path)`` of the ground-truth files.
        pred_files: ``(key, path)`` of the prediction files.
        parts: How many parts, at most.
        sizes: The parts' relative sizes in files, in part order (``parts`` of them,
            positive); by default all equal.

    Raises:
        InputError: ``parts`` is below 1, or ``sizes`` are not ``parts`` positive numbers.
    """
    if parts < 1:
        raise InputError(f"Expected at least one part, got {parts}")
    if sizes is None:
        sizes = [1.0] * parts
    if len(sizes) != parts or not all(size > 0 for size in sizes):
        raise InputError(f"Expected {parts} positive part sizes, got {list(sizes)}")
    gt, pred = sorted(gt_files), sorted(pred_files)
    total, whole = len(gt) + len(pred), sum(sizes)
    ends = itertools.accumulate(sizes[:-1])
    found = (_first_key_from(gt, pred, end * total / whole) for end in ends)
    bounds = sorted({b for b in found if b is not None})
    gt_cuts = [0, *(bisect_left(gt, (b,)) for b in bounds), len(gt)]
    pred_cuts = [0, *(bisect_left(pred, (b,)) for b in bounds), len(pred)]
    shares = [
        (tuple(gt[gt_cuts[j] : gt_cuts[j + 1]]), tuple(pred[pred_cuts[j] : pred_cuts[j + 1]]))
        for j in range(len(bounds) + 1)
    ]
    shares = [(g, p) for g, p in shares if g or p] or [((), ())]
    return tuple(Part(k + 1, len(shares), g, p) for k, (g, p) in enumerate(shares))


def _first_key_from(
    gt: Sequence[tuple[str, str]], pred: Sequence[tuple[str, str]], place: float
) -> str | None:
    """The least key of either side (both sorted) that at least ``place`` files of both
    sides come before, None if none does."""
    found = [
        side[i][0]
        for side, other in ((gt, pred), (pred, gt))
        if (i := _first_at(side, other, place)) < len(side)
    ]
    return min(found, default=None)


def _first_at(
    side: Sequence[tuple[str, str]], other: Sequence[tuple[str, str]], place: float
) -> int:
    """The first file of ``side`` whose key at least ``place`` files of both sides come
    before (``len(side)`` if none)."""
    low, high = 0, len(side)
    while low < high:
        middle = (low + high) // 2
        if middle + bisect_left(other, (side[middle][0],)) >= place:
            high = middle
        else:
            low = middle + 1
    return low


@dataclass(frozen=True, slots=True)
class ReadPart:
    """A part's files as read, after the class choice and the geometry.

    Attributes:
        gt: Ground-truth columns.
        pred: Prediction columns.
        counts: The counts of the files as read (before the class choice).
        orphans: ``(key, path)`` of prediction files without ground truth.
    """

    gt: ColumnSet
    pred: ColumnSet
    counts: ReadCounts
    orphans: tuple[tuple[str, str], ...]


def read_part(
    part: Part,
    options: PartOptions,
    read: Callable[[str, int], bytes] | None = None,
    given_pred: ColumnSet | None = None,
) -> ReadPart:
    """Read a part's files and apply the class choice and the geometry, as one process
    does to every file (the first half of every task); ``read(path, max_bytes)`` gives
    each file's bytes (by default :func:`~vocmatch.readers.remote.location_reader`'s).
    ``given_pred``: the part's predictions as read already (of a file of every image's,
    such as a COCO results file), in place of its prediction files."""
    if read is None:
        read = location_reader(options.storage_options)
    gt = read_listed_columns(part.gt_files, options.max_bytes, read)
    if given_pred is None:
        pred = read_listed_columns(part.pred_files, options.max_bytes, read)
    else:
        pred = given_pred
    counts = ReadCounts.of(gt, pred)
    gt = dataclasses.replace(gt, root=options.roots[0])
    pred = dataclasses.replace(pred, root=options.roots[1])
    if options.class_choice:
        # A chosen class may be in other parts only: the whole run's are checked once, from
        # every part's counts (ReadCounts.notes).
        gt, pred = choose_classes(gt, pred, options.class_choice, options.fold_case, whole=False)
    gt = with_geometry(gt, options.geometry, "ground truth")
    pred = with_geometry(pred, options.geometry, "predictions")
    return ReadPart(gt, pred, counts, orphan_files(gt, pred))


def part_state(part: Part, options: PartOptions) -> PartResult:
    """Read a part's files and give the evaluator state of its images (the task run on a
    cluster's worker).

    Raises:
        InputError: A file holds rotated boxes or polygons, and the state is to keep boxes.
    """
    from vocmatch.evaluation.shards.incremental import Evaluator

    found = read_part(part, options)
    evaluator = Evaluator(
        options.conventions, fold_case=options.fold_case,
        score_thresholds=options.score_thresholds, slices=options.slices,
        keep_boxes=options.keep_boxes, calibration=options.calibration,
        preparation=options.preparation,
    )  # fmt: skip
    evaluator.add_columns(found.gt, found.pred)
    state = evaluator.to_bytes()  # matched here, on the worker
    return PartResult(state, found.gt.skipped, found.pred.skipped, found.orphans, found.counts)


def part_records(
    part: Part,
    options: PartOptions,
    read: Callable[[str, int], bytes] | None = None,
    given_pred: ColumnSet | None = None,
) -> PartRecords:
    """Read a part's files and match its images (the task run by a local worker process):
    the records of the engine's stages on the part's columns, as a run in one process makes
    them of every image (rotated boxes and polygons matched by their regions), with the
    slices and the calibration inputs asked for and the classes' rankings (merged when
    joined); ``read`` gives each file's bytes and ``given_pred`` the predictions read
    already, as :func:`read_part` takes them."""
    from vocmatch.evaluation.to_records import Asked, match_records

    found = read_part(part, options, read, given_pred)
    gt, pred = found.gt, found.pred
    skipped = (gt.skipped, pred.skipped)
    asked = Asked(ranked=True, slices=options.slices, calibration=options.calibration)
    records = match_records(
        gt, pred, options.conventions, fold_case=options.fold_case,
        score_thresholds=options.score_thresholds, asked=asked, preparation=options.preparation,
    )  # fmt: skip
    return PartRecords(records, *skipped, found.orphans, found.counts, ScoreCounts.of(gt, pred))


class PartRunner(Protocol):
    """Who runs the tasks of a run in parts: worker processes here, or a Dask cluster."""

    def workers(self) -> int:
        """How many tasks run at once (parts are made a few times as many)."""

    def results(
        self, task: Callable[[Part, PartOptions], R], parts: Sequence[Part], options: PartOptions
    ) -> Iterator[tuple[Part, R]]:
        """``task(part, options)`` of every part, with its part, in any order.

        Raises:
            VocmatchError: A task raised one (the data's fault: the same on every try).
            DistributedError: The runner failed (a task that fails every time).
        """


@dataclass(frozen=True, slots=True)
class LocalParts:
    """Tasks run by worker processes of this machine
    (:func:`~vocmatch.readers.workers.worker_results`: at most one a core, stopped at once
    when the run ends by an error or an interruption).

    Attributes:
        jobs: Worker processes wanted (0: every core).
    """

    jobs: int

    def workers(self) -> int:
        """The workers started for many tasks."""
        from vocmatch.readers.workers import worker_count

        return worker_count(self.jobs, sys.maxsize)

    def results(
        self, task: Callable[[Part, PartOptions], R], parts: Sequence[Part], options: PartOptions
    ) -> Iterator[tuple[Part, R]]:
        """Every part's result, in part order; the workers exit while the caller joins the
        results (the interpreter's exit waits for any still ending)."""
        from vocmatch.readers.workers import worker_results

        tasks = [(part, options) for part in parts]
        with worker_results(task, tasks, self.jobs, wait_at_end=False) as results:
            yield from zip(parts, results, strict=True)


@dataclass(frozen=True, slots=True)
class PartListing:
    """The files of both sides, as listed before any task reads them."""

    gt: DirectoryListing
    pred: DirectoryListing

    @classmethod
    def of(
        cls,
        gt: str | os.PathLike[str],
        pred: str | os.PathLike[str],
        storage_options: StorageOptions | None = None,
    ) -> PartListing:
        """The files below ``gt`` and ``pred`` (folders or fsspec URLs).

        Raises:
            InputError: A location cannot be listed, or holds no annotation file.
        """
        gt_listing = list_location(gt, storage_options)
        pred_listing = list_location(pred, storage_options)
        if not gt_listing.files:
            raise no_annotation_files(os.fspath(gt), gt_listing.skipped)
        return cls(gt_listing, pred_listing)

    def file_count(self) -> int:
        """The files to read, of both sides."""
        return len(self.gt.files) + len(self.pred.files)

    def skipped(
        self, results: Sequence[PartResult | PartRecords]
    ) -> tuple[list[SkippedFile], list[SkippedFile]]:
        """The files skipped, by the listing and by the tasks: ground truth, predictions."""
        gt = [*self.gt.skipped, *(s for r in results for s in r.gt_skipped)]
        pred = [*self.pred.skipped, *(s for r in results for s in r.pred_skipped)]
        return gt, pred

    def expected(self, results: Sequence[PartResult | PartRecords]) -> list[str]:
        """The keys the merged images must be: every ground-truth file read."""
        gt_skipped, pred_skipped = self.skipped(results)
        unreadable = {s.key for s in (*gt_skipped, *pred_skipped) if s.key is not None}
        return [k for k, _ in self.gt.files if k not in unreadable]

    def orphans(self, results: Sequence[PartResult | PartRecords]) -> list[tuple[str, str]]:
        """The prediction files without ground truth that the tasks found, by key, but those
        whose key names a file the listing left out (reported as skipped, as in one
        process)."""
        unreadable = {s.key for s in (*self.gt.skipped, *self.pred.skipped) if s.key is not None}
        return sorted(o for r in results for o in r.orphans if o[0] not in unreadable)

    def of_shard(self, shard: tuple[int, int]) -> PartListing:
        """The files of the ``shard[0]``-th of ``shard[1]`` shards of the images (as a local
        shard reads them: by place among the listed ground-truth keys); the first shard
        also holds the prediction files of no ground-truth image, to report them once."""
        keys = listed_keys(self.gt)
        chosen = shard_keys(keys, shard)
        pred_chosen: frozenset[str] | set[str] = chosen
        if shard[0] == 1:
            listed = set(keys)
            pred_chosen = chosen | {k for k in listed_keys(self.pred) if k not in listed}
        return PartListing(shard_listing(self.gt, chosen), shard_listing(self.pred, pred_chosen))


def run_parts(
    listing: PartListing,
    runner: PartRunner,
    task: Callable[[Part, PartOptions], R],
    options: PartOptions,
    *,
    parts: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    by_ranges: bool = False,
    sizes: Callable[[int, int], Sequence[float]] | None = None,
) -> list[R]:
    """Every part's result: the keys split into ``parts`` parts (by default
    :data:`PARTS_PER_WORKER` per worker, at most one a key), each read by a task.

    Args:
        listing: The files of both sides.
        runner: Who runs the tasks.
        task: What each task runs: :func:`part_records` or :func:`part_state`.
        options: What every task needs besides its files.
        parts: How many parts.
        progress: Told how many files are read, of how many, as parts come back.
        by_ranges: Parts of consecutive keys (:func:`key_ranges`) rather than every
            ``parts``-th key (:func:`split_parts`).
        sizes: ``sizes(parts, workers)``, the relative sizes of parts of consecutive
            keys (:func:`key_ranges`), in part order; by default all equal.

    Returns:
        The results, in the order the parts came back.
    """
    if parts is None:
        parts = PARTS_PER_WORKER * max(1, runner.workers())
    gt, pred = listing.gt.files, listing.pred.files
    if by_ranges:
        weights = None if sizes is None else sizes(parts, max(1, runner.workers()))
        shares = key_ranges(gt, pred, parts, weights)
    else:
        keys = len({k for k, _ in gt} | {k for k, _ in pred})
        shares = split_parts(gt, pred, max(1, min(parts, keys)))
    total, done = listing.file_count(), 0
    results: list[R] = []
    for part, result in runner.results(task, shares, options):
        results.append(result)
        done += part.file_count()
        if progress is not None:
            progress(done, total)
    return results


def check_images(merged: Sequence[str], expected: Sequence[str]) -> None:
    """Refuse merged images that are not exactly the listed ones.

    Raises:
        DistributedError: They are not.
    """
    if tuple(merged) != tuple(expected):  # a tuple is not copied
        lost = sorted(set(expected) - set(merged))
        extra = sorted(set(merged) - set(expected))
        raise DistributedError(
            f"the merged states hold {len(merged):,} images, not the {len(expected):,} "
            f"listed ({len(lost):,} missing, {len(extra):,} not listed); nothing reported"
        )


def read_counts(results: Sequence[PartResult | PartRecords]) -> ReadCounts:
    """The counts of every part, added up."""
    counts = ReadCounts()
    for result in results:
        counts = counts.plus(result.counts)
    return counts


def skipped_by_path(skipped: Sequence[SkippedFile]) -> tuple[SkippedFile, ...]:
    """Skipped files sorted by path, as one process reports them."""
    return tuple(sorted(skipped, key=lambda s: s.path))


@dataclass(frozen=True, slots=True)
class GatheredParts:
    """The parts of a local run put together, before their records are accumulated.

    Attributes:
        records: Every part's match records, joined in key order.
        options: The options the tasks used.
        gt_skipped: Ground-truth files skipped (by the listing or a task), by path.
        pred_skipped: Prediction files skipped, by path.
        orphans: Prediction files without ground truth, by key.
        counts: The counts of every part's files as read (the notes of the class choice
            and the geometry).
        gt_keys: The keys of the ground-truth files read, in key order.
        pred_keys: The keys of every prediction file listed, read or not, sorted.
        scores: How many boxes of each side have a score.
    """

    records: MatchRecords
    options: PartOptions
    gt_skipped: tuple[SkippedFile, ...]
    pred_skipped: tuple[SkippedFile, ...]
    orphans: tuple[tuple[str, str], ...]
    listing: PartListing
    counts: ReadCounts
    gt_keys: tuple[str, ...]
    pred_keys: tuple[str, ...]
    scores: ScoreCounts

    def evaluation(self, images: list[ImageResult] | None = None) -> Evaluation:
        """The records accumulated, with what the reading found: the evaluation of one
        process on the same files (``images``: each image's result, made already from the
        parts' records: :func:`~vocmatch.evaluation.part_images.joined_image_results`).

        Raises:
            InputError: A class chosen is in neither set; a score threshold is set and no
                prediction has a score.
            AnnotationError: With ``fold_case``, two names of the class map fold to one
                and map to different classes.
        """
        from vocmatch.evaluation.from_records import Findings, evaluation_of

        options = self.options
        gt_notes, pred_notes = self.counts.notes(
            options.class_choice, options.fold_case, options.geometry
        )
        findings = Findings(
            skipped=(*self.gt_skipped, *self.pred_skipped),
            orphan_pred=tuple(path for _, path in self.orphans),
            notes=(*self.listing.gt.notes, *gt_notes, *self.listing.pred.notes, *pred_notes),
        )
        return evaluation_of(
            self.records, options.conventions, fold_case=options.fold_case,
            score_thresholds=options.score_thresholds, findings=findings, images=images,
        )  # fmt: skip

    def refuse_no_ground_truth(self, where: str | os.PathLike[str]) -> None:
        """Refuse a run none of whose ground-truth files could be read, as one process does.

        Raises:
            InputError: No ground-truth file was read.
        """
        if not self.gt_keys:
            raise no_annotation_files(os.fspath(where), self.gt_skipped)


@dataclass(frozen=True, slots=True)
class ListedKeys:
    """The keys of a listing's files, taken while its parts are read and matched: what
    :func:`gathered` would take from the listing once they are back, where no file whose
    key is known was skipped.

    Attributes:
        gt: The ground-truth files' keys, as listed.
        pred: The prediction files' keys, sorted, each once.
    """

    gt: tuple[str, ...]
    pred: tuple[str, ...]

    @classmethod
    def of(cls, listing: PartListing) -> ListedKeys:
        """The keys of ``listing``'s files."""
        return cls(
            tuple(k for k, _ in listing.gt.files),
            _sorted_keys([k for k, _ in listing.pred.files], set()),
        )


def gathered_parts(
    listing: PartListing,
    results: list[PartRecords],
    options: PartOptions,
    listed: ListedKeys | None = None,
    ahead: PredsAhead | None = None,
) -> GatheredParts:
    """The parts' records joined in key order, checked to be the listed images' and none
    other's. ``results`` is emptied: each part's records are let go once copied, so that
    the run holds them about once; ``listed``: the listing's keys, taken ahead; ``ahead``:
    the parts' predictions put end to end as they came back
    (:class:`~vocmatch.evaluation.preds_ahead.PredsAhead`).

    Raises:
        InputError: A part holds rotated boxes or polygons (no records: the caller reads
            such runs in one process).
        DistributedError: The joined images are not the listed ones.
    """
    # What the reading found, kept apart from the records, which are let go as joined.
    found = [PartResult(b"", r.gt_skipped, r.pred_skipped, r.orphans, r.counts) for r in results]
    scores = ScoreCounts()
    for result in results:
        scores = scores + result.scores
    taken = [r.records for r in results]
    results.clear()
    records = MatchRecords.taken_in_key_order(taken, options.conventions, ahead)
    return gathered(listing, found, records, scores, options, listed)


def gathered(
    listing: PartListing,
    found: Sequence[PartResult],
    records: MatchRecords,
    scores: ScoreCounts,
    options: PartOptions,
    listed: ListedKeys | None = None,
) -> GatheredParts:
    """The run's records joined already (``records``), with what the reading of its parts
    found (``found``: skipped files, orphans, counts) and its scores' counts, checked to be
    the listed images' and none other's (``listed``: the listing's keys, taken ahead).

    Raises:
        DistributedError: The joined images are not the listed ones.
    """
    gt_skipped, pred_skipped = listing.skipped(found)
    if listed is not None and all(s.key is None for s in (*gt_skipped, *pred_skipped)):
        # No file of a known key skipped: every listed key is read, the keys as listed.
        gt_keys, pred_keys = listed.gt, listed.pred
        check_images(records.keys, gt_keys)
    else:
        check_images(records.keys, listing.expected(found))
        pred_keys = _sorted_keys(
            [k for k, _ in listing.pred.files], {s.key for s in pred_skipped if s.key}
        )
        unreadable_gt = {s.key for s in gt_skipped if s.key is not None}
        gt_keys = tuple(k for k, _ in listing.gt.files if k not in unreadable_gt)
    return GatheredParts(
        records,
        options,
        skipped_by_path(gt_skipped),
        skipped_by_path(pred_skipped),
        tuple(listing.orphans(found)),
        listing,
        read_counts(found),
        gt_keys,
        pred_keys,
        scores,
    )


def _sorted_keys(listed: list[str], others: set[str]) -> tuple[str, ...]:
    """The keys of a listing (sorted, as listed, unless told otherwise) and ``others``,
    sorted, each once."""
    if not others and all(map(operator.lt, listed, listed[1:])):
        return tuple(listed)
    return tuple(sorted({*listed, *others}))

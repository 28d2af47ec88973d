"""A local run in parts: with ``jobs`` above one, worker processes each read and match a part
of the images, and this process joins their match records and accumulates them once.

This is the route of a Dask run (:mod:`vocmatch.evaluation.shards.parts`: the same split into
parts, the same reading, class choice and geometry, the same join and accumulation), with
this machine's worker processes as the runner: the report is that of one process, bit for
bit. The parts' records carry what the extras read (the slices' matching, the calibration's
inputs, the classes' rankings), so slices, the calibration, the counting, the bootstrap and
the target thresholds run in parts too. The runs that need more than records read the
files here instead (in parallel, ``jobs`` processes), then match them here:

- an output or an extra that lists or draws boxes (HTML and JUnit reports, the error
  analysis: :meth:`~vocmatch.run.evaluate.EvalRequest.keeps_boxes`);
- a split, and predictions in a format other than XML files (a COCO results file is one
  file for every image; YOLO's boxes are scaled by the ground truth's sizes): the
  predictions are read here, with the ground truth;
- fewer than :data:`FEW_FILES` files, read faster here than by starting processes;
- with the compiled reader, fewer than :data:`THREADED_FILES` files: its threads read them
  here (:func:`vocmatch.readers.scan.reads_in_threads`) and the compiled matching matches
  them faster than processes read, match and send back their parts. Larger runs go in
  parts, which keeps each process's memory to its part.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from vocmatch.errors import no_annotation_files

if TYPE_CHECKING:
    from vocmatch.core.protocol import Conventions
    from vocmatch.evaluation.part_images import PartImages
    from vocmatch.evaluation.preds_ahead import PredsAhead
    from vocmatch.evaluation.result import Evaluation
    from vocmatch.evaluation.shards.parts import Part, PartOptions, PartRunner
    from vocmatch.run.evaluate import EvalRequest
    from vocmatch.run.in_parts_found import EvaluatedInParts

R = TypeVar("R")

__all__ = [
    "FEW_FILES",
    "THREADED_FILES",
    "evaluated_in_parts",
    "runs_in_parts",
    "tapered_sizes",
]

#: Fewer files than this are read and matched in this process (as the column reader reads
#: them): starting worker processes would cost more than it saves.
FEW_FILES = 64

#: Fewer files than this, read by the compiled reader's threads, are matched in this process.
#: 5,000 images (10,000 files, 100 predictions each; 2 cores): 0.98 s against 1.26 s in
#: parts; 80,000 images (Objects365-shaped): as fast either way, but 1.0 GiB at peak in one
#: process against 0.6 GiB in parts.
THREADED_FILES = 40_000


def runs_in_parts(request: EvalRequest) -> bool:
    """Whether the request may run in parts (see the module doc): more than one worker
    process, XML predictions, no split, and a report that lists or draws no box."""
    # The workers LocalParts starts for many tasks, without importing the parts' machinery
    # for a run that needs none.
    from vocmatch.readers.workers import worker_count

    return (
        request.pred_format == "voc"
        and request.split is None
        and not request.keeps_boxes()
        and worker_count(request.jobs, sys.maxsize) > 1
    )


def evaluated_in_parts(
    request: EvalRequest, progress: Callable[[int, int], None] | None = None
) -> EvaluatedInParts | None:
    """The request's files read and matched in parts by worker processes, joined and
    accumulated here; None when the run is to be read in this process after all (few
    files, fewer than :data:`THREADED_FILES` for the compiled reader's threads, or rotated
    boxes and polygons found).

    Args:
        request: The request (:func:`runs_in_parts` says it may run in parts).
        progress: Told how many files are read, of how many, as parts come back.

    Raises:
        InputError: No annotation file, none that could be read, or not a single
            ground-truth image pairs with a prediction; a class chosen is in neither set;
            a score threshold and no prediction with a score.
        AnnotationError: With ``fold_case``, two names of the class map fold to one and
            map to different classes.
    """
    from vocmatch.readers.remote import list_location
    from vocmatch.readers.scan import reads_in_threads
    from vocmatch.readers.voc_layout import annotation_folder
    from vocmatch.run.read_stage import refuse_unpaired_keys

    annotations, _ = annotation_folder(request.gt)
    # Listed as PartListing.of lists them, and counted before the parts' machinery is
    # imported: a run of few files reads them here and needs none of it.
    gt_listing, pred_listing = list_location(annotations), list_location(request.pred)
    if not gt_listing.files:
        raise no_annotation_files(os.fspath(annotations), gt_listing.skipped)
    files = len(gt_listing.files) + len(pred_listing.files)
    if files < FEW_FILES or (files < THREADED_FILES and reads_in_threads()):
        return None
    from vocmatch.evaluation.shards.parts import (
        ListedKeys,
        LocalParts,
        PartListing,
        gathered_parts,
        part_records,
        run_parts,
    )
    from vocmatch.run.in_parts_found import EvaluatedInParts
    from vocmatch.run.remote_inputs import part_options

    listing = PartListing(gt_listing, pred_listing)
    options = part_options(request, (listing.gt.root, listing.pred.root))
    from vocmatch.evaluation.preds_ahead import PredsAhead
    from vocmatch.render.rows_ahead import rows_asked

    runner = ImagesAsPartsCome(
        LocalParts(request.jobs), options.conventions, [], [] if rows_asked() else None,
        PredsAhead(),
    )  # fmt: skip
    listed: list[ListedKeys] = []

    def ahead() -> None:
        import_the_tail()
        listed.append(ListedKeys.of(listing))

    results = run_parts(
        listing, runner, part_records, options, progress=_ahead(progress, ahead),
        by_ranges=True, sizes=tapered_sizes,
    )  # fmt: skip
    # results emptied; the listing's keys taken as the first part came back.
    gathered = gathered_parts(
        listing, results, options, listed[0] if listed else None, runner.preds
    )
    gathered.refuse_no_ground_truth(annotations)
    refuse_unpaired_keys(gathered.gt_keys, gathered.pred_keys, request.pred)
    from vocmatch.evaluation.part_images import joined_image_results

    images = joined_image_results(runner.made, gathered.records)
    evaluation = gathered.evaluation(images)
    if images is not None:
        evaluation = runner.with_rows(evaluation)
    return EvaluatedInParts(evaluation, gathered.records, gathered.scores)


def tapered_sizes(parts: int, workers: int) -> list[float]:
    """The relative sizes of a local run's parts, in the order the workers take them, by
    rounds of ``workers`` parts: the first round as large as parts of equal size (the
    workers' first files sent as soon as with those), then each round smaller than the one
    before, so that the workers end close together (one idles at most about a small
    part's time, not an even part's) and the part the main process unpickles and makes the
    image results of after the last worker ends is a small one.

    >>> tapered_sizes(8, 2)
    [2.0, 2.0, 3.0, 3.0, 2.0, 2.0, 1.0, 1.0]
    >>> tapered_sizes(3, 1)
    [1.5, 2.0, 1.0]
    """
    workers = max(1, workers)
    rounds = -(-parts // workers)
    return [rounds / 2 if k < workers else float(rounds - k // workers) for k in range(parts)]


@dataclass(frozen=True, slots=True)
class ImagesAsPartsCome:
    """A runner of a local run's parts that makes each part's image results as the part
    comes back (:func:`~vocmatch.evaluation.part_images.part_image_results`), while the
    workers match the others: after the last part, the evaluation only puts them together.
    With ``rows``, it makes the part's rows of the JSON report then too
    (:func:`~vocmatch.render.rows_ahead.part_rows`), which the report joins.

    Attributes:
        runner: Who runs the tasks.
        conventions: The protocol the parts are matched under.
        made: Each part's image results, in the order the parts came back.
        rows: Each part's JSON rows, in the same order; None when none are made.
        preds: Each part's predictions put end to end as it comes back (the join takes
            them where the parts came back in key order), or None.
    """

    runner: PartRunner
    conventions: Conventions
    made: list[PartImages]
    rows: list[bytes] | None = None
    preds: PredsAhead | None = None

    def workers(self) -> int:
        """The runner's workers."""
        return self.runner.workers()

    def results(
        self, task: Callable[[Part, PartOptions], R], parts: Sequence[Part], options: PartOptions
    ) -> Iterator[tuple[Part, R]]:
        """The runner's results, each part's image results made as it comes back (of the
        parts whose result holds match records)."""
        from vocmatch.evaluation.part_images import part_image_results
        from vocmatch.evaluation.shards.parts import PartRecords
        from vocmatch.render.rows_ahead import part_rows

        for part, result in self.runner.results(task, parts, options):
            if isinstance(result, PartRecords):
                made = part_image_results(result.records, self.conventions)
                self.made.append(made)
                if self.rows is not None:
                    self.rows.append(part_rows(made.images))
                if self.preds is not None:
                    self.preds.add(result.records)
            yield part, result

    def with_rows(self, evaluation: Evaluation) -> Evaluation:
        """``evaluation`` whose images carry the parts' JSON rows, where they were made of
        its images (:func:`~vocmatch.render.rows_ahead.with_rows`)."""
        if self.rows is None:
            return evaluation
        from dataclasses import replace

        from vocmatch.render.rows_ahead import with_rows

        made = [(p.images, rows) for p, rows in zip(self.made, self.rows, strict=True)]
        return replace(evaluation, images=with_rows(evaluation.images, made))


def _ahead(
    progress: Callable[[int, int], None] | None, ahead: Callable[[], None]
) -> Callable[[int, int], None]:
    """``progress``, and ``ahead`` called when the first part comes back (the workers busy
    with the others): what the join and the accumulation need once the last is in, made
    while the main process waits for it."""
    started = False

    def told(done: int, total: int) -> None:
        nonlocal started
        if not started:
            started = True
            ahead()
        if progress is not None:
            progress(done, total)

    return told


def import_the_tail() -> None:
    """Import the modules the join, the accumulation and the report's checks import when
    first used, so that their loading is not on the path from the last part to the report
    (some 30 ms of an 80,000-image run's)."""
    # The compiled kernels are loaded by their importer (vocmatch.compiled), when built.
    import concurrent.futures.thread  # noqa: F401

    import vocmatch.evaluation.calibration_inputs
    import vocmatch.evaluation.coco_tables
    import vocmatch.evaluation.scoring
    import vocmatch.evaluation.summary_stats
    import vocmatch.evidence.gates
    import vocmatch.readers.unpaired  # noqa: F401
    from vocmatch.compiled import kernels

    kernels("vocmatch.evaluation.fastaccumulate")
    kernels("vocmatch.evaluation.fastsummary")

"""The one route of an evaluation on columns: match every image into match records, then
accumulate them.

The test suite's reference evaluator (``tests/reference.py``) walks image by image and class
by class, as the definitions read. :func:`evaluate_columns` computes the same
:class:`~vocmatch.evaluation.scoring.Evaluation` from
:class:`~vocmatch.readers.scan.ColumnSet` columns without a Python loop per image-class pair,
by the route every evaluation takes:

* :func:`~vocmatch.evaluation.to_records.match_records` runs the stages of
  :mod:`vocmatch.evaluation.stages` (select, prepare, pair and match, count) and keeps, of
  each image, its match records (the per-image counts, and each prediction's match flags at
  every IoU threshold and COCO area range);
* :func:`~vocmatch.evaluation.from_records.evaluation_of` accumulates records (each class's AP,
  curve and pycocotools' numbers, :mod:`vocmatch.evaluation.accumulate`), whether they come
  from one run, as here, from shards saved and merged, or from an
  :class:`~vocmatch.evaluation.shards.incremental.Evaluator`.

A local run is one shard: the records are the whole run's, so only its own reading of scores
is kept, and the per-box records (the HTML report's, the error analysis') are kept when asked
for. AP, the sweep and pycocotools' accumulation use the same functions as the reference, on
arrays in the same order, so every number is bit-identical (a test checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from vocmatch.core.preparation import Preparation
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.evaluation.from_records import Findings, evaluation_of
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.result import AREA_NAMES, Evaluation
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.evaluation.to_records import Asked, match_records
from vocmatch.readers.scan import ColumnSet

if TYPE_CHECKING:
    from vocmatch.evaluation.matched import MatchedColumns
    from vocmatch.evaluation.slice_records import SliceSpec

__all__ = ["StageProgress", "evaluate_columns"]

#: Called as ``progress(stage, stages_done, stages_total)`` as an evaluation goes on.
StageProgress = Callable[[str, int, int], None]


def evaluate_columns(
    gt: ColumnSet,
    pred: ColumnSet,
    conventions: Conventions | None = None,
    keep_matches: bool = True,
    *,
    fold_case: bool = False,
    progress: StageProgress | None = None,
    matched: Callable[[MatchedColumns], None] | None = None,
    score_thresholds: ScoreThresholds | None = None,
    kept: Callable[[MatchRecords], None] | None = None,
    slices: tuple[SliceSpec, ...] = (),
    calibration: bool = False,
    preparation: Preparation | None = None,
) -> Evaluation:
    """Evaluate column sets (what :func:`vocmatch.evaluation.scoring.evaluate` does with
    annotations read box by box).

    The run is one shard of the one route: every image matched into match records
    (:func:`~vocmatch.evaluation.to_records.match_records`, the stages of
    :mod:`vocmatch.evaluation.stages`), then accumulated
    (:func:`~vocmatch.evaluation.from_records.evaluation_of`), as records saved by shards and
    merged are.

    Args:
        gt: Ground truth read by :func:`vocmatch.readers.scan.read_columns`.
        pred: Predictions read the same way.
        conventions: The protocol; defaults to ``protocol("default")``.
        keep_matches: Build the per-box :class:`~vocmatch.evaluation.box_outcomes.Match` records of
            every image (needed by the HTML report and the error analysis; costly on large sets).
        fold_case: Lower-case every class name before matching.
        progress: Told each stage as it starts (selecting and sorting the boxes, pairing,
            matching, each COCO area range, per-image results, AP per class) with the number
            of stages done and in all, and ``("done", n, n)`` at the end; the first as soon
            as the evaluation starts. Every image goes through a stage at once.
        matched: Given the :class:`~vocmatch.evaluation.matched.MatchedColumns` once every
            image is matched; see :func:`~vocmatch.evaluation.matched.evaluate_matched`.
        score_thresholds: Count only the predictions at or above their class's score
            threshold (TP, FP, FN, per-image results, per-box records); AP, the curves and
            the COCO numbers still use every prediction (see :mod:`vocmatch.evaluation.thresholds`).
        kept: Given the match records once they are accumulated.
        slices: Match each value of these slices too (the records'
            :attr:`~vocmatch.evaluation.records.MatchRecords.slices`).
        calibration: Keep in the records what OCE and D-ECE read.
        preparation: Prepare each image's predictions before matching (the score
            pre-filter, NMS, the cap per image); the evaluation counts what it removed.

    Raises:
        InputError: A score threshold is given and no prediction has a score; the
            preparation meets a prediction without a score, or NMS a rotated box or polygon.

    Returns:
        The evaluation.
    """
    conv = conventions or protocol("default")
    stage = _Stages(progress, conv.summary == "coco", bool(slices))
    orphans: list[tuple[str, ...]] = []  # the selection's, found once
    asked = Asked(
        whole_run=True, detail=keep_matches, stage=stage, matched=matched, slices=slices,
        calibration=calibration, orphans=orphans.append,
    )  # fmt: skip
    records = match_records(
        gt, pred, conv, fold_case=fold_case, score_thresholds=score_thresholds, asked=asked,
        preparation=preparation,
    )  # fmt: skip
    stage("AP per class")
    findings = Findings(
        skipped=(*gt.skipped, *pred.skipped),
        orphan_pred=orphans[0],
        notes=(*gt.notes, *pred.notes),
    )
    evaluation = evaluation_of(
        records, conv, fold_case=fold_case, score_thresholds=score_thresholds, findings=findings
    )
    stage.done()
    if kept is not None:
        kept(records)
    return evaluation


class _Stages:
    """Tells ``progress`` each stage as it starts (see :func:`evaluate_columns`)."""

    __slots__ = ("_done", "_progress", "_total")

    def __init__(self, progress: StageProgress | None, coco_summary: bool, slices: bool) -> None:
        self._progress = progress
        self._total = 6 + (len(AREA_NAMES) if coco_summary else 0) + int(slices)
        self._done = 0

    def __call__(self, name: str) -> None:
        if self._progress is not None:
            self._progress(name, self._done, self._total)
        self._done += 1

    def done(self) -> None:
        if self._progress is not None:
            self._progress("done", self._total, self._total)

"""The evaluator on columns: every image and class matched at once with numpy.

:func:`vocmatch.evaluation.scoring.evaluate` walks image by image and class by class, which
reads like the definitions and serves as the reference. This module computes the same
:class:`~vocmatch.evaluation.scoring.Evaluation` from :class:`~vocmatch.readers.scan.ColumnSet`
columns without a Python loop per image-class pair:

* every ground-truth/prediction pair of the same image and class is listed once, and its IoU
  computed by :func:`vocmatch.core.iou.pair_intersection` and
  :func:`vocmatch.core.iou.iou_from_intersection`, the arithmetic of
  :func:`vocmatch.core.iou.iou_matrix`;
* greedy matching is sequential only within an image-class, so it runs rank by rank: step
  ``r`` matches the ``r``-th highest-scored prediction of every image-class at every
  threshold at once;
* AP, the sweep and pycocotools' accumulation use the same functions as the reference, on
  arrays in the same order, so every number is bit-identical (a test checks it).

This module runs the stages (:mod:`vocmatch.evaluation.stages`: select, prepare, pair and
match, count); the per-image stage is :mod:`vocmatch.evaluation.per_image`, the per-class stage and
the area ranges' matchings :mod:`vocmatch.evaluation.per_class`, and the records the stages
hand on :mod:`vocmatch.evaluation.stage_inputs`. What crosses images, each class's ranking,
AP, curve and pycocotools' accumulation, is in :mod:`vocmatch.evaluation.accumulate`, read
from match flags, so that :mod:`vocmatch.evaluation.records` accumulates records merged from
shards with the same functions.

Predictions without scores (paired highest IoU first) and sets holding rotated boxes or
polygons (exact region overlap) go through the reference evaluator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.protocol import Conventions, protocol
from vocmatch.errors import InputError
from vocmatch.evaluation.per_class import (
    AREA_NAMES,
    build_class_results,
    coco_numbers,
    per_class_ap,
)
from vocmatch.evaluation.per_image import build_image_results, per_box_matches, per_image_counts
from vocmatch.evaluation.result import (
    COCO_AREAS,
    Evaluation,
    case_notes,
    finish,
    input_notes,
    score_notes,
    shape_notes,
)
from vocmatch.evaluation.stage_inputs import (
    Areas,
    RankingScores,
    Selection,
)
from vocmatch.evaluation.stages import (
    MatchedColumns,
    count_outcomes,
    distinct_count,
    fold_columns,
    matched_columns,
    pair_and_match,
    prepare_cells,
    select_images,
    suspicious_boxes,
)
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.scan import ColumnSet

__all__ = ["StageProgress", "evaluate_columns", "evaluate_matched"]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
Int32Array = npt.NDArray[np.int32]
#: Called as ``progress(stage, stages_done, stages_total)`` as an evaluation goes on.
StageProgress = Callable[[str, int, int], None]


def evaluate_matched(
    gt: ColumnSet,
    pred: ColumnSet,
    conventions: Conventions | None = None,
    keep_matches: bool = True,
    *,
    fold_case: bool = False,
    progress: StageProgress | None = None,
    score_thresholds: ScoreThresholds | None = None,
) -> tuple[Evaluation, MatchedColumns | None]:
    """:func:`evaluate_columns`, and the arrays of its matching (of every prediction).

    Returns:
        The evaluation, and its :class:`MatchedColumns` (None only when no image was
        evaluated).
    """
    found: list[MatchedColumns] = []
    evaluation = evaluate_columns(
        gt, pred, conventions, keep_matches, fold_case=fold_case, progress=progress,
        matched=found.append, score_thresholds=score_thresholds,
    )  # fmt: skip
    return evaluation, (found[0] if found else None)


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
) -> Evaluation:
    """Evaluate column sets; the result equals :func:`vocmatch.evaluation.scoring.evaluate` on
    the same files, number for number.

    The evaluation runs in stages, each a function given and giving small records: select
    the images and boxes (:func:`select_images`), sort them into image-class cells
    (:func:`prepare_cells`), pair and match (:func:`pair_and_match`), pycocotools' numbers
    (:func:`~vocmatch.evaluation.per_class._coco`), the outcome at the IoU threshold
    (:func:`count_outcomes`), per-image results (:mod:`vocmatch.evaluation.per_image`) and per-class
    results (:mod:`vocmatch.evaluation.per_class`).

    Args:
        gt: Ground truth read by :func:`vocmatch.readers.scan.read_columns`.
        pred: Predictions read the same way.
        conventions: The protocol; defaults to ``protocol("default")``.
        keep_matches: Build the per-box :class:`~vocmatch.evaluation.scoring.Match` records of
            every image (needed by the HTML report and the error analysis; costly on large sets).
        fold_case: Lower-case every class name before matching.
        progress: Told each stage as it starts (selecting and sorting the boxes, pairing,
            matching, each COCO area range, per-image results, AP per class) with the number
            of stages done and in all, and ``("done", n, n)`` at the end; the first as soon
            as the evaluation starts. Every image goes through a stage at once.
        matched: Given the :class:`MatchedColumns` once every image is matched; see
            :func:`evaluate_matched`.
        score_thresholds: Count only the predictions at or above their class's score
            threshold (TP, FP, FN, per-image results, per-box records); AP, the curves and
            the COCO numbers still use every prediction (see :mod:`vocmatch.evaluation.thresholds`).

    Raises:
        InputError: A score threshold is given and no prediction has a score.

    Returns:
        The evaluation.
    """
    conv = conventions or protocol("default")
    stage = _Stages(progress, conv.summary == "coco")
    stage("selecting boxes")
    names_note = case_notes([*gt.label_names, *pred.label_names], fold_case)
    if fold_case:
        gt, pred = fold_columns(gt), fold_columns(pred)
        score_thresholds = score_thresholds.folded() if score_thresholds else score_thresholds
    selection = select_images(gt, pred)
    if score_thresholds and not selection.scored and selection.pred_rows.size:
        raise InputError(
            f"a score threshold ({score_thresholds.describe()}) needs scored predictions, "
            "and none of the predictions has a <score> or <confidence>"
        )
    notes = [*_notes(gt, pred, selection, conv), *names_note]
    notes += shape_notes(_shapes_evaluated(gt, pred, selection), conv)
    stage("sorting boxes")
    prepared, by_score = prepare_cells(gt, pred, selection, conv, score_thresholds)
    # The sorted predictions hold rows and images from here on (as int32): the selection's
    # int64 copies, the size of the predictions, are let go.
    # (New empty arrays: an empty slice would be a view holding the whole buffer.)
    selection = replace(
        selection,
        pred_rows=np.zeros(0, dtype=selection.pred_rows.dtype),
        pred_image=np.zeros(0, dtype=selection.pred_image.dtype),
    )
    stage("pairing boxes")
    paired = pair_and_match(prepared, by_score, stage)
    del by_score
    # Continuous areas (a shape's own region's), as COCO's area ranges read them.
    areas = Areas(*paired.scan.space.region_areas())
    coco = coco_class_ap = None
    if conv.summary == "coco" and prepared.scored:
        coco, coco_class_ap = coco_numbers(prepared, paired, areas, stage)
        if not _coco_class_ap_reusable(conv, areas):
            coco_class_ap = None
    elif conv.summary == "coco":
        for name in AREA_NAMES:
            stage(f"COCO area {name}")
    # The scores are gathered again after pycocotools' numbers, which do not read them:
    # one array of every prediction less while those are computed.
    scores = RankingScores.of(prepared)
    if matched is not None:
        matched(matched_columns(prepared, selection, paired, areas, scores))
    del areas
    counted = count_outcomes(prepared, paired.matching, scores)
    n_images = len(selection.images)
    counts = per_image_counts(prepared, paired.matching, counted, n_images)
    stage("per-image results")
    records = per_box_matches(prepared, paired, counted, n_images) if keep_matches else None
    image_results = build_image_results(prepared, selection, counts, records)
    stage("AP per class")
    ap_values = per_class_ap(prepared, paired, counted, scores.kept, coco_class_ap)
    classes = build_class_results(prepared, paired.ranking, counted, scores.kept, ap_values)
    stage.done()
    return finish(
        conv, image_results, classes, coco, selection.skipped, selection.missing,
        selection.orphan, notes,
    )  # fmt: skip


class _Stages:
    """Tells ``progress`` each stage as it starts (see :func:`evaluate_columns`)."""

    __slots__ = ("_done", "_progress", "_total")

    def __init__(self, progress: StageProgress | None, coco_summary: bool) -> None:
        self._progress = progress
        self._total = 6 + (len(AREA_NAMES) if coco_summary else 0)
        self._done = 0

    def __call__(self, name: str) -> None:
        if self._progress is not None:
            self._progress(name, self._done, self._total)
        self._done += 1

    def done(self) -> None:
        if self._progress is not None:
            self._progress("done", self._total, self._total)


def _notes(gt: ColumnSet, pred: ColumnSet, selection: Selection, conv: Conventions) -> list[str]:
    """The notes of the reading, on scores and on odd values of the evaluated boxes."""
    gt_rows, pred_rows = selection.gt_rows, selection.pred_rows
    unscored_rows = pred_rows[np.isnan(pred.scores[pred_rows])]
    notes = [*gt.notes, *pred.notes]
    notes += score_notes(
        selection.scored,
        int(unscored_rows.size),
        pred_rows.size > 0,
        files=distinct_count(pred.image[unscored_rows]),
    )
    # Only boxes with a suspicious value can change the notes: hand over just those (usually
    # none), rather than copies of every box.
    gt_odd = gt_rows[suspicious_boxes(gt.boxes, None)[gt_rows]]
    pred_odd = pred_rows[suspicious_boxes(pred.boxes, pred.scores)[pred_rows]]
    notes += input_notes(
        [*gt.paths, *pred.paths],
        np.concatenate([gt.image[gt_odd], len(gt.paths) + pred.image[pred_odd]]),
        np.concatenate([gt.boxes[gt_odd], pred.boxes[pred_odd]]),
        np.concatenate([np.full(gt_odd.size, np.nan), pred.scores[pred_odd]]),
    )
    return notes


def _shapes_evaluated(gt: ColumnSet, pred: ColumnSet, selection: Selection) -> int:
    """Rotated boxes and polygons among the evaluated boxes."""
    gt_evaluated = np.zeros(gt.image.size, dtype=bool)
    gt_evaluated[selection.gt_rows] = True
    pred_evaluated = np.zeros(pred.image.size, dtype=bool)
    pred_evaluated[selection.pred_rows] = True
    return sum(1 for row, _ in gt.shapes if gt_evaluated[row]) + sum(
        1 for row, _ in pred.shapes if pred_evaluated[row]
    )


def _coco_class_ap_reusable(conv: Conventions, areas: Areas) -> bool:
    """A class's COCO AP (101 points, IoU 0.50:0.95) is pycocotools' area "all", maxDets 100
    entry whenever no box is large enough to leave that range: read it from there."""
    return (
        conv.interpolation == "101-point"
        and (conv.max_dets is None or conv.max_dets <= 100)
        and not (areas.gt > COCO_AREAS[0][1]).any()
        and not (areas.pred > COCO_AREAS[0][1]).any()
    )

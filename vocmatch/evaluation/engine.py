"""The evaluator on columns: every image and class matched at once with numpy.

:func:`vocmatch.evaluation.evaluate.evaluate` walks image by image and class by class, which
reads like the definitions and serves as the reference. This module computes the same
:class:`~vocmatch.evaluation.evaluate.Evaluation` from :class:`~vocmatch.readers.scan.ColumnSet`
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

This module is the matching half (select, prepare, pair and match, the area ranges'
matchings, per-image results); what crosses images, each class's ranking, AP, curve and
pycocotools' accumulation, is in :mod:`vocmatch.evaluation.accumulate`, read from match
flags, so that :mod:`vocmatch.evaluation.records` accumulates records merged from shards
with the same functions.

Predictions without scores (paired highest IoU first) and sets holding rotated boxes or
polygons (exact region overlap) go through the reference evaluator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.match import (
    Hits,
    RankedMatcher,
)
from vocmatch.core.model import Polygon, RotatedBox, SkippedFile
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.errors import InputError
from vocmatch.evaluation.accumulate import (
    AreaMatches,
    ClassCounts,
    ClassRanking,
    CocoOrder,
    RankedFlags,
    _segment_starts,
    class_ap_values,
    class_curves,
    class_ranking,
    class_results,
    coco_area,
)
from vocmatch.evaluation.candidates import Matching, PairScan, match_all
from vocmatch.evaluation.pair_space import PairSpace
from vocmatch.evaluation.result import (
    COCO_AREAS,
    ENORMOUS_COORDINATE,
    ClassResult,
    CocoStats,
    CocoSummary,
    Evaluation,
    ImageResult,
    Match,
    Outcome,
    SweepResult,
    case_notes,
    finish,
    input_notes,
    score_notes,
    shape_notes,
)
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.scan import ColumnSet

__all__ = ["MatchedColumns", "evaluate_columns", "evaluate_matched", "fold_columns"]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
Int32Array = npt.NDArray[np.int32]
#: Called as ``progress(stage, stages_done, stages_total)`` as an evaluation goes on.
StageProgress = Callable[[str, int, int], None]
_AREA_NAMES = ("all", "small", "medium", "large")  # of COCO_AREAS, in order


@dataclass(frozen=True, slots=True)
class MatchedColumns:
    """The evaluator's arrays once every image is matched: what analyses that re-read the
    matching (bootstrap intervals, slices, calibration) start from, so that they count
    exactly what the evaluation counted.

    Ground truth is sorted by (image, class, file order), kept predictions by (image, class,
    descending score, file order); ``image`` indices run over the evaluated images
    (``Evaluation.images``), ``class`` indices over ``class_names``.

    Attributes:
        conventions: The conventions of the evaluation.
        gt: The ground-truth columns (class names folded when the evaluation folded them).
        pred: The prediction columns.
        image_rows: ``(I,)`` each evaluated image's index in ``gt.keys``.
        class_names: The classes, sorted.
        thresholds: ``(T,)`` the IoU thresholds matched at, ascending (the evaluation
            threshold, the sweep and the AP thresholds).
        pairs: The same-image, same-class pairs that can match, for :meth:`match` (kept or
            scored again in bounded pieces).
        scored: The predictions carry scores (else they were paired highest IoU first).
        gt_rows: ``(G,)`` each ground truth's row in ``gt``.
        gt_image: ``(G,)``.
        gt_class: ``(G,)``.
        gt_ignore: ``(G,)`` ignored under the protocol (``difficult``).
        gt_crowd: ``(G,)`` a crowd region (``--difficult crowd``).
        gt_area: ``(G,)`` continuous area (a rotated box's or polygon's own region's), as
            COCO's area ranges read it.
        pred_rows: ``(P,)`` each kept prediction's row in ``pred``.
        pred_image: ``(P,)``.
        pred_class: ``(P,)``.
        pred_score: ``(P,)`` scores, ``-inf`` where a prediction has none.
        pred_rank: ``(P,)`` its place among its image-class's predictions by score.
        pred_area: ``(P,)`` continuous area, as ``gt_area``.
        ranked: Per class, its kept predictions (indices into the ``pred_*`` arrays) in the
            ranking AP is computed on: stable, by descending score, ties in image then file
            order.
        hit_threshold: ``(H,)`` threshold index of each matched pair of the matching.
        hit_pred: ``(H,)`` its prediction.
        hit_gt: ``(H,)`` its ground truth.
        hit_iou: ``(H,)`` the pair's IoU.
        pred_counted: ``(P,)`` the prediction counts towards TP and FP (its score is at or
            above its class's score threshold; every one without thresholds). AP keeps all.
    """

    conventions: Conventions
    gt: ColumnSet
    pred: ColumnSet
    image_rows: IntArray
    class_names: tuple[str, ...]
    thresholds: FloatArray
    pairs: PairScan
    scored: bool
    gt_rows: IntArray
    gt_image: IntArray
    gt_class: IntArray
    gt_ignore: BoolArray
    gt_crowd: BoolArray
    gt_area: FloatArray
    pred_rows: IntArray
    pred_image: IntArray
    pred_class: IntArray
    pred_score: FloatArray
    pred_rank: IntArray
    pred_area: FloatArray
    ranked: tuple[IntArray, ...]
    hit_threshold: IntArray
    hit_pred: IntArray
    hit_gt: IntArray
    hit_iou: FloatArray
    pred_counted: BoolArray

    def match(self, gt_ignore: BoolArray, thresholds: FloatArray | None = None) -> Matching:
        """The protocol's matching again, with other ground truth ignored (an area range, a
        slice): as pycocotools does for its area ranges, a prediction prefers ground truth
        that counts, and one matched to ignored ground truth is ignored."""
        levels = self.thresholds if thresholds is None else thresholds
        return match_all(
            self.pairs, self.pred_rank, gt_ignore, self.gt_crowd, levels,
            self.conventions.match_rule, self.conventions.strict_threshold, self.scored,
        )  # fmt: skip

    @property
    def matching(self) -> Matching:
        """The evaluation's own matching, at every threshold of :attr:`thresholds`."""
        return Matching(
            Hits(self.hit_threshold, self.hit_pred, self.hit_gt, self.hit_iou),
            self.gt_ignore,
            (self.thresholds.size, self.gt_rows.size, self.pred_rows.size),
        )


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


def _suspicious(boxes: FloatArray, scores: FloatArray | None) -> BoolArray:
    """Boxes that :func:`vocmatch.evaluation.evaluate.input_notes` might remark on (a superset)."""
    odd = np.zeros(boxes.shape[0], dtype=bool)
    # Rows of the few odd values (faster than .any(axis=1) over every box).
    odd[np.flatnonzero((boxes < 0) | (boxes > ENORMOUS_COORDINATE)) // 4] = True
    if scores is not None:
        odd |= (scores < 0) | (scores > 1)
    return odd


def _cell_score_order(cell: IntArray, scores: FloatArray, by_score: IntArray) -> IntArray:
    """The order of ``np.lexsort((-scores, cell))`` (by cell, then descending score, ties in
    array order), found faster from ``by_score``, the stable order by descending score: cell
    and score rank packed into one integer key, unique, so any sort gives the same order."""
    n = scores.size
    if n == 0 or (int(cell.max()) + 1) * n >= 2**62:
        return np.lexsort((-scores, cell))  # the key would not fit in 64 bits
    key = np.empty(n, dtype=np.int64)
    key[by_score] = np.arange(n)  # each score's rank
    key += cell.astype(np.int64) * n
    return np.argsort(key)


def _scores(scores: FloatArray, rows: IntArray) -> FloatArray:
    """Scores of ``rows`` for ranking: NaN (no score) as -inf, ranked last."""
    taken = scores[rows]
    return np.where(np.isnan(taken), -math.inf, taken)


def _distinct(values: IntArray) -> int:
    """How many distinct non-negative integers ``values`` holds (counted: ``np.unique``
    would import ``numpy.ma`` on every run, 10-15 ms)."""
    return int(np.count_nonzero(np.bincount(values))) if values.size else 0


def _used(labels: IntArray, n_names: int) -> list[int]:
    """The distinct label indices in ``labels`` (counted: faster than ``np.unique``)."""
    return np.flatnonzero(np.bincount(labels, minlength=n_names)).tolist()


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
    """Evaluate column sets; the result equals :func:`vocmatch.evaluation.evaluate.evaluate` on
    the same files, number for number.

    The evaluation runs in stages, each a function given and giving small records: select
    the images and boxes (:func:`_select`), sort them into image-class cells
    (:func:`_prepare`), pair and match (:func:`_pair_and_match`), pycocotools' numbers
    (:func:`_coco`), the outcome at the IoU threshold (:func:`_counted`), per-image results
    (:func:`_image_counts`, :func:`_matches`, :func:`_image_results`) and per-class results
    (:func:`_class_ap`, :func:`_class_results`).

    Args:
        gt: Ground truth read by :func:`vocmatch.readers.scan.read_columns`.
        pred: Predictions read the same way.
        conventions: The protocol; defaults to ``protocol("default")``.
        keep_matches: Build the per-box :class:`~vocmatch.evaluation.evaluate.Match` records of
            every image (needed by the HTML report and the error analysis; costly on large sets).
        fold_case: Lower-case every class name before matching.
        progress: Told each stage as it starts (pairing, matching, each COCO area range,
            per-image results, AP per class) with the number of stages done and in all,
            and ``("done", n, n)`` at the end. Every image goes through a stage at once.
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
    stage = _Stages(progress, conv.coco_stats)
    names_note = case_notes([*gt.label_names, *pred.label_names], fold_case)
    if fold_case:
        gt, pred = fold_columns(gt), fold_columns(pred)
    selection = _select(gt, pred)
    if score_thresholds and not selection.scored and selection.pred_rows.size:
        raise InputError(
            f"a score threshold ({score_thresholds.describe()}) needs scored predictions, "
            "and none of the predictions has a <score> or <confidence>"
        )
    notes = [*_notes(gt, pred, selection, conv), *names_note]
    notes += shape_notes(_shapes_evaluated(gt, pred, selection), conv)
    prepared, by_score = _prepare(gt, pred, selection, conv, score_thresholds)
    # The sorted predictions hold rows and images from here on (as int32): the selection's
    # int64 copies, the size of the predictions, are let go.
    # (New empty arrays: an empty slice would be a view holding the whole buffer.)
    selection = replace(
        selection,
        pred_rows=np.zeros(0, dtype=selection.pred_rows.dtype),
        pred_image=np.zeros(0, dtype=selection.pred_image.dtype),
    )
    stage("pairing boxes")
    paired = _pair_and_match(prepared, by_score, stage)
    del by_score
    # Continuous areas (a shape's own region's), as COCO's area ranges read them.
    areas = _Areas(*paired.scan.space.region_areas())
    coco = coco_class_ap = None
    if conv.coco_stats and prepared.scored:
        coco, coco_class_ap = _coco(prepared, paired, areas, stage)
        if not _coco_class_ap_reusable(conv, areas):
            coco_class_ap = None
    elif conv.coco_stats:
        for name in _AREA_NAMES:
            stage(f"COCO area {name}")
    # The scores are gathered again after pycocotools' numbers, which do not read them:
    # one array of every prediction less while those are computed.
    scores = _Scores.of(prepared)
    if matched is not None:
        matched(_matched_columns(prepared, selection, paired, areas, scores))
    del areas
    counted = _counted(prepared, paired.matching, scores)
    n_images = len(selection.images)
    counts = _image_counts(prepared, paired.matching, counted, n_images)
    stage("per-image results")
    records = _matches(prepared, paired, counted, n_images) if keep_matches else None
    image_results = _image_results(prepared, selection, counts, records)
    stage("AP per class")
    ap_values = _class_ap(prepared, paired, counted, scores.kept, coco_class_ap)
    classes = _class_results(prepared, paired.ranking, counted, scores.kept, ap_values)
    stage.done()
    return finish(
        conv, image_results, classes, coco, selection.skipped, selection.missing,
        selection.orphan, notes,
    )  # fmt: skip


class _Stages:
    """Tells ``progress`` each stage as it starts (see :func:`evaluate_columns`)."""

    __slots__ = ("_done", "_progress", "_total")

    def __init__(self, progress: StageProgress | None, coco_stats: bool) -> None:
        self._progress = progress
        self._total = 4 + (len(_AREA_NAMES) if coco_stats else 0)
        self._done = 0

    def __call__(self, name: str) -> None:
        if self._progress is not None:
            self._progress(name, self._done, self._total)
        self._done += 1

    def done(self) -> None:
        if self._progress is not None:
            self._progress("done", self._total, self._total)


@dataclass(frozen=True, slots=True)
class _Selection:
    """The images and boxes an evaluation reads (stage *select*).

    Attributes:
        images: Each evaluated image's index in ``gt.keys``: every ground-truth file that was
            read, in key order.
        pred_of_image: Each evaluated image's index in ``pred.keys``, None without a file.
        gt_rows: ``(G,)`` rows of ``gt`` in evaluated images, in column order.
        gt_image: ``(G,)`` the evaluated image of each.
        pred_rows: ``(P,)`` rows of ``pred`` in evaluated images, in column order.
        pred_image: ``(P,)`` the evaluated image of each.
        scored: Some of those predictions have a score.
        missing: Keys of evaluated images without a prediction file.
        orphan: Paths of prediction files without ground truth.
        skipped: Files that could not be read, by path and line.
    """

    images: tuple[int, ...]
    pred_of_image: tuple[int | None, ...]
    gt_rows: IntArray
    gt_image: IntArray
    pred_rows: IntArray
    pred_image: IntArray
    scored: bool
    missing: tuple[str, ...]
    orphan: tuple[str, ...]
    skipped: tuple[SkippedFile, ...]


def _select(gt: ColumnSet, pred: ColumnSet) -> _Selection:
    """Stage *select*: every image whose ground truth was read, paired with its predictions
    by key; files skipped on either side, predictions without ground truth apart."""
    skipped = tuple(sorted((*gt.skipped, *pred.skipped), key=lambda s: (s.path, s.line or 0)))
    unreadable = {s.key for s in skipped if s.key is not None}
    gt_key_set = set(gt.keys)
    orphan = tuple(
        path
        for key, path in zip(pred.keys, pred.paths, strict=True)
        if key not in gt_key_set and key not in unreadable
    )
    pred_index = {key: i for i, key in enumerate(pred.keys)}
    images = [i for i, key in enumerate(gt.keys) if key not in unreadable]
    gt_image_map = np.full(len(gt.keys), -1, dtype=np.int64)
    gt_image_map[images] = np.arange(len(images))
    pred_of_image = [pred_index.get(gt.keys[i]) for i in images]
    pred_image_map = np.full(len(pred.keys), -1, dtype=np.int64)
    for j, p in enumerate(pred_of_image):
        if p is not None:
            pred_image_map[p] = j
    missing = tuple(gt.keys[i] for i, p in zip(images, pred_of_image, strict=True) if p is None)
    gt_rows = np.flatnonzero(gt_image_map[gt.image] >= 0) if gt.image.size else gt.image
    pred_rows = np.flatnonzero(pred_image_map[pred.image] >= 0) if pred.image.size else pred.image
    return _Selection(
        images=tuple(images),
        pred_of_image=tuple(pred_of_image),
        gt_rows=gt_rows,
        gt_image=gt_image_map[gt.image[gt_rows]],
        pred_rows=pred_rows,
        pred_image=pred_image_map[pred.image[pred_rows]],
        scored=bool((~np.isnan(pred.scores[pred_rows])).any()),
        missing=missing,
        orphan=orphan,
        skipped=skipped,
    )


def _notes(gt: ColumnSet, pred: ColumnSet, selection: _Selection, conv: Conventions) -> list[str]:
    """The notes of the reading, on scores and on odd values of the evaluated boxes."""
    gt_rows, pred_rows = selection.gt_rows, selection.pred_rows
    unscored_rows = pred_rows[np.isnan(pred.scores[pred_rows])]
    notes = [*gt.notes, *pred.notes]
    notes += score_notes(
        selection.scored,
        int(unscored_rows.size),
        pred_rows.size > 0,
        files=_distinct(pred.image[unscored_rows]),
    )
    # Only boxes with a suspicious value can change the notes: hand over just those (usually
    # none), rather than copies of every box.
    gt_odd = gt_rows[_suspicious(gt.boxes, None)[gt_rows]]
    pred_odd = pred_rows[_suspicious(pred.boxes, pred.scores)[pred_rows]]
    notes += input_notes(
        [*gt.paths, *pred.paths],
        np.concatenate([gt.image[gt_odd], len(gt.paths) + pred.image[pred_odd]]),
        np.concatenate([gt.boxes[gt_odd], pred.boxes[pred_odd]]),
        np.concatenate([np.full(gt_odd.size, np.nan), pred.scores[pred_odd]]),
    )
    return notes


def _shapes_evaluated(gt: ColumnSet, pred: ColumnSet, selection: _Selection) -> int:
    """Rotated boxes and polygons among the evaluated boxes."""
    gt_evaluated = np.zeros(gt.image.size, dtype=bool)
    gt_evaluated[selection.gt_rows] = True
    pred_evaluated = np.zeros(pred.image.size, dtype=bool)
    pred_evaluated[selection.pred_rows] = True
    return sum(1 for row, _ in gt.shapes if gt_evaluated[row]) + sum(
        1 for row, _ in pred.shapes if pred_evaluated[row]
    )


@dataclass(frozen=True, slots=True)
class _GroundTruth:
    """The evaluated ground truth sorted by (image, class, file order).

    Attributes:
        rows: ``(G,)`` each one's row in the ground-truth columns.
        image: ``(G,)`` its evaluated image.
        label: ``(G,)`` its class index.
        ignore: ``(G,)`` ignored under the protocol (``difficult`` unless counted).
        crowd: ``(G,)`` a crowd region (``--difficult crowd``).
    """

    rows: IntArray
    image: IntArray
    label: IntArray
    ignore: BoolArray
    crowd: BoolArray

    def per_class(self, n_classes: int) -> tuple[IntArray, IntArray]:
        """``(K,)`` ground truth that counts, and ``(K,)`` ignored, of each class."""
        ignored = np.bincount(self.label[self.ignore], minlength=n_classes)
        return np.bincount(self.label, minlength=n_classes) - ignored, ignored


@dataclass(frozen=True, slots=True)
class _Predictions:
    """The evaluated predictions sorted by (image, class, descending score, file order).

    ``*_all`` arrays hold every one; the others only those kept (pycocotools' ``maxDets``
    highest-scored of each image-class; every one when nothing is cut, the same arrays).

    Attributes:
        rows_all: ``(P_all,)`` each one's row in the prediction columns.
        image_all: ``(P_all,)`` its evaluated image.
        label_all: ``(P_all,)`` its class index.
        kept: ``(P_all,)`` kept.
        rows: ``(P,)``.
        image: ``(P,)``.
        label: ``(P,)``.
        rank: ``(P,)`` its place in its image-class's run, by score.
    """

    rows_all: Int32Array
    image_all: IntArray
    label_all: IntArray
    kept: BoolArray
    rows: Int32Array
    image: IntArray
    label: IntArray
    rank: IntArray


@dataclass(frozen=True, slots=True)
class _Levels:
    """The IoU thresholds matched at: the evaluation threshold, the sweep and the AP
    thresholds, ascending.

    Attributes:
        thresholds: ``(T,)``.
        index: Each threshold's place in ``thresholds``.
        evaluation: The place of the evaluation's own threshold.
    """

    thresholds: FloatArray
    index: dict[float, int]
    evaluation: int

    @classmethod
    def of(cls, conv: Conventions) -> _Levels:
        """The thresholds a protocol matches at."""
        values = sorted({conv.iou_threshold, *conv.sweep_thresholds, *conv.ap_thresholds})
        index = {value: i for i, value in enumerate(values)}
        return cls(np.array(values, dtype=np.float64), index, index[conv.iou_threshold])


@dataclass(frozen=True, slots=True)
class _Prepared:
    """The inputs sorted into image-class cells (stage *prepare*): what every later stage
    reads.

    Attributes:
        conventions: The protocol.
        gt_columns: The ground-truth columns.
        pred_columns: The prediction columns.
        score_thresholds: Per-class score thresholds, if any.
        class_names: The classes of the evaluated boxes, sorted.
        gt: The ground truth, sorted.
        pred: The predictions, sorted.
        levels: The IoU thresholds matched at.
        scored: The predictions carry scores (else they are paired highest IoU first).
    """

    conventions: Conventions
    gt_columns: ColumnSet
    pred_columns: ColumnSet
    score_thresholds: ScoreThresholds | None
    class_names: tuple[str, ...]
    gt: _GroundTruth
    pred: _Predictions
    levels: _Levels
    scored: bool


def _prepare(
    gt: ColumnSet,
    pred: ColumnSet,
    selection: _Selection,
    conv: Conventions,
    score_thresholds: ScoreThresholds | None = None,
) -> tuple[_Prepared, IntArray]:
    """Stage *prepare*: the class names, and both sides sorted by image-class cell.

    Returns:
        The sorted inputs, and the stable order of the kept predictions by descending score
        (ties in file order), which every class's ranking is read from.
    """
    gt_rows, pred_rows = selection.gt_rows, selection.pred_rows
    class_names = tuple(
        sorted(
            {gt.label_names[i] for i in _used(gt.labels[gt_rows], len(gt.label_names))}
            | {pred.label_names[i] for i in _used(pred.labels[pred_rows], len(pred.label_names))}
        )
    )
    index = {name: k for k, name in enumerate(class_names)}
    gt_remap = np.array([index.get(n, -1) for n in gt.label_names], dtype=np.int64)
    pred_remap = np.array([index.get(n, -1) for n in pred.label_names], dtype=np.int64)
    # Ground truth sorted by (image, class, file order).
    g_class = gt_remap[gt.labels[gt_rows]] if gt_rows.size else gt_rows
    g_order = np.lexsort((g_class, selection.gt_image))
    g_difficult = gt.difficult[gt_rows[g_order]]
    sorted_gt = _GroundTruth(
        rows=gt_rows[g_order],
        image=selection.gt_image[g_order],
        label=g_class[g_order],
        ignore=g_difficult if conv.difficult != "count" else np.zeros_like(g_difficult),
        crowd=g_difficult if conv.difficult == "crowd" else np.zeros_like(g_difficult),
    )
    p_class = pred_remap[pred.labels[pred_rows]] if pred_rows.size else pred_rows
    sorted_pred, by_score = _sort_predictions(
        pred_rows, selection.pred_image, p_class, _scores(pred.scores, pred_rows),
        conv.max_dets if selection.scored else None, len(class_names),
    )  # fmt: skip
    prepared = _Prepared(
        conventions=conv,
        gt_columns=gt,
        pred_columns=pred,
        score_thresholds=score_thresholds,
        class_names=class_names,
        gt=sorted_gt,
        pred=sorted_pred,
        levels=_Levels.of(conv),
        scored=selection.scored,
    )
    return prepared, by_score


def _sort_predictions(
    rows: IntArray,
    image: IntArray,
    label: IntArray,
    score: FloatArray,
    max_dets: int | None,
    n_classes: int,
) -> tuple[_Predictions, IntArray]:
    """Predictions sorted by (image, class, descending score, file order), those beyond
    ``max_dets`` in their image-class set apart.

    Args:
        rows: ``(P,)`` rows in the columns, in column order.
        image: ``(P,)`` evaluated image of each.
        label: ``(P,)`` class index of each.
        score: ``(P,)`` score of each, ``-inf`` for none.
        max_dets: Keep the highest-scored of each image-class, as pycocotools' maxDets
            (None keeps all).
        n_classes: Classes in all.

    Returns:
        The sorted predictions, and the stable order of the kept ones by descending score.
    """
    n_k = n_classes
    # One stable sort by descending score (ties in file order) serves the order below and
    # every class's ranking.
    by_score: IntArray = np.argsort(-score, kind="stable")
    p_order = _cell_score_order(image * n_k + label, score, by_score)
    # Indices are held as int32 (half the memory of a large set); cells stay int64.
    rows_all = rows[p_order].astype(np.int32)
    # The score order in terms of the sorted arrays below.
    sorted_place = np.empty(p_order.size, dtype=np.int32)
    sorted_place[p_order] = np.arange(p_order.size, dtype=np.int32)
    by_score = sorted_place[by_score]
    del sorted_place
    image_all = image[p_order].astype(np.int32)
    label_all = label[p_order].astype(np.int32)
    del p_order
    cell_all = image_all.astype(np.int64) * n_k + label_all
    # A prediction's rank: its place in its cell's run (the cells are sorted). Runs, not a
    # table of every image x class, which 10,000 images of 50,000 classes make 4 GB.
    run_starts = np.flatnonzero(np.append(True, cell_all[1:] != cell_all[:-1]))
    run_lengths = np.diff(np.append(run_starts, cell_all.size))
    rank_all = (np.arange(cell_all.size) - np.repeat(run_starts, run_lengths)).astype(np.int32)
    del run_starts, run_lengths, cell_all
    # pycocotools keeps the max_dets highest-scored predictions of an image-class; without
    # scores there is no ranking to cut, and every prediction is kept.
    kept = rank_all < max_dets if max_dets is not None else np.ones_like(rank_all, bool)
    if kept.all():
        # Nothing beyond max_dets: the same arrays, no copies (they are large).
        found = _Predictions(
            rows_all, image_all, label_all, kept, rows_all, image_all, label_all, rank_all
        )
        return found, by_score
    found = _Predictions(
        rows_all, image_all, label_all, kept,
        rows_all[kept], image_all[kept], label_all[kept], rank_all[kept],
    )  # fmt: skip
    # The score order of the kept predictions, as indices among them.
    kept_place = np.cumsum(kept, dtype=np.int64) - 1
    return found, kept_place[by_score[kept[by_score]]].astype(np.int32)


@dataclass(frozen=True, slots=True)
class _Paired:
    """Every image-class paired and matched at every threshold (stage *pair and match*).

    Attributes:
        scan: The pairs that can match, and each box's best IoU on the other side.
        matching: The matched pairs at every threshold.
        ranking: Each class's predictions and their ranking by score.
    """

    scan: PairScan
    matching: Matching
    ranking: ClassRanking


def _pair_and_match(
    prepared: _Prepared, by_score: IntArray, stage: Callable[[str], None]
) -> _Paired:
    """Stage *pair and match*: every pair of the same image-class scored once (each box's
    best IoU on the other side, and the pairs that can match), then matched under the
    protocol's rule at every threshold; each class's ranking from ``by_score`` (see
    :func:`_prepare`)."""
    conv, gt, pred = prepared.conventions, prepared.gt, prepared.pred
    n_k = len(prepared.class_names)
    thresholds = prepared.levels.thresholds
    space = PairSpace(
        prepared.gt_columns.boxes[gt.rows],
        gt.image * n_k + gt.label,
        gt.crowd,
        prepared.pred_columns.boxes,
        pred.image.astype(np.int64) * n_k + pred.label,
        conv.pixel_inclusive,
        _sorted_shapes(prepared.gt_columns.shapes, gt.rows),
        _sorted_shapes(prepared.pred_columns.shapes, pred.rows),
        pred_rows=pred.rows,
    )
    # The unmatched rule's matching is made as the pairs are scored (in ranking order).
    first = None
    if prepared.scored and conv.match_rule == "unmatched":
        first = RankedMatcher(gt.rows.size, gt.ignore, gt.crowd, thresholds, conv.strict_threshold)
    scan = PairScan(space, float(thresholds.min()), conv.strict_threshold, first, pred.rank)
    stage("matching")
    if first is not None:
        shape = (thresholds.size, gt.rows.size, pred.rows.size)
        m = Matching(first.hits(), gt.ignore, shape)
    else:
        m = match_all(
            scan, pred.rank, gt.ignore, gt.crowd, thresholds, conv.match_rule,
            conv.strict_threshold, prepared.scored,
        )  # fmt: skip
    return _Paired(scan, m, class_ranking(by_score, pred.label, n_k))


@dataclass(frozen=True, slots=True)
class _Areas:
    """Continuous areas (a shape's own region's), as COCO's area ranges read them.

    Attributes:
        gt: ``(G,)`` of the sorted ground truth.
        pred: ``(P,)`` of the kept predictions.
    """

    gt: FloatArray
    pred: FloatArray


def _coco_class_ap_reusable(conv: Conventions, areas: _Areas) -> bool:
    """A class's COCO AP (101 points, IoU 0.50:0.95) is pycocotools' area "all", maxDets 100
    entry whenever no box is large enough to leave that range: read it from there."""
    return (
        conv.interpolation == "101-point"
        and (conv.max_dets is None or conv.max_dets <= 100)
        and not (areas.gt > COCO_AREAS[0][1]).any()
        and not (areas.pred > COCO_AREAS[0][1]).any()
    )


@dataclass(frozen=True, slots=True)
class _Scores:
    """Scores for ranking (``-inf`` for none) of the sorted predictions.

    Attributes:
        kept: ``(P,)`` of the kept ones.
        all: ``(P_all,)`` of every one.
    """

    kept: FloatArray
    all: FloatArray

    @classmethod
    def of(cls, prepared: _Prepared) -> _Scores:
        """The sorted predictions' scores."""
        pred = prepared.pred
        every = _scores(prepared.pred_columns.scores, pred.rows_all)
        return cls(every if pred.rows is pred.rows_all else every[pred.kept], every)


def _score_floor(prepared: _Prepared) -> FloatArray | None:
    """``(K,)`` each class's score threshold, None without thresholds."""
    if not prepared.score_thresholds:
        return None
    return np.array([prepared.score_thresholds.floor(n) for n in prepared.class_names])


def _matched_columns(
    prepared: _Prepared, selection: _Selection, paired: _Paired, areas: _Areas, scores: _Scores
) -> MatchedColumns:
    """The evaluation's arrays for the analyses that read the matching again."""
    gt, pred, m = prepared.gt, prepared.pred, paired.matching
    floor = _score_floor(prepared)
    return MatchedColumns(
        conventions=prepared.conventions,
        gt=prepared.gt_columns,
        pred=prepared.pred_columns,
        image_rows=np.asarray(selection.images, dtype=np.int64),
        class_names=prepared.class_names,
        thresholds=prepared.levels.thresholds,
        pairs=paired.scan,
        scored=prepared.scored,
        gt_rows=gt.rows,
        gt_image=gt.image,
        gt_class=gt.label,
        gt_ignore=gt.ignore,
        gt_crowd=gt.crowd,
        gt_area=areas.gt,
        pred_rows=pred.rows,
        pred_image=pred.image,
        pred_class=pred.label,
        pred_score=scores.kept,
        pred_rank=pred.rank,
        pred_area=areas.pred,
        ranked=tuple(paired.ranking.ranked(k) for k in range(len(prepared.class_names))),
        hit_threshold=m.hit_t,
        hit_pred=m.hit_pred,
        hit_gt=m.hit_gt,
        hit_iou=m.hit_iou,
        pred_counted=(
            scores.kept >= floor[pred.label]
            if floor is not None
            else np.ones(pred.label.size, dtype=bool)
        ),
    )


@dataclass(frozen=True, slots=True)
class _Counted:
    """The outcome of the kept predictions at the evaluation's IoU threshold.

    Attributes:
        matched: ``(P,)`` matched a ground truth (TP or ignored).
        ignored: ``(P,)`` matched an ignored ground truth.
        counted: ``(P,)`` a TP that counts (at or above its score threshold).
        ignored_counted: ``(P,)`` matched an ignored ground truth and counts.
        missed: ``(T, G)`` ground truth that counts and was not matched, at each threshold.
        passing: ``(P,)`` at or above its class's score threshold; None without thresholds.
        passing_all: ``(P_all,)`` the same of every prediction.
    """

    matched: BoolArray
    ignored: BoolArray
    counted: BoolArray
    ignored_counted: BoolArray
    missed: BoolArray
    passing: BoolArray | None
    passing_all: BoolArray | None


def _counted(prepared: _Prepared, m: Matching, scores: _Scores) -> _Counted:
    """Stage *count*: each kept prediction's outcome at the IoU threshold. With score
    thresholds, only the predictions that pass count (module doc of
    :mod:`vocmatch.evaluation.thresholds`: their matches are those the one matching of all
    gave them)."""
    matched_t, ignored_t = m.pred_flags(prepared.levels.evaluation)
    counted_t = matched_t & ~ignored_t
    missed = ~m.gt_matched & ~prepared.gt.ignore[None, :]
    floor = _score_floor(prepared)
    if floor is None:
        return _Counted(matched_t, ignored_t, counted_t, ignored_t, missed, None, None)
    passing = scores.kept >= floor[prepared.pred.label]
    passing_all = scores.all >= floor[prepared.pred.label_all]
    return _Counted(
        matched_t, ignored_t, counted_t & passing, ignored_t & passing, missed, passing,
        passing_all,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _ImageCounts:
    """Per image (lists, read once per image), at each threshold of :class:`_Levels`.

    Attributes:
        tp: ``[T][I]`` true positives.
        fp: ``[T][I]`` false positives.
        fn: ``[T][I]`` missed ground truth.
        gt: ``[I]`` ground truth that counts.
        gt_ignored: ``[I]`` ignored ground truth.
        pred: ``[I]`` predictions that count (all, kept or not).
        pred_ignored: ``[I]`` predictions that count matched to ignored ground truth.
        tp_iou: The IoU of each TP at the evaluation threshold, by image, then as the
            reference lists matches: class, then file order.
        tp_bounds: ``[I + 1]`` where each image's run starts in ``tp_iou``.
    """

    tp: list[list[int]]
    fp: list[list[int]]
    fn: list[list[int]]
    gt: list[int]
    gt_ignored: list[int]
    pred: list[int]
    pred_ignored: list[int]
    tp_iou: list[float]
    tp_bounds: list[int]


def _image_counts(
    prepared: _Prepared, m: Matching, counted: _Counted, n_images: int
) -> _ImageCounts:
    """Stage *per image*: the counts of every image, from the matched pairs: TP are matches
    to an object that counts, FP the kept predictions left unmatched."""
    gt, pred = prepared.gt, prepared.pred
    n_t = prepared.levels.thresholds.size
    passing, passing_all = counted.passing, counted.passing_all
    hit_image = pred.image[m.hit_pred]
    hit_counts = ~gt.ignore[m.hit_gt]
    hit_level = m.hit_t
    ignored_image = np.bincount(gt.image[gt.ignore], minlength=n_images)
    gt_per_image = np.bincount(gt.image, minlength=n_images)
    if passing is None or passing_all is None:
        kept_per_image = np.bincount(pred.image, minlength=n_images)
        pred_per_image = np.bincount(pred.image_all, minlength=n_images)
    else:
        kept_per_image = np.bincount(pred.image[passing], minlength=n_images)
        pred_per_image = np.bincount(pred.image_all[passing_all], minlength=n_images)
        hit_pass = passing[m.hit_pred]
        hit_image, hit_counts, hit_level = (
            hit_image[hit_pass],
            hit_counts[hit_pass],
            hit_level[hit_pass],
        )
    tp_image = [
        np.bincount(hit_image[(hit_level == i) & hit_counts], minlength=n_images).tolist()
        for i in range(n_t)
    ]
    fp_image = [
        (kept_per_image - np.bincount(hit_image[hit_level == i], minlength=n_images)).tolist()
        for i in range(n_t)
    ]
    del hit_image, hit_counts, hit_level
    if passing is None:
        fn_image = [
            np.bincount(gt.image[counted.missed[i]], minlength=n_images).astype(np.int64).tolist()
            for i in range(n_t)
        ]
    else:
        # Each object that counts is matched at most once: FN = objects that count - TP.
        counting_image = gt_per_image - ignored_image
        fn_image = [(counting_image - np.array(tp, dtype=np.int64)).tolist() for tp in tp_image]
    # The IoU of each TP, ordered as the reference lists matches: class, then file order.
    tp_pred = np.flatnonzero(counted.counted)
    _, tp_iou = m.of(prepared.levels.evaluation, tp_pred)
    tp_order = np.lexsort((pred.rows[tp_pred], pred.label[tp_pred], pred.image[tp_pred]))
    return _ImageCounts(
        tp=tp_image,
        fp=fp_image,
        fn=fn_image,
        gt=(gt_per_image - ignored_image).tolist(),
        gt_ignored=ignored_image.tolist(),
        pred=pred_per_image.tolist(),
        pred_ignored=np.bincount(pred.image[counted.ignored_counted], minlength=n_images).tolist(),
        tp_iou=tp_iou[tp_order].tolist(),
        tp_bounds=_segment_starts(pred.image[tp_pred][tp_order], n_images).tolist(),
    )


def _image_results(
    prepared: _Prepared,
    selection: _Selection,
    counts: _ImageCounts,
    records: list[tuple[Match, ...]] | None,
) -> list[ImageResult]:
    """Each evaluated image's result, with its per-box ``records`` (none without)."""
    gt, pred = prepared.gt_columns, prepared.pred_columns
    t = prepared.levels.evaluation
    swept = prepared.conventions.sweep_thresholds
    sweep_levels = [(threshold, prepared.levels.index[threshold]) for threshold in swept]
    tp_image, fp_image, fn_image = counts.tp, counts.fp, counts.fn
    tp_iou, tp_bounds = counts.tp_iou, counts.tp_bounds
    # Sweeps repeat (small counts): equal ones share one frozen record.
    sweeps: dict[tuple[int, ...], tuple[SweepResult, ...]] = {}
    image_results = []
    for j, i in enumerate(selection.images):
        p = selection.pred_of_image[j]
        ious = tp_iou[tp_bounds[j] : tp_bounds[j + 1]]
        key = tuple(
            c
            for _, level in sweep_levels
            for c in (tp_image[level][j], fp_image[level][j], fn_image[level][j])
        )
        sweep = sweeps.get(key)
        if sweep is None:
            sweep = sweeps[key] = tuple(
                SweepResult(threshold, *key[3 * n : 3 * n + 3])
                for n, (threshold, _) in enumerate(sweep_levels)
            )
        image_results.append(
            ImageResult(
                key=gt.keys[i],
                gt_path=gt.paths[i],
                pred_path=pred.paths[p] if p is not None else None,
                gt=counts.gt[j],
                gt_ignored=counts.gt_ignored[j],
                pred=counts.pred[j],
                tp=tp_image[t][j],
                fp=fp_image[t][j],
                fn=fn_image[t][j],
                mean_iou=math.fsum(ious) / len(ious) if ious else None,
                sweep=sweep,
                matches=records[j] if records is not None else (),
                pred_ignored=counts.pred_ignored[j],
            )
        )
    return image_results


def _ranked_flags(
    prepared: _Prepared, paired: _Paired, counted: _Counted, pred_score: FloatArray
) -> RankedFlags:
    """The kept predictions as AP and the curves read them: the evaluation threshold's
    flags from ``counted``, any other's from the matching."""
    m, levels = paired.matching, prepared.levels

    def flags(level: int) -> tuple[BoolArray, BoolArray]:
        if level == levels.evaluation:
            return counted.matched, counted.ignored
        return m.pred_flags(level)

    return RankedFlags(paired.ranking, pred_score, flags, levels.index, levels.evaluation)


def _class_ap(
    prepared: _Prepared,
    paired: _Paired,
    counted: _Counted,
    pred_score: FloatArray,
    coco_class_ap: dict[int, list[float]] | None,
) -> list[list[float]]:
    """Stage *per class*: each class's AP at every AP threshold of the protocol
    (:func:`vocmatch.evaluation.accumulate.class_ap_values`)."""
    n_class_gt: list[int] = prepared.gt.per_class(len(prepared.class_names))[0].tolist()
    ranked = _ranked_flags(prepared, paired, counted, pred_score)
    return class_ap_values(prepared.conventions, ranked, n_class_gt, prepared.scored, coco_class_ap)


def _class_counts(prepared: _Prepared, ranking: ClassRanking, counted: _Counted) -> ClassCounts:
    """Each class's counts at the IoU threshold; with score thresholds, of the predictions
    that pass."""
    n_k = len(prepared.class_names)
    n_counting, n_ignored = prepared.gt.per_class(n_k)
    label = prepared.pred.label
    passing = counted.passing
    tp = np.bincount(label[counted.counted], minlength=n_k)
    if passing is None:
        fp = np.bincount(label[~counted.matched], minlength=n_k)
        missed = counted.missed[prepared.levels.evaluation]
        fn = np.bincount(prepared.gt.label[missed], minlength=n_k)
        n_pred = np.bincount(label, minlength=n_k)
    else:
        fp = np.bincount(label[~counted.matched & passing], minlength=n_k)
        fn = n_counting - tp
        n_pred = np.bincount(label[passing], minlength=n_k)
    pred_ignored = np.bincount(label[counted.ignored_counted], minlength=n_k)
    return ClassCounts(n_counting, n_ignored, n_pred, tp, fp, fn, pred_ignored)


def _class_results(
    prepared: _Prepared,
    ranking: ClassRanking,
    counted: _Counted,
    pred_score: FloatArray,
    ap_values: list[list[float]],
) -> list[ClassResult]:
    """Each class's counts at the IoU threshold, its curve, and its AP from ``ap_values``
    (see :func:`_class_ap`)."""
    levels = prepared.levels
    # Only the evaluation threshold's flags are read: the curve's.
    ranked = RankedFlags(
        ranking, pred_score, lambda _: (counted.matched, counted.ignored), levels.index,
        levels.evaluation,
    )  # fmt: skip
    counts = _class_counts(prepared, ranking, counted)
    curves = class_curves(ranked, counts.gt.tolist(), prepared.scored)
    return class_results(
        prepared.conventions, prepared.class_names, counts, curves, ap_values, prepared.scored
    )


def _coco(
    prepared: _Prepared, paired: _Paired, areas: _Areas, stage: Callable[[str], None]
) -> tuple[CocoStats, dict[int, list[float]]]:
    """Stage *COCO*: pycocotools' 12 numbers, and for each class with ground truth its AP at
    each threshold as pycocotools' precision gives it (area all, maxDets 100). Each area
    range is matched again, then accumulated class by class
    (:func:`vocmatch.evaluation.accumulate.coco_area`): pycocotools' ``(T, 101, K, A, M)``
    precision array is never built (48 GB for 50,000 classes under ten thresholds)."""
    conv, scan = prepared.conventions, paired.scan
    gt, pred = prepared.gt, prepared.pred
    n_k = len(prepared.class_names)
    thresholds = np.asarray(conv.ap_thresholds, dtype=np.float64)
    summary = CocoSummary(thresholds)
    class_ap: dict[int, list[float]] = {}
    order = CocoOrder.of(paired.ranking, pred.label, pred.rank, thresholds.size)
    for a, (low, high) in enumerate(COCO_AREAS):
        stage(f"COCO area {_AREA_NAMES[a]}")
        ignore = gt.ignore | (areas.gt < low) | (areas.gt > high)
        m = match_all(
            scan, pred.rank, ignore, gt.crowd, thresholds, conv.match_rule,
            conv.strict_threshold, prepared.scored,
        )  # fmt: skip
        matches = AreaMatches(
            m.hit_pred,
            m.hit_t,
            ignore[m.hit_gt],
            (areas.pred < low) | (areas.pred > high),
            np.bincount(gt.label[~ignore], minlength=n_k),
        )
        coco_area(summary, a, matches, order, class_ap)
        del m, matches  # before the next
    return summary.stats(), class_ap


def _matches(
    prepared: _Prepared, paired: _Paired, counted: _Counted, n_images: int
) -> list[tuple[Match, ...]]:
    """Stage *per image*: the per-box records of every image in the reference's order: per
    class, kept predictions in file order, then predictions beyond max_dets, then missed
    ground truth. With score thresholds, only predictions that pass have records, as if the
    others had never been there."""
    gt, pred = prepared.gt_columns, prepared.pred_columns
    class_names = prepared.class_names
    g_rows, g_image, g_class, g_ignore = (
        prepared.gt.rows,
        prepared.gt.image,
        prepared.gt.label,
        prepared.gt.ignore,
    )
    p = prepared.pred
    p_rows_all, p_image_all, p_class_all, kept = p.rows_all, p.image_all, p.label_all, p.kept
    p_rows, p_image, p_class = p.rows, p.image, p.label
    scan, m, t = paired.scan, paired.matching, prepared.levels.evaluation
    n_gt, n_pred = g_rows.size, p_rows.size
    p_pass, p_pass_all = counted.passing, counted.passing_all
    matched_t, ignored_t = counted.matched, counted.ignored
    # Highest IoU of each box with the other side of its image-class (0.0 without any).
    best_pred = scan.pred_best_iou
    if p_pass is None:
        best_gt = scan.gt_best_iou
        gt_matched = m.gt_matched[t]
    else:
        best_gt = scan.gt_best_iou_among(p_pass)
        at = (m.hit_t == t) & p_pass[m.hit_pred]
        gt_matched = np.zeros(n_gt, dtype=bool)
        gt_matched[m.hit_gt[at]] = True
    first_gt_row = np.asarray(_first_rows(gt), dtype=np.int64)
    first_pred_row = np.asarray(_first_rows(pred), dtype=np.int64)

    # Kept predictions: TP or ignored when matched (with the pair's IoU), else FP.
    pred_local = p_rows - first_pred_row[pred.image[p_rows]]
    matched = np.flatnonzero(matched_t)
    matched_gt, matched_iou = m.of(t, matched)
    iou = best_pred.copy()
    gt_local = np.full(n_pred, -1, dtype=np.int64)
    if matched.size:
        iou[matched] = matched_iou
        matched_rows = g_rows[matched_gt]
        gt_local[matched] = matched_rows - first_gt_row[gt.image[matched_rows]]
    outcome = np.where(matched_t, np.where(ignored_t, 1, 0), 2)  # index into _PRED_OUTCOMES
    # Predictions beyond max_dets, and missed ground truth.
    dropped = np.flatnonzero(~kept if p_pass_all is None else ~kept & p_pass_all)
    dropped_rows = p_rows_all[dropped]
    dropped_local = dropped_rows - first_pred_row[pred.image[dropped_rows]]
    missed = np.flatnonzero(~gt_matched & ~g_ignore)
    missed_rows = g_rows[missed]
    missed_local = missed_rows - first_gt_row[gt.image[missed_rows]]

    shown = np.arange(n_pred) if p_pass is None else np.flatnonzero(p_pass)
    # One sort puts every record in the reference's order: image, class, kind, file index.
    image = np.concatenate([p_image[shown], p_image_all[dropped], g_image[missed]])
    klass = np.concatenate([p_class[shown], p_class_all[dropped], g_class[missed]])
    kind = np.repeat([0, 1, 2], [shown.size, dropped.size, missed.size])
    local = np.concatenate([pred_local[shown], dropped_local, missed_local])
    order = np.lexsort((local, kind, klass, image))
    # Plain lists, read once per record below.
    scores: list[float] = pred.scores.tolist()
    rows: list[int] = np.concatenate([p_rows[shown], dropped_rows]).tolist()
    entry: list[int] = np.concatenate([shown, dropped, missed]).tolist()
    kinds: list[int] = kind.tolist()
    classes: list[int] = klass.tolist()
    locals_: list[int] = local.tolist()
    outcomes: list[int] = outcome.tolist()
    gt_locals: list[int] = gt_local.tolist()
    pred_iou: list[float] = iou.tolist()
    gt_iou: list[float] = best_gt.tolist()
    records: list[Match] = []
    for r in order.tolist():
        name = class_names[classes[r]]
        if kinds[r] == 2:  # missed ground truth
            records.append(Match(name, "fn", locals_[r], None, gt_iou[entry[r]], None))
            continue
        raw = scores[rows[r]]
        score = None if math.isnan(raw) else raw
        if kinds[r] == 1:  # beyond max_dets
            records.append(Match(name, "ignored", None, locals_[r], 0.0, score))
            continue
        q = entry[r]
        what = _PRED_OUTCOMES[outcomes[q]]
        gt_index = gt_locals[q] if what != "fp" else None
        records.append(Match(name, what, gt_index, locals_[r], pred_iou[q], score))
    bounds = np.searchsorted(image[order], np.arange(n_images + 1)).tolist()
    return [tuple(records[bounds[i] : bounds[i + 1]]) for i in range(n_images)]


#: A kept prediction's outcome by index: matched, matched to an ignored object, unmatched.
_PRED_OUTCOMES: tuple[Outcome, Outcome, Outcome] = ("tp", "ignored", "fp")


def _sorted_shapes(
    shapes: Sequence[tuple[int, Polygon | RotatedBox]], rows: IntArray
) -> list[tuple[int, Polygon | RotatedBox]]:
    """The shapes among ``rows`` (column rows in sorted order), by their sorted place."""
    if not shapes:
        return []
    place = {row: k for k, row in enumerate(rows.tolist())}
    found = [(place[row], shape) for row, shape in shapes if row in place]
    return sorted(found, key=lambda entry: entry[0])


def fold_columns(columns: ColumnSet) -> ColumnSet:
    """The same columns with every class name lower-cased (``Car`` and ``car`` merge)."""
    lowered = sorted({name.lower() for name in columns.label_names})
    index = {name: i for i, name in enumerate(lowered)}
    remap = np.array([index[name.lower()] for name in columns.label_names], dtype=np.int32)
    labels = remap[columns.labels] if columns.labels.size else columns.labels
    return replace(columns, labels=labels, label_names=tuple(lowered))


def _first_rows(columns: ColumnSet) -> list[int]:
    """The first row of each image in a column set."""
    starts: list[int] = _segment_starts(columns.image, len(columns.keys)).tolist()
    return starts

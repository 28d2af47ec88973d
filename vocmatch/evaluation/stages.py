"""The stages of an evaluation on columns, every image and class at once with numpy.

The test suite's reference evaluator (``tests/reference.py``) walks image by image and class
by class, as the definitions read. These stages compute the same matching from
:class:`~vocmatch.readers.scan.ColumnSet` columns without a Python loop per image-class
pair:

* every ground-truth/prediction pair of the same image and class is listed once, and its IoU
  computed by :func:`vocmatch.core.iou.pair_intersection` and
  :func:`vocmatch.core.iou.iou_from_intersection`, the arithmetic of
  :func:`vocmatch.core.iou.iou_matrix`;
* greedy matching is sequential only within an image-class, so it runs rank by rank: step
  ``r`` matches the ``r``-th highest-scored prediction of every image-class at every
  threshold at once.

The stages: select the images and boxes (:func:`select_images`), sort them into image-class
cells (:func:`prepare_cells`), pair and match (:func:`pair_and_match`), the outcome at the IoU
threshold (:func:`count_outcomes`); the records they hand on are in
:mod:`vocmatch.evaluation.stage_inputs`, the per-image counts and per-box records in
:mod:`vocmatch.evaluation.per_image`. :class:`~vocmatch.evaluation.matched.MatchedColumns`
holds the arrays of a matching, for what inspects the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.core.match import RankedMatcher
from vocmatch.core.match_kernels import RangeMatcher
from vocmatch.core.model import Polygon, RotatedBox
from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.accumulate import ClassCounts, class_ranking
from vocmatch.evaluation.candidates import Matching, PairScan, match_all
from vocmatch.evaluation.pair_space import PairSpace, iou_floor
from vocmatch.evaluation.result import ENORMOUS_COORDINATE
from vocmatch.evaluation.stage_inputs import (
    Counted,
    IouLevels,
    Paired,
    Prepared,
    RankingScores,
    Selection,
    SortedGroundTruth,
    SortedPredictions,
    ranking_scores,
)
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.scan import ColumnSet

__all__ = [
    "class_counts",
    "count_outcomes",
    "distinct_count",
    "fold_columns",
    "orphan_files",
    "pair_and_match",
    "prepare_cells",
    "score_floor",
    "select_images",
    "sorted_shapes",
    "suspicious_boxes",
]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
Int32Array = npt.NDArray[np.int32]


def suspicious_boxes(boxes: FloatArray, scores: FloatArray | None) -> BoolArray:
    """Boxes that :func:`vocmatch.evaluation.scoring.input_notes` might remark on (a superset)."""
    odd = np.zeros(boxes.shape[0], dtype=bool)
    # Where the least and the greatest value are in range, every one is (with a NaN among
    # them, min and max give NaN, which is not: the values are then looked at one by one).
    if boxes.size and not (boxes.min() >= 0 and boxes.max() <= ENORMOUS_COORDINATE):
        # Rows of the few odd values (faster than .any(axis=1) over every box).
        odd[np.flatnonzero((boxes < 0) | (boxes > ENORMOUS_COORDINATE)) // 4] = True
    if scores is not None and scores.size and not (scores.min() >= 0 and scores.max() <= 1):
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


def distinct_count(values: IntArray) -> int:
    """How many distinct non-negative integers ``values`` holds (counted: ``np.unique``
    would import ``numpy.ma`` on every run, 10-15 ms)."""
    return int(np.count_nonzero(np.bincount(values))) if values.size else 0


def _used(labels: IntArray, n_names: int) -> list[int]:
    """The distinct label indices in ``labels`` (counted: faster than ``np.unique``)."""
    return np.flatnonzero(np.bincount(labels, minlength=n_names)).tolist()


def orphan_files(gt: ColumnSet, pred: ColumnSet) -> tuple[tuple[str, str], ...]:
    """``(key, path)`` of the prediction files read whose image has no ground-truth file, in
    the predictions' order: a run reports them as not evaluated (``orphan_pred``). An image
    with a file on either side that could not be read is not among them (its file is
    reported as skipped).
    """
    unreadable = {s.key for s in (*gt.skipped, *pred.skipped) if s.key is not None}
    return _orphans(gt.keys, pred, unreadable, range(len(pred.keys)))


def _orphans(
    gt_keys: Sequence[str], pred: ColumnSet, unreadable: set[str], candidates: Sequence[int]
) -> tuple[tuple[str, str], ...]:
    """:func:`orphan_files` among the prediction files ``candidates`` (in order), which
    hold every orphan."""
    if not candidates:
        return ()
    keys, paths, known = pred.keys, pred.paths, set(gt_keys)
    return tuple(
        (keys[i], paths[i])
        for i in candidates
        if keys[i] not in known and keys[i] not in unreadable
    )


def select_images(gt: ColumnSet, pred: ColumnSet, drop_difficult: bool = False) -> Selection:
    """Stage *select*: every image whose ground truth was read, paired with its predictions
    by key; files skipped on either side, predictions without ground truth apart; with
    ``drop_difficult`` (the ``"drop"`` rule), difficult ground truth left out, as if never
    annotated."""
    skipped = tuple(sorted((*gt.skipped, *pred.skipped), key=lambda s: (s.path, s.line or 0)))
    unreadable = {s.key for s in skipped if s.key is not None}
    pred_index = {key: i for i, key in enumerate(pred.keys)}
    n_gt_files = len(gt.keys)
    if unreadable:
        images = [i for i, key in enumerate(gt.keys) if key not in unreadable]
        image_keys = [gt.keys[i] for i in images]
    else:  # every ground-truth file was read (the usual case): no filter
        images, image_keys = list(range(n_gt_files)), list(gt.keys)
    # Each image's prediction file, -1 without one (a key missing from the index).
    found: list[int] = list(map(pred_index.get, image_keys, repeat(-1)))
    pred_of = np.array(found, dtype=np.int64)
    gt_image_map = np.full(n_gt_files, -1, dtype=np.int64)
    gt_image_map[images] = np.arange(len(images))
    has_pred = pred_of >= 0
    pred_image_map = np.full(len(pred.keys), -1, dtype=np.int64)
    pred_image_map[pred_of[has_pred]] = np.flatnonzero(has_pred)
    pred_of_image = tuple(None if p < 0 else p for p in found)
    missing = tuple(image_keys[j] for j in np.flatnonzero(~has_pred).tolist())
    # A prediction file paired with no image holds every orphan.
    unpaired = np.flatnonzero(pred_image_map < 0).tolist()
    orphan = tuple(path for _, path in _orphans(gt.keys, pred, unreadable, unpaired))
    gt_rows, gt_image = _evaluated_rows(gt_image_map, gt.image)
    if drop_difficult and gt_rows.size:
        kept = ~gt.difficult[gt_rows]
        gt_rows, gt_image = gt_rows[kept], gt_image[kept]
    pred_rows, pred_image = _evaluated_rows(pred_image_map, pred.image)
    scores = pred.scores if pred_rows.size == pred.scores.size else pred.scores[pred_rows]
    return Selection(
        images=tuple(images),
        pred_of_image=pred_of_image,
        gt_rows=gt_rows,
        gt_image=gt_image,
        pred_rows=pred_rows,
        pred_image=pred_image,
        scored=bool((~np.isnan(scores)).any()),
        missing=missing,
        orphan=orphan,
        skipped=skipped,
    )


def _evaluated_rows(image_map: IntArray, image: IntArray) -> tuple[IntArray, IntArray]:
    """The rows (int64) of the boxes whose file's image is evaluated (``image_map`` of it
    not -1), and that image of each (int64): each box's mapped once."""
    if not image.size:
        return image, image_map[image]
    mapped = image_map[image]
    rows = np.flatnonzero(mapped >= 0)
    return rows, (mapped if rows.size == mapped.size else mapped[rows])


def prepare_cells(
    gt: ColumnSet,
    pred: ColumnSet,
    selection: Selection,
    conv: Conventions,
    score_thresholds: ScoreThresholds | None = None,
) -> tuple[Prepared, IntArray]:
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
    # One stable sort of an int64 key (image, class): lexsort's order, several times faster
    # (every class index is below len(class_names): the ground truth's own are among them).
    g_key = selection.gt_image.astype(np.int64) * max(len(class_names), 1) + g_class
    g_order = np.argsort(g_key, kind="stable")
    del g_key
    g_difficult = gt.difficult[gt_rows[g_order]]
    sorted_gt = SortedGroundTruth(
        rows=gt_rows[g_order],
        image=selection.gt_image[g_order],
        label=g_class[g_order],
        ignore=g_difficult if conv.difficult != "count" else np.zeros_like(g_difficult),
        crowd=g_difficult if conv.difficult == "crowd" else np.zeros_like(g_difficult),
    )
    p_class = pred_remap[pred.labels[pred_rows]] if pred_rows.size else pred_rows
    sorted_pred, by_score = _sort_predictions(
        pred_rows, selection.pred_image, p_class, ranking_scores(pred.scores, pred_rows),
        conv.max_dets if selection.scored else None, len(class_names),
    )  # fmt: skip
    prepared = Prepared(
        conventions=conv,
        gt_columns=gt,
        pred_columns=pred,
        score_thresholds=score_thresholds,
        class_names=class_names,
        gt=sorted_gt,
        pred=sorted_pred,
        levels=IouLevels.of(conv),
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
) -> tuple[SortedPredictions, IntArray]:
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
    # every class's ranking: two radix sorts where the kernels are built, else numpy's.
    fast = kernels(match_kernels.MODULE)
    by_score: IntArray
    p_order: IntArray
    if fast is not None and not np.isnan(score).any() and score.size < 2**31:
        by_score, p_order = match_kernels.score_cell_order(fast, score, image * n_k + label)
        # Indices are held as int32 (half the memory of a large set); cells stay int64. The
        # score order in terms of the sorted arrays, and each one's rank (its place in its
        # cell's run: runs, not a table of every image x class, which 10,000 images of
        # 50,000 classes make 4 GB), in the same pass.
        rows_all, image_all, label_all, by_score, rank_all = match_kernels.sorted_cells(
            fast, p_order, by_score, (rows, image, label)
        )
    else:
        by_score = np.argsort(-score, kind="stable")
        p_order = _cell_score_order(image * n_k + label, score, by_score)
        rows_all, image_all, label_all, by_score, rank_all = _sorted_cells(
            p_order, by_score, rows, image, label
        )
    # The scores in the sorted order: converted once (ranking_scores), read by later stages.
    score_all = score[p_order]
    del p_order
    # pycocotools keeps the max_dets highest-scored predictions of an image-class; without
    # scores there is no ranking to cut, and every prediction is kept.
    kept = rank_all < max_dets if max_dets is not None else np.ones_like(rank_all, bool)
    if kept.all():
        # Nothing beyond max_dets: the same arrays, no copies (they are large).
        found = SortedPredictions(
            rows_all, image_all, label_all, kept, rows_all, image_all, label_all, rank_all,
            score_all,
        )  # fmt: skip
        return found, by_score
    found = SortedPredictions(
        rows_all, image_all, label_all, kept,
        rows_all[kept], image_all[kept], label_all[kept], rank_all[kept], score_all,
    )  # fmt: skip
    # The score order of the kept predictions, as indices among them.
    kept_place = np.cumsum(kept, dtype=np.int64) - 1
    return found, kept_place[by_score[kept[by_score]]].astype(np.int32)


def _sorted_cells(
    p_order: IntArray, by_score: IntArray, rows: IntArray, image: IntArray, label: IntArray
) -> tuple[Int32Array, Int32Array, Int32Array, Int32Array, Int32Array]:
    """The predictions' rows, images and labels in ``p_order`` (int32), the score order
    ``by_score`` as places among them, and each one's rank in its image-class (what the
    compiled ``sorted_cells`` gives in one pass)."""
    # Indices are held as int32 (half the memory of a large set); cells stay int64.
    rows_all = rows[p_order].astype(np.int32)
    # The score order in terms of the sorted arrays below.
    sorted_place = np.empty(p_order.size, dtype=np.int32)
    sorted_place[p_order] = np.arange(p_order.size, dtype=np.int32)
    by_score = sorted_place[by_score]
    del sorted_place
    image_all = image[p_order].astype(np.int32)
    label_all = label[p_order].astype(np.int32)
    # A prediction's rank: its place in its cell's run (the cells are sorted). Runs, not a
    # table of every image x class, which 10,000 images of 50,000 classes make 4 GB.
    return rows_all, image_all, label_all, by_score, _run_places(image_all, label_all)


def _run_places(image: Int32Array, label: Int32Array) -> Int32Array:
    """Each entry's place in its run of equal ``(image, label)`` (the pairs sorted)."""
    n = image.size
    first = np.empty(n, dtype=bool)
    if n:
        first[0] = True
        np.not_equal(image[1:], image[:-1], out=first[1:])
        first[1:] |= label[1:] != label[:-1]
    index = np.arange(n, dtype=np.int32)
    # The start of each entry's run: the latest run start at or before it.
    place = np.where(first, index, np.int32(0))
    np.maximum.accumulate(place, out=place)
    np.subtract(index, place, out=place)
    return place


def pair_and_match(
    prepared: Prepared,
    by_score: IntArray,
    stage: Callable[[str], None],
    ranges: Callable[[PairSpace], RangeMatcher | None] | None = None,
) -> Paired:
    """Stage *pair and match*: every pair of the same image-class scored once (each box's
    best IoU on the other side, and the pairs that can match), then matched under the
    protocol's rule at every threshold; each class's ranking from ``by_score`` (see
    :func:`prepare_cells`).

    Where ``ranges`` gives other ground-truth sets to match (COCO's area ranges: see
    :func:`vocmatch.evaluation.range_flags.scan_ranges`), they ride along the unmatched
    rule's matching as the pairs are scored, into :attr:`Paired.range_flags`.

    A pair of regions whose IoU is provably below every threshold is not clipped
    (:func:`~vocmatch.evaluation.pair_space.iou_floor`): the scan's best IoUs are exact
    where they reach the lowest threshold, which is all the matching reads; the per-box
    records read the exact ones (:meth:`PairScan.exact_pred_best_iou`)."""
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
        sorted_shapes(prepared.gt_columns.shapes, gt.rows),
        sorted_shapes(prepared.pred_columns.shapes, pred.rows),
        pred_rows=pred.rows,
        iou_floor=iou_floor(thresholds),
        float32=conv.iou_arithmetic == "float32",
    )
    # The unmatched rule's matching is made as the pairs are scored (in ranking order).
    first = along = None
    if prepared.scored and conv.match_rule in ("unmatched", "unmatched-first"):
        along = None if ranges is None else ranges(space)
        first = RankedMatcher(
            gt.rows.size, gt.ignore, gt.crowd, thresholds, conv.strict_threshold,
            first_on_ties=conv.match_rule == "unmatched-first", ranges=along,
        )  # fmt: skip
    scan = PairScan(space, float(thresholds.min()), conv.strict_threshold, first, pred.rank)
    stage("matching")
    if first is not None:
        shape = (thresholds.size, gt.rows.size, pred.rows.size)
        m = Matching(first.hits(), gt.ignore, shape)
    elif prepared.scored and conv.match_rule == "iou-order":
        from vocmatch.evaluation.iou_order import match_iou_order

        m = match_iou_order(prepared, scan, pred.rank, RankingScores.of(prepared).kept)
    else:
        m = match_all(
            scan, pred.rank, gt.ignore, gt.crowd, thresholds, conv.match_rule,
            conv.strict_threshold, prepared.scored,
        )  # fmt: skip
    flags = None if along is None else (along.matched, along.ignored)
    return Paired(scan, m, class_ranking(by_score, pred.label, n_k), flags)


def score_floor(prepared: Prepared) -> FloatArray | None:
    """``(K,)`` each class's score threshold, None without thresholds."""
    if not prepared.score_thresholds:
        return None
    return np.array([prepared.score_thresholds.floor(n) for n in prepared.class_names])


def count_outcomes(prepared: Prepared, m: Matching, scores: RankingScores) -> Counted:
    """Stage *count*: each kept prediction's outcome at the IoU threshold. With score
    thresholds, only the predictions that pass count (module doc of
    :mod:`vocmatch.evaluation.thresholds`: their matches are those the one matching of all
    gave them)."""
    matched_t, ignored_t = m.pred_flags(prepared.levels.evaluation)
    counted_t = matched_t & ~ignored_t
    missed = ~m.gt_matched & ~prepared.gt.ignore[None, :]
    floor = score_floor(prepared)
    if floor is None:
        return Counted(matched_t, ignored_t, counted_t, ignored_t, missed, None, None)
    passing = scores.kept >= floor[prepared.pred.label]
    passing_all = scores.all >= floor[prepared.pred.label_all]
    return Counted(
        matched_t, ignored_t, counted_t & passing, ignored_t & passing, missed, passing,
        passing_all,
    )  # fmt: skip


def class_counts(prepared: Prepared, counted: Counted) -> ClassCounts:
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


def sorted_shapes(
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

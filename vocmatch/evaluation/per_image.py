"""Stage *per image* of the column evaluator (:mod:`vocmatch.evaluation.stages`): every
image's counts at each matched threshold (:func:`per_image_counts`) and its per-box records
in the reference's order (:func:`per_box_matches`), which the match records keep
(:mod:`vocmatch.evaluation.records`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.evaluation.accumulate import segment_starts
from vocmatch.evaluation.candidates import Matching
from vocmatch.evaluation.result import Outcome
from vocmatch.evaluation.stage_inputs import Counted, Paired, Prepared
from vocmatch.readers.scan import ColumnSet

if TYPE_CHECKING:
    from types import ModuleType

    from vocmatch.evaluation.box_outcomes import Match

__all__ = [
    "PerImageCounts",
    "per_box_matches",
    "per_image_counts",
]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
Int32Array = npt.NDArray[np.int32]
Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PerImageCounts:
    """Per image, at each threshold of :class:`~vocmatch.evaluation.stage_inputs._Levels`
    (int64 arrays, read as columns of every image at once).

    Attributes:
        tp: ``(T, I)`` true positives.
        fp: ``(T, I)`` false positives.
        fn: ``(T, I)`` missed ground truth.
        gt: ``(I,)`` ground truth that counts.
        gt_ignored: ``(I,)`` ignored ground truth.
        pred: ``(I,)`` predictions that count (all, kept or not).
        pred_ignored: ``(I,)`` predictions that count matched to ignored ground truth.
        tp_iou: The IoU of each TP at the evaluation threshold, by image, then as the
            reference lists matches: class, then file order.
        tp_bounds: ``(I + 1,)`` where each image's run starts in ``tp_iou``.
    """

    tp: Int64Array
    fp: Int64Array
    fn: Int64Array
    gt: Int64Array
    gt_ignored: Int64Array
    pred: Int64Array
    pred_ignored: Int64Array
    tp_iou: FloatArray
    tp_bounds: Int64Array


def per_image_counts(
    prepared: Prepared, m: Matching, counted: Counted, n_images: int
) -> PerImageCounts:
    """Stage *per image*: the counts of every image, from the matched pairs: TP are matches
    to an object that counts, FP the kept predictions left unmatched."""
    gt, pred = prepared.gt, prepared.pred
    n_t = prepared.levels.thresholds.size
    passing, passing_all = counted.passing, counted.passing_all
    ignored_image = np.bincount(gt.image[gt.ignore], minlength=n_images)
    gt_per_image = np.bincount(gt.image, minlength=n_images)
    if passing is None or passing_all is None:
        kept_per_image = np.bincount(pred.image, minlength=n_images)
        pred_per_image = np.bincount(pred.image_all, minlength=n_images)
    else:
        kept_per_image = np.bincount(pred.image[passing], minlength=n_images)
        pred_per_image = np.bincount(pred.image_all[passing_all], minlength=n_images)
    fast = kernels(match_kernels.MODULE)
    tp_counts, hit_counts = _hit_counts(fast, prepared, m, passing, n_images)
    fp_counts = kept_per_image[None, :] - hit_counts
    del hit_counts
    if passing is None:
        # Per threshold: a nonzero over every (threshold, object) costs more than counting.
        if fast is not None:
            fn_counts = match_kernels.image_counts(fast, counted.missed, gt.image, n_images)
        else:
            fn_counts = np.zeros((n_t, n_images), dtype=np.int64)
            for i, missed in enumerate(counted.missed):
                fn_counts[i] = np.bincount(gt.image[missed], minlength=n_images)
    else:
        # Each object that counts is matched at most once: FN = objects that count - TP.
        fn_counts = (gt_per_image - ignored_image)[None, :] - tp_counts
    # The IoU of each TP, ordered as the reference lists matches: class, then file order.
    tp_pred = np.flatnonzero(counted.counted)
    _, tp_iou = m.of(prepared.levels.evaluation, tp_pred)
    tp_order = _cell_file_order(pred.image[tp_pred], pred.label[tp_pred], pred.rows[tp_pred])
    return PerImageCounts(
        tp=_int64(tp_counts),
        fp=_int64(fp_counts),
        fn=_int64(fn_counts),
        gt=_int64(gt_per_image - ignored_image),
        gt_ignored=_int64(ignored_image),
        pred=_int64(pred_per_image),
        pred_ignored=_int64(np.bincount(pred.image[counted.ignored_counted], minlength=n_images)),
        tp_iou=np.ascontiguousarray(tp_iou[tp_order], dtype=np.float64),
        tp_bounds=_int64(segment_starts(pred.image[tp_pred][tp_order], n_images)),
    )


def _int64(values: npt.NDArray[Any]) -> Int64Array:
    """``values`` as int64 (no copy where they are)."""
    return np.asarray(values, dtype=np.int64)


def _cell_file_order(image: IntArray, label: IntArray, rows: IntArray) -> IntArray:
    """The order of ``np.lexsort((rows, label, image))`` where ``(image, label)`` is sorted
    already: one stable sort of (run, row) in one int64 key, nearly in order."""
    n = image.size
    width = int(rows.max()) + 1 if n else 1
    if n * width >= 2**62:
        return np.lexsort((rows, label, image))
    first = np.empty(n, dtype=bool)
    if n:
        first[0] = True
        np.not_equal(image[1:], image[:-1], out=first[1:])
        first[1:] |= label[1:] != label[:-1]
    run = np.cumsum(first, dtype=np.int64) - 1
    return np.argsort(run * width + rows, kind="stable")


def _hit_counts(
    fast: ModuleType | None,
    prepared: Prepared,
    m: Matching,
    passing: BoolArray | None,
    n_images: int,
) -> tuple[IntArray, IntArray]:
    """``(T, I)`` each image's matched pairs at each threshold whose ground truth counts
    (TP), and all of them; with ``passing``, of the passing predictions only: one pass by
    the compiled kernel where it is built, else numpy's counts."""
    gt_ignore, pred_image = prepared.gt.ignore, prepared.pred.image
    n_t = prepared.levels.thresholds.size
    if fast is not None:
        return match_kernels.hit_counts(
            fast, (m.hit_t, m.hit_pred, m.hit_gt), pred_image, gt_ignore, passing,
            (n_t, n_images),
        )  # fmt: skip
    hit_image = pred_image[m.hit_pred]
    hit_counts = ~gt_ignore[m.hit_gt]
    hit_level = m.hit_t
    if passing is not None:
        hit_pass = passing[m.hit_pred]
        hit_image, hit_counts, hit_level = (
            hit_image[hit_pass],
            hit_counts[hit_pass],
            hit_level[hit_pass],
        )
    # One count over (threshold, image) for all thresholds at once.
    tp_counts = _level_counts(hit_level[hit_counts], hit_image[hit_counts], n_t, n_images)
    return tp_counts, _level_counts(hit_level, hit_image, n_t, n_images)


def _level_counts(level: IntArray, image: IntArray, n_t: int, n_images: int) -> IntArray:
    """``(n_t, n_images)``: how many entries fall on each (threshold, image)."""
    key = level.astype(np.int64) * n_images + image
    return np.bincount(key, minlength=n_t * n_images).reshape(n_t, n_images)


def per_box_matches(
    prepared: Prepared, paired: Paired, counted: Counted, n_images: int
) -> list[tuple[Match, ...]]:
    """Stage *per image*: the per-box records of every image in the reference's order: per
    class, kept predictions in file order, then predictions beyond max_dets, then missed
    ground truth. With score thresholds, only predictions that pass have records, as if the
    others had never been there."""
    from vocmatch.evaluation.box_outcomes import Match

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
    best_pred = scan.exact_pred_best_iou()
    if p_pass is None:
        best_gt = scan.exact_gt_best_iou()
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


def _first_rows(columns: ColumnSet) -> list[int]:
    """The first row of each image in a column set."""
    starts: list[int] = segment_starts(columns.image, len(columns.keys)).tolist()
    return starts

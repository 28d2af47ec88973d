"""The reference evaluator: image by image and class by class, as the definitions read.

This is the evaluator vocmatch had before it evaluated every image at once, kept as the
oracle of :mod:`vocmatch.evaluation.engine`: ``tests/evaluation/test_batch.py`` checks that the product gives the
same :class:`~vocmatch.evaluation.scoring.Evaluation`, every number and every per-box record to the
bit, under every convention, on random, real, unscored and shape sets. It matches one
image-class at a time with plain loops (:func:`match_class`), so its logic can be read
against pycocotools' ``evaluateImg`` and the devkit's ``voc_eval.py`` line by line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import Curve, average_precision, precision_at_recall, precision_recall_curve
from vocmatch.core.geometry import shape_areas, shape_iou_matrix
from vocmatch.core.iou import box_area, crowd_iou_matrix, iou_matrix
from vocmatch.core.match import ClassMatch, MatchRule, pred_order
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import SWEEP_THRESHOLDS, Conventions, protocol
from vocmatch.evaluation.box_outcomes import Match
from vocmatch.evaluation.result import (
    COCO_AREAS,
    ClassResult,
    Evaluation,
    ImageResult,
    Outcome,
    SweepResult,
    case_notes,
    class_result,
    coco_summarize,
    finish,
    input_notes,
    score_notes,
    shape_notes,
)
from vocmatch.evaluation.scoring import fold_names
from vocmatch.evaluation.summary_stats import CocoStats
from vocmatch.readers.parse import AnnotationSet

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
_COCO_MAX_DETS: tuple[int, ...] = (1, 10, 100)


# Matching one image-class ---------------------------------------------------------------


def _passes(value: float, threshold: float, strict: bool) -> bool:
    return value > threshold if strict else value >= threshold


def _match_scored_unmatched(
    iou: FloatArray,
    order: IntArray,
    gt_ignore: BoolArray,
    gt_crowd: BoolArray,
    threshold: float,
    strict: bool,
) -> tuple[BoolArray, IntArray, BoolArray]:
    n_gt, n_pred = iou.shape
    pred_matched = np.zeros(n_pred, dtype=bool)
    pred_gt = np.zeros(n_pred, dtype=np.int64)
    gt_taken = np.zeros(n_gt, dtype=bool)
    # Ground truth that counts is tried before ignored ground truth (stable, as pycocotools).
    gt_sequence = np.argsort(gt_ignore, kind="mergesort")
    for j in order:
        column = iou[:, j]
        best = -1
        best_iou = threshold
        for g in gt_sequence:
            if gt_taken[g] and not gt_crowd[g]:
                continue
            if best > -1 and not gt_ignore[best] and gt_ignore[g]:
                break
            value = column[g]
            if best == -1:
                if not _passes(value, threshold, strict):
                    continue
            elif value < best_iou:
                continue
            best, best_iou = int(g), float(value)
        if best > -1:
            pred_matched[j] = True
            pred_gt[j] = best
            gt_taken[best] = True
    pred_ignored = pred_matched & gt_ignore[pred_gt] if n_gt else np.zeros(n_pred, dtype=bool)
    return pred_matched, pred_gt, pred_ignored


def _match_scored_devkit(
    iou: FloatArray,
    order: IntArray,
    gt_ignore: BoolArray,
    threshold: float,
    strict: bool,
) -> tuple[BoolArray, IntArray, BoolArray]:
    n_gt, n_pred = iou.shape
    pred_matched = np.zeros(n_pred, dtype=bool)
    pred_gt = np.zeros(n_pred, dtype=np.int64)
    pred_ignored = np.zeros(n_pred, dtype=bool)
    if n_gt == 0:
        return pred_matched, pred_gt, pred_ignored
    gt_taken = np.zeros(n_gt, dtype=bool)
    best_gt = np.argmax(iou, axis=0)  # first maximum, as numpy's argmax in voc_eval.py
    for j in order:
        g = int(best_gt[j])
        if not _passes(float(iou[g, j]), threshold, strict):
            continue
        if gt_ignore[g]:
            # voc_eval.py: a detection on a difficult object is neither TP nor FP.
            pred_matched[j] = True
            pred_gt[j] = g
            pred_ignored[j] = True
        elif not gt_taken[g]:
            pred_matched[j] = True
            pred_gt[j] = g
            gt_taken[g] = True
        # else: the best ground truth is taken: a false positive (devkit rule).
    return pred_matched, pred_gt, pred_ignored


def _match_unscored(
    iou: FloatArray,
    gt_ignore: BoolArray,
    gt_crowd: BoolArray,
    threshold: float,
    strict: bool,
) -> tuple[BoolArray, IntArray, BoolArray]:
    n_gt, n_pred = iou.shape
    pred_matched = np.zeros(n_pred, dtype=bool)
    pred_gt = np.zeros(n_pred, dtype=np.int64)
    if n_gt == 0 or n_pred == 0:
        return pred_matched, pred_gt, np.zeros(n_pred, dtype=bool)
    passing = iou > threshold if strict else iou >= threshold
    gt_index, pred_index = np.nonzero(passing)
    values = iou[gt_index, pred_index]
    # Pairs with a ground truth that counts first, then by descending IoU; ties in
    # (gt, pred) index order, since np.nonzero is row-major and lexsort is stable.
    sequence = np.lexsort((-values, gt_ignore[gt_index]))
    gt_taken = np.zeros(n_gt, dtype=bool)
    for k in sequence:
        g, j = int(gt_index[k]), int(pred_index[k])
        if pred_matched[j] or (gt_taken[g] and not gt_crowd[g]):
            continue
        pred_matched[j] = True
        pred_gt[j] = g
        gt_taken[g] = True
    pred_ignored = pred_matched & gt_ignore[pred_gt]
    return pred_matched, pred_gt, pred_ignored


def match_class(
    iou: npt.ArrayLike,
    pred_scores: npt.ArrayLike | None,
    thresholds: npt.ArrayLike,
    gt_ignore: npt.ArrayLike | None = None,
    gt_crowd: npt.ArrayLike | None = None,
    rule: MatchRule = "unmatched",
    strict: bool = False,
) -> ClassMatch:
    """Match the predictions of one image-class to its ground truth at each threshold.

    Args:
        iou: ``(N_gt, M_pred)`` overlaps (for crowd regions, intersection over the
            prediction's area, see :func:`vocmatch.core.iou.crowd_iou_matrix`).
        pred_scores: ``(M,)`` scores, or None when the predictions carry no scores.
        thresholds: ``(T,)`` IoU thresholds.
        gt_ignore: ``(N,)`` ground truth that neither counts as missed nor makes a matched
            prediction a true positive (``difficult`` objects, crowd regions).
        gt_crowd: ``(N,)`` crowd regions, which may absorb any number of predictions
            (``"unmatched"`` rule only).
        rule: ``"unmatched"`` or ``"devkit"``.
        strict: Match at ``IoU > t`` instead of ``IoU >= t``.

    Returns:
        The matching at every threshold.

    >>> m = match_class([[0.5, 0.9]], [0.8, 0.7], [0.5])
    >>> m.pred_matched.tolist(), m.gt_matched.tolist()
    ([[True, False]], [[True]])
    """
    matrix = np.asarray(iou, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"Expected `iou` to have shape (N, M), got {matrix.shape}")
    n_gt, n_pred = matrix.shape
    levels = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    ignore = (
        np.zeros(n_gt, dtype=bool)
        if gt_ignore is None
        else np.asarray(gt_ignore, dtype=bool).reshape(-1)
    )
    crowd = (
        np.zeros(n_gt, dtype=bool)
        if gt_crowd is None
        else np.asarray(gt_crowd, dtype=bool).reshape(-1)
    )
    if ignore.shape != (n_gt,) or crowd.shape != (n_gt,):
        raise ValueError(f"Expected `gt_ignore` and `gt_crowd` to have shape ({n_gt},)")
    order = None if pred_scores is None else pred_order(pred_scores)
    if order is not None and order.shape != (n_pred,):
        raise ValueError(f"Expected `pred_scores` to have shape ({n_pred},), got {order.shape}")

    pred_matched = np.zeros((levels.size, n_pred), dtype=bool)
    pred_gt = np.zeros((levels.size, n_pred), dtype=np.int64)
    pred_ignored = np.zeros((levels.size, n_pred), dtype=bool)
    gt_matched = np.zeros((levels.size, n_gt), dtype=bool)
    for t, threshold in enumerate(levels.tolist()):
        if order is None:
            result = _match_unscored(matrix, ignore, crowd, threshold, strict)
        elif rule == "devkit":
            result = _match_scored_devkit(matrix, order, ignore, threshold, strict)
        else:
            result = _match_scored_unmatched(matrix, order, ignore, crowd, threshold, strict)
        pred_matched[t], pred_gt[t], pred_ignored[t] = result
        hits = pred_gt[t][pred_matched[t]]
        gt_matched[t, hits] = True
    return ClassMatch(pred_matched, pred_gt, pred_ignored, gt_matched)


# Evaluating image by image ----------------------------------------------------------------


@dataclass(slots=True)
class _Cell:
    """One image-class: the boxes and the matching at every threshold (internal)."""

    image: int
    name: str
    gt_indices: list[int]
    pred_indices: list[int]  # kept predictions, in file order
    dropped: list[int]  # beyond max_dets
    gt_ignore: BoolArray
    gt_crowd: BoolArray
    gt_area: FloatArray
    pred_area: FloatArray
    scores: FloatArray | None
    iou: FloatArray
    match: ClassMatch


def _array(boxes: Sequence[Box]) -> FloatArray:
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def _cells(
    index: int,
    gt: ImageAnnotation,
    pred: ImageAnnotation | None,
    conventions: Conventions,
    thresholds: tuple[float, ...],
    scored: bool,
) -> list[_Cell]:
    gt_by_class: dict[str, list[int]] = {}
    for i, box in enumerate(gt.boxes):
        gt_by_class.setdefault(box.name, []).append(i)
    pred_by_class: dict[str, list[int]] = {}
    if pred is not None:
        for j, box in enumerate(pred.boxes):
            pred_by_class.setdefault(box.name, []).append(j)
    cells = []
    for name in sorted(gt_by_class.keys() | pred_by_class.keys()):
        gt_indices = gt_by_class.get(name, [])
        pred_indices = pred_by_class.get(name, [])
        gt_boxes = [gt.boxes[i] for i in gt_indices]
        difficult = np.array([b.difficult for b in gt_boxes], dtype=bool)
        ignore = difficult if conventions.difficult != "count" else np.zeros_like(difficult)
        crowd = difficult if conventions.difficult == "crowd" else np.zeros_like(difficult)
        dropped: list[int] = []
        scores: FloatArray | None = None
        if scored and pred is not None:
            raw = np.array([_score(pred.boxes[j]) for j in pred_indices], dtype=np.float64).reshape(
                -1
            )
            if conventions.max_dets is not None and len(pred_indices) > conventions.max_dets:
                # pycocotools keeps the maxDets highest-scored (stable) per image and class.
                keep = np.sort(np.argsort(-raw, kind="mergesort")[: conventions.max_dets])
                kept = set(keep.tolist())
                dropped = [j for k, j in enumerate(pred_indices) if k not in kept]
                pred_indices = [pred_indices[k] for k in keep.tolist()]
                raw = raw[keep]
            scores = raw
        pred_boxes = [pred.boxes[j] for j in pred_indices] if pred is not None else []
        gt_array = _array(gt_boxes)
        pred_array = _array(pred_boxes)
        if conventions.difficult == "crowd":
            iou = crowd_iou_matrix(gt_array, pred_array, crowd, conventions.pixel_inclusive)
        else:
            iou = iou_matrix(gt_array, pred_array, conventions.pixel_inclusive)
        gt_area = box_area(gt_array)
        pred_area = box_area(pred_array)
        if any(b.shape is not None for b in (*gt_boxes, *pred_boxes)):
            iou, gt_area, pred_area = _region_overlap(
                gt_boxes,
                pred_boxes,
                crowd if conventions.difficult == "crowd" else None,
                iou,
                (gt_area, pred_area),
            )
        match = match_class(
            iou,
            scores,
            thresholds,
            gt_ignore=ignore,
            gt_crowd=crowd,
            rule=conventions.match_rule,
            strict=conventions.strict_threshold,
        )
        cells.append(
            _Cell(
                image=index,
                name=name,
                gt_indices=gt_indices,
                pred_indices=pred_indices,
                dropped=dropped,
                gt_ignore=ignore,
                gt_crowd=crowd,
                gt_area=gt_area,
                pred_area=pred_area,
                scores=scores,
                iou=iou,
                match=match,
            )
        )
    return cells


def _region_overlap(
    gt_boxes: Sequence[Box],
    pred_boxes: Sequence[Box],
    gt_crowd: BoolArray | None,
    box_iou: FloatArray,
    box_areas: tuple[FloatArray, FloatArray],
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """IoU and areas of an image-class that holds a rotated box or a polygon.

    A pair with a shape on either side gets the exact region overlap (continuous areas); a
    pair of plain boxes keeps the box arithmetic and its conventions, so its IoU does not
    depend on what else the image holds. A shape's area is its region's.
    """
    gt_shaped = np.array([b.shape is not None for b in gt_boxes], dtype=bool)
    pred_shaped = np.array([b.shape is not None for b in pred_boxes], dtype=bool)
    region = shape_iou_matrix(gt_boxes, pred_boxes, gt_crowd)
    iou = np.where(gt_shaped[:, None] | pred_shaped[None, :], region, box_iou)
    gt_area = np.where(gt_shaped, shape_areas(gt_boxes), box_areas[0])
    pred_area = np.where(pred_shaped, shape_areas(pred_boxes), box_areas[1])
    return iou, gt_area, pred_area


def _score(box: Box) -> float:
    # A prediction without a score in a scored set ranks last.
    return box.score if box.score is not None else -math.inf


def _counts(cell: _Cell, t: int) -> tuple[int, int, int]:
    m = cell.match
    tp = int(np.count_nonzero(m.pred_matched[t] & ~m.pred_ignored[t]))
    fp = int(np.count_nonzero(~m.pred_matched[t]))
    fn = int(np.count_nonzero(~m.gt_matched[t] & ~cell.gt_ignore))
    return tp, fp, fn


def _image_matches(cell: _Cell, t: int, pred: ImageAnnotation | None) -> list[Match]:
    m = cell.match
    out: list[Match] = []
    iou = cell.iou
    for k, j in enumerate(cell.pred_indices):
        score = pred.boxes[j].score if pred is not None else None
        if m.pred_matched[t, k]:
            g = int(m.pred_gt[t, k])
            outcome: Outcome = "ignored" if m.pred_ignored[t, k] else "tp"
            out.append(Match(cell.name, outcome, cell.gt_indices[g], j, float(iou[g, k]), score))
        else:
            best = float(iou[:, k].max()) if iou.shape[0] else 0.0
            out.append(Match(cell.name, "fp", None, j, best, score))
    for j in cell.dropped:
        score = pred.boxes[j].score if pred is not None else None
        out.append(Match(cell.name, "ignored", None, j, 0.0, score))
    for g, i in enumerate(cell.gt_indices):
        if not m.gt_matched[t, g] and not cell.gt_ignore[g]:
            best = float(iou[g].max()) if iou.shape[1] else 0.0
            out.append(Match(cell.name, "fn", i, None, best, None))
    return out


def _ranked(cells: Sequence[_Cell], t: int) -> tuple[BoolArray, FloatArray]:
    """TP flags and scores of a class's predictions across images, ranked by score.

    Ties keep image order (sorted keys) then file order: a stable sort of the predictions
    already sorted within each image, as pycocotools' ``accumulate`` and the MATLAB devkit.
    """
    tps: list[BoolArray] = []
    scores: list[FloatArray] = []
    for cell in cells:
        if cell.scores is None:
            continue
        order = np.argsort(-cell.scores, kind="mergesort")
        keep = ~cell.match.pred_ignored[t][order]
        tps.append((cell.match.pred_matched[t][order] & ~cell.match.pred_ignored[t][order])[keep])
        scores.append(cell.scores[order][keep])
    if not tps:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.float64)
    tp = np.concatenate(tps)
    score = np.concatenate(scores)
    order = np.argsort(-score, kind="mergesort")
    return tp[order], score[order]


def _ignored(cell: _Cell, t: int) -> int:
    """Kept predictions matched to an ignored (difficult) object."""
    m = cell.match
    return int(np.count_nonzero(m.pred_matched[t] & m.pred_ignored[t]))


def _class_ap(
    cells: Sequence[_Cell], n_gt: int, conventions: Conventions, levels: dict[float, int]
) -> tuple[float | None, Curve, list[float]]:
    t = levels[conventions.iou_threshold]
    tp, scores = _ranked(cells, t)
    curve = precision_recall_curve(tp, scores, n_gt)
    if n_gt == 0:
        return None, curve, []
    values = []
    eps = float(np.spacing(1)) if conventions.interpolation == "101-point" else None
    for threshold in conventions.ap_thresholds:
        tp_t, _ = _ranked(cells, levels[threshold])
        c = precision_recall_curve(tp_t, scores, n_gt, eps=eps)
        values.append(average_precision(c.recall, c.precision, conventions.interpolation))
    return float(np.mean(values)), curve, values


def coco_accumulate(
    n_gt: int,
    scores: FloatArray,
    matched: BoolArray,
    ignored: BoolArray,
    rank: npt.NDArray[np.int64],
) -> tuple[FloatArray, FloatArray]:
    """pycocotools' ``accumulate`` for one class and one area range.

    Args:
        n_gt: Ground truth that counts in this area range.
        scores: ``(P,)`` prediction scores, images in order and each image's predictions in
            descending score order (pycocotools' concatenation of ``dtScores``).
        matched: ``(T, P)`` the prediction matched at each IoU threshold.
        ignored: ``(T, P)`` the prediction is ignored (matched to an ignored object, or
            unmatched and outside the area range).
        rank: ``(P,)`` the prediction's position in its image's score order.

    Returns:
        ``(T, 101, 3)`` interpolated precision and ``(T, 3)`` recall for maxDets 1, 10, 100.
    """
    n_t = matched.shape[0]
    precision = np.zeros((n_t, 101, len(_COCO_MAX_DETS)))
    recall = np.zeros((n_t, len(_COCO_MAX_DETS)))
    # One stable sort serves every maxDets: the stable order of a subset is the subset of
    # the stable order.
    order = np.argsort(-scores, kind="mergesort")
    eps = float(np.spacing(1))
    for m, max_det in enumerate(_COCO_MAX_DETS):
        selected = order[rank[order] < max_det]
        hit = matched[:, selected]
        counted = ~ignored[:, selected]
        tp_sum = np.cumsum(hit & counted, axis=1).astype(np.float64)
        fp_sum = np.cumsum(~hit & counted, axis=1).astype(np.float64)
        recall_all = tp_sum / n_gt
        precision_all = tp_sum / (tp_sum + fp_sum + eps)
        for t in range(n_t):
            # Ignored predictions leave the ranking; the rest are TP or FP.
            keep = counted[t]
            rc = recall_all[t, keep]
            recall[t, m] = rc[-1] if rc.size else 0.0
            precision[t, :, m] = precision_at_recall(rc, precision_all[t, keep])
    return precision, recall


def _coco_stats(
    cells: Sequence[_Cell], class_names: Sequence[str], conventions: Conventions
) -> CocoStats:
    """pycocotools' ``evaluate``/``accumulate``/``summarize`` on the matched cells."""
    thresholds = np.asarray(conventions.ap_thresholds, dtype=np.float64)
    n_t, n_k, n_a, n_m = thresholds.size, len(class_names), len(COCO_AREAS), len(_COCO_MAX_DETS)
    precision = -np.ones((n_t, 101, n_k, n_a, n_m))
    recall = -np.ones((n_t, n_k, n_a, n_m))
    by_class: dict[str, list[_Cell]] = {}
    for cell in cells:
        by_class.setdefault(cell.name, []).append(cell)
    for k, name in enumerate(class_names):
        class_cells = by_class.get(name, [])
        for a, (low, high) in enumerate(COCO_AREAS):
            scores: list[FloatArray] = []
            matched: list[BoolArray] = []
            ignored: list[BoolArray] = []
            n_gt = 0
            for cell in class_cells:
                # pycocotools ignores ground truth outside the area range.
                ignore = cell.gt_ignore | (cell.gt_area < low) | (cell.gt_area > high)
                n_gt += int(np.count_nonzero(~ignore))
                if cell.scores is None or cell.scores.size == 0:
                    continue
                match = match_class(
                    cell.iou, cell.scores, thresholds, ignore, cell.gt_crowd,
                    conventions.match_rule, conventions.strict_threshold,
                )  # fmt: skip
                order = np.argsort(-cell.scores, kind="mergesort")
                pred_out = (cell.pred_area < low) | (cell.pred_area > high)
                hit = match.pred_matched[:, order]
                scores.append(cell.scores[order])
                matched.append(hit)
                ignored.append(match.pred_ignored[:, order] | (~hit & pred_out[order][None, :]))
            if n_gt == 0:
                continue
            if scores:
                rank = np.concatenate([np.arange(s.size, dtype=np.int64) for s in scores])
                result = coco_accumulate(
                    n_gt,
                    np.concatenate(scores),
                    np.concatenate(matched, axis=1),
                    np.concatenate(ignored, axis=1),
                    rank,
                )
            else:
                empty = np.zeros((n_t, 0), dtype=bool)
                result = coco_accumulate(
                    n_gt, np.zeros(0), empty, empty, np.zeros(0, dtype=np.int64)
                )
            precision[:, :, k, a, :], recall[:, k, a, :] = result
    return coco_summarize(precision, recall, thresholds)


def evaluate(
    gt: AnnotationSet,
    pred: AnnotationSet,
    conventions: Conventions | None = None,
    *,
    fold_case: bool = False,
) -> Evaluation:
    """Evaluate a prediction set against a ground-truth set.

    Images are paired by key. A ground-truth image without a prediction file is evaluated
    with no predictions (all its objects are missed) and listed in ``missing_pred``; a
    prediction file without ground truth is not evaluated and is listed in
    ``orphan_pred``. An image whose ground-truth or prediction file could not be read is
    left out (its file is in ``skipped``), so a broken file never counts as errors.

    Values that are legal but suspicious (negative or enormous coordinates, scores outside
    [0, 1], class names that differ only in case) are evaluated as given and noted.

    Args:
        gt: Ground-truth annotations.
        pred: Predictions, with or without scores.
        conventions: The protocol; defaults to ``protocol("default")``.
        fold_case: Lower-case every class name before matching, so ``Car`` and ``car``
            are one class (see :func:`fold_names`).

    Returns:
        The evaluation.
    """
    conv = conventions or protocol("default")
    names = case_notes(
        (b.name for a in (*gt.annotations, *pred.annotations) for b in a.boxes), fold_case
    )
    if fold_case:
        gt, pred = fold_names(gt), fold_names(pred)
    skipped = tuple(sorted((*gt.skipped, *pred.skipped), key=lambda s: (s.path, s.line or 0)))
    unreadable = {s.key for s in pred.skipped if s.key is not None}
    unreadable |= {s.key for s in gt.skipped if s.key is not None}
    pred_by_key = {a.key: a for a in pred.annotations}
    gt_keys = {a.key for a in gt.annotations}
    orphan = tuple(
        a.path for a in pred.annotations if a.key not in gt_keys and a.key not in unreadable
    )
    pairs = [(a, pred_by_key.get(a.key)) for a in gt.annotations if a.key not in unreadable]
    missing = tuple(a.key for a, p in pairs if p is None)

    pred_boxes = [b for _, p in pairs if p is not None for b in p.boxes]
    scored = any(b.score is not None for b in pred_boxes)
    unscored = sum(1 for b in pred_boxes if b.score is None)
    unscored_files = sum(
        1 for _, p in pairs if p is not None and any(b.score is None for b in p.boxes)
    )
    notes = [*gt.notes, *pred.notes]
    notes += score_notes(scored, unscored, bool(pred_boxes), files=unscored_files)
    files = [a for a, _ in pairs] + [p for _, p in pairs if p is not None]
    notes += input_notes(
        [a.path for a in files],
        [i for i, a in enumerate(files) for _ in a.boxes],
        _array([b for a in files for b in a.boxes]),
        [math.nan] * sum(len(a.boxes) for a, _ in pairs)
        + [math.nan if b.score is None else b.score for b in pred_boxes],
    )
    notes += names
    notes += shape_notes(sum(1 for a in files for b in a.boxes if b.shape is not None), conv)

    levels_list = sorted({conv.iou_threshold, *SWEEP_THRESHOLDS, *conv.ap_thresholds})
    levels = {value: i for i, value in enumerate(levels_list)}
    thresholds = tuple(levels_list)
    t = levels[conv.iou_threshold]

    cells: list[_Cell] = []
    images: list[ImageResult] = []
    for index, (gt_image, pred_image) in enumerate(pairs):
        image_cells = _cells(index, gt_image, pred_image, conv, thresholds, scored)
        cells.extend(image_cells)
        matches: list[Match] = []
        for cell in image_cells:
            matches.extend(_image_matches(cell, t, pred_image))
        sweep = []
        for threshold in SWEEP_THRESHOLDS:
            counts = [_counts(cell, levels[threshold]) for cell in image_cells]
            sweep.append(
                SweepResult(
                    threshold,
                    sum(c[0] for c in counts),
                    sum(c[1] for c in counts),
                    sum(c[2] for c in counts),
                )
            )
        counts = [_counts(cell, t) for cell in image_cells]
        tp_ious = [m.iou for m in matches if m.outcome == "tp"]
        n_ignored = sum(int(np.count_nonzero(c.gt_ignore)) for c in image_cells)
        images.append(
            ImageResult(
                key=gt_image.key,
                gt_path=gt_image.path,
                pred_path=pred_image.path if pred_image is not None else None,
                gt=len(gt_image.boxes) - n_ignored,
                gt_ignored=n_ignored,
                pred=len(pred_image.boxes) if pred_image is not None else 0,
                tp=sum(c[0] for c in counts),
                fp=sum(c[1] for c in counts),
                fn=sum(c[2] for c in counts),
                # fsum: correctly rounded, so the value does not depend on summation order.
                mean_iou=math.fsum(tp_ious) / len(tp_ious) if tp_ious else None,
                sweep=tuple(sweep),
                matches=tuple(matches),
                pred_ignored=sum(_ignored(cell, t) for cell in image_cells),
            )
        )

    by_class: dict[str, list[_Cell]] = {}
    for cell in cells:
        by_class.setdefault(cell.name, []).append(cell)
    class_names = sorted(by_class)
    classes: list[ClassResult] = []
    for name in class_names:
        class_cells = by_class[name]
        counts = [_counts(cell, t) for cell in class_cells]
        tp = sum(c[0] for c in counts)
        fp = sum(c[1] for c in counts)
        fn = sum(c[2] for c in counts)
        n_gt = sum(int(np.count_nonzero(~c.gt_ignore)) for c in class_cells)
        n_ignored = sum(int(np.count_nonzero(c.gt_ignore)) for c in class_cells)
        n_pred = sum(len(c.pred_indices) for c in class_cells)
        ap: float | None = None
        curve: Curve | None = None
        values: list[float] = []
        if scored:
            ap, curve, values = _class_ap(class_cells, n_gt, conv, levels)
        ap50 = ap75 = None
        if conv.summary == "coco" and values:
            at = list(conv.ap_thresholds)
            ap50 = values[at.index(0.5)] if 0.5 in at else None
            ap75 = values[at.index(0.75)] if 0.75 in at else None
        classes.append(
            class_result(
                name, n_gt, n_ignored, n_pred, tp, fp, fn, ap, curve,
                pred_ignored=sum(_ignored(cell, t) for cell in class_cells),
                ap50=ap50, ap75=ap75,
            )
        )  # fmt: skip
    coco = _coco_stats(cells, class_names, conv) if conv.summary == "coco" and scored else None
    return finish(conv, images, classes, coco, skipped, missing, orphan, notes)

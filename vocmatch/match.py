"""Match predictions to ground truth within one image and one class.

Two match rules exist, each a named option:

* ``"unmatched"`` (default; pycocotools ``COCOeval.evaluateImg``): predictions in descending
  score order each take the still-unmatched ground truth with the highest IoU at or above the
  threshold. A ground truth that is not ignored is preferred over an ignored one; among
  equal IoUs the later ground truth (in file order) wins, as in pycocotools. A crowd region
  may absorb any number of predictions.
* ``"devkit"`` (PASCAL VOC devkit, ``voc_eval.py``): each prediction goes to the ground truth
  with the highest IoU (the first one on ties) even if that one is already taken; a taken
  one makes the prediction a false positive.

Predictions without scores (two annotators compared) are paired highest IoU first across
the whole image-class: the pair with the largest IoU is matched, both are removed, and so
on. The result never depends on anything but the boxes, their file order and their scores.

A threshold ``t`` matches at ``IoU >= t`` (inclusive, as the MATLAB devkit's ``VOCevaldet.m``
and pycocotools); ``strict=True`` gives ``IoU > t``, as the widely copied Python
``voc_eval.py`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["ClassMatch", "MatchRule", "match_class", "pred_order"]

MatchRule = Literal["unmatched", "devkit"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ClassMatch:
    """The matching of one image-class at several thresholds.

    Arrays are indexed by threshold first. ``pred_gt[t, j]`` is the index of the ground
    truth matched to prediction ``j`` at threshold ``t``, valid only where
    ``pred_matched[t, j]`` is True (an unmatched prediction has no ground truth; the index
    there is meaningless and must not be read).

    Attributes:
        pred_matched: ``(T, M)`` the prediction matched a ground truth (TP or ignored).
        pred_gt: ``(T, M)`` index of that ground truth.
        pred_ignored: ``(T, M)`` the prediction is neither TP nor FP (matched to an ignored
            ground truth).
        gt_matched: ``(T, N)`` the ground truth was matched.
    """

    pred_matched: BoolArray
    pred_gt: IntArray
    pred_ignored: BoolArray
    gt_matched: BoolArray


def pred_order(scores: npt.ArrayLike) -> IntArray:
    """Indices of predictions in descending score order, ties kept in file order.

    A stable sort (``mergesort``), as pycocotools uses, so equal scores never reorder.

    >>> pred_order([0.5, 0.9, 0.5]).tolist()
    [1, 0, 2]
    """
    values = np.asarray(scores, dtype=np.float64)
    return np.argsort(-values, kind="mergesort").astype(np.int64)


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
            prediction's area, see :func:`vocmatch.iou.crowd_iou_matrix`).
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

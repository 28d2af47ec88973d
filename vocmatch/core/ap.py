"""Precision/recall curves and average precision under each interpolation convention.

* ``"all-point"``: PASCAL VOC from 2010 on (devkit ``VOCap``, ``voc_eval.py`` ``voc_ap``):
  the area under the precision envelope, summed where recall changes.
* ``"11-point"``: PASCAL VOC 2007: the mean of the highest precision at recall >= r for
  r in 0, 0.1, ..., 1.
* ``"101-point"``: pycocotools ``COCOeval.accumulate``: the precision envelope read at
  recall 0, 0.01, ..., 1 (``searchsorted``, left), 0 past the last recall reached.
* ``"101-point-trapezoid"``: the ``ultralytics`` package's ``compute_ap`` (releases 8.4.37
  on): the precision envelope of the curve opened at (0, 1) and closed by a drop to 0 at the
  last recall reached, read by linear interpolation at recall 0, 0.01, ..., 1 and
  integrated by the trapezoid rule.
* ``"101-point-trapezoid-to-1"``: the same package's up to 8.4.36: the envelope closed by
  precision 0 at recall 1, so that it falls linearly from the last recall reached to 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "COCO_RECALL_THRESHOLDS",
    "TRAPEZOID_RECALL_POINTS",
    "Curve",
    "Interpolation",
    "average_precision",
    "precision_recall_curve",
    "trapezoid_ap",
]

Interpolation = Literal[
    "all-point", "11-point", "101-point", "101-point-trapezoid", "101-point-trapezoid-to-1"
]

FloatArray = npt.NDArray[np.float64]

#: pycocotools' ``recThrs``, built the same way so the values are bit-identical.
COCO_RECALL_THRESHOLDS: FloatArray = np.linspace(
    0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True
)


@dataclass(frozen=True, slots=True)
class Curve:
    """A precision/recall curve: one point per ranked prediction that is not ignored.

    Attributes:
        recall: ``(K,)`` cumulative recall; NaN for a class without ground truth, where
            recall is undefined (the VOC devkit's ``tp / npos`` gives NaN too).
        precision: ``(K,)`` cumulative precision.
        scores: ``(K,)`` the score of the prediction at each point, descending.
    """

    recall: FloatArray
    precision: FloatArray
    scores: FloatArray


def precision_recall_curve(
    tp: npt.ArrayLike, scores: npt.ArrayLike, n_gt: int, eps: float | None = None
) -> Curve:
    """Cumulative precision and recall over predictions ranked by score.

    Args:
        tp: ``(K,)`` True for a true positive, False for a false positive, in ranking
            order (ignored predictions already removed).
        scores: ``(K,)`` their scores.
        n_gt: The number of ground truth objects that count.
        eps: Added to the precision denominator: pycocotools adds ``np.spacing(1)``;
            None guards a zero denominator as the devkit does with ``max(tp + fp, eps)``.

    Returns:
        The curve; without ground truth (``n_gt`` 0) its recall is NaN throughout.

    >>> c = precision_recall_curve([True, False, True], [0.9, 0.8, 0.7], n_gt=4)
    >>> c.recall.tolist(), [round(p, 4) for p in c.precision.tolist()]
    ([0.25, 0.25, 0.5], [1.0, 0.5, 0.6667])
    >>> precision_recall_curve([False, False], [0.9, 0.8], n_gt=0).recall.tolist()
    [nan, nan]
    """
    hits = np.asarray(tp, dtype=bool)
    tp_sum = np.cumsum(hits).astype(np.float64)
    fp_sum = np.cumsum(~hits).astype(np.float64)
    # Recall is undefined without ground truth: NaN, as the devkit's 0 / 0 (not 0).
    recall = tp_sum / n_gt if n_gt > 0 else np.full_like(tp_sum, np.nan)
    if eps is None:
        precision = tp_sum / np.maximum(tp_sum + fp_sum, np.finfo(np.float64).eps)
    else:
        precision = tp_sum / (tp_sum + fp_sum + eps)
    return Curve(recall, precision, np.asarray(scores, dtype=np.float64).copy())


def _envelope(precision: FloatArray) -> FloatArray:
    # Running maximum from the right: precision at recall r is the best at recall >= r.
    return np.maximum.accumulate(precision[::-1])[::-1]


def average_precision(
    recall: npt.ArrayLike, precision: npt.ArrayLike, interpolation: Interpolation
) -> float:
    """Average precision of a curve.

    Args:
        recall: ``(K,)`` non-decreasing recall.
        precision: ``(K,)`` precision at each point.
        interpolation: ``"all-point"``, ``"11-point"`` or ``"101-point"``.

    Returns:
        AP in [0, 1]; 0.0 for an empty curve.

    >>> average_precision([0.5, 1.0], [1.0, 0.5], "all-point")
    0.75
    >>> round(average_precision([0.5, 1.0], [1.0, 0.5], "11-point"), 6)
    0.772727
    """
    rec = np.asarray(recall, dtype=np.float64)
    prec = np.asarray(precision, dtype=np.float64)
    if rec.size == 0:
        return 0.0
    if interpolation == "all-point":
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = _envelope(np.concatenate(([0.0], prec, [0.0])))
        changed = np.nonzero(mrec[1:] != mrec[:-1])[0]
        return float(np.sum((mrec[changed + 1] - mrec[changed]) * mpre[changed + 1]))
    if interpolation == "11-point":
        total = 0.0
        for level in np.arange(0.0, 1.1, 0.1):
            reached = rec >= level
            total += float(np.max(prec[reached])) if reached.any() else 0.0
        return total / 11.0
    if interpolation == "101-point":
        return float(np.mean(precision_at_recall(rec, prec)))
    if interpolation == "101-point-trapezoid":
        return trapezoid_ap(rec, prec)
    if interpolation == "101-point-trapezoid-to-1":
        return trapezoid_ap(rec, prec, drop_after_last=False)
    raise ValueError(f"unknown interpolation {interpolation!r}")


#: The recall points of ``"101-point-trapezoid"``: 0, 0.01, ..., 1 as ``np.linspace`` makes them.
TRAPEZOID_RECALL_POINTS: FloatArray = np.linspace(0.0, 1.0, 101)


def trapezoid_ap(
    recall: FloatArray, precision: FloatArray, *, drop_after_last: bool = True
) -> float:
    """AP under ``"101-point-trapezoid"``: the envelope of the curve with (0, 1) before it and
    precision 0 at its last recall and at recall 1, interpolated linearly at 101 recall
    points and integrated by the trapezoid rule; ``"101-point-trapezoid-to-1"`` without the
    point at the last recall (``drop_after_last=False``).

    Args:
        recall: ``(K,)`` non-decreasing recall.
        precision: ``(K,)`` precision.
        drop_after_last: Precision drops to 0 at the last recall reached; else it falls
            linearly from there to 0 at recall 1.

    Returns:
        AP in [0, 1].

    >>> round(trapezoid_ap(np.array([0.5, 1.0]), np.array([1.0, 0.5])), 4)
    0.8725
    """
    if drop_after_last:
        last = recall[-1] if recall.size else 1.0
        mrec = np.concatenate(([0.0], recall, [last], [1.0]))
        mpre = _envelope(np.concatenate(([1.0], precision, [0.0], [0.0])))
    else:
        mrec = np.concatenate(([0.0], recall, [1.0]))
        mpre = _envelope(np.concatenate(([1.0], precision, [0.0])))
    values = np.interp(TRAPEZOID_RECALL_POINTS, mrec, mpre)
    return float(np.trapezoid(values, TRAPEZOID_RECALL_POINTS))


def precision_at_recall(recall: FloatArray, precision: FloatArray) -> FloatArray:
    """pycocotools' interpolated precision at the 101 recall thresholds.

    Args:
        recall: ``(K,)`` non-decreasing recall.
        precision: ``(K,)`` precision.

    Returns:
        ``(101,)`` interpolated precision; 0 at recall levels never reached.
    """
    out = np.zeros(COCO_RECALL_THRESHOLDS.size, dtype=np.float64)
    if recall.size == 0:
        return out
    envelope = _envelope(precision)
    positions = np.searchsorted(recall, COCO_RECALL_THRESHOLDS, side="left")
    reached = positions < recall.size
    out[reached] = envelope[positions[reached]]
    return out

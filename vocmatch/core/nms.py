"""Non-maximum suppression: the boxes a detector keeps of many overlapping ones.

Raw detector output (before its own post-processing) holds several boxes per object;
evaluating it as is counts each extra box as a false positive. :func:`nms` keeps, class by
class (or across classes, ``agnostic``), the highest-scored box and drops every box of the
same class that overlaps a kept one by an IoU above the threshold, as
``torchvision.ops.nms`` does applied to each class:

* boxes are taken in descending score order, equal scores in the order given (a stable
  sort);
* a box is dropped when its IoU with a kept box is strictly above ``iou``;
* the IoU is the continuous one, ``(x2 - x1) * (y2 - y1)`` areas (no +1 pixel), computed in
  the boxes' own float type as torchvision's CPU kernel computes it
  (``inter / (area_kept + area_other - inter)``, intersection clamped at 0), so that a union
  of 0 gives NaN there and keeps the box here: two empty boxes never suppress each other.

Corners are ``x1, y1, x2, y2``. A box without a score cannot be ranked: NMS needs scores.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["nms"]

IntArray = npt.NDArray[np.int64]


def nms(
    boxes: npt.ArrayLike,
    scores: npt.ArrayLike,
    labels: npt.ArrayLike | None = None,
    iou: float = 0.5,
) -> IntArray:
    """The indices of the boxes kept, highest score first (ties in the order given).

    Args:
        boxes: ``(N, 4)`` corners ``x1, y1, x2, y2`` (float32 boxes are compared in float32).
        scores: ``(N,)`` finite scores.
        labels: ``(N,)`` classes (any values that compare equal); None suppresses across
            classes (class-agnostic NMS).
        iou: A box is dropped when its IoU with a kept box of its class is above this.

    Returns:
        The kept boxes' indices, in descending score order (ties in the order given).

    Raises:
        ValueError: Shapes that do not agree, a score that is not finite, or ``iou`` not a
            number in [0, 1].

    >>> boxes = [[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30], [0, 0, 10, 10]]
    >>> nms(boxes, [0.9, 0.8, 0.7, 0.6], ["car", "car", "car", "dog"], iou=0.5).tolist()
    [0, 2, 3]
    >>> nms(boxes, [0.9, 0.8, 0.7, 0.6], iou=0.5).tolist()
    [0, 2]
    """
    array = np.asarray(boxes)
    if array.dtype != np.float32:
        array = array.astype(np.float64)
    score = np.asarray(scores, dtype=np.float64)
    if array.ndim != 2 or (array.size and array.shape[1] != 4) or score.shape != (array.shape[0],):
        raise ValueError(
            f"expected boxes (N, 4) and scores (N,), got {array.shape} and {score.shape}"
        )
    if not bool(np.isfinite(score).all()):
        raise ValueError("every score must be a finite number: NMS ranks boxes by score")
    if isinstance(iou, bool) or not isinstance(iou, (int, float)) or not 0.0 <= iou <= 1.0:
        raise ValueError(f"iou must be a number in [0, 1], got {iou!r}")
    order = np.argsort(-score, kind="stable")
    if labels is None:
        groups = [order]
    else:
        label = np.asarray(labels)
        if label.shape != score.shape:
            raise ValueError(f"expected labels ({score.size},), got {label.shape}")
        _, codes = np.unique(label, return_inverse=True)
        ranked = codes.reshape(-1)[order]
        groups = [order[ranked == code] for code in np.unique(ranked)]
    kept = np.concatenate(
        [_greedy(array, group, float(iou)) for group in groups] or [np.zeros(0, np.int64)]
    ).astype(np.int64)
    # Every kept box in the one score order, ties in the order given.
    found: IntArray = kept[np.lexsort((kept, -score[kept]))]
    return found


def _greedy(boxes: npt.NDArray[np.floating], order: IntArray, threshold: float) -> IntArray:
    """One class's boxes (``order``: by descending score) kept by greedy suppression."""
    x1, y1, x2, y2 = (boxes[order, k] for k in range(4))
    area = (x2 - x1) * (y2 - y1)
    alive = np.ones(order.size, dtype=bool)
    kept = []
    for i in range(order.size):
        if not alive[i]:
            continue
        kept.append(order[i])
        rest = np.flatnonzero(alive[i + 1 :]) + i + 1
        if not rest.size:
            break
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0)
        inter = w * h
        with np.errstate(invalid="ignore", divide="ignore"):
            overlap = inter / (area[i] + area[rest] - inter)
        # Compared as double, as the kernel compares its float with its double threshold.
        alive[rest[overlap.astype(np.float64) > threshold]] = False
    return np.asarray(kept, dtype=np.int64)

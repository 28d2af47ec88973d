"""A confusion matrix between classes and background.

:func:`confusion_matrix` counts every box that counts at the evaluation threshold exactly
once, in a ``(K + 1, K + 1)`` matrix over the ``K`` class names (sorted) and
``"background"`` (last). Rows are the ground-truth class, columns the predicted class.

* A true positive of class ``c`` counts at ``[c, c]``.
* Missed ground truth (FN) and unmatched predictions (FP) of the same image are then paired
  across classes: among all pairs of an FN of class ``a`` and an FP of another class ``b``
  whose IoU passes the threshold, the pair with the highest IoU is taken first, both boxes
  leave, and so on (ties: lower ground-truth index, then lower prediction index, in file
  order). Each pair counts once at ``[a, b]``: the object was found in the right place
  under the wrong class.
* An FN left unpaired counts at ``[a, background]`` (the object was missed); an FP left
  unpaired counts at ``[background, b]`` (a prediction of nothing).
* Ignored boxes (``difficult`` ground truth under ``ignore`` or ``crowd``, predictions
  matched to them or beyond ``max_dets``) count nowhere; ``[background, background]`` is
  always 0.

So row ``c`` sums to the class's counted ground truth (TP + FN) and column ``c`` to its
predictions that count (TP + FP). Only predictions that are FP at the threshold can be
paired, so a prediction already matched to an object of its own class is never counted a
second time as a confusion. Pairing uses IoU alone, not scores, so the matrix means the
same for two labelling passes as for a model. A ``cls`` error and an off-diagonal cell
usually name the same box, but not always: the error type looks at the best overlap of each
prediction on its own, the matrix pairs boxes one-to-one.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.geometry import BoxTree
from vocmatch.core.iou import iou_matrix, pair_iou
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evidence.annotated import (
    SCAN_PAIRS,
    AnnotatedImage,
    annotated_images,
    box_array,
    fn_indices,
    fp_indices,
    passes_threshold,
)
from vocmatch.readers.parse import AnnotationSet

__all__ = [
    "BACKGROUND",
    "ConfusionMatrix",
    "confusion_matrix",
]

IntArray = npt.NDArray[np.int64]

#: The name of the last row and column of a confusion matrix.
BACKGROUND = "background"


@dataclass(frozen=True, slots=True)
class ConfusionMatrix:
    """Counts of ground-truth class against predicted class at the evaluation threshold.

    Kept as its cells that are not zero: with ``K`` classes the full matrix has
    ``(K + 1)^2`` cells, 20 GB of them for 50,000 classes, but at most one cell per box is
    not zero.

    Attributes:
        names: The class names, sorted, then ``"background"`` last.
        rows: ``(C,)`` row (ground-truth class) of each cell that is not zero, sorted by
            row, then column.
        columns: ``(C,)`` its column (predicted class); background is the last row and
            column.
        values: ``(C,)`` its count.
    """

    names: tuple[str, ...]
    rows: IntArray
    columns: IntArray
    values: IntArray

    @property
    def counts(self) -> IntArray:
        """The full ``(K + 1, K + 1)`` matrix (for a few classes: it grows with ``K^2``)."""
        size = len(self.names)
        dense = np.zeros((size, size), dtype=np.int64)
        dense[self.rows, self.columns] = self.values
        return dense

    def count(self, gt_name: str, pred_name: str) -> int:
        """The count at ``[gt_name, pred_name]``; ``"background"`` names the last row or column.

        Raises:
            KeyError: A name is not in the matrix.
        """
        key = self._index(gt_name) * len(self.names) + self._index(pred_name)
        keys = self.rows * len(self.names) + self.columns
        at = int(np.searchsorted(keys, key))
        return int(self.values[at]) if at < keys.size and keys[at] == key else 0

    def row_totals(self) -> IntArray:
        """``(K + 1,)`` the sum of each row: a class's counted ground truth, TP + FN."""
        return np.bincount(self.rows, weights=self.values, minlength=len(self.names)).astype(
            np.int64
        )

    def column_totals(self) -> IntArray:
        """``(K + 1,)`` the sum of each column: a class's counted predictions, TP + FP."""
        return np.bincount(self.columns, weights=self.values, minlength=len(self.names)).astype(
            np.int64
        )

    def _index(self, name: str) -> int:
        if name == BACKGROUND:
            return len(self.names) - 1
        at = bisect.bisect_left(self.names, name, hi=len(self.names) - 1)
        if at < len(self.names) - 1 and self.names[at] == name:
            return at
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class _Confusion:
    """An FN paired with an FP of another class in the same image (internal)."""

    gt_index: int
    pred_index: int
    gt_name: str
    pred_name: str
    iou: float


def _cross_class_pairs(
    image: AnnotatedImage, threshold: float, strict: bool, pixel_inclusive: bool
) -> list[_Confusion]:
    """Pair the image's FN with its FP of other classes, highest IoU first, one-to-one."""
    if image.pred is None:
        return []
    fn = fn_indices(image.result.matches)
    fp = fp_indices(image.result.matches)
    if not fn or not fp:
        return []
    gt_boxes = [image.gt.boxes[i] for i in fn]
    pred_boxes = [image.pred.boxes[j] for j in fp]
    gt, pred = box_array(gt_boxes), box_array(pred_boxes)
    if passes_threshold(0.0, threshold, strict) or len(fn) * len(fp) <= SCAN_PAIRS:
        # Every pair: at threshold 0 every pair passes, boxes that do not meet included; and a
        # few boxes are scanned sooner than arrays or a tree are built.
        iou = iou_matrix(gt, pred, pixel_inclusive).tolist()
        candidates = [
            (-value, a, b)
            for a, row in enumerate(iou)
            for b, value in enumerate(row)
            if gt_boxes[a].name != pred_boxes[b].name and passes_threshold(value, threshold, strict)
        ]
    else:
        # Only boxes that meet can pass: an STR tree finds them, not an FN x FP scan.
        rows, cols = BoxTree(gt, 1.0 if pixel_inclusive else 0.0).query(pred)
        values = pair_iou(gt[rows], pred[cols], pixel_inclusive)
        keep = values > threshold if strict else values >= threshold
        candidates = [
            (-value, a, b)
            for value, a, b in zip(
                values[keep].tolist(), rows[keep].tolist(), cols[keep].tolist(), strict=True
            )
            if gt_boxes[a].name != pred_boxes[b].name
        ]
    # Highest IoU first, then lower ground-truth index, then lower prediction index.
    candidates.sort()
    taken_gt: set[int] = set()
    taken_pred: set[int] = set()
    pairs = []
    for negative, a, b in candidates:
        value = -negative
        if a in taken_gt or b in taken_pred:
            continue
        taken_gt.add(a)
        taken_pred.add(b)
        pairs.append(_Confusion(fn[a], fp[b], gt_boxes[a].name, pred_boxes[b].name, value))
    return sorted(pairs, key=lambda p: (p.gt_index, p.pred_index))


def confusion_matrix(
    evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet
) -> ConfusionMatrix:
    """The confusion matrix between classes and background at the evaluation threshold.

    See the module docstring for the exact rule; each counted ground truth and each counted
    prediction contributes exactly once.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.

    Returns:
        The matrix over the evaluation's class names (sorted) and background.

    Raises:
        InputError: An evaluated image is not in ``gt`` or ``pred``.
    """
    names = tuple(sorted(c.name for c in evaluation.classes))
    index = {name: k for k, name in enumerate(names)}
    background = len(names)
    # One (row, column) entry per box that counts, summed at the end: never the full matrix.
    rows: list[int] = []
    columns: list[int] = []
    conv = evaluation.conventions
    for image in annotated_images(evaluation, gt, pred):
        pairs = _cross_class_pairs(
            image, conv.iou_threshold, conv.strict_threshold, conv.pixel_inclusive
        )
        for p in pairs:
            rows.append(index[p.gt_name])
            columns.append(index[p.pred_name])
        paired_gt = {p.gt_index for p in pairs}
        paired_pred = {p.pred_index for p in pairs}
        for m in image.result.matches:
            k = index[m.name]
            if m.outcome == "tp":
                rows.append(k)
                columns.append(k)
            elif m.outcome == "fn" and m.gt_index not in paired_gt:
                rows.append(k)
                columns.append(background)
            elif m.outcome == "fp" and m.pred_index not in paired_pred:
                rows.append(background)
                columns.append(k)
    size = background + 1
    cells, values = np.unique(
        np.asarray(rows, dtype=np.int64) * size + np.asarray(columns, dtype=np.int64),
        return_counts=True,
    )
    return ConfusionMatrix(
        names=(*names, BACKGROUND),
        rows=cells // size,
        columns=cells % size,
        values=values.astype(np.int64),
    )

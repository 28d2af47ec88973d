"""Why predictions fail: a confusion matrix between classes and background at the threshold.

Confusion matrix
----------------
:func:`confusion_matrix` counts every box that counts at the evaluation threshold exactly
once, in a ``(K + 1, K + 1)`` matrix over the ``K`` class names (sorted) and
``"background"`` (last). Rows are the ground-truth class, columns the predicted class.

* A true positive of class ``c`` counts at ``[c, c]``.
* Missed ground truth (FN) and unmatched predictions (FP) of the same image are then paired
  across classes: among all pairs of an FN of class ``a`` and an FP of another class ``b``
  whose IoU passes the threshold (``>=``, or ``>`` under ``strict_threshold``), the pair
  with the highest IoU is taken first, both boxes leave, and so on (ties: lower
  ground-truth index, then lower prediction index, in file order). Each pair counts once at
  ``[a, b]``: the object was found in the right place under the wrong class.
* An FN left unpaired counts at ``[a, background]`` (the object was missed); an FP left
  unpaired counts at ``[background, b]`` (a prediction of nothing).
* Ignored boxes (``difficult`` ground truth under ``ignore`` or ``crowd``, predictions
  matched to them or beyond ``max_dets``) count nowhere; ``[background, background]`` is
  always 0.

So row ``c`` sums to the class's counted ground truth (TP + FN) and column ``c`` to its
predictions that count (TP + FP). Only predictions that are FP at the threshold can be
paired, so a prediction already matched to an object of its own class is never counted a
second time as a confusion. Pairing uses IoU alone, not scores, so the matrix means the
same for two labelling passes as for a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.evaluate import Evaluation, ImageResult, Match
from vocmatch.iou import iou_matrix
from vocmatch.model import Box, ImageAnnotation
from vocmatch.parse import AnnotationSet

__all__ = [
    "BACKGROUND",
    "ConfusionMatrix",
    "confusion_matrix",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The name of the last row and column of a confusion matrix.
BACKGROUND = "background"


@dataclass(frozen=True, slots=True)
class ConfusionMatrix:
    """Counts of ground-truth class against predicted class at the evaluation threshold.

    Attributes:
        names: The class names, sorted, then ``"background"`` last.
        counts: ``(K + 1, K + 1)`` counts; rows are the ground-truth class, columns the
            predicted class; the last row and column are background.
    """

    names: tuple[str, ...]
    counts: IntArray

    def count(self, gt_name: str, pred_name: str) -> int:
        """The count at ``[gt_name, pred_name]``; ``"background"`` names the last row or column.

        Raises:
            KeyError: A name is not in the matrix.
        """
        return int(self.counts[self._index(gt_name), self._index(pred_name)])

    def _index(self, name: str) -> int:
        if name == BACKGROUND:
            return len(self.names) - 1
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(name) from None


def _boxes(boxes: Sequence[Box]) -> FloatArray:
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def _passes(value: float, threshold: float, strict: bool) -> bool:
    return value > threshold if strict else value >= threshold


@dataclass(frozen=True, slots=True)
class _Confusion:
    """An FN paired with an FP of another class in the same image (internal)."""

    gt_index: int
    pred_index: int
    gt_name: str
    pred_name: str
    iou: float


def _image_annotations(
    evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet
) -> list[tuple[ImageResult, ImageAnnotation, ImageAnnotation | None]]:
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    out = []
    for image in evaluation.images:
        gt_image = gt_by_key.get(image.key)
        if gt_image is None:
            raise ValueError(f"image {image.key!r} of the evaluation is not in the ground truth")
        out.append((image, gt_image, pred_by_key.get(image.key)))
    return out


def _cross_class_pairs(
    image: ImageResult,
    gt_image: ImageAnnotation,
    pred_image: ImageAnnotation | None,
    threshold: float,
    strict: bool,
    pixel_inclusive: bool,
) -> list[_Confusion]:
    """Pair the image's FN with its FP of other classes, highest IoU first, one-to-one."""
    if pred_image is None:
        return []
    fn = sorted(m.gt_index for m in image.matches if m.outcome == "fn" and m.gt_index is not None)
    fp = sorted(
        m.pred_index for m in image.matches if m.outcome == "fp" and m.pred_index is not None
    )
    if not fn or not fp:
        return []
    gt_boxes = [gt_image.boxes[i] for i in fn]
    pred_boxes = [pred_image.boxes[j] for j in fp]
    iou = iou_matrix(_boxes(gt_boxes), _boxes(pred_boxes), pixel_inclusive)
    candidates = [
        (-float(iou[a, b]), a, b)
        for a in range(len(fn))
        for b in range(len(fp))
        if gt_boxes[a].name != pred_boxes[b].name and _passes(float(iou[a, b]), threshold, strict)
    ]
    candidates.sort()
    taken_gt: set[int] = set()
    taken_pred: set[int] = set()
    pairs = []
    for negative, a, b in candidates:
        if a in taken_gt or b in taken_pred:
            continue
        taken_gt.add(a)
        taken_pred.add(b)
        pairs.append(_Confusion(fn[a], fp[b], gt_boxes[a].name, pred_boxes[b].name, -negative))
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
        ValueError: An evaluated image is not in ``gt``.
    """
    names = tuple(sorted(c.name for c in evaluation.classes))
    index = {name: k for k, name in enumerate(names)}
    background = len(names)
    counts = np.zeros((background + 1, background + 1), dtype=np.int64)
    conv = evaluation.conventions
    for image, gt_image, pred_image in _image_annotations(evaluation, gt, pred):
        pairs = _cross_class_pairs(
            image,
            gt_image,
            pred_image,
            conv.iou_threshold,
            conv.strict_threshold,
            conv.pixel_inclusive,
        )
        paired_gt = {p.gt_index for p in pairs}
        paired_pred = {p.pred_index for p in pairs}
        for p in pairs:
            counts[index[p.gt_name], index[p.pred_name]] += 1
        for m in image.matches:
            _count_match(m, counts, index, background, paired_gt, paired_pred)
    return ConfusionMatrix(names=(*names, BACKGROUND), counts=counts)


def _count_match(
    m: Match,
    counts: IntArray,
    index: dict[str, int],
    background: int,
    paired_gt: set[int],
    paired_pred: set[int],
) -> None:
    k = index[m.name]
    if m.outcome == "tp":
        counts[k, k] += 1
    elif m.outcome == "fn" and m.gt_index not in paired_gt:
        counts[k, background] += 1
    elif m.outcome == "fp" and m.pred_index not in paired_pred:
        counts[background, k] += 1

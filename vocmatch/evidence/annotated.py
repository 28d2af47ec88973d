"""Evaluated images beside their annotations, and the rules the error analysis reads them
by: shared by the error types, the confusion matrix and tightness."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import Evaluation, ImageResult, Match
from vocmatch.readers.parse import AnnotationSet

__all__: list[str] = [
    "SCAN_PAIRS",
    "AnnotatedImage",
    "annotated_images",
    "box_array",
    "fn_indices",
    "fp_indices",
    "passes_threshold",
]

FloatArray = npt.NDArray[np.float64]

#: Up to this many pairs of an image every pair is scored, in plain Python: sooner done for
#: the handful of boxes of an ordinary image than arrays or a tree.
SCAN_PAIRS = 1 << 12


def box_array(boxes: Sequence[Box]) -> FloatArray:
    """The boxes as an ``(n, 4)`` float array of ``x1, y1, x2, y2``."""
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def passes_threshold(value: float, threshold: float, strict: bool) -> bool:
    """Whether ``value`` passes ``threshold``: above it when ``strict``, else at or above it."""
    return value > threshold if strict else value >= threshold


@dataclass(frozen=True, slots=True)
class AnnotatedImage:
    """An evaluated image with its annotations."""

    result: ImageResult
    gt: ImageAnnotation
    pred: ImageAnnotation | None


def annotated_images(
    evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet
) -> list[AnnotatedImage]:
    """Each image of ``evaluation`` with its ground truth and predictions, in the evaluation's
    order.

    Raises:
        InputError: An image of the evaluation is not in the ground truth, or has a
            prediction file but is not in the predictions.
    """
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    out = []
    for image in evaluation.images:
        gt_image = gt_by_key.get(image.key)
        if gt_image is None:
            raise InputError(f"image {image.key!r} of the evaluation is not in the ground truth")
        pred_image = pred_by_key.get(image.key)
        if pred_image is None and image.pred_path is not None:
            raise InputError(f"image {image.key!r} of the evaluation is not in the predictions")
        out.append(AnnotatedImage(image, gt_image, pred_image))
    return out


def fp_indices(matches: Iterable[Match]) -> list[int]:
    """The prediction indices of the false positives among ``matches``, sorted."""
    return sorted(m.pred_index for m in matches if m.outcome == "fp" and m.pred_index is not None)


def fn_indices(matches: Iterable[Match]) -> list[int]:
    """The ground-truth indices of the missed objects among ``matches``, sorted."""
    return sorted(m.gt_index for m in matches if m.outcome == "fn" and m.gt_index is not None)

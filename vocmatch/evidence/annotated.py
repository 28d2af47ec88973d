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

__all__: list[str] = []

FloatArray = npt.NDArray[np.float64]

#: Up to this many pairs of an image every pair is scored, in plain Python: sooner done for
#: the handful of boxes of an ordinary image than arrays or a tree.
_SCAN_PAIRS = 1 << 12


def _boxes(boxes: Sequence[Box]) -> FloatArray:
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def _passes(value: float, threshold: float, strict: bool) -> bool:
    return value > threshold if strict else value >= threshold


@dataclass(frozen=True, slots=True)
class _Image:
    """An evaluated image with its annotations (internal)."""

    result: ImageResult
    gt: ImageAnnotation
    pred: ImageAnnotation | None


def _images(evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet) -> list[_Image]:
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
        out.append(_Image(image, gt_image, pred_image))
    return out


def _fp_indices(matches: Iterable[Match]) -> list[int]:
    return sorted(m.pred_index for m in matches if m.outcome == "fp" and m.pred_index is not None)


def _fn_indices(matches: Iterable[Match]) -> list[int]:
    return sorted(m.gt_index for m in matches if m.outcome == "fn" and m.gt_index is not None)

"""The compiled AP of one curve and the ``ultralytics`` summary's classes
(``fastsummary.c``), with the numpy implementation as the fallback and the reference.

The kernel module is loaded by the caller once per stage (``kernels(MODULE)``: None without
the extension or with ``VOCMATCH_PURE_ENGINE=1``) and passed in; with None, the numpy
implementation (:func:`vocmatch.core.ap.average_precision`) runs. Both give the same bits.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import (
    COCO_RECALL_THRESHOLDS,
    TRAPEZOID_RECALL_POINTS,
    Interpolation,
    average_precision,
)

__all__ = ["INTERPOLATION_CODES", "MODULE", "class_ap", "interpolation_points"]

FloatArray = npt.NDArray[np.float64]

#: The compiled module's full name.
MODULE = "vocmatch.evaluation.fastsummary"

#: Each interpolation's number in the compiled module.
INTERPOLATION_CODES: dict[Interpolation, int] = {
    "all-point": 0,
    "11-point": 1,
    "101-point": 2,
    "101-point-trapezoid": 3,
    "101-point-trapezoid-to-1": 4,
}

#: The recall levels of ``"11-point"``, as :func:`~vocmatch.core.ap.average_precision` makes them.
ELEVEN_POINT_LEVELS: FloatArray = np.arange(0.0, 1.1, 0.1)


def interpolation_points(interpolation: Interpolation) -> FloatArray:
    """The recall levels an interpolation reads the curve at (none for ``"all-point"``)."""
    if interpolation == "11-point":
        return ELEVEN_POINT_LEVELS
    if interpolation == "101-point":
        return COCO_RECALL_THRESHOLDS
    if interpolation in ("101-point-trapezoid", "101-point-trapezoid-to-1"):
        return TRAPEZOID_RECALL_POINTS
    return np.zeros(0)


def class_ap(
    kernel: ModuleType | None,
    recall: FloatArray,
    precision: FloatArray,
    interpolation: Interpolation,
) -> float:
    """:func:`vocmatch.core.ap.average_precision` of one curve, compiled where ``kernel`` is
    the compiled module (the same bits).

    Args:
        kernel: ``kernels(MODULE)``, or None for numpy.
        recall: ``(K,)`` non-decreasing recall (NaN throughout without ground truth).
        precision: ``(K,)`` precision.
        interpolation: How AP is read off the curve.

    Returns:
        AP; 0.0 for an empty curve.
    """
    if kernel is None or interpolation not in INTERPOLATION_CODES:
        return average_precision(recall, precision, interpolation)
    code = INTERPOLATION_CODES[interpolation]
    rec = np.ascontiguousarray(recall, dtype=np.float64)
    prec = np.ascontiguousarray(precision, dtype=np.float64)
    return float(kernel.curve_ap(rec, prec, code, interpolation_points(interpolation)))

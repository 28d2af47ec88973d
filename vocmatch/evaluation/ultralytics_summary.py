"""The ``ultralytics`` summary: the ``ultralytics`` package's detection validation metrics
(8.4.x ``ap_per_class``) from match records.

The package concatenates each image's detections (in descending confidence) image after
image, ranks them all with one ``np.argsort(-conf)`` (numpy's default sort, which is not
stable: detections of equal confidence are ranked as that sort leaves them) and, for each
class with ground truth:

* AP at each of the ten thresholds: the precision envelope of the curve, opened at (0, 1)
  and closed by a drop to 0 after the last recall, read by ``np.interp`` at recall 0, 0.01,
  ..., 1 and integrated by the trapezoid rule (:func:`vocmatch.core.ap.trapezoid_ap`);
* precision and recall at IoU 0.5 as functions of the confidence, read at 1,000 evenly
  spaced confidences; P and R are their class means at the one confidence that maximises
  the mean F1 smoothed by a box filter.

mAP50 and mAP50-95 are means over the classes with ground truth (a class without
predictions counts 0). Here the detections of one image are taken in descending float32
confidence, those of equal confidence in class-name order, then in file order: the order
the records hold them in, and the order the recorded reference numbers were computed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core.ap import Interpolation, average_precision
from vocmatch.core.protocol import OperatingPoint
from vocmatch.evaluation.records import MatchRecords, PredRecords
from vocmatch.evaluation.summary_kernels import (
    INTERPOLATION_CODES,
    MODULE,
    interpolation_points,
)
from vocmatch.evaluation.ultralytics_stats import UltralyticsStats

__all__ = ["ClassCurves", "numpy_class_curves", "ultralytics_summary"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: Points of the confidence grid P, R and F1 are read on.
_GRID_POINTS = 1000
#: The package's epsilons: in the recall denominator and in F1's.
_EPS = 1e-16
#: The width of the F1 box filter, as a share of the grid.
_SMOOTH_SHARE = 0.1


def _smooth(values: FloatArray, share: float) -> FloatArray:
    """A box filter ``share`` of the length wide (odd), the ends padded with their values."""
    width = round(len(values) * share * 2) // 2 + 1
    pad = np.ones(width // 2)
    padded = np.concatenate((pad * values[0], values, pad * values[-1]), 0)
    return np.asarray(np.convolve(padded, np.ones(width) / width, mode="valid"))


def ultralytics_summary(
    records: MatchRecords,
    levels: list[int],
    n_class_gt: list[int],
    operating_point: OperatingPoint = "max-f1",
    interpolation: Interpolation = "101-point-trapezoid",
) -> tuple[list[list[float]], UltralyticsStats]:
    """Each class's AP at the AP thresholds, and the four numbers.

    Args:
        records: Match records in key order.
        levels: The place among the records' matched thresholds of each AP threshold (the
            first is IoU 0.5, where P and R are read).
        n_class_gt: Ground truth that counts, per class.
        operating_point: ``"max-f1"`` (the package's) or ``"all"``: each class's precision
            and recall over all its predictions (0 for a class without any).
        interpolation: How each AP is read off its curve
            (:func:`vocmatch.core.ap.average_precision`).

    Returns:
        Each class's AP values (empty for a class without ground truth), and the numbers.
    """
    preds = records.preds
    n_classes = len(n_class_gt)
    score = np.asarray(preds.score, dtype=np.float64)
    # As the package holds confidences: float32, a score beyond its range becoming ±inf
    # (without numpy's overflow warning, which would reach the caller).
    with np.errstate(over="ignore"):
        conf = np.where(np.isnan(score), -np.inf, score).astype(np.float32)
    kernel = kernels(MODULE)
    # Image after image, each in descending confidence (records: class, then rank, order).
    if kernel is None:
        image = np.repeat(np.arange(preds.count.size), preds.count)
        within = np.lexsort((-conf, image))
    else:
        within = np.empty(conf.size, dtype=np.int64)
        kernel.image_order(np.asarray(preds.count, dtype=np.int64), conf, within)
    conf = conf[within]
    # The package's one ranking of all detections (its default, unstable sort).
    ranked = np.argsort(-conf)
    with_gt = [k for k in range(n_classes) if n_class_gt[k] > 0]
    grid = np.linspace(0, 1, _GRID_POINTS)
    curves = ClassCurves.zeros(len(with_gt), len(levels))
    if kernel is None or interpolation not in INTERPOLATION_CODES:
        numpy_class_curves(
            preds, within, ranked, conf, levels, n_class_gt, with_gt, interpolation, grid, curves
        )
    else:
        # The same numbers, compiled (vocmatch/evaluation/fastsummary.c).
        rows = np.full(n_classes, -1, dtype=np.int64)
        rows[with_gt] = np.arange(len(with_gt))
        kernel.ultralytics_classes(
            within[ranked], np.ascontiguousarray(preds.label),
            np.ascontiguousarray(preds.matched), np.ascontiguousarray(preds.ignored),
            conf[ranked], np.asarray(levels, dtype=np.int64),
            np.asarray(n_class_gt, dtype=np.int64), rows, INTERPOLATION_CODES[interpolation],
            interpolation_points(interpolation), grid, curves.ap, curves.p_curve,
            curves.r_curve, curves.p_all, curves.r_all,
        )  # fmt: skip
    ap, p_curve, r_curve = curves.ap, curves.p_curve, curves.r_curve
    ap_values: list[list[float]] = [[] for _ in range(n_classes)]
    for row, k in enumerate(with_gt):
        ap_values[k] = ap[row].tolist()
    if not with_gt:
        return ap_values, UltralyticsStats(0.0, 0.0, 0.0, 0.0, 0.0)
    if operating_point == "all":
        lowest = float(conf.min()) if conf.size else 0.0
        return ap_values, UltralyticsStats(
            _float(curves.p_all.mean()), _float(curves.r_all.mean()), _float(ap[:, 0].mean()),
            _float(ap.mean()), lowest,
        )  # fmt: skip
    if kernel is None:
        f1_mean = (2 * p_curve * r_curve / (p_curve + r_curve + _EPS)).mean(0)
    else:
        f1_mean = np.empty(_GRID_POINTS)
        kernel.mean_f1(p_curve, r_curve, _EPS, f1_mean)
    # The box filter stays numpy's: np.convolve sums through BLAS's dot, in its own order.
    best = int(_smooth(f1_mean, _SMOOTH_SHARE).argmax())
    stats = UltralyticsStats(
        precision=_float(p_curve[:, best].mean()),
        recall=_float(r_curve[:, best].mean()),
        map50=_float(ap[:, 0].mean()),
        map50_95=_float(ap.mean()),
        confidence=_float(grid[best]),
    )
    return ap_values, stats


@dataclass(frozen=True, slots=True)
class ClassCurves:
    """What the summary reads off each class with ground truth (a row each): AP at each
    threshold ``(R, T)``, precision and recall at IoU 0.5 on the confidence grid ``(R, G)``,
    and over all the class's predictions ``(R,)``; 0 for a class without predictions."""

    ap: FloatArray
    p_curve: FloatArray
    r_curve: FloatArray
    p_all: FloatArray
    r_all: FloatArray

    @classmethod
    def zeros(cls, rows: int, n_t: int) -> ClassCurves:
        """Zeros for ``rows`` classes at ``n_t`` thresholds."""
        grid = (rows, _GRID_POINTS)
        return cls(
            np.zeros((rows, n_t)), np.zeros(grid), np.zeros(grid), np.zeros(rows), np.zeros(rows)
        )


def numpy_class_curves(
    preds: PredRecords,
    within: IntArray,
    ranked: IntArray,
    conf: npt.NDArray[np.float32],
    levels: list[int],
    n_class_gt: list[int],
    with_gt: list[int],
    interpolation: Interpolation,
    grid: FloatArray,
    out: ClassCurves,
) -> None:
    """The numpy implementation of each class's curves (the reference of the compiled
    ``fastsummary.ultralytics_classes``), into ``out``.

    Args:
        preds: The records' predictions.
        within: The records image after image, each image's in descending confidence.
        ranked: The package's ranking of ``within``.
        conf: ``(P,)`` float32 confidence in ``within`` order.
        levels: The place of each AP threshold among the records' matched thresholds.
        n_class_gt: Ground truth that counts, per class.
        with_gt: The classes with ground truth, one row of ``out`` each.
        interpolation: How each AP is read off its curve.
        grid: The confidence grid.
        out: Where the curves go (rows of classes without predictions stay 0).
    """
    label = np.asarray(preds.label)[within].astype(np.int64)
    matched = np.asarray(preds.matched)[within]
    ignored = np.asarray(preds.ignored)[within]
    shifts = np.asarray(levels, dtype=matched.dtype)[None, :]
    tp = (((matched[:, None] >> shifts) & 1) == 1) & (((ignored[:, None] >> shifts) & 1) == 0)
    tp, conf, label = tp[ranked], conf[ranked], label[ranked]
    # Each class's detections in ranking order: a stable sort by class keeps that order (the
    # same rows, in the same order, as a mask of the class would give).
    by_class = np.argsort(label, kind="stable")
    class_starts = np.searchsorted(label[by_class], np.arange(len(n_class_gt) + 1))
    for row, k in enumerate(with_gt):
        mine = by_class[class_starts[k] : class_starts[k + 1]]
        if mine.size == 0:
            continue
        hits = tp[mine]
        tp_sum = hits.cumsum(0)
        fp_sum = (1 - hits).cumsum(0)
        recall = tp_sum / (n_class_gt[k] + _EPS)
        precision = tp_sum / (tp_sum + fp_sum)
        out.r_curve[row] = np.interp(-grid, -conf[mine], recall[:, 0], left=0)
        out.p_curve[row] = np.interp(-grid, -conf[mine], precision[:, 0], left=1)
        out.p_all[row], out.r_all[row] = precision[-1, 0], recall[-1, 0]
        for t in range(len(levels)):
            out.ap[row, t] = average_precision(recall[:, t], precision[:, t], interpolation)


def _float(value: Any) -> float:
    return float(value)

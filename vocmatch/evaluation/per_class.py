"""Stage *per class* of the column evaluator (:mod:`vocmatch.evaluation.engine`): each
class's AP at every AP threshold (:func:`per_class_ap`), its counts and curve
(:func:`build_class_results`), and pycocotools' numbers, each area range matched again
(:func:`coco_numbers`). The accumulation itself is :mod:`vocmatch.evaluation.accumulate`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.evaluation.accumulate import (
    AreaMatches,
    ClassCounts,
    ClassRanking,
    CocoOrder,
    RankedFlags,
    class_ap_values,
    class_curves,
    class_results,
    coco_area,
)
from vocmatch.evaluation.candidates import match_all
from vocmatch.evaluation.result import COCO_AREAS, ClassResult, CocoStats, CocoSummary
from vocmatch.evaluation.stage_inputs import Areas, Counted, Paired, Prepared

__all__ = [
    "AREA_NAMES",
    "build_class_results",
    "class_counts",
    "coco_numbers",
    "per_class_ap",
]

FloatArray = npt.NDArray[np.float64]
# Indices: int32 where they come from the columns, int64 where computed.
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
Int32Array = npt.NDArray[np.int32]


#: The names of COCO's area ranges (``COCO_AREAS``), in order.
AREA_NAMES = ("all", "small", "medium", "large")


def _ranked_flags(
    prepared: Prepared, paired: Paired, counted: Counted, pred_score: FloatArray
) -> RankedFlags:
    """The kept predictions as AP and the curves read them: the evaluation threshold's
    flags from ``counted``, any other's from the matching."""
    m, levels = paired.matching, prepared.levels

    def flags(level: int) -> tuple[BoolArray, BoolArray]:
        if level == levels.evaluation:
            return counted.matched, counted.ignored
        return m.pred_flags(level)

    return RankedFlags(paired.ranking, pred_score, flags, levels.index, levels.evaluation)


def per_class_ap(
    prepared: Prepared,
    paired: Paired,
    counted: Counted,
    pred_score: FloatArray,
    coco_class_ap: dict[int, list[float]] | None,
) -> list[list[float]]:
    """Stage *per class*: each class's AP at every AP threshold of the protocol
    (:func:`vocmatch.evaluation.accumulate.class_ap_values`)."""
    n_class_gt: list[int] = prepared.gt.per_class(len(prepared.class_names))[0].tolist()
    ranked = _ranked_flags(prepared, paired, counted, pred_score)
    return class_ap_values(prepared.conventions, ranked, n_class_gt, prepared.scored, coco_class_ap)


def class_counts(prepared: Prepared, ranking: ClassRanking, counted: Counted) -> ClassCounts:
    """Each class's counts at the IoU threshold; with score thresholds, of the predictions
    that pass."""
    n_k = len(prepared.class_names)
    n_counting, n_ignored = prepared.gt.per_class(n_k)
    label = prepared.pred.label
    passing = counted.passing
    tp = np.bincount(label[counted.counted], minlength=n_k)
    if passing is None:
        fp = np.bincount(label[~counted.matched], minlength=n_k)
        missed = counted.missed[prepared.levels.evaluation]
        fn = np.bincount(prepared.gt.label[missed], minlength=n_k)
        n_pred = np.bincount(label, minlength=n_k)
    else:
        fp = np.bincount(label[~counted.matched & passing], minlength=n_k)
        fn = n_counting - tp
        n_pred = np.bincount(label[passing], minlength=n_k)
    pred_ignored = np.bincount(label[counted.ignored_counted], minlength=n_k)
    return ClassCounts(n_counting, n_ignored, n_pred, tp, fp, fn, pred_ignored)


def build_class_results(
    prepared: Prepared,
    ranking: ClassRanking,
    counted: Counted,
    pred_score: FloatArray,
    ap_values: list[list[float]],
) -> list[ClassResult]:
    """Each class's counts at the IoU threshold, its curve, and its AP from ``ap_values``
    (see :func:`per_class_ap`)."""
    levels = prepared.levels
    # Only the evaluation threshold's flags are read: the curve's.
    ranked = RankedFlags(
        ranking, pred_score, lambda _: (counted.matched, counted.ignored), levels.index,
        levels.evaluation,
    )  # fmt: skip
    counts = class_counts(prepared, ranking, counted)
    curves = class_curves(ranked, counts.gt.tolist(), prepared.scored)
    return class_results(
        prepared.conventions, prepared.class_names, counts, curves, ap_values, prepared.scored
    )


def coco_numbers(
    prepared: Prepared, paired: Paired, areas: Areas, stage: Callable[[str], None]
) -> tuple[CocoStats, dict[int, list[float]]]:
    """Stage *COCO*: pycocotools' 12 numbers, and for each class with ground truth its AP at
    each threshold as pycocotools' precision gives it (area all, maxDets 100). Each area
    range is matched again, then accumulated class by class
    (:func:`vocmatch.evaluation.accumulate.coco_area`): pycocotools' ``(T, 101, K, A, M)``
    precision array is never built (48 GB for 50,000 classes under ten thresholds)."""
    conv, scan = prepared.conventions, paired.scan
    gt, pred = prepared.gt, prepared.pred
    n_k = len(prepared.class_names)
    thresholds = np.asarray(conv.ap_thresholds, dtype=np.float64)
    summary = CocoSummary(thresholds)
    class_ap: dict[int, list[float]] = {}
    order = CocoOrder.of(paired.ranking, pred.label, pred.rank, thresholds.size)
    for a, (low, high) in enumerate(COCO_AREAS):
        stage(f"COCO area {AREA_NAMES[a]}")
        ignore = gt.ignore | (areas.gt < low) | (areas.gt > high)
        m = match_all(
            scan, pred.rank, ignore, gt.crowd, thresholds, conv.match_rule,
            conv.strict_threshold, prepared.scored,
        )  # fmt: skip
        matches = AreaMatches(
            m.hit_pred,
            m.hit_t,
            ignore[m.hit_gt],
            (areas.pred < low) | (areas.pred > high),
            np.bincount(gt.label[~ignore], minlength=n_k),
        )
        coco_area(summary, a, matches, order, class_ap)
        del m, matches  # before the next
    return summary.stats(), class_ap

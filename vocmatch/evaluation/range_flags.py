"""COCO's area ranges matched by the compiled kernels (:mod:`vocmatch.core.match_kernels`):
every range, each with the ground truth outside it ignored, at every AP threshold, in one
pass, straight into the records' flags.

Under the ``"unmatched"`` and ``"unmatched-first"`` rules the ranges ride along the
evaluation's own matching (:func:`scan_ranges`): the pair scan hands each piece of pairs to
one kernel that keeps a matching state for every threshold of the evaluation and every
range and AP threshold; in each image-class where a range is matched as the evaluation is
(it ignores the same ground truth there, or each of the two ignores all or none of it:
:func:`~vocmatch.core.match_kernels.alike_cells`), the range takes the evaluation's picks
instead of matching again (``"all"`` nearly everywhere). Under the
``"devkit"`` rule, :func:`range_flags` matches every range from each prediction's best
ground truth.

The numpy route of :mod:`vocmatch.evaluation.to_records` (each range matched on its own, the
evaluation's matching reused where it stands for the range's) stays the reference and the
fallback: where the kernels are not built, under ``VOCMATCH_PURE_ENGINE=1``, and for what
is rare enough to leave to numpy (predictions without scores, paired highest IoU first; the
``"iou-order"`` rule, whose ties of IoU are broken per image), both return None and the
numpy route runs. Both give the same bits (the test suite compares them).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.match_kernels import RangeMatcher, devkit_set_flags
from vocmatch.evaluation.pair_space import PairSpace
from vocmatch.evaluation.result import COCO_AREAS
from vocmatch.evaluation.stage_inputs import Paired, Prepared

__all__ = ["range_flags", "range_ignores", "scan_ranges"]

FlagArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


def range_ignores(gt_ignore: BoolArray, gt_area: FloatArray, n_areas: int) -> BoolArray:
    """``(A, G)`` the ground truth each of the first ``n_areas`` of COCO's area ranges
    ignores: what the evaluation ignores, and what lies outside the range."""
    rows = [gt_ignore | (gt_area < low) | (gt_area > high) for low, high in COCO_AREAS[:n_areas]]
    if not rows:
        return np.zeros((0, gt_ignore.size), dtype=bool)
    return np.stack(rows)


def scan_ranges(
    kernels: ModuleType, prepared: Prepared, space: PairSpace, dtype: np.dtype[Any]
) -> RangeMatcher | None:
    """COCO's four area ranges at the AP thresholds, to ride along the evaluation's own
    matching in the pair scan (:class:`~vocmatch.core.match.RankedMatcher`'s ``ranges``),
    where the protocol matches ranked predictions under the ``"unmatched"`` or
    ``"unmatched-first"`` rule; None otherwise (see the module doc).

    Args:
        kernels: The compiled module (``vocmatch.core.fastmatch``).
        prepared: The sorted inputs (predictions by image-class, then ranking).
        space: The boxes (the ranges read the ground truth's areas).
        dtype: The flags' dtype.
    """
    conv, gt = prepared.conventions, prepared.gt
    if not prepared.scored or conv.match_rule not in ("unmatched", "unmatched-first"):
        return None
    gt_area, _ = space.region_areas()
    cell = gt.image * len(prepared.class_names) + gt.label
    return RangeMatcher(
        kernels, range_ignores(gt.ignore, gt_area, len(COCO_AREAS)), gt.crowd,
        np.asarray(conv.ap_thresholds, dtype=np.float64), conv.strict_threshold,
        conv.match_rule == "unmatched-first", space.n_pred, dtype,
        own=(gt.ignore, prepared.levels.thresholds, cell),
    )  # fmt: skip


def range_flags(
    kernels: ModuleType, prepared: Prepared, paired: Paired, ignore: BoolArray, dtype: np.dtype[Any]
) -> tuple[FlagArray, FlagArray] | None:
    """``(P, A)`` flags of each kept prediction under each of ``(A, G)`` ground-truth sets
    ``ignore``, at the protocol's AP thresholds (bit ``t``): matched, and matched to ground
    truth the set ignores; the ones matched along the scan where they were
    (:attr:`Paired.range_flags`); None where the numpy route is to match (see the module doc).

    Args:
        kernels: The compiled module (``vocmatch.core.fastmatch``).
        prepared: The sorted inputs (predictions by image-class, then ranking).
        paired: The pairs that can match.
        ignore: ``(A, G)`` the ground truth each range ignores.
        dtype: The flags' dtype.
    """
    if paired.range_flags is not None:
        return paired.range_flags
    conv = prepared.conventions
    if not prepared.scored or conv.match_rule != "devkit":
        return None
    scan = paired.scan
    return devkit_set_flags(
        kernels, scan.pred_best_gt, scan.pred_best_iou, ignore,
        np.asarray(conv.ap_thresholds, dtype=np.float64), conv.strict_threshold, dtype,
    )  # fmt: skip

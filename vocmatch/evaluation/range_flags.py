"""COCO's area ranges matched by the compiled kernels (:mod:`vocmatch.core.match_kernels`):
every range, each with the ground truth outside it ignored, at every AP threshold, in one
pass over the pairs that can match, straight into the records' flags.

The numpy route of :mod:`vocmatch.evaluation.to_records` (each range matched on its own, the
evaluation's matching reused where it stands for the range's) stays the reference and the
fallback: where the kernels are not built, under ``VOCMATCH_PURE_ENGINE=1``, and for what
is rare enough to leave to numpy (predictions without scores, paired highest IoU first; the
``"iou-order"`` rule, whose ties of IoU are broken per image), :func:`range_flags` returns
None and the numpy route runs. Both give the same bits (the test suite compares them).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.match_kernels import RangeMatcher, devkit_set_flags
from vocmatch.evaluation.candidates import Candidates
from vocmatch.evaluation.pair_space import Tile
from vocmatch.evaluation.stage_inputs import Paired, Prepared

__all__ = ["range_flags"]

FlagArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]


def range_flags(
    kernels: ModuleType, prepared: Prepared, paired: Paired, ignore: BoolArray, dtype: np.dtype[Any]
) -> tuple[FlagArray, FlagArray] | None:
    """``(P, A)`` flags of each kept prediction under each of ``(A, G)`` ground-truth sets
    ``ignore``, at the protocol's AP thresholds (bit ``t``): matched, and matched to ground
    truth the set ignores; None where the numpy route is to match (see the module doc).

    Args:
        kernels: The compiled module (``vocmatch.core.fastmatch``).
        prepared: The sorted inputs (predictions by image-class, then ranking).
        paired: The pairs that can match.
        ignore: ``(A, G)`` the ground truth each range ignores.
        dtype: The flags' dtype.
    """
    conv, gt, pred = prepared.conventions, prepared.gt, prepared.pred
    if not prepared.scored or conv.match_rule == "iou-order":
        return None
    thresholds = np.asarray(conv.ap_thresholds, dtype=np.float64)
    scan = paired.scan
    if conv.match_rule == "devkit":
        return devkit_set_flags(
            kernels, scan.pred_best_gt, scan.pred_best_iou, ignore, thresholds,
            conv.strict_threshold, dtype,
        )  # fmt: skip
    matcher = RangeMatcher(
        kernels, ignore, gt.crowd, thresholds, conv.strict_threshold,
        conv.match_rule == "unmatched-first", pred.label.size, dtype,
    )  # fmt: skip
    if thresholds.size == 0:
        return matcher.matched, matcher.ignored
    lowest = float(thresholds.min())
    for piece in scan.pieces(whole=False):
        if isinstance(piece, Candidates):
            matcher.add(piece.gt, piece.pred, piece.iou)
            continue
        # A large image-class whose pairs were not kept: scored again, block by block.
        for block in scan.space.blocks(piece, scan.sparse):
            if isinstance(block, Tile):
                matcher.add(block.gt, block.pred, block.iou)
                continue
            iou = block.iou
            passing = iou > lowest if conv.strict_threshold else iou >= lowest
            rows, columns = np.nonzero(passing)
            matcher.add(rows + block.gt_start, columns + block.pred_start, iou[rows, columns])
    return matcher.matched, matcher.ignored

"""The matching of one image-class, as :func:`vocmatch.core.match.match_class` gives it.

A module of its own: an evaluation matches every image-class at once
(:class:`~vocmatch.core.match.RankedMatcher`) and never makes this record, so a run does not
build its class. :mod:`vocmatch.core.match` still gives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["ClassMatch"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ClassMatch:
    """The matching of one image-class at several thresholds.

    Arrays are indexed by threshold first. ``pred_gt[t, j]`` is the index of the ground
    truth matched to prediction ``j`` at threshold ``t``, valid only where
    ``pred_matched[t, j]`` is True (an unmatched prediction has no ground truth; the index
    there is meaningless and must not be read).

    Attributes:
        pred_matched: ``(T, M)`` the prediction matched a ground truth (TP or ignored).
        pred_gt: ``(T, M)`` index of that ground truth.
        pred_ignored: ``(T, M)`` the prediction is neither TP nor FP (matched to an ignored
            ground truth).
        gt_matched: ``(T, N)`` the ground truth was matched.
    """

    pred_matched: BoolArray
    pred_gt: IntArray
    pred_ignored: BoolArray
    gt_matched: BoolArray

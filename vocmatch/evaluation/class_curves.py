"""Every class's precision-recall curve in one pass over all classes' predictions.

:func:`vocmatch.evaluation.from_records.evaluation_of` needs, for each class, the curve of its
ranked predictions at the evaluation's IoU threshold (and at each AP threshold outside the
COCO summary). Gathering each class's flags and building its curve one class at a time costs
a dozen numpy calls a class; here the flags of every class are gathered once
(:func:`ranked_flags`, classes side by side in their rankings) and every class's cumulative
counts are made by one cumulative sum over all of them (:func:`class_curves`): integer counts,
so each class's are exactly what a sum over the class alone gives, and the same float
operations as :func:`vocmatch.core.ap.precision_recall_curve`, element by element (the same
bits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core.ap import Curve
from vocmatch.evaluation.summary_kernels import MODULE as SUMMARY_KERNELS
from vocmatch.kernel_threads import kernel_threads

__all__ = ["CURVES_ROWS_PER_THREAD", "RankedFlags", "class_curves", "ranked_flags", "ranked_scores"]

#: The fewest ranked predictions a thread of a compiled :func:`class_curves` call gets: below
#: twice as many, the call runs in the calling thread alone.
CURVES_ROWS_PER_THREAD = 50_000

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.integer[Any]]


@dataclass(frozen=True, slots=True)
class RankedFlags:
    """Every class's kept predictions in its ranking, classes one after another, and the
    predictions' scores and flags they index.

    Attributes:
        rows: ``(R,)`` int64, each class's predictions in its ranking, class after class.
        starts: ``(K + 1,)`` where each class's predictions start in ``rows``.
        score: ``(N,)`` each prediction's score, NaN for none (float32 or float64).
        matched: ``(N,)`` bit ``t``: matched at the ``t``-th matched threshold.
        ignored: ``(N,)`` bit ``t``: matched to ignored ground truth there.
    """

    rows: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    score: npt.NDArray[np.floating[Any]]
    matched: IntArray
    ignored: IntArray


def ranked_flags(
    score: npt.NDArray[np.floating[Any]],
    matched: IntArray,
    ignored: IntArray,
    rankings: Sequence[IntArray],
) -> RankedFlags:
    """The classes' rankings side by side, over the predictions' flags.

    Args:
        score: ``(N,)`` each prediction's score, NaN for none.
        matched: ``(N,)`` its matched bits.
        ignored: ``(N,)`` its bits of a match to ignored ground truth.
        rankings: Per class, its predictions (indices into the arrays above) in its ranking.
    """
    starts = np.zeros(len(rankings) + 1, dtype=np.int64)
    np.cumsum([rows.size for rows in rankings], out=starts[1:])
    rows = np.concatenate([np.zeros(0, dtype=np.int64), *rankings])
    return RankedFlags(rows, starts, score, matched, ignored)


def ranked_scores(score: npt.NDArray[np.floating[Any]], rows: IntArray) -> FloatArray:
    """The scores of ``rows`` as rankings read them: float64, ``-inf`` for none."""
    found = np.asarray(score[rows], dtype=np.float64)  # a copy, float32 or not
    found[np.isnan(found)] = -math.inf
    return found


def class_curves(
    flags: RankedFlags,
    level: int,
    n_gt: Sequence[int],
    eps: float | None = None,
    threads: int | None = None,
) -> list[Curve]:
    """Each class's curve at the ``level``-th matched threshold: what
    :func:`vocmatch.core.ap.precision_recall_curve` gives for the class's ranked predictions
    not matched to ignored ground truth there (``n_gt``: each class's ground truth that
    counts; ``eps`` as that function's), the same bits; in compiled code where it is built,
    there with the classes in ``threads`` ranges of near equal shares of the predictions,
    each on a thread (the same bits), by default as
    :func:`~vocmatch.kernel_threads.kernel_threads` gives for
    :data:`CURVES_ROWS_PER_THREAD` predictions a thread.

    Each class's curve holds views of arrays shared by all classes.
    """
    n_k = flags.starts.size - 1
    # Recall is undefined without ground truth: NaN, as precision_recall_curve gives.
    counting = np.asarray(n_gt, dtype=np.float64).reshape(n_k)
    counting[counting <= 0] = np.nan
    fast = kernels(SUMMARY_KERNELS)
    if fast is not None:
        n = flags.rows.size
        recall, precision, score = np.empty(n), np.empty(n), np.empty(n)
        starts = np.empty(n_k + 1, dtype=np.int64)
        fast.class_curves(
            flags.rows, flags.starts, np.ascontiguousarray(flags.score),
            np.ascontiguousarray(flags.matched), np.ascontiguousarray(flags.ignored), level,
            counting, eps is None, 0.0 if eps is None else eps, recall, precision, score, starts,
            kernel_threads(n, CURVES_ROWS_PER_THREAD) if threads is None else threads,
        )  # fmt: skip
    else:
        recall, precision, score, starts = _curves_numpy(flags, level, counting, eps)
    bounds: list[int] = starts.tolist()
    return [Curve(recall[a:b], precision[a:b], score[a:b]) for a, b in pairwise(bounds)]


def _curves_numpy(
    flags: RankedFlags, level: int, counting: FloatArray, eps: float | None
) -> tuple[FloatArray, FloatArray, FloatArray, npt.NDArray[np.int64]]:
    """:func:`class_curves`' recall, precision and scores of every class, and each class's
    start among them, by numpy (``counting``: each class's ground truth, NaN for none)."""
    ignored = flags.ignored[flags.rows]
    kept = ((ignored >> level) & 1) == 0
    rows = flags.rows[kept]
    hits = ((flags.matched[rows] >> level) & 1).astype(bool)
    score = ranked_scores(flags.score, rows)
    # Where each class's kept predictions start among all kept ones.
    kept_before = np.zeros(kept.size + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    starts = kept_before[flags.starts]
    sizes = np.diff(starts)
    # Each class's running counts: one running sum less the sum before the class (integers,
    # exact), then float64 as a sum over the class alone gives.
    hits_before = np.zeros(hits.size + 1, dtype=np.int64)
    np.cumsum(hits, out=hits_before[1:])
    tp = hits_before[1:] - np.repeat(hits_before[starts[:-1]], sizes)
    seen = np.arange(1, hits.size + 1, dtype=np.int64) - np.repeat(starts[:-1], sizes)
    tp_sum = tp.astype(np.float64)
    fp_sum = (seen - tp).astype(np.float64)
    recall = tp_sum / np.repeat(counting, sizes)
    if eps is None:
        precision = tp_sum / np.maximum(tp_sum + fp_sum, np.finfo(np.float64).eps)
    else:
        precision = tp_sum / (tp_sum + fp_sum + eps)
    return recall, precision, score, starts

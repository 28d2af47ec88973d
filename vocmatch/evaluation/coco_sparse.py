"""pycocotools' accumulation of a class in one area range from the matched predictions
alone (:func:`coco_accumulate_sparse`, what
:meth:`~vocmatch.evaluation.accumulate.ClassBits.coco_area` gives).

A module of its own, imported by the first class accumulated that way: a run whose
accumulation the compiled kernel makes (:class:`~vocmatch.evaluation.coco_tables.CocoTables`)
builds no record of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import COCO_RECALL_THRESHOLDS
from vocmatch.evaluation.coco_tables import MAX_DETS

__all__ = ["CocoHits", "coco_accumulate_sparse"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CocoHits:
    """A class's matched predictions in one area range, every threshold's laid end to end.

    Attributes:
        places: ``(H,)`` ranked place of each match, ascending within a threshold.
        threshold: ``(H,)`` its threshold's index, ascending.
        ignored: ``(H,)`` it matched an ignored object.
        out: ``(H,)`` the prediction lies outside the area range.
        n_thresholds: The AP thresholds.
    """

    places: IntArray
    threshold: IntArray
    ignored: BoolArray
    out: BoolArray
    n_thresholds: int


def coco_accumulate_sparse(
    n_gt: int,
    rank_sorted: IntArray,
    ranked_out: BoolArray,
    hits: CocoHits,
) -> tuple[FloatArray, FloatArray]:
    """:func:`vocmatch.evaluation.scoring.coco_accumulate` from the matched predictions alone.

    An unmatched prediction counts (as an FP) exactly when it lies inside the area range,
    whatever the threshold; so the counted predictions up to a place are those inside the
    range, corrected at the few matched ones (a match counts unless its object is ignored,
    inside the range or not). Same integers, same operations: identical values. All
    thresholds are handled at once, their matches laid end to end.

    Args:
        n_gt: Ground truth that counts in this area range.
        rank_sorted: Each of the class's predictions' rank within its image-class, in
            ranked order (pycocotools' maxDets keep those below the limit).
        ranked_out: ``(P,)`` in ranked order, the prediction lies outside the area range.
        hits: The matches of every threshold, laid end to end.

    Returns:
        ``(T, 101, 3)`` interpolated precision and ``(T, 3)`` recall for maxDets 1, 10, 100.
    """
    n_t = hits.n_thresholds
    precision = np.zeros((n_t, 101, len(MAX_DETS)))
    recall = np.zeros((n_t, len(MAX_DETS)))
    eps = float(np.spacing(1))
    all_places, all_threshold = hits.places, hits.threshold
    all_ignored, all_out = hits.ignored, hits.out
    # maxDets above every rank keep every prediction: the same counts as the limit before.
    top = int(rank_sorted.max()) + 1 if rank_sorted.size else 0
    # Recall after k true positives is k / n_gt whatever the threshold: the place where each
    # of the 101 recall levels is first reached is the same for every threshold, and the
    # interpolated precision is the best precision from there on (a suffix maximum, taken
    # over blocks that start at those places).
    reach = np.searchsorted(
        np.arange(1, max(all_places.size, 1) + 1, dtype=np.float64) / n_gt,
        COCO_RECALL_THRESHOLDS,
        side="left",
    )
    # Its distinct places (``reach`` is sorted); they start with 0: recall level 0 is reached
    # at once.
    block_starts = reach[np.append(True, reach[1:] != reach[:-1])]
    block_of_level = np.searchsorted(block_starts, reach)
    inside = ~ranked_out
    # Counts up to each place: int32 below 2**31 places (numpy sums bool into int64 many
    # times slower than into int32; the integers are the same).
    count_type = np.int32 if inside.size < 2**31 else np.int64
    all_true = ~all_ignored
    # Counted as matched minus counted as unmatched, at each matched place.
    all_change = all_true.astype(np.int64) - (~all_out).astype(np.int64)
    for m, max_det in enumerate(MAX_DETS):
        if m > 0 and MAX_DETS[m - 1] >= top:
            precision[:, :, m] = precision[:, :, m - 1]
            recall[:, m] = recall[:, m - 1]
            continue
        if max_det >= top:  # every prediction kept
            base = np.cumsum(inside, dtype=count_type)  # unmatched-rule count up to each place
            places, threshold, true = all_places, all_threshold, all_true
            running = np.cumsum(all_change)
        else:
            selected = rank_sorted < max_det
            base = np.cumsum(selected & inside, dtype=count_type)
            keep = selected[all_places]
            places, threshold = all_places[keep], all_threshold[keep]
            true = all_true[keep]
            running = np.cumsum(all_change[keep])  # running within each threshold's run
        n_base = int(base[-1]) if base.size else 0
        # The running total at the end of each threshold's run, and before it.
        run_end = np.searchsorted(threshold, np.arange(n_t), side="right")
        run_total = np.concatenate([[0], running])[run_end]
        before = np.concatenate([[0], run_total[:-1]])
        delta = running - before[threshold]
        tp_threshold = threshold[true]
        n_tp = np.bincount(tp_threshold, minlength=n_t)
        n_counted = n_base + (run_total - before)
        # No ranked prediction at all leaves recall 0 (and then there is no TP either).
        recall[:, m] = np.where(n_counted > 0, n_tp.astype(np.float64) / n_gt, 0.0)
        # Precision at each true positive, k counted from 1 within its threshold.
        tp_first = np.concatenate([[0], np.cumsum(n_tp)[:-1]])
        k = np.arange(1, tp_threshold.size + 1) - tp_first[tp_threshold]
        counted_upto = base[places[true]] + delta[true]
        tp_sum = k.astype(np.float64)
        fp_sum = (counted_upto - k).astype(np.float64)
        pr = tp_sum / (tp_sum + fp_sum + eps)
        # Blocks of each threshold: those starting before its last true positive.
        n_blocks = np.searchsorted(block_starts, n_tp, side="left")
        block_threshold = np.repeat(np.arange(n_t), n_blocks)
        block_index = np.arange(block_threshold.size) - np.repeat(
            np.cumsum(n_blocks) - n_blocks, n_blocks
        )
        if block_threshold.size == 0:
            continue
        maxima = np.full((n_t, block_starts.size), -1.0)
        maxima[block_threshold, block_index] = np.maximum.reduceat(
            pr, tp_first[block_threshold] + block_starts[block_index]
        )
        envelope = np.maximum.accumulate(maxima[:, ::-1], axis=1)[:, ::-1]
        reached = reach[None, :] < n_tp[:, None]  # (T, 101)
        precision[:, :, m] = np.where(reached, envelope[:, block_of_level], 0.0)
    return precision, recall

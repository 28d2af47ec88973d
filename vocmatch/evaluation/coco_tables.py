"""pycocotools' accumulation of a class in its area ranges, from the matched predictions
alone (:func:`coco_accumulate_sparse`, what
:meth:`~vocmatch.evaluation.accumulate.ClassBits.coco_area` gives) or for every class at once
by the compiled kernel (:class:`CocoTables`).

Imported only under the ``coco`` summary: the records of these tables are not built for a
run that reports no COCO numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import COCO_RECALL_THRESHOLDS

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["MAX_DETS", "CocoHits", "CocoTables", "TablesAhead", "coco_accumulate_sparse"]

#: pycocotools' maxDets.
MAX_DETS = (1, 10, 100)

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


@dataclass(frozen=True, slots=True)
class CocoTables:
    """pycocotools' accumulation of every class in every area range, made in one call of
    the compiled kernel (``fastaccumulate.c``): what
    :meth:`~vocmatch.evaluation.accumulate.ClassBits.coco_area` gives for each class and area
    range with ground truth, the same bits.

    Attributes:
        precision: ``(K, A, T, 101, 3)`` interpolated precision (cells of a class and area
            range without ground truth are not set).
        recall: ``(K, A, T, 3)`` recall.
    """

    precision: FloatArray
    recall: FloatArray

    @classmethod
    def of(
        cls,
        kernel: ModuleType,
        rankings: Sequence[tuple[IntArray, IntArray]],
        flags: tuple[IntArray, IntArray, IntArray],
        coco_gt: IntArray,
        n_t: int,
    ) -> CocoTables:
        """The tables of every class.

        Args:
            kernel: The compiled module ``vocmatch.evaluation.fastaccumulate``.
            rankings: Each class's predictions (rows of the flags) in its ranking, and each
                one's rank in its image-class.
            flags: ``(P,)`` area bits, ``(P, A)`` COCO matched and ignored bits (see
                :class:`~vocmatch.evaluation.accumulate.ClassBits`).
            coco_gt: ``(K, A)`` ground truth that counts in each area range.
            n_t: The AP thresholds.
        """
        area, matched, ignored = (np.ascontiguousarray(flag) for flag in flags)
        n_k, n_a = len(rankings), matched.shape[1]
        sizes = [rows.size for rows, _ in rankings]
        starts = np.zeros(n_k + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        rows = np.concatenate([np.zeros(0, np.int64), *(rows for rows, _ in rankings)])
        rank = np.concatenate([np.zeros(0, np.int64), *(rank for _, rank in rankings)])
        precision = np.zeros((n_k, n_a, n_t, COCO_RECALL_THRESHOLDS.size, len(MAX_DETS)))
        recall = np.zeros((n_k, n_a, n_t, len(MAX_DETS)))
        kernel.coco_accumulate(
            rows.astype(np.int64, copy=False), rank.astype(np.int64, copy=False), starts,
            np.ascontiguousarray(coco_gt, dtype=np.int64).reshape(n_k, n_a),
            COCO_RECALL_THRESHOLDS, np.asarray(MAX_DETS, dtype=np.int64), area, matched,
            ignored, n_t, n_a, float(np.spacing(1)), precision, recall,
        )  # fmt: skip
        return cls(precision, recall)


class TablesAhead:
    """:class:`CocoTables` of every class a chunk of classes at a time, each chunk made by
    the compiled kernel in a thread while the caller reads the chunks before it, or does
    other work (the kernel leaves the GIL): with ``threads`` threads, that many chunks are
    made at once, and at most one more is held (the one being read).

    Use it as a context manager: the threads end with the block, chunks not begun dropped.

    Attributes:
        rankings: Each class's predictions in its ranking, with their ranks.
        chunk: Classes a chunk.
        threads: Chunks made at once.
    """

    def __init__(
        self,
        kernel: ModuleType,
        rankings: Sequence[tuple[IntArray, IntArray]],
        flags: tuple[IntArray, IntArray, IntArray],
        coco_gt: IntArray,
        n_t: int,
        chunk: int,
        threads: int = 1,
    ) -> None:
        """Begin the first chunks' tables (arguments as :meth:`CocoTables.of`'s; ``chunk``:
        classes a chunk, at least one; ``threads``: at least one)."""
        from concurrent.futures import ThreadPoolExecutor

        self.rankings = rankings
        self.chunk = max(1, chunk)
        self.threads = max(1, threads)
        area, matched, ignored = (np.ascontiguousarray(flag) for flag in flags)
        self._made = (kernel, (area, matched, ignored), coco_gt, n_t)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="vocmatch-coco-tables")
        self._pending: dict[int, Future[CocoTables]] = {}
        for j in range(self.threads):
            self._begin(j * self.chunk)

    def _begin(self, first: int) -> None:
        if first >= len(self.rankings) or first in self._pending:
            return
        kernel, flags, coco_gt, n_t = self._made
        last = first + self.chunk
        self._pending[first] = self._pool.submit(
            CocoTables.of, kernel, self.rankings[first:last], flags, coco_gt[first:last], n_t
        )

    def tables(self, first: int) -> CocoTables:
        """The tables of the chunk whose first class is ``first`` (a multiple of
        :attr:`chunk`), the chunk :attr:`threads` chunks on begun meanwhile.

        Raises:
            ValueError: The kernel refused its arguments.
        """
        self._begin(first)
        future = self._pending.pop(first)
        self._begin(first + self.threads * self.chunk)
        return future.result()

    def close(self) -> None:
        """Drop the chunks not begun and wait for those being made."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> TablesAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

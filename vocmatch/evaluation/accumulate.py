"""The accumulation half of the evaluation: per-class rankings, pycocotools' accumulation,
and per-class results, from each prediction's match flags.

Matching (:mod:`vocmatch.evaluation.stages`) is per image; everything here reads the kept
predictions of every image at once: the ranking of a class is stable by descending score,
ties in image then file order. :func:`vocmatch.evaluation.from_records.evaluation_of` reads match
records (of one run, or merged from shards) one class at a time from the flags' bits
(:class:`ClassBits`, so that its arrays are one class long).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import (
    COCO_RECALL_THRESHOLDS,
    Curve,
)
from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.result import ClassResult, class_result

__all__ = [
    "ClassBits",
    "ClassCounts",
    "ClassRanking",
    "CocoTables",
    "class_members",
    "class_ranking",
    "class_results",
    "segment_starts",
]

_MAX_DETS = (1, 10, 100)  # pycocotools' maxDets

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]


def segment_starts(keys: IntArray, n: int) -> IntArray:
    """Start of each key's run in a sorted key array, for keys 0..n (n + 1 entries)."""
    return np.searchsorted(keys, np.arange(n + 1)).astype(np.int64)


@dataclass(frozen=True, slots=True)
class ClassRanking:
    """Each class's predictions, and their ranking by score.

    Attributes:
        order: ``(P,)`` the kept predictions by class, each class's in (image, rank) order,
            as the reference concatenates them.
        starts: ``(K + 1,)`` where each class's run starts in ``order``.
        rankings: Each class's ranking (stable, by descending score).
    """

    order: IntArray
    starts: IntArray
    rankings: list[_Ranking]

    def members(self, k: int) -> IntArray:
        """Class ``k``'s predictions in (image, rank) order."""
        return self.order[self.starts[k] : self.starts[k + 1]]

    def ranked(self, k: int) -> IntArray:
        """Class ``k``'s predictions in its ranking."""
        return self.members(k)[self.rankings[k].order]


def class_ranking(by_score: IntArray, label: IntArray, n_classes: int) -> ClassRanking:
    """Every class's members and ranking, from the stable order of the kept predictions
    by descending score; ``label`` ``(P,)`` is sorted by image-class cell."""
    # Already in (image, class, rank) order, so a stable sort by class gives (class, image,
    # rank).
    order = np.argsort(label, kind="stable").astype(np.int32)
    starts = segment_starts(label[order], n_classes)
    return ClassRanking(order, starts, _rankings(by_score, label, order, starts))


def _rankings(
    by_score: IntArray,
    p_class: IntArray,
    class_order: IntArray,
    class_starts: IntArray,
) -> list[_Ranking]:
    """Each class's ranking, from the stable order of all predictions by descending score.

    A class's members (``class_order``) are in (image, rank) order, so among equal scores in
    file order, as in ``by_score``: the stable sort of a class's scores is ``by_score``
    restricted to the class. A stable sort by class (a radix sort on 16-bit class indices)
    does that for every class at once.
    """
    n_k = class_starts.size - 1
    classes = p_class[by_score]
    ranked = by_score[
        np.argsort(classes.astype(np.int16) if n_k < 2**15 else classes, kind="stable")
    ]
    # Each prediction's place among its class's members.
    member_place = np.empty(by_score.size, dtype=np.int32)
    member_place[class_order] = np.arange(by_score.size) - np.repeat(
        class_starts[:-1], np.diff(class_starts)
    )
    return [
        _Ranking(member_place[segment])
        for segment in (ranked[class_starts[k] : class_starts[k + 1]] for k in range(n_k))
    ]


@dataclass(frozen=True, slots=True)
class _Ranking:
    """A class's predictions in pycocotools' ranking: stable, by descending score."""

    order: IntArray  # member index at each ranked position


@dataclass(frozen=True, slots=True)
class _Hits:
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


def _coco_accumulate_sparse(
    n_gt: int,
    rank_sorted: IntArray,
    ranked_out: BoolArray,
    hits: _Hits,
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
    precision = np.zeros((n_t, 101, len(_MAX_DETS)))
    recall = np.zeros((n_t, len(_MAX_DETS)))
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
    for m, max_det in enumerate(_MAX_DETS):
        if m > 0 and _MAX_DETS[m - 1] >= top:
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
class ClassCounts:
    """Each class's counts at the evaluation's IoU threshold (sums over images, so shards
    add them exactly).

    Attributes:
        gt: ``(K,)`` ground truth that counts.
        gt_ignored: ``(K,)`` ignored ground truth.
        pred: ``(K,)`` kept predictions that count (at or above their score threshold).
        tp: ``(K,)``.
        fp: ``(K,)``.
        fn: ``(K,)``.
        pred_ignored: ``(K,)`` predictions that count matched to ignored ground truth.
    """

    gt: IntArray
    gt_ignored: IntArray
    pred: IntArray
    tp: IntArray
    fp: IntArray
    fn: IntArray
    pred_ignored: IntArray

    def stacked(self) -> IntArray:
        """``(K, 7)`` the fields side by side, in field order."""
        return np.stack([getattr(self, name) for name in self.__slots__], axis=1).reshape(-1, 7)

    @classmethod
    def of_stacked(cls, values: IntArray) -> ClassCounts:
        """The counts of a ``(K, 7)`` array made by :meth:`stacked`."""
        return cls(*(values[:, j] for j in range(7)))


def class_results(
    conv: Conventions,
    class_names: Sequence[str],
    counts: ClassCounts,
    curves: Sequence[Curve | None],
    ap_values: list[list[float]],
    scored: bool,
) -> list[ClassResult]:
    """Each class's counts, its curve at the IoU threshold, and its AP from ``ap_values``
    (each class's AP at every AP threshold of the protocol)."""
    # AP at 0.50 and 0.75 of a class, where the protocol averages over IoU thresholds.
    at50 = (
        conv.ap_thresholds.index(0.5)
        if conv.summary in ("coco", "ultralytics") and 0.5 in conv.ap_thresholds
        else None
    )
    at75 = (
        conv.ap_thresholds.index(0.75)
        if conv.summary in ("coco", "ultralytics") and 0.75 in conv.ap_thresholds
        else None
    )
    n_class_gt: list[int] = counts.gt.tolist()
    classes = []
    for k, name in enumerate(class_names):
        ap = float(np.mean(ap_values[k])) if scored and n_class_gt[k] > 0 else None
        values = ap_values[k] if scored and n_class_gt[k] > 0 else []
        classes.append(
            class_result(
                name, n_class_gt[k], int(counts.gt_ignored[k]), int(counts.pred[k]),
                int(counts.tp[k]), int(counts.fp[k]), int(counts.fn[k]), ap, curves[k],
                pred_ignored=int(counts.pred_ignored[k]),
                ap50=values[at50] if at50 is not None and values else None,
                ap75=values[at75] if at75 is not None and values else None,
            )
        )  # fmt: skip
    return classes


@dataclass(frozen=True, slots=True)
class ClassBits:
    """One class's kept predictions in its ranking (stable, by descending score; ties in
    image then file order), with their match flags as bits (see
    :class:`vocmatch.evaluation.records.PredRecords`).

    Attributes:
        score: ``(n,)`` scores, ``-inf`` for none.
        rank: ``(n,)`` each one's place in its image-class (maxDets keep those below).
        matched: ``(n,)`` bit ``t``: matched at the ``t``-th matched threshold.
        ignored: ``(n,)`` bit ``t``: matched to ignored ground truth there.
        area: ``(n,)`` bit ``a``: the area lies in COCO's ``a``-th area range.
        coco_matched: ``(n, A)`` per area range, bit ``t``: matched at the ``t``-th AP
            threshold.
        coco_ignored: ``(n, A)`` likewise, matched to ignored ground truth.
    """

    score: FloatArray
    rank: IntArray
    matched: IntArray
    ignored: IntArray
    area: IntArray
    coco_matched: IntArray
    coco_ignored: IntArray

    def curve_input(self, level: int) -> tuple[BoolArray, FloatArray]:
        """At the ``level``-th matched threshold, the ranked predictions not matched to
        ignored ground truth: whether each is a TP, and its score."""
        kept = np.flatnonzero(((self.ignored >> level) & 1) == 0)
        return ((self.matched[kept] >> level) & 1).astype(bool), self.score[kept]

    def coco_area(self, area: int, n_gt: int, n_t: int) -> tuple[FloatArray, FloatArray]:
        """pycocotools' accumulation of the class in one area range (as :func:`coco_area`
        gives it): ``(T, 101, 3)`` precision and ``(T, 3)`` recall."""
        out = ((self.area >> area) & 1) == 0
        matched, ignored = self.coco_matched[:, area], self.coco_ignored[:, area]
        # The matched ones (at any threshold), then their bits threshold by threshold: the
        # nonzero entries of that (T, H) table come by threshold, then by place.
        rows = np.flatnonzero(matched)
        levels = np.arange(n_t, dtype=matched.dtype)[:, None]
        threshold, column = np.nonzero((matched[rows] >> levels) & 1)
        places = rows[column]
        hit_ignored = ((ignored[places] >> threshold.astype(ignored.dtype)) & 1).astype(bool)
        hits = _Hits(places, threshold, hit_ignored, out[places], n_t)
        return _coco_accumulate_sparse(n_gt, self.rank, out, hits)


@dataclass(frozen=True, slots=True)
class CocoTables:
    """pycocotools' accumulation of every class in every area range, made in one call of
    the compiled kernel (``fastaccumulate.c``): what :meth:`ClassBits.coco_area` gives for
    each class and area range with ground truth, the same bits.

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
                :class:`ClassBits`).
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
        precision = np.zeros((n_k, n_a, n_t, COCO_RECALL_THRESHOLDS.size, len(_MAX_DETS)))
        recall = np.zeros((n_k, n_a, n_t, len(_MAX_DETS)))
        kernel.coco_accumulate(
            rows.astype(np.int64, copy=False), rank.astype(np.int64, copy=False), starts,
            np.ascontiguousarray(coco_gt, dtype=np.int64).reshape(n_k, n_a),
            COCO_RECALL_THRESHOLDS, np.asarray(_MAX_DETS, dtype=np.int64), area, matched,
            ignored, n_t, n_a, float(np.spacing(1)), precision, recall,
        )  # fmt: skip
        return cls(precision, recall)


#: Predictions a class-sorting pass takes at once (its temporaries are this long).
_SORT_CHUNK = 1 << 20


def class_members(label: IntArray, n_classes: int) -> tuple[IntArray, IntArray]:
    """Each class's predictions, in their order: the stable sort of ``label`` by class,
    made a chunk at a time so that only the result is as long as ``label``.

    Returns:
        ``(P,)`` the predictions by class (int32 below 2**31 of them) and ``(K + 1,)``
        where each class's run starts.
    """
    starts = np.concatenate([[0], np.cumsum(np.bincount(label, minlength=n_classes))])
    order: IntArray = np.empty(label.size, dtype=np.int32 if label.size < 2**31 else np.int64)
    filled = starts[:-1].astype(np.int64)
    for low in range(0, label.size, _SORT_CHUNK):
        chunk = label[low : low + _SORT_CHUNK]
        local = np.argsort(chunk, kind="stable")
        bounds = np.searchsorted(chunk[local], np.arange(n_classes + 1))
        for k in np.flatnonzero(np.diff(bounds)).tolist():
            run = local[bounds[k] : bounds[k + 1]]
            order[filled[k] : filled[k] + run.size] = run + low
            filled[k] += run.size
    return order, starts.astype(np.int64)

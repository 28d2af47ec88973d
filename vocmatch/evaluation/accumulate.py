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
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.core.ap import (
    Curve,
)
from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.result import ClassResult, class_result

__all__ = [
    "ClassBits",
    "ClassCounts",
    "ClassRanking",
    "class_members",
    "class_ranking",
    "class_results",
    "segment_starts",
]

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
    fast = kernels(match_kernels.MODULE)
    if fast is not None:
        # The same members and rankings by a counting sort (two passes).
        members, first, places = match_kernels.class_order(fast, label, by_score, n_classes)
        bounds: list[int] = first.tolist()
        rankings = [_Ranking(places[bounds[k] : bounds[k + 1]]) for k in range(n_classes)]
        return ClassRanking(members, first, rankings)
    # Already in (image, class, rank) order, so a stable sort by class gives (class, image,
    # rank); on 16-bit class indices numpy's stable sort is a radix sort.
    keys = label.astype(np.int16) if n_classes < 2**15 else label
    order = np.argsort(keys, kind="stable").astype(np.int32)
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
        from vocmatch.evaluation.coco_sparse import CocoHits, coco_accumulate_sparse

        hits = CocoHits(places, threshold, hit_ignored, out[places], n_t)
        return coco_accumulate_sparse(n_gt, self.rank, out, hits)


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

"""Every metric of an evaluation for any weights of its images: the resamples of the
bootstrap, drawn and evaluated.

A resample draws as many images as the evaluation has, uniformly with replacement, and
evaluates the drawn set as if each image were there as often as it was drawn. Matching is
per image, so a prediction is a true or false positive in a resample exactly when it is one
in the evaluation: a resample is a *weight* per image (how often it was drawn), and every
metric follows from weighted counts over fixed arrays.

* Precision, recall and F1 (per class and micro-averaged) come from each image-class's TP,
  FP, FN and ground-truth counts at the evaluation threshold, weighted.
* AP comes from each class's ranking, which is fixed: the cumulative true and false
  positives at each true positive are weighted sums over the ranking, for every resample at
  once. AP under every interpolation depends only on the precision and recall at the true
  positives (precision falls between them), so the curve is evaluated there: all-point (the
  area under the envelope), 11-point and 101-point (COCO), at each of the protocol's IoU
  thresholds, and under ``coco`` pycocotools' mAP (area "all", 100 detections per image and
  class) from the same precision array pycocotools averages.

A weight vector gives the numbers of the dataset in which each image is copied as often as
it is weighted (the copies of an image following each other in image order), to 1e-12; all
weights 1 give the evaluation's own numbers, bit for bit. Tests check both, under every
protocol. Predictions of one image and class with equal scores keep the copies' order:
they are laid out copy by copy, as in the copied dataset.

The percentile interval of the resamples' values (:func:`percentile_interval`) is here too,
for the bootstrap and the paired bootstrap alike.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import COCO_RECALL_THRESHOLDS, Interpolation
from vocmatch.core.protocol import Conventions
from vocmatch.errors import InputError, RequestError
from vocmatch.evaluation.from_records import class_rankings, ranking_score
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.result import Evaluation
from vocmatch.evaluation.stage_inputs import IouLevels
from vocmatch.evaluation.thresholds import ScoreThresholds

__all__ = [
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "Resampled",
    "Resampler",
    "image_weights",
    "percentile_interval",
    "resample",
    "resampler",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]

#: The interval's coverage.
CONFIDENCE = 0.95

#: Resamples when none are asked for.
DEFAULT_RESAMPLES = 1000

# Resamples evaluated at once: large enough for numpy to work in bulk, small enough that the
# (resamples x predictions) arrays of a class stay a few megabytes.
_CHUNK = 100

# The VOC 2007 recall levels, built as vocmatch.core.ap builds them (the same floats).
_ELEVEN = np.arange(0.0, 1.1, 0.1)
_EPS_COCO = float(np.spacing(1))  # pycocotools' denominator term
_EPS_DEVKIT = float(np.finfo(np.float64).eps)  # the devkit's max(tp + fp, eps)


@dataclass(frozen=True, slots=True)
class Resampled:
    """Every metric over a batch of ``B`` resamples; NaN where a metric is undefined.

    Attributes:
        map: ``(B,)``.
        precision: ``(B,)`` micro.
        recall: ``(B,)`` micro.
        f1: ``(B,)`` micro.
        class_ap: ``(B, K)``.
        class_precision: ``(B, K)``.
        class_recall: ``(B, K)``.
        class_f1: ``(B, K)``.
    """

    map: FloatArray
    precision: FloatArray
    recall: FloatArray
    f1: FloatArray
    class_ap: FloatArray
    class_precision: FloatArray
    class_recall: FloatArray
    class_f1: FloatArray


@dataclass(frozen=True, slots=True)
class _Cells:
    """Counts per image-class with any: image, class, count (class-sorted)."""

    image: IntArray
    klass: IntArray
    count: IntArray


def _cells(image: IntArray, klass: IntArray, n_classes: int) -> _Cells:
    """Count the rows of each (image, class), sorted by class then image."""
    if image.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Cells(empty, empty, empty)
    key = klass.astype(np.int64) * (int(image.max()) + 1) + image
    cells, counts = np.unique(key, return_counts=True)
    width = int(image.max()) + 1
    return _Cells(cells % width, cells // width, counts.astype(np.int64))


@dataclass(frozen=True, slots=True)
class _Ranking:
    """A class's predictions that can count, in ranking order, and what each is at every
    AP threshold (internal).

    Attributes:
        image: ``(n,)`` image of each.
        tp: Per level, the places of the true positives (ascending).
        excluded: Per level, the places of predictions that do not count (matched to
            ignored ground truth, or unmatched outside an area range).
        tie_starts: Start of each run of two or more predictions of one image with one
            score: the copies of an image lay such a run out copy by copy.
        tie_lengths: Length of each run.
    """

    image: IntArray
    tp: tuple[IntArray, ...]
    excluded: tuple[IntArray, ...]
    tie_starts: IntArray
    tie_lengths: IntArray


def _ranking(
    image: IntArray,
    score: FloatArray,
    tp: Sequence[BoolArray],
    excluded: Sequence[BoolArray],
) -> _Ranking:
    """A :class:`_Ranking` from ranked arrays; ``tp`` and ``excluded`` per level."""
    n = image.size
    if n > 1:
        same = (image[1:] == image[:-1]) & (score[1:] == score[:-1])
        edges = np.diff(np.concatenate(([0], same.astype(np.int8), [0])))
        starts = np.flatnonzero(edges == 1)
        stops = np.flatnonzero(edges == -1) + 1
    else:
        starts = stops = np.zeros(0, dtype=np.int64)
    return _Ranking(
        image=image.astype(np.int64),
        tp=tuple(np.flatnonzero(flags) for flags in tp),
        excluded=tuple(np.flatnonzero(flags) for flags in excluded),
        tie_starts=starts.astype(np.int64),
        tie_lengths=(stops - starts).astype(np.int64),
    )


@dataclass(frozen=True, slots=True)
class _Curves:
    """Every class's ranking under one way of counting (internal).

    Attributes:
        rankings: Per class (None for a class with no ground truth anywhere).
        gt: Ground truth that counts, per image-class.
        interpolation: How AP is read off the curve.
        coco_eps: pycocotools' denominator (``tp + fp + eps``), else the devkit's.
    """

    rankings: tuple[_Ranking | None, ...]
    gt: _Cells
    interpolation: Interpolation
    coco_eps: bool


def _layout(ranking: _Ranking, copies: int) -> tuple[IntArray, IntArray]:
    """Where each prediction sits once runs of tied predictions of one image are copied
    ``copies`` times, copy after copy, as in the dataset of copied images.

    Returns:
        The original place of each laid-out prediction, and its copy (-1 outside a run).
    """
    n = ranking.image.size
    if ranking.tie_starts.size == 0:
        return np.arange(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    # Each prediction is a segment of one, repeated once; each run a segment repeated
    # ``copies`` times.
    in_run = np.zeros(n + 1, dtype=np.int64)
    np.add.at(in_run, ranking.tie_starts, 1)
    np.add.at(in_run, ranking.tie_starts + ranking.tie_lengths, -1)
    single = np.flatnonzero(np.cumsum(in_run[:-1]) == 0)
    runs = ranking.tie_starts.size
    seg_start = np.concatenate((single, ranking.tie_starts))
    seg_length = np.concatenate((np.ones(single.size, dtype=np.int64), ranking.tie_lengths))
    seg_reps = np.concatenate((np.ones(single.size, dtype=np.int64), np.full(runs, copies)))
    seg_run = np.concatenate((np.zeros(single.size, dtype=bool), np.ones(runs, dtype=bool)))
    order = np.argsort(seg_start, kind="stable")
    seg_start, seg_length = seg_start[order], seg_length[order]
    seg_reps, seg_run = seg_reps[order], seg_run[order]
    sizes = seg_length * seg_reps
    seg_of = np.repeat(np.arange(seg_start.size), sizes)
    offset = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    source = seg_start[seg_of] + offset % seg_length[seg_of]
    copy = np.where(seg_run[seg_of], offset // seg_length[seg_of], -1)
    return source, copy


def _expand(places: IntArray, source: IntArray, n: int) -> IntArray:
    """The laid-out places of every copy of the predictions at ``places`` (of ``n``)."""
    if source.size == n:
        return places
    mark = np.zeros(n, dtype=bool)
    mark[places] = True
    return np.flatnonzero(mark[source])


def _running(weights: IntArray, places: IntArray) -> IntArray:
    """``(len(places), B)``: the running sum of ``weights`` (``(n, B)``) up to and including
    each of ``places`` (ascending, distinct), from sums over the stretches between them."""
    if places.size == 0:
        return np.zeros((0, weights.shape[1]), dtype=weights.dtype)
    starts = np.concatenate(([0], places[:-1] + 1))
    stretches = np.add.reduceat(weights[: places[-1] + 1], starts, axis=0)
    result: IntArray = np.cumsum(stretches, axis=0)
    return result


def _reaching_counts(n_gt: FloatArray) -> IntArray:
    """``(101, B)``: for each of pycocotools' recall levels and each column's ground-truth
    count n, the least count k with ``k / n >= level`` in floating point (division by n
    is monotone in k, so recall reaches the level exactly from k on)."""
    n = n_gt[None, :]
    levels = COCO_RECALL_THRESHOLDS[:, None]
    k = np.ceil(levels * n).astype(np.int64)
    for _ in range(2):  # the product is off by at most one count either way
        k -= (k > 0) & ((k - 1) / n >= levels)
        k += k / n < levels
    return k


def _curve_value(
    tp_sum: IntArray,
    counted: IntArray,
    n_gt: FloatArray,
    curves: _Curves,
    complete: bool,
) -> FloatArray:
    """AP at one level for every resample, or the 101 interpolated precisions for COCO.

    Args:
        tp_sum: ``(m, B)`` weighted true positives up to each true positive.
        counted: ``(m, B)`` weighted predictions that count up to each.
        n_gt: ``(B,)`` weighted ground truth that counts (> 0).
        curves: How to count.
        complete: Every ground truth of the class is found in the evaluation (its recall
            reaches 1): the all-point sum then has no closing term.

    Returns:
        ``(B,)`` AP, or ``(B, 101)`` for the 101-point interpolation.
    """
    width, rows = tp_sum.shape
    if width == 0:
        if curves.interpolation == "101-point":
            return np.zeros((rows, COCO_RECALL_THRESHOLDS.size))
        return np.zeros(rows)
    tp_float = tp_sum.astype(np.float64)
    fp_float = (counted - tp_sum).astype(np.float64)
    # The arithmetic of vocmatch.core.ap.precision_recall_curve, element for element.
    if curves.coco_eps:
        precision = tp_float / (tp_float + fp_float + _EPS_COCO)
    else:
        precision = tp_float / np.maximum(tp_float + fp_float, _EPS_DEVKIT)
    envelope = np.maximum.accumulate(precision[::-1], axis=0)[::-1]
    columns = np.arange(rows)
    if curves.interpolation != "101-point":
        recall = tp_float / n_gt[None, :]
    if curves.interpolation == "all-point":
        terms = np.diff(recall, axis=0, prepend=0.0) * envelope
        if not complete:
            # (1 - last recall) x the envelope's closing 0, as vocmatch.core.ap sums it.
            terms = np.concatenate((terms, (1.0 - recall[-1:]) * 0.0), axis=0)
        # Summed along a contiguous row: numpy's pairwise sum, as in vocmatch.core.ap.
        result: FloatArray = np.ascontiguousarray(terms.T).sum(axis=1)
        return result
    if curves.interpolation == "11-point":
        total = np.zeros(rows)
        for value in _ELEVEN:
            first = np.count_nonzero(recall < value, axis=0)
            picked = envelope[np.minimum(first, width - 1), columns]
            total = total + np.where(first < width, picked, 0.0)
        eleven: FloatArray = total / 11.0
        return eleven
    # 101-point: the first true positive whose recall reaches each level. Recall is
    # tp / n_gt, non-decreasing in tp, so it reaches a level exactly from the least count
    # k_level whose recall does: the first true positive is the number of running counts
    # below k_level, found for every column at once in one sorted integer array.
    reach = _reaching_counts(n_gt)  # (101, B)
    span = int(reach.max()) + 1
    offsets = np.arange(rows, dtype=np.int64) * span
    flat = (tp_sum.T.astype(np.int64) + offsets[:, None]).ravel()
    first = np.searchsorted(flat, (reach.T + offsets[:, None]).ravel()).reshape(rows, -1)
    first -= (columns * width)[:, None]
    picked = envelope[np.minimum(first, width - 1), columns[:, None]]
    q: FloatArray = np.where(first < width, picked, 0.0)
    return q


def _class_levels(
    ranking: _Ranking,
    weights_t: IntArray,
    n_gt: FloatArray,
    curves: _Curves,
    complete: Sequence[bool],
) -> FloatArray:
    """One class's AP at every level: ``(B, L)``, or ``(B, L, 101)`` for 101-point.

    Args:
        ranking: The class's ranking.
        weights_t: ``(I, B)`` each image's weight in each resample.
        n_gt: ``(B,)`` weighted ground truth that counts (> 0 where it matters).
        curves: How to count.
        complete: Per level, the evaluation found every ground truth of the class.
    """
    n = ranking.image.size
    copies = 1
    if ranking.tie_starts.size:
        copies = max(1, int(weights_t[ranking.image[ranking.tie_starts]].max()))
    source, copy = _layout(ranking, copies)
    laid = weights_t[ranking.image[source]]  # (n', B)
    runs = np.flatnonzero(copy >= 0)
    if runs.size:
        # Copy c of a run is there when its image was drawn more than c times.
        laid[runs] = laid[runs] > copy[runs][:, None]
    tps = [_expand(places, source, n) for places in ranking.tp]
    excluded = [_expand(places, source, n) for places in ranking.excluded]
    needed = np.unique(np.concatenate(tps)) if tps else np.zeros(0, dtype=np.int64)
    running = _running(laid, needed)
    values = []
    for tp, out, whole in zip(tps, excluded, complete, strict=True):
        tp_sum = np.cumsum(laid[tp], axis=0)
        counted = running[np.searchsorted(needed, tp)]
        if out.size:
            out_sum = np.cumsum(laid[out], axis=0)
            before = np.searchsorted(out, tp)
            has = before > 0
            counted[has] -= out_sum[before[has] - 1]
        values.append(_curve_value(tp_sum, counted, n_gt, curves, whole))
    return np.stack(values, axis=1)


def _dense(cells: _Cells, n_images: int, n_classes: int) -> FloatArray:
    counts = np.zeros((n_images, n_classes))
    np.add.at(counts, (cells.image, cells.klass), cells.count)
    return counts


class Resampler:
    """Recomputes an evaluation's metrics for any weights of its images.

    Build it with :func:`resampler`. :meth:`metrics` with all weights 1 gives the
    evaluation's numbers exactly.
    """

    def __init__(
        self,
        images: tuple[str, ...],
        class_names: tuple[str, ...],
        counts: tuple[_Cells, _Cells, _Cells],
        class_curves: _Curves | None,
        map_curves: _Curves | None,
        coco_map: bool,
        n_levels: int,
    ) -> None:
        self.images = images
        self.class_names = class_names
        self._class_curves = class_curves
        self._map_curves = map_curves
        self._coco_map = coco_map
        self._n_levels = n_levels
        n_images, k = len(images), len(class_names)
        tables = [*counts]
        tables += [c.gt for c in (class_curves, map_curves) if c is not None]
        # One (I, 5K) table of counts per image: a resample's totals are one product.
        self._table = np.concatenate([_dense(c, n_images, k) for c in tables], axis=1)
        self._most_per_image = max([1, *(int(c.count.max(initial=0)) for c in counts[:2])])
        # Per curves, class and level: the evaluation found every ground truth that counts.
        self._complete: dict[int, list[list[bool]]] = {}
        for curves in (class_curves, map_curves):
            if curves is None:
                continue
            found = np.bincount(curves.gt.klass, weights=curves.gt.count, minlength=k)
            self._complete[id(curves)] = [
                [r is not None and r.tp[level].size == int(found[c]) for level in range(n_levels)]
                for c, r in enumerate(curves.rankings)
            ]

    @property
    def has_ap(self) -> bool:
        """AP is defined (the predictions carry scores) and can be resampled."""
        return self._class_curves is not None

    def metrics(self, weights: npt.ArrayLike) -> Resampled:
        """Every metric for each row of ``weights``.

        Args:
            weights: ``(B, I)`` non-negative integer weight of each image, in the order of
                :attr:`images`.

        Returns:
            The metrics of the ``B`` weighted datasets.

        Raises:
            ValueError: ``weights`` has the wrong shape or a negative entry.
        """
        w = np.asarray(weights, dtype=np.int64)
        if w.ndim != 2 or w.shape[1] != len(self.images):
            raise ValueError(
                f"Expected `weights` to have shape (B, {len(self.images)}), got {w.shape}"
            )
        if (w < 0).any():
            raise ValueError("weights must be non-negative")
        k = len(self.class_names)
        rows = w.shape[0]
        # Counts are integers below 2**53: the float product is exact.
        totals = (w.astype(np.float64) @ self._table).astype(np.int64)
        tp, fp, gt = totals[:, :k], totals[:, k : 2 * k], totals[:, 2 * k : 3 * k]
        class_precision = _ratio(tp, tp + fp)
        class_recall = _ratio(tp, gt)
        precision = _ratio(tp.sum(axis=1), (tp + fp).sum(axis=1))
        recall = _ratio(tp.sum(axis=1), gt.sum(axis=1))
        class_ap = np.full((rows, k), np.nan)
        map_values = np.full(rows, np.nan)
        # Running sums stay below the total weight times the most predictions of an
        # image-class: 32-bit integers (half the memory traffic) whenever they fit.
        bound = int(w.sum(axis=1).max(initial=0)) * self._most_per_image
        weights_t: IntArray = np.ascontiguousarray(w.T)
        if bound < 2**31:
            weights_t = weights_t.astype(np.int32)
        if self._class_curves is not None:
            curve_gt = totals[:, 3 * k : 4 * k]
            per_level = self._levels(self._class_curves, weights_t, curve_gt)
            for c, values in enumerate(per_level):
                if values is None:
                    continue
                if values.ndim == 3:
                    values = values.mean(axis=2)
                class_ap[:, c] = np.where(curve_gt[:, c] > 0, values.mean(axis=1), np.nan)
            if self._coco_map and self._map_curves is self._class_curves:
                map_values = _coco_mean(per_level, curve_gt)
            elif self._coco_map and self._map_curves is not None:
                map_gt = totals[:, 4 * k : 5 * k]
                map_values = _coco_mean(self._levels(self._map_curves, weights_t, map_gt), map_gt)
            else:
                map_values = _row_means(class_ap)
        return Resampled(
            map=map_values,
            precision=precision,
            recall=recall,
            f1=_f1(precision, recall),
            class_ap=class_ap,
            class_precision=class_precision,
            class_recall=class_recall,
            class_f1=_f1(class_precision, class_recall),
        )

    def _levels(
        self, curves: _Curves, weights_t: IntArray, gt: IntArray
    ) -> list[FloatArray | None]:
        """Per class: ``(B, L)`` AP at each level, or ``(B, L, 101)`` for 101-point."""
        out: list[FloatArray | None] = []
        complete = self._complete[id(curves)]
        for c, ranking in enumerate(curves.rankings):
            if ranking is None:
                out.append(None)
                continue
            n_gt = gt[:, c].astype(np.float64)
            safe = np.where(n_gt > 0, n_gt, 1.0)
            out.append(_class_levels(ranking, weights_t, safe, curves, complete[c]))
        return out


def _coco_mean(qs: Sequence[FloatArray | None], gt: IntArray) -> FloatArray:
    """pycocotools' AP: the mean of its precision array (levels x 101 x classes with ground
    truth), in that array's order.

    Args:
        qs: Per class, ``(B, L, 101)`` interpolated precision; None for a class without
            ground truth.
        gt: ``(B, K)`` weighted ground truth that counts.
    """
    rows = gt.shape[0]
    present = [c for c, q in enumerate(qs) if q is not None]
    out = np.full(rows, np.nan)
    if not present:
        return out
    arrays: list[FloatArray] = [q for q in qs if q is not None]
    q = np.stack(arrays, axis=-1)  # (B, L, 101, K')
    counting = gt[:, present] > 0
    # Rows that count the same classes are averaged together, over the same elements in
    # the same order as pycocotools' mean.
    patterns, inverse = np.unique(counting, axis=0, return_inverse=True)
    for p, pattern in enumerate(patterns):
        if not pattern.any():
            continue
        chosen_rows = np.flatnonzero(inverse.reshape(-1) == p)
        chosen = q[chosen_rows][..., pattern].reshape(chosen_rows.size, -1)
        out[chosen_rows] = chosen.mean(axis=1)
    return out


def _ratio(numerator: IntArray, denominator: IntArray) -> FloatArray:
    out = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _f1(precision: FloatArray, recall: FloatArray) -> FloatArray:
    # As vocmatch.evaluation.scoring: 2 p r / (p + r), 0 when both are 0, undefined when either is.
    total = precision + recall
    out = np.full(precision.shape, np.nan)
    both = ~np.isnan(total)
    np.divide(2 * precision * recall, total, out=out, where=both & (total > 0))
    out[both & (total == 0)] = 0.0
    return out


def _row_means(values: FloatArray) -> FloatArray:
    """Each row's mean over its defined entries, in column order (as ``np.mean`` of the
    list of defined class APs); NaN for a row with none."""
    out = np.full(values.shape[0], np.nan)
    defined = ~np.isnan(values)
    patterns, inverse = np.unique(defined, axis=0, return_inverse=True)
    for p, pattern in enumerate(patterns):
        if not pattern.any():
            continue
        rows = np.flatnonzero(inverse.reshape(-1) == p)
        out[rows] = values[rows][:, pattern].mean(axis=1)
    return out


def _gt_cells(image: IntArray, label: IntArray, count: IntArray, n_images: int) -> _Cells:
    """Ground-truth cells (those with a count) sorted by class, then image."""
    keep = count > 0
    image, label, count = image[keep], label[keep], count[keep]
    order = np.argsort(label * max(n_images, 1) + image, kind="stable")
    return _Cells(image[order], label[order], count[order])


@dataclass(frozen=True, slots=True)
class _Counting:
    """One way of counting the predictions of a class ranking: the ground truth that counts,
    each prediction's match flags per AP threshold, and which predictions are out."""

    gt: _Cells
    matched: Sequence[BoolArray]
    ignored: Sequence[BoolArray]
    out: BoolArray | None
    interpolation: Interpolation
    coco_eps: bool
    max_rank: int | None


def _curves(records: MatchRecords, counting: _Counting, pred_image: IntArray, k: int) -> _Curves:
    """Rankings of every class under one way of counting."""
    has_gt = np.zeros(k, dtype=bool)
    has_gt[counting.gt.klass] = True
    rankings: list[_Ranking | None] = []
    for c, (ranked, rank) in enumerate(class_rankings(records)):
        if not has_gt[c]:
            rankings.append(None)
            continue
        if counting.max_rank is not None:
            ranked = ranked[rank < counting.max_rank]
        tp = []
        excluded = []
        for hit, ignored in zip(counting.matched, counting.ignored, strict=True):
            out = ignored[ranked]
            if counting.out is not None:
                out = out | (~hit[ranked] & counting.out[ranked])
            tp.append(hit[ranked] & ~ignored[ranked])
            excluded.append(out)
        score = ranking_score(records.preds, ranked)
        rankings.append(_ranking(pred_image[ranked], score, tp, excluded))
    return _Curves(tuple(rankings), counting.gt, counting.interpolation, counting.coco_eps)


def _bit(flags: npt.NDArray[np.integer[Any]], t: int) -> BoolArray:
    """``(P,)`` bit ``t`` of each prediction's flags."""
    found: BoolArray = ((flags >> t) & 1).astype(bool)
    return found


def _from_records(
    evaluation: Evaluation,
    records: MatchRecords,
    conv: Conventions,
    score_thresholds: ScoreThresholds | None,
) -> Resampler:
    preds = records.preds
    k = len(records.class_names)
    n_images = len(records.keys)
    levels = IouLevels.of(conv)
    hit_t, ignored_t = (
        _bit(preds.matched, levels.evaluation),
        _bit(preds.ignored, levels.evaluation),
    )
    pred_image = np.repeat(np.arange(n_images, dtype=np.int64), preds.count)
    pred_class = preds.label.astype(np.int64)
    # Counts take the predictions at or above their score threshold; AP takes all.
    counted = np.ones(pred_class.size, dtype=bool)
    if score_thresholds:
        floor = np.array([score_thresholds.floor(n) for n in records.class_names])
        counted = ranking_score(preds, np.arange(pred_class.size)) >= floor[pred_class]
    tp_rows = hit_t & ~ignored_t & counted
    cells = records.gt_cells
    if cells is None:
        raise InputError(
            "these match records keep no per-image ground-truth counts (states saved by a "
            "vocmatch before state format version 5): save them again to resample them"
        )
    gt = _gt_cells(cells.image, cells.label, cells.counting, n_images)
    counts = (
        _cells(pred_image[tp_rows], pred_class[tp_rows], k),
        _cells(pred_image[~hit_t & counted], pred_class[~hit_t & counted], k),
        gt,
    )
    ap_levels = [levels.index[threshold] for threshold in conv.ap_thresholds]
    if not records.notes.scored or not _scored(evaluation):
        # Predictions without scores: no ranking, no AP; counts only.
        return Resampler(
            images=tuple(evaluation_keys(evaluation)),
            class_names=records.class_names,
            counts=counts,
            class_curves=None,
            map_curves=None,
            coco_map=False,
            n_levels=len(ap_levels),
        )
    own = _Counting(
        gt,
        [_bit(preds.matched, level) for level in ap_levels],
        [_bit(preds.ignored, level) for level in ap_levels],
        None, conv.interpolation, conv.interpolation == "101-point", None,
    )  # fmt: skip
    class_curves = _curves(records, own, pred_image, k)
    map_curves = None
    if conv.summary == "coco":
        # pycocotools' area "all" (both ends inclusive, on the evaluator's continuous areas:
        # a shape's own region's) and maxDets 100.
        reusable = conv.interpolation == "101-point" and (conv.max_dets or 101) <= 100
        if reusable and not records.beyond:
            # No box leaves area "all" and no prediction beyond 100 is kept: pycocotools'
            # precision array is the one the class APs are read from (so the evaluator).
            map_curves = class_curves
        else:
            # Matched in area "all" as pycocotools matches it (the records' first range).
            n_ap = len(ap_levels)
            area_all = _Counting(
                _gt_cells(cells.image, cells.label, cells.counting_all, n_images),
                [_bit(preds.coco_matched[:, 0], t) for t in range(n_ap)],
                [_bit(preds.coco_ignored[:, 0], t) for t in range(n_ap)],
                ~_bit(preds.area, 0), "101-point", True, 100,
            )  # fmt: skip
            map_curves = _curves(records, area_all, pred_image, k)
    return Resampler(
        images=tuple(evaluation_keys(evaluation)),
        class_names=records.class_names,
        counts=counts,
        class_curves=class_curves,
        map_curves=map_curves,
        coco_map=conv.summary == "coco",
        n_levels=len(ap_levels),
    )


def _scored(evaluation: Evaluation) -> bool:
    """AP is defined somewhere: the predictions carry scores."""
    return evaluation.summary.map is not None or any(c.ap is not None for c in evaluation.classes)


def evaluation_keys(evaluation: Evaluation) -> list[str]:
    """The evaluated images' keys, in the evaluation's order."""
    return [image.key for image in evaluation.images]


#: The interpolations whose AP is not resampled (the ``ultralytics`` package's).
_NOT_RESAMPLED = ("101-point-trapezoid", "101-point-trapezoid-to-1")


def resampler(
    evaluation: Evaluation,
    records: MatchRecords,
    conventions: Conventions,
    score_thresholds: ScoreThresholds | None = None,
) -> Resampler:
    """The resampler of an evaluation, from its match records.

    Args:
        evaluation: The evaluation.
        records: Its match records (of one run, or merged from shards).
        conventions: The protocol they were matched under.
        score_thresholds: The score thresholds they were counted under.

    Returns:
        The resampler; :attr:`Resampler.has_ap` says whether it resamples AP (predictions
        with scores).

    Raises:
        InputError: No image was evaluated, or the records keep no per-image ground-truth
            counts.
        RequestError: AP is read by an interpolation it does not resample (field
            ``bootstrap``).
    """
    if conventions.interpolation in _NOT_RESAMPLED:
        raise RequestError(
            "bootstrap",
            f"intervals are not computed for AP by {conventions.interpolation} (the "
            "ultralytics package's): evaluate without them",
        )
    if not records.keys:
        raise InputError("no image was evaluated: nothing to resample")
    return _from_records(evaluation, records.in_key_order(), conventions, score_thresholds)


def image_weights(n_images: int, resamples: int, seed: int) -> Iterator[IntArray]:
    """The resamples' image weights, in chunks of rows.

    Each resample draws ``n_images`` images uniformly with replacement (one
    ``Generator.integers`` call each), so the weights do not depend on the chunking.

    Args:
        n_images: Images to draw from (and draws per resample).
        resamples: Resamples in all.
        seed: Seed of ``numpy.random.default_rng``.

    Yields:
        ``(b, n_images)`` weights, ``b`` rows at a time.

    >>> [chunk.sum(axis=1).tolist() for chunk in image_weights(4, 3, seed=0)]
    [[4, 4, 4]]
    """
    rng = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        rows = min(_CHUNK, resamples - done)
        chunk = np.empty((rows, n_images), dtype=np.int64)
        for r in range(rows):
            drawn = rng.integers(0, n_images, size=n_images) if n_images else np.zeros(0, int)
            chunk[r] = np.bincount(drawn, minlength=n_images)
        done += rows
        yield chunk


def percentile_interval(
    values: npt.ArrayLike, confidence: float = CONFIDENCE
) -> tuple[float | None, float | None, int]:
    """The percentile interval of the defined (not NaN) values.

    Returns:
        ``(low, high, defined)``; ``low`` and ``high`` are None when no value is defined.

    >>> percentile_interval([0.0, 1.0, 2.0, 3.0, 4.0, float("nan")], 0.5)
    (1.0, 3.0, 5)
    """
    array = np.asarray(values, dtype=np.float64)
    defined = array[~np.isnan(array)]
    if defined.size == 0:
        return None, None, 0
    # 50 -/+ 50 c: 2.5 and 97.5 exactly for 0.95.
    low, high = np.percentile(defined, [50 - 50 * confidence, 50 + 50 * confidence])
    return float(low), float(high), int(defined.size)


def _concatenate(parts: Sequence[Resampled], n_classes: int) -> Resampled:
    if not parts:
        empty = np.zeros(0)
        wide = np.zeros((0, n_classes))
        return Resampled(empty, empty, empty, empty, wide, wide, wide, wide)
    return Resampled(
        *(np.concatenate([getattr(p, name) for p in parts]) for name in Resampled.__slots__)
    )


def resample(
    samplers: Sequence[tuple[Resampler, IntArray | None]],
    resamples: int,
    seed: int,
    jobs: int = 1,
) -> list[Resampled]:
    """Every metric of every resample for one or more resamplers drawn together.

    Args:
        samplers: Each resampler, with ``(I,)`` the column of each of its images among the
            drawn images (so that two evaluations of one set draw the same images, as the
            paired bootstrap does); None draws over the resampler's own images (then it
            must be the only one).
        resamples: Resamples to draw.
        seed: Their seed.
        jobs: Threads evaluating chunks of resamples at once (numpy works outside the
            interpreter lock); the result does not depend on it.

    Returns:
        Per resampler, its metrics, rows in draw order.
    """
    columns = [cols for _, cols in samplers]
    if any(c is None for c in columns):
        n_draw = len(samplers[0][0].images)
    else:
        n_draw = max(int(c.max(initial=-1)) + 1 for c in columns if c is not None)

    def evaluate(chunk: IntArray) -> list[Resampled]:
        return [
            sampler.metrics(chunk if cols is None else chunk[:, cols]) for sampler, cols in samplers
        ]

    results: list[list[Resampled]] = []
    chunks = image_weights(n_draw, resamples, seed)
    if jobs <= 1:
        results = [evaluate(chunk) for chunk in chunks]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            # A few chunks in flight at a time: the weights of a large set are sizeable.
            pending: deque[Future[list[Resampled]]] = deque()
            for chunk in chunks:
                pending.append(pool.submit(evaluate, chunk))
                if len(pending) > 2 * jobs:
                    results.append(pending.popleft().result())
            results += [future.result() for future in pending]
    return [
        _concatenate([r[i] for r in results], len(sampler.class_names))
        for i, (sampler, _) in enumerate(samplers)
    ]

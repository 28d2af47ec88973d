"""Match predictions to ground truth, per image and per class, for every image-class at once.

Two match rules exist, each a named option:

* ``"unmatched"`` (default; pycocotools ``COCOeval.evaluateImg``): predictions in descending
  score order each take the still-unmatched ground truth with the highest IoU at or above the
  threshold. A ground truth that is not ignored is preferred over an ignored one; among
  equal IoUs the later ground truth (in file order) wins, as in pycocotools. A crowd region
  may absorb any number of predictions.
* ``"unmatched-first"`` (the ``ultralytics`` package's ``match_predictions``, 8.4.176 on):
  the same, except that among equal IoUs the earlier ground truth wins (``argmax``).
* ``"iou-order"`` (that package up to 8.4.175): the devkit's rule, IoU ties broken as the
  package's sort breaks them (:mod:`vocmatch.evaluation.iou_order`, which matches the
  images holding such ties); :func:`match_class` breaks them as the devkit.
* ``"devkit"`` (PASCAL VOC devkit, ``voc_eval.py``): each prediction goes to the ground truth
  with the highest IoU (the first one on ties) even if that one is already taken; a taken
  one makes the prediction a false positive.

Predictions without scores (two annotators compared) are paired highest IoU first across
the whole image-class: the pair with the largest IoU is matched, both are removed, and so
on; ground truth that counts is paired before ignored ground truth, whatever the IoU (ties:
the lower ground truth, then the lower prediction, in file order). The result never depends
on anything but the boxes, their file order and their scores.

A threshold ``t`` matches at ``IoU >= t`` (inclusive, as the MATLAB devkit's ``VOCevaldet.m``
and pycocotools); ``strict=True`` gives ``IoU > t``, as the widely copied Python
``voc_eval.py`` does.

The matchers here take every image-class of an evaluation at once, as lists of the pairs
that can match (:class:`RankedMatcher`, :func:`match_devkit`, :func:`match_unscored`), or a
large image-class in pieces (:meth:`RankedMatcher.add_block`, :func:`match_unscored_rows`),
and return the matched pairs (:class:`Hits`). Greedy matching is sequential only within an
image-class: the unmatched rule runs rank by rank, the ``r``-th prediction of every
image-class at every threshold in one step; the unscored pairing takes, round by round,
every pair that is the best remaining pair of both its boxes. :func:`match_class` matches one
image-class given its IoU matrix.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.kernel_threads import kernel_threads
from vocmatch.lazy import lazy_attribute

if TYPE_CHECKING:
    from vocmatch.core.class_match import ClassMatch as ClassMatch

__all__ = [
    "ClassMatch",
    "Hits",
    "MatchRule",
    "RankedMatcher",
    "match_class",
    "match_devkit",
    "match_unscored",
    "match_unscored_rows",
    "pred_order",
]

MatchRule = Literal["unmatched", "devkit", "unmatched-first", "iou-order"]

IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


def _passes(values: FloatArray, threshold: Any, strict: bool) -> BoolArray:
    if strict:
        return np.asarray(values > threshold)
    return np.asarray(values >= threshold)


@dataclass(frozen=True, slots=True)
class Hits:
    """Matched pairs: at threshold ``level[i]``, prediction ``pred[i]`` took ground truth
    ``gt[i]`` at IoU ``iou[i]`` (a true positive, or ignored when the ground truth is)."""

    level: IndexArray
    pred: IndexArray
    gt: IndexArray
    iou: FloatArray

    @classmethod
    def join(cls, parts: Sequence[Hits]) -> Hits:
        """All the pairs of several matchings, in order."""
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, np.zeros(0, dtype=np.float64))
        return cls(
            np.concatenate([h.level for h in parts]).astype(np.int64, copy=False),
            np.concatenate([h.pred for h in parts]).astype(np.int64, copy=False),
            np.concatenate([h.gt for h in parts]).astype(np.int64, copy=False),
            np.concatenate([h.iou for h in parts]),
        )

    def shifted(self, gt: int, pred: int) -> Hits:
        """The same pairs with ``gt`` and ``pred`` added to the indices."""
        return Hits(self.level, self.pred + pred, self.gt + gt, self.iou)


class RankedMatcher:
    """The ``"unmatched"`` rule over many image-classes, fed their pairs in ranking order.

    Pairs can be given in several calls (:meth:`add`, :meth:`add_block`): each call holds
    every pair of its predictions, and a prediction comes after the higher-ranked ones of its
    image-class. Which ground truth is taken at each threshold is kept between calls.
    Where the compiled kernels are built (:mod:`vocmatch.core.match_kernels`), both run in C
    and give the same pairs in the same order, and a
    :class:`~vocmatch.core.match_kernels.RangeMatcher` (``ranges``: other ground-truth sets,
    COCO's area ranges) can ride along: each pair is read once for both.

    Args:
        n_gt: Ground truth in all.
        gt_ignore: ``(G,)`` ground truth that is ignored (a match to it is neither TP nor FP).
        gt_crowd: ``(G,)`` crowd regions, which absorb any number of predictions.
        thresholds: ``(T,)`` IoU thresholds.
        strict: Match at ``IoU > t`` instead of ``IoU >= t``.
        first_on_ties: Among equal IoUs the earlier ground truth wins (``"unmatched-first"``)
            instead of the later one.
        ranges: Matched along, into its own flags (only with the compiled kernels).

    Raises:
        ValueError: ``ranges`` is given where the compiled kernels are not to run.
    """

    def __init__(
        self,
        n_gt: int,
        gt_ignore: BoolArray,
        gt_crowd: BoolArray,
        thresholds: FloatArray,
        strict: bool,
        first_on_ties: bool = False,
        ranges: match_kernels.RangeMatcher | None = None,
    ) -> None:
        self._first = first_on_ties
        self._ignore = gt_ignore
        self._crowd = gt_crowd
        self._thresholds = thresholds
        self._lowest = float(thresholds.min()) if thresholds.size else np.inf
        self._strict = strict
        self._taken = np.zeros((thresholds.size, n_gt), dtype=bool)
        self._hits: list[Hits] = []
        # The compiled kernel of :meth:`add`, where built (vocmatch.core.match_kernels).
        self._kernels = kernels(match_kernels.MODULE)
        if ranges is not None and self._kernels is None:
            raise ValueError("ground-truth sets ride along only with the compiled kernels")
        self._ranges = ranges
        if self._kernels is not None:
            self._ignore = np.ascontiguousarray(gt_ignore, dtype=bool)
            self._crowd = np.ascontiguousarray(gt_crowd, dtype=bool)
            self._thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
            # The kernel's layout: a ground truth's flags at every threshold side by side.
            self._taken = np.zeros((n_gt, thresholds.size), dtype=bool)

    def add(self, gt: IndexArray, pred: IndexArray, iou: FloatArray, rank: IndexArray) -> None:
        """Match predictions given as pairs.

        Args:
            gt: ``(K,)`` ground truth of each pair.
            pred: ``(K,)`` prediction of each pair.
            iou: ``(K,)`` IoU of each pair.
            rank: Each prediction's place in its image-class's ranking, indexed by ``pred``.
        """
        if self._kernels is not None:
            self._add_compiled(self._kernels, gt, pred, iou, rank)
            return
        lowest = _passes(iou, self._lowest, self._strict)  # none without thresholds
        g_all, p_all, v_all = gt[lowest], pred[lowest], iou[lowest]
        r_all = rank[p_all]
        # Within one prediction, candidates sorted so that the last valid one is the one the
        # rule picks: counting ground truth over ignored, then higher IoU, then later (or
        # earlier, first on ties).
        tie = -g_all if self._first else g_all
        order = np.lexsort((tie, v_all, ~self._ignore[g_all], p_all, r_all))
        g_all, p_all, v_all, r_all = g_all[order], p_all[order], v_all[order], r_all[order]
        # The runs of one rank each (ranks without a pair that passes have no run).
        starts = np.flatnonzero(np.append(True, r_all[1:] != r_all[:-1]))
        bounds = np.append(starts, r_all.size).tolist()
        thresholds, taken, crowd = self._thresholds, self._taken, self._crowd
        for start, stop in itertools.pairwise(bounds):
            g, p, v = g_all[start:stop], p_all[start:stop], v_all[start:stop]
            valid = _passes(v[None, :], thresholds[:, None], self._strict)
            valid &= ~taken[:, g] | crowd[g][None, :]
            flat = np.flatnonzero(valid)
            if flat.size == 0:
                continue
            width = stop - start
            t_index, position = np.divmod(flat, width)
            segment = t_index * (int(p.max()) + 1) + p[position]
            last = np.append(segment[1:] != segment[:-1], True)
            t_win, pos_win = t_index[last], position[last]
            taken[t_win, g[pos_win]] = True
            self._hits.append(Hits(t_win, p[pos_win], g[pos_win], v[pos_win]))

    def _add_compiled(
        self,
        fast: ModuleType,
        gt: IndexArray,
        pred: IndexArray,
        iou: FloatArray,
        rank: IndexArray | None,
    ) -> None:
        """:meth:`add` by the compiled kernel ``fast``: the same pairs, in the same order (a
        rank of None: predictions rank in index order), the ranges matched along."""
        index = match_kernels.index_array
        found = fast.ranked_pass(
            index(gt), index(pred), np.ascontiguousarray(iou, dtype=np.float64),
            None if rank is None else index(rank), self._ignore, self._crowd,
            self._thresholds, self._strict, self._first, self._taken,
            None if self._ranges is None else self._ranges.state(),
            kernel_threads(gt.size, match_kernels.RANKED_PAIRS_PER_THREAD),
        )  # fmt: skip
        if found[0]:
            self._hits.append(Hits(*match_kernels.pair_arrays(found)))

    def add_block(self, iou: FloatArray, gt_start: int, pred_start: int) -> None:
        """Match a run of one image-class's predictions against all of its ground truth.

        Args:
            iou: ``(N, B)`` IoU of the image-class's ``N`` ground truth (from ``gt_start``)
                against ``B`` predictions (from ``pred_start``), in ranking order.
            gt_start: First ground truth of the image-class.
            pred_start: First prediction of the run.
        """
        n = iou.shape[0]
        if n == 0:
            return
        if self._kernels is not None:
            # The pairs that can match, by the kernel of :meth:`add`: one prediction of the
            # image-class a rank, in index order (the block's order), as below.
            lowest = (
                self._lowest if self._ranges is None else min(self._lowest, self._ranges.lowest)
            )
            rows, columns = np.nonzero(_passes(iou, lowest, self._strict))
            self._add_compiled(
                self._kernels, rows + gt_start, columns + pred_start, iou[rows, columns], None
            )
            return
        by_pred = np.ascontiguousarray(iou.T)  # a prediction's IoUs side by side
        thresholds = self._thresholds[:, None]
        cell = slice(gt_start, gt_start + n)
        ignore, crowd = self._ignore[cell], self._crowd[cell]
        any_ignored = bool(ignore.any())
        taken = self._taken[:, cell]  # a view: updated in place
        levels = np.arange(self._thresholds.size)
        for j in range(by_pred.shape[0]):
            column = by_pred[j]
            if column.max() < self._lowest:  # at the lowest itself, _passes decides
                continue
            # Every ground truth of the image-class at once (most of them pass here).
            valid = _passes(column[None, :], thresholds, self._strict)
            valid &= ~taken | crowd[None, :]
            usable = valid
            if any_ignored:
                # Ground truth that counts first; an ignored one only where none counts.
                counted = valid & ~ignore[None, :]
                any_counted = np.asarray(counted.any(axis=1), dtype=bool)
                usable = np.where(any_counted[:, None], counted, valid)
            found = np.asarray(usable.any(axis=1), dtype=bool)
            if not found.any():
                continue
            score = np.where(usable, column[None, :], -np.inf)
            best = score.max(axis=1)
            # The highest IoU, the later (or earlier) ground truth on ties.
            at_best = score == best[:, None]
            if self._first:
                position = np.argmax(at_best, axis=1)
            else:
                position = n - 1 - np.argmax(at_best[:, ::-1], axis=1)
            t_win = levels[found]
            g_win = position[found]
            taken[t_win, g_win] = True
            self._hits.append(
                Hits(
                    t_win,
                    np.full(t_win.size, pred_start + j, dtype=np.int64),
                    g_win + gt_start,
                    column[g_win],
                )
            )

    def hits(self) -> Hits:
        """Every matched pair so far."""
        if len(self._hits) == 1:
            only = self._hits[0]
            if all(a.dtype == np.int64 for a in (only.level, only.pred, only.gt)):
                return only  # of the dtypes join gives (the kernel's arrays): not copied
        joined = Hits.join(self._hits)
        self._hits = [joined]  # the parts let go: a large set's matches are not held twice
        return joined


def match_devkit(
    best_gt: IndexArray,
    best_iou: FloatArray,
    rank: IndexArray,
    gt_ignore: BoolArray,
    thresholds: FloatArray,
    strict: bool,
) -> Hits:
    """The VOC devkit's rule for every image-class at once.

    Args:
        best_gt: ``(P,)`` each prediction's ground truth of highest IoU in its image-class
            (the first on ties), -1 where the image-class has none.
        best_iou: ``(P,)`` that IoU.
        rank: ``(P,)`` each prediction's place in its image-class's ranking.
        gt_ignore: ``(G,)`` ignored ground truth.
        thresholds: ``(T,)`` IoU thresholds.
        strict: Match at ``IoU > t``.

    Returns:
        The matched pairs (in the same order with the compiled kernels, where built).
    """
    fast = kernels(match_kernels.MODULE)
    if fast is not None:
        return Hits(
            *match_kernels.devkit_hits(fast, best_gt, best_iou, rank, gt_ignore, thresholds, strict)
        )
    preds = np.flatnonzero(best_gt >= 0)
    objects, values = best_gt[preds].astype(np.int64), best_iou[preds]
    passing = _passes(values[None, :], thresholds[:, None], strict)
    on_ignored = gt_ignore[objects]
    # Among predictions whose best object counts, the first by score takes it.
    by_object = np.lexsort((rank[preds], objects))
    hits: list[Hits] = []
    for t in range(thresholds.size):
        ignored_hits = np.flatnonzero(passing[t] & on_ignored)
        hits.append(
            Hits(
                np.full(ignored_hits.size, t, dtype=np.int64),
                preds[ignored_hits],
                objects[ignored_hits],
                values[ignored_hits],
            )
        )
        candidates = by_object[(passing[t] & ~on_ignored)[by_object]]
        if candidates.size == 0:
            continue
        taken = objects[candidates]
        winners = candidates[np.append(True, taken[1:] != taken[:-1])]
        hits.append(
            Hits(
                np.full(winners.size, t, dtype=np.int64),
                preds[winners],
                objects[winners],
                values[winners],
            )
        )
    return Hits.join(hits)


#: A round of the unscored pairing that removes less than this share of the remaining pairs
#: hands the rest to a plain loop (long chains of pairs, each waiting for the previous one).
_SLOW_ROUND = 0.1


def _pair_greedy(
    gt: IntArray, pred: IntArray, crowd: BoolArray, n_gt: int, n_pred: int
) -> IntArray:
    """Positions of the pairs taken when pairs, already in order, are taken one by one and
    each box leaves once paired (a crowd region stays).

    Round by round, every remaining pair that comes first among the remaining pairs of both
    its boxes is taken: sequential taking would take it too, as nothing before it touches
    either box. A round that takes few hands the remaining pairs to a plain loop.
    """
    n = gt.size
    taken: list[IntArray] = []
    gt_used = np.zeros(n_gt, dtype=bool)
    pred_used = np.zeros(n_pred, dtype=bool)
    by_gt = np.argsort(gt, kind="stable")
    by_pred = np.argsort(pred, kind="stable")
    alive = np.ones(n, dtype=bool)
    remaining = n
    while remaining:
        lead_gt = _leads(by_gt, gt, alive)
        lead_pred = _leads(by_pred, pred, alive)
        first = np.zeros(n, dtype=bool)
        first[lead_pred] = True
        first_gt = crowd.copy()
        first_gt[lead_gt] = True
        first &= first_gt
        chosen = np.flatnonzero(first)
        taken.append(chosen)
        pred_used[pred[chosen]] = True
        gt_used[gt[chosen[~crowd[chosen]]]] = True
        alive &= ~pred_used[pred] & ~gt_used[gt]
        before, remaining = remaining, int(np.count_nonzero(alive))
        if remaining and before - remaining < _SLOW_ROUND * before:
            taken.append(_pair_loop(np.flatnonzero(alive), gt, pred, crowd, gt_used, pred_used))
            break
    return np.sort(np.concatenate(taken)) if taken else np.zeros(0, dtype=np.int64)


def _leads(order: IntArray, box: IntArray, alive: BoolArray) -> IntArray:
    """The first remaining pair of each box, ``order`` listing the pairs by box, then in
    order."""
    live = order[alive[order]]
    keys = box[live]
    return live[np.append(True, keys[1:] != keys[:-1])] if live.size else live


def _pair_loop(
    positions: IntArray,
    gt: IntArray,
    pred: IntArray,
    crowd: BoolArray,
    gt_used: BoolArray,
    pred_used: BoolArray,
) -> IntArray:
    """The plain loop of :func:`_pair_greedy` over the remaining pairs, in order."""
    gts: list[int] = gt[positions].tolist()
    preds: list[int] = pred[positions].tolist()
    crowds: list[bool] = crowd[positions].tolist()
    used_gt = set(np.flatnonzero(gt_used).tolist())
    used_pred = set(np.flatnonzero(pred_used).tolist())
    chosen: list[int] = []
    for k, (g, p, c) in enumerate(zip(gts, preds, crowds, strict=True)):
        if p in used_pred or g in used_gt:
            continue
        chosen.append(k)
        used_pred.add(p)
        if not c:
            used_gt.add(g)
    return positions[np.asarray(chosen, dtype=np.int64)]


def match_unscored(
    gt: IndexArray,
    pred: IndexArray,
    iou: FloatArray,
    gt_ignore: BoolArray,
    gt_crowd: BoolArray,
    thresholds: FloatArray,
    strict: bool,
) -> Hits:
    """Predictions without scores, paired highest IoU first, for whole image-classes at once.

    Args:
        gt: ``(K,)`` ground truth of each pair; every pair of the image-classes concerned
            whose IoU passes the lowest threshold is listed.
        pred: ``(K,)`` prediction of each pair.
        iou: ``(K,)`` IoU of each pair.
        gt_ignore: Ignored ground truth, indexed by ``gt``.
        gt_crowd: Crowd regions, indexed by ``gt``.
        thresholds: ``(T,)`` IoU thresholds.
        strict: Match at ``IoU > t``.

    Returns:
        The matched pairs.
    """
    if thresholds.size == 0 or gt.size == 0:
        return Hits.join([])
    g_low, p_low = int(gt.min()), int(pred.min())
    # Indices within the image-classes at hand, 32-bit: millions of pairs may come at once.
    local: type[np.integer[Any]] = np.int32 if gt.size < 2**31 else np.int64
    g = (gt - g_low).astype(local, copy=False)
    p = (pred - p_low).astype(local, copy=False)
    n_gt, n_pred = int(g.max()) + 1, int(p.max()) + 1
    ignore = gt_ignore[g_low : g_low + n_gt]
    crowd = gt_crowd[g_low : g_low + n_gt]
    v = iou
    keep = _passes(iou, thresholds.min(), strict)
    if not keep.all():
        g, p, v = g[keep], p[keep], iou[keep]
    del keep
    # Ground truth that counts is paired first, at every threshold alike: pairs in order of
    # IoU, so the pairing at a higher threshold is the part of this one that passes it.
    if ignore.any():
        counted = np.flatnonzero(~ignore[g])
        order = counted[np.lexsort((p[counted], g[counted], -v[counted]))]
        del counted
    else:
        order = np.lexsort((p, g, -v))
    first = order[_pair_greedy(g[order], p[order], crowd[g[order]], n_gt, n_pred)]
    # Then ignored ground truth, threshold by threshold, among the predictions left.
    ignored = np.flatnonzero(ignore[g])
    ignored = ignored[np.lexsort((p[ignored], g[ignored], -v[ignored]))]
    hits: list[Hits] = []
    for t, threshold in enumerate(thresholds.tolist()):
        won = first[_passes(v[first], threshold, strict)]
        hits.append(Hits(np.full(won.size, t, dtype=np.int64), p[won], g[won], v[won]))
        free = np.ones(n_pred, dtype=bool)
        free[p[won]] = False
        rest = ignored[_passes(v[ignored], threshold, strict) & free[p[ignored]]]
        if rest.size:
            more = rest[_pair_greedy(g[rest], p[rest], crowd[g[rest]], n_gt, n_pred)]
            hits.append(Hits(np.full(more.size, t, dtype=np.int64), p[more], g[more], v[more]))
    return Hits.join(hits).shifted(g_low, p_low)


def match_unscored_rows(
    best_pred: IntArray,
    best_iou: FloatArray,
    row: Callable[[int], FloatArray],
    n_pred: int,
    gt_ignore: BoolArray,
    gt_crowd: BoolArray,
    thresholds: FloatArray,
    strict: bool,
) -> Hits:
    """:func:`match_unscored` for one image-class too large to list its pairs: each ground
    truth keeps only its best remaining prediction, in a heap ordered as the pairs are.

    When a ground truth's best prediction has been paired elsewhere, its IoU with every
    prediction (``row``) is computed again and its next best taken: the pair on top of the
    heap is then always the next pair in order, so the result is the same.

    Args:
        best_pred: ``(N,)`` each ground truth's prediction of highest IoU (the first on ties).
        best_iou: ``(N,)`` that IoU.
        row: ``row(g)`` gives ground truth ``g``'s ``(n_pred,)`` IoU with every prediction.
        n_pred: Predictions of the image-class.
        gt_ignore: ``(N,)`` ignored ground truth.
        gt_crowd: ``(N,)`` crowd regions.
        thresholds: ``(T,)`` IoU thresholds.
        strict: Match at ``IoU > t``.

    Returns:
        The matched pairs, indices within the image-class.
    """

    def passes(value: float, threshold: float) -> bool:
        return value > threshold if strict else value >= threshold

    def pair(
        gts: IntArray, threshold: float, used: BoolArray, keep: Callable[[int], bool]
    ) -> list[tuple[int, int, float]]:
        heap = [
            (-float(best_iou[g]), int(g), int(best_pred[g]))
            for g in gts.tolist()
            if passes(float(best_iou[g]), threshold)
        ]
        heapq.heapify(heap)
        out: list[tuple[int, int, float]] = []
        while heap:
            negative, g, p = heapq.heappop(heap)
            if not used[p]:
                used[p] = True
                out.append((g, p, -negative))
                if not keep(g):
                    continue
            values = np.where(used, -np.inf, row(g))
            j = int(np.argmax(values))
            if passes(float(values[j]), threshold):
                heapq.heappush(heap, (-float(values[j]), g, j))
        return out

    if thresholds.size == 0:
        return Hits.join([])
    counted = np.flatnonzero(~gt_ignore)
    ignored = np.flatnonzero(gt_ignore)
    first = pair(
        counted, float(thresholds.min()), np.zeros(n_pred, dtype=bool), lambda g: bool(gt_crowd[g])
    )
    first_v = np.array([v for _, _, v in first], dtype=np.float64)
    hits: list[Hits] = []
    for t, threshold in enumerate(thresholds.tolist()):
        won = [first[k] for k in np.flatnonzero(_passes(first_v, threshold, strict)).tolist()]
        used = np.zeros(n_pred, dtype=bool)
        used[[p for _, p, _ in won]] = True
        if ignored.size:
            won += pair(ignored, threshold, used, lambda g: bool(gt_crowd[g]))
        hits.append(
            Hits(
                np.full(len(won), t, dtype=np.int64),
                np.array([p for _, p, _ in won], dtype=np.int64),
                np.array([g for g, _, _ in won], dtype=np.int64),
                np.array([v for _, _, v in won], dtype=np.float64),
            )
        )
    return Hits.join(hits)


def pred_order(scores: npt.ArrayLike) -> IntArray:
    """Indices of predictions in descending score order, ties kept in file order.

    A stable sort (``mergesort``), as pycocotools uses, so equal scores never reorder.

    >>> pred_order([0.5, 0.9, 0.5]).tolist()
    [1, 0, 2]
    """
    values = np.asarray(scores, dtype=np.float64)
    return np.argsort(-values, kind="mergesort").astype(np.int64)


def match_class(
    iou: npt.ArrayLike,
    pred_scores: npt.ArrayLike | None,
    thresholds: npt.ArrayLike,
    gt_ignore: npt.ArrayLike | None = None,
    gt_crowd: npt.ArrayLike | None = None,
    rule: MatchRule = "unmatched",
    strict: bool = False,
) -> ClassMatch:
    """Match the predictions of one image-class to its ground truth at each threshold.

    The same matchers as the evaluator's, given one image-class's IoU matrix.

    Args:
        iou: ``(N_gt, M_pred)`` overlaps (for crowd regions, intersection over the
            prediction's area, see :func:`vocmatch.core.iou.crowd_iou_matrix`).
        pred_scores: ``(M,)`` scores, or None when the predictions carry no scores.
        thresholds: ``(T,)`` IoU thresholds.
        gt_ignore: ``(N,)`` ground truth that neither counts as missed nor makes a matched
            prediction a true positive (``difficult`` objects, crowd regions).
        gt_crowd: ``(N,)`` crowd regions, which may absorb any number of predictions
            (``"unmatched"`` rule and unscored predictions).
        rule: ``"unmatched"`` or ``"devkit"``.
        strict: Match at ``IoU > t`` instead of ``IoU >= t``.

    Raises:
        ValueError: ``iou`` is not a matrix, or ``pred_scores``, ``gt_ignore`` or
            ``gt_crowd`` does not have one entry per prediction or ground truth.

    Returns:
        The matching at every threshold.

    >>> m = match_class([[0.5, 0.9]], [0.8, 0.7], [0.5])
    >>> m.pred_matched.tolist(), m.gt_matched.tolist()
    ([[True, False]], [[True]])
    """
    matrix = np.asarray(iou, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"Expected `iou` to have shape (N, M), got {matrix.shape}")
    n_gt, n_pred = matrix.shape
    levels = np.asarray(thresholds, dtype=np.float64).ravel()
    ignore = (
        np.zeros(n_gt, dtype=bool)
        if gt_ignore is None
        else np.asarray(gt_ignore, dtype=bool).ravel()
    )
    crowd = (
        np.zeros(n_gt, dtype=bool) if gt_crowd is None else np.asarray(gt_crowd, dtype=bool).ravel()
    )
    for name, flags in (("gt_ignore", ignore), ("gt_crowd", crowd)):
        if flags.size != n_gt:
            raise ValueError(f"Expected `{name}` to have length {n_gt}, got {flags.size}")
    order = None if pred_scores is None else pred_order(pred_scores)
    if order is not None and order.shape != (n_pred,):
        raise ValueError(f"Expected `pred_scores` to have shape ({n_pred},), got {order.shape}")

    gt = np.repeat(np.arange(n_gt, dtype=np.int64), n_pred)
    pred = np.tile(np.arange(n_pred, dtype=np.int64), n_gt)
    values = matrix.ravel()
    if order is None:
        hits = match_unscored(gt, pred, values, ignore, crowd, levels, strict)
    else:
        rank = np.empty(n_pred, dtype=np.int64)
        rank[order] = np.arange(n_pred)
        if rule in ("devkit", "iou-order"):
            hits = Hits.join([])  # no ground truth: nothing to match
            if n_gt:
                best_gt = np.argmax(matrix, axis=0)  # the first maximum, as voc_eval.py
                best_iou = matrix[best_gt, np.arange(n_pred)]
                hits = match_devkit(best_gt, best_iou, rank, ignore, levels, strict)
        else:
            matcher = RankedMatcher(
                n_gt, ignore, crowd, levels, strict, first_on_ties=rule == "unmatched-first"
            )
            matcher.add(gt, pred, values, rank)
            hits = matcher.hits()
    pred_matched = np.zeros((levels.size, n_pred), dtype=bool)
    pred_gt = np.zeros((levels.size, n_pred), dtype=np.int64)
    gt_matched = np.zeros((levels.size, n_gt), dtype=bool)
    pred_matched[hits.level, hits.pred] = True
    pred_gt[hits.level, hits.pred] = hits.gt
    gt_matched[hits.level, hits.gt] = True
    pred_ignored = pred_matched & ignore[pred_gt] if n_gt else np.zeros_like(pred_matched)
    from vocmatch.core.class_match import ClassMatch

    return ClassMatch(pred_matched, pred_gt, pred_ignored, gt_matched)


#: Names defined in their own modules, imported from there when first asked for here (PEP
#: 562): an evaluation matches every image-class at once and never builds one class's
#: matching record.
_ELSEWHERE = {"ClassMatch": "vocmatch.core.class_match"}


def __getattr__(name: str) -> Any:
    """Import a name of :data:`_ELSEWHERE` from its module on first use (PEP 562)."""
    return lazy_attribute(__name__, _ELSEWHERE, name)

"""The compiled matching kernels (``vocmatch/core/fastmatch.c``) behind checked calls.

Each function here takes the compiled module as :func:`vocmatch.compiled.kernels` gives it
(``kernels("vocmatch.core.fastmatch")``, loaded once per stage by the caller), converts the
arrays to the dtypes the kernel reads, checks their shapes, and calls it. The numpy matchers
of :mod:`vocmatch.core.match` are the reference: each kernel gives their bits.

* :func:`flag_bits`: each prediction's flags from matched pairs (what ``Hits`` hold).
* :class:`RangeMatcher`: the ``"unmatched"`` (or ``"unmatched-first"``) rule of ranked
  predictions, with one matching state per ground-truth set (each ignoring ground truth of
  its own: COCO's area ranges) and threshold, every state matched in one pass over the pairs
  and kept between calls, as :class:`~vocmatch.core.match.RankedMatcher` keeps its state.
* :class:`~vocmatch.core.match.RankedMatcher` calls ``ranked_pass`` itself: the same rule
  under the matcher's one set, its matched pairs in the order its numpy code gives them,
  with a :class:`RangeMatcher` riding along where it is given one (the same pass over the
  pairs matches both).
* :func:`devkit_set_flags`: the VOC devkit's rule (:func:`~vocmatch.core.match.match_devkit`)
  likewise, into flags; :func:`devkit_hits`, its matched pairs under one set.
* :func:`score_cell_order`: the predictions' orders by score and by image-class cell, as
  numpy's stable sorts give them.
* :func:`sorted_cells`: the sorted predictions' columns, the score order as places among
  them and each one's rank in its image-class, in one pass after the sort.
* :func:`cell_pairs`: every pair of small image-classes, in the pair scan's order.
* :func:`alike_cells`: where a ground-truth set is matched as the evaluation is, image-class
  by image-class (numpy's counts where the kernels are not given).
* :func:`class_order`: every class's members and ranking, by a counting sort.
* :func:`mark_pairs`: each ground truth's matched flag at every threshold.
* :func:`hit_counts` and :func:`image_counts`: each image's matched pairs, those whose
  ground truth counts, and its missed ground truth at every threshold, each in one pass (what
  numpy counts with a ``bincount`` of a ``(threshold, image)`` key, or per threshold).
* :func:`pair_iou`: the IoU of listed pairs of boxes, with :mod:`vocmatch.core.iou`'s float
  operations in their order (the same bits as its ``pair_intersection``, ``box_area`` and
  ``iou_from_intersection``).

Ranked matching takes each prediction's pairs in the order of the predictions' indices:
within an image-class, indices must follow the ranking (as the evaluation sorts them: by
image-class, then descending score, then file order).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.kernel_threads import kernel_threads

__all__ = [
    "AREAS_PER_THREAD",
    "IOU_PAIRS_PER_THREAD",
    "MODULE",
    "ORDER_PREDS_PER_THREAD",
    "RANKED_PAIRS_PER_THREAD",
    "RangeMatcher",
    "alike_cells",
    "box_areas",
    "cell_pairs",
    "class_order",
    "devkit_hits",
    "devkit_set_flags",
    "flag_bits",
    "hit_counts",
    "image_counts",
    "index_array",
    "mark_pairs",
    "pair_arrays",
    "pair_iou",
    "score_cell_order",
    "sorted_cells",
]

#: The compiled module's full name, for :func:`vocmatch.compiled.kernels`.
MODULE = "vocmatch.core.fastmatch"

IndexArray = npt.NDArray[np.integer[Any]]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
FlagArray = npt.NDArray[np.integer[Any]]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]

#: Pairs a thread of :func:`pair_iou` gets at least (a call is split in threads only from
#: twice as many: below, starting a thread costs more than it saves).
IOU_PAIRS_PER_THREAD = 20_000

#: Boxes a thread of :func:`box_areas` gets at least.
AREAS_PER_THREAD = 100_000

#: Pairs a thread of the compiled ranked matching (``ranked_pass``, called by
#: :class:`~vocmatch.core.match.RankedMatcher`) gets at least.
RANKED_PAIRS_PER_THREAD = 50_000

#: Predictions a thread of :func:`score_cell_order`, :func:`sorted_cells` and
#: :func:`class_order` gets at least
#: (each thread of ``score_cell_order`` clears tables of its own, 0.5 MB and a word a cell).
ORDER_PREDS_PER_THREAD = 100_000

#: The most ground-truth sets the compiled ``alike_cells`` takes (``ALIKE_MAX_SETS`` in
#: ``fastmatch.c``).
ALIKE_MAX_SETS = 15


def index_array(values: IndexArray) -> IndexArray:
    """``values`` as a contiguous int32 or int64 array (no copy where it is one)."""
    if values.dtype in (np.int32, np.int64):
        return np.ascontiguousarray(values)
    return np.ascontiguousarray(values, dtype=np.int64)


def flag_bits(
    kernels: ModuleType, pred: IndexArray, level: IndexArray, n_pred: int, dtype: np.dtype[Any]
) -> FlagArray:
    """``(P,)`` in ``dtype``: bit ``level[i]`` set in ``pred[i]``'s flags, for each ``i``.

    Raises:
        ValueError: A prediction or level is out of range.
    """
    bits = np.zeros(n_pred, dtype=dtype)
    kernels.set_bits(bits, index_array(pred), index_array(level))
    return bits


class RangeMatcher:
    """The ``"unmatched"`` rule of ranked predictions under several ground-truth sets at
    once, fed their pairs in calls (each call holding every pair of its predictions, a
    prediction after the higher-ranked ones of its image-class); it keeps only each
    prediction's flags.

    It matches on its own (:meth:`add`), or rides along a
    :class:`~vocmatch.core.match.RankedMatcher` that is given it: then each pair is read once
    for both, and where the thresholds are all among that matcher's, a set takes that
    matcher's picks in every image-class where they are its own (:func:`alike_cells`)
    instead of matching again.

    Args:
        kernels: The compiled module.
        ignore: ``(S, G)`` the ground truth each set ignores.
        crowd: ``(G,)`` crowd regions, which absorb any number of predictions.
        thresholds: ``(T,)`` IoU thresholds.
        strict: Match at ``IoU > t``.
        first_on_ties: The earlier ground truth wins ties of IoU (``"unmatched-first"``).
        n_pred: Predictions in all.
        dtype: The flags' dtype (at least ``T`` bits).
        own: Of the matcher it rides along: the ground truth it ignores, its thresholds,
            and each ground truth's image-class (``(G,)``, non-decreasing for speed).
    """

    def __init__(
        self,
        kernels: ModuleType,
        ignore: BoolArray,
        crowd: BoolArray,
        thresholds: FloatArray,
        strict: bool,
        first_on_ties: bool,
        n_pred: int,
        dtype: np.dtype[Any],
        own: tuple[BoolArray, FloatArray, IndexArray] | None = None,
    ) -> None:
        n_sets, n_gt = ignore.shape
        if crowd.shape != (n_gt,) or thresholds.size > 8 * dtype.itemsize:
            raise ValueError("crowd or thresholds do not fit the ground-truth sets")
        self._kernels = kernels
        self._ignore = np.ascontiguousarray(ignore, dtype=bool)
        self._crowd = np.ascontiguousarray(crowd, dtype=bool)
        self._thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        self._strict = strict
        self._first = first_on_ties
        self._taken = np.zeros((n_gt, n_sets, thresholds.size), dtype=bool)
        #: ``(S, G)`` the set takes the picks of the matcher it rides along in the
        #: image-class of the ground truth.
        self.alike = np.zeros((n_sets, n_gt), dtype=bool)
        #: ``(T,)`` each threshold's place among that matcher's (read where alike).
        self.level = np.zeros(thresholds.size, dtype=np.int64)
        if own is not None:
            own_ignore, own_thresholds, cell = own
            places = {value: t for t, value in enumerate(own_thresholds.tolist())}
            if all(value in places for value in self._thresholds.tolist()):
                self.level[:] = [places[value] for value in self._thresholds.tolist()]
                self.alike = alike_cells(self._ignore, own_ignore, cell, kernels)
        #: ``(P, S)`` bit ``t``: matched at threshold ``t`` under set ``s``.
        self.matched = np.zeros((n_pred, n_sets), dtype=dtype)
        #: ``(P, S)`` likewise, matched to ground truth the set ignores.
        self.ignored = np.zeros((n_pred, n_sets), dtype=dtype)

    @property
    def lowest(self) -> float:
        """The lowest threshold (infinity without any)."""
        return float(self._thresholds.min()) if self._thresholds.size else np.inf

    def state(self) -> tuple[Any, ...]:
        """The sets' arrays as the kernel ``ranked_pass`` reads them (its ``ranges``)."""
        return (
            self._ignore, self._thresholds, self._taken, self.matched, self.ignored,
            self.alike, self.level,
        )  # fmt: skip

    def add(self, gt: IndexArray, pred: IndexArray, iou: FloatArray) -> None:
        """Match predictions given as pairs (``(K,)`` each), on its own.

        Raises:
            ValueError: An index is out of range, the arrays differ in length, or the
                matcher was made to ride along another.
        """
        if self.alike.any():
            raise ValueError("a matcher riding along another is fed through that one")
        n_gt = self._crowd.size
        self._kernels.ranked_pass(
            index_array(gt), index_array(pred), np.ascontiguousarray(iou, dtype=np.float64),
            None, np.zeros(n_gt, dtype=bool), self._crowd, np.zeros(0), self._strict,
            self._first, np.zeros((0, n_gt), dtype=bool), self.state(),
        )  # fmt: skip


def alike_cells(
    ignore: BoolArray, own_ignore: BoolArray, cell: IndexArray, kernels: ModuleType | None = None
) -> BoolArray:
    """``(S, G)`` where each of the ``(S, G)`` sets ``ignore`` is matched as ``own_ignore``
    in the image-class (``cell``) of the ground truth, under the unmatched rule: the two
    ignore the same ground truth there, or each ignores all or none of it (a prediction
    prefers ground truth that counts only over ignored ground truth of its image-class, so
    the picks are the same; only whether the pick counts differs).

    With ``kernels`` (the compiled module) and ``cell`` non-decreasing, one pass over the
    image-classes in C; else numpy's counts per image-class (the reference)."""
    n_sets, n_gt = ignore.shape
    if n_gt == 0:
        return np.zeros((n_sets, 0), dtype=bool)
    if bool(np.all(cell[1:] >= cell[:-1])):
        if kernels is not None and n_sets <= ALIKE_MAX_SETS:
            alike = np.empty((n_sets, n_gt), dtype=bool)
            kernels.alike_cells(
                np.ascontiguousarray(ignore, dtype=bool),
                np.ascontiguousarray(own_ignore, dtype=bool),
                np.ascontiguousarray(cell, dtype=np.int64), alike,
            )  # fmt: skip
            return alike
        starts = np.flatnonzero(np.append(True, cell[1:] != cell[:-1]))
        size = np.diff(np.append(starts, n_gt))
        inverse = np.repeat(np.arange(starts.size), size)

        def per_cell(flags: BoolArray) -> IntArray:
            return np.add.reduceat(flags.astype(np.int64), starts)
    else:
        _, inverse, size = np.unique(cell, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)

        def per_cell(flags: BoolArray) -> IntArray:
            return np.bincount(inverse, flags, minlength=size.size).astype(np.int64)

    own = per_cell(own_ignore)
    own_uniform = (own == 0) | (own == size)
    alike = np.empty((n_sets, n_gt), dtype=bool)
    for s, row in enumerate(ignore):
        differs = per_cell(row != own_ignore) > 0
        n = per_cell(row)
        alike[s] = (~differs | (((n == 0) | (n == size)) & own_uniform))[inverse]
    return alike


def devkit_set_flags(
    kernels: ModuleType,
    best_gt: IndexArray,
    best_iou: FloatArray,
    ignore: BoolArray,
    thresholds: FloatArray,
    strict: bool,
    dtype: np.dtype[Any],
) -> tuple[FlagArray, FlagArray]:
    """The devkit rule (:func:`~vocmatch.core.match.match_devkit`) under each of ``(S, G)``
    ground-truth sets ``ignore``: ``(P, S)`` flags matched and matched to ignored ground
    truth, bit ``t`` for threshold ``t``.

    Raises:
        ValueError: A ground truth is out of range, or the arrays do not fit.
    """
    n_pred, n_sets = best_gt.size, ignore.shape[0]
    if thresholds.size > 8 * dtype.itemsize or best_iou.shape != (n_pred,):
        raise ValueError("best_iou or thresholds do not fit the predictions")
    matched = np.zeros((n_pred, n_sets), dtype=dtype)
    ignored = np.zeros((n_pred, n_sets), dtype=dtype)
    kernels.devkit_flags(
        index_array(best_gt),
        np.ascontiguousarray(best_iou, dtype=np.float64),
        np.ascontiguousarray(ignore, dtype=bool),
        np.ascontiguousarray(thresholds, dtype=np.float64),
        strict,
        matched,
        ignored,
    )
    return matched, ignored


def devkit_hits(
    kernels: ModuleType,
    best_gt: IndexArray,
    best_iou: FloatArray,
    rank: IndexArray,
    ignore: BoolArray,
    thresholds: FloatArray,
    strict: bool,
) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
    """The devkit rule's matched pairs (:func:`~vocmatch.core.match.match_devkit`), as
    ``(level, pred, gt, iou)`` in the same order.

    Raises:
        ValueError: A ground truth is out of range, or the arrays differ in length.
    """
    found = kernels.devkit_hits(
        index_array(best_gt),
        np.ascontiguousarray(best_iou, dtype=np.float64),
        index_array(rank),
        np.ascontiguousarray(ignore, dtype=bool),
        np.ascontiguousarray(thresholds, dtype=np.float64),
        strict,
    )
    return pair_arrays(found)


def pair_arrays(
    found: tuple[bytes, bytes, bytes, bytes],
) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
    """The matched pairs a kernel returns as bytes, as ``(level, pred, gt, iou)`` arrays
    (int64, int64, int64, float64)."""
    level, pred, gt, iou = found
    return (
        np.frombuffer(level, dtype=np.int64),
        np.frombuffer(pred, dtype=np.int64),
        np.frombuffer(gt, dtype=np.int64),
        np.frombuffer(iou, dtype=np.float64),
    )


def score_cell_order(
    kernels: ModuleType, score: FloatArray, cell: IndexArray, threads: int | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The orders of ``np.argsort(-score, kind="stable")`` and ``np.lexsort((-score, cell))``
    (by cell, then descending score, ties in index order), by counting and radix sorts.

    Args:
        kernels: The compiled module.
        score: ``(P,)`` scores, without NaN (-inf ranks last).
        cell: ``(P,)`` non-negative cells.
        threads: Split the counting passes into this many ranges of predictions, each on a
            thread (the same orders); by default as
            :func:`~vocmatch.kernel_threads.kernel_threads` gives for
            :data:`ORDER_PREDS_PER_THREAD` predictions a thread.

    Raises:
        ValueError: A score is NaN, a cell negative, or the arrays differ in length.
    """
    by_score = np.empty(score.size, dtype=np.int64)
    order = np.empty(score.size, dtype=np.int64)
    kernels.score_cell_order(
        np.ascontiguousarray(score, dtype=np.float64), index_array(cell), by_score, order,
        kernel_threads(score.size, ORDER_PREDS_PER_THREAD) if threads is None else threads,
    )  # fmt: skip
    return by_score, order


def hit_counts(
    kernels: ModuleType,
    hits: tuple[IndexArray, IndexArray, IndexArray],
    image: IndexArray,
    ignore: BoolArray,
    passing: BoolArray | None,
    shape: tuple[int, int],
) -> tuple[IntArray, IntArray]:
    """Each image's matched pairs at each threshold: ``(T, I)`` those whose ground truth is
    not ``ignore``-d, and all of them; with ``passing``, of passing predictions only.

    Args:
        kernels: The compiled module.
        hits: ``(level, pred, gt)`` of each matched pair.
        image: ``(P,)`` each prediction's image.
        ignore: ``(G,)`` ignored ground truth.
        passing: ``(P,)`` predictions that count, or None for all.
        shape: ``(T, I)`` thresholds and images.

    Raises:
        ValueError: An index is out of range, or the arrays do not fit.
    """
    level, pred, gt = hits
    counting = np.zeros(shape, dtype=np.int64)
    every = np.zeros(shape, dtype=np.int64)
    kernels.hit_counts(
        index_array(level), index_array(pred), index_array(gt), index_array(image),
        np.ascontiguousarray(ignore, dtype=bool),
        None if passing is None else np.ascontiguousarray(passing, dtype=bool),
        counting, every,
    )  # fmt: skip
    return counting, every


def image_counts(
    kernels: ModuleType, flags: BoolArray, image: IndexArray, n_images: int
) -> IntArray:
    """``(T, I)`` each image's set flags of ``(T, G)`` ``flags``, row by row (what
    ``np.bincount(image[flags[t]], minlength=n_images)`` gives for each ``t``).

    Raises:
        ValueError: An image is out of range, or the arrays do not fit.
    """
    out = np.zeros((flags.shape[0], n_images), dtype=np.int64)
    kernels.image_counts(np.ascontiguousarray(flags, dtype=bool), index_array(image), out)
    return out


def cell_pairs(kernels: ModuleType, cells: IndexArray) -> tuple[IntArray, IntArray]:
    """Every pair of some image-classes, ``(gt, pred)`` (int64): cell by cell, each
    prediction in order, paired with its cell's ground truth in order.

    Args:
        kernels: The compiled module.
        cells: ``(K, 4)`` ``(gt_start, gt_stop, pred_start, pred_stop)`` of each.

    Raises:
        ValueError: A row is no cell (a negative start or size), or the pairs are too many.
    """
    gt, pred = kernels.cell_pairs(np.ascontiguousarray(cells, dtype=np.int64))
    return np.frombuffer(gt, dtype=np.int64), np.frombuffer(pred, dtype=np.int64)


def sorted_cells(
    kernels: ModuleType,
    order: IntArray,
    by_score: IntArray,
    columns: tuple[IndexArray, IndexArray, IndexArray],
    threads: int | None = None,
) -> tuple[Int32Array, Int32Array, Int32Array, Int32Array, Int32Array]:
    """The predictions put in ``order`` (what :func:`score_cell_order` gives), in one pass:
    ``columns`` ``(rows, image, label)`` in that order as int32 (as ``astype`` casts), the
    score order ``by_score`` as places in it, and each one's rank (its place in its run of
    equal ``(image, label)``). With ``threads``, in that many ranges of places, each on a
    thread (the same bits); by default as :func:`~vocmatch.kernel_threads.kernel_threads`
    gives for :data:`ORDER_PREDS_PER_THREAD` predictions a thread.

    Raises:
        ValueError: ``order`` or ``by_score`` holds an index out of range, or the arrays
            differ in length.
    """
    rows, image, label = columns
    n = order.size
    found = [np.empty(n, dtype=np.int32) for _ in range(5)]
    kernels.sorted_cells(
        np.ascontiguousarray(order, dtype=np.int64), np.ascontiguousarray(by_score, dtype=np.int64),
        index_array(rows), index_array(image), index_array(label), *found,
        kernel_threads(n, ORDER_PREDS_PER_THREAD) if threads is None else threads,
    )  # fmt: skip
    return found[0], found[1], found[2], found[3], found[4]


def mark_pairs(
    kernels: ModuleType, shape: tuple[int, int], row: IndexArray, col: IndexArray
) -> BoolArray:
    """``shape`` flags, ``True`` at ``(row[i], col[i])`` for each ``i`` (what numpy's
    ``out[row, col] = True`` sets), in one pass.

    Raises:
        ValueError: An index is out of range, or ``row`` and ``col`` differ in length.
    """
    out = np.zeros(shape, dtype=bool)
    kernels.mark_pairs(out, index_array(row), index_array(col))
    return out


def class_order(
    kernels: ModuleType,
    label: IndexArray,
    by_score: IndexArray,
    n_classes: int,
    threads: int | None = None,
) -> tuple[Int32Array, IntArray, Int32Array]:
    """Every class's members and ranking by a counting sort: the predictions by class
    (numpy's stable argsort of ``label``, int32); where each class starts among them
    (``(K + 1,)`` int64); and class by class, the members' places (int32) of the class's
    predictions in ``by_score``'s order (a permutation of the predictions). With
    ``threads``, each pass in that many ranges, each on a thread (the same bits); by default
    as :func:`~vocmatch.kernel_threads.kernel_threads` gives for
    :data:`ORDER_PREDS_PER_THREAD` predictions a thread.

    Raises:
        ValueError: A label or index is out of range, or the arrays differ in length.
    """
    n = label.size
    order = np.empty(n, dtype=np.int32)
    starts = np.empty(n_classes + 1, dtype=np.int64)
    places = np.empty(n, dtype=np.int32)
    kernels.class_order(
        index_array(label), index_array(by_score), order, starts, places,
        kernel_threads(n, ORDER_PREDS_PER_THREAD) if threads is None else threads,
    )  # fmt: skip
    return order, starts, places


def box_areas(
    kernels: ModuleType,
    boxes: FloatArray,
    rows: IndexArray | None,
    pixel_inclusive: bool,
    threads: int | None = None,
) -> FloatArray:
    """The areas of boxes ``rows`` of ``(N, 4)`` ``boxes`` (every box with None), to the bit
    what :func:`vocmatch.core.iou.box_area` gives of ``boxes[rows]``, without gathering them;
    with ``threads``, in that many ranges, each on a thread (the same bits), by default as
    :func:`~vocmatch.kernel_threads.kernel_threads` gives for :data:`AREAS_PER_THREAD` boxes
    a thread.

    Raises:
        ValueError: A row is out of range, or ``boxes`` is not ``(N, 4)``.
    """
    out = np.empty(boxes.shape[0] if rows is None else rows.size, dtype=np.float64)
    kernels.box_areas(
        np.ascontiguousarray(boxes, dtype=np.float64),
        None if rows is None else index_array(rows),
        1.0 if pixel_inclusive else 0.0,
        out,
        kernel_threads(out.size, AREAS_PER_THREAD) if threads is None else threads,
    )
    return out


def pair_iou(
    kernels: ModuleType,
    boxes: tuple[FloatArray, FloatArray, BoolArray],
    pred_boxes: FloatArray,
    pred_rows: IndexArray | None,
    pairs: tuple[IndexArray, IndexArray],
    pixel_inclusive: bool,
    threads: int | None = None,
) -> FloatArray:
    """The IoU of each pair ``(gt[i], pred[i])``, to the bit what
    ``iou_from_intersection(pair_intersection(gt_boxes[gt], boxes, pixel_inclusive),
    gt_area[gt], box_area(boxes, pixel_inclusive), gt_crowd[gt])`` gives, where ``boxes`` is
    ``pred_boxes[pred_rows[pred]]`` (``pred_boxes[pred]`` without ``pred_rows``).

    Args:
        kernels: The compiled module.
        boxes: ``(gt_boxes, gt_area, gt_crowd)``: ``(G, 4)`` ground truth, ``(G,)`` their
            areas (:func:`vocmatch.core.iou.box_area`'s) and crowd flags.
        pred_boxes: ``(R, 4)`` boxes of the predictions.
        pred_rows: ``(P,)`` each prediction's row of ``pred_boxes``, or None.
        pairs: ``(gt, pred)``, ``(K,)`` each.
        pixel_inclusive: The VOC devkit's ``+ 1`` widths and heights.
        threads: Split the pairs into this many ranges, each on a thread (the same bits);
            by default as :func:`~vocmatch.kernel_threads.kernel_threads` gives for
            :data:`IOU_PAIRS_PER_THREAD` pairs a thread.

    Raises:
        ValueError: An index is out of range, or the arrays do not fit.
    """
    gt_boxes, gt_area, gt_crowd = boxes
    gt, pred = pairs
    out = np.empty(gt.size, dtype=np.float64)
    kernels.pair_iou(
        np.ascontiguousarray(gt_boxes, dtype=np.float64),
        np.ascontiguousarray(gt_area, dtype=np.float64),
        np.ascontiguousarray(gt_crowd, dtype=bool),
        np.ascontiguousarray(pred_boxes, dtype=np.float64),
        None if pred_rows is None else index_array(pred_rows),
        index_array(gt), index_array(pred), 1.0 if pixel_inclusive else 0.0, out,
        kernel_threads(gt.size, IOU_PAIRS_PER_THREAD) if threads is None else threads,
    )  # fmt: skip
    return out

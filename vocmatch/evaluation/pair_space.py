"""The pairs of boxes that can match, and their IoU, generated in bounded pieces.

A prediction can only match ground truth of its own image and class (a *cell*). The
evaluator (:mod:`vocmatch.evaluation.engine`) sorts both sides by cell and scores every pair of the
same cell with the one IoU arithmetic of :mod:`vocmatch.core.iou` (and, where a rotated box or a
polygon takes part, the exact region overlap of :mod:`vocmatch.core.geometry`).

How many pairs there are depends on the data: a few per prediction on ordinary images, but
``N x M`` for one image-class with ``N`` objects and ``M`` predictions, 400 million for
20,000 of each. So pairs are never listed all at once:

* *small* cells (at most :data:`TILE_PAIRS` pairs each) are scored in tiles of whole cells,
  each tile at most about twice that many pairs, as flat lists;
* a *large* cell is scored in blocks: all its ground truth against a run of its predictions
  in ranking order, as an ``(N, B)`` matrix of at most about :data:`TILE_PAIRS` entries.
  Where the threshold leaves no match for boxes that do not meet, an STR tree finds the
  pairs that do, and only those are scored.

Every piece is scored the same way, so an IoU never depends on the piece it fell in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels
from vocmatch.core.geometry import (
    BoxTree,
    Regions,
    pair_iou_bound,
    pair_region_intersection,
    pairs_meeting,
)
from vocmatch.core.iou import (
    box_area,
    crowd_iou_matrix,
    iou_from_intersection,
    iou_matrix_float32,
    pair_intersection,
    pair_iou_float32,
)
from vocmatch.core.model import Polygon, RotatedBox

__all__ = ["BOUND_MARGIN", "TILE_PAIRS", "Block", "PairSpace", "Tile", "iou_floor"]

#: Pairs scored at once: a tile of small cells holds at most about twice this many, a block
#: of a large cell about this many. Each pair costs some 100 bytes while it is scored.
TILE_PAIRS = 1 << 21
# Pairs scored at once within a tile (the memory of scoring them, not of keeping them).
_IOU_PAIRS = 1 << 18

#: A pair of regions is clipped unless its IoU bound is below the floor by this share of
#: the floor: a pair whose IoU equals a threshold is always clipped, whatever the rounding
#: of its bound.
BOUND_MARGIN = 1e-9


def iou_floor(thresholds: npt.ArrayLike) -> float:
    """The lowest IoU matching reads of a pair of regions, below which its exact overlap
    need not be computed while pairs are scanned.

    Matching at any threshold (inclusive or strict) reads only pairs at or above the lowest
    one: every match, its IoU (mean IoU of matched pairs, tightness) and every count, AP and
    curve come from those. Each box's best IoU with the other side, whatever its value (the
    per-box records of false positives and misses), is made exact afterwards from the pairs
    left out (:meth:`PairSpace.left_out_iou`).

    Args:
        thresholds: Every IoU threshold matched at (the evaluation's, the sweep, AP's).

    Returns:
        The floor; 0.0 leaves out nothing.
    """
    values = np.asarray(thresholds, dtype=np.float64)
    return max(0.0, float(values.min())) if values.size else 0.0


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
RowArray = npt.NDArray[np.int32] | npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Tile:
    """The pairs of a run of whole small cells, as flat lists (predictions in order).

    Attributes:
        pred_start: First prediction of the run.
        pred_stop: One past its last prediction.
        gt: ``(K,)`` ground truth of each pair.
        pred: ``(K,)`` prediction of each pair, non-decreasing.
        iou: ``(K,)`` IoU of each pair.
    """

    pred_start: int
    pred_stop: int
    gt: IntArray
    pred: IntArray
    iou: FloatArray


@dataclass(frozen=True, slots=True)
class Block:
    """Part of a large cell: all its ground truth against a run of its predictions.

    Attributes:
        gt_start: First ground truth of the cell (rows are ``gt_start`` onwards).
        pred_start: First prediction of the run (columns are ``pred_start`` onwards).
        iou: ``(N, B)`` IoU, ground truth by prediction.
    """

    gt_start: int
    pred_start: int
    iou: FloatArray


def _runs(values: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """The runs of a non-decreasing array: each run's value, start and stop."""
    if values.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    first = np.empty(values.size, dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    stops = np.empty_like(starts)
    stops[:-1] = starts[1:]
    stops[-1] = values.size
    return values[starts], starts, stops


class PairSpace:
    """Ground truth and predictions sorted by cell, and how to score any pair of them.

    Args:
        gt_boxes: ``(G, 4)`` ground truth, sorted by cell.
        gt_cell: ``(G,)`` cell of each, non-decreasing.
        gt_crowd: ``(G,)`` crowd regions (scored by intersection over the prediction's area).
        pred_boxes: ``(P, 4)`` predictions, sorted by cell, each cell in ranking order.
        pred_cell: ``(P,)`` cell of each, non-decreasing.
        pixel_inclusive: The VOC devkit's ``+ 1`` widths between two plain boxes.
        gt_shapes: ``(row, shape)`` of the ground truth that is a rotated box or a polygon.
        pred_shapes: The same for predictions.
        pred_rows: With it, ``pred_boxes`` is a column of boxes of which prediction ``i`` is
            row ``pred_rows[i]`` (gathered pair by pair: a large set's predictions are not
            copied, 160 MB for 5 million).
        iou_floor: A pair with a rotated box or a polygon whose IoU is provably below this
            (:func:`vocmatch.core.geometry.pair_iou_bound`) is not clipped and scores 0.0;
            see :func:`iou_floor`. 0.0 clips every pair whose bounding boxes meet.
        float32: Plain boxes' IoU in the ``ultralytics`` package's float32 arithmetic
            (:func:`vocmatch.core.iou.pair_iou_float32`; not for crowd regions or shapes).

    Attributes:
        exact_overlaps: Pairs clipped so far (exact region overlaps computed).
    """

    def __init__(
        self,
        gt_boxes: FloatArray,
        gt_cell: IntArray,
        gt_crowd: BoolArray,
        pred_boxes: FloatArray,
        pred_cell: IntArray,
        pixel_inclusive: bool,
        gt_shapes: Sequence[tuple[int, Polygon | RotatedBox]] = (),
        pred_shapes: Sequence[tuple[int, Polygon | RotatedBox]] = (),
        pred_rows: RowArray | None = None,
        iou_floor: float = 0.0,
        float32: bool = False,
    ) -> None:
        self.gt_boxes = gt_boxes
        self.float32 = float32
        # The compiled kernels list a tile's pairs where they are built.
        self._kernels = kernels(match_kernels.MODULE)
        self.iou_floor = iou_floor
        self.exact_overlaps = 0
        self._pred_column = pred_boxes
        self._pred_rows = pred_rows
        # The predictions of the last run given to rows(): a large image-class's run is
        # asked for again and again (unscored pairing, one object at a time).
        self._run: tuple[int, int, FloatArray] | None = None
        self.gt_crowd = gt_crowd
        self.pixel_inclusive = pixel_inclusive
        self.n_gt = int(gt_boxes.shape[0])
        self.n_pred = int(pred_cell.shape[0])
        self.gt_area = box_area(gt_boxes, pixel_inclusive)
        self._region_areas: tuple[FloatArray, FloatArray] | None = None
        # A prediction's area is computed with its pairs (from its box, by the same
        # arithmetic), not held for every prediction.
        # The cells with pairs are those on both sides: each side's runs, the ground truth's
        # looked up among the predictions' (both sorted, so the cells stay in order).
        gt_value, gt_starts, gt_stops = _runs(gt_cell)
        pred_value, pred_starts, pred_stops = _runs(pred_cell)
        at = np.searchsorted(pred_value, gt_value)
        if pred_value.size:
            live = np.flatnonzero(pred_value[np.minimum(at, pred_value.size - 1)] == gt_value)
        else:
            live = at[:0]
        on_pred = at[live]
        # (gt_start, gt_stop, pred_start, pred_stop) of each cell with pairs, and its pairs.
        self._cells: IntArray = np.stack(
            [gt_starts[live], gt_stops[live], pred_starts[on_pred], pred_stops[on_pred]], axis=1
        ).astype(np.int64)
        self._cell_pairs: IntArray = (
            (gt_stops[live] - gt_starts[live]) * (pred_stops[on_pred] - pred_starts[on_pred])
        ).astype(np.int64)
        # Regions: every row of a cell that holds a rotated box or a polygon (a plain box
        # meeting a shape is clipped as a rectangle); none without shapes.
        self.gt_shaped = np.zeros(self.n_gt, dtype=bool)
        self.pred_shaped = np.zeros(self.n_pred, dtype=bool)
        self._gt_regions: Regions | None = None
        self._pred_regions: Regions | None = None
        # Each row's place among the regions (-1: none); empty without shapes.
        has_shapes = bool(gt_shapes or pred_shapes)
        self._gt_region = np.full(self.n_gt if has_shapes else 0, -1, dtype=np.int64)
        self._pred_region = np.full(self.n_pred if has_shapes else 0, -1, dtype=np.int64)
        if has_shapes:
            self.gt_shaped[[row for row, _ in gt_shapes]] = True
            self.pred_shaped[[row for row, _ in pred_shapes]] = True
            shaped_cells = np.unique(
                np.concatenate([gt_cell[self.gt_shaped], pred_cell[self.pred_shaped]])
            )
            gt_rows = np.flatnonzero(np.isin(gt_cell, shaped_cells))
            pred_rows = np.flatnonzero(np.isin(pred_cell, shaped_cells))
            self._gt_region[gt_rows] = np.arange(gt_rows.size)
            self._pred_region[pred_rows] = np.arange(pred_rows.size)
            self._gt_regions = Regions.of(
                gt_boxes[gt_rows],
                [(int(self._gt_region[row]), shape) for row, shape in gt_shapes],
                "gt",
            )
            self._pred_regions = Regions.of(
                self.pred_boxes(pred_rows),
                [(int(self._pred_region[row]), shape) for row, shape in pred_shapes],
                "pred",
            )

    def pred_boxes(self, index: RowArray | slice) -> FloatArray:
        """The boxes of predictions ``index`` (in the space's order)."""
        rows = index if self._pred_rows is None else self._pred_rows[index]
        if isinstance(rows, slice):
            boxes: FloatArray = self._pred_column[rows]
            return boxes
        # np.take: rows of an (N, 4) array, several times faster than indexing with an array.
        taken: FloatArray = np.take(self._pred_column, rows, axis=0)
        return taken

    @property
    def has_shapes(self) -> bool:
        """Some pair is scored by exact region overlap."""
        return self._gt_regions is not None

    def region_areas(self) -> tuple[FloatArray, FloatArray]:
        """Continuous areas of every ground truth and prediction: a box's ``w x h``, a rotated
        box's or polygon's own region's (COCO's area ranges use them); computed once."""
        if self._region_areas is not None:
            return self._region_areas
        if self._kernels is not None:
            # The same bits, each box read where it lies (no gathered copy of the boxes).
            gt_area = match_kernels.box_areas(self._kernels, self.gt_boxes, None, False)
            rows = None if self._pred_rows is None else self._pred_rows[: self.n_pred]
            column = self._pred_column if rows is not None else self._pred_column[: self.n_pred]
            pred_area = match_kernels.box_areas(self._kernels, column, rows, False)
        else:
            gt_area = box_area(self.gt_boxes)
            pred_area = np.empty(self.n_pred)
            for start in range(0, self.n_pred, TILE_PAIRS):
                stop = min(self.n_pred, start + TILE_PAIRS)
                pred_area[start:stop] = box_area(self.pred_boxes(slice(start, stop)))
        if self._gt_regions is not None and self._pred_regions is not None:
            gt_area[self.gt_shaped] = self._gt_regions.areas[self._gt_region[self.gt_shaped]]
            pred_area[self.pred_shaped] = self._pred_regions.areas[
                self._pred_region[self.pred_shaped]
            ]
        self._region_areas = (gt_area, pred_area)
        return gt_area, pred_area

    def iou(self, gt: IntArray, pred: IntArray) -> FloatArray:
        """IoU of each pair ``(gt[i], pred[i])`` (of the same cell)."""
        if gt.size <= _IOU_PAIRS:
            return self._iou(gt, pred)
        # In parts: the gathered boxes and the arithmetic's temporaries take about 150
        # bytes a pair, which a tile of millions of pairs would hold all at once.
        out = np.empty(gt.size)
        for start in range(0, gt.size, _IOU_PAIRS):
            stop = start + _IOU_PAIRS
            out[start:stop] = self._iou(gt[start:stop], pred[start:stop])
        return out

    def region_rows(self, gt: bool) -> BoolArray:
        """``(G,)`` or ``(P,)``: the ground truth (or predictions) of cells scored as regions,
        whose pairs may have been left out by their IoU bound."""
        index = self._gt_region if gt else self._pred_region
        if index.size == 0:
            return np.zeros(self.n_gt if gt else self.n_pred, dtype=bool)
        return np.asarray(index >= 0)

    def cell_pairs(self, rows: IntArray, gt: bool) -> Iterator[tuple[IntArray, IntArray, IntArray]]:
        """Every pair of each of ``rows`` (ground truth, or predictions) with the other side
        of its cell, in pieces of about :data:`TILE_PAIRS` pairs (more for a row with more).

        Yields:
            ``(gt, pred, which)``: the pairs, and the place in ``rows`` of the row of each.
        """
        cells = self._cells
        own, other = (0, 2) if gt else (2, 0)
        if rows.size == 0 or cells.shape[0] == 0:
            return
        k = np.maximum(np.searchsorted(cells[:, own], rows, side="right") - 1, 0)
        inside = (rows >= cells[k, own]) & (rows < cells[k, own + 1])
        first = cells[k, other]
        counts = np.where(inside, cells[k, other + 1] - first, 0)
        piece = (np.cumsum(counts) - 1) // TILE_PAIRS
        starts = [0, *(np.flatnonzero(np.diff(piece)) + 1).tolist()]
        for a, b in zip(starts, [*starts[1:], rows.size], strict=True):
            n = counts[a:b]
            which = np.repeat(np.arange(a, b, dtype=np.int64), n)
            before = np.cumsum(n) - n
            others = np.arange(which.size, dtype=np.int64) + np.repeat(first[a:b] - before, n)
            own_rows = rows[which].astype(np.int64)
            yield (own_rows, others, which) if gt else (others, own_rows, which)

    def left_out_iou(self, gt: IntArray, pred: IntArray, floor: FloatArray) -> FloatArray:
        """IoU of each pair ``(gt[i], pred[i])`` that :meth:`iou` left out (a pair of regions
        whose bound is below :attr:`iou_floor`) and whose bound reaches ``floor[i]``; 0.0 for
        every other pair, which :meth:`iou` scores itself or which holds less than
        ``floor[i]``.

        Args:
            gt: ``(K,)`` ground truth of each pair (of the same cell as its prediction).
            pred: ``(K,)`` prediction of each pair.
            floor: ``(K,)`` the least IoU of interest of each pair.
        """
        out = np.zeros(gt.size)
        if self._gt_regions is None or self._pred_regions is None or self.iou_floor <= 0:
            return out
        regions_gt, regions_pred = self._gt_regions, self._pred_regions
        for start in range(0, gt.size, _IOU_PAIRS):
            part = slice(start, start + _IOU_PAIRS)
            shaped = start + np.flatnonzero(self.gt_shaped[gt[part]] | self.pred_shaped[pred[part]])
            g, p = self._gt_region[gt[shaped]], self._pred_region[pred[shaped]]
            crowd = self.gt_crowd[gt[shaped]]
            meet = pairs_meeting(regions_gt, g, regions_pred, p)
            bound = pair_iou_bound(regions_gt, g, regions_pred, p, crowd)
            clip = np.flatnonzero(
                meet
                & (bound >= floor[shaped] * (1.0 - BOUND_MARGIN))
                & (bound < self.iou_floor * (1.0 - BOUND_MARGIN))
            )
            self.exact_overlaps += int(clip.size)
            g, p, crowd = g[clip], p[clip], crowd[clip]
            inter = pair_region_intersection(regions_gt, g, regions_pred, p)
            out[shaped[clip]] = iou_from_intersection(
                inter, regions_gt.areas[g], regions_pred.areas[p], crowd
            )
        return out

    def _iou(self, gt: IntArray, pred: IntArray) -> FloatArray:
        if self._kernels is not None:
            # The same float operations pair by pair, the boxes read where they lie.
            out = match_kernels.pair_iou(
                self._kernels,
                (self.gt_boxes, self.gt_area, self.gt_crowd),
                self._pred_column,
                self._pred_rows,
                (gt, pred),
                self.pixel_inclusive,
            )
        else:
            pred_boxes = self.pred_boxes(pred)
            out = iou_from_intersection(
                pair_intersection(
                    np.take(self.gt_boxes, gt, axis=0), pred_boxes, self.pixel_inclusive
                ),
                self.gt_area[gt],
                box_area(pred_boxes, self.pixel_inclusive),
                self.gt_crowd[gt],
            )
        if self.float32:
            plain = np.flatnonzero(~self.gt_crowd[gt])
            out[plain] = pair_iou_float32(
                np.take(self.gt_boxes, gt[plain], axis=0), self.pred_boxes(pred[plain])
            )
        if self._gt_regions is not None and self._pred_regions is not None:
            shaped = np.flatnonzero(self.gt_shaped[gt] | self.pred_shaped[pred])
            if shaped.size:
                g, p = self._gt_region[gt[shaped]], self._pred_region[pred[shaped]]
                crowd = self.gt_crowd[gt[shaped]]
                inter = self._region_intersection(self._gt_regions, g, self._pred_regions, p, crowd)
                out[shaped] = iou_from_intersection(
                    inter, self._gt_regions.areas[g], self._pred_regions.areas[p], crowd
                )
        return out

    def _region_intersection(
        self, gt: Regions, g: IntArray, pred: Regions, p: IntArray, crowd: BoolArray
    ) -> FloatArray:
        """Exact intersections of regions ``gt[g[i]]`` and ``pred[p[i]]``; 0.0 for a pair
        that does not meet and for one whose IoU bound is below the floor (it can change no
        output)."""
        clip = np.flatnonzero(pairs_meeting(gt, g, pred, p))
        if self.iou_floor > 0 and clip.size:
            bound = pair_iou_bound(gt, g[clip], pred, p[clip], crowd[clip])
            clip = clip[bound >= self.iou_floor * (1.0 - BOUND_MARGIN)]
        self.exact_overlaps += int(clip.size)
        inter = np.zeros(g.size)
        inter[clip] = pair_region_intersection(gt, g[clip], pred, p[clip])
        return inter

    def tiles(self) -> Iterator[Tile | tuple[int, int, int, int]]:
        """Every pair, piece by piece, predictions in order: a :class:`Tile` of small cells,
        or ``(gt_start, gt_stop, pred_start, pred_stop)`` of a large cell, to be read with
        :meth:`blocks`."""
        large = np.flatnonzero(self._cell_pairs > TILE_PAIRS).tolist()
        previous = -1
        for stop in [*large, len(self._cell_pairs)]:
            # The small cells between two large ones, cut where their running count of
            # pairs passes a multiple of TILE_PAIRS: each tile holds under 2 x TILE_PAIRS.
            if stop - previous > 1:
                first = previous + 1
                piece = (np.cumsum(self._cell_pairs[first:stop]) - 1) // TILE_PAIRS
                starts = [0, *(np.flatnonzero(np.diff(piece)) + 1).tolist()]
                for a, b in zip(starts, [*starts[1:], stop - first], strict=True):
                    yield self.tile(
                        int(self._cells[first + a, 2]), int(self._cells[first + b - 1, 3])
                    )
            if stop < len(self._cell_pairs):
                g0, g1, p0, p1 = self._cells[stop].tolist()
                yield (g0, g1, p0, p1)
            previous = stop

    def tile(self, start: int, stop: int) -> Tile:
        """Every pair of the predictions ``start`` to ``stop`` (whole small cells)."""
        # The cells with pairs among these predictions (whole cells), and the predictions
        # between them, which have no ground truth: each prediction's cell's ground truth,
        # from first to first + count.
        a, b = np.searchsorted(self._cells[:, 2], [start, stop]).tolist()
        if a == b:
            empty = np.zeros(0, dtype=np.int64)
            return Tile(start, stop, empty, empty, np.zeros(0))
        if self._kernels is not None:
            gt, pred = match_kernels.cell_pairs(self._kernels, self._cells[a:b])
            return Tile(start, stop, gt, pred, self.iou(gt, pred))
        g0, g1, p0, p1 = self._cells[a:b].T
        runs = np.empty(2 * (b - a) + 1, dtype=np.int64)
        runs[0:-1:2] = p0 - np.append(start, p1[:-1])  # predictions before each cell
        runs[1::2] = p1 - p0
        runs[-1] = stop - p1[-1]
        per_run = np.zeros((2, runs.size), dtype=np.int64)
        per_run[0, 1::2] = g0
        per_run[1, 1::2] = g1 - g0
        first, counts = np.repeat(per_run, runs, axis=1)
        pred = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        # Each prediction's pairs run over its cell's ground truth in order.
        offsets = np.repeat(first - (np.cumsum(counts) - counts), counts)
        gt = offsets + np.arange(pred.size, dtype=np.int64)
        return Tile(start, stop, gt, pred, self.iou(gt, pred))

    def blocks(self, cell: tuple[int, int, int, int], sparse: bool) -> Iterator[Block | Tile]:
        """A large cell in pieces of its predictions, in order: a :class:`Block` (every pair,
        as a matrix) or, where few of the pairs meet, a :class:`Tile` of those that do.

        Args:
            cell: ``(gt_start, gt_stop, pred_start, pred_stop)`` from :meth:`tiles`.
            sparse: Pairs whose boxes do not meet can never match (every threshold is
                above 0, or the comparison is strict): their IoU is 0.0 without scoring
                them, and an STR tree finds the pairs that meet, while those are few.
        """
        g0, g1, p0, p1 = cell
        n = g1 - g0
        width = max(1, TILE_PAIRS // n)
        tree: BoxTree | None = None
        dense = not sparse
        rows = np.arange(g0, g1, dtype=np.int64)
        for start in range(p0, p1, width):
            stop = min(p1, start + width)
            if not dense:
                if tree is None:
                    tree = BoxTree(self._outline(g0, g1, gt=True), self._margin)
                gt, pred = tree.query(self._outline(start, stop, gt=False))
                # Once most pairs meet, they are all scored, as a matrix.
                dense = gt.size > n * (stop - start) // 4
                if not dense:
                    gt += g0
                    pred += start
                    yield Tile(start, stop, gt, pred, self.iou(gt, pred))
                    continue
            yield Block(g0, start, self.rows(rows, start, stop))

    @property
    def _margin(self) -> float:
        # Under the devkit's +1 widths, boxes less than a pixel apart overlap.
        return 1.0 if self.pixel_inclusive else 0.0

    def _outline(self, start: int, stop: int, gt: bool) -> FloatArray:
        """Boxes ``start`` to ``stop``, a shape by its bounds (it lies inside them)."""
        boxes = self.gt_boxes[start:stop] if gt else self.pred_boxes(slice(start, stop))
        regions = self._gt_regions if gt else self._pred_regions
        if regions is None:
            return boxes
        index = (self._gt_region if gt else self._pred_region)[start:stop]
        return _bounds_or_boxes(boxes, regions, index)

    def rows(self, gt: IntArray, pred_start: int, pred_stop: int) -> FloatArray:
        """``(len(gt), pred_stop - pred_start)`` IoU of some ground truth of a cell against
        a run of that cell's predictions: :func:`vocmatch.core.iou.crowd_iou_matrix`, the same
        arithmetic as :meth:`iou`, with exact region overlap where a shape takes part."""
        run = self._run
        if run is None or run[0] != pred_start or run[1] != pred_stop:
            run = self._run = (pred_start, pred_stop, self.pred_boxes(slice(pred_start, pred_stop)))
        out = crowd_iou_matrix(
            self.gt_boxes[gt],
            run[2],
            self.gt_crowd[gt],
            self.pixel_inclusive,
        )
        if self.float32:
            plain = np.flatnonzero(~self.gt_crowd[gt])
            out[plain] = iou_matrix_float32(self.gt_boxes[gt[plain]], run[2])
        if self._gt_regions is not None and self._pred_regions is not None:
            shaped = self.gt_shaped[gt][:, None] | self.pred_shaped[None, pred_start:pred_stop]
            r, c = np.nonzero(shaped)
            if r.size:
                out[r, c] = self.iou(gt[r], c + pred_start)
        return out


def _bounds_or_boxes(boxes: FloatArray, regions: Regions, index: IntArray) -> FloatArray:
    out: FloatArray = boxes.copy()
    has = index >= 0
    out[has] = regions.bounds[index[has]]
    return out

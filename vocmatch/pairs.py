"""The pairs of boxes that can match, and their IoU, generated in bounded pieces.

A prediction can only match ground truth of its own image and class (a *cell*). The
evaluator (:mod:`vocmatch.batch`) sorts both sides by cell and scores every pair of the
same cell with the one IoU arithmetic of :mod:`vocmatch.iou` (and, where a rotated box or a
polygon takes part, the exact region overlap of :mod:`vocmatch.geometry`).

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

from vocmatch.geometry import BoxTree, Regions, pair_region_intersection
from vocmatch.iou import box_area, crowd_iou_matrix, iou_from_intersection, pair_intersection
from vocmatch.model import Polygon, RotatedBox

__all__ = ["TILE_PAIRS", "Block", "PairSpace", "Tile"]

#: Pairs scored at once: a tile of small cells holds at most about twice this many, a block
#: of a large cell about this many. Each pair costs some 100 bytes while it is scored.
TILE_PAIRS = 1 << 21

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
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


@dataclass(frozen=True, slots=True)
class _Cell:
    gt_start: int
    gt_stop: int
    pred_start: int
    pred_stop: int


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
    ) -> None:
        self.gt_boxes = gt_boxes
        self.pred_boxes = pred_boxes
        self.gt_crowd = gt_crowd
        self.pixel_inclusive = pixel_inclusive
        self.n_gt = int(gt_boxes.shape[0])
        self.n_pred = int(pred_boxes.shape[0])
        self.gt_area = box_area(gt_boxes, pixel_inclusive)
        self.pred_area = box_area(pred_boxes, pixel_inclusive)
        # Each prediction's cell's ground truth: gt_first[p] .. gt_first[p] + gt_count[p].
        cells = np.unique(np.concatenate([gt_cell, pred_cell]))
        gt_starts = np.searchsorted(gt_cell, cells)
        gt_stops = np.searchsorted(gt_cell, cells, side="right")
        pred_starts = np.searchsorted(pred_cell, cells)
        pred_stops = np.searchsorted(pred_cell, cells, side="right")
        of_pred = np.searchsorted(cells, pred_cell)
        self.gt_first: IntArray = gt_starts[of_pred].astype(np.int64)
        self.gt_count: IntArray = (gt_stops - gt_starts)[of_pred].astype(np.int64)
        # Cells with pairs, in order; large ones are scored in blocks.
        n_pairs = (gt_stops - gt_starts) * (pred_stops - pred_starts)
        live = np.flatnonzero(n_pairs > 0)
        self._cells = [
            _Cell(int(a), int(b), int(c), int(d))
            for a, b, c, d in zip(
                gt_starts[live].tolist(),
                gt_stops[live].tolist(),
                pred_starts[live].tolist(),
                pred_stops[live].tolist(),
                strict=True,
            )
        ]
        self._large = (n_pairs[live] > TILE_PAIRS).tolist()
        # Regions: every row of a cell that holds a rotated box or a polygon (a plain box
        # meeting a shape is clipped as a rectangle); none without shapes.
        self.gt_shaped = np.zeros(self.n_gt, dtype=bool)
        self.pred_shaped = np.zeros(self.n_pred, dtype=bool)
        self._gt_regions: Regions | None = None
        self._pred_regions: Regions | None = None
        self._gt_region = np.full(self.n_gt, -1, dtype=np.int64)
        self._pred_region = np.full(self.n_pred, -1, dtype=np.int64)
        if gt_shapes or pred_shapes:
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
                pred_boxes[pred_rows],
                [(int(self._pred_region[row]), shape) for row, shape in pred_shapes],
                "pred",
            )

    @property
    def has_shapes(self) -> bool:
        """Some pair is scored by exact region overlap."""
        return self._gt_regions is not None

    def region_areas(self) -> tuple[FloatArray, FloatArray]:
        """Continuous areas of every ground truth and prediction: a box's ``w x h``, a rotated
        box's or polygon's own region's (COCO's area ranges use them)."""
        gt_area = box_area(self.gt_boxes)
        pred_area = box_area(self.pred_boxes)
        if self._gt_regions is not None and self._pred_regions is not None:
            gt_area[self.gt_shaped] = self._gt_regions.areas[self._gt_region[self.gt_shaped]]
            pred_area[self.pred_shaped] = self._pred_regions.areas[
                self._pred_region[self.pred_shaped]
            ]
        return gt_area, pred_area

    def iou(self, gt: IntArray, pred: IntArray) -> FloatArray:
        """IoU of each pair ``(gt[i], pred[i])`` (of the same cell)."""
        out = iou_from_intersection(
            pair_intersection(self.gt_boxes[gt], self.pred_boxes[pred], self.pixel_inclusive),
            self.gt_area[gt],
            self.pred_area[pred],
            self.gt_crowd[gt],
        )
        if self._gt_regions is not None and self._pred_regions is not None:
            shaped = np.flatnonzero(self.gt_shaped[gt] | self.pred_shaped[pred])
            if shaped.size:
                g, p = self._gt_region[gt[shaped]], self._pred_region[pred[shaped]]
                inter = pair_region_intersection(self._gt_regions, g, self._pred_regions, p)
                out[shaped] = iou_from_intersection(
                    inter,
                    self._gt_regions.areas[g],
                    self._pred_regions.areas[p],
                    self.gt_crowd[gt[shaped]],
                )
        return out

    def tiles(self) -> Iterator[Tile | tuple[int, int, int, int]]:
        """Every pair, piece by piece, predictions in order: a :class:`Tile` of small cells,
        or ``(gt_start, gt_stop, pred_start, pred_stop)`` of a large cell, to be read with
        :meth:`blocks`."""
        run: list[_Cell] = []
        run_pairs = 0
        for cell, large in zip(self._cells, self._large, strict=True):
            if large:
                if run:
                    yield self.tile(run[0].pred_start, run[-1].pred_stop)
                    run, run_pairs = [], 0
                yield (cell.gt_start, cell.gt_stop, cell.pred_start, cell.pred_stop)
                continue
            run.append(cell)
            run_pairs += (cell.gt_stop - cell.gt_start) * (cell.pred_stop - cell.pred_start)
            if run_pairs >= TILE_PAIRS:
                yield self.tile(run[0].pred_start, run[-1].pred_stop)
                run, run_pairs = [], 0
        if run:
            yield self.tile(run[0].pred_start, run[-1].pred_stop)

    def tile(self, start: int, stop: int) -> Tile:
        """Every pair of the predictions ``start`` to ``stop`` (whole small cells)."""
        counts = self.gt_count[start:stop]
        pred = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        # Each prediction's pairs run over its cell's ground truth in order.
        offsets = np.repeat(self.gt_first[start:stop] - (np.cumsum(counts) - counts), counts)
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
        boxes = (self.gt_boxes if gt else self.pred_boxes)[start:stop]
        regions = self._gt_regions if gt else self._pred_regions
        if regions is None:
            return boxes
        index = (self._gt_region if gt else self._pred_region)[start:stop]
        return _bounds_or_boxes(boxes, regions, index)

    def rows(self, gt: IntArray, pred_start: int, pred_stop: int) -> FloatArray:
        """``(len(gt), pred_stop - pred_start)`` IoU of some ground truth of a cell against
        a run of that cell's predictions: :func:`vocmatch.iou.crowd_iou_matrix`, the same
        arithmetic as :meth:`iou`, with exact region overlap where a shape takes part."""
        out = crowd_iou_matrix(
            self.gt_boxes[gt],
            self.pred_boxes[pred_start:pred_stop],
            self.gt_crowd[gt],
            self.pixel_inclusive,
        )
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

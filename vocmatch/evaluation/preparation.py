"""A :class:`~vocmatch.core.preparation.Preparation` applied to prediction columns, image by
image, and the count of what each step removed.

Each image's predictions are prepared on their own (the score pre-filter, NMS, the cap
per image; :mod:`vocmatch.core.preparation`), so an evaluation in shards, in parts or on
Dask removes exactly the predictions one run removes, and the counts of its shards add up
to the run's. The predictions kept stay in file order, so ties later in the ranking break
as they would have in the file.

NMS suppresses axis-aligned boxes: a rotated box or a polygon among the predictions is
refused (its bounding box would suppress what its region does not overlap), naming its file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.preparation import PREPARATION_STEPS, Preparation
from vocmatch.errors import InputError
from vocmatch.readers.scan import ColumnSet

__all__ = ["Removed", "prepare_columns", "rows_of"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Removed:
    """The predictions a preparation removed, per class and step.

    Attributes:
        preparation: The preparation applied.
        class_names: The classes, sorted.
        counts: Each class's predictions removed by the score pre-filter, by NMS and by the
            cap per image (:data:`~vocmatch.core.preparation.PREPARATION_STEPS`): plain
            integers, so that reports holding them compare equal by value.
    """

    preparation: Preparation
    class_names: tuple[str, ...]
    counts: tuple[tuple[int, int, int], ...]

    @staticmethod
    def nothing(preparation: Preparation) -> Removed:
        """The counts of a preparation that met no prediction."""
        return Removed(preparation, (), ())

    @staticmethod
    def join(parts: Sequence[Removed]) -> Removed:
        """The counts of every part added up, class by class (by name); the parts are of
        one preparation (the first part's is kept)."""
        names = tuple(sorted({name for p in parts for name in p.class_names}))
        index = {name: k for k, name in enumerate(names)}
        counts = [[0, 0, 0] for _ in names]
        for part in parts:
            for name, row in zip(part.class_names, part.counts, strict=True):
                total = counts[index[name]]
                for step, n in enumerate(row):
                    total[step] += n
        return Removed(parts[0].preparation, names, _rows(counts))

    def by_step(self) -> dict[str, int]:
        """Each step's count in all."""
        totals = [sum(row[step] for row in self.counts) for step in range(3)]
        return {step: int(n) for step, n in zip(PREPARATION_STEPS, totals, strict=True)}

    def per_class(self) -> dict[str, dict[str, int]]:
        """Each class's counts by step, classes with something removed only."""
        return {
            name: {step: int(n) for step, n in zip(PREPARATION_STEPS, row, strict=True)}
            for name, row in zip(self.class_names, self.counts, strict=True)
            if any(row)
        }


def prepare_columns(pred: ColumnSet, preparation: Preparation) -> tuple[ColumnSet, Removed]:
    """The prediction columns with what ``preparation`` removes taken out, and its counts.

    Raises:
        InputError: A prediction without a score (the steps rank by score), or, for NMS, a
            rotated box or a polygon; the message names its file.
    """
    n_names = len(pred.label_names)
    counts = np.zeros((n_names, len(PREPARATION_STEPS)), dtype=np.int64)
    if not preparation.active or not pred.scores.size:
        return pred, Removed(preparation, pred.label_names, _rows(counts.tolist()))
    unscored = np.flatnonzero(np.isnan(pred.scores))
    if unscored.size:
        raise InputError(
            f"{pred.paths[int(pred.image[unscored[0]])]}: a prediction without a score: "
            "preparing predictions ranks them by score"
        )
    keep = np.ones(pred.scores.size, dtype=bool)
    if preparation.min_score is not None:
        keep = _step(keep, pred.scores > preparation.min_score, pred.labels, counts, 0)
    if preparation.nms is not None:
        keep = _step(keep, _nms_kept(pred, keep, preparation), pred.labels, counts, 1)
    if preparation.max_per_image is not None:
        capped = _capped(pred, keep, preparation.max_per_image)
        keep = _step(keep, capped, pred.labels, counts, 2)
    removed = Removed(preparation, pred.label_names, _rows(counts.tolist()))
    if keep.all():
        return pred, removed
    return rows_of(pred, np.flatnonzero(keep)), removed


def _rows(counts: list[list[int]]) -> tuple[tuple[int, int, int], ...]:
    """Counts as :attr:`Removed.counts` holds them."""
    return tuple((int(a), int(b), int(c)) for a, b, c in counts)


def _step(keep: BoolArray, kept: BoolArray, labels: Any, counts: IntArray, step: int) -> BoolArray:
    """``keep`` and ``kept``; the predictions this step removed counted by class."""
    gone = keep & ~kept
    counts[:, step] = np.bincount(labels[gone], minlength=counts.shape[0])
    return keep & kept


def _nms_kept(pred: ColumnSet, keep: BoolArray, preparation: Preparation) -> BoolArray:
    """The predictions NMS keeps among ``keep``, in every image-class cell (every image,
    across classes) at once: what :func:`vocmatch.core.nms.nms` keeps of each image.

    Greedy suppression is sequential only within a cell, so it runs rank by rank: step ``r``
    lets the ``r``-th highest-scored box of every cell, when no box above it removed it,
    remove the boxes below it whose IoU with it is above the threshold. The IoU is computed
    as :func:`~vocmatch.core.nms.nms` computes it, operation for operation (the same bits).
    """
    shaped = [row for row, _ in pred.shapes if keep[row]]
    if shaped:
        raise InputError(
            f"{pred.paths[int(pred.image[shaped[0]])]}: NMS suppresses axis-aligned boxes, "
            "and this file holds a rotated box or a polygon"
        )
    threshold = float(preparation.nms) if preparation.nms is not None else 1.0
    rows = np.flatnonzero(keep)
    cell = pred.image[rows].astype(np.int64)
    if not preparation.nms_agnostic:
        cell = cell * max(len(pred.label_names), 1) + pred.labels[rows]
    # By cell, then descending score, equal scores in file order (nms's stable sort).
    order = np.lexsort((rows, -pred.scores[rows], cell))
    rows, cell = rows[order], cell[order]
    n = rows.size
    starts = np.flatnonzero(np.append(True, cell[1:] != cell[:-1])) if n else rows
    lengths = np.diff(np.append(starts, n))
    rank = np.arange(n) - np.repeat(starts, lengths)
    size = np.repeat(lengths, lengths)
    x1, y1, x2, y2 = (pred.boxes[rows, k] for k in range(4))
    area = (x2 - x1) * (y2 - y1)
    alive = np.ones(n, dtype=bool)
    # The places of the cells with a box below rank r, from rank r down.
    active = np.flatnonzero(size > 1)
    r = 0
    while active.size:
        below = active[rank[active] > r]
        head = below - (rank[below] - r)  # the r-th box of each one's cell
        use = alive[head]
        below, head = below[use], head[use]
        w = np.maximum(np.minimum(x2[head], x2[below]) - np.maximum(x1[head], x1[below]), 0)
        h = np.maximum(np.minimum(y2[head], y2[below]) - np.maximum(y1[head], y1[below]), 0)
        inter = w * h
        with np.errstate(invalid="ignore", divide="ignore"):
            overlap = inter / (area[head] + area[below] - inter)
        alive[below[overlap > threshold]] = False
        r += 1
        active = active[(size[active] > r + 1) & (rank[active] >= r)]
    kept = np.zeros(keep.size, dtype=bool)
    kept[rows[alive]] = True
    return kept


def _capped(pred: ColumnSet, keep: BoolArray, cap: int) -> BoolArray:
    """The ``cap`` highest-scored predictions of each image among ``keep`` (equal scores in
    file order)."""
    rows = np.flatnonzero(keep)
    order = rows[np.lexsort((rows, -pred.scores[rows], pred.image[rows]))]
    image = pred.image[order]
    starts = np.flatnonzero(np.append(True, image[1:] != image[:-1])) if order.size else order
    lengths = np.diff(np.append(starts, order.size))
    rank = np.arange(order.size) - np.repeat(starts, lengths)
    kept = np.zeros(keep.size, dtype=bool)
    kept[order[rank < cap]] = True
    return kept


def rows_of(columns: ColumnSet, rows: IntArray) -> ColumnSet:
    """The columns with only ``rows`` of their objects (every image kept), as the readers
    would give them had the files held only those: class names those used; rotated boxes
    and polygons at their new rows."""
    used = np.unique(columns.labels[rows]) if rows.size else np.zeros(0, dtype=np.int32)
    remap = np.full(len(columns.label_names), -1, dtype=np.int32)
    remap[used] = np.arange(used.size, dtype=np.int32)
    row_of = np.full(columns.labels.size, -1, dtype=np.int64)
    row_of[rows] = np.arange(rows.size)
    return replace(
        columns,
        image=columns.image[rows],
        labels=remap[columns.labels[rows]],
        label_names=tuple(columns.label_names[k] for k in used.tolist()),
        boxes=columns.boxes[rows],
        difficult=columns.difficult[rows],
        truncated=columns.truncated[rows],
        occluded=columns.occluded[rows],
        pose=columns.pose[rows],
        scores=columns.scores[rows],
        shapes=tuple((int(row_of[r]), s) for r, s in columns.shapes if row_of[r] >= 0),
        bndboxes=tuple((int(row_of[r]), b) for r, b in columns.bndboxes if row_of[r] >= 0),
    )

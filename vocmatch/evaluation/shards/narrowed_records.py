"""A part's match records as a local worker process sends them back (pickled by the process
pool: :class:`~vocmatch.evaluation.shards.parts.PartRecords`): their widest integer arrays,
the ground truth's cells and the images' counts (int64, about a third of the bytes of the
Objects365-shaped set's records), narrowed to int32 when every value fits, and widened back
when unpickled. The records the main process joins are those the worker made, to the bit;
only the bytes through the pipe are fewer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.evaluation.records import GtCells, ImageCounts, MatchRecords

__all__ = ["narrowed", "widened"]

_INT32 = np.iinfo(np.int32)

IntArray = npt.NDArray[np.integer[Any]]


def _narrow(values: IntArray) -> IntArray:
    """``values`` as int32 when they are int64 and every one fits; else as they are."""
    if values.dtype != np.int64 or not values.size:
        return values
    if int(values.min()) < _INT32.min or int(values.max()) > _INT32.max:
        return values
    return values.astype(np.int32)


def _widen(values: IntArray) -> IntArray:
    """int32 ``values`` (narrowed) as int64."""
    return values.astype(np.int64) if values.dtype == np.int32 else values


def _mapped(records: MatchRecords, change: Callable[[IntArray], Any]) -> MatchRecords:
    """The records with ``change`` applied to the cells' arrays and the counts' values
    (typed int64: narrowed, they are int32 only on their way through the pipe)."""
    cells = records.gt_cells
    if cells is not None:
        cells = GtCells(change(cells.image), change(cells.label), change(cells.counting),
                        change(cells.counting_all))  # fmt: skip
    unscored = records.unscored
    if unscored is not None:
        unscored = ImageCounts(change(unscored.values), unscored.mean_iou, unscored.classes)
    counts = records.counts
    counts = ImageCounts(change(counts.values), counts.mean_iou, counts.classes)
    return replace(records, gt_cells=cells, counts=counts, unscored=unscored)


def narrowed(records: MatchRecords) -> MatchRecords:
    """The records with the cells' arrays and the counts' values, int64 in every record a
    run makes, as int32 where every value fits."""
    return _mapped(records, _narrow)


def widened(records: MatchRecords) -> MatchRecords:
    """The records :func:`narrowed` gave, with those arrays int64 again."""
    return _mapped(records, _widen)

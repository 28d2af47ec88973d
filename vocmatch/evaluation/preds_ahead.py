"""The predictions' records of a run's parts put end to end as the parts come back, so that
the join after the last part (:meth:`~vocmatch.evaluation.records.MatchRecords.taken_in_key_order`)
finds them in place rather than copying every part's into arrays it has just made.

A local run's parts hold consecutive keys and come back in part order
(:mod:`vocmatch.run.in_parts`): their predictions, put end to end in that order, are the
joined records' predictions, each image's together in key order. Each column grows by a
reallocation per part (the memory already written is kept, not copied or touched again:
the system moves its pages), the part's rows are copied in while the workers match the other
parts, and the join takes the columns where the parts it joins are those added, the same
objects in the same order, and their images in key order; else it copies them as before.
The class of each prediction is kept as its part numbers it (its part's class names) and
numbered by the joined names in place at the join.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from vocmatch.evaluation.records import MatchRecords, PredRecords

__all__ = ["PredsAhead"]


def _columns(preds: PredRecords) -> tuple[npt.NDArray[Any], ...]:
    """The per-prediction columns of ``preds``, in field order after ``count``."""
    return (
        preds.label, preds.score, preds.matched, preds.ignored, preds.area, preds.coco_matched,
        preds.coco_ignored,
    )  # fmt: skip


class PredsAhead:
    """The predictions' columns of the parts added so far, end to end (see the module doc).

    Attributes:
        sources: The records' predictions added, in order (the join checks it joins those).
    """

    def __init__(self) -> None:
        self.sources: list[PredRecords] = []
        self._columns: list[npt.NDArray[Any]] | None = None
        self._size = 0
        self._broken = False

    def add(self, records: MatchRecords) -> None:
        """Put ``records``' predictions after those added before; a part whose columns
        are not of the dtypes and widths of the first part's ends the adding (the join then
        copies every part's)."""
        if self._broken:
            return
        preds = records.preds
        new = _columns(preds)
        size = int(preds.label.shape[0])
        if self._columns is None:
            self._columns = [np.array(c, dtype=np.int32 if k == 0 else c.dtype, order="C")
                             for k, c in enumerate(new)]  # fmt: skip
        else:
            if any(
                (k and c.dtype != out.dtype) or c.shape[1:] != out.shape[1:]
                for k, (c, out) in enumerate(zip(new, self._columns, strict=True))
            ):
                self._broken = True
                self._columns = None
                self.sources.clear()
                return
            end = self._size + size
            for c, out in zip(new, self._columns, strict=True):
                # In place: the array holds its memory alone (no view of it is given out
                # before the join), which the system grows without copying what it holds.
                out.resize((end, *out.shape[1:]), refcheck=False)
                out[self._size :] = c
        self._size += size
        self.sources.append(preds)

    def columns_of(self, parts: Sequence[MatchRecords]) -> list[npt.NDArray[Any]] | None:
        """The joined columns (``label`` numbered by each part's classes) where ``parts``'
        predictions are exactly those added, in order; None otherwise. Either way this
        holds them no more."""
        columns, sources = self._columns, self.sources
        self._columns, self.sources, self._broken = None, [], True
        if columns is None or len(sources) != len(parts):
            return None
        if not all(s is p.preds for s, p in zip(sources, parts, strict=True)):
            return None
        return columns

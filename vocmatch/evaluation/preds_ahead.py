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

Each part's rankings of its classes (:class:`~vocmatch.evaluation.records.Ranked`) are
taken too: each prediction's place in its image-class put end to end like a column, and
each class's ranking moved to its rows in the joined records, with the keys it is ranked
by. At the join each class's runs, one a part, are put together in part order and sorted
by key (stable): the merge of the parts' rankings the join would make, as the parts follow
one another in row order (their ties already in row order). The parts' ground-truth cells
are put end to end as well (images numbered on, classes numbered by the joined names at the
join), as the join joins them in part order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from vocmatch.evaluation.records import GtCells, MatchRecords, PredRecords, Ranked

__all__ = ["Placed", "PredsAhead"]

#: Per class of a part (numbered by the part), its ranking's rows in the joined records and
#: their ranking keys (the negated scores as rankings read them), in the part's ranking.
PartRuns = list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]


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
        self._rank: npt.NDArray[np.int64] | None = None
        self._runs: list[PartRuns] | None = []
        self._cells: list[npt.NDArray[np.int64]] | None = None
        self._cell_counts: list[int] | None = []
        self._images = 0
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
                self._columns, self._runs, self._rank = None, None, None
                self._cells, self._cell_counts = None, None
                self.sources.clear()
                return
            for c, out in zip(new, self._columns, strict=True):
                _grown(out, c, self._size)
        self._add_ranked(records)
        self._add_cells(records)
        self._size += size
        self._images += len(records.keys)
        self.sources.append(preds)

    def _add_cells(self, records: MatchRecords) -> None:
        """Take the part's ground-truth cells, its images numbered on from those added
        before (none are taken once a part holds none)."""
        cells = records.gt_cells
        if cells is None or self._cell_counts is None:
            self._cells, self._cell_counts = None, None
            return
        new = (cells.image + self._images, cells.label, cells.counting, cells.counting_all)
        if self._cells is None:
            self._cells = [np.array(c, dtype=np.int64) for c in new]
        else:
            start = int(self._cells[0].shape[0])
            for c, out in zip(new, self._cells, strict=True):
                _grown(out, c, start)
        self._cell_counts.append(int(cells.image.shape[0]))

    def _add_ranked(self, records: MatchRecords) -> None:
        """Take the part's rankings, its rows following those added before (none are
        taken once a part holds none)."""
        from vocmatch.evaluation.class_curves import ranked_scores

        ranked = records.ranked
        if ranked is None or self._runs is None:
            self._runs, self._rank = None, None
            return
        start = self._size
        score = records.preds.score
        self._runs.append(
            [
                (np.add(members, start, dtype=np.int64), -ranked_scores(score, members))
                for members in ranked.classes
            ]
        )
        if self._rank is None:
            self._rank = np.array(ranked.rank, dtype=np.int64)
        else:
            _grown(self._rank, ranked.rank, start)

    def columns_of(self, parts: Sequence[MatchRecords]) -> Placed | None:
        """The joined columns (``label`` numbered by each part's classes) and the parts'
        rankings where ``parts``' predictions are exactly those added, in order; None
        otherwise. Either way this holds them no more."""
        columns, sources, runs, rank = self._columns, self.sources, self._runs, self._rank
        cells, cell_counts = self._cells, self._cell_counts
        self._columns, self.sources, self._broken = None, [], True
        self._runs, self._rank, self._cells, self._cell_counts = None, None, None, None
        if columns is None or len(sources) != len(parts):
            return None
        if not all(s is p.preds for s, p in zip(sources, parts, strict=True)):
            return None
        ranked = None if runs is None or rank is None else (runs, rank)
        held = None if cells is None or cell_counts is None else (cells, cell_counts)
        return Placed(columns, ranked, held)


@dataclass(frozen=True, slots=True)
class Placed:
    """The parts' predictions as :meth:`PredsAhead.columns_of` gives them.

    Attributes:
        columns: The joined columns after ``count`` (``label`` numbered by each part).
        ranked: Each part's classes' runs, and every prediction's place in its
            image-class; None unless every part held its rankings.
        cells: The parts' ground-truth cells end to end (image, class as each part numbers
            it, counting, counting in area "all"), with each part's count of cells; None
            unless every part held its cells.
    """

    columns: list[npt.NDArray[Any]]
    ranked: tuple[list[PartRuns], npt.NDArray[np.int64]] | None
    cells: tuple[list[npt.NDArray[np.int64]], list[int]] | None = None

    def joined_cells(self, remaps: Sequence[npt.NDArray[np.int64]]) -> GtCells | None:
        """The parts' ground-truth cells joined in part order, as the join joins them
        (``remaps``: each part's classes' numbers among the joined ones); None without
        every part's. Their class column is numbered in place."""
        from vocmatch.evaluation.records import GtCells

        if self.cells is None:
            return None
        (image, label, counting, counting_all), sizes = self.cells
        start = 0
        for size, remap in zip(sizes, remaps, strict=True):
            label[start : start + size] = remap[label[start : start + size]]
            start += size
        return GtCells(image, label, counting, counting_all)

    def rankings(self, remaps: Sequence[npt.NDArray[Any]], n_k: int) -> Ranked | None:
        """The joined records' rankings (``remaps``: each part's classes' numbers among the
        ``n_k`` joined ones), None without the parts'."""
        from vocmatch.evaluation.records import Ranked

        if self.ranked is None:
            return None
        runs, rank = self.ranked
        per_class: list[PartRuns] = [[] for _ in range(n_k)]
        for part, remap in zip(runs, remaps, strict=True):
            for k, run in enumerate(part):
                per_class[int(remap[k])].append(run)
        classes = []
        for found in per_class:
            if not found:
                classes.append(np.zeros(0, dtype=np.int64))
                continue
            members = np.concatenate([m for m, _ in found])
            keys = np.concatenate([key for _, key in found])
            # Stable: equal keys of several parts stay in part order, which is row order.
            classes.append(members[np.argsort(keys, kind="stable")])
        return Ranked(tuple(classes), rank)


def _grown(out: npt.NDArray[Any], values: npt.NDArray[Any], start: int) -> None:
    """``out`` grown in place to hold ``values`` from row ``start`` on."""
    # In place: the array holds its memory alone (no view of it is given out before the
    # join), which the system grows without copying what it holds.
    out.resize((start + values.shape[0], *out.shape[1:]), refcheck=False)
    out[start:] = values

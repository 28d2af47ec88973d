"""How many boxes of each side have a score: what the warning that the ground truth and the
predictions were given the wrong way round reads of the files, in a module of its own so that
a run in one process counts them without importing the machinery of shards and parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from vocmatch.readers.scan import ColumnSet

__all__ = ["ScoreCounts"]


@dataclass(frozen=True, slots=True)
class ScoreCounts:
    """How many boxes of each side have a score: enough to tell, over every part, whether
    the ground truth and the predictions were given the wrong way round.

    Attributes:
        gt: Ground-truth objects.
        gt_scored: Those with a score.
        pred: Predictions.
        pred_scored: Those with a score.
    """

    gt: int = 0
    gt_scored: int = 0
    pred: int = 0
    pred_scored: int = 0

    @classmethod
    def of(cls, gt: ColumnSet, pred: ColumnSet) -> ScoreCounts:
        """The counts of two column sets."""
        return cls(
            int(gt.scores.size), int(np.count_nonzero(~np.isnan(gt.scores))),
            int(pred.scores.size), int(np.count_nonzero(~np.isnan(pred.scores))),
        )  # fmt: skip

    def __add__(self, other: ScoreCounts) -> ScoreCounts:
        return ScoreCounts(
            self.gt + other.gt, self.gt_scored + other.gt_scored,
            self.pred + other.pred, self.pred_scored + other.pred_scored,
        )  # fmt: skip

    def swapped(self) -> bool:
        """Every ground-truth object has a score and no prediction has one (both sides
        holding boxes): the order of the two inputs, most likely.

        >>> ScoreCounts(gt=3, gt_scored=3, pred=5, pred_scored=0).swapped()
        True
        """
        return bool(self.gt and self.pred) and self.gt_scored == self.gt and not self.pred_scored

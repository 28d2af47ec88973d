"""The outcome of each box at the evaluation threshold (:class:`Match`), the per-box records
of an :class:`~vocmatch.evaluation.result.ImageResult` that the HTML report and the error
analysis read.

A module of its own, imported where per-box records are kept: a run that keeps none does
not build their record.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocmatch.evaluation.result import Outcome

__all__ = ["Match"]


@dataclass(frozen=True, slots=True)
class Match:
    """The outcome of one box at the evaluation threshold.

    Attributes:
        name: Class name.
        outcome: ``"tp"``, ``"fp"`` (predictions), ``"fn"`` (ground truth) or ``"ignored"``
            (a prediction on a ``difficult`` object, or beyond ``max_dets``).
        gt_index: Index of the ground truth in its file's objects, or None.
        pred_index: Index of the prediction in its file's objects, or None.
        iou: For a matched pair, its IoU; for an FP or FN, the highest IoU with any box of
            the same class on the other side (0.0 when there is none).
        score: The prediction's score, if any.
    """

    name: str
    outcome: Outcome
    gt_index: int | None
    pred_index: int | None
    iou: float
    score: float | None = None

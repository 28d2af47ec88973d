"""The ``ultralytics`` summary's numbers (:class:`UltralyticsStats`), as an
:class:`~vocmatch.evaluation.result.Evaluation` holds them.

A module of its own, imported under that summary: a run under another builds no such record
(:mod:`vocmatch.evaluation.summary_stats` gives it too).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UltralyticsStats"]


@dataclass(frozen=True, slots=True)
class UltralyticsStats:
    """The ``ultralytics`` package's four detection numbers.

    Attributes:
        precision: ``P``: the mean over the classes with ground truth of each one's
            precision at the confidence of the highest smoothed mean F1.
        recall: ``R``: likewise, recall.
        map50: ``mAP50``: mean AP at IoU 0.5 over the classes with ground truth.
        map50_95: ``mAP50-95``: mean AP over the ten thresholds and those classes.
        confidence: The confidence P and R are read at.
    """

    precision: float
    recall: float
    map50: float
    map50_95: float
    confidence: float

    def as_dict(self) -> dict[str, float]:
        """The numbers under the package's names (``P``, ``R``, ``mAP50``, ``mAP50-95``)."""
        return {
            "P": self.precision,
            "R": self.recall,
            "mAP50": self.map50,
            "mAP50-95": self.map50_95,
        }

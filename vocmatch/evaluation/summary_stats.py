"""The numbers of the ``coco`` and ``ultralytics`` summaries: pycocotools' 12
(:class:`CocoStats`) and the ``ultralytics`` package's four (:class:`UltralyticsStats`), as an
:class:`~vocmatch.evaluation.result.Evaluation` holds them.

A module of its own, imported under those summaries: a run under another builds neither
record.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CocoStats", "UltralyticsStats"]


@dataclass(frozen=True, slots=True)
class CocoStats:
    """pycocotools' ``COCOeval.stats``, by name; -1 where pycocotools has -1."""

    AP: float
    AP50: float
    AP75: float
    APs: float
    APm: float
    APl: float
    AR1: float
    AR10: float
    AR100: float
    ARs: float
    ARm: float
    ARl: float

    def as_list(self) -> list[float]:
        """The 12 numbers in pycocotools' order."""
        return [
            self.AP, self.AP50, self.AP75, self.APs, self.APm, self.APl,
            self.AR1, self.AR10, self.AR100, self.ARs, self.ARm, self.ARl,
        ]  # fmt: skip


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

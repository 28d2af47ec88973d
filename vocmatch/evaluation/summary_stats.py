"""The numbers of the ``coco`` and ``ultralytics`` summaries: pycocotools' 12
(:class:`CocoStats`) and the ``ultralytics`` package's four (:class:`UltralyticsStats`, from
:mod:`vocmatch.evaluation.ultralytics_stats`), as an
:class:`~vocmatch.evaluation.result.Evaluation` holds them.

Modules of their own, imported under those summaries: a run under another builds neither
record, and a ``coco`` run builds no ``ultralytics`` one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vocmatch.lazy import lazy_attribute

if TYPE_CHECKING:
    from vocmatch.evaluation.ultralytics_stats import UltralyticsStats as UltralyticsStats

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


def __getattr__(name: str) -> Any:
    """:class:`UltralyticsStats`, imported from its module on first use (PEP 562)."""
    return lazy_attribute(
        __name__, {"UltralyticsStats": "vocmatch.evaluation.ultralytics_stats"}, name
    )

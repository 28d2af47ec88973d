"""Named evaluation protocols: the conventions that make one evaluator's numbers differ from
another's, gathered in one record so that each can be chosen and stated in the report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from vocmatch.core.ap import Interpolation
from vocmatch.core.match import MatchRule

__all__ = [
    "COCO_IOU_THRESHOLDS",
    "PROTOCOLS",
    "SWEEP_THRESHOLDS",
    "Conventions",
    "DifficultRule",
    "iou_thresholds",
    "protocol",
    "sweep_label",
]

DifficultRule = Literal["ignore", "count", "crowd"]

#: pycocotools' ``iouThrs`` (0.50:0.05:0.95), built the same way so values are identical.
COCO_IOU_THRESHOLDS: tuple[float, ...] = tuple(
    float(v) for v in np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1)
)

#: The thresholds every per-image report shows: PASCAL VOC / COCO AP50, COCO AP75, and
#: near-exact.
SWEEP_THRESHOLDS: tuple[float, ...] = (0.5, 0.75, 0.95)


@dataclass(frozen=True, slots=True)
class Conventions:
    """Every convention an evaluation depends on.

    Attributes:
        protocol: The preset these conventions started from.
        iou_threshold: The threshold for TP/FP/FN counts and, outside ``coco``, for AP.
        strict_threshold: Match at ``IoU > t`` (the Python ``voc_eval.py`` of py-faster-rcnn and
            Detectron) instead of ``IoU >= t`` (the MATLAB devkit's ``VOCevaldet.m``, pycocotools).
        pixel_inclusive: The devkit's ``+ 1`` widths and heights; otherwise continuous.
        match_rule: ``"unmatched"`` (best still-unmatched GT) or ``"devkit"``.
        difficult: ``"ignore"`` (neither TP, FP nor FN), ``"count"`` (ordinary objects) or
            ``"crowd"`` (pycocotools ``iscrowd``: intersection over prediction area, absorbs
            any number of predictions, which are ignored).
        interpolation: How AP is read off the precision/recall curve.
        ap_thresholds: The IoU thresholds AP is averaged over.
        max_dets: Highest-scored predictions kept per image and class (COCO's 100).
        coco_stats: Compute pycocotools' 12 summary numbers.
        sweep_thresholds: The IoU thresholds of each image's TP/FP/FN sweep, ascending.

    Example:
        >>> conventions = Conventions("mine", iou_threshold=0.7, interpolation="11-point")
        >>> conventions.iou_threshold, conventions.match_rule
        (0.7, 'unmatched')
    """

    protocol: str
    iou_threshold: float = 0.5
    strict_threshold: bool = False
    pixel_inclusive: bool = False
    match_rule: MatchRule = "unmatched"
    difficult: DifficultRule = "ignore"
    interpolation: Interpolation = "all-point"
    ap_thresholds: tuple[float, ...] = (0.5,)
    max_dets: int | None = None
    coco_stats: bool = False
    sweep_thresholds: tuple[float, ...] = SWEEP_THRESHOLDS

    def describe(self) -> tuple[tuple[str, str], ...]:
        """The conventions in force as ``(name, value)`` pairs for a report header."""
        comparison = ">" if self.strict_threshold else ">="
        if self.coco_stats:
            ap = "mean over IoU 0.50:0.05:0.95"
        else:
            ap = f"at IoU {comparison} {self.iou_threshold:g}"
        return (
            ("protocol", self.protocol),
            ("match", f"IoU {comparison} {self.iou_threshold:g}"),
            ("areas", "pixel-inclusive (+1)" if self.pixel_inclusive else "continuous"),
            (
                "match rule",
                "best GT even if taken (VOC devkit)"
                if self.match_rule == "devkit"
                else "best unmatched GT",
            ),
            ("difficult", self.difficult),
            ("AP", f"{self.interpolation}, {ap}"),
            ("max dets", "all" if self.max_dets is None else f"{self.max_dets} per image-class"),
        )

    def with_threshold(self, threshold: float) -> Conventions:
        """A copy with another IoU threshold (and, outside COCO, AP at that threshold)."""
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"IoU threshold must be within [0, 1], got {threshold}")
        ap = self.ap_thresholds if self.coco_stats else (threshold,)
        return replace(self, iou_threshold=threshold, ap_thresholds=ap)


PROTOCOLS: dict[str, Conventions] = {
    # vocmatch's default: VOC all-point AP on continuous coordinates, with the
    # one-to-one "best unmatched ground truth" rule of pycocotools.
    "default": Conventions(protocol="default"),
    # PASCAL VOC devkit 2010-2012 (VOCevaldet.m / voc_eval.py): all-point AP, +1 pixel
    # areas, the devkit's match rule, difficult objects ignored.
    "voc12": Conventions(
        protocol="voc12",
        pixel_inclusive=True,
        match_rule="devkit",
        interpolation="all-point",
    ),
    # PASCAL VOC 2007: as voc12 with 11-point interpolated AP.
    "voc07": Conventions(
        protocol="voc07",
        pixel_inclusive=True,
        match_rule="devkit",
        interpolation="11-point",
    ),
    # pycocotools COCOeval, iouType="bbox".
    "coco": Conventions(
        protocol="coco",
        difficult="crowd",
        interpolation="101-point",
        ap_thresholds=COCO_IOU_THRESHOLDS,
        max_dets=100,
        coco_stats=True,
    ),
}


def iou_thresholds(text: str) -> tuple[float, ...]:
    """IoU thresholds written as a list (``0.5,0.75``) or a range ``start:stop:step``, the
    stop included (``0.5:0.95:0.05``, the COCO ten, built as pycocotools builds ``iouThrs``).

    Raises:
        ValueError: A value that is not a number in [0, 1], a range without a step or with a
            step that does not divide it, or no threshold.

    >>> iou_thresholds("0.5:0.95:0.05") == COCO_IOU_THRESHOLDS
    True
    >>> iou_thresholds("0.75, 0.5")
    (0.5, 0.75)
    """
    parts = [part.strip() for part in text.split(":")]

    def number(part: str) -> float:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"{part!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{part!r} is not an IoU in [0, 1]")
        return value

    if len(parts) == 1:
        values = sorted({number(part.strip()) for part in text.split(",") if part.strip()})
        if not values:
            raise ValueError("no threshold given: write 0.5,0.75 or 0.5:0.95:0.05")
        return tuple(values)
    if len(parts) != 3:
        raise ValueError(f"{text!r}: a range is start:stop:step, as 0.5:0.95:0.05")
    start, stop, step = (number(part) for part in parts)
    count = (stop - start) / step if step > 0 else -1.0
    if stop < start or step <= 0 or abs(count - round(count)) > 1e-9:
        raise ValueError(
            f"{text!r}: the step must be above 0 and divide stop - start, as 0.5:0.95:0.05"
        )
    return tuple(float(v) for v in np.linspace(start, stop, int(np.round(count)) + 1))


def sweep_label(threshold: float) -> str:
    """A sweep threshold as the reports name it: two places, more only when needed.

    >>> sweep_label(0.5), sweep_label(0.555), sweep_label(COCO_IOU_THRESHOLDS[8])
    ('0.50', '0.555', '0.90')
    """
    two = f"{threshold:.2f}"
    # linspace's 0.9000000000000001 (pycocotools' own thresholds) is 0.90.
    return two if abs(float(two) - threshold) < 1e-9 else f"{threshold:g}"


def protocol(name: str) -> Conventions:
    """The preset conventions of a named protocol.

    Raises:
        KeyError: No protocol has that name.

    >>> protocol("voc07").interpolation
    '11-point'
    """
    return PROTOCOLS[name]

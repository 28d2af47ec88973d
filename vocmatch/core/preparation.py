"""The preparation of predictions before they are matched: a score pre-filter, non-maximum
suppression and a cap per image, the post-processing a detector's raw output is given
before it is measured.

A :class:`Preparation` is applied to each image's predictions on its own, in this order:

1. ``min_score``: every prediction whose score is not above it is removed (``score >
   min_score`` is kept, as Ultralytics' ``conf > 0.001``);
2. ``nms``: non-maximum suppression at this IoU (:func:`vocmatch.core.nms.nms`, exactly what
   ``torchvision.ops.nms`` keeps), class by class, or across classes with ``nms_agnostic``;
3. ``max_per_image``: the highest-scored predictions of the image, across classes, are kept
   (equal scores in file order).

Removed predictions are not evaluated at all, unlike a score threshold, which counts TP and
FP at a threshold but leaves every prediction in AP. The preparation is independent of the
matching conventions, so a preset can carry one (:data:`ULTRALYTICS_PREPARATION`).
"""

from __future__ import annotations

from dataclasses import dataclass

from vocmatch.checks import FIELD_BOUNDS, checked_bounded, checked_flag
from vocmatch.errors import RequestError

__all__ = ["PREPARATION_STEPS", "ULTRALYTICS_PREPARATION", "Preparation", "checked_preparation"]

#: The steps of a preparation, in the order they run (the names its counts are kept under).
PREPARATION_STEPS = ("min_score", "nms", "max_per_image")


@dataclass(frozen=True, slots=True)
class Preparation:
    """What is done to each image's predictions before matching (see the module doc).

    Attributes:
        min_score: Remove every prediction whose score is at or below this (None: none).
        nms: Suppress, class by class, a prediction whose IoU with a higher-scored kept one
            is above this (None: no suppression).
        nms_agnostic: Suppress across classes (needs ``nms``).
        max_per_image: Keep at most this many predictions per image, across classes, the
            highest-scored (None: all).

    Raises:
        RequestError: A field not a number in its range (NaN, a negative cap, an IoU above
            1), or ``nms_agnostic`` without ``nms``; the error names the field.

    >>> Preparation(nms=1.5)
    Traceback (most recent call last):
    ...
    vocmatch.errors.RequestError: nms '1.5': expected a finite number in [0, 1]
    """

    min_score: float | None = None
    nms: float | None = None
    nms_agnostic: bool = False
    max_per_image: int | None = None

    def __post_init__(self) -> None:
        for field in ("min_score", "nms", "max_per_image"):
            value = checked_bounded(field, getattr(self, field), FIELD_BOUNDS[field], optional=True)
            # Held as the checked value (a float, or an int for the cap): equal
            # preparations compare equal however their numbers were given.
            object.__setattr__(self, field, value)
        checked_flag("nms_agnostic", self.nms_agnostic)
        if self.nms_agnostic and self.nms is None:
            raise RequestError("nms_agnostic", "suppresses with an NMS IoU: give one too")

    @property
    def active(self) -> bool:
        """Some step is asked for."""
        return self.min_score is not None or self.nms is not None or self.max_per_image is not None

    def describe(self) -> str:
        """The steps asked for, in one line (``score > 0.001, NMS 0.7 by class, 300 per
        image``)."""
        parts = []
        if self.min_score is not None:
            parts.append(f"score > {self.min_score:g}")
        if self.nms is not None:
            scope = "across classes" if self.nms_agnostic else "by class"
            parts.append(f"NMS {self.nms:g} {scope}")
        if self.max_per_image is not None:
            parts.append(f"{self.max_per_image} per image")
        return ", ".join(parts) if parts else "none"


#: Ultralytics' val: predictions with ``conf > 0.001``, class-wise NMS at IoU 0.7, at most
#: 300 per image across classes.
ULTRALYTICS_PREPARATION = Preparation(min_score=0.001, nms=0.7, max_per_image=300)


def checked_preparation(value: object) -> Preparation | None:
    """A preparation given as a keyword: None, or one asking for some step (one asking
    for none is None).

    Raises:
        RequestError: Not a :class:`Preparation` (field ``preparation``).
    """
    if value is None:
        return None
    if not isinstance(value, Preparation):
        raise RequestError("preparation", f"expected Preparation, got {type(value).__name__}")
    return value if value.active else None

"""Confidence thresholds: which predictions the counts use, and the operating point of each
class (the score threshold that maximises F1, or F-beta, on its precision/recall curve).

A detector's raw output holds every box it considered, most of them low-scored; precision,
recall, the per-image tables and the gates mean something only at a confidence threshold.
AP, the curves and the COCO numbers rank *every* prediction and do not change with it.

Counts at a threshold ``T`` come from the one evaluation of all predictions. Greedy matching
takes predictions in descending score order (both match rules: pycocotools' best unmatched
ground truth and the devkit's best ground truth), so the outcome of a prediction depends only
on the predictions ranked above it; the predictions with ``score >= T`` come first, so their
matches are exactly those of an evaluation of them alone. Then TP at ``T`` are the matches of
those predictions to objects that count, FP their unmatched ones, and FN the objects that
count minus TP. The same holds under COCO's ``max_dets`` (the highest-scored ``N`` of an image
and class, of which those above ``T`` are the highest-scored of the ones above ``T``) and
crowd or ``difficult`` objects (a prediction they absorb is ignored, at any threshold). A test
checks the counts against filtering the predictions and evaluating again.

A prediction without a score has no confidence to compare: any threshold leaves it out (it
also ranks last for AP). A class without a threshold keeps every prediction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from vocmatch.checks import checked_number, checked_optional_number
from vocmatch.core.ap import Curve
from vocmatch.errors import RequestError

__all__ = [
    "OperatingPoint",
    "ScoreThresholds",
    "operating_point",
    "point_threshold",
    "typed_threshold",
]


@dataclass(frozen=True, slots=True)
class ScoreThresholds:
    """The confidence threshold of each class: predictions with ``score >= threshold`` count.

    Attributes:
        default: The threshold of every class not named in ``per_class``; None keeps all
            predictions of such a class.
        per_class: Thresholds of named classes, ``(name, threshold)`` sorted by name.
    """

    default: float | None = None
    per_class: tuple[tuple[str, float], ...] = field(default=())

    def __post_init__(self) -> None:
        """Refuse a threshold that is not a finite number (NaN would pass no prediction,
        silently), or a class name that is empty once stripped, as the readers strip them."""
        checked_optional_number("score_threshold", self.default)
        if not isinstance(self.per_class, tuple):
            raise RequestError("score_thresholds", "expected (class, threshold) pairs")
        pairs = []
        for pair in self.per_class:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise RequestError("score_thresholds", "expected (class, threshold) pairs")
            name = pair[0].strip()
            if not name:
                raise RequestError("score_thresholds", "a class name is empty")
            pairs.append((name, checked_number("score_thresholds", pair[1])))
        if any(name != given for (name, _), (given, _) in zip(pairs, self.per_class, strict=True)):
            object.__setattr__(self, "per_class", tuple(sorted(pairs)))

    @classmethod
    def of(cls, default: float | None, per_class: Mapping[str, float]) -> ScoreThresholds:
        """Thresholds from a default and a mapping of class names."""
        return cls(default, tuple(sorted(per_class.items())))

    def __bool__(self) -> bool:
        return self.default is not None or bool(self.per_class)

    def folded(self) -> ScoreThresholds:
        """The thresholds by lower-cased class name, as matching sees the classes when names
        are folded to lower case (see
        :meth:`~vocmatch.evaluation.threshold_files.ClassThresholds.folded`).

        Raises:
            RequestError: Two names fold to one class with different thresholds (field
                ``score_thresholds``).

        >>> ScoreThresholds(None, (("Car", 0.3), ("car", 0.3))).folded().per_class
        (('car', 0.3),)
        """
        if all(name == name.lower() for name, _ in self.per_class):
            return self
        from vocmatch.evaluation.threshold_files import ClassThresholds

        return ScoreThresholds.of(self.default, ClassThresholds(None, self.per_class).folded())

    def for_class(self, name: str) -> float | None:
        """The threshold of ``name``, or None when all its predictions count.

        >>> ScoreThresholds(0.5, (("car", 0.3),)).for_class("car")
        0.3
        >>> ScoreThresholds(0.5, (("car", 0.3),)).for_class("dog")
        0.5
        """
        for named, value in self.per_class:
            if named == name:
                return value
        return self.default

    def floor(self, name: str) -> float:
        """The threshold as a number a score is compared with: ``-inf`` without one, so that
        an unscored prediction (ranked at ``-inf``) passes only where no threshold applies."""
        value = self.for_class(name)
        return -math.inf if value is None else value

    def passes(self, name: str, score: float | None) -> bool:
        """The prediction counts at its class's threshold (an unscored one only without)."""
        value = self.for_class(name)
        return value is None or (score is not None and score >= value)

    def describe(self) -> str:
        """The thresholds in a line of the report: ``score >= 0.5 (car >= 0.3)``."""
        parts = []
        if self.default is not None:
            parts.append(f"score >= {self.default:g}")
        if self.per_class:
            named = ", ".join(f"{name} >= {value:g}" for name, value in self.per_class)
            parts.append(f"({named})" if parts else named)
        return " ".join(parts)

    def note(self) -> str:
        """The remark every output carries when a threshold applies."""
        return (
            f"counts use predictions with {self.describe()} (a prediction without a score is"
            " left out); AP, the precision/recall curves and the COCO numbers use every"
            " prediction"
        )


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """A class's best trade-off on its precision/recall curve at the IoU threshold.

    Attributes:
        threshold: Count predictions with ``score >= threshold``.
        precision: Precision there.
        recall: Recall there.
        f: F-beta there.
        beta: The beta of F-beta (1 for F1).
        predictions: Ranked predictions (not ignored) at or above the threshold.
    """

    threshold: float
    precision: float
    recall: float
    f: float
    beta: float
    predictions: int


def operating_point(curve: Curve | None, n_gt: int, beta: float = 1.0) -> OperatingPoint | None:
    """The score threshold that maximises F-beta on a class's precision/recall curve.

    Only cuts between different scores are candidates (a threshold keeps every prediction
    of the score it names), and only finite scores (an unscored prediction passes no
    threshold). Of equal maxima the highest threshold wins: fewer predictions for the same F.

    Args:
        curve: The class's curve at the IoU threshold (every ranked prediction).
        n_gt: Ground truth of the class that counts.
        beta: Recall weighs ``beta`` times as much as precision.

    Returns:
        The operating point, or None without ground truth, predictions or any true positive.

    >>> from vocmatch.core.ap import precision_recall_curve
    >>> c = precision_recall_curve([True, False, True, False], [0.9, 0.8, 0.7, 0.6], n_gt=2)
    >>> p = operating_point(c, 2)
    >>> p.threshold, round(p.precision, 4), p.recall, round(p.f, 4)
    (0.7, 0.6667, 1.0, 0.8)
    """
    if curve is None or n_gt <= 0 or curve.scores.size == 0:
        return None
    scores = curve.scores
    # The last prediction of each run of equal scores: where a threshold can cut.
    last = np.append(scores[1:] != scores[:-1], True) & np.isfinite(scores)
    cuts = np.flatnonzero(last)
    if cuts.size == 0:
        return None
    tp = np.rint(curve.recall[cuts] * n_gt)
    count = (cuts + 1).astype(np.float64)
    precision = tp / count
    recall = tp / n_gt
    b2 = beta * beta
    denominator = b2 * precision + recall
    f = np.zeros_like(precision)
    np.divide((1 + b2) * precision * recall, denominator, out=f, where=denominator > 0)
    best = int(np.argmax(f))  # the first maximum: the highest threshold
    if f[best] <= 0:
        return None
    return OperatingPoint(
        threshold=float(scores[cuts[best]]),
        precision=float(precision[best]),
        recall=float(recall[best]),
        f=float(f[best]),
        beta=beta,
        predictions=int(count[best]),
    )


def typed_threshold(cut: float, below: float | None, places: int = 3) -> str:
    """The threshold as a report prints it: a text that, typed back as a threshold, keeps
    exactly the predictions scored ``>= cut``. The cut rounded *down* at ``places`` decimal
    places (rounding to nearest could land above the cut and drop its prediction), with more
    places while that would also keep the next lower score ``below``.

    Args:
        cut: The lowest score kept.
        below: The highest score under the cut (None: none, or none with a score).
        places: The fewest decimal places.

    >>> typed_threshold(0.265961, 0.2)
    '0.265'
    >>> typed_threshold(0.265961, 0.2655)
    '0.2659'
    >>> typed_threshold(0.7, None)
    '0.700'
    """
    from decimal import ROUND_FLOOR, Decimal, InvalidOperation

    try:
        exact = Decimal(repr(cut))
        for digits in range(places, 18):
            text = str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_FLOOR))
            value = float(text)
            if value <= cut and (below is None or value > below):
                return text
    except InvalidOperation:  # beyond Decimal's 28 digits: a score of 1e20 or 1e-20
        pass
    return repr(cut)


def point_threshold(curve: Curve | None, point: OperatingPoint, places: int = 3) -> str:
    """:func:`typed_threshold` of an operating point, on the curve it was read from."""
    below = None
    if curve is not None and point.predictions < curve.scores.size:
        nxt = float(curve.scores[point.predictions])
        below = nxt if math.isfinite(nxt) else None
    return typed_threshold(point.threshold, below, places)

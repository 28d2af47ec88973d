"""Jaccard and Dice of two label sets (image-level labels, the ``iou`` command's label
sets): the sets normalised (:func:`normalise_labels`), then compared (:func:`label_overlap`).

A module of its own, apart from the box IoU of :mod:`vocmatch.core.iou`: an evaluation of
boxes does not build its record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["LabelOverlap", "label_overlap", "normalise_labels"]


def normalise_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """Lower-case, strip and de-duplicate labels, dropping empty ones, in sorted order.

    >>> normalise_labels(["Cat", " dog", "cat", ""])
    ('cat', 'dog')
    """
    return tuple(sorted({label.strip().lower() for label in labels} - {""}))


@dataclass(frozen=True, slots=True)
class LabelOverlap:
    """Jaccard and Dice of two label sets, with the sets behind them.

    Attributes:
        a: Normalised first set (sorted).
        b: Normalised second set (sorted).
        intersection: Labels in both (sorted).
        union: Labels in either (sorted).
        jaccard: ``|A ∩ B| / |A ∪ B|``; 0.0 when both sets are empty.
        dice: ``2 |A ∩ B| / (|A| + |B|)``; 0.0 when both sets are empty.
    """

    a: tuple[str, ...]
    b: tuple[str, ...]
    intersection: tuple[str, ...]
    union: tuple[str, ...]
    jaccard: float
    dice: float


def label_overlap(a: Iterable[str], b: Iterable[str]) -> LabelOverlap:
    """Compare two label sets after lower-casing and de-duplicating them.

    Args:
        a: First labels.
        b: Second labels.

    Returns:
        The normalised sets, their intersection and union, Jaccard and Dice.

    >>> overlap = label_overlap(["cat", "dog", "bird"], ["dog", "bird", "fish"])
    >>> overlap.jaccard, round(overlap.dice, 4)
    (0.5, 0.6667)
    """
    set_a = normalise_labels(a)
    set_b = normalise_labels(b)
    intersection = tuple(sorted(set(set_a) & set(set_b)))
    union = tuple(sorted(set(set_a) | set(set_b)))
    total = len(set_a) + len(set_b)
    return LabelOverlap(
        a=set_a,
        b=set_b,
        intersection=intersection,
        union=union,
        jaccard=len(intersection) / len(union) if union else 0.0,
        dice=2 * len(intersection) / total if total else 0.0,
    )

"""How two regions overlap (:class:`PairOverlap`), as
:func:`vocmatch.core.geometry.pair_overlap` tells it.

A module of its own, imported by the first overlap told: a run that scores boxes builds no
such record (:mod:`vocmatch.core.geometry` gives it too).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PairOverlap"]


@dataclass(frozen=True, slots=True)
class PairOverlap:
    """How two regions overlap.

    Attributes:
        area_a: Area of A.
        area_b: Area of B.
        intersection: Area of ``A ∩ B``.
        intersection_bounds: Bounding box ``(x1, y1, x2, y2)`` of ``A ∩ B`` where the two
            meet (flat when they only touch); None where they do not meet.
        relation: ``"identical"``, ``"A inside B"``, ``"B inside A"``, ``"overlapping"``,
            ``"touching"`` (they share only boundary, intersection 0) or ``"disjoint"``.
    """

    area_a: float
    area_b: float
    intersection: float
    intersection_bounds: tuple[float, float, float, float] | None
    relation: str

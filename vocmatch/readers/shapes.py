"""Which geometry scores an object that is annotated twice: Roboflow-style exports write a
``<polygon>`` and its ``<bndbox>`` in one ``<object>``.

``shape`` (the default) scores such an object by its shape, the more precise of the two, and
says how many there are; ``box`` scores every object as an axis-aligned box: its
``<bndbox>``, or the bounding box of a shape given alone, as a box-only evaluator would.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np

from vocmatch.errors import Message, Option
from vocmatch.readers.scan import ColumnSet

__all__ = ["GEOMETRIES", "Geometry", "geometry_note", "shape_counts", "with_geometry"]

Geometry = Literal["shape", "box"]

#: The choices of ``geometry``, the default first.
GEOMETRIES: tuple[Geometry, ...] = ("shape", "box")


def _objects(count: int) -> str:
    return f"{count:,} object{'' if count == 1 else 's'}"


def with_geometry(columns: ColumnSet, geometry: Geometry, side: str) -> ColumnSet:
    """The columns scored by the chosen geometry, with a note on what was chosen.

    Args:
        columns: Ground truth or predictions as read.
        geometry: ``shape`` or ``box``.
        side: ``ground truth`` or ``predictions``, for the note.

    Returns:
        ``shape``: the columns as read, noting how many objects have both a shape and a
        ``<bndbox>``. ``box``: every object a box (its ``<bndbox>``, or the bounding box of
        a shape given alone), no shapes left, noting how many objects changed.
    """
    both = len(columns.bndboxes)
    note = geometry_note(geometry, side, both, len(columns.shapes) - both)
    if note is None:
        return columns
    if geometry == "shape":
        return replace(columns, notes=(*columns.notes, note))
    boxes = columns.boxes.copy()
    for row, corners in columns.bndboxes:
        boxes[row] = np.asarray(corners, dtype=np.float64)
    return replace(columns, boxes=boxes, shapes=(), bndboxes=(), notes=(*columns.notes, note))


def shape_counts(columns: ColumnSet) -> tuple[int, int]:
    """The objects that are a shape and also have a ``<bndbox>``, and those that are a shape
    alone: what :func:`geometry_note` reads (counts of parts read apart add up)."""
    both = len(columns.bndboxes)
    return both, len(columns.shapes) - both


def geometry_note(geometry: Geometry, side: str, both: int, alone: int) -> Message | None:
    """The note :func:`with_geometry` adds to one side, from its :func:`shape_counts`; None
    when it adds none."""
    if geometry == "shape":
        if not both:
            return None
        verb = "has" if both == 1 else "have"
        return Message(
            f"{_objects(both)} of the {side} {verb} both a <bndbox> and a polygon or rotated "
            "box: scored by the shape only (",
            Option("geometry", "box"),
            " scores the <bndbox>)",
        )
    if not both and not alone:
        return None
    parts = []
    if both:
        parts.append(f"{_objects(both)} with both a <bndbox> and a shape scored by the <bndbox>")
    if alone:
        parts.append(f"{_objects(alone)} with only a shape scored by its bounding box")
    return Message(Option("geometry", "box"), f": of the {side}, " + "; ".join(parts))

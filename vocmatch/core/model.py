"""Records produced by parsing annotation files (standard library only).

Coordinates are in image pixels with the y-axis pointing down, in corner form
``x1, y1, x2, y2`` exactly as the XML gives them (``xmin, ymin, xmax, ymax``).

An object may instead be a region of another shape: a :class:`Polygon` or a
:class:`RotatedBox`. Its :class:`Box` then carries the shape, and ``x1, y1, x2, y2`` hold the
shape's axis-aligned bounding box, so everything that only knows boxes keeps working.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vocmatch.errors import Message

__all__ = [
    "MAX_COORDINATE",
    "Box",
    "ImageAnnotation",
    "ImageSize",
    "Point",
    "Polygon",
    "RotatedBox",
    "SkippedFile",
    "class_name_problem",
    "coordinate_problem",
    "corner_problem",
]

#: The largest coordinate magnitude accepted: 2**53, the last float64 below which every
#: whole pixel is exact. Larger values would make box areas overflow to infinity (a perfect
#: prediction of a box at 1e155 would score IoU NaN: one FP and one FN).
MAX_COORDINATE = float(2**53)


def coordinate_problem(value: float) -> str | None:
    """What is wrong with a box coordinate, or None: every door (the XML reader, the other
    formats' readers, :class:`~vocmatch.evaluation.shards.incremental.Evaluator`) refuses the same
    values with these words.

    >>> coordinate_problem(1e155)
    'is out of range (the limit is ±2^53)'
    >>> coordinate_problem(float("nan")), coordinate_problem(3.0)
    ('is not a finite number', None)
    """
    if not math.isfinite(value):
        return "is not a finite number"
    if abs(value) > MAX_COORDINATE:
        return "is out of range (the limit is ±2^53)"
    return None


def corner_problem(
    x1: float, y1: float, x2: float, y2: float, names: tuple[str, str, str, str]
) -> str | None:
    """What is wrong with a box's corners, or None: its far corner must not lie left of or
    above its near one (a zero width or height is a legal, empty box).

    Args:
        x1: The near corner's x.
        y1: The near corner's y.
        x2: The far corner's x.
        y2: The far corner's y.
        names: How the message names the four (``<xmin>``... for XML, ``x1``... for arrays).

    >>> corner_problem(10, 0, 4, 5, ("x1", "y1", "x2", "y2"))
    'x2 4 is less than x1 10'
    """
    if x2 < x1:
        return f"{names[2]} {x2:g} is less than {names[0]} {x1:g}"
    if y2 < y1:
        return f"{names[3]} {y2:g} is less than {names[1]} {y1:g}"
    return None


def class_name_problem(name: str) -> str | None:
    """What is wrong with a class name once stripped as the readers strip it, or None.

    >>> class_name_problem(""), class_name_problem("car")
    ('is empty', None)
    """
    return "is empty" if not name.strip() else None


#: A point ``(x, y)``.
Point = tuple[float, float]


def _bounds(points: tuple[Point, ...]) -> tuple[float, float, float, float]:
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    return (min(xs), min(ys), max(xs), max(ys))


@dataclass(frozen=True, slots=True)
class Polygon:
    """A simple polygon, its vertices in the order the file gives them.

    The ring closes by itself: the last point connects to the first (a repeated first point
    at the end is allowed and changes nothing).

    Attributes:
        points: The vertices ``(x, y)``.
    """

    points: tuple[Point, ...]

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """The axis-aligned bounding box ``(x1, y1, x2, y2)``.

        >>> Polygon(((0.0, 0.0), (4.0, 1.0), (1.0, 3.0))).bounds
        (0.0, 0.0, 4.0, 3.0)
        """
        return _bounds(self.points)


@dataclass(frozen=True, slots=True)
class RotatedBox:
    """A box of width ``w`` and height ``h`` around ``(cx, cy)``, turned by ``angle`` radians.

    The convention is roLabelImg's (``<robndbox>``, read from its ``pascal_voc_io.py``): the
    corner at offset ``(dx, dy)`` from the centre, before turning, lies at
    ``(cx + dx cos a - dy sin a, cy + dx sin a + dy cos a)``. With the y-axis pointing down,
    as in image pixels, a positive angle turns the box clockwise on screen. At angle 0 the box
    is the axis-aligned box ``cx ± w/2, cy ± h/2``; roLabelImg writes angles in [0, 2π).

    Attributes:
        cx: Centre x.
        cy: Centre y.
        w: Width along the box's own x-axis (before turning).
        h: Height along the box's own y-axis.
        angle: Clockwise turn on screen, in radians.
    """

    cx: float
    cy: float
    w: float
    h: float
    angle: float

    @property
    def corners(self) -> tuple[Point, Point, Point, Point]:
        """The four corners, in roLabelImg's order: from the top-left before turning, clockwise
        on screen.

        >>> RotatedBox(5.0, 5.0, 4.0, 2.0, 0.0).corners
        ((3.0, 4.0), (7.0, 4.0), (7.0, 6.0), (3.0, 6.0))
        """
        cos, sin = math.cos(self.angle), math.sin(self.angle)
        half_w, half_h = self.w / 2, self.h / 2
        offsets = ((-half_w, -half_h), (half_w, -half_h), (half_w, half_h), (-half_w, half_h))
        p0, p1, p2, p3 = (
            (self.cx + dx * cos - dy * sin, self.cy + dx * sin + dy * cos) for dx, dy in offsets
        )
        return (p0, p1, p2, p3)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """The axis-aligned bounding box ``(x1, y1, x2, y2)`` of the corners."""
        return _bounds(self.corners)


@dataclass(frozen=True, slots=True)
class Box:
    """One ``<object>`` of an annotation file.

    Attributes:
        name: Class name, surrounding whitespace stripped.
        x1: ``xmin``.
        y1: ``ymin``.
        x2: ``xmax``.
        y2: ``ymax``.
        difficult: ``<difficult>1</difficult>``; absent means False.
        truncated: ``<truncated>1</truncated>``; absent means False.
        score: The prediction's ``<score>`` or ``<confidence>``; None for ground truth and for
            unscored predictions.
        line: Source line of the ``<object>`` element, for messages.
        shape: The region when it is not an axis-aligned box (``<polygon>`` or
            ``<robndbox>``); ``x1, y1, x2, y2`` are then its bounding box. None for a box.
        occluded: ``<occluded>1</occluded>`` (CVAT, Roboflow, datumaro); absent means False.
        pose: ``<pose>`` text, stripped (VOC: ``Frontal``, ``Left``, ``Unspecified``, ...);
            None when absent or empty.
        bndbox: For an object with a shape, its ``<bndbox>`` as ``x1, y1, x2, y2`` when it
            also has a readable one (Roboflow-style exports write both); None otherwise.

    Example:
        >>> box = Box("car", 10, 20, 50, 60, score=0.9)
        >>> box.name, box.x2 - box.x1, box.difficult
        ('car', 40, False)
    """

    name: str
    x1: float
    y1: float
    x2: float
    y2: float
    difficult: bool = False
    truncated: bool = False
    score: float | None = None
    line: int | None = None
    shape: Polygon | RotatedBox | None = None
    occluded: bool = False
    pose: str | None = None
    bndbox: tuple[float, float, float, float] | None = None

    @property
    def width(self) -> float:
        """Continuous width ``x2 - x1``."""
        return self.x2 - self.x1

    @property
    def height(self) -> float:
        """Continuous height ``y2 - y1``."""
        return self.y2 - self.y1


@dataclass(frozen=True, slots=True)
class ImageSize:
    """The ``<size>`` element: width and height in pixels, depth in channels."""

    width: float
    height: float
    depth: int | None = None


@dataclass(frozen=True, slots=True)
class ImageAnnotation:
    """All objects of one annotation file.

    Attributes:
        key: The file's path relative to its directory, without extension, with ``/``
            separators. Ground truth and predictions are paired by key.
        path: The file as it was read, for messages.
        boxes: The objects in file order.
        size: ``<size>``, when the file has one.
        filename: ``<filename>``, when the file has one.

    Example:
        >>> image = ImageAnnotation("street_01", "gt/street_01.xml", (Box("car", 0, 0, 4, 3),))
        >>> image.key, len(image.boxes)
        ('street_01', 1)
    """

    key: str
    path: str
    boxes: tuple[Box, ...]
    size: ImageSize | None = None
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file that could not be evaluated, and why."""

    path: str
    message: str
    line: int | None = None
    key: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        # A Message still, when the reason names an option (vocmatch.errors.Message).
        return Message(f"{where}: ", self.message)

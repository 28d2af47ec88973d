"""Records produced by parsing annotation files (standard library only).

Coordinates are in image pixels with the y-axis pointing down, in corner form
``x1, y1, x2, y2`` exactly as the XML gives them (``xmin, ymin, xmax, ymax``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Box", "ImageAnnotation", "ImageSize", "SkippedFile"]


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
        return f"{where}: {self.message}"

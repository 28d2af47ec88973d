"""Compare one pair of boxes or one pair of label sets: the numbers behind ``vocmatch iou``.

Every number comes from :mod:`vocmatch.core.iou`, the core the evaluator uses, so a verdict here is
the verdict the evaluator reaches for the same pair at the same threshold. Boxes are in corner
form ``x1, y1, x2, y2`` with the y-axis pointing down, as in image pixels; areas are
continuous (``x2 - x1``, the pycocotools convention).

Either side may instead be a polygon (:func:`compare_regions`): its area, the intersection
and the union then come from exact polygon clipping (:mod:`vocmatch.core.geometry`, the same
numbers the evaluator uses for shapes), and its corners in the tables are its bounding box.
GIoU's ``C`` stays the smallest axis-aligned box enclosing both, so a polygon that is a
rectangle gives the box's numbers.

Thresholds are inclusive: a pair matches when ``IoU >= threshold``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vocmatch.core.geometry import pair_overlap, polygon_problem
from vocmatch.core.iou import (
    box_area,
    dice_from_iou,
    dice_matrix,
    giou_matrix,
    intersection_matrix,
    iou_matrix,
    union_matrix,
    xywh_to_xyxy,
)
from vocmatch.core.label_sets import label_overlap, normalise_labels
from vocmatch.core.model import Box, Point, Polygon
from vocmatch.core.numbers import read_number
from vocmatch.version import __version__

__all__ = [
    "SWEEP",
    "BoxComparison",
    "BoxCorners",
    "LabelComparison",
    "PolygonSides",
    "Region",
    "SweepThreshold",
    "Verdict",
    "box_relation",
    "compare_boxes",
    "compare_labels",
    "compare_regions",
    "is_match",
    "parse_box",
    "parse_box_pair",
    "parse_labels",
    "parse_polygon",
    "parse_region_pair",
    "to_json",
    "to_json_dict",
]

#: A box as ``(x1, y1, x2, y2)``.
BoxCorners = tuple[float, float, float, float]

#: One side of a comparison: a box or a polygon.
Region = BoxCorners | Polygon

# Relative tolerance for "the two Dice formulas agree": they are the same number in exact
# arithmetic, so any difference is rounding (about 1e-16) unless something is badly wrong.
_DICE_TOLERANCE = 1e-9

_SEPARATORS = re.compile(r"[,\s]+")


@dataclass(frozen=True, slots=True)
class SweepThreshold:
    """A threshold of the sweep and the convention that uses it.

    Attributes:
        threshold: The IoU threshold (inclusive).
        convention: Where the threshold is used.
    """

    threshold: float
    convention: str


#: The thresholds every comparison is also judged at.
SWEEP: tuple[SweepThreshold, ...] = (
    SweepThreshold(0.5, "PASCAL VOC / COCO AP50"),
    SweepThreshold(0.75, "COCO AP75, strict"),
    SweepThreshold(0.95, "near-exact"),
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a pair matches at one threshold of the sweep.

    Attributes:
        sweep: The threshold and its convention.
        matched: True when the value is at least the threshold.
    """

    sweep: SweepThreshold
    matched: bool


def is_match(value: float, threshold: float) -> bool:
    """The inclusive match rule: ``value >= threshold``.

    >>> is_match(0.5, 0.5), is_match(0.4999, 0.5)
    (True, False)
    """
    return value >= threshold


def _check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _check_corners(box: BoxCorners) -> None:
    x1, y1, x2, y2 = box
    for name, value in zip(("x1", "y1", "x2", "y2"), box, strict=True):
        if not math.isfinite(value):
            raise ValueError(f"{name} is not a finite number: {value}")
    if x2 < x1:
        raise ValueError(f"x2 ({_number_text(x2)}) is less than x1 ({_number_text(x1)})")
    if y2 < y1:
        raise ValueError(f"y2 ({_number_text(y2)}) is less than y1 ({_number_text(y1)})")


def parse_box(text: str, xywh: bool = False) -> BoxCorners:
    """Read one box from text such as ``"50,50,150,150"`` or ``"50 50 150 150"``.

    Commas, spaces or both separate the four numbers; negative and float coordinates are
    fine.

    Args:
        text: Four numbers, ``x1,y1,x2,y2`` (or ``x,y,w,h`` with ``xywh``).
        xywh: Read the numbers as left, top, width, height and convert to corners.

    Returns:
        The box in corner form ``(x1, y1, x2, y2)``.

    Raises:
        ValueError: The text is not four finite numbers, or ``x2 < x1``, ``y2 < y1``, or a
            width or height is negative. The message is one line and quotes the text.

    >>> parse_box("50, 50, 150, 150")
    (50.0, 50.0, 150.0, 150.0)
    >>> parse_box("-5 3 10 20", xywh=True)
    (-5.0, 3.0, 5.0, 23.0)
    """
    names = "x,y,w,h" if xywh else "x1,y1,x2,y2"
    tokens = [token for token in _SEPARATORS.split(text.strip()) if token]
    if len(tokens) != 4:
        raise ValueError(f"expected 4 numbers ({names}), got {len(tokens)}: {text!r}")
    values: list[float] = []
    for token in tokens:
        try:
            value = read_number(token)
        except ValueError:
            raise ValueError(f"{token!r} is not a number: {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{token!r} is not a finite number: {text!r}")
        values.append(value)
    if xywh:
        for name, value in (("width", values[2]), ("height", values[3])):
            if value < 0:
                raise ValueError(f"{name} is negative ({_number_text(value)}): {text!r}")
        x1, y1, x2, y2 = (float(v) for v in xywh_to_xyxy([values])[0])
    else:
        x1, y1, x2, y2 = values
    box = (x1, y1, x2, y2)
    try:
        _check_corners(box)
    except ValueError as error:
        raise ValueError(f"{error}: {text!r}") from None
    return box


def parse_box_pair(args: Sequence[str], xywh: bool = False) -> tuple[BoxCorners, BoxCorners]:
    """Read boxes A and B from command-line arguments.

    Two arguments are one box each. Any other number of arguments is read as eight numbers
    in a row, the first four being box A (so ``50 50 150 150 80 80 180 180`` works
    unquoted).

    Args:
        args: The arguments as typed.
        xywh: Read each box as ``x,y,w,h``.

    Returns:
        Boxes A and B in corner form.

    Raises:
        ValueError: One line naming the box at fault (``box A: ...``) or the argument count.

    >>> parse_box_pair(["0,0,10,10", "5,5,15,15"])
    ((0.0, 0.0, 10.0, 10.0), (5.0, 5.0, 15.0, 15.0))
    >>> parse_box_pair("0 0 10 10 5 5 15 15".split())[1]
    (5.0, 5.0, 15.0, 15.0)
    """
    if len(args) == 2:
        texts = [args[0], args[1]]
    else:
        tokens = [token for arg in args for token in _SEPARATORS.split(arg.strip()) if token]
        if len(tokens) != 8:
            names = "x,y,w,h" if xywh else "x1,y1,x2,y2"
            raise ValueError(f"expected two boxes A B ({names} each), got {len(args)} argument(s)")
        texts = [" ".join(tokens[:4]), " ".join(tokens[4:])]
    boxes: list[BoxCorners] = []
    for name, text in zip(("A", "B"), texts, strict=True):
        try:
            boxes.append(parse_box(text, xywh))
        except ValueError as error:
            raise ValueError(f"box {name}: {error}") from None
    return boxes[0], boxes[1]


def parse_polygon(text: str, name: str = "polygon") -> Polygon:
    """Read a polygon from text such as ``"0,0 4,0 0,3"``: its points ``x,y`` in order.

    Any mix of commas and spaces separates the numbers, which are read in pairs; the ring
    closes by itself.

    Args:
        text: The points.
        name: What to call the polygon in messages (``"polygon A"``).

    Returns:
        The polygon.

    Raises:
        ValueError: A number is not finite or not a number, the count is odd, or the points
            do not make a valid polygon (fewer than 3 distinct points, zero area,
            self-intersecting), or its area would overflow. The message is one line and
            quotes the text.

    >>> parse_polygon("200,100 300,100 200,200").points
    ((200.0, 100.0), (300.0, 100.0), (200.0, 200.0))
    """
    tokens = [token for token in _SEPARATORS.split(text.strip()) if token]
    values: list[float] = []
    for token in tokens:
        try:
            value = read_number(token)
        except ValueError:
            raise ValueError(f"{name}: {token!r} is not a number: {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{name}: {token!r} is not a finite number: {text!r}")
        values.append(value)
    if len(values) % 2:
        raise ValueError(f"{name}: expected x,y pairs, got {len(values)} numbers: {text!r}")
    xs, ys = values[::2], values[1::2]
    # Checked before the polygon is judged, whose area would overflow inside shapely (with
    # numpy's RuntimeWarnings on stderr): twice the bounding box bounds every area used.
    if xs and not math.isfinite(2.0 * (max(xs) - min(xs)) * (max(ys) - min(ys))):
        raise ValueError(f"{name}: coordinates too large: the area overflows: {text!r}")
    points: tuple[Point, ...] = tuple(zip(xs, ys, strict=True))
    problem = polygon_problem(points)
    if problem is not None:
        raise ValueError(f"{name} {problem}: {text!r}")
    return Polygon(points)


def parse_region_pair(args: Sequence[str], xywh: bool = False) -> tuple[Region, Region]:
    """Read regions A and B, each a box or a polygon, from two command-line arguments.

    An argument of four numbers is a box (``x1,y1,x2,y2``, or ``x,y,w,h`` with ``xywh``); one
    of three or more points ``x,y x,y x,y ...`` is a polygon. Four numbers can never be a
    polygon (it needs three points), so the reading is never ambiguous.

    Args:
        args: The two arguments as typed.
        xywh: Read a box argument as ``x,y,w,h``.

    Returns:
        Regions A and B.

    Raises:
        ValueError: One line naming the region at fault, or the argument count.

    >>> parse_region_pair(["0,0 4,0 0,4", "0,0,2,2"])[1]
    (0.0, 0.0, 2.0, 2.0)
    """
    if len(args) != 2:
        raise ValueError(
            f"expected two regions A B (a box or polygon points each), got {len(args)} argument(s)"
        )
    regions: list[Region] = []
    for name, text in zip(("A", "B"), args, strict=True):
        if len([token for token in _SEPARATORS.split(text.strip()) if token]) == 4:
            try:
                regions.append(parse_box(text, xywh))
            except ValueError as error:
                raise ValueError(f"box {name}: {error}") from None
        else:
            regions.append(parse_polygon(text, f"polygon {name}"))
    return regions[0], regions[1]


def parse_labels(text: str) -> tuple[str, ...]:
    """Read a comma-separated label set: lower-cased, stripped, de-duplicated and sorted.

    Only commas separate labels, so a label may hold a space (``traffic light``).

    Raises:
        ValueError: No label is left.

    >>> parse_labels("Cat, dog,cat , bird")
    ('bird', 'cat', 'dog')
    """
    labels = normalise_labels(text.split(","))
    if not labels:
        raise ValueError(f"no labels in {text!r}")
    return labels


def box_relation(box_a: BoxCorners, box_b: BoxCorners) -> str:
    """How two boxes lie: identical, one inside the other, overlapping, touching or disjoint.

    Boxes that share only an edge or a corner are touching (IoU 0); boxes with a gap between
    them are disjoint. A box inside another may share edges with it.

    >>> box_relation((0, 0, 10, 10), (10, 0, 20, 10))
    'touching'
    >>> box_relation((0, 0, 100, 100), (25, 25, 75, 75))
    'B inside A'
    """
    ax1, ay1, ax2, ay2 = box_a
    bx1, by1, bx2, by2 = box_b
    if box_a == box_b:
        return "identical"
    if bx1 <= ax1 and by1 <= ay1 and ax2 <= bx2 and ay2 <= by2:
        return "A inside B"
    if ax1 <= bx1 and ay1 <= by1 and bx2 <= ax2 and by2 <= ay2:
        return "B inside A"
    width = min(ax2, bx2) - max(ax1, bx1)
    height = min(ay2, by2) - max(ay1, by1)
    if width < 0 or height < 0:
        return "disjoint"
    if width == 0 or height == 0:
        return "touching"
    return "overlapping"


@dataclass(frozen=True, slots=True)
class PolygonSides:
    """What corners cannot say about a comparison that involves a polygon.

    Attributes:
        a: Polygon A, or None when A is a box.
        b: Polygon B, or None when B is a box.
        relation: See :class:`vocmatch.core.geometry.PairOverlap`.
        intersection_box: The bounding box of ``A ∩ B`` (flat when they only touch); None
            when they do not meet.
    """

    a: Polygon | None
    b: Polygon | None
    relation: str
    intersection_box: BoxCorners | None


@dataclass(frozen=True, slots=True)
class BoxComparison:
    """Every number ``vocmatch iou`` shows for two boxes.

    Attributes:
        box_a: Box A, ``(x1, y1, x2, y2)``; a polygon's bounding box.
        box_b: Box B, ``(x1, y1, x2, y2)``; a polygon's bounding box.
        area_a: Area of A.
        area_b: Area of B.
        intersection: Area of ``A ∩ B`` (0 for touching or disjoint boxes).
        union: Area of ``A ∪ B``, ``area_a + area_b - intersection``.
        enclosing: Area ``C`` of the smallest box enclosing both (used by GIoU).
        iou: ``intersection / union`` (0.0 when the union is 0).
        giou: ``iou - (enclosing - union) / enclosing``, in (-1, 1].
        dice: ``2 I / (A + B)``, the F1 score of the two regions.
        dice_from_iou: ``2 IoU / (1 + IoU)``; the same number as ``dice``.
        threshold: The match threshold (inclusive).
        polygons: The polygons, when either side is one; None for two boxes.
        pixel_inclusive: Areas (and widths and heights) counted with the VOC devkit's +1
            pixel, ``(x2 - x1 + 1) * (y2 - y1 + 1)``, as its protocols match boxes.
    """

    box_a: BoxCorners
    box_b: BoxCorners
    area_a: float
    area_b: float
    intersection: float
    union: float
    enclosing: float
    iou: float
    giou: float
    dice: float
    dice_from_iou: float
    threshold: float = 0.5
    polygons: PolygonSides | None = None
    pixel_inclusive: bool = False

    @property
    def matched(self) -> bool:
        """True when ``iou >= threshold``."""
        return is_match(self.iou, self.threshold)

    @property
    def dice_agree(self) -> bool:
        """True when the two Dice formulas give the same number (up to rounding)."""
        return math.isclose(self.dice, self.dice_from_iou, rel_tol=_DICE_TOLERANCE, abs_tol=1e-15)

    @property
    def relation(self) -> str:
        """See :func:`box_relation`; for a polygon, how the regions themselves lie."""
        if self.polygons is not None:
            return self.polygons.relation
        return box_relation(self.box_a, self.box_b)

    @property
    def intersection_box(self) -> BoxCorners | None:
        """``A ∩ B`` as a box; zero-width or zero-height when touching; None when disjoint.

        With a polygon, the bounding box of the regions' intersection.
        """
        if self.polygons is not None:
            return self.polygons.intersection_box
        ax1, ay1, ax2, ay2 = self.box_a
        bx1, by1, bx2, by2 = self.box_b
        x1, y1, x2, y2 = max(ax1, bx1), max(ay1, by1), min(ax2, bx2), min(ay2, by2)
        if x2 < x1 or y2 < y1:
            return None
        return (x1, y1, x2, y2)

    @property
    def enclosing_box(self) -> BoxCorners:
        """The smallest box enclosing A and B."""
        ax1, ay1, ax2, ay2 = self.box_a
        bx1, by1, bx2, by2 = self.box_b
        return (min(ax1, bx1), min(ay1, by1), max(ax2, bx2), max(ay2, by2))

    @property
    def sweep(self) -> tuple[Verdict, ...]:
        """The verdict at each threshold of :data:`SWEEP`."""
        return tuple(Verdict(s, is_match(self.iou, s.threshold)) for s in SWEEP)


def compare_boxes(
    box_a: Sequence[float],
    box_b: Sequence[float],
    threshold: float = 0.5,
    pixel_inclusive: bool = False,
) -> BoxComparison:
    """Compare two corner boxes with the IoU core.

    Args:
        box_a: ``(x1, y1, x2, y2)``.
        box_b: ``(x1, y1, x2, y2)``.
        threshold: IoU threshold for the verdict (inclusive), in [0, 1].
        pixel_inclusive: Count areas with the VOC devkit's +1 pixel (``voc07``, ``voc12``):
            integer corners name pixels, both edges included.

    Returns:
        IoU, GIoU, both Dice formulas and the areas behind them.

    Raises:
        ValueError: A box is not four finite numbers with ``x1 <= x2`` and ``y1 <= y2``, the
            threshold is outside [0, 1], or the coordinates are so large that an area
            overflows.

    >>> result = compare_boxes((50, 50, 150, 150), (80, 80, 180, 180))
    >>> round(result.iou, 4), result.intersection, result.union, result.matched
    (0.3245, 4900.0, 15100.0, False)
    >>> result = compare_boxes((0, 0, 9, 9), (5, 5, 14, 14), pixel_inclusive=True)
    >>> result.area_a, result.intersection, result.union, result.iou == 25 / 175
    (100.0, 25.0, 175.0, True)
    """
    _check_threshold(threshold)
    boxes: list[BoxCorners] = []
    for name, box in (("A", box_a), ("B", box_b)):
        if len(box) != 4:
            raise ValueError(f"box {name}: expected 4 numbers (x1,y1,x2,y2), got {len(box)}")
        corners = (float(box[0]), float(box[1]), float(box[2]), float(box[3]))
        try:
            _check_corners(corners)
        except ValueError as error:
            raise ValueError(f"box {name}: {error}") from None
        boxes.append(corners)
    a, b = [boxes[0]], [boxes[1]]
    ex1, ey1, ex2, ey2 = (
        min(boxes[0][0], boxes[1][0]),
        min(boxes[0][1], boxes[1][1]),
        max(boxes[0][2], boxes[1][2]),
        max(boxes[0][3], boxes[1][3]),
    )
    extra = 1.0 if pixel_inclusive else 0.0  # the VOC devkit's +1 pixel
    enclosing = (ex2 - ex1 + extra) * (ey2 - ey1 + extra)
    if not math.isfinite(2.0 * enclosing):
        raise ValueError("coordinates too large: the box areas overflow")
    iou = float(iou_matrix(a, b, pixel_inclusive)[0, 0])
    union = float(union_matrix(a, b, pixel_inclusive)[0, 0])
    # giou_matrix knows continuous areas only; with +1 pixel C is at least 1.
    giou = iou - (enclosing - union) / enclosing if pixel_inclusive else giou_matrix(a, b)[0, 0]
    return BoxComparison(
        box_a=boxes[0],
        box_b=boxes[1],
        area_a=float(box_area(a, pixel_inclusive)[0]),
        area_b=float(box_area(b, pixel_inclusive)[0]),
        intersection=float(intersection_matrix(a, b, pixel_inclusive)[0, 0]),
        union=union,
        enclosing=enclosing,
        iou=iou,
        giou=float(giou),
        dice=float(dice_matrix(a, b, pixel_inclusive)[0, 0]),
        dice_from_iou=float(dice_from_iou(iou)),
        threshold=threshold,
        pixel_inclusive=pixel_inclusive,
    )


def _side(name: str, region: Region) -> tuple[BoxCorners, Box | Polygon]:
    """A side's corners (a polygon's bounding box) and its region, checked."""
    if isinstance(region, Polygon):
        problem = polygon_problem(region.points)
        if problem is not None:
            raise ValueError(f"polygon {name} {problem}")
        if not all(math.isfinite(v) for point in region.points for v in point):
            raise ValueError(f"polygon {name}: a coordinate is not a finite number")
        return region.bounds, region
    if len(region) != 4:
        raise ValueError(f"box {name}: expected 4 numbers (x1,y1,x2,y2), got {len(region)}")
    corners = (float(region[0]), float(region[1]), float(region[2]), float(region[3]))
    try:
        _check_corners(corners)
    except ValueError as error:
        raise ValueError(f"box {name}: {error}") from None
    return corners, Box(name, *corners)


def compare_regions(a: Region, b: Region, threshold: float = 0.5) -> BoxComparison:
    """Compare two regions, each a box or a polygon.

    Two boxes give exactly :func:`compare_boxes`. With a polygon, the areas, intersection and
    union are those of the regions (exact clipping); ``C`` for GIoU is the smallest
    axis-aligned box enclosing both.

    Args:
        a: Box ``(x1, y1, x2, y2)`` or polygon A.
        b: Box or polygon B.
        threshold: IoU threshold for the verdict (inclusive), in [0, 1].

    Returns:
        IoU, GIoU, both Dice formulas and the areas behind them; ``polygons`` holds the
        polygons, the regions' relation and the bounding box of their intersection.

    Raises:
        ValueError: A box is not valid (see :func:`compare_boxes`), a polygon is not valid
            (see :func:`parse_polygon`), the threshold is outside [0, 1], or an area
            overflows.

    >>> triangle = Polygon(((200, 100), (300, 100), (200, 200)))
    >>> result = compare_regions(triangle, (200, 100, 300, 200))
    >>> result.iou, result.area_a, result.intersection, result.relation
    (0.5, 5000.0, 5000.0, 'A inside B')
    """
    if not isinstance(a, Polygon) and not isinstance(b, Polygon):
        return compare_boxes(a, b, threshold)
    _check_threshold(threshold)
    box_a, region_a = _side("A", a)
    box_b, region_b = _side("B", b)
    ex1, ey1 = min(box_a[0], box_b[0]), min(box_a[1], box_b[1])
    ex2, ey2 = max(box_a[2], box_b[2]), max(box_a[3], box_b[3])
    enclosing = (ex2 - ex1) * (ey2 - ey1)
    if not math.isfinite(2.0 * enclosing):
        raise ValueError("coordinates too large: the areas overflow")
    overlap = pair_overlap(region_a, region_b)
    inter = overlap.intersection
    union = overlap.area_a + overlap.area_b - inter
    iou = inter / union if union > 0 else 0.0
    giou = iou - (enclosing - union) / enclosing if enclosing > 0 else iou
    total = overlap.area_a + overlap.area_b
    return BoxComparison(
        box_a=box_a,
        box_b=box_b,
        area_a=overlap.area_a,
        area_b=overlap.area_b,
        intersection=inter,
        union=union,
        enclosing=enclosing,
        iou=iou,
        giou=giou,
        dice=2.0 * inter / total if total > 0 else 0.0,
        dice_from_iou=float(dice_from_iou(iou)),
        threshold=threshold,
        polygons=PolygonSides(
            a=a if isinstance(a, Polygon) else None,
            b=b if isinstance(b, Polygon) else None,
            relation=overlap.relation,
            intersection_box=overlap.intersection_bounds,
        ),
    )


@dataclass(frozen=True, slots=True)
class LabelComparison:
    """Jaccard and Dice of two label sets, with the sets behind them.

    Attributes:
        a: Set A, normalised (lower-cased, de-duplicated, sorted).
        b: Set B, normalised.
        intersection: Labels in both, sorted.
        union: Labels in either, sorted.
        jaccard: ``|A ∩ B| / |A ∪ B|`` (the IoU of two sets); 0.0 when both are empty.
        dice: ``2 |A ∩ B| / (|A| + |B|)``; 0.0 when both are empty.
        threshold: The match threshold on Jaccard (inclusive).
    """

    a: tuple[str, ...]
    b: tuple[str, ...]
    intersection: tuple[str, ...]
    union: tuple[str, ...]
    jaccard: float
    dice: float
    threshold: float = 0.5

    @property
    def matched(self) -> bool:
        """True when ``jaccard >= threshold``."""
        return is_match(self.jaccard, self.threshold)


def compare_labels(a: Iterable[str], b: Iterable[str], threshold: float = 0.5) -> LabelComparison:
    """Compare two label sets with the IoU core's label-set Jaccard.

    Args:
        a: Labels of set A (any case, duplicates allowed).
        b: Labels of set B.
        threshold: Jaccard threshold for the verdict (inclusive), in [0, 1].

    Returns:
        The normalised sets, their intersection and union, Jaccard and Dice.

    Raises:
        ValueError: The threshold is outside [0, 1].

    >>> result = compare_labels(["cat", "dog", "bird"], ["dog", "bird", "fish"])
    >>> result.jaccard, round(result.dice, 4), result.matched
    (0.5, 0.6667, True)
    """
    _check_threshold(threshold)
    overlap = label_overlap(a, b)
    return LabelComparison(
        a=overlap.a,
        b=overlap.b,
        intersection=overlap.intersection,
        union=overlap.union,
        jaccard=overlap.jaccard,
        dice=overlap.dice,
        threshold=threshold,
    )


def _box_json(box: BoxCorners) -> dict[str, float]:
    x1, y1, x2, y2 = box
    return {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "width": x2 - x1, "height": y2 - y1}


def to_json_dict(comparison: BoxComparison | LabelComparison) -> dict[str, Any]:
    """Every number of a comparison as plain JSON-ready data, keys in a fixed order.

    >>> to_json_dict(compare_labels(["cat"], ["cat", "dog"]))["jaccard"]
    0.5
    """
    if isinstance(comparison, LabelComparison):
        return {
            "vocmatch": __version__,
            "mode": "labels",
            "a": list(comparison.a),
            "b": list(comparison.b),
            "intersection": list(comparison.intersection),
            "union": list(comparison.union),
            "intersection_size": len(comparison.intersection),
            "union_size": len(comparison.union),
            "jaccard": comparison.jaccard,
            "dice": comparison.dice,
            "threshold": comparison.threshold,
            "inclusive": True,
            "match": comparison.matched,
        }
    inter_box = comparison.intersection_box
    sides = comparison.polygons
    box_a: dict[str, Any] = {**_box_json(comparison.box_a), "area": comparison.area_a}
    box_b: dict[str, Any] = {**_box_json(comparison.box_b), "area": comparison.area_b}
    # A polygon side keeps its bounding box in x1..y2 and adds its points.
    for side, polygon in ((box_a, sides.a if sides else None), (box_b, sides.b if sides else None)):
        if polygon is not None:
            side["points"] = [list(point) for point in polygon.points]
    return {
        "vocmatch": __version__,
        "mode": "boxes",
        "box_a": box_a,
        "box_b": box_b,
        "intersection_box": None if inter_box is None else _box_json(inter_box),
        "intersection": comparison.intersection,
        "union": comparison.union,
        "enclosing": comparison.enclosing,
        "iou": comparison.iou,
        "iou_percent": comparison.iou * 100.0,
        "giou": comparison.giou,
        "dice": comparison.dice,
        "dice_from_iou": comparison.dice_from_iou,
        "dice_agree": comparison.dice_agree,
        "relation": comparison.relation,
        "threshold": comparison.threshold,
        "inclusive": True,
        "pixel_inclusive": comparison.pixel_inclusive,
        "match": comparison.matched,
        "sweep": [
            {
                "threshold": v.sweep.threshold,
                "convention": v.sweep.convention,
                "match": v.matched,
            }
            for v in comparison.sweep
        ],
    }


def to_json(comparison: BoxComparison | LabelComparison) -> str:
    """:func:`to_json_dict` as indented JSON text, ending in a newline."""
    return json.dumps(to_json_dict(comparison), indent=2, allow_nan=False) + "\n"

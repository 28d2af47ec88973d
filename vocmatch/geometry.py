"""Exact overlap of regions of any shape: boxes, rotated boxes and polygons (numpy and shapely).

A plain :class:`~vocmatch.model.Box` is its rectangle, a :class:`~vocmatch.model.RotatedBox`
the polygon of its four corners, a :class:`~vocmatch.model.Polygon` its ring. Intersections
are exact polygon clipping, done by GEOS through shapely 2's vectorised functions; areas are
continuous (the VOC devkit's ``+ 1`` pixel widths have no meaning for a polygon).

Every matrix is ``(N_gt, M_pred)``, also when either side is empty. A region of zero area
(a box with ``x1 == x2``, a rotated box with ``w == 0``) overlaps nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.model import Box, Point, Polygon, RotatedBox

__all__ = [
    "PairOverlap",
    "Region",
    "pair_overlap",
    "points_inside",
    "polygon_problem",
    "shape_areas",
    "shape_iou_matrix",
    "to_polygon",
]

#: Anything with an area: a box (plain or carrying a shape), a rotated box or a polygon.
Region = Box | Polygon | RotatedBox

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

# GEOS's reason for an invalid polygon: "Self-intersection[5 5]", "Ring Self-intersection[..]".
_REASON = re.compile(r"^(?P<what>[^\[]+)\[(?P<x>\S+) (?P<y>\S+)\]$")


def _shape(region: Region) -> Polygon | RotatedBox | None:
    return region.shape if isinstance(region, Box) else region


def to_polygon(region: Region) -> Any:
    """The region as a shapely polygon.

    Args:
        region: A plain box (its rectangle), a box carrying a shape, a rotated box (its four
            corners) or a polygon.

    Returns:
        A ``shapely.Polygon``; not checked for validity.

    >>> to_polygon(RotatedBox(5.0, 5.0, 4.0, 2.0, 0.0)).bounds
    (3.0, 4.0, 7.0, 6.0)
    """
    import shapely  # imported on first use: only shapes need it

    shape = _shape(region)
    if isinstance(shape, RotatedBox):
        return shapely.Polygon(shape.corners)
    if isinstance(shape, Polygon):
        return shapely.Polygon(shape.points)
    if isinstance(region, Box):
        return shapely.box(region.x1, region.y1, region.x2, region.y2)
    raise TypeError(f"Expected a Box, RotatedBox or Polygon, got {type(region).__name__}")


def _geometries(regions: Sequence[Region]) -> npt.NDArray[np.object_]:
    out = np.empty(len(regions), dtype=object)
    out[:] = [to_polygon(r) for r in regions]
    return out


def _number(text: str) -> str:
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def _problem(geometry: Any) -> str | None:
    """Why a shapely polygon is not a valid region, or None when it is."""
    import shapely  # imported on first use: only shapes need it

    if bool(shapely.is_valid(geometry)):
        return None
    reason = str(shapely.is_valid_reason(geometry))
    found = _REASON.match(reason)
    if found is None:
        return f"is not a valid polygon: {reason}"
    what = found.group("what").strip()
    where = f"({_number(found.group('x'))}, {_number(found.group('y'))})"
    if what.endswith("Self-intersection"):
        return f"is self-intersecting at {where}"
    return f"is not a valid polygon: {what.lower()} at {where}"


def polygon_problem(points: Sequence[Point]) -> str | None:
    """What makes a list of points unusable as a polygon, or None when it is a valid one.

    A valid polygon has at least three distinct points, a non-zero area, and edges that meet
    only at their shared ends (no self-intersection, no ring touching itself).

    Args:
        points: The vertices in order; the ring closes by itself.

    Returns:
        A phrase that completes a sentence about the polygon (``"is self-intersecting at
        (1, 1)"``), or None.

    >>> polygon_problem([(0, 0), (2, 2), (2, 0), (0, 2)])
    'is self-intersecting at (1, 1)'
    >>> polygon_problem([(0, 0), (4, 0), (0, 3)]) is None
    True
    """
    import shapely  # imported on first use: only shapes need it

    distinct = len(set(points))
    if distinct < 3:
        plural = "point" if distinct == 1 else "points"
        return f"has {distinct} distinct {plural}; a polygon needs at least 3"
    geometry = shapely.Polygon(points)
    if float(shapely.area(shapely.convex_hull(geometry))) == 0.0:
        return "has zero area: its points lie on one line"
    return _problem(geometry)


def _check(regions: Sequence[Region], name: str) -> None:
    # Boxes and rotated boxes are always valid (a zero-area one overlaps nothing); a polygon
    # built by hand may not be.
    for i, region in enumerate(regions):
        shape = _shape(region)
        if isinstance(shape, Polygon):
            problem = polygon_problem(shape.points)
            if problem is not None:
                raise ValueError(f"Expected valid regions in `{name}`, but {name}[{i}] {problem}")


def shape_areas(regions: Sequence[Region]) -> FloatArray:
    """The area of each region, continuous (``x2 - x1`` widths for a plain box).

    >>> shape_areas([Box("a", 0, 0, 2, 3), Polygon(((0, 0), (4, 0), (0, 3)))]).tolist()
    [6.0, 6.0]
    """
    import shapely  # imported on first use: only shapes need it

    if not regions:
        return np.zeros(0, dtype=np.float64)
    return np.asarray(shapely.area(_geometries(regions)), dtype=np.float64)


def shape_iou_matrix(
    gt_boxes: Sequence[Region],
    pred_boxes: Sequence[Region],
    gt_crowd: npt.ArrayLike | None = None,
) -> FloatArray:
    """Pairwise intersection over union of regions of any shape.

    Only pairs whose bounding boxes meet are clipped (an STR tree finds them). Rounding in
    the clipping never lets an intersection exceed the smaller of the two areas, so the IoU
    stays in [0, 1].

    Args:
        gt_boxes: ``N`` ground-truth regions.
        pred_boxes: ``M`` predicted regions.
        gt_crowd: ``(N,)`` booleans; a crowd region is scored by intersection over the
            prediction's area (pycocotools' ``iscrowd``), as in
            :func:`vocmatch.iou.crowd_iou_matrix`.

    Returns:
        ``(N, M)`` IoU in [0, 1]; 0.0 where the union is 0.

    Raises:
        ValueError: A polygon is not valid (see :func:`polygon_problem`).

    >>> triangle = Polygon(((0, 0), (4, 0), (0, 4)))
    >>> shape_iou_matrix([Box("a", 0, 0, 2, 2)], [triangle]).tolist()
    [[0.5]]
    """
    import shapely  # imported on first use: only shapes need it

    n, m = len(gt_boxes), len(pred_boxes)
    if n == 0 or m == 0:
        return np.zeros((n, m), dtype=np.float64)
    _check(gt_boxes, "gt_boxes")
    _check(pred_boxes, "pred_boxes")
    gt = _geometries(gt_boxes)
    pred = _geometries(pred_boxes)
    gt_area = np.asarray(shapely.area(gt), dtype=np.float64)
    pred_area = np.asarray(shapely.area(pred), dtype=np.float64)
    gt_index, pred_index = np.asarray(shapely.STRtree(pred).query(gt), dtype=np.int64)
    live = (gt_area[gt_index] > 0) & (pred_area[pred_index] > 0)
    gt_index, pred_index = gt_index[live], pred_index[live]
    inter = np.zeros((n, m), dtype=np.float64)
    if gt_index.size:
        clipped = shapely.intersection(gt[gt_index], pred[pred_index])
        inter[gt_index, pred_index] = np.asarray(shapely.area(clipped), dtype=np.float64)
    inter = np.minimum(inter, np.minimum(gt_area[:, None], pred_area[None, :]))
    union = gt_area[:, None] + pred_area[None, :] - inter
    if gt_crowd is not None:
        crowd = np.asarray(gt_crowd, dtype=bool).reshape(-1)
        union = np.where(crowd[:, None], pred_area[None, :], union)
    out = np.zeros_like(inter)
    np.divide(inter, union, out=out, where=union > 0)
    return out


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


def _solid(geometry: Any) -> Any:
    import shapely  # imported on first use: only shapes need it

    # A region of zero area is the line or point it covers, which shapely's predicates
    # handle; the collapsed polygon itself is not valid.
    return geometry if float(shapely.area(geometry)) > 0 else shapely.convex_hull(geometry)


def pair_overlap(a: Region, b: Region) -> PairOverlap:
    """Areas, intersection and relation of two regions.

    Args:
        a: Region A.
        b: Region B.

    Returns:
        The overlap.

    Raises:
        ValueError: A polygon is not valid (see :func:`polygon_problem`).

    >>> result = pair_overlap(Polygon(((0, 0), (4, 0), (0, 4))), Box("b", 0, 0, 2, 2))
    >>> result.intersection, result.relation
    (4.0, 'B inside A')
    """
    import shapely  # imported on first use: only shapes need it

    _check([a, b], "regions")
    geometries = _geometries([a, b])
    areas = np.asarray(shapely.area(geometries), dtype=np.float64)
    region_a, region_b = _solid(geometries[0]), _solid(geometries[1])
    meet = shapely.intersection(region_a, region_b)
    inter = min(float(shapely.area(meet)), float(areas.min()))
    bounds: tuple[float, float, float, float] | None = None
    if not bool(shapely.is_empty(meet)):
        x1, y1, x2, y2 = (float(v) for v in shapely.bounds(meet))
        bounds = (x1, y1, x2, y2)
    if bool(shapely.equals(region_a, region_b)):
        relation = "identical"
    elif bool(shapely.covers(region_b, region_a)):
        relation = "A inside B"
    elif bool(shapely.covers(region_a, region_b)):
        relation = "B inside A"
    elif inter > 0:
        relation = "overlapping"
    elif bounds is not None:
        relation = "touching"
    else:
        relation = "disjoint"
    return PairOverlap(float(areas[0]), float(areas[1]), inter, bounds, relation)


def points_inside(region: Region, xs: npt.ArrayLike, ys: npt.ArrayLike) -> BoolArray:
    """Whether each point ``(xs[i], ys[i])`` lies in the region, its boundary included.

    >>> points_inside(Polygon(((0, 0), (4, 0), (0, 4))), [1, 3], [1, 3]).tolist()
    [True, False]
    """
    import shapely  # imported on first use: only shapes need it

    geometry = _solid(to_polygon(region))
    x = np.asarray(xs, dtype=np.float64)
    y = np.asarray(ys, dtype=np.float64)
    return np.asarray(shapely.intersects_xy(geometry, x, y), dtype=bool)

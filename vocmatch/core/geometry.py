"""Exact overlap of regions of any shape: boxes, rotated boxes and polygons (numpy and shapely).

A plain :class:`~vocmatch.core.model.Box` is its rectangle, a
:class:`~vocmatch.core.model.RotatedBox` the polygon of its four corners, a
:class:`~vocmatch.core.model.Polygon` its ring. Intersections are exact polygon clipping, done
by GEOS through shapely 2's vectorised functions; areas are continuous (the VOC devkit's ``+ 1``
pixel widths have no meaning for a polygon).

Every matrix is ``(N_gt, M_pred)``, also when either side is empty. A region of zero area
(a box with ``x1 == x2``, a rotated box with ``w == 0``) overlaps nothing.

This module measures regions (areas and intersections); the IoU they make is
:func:`vocmatch.core.iou.iou_from_intersection`, the same expression as for boxes. The evaluator
scores lists of pairs (:class:`Regions`, :func:`pair_region_intersection`), and
:func:`shape_iou_matrix` is the all-pairs case of the same functions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.iou import iou_from_intersection
from vocmatch.core.model import Box, Point, Polygon, RotatedBox
from vocmatch.lazy import lazy_attribute

if TYPE_CHECKING:
    from vocmatch.core.overlap_record import PairOverlap as PairOverlap

__all__ = [
    "BoxTree",
    "PairOverlap",
    "Region",
    "Regions",
    "overlapping_pairs",
    "pair_iou_bound",
    "pair_overlap",
    "pair_region_intersection",
    "pairs_meeting",
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


#: Pairs clipped per call to GEOS: an intersection is a new polygon, so a bounded number of
#: them is alive at once however many pairs are scored.
_CLIP_CHUNK = 1 << 15

#: Threads clipping at once (GEOS releases the GIL while it clips).
_CLIP_THREADS = min(8, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class Regions:
    """Regions as GEOS geometries with their areas and bounds, built once and indexed by the
    pairs that are scored (:func:`pair_region_intersection`).

    Attributes:
        geometries: ``(N,)`` shapely polygons.
        areas: ``(N,)`` exact areas.
        bounds: ``(N, 4)`` ``x1, y1, x2, y2`` of each geometry.
    """

    geometries: npt.NDArray[np.object_]
    areas: FloatArray
    bounds: FloatArray

    @classmethod
    def of(
        cls,
        boxes: npt.ArrayLike,
        shapes: Sequence[tuple[int, Polygon | RotatedBox]] = (),
        name: str = "regions",
    ) -> Regions:
        """The regions of ``N`` objects: each row of ``boxes`` is a plain box, except the rows
        listed in ``shapes`` (``(row, shape)``), which are that shape.

        Built exactly as :func:`to_polygon` builds each one, so a region has the same
        geometry, area and intersections whichever way it was made.

        Args:
            boxes: ``(N, 4)`` corner boxes.
            shapes: ``(row, shape)`` for the rows that are a rotated box or a polygon.
            name: What the regions are, for the error message.

        Raises:
            ValueError: A polygon is not valid (see :func:`polygon_problem`).

        >>> Regions.of([[0, 0, 2, 2], [0, 0, 4, 4]], [(1, Polygon(((0, 0), (4, 0), (0, 4))))]).areas
        array([4., 8.])
        """
        import shapely  # imported on first use: only shapes need it

        corners = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        geometries = np.asarray(
            shapely.box(corners[:, 0], corners[:, 1], corners[:, 2], corners[:, 3]), dtype=object
        ).reshape(-1)
        if shapes:
            rows = [row for row, _ in shapes]
            rings = [
                shape.corners if isinstance(shape, RotatedBox) else shape.points
                for _, shape in shapes
            ]
            for row, (_, shape) in zip(rows, shapes, strict=True):
                if isinstance(shape, Polygon) and len(shape.points) < 3:
                    _check([shape], name, [row])  # too few points to make a ring
            # All shapes in one call: the same rings as to_polygon builds one by one (the
            # same coordinates, closed the same way), so the same geometries.
            coordinates = np.array([point for ring in rings for point in ring], dtype=np.float64)
            ring_of = np.repeat(np.arange(len(rings)), [len(ring) for ring in rings])
            polygons = shapely.polygons(shapely.linearrings(coordinates, indices=ring_of))
            # Files are checked by the parser; a polygon built by hand may be invalid. The
            # reason is worked out only for those that fail the quick test.
            suspect = ~np.asarray(shapely.is_valid(polygons), dtype=bool)
            suspect |= np.asarray(shapely.area(polygons), dtype=np.float64) <= 0
            for k in np.flatnonzero(suspect).tolist():
                shape = shapes[k][1]
                if isinstance(shape, Polygon):
                    _check([shape], name, [rows[k]])
            geometries[rows] = polygons
        areas = np.asarray(shapely.area(geometries), dtype=np.float64).reshape(-1)
        bounds = np.asarray(shapely.bounds(geometries), dtype=np.float64).reshape(-1, 4)
        return cls(geometries, areas, bounds)

    @classmethod
    def of_regions(cls, regions: Sequence[Region], name: str = "regions") -> Regions:
        """The regions of a list of boxes, rotated boxes and polygons.

        Raises:
            ValueError: A polygon is not valid (see :func:`polygon_problem`).
        """
        boxes = np.zeros((len(regions), 4), dtype=np.float64)
        shapes = [
            (row, shape)
            for row, region in enumerate(regions)
            if (shape := _shape(region)) is not None
        ]
        for row, region in enumerate(regions):
            if isinstance(region, Box) and region.shape is None:
                boxes[row] = (region.x1, region.y1, region.x2, region.y2)
        return cls.of(boxes, shapes, name)


def pair_region_intersection(
    gt: Regions, gt_index: npt.ArrayLike, pred: Regions, pred_index: npt.ArrayLike
) -> FloatArray:
    """Exact intersection area of each pair ``(gt[gt_index[i]], pred[pred_index[i]])``.

    Only pairs whose bounding boxes meet are clipped; a region of zero area overlaps nothing.
    Rounding in the clipping never lets an intersection exceed the smaller of the two areas,
    so the IoU made from it (:func:`vocmatch.core.iou.iou_from_intersection`) stays in [0, 1].

    Args:
        gt: The ground-truth regions.
        gt_index: ``(P,)`` index into ``gt`` of each pair.
        pred: The predicted regions.
        pred_index: ``(P,)`` index into ``pred`` of each pair.

    Returns:
        ``(P,)`` intersection areas.

    >>> square = Regions.of([[0, 0, 2, 2]])
    >>> triangle = Regions.of([[0, 0, 4, 4]], [(0, Polygon(((0, 0), (4, 0), (0, 4))))])
    >>> pair_region_intersection(square, [0], triangle, [0]).tolist()
    [4.0]
    """
    import shapely  # imported on first use: only shapes need it

    g = np.asarray(gt_index, dtype=np.int64).reshape(-1)
    p = np.asarray(pred_index, dtype=np.int64).reshape(-1)
    gt_area, pred_area = gt.areas[g], pred.areas[p]
    live = np.flatnonzero(pairs_meeting(gt, g, pred, p))
    inter = np.zeros(g.size, dtype=np.float64)

    def clip(start: int) -> None:
        rows = live[start : start + _CLIP_CHUNK]
        # GEOS's robust clipping divides by lengths that underflow to 0 on subnormal
        # coordinates (1e-309); it still returns the intersection, clamped below.
        with np.errstate(all="ignore"):
            clipped = shapely.intersection(gt.geometries[g[rows]], pred.geometries[p[rows]])
        inter[rows] = np.asarray(shapely.area(clipped), dtype=np.float64)

    starts = range(0, live.size, _CLIP_CHUNK)
    if len(starts) > 1 and _CLIP_THREADS > 1:
        # GEOS runs without the GIL: chunks clip on every core (each writes its own rows).
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(_CLIP_THREADS, len(starts))) as pool:
            list(pool.map(clip, starts))
    else:
        for start in starts:
            clip(start)
    return np.minimum(inter, np.minimum(gt_area, pred_area))


def pairs_meeting(
    gt: Regions, gt_index: npt.ArrayLike, pred: Regions, pred_index: npt.ArrayLike
) -> BoolArray:
    """Which pairs ``(gt[gt_index[i]], pred[pred_index[i]])`` :func:`pair_region_intersection`
    clips: both areas positive and the bounding boxes meet (touching included, as an STR
    tree's query finds them). Every other pair has intersection 0.

    Returns:
        ``(P,)`` booleans.

    >>> square = Regions.of([[0, 0, 2, 2]])
    >>> pairs_meeting(square, [0, 0], Regions.of([[2, 0, 3, 1], [3, 0, 4, 1]]), [0, 1]).tolist()
    [True, False]
    """
    g = np.asarray(gt_index, dtype=np.int64).reshape(-1)
    p = np.asarray(pred_index, dtype=np.int64).reshape(-1)
    gb, pb = gt.bounds[g], pred.bounds[p]
    return np.asarray(
        (gt.areas[g] > 0)
        & (pred.areas[p] > 0)
        & (gb[:, 0] <= pb[:, 2])
        & (pb[:, 0] <= gb[:, 2])
        & (gb[:, 1] <= pb[:, 3])
        & (pb[:, 1] <= gb[:, 3]),
        dtype=bool,
    )


#: Slack added to the width and height of two bounding boxes' intersection, relative to the
#: largest coordinate of the pair: GEOS places the vertices of an intersection within a few
#: units in the last place of the coordinates, which could take its area a hair beyond the
#: boxes' intersection. Some million times more than that, and still nothing next to any
#: shape's size on an image.
_BOUND_SLACK = 1e-9


def pair_iou_bound(
    gt: Regions,
    gt_index: npt.ArrayLike,
    pred: Regions,
    pred_index: npt.ArrayLike,
    gt_crowd: npt.ArrayLike | None = None,
) -> FloatArray:
    """An upper bound of each pair's IoU, from the regions' areas and bounding boxes alone
    (no clipping).

    The two regions' intersection lies inside their bounding boxes' intersection (area
    ``I``) and inside each region, so its area is at most ``min(I, A, B)``; the bound is the
    IoU that intersection would give, ``min(I, A, B) / (A + B - min(I, A, B))``, through
    :func:`vocmatch.core.iou.iou_from_intersection`, the expression every IoU is computed
    with. It is at most ``I / (A + B - I)`` and at most ``min(A, B) / max(A, B)``. ``I`` is
    taken with a slack far beyond GEOS's rounding of the clipped vertices, and the same
    expression is monotone in the intersection under rounding, so the IoU
    :func:`pair_region_intersection` and ``iou_from_intersection`` give a pair is never above
    its bound.

    Args:
        gt: The ground-truth regions.
        gt_index: ``(P,)`` index into ``gt`` of each pair.
        pred: The predicted regions.
        pred_index: ``(P,)`` index into ``pred`` of each pair.
        gt_crowd: ``(P,)`` the pair's ground truth is a crowd region (IoU is then the
            intersection over the prediction's area); None for none.

    Returns:
        ``(P,)`` bounds in [0, 1]; 0.0 where the IoU is 0 (a region of zero area).

    >>> square = Regions.of([[0, 0, 4, 4]])
    >>> small = Regions.of([[3, 3, 5, 5], [0, 0, 1, 1]])
    >>> pair_iou_bound(square, [0, 0], small, [0, 1]).round(6).tolist()
    [0.052632, 0.0625]
    """
    g = np.asarray(gt_index, dtype=np.int64).reshape(-1)
    p = np.asarray(pred_index, dtype=np.int64).reshape(-1)
    gt_area, pred_area = gt.areas[g], pred.areas[p]
    gb, pb = gt.bounds[g], pred.bounds[p]
    slack = _BOUND_SLACK * np.maximum(np.abs(gb).max(axis=1), np.abs(pb).max(axis=1))
    width = np.minimum(gb[:, 2], pb[:, 2]) - np.maximum(gb[:, 0], pb[:, 0]) + slack
    height = np.minimum(gb[:, 3], pb[:, 3]) - np.maximum(gb[:, 1], pb[:, 1]) + slack
    boxes = np.maximum(width, 0.0) * np.maximum(height, 0.0)
    most = np.minimum(boxes, np.minimum(gt_area, pred_area))
    crowd = None if gt_crowd is None else np.asarray(gt_crowd, dtype=bool).reshape(-1)
    return iou_from_intersection(most, gt_area, pred_area, crowd)


class BoxTree:
    """An STR tree over boxes, to find the boxes that meet others without trying every pair.

    Args:
        boxes: ``(N, 4)`` corner boxes.
        margin: Grow every box's ``x2`` and ``y2`` by this much, here and in :meth:`query`
            (1 for the VOC devkit's ``+ 1`` pixel widths, under which boxes less than a pixel
            apart overlap).
    """

    def __init__(self, boxes: npt.ArrayLike, margin: float = 0.0) -> None:
        import shapely  # imported on first use: a large image-class needs it

        corners = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        self._margin = margin
        self._size = corners.shape[0]
        self._tree = shapely.STRtree(_rectangles(corners, margin))

    def query(self, boxes: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The pairs of a tree box and one of ``boxes`` whose rectangles meet, touching
        included.

        Returns:
            ``(tree_index, box_index)``, sorted by box, then tree box. Every pair with a
            positive intersection is among them.
        """
        corners = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        if self._size == 0 or corners.shape[0] == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty.copy()
        found = self._tree.query(_rectangles(corners, self._margin))
        box_index, tree_index = np.asarray(found, dtype=np.int64)
        order = np.lexsort((tree_index, box_index))
        return tree_index[order], box_index[order]


def _rectangles(corners: FloatArray, margin: float) -> npt.NDArray[np.object_]:
    import shapely  # imported on first use: a large image-class needs it

    # A degenerate box (zero width) is a line or a point to GEOS; its envelope still is the
    # rectangle, which is what the tree compares.
    return np.asarray(
        shapely.box(corners[:, 0], corners[:, 1], corners[:, 2] + margin, corners[:, 3] + margin),
        dtype=object,
    ).reshape(-1)


def overlapping_pairs(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, margin: float = 0.0
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The pairs of boxes whose rectangles meet, touching included (:class:`BoxTree`).

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.
        margin: Grow every box's ``x2`` and ``y2`` by this much first.

    Returns:
        ``(gt_index, pred_index)``, sorted by prediction, then ground truth. Every pair with
        a positive intersection is among them.

    >>> overlapping_pairs([[0, 0, 2, 2], [5, 5, 6, 6]], [[1, 1, 3, 3], [2, 0, 4, 2]])
    (array([0, 0]), array([0, 1]))
    """
    return BoxTree(gt_boxes, margin).query(pred_boxes)


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


def _check(regions: Sequence[Region], name: str, rows: Sequence[int] | None = None) -> None:
    # Boxes and rotated boxes are always valid (a zero-area one overlaps nothing); a polygon
    # built by hand may not be.
    for k, region in enumerate(regions):
        i = k if rows is None else rows[k]
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
    if not regions:
        return np.zeros(0, dtype=np.float64)
    return Regions.of_regions(regions).areas


def shape_iou_matrix(
    gt_boxes: Sequence[Region],
    pred_boxes: Sequence[Region],
    gt_crowd: npt.ArrayLike | None = None,
) -> FloatArray:
    """Pairwise intersection over union of regions of any shape.

    Every pair is scored by :func:`pair_region_intersection` and
    :func:`vocmatch.core.iou.iou_from_intersection`, as the evaluator scores the pairs it lists.

    Args:
        gt_boxes: ``N`` ground-truth regions.
        pred_boxes: ``M`` predicted regions.
        gt_crowd: ``(N,)`` booleans; a crowd region is scored by intersection over the
            prediction's area (pycocotools' ``iscrowd``), as in
            :func:`vocmatch.core.iou.crowd_iou_matrix`.

    Returns:
        ``(N, M)`` IoU in [0, 1]; 0.0 where the union is 0.

    Raises:
        ValueError: A polygon is not valid (see :func:`polygon_problem`).

    >>> triangle = Polygon(((0, 0), (4, 0), (0, 4)))
    >>> shape_iou_matrix([Box("a", 0, 0, 2, 2)], [triangle]).tolist()
    [[0.5]]
    """
    n, m = len(gt_boxes), len(pred_boxes)
    if n == 0 or m == 0:
        return np.zeros((n, m), dtype=np.float64)
    gt = Regions.of_regions(gt_boxes, "gt_boxes")
    pred = Regions.of_regions(pred_boxes, "pred_boxes")
    gt_index, pred_index = np.divmod(np.arange(n * m), m)
    inter = pair_region_intersection(gt, gt_index, pred, pred_index).reshape(n, m)
    crowd = None if gt_crowd is None else np.asarray(gt_crowd, dtype=bool).reshape(-1)[:, None]
    return iou_from_intersection(inter, gt.areas[:, None], pred.areas[None, :], crowd)


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

    from vocmatch.core.overlap_record import PairOverlap

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


def __getattr__(name: str) -> Any:
    """:class:`~vocmatch.core.overlap_record.PairOverlap`, imported from its module on first
    use (PEP 562): only :func:`pair_overlap` builds one."""
    return lazy_attribute(__name__, {"PairOverlap": "vocmatch.core.overlap_record"}, name)

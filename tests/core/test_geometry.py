"""Region overlap of boxes, rotated boxes and polygons against hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocmatch.core.geometry import (
    Regions,
    overlapping_pairs,
    pair_iou_bound,
    pair_overlap,
    pair_region_intersection,
    pairs_meeting,
    points_inside,
    polygon_problem,
    shape_areas,
    shape_iou_matrix,
    to_polygon,
)
from vocmatch.core.iou import iou_from_intersection, iou_matrix
from vocmatch.core.model import Box, Polygon, RotatedBox

TRIANGLE = Polygon(((0.0, 0.0), (4.0, 0.0), (0.0, 4.0)))


def box(x1: float, y1: float, x2: float, y2: float) -> Box:
    return Box("a", x1, y1, x2, y2)


def test_rotated_box_at_zero_is_its_axis_aligned_box() -> None:
    """At 0 rad the corners are cx ± w/2, cy ± h/2, and the IoU is iou_matrix's, bit for bit."""
    rotated = RotatedBox(100.0, 100.0, 80.0, 40.0, 0.0)
    assert rotated.corners == ((60.0, 80.0), (140.0, 80.0), (140.0, 120.0), (60.0, 120.0))
    assert rotated.bounds == (60.0, 80.0, 140.0, 120.0)
    shaped = Box("car", *rotated.bounds, shape=rotated)
    others = [box(60, 80, 140, 120), box(80, 90, 160, 130), box(0, 0, 10, 10)]
    expected = iou_matrix([[60, 80, 140, 120]], [[b.x1, b.y1, b.x2, b.y2] for b in others])
    assert shape_iou_matrix([shaped], others).tolist() == expected.tolist()
    assert shape_iou_matrix([shaped], others).tolist() == [[1.0, 1800 / 4600, 0.0]]


def test_rotation_turns_clockwise_on_screen() -> None:
    """roLabelImg's convention: with y pointing down, a positive angle turns clockwise, so at
    pi/2 the top-right corner of a 4 x 2 box about (10, 10) moves to the bottom right."""
    corners = RotatedBox(10.0, 10.0, 4.0, 2.0, math.pi / 2).corners
    expected = ((11.0, 8.0), (11.0, 12.0), (9.0, 12.0), (9.0, 8.0))
    for corner, want in zip(corners, expected, strict=True):
        assert corner == pytest.approx(want, abs=1e-12)


def test_quarter_turn_swaps_width_and_height() -> None:
    """A w x h box turned by pi/2 is the h x w box about the same centre."""
    turned = RotatedBox(50.0, 30.0, 40.0, 10.0, math.pi / 2)
    assert shape_iou_matrix([turned], [box(45, 10, 55, 50)])[0, 0] == pytest.approx(1.0)
    assert shape_iou_matrix([turned], [box(30, 25, 70, 35)])[0, 0] == pytest.approx(
        100 / (400 + 400 - 100)
    )


def test_eighth_turn_of_a_square() -> None:
    """A 2 x 2 square turned by pi/4 meets the unturned one in an octagon of area
    8 (sqrt 2 - 1): IoU 1 / sqrt 2."""
    turned = RotatedBox(0.0, 0.0, 2.0, 2.0, math.pi / 4)
    assert shape_areas([turned])[0] == pytest.approx(4.0)
    assert shape_iou_matrix([turned], [box(-1, -1, 1, 1)])[0, 0] == pytest.approx(1 / math.sqrt(2))


@pytest.mark.parametrize(
    ("polygon", "other", "iou"),
    [
        pytest.param(TRIANGLE, box(1, 1, 3, 3), 2 / (8 + 4 - 2), id="box-halved-by-hypotenuse"),
        pytest.param(
            Polygon(((0, 0), (6, 0), (0, 6))), box(0, 0, 4, 4), 14 / 20, id="box-corner-cut"
        ),
        pytest.param(TRIANGLE, box(0, 0, 4, 4), 8 / 16, id="triangle-in-its-bounding-box"),
        pytest.param(TRIANGLE, box(10, 10, 12, 12), 0.0, id="disjoint"),
        pytest.param(TRIANGLE, box(4, 0, 6, 2), 0.0, id="touching-corner"),
        pytest.param(TRIANGLE, box(2, 2, 4, 4), 0.0, id="touching-hypotenuse"),
        pytest.param(
            Polygon(((150, 250), (200, 300), (150, 350), (100, 300))),
            box(150, 250, 200, 350),
            2500 / 7500,
            id="diamond-right-half",
        ),
    ],
)
def test_polygon_versus_box(polygon: Polygon, other: Box, iou: float) -> None:
    """Hand-computed intersections over unions, on both sides."""
    assert shape_iou_matrix([polygon], [other])[0, 0] == pytest.approx(iou)
    assert shape_iou_matrix([other], [polygon])[0, 0] == pytest.approx(iou)


def test_polygon_versus_itself_is_one() -> None:
    """Identical regions have IoU 1, whatever order the points are written in."""
    pentagon = Polygon(((0, 0), (10, 0), (12, 6), (5, 11), (-2, 6)))
    reversed_pentagon = Polygon(tuple(reversed(pentagon.points)))
    assert shape_iou_matrix([pentagon], [pentagon, reversed_pentagon]).tolist() == [[1.0, 1.0]]


def test_crowd_is_intersection_over_prediction_area() -> None:
    """A crowd region scores a prediction by how much of the prediction it covers."""
    gt = [TRIANGLE, TRIANGLE]
    pred = [box(0, 0, 1, 1), box(1, 1, 3, 3)]
    assert shape_iou_matrix(gt, pred, [True, False]).tolist() == [
        [1.0, 0.5],
        [1 / 8, 0.2],
    ]


def test_empty_sides_and_zero_areas() -> None:
    """(N, M) also when empty; a zero-area region overlaps nothing and raises nothing."""
    assert shape_iou_matrix([TRIANGLE], []).shape == (1, 0)
    assert shape_iou_matrix([], [TRIANGLE, TRIANGLE]).shape == (0, 2)
    flat = RotatedBox(1.0, 1.0, 4.0, 0.0, 0.3)
    assert shape_iou_matrix([flat, box(1, 0, 1, 3)], [TRIANGLE, flat]).tolist() == [
        [0.0, 0.0],
        [0.0, 0.0],
    ]


def test_subnormal_coordinates_clip_without_a_warning() -> None:
    """GEOS divides by lengths that underflow on coordinates like 1e-309; the overlap is still
    measured, and no RuntimeWarning escapes (warnings are errors in the tests)."""
    iou = shape_iou_matrix([box(0, 2.225e-309, 2, 1)], [box(0, 0, 1, 4.0698125702782067e-230)])
    assert 0.0 <= iou[0, 0] <= 1e-229


def test_pairs_are_scored_as_the_matrix_scores_them() -> None:
    """A list of pairs gets the matrix's intersections, to the bit, whatever the order."""
    gt_regions = [TRIANGLE, box(1, 1, 3, 3), RotatedBox(2.0, 2.0, 3.0, 1.0, 0.7), box(9, 9, 9, 12)]
    pred_regions = [box(0, 0, 2, 2), Polygon(((1, 0), (4, 1), (2, 4))), box(-1, -1, 0, 0)]
    gt, pred = Regions.of_regions(gt_regions), Regions.of_regions(pred_regions)
    g = np.array([3, 0, 2, 1, 0, 2, 1, 0, 2, 1, 3, 3])
    p = np.array([0, 1, 0, 2, 0, 1, 1, 2, 2, 0, 1, 2])
    pairs = pair_region_intersection(gt, g, pred, p)
    matrix = shape_iou_matrix(gt_regions, pred_regions)
    assert pairs[7] == 0.0  # touching at a corner
    assert pairs[4] == 4.0  # the 2 x 2 box lies inside the triangle
    union = gt.areas[g] + pred.areas[p] - pairs
    assert (pairs / np.where(union > 0, union, 1)).tolist() == matrix[g, p].tolist()


def test_overlapping_pairs_finds_every_pair_that_meets() -> None:
    """The STR tree lists each pair whose rectangles meet (touching too), sorted by
    prediction; a margin of 1 adds pairs less than a pixel apart, as the devkit's +1 sees."""
    gt = [[0, 0, 10, 10], [20, 0, 30, 10], [20.5, 0, 22, 10]]
    pred = [[10, 0, 20, 10], [5, 5, 6, 6], [40, 40, 50, 50]]
    assert [a.tolist() for a in overlapping_pairs(gt, pred)] == [[0, 1, 0], [0, 0, 1]]
    assert [a.tolist() for a in overlapping_pairs(gt, pred, margin=1.0)] == [
        [0, 1, 2, 0],
        [0, 0, 0, 1],
    ]
    assert [a.size for a in overlapping_pairs([], pred)] == [0, 0]


@pytest.mark.parametrize(
    ("points", "problem"),
    [
        pytest.param((), "has 0 distinct points; a polygon needs at least 3", id="no-points"),
        pytest.param(
            ((0, 0), (1, 1)), "has 2 distinct points; a polygon needs at least 3", id="two"
        ),
        pytest.param(
            ((0, 0), (1, 1), (0, 0)),
            "has 2 distinct points; a polygon needs at least 3",
            id="repeat",
        ),
        pytest.param(
            ((0, 0), (1, 1), (2, 2)), "has zero area: its points lie on one line", id="line"
        ),
    ],
)
def test_polygons_built_by_hand_are_checked(
    points: tuple[tuple[float, float], ...], problem: str
) -> None:
    """Regions built from many shapes at once still name the one that is not a polygon."""
    with pytest.raises(ValueError, match=rf"^Expected valid regions in `pred_boxes`, but pred_boxes\[1\] {problem}$"):  # fmt: skip
        shape_iou_matrix([box(0, 0, 1, 1)], [TRIANGLE, Polygon(points)])


def test_invalid_region_is_refused() -> None:
    """A self-intersecting polygon given to the library directly is named in the error."""
    bow_tie = Polygon(((0, 0), (2, 2), (2, 0), (0, 2)))
    with pytest.raises(ValueError, match=r"^Expected valid regions in `pred_boxes`, but pred_boxes\[1\] is self-intersecting at \(1, 1\)$"):  # fmt: skip
        shape_iou_matrix([TRIANGLE], [TRIANGLE, bow_tie])


@pytest.mark.parametrize(
    ("points", "problem"),
    [
        pytest.param([(0, 0), (4, 0), (0, 3)], None, id="triangle"),
        pytest.param([(0, 0), (4, 0), (4, 3), (0, 0)], None, id="closing-point-repeated"),
        pytest.param([], "has 0 distinct points; a polygon needs at least 3", id="empty"),
        pytest.param([(1, 1)], "has 1 distinct point; a polygon needs at least 3", id="one"),
        pytest.param(
            [(0, 0), (4, 0), (0, 0)], "has 2 distinct points; a polygon needs at least 3", id="two"
        ),
        pytest.param(
            [(0, 0), (1, 1), (3, 3)], "has zero area: its points lie on one line", id="collinear"
        ),
        pytest.param(
            [(0, 0), (2, 2), (2, 0), (0, 2)], "is self-intersecting at (1, 1)", id="bow-tie"
        ),
        pytest.param(
            [(0, 0), (4, 0), (4, 4), (2, 0), (0, 4)],
            "is self-intersecting at (2, 0)",
            id="ring-touches-itself",
        ),
        pytest.param(
            [(0.5, 0.5), (2.5, 2.5), (2.5, 0.5), (0.5, 2.5)],
            "is self-intersecting at (1.5, 1.5)",
            id="fractional-crossing",
        ),
    ],
)
def test_polygon_problem(points: list[tuple[float, float]], problem: str | None) -> None:
    """Each reason a list of points is not a polygon, in words."""
    assert polygon_problem(points) == problem


@pytest.mark.parametrize(
    ("a", "b", "relation", "intersection", "bounds"),
    [
        pytest.param(TRIANGLE, box(1, 1, 3, 3), "overlapping", 2.0, (1, 1, 3, 3), id="overlap"),
        pytest.param(TRIANGLE, box(0, 0, 1, 1), "B inside A", 1.0, (0, 0, 1, 1), id="inside"),
        pytest.param(box(0, 0, 4, 4), TRIANGLE, "B inside A", 8.0, (0, 0, 4, 4), id="contains"),
        pytest.param(TRIANGLE, box(2, 2, 4, 4), "touching", 0.0, (2, 2, 2, 2), id="touch"),
        pytest.param(TRIANGLE, box(5, 5, 6, 6), "disjoint", 0.0, None, id="disjoint"),
        pytest.param(
            TRIANGLE,
            Polygon(((0, 4), (0, 0), (4, 0))),
            "identical",
            8.0,
            (0, 0, 4, 4),
            id="same-region-other-start",
        ),
    ],
)
def test_pair_overlap(
    a: Box | Polygon,
    b: Box | Polygon,
    relation: str,
    intersection: float,
    bounds: tuple[float, float, float, float] | None,
) -> None:
    """Areas, intersection, its bounding box and the relation of two regions."""
    result = pair_overlap(a, b)
    assert (result.relation, result.intersection, result.intersection_bounds) == (
        relation,
        intersection,
        bounds,
    )


def test_points_inside_counts_the_boundary() -> None:
    """Inside, on an edge and outside."""
    assert points_inside(TRIANGLE, [1, 2, 3], [1, 2, 3]).tolist() == [True, True, False]


def test_to_polygon_of_each_kind() -> None:
    """A plain box is its rectangle; a box carrying a shape is the shape."""
    assert to_polygon(box(0, 0, 2, 3)).area == 6.0
    shaped = Box("t", 0, 0, 4, 4, shape=TRIANGLE)
    assert to_polygon(shaped).area == 8.0
    with pytest.raises(TypeError, match="Expected a Box, RotatedBox or Polygon, got str"):
        to_polygon("box")  # type: ignore[arg-type]


coordinate = st.integers(-50, 150).map(float) | st.floats(-50, 150, allow_nan=False)
extent = st.integers(0, 80).map(float) | st.floats(0, 80, allow_nan=False)
plain_boxes = st.lists(
    st.tuples(coordinate, coordinate, extent, extent).map(
        lambda t: box(t[0], t[1], t[0] + t[2], t[1] + t[3])
    ),
    max_size=6,
)


def corners(boxes: list[Box]) -> list[list[float]]:
    return [[b.x1, b.y1, b.x2, b.y2] for b in boxes]


@given(plain_boxes, plain_boxes)
def test_plain_boxes_agree_with_iou_matrix(gt: list[Box], pred: list[Box]) -> None:
    """On plain boxes, exact clipping gives iou_matrix's numbers (to 1e-12), shape (N, M)."""
    region = shape_iou_matrix(gt, pred)
    assert region.shape == (len(gt), len(pred))
    np.testing.assert_allclose(region, iou_matrix(corners(gt), corners(pred)), rtol=0, atol=1e-12)


rotated_boxes = st.builds(
    RotatedBox,
    coordinate,
    coordinate,
    st.floats(0.5, 80),
    st.floats(0.5, 80),
    st.floats(-2 * math.pi, 2 * math.pi),
)
regions = st.lists(
    plain_boxes.map(lambda b: b[0] if b else TRIANGLE) | rotated_boxes | st.just(TRIANGLE),
    max_size=5,
)


@given(regions, regions)
def test_shape_iou_is_symmetric_and_bounded(
    gt: list[Box | RotatedBox | Polygon], pred: list[Box | RotatedBox | Polygon]
) -> None:
    """IoU(A, B) = IoU(B, A), in [0, 1], for any mix of boxes, rotated boxes and polygons."""
    forward = shape_iou_matrix(gt, pred)
    backward = shape_iou_matrix(pred, gt)
    assert forward.shape == (len(gt), len(pred))
    np.testing.assert_allclose(forward, backward.T, rtol=0, atol=1e-12)
    assert ((forward >= 0) & (forward <= 1)).all()


@given(rotated_boxes)
def test_rotated_box_area_is_w_times_h(rotated: RotatedBox) -> None:
    """Turning a box keeps its area."""
    assert shape_areas([rotated])[0] == pytest.approx(rotated.w * rotated.h, rel=1e-9)


@pytest.mark.parametrize(
    ("gt", "pred", "crowd", "bound"),
    [
        # Boxes meet in 2 x 2 = 4: at most 4 / (8 + 8 - 4), the triangles' IoU being 0.
        pytest.param(TRIANGLE, Polygon(((2, 2), (6, 2), (2, 6))), False, 4 / 12, id="corner"),
        # Inside its bounding box: min(A, B) / max(A, B) = 8 / 16, which is the IoU.
        pytest.param(box(0, 0, 4, 4), TRIANGLE, False, 8 / 16, id="area-ratio"),
        # A crowd region: intersection over the prediction's area, at most 1.
        pytest.param(box(0, 0, 4, 4), TRIANGLE, True, 1.0, id="crowd"),
        pytest.param(TRIANGLE, box(10, 10, 12, 12), False, 0.0, id="disjoint"),
        # Touching: 0 but for the slack kept against rounding.
        pytest.param(TRIANGLE, box(4, 0, 6, 2), False, 0.0, id="touching"),
        pytest.param(TRIANGLE, RotatedBox(1, 1, 2, 0, 0.3), False, 0.0, id="zero-area"),
    ],
)
def test_pair_iou_bound(
    gt: Box | Polygon | RotatedBox, pred: Box | Polygon | RotatedBox, crowd: bool, bound: float
) -> None:
    """min(I, A, B) / (A + B - min(I, A, B)), I the bounding boxes' intersection."""
    found = pair_iou_bound(Regions.of_regions([gt]), [0], Regions.of_regions([pred]), [0], [crowd])
    assert found[0] == pytest.approx(bound, rel=1e-6, abs=1e-8)


def test_pairs_meeting_are_the_pairs_clipped() -> None:
    """Positive areas and bounding boxes that meet, touching included."""
    gt = Regions.of_regions([TRIANGLE, RotatedBox(1, 1, 2, 0, 0.3)])
    pred = Regions.of_regions([box(4, 0, 6, 2), box(5, 0, 6, 2), box(0, 0, 1, 1)])
    g, p = np.divmod(np.arange(6), 3)
    assert pairs_meeting(gt, g, pred, p).tolist() == [True, False, True, False, False, False]


far = st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-1000, 1000).map(float)
coordinates = st.tuples(far, far, st.floats(1e-3, 1e4), st.floats(1e-3, 1e4))
shapes = st.tuples(coordinates, st.sampled_from(["box", "rotated", "half"]), st.floats(0, 7))


def region_of(
    drawn: tuple[tuple[float, float, float, float], str, float],
) -> Box | Polygon | RotatedBox:
    (x, y, w, h), kind, angle = drawn
    if kind == "box":
        return box(x, y, x + w, y + h)
    if kind == "rotated":
        return RotatedBox(x, y, w, h, angle)
    return Polygon(((x, y), (x + w, y), (x, y + h)))


@given(st.lists(shapes, min_size=1, max_size=4), st.lists(shapes, min_size=1, max_size=4))
def test_iou_never_exceeds_its_bound(
    gt_drawn: list[tuple[tuple[float, float, float, float], str, float]],
    pred_drawn: list[tuple[tuple[float, float, float, float], str, float]],
) -> None:
    """The IoU computed from the clipped intersection, plain and crowd, is at most the bound,
    with no margin, at any scale and offset."""
    gt = Regions.of_regions([region_of(d) for d in gt_drawn])
    pred = Regions.of_regions([region_of(d) for d in pred_drawn])
    g, p = np.divmod(np.arange(len(gt_drawn) * len(pred_drawn)), len(pred_drawn))
    inter = pair_region_intersection(gt, g, pred, p)
    for crowd in (np.zeros(g.size, dtype=bool), np.ones(g.size, dtype=bool)):
        iou = iou_from_intersection(inter, gt.areas[g], pred.areas[p], crowd)
        bound = pair_iou_bound(gt, g, pred, p, crowd)
        assert (iou <= bound).all()
        assert ((bound >= 0) & (bound <= 1)).all()

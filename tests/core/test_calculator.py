"""Tests of vocmatch.core.calculator: the numbers behind ``vocmatch iou``."""

from __future__ import annotations

import json
import math
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocmatch.core.calculator import (
    SWEEP,
    BoxComparison,
    BoxCorners,
    box_relation,
    compare_boxes,
    compare_labels,
    compare_regions,
    is_match,
    parse_box,
    parse_box_pair,
    parse_labels,
    parse_polygon,
    parse_region_pair,
    to_json,
    to_json_dict,
)
from vocmatch.core.iou import iou_matrix
from vocmatch.core.model import Polygon

OVERLAPPING = ((50.0, 50.0, 150.0, 150.0), (80.0, 80.0, 180.0, 180.0))
DISJOINT = ((0.0, 0.0, 10.0, 10.0), (20.0, 20.0, 30.0, 30.0))
NESTED = ((0.0, 0.0, 100.0, 100.0), (25.0, 25.0, 75.0, 75.0))


# parse_box


@pytest.mark.parametrize(
    ("text", "xywh", "expected"),
    [
        pytest.param("50,50,150,150", False, (50.0, 50.0, 150.0, 150.0), id="commas"),
        pytest.param("50 50 150 150", False, (50.0, 50.0, 150.0, 150.0), id="spaces"),
        pytest.param(" 50, 50 ,150,\t150 ", False, (50.0, 50.0, 150.0, 150.0), id="mixed"),
        pytest.param("-5,3,10,20", False, (-5.0, 3.0, 10.0, 20.0), id="negative"),
        pytest.param("-5.5,-3e1,.25,2.5E1", False, (-5.5, -30.0, 0.25, 25.0), id="floats"),
        pytest.param("10,20,5,8", True, (10.0, 20.0, 15.0, 28.0), id="xywh"),
        pytest.param("-5 3 10 20", True, (-5.0, 3.0, 5.0, 23.0), id="xywh-negative"),
        pytest.param("1.5,2.5,0.25,0", True, (1.5, 2.5, 1.75, 2.5), id="xywh-zero-height"),
        pytest.param("3,3,3,3", False, (3.0, 3.0, 3.0, 3.0), id="point"),
    ],
)
def test_parse_box_reads_four_numbers(text: str, xywh: bool, expected: BoxCorners) -> None:
    """Commas or spaces separate the numbers; x,y,w,h is turned into corners."""
    assert parse_box(text, xywh) == expected


@pytest.mark.parametrize(
    ("text", "xywh", "message"),
    [
        pytest.param("50,50,150", False, "expected 4 numbers (x1,y1,x2,y2), got 3: '50,50,150'", id="three"),
        pytest.param("1,2,3,4,5", True, "expected 4 numbers (x,y,w,h), got 5: '1,2,3,4,5'", id="five-xywh"),
        pytest.param("", False, "expected 4 numbers (x1,y1,x2,y2), got 0: ''", id="empty"),
        pytest.param("50,a,150,150", False, "'a' is not a number: '50,a,150,150'", id="letter"),
        pytest.param("1,2,nan,4", False, "'nan' is not a finite number: '1,2,nan,4'", id="nan"),
        pytest.param("1,2,inf,4", False, "'inf' is not a finite number: '1,2,inf,4'", id="inf"),
        pytest.param("20,0,10,10", False, "x2 (10) is less than x1 (20): '20,0,10,10'", id="x2<x1"),
        pytest.param("0,5,10,4.5", False, "y2 (4.5) is less than y1 (5): '0,5,10,4.5'", id="y2<y1"),
        pytest.param("0,0,-5,10", True, "width is negative (-5): '0,0,-5,10'", id="neg-width"),
        pytest.param("0,0,5,-1", True, "height is negative (-1): '0,0,5,-1'", id="neg-height"),
    ],
)  # fmt: skip
def test_parse_box_rejects_bad_text(text: str, xywh: bool, message: str) -> None:
    """Bad input is a ValueError with a one-line message that quotes the text."""
    with pytest.raises(ValueError) as info:
        parse_box(text, xywh)
    assert str(info.value) == message


def test_parse_box_pair_names_the_box_at_fault() -> None:
    """The message says which of the two boxes is wrong."""
    with pytest.raises(ValueError, match=r"^box B: x2 \(1\) is less than x1 \(2\): '2,0,1,1'$"):
        parse_box_pair(["0,0,1,1", "2,0,1,1"])


def test_parse_box_pair_reads_eight_loose_numbers() -> None:
    """Eight numbers typed without quotes are boxes A and B, four each."""
    assert parse_box_pair(["50", "50", "150", "150", "80,", "80,", "180,", "180"]) == OVERLAPPING


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="none"),
        pytest.param(["0,0,1,1"], id="one"),
        pytest.param(["0,0,1,1", "0,0,1,1", "0,0,1,1"], id="three-boxes"),
        pytest.param(["1", "2", "3", "4", "5", "6", "7"], id="seven-numbers"),
    ],
)
def test_parse_box_pair_wants_two_boxes(args: list[str]) -> None:
    """Anything but two boxes or eight numbers is refused with the argument count."""
    with pytest.raises(
        ValueError, match=rf"^expected two boxes A B \(x1,y1,x2,y2 each\), got {len(args)} argument"
    ):
        parse_box_pair(args)


# parse_labels


def test_parse_labels_normalises() -> None:
    """Labels are stripped, lower-cased, de-duplicated and sorted; only commas separate."""
    assert parse_labels(" Cat, dog,CAT,, traffic light ") == ("cat", "dog", "traffic light")


@pytest.mark.parametrize("text", [pytest.param("", id="empty"), pytest.param(" , ,", id="commas")])
def test_parse_labels_rejects_an_empty_set(text: str) -> None:
    """A set with no label left is an error."""
    with pytest.raises(ValueError, match=r"^no labels in "):
        parse_labels(text)


# compare_boxes: the worked examples


def test_overlapping_pair() -> None:
    """50,50,150,150 vs 80,80,180,180: I 4,900, U 15,100, IoU 0.3245, no match at 0.5."""
    result = compare_boxes(*OVERLAPPING)
    assert result.intersection == 4900.0
    assert result.union == 15100.0
    assert (result.area_a, result.area_b) == (10000.0, 10000.0)
    assert result.enclosing == 16900.0
    assert result.iou == pytest.approx(4900 / 15100, abs=1e-15)
    assert f"{result.iou:.4f}" == "0.3245"
    assert f"{result.iou * 100:.2f}%" == "32.45%"
    assert result.giou == pytest.approx(4900 / 15100 - 1800 / 16900, abs=1e-15)
    assert result.dice == pytest.approx(0.49, abs=1e-15)
    assert result.dice_from_iou == pytest.approx(0.49, abs=1e-15)
    assert result.dice_agree
    assert not result.matched
    assert result.relation == "overlapping"
    assert result.intersection_box == (80.0, 80.0, 150.0, 150.0)
    assert result.enclosing_box == (50.0, 50.0, 180.0, 180.0)
    assert [v.matched for v in result.sweep] == [False, False, False]


def test_disjoint_pair() -> None:
    """0,0,10,10 vs 20,20,30,30: IoU 0, Dice 0, GIoU -7/9, no match at any threshold."""
    result = compare_boxes(*DISJOINT)
    assert (result.intersection, result.union, result.enclosing) == (0.0, 200.0, 900.0)
    assert result.iou == 0.0
    assert result.dice == 0.0
    assert result.dice_from_iou == 0.0
    assert result.giou == pytest.approx(-7 / 9, abs=1e-15)
    assert result.intersection_box is None
    assert result.relation == "disjoint"
    assert not result.matched
    assert not any(v.matched for v in result.sweep)


def test_nested_pair() -> None:
    """A box inside another: IoU is the area ratio and GIoU equals IoU (C = U)."""
    result = compare_boxes(*NESTED)
    assert result.iou == 0.25
    assert result.giou == 0.25
    assert result.dice == pytest.approx(0.4, abs=1e-15)
    assert result.relation == "B inside A"
    assert result.intersection_box == NESTED[1]


def test_threshold_is_inclusive() -> None:
    """IoU exactly at the threshold is a match."""
    result = compare_boxes((0, 0, 2, 1), (0, 0, 1, 1), threshold=0.5)
    assert result.iou == 0.5
    assert result.matched
    assert [v.matched for v in result.sweep] == [True, False, False]
    assert is_match(0.75, 0.75)


def test_identical_boxes_match_everywhere() -> None:
    """A box compared with itself has IoU, GIoU and Dice 1 and matches at 0.95."""
    result = compare_boxes((1.5, 2.5, 9.5, 7.5), (1.5, 2.5, 9.5, 7.5), threshold=1.0)
    assert (result.iou, result.giou, result.dice) == (1.0, 1.0, 1.0)
    assert result.matched
    assert all(v.matched for v in result.sweep)
    assert result.relation == "identical"


def test_sweep_thresholds_and_conventions() -> None:
    """The sweep is 0.50, 0.75 and 0.95 with the convention each belongs to."""
    assert [(s.threshold, s.convention) for s in SWEEP] == [
        (0.5, "PASCAL VOC / COCO AP50"),
        (0.75, "COCO AP75, strict"),
        (0.95, "near-exact"),
    ]


@pytest.mark.parametrize(
    ("box_a", "box_b", "relation"),
    [
        pytest.param((0, 0, 10, 10), (10, 0, 20, 10), "touching", id="edge"),
        pytest.param((0, 0, 10, 10), (10, 10, 20, 20), "touching", id="corner"),
        pytest.param((0, 0, 10, 10), (10.5, 0, 20, 10), "disjoint", id="gap-x"),
        pytest.param((0, 0, 10, 10), (0, 11, 10, 20), "disjoint", id="gap-y"),
        pytest.param((25, 25, 75, 75), (0, 0, 100, 100), "A inside B", id="a-inside"),
        pytest.param((0, 0, 10, 10), (0, 0, 10, 5), "B inside A", id="shared-edges"),
        pytest.param((0, 0, 10, 10), (5, 5, 15, 15), "overlapping", id="overlap"),
        pytest.param((0, 0, 10, 10), (0, 0, 10, 10), "identical", id="identical"),
    ],
)
def test_box_relation(box_a: BoxCorners, box_b: BoxCorners, relation: str) -> None:
    """Shared edges touch, a gap is disjoint, containment may share edges."""
    assert box_relation(box_a, box_b) == relation


def test_touching_boxes_share_an_edge_of_zero_area() -> None:
    """Touching boxes have IoU 0 and a zero-width intersection box on the shared edge."""
    result = compare_boxes((0, 0, 10, 10), (10, 0, 20, 10))
    assert result.iou == 0.0
    assert result.intersection_box == (10.0, 0.0, 10.0, 10.0)
    assert result.giou == 0.0


@pytest.mark.parametrize(
    ("box_a", "box_b", "threshold", "message"),
    [
        pytest.param((0, 0, 1), (0, 0, 1, 1), 0.5, "box A: expected 4 numbers", id="three"),
        pytest.param((0, 0, 1, 1), (2, 0, 1, 1), 0.5, r"box B: x2 \(1\) is less", id="x2<x1"),
        pytest.param((0, 0, 1, math.nan), (0, 0, 1, 1), 0.5, "box A: y2 is not a finite", id="nan"),
        pytest.param((0, 0, 1, 1), (0, 0, 1, 1), 1.5, "threshold must be between 0 and 1", id="t"),
        pytest.param(
            (-1e300, 0, 1e300, 1e300), (0, 0, 1, 1), 0.5, "coordinates too large", id="big"
        ),
    ],
)
def test_compare_boxes_rejects_bad_input(
    box_a: tuple[float, ...], box_b: tuple[float, ...], threshold: float, message: str
) -> None:
    """compare_boxes validates what it is given, as parse_box does."""
    with pytest.raises(ValueError, match=f"^{message}"):
        compare_boxes(box_a, box_b, threshold)


def test_comparison_is_frozen() -> None:
    """Results are immutable records."""
    result = compare_boxes(*OVERLAPPING)
    with pytest.raises(FrozenInstanceError):
        result.iou = 1.0  # type: ignore[misc]


def test_dice_agree_flags_a_disagreement() -> None:
    """dice_agree is False when the two Dice values differ beyond rounding."""
    result = compare_boxes(*OVERLAPPING)
    fields = {name: getattr(result, name) for name in BoxComparison.__dataclass_fields__}
    assert not BoxComparison(**{**fields, "dice_from_iou": 0.5}).dice_agree
    assert BoxComparison(**{**fields, "dice_from_iou": 0.49 * (1 + 1e-14)}).dice_agree


# compare_labels


def test_label_example() -> None:
    """{cat, dog, bird} vs {dog, bird, fish}: Jaccard 2/4, Dice 4/6, a match at 0.5."""
    result = compare_labels(parse_labels("cat, dog, bird"), parse_labels("dog,bird,fish"))
    assert result.a == ("bird", "cat", "dog")
    assert result.b == ("bird", "dog", "fish")
    assert result.intersection == ("bird", "dog")
    assert result.union == ("bird", "cat", "dog", "fish")
    assert result.jaccard == 0.5
    assert result.dice == pytest.approx(2 / 3, abs=1e-15)
    assert result.matched


@pytest.mark.parametrize(
    ("a", "b", "jaccard", "dice"),
    [
        pytest.param(["cat"], ["dog"], 0.0, 0.0, id="disjoint"),
        pytest.param(["Cat", "cat"], ["CAT"], 1.0, 1.0, id="case-and-duplicates"),
        pytest.param(["a", "b", "c"], ["a"], 1 / 3, 0.5, id="subset"),
    ],
)
def test_label_sets(a: list[str], b: list[str], jaccard: float, dice: float) -> None:
    """Jaccard and Dice of label sets after normalisation."""
    result = compare_labels(a, b, threshold=0.6)
    assert result.jaccard == pytest.approx(jaccard, abs=1e-15)
    assert result.dice == pytest.approx(dice, abs=1e-15)
    assert result.matched == (jaccard >= 0.6)


# JSON


def test_box_json_has_every_number() -> None:
    """The JSON form lists the boxes, areas, scores, verdicts and the sweep, in a fixed order."""
    data = json.loads(to_json(compare_boxes(*OVERLAPPING)))
    assert list(data) == [
        "vocmatch", "mode", "box_a", "box_b", "intersection_box", "intersection", "union",
        "enclosing", "iou", "iou_percent", "giou", "dice", "dice_from_iou", "dice_agree",
        "relation", "threshold", "inclusive", "pixel_inclusive", "match", "sweep",
    ]  # fmt: skip
    assert data["mode"] == "boxes"
    assert data["box_a"] == {
        "x1": 50.0, "y1": 50.0, "x2": 150.0, "y2": 150.0, "width": 100.0, "height": 100.0,
        "area": 10000.0,
    }  # fmt: skip
    assert data["intersection_box"] == {
        "x1": 80.0, "y1": 80.0, "x2": 150.0, "y2": 150.0, "width": 70.0, "height": 70.0,
    }  # fmt: skip
    assert (data["intersection"], data["union"], data["enclosing"]) == (4900.0, 15100.0, 16900.0)
    assert data["iou"] == pytest.approx(4900 / 15100, abs=1e-15)
    assert data["iou_percent"] == pytest.approx(490000 / 15100, abs=1e-12)
    assert (data["relation"], data["threshold"], data["inclusive"], data["match"]) == (
        "overlapping", 0.5, True, False,
    )  # fmt: skip
    assert data["sweep"] == [
        {"threshold": 0.5, "convention": "PASCAL VOC / COCO AP50", "match": False},
        {"threshold": 0.75, "convention": "COCO AP75, strict", "match": False},
        {"threshold": 0.95, "convention": "near-exact", "match": False},
    ]


def test_disjoint_json_has_no_intersection_box() -> None:
    """Disjoint boxes have a null intersection box."""
    assert to_json_dict(compare_boxes(*DISJOINT))["intersection_box"] is None


def test_label_json() -> None:
    """The label JSON lists the sets and their sizes, Jaccard, Dice and the verdict."""
    data = to_json_dict(compare_labels(["cat", "dog", "bird"], ["dog", "bird", "fish"]))
    assert data == {
        "vocmatch": data["vocmatch"],
        "mode": "labels",
        "a": ["bird", "cat", "dog"],
        "b": ["bird", "dog", "fish"],
        "intersection": ["bird", "dog"],
        "union": ["bird", "cat", "dog", "fish"],
        "intersection_size": 2,
        "union_size": 4,
        "jaccard": 0.5,
        "dice": 2 * 2 / 6,
        "threshold": 0.5,
        "inclusive": True,
        "match": True,
    }


# Invariants

coordinate = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False)
side = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)


@st.composite
def boxes(draw: st.DrawFn) -> BoxCorners:
    """Boxes of positive area."""
    x, y, w, h = draw(coordinate), draw(coordinate), draw(side), draw(side)
    return (x, y, x + w, y + h)


@given(boxes(), boxes())
def test_dice_identity(box_a: BoxCorners, box_b: BoxCorners) -> None:
    """2·I/(A+B) and 2·IoU/(1+IoU) are the same number for any two boxes."""
    result = compare_boxes(box_a, box_b)
    assert result.dice_agree
    assert result.dice == pytest.approx(result.dice_from_iou, rel=1e-12, abs=1e-300)


@given(boxes(), boxes())
def test_giou_bounds(box_a: BoxCorners, box_b: BoxCorners) -> None:
    """GIoU never exceeds IoU (up to rounding) and lies in (-1, 1]."""
    result = compare_boxes(box_a, box_b)
    # (C - U) / C >= 0 exactly, but C and U are rounded separately: when C == U in exact
    # arithmetic GIoU can come out 1 ulp above IoU (0.30086372360844543 vs ...452).
    assert result.giou <= result.iou + 1e-12
    assert -1.0 < result.giou <= 1.0


@given(boxes(), boxes())
def test_comparison_is_symmetric_and_uses_the_core(box_a: BoxCorners, box_b: BoxCorners) -> None:
    """Swapping A and B changes no score, and IoU is the evaluator's iou_matrix value."""
    forward, backward = compare_boxes(box_a, box_b), compare_boxes(box_b, box_a)
    assert forward.iou == backward.iou
    assert forward.giou == backward.giou
    assert forward.dice == backward.dice
    assert forward.iou == float(iou_matrix([box_a], [box_b])[0, 0])
    assert 0.0 <= forward.iou <= 1.0


# Polygons

TRIANGLE = Polygon(((200.0, 100.0), (300.0, 100.0), (200.0, 200.0)))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("200,100 300,100 200,200", id="pairs"),
        pytest.param("200 100 300 100 200 200", id="spaces"),
        pytest.param("200,100,300,100,200,200", id="commas"),
        pytest.param(" 200, 100  300 ,100 2e2,2e2 ", id="mixed"),
    ],
)
def test_parse_polygon_reads_points_in_pairs(text: str) -> None:
    """Any mix of commas and spaces; the numbers pair up in order."""
    assert parse_polygon(text) == TRIANGLE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "0,0 4,0 0", "polygon: expected x,y pairs, got 5 numbers: '0,0 4,0 0'", id="odd"
        ),
        pytest.param(
            "0,0 4,x 0,3", "polygon: 'x' is not a number: '0,0 4,x 0,3'", id="not-a-number"
        ),
        pytest.param(
            "0,0 4,inf 0,3", "polygon: 'inf' is not a finite number: '0,0 4,inf 0,3'", id="inf"
        ),
        pytest.param(
            "0,0 4,0",
            "polygon has 2 distinct points; a polygon needs at least 3: '0,0 4,0'",
            id="two-points",
        ),
        pytest.param(
            "0,0 1,1 2,2",
            "polygon has zero area: its points lie on one line: '0,0 1,1 2,2'",
            id="collinear",
        ),
        pytest.param(
            "0,0 2,2 2,0 0,2",
            "polygon is self-intersecting at (1, 1): '0,0 2,2 2,0 0,2'",
            id="bow-tie",
        ),
    ],
)
def test_parse_polygon_rejects_bad_text(text: str, message: str) -> None:
    """One line saying what is wrong, quoting the text."""
    with pytest.raises(ValueError) as info:
        parse_polygon(text)
    assert str(info.value) == message


def test_parse_region_pair_tells_boxes_from_polygons_by_count() -> None:
    """Four numbers are a box (x,y,w,h with xywh); three or more points are a polygon."""
    assert parse_region_pair(["200,100 300,100 200,200", "200 100 100 100"], xywh=True) == (
        TRIANGLE,
        (200.0, 100.0, 300.0, 200.0),
    )
    assert parse_region_pair(["0,0,1,1", "0,0 1,0 1,1 0,1"]) == (
        (0.0, 0.0, 1.0, 1.0),
        Polygon(((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))),
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["0,0,1,1", "0,0 2,2 2,0 0,2"],
            "polygon B is self-intersecting at (1, 1): '0,0 2,2 2,0 0,2'",
            id="bad-polygon-b",
        ),
        pytest.param(
            ["5,0,0,5", "0,0 1,0 0,1"],
            "box A: x2 (0) is less than x1 (5): '5,0,0,5'",
            id="bad-box-a",
        ),
        pytest.param(
            ["0,0 1,0 0,1"],
            "expected two regions A B (a box or polygon points each), got 1 argument(s)",
            id="one",
        ),
    ],
)
def test_parse_region_pair_names_the_region_at_fault(args: list[str], message: str) -> None:
    """The message says which side is wrong."""
    with pytest.raises(ValueError) as info:
        parse_region_pair(args)
    assert str(info.value) == message


def test_triangle_in_its_bounding_box() -> None:
    """Half of a 100 x 100 box: IoU 1/2, Dice 2/3, GIoU 1/2 (C is the box itself)."""
    result = compare_regions(TRIANGLE, (200, 100, 300, 200))
    assert (result.area_a, result.area_b, result.intersection, result.union) == (
        5000.0,
        10000.0,
        5000.0,
        10000.0,
    )
    assert (result.iou, result.giou, result.enclosing) == (0.5, 0.5, 10000.0)
    assert result.dice == pytest.approx(2 / 3)
    assert result.dice_agree and result.matched
    assert (result.box_a, result.relation) == ((200.0, 100.0, 300.0, 200.0), "A inside B")
    assert result.intersection_box == (200.0, 100.0, 300.0, 200.0)
    assert result.polygons is not None and result.polygons.b is None


def test_polygon_triangle_cuts_a_box() -> None:
    """Triangle (0,0) (6,0) (0,6) on box 0,0,4,4: I = 16 - 2 = 14, U = 18 + 16 - 14 = 20."""
    result = compare_regions(Polygon(((0, 0), (6, 0), (0, 6))), (0, 0, 4, 4))
    assert (result.intersection, result.union, result.iou) == (14.0, 20.0, 0.7)
    assert result.relation == "overlapping"
    assert result.giou == pytest.approx(0.7 - (36 - 20) / 36)


def test_rectangle_polygon_gives_the_box_numbers() -> None:
    """A polygon that is a rectangle gives exactly what the box gives."""
    rectangle = Polygon(((50, 50), (150, 50), (150, 150), (50, 150)))
    boxes = compare_boxes(*OVERLAPPING)
    regions = compare_regions(rectangle, OVERLAPPING[1])
    for name in ("box_a", "box_b", "area_a", "area_b", "intersection", "union", "enclosing"):
        assert getattr(regions, name) == getattr(boxes, name), name
    assert regions.iou == pytest.approx(boxes.iou)
    assert regions.giou == pytest.approx(boxes.giou)
    assert (regions.relation, regions.intersection_box) == (boxes.relation, boxes.intersection_box)


def test_two_boxes_through_compare_regions_are_compare_boxes() -> None:
    """Without a polygon nothing changes."""
    assert compare_regions(*OVERLAPPING) == compare_boxes(*OVERLAPPING)


def test_disjoint_and_identical_polygons() -> None:
    """0 apart, 1 on itself, whatever the starting point of the ring."""
    other = Polygon(((500.0, 500.0), (600.0, 500.0), (500.0, 600.0)))
    disjoint = compare_regions(TRIANGLE, other)
    assert (disjoint.iou, disjoint.relation, disjoint.intersection_box) == (0.0, "disjoint", None)
    rotated_start = Polygon((TRIANGLE.points[1], TRIANGLE.points[2], TRIANGLE.points[0]))
    same = compare_regions(TRIANGLE, rotated_start)
    assert (same.iou, same.relation) == (1.0, "identical")


def test_polygon_json_adds_the_points() -> None:
    """A polygon side keeps its bounding box and area, and lists its points."""
    data = to_json_dict(compare_regions(TRIANGLE, (200, 100, 300, 200)))
    assert data["box_a"] == {
        "x1": 200.0, "y1": 100.0, "x2": 300.0, "y2": 200.0, "width": 100.0, "height": 100.0,
        "area": 5000.0, "points": [[200.0, 100.0], [300.0, 100.0], [200.0, 200.0]],
    }  # fmt: skip
    assert "points" not in data["box_b"]
    assert (data["iou"], data["relation"]) == (0.5, "A inside B")

"""The evaluator against pycocotools, against published VOC-style values, and by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tests.evaluation.test_batch import assert_identical
from tests.oracle import coco_json, pycocotools_stats, random_dataset, write_voc
from vocmatch.core.model import Box, ImageAnnotation, Polygon, RotatedBox
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import evaluate, evaluate_directories
from vocmatch.readers.parse import AnnotationSet


def annotation_set(*images: tuple[str, list[Box]]) -> AnnotationSet:
    return AnnotationSet(
        "x", tuple(ImageAnnotation(key, f"{key}.xml", tuple(boxes)) for key, boxes in images), ()
    )


@pytest.mark.parametrize("seed", range(30))
def test_coco_protocol_equals_pycocotools(seed: int, tmp_path: Path) -> None:
    """The 12 COCO numbers equal pycocotools' COCOeval.stats to 1e-12 on random data with
    empty images, tied scores, crowd objects and classes missing on either side."""
    gt, pred = random_dataset(seed)
    expected = pycocotools_stats(*coco_json(gt, pred), tmp_path)
    result = evaluate(gt, pred, protocol("coco"))
    assert result.coco is not None
    np.testing.assert_allclose(result.coco.as_list(), expected, rtol=0, atol=1e-12)
    assert result.summary.map == pytest.approx(expected[0], abs=1e-12)


def test_coco_protocol_equals_pycocotools_from_xml_files(tmp_path: Path) -> None:
    """The same holds end to end, from XML files on disk."""
    gt, pred = random_dataset(101, images=30)
    write_voc(gt, tmp_path / "gt")
    write_voc(pred, tmp_path / "pred")
    expected = pycocotools_stats(*coco_json(gt, pred), tmp_path)
    result = evaluate_directories(tmp_path / "gt", tmp_path / "pred", protocol("coco"))
    assert result.coco is not None
    np.testing.assert_allclose(result.coco.as_list(), expected, rtol=0, atol=1e-12)


def test_coco_keeps_only_the_100_best_predictions_per_image_and_class(tmp_path: Path) -> None:
    """maxDets=100: pycocotools ignores the lower-scored predictions beyond 100."""
    gt_boxes = [Box("a", x * 10, 0, x * 10 + 8, 8) for x in range(60)]
    pred_boxes = [Box("a", x * 10, 0, x * 10 + 8, 8, score=0.5 + x / 1000) for x in range(60)]
    pred_boxes += [Box("a", 1000 + x, 0, 1005 + x, 5, score=0.9) for x in range(60)]
    gt = annotation_set(("i", gt_boxes))
    pred = annotation_set(("i", pred_boxes))
    expected = pycocotools_stats(*coco_json(gt, pred), tmp_path)
    result = evaluate(gt, pred, protocol("coco"))
    assert result.coco is not None
    np.testing.assert_allclose(result.coco.as_list(), expected, rtol=0, atol=1e-12)
    assert sum(1 for m in result.images[0].matches if m.outcome == "ignored") == 20


REFERENCES = sorted((FIXTURES / "reference").glob("*/expected*.json"))


@pytest.mark.parametrize(
    "expected_path", REFERENCES, ids=[f"{p.parent.name}/{p.stem}" for p in REFERENCES]
)
def test_voc_presets_reproduce_published_values(expected_path: Path) -> None:
    """Published AP values of independent VOC-style evaluators are reproduced to the digits
    published (sources and conventions in each fixture's SOURCE.md)."""
    expected = json.loads(expected_path.read_text())
    conv = expected["conventions"]
    preset = "voc07" if conv["interpolation"] == "11-point" else "voc12"
    conventions = replace(
        protocol(preset).with_threshold(conv["iou"]),
        strict_threshold=conv["strict_threshold"],
        pixel_inclusive=conv["pixel_inclusive"],
    )
    folder = expected_path.parent
    result = evaluate_directories(folder / "gt", folder / "pred", conventions)
    tolerance = 10.0 ** -expected["digits"]
    measured = {c.name: c.ap for c in result.classes}
    for name, value in expected["classes"].items():
        assert measured[name] is not None
        # Published values are cut off (not rounded) to their digits.
        assert abs(measured[name] - value) < tolerance, name
    if expected["map"] is not None:
        assert result.summary.map is not None
        assert abs(result.summary.map - expected["map"]) < tolerance


def test_demo_set_counts_and_ap_by_hand(demo: tuple[Path, Path]) -> None:
    """The demo set's totals and the car class's AP, worked out by hand in its README."""
    result = evaluate_directories(*demo)
    s = result.summary
    assert (s.images, s.gt, s.pred, s.tp, s.fp, s.fn) == (6, 14, 16, 10, 5, 4)
    car = next(c for c in result.classes if c.name == "car")
    # Ranked: 0.93 TP, 0.88 TP, 0.77 TP, 0.20 FP of 4 cars: all-point AP = 0.75.
    assert (car.tp, car.fp, car.fn, car.ap) == (3, 1, 1, 0.75)
    truck = next(c for c in result.classes if c.name == "truck")
    assert (truck.in_map, truck.ap, truck.fp) == (False, None, 1)
    assert s.map == pytest.approx((0.5 + 1.0 + 0.75 + 0.0 + 0.5 + 1.0) / 6)
    assert result.missing_pred == ("street_05",)
    street_02 = next(i for i in result.images if i.key == "street_02")
    assert (street_02.gt, street_02.gt_ignored, street_02.tp, street_02.fp) == (2, 1, 2, 0)
    # At 0.95 the prediction on the difficult person (IoU 0.827) no longer matches it: an FP.
    assert [(s.tp, s.fp, s.fn) for s in street_02.sweep] == [(2, 0, 0), (1, 1, 1), (0, 3, 2)]


def test_difficult_objects_can_be_counted(demo: tuple[Path, Path]) -> None:
    """--difficult count makes the difficult person an ordinary object (then a TP)."""
    result = evaluate_directories(*demo, replace(protocol("default"), difficult="count"))
    street_02 = next(i for i in result.images if i.key == "street_02")
    assert (street_02.gt, street_02.gt_ignored, street_02.tp) == (3, 0, 3)


def test_voc07_and_voc12_differ_only_in_interpolation() -> None:
    """Two objects found at ranks 1 and 3: all-point 0.8333, 11-point 0.8485 (hand-worked)."""
    gt = annotation_set(("i", [Box("a", 0, 0, 9, 9), Box("a", 20, 0, 29, 9)]))
    pred = annotation_set(
        ("i", [Box("a", 0, 0, 9, 9, score=0.9), Box("a", 50, 0, 59, 9, score=0.8),
               Box("a", 20, 0, 29, 9, score=0.7)])
    )  # fmt: skip
    # Recall 0.5, 0.5, 1.0 at precision 1, 0.5, 0.667.
    assert evaluate(gt, pred, protocol("voc12")).summary.map == pytest.approx(0.5 + 0.5 * 2 / 3)
    assert evaluate(gt, pred, protocol("voc07")).summary.map == pytest.approx(
        (6 * 1.0 + 5 * 2 / 3) / 11
    )


def test_unreadable_files_leave_their_image_out(tmp_path: Path) -> None:
    """A broken prediction file skips its image (no false FN); others are evaluated."""
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    good = "<annotation><object><name>a</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object></annotation>"
    for directory in (gt, pred):
        directory.mkdir()
        (directory / "one.xml").write_text(good)
    (gt / "two.xml").write_text(good)
    (pred / "two.xml").write_text("<annotation><object>")
    (pred / "three.xml").write_text(good)
    result = evaluate_directories(gt, pred)
    assert [i.key for i in result.images] == ["one"]
    assert [s.key for s in result.skipped] == ["two"]
    assert result.orphan_pred == (str(pred / "three.xml"),)
    assert (result.summary.skipped, result.summary.orphan_pred) == (1, 1)


def test_empty_ground_truth_directory_is_an_input_error(tmp_path: Path) -> None:
    """Nothing to evaluate is an error, not an empty report."""
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    with pytest.raises(InputError, match=r"no \.xml annotation files found"):
        evaluate_directories(tmp_path / "gt", tmp_path / "pred")


def test_unscored_predictions_have_no_ap_but_counts() -> None:
    """Two label sets without scores: TP/FP/FN are reported; AP is not defined."""
    gt = annotation_set(("i", [Box("a", 0, 0, 10, 10)]))
    pred = annotation_set(("i", [Box("a", 1, 1, 10, 10)]))
    result = evaluate(gt, pred)
    assert (result.summary.tp, result.summary.map, result.classes[0].ap) == (1, None, None)
    assert result.notes == (
        "predictions carry no scores: paired highest IoU first; AP is not defined",
    )


@st.composite
def scored_scenes(draw: st.DrawFn) -> tuple[AnnotationSet, AnnotationSet]:
    images = []
    preds = []
    count = 0
    for i in range(draw(st.integers(1, 4))):
        boxes = []
        for _ in range(draw(st.integers(0, 5))):
            x, y = draw(st.integers(0, 90)), draw(st.integers(0, 90))
            w, h = draw(st.integers(1, 30)), draw(st.integers(1, 30))
            boxes.append(Box(draw(st.sampled_from("ab")), x, y, x + w, y + h))
        images.append((f"i{i}", boxes))
        noisy = []
        for b in boxes:
            count += 1
            shift = draw(st.integers(-5, 5))
            noisy.append(replace(b, x1=b.x1 + shift, x2=b.x2 + shift, score=count / 100))
        preds.append((f"i{i}", noisy))
    return annotation_set(*images), annotation_set(*preds)


PROTOCOL_NAMES = ["default", "voc07", "voc12", "coco"]


@settings(max_examples=40, deadline=None)
@given(scored_scenes(), st.sampled_from(PROTOCOL_NAMES))
def test_ap_is_one_when_predictions_equal_the_ground_truth(
    scene: tuple[AnnotationSet, AnnotationSet], name: str
) -> None:
    """Predictions identical to the ground truth with distinct scores give AP 1."""
    gt, _ = scene
    count = iter(range(1, 1000))
    pred = AnnotationSet(
        "p",
        tuple(
            replace(a, boxes=tuple(replace(b, score=next(count) / 1000) for b in a.boxes))
            for a in gt.annotations
        ),
        (),
    )
    result = evaluate(gt, pred, protocol(name))
    for cls in result.classes:
        assert cls.ap == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(scored_scenes(), st.sampled_from(PROTOCOL_NAMES), st.randoms(use_true_random=False))
def test_ap_is_bounded_and_independent_of_prediction_order(
    scene: tuple[AnnotationSet, AnnotationSet], name: str, rnd: object
) -> None:
    """AP lies in [0, 1] and permuting predictions (distinct scores) changes nothing."""
    gt, pred = scene
    shuffled = []
    for a in pred.annotations:
        boxes = list(a.boxes)
        rnd.shuffle(boxes)  # type: ignore[attr-defined]
        shuffled.append(replace(a, boxes=tuple(boxes)))
    first = evaluate(gt, pred, protocol(name))
    second = evaluate(gt, AnnotationSet("p", tuple(shuffled), ()), protocol(name))
    for a, b in zip(first.classes, second.classes, strict=True):
        assert a.ap == b.ap
        assert a.ap is None or 0.0 <= a.ap <= 1.0
    assert first.summary == second.summary


def test_conventions_describe_states_every_choice() -> None:
    """The report header names each convention in force."""
    described = dict(Conventions("voc12", strict_threshold=True, pixel_inclusive=True).describe())
    assert described["match"] == "IoU > 0.5"
    assert described["areas"] == "pixel-inclusive (+1)"


def test_rotated_boxes_and_polygons_are_matched_like_boxes() -> None:
    """fixtures/shapes (see its README): a rotated box at 0 rad on its box (IoU 1), a box
    holding a triangle (1/2, a match at the inclusive 0.5), a quarter-turned box inside a box
    (0.6), a box on half a diamond (1/3, FP and FN), and a plain image that is unchanged."""
    result = evaluate_directories(FIXTURES / "shapes" / "gt", FIXTURES / "shapes" / "pred")
    field, street = result.images
    assert [(m.name, m.outcome, m.gt_index, m.pred_index, m.iou) for m in field.matches] == [
        ("car", "tp", 0, 0, 1.0),
        ("car", "fp", None, 3, 1 / 3),
        ("car", "fn", 3, None, 1 / 3),
        ("person", "tp", 1, 1, 0.5),
        ("person", "tp", 2, 2, 0.6),
    ]
    assert [(m.outcome, m.iou) for m in street.matches] == [("tp", 0.75)]
    summary = result.summary
    assert (summary.tp, summary.fp, summary.fn) == (4, 1, 1)
    assert [(c.name, c.ap) for c in result.classes] == [("car", 0.5), ("person", 1.0)]
    assert summary.map == 0.75
    assert result.notes == ()


def test_shapes_under_pixel_inclusive_conventions_are_noted() -> None:
    """The devkit's +1 areas apply between plain boxes only; a note says so, and the street
    image's plain pair gets the +1 IoU (41 * 61) / (41 * 81)."""
    result = evaluate_directories(
        FIXTURES / "shapes" / "gt", FIXTURES / "shapes" / "pred", protocol("voc07")
    )
    assert result.notes == (
        "4 objects are rotated boxes or polygons; their overlaps use exact regions with"
        " continuous areas, as pixel-inclusive (+1) areas apply only between plain boxes",
    )
    field, street = result.images
    assert [m.iou for m in field.matches if m.outcome == "tp"] == [1.0, 0.5, 0.6]
    assert [m.iou for m in street.matches] == [pytest.approx(61 / 81)]


def test_coco_areas_of_shapes_are_their_regions() -> None:
    """A triangle of area 5000 in a 100 x 100 bounding box counts as medium (32² to 96²),
    not large: shapes are evaluated as regions."""
    triangle = Polygon(((200, 100), (300, 100), (200, 200)))
    gt = annotation_set(("a", [Box("p", 200, 100, 300, 200, shape=triangle)]))
    pred = annotation_set(("a", [Box("p", 200, 100, 300, 200, score=0.9, shape=triangle)]))
    coco = evaluate(gt, pred, protocol("coco")).coco
    assert coco is not None
    # 1.0 less pycocotools' eps in tp / (tp + fp + eps)
    assert (coco.APs, coco.APm, coco.APl) == (-1.0, pytest.approx(1.0, abs=1e-15), -1.0)


def as_shapes(annotations: AnnotationSet) -> AnnotationSet:
    """Every box as the same region in another form: a rotated box at angle 0 or the polygon
    of its four corners, by turns."""

    def shape(k: int, b: Box) -> Box:
        if k % 2:
            corners = ((b.x1, b.y1), (b.x2, b.y1), (b.x2, b.y2), (b.x1, b.y2))
            return replace(b, shape=Polygon(corners))
        rotated = RotatedBox((b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2, b.x2 - b.x1, b.y2 - b.y1, 0.0)
        return replace(b, shape=rotated)

    return replace(
        annotations,
        annotations=tuple(
            replace(a, boxes=tuple(shape(k, b) for k, b in enumerate(a.boxes)))
            for a in annotations.annotations
        ),
    )


@pytest.mark.parametrize(
    "conventions",
    [
        pytest.param(protocol("default"), id="default"),
        pytest.param(protocol("coco"), id="coco"),
        pytest.param(replace(protocol("coco"), difficult="crowd"), id="coco-crowd"),
        pytest.param(replace(protocol("default"), match_rule="devkit"), id="devkit-rule"),
    ],
)
@pytest.mark.parametrize("seed", range(3))
def test_boxes_written_as_shapes_evaluate_identically(seed: int, conventions: Conventions) -> None:
    """Boxes given as rotated boxes at angle 0 or as 4-point polygons give the same
    evaluation, bit for bit (whole-pixel corners make every clipped area exact)."""
    gt, pred = random_dataset(seed, images=8)
    assert_identical(
        evaluate(gt, pred, conventions), evaluate(as_shapes(gt), as_shapes(pred), conventions)
    )

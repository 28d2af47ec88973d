"""The preparation of predictions before matching (vocmatch.core.preparation,
vocmatch.evaluation.preparation): the score pre-filter, NMS class by class as torchvision keeps,
the cap per image, what each removed, and its checks, in the library's doors."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.core.test_nms import plain
from tests.oracle import write_voc
from vocmatch.core.model import Box, ImageAnnotation, RotatedBox
from vocmatch.core.preparation import ULTRALYTICS_PREPARATION, Preparation
from vocmatch.errors import InputError, RequestError, StateError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.preparation import prepare_columns
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.state import read_state, write_state
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations, read_columns
from vocmatch.render.json_report import to_json_dict
from vocmatch.run.evaluate import EvalRequest
from vocmatch.run.find_suspects import SuspectsRequest

CASES = ROOT / "fixtures" / "reference" / "torchvision-nms"


def corners(box: Box) -> list[float]:
    return [box.x1, box.y1, box.x2, box.y2]


def dense_predictions() -> tuple[list[dict[str, Any]], list[list[int]]]:
    """The dense cases (one image each) and the indices torchvision kept at IoU 0.7."""
    cases = json.loads((CASES / "cases-0.7.json").read_text())
    kept = json.loads((CASES / "kept-0.7.json").read_text())["kept"]
    return cases, kept


def case_image(key: str, case: dict[str, Any], rows: list[int] | None = None) -> ImageAnnotation:
    """A case's predictions as one image (``rows`` only, when given), in case order."""
    chosen = range(len(case["scores"])) if rows is None else rows
    boxes = tuple(
        Box(f"c{case['labels'][i]}", *case["boxes"][i], score=case["scores"][i]) for i in chosen
    )
    return ImageAnnotation(key, f"pred/{key}.xml", boxes)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        pytest.param({"min_score": math.nan}, "min_score", "expected a finite number", id="nan-score"),
        pytest.param({"min_score": "0.1"}, "min_score", "expected a finite number", id="text-score"),
        pytest.param({"nms": math.nan}, "nms", "expected a finite number in [0, 1]", id="nan-nms"),
        pytest.param({"nms": 1.5}, "nms", "expected a finite number in [0, 1]", id="nms-above-1"),
        pytest.param({"nms": -0.1}, "nms", "expected a finite number in [0, 1]", id="nms-negative"),
        pytest.param({"max_per_image": 0}, "max_per_image", "a whole number of at least 1", id="cap-0"),
        pytest.param({"max_per_image": 2.0}, "max_per_image", "a whole number of at least 1", id="cap-float"),
        pytest.param({"max_per_image": True}, "max_per_image", "a whole number of at least 1", id="cap-bool"),
        pytest.param({"nms_agnostic": True}, "nms_agnostic", "give one too", id="agnostic-alone"),
        pytest.param({"nms": 0.5, "nms_agnostic": 1}, "nms_agnostic", "True or False", id="agnostic-int"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_naming_the_field(
    fields: dict[str, Any], field: str, message: str
) -> None:
    """The dataclass and a request refuse the same values, naming the field."""
    makers = (
        Preparation,
        lambda **f: EvalRequest(gt="gt", pred="pred", **f),
        lambda **f: SuspectsRequest(gt="gt", pred="pred", **f),
    )
    for make in makers:
        with pytest.raises(RequestError, match=re.escape(message)) as caught:
            make(**fields)
        assert caught.value.field == field


def test_a_preparation_is_a_value_a_preset_can_carry() -> None:
    """Ultralytics' val: conf > 0.001, class-wise NMS at 0.7, 300 per image; numbers given
    as ints compare equal to the same as floats."""
    assert Preparation(min_score=0.001, nms=0.7, max_per_image=300) == ULTRALYTICS_PREPARATION
    assert ULTRALYTICS_PREPARATION.describe() == "score > 0.001, NMS 0.7 by class, 300 per image"
    assert Preparation(nms=1) == Preparation(nms=1.0)
    assert not Preparation().active
    request = EvalRequest(gt="gt", pred="pred", min_score=0.001, nms=0.7, max_per_image=300)
    assert request.preparation() == ULTRALYTICS_PREPARATION
    assert EvalRequest(gt="gt", pred="pred").preparation() is None


def test_nms_07_keeps_what_torchvision_keeps_class_by_class(tmp_path: Path) -> None:
    """The dense cases written as XML and read back: NMS at 0.7 keeps exactly the boxes
    torchvision 0.29.1 kept class by class (recorded in fixtures/reference/torchvision-nms)."""
    cases, kept = dense_predictions()
    images = [case_image(f"case{k:02d}", case) for k, case in enumerate(cases)]
    write_voc(AnnotationSet("pred", tuple(images), ()), tmp_path / "pred")
    columns = read_columns(tmp_path / "pred")
    prepared, removed = prepare_columns(columns, Preparation(nms=0.7))
    starts = np.searchsorted(prepared.image, np.arange(len(prepared.keys) + 1))
    for k, expected in enumerate(kept):
        found = prepared.scores[starts[k] : starts[k + 1]].tolist()
        # The kept boxes, in file order: their scores and boxes are torchvision's kept ones.
        assert found == [cases[k]["scores"][i] for i in expected], k
        assert prepared.boxes[starts[k] : starts[k + 1]].tolist() == [
            cases[k]["boxes"][i] for i in expected
        ]
    assert removed.by_step() == {"min_score": 0, "nms": 1437 - 613, "max_per_image": 0}


def test_nms_equals_torchvision_live(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    ops = pytest.importorskip("torchvision.ops")
    rng = np.random.default_rng(11)
    images, expected = [], []
    for k in range(30):
        n = int(rng.integers(1, 60))
        xy = rng.uniform(0, 100, (n, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(5, 40, (n, 2))], axis=1)
        scores, labels = np.round(rng.random(n), 2), rng.integers(0, 3, n)
        case = {"boxes": boxes.tolist(), "scores": scores.tolist(), "labels": labels.tolist()}
        images.append(case_image(f"i{k:02d}", case))
        keep: list[int] = []
        for label in range(3):
            index = np.flatnonzero(labels == label)
            found = ops.nms(torch.tensor(boxes[index]), torch.tensor(scores[index]), 0.7)
            keep += index[found.numpy()].tolist()
        expected.append(sorted(keep))
    columns = columns_from_annotations(AnnotationSet("pred", tuple(images), ()))
    prepared, _ = prepare_columns(columns, Preparation(nms=0.7))
    starts = np.searchsorted(prepared.image, np.arange(len(prepared.keys) + 1))
    for k, keep in enumerate(expected):
        assert prepared.boxes[starts[k] : starts[k + 1]].tolist() == [
            corners(images[k].boxes[i]) for i in keep
        ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.tuples(
                    st.integers(0, 30), st.integers(0, 30), st.integers(0, 15), st.integers(0, 15)
                ),
                st.sampled_from([0.1, 0.5, 0.9, 0.3]),
                st.sampled_from("abc"),
            ),
            max_size=20,
        ),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]),
    st.booleans(),
)
def test_every_image_at_once_keeps_what_nms_keeps_image_by_image(
    images: list[list[Any]], iou: float, agnostic: bool
) -> None:
    """The preparation suppresses in every image-class cell at once: the boxes
    vocmatch.nms (torchvision's, class by class) keeps of each image alone."""
    from vocmatch.core.nms import nms

    annotations = tuple(
        ImageAnnotation(
            f"i{k}",
            f"pred/i{k}.xml",
            tuple(Box(c, x, y, x + w, y + h, score=s) for (x, y, w, h), s, c in boxes),
        )
        for k, boxes in enumerate(images)
    )
    columns = columns_from_annotations(AnnotationSet("pred", annotations, ()))
    prepared, _ = prepare_columns(columns, Preparation(nms=iou, nms_agnostic=agnostic))
    expected = []
    for image in annotations:
        labels = None if agnostic else [b.name for b in image.boxes]
        found = nms(np.array([corners(b) for b in image.boxes]).reshape(-1, 4),
                    [b.score for b in image.boxes], labels, iou)  # fmt: skip
        expected += [corners(image.boxes[i]) for i in sorted(found.tolist())]
    assert prepared.boxes.tolist() == expected


def _removed_counts(preparation: Preparation) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    boxes = (
        Box("car", 0, 0, 10, 10, score=0.9),
        Box("car", 1, 1, 10, 10, score=0.8),  # IoU 0.81 with the first
        Box("car", 50, 50, 60, 60, score=0.05),
        Box("dog", 0, 0, 10, 10, score=0.7),  # another class: NMS by class keeps it
        Box("dog", 30, 30, 40, 40, score=0.7),  # tied with the one before: file order
        Box("person", 70, 70, 80, 80, score=0.6),
    )
    pred = columns_from_annotations(
        AnnotationSet("pred", (ImageAnnotation("a", "pred/a.xml", boxes),), ())
    )
    _, removed = prepare_columns(pred, preparation)
    return removed.by_step(), removed.per_class()


@pytest.mark.parametrize(
    ("preparation", "total", "classes"),
    [
        pytest.param(
            Preparation(min_score=0.05), {"min_score": 1, "nms": 0, "max_per_image": 0},
            {"car": {"min_score": 1, "nms": 0, "max_per_image": 0}}, id="score-not-above-removed",
        ),
        pytest.param(
            Preparation(nms=0.5), {"min_score": 0, "nms": 1, "max_per_image": 0},
            {"car": {"min_score": 0, "nms": 1, "max_per_image": 0}}, id="nms-by-class",
        ),
        pytest.param(
            Preparation(nms=0.5, nms_agnostic=True), {"min_score": 0, "nms": 2, "max_per_image": 0},
            {"car": {"min_score": 0, "nms": 1, "max_per_image": 0},
             "dog": {"min_score": 0, "nms": 1, "max_per_image": 0}}, id="nms-across-classes",
        ),
        # After NMS: car 0.9, dog 0.7, dog 0.7 (file order), person 0.6, car 0.05.
        pytest.param(
            Preparation(nms=0.5, max_per_image=2), {"min_score": 0, "nms": 1, "max_per_image": 3},
            {"car": {"min_score": 0, "nms": 1, "max_per_image": 1},
             "dog": {"min_score": 0, "nms": 0, "max_per_image": 1},
             "person": {"min_score": 0, "nms": 0, "max_per_image": 1}}, id="cap-ties-in-file-order",
        ),
        pytest.param(
            Preparation(min_score=0.1, nms=0.5, max_per_image=3),
            {"min_score": 1, "nms": 1, "max_per_image": 1},
            {"car": {"min_score": 1, "nms": 1, "max_per_image": 0},
             "person": {"min_score": 0, "nms": 0, "max_per_image": 1}}, id="in-order",
        ),
    ],
)  # fmt: skip
def test_what_each_step_removed_per_class(
    preparation: Preparation, total: dict[str, int], classes: dict[str, dict[str, int]]
) -> None:
    assert _removed_counts(preparation) == (total, classes)


def test_the_cap_keeps_the_first_of_equal_scores() -> None:
    boxes = tuple(Box(name, 0, 0, 5, 5, score=0.5) for name in ("b", "a", "c"))
    pred = columns_from_annotations(
        AnnotationSet("pred", (ImageAnnotation("a", "pred/a.xml", boxes),), ())
    )
    prepared, _ = prepare_columns(pred, Preparation(max_per_image=2))
    assert [prepared.label_names[k] for k in prepared.labels.tolist()] == ["b", "a"]


def test_a_prediction_without_a_score_is_refused_naming_its_file() -> None:
    boxes = (Box("car", 0, 0, 5, 5, score=0.5), Box("car", 0, 0, 5, 5))
    pred = columns_from_annotations(
        AnnotationSet("pred", (ImageAnnotation("a", "pred/a.xml", boxes),), ())
    )
    message = "pred/a.xml: a prediction without a score: preparing predictions ranks them by score"
    with pytest.raises(InputError, match=re.escape(message)):
        prepare_columns(pred, Preparation(min_score=0.1))


def test_nms_refuses_a_rotated_box_naming_its_file() -> None:
    """NMS suppresses axis-aligned boxes; the score pre-filter and the cap take any shape."""
    shape = RotatedBox(5, 5, 4, 4, 0.3)
    boxes = (Box("car", 0, 0, 5, 5, score=0.5), Box("car", 1, 1, 9, 9, score=0.4, shape=shape))
    pred = columns_from_annotations(
        AnnotationSet("pred", (ImageAnnotation("a", "pred/a.xml", boxes),), ())
    )
    with pytest.raises(InputError, match=re.escape("pred/a.xml: NMS suppresses axis-aligned")):
        prepare_columns(pred, Preparation(nms=0.5))
    prepared, _ = prepare_columns(pred, Preparation(min_score=0.45, max_per_image=1))
    assert prepared.scores.tolist() == [0.5]
    assert prepare_columns(pred, Preparation(max_per_image=2))[0].shapes == pred.shapes


def reference_kept(boxes: list[Box], preparation: Preparation) -> list[Box]:
    """The preparation written plainly: filter, the NMS loop of tests/core/test_nms.py on
    the survivors, the cap by (descending score, file order)."""
    rest = [b for b in boxes if preparation.min_score is None or b.score > preparation.min_score]  # type: ignore[operator]
    if preparation.nms is not None:
        labels = [0 if preparation.nms_agnostic else hash(b.name) for b in rest]
        keep = plain(
            [corners(b) for b in rest],
            [b.score for b in rest],
            labels,
            preparation.nms,  # type: ignore[misc]
        )
        rest = [rest[i] for i in sorted(keep)]
    if preparation.max_per_image is not None:
        order = sorted(range(len(rest)), key=lambda i: (-rest[i].score, i))  # type: ignore[operator]
        rest = [rest[i] for i in sorted(order[: preparation.max_per_image])]
    return rest


BOX = st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 20), st.integers(1, 20))
PRED = st.tuples(BOX, st.sampled_from([0.05, 0.1, 0.3, 0.5, 0.9]), st.sampled_from("abc"))
PREPARATION = st.builds(
    Preparation,
    min_score=st.sampled_from([None, 0.1, 0.3]),
    nms=st.sampled_from([None, 0.0, 0.3, 0.5, 0.7]),
    max_per_image=st.sampled_from([None, 1, 3, 10]),
).filter(lambda p: p.active)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(PRED, max_size=12), min_size=1, max_size=4),
    st.lists(st.lists(st.tuples(BOX, st.sampled_from("ab")), max_size=5), min_size=4, max_size=4),
    PREPARATION,
    st.booleans(),
    st.sampled_from(["voc12", "coco"]),
)
def test_prepared_evaluation_equals_the_evaluation_of_the_filtered_files(
    preds: list[list[Any]], gts: list[list[Any]], preparation: Preparation, agnostic: bool,
    name: str,
) -> None:  # fmt: skip
    """Evaluating raw predictions with a preparation reports every number that evaluating
    the predictions the preparation keeps (filtered by a plain reference) reports."""
    from vocmatch.core.protocol import protocol

    if preparation.nms is not None and agnostic:
        preparation = Preparation(
            preparation.min_score, preparation.nms, True, preparation.max_per_image
        )
    gt_images, raw, kept = [], [], []
    for i, gt in enumerate(gts):
        key = f"i{i}"
        gt_images.append(ImageAnnotation(key, f"gt/{key}.xml", tuple(
            Box(c, x, y, x + w, y + h) for (x, y, w, h), c in gt)))  # fmt: skip
        if i < len(preds):
            boxes = [Box(c, x, y, x + w, y + h, score=s) for (x, y, w, h), s, c in preds[i]]
            raw.append(ImageAnnotation(key, f"pred/{key}.xml", tuple(boxes)))
            kept.append(ImageAnnotation(key, f"pred/{key}.xml", tuple(reference_kept(boxes, preparation))))  # fmt: skip
    gt_columns = columns_from_annotations(AnnotationSet("gt", tuple(gt_images), ()))
    conv = protocol(name)

    def report(pred: list[ImageAnnotation], prep: Preparation | None) -> dict[str, Any]:
        columns = columns_from_annotations(AnnotationSet("pred", tuple(pred), ()))
        evaluation = evaluate_columns(gt_columns, columns, conv, preparation=prep)
        assert (evaluation.removed is None) == (prep is None)
        data = to_json_dict(evaluation)
        data.pop("preparation", None)
        return data

    prepared = report(raw, preparation)
    assert prepared == report(kept, None)
    # The arrays path and the shards of an Evaluator: the same numbers.
    whole, first, second = (Evaluator(conv, preparation=preparation) for _ in range(3))
    for i, image in enumerate(raw):
        gt = gt_images[i]
        args = (
            np.array([corners(b) for b in gt.boxes], dtype=float).reshape(-1, 4),
            [b.name for b in gt.boxes],
            np.array([corners(b) for b in image.boxes], dtype=float).reshape(-1, 4),
            [b.score for b in image.boxes],
            [b.name for b in image.boxes],
        )
        whole.add(image.key, *args)
        (first if i % 2 else second).add(image.key, *args)
    first.merge(Evaluator.from_bytes(second.to_bytes()))
    merged, single = first.result(), whole.result()
    assert merged.summary == single.summary
    assert [c.ap for c in merged.classes] == [c.ap for c in single.classes]
    assert merged.removed is not None
    assert merged.removed == single.removed  # plain values: reports compare equal


def test_a_saved_state_records_its_preparation_and_counts() -> None:
    """Read back, a state keeps its preparation and what it removed; states of another
    preparation, or of none, refuse to merge; a damaged preparation is refused in one line."""
    preparation = Preparation(min_score=0.2, nms=0.5)
    evaluator = Evaluator("voc12", preparation=preparation)
    box = np.array([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
    evaluator.add("a", box[:1], ["car"], box, [0.9, 0.8, 0.1], ["car", "car", "dog"])
    read = Evaluator.from_bytes(evaluator.to_bytes())
    assert read.preparation == preparation
    removed = read.result().removed
    assert removed is not None
    assert removed.per_class() == {
        "car": {"min_score": 0, "nms": 1, "max_per_image": 0},
        "dog": {"min_score": 1, "nms": 0, "max_per_image": 0},
    }
    for other in (Evaluator("voc12"), Evaluator("voc12", preparation=Preparation(nms=0.5))):
        with pytest.raises(StateError, match="cannot merge states made with other options"):
            read.merge(Evaluator.from_bytes(other.to_bytes()))
    raw = read_state(evaluator.to_bytes(), "s.vms")
    raw.header["options"]["preparation"]["nms"] = 2.0
    with pytest.raises(
        StateError, match=re.escape("s.vms: corrupted header (options: preparation.nms")
    ):
        Evaluator.from_bytes(write_state(raw, version=7), "s.vms")
    raw.header["options"]["preparation"]["nms"] = 0.5
    raw.header["removed"] = [["car", -1, 0, 0]]
    with pytest.raises(StateError, match=re.escape("s.vms: corrupted header (removed is not")):
        Evaluator.from_bytes(write_state(raw, version=7), "s.vms")


def test_an_evaluator_refuses_what_is_no_preparation() -> None:
    with pytest.raises(RequestError, match="preparation: expected Preparation, got dict"):
        Evaluator("voc12", preparation={"nms": 0.5})  # type: ignore[arg-type]

"""The library validates as the command line does: every keyword of ``vocmatch.evaluate``
that changes what is computed is checked when the request is made (RequestError naming the
field), and :class:`vocmatch.Evaluator` refuses the boxes and class names the XML reader
refuses, leaving itself as it was."""

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

import vocmatch
from tests.conftest import FIXTURES, run_cli, street_05_unpredicted
from vocmatch.cli.console import request_error
from vocmatch.errors import AnnotationError, InputError, RequestError
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.parse import parse_annotation
from vocmatch.run.evaluate import EvalRequest

DEMO_GT = FIXTURES / "demo" / "gt"
DEMO_PRED = FIXTURES / "demo" / "pred"
NAN = math.nan


@pytest.mark.parametrize(
    ("keywords", "field", "message"),
    [
        pytest.param({"protocol": "voc2012"}, "protocol", r"protocol 'voc2012': no such protocol \(known: coco, default, ultralytics, ultralytics-8.4.175, ultralytics-8.4.36, voc07, voc12\)", id="protocol-unknown"),
        pytest.param({"protocol": None}, "protocol", "a value is needed", id="protocol-none"),
        pytest.param({"protocol": 7}, "protocol", "expected a protocol name", id="protocol-type"),
        pytest.param({"iou": NAN}, "iou", r"iou 'nan': expected a finite number in \[0, 1\]", id="iou-nan"),
        pytest.param({"iou": 1.5}, "iou", r"iou '1.5': expected a finite number in \[0, 1\]", id="iou-above"),
        pytest.param({"iou": "0.5"}, "iou", "got str", id="iou-text"),
        pytest.param({"iou": True}, "iou", "got bool", id="iou-bool"),
        pytest.param({"strict_threshold": "yes"}, "strict_threshold", "expected True or False", id="strict"),
        pytest.param({"pixel_inclusive": 1}, "pixel_inclusive", "expected True or False", id="pixel"),
        pytest.param({"match_rule": "greedy"}, "match_rule", r"no such match rule \(known: devkit, iou-order, unmatched, unmatched-first\)", id="match-rule"),
        pytest.param({"difficult": "ignored"}, "difficult", r"no such difficult rule \(known: count, crowd, drop, ignore\)", id="difficult"),
        pytest.param({"interpolation": "11pt"}, "interpolation", r"no such interpolation \(known: 101-point, 101-point-trapezoid, 101-point-trapezoid-to-1, 11-point, all-point\)", id="interpolation"),
        pytest.param({"fold_case": "no"}, "fold_case", "expected True or False", id="fold-case"),
        pytest.param({"sweep_thresholds": (NAN,)}, "sweep_thresholds", r"sweep_thresholds 'nan': expected a finite number in \[0, 1\]", id="sweep-nan"),
        pytest.param({"sweep_thresholds": ()}, "sweep_thresholds", "no threshold given", id="sweep-empty"),
        pytest.param({"sweep_thresholds": (0.5, 2.0)}, "sweep_thresholds", r"'2': expected a finite number in \[0, 1\]", id="sweep-above"),
        pytest.param({"sweep_thresholds": "0.5:0.95"}, "sweep_thresholds", "a range is start:stop:step", id="sweep-text"),
        pytest.param({"sweep_thresholds": 0.5}, "sweep_thresholds", "expected a sequence", id="sweep-number"),
        pytest.param({"max_dets": -1}, "max_dets", "max_dets '-1': expected a whole number of at least 1", id="max-dets-negative"),
        pytest.param({"max_dets": 0}, "max_dets", "at least 1", id="max-dets-zero"),
        pytest.param({"max_dets": 2.5}, "max_dets", "got float", id="max-dets-float"),
        pytest.param({"score_threshold": NAN}, "score_threshold", "score_threshold 'nan': expected a finite number", id="score-threshold-nan"),
        pytest.param({"score_threshold": math.inf}, "score_threshold", "'inf': expected a finite number", id="score-threshold-inf"),
        pytest.param({"score_thresholds": {"car": NAN}}, "score_thresholds", "'nan': expected a finite number", id="score-thresholds-nan"),
        pytest.param({"score_thresholds": {" ": 0.5}}, "score_thresholds", "a class name is empty", id="score-thresholds-empty-name"),
        pytest.param({"score_thresholds": ""}, "score_thresholds", "the path is empty", id="score-thresholds-path"),
        pytest.param({"gates": "map=0.5"}, "gates", "expected a sequence", id="gates-text"),
        pytest.param({"slices": "size"}, "slices", "expected a sequence", id="slices-text"),
        pytest.param({"gates": [0.5]}, "gates", "expected texts or Gate records, got float", id="gates-item"),
        pytest.param({"slices": [None]}, "slices", "expected texts or SliceSpec records, got NoneType", id="slices-item"),
        pytest.param({"max_fp": -1}, "max_fp", "at least 0", id="max-fp"),
        pytest.param({"max_fn": 1.0}, "max_fn", "got float", id="max-fn"),
        pytest.param({"analysis": "yes"}, "analysis", "expected True or False", id="analysis"),
        pytest.param({"background_iou": NAN}, "background_iou", "expected a finite number", id="background-iou"),
        pytest.param({"boxes": None}, "boxes", "a value is needed", id="boxes"),
        pytest.param({"reliability": 0}, "reliability", "expected True or False", id="reliability"),
        pytest.param({"bootstrap": 0}, "bootstrap", "at least 1", id="bootstrap"),
        pytest.param({"seed": -1}, "seed", "at least 0", id="seed"),
        pytest.param({"calibration_bins": 0}, "calibration_bins", "at least 1", id="calibration-bins"),
        pytest.param({"beta": NAN}, "beta", "beta 'nan': expected a finite number above 0", id="beta-nan"),
        pytest.param({"beta": 0.0}, "beta", "above 0", id="beta-zero"),
        pytest.param({"pred_format": "yolov8"}, "pred_format", r"no such prediction format \(known: coco, txt, voc, voc-results, yolo\)", id="pred-format"),
        pytest.param({"geometry": "polygon"}, "geometry", r"no such geometry \(known: box, shape\)", id="geometry"),
        pytest.param({"max_file_size": -1}, "max_file_size", "at least 0", id="max-file-size"),
        pytest.param({"jobs": -2}, "jobs", "at least 0", id="jobs"),
        pytest.param({"split": ""}, "split", "expected a split name", id="split"),
        pytest.param({"coco_gt": ""}, "coco_gt", "the path is empty", id="coco-gt"),
        pytest.param({"names": 3}, "names", "expected a path", id="names"),
        pytest.param({"class_choice": "cat"}, "class_choice", "expected a ClassChoice", id="class-choice"),
    ],
)  # fmt: skip
def test_every_keyword_is_checked_before_anything_is_read(
    keywords: dict[str, Any], field: str, message: str
) -> None:
    """A value no run can use raises RequestError naming its field, before any file is read
    (the paths here do not exist): never a number computed with it."""
    with pytest.raises(RequestError, match=message) as caught:
        vocmatch.evaluate("no/such/gt", "no/such/pred", **keywords)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("gt", "pred", "field"),
    [
        pytest.param("", DEMO_PRED, "gt", id="gt-empty"),
        pytest.param(DEMO_GT, "", "pred", id="pred-empty"),
        pytest.param(None, DEMO_PRED, "gt", id="gt-none"),
    ],
)
def test_paths_are_named_when_empty(gt: Any, pred: Any, field: str) -> None:
    """An empty path is not the current folder: the error names the path's field."""
    with pytest.raises(RequestError, match=f"^{field}: ") as caught:
        vocmatch.evaluate(gt, pred)
    assert caught.value.field == field


def test_a_request_record_is_checked_as_the_keywords_are() -> None:
    """EvalRequest itself refuses the value, whoever builds it (the command line builds one)."""
    with pytest.raises(RequestError, match=r"^max_dets '-1'"):
        EvalRequest(gt="gt", pred="pred", max_dets=-1)


@pytest.mark.parametrize(
    ("correction", "message"),
    [
        pytest.param("bonferroni", r"^correction 'bonferroni': no such correction", id="unknown"),
        pytest.param(7, r"^correction '7': no such correction", id="not-text"),
    ],
)
def test_a_comparison_checks_its_correction(correction: Any, message: str) -> None:
    """A comparison's request refuses a correction it does not know, naming the field (the
    check imports the corrections only for a request that has the field)."""
    from vocmatch.run.compare import DiffRequest

    with pytest.raises(RequestError, match=message):
        DiffRequest(
            gt=DEMO_GT, pred_a=DEMO_PRED, pred_b=DEMO_PRED, correction=correction, alpha=0.05
        )
    assert DiffRequest(gt=DEMO_GT, pred_a=DEMO_PRED, pred_b=DEMO_PRED, correction="holm")


def test_a_misspelt_keyword_lists_the_known_ones() -> None:
    with pytest.raises(TypeError, match=r"'protocl' \(known: .*protocol, reliability"):
        vocmatch.evaluate(DEMO_GT, DEMO_PRED, protocl="coco")


@pytest.mark.parametrize(
    ("sweep", "expected"),
    [
        pytest.param([0.75, 0.5, 0.5], (0.5, 0.75), id="list-sorted-once"),
        pytest.param("0.5:0.6:0.05", (0.5, 0.55, 0.6), id="range-text"),
    ],
)
def test_sweep_is_read_as_the_command_line_reads_it(
    sweep: Any, expected: tuple[float, ...]
) -> None:
    request = EvalRequest(gt="gt", pred="pred", sweep_thresholds=sweep)
    assert request.conventions().sweep_thresholds == pytest.approx(expected, abs=1e-12)


def test_the_command_line_names_the_flag_of_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    """The command line words the library's error with its flag, not the keyword."""
    error = RequestError("sweep_thresholds", "expected a finite number in [0, 1]", "nan")
    request_error(error)
    assert capsys.readouterr().err == (
        "vocmatch: error: --sweep 'nan': expected a finite number in [0, 1]\n"
    )
    words = {
        "sweep_thresholds": "--sweep",
        "max_dets": "--max-dets",
        "score_threshold": "--score-threshold",
        "beta": "--beta",
        "analysis": "--errors",
        "bootstrap": "--bootstrap",
    }
    from vocmatch.cli.console import OPTION_OF_FIELD

    for field, flag in words.items():
        assert OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-")) == flag


# The incremental evaluator ------------------------------------------------------------------

BOX = np.array([[0.0, 0, 10, 10]])


@pytest.mark.parametrize(
    ("args", "keywords", "field", "message"),
    [
        pytest.param(("voc2012",), {}, "conventions", r"conventions 'voc2012': no such protocol \(known: coco, default, ultralytics, ultralytics-8.4.175, ultralytics-8.4.36, voc07, voc12\)", id="unknown-protocol"),
        pytest.param((None,), {}, "conventions", "expected a protocol name .* or Conventions, got NoneType", id="none"),
        pytest.param((), {"fold_case": "yes"}, "fold_case", "expected True or False", id="fold-case"),
        pytest.param((), {"score_thresholds": 0.5}, "score_thresholds", "expected ScoreThresholds, got float", id="thresholds-type"),
        pytest.param((), {"class_names": ["car", " "]}, "class_names", "the name of id 1 is empty", id="class-name-empty"),
        pytest.param((), {"class_names": "car"}, "class_names", "expected a list of names", id="class-names-text"),
    ],
)  # fmt: skip
def test_evaluator_options_are_checked(
    args: tuple[Any, ...], keywords: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(RequestError, match=message) as caught:
        Evaluator(*args, **keywords)
    assert caught.value.field == field


def test_score_thresholds_refuse_nan() -> None:
    with pytest.raises(RequestError, match=r"^score_threshold 'nan'"):
        Evaluator(score_thresholds=ScoreThresholds(NAN))


@pytest.mark.parametrize(
    ("gt_boxes", "message"),
    [
        pytest.param([[10.0, 0, 4, 10]], r"^Expected `gt_boxes` to be x1, y1, x2, y2 with x1 <= x2 and y1 <= y2: row 0: x2 4 is less than x1 10$", id="x-inverted"),
        pytest.param([[0.0, 0, 4, 4], [0.0, 10, 4, 3]], r"row 1: y2 3 is less than y1 10$", id="y-inverted"),
        pytest.param([[1e155, 0, 1e155, 1]], r"^Expected `gt_boxes` to be within ±2\^53: row 0: x1 1e\+155 is out of range \(the limit is ±2\^53\)$", id="enormous"),
        pytest.param([[0.0, -1e16, 1, 1]], r"row 0: y1 -1e\+16 is out of range", id="enormous-negative"),
        pytest.param([[0.0, 0, NAN, 1]], r"^Expected `gt_boxes` to be finite: row 0: x2 nan is not a finite number$", id="nan"),
    ],
)  # fmt: skip
def test_add_refuses_the_boxes_the_xml_reader_refuses(gt_boxes: Any, message: str) -> None:
    """Inverted boxes (xywh given as xyxy) and coordinates whose area overflows are refused,
    not scored as misses and false positives."""
    evaluator = Evaluator()
    labels = ["car"] * len(gt_boxes)
    with pytest.raises(InputError, match=message):
        evaluator.add("a", gt_boxes, labels, np.zeros((0, 4)), [], [])
    assert len(evaluator) == 0


def _xml(x1: float, y1: float, x2: float, y2: float, name: str = "car") -> bytes:
    return (
        f"<annotation><object><name>{name}</name><bndbox><xmin>{x1!r}</xmin><ymin>{y1!r}</ymin>"
        f"<xmax>{x2!r}</xmax><ymax>{y2!r}</ymax></bndbox></object></annotation>"
    ).encode()


def _reader_takes(box: tuple[float, float, float, float]) -> bool:
    try:
        parse_annotation(_xml(*box), "a.xml", "a")
    except AnnotationError:
        return False
    return True


def _evaluator_takes(box: tuple[float, float, float, float]) -> bool:
    try:
        Evaluator().add("a", [box], ["car"], [box], [0.9], ["car"])
    except InputError:
        return False
    return True


coordinates = st.one_of(
    st.floats(-50, 50),
    st.sampled_from([2.0**53, -(2.0**53), 2.0**53 + 2, 1e155, -1e155, 0.0]),
)


@settings(max_examples=300, deadline=None)
@given(st.tuples(coordinates, coordinates, coordinates, coordinates))
def test_the_evaluator_takes_exactly_the_boxes_the_reader_takes(
    box: tuple[float, float, float, float],
) -> None:
    """One rule for both doors: a box is refused by Evaluator.add exactly when the XML
    reader refuses it in a file."""
    assert _evaluator_takes(box) == _reader_takes(box)


def test_a_perfect_prediction_of_a_taken_box_is_a_true_positive() -> None:
    evaluator = Evaluator()
    box = [[2.0**52, 0, 2.0**52 + 8, 8]]
    evaluator.add("a", box, ["car"], box, [0.9], ["car"])
    summary = evaluator.result().summary
    assert (summary.tp, summary.fp, summary.fn, summary.map) == (1, 0, 0, 1.0)


def test_class_names_are_stripped_as_the_reader_strips_them() -> None:
    """'car ' is the class 'car', as <name>car </name> is."""
    evaluator = Evaluator()
    evaluator.add("a", BOX, ["car"], BOX, [0.9], ["car "])
    evaluator.add("b", BOX, ["\tcar"], BOX, [0.9], ["car"])
    result = evaluator.result()
    assert [c.name for c in result.classes] == ["car"]
    assert (result.summary.tp, result.summary.fp, result.summary.fn) == (2, 0, 0)


def test_an_empty_class_name_is_refused() -> None:
    evaluator = Evaluator()
    with pytest.raises(InputError, match=r"^`pred_labels`: a class name is empty: ' '$"):
        evaluator.add("a", BOX, ["car"], BOX, [0.9], [" "])
    assert len(evaluator) == 0


def test_fold_case_folds_the_evaluators_names() -> None:
    evaluator = Evaluator(fold_case=True)
    evaluator.add("a", BOX, ["Car"], BOX, [0.9], ["car "])
    assert evaluator.result().summary.tp == 1


def snapshot(evaluator: Evaluator) -> tuple[object, ...]:
    """What a caller sees of an evaluator: its images, its state and its result's numbers."""
    result = evaluator.result()
    classes = [(c.name, c.gt, c.pred, c.tp, c.fp, c.fn, c.ap) for c in result.classes]
    return len(evaluator), evaluator.keys, evaluator.to_bytes(), result.summary, classes


def _batch(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    preds = [{"boxes": BOX + i, "scores": [0.5], "labels": ["car"]} for i in range(n)]
    targets = [{"boxes": BOX + i, "labels": ["car"]} for i in range(n)]
    return preds, targets


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda p, t: t[3].update(boxes=np.zeros((3, 5))), r"^Expected `gt_boxes` of image 3 to have shape \(N, 4\), got \(3, 5\)$", id="gt-shape"),
        pytest.param(lambda p, t: p[3].update(boxes=[[0, 0, 1]]), r"^Expected `pred_boxes` of image 3 to have shape \(N, 4\), got \(1, 3\)$", id="pred-shape"),
        pytest.param(lambda p, t: t[3].pop("boxes"), r"^Expected `targets\[3\]` to have a 'boxes' entry, got \['labels'\]$", id="missing-boxes"),
        pytest.param(lambda p, t: p[3].pop("labels"), r"^Expected `preds\[3\]` to have a 'labels' entry", id="missing-labels"),
        pytest.param(lambda p, t: p.__setitem__(3, [BOX]), r"^Expected `preds\[3\]` to be a mapping such as \{'boxes': ..., 'labels': ...\}, got list$", id="not-a-mapping"),
        pytest.param(lambda p, t: t[3].update(labels=["car", "dog"]), r"^Expected `gt_labels` of image 3 to have shape \(1,\), got \(2,\)$", id="label-count"),
        pytest.param(lambda p, t: p[3].update(scores=[[0.5]]), r"^Expected `pred_scores` of image 3 to have shape \(1,\), got \(1, 1\)$", id="score-shape"),
        pytest.param(lambda p, t: t[3].update(iscrowd=[0, 1]), r"^Expected `crowd` of image 3 to have shape \(1,\), got \(2,\)$", id="crowd-shape"),
        pytest.param(lambda p, t: p[3].update(boxes=[[5.0, 0, 1, 1]]), r"^Expected `pred_boxes` of image 3 to be x1, y1, x2, y2 .*: row 0: x2 1 is less than x1 5$", id="inverted"),
        pytest.param(lambda p, t: t[3].update(labels=[""]), r"^`gt_labels` of image 3: a class name is empty: ''$", id="empty-name"),
    ],
)  # fmt: skip
def test_add_batch_says_what_layout_it_expects(change: Any, message: str) -> None:
    """A wrong layout names the array and the image, and leaves the evaluator as it was."""
    evaluator = Evaluator()
    evaluator.add("before", BOX, ["dog"], BOX, [0.7], ["dog"])
    before = snapshot(evaluator)
    preds, targets = _batch(5)
    change(preds, targets)
    with pytest.raises(InputError, match=message):
        evaluator.add_batch(preds, targets)
    assert snapshot(evaluator) == before


@pytest.mark.parametrize(
    ("side", "boxes", "message"),
    [
        pytest.param("targets", np.zeros((1, 3)), r"^Expected `gt_boxes` of image 3 to have shape \(N, 4\), got \(1, 3\)$", id="gt-shape"),
        pytest.param("preds", np.zeros((1, 3)), r"^Expected `pred_boxes` of image 3 to have shape \(N, 4\), got \(1, 3\)$", id="pred-shape"),
        pytest.param("targets", np.array([["a", "b", "c", "d"]]), r"^Expected `gt_boxes` of image 3 to hold numbers, got dtype <U1$", id="gt-text"),
        pytest.param("preds", [[5.0, 0, 1, 1]], r"^Expected `pred_boxes` of image 3 to be x1, y1, x2, y2 .*: row 0: x2 1 is less than x1 5$", id="pred-inverted"),
    ],
)  # fmt: skip
def test_a_batch_of_class_ids_with_one_bad_side_is_refused_as_add_refuses_it(
    side: str, boxes: Any, message: str
) -> None:
    """A batch of integer labels with image ids (taken at once when it is plain) with one
    image's boxes of one side refused: the same message as image by image, the evaluator
    unchanged."""
    evaluator = Evaluator(class_names=["car", "dog"])
    evaluator.add("before", BOX, [1], BOX, [0.7], [1])
    before = snapshot(evaluator)
    preds = [{"boxes": BOX + i, "scores": [0.5], "labels": [0]} for i in range(5)]
    targets = [{"boxes": BOX + i, "labels": [0]} for i in range(5)]
    (preds if side == "preds" else targets)[3]["boxes"] = boxes
    with pytest.raises(InputError, match=message):
        evaluator.add_batch(preds, targets, image_ids=[f"img{i}" for i in range(5)])
    assert snapshot(evaluator) == before


@pytest.mark.parametrize(
    ("preds", "targets", "message"),
    [
        pytest.param({"boxes": BOX}, [], r"^Expected `preds` to be a list of mappings, one per image, got dict$", id="one-mapping"),
        pytest.param([], None, r"^Expected `targets` to be a list of mappings, one per image, got NoneType$", id="none"),
    ],
)  # fmt: skip
def test_add_batch_wants_lists(preds: Any, targets: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Evaluator().add_batch(preds, targets)


def test_add_batch_with_ids_names_an_image_that_is_not_a_mapping() -> None:
    """With image ids (the batch first tried whole), a list for an image is named too."""
    preds, targets = _batch(2)
    evaluator = Evaluator()
    with pytest.raises(InputError, match=r"^Expected `targets\[1\]` to be a mapping"):
        evaluator.add_batch(preds, [targets[0], [BOX]], image_ids=["a", "b"])
    assert len(evaluator) == 0


def test_add_batch_refuses_a_key_given_twice() -> None:
    preds, targets = _batch(2)
    evaluator = Evaluator()
    with pytest.raises(InputError, match=r"^image 'a' is given twice in the batch$"):
        evaluator.add_batch(preds, targets, image_ids=["a", "a"])
    assert len(evaluator) == 0


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 6),
    bad=st.data(),
    numbered=st.booleans(),
)
def test_a_refused_batch_leaves_the_evaluator_exactly_as_it_was(
    n: int, bad: st.DataObject, numbered: bool
) -> None:
    """Whichever image of a batch is refused, and however it is wrong, the evaluator's
    state is byte for byte what it was, and a later batch numbers its images as before."""
    at = bad.draw(st.integers(0, n - 1))
    wrong = bad.draw(
        st.sampled_from(
            [
                {"boxes": [[3.0, 0, 1, 1]]},
                {"boxes": [[0.0, 0, 1e200, 1]]},
                {"labels": [7]},  # an integer id the class table does not name
                {"labels": [" "]},
            ]
        )
    )
    evaluator = Evaluator(class_names=["car", "dog"])
    evaluator.add("seen", BOX, [0], BOX, [0.3], [1])
    before = snapshot(evaluator)
    preds, targets = _batch(n)
    for entries in (preds, targets):
        for entry in entries:
            entry["labels"] = [0]
    preds[at].update(wrong)
    ids = None if numbered else [f"k{i}" for i in range(n)]
    with pytest.raises(InputError):
        evaluator.add_batch(preds, targets, image_ids=ids)
    assert snapshot(evaluator) == before
    reference = Evaluator(class_names=["car", "dog"])
    reference.add("seen", BOX, [0], BOX, [0.3], [1])
    for kept in (evaluator, reference):
        good_preds, good_targets = _batch(2)
        kept.add_batch(good_preds, good_targets)
    assert evaluator.to_bytes() == reference.to_bytes()


def test_the_demo_paths_still_evaluate() -> None:
    """The checks refuse nothing a real run gives: the demo's mAP is unchanged; its image
    without a prediction file is warned of, as the command line notes it."""
    with street_05_unpredicted():
        assert vocmatch.evaluate(DEMO_GT, DEMO_PRED).evaluation.summary.map == 0.625


# Inputs given as URLs, or read on a cluster -------------------------------------------------


@pytest.fixture
def spaced_demo(tmp_path: Path) -> tuple[Path, Path]:
    """The demo set in a folder whose name holds a space (``%20`` in its URL)."""
    import shutil

    root = tmp_path / "my data"
    shutil.copytree(DEMO_GT, root / "gt")
    shutil.copytree(DEMO_PRED, root / "pred")
    return root / "gt", root / "pred"


def _numbers(report: vocmatch.EvalReport) -> tuple[object, ...]:
    evaluation = report.evaluation
    classes = [(c.name, c.tp, c.fp, c.fn, c.ap) for c in evaluation.classes]
    return evaluation.summary, classes, [i.key for i in evaluation.images]


@pytest.mark.parametrize(
    "as_url",
    [
        pytest.param(lambda p: p.as_uri(), id="as-uri-escaped"),
        pytest.param(lambda p: "file://localhost" + p.as_uri()[len("file://") :], id="localhost"),
    ],
)
def test_file_urls_evaluate_as_their_folders(spaced_demo: tuple[Path, Path], as_url: Any) -> None:
    """vocmatch.evaluate reads URLs as `vocmatch eval` does: the folder's numbers."""
    gt, pred = spaced_demo
    assert "%20" in gt.as_uri()
    with street_05_unpredicted():
        local = vocmatch.evaluate(gt, pred)
    with street_05_unpredicted():
        remote = vocmatch.evaluate(as_url(gt), as_url(pred))
    assert _numbers(remote) == _numbers(local)


def test_the_command_line_reads_an_escaped_file_url(spaced_demo: tuple[Path, Path]) -> None:
    gt, pred = spaced_demo
    code, out, err = run_cli(gt.as_uri(), pred.as_uri(), "--format", "json")
    local = run_cli(str(gt), str(pred), "--format", "json")
    assert (code, err) == (local[0], local[2])
    assert json.loads(out)["summary"] == json.loads(local[1])["summary"]


def test_a_missing_file_url_says_so(tmp_path: Path) -> None:
    url = (tmp_path / "nothing").as_uri()
    with pytest.raises(InputError, match=f"^{re.escape(url)}: no such folder$"):
        vocmatch.evaluate(url, (tmp_path / "pred").as_uri())


def test_a_file_url_of_another_host_is_refused() -> None:
    with pytest.raises(InputError, match=r"^file://host/gt: a file URL of the host 'host'"):
        vocmatch.evaluate("file://host/gt", "file://host/pred")


@pytest.mark.parametrize(
    ("keywords", "field"),
    [
        pytest.param({"split": "test"}, "split", id="split"),
        pytest.param({"pred_format": "coco"}, "pred_format", id="pred-format"),
    ],
)
def test_options_urls_cannot_honour_are_refused(
    spaced_demo: tuple[Path, Path], keywords: dict[str, Any], field: str
) -> None:
    gt, pred = spaced_demo
    with pytest.raises(RequestError, match="is not available for inputs given as URLs") as caught:
        vocmatch.evaluate(gt.as_uri(), pred.as_uri(), **keywords)
    assert caught.value.field == field


@pytest.mark.parametrize("dask", ["local:0", "nowhere", ""])
def test_a_bad_scheduler_is_named(dask: str) -> None:
    with pytest.raises(RequestError, match="is neither local:N") as caught:
        vocmatch.evaluate(DEMO_GT, DEMO_PRED, dask=dask)
    assert caught.value.field == "dask"


@pytest.mark.parametrize(
    "boxes", [pytest.param(False, id="records"), pytest.param(True, id="boxes")]
)
def test_dask_gives_the_local_numbers(boxes: bool) -> None:
    """dask='local:1' evaluates on a cluster of one worker, as `vocmatch eval --dask`:
    from match records, or from the boxes when the report needs them."""
    pytest.importorskip("distributed", reason="dask= needs the dask extra")
    with street_05_unpredicted():
        local = vocmatch.evaluate(DEMO_GT, DEMO_PRED, analysis=boxes)
    with street_05_unpredicted():
        remote = vocmatch.evaluate(DEMO_GT, DEMO_PRED, analysis=boxes, dask="local:1")
    assert _numbers(remote) == _numbers(local)


@pytest.mark.parametrize("command", ["eval", "diff", "suspects"])
def test_the_command_line_runs_the_librarys_check(command: str) -> None:
    """A value only the library's check refuses reaches the user as one line naming the
    flag, exit 2, from every command that builds a request: never a traceback."""
    preds = [str(DEMO_PRED)] * (2 if command == "diff" else 1)
    code, out, err = run_cli(command, str(DEMO_GT), *preds, "--split", " ")
    assert (code, out) == (2, "")
    assert err == "vocmatch: error: --split ' ': expected a split name or a file of image ids\n"


def test_a_shard_of_file_urls_is_the_shard_of_the_folders(spaced_demo: tuple[Path, Path]) -> None:
    """vocmatch.evaluator_for reads URLs too: a shard's state equals the folders' one."""
    gt, pred = spaced_demo
    local = vocmatch.evaluator_for(EvalRequest(gt=gt, pred=pred), shard=(1, 2))
    remote = vocmatch.evaluator_for(EvalRequest(gt=gt.as_uri(), pred=pred.as_uri()), shard=(1, 2))
    assert remote.keys == local.keys
    assert snapshot(remote)[3:] == snapshot(local)[3:]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        pytest.param({"iou_threshold": NAN}, "iou_threshold", r"'nan': expected a finite number in \[0, 1\]", id="iou-nan"),
        pytest.param({"match_rule": "greedy"}, "match_rule", r"no such match rule \(known: devkit, iou-order, unmatched, unmatched-first\)", id="match-rule"),
        pytest.param({"max_dets": 0}, "max_dets", "at least 1", id="max-dets"),
        pytest.param({"ap_thresholds": ()}, "ap_thresholds", "no threshold given", id="ap-none"),
        pytest.param({"summary": "yes"}, "summary", r"no such summary kind \(known: coco, ultralytics, voc\)", id="summary"),
    ],
)  # fmt: skip
def test_conventions_made_by_hand_are_checked(
    fields: dict[str, Any], field: str, message: str
) -> None:
    """Conventions are checked when made, however made: a preset, a request, or by hand."""
    with pytest.raises(RequestError, match=message) as caught:
        vocmatch.Conventions("mine", **fields)
    assert caught.value.field == field


def test_conventions_keep_the_sweep_ascending() -> None:
    assert vocmatch.Conventions("mine", sweep_thresholds=(0.75, 0.5, 0.75)).sweep_thresholds == (
        0.5,
        0.75,
    )


def test_per_class_thresholds_are_named_as_the_classes() -> None:
    """A threshold for 'car ' is the threshold of the class 'car'."""
    assert ScoreThresholds(None, (("car ", 0.3),)).for_class("car") == 0.3


def test_the_command_lines_choices_are_the_librarys_names() -> None:
    """Each option of `vocmatch eval` that names a choice offers exactly the names the
    library's check knows: a value one door takes, the other takes too."""
    import click

    from vocmatch.cli.eval_cmd import eval_command
    from vocmatch.core.protocol import DIFFICULT_RULES, INTERPOLATIONS, MATCH_RULES, PROTOCOLS
    from vocmatch.readers import pred_formats
    from vocmatch.run.request_checks import GEOMETRIES, PRED_FORMATS

    known = {
        "protocol_name": set(PROTOCOLS),
        "match_rule": set(MATCH_RULES),
        "difficult": set(DIFFICULT_RULES),
        "interpolation": set(INTERPOLATIONS),
        "pred_format": set(PRED_FORMATS),
        "geometry": set(GEOMETRIES),
    }
    choices = {
        p.name: set(p.type.choices)
        for p in eval_command.params
        if p.name in known and isinstance(p.type, click.Choice)
    }
    assert choices == known
    assert PRED_FORMATS == pred_formats.PRED_FORMATS


def test_every_field_of_every_request_is_checked() -> None:
    """A field added to a request record is checked with the others, or this test names it."""
    import dataclasses

    from vocmatch.run.request_checks import CHECKED_FIELDS

    requests = [
        vocmatch.EvalRequest,
        vocmatch.DiffRequest,
        vocmatch.SuspectsRequest,
        vocmatch.LabelsRequest,
    ]
    fields = {f.name for request in requests for f in dataclasses.fields(request)}
    assert sorted(fields - CHECKED_FIELDS) == []

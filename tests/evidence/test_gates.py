"""Quality gates: how they are written, what they measure, and when they fail."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import Evaluation, evaluate, evaluate_directories
from vocmatch.evidence.gate_records import Gate, GateResult, parse_gate
from vocmatch.evidence.gates import ImageCheck, check_gates
from vocmatch.readers.parse import AnnotationSet

DEMO = evaluate_directories(FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred")


def one_image(gt_boxes: tuple[Box, ...], pred_boxes: tuple[Box, ...]) -> Evaluation:
    gt = AnnotationSet("gt", (ImageAnnotation("a", "gt/a.xml", gt_boxes),), ())
    pred = AnnotationSet("pred", (ImageAnnotation("a", "pred/a.xml", pred_boxes),), ())
    return evaluate(gt, pred)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("map=0.5", Gate(None, "map", 0.5), id="dataset"),
        pytest.param("person:recall=0.9", Gate("person", "recall", 0.9), id="class"),
        pytest.param("mAP=0.5", Gate(None, "map", 0.5), id="metric-any-case"),
        pytest.param("ap=0.25", Gate(None, "map", 0.25), id="ap-is-map"),
        pytest.param("person:AP=1", Gate("person", "map", 1.0), id="class-ap"),
        pytest.param(" car : F1 = 0 ", Gate("car", "f1", 0.0), id="spaces"),
        pytest.param(
            "traffic light:precision=1e-1",
            Gate("traffic light", "precision", 0.1),
            id="space-in-name-and-exponent",
        ),
        pytest.param("ns:cat:recall=0.5", Gate("ns:cat", "recall", 0.5), id="colon-in-name"),
    ],
)
def test_parse_gate(text: str, expected: Gate) -> None:
    """METRIC=VALUE and CLASS:METRIC=VALUE are read; metrics are case-insensitive."""
    assert parse_gate(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("map", "expected METRIC=VALUE or CLASS:METRIC=VALUE, got 'map'", id="no-="),
        pytest.param(
            "=0.5", "expected METRIC=VALUE or CLASS:METRIC=VALUE, got '=0.5'", id="no-metric"
        ),
        pytest.param(
            "person:=0.5",
            "expected METRIC=VALUE or CLASS:METRIC=VALUE, got 'person:=0.5'",
            id="class-without-metric",
        ),
        pytest.param(
            "recall=", "expected METRIC=VALUE or CLASS:METRIC=VALUE, got 'recall='", id="no-value"
        ),
        pytest.param(":recall=0.5", "empty class name in ':recall=0.5'", id="empty-class"),
        pytest.param(
            "iou=0.5",
            "unknown metric 'iou' in 'iou=0.5': expected one of map, precision, recall, f1, ap50, ap75, reached, map50-95, p, r",
            id="unknown-metric",
        ),
        pytest.param(
            "person:recall>=0.9",
            "unknown metric 'recall>' in 'person:recall>=0.9': "
            "expected one of map, precision, recall, f1, ap50, ap75, reached, map50-95, p, r",
            id="comparison-sign",
        ),
        pytest.param("map=high", "value 'high' in 'map=high' is not a number", id="not-a-number"),
        pytest.param("map=-0.1", "value -0.1 in 'map=-0.1' is outside [0, 1]", id="negative"),
        pytest.param(
            "recall=90",
            "value 90 in 'recall=90' is outside [0, 1] (a percentage? write 0.9)",
            id="percentage",
        ),
        pytest.param(
            "recall=1000", "value 1000 in 'recall=1000' is outside [0, 1]", id="far-above"
        ),
        pytest.param("recall=nan", "value nan in 'recall=nan' is outside [0, 1]", id="nan"),
        pytest.param("recall=inf", "value inf in 'recall=inf' is outside [0, 1]", id="inf"),
    ],
)
def test_parse_gate_errors(text: str, message: str) -> None:
    """Malformed gates raise ValueError with a one-line message naming the problem."""
    with pytest.raises(ValueError) as error:
        parse_gate(text)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("gate", "label", "text"),
    [
        pytest.param(Gate(None, "map", 0.5), "map", "map >= 0.5", id="dataset"),
        pytest.param(Gate("person", "map", 1.0), "person:ap", "person:ap >= 1.0", id="class-ap"),
        pytest.param(Gate("car", "f1", 0.25), "car:f1", "car:f1 >= 0.25", id="class-f1"),
    ],
)
def test_gate_label_and_text(gate: Gate, label: str, text: str) -> None:
    """A class's mAP gate is labelled ap; the text is the condition."""
    assert gate.label == label
    assert str(gate) == text


@given(st.floats(min_value=0.0, max_value=1.0))
def test_parse_gate_round_trips_every_value(value: float) -> None:
    """Any value in [0, 1], written with repr, is read back exactly."""
    assert parse_gate(f"person:recall={value!r}") == Gate("person", "recall", value)


@pytest.mark.parametrize(
    ("text", "measured", "passed", "line"),
    [
        pytest.param("map=0.5", 0.625, True, "map 0.6250 >= 0.5000", id="map-pass"),
        pytest.param("map=0.7", 0.625, False, "map 0.6250 < 0.7000", id="map-fail"),
        pytest.param("precision=0.6", 10 / 15, True, "precision 0.6667 >= 0.6000", id="precision"),
        pytest.param("recall=0.75", 10 / 14, False, "recall 0.7143 < 0.7500", id="recall"),
        pytest.param("f1=0.6", 20 / 29, True, "f1 0.6897 >= 0.6000", id="f1"),
        pytest.param(
            "person:recall=0.9", 1.0, True, "person:recall 1.0000 >= 0.9000", id="person-recall"
        ),
        pytest.param(
            "person:precision=0.9",
            0.8,
            False,
            "person:precision 0.8000 < 0.9000",
            id="person-precision",
        ),
        pytest.param("person:f1=0.9", 8 / 9, False, "person:f1 0.8889 < 0.9000", id="person-f1"),
        pytest.param("car:recall=0.9", 0.75, False, "car:recall 0.7500 < 0.9000", id="car-recall"),
        pytest.param("bicycle:ap=0.5", 0.5, True, "bicycle:ap 0.5000 >= 0.5000", id="equal-passes"),
        pytest.param("cat:ap=0.1", 0.0, False, "cat:ap 0.0000 < 0.1000", id="never-predicted"),
    ],
)
def test_check_gates_on_the_demo(text: str, measured: float, passed: bool, line: str) -> None:
    """Each gate measures the demo's summary or class value and passes when it is >= VALUE."""
    (result,) = check_gates(DEMO, [parse_gate(text)]).gates
    assert result.measured == pytest.approx(measured, rel=1e-15)
    assert result.passed is passed
    assert result.reason is None
    assert str(result) == line


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param(
            "truck:recall=0.5",
            "truck:recall undefined, needs >= 0.5000 (no ground truth of this class)",
            id="class-only-in-predictions",
        ),
        pytest.param(
            "truck:ap=0.5",
            "truck:ap undefined, needs >= 0.5000 (no ground truth of this class)",
            id="ap-without-gt",
        ),
        pytest.param(
            "cat:precision=0",
            "cat:precision undefined, needs >= 0.0000 (no predictions of this class)",
            id="precision-without-predictions",
        ),
        pytest.param(
            "cat:f1=0",
            "cat:f1 undefined, needs >= 0.0000 (no predictions of this class)",
            id="f1-without-predictions",
        ),
        pytest.param(
            "truck:f1=0",
            "truck:f1 undefined, needs >= 0.0000 (no ground truth of this class)",
            id="f1-without-gt",
        ),
    ],
)
def test_undefined_metric_fails_its_gate(text: str, line: str) -> None:
    """A metric that is not defined fails even a gate of 0, and the line says why."""
    (result,) = check_gates(DEMO, [parse_gate(text)]).gates
    assert result.measured is None
    assert result.passed is False
    assert str(result) == line


def test_map_without_scores_fails_with_the_reason() -> None:
    """Unscored predictions have no AP: a map gate fails, a recall gate still works."""
    box = Box("cat", 0, 0, 10, 10)
    evaluation = one_image((box,), (box,))
    report = check_gates(evaluation, [parse_gate("map=0.5"), parse_gate("recall=1")])
    assert [str(r) for r in report.gates] == [
        "map undefined, needs >= 0.5000 (predictions carry no scores)",
        "recall 1.0000 >= 1.0000",
    ]
    assert [r.passed for r in report.gates] == [False, True]


def test_no_predictions_and_no_ground_truth_reasons() -> None:
    """Without predictions precision is undefined; without ground truth recall is."""
    no_pred = one_image((Box("cat", 0, 0, 10, 10),), ())
    gates = [parse_gate(t) for t in ("map=0", "precision=0", "f1=0", "cat:ap=0")]
    assert [r.reason for r in check_gates(no_pred, gates).gates] == [
        "no predictions",
        "no predictions",
        "no predictions",
        "no predictions",
    ]
    no_gt = one_image((), (Box("cat", 0, 0, 10, 10, score=0.9),))
    gates = [parse_gate(t) for t in ("map=0", "recall=0", "f1=0", "precision=0")]
    assert [(r.reason, r.passed) for r in check_gates(no_gt, gates).gates] == [
        ("no ground truth", False),
        ("no ground truth", False),
        ("no ground truth", False),
        (None, True),
    ]


def test_rounding_below_the_bound_still_passes() -> None:
    """A value one float step above the measured value reads as equal and passes."""
    bound = math.nextafter(10 / 14, 1.0)
    (result,) = check_gates(DEMO, [Gate(None, "recall", bound)]).gates
    assert result.passed is True
    (result,) = check_gates(DEMO, [Gate(None, "recall", 0.7143)]).gates
    assert result.passed is False


@given(st.floats(min_value=0.0, max_value=1.0))
def test_gate_passes_exactly_up_to_the_measured_value(value: float) -> None:
    """recall=v passes when v <= recall (up to rounding) and fails above it."""
    (result,) = check_gates(DEMO, [Gate(None, "recall", value)]).gates
    recall = 10 / 14
    assert result.passed is (value <= recall or math.isclose(value, recall, rel_tol=1e-9))


def test_gates_keep_the_order_given() -> None:
    """Results come back in the order the gates were given, repeats included."""
    texts = ["recall=0.5", "map=0.5", "person:recall=0.5", "map=0.5"]
    report = check_gates(DEMO, [parse_gate(t) for t in texts])
    assert [r.gate for r in report.gates] == [parse_gate(t) for t in texts]


def test_unknown_class_is_an_input_error() -> None:
    """A class in neither ground truth nor predictions is a usage error, with a suggestion."""
    with pytest.raises(InputError) as error:
        check_gates(DEMO, [parse_gate("persn:recall=0.9")])
    assert str(error.value) == (
        "gate 'persn:recall' names class 'persn', which is in neither the ground truth nor "
        "the predictions; did you mean 'person'?"
    )
    with pytest.raises(InputError) as error:
        check_gates(DEMO, [parse_gate("zebra:ap=0.9")])
    assert str(error.value) == (
        "gate 'zebra:ap' names class 'zebra', which is in neither the ground truth nor "
        "the predictions"
    )


@pytest.mark.parametrize(
    ("max_fp", "max_fn", "failing"),
    [
        pytest.param(None, None, [], id="no-limits"),
        pytest.param(
            1,
            1,
            [("street_01", ("fp 2 > max-fp 1",)), ("street_05", ("fn 2 > max-fn 1",))],
            id="one-each",
        ),
        pytest.param(2, 2, [], id="all-within"),
        pytest.param(
            0,
            None,
            [
                ("street_01", ("fp 2 > max-fp 0",)),
                ("street_03", ("fp 1 > max-fp 0",)),
                ("street_04", ("fp 1 > max-fp 0",)),
                ("street_06", ("fp 1 > max-fp 0",)),
            ],
            id="no-fp",
        ),
        pytest.param(
            0,
            0,
            [
                ("street_01", ("fp 2 > max-fp 0", "fn 1 > max-fn 0")),
                ("street_03", ("fp 1 > max-fp 0", "fn 1 > max-fn 0")),
                ("street_04", ("fp 1 > max-fp 0",)),
                ("street_05", ("fn 2 > max-fn 0",)),
                ("street_06", ("fp 1 > max-fp 0",)),
            ],
            id="perfect-images",
        ),
    ],
)
def test_per_image_limits(
    max_fp: int | None, max_fn: int | None, failing: list[tuple[str, tuple[str, ...]]]
) -> None:
    """Every image is checked; those over a limit fail with their counts."""
    report = check_gates(DEMO, max_fp=max_fp, max_fn=max_fn)
    assert [i.key for i in report.images] == [f"street_0{n}" for n in range(1, 7)]
    assert [(i.key, i.failures()) for i in report.failed_images] == failing
    assert report.passed is (not failing)
    assert report.has_checks is (max_fp is not None or max_fn is not None)


def test_report_combines_gates_and_images() -> None:
    """The report passes only when every gate and every image passes."""
    passing = check_gates(DEMO, [parse_gate("map=0.6")], max_fp=2, max_fn=2)
    assert passing.passed and passing.failed_gates == () and passing.failed_images == ()
    failing = check_gates(DEMO, [parse_gate("map=0.6"), parse_gate("map=0.7")], max_fn=1)
    assert not failing.passed
    assert failing.failed_gates == (GateResult(Gate(None, "map", 0.7), 0.625, False),)
    assert failing.failed_images == (ImageCheck("street_05", 0, 2, None, 1),)


def test_negative_limit_is_refused() -> None:
    """A negative per-image limit is a ValueError."""
    with pytest.raises(ValueError, match=r"^max_fp must be at least 0, got -1$"):
        check_gates(DEMO, max_fp=-1)

"""The regression diff between two runs on the same ground truth, and its gates."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import FIXTURES, GOLDEN, ROOT
from tests.conftest import run_cli as run
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import evaluate, read_pair
from vocmatch.evidence.diff import (
    Change,
    EvaluationDiff,
    ObjectRef,
    evaluation_diff,
)
from vocmatch.evidence.regression_gates import (
    RegressionGate,
    check_regressions,
    parse_regression_gate,
)
from vocmatch.readers.parse import AnnotationSet, read_directory
from vocmatch.render.diff_tables import diff_report

DIFF = FIXTURES / "diff"


def fixture_diff() -> EvaluationDiff:
    gt, pred_a = read_pair(DIFF / "gt", DIFF / "pred_a")
    pred_b = read_directory(DIFF / "pred_b")
    return evaluation_diff(evaluate(gt, pred_a), evaluate(gt, pred_b), pred_a, pred_b)


def test_per_image_changes_worst_first() -> None:
    """The kitchen lost its bowl and gained a false cup; office found its mug; hall lost an
    FP; the chair FP moved by 2 px is the same error in both runs."""
    diff = fixture_diff()
    got = [
        (
            i.key,
            *(
                tuple(str(o) for o in objects)
                for objects in (i.new_fn, i.fixed_fn, i.new_fp, i.removed_fp)
            ),
            i.net,
        )
        for i in diff.images
    ]
    assert got == [
        ("kitchen", ("bowl#1",), (), ("cup#1",), (), -2),
        ("street", (), (), (), (), 0),
        ("hall", (), (), (), ("person#1",), 1),
        ("office", (), ("mug#1",), (), (), 1),
    ]
    assert diff.images[0].new_fn == (ObjectRef(1, "bowl"),)
    assert (diff.worse, diff.better) == (2, 2)


def test_per_class_and_summary_changes() -> None:
    """mAP falls 5/6 -> 3/4 while precision and recall stay the same."""
    diff = fixture_diff()
    s = diff.summary
    assert (s.map.a, s.map.b) == (pytest.approx(5 / 6), pytest.approx(3 / 4))
    assert s.map.delta == pytest.approx(-1 / 12)
    assert s.precision.delta == 0.0
    assert s.recall.delta == 0.0
    assert (s.tp.delta, s.fp.delta, s.fn.delta) == (0, 0, 0)
    classes = {c.name: c for c in diff.classes}
    assert list(classes) == ["bowl", "car", "chair", "cup", "laptop", "mug", "person"]
    assert (classes["bowl"].ap.delta, classes["bowl"].recall.delta) == (-1.0, -1.0)
    assert classes["bowl"].precision == Change(1.0, None)
    assert (classes["cup"].ap.delta, classes["cup"].precision.delta) == (-0.5, -0.5)
    assert classes["mug"].ap.delta == 1.0
    assert classes["person"].precision.delta == 0.5
    assert classes["chair"].ap.delta is None


@pytest.mark.parametrize(
    ("gate", "passed", "text"),
    [
        pytest.param("map=-0.01", False, "map 0.8333 -> 0.7500 (-0.0833 < -0.0100)", id="map"),
        pytest.param("map=-0.1", True, "map 0.8333 -> 0.7500 (-0.0833 >= -0.1000)", id="map-ok"),
        pytest.param("recall=0", True, "recall 0.8333 -> 0.8333 (+0.0000 >= +0.0000)", id="flat"),
        pytest.param(
            "bowl:ap=-0.5", False, "bowl:ap 1.0000 -> 0.0000 (-1.0000 < -0.5000)", id="class"
        ),
        pytest.param(
            "bowl:precision=-1",
            False,
            "bowl:precision change undefined, needs >= -1.0000 (undefined in run B)",
            id="undefined",
        ),
    ],
)
def test_regression_gates(gate: str, passed: bool, text: str) -> None:
    """A gate passes when B - A >= DELTA; an undefined change fails with the reason."""
    (result,) = check_regressions(fixture_diff(), [parse_regression_gate(gate)])
    assert result.passed is passed
    assert str(result) == text


def test_gate_on_unknown_class_is_an_input_error() -> None:
    """A class found in neither run is a typo, not a regression."""
    with pytest.raises(
        InputError, match="names class 'bowls', found in neither run; did you mean 'bowl'"
    ):
        check_regressions(fixture_diff(), [RegressionGate("bowls", "map", 0.0)])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("map", "expected METRIC=DELTA", id="no-equals"),
        pytest.param("mAP=x", "is not a number", id="not-a-number"),
        pytest.param("iou=0.1", "unknown metric 'iou'", id="unknown-metric"),
        pytest.param("map=-2", r"outside \[-1, 1\]", id="out-of-range"),
        pytest.param(":map=0", "empty class name", id="empty-class"),
    ],
)
def test_parse_regression_gate_errors(text: str, message: str) -> None:
    """Malformed gates are refused with a one-line message."""
    with pytest.raises(ValueError, match=message):
        parse_regression_gate(text)


def test_two_labelling_passes_without_scores() -> None:
    """Unscored runs: AP is undefined, the counts and per-image changes still work."""
    gt = AnnotationSet(
        "gt",
        (ImageAnnotation("a", "gt/a.xml", (Box("cat", 0, 0, 10, 10), Box("dog", 20, 0, 30, 10))),),
        (),
    )
    pass_a = AnnotationSet(
        "a",
        (ImageAnnotation("a", "a/a.xml", (Box("cat", 0, 0, 10, 10), Box("dog", 50, 0, 60, 10))),),
        (),
    )
    pass_b = AnnotationSet(
        "b",
        (ImageAnnotation("a", "b/a.xml", (Box("cat", 0, 0, 10, 4), Box("dog", 20, 0, 30, 10))),),
        (),
    )
    diff = evaluation_diff(evaluate(gt, pass_a), evaluate(gt, pass_b), pass_a, pass_b)
    (image,) = diff.images
    # B lost the cat (cut to 40 %), found the dog; A's far dog is gone, B's cut cat is new.
    assert (image.new_fn, image.fixed_fn, image.new_fp, image.removed_fp) == (
        (ObjectRef(0, "cat"),),
        (ObjectRef(1, "dog"),),
        (ObjectRef(0, "cat"),),
        (ObjectRef(1, "dog"),),
    )
    assert diff.summary.map == Change(None, None)
    assert diff.summary.recall.delta == 0.0
    (result,) = check_regressions(diff, [parse_regression_gate("map=0")])
    assert not result.passed
    assert result.reason == "undefined in both runs"


def test_different_conventions_are_refused() -> None:
    """Two evaluations under different protocols do not compare."""
    gt, pred = read_pair(DIFF / "gt", DIFF / "pred_a")
    with pytest.raises(InputError, match="different conventions"):
        evaluation_diff(evaluate(gt, pred), evaluate(gt, pred, protocol("voc12")), pred, pred)


def test_a_run_against_itself_changes_nothing() -> None:
    """Every delta is zero and no image changed."""
    gt, pred = read_pair(DIFF / "gt", DIFF / "pred_b")
    evaluation = evaluate(gt, pred)
    diff = evaluation_diff(evaluation, evaluation, pred, pred)
    assert not any(i.changed for i in diff.images)
    assert diff.summary.map.delta == 0.0


DIRS = [str(DIFF / "gt"), str(DIFF / "pred_a"), str(DIFF / "pred_b")]


def test_diff_report_golden(golden: Callable[[str, str], None]) -> None:
    """The diff of the fixture reads as in the golden file (and the docs)."""
    gt, pred_a = read_pair(DIFF / "gt", DIFF / "pred_a")
    pred_b = read_directory(DIFF / "pred_b")
    a, b = evaluate(gt, pred_a), evaluate(gt, pred_b)
    diff = evaluation_diff(a, b, pred_a, pred_b, "fixtures/diff/pred_a", "fixtures/diff/pred_b")
    results = check_regressions(diff, [parse_regression_gate("map=-0.01")])
    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None).print(diff_report(diff, results))
    golden("diff_fixture.txt", buffer.getvalue())


def test_cli_diff_without_gates_exits_0() -> None:
    """The report goes to stdout; no gate, no failure."""
    code, out, err = run("diff", *DIRS)
    assert code == 0
    assert err == ""
    assert "Images that changed" in out and "bowl#1" in out


@pytest.mark.parametrize(
    ("gate", "code", "err"),
    [
        pytest.param(
            "map=-0.01",
            1,
            "vocmatch: regression: map 0.8333 -> 0.7500 (-0.0833 < -0.0100)\n",
            id="known-regression-fails",
        ),
        pytest.param("map=-0.1", 0, "", id="within-tolerance-passes"),
        pytest.param(
            "bowl:recall=0",
            1,
            "vocmatch: regression: bowl:recall 1.0000 -> 0.0000 (-1.0000 < +0.0000)\n",
            id="class-gate",
        ),
    ],
)
def test_cli_fail_on_regression(gate: str, code: int, err: str) -> None:
    """--fail-on-regression exits 1 when the change is below DELTA and says why on stderr."""
    got_code, _, got_err = run("diff", *DIRS, "--fail-on-regression", gate)
    assert (got_code, got_err) == (code, err)


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        pytest.param("map", "expected METRIC=DELTA", id="malformed"),
        pytest.param("bowls:ap=0", "did you mean 'bowl'", id="unknown-class"),
    ],
)
def test_cli_bad_gate_is_usage_error(gate: str, message: str) -> None:
    """A malformed gate or an unknown class exits 2."""
    code, out, err = run("diff", *DIRS, "--fail-on-regression", gate)
    assert code == 2
    assert out == ""
    assert message in err


def test_cli_diff_json() -> None:
    """JSON has the documented keys, images worst first, and the gate verdicts."""
    code, out, _ = run("diff", *DIRS, "--format", "json", "--fail-on-regression", "map=-0.01")
    assert code == 1
    data = json.loads(out)
    assert list(data) == [
        "vocmatch", "a", "b", "conventions", "summary", "classes", "images", "only_a",
        "only_b", "gates", "passed",
    ]  # fmt: skip
    assert data["summary"]["map"]["delta"] == pytest.approx(-1 / 12)
    assert (data["summary"]["worse"], data["summary"]["better"]) == (2, 2)
    assert data["images"][0] == {
        "image": "kitchen",
        "net": -2,
        "new_fn": [{"index": 1, "name": "bowl"}],
        "fixed_fn": [],
        "new_fp": [{"index": 1, "name": "cup"}],
        "removed_fp": [],
        "tp": {"a": 2, "b": 1, "delta": -1},
        "fp": {"a": 0, "b": 1, "delta": 1},
        "fn": {"a": 0, "b": 1, "delta": 1},
    }
    assert set(data["classes"][0]) == {
        "name", "gt", "ap", "precision", "recall", "f1", "tp", "fp", "fn",
    }  # fmt: skip
    assert data["gates"][0]["passed"] is False
    assert data["passed"] is False


def test_cli_diff_of_labelling_passes(tmp_path: Path) -> None:
    """Without scores the diff still shows the per-image changes; a map gate cannot be
    measured and fails with the reason."""
    for run_name in ("pred_a", "pred_b"):
        target = tmp_path / run_name
        target.mkdir()
        for source in sorted((DIFF / run_name).glob("*.xml")):
            text = re.sub(r"\s*<score>[^<]*</score>", "", source.read_text(encoding="utf-8"))
            (target / source.name).write_text(text, encoding="utf-8")
    dirs = [str(DIFF / "gt"), str(tmp_path / "pred_a"), str(tmp_path / "pred_b")]
    code, out, err = run("diff", *dirs, "--format", "json", "--fail-on-regression", "map=-1")
    assert code == 1
    data = json.loads(out)
    assert data["summary"]["map"] == {"a": None, "b": None, "delta": None}
    assert [i["image"] for i in data["images"] if i["net"]] == ["kitchen", "hall", "office"]
    assert err == (
        "vocmatch: regression: map change undefined, needs >= -1.0000 (undefined in both runs)\n"
    )
    code, _, _ = run("diff", *dirs, "--fail-on-regression", "recall=0")
    assert code == 0


def test_docs_show_the_golden_diff() -> None:
    """The docs' diff example is the golden output, so it cannot drift."""
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert (GOLDEN / "diff_fixture.txt").read_text(encoding="utf-8") in page

"""Per-class score thresholds and class gates under fold_case: names match the files' classes
in any case; two names of one folded class with different thresholds are refused; without
fold_case, names match as written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

import vocmatch
from tests.conftest import run_cli
from tests.evaluation.test_class_map import write_pred
from tests.readers.test_detections import write_gt
from vocmatch.errors import AnnotationError, InputError, RequestError
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.threshold_files import (
    ClassThresholds,
    read_class_thresholds,
    read_score_thresholds,
)
from vocmatch.evaluation.thresholds import ScoreThresholds

#: The animals are written in three cases across the files; one animal prediction (0.4)
#: falls under a 0.5 threshold, one (0.8) is a false positive above it.
GT = {
    "a": [("animal", 10, 10, 100, 100), ("animal", 200, 200, 300, 300)],
    "b": [("cat", 0, 0, 50, 50), ("ANIMAL", 100, 100, 200, 200)],
}
PRED = {
    "a": [("Animal", 10, 10, 100, 100, 0.9), ("animal", 200, 200, 300, 300, 0.4),
          ("animal", 400, 400, 450, 450, 0.8)],
    "b": [("cat", 0, 0, 50, 50, 0.7), ("ANIMAL", 100, 100, 200, 200, 0.6)],
}  # fmt: skip

#: Each class's (name, TP, FP, FN).
ALL_COUNTED = [("animal", 3, 1, 0), ("cat", 1, 0, 0)]
ANIMAL_AT_HALF = [("animal", 2, 1, 1), ("cat", 1, 0, 0)]
CAT_ABOVE_ITS_ONE = [("animal", 3, 1, 0), ("cat", 0, 0, 1)]


@pytest.fixture
def animals(tmp_path: Path) -> tuple[str, str]:
    write_gt(tmp_path / "gt", GT)
    write_pred(tmp_path / "pred", PRED)
    return str(tmp_path / "gt"), str(tmp_path / "pred")


def counts(report: vocmatch.EvalReport) -> list[tuple[str, int, int, int]]:
    return [(c.name, c.tp, c.fp, c.fn) for c in report.evaluation.classes]


@pytest.mark.parametrize(
    ("given", "expected", "described"),
    [
        pytest.param({"Animal": 0.5}, ANIMAL_AT_HALF, "animal >= 0.5", id="title-case"),
        pytest.param({"ANIMAL": 0.5}, ANIMAL_AT_HALF, "animal >= 0.5", id="upper-case"),
        pytest.param({"animal": 0.5}, ANIMAL_AT_HALF, "animal >= 0.5", id="as-folded"),
        pytest.param({"Animal": 0.5, "aNiMaL": 0.5}, ANIMAL_AT_HALF, "animal >= 0.5", id="equal-merge"),
        pytest.param({"Cat": 0.75}, CAT_ABOVE_ITS_ONE, "cat >= 0.75", id="other-class"),
        pytest.param({"CAT": 0.75, "Animal": 0.5}, [("animal", 2, 1, 1), ("cat", 0, 0, 1)], "animal >= 0.5, cat >= 0.75", id="two-classes"),
    ],
)  # fmt: skip
def test_fold_case_thresholds_match_classes_in_any_case(
    animals: tuple[str, str],
    given: Mapping[str, float],
    expected: list[tuple[str, int, int, int]],
    described: str,
) -> None:
    """With fold_case a threshold applies to its class whatever the case it is written in."""
    report = vocmatch.evaluate(*animals, fold_case=True, score_thresholds=given)
    assert counts(report) == expected
    assert report.thresholds is not None
    assert report.thresholds.describe() == described


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("class,threshold\nAnimal,0.5\n", ANIMAL_AT_HALF, id="header-title-case"),
        pytest.param("ANIMAL,0.5\n# the same class\nanimal,0.5\n", ANIMAL_AT_HALF, id="equal-merge"),
        pytest.param("Cat,0.75\n", CAT_ABOVE_ITS_ONE, id="other-class"),
    ],
)  # fmt: skip
def test_fold_case_thresholds_file(
    tmp_path: Path, animals: tuple[str, str], text: str, expected: list[tuple[str, int, int, int]]
) -> None:
    path = tmp_path / "thresholds.csv"
    path.write_text(text, encoding="utf-8")
    report = vocmatch.evaluate(*animals, fold_case=True, score_thresholds=path)
    assert counts(report) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("class,threshold\nAnimal,0.5\n# x\nANIMAL,0.7\n", "4: classes 'ANIMAL' and 'Animal' (line 2) are one class when names are folded to lower case, but have the thresholds 0.7 and 0.5: give the class one threshold", id="header-and-comment"),
        pytest.param("animal,0.25\ncat,0.5\nAnimal,0.5\n", "3: classes 'Animal' and 'animal' (line 1) are one class when names are folded to lower case, but have the thresholds 0.5 and 0.25: give the class one threshold", id="apart"),
    ],
)  # fmt: skip
def test_file_names_folding_to_one_with_two_thresholds_are_refused(
    tmp_path: Path, animals: tuple[str, str], text: str, message: str
) -> None:
    """Which of two thresholds was meant cannot be told: refused with the file, the line of
    each name and both names, before any annotation is read."""
    path = tmp_path / "thresholds.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AnnotationError) as caught:
        vocmatch.evaluate(*animals, fold_case=True, score_thresholds=path)
    assert str(caught.value) == f"{path}:{message}"
    with pytest.raises(AnnotationError):
        vocmatch.evaluate("no-such-gt", "no-such-pred", fold_case=True, score_thresholds=path)


def test_mapping_names_folding_to_one_with_two_thresholds_are_refused(
    animals: tuple[str, str],
) -> None:
    with pytest.raises(RequestError) as caught:
        vocmatch.evaluate(*animals, fold_case=True, score_thresholds={"Animal": 0.5, "ANIMAL": 0.7})
    assert caught.value.field == "score_thresholds"
    assert str(caught.value) == (
        "score_thresholds: classes 'ANIMAL' and 'Animal' are one class when names are folded "
        "to lower case, but have the thresholds 0.7 and 0.5: give the class one threshold"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param({"Animal": 0.5}, [("ANIMAL", 1, 0, 0), ("Animal", 0, 1, 0), ("animal", 1, 1, 1), ("cat", 1, 0, 0)], id="only-its-spelling"),
        pytest.param({"animal": 0.5, "Animal": 0.95}, [("ANIMAL", 1, 0, 0), ("Animal", 0, 0, 0), ("animal", 0, 1, 2), ("cat", 1, 0, 0)], id="two-spellings-two-classes"),
    ],
)  # fmt: skip
def test_without_fold_case_thresholds_match_names_as_written(
    animals: tuple[str, str], given: Mapping[str, float], expected: list[tuple[str, int, int, int]]
) -> None:
    assert counts(vocmatch.evaluate(*animals, score_thresholds=given)) == expected


@pytest.mark.parametrize(
    ("fold_case", "given", "message"),
    [
        pytest.param(False, {"Cat": 0.5}, "a threshold for class 'Cat', which is in neither the ground truth nor the predictions; did you mean 'cat'?", id="case-without-fold"),
        pytest.param(True, {"Anmal": 0.5}, "a threshold for class 'Anmal', which is in neither the ground truth nor the predictions; did you mean 'animal'?", id="typo-with-fold"),
    ],
)  # fmt: skip
def test_unknown_threshold_classes_are_refused_with_a_hint(
    animals: tuple[str, str], fold_case: bool, given: Mapping[str, float], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        vocmatch.evaluate(*animals, fold_case=fold_case, score_thresholds=given)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("entries", "folded"),
    [
        pytest.param((("car", 0.5),), {"car": 0.5}, id="lower-case"),
        pytest.param((("Car", 0.5), ("CAR", 0.5), ("dog", 0.25)), {"car": 0.5, "dog": 0.25}, id="equal-merge"),
    ],
)  # fmt: skip
def test_folded_thresholds(
    entries: tuple[tuple[str, float], ...], folded: dict[str, float]
) -> None:
    assert ClassThresholds("t.csv", entries, tuple(range(1, len(entries) + 1))).folded() == folded
    assert ScoreThresholds.of(0.1, dict(entries)).folded() == ScoreThresholds.of(0.1, folded)


def test_the_reader_keeps_each_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("class,threshold\n\nDog,0.5\n# x\ncat,0.25\n", encoding="utf-8")
    assert read_class_thresholds(path) == ClassThresholds(
        str(path), (("Dog", 0.5), ("cat", 0.25)), (3, 5)
    )
    assert read_score_thresholds(path) == {"Dog": 0.5, "cat": 0.25}


def test_the_evaluator_folds_its_thresholds() -> None:
    """An Evaluator with fold_case applies a threshold written in another case."""
    thresholds = ScoreThresholds(None, (("Animal", 0.5),))
    evaluator = Evaluator("voc12", fold_case=True, score_thresholds=thresholds)
    gt = np.array([[10.0, 10, 100, 100], [200, 200, 300, 300]])
    evaluator.add("a", gt, ["animal", "ANIMAL"], gt, [0.9, 0.4], ["ANIMAL", "animal"])
    result = evaluator.result()
    assert evaluator.score_thresholds == ScoreThresholds(None, (("animal", 0.5),))
    assert [(c.name, c.tp, c.fp, c.fn) for c in result.classes] == [("animal", 1, 0, 1)]
    clash = ScoreThresholds(None, (("A", 0.5), ("a", 0.7)))
    with pytest.raises(RequestError) as caught:
        Evaluator("voc12", fold_case=True, score_thresholds=clash)
    assert str(caught.value) == (
        "score_thresholds: classes 'a' and 'A' are one class when names are folded to lower "
        "case, but have the thresholds 0.7 and 0.5: give the class one threshold"
    )


@pytest.mark.parametrize(
    ("fold_case", "gates", "measured"),
    [
        pytest.param(True, ("Animal:recall=0.9", "CAT:ap=0.5"), [1.0, 1.0], id="fold-any-case"),
        pytest.param(False, ("animal:recall=0.9", "ANIMAL:recall=0.9"), [0.5, 1.0], id="as-written"),
    ],
)  # fmt: skip
def test_class_gates_follow_fold_case(
    animals: tuple[str, str], fold_case: bool, gates: tuple[str, ...], measured: list[float]
) -> None:
    report = vocmatch.evaluate(*animals, fold_case=fold_case, gates=gates)
    assert [g.measured for g in report.gates.gates] == measured
    assert [g.gate.label for g in report.gates.gates] == [
        g.split("=")[0].replace(":map", ":ap") for g in gates
    ]


def test_a_gate_in_another_case_without_fold_case_is_refused(animals: tuple[str, str]) -> None:
    with pytest.raises(InputError) as caught:
        vocmatch.evaluate(*animals, gates=["Cat:ap=0.5"])
    assert str(caught.value) == (
        "gate 'Cat:ap' names class 'Cat', which is in neither the ground truth nor the "
        "predictions; did you mean 'cat'?"
    )


@pytest.mark.parametrize(
    ("fold_case", "outcome"),
    [
        pytest.param(True, [("Cat:ap", 0.0, True)], id="fold"),
        pytest.param(False, "gate 'Cat:ap' names class 'Cat', found in neither run; did you mean 'cat'?", id="as-written"),
    ],
)  # fmt: skip
def test_regression_gates_follow_fold_case(
    animals: tuple[str, str],
    fold_case: bool,
    outcome: list[tuple[str, float, bool]] | str,
) -> None:
    """diff's class gates find their class in any case under fold_case (two equal runs: no
    change); without, the class's case counts."""
    gt, pred = animals
    request = vocmatch.DiffRequest(
        gt=gt, pred_a=pred, pred_b=pred, gates=["Cat:ap=-0.01"], fold_case=fold_case
    )
    if isinstance(outcome, str):
        with pytest.raises(InputError) as caught:
            vocmatch.compare(request)
        assert str(caught.value) == outcome
        return
    report = vocmatch.compare(request)
    assert [(r.gate.label, r.change.delta, r.passed) for r in report.results] == outcome


def test_the_command_line_folds_thresholds_and_refuses_a_clash(
    tmp_path: Path, animals: tuple[str, str]
) -> None:
    """eval --fold-case --score-thresholds counts at a threshold written in another case; a
    file whose names clash once folded is exit 2 with the file, line and both names."""
    path = tmp_path / "thresholds.csv"
    path.write_text("Animal,0.5\n", encoding="utf-8")
    args = (*animals, "--fold-case", "--score-thresholds", str(path))
    code, out, err = run_cli("eval", *args, "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert [(c["name"], c["tp"], c["fp"], c["fn"]) for c in data["classes"]] == ANIMAL_AT_HALF
    path.write_text("Animal,0.5\nANIMAL,0.7\n", encoding="utf-8")
    code, out, err = run_cli("eval", *args)
    assert (code, out) == (2, "")
    assert err == (
        f"vocmatch: error: {path}:2: classes 'ANIMAL' and 'Animal' (line 1) are one class when "
        "names are folded to lower case, but have the thresholds 0.7 and 0.5: give the class "
        "one threshold\n"
    )

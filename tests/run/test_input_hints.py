"""What the inputs suggest was meant otherwise: COCO class names scored against VOC names
without a class map, a ground truth and predictions given in the wrong order. The library
warns with a typed warning in its own words; the command line shows one line in its own."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

import vocmatch
from tests.conftest import FIXTURES, run_cli, street_05_unpredicted
from vocmatch.errors import (
    ClassMapWarning,
    Message,
    MissingPredictionWarning,
    RequestError,
    SwappedInputsWarning,
)
from vocmatch.evaluation.class_map import ClassChoice, class_map

DEMO_GT, DEMO_PRED = FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred"

CLASS_MAP_LINE = (
    "vocmatch: warning: classes only in predictions are ground-truth classes under other names "
    "('motorcycle' is 'motorbike'): scored as false positives, their objects as missed; rename "
    "them with --class-map coco-to-voc\n"
)


def _renamed(source: Path, target: Path, old: str, new: str) -> Path:
    """A copy of an annotation folder with one class renamed."""
    target.mkdir()
    for path in sorted(source.glob("*.xml")):
        text = path.read_text(encoding="utf-8")
        (target / path.name).write_text(text.replace(f"<name>{old}<", f"<name>{new}<"))
    return target


@pytest.fixture
def coco_named(tmp_path: Path) -> tuple[Path, Path]:
    """The demo set with VOC's 'motorbike' in the ground truth and COCO's 'motorcycle' in
    the predictions (where the demo has 'bicycle')."""
    gt = _renamed(DEMO_GT, tmp_path / "gt", "bicycle", "motorbike")
    pred = _renamed(DEMO_PRED, tmp_path / "pred", "bicycle", "motorcycle")
    return gt, pred


def test_library_warns_of_the_builtin_map_in_its_own_words(coco_named: tuple[Path, Path]) -> None:
    """COCO names scored against VOC names: a ClassMapWarning whose message names the
    library's keyword, class_map='coco-to-voc', never a flag."""
    with street_05_unpredicted(), pytest.warns(ClassMapWarning) as caught:
        report = vocmatch.evaluate(*coco_named)
    caught = [w for w in caught if w.category is ClassMapWarning]  # type: ignore[assignment]
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.endswith("rename them with class_map='coco-to-voc'")
    assert "'motorcycle' is 'motorbike'" in text
    assert "--" not in text
    assert isinstance(caught[0].message.args[0], Message)
    assert report.evaluation.summary.map == pytest.approx(0.5416666666666666)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"class_map": "coco-to-voc"}, id="class_map-keyword"),
        pytest.param(
            {"class_choice": ClassChoice(class_map=class_map("coco-to-voc"))}, id="class_choice"
        ),
    ],
)
def test_the_map_given_scores_as_the_demo_and_warns_nothing(
    coco_named: tuple[Path, Path], options: dict[str, object]
) -> None:
    """With the map the run is the demo's (mAP 0.625), and nothing is suggested."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The demo's street_05 has no prediction file: that warning is not a suggestion.
        warnings.simplefilter("ignore", MissingPredictionWarning)
        report = vocmatch.evaluate(*coco_named, **options)  # type: ignore[arg-type]
    assert report.evaluation.summary.map == 0.625


def test_a_class_map_given_twice_is_refused(coco_named: tuple[Path, Path]) -> None:
    """class_map and a class_choice holding a map: which one was meant cannot be told."""
    choice = ClassChoice(class_map=class_map("coco-to-voc"))
    with pytest.raises(RequestError, match="a class map is given twice") as raised:
        vocmatch.evaluate(*coco_named, class_map="coco-to-voc", class_choice=choice)
    assert raised.value.field == "class_map"


def test_command_line_suggests_the_flag_on_stderr(coco_named: tuple[Path, Path]) -> None:
    """The command line words the suggestion with its flag, one warning line on stderr;
    stdout holds the report alone."""
    code, out, err = run_cli("eval", *map(str, coco_named), "--format", "json")
    assert code == 0
    assert CLASS_MAP_LINE in err
    assert "class_map=" not in err
    assert "warning" not in out


def test_command_line_with_the_map_suggests_nothing(coco_named: tuple[Path, Path]) -> None:
    """--class-map coco-to-voc given: no suggestion."""
    code, _, err = run_cli("eval", *map(str, coco_named), "--class-map", "coco-to-voc")
    assert code == 0
    assert "--class-map" not in err


@pytest.mark.parametrize(
    ("gt", "pred", "names"),
    [
        pytest.param("motorbike", "truck", "a class the map drops", id="dropped"),
        pytest.param("bicycle", "bicycle", "one name on both sides", id="same"),
    ],
)
def test_no_suggestion_where_the_map_would_rename_nothing(
    tmp_path: Path, gt: str, pred: str, names: str
) -> None:
    """Only a prediction-only class that the map gives a ground-truth name is suggested
    (the demo's own 'truck' is not: coco-to-voc drops it)."""
    gt_dir = _renamed(DEMO_GT, tmp_path / "gt", "bicycle", gt)
    pred_dir = _renamed(DEMO_PRED, tmp_path / "pred", "bicycle", pred)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", MissingPredictionWarning)
        vocmatch.evaluate(gt_dir, pred_dir)


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Path, Path]:
    """The demo's predictions (every object scored) given as ground truth, and its ground
    truth (no score) as predictions; the image without a prediction file left out."""
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(DEMO_PRED, gt)
    shutil.copytree(DEMO_GT, pred)
    (pred / "street_05.xml").unlink()
    return gt, pred


def test_swapped_folders_warn_in_the_library(swapped: tuple[Path, Path]) -> None:
    """Every ground-truth object scored and no prediction: a SwappedInputsWarning naming
    both folders."""
    with pytest.warns(SwappedInputsWarning) as caught:
        vocmatch.evaluate(*swapped)
    assert len(caught) == 1
    gt, pred = swapped
    assert str(caught[0].message) == (
        f"every object of the ground truth {gt} has a score and no prediction of {pred} has "
        "one: were the ground truth and the predictions given in the wrong order?"
    )


def test_swapped_folders_are_one_warning_line(swapped: tuple[Path, Path]) -> None:
    """The command line says so in one line on stderr, and still reports."""
    code, out, err = run_cli("eval", *map(str, swapped))
    assert code == 0
    lines = [line for line in err.splitlines() if "wrong order" in line]
    assert len(lines) == 1
    assert lines[0].startswith("vocmatch: warning: every object of the ground truth ")
    assert "Summary" in out


def test_folders_in_order_do_not_warn(demo: tuple[Path, Path]) -> None:
    """The demo in its order: scored predictions, unscored ground truth, no warning."""
    code, _, err = run_cli("eval", *map(str, demo))
    assert code == 0
    assert "wrong order" not in err


def test_a_results_file_as_predictions_names_the_format_in_the_library(tmp_path: Path) -> None:
    """A .json given where XML predictions are read: a RequestError on the field ``pred``
    (the command line words it as --pred-format coco), not 'not a directory'."""
    results = tmp_path / "results.json"
    results.write_text("[]", encoding="utf-8")
    with pytest.raises(RequestError, match="a file of COCO results, where a folder is read"):
        vocmatch.evaluate(DEMO_GT, results)

"""``vocmatch eval --mode labels``: exact numbers on the fixture, exit codes, refused options."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vocmatch.cli import EXIT_OK, EXIT_SKIPPED, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "labels"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GT, PRED = str(FIXTURE / "gt"), str(FIXTURE / "pred")

# The report's width comes from COLUMNS (stdout is not a terminal under CliRunner).
ENV: dict[str, str | None] = {
    "COLUMNS": "100",
    "FORCE_COLOR": None,
    "NO_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
}


def run(*args: str) -> tuple[int, str, str]:
    return run_cli(*args, env=ENV)


def test_table_report_is_the_golden_file(golden: Callable[[str, str], None]) -> None:
    """The labels report on the fixture reads as in the golden file (and the docs)."""
    code, out, err = run("--mode", "labels", GT, PRED)
    assert (code, err) == (EXIT_OK, "")
    golden("labels_fixture.txt", out)


def test_json_carries_the_known_answer() -> None:
    """Per-class IoU 2/4, 3/4, 3/4; macro and micro IoU 2/3; each image's sets and scores."""
    code, out, err = run("--mode", "labels", "--format", "json", GT, PRED)
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert list(data) == [
        "vocmatch", "mode", "conventions", "summary", "classes", "images", "skipped",
        "missing_pred", "orphan_pred", "notes",
    ]  # fmt: skip
    assert data["mode"] == "labels"
    assert data["conventions"] == {"difficult": "ignore", "lower_case": True}
    summary = data["summary"]
    assert summary["macro_iou"] == 2 / 3
    assert summary["micro_iou"] == 2 / 3
    assert summary["mean_jaccard"] == 2 / 3
    assert summary["mean_dice"] == 31 / 40
    assert summary["exact_match"] == 1 / 4
    assert (summary["images"], summary["tp"], summary["fp"], summary["fn"]) == (4, 8, 2, 2)
    assert [(c["name"], c["iou"]) for c in data["classes"]] == [
        ("airplane", 2 / 4),
        ("boat", 3 / 4),
        ("car", 3 / 4),
    ]
    assert data["classes"][0] == {
        "name": "airplane", "gt": 3, "pred": 3, "tp": 2, "fp": 1, "fn": 1, "ignored": 0,
        "iou": 0.5,
    }  # fmt: skip
    first = data["images"][0]
    assert first["image"] == "sample_1"
    assert first["gt"] == ["airplane", "boat", "car"]
    assert first["pred"] == ["boat"]
    assert first["missed"] == ["airplane", "car"]
    assert (first["jaccard"], first["dice"]) == (1 / 3, 1 / 2)
    assert [i["jaccard"] for i in data["images"]] == [1 / 3, 2 / 3, 2 / 3, 1.0]
    assert data["skipped"] == data["missing_pred"] == data["orphan_pred"] == data["notes"] == []


def test_json_output_file_keeps_the_summary_on_the_terminal(tmp_path: Path) -> None:
    """--output writes the JSON and the terminal shows the summary."""
    target = tmp_path / "labels.json"
    code, out, _ = run("--mode", "labels", "--format", "json", "--output", str(target), GT, PRED)
    assert code == EXIT_OK
    assert json.loads(target.read_text(encoding="utf-8"))["summary"]["macro_iou"] == 2 / 3
    assert out.startswith("Summary\n")
    assert "macro IoU        0.6667" in out


def test_table_output_file(tmp_path: Path) -> None:
    """--output with the table writes the whole report, 120 columns wide."""
    target = tmp_path / "labels.txt"
    code, out, _ = run("--mode", "labels", "--output", str(target), GT, PRED)
    assert code == EXIT_OK
    text = target.read_text(encoding="utf-8")
    assert "Images (lowest Jaccard first)" in text and "Classes (counted in images)" in text
    assert "Images" not in out and "micro IoU" in out


def copy_fixture(tmp_path: Path) -> tuple[Path, Path]:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(FIXTURE / "gt", gt)
    shutil.copytree(FIXTURE / "pred", pred)
    return gt, pred


def test_missing_prediction_file_is_a_warning(tmp_path: Path) -> None:
    """A ground-truth image without a prediction file is scored with nothing predicted."""
    gt, pred = copy_fixture(tmp_path)
    (pred / "sample_4.xml").unlink()
    code, out, err = run("--mode", "labels", "--format", "json", str(gt), str(pred))
    assert code == EXIT_OK
    assert err == "vocmatch: warning: no prediction file for 'sample_4': nothing predicted\n"
    data = json.loads(out)
    assert data["missing_pred"] == ["sample_4"]
    assert data["images"][3]["pred"] == []
    assert data["images"][3]["jaccard"] == 0.0
    # sample_4's three classes become false negatives: 5 / (5 + 2 + 5).
    assert data["summary"]["micro_iou"] == 5 / 12


def test_unreadable_file_is_skipped_with_exit_3(tmp_path: Path) -> None:
    """A broken prediction file is named on stderr, its image left out, the rest evaluated."""
    gt, pred = copy_fixture(tmp_path)
    (pred / "sample_1.xml").write_text("<annotation><object>", encoding="utf-8")
    code, out, err = run("--mode", "labels", "--format", "json", str(gt), str(pred))
    assert code == EXIT_SKIPPED
    assert err.startswith(f"vocmatch: skipped {pred / 'sample_1.xml'}:1: not well-formed XML")
    assert err.count("\n") == 1
    data = json.loads(out)
    assert [i["image"] for i in data["images"]] == ["sample_2", "sample_3", "sample_4"]
    assert data["summary"]["skipped"] == 1
    # Samples 2-4 alone: airplane found in 2 and 4, extra in 3; boat found in 3 and 4, extra in 2.
    assert [(c["name"], c["tp"], c["fp"], c["fn"]) for c in data["classes"]] == [
        ("airplane", 2, 1, 0),
        ("boat", 2, 1, 0),
        ("car", 3, 0, 0),
    ]


def test_classes_keep_only_those_classes_on_both_sides() -> None:
    """--classes car,boat drops airplane from both sets of every image; names fold case as the
    label sets do, and the note counts the objects left out."""
    code, out, err = run("--mode", "labels", "--format", "json", "--classes", "Car,boat", GT, PRED)
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    # sample_1 {boat, car} vs {boat}; sample_2 {car} vs {boat, car}; samples 3 and 4 exact.
    assert [(i["image"], i["gt"], i["pred"]) for i in data["images"]] == [
        ("sample_1", ["boat", "car"], ["boat"]),
        ("sample_2", ["car"], ["boat", "car"]),
        ("sample_3", ["boat", "car"], ["boat", "car"]),
        ("sample_4", ["boat", "car"], ["boat", "car"]),
    ]
    assert [i["jaccard"] for i in data["images"]] == [1 / 2, 1 / 2, 1.0, 1.0]
    assert [(c["name"], c["tp"], c["fp"], c["fn"], c["iou"]) for c in data["classes"]] == [
        ("boat", 3, 1, 0, 3 / 4),
        ("car", 3, 0, 1, 3 / 4),
    ]
    summary = data["summary"]
    assert (summary["tp"], summary["fp"], summary["fn"]) == (6, 1, 1)
    assert (summary["macro_iou"], summary["micro_iou"]) == (3 / 4, 6 / 8)
    assert (summary["mean_jaccard"], summary["mean_dice"]) == pytest.approx((3 / 4, 5 / 6))
    assert summary["exact_match"] == 2 / 4
    assert data["notes"] == [
        "classes: evaluating only Car, boat; left out 3 ground-truth objects and 3 predictions "
        "of 1 other class"
    ]


def other_vocabulary(tmp_path: Path) -> Path:
    """The fixture's predictions written by a tool that says plane, ship and automobile."""
    pred = tmp_path / "pred"
    pred.mkdir()
    words = {"Airplane": "plane", "Boat": "ship", "Car": "automobile"}
    for source in sorted((FIXTURE / "pred").glob("*.xml")):
        text = source.read_text(encoding="utf-8")
        for ours, theirs in words.items():
            text = text.replace(f"<name>{ours}</name>", f"<name>{theirs}</name>")
        (pred / source.name).write_text(text, encoding="utf-8")
    return pred


def test_class_map_renames_the_predictions_into_the_ground_truths_names(tmp_path: Path) -> None:
    """A class map renames prediction classes only: plane and ship scored as airplane and boat
    (the target's case does not matter: the sets fold it, with a note), automobile dropped, so
    every car is missed."""
    pred = other_vocabulary(tmp_path)
    class_map = tmp_path / "map.csv"
    class_map.write_text("# theirs,ours\nplane,Airplane\nship,boat\nautomobile,\n", "utf-8")
    args = ["--mode", "labels", "--format", "json", "--class-map", str(class_map)]
    code, out, err = run(*args, GT, str(pred))
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert [(c["name"], c["tp"], c["fp"], c["fn"], c["iou"]) for c in data["classes"]] == [
        ("airplane", 2, 1, 1, 2 / 4),
        ("boat", 3, 1, 0, 3 / 4),
        ("car", 0, 0, 4, 0.0),
    ]
    summary = data["summary"]
    assert (summary["tp"], summary["fp"], summary["fn"]) == (5, 2, 5)
    assert (summary["macro_iou"], summary["micro_iou"]) == (5 / 12, 5 / 12)
    assert [i["jaccard"] for i in data["images"]] == [1 / 3, 1 / 3, 1 / 3, 2 / 3]
    assert summary["mean_dice"] == pytest.approx(23 / 40)
    assert data["notes"] == [
        f"class map {class_map}: renamed 7 predictions of 2 classes (ship -> boat 4, "
        "plane -> Airplane 3); dropped 3 predictions of 1 class (automobile 3)",
        "class names folded to lower case: Boat/boat as boat",
    ]


def test_class_map_then_classes_score_like_the_ground_truths_own_names(tmp_path: Path) -> None:
    """With every class mapped back, the labels score as the fixture's own predictions do;
    --classes names classes as after the map."""
    pred = other_vocabulary(tmp_path)
    class_map = tmp_path / "map.csv"
    class_map.write_text("plane,Airplane\nship,Boat\nautomobile,Car\n", encoding="utf-8")
    mapped = ["--mode", "labels", "--format", "json", "--class-map", str(class_map)]
    own = json.loads(run("--mode", "labels", "--format", "json", GT, PRED)[1])
    code, out, err = run(*mapped, GT, str(pred))
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert (data["summary"], data["classes"]) == (own["summary"], own["classes"])
    assert data["summary"]["macro_iou"] == 2 / 3
    code, out, err = run(*mapped, "--classes", "AIRPLANE", GT, str(pred))
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert [(c["name"], c["tp"], c["fp"], c["fn"]) for c in data["classes"]] == [
        ("airplane", 2, 1, 1)
    ]
    assert data["summary"]["micro_iou"] == 2 / 4


@pytest.mark.parametrize(
    ("classes", "message"),
    [
        pytest.param(
            "truck",
            "class 'truck' is in neither the ground truth nor the predictions",
            id="unknown",
        ),
        pytest.param(
            "car,boats",
            "class 'boats' is in neither the ground truth nor the predictions; "
            "did you mean 'Boat'?",
            id="typo-with-a-guess",
        ),
    ],
)
def test_unknown_class_is_an_error(classes: str, message: str) -> None:
    """A class in neither set is one error line and exit 2, nothing on stdout."""
    code, out, err = run("--mode", "labels", "--classes", classes, GT, PRED)
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"vocmatch: error: {message}\n"


@pytest.mark.parametrize(
    ("option", "shown"),
    [
        pytest.param(["--iou", "0.7"], "--iou", id="iou"),
        pytest.param(["--protocol", "coco"], "--protocol", id="protocol"),
        pytest.param(["--protocol", "default"], "--protocol", id="protocol-even-default"),
        pytest.param(["--fail-under", "map=0.5"], "--fail-under", id="gate"),
        pytest.param(["--max-fn", "1"], "--max-fn", id="max-fn"),
        pytest.param(["--errors"], "--errors/--no-errors", id="errors"),
        pytest.param(
            ["--inclusive-threshold"],
            "--strict-threshold/--inclusive-threshold",
            id="secondary-flag",
        ),
        pytest.param(["--html", "report.html"], "--html", id="html"),
        pytest.param(["--agnostic"], "--agnostic", id="agnostic"),
    ],
)
def test_box_options_are_refused(option: list[str], shown: str) -> None:
    """An option that only concerns boxes is a usage error, never silently without effect."""
    code, out, err = run("--mode", "labels", *option, GT, PRED)
    assert code == EXIT_USAGE
    assert out == ""
    assert f"Error: {shown} applies to boxes, not to --mode labels" in err


@pytest.mark.parametrize("output_format", ["csv", "markdown", "junit"])
def test_file_formats_other_than_json_are_not_available(output_format: str) -> None:
    """Only the table and JSON exist for label sets."""
    code, out, err = run("--mode", "labels", "--format", output_format, GT, PRED)
    assert code == EXIT_USAGE
    assert out == ""
    assert (
        f"Error: --format {output_format} is not available in labels mode (use table or json)"
        in err
    )


def test_difficult_crowd_is_refused() -> None:
    """Crowd regions are a box convention."""
    code, _, err = run("--mode", "labels", "--difficult", "crowd", GT, PRED)
    assert code == EXIT_USAGE
    assert "Error: --difficult crowd applies to boxes, not to --mode labels" in err


def test_difficult_count_is_passed_on() -> None:
    """--difficult count reaches the evaluation and is stated in the JSON."""
    code, out, _ = run("--mode", "labels", "--difficult", "count", "--format", "json", GT, PRED)
    assert code == EXIT_OK
    assert json.loads(out)["conventions"]["difficult"] == "count"


def test_rows_are_limited_and_perfect_images_can_be_hidden() -> None:
    """--max-rows keeps the worst images; --only-failing drops those predicted exactly."""
    _, out, _ = run("--mode", "labels", "--max-rows", "1", GT, PRED)
    assert "sample_1" in out and "sample_2" not in out
    assert "3 more images not shown" in out
    _, out, _ = run("--mode", "labels", "--only-failing", GT, PRED)
    assert "sample_3" in out and "sample_4" not in out


def test_boxes_is_the_default_mode() -> None:
    """Without --mode the box evaluation runs, as before."""
    assert run(GT, PRED) == run("--mode", "boxes", GT, PRED)
    assert "mAP" in run(GT, PRED)[1]


def test_docs_show_the_golden_labels_report() -> None:
    """The docs' label-set example is the golden output, so it cannot drift."""
    page = (ROOT / "docs" / "labels-and-masks.md").read_text(encoding="utf-8")
    assert (GOLDEN / "labels_fixture.txt").read_text(encoding="utf-8") in page

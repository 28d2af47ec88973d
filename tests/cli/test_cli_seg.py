"""``vocmatch seg``: mask IoU through the command line, exact numbers, skipped masks, exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner
from PIL import Image

from tests.conftest import run_cli
from vocmatch.cli import EXIT_OK, EXIT_SKIPPED, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[2]
THREE_CLASS = ROOT / "fixtures" / "seg" / "three_class"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"

# The report's width comes from COLUMNS (stdout is not a terminal under CliRunner).
ENV: dict[str, str | None] = {
    "COLUMNS": "100",
    "FORCE_COLOR": None,
    "NO_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
}


def run(*args: str) -> tuple[int, str, str]:
    return run_cli("seg", *args, env=ENV)


def write_mask(path: Path, values: npt.NDArray[np.uint8]) -> None:
    """A palette PNG whose indices are ``values``, as VOC ``SegmentationClass`` files are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(values, mode="L").convert("P")
    image.putpalette([channel for index in range(256) for channel in (index, index, index)])
    image.save(path, format="PNG")


def known_pair() -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """20x20 masks, class 1 on 100 TP, 75 FN and 25 FP pixels; background on the other 200.

    Class 1: 100 / (100 + 25 + 75) = 0.5. Background: 200 / (200 + 75 + 25) = 2/3.
    """
    gt = np.zeros(400, dtype=np.uint8)
    pred = np.zeros(400, dtype=np.uint8)
    gt[:175] = 1  # 100 TP, then 75 FN
    pred[:100] = 1
    pred[175:200] = 1  # 25 FP
    return gt.reshape(20, 20), pred.reshape(20, 20)


@pytest.fixture
def known(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(gt_dir, pred_dir, classes_file) holding the known pair."""
    gt, pred = known_pair()
    write_mask(tmp_path / "gt" / "known.png", gt)
    write_mask(tmp_path / "pred" / "known.png", pred)
    classes = tmp_path / "classes.txt"
    classes.write_text("background\nobject\n", encoding="utf-8")
    return tmp_path / "gt", tmp_path / "pred", classes


def test_known_answer_through_the_command_line(known: tuple[Path, Path, Path]) -> None:
    """100 TP, 25 FP and 75 FN pixels give IoU 0.5; summary.miou averages the two classes."""
    gt, pred, classes = known
    code, out, err = run(str(gt), str(pred), "--classes", str(classes), "--format", "json")
    assert (code, err) == (EXIT_OK, "")
    data = json.loads(out)
    assert data["classes"] == [
        {"name": "background", "iou": 2 / 3, "tp": 200, "fp": 75, "fn": 25},
        {"name": "object", "iou": 0.5, "tp": 100, "fp": 25, "fn": 75},
    ]
    assert data["summary"] == {
        "miou": (2 / 3 + 0.5) / 2,
        "pixel_accuracy": 300 / 400,
        "mean_accuracy": (200 / 225 + 100 / 175) / 2,
        "images": 1,
        "skipped": 0,
    }
    assert list(data) == [
        "vocmatch",
        "mode",
        "pred_void",
        "summary",
        "classes",
        "images",
        "skipped",
    ]
    assert (data["mode"], data["pred_void"]) == ("seg", "error")
    assert data["images"] == [
        {
            "key": "known",
            "pixel_accuracy": 0.75,
            "miou": (2 / 3 + 0.5) / 2,
            "gt_classes": ["background", "object"],
            "pred_classes": ["background", "object"],
        }
    ]


def test_voc_class_names_by_default(known: tuple[Path, Path, Path]) -> None:
    """Without --classes, index 1 is the VOC aeroplane and the 19 absent classes have no IoU."""
    gt, pred, _ = known
    code, out, _ = run(str(gt), str(pred), "--format", "json")
    assert code == EXIT_OK
    classes = json.loads(out)["classes"]
    assert len(classes) == 21
    assert (classes[1]["name"], classes[1]["iou"]) == ("aeroplane", 0.5)
    assert [c["iou"] for c in classes[2:]] == [None] * 19
    assert json.loads(out)["summary"]["miou"] == (2 / 3 + 0.5) / 2


def test_size_mismatch_is_skipped_and_the_rest_evaluated(known: tuple[Path, Path, Path]) -> None:
    """A pair of different sizes is named on stderr (exit 3); the other pairs still count."""
    gt, pred, classes = known
    write_mask(gt / "wide.png", np.zeros((4, 5), dtype=np.uint8))
    write_mask(pred / "wide.png", np.zeros((4, 4), dtype=np.uint8))
    code, out, err = run(str(gt), str(pred), "--classes", str(classes), "--format", "json")
    assert code == EXIT_SKIPPED
    assert err == (
        f"vocmatch: skipped {pred / 'wide.png'}: mask is 4x4 but the ground truth is 5x4\n"
    )
    data = json.loads(out)
    assert [c["iou"] for c in data["classes"]] == [2 / 3, 0.5]
    assert data["summary"]["images"] == 1
    assert data["skipped"] == [
        {
            "path": str(pred / "wide.png"),
            "error": "mask is 4x4 but the ground truth is 5x4",
            "reason": "invalid",
        }
    ]


def test_table_report_names_skipped_masks(known: tuple[Path, Path, Path]) -> None:
    """The table's summary counts the skipped masks; stderr names them."""
    gt, pred, classes = known
    write_mask(gt / "alone.png", np.zeros((2, 2), dtype=np.uint8))
    code, out, err = run(str(gt), str(pred), "--classes", str(classes))
    assert code == EXIT_SKIPPED
    assert "skipped masks  1 (named on stderr)" in out
    assert err.startswith(f"vocmatch: skipped {gt / 'alone.png'}: no prediction mask")


@pytest.mark.parametrize(
    ("pred_void", "code", "object_fn"),
    [
        pytest.param("error", EXIT_SKIPPED, None, id="error-skips"),
        pytest.param("miss", EXIT_OK, 75 + 10, id="miss-counts-fn"),
    ],
)
def test_pred_void_option(
    known: tuple[Path, Path, Path], pred_void: str, code: int, object_fn: int | None
) -> None:
    """A predicted 255 skips the image by default and is a missed pixel under miss."""
    gt_dir, pred_dir, classes = known
    _, pred = known_pair()
    pred.reshape(-1)[:10] = 255  # ten object pixels predicted void
    write_mask(pred_dir / "known.png", pred)
    result = run(
        str(gt_dir), str(pred_dir), "--classes", str(classes), "--format", "json",
        "--pred-void", pred_void,
    )  # fmt: skip
    assert result[0] == code
    data = json.loads(result[1])
    assert data["pred_void"] == pred_void
    if object_fn is None:
        assert data["summary"]["images"] == 0
        assert "value 255 (void) in a prediction" in result[2]
    else:
        assert data["classes"][1] == {
            "name": "object",
            "iou": 90 / 200,
            "tp": 90,
            "fp": 25,
            "fn": 85,
        }
        assert result[2] == ""


def test_output_file_keeps_the_summary_on_the_terminal(
    known: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """--output writes the report and the terminal shows the summary."""
    gt, pred, classes = known
    target = tmp_path / "seg.json"
    code, out, _ = run(
        str(gt), str(pred), "--classes", str(classes), "-o", str(target), "--format", "json"
    )
    assert code == EXIT_OK
    assert json.loads(target.read_text(encoding="utf-8"))["classes"][1]["iou"] == 0.5
    assert out.startswith("Summary\n") and "mIoU            0.5833" in out
    table = tmp_path / "seg.txt"
    run(str(gt), str(pred), "--classes", str(classes), "-o", str(table))
    assert "Classes (pixels over the dataset)" in table.read_text(encoding="utf-8")


def test_jobs_do_not_change_the_result(known: tuple[Path, Path, Path]) -> None:
    """Two worker processes give the same JSON as one."""
    gt, pred, classes = known
    for n in range(3):
        values = np.full((8, 8), n % 2, dtype=np.uint8)
        write_mask(gt / f"extra_{n}.png", values)
        write_mask(pred / f"extra_{n}.png", np.roll(values, n))
    serial = run(str(gt), str(pred), "--classes", str(classes), "--format", "json")
    parallel = run(str(gt), str(pred), "--classes", str(classes), "--format", "json", "-j", "2")
    assert serial == parallel


@pytest.mark.parametrize(
    ("names", "message"),
    [
        pytest.param("cat\ncat\n", "class 'cat' is already named on line 1", id="repeated"),
        pytest.param("\n\n", "holds no class names", id="empty"),
    ],
)
def test_bad_class_file_is_a_usage_error(
    known: tuple[Path, Path, Path], tmp_path: Path, names: str, message: str
) -> None:
    """A class file that cannot be used stops the command with exit 2 and one line."""
    gt, pred, _ = known
    classes = tmp_path / "bad.txt"
    classes.write_text(names, encoding="utf-8")
    code, out, err = run(str(gt), str(pred), "--classes", str(classes))
    assert (code, out) == (EXIT_USAGE, "")
    assert err.startswith("vocmatch: error: ") and message in err
    assert err.count("\n") == 1


def test_ground_truth_without_masks_is_a_usage_error(tmp_path: Path) -> None:
    """An empty ground-truth directory cannot be evaluated at all."""
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    code, _, err = run(str(tmp_path / "gt"), str(tmp_path / "pred"))
    assert code == EXIT_USAGE
    assert err == f"vocmatch: error: no *.png masks under {str(tmp_path / 'gt')!r}\n"


def test_table_report_is_the_golden_file(golden: Callable[[str, str], None]) -> None:
    """The report on the three-class fixture reads as in the golden file (and the docs)."""
    code, out, err = run(
        str(THREE_CLASS / "gt"), str(THREE_CLASS / "pred"), "--classes",
        str(THREE_CLASS / "classes.txt"),
    )  # fmt: skip
    assert (code, err) == (EXIT_OK, "")
    golden("seg_three_class.txt", out)


def test_help_names_every_option() -> None:
    """seg --help documents its options."""
    result = CliRunner().invoke(main, ["seg", "--help"], env=ENV)
    assert result.exit_code == 0
    for option in ("--classes", "--pred-void", "--format", "--output", "--jobs", "--max-rows"):
        assert option in result.stdout


def test_docs_show_the_golden_seg_report() -> None:
    """The docs' segmentation example is the golden output, so it cannot drift."""
    page = (ROOT / "docs" / "labels-and-masks.md").read_text(encoding="utf-8")
    assert (GOLDEN / "seg_three_class.txt").read_text(encoding="utf-8") in page


def test_a_mask_over_the_pixel_limit_is_skipped_in_one_line(
    known: tuple[Path, Path, Path],
) -> None:
    """A 100-megapixel mask pair: one skipped line with the path and size, refused from the
    header (its image data is empty) without Pillow's warning; the other pair still counts."""
    from tests.evaluation.test_seg import png_header

    gt, pred, classes = known
    for folder in (gt, pred):
        (folder / "big.png").write_bytes(png_header(10_000, 10_000))
    code, out, err = run(str(gt), str(pred), "--classes", str(classes), "--format", "json")
    assert code == EXIT_SKIPPED
    assert err == (
        f"vocmatch: skipped {gt / 'big.png'}: mask is 10,000x10,000 pixels, "
        "over the 89,478,485-pixel limit\n"
    )
    data = json.loads(out)
    assert [c["iou"] for c in data["classes"]] == [2 / 3, 0.5]

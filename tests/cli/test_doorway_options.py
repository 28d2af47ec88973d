"""Options users of pycocotools and Ultralytics expect: --max-dets (and COCO's 1,10,100),
the per-image sweep as a list or a range, --iou given a range says what to write, and mAP@.50
beside mAP@[.50:.95]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import run
from vocmatch.core.protocol import COCO_IOU_THRESHOLDS, iou_thresholds


@pytest.fixture(autouse=True)
def _demo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])


DEMO = ("eval", "fixtures/demo/gt", "fixtures/demo/pred")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0.5:0.95:0.05", COCO_IOU_THRESHOLDS, id="coco-range"),
        pytest.param("0.5:0.7:0.1", (0.5, 0.6, 0.7), id="range"),
        pytest.param("0.75,0.5", (0.5, 0.75), id="list-sorted"),
        pytest.param("0.5", (0.5,), id="one"),
        pytest.param("0.5, 0.5 ,", (0.5,), id="repeated"),
    ],
)
def test_iou_thresholds_read_lists_and_ranges(text: str, expected: tuple[float, ...]) -> None:
    assert iou_thresholds(text) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("0.5:0.95", "'0.5:0.95': a range is start:stop:step, as 0.5:0.95:0.05", id="no-step"),
        pytest.param("0.5:0.9:0.3", "'0.5:0.9:0.3': the step must be above 0 and divide stop - start, as 0.5:0.95:0.05", id="step"),
        pytest.param("0.5,x", "'x' is not a number", id="word"),
        pytest.param("0.5,1.5", "'1.5' is not an IoU in [0, 1]", id="above-one"),
        pytest.param(",", "no threshold given: write 0.5,0.75 or 0.5:0.95:0.05", id="empty"),
    ],
)  # fmt: skip
def test_bad_thresholds_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        iou_thresholds(text)
    assert str(caught.value) == message


def test_iou_given_a_range_points_to_sweep_and_coco() -> None:
    code, out, err = run(*DEMO, "--iou", "0.5:0.95")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "Error: Invalid value for '--iou': '0.5:0.95' is a range: --iou takes one threshold "
        "(TP/FP/FN and, outside coco, AP); for per-image counts at several give --sweep "
        "0.5:0.95:0.05, for AP averaged over IoU 0.50:0.95 give --protocol coco"
    )


def test_iou_given_a_list_points_to_sweep() -> None:
    code, _, err = run(*DEMO, "--iou", "0.5,0.75")
    assert code == 2
    assert "'0.5,0.75' is a list: --iou takes one threshold" in err
    assert "give --sweep 0.5,0.75," in err


def test_sweep_sets_the_per_image_thresholds() -> None:
    """JSON, CSV and the table name the thresholds given, in order."""
    code, out, _ = run(*DEMO, "--sweep", "0.5:0.6:0.05", "--format", "json")
    assert code == 0
    data = json.loads(out)
    street_01 = next(i for i in data["images"] if i["image"] == "street_01")
    assert street_01["sweep"] == {
        "0.50": {"tp": 3, "fp": 2, "fn": 1},
        "0.55": {"tp": 3, "fp": 2, "fn": 1},
        "0.60": {"tp": 3, "fp": 2, "fn": 1},
    }
    code, out, _ = run(*DEMO, "--sweep", "0.75", "--format", "csv")
    assert out.splitlines()[0].endswith(",mean_iou,tp@0.75,fp@0.75,fn@0.75")
    code, out, _ = run(*DEMO, "--sweep", "0.5,0.75")
    assert "┃ image       ┃ GT ┃ pred ┃ TP ┃ FP ┃ FN ┃  mIoU ┃ @0.50 ┃ @0.75 ┃" in out


def test_bad_sweep_is_a_usage_error() -> None:
    code, _, err = run(*DEMO, "--sweep", "0.5:0.95")
    assert code == 2
    assert err.splitlines()[-1] == (
        "Error: Invalid value for '--sweep': '0.5:0.95': a range is start:stop:step, as "
        "0.5:0.95:0.05"
    )


def test_max_dets_keeps_the_highest_scored_per_image_and_class() -> None:
    """street_01's two cars and two persons: one of each kept; counts and the header."""
    code, out, _ = run(*DEMO, "--max-dets", "1", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["conventions"]["max_dets"] == 1
    assert [(c["name"], c["pred"], c["tp"], c["fp"]) for c in data["classes"]] == [
        ("bicycle", 1, 1, 0),
        ("bus", 1, 1, 0),
        ("car", 3, 2, 1),
        ("cat", 0, 0, 0),
        ("dog", 2, 1, 1),
        ("person", 3, 3, 0),
        ("truck", 1, 0, 1),
    ]


def test_the_coco_triple_is_cocos_default() -> None:
    plain = run(*DEMO, "--protocol", "coco", "--format", "json")
    triple = run(*DEMO, "--protocol", "coco", "--max-dets", "1,10,100", "--format", "json")
    assert triple == plain


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("5,10", "'5,10': the COCO summary's AR1 and AR10 keep 1 and 10: give N or 1,10,N", id="not-the-triple"),
        pytest.param("0", "'0': give a whole number above 0 (100), or COCO's triple 1,10,N", id="zero"),
        pytest.param("ten", "'ten': give a whole number above 0 (100), or COCO's triple 1,10,N", id="word"),
    ],
)  # fmt: skip
def test_bad_max_dets_is_a_usage_error(value: str, message: str) -> None:
    code, _, err = run(*DEMO, "--max-dets", value)
    assert code == 2
    assert err.splitlines()[-1] == f"Error: Invalid value for '--max-dets': {message}"


def test_coco_summary_shows_map50_beside_map50_95() -> None:
    code, out, _ = run(*DEMO, "--protocol", "coco")
    assert code == 0
    lines = out.splitlines()
    at = lines.index("mAP@[.50:.95]      0.4965")
    assert lines[at + 1] == "mAP@.50            0.6271"
    code, out, _ = run(*DEMO, "--protocol", "coco", "--format", "markdown")
    assert "| F1 | mAP@[.50:.95] | mAP@.50 |" in out
    assert "| 0.6897 | 0.4965 | 0.6271 |" in out


def test_outside_coco_there_is_one_map() -> None:
    code, out, _ = run(*DEMO)
    assert code == 0
    assert "mAP@.50" not in out

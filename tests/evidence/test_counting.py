"""Counts per image (`--count`): exact cases, a box-by-box oracle on random sets, the
bootstrap's intervals, thresholds, difficult objects, and merged shards."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import vocmatch
from tests.conftest import ROOT
from tests.conftest import run_cli as run
from tests.oracle import random_dataset, write_voc
from vocmatch.cli import EXIT_OK
from vocmatch.core.protocol import protocol
from vocmatch.errors import InputError
from vocmatch.evidence.counting import counting
from vocmatch.evidence.resampling import image_weights, percentile_interval
from vocmatch.run.evaluate import EvalRequest, evaluate


def obj(name: str, box: tuple[int, int, int, int], score: float | None = None,
        difficult: bool = False) -> str:  # fmt: skip
    x1, y1, x2, y2 = box
    extra = "" if score is None else f"<score>{score}</score>"
    return (
        f"<object><name>{name}</name><difficult>{int(difficult)}</difficult><bndbox>"
        f"<xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox>"
        f"{extra}</object>"
    )


def write(folder: Path, files: dict[str, list[str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for key, objects in files.items():
        (folder / f"{key}.xml").write_text(
            f"<annotation><filename>{key}.jpg</filename>{''.join(objects)}</annotation>",
            encoding="utf-8",
        )
    return folder


A, B, C = (10, 10, 50, 50), (100, 100, 150, 150), (200, 10, 260, 60)


@pytest.fixture
def plus_minus(tmp_path: Path) -> tuple[Path, Path]:
    """Two images: one car predicted twice (+1), two cars predicted once (-1)."""
    gt = write(tmp_path / "gt", {"a": [obj("car", A)], "b": [obj("car", A), obj("car", B)]})
    pred = write(
        tmp_path / "pred",
        {"a": [obj("car", A, 0.9), obj("car", C, 0.8)], "b": [obj("car", A, 0.9)]},
    )
    return gt, pred


def test_errors_of_plus_one_and_minus_one(plus_minus: tuple[Path, Path]) -> None:
    found = evaluate(EvalRequest(gt=plus_minus[0], pred=plus_minus[1], count=True))
    result = found.evidence.counting
    assert result is not None
    (car,) = result.classes
    assert (car.name, car.gt, car.pred) == ("car", 3, 3)
    assert (car.errors.mae.value, car.errors.rmse.value, car.errors.bias.value) == (1.0, 1.0, 0.0)
    assert (result.objects.mae.value, result.objects.bias.value) == (1.0, 0.0)
    assert (result.class_mean.mae.value, result.class_mean.bias.value) == (1.0, 0.0)
    assert car.presence.recall.value == 1.0
    assert car.presence.false_alarm.value is None  # every image holds a car
    assert (car.presence.images_with, car.presence.images_without) == (2, 0)


def test_threshold_drops_the_extra_prediction(plus_minus: tuple[Path, Path]) -> None:
    """At 0.85 image a's second car (0.8) is not counted: errors 0 and -1."""
    found = evaluate(plus_minus[0], plus_minus[1], count=True, score_threshold=0.85)
    result = found.evidence.counting
    assert result is not None
    (car,) = result.classes
    assert (car.pred, car.errors.mae.value, car.errors.bias.value) == (2, 0.5, -0.5)
    assert car.errors.rmse.value == pytest.approx(math.sqrt(0.5))
    assert result.thresholds == found.thresholds.describe()  # type: ignore[union-attr]


def test_difficult_objects_and_predictions_on_them_are_not_counted(tmp_path: Path) -> None:
    gt = write(tmp_path / "gt", {"a": [obj("car", A, difficult=True), obj("car", B)],
                                 "b": [obj("dog", A)]})  # fmt: skip
    pred = write(tmp_path / "pred", {"a": [obj("car", A, 0.9), obj("car", B, 0.8)],
                                     "b": [obj("cat", A, 0.7)]})  # fmt: skip
    result = evaluate(gt, pred, count=True).evidence.counting
    assert result is not None
    by_name = {c.name: c for c in result.classes}
    assert (by_name["car"].gt, by_name["car"].pred, by_name["car"].errors.mae.value) == (1, 1, 0.0)
    # The cat is a false alarm in b (one of the two images without a cat); the dog missed.
    assert by_name["cat"].presence.false_alarm.value == 0.5
    assert by_name["dog"].presence.recall.value == 0.0
    # All objects: image b's count is right (one object, one prediction) though its class
    # is wrong; the mean over classes sees the two errors.
    assert result.objects.mae.value == 0.0
    assert result.class_mean.mae.value == pytest.approx((0 + 0.5 + 0.5) / 3)


def naive(report: vocmatch.EvalReport) -> dict[str, dict[str, float | None]]:
    """Every number from the per-box records, image by image and class by class."""
    images = report.evaluation.images
    names = sorted({c.name for c in report.evaluation.classes})
    pred = np.zeros((len(images), len(names)))
    gt = np.zeros((len(images), len(names)))
    for i, image in enumerate(images):
        for m in image.matches:
            k = names.index(m.name)
            if m.outcome in ("tp", "fp") and m.pred_index is not None:
                pred[i, k] += 1
            if m.outcome in ("tp", "fn") and m.gt_index is not None:
                gt[i, k] += 1
    error = pred - gt
    out: dict[str, dict[str, float | None]] = {}
    for k, name in enumerate(names):
        holds = gt[:, k] > 0
        out[name] = {
            "mae": float(np.mean(np.abs(error[:, k]))),
            "rmse": float(np.sqrt(np.mean(error[:, k] ** 2))),
            "bias": float(np.mean(error[:, k])),
            "recall": float(np.mean(pred[holds, k] > 0)) if holds.any() else None,
            "false_alarm": float(np.mean(pred[~holds, k] > 0)) if (~holds).any() else None,
        }
    total = error.sum(axis=1)
    out["objects"] = {"mae": float(np.mean(np.abs(total))), "bias": float(np.mean(total)),
                      "rmse": float(np.sqrt(np.mean(total**2)))}  # fmt: skip
    return out


@pytest.mark.filterwarnings("ignore::vocmatch.errors.MissingPredictionWarning")
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("protocol_name", ["default", "coco", "voc07"])
def test_counts_equal_the_box_by_box_records(tmp_path: Path, seed: int, protocol_name: str) -> None:
    """On random sets with difficult objects, empty images and classes on one side only,
    at a score threshold on odd seeds: every number as counted box by box."""
    gt, pred = random_dataset(seed)
    write_voc(gt, tmp_path / "gt")
    write_voc(pred, tmp_path / "pred")
    threshold = 0.4 if seed % 2 else None
    report = evaluate(
        tmp_path / "gt", tmp_path / "pred", protocol=protocol_name, count=True, boxes=True,
        score_threshold=threshold,
    )  # fmt: skip
    result = report.evidence.counting
    assert result is not None
    expected = naive(report)
    for cls in result.classes:
        want = expected[cls.name]
        assert cls.errors.mae.value == pytest.approx(want["mae"], abs=1e-12)
        assert cls.errors.rmse.value == pytest.approx(want["rmse"], abs=1e-12)
        assert cls.errors.bias.value == pytest.approx(want["bias"], abs=1e-12)
        assert cls.presence.recall.value == pytest.approx(want["recall"], abs=1e-12)
        assert cls.presence.false_alarm.value == pytest.approx(want["false_alarm"], abs=1e-12)
    for name in ("mae", "rmse", "bias"):
        assert getattr(result.objects, name).value == pytest.approx(
            expected["objects"][name], abs=1e-12
        )
    # The predicted counts are the class table's TP + FP, the true counts its GT.
    table = {c.name: c for c in report.evaluation.classes}
    assert {c.name: (c.gt, c.pred) for c in result.classes} == {
        name: (c.gt, c.tp + c.fp) for name, c in table.items()
    }


def test_intervals_are_those_of_the_bootstraps_resamples(plus_minus: tuple[Path, Path]) -> None:
    """Each resample weighs the images as the bootstrap draws them (same seed, same draws)."""
    report = evaluate(plus_minus[0], plus_minus[1], count=True, bootstrap=300, seed=7)
    result = report.evidence.counting
    assert result is not None
    assert (result.resamples, result.seed) == (300, 7)
    weights = np.concatenate(list(image_weights(2, 300, 7))).astype(float)
    error = np.array([1.0, -1.0])  # images a and b, in key order
    mae = weights @ np.abs(error) / 2
    bias = weights @ error / 2
    (car,) = result.classes
    low, high, _ = percentile_interval(mae)
    assert (car.errors.mae.low, car.errors.mae.high) == (low, high)
    low, high, _ = percentile_interval(bias)
    assert (car.errors.bias.low, car.errors.bias.high) == (low, high)
    assert car.errors.bias.defined == 300


def test_records_without_ground_truth_cells_are_refused(plus_minus: tuple[Path, Path]) -> None:
    from vocmatch.run.shard_states import shard_state

    state = shard_state(EvalRequest(gt=plus_minus[0], pred=plus_minus[1]))
    records = replace(state.evaluator.records(), gt_cells=None)
    with pytest.raises(InputError, match="no per-image ground-truth counts"):
        counting(records, protocol("default"))


def test_command_line_table_json_and_markdown(plus_minus: tuple[Path, Path]) -> None:
    gt, pred = (str(p) for p in plus_minus)
    code, out, err = run("eval", gt, pred, "--count", "--format", "json")
    assert (code, err) == (EXIT_OK, "")
    counts = json.loads(out)["counts"]
    car = counts["classes"][0]
    assert (car["name"], car["gt"], car["pred"]) == ("car", 3, 3)
    assert car["mae"] == {"value": 1.0, "low": None, "high": None, "defined": 0}
    assert counts["objects"]["bias"]["value"] == 0.0
    code, out, _ = run("eval", gt, pred, "--count", columns=160)
    assert code == EXIT_OK
    assert "Counts per image over 2 images: predicted minus true, every prediction counts" in out
    code, out, _ = run("eval", gt, pred, "--count", "--format", "markdown")
    assert "| car | 3 | 3 | 1.0000 | 1.0000 | 0.0000 | 1.0000 | — |" in out


@pytest.mark.parametrize("protocol_name", ["default", "coco", "voc07"])
def test_merged_shards_count_as_one_run(tmp_path: Path, protocol_name: str) -> None:
    gt, pred = str(ROOT / "fixtures/demo/gt"), str(ROOT / "fixtures/demo/pred")
    options = ["--protocol", protocol_name, "--score-threshold", "0.3"]
    states = []
    for k in (3, 1, 2):
        state = str(tmp_path / f"s{k}.vms")
        code, _, _ = run("eval", gt, pred, *options, "--shard", f"{k}/3", "--save-state", state)
        assert code == EXIT_OK
        states.append(state)
    for output in ("json", "table", "markdown"):
        extras = ["--count", "--bootstrap", "50", "--seed", "3", "--format", output]
        _, whole, _ = run("eval", gt, pred, *options, *extras, columns=200)
        _, merged, _ = run("merge", *states, *extras, columns=200)
        assert merged == whole

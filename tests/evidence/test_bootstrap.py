"""Bootstrap intervals: a resample is a weight per image, and the weighted metrics are those
of the dataset with each image copied as often as it is weighted."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.bench_scripts import bench
from tests.conftest import FIXTURES
from tests.evaluation.test_batch import VARIANTS
from tests.oracle import random_dataset
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.matched import evaluate_matched
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.evidence.bootstrap import (
    Interval,
    Resampled,
    Resampler,
    bootstrap,
    image_weights,
    percentile_interval,
    resampler,
)
from vocmatch.readers.parse import AnnotationSet, read_directory
from vocmatch.readers.scan import columns_from_annotations, read_columns

SHAPES = FIXTURES / "shapes"


def evaluate_sets(
    gt: AnnotationSet, pred: AnnotationSet, name: str
) -> tuple[Evaluation, Resampler]:
    done = evaluate_matched(
        columns_from_annotations(gt), columns_from_annotations(pred), VARIANTS[name]
    )
    evaluation = done.evaluation
    return evaluation, resampler(evaluation, done.records, VARIANTS[name])


def copied(
    gt: AnnotationSet, pred: AnnotationSet, keys: tuple[str, ...], weights: np.ndarray
) -> tuple[AnnotationSet, AnnotationSet]:
    """The dataset holding image i ``weights[i]`` times, copies in image order."""
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    gt_images, pred_images = [], []
    for i, key in enumerate(keys):
        for c in range(int(weights[i])):
            new = f"{i:05d}-{c:03d}"
            gt_images.append(replace(gt_by_key[key], key=new, path=f"gt/{new}.xml"))
            if key in pred_by_key:
                pred_images.append(replace(pred_by_key[key], key=new, path=f"pred/{new}.xml"))
    return AnnotationSet("gt", tuple(gt_images), ()), AnnotationSet("pred", tuple(pred_images), ())


def row(resampled: Resampled, names: tuple[str, ...]) -> dict[str, float]:
    """Every metric of the first resample, by name; NaN where undefined."""
    values = {
        "map": resampled.map[0],
        "precision": resampled.precision[0],
        "recall": resampled.recall[0],
        "f1": resampled.f1[0],
    }
    for c, name in enumerate(names):
        values[f"{name}:ap"] = resampled.class_ap[0, c]
        values[f"{name}:precision"] = resampled.class_precision[0, c]
        values[f"{name}:recall"] = resampled.class_recall[0, c]
        values[f"{name}:f1"] = resampled.class_f1[0, c]
    return {k: float(v) for k, v in values.items()}


def measured(evaluation: Evaluation, names: tuple[str, ...]) -> dict[str, float]:
    """The same metrics as the evaluation reports them; NaN for undefined or absent."""

    def value(v: float | None) -> float:
        return math.nan if v is None else v

    s = evaluation.summary
    values = {
        "map": value(s.map),
        "precision": value(s.precision),
        "recall": value(s.recall),
        "f1": value(s.f1),
    }
    by_name = {c.name: c for c in evaluation.classes}
    for name in names:
        c = by_name.get(name)
        for metric in ("ap", "precision", "recall", "f1"):
            values[f"{name}:{metric}"] = math.nan if c is None else value(getattr(c, metric))
    return values


def assert_same(actual: dict[str, float], expected: dict[str, float], tolerance: float) -> None:
    assert actual.keys() == expected.keys()
    for key, want in expected.items():
        got = actual[key]
        if math.isnan(want):
            assert math.isnan(got), f"{key}: {got!r}, expected undefined"
        elif tolerance == 0:
            assert got == want, f"{key}: {got!r} != {want!r}"
        else:
            assert abs(got - want) <= tolerance, f"{key}: {got!r} != {want!r}"


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(4))
def test_all_weights_one_give_the_evaluation_bit_for_bit(name: str, seed: int) -> None:
    """Weights of 1 reproduce every number of the evaluation exactly, under every protocol."""
    gt, pred = random_dataset(seed, images=15)
    evaluation, sampler = evaluate_sets(gt, pred, name)
    ones = np.ones((1, len(sampler.images)), dtype=np.int64)
    names = sampler.class_names
    assert_same(row(sampler.metrics(ones), names), measured(evaluation, names), 0)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(3))
def test_weights_equal_the_dataset_with_images_copied(name: str, seed: int) -> None:
    """A weight vector gives the numbers of the dataset holding each image as often as it is
    weighted (tied scores within an image laid out copy by copy), to 1e-12."""
    gt, pred = random_dataset(seed, images=15)
    _, sampler = evaluate_sets(gt, pred, name)
    rng = np.random.default_rng(seed)
    n = len(sampler.images)
    vectors = [
        np.bincount(rng.integers(0, n, n), minlength=n),
        np.bincount(rng.integers(0, n, n), minlength=n),
        # Mostly zeros: classes drop out of the resample entirely.
        np.where(np.arange(n) % 5 == 0, 3, 0),
    ]
    for weights in vectors:
        copy_gt, copy_pred = copied(gt, pred, sampler.images, weights)
        expected = evaluate_matched(
            columns_from_annotations(copy_gt), columns_from_annotations(copy_pred), VARIANTS[name]
        ).evaluation
        actual = row(sampler.metrics(weights[None, :]), sampler.class_names)
        assert_same(actual, measured(expected, sampler.class_names), 1e-12)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize(
    "thresholds",
    [
        pytest.param(ScoreThresholds(0.5), id="all-classes-0.5"),
        pytest.param(ScoreThresholds(None, (("cat", 0.8), ("dog", 0.25))), id="per-class"),
    ],
)
def test_score_thresholds_resample_the_counts_they_report(
    name: str, thresholds: ScoreThresholds
) -> None:
    """With a score threshold, the resampled precision, recall and F1 are those of the
    thresholded counts (bit for bit at weights 1, to 1e-12 against copied images), while AP
    keeps every prediction: the interval is drawn around the number the report shows."""
    gt, pred = random_dataset(3, images=15)
    done = evaluate_matched(
        columns_from_annotations(gt),
        columns_from_annotations(pred),
        VARIANTS[name],
        score_thresholds=thresholds,
    )
    evaluation = done.evaluation
    sampler = resampler(evaluation, done.records, VARIANTS[name], thresholds)
    names = sampler.class_names
    assert {"cat", "dog"} <= set(names)
    ones = np.ones((1, len(sampler.images)), dtype=np.int64)
    assert_same(row(sampler.metrics(ones), names), measured(evaluation, names), 0)
    unthresholded = evaluate_sets(gt, pred, name)[0]
    assert evaluation.summary.tp != unthresholded.summary.tp  # the threshold drops some
    weights = np.bincount(np.random.default_rng(3).integers(0, 15, 15), minlength=15)
    copy_gt, copy_pred = copied(gt, pred, sampler.images, weights)
    expected = evaluate_matched(
        columns_from_annotations(copy_gt),
        columns_from_annotations(copy_pred),
        VARIANTS[name],
        score_thresholds=thresholds,
    ).evaluation
    actual = row(sampler.metrics(weights[None, :]), names)
    assert_same(actual, measured(expected, names), 1e-12)


@pytest.mark.parametrize("name", ["default", "voc07", "coco"])
def test_predictions_without_scores_resample_counts(name: str) -> None:
    """Without scores (paired highest IoU first) precision, recall and F1 are resampled;
    AP stays undefined."""
    gt, pred = random_dataset(5, images=12)
    pred = replace(
        pred,
        annotations=tuple(
            replace(a, boxes=tuple(replace(b, score=None) for b in a.boxes))
            for a in pred.annotations
        ),
    )
    evaluation, sampler = evaluate_sets(gt, pred, name)
    assert not sampler.has_ap
    names = sampler.class_names
    n = len(sampler.images)
    assert_same(row(sampler.metrics(np.ones((1, n), int)), names), measured(evaluation, names), 0)
    weights = np.bincount(np.random.default_rng(1).integers(0, n, n), minlength=n)
    copy_gt, copy_pred = copied(gt, pred, sampler.images, weights)
    expected = evaluate_matched(
        columns_from_annotations(copy_gt), columns_from_annotations(copy_pred), VARIANTS[name]
    ).evaluation
    assert_same(row(sampler.metrics(weights[None, :]), names), measured(expected, names), 1e-12)


@pytest.mark.parametrize("name", ["default", "voc12", "voc07", "coco"])
def test_rotated_boxes_and_polygons_resample_like_boxes(name: str) -> None:
    """Sets with rotated boxes and polygons resample as sets of boxes do, under every
    protocol (COCO's ten thresholds included): weights 1 exactly, copies to 1e-12."""
    gt, pred = read_directory(SHAPES / "gt"), read_directory(SHAPES / "pred")
    evaluation, sampler = evaluate_sets(gt, pred, name)
    assert sampler.has_ap
    names = sampler.class_names
    n = len(sampler.images)
    assert_same(row(sampler.metrics(np.ones((1, n), int)), names), measured(evaluation, names), 0)
    weights = np.array([2, 0, 3][:n] + [1] * max(0, n - 3))
    copy_gt, copy_pred = copied(gt, pred, sampler.images, weights)
    expected = evaluate_matched(
        columns_from_annotations(copy_gt), columns_from_annotations(copy_pred), VARIANTS[name]
    ).evaluation
    assert_same(row(sampler.metrics(weights[None, :]), names), measured(expected, names), 1e-12)


def test_demo_intervals_with_a_fixed_seed() -> None:
    """The demo set, 200 resamples, seed 7: the intervals, exactly."""
    gt = read_columns(FIXTURES / "demo" / "gt")
    pred = read_columns(FIXTURES / "demo" / "pred")
    done = evaluate_matched(gt, pred, protocol("default"))
    evaluation = done.evaluation
    result = bootstrap(
        evaluation, resampler(evaluation, done.records, protocol("default")), resamples=200, seed=7
    )
    assert (result.resamples, result.seed, result.images) == (200, 7, 6)
    assert result.map == EXPECTED_DEMO["map"]
    assert result.recall == EXPECTED_DEMO["recall"]
    car = next(c for c in result.classes if c.name == "car")
    assert car.ap == EXPECTED_DEMO["car:ap"]
    truck = next(c for c in result.classes if c.name == "truck")
    # No ground truth anywhere: AP and recall are never defined; precision always 0.
    assert (truck.ap.defined, truck.recall.defined) == (0, 0)
    assert (truck.precision.low, truck.precision.high) == (0.0, 0.0)


EXPECTED_DEMO = {
    # mAP 0.625 measured; 95 % of 200 resamples of the six images within these bounds.
    "map": Interval(0.625, 0.41666666666666663, 0.9334374999999999, 200),
    "recall": Interval(0.7142857142857143, 0.35654761904761906, 0.9285714285714286, 200),
    # 21 of the 200 resamples hold no image with a car: AP is defined in the other 179.
    "car:ap": Interval(0.75, 0.6666666666666666, 1.0, 179),
}


def test_weights_do_not_depend_on_the_chunking() -> None:
    """One draw per resample: the weights are the same however many rows a chunk holds."""
    whole = np.concatenate(list(image_weights(37, 250, seed=3)))
    assert whole.shape == (250, 37)
    assert (whole.sum(axis=1) == 37).all()
    rng = np.random.default_rng(3)
    first = np.bincount(rng.integers(0, 37, size=37), minlength=37)
    assert (whole[0] == first).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=60))
def test_percentile_interval_is_numpys(values: list[float]) -> None:
    """The interval is numpy's linear percentiles at 2.5 and 97.5, NaN left out."""
    low, high, defined = percentile_interval([*values, math.nan])
    assert defined == len(values)
    assert (low, high) == tuple(float(v) for v in np.percentile(values, [2.5, 97.5]))


def test_weights_are_checked() -> None:
    """A weight matrix of the wrong shape, or with a negative weight, is refused."""
    gt, pred = random_dataset(0, images=5)
    _, sampler = evaluate_sets(gt, pred, "default")
    with pytest.raises(
        ValueError, match=r"Expected `weights` to have shape \(B, 5\), got \(1, 4\)"
    ):
        sampler.metrics(np.ones((1, 4), int))
    with pytest.raises(ValueError, match="non-negative"):
        sampler.metrics(-np.ones((1, 5), int))


def test_bench_checks_weights_against_copied_datasets(tmp_path: Path) -> None:
    """bench/bootstrap_bench.py's check (weighted metrics equal copied datasets' before any
    time is printed) passes on a small generated set, under coco."""
    bench("generate").generate(tmp_path, images=30, classes=4, pred_per_image=20, seed=3)
    module = bench("bootstrap_bench")
    gt, pred = read_columns(tmp_path / "gt"), read_columns(tmp_path / "pred")
    for name in ("default", "coco"):
        assert module.check(gt, pred, name, 2) >= 0.0

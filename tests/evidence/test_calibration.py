"""Calibration: reliability bins and expected calibration error at the IoU threshold."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.evaluation.test_batch import VARIANTS
from tests.oracle import random_dataset
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.matched import evaluate_matched
from vocmatch.evidence.calibration import calibration
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations


def sets(scores: list[float | None], hits: list[bool]) -> tuple[AnnotationSet, AnnotationSet]:
    """One image: one object per prediction; a hit lies on its object, a miss far off."""
    gt, pred = [], []
    for i, (score, hit) in enumerate(zip(scores, hits, strict=True)):
        x = 100 * i
        gt.append(Box("car", x, 0, x + 50, 50))
        shift = 0 if hit else 1000
        pred.append(Box("car", x + shift, shift, x + 50 + shift, 50 + shift, score=score))
    image = (
        ImageAnnotation("a", "gt/a.xml", tuple(gt)),
        ImageAnnotation("a", "p/a.xml", tuple(pred)),
    )
    return AnnotationSet("gt", (image[0],), ()), AnnotationSet("pred", (image[1],), ())


def calibrate(gt: AnnotationSet, pred: AnnotationSet, bins: int, name: str = "default") -> object:
    done = evaluate_matched(
        columns_from_annotations(gt), columns_from_annotations(pred), VARIANTS[name]
    )
    matched = done.matched
    assert matched is not None
    return calibration(done.records, VARIANTS[name], bins)


def test_two_bins_by_hand() -> None:
    """Scores 0.95 (TP), 0.85 (FP), 0.35 (TP), 0.25 (FP) in two bins: each bin half right;
    gaps 0.2 (mean 0.3) and 0.4 (mean 0.9): ECE 0.3, MCE 0.4."""
    result = calibrate(*sets([0.95, 0.85, 0.35, 0.25], [True, False, True, False]), bins=2)
    overall = result.overall
    assert (overall.predictions, overall.ece, overall.mce) == (
        4,
        pytest.approx(0.3),
        pytest.approx(0.4),
    )
    assert [(b.low, b.high, b.count, b.accuracy) for b in overall.bins] == [
        (0.0, 0.5, 2, 0.5),
        (0.5, 1.0, 2, 0.5),
    ]
    assert [b.confidence for b in overall.bins] == [pytest.approx(0.3), pytest.approx(0.9)]
    assert [c.name for c in result.classes] == ["car"]
    assert result.classes[0].ece == overall.ece


def test_scores_at_the_edges() -> None:
    """A score of 1 is in the last bin; scores outside [0, 1] go to the end bins and are
    counted; a prediction without a score is left out and counted."""
    result = calibrate(*sets([1.0, 1.5, -0.2, 0.5, None], [True, True, False, True, True]), bins=2)
    assert [b.count for b in result.overall.bins] == [1, 3]
    assert (result.clipped, result.unscored, result.overall.predictions) == (2, 1, 4)


def test_no_scores_no_calibration() -> None:
    """Predictions without any score have no calibration."""
    assert calibrate(*sets([None, None], [True, False]), bins=10) is None


def test_bins_are_checked() -> None:
    """Fewer than one bin is refused."""
    done = evaluate_matched(*(columns_from_annotations(s) for s in sets([0.5], [True])))
    matched = done.matched
    assert matched is not None
    with pytest.raises(ValueError, match="bins must be at least 1, got 0"):
        calibration(done.records, protocol("default"), 0)


@pytest.mark.parametrize("name", ["default", "voc07", "coco", "default-crowd-iou75"])
@pytest.mark.parametrize("seed", range(4))
def test_ece_from_the_per_box_records(name: str, seed: int) -> None:
    """ECE per class and pooled equals the definition applied to the evaluation's own
    per-box records (TP and FP at the threshold, ignored ones left out)."""
    gt, pred = random_dataset(seed, images=15)
    done = evaluate_matched(
        columns_from_annotations(gt), columns_from_annotations(pred), VARIANTS[name]
    )
    evaluation, matched = done.evaluation, done.matched
    assert matched is not None
    result = calibration(done.records, VARIANTS[name], 7)
    assert result is not None
    records = [
        (m.name, m.score, m.outcome == "tp")
        for image in evaluation.images
        for m in image.matches
        if m.outcome in ("tp", "fp") and m.score is not None
    ]

    def ece(entries: list[tuple[str, float, bool]]) -> float | None:
        if not entries:
            return None
        total = 0.0
        for b in range(7):
            inside = [(s, hit) for _, s, hit in entries if min(math.floor(s * 7), 6) == b]
            if inside:
                gap = abs(np.mean([hit for _, hit in inside]) - np.mean([s for s, _ in inside]))
                total += len(inside) * gap
        return total / len(entries)

    def close(a: float | None, b: float | None) -> bool:
        return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-12)

    assert close(result.overall.ece, ece(records))
    for entry in result.classes:
        assert close(entry.ece, ece([r for r in records if r[0] == entry.name])), entry.name


def test_score_thresholds_do_not_apply() -> None:
    """Calibration is about every score: a score threshold for the counts changes nothing."""
    from vocmatch.evaluation.thresholds import ScoreThresholds

    gt, pred = random_dataset(2, images=10)
    done = evaluate_matched(columns_from_annotations(gt), columns_from_annotations(pred))
    plain = done.records
    done = evaluate_matched(
        columns_from_annotations(gt),
        columns_from_annotations(pred),
        protocol("default"),
        score_thresholds=ScoreThresholds.of(0.7, {}),
    )
    cut = done.records
    assert plain is not None and cut is not None
    default = protocol("default")
    assert calibration(plain, default, 10) == calibration(cut, default, 10)


@pytest.mark.parametrize("name", ["default", "default-crowd-iou75"])
def test_right_means_a_true_positive_at_the_evaluation_threshold(name: str) -> None:
    """The bins' true positives add up to the evaluation's TP at its own IoU threshold."""
    gt, pred = random_dataset(3, images=10)
    done = evaluate_matched(
        columns_from_annotations(gt), columns_from_annotations(pred), VARIANTS[name]
    )
    evaluation, matched = done.evaluation, done.matched
    assert matched is not None
    result = calibration(done.records, VARIANTS[name], 5)
    assert result is not None
    hits = sum(round(b.accuracy * b.count) for b in result.overall.bins if b.accuracy is not None)
    assert result.threshold == evaluation.conventions.iou_threshold
    assert hits == evaluation.summary.tp


LARGEST = float(np.finfo(np.float64).max)


@pytest.mark.parametrize(
    ("scores", "confidence"),
    [
        pytest.param([1.5e308, 1.5e308, 1e308], 1.5e308 / 3 * 2 + 1e308 / 3, id="sum-overflows"),
        pytest.param([LARGEST] * 3, LARGEST, id="largest-float"),
    ],
)
def test_scores_near_the_float_limit(scores: list[float], confidence: float) -> None:
    """Any finite score is binned without overflow (warnings are errors here): the three
    clipped into the last bin, their mean score finite, two of three right, and the ECE the
    one bin's gap, no larger than the largest float."""
    result = calibrate(*sets(scores, [True, False, True]), bins=2)
    overall = result.overall
    assert [b.count for b in overall.bins] == [0, 3]
    assert overall.bins[1].confidence == pytest.approx(confidence)
    assert overall.bins[1].accuracy == pytest.approx(2 / 3)
    assert overall.ece == overall.mce == pytest.approx(confidence)
    assert overall.ece is not None and overall.ece <= LARGEST
    assert result.clipped == 3

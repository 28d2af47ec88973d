"""How well scores predict being right: expected calibration error and reliability bins.

A detector's score is calibrated when, among its predictions scored about 0.7, about 70 %
are true positives. The predictions are grouped by score into equal-width bins over
[0, 1] (``bins``, 10 by default; a score of exactly 1 goes in the last bin, a score outside
[0, 1] in the nearest end bin and is counted as clipped), and in each bin the share of true
positives at the evaluation threshold (the *accuracy*) is set against the mean score (the
*confidence*):

    ECE = sum over bins of (n_bin / n) * |accuracy_bin - confidence_bin|

(Guo et al., "On Calibration of Modern Neural Networks", ICML 2017, eq. 3; for detection,
Küppers et al., "Multivariate Confidence Calibration for Object Detection", CVPR 2020
Workshops, which also takes a prediction's correctness from its match at an IoU
threshold). MCE is the largest ``|accuracy - confidence|`` over bins that hold a prediction.

The predictions are those the evaluation ranks: a prediction matched to ignored ground
truth (``difficult``, or a crowd region) and one beyond ``max_dets`` are left out, as AP
leaves them out; score thresholds do not apply (calibration is about every score). A
prediction without a score has no confidence and is left out. Per class, and for all
predictions pooled (``all``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.from_records import ranking_score
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.stage_inputs import IouLevels

__all__ = ["DEFAULT_BINS", "Calibration", "ClassCalibration", "ReliabilityBin", "calibration"]

#: Score bins when none are asked for.
DEFAULT_BINS = 10

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One score bin.

    Attributes:
        low: The bin's lower edge (included).
        high: Its upper edge (excluded, but 1.0 for the last bin).
        count: Predictions in it.
        confidence: Their mean score; None when empty.
        accuracy: The share of them that are true positives; None when empty.
    """

    low: float
    high: float
    count: int
    confidence: float | None
    accuracy: float | None


@dataclass(frozen=True, slots=True)
class ClassCalibration:
    """One class's calibration (or ``all`` predictions pooled).

    Attributes:
        name: The class, or ``all``.
        predictions: Scored predictions counted.
        ece: Expected calibration error; None without predictions.
        mce: Maximum calibration error; None without predictions.
        bins: The reliability bins, lowest score first.
    """

    name: str
    predictions: int
    ece: float | None
    mce: float | None
    bins: tuple[ReliabilityBin, ...]


@dataclass(frozen=True, slots=True)
class Calibration:
    """The calibration of an evaluation's scores.

    Attributes:
        threshold: The IoU threshold a true positive is taken at.
        bins: The number of score bins.
        overall: Every class's predictions pooled.
        classes: Per class, sorted by name.
        clipped: Scores outside [0, 1], put in the nearest end bin.
        unscored: Predictions without a score, left out.
    """

    threshold: float
    bins: int
    overall: ClassCalibration
    classes: tuple[ClassCalibration, ...]
    clipped: int
    unscored: int


def _class_calibration(
    name: str, index: IntArray, scores: FloatArray, hits: npt.NDArray[np.bool_], bins: int
) -> ClassCalibration:
    counts = np.bincount(index, minlength=bins)
    score_sums = np.bincount(index, weights=scores, minlength=bins)
    means = score_sums / np.maximum(counts, 1)
    if not np.isfinite(score_sums).all():
        # Scores near the float limit (any finite score is allowed): their sum overflows where
        # their mean does not, so each score's share of the mean is added instead. Rounding
        # can still step past the largest float, which a mean of finite scores cannot.
        shares = scores / np.maximum(counts, 1)[index]
        largest = np.finfo(np.float64).max
        means = np.clip(np.bincount(index, weights=shares, minlength=bins), -largest, largest)
    hit_sums = np.bincount(index, weights=hits.astype(np.float64), minlength=bins)
    total = int(counts.sum())
    records = []
    gaps = []
    for b in range(bins):
        n = int(counts[b])
        low, high = b / bins, (b + 1) / bins
        if n == 0:
            records.append(ReliabilityBin(low, high, 0, None, None))
            continue
        confidence = float(means[b])
        accuracy = float(hit_sums[b] / n)
        records.append(ReliabilityBin(low, high, n, confidence, accuracy))
        gaps.append((n, abs(accuracy - confidence)))
    if total == 0:
        return ClassCalibration(name, 0, None, None, tuple(records))
    mce = float(max(gap for _, gap in gaps))
    # Weights first (n * gap overflows for gaps near the float limit); a weighted mean of the
    # gaps is at most the largest, which rounding must not pass either.
    ece = min(float(sum(n / total * gap for n, gap in gaps)), mce)
    return ClassCalibration(name, total, ece, mce, tuple(records))


def calibration(
    records: MatchRecords, conventions: Conventions, bins: int = DEFAULT_BINS
) -> Calibration | None:
    """The reliability bins and calibration errors of an evaluation's scores.

    Args:
        records: The evaluation's match records (of one run, or merged from shards).
        conventions: The protocol they were matched under.
        bins: Equal-width score bins over [0, 1]; at least 1.

    Returns:
        The calibration; None when the predictions carry no scores.

    Raises:
        ValueError: ``bins`` below 1.
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if not records.notes.scored:
        return None
    records = records.in_key_order()
    preds = records.preds
    level = IouLevels.of(conventions).evaluation
    hit = ((preds.matched >> level) & 1).astype(bool)
    ignored = ((preds.ignored >> level) & 1).astype(bool)
    scores = ranking_score(preds, np.arange(preds.label.size))
    scored = np.isfinite(scores)
    keep = scored & ~ignored
    kept_scores = scores[keep]
    kept_hits = (hit & ~ignored)[keep]
    kept_class = preds.label[keep]
    clipped = int(np.count_nonzero((kept_scores < 0) | (kept_scores > 1)))
    # Clipped before scaling: a score may be any finite float, and 1e308 * bins overflows.
    index = np.clip(np.floor(np.clip(kept_scores, 0, 1) * bins), 0, bins - 1).astype(np.int64)
    classes = tuple(
        _class_calibration(
            name,
            index[kept_class == k],
            kept_scores[kept_class == k],
            kept_hits[kept_class == k],
            bins,
        )
        for k, name in enumerate(records.class_names)
    )
    return Calibration(
        threshold=conventions.iou_threshold,
        bins=bins,
        overall=_class_calibration("all", index, kept_scores, kept_hits, bins),
        classes=classes,
        clipped=clipped,
        unscored=int(np.count_nonzero(~scored & ~ignored)),
    )

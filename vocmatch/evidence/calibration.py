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

Beside them, when the records keep what they read
(:mod:`vocmatch.evaluation.calibration_inputs`), two errors made for detection:

* OCE, the object-level calibration error (uq-detr's ``oce()``): the mean over ground-truth
  objects of a Brier score of the predictions, of any class, that reach the object at an IoU
  threshold, averaged over the thresholds 0.5 and 0.75; a missed object scores 1.0, so a
  detector cannot improve it by dropping its doubtful predictions. Per class, over that
  class's objects.
* D-ECE, the detection expected calibration error (netcal's ``ECE(bins, detection=True)``):
  ECE over joint bins of the score and the box's relative centre ``cx, cy`` and size ``w,
  h``, ``bins`` equal bins over [0, 1] in each of the five (values clipped to ``[eps, 1 -
  eps]`` as netcal clips them), so a score calibrated on average but not across the image is
  seen. The predictions are ECE's, less those of images without a ``<size>`` (counted as
  ``unsized``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.protocol import Conventions
from vocmatch.evaluation.calibration_inputs import OCE_THRESHOLDS, CalibrationInputs
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
        objects: Ground-truth objects that count (OCE's), when OCE was computed.
        oce: Object-level calibration error; None without objects or inputs.
        d_ece_predictions: The predictions D-ECE bins (ECE's, in images with a size).
        d_ece: Detection expected calibration error; None without such predictions or
            inputs.
    """

    name: str
    predictions: int
    ece: float | None
    mce: float | None
    bins: tuple[ReliabilityBin, ...]
    objects: int = 0
    oce: float | None = None
    d_ece_predictions: int = 0
    d_ece: float | None = None


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
        detection: OCE and D-ECE were computed (the records kept their inputs).
        oce_thresholds: The IoU thresholds OCE averages over.
        unsized: Predictions D-ECE leaves out: their image has no ``<size>``.
    """

    threshold: float
    bins: int
    overall: ClassCalibration
    classes: tuple[ClassCalibration, ...]
    clipped: int
    unscored: int
    detection: bool = False
    oce_thresholds: tuple[float, ...] = OCE_THRESHOLDS
    unsized: int = 0


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
    inputs = records.calibration
    detection = _Detection.of(inputs, keep, kept_scores, kept_hits, kept_class, bins)
    clipped = int(np.count_nonzero((kept_scores < 0) | (kept_scores > 1)))
    # Clipped before scaling: a score may be any finite float, and 1e308 * bins overflows.
    index = np.clip(np.floor(np.clip(kept_scores, 0, 1) * bins), 0, bins - 1).astype(np.int64)
    classes = tuple(
        detection.added(
            _class_calibration(
                name,
                index[kept_class == k],
                kept_scores[kept_class == k],
                kept_hits[kept_class == k],
                bins,
            ),
            k,
        )
        for k, name in enumerate(records.class_names)
    )
    overall = _class_calibration("all", index, kept_scores, kept_hits, bins)
    return Calibration(
        threshold=conventions.iou_threshold,
        bins=bins,
        overall=detection.added(overall, None),
        classes=classes,
        clipped=clipped,
        unscored=int(np.count_nonzero(~scored & ~ignored)),
        detection=inputs is not None,
        unsized=detection.unsized,
    )


@dataclass(frozen=True, slots=True)
class _Detection:
    """What OCE and D-ECE read, of the predictions ECE counts (None without inputs).

    Attributes:
        inputs: The records' calibration inputs.
        features: ``(N, 5)`` the clipped score and relative box of the counted predictions
            whose image has a size, as netcal bins them.
        hits: ``(N,)`` true positives.
        label: ``(N,)`` their class.
        bins: Bins per feature.
        unsized: Counted predictions of images without a size.
    """

    inputs: CalibrationInputs | None
    features: FloatArray
    hits: npt.NDArray[np.bool_]
    label: IntArray
    bins: int
    unsized: int

    @classmethod
    def of(
        cls,
        inputs: CalibrationInputs | None,
        keep: npt.NDArray[np.bool_],
        scores: FloatArray,
        hits: npt.NDArray[np.bool_],
        label: npt.NDArray[Any],
        bins: int,
    ) -> _Detection:
        if inputs is None:
            return cls(None, np.zeros((0, 5)), hits[:0], np.zeros(0, dtype=np.int64), bins, 0)
        box = inputs.pred_box[keep]
        sized = np.isfinite(box).all(axis=1)
        # netcal clips every feature into (0, 1) so that each lands in a bin.
        eps = float(np.finfo(np.float64).eps)
        features = np.clip(np.column_stack([scores[sized], box[sized]]), eps, 1.0 - eps)
        return cls(
            inputs, features, hits[sized], np.asarray(label, dtype=np.int64)[sized], bins,
            int(np.count_nonzero(~sized)),
        )  # fmt: skip

    def added(self, entry: ClassCalibration, k: int | None) -> ClassCalibration:
        """``entry`` with the OCE and D-ECE of class ``k`` (None: every class)."""
        if self.inputs is None:
            return entry
        labels = self.inputs.object_label
        terms = self.inputs.object_brier if k is None else self.inputs.object_brier[labels == k]
        of_class = np.ones(self.label.size, dtype=bool) if k is None else self.label == k
        return replace(
            entry,
            objects=int(terms.shape[0]),
            oce=object_calibration_error(terms),
            d_ece_predictions=int(np.count_nonzero(of_class)),
            d_ece=detection_calibration_error(
                self.features[of_class], self.hits[of_class], self.bins
            ),
        )


def object_calibration_error(terms: FloatArray) -> float | None:
    """OCE from each object's terms: their mean at each IoU threshold, averaged over the
    thresholds (uq-detr's order of means); None without objects.

    Args:
        terms: ``(G, T)`` each object's Brier term at each threshold.

    >>> object_calibration_error(np.array([[0.0, 1.0], [0.5, 1.0]]))
    0.625
    """
    if not terms.shape[0]:
        return None
    # fsum: the same number whatever the order the objects come in (a merge's or a run's).
    means = [math.fsum(terms[:, t].tolist()) / terms.shape[0] for t in range(terms.shape[1])]
    return math.fsum(means) / len(means)


def detection_calibration_error(
    features: FloatArray, hits: npt.NDArray[np.bool_], bins: int
) -> float | None:
    """D-ECE: ECE over joint equal-width bins of every feature (netcal's binning: the
    edges ``linspace(0, 1, bins + 1)``, a value on an edge in the bin above it).

    Args:
        features: ``(N, F)`` the score first, then the box's features, each in (0, 1).
        hits: ``(N,)`` true positives.
        bins: Bins per feature.

    Returns:
        The sum over joint bins of ``n_bin / N * |accuracy - confidence|``; None for
        ``N = 0``.

    Two of three predictions share a bin (accuracy 0.5, mean score 0.7), one is alone (1
    and 0.9): 2/3 x 0.2 + 1/3 x 0.1.

    >>> found = detection_calibration_error(
    ...     np.array([[0.8, 0.2], [0.6, 0.2], [0.9, 0.9]]), np.array([True, False, True]), 2
    ... )
    >>> round(found, 4)
    0.1667
    """
    total = features.shape[0]
    if not total:
        return None
    edges = np.linspace(0.0, 1.0, bins + 1)
    cell = np.clip(np.searchsorted(edges, features, side="right") - 1, 0, bins - 1)
    # Each bin's predictions together, scores ascending within it: each sum is then taken in
    # one order, whichever order the predictions came in.
    order = np.lexsort((features[:, 0], *cell.T[::-1]))
    cell, score, hit = cell[order], features[order, 0], hits[order]
    starts = np.flatnonzero(np.append(True, (cell[1:] != cell[:-1]).any(axis=1)))
    counts = np.diff(np.append(starts, total))
    confidence = np.add.reduceat(score, starts) / counts
    accuracy = np.add.reduceat(hit.astype(np.float64), starts) / counts
    gaps = counts / total * np.abs(accuracy - confidence)
    return math.fsum(gaps.tolist())

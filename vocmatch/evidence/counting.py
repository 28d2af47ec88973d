"""Counting with a detector: how far each image's count of objects is from the truth.

A detector used to count (cars at a junction, cells on a slide) is judged by the counts it
gives, not by its boxes. For every evaluated image ``i`` and class ``k``:

* the **true count** ``g[i, k]`` is the ground truth that counts (an ignored ``difficult``
  object is not in it);
* the **predicted count** ``p[i, k]`` is the predictions that count at the thresholds
  applied: at or above their class's score threshold (every prediction without one), and
  not matched to ignored ground truth (a prediction on a ``difficult`` object is neither
  right nor wrong, in counts as in TP and FP). It is the class's TP + FP in that image, so
  the predicted counts add up to the class table's TP + FP.

The count error ``e[i, k] = p[i, k] - g[i, k]`` gives, over the ``I`` evaluated images
(every image, those without the class included):

* ``mae`` = mean of ``|e|``, ``rmse`` = square root of the mean of ``e²``, ``bias`` = mean of
  ``e`` (above 0: the detector over-counts);
* presence: ``recall`` = the share of the images holding the class (``g > 0``) where the
  detector finds any (``p > 0``), undefined when no image holds it; ``false_alarm`` = the
  share of the images without it where the detector finds some, undefined when every image
  holds it.

Overall, ``class_mean`` is the mean over the classes of each class's ``mae``, ``rmse`` and
``bias``, and ``objects`` the same errors of the count of all objects per image
(``sum_k e[i, k]``: a car counted as a truck is right here and wrong in ``class_mean``).

With ``resamples``, each number gets a percentile interval from resamples of the images
drawn as the bootstrap draws them (:func:`~vocmatch.evidence.resampling.image_weights`, same
seed: the same resamples as ``bootstrap``'s intervals). Everything is read from the match
records, so counts are the same after shards are merged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.protocol import Conventions
from vocmatch.errors import InputError
from vocmatch.evaluation.from_records import ranking_score
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.stage_inputs import IouLevels
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.evidence.bootstrap import Interval
from vocmatch.evidence.resampling import CONFIDENCE, image_weights, percentile_interval

__all__ = [
    "ClassCounting",
    "CountErrors",
    "Counting",
    "Presence",
    "counting",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Cells of (resample, count cell) held at once while resampling.
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True, slots=True)
class CountErrors:
    """The per-image count errors of one scope (a class, the mean over classes, or all
    objects), each with its interval (``low``/``high`` None without resamples)."""

    mae: Interval
    rmse: Interval
    bias: Interval


@dataclass(frozen=True, slots=True)
class Presence:
    """Whether the detector finds a class in the images that hold it, and not in the others.

    Attributes:
        recall: Share of the images holding the class where some prediction of it counts.
        false_alarm: Share of the images without it where some prediction of it counts.
        images_with: Images holding the class.
        images_without: Images without it.
    """

    recall: Interval
    false_alarm: Interval
    images_with: int
    images_without: int


@dataclass(frozen=True, slots=True)
class ClassCounting:
    """One class's counts.

    Attributes:
        name: The class.
        gt: Its objects that count, over every image.
        pred: Its predictions that count (TP + FP).
        errors: Its per-image count errors.
        presence: Its presence per image.
    """

    name: str
    gt: int
    pred: int
    errors: CountErrors
    presence: Presence


@dataclass(frozen=True, slots=True)
class Counting:
    """The counts of an evaluation (see the module doc).

    Attributes:
        images: Images evaluated.
        classes: Per class, sorted by name.
        class_mean: The mean over the classes of each class's errors.
        objects: The errors of every object's count per image.
        resamples: Resamples the intervals are drawn from (None: no intervals).
        seed: Their seed.
        confidence: The intervals' coverage.
        thresholds: The score thresholds the predictions were counted at, as words (None:
            every prediction counts).
    """

    images: int
    classes: tuple[ClassCounting, ...]
    class_mean: CountErrors
    objects: CountErrors
    resamples: int | None = None
    seed: int = 0
    confidence: float = CONFIDENCE
    thresholds: str | None = None


@dataclass(frozen=True, slots=True)
class _Cells:
    """The image-class cells with a true or a predicted count, by (class, image)."""

    image: IntArray
    klass: IntArray
    gt: IntArray
    pred: IntArray

    @property
    def error(self) -> IntArray:
        found: IntArray = self.pred - self.gt
        return found


def _cells(records: MatchRecords, conv: Conventions, thresholds: ScoreThresholds | None) -> _Cells:
    """Every image-class with a true or a predicted count (the others are 0 and 0)."""
    preds = records.preds
    cells = records.gt_cells
    if cells is None:
        raise InputError(
            "these match records keep no per-image ground-truth counts (states saved by a "
            "vocmatch before state format version 5): save them again to count with them"
        )
    n_images = len(records.keys)
    pred_image = np.repeat(np.arange(n_images, dtype=np.int64), preds.count)
    pred_class = preds.label.astype(np.int64)
    ignored = ((preds.ignored >> IouLevels.of(conv).evaluation) & 1).astype(bool)
    counts = ~ignored
    if thresholds:
        floor = np.array([thresholds.floor(name) for name in records.class_names])
        counts &= ranking_score(preds, np.arange(pred_class.size)) >= floor[pred_class]
    width = max(n_images, 1)
    pred_keys = pred_class[counts] * width + pred_image[counts]
    gt_keys = cells.label.astype(np.int64) * width + cells.image.astype(np.int64)
    keys, place = np.unique(np.concatenate([pred_keys, gt_keys]), return_inverse=True)
    n_pred = pred_keys.size
    pred = np.bincount(place[:n_pred], minlength=keys.size)
    gt = np.bincount(place[n_pred:], weights=cells.counting, minlength=keys.size)
    return _Cells(
        (keys % width).astype(np.int64),
        (keys // width).astype(np.int64),
        gt.astype(np.int64),
        pred.astype(np.int64),
    )


def _errors(error: FloatArray, n_images: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(..., C)`` weighted errors summed per scope -> MAE, RMSE, bias; ``error`` holds
    ``sum w |e|``, ``sum w e²`` and ``sum w e`` stacked on the first axis."""
    abs_sum, square_sum, plain_sum = error
    return abs_sum / n_images, np.sqrt(square_sum / n_images), plain_sum / n_images


def _sums(cells: _Cells, weights: FloatArray, k: int) -> dict[str, FloatArray]:
    """Per resample row of ``weights`` (``(b, I)``) and per class: weighted sums of each
    cell's ``|e|``, ``e²`` and ``e``, of the images holding the class, of those found, and
    of the false alarms; and of every image's all-objects error."""
    b = weights.shape[0]
    w = weights[:, cells.image]  # (b, C)
    error = cells.error.astype(np.float64)
    out: dict[str, FloatArray] = {}

    slot = (np.arange(b, dtype=np.int64)[:, None] * k + cells.klass[None, :]).ravel()

    def per_class(values: FloatArray) -> FloatArray:
        summed = np.bincount(slot, weights=values.ravel(), minlength=b * k)
        return np.asarray(summed, dtype=np.float64).reshape(b, k)

    out["abs"] = per_class(w * np.abs(error))
    out["square"] = per_class(w * error**2)
    out["plain"] = per_class(w * error)
    holds = cells.gt > 0
    found = cells.pred > 0
    out["with"] = per_class(w * holds)
    out["found"] = per_class(w * (holds & found))
    out["alarm"] = per_class(w * (~holds & found))
    n_images = weights.shape[1]
    image_error = np.bincount(cells.image, weights=error, minlength=n_images)
    out["objects"] = np.stack(
        [weights @ np.abs(image_error), weights @ image_error**2, weights @ image_error]
    )
    return out


def _metrics(sums: dict[str, FloatArray], n_images: int) -> dict[str, FloatArray]:
    """Every number, per resample row: per class ``(b, K)`` and overall ``(b,)``."""
    mae, rmse, bias = _errors(np.stack([sums["abs"], sums["square"], sums["plain"]]), n_images)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(sums["with"] > 0, sums["found"] / sums["with"], np.nan)
        without = n_images - sums["with"]
        alarm = np.where(without > 0, sums["alarm"] / without, np.nan)
    objects = _errors(sums["objects"], n_images)
    return {
        "mae": mae, "rmse": rmse, "bias": bias, "recall": recall, "false_alarm": alarm,
        "mean_mae": mae.mean(axis=1) if mae.shape[1] else np.full(mae.shape[0], np.nan),
        "mean_rmse": rmse.mean(axis=1) if rmse.shape[1] else np.full(rmse.shape[0], np.nan),
        "mean_bias": bias.mean(axis=1) if bias.shape[1] else np.full(bias.shape[0], np.nan),
        "objects_mae": objects[0], "objects_rmse": objects[1], "objects_bias": objects[2],
    }  # fmt: skip


def _weight_rows(n_images: int, resamples: int, seed: int, n_cells: int) -> Iterator[FloatArray]:
    """The bootstrap's resample weights, in rows few enough to hold ``(rows, cells)``."""
    rows = max(1, _CHUNK_CELLS // max(n_cells, 1))
    for chunk in image_weights(n_images, resamples, seed):
        for start in range(0, chunk.shape[0], rows):
            yield chunk[start : start + rows].astype(np.float64)


def counting(
    records: MatchRecords,
    conventions: Conventions,
    thresholds: ScoreThresholds | None = None,
    *,
    resamples: int | None = None,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Counting:
    """The counts of an evaluation from its match records (see the module doc).

    Args:
        records: The match records (of one run, or merged from shards).
        conventions: The protocol they were matched under.
        thresholds: The score thresholds predictions are counted at (None: every one).
        resamples: Resamples of the images for intervals (None: no intervals).
        seed: Their seed (the bootstrap's: the same resamples).
        confidence: The intervals' coverage.

    Returns:
        The counts.

    Raises:
        InputError: No image was evaluated, or the records keep no per-image ground-truth
            counts (states of a version before 5).

    Example:
        >>> import warnings
        >>> import vocmatch
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)
        >>> found = vocmatch.evaluate("fixtures/demo/gt", "fixtures/demo/pred", count=True)
        >>> found.evidence.counting.objects.bias.value > 0  # it over-counts
        True
    """
    if not records.keys:
        raise InputError("no image was evaluated: nothing to count")
    records = records.in_key_order()
    cells = _cells(records, conventions, thresholds)
    n_images, k = len(records.keys), len(records.class_names)
    own = _metrics(_sums(cells, np.ones((1, n_images)), k), n_images)
    drawn: dict[str, list[FloatArray]] = {name: [] for name in own}
    if resamples is not None:
        for weights in _weight_rows(n_images, resamples, seed, cells.image.size):
            for name, values in _metrics(_sums(cells, weights, k), n_images).items():
                drawn[name].append(values)
    samples = {name: np.concatenate(rows) if rows else None for name, rows in drawn.items()}

    def interval(name: str, column: int | None = None) -> Interval:
        value = own[name][0] if column is None else own[name][0, column]
        found = samples[name]
        value_or_none = None if np.isnan(value) else float(value)
        if found is None:
            return Interval(value_or_none, None, None, 0)
        low, high, defined = percentile_interval(
            found if column is None else found[:, column], confidence
        )
        return Interval(value_or_none, low, high, defined)

    gt_total = np.bincount(cells.klass, weights=cells.gt, minlength=k).astype(np.int64)
    pred_total = np.bincount(cells.klass, weights=cells.pred, minlength=k).astype(np.int64)
    holding = np.bincount(cells.klass[cells.gt > 0], minlength=k)
    classes = tuple(
        ClassCounting(
            name,
            int(gt_total[c]),
            int(pred_total[c]),
            CountErrors(interval("mae", c), interval("rmse", c), interval("bias", c)),
            Presence(
                interval("recall", c),
                interval("false_alarm", c),
                int(holding[c]),
                n_images - int(holding[c]),
            ),
        )
        for c, name in enumerate(records.class_names)
    )
    return Counting(
        images=n_images,
        classes=classes,
        class_mean=CountErrors(interval("mean_mae"), interval("mean_rmse"), interval("mean_bias")),
        objects=CountErrors(
            interval("objects_mae"), interval("objects_rmse"), interval("objects_bias")
        ),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        thresholds=thresholds.describe() if thresholds else None,
    )

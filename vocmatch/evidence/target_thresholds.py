"""Score thresholds that hold a target: each class's threshold whose precision (or recall)
stays at or above a target at a bootstrap lower bound.

The best-F1 operating point is the threshold that looks best on this set; nothing says it
keeps its precision on the next one. Here each class gets a threshold chosen so that a
statement holds for the threshold *chosen*, not only for the best-looking one:

* The candidate thresholds of a class are the distinct scores of its ranked predictions
  (those AP ranks: kept, scored, not matched to ignored ground truth), highest first. At a
  threshold ``t`` the predictions with ``score >= t`` count, as ``--score-threshold`` counts
  them: TP and FP at the evaluation's IoU threshold, recall over the class's ground truth.
* The images are resampled as the bootstrap resamples them
  (:func:`~vocmatch.evidence.resampling.image_weights`: ``resamples`` draws, ``seed``), and
  at each candidate the one-sided lower bound of the metric is the ``1 - confidence``
  quantile of its value over the resamples that define it (the 5th percentile at 0.95).
* **Precision** (``metric="precision"``): fixed-sequence testing. The candidates are tried
  from the highest score down; a candidate passes when its lower bound and its own
  precision on the set are both at least the target; the first that fails stops the
  sequence, and the threshold is the lowest candidate that passed. Testing in a fixed order
  and stopping at the first failure keeps the chance that the chosen threshold's precision
  is below the target at most ``1 - confidence`` (for this set's images, resampled), where
  picking the lowest threshold that happens to pass would not.
* **Recall** (``metric="recall"``): recall only falls as the threshold rises, in every
  resample, so the lower bound does too; the threshold is the highest candidate whose lower
  bound and own recall are at least the target.

What the bound promises: that the class's precision (or recall) on images drawn like these
ones is at least the target, at the confidence given. What it does not: anything about
images unlike these (another camera, another season), a class with few objects (the
bound is then wide, and the class often gets no threshold), or the other metric at the
threshold. A class that gets no threshold is listed with the reason, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from vocmatch.core.protocol import Conventions
from vocmatch.errors import InputError
from vocmatch.evaluation.from_records import class_rankings, ranking_score
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.stage_inputs import IouLevels
from vocmatch.evidence.resampling import CONFIDENCE, DEFAULT_RESAMPLES, image_weights

__all__ = [
    "TARGET_METRICS",
    "ClassTarget",
    "Target",
    "TargetMetric",
    "TargetThresholds",
    "target_thresholds",
]

TargetMetric = Literal["precision", "recall"]
#: The metrics a target can hold.
TARGET_METRICS: tuple[TargetMetric, ...] = get_args(TargetMetric)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
#: Predictions of a class handled at once, times the resamples, held as floats.
_BLOCK_CELLS = 2_000_000


@dataclass(frozen=True, slots=True)
class Target:
    """What the thresholds must hold.

    Attributes:
        metric: ``"precision"`` or ``"recall"``.
        value: The target, in (0, 1].
        confidence: The lower bound's confidence (0.95: the 5th percentile).
        resamples: Resamples of the images.
        seed: Their seed.
    """

    metric: TargetMetric
    value: float
    confidence: float = CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0

    def describe(self) -> str:
        """``precision >= 0.9 at the 95 % lower bound``."""
        return f"{self.metric} >= {self.value:g} at the {self.confidence * 100:g} % lower bound"


@dataclass(frozen=True, slots=True)
class ClassTarget:
    """One class's threshold, or why it has none.

    Attributes:
        name: The class.
        threshold: The score threshold chosen; None when no candidate holds the target.
        precision: The class's precision on the set at the threshold.
        recall: Its recall there.
        bound: The lower bound of the target's metric there.
        tried: Candidate thresholds tested.
        reason: Why there is no threshold, when there is none.
    """

    name: str
    threshold: float | None
    precision: float | None = None
    recall: float | None = None
    bound: float | None = None
    tried: int = 0
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class TargetThresholds:
    """Each class's threshold holding the target.

    Attributes:
        target: The target.
        images: Images resampled.
        classes: Per class, sorted by name.
    """

    target: Target
    images: int
    classes: tuple[ClassTarget, ...]

    @property
    def reached(self) -> tuple[ClassTarget, ...]:
        """The classes that got a threshold."""
        return tuple(c for c in self.classes if c.threshold is not None)


@dataclass(frozen=True, slots=True)
class _Ranked:
    """One class's predictions in ranking order, and its ground truth per image."""

    image: IntArray
    score: FloatArray
    tp: BoolArray
    gt: FloatArray  # (I,)


def _classes(records: MatchRecords, conv: Conventions) -> Iterator[tuple[str, _Ranked]]:
    preds = records.preds
    n_images = len(records.keys)
    level = IouLevels.of(conv).evaluation
    matched = ((preds.matched >> level) & 1).astype(bool)
    ignored = ((preds.ignored >> level) & 1).astype(bool)
    pred_image = np.repeat(np.arange(n_images, dtype=np.int64), preds.count)
    cells = records.gt_cells
    if cells is None:
        raise InputError(
            "these match records keep no per-image ground-truth counts (states saved by a "
            "vocmatch before state format version 5): save them again to choose thresholds"
        )
    for k, (ranked, _) in enumerate(class_rankings(records)):
        rows = ranked[~ignored[ranked]]
        gt = np.zeros(n_images)
        mine = cells.label == k
        np.add.at(gt, cells.image[mine], cells.counting[mine])
        yield (
            records.class_names[k],
            _Ranked(pred_image[rows], ranking_score(preds, rows), matched[rows], gt),
        )


def _lower(values: FloatArray, confidence: float) -> FloatArray:
    """``(b, n)`` -> ``(n,)`` the ``1 - confidence`` quantile over the defined rows (NaN
    where no row is defined)."""
    with np.errstate(all="ignore"):
        found: FloatArray = np.nanquantile(values, 1.0 - confidence, axis=0)
    return found


def _candidates(score: FloatArray) -> IntArray:
    """The last row of each distinct finite score, in ranking order (highest first)."""
    finite = int(np.count_nonzero(np.isfinite(score)))
    ends: IntArray = np.flatnonzero(np.append(score[1:finite] != score[: finite - 1], True))
    return ends if finite else np.zeros(0, dtype=np.int64)


def _choose(
    ranked: _Ranked, target: Target, weights: npt.NDArray[np.integer[Any]]
) -> ClassTarget | str:
    """The class's threshold, or why there is none (the class's name is set by the caller)."""
    n_gt = float(ranked.gt.sum())
    ends = _candidates(ranked.score)
    if not ends.size:
        return "no scored prediction"
    gt_drawn = weights @ ranked.gt  # (b,)
    tp_all = np.cumsum(ranked.tp)
    block = max(1, _BLOCK_CELLS // weights.shape[0])
    run_tp = np.zeros(weights.shape[0])
    run_fp = np.zeros(weights.shape[0])
    done = 0  # predictions summed into run_tp and run_fp
    chosen: int | None = None
    bound_at: float | None = None
    tried = 0
    for start in range(0, ends.size, block):
        stop_row = int(ends[min(start + block, ends.size) - 1]) + 1
        w = weights[:, ranked.image[done:stop_row]].astype(np.float64)
        hit = ranked.tp[done:stop_row]
        tp = run_tp[:, None] + np.cumsum(w * hit, axis=1)
        fp = run_fp[:, None] + np.cumsum(w * ~hit, axis=1)
        at = ends[start : start + block] - done
        with np.errstate(all="ignore"):
            if target.metric == "precision":
                values = tp[:, at] / (tp[:, at] + fp[:, at])
            else:
                values = tp[:, at] / gt_drawn[:, None]
        values[~np.isfinite(values)] = np.nan
        bounds = _lower(values, target.confidence)
        own_tp = tp_all[ends[start : start + block]]
        own = (
            own_tp / (ends[start : start + block] + 1)
            if target.metric == "precision"
            else (own_tp / n_gt)
        )
        holds = (bounds >= target.value) & (own >= target.value)
        if target.metric == "precision":
            failed = np.flatnonzero(~holds)
            last = failed[0] if failed.size else holds.size
            tried += int(min(last + 1, holds.size))
            if last > 0:
                chosen, bound_at = start + last - 1, float(bounds[last - 1])
            if failed.size:
                if chosen is None:
                    return _failed(ranked, ends, start + last, float(bounds[last]), target, tried)
                break
        else:
            passed = np.flatnonzero(holds)
            tried += int(passed[0] + 1 if passed.size else holds.size)
            if passed.size:
                chosen, bound_at = start + int(passed[0]), float(bounds[passed[0]])
                break
        run_tp, run_fp, done = tp[:, -1], fp[:, -1], stop_row
    if chosen is None:
        lowest = float(ranked.score[ends[-1]])
        return (
            f"even every scored prediction (down to {lowest:.4g}) leaves recall's lower bound "
            f"{bounds[-1]:.4f} below {target.value:g}"
        )
    row = int(ends[chosen])
    kept_tp = float(tp_all[row])
    return ClassTarget(
        name="",
        threshold=float(ranked.score[row]),
        precision=kept_tp / (row + 1),
        recall=kept_tp / n_gt,
        bound=bound_at,
        tried=tried,
    )


def _failed(
    ranked: _Ranked, ends: IntArray, first: int, bound: float, target: Target, tried: int
) -> str:
    score = float(ranked.score[ends[first]])
    kept = int(ends[first]) + 1
    return (
        f"the highest-scored {kept:,} prediction{'' if kept == 1 else 's'} (score >= "
        f"{score:.4g}) already miss{'es' if kept == 1 else ''} the target: lower bound "
        f"{bound:.4f} < {target.value:g} ({tried} tried)"
    )


def target_thresholds(
    records: MatchRecords, conventions: Conventions, target: Target
) -> TargetThresholds:
    """Each class's score threshold holding ``target`` (see the module doc).

    Args:
        records: The match records (of one run, or merged from shards).
        conventions: The protocol they were matched under.
        target: What to hold, at which confidence, over how many resamples.

    Returns:
        A threshold, or the reason for none, per class.

    Raises:
        InputError: No image was evaluated, or the records keep no per-image ground-truth
            counts (states of a version before 5).

    Example:
        >>> import warnings
        >>> import vocmatch
        >>> from vocmatch.errors import MissingPredictionWarning
        >>> warnings.simplefilter("ignore", MissingPredictionWarning)
        >>> found = vocmatch.evaluate(
        ...     "fixtures/demo/gt", "fixtures/demo/pred", target_precision=0.8
        ... ).evidence.targets
        >>> [(c.name, c.threshold) for c in found.reached]
        [('bus', 0.66), ('person', 0.9)]
    """
    if not records.keys:
        raise InputError("no image was evaluated: nothing to resample")
    records = records.in_key_order()
    n_images = len(records.keys)
    # How often each image is drawn, at most n_images: 2 bytes each below 65,536 images.
    dtype = np.uint16 if n_images < 2**16 else np.int64
    drawn = image_weights(n_images, target.resamples, target.seed)
    weights = np.concatenate([chunk.astype(dtype) for chunk in drawn])
    found = []
    for name, ranked in _classes(records, conventions):
        if ranked.gt.sum() == 0:
            found.append(ClassTarget(name, None, reason="no ground truth"))
            continue
        chosen = _choose(ranked, target, weights)
        if isinstance(chosen, str):
            found.append(ClassTarget(name, None, reason=chosen))
        else:
            found.append(ClassTarget(name, chosen.threshold, chosen.precision, chosen.recall,
                                     chosen.bound, chosen.tried))  # fmt: skip
    return TargetThresholds(target, n_images, tuple(found))

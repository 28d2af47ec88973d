"""Results per slice of the data: by an attribute the XML itself carries (``difficult``,
``truncated``, ``occluded``, ``pose``), by object size, or by image file name.

A slice value is a subset of the ground truth. Each value is evaluated as pycocotools
evaluates its area ranges (``cocoeval.py``, ``evaluateImg``: ground truth outside the range
gets ``_ignore``, and ``dtIg`` marks a detection that matched ignored ground truth, or that
matched nothing and lies outside the range by its own area):

* Ground truth outside the value is **ignored**: it is not a miss, and a prediction matched
  to it is neither a true nor a false positive. Matching prefers ground truth that counts,
  as for ``difficult`` objects, so an object outside the value never takes a prediction from
  one inside it.
* A prediction matched to ground truth in the value counts there (TP).
* A prediction that matches nothing is judged by its own property where it has one: for
  ``size``, its own box area (outside the range: ignored, as pycocotools does); for a
  file-name slice, its image. ``difficult``, ``truncated``, ``occluded`` and ``pose`` are
  properties of ground truth that a prediction does not carry, so an unmatched prediction
  is never outside them: it is a false positive in every value of such a slice (a detector
  that fires on nothing hurts its precision on occluded objects as on any others).

Size buckets are pycocotools' area ranges, both ends inclusive, by continuous area (a
rotated box's or polygon's own region's, as for the evaluator's COCO ranges; an
object of exactly 32² pixels is small *and* medium, as in COCO): ``small`` [0, 32²],
``medium`` [32², 96²], ``large`` [96², 1e5²]. Custom edges are box sides in pixels: edges
``16,32`` give ``0-16`` [0, 16²], ``16-32`` [16², 32²] and ``32+`` [32², ∞). Under the
``coco`` protocol the mAP of ``small``, ``medium`` and ``large`` equals pycocotools'
``APs``, ``APm`` and ``APl`` (to rounding: the mean of per-class means).

Each value gets the protocol's own numbers: TP, FP and FN at the evaluation threshold,
precision, recall, F1, AP per class under the protocol's interpolation and thresholds, and
mAP over the classes with ground truth in the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import average_precision, precision_recall_curve
from vocmatch.core.protocol import Conventions
from vocmatch.errors import RequestError
from vocmatch.evaluation.from_records import class_rankings, ranking_score
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.result import ClassResult, Evaluation, class_result
from vocmatch.evaluation.slice_records import (
    ATTRIBUTES,
    COCO_SIZE_EDGES,
    NO_VALUE,
    SliceRecords,
    SliceSpec,
    parse_slices,
    slice_rule,
)
from vocmatch.evaluation.stage_inputs import IouLevels

__all__ = [
    "ATTRIBUTES",
    "COCO_SIZE_EDGES",
    "Slice",
    "SliceSpec",
    "SliceValue",
    "parse_slices",
    "slice_evaluation",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SliceValue:
    """One value of a slice, evaluated.

    Attributes:
        value: Its name (``small``, ``yes``, ``Frontal``, ``night/*``).
        gt: Ground truth in the value that counts.
        gt_ignored: Ground truth in the value that the protocol ignores (``difficult``).
        pred: Predictions that count in the value (TP + FP).
        tp: True positives at the evaluation threshold.
        fp: False positives.
        fn: Missed ground truth.
        precision: TP / (TP + FP); None without predictions.
        recall: TP / GT; None without ground truth.
        f1: Their harmonic mean; None when either is None.
        map: Mean AP over the classes with ground truth in the value; None without scores
            or such classes.
        classes: Per class (of the evaluation), its numbers in the value.
    """

    value: str
    gt: int
    gt_ignored: int
    pred: int
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    map: float | None
    classes: tuple[ClassResult, ...]


@dataclass(frozen=True, slots=True)
class Slice:
    """A slice and each of its values.

    Attributes:
        name: What it is by.
        rule: One line on how objects and predictions fall into its values.
        values: Each value, in a fixed order (buckets by size, words as listed, poses and
            globs sorted, with ``(none)`` and ``(other)`` last).
    """

    name: str
    rule: str
    values: tuple[SliceValue, ...]


def slice_evaluation(
    evaluation: Evaluation, records: MatchRecords, specs: Sequence[SliceSpec]
) -> tuple[Slice, ...]:
    """Evaluate each value of each slice from the match records of the evaluation's
    images, which matched each value where they were matched (one run, shards merged, a
    Dask run's parts): each class's AP by the functions every AP is computed with, over the
    class's ranking of the records.

    Args:
        evaluation: The evaluation (its conventions, and whether predictions carry scores).
        records: Its match records, made with ``specs``
            (:attr:`~vocmatch.evaluation.records.MatchRecords.slices`).
        specs: The slices (:func:`parse_slices`).

    Returns:
        Each slice with its values, in the order of ``specs``.

    Raises:
        RequestError: The records hold no slices, or other ones (field ``slices``).
    """
    records = records.in_key_order()
    found = records.slices
    if not records.keys:
        raise RequestError("slices", "no image was evaluated")
    if found is None or found.specs != tuple(specs):
        raise RequestError("slices", "the match records were not made with these slices")
    scored = evaluation.summary.map is not None or any(c.ap is not None for c in evaluation.classes)
    # Without any score, the counts of the reading that pairs highest IoU first.
    counts = found.counts
    if not records.notes.scored and found.unscored is not None:
        counts = found.unscored
    aps = _slice_aps(records, found, counts, evaluation.conventions) if scored else None
    out = []
    for s, spec in enumerate(found.specs):
        values = tuple(
            _value(records.class_names, name, counts[:, c], None if aps is None else aps[c])
            for name, c in zip(found.values[s], found.columns(s), strict=True)
            if name != NO_VALUE
        )
        out.append(Slice(spec.name, slice_rule(spec), values))
    return tuple(out)


def _slice_aps(
    records: MatchRecords, found: SliceRecords, counts: IntArray, conv: Conventions
) -> list[list[list[float]]]:
    """Per value (column) and class with ground truth in it, its AP at each AP threshold:
    the class's ranking of the records, less the predictions matched to ignored ground
    truth and the unmatched ones outside the value."""
    index = IouLevels.of(conv).index
    levels = np.array([index[t] for t in conv.ap_thresholds], dtype=np.int64)
    eps = float(np.spacing(1)) if conv.interpolation == "101-point" else None
    n_k, n_v = counts.shape[0], counts.shape[1]
    aps: list[list[list[float]]] = [[[] for _ in range(n_k)] for _ in range(n_v)]
    for k, (ranked, _) in enumerate(class_rankings(records)):
        n_gt = counts[k, :, 0]
        columns = np.flatnonzero(n_gt > 0).tolist()
        if not columns:
            continue
        score = ranking_score(records.preds, ranked)
        matched = np.take(found.matched, ranked, axis=0)
        ignored = np.take(found.ignored, ranked, axis=0)
        inside = ~np.take(found.out, ranked, axis=0)
        for c in columns:
            # Every AP threshold's flags of the value at once: (T, n).
            hits = ((matched[:, c].astype(np.int64)[None, :] >> levels[:, None]) & 1) == 1
            kept = (((ignored[:, c].astype(np.int64)[None, :] >> levels[:, None]) & 1) == 0) & (
                hits | inside[None, :, c]
            )
            for hit, keep in zip(hits, kept, strict=True):
                curve = precision_recall_curve(hit[keep], score[keep], int(n_gt[c]), eps=eps)
                aps[c][k].append(
                    average_precision(curve.recall, curve.precision, conv.interpolation)
                )
    return aps


def _value(
    class_names: Sequence[str], value: str, counts: IntArray, aps: list[list[float]] | None
) -> SliceValue:
    """One value's numbers from its per-class counts (``(K, 4)``: ground truth that counts
    and ignored, TP, FP) and AP values."""
    n_gt, n_ignored, tp, fp = (counts[:, j] for j in range(4))
    # Each object that counts is matched at most once: the missed are the rest.
    fn = n_gt - tp
    classes = tuple(
        class_result(
            name, int(n_gt[c]), int(n_ignored[c]), int(tp[c] + fp[c]), int(tp[c]), int(fp[c]),
            int(fn[c]), float(np.mean(aps[c])) if aps is not None and aps[c] else None, None,
        )
        for c, name in enumerate(class_names)
    )  # fmt: skip
    averaged = [c.ap for c in classes if c.in_map and c.ap is not None]
    total_tp, total_fp, total_gt = int(tp.sum()), int(fp.sum()), int(n_gt.sum())
    precision = total_tp / (total_tp + total_fp) if total_tp + total_fp else None
    recall = total_tp / total_gt if total_gt else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return SliceValue(
        value=value,
        gt=total_gt,
        gt_ignored=int(n_ignored.sum()),
        pred=total_tp + total_fp,
        tp=total_tp,
        fp=total_fp,
        fn=int(fn.sum()),
        precision=precision,
        recall=recall,
        f1=f1,
        map=float(np.mean(averaged)) if averaged else None,
        classes=classes,
    )

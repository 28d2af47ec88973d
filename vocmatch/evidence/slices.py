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

import fnmatch
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import average_precision, precision_recall_curve
from vocmatch.evaluation.result import COCO_AREAS, ClassResult, Evaluation, class_result
from vocmatch.evaluation.stages import MatchedColumns

__all__ = [
    "ATTRIBUTES",
    "COCO_SIZE_EDGES",
    "Slice",
    "SliceSpec",
    "SliceValue",
    "parse_slices",
    "slice_evaluation",
]

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

#: Object attributes a slice can be by.
ATTRIBUTES: tuple[str, ...] = ("difficult", "truncated", "occluded", "pose")

#: pycocotools' area range edges, as box sides in pixels (areas 32², 96²).
COCO_SIZE_EDGES: tuple[float, ...] = (32.0, 96.0)

_EDGES = re.compile(r"\s*(?:size\s*[:=]\s*)?(\d+(?:\.\d*)?(?:\s*,\s*\d+(?:\.\d*)?)*)\s*")


@dataclass(frozen=True, slots=True)
class SliceSpec:
    """What one slice is by.

    Attributes:
        name: ``difficult``, ``truncated``, ``occluded``, ``pose``, ``size`` or ``file``.
        edges: For ``size``, the bucket edges as box sides in pixels, ascending.
        globs: For ``file``, the file-name patterns, each a value.
    """

    name: str
    edges: tuple[float, ...] = ()
    globs: tuple[str, ...] = ()


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


def _size_names(edges: tuple[float, ...]) -> list[tuple[str, float, float]]:
    """Each bucket's name and area range (both ends inclusive)."""
    if edges == COCO_SIZE_EDGES:
        names = ["small", "medium", "large"]
    else:
        names = [f"{_side(lo)}-{_side(hi)}" for lo, hi in zip((0.0, *edges), edges, strict=False)]
        names.append(f"{_side(edges[-1])}+")
    # COCO's own upper bound for its buckets (1e5² px), so that they are its area ranges.
    top = COCO_AREAS[3][1] if edges == COCO_SIZE_EDGES else math.inf
    bounds = [0.0, *(e * e for e in edges), top]
    return [(name, bounds[i], bounds[i + 1]) for i, name in enumerate(names)]


def _side(value: float) -> str:
    return f"{value:g}"


def parse_slices(texts: Sequence[str]) -> tuple[SliceSpec, ...]:
    """Read slice specs, as text (the values of the command line's ``--slice``).

    Each is a keyword (``difficult``, ``truncated``, ``occluded``, ``pose``, ``size``), size
    edges as box sides in pixels (``16,32,96`` or ``size:16,32,96``), or else a file-name
    pattern (``night_*``, ``cam2/*``): every pattern given is a value of one ``file`` slice.

    Returns:
        One spec per slice, in the order first given.

    Raises:
        ValueError: A slice is given twice, size edges are not increasing and positive, or a
            pattern is empty.

    >>> [s.name for s in parse_slices(["size", "pose", "night_*", "day_*"])]
    ['size', 'pose', 'file']
    >>> parse_slices(["16,32"])[0].edges
    (16.0, 32.0)
    """
    specs: list[SliceSpec] = []
    globs: list[str] = []
    seen: set[str] = set()

    def add(spec: SliceSpec, text: str) -> None:
        if spec.name in seen:
            raise ValueError(f"slice {text!r}: the {spec.name} slice is given twice")
        seen.add(spec.name)
        specs.append(spec)

    for text in texts:
        word = text.strip().lower()
        edges = _EDGES.fullmatch(text)
        if word in ATTRIBUTES:
            add(SliceSpec(word), text)
        elif word == "size":
            add(SliceSpec("size", COCO_SIZE_EDGES), text)
        elif edges is not None:
            values = tuple(float(v) for v in edges.group(1).split(","))
            if any(v <= 0 for v in values) or list(values) != sorted(set(values)):
                raise ValueError(
                    f"slice {text!r}: size edges must be box sides in pixels, positive and "
                    "increasing, such as 16,32,96"
                )
            add(SliceSpec("size", values), text)
        elif not text.strip():
            raise ValueError("a slice needs a value: an attribute, size, edges or a pattern")
        else:
            if text in globs:
                raise ValueError(f"slice {text!r}: the pattern is given twice")
            if "file" not in seen:
                add(SliceSpec("file"), text)
            globs.append(text)
    return tuple(
        SliceSpec("file", globs=tuple(globs)) if spec.name == "file" else spec for spec in specs
    )


@dataclass(frozen=True, slots=True)
class _Membership:
    """One value's ground truth and the predictions outside it (internal)."""

    value: str
    gt_in: BoolArray
    pred_out: BoolArray


def _memberships(spec: SliceSpec, matched: MatchedColumns) -> tuple[str, list[_Membership]]:
    gt_rows = matched.gt_rows
    n_pred = matched.pred_rows.size
    nowhere = np.zeros(n_pred, dtype=bool)
    if spec.name in ("difficult", "truncated", "occluded"):
        flag = np.asarray(getattr(matched.gt, spec.name)[gt_rows], dtype=bool)
        rule = (
            f"ground truth by its <{spec.name}>; an unmatched prediction is a false positive "
            "in both values"
        )
        return rule, [_Membership("no", ~flag, nowhere), _Membership("yes", flag, nowhere)]
    if spec.name == "pose":
        codes = matched.gt.pose[gt_rows]
        names = matched.gt.pose_names
        values = [
            _Membership(names[k], codes == k, nowhere)
            for k in sorted(set(codes.tolist()) - {-1}, key=lambda k: names[k])
        ]
        if (codes == -1).any():
            values.append(_Membership("(none)", codes == -1, nowhere))
        rule = (
            "ground truth by its <pose>; an unmatched prediction is a false positive in every value"
        )
        return rule, values
    if spec.name == "size":
        gt_area, pred_area = matched.gt_area, matched.pred_area
        values = [
            _Membership(
                name,
                (gt_area >= low) & (gt_area <= high),
                (pred_area < low) | (pred_area > high),
            )
            for name, low, high in _size_names(spec.edges)
        ]
        rule = (
            "objects by box area, both ends inclusive (pycocotools' area ranges); an "
            "unmatched prediction by its own area"
        )
        return rule, values
    keys = [matched.gt.keys[i] for i in matched.image_rows.tolist()]
    gt_image = matched.gt_image
    pred_image = matched.pred_image
    matches = [
        np.array([fnmatch.fnmatchcase(key, glob) for key in keys], dtype=bool)
        for glob in spec.globs
    ]
    values = [
        _Membership(glob, hit[gt_image], ~hit[pred_image])
        for glob, hit in sorted(zip(spec.globs, matches, strict=True))
    ]
    other = ~np.logical_or.reduce(matches) if matches else np.ones(len(keys), dtype=bool)
    values.append(_Membership("(other)", other[gt_image], ~other[pred_image]))
    rule = (
        "images by their key (the path without extension) against each pattern; a "
        "prediction by its image"
    )
    return rule, values


def _value(matched: MatchedColumns, member: _Membership, scored: bool) -> SliceValue:
    conv = matched.conventions
    k = len(matched.class_names)
    level_of = {float(v): i for i, v in enumerate(matched.thresholds.tolist())}
    ignore = matched.gt_ignore | ~member.gt_in
    matching = matched.match(ignore)
    hit, ignored = matching.pred_flags(level_of[conv.iou_threshold])
    # Counts take the predictions at or above their score threshold; AP takes all.
    counts_tp = hit & ~ignored & matched.pred_counted
    counts_fp = ~hit & ~member.pred_out & matched.pred_counted
    gt_class = matched.gt_class
    pred_class = matched.pred_class
    n_gt = np.bincount(gt_class[~ignore], minlength=k)
    n_ignored = np.bincount(gt_class[matched.gt_ignore & member.gt_in], minlength=k)
    tp = np.bincount(pred_class[counts_tp], minlength=k)
    fp = np.bincount(pred_class[counts_fp], minlength=k)
    # Each object that counts is matched at most once: the missed are the rest.
    fn = n_gt - tp
    aps: list[list[float]] = [[] for _ in range(k)]
    if scored:
        eps = float(np.spacing(1)) if conv.interpolation == "101-point" else None
        for threshold in conv.ap_thresholds:
            level_hit, level_ignored = matching.pred_flags(level_of[float(threshold)])
            for c in range(k):
                if n_gt[c] == 0:
                    continue
                ranked = matched.ranked[c]
                keep = ~level_ignored[ranked] & (level_hit[ranked] | ~member.pred_out[ranked])
                kept = ranked[keep]
                curve = precision_recall_curve(
                    level_hit[kept], matched.pred_score[kept], int(n_gt[c]), eps=eps
                )
                aps[c].append(average_precision(curve.recall, curve.precision, conv.interpolation))
    classes = tuple(
        class_result(
            name,
            int(n_gt[c]),
            int(n_ignored[c]),
            int(tp[c] + fp[c]),
            int(tp[c]),
            int(fp[c]),
            int(fn[c]),
            float(np.mean(aps[c])) if aps[c] else None,
            None,
        )
        for c, name in enumerate(matched.class_names)
    )
    averaged = [c.ap for c in classes if c.in_map and c.ap is not None]
    total_tp, total_fp, total_gt = int(tp.sum()), int(fp.sum()), int(n_gt.sum())
    precision = total_tp / (total_tp + total_fp) if total_tp + total_fp else None
    recall = total_tp / total_gt if total_gt else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return SliceValue(
        value=member.value,
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


def slice_evaluation(
    evaluation: Evaluation, matched: MatchedColumns, specs: Sequence[SliceSpec]
) -> tuple[Slice, ...]:
    """Evaluate each value of each slice.

    Args:
        evaluation: The evaluation (for whether predictions carry scores).
        matched: Its arrays (:func:`vocmatch.evaluation.engine.evaluate_matched`).
        specs: The slices (:func:`parse_slices`).

    Returns:
        Each slice with its values, in the order of ``specs``.
    """
    scored = evaluation.summary.map is not None or any(c.ap is not None for c in evaluation.classes)
    out = []
    for spec in specs:
        rule, members = _memberships(spec, matched)
        values = tuple(_value(matched, m, scored) for m in members)
        out.append(Slice(spec.name, rule, values))
    return tuple(out)

"""What the detection calibration errors need of each image, kept in the match records when
asked: each object's OCE terms and each kept prediction's place and size in its image.

*OCE* (object-level calibration error; Park et al., "Uncertainty Quantification in Detection
Transformers: Object-Level Calibration and Image-Level Reliability", IEEE TPAMI, as the
``uq-detr`` package computes it) is a mean over ground-truth objects, so it sees a missed
object. For each object that counts (not ``difficult`` nor a crowd region, unless the
protocol counts them) and each IoU threshold ``tau`` of :data:`OCE_THRESHOLDS` (uq-detr's
defaults), the predictions *of any class* whose IoU with it is at least ``tau`` are
aggregated as uq-detr's default ``"mean"`` does with one score per prediction: ``p`` is their
mean score and their class the majority one (a tie goes to the class first by name). The
object's term is the binary Brier score ``2 (1 - p)^2`` when that class is the object's,
``2 p^2`` when it is not, and ``1.0`` when no prediction reaches ``tau`` (a miss).

The predictions that enter are those a detector would output: the kept ones (within
``max_dets``), with a score (clipped to [0, 1], as the reliability bins clip it), at or above
their class's score threshold when thresholds are set. The IoU is the protocol's own (the
VOC devkit's ``+ 1`` widths under its protocols; a rotated box's or polygon's region).

*D-ECE* (detection expected calibration error, Küppers et al., CVPR 2020 Workshops, as
``netcal.metrics.ECE(detection=True)`` computes it) bins each prediction by its score and
its box's centre ``cx, cy`` and size ``w, h`` relative to its image (``<size>`` of the
ground-truth file, or of the prediction file when the ground truth has none): those four
numbers are kept per prediction (NaN for an image without a size), in the records' order.

Both are additive over images: a set of images' inputs is the union of its parts', so a
merged run reports what a single run does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.evaluation.pair_space import PairSpace, iou_floor
from vocmatch.evaluation.stage_inputs import Prepared, RankingScores, Selection
from vocmatch.evaluation.stages import sorted_shapes

__all__ = ["OCE_THRESHOLDS", "CalibrationInputs", "calibration_inputs", "image_sizes"]

#: The IoU thresholds OCE averages over (uq-detr's ``oce()`` defaults).
OCE_THRESHOLDS = (0.5, 0.75)
#: Object-prediction pairs scored at once (a few arrays of this many numbers).
_PAIRS = 1 << 20

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CalibrationInputs:
    """Each object's OCE terms and each kept prediction's box features (see the module doc).

    Attributes:
        object_label: ``(G,)`` the class of each ground-truth object that counts.
        object_brier: ``(G, T)`` its term at each of :data:`OCE_THRESHOLDS`, in [0, 2].
        pred_box: ``(P, 4)`` each kept prediction's ``cx, cy, w, h`` relative to its
            image's width and height, in the order of the records' predictions; NaN for an
            image without a size.
    """

    object_label: IntArray
    object_brier: FloatArray
    pred_box: FloatArray

    @staticmethod
    def join(
        parts: Sequence[CalibrationInputs | None], remaps: Sequence[IntArray]
    ) -> CalibrationInputs | None:
        """The inputs of parts of disjoint images, in part order, their classes renumbered
        by ``remaps``; None unless every part has them."""
        known = [p for p in parts if p is not None]
        if len(known) != len(parts) or not known:
            return None
        return CalibrationInputs(
            np.concatenate([r[p.object_label] for p, r in zip(known, remaps, strict=True)]).astype(
                np.int64
            ),
            np.concatenate([p.object_brier for p in known]).reshape(-1, len(OCE_THRESHOLDS)),
            np.concatenate([p.pred_box for p in known]).reshape(-1, 4),
        )

    def of_rows(self, rows: IntArray) -> CalibrationInputs:
        """The same inputs with the predictions taken in the order of ``rows``."""
        return CalibrationInputs(self.object_label, self.object_brier, self.pred_box[rows])


def image_sizes(gt_sizes: FloatArray, pred_sizes: FloatArray) -> FloatArray:
    """``(I, 2)`` each image's width and height: the ground truth's, else the predictions'
    (NaN where neither gives a positive finite one)."""
    given: BoolArray = np.all(np.isfinite(gt_sizes) & (gt_sizes > 0), axis=1)
    sizes = np.where(given[:, None], gt_sizes, pred_sizes)
    usable: BoolArray = np.all(np.isfinite(sizes) & (sizes > 0), axis=1)
    out: FloatArray = np.where(usable[:, None], sizes, np.nan)
    return out


def _size_table(prepared: Prepared, selection: Selection) -> FloatArray:
    """``(I, 2)`` the width and height of each evaluated image (see :func:`image_sizes`)."""
    gt_sizes = prepared.gt_columns.sizes
    pred_sizes = prepared.pred_columns.sizes
    n_images = len(selection.images)
    given = np.full((n_images, 2), np.nan)
    fallback = np.full((n_images, 2), np.nan)
    for i, (g, q) in enumerate(zip(selection.images, selection.pred_of_image, strict=True)):
        size = gt_sizes[g]
        if size is not None:
            given[i] = (size.width, size.height)
        other = None if q is None else pred_sizes[q]
        if other is not None:
            fallback[i] = (other.width, other.height)
    return image_sizes(given, fallback)


def calibration_inputs(
    prepared: Prepared,
    selection: Selection,
    scores: RankingScores,
    passing: BoolArray | None,
) -> CalibrationInputs:
    """The OCE terms of the images' objects and the box features of their kept predictions.

    Args:
        prepared: The sorted inputs.
        selection: Their selection (the evaluated images).
        scores: The sorted predictions' scores (``-inf`` for none).
        passing: ``(P,)`` the kept predictions at or above their class's score threshold;
            None without thresholds.

    Returns:
        The inputs, objects and predictions in the sorted order.
    """
    sizes = _size_table(prepared, selection)
    pred = prepared.pred
    boxes = prepared.pred_columns.boxes[pred.rows]
    size = sizes[pred.image]
    pred_box = np.stack(
        [
            (boxes[:, 0] + boxes[:, 2]) / 2 / size[:, 0],
            (boxes[:, 1] + boxes[:, 3]) / 2 / size[:, 1],
            (boxes[:, 2] - boxes[:, 0]) / size[:, 0],
            (boxes[:, 3] - boxes[:, 1]) / size[:, 1],
        ],
        axis=1,
    ).reshape(-1, 4)
    objects = np.flatnonzero(~prepared.gt.ignore)
    usable = np.isfinite(scores.kept)
    if passing is not None:
        usable &= passing
    brier = _object_brier(prepared, objects, np.flatnonzero(usable), scores.kept)
    return CalibrationInputs(prepared.gt.label[objects].astype(np.int64), brier, pred_box)


def _object_brier(
    prepared: Prepared, objects: IntArray, preds: IntArray, scores: FloatArray
) -> FloatArray:
    """``(G, T)`` each object's OCE term at each threshold (see the module doc).

    Args:
        prepared: The sorted inputs.
        objects: The sorted ground truth that counts.
        preds: The sorted kept predictions that enter.
        scores: ``(P,)`` every kept prediction's score.
    """
    gt, pred = prepared.gt, prepared.pred
    n_thresholds = len(OCE_THRESHOLDS)
    brier = np.ones((objects.size, n_thresholds))
    if not objects.size or not preds.size:
        return brier
    gt_image = gt.image[objects].astype(np.int64)
    pred_image = pred.image[preds].astype(np.int64)
    # One cell per image: every object meets every prediction of its image, of any class.
    space = PairSpace(
        prepared.gt_columns.boxes[gt.rows[objects]],
        gt_image,
        np.zeros(objects.size, dtype=bool),
        prepared.pred_columns.boxes,
        pred_image,
        prepared.conventions.pixel_inclusive,
        sorted_shapes(prepared.gt_columns.shapes, gt.rows[objects]),
        sorted_shapes(prepared.pred_columns.shapes, pred.rows[preds]),
        pred_rows=pred.rows[preds],
        iou_floor=iou_floor(OCE_THRESHOLDS),
    )
    n_images = int(max(gt_image.max(), pred_image.max())) + 1
    starts = np.searchsorted(pred_image, np.arange(n_images))
    stops = np.searchsorted(pred_image, np.arange(n_images), side="right")
    per_object = (stops - starts)[gt_image]
    score = np.clip(scores[preds], 0.0, 1.0)
    label = pred.label[preds].astype(np.int64)
    object_label = gt.label[objects].astype(np.int64)
    n_classes = max(len(prepared.class_names), 1)
    # Pairs up to and including each object: a batch is the objects whose pairs fit in
    # _PAIRS (at least one object).
    total = np.cumsum(per_object)
    first = 0
    while first < objects.size:
        done = int(total[first - 1]) if first else 0
        last = max(first + 1, int(np.searchsorted(total, done + _PAIRS, side="right")))
        counts = per_object[first:last]
        n_pairs = int(counts.sum())
        if n_pairs:
            g = np.repeat(np.arange(first, last, dtype=np.int64), counts)
            offset = np.repeat(starts[gt_image[first:last]] - (np.cumsum(counts) - counts), counts)
            p = np.arange(n_pairs, dtype=np.int64) + offset
            iou = space.iou(g, p)
            for t, tau in enumerate(OCE_THRESHOLDS):
                hit = iou >= tau
                brier[first:last, t] = _terms(
                    g[hit] - first, score[p[hit]], label[p[hit]], object_label[first:last],
                    n_classes,
                )  # fmt: skip
        first = last
    return brier


def _terms(
    obj: IntArray, score: FloatArray, label: IntArray, object_label: IntArray, n_classes: int
) -> FloatArray:
    """Each object's binary Brier term from the predictions that reach it (``obj``: the
    object of each, non-decreasing; 1.0 for an object none reaches)."""
    n_objects = object_label.size
    found = np.bincount(obj, minlength=n_objects)
    sums = np.bincount(obj, weights=score, minlength=n_objects)
    mean = sums / np.maximum(found, 1)
    # The majority class of each object's predictions; a tie goes to the lowest index
    # (classes are numbered by name).
    keys, votes = np.unique(obj * n_classes + label, return_counts=True)
    voter, voted = keys // n_classes, keys % n_classes
    order = np.lexsort((voted, -votes, voter))
    _, first = np.unique(voter[order], return_index=True)
    majority = np.full(n_objects, -1, dtype=np.int64)
    majority[voter[order][first]] = voted[order][first]
    terms: FloatArray = np.where(majority == object_label, 2 * (1 - mean) ** 2, 2 * mean**2)
    return np.where(found > 0, terms, 1.0)

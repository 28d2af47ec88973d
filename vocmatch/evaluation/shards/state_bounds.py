"""What a state's match records are checked against beyond their shapes: counts and indices
a file could hold, read exactly whatever their stored dtype, and true positives within the
ground truth they match.

:func:`~vocmatch.evaluation.shards.state_records.records_of_state` calls these on every state
read, so that the accumulation (compiled or numpy) sees only records that a run could have
made: a crafted file is refused with one :class:`~vocmatch.errors.StateError` line naming the
array, never read as other classes or predictions, nor accumulated into a recall above 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.errors import StateError
from vocmatch.evaluation.records import FlagArray, ImageCounts, PredRecords

__all__ = ["MAX_COUNT", "check_bounded", "check_matches_fit"]

#: Above any real count of an image's predictions; keeps the counts' sum within an int64.
MAX_COUNT = 1 << 48

#: The arrays of counts and indices (not flags) whose values are read as int64: each is
#: refused whole where a value is beyond what a file could hold, before any is cast (a
#: uint64 of ``2**64 - 1`` would be index -1, the last prediction, as an int64).
#: ``pred_count``, ``gt_cells`` and ``slice_counts`` are bounded where they are read,
#: ``pred_label`` by the classes listed.
_BOUNDED = {
    "ignored_pred": "indices",
    "slice_ignored_pred": "indices",
    "calibration_label": "indices",
    "coco_gt": "counts",
    "image_values": "counts",
    "class_counts": "counts",
    "unscored_image_values": "counts",
    "unscored_class_counts": "counts",
}


def check_bounded(arrays: Mapping[str, npt.NDArray[Any]], source: str) -> None:
    """Refuse a count or an index of ``2**48`` or more in the arrays that hold them.

    Raises:
        StateError: One line naming ``source`` and the array.
    """
    for name, what in _BOUNDED.items():
        values = arrays.get(name)
        if values is not None and values.size and int(values.max()) >= MAX_COUNT:
            raise StateError(f"{source}: array {name!r} holds {what} no file could hold")


def check_matches_fit(
    preds: PredRecords,
    readings: tuple[ImageCounts, ImageCounts | None],
    coco_gt: npt.NDArray[np.int64],
    n_levels: int,
    source: str,
) -> None:
    """Refuse records whose matches do not fit the ground truth they were matched to.

    Each image's counts (under each reading of scores) have at most as many true positives
    as ground truth that counts, the rest of it missed, at the IoU threshold and at each
    sweep threshold. Each class's counts have at most as many true positives
    as ground truth that counts, the rest of it missed, and their predictions that count
    are true positives, false positives or matched to ignored ground truth. At each matched
    threshold, a class's predictions matched to ground truth that counts are at most its
    ground truth; in each COCO area range, at most its ground truth in that range. Every
    run's records fit (a ground-truth object is matched once per threshold): what the
    accumulation divides by is then never below what it counts.

    Raises:
        StateError: One line naming ``source`` and the array.
    """
    for prefix, counts in zip(("", "unscored_"), readings, strict=True):
        if counts is None:
            continue
        if _rows_disagree(counts.values):
            raise StateError(
                f"{source}: array '{prefix}image_values' does not add up (true positives "
                "beyond the ground truth, or counts that disagree)"
            )
        c = counts.classes
        if (
            (c.tp > c.gt).any()
            or (c.fn != c.gt - c.tp).any()
            or (c.tp + c.fp + c.pred_ignored != c.pred).any()
        ):
            raise StateError(
                f"{source}: array '{prefix}class_counts' does not add up (true positives "
                "beyond the ground truth, or counts that disagree)"
            )
    n_classes = coco_gt.shape[0]
    gt = readings[0].classes.gt
    if _hits_beyond(preds.label, preds.matched, preds.ignored, n_levels, n_classes, gt):
        raise StateError(
            f"{source}: array 'pred_matched' holds more true positives of a class than its "
            "ground truth"
        )
    for a in range(preds.coco_matched.shape[1]):
        matched, ignored = preds.coco_matched[:, a], preds.coco_ignored[:, a]
        if _hits_beyond(preds.label, matched, ignored, 64, n_classes, coco_gt[:, a]):
            raise StateError(
                f"{source}: array 'pred_coco' holds more true positives of a class in an area "
                "range than its ground truth there"
            )


def _rows_disagree(values: npt.NDArray[np.integer[Any]]) -> bool:
    """Whether an image's row of counts (:data:`~vocmatch.evaluation.records.IMAGE_FIELDS`,
    then TP, FP and FN at each sweep threshold) has true positives beyond its ground truth
    or missed objects other than the rest of it."""
    gt, tp, fn = values[:, 0:1], values[:, 3:4], values[:, 5:6]
    sweep_tp, sweep_fn = values[:, 7::3], values[:, 9::3]
    return bool(
        (tp > gt).any()
        or (fn != gt - tp).any()
        or (sweep_tp > gt).any()
        or (sweep_tp + sweep_fn != gt).any()
    )


def _hits_beyond(
    label: FlagArray,
    matched: FlagArray,
    ignored: FlagArray,
    n_bits: int,
    n_classes: int,
    limit: npt.NDArray[np.integer[Any]],
) -> bool:
    """Whether, at some threshold's bit, a class has more predictions matched to ground
    truth that counts (matched, not ignored) than ``limit``."""
    found = _hit_counts(label, matched & ~ignored, n_bits, n_classes)
    return bool((found > np.asarray(limit, dtype=np.int64)[:, None]).any())


#: Bins of one count of each class's hits by their flags' values, at most (else per bit).
_HISTOGRAM_BINS = 1 << 22


def _hit_counts(
    label: FlagArray, hits: FlagArray, n_bits: int, n_classes: int
) -> npt.NDArray[np.int64]:
    """``(n_classes, min(n_bits, 64))``: per class, how many of its predictions have each of
    the first ``n_bits`` bits of ``hits`` set (``label``: each prediction's class, below
    ``n_classes``; ``hits``: flags, none negative).

    One count of the predictions by class and by their flags' value, when the flags use
    few bits, then each value's bits added up: a pass over the predictions, not one a bit.

    >>> _hit_counts(np.array([0, 1, 1]), np.array([0b11, 0b10, 0b110]), 3, 2).tolist()
    [[1, 1, 0], [0, 2, 1]]
    """
    width = min(n_bits, 64)
    found = np.zeros((n_classes, width), dtype=np.int64)
    if not hits.size or not n_classes:
        return found
    used = min(int(hits.max()).bit_length(), width)
    if n_classes << used <= _HISTOGRAM_BINS:
        # Each prediction's class and flags as one small integer, made in place.
        key = label.astype(np.int32)
        key <<= used
        key |= (hits & ((1 << used) - 1)).astype(np.int32)
        histogram = np.bincount(key, minlength=n_classes << used).reshape(n_classes, 1 << used)
        table = (np.arange(1 << used, dtype=np.int64)[:, None] >> np.arange(used)) & 1
        found[:, :used] = histogram.astype(np.int64) @ table
        return found
    wide = hits.astype(np.int64)
    for t in range(used):
        found[:, t] = np.bincount(label[((wide >> t) & 1) == 1], minlength=n_classes)
    return found

"""The error type of every false positive and missed object, in the style of TIDE.

The types and their order follow TIDE (Bolya et al., "TIDE: A General Toolbox for
Identifying Object Detection Errors", ECCV 2020; ``tidecv/quantify.py``). Each false
positive gets exactly one type, tested in this order, with ``b`` the background threshold
(``background_iou``, default 0.1, TIDE's ``background_threshold``):

``loc`` (localisation)
    Its best IoU with ground truth of its own class is at least ``b`` but does not pass the
    threshold: the right class, the box not close enough.
``cls`` (classification)
    Its best IoU with ground truth of another class passes the threshold: the right place,
    the wrong class.
``dupe`` (duplicate)
    Its best IoU with ground truth of its own class that another prediction already matched
    passes the threshold: the object was found, this is a second box on it.
``bkg`` (background)
    Its best IoU with any ground truth is at most ``b`` (or the image has no ground truth):
    it overlaps nothing.
``both``
    Anything else: in practice the wrong class *and* the wrong place, its best overlap being
    with ground truth of another class, above ``b`` but below the threshold.

Every missed ground truth (FN) that no ``loc`` or ``cls`` error points at is ``miss``: no
prediction is anywhere near it. An FN that such an error points at is not counted again:
the object was found, in the wrong place or under the wrong class, and that prediction's
error already says so.

An error points at the object of its best IoU; when that IoU ties between objects, at the
first of them in file order, as TIDE does (``tidecv/quantify.py`` takes numpy's ``argmax``
over the image's objects, the first maximum). The matching before it is the protocol's:
under ``default`` and ``coco`` a prediction whose IoU ties between two free objects takes
the later one, as pycocotools does, where TIDE's own matching takes the first, so the object
left unmatched, and with it a ``miss``, can differ from TIDE's (``voc07`` and ``voc12`` take
the first, as the devkit does).

Two choices differ from TIDE's code, on purpose. A prediction whose same-class IoU equals
the threshold exactly is ``loc`` in TIDE (``bg <= iou <= pos``); here it is ``loc`` only if
that IoU does not pass the threshold, so under the default inclusive rule it is a
``dupe``, which is what the matching made of it. And when several errors point at one
missed object, the best among the errors *of the type being fixed* is kept (TIDE keeps the
best among ``loc`` and ``cls`` together, so fixing ``loc`` can leave nothing fixed when a
higher-scored ``cls`` error points at the same object).

Per class, an error on a prediction counts for the predicted class (the class whose
precision it lowers); ``miss`` counts for the ground-truth class.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from vocmatch.core.geometry import BoxTree
from vocmatch.core.iou import iou_matrix, pair_iou
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evidence.annotated import (
    SCAN_PAIRS,
    AnnotatedImage,
    annotated_images,
    box_array,
    fn_indices,
    fp_indices,
    passes_threshold,
)
from vocmatch.readers.parse import AnnotationSet

__all__ = [
    "DEFAULT_BACKGROUND_IOU",
    "ERROR_TYPES",
    "ClassErrors",
    "ErrorBox",
    "ErrorCounts",
    "ErrorType",
    "ImageErrors",
    "count_errors",
    "error_boxes",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

ErrorType = Literal["cls", "loc", "both", "dupe", "bkg", "miss"]

#: The error types in TIDE's order: classification, localisation, both, duplicate,
#: background, missed.
ERROR_TYPES: tuple[ErrorType, ...] = ("cls", "loc", "both", "dupe", "bkg", "miss")

#: TIDE's default background threshold: a false positive overlapping no ground truth by more
#: than this is a background error.
DEFAULT_BACKGROUND_IOU = 0.1


@dataclass(frozen=True, slots=True)
class ErrorBox:
    """One false positive or missed ground truth and its error type.

    Attributes:
        key: The image's key.
        kind: The error type (see the module docstring).
        name: The class it counts for: the predicted class, or the ground truth's for
            ``miss``.
        pred_index: The prediction's index in its file's objects; None for ``miss``.
        gt_index: The ground truth the error points at, in file order: the same-class
            object for ``loc`` and ``dupe``, the other-class object for ``cls``, the best
            overlap for ``both`` (the first of them on an IoU tie), the missed object for
            ``miss``; None for ``bkg``.
        iou: The IoU with that ground truth (0.0 without one).
        score: The prediction's score, if any.
    """

    key: str
    kind: ErrorType
    name: str
    pred_index: int | None
    gt_index: int | None
    iou: float
    score: float | None = None


@dataclass(frozen=True, slots=True)
class ErrorCounts:
    """How many errors of each type."""

    cls: int = 0
    loc: int = 0
    both: int = 0
    dupe: int = 0
    bkg: int = 0
    miss: int = 0

    @property
    def total(self) -> int:
        """All errors: the FP plus the FN not explained by a ``loc`` or ``cls`` error."""
        return self.cls + self.loc + self.both + self.dupe + self.bkg + self.miss

    def of(self, kind: ErrorType) -> int:
        """The count of one type.

        >>> ErrorCounts(loc=2).of("loc")
        2
        """
        return int(getattr(self, kind))


@dataclass(frozen=True, slots=True)
class ClassErrors:
    """One class's error counts."""

    name: str
    counts: ErrorCounts


@dataclass(frozen=True, slots=True)
class ImageErrors:
    """One image's errors.

    Attributes:
        key: The image's key.
        counts: Errors of each type.
        boxes: Each error, predictions in file order, then missed ground truth in file order.
    """

    key: str
    counts: ErrorCounts
    boxes: tuple[ErrorBox, ...]


#: Predictions whose overlaps are found at once: the pairs of such a run stay within about
#: this many even when every object meets every prediction.
_OVERLAP_PAIRS = 1 << 21


@dataclass(frozen=True, slots=True)
class _Counted:
    """An image's counted objects, in file order (internal).

    Attributes:
        index: Their indices in the file, increasing.
        boxes: ``(N, 4)`` their boxes.
        classes: Their class numbers.
        taken: Whether each is matched.
    """

    index: list[int]
    boxes: FloatArray
    classes: list[int]
    taken: list[bool]


@dataclass(frozen=True, slots=True)
class _Best:
    """Per false positive, the counted object of highest IoU in one group (the first in file
    order on ties), among those it overlaps (internal).

    Attributes:
        gt: ``(M,)`` the object's index in the file; -1 where none overlaps.
        iou: ``(M,)`` its IoU; 0.0 where none overlaps.
    """

    gt: Sequence[int] | IntArray
    iou: Sequence[float] | FloatArray

    def of(self, k: int, first: int | None) -> tuple[int | None, float]:
        """False positive ``k``'s best object and IoU; without an overlap, the group's
        ``first`` object at IoU 0 (None for an empty group), as a scan of the group would."""
        g = int(self.gt[k])
        return (g, float(self.iou[k])) if g >= 0 else (first, 0.0)


def _best_overlaps(
    counted: _Counted, pred: FloatArray, pred_classes: list[int], pixel_inclusive: bool
) -> tuple[_Best, _Best, _Best, _Best]:
    """For each prediction, the best counted object of its class, of another class, of its
    class and matched, and of any class, among the objects it overlaps.

    Only boxes that meet can have a positive IoU: an STR tree finds them, for a run of
    predictions at a time, so an image of 50,000 objects is not a 50,000 x M matrix.

    Returns:
        The four groups' bests, each over the ``M`` predictions.
    """
    m, n = pred.shape[0], len(counted.index)
    found = [(np.full(m, -1, dtype=np.int64), np.zeros(m, dtype=np.float64)) for _ in range(4)]
    index = np.array(counted.index, dtype=np.int64)
    gt_classes = np.array(counted.classes, dtype=np.int64)
    taken = np.array(counted.taken, dtype=bool)
    classes = np.array(pred_classes, dtype=np.int64)
    if n and m:
        tree = BoxTree(counted.boxes, 1.0 if pixel_inclusive else 0.0)
        step = max(1, _OVERLAP_PAIRS // n)
        for start in range(0, m, step):
            rows, cols = tree.query(pred[start : start + step])
            cols = cols + start
            iou = pair_iou(counted.boxes[rows], pred[cols], pixel_inclusive)
            positive = iou > 0
            rows, cols, iou = rows[positive], cols[positive], iou[positive]
            # By prediction, highest IoU first, then file order: a group's first is its best.
            order = np.lexsort((rows, -iou, cols))
            rows, cols, iou = rows[order], cols[order], iou[order]
            same = gt_classes[rows] == classes[cols]
            groups = (same, ~same, same & taken[rows], np.ones(rows.size, dtype=bool))
            for (best_gt, best_iou), group in zip(found, groups, strict=True):
                r, c, v = rows[group], cols[group], iou[group]
                # The first pair of each prediction (c is sorted).
                first = np.ones(c.size, dtype=bool)
                np.not_equal(c[1:], c[:-1], out=first[1:])
                best_gt[c[first]] = index[r[first]]
                best_iou[c[first]] = v[first]
    same_best, other_best, taken_best, any_best = (_Best(g, v) for g, v in found)
    return same_best, other_best, taken_best, any_best


def _scanned_overlaps(
    counted: _Counted, pred: FloatArray, pred_classes: list[int], pixel_inclusive: bool
) -> tuple[_Best, _Best, _Best, _Best]:
    """:func:`_best_overlaps` by scanning every pair in plain Python: faster for the few
    boxes of an ordinary image than arrays or a tree."""
    m = pred.shape[0]
    found = [([-1] * m, [0.0] * m) for _ in range(4)]
    columns: list[list[float]] = iou_matrix(counted.boxes, pred, pixel_inclusive).T.tolist()
    index, classes, taken = counted.index, counted.classes, counted.taken
    (same_gt, same_iou), (other_gt, other_iou), (taken_gt, taken_iou), (any_gt, any_iou) = found
    for k, (column, pred_class) in enumerate(zip(columns, pred_classes, strict=True)):
        for row, value in enumerate(column):
            # Strictly higher: the first object in file order keeps a tie.
            if value <= 0.0:
                continue
            g = index[row]
            if value > any_iou[k]:
                any_gt[k], any_iou[k] = g, value
            if classes[row] != pred_class:
                if value > other_iou[k]:
                    other_gt[k], other_iou[k] = g, value
                continue
            if value > same_iou[k]:
                same_gt[k], same_iou[k] = g, value
            if taken[row] and value > taken_iou[k]:
                taken_gt[k], taken_iou[k] = g, value
    same_best, other_best, taken_best, any_best = (_Best(g, v) for g, v in found)
    return same_best, other_best, taken_best, any_best


def _image_errors(
    image: AnnotatedImage,
    threshold: float,
    strict: bool,
    pixel_inclusive: bool,
    background_iou: float,
) -> ImageErrors:
    key = image.result.key
    matches = image.result.matches
    counted = sorted(
        {m.gt_index for m in matches if m.outcome in ("tp", "fn") and m.gt_index is not None}
    )
    matched = {m.gt_index for m in matches if m.outcome == "tp" and m.gt_index is not None}
    missed = fn_indices(matches)
    fp = fp_indices(matches)
    boxes: list[ErrorBox] = []
    pointed_at: set[int] = set()
    if fp and image.pred is not None:
        gt_boxes = image.gt.boxes
        pred_boxes = [image.pred.boxes[j] for j in fp]
        counted_boxes = [gt_boxes[g] for g in counted]
        # Classes as numbers, so that a pair's being of one class is an array operation.
        number: dict[str, int] = {}
        gt_classes = [number.setdefault(b.name, len(number)) for b in counted_boxes]
        pred_classes = [number.setdefault(b.name, len(number)) for b in pred_boxes]
        small = len(counted) * len(fp) <= SCAN_PAIRS
        best_same, best_other, best_taken, best_any = (
            _scanned_overlaps if small else _best_overlaps
        )(
            _Counted(
                counted, box_array(counted_boxes), gt_classes, [g in matched for g in counted]
            ),
            box_array(pred_boxes),
            pred_classes,
            pixel_inclusive,
        )
        # Without an overlap, a group's best is its first object, at IoU 0 (as a scan of the
        # group in file order finds it): the first counted object of the FP's class (and
        # matched); the first of another class is one of the first two classes' first.
        first_same: dict[str, int] = {}
        first_taken: dict[str, int] = {}
        for g, box in zip(counted, counted_boxes, strict=True):
            first_same.setdefault(box.name, g)
            if g in matched:
                first_taken.setdefault(box.name, g)
        firsts = heapq.nsmallest(2, first_same.values())
        for k, (j, box) in enumerate(zip(fp, pred_boxes, strict=True)):
            kind: ErrorType
            other = [g for g in firsts if gt_boxes[g].name != box.name]
            g_same, s = best_same.of(k, first_same.get(box.name))
            g_other, o = best_other.of(k, other[0] if other else None)
            g_taken, d = best_taken.of(k, first_taken.get(box.name))
            g_any, a = best_any.of(k, firsts[0] if firsts else None)
            if not counted:
                kind, target, value = "bkg", None, 0.0
            elif (
                g_same is not None
                and s >= background_iou
                and not passes_threshold(s, threshold, strict)
            ):
                kind, target, value = "loc", g_same, s
            elif g_other is not None and passes_threshold(o, threshold, strict):
                kind, target, value = "cls", g_other, o
            elif g_taken is not None and passes_threshold(d, threshold, strict):
                kind, target, value = "dupe", g_taken, d
            elif a <= background_iou:
                kind, target, value = "bkg", None, a
            else:
                kind, target, value = "both", g_any, a
            if kind in ("loc", "cls") and target is not None:
                pointed_at.add(target)
            boxes.append(ErrorBox(key, kind, box.name, j, target, value, box.score))
    for g in missed:
        if g not in pointed_at:
            box = image.gt.boxes[g]
            best = next(m.iou for m in matches if m.outcome == "fn" and m.gt_index == g)
            boxes.append(ErrorBox(key, "miss", box.name, None, g, best, None))
    return ImageErrors(key, count_errors(boxes), tuple(boxes))


def count_errors(boxes: Iterable[ErrorBox]) -> ErrorCounts:
    """How many boxes of each error type ``boxes`` holds."""
    totals = dict.fromkeys(ERROR_TYPES, 0)
    for box in boxes:
        totals[box.kind] += 1
    return ErrorCounts(**totals)


def _check_background(evaluation: Evaluation, background_iou: float) -> None:
    threshold = evaluation.conventions.iou_threshold
    if not 0.0 <= background_iou <= threshold:
        raise InputError(
            f"background IoU must be within [0, {threshold:g}] (the IoU threshold), "
            f"got {background_iou:g}"
        )


def error_boxes(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    background_iou: float = DEFAULT_BACKGROUND_IOU,
) -> tuple[ImageErrors, ...]:
    """The error type of every false positive and missed object, image by image.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.
        background_iou: At or below this IoU with every object, a false positive is a
            background error; at or above it with an object of its class, a localisation
            error.

    Returns:
        Per image, in the evaluation's order.

    Raises:
        InputError: ``background_iou`` is outside ``[0, iou_threshold]``, or an evaluated
            image is not in ``gt`` or ``pred``.
    """
    _check_background(evaluation, background_iou)
    conv = evaluation.conventions
    return tuple(
        _image_errors(
            image,
            conv.iou_threshold,
            conv.strict_threshold,
            conv.pixel_inclusive,
            background_iou,
        )
        for image in annotated_images(evaluation, gt, pred)
    )

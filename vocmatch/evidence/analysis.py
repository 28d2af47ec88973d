"""Why predictions fail: error types in the style of TIDE, what each costs in mAP, a
confusion matrix between classes and background, and how tight matched boxes are.

Everything is read at the evaluation threshold ``t`` (``Conventions.iou_threshold``; an IoU
"passes" at ``>= t``, or ``> t`` under ``strict_threshold``) from the evaluation's own
matching, so the counts here always add up to its FP and FN. Only ground truth that counts
takes part: ``difficult`` objects that the protocol ignores, and the predictions matched to
them, are neither errors nor targets.

Error types
-----------
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

mAP cost
--------
As TIDE does, the cost of a type is the mAP after fixing every error of that type, all
others left as they are, minus the mAP measured: the mAP the type costs. Fixing is done on
the boxes and the evaluation is run again, with the same conventions, by
:func:`vocmatch.evaluation.evaluate.evaluate`:

* ``loc`` and ``cls``: among the errors of that type pointing at the same missed object, the
  highest-scored prediction (the first in ranking order on ties) takes the object's class
  and box, so it becomes a true positive with IoU 1 at every threshold; the others, and
  errors pointing at an object already matched, are removed.
* ``dupe``, ``bkg`` and ``both``: the predictions are removed.
* ``miss``: the missed ground truth is removed.

Under a protocol with a single AP threshold and no ``max_dets`` (``default``, ``voc07``,
``voc12``) no fix changes the outcome of any other prediction, so the fixed mAP is read off
the re-ranked TP/FP flags instead, with the same AP code and the same result (a property
test checks both ways agree exactly); under ``coco`` the boxes are evaluated again.

Costs exist only where mAP does (predictions with scores). Removing a false positive,
turning it into a true positive or removing an unreachable object never lowers a class's
AP, so a cost is never negative up to rounding; the costs of the types need not add up to
``1 - mAP``.

Confusion matrix
----------------
:func:`confusion_matrix` counts every box that counts at the evaluation threshold exactly
once, in a ``(K + 1, K + 1)`` matrix over the ``K`` class names (sorted) and
``"background"`` (last). Rows are the ground-truth class, columns the predicted class.

* A true positive of class ``c`` counts at ``[c, c]``.
* Missed ground truth (FN) and unmatched predictions (FP) of the same image are then paired
  across classes: among all pairs of an FN of class ``a`` and an FP of another class ``b``
  whose IoU passes the threshold, the pair with the highest IoU is taken first, both boxes
  leave, and so on (ties: lower ground-truth index, then lower prediction index, in file
  order). Each pair counts once at ``[a, b]``: the object was found in the right place
  under the wrong class.
* An FN left unpaired counts at ``[a, background]`` (the object was missed); an FP left
  unpaired counts at ``[background, b]`` (a prediction of nothing).
* Ignored boxes (``difficult`` ground truth under ``ignore`` or ``crowd``, predictions
  matched to them or beyond ``max_dets``) count nowhere; ``[background, background]`` is
  always 0.

So row ``c`` sums to the class's counted ground truth (TP + FN) and column ``c`` to its
predictions that count (TP + FP). Only predictions that are FP at the threshold can be
paired, so a prediction already matched to an object of its own class is never counted a
second time as a confusion. Pairing uses IoU alone, not scores, so the matrix means the
same for two labelling passes as for a model. A ``cls`` error and an off-diagonal cell
usually name the same box, but not always: the error type looks at the best overlap of each
prediction on its own, the matrix pairs boxes one-to-one.

Tightness
---------
For every true positive, :func:`tightness` reads the IoU and the signed offset of each edge
in pixels, positive where the predicted edge lies *outside* the ground-truth box:
``left = gt.x1 - pred.x1``, ``top = gt.y1 - pred.y1``, ``right = pred.x2 - gt.x2``,
``bottom = pred.y2 - gt.y2``. A second annotator whose boxes are systematically larger
shows positive means on all four edges.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import average_precision, precision_recall_curve
from vocmatch.core.geometry import BoxTree
from vocmatch.core.iou import iou_matrix, pair_iou
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.errors import InputError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.evaluate import Evaluation, ImageResult, Match
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

__all__ = [
    "BACKGROUND",
    "DEFAULT_BACKGROUND_IOU",
    "ERROR_TYPES",
    "ClassErrors",
    "ConfusionMatrix",
    "Distribution",
    "ErrorAnalysis",
    "ErrorBox",
    "ErrorCost",
    "ErrorCounts",
    "ErrorType",
    "ImageErrors",
    "Tightness",
    "confusion_matrix",
    "distribution",
    "error_analysis",
    "error_boxes",
    "map_cost",
    "offset_edges",
    "tightness",
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

#: The name of the last row and column of a confusion matrix.
BACKGROUND = "background"

#: Bins of the IoU histogram (threshold to 1) and of each edge-offset histogram.
IOU_BINS = 20
OFFSET_BINS = 21


# Records -------------------------------------------------------------------------------


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
class ErrorCost:
    """The mAP each error type costs: mAP with that type fixed minus the mAP measured.

    Attributes:
        map: The mAP measured, as ``Summary.map``.
        cls: Gain from fixing every classification error.
        loc: Gain from fixing every localisation error.
        both: Gain from removing every ``both`` error.
        dupe: Gain from removing every duplicate.
        bkg: Gain from removing every background error.
        miss: Gain from removing every missed object.
    """

    map: float
    cls: float
    loc: float
    both: float
    dupe: float
    bkg: float
    miss: float

    def of(self, kind: ErrorType) -> float:
        """The cost of one type."""
        return float(getattr(self, kind))


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


@dataclass(frozen=True, slots=True)
class ConfusionMatrix:
    """Counts of ground-truth class against predicted class at the evaluation threshold.

    Kept as its cells that are not zero: with ``K`` classes the full matrix has
    ``(K + 1)^2`` cells, 20 GB of them for 50,000 classes, but at most one cell per box is
    not zero.

    Attributes:
        names: The class names, sorted, then ``"background"`` last.
        rows: ``(C,)`` row (ground-truth class) of each cell that is not zero, sorted by
            row, then column.
        columns: ``(C,)`` its column (predicted class); background is the last row and
            column.
        values: ``(C,)`` its count.
    """

    names: tuple[str, ...]
    rows: IntArray
    columns: IntArray
    values: IntArray

    @property
    def counts(self) -> IntArray:
        """The full ``(K + 1, K + 1)`` matrix (for a few classes: it grows with ``K^2``)."""
        size = len(self.names)
        dense = np.zeros((size, size), dtype=np.int64)
        dense[self.rows, self.columns] = self.values
        return dense

    def count(self, gt_name: str, pred_name: str) -> int:
        """The count at ``[gt_name, pred_name]``; ``"background"`` names the last row or column.

        Raises:
            KeyError: A name is not in the matrix.
        """
        key = self._index(gt_name) * len(self.names) + self._index(pred_name)
        keys = self.rows * len(self.names) + self.columns
        at = int(np.searchsorted(keys, key))
        return int(self.values[at]) if at < keys.size and keys[at] == key else 0

    def row_totals(self) -> IntArray:
        """``(K + 1,)`` the sum of each row: a class's counted ground truth, TP + FN."""
        return np.bincount(self.rows, weights=self.values, minlength=len(self.names)).astype(
            np.int64
        )

    def column_totals(self) -> IntArray:
        """``(K + 1,)`` the sum of each column: a class's counted predictions, TP + FP."""
        return np.bincount(self.columns, weights=self.values, minlength=len(self.names)).astype(
            np.int64
        )

    def _index(self, name: str) -> int:
        if name == BACKGROUND:
            return len(self.names) - 1
        at = bisect.bisect_left(self.names, name, hi=len(self.names) - 1)
        if at < len(self.names) - 1 and self.names[at] == name:
            return at
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class Distribution:
    """Summary statistics and a histogram of some values.

    Attributes:
        count: How many values.
        mean: Their mean.
        std: Their standard deviation (population, ``ddof=0``).
        median: Their median.
        p05: The 5th percentile (numpy's linear interpolation).
        p95: The 95th percentile.
        minimum: The smallest value.
        maximum: The largest value.
        edges: ``(B + 1,)`` bin edges, increasing.
        counts: ``(B,)`` values per bin; each bin holds ``edges[i] <= v < edges[i + 1]``,
            the last also its right edge; values beyond the ends count in the end bins.
    """

    count: int
    mean: float
    std: float
    median: float
    p05: float
    p95: float
    minimum: float
    maximum: float
    edges: tuple[float, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Tightness:
    """How tight matched boxes are: IoU and signed edge offsets of the true positives.

    Attributes:
        name: The class, or None for every class together.
        pairs: True positives measured.
        iou: Their IoU; None without pairs.
        left: ``gt.x1 - pred.x1`` in pixels (positive: the prediction reaches further out).
        top: ``gt.y1 - pred.y1``.
        right: ``pred.x2 - gt.x2``.
        bottom: ``pred.y2 - gt.y2``.
        classes: Per class, sorted by name (empty inside a per-class record).
    """

    name: str | None
    pairs: int
    iou: Distribution | None
    left: Distribution | None
    top: Distribution | None
    right: Distribution | None
    bottom: Distribution | None
    classes: tuple[Tightness, ...] = ()


@dataclass(frozen=True, slots=True)
class ErrorAnalysis:
    """Everything :func:`error_analysis` found.

    Attributes:
        background_iou: The background threshold used.
        summary: Errors of each type over the dataset.
        classes: Per class, sorted by name (every class of the evaluation).
        images: Per image, in the evaluation's order (sorted by key).
        cost: The mAP each type costs; None where mAP is not defined.
        confusion: The confusion matrix.
        tightness: IoU and edge offsets of the true positives.
    """

    background_iou: float
    summary: ErrorCounts
    classes: tuple[ClassErrors, ...]
    images: tuple[ImageErrors, ...]
    cost: ErrorCost | None
    confusion: ConfusionMatrix
    tightness: Tightness

    @property
    def boxes(self) -> tuple[ErrorBox, ...]:
        """Every error, image by image."""
        return tuple(b for image in self.images for b in image.boxes)


# Shared geometry -----------------------------------------------------------------------


def _boxes(boxes: Sequence[Box]) -> FloatArray:
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def _passes(value: float, threshold: float, strict: bool) -> bool:
    return value > threshold if strict else value >= threshold


@dataclass(frozen=True, slots=True)
class _Image:
    """An evaluated image with its annotations (internal)."""

    result: ImageResult
    gt: ImageAnnotation
    pred: ImageAnnotation | None


def _images(evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet) -> list[_Image]:
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    out = []
    for image in evaluation.images:
        gt_image = gt_by_key.get(image.key)
        if gt_image is None:
            raise InputError(f"image {image.key!r} of the evaluation is not in the ground truth")
        pred_image = pred_by_key.get(image.key)
        if pred_image is None and image.pred_path is not None:
            raise InputError(f"image {image.key!r} of the evaluation is not in the predictions")
        out.append(_Image(image, gt_image, pred_image))
    return out


def _fp_indices(matches: Iterable[Match]) -> list[int]:
    return sorted(m.pred_index for m in matches if m.outcome == "fp" and m.pred_index is not None)


def _fn_indices(matches: Iterable[Match]) -> list[int]:
    return sorted(m.gt_index for m in matches if m.outcome == "fn" and m.gt_index is not None)


# Error types ---------------------------------------------------------------------------


#: Predictions whose overlaps are found at once: the pairs of such a run stay within about
#: this many even when every object meets every prediction.
_OVERLAP_PAIRS = 1 << 21
#: Up to this many pairs of an image every pair is scored, in plain Python: sooner done for
#: the handful of boxes of an ordinary image than arrays or a tree.
_SCAN_PAIRS = 1 << 12


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
    image: _Image, threshold: float, strict: bool, pixel_inclusive: bool, background_iou: float
) -> ImageErrors:
    key = image.result.key
    matches = image.result.matches
    counted = sorted(
        {m.gt_index for m in matches if m.outcome in ("tp", "fn") and m.gt_index is not None}
    )
    matched = {m.gt_index for m in matches if m.outcome == "tp" and m.gt_index is not None}
    missed = _fn_indices(matches)
    fp = _fp_indices(matches)
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
        small = len(counted) * len(fp) <= _SCAN_PAIRS
        best_same, best_other, best_taken, best_any = (
            _scanned_overlaps if small else _best_overlaps
        )(
            _Counted(counted, _boxes(counted_boxes), gt_classes, [g in matched for g in counted]),
            _boxes(pred_boxes),
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
            elif g_same is not None and s >= background_iou and not _passes(s, threshold, strict):
                kind, target, value = "loc", g_same, s
            elif g_other is not None and _passes(o, threshold, strict):
                kind, target, value = "cls", g_other, o
            elif g_taken is not None and _passes(d, threshold, strict):
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
    return ImageErrors(key, _count(boxes), tuple(boxes))


def _count(boxes: Iterable[ErrorBox]) -> ErrorCounts:
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
        for image in _images(evaluation, gt, pred)
    )


# mAP cost ------------------------------------------------------------------------------


def _score_key(box: ErrorBox) -> tuple[float, int]:
    # Ranking order: highest score first, then file order (a stable sort of the ranking).
    score = box.score if box.score is not None else -math.inf
    return -score, box.pred_index if box.pred_index is not None else 0


def _fixed_sets(
    kind: ErrorType,
    images: Sequence[ImageErrors],
    fn_by_key: dict[str, set[int]],
    gt: AnnotationSet,
    pred: AnnotationSet,
) -> tuple[AnnotationSet, AnnotationSet]:
    """The ground truth and predictions with every error of one type fixed."""
    by_key: dict[str, list[ErrorBox]] = {}
    for image in images:
        errors = [b for b in image.boxes if b.kind == kind]
        if errors:
            by_key[image.key] = errors
    if kind == "miss":
        gt_annotations = []
        for annotation in gt.annotations:
            drop = {b.gt_index for b in by_key.get(annotation.key, [])}
            if drop:
                kept = tuple(b for i, b in enumerate(annotation.boxes) if i not in drop)
                annotation = replace(annotation, boxes=kept)
            gt_annotations.append(annotation)
        return replace(gt, annotations=tuple(gt_annotations)), pred
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_annotations = []
    for annotation in pred.annotations:
        errors = by_key.get(annotation.key, [])
        if errors:
            changes = _changes(errors, fn_by_key.get(annotation.key, set()))
            target_boxes = gt_by_key[annotation.key].boxes
            boxes = []
            for j, box in enumerate(annotation.boxes):
                if j not in changes:
                    boxes.append(box)
                    continue
                g = changes[j]
                if g is not None:
                    # The prediction takes the object's class and box: a TP at any threshold.
                    t = target_boxes[g]
                    boxes.append(replace(box, name=t.name, x1=t.x1, y1=t.y1, x2=t.x2, y2=t.y2))
            annotation = replace(annotation, boxes=tuple(boxes))
        pred_annotations.append(annotation)
    return gt, replace(pred, annotations=tuple(pred_annotations))


def _changes(errors: Sequence[ErrorBox], fn: set[int]) -> dict[int, int | None]:
    """Prediction index -> the ground truth it becomes, or None to remove it."""
    changes: dict[int, int | None] = {}
    fixed: set[int] = set()
    for error in sorted(errors, key=_score_key):
        if error.pred_index is None:
            continue
        g = error.gt_index
        if error.kind in ("loc", "cls") and g is not None and g in fn and g not in fixed:
            fixed.add(g)
            changes[error.pred_index] = g
        else:
            changes[error.pred_index] = None
    return changes


@dataclass(frozen=True, slots=True)
class _Ranked:
    """One prediction that counts (TP or FP) in its class's ranking (internal)."""

    rank: tuple[float, int, int]  # (-score, image index, index in the file)
    key: str
    pred_index: int
    name: str
    tp: bool
    score: float


def _rankings(evaluation: Evaluation) -> list[_Ranked]:
    out = []
    for i, image in enumerate(evaluation.images):
        for m in image.matches:
            if m.outcome in ("tp", "fp") and m.pred_index is not None:
                score = m.score if m.score is not None else -math.inf
                rank = (-score, i, m.pred_index)
                out.append(_Ranked(rank, image.key, m.pred_index, m.name, m.outcome == "tp", score))
    return out


def _ranked_map(
    entries: Iterable[_Ranked], n_gt: dict[str, int], evaluation: Evaluation
) -> float | None:
    """Mean AP over the classes with ground truth, from each class's ranked TP/FP flags.

    The same ranking as the evaluation's (score, then image order, then file order, each
    class apart) and the same AP functions, so on unchanged flags it gives ``Summary.map``.
    """
    conv = evaluation.conventions
    by_class: dict[str, list[_Ranked]] = {}
    for entry in entries:
        by_class.setdefault(entry.name, []).append(entry)
    eps = float(np.spacing(1)) if conv.interpolation == "101-point" else None
    values = []
    for name in sorted(n_gt):
        if n_gt[name] <= 0:
            continue
        ranked = sorted(by_class.get(name, []), key=lambda e: e.rank)
        tp = np.array([e.tp for e in ranked], dtype=bool)
        scores = np.array([e.score for e in ranked], dtype=np.float64)
        curve = precision_recall_curve(tp, scores, n_gt[name], eps=eps)
        values.append(average_precision(curve.recall, curve.precision, conv.interpolation))
    return float(np.mean(values)) if values else None


def _shortcut_applies(evaluation: Evaluation) -> bool:
    """One AP threshold and no max_dets: fixing an error changes no other prediction's match.

    A removed false positive took no object; a fixed one takes an object no prediction
    took; a removed missed object was taken by none. So at the evaluation threshold every
    other prediction keeps its outcome, and re-ranking the flags is the same as evaluating
    the fixed boxes again. Under ``coco`` (ten thresholds, ``max_dets``) it is not.
    """
    conv = evaluation.conventions
    single = conv.ap_thresholds == (conv.iou_threshold,)
    return single and not conv.coco_stats and conv.max_dets is None


def map_cost(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    images: Sequence[ImageErrors],
    reevaluate: bool = False,
) -> ErrorCost | None:
    """The mAP each error type costs: the mAP with the boxes of that type fixed, minus the
    mAP measured.

    Under a protocol with one AP threshold and no ``max_dets`` the fixed mAP is read off the
    re-ranked TP/FP flags, which is exactly what evaluating the fixed boxes gives (see
    :func:`_shortcut_applies`; a test checks the two agree); otherwise, or with
    ``reevaluate``, the fixed boxes are evaluated again.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.
        images: The errors found by :func:`error_boxes` on the same evaluation.
        reevaluate: Always evaluate the fixed boxes again.

    Returns:
        The costs, or None when the evaluation has no mAP (no scores, no ground truth).
    """
    base = evaluation.summary.map
    if base is None:
        return None
    fn_by_key = {image.key: set(_fn_indices(image.matches)) for image in evaluation.images}
    entries = _rankings(evaluation)
    n_gt = {c.name: c.gt for c in evaluation.classes}
    shortcut = (
        not reevaluate
        and _shortcut_applies(evaluation)
        and _ranked_map(entries, n_gt, evaluation) == base
    )
    gt_by_key = {a.key: a for a in gt.annotations}
    gains: dict[str, float] = {}
    for kind in ERROR_TYPES:
        errors = [b for image in images for b in image.boxes if b.kind == kind]
        if not errors:
            gains[kind] = 0.0
            continue
        if shortcut:
            fixed = _fixed_ranked_map(kind, images, fn_by_key, gt_by_key, entries, n_gt, evaluation)
        else:
            fixed_gt, fixed_pred = _fixed_sets(kind, images, fn_by_key, gt, pred)
            # The vectorised evaluator: the same numbers as evaluate(), far faster on
            # large sets (six evaluations here under coco).
            fixed = evaluate_columns(
                columns_from_annotations(fixed_gt),
                columns_from_annotations(fixed_pred),
                evaluation.conventions,
                keep_matches=False,
            ).summary.map
        gains[kind] = (fixed if fixed is not None else base) - base
    return ErrorCost(map=base, **gains)


def _fixed_ranked_map(
    kind: ErrorType,
    images: Sequence[ImageErrors],
    fn_by_key: dict[str, set[int]],
    gt_by_key: dict[str, ImageAnnotation],
    entries: Sequence[_Ranked],
    n_gt: dict[str, int],
    evaluation: Evaluation,
) -> float | None:
    """The mAP with every error of one type fixed, from the re-ranked flags."""
    if kind == "miss":
        counts = dict(n_gt)
        for image in images:
            for box in image.boxes:
                if box.kind == "miss":
                    counts[box.name] -= 1
        return _ranked_map(entries, counts, evaluation)
    changes: dict[tuple[str, int], int | None] = {}
    for image in images:
        errors = [b for b in image.boxes if b.kind == kind]
        if errors:
            for j, g in _changes(errors, fn_by_key.get(image.key, set())).items():
                changes[image.key, j] = g
    fixed = []
    for entry in entries:
        where = (entry.key, entry.pred_index)
        if where not in changes:
            fixed.append(entry)
            continue
        g = changes[where]
        if g is not None:
            # The prediction takes the object's class and box: a TP of that class.
            name = gt_by_key[entry.key].boxes[g].name
            fixed.append(replace(entry, name=name, tp=True))
    return _ranked_map(fixed, n_gt, evaluation)


# Confusion matrix ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Confusion:
    """An FN paired with an FP of another class in the same image (internal)."""

    gt_index: int
    pred_index: int
    gt_name: str
    pred_name: str
    iou: float


def _cross_class_pairs(
    image: _Image, threshold: float, strict: bool, pixel_inclusive: bool
) -> list[_Confusion]:
    """Pair the image's FN with its FP of other classes, highest IoU first, one-to-one."""
    if image.pred is None:
        return []
    fn = _fn_indices(image.result.matches)
    fp = _fp_indices(image.result.matches)
    if not fn or not fp:
        return []
    gt_boxes = [image.gt.boxes[i] for i in fn]
    pred_boxes = [image.pred.boxes[j] for j in fp]
    gt, pred = _boxes(gt_boxes), _boxes(pred_boxes)
    if _passes(0.0, threshold, strict) or len(fn) * len(fp) <= _SCAN_PAIRS:
        # Every pair: at threshold 0 every pair passes, boxes that do not meet included; and a
        # few boxes are scanned sooner than arrays or a tree are built.
        iou = iou_matrix(gt, pred, pixel_inclusive).tolist()
        candidates = [
            (-value, a, b)
            for a, row in enumerate(iou)
            for b, value in enumerate(row)
            if gt_boxes[a].name != pred_boxes[b].name and _passes(value, threshold, strict)
        ]
    else:
        # Only boxes that meet can pass: an STR tree finds them, not an FN x FP scan.
        rows, cols = BoxTree(gt, 1.0 if pixel_inclusive else 0.0).query(pred)
        values = pair_iou(gt[rows], pred[cols], pixel_inclusive)
        keep = values > threshold if strict else values >= threshold
        candidates = [
            (-value, a, b)
            for value, a, b in zip(
                values[keep].tolist(), rows[keep].tolist(), cols[keep].tolist(), strict=True
            )
            if gt_boxes[a].name != pred_boxes[b].name
        ]
    # Highest IoU first, then lower ground-truth index, then lower prediction index.
    candidates.sort()
    taken_gt: set[int] = set()
    taken_pred: set[int] = set()
    pairs = []
    for negative, a, b in candidates:
        value = -negative
        if a in taken_gt or b in taken_pred:
            continue
        taken_gt.add(a)
        taken_pred.add(b)
        pairs.append(_Confusion(fn[a], fp[b], gt_boxes[a].name, pred_boxes[b].name, value))
    return sorted(pairs, key=lambda p: (p.gt_index, p.pred_index))


def confusion_matrix(
    evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet
) -> ConfusionMatrix:
    """The confusion matrix between classes and background at the evaluation threshold.

    See the module docstring for the exact rule; each counted ground truth and each counted
    prediction contributes exactly once.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.

    Returns:
        The matrix over the evaluation's class names (sorted) and background.

    Raises:
        InputError: An evaluated image is not in ``gt`` or ``pred``.
    """
    names = tuple(sorted(c.name for c in evaluation.classes))
    index = {name: k for k, name in enumerate(names)}
    background = len(names)
    # One (row, column) entry per box that counts, summed at the end: never the full matrix.
    rows: list[int] = []
    columns: list[int] = []
    conv = evaluation.conventions
    for image in _images(evaluation, gt, pred):
        pairs = _cross_class_pairs(
            image, conv.iou_threshold, conv.strict_threshold, conv.pixel_inclusive
        )
        for p in pairs:
            rows.append(index[p.gt_name])
            columns.append(index[p.pred_name])
        paired_gt = {p.gt_index for p in pairs}
        paired_pred = {p.pred_index for p in pairs}
        for m in image.result.matches:
            k = index[m.name]
            if m.outcome == "tp":
                rows.append(k)
                columns.append(k)
            elif m.outcome == "fn" and m.gt_index not in paired_gt:
                rows.append(k)
                columns.append(background)
            elif m.outcome == "fp" and m.pred_index not in paired_pred:
                rows.append(background)
                columns.append(k)
    size = background + 1
    cells, values = np.unique(
        np.asarray(rows, dtype=np.int64) * size + np.asarray(columns, dtype=np.int64),
        return_counts=True,
    )
    return ConfusionMatrix(
        names=(*names, BACKGROUND),
        rows=cells // size,
        columns=cells % size,
        values=values.astype(np.int64),
    )


# Tightness -----------------------------------------------------------------------------


def _nice_step(span: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``span`` (> 0).

    >>> _nice_step(0.3), _nice_step(1.0), _nice_step(2.2), _nice_step(7.0)
    (0.5, 1.0, 5.0, 10.0)
    """
    power = 10.0 ** math.floor(math.log10(span))
    for factor in (1.0, 2.0, 5.0, 10.0):
        step = factor * power
        if step >= span * (1 - 1e-12):
            return step
    return 10.0 * power


def offset_edges(values: npt.ArrayLike, bins: int = OFFSET_BINS) -> FloatArray:
    """Bin edges for signed offsets: ``bins`` (odd) bins of a round width, one centred on 0.

    The width is the smallest 1, 2 or 5 times a power of ten that makes the bins reach the
    95th percentile of ``|values|`` (1 pixel when every value is 0, and at least 1 pixel
    when every value is a whole number), so that a few outliers do not flatten the
    histogram; values beyond count in the end bins.

    Args:
        values: The offsets.
        bins: The number of bins, odd.

    Returns:
        ``(bins + 1,)`` edges.

    >>> offset_edges([-2.0, 0.0, 1.0, 3.0], bins=5).tolist()
    [-5.0, -3.0, -1.0, 1.0, 3.0, 5.0]
    """
    array = np.asarray(values, dtype=np.float64)
    reach = float(np.percentile(np.abs(array), 95)) if array.size else 0.0
    half = bins / 2
    step = _nice_step(reach / (half - 0.5)) if reach > 0 else 1.0
    if step < 1.0 and np.array_equal(array, np.round(array)):
        # Whole-pixel offsets in sub-pixel bins would leave every other bin empty.
        step = 1.0
    # The outermost bin centre sits at (half - 0.5) * step >= reach.
    return np.arange(bins + 1, dtype=np.float64) * step - half * step


def distribution(values: npt.ArrayLike, edges: npt.ArrayLike) -> Distribution:
    """Statistics and a histogram of ``values`` over ``edges``.

    Args:
        values: ``(N,)`` values, N >= 1.
        edges: ``(B + 1,)`` increasing bin edges; values beyond them count in the end bins.

    Returns:
        The distribution.

    Raises:
        ValueError: ``values`` is empty.

    >>> d = distribution([0.6, 0.8, 0.8, 1.0], [0.5, 0.75, 1.0])
    >>> d.counts, d.mean, d.median
    ((1, 3), 0.8, 0.8)
    """
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    bounds = np.asarray(edges, dtype=np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError("Expected at least one value")
    # searchsorted right: edges[i] <= v < edges[i + 1]; the right end joins the last bin.
    bins = np.clip(np.searchsorted(bounds, array, side="right") - 1, 0, bounds.size - 2)
    counts = np.bincount(bins, minlength=bounds.size - 1)
    if array.size == 1:
        # One value is every statistic (numpy's own answer, without its machinery: classes
        # with a single match are common when there are tens of thousands of classes).
        value = float(array[0])
        return Distribution(
            count=1,
            mean=value,
            std=0.0,
            median=value,
            p05=value,
            p95=value,
            minimum=value,
            maximum=value,
            edges=tuple(float(e) for e in bounds),
            counts=tuple(int(c) for c in counts),
        )
    return Distribution(
        count=int(array.size),
        mean=float(np.mean(array)),
        std=float(np.std(array)),
        median=float(np.median(array)),
        p05=float(np.percentile(array, 5)),
        p95=float(np.percentile(array, 95)),
        minimum=float(np.min(array)),
        maximum=float(np.max(array)),
        edges=tuple(float(e) for e in bounds),
        counts=tuple(int(c) for c in counts),
    )


def _tightness_of(
    name: str | None, pairs: Sequence[tuple[Box, Box, float]], threshold: float
) -> Tightness:
    if not pairs:
        return Tightness(name, 0, None, None, None, None, None)
    gt = _boxes([g for g, _, _ in pairs])
    pred = _boxes([p for _, p, _ in pairs])
    iou = np.array([v for _, _, v in pairs], dtype=np.float64)
    offsets = {
        "left": gt[:, 0] - pred[:, 0],
        "top": gt[:, 1] - pred[:, 1],
        "right": pred[:, 2] - gt[:, 2],
        "bottom": pred[:, 3] - gt[:, 3],
    }
    edges = offset_edges(np.concatenate(list(offsets.values())))
    return Tightness(
        name=name,
        pairs=len(pairs),
        iou=distribution(iou, np.linspace(threshold, 1.0, IOU_BINS + 1)),
        left=distribution(offsets["left"], edges),
        top=distribution(offsets["top"], edges),
        right=distribution(offsets["right"], edges),
        bottom=distribution(offsets["bottom"], edges),
    )


def tightness(evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet) -> Tightness:
    """IoU and signed edge offsets of every true positive, overall and per class.

    The four edges share one set of bins (so their histograms compare at a glance); the
    IoU bins run from the threshold to 1.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.

    Returns:
        The tightness over every class (``name`` None) with one record per class in
        ``classes``.

    Raises:
        InputError: An evaluated image is not in ``gt`` or ``pred``.
    """
    pairs: list[tuple[Box, Box, float]] = []
    by_class: dict[str, list[tuple[Box, Box, float]]] = {c.name: [] for c in evaluation.classes}
    for image in _images(evaluation, gt, pred):
        if image.pred is None:
            continue
        for m in image.result.matches:
            if m.outcome == "tp" and m.gt_index is not None and m.pred_index is not None:
                pair = (image.gt.boxes[m.gt_index], image.pred.boxes[m.pred_index], m.iou)
                pairs.append(pair)
                by_class[m.name].append(pair)
    threshold = evaluation.conventions.iou_threshold
    overall = _tightness_of(None, pairs, threshold)
    classes = tuple(_tightness_of(name, by_class[name], threshold) for name in sorted(by_class))
    return replace(overall, classes=classes)


# Everything together -------------------------------------------------------------------


def error_analysis(
    evaluation: Evaluation,
    gt: AnnotationSet,
    pred: AnnotationSet,
    background_iou: float = DEFAULT_BACKGROUND_IOU,
    cost: bool = True,
) -> ErrorAnalysis:
    """Error types, their mAP cost, the confusion matrix and tightness of one evaluation.

    Args:
        evaluation: The evaluation of ``pred`` against ``gt``.
        gt: The ground truth it was computed from.
        pred: The predictions it was computed from.
        background_iou: The background threshold (TIDE's default 0.1).
        cost: Measure the mAP cost of each type (one more evaluation per type present).

    Returns:
        The analysis.

    Raises:
        InputError: ``background_iou`` is outside ``[0, iou_threshold]``, or an evaluated
            image is not in ``gt`` or ``pred``.
    """
    images = error_boxes(evaluation, gt, pred, background_iou)
    by_class: dict[str, list[ErrorBox]] = {c.name: [] for c in evaluation.classes}
    for image in images:
        for box in image.boxes:
            by_class[box.name].append(box)
    return ErrorAnalysis(
        background_iou=background_iou,
        summary=_count(b for image in images for b in image.boxes),
        classes=tuple(ClassErrors(name, _count(by_class[name])) for name in sorted(by_class)),
        images=images,
        cost=map_cost(evaluation, gt, pred, images) if cost else None,
        confusion=confusion_matrix(evaluation, gt, pred),
        tightness=tightness(evaluation, gt, pred),
    )

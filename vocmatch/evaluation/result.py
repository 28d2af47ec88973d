"""What an evaluation finds: the records of :class:`Evaluation` and the helpers that build
them (totals, per-class counts, pycocotools' summary, notes on the input).

:mod:`vocmatch.evaluation.scoring` re-exports every name here; this module only holds them
below the evaluator, so that the evaluator (:mod:`vocmatch.evaluation.engine`) and the entry
points that call it share one set of result types.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from vocmatch.core.ap import Curve
from vocmatch.core.model import SkippedFile
from vocmatch.core.protocol import Conventions
from vocmatch.errors import Message, Option

if TYPE_CHECKING:
    # Built where they are used: the box-by-box records, the coco and ultralytics numbers,
    # what a preparation removed.
    from vocmatch.evaluation.box_outcomes import Match
    from vocmatch.evaluation.preparation import Removed
    from vocmatch.evaluation.summary_stats import CocoStats, UltralyticsStats

__all__ = [
    "AREA_NAMES",
    "COCO_AREAS",
    "ENORMOUS_COORDINATE",
    "ODD_VALUES",
    "ClassResult",
    "CocoSummary",
    "Evaluation",
    "ImageResult",
    "Outcome",
    "Summary",
    "SweepResult",
    "case_notes",
    "class_result",
    "coco_summarize",
    "finish",
    "input_notes",
    "odd_value_counts",
    "odd_value_notes",
    "score_notes",
    "shape_notes",
    "summary_map",
]

FloatArray = npt.NDArray[np.float64]

Outcome = Literal["tp", "fp", "fn", "ignored"]

# pycocotools' areaRng: all, small, medium, large (areas in pixels, both ends inclusive).
COCO_AREAS: tuple[tuple[float, float], ...] = (
    (0.0, 1e5**2),
    (0.0, 32.0**2),
    (32.0**2, 96.0**2),
    (96.0**2, 1e5**2),
)
#: The names of :data:`COCO_AREAS`, in order.
AREA_NAMES = ("all", "small", "medium", "large")


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Counts at one IoU threshold."""

    threshold: float
    tp: int
    fp: int
    fn: int


@dataclass(frozen=True, slots=True)
class ImageResult:
    """One image's result.

    Attributes:
        key: The pairing key (relative path without extension).
        gt_path: The ground-truth file.
        pred_path: The prediction file, or None when it is missing (all objects are FN).
        gt: Ground-truth objects that count (not ignored).
        gt_ignored: Ignored ground-truth objects (``difficult``).
        pred: Predictions.
        tp: True positives at the threshold.
        fp: False positives at the threshold.
        fn: Missed ground truth at the threshold.
        mean_iou: Mean IoU of the true positives, None without any.
        sweep: Counts at 0.50, 0.75 and 0.95.
        matches: Every box's outcome, predictions in file order then missed ground truth.
        pred_ignored: Predictions matched to an ignored (``difficult``) object.
    """

    key: str
    gt_path: str
    pred_path: str | None
    gt: int
    gt_ignored: int
    pred: int
    tp: int
    fp: int
    fn: int
    mean_iou: float | None
    sweep: tuple[SweepResult, ...]
    matches: tuple[Match, ...] = field(repr=False, default=())
    pred_ignored: int = 0

    @property
    def errors(self) -> int:
        """FP + FN: how far the image is from perfect at the threshold."""
        return self.fp + self.fn


@dataclass(frozen=True, slots=True)
class ClassResult:
    """One class's result over the dataset.

    Attributes:
        name: Class name.
        gt: Ground-truth objects that count.
        gt_ignored: Ignored ground-truth objects.
        pred: Predictions (beyond ``max_dets`` not counted).
        tp: True positives at the threshold.
        fp: False positives at the threshold.
        fn: Missed ground truth at the threshold.
        precision: TP / (TP + FP); None without predictions.
        recall: TP / GT; None without ground truth.
        f1: Harmonic mean of precision and recall; None when either is None.
        ap: Average precision under the protocol; None without ground truth or without
            scores.
        curve: The precision/recall curve at the threshold; None without scores.
        in_map: The class is averaged into mAP (it has ground truth).
        pred_ignored: Predictions matched to an ignored (``difficult``) object: neither TP
            nor FP, and not in ``pred`` minus TP and FP by accident.
        ap50: Under protocols averaging AP over IoU thresholds (``coco``), the AP at 0.50.
        ap75: Likewise at 0.75.
    """

    name: str
    gt: int
    gt_ignored: int
    pred: int
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    ap: float | None
    curve: Curve | None = field(repr=False, default=None)
    in_map: bool = True
    pred_ignored: int = 0
    ap50: float | None = None
    ap75: float | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """Dataset totals.

    Attributes:
        images: Images evaluated.
        gt: Ground-truth objects that count.
        pred: Predictions.
        tp: True positives at the threshold.
        fp: False positives.
        fn: Missed ground truth.
        precision: Micro precision; None without predictions.
        recall: Micro recall; None without ground truth.
        f1: Micro F1; None when precision or recall is None.
        map: Mean AP over the classes with ground truth (for ``coco``, AP over
            0.50:0.95); None without scores or classes.
        skipped: Files that could not be read.
        missing_pred: Ground-truth images without a prediction file.
        orphan_pred: Prediction files without a ground-truth file (not evaluated).
        pred_ignored: Predictions matched to an ignored (``difficult``) object.
    """

    images: int
    gt: int
    pred: int
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    map: float | None
    skipped: int
    missing_pred: int
    orphan_pred: int
    pred_ignored: int = 0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Everything an evaluation found.

    Attributes:
        conventions: The conventions in force.
        summary: Dataset totals.
        classes: Per-class results, sorted by name.
        images: Per-image results, sorted by key.
        skipped: Files that could not be read, each with its error.
        missing_pred: Keys of ground-truth images with no prediction file.
        orphan_pred: Prediction files with no ground-truth file.
        coco: pycocotools' 12 numbers under the ``coco`` summary.
        ultralytics: The ``ultralytics`` package's P, R, mAP50 and mAP50-95 under the
            ``ultralytics`` summary (``summary.map`` is its mAP50-95).
        notes: Things the user should know about the numbers.
        removed: What a preparation of the predictions removed before matching, per class
            and step (None when none was asked for).

    Example:
        >>> from vocmatch.evaluation.scoring import evaluate_directories
        >>> evaluation = evaluate_directories("fixtures/demo/gt", "fixtures/demo/pred")
        >>> evaluation.summary.tp, evaluation.summary.fp, evaluation.missing_pred
        (10, 5, ('street_05',))
    """

    conventions: Conventions
    summary: Summary
    classes: tuple[ClassResult, ...]
    images: tuple[ImageResult, ...]
    skipped: tuple[SkippedFile, ...] = ()
    missing_pred: tuple[str, ...] = ()
    orphan_pred: tuple[str, ...] = ()
    coco: CocoStats | None = None
    notes: tuple[str, ...] = ()
    removed: Removed | None = None
    ultralytics: UltralyticsStats | None = None


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    total = precision + recall
    return 2 * precision * recall / total if total > 0 else 0.0


class CocoSummary:
    """pycocotools' ``summarize``, fed one class and area range at a time.

    Each of the 12 numbers is a mean over the entries that are not -1 (class-area pairs
    without ground truth). While they are few, the entries are kept and averaged as
    pycocotools averages its ``(T, 101, K, A, M)`` array (the same values in the same order,
    so the same numbers to the bit). Past :data:`COCO_KEPT_VALUES` of them (tens of
    thousands of classes: pycocotools' array alone would take gigabytes), each class's
    entries are summed on arrival and the class sums added exactly (``math.fsum``): the
    numbers then differ from pycocotools' by the rounding of its own sum, about 1e-16.

    Args:
        thresholds: ``(T,)`` the IoU thresholds (0.5 and 0.75 give AP50 and AP75).
    """

    # (statistic, area index, maxDets index, thresholds: all, 0.5 or 0.75), in
    # pycocotools' order; precision for the APs, recall for the ARs.
    _AP = (("AP", 0, 2, "all"), ("AP50", 0, 2, "50"), ("AP75", 0, 2, "75"),
           ("APs", 1, 2, "all"), ("APm", 2, 2, "all"), ("APl", 3, 2, "all"))  # fmt: skip
    _AR = (("AR1", 0, 0), ("AR10", 0, 1), ("AR100", 0, 2), ("ARs", 1, 2), ("ARm", 2, 2),
           ("ARl", 3, 2))  # fmt: skip

    def __init__(self, thresholds: FloatArray) -> None:
        self._levels = {
            "all": np.arange(thresholds.size),
            "50": np.nonzero(np.isclose(thresholds, 0.5))[0],
            "75": np.nonzero(np.isclose(thresholds, 0.75))[0],
        }
        names = [name for name, *_ in (*self._AP, *self._AR)]  # CocoStats' fields
        self._kept: dict[str, list[FloatArray]] | None = {name: [] for name in names}
        self._size = 0
        self._sums: dict[str, list[float]] = {name: [] for name in names}
        self._counts = dict.fromkeys(names, 0)

    def _add(self, name: str, values: FloatArray) -> None:
        if self._kept is not None:
            self._kept[name].append(values)
            self._size += values.size
            if self._size > COCO_KEPT_VALUES:
                kept, self._kept = self._kept, None
                for each, blocks in kept.items():
                    for block in blocks:
                        self._sum(each, block)
            return
        self._sum(name, values)

    def _sum(self, name: str, values: FloatArray) -> None:
        valid = values[values > -1]
        if valid.size:
            self._sums[name].append(float(np.sum(valid)))
            self._counts[name] += int(valid.size)

    def add(self, area: int, precision: FloatArray, recall: FloatArray) -> None:
        """One class in one area range; classes in order.

        Args:
            area: Index of the area range (all, small, medium, large).
            precision: ``(T, 101, M)`` interpolated precision (-1 without ground truth).
            recall: ``(T, M)`` recall.
        """
        for name, a, m, levels in self._AP:
            if a == area:
                self._add(name, precision[self._levels[levels]][:, :, m])
        for name, a, m in self._AR:
            if a == area:
                self._add(name, recall[:, m])

    def _mean(self, name: str) -> float:
        if self._kept is not None:
            blocks = self._kept[name]
            if not blocks:
                return -1.0
            # Classes side by side, last: pycocotools' array in its own order.
            values = np.stack(blocks, axis=-1)
            valid = values[values > -1]
            return float(np.mean(valid)) if valid.size else -1.0
        count = self._counts[name]
        return math.fsum(self._sums[name]) / count if count else -1.0

    def stats(self) -> CocoStats:
        """The 12 numbers; -1 where no class has ground truth."""
        from vocmatch.evaluation.summary_stats import CocoStats

        return CocoStats(**{name: self._mean(name) for name in CocoStats.__slots__})


#: Entries of pycocotools' precision and recall arrays :class:`CocoSummary` keeps to
#: average them exactly as pycocotools does (8 bytes each).
COCO_KEPT_VALUES = 1 << 24


def coco_summarize(precision: FloatArray, recall: FloatArray, thresholds: FloatArray) -> CocoStats:
    """pycocotools' ``summarize``: the 12 numbers from ``(T, 101, K, A, M)`` precision and
    ``(T, K, A, M)`` recall, -1 marking class-area pairs without ground truth (the sums
    of :class:`CocoSummary`, class by class)."""
    summary = CocoSummary(thresholds)
    for k in range(precision.shape[2]):
        for a in range(precision.shape[3]):
            if (precision[:, :, k, a, :] > -1).any() or (recall[:, k, a, :] > -1).any():
                summary.add(a, precision[:, :, k, a, :], recall[:, k, a, :])
    return summary.stats()


def score_notes(scored: bool, unscored: int, any_pred: bool, files: int | None = None) -> list[str]:
    """Remarks on how scores shape the numbers.

    Args:
        scored: Some prediction has a score.
        unscored: Predictions without a score.
        any_pred: There is at least one prediction.
        files: Prediction files holding the unscored predictions, when counted.

    Returns:
        The notes, possibly none.
    """
    notes = []
    if scored and unscored:
        where = f" in {_plural(files, 'file')}" if files is not None else ""
        verb, rank = ("has", "it ranks") if unscored == 1 else ("have", "they rank")
        notes.append(
            f"{_plural(unscored, 'prediction')}{where} {verb} no score; {rank} last for AP"
        )
    if not scored and any_pred:
        notes.append("predictions carry no scores: paired highest IoU first; AP is not defined")
    return notes


def shape_notes(shaped: int, conventions: Conventions) -> list[str]:
    """A remark when rotated boxes or polygons meet pixel-inclusive conventions.

    Args:
        shaped: Evaluated objects that are a rotated box or a polygon.
        conventions: The conventions in force.

    Returns:
        The note, or none.

    >>> from vocmatch.core.protocol import protocol
    >>> shape_notes(2, protocol("voc07"))[0].split(";")[0]
    '2 objects are rotated boxes or polygons'
    """
    if not shaped or not conventions.pixel_inclusive:
        return []
    verb = "is a rotated box or polygon" if shaped == 1 else "are rotated boxes or polygons"
    return [
        f"{_plural(shaped, 'object')} {verb}; their overlaps use exact regions with continuous"
        " areas, as pixel-inclusive (+1) areas apply only between plain boxes"
    ]


#: Coordinates beyond this many pixels from the origin are noted: no image is that large.
ENORMOUS_COORDINATE = 1_000_000.0


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def _value_note(what: str, per_file: Mapping[str, int], noun: str) -> str:
    """``N boxes in M files <what> (first: path)`` from each file's count of such boxes."""
    files = sorted(per_file)
    total = sum(per_file.values())
    many = "predictions" if noun == "prediction" else "boxes"
    count = _plural(total, noun, many)
    verb = "has" if total == 1 else "have"
    return f"{count} in {_plural(len(files), 'file')} {verb} {what} (first: {files[0]})"


#: The kinds of odd value :func:`input_notes` remarks on: what is said, and of what.
ODD_VALUES: tuple[tuple[str, str], ...] = (
    ("negative coordinates; kept, as a box may extend past the image edge", "box"),
    (f"coordinates beyond {ENORMOUS_COORDINATE:,.0f} px; kept", "box"),
    ("a score outside [0, 1]; ranked as given", "prediction"),
)


def odd_value_counts(
    paths: Sequence[str],
    box_file: npt.ArrayLike,
    boxes: npt.ArrayLike,
    scores: npt.ArrayLike,
) -> tuple[dict[str, int], ...]:
    """For each kind of :data:`ODD_VALUES`, how many boxes of each file have it: what
    :func:`odd_value_notes` words, kept as counts so that those of disjoint files add up.

    Args:
        paths: The evaluated files (ground truth and predictions).
        box_file: ``(N,)`` index into ``paths`` of each box.
        boxes: ``(N, 4)`` corner boxes.
        scores: ``(N,)`` scores, NaN for boxes without one.

    Returns:
        Per kind, the count of each file that has any.
    """
    index = np.asarray(box_file, dtype=np.int64).reshape(-1)
    corners = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    score = np.asarray(scores, dtype=np.float64).reshape(-1)
    found = (
        corners.min(axis=1, initial=0.0) < 0,
        np.abs(corners).max(axis=1, initial=0.0) > ENORMOUS_COORDINATE,
        ~np.isnan(score) & ((score < 0.0) | (score > 1.0)),
    )
    counts = []
    for hits in found:
        per_file: dict[str, int] = {}
        for i in index[hits].tolist():
            per_file[paths[i]] = per_file.get(paths[i], 0) + 1
        counts.append(per_file)
    return tuple(counts)


def odd_value_notes(counts: Sequence[Mapping[str, int]]) -> list[str]:
    """The notes of :func:`odd_value_counts`' counts: each kind once, with a count and the
    first file (in sorted order) it occurs in."""
    return [
        _value_note(what, per_file, noun)
        for (what, noun), per_file in zip(ODD_VALUES, counts, strict=True)
        if per_file
    ]


def input_notes(
    paths: Sequence[str],
    box_file: npt.ArrayLike,
    boxes: npt.ArrayLike,
    scores: npt.ArrayLike,
) -> list[str]:
    """Remarks on legal but suspicious values in the evaluated files.

    Negative coordinates (a box may extend past the image edge), coordinates beyond
    :data:`ENORMOUS_COORDINATE` and scores outside [0, 1] are evaluated as given; each kind
    is noted once, with a count and the first file (in sorted order) it occurs in.

    Args:
        paths: The evaluated files (ground truth and predictions).
        box_file: ``(N,)`` index into ``paths`` of each box.
        boxes: ``(N, 4)`` corner boxes.
        scores: ``(N,)`` scores, NaN for boxes without one.

    Returns:
        The notes, possibly none.

    >>> for note in input_notes(["a.xml"], [0, 0], [[-1, 0, 5, 5], [0, 0, 5, 5]], [1.5, 1]):
    ...     print(note.split(";")[0])
    1 box in 1 file has negative coordinates
    1 prediction in 1 file has a score outside [0, 1]
    """
    return odd_value_notes(odd_value_counts(paths, box_file, boxes, scores))


def case_notes(names: Iterable[str], folded: bool = False) -> list[str]:
    """A remark on class names that differ only in case, such as ``Car`` and ``car``.

    Surrounding whitespace is already stripped by the parser, so ``car `` is ``car``.

    Args:
        names: Every class name read, repeats allowed.
        folded: The names are lower-cased before matching.

    Returns:
        One note listing each group of variants, or none.

    >>> [note] = case_notes(["Car", "car", "dog", "CAR"])
    >>> note.split(";")[0]
    'class names differ only in case: CAR/Car/car'
    >>> case_notes(["Car", "car"], folded=True)
    ['class names folded to lower case: Car/car as car']
    """
    variants: dict[str, set[str]] = {}
    for name in names:
        variants.setdefault(name.lower(), set()).add(name)
    groups = [(low, sorted(found)) for low, found in sorted(variants.items()) if len(found) > 1]
    if not groups:
        return []
    if folded:
        listed = ", ".join(f"{'/'.join(found)} as {low}" for low, found in groups)
        return [f"class names folded to lower case: {listed}"]
    listed = ", ".join("/".join(found) for _, found in groups)
    return [
        Message(
            f"class names differ only in case: {listed}; counted as different classes (fold "
            "them with ",
            Option("fold_case", True),
            ")",
        )
    ]


def class_result(
    name: str,
    n_gt: int,
    n_ignored: int,
    n_pred: int,
    tp: int,
    fp: int,
    fn: int,
    ap: float | None,
    curve: Curve | None,
    *,
    pred_ignored: int = 0,
    ap50: float | None = None,
    ap75: float | None = None,
) -> ClassResult:
    """A class's record from its counts: precision, recall and F1 follow from them."""
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, n_gt)
    return ClassResult(
        name=name,
        gt=n_gt,
        gt_ignored=n_ignored,
        pred=n_pred,
        tp=tp,
        fp=fp,
        fn=fn,
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
        ap=ap,
        curve=curve,
        in_map=n_gt > 0,
        pred_ignored=pred_ignored,
        ap50=ap50,
        ap75=ap75,
    )


def summary_map(
    classes: Sequence[ClassResult],
    coco: CocoStats | None,
    ultralytics: UltralyticsStats | None = None,
) -> float | None:
    """The summary's mAP: the ``ultralytics`` package's mAP50-95, pycocotools' AP, or the
    mean AP of the classes averaged (None where it is undefined: no ground truth)."""
    if ultralytics is not None:
        # Without ground truth mAP is undefined, whatever the package's 0.
        has_gt = any(c.gt > 0 for c in classes)
        return ultralytics.map50_95 if has_gt else None
    if coco is not None:
        return coco.AP if coco.AP > -1 else None
    averaged = [c.ap for c in classes if c.in_map and c.ap is not None]
    return float(np.mean(averaged)) if averaged else None


def finish(
    conv: Conventions,
    images: Sequence[ImageResult],
    classes: Sequence[ClassResult],
    coco: CocoStats | None,
    skipped: tuple[SkippedFile, ...],
    missing: tuple[str, ...],
    orphan: tuple[str, ...],
    notes: Sequence[str],
    ultralytics: UltralyticsStats | None = None,
) -> Evaluation:
    """Totals, mAP and the remaining notes around per-image and per-class results."""
    all_notes = list(notes)
    not_averaged = [c.name for c in classes if not c.in_map]
    if not_averaged:
        all_notes.append(
            "classes only in predictions (all FP, not averaged into mAP): "
            + ", ".join(not_averaged)
        )
    map_value = summary_map(classes, coco, ultralytics)
    tp = sum(i.tp for i in images)
    fp = sum(i.fp for i in images)
    fn = sum(i.fn for i in images)
    n_gt = sum(i.gt for i in images)
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, n_gt)
    summary = Summary(
        images=len(images),
        gt=n_gt,
        pred=sum(i.pred for i in images),
        tp=tp,
        fp=fp,
        fn=fn,
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
        map=map_value,
        skipped=len(skipped),
        missing_pred=len(missing),
        orphan_pred=len(orphan),
        pred_ignored=sum(i.pred_ignored for i in images),
    )
    return Evaluation(
        conventions=conv,
        summary=summary,
        classes=tuple(classes),
        images=tuple(images),
        skipped=skipped,
        missing_pred=missing,
        orphan_pred=orphan,
        coco=coco,
        notes=tuple(all_notes),
        ultralytics=ultralytics,
    )

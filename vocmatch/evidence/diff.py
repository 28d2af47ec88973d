"""What changed between two evaluations of the same ground truth: two models, or two
labelling passes, run A (the reference) and run B (the candidate).

Per class, the change in AP, precision, recall and F1, and in TP, FP and FN. Per image, what
got better and what got worse at the evaluation threshold:

* **new FN**: ground truth missed in B that A found; **fixed FN**: missed in A, found in B.
  Ground truth is the same in both runs, so an object is the same object (its index in its
  file).
* **new FP** and **removed FP**: predictions are different boxes in each run, so a false
  positive of A and one of B are the *same* error when they have the same class and their
  IoU passes the evaluation threshold; they are paired one-to-one, highest IoU first (ties
  in file order). A false positive of B left unpaired is new; one of A left unpaired was
  removed (it went away, or became a true positive).

An image's ``net`` is what got better minus what got worse; the worst regressions come first
(lowest net, then most new errors, then key).

Regression gates over a diff are :mod:`vocmatch.evidence.regression_gates`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.core.iou import iou_matrix
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import Conventions
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import ClassResult, Evaluation, ImageResult, Summary
from vocmatch.readers.parse import AnnotationSet

__all__ = [
    "Change",
    "ClassDiff",
    "CountChange",
    "EvaluationDiff",
    "ImageDiff",
    "ObjectRef",
    "SummaryDiff",
    "evaluation_diff",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Change:
    """A metric in run A and in run B; None where it is undefined.

    >>> Change(0.5, 0.75).delta
    0.25
    """

    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        """``b - a``, or None when either is undefined."""
        if self.a is None or self.b is None:
            return None
        return self.b - self.a


@dataclass(frozen=True, slots=True)
class CountChange:
    """A count in run A and in run B."""

    a: int
    b: int

    @property
    def delta(self) -> int:
        """``b - a``."""
        return self.b - self.a


@dataclass(frozen=True, slots=True)
class SummaryDiff:
    """The dataset totals of both runs."""

    map: Change
    precision: Change
    recall: Change
    f1: Change
    tp: CountChange
    fp: CountChange
    fn: CountChange


@dataclass(frozen=True, slots=True)
class ClassDiff:
    """One class in both runs (a class absent from one run has no counts there).

    Attributes:
        name: Class name.
        gt: Ground-truth objects that count (the same in both runs).
        ap: AP under the protocol.
        precision: Precision at the threshold.
        recall: Recall at the threshold.
        f1: F1 at the threshold.
        tp: True positives.
        fp: False positives.
        fn: Missed ground truth.
    """

    name: str
    gt: int
    ap: Change
    precision: Change
    recall: Change
    f1: Change
    tp: CountChange
    fp: CountChange
    fn: CountChange


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One box of an image: its index in its file's objects (from 0) and its class.

    >>> str(ObjectRef(1, "bowl"))
    'bowl#1'
    """

    index: int
    name: str

    def __str__(self) -> str:
        return f"{self.name}#{self.index}"


@dataclass(frozen=True, slots=True)
class ImageDiff:
    """What changed in one image.

    Attributes:
        key: The image's key.
        new_fn: Ground truth missed in B but found in A.
        fixed_fn: Ground truth missed in A and found in B.
        new_fp: Predictions of B (indexed in B's file) that are false positives with no
            counterpart among A's.
        removed_fp: Predictions of A (indexed in A's file) that were false positives with no
            counterpart in B.
        tp: True positives.
        fp: False positives.
        fn: Missed ground truth.
    """

    key: str
    new_fn: tuple[ObjectRef, ...]
    fixed_fn: tuple[ObjectRef, ...]
    new_fp: tuple[ObjectRef, ...]
    removed_fp: tuple[ObjectRef, ...]
    tp: CountChange
    fp: CountChange
    fn: CountChange

    @property
    def worse(self) -> int:
        """New FN plus new FP."""
        return len(self.new_fn) + len(self.new_fp)

    @property
    def better(self) -> int:
        """Fixed FN plus removed FP."""
        return len(self.fixed_fn) + len(self.removed_fp)

    @property
    def net(self) -> int:
        """Better minus worse: negative for a regression."""
        return self.better - self.worse

    @property
    def changed(self) -> bool:
        """Anything got better or worse."""
        return self.better > 0 or self.worse > 0


@dataclass(frozen=True, slots=True)
class EvaluationDiff:
    """Run B against run A on the same ground truth.

    Attributes:
        conventions: The conventions of both evaluations.
        a_name: How run A is called in reports (its prediction directory, say).
        b_name: How run B is called.
        summary: Dataset totals.
        classes: Per class, sorted by name (every class of either run).
        images: Per image evaluated in both runs, worst regression first.
        only_a: Keys of images evaluated only in A (B's file could not be read).
        only_b: Keys of images evaluated only in B.
    """

    conventions: Conventions
    a_name: str
    b_name: str
    summary: SummaryDiff
    classes: tuple[ClassDiff, ...]
    images: tuple[ImageDiff, ...]
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()

    @property
    def worse(self) -> int:
        """New FN plus new FP over every image."""
        return sum(i.worse for i in self.images)

    @property
    def better(self) -> int:
        """Fixed FN plus removed FP over every image."""
        return sum(i.better for i in self.images)


def _summary(a: Summary, b: Summary) -> SummaryDiff:
    return SummaryDiff(
        map=Change(a.map, b.map),
        precision=Change(a.precision, b.precision),
        recall=Change(a.recall, b.recall),
        f1=Change(a.f1, b.f1),
        tp=CountChange(a.tp, b.tp),
        fp=CountChange(a.fp, b.fp),
        fn=CountChange(a.fn, b.fn),
    )


def _class(name: str, a: ClassResult | None, b: ClassResult | None) -> ClassDiff:
    def get(result: ClassResult | None, field: str) -> float | None:
        return None if result is None else getattr(result, field)

    def count(result: ClassResult | None, field: str) -> int:
        return 0 if result is None else int(getattr(result, field))

    either = a if a is not None else b
    return ClassDiff(
        name=name,
        gt=either.gt if either is not None else 0,
        ap=Change(get(a, "ap"), get(b, "ap")),
        precision=Change(get(a, "precision"), get(b, "precision")),
        recall=Change(get(a, "recall"), get(b, "recall")),
        f1=Change(get(a, "f1"), get(b, "f1")),
        tp=CountChange(count(a, "tp"), count(b, "tp")),
        fp=CountChange(count(a, "fp"), count(b, "fp")),
        fn=CountChange(count(a, "fn"), count(b, "fn")),
    )


def _fn(image: ImageResult) -> dict[int, str]:
    return {
        m.gt_index: m.name for m in image.matches if m.outcome == "fn" and m.gt_index is not None
    }


def _fp(image: ImageResult) -> dict[int, str]:
    return {
        m.pred_index: m.name
        for m in image.matches
        if m.outcome == "fp" and m.pred_index is not None
    }


def _refs(names: dict[int, str], indices: Iterable[int]) -> tuple[ObjectRef, ...]:
    return tuple(ObjectRef(i, names[i]) for i in sorted(indices))


def _passes(value: float, conventions: Conventions) -> bool:
    threshold = conventions.iou_threshold
    return value > threshold if conventions.strict_threshold else value >= threshold


def _as_array(boxes: Sequence[Box]) -> FloatArray:
    if not boxes:
        return np.zeros((0, 4), dtype=np.float64)
    return np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64)


def _paired_fp(
    fp_a: list[int],
    fp_b: list[int],
    pred_a: ImageAnnotation | None,
    pred_b: ImageAnnotation | None,
    conventions: Conventions,
) -> tuple[set[int], set[int]]:
    """The false positives of A and of B that are the same error (same class, IoU passes)."""
    if not fp_a or not fp_b or pred_a is None or pred_b is None:
        return set(), set()
    boxes_a = [pred_a.boxes[j] for j in fp_a]
    boxes_b = [pred_b.boxes[j] for j in fp_b]
    # Rows are A's boxes, columns B's: the same (N, M) layout as every IoU matrix here.
    iou = iou_matrix(_as_array(boxes_a), _as_array(boxes_b), conventions.pixel_inclusive)
    candidates = sorted(
        (-float(iou[r, c]), r, c)
        for r in range(len(fp_a))
        for c in range(len(fp_b))
        if boxes_a[r].name == boxes_b[c].name and _passes(float(iou[r, c]), conventions)
    )
    paired_a: set[int] = set()
    paired_b: set[int] = set()
    for _, r, c in candidates:
        if r in paired_a or c in paired_b:
            continue
        paired_a.add(r)
        paired_b.add(c)
    return {fp_a[r] for r in paired_a}, {fp_b[c] for c in paired_b}


def _image(
    a: ImageResult,
    b: ImageResult,
    pred_a: ImageAnnotation | None,
    pred_b: ImageAnnotation | None,
    conventions: Conventions,
) -> ImageDiff:
    fn_a, fn_b = _fn(a), _fn(b)
    fp_a, fp_b = _fp(a), _fp(b)
    same_a, same_b = _paired_fp(sorted(fp_a), sorted(fp_b), pred_a, pred_b, conventions)
    return ImageDiff(
        key=a.key,
        new_fn=_refs(fn_b, fn_b.keys() - fn_a.keys()),
        fixed_fn=_refs(fn_a, fn_a.keys() - fn_b.keys()),
        new_fp=_refs(fp_b, fp_b.keys() - same_b),
        removed_fp=_refs(fp_a, fp_a.keys() - same_a),
        tp=CountChange(a.tp, b.tp),
        fp=CountChange(a.fp, b.fp),
        fn=CountChange(a.fn, b.fn),
    )


def worst_first(images: Iterable[ImageDiff]) -> list[ImageDiff]:
    """Images by net change (lowest first), then most new errors, then key."""
    return sorted(images, key=lambda i: (i.net, -i.worse, i.key))


def evaluation_diff(
    a: Evaluation,
    b: Evaluation,
    pred_a: AnnotationSet,
    pred_b: AnnotationSet,
    a_name: str = "A",
    b_name: str = "B",
) -> EvaluationDiff:
    """Compare run B with run A, both evaluated against the same ground truth.

    Args:
        a: The evaluation of ``pred_a`` (the reference).
        b: The evaluation of ``pred_b`` (the candidate).
        pred_a: Run A's predictions (to tell one false positive from another).
        pred_b: Run B's predictions.
        a_name: Run A's name in reports.
        b_name: Run B's name in reports.

    Returns:
        The differences, images worst regression first.

    Raises:
        InputError: The evaluations used different conventions, or an image has different
            ground truth in the two (not the same ground-truth set).
    """
    if a.conventions != b.conventions:
        raise InputError("the two evaluations use different conventions; compare like with like")
    images_a = {i.key: i for i in a.images}
    images_b = {i.key: i for i in b.images}
    preds_a = {p.key: p for p in pred_a.annotations}
    preds_b = {p.key: p for p in pred_b.annotations}
    images = []
    for key in sorted(images_a.keys() & images_b.keys()):
        image_a, image_b = images_a[key], images_b[key]
        if (image_a.gt, image_a.gt_ignored, image_a.gt_path) != (
            image_b.gt,
            image_b.gt_ignored,
            image_b.gt_path,
        ):
            raise InputError(f"image {key!r} has different ground truth in the two evaluations")
        images.append(_image(image_a, image_b, preds_a.get(key), preds_b.get(key), a.conventions))
    classes_a = {c.name: c for c in a.classes}
    classes_b = {c.name: c for c in b.classes}
    names = sorted(classes_a.keys() | classes_b.keys())
    return EvaluationDiff(
        conventions=a.conventions,
        a_name=a_name,
        b_name=b_name,
        summary=_summary(a.summary, b.summary),
        classes=tuple(_class(n, classes_a.get(n), classes_b.get(n)) for n in names),
        images=tuple(worst_first(images)),
        only_a=tuple(sorted(images_a.keys() - images_b.keys())),
        only_b=tuple(sorted(images_b.keys() - images_a.keys())),
    )

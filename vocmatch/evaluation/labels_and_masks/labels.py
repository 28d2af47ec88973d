"""Image-level label sets: the classes an image contains, ground truth against predictions.

Each image is reduced to the set of class names of its objects, in the ground truth and in the
predictions, and the two sets are compared: per image by Jaccard and Dice, per class by
counting images, over the dataset by macro and micro IoU. Boxes, positions and scores play no
part. This scores multi-label image tagging, or a detector read as a tagger.

Conventions:

* Names are compared after :func:`~vocmatch.core.label_sets.normalise_labels`: stripped,
  lower-cased and de-duplicated, as the label Jaccard of the core (and ``vocmatch iou
  --labels``) does. A label set is a set of words, so ``Car`` and ``car`` are one tag;
  results show the lower-cased names, and a note lists the spellings that were merged. (Box
  evaluation keeps case unless asked to fold it.)
* Difficult objects, the ``difficult`` option:

  * ``"ignore"`` (default): a class whose objects in an image are all marked difficult is
    neither required nor penalised in that image. The PASCAL VOC devkit's classification
    task does the same: such an image is labelled 0 for the class in ``<class>_<set>.txt``,
    and ``VOCevalcls.m`` counts label-0 images neither as true nor as false positives.
  * ``"count"``: difficult objects are ordinary objects.

* Per class, over images: an image with the class in both sets is a true positive, in the
  predictions only a false positive, in the ground truth only a false negative. Its IoU is
  ``TP / (TP + FP + FN)``.
* Macro IoU is the mean of the per-class IoUs over every class present in the ground truth or
  the predictions, so a class that is only ever predicted counts with IoU 0. Micro IoU is
  ``ΣTP / (ΣTP + ΣFP + ΣFN)`` over all classes.
* An image whose two sets are both empty scores Jaccard and Dice 1.0 and counts in the means:
  predicting nothing for an image with nothing in it is the right answer, and a perfect
  prediction must score 1.0 on a dataset with negative images. (Leaving such images out
  instead would make the mean undefined on a set of negatives only.) It adds nothing to any
  class's counts, so per-class, macro and micro IoU are the same either way.
* Images are paired by key. A ground-truth image without a prediction file has an empty
  predicted set and is listed in ``missing_pred``; a prediction file without ground truth is
  listed in ``orphan_pred`` and not evaluated; an image with an unreadable file is left out
  and the file is in ``skipped``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from vocmatch.core.label_sets import label_overlap, normalise_labels
from vocmatch.core.model import ImageAnnotation, SkippedFile
from vocmatch.errors import InputError
from vocmatch.readers.parse import AnnotationSet

__all__ = [
    "LabelClassResult",
    "LabelDifficult",
    "LabelEvaluation",
    "LabelImageResult",
    "evaluate_label_sets",
    "label_sets",
]

LabelDifficult = Literal["ignore", "count"]
"""How difficult objects enter the ground-truth label sets; see the module docstring."""


@dataclass(frozen=True, slots=True)
class LabelImageResult:
    """The two label sets of one image and how well they agree.

    Attributes:
        key: The pairing key.
        gt_path: The ground-truth file.
        pred_path: The prediction file; None when there is none.
        gt: Ground-truth classes (sorted, lower-case), without ``ignored`` ones.
        pred: Every predicted class (sorted, lower-case).
        ignored: Classes whose ground-truth objects in this image are all difficult, under
            ``difficult="ignore"``: left out of the comparison, also from ``pred``.
        jaccard: ``|gt ∩ pred| / |gt ∪ pred|``; 1.0 when both are empty.
        dice: ``2 |gt ∩ pred| / (|gt| + |pred|)``; 1.0 when both are empty.
    """

    key: str
    gt_path: str
    pred_path: str | None
    gt: tuple[str, ...]
    pred: tuple[str, ...]
    ignored: tuple[str, ...]
    jaccard: float
    dice: float

    @property
    def found(self) -> tuple[str, ...]:
        """Classes in both sets (true positives), sorted."""
        return tuple(name for name in self.gt if name in self.pred)

    @property
    def missed(self) -> tuple[str, ...]:
        """Ground-truth classes not predicted (false negatives), sorted."""
        return tuple(name for name in self.gt if name not in self.pred)

    @property
    def extra(self) -> tuple[str, ...]:
        """Predicted classes not in the ground truth and not ignored (false positives), sorted."""
        return tuple(n for n in self.pred if n not in self.gt and n not in self.ignored)

    @property
    def errors(self) -> int:
        """Missed plus extra classes."""
        return len(self.missed) + len(self.extra)


@dataclass(frozen=True, slots=True)
class LabelClassResult:
    """One class counted over images.

    Attributes:
        name: Class name (lower-case).
        tp: Images with the class in both sets.
        fp: Images with the class predicted but not in the ground truth.
        fn: Images with the class in the ground truth but not predicted.
        ignored: Images where the class was ignored (all its objects difficult).
        iou: ``tp / (tp + fp + fn)``; None when all three are 0 (the class was only ever
            ignored), and then left out of the macro IoU.
    """

    name: str
    tp: int
    fp: int
    fn: int
    ignored: int
    iou: float | None

    @property
    def gt(self) -> int:
        """Images with the class in the ground truth, ``tp + fn``."""
        return self.tp + self.fn

    @property
    def pred(self) -> int:
        """Images with the class predicted and not ignored, ``tp + fp``."""
        return self.tp + self.fp


@dataclass(frozen=True, slots=True)
class LabelEvaluation:
    """Everything a label-set evaluation found.

    Attributes:
        images: Per-image results, sorted by key.
        classes: Per-class results, sorted by name.
        macro_iou: Mean per-class IoU over the classes that have one; None if none has.
        micro_iou: ``ΣTP / (ΣTP + ΣFP + ΣFN)``; None when that is 0 / 0 (no class anywhere).
        mean_jaccard: Mean per-image Jaccard; None without images.
        mean_dice: Mean per-image Dice; None without images.
        exact_match: Share of images whose two sets agree exactly; None without images.
        difficult: The ``difficult`` convention in force.
        skipped: Files that could not be read, each with its error.
        missing_pred: Keys of ground-truth images with no prediction file.
        orphan_pred: Prediction files with no ground-truth file (not evaluated).
        notes: Things the user should know about the numbers.

    Example:
        >>> import vocmatch
        >>> found = vocmatch.evaluate_labels("fixtures/labels/gt", "fixtures/labels/pred")
        >>> airplane = found.classes[0]
        >>> airplane.name, airplane.tp, airplane.fp, airplane.fn, found.micro_iou
        ('airplane', 2, 1, 1, 0.6666666666666666)
    """

    images: tuple[LabelImageResult, ...]
    classes: tuple[LabelClassResult, ...]
    macro_iou: float | None
    micro_iou: float | None
    mean_jaccard: float | None
    mean_dice: float | None
    exact_match: float | None
    difficult: LabelDifficult = "ignore"
    skipped: tuple[SkippedFile, ...] = ()
    missing_pred: tuple[str, ...] = ()
    orphan_pred: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def tp(self) -> int:
        """True positives summed over classes."""
        return sum(c.tp for c in self.classes)

    @property
    def fp(self) -> int:
        """False positives summed over classes."""
        return sum(c.fp for c in self.classes)

    @property
    def fn(self) -> int:
        """False negatives summed over classes."""
        return sum(c.fn for c in self.classes)


def label_sets(
    annotation: ImageAnnotation, difficult: LabelDifficult = "ignore"
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The class names of an annotation, and the classes present only as difficult objects.

    Args:
        annotation: One file's objects.
        difficult: ``"ignore"`` puts a class whose objects are all difficult in the second
            set; ``"count"`` treats difficult objects as ordinary ones.

    Returns:
        ``(names, ignored)``, each normalised and sorted; ``ignored`` is empty under
        ``"count"`` and for predictions (which carry no difficult flag).

    >>> from vocmatch.core.model import Box
    >>> boxes = (Box("Car", 0, 0, 1, 1), Box("dog", 0, 0, 1, 1, difficult=True))
    >>> label_sets(ImageAnnotation("a", "a.xml", boxes))
    (('car',), ('dog',))
    >>> label_sets(ImageAnnotation("a", "a.xml", boxes), "count")
    (('car', 'dog'), ())
    """
    if difficult == "count":
        return normalise_labels(b.name for b in annotation.boxes), ()
    counted = normalise_labels(b.name for b in annotation.boxes if not b.difficult)
    every = normalise_labels(b.name for b in annotation.boxes)
    return counted, tuple(name for name in every if name not in counted)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun if count == 1 else noun + 's'}"


def _case_note(names: Iterable[str]) -> list[str]:
    """A note naming the spellings that lower-casing merged, such as ``Car/car as car``."""
    variants: dict[str, set[str]] = {}
    for name in names:
        variants.setdefault(name.strip().lower(), set()).add(name.strip())
    merged = [(low, sorted(found)) for low, found in sorted(variants.items()) if len(found) > 1]
    if not merged:
        return []
    listed = ", ".join(f"{'/'.join(found)} as {low}" for low, found in merged)
    return [f"class names folded to lower case: {listed}"]


def _image(
    gt: ImageAnnotation, pred: ImageAnnotation | None, difficult: LabelDifficult
) -> LabelImageResult:
    gt_names, ignored = label_sets(gt, difficult)
    pred_names = label_sets(pred, "count")[0] if pred is not None else ()
    if gt_names or any(name not in ignored for name in pred_names):
        overlap = label_overlap(gt_names, (n for n in pred_names if n not in ignored))
        jaccard, dice = overlap.jaccard, overlap.dice
    else:
        # Nothing there and nothing predicted: the right answer (see the module docstring).
        jaccard = dice = 1.0
    return LabelImageResult(
        key=gt.key,
        gt_path=gt.path,
        pred_path=pred.path if pred is not None else None,
        gt=gt_names,
        pred=pred_names,
        ignored=ignored,
        jaccard=jaccard,
        dice=dice,
    )


def _classes(images: Sequence[LabelImageResult]) -> tuple[LabelClassResult, ...]:
    counts: dict[str, list[int]] = {}
    for image in images:
        for kind, names in enumerate((image.found, image.extra, image.missed, image.ignored)):
            for name in names:
                counts.setdefault(name, [0, 0, 0, 0])[kind] += 1
    results = []
    for name in sorted(counts):
        tp, fp, fn, ignored = counts[name]
        union = tp + fp + fn
        results.append(LabelClassResult(name, tp, fp, fn, ignored, tp / union if union else None))
    return tuple(results)


def evaluate_label_sets(
    gt: AnnotationSet, pred: AnnotationSet, difficult: LabelDifficult = "ignore"
) -> LabelEvaluation:
    """Compare the label set of each image with the label set predicted for it.

    Args:
        gt: Ground-truth annotations.
        pred: Predictions; scores, if any, are not used.
        difficult: ``"ignore"`` (PASCAL VOC classification) or ``"count"``; see the module
            docstring.

    Returns:
        The evaluation; see the module docstring for the conventions.

    Raises:
        InputError: ``difficult`` is neither ``"ignore"`` nor ``"count"``.

    >>> from vocmatch.core.model import Box
    >>> def image(key: str, *names: str) -> ImageAnnotation:
    ...     return ImageAnnotation(key, key + ".xml", tuple(Box(n, 0, 0, 1, 1) for n in names))
    >>> gt = AnnotationSet("gt", (image("a", "cat", "dog"),), ())
    >>> pred = AnnotationSet("pred", (image("a", "Cat"),), ())
    >>> result = evaluate_label_sets(gt, pred)
    >>> result.images[0].jaccard, result.macro_iou, result.micro_iou
    (0.5, 0.5, 0.5)
    """
    if difficult not in ("ignore", "count"):
        raise InputError(f"difficult must be 'ignore' or 'count', got {difficult!r}")
    unreadable = {s.key for s in (*gt.skipped, *pred.skipped) if s.key is not None}
    skipped = tuple(sorted((*gt.skipped, *pred.skipped), key=lambda s: (s.path, s.line or 0)))
    pred_by_key = {a.key: a for a in pred.annotations}
    gt_keys = {a.key for a in gt.annotations}
    orphan = tuple(
        a.path for a in pred.annotations if a.key not in gt_keys and a.key not in unreadable
    )
    pairs = [(a, pred_by_key.get(a.key)) for a in gt.annotations if a.key not in unreadable]
    missing = tuple(a.key for a, p in pairs if p is None)
    images = tuple(_image(g, p, difficult) for g, p in pairs)
    classes = _classes(images)

    tp = sum(c.tp for c in classes)
    union = tp + sum(c.fp + c.fn for c in classes)
    notes = [*gt.notes, *pred.notes]
    notes += _case_note(b.name for g, p in pairs for a in (g, p) if a is not None for b in a.boxes)
    scored = sum(1 for _, p in pairs if p is not None for b in p.boxes if b.score is not None)
    if scored:
        verb = "carries" if scored == 1 else "carry"
        notes.append(
            f"{_plural(scored, 'prediction')} {verb} a score; label sets count every prediction "
            "whatever its score"
        )
    empty = sum(1 for i in images if not i.gt and not i.extra)
    if empty:
        notes.append(f"{_plural(empty, 'image')} with no class in either set: Jaccard and Dice 1.0")
    return LabelEvaluation(
        images=images,
        classes=classes,
        macro_iou=_mean([c.iou for c in classes if c.iou is not None]),
        micro_iou=tp / union if union else None,
        mean_jaccard=_mean([i.jaccard for i in images]),
        mean_dice=_mean([i.dice for i in images]),
        exact_match=_mean([1.0 if i.errors == 0 else 0.0 for i in images]),
        difficult=difficult,
        skipped=skipped,
        missing_pred=missing,
        orphan_pred=orphan,
        notes=tuple(notes),
    )

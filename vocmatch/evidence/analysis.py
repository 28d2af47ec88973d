"""Why predictions fail: error types in the style of TIDE, what each costs in mAP, a
confusion matrix between classes and background, and how tight matched boxes are.

Everything is read at the evaluation threshold ``t`` (``Conventions.iou_threshold``; an IoU
"passes" at ``>= t``, or ``> t`` under ``strict_threshold``) from the evaluation's own
matching, so the counts here always add up to its FP and FN. Only ground truth that counts
takes part: ``difficult`` objects that the protocol ignores, and the predictions matched to
them, are neither errors nor targets.

Each part lives in its own module: the error types in :mod:`vocmatch.evidence.error_types`,
their mAP cost in :mod:`vocmatch.evidence.error_cost`, the confusion matrix in
:mod:`vocmatch.evidence.confusion` and tightness in :mod:`vocmatch.evidence.tightness`.
:func:`error_analysis` runs them all on one evaluation, and every public name of the parts
can be imported from here as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evidence.confusion import BACKGROUND, ConfusionMatrix, confusion_matrix
from vocmatch.evidence.error_cost import ErrorCost, map_cost
from vocmatch.evidence.error_types import (
    DEFAULT_BACKGROUND_IOU,
    ERROR_TYPES,
    ClassErrors,
    ErrorBox,
    ErrorCounts,
    ErrorType,
    ImageErrors,
    count_errors,
    error_boxes,
)
from vocmatch.evidence.tightness import (
    Distribution,
    Tightness,
    distribution,
    offset_edges,
    tightness,
)
from vocmatch.readers.parse import AnnotationSet

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
        summary=count_errors(b for image in images for b in image.boxes),
        classes=tuple(ClassErrors(name, count_errors(by_class[name])) for name in sorted(by_class)),
        images=images,
        cost=map_cost(evaluation, gt, pred, images) if cost else None,
        confusion=confusion_matrix(evaluation, gt, pred),
        tightness=tightness(evaluation, gt, pred),
    )

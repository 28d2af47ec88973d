"""Each image's set of class names compared, ground truth against predictions: what ``vocmatch
eval --mode labels`` does between reading its options and rendering, as a library
(:func:`evaluate_labels`, also ``vocmatch.evaluate_labels``).

Its records live apart from :mod:`vocmatch.run.evaluate` so that an evaluation of boxes, which
compares no label sets, does not build them when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vocmatch.errors import RequestError
from vocmatch.run.evaluate import Inputs, PathLike, Progress, ReadOptions
from vocmatch.run.read_stage import read_inputs

if TYPE_CHECKING:
    from vocmatch.evaluation.labels_and_masks.labels import LabelDifficult, LabelEvaluation

__all__ = ["LabelsRequest", "evaluate_labels"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelsRequest(ReadOptions):
    """Each image's set of class names compared, ground truth against predictions: what
    ``vocmatch eval --mode labels`` reads from its options.

    The inputs are read as :class:`ReadOptions` says (a folder of XML files, a VOC folder and
    its split, COCO results, YOLO or devkit files); boxes, positions and scores play no part.
    Names are always stripped and lower-cased (there is no ``fold_case``: ``Car`` and ``car``
    are one tag); see :mod:`vocmatch.evaluation.labels_and_masks.labels` for every convention. A
    ``class_choice`` may rename and select classes, but not make them one
    (``agnostic``): every image's set would be that one class or nothing.

    Attributes:
        gt: A folder of ground-truth XML files, or a VOC folder holding ``Annotations/``.
        pred: The predictions: a folder, or a COCO results file.
        difficult: ``ignore`` (the VOC devkit's classification task: a class whose objects
            in an image are all difficult is neither required nor penalised there) or
            ``count`` (difficult objects are ordinary objects).

    Example:
        >>> request = LabelsRequest(gt="VOC2007", pred="VOC2007/results.json", split="test")
        >>> request.difficult, request.inputs().options.split
        ('ignore', 'test')
    """

    gt: PathLike
    pred: PathLike
    difficult: LabelDifficult = "ignore"

    def inputs(self) -> Inputs:
        """The ground truth, the predictions and how to read them."""
        return Inputs(self.gt, self.pred, self)

    def folds_case(self) -> bool:
        """Always: label sets compare lower-cased names
        (:mod:`vocmatch.evaluation.labels_and_masks.labels`)."""
        return True


def evaluate_labels(
    request: LabelsRequest | PathLike,
    pred: PathLike | None = None,
    *,
    progress: Progress | None = None,
    **options: Any,
) -> LabelEvaluation:
    """Read and compare each image's label set: all of ``vocmatch eval --mode labels`` but
    the output.

    Call it with a request, or with the two paths and the request's fields as keywords. The
    result renders as the command line renders it: :func:`vocmatch.render_labels_text`
    (``"json"`` or ``"table"``).

    Args:
        request: The request, or the ground truth's path.
        pred: The predictions' path, when ``request`` is a path.
        progress: Told how many files are read, of how many.
        **options: The fields of :class:`LabelsRequest`, when ``request`` is a path.

    Returns:
        Per image its two sets, Jaccard and Dice; per class its counts over images and IoU;
        macro and micro IoU; the files skipped and the images without a prediction file.

    Raises:
        RequestError: A field holds a value that cannot be used (its ``field`` says which).
        InputError: The inputs cannot be evaluated (no annotation file, nothing pairs).
        AnnotationError: A file that must be read cannot be.

    Example:
        >>> import vocmatch
        >>> found = vocmatch.evaluate_labels("fixtures/labels/gt", "fixtures/labels/pred")
        >>> found.macro_iou, found.images[0].key, found.images[0].missed
        (0.6666666666666666, 'sample_1', ('airplane', 'car'))
    """
    if not isinstance(request, LabelsRequest):
        if pred is None:
            raise TypeError(
                "evaluate_labels() needs the predictions' path after the ground truth's"
            )
        request = LabelsRequest(gt=request, pred=pred, **options)
    elif pred is not None or options:
        raise TypeError("evaluate_labels() takes a request or paths and keywords, not both")
    difficult: str = request.difficult  # a caller's value, checked: typing does not hold it
    if difficult not in ("ignore", "count"):
        why = " (crowd regions are a box convention)" if difficult == "crowd" else ""
        raise RequestError("difficult", f"label sets take 'ignore' or 'count'{why}", difficult)
    if request.class_choice is not None and request.class_choice.agnostic:
        raise RequestError(
            "class_choice",
            "label sets are compared class by class, not class-agnostically (every image's set "
            "would be one class or nothing)",
        )
    from vocmatch.evaluation.labels_and_masks import labels

    gt_columns, pred_columns = read_inputs(
        request.inputs(), progress.files if progress is not None else None
    )
    gt_set, pred_set = gt_columns.to_annotations(), pred_columns.to_annotations()
    del gt_columns, pred_columns
    return labels.evaluate_label_sets(gt_set, pred_set, request.difficult)

"""Evaluate predictions against ground truth: per-image matches, per-class precision,
recall and AP, a dataset summary and, under the ``coco`` protocol, pycocotools' 12 numbers.

The entry points of the library. Each runs the one evaluator,
:func:`vocmatch.evaluation.engine.evaluate_columns`, which takes every image and class at once; the
records it returns (:class:`Evaluation` and the rest, defined in :mod:`vocmatch.evaluation.result`)
are importable from here.

Rotated boxes and polygons are matched and reported like boxes. A pair in which either side
has such a shape is scored by the exact overlap of the two regions
(:mod:`vocmatch.core.geometry`), always with continuous areas: the VOC devkit's ``+ 1`` pixel
widths have no meaning for a polygon, so ``pixel_inclusive`` applies only to pairs of plain
boxes (a note says so). COCO's area ranges (small, medium, large) use a shape's own area,
not its bounding box's: shapes are evaluated as regions. Images whose objects are all plain
boxes are scored exactly as before.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from vocmatch.core.protocol import Conventions
from vocmatch.errors import no_annotation_files
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.result import (
    COCO_AREAS,
    ENORMOUS_COORDINATE,
    ClassResult,
    Evaluation,
    ImageResult,
    Outcome,
    Summary,
    SweepResult,
    case_notes,
    class_result,
    coco_summarize,
    finish,
    input_notes,
    score_notes,
    shape_notes,
)
from vocmatch.lazy import lazy_attribute
from vocmatch.readers.parse import DEFAULT_MAX_BYTES, AnnotationSet, read_directory
from vocmatch.readers.scan import columns_from_annotations, read_column_pair

if TYPE_CHECKING:
    from vocmatch.evaluation.box_outcomes import Match as Match
    from vocmatch.evaluation.summary_stats import CocoStats as CocoStats

__all__ = [
    "COCO_AREAS",
    "ENORMOUS_COORDINATE",
    "ClassResult",
    "CocoStats",
    "Evaluation",
    "ImageResult",
    "Match",
    "Outcome",
    "Summary",
    "SweepResult",
    "case_notes",
    "class_result",
    "coco_summarize",
    "evaluate",
    "evaluate_directories",
    "finish",
    "fold_names",
    "input_notes",
    "read_pair",
    "score_notes",
    "shape_notes",
]

#: Records importable from here that live in modules of their own, imported on first use
#: (PEP 562): an evaluation that builds none of them does not build their classes.
_ELSEWHERE = {
    "CocoStats": "vocmatch.evaluation.summary_stats",
    "Match": "vocmatch.evaluation.box_outcomes",
}


def __getattr__(name: str) -> Any:
    """Import a record kept in a module of its own on first use (PEP 562)."""
    return lazy_attribute(__name__, _ELSEWHERE, name)


def evaluate(
    gt: AnnotationSet,
    pred: AnnotationSet,
    conventions: Conventions | None = None,
    *,
    fold_case: bool = False,
) -> Evaluation:
    """Evaluate a prediction set against a ground-truth set.

    Images are paired by key. A ground-truth image without a prediction file is evaluated
    with no predictions (all its objects are missed) and listed in ``missing_pred``; a
    prediction file without ground truth is not evaluated and is listed in
    ``orphan_pred``. An image whose ground-truth or prediction file could not be read is
    left out (its file is in ``skipped``), so a broken file never counts as errors.

    Values that are legal but suspicious (negative or enormous coordinates, scores outside
    [0, 1], class names that differ only in case) are evaluated as given and noted.

    Args:
        gt: Ground-truth annotations.
        pred: Predictions, with or without scores.
        conventions: The protocol; defaults to ``protocol("default")``.
        fold_case: Lower-case every class name before matching, so ``Car`` and ``car``
            are one class (see :func:`fold_names`).

    Returns:
        The evaluation.

    Raises:
        ValueError: A polygon built by hand is not a valid one (the parser refuses those
            in files).
    """
    return evaluate_columns(
        columns_from_annotations(gt),
        columns_from_annotations(pred),
        conventions,
        fold_case=fold_case,
    )


def fold_names(annotations: AnnotationSet) -> AnnotationSet:
    """The set with every class name lower-cased, as :func:`evaluate` matches them with
    ``fold_case``; callers that read the sets beside the evaluation use this copy.

    >>> from vocmatch.core.model import Box, ImageAnnotation
    >>> image = ImageAnnotation("a", "a.xml", (Box("Car", 0, 0, 1, 1),))
    >>> fold_names(AnnotationSet("gt", (image,), ())).annotations[0].boxes[0].name
    'car'
    """
    return replace(
        annotations,
        annotations=tuple(
            replace(a, boxes=tuple(replace(b, name=b.name.lower()) for b in a.boxes))
            for a in annotations.annotations
        ),
    )


def read_pair(
    gt_dir: str | os.PathLike[str],
    pred_dir: str | os.PathLike[str],
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[AnnotationSet, AnnotationSet]:
    """Read a ground-truth and a prediction directory.

    Args:
        gt_dir: Ground-truth XML files (searched recursively).
        pred_dir: Prediction XML files.
        max_bytes: Per-file size limit; larger files are skipped unread.

    Returns:
        The two annotation sets.

    Raises:
        InputError: A path is not a directory, or the ground truth holds no readable file.
    """
    gt = read_directory(gt_dir, max_bytes)
    pred = read_directory(pred_dir, max_bytes)
    if not gt.annotations:
        raise no_annotation_files(os.fspath(gt_dir), gt.skipped)
    return gt, pred


def evaluate_directories(
    gt_dir: str | os.PathLike[str],
    pred_dir: str | os.PathLike[str],
    conventions: Conventions | None = None,
) -> Evaluation:
    """Read two directories of annotation files and evaluate them.

    Args:
        gt_dir: Ground-truth XML files (searched recursively).
        pred_dir: Prediction XML files, paired with the ground truth by relative path.
        conventions: The protocol; defaults to ``protocol("default")``.

    Returns:
        The evaluation.

    Raises:
        InputError: A path is not a directory, or the ground truth holds no readable file.

    Example:
        >>> from vocmatch.core.protocol import protocol
        >>> demo = ("fixtures/demo/gt", "fixtures/demo/pred")
        >>> found = evaluate_directories(*demo, protocol("voc07"))
        >>> found.conventions.interpolation, len(found.images)
        ('11-point', 6)
    """
    gt, pred = read_column_pair(gt_dir, pred_dir)
    return evaluate_columns(gt, pred, conventions)

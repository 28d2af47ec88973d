"""What each error type costs in mAP.

As TIDE does, the cost of a type is the mAP after fixing every error of that type, all
others left as they are, minus the mAP measured: the mAP the type costs. Fixing is done on
the boxes and the evaluation is run again, with the same conventions, by
:func:`vocmatch.evaluation.scoring.evaluate`:

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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from vocmatch.core.ap import average_precision, precision_recall_curve
from vocmatch.core.model import ImageAnnotation
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evidence.annotated import fn_indices
from vocmatch.evidence.error_types import ERROR_TYPES, ErrorBox, ErrorType, ImageErrors
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

__all__ = [
    "ErrorCost",
    "map_cost",
]


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
    return single and conv.summary != "coco" and conv.max_dets is None


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
    fn_by_key = {image.key: set(fn_indices(image.matches)) for image in evaluation.images}
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

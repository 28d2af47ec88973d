"""Images added to an :class:`~vocmatch.evaluation.shards.incremental.Evaluator` before they
are matched: their boxes as columns, each image's rows together (:class:`ImageColumns`), and
those columns as the column sets the readers give (:func:`column_sets`), which the matching
takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import ImageSize
from vocmatch.evaluation.preparation import rows_of
from vocmatch.evaluation.records import image_rows
from vocmatch.readers.scan import ColumnSet

__all__ = ["COLUMN_ARRAYS", "EMPTY_ARRAYS", "ImageColumns", "column_sets", "columns_of_keys"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: The arrays of :class:`ImageColumns`, each joined over the parts of a run.
COLUMN_ARRAYS = (
    "gt_count", "pred_count", "gt_boxes", "gt_labels", "gt_difficult",
    "pred_boxes", "pred_scores", "pred_labels",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ImageColumns:
    """Images and their boxes as columns, each image's rows together, in the order added.

    Attributes:
        keys: The image keys.
        gt_paths: Each image's ground-truth file (its key when added as arrays).
        pred_paths: Each image's prediction file, None without one.
        gt_count: ``(I,)`` ground-truth boxes of each image.
        pred_count: ``(I,)`` predictions of each image.
        gt_boxes: ``(G, 4)`` ``x1, y1, x2, y2``.
        gt_labels: ``(G,)`` index into the evaluator's class names.
        gt_difficult: ``(G,)`` the ``difficult`` (or crowd) flag.
        pred_boxes: ``(P, 4)``.
        pred_scores: ``(P,)`` NaN where a prediction has no score.
        pred_labels: ``(P,)``.
        sizes: Each image's ``(width, height)`` from its files' ``<size>``, None where
            unknown; None for every image (added as arrays). D-ECE reads them.
    """

    keys: tuple[str, ...]
    gt_paths: tuple[str, ...]
    pred_paths: tuple[str | None, ...]
    gt_count: IntArray
    pred_count: IntArray
    gt_boxes: FloatArray
    gt_labels: IntArray
    gt_difficult: BoolArray
    pred_boxes: FloatArray
    pred_scores: FloatArray
    pred_labels: IntArray
    sizes: tuple[tuple[float, float] | None, ...] | None = field(default=None, kw_only=True)

    @staticmethod
    def join(parts: Sequence[ImageColumns]) -> ImageColumns:
        """The images of every part, in part order."""
        if len(parts) == 1:
            return parts[0]
        sizes = None
        if any(p.sizes is not None for p in parts):
            sizes = tuple(
                size
                for p in parts
                for size in (p.sizes if p.sizes is not None else (None,) * len(p.keys))
            )
        joined = ImageColumns(
            tuple(k for p in parts for k in p.keys),
            tuple(k for p in parts for k in p.gt_paths),
            tuple(k for p in parts for k in p.pred_paths),
            *(
                np.concatenate([getattr(p, name) for p in parts]) if parts else EMPTY_ARRAYS[name]
                for name in COLUMN_ARRAYS
            ),
        )
        return replace(joined, sizes=sizes)


EMPTY_ARRAYS: dict[str, npt.NDArray[Any]] = {
    "gt_count": np.zeros(0, dtype=np.int64),
    "pred_count": np.zeros(0, dtype=np.int64),
    "gt_boxes": np.zeros((0, 4)),
    "gt_labels": np.zeros(0, dtype=np.int64),
    "gt_difficult": np.zeros(0, dtype=bool),
    "pred_boxes": np.zeros((0, 4)),
    "pred_scores": np.zeros(0),
    "pred_labels": np.zeros(0, dtype=np.int64),
}


def column_sets(images: ImageColumns, names: tuple[str, ...]) -> tuple[ColumnSet, ColumnSet]:
    """The ground truth and predictions of ``images``, as the column sets the readers give
    (images sorted by key; an image added as arrays has its key as its path)."""
    order = sorted(range(len(images.keys)), key=images.keys.__getitem__)
    # Images without a prediction file hold no predictions; they are not in ``pred``.
    with_pred = [i for i in order if images.pred_paths[i] is not None]
    gt_rows = image_rows(images.gt_count, order)
    pred_rows = image_rows(images.pred_count, with_pred)
    given = images.sizes if images.sizes is not None else (None,) * len(images.keys)
    taken = [given[i] for i in order]
    sizes = tuple(None if size is None else ImageSize(size[0], size[1]) for size in taken)
    gt = _column_set(
        tuple(images.keys[i] for i in order), tuple(images.gt_paths[i] for i in order),
        images.gt_count[order], np.take(images.gt_boxes, gt_rows, axis=0),
        images.gt_labels[gt_rows], names, images.gt_difficult[gt_rows],
        np.full(gt_rows.size, np.nan),
    )  # fmt: skip
    gt = replace(gt, sizes=sizes)
    pred = _column_set(
        tuple(images.keys[i] for i in with_pred),
        tuple(str(images.pred_paths[i]) for i in with_pred),
        images.pred_count[with_pred], np.take(images.pred_boxes, pred_rows, axis=0),
        images.pred_labels[pred_rows], names, np.zeros(pred_rows.size, dtype=bool),
        images.pred_scores[pred_rows],
    )  # fmt: skip
    return gt, pred


def _column_set(
    keys: tuple[str, ...],
    paths: tuple[str, ...],
    counts: IntArray,
    boxes: FloatArray,
    labels: IntArray,
    names: tuple[str, ...],
    difficult: BoolArray,
    scores: FloatArray,
) -> ColumnSet:
    """A column set as the readers make it: class names those used, sorted."""
    used = sorted({names[k] for k in np.unique(labels).tolist()})
    index = {name: i for i, name in enumerate(used)}
    remap = np.array([index.get(name, -1) for name in names], dtype=np.int32)
    n = boxes.shape[0]
    return ColumnSet(
        root="",
        keys=keys,
        paths=paths,
        sizes=(None,) * len(keys),
        filenames=(None,) * len(keys),
        image=np.repeat(np.arange(len(keys), dtype=np.int32), counts),
        labels=remap[labels] if n else np.zeros(0, dtype=np.int32),
        label_names=tuple(used),
        boxes=np.ascontiguousarray(boxes, dtype=np.float64).reshape(n, 4),
        difficult=difficult,
        truncated=np.zeros(n, dtype=bool),
        occluded=np.zeros(n, dtype=bool),
        pose=np.full(n, -1, dtype=np.int32),
        pose_names=(),
        scores=scores,
        skipped=(),
    )


def columns_of_keys(columns: ColumnSet, keys: frozenset[str]) -> ColumnSet:
    """The images of ``columns`` whose key is in ``keys``, as the readers would give them
    had they read those files alone: class names those used, sorted; rotated boxes and
    polygons kept at their new rows; no file skipped."""
    images = [i for i, key in enumerate(columns.keys) if key in keys]
    place = np.full(len(columns.keys), -1, dtype=np.int64)
    place[images] = np.arange(len(images))
    rows = np.flatnonzero(place[columns.image] >= 0)
    return replace(
        rows_of(columns, rows),
        keys=tuple(columns.keys[i] for i in images),
        paths=tuple(columns.paths[i] for i in images),
        sizes=tuple(columns.sizes[i] for i in images),
        filenames=tuple(columns.filenames[i] for i in images),
        image=place[columns.image[rows]].astype(np.int32),
        skipped=(),
        notes=(),
    )

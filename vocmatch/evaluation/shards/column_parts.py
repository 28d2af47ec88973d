"""The columns of a part of the images as bytes: what a Dask task sends back when the client
needs the boxes themselves (:func:`vocmatch.evaluation.shards.on_dask.columns_on_dask`, for
reports that draw or re-read them), rather than match records.

The file is the container of :mod:`vocmatch.evaluation.shards.state` (JSON header, raw little-endian
arrays, CRC-32; data only, checked before any array is made) under its own signature
``VMCOLS``: the images' keys and paths in the header, and per image its ground-truth boxes,
classes and ``difficult`` flags and its predictions' boxes, classes and scores, each in the
narrowest dtype that holds it exactly; and each image's width and height from its files'
``<size>`` (``image_size``, NaN where unknown), which D-ECE reads.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from vocmatch.errors import StateError
from vocmatch.evaluation.shards.image_columns import COLUMN_ARRAYS, ImageColumns, column_sets
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.state import RawState, read_state, write_state
from vocmatch.evaluation.shards.state_records import narrowest_float, narrowest_int
from vocmatch.readers.scan import ColumnSet

__all__ = ["COLUMNS_MAGIC", "columns_of_parts", "part_bytes"]

COLUMNS_MAGIC = b"VMCOLS\0\0"
COLUMNS_VERSION = 1


def part_bytes(gt: ColumnSet, pred: ColumnSet) -> bytes:
    """The bytes of the images of ``gt`` (every ground-truth file read, with the
    predictions of the same key).

    Raises:
        InputError: The columns hold rotated boxes or polygons.
    """
    evaluator = Evaluator()
    evaluator._match_batch = sys.maxsize  # the columns themselves are sent: never matched
    evaluator.add_columns(gt, pred)
    images = ImageColumns.join(evaluator._parts)
    arrays: dict[str, npt.NDArray[Any]] = {
        "gt_count": narrowest_int(images.gt_count),
        "pred_count": narrowest_int(images.pred_count),
        "gt_boxes": narrowest_float(images.gt_boxes),
        "gt_labels": narrowest_int(images.gt_labels),
        "gt_difficult": images.gt_difficult.astype(np.uint8),
        "pred_boxes": narrowest_float(images.pred_boxes),
        "pred_scores": narrowest_float(images.pred_scores),
        "pred_labels": narrowest_int(images.pred_labels),
        "image_size": np.array(
            [(math.nan, math.nan) if size is None else size for size in _sizes(images)],
            dtype=np.float64,
        ).reshape(-1, 2),
    }
    header = {
        "names": list(evaluator._names),
        "keys": list(images.keys),
        "gt_paths": list(images.gt_paths),
        "pred_paths": list(images.pred_paths),
    }
    return write_state(RawState(header, arrays), COLUMNS_MAGIC, COLUMNS_VERSION)


def _sizes(images: ImageColumns) -> tuple[tuple[float, float] | None, ...]:
    return images.sizes if images.sizes is not None else (None,) * len(images.keys)


def columns_of_parts(parts: Sequence[bytes], sources: Sequence[str]) -> tuple[ColumnSet, ColumnSet]:
    """The columns of every part, images sorted by key.

    Args:
        parts: Bytes made by :func:`part_bytes`.
        sources: What to call each in errors.

    Raises:
        StateError: A part is not readable, or two parts share an image.
    """
    names: dict[str, int] = {}
    found = []
    for data, source in zip(parts, sources, strict=True):
        part_names, images = _read_part(data, source)
        remap = np.array([names.setdefault(n, len(names)) for n in part_names], dtype=np.int64)
        found.append(_relabelled(images, remap))
    images = ImageColumns.join(found)
    if len(set(images.keys)) != len(images.keys):
        raise StateError("the parts share images")
    return column_sets(images, tuple(names))


def _relabelled(images: ImageColumns, remap: npt.NDArray[np.int64]) -> ImageColumns:
    if not remap.size:
        return images
    return replace(images, gt_labels=remap[images.gt_labels], pred_labels=remap[images.pred_labels])


def _read_part(data: bytes, source: str) -> tuple[list[str], ImageColumns]:
    raw = read_state(data, source, COLUMNS_MAGIC, COLUMNS_VERSION)
    header = raw.header
    names, keys = header.get("names"), header.get("keys")
    gt_paths, pred_paths = header.get("gt_paths"), header.get("pred_paths")
    if not (
        _is_str_list(names)
        and _is_str_list(keys)
        and _is_str_list(gt_paths)
        and isinstance(pred_paths, list)
        and all(p is None or isinstance(p, str) for p in pred_paths)
        and len(gt_paths) == len(pred_paths) == len(keys)
    ):
        raise StateError(f"{source}: corrupted header (classes or image keys)")
    if len(set(keys)) != len(keys) or len(set(names)) != len(names):
        raise StateError(f"{source}: corrupted header (an image key or class repeats)")
    images = _checked_images(raw.arrays, tuple(keys), len(names), source)
    return names, replace(images, gt_paths=tuple(gt_paths), pred_paths=tuple(pred_paths))


def _is_str_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _checked_images(
    arrays: Mapping[str, npt.NDArray[Any]], keys: tuple[str, ...], n_names: int, source: str
) -> ImageColumns:
    """The images of a part's arrays, each checked against the others and the header."""
    expected = [*COLUMN_ARRAYS, "image_size"]
    if set(arrays) != set(expected):
        raise StateError(f"{source}: corrupted (arrays {sorted(arrays)}, expected {expected})")
    kinds = {
        "gt_count": "u", "pred_count": "u", "gt_labels": "u", "pred_labels": "u",
        "gt_difficult": "u", "gt_boxes": "f", "pred_boxes": "f", "pred_scores": "f",
    }  # fmt: skip
    for name, kind in kinds.items():
        if arrays[name].dtype.kind != kind:
            raise StateError(f"{source}: array {name!r} has dtype {arrays[name].dtype.str}")
    n_images = len(keys)
    for name in ("gt_count", "pred_count"):
        if arrays[name].shape != (n_images,):
            raise StateError(f"{source}: array {name!r} is not one count per image")
        if arrays[name].size and int(arrays[name].max()) >= 1 << 48:  # sums fit an int64
            raise StateError(f"{source}: array {name!r} holds counts no file could hold")
    n_gt = int(arrays["gt_count"].astype(np.int64).sum()) if n_images else 0
    n_pred = int(arrays["pred_count"].astype(np.int64).sum()) if n_images else 0
    shapes = {
        "gt_boxes": (n_gt, 4), "gt_labels": (n_gt,), "gt_difficult": (n_gt,),
        "pred_boxes": (n_pred, 4), "pred_scores": (n_pred,), "pred_labels": (n_pred,),
    }  # fmt: skip
    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            raise StateError(
                f"{source}: array {name!r} has shape {arrays[name].shape}, the counts say {shape}"
            )
    for name in ("gt_labels", "pred_labels"):
        if arrays[name].size and int(arrays[name].max()) >= n_names:
            raise StateError(f"{source}: array {name!r} names a class beyond the {n_names} listed")
    if arrays["gt_difficult"].size and int(arrays["gt_difficult"].max()) > 1:
        raise StateError(f"{source}: array 'gt_difficult' holds values other than 0 and 1")
    for name in ("gt_boxes", "pred_boxes"):
        if not np.isfinite(arrays[name]).all():
            raise StateError(f"{source}: array {name!r} holds values that are not finite")
    if np.isinf(arrays["pred_scores"]).any():
        raise StateError(f"{source}: array 'pred_scores' holds infinite values")
    size = arrays["image_size"]
    if size.dtype.kind != "f" or size.shape != (n_images, 2):
        raise StateError(f"{source}: array 'image_size' is not a width and height per image")
    if not (np.isnan(size) | (np.isfinite(size) & (size > 0))).all():
        raise StateError(f"{source}: array 'image_size' holds sizes no image has")
    sizes = tuple(None if math.isnan(w) or math.isnan(h) else (w, h) for w, h in size.tolist())
    columns = ImageColumns(
        keys,
        keys,
        (None,) * len(keys),
        arrays["gt_count"].astype(np.int64),
        arrays["pred_count"].astype(np.int64),
        arrays["gt_boxes"].astype(np.float64),
        arrays["gt_labels"].astype(np.int64),
        arrays["gt_difficult"].astype(bool),
        arrays["pred_boxes"].astype(np.float64),
        arrays["pred_scores"].astype(np.float64),
        arrays["pred_labels"].astype(np.int64),
    )
    return replace(columns, sizes=sizes)

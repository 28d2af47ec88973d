"""Columns of images kept in a state: :func:`columns_to_state` lays a column set out as a
state's header object and arrays, :func:`columns_of_state` reads it back, every field and
array checked (an evaluator that keeps boxes saves its images' boxes so). Also the columns
of a part of the images as bytes: what a Dask task sends back when the client needs the
boxes themselves (:func:`vocmatch.evaluation.shards.on_dask.columns_on_dask`).

The file is the container of :mod:`vocmatch.evaluation.shards.state` (JSON header, raw little-endian
arrays, CRC-32; data only, checked before any array is made) under its own signature
``VMCOLS``: the images' keys and paths in the header, and per image its ground-truth boxes,
classes and ``difficult`` flags and its predictions' boxes, classes and scores, each in the
narrowest dtype that holds it exactly.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Container, Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import ImageSize
from vocmatch.errors import StateError
from vocmatch.evaluation.records import image_rows
from vocmatch.evaluation.shards.image_columns import COLUMN_ARRAYS, ImageColumns, column_sets
from vocmatch.evaluation.shards.state import RawState, read_state, write_state
from vocmatch.evaluation.shards.state_records import narrowest_float, narrowest_int
from vocmatch.readers.scan import ColumnSet

__all__ = [
    "COLUMNS_MAGIC",
    "SIDE_ARRAYS",
    "columns_of_images",
    "columns_of_parts",
    "columns_of_state",
    "columns_to_state",
    "join_columns",
    "part_bytes",
]

COLUMNS_MAGIC = b"VMCOLS\0\0"
COLUMNS_VERSION = 1


def part_bytes(gt: ColumnSet, pred: ColumnSet) -> bytes:
    """The bytes of the images of ``gt`` (every ground-truth file read, with the
    predictions of the same key).

    Raises:
        InputError: The columns hold rotated boxes or polygons.
    """
    from vocmatch.evaluation.shards.incremental import Evaluator

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
    }
    header = {
        "names": list(evaluator._names),
        "keys": list(images.keys),
        "gt_paths": list(images.gt_paths),
        "pred_paths": list(images.pred_paths),
    }
    return write_state(RawState(header, arrays), COLUMNS_MAGIC, COLUMNS_VERSION)


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
    from dataclasses import replace

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
    return names, ImageColumns(
        tuple(keys),
        tuple(gt_paths),
        tuple(pred_paths),
        *(getattr(images, n) for n in COLUMN_ARRAYS),
    )


def _is_str_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _checked_images(
    arrays: Mapping[str, npt.NDArray[Any]], keys: tuple[str, ...], n_names: int, source: str
) -> ImageColumns:
    """The images of a part's arrays, each checked against the others and the header."""
    if set(arrays) != set(COLUMN_ARRAYS):
        raise StateError(
            f"{source}: corrupted (arrays {sorted(arrays)}, expected {list(COLUMN_ARRAYS)})"
        )
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
    return ImageColumns(
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


#: The arrays of one side's columns in a state, after its prefix.
SIDE_ARRAYS = ("count", "boxes", "labels", "flags", "pose", "scores")
#: The ``flags`` array's bits: ``difficult``, ``truncated``, ``occluded``.
_FLAG_BITS = 3


def columns_to_state(
    columns: ColumnSet, prefix: str
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """One side's columns as a state's header object and arrays (names starting with
    ``prefix``): per image its key, file, ``<size>`` and ``<filename>`` in the header; per
    box its corners, class, flags, ``<pose>`` and score as arrays, each in the narrowest
    dtype that holds it exactly. Rotated boxes and polygons are not kept (an evaluator
    holds plain boxes only).
    """
    counts = np.bincount(columns.image, minlength=len(columns.keys)).astype(np.int64)
    flags = (
        columns.difficult.astype(np.uint8)
        | (columns.truncated.astype(np.uint8) << 1)
        | (columns.occluded.astype(np.uint8) << 2)
    )
    header = {
        "root": columns.root,
        "keys": list(columns.keys),
        "paths": list(columns.paths),
        "sizes": [None if s is None else [s.width, s.height, s.depth] for s in columns.sizes],
        "filenames": list(columns.filenames),
        "label_names": list(columns.label_names),
        "pose_names": list(columns.pose_names),
    }
    arrays = {
        f"{prefix}count": narrowest_int(counts),
        f"{prefix}boxes": narrowest_float(columns.boxes.astype(np.float64)),
        f"{prefix}labels": narrowest_int(columns.labels.astype(np.int64)),
        f"{prefix}flags": flags,
        f"{prefix}pose": narrowest_int(columns.pose.astype(np.int64) + 1),
        f"{prefix}scores": narrowest_float(columns.scores.astype(np.float64)),
    }
    return header, arrays


def columns_of_state(
    header: object, arrays: Mapping[str, npt.NDArray[Any]], prefix: str, source: str
) -> ColumnSet:
    """The columns :func:`columns_to_state` stored, every field and array checked against
    the others.

    Raises:
        StateError: A field or an array does not fit (one line naming ``source``).
    """
    side = prefix.rstrip("_")
    if not isinstance(header, dict):
        raise StateError(f"{source}: corrupted header ({side})")
    root, keys, paths = header.get("root"), header.get("keys"), header.get("paths")
    names, poses = header.get("label_names"), header.get("pose_names")
    sizes, filenames = header.get("sizes"), header.get("filenames")
    if not (
        isinstance(root, str)
        and _is_str_list(keys)
        and _is_str_list(paths)
        and _is_str_list(names)
        and _is_str_list(poses)
        and isinstance(sizes, list)
        and isinstance(filenames, list)
        and all(f is None or isinstance(f, str) for f in filenames)
        and len(paths) == len(sizes) == len(filenames) == len(keys)
    ):
        raise StateError(f"{source}: corrupted header ({side}: image keys, files or classes)")
    if keys != sorted(set(keys)) or names != sorted(set(names)) or poses != sorted(set(poses)):
        raise StateError(f"{source}: corrupted header ({side}: keys or names not sorted once)")
    checked = _checked_side(arrays, prefix, len(keys), (len(names), len(poses)), source)
    return ColumnSet(
        root=root,
        keys=tuple(keys),
        paths=tuple(paths),
        sizes=tuple(_size_of(s, side, source) for s in sizes),
        filenames=tuple(filenames),
        image=np.repeat(np.arange(len(keys), dtype=np.int32), checked[0]),
        labels=checked[2].astype(np.int32),
        label_names=tuple(names),
        boxes=checked[1],
        difficult=(checked[3] & 1).astype(bool),
        truncated=(checked[3] & 2).astype(bool),
        occluded=(checked[3] & 4).astype(bool),
        pose=(checked[4] - 1).astype(np.int32),
        pose_names=tuple(poses),
        scores=checked[5],
        skipped=(),
    )


def _size_of(value: object, side: str, source: str) -> ImageSize | None:
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 3
        and all(type(v) in (int, float) and np.isfinite(v) for v in value[:2])
        and (value[2] is None or type(value[2]) is int)
    ):
        return ImageSize(value[0], value[1], value[2])
    raise StateError(f"{source}: corrupted header ({side}: an image size)")


def _checked_side(
    arrays: Mapping[str, npt.NDArray[Any]],
    prefix: str,
    n_images: int,
    n_names: tuple[int, int],
    source: str,
) -> tuple[npt.NDArray[Any], ...]:
    """The side's arrays, checked: count, labels, flags, pose as int64; boxes and scores
    as float64."""
    kinds = {"count": "u", "boxes": "f", "labels": "u", "flags": "u", "pose": "u", "scores": "f"}
    found: dict[str, npt.NDArray[Any]] = {}
    for name in SIDE_ARRAYS:
        array = arrays.get(prefix + name)
        if array is None or array.dtype.kind != kinds[name]:
            raise StateError(f"{source}: array {prefix + name!r} is missing or not of its kind")
        found[name] = array
    count = found["count"]
    if count.shape != (n_images,):
        raise StateError(f"{source}: array {prefix + 'count'!r} is not one count per image")
    if count.size and int(count.max()) >= 1 << 48:  # their sum fits an int64
        raise StateError(f"{source}: array {prefix + 'count'!r} holds counts no file could hold")
    n_boxes = int(count.astype(np.int64).sum()) if n_images else 0
    for name in SIDE_ARRAYS[1:]:
        array = found[name]
        shape = (n_boxes, 4) if name == "boxes" else (n_boxes,)
        if array.shape != shape:
            raise StateError(f"{source}: array {prefix + name!r} does not hold one row a box")
    values = {n: a.astype(np.float64 if kinds[n] == "f" else np.int64) for n, a in found.items()}
    bounds = {"labels": n_names[0], "pose": n_names[1] + 1, "flags": 1 << _FLAG_BITS}
    for name, bound in bounds.items():
        if values[name].size and int(values[name].max()) >= bound:
            raise StateError(f"{source}: array {prefix + name!r} names what is not listed")
    boxes = values["boxes"]
    if (
        not np.isfinite(boxes).all()
        or (boxes[:, 2] < boxes[:, 0]).any()
        or (boxes[:, 3] < boxes[:, 1]).any()
    ):
        raise StateError(f"{source}: array {prefix + 'boxes'!r} holds boxes no file could hold")
    if np.isinf(values["scores"]).any():
        raise StateError(f"{source}: array {prefix + 'scores'!r} holds infinite values")
    return tuple(values[name] for name in SIDE_ARRAYS)


def columns_of_images(columns: ColumnSet, keys: Container[str]) -> ColumnSet:
    """The columns of the images whose keys are in ``keys`` (in their order), without the
    files skipped nor the notes (a part of a run's images)."""
    chosen = [i for i, key in enumerate(columns.keys) if key in keys]
    counts = np.bincount(columns.image, minlength=len(columns.keys)).astype(np.int64)
    rows = image_rows(counts, chosen)
    return dataclasses.replace(
        columns,
        keys=tuple(columns.keys[i] for i in chosen),
        paths=tuple(columns.paths[i] for i in chosen),
        sizes=tuple(columns.sizes[i] for i in chosen),
        filenames=tuple(columns.filenames[i] for i in chosen),
        image=np.repeat(np.arange(len(chosen), dtype=np.int32), counts[chosen]),
        labels=columns.labels[rows],
        boxes=columns.boxes[rows].reshape(rows.size, 4),
        difficult=columns.difficult[rows],
        truncated=columns.truncated[rows],
        occluded=columns.occluded[rows],
        pose=columns.pose[rows],
        scores=columns.scores[rows],
        skipped=(),
        notes=(),
        shapes=(),
        bndboxes=(),
    )


def join_columns(parts: Sequence[ColumnSet]) -> ColumnSet:
    """The columns of every part (disjoint images), images sorted by key, class and pose
    names the sorted union of the parts'; the first part's root."""
    if len(parts) == 1:
        return parts[0]
    names = sorted({n for p in parts for n in p.label_names})
    poses = sorted({n for p in parts for n in p.pose_names})
    keys = [k for p in parts for k in p.keys]
    paths = [k for p in parts for k in p.paths]
    sizes = [s for p in parts for s in p.sizes]
    filenames = [f for p in parts for f in p.filenames]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    counts = np.concatenate(
        [np.zeros(0, dtype=np.int64)]
        + [np.bincount(p.image, minlength=len(p.keys)).astype(np.int64) for p in parts]
    )
    rows = image_rows(counts, order)

    def joined(values: list[npt.NDArray[Any]], empty: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.concatenate([empty, *values])[rows]

    labels, pose = [], []
    for p in parts:
        remap = np.array([names.index(n) for n in p.label_names] or [0], dtype=np.int32)
        labels.append(remap[p.labels])
        pose_remap = np.array([poses.index(n) for n in p.pose_names] + [-1], dtype=np.int32)
        pose.append(pose_remap[p.pose])  # -1 (no pose) takes the last entry
    return ColumnSet(
        root=parts[0].root if parts else "",
        keys=tuple(keys[i] for i in order),
        paths=tuple(paths[i] for i in order),
        sizes=tuple(sizes[i] for i in order),
        filenames=tuple(filenames[i] for i in order),
        image=np.repeat(np.arange(len(keys), dtype=np.int32), counts[order]),
        labels=joined(labels, np.zeros(0, dtype=np.int32)),
        label_names=tuple(names),
        boxes=joined([p.boxes for p in parts], np.zeros((0, 4))),
        difficult=joined([p.difficult for p in parts], np.zeros(0, dtype=bool)),
        truncated=joined([p.truncated for p in parts], np.zeros(0, dtype=bool)),
        occluded=joined([p.occluded for p in parts], np.zeros(0, dtype=bool)),
        pose=joined(pose, np.zeros(0, dtype=np.int32)),
        pose_names=tuple(poses),
        scores=joined([p.scores for p in parts], np.zeros(0)),
        skipped=(),
    )

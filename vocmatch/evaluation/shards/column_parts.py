"""Columns of images kept in a state: :func:`columns_to_state` lays a column set out as a
state's header object and arrays, :func:`columns_of_state` reads it back, every field and
array checked (an evaluator that keeps boxes saves its images' boxes so: a saved shard, a
Dask task's state); :func:`join_columns` puts those of disjoint images together (the
columns of some images are
:func:`~vocmatch.evaluation.shards.image_columns.columns_of_keys`).

A side's header object holds its root, each image's key, file, ``<size>`` (``[width,
height, depth]`` or null) and ``<filename>``, and the class and ``<pose>`` names; its arrays
(after the prefix, ``boxes_gt_`` or ``boxes_pred_``) are ``count`` (boxes of each image),
``boxes`` (``x1, y1, x2, y2``), ``labels``, ``flags`` (bit 0 ``difficult``, 1 ``truncated``,
2 ``occluded``), ``pose`` (plus 1; 0 for none) and ``scores`` (NaN for none), each in the
narrowest dtype that holds it exactly. Rotated boxes and polygons are not kept (an evaluator
matches plain boxes).

The file is the container of :mod:`vocmatch.evaluation.shards.state` (JSON header, raw little-endian
arrays, CRC-32; data only, checked before any array is made) under its own signature
``VMCOLS``: the images' keys and paths in the header, and per image its ground-truth boxes,
classes and ``difficult`` flags and its predictions' boxes, classes and scores, each in the
narrowest dtype that holds it exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import ImageSize
from vocmatch.errors import StateError
from vocmatch.evaluation.records import MatchRecords, image_rows
from vocmatch.evaluation.shards.state_records import is_str_list, narrowest_float, narrowest_int
from vocmatch.readers.scan import ColumnSet

__all__ = [
    "SIDE_ARRAYS",
    "boxes_of_state",
    "columns_of_state",
    "columns_to_state",
    "join_columns",
]

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
        and is_str_list(keys)
        and is_str_list(paths)
        and is_str_list(names)
        and is_str_list(poses)
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


def boxes_of_state(
    header: object, arrays: Mapping[str, npt.NDArray[Any]], records: MatchRecords, source: str
) -> tuple[ColumnSet, ColumnSet]:
    """The boxes a state keeps, checked against its records: the ground truth of exactly
    the state's images, predictions of none other, each per-box record's indices among its
    image's boxes.

    Raises:
        StateError: They do not fit (one line naming ``source``).
    """
    if not isinstance(header, dict) or records.detail is None:
        raise StateError(f"{source}: corrupted header (boxes without per-box records)")
    gt = columns_of_state(header.get("gt"), arrays, "boxes_gt_", source)
    pred = columns_of_state(header.get("pred"), arrays, "boxes_pred_", source)
    expected = {f"boxes_{side}_{name}" for side in ("gt", "pred") for name in SIDE_ARRAYS}
    if {n for n in arrays if n.startswith("boxes_")} != expected:
        raise StateError(f"{source}: corrupted (arrays of boxes other than a state's)")
    gt_place = {key: i for i, key in enumerate(gt.keys)}
    pred_place = {key: i for i, key in enumerate(pred.keys)}
    # Exactly the state's images: an image of boxes only would change what the error
    # analysis evaluates again.
    if not set(pred_place) <= set(gt_place) or set(records.keys) != set(gt_place):
        raise StateError(f"{source}: the boxes kept are not those of the state's images")
    gt_count = np.bincount(gt.image, minlength=len(gt.keys))
    pred_count = np.bincount(pred.image, minlength=len(pred.keys))
    for key, image in zip(records.keys, records.detail, strict=True):
        n_gt = int(gt_count[gt_place[key]])
        n_pred = int(pred_count[pred_place[key]]) if key in pred_place else 0
        for match in image:
            if (match.gt_index is not None and match.gt_index >= n_gt) or (
                match.pred_index is not None and match.pred_index >= n_pred
            ):
                raise StateError(f"{source}: a per-box record of {key!r} names a box not kept")
    return gt, pred

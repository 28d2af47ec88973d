"""Match records as the arrays and header fields of a state file (format version 2), and
back, every array checked against the others and the header.

The arrays, each in the narrowest dtype that holds its values exactly:

========================  ============  ==================================================
name                      shape         holds
========================  ============  ==================================================
``image_values``          ``(I, C)``    each image's counts (``C`` = 7 + 3 sweep thresholds)
``image_mean_iou``        ``(I,)``      the mean IoU of its true positives, NaN without
``pred_count``            ``(I,)``      kept predictions of each image
``class_counts``          ``(K, 7)``    each class's counts
``coco_gt``               ``(K, 4)``    ground truth that counts per COCO area range
``pred_label``            ``(P,)``      each kept prediction's class
``pred_score``            ``(P,)``      its score, NaN without
``pred_matched``          ``(P,)``      bit flags: matched, per IoU threshold
``pred_area``             ``(P,)``      bit flags: inside each COCO area range
``pred_coco``             ``(P, A)``    bit flags: matched, per AP threshold, per area range
``ignored_pred``          ``(N,)``      the few predictions matched to ignored ground truth,
``ignored_slot``          ``(N,)``      in which matching (0 the protocol's, 1 + ``a``
``ignored_bits``          ``(N,)``      area range ``a``'s), at which thresholds
``gt_cells``              ``(C, 4)``    each image-class with ground truth that counts:
                                        image, class, that count, and of it the count in
                                        COCO's area "all" (format version 5; the header's
                                        ``gt_cells`` is true when it is there)
``calibration_label``     ``(G,)``      each ground-truth object that counts: its class,
``calibration_brier``     ``(G, T)``    its OCE term at each OCE IoU threshold
``calibration_box``       ``(P, 4)``    each kept prediction's ``cx, cy, w, h`` relative to
                                        its image, NaN without a size (format version 6;
                                        the header's ``calibration`` object, holding the
                                        ``oce_iou_thresholds``, says they are there)
``unscored_*``                          with no score at all: ``image_values``,
                                        ``image_mean_iou`` and ``class_counts`` as paired
                                        highest IoU first (and ``slice_counts``)
``slice_matched``         ``(P, V)``    bit flags per slice value (format version 6, with
                                        the options' ``slices``): matched per IoU
                                        threshold, the ground truth outside the value
                                        ignored
``slice_ignored_pred``    ``(N,)``      the few predictions matched to ignored ground
``slice_ignored``         ``(N, V)``    truth in some value, and at which thresholds
``slice_out``             ``(P, B)``    bit ``v`` (``B`` = V / 8 bytes, little-endian bit
                                        order): unmatched, the prediction is outside value
                                        ``v``
``slice_counts``          ``(K, 4 V)``  per class and value: ground truth that counts and
                                        ignored, TP and FP at the IoU threshold
``detail_count``          ``(I,)``      per-box records of each image (format version 6,
                                        only when asked for; the header's ``detail`` is
                                        true and ``detail_names`` lists their classes)
``detail_outcome``        ``(D,)``      each record's outcome: tp, fp, fn, ignored
``detail_name``           ``(D,)``      its class, in ``detail_names``
``detail_gt``             ``(D,)``      its ground truth's index in its file, plus 1 (0:
``detail_pred``           ``(D,)``      none); its prediction's, likewise
``detail_iou``            ``(D,)``      its IoU (an FP's or FN's best with its class)
``detail_score``          ``(D,)``      its score, NaN without
========================  ============  ==================================================

The values of each slice are the header's ``slice_values`` (a list of names per slice).

A state keeps no box unless asked: it is then what the evaluation needs of each image, not
the image's data. Asked (an evaluator that keeps boxes), it keeps the per-box records above
and the boxes themselves (:mod:`vocmatch.evaluation.shards.column_parts`).

The files the reading could not read travel in the header's ``skipped`` list, one object a
file (``path``, ``line``, ``key`` and ``message``: a string, or a list of strings and
``{"option": ..., "value": ..., "placeholder": ...}`` objects when the message names an
option), sorted and each once; the field is absent when no file was skipped, so a state
without it (every state saved before it existed) holds none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import SkippedFile
from vocmatch.core.protocol import Conventions
from vocmatch.errors import Message, Option, StateError
from vocmatch.evaluation.accumulate import ClassCounts
from vocmatch.evaluation.box_outcomes import Match
from vocmatch.evaluation.calibration_inputs import OCE_THRESHOLDS, CalibrationInputs
from vocmatch.evaluation.records import (
    IMAGE_FIELDS,
    FlagArray,
    GtCells,
    ImageCounts,
    MatchRecords,
    NoteCounts,
    PredRecords,
    flag_dtype,
    odd_counts_valid,
)
from vocmatch.evaluation.result import COCO_AREAS, Outcome
from vocmatch.evaluation.shards.narrow_arrays import (
    narrowest_float,
    narrowest_int,
    narrowest_stack,
)
from vocmatch.evaluation.shards.state_bounds import (
    MAX_COUNT,
    check_bounded,
    check_matches_fit,
)
from vocmatch.evaluation.slice_records import (
    SLICE_COUNTS,
    SliceRecords,
    SliceSpec,
    values_fit,
)

__all__ = [
    "DETAIL_ARRAYS",
    "detail_of_state",
    "detail_to_state",
    "holdable_skipped",
    "is_str_list",
    "narrowest_float",
    "narrowest_int",
    "numbered_of_header",
    "orphans_of_header",
    "records_of_state",
    "skipped_in_order",
    "skipped_of_header",
    "skipped_to_header",
    "state_of_records",
    "with_range",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def state_of_records(
    records: MatchRecords, conv: Conventions, slices: Sequence[SliceSpec] = ()
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """The header fields (JSON values) and the arrays of a state holding ``records``,
    matched under ``conv`` (with ``slices``: their records too, which must be there).

    Raises:
        ValueError: ``slices`` are given and the records do not hold them.
    """
    preds = records.preds
    coco_matched, coco_ignored = preds.coco_matched, preds.coco_ignored
    # Area "all" is matched as the protocol's own matching wherever no ground truth leaves
    # the range (almost always): then it is not stored but read from the protocol's flags.
    from_main = (
        coco_matched.shape[1] > 0
        and np.array_equal(coco_matched[:, 0], _ap_bits(preds.matched, conv))
        and np.array_equal(coco_ignored[:, 0], _ap_bits(preds.ignored, conv))
    )
    ignored_pred = np.flatnonzero(preds.ignored)
    arrays: dict[str, npt.NDArray[Any]] = {
        **_counts_arrays(records.counts, ""),
        "pred_count": narrowest_int(preds.count),
        "coco_gt": narrowest_int(records.coco_gt),
        "pred_label": narrowest_int(preds.label),
        "pred_score": narrowest_float(preds.score),
        "pred_matched": narrowest_int(preds.matched),
        "pred_area": preds.area.astype(np.uint8),
        "pred_coco": narrowest_int(coco_matched[:, 1:] if from_main else coco_matched),
        "pred_coco_ignored": narrowest_int(coco_ignored[:, 1:] if from_main else coco_ignored),
        "ignored_pred": narrowest_int(ignored_pred.astype(np.int64)),
        "ignored_bits": narrowest_int(preds.ignored[ignored_pred]),
    }
    if records.unscored is not None:
        arrays.update(_counts_arrays(records.unscored, "unscored_"))
    sliced = records.slices
    if slices and (sliced is None or sliced.specs != tuple(slices)):
        raise ValueError("the match records do not hold the slices asked for")
    if slices and sliced is not None:
        arrays.update(_slice_arrays(sliced, len(records.class_names)))
    cells = records.gt_cells
    if cells is not None:
        arrays["gt_cells"] = narrowest_stack(
            (cells.image, cells.label, cells.counting, cells.counting_all)
        )
    calibration = records.calibration
    if calibration is not None:
        arrays["calibration_label"] = narrowest_int(calibration.object_label)
        arrays["calibration_brier"] = narrowest_float(calibration.object_brier)
        arrays["calibration_box"] = narrowest_float(calibration.pred_box)
    notes = records.notes
    if records.detail is not None:
        detail_names, detail_arrays = detail_to_state(records.detail)
        arrays.update(detail_arrays)
    header: dict[str, Any] = {
        "keys": list(records.keys),
        "gt_paths": list(records.gt_paths),
        "pred_paths": list(records.pred_paths),
        "class_names": list(records.class_names),
        "beyond": records.beyond,
        "unscored": records.unscored is not None,
        "coco_all_from_main": bool(from_main),
        "gt_cells": cells is not None,
        **({"slice_values": [list(v) for v in sliced.values]} if slices and sliced else {}),
        "notes": {
            "names": list(notes.names),
            "scored": notes.scored,
            "preds": notes.preds,
            "unscored": notes.unscored,
            "unscored_files": notes.unscored_files,
            "odd": [[[path, count] for path, count in kind] for kind in notes.odd],
            # Only when some object was a rotated box or a polygon (format version 6).
            **({"shapes": notes.shapes} if notes.shapes else {}),
        },
    }
    if records.detail is not None:
        header["detail"] = True
        header["detail_names"] = detail_names
    if calibration is not None:
        header["calibration"] = {"oce_iou_thresholds": list(OCE_THRESHOLDS)}
    return header, arrays


def _slice_arrays(sliced: SliceRecords, n_classes: int) -> dict[str, npt.NDArray[Any]]:
    """The slices' arrays (see the module doc)."""
    width = sliced.counts.shape[1] * len(SLICE_COUNTS)
    rows = np.flatnonzero(sliced.ignored.any(axis=1))
    arrays = {
        "slice_matched": narrowest_int(sliced.matched),
        # Few predictions match ignored ground truth: only theirs are kept.
        "slice_ignored_pred": narrowest_int(rows.astype(np.int64)),
        "slice_ignored": narrowest_int(sliced.ignored[rows]),
        "slice_out": np.packbits(sliced.out, axis=1, bitorder="little"),
        "slice_counts": narrowest_int(sliced.counts.reshape(n_classes, width)),
    }
    if sliced.unscored is not None:
        arrays["unscored_slice_counts"] = narrowest_int(sliced.unscored.reshape(n_classes, width))
    return arrays


def _counts_arrays(counts: ImageCounts, prefix: str) -> dict[str, npt.NDArray[Any]]:
    return {
        f"{prefix}image_values": narrowest_int(counts.values),
        f"{prefix}image_mean_iou": narrowest_float(counts.mean_iou),
        f"{prefix}class_counts": narrowest_int(counts.classes.stacked().astype(np.int64)),
    }


def records_of_state(
    header: Mapping[str, Any],
    arrays: Mapping[str, npt.NDArray[Any]],
    conv: Conventions,
    source: str,
    slices: tuple[SliceSpec, ...] = (),
) -> MatchRecords:
    """The records of a state read by :func:`vocmatch.evaluation.shards.state.read_state`
    (made with ``slices``, the options' own: their arrays are then there).

    Raises:
        StateError: A header field or an array does not fit the others (one line naming
            ``source``).
    """
    keys, gt_paths, pred_paths = (
        header.get("keys"),
        header.get("gt_paths"),
        header.get("pred_paths"),
    )
    names, beyond, unscored = (
        header.get("class_names"),
        header.get("beyond"),
        header.get("unscored"),
    )
    from_main = header.get("coco_all_from_main")
    # Absent before format version 5: the records then keep no ground-truth cells.
    has_cells = header.get("gt_cells", False)
    if not isinstance(has_cells, bool):
        raise StateError(f"{source}: corrupted header (gt_cells)")
    has_calibration = _has_calibration(header.get("calibration"), source)
    if not (
        _is_str_list(keys)
        and _is_str_list(gt_paths)
        and isinstance(pred_paths, list)
        and all(p is None or isinstance(p, str) for p in pred_paths)
        and len(gt_paths) == len(pred_paths) == len(keys)
        and _is_str_list(names)
        and isinstance(beyond, bool)
        and isinstance(unscored, bool)
        and isinstance(from_main, bool)
    ):
        raise StateError(f"{source}: corrupted header (image keys, paths or classes)")
    if len(set(keys)) != len(keys) or len(set(names)) != len(names) or names != sorted(names):
        raise StateError(f"{source}: corrupted header (an image key or class repeats)")
    notes = _note_counts(header.get("notes"), source)
    # Absent before format version 6: the records then keep no per-box detail.
    has_detail = header.get("detail", False)
    if not isinstance(has_detail, bool):
        raise StateError(f"{source}: corrupted header (detail)")
    detail = None
    if has_detail:
        detail = detail_of_state(header.get("detail_names"), arrays, len(keys), source)
    arrays = {name: a for name, a in arrays.items() if name not in DETAIL_ARRAYS}
    n_areas = len(COCO_AREAS) if conv.summary == "coco" else 0
    if from_main and not n_areas:
        raise StateError(f"{source}: corrupted header (COCO area ranges without the coco summary)")
    n_stored = n_areas - 1 if from_main else n_areas
    width = len(IMAGE_FIELDS) + 3 * len(conv.sweep_thresholds)
    layout = _Layout(len(keys), len(names), n_stored, width, unscored, has_cells, has_calibration)
    shapes = _expected_shapes(arrays, layout, source)
    values = _slice_values(header.get("slice_values"), slices, source) if slices else ()
    n_values = sum(len(v) for v in values)
    if slices:
        (n_pred,) = shapes["pred_label"][0]
        ignored_rows = arrays.get("slice_ignored_pred")
        if ignored_rows is not None and ignored_rows.ndim != 1:
            raise StateError(
                f"{source}: array 'slice_ignored_pred' has shape {ignored_rows.shape}, not one "
                "dimension of prediction indices"
            )
        n_ignored = 0 if ignored_rows is None else len(ignored_rows)
        shapes.update({
            "slice_matched": ((n_pred, n_values), "u"),
            "slice_ignored_pred": ((n_ignored,), "u"),
            "slice_ignored": ((n_ignored, n_values), "u"),
            "slice_out": ((n_pred, (n_values + 7) // 8), "u"),
            "slice_counts": ((len(names), n_values * len(SLICE_COUNTS)), "u"),
        })  # fmt: skip
        if unscored:
            shapes["unscored_slice_counts"] = shapes["slice_counts"]
    _check_arrays(arrays, shapes, source)
    check_bounded(arrays, source)
    preds = _pred_records(arrays, len(names), from_main, conv, source)
    counts = _image_counts(arrays, "", source)
    coco_gt = arrays["coco_gt"].astype(np.int64)
    cells = None
    if has_cells:
        cells = _gt_cells(arrays["gt_cells"], counts, coco_gt, conv, source)
    unscored_counts = _image_counts(arrays, "unscored_", source) if unscored else None
    n_levels = len({conv.iou_threshold, *conv.sweep_thresholds, *conv.ap_thresholds})
    check_matches_fit(preds, (counts, unscored_counts), coco_gt, n_levels, source)
    sliced = None
    if slices:
        readings = (counts, unscored_counts)
        sliced = _slice_records(arrays, slices, values, readings, conv, source)
    calibration = None
    if has_calibration:
        calibration = _calibration(arrays, counts, source)
    return MatchRecords(
        keys=tuple(keys),
        gt_paths=tuple(gt_paths),
        pred_paths=tuple(pred_paths),
        class_names=tuple(names),
        preds=preds,
        counts=counts,
        unscored=unscored_counts,
        coco_gt=coco_gt,
        beyond=beyond,
        notes=notes,
        detail=detail,
        gt_cells=cells,
        slices=sliced,
        calibration=calibration,
    )


def _has_calibration(value: object, source: str) -> bool:
    """Whether the header says the calibration inputs are stored (absent before format
    version 6), refusing OCE terms taken at other IoU thresholds than this vocmatch's."""
    if value is None:
        return False
    if not isinstance(value, dict) or not isinstance(value.get("oce_iou_thresholds"), list):
        raise StateError(f"{source}: corrupted header (calibration)")
    stored = value["oce_iou_thresholds"]
    if stored != list(OCE_THRESHOLDS):
        raise StateError(
            f"{source}: holds OCE terms at IoU thresholds {stored}; this vocmatch reads them "
            f"at {list(OCE_THRESHOLDS)}"
        )
    return True


def _calibration(
    arrays: Mapping[str, npt.NDArray[Any]], counts: ImageCounts, source: str
) -> CalibrationInputs:
    """The calibration inputs, checked: one object per ground truth that counts, of each
    class; each term a Brier score in [0, 2]; each box's four numbers all finite or all NaN
    (an image without a size)."""
    label = arrays["calibration_label"].astype(np.int64)
    n_classes = counts.classes.gt.size
    if label.size and int(label.max()) >= n_classes:
        raise StateError(f"{source}: array 'calibration_label' names a class that is not there")
    if not np.array_equal(np.bincount(label, minlength=n_classes), counts.classes.gt):
        raise StateError(
            f"{source}: array 'calibration_label' does not hold each class's ground truth that "
            "counts"
        )
    brier = arrays["calibration_brier"].astype(np.float64)
    if not ((brier >= 0) & (brier <= 2)).all():
        raise StateError(f"{source}: array 'calibration_brier' holds values outside [0, 2]")
    box = arrays["calibration_box"].astype(np.float64)
    finite = np.isfinite(box)
    if not (finite.all(axis=1) | np.isnan(box).all(axis=1)).all():
        raise StateError(
            f"{source}: array 'calibration_box' holds a box neither finite nor all NaN"
        )
    return CalibrationInputs(label, brier, box)


def _slice_values(
    value: object, slices: tuple[SliceSpec, ...], source: str
) -> tuple[tuple[str, ...], ...]:
    """The header's ``slice_values``, checked against the slices: each slice's own values
    (a pose slice's, distinct, sorted, ``(none)`` and its column of no value last)."""
    if not (
        isinstance(value, list)
        and len(value) == len(slices)
        and all(_is_str_list(v) for v in value)
    ):
        raise StateError(f"{source}: corrupted header (slice_values)")
    found = tuple(tuple(v) for v in value)
    for spec, names in zip(slices, found, strict=True):
        if not values_fit(spec, names):
            raise StateError(f"{source}: corrupted header (slice_values of the {spec.name} slice)")
    return found


def _slice_records(
    arrays: Mapping[str, npt.NDArray[Any]],
    slices: tuple[SliceSpec, ...],
    values: tuple[tuple[str, ...], ...],
    readings: tuple[ImageCounts, ImageCounts | None],
    conv: Conventions,
    source: str,
) -> SliceRecords:
    """The slices' records, checked: flags of thresholds and values that exist, predictions
    that exist, and each value's counts within its class's under the same reading of scores (its
    ground truth within the class's, its true positives within that, its true and false
    positives within the class's predictions that count)."""
    n_levels = len({conv.iou_threshold, *conv.sweep_thresholds, *conv.ap_thresholds})
    matched = _flags(arrays["slice_matched"], n_levels, "slice_matched", source)
    n_pred, n_values = matched.shape
    where = arrays["slice_ignored_pred"].astype(np.int64)
    if where.size and (int(where.max()) >= n_pred or (np.diff(where) <= 0).any()):
        raise StateError(
            f"{source}: array 'slice_ignored_pred' names predictions that are not there, or "
            "not each once in order"
        )
    ignored = np.zeros((n_pred, n_values), dtype=matched.dtype)
    ignored[where] = _flags(arrays["slice_ignored"], n_levels, "slice_ignored", source)
    packed = arrays["slice_out"]
    if packed.dtype.itemsize != 1:
        raise StateError(f"{source}: array 'slice_out' has dtype {packed.dtype.str}")
    bits = np.unpackbits(packed, axis=1, bitorder="little")
    if bits[:, n_values:].any():
        raise StateError(f"{source}: array 'slice_out' holds flags of values that do not exist")
    out = bits[:, :n_values].astype(bool)
    n_classes = readings[0].classes.gt.size
    found: list[IntArray | None] = []
    for name, counts in zip(("slice_counts", "unscored_slice_counts"), readings, strict=True):
        if counts is None:
            found.append(None)
            continue
        if arrays[name].size and int(arrays[name].max()) >= MAX_COUNT:
            raise StateError(f"{source}: array {name!r} holds counts no file could hold")
        stored = arrays[name].astype(np.int64).reshape(n_classes, -1, len(SLICE_COUNTS))
        gt, gt_ignored, tp, fp = (stored[:, :, j] for j in range(len(SLICE_COUNTS)))
        if (
            (gt > counts.classes.gt[:, None]).any()
            or (gt_ignored > counts.classes.gt_ignored[:, None]).any()
            or (tp > gt).any()
            or (tp + fp > counts.classes.pred[:, None]).any()
        ):
            raise StateError(f"{source}: array {name!r} does not fit the classes' counts")
        found.append(stored)
    scored_counts, unscored_counts = found
    if scored_counts is None:  # checked present with the arrays' names
        raise StateError(f"{source}: array 'slice_counts' is missing")
    return SliceRecords(slices, values, matched, ignored, out, scored_counts, unscored_counts)


#: The arrays of the per-box records (format version 6).
DETAIL_ARRAYS = (
    "detail_count", "detail_outcome", "detail_name", "detail_gt", "detail_pred",
    "detail_iou", "detail_score",
)  # fmt: skip
#: A box's outcome as stored: its place here.
_OUTCOMES: tuple[Outcome, ...] = ("tp", "fp", "fn", "ignored")


def detail_to_state(
    detail: Sequence[Sequence[Match]],
) -> tuple[list[str], dict[str, npt.NDArray[Any]]]:
    """Each image's per-box records as the header's ``detail_names`` (the class names they
    use, sorted) and the :data:`DETAIL_ARRAYS`: per image its count of records; per record
    its outcome, class, ground-truth and prediction index (plus 1; 0 for none), IoU and
    score (NaN for none)."""
    boxes = [m for image in detail for m in image]
    names = sorted({m.name for m in boxes})
    index = {name: k for k, name in enumerate(names)}
    code = {outcome: k for k, outcome in enumerate(_OUTCOMES)}
    arrays = {
        "detail_count": narrowest_int(np.array([len(i) for i in detail], dtype=np.int64)),
        "detail_outcome": np.array([code[m.outcome] for m in boxes], dtype=np.uint8),
        "detail_name": narrowest_int(np.array([index[m.name] for m in boxes], dtype=np.int64)),
        "detail_gt": narrowest_int(
            np.array([0 if m.gt_index is None else m.gt_index + 1 for m in boxes], dtype=np.int64)
        ),
        "detail_pred": narrowest_int(
            np.array(
                [0 if m.pred_index is None else m.pred_index + 1 for m in boxes], dtype=np.int64
            )
        ),
        "detail_iou": narrowest_float(np.array([m.iou for m in boxes], dtype=np.float64)),
        "detail_score": narrowest_float(
            np.array([np.nan if m.score is None else m.score for m in boxes], dtype=np.float64)
        ),
    }
    return names, arrays


def detail_of_state(
    names: object, arrays: Mapping[str, npt.NDArray[Any]], n_images: int, source: str
) -> tuple[tuple[Match, ...], ...]:
    """The per-box records :func:`detail_to_state` stored, checked: one count per image,
    one entry per record in every array, outcomes and classes that exist, a true positive
    with both indices, a false positive with a prediction only, a missed object with ground
    truth only, IoUs in [0, 1] and no infinite score.

    Raises:
        StateError: The names or an array do not fit (one line naming ``source``).
    """
    if not _is_str_list(names) or names != sorted(set(names)):
        raise StateError(f"{source}: corrupted header (detail_names)")
    kinds = {name: "f" if name in ("detail_iou", "detail_score") else "u" for name in DETAIL_ARRAYS}
    for name, kind in kinds.items():
        if name not in arrays or arrays[name].dtype.kind != kind:
            raise StateError(f"{source}: array {name!r} is missing or not of its kind")
    count = arrays["detail_count"]
    if count.shape != (n_images,):
        raise StateError(f"{source}: array 'detail_count' is not one count per image")
    if count.size and int(count.max()) >= MAX_COUNT:
        raise StateError(f"{source}: array 'detail_count' holds counts no file could hold")
    n_boxes = int(count.astype(np.int64).sum()) if n_images else 0
    for name in DETAIL_ARRAYS[1:]:
        if arrays[name].shape != (n_boxes,):
            raise StateError(f"{source}: array {name!r} is not one entry per record")
    outcome = arrays["detail_outcome"].astype(np.int64)
    label = arrays["detail_name"].astype(np.int64)
    gt, pred = (arrays[n].astype(np.uint64) for n in ("detail_gt", "detail_pred"))
    iou, score = (arrays[n].astype(np.float64) for n in ("detail_iou", "detail_score"))
    if n_boxes and (int(outcome.max()) >= len(_OUTCOMES) or int(label.max()) >= len(names)):
        raise StateError(
            f"{source}: array 'detail_outcome' or 'detail_name' names what is not listed"
        )
    if n_boxes and max(int(gt.max()), int(pred.max())) >= MAX_COUNT:
        raise StateError(
            f"{source}: array 'detail_gt' or 'detail_pred' holds indices no file could hold"
        )
    has_gt, has_pred = gt > 0, pred > 0
    tp, fp, fn = outcome == 0, outcome == 1, outcome == 2
    if (
        (tp & ~(has_gt & has_pred)).any()
        or (fp & (has_gt | ~has_pred)).any()
        or (fn & (~has_gt | has_pred)).any()
    ):
        raise StateError(f"{source}: array 'detail_outcome' does not fit the records' indices")
    if not ((iou >= 0) & (iou <= 1)).all() or np.isinf(score).any():
        raise StateError(
            f"{source}: array 'detail_iou' or 'detail_score' holds values out of range"
        )
    records = [
        Match(
            names[k],
            _OUTCOMES[o],
            g - 1 if g else None,
            p - 1 if p else None,
            i,
            None if s != s else s,  # NaN: no score
        )
        for o, k, g, p, i, s in zip(
            outcome.tolist(),
            label.tolist(),
            gt.tolist(),
            pred.tolist(),
            iou.tolist(),
            score.tolist(),
            strict=True,
        )
    ]
    starts = np.concatenate([[0], np.cumsum(count.astype(np.int64))]).tolist()
    return tuple(tuple(records[starts[i] : starts[i + 1]]) for i in range(n_images))


def _gt_cells(
    stored: npt.NDArray[Any],
    counts: ImageCounts,
    coco_gt: IntArray,
    conv: Conventions,
    source: str,
) -> GtCells:
    """The ground-truth cells, checked against the counts they break down: each image and
    class there, each image-class once and in order, each count at least 1, the area "all"
    count at most it; their sums each image's and each class's ground truth that counts
    (and, under the ``coco`` summary, each class's in area "all")."""
    n_images, n_classes = counts.values.shape[0], counts.classes.gt.size
    if stored.size and int(stored.max()) >= MAX_COUNT:
        raise StateError(f"{source}: array 'gt_cells' holds counts no file could hold")
    image, label, counting, counting_all = (stored[:, j].astype(np.int64) for j in range(4))
    if image.size and (int(image.max()) >= n_images or int(label.max()) >= n_classes):
        raise StateError(f"{source}: array 'gt_cells' names an image or class that is not there")
    cell = image * n_classes + label
    if (np.diff(cell) <= 0).any() or (counting < 1).any() or (counting_all > counting).any():
        raise StateError(f"{source}: array 'gt_cells' is not one sorted cell per image-class")
    sums_agree = np.array_equal(
        np.bincount(image, counting, minlength=n_images), counts.values[:, 0]
    ) and np.array_equal(np.bincount(label, counting, minlength=n_classes), counts.classes.gt)
    if sums_agree and conv.summary == "coco":
        sums_agree = np.array_equal(
            np.bincount(label, counting_all, minlength=n_classes), coco_gt[:, 0]
        )
    if not sums_agree:
        raise StateError(f"{source}: array 'gt_cells' does not add up to the ground truth's counts")
    return GtCells(image, label, counting, counting_all)


def _note_counts(notes: object, source: str) -> NoteCounts:
    if not isinstance(notes, dict):
        raise StateError(f"{source}: corrupted header (notes)")
    names, odd = notes.get("names"), notes.get("odd")
    counts = [notes.get(name) for name in ("preds", "unscored", "unscored_files")]
    counts.append(notes.get("shapes", 0))
    if not (
        _is_str_list(names)
        and isinstance(notes.get("scored"), bool)
        and all(type(c) is int and c >= 0 for c in counts)
        and odd_counts_valid(odd)
    ):
        raise StateError(f"{source}: corrupted header (notes)")
    preds, unscored, unscored_files = (
        int(notes[n]) for n in ("preds", "unscored", "unscored_files")
    )
    return NoteCounts(
        names=tuple(names),
        scored=bool(notes["scored"]),
        preds=preds,
        unscored=unscored,
        unscored_files=unscored_files,
        odd=tuple(tuple((str(p), int(c)) for p, c in kind) for kind in odd),
        shapes=int(notes.get("shapes", 0)),
    )


@dataclass(frozen=True, slots=True)
class _Layout:
    """What the header says of the arrays' sizes.

    Attributes:
        images: Image keys.
        classes: Class names.
        areas: COCO area ranges stored per prediction.
        width: Integers per image.
        unscored: The counts of the unscored reading are stored too.
        cells: The ground-truth cells are stored.
        calibration: The calibration inputs are stored.
    """

    images: int
    classes: int
    areas: int
    width: int
    unscored: bool
    cells: bool
    calibration: bool = False


def _expected_shapes(
    arrays: Mapping[str, npt.NDArray[Any]], layout: _Layout, source: str
) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each array's shape and dtype kind, from the header and the counts."""
    n_images, n_classes, n_areas = layout.images, layout.classes, layout.areas
    count = arrays.get("pred_count")
    if count is None or count.shape != (n_images,) or count.dtype.kind != "u":
        raise StateError(f"{source}: array 'pred_count' is not one count per image")
    if count.size and int(count.max()) >= MAX_COUNT:  # their sum would not fit an int64
        raise StateError(f"{source}: array 'pred_count' holds counts no file could hold")
    n_pred = int(count.astype(np.int64).sum()) if n_images else 0
    ignored = arrays.get("ignored_pred")
    if ignored is not None and ignored.ndim != 1:
        raise StateError(
            f"{source}: array 'ignored_pred' has shape {ignored.shape}, not one dimension of"
            " prediction indices"
        )
    # Without the array, its count is never compared: the set of arrays is refused first.
    n_ignored = 0 if ignored is None else len(ignored)
    shapes: dict[str, tuple[tuple[int, ...], str]] = {
        "pred_count": ((n_images,), "u"),
        "coco_gt": ((n_classes, len(COCO_AREAS)), "u"),
        "pred_label": ((n_pred,), "u"),
        "pred_score": ((n_pred,), "f"),
        "pred_matched": ((n_pred,), "u"),
        "pred_area": ((n_pred,), "u"),
        "pred_coco": ((n_pred, n_areas), "u"),
        "pred_coco_ignored": ((n_pred, n_areas), "u"),
        "ignored_pred": ((n_ignored,), "u"),
        "ignored_bits": ((n_ignored,), "u"),
    }
    if layout.cells:
        cells = arrays.get("gt_cells")
        if cells is None or cells.ndim != 2 or cells.shape[1] != 4:
            raise StateError(f"{source}: array 'gt_cells' is not four counts per image-class")
        shapes["gt_cells"] = (cells.shape, "u")
    if layout.calibration:
        label = arrays.get("calibration_label")
        if label is None or label.ndim != 1:
            raise StateError(f"{source}: array 'calibration_label' is not one class per object")
        shapes["calibration_label"] = ((label.size,), "u")
        shapes["calibration_brier"] = ((label.size, len(OCE_THRESHOLDS)), "f")
        shapes["calibration_box"] = ((n_pred, 4), "f")
    for prefix in ("", "unscored_") if layout.unscored else ("",):
        shapes[f"{prefix}image_values"] = ((n_images, layout.width), "u")
        shapes[f"{prefix}image_mean_iou"] = ((n_images,), "f")
        shapes[f"{prefix}class_counts"] = ((n_classes, 7), "u")
    return shapes


def _check_arrays(
    arrays: Mapping[str, npt.NDArray[Any]],
    shapes: Mapping[str, tuple[tuple[int, ...], str]],
    source: str,
) -> None:
    if set(arrays) != set(shapes):
        raise StateError(
            f"{source}: corrupted (arrays {sorted(arrays)}, expected {sorted(shapes)})"
        )
    for name, (shape, kind) in shapes.items():
        if arrays[name].dtype.kind != kind:
            raise StateError(f"{source}: array {name!r} has dtype {arrays[name].dtype.str}")
        if arrays[name].shape != shape:
            raise StateError(
                f"{source}: array {name!r} has shape {arrays[name].shape}, the counts say {shape}"
            )


def _pred_records(
    arrays: Mapping[str, npt.NDArray[Any]],
    n_classes: int,
    from_main: bool,
    conv: Conventions,
    source: str,
) -> PredRecords:
    """The kept predictions' records, checked: classes listed and sorted within each image,
    flags of thresholds that exist, finite scores."""
    count = arrays["pred_count"].astype(np.int64)
    # Checked as stored: a cast first would read 2**32 + k as class k.
    if arrays["pred_label"].size and int(arrays["pred_label"].max()) >= n_classes:
        raise StateError(
            f"{source}: array 'pred_label' names a class beyond the {n_classes} listed"
        )
    label = arrays["pred_label"].astype(np.int32)
    if label.size > 1:
        # A class below the one before it, other than at an image's first prediction.
        down = np.diff(label) < 0
        ends = np.cumsum(count)
        down[ends[(ends > 0) & (ends < label.size)] - 1] = False
        if down.any():
            raise StateError(f"{source}: array 'pred_label' is not sorted within each image")
    # Kept as narrow as stored (float32 when every score is one): exact either way.
    stored = arrays["pred_score"]
    score: npt.NDArray[np.floating[Any]] = stored.astype(
        np.float32 if stored.dtype.itemsize <= 4 else np.float64
    )
    if np.isinf(score).any():
        raise StateError(f"{source}: array 'pred_score' holds infinite values")
    n_levels = len({conv.iou_threshold, *conv.sweep_thresholds, *conv.ap_thresholds})
    n_ap = len(conv.ap_thresholds)
    matched = _flags(arrays["pred_matched"], n_levels, "pred_matched", source)
    coco_matched = _flags(arrays["pred_coco"], n_ap, "pred_coco", source)
    coco_ignored = _flags(arrays["pred_coco_ignored"], n_ap, "pred_coco_ignored", source)
    if arrays["pred_area"].size and int(arrays["pred_area"].max()) >= 1 << len(COCO_AREAS):
        raise StateError(f"{source}: array 'pred_area' holds flags of no area range")
    where = arrays["ignored_pred"].astype(np.int64)
    if where.size and int(where.max()) >= label.size:
        raise StateError(f"{source}: array 'ignored_pred' names a prediction that is not there")
    if (np.diff(where) <= 0).any():
        raise StateError(
            f"{source}: array 'ignored_pred' does not name predictions each once in order"
        )
    ignored = np.zeros(label.size, dtype=flag_dtype(n_levels))
    ignored[where] = _flags(arrays["ignored_bits"], n_levels, "ignored_bits", source)
    if from_main:
        coco_matched = np.concatenate([_ap_bits(matched, conv)[:, None], coco_matched], axis=1)
        coco_ignored = np.concatenate([_ap_bits(ignored, conv)[:, None], coco_ignored], axis=1)
    return PredRecords(
        count, label, score, matched, ignored, arrays["pred_area"].astype(np.uint8), coco_matched,
        coco_ignored,
    )  # fmt: skip


def _ap_bits(bits: FlagArray, conv: Conventions) -> FlagArray:
    """Flags over the matched thresholds (the engine's levels) as flags over the AP
    thresholds: the area "all" matching when it is the protocol's own."""
    levels = sorted({conv.iou_threshold, *conv.sweep_thresholds, *conv.ap_thresholds})
    index = {value: i for i, value in enumerate(levels)}
    # Each value flags of few thresholds can take converted once: one lookup a prediction.
    few = len(levels) <= 16
    given = np.arange(1 << len(levels), dtype=np.int64) if few else bits.astype(np.int64)
    found = np.zeros(given.size, dtype=np.int64)
    for t, threshold in enumerate(conv.ap_thresholds):
        found |= ((given >> index[threshold]) & 1) << t
    converted: FlagArray = found.astype(flag_dtype(len(conv.ap_thresholds)))
    if not few:
        return converted
    looked_up: FlagArray = converted[np.bitwise_and(bits, given.size - 1)]
    return looked_up


def _flags(values: npt.NDArray[Any], n_bits: int, name: str, source: str) -> FlagArray:
    """Bit flags, checked to name only the ``n_bits`` thresholds there are."""
    # Compared as stored (unsigned, as the shapes' check asks: the maximum is exact).
    if values.dtype.kind != "u" or (values.size and int(values.max()) >= 1 << n_bits):
        raise StateError(f"{source}: array {name!r} holds flags of thresholds that do not exist")
    return values.astype(flag_dtype(n_bits))


def _image_counts(arrays: Mapping[str, npt.NDArray[Any]], prefix: str, source: str) -> ImageCounts:
    mean_iou = arrays[f"{prefix}image_mean_iou"].astype(np.float64)
    if not (np.isnan(mean_iou) | ((mean_iou >= 0) & (mean_iou <= 1))).all():
        raise StateError(f"{source}: array '{prefix}image_mean_iou' holds values outside [0, 1]")
    return ImageCounts(
        arrays[f"{prefix}image_values"].astype(np.int64),
        mean_iou,
        ClassCounts.of_stacked(arrays[f"{prefix}class_counts"].astype(np.int64)),
    )


def _is_str_list(value: object) -> TypeGuard[list[str]]:
    return is_str_list(value)


def skipped_in_order(files: Iterable[SkippedFile]) -> tuple[SkippedFile, ...]:
    """The files, each once, sorted by path and line (as a run reports them), then by
    message and key: the same order whatever order they come in.

    >>> a, b = SkippedFile("b.xml", "bad", 3), SkippedFile("a.xml", "bad")
    >>> [s.path for s in skipped_in_order([a, b, a])]
    ['a.xml', 'b.xml']
    """
    return tuple(
        sorted(
            set(files),
            key=lambda s: (s.path, s.line or 0, s.line is not None, str(s.message), s.key or ""),
        )
    )


def skipped_to_header(files: Iterable[SkippedFile]) -> list[dict[str, Any]]:
    """The header's ``skipped`` list: the files in :func:`skipped_in_order`, as JSON values."""
    return [
        {"path": s.path, "line": s.line, "key": s.key, "message": _message_to_header(s.message)}
        for s in skipped_in_order(files)
    ]


def skipped_of_header(value: object, source: str) -> tuple[SkippedFile, ...]:
    """The files a state's header lists as skipped (:func:`skipped_to_header`); a line,
    where there is one, counts from 1 as every reader counts it.

    Raises:
        StateError: The list is not one of skipped files (one line naming ``source``).
    """
    if not isinstance(value, list):
        raise StateError(f"{source}: corrupted header (skipped)")
    files = []
    for entry in value:
        if not (
            isinstance(entry, dict)
            and set(entry) == {"path", "line", "key", "message"}
            and isinstance(entry["path"], str)
            and (entry["line"] is None or (type(entry["line"]) is int and entry["line"] >= 1))
            and (entry["key"] is None or isinstance(entry["key"], str))
        ):
            raise StateError(f"{source}: corrupted header (skipped)")
        message = _message_of_header(entry["message"], source)
        files.append(SkippedFile(entry["path"], message, entry["line"], key=entry["key"]))
    return skipped_in_order(files)


#: The values an option named in a message keeps through a state (JSON's own).
_JSON_SCALARS = (str, int, float, bool, type(None))


def _message_to_header(message: str) -> str | list[str | dict[str, Any]]:
    """A message as JSON: its text, or its parts when it names options (so that a report
    of the merged states names them as the run that skipped the file would)."""
    if not isinstance(message, Message):
        return str(message)
    parts: list[str | dict[str, Any]] = []
    for part in message.parts:
        value = part.value if isinstance(part, Option) else None
        kept = isinstance(value, _JSON_SCALARS) or (
            isinstance(value, list) and all(isinstance(v, _JSON_SCALARS) for v in value)
        )
        if isinstance(part, Option) and kept:
            parts.append({"option": part.field, "value": value, "placeholder": part.placeholder})
        else:
            parts.append(str(part))
    return parts


def _message_of_header(value: object, source: str) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise StateError(f"{source}: corrupted header (skipped)")
    parts: list[str | Option] = []
    for part in value:
        if isinstance(part, str):
            parts.append(part)
        elif (
            isinstance(part, dict)
            and set(part) == {"option", "value", "placeholder"}
            and isinstance(part["option"], str)
            and (part["placeholder"] is None or isinstance(part["placeholder"], str))
        ):
            parts.append(Option(part["option"], part["value"], part["placeholder"]))
        else:
            raise StateError(f"{source}: corrupted header (skipped)")
    return Message(*parts)


def numbered_of_header(value: object, source: str) -> list[tuple[int, int]]:
    """The ranges of numbered images a state's header lists (none in most states)."""
    ranges: list[tuple[int, int]] = []
    if not isinstance(value, list):
        raise StateError(f"{source}: corrupted header (numbered)")
    for entry in value:
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and all(type(n) is int for n in entry)
            and 0 <= entry[0] < entry[1]
        ):
            raise StateError(f"{source}: corrupted header (numbered)")
        ranges = with_range(ranges, (entry[0], entry[1]))
    return ranges


def orphans_of_header(value: object, source: str) -> frozenset[tuple[str, str]]:
    """The header's ``orphan_pred`` list of ``[key, path]``.

    Raises:
        StateError: It is not such a list.
    """
    if not isinstance(value, list) or not all(
        is_str_list(entry) and len(entry) == 2 for entry in value
    ):
        raise StateError(f"{source}: corrupted header (orphan_pred)")
    return frozenset((key, path) for key, path in value)


def is_str_list(value: object) -> TypeGuard[list[str]]:
    """A list of strings only (each checked in one pass of C calls: a header holds many)."""
    return isinstance(value, list) and all(map(isinstance, value, repeat(str)))


def with_range(ranges: list[tuple[int, int]], added: tuple[int, int]) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of numbers with one more, sorted and joined where they touch
    (add_batch numbers images one after another: a run of them is one range)."""
    if ranges and ranges[-1][1] == added[0]:
        return [*ranges[:-1], (ranges[-1][0], added[1])]
    joined: list[tuple[int, int]] = []
    for start, stop in sorted([*ranges, added]):
        if joined and joined[-1][1] >= start:
            joined[-1] = (joined[-1][0], max(joined[-1][1], stop))
        else:
            joined.append((start, stop))
    return joined


def holdable_skipped(file: object) -> bool:
    """Whether a skipped file is one a state's header holds and reads back
    (:func:`~vocmatch.evaluation.shards.state_records.skipped_of_header`)."""
    return (
        isinstance(file, SkippedFile)
        and isinstance(file.path, str)
        and isinstance(file.message, str)
        and (file.line is None or (type(file.line) is int and file.line >= 1))
        and (file.key is None or isinstance(file.key, str))
    )

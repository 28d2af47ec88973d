"""Semantic-segmentation scores for PASCAL VOC ``SegmentationClass``-style PNG masks.

A mask is a palette (``P``) or greyscale (``L``) PNG whose pixel values are class indices;
255 is *void*. Ground-truth and prediction masks are paired by their path relative to their
directory, without extension, and every pair adds to one dataset-wide confusion matrix.

Conventions:

* Void ground truth: a pixel whose ground truth is 255 is ignored, whatever the prediction
  says (VOC devkit ``VOCevalseg.m``: ``locs = gtim<255``).
* Void predictions, the ``pred_void`` option:

  * ``"error"`` (default): a prediction mask holding 255 is rejected. The VOC devkit stops on
    any result value above the number of object classes (``VOCevalseg.m``: ``if
    (maxlabel>VOCopts.nclasses), error(... out of range value ...)``), which includes 255
    anywhere in the mask; here the image is skipped instead and the rest still counts.
  * ``"miss"``: 255 is accepted and, where the ground truth is a class, counts as a false
    negative of that class and a wrongly labelled pixel, as in mmsegmentation's
    ``intersect_and_union`` (pixels are masked by ``label != ignore_index`` only; a
    prediction outside ``[0, num_classes)`` adds to the ground-truth area but to no
    prediction area).

* Per-class IoU is ``TP / (TP + FP + FN)`` summed over all pixels of the dataset, not averaged
  over images (``VOCevalseg.m``: ``gtjresj/(gtj+resj-gtjresj)``). A class with
  ``TP + FP + FN = 0`` has no IoU (NaN in arrays, None in records) and is left out of the mean
  IoU; the devkit averages over all 21 classes, which is the same number whenever every class
  occurs, as on the VOC test sets.
* Pixel accuracy is correctly labelled pixels over non-void ground-truth pixels. Mean class
  accuracy is the mean, over classes with ground-truth pixels, of ``TP / (TP + FN)``.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

import numpy as np
import numpy.typing as npt

from vocmatch.errors import AnnotationError, InputError
from vocmatch.readers.parse import list_directory
from vocmatch.readers.regular_files import open_regular, read_bytes
from vocmatch.readers.workers import worker_count, worker_results

if TYPE_CHECKING:
    import PIL.Image

__all__ = [
    "MAX_MASK_PIXELS",
    "VOC_CLASSES",
    "VOID",
    "PredVoid",
    "SegClassResult",
    "SegEvaluation",
    "SegImageResult",
    "SegSkipped",
    "SkipReason",
    "class_iou",
    "confusion_matrix",
    "evaluate_masks",
    "pred_void_counts",
    "read_class_names",
    "read_mask",
]

VOID = 255
"""The mask value that marks void (unlabelled, ignored) pixels."""

VOC_CLASSES: tuple[str, ...] = (
    "background",
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
)
"""The 21 PASCAL VOC segmentation classes, in mask-index order (0 is background)."""

PredVoid = Literal["error", "miss"]
"""How a prediction value of 255 is treated; see the module docstring."""

SkipReason = Literal["missing_pred", "missing_gt", "invalid"]
"""Why an image was not evaluated: no prediction mask, no ground-truth mask, or a mask that
could not be used (unreadable, wrong mode, wrong size, value out of range)."""

MAX_MASK_PIXELS = 89_478_485
"""The largest mask read, in pixels: a larger one is refused from its header, before it is
decoded. Pillow's own decompression-bomb threshold (its ``MAX_IMAGE_PIXELS`` default, where
it starts to warn); a mask pair that size takes about 1 GiB to count."""

_MASK_MODES = ("P", "L")
# Every uint8 value pair has a bin, so one bincount both counts and finds out-of-range values.
_LEVELS = 256

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SegClassResult:
    """Dataset-wide pixel counts and IoU of one class.

    Attributes:
        name: Class name.
        iou: ``tp / (tp + fp + fn)``; None when the class occurs in neither the ground truth
            nor the predictions.
        tp: Pixels of this class predicted as this class.
        fp: Non-void pixels of another class predicted as this class.
        fn: Pixels of this class predicted as another class (or as void, under
            ``pred_void="miss"``).
    """

    name: str
    iou: float | None
    tp: int
    fp: int
    fn: int

    @property
    def accuracy(self) -> float | None:
        """``tp / (tp + fn)``, the share of this class's pixels labelled correctly.

        None when the class has no ground-truth pixels.
        """
        gt_pixels = self.tp + self.fn
        return self.tp / gt_pixels if gt_pixels else None


@dataclass(frozen=True, slots=True)
class SegImageResult:
    """Scores of one ground-truth and prediction pair.

    Attributes:
        key: Path relative to the mask directory, without extension, ``/`` separated.
        pixel_accuracy: Correct pixels over non-void ground-truth pixels; None when every
            ground-truth pixel is void.
        miou: Mean IoU over the classes that occur in this image's ground truth or
            prediction (on non-void pixels); None when there is none.
        gt_classes: Names of the classes present in the ground-truth mask, in index order.
        pred_classes: Names of the classes present anywhere in the prediction mask, in index
            order.
    """

    key: str
    pixel_accuracy: float | None
    miou: float | None
    gt_classes: tuple[str, ...]
    pred_classes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SegSkipped:
    """An image that was not evaluated, and why.

    Attributes:
        path: The file at fault (for a missing mask, the mask that has no partner).
        message: What is wrong, in one line.
        reason: ``"missing_pred"``, ``"missing_gt"`` or ``"invalid"``.
    """

    path: str
    message: str
    reason: SkipReason

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class SegEvaluation:
    """Result of evaluating a directory of prediction masks against ground truth.

    Attributes:
        classes: One record per class, in index order.
        images: One record per evaluated pair, sorted by key.
        skipped: Masks that were not evaluated, sorted by key.
        miou: Mean of the per-class IoUs that are not None; None if all are.
        pixel_accuracy: Correct pixels over all non-void ground-truth pixels; None if there
            are none.
        mean_accuracy: Mean of the per-class accuracies (``tp / (tp + fn)``) of classes with
            ground-truth pixels; None if there are none.
        pred_void: The ``pred_void`` convention the counts were made under.
        confusion: Dataset-wide pixel counts, shape ``(C, C)``, rows ground truth, columns
            prediction; read-only.
        pred_void_pixels: Shape ``(C,)``, ground-truth pixels of each class predicted as void
            (all zero under ``pred_void="error"``); read-only.
    """

    classes: tuple[SegClassResult, ...]
    images: tuple[SegImageResult, ...]
    skipped: tuple[SegSkipped, ...]
    miou: float | None
    pixel_accuracy: float | None
    mean_accuracy: float | None
    pred_void: PredVoid
    confusion: IntArray = field(repr=False, compare=False)
    pred_void_pixels: IntArray = field(repr=False, compare=False)

    def to_json_dict(self) -> dict[str, object]:
        """The result as plain JSON-ready values with a fixed key order.

        Missing values (NaN IoUs, empty denominators) are None, written as ``null``.

        Returns:
            ``{"summary": {...}, "classes": [...], "images": [...], "skipped": [...]}``.
        """
        return {
            "summary": {
                "miou": self.miou,
                "pixel_accuracy": self.pixel_accuracy,
                "mean_accuracy": self.mean_accuracy,
                "images": len(self.images),
                "skipped": len(self.skipped),
            },
            "classes": [
                {"name": c.name, "iou": c.iou, "tp": c.tp, "fp": c.fp, "fn": c.fn}
                for c in self.classes
            ],
            "images": [
                {
                    "key": i.key,
                    "pixel_accuracy": i.pixel_accuracy,
                    "miou": i.miou,
                    "gt_classes": list(i.gt_classes),
                    "pred_classes": list(i.pred_classes),
                }
                for i in self.images
            ],
            "skipped": [
                {"path": s.path, "error": s.message, "reason": s.reason} for s in self.skipped
            ],
        }


def read_class_names(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Read class names, one per line, in mask-index order (the first line is index 0).

    Surrounding whitespace is stripped and blank lines are skipped.

    Args:
        path: A UTF-8 text file.

    Returns:
        The names.

    Raises:
        AnnotationError: The file cannot be read, holds no names, more than 255 names (255 is
            void), or the same name twice.
    """
    shown = os.fspath(path)
    try:
        # Regular files only, read without blocking: a named pipe cannot hang the run.
        text = read_bytes(path).decode("utf-8")
    except AnnotationError as e:
        raise AnnotationError(shown, f"cannot read class names: {e.message}") from None
    except UnicodeDecodeError as e:
        raise AnnotationError(shown, f"cannot read class names: {e}") from None
    names: list[str] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        name = raw.strip()
        if not name:
            continue
        if name in first_line:
            raise AnnotationError(
                shown, f"class {name!r} is already named on line {first_line[name]}", number
            )
        first_line[name] = number
        names.append(name)
    if not names:
        raise AnnotationError(shown, "holds no class names")
    if len(names) > VOID:
        raise AnnotationError(
            shown, f"holds {len(names)} class names; at most {VOID} fit below void ({VOID})"
        )
    return tuple(names)


def _open_quietly(handle: BinaryIO) -> PIL.Image.Image:
    """The image, its header read; Pillow's decompression-bomb warning kept from the user
    (the size is checked against vocmatch's own limit, in its words)."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        return Image.open(handle)


def read_mask(path: str | os.PathLike[str]) -> npt.NDArray[np.uint8]:
    """Read a mask PNG as its class indices.

    A palette image gives its palette indices, never colours.

    Args:
        path: A ``P``- or ``L``-mode PNG file.

    Returns:
        Shape ``(H, W)``, the pixel values.

    Raises:
        AnnotationError: The file cannot be read, is not a PNG, is not single-channel (for
            example an RGB mask), or has more than :data:`MAX_MASK_PIXELS` pixels.
    """
    # Imported here: only mask evaluation needs Pillow.
    from PIL import Image, UnidentifiedImageError

    shown = os.fspath(path)
    try:
        # Opened as a regular file first: a named pipe or a device is refused, not waited on.
        with open_regular(path, "mask") as handle, _open_quietly(handle) as image:
            if image.format != "PNG":
                raise AnnotationError(shown, f"not a PNG file (Pillow reads it as {image.format})")
            if image.mode not in _MASK_MODES:
                raise AnnotationError(
                    shown,
                    f"mask has mode {image.mode}; expected a palette (P) or greyscale (L) "
                    "PNG whose pixel values are class indices",
                )
            # The size is the header's: nothing is decoded before np.asarray.
            width, height = image.size
            if width * height > MAX_MASK_PIXELS:
                raise AnnotationError(
                    shown,
                    f"mask is {width:,}x{height:,} pixels, over the "
                    f"{MAX_MASK_PIXELS:,}-pixel limit",
                )
            # np.asarray on a P-mode image gives palette indices; no colour conversion.
            return np.asarray(image, dtype=np.uint8)
    except AnnotationError:
        raise
    except UnidentifiedImageError:
        raise AnnotationError(shown, "not an image file Pillow can read") from None
    except Image.DecompressionBombError:
        # Pillow refuses beyond twice its own threshold before the size can be asked.
        raise AnnotationError(
            shown,
            f"mask is more than {2 * (Image.MAX_IMAGE_PIXELS or 0):,} pixels, over the "
            f"{MAX_MASK_PIXELS:,}-pixel limit",
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError) as e:
        # Pillow reports unreadable, truncated and corrupt files through these; the system's
        # own errors (a read that would block) in its words, as annotation files are.
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise AnnotationError(shown, f"cannot read mask: {reason}") from None


def _joint_histogram(
    gt: npt.NDArray[np.uint8], pred: npt.NDArray[np.uint8]
) -> npt.NDArray[np.int64]:
    """Count every (gt value, pred value) pair; shape ``(256, 256)``, rows ground truth."""
    # Over all 256 levels rather than n_classes: one bincount then yields the confusion
    # matrix, the void column and any out-of-range value, with no boolean mask to build.
    index = (gt.astype(np.uint16) << 8) | pred
    counts = np.bincount(index.ravel(), minlength=_LEVELS * _LEVELS)
    return counts.astype(np.int64, copy=False).reshape(_LEVELS, _LEVELS)


def _as_mask(values: npt.ArrayLike, name: str) -> npt.NDArray[np.uint8]:
    array = np.asarray(values)
    if array.dtype == np.uint8:
        return array
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"Expected `{name}` to hold integer class indices, got {array.dtype}")
    if array.size and (array.min() < 0 or array.max() > VOID):
        bad = int(array.min()) if array.min() < 0 else int(array.max())
        raise ValueError(f"`{name}` value {bad} is neither a class index nor void ({VOID})")
    return array.astype(np.uint8)


def _bad_value(counts_per_value: npt.NDArray[np.int64], n_classes: int, allow_void: bool) -> int:
    """The first value with pixels that is neither a class index nor allowed void; -1 if none."""
    present = np.flatnonzero(counts_per_value[n_classes:]) + n_classes
    for value in present.tolist():
        if not (allow_void and value == VOID):
            return int(value)
    return -1


def _check_n_classes(n_classes: int) -> None:
    if not 1 <= n_classes <= VOID:
        raise ValueError(f"Expected `n_classes` in 1..{VOID}, got {n_classes}")


@dataclass(frozen=True, slots=True)
class _BadValue:
    """A value out of range in one of the two masks."""

    mask: Literal["gt", "pred"]
    message: str


def _pair_counts(
    gt: npt.NDArray[np.uint8], pred: npt.NDArray[np.uint8], n_classes: int, pred_void: PredVoid
) -> npt.NDArray[np.int64] | _BadValue:
    """Counts of shape ``(C + 1, C + 1)``, or the first bad value.

    Rows are ground-truth classes then void, columns predicted classes then void: the
    confusion matrix with a void row and column around it.
    """
    joint = _joint_histogram(gt, pred)
    bad_gt = _bad_value(joint.sum(axis=1), n_classes, allow_void=True)
    if bad_gt >= 0:
        return _BadValue(
            "gt",
            f"value {bad_gt} is neither a class index (0..{n_classes - 1}) nor void ({VOID})",
        )
    bad_pred = _bad_value(joint.sum(axis=0), n_classes, allow_void=pred_void == "miss")
    if bad_pred >= 0:
        if bad_pred == VOID:
            message = (
                f"value {VOID} (void) in a prediction; the VOC devkit rejects it, "
                "pred_void='miss' counts it as a missed pixel"
            )
        else:
            expected = f"0..{n_classes - 1}" + (f" or void ({VOID})" if pred_void == "miss" else "")
            message = f"value {bad_pred} is not a class index ({expected})"
        return _BadValue("pred", message)
    keep = [*range(n_classes), VOID]
    return joint[np.ix_(keep, keep)]


def _strict_counts(
    gt: npt.ArrayLike, pred: npt.ArrayLike, n_classes: int, pred_void: PredVoid
) -> npt.NDArray[np.int64]:
    _check_n_classes(n_classes)
    gt_mask = _as_mask(gt, "gt")
    pred_mask = _as_mask(pred, "pred")
    if gt_mask.shape != pred_mask.shape:
        raise ValueError(
            f"Expected `gt` and `pred` of the same shape, got {gt_mask.shape} and {pred_mask.shape}"
        )
    counts = _pair_counts(gt_mask, pred_mask, n_classes, pred_void)
    if isinstance(counts, _BadValue):
        raise ValueError(f"`{counts.mask}` {counts.message}")
    return counts


def confusion_matrix(
    gt: npt.ArrayLike, pred: npt.ArrayLike, n_classes: int, *, pred_void: PredVoid = "error"
) -> IntArray:
    """Pixel counts per (ground-truth class, predicted class) pair.

    Pixels whose ground truth is void (255) are not counted.

    Args:
        gt: Ground-truth class indices, any shape; values in ``[0, n_classes)`` or 255.
        pred: Predicted class indices, the shape of ``gt``; values in ``[0, n_classes)``, and
            255 too under ``pred_void="miss"``.
        n_classes: Number of classes ``C``, at most 255.
        pred_void: ``"error"`` rejects a 255 anywhere in ``pred`` (VOC devkit);
            ``"miss"`` accepts it. A pixel predicted void has no predicted class, so it is in
            no cell of this matrix; :func:`pred_void_counts` counts those pixels.

    Returns:
        Shape ``(C, C)``, ``int64``: entry ``[i, j]`` is the number of pixels of class ``i``
        predicted as class ``j``.

    Raises:
        ValueError: The shapes differ, the values are not integers, or a value is out of
            range.

    Example:
        >>> gt = np.array([[0, 0, 1], [1, 1, 255]])
        >>> pred = np.array([[0, 1, 1], [1, 0, 0]])
        >>> confusion_matrix(gt, pred, 2)
        array([[1, 1],
               [1, 2]])
    """
    return np.ascontiguousarray(_strict_counts(gt, pred, n_classes, pred_void)[:-1, :-1])


def pred_void_counts(gt: npt.ArrayLike, pred: npt.ArrayLike, n_classes: int) -> IntArray:
    """Pixels of each ground-truth class that the prediction marks void (255).

    These are false negatives under ``pred_void="miss"``; pass them to :func:`class_iou`.

    Args:
        gt: Ground-truth class indices, any shape; values in ``[0, n_classes)`` or 255.
        pred: Predicted class indices, the shape of ``gt``; values in ``[0, n_classes)`` or 255.
        n_classes: Number of classes ``C``, at most 255.

    Returns:
        Shape ``(C,)``, ``int64``.

    Raises:
        ValueError: As :func:`confusion_matrix`.

    Example:
        >>> pred_void_counts(np.array([0, 1, 1, 255]), np.array([255, 255, 1, 255]), 2)
        array([1, 1])
    """
    return np.ascontiguousarray(_strict_counts(gt, pred, n_classes, "miss")[:-1, -1])


def class_iou(
    confusion: npt.ArrayLike, pred_void_pixels: npt.ArrayLike | None = None
) -> FloatArray:
    """Per-class IoU ``TP / (TP + FP + FN)`` of a confusion matrix.

    Args:
        confusion: Shape ``(C, C)``, rows ground truth, columns prediction.
        pred_void_pixels: Shape ``(C,)``, ground-truth pixels of each class predicted void
            (:func:`pred_void_counts`), added to that class's false negatives; None for none.

    Returns:
        Shape ``(C,)``; NaN for a class with ``TP + FP + FN = 0``.

    Raises:
        ValueError: ``confusion`` is not square, or ``pred_void_pixels`` does not have one
            entry per class.

    Example:
        >>> class_iou(np.array([[1, 1, 0], [1, 2, 0], [0, 0, 0]]))
        array([0.33333333, 0.5       ,        nan])
    """
    matrix = np.asarray(confusion, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"Expected `confusion` to have shape (C, C), got {matrix.shape}")
    tp = np.diag(matrix)
    union = matrix.sum(axis=0) + matrix.sum(axis=1) - tp
    if pred_void_pixels is not None:
        missed = np.asarray(pred_void_pixels, dtype=np.float64)
        if missed.shape != tp.shape:
            raise ValueError(
                f"Expected `pred_void_pixels` to have shape {tp.shape}, got {missed.shape}"
            )
        union = union + missed
    iou = np.full(tp.shape, np.nan)
    np.divide(tp, union, out=iou, where=union > 0)
    return iou


def _mean_or_none(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def _class_results(
    counts: npt.NDArray[np.int64], names: Sequence[str]
) -> tuple[SegClassResult, ...]:
    """Records from counts of shape ``(C + 1, C + 1)`` (last row and column: void)."""
    n = len(names)
    tp = np.diag(counts)[:n]
    fp = counts[:n, :n].sum(axis=0) - tp
    fn = counts[:n].sum(axis=1) - tp
    results = []
    for name, t, p, f in zip(names, tp.tolist(), fp.tolist(), fn.tolist(), strict=True):
        union = t + p + f
        results.append(SegClassResult(name, t / union if union else None, t, p, f))
    return tuple(results)


def _accuracy(counts: npt.NDArray[np.int64]) -> float | None:
    """Correct over non-void ground-truth pixels, from counts of shape ``(C + 1, C + 1)``."""
    valid = int(counts[:-1].sum())
    return int(np.trace(counts[:-1, :-1])) / valid if valid else None


@dataclass(frozen=True, slots=True)
class _Pair:
    key: str
    gt_path: Path
    pred_path: Path


def _evaluate_pair(
    pair: _Pair, names: tuple[str, ...], pred_void: PredVoid
) -> tuple[npt.NDArray[np.int64], SegImageResult] | SegSkipped:
    try:
        gt = read_mask(pair.gt_path)
        pred = read_mask(pair.pred_path)
    except AnnotationError as e:
        return SegSkipped(e.path, e.message, "invalid")
    if gt.shape != pred.shape:
        # Same wording as the devkit: width x height.
        return SegSkipped(
            str(pair.pred_path),
            f"mask is {pred.shape[1]}x{pred.shape[0]} but the ground truth is "
            f"{gt.shape[1]}x{gt.shape[0]}",
            "invalid",
        )
    n = len(names)
    counts = _pair_counts(gt, pred, n, pred_void)
    if isinstance(counts, _BadValue):
        path = pair.gt_path if counts.mask == "gt" else pair.pred_path
        return SegSkipped(str(path), counts.message, "invalid")
    classes = _class_results(counts, names)
    # Classes present in the prediction anywhere, void ground truth included.
    pred_any = counts[:, :n].sum(axis=0)
    image = SegImageResult(
        key=pair.key,
        pixel_accuracy=_accuracy(counts),
        miou=_mean_or_none(c.iou for c in classes),
        gt_classes=tuple(c.name for c in classes if c.tp + c.fn > 0),
        pred_classes=tuple(name for name, k in zip(names, pred_any.tolist(), strict=True) if k),
    )
    return counts, image


def _evaluate_chunk(
    pairs: Sequence[_Pair], names: tuple[str, ...], pred_void: PredVoid
) -> list[tuple[npt.NDArray[np.int64], SegImageResult] | SegSkipped]:
    return [_evaluate_pair(pair, names, pred_void) for pair in pairs]


def _masks_by_key(root: Path, skipped: dict[str, SegSkipped]) -> dict[str, Path]:
    """The ``*.png`` files below ``root`` by key; folders that cannot be read and files
    left out of the listing go to ``skipped``.

    The evaluator's own walk: links followed, each folder entered once, its own stack (a
    tree thousands of folders deep is no deeper for Python).
    """
    listing = list_directory(root, ".png")
    for left_out in listing.skipped:
        skipped.setdefault(left_out.key or left_out.path, SegSkipped(
            left_out.path, left_out.message, "invalid"
        ))  # fmt: skip
    return {key: Path(path) for key, path in listing.files}


def _check_dir(path: str | os.PathLike[str], what: str) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{what} directory {os.fspath(path)!r} is not a directory")
    return root


def _chunks(pairs: Sequence[_Pair], size: int) -> Iterator[Sequence[_Pair]]:
    for start in range(0, len(pairs), size):
        yield pairs[start : start + size]


def evaluate_masks(
    gt_dir: str | os.PathLike[str],
    pred_dir: str | os.PathLike[str],
    class_names: Sequence[str] = VOC_CLASSES,
    *,
    pred_void: PredVoid = "error",
    jobs: int = 1,
) -> SegEvaluation:
    """Score every prediction mask against the ground-truth mask of the same relative path.

    Masks are found recursively (``**/*.png``) and paired by path without extension. A pair
    that cannot be evaluated (unreadable or non-PNG file, RGB mask, sizes that differ, a value
    out of range) and a mask without a partner are recorded in ``skipped``; the other pairs
    are still evaluated.

    Args:
        gt_dir: Directory of ground-truth masks.
        pred_dir: Directory of prediction masks.
        class_names: Class names in mask-index order; :data:`VOC_CLASSES` by default, or the
            result of :func:`read_class_names`.
        pred_void: How a predicted 255 is treated; see the module docstring.
        jobs: Worker processes reading and counting masks; 1 evaluates in this process. A pool
            has a fixed start-up cost (tens of milliseconds where processes fork, more where
            they spawn), so it pays off only beyond a few dozen masks.

    Returns:
        The dataset-wide and per-image scores.

    Raises:
        InputError: A directory does not exist, ``gt_dir`` holds no masks, the class names
            are a string, empty, more than 255 or repeated, ``pred_void`` is unknown, or
            ``jobs < 1``.
    """
    if isinstance(class_names, str):
        raise InputError(
            "class_names must be a sequence of names; read a file with read_class_names"
        )
    names = tuple(class_names)
    if not 1 <= len(names) <= VOID:
        raise InputError(f"expected 1 to {VOID} class names, got {len(names)}")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"class names are repeated: {', '.join(repeated)}")
    if pred_void not in ("error", "miss"):
        raise InputError(f"pred_void must be 'error' or 'miss', got {pred_void!r}")
    if jobs < 1:
        raise InputError(f"jobs must be at least 1, got {jobs}")
    gt_root = _check_dir(gt_dir, "ground-truth")
    pred_root = _check_dir(pred_dir, "prediction")
    skipped: dict[str, SegSkipped] = {}
    gt_masks = _masks_by_key(gt_root, skipped)
    if not gt_masks:
        raise InputError(f"no *.png masks under {os.fspath(gt_dir)!r}")
    pred_masks = _masks_by_key(pred_root, skipped)

    pairs: list[_Pair] = []
    for key in sorted(gt_masks.keys() | pred_masks.keys()):
        gt_path = gt_masks.get(key)
        pred_path = pred_masks.get(key)
        if gt_path is not None and pred_path is not None:
            pairs.append(_Pair(key, gt_path, pred_path))
        elif gt_path is not None:
            expected = pred_root / gt_path.relative_to(gt_root)
            skipped[key] = SegSkipped(
                str(gt_path), f"no prediction mask (expected {expected})", "missing_pred"
            )
        else:
            skipped[key] = SegSkipped(str(pred_masks[key]), "no ground-truth mask", "missing_gt")

    n = len(names)
    total = np.zeros((n + 1, n + 1), dtype=np.int64)
    images: list[SegImageResult] = []
    with _outcomes(pairs, names, pred_void, jobs) as outcomes:
        for pair, outcome in zip(pairs, outcomes, strict=True):
            if isinstance(outcome, SegSkipped):
                skipped[pair.key] = outcome
            else:
                counts, image = outcome
                total += counts
                images.append(image)

    classes = _class_results(total, names)
    confusion = np.ascontiguousarray(total[:n, :n])
    void_column = np.ascontiguousarray(total[:n, n])
    confusion.flags.writeable = False
    void_column.flags.writeable = False
    return SegEvaluation(
        classes=classes,
        images=tuple(images),
        skipped=tuple(skipped[key] for key in sorted(skipped)),
        miou=_mean_or_none(c.iou for c in classes),
        pixel_accuracy=_accuracy(total),
        mean_accuracy=_mean_or_none(c.accuracy for c in classes),
        pred_void=pred_void,
        confusion=confusion,
        pred_void_pixels=void_column,
    )


@contextmanager
def _outcomes(
    pairs: Sequence[_Pair], names: tuple[str, ...], pred_void: PredVoid, jobs: int
) -> Iterator[Iterator[tuple[npt.NDArray[np.int64], SegImageResult] | SegSkipped]]:
    """Evaluate the pairs in order, in this process or in up to ``jobs`` worker processes
    (stopped at once if the block ends by an exception)."""
    workers = worker_count(jobs, len(pairs))
    # A few chunks per worker: large enough that pickling and scheduling stay small next to
    # PNG decoding, small enough to balance the load.
    size = max(1, math.ceil(len(pairs) / (workers * 4)))
    tasks = [(chunk, names, pred_void) for chunk in _chunks(pairs, size)]
    with worker_results(_evaluate_chunk, tasks, workers) as chunks:
        yield itertools.chain.from_iterable(chunks)

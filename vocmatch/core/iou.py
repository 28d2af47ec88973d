"""The IoU core: pairwise box overlap, Dice and GIoU (numpy only); the Jaccard of label sets
is :mod:`vocmatch.core.label_sets`.

Boxes are ``(N, 4)`` arrays in corner form ``x1, y1, x2, y2`` with the y-axis pointing down.
Every matrix is ``(N_gt, M_pred)``: rows are ground truth, columns are predictions, also when
either side is empty. The pair functions (:func:`pair_iou`, :func:`pair_intersection`) take
two ``(P, 4)`` arrays and score row ``i`` against row ``i``: the evaluator lists the pairs of
boxes that can match and scores only those.

One arithmetic serves every form: an intersection (:func:`pair_intersection`, of which
:func:`intersection_matrix` is the all-pairs case) and areas (:func:`box_area`, or a region's
exact area from :mod:`vocmatch.core.geometry`) become an IoU in :func:`iou_from_intersection`. A
pair therefore gets the same IoU, to the bit, in a matrix, in a list of pairs, or as a
region.

Two arithmetics exist: float64 (every function here but two), and the ``ultralytics``
package's float32 ``box_iou`` (:func:`pair_iou_float32`, :func:`iou_matrix_float32`):
coordinates, widths, areas and the ratio in float32, ``1e-7`` (as float32) added to the
union, the areas of the ground truth and of the prediction summed first.

Two area conventions exist and both are named options:

* continuous (default, pycocotools): a box's width is ``x2 - x1``;
* pixel-inclusive (PASCAL VOC devkit, ``voc_eval.py``): ``x2`` is the index of the last pixel
  inside the box, so the width is ``x2 - x1 + 1`` and the intersection width is
  ``max(ix2 - ix1 + 1, 0)``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = [
    "FloatArray",
    "as_boxes",
    "box_area",
    "crowd_iou_matrix",
    "dice_from_iou",
    "dice_matrix",
    "giou_matrix",
    "intersection_matrix",
    "iou_from_intersection",
    "iou_matrix",
    "iou_matrix_float32",
    "pair_intersection",
    "pair_iou",
    "pair_iou_float32",
    "union_matrix",
    "xywh_to_xyxy",
]

FloatArray = npt.NDArray[np.float64]


def as_boxes(boxes: npt.ArrayLike, name: str = "boxes") -> FloatArray:
    """Convert box coordinates to a float64 ``(N, 4)`` array, validating the shape.

    Args:
        boxes: Anything numpy reads as ``(N, 4)`` numbers; an empty sequence is ``(0, 4)``.
        name: The argument's name, for the error message.

    Returns:
        An ``(N, 4)`` float64 array: the input itself when it already is one (large arrays
        are not copied), a new array otherwise. The input is never modified.

    Raises:
        ValueError: The input is not ``(N, 4)``.

    >>> as_boxes([]).shape
    (0, 4)
    """
    array = np.asarray(boxes, dtype=np.float64)
    if array.size == 0:
        return np.zeros((0, 4), dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 4:
        raise ValueError(f"Expected `{name}` to have shape (N, 4), got {array.shape}")
    return array


def xywh_to_xyxy(boxes: npt.ArrayLike) -> FloatArray:
    """Convert ``x, y, w, h`` boxes to corner form ``x1, y1, x2, y2`` (``x2 = x + w``).

    Args:
        boxes: ``(N, 4)`` boxes as left, top, width, height.

    Returns:
        ``(N, 4)`` corner boxes.

    >>> xywh_to_xyxy([[10, 20, 5, 8]]).tolist()
    [[10.0, 20.0, 15.0, 28.0]]
    """
    array = as_boxes(boxes)
    out = array.copy()  # as_boxes may return the caller's own array
    out[:, 2] = array[:, 0] + array[:, 2]
    out[:, 3] = array[:, 1] + array[:, 3]
    return out


def box_area(boxes: npt.ArrayLike, pixel_inclusive: bool = False) -> FloatArray:
    """Area of each box.

    Args:
        boxes: ``(N, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``(x2 - x1 + 1) * (y2 - y1 + 1)``.

    Returns:
        ``(N,)`` areas, never negative.

    >>> box_area([[0, 0, 2, 3]]).tolist(), box_area([[0, 0, 2, 3]], pixel_inclusive=True).tolist()
    ([6.0], [12.0])
    """
    array = as_boxes(boxes)
    extra = 1.0 if pixel_inclusive else 0.0
    # Worked in place on the two new columns: large sets pass millions of boxes.
    widths = array[:, 2] - array[:, 0]
    widths += extra
    np.maximum(widths, 0.0, out=widths)
    heights = array[:, 3] - array[:, 1]
    heights += extra
    np.maximum(heights, 0.0, out=heights)
    widths *= heights
    return widths


def _intersection(gt: FloatArray, pred: FloatArray, extra: float) -> FloatArray:
    """Intersection areas of boxes that broadcast against each other: ``(N, 1, 4)`` and
    ``(1, M, 4)`` for a matrix, two ``(P, 4)`` for pairs. The one place of this arithmetic."""
    widths = np.minimum(gt[..., 2], pred[..., 2]) - np.maximum(gt[..., 0], pred[..., 0])
    heights = np.minimum(gt[..., 3], pred[..., 3]) - np.maximum(gt[..., 1], pred[..., 1])
    widths += extra
    np.maximum(widths, 0.0, out=widths)
    heights += extra
    np.maximum(heights, 0.0, out=heights)
    widths *= heights
    return widths


def intersection_matrix(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, pixel_inclusive: bool = False
) -> FloatArray:
    """Pairwise intersection areas, clamped at 0 so disjoint or touching boxes give 0.

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.

    Returns:
        ``(N, M)`` intersection areas.

    >>> intersection_matrix([[50, 50, 150, 150]], [[80, 80, 180, 180]]).tolist()
    [[4900.0]]
    """
    gt = as_boxes(gt_boxes, "gt_boxes")
    pred = as_boxes(pred_boxes, "pred_boxes")
    extra = 1.0 if pixel_inclusive else 0.0
    return _intersection(gt[:, None, :], pred[None, :, :], extra)


def pair_intersection(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, pixel_inclusive: bool = False
) -> FloatArray:
    """Intersection area of each pair ``(gt_boxes[i], pred_boxes[i])``, clamped at 0.

    The arithmetic of :func:`intersection_matrix`, pair by pair: a pair gets the same value
    in both.

    Args:
        gt_boxes: ``(P, 4)`` corner boxes.
        pred_boxes: ``(P, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.

    Returns:
        ``(P,)`` intersection areas.

    Raises:
        ValueError: The two arrays do not have the same number of boxes.

    >>> pair_intersection([[50, 50, 150, 150], [0, 0, 1, 1]], [[80, 80, 180, 180], [2, 2, 3, 3]])
    array([4900.,    0.])
    """
    gt = as_boxes(gt_boxes, "gt_boxes")
    pred = as_boxes(pred_boxes, "pred_boxes")
    if gt.shape != pred.shape:
        raise ValueError(
            f"Expected `gt_boxes` and `pred_boxes` to have the same shape, got {gt.shape} "
            f"and {pred.shape}"
        )
    return _intersection(gt, pred, 1.0 if pixel_inclusive else 0.0)


def _areas_and_intersection(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, pixel_inclusive: bool
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(N,)`` and ``(M,)`` areas and the ``(N, M)`` intersections, from validated boxes."""
    gt = as_boxes(gt_boxes, "gt_boxes")
    pred = as_boxes(pred_boxes, "pred_boxes")
    return (
        box_area(gt, pixel_inclusive),
        box_area(pred, pixel_inclusive),
        intersection_matrix(gt, pred, pixel_inclusive),
    )


def union_matrix(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, pixel_inclusive: bool = False
) -> FloatArray:
    """Pairwise union areas ``A + B - I``.

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.

    Returns:
        ``(N, M)`` union areas.

    >>> union_matrix([[50, 50, 150, 150]], [[80, 80, 180, 180]]).tolist()
    [[15100.0]]
    """
    gt_area, pred_area, inter = _areas_and_intersection(gt_boxes, pred_boxes, pixel_inclusive)
    return gt_area[:, None] + pred_area[None, :] - inter


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    # A zero denominator (two zero-area boxes) gives 0.0, never a division error.
    out = np.zeros(np.broadcast_shapes(numerator.shape, denominator.shape), dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def iou_from_intersection(
    intersection: npt.ArrayLike,
    gt_area: npt.ArrayLike,
    pred_area: npt.ArrayLike,
    gt_crowd: npt.ArrayLike | None = None,
) -> FloatArray:
    """IoU from an intersection and the two areas: ``I / (A + B - I)``, or ``I / B`` where
    the ground truth is a crowd region (pycocotools' ``iscrowd``, see
    :func:`crowd_iou_matrix`). Every IoU of vocmatch, of boxes or of regions, is this one
    expression.

    Args:
        intersection: Intersection areas.
        gt_area: Areas of the ground truth, broadcasting against ``intersection``
            (``(N, 1)`` for a matrix, ``(P,)`` for pairs).
        pred_area: Areas of the predictions, broadcasting likewise (``(1, M)`` or ``(P,)``).
        gt_crowd: Crowd flags of the ground truth, broadcasting like ``gt_area``; None for
            none.

    Returns:
        The IoU, of the broadcast shape; 0.0 where the union (or, for a crowd region, the
        prediction's area) is 0.

    >>> iou_from_intersection([1.0, 1.0], [4.0, 4.0], [4.0, 2.0], [False, True]).tolist()
    [0.14285714285714285, 0.5]
    """
    inter = np.asarray(intersection, dtype=np.float64)
    a = np.asarray(gt_area, dtype=np.float64)
    b = np.asarray(pred_area, dtype=np.float64)
    union = a + b
    union -= inter
    if gt_crowd is not None:
        union = np.where(np.asarray(gt_crowd, dtype=bool), b, union)
    return _ratio(inter, union)


def iou_matrix(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, pixel_inclusive: bool = False
) -> FloatArray:
    """Pairwise intersection over union.

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.

    Returns:
        ``(N, M)`` IoU in [0, 1]; 0.0 where the union is 0.

    >>> iou_matrix([[0, 0, 2, 2]], [[1, 1, 3, 3], [0, 0, 2, 2]]).tolist()
    [[0.14285714285714285, 1.0]]
    >>> iou_matrix([[0, 0, 2, 2]], []).shape
    (1, 0)
    """
    gt_area, pred_area, inter = _areas_and_intersection(gt_boxes, pred_boxes, pixel_inclusive)
    return iou_from_intersection(inter, gt_area[:, None], pred_area[None, :])


def pair_iou(
    gt_boxes: npt.ArrayLike,
    pred_boxes: npt.ArrayLike,
    pixel_inclusive: bool = False,
    gt_crowd: npt.ArrayLike | None = None,
) -> FloatArray:
    """IoU of each pair ``(gt_boxes[i], pred_boxes[i])``: the value :func:`iou_matrix` (or,
    with ``gt_crowd``, :func:`crowd_iou_matrix`) gives the same two boxes, to the bit.

    Args:
        gt_boxes: ``(P, 4)`` corner boxes.
        pred_boxes: ``(P, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.
        gt_crowd: ``(P,)`` booleans, True where the ground truth is a crowd region.

    Returns:
        ``(P,)`` IoU in [0, 1].

    >>> pair_iou([[0, 0, 2, 2], [0, 0, 100, 100]], [[1, 1, 3, 3], [10, 10, 20, 20]],
    ...          gt_crowd=[False, True]).tolist()
    [0.14285714285714285, 1.0]
    """
    inter = pair_intersection(gt_boxes, pred_boxes, pixel_inclusive)
    crowd = None if gt_crowd is None else np.asarray(gt_crowd, dtype=bool).reshape(-1)
    return iou_from_intersection(
        inter, box_area(gt_boxes, pixel_inclusive), box_area(pred_boxes, pixel_inclusive), crowd
    )


#: The ``ultralytics`` package's ``box_iou`` epsilon, added to the union in float32.
_UNION_EPS = np.float32(1e-7)


def _float32_iou(gt: npt.NDArray[np.float32], pred: npt.NDArray[np.float32]) -> FloatArray:
    """IoU of broadcasting float32 corner boxes (``(..., 4)``) in float32, as float64."""
    inter_w = np.maximum(
        np.minimum(gt[..., 2], pred[..., 2]) - np.maximum(gt[..., 0], pred[..., 0]), np.float32(0)
    )
    inter_h = np.maximum(
        np.minimum(gt[..., 3], pred[..., 3]) - np.maximum(gt[..., 1], pred[..., 1]), np.float32(0)
    )
    inter = inter_w * inter_h
    gt_area = (gt[..., 2] - gt[..., 0]) * (gt[..., 3] - gt[..., 1])
    pred_area = (pred[..., 2] - pred[..., 0]) * (pred[..., 3] - pred[..., 1])
    union = gt_area + pred_area - inter + _UNION_EPS
    return np.asarray(inter / union, dtype=np.float64)


def pair_iou_float32(gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike) -> FloatArray:
    """IoU of row ``i`` of ``gt_boxes`` against row ``i`` of ``pred_boxes`` in the
    ``ultralytics`` package's float32 arithmetic (continuous areas), each result exactly the
    float32 it computes.

    >>> pair_iou_float32([[0, 0, 2, 2]], [[1, 0, 3, 2]]).tolist()
    [0.3333333432674408]
    """
    gt = as_boxes(gt_boxes, "gt_boxes").astype(np.float32)
    pred = as_boxes(pred_boxes, "pred_boxes").astype(np.float32)
    return _float32_iou(gt, pred)


def iou_matrix_float32(gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike) -> FloatArray:
    """``(N, M)`` IoU in the ``ultralytics`` package's float32 arithmetic (see
    :func:`pair_iou_float32`)."""
    gt = as_boxes(gt_boxes, "gt_boxes").astype(np.float32)
    pred = as_boxes(pred_boxes, "pred_boxes").astype(np.float32)
    return _float32_iou(gt[:, None, :], pred[None, :, :])


def crowd_iou_matrix(
    gt_boxes: npt.ArrayLike,
    pred_boxes: npt.ArrayLike,
    gt_crowd: npt.ArrayLike,
    pixel_inclusive: bool = False,
) -> FloatArray:
    """IoU where a crowd ground-truth region is scored by intersection over prediction area.

    pycocotools (``maskApi.c``, ``bbIou``) replaces the union by the prediction's own area
    when the ground truth has ``iscrowd = 1``: a prediction lying inside a crowd region
    overlaps it fully, whatever the region's size.

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.
        gt_crowd: ``(N,)`` booleans, True for crowd regions.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.

    Returns:
        ``(N, M)`` overlaps in [0, 1].

    >>> crowd_iou_matrix([[0, 0, 100, 100]], [[10, 10, 20, 20]], [True]).tolist()
    [[1.0]]
    """
    gt_area, pred_area, inter = _areas_and_intersection(gt_boxes, pred_boxes, pixel_inclusive)
    crowd = np.asarray(gt_crowd, dtype=bool).reshape(-1)
    return iou_from_intersection(inter, gt_area[:, None], pred_area[None, :], crowd[:, None])


def giou_matrix(gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike) -> FloatArray:
    """Pairwise generalised IoU (Rezatofighi et al., 2019): ``IoU - (C - U) / C``.

    ``C`` is the area of the smallest box enclosing both. GIoU lies in (-1, 1] and, unlike
    IoU, still tells how far apart two disjoint boxes are.

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.

    Returns:
        ``(N, M)`` GIoU; where the enclosing area is 0 the value is the IoU (0.0).

    >>> giou_matrix([[0, 0, 10, 10]], [[20, 0, 30, 10]]).tolist()
    [[-0.3333333333333333]]
    """
    gt = as_boxes(gt_boxes, "gt_boxes")
    pred = as_boxes(pred_boxes, "pred_boxes")
    iou = iou_matrix(gt, pred)
    union = union_matrix(gt, pred)
    enclosing = (
        np.maximum(gt[:, None, 2], pred[None, :, 2]) - np.minimum(gt[:, None, 0], pred[None, :, 0])
    ) * (
        np.maximum(gt[:, None, 3], pred[None, :, 3]) - np.minimum(gt[:, None, 1], pred[None, :, 1])
    )
    return iou - _ratio(enclosing - union, enclosing)


def dice_matrix(
    gt_boxes: npt.ArrayLike, pred_boxes: npt.ArrayLike, pixel_inclusive: bool = False
) -> FloatArray:
    """Pairwise Dice coefficient ``2 I / (A + B)``, the F1 score of two regions.

    Args:
        gt_boxes: ``(N, 4)`` corner boxes.
        pred_boxes: ``(M, 4)`` corner boxes.
        pixel_inclusive: Use the VOC devkit's ``+ 1`` widths and heights.

    Returns:
        ``(N, M)`` Dice in [0, 1]; 0.0 where both areas are 0.

    >>> dice_matrix([[50, 50, 150, 150]], [[80, 80, 180, 180]]).tolist()
    [[0.49]]
    """
    gt_area, pred_area, inter = _areas_and_intersection(gt_boxes, pred_boxes, pixel_inclusive)
    return _ratio(2.0 * inter, gt_area[:, None] + pred_area[None, :])


def dice_from_iou(iou: npt.ArrayLike) -> FloatArray:
    """Dice from IoU: ``2 IoU / (1 + IoU)``, the same number as ``2 I / (A + B)``.

    >>> float(dice_from_iou(0.5))
    0.6666666666666666
    """
    value = np.asarray(iou, dtype=np.float64)
    return np.asarray(2.0 * value / (1.0 + value), dtype=np.float64)

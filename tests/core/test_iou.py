"""The IoU core against known answers and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vocmatch.core.iou import (
    as_boxes,
    box_area,
    crowd_iou_matrix,
    dice_from_iou,
    dice_matrix,
    giou_matrix,
    intersection_matrix,
    iou_from_intersection,
    iou_matrix,
    iou_matrix_float32,
    pair_intersection,
    pair_iou,
    pair_iou_float32,
    union_matrix,
    xywh_to_xyxy,
)
from vocmatch.core.label_sets import label_overlap


@pytest.mark.parametrize(
    ("gt", "pred", "intersection", "union", "iou"),
    [
        pytest.param(
            [50, 50, 150, 150], [80, 80, 180, 180], 4900, 15100, 4900 / 15100, id="overlap"
        ),
        pytest.param([0, 0, 10, 10], [20, 20, 30, 30], 0, 200, 0.0, id="disjoint"),
        pytest.param([0, 0, 2, 2], [1, 1, 3, 3], 1, 7, 1 / 7, id="one-seventh"),
        pytest.param([5, 5, 15, 25], [5, 5, 15, 25], 200, 200, 1.0, id="identical"),
        pytest.param([0, 0, 100, 100], [25, 25, 75, 75], 2500, 10000, 0.25, id="nested"),
        pytest.param([0, 0, 10, 10], [10, 0, 20, 10], 0, 200, 0.0, id="touching-edge"),
        pytest.param([0, 0, 10, 10], [10, 10, 20, 20], 0, 200, 0.0, id="touching-corner"),
        pytest.param([3, 3, 3, 3], [3, 3, 3, 3], 0, 0, 0.0, id="union-zero"),
        pytest.param([-10, -10, 0, 0], [-5, -5, 5, 5], 25, 175, 25 / 175, id="negative"),
        pytest.param([0.5, 0.5, 1.5, 1.5], [1, 1, 2, 2], 0.25, 1.75, 0.25 / 1.75, id="floats"),
    ],
)
def test_known_answers(
    gt: list[float], pred: list[float], intersection: float, union: float, iou: float
) -> None:
    """Intersection, union and IoU equal their hand-computed values."""
    assert intersection_matrix([gt], [pred])[0, 0] == pytest.approx(intersection)
    assert union_matrix([gt], [pred])[0, 0] == pytest.approx(union)
    assert iou_matrix([gt], [pred])[0, 0] == pytest.approx(iou)


def test_worked_example_dice_and_threshold() -> None:
    """The 50..150 / 80..180 pair: Dice 0.49 both ways, and no match at 0.5."""
    iou = iou_matrix([[50, 50, 150, 150]], [[80, 80, 180, 180]])[0, 0]
    assert round(iou, 4) == 0.3245
    dice = dice_matrix([[50, 50, 150, 150]], [[80, 80, 180, 180]])[0, 0]
    assert dice == pytest.approx(0.49)
    assert dice == pytest.approx(float(dice_from_iou(iou)))
    assert not iou >= 0.5


def test_pixel_inclusive_areas_follow_the_devkit() -> None:
    """The devkit's +1 convention: a 0..9 box is 10 pixels wide; touching pixels overlap."""
    assert box_area([[0, 0, 9, 9]], pixel_inclusive=True).tolist() == [100.0]
    assert intersection_matrix([[0, 0, 9, 9]], [[9, 0, 18, 9]], pixel_inclusive=True)[0, 0] == 10
    assert iou_matrix([[0, 0, 9, 9]], [[0, 0, 9, 9]], pixel_inclusive=True)[0, 0] == 1.0
    # 0..9 vs 5..14: overlap 5 x 10 = 50 of 100 + 100 - 50.
    assert iou_matrix([[0, 0, 9, 9]], [[5, 0, 14, 9]], pixel_inclusive=True)[0, 0] == 50 / 150


@pytest.mark.parametrize(
    ("box", "pixel_inclusive"),
    [
        pytest.param([30, 0, 10, 20], False, id="right-of-left"),
        pytest.param([0, 30, 10, 10], False, id="below-top"),
        pytest.param([30, 30, 10, 10], False, id="both"),
        pytest.param([30, 0, 10, 20], True, id="right-of-left-devkit"),
        pytest.param([0, 30, 10, 10], True, id="below-top-devkit"),
    ],
)
def test_an_inverted_box_has_area_0(box: list[int], pixel_inclusive: bool) -> None:
    """A box whose right edge is left of its left edge (or bottom above top) has no area,
    never a negative one: each side is clamped at 0 before the product."""
    assert box_area([box], pixel_inclusive=pixel_inclusive).tolist() == [0.0]


def test_boxes_of_a_pixel_or_less_have_their_iou() -> None:
    """Only a union of 0 gives 0: two equal unit boxes (union 1) overlap fully, and
    sub-pixel boxes (union 1/4) at their ratio."""
    assert iou_matrix([[0, 0, 1, 1]], [[0, 0, 1, 1]]).tolist() == [[1.0]]
    # 0.5 x 0.5 against 0.5 x 0.25 inside it: 0.125 / 0.25.
    assert iou_matrix([[0, 0, 0.5, 0.5]], [[0, 0, 0.5, 0.25]]).tolist() == [[0.5]]


def test_crowd_overlap_is_intersection_over_prediction_area() -> None:
    """A crowd region scores a prediction by intersection over the prediction's area."""
    gt = [[0, 0, 100, 100], [0, 0, 100, 100]]
    pred = [[50, 50, 150, 150]]
    result = crowd_iou_matrix(gt, pred, [True, False])
    assert result[:, 0].tolist() == [2500 / 10000, 2500 / 17500]


def test_giou_of_disjoint_boxes_is_negative() -> None:
    """GIoU tells how far apart disjoint boxes are; IoU is 0 for both pairs."""
    near = giou_matrix([[0, 0, 10, 10]], [[20, 0, 30, 10]])[0, 0]
    far = giou_matrix([[0, 0, 10, 10]], [[90, 0, 100, 10]])[0, 0]
    assert near == pytest.approx(200 / 300 - 1)
    assert far < near < 0


def test_xywh_conversion() -> None:
    """x, y, w, h becomes x1, y1, x1 + w, y1 + h and the input is not modified."""
    source = np.array([[10.0, 20.0, 5.0, 8.0]])
    assert xywh_to_xyxy(source).tolist() == [[10.0, 20.0, 15.0, 28.0]]
    assert source.tolist() == [[10.0, 20.0, 5.0, 8.0]]


@pytest.mark.parametrize(
    ("shape_gt", "shape_pred"),
    [
        pytest.param(0, 3, id="no-gt"),
        pytest.param(2, 0, id="no-pred"),
        pytest.param(0, 0, id="none"),
    ],
)
def test_empty_inputs_keep_the_n_by_m_shape(shape_gt: int, shape_pred: int) -> None:
    """Empty sides give an (N, M) matrix, never (M, M) or an error."""
    gt = [[0, 0, 1, 1]] * shape_gt
    pred = [[0, 0, 1, 1]] * shape_pred
    assert iou_matrix(gt, pred).shape == (shape_gt, shape_pred)


def test_bad_shape_is_reported_with_the_argument_name() -> None:
    """A (3, 5) array is refused with a message naming the argument and shape."""
    with pytest.raises(
        ValueError, match=r"Expected `gt_boxes` to have shape \(N, 4\), got \(3, 5\)"
    ):
        iou_matrix(np.zeros((3, 5)), np.zeros((1, 4)))
    assert as_boxes([]).shape == (0, 4)


@pytest.mark.parametrize(
    ("a", "b", "jaccard", "dice"),
    [
        pytest.param(["cat", "dog", "bird"], ["dog", "bird", "fish"], 0.5, 2 / 3, id="example"),
        pytest.param(["Cat", "cat ", "DOG"], ["dog", "cat"], 1.0, 1.0, id="case-and-dupes"),
        pytest.param(["a"], ["b"], 0.0, 0.0, id="disjoint"),
        pytest.param([], [], 0.0, 0.0, id="both-empty"),
    ],
)
def test_label_sets(a: list[str], b: list[str], jaccard: float, dice: float) -> None:
    """Label sets are lower-cased and de-duplicated before Jaccard and Dice."""
    overlap = label_overlap(a, b)
    assert overlap.jaccard == pytest.approx(jaccard)
    assert overlap.dice == pytest.approx(dice)


def test_label_example_matches_at_inclusive_half() -> None:
    """Jaccard 0.5 is a match at threshold 0.5 (inclusive)."""
    overlap = label_overlap(["cat", "dog", "bird"], ["dog", "bird", "fish"])
    assert overlap.intersection == ("bird", "dog")
    assert overlap.union == ("bird", "cat", "dog", "fish")
    assert overlap.jaccard >= 0.5


coordinate = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def box_arrays(draw: st.DrawFn, max_size: int = 6) -> np.ndarray:
    n = draw(st.integers(0, max_size))
    corners = draw(arrays(np.float64, (n, 4), elements=coordinate))
    x1 = np.minimum(corners[:, 0], corners[:, 2])
    x2 = np.maximum(corners[:, 0], corners[:, 2])
    y1 = np.minimum(corners[:, 1], corners[:, 3])
    y2 = np.maximum(corners[:, 1], corners[:, 3])
    return np.stack([x1, y1, x2, y2], axis=1).reshape(n, 4)


@given(box_arrays(), box_arrays())
def test_iou_is_symmetric_bounded_and_shaped(gt: np.ndarray, pred: np.ndarray) -> None:
    """IoU(A, B) = IoU(B, A)^T, lies in [0, 1] and has shape (N, M)."""
    forward = iou_matrix(gt, pred)
    assert forward.shape == (len(gt), len(pred))
    np.testing.assert_allclose(forward, iou_matrix(pred, gt).T, rtol=1e-12, atol=1e-12)
    assert np.all((forward >= 0) & (forward <= 1 + 1e-12))


@given(box_arrays(), box_arrays(), st.sampled_from([0.5, 2.0, 8.0, 0.125]))
def test_iou_is_scale_invariant(gt: np.ndarray, pred: np.ndarray, factor: float) -> None:
    """Scaling both boxes by the same factor (a power of two: exact) leaves IoU unchanged."""
    np.testing.assert_allclose(
        iou_matrix(gt * factor, pred * factor), iou_matrix(gt, pred), rtol=1e-9, atol=1e-12
    )


@given(box_arrays(), box_arrays())
def test_dice_identity_and_giou_bounds(gt: np.ndarray, pred: np.ndarray) -> None:
    """Dice = 2 IoU / (1 + IoU) everywhere; GIoU <= IoU and GIoU > -1."""
    iou = iou_matrix(gt, pred)
    np.testing.assert_allclose(dice_matrix(gt, pred), dice_from_iou(iou), rtol=1e-9, atol=1e-12)
    giou = giou_matrix(gt, pred)
    assert np.all(giou <= iou + 1e-12)
    assert np.all(giou >= -1.0)


@given(box_arrays(), box_arrays(), st.booleans(), st.data())
def test_pair_iou_is_the_matrix_entry_to_the_bit(
    gt: np.ndarray, pred: np.ndarray, pixel_inclusive: bool, data: st.DataObject
) -> None:
    """Scoring a list of pairs gives exactly the matrix's value for each pair, crowd regions
    and the devkit's +1 areas included: one arithmetic for both."""
    crowd = np.array(data.draw(st.lists(st.booleans(), min_size=len(gt), max_size=len(gt))))
    crowd = crowd.astype(bool).reshape(-1)
    gt_index, pred_index = np.divmod(np.arange(len(gt) * len(pred)), max(len(pred), 1))
    pairs = pair_iou(gt[gt_index], pred[pred_index], pixel_inclusive, crowd[gt_index])
    matrix = crowd_iou_matrix(gt, pred, crowd, pixel_inclusive)
    assert pairs.tobytes() == matrix.reshape(-1).tobytes()
    plain = pair_iou(gt[gt_index], pred[pred_index], pixel_inclusive)
    assert plain.tobytes() == iou_matrix(gt, pred, pixel_inclusive).reshape(-1).tobytes()
    inter = pair_intersection(gt[gt_index], pred[pred_index], pixel_inclusive)
    assert inter.tobytes() == intersection_matrix(gt, pred, pixel_inclusive).reshape(-1).tobytes()


def test_pair_functions_refuse_lists_of_different_lengths() -> None:
    """Pairs need as many ground-truth boxes as predictions."""
    with pytest.raises(
        ValueError,
        match=r"Expected `gt_boxes` and `pred_boxes` to have the same shape, got \(2, 4\) and \(1, 4\)",
    ):
        pair_iou([[0, 0, 1, 1], [0, 0, 2, 2]], [[0, 0, 1, 1]])


@pytest.mark.parametrize(
    ("inter", "gt_area", "pred_area", "crowd", "expected"),
    [
        pytest.param(1.0, 4.0, 4.0, False, 1 / 7, id="one-seventh"),
        pytest.param(2.0, 100.0, 2.0, True, 1.0, id="crowd-contains-prediction"),
        pytest.param(0.0, 0.0, 0.0, False, 0.0, id="union-zero"),
        pytest.param(0.0, 10.0, 0.0, True, 0.0, id="crowd-empty-prediction"),
    ],
)
def test_iou_from_intersection(
    inter: float, gt_area: float, pred_area: float, crowd: bool, expected: float
) -> None:
    """I / (A + B - I), or I / B for a crowd region; 0.0 where that divisor is 0."""
    assert iou_from_intersection([inter], [gt_area], [pred_area], [crowd]).tolist() == [expected]


def test_large_inputs_are_not_copied_or_modified() -> None:
    """A float64 (N, 4) array is read in place and left as it was."""
    boxes = np.array([[0.0, 0.0, 2.0, 3.0], [1.0, 1.0, 2.0, 2.0]])
    before = boxes.copy()
    assert as_boxes(boxes) is boxes
    box_area(boxes, pixel_inclusive=True)
    pair_iou(boxes, boxes[::-1])
    assert np.array_equal(boxes, before)


@pytest.mark.parametrize(
    ("gt", "pred", "expected"),
    [
        # 2 / (4 + 4 - 2 + 1e-7) in float32: 6 + 1e-7 rounds to 6.
        pytest.param([0, 0, 2, 2], [1, 0, 3, 2], float(np.float32(2) / np.float32(6)), id="third"),
        # float64 gives 0.5000000000000001; the float32 arithmetic falls below 0.5.
        pytest.param(
            [10.7, 15.4, 18.0, 35.5],
            [10.1, 21.6, 17.6, 40.4],
            0.49999991059303284,
            id="below-half-in-float32",
        ),
        pytest.param([0, 0, 1, 1], [2, 2, 3, 3], 0.0, id="apart"),
    ],
)
def test_float32_iou_is_the_ultralytics_arithmetic(
    gt: list[float], pred: list[float], expected: float
) -> None:
    assert pair_iou_float32([gt], [pred]).tolist() == [expected]
    assert iou_matrix_float32([gt], [pred]).tolist() == [[expected]]

"""The compiled pairs' IoU (vocmatch.core.fastmatch.pair_iou) gives numpy's bits."""

from __future__ import annotations

import importlib
import importlib.util
import re
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vocmatch.compiled import PURE_ENGINE_VARIABLE
from vocmatch.core import match_kernels
from vocmatch.core.iou import box_area, iou_from_intersection, pair_intersection
from vocmatch.core.protocol import PROTOCOLS, protocol
from vocmatch.evaluation.pair_space import PairSpace

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(match_kernels.MODULE) is None,
    reason="the compiled matching kernels are not built",
)

#: Every area convention and arithmetic of the presets (pixel_inclusive, float32).
_CONVENTIONS = sorted(
    {
        (protocol(name).pixel_inclusive, protocol(name).iou_arithmetic == "float32")
        for name in PROTOCOLS
    }
)


def _kernels() -> ModuleType:
    return importlib.import_module(match_kernels.MODULE)


# Coordinates: a few shared values (equal, touching and zero-area boxes, ties of IoU), -0.0,
# huge ones whose differences overflow to inf (inf * 0 is NaN: the IoU of such a pair is
# numpy's too), tiny and subnormal ones, and any finite float.
_SHARED = [0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0, -1.0, 99.5, 100.0]
_EXTREME = [1e308, -1e308, 1.7976931348623157e308, 1e300, -1e300, 1e-300, 5e-324, -5e-324, 1e154]
_COORDINATE = st.one_of(
    st.sampled_from(_SHARED),
    st.sampled_from(_EXTREME),
    st.floats(-1e4, 1e4, allow_nan=False),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def _boxes(draw: st.DrawFn, n: int) -> np.ndarray:
    """``(n, 4)`` boxes: mostly ordered corners, some inverted (x2 < x1), some zero-area."""
    out = np.empty((n, 4), dtype=np.float64)
    for i in range(n):
        x = sorted([draw(_COORDINATE), draw(_COORDINATE)])
        y = sorted([draw(_COORDINATE), draw(_COORDINATE)])
        box = [x[0], y[0], x[1], y[1]]
        shape = draw(st.sampled_from(["box", "box", "inverted", "point", "line"]))
        if shape == "inverted":
            box = [x[1], y[1], x[0], y[0]]
        elif shape == "point":
            box = [x[0], y[0], x[0], y[0]]
        elif shape == "line":
            box = [x[0], y[0], x[1], y[0]]
        out[i] = box
    return out


@st.composite
def _pair_sets(draw: st.DrawFn) -> dict[str, Any]:
    """Ground truth and a column of predictions (some copies of ground truth: IoU 1.0),
    with or without a row map, and random pairs of them (repeats included)."""
    n_gt = draw(st.integers(1, 6))
    n_boxes = draw(st.integers(1, 8))
    gt_boxes = draw(_boxes(n_gt))
    pred_boxes = draw(_boxes(n_boxes))
    for i in range(n_boxes):
        if draw(st.booleans()):
            pred_boxes[i] = gt_boxes[draw(st.integers(0, n_gt - 1))]
    crowd = np.array(draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)), dtype=bool)
    rows = None
    n_pred = n_boxes
    if draw(st.booleans()):
        n_pred = draw(st.integers(1, 8))
        dtype = draw(st.sampled_from([np.int32, np.int64]))
        rows = np.array(
            draw(st.lists(st.integers(0, n_boxes - 1), min_size=n_pred, max_size=n_pred)),
            dtype=dtype,
        )
    k = draw(st.integers(0, 30))
    gt = np.array(draw(st.lists(st.integers(0, n_gt - 1), min_size=k, max_size=k)), dtype=np.int64)
    pred = np.array(
        draw(st.lists(st.integers(0, n_pred - 1), min_size=k, max_size=k)), dtype=np.int64
    )
    return {"gt_boxes": gt_boxes, "pred_boxes": pred_boxes, "crowd": crowd, "rows": rows,
            "gt": gt, "pred": pred}  # fmt: skip


def _numpy_iou(case: dict[str, Any], pixel_inclusive: bool) -> np.ndarray:
    """vocmatch.core.iou's arithmetic of the pairs (PairSpace's numpy path)."""
    with np.errstate(all="ignore"):  # huge boxes overflow to inf, as they do in C
        return _numpy_arithmetic(case, pixel_inclusive)


def _numpy_arithmetic(case: dict[str, Any], pixel_inclusive: bool) -> np.ndarray:
    rows = case["pred"] if case["rows"] is None else case["rows"][case["pred"]]
    boxes = np.take(case["pred_boxes"], rows, axis=0)
    gt_area = box_area(case["gt_boxes"], pixel_inclusive)
    return iou_from_intersection(
        pair_intersection(np.take(case["gt_boxes"], case["gt"], axis=0), boxes, pixel_inclusive),
        gt_area[case["gt"]],
        box_area(boxes, pixel_inclusive),
        case["crowd"][case["gt"]],
    )


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a.view(np.uint64), b.view(np.uint64))
    )


@settings(max_examples=600, deadline=None)
@given(_pair_sets(), st.booleans())
def test_pair_iou_gives_numpy_bits(case: dict[str, Any], pixel_inclusive: bool) -> None:
    """Ties, touching, zero-area, inverted, huge and tiny boxes, crowd regions, a row map of
    either index type or none, under both area conventions: the same bits as numpy."""
    with np.errstate(all="ignore"):
        gt_area = box_area(case["gt_boxes"], pixel_inclusive)
    found = match_kernels.pair_iou(
        _kernels(),
        (case["gt_boxes"], gt_area, case["crowd"]),
        case["pred_boxes"],
        case["rows"],
        (case["gt"], case["pred"]),
        pixel_inclusive,
    )
    assert _same_bits(found, _numpy_iou(case, pixel_inclusive))


@pytest.mark.parametrize(
    ("gt_box", "pred_box", "pixel_inclusive", "expected"),
    [
        pytest.param([0, 0, 2, 2], [1, 1, 3, 3], False, 1 / 7, id="overlap"),
        pytest.param([0, 0, 2, 2], [2, 0, 4, 2], False, 0.0, id="touching"),
        pytest.param([0, 0, 2, 2], [2, 0, 4, 2], True, 3 / 15, id="touching-pixel-inclusive"),
        pytest.param([1, 1, 1, 1], [1, 1, 1, 1], False, 0.0, id="zero-area-union-zero"),
        pytest.param([1, 1, 1, 1], [1, 1, 1, 1], True, 1.0, id="one-pixel"),
        pytest.param([-1e308, 0, 1e308, 1], [-1e308, 0, 1e308, 1], False, 0.0, id="inf-width"),
    ],
)
def test_pair_iou_exact_cases(
    gt_box: list[float], pred_box: list[float], pixel_inclusive: bool, expected: float
) -> None:
    gt_boxes = np.array([gt_box], dtype=np.float64)
    with np.errstate(all="ignore"):
        gt_area = box_area(gt_boxes, pixel_inclusive)
    found = match_kernels.pair_iou(
        _kernels(),
        (gt_boxes, gt_area, np.zeros(1, dtype=bool)),
        np.array([pred_box], dtype=np.float64),
        None,
        (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)),
        pixel_inclusive,
    )
    assert found.tolist() == [expected]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_pair_sets(), st.sampled_from(_CONVENTIONS))
def test_pair_space_iou_is_the_same_either_engine(
    monkeypatch: pytest.MonkeyPatch, case: dict[str, Any], convention: tuple[bool, bool]
) -> None:
    """:meth:`PairSpace.iou` under every preset's area convention and arithmetic: the
    compiled kernel and numpy give the same bits."""
    pixel_inclusive, float32 = convention
    n_pred = case["pred_boxes"].shape[0] if case["rows"] is None else case["rows"].size
    found = []
    for pure in ("1", "0"):
        with monkeypatch.context() as patch, np.errstate(all="ignore"):
            patch.setenv(PURE_ENGINE_VARIABLE, pure)
            space = PairSpace(
                case["gt_boxes"], np.zeros(case["gt_boxes"].shape[0], dtype=np.int64),
                case["crowd"], case["pred_boxes"], np.zeros(n_pred, dtype=np.int64),
                pixel_inclusive, pred_rows=case["rows"], float32=float32,
            )  # fmt: skip
            found.append(space.iou(case["gt"], case["pred"]))
    assert _same_bits(found[0], found[1])


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        pytest.param({"gt": [1]}, "gt[0] = 1 is out of range [0, 1)", id="gt"),
        pytest.param({"gt": [-1]}, "gt[0] = -1 is out of range [0, 1)", id="negative-gt"),
        pytest.param({"pred": [2]}, "pred[0] = 2 is out of range [0, 2)", id="pred"),
        pytest.param({"rows": [0, 5]}, "pred_rows[1] = 5 is out of range [0, 2)", id="row"),
        pytest.param(
            {"pred_boxes": np.zeros((2, 4), dtype=np.float32)},
            "pred_boxes: unexpected array type 'f' (itemsize 4)",
            id="float32-boxes",
        ),
        pytest.param({"gt_area": np.zeros(2)}, "the arrays do not fit", id="areas"),
        pytest.param({"out": np.zeros(2)}, "the arrays do not fit", id="out"),
        pytest.param({"pred_boxes": np.zeros(7)}, "the arrays do not fit", id="not-4-columns"),
    ],
)
def test_pair_iou_refuses_what_does_not_fit(changed: dict[str, Any], message: str) -> None:
    """An index out of range or an array of another type or length is a ValueError, never a
    read or write out of bounds."""
    args: dict[str, Any] = {
        "gt_boxes": np.zeros((1, 4)), "gt_area": np.zeros(1), "gt_crowd": np.zeros(1, bool),
        "pred_boxes": np.zeros((2, 4)), "rows": None, "gt": [0], "pred": [1], "out": np.zeros(1),
    }  # fmt: skip
    args.update(changed)
    with pytest.raises(ValueError, match=re.escape(message)):
        _kernels().pair_iou(
            args["gt_boxes"], args["gt_area"], args["gt_crowd"], args["pred_boxes"],
            None if args["rows"] is None else np.array(args["rows"], dtype=np.int64),
            np.array(args["gt"], dtype=np.int64), np.array(args["pred"], dtype=np.int64),
            0.0, args["out"],
        )  # fmt: skip

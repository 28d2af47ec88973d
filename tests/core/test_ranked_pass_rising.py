"""``ranked_pass`` under rising thresholds (COCO's 0.50:0.95 and the like), where a prediction
of one pair is matched without a search and stops at the first threshold its IoU fails, and
with area ranges riding along that take the evaluation's picks: the numpy matchers' bits."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.core import match_kernels
from vocmatch.core.match import Hits, RankedMatcher

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(match_kernels.MODULE) is None,
    reason="the compiled matching kernels are not built",
)


def kernel() -> ModuleType:
    return importlib.import_module(match_kernels.MODULE)


@st.composite
def cells(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Image-classes of a few ground truth and ranked predictions (many of one pair), every
    pair with an IoU from a few values (ties with the thresholds, NaN), some ground truth
    ignored or crowd; then each ground truth's image-class."""
    gt_sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=5))
    pred_sizes = [draw(st.integers(0, 4)) for _ in gt_sizes]
    gt, pred, iou = [], [], []
    g0 = p0 = 0
    values = [0.0, 0.3, 0.5, 0.5, 0.55, 0.75, 0.9, 0.95, 1.0, float("nan")]
    for n_gt, n_pred in zip(gt_sizes, pred_sizes, strict=True):
        for p in range(p0, p0 + n_pred):
            for g in range(g0, g0 + n_gt):
                gt.append(g)
                pred.append(p)
                iou.append(draw(st.sampled_from(values)))
        g0, p0 = g0 + n_gt, p0 + n_pred
    ignore = np.array(draw(st.lists(st.booleans(), min_size=g0, max_size=g0)), dtype=bool)
    crowd = ignore & np.array(draw(st.lists(st.booleans(), min_size=g0, max_size=g0)), dtype=bool)
    rank = np.concatenate([np.arange(n) for n in pred_sizes]).astype(np.int64)
    cell = np.repeat(np.arange(len(gt_sizes)), gt_sizes)
    return (
        np.array(gt, dtype=np.int64), np.array(pred, dtype=np.int64),
        np.array(iou, dtype=np.float64), ignore, crowd, rank, cell,
    )  # fmt: skip


def set_flags(hits: Hits, ignore: np.ndarray, n_pred: int) -> tuple[list[int], list[int]]:
    """Each prediction's flags matched, and matched to ignored ground truth (uint16)."""
    matched = np.zeros(n_pred, dtype=np.uint16)
    ignored = np.zeros(n_pred, dtype=np.uint16)
    for t, p, g in zip(hits.level.tolist(), hits.pred.tolist(), hits.gt.tolist(), strict=True):
        matched[p] |= np.uint16(1 << t)
        if ignore[g]:
            ignored[p] |= np.uint16(1 << t)
    return matched.tolist(), ignored.tolist()


#: Rising thresholds (ties among them), COCO's, and thresholds out of order (the search).
OWN_THRESHOLDS = [
    [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
    [0.3, 0.5, 0.5, 0.75, 0.9],
    [0.5],
    [0.9, 0.5, 0.75],
]


@settings(max_examples=400, deadline=None)
@given(
    cells(),
    st.booleans(),
    st.booleans(),
    st.integers(1, 3),
    st.sampled_from(OWN_THRESHOLDS),
    st.booleans(),
    st.data(),
)
def test_rising_thresholds_give_the_numpy_pairs_and_range_flags(
    drawn_cells: tuple[np.ndarray, ...],
    strict: bool,
    first: bool,
    calls: int,
    own_thresholds: list[float],
    same_thresholds: bool,
    data: st.DataObject,
) -> None:
    """The evaluation's pairs in order, and the flags of area ranges riding along (the
    evaluation's own set, every ground truth ignored, none, random ones; at the
    evaluation's thresholds, where they take its picks, or at others), as numpy's."""
    gt, pred, iou, ignore, crowd, rank, cell = drawn_cells
    n_gt, n_pred = ignore.size, rank.size
    drawn = np.array(data.draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)), dtype=bool)
    sets = np.stack([ignore, np.ones(n_gt, dtype=bool), np.zeros(n_gt, dtype=bool),
                     ignore | drawn, drawn])  # fmt: skip
    own = np.array(own_thresholds)
    thresholds = own if same_thresholds else np.array([0.6, 0.75, 0.3])
    dtype = np.dtype(np.uint16)
    ranges = match_kernels.RangeMatcher(
        kernel(), sets, crowd, thresholds, strict, first, n_pred, dtype, own=(ignore, own, cell)
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", "0")
        compiled = RankedMatcher(n_gt, ignore, crowd, own, strict, first, ranges=ranges)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", "1")
        numpy = RankedMatcher(n_gt, ignore, crowd, own, strict, first)
    cuts = np.searchsorted(pred, np.linspace(0, n_pred, calls + 1)[1:-1])
    for part in np.split(np.arange(pred.size), cuts):
        compiled.add(gt[part], pred[part].astype(np.int32), iou[part], rank)
        numpy.add(gt[part], pred[part], iou[part], rank)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", "1")
        expected, actual = numpy.hits(), compiled.hits()
        for name in ("level", "pred", "gt", "iou"):
            expected_values, actual_values = getattr(expected, name), getattr(actual, name)
            assert expected_values.tobytes() == actual_values.tobytes(), name
        for s, set_ignore in enumerate(sets):
            alone = RankedMatcher(n_gt, set_ignore, crowd, thresholds, strict, first)
            alone.add(gt, pred, iou, rank)
            flags = set_flags(alone.hits(), set_ignore, n_pred)
            assert (ranges.matched[:, s].tolist(), ranges.ignored[:, s].tolist()) == flags, s


@pytest.mark.parametrize(
    ("iou", "strict", "expected_levels"),
    [
        pytest.param(0.75, False, [0, 1, 2], id="at-a-threshold-passes"),
        pytest.param(0.75, True, [0, 1], id="at-a-threshold-strict-fails"),
        pytest.param(0.4, False, [], id="below-every-threshold"),
        pytest.param(float("nan"), False, [], id="nan-iou"),
        pytest.param(1.0, True, [0, 1, 2, 3], id="above-every-threshold"),
    ],
)
def test_one_pair_stops_at_the_first_threshold_it_fails(
    iou: float, strict: bool, expected_levels: list[int]
) -> None:
    """A prediction of one pair is matched at every rising threshold its IoU passes, up to
    the first it fails (ties with a threshold: passing unless strict)."""
    thresholds = np.array([0.5, 0.5, 0.75, 0.9])
    taken = np.zeros((1, thresholds.size), dtype=bool)
    found = kernel().ranked_pass(
        np.array([0], np.int64), np.array([0], np.int64), np.array([iou]), None,
        np.zeros(1, dtype=bool), np.zeros(1, dtype=bool), thresholds, strict, False, taken, None,
    )  # fmt: skip
    levels = np.frombuffer(found[0], dtype=np.int64).tolist()
    assert levels == expected_levels
    assert taken[0].tolist() == [t in expected_levels for t in range(thresholds.size)]

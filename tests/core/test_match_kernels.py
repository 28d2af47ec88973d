"""The compiled matching kernels (vocmatch.core.fastmatch) give the numpy matchers' bits."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.core import match_kernels
from vocmatch.core.match import Hits, RankedMatcher, match_devkit

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(match_kernels.MODULE) is None,
    reason="the compiled matching kernels are not built",
)


def _kernels() -> ModuleType:
    return importlib.import_module(match_kernels.MODULE)


def _flags(hits: Hits, n_pred: int, dtype: np.dtype[np.uint16]) -> np.ndarray:
    bits = np.zeros(n_pred, dtype=dtype)
    for t, p in zip(hits.level.tolist(), hits.pred.tolist(), strict=True):
        bits[p] |= dtype.type(1 << t)
    return bits


@st.composite
def _cells(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Image-classes of a few ground truth and ranked predictions (indices in ranking order
    within each), every pair with an IoU from a few values (ties), some ground truth
    ignored or crowd."""
    gt_sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    pred_sizes = [draw(st.integers(0, 5)) for _ in gt_sizes]
    gt, pred, iou = [], [], []
    g0 = p0 = 0
    for n_gt, n_pred in zip(gt_sizes, pred_sizes, strict=True):
        for p in range(p0, p0 + n_pred):
            for g in range(g0, g0 + n_gt):
                gt.append(g)
                pred.append(p)
                iou.append(draw(st.sampled_from([0.0, 0.3, 0.5, 0.5, 0.75, 0.9, 1.0])))
        g0, p0 = g0 + n_gt, p0 + n_pred
    ignore = np.array(draw(st.lists(st.booleans(), min_size=g0, max_size=g0)), dtype=bool)
    crowd = ignore & np.array(draw(st.lists(st.booleans(), min_size=g0, max_size=g0)), dtype=bool)
    rank = np.concatenate([np.arange(n) for n in pred_sizes]).astype(np.int64)
    return (
        np.array(gt, dtype=np.int64), np.array(pred, dtype=np.int64),
        np.array(iou, dtype=np.float64), ignore, crowd, rank,
    )  # fmt: skip


_THRESHOLDS = np.array([0.5, 0.75, 0.3, 0.9])


@settings(max_examples=300, deadline=None)
@given(_cells(), st.booleans(), st.booleans(), st.integers(1, 3))
def test_ranked_flags_equal_ranked_matcher(
    cells: tuple[np.ndarray, ...], strict: bool, first: bool, calls: int
) -> None:
    """Under two ground-truth sets at once, fed in several calls: each set's flags are
    :class:`RankedMatcher`'s."""
    gt, pred, iou, ignore, crowd, rank = cells
    n_gt, n_pred = ignore.size, rank.size
    sets = np.stack([ignore, ignore | (np.arange(n_gt) % 2 == 1)])
    dtype = np.dtype(np.uint16)
    fast = match_kernels.RangeMatcher(
        _kernels(), sets, crowd, _THRESHOLDS, strict, first, n_pred, dtype
    )
    # Calls cut between predictions, as the evaluation's pieces are.
    cuts = np.searchsorted(pred, np.linspace(0, n_pred, calls + 1)[1:-1])
    for part in np.split(np.arange(pred.size), cuts):
        fast.add(gt[part], pred[part].astype(np.int32), iou[part])
    for s, set_ignore in enumerate(sets):
        numpy = RankedMatcher(n_gt, set_ignore, crowd, _THRESHOLDS, strict, first)
        numpy.add(gt, pred, iou, rank)
        hits = numpy.hits()
        on_ignored = set_ignore[hits.gt]
        ignored_hits = Hits(
            hits.level[on_ignored], hits.pred[on_ignored], hits.gt[on_ignored], hits.iou[on_ignored]
        )
        assert fast.matched[:, s].tolist() == _flags(hits, n_pred, dtype).tolist()
        assert fast.ignored[:, s].tolist() == _flags(ignored_hits, n_pred, dtype).tolist()


@settings(max_examples=300, deadline=None)
@given(_cells(), st.booleans())
def test_devkit_flags_equal_match_devkit(cells: tuple[np.ndarray, ...], strict: bool) -> None:
    """Each set's flags are :func:`match_devkit`'s."""
    gt, pred, iou, ignore, _, rank = cells
    n_gt, n_pred = ignore.size, rank.size
    best_gt = np.full(n_pred, -1, dtype=np.int64)
    best_iou = np.zeros(n_pred)
    for g, p, v in zip(gt.tolist(), pred.tolist(), iou.tolist(), strict=True):
        if best_gt[p] < 0 or v > best_iou[p]:  # the first ground truth on ties
            best_gt[p], best_iou[p] = g, v
    sets = np.stack([ignore, ignore | (np.arange(n_gt) % 3 == 0)])
    dtype = np.dtype(np.uint16)
    matched, ignored = match_kernels.devkit_set_flags(
        _kernels(), best_gt, best_iou, sets, _THRESHOLDS, strict, dtype
    )
    for s, set_ignore in enumerate(sets):
        hits = match_devkit(best_gt, best_iou, rank, set_ignore, _THRESHOLDS, strict)
        on_ignored = set_ignore[hits.gt]
        ignored_hits = Hits(
            hits.level[on_ignored], hits.pred[on_ignored], hits.gt[on_ignored], hits.iou[on_ignored]
        )
        assert matched[:, s].tolist() == _flags(hits, n_pred, dtype).tolist()
        assert ignored[:, s].tolist() == _flags(ignored_hits, n_pred, dtype).tolist()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int64])
def test_flag_bits_sets_each_pairs_bit(dtype: type[np.integer[int]]) -> None:
    """Bit ``level`` of each pair's prediction, in any of the records' flag dtypes."""
    bits = match_kernels.flag_bits(
        _kernels(), np.array([2, 0, 2], dtype=np.int32), np.array([0, 7, 3]), 4, np.dtype(dtype)
    )
    assert bits.dtype == dtype
    assert bits.tolist() == [128, 0, 9, 0]


@pytest.mark.parametrize(
    ("pred", "level", "message"),
    [
        pytest.param([4], [0], r"pred\[0\] = 4 is out of range", id="prediction-past-the-end"),
        pytest.param([-1], [0], r"pred\[0\] = -1 is out of range", id="negative-prediction"),
        pytest.param([0], [8], r"level\[0\] = 8 is out of range", id="bit-beyond-the-dtype"),
        pytest.param([0, 1], [0], "differ in length", id="lengths-differ"),
    ],
)
def test_flag_bits_refuses_indices_out_of_range(
    pred: list[int], level: list[int], message: str
) -> None:
    """An index the flags cannot hold is a ValueError, never a write out of bounds."""
    with pytest.raises(ValueError, match=message):
        match_kernels.flag_bits(_kernels(), np.array(pred), np.array(level), 4, np.dtype(np.uint8))


def test_ranked_flags_refuses_ground_truth_out_of_range() -> None:
    """A pair naming ground truth beyond the sets is a ValueError."""
    fast = match_kernels.RangeMatcher(
        _kernels(), np.zeros((1, 2), dtype=bool), np.zeros(2, dtype=bool), _THRESHOLDS,
        False, False, 3, np.dtype(np.uint8),
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"gt\[0\] = 2 is out of range"):
        fast.add(np.array([2]), np.array([0]), np.array([0.9]))


def test_ranked_pass_refuses_float32_iou() -> None:
    """Arrays of another type than the kernel reads are refused by name."""
    with pytest.raises(ValueError, match="iou: unexpected array type"):
        _kernels().ranked_pass(
            np.array([0]), np.array([0]), np.array([0.9], dtype=np.float32), None,
            np.zeros(1, dtype=bool), np.zeros(1, dtype=bool), _THRESHOLDS, False, False,
            np.zeros((4, 1), dtype=bool), None,
        )  # fmt: skip


_SCORES = st.sampled_from([0.0, -0.0, 0.3, 0.5, 0.9, 1e-300, -1e-300, 5e-324, -np.inf, np.inf])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_SCORES, st.integers(0, 5)), max_size=60),
    st.sampled_from([1, 70_000, 1 << 40]),
)
def test_score_cell_order_equals_numpy_stable_sorts(
    pairs: list[tuple[float, int]], spread: int
) -> None:
    """The orders of numpy's stable sort by descending score, and by cell then descending
    score, ties (-0.0 and 0.0 among them) in index order."""
    score = np.array([s for s, _ in pairs], dtype=np.float64)
    cell = np.array([c * spread for _, c in pairs], dtype=np.int64)
    by_score, order = match_kernels.score_cell_order(_kernels(), score, cell)
    assert by_score.tolist() == np.argsort(-score, kind="stable").tolist()
    assert order.tolist() == np.lexsort((-score, cell)).tolist()


@pytest.mark.parametrize(
    ("score", "cell", "message"),
    [
        pytest.param([0.5, np.nan], [0, 0], r"score\[1\] is NaN", id="nan-score"),
        pytest.param([0.5], [-1], r"cell\[0\] = -1 is negative", id="negative-cell"),
        pytest.param([0.5, 0.4], [0], "do not fit", id="lengths-differ"),
    ],
)
def test_score_cell_order_refuses_what_it_cannot_order(
    score: list[float], cell: list[int], message: str
) -> None:
    """A NaN score or a negative cell is a ValueError (the caller sorts those with numpy)."""
    with pytest.raises(ValueError, match=message):
        match_kernels.score_cell_order(_kernels(), np.array(score), np.array(cell))


@st.composite
def _shuffled_cells(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """:func:`_cells` with each image-class's ranking a random permutation and the pairs in
    random order."""
    gt, pred, iou, ignore, crowd, rank = draw(_cells())
    rank = rank.copy()
    starts = np.flatnonzero(rank == 0).tolist()  # each image-class's first prediction
    for start, stop in itertools.pairwise([*starts, rank.size]):
        rank[start:stop] = draw(st.permutations(list(range(stop - start))))
    order = np.array(draw(st.permutations(list(range(gt.size)))), dtype=np.int64)
    return gt[order], pred[order], iou[order], ignore, crowd, rank


@settings(max_examples=300, deadline=None)
@given(_shuffled_cells(), st.booleans(), st.booleans(), st.integers(1, 3))
def test_compiled_ranked_matcher_gives_numpy_hits_in_order(
    cells: tuple[np.ndarray, ...], strict: bool, first: bool, calls: int
) -> None:
    """:meth:`RankedMatcher.add` by the kernel gives the numpy code's matched pairs, in the
    same order, over calls cut anywhere between whole predictions."""
    gt, pred, iou, ignore, crowd, rank = cells
    found = []
    for pure in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("VOCMATCH_PURE_ENGINE", pure)
            matcher = RankedMatcher(ignore.size, ignore, crowd, _THRESHOLDS, strict, first)
        by_pred = np.argsort(pred, kind="stable")
        cuts = np.searchsorted(pred[by_pred], np.linspace(0, rank.size, calls + 1)[1:-1])
        for part in np.split(by_pred, cuts):
            matcher.add(gt[part], pred[part].astype(np.int32), iou[part], rank)
        found.append(matcher.hits())
    numpy_hits, compiled_hits = found
    for name in ("level", "pred", "gt", "iou"):
        expected, actual = getattr(numpy_hits, name), getattr(compiled_hits, name)
        assert (expected.dtype, expected.tolist()) == (actual.dtype, actual.tolist()), name

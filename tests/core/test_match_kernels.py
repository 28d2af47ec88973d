"""The compiled matching kernels (vocmatch.core.fastmatch) give the numpy matchers' bits."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import re
from types import ModuleType
from typing import Any

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
    return draw(_cells_and_ids())[:-1]


@st.composite
def _cells_and_ids(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """:func:`_cells`, then each ground truth's image-class."""
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
    cell = np.repeat(np.arange(len(gt_sizes)), gt_sizes)
    return (
        np.array(gt, dtype=np.int64), np.array(pred, dtype=np.int64),
        np.array(iou, dtype=np.float64), ignore, crowd, rank, cell,
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
    ("n", "cells", "seed"),
    [
        pytest.param(100_000, 70_000, 0, id="cells-counted-in-one-pass"),
        pytest.param(100_000, 99_999, 1, id="as-many-cells-as-predictions"),
        pytest.param(70_000, 100_000, 2, id="more-cells-than-predictions"),
    ],
)
def test_score_cell_order_on_many_cells_equals_numpy(n: int, cells: int, seed: int) -> None:
    """Over 65,536 cells, fewer than the predictions (a counting pass by cell) or more (radix
    passes): numpy's orders, ties of score in index order."""
    rng = np.random.default_rng(seed)
    score = rng.choice([0.0, -0.0, 0.25, 0.5, 0.75, 1.0, -np.inf], size=n)
    score[: n // 2] = rng.random(n // 2)
    cell = rng.integers(0, cells, size=n)
    cell[0] = cells - 1
    by_score, order = match_kernels.score_cell_order(_kernels(), score, cell)
    assert np.array_equal(by_score, np.argsort(-score, kind="stable"))
    assert np.array_equal(order, np.lexsort((-score, cell)))


def _clustered(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct scores within 1e-9 of 0.5 (one bucket of the top 16 bits that differ, since
    a score of 1e-300 widens the range), with ties, -0.0 and 0.0 among a few others."""
    rng = np.random.default_rng(3)
    score = 0.5 + rng.integers(0, 5_000, size=n) * 1e-13
    score[rng.integers(0, n, size=n // 10)] = rng.choice([1e-300, 0.0, -0.0, 1.0], n // 10)
    return score, rng.integers(0, 50, size=n)


def _wide(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores over every magnitude and both signs (keys differing in every bit: too wide for
    a key's rest and an index in one word), cells up to 2**62."""
    rng = np.random.default_rng(4)
    score = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-300, 300, n)
    score[::7] = rng.choice([np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324], len(score[::7]))
    return score, rng.integers(0, 2**62, size=n)


@pytest.mark.parametrize(
    ("score", "cell"),
    [
        pytest.param(np.zeros(0), np.zeros(0, dtype=np.int64), id="empty"),
        pytest.param(np.array([0.3]), np.array([2**62]), id="one-prediction-huge-cell"),
        pytest.param(np.full(3_000, 0.7), np.zeros(3_000, dtype=np.int64), id="all-tied-one-cell"),
        pytest.param(
            np.tile([0.0, -0.0], 2_000), np.tile([5, 5, 2**40], 4_000)[:4_000], id="signed-zeros"
        ),
        pytest.param(*_clustered(20_000), id="one-bucket-of-thousands"),
        pytest.param(*_clustered(300), id="one-bucket-of-hundreds"),
        pytest.param(*_wide(70_000), id="keys-wider-than-a-word-huge-cells"),
        pytest.param(*_wide(1_000), id="every-magnitude-and-sign"),
        pytest.param(
            np.random.default_rng(5).random(100_000),
            np.full(100_000, 2**62 + 1),
            id="one-huge-cell",
        ),
    ],
)
def test_score_cell_order_on_edge_sets_equals_numpy(score: np.ndarray, cell: np.ndarray) -> None:
    """Empty, one prediction, every score tied, -0.0 against 0.0, thousands of distinct
    scores in one top-digit bucket, keys differing in every bit, cells up to 2**62: numpy's
    orders, ties in index order."""
    by_score, order = match_kernels.score_cell_order(_kernels(), score, cell)
    assert np.array_equal(by_score, np.argsort(-score, kind="stable"))
    assert np.array_equal(order, np.lexsort((-score, cell)))


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


def _set_flags(hits: Hits, ignore: np.ndarray, n_pred: int, dtype: np.dtype[np.uint16]) -> tuple:
    """Each prediction's flags matched, and matched to ignored ground truth."""
    on_ignored = ignore[hits.gt]
    ignored_hits = Hits(
        hits.level[on_ignored], hits.pred[on_ignored], hits.gt[on_ignored], hits.iou[on_ignored]
    )
    return _flags(hits, n_pred, dtype).tolist(), _flags(ignored_hits, n_pred, dtype).tolist()


@settings(max_examples=400, deadline=None)
@given(
    _cells_and_ids(),
    st.booleans(),
    st.booleans(),
    st.integers(1, 3),
    st.sampled_from([[0.5, 0.75, 0.9], [0.9, 0.3], [0.6, 0.75]]),
    st.data(),
)
def test_ranges_riding_along_equal_their_own_matchers(
    cells: tuple[np.ndarray, ...],
    strict: bool,
    first: bool,
    calls: int,
    range_thresholds: list[float],
    data: st.DataObject,
) -> None:
    """The evaluation's matching with ground-truth sets riding along (``ranked_pass`` with
    ranges: the same set as its own, every ground truth ignored, none, and random ones;
    thresholds among its own, where a set takes its picks in image-classes where they are
    the set's, or not): its pairs are the numpy matcher's in order, and each set's flags
    those of a numpy matcher of that set alone."""
    gt, pred, iou, ignore, crowd, rank, cell = cells
    n_gt, n_pred = ignore.size, rank.size
    drawn = np.array(data.draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)), dtype=bool)
    sets = np.stack([ignore, np.ones(n_gt, dtype=bool), np.zeros(n_gt, dtype=bool),
                     ignore | drawn, drawn])  # fmt: skip
    thresholds = np.array(range_thresholds)
    dtype = np.dtype(np.uint16)
    ranges = match_kernels.RangeMatcher(
        _kernels(), sets, crowd, thresholds, strict, first, n_pred, dtype,
        own=(ignore, _THRESHOLDS, cell),
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", "0")
        compiled = RankedMatcher(n_gt, ignore, crowd, _THRESHOLDS, strict, first, ranges=ranges)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", "1")
        numpy = RankedMatcher(n_gt, ignore, crowd, _THRESHOLDS, strict, first)
    cuts = np.searchsorted(pred, np.linspace(0, n_pred, calls + 1)[1:-1])
    for part in np.split(np.arange(pred.size), cuts):
        compiled.add(gt[part], pred[part].astype(np.int32), iou[part], rank)
        numpy.add(gt[part], pred[part], iou[part], rank)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VOCMATCH_PURE_ENGINE", "1")
        expected, actual = numpy.hits(), compiled.hits()
        for name in ("level", "pred", "gt", "iou"):
            assert getattr(expected, name).tolist() == getattr(actual, name).tolist(), name
        for s, set_ignore in enumerate(sets):
            alone = RankedMatcher(n_gt, set_ignore, crowd, thresholds, strict, first)
            alone.add(gt, pred, iou, rank)
            flags = _set_flags(alone.hits(), set_ignore, n_pred, dtype)
            assert (ranges.matched[:, s].tolist(), ranges.ignored[:, s].tolist()) == flags, s


@settings(max_examples=200, deadline=None)
@given(_cells(), st.booleans(), st.booleans())
def test_compiled_add_block_gives_numpy_hits_in_order(
    cells: tuple[np.ndarray, ...], strict: bool, first: bool
) -> None:
    """:meth:`RankedMatcher.add_block` by the kernel gives the numpy code's pairs in order,
    each image-class's dense block given in two runs of predictions."""
    gt, pred, iou, ignore, crowd, rank = cells
    found = []
    for pure in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("VOCMATCH_PURE_ENGINE", pure)
            matcher = RankedMatcher(ignore.size, ignore, crowd, _THRESHOLDS, strict, first)
        starts = np.flatnonzero(rank == 0).tolist()
        for start, stop in itertools.pairwise([*starts, rank.size]):
            mine = (pred >= start) & (pred < stop)
            g_cell = np.unique(gt[mine])
            if g_cell.size == 0:
                continue
            block = np.zeros((g_cell.size, stop - start))
            block[gt[mine] - g_cell[0], pred[mine] - start] = iou[mine]
            half = (stop - start + 1) // 2
            matcher.add_block(block[:, :half], int(g_cell[0]), start)
            matcher.add_block(block[:, half:], int(g_cell[0]), start + half)
        found.append(matcher.hits())
    for name in ("level", "pred", "gt", "iou"):
        expected, actual = getattr(found[0], name), getattr(found[1], name)
        assert (expected.dtype, expected.tolist()) == (actual.dtype, actual.tolist()), name


@settings(max_examples=300, deadline=None)
@given(_shuffled_cells(), st.booleans())
def test_compiled_match_devkit_gives_numpy_hits_in_order(
    cells: tuple[np.ndarray, ...], strict: bool
) -> None:
    """:func:`match_devkit` by the kernel gives the numpy code's pairs, in the same order."""
    gt, pred, iou, ignore, _, rank = cells
    n_pred = rank.size
    best_gt = np.full(n_pred, -1, dtype=np.int64)
    best_iou = np.zeros(n_pred)
    for g, p, v in zip(gt.tolist(), pred.tolist(), iou.tolist(), strict=True):
        if best_gt[p] < 0 or v > best_iou[p] or (v == best_iou[p] and g < best_gt[p]):
            best_gt[p], best_iou[p] = g, v
    found = []
    for pure in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("VOCMATCH_PURE_ENGINE", pure)
            found.append(match_devkit(best_gt, best_iou, rank, ignore, _THRESHOLDS, strict))
    for name in ("level", "pred", "gt", "iou"):
        expected, actual = getattr(found[0], name), getattr(found[1], name)
        assert (expected.dtype, expected.tolist()) == (actual.dtype, actual.tolist()), name


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        pytest.param(
            lambda r: (*r[:5], np.zeros((2, 3), dtype=bool), r[6]),
            "do not fit",
            id="alike-of-another-shape",
        ),
        pytest.param(
            lambda r: (*r[:5], np.ones((1, 2), dtype=bool), np.array([0, 0, 0, 9])),
            r"ranges level\[3\] = 9 is out of range",
            id="level-beyond-the-own-thresholds",
        ),
        pytest.param(
            lambda r: (*r[:3], np.zeros(3, dtype=np.uint8), *r[4:]),
            r"not \(P, S\)",
            id="flags-not-two-dimensional",
        ),
        pytest.param(lambda r: r[:6], "ranges", id="a-member-missing"),
    ],
)
def test_ranked_pass_refuses_ranges_that_do_not_fit(ranges: Any, message: str) -> None:
    """Ranges whose arrays do not fit the pairs are a ValueError (or TypeError), never a
    read or write out of bounds."""
    fit = match_kernels.RangeMatcher(
        _kernels(), np.zeros((1, 2), dtype=bool), np.zeros(2, dtype=bool), _THRESHOLDS,
        False, False, 3, np.dtype(np.uint8),
    )  # fmt: skip
    with pytest.raises((ValueError, TypeError), match=message):
        _kernels().ranked_pass(
            np.array([0]), np.array([0]), np.array([0.9]), None, np.zeros(2, dtype=bool),
            np.zeros(2, dtype=bool), _THRESHOLDS, False, False, np.zeros((4, 2), dtype=bool),
            ranges(fit.state()),
        )  # fmt: skip


def test_devkit_hits_refuses_ground_truth_out_of_range() -> None:
    """A prediction's best ground truth beyond the ground truth is a ValueError."""
    with pytest.raises(ValueError, match=r"best_gt\[0\] = 2 is out of range"):
        match_kernels.devkit_hits(
            _kernels(), np.array([2]), np.array([0.9]), np.array([0]), np.zeros(2, dtype=bool),
            _THRESHOLDS, False,
        )  # fmt: skip


@pytest.mark.parametrize(
    "thresholds",
    [
        pytest.param([0.5, np.nan], id="nan-last"),
        pytest.param([np.nan, 0.5], id="nan-first"),
    ],
)
def test_compiled_ranked_matcher_follows_numpy_on_a_nan_threshold(thresholds: list[float]) -> None:
    """A NaN threshold makes numpy's lowest threshold NaN, so no pair passes: the kernel too."""
    found = []
    for pure in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("VOCMATCH_PURE_ENGINE", pure)
            matcher = RankedMatcher(
                1, np.zeros(1, dtype=bool), np.zeros(1, dtype=bool), np.array(thresholds), False
            )
        matcher.add(np.array([0]), np.array([0]), np.array([0.9]), np.array([0]))
        found.append(matcher.hits().level.tolist())
    assert found[0] == found[1] == []


@st.composite
def _image_hits(draw: st.DrawFn) -> tuple[Any, ...]:
    """Matched pairs (level, pred, gt) of a few thresholds, predictions and ground truth of a
    few images (some without any), ignored ground truth, and predictions that pass."""
    n_t, n_images = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    n_pred, n_gt = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    n_hits = draw(st.integers(0, 30)) if n_pred and n_gt else 0
    ints = st.integers
    level = np.array(draw(st.lists(ints(0, n_t - 1), min_size=n_hits, max_size=n_hits)))
    pred = np.array(draw(st.lists(ints(0, max(n_pred - 1, 0)), min_size=n_hits, max_size=n_hits)))
    gt = np.array(draw(st.lists(ints(0, max(n_gt - 1, 0)), min_size=n_hits, max_size=n_hits)))
    image = np.array(draw(st.lists(ints(0, n_images - 1), min_size=n_pred, max_size=n_pred)))
    ignore = np.array(draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)), dtype=bool)
    passing = np.array(draw(st.lists(st.booleans(), min_size=n_pred, max_size=n_pred)), dtype=bool)
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    return (
        level.astype(dtype), pred.astype(dtype), gt.astype(dtype), image.astype(dtype), ignore,
        passing if draw(st.booleans()) else None, n_t, n_images,
    )  # fmt: skip


def _level_image_counts(level: Any, image: Any, n_t: int, n_images: int) -> np.ndarray:
    key = level.astype(np.int64) * n_images + image
    return np.bincount(key, minlength=n_t * n_images).reshape(n_t, n_images)


@settings(max_examples=300, deadline=None)
@given(_image_hits())
def test_hit_counts_equal_numpy_counts(found: tuple[Any, ...]) -> None:
    """Each image's matched pairs at each threshold, and those whose ground truth is not
    ignored, of the passing predictions: numpy's counts (int64, the same shape)."""
    level, pred, gt, image, ignore, passing, n_t, n_images = found
    keep = np.ones(pred.size, dtype=bool) if passing is None else passing[pred]
    counts = keep & ~ignore[gt]
    expected_tp = _level_image_counts(level[counts], image[pred[counts]], n_t, n_images)
    expected_all = _level_image_counts(level[keep], image[pred[keep]], n_t, n_images)
    tp, every = match_kernels.hit_counts(
        _kernels(), (level, pred, gt), image, ignore, passing, (n_t, n_images)
    )
    assert (tp.dtype, every.dtype) == (np.int64, np.int64)
    assert tp.tolist() == expected_tp.tolist()
    assert every.tolist() == expected_all.tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 4),
    st.lists(st.integers(0, 4), max_size=20),
    st.sampled_from([np.int32, np.int64]),
    st.data(),
)
def test_image_counts_equal_bincount_per_row(
    n_t: int, image: list[int], dtype: type[np.integer[Any]], data: st.DataObject
) -> None:
    """Each row's set flags counted by image: numpy's bincount of each row."""
    n_gt = len(image)
    flags = np.array(
        data.draw(st.lists(st.booleans(), min_size=n_t * n_gt, max_size=n_t * n_gt)), dtype=bool
    ).reshape(n_t, n_gt)
    images = np.array(image, dtype=dtype)
    expected = [np.bincount(images[row], minlength=5).tolist() for row in flags]
    assert match_kernels.image_counts(_kernels(), flags, images, 5).tolist() == expected


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        pytest.param({"level": [2]}, r"level\[0\] = 2 is out of range", id="level"),
        pytest.param({"pred": [3]}, r"pred\[0\] = 3 is out of range", id="pred"),
        pytest.param({"gt": [-1]}, r"gt\[0\] = -1 is out of range", id="gt"),
        pytest.param({"image": [0, 7, 0]}, r"image\[1\] = 7 is out of range", id="image"),
        pytest.param({"passing": [True]}, "do not fit", id="passing"),
        pytest.param({"gt": [0, 0]}, "differ in length", id="lengths"),
    ],
)
def test_hit_counts_refuses_indices_out_of_range(changed: dict[str, Any], message: str) -> None:
    """An index outside what it indexes, or arrays that do not fit: a ValueError, nothing
    read out of bounds."""
    arrays: dict[str, Any] = {
        "level": [1], "pred": [2], "gt": [0], "image": [0, 1, 0], "passing": None,
    }  # fmt: skip
    arrays.update(changed)
    passing = arrays["passing"]
    with pytest.raises(ValueError, match=message):
        match_kernels.hit_counts(
            _kernels(),
            (np.array(arrays["level"]), np.array(arrays["pred"]), np.array(arrays["gt"])),
            np.array(arrays["image"]), np.zeros(1, dtype=bool),
            None if passing is None else np.array(passing), (2, 2),
        )  # fmt: skip


def test_image_counts_refuses_an_image_out_of_range() -> None:
    """An image beyond the counts' columns: a ValueError."""
    with pytest.raises(ValueError, match=r"image\[1\] = 2 is out of range"):
        match_kernels.image_counts(_kernels(), np.ones((1, 2), dtype=bool), np.array([0, 2]), 2)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=8),
    st.integers(0, 5),
    st.data(),
)
def test_compiled_alike_cells_equal_numpy(
    sizes: list[int], n_sets: int, data: st.DataObject
) -> None:
    """Image-classes of a few ground truth (one alone among them), sets ignoring some, all
    or none of each: where each set is matched as the own set, the numpy counts' answer."""
    n_gt = sum(sizes)
    cell = np.repeat(np.arange(len(sizes)) * 7, sizes).astype(np.int64)
    flags = st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)
    own = np.array(data.draw(flags), dtype=bool)
    rows = [np.array(data.draw(flags), dtype=bool) for _ in range(n_sets)]
    # Some sets equal to the own one, or to it in some image-classes.
    rows += [own.copy(), own | (cell == 0)]
    ignore = np.stack(rows)
    expected = match_kernels.alike_cells(ignore, own, cell)
    found = match_kernels.alike_cells(ignore, own, cell, _kernels())
    assert found.dtype == np.bool_
    assert found.tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("ignore", "own", "cell", "message"),
    [
        pytest.param(
            np.zeros((1, 3), bool),
            np.zeros(2, bool),
            np.zeros(2, np.int64),
            "do not fit",
            id="lengths",
        ),
        pytest.param(
            np.zeros((16, 2), bool),
            np.zeros(2, bool),
            np.zeros(2, np.int64),
            "do not fit",
            id="too-many-sets",
        ),
        pytest.param(
            np.zeros((1, 2), bool),
            np.zeros(2, bool),
            np.zeros(2, np.int32),
            r"cell: unexpected array type",
            id="cell-int32",
        ),
    ],
)
def test_compiled_alike_cells_refuses_arrays_that_do_not_fit(
    ignore: np.ndarray, own: np.ndarray, cell: np.ndarray, message: str
) -> None:
    """Arrays of other lengths, more sets than a code holds, another cell dtype: a
    ValueError, nothing read out of bounds."""
    alike = np.empty(ignore.shape, dtype=bool)
    with pytest.raises(ValueError, match=message):
        _kernels().alike_cells(ignore, own, cell, alike)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 2)), max_size=8))
def test_cell_pairs_list_each_cells_pairs_prediction_by_prediction(
    sizes: list[tuple[int, int, int]],
) -> None:
    """Cells of a few ground truth and predictions, with predictions of no cell between
    them: every pair, cell by cell, each prediction's over its cell's ground truth."""
    rows, expected_gt, expected_pred = [], [], []
    g0 = p0 = 0
    for n_gt, n_pred, gap in sizes:
        p0 += gap
        rows.append((g0, g0 + n_gt, p0, p0 + n_pred))
        for p in range(p0, p0 + n_pred):
            expected_gt += range(g0, g0 + n_gt)
            expected_pred += [p] * n_gt
        g0, p0 = g0 + n_gt, p0 + n_pred
    cells = np.array(rows, dtype=np.int64).reshape(-1, 4)
    gt, pred = match_kernels.cell_pairs(_kernels(), cells)
    assert (gt.dtype, pred.dtype) == (np.int64, np.int64)
    assert (gt.tolist(), pred.tolist()) == (expected_gt, expected_pred)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        pytest.param([[0, 2, 0, 1], [2, 1, 1, 2]], r"cells\[1\] is not a cell", id="gt-backwards"),
        pytest.param([[0, 1, -1, 1]], r"cells\[0\] is not a cell", id="negative-start"),
        pytest.param([[0, 1 << 40, 0, 1 << 40]], r"cells\[0\] is not a cell", id="too-many"),
        pytest.param([0, 1, 0], r"cells is not \(K, 4\)", id="not-four"),
    ],
)
def test_cell_pairs_refuses_what_is_no_cell(cells: list[Any], message: str) -> None:
    """A negative start or size, more pairs than memory could hold, rows not of four: a
    ValueError before anything is written."""
    with pytest.raises(ValueError, match=message):
        match_kernels.cell_pairs(_kernels(), np.array(cells, dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_SCORES, st.integers(0, 3), st.integers(0, 2)), max_size=40),
    st.sampled_from([np.int32, np.int64]),
)
def test_sorted_cells_equal_numpy_gathers_and_places(
    boxes: list[tuple[float, int, int]], dtype: type[np.integer[Any]]
) -> None:
    """Predictions of a few images and labels with tied scores, put in score_cell_order's
    order: their columns as int32, the score order as places, each one's rank in its
    image-class, as numpy's gathers and scatter give them."""
    n = len(boxes)
    score = np.array([s for s, _, _ in boxes], dtype=np.float64)
    image = np.array([i for _, i, _ in boxes], dtype=dtype)
    label = np.array([k for _, _, k in boxes], dtype=dtype)
    rows = (np.arange(n) * 3 + 1).astype(dtype)
    by_score, order = match_kernels.score_cell_order(
        _kernels(), score, image.astype(np.int64) * 3 + label
    )
    found = match_kernels.sorted_cells(_kernels(), order, by_score, (rows, image, label))
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    cells = list(zip(image[order].tolist(), label[order].tolist(), strict=True))
    rank = [cells[:i].count(cell) for i, cell in enumerate(cells)]
    expected = [rows[order], image[order], label[order], place[by_score], rank]
    assert [a.dtype for a in found] == [np.dtype(np.int32)] * 5
    assert [a.tolist() for a in found] == [np.asarray(e).tolist() for e in expected]


@pytest.mark.parametrize(
    ("order", "by_score", "message"),
    [
        pytest.param([0, 2], [0, 1], r"order\[1\] = 2 is out of range", id="order"),
        pytest.param([0, 1], [-1, 0], r"by_score\[0\] = -1 is out of range", id="by-score"),
        pytest.param([0], [0, 1], "do not fit", id="lengths"),
    ],
)
def test_sorted_cells_refuses_indices_out_of_range(
    order: list[int], by_score: list[int], message: str
) -> None:
    """An index outside the predictions, or arrays of other lengths: a ValueError."""
    column = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match=message):
        match_kernels.sorted_cells(
            _kernels(), np.array(order), np.array(by_score), (column, column, column)
        )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 6),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=30),
    st.sampled_from([np.int32, np.int64]),
)
def test_mark_pairs_equals_numpy_assignment(
    n_rows: int, n_cols: int, pairs: list[tuple[int, int]], dtype: type[np.integer[Any]]
) -> None:
    """Pairs (repeated ones among them) marked in a table: numpy's ``out[row, col] = True``."""
    kept = [(r, c) for r, c in pairs if r < n_rows and c < n_cols]
    row = np.array([r for r, _ in kept], dtype=dtype)
    col = np.array([c for _, c in kept], dtype=dtype)
    expected = np.zeros((n_rows, n_cols), dtype=bool)
    expected[row, col] = True
    found = match_kernels.mark_pairs(_kernels(), (n_rows, n_cols), row, col)
    assert found.dtype == np.bool_
    assert found.tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("row", "col", "message"),
    [
        pytest.param([2], [0], r"row\[0\] = 2 is out of range", id="row"),
        pytest.param([0], [-1], r"col\[0\] = -1 is out of range", id="col"),
        pytest.param([0, 1], [0], "do not fit", id="lengths"),
    ],
)
def test_mark_pairs_refuses_indices_out_of_range(
    row: list[int], col: list[int], message: str
) -> None:
    """A pair outside the table, or rows and columns of other lengths: a ValueError."""
    with pytest.raises(ValueError, match=message):
        match_kernels.mark_pairs(_kernels(), (2, 3), np.array(row), np.array(col))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4), st.lists(st.integers(0, 3), max_size=40), st.randoms())
def test_class_order_equals_numpy_stable_sorts(extra: int, labels: list[int], random: Any) -> None:
    """Predictions of a few classes (some without any), in any order, ranked by a random
    permutation: the stable order by class, each class's start, and each class's members'
    places in the ranking, as numpy's stable sorts give them."""
    n_classes = (max(labels) + 1 if labels else 0) + extra
    label = np.array(labels, dtype=np.int32)
    by_score = np.array(random.sample(range(label.size), label.size), dtype=np.int32)
    order, starts, places = match_kernels.class_order(_kernels(), label, by_score, n_classes)
    expected_order = np.argsort(label, kind="stable")
    member = np.empty(label.size, dtype=np.int64)
    member[expected_order] = np.arange(label.size) - np.searchsorted(
        label[expected_order], label[expected_order]
    )
    ranked = by_score[np.argsort(label[by_score], kind="stable")]
    assert (order.dtype, starts.dtype, places.dtype) == (np.int32, np.int64, np.int32)
    assert order.tolist() == expected_order.tolist()
    assert (
        starts.tolist() == np.searchsorted(label[expected_order], np.arange(n_classes + 1)).tolist()
    )
    assert places.tolist() == member[ranked].tolist()


@pytest.mark.parametrize(
    ("label", "by_score", "message"),
    [
        pytest.param([0, 2], [0, 1], r"label\[1\] = 2 is out of range", id="label"),
        pytest.param([0, 1], [1, 2], r"by_score\[1\] = 2 is out of range", id="by-score"),
        pytest.param([0, 1], [0], "do not fit", id="lengths"),
    ],
)
def test_class_order_refuses_indices_out_of_range(
    label: list[int], by_score: list[int], message: str
) -> None:
    """A label beyond the classes, a ranking outside the predictions, arrays of other
    lengths: a ValueError."""
    with pytest.raises(ValueError, match=message):
        match_kernels.class_order(_kernels(), np.array(label), np.array(by_score), 2)


# NaN arises from infinite coordinates (inf - inf, inf * 0): the processor's one NaN, on
# both sides. A NaN coordinate read from the input is checked apart: of two NaN sides, which
# one's sign the product keeps is up to the instruction numpy's loop uses.
_COORDINATES = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, np.inf, -np.inf, 1e308, -1e308, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=True),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_COORDINATES, min_size=4, max_size=4), max_size=12),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_box_areas_equal_box_area_bit_for_bit(
    boxes: list[list[float]], pixel_inclusive: bool, with_rows: bool, data: st.DataObject
) -> None:
    """Equal, touching, inverted, zero-area, infinite, NaN, overflowing and subnormal boxes,
    both area conventions, every box or listed rows (repeated, in any order)."""
    from vocmatch.core.iou import box_area

    array = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    rows = None
    if with_rows and len(boxes):
        rows = np.array(
            data.draw(st.lists(st.integers(0, len(boxes) - 1), max_size=20)), dtype=np.int32
        )
    with np.errstate(all="ignore"):  # overflowing and NaN sides, as the kernel meets them
        expected = box_area(array if rows is None else array[rows], pixel_inclusive)
    found = match_kernels.box_areas(_kernels(), array, rows, pixel_inclusive)
    assert found.dtype == expected.dtype
    assert found.tobytes() == expected.tobytes()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(_COORDINATES, st.sampled_from([np.nan, -np.nan])), min_size=4,
                 max_size=4),
        max_size=12,
    ),
    st.booleans(),
)  # fmt: skip
def test_box_areas_of_nan_coordinates_are_nan_where_box_area_is(
    boxes: list[list[float]], pixel_inclusive: bool
) -> None:
    """NaN coordinates read from the input: NaN exactly where box_area gives NaN, every other
    area the same bits."""
    from vocmatch.core.iou import box_area

    array = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    with np.errstate(all="ignore"):
        expected = box_area(array, pixel_inclusive)
    found = match_kernels.box_areas(_kernels(), array, None, pixel_inclusive)
    assert np.isnan(found).tolist() == np.isnan(expected).tolist()
    numbers = ~np.isnan(expected)
    assert found[numbers].tobytes() == expected[numbers].tobytes()


@pytest.mark.parametrize(
    ("boxes", "rows", "out", "message"),
    [
        pytest.param(np.zeros(6), None, 1, "do not fit", id="not-boxes"),
        pytest.param(np.zeros(8), None, 3, "do not fit", id="out"),
        pytest.param(np.zeros(8), np.array([2], dtype=np.int64), 1, "rows[0] = 2", id="row"),
        pytest.param(np.zeros(8), np.array([-1], dtype=np.int64), 1, "rows[0] = -1", id="neg"),
        pytest.param(np.zeros(8), np.array([0, 1], dtype=np.int64), 1, "do not fit", id="rows"),
    ],
)
def test_box_areas_refuses_what_it_would_read_past(
    boxes: np.ndarray, rows: np.ndarray | None, out: int, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _kernels().box_areas(boxes, rows, 0.0, np.zeros(out))

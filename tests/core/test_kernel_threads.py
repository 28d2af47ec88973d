"""A compiled kernel's call split into parts on threads gives the single-thread call's bits
(vocmatch/parts.h: each part writes its own slice of the output)."""

from __future__ import annotations

import importlib
import importlib.util
import re
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.core import match_kernels

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(match_kernels.MODULE) is None,
    reason="the compiled matching kernels are not built",
)

#: Threads a call is split into: one (the reference), a few, more than the work at times.
_THREADS = st.sampled_from([2, 3, 4, 7, 8, 64])


def _kernels() -> ModuleType:
    return importlib.import_module(match_kernels.MODULE)


def _same_bits(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _order(score: np.ndarray, cell: np.ndarray, threads: int) -> tuple[np.ndarray, ...]:
    return match_kernels.score_cell_order(_kernels(), score, cell, threads)


_SCORES = st.sampled_from([0.0, -0.0, 0.3, 0.5, 0.9, 1e-300, -1e-300, 5e-324, -np.inf, np.inf])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_SCORES, st.integers(0, 5)), max_size=60),
    st.sampled_from([1, 70_000, 1 << 40]),
    _THREADS,
)
def test_score_cell_order_in_parts_is_the_single_threads(
    pairs: list[tuple[float, int]], spread: int, threads: int
) -> None:
    """Ties of score (-0.0 and 0.0 among them), no prediction, one, cells counted or radix
    sorted: the split call's orders are the single-thread call's, and numpy's."""
    score = np.array([s for s, _ in pairs], dtype=np.float64)
    cell = np.array([c * spread for _, c in pairs], dtype=np.int64)
    split = _order(score, cell, threads)
    _same_bits(split, _order(score, cell, 1))
    assert split[0].tolist() == np.argsort(-score, kind="stable").tolist()
    assert split[1].tolist() == np.lexsort((-score, cell)).tolist()


def _counted(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores of six decimals (a key's rest and an index in one word), cells over 65,536
    and fewer than the predictions (one counting pass by cell)."""
    rng = np.random.default_rng(seed)
    score = rng.random(n).round(6)
    score[rng.integers(0, n, n // 10)] = 0.5
    return score, rng.integers(0, n // 2, n)


def _one_bucket(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Thousands of distinct scores in one top-digit bucket (sorted through the spare
    buffer), across the parts' boundaries, and cells counted."""
    rng = np.random.default_rng(3)
    score = 0.5 + rng.integers(0, 5_000, size=n) * 1e-13
    score[rng.integers(0, n, size=n // 10)] = rng.choice([1e-300, 0.0, -0.0, 1.0], n // 10)
    return score, rng.integers(0, 70_000 + n, size=n) % (n - 1)


def _wide(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys differing in every bit and cells up to 2**62: radix passes (in one part)."""
    rng = np.random.default_rng(4)
    score = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-300, 300, n)
    return score, rng.integers(0, 2**62, size=n)


@pytest.mark.parametrize(
    ("score", "cell"),
    [
        pytest.param(*_counted(200_000, 0), id="counted-cells"),
        pytest.param(*_one_bucket(90_001), id="one-bucket-of-thousands"),
        pytest.param(*_wide(50_000), id="radix-passes"),
        pytest.param(np.full(70_001, 0.7), np.zeros(70_001, dtype=np.int64), id="all-tied"),
    ],
)
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_score_cell_order_of_many_in_parts_is_the_single_threads(
    score: np.ndarray, cell: np.ndarray, threads: int
) -> None:
    """Large sets, buckets and cells straddling the parts' boundaries: the same orders."""
    split = _order(score, cell, threads)
    _same_bits(split, _order(score, cell, 1))
    assert np.array_equal(split[1], np.lexsort((-score, cell)))


@st.composite
def _sorted_inputs(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Predictions of a few images and labels (long runs of one image-class at times), with
    tied scores, put in score_cell_order's orders."""
    n = draw(st.integers(0, 80))
    images = draw(st.integers(1, 4))
    labels = draw(st.integers(1, 3))
    image = np.array(draw(st.lists(st.integers(0, images - 1), min_size=n, max_size=n)))
    label = np.array(draw(st.lists(st.integers(0, labels - 1), min_size=n, max_size=n)))
    score = np.array(draw(st.lists(st.sampled_from([0.1, 0.5, 0.9]), min_size=n, max_size=n)))
    rows = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    image, label = image.astype(np.int64), label.astype(np.int64)
    by_score, order = match_kernels.score_cell_order(_kernels(), score, image * labels + label)
    return order, by_score, rows, image, label


@settings(max_examples=300, deadline=None)
@given(_sorted_inputs(), _THREADS)
def test_sorted_cells_in_parts_is_the_single_threads(
    inputs: tuple[np.ndarray, ...], threads: int
) -> None:
    """Columns, score places and ranks, runs of an image-class straddling the parts'
    boundaries (each part finds where its first run begins): the same bits."""
    order, by_score, rows, image, label = inputs
    columns = (rows, image, label)
    k = _kernels()
    split = match_kernels.sorted_cells(k, order, by_score, columns, threads)
    _same_bits(split, match_kernels.sorted_cells(k, order, by_score, columns, 1))


def test_sorted_cells_of_one_long_run_in_parts() -> None:
    """One image-class of many predictions: every part's ranks go on from the one before."""
    n = 50_001
    image = np.zeros(n, dtype=np.int64)
    by_score, order = match_kernels.score_cell_order(_kernels(), np.linspace(0, 1, n), image)
    rows = np.arange(n, dtype=np.int64)
    found = match_kernels.sorted_cells(_kernels(), order, by_score, (rows, image, image), 4)
    assert np.array_equal(found[4], np.arange(n, dtype=np.int32))
    _same_bits(
        found, match_kernels.sorted_cells(_kernels(), order, by_score, (rows, image, image), 1)
    )


@st.composite
def _iou_inputs(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Ground truth and predictions of a few shared coordinates (ties, touching and
    zero-area boxes), some crowd, and pairs of them (none at times)."""
    values = st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 10.0, 1e308, np.inf])
    n_gt, n_pred = draw(st.integers(1, 6)), draw(st.integers(1, 6))

    def boxes(n: int) -> np.ndarray:
        flat = draw(st.lists(values, min_size=4 * n, max_size=4 * n))
        return np.array(flat, dtype=np.float64).reshape(n, 4)

    gt_boxes, pred_boxes = boxes(n_gt), boxes(n_pred)
    crowd = np.array(draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)))
    k = draw(st.integers(0, 40))
    gt = np.array(draw(st.lists(st.integers(0, n_gt - 1), min_size=k, max_size=k)), np.int64)
    pred = np.array(draw(st.lists(st.integers(0, n_pred - 1), min_size=k, max_size=k)), np.int64)
    return gt_boxes, crowd, pred_boxes, gt, pred


@settings(max_examples=300, deadline=None)
@given(_iou_inputs(), st.booleans(), _THREADS)
def test_pair_iou_in_parts_is_the_single_threads(
    inputs: tuple[np.ndarray, ...], pixel_inclusive: bool, threads: int
) -> None:
    """Each pair's IoU (NaN, crowd regions, no pair, fewer pairs than threads): the same
    bits in parts."""
    gt_boxes, crowd, pred_boxes, gt, pred = inputs
    area = match_kernels.box_areas(_kernels(), gt_boxes, None, pixel_inclusive)
    boxes = (gt_boxes, area, crowd)

    def iou(n: int) -> np.ndarray:
        return match_kernels.pair_iou(
            _kernels(), boxes, pred_boxes, None, (gt, pred), pixel_inclusive, n
        )

    _same_bits((iou(threads),), (iou(1),))


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_pair_iou_in_parts_names_the_first_bad_row(threads: int) -> None:
    """A prediction's row out of range in several parts: the error names the first pair's,
    as the single-thread call does."""
    boxes = np.zeros((1, 4))
    rows = np.array([0, 5, 0, 7], dtype=np.int64)
    pred = np.array([0, 3, 0, 0, 1, 2, 1, 3], dtype=np.int64)
    gt = np.zeros(pred.size, dtype=np.int64)
    message = re.escape("pred_rows[3] = 7 is out of range [0, 1)")
    with pytest.raises(ValueError, match=message):
        match_kernels.pair_iou(
            _kernels(), (boxes, np.zeros(1), np.zeros(1, dtype=bool)), boxes, rows, (gt, pred),
            False, threads,
        )  # fmt: skip


@st.composite
def _ranked_cells(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Image-classes of a few ground truth and ranked predictions (each one's pairs with its
    image-class's ground truth, IoU from a few values: ties), some ground truth ignored or
    crowd; at times a prediction paired with the next image-class's ground truth too (parts
    would share it: the call then runs as one part)."""
    gt_sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=12))
    pred_sizes = [draw(st.integers(0, 5)) for _ in gt_sizes]
    shared = draw(st.booleans())
    gt, pred, iou = [], [], []
    g0 = p0 = 0
    n_gt_all = sum(gt_sizes)
    for n_gt, n_pred in zip(gt_sizes, pred_sizes, strict=True):
        for p in range(p0, p0 + n_pred):
            reach = g0 + n_gt + (1 if shared and g0 + n_gt < n_gt_all else 0)
            for g in range(g0, reach):
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


def _ranked_pass(
    cells: tuple[np.ndarray, ...], sets: np.ndarray, strict: bool, first: bool, threads: int
) -> tuple[bytes, ...]:
    """The kernel's pairs, its matching state and the sets' flags and states, as bytes."""
    gt, pred, iou, ignore, crowd, rank = cells
    n_gt, n_pred = ignore.size, rank.size
    thresholds = np.array([0.5, 0.75, 0.3, 0.9])
    taken = np.zeros((n_gt, thresholds.size), dtype=bool)
    ranges = match_kernels.RangeMatcher(
        _kernels(), sets, crowd, np.array([0.9, 0.5]), strict, first, n_pred,
        np.dtype(np.uint8), own=(ignore, thresholds, np.arange(n_gt)),
    )  # fmt: skip
    found = _kernels().ranked_pass(
        gt, pred, iou, rank, ignore, crowd, thresholds, strict, first, taken, ranges.state(),
        threads,
    )  # fmt: skip
    return (*found, taken.tobytes(), *(a.tobytes() for a in ranges.state()))


@settings(max_examples=400, deadline=None)
@given(_ranked_cells(), st.booleans(), st.booleans(), _THREADS, st.data())
def test_ranked_pass_in_parts_is_the_single_threads(
    cells: tuple[np.ndarray, ...], strict: bool, first: bool, threads: int, data: st.DataObject
) -> None:
    """The evaluation's matching in parts of image-classes, area ranges riding along, the
    pairs in the order of their predictions (the pair scan's) or not: its pairs in the same
    order, the same matching state and flags of every set."""
    if data.draw(st.booleans()):
        # Pairs not in the order of their predictions: grouped by prediction in one part.
        gt, pred, iou, *rest = cells
        moved = np.array(data.draw(st.permutations(range(gt.size))), dtype=np.int64)
        cells = (gt[moved], pred[moved], iou[moved], *rest)
    ignore = cells[3]
    drawn = np.array(
        data.draw(st.lists(st.booleans(), min_size=ignore.size, max_size=ignore.size)), dtype=bool
    )
    sets = np.stack([ignore, np.ones(ignore.size, dtype=bool), ignore | drawn])
    assert _ranked_pass(cells, sets, strict, first, threads) == _ranked_pass(
        cells, sets, strict, first, 1
    )


@settings(max_examples=200, deadline=None)
@given(_iou_inputs(), st.booleans(), st.booleans(), _THREADS)
def test_box_areas_in_parts_is_the_single_threads(
    inputs: tuple[np.ndarray, ...], pixel_inclusive: bool, by_rows: bool, threads: int
) -> None:
    """Each box's area (inverted, huge and infinite coordinates; read through rows or not;
    fewer boxes than threads): the same bits in parts."""
    _, _, boxes, _, rows = inputs
    chosen = rows if by_rows else None

    def areas(n: int) -> np.ndarray:
        return match_kernels.box_areas(_kernels(), boxes, chosen, pixel_inclusive, n)

    _same_bits((areas(threads),), (areas(1),))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0.1, 0.5, 0.9])), max_size=80),
    st.integers(0, 3),
    _THREADS,
)
def test_class_order_in_parts_is_the_single_threads(
    preds: list[tuple[int, float]], extra_classes: int, threads: int
) -> None:
    """Every class's members and ranking (classes without a prediction, ties of score, no
    prediction): the same bits in parts."""
    label = np.array([k for k, _ in preds], dtype=np.int64)
    score = np.array([v for _, v in preds], dtype=np.float64)
    n_classes = (int(label.max()) + 1 if label.size else 0) + extra_classes
    by_score = np.argsort(-score, kind="stable")
    k = _kernels()
    split = match_kernels.class_order(k, label, by_score, n_classes, threads)
    _same_bits(split, match_kernels.class_order(k, label, by_score, n_classes, 1))

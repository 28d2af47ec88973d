"""What a cached run puts together without sorting again: a class's ranking merged from the
cache's run of it and the changed chunks' runs is the ranking a sort of all its rows gives
(by descending score, ties in row order, a prediction without a score last), whatever the
ties; and a state's true positives are counted per class and threshold as one pass a bit
counts them."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.errors import StateError
from vocmatch.evaluation.accumulate import ClassCounts
from vocmatch.evaluation.records import ImageCounts, PredRecords
from vocmatch.evaluation.shards import cache_joined
from vocmatch.evaluation.shards.cache_joined import merged_ranking
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.state_bounds import check_matches_fit


def _preds(score: np.ndarray) -> PredRecords:
    n = score.size
    flags = np.zeros(n, dtype=np.uint16)
    return PredRecords(
        np.array([n], dtype=np.int64), np.zeros(n, np.int32), score, flags, flags,
        np.zeros(n, np.uint8), np.zeros((n, 0), np.uint16), np.zeros((n, 0), np.uint16),
    )  # fmt: skip


#: The merge by the compiled reader's pass where it is built, and by numpy's insertion.
MERGES = [
    pytest.param(
        True,
        id="compiled",
        marks=pytest.mark.skipif(
            getattr(cache_joined._compiled, "merge_runs", None) is None,
            reason="the compiled reader is not built here",
        ),
    ),
    pytest.param(False, id="numpy"),
]


def _merge_by(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    if not compiled:
        monkeypatch.setattr(cache_joined, "_compiled", None)


def _ranking(rows: np.ndarray, score: np.ndarray) -> np.ndarray:
    """``rows`` by descending score (NaN last), ties in row order."""
    key = np.where(np.isnan(score[rows]), np.inf, -score[rows])
    return rows[np.lexsort((rows, key))]


@pytest.mark.parametrize("compiled", MERGES)
@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(
        st.sampled_from([0.1, 0.5, 0.5, 0.9, 1.0, float("nan"), 0.25, 0.75]), min_size=1,
        max_size=200,
    ),
    cuts=st.lists(st.integers(0, 200), max_size=6),
    taken=st.lists(st.booleans(), min_size=7, max_size=7),
)  # fmt: skip
def test_a_merged_ranking_is_the_sorted_one(
    compiled: bool, scores: list[float], cuts: list[int], taken: list[bool]
) -> None:
    """The rows cut in ranges, some ranges' rows the cache's run (one run across them),
    each other range a run of its own: merged, they are ranked as one sort ranks them (by
    the compiled merge and by numpy's)."""
    if not compiled:
        previous, cache_joined._compiled = cache_joined._compiled, None  # type: ignore[assignment]
    try:
        _check_merged(scores, cuts, taken)
    finally:
        if not compiled:
            cache_joined._compiled = previous


def _check_merged(scores: list[float], cuts: list[int], taken: list[bool]) -> None:
    score = np.array(scores, dtype=np.float64)
    n = score.size
    bounds = sorted({0, n, *(c % (n + 1) for c in cuts)})
    ranges = list(pairwise(bounds))
    cached = [np.arange(a, b) for (a, b), keep in zip(ranges, taken, strict=False) if keep]
    others = [np.arange(a, b) for (a, b), keep in zip(ranges, taken, strict=False) if not keep]
    runs = [_ranking(np.concatenate(cached), score)] if cached else []
    runs += [_ranking(rows, score) for rows in others if rows.size]
    found = merged_ranking(runs, _preds(score))
    assert found.tolist() == _ranking(np.arange(n), score).tolist()


@pytest.mark.parametrize(
    ("cached", "small"),
    [
        pytest.param(2000, 10, id="a-few-rows-into-a-long-run"),
        pytest.param(2000, 1000, id="many-rows-sorted-together"),
        pytest.param(50, 3, id="a-short-run"),
    ],
)
@pytest.mark.parametrize("tied", [True, False], ids=["tied-scores", "distinct-scores"])
@pytest.mark.parametrize("compiled", MERGES)
def test_rows_merged_into_the_caches_run_keep_row_order_among_ties(
    monkeypatch: pytest.MonkeyPatch, compiled: bool, cached: int, small: int, tied: bool
) -> None:
    """Rows of a changed chunk in the middle of the cache's rows: among equal scores they
    come after the cache's rows before them and before those after them."""
    _merge_by(monkeypatch, compiled)
    rng = np.random.default_rng(cached + small)
    n = cached + small
    values = rng.integers(0, 4, n) / 4 if tied else rng.permutation(n) / n
    score = np.where(rng.random(n) < 0.05, np.nan, values)
    middle = np.arange(cached // 2, cached // 2 + small)
    rest = np.setdiff1d(np.arange(n), middle)
    runs = [_ranking(rest, score), _ranking(middle, score)]
    found = merged_ranking(runs, _preds(score))
    assert found.tolist() == _ranking(np.arange(n), score).tolist()


def _fit(label: np.ndarray, matched: np.ndarray, n_bits: int, gt: np.ndarray) -> None:
    n_classes, n = gt.size, label.size
    values = np.zeros((n_classes, 7), dtype=np.int64)
    values[:, 0] = gt
    values[:, 5] = gt  # missed: gt, gt_ignored, pred, tp, fp, fn, pred_ignored
    counts = ImageCounts(np.zeros((0, 5), np.int64), np.zeros(0), ClassCounts.of_stacked(values))
    preds = PredRecords(
        np.array([n], dtype=np.int64), label, np.zeros(n), matched, np.zeros_like(matched),
        np.zeros(n, np.uint8), np.zeros((n, 0), matched.dtype), np.zeros((n, 0), matched.dtype),
    )  # fmt: skip
    check_matches_fit(preds, (counts, None), np.zeros((n_classes, 0), np.int64), n_bits, "s")


@pytest.mark.parametrize(
    ("n_bits", "dtype", "n_classes"),
    [
        pytest.param(10, np.uint16, 3, id="ten-thresholds"),
        pytest.param(40, np.int64, 3, id="forty-thresholds"),
        pytest.param(16, np.uint16, 300, id="many-classes-and-values"),
    ],
)
def test_true_positives_are_counted_per_class_and_threshold(
    n_bits: int, dtype: type, n_classes: int
) -> None:
    """A class with exactly as many predictions matched at some threshold as ground truth
    fits; one fewer ground-truth object is refused (here at the last threshold alone)."""
    rng = np.random.default_rng(n_bits)
    n = 3000
    label = np.sort(rng.integers(0, n_classes, n)).astype(np.int32)
    # The last threshold's bit set in every prediction: its count is the class's size.
    top = 1 << (n_bits - 1)
    matched = (rng.integers(0, top, n, dtype=np.int64) | top).astype(dtype)
    bits = (matched.astype(np.int64)[:, None] >> np.arange(min(n_bits, 64))) & 1
    hits = np.zeros((n_classes, bits.shape[1]), np.int64)
    np.add.at(hits, label, bits)
    gt = hits.max(axis=1)
    _fit(label, matched, n_bits, gt)
    fewer = gt.copy()
    fewer[int(np.argmax(gt))] -= 1
    with pytest.raises(StateError, match="more true positives of a class than its ground"):
        _fit(label, matched, n_bits, fewer)


def _three_images() -> bytes:
    """A state of three images: a cat and a dog, none, a cat (classes of each image in
    order; the third's class below the first's last)."""
    ev = Evaluator("voc12")
    boxes = np.array([[0.0, 0, 10, 10], [20, 20, 30, 30]])
    ev.add("a", boxes, ["cat", "dog"], boxes, [0.9, 0.8], ["cat", "dog"])
    ev.add("b", boxes[:1], ["cat"], boxes[:0], [], [])
    ev.add("c", boxes[:1], ["cat"], boxes[:1], [0.7], ["cat"])
    return ev.to_bytes()


@pytest.mark.parametrize(
    ("labels", "refused"),
    [
        pytest.param([0, 1, 0], False, id="lower-class-in-the-next-image"),
        pytest.param([1, 0, 0], True, id="lower-class-in-the-same-image"),
        pytest.param([0, 0, 1], False, id="same-class-twice"),
    ],
)
def test_classes_are_checked_in_order_within_each_image_only(
    labels: list[int], refused: bool
) -> None:
    """Across images (an image without predictions between them), any class may follow."""
    from tests.evaluation.test_incremental import edited_array

    data = edited_array(_three_images(), "pred_label", lambda v: np.array(labels, v.dtype))
    if refused:
        with pytest.raises(StateError, match="'pred_label' is not sorted within each image"):
            Evaluator.from_bytes(data, "s.vms")
    else:
        Evaluator.from_bytes(data, "s.vms")

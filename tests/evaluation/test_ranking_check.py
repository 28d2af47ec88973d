"""The check of a cache's stored rankings against what ranking its predictions gives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.evaluation.from_records import class_rankings
from vocmatch.evaluation.records import PredRecords
from vocmatch.evaluation.shards import ranking_check
from vocmatch.evaluation.shards.ranking_check import (
    places_sorted,
    rankings_hold,
    rows_counted,
    rows_fit,
)


@dataclass(frozen=True)
class _Ranked:
    """What a run's records hold for :func:`class_rankings` to rank."""

    preds: PredRecords
    class_names: tuple[str, ...]
    ranked: None = None


def _preds(count: list[int], label: list[int], score: list[float]) -> PredRecords:
    n = len(label)
    flags = np.zeros(n, dtype=np.uint16)
    return PredRecords(
        np.array(count, dtype=np.int64), np.array(label, np.int32), np.array(score),
        flags, flags, np.zeros(n, np.uint8), np.zeros((n, 0), np.uint16),
        np.zeros((n, 0), np.uint16),
    )  # fmt: skip


@st.composite
def _sets(draw: st.DrawFn) -> tuple[PredRecords, int]:
    n_classes = draw(st.integers(1, 4))
    count = draw(st.lists(st.integers(0, 6), min_size=1, max_size=6))
    n = sum(count)
    label = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    score = draw(st.lists(st.sampled_from([0.1, 0.5, 0.9, float("nan")]), min_size=n, max_size=n))
    return _preds(count, label, score), n_classes


def _stored(preds: PredRecords, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, sizes and places as a cache stores them, made by ranking the predictions."""
    records = _Ranked(preds, tuple(str(k) for k in range(n_classes)))
    rows = np.zeros(0, dtype=np.int64)
    rank = np.zeros(preds.label.size, dtype=np.int64)
    sizes = []
    for members, place in class_rankings(records):  # type: ignore[arg-type]
        rows = np.append(rows, members)
        rank[members] = place
        sizes.append(members.size)
    return rows, np.array(sizes, dtype=np.int64), rank


@settings(max_examples=300, deadline=None)
@given(_sets())
def test_the_rankings_a_run_makes_hold(drawn: tuple[PredRecords, int]) -> None:
    preds, n_classes = drawn
    rows, sizes, rank = _stored(preds, n_classes)
    assert rankings_hold(rows, sizes, rank, preds)


@settings(max_examples=300, deadline=None)
@given(_sets(), st.data())
def test_rankings_moved_within_a_class_do_not_hold(
    drawn: tuple[PredRecords, int], data: st.DataObject
) -> None:
    """Two predictions of one class swapped in its ranking, or two places swapped: the
    check refuses exactly when the stored arrays differ from the made ones."""
    preds, n_classes = drawn
    rows, sizes, rank = _stored(preds, n_classes)
    if rows.size < 2:
        return
    i = data.draw(st.integers(0, rows.size - 2))
    moved = rows.copy()
    moved[[i, i + 1]] = moved[[i + 1, i]]
    same_class = preds.label[moved[i]] == preds.label[moved[i + 1]]
    if same_class:
        assert not rankings_hold(moved, sizes, rank, preds)
    places = rank.copy()
    j, k = data.draw(st.integers(0, rank.size - 1)), data.draw(st.integers(0, rank.size - 1))
    places[[j, k]] = places[[k, j]]
    assert rankings_hold(rows, sizes, places, preds) == bool(np.array_equal(places, rank))


needs_kernel = pytest.mark.skipif(
    getattr(ranking_check._compiled, "places_hold", None) is None,
    reason="the compiled reader is not built here",
)


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(_sets(), st.data())
def test_the_compiled_places_check_agrees_with_numpy(
    drawn: tuple[PredRecords, int], data: st.DataObject
) -> None:
    """The places as made, one changed by one, or two swapped: the compiled pass and the
    sort give the same verdict, which is whether they are the places made."""
    preds, n_classes = drawn
    _, _, rank = _stored(preds, n_classes)
    places = rank.copy()
    if places.size:
        j, k = (
            data.draw(st.integers(0, places.size - 1)),
            data.draw(st.integers(0, places.size - 1)),
        )
        places[[j, k]] = places[[k, j]]
        places[j] += data.draw(st.sampled_from([0, 0, 1]))
    compiled = ranking_check._places_hold(places, preds, n_classes)
    assert compiled == places_sorted(places, preds, n_classes)
    assert compiled == bool(np.array_equal(places, rank))


@needs_kernel
@pytest.mark.parametrize(
    ("count", "label", "rank", "holds"),
    [
        pytest.param([3], [0, 1, 0], [0, 0, 1], True, id="holds"),
        pytest.param([2], [0, 1, 0], [0, 0, 1], False, id="counts-short-of-the-predictions"),
        pytest.param([4], [0, 1, 0], [0, 0, 1], False, id="counts-beyond-the-predictions"),
        pytest.param([-1, 4], [0, 1, 0], [0, 0, 1], False, id="negative-count"),
        pytest.param([3], [0, 2, 0], [0, 0, 1], False, id="label-beyond-the-classes"),
        pytest.param([3], [0, -1, 0], [0, 0, 1], False, id="negative-label"),
        pytest.param([3], [0, 1, 0], [0, 0], False, id="fewer-places"),
        pytest.param([3], [0, 1, 0], [0, 0, 2], False, id="a-place-skipped"),
        pytest.param([], [], [], True, id="no-prediction"),
    ],
)
def test_the_compiled_places_check_refuses_what_does_not_fit(
    count: list[int], label: list[int], rank: list[int], holds: bool
) -> None:
    """Arrays the caller did not check (the kernel never reads beyond them): False, no
    crash."""
    kernel = ranking_check._compiled.places_hold
    labels, counts = np.array(label, np.int32), np.array(count, np.int64)
    assert kernel(labels, counts, np.array(rank, np.int64), 2) is holds


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(_sets(), st.data())
def test_the_compiled_rows_check_agrees_with_numpy(
    drawn: tuple[PredRecords, int], data: st.DataObject
) -> None:
    """Rows as made, one row moved to another place, or one replaced by another row (or by
    one outside the predictions): the compiled pass and numpy give the same verdict, which
    is whether every prediction is once in its own class's ranking."""
    preds, n_classes = drawn
    rows, sizes, _ = _stored(preds, n_classes)
    moved = rows.copy()
    if moved.size:
        j = data.draw(st.integers(0, moved.size - 1))
        moved[j] = data.draw(st.integers(-1, moved.size))
    expected = sorted(moved.tolist()) == list(range(rows.size)) and np.array_equal(
        preds.label[moved], np.repeat(np.arange(n_classes), sizes)
    )
    assert rows_fit(moved, sizes, preds.label) is bool(expected)
    assert rows_counted(moved, sizes, preds.label) is bool(expected)


@needs_kernel
@pytest.mark.parametrize(
    ("rows", "sizes", "label", "fits"),
    [
        pytest.param([0, 2, 1], [2, 1], [0, 1, 0], True, id="fits"),
        pytest.param([0, 2, 1], [2, 2], [0, 1, 0], False, id="sizes-beyond-the-rows"),
        pytest.param([0, 2, 1], [1, 1], [0, 1, 0], False, id="sizes-short-of-the-rows"),
        pytest.param([0, 2, 1], [-1, 4], [0, 1, 0], False, id="negative-size"),
        pytest.param([0, 0, 1], [2, 1], [0, 1, 0], False, id="a-row-twice"),
        pytest.param([0, 3, 1], [2, 1], [0, 1, 0], False, id="a-row-beyond"),
        pytest.param([0, -1, 1], [2, 1], [0, 1, 0], False, id="a-negative-row"),
        pytest.param([0, 1, 2], [2, 1], [0, 1, 0], False, id="a-row-of-another-class"),
        pytest.param([0, 2], [1, 1], [0, 1, 0], False, id="fewer-rows"),
        pytest.param([], [], [], True, id="no-prediction"),
    ],
)
def test_the_compiled_rows_check_refuses_what_does_not_fit(
    rows: list[int], sizes: list[int], label: list[int], fits: bool
) -> None:
    kernel = ranking_check._compiled.rows_fit
    found = kernel(np.array(rows, np.int64), np.array(sizes, np.int64), np.array(label, np.int32))
    assert found is fits

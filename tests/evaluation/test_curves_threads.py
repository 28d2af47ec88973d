"""The compiled ``class_curves`` call split into parts of whole classes on threads gives the
single-thread call's bits (vocmatch/parts.h: each part writes its own classes' slice)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.compiled import PURE_ENGINE_VARIABLE, kernels
from vocmatch.evaluation.class_curves import RankedFlags, class_curves
from vocmatch.evaluation.summary_kernels import MODULE as SUMMARY_KERNELS

pytestmark = pytest.mark.skipif(
    kernels(SUMMARY_KERNELS) is None,
    reason="the compiled summary kernels are not built (or VOCMATCH_PURE_ENGINE is set)",
)

_FLAG_TYPES = [np.uint8, np.uint16, np.uint64, np.int64]
_SCORES = [0.0, -0.0, 0.3, 0.5, 0.5, 0.9, np.nan, -np.inf, np.inf, 1e-300]


def _raw(
    flags: RankedFlags, level: int, counting: np.ndarray, eps: float | None, threads: int
) -> tuple[np.ndarray, ...]:
    """The kernel's four outputs of a call on ``threads`` threads."""
    fast = kernels(SUMMARY_KERNELS)
    assert fast is not None
    n, n_k = flags.rows.size, flags.starts.size - 1
    recall, precision, score = np.empty(n), np.empty(n), np.empty(n)
    starts = np.empty(n_k + 1, dtype=np.int64)
    fast.class_curves(
        flags.rows, flags.starts, flags.score, flags.matched, flags.ignored, level, counting,
        eps is None, 0.0 if eps is None else eps, recall, precision, score, starts, threads,
    )  # fmt: skip
    kept = int(starts[-1])  # the points written; the rest of the arrays is not
    return recall[:kept], precision[:kept], score[:kept], starts


def _same_bits(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


@st.composite
def _flags(draw: st.DrawFn) -> tuple[RankedFlags, int, np.ndarray]:
    """A few classes of ranked predictions: empty classes, one class, none, classes without
    ground truth, tied and missing scores, predictions ranked by two classes or none,
    ignored matches at some levels only."""
    sizes = draw(st.lists(st.integers(0, 30) | st.just(0), max_size=12))
    n_k = len(sizes)
    n_pred = max(1, sum(sizes)) + draw(st.integers(0, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(_FLAG_TYPES))
    bits = 8 * np.dtype(dtype).itemsize - (dtype is np.int64)
    level = draw(st.integers(0, min(bits, 10) - 1))
    full = (1 << min(bits, 10)) - 1
    matched = rng.integers(0, full + 1, n_pred).astype(dtype)
    density = draw(st.sampled_from([0.0, 0.2, 1.0]))
    ignored = matched & np.where(rng.random(n_pred) < density, full, 0).astype(dtype)
    score = rng.choice(_SCORES, n_pred).astype(draw(st.sampled_from([np.float32, np.float64])))
    rows = rng.integers(0, n_pred, sum(sizes)).astype(np.int64)
    starts = np.zeros(n_k + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    counting = rng.choice([np.nan, 1.0, 3.0, 40.0], n_k).astype(np.float64)
    return RankedFlags(rows, starts, score, matched, ignored), level, counting


@settings(max_examples=400, deadline=None)
@given(_flags(), st.sampled_from([None, 1e-16, 0.5]), st.integers(2, 64))
def test_class_curves_in_parts_is_the_single_threads(
    case: tuple[RankedFlags, int, np.ndarray], eps: float | None, threads: int
) -> None:
    """Every part count from 2 to 64 (more parts than classes or rows at times): the split
    call's curves and class starts are the single-thread call's, byte for byte."""
    flags, level, counting = case
    _same_bits(_raw(flags, level, counting, eps, threads), _raw(flags, level, counting, eps, 1))


def _large(n_k: int, seed: int) -> tuple[RankedFlags, np.ndarray]:
    """``n_k`` classes of 200,000 ranked predictions in all, of very unequal sizes (one
    holding most of them, empty ones among them), a fifth of them ignored."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.0, n_k) * (rng.random(n_k) < 0.8)
    if weights.sum() == 0:
        weights[0] = 1.0
    sizes = rng.multinomial(200_000, weights / weights.sum())
    starts = np.zeros(n_k + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    n_pred = 150_000
    matched = rng.integers(0, 1 << 10, n_pred).astype(np.uint16)
    ignored = matched & np.where(rng.random(n_pred) < 0.2, 0xFFFF, 0).astype(np.uint16)
    score = rng.choice([0.1, 0.5, 0.5, 0.75, np.nan], n_pred).astype(np.float32)
    rows = rng.integers(0, n_pred, int(starts[-1])).astype(np.int64)
    counting = rng.choice([np.nan, 5.0, 900.0], n_k)
    return RankedFlags(rows, starts, score, matched, ignored), counting


@pytest.mark.parametrize("n_k", [1, 2, 7, 80, 365])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_class_curves_of_many_in_parts_is_the_single_threads(n_k: int, threads: int) -> None:
    """Large calls (the parts' class ranges balanced by predictions, a class larger than a
    part's share, one class alone): the single-thread call's bits at every level."""
    flags, counting = _large(n_k, n_k)
    for level in (0, 4, 9):
        for eps in (None, 1e-16):
            _same_bits(
                _raw(flags, level, counting, eps, threads),
                _raw(flags, level, counting, eps, 1),
            )


@pytest.mark.parametrize("threads", [2, 4])
def test_class_curves_wrapper_in_parts_is_numpys(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """The library's class_curves split on threads gives the numpy implementation's curves."""
    flags, counting = _large(40, 7)
    n_gt: list[Any] = np.nan_to_num(counting).astype(int).tolist()
    split = class_curves(flags, 3, n_gt, threads=threads)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    reference = class_curves(flags, 3, n_gt)
    assert len(split) == len(reference) == 40
    for a, b in zip(split, reference, strict=True):
        _same_bits((a.recall, a.precision, a.scores), (b.recall, b.precision, b.scores))

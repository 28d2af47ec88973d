"""Every class's precision-recall curve made at once (vocmatch/evaluation/class_curves.py, in
compiled code by fastsummary.class_curves, numpy as the fallback) is, class by class, what
precision_recall_curve gives for the class's ranked predictions alone, to the bit."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.evaluation.test_fastaccumulate import assert_same_bits
from vocmatch.compiled import PURE_ENGINE_VARIABLE, kernels
from vocmatch.core.ap import Curve, precision_recall_curve
from vocmatch.evaluation.class_curves import class_curves, ranked_flags, ranked_scores
from vocmatch.evaluation.summary_kernels import MODULE


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = kernels(MODULE)
    if module is None:
        pytest.skip("the compiled summaries are not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


@st.composite
def ranked_cases(draw: st.DrawFn) -> dict[str, Any]:
    """Predictions with ties, unscored ones (NaN), float32 or float64 scores, flags of 1 or 2
    bytes; classes that rank some of them (a class may rank none), some without ground
    truth."""
    n = draw(st.integers(0, 60))
    flag_type = draw(st.sampled_from([np.uint8, np.uint16]))
    bits = 8 * np.dtype(flag_type).itemsize
    score_values = st.one_of(
        st.sampled_from([0.0, -0.0, 0.5, 1.0, np.nan, np.inf, -np.inf]),
        st.floats(allow_nan=True, allow_infinity=True, width=32),
    )
    score = np.array(
        draw(st.lists(score_values, min_size=n, max_size=n)),
        dtype=draw(st.sampled_from([np.float32, np.float64])),
    )
    matched = np.array(draw(st.lists(st.integers(0, 2**bits - 1), min_size=n, max_size=n)),
                       dtype=flag_type)  # fmt: skip
    ignored = np.array(draw(st.lists(st.integers(0, 2**bits - 1), min_size=n, max_size=n)),
                       dtype=flag_type)  # fmt: skip
    n_k = draw(st.integers(1, 5))
    owner = draw(st.lists(st.integers(-1, n_k - 1), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    rankings = [np.array([p for p in order if owner[p] == k], dtype=np.int32) for k in range(n_k)]
    return {
        "score": score,
        "matched": matched,
        "ignored": ignored,
        "rankings": rankings,
        "level": draw(st.integers(0, bits - 1)),
        "n_gt": draw(st.lists(st.integers(0, 30), min_size=n_k, max_size=n_k)),
        "eps": draw(st.sampled_from([None, float(np.spacing(1))])),
    }


def one_class_at_a_time(case: dict[str, Any]) -> list[Curve]:
    """Each class's curve as precision_recall_curve makes it from the class alone."""
    curves = []
    level = case["level"]
    for k, rows in enumerate(case["rankings"]):
        kept = rows[((case["ignored"][rows] >> level) & 1) == 0]
        hits = ((case["matched"][kept] >> level) & 1).astype(bool)
        score = ranked_scores(case["score"], kept)
        curves.append(precision_recall_curve(hits, score, case["n_gt"][k], eps=case["eps"]))
    return curves


def all_at_once(case: dict[str, Any]) -> list[Curve]:
    flags = ranked_flags(case["score"], case["matched"], case["ignored"], case["rankings"])
    return class_curves(flags, case["level"], case["n_gt"], eps=case["eps"])


@settings(max_examples=300, deadline=None)
@given(ranked_cases())
def test_class_curves_are_each_class_alone_compiled(
    kernel: ModuleType, case: dict[str, Any]
) -> None:
    """The compiled pass gives each class's curve to the bit."""
    assert_same_bits(all_at_once(case), one_class_at_a_time(case))


@settings(max_examples=300, deadline=None)
@given(ranked_cases())
def test_class_curves_are_each_class_alone_in_numpy(case: dict[str, Any]) -> None:
    """The numpy fallback gives each class's curve to the bit."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "1")
        made = all_at_once(case)
    assert_same_bits(made, one_class_at_a_time(case))


def curve_arguments() -> list[Any]:
    """Valid arguments: one class of two predictions, the first a true positive."""
    return [
        np.array([0, 1], dtype=np.int64),  # rows
        np.array([0, 2], dtype=np.int64),  # starts
        np.array([0.9, 0.8]),  # score
        np.array([1, 0], dtype=np.uint8),  # matched
        np.array([0, 0], dtype=np.uint8),  # ignored
        0,  # level
        np.array([1.0]),  # n_gt
        True,  # guard
        0.0,  # eps
        np.zeros(2),  # recall
        np.zeros(2),  # precision
        np.zeros(2),  # scores
        np.zeros(2, dtype=np.int64),  # kept_starts
    ]


def test_class_curves_kernel_on_valid_arguments(kernel: ModuleType) -> None:
    arguments = curve_arguments()
    kernel.class_curves(*arguments)
    assert arguments[9].tolist() == [1.0, 1.0]
    assert arguments[10].tolist() == [1.0, 0.5]
    assert arguments[12].tolist() == [0, 2]


@pytest.mark.parametrize(
    ("place", "value", "message"),
    [
        pytest.param(0, np.array([0, 2], dtype=np.int64), "rows: out of range", id="row"),
        pytest.param(0, np.array([0, -1], dtype=np.int64), "rows: out of range", id="negative"),
        pytest.param(1, np.array([0, 3], dtype=np.int64), "starts: not from 0", id="end"),
        pytest.param(1, np.array([1, 2], dtype=np.int64), "starts: not from 0", id="begin"),
        pytest.param(1, np.array([0, 1, 2], dtype=np.int64), "(K + 1,)", id="classes"),
        pytest.param(3, np.array([1], dtype=np.uint8), "not as long as score", id="flags"),
        pytest.param(4, np.array([0, 0], dtype=np.uint16), "not the size", id="flag-size"),
        pytest.param(5, 8, "past the flags' bits", id="level"),
        pytest.param(5, -1, "past the flags' bits", id="level-negative"),
        pytest.param(9, np.zeros(1), "not as long as rows", id="recall"),
        pytest.param(12, np.zeros(3, dtype=np.int64), "(K + 1,)", id="kept-starts"),
        pytest.param(2, np.array([1, 2], dtype=np.int64), "score: unexpected", id="score-type"),
        pytest.param(10, np.zeros(4)[::2], "not C-contiguous", id="strided-out"),
    ],
)
def test_class_curves_kernel_refuses_arguments_it_would_read_past(
    kernel: ModuleType, place: int, value: Any, message: str
) -> None:
    arguments = curve_arguments()
    arguments[place] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        kernel.class_curves(*arguments)


def test_class_curves_kernel_refuses_starts_out_of_order(kernel: ModuleType) -> None:
    arguments = curve_arguments()
    arguments[1] = np.array([0, 2, 1, 2], dtype=np.int64)
    arguments[6] = np.ones(3)
    arguments[12] = np.zeros(4, dtype=np.int64)
    with pytest.raises(ValueError, match="starts: not ascending"):
        kernel.class_curves(*arguments)

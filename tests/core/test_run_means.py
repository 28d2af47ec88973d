"""The mean of each run (vocmatch.core.run_means): math.fsum's bits, compiled or not."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vocmatch.compiled import PURE_ENGINE_VARIABLE
from vocmatch.core import match_kernels
from vocmatch.core.run_means import run_means

_BUILT = importlib.util.find_spec(match_kernels.MODULE) is not None

# Values whose sums tie halfway between two doubles, carry across words of the exact
# accumulator, or sit in the subnormal range, and any value in [0, 1].
_SPECIAL = [
    0.0, 1.0, 0.5, 2.0**-53, 2.0**-54, 2.0**-52, 1.0 - 2.0**-53, 2.0**-1022, 2.0**-1074,
    3 * 2.0**-1074, 2.0**-1022 - 2.0**-1074, 1 / 3, 2 / 3, 0.1, 0.7, 2.0**-64, 2.0**-128,
    1.0 + 0.0,
]  # fmt: skip
_VALUE = st.one_of(st.sampled_from(_SPECIAL), st.floats(0.0, 1.0))


def _fsum_means(values: list[float], bounds: list[int]) -> np.ndarray:
    return np.array(
        [
            math.fsum(values[a:b]) / (b - a) if b > a else math.nan
            for a, b in itertools.pairwise(bounds)
        ],
        dtype=np.float64,
    )


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a.view(np.uint64), b.view(np.uint64))
    )


@st.composite
def _runs(
    draw: st.DrawFn, value: st.SearchStrategy[float] = _VALUE
) -> tuple[list[float], list[int]]:
    sizes = draw(st.lists(st.sampled_from([0, 1, 2, 3, 5, 40]), max_size=6))
    values: list[float] = []
    bounds = [0]
    for size in sizes:
        values += draw(st.lists(value, min_size=size, max_size=size))
        bounds.append(len(values))
    return values, bounds


@settings(
    max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    runs=st.one_of(
        _runs(),
        _runs(st.sampled_from(_SPECIAL)),
        _runs(st.one_of(_VALUE, st.sampled_from([-0.0, math.nan, 1.5, -0.25]))),
    )
)
def test_run_means_give_fsum_bits(
    monkeypatch: pytest.MonkeyPatch, runs: tuple[list[float], list[int]]
) -> None:
    """Ties, carries, subnormals, empty runs, and values the kernel leaves to math.fsum
    (-0.0, NaN, outside [0, 1]): both implementations give math.fsum's bits."""
    values, bounds = runs
    expected = _fsum_means(values, bounds)
    for pure in ("0", "1"):
        with monkeypatch.context() as patch:
            patch.setenv(PURE_ENGINE_VARIABLE, pure)
            found = run_means(np.array(values, dtype=np.float64), np.array(bounds))
        assert _same_bits(found, expected), pure


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param([1.0, 2.0**-53], 1.0, id="tie-to-even-down"),
        pytest.param([1.0, 2.0**-53, 2.0**-100], 1.0 + 2.0**-52, id="above-half-up"),
        pytest.param([1.0 - 2.0**-53, 2.0**-54, 2.0**-54], 1.0, id="carry-into-new-bit"),
        pytest.param([0.1] * 10, 1.0, id="tenths"),
        pytest.param([2.0**-1074] * 3, 3 * 2.0**-1074, id="subnormals"),
    ],
)
def test_run_means_exact_sums(values: list[float], expected: float) -> None:
    found = run_means(np.array(values), np.array([0, len(values)]))
    assert found.tolist() == [expected / len(values)]


@pytest.mark.skipif(not _BUILT, reason="the compiled matching kernels are not built")
@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        pytest.param([0, 3], "bounds[1] = 3 is out of order or range", id="past-the-end"),
        pytest.param([1, 0], "bounds[1] = 0 is out of order or range", id="decreasing"),
        pytest.param([-1, 0], "bounds[0] = -1 is out of order or range", id="negative"),
    ],
)
def test_run_means_kernel_refuses_bounds(bounds: list[int], message: str) -> None:
    """Bounds out of order or range are a ValueError, never a read out of bounds."""
    fast: Any = importlib.import_module(match_kernels.MODULE)
    out = np.empty(len(bounds) - 1)
    with pytest.raises(ValueError, match=re.escape(message)):
        fast.run_means(np.zeros(2), np.array(bounds, dtype=np.int64), out)

"""Arrays in the narrowest dtype that holds them, as state and cache files store them:
the same bytes as converting them whole, without converting a float array whose first
values already show that float32 does not hold it."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from vocmatch.evaluation.shards.narrow_arrays import (
    FLOAT_SAMPLE,
    narrowest_float,
    narrowest_int,
    narrowest_stack,
)


def _converted_whole(values: npt.NDArray[np.float64]) -> npt.NDArray[Any]:
    """float32 when the whole array survives the round trip, checked at once."""
    single = values.astype(np.float32)
    exact = np.array_equal(single.astype(np.float64), values, equal_nan=True)
    return single if exact else values


def _scores(n: int, inexact_at: int | None = None, nan_at: int | None = None) -> Any:
    """``n`` scores float32 holds (multiples of 1/1024), one it does not at ``inexact_at``,
    NaN at ``nan_at``."""
    values = (np.arange(n) % 1024) / 1024.0
    if inexact_at is not None:
        values[inexact_at] = 0.1
    if nan_at is not None:
        values[nan_at] = np.nan
    return values


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(_scores(0), id="empty"),
        pytest.param(_scores(10), id="few-exact"),
        pytest.param(_scores(10, inexact_at=3), id="few-inexact"),
        pytest.param(_scores(3 * FLOAT_SAMPLE), id="many-exact"),
        pytest.param(_scores(3 * FLOAT_SAMPLE, nan_at=7), id="many-exact-nan"),
        pytest.param(_scores(3 * FLOAT_SAMPLE, inexact_at=0), id="inexact-first"),
        pytest.param(
            _scores(3 * FLOAT_SAMPLE, inexact_at=FLOAT_SAMPLE - 1), id="inexact-last-checked"
        ),
        pytest.param(_scores(3 * FLOAT_SAMPLE, inexact_at=FLOAT_SAMPLE), id="inexact-after-sample"),
        pytest.param(_scores(3 * FLOAT_SAMPLE, inexact_at=-1), id="inexact-last"),
    ],
)
def test_narrowest_float_is_the_whole_array_s_conversion(values: npt.NDArray[np.float64]) -> None:
    """float32 exactly when every value survives the round trip: the dtype and bytes of
    converting the whole array and comparing."""
    found, expected = narrowest_float(values), _converted_whole(values)
    assert found.dtype == expected.dtype
    assert found.tobytes() == expected.tobytes()


class _Counted(np.ndarray):
    """An array that records the size of each conversion of it (or of a slice of it)."""

    converted: ClassVar[list[int]] = []

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        _Counted.converted.append(int(self.size))
        return np.asarray(self).astype(*args, **kwargs)


def test_a_float_array_float32_does_not_hold_at_its_start_is_not_converted_whole() -> None:
    """Scores float32 does not hold in the first values checked: the array is kept as it
    is without being converted whole."""
    values = _scores(100 * FLOAT_SAMPLE, inexact_at=5).view(_Counted)
    _Counted.converted = []
    assert narrowest_float(values) is values
    assert max(_Counted.converted) <= FLOAT_SAMPLE


@pytest.mark.parametrize("top", [0, 255, 256, 65_535, 65_536, 2**32])
@pytest.mark.parametrize("rows", [0, 1, 1000])
def test_narrowest_stack_is_narrowest_int_of_the_stacked_columns(top: int, rows: int) -> None:
    """Columns put side by side in their narrow dtype: the dtype and bytes of stacking them
    as int64 and narrowing."""
    rng = np.random.default_rng(top + rows)
    columns = [rng.integers(0, top + 1, rows, dtype=np.int64) for _ in range(4)]
    if rows:
        columns[2][rows // 2] = top
    expected = narrowest_int(np.stack(columns, axis=1).astype(np.int64).reshape(rows, 4))
    found = narrowest_stack(columns)
    assert found.dtype == expected.dtype
    assert found.shape == expected.shape
    assert found.tobytes() == expected.tobytes()

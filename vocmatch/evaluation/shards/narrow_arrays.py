"""Arrays in the narrowest dtype that holds their values exactly, as state and cache files
store them (:mod:`vocmatch.evaluation.shards.state_records`).

A float array is stored as float32 when every value survives the round trip; its first
:data:`FLOAT_SAMPLE` values are checked first, so that a set whose scores float32 does not
hold (a detector's scores written as decimal text nearly always are) is not converted
whole, twice, to find out. Integer columns stored side by side are put into their narrow
dtype at once, not stacked as int64 first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["FLOAT_SAMPLE", "narrowest_float", "narrowest_int", "narrowest_stack"]

#: The values of a float array checked before the whole of it.
FLOAT_SAMPLE = 4096


def _narrowest_unsigned(top: int) -> type[np.unsignedinteger[Any]]:
    """The smallest unsigned integer type that holds ``top``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def narrowest_int(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``values`` (none negative) in the smallest unsigned integer type that holds them."""
    top = int(values.max()) if values.size else 0
    return values.astype(_narrowest_unsigned(top))


def narrowest_stack(columns: Sequence[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """The integer ``columns`` (none negative, as long as each other) side by side, as
    :func:`narrowest_int` of them stacked gives them: one pass, no int64 copy."""
    rows = int(columns[0].size) if columns else 0
    top = max((int(c.max()) for c in columns if c.size), default=0)
    out = np.empty((rows, len(columns)), dtype=_narrowest_unsigned(top))
    for j, column in enumerate(columns):
        out[:, j] = column
    return out


def _float32_exact(values: npt.NDArray[np.floating[Any]]) -> tuple[bool, npt.NDArray[Any]]:
    """Whether every value survives the round trip through float32 (NaN stays NaN), and
    the values as float32."""
    single = values.astype(np.float32)
    return bool(np.array_equal(single.astype(np.float64), values, equal_nan=True)), single


def narrowest_float(values: npt.NDArray[np.floating[Any]]) -> npt.NDArray[Any]:
    """float32 when every value survives the round trip exactly (NaN stays NaN)."""
    if values.size > FLOAT_SAMPLE and not _float32_exact(values[:FLOAT_SAMPLE])[0]:
        return values
    exact, single = _float32_exact(values)
    return single if exact else values

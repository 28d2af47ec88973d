"""The mean of each run of a column of values, its sum exactly rounded (``math.fsum``'s).

An image's mean IoU is the exactly rounded sum of its true positives' IoU over their number:
the same number whatever order they come in. Where the package was built with a C compiler,
``vocmatch/core/fastmatch.c`` (``run_means``) sums each run in an exact fixed-point
accumulator and rounds it once, to nearest with ties to even, as ``math.fsum`` does: the same
bits; values outside ``[0, 1]``, NaN and ``-0.0`` are summed by ``math.fsum`` itself.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from vocmatch.compiled import kernels
from vocmatch.core import match_kernels

__all__ = ["run_means"]

FloatArray = npt.NDArray[np.float64]


def run_means(values: npt.NDArray[Any], bounds: npt.NDArray[Any]) -> FloatArray:
    """``(R,)`` the mean of each run ``values[bounds[k]:bounds[k + 1]]``: ``math.fsum`` of
    the run over its length, NaN for an empty run.

    Args:
        values: ``(N,)`` float64 values.
        bounds: ``(R + 1,)`` where each run starts, non-decreasing, the last at most ``N``.

    Raises:
        ValueError: ``bounds`` is out of order or range (compiled kernels only).
    """
    column = np.ascontiguousarray(values, dtype=np.float64)
    starts = np.ascontiguousarray(bounds, dtype=np.int64)
    fast = kernels(match_kernels.MODULE)
    if fast is not None:
        out = np.empty(max(starts.size - 1, 0), dtype=np.float64)
        if fast.run_means(column, starts, out):
            return out
    items: list[float] = column.tolist()
    return np.array(
        [
            math.fsum(items[start:stop]) / (stop - start) if stop > start else math.nan
            for start, stop in itertools.pairwise(starts.tolist())
        ],
        dtype=np.float64,
    )

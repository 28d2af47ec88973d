"""A class's AP at every threshold, from pycocotools' precision table, is one reduction over
the recall levels (``precision[:, :, 2].mean(axis=1)``): the same bits as the mean of each
threshold's row taken alone (numpy sums both pairwise, row by row)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=500, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_t=st.integers(1, 12),
    decimals=st.sampled_from([None, 1, 3]),
    zeros=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_one_reduction_is_each_row_s_mean_bit_for_bit(
    seed: int, n_t: int, decimals: int | None, zeros: float
) -> None:
    rng = np.random.default_rng(seed)
    table = rng.random((4, n_t, 101, 3))  # as the compiled tables hold a class's
    table[rng.random(table.shape) < zeros] = 0.0
    if decimals is not None:
        table = np.round(table, decimals)
    for precision in (table[1], np.ascontiguousarray(table[2])):
        rows = [float(np.mean(precision[t, :, 2])) for t in range(n_t)]
        at_once = precision[:n_t, :, 2].mean(axis=1).tolist()
        assert np.array(at_once).tobytes() == np.array(rows).tobytes()

"""suspicious_boxes flags the boxes with a coordinate below 0 or beyond the enormous bound
and the predictions with a score outside [0, 1], whatever else the arrays hold (a NaN beside
them included: min and max alone would miss those)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.evaluation.result import ENORMOUS_COORDINATE
from vocmatch.evaluation.stages import suspicious_boxes

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("boxes", "scores", "odd"),
    [
        pytest.param([[0, 0, 1, 1]], [0.5], [False], id="plain"),
        pytest.param([[NAN, 0, 1, 1], [-1, 0, 1, 1]], None, [False, True], id="nan-hides-min"),
        pytest.param([[0, 0, NAN, 1], [0, 0, INF, 1]], None, [False, True], id="nan-hides-max"),
        pytest.param([[0, 0, 1, 1], [0, 0, 1, 1]], [NAN, -0.5], [False, True],
                     id="nan-hides-score"),
        pytest.param([[0, 0, 1, 1]], [1.5], [True], id="score"),
        pytest.param([[-0.0, 0, 1, 1]], [-0.0], [False], id="negative-zero"),
        pytest.param(np.zeros((0, 4)), [], [], id="none"),
    ],
)  # fmt: skip
def test_suspicious_boxes_cases(boxes: object, scores: object, odd: list[bool]) -> None:
    found = suspicious_boxes(
        np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
        None if scores is None else np.asarray(scores, dtype=np.float64),
    )
    assert found.tolist() == odd


VALUES = st.sampled_from([0.0, -0.0, 1.0, -1.0, NAN, INF, -INF, ENORMOUS_COORDINATE,
                          ENORMOUS_COORDINATE * 2, 0.5, 1.5])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(VALUES, min_size=4, max_size=4), VALUES), max_size=8))
def test_suspicious_boxes_flag_every_odd_row(rows: list[tuple[list[float], float]]) -> None:
    boxes = np.array([box for box, _ in rows], dtype=np.float64).reshape(-1, 4)
    scores = np.array([score for _, score in rows], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        expected = ((boxes < 0) | (boxes > ENORMOUS_COORDINATE)).any(axis=1)
        expected |= (scores < 0) | (scores > 1)
    assert suspicious_boxes(boxes, scores).tolist() == expected.tolist()

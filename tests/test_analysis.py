"""Error analysis: the confusion matrix, TIDE-style error types, mAP costs and tightness."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vocmatch.analysis import BACKGROUND, confusion_matrix
from vocmatch.evaluate import evaluate, read_pair


def test_confusion_matrix_on_the_demo_set(demo: tuple[Path, Path]) -> None:
    """TPs sit on the diagonal, the car called a truck off it, the rest against background."""
    gt, pred = read_pair(*demo)
    matrix = confusion_matrix(evaluate(gt, pred), gt, pred)
    assert matrix.names == (
        "bicycle", "bus", "car", "cat", "dog", "person", "truck", BACKGROUND,
    )  # fmt: skip
    assert matrix.counts.dtype == np.int64
    assert matrix.counts.tolist() == [
        [1, 0, 0, 0, 0, 0, 0, 1],
        [0, 1, 0, 0, 0, 0, 0, 0],
        [0, 0, 3, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 1, 0, 0, 1],
        [0, 0, 0, 0, 0, 4, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
        [1, 0, 1, 0, 1, 1, 0, 0],
    ]
    assert matrix.count("car", "truck") == 1

"""Average precision of a precision/recall curve (vocmatch.core.ap), worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from vocmatch.core.ap import COCO_RECALL_THRESHOLDS, average_precision, precision_at_recall

#: Recall 1/2 at precision 1, then recall 1 at precision 1/2.
HALF = ([0.5, 1.0], [1.0, 0.5])

#: Precision rises after the first point: the envelope lifts recall 1/4 to precision 1.
DIP = ([0.25, 0.5, 0.75], [0.5, 1.0, 0.75])


@pytest.mark.parametrize(
    ("curve", "interpolation", "expected"),
    [
        pytest.param(HALF, "all-point", 0.75, id="all-point"),
        # Levels 0 to 0.5 reach precision 1, levels 0.6 to 1 precision 1/2.
        pytest.param(HALF, "11-point", (6 + 5 * 0.5) / 11, id="11-point"),
        # Thresholds 0 to 0.5 (51) at precision 1, 0.51 to 1 (50) at 1/2.
        pytest.param(HALF, "101-point", (51 + 50 * 0.5) / 101, id="101-point"),
        # Envelope 1, 1, 0.75 over recall steps of 1/4; recall 1 never reached.
        pytest.param(DIP, "all-point", 0.25 + 0.25 + 0.25 * 0.75, id="dip-all-point"),
        pytest.param(DIP, "11-point", (6 + 2 * 0.75) / 11, id="dip-11-point"),
        pytest.param(DIP, "101-point", (26 + 25 + 25 * 0.75) / 101, id="dip-101-point"),
        pytest.param(([0.5], [1.0]), "11-point", 6 / 11, id="half-recall-11-point"),
        pytest.param(([0.5], [1.0]), "101-point", 51 / 101, id="half-recall-101-point"),
        # np.interp at recall 0, 0.01, ..., 1 and the trapezoid rule: precision 1 to recall
        # 0.5, falling linearly to 0.51 at 0.99, then to 0 at recall 1 (the curve's drop).
        pytest.param(
            HALF,
            "101-point-trapezoid",
            0.5 + 0.49 * (1 + 0.51) / 2 + 0.01 * 0.51 / 2,
            id="101-point-trapezoid",
        ),
    ],
)
def test_average_precision_worked_by_hand(
    curve: tuple[list[float], list[float]], interpolation: str, expected: float
) -> None:
    """Each interpolation's AP of a small curve, as the devkit and pycocotools define it."""
    recall, precision = curve
    assert average_precision(recall, precision, interpolation) == pytest.approx(  # type: ignore[arg-type]
        expected, abs=1e-15
    )


@pytest.mark.parametrize("interpolation", ["all-point", "11-point", "101-point"])
def test_an_empty_curve_has_ap_0(interpolation: str) -> None:
    """No prediction: AP 0, whatever the interpolation."""
    assert average_precision([], [], interpolation) == 0.0  # type: ignore[arg-type]


def test_an_unknown_interpolation_is_refused() -> None:
    """A misspelt interpolation is an error, not AP 0."""
    with pytest.raises(ValueError, match="unknown interpolation '12-point'"):
        average_precision(*HALF, "12-point")  # type: ignore[arg-type]


def test_precision_at_the_101_recall_thresholds() -> None:
    """pycocotools' table: the envelope at the first point whose recall reaches each
    threshold, 0 beyond the last recall."""
    recall, precision = (np.asarray(v) for v in DIP)
    table = precision_at_recall(recall, precision)
    assert table.shape == (101,)
    assert table.tolist() == [1.0] * 51 + [0.75] * 25 + [0.0] * 25
    assert COCO_RECALL_THRESHOLDS[50] == 0.5


def test_precision_at_recall_of_an_empty_curve_is_0() -> None:
    """No point on the curve: 0 at every threshold."""
    empty = np.zeros(0, dtype=np.float64)
    assert precision_at_recall(empty, empty).tolist() == [0.0] * 101

"""Operating points print a threshold that, typed back as --score-threshold, keeps exactly
the row's predictions: the cut rounded down (0.265961 is shown 0.265, not 0.266, which would
drop the prediction at the cut), with more places when the next lower score needs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluation.test_class_map import write_pred
from tests.readers.test_detections import run, write_gt
from vocmatch.evaluation.thresholds import typed_threshold


@pytest.mark.parametrize(
    ("cut", "below", "expected"),
    [
        pytest.param(0.265961, 0.2, "0.265", id="round-down"),
        pytest.param(0.265961, 0.2655, "0.2659", id="one-place-more"),
        pytest.param(0.265961, 0.26596, "0.265961", id="every-place"),
        pytest.param(0.7, None, "0.700", id="nothing-below"),
        pytest.param(0.7, 0.69999, "0.700", id="exact"),
        pytest.param(1.0, 0.5, "1.000", id="one"),
        pytest.param(12.5, 3.0, "12.500", id="logit"),
        pytest.param(-0.0004, -0.5, "-0.001", id="negative"),
        pytest.param(1e-20, 0.0, "1e-20", id="tiny"),
    ],
)
def test_the_shown_threshold_keeps_exactly_the_row(
    cut: float, below: float | None, expected: str
) -> None:
    assert typed_threshold(cut, below) == expected
    assert float(expected) <= cut
    assert below is None or float(expected) > below


@pytest.mark.parametrize(
    ("below", "shown"),
    [pytest.param(0.2, "0.265", id="three-places"), pytest.param(0.2655, "0.2659", id="four")],
)
def test_typing_the_shown_threshold_back_gives_the_row(
    tmp_path: Path, below: float, shown: str
) -> None:
    """Two objects found at 0.9 and 0.265961, one FP below: the best F1 keeps two; the
    value the table shows, given as --score-threshold, keeps the same two."""
    write_gt(tmp_path / "gt", {"a": [("car", 0, 0, 100, 100), ("car", 200, 0, 300, 100)]})
    write_pred(
        tmp_path / "pred",
        {"a": [("car", 0, 0, 100, 100, 0.9), ("car", 200, 0, 300, 100, 0.265961),
               ("car", 400, 0, 500, 100, below)]},
    )  # fmt: skip
    gt, pred = str(tmp_path / "gt"), str(tmp_path / "pred")
    code, out, _ = run(gt, pred)
    assert code == 0
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("Operating points"))
    row = next(line for line in lines[start:] if line.startswith("│ car"))
    assert [cell.strip() for cell in row.split("│")[1:7]] == [
        "car",
        shown,
        "2",
        "1.0000",
        "1.0000",
        "1.0000",
    ]
    code, out, _ = run(gt, pred, "--score-threshold", shown, "--format", "json")
    summary = json.loads(out)["summary"]
    assert (code, summary["tp"], summary["fp"], summary["fn"]) == (0, 2, 0, 0)
    # The value rounded to nearest, as the table printed it before, drops the prediction at
    # the cut.
    code, out, _ = run(gt, pred, "--score-threshold", "0.266", "--format", "json")
    assert (json.loads(out)["summary"]["tp"], json.loads(out)["summary"]["fn"]) == (1, 1)

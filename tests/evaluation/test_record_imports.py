"""The match records' module imports the slices' and the calibration's records only where
records holding them are joined or made: a run that keeps neither (the demo report) need not
build their classes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

#: The modules of what a plain run keeps no record of.
OPTIONAL_RECORDS = (
    "vocmatch.evaluation.slice_records",
    "vocmatch.evaluation.calibration_inputs",
)


def loaded_by_import(module: str) -> list[str]:
    """Which of :data:`OPTIONAL_RECORDS` importing ``module`` loads, in a fresh interpreter."""
    code = (
        f"import json, sys, {module}\n"
        f"print(json.dumps([m for m in {OPTIONAL_RECORDS!r} if m in sys.modules]))\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(ROOT)
    )
    return list(json.loads(process.stdout))


def test_the_records_module_loads_no_optional_records() -> None:
    """Importing vocmatch.evaluation.records loads neither the slices' nor the calibration's
    records."""
    assert loaded_by_import("vocmatch.evaluation.records") == []


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("vocmatch.evaluation.slice_records", id="slices"),
        pytest.param("vocmatch.evaluation.calibration_inputs", id="calibration"),
    ],
)
def test_the_probe_can_fail(module: str) -> None:
    """The same probe sees a module that is imported."""
    assert loaded_by_import(module) == [module]


def test_the_records_of_no_image_hold_empty_calibration_inputs() -> None:
    """The records of no image still carry the calibration's inputs, with no row (their
    module is imported where they are made)."""
    from vocmatch.core.protocol import protocol
    from vocmatch.evaluation.calibration_inputs import OCE_THRESHOLDS
    from vocmatch.evaluation.records import MatchRecords

    empty = MatchRecords.join([], protocol("default"))
    assert empty.calibration is not None
    assert empty.calibration.object_label.shape == (0,)
    assert empty.calibration.object_brier.shape == (0, len(OCE_THRESHOLDS))
    assert empty.calibration.pred_box.shape == (0, 4)

"""While threads of this process read a run's files, the calling thread imports what the run
needs after the reading (:mod:`vocmatch.run.stage_imports`) and the caller's ``meanwhile``:
once, during the reading; the report and the errors are those of a run without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import vocmatch
from vocmatch.core.protocol import PROTOCOLS, conventions_of
from vocmatch.errors import InputError
from vocmatch.render.outputs import render_text
from vocmatch.run.evaluate import EvalRequest
from vocmatch.run.read_stage import read_inputs
from vocmatch.run.stage_imports import AFTER_READING, BY_SUMMARY, import_after_reading


class Told:
    """A progress display that records what it is told, and the calls of ``meanwhile``."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def files(self, done: int, total: int) -> None:
        self.events.append(f"files {done}/{total}")

    def stages(self, stage: str, done: int, total: int) -> None:
        self.events.append("stages")

    def meanwhile(self) -> None:
        self.events.append("meanwhile")


def test_meanwhile_runs_once_while_the_files_are_read(generated: Path) -> None:
    """``meanwhile`` runs once, after the first files are read and before the last; the
    report is byte for byte that of a run without it."""
    told = Told()
    request = EvalRequest(gt=generated / "gt", pred=generated / "pred", protocol="coco")
    report = vocmatch.evaluate(request, progress=told, meanwhile=told.meanwhile)
    files = [i for i, event in enumerate(told.events) if event.startswith("files")]
    assert told.events.count("meanwhile") == 1
    assert files[0] < told.events.index("meanwhile") < files[-1]
    plain = vocmatch.evaluate(request)
    assert render_text(report, "json") == render_text(plain, "json")


def test_read_inputs_calls_meanwhile_without_a_progress(generated: Path) -> None:
    """Without a progress display too, ``meanwhile`` runs once, and the columns are the
    same."""
    calls: list[int] = []
    inputs = EvalRequest(gt=generated / "gt", pred=generated / "pred").inputs()
    gt, pred = read_inputs(inputs, meanwhile=lambda: calls.append(1))
    plain_gt, plain_pred = read_inputs(inputs)
    assert calls == [1]
    assert (gt.keys, pred.keys) == (plain_gt.keys, plain_pred.keys)
    assert gt.boxes.tolist() == plain_gt.boxes.tolist()


@pytest.mark.parametrize(
    ("gt_files", "pred_files", "called"),
    [
        pytest.param([], ["a.xml"], [], id="no-ground-truth-file"),
        pytest.param(["a.xml"], ["b.xml"], [1], id="nothing-pairs"),
    ],
)
def test_a_bad_input_fails_as_without_meanwhile(
    tmp_path: Path, gt_files: list[str], pred_files: list[str], called: list[int]
) -> None:
    """A refused input raises the same error, with the same words, whether the run imports
    meanwhile or not; with no file read, ``meanwhile`` is not called."""
    xml = (Path(__file__).parents[2] / "fixtures" / "demo" / "gt" / "street_01.xml").read_bytes()
    for side, names in (("gt", gt_files), ("pred", pred_files)):
        (tmp_path / side).mkdir()
        for name in names:
            (tmp_path / side / name).write_bytes(xml)
    request = EvalRequest(gt=tmp_path / "gt", pred=tmp_path / "pred")
    calls: list[int] = []
    with pytest.raises(InputError) as with_meanwhile:
        vocmatch.evaluate(request, meanwhile=lambda: calls.append(1))
    with pytest.raises(InputError) as without:
        vocmatch.evaluate(request)
    assert str(with_meanwhile.value) == str(without.value)
    assert calls == called


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_the_modules_imported_meanwhile_exist(protocol: str) -> None:
    """Every module named for after the reading is imported (a renamed module would fail
    here, not in a run)."""
    conventions = conventions_of(protocol)
    import_after_reading(conventions)
    names = (*AFTER_READING, *BY_SUMMARY[conventions.summary])
    assert [name for name in names if name not in sys.modules] == []

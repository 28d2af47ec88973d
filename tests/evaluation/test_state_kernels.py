"""Hostile state files through the accumulation: a state's arrays are read from a file
anyone can hand over, then merged and accumulated by the compiled kernels or by numpy
(``VOCMATCH_PURE_ENGINE=1``). Whatever an array holds, both engines refuse it alike (one
StateError line naming the file) or give the same numbers, never another exception."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.evaluation.test_batch import assert_identical
from tests.evaluation.test_incremental import arrays_of, fed
from tests.oracle import random_dataset
from vocmatch import read_states
from vocmatch.cli import EXIT_USAGE
from vocmatch.compiled import PURE_ENGINE_VARIABLE
from vocmatch.errors import StateError
from vocmatch.evaluation.result import Evaluation
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.state import RawState, read_state, write_state

ENGINES = [pytest.param("", id="compiled"), pytest.param("1", id="numpy")]
Arrays = dict[str, np.ndarray]


def valid_state(cells: bool = True) -> RawState:
    """A state of four images of random boxes under the coco protocol (with its ground-truth
    cells, or as a vocmatch before them saved it: without, in format version 4)."""
    gt, pred = random_dataset(3, images=4)
    raw = read_state(fed(arrays_of(gt, pred), "coco").to_bytes())
    if cells:
        return raw
    header = {k: v for k, v in raw.header.items() if k != "gt_cells"}
    return RawState(header, {k: v for k, v in raw.arrays.items() if k != "gt_cells"})


VALID = valid_state()
VALID_V4 = valid_state(cells=False)


def state_bytes(raw: RawState, changed: Arrays) -> bytes:
    """The bytes of ``raw`` with some arrays replaced (a file consistent in every way a
    checksum can see)."""
    version = 7 if "gt_cells" in raw.arrays else 4
    return write_state(RawState(raw.header, {**raw.arrays, **changed}), version=version)


def outcome(data: bytes, engine: str, monkeypatch: pytest.MonkeyPatch) -> Evaluation | StateError:
    """The evaluation of a state, or the StateError refusing it (anything else raised
    fails the test)."""
    with monkeypatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, engine)
        try:
            return Evaluator.from_bytes(data, "s.vms").result()
        except StateError as error:
            return error


def assert_engines_agree(data: bytes, monkeypatch: pytest.MonkeyPatch) -> Evaluation | StateError:
    """Both engines refuse the state with the same single line, or give identical numbers."""
    compiled, numpy = (outcome(data, engine, monkeypatch) for engine in ("", "1"))
    if isinstance(compiled, StateError) or isinstance(numpy, StateError):
        assert str(compiled) == str(numpy)
        assert str(compiled).startswith("s.vms: ")
        assert "\n" not in str(compiled)
    else:
        assert_identical(compiled, numpy)
        assert_fractions(compiled)
    return compiled


def assert_fractions(evaluation: Evaluation) -> None:
    """Every AP, precision and recall read is a fraction (pycocotools' -1 aside): a state
    accepted is one whose numbers are not silently wrong."""
    summary = evaluation.summary
    values: list[float | None] = [summary.map, summary.precision, summary.recall]
    for c in evaluation.classes:
        assert 0 <= c.tp <= c.gt or c.gt == 0 == c.tp, c
        values += [c.ap, c.ap50, c.ap75, c.precision, c.recall]
        if c.curve is not None:
            curve = np.concatenate([c.curve.precision, c.curve.recall])
            assert ((curve >= 0) & (curve <= 1) | np.isnan(curve)).all(), c.name
    if evaluation.coco is not None:
        values += [v for v in dataclasses.astuple(evaluation.coco) if v != -1]
    assert all(v is None or 0 <= v <= 1 for v in values), values


def wide(name: str, edit: Callable[[np.ndarray], None], raw: RawState = VALID) -> Arrays:
    """Array ``name`` of ``raw`` as uint64 (where it is unsigned), edited in place."""
    values = raw.arrays[name]
    copy = values.astype(np.uint64 if values.dtype.kind == "u" else values.dtype)
    edit(copy)
    return {name: copy}


def first_ignored(raw: RawState) -> int:
    return int(raw.arrays["ignored_pred"][0])


#: Crafted arrays each refused by the loader, under either engine, with this line.
REFUSED = [
    pytest.param(
        VALID,
        wide("pred_label", lambda v: v.__iadd__(np.uint64(1 << 32))),
        "array 'pred_label' names a class beyond the 4 listed",
        id="label-that-wraps-to-a-listed-class",
    ),
    pytest.param(
        VALID,
        wide("pred_label", lambda v: v.__setitem__(0, np.uint64(2**63))),
        "array 'pred_label' names a class beyond the 4 listed",
        id="label-that-wraps-negative",
    ),
    pytest.param(
        VALID,
        wide("ignored_pred", lambda v: v.__setitem__(-1, np.uint64(2**64 - 1))),
        "array 'ignored_pred' holds indices no file could hold",
        id="ignored-index-that-wraps-to-the-last",
    ),
    pytest.param(
        VALID,
        wide("ignored_pred", lambda v: v.__setitem__(1, v[0])),
        "array 'ignored_pred' does not name predictions each once in order",
        id="ignored-index-twice",
    ),
    pytest.param(
        VALID,
        wide("ignored_pred", lambda v: v.__setitem__(slice(None), v[::-1].copy())),
        "array 'ignored_pred' does not name predictions each once in order",
        id="ignored-indices-out-of-order",
    ),
    pytest.param(
        VALID_V4,
        wide("coco_gt", lambda v: v.__setitem__((0, 1), np.uint64(2**63)), VALID_V4),
        "array 'coco_gt' holds counts no file could hold",
        id="coco-gt-that-wraps-negative",
    ),
    pytest.param(
        VALID_V4,
        wide("image_values", lambda v: v.__setitem__((0, 2), np.uint64(2**64 - 1)), VALID_V4),
        "array 'image_values' holds counts no file could hold",
        id="image-count-that-wraps-negative",
    ),
    pytest.param(
        VALID_V4,
        wide("class_counts", lambda v: v.__setitem__((0, 3), np.uint64(2**63)), VALID_V4),
        "array 'class_counts' holds counts no file could hold",
        id="class-count-that-wraps-negative",
    ),
    pytest.param(
        VALID,
        wide("coco_gt", lambda v: v[:, 1:].fill(0)),
        "array 'pred_coco' holds more true positives of a class in an area range than its "
        "ground truth there",
        id="coco-gt-of-no-small-medium-or-large-object",
    ),
    pytest.param(
        VALID_V4,
        wide("coco_gt", lambda v: v.fill(1), VALID_V4),
        "array 'pred_coco' holds more true positives of a class in an area range than its "
        "ground truth there",
        id="coco-gt-below-its-true-positives",
    ),
    pytest.param(
        VALID_V4,
        {
            "class_counts": np.array(VALID_V4.arrays["class_counts"])
            * np.uint8([[0], [1], [1], [1]])
        },
        "array 'pred_matched' holds more true positives of a class than its ground truth",
        id="class-of-no-ground-truth-with-true-positives",
    ),
    pytest.param(
        VALID_V4,
        wide("class_counts", lambda v: v[:, 3].__iadd__(np.uint64(1)), VALID_V4),
        "array 'class_counts' does not add up (true positives beyond the ground truth, or "
        "counts that disagree)",
        id="class-counts-that-do-not-add-up",
    ),
    pytest.param(
        VALID_V4,
        wide("image_values", lambda v: v[:, 3].__iadd__(v[:, 0] + np.uint64(1)), VALID_V4),
        "array 'image_values' does not add up (true positives beyond the ground truth, or "
        "counts that disagree)",
        id="image-true-positives-beyond-its-ground-truth",
    ),
    pytest.param(
        VALID,
        wide("image_values", lambda v: v[:, 9].__iadd__(np.uint64(1))),
        "array 'image_values' does not add up (true positives beyond the ground truth, or "
        "counts that disagree)",
        id="image-sweep-counts-that-do-not-add-up",
    ),
    pytest.param(
        VALID,
        wide("pred_matched", lambda v: v.fill(1)),
        "array 'pred_matched' holds more true positives of a class than its ground truth",
        id="every-prediction-matched",
    ),
]


@pytest.mark.parametrize(("raw", "changed", "message"), REFUSED)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_crafted_array_is_refused_by_either_engine(
    raw: RawState, changed: Arrays, message: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = outcome(state_bytes(raw, changed), engine, monkeypatch)
    assert isinstance(found, StateError)
    assert str(found) == f"s.vms: {message}"


@pytest.mark.parametrize(("raw", "changed", "message"), REFUSED)
@pytest.mark.parametrize("engine", ENGINES)
def test_merge_refuses_a_crafted_state_in_one_line(
    raw: RawState, changed: Arrays, message: str, engine: str, tmp_path: Path
) -> None:
    state = tmp_path / "s.vms"
    state.write_bytes(state_bytes(raw, changed))
    code, out, err = run_cli("merge", str(state), env={PURE_ENGINE_VARIABLE: engine})
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"vocmatch: error: {state}: {message}\n"
    with pytest.raises(StateError) as caught:
        read_states([state], partial=True)
    assert str(caught.value) == f"{state}: {message}"


def test_the_valid_states_give_the_same_numbers_by_either_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for raw in (VALID, VALID_V4):
        assert isinstance(assert_engines_agree(state_bytes(raw, {}), monkeypatch), Evaluation)


#: Values a hostile file may put in an unsigned array (as uint64) or a float one.
UNSIGNED = [0, 1, 2, 3, 4, 7, 8, 15, 16, 255, 256, 2**31 - 1, 2**31, 2**32, 2**32 + 1,
            2**48, 2**63 - 1, 2**63, 2**64 - 1]  # fmt: skip
FLOATS = [0.0, -0.0, 0.5, 1.0, -1.0, 2.0, 1e300, -1e300, float("nan"), float("inf"),
          float("-inf"), 5e-324]  # fmt: skip


@st.composite
def mutations(draw: st.DrawFn, raw: RawState) -> Arrays:
    """One to three arrays of ``raw``, each with a few values replaced (unsigned ones
    widened to uint64 when a value needs it), or cut short, or grown by a copy of its rows."""
    names = sorted(raw.arrays)
    changed: Arrays = {}
    for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)):
        values = np.array(raw.arrays[name])
        flat = values.reshape(-1) if values.size else values
        how = draw(st.sampled_from(["set", "set", "set", "cut", "grow"]))
        if how == "cut" and values.ndim and values.shape[0]:
            changed[name] = values[: draw(st.integers(0, values.shape[0] - 1))]
            continue
        if how == "grow" and values.ndim and values.shape[0]:
            changed[name] = np.concatenate([values, values[:1]])
            continue
        if not flat.size:
            continue
        if values.dtype.kind == "f":
            pool: list[Any] = FLOATS
        else:
            pool = [*UNSIGNED, *map(int, np.unique(flat)[:8])]
            values = values.astype(np.uint64)
            flat = values.reshape(-1)
        for _ in range(draw(st.integers(1, 3))):
            flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from(pool))
        changed[name] = values
    return changed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_states_are_refused_alike_or_give_the_same_numbers(data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from([VALID, VALID_V4]))
    changed = data.draw(mutations(raw))
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_engines_agree(state_bytes(raw, changed), monkeypatch)


def merged(paths: list[Path], engine: str) -> Evaluation | StateError:
    """The evaluation of the states merged as ``vocmatch merge`` reads them, or the
    StateError refusing them."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv(PURE_ENGINE_VARIABLE, engine)
        try:
            return read_states(paths, partial=True).evaluation
        except StateError as error:
            return error


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_state_merged_with_a_valid_one_is_refused_alike(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("states")
    gt, pred = random_dataset(4, images=3)
    other = fed([(f"other-{key}", *rest) for key, *rest in arrays_of(gt, pred)], "coco")
    paths = [folder / "a.vms", folder / "b.vms"]
    paths[0].write_bytes(state_bytes(VALID, data.draw(mutations(VALID))))
    other.save(paths[1])
    compiled, numpy = (merged(paths, engine) for engine in ("", "1"))
    if isinstance(compiled, StateError) or isinstance(numpy, StateError):
        assert str(compiled) == str(numpy)
        assert "\n" not in str(compiled)
    else:
        assert_identical(compiled, numpy)
        assert_fractions(compiled)
        assert_fractions(compiled)

"""The compiled COCO accumulation of many predictions shares its classes between two threads
(:class:`~vocmatch.evaluation.coco_tables.CocoTables`): the same tables to the bit as one
call over every class, and an error of either thread raised once, in the caller's."""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

import vocmatch.evaluation.coco_tables as coco_tables
import vocmatch.readers.workers as workers
from tests.evaluation.test_fastaccumulate import flag_sets
from vocmatch.compiled import kernels
from vocmatch.evaluation.coco_tables import CocoTables


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = kernels("vocmatch.evaluation.fastaccumulate")
    if module is None:
        pytest.skip("the compiled accumulation is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def _tables(kernel: ModuleType, case: dict[str, Any], threaded: int) -> CocoTables:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coco_tables, "THREADED_PREDICTIONS", threaded)
        patch.setattr(workers, "available_cores", lambda: 2)
        return CocoTables.of(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"])


@settings(max_examples=300, deadline=None)
@given(flag_sets())
def test_two_threads_give_one_call_s_tables_bit_for_bit(
    kernel: ModuleType, case: dict[str, Any]
) -> None:
    whole = _tables(kernel, case, 10**12)
    shared = _tables(kernel, case, 0)
    assert shared.precision.tobytes() == whole.precision.tobytes()
    assert shared.recall.tobytes() == whole.recall.tobytes()


def _case(sizes: list[int], n_t: int = 2) -> dict[str, Any]:
    """Classes of ``sizes`` predictions, each matched at the first threshold, in the one
    area range."""
    n_pred = sum(sizes)
    starts = np.cumsum([0, *sizes])
    return {
        "rankings": [
            (np.arange(low, high, dtype=np.int64), np.zeros(high - low, np.int64))
            for low, high in zip(starts[:-1], starts[1:], strict=True)
        ],
        "flags": (np.ones(n_pred, np.uint8), np.ones((n_pred, 1), np.uint8),
                  np.zeros((n_pred, 1), np.uint8)),  # fmt: skip
        "n_gt": np.full((len(sizes), 1), 5, np.int64),
        "n_t": n_t,
    }


@pytest.mark.parametrize(
    ("sizes", "threaded", "cores", "threads"),
    [
        pytest.param([3, 4, 5], 10, 2, 1, id="two-cores-many-predictions"),
        pytest.param([3, 4, 5], 13, 2, 0, id="few-predictions"),
        pytest.param([3, 4, 5], 10, 1, 0, id="one-core"),
        pytest.param([12], 10, 2, 0, id="one-class"),
        pytest.param([], 0, 2, 0, id="no-class"),
    ],
)
def test_a_thread_only_for_many_predictions_on_two_cores(
    kernel: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    sizes: list[int],
    threaded: int,
    cores: int,
    threads: int,
) -> None:
    started: list[str] = []
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    monkeypatch.setattr(coco_tables, "THREADED_PREDICTIONS", threaded)
    monkeypatch.setattr(workers, "available_cores", lambda: cores)
    case = _case(sizes)
    tables = CocoTables.of(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"])
    assert started == ["vocmatch-coco-tables"] * threads
    whole = _tables(kernel, case, 10**12)
    assert tables.precision.tobytes() == whole.precision.tobytes()
    assert tables.recall.tobytes() == whole.recall.tobytes()


@pytest.mark.parametrize("half", ["first", "second"])
def test_an_error_in_either_half_is_raised_once_in_the_caller(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, half: str
) -> None:
    """A row out of range in either half: the kernel's ValueError, raised here after both
    halves have ended (no thread left running)."""
    monkeypatch.setattr(coco_tables, "THREADED_PREDICTIONS", 0)
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    case = _case([4, 4, 4, 4])
    rankings = list(case["rankings"])
    k = 0 if half == "first" else 3
    rankings[k] = (np.array([0, 1, 2, 99], np.int64), rankings[k][1])
    before = threading.active_count()
    with pytest.raises(ValueError, match="rows: out of range"):
        CocoTables.of(kernel, rankings, case["flags"], case["n_gt"], case["n_t"])
    assert threading.active_count() == before

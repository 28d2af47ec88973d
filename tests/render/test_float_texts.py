"""A JSON report's float lists formatted ahead by two threads
(:mod:`vocmatch.render.float_texts`): each list's text the compiled writer's, written where
the list is, the bytes of one thread's writing; fewer numbers, or one core, one thread."""

from __future__ import annotations

import json
import math
import threading
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import vocmatch.readers.workers as workers
from vocmatch.compiled import kernels
from vocmatch.render.json_report import FASTJSON, FloatArray, dumps_indented


@pytest.fixture
def fast() -> ModuleType:
    module = kernels(FASTJSON)
    if module is None:
        pytest.skip("the compiled JSON writer is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


@pytest.fixture
def threads(fast: ModuleType, monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """The threads that called the compiled writer's float_list."""
    seen: set[int] = set()
    float_list = fast.float_list

    def spy(values: Any) -> bytes:
        seen.add(threading.get_ident())
        result: bytes = float_list(values)
        return result

    monkeypatch.setattr(fast, "float_list", spy)
    return seen


def _report(seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """A report-like mapping of curves (plain numbers, subnormals, zeros of both signs),
    with FloatArray objects and with the lists themselves."""
    rng = np.random.default_rng(seed)
    classes, lists = [], []
    for k in range(40):
        values = rng.random(int(rng.integers(0, 500)))
        if k % 7 == 3:
            values = np.append(values, [5e-324, -0.0, 0.0, 2.2250738585072014e-308])
        curve = {"recall": values, "precision": values[::-1].copy()}
        classes.append({"name": f"c{k}", "curve": {n: FloatArray(v) for n, v in curve.items()}})
        lists.append({"name": f"c{k}", "curve": {n: v.tolist() for n, v in curve.items()}})
    return {"classes": classes, "ap": 0.5}, {"classes": lists, "ap": 0.5}


def test_the_later_lists_are_formatted_by_a_second_thread(
    threads: set[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    monkeypatch.setattr("vocmatch.render.float_texts.THREADED_VALUES", 1000)
    arrays, lists = _report()
    text = dumps_indented(arrays)
    assert len(threads) == 2
    assert json.loads(text) == lists
    monkeypatch.setattr("vocmatch.render.float_texts.THREADED_VALUES", math.inf)
    threads.clear()
    assert dumps_indented(_report()[0]) == text
    assert threads == {threading.get_ident()}


@pytest.mark.parametrize(
    ("cores", "threshold"),
    [pytest.param(1, 1000, id="one-core"), pytest.param(2, 10**9, id="few-numbers")],
)
def test_one_thread_where_a_second_would_not_help(
    threads: set[int], monkeypatch: pytest.MonkeyPatch, cores: int, threshold: int
) -> None:
    monkeypatch.setattr(workers, "available_cores", lambda: cores)
    monkeypatch.setattr("vocmatch.render.float_texts.THREADED_VALUES", threshold)
    dumps_indented(_report()[0])
    assert threads == {threading.get_ident()}


def test_a_list_the_writer_refuses_is_refused_where_it_is_written(
    fast: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value that is not finite (no FloatArray holds one): the writer's own error."""
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    monkeypatch.setattr("vocmatch.render.float_texts.THREADED_VALUES", 1)
    data = {"a": FloatArray(np.ones(10)), "b": FloatArray(np.array([1.0, math.nan]))}
    with pytest.raises(ValueError, match="not finite"):
        dumps_indented(data)

"""The compiled writer of JSON float lists (vocmatch.render.fastjson) gives ``json.dumps``'
text of the list, float.__repr__'s shortest digits for every finite double, and whole JSON
reports are the same bytes with and without it."""

from __future__ import annotations

import json
import math
import struct
import sys
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from vocmatch.compiled import PURE_ENGINE_VARIABLE, kernels
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.scoring import evaluate, evaluate_directories
from vocmatch.readers.parse import AnnotationSet
from vocmatch.render.fastjson_table import table_text
from vocmatch.render.json_report import FASTJSON, FloatList, NumberList, dumps_indented, to_json


@pytest.fixture
def fast() -> ModuleType:
    module = kernels(FASTJSON)
    if module is None:
        pytest.skip("the compiled JSON writer is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def _from_bits(bits: int) -> float:
    value: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return value


def _near(x: float) -> list[float]:
    """x and the doubles either side of it."""
    return [math.nextafter(x, -math.inf), x, math.nextafter(x, math.inf)]


EDGES = [
    pytest.param([0.0], id="zero"),
    pytest.param([-0.0], id="negative-zero"),
    pytest.param([5e-324, -5e-324, 1e-323, 1.5e-323], id="smallest-subnormals"),
    pytest.param(_near(2.2250738585072014e-308), id="smallest-normal"),
    pytest.param([sys.float_info.max, -sys.float_info.max], id="largest"),
    pytest.param([2.0**e for e in range(-1074, 1024)], id="powers-of-two"),
    pytest.param([10.0**e for e in range(-323, 309)], id="powers-of-ten"),
    pytest.param([*_near(1e16), *_near(1e15), 9999999999999998.0], id="1e16-boundary"),
    pytest.param([*_near(1e-4), *_near(1e-5), 9.999999999999999e-05], id="1e-4-boundary"),
    pytest.param([0.1, 0.2, 0.3, 0.1 + 0.2, 1 / 3, 2 / 3], id="tenths-and-thirds"),
    pytest.param([k / n for n in range(1, 200) for k in range(n + 1)], id="k-over-n"),
    pytest.param([float(i) for i in range(-1000, 10_000)], id="small-integers"),
    pytest.param(
        [float(2**53 + d) for d in range(-3, 3)] + [float(2**e) for e in range(50, 70)],
        id="integers-near-2**53",
    ),
    pytest.param([1e22, 1e23, 5e-324 * 3, 123456789012345678.0, 0.5, -1.5], id="assorted"),
    pytest.param([], id="empty"),
]


@pytest.mark.parametrize("values", EDGES)
def test_edge_values_are_json_dumps_text(fast: ModuleType, values: list[float]) -> None:
    """Zeros, subnormals, extremes, powers, layout boundaries and ratios: json.dumps' text."""
    assert fast.float_list(np.array(values, dtype=np.float64)) == json.dumps(values).encode()


@settings(max_examples=2000)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=20))
def test_any_finite_bit_pattern_is_json_dumps_text(bits: list[int]) -> None:
    """Any finite double, by its bit pattern: json.dumps' text (float.__repr__'s digits)."""
    module = kernels(FASTJSON)
    if module is None:
        pytest.skip("the compiled JSON writer is not built")
    values = [v for v in map(_from_bits, bits) if math.isfinite(v)]
    assert module.float_list(np.array(values, dtype=np.float64)) == json.dumps(values).encode()


def test_a_million_random_doubles_are_json_dumps_text(fast: ModuleType) -> None:
    """A million random bit patterns and a million random ratios in [0, 1]."""
    rng = np.random.default_rng(20261128)
    bits = rng.integers(0, 2**64, 1_000_000, dtype=np.uint64, endpoint=False).view(np.float64)
    for values in (bits[np.isfinite(bits)], rng.random(1_000_000)):
        assert fast.float_list(values) == json.dumps(values.tolist()).encode()


@pytest.mark.parametrize(
    "values, error",
    [
        pytest.param(np.array([1.0, math.nan]), ValueError, id="nan"),
        pytest.param(np.array([math.inf]), ValueError, id="inf"),
        pytest.param(np.array([1, 2]), TypeError, id="integers"),
        pytest.param(np.array([1.0], dtype=np.float32), TypeError, id="float32"),
        pytest.param(np.zeros(4)[::2], ValueError, id="strided"),
    ],
)
def test_what_json_dumps_refuses_or_is_no_float64_array_is_refused(
    fast: ModuleType, values: np.ndarray, error: type[Exception]
) -> None:
    """A non-finite value (json.dumps refuses it too), another type or a strided view."""
    with pytest.raises(error):
        fast.float_list(values)


def test_the_power_table_is_up_to_date() -> None:
    """fastjson_table.h is what fastjson_table.py writes."""
    header = ROOT / "vocmatch" / "render" / "fastjson_table.h"
    assert header.read_text(encoding="ascii") == table_text()


def test_float_lists_are_written_alike_with_and_without_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A FloatList is the text of its list either way."""
    data = {"a": FloatList(np.array([0.1, 1 / 3, 1e16, -0.0])), "b": NumberList([None, 1.5])}
    compiled = dumps_indented(data)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert dumps_indented(data) == compiled
    assert compiled == '{\n  "a": [0.1, 0.3333333333333333, 1e+16, -0.0],\n  "b": [null, 1.5]\n}\n'


@pytest.mark.parametrize("name", ["default", "coco", "voc07", "voc12"])
def test_json_reports_are_the_same_bytes_with_and_without_the_kernel(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo set's JSON under each protocol: the same text as the Python encoder's."""
    monkeypatch.chdir(ROOT)
    evaluation = evaluate_directories("fixtures/demo/gt", "fixtures/demo/pred", protocol(name))
    compiled = to_json(evaluation)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert to_json(evaluation) == compiled


def test_curves_with_nulls_are_the_same_bytes_with_and_without_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A class without ground truth (null recall) and an unscored prediction (null score)
    stay on the Python path, with the same text."""
    gt = AnnotationSet("gt", (ImageAnnotation("a", "gt/a.xml", (Box("car", 0, 0, 9, 9),)),), ())
    pred = AnnotationSet(
        "pred",
        (
            ImageAnnotation(
                "a",
                "pred/a.xml",
                (
                    Box("car", 0, 0, 9, 9, score=0.7),
                    Box("car", 1, 1, 9, 9),
                    Box("bus", 0, 0, 9, 9, score=0.3),
                ),
            ),
        ),
        (),
    )
    evaluation = evaluate(gt, pred)
    compiled = to_json(evaluation)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert to_json(evaluation) == compiled
    assert "null" in compiled

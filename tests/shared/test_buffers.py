"""vocmatch/buffers.h: every compiled kernel takes its arrays the one way and refuses another
element type, a strided view or a read-only output with the one message naming the argument."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from vocmatch.compiled import kernels
from vocmatch.evaluation.summary_kernels import interpolation_points

# The element kinds of vocmatch/buffers.h an argument asks for.
INTEGER, INTEGER_8, INDEX, INT64, FLOAT32, FLOAT64, BYTE = (
    "integer", "integer-8", "index", "int64", "float32", "float64", "byte",
)  # fmt: skip

# The element types each kind takes (every other one is refused).
TAKES: dict[str, set[type[np.generic]]] = {
    INTEGER: {np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64},
    INTEGER_8: {np.int64, np.uint64},
    INDEX: {np.int32, np.int64},
    INT64: {np.int64},
    FLOAT32: {np.float32},
    FLOAT64: {np.float64},
    BYTE: {np.bool_, np.int8, np.uint8},
}
DTYPES = [
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64,
]  # fmt: skip


@dataclass(frozen=True)
class Site:
    """One argument of one kernel: where it goes among valid arguments and what it wants."""

    module: str
    function: str
    arguments: Callable[[], list[Any]]
    place: int
    name: str
    kind: str
    writable: bool
    type_error: type[Exception] = ValueError


def _set_bits() -> list[Any]:
    return [np.zeros(3, np.uint8), np.array([0, 1, 2]), np.array([0, 1, 2])]


def _score_cell_order() -> list[Any]:
    return [
        np.array([0.5, 0.9, 0.1]), np.array([0, 1, 0]),
        np.zeros(3, np.int64), np.zeros(3, np.int64),
    ]  # fmt: skip


def _ranked_pass() -> list[Any]:
    return [
        np.array([0, 1]), np.array([0, 1]), np.array([0.9, 0.8]), None,
        np.zeros(2, dtype=bool), np.zeros(2, dtype=bool), np.array([0.5, 0.75]), False, False,
        np.zeros((2, 2), dtype=bool), None,
    ]  # fmt: skip


def _coco_accumulate() -> list[Any]:
    return [
        np.arange(3, dtype=np.int64), np.zeros(3, np.int64), np.array([0, 3], np.int64),
        np.array([[3]], np.int64), np.linspace(0.0, 1.0, 101), np.array([1, 10, 100], np.int64),
        np.ones(3, np.uint8), np.ones((3, 1), np.uint8), np.zeros((3, 1), np.uint8), 1, 1,
        float(np.spacing(1)), np.zeros((1, 1, 1, 101, 3)), np.zeros((1, 1, 1, 3)),
    ]  # fmt: skip


def _ultralytics_classes() -> list[Any]:
    return [
        np.array([0, 1], np.int64), np.array([0, 0], np.int32), np.array([1, 0], np.uint8),
        np.array([0, 0], np.uint8), np.array([0.9, 0.8], np.float32), np.array([0], np.int64),
        np.array([1], np.int64), np.array([0], np.int64), 3,
        interpolation_points("101-point-trapezoid"), np.linspace(0, 1, 1000), np.zeros((1, 1)),
        np.zeros((1, 1000)), np.zeros((1, 1000)), np.zeros(1), np.zeros(1),
    ]  # fmt: skip


def _float_list() -> list[Any]:
    return [np.array([0.5, 1.5])]


FASTMATCH = "vocmatch.core.fastmatch"
FASTACCUMULATE = "vocmatch.evaluation.fastaccumulate"
FASTSUMMARY = "vocmatch.evaluation.fastsummary"
FASTJSON = "vocmatch.render.fastjson"

SITES = [
    Site(FASTMATCH, "set_bits", _set_bits, 0, "flags", INTEGER, True),
    Site(FASTMATCH, "set_bits", _set_bits, 1, "pred", INDEX, False),
    Site(FASTMATCH, "score_cell_order", _score_cell_order, 0, "score", FLOAT64, False),
    Site(FASTMATCH, "score_cell_order", _score_cell_order, 3, "order", INT64, True),
    Site(FASTMATCH, "ranked_pass", _ranked_pass, 4, "ignore", BYTE, False),
    Site(FASTMATCH, "ranked_pass", _ranked_pass, 9, "taken", BYTE, True),
    Site(FASTACCUMULATE, "coco_accumulate", _coco_accumulate, 0, "rows", INTEGER_8, False),
    Site(FASTACCUMULATE, "coco_accumulate", _coco_accumulate, 4, "levels", FLOAT64, False),
    Site(FASTACCUMULATE, "coco_accumulate", _coco_accumulate, 6, "area", INTEGER, False),
    Site(FASTACCUMULATE, "coco_accumulate", _coco_accumulate, 12, "precision", FLOAT64, True),
    Site(FASTSUMMARY, "ultralytics_classes", _ultralytics_classes, 0, "order", INT64, False),
    Site(FASTSUMMARY, "ultralytics_classes", _ultralytics_classes, 1, "label", INTEGER, False),
    Site(FASTSUMMARY, "ultralytics_classes", _ultralytics_classes, 4, "conf", FLOAT32, False),
    Site(FASTSUMMARY, "ultralytics_classes", _ultralytics_classes, 12, "p_curve", FLOAT64, True),
    Site(FASTJSON, "float_list", _float_list, 0, "values", FLOAT64, False, TypeError),
]


def _strided(array: np.ndarray) -> np.ndarray:
    wide = np.zeros((*array.shape, 2), array.dtype)
    wide[..., 0] = array
    return wide[..., 0]


def _read_only(array: np.ndarray) -> np.ndarray:
    copy = array.copy()
    copy.flags.writeable = False
    return copy


def _cases() -> list[Any]:
    cases = []
    for site in SITES:
        site_id = f"{site.function}-{site.name}"
        for dtype in DTYPES:
            taken = dtype in TAKES[site.kind]
            error = None if taken else site.type_error
            cases.append(pytest.param(site, _as(dtype), error, id=f"{site_id}-{dtype.__name__}"))
        cases.append(pytest.param(site, _strided, ValueError, id=f"{site_id}-strided"))
        if site.writable:
            cases.append(pytest.param(site, _read_only, ValueError, id=f"{site_id}-read-only"))
    return cases


def _as(dtype: type[np.generic]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda array: array.astype(dtype)


@pytest.mark.parametrize(("site", "change", "error"), _cases())
def test_each_kernel_refuses_another_array_with_the_one_message(
    site: Site, change: Callable[[np.ndarray], np.ndarray], error: type[Exception] | None
) -> None:
    """Each element type the argument's kind takes is taken; another is refused with its
    format and size; a strided view or a read-only output with the array's format and size,
    then what is wrong with its layout."""
    module: ModuleType | None = kernels(site.module)
    if module is None:
        pytest.skip(f"{site.module} is not built (or VOCMATCH_PURE_ENGINE is set)")
    function = getattr(module, site.function)
    function(*site.arguments())  # the valid arguments are taken
    arguments = site.arguments()
    changed = arguments[site.place] = change(arguments[site.place])
    if error is None:
        function(*arguments)
        return
    layout = (
        ", not C-contiguous" if not changed.flags.c_contiguous
        else ", read-only" if not changed.flags.writeable
        else ""
    )  # fmt: skip
    view = memoryview(np.zeros(1, changed.dtype))
    message = (
        f"{site.name}: unexpected array type '{view.format}' (itemsize {view.itemsize}{layout})"
    )
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        function(*arguments)

"""The compiled curves and AP of the devkit and ultralytics summaries
(vocmatch/evaluation/fastsummary.c) give the numpy implementation's numbers to the bit: AP of
one curve under every interpolation, each image's detections in descending confidence, the
ultralytics summary's classes on random match flags, and whole evaluations with and without
``VOCMATCH_PURE_ENGINE``."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import replace
from types import ModuleType, SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.evaluation.test_fastaccumulate import assert_same_bits, both_engines
from tests.oracle import random_dataset, without_scores
from vocmatch.compiled import PURE_ENGINE_VARIABLE, active_engine, kernels
from vocmatch.core.ap import average_precision, precision_recall_curve
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.summary_kernels import (
    INTERPOLATION_CODES,
    MODULE,
    class_ap,
    interpolation_points,
)
from vocmatch.evaluation.ultralytics_summary import (
    ClassCurves,
    numpy_class_curves,
    ultralytics_summary,
)

INTERPOLATIONS = sorted(INTERPOLATION_CODES)


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = kernels(MODULE)
    if module is None:
        pytest.skip("the compiled summaries are not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def bits(values: Any) -> bytes:
    return np.asarray(values, dtype=np.float64).tobytes()


def test_the_compiled_summaries_are_built_where_a_compiler_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Installed where a C compiler works, the package has them; VOCMATCH_PURE_ENGINE=1
    leaves them to numpy."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "0")
    assert active_engine(MODULE) == "compiled"
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert active_engine(MODULE) == "numpy"


# --- AP of one curve -------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(
    hits=st.lists(st.booleans(), max_size=300),
    extra_gt=st.integers(0, 5),
    no_gt=st.booleans(),
    eps=st.sampled_from([None, float(np.spacing(1))]),
)
def test_class_ap_is_numpy_ap_bit_for_bit(
    kernel: ModuleType, hits: list[bool], extra_gt: int, no_gt: bool, eps: float | None
) -> None:
    """Curves as the devkit and pycocotools make them: every interpolation, a class without
    ground truth (recall NaN throughout), one prediction, none."""
    n_gt = 0 if no_gt else sum(hits) + extra_gt
    curve = precision_recall_curve(hits, np.zeros(len(hits)), n_gt, eps=eps)
    for interpolation in INTERPOLATIONS:
        expected = average_precision(curve.recall, curve.precision, interpolation)
        got = class_ap(kernel, curve.recall, curve.precision, interpolation)
        assert bits(got) == bits(expected), interpolation


@st.composite
def odd_curves(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Non-decreasing recall with runs of equal values, 0 and 1 among them, and any precision
    in [0, 1] or NaN: equal x in np.interp, flat and steep steps, a recall past the trapezoid's
    last point, steps so narrow that their slope overflows."""
    n = draw(st.integers(1, 60))
    values = st.sampled_from([0.0, 0.25, 1 / 3, 0.5, 0.999, 1.0, 1e-300, 5e-324])
    unit = st.floats(0.0, 1.0)
    recall = np.sort(np.array(draw(st.lists(st.one_of(values, unit), min_size=n, max_size=n))))
    with_nan = st.one_of(values, unit, st.just(np.nan))
    precision = np.array(draw(st.lists(with_nan, min_size=n, max_size=n)))
    return recall, precision


@settings(max_examples=400, deadline=None)
@given(odd_curves())
def test_class_ap_on_odd_curves(kernel: ModuleType, curve: tuple[np.ndarray, np.ndarray]) -> None:
    recall, precision = curve
    for interpolation in INTERPOLATIONS:
        expected = average_precision(recall, precision, interpolation)
        got = class_ap(kernel, recall, precision, interpolation)
        assert bits(got) == bits(expected), interpolation


def test_class_ap_without_the_kernel_is_numpy() -> None:
    assert class_ap(None, np.array([0.5, 1.0]), np.array([1.0, 0.5]), "all-point") == 0.75


# --- each image's detections in descending confidence ----------------------------------


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(0, 40), max_size=8),
    data=st.data(),
)
def test_image_order_is_lexsort(kernel: ModuleType, counts: list[int], data: st.DataObject) -> None:
    """Ties, 0.0 and -0.0, infinities and NaN among the confidences: the order of
    np.lexsort((-conf, image))."""
    n = sum(counts)
    pool = st.sampled_from([0.5, 0.25, 0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 0.7])
    conf = np.array(
        data.draw(st.lists(st.one_of(pool, st.floats(width=32)), min_size=n, max_size=n)),
        dtype=np.float32,
    )
    count = np.array(counts, dtype=np.int64)
    within = np.empty(n, dtype=np.int64)
    kernel.image_order(count, conf, within)
    image = np.repeat(np.arange(count.size), count)
    assert within.tolist() == np.lexsort((-conf, image)).tolist()


# --- the ultralytics summary's classes -------------------------------------------------

FLAG_TYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int64]


@st.composite
def summary_cases(draw: st.DrawFn) -> dict[str, Any]:
    """Random match records: ties in confidence, predictions without a score, classes without
    predictions or without ground truth, matches at some thresholds only, ignored matches,
    one prediction, none."""
    n_classes = draw(st.integers(1, 5))
    counts = draw(st.lists(st.integers(0, 30), min_size=1, max_size=6))
    n = sum(counts)
    flag_type = draw(st.sampled_from(FLAG_TYPES))
    width = 8 * np.dtype(flag_type).itemsize
    n_t = draw(st.integers(1, min(10, width)))
    levels = sorted(draw(st.lists(st.integers(0, width - 1), min_size=n_t, max_size=n_t)))
    # an infinite confidence too: np.interp's NaN retry
    pool = [0.9, 0.5, 0.5000001, 0.1, np.nan, 0.0, np.inf]
    scores = st.one_of(st.sampled_from(pool), st.floats(0, 1))
    score_type = draw(st.sampled_from([np.float64, np.float32]))
    flags = st.integers(0, 2 ** min(width, 63) - 1)
    # a flag in a share of the records, so that some are true positives at each level
    matched = np.array(draw(st.lists(flags, min_size=n, max_size=n)), dtype=flag_type)
    ignored = np.array(draw(st.lists(flags, min_size=n, max_size=n)), dtype=flag_type)
    ignored &= np.array(draw(st.lists(flags, min_size=n, max_size=n)), dtype=flag_type)
    preds = SimpleNamespace(
        count=np.array(counts, dtype=np.int64),
        label=np.array(
            draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)), dtype=np.int32
        ),
        score=np.array(draw(st.lists(scores, min_size=n, max_size=n)), dtype=score_type),
        matched=matched,
        ignored=ignored,
    )
    if draw(st.booleans()):
        # views of every other element, as records sliced out of larger ones may be
        for field in ("label", "score", "matched", "ignored"):
            setattr(preds, field, np.repeat(getattr(preds, field), 2)[::2])
    n_class_gt = draw(st.lists(st.integers(0, 40), min_size=n_classes, max_size=n_classes))
    return {
        "records": cast(MatchRecords, SimpleNamespace(preds=preds)),
        "levels": levels,
        "n_class_gt": n_class_gt,
        "operating_point": draw(st.sampled_from(["max-f1", "all"])),
        "interpolation": draw(st.sampled_from(INTERPOLATIONS)),
    }


def summary_both_ways(monkeypatch: pytest.MonkeyPatch, case: dict[str, Any]) -> tuple[Any, Any]:
    with monkeypatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "1")
        reference = ultralytics_summary(**case)
    with monkeypatch.context() as patch:
        patch.delenv(PURE_ENGINE_VARIABLE, raising=False)
        compiled = ultralytics_summary(**case)
    return reference, compiled


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(summary_cases())
def test_ultralytics_summary_is_the_same_bits_compiled(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, case: dict[str, Any]
) -> None:
    """Each class's AP values and the four numbers, at either operating point and under every
    interpolation."""
    reference, compiled = summary_both_ways(monkeypatch, case)
    assert_same_bits(reference, compiled, "summary")


@settings(max_examples=300, deadline=None)
@given(summary_cases())
def test_ultralytics_class_curves_are_the_same_bits_compiled(
    kernel: ModuleType, case: dict[str, Any]
) -> None:
    """Every row of the curves: AP per threshold, P and R on the confidence grid, P and R
    over all of a class's predictions."""
    preds = case["records"].preds
    n_class_gt, levels = case["n_class_gt"], case["levels"]
    interpolation = case["interpolation"]
    score = np.asarray(preds.score, dtype=np.float64)
    conf = np.where(np.isnan(score), -np.inf, score).astype(np.float32)
    within = np.lexsort((-conf, np.repeat(np.arange(preds.count.size), preds.count)))
    conf = conf[within]
    ranked = np.argsort(-conf)
    with_gt = [k for k in range(len(n_class_gt)) if n_class_gt[k] > 0]
    grid = np.linspace(0, 1, 1000)
    reference = ClassCurves.zeros(len(with_gt), len(levels))
    numpy_class_curves(
        preds, within, ranked, conf, levels, n_class_gt, with_gt, interpolation, grid, reference
    )
    compiled = ClassCurves.zeros(len(with_gt), len(levels))
    rows = np.full(len(n_class_gt), -1, dtype=np.int64)
    rows[with_gt] = np.arange(len(with_gt))
    flags = [np.ascontiguousarray(a) for a in (preds.label, preds.matched, preds.ignored)]
    kernel.ultralytics_classes(
        within[ranked], *flags, conf[ranked], np.array(levels, dtype=np.int64), np.array(n_class_gt, dtype=np.int64), rows,
        INTERPOLATION_CODES[interpolation], interpolation_points(interpolation), grid,
        compiled.ap, compiled.p_curve, compiled.r_curve, compiled.p_all, compiled.r_all,
    )  # fmt: skip
    assert_same_bits(reference, compiled, "curves")


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(1, 400), seed=st.integers(0, 2**32 - 1))
def test_mean_f1_is_numpy_bit_for_bit(kernel: ModuleType, rows: int, seed: int) -> None:
    """The class mean of the F1 curves, zeros and tiny values among P and R."""
    rng = np.random.default_rng(seed)
    p, r = (rng.random((rows, 1000)) * 10.0 ** rng.integers(-20, 1, (rows, 1000)) for _ in "pr")
    p[rng.random(p.shape) < 0.2] = 0.0
    r[rng.random(r.shape) < 0.2] = 0.0
    expected = (2 * p * r / (p + r + 1e-16)).mean(0)
    got = np.empty(1000)
    kernel.mean_f1(p, r, 1e-16, got)
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize(
    ("p_rows", "r_rows", "out", "message"),
    [
        pytest.param(0, 0, 1000, "R >= 1", id="no-rows"),
        pytest.param(2, 1, 1000, "not the shape of p_curve", id="r-rows"),
        pytest.param(1, 1, 999, "not (R, G)", id="grid"),
    ],
)
def test_mean_f1_refuses_arguments_it_would_read_past(
    kernel: ModuleType, p_rows: int, r_rows: int, out: int, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        kernel.mean_f1(np.zeros((p_rows, 1000)), np.zeros((r_rows, 1000)), 1e-16, np.zeros(out))


def summary_arguments() -> list[Any]:
    """Valid arguments: two predictions of class 0 (one object), the first a true positive."""
    return [
        np.array([0, 1], dtype=np.int64),  # order
        np.array([0, 0], dtype=np.int32),  # label
        np.array([1, 0], dtype=np.uint8),  # matched
        np.array([0, 0], dtype=np.uint8),  # ignored
        np.array([0.9, 0.8], dtype=np.float32),  # conf
        np.array([0], dtype=np.int64),  # levels
        np.array([1], dtype=np.int64),  # n_gt
        np.array([0], dtype=np.int64),  # rows
        3,
        interpolation_points("101-point-trapezoid"),
        np.linspace(0, 1, 1000),
        np.zeros((1, 1)),
        np.zeros((1, 1000)),
        np.zeros((1, 1000)),
        np.zeros(1),
        np.zeros(1),
    ]


def test_ultralytics_classes_on_valid_arguments(kernel: ModuleType) -> None:
    arguments = summary_arguments()
    kernel.ultralytics_classes(*arguments)
    assert arguments[14].tolist() == [0.5]  # precision over both
    assert arguments[15].tolist() == [1.0 / (1 + 1e-16)]  # recall over both


@pytest.mark.parametrize(
    ("place", "value", "message"),
    [
        pytest.param(0, np.array([0, 2], dtype=np.int64), "order: out of range", id="order"),
        pytest.param(0, np.array([0, 1], dtype=np.int32), "order: unexpected", id="order-type"),
        pytest.param(1, np.array([0, 1], dtype=np.int32), "label: out of range", id="label"),
        pytest.param(1, np.array([0, -1], dtype=np.int8), "label: out of range", id="label-neg"),
        pytest.param(2, np.array([1], dtype=np.uint8), "not as long as label", id="matched"),
        pytest.param(3, np.array([0, 0], dtype=np.uint16), "not the size", id="ignored"),
        pytest.param(4, np.array([0.9], dtype=np.float32), "conf: not as long", id="conf"),
        pytest.param(4, np.array([0.9, 0.8]), "conf: unexpected", id="conf-type"),
        pytest.param(5, np.array([8], dtype=np.int64), "past the flags' bits", id="levels"),
        pytest.param(5, np.array([], dtype=np.int64), "levels: empty", id="no-levels"),
        pytest.param(6, np.array([0], dtype=np.int64), "without ground truth", id="n-gt"),
        pytest.param(7, np.array([1], dtype=np.int64), "rows: out of range", id="rows"),
        pytest.param(8, 7, "not an interpolation", id="code"),
        pytest.param(9, np.zeros(0), "not the interpolation's", id="points"),
        pytest.param(11, np.zeros((1, 2)), "ap: not (R, T)", id="ap"),
        pytest.param(12, np.zeros((1, 999)), "not (R, G)", id="curve"),
        pytest.param(15, np.zeros(2), "r_all", id="r-all"),
    ],
)
def test_ultralytics_classes_refuses_arguments_it_would_read_past(
    kernel: ModuleType, place: int, value: Any, message: str
) -> None:
    arguments = summary_arguments()
    arguments[place] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        kernel.ultralytics_classes(*arguments)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            (np.array([1.0, 0.5]), np.array([1.0]), 0, np.zeros(0)), "not as long", id="length"
        ),
        pytest.param(
            (np.array([1.0]), np.array([1.0]), 1, np.zeros(3)), "not the interp", id="points"
        ),
        pytest.param(
            (np.array([1.0]), np.array([1.0]), 1, np.arange(11.0)[::-1].copy()),
            "not ascending",
            id="descending",
        ),
        pytest.param(
            (np.array([1], dtype=np.int64), np.array([1.0]), 0, np.zeros(0)),
            "recall: unexpected",
            id="type",
        ),
    ],
)
def test_curve_ap_refuses_arguments_it_would_read_past(
    kernel: ModuleType, arguments: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        kernel.curve_ap(*arguments)


@pytest.mark.parametrize(
    ("count", "within", "message"),
    [
        pytest.param([1, 2], 2, "count: not the records' counts", id="too-many"),
        pytest.param([1], 2, "count: not the records' counts", id="too-few"),
        pytest.param([-1, 3], 2, "count: not the records' counts", id="negative"),
        pytest.param([2], 3, "within: not as long", id="within"),
    ],
)
def test_image_order_refuses_arguments_it_would_read_past(
    kernel: ModuleType, count: list[int], within: int, message: str
) -> None:
    conf = np.array([0.5, 0.7], dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        kernel.image_order(np.array(count, dtype=np.int64), conf, np.empty(within, dtype=np.int64))


# --- whole evaluations -----------------------------------------------------------------

ULTRALYTICS = protocol("ultralytics")
VARIANTS: dict[str, Conventions] = {
    name: protocol(name)
    for name in (
        "ultralytics",
        "ultralytics-8.4.36",
        "ultralytics-8.4.175",
        "voc07",
        "voc12",
        "default",
    )
}
VARIANTS.update(
    {
        "ultralytics-all": replace(ULTRALYTICS, operating_point="all"),
        **{
            f"ultralytics-{i}": replace(ULTRALYTICS, interpolation=i)
            for i in ("all-point", "11-point", "101-point")
        },
        "ultralytics-strict": replace(ULTRALYTICS, strict_threshold=True),
        "voc07-strict": replace(protocol("voc07"), strict_threshold=True),
        "voc12-count-difficult": replace(protocol("voc12"), difficult="count"),
        "default-101-point": replace(protocol("default"), interpolation="101-point"),
    }
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(VARIANTS)),
    seed=st.integers(0, 10_000),
    images=st.integers(0, 12),
    unscored=st.sampled_from([0.0, 0.2, 1.0]),
    classes=st.sampled_from([("cat", "dog", "bird", "fish"), ("cat", "dog"), tuple("abcdefgh")]),
)
def test_evaluations_are_the_same_bits_with_and_without_the_summaries(
    kernel: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    seed: int,
    images: int,
    unscored: float,
    classes: tuple[str, ...],
) -> None:
    """Every class's AP, curve and counts and the summary's numbers under the devkit and
    ultralytics protocols: tied scores, difficult objects, predictions without a score, a
    class only among the predictions, classes without predictions, empty images."""
    gt, pred = random_dataset(seed, images=images, classes=classes)
    if unscored:
        pred = without_scores(pred, share=unscored, seed=seed)
    reference, compiled = both_engines(monkeypatch, gt, pred, VARIANTS[name], False)
    assert_same_bits(reference, compiled)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_summary_protocol_is_the_same_bits_with_and_without_the_kernels(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    gt, pred = random_dataset(11, images=40)
    reference, compiled = both_engines(monkeypatch, gt, pred, VARIANTS[name])
    assert_same_bits(reference, compiled)

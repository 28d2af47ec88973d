"""The compiled accumulation (vocmatch/evaluation/fastaccumulate.c) gives the numpy
implementation's numbers to the bit: its kernel on random match flags, and whole evaluations
under every protocol with and without ``VOCMATCH_PURE_ENGINE``."""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle import random_dataset, without_scores
from vocmatch.compiled import PURE_ENGINE_VARIABLE, active_engine, kernels
from vocmatch.core.protocol import PROTOCOL_NAMES, Conventions, protocol
from vocmatch.evaluation import from_records
from vocmatch.evaluation.accumulate import ClassBits
from vocmatch.evaluation.coco_tables import CocoTables
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.result import Evaluation, ImageResult
from vocmatch.readers.scan import columns_from_annotations


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = kernels("vocmatch.evaluation.fastaccumulate")
    if module is None:
        pytest.skip("the compiled accumulation is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def test_the_compiled_accumulation_is_built_where_a_compiler_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Installed where a C compiler works, the package has its compiled accumulation;
    VOCMATCH_PURE_ENGINE=1 leaves it to numpy, unset or 0 selects it."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    name = "vocmatch.evaluation.fastaccumulate"
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "0")
    assert active_engine(name) == "compiled"
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert active_engine(name) == "numpy"
    assert kernels(name) is None


def assert_same_bits(a: Any, b: Any, path: str = "evaluation") -> None:
    """Equal field by field, floats to the bit (NaN to NaN, -0.0 apart from 0.0)."""
    assert type(a) is type(b), path
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert a.tobytes() == b.tobytes(), path
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same_bits(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_bits(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


# --- the kernel on random flags --------------------------------------------------------

FLAG_TYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int64]


@st.composite
def flag_sets(draw: st.DrawFn) -> dict[str, Any]:
    """Random match flags of a few classes: ties in rank, empty classes, matches at some
    thresholds only, ignored matches, predictions outside each area range, area ranges
    without ground truth."""
    n_t = draw(st.integers(1, 10))
    n_a = draw(st.integers(1, 4))
    n_k = draw(st.integers(0, 4))
    dtype = draw(st.sampled_from(FLAG_TYPES))
    if np.iinfo(dtype).bits - (np.iinfo(dtype).min < 0) < n_t:
        dtype = np.uint16
    sizes = draw(st.lists(st.integers(0, 40), min_size=n_k, max_size=n_k))
    n_pred = sum(sizes) + draw(st.integers(0, 3))  # rows no class ranks
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    full = (1 << n_t) - 1
    # Dense or sparse matches, ignored ones among them.
    density = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    matched = np.where(
        rng.random((n_pred, n_a)) < density, rng.integers(0, full + 1, (n_pred, n_a)), 0
    )
    ignored = matched & np.where(rng.random((n_pred, n_a)) < 0.2, rng.integers(0, full + 1), 0)
    if draw(st.booleans()) and n_t < 8:
        # Bits past the thresholds' are not read.
        matched |= np.where(rng.random((n_pred, n_a)) < 0.5, 1 << n_t, 0)
    area = rng.integers(0, 1 << n_a, n_pred)
    rows = rng.permutation(n_pred)
    rankings = []
    low = 0
    for size in sizes:
        # Ranks with ties (several predictions of an image-class at the same rank are
        # impossible in a run, but any rank is allowed here) and ranks past every maxDets.
        rank = rng.choice([0, 0, 1, 2, 5, 9, 10, 50, 99, 100, 150], size)
        rankings.append((rows[low : low + size].astype(np.int64), rank.astype(np.int64)))
        low += size
    n_gt = rng.choice([0, 0, 1, 2, 3, 7, 40, 200], (n_k, n_a))
    return {
        "rankings": rankings,
        "flags": (area.astype(dtype), matched.astype(dtype), ignored.astype(dtype)),
        "n_gt": n_gt.astype(np.int64),
        "n_t": n_t,
    }


def numpy_tables(case: dict[str, Any]) -> list[tuple[int, int, Any, Any]]:
    """Each class and area range with ground truth, accumulated by numpy."""
    area, matched, ignored = case["flags"]
    out = []
    for k, (rows, rank) in enumerate(case["rankings"]):
        bits = ClassBits(
            np.zeros(rows.size), rank, np.zeros(rows.size, np.int64), np.zeros(rows.size, np.int64),
            area[rows], np.take(matched, rows, axis=0), np.take(ignored, rows, axis=0),
        )  # fmt: skip
        for a in range(matched.shape[1]):
            n_gt = int(case["n_gt"][k, a])
            if n_gt > 0:
                out.append((k, a, *bits.coco_area(a, n_gt, case["n_t"])))
    return out


@settings(max_examples=300, deadline=None)
@given(flag_sets())
def test_kernel_gives_the_numpy_accumulation_bit_for_bit(
    kernel: ModuleType, case: dict[str, Any]
) -> None:
    tables = CocoTables.of(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"])
    for k, a, precision, recall in numpy_tables(case):
        assert_same_bits(tables.precision[k, a], precision, f"precision[{k}, {a}]")
        assert_same_bits(tables.recall[k, a], recall, f"recall[{k}, {a}]")


def kernel_arguments(n_pred: int = 3) -> list[Any]:
    """Valid arguments: one class of ``n_pred`` predictions, one area range, one threshold."""
    return [
        np.arange(n_pred, dtype=np.int64), np.zeros(n_pred, np.int64),
        np.array([0, n_pred], np.int64), np.array([[n_pred]], np.int64),
        np.linspace(0.0, 1.0, 101), np.array([1, 10, 100], np.int64),
        np.ones(n_pred, np.uint8), np.ones((n_pred, 1), np.uint8),
        np.zeros((n_pred, 1), np.uint8), 1, 1, float(np.spacing(1)),
        np.zeros((1, 1, 1, 101, 3)), np.zeros((1, 1, 1, 3)),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("place", "value", "message"),
    [
        pytest.param(0, np.array([0, 1, 3], np.int64), "rows: out of range", id="row-past-end"),
        pytest.param(0, np.array([0, -1, 2], np.int64), "rows: out of range", id="row-negative"),
        pytest.param(0, np.arange(3, dtype=np.int32), "rows: unexpected", id="rows-int32"),
        pytest.param(1, np.zeros(2, np.int64), "rank: not as long", id="rank-short"),
        pytest.param(1, np.array([0, -1, 0], np.int64), "rank: negative", id="rank-negative"),
        # One more than a rank is the limit that keeps the prediction: it must not overflow.
        pytest.param(
            1, np.array([0, 2**63 - 1, 0], np.int64), "rank: 2\\*\\*63 - 1", id="rank-of-2**63-1"
        ),
        pytest.param(2, np.array([0, 2], np.int64), "starts: not 0 to", id="starts-short"),
        pytest.param(2, np.array([0, 4, 3], np.int64), "n_gt: not", id="starts-two-classes"),
        pytest.param(3, np.array([[2, 2]], np.int64), "n_gt: not", id="n-gt-wide"),
        pytest.param(
            4,
            np.linspace(0.0, 1.0, 101).astype(np.float32),
            "levels: unexpected",
            id="levels-float32",
        ),
        pytest.param(7, np.ones((2, 1), np.uint8), "matched, ignored: not", id="matched-short"),
        pytest.param(8, np.zeros((3, 1), np.uint16), "ignored: not the size", id="ignored-wide"),
        pytest.param(9, 9, "n_thresholds: more than", id="thresholds-past-bits"),
        pytest.param(10, 9, "n_areas: more than", id="areas-past-bits"),
        pytest.param(12, np.zeros((1, 1, 1, 100, 3)), "precision: not", id="precision-short"),
        pytest.param(13, np.zeros((1, 1, 2, 3)), "recall: not", id="recall-long"),
        pytest.param(
            12, np.zeros((1, 1, 1, 101, 3))[:, :, :, ::2], "contiguous", id="precision-strided"
        ),
    ],
)
def test_kernel_refuses_arguments_it_would_read_past(
    kernel: ModuleType, place: int, value: Any, message: str
) -> None:
    """Lengths, indices and element types are checked before anything is read."""
    arguments = kernel_arguments()
    arguments[place] = value
    with pytest.raises((ValueError, BufferError), match=message):
        kernel.coco_accumulate(*arguments)


def test_kernel_on_valid_arguments(kernel: ModuleType) -> None:
    """Three true positives of three objects at rank 0: recall 1 and precision 1 throughout
    at every limit (the arguments the refusals above start from)."""
    arguments = kernel_arguments()
    kernel.coco_accumulate(*arguments)
    assert arguments[13].tolist() == [[[[1.0, 1.0, 1.0]]]]
    assert np.all(arguments[12] == 1.0)


# --- whole evaluations -----------------------------------------------------------------

VARIANTS: dict[str, Conventions] = {
    **{name: protocol(name) for name in PROTOCOL_NAMES},
    "coco-strict": replace(protocol("coco"), strict_threshold=True),
    "coco-devkit-rule": replace(protocol("coco"), match_rule="devkit"),
    "coco-max-dets-2": replace(protocol("coco"), max_dets=2),
    "coco-all-point": replace(protocol("coco"), interpolation="all-point"),
    "coco-difficult-ignore": replace(protocol("coco"), difficult="ignore"),
    "voc12-strict": replace(protocol("voc12"), strict_threshold=True),
    "default-count-difficult": replace(protocol("default"), difficult="count"),
}


def both_engines(
    monkeypatch: pytest.MonkeyPatch,
    gt: Any,
    pred: Any,
    conventions: Conventions,
    keep_matches: bool = True,
) -> tuple[Evaluation, Evaluation]:
    gt_columns, pred_columns = columns_from_annotations(gt), columns_from_annotations(pred)
    with monkeypatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "1")
        reference = evaluate_columns(gt_columns, pred_columns, conventions, keep_matches)
    with monkeypatch.context() as patch:
        patch.delenv(PURE_ENGINE_VARIABLE, raising=False)
        compiled = evaluate_columns(gt_columns, pred_columns, conventions, keep_matches)
    return reference, compiled


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(VARIANTS)),
    seed=st.integers(0, 10_000),
    images=st.integers(0, 12),
    unscored=st.sampled_from([0.0, 0.2, 1.0]),
    classes=st.sampled_from([("cat", "dog", "bird", "fish"), ("cat", "dog"), tuple("abcdefgh")]),
    keep_matches=st.booleans(),
)
def test_evaluations_are_the_same_bits_with_and_without_the_kernels(
    kernel: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    seed: int,
    images: int,
    unscored: float,
    classes: tuple[str, ...],
    keep_matches: bool,
) -> None:
    """Every class's AP, curve and counts, the summary's numbers and each image's result,
    under every protocol: tied scores, crowd and difficult objects, predictions without a
    score, a class only among the predictions, classes without predictions, empty images
    and area ranges."""
    gt, pred = random_dataset(seed, images=images, classes=classes)
    if unscored:
        pred = without_scores(pred, share=unscored, seed=seed)
    reference, compiled = both_engines(monkeypatch, gt, pred, VARIANTS[name], keep_matches)
    assert_same_bits(reference, compiled)


@pytest.mark.parametrize("chunk", [1 << 21, 1], ids=["all-classes", "class-by-class"])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_protocol_is_the_same_bits_with_and_without_the_kernels(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, name: str, chunk: int
) -> None:
    """Classes accumulated in one call, or in chunks of one class."""
    monkeypatch.setattr(from_records, "COCO_TABLE_VALUES", chunk)
    gt, pred = random_dataset(7, images=25)
    reference, compiled = both_engines(monkeypatch, gt, pred, VARIANTS[name])
    assert_same_bits(reference, compiled)


def image_arguments(n_images: int = 2) -> list[Any]:
    """Valid arguments of ``image_results``: ``n_images`` images, one sweep threshold."""
    return [
        ImageResult, tuple(f.name for f in dataclasses.fields(ImageResult)),
        np.zeros((n_images, 10), np.int64), np.full(n_images, np.nan),
        [f"k{j}" for j in range(n_images)], [f"g{j}" for j in range(n_images)],
        [None] * n_images, None, {}, lambda counted: counted,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("place", "value", "message"),
    [
        pytest.param(1, ("key",), "names: not the 13", id="names-short"),
        pytest.param(2, np.zeros((2, 9), np.int64), "values: not", id="values-sweep-cut"),
        pytest.param(2, np.zeros((2, 10), np.int32), "values: unexpected", id="values-int32"),
        pytest.param(3, np.zeros(3), "values: not", id="mean-iou-long"),
        pytest.param(4, ["k0"], "not one per image", id="keys-short"),
        pytest.param(6, [None] * 3, "not one per image", id="pred-paths-long"),
        pytest.param(7, [()], "not one per image", id="detail-short"),
        pytest.param(7, 5, "detail: not a sequence", id="detail-not-sequence"),
    ],
)
def test_image_results_refuses_arguments_it_would_read_past(
    kernel: ModuleType, place: int, value: Any, message: str
) -> None:
    arguments = image_arguments()
    arguments[place] = value
    with pytest.raises((ValueError, TypeError), match=message):
        kernel.image_results(*arguments)


def test_image_results_are_made_as_the_dataclass_makes_them(kernel: ModuleType) -> None:
    """Fields from the rows, NaN mean IoU as None, equal sweeps shared through the dict."""
    arguments = image_arguments()
    arguments[2] = np.array([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]] * 2, np.int64)
    arguments[3] = np.array([0.5, np.nan])
    first, second = kernel.image_results(*arguments)
    assert first == ImageResult(
        "k0", "g0", None, 1, 2, 3, 4, 5, 6, 0.5, (8, 9, 10), matches=(), pred_ignored=7
    )
    assert second.mean_iou is None and second.sweep is first.sweep
    assert arguments[8] == {(8, 9, 10): (8, 9, 10)}

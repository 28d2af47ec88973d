"""The evaluation with the compiled kernels' calls split on threads (vocmatch.kernel_threads)
gives the records of the single-thread calls, bit for bit, also with several evaluations
running at once in one process."""

from __future__ import annotations

import importlib.util
import random
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vocmatch import kernel_threads
from vocmatch.compiled import PURE_ENGINE_VARIABLE
from vocmatch.core import match_kernels
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.evaluation import class_curves
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.result import Evaluation
from vocmatch.evaluation.to_records import Asked, match_records
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

from .test_fast_match import VARIANTS, assert_same
from .test_fastaccumulate import assert_same_bits

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(match_kernels.MODULE) is None,
    reason="the compiled matching kernels are not built",
)

#: The kernels' minimum work a thread, each set to 1 to split every call that can be.
_MINIMUMS = (
    "AREAS_PER_THREAD",
    "IOU_PAIRS_PER_THREAD",
    "ORDER_PREDS_PER_THREAD",
    "RANKED_PAIRS_PER_THREAD",
)


def _split(patch: pytest.MonkeyPatch, cores: int) -> None:
    """Every kernel call split into up to ``cores`` parts (one: never split)."""
    patch.setattr(kernel_threads, "available_cores", lambda: cores)
    for name in _MINIMUMS:
        patch.setattr(match_kernels, name, 1)
    patch.setattr(class_curves, "CURVES_ROWS_PER_THREAD", 1)


_corner = st.integers(0, 5).map(lambda v: 6.0 * v)
_side = st.sampled_from([8.0, 16.0, 40.0, 120.0])
_score = st.sampled_from([0.3, 0.5, 0.5, 0.9])


@st.composite
def _box(draw: st.DrawFn, scored: bool) -> Box:
    x, y, w = draw(_corner), draw(_corner), draw(_side)
    return Box(
        draw(st.sampled_from(["a", "a", "b"])), x, y, x + w, y + draw(_side),
        difficult=not scored and draw(st.integers(0, 4)) == 0,
        score=draw(_score) if scored else None,
    )  # fmt: skip


@st.composite
def _sets(draw: st.DrawFn) -> tuple[AnnotationSet, AnnotationSet]:
    """Up to 12 images of a few boxes near the same places (ties of IoU and score)."""
    gt, pred = [], []
    for i in range(draw(st.integers(1, 12))):
        key = f"img{i}"
        gt.append(
            ImageAnnotation(key, f"gt/{key}.xml", tuple(draw(st.lists(_box(False), max_size=5))))
        )
        boxes = tuple(draw(st.lists(_box(True), max_size=8)))
        pred.append(ImageAnnotation(key, f"pred/{key}.xml", boxes))
    return AnnotationSet("gt", tuple(gt), ()), AnnotationSet("pred", tuple(pred), ())


def _records(sets: tuple[AnnotationSet, AnnotationSet], name: str) -> MatchRecords:
    gt, pred = columns_from_annotations(sets[0]), columns_from_annotations(sets[1])
    return match_records(gt, pred, VARIANTS[name], asked=Asked(whole_run=True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sets(), st.sampled_from(sorted(n for n in VARIANTS if n.startswith(("coco", "voc")))))
@pytest.mark.parametrize("cores", [2, 3, 4])
def test_split_kernels_give_the_same_records(
    cores: int, sets: tuple[AnnotationSet, AnnotationSet], name: str
) -> None:
    """Every kernel call split into parts: the records of the calls in one thread."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "0")
        _split(patch, 1)
        expected = _records(sets, name)
        _split(patch, cores)
        assert_same(expected, _records(sets, name))


@pytest.fixture
def split_everywhere() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "0")
        _split(patch, 4)
        yield


def _many_sets(seed: int) -> tuple[AnnotationSet, AnnotationSet]:
    """A set of 40 images of up to 6 ground truth and 12 predictions near a few places."""
    rng = random.Random(seed)

    def box(scored: bool) -> Box:
        x0, y0 = rng.choice([0.0, 6.0, 12.0, 30.0]), rng.choice([0.0, 6.0, 12.0, 30.0])
        w, h = rng.choice([8.0, 16.0, 40.0, 120.0]), rng.choice([8.0, 16.0, 40.0, 120.0])
        return Box(
            rng.choice(["a", "a", "b"]), x0, y0, x0 + w, y0 + h,
            difficult=not scored and rng.random() < 0.2,
            score=rng.choice([0.3, 0.5, 0.5, 0.9]) if scored else None,
        )  # fmt: skip

    gt, pred = [], []
    for i in range(40):
        key = f"img{i}"
        gt.append(
            ImageAnnotation(
                key, f"gt/{key}.xml", tuple(box(False) for _ in range(rng.randint(0, 6)))
            )
        )
        pred.append(
            ImageAnnotation(
                key, f"pred/{key}.xml", tuple(box(True) for _ in range(rng.randint(0, 12)))
            )
        )
    return AnnotationSet("gt", tuple(gt), ()), AnnotationSet("pred", tuple(pred), ())


@pytest.mark.usefixtures("split_everywhere")
def test_evaluations_at_once_in_threads_each_give_their_own_records() -> None:
    """Eight evaluations at once in one process, each with its kernel calls split on threads
    of their own: each one's records are those it gives alone."""
    sets = [_many_sets(seed) for seed in range(8)]
    alone = [_records(s, "coco") for s in sets]
    found: list[MatchRecords | None] = [None] * len(sets)
    errors: list[BaseException] = []
    start = threading.Barrier(len(sets))

    def run(i: int) -> None:
        try:
            start.wait()
            for _ in range(5):
                found[i] = _records(sets[i], "coco")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for expected, actual in zip(alone, found, strict=True):
        assert_same(expected, actual)


def _evaluation(sets: tuple[AnnotationSet, AnnotationSet], name: str) -> Evaluation:
    gt, pred = columns_from_annotations(sets[0]), columns_from_annotations(sets[1])
    return evaluate_columns(gt, pred, protocol(name))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sets(), st.sampled_from(["coco", "voc07", "voc12", "default", "ultralytics"]))
@pytest.mark.parametrize("cores", [2, 4])
def test_split_kernels_give_the_same_evaluation(
    cores: int, sets: tuple[AnnotationSet, AnnotationSet], name: str
) -> None:
    """Every kernel call split into parts, the classes' curves among them: the evaluation
    of the calls in one thread, to the bit."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "0")
        _split(patch, 1)
        expected = _evaluation(sets, name)
        _split(patch, cores)
        assert_same_bits(expected, _evaluation(sets, name))


@pytest.mark.parametrize("name", ["coco", "voc07", "voc12"])
@pytest.mark.usefixtures("split_everywhere")
def test_split_kernels_give_the_numpy_evaluation(name: str) -> None:
    """Forced splits on sets of 40 images: the numpy implementation's evaluation."""
    for seed in range(4):
        sets = _many_sets(seed)
        split = _evaluation(sets, name)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(PURE_ENGINE_VARIABLE, "1")
            reference = _evaluation(sets, name)
        assert_same_bits(reference, split)

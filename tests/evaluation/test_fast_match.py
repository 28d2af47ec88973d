"""The compiled matching (vocmatch.core.fastmatch through vocmatch.evaluation.range_flags)
gives the match records the numpy matching gives, bit for bit, under every protocol."""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vocmatch.compiled import PURE_ENGINE_VARIABLE, active_engine
from vocmatch.core import match_kernels
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import PROTOCOLS, Conventions, protocol
from vocmatch.evaluation import candidates, to_records
from vocmatch.evaluation import pair_space as pairs
from vocmatch.evaluation.matched import MatchedColumns
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.to_records import Asked, match_records
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(match_kernels.MODULE) is None,
    reason="the compiled matching kernels are not built",
)


def _variants() -> dict[str, Conventions]:
    """Every preset as it is, under COCO's summary (its area ranges matched), with the strict
    threshold, and under every rule for difficult objects."""
    found: dict[str, Conventions] = {}
    for name in PROTOCOLS:
        conv = protocol(name)
        found[name] = conv
        coco = replace(conv, summary="coco", operating_point="all")
        found[f"{name}-coco-areas"] = coco
        found[f"{name}-coco-areas-strict"] = replace(coco, strict_threshold=True)
        for difficult in ("ignore", "count", "crowd", "drop"):
            found[f"{name}-coco-areas-{difficult}"] = replace(coco, difficult=difficult)
    found["coco-max-dets-2"] = replace(protocol("coco"), max_dets=2)
    found["coco-repeated-thresholds"] = replace(protocol("coco"), ap_thresholds=(0.5, 0.5, 0.75))
    return found


VARIANTS = _variants()

# Boxes near a few places, shifted by a few units, of sizes in each of COCO's area ranges
# (small below 32 x 32, large above 96 x 96): many equal IoUs, a prediction often halfway
# between two objects.
_corner = st.integers(0, 6).map(lambda v: 4.0 * v)
_side = st.sampled_from([8.0, 16.0, 40.0, 40.0, 120.0])
_shift = st.sampled_from([-4.0, 0.0, 0.0, 4.0])
_score = st.sampled_from([0.3, 0.5, 0.5, 0.9, None])
_Place = tuple[float, float, float, float]


@st.composite
def _places(draw: st.DrawFn) -> list[_Place]:
    found = []
    for _ in range(draw(st.integers(1, 3))):
        w = draw(_side)
        found.append((draw(_corner), draw(_corner), w, draw(st.sampled_from([w, w, draw(_side)]))))
    return found


@st.composite
def _boxes(draw: st.DrawFn, places: list[_Place], scored: bool) -> Box:
    x, y, w, h = draw(st.sampled_from(places))
    x, y = x + draw(_shift), y + draw(_shift)
    return Box(
        draw(st.sampled_from(["a", "a", "b"])), x, y, x + w, y + h,
        difficult=not scored and draw(st.integers(0, 3)) == 0,
        score=draw(_score) if scored else None,
    )  # fmt: skip


@st.composite
def _sets(draw: st.DrawFn) -> tuple[AnnotationSet, AnnotationSet]:
    n = draw(st.integers(0, 4))
    gt, pred = [], []
    for i in range(n):
        key = f"img{i}"
        places = draw(_places())
        boxes = tuple(draw(st.lists(_boxes(places, False), max_size=6)))
        gt.append(ImageAnnotation(key, f"gt/{key}.xml", boxes))
        if draw(st.integers(0, 5)):  # an image now and then without a prediction file
            boxes = tuple(draw(st.lists(_boxes(places, True), max_size=9)))
            pred.append(ImageAnnotation(key, f"pred/{key}.xml", boxes))
    return AnnotationSet("gt", tuple(gt), ()), AnnotationSet("pred", tuple(pred), ())


def assert_same(a: Any, b: Any, path: str = "records") -> None:
    """Equal bit for bit: arrays by dtype, shape and bytes (NaN included), the rest by value."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), path
        assert (a.dtype, a.shape) == (b.dtype, b.shape), path
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), path
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), path
        for field in dataclasses.fields(a):
            assert_same(getattr(a, field.name), getattr(b, field.name), f"{path}.{field.name}")
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{k}]")
    elif isinstance(a, float):
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), path
    else:
        assert a == b, path


def _both(
    gt: AnnotationSet, pred: AnnotationSet, conv: Conventions, asked: Asked
) -> tuple[MatchRecords, MatchRecords]:
    """The records of both implementations; their matchings' pairs are the same, in order."""
    gt_columns, pred_columns = columns_from_annotations(gt), columns_from_annotations(pred)
    found = []
    matched: list[MatchedColumns] = []
    for pure in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(PURE_ENGINE_VARIABLE, pure)
            taken = replace(asked, matched=matched.append)
            found.append(match_records(gt_columns, pred_columns, conv, asked=taken))
    for name in ("hit_threshold", "hit_pred", "hit_gt", "hit_iou", "pred_rank", "pred_rows"):
        assert_same(getattr(matched[0], name), getattr(matched[1], name), name)
    return found[0], found[1]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sets(), st.sampled_from(sorted(VARIANTS)), st.booleans())
def test_compiled_records_equal_numpy_records(
    sets: tuple[AnnotationSet, AnnotationSet], name: str, whole_run: bool
) -> None:
    """Random images with ties of score and IoU, difficult objects, images without
    predictions or ground truth, predictions without scores: the same records."""
    numpy_records, compiled_records = _both(*sets, VARIANTS[name], Asked(whole_run=whole_run))
    assert_same(numpy_records, compiled_records)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _sets(),
    st.sampled_from(sorted(n for n in VARIANTS if "coco-areas" in n)),
    st.sampled_from([(4, 0), (4, 1 << 24), (16, 6)]),
)
def test_compiled_records_equal_numpy_records_in_large_cells(
    sets: tuple[AnnotationSet, AnnotationSet], name: str, sizes: tuple[int, int]
) -> None:
    """Image-classes scored in blocks, their pairs kept or scored again for each matching:
    the same records."""
    tile, budget = sizes
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pairs, "TILE_PAIRS", tile)
        patch.setattr(candidates, "CANDIDATE_BUDGET", budget)
        numpy_records, compiled_records = _both(*sets, VARIANTS[name], Asked(whole_run=True))
    assert_same(numpy_records, compiled_records)


def test_pure_engine_variable_leaves_matching_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``VOCMATCH_PURE_ENGINE=1`` switches the compiled matching off."""
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert active_engine(match_kernels.MODULE) == "numpy"
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "0")
    assert active_engine(match_kernels.MODULE) == "compiled"


@pytest.mark.parametrize("rule", ["unmatched", "unmatched-first"])
def test_area_ranges_are_matched_in_the_pair_scan(
    monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    """Under the unmatched rules COCO's area ranges ride along the evaluation's own matching
    in the one pass over the pairs: no range is matched afterwards, on its own or with
    numpy, and the records are the numpy route's."""
    boxes = (Box("a", 0, 0, 10, 10), Box("a", 0, 0, 100, 100), Box("a", 2, 2, 12, 12))
    preds = tuple(Box(b.name, b.x1 + 1, b.y1, b.x2 + 1, b.y2, score=0.5) for b in boxes)
    gt = AnnotationSet("gt", (ImageAnnotation("i", "gt/i.xml", boxes),), ())
    pred = AnnotationSet("pred", (ImageAnnotation("i", "pred/i.xml", preds),), ())
    conv = replace(protocol("coco"), match_rule=rule)  # type: ignore[arg-type]
    numpy_records, _ = _both(gt, pred, conv, Asked(whole_run=True))

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an area range matched after the pair scan")

    monkeypatch.setattr(match_kernels.RangeMatcher, "add", refuse)
    monkeypatch.setattr(to_records, "_range_hits", refuse)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "0")
    records = match_records(
        columns_from_annotations(gt), columns_from_annotations(pred), conv,
        asked=Asked(whole_run=True),
    )  # fmt: skip
    assert_same(numpy_records, records)

"""Slices: each value evaluated as pycocotools evaluates its area ranges."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

import pytest

from tests.conftest import FIXTURES
from tests.evaluation.test_batch import VARIANTS
from tests.oracle import random_dataset
from vocmatch.core.model import Box
from vocmatch.core.protocol import protocol
from vocmatch.errors import InputError
from vocmatch.evaluation.matched import evaluate_matched
from vocmatch.evaluation.scoring import evaluate
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.evidence.gate_records import parse_gate
from vocmatch.evidence.gates import check_gates
from vocmatch.evidence.slices import (
    COCO_SIZE_EDGES,
    SliceSpec,
    SliceValue,
    parse_slices,
    slice_evaluation,
)
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations, read_columns

SLICES = FIXTURES / "slices"


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        pytest.param(["size"], (SliceSpec("size", COCO_SIZE_EDGES),), id="size"),
        pytest.param(["16,32,96"], (SliceSpec("size", (16.0, 32.0, 96.0)),), id="edges"),
        pytest.param(["size:8, 24.5"], (SliceSpec("size", (8.0, 24.5)),), id="size-edges"),
        pytest.param(["Occluded", "pose"], (SliceSpec("occluded"), SliceSpec("pose")), id="words"),
        pytest.param(
            ["night_*", "truncated", "cam2/*"],
            (SliceSpec("file", globs=("night_*", "cam2/*")), SliceSpec("truncated")),
            id="patterns-one-slice",
        ),
    ],
)
def test_parse_slices(texts: list[str], expected: tuple[SliceSpec, ...]) -> None:
    """Keywords, size edges as box sides, and file-name patterns (all values of one slice)."""
    assert parse_slices(texts) == expected


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        pytest.param(["size", "32,96"], "the size slice is given twice", id="size-twice"),
        pytest.param(["32,16"], "positive and increasing", id="decreasing"),
        pytest.param(["0,16"], "positive and increasing", id="zero"),
        pytest.param(["a*", "a*"], "the pattern is given twice", id="pattern-twice"),
        pytest.param([" "], "a slice needs a value", id="empty"),
    ],
)
def test_parse_slices_refuses(texts: list[str], message: str) -> None:
    """A slice given twice, bad edges or an empty value is refused with the reason."""
    with pytest.raises(ValueError, match=message):
        parse_slices(texts)


def fixture_slices(*texts: str, **options: object) -> dict[tuple[str, str], tuple[object, ...]]:
    done = evaluate_matched(
        read_columns(SLICES / "gt"), read_columns(SLICES / "pred"), protocol("default"),
        slices=parse_slices(texts), **options,  # type: ignore[arg-type]
    )  # fmt: skip
    evaluation, records = done.evaluation, done.records
    found = slice_evaluation(evaluation, records, parse_slices(texts))
    return {
        (s.name, v.value): (v.gt, v.tp, v.fp, v.fn, v.precision, v.recall, v.map)
        for s in found
        for v in s.values
    }


def test_fixture_slices_exactly() -> None:
    """fixtures/slices: every value's counts, precision, recall and mAP (its README)."""
    got = fixture_slices("size", "occluded", "pose", "truncated", "night_*")
    assert got == {
        ("size", "small"): (2, 1, 2, 1, 1 / 3, 0.5, 0.5),
        ("size", "medium"): (2, 2, 0, 0, 1.0, 1.0, 1.0),
        ("size", "large"): (2, 2, 1, 0, 2 / 3, 1.0, 1.0),
        ("occluded", "no"): (4, 3, 3, 1, 0.5, 0.75, pytest.approx((5 / 6 + 0.5) / 2)),
        ("occluded", "yes"): (2, 2, 3, 0, 0.4, 1.0, 1.0),
        ("pose", "Frontal"): (2, 2, 3, 0, 0.4, 1.0, 1.0),
        ("pose", "Left"): (1, 1, 3, 0, 0.25, 1.0, 1.0),
        ("pose", "Rear"): (1, 1, 3, 0, 0.25, 1.0, 1.0),
        ("pose", "(none)"): (2, 1, 3, 1, 0.25, 0.5, 0.25),
        ("truncated", "no"): (4, 4, 3, 0, 4 / 7, 1.0, pytest.approx((11 / 12 + 1) / 2)),
        ("truncated", "yes"): (2, 1, 3, 1, 0.25, 0.5, 0.5),
        ("file", "night_*"): (3, 2, 1, 1, 2 / 3, 2 / 3, 0.5),
        ("file", "(other)"): (3, 3, 2, 0, 0.6, 1.0, 1.0),
    }


def test_custom_size_edges_name_their_buckets() -> None:
    """Edges 25,64 (sides) give 0-25, 25-64 and 64+ by areas 625 and 4,096, both ends
    inclusive as in COCO: night_02's car (exactly 64 x 64) is in two buckets."""
    got = fixture_slices("25,64")
    # 400 <= 625; 900, 3,200 and 4,096 within [625, 4096]; 4,096 and twice 10,000 above.
    assert {value: counts[0] for (_, value), counts in got.items()} == {
        "0-25": 1,
        "25-64": 3,
        "64+": 3,
    }


def test_score_thresholds_apply_to_slice_counts() -> None:
    """With --score-threshold 0.65, predictions below it count nowhere, AP keeps them."""
    got = fixture_slices("size", score_thresholds=ScoreThresholds.of(0.65, {}))
    # small: p3 (0.6) and night's p1 (0.3) drop out; medium: night_02's car (0.4) does.
    assert got[("size", "small")][:4] == (2, 1, 0, 1)
    assert got[("size", "medium")][:4] == (2, 1, 0, 1)
    assert got[("size", "small")][6] == 0.5  # AP unchanged


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["coco", "coco-max-dets-2"])
def test_size_slices_under_coco_are_pycocotools_area_ranges(seed: int, name: str) -> None:
    """Under coco, small/medium/large mAP equal pycocotools' APs, APm and APl."""
    gt, pred = random_dataset(seed, images=20)
    done = evaluate_matched(
        columns_from_annotations(gt), columns_from_annotations(pred), VARIANTS[name],
        slices=parse_slices(["size"]),
    )  # fmt: skip
    evaluation, records = done.evaluation, done.records
    assert evaluation.coco is not None
    (sizes,) = slice_evaluation(evaluation, records, parse_slices(["size"]))
    coco = evaluation.coco
    expected = {"small": coco.APs, "medium": coco.APm, "large": coco.APl}
    for value in sizes.values:
        want = expected[value.value]
        if want == -1:
            assert value.map is None
        else:
            assert value.map == pytest.approx(want, abs=1e-12)


def reference_value(
    gt: AnnotationSet,
    pred: AnnotationSet,
    name: str,
    inside: Callable[[Box], bool],
    outside_pred: Callable[[Box], bool],
) -> tuple[int, int, int, float | None]:
    """A slice value by the per-image reference evaluator: ground truth outside the value
    marked difficult (ignored under these protocols), then the unmatched predictions that
    lie outside removed (they took nothing, so the rest is unchanged) and evaluated again."""
    marked = replace(
        gt,
        annotations=tuple(
            replace(
                a, boxes=tuple(replace(b, difficult=b.difficult or not inside(b)) for b in a.boxes)
            )
            for a in gt.annotations
        ),
    )
    first = evaluate(marked, pred, VARIANTS[name])
    unmatched = {
        (image.key, m.pred_index)
        for image in first.images
        for m in image.matches
        if m.outcome == "fp"
    }
    kept = replace(
        pred,
        annotations=tuple(
            replace(
                a,
                boxes=tuple(
                    b
                    for j, b in enumerate(a.boxes)
                    if not ((a.key, j) in unmatched and outside_pred(b))
                ),
            )
            for a in pred.annotations
        ),
    )
    second = evaluate(marked, kept, VARIANTS[name])
    s = second.summary
    return s.gt, s.tp, s.fp, s.map


@pytest.mark.parametrize("name", ["default", "voc12", "voc07"])
@pytest.mark.parametrize("seed", range(4))
def test_slices_equal_the_reference_evaluator(name: str, seed: int) -> None:
    """Every value of a truncated and a size slice equals the per-image reference evaluator
    run with the ground truth outside the value ignored and the unmatched predictions
    outside it removed."""
    gt, pred = random_dataset(seed, images=15)
    gt = replace(
        gt,
        annotations=tuple(
            replace(
                a, boxes=tuple(replace(b, truncated=(i % 3 == 0)) for i, b in enumerate(a.boxes))
            )
            for a in gt.annotations
        ),
    )
    done = evaluate_matched(
        columns_from_annotations(gt), columns_from_annotations(pred), VARIANTS[name],
        slices=parse_slices(["truncated", "size"]),
    )  # fmt: skip
    evaluation, records = done.evaluation, done.records
    truncated, sizes = slice_evaluation(evaluation, records, parse_slices(["truncated", "size"]))

    def area(b: Box) -> float:
        return (b.x2 - b.x1) * (b.y2 - b.y1)

    cases: list[tuple[SliceValue, Callable[[Box], bool], Callable[[Box], bool]]] = [
        (truncated.values[0], lambda b: not b.truncated, lambda b: False),
        (truncated.values[1], lambda b: b.truncated, lambda b: False),
    ]
    for value, (low, high) in zip(
        sizes.values, [(0, 32**2), (32**2, 96**2), (96**2, 1e10)], strict=True
    ):
        within = functools.partial(lambda lo, hi, b: lo <= area(b) <= hi, low, high)
        cases.append((value, within, lambda b, inside=within: not inside(b)))
    for value, inside, outside in cases:
        expected = reference_value(gt, pred, name, inside, outside)
        assert (value.gt, value.tp, value.fp) == expected[:3], value.value
        if expected[3] is None:
            assert value.map is None
        else:
            assert value.map == pytest.approx(expected[3], abs=1e-12)


def test_gates_target_slice_values() -> None:
    """size=small:recall=0.6 bounds that value's recall; an unknown slice or value is an
    error naming what exists."""
    done = evaluate_matched(
        read_columns(SLICES / "gt"), read_columns(SLICES / "pred"), protocol("default"),
        slices=parse_slices(["size"]),
    )  # fmt: skip
    evaluation, records = done.evaluation, done.records
    found = slice_evaluation(evaluation, records, parse_slices(["size"]))
    report = check_gates(
        evaluation,
        [parse_gate("size=small:recall=0.6"), parse_gate("size=medium:map=0.9")],
        slices=found,
    )
    assert [(str(g), g.passed) for g in report.gates] == [
        ("size=small:recall 0.5000 < 0.6000", False),
        ("size=medium:ap 1.0000 >= 0.9000", True),
    ]
    with pytest.raises(
        InputError, match=r"names slice 'pose', which was not evaluated \(give slices=\['pose'\]\)"
    ):
        check_gates(evaluation, [parse_gate("pose=Left:recall=0.5")], slices=found)
    with pytest.raises(
        InputError, match=r"the size slice has no value 'smal'; did you mean 'small'\?"
    ):
        check_gates(evaluation, [parse_gate("size=smal:recall=0.5")], slices=found)

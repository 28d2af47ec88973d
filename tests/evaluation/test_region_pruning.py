"""Pairs of regions whose IoU bound is below every threshold are not clipped, and no number
of the evaluation changes for it."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.bench_scripts import bench
from tests.evaluation.test_batch import VARIANTS, assert_identical
from tests.oracle import dense_dataset, with_shapes, without_scores
from vocmatch.core.model import Box, ImageAnnotation, Polygon, RotatedBox
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.evaluation import stages
from vocmatch.evaluation.candidates import Matching, match_all
from vocmatch.evaluation.matched import MatchedColumns, evaluate_matched
from vocmatch.evaluation.pair_space import iou_floor
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

write_triangles = bench("shape_pruning").write_triangles


def evaluated(
    gt: AnnotationSet,
    pred: AnnotationSet,
    conventions: Conventions,
    pruned: bool = True,
    records: bool = True,
) -> tuple[Evaluation, MatchedColumns]:
    """The evaluation (with per-box records, or without), pairs left out below the lowest
    threshold, or every pair clipped."""
    with pytest.MonkeyPatch.context() as patch:
        if not pruned:
            patch.setattr(stages, "iou_floor", lambda thresholds: 0.0)
        done = evaluate_matched(
            columns_from_annotations(gt), columns_from_annotations(pred), conventions, records
        )
        evaluation, matched = done.evaluation, done.matched
    assert matched is not None
    return evaluation, matched


def hits(matched: MatchedColumns) -> list[Any]:
    """What the analyses read of the matching (bootstrap, slices, calibration)."""
    return [
        matched.hit_threshold, matched.hit_pred, matched.hit_gt, matched.hit_iou,
        matched.pred_area, matched.gt_area, matched.pred_counted,
    ]  # fmt: skip


def matched_again(matched: MatchedColumns, ignore: npt.NDArray[np.bool_]) -> Matching:
    """The matching again with other ground truth ignored, as an area range or a slice
    value is matched."""
    conv = matched.conventions
    return match_all(
        matched.pairs, matched.pred_rank, ignore, matched.gt_crowd, matched.thresholds,
        conv.match_rule, conv.strict_threshold, matched.scored,
    )  # fmt: skip


def assert_unchanged(gt: AnnotationSet, pred: AnnotationSet, conventions: Conventions) -> None:
    pruned, pruned_matched = evaluated(gt, pred, conventions)
    every, every_matched = evaluated(gt, pred, conventions, pruned=False)
    assert_identical(every, pruned)
    # The per-box records' best IoUs, with score thresholds too (another pass over pairs).
    best = every_matched.pairs.exact_gt_best_iou(), every_matched.pairs.exact_pred_best_iou()
    assert_identical(
        [pruned_matched.pairs.exact_gt_best_iou(), pruned_matched.pairs.exact_pred_best_iou()],
        list(best),
    )
    half = np.arange(every_matched.pred_rows.size) % 2 == 0
    assert_identical(
        pruned_matched.pairs.gt_best_iou_among(half), every_matched.pairs.gt_best_iou_among(half)
    )
    assert_identical(hits(every_matched), hits(pruned_matched))
    # Matched again with other ground truth ignored, as slices and the bootstrap do.
    ignore = np.arange(every_matched.gt_rows.size) % 3 == 0
    again, again_pruned = (
        matched_again(every_matched, ignore),
        matched_again(pruned_matched, ignore),
    )
    assert_identical(
        [again.hit_t, again.hit_pred, again.hit_gt, again.hit_iou],
        [again_pruned.hit_t, again_pruned.hit_pred, again_pruned.hit_gt, again_pruned.hit_iou],
    )


@pytest.mark.parametrize(
    ("thresholds", "floor"),
    [
        pytest.param([0.5, 0.75, 0.95], 0.5, id="lowest-threshold"),
        pytest.param([0.95, 0.3], 0.3, id="unsorted"),
        pytest.param([0.0, 0.5], 0.0, id="threshold-zero"),
        pytest.param([], 0.0, id="no-threshold"),
    ],
)
def test_iou_floor(thresholds: list[float], floor: float) -> None:
    """The floor is the lowest threshold matched at."""
    assert iou_floor(thresholds) == floor


def triangle_sets(tmp_path: Path, n: int) -> tuple[AnnotationSet, AnnotationSet]:
    from vocmatch.readers.parse import read_directory

    write_triangles(tmp_path, n)
    return read_directory(tmp_path / "gt"), read_directory(tmp_path / "pred")


@pytest.mark.parametrize("name", ["default", "coco", "voc12-strict"])
def test_dense_triangles_clip_far_fewer_pairs_than_meet(tmp_path: Path, name: str) -> None:
    """200 + 200 triangles whose bounding boxes all meet: every pair (of the predictions
    kept: 100 under coco's maxDets) is clipped when every pair is needed, fewer than a third
    of them when only matching reads the IoU, and the results are the same."""
    gt, pred = triangle_sets(tmp_path, 200)
    conventions = VARIANTS[name]
    pruned, pruned_matched = evaluated(gt, pred, conventions, records=False)
    every, every_matched = evaluated(gt, pred, conventions, pruned=False, records=False)
    meeting = 200 * every_matched.pred_rows.size
    assert every_matched.pairs.space.exact_overlaps == meeting
    assert pruned_matched.pairs.space.exact_overlaps < meeting // 3
    assert pruned.summary.tp > 50
    assert_identical(every, pruned)
    assert_identical(hits(every_matched), hits(pruned_matched))


@pytest.mark.parametrize("name", ["default", "voc12-strict"])
def test_per_box_records_are_exact_with_fewer_pairs(tmp_path: Path, name: str) -> None:
    """Per-box records give each false positive's and missed object's best IoU however low:
    the pairs left out that could hold more are clipped afterwards, still far fewer than
    every pair, and every record is the same."""
    gt, pred = triangle_sets(tmp_path, 150)
    pruned, matched = evaluated(gt, pred, VARIANTS[name])
    every, every_matched = evaluated(gt, pred, VARIANTS[name], pruned=False)
    assert every_matched.pairs.space.exact_overlaps == 150 * 150
    assert matched.pairs.space.exact_overlaps < 150 * 150 // 2
    records = [m for image in pruned.images for m in image.matches]
    low = [m for m in records if m.outcome in ("fp", "fn") and 0 < m.iou < 0.5]
    assert len(low) > 20
    assert_identical(every, pruned)


def half_box(x1: float, y1: float, x2: float, y2: float, score: float | None = None) -> Box:
    triangle = Polygon(((x1, y1), (x2, y1), (x1, y2)))
    return Box("a", x1, y1, x2, y2, score=score, shape=triangle)


def one_image(gt: list[Box], pred: list[Box]) -> tuple[AnnotationSet, AnnotationSet]:
    return (
        AnnotationSet("gt", (ImageAnnotation("img", "gt/img.xml", tuple(gt)),), ()),
        AnnotationSet("pred", (ImageAnnotation("img", "pred/img.xml", tuple(pred)),), ()),
    )


@pytest.mark.parametrize(
    ("gt", "pred", "threshold", "tp"),
    [
        # Bound 8 / (16 + 8 - 8) = 0.5 = IoU: at the threshold, clipped and matched.
        pytest.param(
            Box("a", 0, 0, 4, 4), half_box(0, 0, 4, 4, 0.9), 0.5, 1, id="iou-equals-threshold"
        ),
        pytest.param(
            Box("a", 0, 0, 4, 4), half_box(0, 0, 4, 4, 0.9), 0.5 + 1e-12, 0, id="just-above"
        ),
        # A third of a 3 x 3 box's triangle: IoU 1.5 / 9 = 1/6 <= bound 1.5 / 9.
        pytest.param(half_box(0, 0, 3, 3), Box("a", 0, 0, 1, 3, score=0.9), 1 / 6, 1, id="sixth"),
    ],
)
def test_pair_at_the_threshold_is_clipped(gt: Box, pred: Box, threshold: float, tp: int) -> None:
    """Thresholds are inclusive: a pair whose IoU equals the lowest threshold, and whose
    bound is the same number, is clipped and matches."""
    conventions = protocol("default").with_threshold(threshold)
    conventions = replace(conventions, sweep_thresholds=(threshold,))
    evaluation, matched = evaluated(*one_image([gt], [pred]), conventions)
    assert evaluation.summary.tp == tp
    # Clipped once: the records' best IoUs do not clip it again.
    assert matched.pairs.space.exact_overlaps == 1


def test_pair_below_the_floor_is_clipped_only_for_the_records() -> None:
    """A triangle far smaller than the box it lies in (bound 4 / 100) cannot reach 0.5: left
    unclipped, a false positive all the same; the per-box records clip it for the boxes'
    best IoU, 2 / 100."""
    gt, pred = one_image([Box("a", 0, 0, 10, 10)], [half_box(0, 0, 2, 2, 0.9)])
    evaluation, matched = evaluated(gt, pred, protocol("default"), records=False)
    assert (evaluation.summary.tp, evaluation.summary.fp) == (0, 1)
    assert matched.pairs.space.exact_overlaps == 0
    evaluation, matched = evaluated(gt, pred, protocol("default"))
    fp, fn = evaluation.images[0].matches
    assert (fp.outcome, fp.iou, fn.outcome, fn.iou) == ("fp", 0.02, "fn", 0.02)
    assert matched.pairs.space.exact_overlaps > 0


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scored", [True, False], ids=["scored", "unscored"])
def test_dense_shapes_evaluate_alike_pruned_or_not(name: str, seed: int, scored: bool) -> None:
    """Images where every box overlaps most others, half of them rotated boxes and polygons:
    every number and match the same under every convention."""
    gt, pred = dense_dataset(seed)
    gt, pred = with_shapes(gt, seed), with_shapes(pred, seed + 100)
    assert_unchanged(gt, pred if scored else without_scores(pred), VARIANTS[name])


coordinate = st.integers(0, 40).map(lambda v: v / 2)
size = st.integers(1, 60).map(lambda v: v / 2)


@st.composite
def regions(draw: st.DrawFn, scored: bool) -> Box:
    """A box, a rotated box, a triangle of half a box or a convex polygon, near the others."""
    x, y, w, h = draw(coordinate), draw(coordinate), draw(size), draw(size)
    kind = draw(st.sampled_from(["box", "rotated", "half", "polygon"]))
    score = draw(st.sampled_from([0.2, 0.5, 0.9])) if scored else None
    difficult = draw(st.booleans().map(lambda b: b and draw(st.booleans())))
    name = draw(st.sampled_from(["a", "a", "b"]))
    region: Polygon | RotatedBox | None = None
    if kind == "rotated":
        region = RotatedBox(x + w / 2, y + h / 2, w, h, draw(st.floats(0, math.pi)))
    elif kind == "half":
        corner = draw(st.integers(0, 3))
        corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
        region = Polygon(tuple(c for k, c in enumerate(corners) if k != corner))
    elif kind == "polygon":
        count = draw(st.integers(3, 7))
        angles = [2 * math.pi * (k + draw(st.floats(0, 0.8))) / count for k in range(count)]
        region = Polygon(
            tuple((x + w / 2 * (1 + math.cos(a)), y + h / 2 * (1 + math.sin(a))) for a in angles)
        )
    x1, y1, x2, y2 = region.bounds if region is not None else (x, y, x + w, y + h)
    return Box(name, x1, y1, x2, y2, difficult=difficult, score=score, shape=region)


@st.composite
def region_sets(draw: st.DrawFn) -> tuple[AnnotationSet, AnnotationSet]:
    scored = draw(st.booleans())
    gt = draw(st.lists(regions(scored=False), max_size=8))
    pred = draw(st.lists(regions(scored=scored), max_size=8))
    return one_image([replace(b, score=None) for b in gt], pred)


@settings(max_examples=150, deadline=None)
@given(region_sets(), st.sampled_from(sorted(VARIANTS)))
def test_random_regions_evaluate_alike_pruned_or_not(
    sets: tuple[AnnotationSet, AnnotationSet], name: str
) -> None:
    """Any mix of boxes, rotated boxes and polygons, under any convention: pruning pairs by
    their IoU bound changes no number and no match."""
    assert_unchanged(*sets, VARIANTS[name])


@pytest.mark.parametrize(
    "options",
    [
        pytest.param([], id="default"),
        pytest.param(["--protocol", "coco"], id="coco"),
        pytest.param(["--protocol", "voc12", "--iou", "0.3"], id="voc12-iou-0.3"),
        pytest.param(
            ["--bootstrap", "50", "--slice", "size", "--calibration-bins", "4"],
            id="bootstrap-slices-calibration",
        ),
        # The error analysis reads each false positive's and missed object's best IoU.
        pytest.param(["--errors"], id="errors"),
        pytest.param(
            ["--errors", "--protocol", "coco", "--background-iou", "0.05"], id="coco-errors"
        ),
    ],
)
def test_json_report_is_the_same_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str]
) -> None:
    """The command's JSON report on dense triangles, every pair clipped or not."""
    from tests.conftest import run_cli

    write_triangles(tmp_path, 120)
    command = [str(tmp_path / "gt"), str(tmp_path / "pred"), "--format", "json", *options]
    pruned = run_cli(*command)
    monkeypatch.setattr(stages, "iou_floor", lambda thresholds: 0.0)
    every = run_cli(*command)
    assert pruned[0] == every[0] == 0, pruned[2]
    assert json.loads(pruned[1])["summary"]["tp"] > 50
    assert pruned[1] == every[1]
    assert pruned[2] == every[2] == ""


def test_three_thousand_triangles_leave_most_pairs_unclipped(tmp_path: Path) -> None:
    """On the benchmark's image (3,000 + 3,000 triangles, every pair's bounding boxes
    meeting), fewer than a third of the 9 million pairs have a bound that reaches 0.5: the
    pairs the evaluation clips (bounds alone, no clipping here)."""
    from vocmatch.core.geometry import Regions, pair_iou_bound, pairs_meeting
    from vocmatch.evaluation.pair_space import BOUND_MARGIN

    gt, pred = triangle_sets(tmp_path, 3000)
    gt_regions = Regions.of_regions([b.shape or b for b in gt.annotations[0].boxes])
    pred_regions = Regions.of_regions([b.shape or b for b in pred.annotations[0].boxes])
    meeting = clipped = 0
    for rows in np.array_split(np.arange(3000), 30):
        g, p = np.repeat(rows, 3000), np.tile(np.arange(3000), rows.size)
        meeting += int(np.count_nonzero(pairs_meeting(gt_regions, g, pred_regions, p)))
        bound = pair_iou_bound(gt_regions, g, pred_regions, p)
        clipped += int(np.count_nonzero(bound >= 0.5 * (1 - BOUND_MARGIN)))
    assert meeting == 9_000_000
    assert 0 < clipped < 9_000_000 // 3

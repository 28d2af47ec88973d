"""Error analysis: the confusion matrix, TIDE-style error types, mAP costs and tightness."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from tests.conftest import FIXTURES, GOLDEN, ROOT
from tests.conftest import run_cli as run
from vocmatch.core.iou import iou_matrix
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import Conventions, protocol
from vocmatch.errors import InputError
from vocmatch.evaluation.scoring import Evaluation, evaluate, read_pair
from vocmatch.evidence import confusion, error_types
from vocmatch.evidence.analysis import (
    BACKGROUND,
    ERROR_TYPES,
    ErrorCounts,
    confusion_matrix,
    distribution,
    error_analysis,
    error_boxes,
    map_cost,
    offset_edges,
    tightness,
)
from vocmatch.evidence.annotated import annotated_images
from vocmatch.evidence.confusion import _cross_class_pairs
from vocmatch.evidence.error_cost import _ranked_map, _rankings
from vocmatch.readers.parse import AnnotationSet
from vocmatch.render.analysis_tables import (
    CONFUSION_MAX_CLASSES,
    confusion_table,
    render_analysis,
)

ERRORS = FIXTURES / "errors"

# (image, type, class, pred_index, gt_index, IoU) for every error of each fixture.
Expected = tuple[str, str, str, int | None, int | None, float]


def sets_of(case: str) -> tuple[AnnotationSet, AnnotationSet]:
    return read_pair(ERRORS / case / "gt", ERRORS / case / "pred")


def one_image(
    gt: list[Box], pred: list[Box], key: str = "img"
) -> tuple[AnnotationSet, AnnotationSet]:
    return (
        AnnotationSet("gt", (ImageAnnotation(key, f"gt/{key}.xml", tuple(gt)),), ()),
        AnnotationSet("pred", (ImageAnnotation(key, f"pred/{key}.xml", tuple(pred)),), ()),
    )


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param("cls", [("scene", "cls", "dog", 0, 0, 1.0)], id="cls"),
        pytest.param(
            "loc",
            [
                ("scene", "loc", "person", 0, 0, 0.4),
                ("scene", "loc", "person", 2, 1, 0.4),
                ("scene", "loc", "person", 3, 0, 0.4),
            ],
            id="loc",
        ),
        pytest.param(
            "both",
            [("scene", "both", "dog", 0, 0, 0.3), ("scene", "miss", "cat", None, 0, 0.0)],
            id="both",
        ),
        pytest.param("dupe", [("scene", "dupe", "person", 1, 0, 0.9)], id="dupe"),
        pytest.param(
            "bkg",
            [
                ("empty", "bkg", "car", 0, None, 0.0),
                ("scene", "bkg", "car", 1, None, 0.0),
                ("scene", "bkg", "person", 2, None, 1 / 39),
            ],
            id="bkg",
        ),
        pytest.param("miss", [("scene", "miss", "car", None, 1, 0.0)], id="miss"),
    ],
)
def test_each_error_type_on_its_fixture(case: str, expected: list[Expected]) -> None:
    """Every FP and every FN not explained by a loc or cls error gets the expected type."""
    gt, pred = sets_of(case)
    analysis = error_analysis(evaluate(gt, pred), gt, pred)
    got = [(b.key, b.kind, b.name, b.pred_index, b.gt_index, b.iou) for b in analysis.boxes]
    assert got == [(*e[:5], pytest.approx(e[5])) for e in expected]
    counts = {kind: sum(1 for e in expected if e[1] == kind) for kind in ERROR_TYPES}
    assert analysis.summary == ErrorCounts(**counts)


@pytest.mark.parametrize(
    ("case", "base", "gains"),
    [
        pytest.param("cls", 0.25, {"cls": 0.75}, id="cls"),
        pytest.param("loc", 0.5, {"loc": 0.5}, id="loc"),
        pytest.param("dupe", 5 / 6, {"dupe": 1 / 6}, id="dupe"),
        pytest.param("bkg", 5 / 6, {"bkg": 1 / 6}, id="bkg"),
        pytest.param("miss", 0.5, {"miss": 0.5}, id="miss"),
        pytest.param("both", 0.5, {"miss": 0.5}, id="both-lone-class"),
    ],
)
def test_map_cost_is_exact(case: str, base: float, gains: dict[str, float]) -> None:
    """The cost of a type is the mAP with it fixed minus the mAP measured.

    cls: dog AP 0.5 (its FP ranks first), cat AP 0; the dog relabelled as the cat makes both
    1.0. loc: 0.95 TP, 0.9 FP, 0.5 FP gives AP 0.5; the 0.9 box fixed and the others removed
    gives 1.0. dupe and bkg: TP, FP, TP over 2 objects gives 1/2 + 1/2 * 2/3 = 5/6. miss: the
    car class (AP 0) leaves the mean. both: removing the dog (no dog ground truth, not in
    mAP) changes nothing; the missed cat leaving the mean gains 0.5.
    """
    gt, pred = sets_of(case)
    cost = error_analysis(evaluate(gt, pred), gt, pred).cost
    assert cost is not None
    assert cost.map == pytest.approx(base)
    for kind in ERROR_TYPES:
        assert cost.of(kind) == pytest.approx(gains.get(kind, 0.0), abs=1e-12), kind


def test_cost_under_coco_uses_the_coco_map() -> None:
    """Under coco the cost is measured on AP@[.50:.95]; a fixed cls error has IoU 1."""
    gt, pred = sets_of("cls")
    evaluation = evaluate(gt, pred, protocol("coco"))
    cost = error_analysis(evaluation, gt, pred).cost
    assert cost is not None
    assert cost.map == evaluation.summary.map
    assert cost.map + cost.cls == pytest.approx(1.0)


def test_no_cost_without_scores() -> None:
    """Two labelling passes (no scores) get error counts, but mAP and its costs are undefined."""
    gt, pred = one_image(
        [Box("cat", 0, 0, 10, 10), Box("cat", 20, 20, 30, 30)],
        [Box("dog", 0, 0, 10, 10), Box("cat", 20, 20, 30, 24)],
    )
    analysis = error_analysis(evaluate(gt, pred), gt, pred)
    assert analysis.cost is None
    assert analysis.summary == ErrorCounts(cls=1, loc=1)


@pytest.mark.parametrize(
    ("pred_box", "strict", "kind"),
    [
        # Same class, IoU exactly the background threshold 0.1: localisation (b <= IoU).
        pytest.param(Box("cat", 0, 0, 10, 1), False, "loc", id="iou-equal-background-is-loc"),
        # Just under 0.1 and no other overlap: background.
        pytest.param(Box("cat", 0, 0, 10, 0.99), False, "bkg", id="iou-under-background-is-bkg"),
        # IoU exactly 0.5 on the matched object: passes (>=), so a duplicate.
        pytest.param(Box("cat", 0, 0, 10, 5), False, "dupe", id="iou-equal-threshold-is-dupe"),
        # The same box under IoU > t does not pass: localisation.
        pytest.param(Box("cat", 0, 0, 10, 5), True, "loc", id="strict-threshold-is-loc"),
    ],
)
def test_boundaries(pred_box: Box, strict: bool, kind: str) -> None:
    """Loc takes IoU >= b; bkg IoU <= b (below loc); dupe needs the IoU to pass the threshold."""
    gt, pred = one_image(
        [Box("cat", 0, 0, 10, 10)],
        [Box("cat", 0, 0, 10, 10, score=0.9), replace(pred_box, score=0.5)],
    )
    conventions = replace(protocol("default"), strict_threshold=strict)
    evaluation = evaluate(gt, pred, conventions)
    (image,) = error_boxes(evaluation, gt, pred)
    assert [b.kind for b in image.boxes] == [kind]


def test_loc_is_tested_before_cls() -> None:
    """A box at IoU 0.4 with its own class and 0.6 with another is loc, as in TIDE."""
    gt, pred = one_image(
        [Box("cat", 0, 0, 10, 10), Box("dog", 0, 0, 10, 6)],
        [Box("cat", 0, 0, 10, 4, score=0.9)],
    )
    (image,) = error_boxes(evaluate(gt, pred), gt, pred)
    assert [(b.kind, b.gt_index) for b in image.boxes] == [("loc", 0), ("miss", 1)]


def test_background_iou_is_checked() -> None:
    """The background threshold must lie in [0, IoU threshold]."""
    gt, pred = sets_of("cls")
    with pytest.raises(InputError, match=r"background IoU must be within \[0, 0.5\]"):
        error_boxes(evaluate(gt, pred), gt, pred, background_iou=0.6)


def test_confusion_matrix_on_the_demo_set(demo: tuple[Path, Path]) -> None:
    """TPs sit on the diagonal, the car called a truck off it, the rest against background."""
    gt, pred = read_pair(*demo)
    matrix = confusion_matrix(evaluate(gt, pred), gt, pred)
    assert matrix.names == (
        "bicycle", "bus", "car", "cat", "dog", "person", "truck", BACKGROUND,
    )  # fmt: skip
    assert matrix.counts.dtype == np.int64
    assert matrix.counts.tolist() == [
        [1, 0, 0, 0, 0, 0, 0, 1],
        [0, 1, 0, 0, 0, 0, 0, 0],
        [0, 0, 3, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 1, 0, 0, 1],
        [0, 0, 0, 0, 0, 4, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
        [1, 0, 1, 0, 1, 1, 0, 0],
    ]
    assert matrix.count("car", "truck") == 1
    assert matrix.count("truck", "car") == 0
    assert matrix.count(BACKGROUND, "person") == 1
    with pytest.raises(KeyError):
        matrix.count("horse", "car")


def test_confusion_matrix_of_many_classes_keeps_its_cells_only() -> None:
    """With 50,000 class names the matrix holds one cell per distinct (row, column) that is
    not zero, sorted, never the (K + 1)^2 cells (20 GB)."""
    names = [f"c{k:05d}" for k in range(50_000)]
    gt_boxes = [Box(name, 0, 0, 10, 10) for name in names[::1000]]
    pred_boxes = [Box(b.name, 0, 0, 10, 10, score=0.9) for b in gt_boxes]
    pred_boxes += [Box(names[7], 100, 100, 110, 110, score=0.5)]  # a prediction of nothing
    pred_boxes += [Box(name, 0, 0, 10, 10, score=0.1) for name in names[1::1000]]
    gt, pred = one_image(gt_boxes, pred_boxes)
    matrix = confusion_matrix(evaluate(gt, pred), gt, pred)
    assert len(matrix.names) == 2 * 50 + 2
    assert matrix.values.sum() == 50 + 1 + 50
    keys = matrix.rows * len(matrix.names) + matrix.columns
    assert np.all(np.diff(keys) > 0) and np.all(matrix.values > 0)
    assert matrix.count(names[0], names[0]) == 1
    assert matrix.count(BACKGROUND, names[7]) == 1
    assert matrix.count(names[0], names[1]) == 0  # c00001 is an FP against background
    assert matrix.count(BACKGROUND, names[1]) == 1


def test_confusion_pairs_one_to_one_highest_iou_first() -> None:
    """Two dog boxes on one cat: the better one pairs with it, the other is background; a
    dog already matched to a dog is never counted against the cat it also overlaps."""
    gt, pred = one_image(
        [Box("cat", 0, 0, 10, 10), Box("dog", 0, 0, 10, 9)],
        [
            Box("dog", 0, 0, 10, 9, score=0.9),  # TP on the dog (IoU 0.9 with the cat)
            Box("dog", 0, 0, 10, 8, score=0.8),  # FP: 0.8 with the cat
            Box("dog", 0, 0, 10, 10, score=0.1),  # FP: 1.0 with the cat
        ],
    )
    matrix = confusion_matrix(evaluate(gt, pred), gt, pred)
    assert matrix.names == ("cat", "dog", BACKGROUND)
    assert matrix.counts.tolist() == [[0, 1, 0], [0, 1, 0], [0, 1, 0]]


boxes_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.integers(0, 20),
        st.integers(0, 20),
        st.integers(1, 12),
        st.integers(1, 12),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(gt_raw=boxes_strategy, pred_raw=boxes_strategy, scored=st.booleans())
def test_every_box_counts_once(
    gt_raw: list[tuple[str, int, int, int, int]],
    pred_raw: list[tuple[str, int, int, int, int]],
    scored: bool,
) -> None:
    """Confusion rows sum to TP + FN per class, columns to TP + FP; every FP has one error
    type, misses never exceed FN, and no cost is negative."""
    gt_boxes = [Box(n, x, y, x + w, y + h) for n, x, y, w, h in gt_raw]
    pred_boxes = [
        Box(n, x, y, x + w, y + h, score=(1.0 - k / 10) if scored else None)
        for k, (n, x, y, w, h) in enumerate(pred_raw)
    ]
    gt, pred = one_image(gt_boxes, pred_boxes)
    evaluation = evaluate(gt, pred)
    analysis = error_analysis(evaluation, gt, pred)
    counts = analysis.confusion.counts
    rows, columns = analysis.confusion.row_totals(), analysis.confusion.column_totals()
    for k, cls in enumerate(evaluation.classes):
        assert counts[k].sum() == rows[k] == cls.tp + cls.fn
        assert counts[:, k].sum() == columns[k] == cls.tp + cls.fp
    assert counts[-1, -1] == 0
    s = analysis.summary
    assert s.cls + s.loc + s.both + s.dupe + s.bkg == evaluation.summary.fp
    assert s.miss <= evaluation.summary.fn
    if analysis.cost is not None:
        for kind in ERROR_TYPES:
            assert analysis.cost.of(kind) >= -1e-12


many_boxes = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 30),
        st.integers(0, 30),
        st.integers(2, 14),
        st.integers(2, 14),
        st.sampled_from([0.9, 0.8, 0.7, 0.5, 0.3]),
    ),
    max_size=14,
)


@pytest.mark.parametrize(
    "conventions",
    [
        pytest.param(protocol("default"), id="default"),
        pytest.param(protocol("voc12"), id="voc12-devkit-rule"),
        pytest.param(protocol("voc07"), id="voc07-11-point"),
        pytest.param(replace(protocol("default"), strict_threshold=True), id="strict"),
        pytest.param(replace(protocol("default"), interpolation="101-point"), id="101-point"),
    ],
)
@settings(max_examples=40, deadline=None)
@given(gt_raw=many_boxes, pred_raw=many_boxes)
def test_ranked_cost_equals_evaluating_the_fixed_boxes(
    conventions: Conventions,
    gt_raw: list[tuple[int, str, int, int, int, int, float]],
    pred_raw: list[tuple[int, str, int, int, int, int, float]],
) -> None:
    """With one AP threshold the cost read off the re-ranked flags is the cost found by
    evaluating the fixed boxes again, and the flags give the evaluation's own mAP."""
    keys = ("p", "q")
    gt = AnnotationSet(
        "gt",
        tuple(
            ImageAnnotation(k, f"gt/{k}.xml", tuple(
                Box(n, x, y, x + w, y + h) for i, n, x, y, w, h, _ in gt_raw if keys[i] == k
            ))
            for k in keys
        ),
        (),
    )  # fmt: skip
    pred = AnnotationSet(
        "pred",
        tuple(
            ImageAnnotation(k, f"pred/{k}.xml", tuple(
                Box(n, x, y, x + w, y + h, score=s)
                for i, n, x, y, w, h, s in pred_raw if keys[i] == k
            ))
            for k in keys
        ),
        (),
    )  # fmt: skip
    evaluation = evaluate(gt, pred, conventions)
    images = error_boxes(evaluation, gt, pred)
    ranked = map_cost(evaluation, gt, pred, images)
    again = map_cost(evaluation, gt, pred, images, reevaluate=True)
    assert ranked == again
    if evaluation.summary.map is not None:
        n_gt = {c.name: c.gt for c in evaluation.classes}
        assert _ranked_map(_rankings(evaluation), n_gt, evaluation) == evaluation.summary.map


def test_tightness_on_two_pairs() -> None:
    """IoU and outward edge offsets of each TP; the edges share round bins centred on 0."""
    gt, pred = one_image(
        [Box("cat", 0, 0, 30, 10), Box("cat", 50, 50, 70, 70)],
        [Box("cat", 4, 0, 30, 10, score=0.9), Box("cat", 48, 50, 72, 70, score=0.8)],
    )
    result = tightness(evaluate(gt, pred), gt, pred)
    assert result.name is None
    assert result.pairs == 2
    assert result.iou is not None and result.left is not None and result.right is not None
    assert result.iou.mean == pytest.approx((26 / 30 + 400 / 480) / 2)
    # 20 bins of 0.025 from the threshold: 0.8333 in bin 13, 0.8667 in bin 14.
    assert result.iou.counts == tuple(1 if k in (13, 14) else 0 for k in range(20))
    # |offsets| 4, 2, 2 and five 0: 95th percentile 3.3 would give 0.5 px bins, but the
    # offsets are whole pixels, so 21 bins of 1 px.
    assert result.left.edges == tuple(float(e) for e in np.arange(22) - 10.5)
    # left: gt.x1 - pred.x1 = -4 (cut inside) and +2 (reaches out).
    assert result.left.counts == tuple(1 if k in (6, 12) else 0 for k in range(21))
    assert (result.left.mean, result.left.median, result.left.std) == (-1.0, -1.0, 3.0)
    assert (result.left.minimum, result.left.maximum) == (-4.0, 2.0)
    assert (result.left.p05, result.left.p95) == (pytest.approx(-3.7), pytest.approx(1.7))
    assert result.right.counts == tuple(1 if k in (10, 12) else 0 for k in range(21))
    assert [c.name for c in result.classes] == ["cat"]
    assert result.classes[0].pairs == 2


def test_tightness_without_matches() -> None:
    """No true positive: no distributions."""
    gt, pred = one_image([Box("cat", 0, 0, 10, 10)], [])
    result = tightness(evaluate(gt, pred), gt, pred)
    assert result.pairs == 0
    assert result.iou is None


@pytest.mark.parametrize(
    ("values", "edges"),
    [
        pytest.param([0.0, 0.0], [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], id="all-zero-one-pixel"),
        pytest.param([0.2, -0.1], [-0.25, -0.15, -0.05, 0.05, 0.15, 0.25], id="sub-pixel"),
        pytest.param([1.0, -1.0], [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], id="whole-pixels-at-least-1"),
        pytest.param([10.0, -3.0], [-12.5, -7.5, -2.5, 2.5, 7.5, 12.5], id="round-width-5"),
    ],
)
def test_offset_edges(values: list[float], edges: list[float]) -> None:
    """Odd bins of a 1-2-5 width reach the 95th percentile of |offset|."""
    assert offset_edges(values, bins=5).tolist() == pytest.approx(edges)


def test_distribution_clips_into_the_end_bins() -> None:
    """Values beyond the edges count in the first and last bins."""
    assert distribution([-9.0, 0.0, 9.0], [-1.0, 0.0, 1.0]).counts == (1, 2)


def text_of(renderable: object, width: int = 100) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue()


def test_error_report_golden(demo: tuple[Path, Path], golden: Callable[[str, str], None]) -> None:
    """The error breakdown, confusion matrix and tightness of the demo set read as in the
    golden file (and the docs)."""
    gt, pred = read_pair(*demo)
    evaluation = evaluate(gt, pred)
    report = render_analysis(error_analysis(evaluation, gt, pred), 0.5, tightness=True)
    golden("errors_demo.txt", text_of(report))


def test_wide_confusion_lists_the_largest_cells() -> None:
    """Past CONFUSION_MAX_CLASSES classes the matrix becomes a list of off-diagonal cells."""
    names = [f"c{k:02d}" for k in range(CONFUSION_MAX_CLASSES + 1)]
    gt_boxes = [Box(n, 20 * k, 0, 20 * k + 10, 10) for k, n in enumerate(names)]
    # Each object predicted as the next class: a ring of confusions.
    pred_boxes = [
        Box(names[(k + 1) % len(names)], 20 * k, 0, 20 * k + 10, 10, score=0.5)
        for k in range(len(names))
    ]
    gt, pred = one_image(gt_boxes, pred_boxes)
    matrix = confusion_matrix(evaluate(gt, pred), gt, pred)
    text = text_of(confusion_table(matrix, 0.5))
    assert text.startswith("Largest confusions at IoU 0.5")
    assert "│ c00          │ c01       │     1 │" in text
    assert "13 classes, too many to draw the matrix; against background: 0 predictions" in text


def test_cli_errors_flag(demo: tuple[Path, Path]) -> None:
    """--errors adds the breakdown and the confusion matrix; without it the report is as before."""
    code, out, _ = run(str(demo[0]), str(demo[1]), "--errors")
    assert code == 0
    assert "Errors (TIDE types at IoU 0.5, background IoU 0.1)" in out
    assert "Confusion at IoU 0.5" in out
    assert "Tightness" not in out
    _, plain, _ = run(str(demo[0]), str(demo[1]))
    assert "Errors (TIDE" not in plain and "Confusion" not in plain
    _, tight, _ = run(str(demo[0]), str(demo[1]), "--tightness", "--background-iou", "0.2")
    assert "Tightness of matched boxes (10 pairs)" in tight
    assert "Errors (TIDE" not in tight


def test_cli_json_has_the_analysis(demo: tuple[Path, Path]) -> None:
    """With --errors, JSON carries the error counts, their mAP cost, the confusion matrix
    and the tightness, with the documented keys; without it, none of them (they cost more
    than the evaluation itself on large sets)."""
    _, plain, _ = run(str(demo[0]), str(demo[1]), "--format", "json")
    assert "background_iou" not in json.loads(plain)
    assert "errors" not in json.loads(plain)["summary"]
    code, out, _ = run(str(demo[0]), str(demo[1]), "--format", "json", "--errors")
    assert code == 0
    data = json.loads(out)
    keys = ["cls", "loc", "both", "dupe", "bkg", "miss"]
    assert data["background_iou"] == 0.1
    assert data["summary"]["errors"] == {
        "cls": 1, "loc": 0, "both": 0, "dupe": 2, "bkg": 2, "miss": 3,
    }  # fmt: skip
    assert list(data["summary"]["map_cost"]) == keys
    assert data["summary"]["map_cost"]["miss"] == pytest.approx(0.325)
    assert all(list(c["errors"]) == keys for c in data["classes"])
    truck = next(c for c in data["classes"] if c["name"] == "truck")
    assert truck["errors"]["cls"] == 1
    street_01 = next(i for i in data["images"] if i["image"] == "street_01")
    assert street_01["errors"] == {"cls": 0, "loc": 0, "both": 0, "dupe": 1, "bkg": 1, "miss": 1}
    assert street_01["error_boxes"][0] == {
        "type": "dupe", "name": "person", "pred_index": 3, "gt_index": 1, "iou": 1.0,
        "score": 0.45,
    }  # fmt: skip
    assert data["confusion"]["names"][-1] == "background"
    assert data["confusion"]["counts"][2][6] == 1  # car called truck
    assert data["tightness"]["pairs"] == 10
    assert set(data["tightness"]["iou"]) == {
        "count", "mean", "std", "median", "p05", "p95", "min", "max", "edges", "counts",
    }  # fmt: skip
    assert [c["name"] for c in data["tightness"]["classes"]][:2] == ["bicycle", "bus"]


def test_cli_background_iou_above_threshold_is_refused(demo: tuple[Path, Path]) -> None:
    """A background threshold above the IoU threshold is bad input: exit 2, one line."""
    code, out, err = run(str(demo[0]), str(demo[1]), "--errors", "--background-iou", "0.6")
    assert code == 2
    assert out == ""
    assert "vocmatch: error: background IoU must be within [0, 0.5]" in err


def test_docs_show_the_golden_error_report() -> None:
    """The docs' error-analysis example is the golden output, so it cannot drift."""
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert (GOLDEN / "errors_demo.txt").read_text(encoding="utf-8") in page


# The error types and cross-class pairs by their definition: every false positive against
# every counted object of its image, every missed object against every false positive (the
# N x M scan the analysis avoids on large images).


def _scan_best(ious: list[float], candidates: list[int]) -> tuple[int | None, float]:
    best: int | None = None
    best_iou = 0.0
    for g in candidates:
        if best is None or ious[g] > best_iou:
            best, best_iou = g, ious[g]
    return best, best_iou


def _scan_passes(value: float, conventions: Conventions) -> bool:
    t = conventions.iou_threshold
    return value > t if conventions.strict_threshold else value >= t


def scanned_errors(
    evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet, background_iou: float
) -> list[tuple[str, str, str, int | None, int | None, float]]:
    conv = evaluation.conventions
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    out = []
    for image in evaluation.images:
        matches = image.matches
        counted = sorted({m.gt_index for m in matches if m.outcome in ("tp", "fn")})
        matched = {m.gt_index for m in matches if m.outcome == "tp"}
        fp = sorted(m.pred_index for m in matches if m.outcome == "fp")
        gt_boxes = gt_by_key[image.key].boxes
        pointed_at = set()
        for j in fp:
            box = pred_by_key[image.key].boxes[j]
            ious = iou_matrix(
                [(b.x1, b.y1, b.x2, b.y2) for b in gt_boxes] or np.zeros((0, 4)),
                [(box.x1, box.y1, box.x2, box.y2)],
                conv.pixel_inclusive,
            )[:, 0].tolist()
            same = [g for g in counted if gt_boxes[g].name == box.name]
            other = [g for g in counted if gt_boxes[g].name != box.name]
            g_same, s = _scan_best(ious, same)
            g_other, o = _scan_best(ious, other)
            g_taken, d = _scan_best(ious, [g for g in same if g in matched])
            g_any, a = _scan_best(ious, counted)
            if not counted:
                kind, target, value = "bkg", None, 0.0
            elif g_same is not None and s >= background_iou and not _scan_passes(s, conv):
                kind, target, value = "loc", g_same, s
            elif g_other is not None and _scan_passes(o, conv):
                kind, target, value = "cls", g_other, o
            elif g_taken is not None and _scan_passes(d, conv):
                kind, target, value = "dupe", g_taken, d
            elif a <= background_iou:
                kind, target, value = "bkg", None, a
            else:
                kind, target, value = "both", g_any, a
            if kind in ("loc", "cls"):
                pointed_at.add(target)
            out.append((image.key, kind, box.name, j, target, value))
        for m in sorted((m for m in matches if m.outcome == "fn"), key=lambda m: m.gt_index):
            if m.gt_index not in pointed_at:
                out.append((image.key, "miss", m.name, None, m.gt_index, m.iou))
    return out


def scanned_cross_class_pairs(
    evaluation: Evaluation, gt: AnnotationSet, pred: AnnotationSet
) -> list[tuple[str, int, int]]:
    conv = evaluation.conventions
    gt_by_key = {a.key: a for a in gt.annotations}
    pred_by_key = {a.key: a for a in pred.annotations}
    out = []
    for image in evaluation.images:
        fn = sorted(m.gt_index for m in image.matches if m.outcome == "fn")
        fp = sorted(m.pred_index for m in image.matches if m.outcome == "fp")
        candidates = []
        for a, g in enumerate(fn):
            for b, j in enumerate(fp):
                gt_box, pred_box = gt_by_key[image.key].boxes[g], pred_by_key[image.key].boxes[j]
                value = float(iou_matrix(
                    [(gt_box.x1, gt_box.y1, gt_box.x2, gt_box.y2)],
                    [(pred_box.x1, pred_box.y1, pred_box.x2, pred_box.y2)],
                    conv.pixel_inclusive,
                )[0, 0])  # fmt: skip
                if gt_box.name != pred_box.name and _scan_passes(value, conv):
                    candidates.append((-value, a, b))
        taken_gt, taken_pred = set(), set()
        for _, a, b in sorted(candidates):
            if a not in taken_gt and b not in taken_pred:
                taken_gt.add(a)
                taken_pred.add(b)
                out.append((image.key, fn[a], fp[b]))
    return sorted(out)


scan_boxes = st.lists(
    st.tuples(
        st.sampled_from(["p", "q"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 12),
        st.integers(0, 12),
        st.integers(0, 8),
        st.integers(0, 8),
        st.booleans(),
        st.sampled_from([0.9, 0.5, 0.5, 0.2]),
    ),
    max_size=16,
)


@pytest.mark.parametrize(
    ("conventions", "background_iou"),
    [
        pytest.param(protocol("default"), 0.1, id="default"),
        pytest.param(protocol("default"), 0.0, id="background-0"),
        pytest.param(protocol("voc07"), 0.1, id="voc07-pixel-inclusive"),
        pytest.param(protocol("coco"), 0.1, id="coco"),
        pytest.param(replace(protocol("default"), strict_threshold=True), 0.1, id="strict"),
        pytest.param(protocol("default").with_threshold(0.0), 0.0, id="threshold-0"),
        pytest.param(
            replace(protocol("default").with_threshold(0.0), strict_threshold=True), 0.0,
            id="threshold-0-strict",
        ),
    ],
)  # fmt: skip
@pytest.mark.parametrize("scan_pairs", [pytest.param(0, id="tree"), pytest.param(None, id="scan")])
@settings(max_examples=60, deadline=None)
@given(gt_raw=scan_boxes, pred_raw=scan_boxes)
def test_error_types_and_pairs_equal_the_full_scan(
    scan_pairs: int | None,
    conventions: Conventions,
    background_iou: float,
    gt_raw: list[tuple[str, str, int, int, int, int, bool, float]],
    pred_raw: list[tuple[str, str, int, int, int, int, bool, float]],
) -> None:
    """The error types (with the object each points at, ties going to the first in file
    order, and an object at IoU 0 where nothing overlaps) and the confusion matrix's
    cross-class pairs are those of scanning every pair, on boxes that touch, nest, repeat
    and tie, with difficult objects, flat boxes and thresholds down to 0; both where the
    analysis scans a small image's pairs and where an STR tree finds them (as on a large
    image; here forced)."""
    limit = error_types.SCAN_PAIRS if scan_pairs is None else scan_pairs
    with (
        mock.patch.object(error_types, "SCAN_PAIRS", limit),
        mock.patch.object(confusion, "SCAN_PAIRS", limit),
    ):
        check_against_the_full_scan(conventions, background_iou, gt_raw, pred_raw)


def check_against_the_full_scan(
    conventions: Conventions,
    background_iou: float,
    gt_raw: list[tuple[str, str, int, int, int, int, bool, float]],
    pred_raw: list[tuple[str, str, int, int, int, int, bool, float]],
) -> None:
    keys = ("p", "q")
    gt = AnnotationSet("gt", tuple(
        ImageAnnotation(k, f"gt/{k}.xml", tuple(
            Box(n, x, y, x + w, y + h, difficult=hard)
            for i, n, x, y, w, h, hard, _ in gt_raw if i == k
        ))
        for k in keys
    ), ())  # fmt: skip
    pred = AnnotationSet("pred", tuple(
        ImageAnnotation(k, f"pred/{k}.xml", tuple(
            Box(n, x, y, x + w, y + h, score=s) for i, n, x, y, w, h, _, s in pred_raw if i == k
        ))
        for k in keys
    ), ())  # fmt: skip
    evaluation = evaluate(gt, pred, conventions)
    found = [
        (b.key, b.kind, b.name, b.pred_index, b.gt_index, b.iou)
        for image in error_boxes(evaluation, gt, pred, background_iou)
        for b in image.boxes
    ]
    assert found == scanned_errors(evaluation, gt, pred, background_iou)
    pairs = sorted(
        (image.result.key, p.gt_index, p.pred_index)
        for image in annotated_images(evaluation, gt, pred)
        for p in _cross_class_pairs(
            image, conventions.iou_threshold, conventions.strict_threshold,
            conventions.pixel_inclusive,
        )
    )  # fmt: skip
    assert pairs == scanned_cross_class_pairs(evaluation, gt, pred)


@pytest.mark.parametrize(
    ("pred_box", "kind", "iou", "miss_iou"),
    [
        pytest.param(Box("RBC", 0, 0, 10, 4, score=0.9), "loc", 0.4, 0.4, id="loc"),
        pytest.param(Box("WBC", 0, 0, 10, 10, score=0.9), "cls", 1.0, 0.0, id="cls"),
    ],
)
def test_a_tie_points_at_the_first_object(
    pred_box: Box, kind: str, iou: float, miss_iou: float
) -> None:
    """Two missed RBC objects in one place: a loc (RBC box on both at IoU 0.4) or cls (a WBC
    box on both at 1.0) error points at the first in file order, as TIDE's argmax does; the
    second is the miss (with its best IoU with an RBC prediction)."""
    gt, pred = one_image([Box("RBC", 0, 0, 10, 10), Box("RBC", 0, 0, 10, 10)], [pred_box])
    (image,) = error_boxes(evaluate(gt, pred), gt, pred)
    assert [(b.kind, b.name, b.pred_index, b.gt_index, b.iou) for b in image.boxes] == [
        (kind, pred_box.name, 0, 0, iou),
        ("miss", "RBC", None, 1, miss_iou),
    ]


@pytest.mark.parametrize(
    ("name", "matched", "misses"),
    [
        pytest.param("default", 1, 1, id="default-later-as-pycocotools"),
        pytest.param("coco", 1, 1, id="coco-later-as-pycocotools"),
        pytest.param("voc12", 0, 0, id="voc12-first-as-the-devkit"),
    ],
)
def test_the_matching_tie_rule_decides_which_object_is_left(
    name: str, matched: int, misses: int
) -> None:
    """A prediction on two RBC objects at equal IoU (9/11) takes the later under default and
    coco (pycocotools), the first under voc12 (the devkit, and TIDE's matching). A second
    prediction meets only the later object (IoU 0.25): a loc error on it, which covers that
    object when it is the one left (voc12: no miss, as TIDE counts) and not when it is taken
    (the earlier object is then a miss)."""
    gt, pred = one_image(
        [Box("RBC", 0, 0, 10, 10), Box("RBC", 2, 0, 12, 10)],
        [Box("RBC", 1, 0, 11, 10, score=0.9), Box("RBC", 8, 0, 18, 10, score=0.8)],
    )
    evaluation = evaluate(gt, pred, protocol(name))
    tp = [m.gt_index for m in evaluation.images[0].matches if m.outcome == "tp"]
    (image,) = error_boxes(evaluation, gt, pred)
    assert tp == [matched]
    assert [(b.kind, b.gt_index) for b in image.boxes] == [("loc", 1)] + [("miss", 0)] * misses

"""Score thresholds and operating points: counts at a threshold from the one evaluation equal
an evaluation of the predictions above it; the operating point maximises F-beta."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from tests.oracle import random_dataset
from vocmatch.core.ap import precision_recall_curve
from vocmatch.core.model import Box
from vocmatch.core.protocol import protocol
from vocmatch.errors import AnnotationError, InputError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.scoring import Evaluation
from vocmatch.evaluation.threshold_files import read_score_thresholds, thresholds_csv
from vocmatch.evaluation.thresholds import ScoreThresholds, operating_point
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations, read_columns

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def above(pred: AnnotationSet, thresholds: ScoreThresholds) -> AnnotationSet:
    """The predictions that pass their class's threshold: the definition, written plainly."""
    return replace(
        pred,
        annotations=tuple(
            replace(a, boxes=tuple(b for b in a.boxes if thresholds.passes(b.name, b.score)))
            for a in pred.annotations
        ),
    )


def with_unscored(pred: AnnotationSet) -> AnnotationSet:
    """Every seventh prediction loses its score (they rank last)."""
    out = []
    k = 0
    for a in pred.annotations:
        boxes = []
        for b in a.boxes:
            boxes.append(replace(b, score=None) if k % 7 == 3 else b)
            k += 1
        out.append(replace(a, boxes=tuple(boxes)))
    return replace(pred, annotations=tuple(out))


def original_indices(
    filtered: Evaluation, pred: AnnotationSet, thresholds: ScoreThresholds
) -> Evaluation:
    """The filtered run's records with each prediction numbered as in its original file."""
    kept = {
        a.key: [j for j, b in enumerate(a.boxes) if thresholds.passes(b.name, b.score)]
        for a in pred.annotations
    }
    images = []
    for image in filtered.images:
        index = kept.get(image.key, [])
        matches = tuple(
            m if m.pred_index is None else replace(m, pred_index=index[m.pred_index])
            for m in image.matches
        )
        images.append(replace(image, matches=matches))
    return replace(filtered, images=tuple(images))


def assert_counts_equal(thresholded: Evaluation, filtered: Evaluation, full: Evaluation) -> None:
    """Counts, per-image results and per-box records from the filtered run; AP, curves and
    COCO numbers from the run of every prediction."""
    assert thresholded.images == filtered.images
    s, f = thresholded.summary, filtered.summary
    assert (s.tp, s.fp, s.fn, s.pred, s.gt, s.precision, s.recall, s.f1) == (
        f.tp, f.fp, f.fn, f.pred, f.gt, f.precision, f.recall, f.f1,
    )  # fmt: skip
    assert s.map == full.summary.map
    assert thresholded.coco == full.coco
    filtered_classes = {c.name: c for c in filtered.classes}
    assert [c.name for c in thresholded.classes] == [c.name for c in full.classes]
    for cls, everything in zip(thresholded.classes, full.classes, strict=True):
        kept = filtered_classes.get(cls.name)
        counts = (kept.tp, kept.fp, kept.fn, kept.pred) if kept else (0, 0, cls.gt, 0)
        assert (cls.tp, cls.fp, cls.fn, cls.pred) == counts, cls.name
        assert cls.ap == everything.ap
        assert cls.curve is not None and everything.curve is not None
        assert cls.curve.scores.tolist() == everything.curve.scores.tolist()


CONVENTIONS = [
    pytest.param(protocol("default"), id="default"),
    pytest.param(protocol("voc12"), id="voc12-devkit-rule"),
    pytest.param(protocol("voc07"), id="voc07"),
    pytest.param(protocol("coco"), id="coco-crowd-maxdets"),
    pytest.param(replace(protocol("coco"), max_dets=3), id="coco-maxdets-3"),
    pytest.param(replace(protocol("default"), difficult="count"), id="difficult-count"),
    pytest.param(replace(protocol("voc12"), difficult="crowd"), id="devkit-crowd"),
    pytest.param(protocol("default").with_threshold(0.75), id="iou-0.75"),
]

THRESHOLDS = [
    pytest.param(ScoreThresholds(0.5), id="half"),
    pytest.param(ScoreThresholds(0.93), id="high"),
    pytest.param(ScoreThresholds.of(None, {"cat": 0.4, "fish": 0.2}), id="per-class-only"),
    pytest.param(ScoreThresholds.of(0.6, {"dog": 0.1}), id="default-and-class"),
    pytest.param(ScoreThresholds(2.0), id="above-every-score"),
]


@pytest.mark.parametrize("conventions", CONVENTIONS)
@pytest.mark.parametrize("thresholds", THRESHOLDS)
@pytest.mark.parametrize("seed", [0, 2])
def test_counts_at_a_threshold_equal_filtering_and_evaluating_again(
    conventions: object, thresholds: ScoreThresholds, seed: int
) -> None:
    """Greedy matching in score order: the matches above T do not depend on what is below."""
    gt, pred = random_dataset(seed, images=15)
    if seed == 2:
        pred = with_unscored(pred)  # unscored predictions pass no threshold
    gt_columns, pred_columns = columns_from_annotations(gt), columns_from_annotations(pred)
    conv = conventions  # a Conventions
    full = evaluate_columns(gt_columns, pred_columns, conv)  # type: ignore[arg-type]
    thresholded = evaluate_columns(
        gt_columns,
        pred_columns,
        conv,  # type: ignore[arg-type]
        score_thresholds=thresholds,
    )
    filtered = evaluate_columns(
        gt_columns,
        columns_from_annotations(above(pred, thresholds)),
        conv,  # type: ignore[arg-type]
    )
    filtered = original_indices(filtered, pred, thresholds)
    assert_counts_equal(thresholded, filtered, full)


def test_shapes_take_the_reference_path_with_the_same_meaning() -> None:
    """Rotated boxes and polygons (evaluated by exact overlap) honour thresholds too."""
    gt = read_columns(FIXTURES / "shapes" / "gt")
    read = read_columns(FIXTURES / "shapes" / "pred").to_annotations()
    # Low scores first in each file, so that the kept predictions are not numbered 0, 1, ...
    reversed_set = replace(
        read, annotations=tuple(replace(a, boxes=a.boxes[::-1]) for a in read.annotations)
    )
    pred = columns_from_annotations(reversed_set)
    thresholds = ScoreThresholds(0.55)
    full = evaluate_columns(gt, pred)
    thresholded = evaluate_columns(gt, pred, score_thresholds=thresholds)
    filtered = evaluate_columns(
        gt, columns_from_annotations(above(pred.to_annotations(), thresholds))
    )
    filtered = original_indices(filtered, pred.to_annotations(), thresholds)
    assert_counts_equal(thresholded, filtered, full)
    assert thresholded.summary.pred < full.summary.pred


def test_demo_at_a_threshold_exact_counts(demo: tuple[Path, Path]) -> None:
    """The demo set at score >= 0.6: two low-scored false positives and one low-scored hit
    drop out of the counts; mAP stays 0.625."""
    gt, pred = read_columns(demo[0]), read_columns(demo[1])
    full = evaluate_columns(gt, pred)
    at = evaluate_columns(gt, pred, score_thresholds=ScoreThresholds(0.6))
    scores = sorted(b.score for a in pred.to_annotations().annotations for b in a.boxes)
    assert sum(s is not None and s >= 0.6 for s in scores) == at.summary.pred
    assert (full.summary.tp, full.summary.fp, full.summary.fn) == (10, 5, 4)
    assert at.summary.map == full.summary.map == 0.625


def test_a_threshold_without_any_score_is_refused(tmp_path: Path) -> None:
    """Two annotators' boxes carry no score: a threshold has nothing to compare."""
    gt = AnnotationSet("gt", (), ())
    from vocmatch.core.model import ImageAnnotation

    image = ImageAnnotation("a", "a.xml", (Box("car", 0, 0, 10, 10),))
    gt = AnnotationSet("gt", (image,), ())
    with pytest.raises(InputError, match="needs scored predictions"):
        evaluate_columns(
            columns_from_annotations(gt),
            columns_from_annotations(gt),
            score_thresholds=ScoreThresholds(0.5),
        )


@pytest.mark.parametrize(
    ("tp", "scores", "n_gt", "beta", "expected"),
    [
        pytest.param(
            [True, False, True, False],
            [0.9, 0.8, 0.7, 0.6],
            2,
            1.0,
            (0.7, 2 / 3, 1.0, 0.8, 3),
            id="f1-takes-both-hits",
        ),
        pytest.param(
            [True, False, False, True],
            [0.9, 0.8, 0.7, 0.6],
            2,
            1.0,
            (0.9, 1.0, 0.5, 2 / 3, 1),
            # F1 at 0.9: 2/3; at 0.6: P 1/2, R 1, F1 2/3 as well: the higher threshold wins.
            id="tie-keeps-the-higher-threshold",
        ),
        pytest.param(
            [True, False, False, True],
            [0.9, 0.8, 0.7, 0.6],
            2,
            2.0,
            (0.6, 0.5, 1.0, 5 / 6, 4),
            # F2 weighs recall: at 0.6 (1+4)*0.5*1/(4*0.5+1) = 5/6 beats 0.9's 5/9.
            id="f2-prefers-recall",
        ),
        pytest.param(
            [True, False, True],
            [0.9, 0.7, 0.7],
            2,
            1.0,
            (0.7, 2 / 3, 1.0, 0.8, 3),
            # A threshold cannot cut between equal scores.
            id="tied-scores-cut-together",
        ),
        pytest.param(
            [True, True],
            [0.8, -math.inf],
            2,
            1.0,
            (0.8, 1.0, 0.5, 2 / 3, 1),
            # An unscored prediction passes no threshold: never part of the point.
            id="unscored-never-counted",
        ),
    ],
)
def test_operating_point_exact(
    tp: list[bool],
    scores: list[float],
    n_gt: int,
    beta: float,
    expected: tuple[float, float, float, float, int],
) -> None:
    """The threshold of the best F-beta, with its precision, recall and prediction count."""
    point = operating_point(precision_recall_curve(tp, scores, n_gt), n_gt, beta)
    assert point is not None
    assert (point.threshold, point.precision, point.recall, point.f, point.predictions) == (
        pytest.approx(expected[0]),
        pytest.approx(expected[1]),
        pytest.approx(expected[2]),
        pytest.approx(expected[3]),
        expected[4],
    )


def test_no_operating_point_without_a_hit() -> None:
    """No true positive at any threshold, or no ground truth: no point."""
    assert operating_point(precision_recall_curve([False], [0.9], 1), 1) is None
    assert operating_point(precision_recall_curve([False], [0.9], 0), 0) is None
    assert operating_point(None, 3) is None


def test_operating_point_counts_equal_the_counts_at_its_threshold(demo: tuple[Path, Path]) -> None:
    """Pinning the written threshold reproduces the operating point's precision and recall."""
    gt, pred = read_columns(demo[0]), read_columns(demo[1])
    full = evaluate_columns(gt, pred)
    points = {c.name: operating_point(c.curve, c.gt) for c in full.classes}
    pinned = ScoreThresholds.of(None, {n: p.threshold for n, p in points.items() if p})
    at = evaluate_columns(gt, pred, score_thresholds=pinned)
    for cls in at.classes:
        point = points[cls.name]
        if point is not None:
            assert (cls.precision, cls.recall) == (point.precision, point.recall), cls.name


def test_thresholds_file_round_trip(tmp_path: Path) -> None:
    """What --write-thresholds writes, --score-thresholds reads back, names with commas too."""
    c = precision_recall_curve([True, False], [0.123456789012345, 0.1], 1)
    point = operating_point(c, 1)
    path = tmp_path / "t.csv"
    assert point is not None
    path.write_text(
        thresholds_csv([("a,b", point.threshold), ("car", point.threshold), ("dog", None)])
    )
    assert path.read_text() == 'class,threshold\n"a,b",0.123456789012345\ncar,0.123456789012345\n'
    assert read_score_thresholds(path) == {"a,b": 0.123456789012345, "car": 0.123456789012345}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("#1 car", id="hash"),
        pytest.param("  #car", id="spaces-then-hash"),
        pytest.param("=SUM(A1)", id="formula"),
        pytest.param("'quoted", id="apostrophe"),
        pytest.param("'#x", id="apostrophe-hash"),
    ],
)
def test_every_class_name_reads_back(tmp_path: Path, name: str) -> None:
    """A name the reader would take for a comment (``#...``) or a formula is written so that
    it reads back as itself: never a class silently left without its threshold."""
    point = operating_point(precision_recall_curve([True], [0.5], 1), 1)
    path = tmp_path / "t.csv"
    assert point is not None
    path.write_text(thresholds_csv([(name, point.threshold), ("dog", point.threshold)]))
    assert read_score_thresholds(path) == {name: 0.5, "dog": 0.5}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "car,0.5\ncar,0.6\n",
            r"t.csv:2: class 'car' named twice \(first on line 1\)",
            id="twice",
        ),
        pytest.param("car,high\n", r"t.csv:1: threshold 'high' is not a number", id="not-a-number"),
        pytest.param("# c\n\ncar,nan\n", r"t.csv:3: threshold 'nan' is not finite", id="nan"),
        pytest.param("car,0_5\n", r"t.csv:1: threshold '0_5' is not a number", id="underscore"),
        pytest.param(
            "car,\u0661\n", r"t.csv:1: threshold '\u0661' is not a number", id="arabic-digit"
        ),
        pytest.param("car,0x1\n", r"t.csv:1: threshold '0x1' is not a number", id="hex"),
        pytest.param("car\n", r"t.csv:1: expected class,threshold, got 1 field", id="one-field"),
        pytest.param(",0.5\n", r"t.csv:1: empty class name", id="empty-name"),
    ],
)
def test_bad_thresholds_file_names_path_and_line(tmp_path: Path, text: str, message: str) -> None:
    """Every bad line is reported as path:line."""
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(AnnotationError, match=message):
        read_score_thresholds(path)

"""The matcher: one rule per test, each with a hand-made case."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocmatch.core.iou import iou_matrix
from vocmatch.core.match import match_class, pred_order


def test_two_predictions_on_one_object_give_one_tp_and_one_fp() -> None:
    """The higher-scored prediction takes the object; the other is a false positive."""
    iou = iou_matrix([[0, 0, 10, 10]], [[0, 0, 10, 9], [0, 0, 10, 10]])
    m = match_class(iou, [0.6, 0.9], [0.5])
    assert m.pred_matched.tolist() == [[True, False]] or m.pred_matched.tolist() == [[False, True]]
    assert m.pred_matched[0].tolist() == [False, True]
    assert m.gt_matched.tolist() == [[True]]


def test_equal_scores_keep_file_order() -> None:
    """Tied scores are broken by file order (stable sort), never by chance."""
    assert pred_order([0.5, 0.5, 0.9, 0.5]).tolist() == [2, 0, 1, 3]
    iou = iou_matrix([[0, 0, 10, 10]], [[0, 0, 10, 9], [0, 0, 10, 10]])
    m = match_class(iou, [0.5, 0.5], [0.5])
    assert m.pred_matched[0].tolist() == [True, False]


@pytest.mark.parametrize(
    ("strict", "matched"),
    [pytest.param(False, True, id="inclusive"), pytest.param(True, False, id="strict")],
)
def test_threshold_is_inclusive_unless_strict(strict: bool, matched: bool) -> None:
    """IoU exactly 0.5 matches at 0.5 (>=); the devkit's strict > does not match it."""
    iou = iou_matrix([[0, 0, 2, 1]], [[0, 0, 1, 1]])
    assert iou[0, 0] == 0.5
    for rule in ("unmatched", "devkit"):
        m = match_class(iou, [0.9], [0.5], rule=rule, strict=strict)  # type: ignore[arg-type]
        assert bool(m.pred_matched[0, 0]) is matched


def test_unmatched_rule_takes_the_next_best_free_object() -> None:
    """COCO rule: when the best object is taken, the best still-free one is used."""
    # Object 0 is the best for both predictions; object 1 overlaps prediction 1 at 0.6.
    iou = np.array([[0.9, 0.8], [0.1, 0.6]])
    m = match_class(iou, [0.9, 0.8], [0.5], rule="unmatched")
    assert m.pred_matched[0].tolist() == [True, True]
    assert m.pred_gt[0].tolist() == [0, 1]


def test_devkit_rule_makes_a_prediction_on_a_taken_object_a_false_positive() -> None:
    """VOC devkit rule: the best object even if taken, then FP; object 1 stays missed."""
    iou = np.array([[0.9, 0.8], [0.1, 0.6]])
    m = match_class(iou, [0.9, 0.8], [0.5], rule="devkit")
    assert m.pred_matched[0].tolist() == [True, False]
    assert m.gt_matched[0].tolist() == [True, False]


def test_difficult_object_is_ignored_both_ways() -> None:
    """A prediction on an ignored object is neither TP nor FP; an unmatched one is no FN."""
    iou = np.array([[0.8, 0.0], [0.0, 0.0]])
    m = match_class(iou, [0.9, 0.8], [0.5], gt_ignore=[True, True])
    assert m.pred_matched[0].tolist() == [True, False]
    assert m.pred_ignored[0].tolist() == [True, False]


def test_an_object_that_counts_is_preferred_over_an_ignored_one() -> None:
    """pycocotools prefers a counting object at or above the threshold to an ignored one."""
    iou = np.array([[0.9], [0.6]])
    m = match_class(iou, [0.9], [0.5], gt_ignore=[True, False])
    assert m.pred_gt[0].tolist() == [1]
    assert m.pred_ignored[0].tolist() == [False]


def test_crowd_region_absorbs_any_number_of_predictions() -> None:
    """A crowd region matches every prediction inside it; all of them are ignored."""
    iou = np.array([[1.0, 1.0, 1.0]])
    m = match_class(iou, [0.9, 0.8, 0.7], [0.5], gt_ignore=[True], gt_crowd=[True])
    assert m.pred_matched[0].tolist() == [True, True, True]
    assert m.pred_ignored[0].tolist() == [True, True, True]


def test_equal_iou_goes_to_the_later_object_as_in_pycocotools() -> None:
    """Among objects of equal IoU, pycocotools' loop keeps the last one it saw."""
    m = match_class(np.array([[0.7], [0.7]]), [0.9], [0.5])
    assert m.pred_gt[0].tolist() == [1]


def test_unscored_predictions_pair_highest_iou_first() -> None:
    """Without scores the pair of largest IoU is matched first across the image-class."""
    # Prediction B's best object is 0 (taken by A at 0.9); pair-greedy gives object 1 to C
    # (0.5) rather than to B (0.3).
    iou = np.array([[0.9, 0.88, 0.0], [0.0, 0.3, 0.5]])
    m = match_class(iou, None, [0.25])
    assert m.pred_matched[0].tolist() == [True, False, True]
    assert m.pred_gt[0][[0, 2]].tolist() == [0, 1]


def test_each_threshold_is_matched_on_its_own() -> None:
    """At a higher threshold a looser pair stops matching; the result is per threshold."""
    iou = np.array([[0.8, 0.0], [0.0, 0.6]])
    m = match_class(iou, [0.9, 0.8], [0.5, 0.75, 0.95])
    assert m.pred_matched.tolist() == [[True, True], [True, False], [False, False]]


@st.composite
def scenes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 6))
    m = draw(st.integers(0, 8))
    iou = np.array(
        draw(st.lists(st.floats(0, 1), min_size=n * m, max_size=n * m)), dtype=np.float64
    ).reshape(n, m)
    scores = np.array(draw(st.lists(st.floats(0, 1), min_size=m, max_size=m, unique=True)))
    ignore = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return iou, scores, ignore


@given(scenes(), st.sampled_from(["unmatched", "devkit"]))
def test_each_object_is_matched_at_most_once(
    scene: tuple[np.ndarray, np.ndarray, np.ndarray], rule: str
) -> None:
    """Without crowd regions no object takes two predictions that count."""
    iou, scores, ignore = scene
    m = match_class(iou, scores, [0.3, 0.5, 0.9], gt_ignore=ignore, rule=rule)  # type: ignore[arg-type]
    for t in range(3):
        counted = m.pred_gt[t][m.pred_matched[t] & ~m.pred_ignored[t]]
        assert len(set(counted.tolist())) == counted.size


@given(scenes(), st.randoms(use_true_random=False), st.sampled_from(["unmatched", "devkit"]))
def test_permuting_predictions_with_distinct_scores_changes_nothing(
    scene: tuple[np.ndarray, np.ndarray, np.ndarray], rnd: object, rule: str
) -> None:
    """The match depends on scores, not on the order predictions are listed in."""
    iou, scores, ignore = scene
    permutation = np.arange(scores.size)
    rnd.shuffle(permutation)  # type: ignore[attr-defined]
    a = match_class(iou, scores, [0.5], gt_ignore=ignore, rule=rule)  # type: ignore[arg-type]
    b = match_class(iou[:, permutation], scores[permutation], [0.5], gt_ignore=ignore, rule=rule)  # type: ignore[arg-type]
    assert a.pred_matched[:, permutation].tolist() == b.pred_matched.tolist()
    assert a.gt_matched.tolist() == b.gt_matched.tolist()

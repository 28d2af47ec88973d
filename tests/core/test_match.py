"""The matcher: one rule per test, each with a hand-made case."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference import match_class as reference_match_class
from vocmatch.core import match
from vocmatch.core.iou import iou_matrix
from vocmatch.core.match import (
    MatchRule,
    RankedMatcher,
    match_class,
    match_unscored_rows,
    pred_order,
)


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


def chain(n: int) -> np.ndarray:
    """An ``(n, n)`` IoU matrix whose pairs, highest first, form one chain: ``(g0, p0)``,
    ``(g1, p0)``, ``(g1, p1)``, ``(g2, p1)``, ...: each pair waits for the one before it."""
    iou = np.zeros((n, n))
    values = iter(np.linspace(0.99, 0.6, 2 * n - 1).tolist())
    for i in range(n):
        if i:
            iou[i, i - 1] = next(values)
        iou[i, i] = next(values)
    return iou


def test_unscored_pairing_follows_a_long_chain_one_pair_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chain takes one pair a round: the rest goes to the plain loop, with the same result
    as pairing one by one (each ground truth takes the prediction of its own column)."""
    calls: list[int] = []
    loop = match._pair_loop

    def counted_loop(positions: np.ndarray, *args: np.ndarray) -> np.ndarray:
        calls.append(positions.size)
        return loop(positions, *args)

    monkeypatch.setattr(match, "_pair_loop", counted_loop)
    m = match_class(chain(20), None, [0.5])
    assert calls == [37]  # 39 pairs; the first round took (g0, p0) and let (g1, p0) go
    assert m.pred_matched.tolist() == [[True] * 20]
    assert m.pred_gt.tolist() == [list(range(20))]
    assert m.gt_matched.tolist() == [[True] * 20]


@given(
    st.integers(11, 30),
    st.randoms(use_true_random=False),
    st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_unscored_chains_with_crowd_regions_match_the_reference(
    n: int, rnd: object, crowd_flags: list[bool]
) -> None:
    """Chains shuffled on both sides, with crowd (ignored) regions, through the plain loop:
    the same matching as the reference's pair-by-pair loop."""
    gt_order = np.arange(n)
    pred_order_ = np.arange(n)
    rnd.shuffle(gt_order)  # type: ignore[attr-defined]
    rnd.shuffle(pred_order_)  # type: ignore[attr-defined]
    iou = chain(n)[gt_order][:, pred_order_]
    crowd = np.array(crowd_flags[:n])
    thresholds = [0.5, 0.7, 0.9]
    got = match_class(iou, None, thresholds, gt_ignore=crowd, gt_crowd=crowd)
    want = reference_match_class(iou, None, thresholds, gt_ignore=crowd, gt_crowd=crowd)
    assert got.pred_matched.tolist() == want.pred_matched.tolist()
    assert (got.pred_gt * got.pred_matched).tolist() == (want.pred_gt * want.pred_matched).tolist()
    assert got.pred_ignored.tolist() == want.pred_ignored.tolist()
    assert got.gt_matched.tolist() == want.gt_matched.tolist()


@pytest.mark.parametrize(
    ("strict", "expected"),
    [
        pytest.param(False, [(0, 0, 0, 0.5), (0, 1, 1, 0.5)], id="inclusive-matches"),
        pytest.param(True, [], id="strict-does-not"),
    ],
)
def test_a_block_matches_an_iou_exactly_at_the_lowest_threshold_unless_strict(
    strict: bool, expected: list[tuple[int, int, int, float]]
) -> None:
    """A large image-class's block: the lowest threshold itself counts, as ``IoU >= t``."""
    no = np.zeros(2, dtype=bool)
    matcher = RankedMatcher(2, no, no, np.array([0.5, 0.75]), strict)
    matcher.add_block(np.array([[0.5, 0.25], [0.125, 0.5]]), gt_start=0, pred_start=0)
    hits = matcher.hits()
    found = zip(
        hits.level.tolist(), hits.pred.tolist(), hits.gt.tolist(), hits.iou.tolist(), strict=True
    )
    assert sorted(found) == expected


@pytest.mark.parametrize(
    ("strict", "expected"),
    [
        pytest.param(False, [(0, 0, 0.5), (1, 1, 0.75)], id="inclusive-pairs-both"),
        pytest.param(True, [(1, 1, 0.75)], id="strict-leaves-the-one-at-0.5"),
    ],
)
def test_unscored_rows_of_a_large_class_honour_a_strict_threshold(
    strict: bool, expected: list[tuple[int, int, float]]
) -> None:
    """Pairing by rows (a class too large to list its pairs): ``IoU > t`` when strict."""
    iou = np.array([[0.5, 0.25], [0.25, 0.75]])
    no = np.zeros(2, dtype=bool)
    hits = match_unscored_rows(
        np.array([0, 1]), np.array([0.5, 0.75]), lambda g: iou[g], 2, no, no,
        np.array([0.5]), strict,
    )  # fmt: skip
    assert (
        sorted(zip(hits.gt.tolist(), hits.pred.tolist(), hits.iou.tolist(), strict=True))
        == expected
    )
    assert hits.level.tolist() == [0] * len(expected)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            {"gt_ignore": [False, True]},
            "Expected `gt_ignore` to have length 3, got 2",
            id="ignore",
        ),
        pytest.param(
            {"gt_crowd": [False] * 4}, "Expected `gt_crowd` to have length 3, got 4", id="crowd"
        ),
    ],
)
def test_match_class_refuses_flags_of_the_wrong_length(
    flags: dict[str, list[bool]], message: str
) -> None:
    """One flag per ground truth, or a ValueError naming the argument and both lengths."""
    with pytest.raises(ValueError, match=message):
        match_class(np.zeros((3, 2)), [0.5, 0.4], [0.5], **flags)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param("unmatched", 1, id="unmatched-takes-the-later"),
        pytest.param("unmatched-first", 0, id="unmatched-first-takes-the-earlier"),
    ],
)
def test_equal_iou_goes_by_the_rule(rule: MatchRule, expected: int) -> None:
    """Among objects of equal IoU: the later under pycocotools' rule, the earlier under the
    ultralytics package's (``argmax``), as pairs and as a large image-class's block."""
    m = match_class(np.array([[0.7], [0.7]]), [0.9], [0.5], rule=rule)
    assert m.pred_gt[0].tolist() == [expected]
    no = np.zeros(2, dtype=bool)
    matcher = RankedMatcher(
        2, no, no, np.array([0.5]), False, first_on_ties=rule == "unmatched-first"
    )
    matcher.add_block(np.array([[0.7, 0.7], [0.7, 0.6]]), gt_start=0, pred_start=0)
    hits = matcher.hits()
    assert sorted(zip(hits.pred.tolist(), hits.gt.tolist(), strict=True)) == [
        (0, expected),
        (1, 1 - expected),
    ]

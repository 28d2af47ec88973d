"""The matcher's edge cases that ``bench/mutate.py`` found untested in vocmatch.core.match:
thresholds given in any order or none at all, IoU 0 at a threshold of 0, and when the
unscored pairing hands its pairs to the plain loop."""

from __future__ import annotations

import numpy as np
import pytest

from vocmatch.core import match
from vocmatch.core.match import (
    Hits,
    RankedMatcher,
    match_class,
    match_devkit,
    match_unscored_rows,
)

NO = np.zeros(2, dtype=bool)


def pairs(hits: Hits) -> list[tuple[int, int, int, float]]:
    """The matched pairs as (threshold, prediction, ground truth, IoU), sorted."""
    return sorted(
        zip(
            hits.level.tolist(),
            hits.pred.tolist(),
            hits.gt.tolist(),
            hits.iou.tolist(),
            strict=True,
        )
    )


@pytest.mark.parametrize(
    ("scores", "rule"),
    [
        pytest.param([0.9], "unmatched", id="unmatched"),
        pytest.param([0.9], "devkit", id="devkit"),
        pytest.param(None, "unmatched", id="unscored"),
    ],
)
def test_thresholds_in_descending_order_match_at_each_one(
    scores: list[float] | None, rule: str
) -> None:
    """Thresholds need not be sorted: an IoU of 0.6 matches at 0.5 though 0.75 comes first."""
    m = match_class([[0.6]], scores, [0.75, 0.5], rule=rule)  # type: ignore[arg-type]
    assert m.pred_matched.tolist() == [[False], [True]]
    assert m.gt_matched.tolist() == [[False], [True]]


def test_a_block_uses_the_lowest_threshold_not_the_first() -> None:
    """A large image-class's block, thresholds (0.75, 0.5): an IoU of 0.6 matches at 0.5."""
    matcher = RankedMatcher(2, NO, NO, np.array([0.75, 0.5]), False)
    matcher.add_block(np.array([[0.6], [0.25]]), gt_start=0, pred_start=0)
    assert pairs(matcher.hits()) == [(1, 0, 0, 0.6)]


@pytest.mark.parametrize(
    "scores",
    [pytest.param([0.9, 0.8], id="scored"), pytest.param(None, id="unscored")],
)
@pytest.mark.parametrize("rule", ["unmatched", "devkit"])
def test_no_thresholds_give_empty_matchings(scores: list[float] | None, rule: str) -> None:
    """With no thresholds the matching has no rows: shapes (0, M) and (0, N)."""
    m = match_class([[0.9, 0.5], [0.5, 0.9]], scores, [], rule=rule)  # type: ignore[arg-type]
    assert m.pred_matched.shape == (0, 2)
    assert m.pred_gt.shape == (0, 2)
    assert m.pred_ignored.shape == (0, 2)
    assert m.gt_matched.shape == (0, 2)


def test_the_large_class_paths_match_nothing_without_thresholds() -> None:
    """Pairs, blocks and rows of a large image-class give no pairs when there are no
    thresholds."""
    none = np.zeros(0)
    matcher = RankedMatcher(2, NO, NO, none, False)
    matcher.add(np.array([0, 1]), np.array([0, 1]), np.array([0.9, 0.8]), np.array([0, 1]))
    matcher.add_block(np.array([[0.9], [0.8]]), gt_start=0, pred_start=0)
    assert pairs(matcher.hits()) == []
    rows = match_unscored_rows(
        np.array([0, 1]), np.array([0.9, 0.8]), lambda g: np.array([0.9, 0.8]), 2, NO, NO, none,
        False,
    )  # fmt: skip
    assert pairs(rows) == []


def test_a_block_gives_an_iou_of_0_at_threshold_0_to_the_free_object() -> None:
    """At threshold 0 an IoU of 0 matches: the second prediction takes the free object 0
    (IoU 0), not object 1, which the first prediction took."""
    matcher = RankedMatcher(2, NO, NO, np.array([0.0]), False)
    matcher.add_block(np.array([[0.0, 0.0], [0.5, 0.0]]), gt_start=0, pred_start=0)
    assert pairs(matcher.hits()) == [(0, 0, 1, 0.5), (0, 1, 0, 0.0)]


def test_rows_give_an_iou_of_0_at_threshold_0_to_the_free_prediction() -> None:
    """Pairing by rows at threshold 0: object 1's best prediction is taken, so its row is
    read once and it takes the free prediction 1 at IoU 0."""
    iou = np.array([[0.5, 0.0], [0.25, 0.0]])
    read: list[int] = []

    def row(g: int) -> np.ndarray:
        read.append(g)
        assert len(read) < 5, "a row read again and again"
        values: np.ndarray = iou[g]
        return values

    hits = match_unscored_rows(
        np.array([0, 0]), np.array([0.5, 0.25]), row, 2, NO, NO, np.array([0.0]), False
    )
    assert pairs(hits) == [(0, 0, 0, 0.5), (0, 1, 1, 0.0)]
    assert read == [1]


def loop_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes :func:`match._pair_loop` is called with, from now on."""
    calls: list[int] = []
    loop = match._pair_loop

    def counted_loop(positions: np.ndarray, *args: np.ndarray) -> np.ndarray:
        calls.append(positions.size)
        return loop(positions, *args)

    monkeypatch.setattr(match, "_pair_loop", counted_loop)
    return calls


def test_a_round_that_takes_a_large_share_keeps_pairing_by_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three pairs in a chain: the first round removes two of them (more than a tenth), so
    the second round takes the last one and the plain loop is never used."""
    calls = loop_calls(monkeypatch)
    m = match_class([[0.9, 0.0], [0.8, 0.7]], None, [0.5])
    assert m.pred_gt.tolist() == [[0, 1]]
    assert m.gt_matched.tolist() == [[True, True]]
    assert calls == []


def test_a_round_that_takes_exactly_a_tenth_keeps_pairing_by_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty pairs, each round removing two (exactly a tenth of the first twenty): the
    hand-over to the plain loop needs less than a tenth, so it never happens."""
    calls = loop_calls(monkeypatch)
    iou = np.zeros((11, 10))
    values = iter(np.linspace(0.99, 0.6, 19).tolist())
    for i in range(10):
        if i:
            iou[i, i - 1] = next(values)
        iou[i, i] = next(values)
    iou[10, 9] = 0.55  # waits for (9, 9), which takes prediction 9 from it
    m = match_class(iou, None, [0.5])
    assert m.pred_gt.tolist() == [list(range(10))]
    assert m.gt_matched.tolist() == [[True] * 10 + [False]]
    assert calls == []


def test_the_plain_loop_takes_pairs_in_order_and_a_crowd_region_stays() -> None:
    """The plain loop takes each pair whose boxes are both free, in order; a crowd region
    (object 0) stays free for its next prediction, an object that is not (1) does not, and
    boxes already taken (object 2, prediction 5) are passed over."""
    gt = np.array([0, 0, 1, 1, 2, 3])
    pred = np.array([0, 1, 2, 3, 4, 5])
    crowd = np.array([True, True, False, False, False, False])  # of each pair's object
    gt_used = np.array([False, False, True, False])
    pred_used = np.array([False, False, False, False, False, True])
    chosen = match._pair_loop(np.arange(6), gt, pred, crowd, gt_used, pred_used)
    assert chosen.tolist() == [0, 1, 2]
    assert gt_used.tolist() == [False, False, True, False]  # the caller's flags are kept


@pytest.mark.parametrize(
    "shape", [pytest.param((0, 2), id="no-ground-truth"), pytest.param((2, 0), id="no-predictions")]
)
@pytest.mark.parametrize(
    "scores", [pytest.param(None, id="unscored"), pytest.param("scored", id="scored")]
)
@pytest.mark.parametrize("rule", ["unmatched", "devkit"])
def test_an_empty_side_matches_nothing(
    shape: tuple[int, int], scores: str | None, rule: str
) -> None:
    """No ground truth or no predictions: every flag False, with shapes (T, M) and (T, N)."""
    n_gt, n_pred = shape
    m = match_class(
        np.zeros(shape),
        None if scores is None else [0.5] * n_pred,
        [0.5, 0.75],
        rule=rule,  # type: ignore[arg-type]
    )
    assert m.pred_matched.tolist() == [[False] * n_pred] * 2
    assert m.pred_ignored.tolist() == [[False] * n_pred] * 2
    assert m.gt_matched.tolist() == [[False] * n_gt] * 2


@pytest.mark.parametrize(
    ("iou", "expected"),
    [
        pytest.param(np.zeros((0, 2)), [], id="no-ground-truth"),
        pytest.param(np.array([[0.6, 0.9]]), [(0, 0, 0, 0.6)], id="one-ground-truth"),
    ],
)
def test_a_block_of_no_or_one_ground_truth(
    iou: np.ndarray, expected: list[tuple[int, int, int, float]]
) -> None:
    """A block without ground truth matches nothing; with one, the first prediction in
    ranking order takes it (IoU 0.6) and the second (IoU 0.9) finds it taken."""
    one = np.zeros(1, dtype=bool)
    matcher = RankedMatcher(1, one, one, np.array([0.5]), False)
    matcher.add_block(iou, gt_start=0, pred_start=0)
    assert pairs(matcher.hits()) == expected


def test_devkit_passes_over_a_prediction_of_an_image_class_without_ground_truth() -> None:
    """``best_gt`` -1 (no ground truth in the image-class) never matches, not even at
    threshold 0; the other prediction takes object 0 at both thresholds it passes."""
    hits = match_devkit(
        np.array([-1, 0]), np.array([0.0, 0.9]), np.array([0, 0]), np.array([False]),
        np.array([0.0, 0.5]), False,
    )  # fmt: skip
    assert pairs(hits) == [(0, 1, 0, 0.9), (1, 1, 0, 0.9)]


@pytest.mark.parametrize(
    ("strict", "expected"),
    [
        pytest.param(False, [(0, 0, 0, 0.5)], id="inclusive-matches"),
        pytest.param(True, [], id="strict-does-not"),
    ],
)
def test_rows_pair_an_ignored_object_at_the_threshold_only_when_inclusive(
    strict: bool, expected: list[tuple[int, int, int, float]]
) -> None:
    """Pairing by rows, an ignored object at IoU exactly 0.5: matched at 0.5 unless strict."""
    ignored = np.array([True])
    hits = match_unscored_rows(
        np.array([0]), np.array([0.5]), lambda g: np.array([0.5]), 1, ignored,
        np.zeros(1, dtype=bool), np.array([0.5]), strict,
    )  # fmt: skip
    assert pairs(hits) == expected

"""The per-image table's rows: the worst images, found without ordering the rest."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from vocmatch.evaluation.scoring import evaluate_directories
from vocmatch.render.terminal import worst_first, worst_images

DEMO = evaluate_directories(FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred")


@pytest.mark.parametrize(
    "count",
    [
        pytest.param(0, id="all"),
        pytest.param(1, id="one"),
        pytest.param(3, id="some"),
        pytest.param(5, id="all-but-one"),
        pytest.param(6, id="exactly-all"),
        pytest.param(20, id="more-than-all"),
        pytest.param(-1, id="negative-as-a-slice"),
    ],
)
def test_worst_images_are_the_first_of_worst_first(count: int) -> None:
    """The ``count`` worst images are those worst_first puts first, in its order."""
    expected = worst_first(DEMO.images)
    assert worst_images(DEMO.images, count) == (expected if count == 0 else expected[:count])


def test_ties_in_errors_are_ordered_by_missed_then_key() -> None:
    """Images with as many errors are ordered by FN (most first), then by key, as in
    worst_first, among the few kept too."""
    assert [i.key for i in worst_images(DEMO.images, 4)] == [
        "street_01",
        "street_05",
        "street_03",
        "street_04",
    ]

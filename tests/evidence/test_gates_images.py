"""The per-image checks of the gates: made when read, so a run without limits makes none,
and the same checks, in the same order, as one made per image."""

from __future__ import annotations

import pytest

import vocmatch.evidence.gates as gates
import vocmatch.evidence.image_checks as image_checks
from tests.conftest import FIXTURES
from vocmatch.evaluation.scoring import evaluate_directories
from vocmatch.evidence.gates import ImageCheck, check_gates

DEMO = evaluate_directories(FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred")


def counted_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the key of every ImageCheck the gates make from now on."""
    made: list[str] = []

    def recorded(key: str, fp: int, fn: int, max_fp: int | None, max_fn: int | None) -> ImageCheck:
        made.append(key)
        return ImageCheck(key, fp, fn, max_fp, max_fn)

    monkeypatch.setattr(image_checks, "ImageCheck", recorded)
    return made


def test_no_limit_makes_no_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --max-fp or --max-fn, checking and judging the gates makes no per-image
    check: the report passes and names no image."""
    made = counted_checks(monkeypatch)
    report = check_gates(DEMO)
    assert report.passed
    assert report.failed_images == ()
    assert made == []


@pytest.mark.parametrize(
    ("max_fp", "max_fn", "failing"),
    [
        pytest.param(1, None, ["street_01"], id="fp"),
        pytest.param(None, 1, ["street_05"], id="fn"),
        pytest.param(2, 2, [], id="all-within"),
    ],
)
def test_limits_make_checks_for_the_failing_images_alone(
    monkeypatch: pytest.MonkeyPatch, max_fp: int | None, max_fn: int | None, failing: list[str]
) -> None:
    """With a limit, judging the report makes checks only for the images over it."""
    made = counted_checks(monkeypatch)
    report = check_gates(DEMO, max_fp=max_fp, max_fn=max_fn)
    assert report.passed is (not failing)
    assert [i.key for i in report.failed_images] == failing
    assert sorted(set(made)) == failing


@pytest.mark.parametrize(
    ("max_fp", "max_fn"),
    [
        pytest.param(None, None, id="no-limits"),
        pytest.param(0, None, id="fp"),
        pytest.param(None, 0, id="fn"),
        pytest.param(1, 1, id="both"),
    ],
)
def test_checks_read_as_a_tuple_made_per_image(max_fp: int | None, max_fn: int | None) -> None:
    """The checks read (iterated, indexed, sliced, compared, hashed) as the tuple of one
    check per image, and the failed ones as those of that tuple that do not pass."""
    made = tuple(ImageCheck(i.key, i.fp, i.fn, max_fp, max_fn) for i in DEMO.images)
    report = check_gates(DEMO, max_fp=max_fp, max_fn=max_fn)
    assert len(report.images) == len(made) == len(DEMO.images)
    assert tuple(report.images) == made
    assert report.images == made
    assert made == report.images
    assert report.images != made[1:]
    assert hash(report.images) == hash(made)
    assert report.images[0] == made[0]
    assert report.images[-1] == made[-1]
    assert report.images[1:3] == made[1:3]
    assert report.failed_images == tuple(c for c in made if not c.passed)
    assert report == gates.GateReport((), made, max_fp, max_fn)

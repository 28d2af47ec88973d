"""Each image's result made from a part's records as the part comes back
(:mod:`vocmatch.evaluation.part_images`): joined in key order, the results the evaluation
of the joined records makes, bit for bit, under every protocol, score threshold and reading
of the scores; where the parts' do not serve (no score at all, an image lost), none."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vocmatch.evaluation.part_images as part_images
import vocmatch.readers.workers as workers
import vocmatch.run.in_parts as in_parts
from tests.bench_scripts import changed_copy, unscored
from tests.conftest import run_cli
from vocmatch.core.protocol import PROTOCOL_NAMES, protocol
from vocmatch.evaluation.from_records import evaluation_of
from vocmatch.evaluation.part_images import (
    PartImages,
    joined_image_results,
    part_image_results,
)
from vocmatch.evaluation.result import ImageResult
from vocmatch.evaluation.shards.parts import (
    Part,
    PartListing,
    PartOptions,
    PartRecords,
    gathered_parts,
    part_records,
    run_parts,
)
from vocmatch.evaluation.thresholds import ScoreThresholds

R = TypeVar("R")


class _HereParts:
    """Tasks run one after the other in this process (the parts' records as a worker
    makes them, without starting one)."""

    def workers(self) -> int:
        return 2

    def results(
        self, task: Callable[[Part, PartOptions], R], parts: Sequence[Part], options: PartOptions
    ) -> Iterator[tuple[Part, R]]:
        for part in parts:
            yield part, task(part, options)


def _scores(pred: Path, change: Callable[[str], str]) -> None:
    for path in sorted(pred.glob("*.xml")):
        path.write_text(change(path.read_text()))


def _tied(pred: Path) -> None:
    """Scores of one decimal: many equal scores."""
    _scores(pred, lambda t: re.sub(r"<score>([^<]*)</score>",
                                   lambda m: f"<score>{float(m.group(1)):.1f}</score>", t))  # fmt: skip


def _both(
    folder: Path, name: str, parts: int, thresholds: ScoreThresholds | None = None
) -> tuple[list[PartImages], list[ImageResult], Any]:
    """The parts' image results, and those of the evaluation of their joined records."""
    conv = protocol(name)
    listing = PartListing.of(folder / "gt", folder / "pred")
    options = PartOptions(conv, score_thresholds=thresholds)
    results: list[PartRecords] = run_parts(
        listing, _HereParts(), part_records, options, parts=parts, by_ranges=True
    )
    made = [part_image_results(r.records, conv) for r in results]
    records = gathered_parts(listing, results, options).records
    expected = evaluation_of(records, conv, score_thresholds=thresholds).images
    return made, list(expected), records


def _same(got: Sequence[ImageResult], expected: Sequence[ImageResult]) -> None:
    """Equal, field by field, and their floats' bits (``repr``: -0.0 and NaN apart)."""
    assert got == expected
    assert [repr(r) for r in got] == [repr(r) for r in expected]


CHANGES = [
    pytest.param(None, id="as-generated"),
    pytest.param(unscored(3), id="some-unscored"),
    pytest.param(_tied, id="tied-scores"),
]


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("name", PROTOCOL_NAMES)
def test_the_parts_results_are_the_joined_records(
    generated: Path, tmp_path: Path, name: str, change: Callable[[Path], None] | None
) -> None:
    folder = changed_copy(generated, tmp_path, change)
    made, expected, records = _both(folder, name, parts=5)
    joined = joined_image_results(made, records)
    assert joined is not None
    _same(joined, expected)


@pytest.mark.parametrize("name", ["coco", "voc12", "ultralytics"])
def test_under_a_score_threshold(generated: Path, name: str) -> None:
    thresholds = ScoreThresholds.of(0.4, {"class01": 0.7})
    made, expected, records = _both(generated, name, parts=4, thresholds=thresholds)
    joined = joined_image_results(made, records)
    assert joined is not None
    _same(joined, expected)


@settings(max_examples=15, deadline=None)
@given(parts=st.integers(1, 12), data=st.data())
def test_any_parts_in_any_order(generated: Path, parts: int, data: st.DataObject) -> None:
    """However many parts, whatever order they came back in."""
    made, expected, records = _both(generated, "coco", parts)
    joined = joined_image_results(data.draw(st.permutations(made)), records)
    assert joined is not None
    _same(joined, expected)


def test_no_score_at_all_is_made_from_the_joined_records(generated: Path, tmp_path: Path) -> None:
    """No prediction scored: the evaluation reads the counts of no score, not the parts'."""
    folder = changed_copy(generated, tmp_path, unscored(1))
    made, _, records = _both(folder, "voc12", parts=3)
    assert records.unscored is not None
    assert joined_image_results(made, records) is None


def test_a_lost_part_gives_none(generated: Path) -> None:
    made, _, records = _both(generated, "coco", parts=4)
    assert joined_image_results(made[:-1], records) is None
    assert joined_image_results([*made, made[0]], records) is None


def test_a_run_in_parts_uses_the_parts_results(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--jobs 2`` makes each part's results as it comes back and reports as ``--jobs 1``."""
    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    monkeypatch.setattr(in_parts, "THREADED_FILES", 0)
    used: list[bool] = []
    joined = part_images.joined_image_results

    def spy(parts: Sequence[PartImages], records: Any) -> list[ImageResult] | None:
        images = joined(parts, records)
        used.append(images is not None)
        return images

    monkeypatch.setattr(part_images, "joined_image_results", spy)
    gt, pred = str(generated / "gt"), str(generated / "pred")
    for name in ("coco", "voc12"):
        single = run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "1")
        assert single[0] == 0
        assert run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "2") == single
    assert used == [True, True]

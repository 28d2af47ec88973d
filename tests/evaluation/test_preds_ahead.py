"""The predictions of a run's parts put end to end as the parts come back
(:mod:`vocmatch.evaluation.preds_ahead`): the join takes them in place, and its records are
those of the join that copies every part's, to the bit, under every protocol; parts out of
key order, parts other than those added and parts of other dtypes are copied as before; a
local run in parts takes them."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Sequence
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vocmatch.readers.workers as workers
import vocmatch.run.in_parts as in_parts
from tests.bench_scripts import bench
from tests.conftest import run_cli
from tests.evaluation.test_fastaccumulate import assert_same_bits
from vocmatch.core.protocol import PROTOCOL_NAMES, protocol
from vocmatch.evaluation.preds_ahead import PredsAhead
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.shards.parts import (
    PartListing,
    PartOptions,
    key_ranges,
    part_records,
)


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """90 generated images, eight predictions each."""
    folder = tmp_path_factory.mktemp("small_set")
    bench("generate").generate(folder, 90, pred_per_image=8)
    return folder


def _parts(folder: Path, name: str, parts: int) -> list[MatchRecords]:
    """The parts' records as a worker sends them back (pickled and unpickled)."""
    listing = PartListing.of(folder / "gt", folder / "pred")
    options = PartOptions(protocol(name))
    shares = key_ranges(listing.gt.files, listing.pred.files, parts)
    made = [part_records(part, options) for part in shares]
    return [pickle.loads(ForkingPickler.dumps(p)).records for p in made]


def _joined(name: str, parts: Sequence[MatchRecords], ahead: PredsAhead | None) -> MatchRecords:
    return MatchRecords.taken_in_key_order(list(parts), protocol(name), ahead)


def _ahead(parts: Sequence[MatchRecords]) -> PredsAhead:
    ahead = PredsAhead()
    for part in parts:
        ahead.add(part)
    return ahead


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
@pytest.mark.parametrize("count", [2, 5])
def test_the_parts_put_end_to_end_join_to_the_same_records(
    small_set: Path, name: str, count: int
) -> None:
    parts = _parts(small_set, name, count)
    ahead = _ahead(parts)
    taken: list[Any] = []
    columns_of = ahead.columns_of

    def spy(joined: Sequence[MatchRecords]) -> Any:
        taken.append(columns_of(joined))
        return taken[-1]

    ahead.columns_of = spy  # type: ignore[method-assign]
    joined = _joined(name, parts, ahead)
    assert_same_bits(joined, _joined(name, parts, None))
    assert taken[0] is not None
    assert taken[0].ranked is not None
    assert taken[0].cells is not None
    assert joined.ranked is not None


@pytest.mark.parametrize("field", ["ranked", "gt_cells"])
def test_a_part_without_its_rankings_or_cells_joins_without_them(
    small_set: Path, field: str
) -> None:
    """As the join does: the joined records are then ranked when accumulated, and hold no
    cells (as a state file of a version before them)."""
    parts = _parts(small_set, "coco", 3)
    parts[1] = dataclasses.replace(parts[1], **{field: None})
    joined = _joined("coco", parts, _ahead(parts))
    assert_same_bits(joined, _joined("coco", parts, None))
    assert getattr(joined, field) is None


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("reversed", id="parts-out-of-key-order"),
        pytest.param("other-part", id="a-part-not-added"),
        pytest.param("lost", id="a-part-added-not-joined"),
        pytest.param("float32", id="a-part-of-another-dtype"),
    ],
)
def test_other_parts_are_copied_as_before(small_set: Path, change: str) -> None:
    parts = _parts(small_set, "coco", 3)
    added = list(parts)
    if change == "reversed":
        added = parts = parts[::-1]
    elif change == "other-part":
        parts = [*parts[:2], _parts(small_set, "coco", 3)[2]]
    elif change == "lost":
        added = [*parts, parts[0]]
    else:
        p = parts[1].preds
        added[1] = dataclasses.replace(
            parts[1], preds=dataclasses.replace(p, score=p.score.astype(np.float32))
        )
    ahead = _ahead(added)
    assert_same_bits(_joined("coco", parts, ahead), _joined("coco", parts, None))
    # Let go either way.
    assert ahead.columns_of(parts) is None


def test_a_local_run_in_parts_joins_the_predictions_put_end_to_end(
    small_set: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--jobs 2`` puts each part's predictions end to end as it comes back, the join
    takes them, and the report is that of ``--jobs 1``."""
    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    monkeypatch.setattr(in_parts, "THREADED_FILES", 0)
    taken: list[bool] = []
    columns_of = PredsAhead.columns_of

    def spy(self: PredsAhead, parts: Sequence[MatchRecords]) -> Any:
        columns = columns_of(self, parts)
        taken.append(columns is not None)
        return columns

    monkeypatch.setattr(PredsAhead, "columns_of", spy)
    gt, pred = str(small_set / "gt"), str(small_set / "pred")
    for name in ("coco", "voc12"):
        single = run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "1")
        assert single[0] == 0
        assert run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "2") == single
    assert taken == [True, True]

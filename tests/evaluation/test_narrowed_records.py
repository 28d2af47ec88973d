"""A part's records pickled by a local worker (:class:`~vocmatch.evaluation.shards.parts.
PartRecords`) come back the same to the bit, in fewer bytes: the ground truth's cells and the
images' counts cross as int32 where every value fits."""

from __future__ import annotations

import dataclasses
import pickle
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vocmatch
from tests.conftest import ROOT
from tests.evaluation.test_fastaccumulate import assert_same_bits
from vocmatch.evaluation.records import GtCells, ImageCounts, MatchRecords
from vocmatch.evaluation.shards.parts import (
    PartListing,
    PartOptions,
    PartRecords,
    key_ranges,
    part_records,
)

DEMO = ROOT / "fixtures" / "demo"


def _parts(gt: Path, pred: Path, protocol: str, **options: Any) -> list[PartRecords]:
    listing = PartListing.of(gt, pred)
    part_options = PartOptions(vocmatch.Evaluator(protocol).conventions, **options)
    return [
        part_records(part, part_options)
        for part in key_ranges(listing.gt.files, listing.pred.files, 2)
    ]


@pytest.mark.parametrize("protocol", ["coco", "voc07", "default"])
@pytest.mark.parametrize("calibration", [False, True], ids=["plain", "calibration"])
def test_pickled_part_records_are_the_same_bits(protocol: str, calibration: bool) -> None:
    for part in _parts(DEMO / "gt", DEMO / "pred", protocol, calibration=calibration):
        again = pickle.loads(ForkingPickler.dumps(part))
        assert again.records.gt_cells is not None
        assert_same_bits(again, part)


def _with_arrays(records: MatchRecords, fill: int, size: int) -> MatchRecords:
    counts = records.counts

    def values() -> Any:
        return np.full((size, counts.values.shape[1]), fill, dtype=np.int64)

    def cells() -> Any:
        return np.full(size, fill, dtype=np.int64)

    return dataclasses.replace(
        records,
        gt_cells=GtCells(cells(), cells(), cells(), cells()),
        counts=ImageCounts(values(), counts.mean_iou, counts.classes),
        unscored=ImageCounts(values(), counts.mean_iou, counts.classes),
    )


@pytest.mark.parametrize(
    ("fill", "fewer"),
    [
        pytest.param(7, True, id="small-values-cross-narrowed"),
        pytest.param(2**31 - 1, True, id="int32-max-crosses-narrowed"),
        pytest.param(-(2**31), True, id="int32-min-crosses-narrowed"),
        pytest.param(2**31, False, id="beyond-int32-crosses-as-int64"),
        pytest.param(-(2**31) - 1, False, id="below-int32-crosses-as-int64"),
    ],
)
def test_values_cross_exactly_narrowed_only_where_they_fit(fill: int, fewer: bool) -> None:
    part = _parts(DEMO / "gt", DEMO / "pred", "coco")[0]
    part = dataclasses.replace(part, records=_with_arrays(part.records, fill, 5000))
    sent = ForkingPickler.dumps(part)
    again = pickle.loads(sent)
    assert_same_bits(again, part)
    assert again.records.counts.values.dtype == np.int64
    fields = (part.records, part.gt_skipped, part.pred_skipped, part.orphans, part.counts)
    plain = len(pickle.dumps(fields))  # every array as it is
    # Four bytes fewer for each of the cells' four values and each count value.
    narrowed = 5000 * 4 * (4 + 2 * part.records.counts.values.shape[1])
    assert len(sent) <= plain - narrowed + 1000 if fewer else len(sent) >= plain


def test_empty_cells_cross_as_they_are() -> None:
    part = _parts(DEMO / "gt", DEMO / "pred", "coco")[0]
    part = dataclasses.replace(part, records=_with_arrays(part.records, 0, 0))
    assert_same_bits(pickle.loads(ForkingPickler.dumps(part)), part)

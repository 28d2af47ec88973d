"""The listing's keys taken while the parts are matched (ListedKeys) give the joined parts
what the listing gives them once the parts are back: the same keys, the same refusals,
whether files were skipped (by the listing or a worker), left without ground truth or
missing from a part."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import vocmatch
from vocmatch.errors import DistributedError
from vocmatch.evaluation.shards.parts import (
    GatheredParts,
    ListedKeys,
    LocalParts,
    PartListing,
    PartOptions,
    PartRecords,
    gathered_parts,
    part_records,
    run_parts,
)


def _as_read(gt: Path, pred: Path) -> None:
    """The files as generated."""


def _garbage_gt(gt: Path, pred: Path) -> None:
    """A ground-truth file a worker cannot read (skipped, its key known)."""
    (gt / sorted(p.name for p in gt.glob("*.xml"))[3]).write_text("garbage")


def _garbage_pred(gt: Path, pred: Path) -> None:
    """A prediction file a worker cannot read."""
    (pred / sorted(p.name for p in pred.glob("*.xml"))[5]).write_text("garbage")


def _orphan_pred(gt: Path, pred: Path) -> None:
    """A prediction file of no ground-truth image."""
    source = sorted(pred.glob("*.xml"))[0]
    shutil.copy(source, pred / "zz_orphan.xml")


def _listing_skips(gt: Path, pred: Path) -> None:
    """A file the listing leaves out (no key)."""
    (gt / "notes.txt").write_text("not an annotation")
    (gt / "empty.xml").mkdir()


def _gathered(
    listing: PartListing,
    results: list[PartRecords],
    options: PartOptions,
    listed: ListedKeys | None,
) -> GatheredParts | str:
    try:
        return gathered_parts(listing, list(results), options, listed)
    except DistributedError as error:
        return str(error)


@pytest.mark.parametrize(
    ("change", "lost"),
    [
        pytest.param(_as_read, False, id="as-read"),
        pytest.param(_garbage_gt, False, id="unreadable-gt"),
        pytest.param(_garbage_pred, False, id="unreadable-pred"),
        pytest.param(_orphan_pred, False, id="orphan-pred"),
        pytest.param(_listing_skips, False, id="listing-skips"),
        pytest.param(_as_read, True, id="part-lost"),
        pytest.param(_garbage_gt, True, id="unreadable-gt-part-lost"),
    ],
)
def test_keys_taken_ahead_join_as_the_listing_does(
    generated: Path, tmp_path: Path, change: Callable[[Path, Path], None], lost: bool
) -> None:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    change(gt, pred)
    listing = PartListing.of(gt, pred)
    options = PartOptions(vocmatch.Evaluator("coco").conventions)
    results = run_parts(listing, LocalParts(2), part_records, options, by_ranges=True)
    if lost:
        results.pop()
    listed = ListedKeys.of(listing)
    expected = _gathered(listing, results, options, None)
    found = _gathered(listing, results, options, listed)
    if lost:
        assert isinstance(expected, str) and found == expected
        return
    assert isinstance(expected, GatheredParts) and isinstance(found, GatheredParts)
    for name in ("gt_skipped", "pred_skipped", "orphans", "counts", "gt_keys", "pred_keys"):
        assert getattr(found, name) == getattr(expected, name), name
    assert found.records.keys == expected.records.keys

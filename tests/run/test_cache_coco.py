"""``vocmatch eval --cache DIR`` with COCO results (``--pred-format coco``): each image's
predictions are keyed by their content in the results file, so a run after an edit of one
image's records matches that image's chunk again and no other, and prints byte for byte
what a run without a cache prints."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vocmatch.run.cached as cached
from tests.conftest import ROOT, run_cli
from tests.run.test_cache import Spy
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import ColumnSet, columns_from_annotations
from vocmatch.run.cached_coco import image_digests

Records = list[dict[str, Any]]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About eight images a chunk, so that a test set has many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)


def _copy(source: Path, target: Path) -> tuple[Path, Path]:
    shutil.copytree(source / "gt", target / "gt")
    shutil.copytree(source / "coco", target / "coco")
    return target / "gt", target / "coco" / "pred.json"


def _write(path: Path, records: Records) -> None:
    """One record a line, as the generated file is."""
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n")


def _records_changed(change: Callable[[Records], Records]) -> Callable[[Path, Path], None]:
    def changed(gt: Path, pred: Path) -> None:
        _write(pred, change(json.loads(pred.read_text())))

    return changed


def _one_score(records: Records) -> Records:
    first = next(r for r in records if r["image_id"] == 7)
    first["score"] = round(1 - first["score"], 6)
    return records


def _across_images(records: Records) -> Records:
    """The images' blocks in reverse order, each image's records in its order."""
    return sorted(records, key=lambda r: -int(r["image_id"]))


def _within_image(records: Records) -> Records:
    """The records of one image reversed (they break ties of equal scores)."""
    place = [i for i, r in enumerate(records) if r["image_id"] == 7]
    for i, record in zip(place, [records[i] for i in reversed(place)], strict=True):
        records[i] = record
    return records


def _image_removed(records: Records) -> Records:
    return [r for r in records if r["image_id"] != 9]


def _image_added(records: Records) -> Records:
    """Records of an image the ground truth does not have, named by its file name."""
    added = [dict(r, image_id="zz_new.jpg") for r in records if r["image_id"] == 3]
    return [*records, *added]


def _record_damaged(records: Records) -> Records:
    next(r for r in records if r["image_id"] == 11)["bbox"] = ["x", 1, 2, 3]
    return records


def _gt_damaged(gt: Path, pred: Path) -> None:
    """A ground-truth file that cannot be read: the results name images by those read."""
    sorted(gt.glob("*.xml"))[12].write_text("garbage")


def _gt_added(gt: Path, pred: Path) -> None:
    shutil.copy(sorted(gt.glob("*.xml"))[0], gt / "zz_extra.xml")


#: A change of the inputs, and at most how many chunks a run after it matches again.
CHANGES = [
    pytest.param(_records_changed(_one_score), 1, id="one-score-edited"),
    pytest.param(_records_changed(_across_images), 0, id="reordered-across-images"),
    pytest.param(_records_changed(_within_image), 1, id="reordered-within-an-image"),
    pytest.param(_records_changed(_image_removed), 1, id="image-removed"),
    pytest.param(_records_changed(_image_added), 2, id="image-added"),
    pytest.param(_records_changed(_record_damaged), 1, id="record-damaged"),
    pytest.param(_gt_damaged, 2, id="gt-file-damaged"),
    pytest.param(_gt_added, 2, id="gt-file-added"),
]


def _args(gt: Path, pred: Path, *extra: str) -> list[str]:
    coco_gt = str(pred.parent / "gt.json")
    return [str(gt), str(pred), "--pred-format", "coco", "--coco-gt", coco_gt, *extra]


@pytest.mark.parametrize(("change", "most"), CHANGES)
def test_a_rerun_after_an_edit_of_coco_results_prints_what_a_fresh_run_prints(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None],
    most: int,
) -> None:
    """Cold, after the change and warm again: the exit code, stdout and stderr of a run
    without a cache; after the change only the chunks of the images it touched are matched."""
    gt, pred = _copy(generated, tmp_path)
    args = _args(gt, pred, "--format", "json")
    cache = str(tmp_path / "cache")
    assert run_cli(*args, "--cache", cache) == run_cli(*args)
    change(gt, pred)
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", cache) == fresh
    assert spy.chunks <= most
    spy.reset()
    assert run_cli(*args, "--cache", cache) == fresh
    assert spy.chunks == 0


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(["--protocol", "coco", "--format", "json"], id="coco"),
        pytest.param(["--fold-case", "--format", "csv"], id="fold-case"),
        pytest.param(["--min-score", "0.3", "--nms", "0.5", "--format", "json"], id="prepared"),
        pytest.param(
            ["--slice", "size", "--calibration-bins", "4", "--format", "json"], id="slice"
        ),
        pytest.param(["--protocol", "coco"], id="table"),
    ],
)
def test_options_of_a_cached_coco_run_print_as_without_it(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str]
) -> None:
    args = _args(generated / "gt", generated / "coco" / "pred.json", *options)
    fresh = run_cli(*args)
    cache = str(tmp_path / "cache")
    assert run_cli(*args, "--cache", cache) == fresh
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", cache) == fresh
    assert spy.chunks == 0


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('[{"image_id": 1, "category_id": 2, "bbox": [1, 2', id="truncated"),
        pytest.param('{"annotations": [], "images": []}', id="a-ground-truth-file"),
        pytest.param("[]", id="empty"),
    ],
)
def test_damaged_coco_results_give_the_error_of_a_run_without_a_cache(
    generated: Path, tmp_path: Path, text: str
) -> None:
    """The one line of a run without a cache; the cache is left as it was."""
    gt, pred = _copy(generated, tmp_path)
    args = _args(gt, pred, "--format", "json")
    cache = tmp_path / "cache"
    run_cli(*args, "--cache", str(cache))
    kept = (cache / cached.CACHE_NAME).read_bytes()
    pred.write_text(text)
    fresh = run_cli(*args)
    assert fresh[0] == 2
    assert run_cli(*args, "--cache", str(cache)) == fresh
    assert (cache / cached.CACHE_NAME).read_bytes() == kept


def test_coco_results_naming_no_ground_truth_class_are_refused_as_without_a_cache(
    generated: Path, tmp_path: Path
) -> None:
    gt, pred = _copy(generated, tmp_path)
    coco_gt = pred.parent / "gt.json"
    data = json.loads(coco_gt.read_text())
    for category in data["categories"]:
        category["name"] = "other_" + category["name"]
    coco_gt.write_text(json.dumps(data))
    args = _args(gt, pred)
    fresh = run_cli(*args)
    assert fresh[0] == 2
    assert run_cli(*args, "--cache", str(tmp_path / "cache")) == fresh


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--pred-format", "coco", "--coco-gt", "G", "--classes", "cat"],
            "--cache 'C': a cache of COCO results is kept for their classes as named, not a "
            "class choice",
            id="coco-classes",
        ),
        pytest.param(
            ["--pred-format", "voc-results"],
            "--cache 'C': a cache is kept for XML predictions or COCO results, not voc-results",
            id="voc-results",
        ),
    ],
)
def test_a_cache_of_other_predictions_is_refused(
    generated: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    cache = tmp_path / "c"
    given = [str(generated / "coco" / "gt.json") if a == "G" else a for a in args]
    code, stdout, stderr = run_cli(
        str(ROOT / "fixtures" / "demo" / "gt"),
        str(generated / "coco" / "pred.json"),
        "--cache",
        str(cache),
        *given,
    )
    assert (code, stdout) == (2, "")
    assert stderr == f"vocmatch: error: {message.replace('C', str(cache), 1)}\n"
    assert not cache.exists()


def _columns(*images: tuple[str, tuple[Box, ...]]) -> ColumnSet:
    found = tuple(ImageAnnotation(key, "r.json", boxes) for key, boxes in images)
    return columns_from_annotations(AnnotationSet("r.json", found, (), ()))


CAT = Box("cat", 0, 0, 4, 3, score=0.5)
DOG = Box("dog", 1, 1, 2, 2, score=0.25)


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        pytest.param((CAT,), (CAT,), True, id="unchanged"),
        pytest.param((CAT, DOG), (DOG, CAT), False, id="reordered"),
        pytest.param((CAT,), (Box("cat", 0, 0, 4, 3, score=0.75),), False, id="score"),
        pytest.param((CAT,), (Box("cat", 0, 0, 4, 3.5, score=0.5),), False, id="corner"),
        pytest.param((CAT,), (Box("Cat", 0, 0, 4, 3, score=0.5),), False, id="class"),
        pytest.param((CAT,), (), False, id="removed"),
    ],
)
def test_an_images_digest_is_its_predictions_and_no_others(
    before: tuple[Box, ...], after: tuple[Box, ...], same: bool
) -> None:
    """The digest of image ``a`` follows its own boxes (in order), and not those of image
    ``b``, which gains a class of its own."""
    first = image_digests(_columns(("a", before), ("b", (DOG,))))
    second = image_digests(_columns(("a", after), ("b", (DOG, Box("zebra", 0, 0, 1, 1)))))
    assert (first["a"] == second["a"]) is same
    assert first["b"] != second["b"]

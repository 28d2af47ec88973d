"""The cache's joined layout (format 3): every chunk's records joined once, a run whose
files changed in a few chunks putting their new records in place of theirs. What it prints
is what a run without a cache prints, whichever classes, ties or scores the edits bring;
a joined layout that does not fit together gives one warning and a correct result."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vocmatch.run.cached as cached
from tests.conftest import run_cli
from tests.run.test_cache import Spy
from vocmatch.errors import InputError
from vocmatch.evaluation.shards.cache_file import CACHE_MAGIC, CACHE_VERSION
from vocmatch.evaluation.shards.parts import GatheredParts, PartListing
from vocmatch.evaluation.shards.state import RawState, read_state, write_state


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About eight images a chunk, two when the records are kept joined, so that a test
    set has many (and the joined chunks are smaller, as a run may make them)."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)
    monkeypatch.setattr(cached, "JOINED_SHARE", 4)


def _copy(source: Path, target: Path) -> tuple[Path, Path]:
    shutil.copytree(source / "gt", target / "gt")
    shutil.copytree(source / "pred", target / "pred")
    return target / "gt", target / "pred"


def _chunks(gt: Path, pred: Path) -> int:
    """The chunks of a run whose records are kept joined."""
    listing = PartListing.of(gt, pred)
    return len(cached.chunks_of(listing, cached.CHUNK_SPREAD // cached.JOINED_SHARE))


def _cache_file(folder: Path) -> Path:
    return folder / cached.CACHE_NAME


def _raw(folder: Path) -> RawState:
    return read_state(_cache_file(folder).read_bytes(), "cache", CACHE_MAGIC, CACHE_VERSION)


def _crafted(change: Callable[[RawState], None]) -> Callable[[Path], None]:
    """A damage that rewrites the cache with a valid checksum."""

    def damage(path: Path) -> None:
        raw = read_state(path.read_bytes(), str(path), CACHE_MAGIC, CACHE_VERSION)
        arrays = dict(raw.arrays)
        changed = RawState(raw.header, arrays)
        change(changed)
        path.write_bytes(write_state(changed, CACHE_MAGIC, CACHE_VERSION))

    return damage


def _chunk(n: int, field: str, value: object) -> Callable[[RawState], None]:
    def change(raw: RawState) -> None:
        raw.header["chunks"][n][field] = value

    return change


def _one_image_more(raw: RawState) -> None:
    raw.header["chunks"][0]["images"] += 1


def _an_image_moved(raw: RawState) -> None:
    raw.header["chunks"][0]["images"] -= 1
    raw.header["chunks"][1]["images"] += 1


def _a_key_twice(raw: RawState) -> None:
    raw.header["chunks"][1]["key"] = raw.header["chunks"][0]["key"]


def _a_class_of_no_chunk(raw: RawState) -> None:
    for chunk in raw.header["chunks"]:
        chunk["class_names"] = chunk["class_names"][1:]
    # Each chunk's first class's rows gone.
    firsts = np.cumsum([0, *(len(c["class_names"]) + 1 for c in raw.header["chunks"][:-1])])
    for name in ("chunks.class_counts", "chunks.coco_gt"):
        raw.arrays[name] = np.delete(raw.arrays[name], firsts, axis=0)  # type: ignore[index]


def _array(name: str, value: Callable[[Any], Any]) -> Callable[[RawState], None]:
    def change(raw: RawState) -> None:
        raw.arrays[name] = value(raw.arrays[name])  # type: ignore[index]

    return change


def _no_array(name: str) -> Callable[[RawState], None]:
    def change(raw: RawState) -> None:
        del raw.arrays[name]  # type: ignore[attr-defined]

    return change


def _first_two_swapped(rows: Any) -> Any:
    """The first class's ranking with its first two predictions swapped: each prediction
    still once and in its class, only out of order."""
    swapped = rows.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    return swapped


def _layout(raw: RawState) -> None:
    raw.header["layout"] = "by image"


CHUNK = "{cache} (chunk 0): "


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param(_layout, "{cache}: corrupted header (layout)", id="layout"),
        pytest.param(
            _one_image_more,
            "{cache}: corrupted header (chunks do not add up to the records)",
            id="one-image-more",
        ),
        pytest.param(
            _an_image_moved, "{cache}: corrupted header (a chunk's predictions)", id="image-moved"
        ),
        pytest.param(_a_key_twice, "{cache}: corrupted header (a chunk repeats)", id="key-twice"),
        pytest.param(
            _a_class_of_no_chunk, "{cache}: corrupted header (the chunks' classes)", id="a-class"
        ),
        pytest.param(_chunk(0, "images", -1), CHUNK + "corrupted header (chunk)", id="negative"),
        pytest.param(_chunk(0, "images", "3"), CHUNK + "corrupted header (chunk)", id="a-string"),
        pytest.param(
            _chunk(0, "class_names", ["b", "a"]), CHUNK + "corrupted header (chunk)", id="unsorted"
        ),
        pytest.param(_chunk(0, "notes", []), CHUNK + "corrupted header (notes)", id="notes"),
        pytest.param(
            _chunk(0, "notes", {"names": [], "scored": True, "counts": [1, 2, -3, 0], "odd": []}),
            CHUNK + "corrupted header (notes)",
            id="notes-negative",
        ),
        pytest.param(
            _array("chunks.class_counts", lambda a: a.astype(np.int64) - 5),
            "{cache}: corrupted class counts",
            id="negative-class-counts",
        ),
        pytest.param(
            _array("chunks.class_counts", lambda a: a.astype(np.float64)),
            "{cache}: corrupted class counts",
            id="float-class-counts",
        ),
        pytest.param(
            _no_array("chunks.coco_gt"), "{cache}: corrupted class counts", id="no-coco-gt"
        ),
        pytest.param(
            _array("chunks.coco_gt", lambda a: a[1:].copy()),
            "{cache}: corrupted class counts",
            id="a-row-less",
        ),
        pytest.param(
            _array("joined.ranked_rows", lambda a: a[::-1].copy()),
            "{cache}: corrupted rankings",
            id="rankings-reversed",
        ),
        pytest.param(_no_array("joined.ranked_rank"), "{cache}: corrupted rankings", id="no-rank"),
        pytest.param(
            _array("joined.ranked_rows", _first_two_swapped),
            "{cache}: corrupted rankings",
            id="ranking-out-of-order",
        ),
        pytest.param(
            _array("joined.ranked_rank", np.zeros_like),
            "{cache}: corrupted rankings",
            id="places-zeroed",
        ),
        pytest.param(
            _array("joined.keys", lambda a: a[: a.tolist().index(0)].copy()),
            "{cache}: corrupted header (image keys or paths)",
            id="one-key",
        ),
        pytest.param(
            _array("joined.gt_paths", lambda a: np.append(a, 0xFF).astype(np.uint8)),
            "{cache}: corrupted header (image keys or paths)",
            id="paths-not-utf8",
        ),
        pytest.param(
            _array("joined.no_pred", lambda a: a + 2),
            "{cache}: corrupted header (image keys or paths)",
            id="no-pred-not-a-flag",
        ),
        pytest.param(
            _no_array("joined.pred_paths"),
            "{cache}: corrupted header (image keys or paths)",
            id="no-pred-paths",
        ),
    ],
)
def test_a_crafted_joined_cache_gives_one_warning_and_the_right_numbers(
    generated: Path, tmp_path: Path, change: Callable[[RawState], None], reason: str
) -> None:
    """Joined records and chunk entries that do not fit together, under a valid checksum:
    one warning naming what, and the numbers of a run without a cache."""
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    code, stdout, stderr = run_cli(*args)
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    assert _raw(folder).header["layout"] == "joined"
    _crafted(change)(_cache_file(folder))
    again = run_cli(*args, "--cache", str(folder))
    assert again[:2] == (code, stdout)
    shown = reason.format(cache=_cache_file(folder))
    assert again[2].replace(stderr, "", 1) == (
        f"vocmatch: warning: cache {shown}; every image was matched again\n"
    )


def _renamed(text: str, name: str) -> str:
    return re.sub(r"<name>[^<]*</name>", f"<name>{name}</name>", text, count=1)


def _a_new_class(gt: Path, pred: Path) -> None:
    """A class no other file names, in one image's ground truth and predictions."""
    for side in (gt, pred):
        path = sorted(side.glob("*.xml"))[20]
        path.write_text(_renamed(path.read_text(), "zebra"))


def _tied_scores(gt: Path, pred: Path) -> None:
    """Every score of files in several chunks the same: ties across chunks."""
    for path in sorted(pred.glob("*.xml"))[3:150:37]:
        path.write_text(re.sub(r"<score>[^<]*</score>", "<score>0.5</score>", path.read_text()))


def _first_and_last(gt: Path, pred: Path) -> None:
    """The first and the last chunk's files changed (the ends of the joined records)."""
    for path in (sorted(pred.glob("*.xml"))[0], sorted(pred.glob("*.xml"))[-1]):
        path.write_text(re.sub(r"<score>0\.", "<score>0.9", path.read_text(), count=1))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_a_new_class, id="a-new-class"),
        pytest.param(_tied_scores, id="tied-scores"),
        pytest.param(_first_and_last, id="first-and-last"),
    ],
)
@pytest.mark.parametrize("protocol", ["default", "voc07", "coco"])
def test_an_edited_run_puts_the_changed_chunks_in_place(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None],
    protocol: str,
) -> None:
    """Edits that bring a class, ties across chunks, or change the first and last chunks:
    the changed chunks alone are matched, and the run prints what a run without a cache
    prints; so does the next run once the edit is undone (the class gone again)."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json", "--protocol", protocol]
    cache = str(tmp_path / "cache")
    run_cli(*args, "--cache", cache)
    before = {p: p.read_bytes() for side in (gt, pred) for p in side.glob("*.xml")}
    change(gt, pred)
    fresh = run_cli(*args)
    assert fresh[0] in (0, 3)
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", cache) == fresh
    assert 0 < spy.chunks < _chunks(gt, pred) // 2
    for path, data in before.items():
        if path.read_bytes() != data:
            path.write_bytes(data)
    fresh = run_cli(*args)
    spy.reset()
    assert run_cli(*args, "--cache", cache) == fresh
    assert 0 < spy.chunks < _chunks(gt, pred) // 2


def _unscored(path: Path) -> None:
    path.write_text(re.sub(r"\s*<score>[^<]*</score>", "", path.read_text()))


def test_chunks_without_scores_are_put_in_place(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks whose predictions have no score, in a run with scored ones: put in place as
    the others (a run with a scored prediction does not read their unscored reading)."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    for path in sorted(pred.glob("*.xml"))[:30]:  # a few chunks' every file
        _unscored(path)
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", str(folder)) == fresh
    assert 0 < spy.chunks < _chunks(gt, pred) // 2
    assert _raw(folder).header["layout"] == "joined"


def test_a_run_without_scores_is_kept_by_chunks(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run none of whose predictions has a score reads the unscored reading the joined
    layout does not hold: every image is matched again, the cache kept chunk by chunk, and
    the next edit matches its own chunk only."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    paths = sorted(pred.glob("*.xml"))
    for path in paths[:-1]:
        _unscored(path)
    run_cli(*args, "--cache", str(folder))  # the last file's chunk scored: joined still
    _unscored(paths[-1])
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", str(folder)) == fresh
    assert spy.chunks == _chunks(gt, pred)
    assert _raw(folder).header["layout"] == "chunks"
    spy.reset()
    assert run_cli(*args, "--cache", str(folder)) == fresh
    assert (spy.chunks, spy.hashed) == (0, 0)
    paths[0].write_text(paths[0].read_text().replace("<name>", "<name>x", 1))
    fresh = run_cli(*args)
    spy.reset()
    assert run_cli(*args, "--cache", str(folder)) == fresh
    assert spy.chunks == 1


def test_a_cache_kept_joined_has_smaller_chunks(generated: Path, tmp_path: Path) -> None:
    """Records kept joined are cut in chunks a ``JOINED_SHARE``-th the size of those kept
    chunk by chunk (slices, calibration inputs, a preparation's counts)."""
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    run_cli(*args, "--cache", str(tmp_path / "joined"))
    run_cli(*args, "--slice", "size", "--cache", str(tmp_path / "chunks"))
    joined, by_chunks = _raw(tmp_path / "joined"), _raw(tmp_path / "chunks")
    assert (joined.header["layout"], by_chunks.header["layout"]) == ("joined", "chunks")
    listing = PartListing.of(generated / "gt", generated / "pred")
    assert len(joined.header["chunks"]) == len(cached.chunks_of(listing, 2))
    assert len(by_chunks.header["chunks"]) == len(cached.chunks_of(listing, 8))


def test_many_changed_chunks_are_put_in_place(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fifth file edited: most chunks matched again, the others' rows taken from the
    cache between them; what a run without a cache prints."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json", "--protocol", "coco"]
    cache = str(tmp_path / "cache")
    run_cli(*args, "--cache", cache)
    for path in sorted(pred.glob("*.xml"))[::5]:
        path.write_text(re.sub(r"<score>0\.", "<score>0.9", path.read_text(), count=2))
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", cache) == fresh
    assert _chunks(gt, pred) // 4 < spy.chunks < _chunks(gt, pred)
    spy.reset()
    assert run_cli(*args, "--cache", cache) == fresh
    assert (spy.chunks, spy.hashed) == (0, 0)


def _touched(gt: Path, pred: Path) -> None:
    path = sorted(pred.glob("*.xml"))[3]
    path.write_bytes(path.read_bytes())  # its stat changes, its content does not


def _edited(gt: Path, pred: Path) -> None:
    for path in sorted(pred.glob("*.xml"))[3::40]:
        path.write_text(re.sub(r"<score>0\.", "<score>0.9", path.read_text(), count=1))


def _added(gt: Path, pred: Path) -> None:
    shutil.copy(sorted(pred.glob("*.xml"))[3], pred / "zz-added.xml")


@pytest.mark.parametrize(
    ("change", "verify", "keyed"),
    [
        pytest.param(None, False, lambda chunks, matched: 0, id="nothing-changed"),
        pytest.param(_touched, False, lambda chunks, matched: 1, id="touched"),
        pytest.param(_edited, False, lambda chunks, matched: 2 * matched, id="edited"),
        pytest.param(_added, False, lambda chunks, matched: chunks + matched, id="added"),
        pytest.param(None, True, lambda chunks, matched: chunks + matched, id="verify"),
    ],
)
def test_a_chunk_whose_files_kept_their_stats_keeps_its_key(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None] | None,
    verify: bool,
    keyed: Callable[[int, int], int],
) -> None:
    """A chunk whose files the stat index lists in place, with their stats, is found by the
    key the cache holds for it; the others' keys are computed (files added or removed move
    every file's row; ``--cache-verify`` hashes every file), and a chunk matched again is
    keyed once more by the bytes read. The run prints what a run without a cache prints."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    cache = str(tmp_path / "cache")
    run_cli(*args, "--cache", cache)
    if change is not None:
        change(gt, pred)
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    computed: list[str] = []
    key = cached._chunk_key

    def counted_key(*given: Any) -> str:
        computed.append(key(*given))
        return computed[-1]

    monkeypatch.setattr(cached, "_chunk_key", counted_key)
    verified = ("--cache-verify",) if verify else ()
    assert run_cli(*args, "--cache", cache, *verified) == fresh
    assert len(computed) == keyed(_chunks(gt, pred), spy.chunks)


def test_an_edited_run_stopped_while_evaluated_leaves_the_cache_as_it_was(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new cache file is written beside the old one while the run is evaluated; a run
    that ends there (refused, interrupted) removes it: the cache keeps its bytes, and
    nothing is left in its folder."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    before = _cache_file(folder).read_bytes()
    path = sorted(pred.glob("*.xml"))[7]
    path.write_text(re.sub(r"<score>0\.", "<score>0.9", path.read_text(), count=1))
    seen: list[list[str]] = []

    def stopped(self: object, *_: object) -> None:
        deadline = time.monotonic() + 20
        while not (found := _leftovers(folder)) and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(found)
        raise InputError("stopped while evaluated")

    monkeypatch.setattr(GatheredParts, "evaluation", stopped)
    code, stdout, stderr = run_cli(*args, "--cache", str(folder))
    assert (code, stdout, stderr) == (2, "", "vocmatch: error: stopped while evaluated\n")
    assert len(seen) == 1 and len(seen[0]) == 1
    assert _cache_file(folder).read_bytes() == before
    assert _leftovers(folder) == []


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".vocmatch-"))

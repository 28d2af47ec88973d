"""``vocmatch eval --cache DIR`` (and ``vocmatch.evaluate(..., cache=DIR)``): a run keeps
its images' match records by chunks, keyed by the content of their files and by the
options, and a run again matches only the chunks whose files changed; what it prints is
byte for byte what a run without a cache prints. A cache that cannot be read or written
gives one warning and a correct result."""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vocmatch.run.cached as cached
from tests.conftest import ROOT, run_cli
from tests.run.test_jobs import CHANGES, OPTIONS
from vocmatch import render_text
from vocmatch.errors import CacheWarning, RequestError
from vocmatch.evaluation.shards.cache_file import CACHE_MAGIC, CACHE_VERSION
from vocmatch.evaluation.shards.parts import PartListing
from vocmatch.evaluation.shards.state import RawState, read_state, write_state
from vocmatch.run.evaluate import evaluate

DEMO = ROOT / "fixtures" / "demo"


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About eight images a chunk, so that a test set has many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)


def _copy(source: Path, target: Path) -> tuple[Path, Path]:
    shutil.copytree(source / "gt", target / "gt")
    shutil.copytree(source / "pred", target / "pred")
    return target / "gt", target / "pred"


#: Options whose records a cache keeps chunk by chunk, in chunks of ``CHUNK_SPREAD``
#: images (others' are kept joined, in smaller chunks).
BY_CHUNKS = ("--slice", "--calibration-bins", "--nms", "--max-per-image", "--min-score")


def _chunks(gt: Path, pred: Path, *options: str) -> int:
    """The chunks of a run with ``options``."""
    spread = cached.CHUNK_SPREAD
    if not set(options) & set(BY_CHUNKS):
        spread //= cached.JOINED_SHARE
    return len(cached.chunks_of(PartListing.of(gt, pred), spread))


class Spy:
    """Counts the chunks read and matched, and the files hashed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chunks = 0
        self.hashed = 0
        task, digest = cached.hashed_part_records, cached._digest

        def counted_task(*args: Any) -> Any:
            self.chunks += 1
            return task(*args)

        def counted_digest(path: str) -> bytes | None:
            self.hashed += 1
            return digest(path)

        monkeypatch.setattr(cached, "hashed_part_records", counted_task)
        monkeypatch.setattr(cached, "_digest", counted_digest)

    def reset(self) -> None:
        self.chunks = self.hashed = 0


@pytest.mark.parametrize("change", CHANGES)
def test_a_cached_run_prints_what_a_run_without_it_prints(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None] | None,
) -> None:
    """Cold and warm, the exit code, stdout and stderr of a run without a cache; the warm
    run reads and hashes no file."""
    gt, pred = _copy(generated, tmp_path)
    if change is not None:
        change(gt, pred)
    args = [str(gt), str(pred), "--format", "json"]
    fresh = run_cli(*args)
    cache = str(tmp_path / "cache")
    assert run_cli(*args, "--cache", cache) == fresh
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", cache) == fresh
    assert (spy.chunks, spy.hashed) == (0, 0)


#: Options of a run the cache keeps more than records for: what a preparation removed, the
#: ultralytics summary.
PREPARED = [
    pytest.param(["--nms", "0.5", "--format", "json"], id="nms-json"),
    pytest.param(
        ["--min-score", "0.3", "--nms", "0.6", "--nms-agnostic", "--max-per-image", "20"],
        id="preparation-table",
    ),
    pytest.param(["--protocol", "ultralytics", "--nms", "0.7", "--format", "json"], id="ultra"),
]


@pytest.mark.parametrize("args", [*OPTIONS, *PREPARED])
def test_every_option_of_a_cached_run_prints_as_without_it(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    mapping = tmp_path / "map.csv"
    mapping.write_text("class03,class01\nCLASS04,class02\n")
    args = [str(mapping) if a == "MAP" else a for a in args]
    gt, pred = str(generated / "gt"), str(generated / "pred")
    fresh = run_cli(gt, pred, *args)
    cache = str(tmp_path / "cache")
    assert run_cli(gt, pred, *args, "--cache", cache) == fresh
    spy = Spy(monkeypatch)
    assert run_cli(gt, pred, *args, "--cache", cache) == fresh
    assert spy.chunks == 0


def _edit(path: Path) -> None:
    """A prediction's score changed, the file's size kept."""
    text = path.read_text()
    start = text.index("<score>") + len("<score>")
    digit = text[start + 2]
    swapped = "1" if digit != "1" else "2"
    path.write_text(text[: start + 2] + swapped + text[start + 3 :])


def _edits(gt: Path, pred: Path) -> None:
    for path in sorted(pred.glob("*.xml"))[5:150:15]:
        _edit(path)


def _added(gt: Path, pred: Path) -> None:
    first_gt, first_pred = sorted(gt.glob("*.xml"))[0], sorted(pred.glob("*.xml"))[0]
    shutil.copy(first_gt, gt / "zz_new.xml")
    shutil.copy(first_pred, pred / "zz_new.xml")
    shutil.copy(first_pred, pred / "aa_orphan.xml")


def _deleted(gt: Path, pred: Path) -> None:
    for side in (gt, pred):
        sorted(side.glob("*.xml"))[40].unlink()
    sorted(pred.glob("*.xml"))[90].unlink()


def _damaged(gt: Path, pred: Path) -> None:
    sorted(gt.glob("*.xml"))[3].write_text("garbage")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_edits, id="ten-edits"),
        pytest.param(_added, id="added-files"),
        pytest.param(_deleted, id="deleted-files"),
        pytest.param(_damaged, id="file-damaged"),
    ],
)
def test_a_rerun_matches_only_the_chunks_that_changed(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None],
) -> None:
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    cache = str(tmp_path / "cache")
    run_cli(*args, "--cache", cache)
    change(gt, pred)
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache", cache) == fresh
    chunks = _chunks(gt, pred)
    assert 0 < spy.chunks <= 10 < chunks
    spy.reset()
    assert run_cli(*args, "--cache", cache) == fresh
    assert (spy.chunks, spy.hashed) == (0, 0)


def test_a_touched_file_is_hashed_not_matched(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Times changed, content the same: hashed once, no chunk matched, and the stat index
    kept for the next run."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json", "--cache", str(tmp_path / "cache")]
    fresh = run_cli(*args)
    for path in sorted(pred.glob("*.xml"))[:3]:
        os.utime(path, ns=(1, 1))
    spy = Spy(monkeypatch)
    assert run_cli(*args) == fresh
    assert (spy.chunks, spy.hashed) == (0, 3)
    spy.reset()
    assert run_cli(*args) == fresh
    assert spy.hashed == 0


def test_paths_of_any_name_are_found_in_the_stat_index(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names that are not ASCII, or not UTF-8 at all, are kept in the stat index as they
    are: a second run hashes and matches nothing."""
    gt, pred = _copy(generated, tmp_path)
    for n, name in enumerate([b"\xc3\xa9t\xc3\xa9", b"\xff-latin1", b"new\nline"]):
        source = sorted(gt.glob("*.xml"))[n].name
        for side in (gt, pred):
            os.rename(side / source, os.path.join(os.fsencode(side), name + b".xml"))
    args = [str(gt), str(pred), "--format", "json", "--cache", str(tmp_path / "cache")]
    fresh = run_cli(*args)
    spy = Spy(monkeypatch)
    assert run_cli(*args) == fresh
    assert (spy.chunks, spy.hashed) == (0, 0)


def _no_thread(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("can't start new thread")


@pytest.mark.parametrize(
    ("jobs", "refused"),
    [
        pytest.param([], False, id="a-thread"),
        pytest.param([], True, id="thread-refused"),
        pytest.param(["--jobs", "1"], False, id="one-job"),
    ],
)
def test_the_stats_taken_while_the_cache_is_read_find_the_edit(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    jobs: list[str],
    refused: bool,
) -> None:
    """The stats are the same taken by a thread while the cache is read, after it (one
    job), or when the system refuses the thread: the edited chunk alone is matched, no
    warning."""
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json", "--cache", str(tmp_path / "cache"), *jobs]
    run_cli(*args)
    _edit(sorted(pred.glob("*.xml"))[5])
    fresh = run_cli(str(gt), str(pred), "--format", "json")
    if refused:
        from concurrent.futures import ThreadPoolExecutor

        monkeypatch.setattr(ThreadPoolExecutor, "submit", _no_thread)
    spy = Spy(monkeypatch)
    assert run_cli(*args) == fresh
    assert (spy.chunks, spy.hashed) == (1, 1)


def _same_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file's stat, as read and as listed (taken by the listing or after it), is
    (1, 2, 3, 4): no stat ever changes."""
    from dataclasses import replace

    from vocmatch.readers import file_stats, listed_stats
    from vocmatch.readers.hashed_reads import HashingReader, KeptFiles

    def listed(paths: Any, jobs: int = 1) -> Any:
        return np.tile(np.array([1, 2, 3, 4], dtype=np.int64), (len(paths), 1))

    listed_with_stats = listed_stats.listed_with_stats

    def listed_with(root: Any, suffix: str = ".xml", jobs: int = 1) -> Any:
        found = listed_with_stats(root, suffix, jobs)
        return replace(found, stats=listed(found.listing.files))

    monkeypatch.setattr(listed_stats, "listed_with_stats", listed_with)

    kept = HashingReader.kept

    def read(self: HashingReader, paths: Any) -> KeptFiles | None:
        found = kept(self, paths)
        return found and KeptFiles(listed(paths), found.digests)

    monkeypatch.setattr(file_stats, "file_stats", listed)
    monkeypatch.setattr(HashingReader, "kept", read)


def test_cache_verify_hashes_every_file(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit the stat index cannot see (a clock too coarse, times restored): every file
    hashed, the edit found."""
    gt, pred = _copy(generated, tmp_path)
    _same_stats(monkeypatch)
    args = [str(gt), str(pred), "--format", "json", "--cache", str(tmp_path / "cache")]
    before = run_cli(*args)
    _edit(sorted(pred.glob("*.xml"))[7])
    fresh = run_cli(str(gt), str(pred), "--format", "json")
    assert run_cli(*args) == before  # unseen
    spy = Spy(monkeypatch)
    assert run_cli(*args, "--cache-verify") == fresh
    files = len(list(gt.glob("*.xml"))) + len(list(pred.glob("*.xml")))
    assert spy.chunks == 1
    assert spy.hashed == files


def _cache_file(folder: Path) -> Path:
    return folder / cached.CACHE_NAME


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def _garbage(path: Path) -> None:
    path.write_bytes(b"garbage" * 100)


def _flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _other_format(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:8] + (CACHE_VERSION + 1).to_bytes(4, "little") + data[12:])


def _earlier_format(version: int) -> Callable[[Path], None]:
    """A cache of an earlier format: 1 before the stat index's paths were an array, 2
    before the chunks' records were kept joined."""

    def damage(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[:8] + version.to_bytes(4, "little") + data[12:])

    return damage


def _a_state_file(path: Path) -> None:
    path.write_bytes(b"VMSTATE\0" + path.read_bytes()[8:])


def _a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _crafted(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    """A damage that rewrites the first chunk's header with a valid checksum."""

    def damage(path: Path) -> None:
        raw = read_state(path.read_bytes(), str(path), CACHE_MAGIC, CACHE_VERSION)
        change(raw.header["chunks"][0])
        path.write_bytes(write_state(raw, CACHE_MAGIC, CACHE_VERSION))

    return damage


def _negative_count(chunk: dict[str, Any]) -> None:
    chunk["gt_classes"][0][1] = -3


def _class_twice(chunk: dict[str, Any]) -> None:
    chunk["pred_classes"].append(list(chunk["pred_classes"][0]))


def _negative_shapes(chunk: dict[str, Any]) -> None:
    chunk["shapes"] = [0, -1, 0, 0]


DAMAGES = [
    pytest.param(_truncated, "checksum does not match", id="truncated"),
    pytest.param(_garbage, "not a vocmatch state", id="garbage"),
    pytest.param(_flipped, "checksum does not match", id="one-byte-flipped"),
    pytest.param(_other_format, "format version 4; this vocmatch reads version 3", id="format"),
    pytest.param(
        _earlier_format(1), "format version 1; this vocmatch reads version 3", id="format-1"
    ),
    pytest.param(
        _earlier_format(2), "format version 2; this vocmatch reads version 3", id="format-2"
    ),
    pytest.param(_a_state_file, "no VMCACHE signature", id="state-file"),
    pytest.param(_a_folder, "not a regular file", id="a-folder"),
]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param(_negative_count, "corrupted header (class counts)", id="negative"),
        pytest.param(_class_twice, "corrupted header (class counts)", id="class-twice"),
        pytest.param(_negative_shapes, "corrupted header (shapes)", id="shapes"),
    ],
)
def test_a_crafted_chunk_gives_one_warning_and_the_right_numbers(
    generated: Path, tmp_path: Path, change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    """A chunk whose counts no reading gives (negative, a class twice), under a valid
    checksum, is refused as the states' reading counts are: one warning, a cold run."""
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    code, stdout, stderr = run_cli(*args)
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    _crafted(change)(_cache_file(folder))
    again = run_cli(*args, "--cache", str(folder))
    assert again[:2] == (code, stdout)
    added = again[2].replace(stderr, "", 1)
    assert added == (
        f"vocmatch: warning: cache {_cache_file(folder)} (chunk 0): {reason}; every image "
        "was matched again\n"
    )


def _crafted_index(change: Callable[[RawState], None]) -> Callable[[Path], None]:
    """A damage that rewrites the stat index with a valid checksum."""

    def damage(path: Path) -> None:
        raw = read_state(path.read_bytes(), str(path), CACHE_MAGIC, CACHE_VERSION)
        change(raw)
        path.write_bytes(write_state(raw, CACHE_MAGIC, CACHE_VERSION))

    return damage


def _paths(raw: RawState) -> list[bytes]:
    return bytes(raw.arrays["file_paths"]).split(b"\0")


def _with_paths(raw: RawState, paths: list[bytes]) -> None:
    raw.arrays["file_paths"] = np.frombuffer(b"\0".join(paths), dtype=np.uint8)


def _path_twice(raw: RawState) -> None:
    paths = _paths(raw)
    _with_paths(raw, [paths[0], paths[0], *paths[2:]])


def _a_path_less(raw: RawState) -> None:
    _with_paths(raw, _paths(raw)[1:])


def _paths_not_utf8(raw: RawState) -> None:
    paths = _paths(raw)
    _with_paths(raw, [b"\xff" + paths[0], *paths[1:]])


def _no_paths(raw: RawState) -> None:
    del raw.arrays["file_paths"]


def _paths_as_numbers(raw: RawState) -> None:
    raw.arrays["file_paths"] = raw.arrays["file_paths"].astype(np.int32)


def _float_stats(raw: RawState) -> None:
    raw.arrays["file_stat"] = raw.arrays["file_stat"].astype(np.float64)


def _short_hashes(raw: RawState) -> None:
    raw.arrays["file_hash"] = raw.arrays["file_hash"][:, :8].copy()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_path_twice, id="a-path-twice"),
        pytest.param(_a_path_less, id="a-path-less"),
        pytest.param(_paths_not_utf8, id="paths-not-utf8"),
        pytest.param(_no_paths, id="no-paths"),
        pytest.param(_paths_as_numbers, id="paths-as-numbers"),
        pytest.param(_float_stats, id="float-stats"),
        pytest.param(_short_hashes, id="short-hashes"),
    ],
)
def test_a_crafted_stat_index_gives_one_warning_and_the_right_numbers(
    generated: Path, tmp_path: Path, change: Callable[[RawState], None]
) -> None:
    """A stat index no run writes (a path twice, stats that are not integers, digests of
    another length), under a valid checksum: one warning, a cold run."""
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    code, stdout, stderr = run_cli(*args)
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    _crafted_index(change)(_cache_file(folder))
    again = run_cli(*args, "--cache", str(folder))
    assert again[:2] == (code, stdout)
    assert again[2].replace(stderr, "", 1) == (
        f"vocmatch: warning: cache {_cache_file(folder)}: corrupted stat index; every image "
        "was matched again\n"
    )


@pytest.mark.parametrize(("damage", "reason"), DAMAGES)
def test_a_damaged_cache_gives_one_warning_and_the_right_numbers(
    generated: Path, tmp_path: Path, damage: Callable[[Path], None], reason: str
) -> None:
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    code, stdout, stderr = run_cli(*args)
    folder = tmp_path / "cache"
    run_cli(*args, "--cache", str(folder))
    damage(_cache_file(folder))
    again = run_cli(*args, "--cache", str(folder))
    assert again[:2] == (code, stdout)
    added = again[2].replace(stderr, "", 1)
    assert added.count("\n") == 1
    assert added.startswith(f"vocmatch: warning: cache {_cache_file(folder)}: ")
    assert reason in added
    assert added.endswith("; every image was matched again\n")


def test_a_cache_of_another_vocmatch_version_is_not_read(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vocmatch.evaluation.shards.cache_file as cache_file

    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    fresh = run_cli(*args)
    folder = tmp_path / "cache"
    monkeypatch.setattr(cache_file, "__version__", "0.0.1")
    run_cli(*args, "--cache", str(folder))
    monkeypatch.undo()
    code, stdout, stderr = run_cli(*args, "--cache", str(folder))
    assert (code, stdout) == fresh[:2]
    assert stderr == (
        f"vocmatch: warning: cache {_cache_file(folder)}: made by vocmatch 0.0.1, not this "
        "0.1.0; every image was matched again\n"
    )


def test_a_cache_that_cannot_be_written_gives_one_warning(generated: Path, tmp_path: Path) -> None:
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    fresh = run_cli(*args)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    code, stdout, stderr = run_cli(*args, "--cache", str(blocked / "cache"))
    assert (code, stdout) == fresh[:2]
    assert stderr.startswith(f"vocmatch: warning: cannot write the cache {blocked / 'cache'}: ")
    assert stderr.endswith("; this run's records are not kept\n")
    assert stderr.count("\n") == 1


def test_a_read_only_cache_folder_gives_one_warning(generated: Path, tmp_path: Path) -> None:
    """The records of a folder nobody may write to are read, never rewritten."""
    if os.geteuid() == 0:
        folder = Path("/sys")  # read-only even for root, who ignores permission bits
        if not folder.is_dir():  # pragma: no cover - root without /sys
            pytest.skip("no folder root cannot write to")
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    fresh = run_cli(*args)
    code, stdout, stderr = run_cli(*args, "--cache", str(folder))
    assert (code, stdout) == fresh[:2]
    assert stderr.startswith("vocmatch: warning: cannot write ")
    assert stderr.count("\n") == 1
    assert not _cache_file(folder).exists()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(["--iou", "0.5"], ["--iou", "0.7"], id="iou"),
        pytest.param([], ["--protocol", "coco"], id="protocol"),
        pytest.param([], ["--fold-case"], id="fold-case"),
        pytest.param([], ["--classes", "class01"], id="classes"),
        pytest.param([], ["--geometry", "box"], id="geometry"),
        pytest.param([], ["--slice", "size"], id="slice"),
        pytest.param([], ["--score-threshold", "0.4"], id="score-threshold"),
        pytest.param([], ["--max-file-size", "2000"], id="max-file-size"),
        pytest.param([], ["--calibration-bins", "3"], id="calibration"),
        pytest.param(["--nms", "0.5"], ["--nms", "0.7"], id="nms"),
        pytest.param([], ["--max-per-image", "10"], id="max-per-image"),
        pytest.param([], ["--iou-arithmetic", "float32"], id="iou-arithmetic"),
    ],
)
def test_other_options_match_every_image_again(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: list[str],
    second: list[str],
) -> None:
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    cache = ["--cache", str(tmp_path / "cache")]
    run_cli(*args, *first, *cache)
    fresh = run_cli(*args, *second)
    spy = Spy(monkeypatch)
    assert run_cli(*args, *second, *cache) == fresh
    assert spy.chunks == _chunks(generated / "gt", generated / "pred", *second)


def test_the_cache_holds_the_present_files_only(generated: Path, tmp_path: Path) -> None:
    """One generation: the records and stats of deleted files are dropped when the cache is
    rewritten."""
    gt, pred = _copy(generated, tmp_path)
    folder = tmp_path / "cache"
    run_cli(str(gt), str(pred), "--cache", str(folder))
    gone = sorted(gt.glob("*.xml"))[:30]
    for path in gone:
        path.unlink()
        (pred / path.name).unlink()
    run_cli(str(gt), str(pred), "--cache", str(folder))
    from vocmatch.evaluation.shards.state import read_state

    raw = read_state(_cache_file(folder).read_bytes(), "cache", CACHE_MAGIC, CACHE_VERSION)
    paths = [p.decode() for p in _paths(raw)]
    assert raw.header["files"] == len(paths) == 2 * 120
    assert not {str(p) for p in gone} & set(paths)
    # The chunks' records are kept joined: one list of keys, each chunk a run of them.
    assert raw.header["layout"] == "joined"
    assert sum(chunk["images"] for chunk in raw.header["chunks"]) == 120
    keys = bytes(raw.arrays["joined.keys"]).decode().split("\0")
    assert set(keys) == {p.stem for p in gt.glob("*.xml")}


def test_changed_chunks_are_matched_by_worker_processes(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many changed files: matched in parts, as ``--jobs`` does."""
    import vocmatch.readers.workers as workers

    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    monkeypatch.setattr(cached, "FEW_CHANGED", 0)
    args = [str(generated / "gt"), str(generated / "pred"), "--format", "json"]
    fresh = run_cli(*args)
    assert run_cli(*args, "--jobs", "2", "--cache", str(tmp_path / "cache")) == fresh
    assert run_cli(*args, "--jobs", "2", "--cache", str(tmp_path / "cache")) == fresh


@pytest.mark.parametrize(
    ("files", "in_workers"),
    [
        pytest.param(2, False, id="a-few-files"),
        pytest.param(8_000, False, id="the-chunks-of-ten-edits-on-80000-images"),
        pytest.param(cached.FEW_CHANGED, True, id="many-files"),
    ],
)
def test_the_chunks_of_a_few_edits_are_matched_in_this_process(
    monkeypatch: pytest.MonkeyPatch, files: int, in_workers: bool
) -> None:
    """Worker processes only when the changed chunks hold many files."""
    import vocmatch.readers.workers as workers
    from vocmatch.evaluation.shards.parts import Part

    monkeypatch.setattr(workers, "available_cores", lambda: 4)
    started: list[int] = []

    def in_processes(task: Any, tasks: list[Any], jobs: int) -> Any:
        started.append(len(tasks))
        raise AssertionError("worker processes started")

    monkeypatch.setattr(workers, "worker_results", in_processes)
    monkeypatch.setattr(cached, "hashed_part_records", lambda part, *_: part.index)
    half = [(f"{n:06}", f"g/{n:06}.xml") for n in range(files // 2)]
    parts = [Part(k + 1, 4, tuple(half[k::4]), tuple(half[k::4])) for k in range(4)]
    options: Any = None
    if in_workers:
        with pytest.raises(AssertionError, match="worker processes started"):
            cached._matched(parts, options, 0, None, files, {})
        assert started
    else:
        assert cached._matched(parts, options, 0, None, files, {}) == {1: 1, 2: 2, 3: 3, 4: 4}
        assert not started


def test_the_terminal_report_is_the_same(generated: Path, tmp_path: Path) -> None:
    args = [str(generated / "gt"), str(generated / "pred"), "--protocol", "coco"]
    fresh = run_cli(*args)
    assert run_cli(*args, "--cache", str(tmp_path / "c")) == fresh
    assert run_cli(*args, "--cache", str(tmp_path / "c")) == fresh


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--shard", "1/2", "--save-state", "S"],
            "--cache 'C': a cache is kept by a whole run, not by a shard's state",
            id="shard",
        ),
        pytest.param(
            ["--save-state", "S"],
            "--cache 'C': a cache is kept by a whole run, not by a shard's state",
            id="save-state",
        ),
        pytest.param(
            ["--dask", "local:1"],
            "--cache 'C': a Dask cluster's workers keep no cache; the cache is kept by a run here",
            id="dask",
        ),
        pytest.param(
            ["--errors"],
            "--cache 'C': a cache keeps match records, not the boxes a report that lists them "
            "reads",
            id="errors",
        ),
        pytest.param(
            ["--split", "IDS"],
            "--cache 'C': a cache is kept for every image of the folders, not a split",
            id="split",
        ),
    ],
)
def test_a_cache_is_refused_where_it_does_not_apply(
    tmp_path: Path, args: list[str], message: str
) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("street_01\n")
    cache = tmp_path / "c"
    given = [{"S": str(tmp_path / "s.vms"), "IDS": str(ids)}.get(a, a) for a in args]
    code, stdout, stderr = run_cli(str(DEMO / "gt"), str(DEMO / "pred"), "--cache", str(cache),
                                   *given)  # fmt: skip
    assert (code, stdout) == (2, "")
    assert stderr == f"vocmatch: error: {message.replace('C', str(cache), 1)}\n"
    assert not cache.exists()


def test_cache_verify_needs_a_cache() -> None:
    code, stdout, stderr = run_cli(str(DEMO / "gt"), str(DEMO / "pred"), "--cache-verify")
    assert (code, stdout) == (2, "")
    assert stderr == "vocmatch: error: --cache-verify: verifies a cache: give a cache folder too\n"


def test_the_library_takes_a_cache(generated: Path, tmp_path: Path) -> None:
    """``evaluate(..., cache=DIR)``: the evaluation of a run without it; a damaged cache is
    one :class:`CacheWarning`."""
    gt, pred = generated / "gt", generated / "pred"
    fresh = evaluate(gt, pred, protocol="coco", jobs=1)
    folder = tmp_path / "cache"
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = evaluate(gt, pred, protocol="coco", cache=folder)
        assert render_text(report, "json") == render_text(fresh, "json")
        assert not [w for w in caught if issubclass(w.category, CacheWarning)]
    _garbage(_cache_file(folder))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate(gt, pred, protocol="coco", cache=folder)
    assert render_text(report, "json") == render_text(fresh, "json")
    assert [w.category for w in caught] == [CacheWarning]
    coco = {"pred_format": "coco", "coco_gt": generated / "coco" / "gt.json"}
    coco_pred = generated / "coco" / "pred.json"
    fresh = evaluate(gt, coco_pred, **coco)
    for _ in range(2):
        report = evaluate(gt, coco_pred, cache=tmp_path / "coco-cache", **coco)
        assert render_text(report, "json") == render_text(fresh, "json")
    with pytest.raises(RequestError, match="kept for XML predictions or COCO results, not yolo"):
        evaluate(gt, coco_pred, pred_format="yolo", cache=folder)


def test_a_refused_run_leaves_the_cache_as_it_was(tmp_path: Path) -> None:
    """Nothing pairs: the one line of a run without a cache, and no cache written."""
    pred = tmp_path / "pred"
    pred.mkdir()
    shutil.copy(DEMO / "pred" / "street_01.xml", pred / "other_01.xml")
    args = [str(DEMO / "gt"), str(pred)]
    fresh = run_cli(*args)
    assert fresh[0] == 2
    folder = tmp_path / "cache"
    assert run_cli(*args, "--cache", str(folder)) == fresh
    assert not _cache_file(folder).exists()

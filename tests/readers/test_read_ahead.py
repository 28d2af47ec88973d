"""A run's two folders read early (:mod:`vocmatch.readers.read_ahead`): the reading threads
start when the folders are named, before numpy is imported; the run's read of the same
folders with the same limits takes that read, any other read drops it and reads as ever;
the columns are the same bits either way, and no thread outlives the block."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.bench_scripts import bench
from tests.evaluation.test_batch import assert_same_columns
from vocmatch.errors import InputError
from vocmatch.readers import read_ahead, scan, workers
from vocmatch.readers.read_ahead import early_read
from vocmatch.readers.scan import read_column_pair

pytestmark = [
    pytest.mark.skipif(
        scan._compiled is None or os.name != "posix",
        reason="the compiled chunk reader is built on POSIX systems with a C compiler",
    ),
    pytest.mark.skipif(workers.available_cores() < 2, reason="one core: nothing read early"),
]

MAX_BYTES = 1 << 20


@pytest.fixture(autouse=True)
def compiled_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """300 images of the benchmark's generator: 600 files, several chunks."""
    root = tmp_path_factory.mktemp("early")
    bench("generate").generate(root, images=300, classes=12, pred_per_image=15, seed=5)
    return str(root / "gt"), str(root / "pred")


@pytest.fixture
def raw_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of each chunk read by the compiled reader, as it starts."""
    started: list[int] = []
    raw_chunk = read_ahead.raw_chunk

    def recorded(*args: Any) -> Any:
        started.append(threading.get_ident())
        return raw_chunk(*args)

    monkeypatch.setattr(read_ahead, "raw_chunk", recorded)
    return started


def reading_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("vocmatch-read")]


def wait_for_reads(started: list[int], count: int) -> None:
    """Until ``count`` chunk reads have started (the threads run on their own)."""
    for _ in range(1000):
        if len(started) >= count:
            return
        threading.Event().wait(0.005)
    raise AssertionError(f"{len(started)} chunk reads started, not {count}")


def test_the_run_takes_the_read_started_early(
    folders: tuple[str, str], raw_reads: list[int]
) -> None:
    """The threads read before the run asks; the run's read of the same folders and limits
    reads no chunk again, and gives the columns of a read started by the run."""
    gt, pred = folders
    with early_read((gt, pred), 2, MAX_BYTES, 10**6):
        wait_for_reads(raw_reads, 2)
        early = read_column_pair(gt, pred, 2, MAX_BYTES)
        chunks = len(raw_reads)
    assert threading.get_ident() not in raw_reads
    later = read_column_pair(gt, pred, 2, MAX_BYTES)
    assert len(raw_reads) == 2 * chunks
    for a, b in zip(early, later, strict=True):
        assert a.root == b.root
        assert_same_columns(a, b)
    assert reading_threads() == []


@pytest.mark.parametrize(
    ("jobs", "max_bytes", "which"),
    [
        pytest.param(1, MAX_BYTES, 0, id="other-jobs"),
        pytest.param(2, MAX_BYTES - 1, 0, id="other-size-limit"),
        pytest.param(2, MAX_BYTES, 1, id="folders-swapped"),
    ],
)
def test_a_read_with_other_folders_or_limits_drops_the_early_one(
    folders: tuple[str, str], raw_reads: list[int], jobs: int, max_bytes: int, which: int
) -> None:
    """The early read is stopped and the run reads its own: its columns, as without one."""
    gt, pred = folders
    roots = (gt, pred) if which == 0 else (pred, gt)
    expected = read_column_pair(*roots, jobs, max_bytes)
    with early_read((gt, pred), 2, MAX_BYTES, 10**6):
        wait_for_reads(raw_reads, 1)
        found = read_column_pair(*roots, jobs, max_bytes)
        assert reading_threads() == []
    for a, b in zip(found, expected, strict=True):
        assert a.root == b.root
        assert_same_columns(a, b)
    assert reading_threads() == []


@pytest.mark.parametrize(
    ("most_files", "jobs", "started"),
    [
        pytest.param(600, 2, False, id="too-many-files"),
        pytest.param(601, 2, True, id="fewer-files"),
        pytest.param(601, 1, False, id="one-job"),
    ],
)
def test_reading_starts_early_below_the_files_given_with_threads(
    folders: tuple[str, str], raw_reads: list[int], most_files: int, jobs: int, started: bool
) -> None:
    """No read starts for as many files as ``most_files`` (a run that goes in parts), nor
    with one worker; the run reads the same columns either way."""
    gt, pred = folders
    with early_read((gt, pred), jobs, MAX_BYTES, most_files):
        threading.Event().wait(0.05)
        assert bool(raw_reads) is started
        read_column_pair(gt, pred, jobs, MAX_BYTES)


def test_a_read_not_taken_stops_with_the_block(
    folders: tuple[str, str], raw_reads: list[int]
) -> None:
    """A block that ends by an exception (a refused request, Ctrl-C) before the run reads:
    the threads stop (the chunks not started are dropped), and none is left."""
    with pytest.raises(KeyboardInterrupt), early_read(folders, 2, MAX_BYTES, 10**6):
        wait_for_reads(raw_reads, 1)
        raise KeyboardInterrupt
    assert reading_threads() == []
    assert len(raw_reads) < 4


def test_a_folder_that_cannot_be_listed_starts_nothing(
    folders: tuple[str, str], raw_reads: list[int], tmp_path: Path
) -> None:
    """The early read says nothing of a missing folder: the run lists it and says why."""
    missing = str(tmp_path / "missing")
    with early_read((folders[0], missing), 2, MAX_BYTES, 10**6), pytest.raises(InputError):
        read_column_pair(folders[0], missing, 2, MAX_BYTES)
    assert raw_reads == []


@pytest.mark.parametrize(
    ("most_files", "listed"),
    [
        pytest.param(600, [], id="entries-reach-the-limit"),
        pytest.param(601, ["gt", "pred"], id="entries-below-the-limit"),
    ],
)
def test_folders_whose_entries_reach_the_limit_are_not_listed(
    folders: tuple[str, str],
    raw_reads: list[int],
    monkeypatch: pytest.MonkeyPatch,
    most_files: int,
    listed: list[str],
) -> None:
    """A run of as many files as the limit or more reads another way: its folders are
    not listed early (a listing of 160,000 files costs a fifth of a second), and nothing
    is read; below it, both are listed and read."""
    seen: list[str] = []
    list_directory = read_ahead.list_directory

    def recorded(root: str) -> Any:
        seen.append(Path(root).name)
        return list_directory(root)

    monkeypatch.setattr(read_ahead, "list_directory", recorded)
    with early_read(folders, 2, MAX_BYTES, most_files):
        if listed:
            wait_for_reads(raw_reads, 1)
    assert seen == listed
    assert bool(raw_reads) == bool(listed)
    assert not reading_threads()

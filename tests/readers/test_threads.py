"""With the compiled reader's chunk call, folders are read by threads of this process
(:mod:`vocmatch.readers.threads`), the chunks scanned with the GIL released: the same column
sets as one thread and as worker processes, on generated sets and hostile mixes; progress in
order from the calling thread; a task's exception reaching the caller once; a stop that
cancels what no thread has started; a refused thread that leaves the work to this one."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.bench_scripts import bench
from tests.conftest import ROOT
from tests.evaluation.test_batch import assert_same_columns
from tests.readers.test_chunk import ENTRIES, PLAIN, POLYGON, obj, voc
from tests.readers.test_workers import big_set
from vocmatch.errors import VocmatchWarning
from vocmatch.readers import read_ahead, scan, workers
from vocmatch.readers.parse import DirectoryListing, list_directory
from vocmatch.readers.scan import ColumnSet, read_listings
from vocmatch.readers.threads import thread_results

compiled_only = pytest.mark.skipif(
    scan._compiled is None or os.name != "posix",
    reason="the compiled chunk reader is built on POSIX systems with a C compiler",
)
two_cores = pytest.mark.skipif(workers.available_cores() < 2, reason="one core: one thread")


@pytest.fixture(autouse=True)
def compiled_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)


def by_processes(
    monkeypatch: pytest.MonkeyPatch, listings: list[DirectoryListing], jobs: int
) -> list[ColumnSet]:
    """The worker processes' route, with the compiled reader in each."""
    with monkeypatch.context() as patch:
        patch.setattr(scan, "reads_in_threads", lambda: False)
        return read_listings(listings, jobs)


def assert_same_sets(a: list[ColumnSet], b: list[ColumnSet]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.root == y.root
        assert_same_columns(x, y)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[DirectoryListing]:
    """300 images of the benchmark's generator (gt and pred): 600 files, many chunks."""
    root = tmp_path_factory.mktemp("generated")
    bench("generate").generate(root, images=300, classes=12, pred_per_image=15, seed=3)
    return [list_directory(root / "gt"), list_directory(root / "pred")]


def hostile_listing(folder: Path) -> DirectoryListing:
    """Every hostile entry of the chunk tests (links, pipes, oversized, unreadable, files the
    parser reads, broken files), each between plain files, 9 times over: 80 chunks' worth
    of left files spread over many chunks."""
    files = []
    for copy in range(9):
        for number, entry in enumerate(ENTRIES):
            make: Callable[[Path], str] = entry.values[0]  # type: ignore[assignment]
            place = folder / f"{copy}-{number}"
            place.mkdir()
            key = f"{copy:02d}-{number:03d}"
            plain = place / "plain.xml"
            plain.write_bytes(voc(obj(f"name{number % 7}", extra="<pose>Left</pose>")))
            files += [(key + "-a", str(plain)), (key + "-b", make(place))]
        # Numbers only Python converts exactly (the reader takes the GIL back for them).
        for number, text in enumerate(LONG_NUMBERS):
            long = folder / f"{copy}-long-{number}.xml"
            box = f"<xmin>{text}</xmin><ymin>2</ymin><xmax>{text}</xmax><ymax>40</ymax>"
            long.write_bytes(voc(obj("long", box, extra=f"<score>{text}</score>")))
            files.append((f"{copy:02d}-long-{number}", str(long)))
    return DirectoryListing(str(folder), tuple(sorted(files)), ())


LONG_NUMBERS = ["0.12345678901234567890123", "1" + "0" * 70 + "e-70", "0" * 66 + "3.25", "7e-5"]


@compiled_only
@pytest.mark.parametrize("jobs", [pytest.param(1, id="one-thread"), pytest.param(2, id="two")])
def test_generated_sets_read_alike_by_threads_and_processes(
    generated: list[DirectoryListing], monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """The benchmark's files: threads give the column sets of one thread and of worker
    processes, bit for bit."""
    threaded = read_listings(generated, jobs)
    assert_same_sets(threaded, read_listings(generated, 1))
    assert_same_sets(threaded, by_processes(monkeypatch, generated, 2))


@compiled_only
@pytest.mark.parametrize("jobs", [pytest.param(1, id="one-thread"), pytest.param(2, id="two")])
def test_hostile_mixes_read_alike_by_threads_and_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """Links, pipes, oversized, unreadable and parser-read files among plain ones, over
    many chunks: the same columns, skipped files and messages on every route."""
    listing = [hostile_listing(tmp_path)]
    threaded = read_listings(listing, jobs, max_bytes=4096)
    assert len(threaded[0].skipped) > 9
    assert_same_sets(threaded, read_listings(listing, 1, max_bytes=4096))
    with monkeypatch.context() as patch:
        patch.setattr(scan, "reads_in_threads", lambda: False)
        assert_same_sets(threaded, read_listings(listing, 2, max_bytes=4096))


@compiled_only
@two_cores
def test_the_compiled_reader_starts_no_process(
    generated: list[DirectoryListing], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two jobs read with two threads of this process: no process pool is made, and the
    compiled reader reads the chunks outside the calling thread."""

    class NoProcesses:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise AssertionError("a process pool was started")

    monkeypatch.setattr(workers, "ProcessPoolExecutor", NoProcesses, raising=False)
    readers: set[int] = set()
    raw_chunk = read_ahead.raw_chunk

    def recorded(*args: Any) -> Any:
        readers.add(threading.get_ident())
        return raw_chunk(*args)

    monkeypatch.setattr(read_ahead, "raw_chunk", recorded)
    sets = read_listings(generated, 2)
    assert [len(s.keys) for s in sets] == [300, 300]
    assert readers and threading.get_ident() not in readers


@compiled_only
@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_reaches_the_total_in_order_from_the_calling_thread(
    generated: list[DirectoryListing], jobs: int
) -> None:
    """Progress is called in the calling thread, increasing, ending at the total."""
    calls: list[tuple[int, int, int]] = []
    read_listings(generated, jobs, progress=lambda done, total: calls.append(
        (done, total, threading.get_ident())))  # fmt: skip
    done = [d for d, _, _ in calls]
    assert done == sorted(done) and len(set(done)) == len(done)
    assert calls[-1][:2] == (600, 600)
    assert {t for _, _, t in calls} == {threading.get_ident()}


@compiled_only
@pytest.mark.parametrize("jobs", [1, 2])
def test_an_error_in_a_chunk_s_fallback_reaches_the_caller_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A MemoryError while the per-file route reads a left file, in several chunks: the
    caller gets the first one in file order, once, and no thread reports another."""
    folder = tmp_path / "set"
    folder.mkdir()
    for i in range(400):
        (folder / f"{i:04d}.xml").write_bytes(POLYGON if i % 50 == 7 else PLAIN)
    failing: list[str] = []

    def out_of_memory(data: bytes, path: str, key: str) -> Any:
        failing.append(path)
        raise MemoryError(path)

    monkeypatch.setattr(scan, "parse_annotation", out_of_memory)
    hooked: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    with pytest.raises(MemoryError) as raised:
        read_listings([list_directory(folder)], jobs)
    assert raised.value.args == (str(folder / "0007.xml"),)
    assert hooked == []
    if jobs == 1:
        assert failing == [str(folder / "0007.xml")]


def test_results_come_in_task_order() -> None:
    """Tasks ending out of order are given back in task order."""

    def late(i: int) -> int:
        time.sleep(0.002 * (10 - i))
        return i * i

    with thread_results(late, [(i,) for i in range(10)], 2) as results:
        assert list(results) == [i * i for i in range(10)]


def test_one_job_runs_in_the_calling_thread() -> None:
    with thread_results(lambda: threading.get_ident(), [(), ()], 1) as results:
        assert set(results) == {threading.get_ident()}


@two_cores
def test_a_stop_cancels_the_tasks_no_thread_started() -> None:
    """An exception in the caller's block (Ctrl-C, a signal turned into an exception)
    cancels the queued tasks; the block ends once the running ones have ended."""
    started: list[int] = []
    ended: list[int] = []

    def slow(i: int) -> int:
        started.append(i)
        time.sleep(0.05)
        ended.append(i)
        return i

    with pytest.raises(KeyboardInterrupt), thread_results(slow, [(i,) for i in range(50)], 2) as results:  # fmt: skip
        next(results)
        raise KeyboardInterrupt
    assert sorted(started) == sorted(ended)
    assert len(started) < 10


def test_a_refused_thread_leaves_the_work_to_this_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the system refuses a thread, the tasks no thread ran run in the calling thread,
    with one warning; the results are the same, in order."""
    submitted = 0
    submit = ThreadPoolExecutor.submit

    def refusing(self: ThreadPoolExecutor, *args: Any, **kwargs: Any) -> Any:
        nonlocal submitted
        submitted += 1
        if submitted > 3:
            raise RuntimeError("can't start new thread")
        return submit(self, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", refusing)
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with thread_results(lambda i: i * 2, [(i,) for i in range(20)], 2) as results:
            assert list(results) == [i * 2 for i in range(20)]
    assert [str(w.message) for w in caught if w.category is VocmatchWarning] == [
        "reading threads failed (can't start new thread); going on with this thread"
    ]


REFUSED_THREAD = """
import sys
import vocmatch.readers.threads as t
class Refusing(t.ThreadPoolExecutor):
    def submit(self, *args, **kwargs):
        raise RuntimeError("can't start new thread")
t.ThreadPoolExecutor = Refusing
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *sys.argv[1:]]
main()
"""


@compiled_only
@two_cores
@pytest.mark.parametrize(
    "command",
    [
        # JUnit lists every image: the files are read here, not in parts by processes.
        pytest.param(["{gt}", "{pred}", "--format", "junit"], id="eval-junit"),
        pytest.param(["{gt}", "{pred}", "--mode", "labels", "--format", "json"], id="labels"),
    ],
)
def test_the_command_line_says_a_thread_was_refused_and_gives_the_same_output(
    tmp_path: Path, command: list[str]
) -> None:
    """A refused thread under the real command: one warning line, the same report, the same
    exit code."""
    gt, pred = big_set(tmp_path, 200)
    args = [part.format(gt=gt, pred=pred) for part in command]
    run = functools.partial(subprocess.run, cwd=ROOT, capture_output=True, timeout=300,
                            check=False)  # fmt: skip
    normal = run([sys.executable, "-m", "vocmatch", *args])
    refused = run([sys.executable, "-c", REFUSED_THREAD, *args])
    assert refused.returncode == normal.returncode
    assert refused.stdout == normal.stdout
    assert refused.stderr.decode().splitlines()[0] == (
        "vocmatch: warning: reading threads failed (can't start new thread); "
        "going on with this thread"
    )


@compiled_only
@pytest.mark.parametrize("jobs", [pytest.param(1, id="one-thread"), pytest.param(2, id="two")])
def test_one_size_record_for_each_distinct_size_across_the_sets(
    generated: list[DirectoryListing], jobs: int
) -> None:
    """Images with the same <size>, in one set or across the sets read together (an image's
    ground truth and predictions), share one record; the values are the parser's."""
    gt, pred = read_listings(generated, jobs)
    records = [size for size in (*gt.sizes, *pred.sizes) if size is not None]
    assert len(records) == 600
    assert len({id(size) for size in records}) == len(set(records))
    assert all(g is p for g, p in zip(gt.sizes, pred.sizes, strict=True))

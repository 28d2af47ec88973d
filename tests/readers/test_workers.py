"""Worker pools: capped at the cores and the tasks, stopped at once when their block ends by
an exception, and never stuck when the system refuses a process: fewer workers, then this
process, the same results in the same order."""

from __future__ import annotations

import errno
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT
from vocmatch.errors import VocmatchWarning
from vocmatch.readers import workers
from vocmatch.readers.scan import PURE_READER_VARIABLE
from vocmatch.readers.workers import available_cores, worker_count, worker_results

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


def square(x: int) -> int:
    return x * x


def sleep_then(x: int) -> int:
    time.sleep(60 if x else 0)
    return x


def die_once(marker: str, x: int) -> int:
    """Kill the worker process the first time (the marker file records it)."""
    if os.getpid() != PARENT and not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return x


PARENT = os.getpid()


@pytest.mark.parametrize(
    ("jobs", "tasks", "expected"),
    [
        pytest.param(10**6, 3, lambda cores: min(cores, 3), id="more-jobs-than-tasks"),
        pytest.param(10**6, 10**6, lambda cores: cores, id="more-jobs-than-cores"),
        pytest.param(0, 100, lambda cores: min(cores, 100), id="zero-is-every-core"),
        pytest.param(1, 100, lambda cores: 1, id="one"),
        pytest.param(4, 0, lambda cores: 1, id="no-task"),
    ],
)
def test_worker_count_is_capped(jobs: int, tasks: int, expected: Any) -> None:
    """At most one worker per available core and per task, at least one."""
    assert worker_count(jobs, tasks) == expected(available_cores())


def test_results_come_in_task_order() -> None:
    """Whatever the number of workers."""
    tasks = [(i,) for i in range(50)]
    for jobs in (1, 2, 8):
        with worker_results(square, tasks, jobs) as results:
            assert list(results) == [i * i for i in range(50)]


class RefusingPool(ProcessPoolExecutor):
    """A pool whose submit fails as a refused fork or thread does."""

    error: BaseException = BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


@pytest.mark.skipif(available_cores() < 2, reason="one core: everything runs in this process")
@pytest.mark.parametrize(
    ("error", "reason"),
    [
        pytest.param(BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"),
                     "Resource temporarily unavailable", id="fork-eagain"),
        pytest.param(OSError(errno.ENOMEM, "Cannot allocate memory"), "Cannot allocate memory",
                     id="fork-enomem"),
        pytest.param(RuntimeError("can't start new thread"), "can't start new thread",
                     id="no-thread"),
        pytest.param(BrokenProcessPool("a child process terminated abruptly"),
                     "a child process terminated abruptly", id="broken-at-start"),
    ],
)  # fmt: skip
def test_a_refused_pool_falls_back_to_this_process(
    monkeypatch: pytest.MonkeyPatch, error: BaseException, reason: str
) -> None:
    """Every start fails: halved until this process computes everything, with a warning."""
    monkeypatch.setattr(RefusingPool, "error", error)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", RefusingPool)
    tasks = [(i,) for i in range(20)]
    with (
        pytest.warns(VocmatchWarning, match=f"worker processes failed \\({reason}\\)"),
        worker_results(square, tasks, 8) as results,
    ):
        assert list(results) == [i * i for i in range(20)]


def test_another_error_is_not_taken_for_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in starting the pool is raised, not hidden by a fallback."""
    monkeypatch.setattr(RefusingPool, "error", ValueError("a bug"))
    monkeypatch.setattr(workers, "ProcessPoolExecutor", RefusingPool)
    with (
        pytest.raises(ValueError, match="a bug"),
        worker_results(square, [(1,), (2,)], 2) as results,
    ):
        list(results)


def test_an_error_in_a_task_is_the_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OSError raised by the task itself reaches the caller as it is."""
    with (
        pytest.raises(FileNotFoundError),
        worker_results(os.stat, [("/no/such/file",), ("/",)], 2) as results,
    ):
        list(results)


@pytest.mark.skipif(available_cores() < 2, reason="one core: everything runs in this process")
def test_a_worker_killed_mid_run_hands_the_rest_to_this_process(tmp_path: Path) -> None:
    """A worker dying (the system's OOM killer, a crash): the pool breaks, the tasks not yet
    done run here, and every result is still there, in order."""
    marker = str(tmp_path / "died")
    tasks = [(marker, i) for i in range(40)]
    with (
        pytest.warns(VocmatchWarning, match="worker processes failed"),
        worker_results(die_once, tasks, 2) as results,
    ):
        assert list(results) == list(range(40))
    assert os.path.exists(marker)


def child_pids() -> set[int]:
    """This process's living children: the block's own workers are judged by the ones it
    added, so a child another test left to the collector cannot fail this one."""
    return {process.pid for process in multiprocessing.active_children() if process.pid}


@pytest.mark.skipif(available_cores() < 2, reason="one core: everything runs in this process")
@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit, RuntimeError])
def test_workers_end_at_once_when_the_block_ends_by_an_exception(
    exception: type[BaseException],
) -> None:
    """Tasks of a minute each, queued many times over: the block's exception terminates the
    workers there and then, instead of waiting for the queue."""
    tasks = [(0,), *[(1,)] * 20]
    before = child_pids()
    start = time.monotonic()
    with pytest.raises(exception), worker_results(sleep_then, tasks, 2) as results:
        assert next(results) == 0
        time.sleep(0.2)  # the workers are now inside their minute
        raise exception
    elapsed = time.monotonic() - start
    assert elapsed < 5.0, f"workers took {elapsed:.1f} s to end"
    assert child_pids() - before == set()


def test_a_consumer_that_stops_early_ends_the_workers() -> None:
    """Leaving the block without reading every result ends the workers too."""
    tasks = [(0,), *[(1,)] * 20]
    before = child_pids()
    start = time.monotonic()
    with worker_results(sleep_then, tasks, 2) as results:
        next(results)
    assert time.monotonic() - start < 5.0
    assert child_pids() - before == set()


def big_set(root: Path, images: int) -> tuple[Path, Path]:
    gt, pred = root / "gt", root / "pred"
    gt.mkdir()
    pred.mkdir()
    xml = (FIXTURES / "demo" / "gt" / "street_01.xml").read_bytes()
    for i in range(images):
        (gt / f"{i:04d}.xml").write_bytes(xml)
        (pred / f"{i:04d}.xml").write_bytes(
            xml.replace(b"</bndbox>", b"</bndbox><score>0.5</score>")
        )
    return gt, pred


REFUSED_FORK = """
import errno, sys
import vocmatch.readers.workers as w
class Refusing(w.ProcessPoolExecutor):
    def submit(self, *args, **kwargs):
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
w.ProcessPoolExecutor = Refusing
from vocmatch.__main__ import main
sys.argv = ["vocmatch", *sys.argv[1:]]
main()
"""


@pytest.mark.skipif(available_cores() < 2, reason="one core: everything runs in this process")
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["{gt}", "{pred}", "--format", "json"], id="eval"),
        pytest.param(["{gt}", "{pred}", "--mode", "labels", "--format", "json"], id="labels"),
        pytest.param(["lint", "--format", "json", "{gt}"], id="lint"),
    ],
)
def test_the_command_line_says_so_and_gives_the_same_output(
    tmp_path: Path, command: list[str]
) -> None:
    """A refused fork under the real command: one warning line, the same report, the same
    exit code. (The pure reader reads with worker processes; the compiled one with threads:
    tests/readers/test_threads.py.)"""
    gt, pred = big_set(tmp_path, 200)
    args = [part.format(gt=gt, pred=pred) for part in command]
    env = {**os.environ, PURE_READER_VARIABLE: "1"}
    normal = subprocess.run(
        [sys.executable, "-m", "vocmatch", *args], cwd=ROOT, capture_output=True, timeout=300,
        check=False, env=env,
    )  # fmt: skip
    refused = subprocess.run(
        [sys.executable, "-c", REFUSED_FORK, *args], cwd=ROOT, capture_output=True, timeout=300,
        check=False, env=env,
    )  # fmt: skip
    assert refused.returncode == normal.returncode
    assert refused.stdout == normal.stdout
    assert refused.stderr.decode().splitlines()[0] == (
        "vocmatch: warning: worker processes failed (Resource temporarily unavailable); "
        "going on with this process"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root may exceed RLIMIT_NPROC")
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc")
def test_a_real_process_limit(tmp_path: Path) -> None:  # pragma: no cover - not as root
    """``ulimit -u`` at the number of processes the user already has: no fork or thread can
    start; the run still ends, with the same report."""
    gt, pred = big_set(tmp_path, 200)
    uid = os.getuid()
    mine = 0
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                threads = next(x for x in status.splitlines() if x.startswith("Threads:"))
                mine += int(threads.split()[1])

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NPROC, (mine + 1, mine + 1))

    args = [str(gt), str(pred), "--format", "json"]
    normal = subprocess.run(
        [sys.executable, "-m", "vocmatch", *args], cwd=ROOT, capture_output=True, timeout=300,
        check=False,
    )  # fmt: skip
    limited = subprocess.run(
        [sys.executable, "-m", "vocmatch", *args], cwd=ROOT, capture_output=True, timeout=300,
        check=False, preexec_fn=limit,
    )  # fmt: skip
    assert limited.returncode == normal.returncode
    assert limited.stdout == normal.stdout
    assert b"worker processes failed" in limited.stderr


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``wait`` of each shutdown of a process pool, in order."""
    found: list[bool] = []
    shutdown = ProcessPoolExecutor.shutdown

    def spy(self: ProcessPoolExecutor, wait: bool = True, **options: Any) -> None:
        found.append(wait)
        shutdown(self, wait=wait, **options)

    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", spy)
    return found


@pytest.mark.skipif(available_cores() < 2, reason="one core: everything runs in this process")
@pytest.mark.parametrize(
    ("wait_at_end", "waited"),
    [pytest.param(True, True, id="waits-by-default"), pytest.param(False, False, id="told-not-to")],
)
def test_once_every_result_is_given_the_block_waits_for_the_workers_to_exit_unless_told_not(
    calls: list[bool], wait_at_end: bool, waited: bool
) -> None:
    """Told not to wait, the block ends while the workers exit; they end all the same."""
    before = child_pids()
    with worker_results(square, [(i,) for i in range(8)], 2, wait_at_end=wait_at_end) as results:
        assert list(results) == [i * i for i in range(8)]
    assert calls[0] is waited
    deadline = time.monotonic() + 10.0
    while child_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child_pids() - before == set()


@pytest.mark.skipif(available_cores() < 2, reason="one core: everything runs in this process")
def test_a_local_run_in_parts_does_not_wait_for_its_workers_to_exit(calls: list[bool]) -> None:
    """Its main process joins the parts while the workers tear their memory down."""
    from vocmatch.core.protocol import protocol
    from vocmatch.evaluation.shards.parts import (
        LocalParts,
        PartListing,
        PartOptions,
        part_records,
        run_parts,
    )

    listing = PartListing.of(FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred")
    results = run_parts(listing, LocalParts(2), part_records, PartOptions(protocol("coco")))
    assert len(results) > 1
    assert calls[0] is False

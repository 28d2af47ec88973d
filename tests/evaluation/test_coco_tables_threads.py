"""The compiled COCO accumulation's tables made a chunk of classes ahead in a thread
(:class:`~vocmatch.evaluation.coco_tables.TablesAhead`): the same tables to the bit as one
call over every class, at most two chunks' tables at once, an error raised once in the
caller's thread, and no thread left running once the block ends."""

from __future__ import annotations

import itertools
import threading
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vocmatch.readers.workers as workers
from tests.evaluation.test_fastaccumulate import assert_same_bits, both_engines, flag_sets
from tests.oracle import random_dataset
from vocmatch.compiled import kernels
from vocmatch.core.protocol import protocol
from vocmatch.evaluation import from_records
from vocmatch.evaluation.coco_tables import CocoTables, TablesAhead


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = kernels("vocmatch.evaluation.fastaccumulate")
    if module is None:
        pytest.skip("the compiled accumulation is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def _ahead(kernel: ModuleType, case: dict[str, Any], chunk: int, threads: int = 1) -> TablesAhead:
    return TablesAhead(
        kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"], chunk, threads
    )


@settings(max_examples=300, deadline=None)
@given(case=flag_sets(), chunk=st.integers(0, 5), threads=st.integers(0, 3))
def test_chunks_made_ahead_are_one_call_s_tables_bit_for_bit(
    kernel: ModuleType, case: dict[str, Any], chunk: int, threads: int
) -> None:
    whole = CocoTables.of(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"])
    with _ahead(kernel, case, chunk, threads) as ahead:
        assert (ahead.chunk, ahead.threads) == (max(1, chunk), max(1, threads))
        for first in range(0, len(case["rankings"]), ahead.chunk):
            tables = ahead.tables(first)
            last = first + ahead.chunk
            assert tables.precision.tobytes() == whole.precision[first:last].tobytes()
            assert tables.recall.tobytes() == whole.recall[first:last].tobytes()


def _case(sizes: list[int]) -> dict[str, Any]:
    """Classes of ``sizes`` predictions, each matched at the first of two thresholds, in
    the one area range."""
    n_pred = sum(sizes)
    starts = np.cumsum([0, *sizes])
    flags = (
        np.ones(n_pred, np.uint8),
        np.ones((n_pred, 1), np.uint8),
        np.zeros((n_pred, 1), np.uint8),
    )
    return {
        "rankings": [
            (np.arange(low, high, dtype=np.int64), np.zeros(high - low, np.int64))
            for low, high in itertools.pairwise(starts)
        ],
        "flags": flags,
        "n_gt": np.full((len(sizes), 1), 5, np.int64),
        "n_t": 2,
    }


#: The tables of a chunk, as made before any test records them.
_TABLES_OF = CocoTables.of
#: Held while an event is recorded: the tables' threads record theirs too.
EVENTS_LOCK = threading.Lock()


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """``("made", row)`` as each chunk's tables are begun (row: the chunk's first row), in
    order, from whichever thread; a test adds its own ``("asked", ...)`` events, holding
    :data:`EVENTS_LOCK`."""
    found: list[tuple[str, int]] = []

    def of(kernel: ModuleType, rankings: Any, *args: Any) -> CocoTables:
        with EVENTS_LOCK:
            found.append(("made", int(rankings[0][0][0])))
        return _TABLES_OF(kernel, rankings, *args)

    monkeypatch.setattr(CocoTables, "of", of)
    return found


def test_one_chunk_is_made_ahead_of_the_one_read(
    kernel: ModuleType, events: list[tuple[str, int]]
) -> None:
    """The first chunk is begun at once, each next one when the one before is asked for:
    never more than two chunks' tables at once."""
    case = _case([3, 4, 5, 6, 7])  # chunks of two classes begin at rows 0, 7 and 18
    with _ahead(kernel, case, 2) as ahead:
        for first in (0, 2, 4):
            events.append(("asked", first))
            assert ahead.tables(first).recall.shape[0] == min(2, 5 - first)
    made = [e for e in events if e[0] == "made"]
    assert made == [("made", 0), ("made", 7), ("made", 18)]
    assert events.index(("made", 7)) > events.index(("asked", 0))
    assert events.index(("made", 18)) > events.index(("asked", 2))


def test_two_threads_make_two_chunks_ahead(
    kernel: ModuleType, events: list[tuple[str, int]]
) -> None:
    """With two threads the first two chunks are begun at once, each next one when the one
    two chunks before is asked for."""
    case = _case([3, 4, 5, 6, 7])  # chunks of one class begin at rows 0, 3, 7, 12 and 18
    with _ahead(kernel, case, 1, threads=2) as ahead:
        for first in range(5):
            with EVENTS_LOCK:
                events.append(("asked", first))
            assert ahead.tables(first).recall.shape[0] == 1
    made = sorted(row for what, row in events if what == "made")
    assert made == [0, 3, 7, 12, 18]
    for row, asked in ((7, 0), (12, 1), (18, 2)):
        assert events.index(("made", row)) > events.index(("asked", asked))


@pytest.mark.parametrize("bad", [0, 3], ids=["first-chunk", "last-chunk"])
def test_an_error_is_raised_in_the_caller_and_no_thread_is_left(
    kernel: ModuleType, bad: int
) -> None:
    """A row out of range in a chunk: the kernel's ValueError, raised where that chunk is
    read; the block's end stops the thread."""
    case = _case([4, 4, 4, 4])
    rankings = list(case["rankings"])
    rankings[bad] = (np.array([0, 1, 2, 99], np.int64), rankings[bad][1])
    case["rankings"] = rankings
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(ValueError, match="rows: out of range"), _ahead(kernel, case, 2) as ahead:
        for first in (0, 2):
            ahead.tables(first)
    assert {t.ident for t in threading.enumerate()} == before


def test_a_block_left_early_stops_the_thread(kernel: ModuleType) -> None:
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(KeyboardInterrupt), _ahead(kernel, _case([5] * 8), 1) as ahead:
        ahead.tables(0)
        raise KeyboardInterrupt
    assert {t.ident for t in threading.enumerate()} == before


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("seed", [3, 7])
def test_an_evaluation_with_two_threads_is_the_numpy_one_bit_for_bit(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, cores: int, seed: int
) -> None:
    """Every prediction counted as many (two threads where two cores are, chunks of a
    quarter of the classes): the numbers of the numpy accumulation, to the bit."""
    monkeypatch.setattr(from_records, "THREADED_PREDICTIONS", 0)
    monkeypatch.setattr(workers, "available_cores", lambda: cores)
    gt, pred = random_dataset(seed, images=25, classes=tuple("abcdefgh"))
    reference, compiled = both_engines(monkeypatch, gt, pred, protocol("coco"))
    assert_same_bits(reference, compiled)


def test_chunks_begun_ahead_beyond_the_threads(
    kernel: ModuleType, events: list[tuple[str, int]]
) -> None:
    """With two threads and three chunks ahead, the first three chunks are begun at once,
    each next one when the one three chunks before is asked for; the tables are the same."""
    case = _case([3, 4, 5, 6, 7])  # chunks of one class begin at rows 0, 3, 7, 12 and 18
    whole = _TABLES_OF(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"])
    with TablesAhead(
        kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"], 1, 2, ahead=3
    ) as ahead:
        assert (ahead.threads, ahead.ahead) == (2, 3)
        for first in range(5):
            with EVENTS_LOCK:
                events.append(("asked", first))
            tables = ahead.tables(first)
            assert tables.precision.tobytes() == whole.precision[first : first + 1].tobytes()
    made = sorted(row for what, row in events if what == "made")
    assert made == [0, 3, 7, 12, 18]
    for row, asked in ((12, 0), (18, 1)):
        assert events.index(("made", row)) > events.index(("asked", asked))


def test_the_evaluation_begins_as_many_chunks_as_the_tables_bound_holds(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many predictions on two cores: as many chunks are begun at once as the tables' bound
    holds (here every chunk), two threads making them; the numbers are numpy's."""
    captured: list[tuple[int, int, int]] = []
    made = TablesAhead.__init__

    def recorded(self: TablesAhead, *args: Any) -> None:
        made(self, *args)
        captured.append((self.chunk, self.threads, self.ahead))

    monkeypatch.setattr(TablesAhead, "__init__", recorded)
    monkeypatch.setattr(from_records, "THREADED_PREDICTIONS", 0)
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    gt, pred = random_dataset(3, images=25, classes=tuple("abcdefgh"))
    reference, compiled = both_engines(monkeypatch, gt, pred, protocol("coco"))
    assert_same_bits(reference, compiled)
    chunk, threads, ahead = captured[0]
    per_class = 4 * 10 * 101 * 3  # areas x thresholds x recall levels x 3 values
    assert (chunk, threads) == (2, 2)  # 8 classes: two chunks a thread
    assert ahead == from_records.COCO_TABLE_VALUES // (per_class * chunk)  # 86: every chunk

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

from tests.evaluation.test_fastaccumulate import flag_sets
from vocmatch.compiled import kernels
from vocmatch.evaluation.coco_tables import CocoTables, TablesAhead


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = kernels("vocmatch.evaluation.fastaccumulate")
    if module is None:
        pytest.skip("the compiled accumulation is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def _ahead(kernel: ModuleType, case: dict[str, Any], chunk: int) -> TablesAhead:
    return TablesAhead(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"], chunk)


@settings(max_examples=300, deadline=None)
@given(case=flag_sets(), chunk=st.integers(0, 5))
def test_chunks_made_ahead_are_one_call_s_tables_bit_for_bit(
    kernel: ModuleType, case: dict[str, Any], chunk: int
) -> None:
    whole = CocoTables.of(kernel, case["rankings"], case["flags"], case["n_gt"], case["n_t"])
    with _ahead(kernel, case, chunk) as ahead:
        assert ahead.chunk == max(1, chunk)
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


def test_one_chunk_is_made_ahead_of_the_one_read(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first chunk is begun at once, each next one when the one before is asked for:
    never more than two chunks' tables at once."""
    events: list[tuple[str, int]] = []
    original = CocoTables.of

    def of(kernel: ModuleType, rankings: Any, *args: Any) -> CocoTables:
        events.append(("made", int(rankings[0][0][0])))  # the chunk's first row
        return original(kernel, rankings, *args)

    monkeypatch.setattr(CocoTables, "of", of)
    case = _case([3, 4, 5, 6, 7])  # chunks of two classes begin at rows 0, 7 and 18
    with _ahead(kernel, case, 2) as ahead:
        for first in (0, 2, 4):
            events.append(("asked", first))
            assert ahead.tables(first).recall.shape[0] == min(2, 5 - first)
    made = [e for e in events if e[0] == "made"]
    assert made == [("made", 0), ("made", 7), ("made", 18)]
    assert events.index(("made", 7)) > events.index(("asked", 0))
    assert events.index(("made", 18)) > events.index(("asked", 2))


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

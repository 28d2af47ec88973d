"""How many threads a compiled kernel's call is split into (vocmatch.kernel_threads)."""

from __future__ import annotations

import pytest

from vocmatch import kernel_threads
from vocmatch.kernel_threads import MAX_KERNEL_THREADS


@pytest.mark.parametrize(
    ("work", "per_thread", "cores", "expected"),
    [
        pytest.param(0, 100, 2, 1, id="no-work"),
        pytest.param(199, 100, 2, 1, id="below-twice-the-minimum"),
        pytest.param(200, 100, 2, 2, id="twice-the-minimum"),
        pytest.param(10_000, 100, 2, 2, id="one-a-core"),
        pytest.param(10_000, 100, 1, 1, id="one-core"),
        pytest.param(10_000, 100, 64, MAX_KERNEL_THREADS, id="capped"),
        pytest.param(300, 100, 64, 3, id="each-its-minimum"),
        pytest.param(5, 0, 2, 2, id="no-minimum"),
    ],
)
def test_kernel_threads(
    monkeypatch: pytest.MonkeyPatch, work: int, per_thread: int, cores: int, expected: int
) -> None:
    """At most one thread a core and MAX_KERNEL_THREADS, each with its minimum of work; one
    (no thread started) below twice the minimum."""
    monkeypatch.setattr(kernel_threads, "available_cores", lambda: cores)
    assert kernel_threads.kernel_threads(work, per_thread) == expected


def test_available_cores_is_at_least_one() -> None:
    assert kernel_threads.available_cores() >= 1

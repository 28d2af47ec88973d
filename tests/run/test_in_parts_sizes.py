"""The sizes of a local run's parts (:func:`~vocmatch.run.in_parts.tapered_sizes`): the
first round of parts the workers take as large as equal parts, each round after smaller
than the one before, so that the workers end close together and the last part back is a
small one; the report is the same as in one process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import vocmatch.evaluation.shards.parts as parts_module
import vocmatch.readers.workers as workers
import vocmatch.run.in_parts as in_parts
from tests.conftest import run_cli
from vocmatch.evaluation.shards.parts import Part
from vocmatch.run.in_parts import tapered_sizes


@pytest.mark.parametrize(
    ("parts", "workers_", "expected"),
    [
        pytest.param(8, 2, [2.0, 2.0, 3.0, 3.0, 2.0, 2.0, 1.0, 1.0], id="four-rounds-of-two"),
        pytest.param(3, 1, [1.5, 2.0, 1.0], id="one-worker"),
        pytest.param(3, 2, [1.0, 1.0, 1.0], id="a-last-round-short"),
        pytest.param(1, 4, [0.5], id="one-part"),
        pytest.param(4, 0, [2.0, 3.0, 2.0, 1.0], id="no-worker-counted-as-one"),
    ],
)  # fmt: skip
def test_each_round_after_the_first_smaller(
    parts: int, workers_: int, expected: list[float]
) -> None:
    assert tapered_sizes(parts, workers_) == expected


def test_a_run_in_parts_takes_tapered_parts(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--jobs 2``: eight parts of consecutive keys, the last ones smallest, and the report
    of ``--jobs 1``."""
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    monkeypatch.setattr(in_parts, "THREADED_FILES", 0)
    split: list[tuple[Part, ...]] = []
    key_ranges = parts_module.key_ranges

    def spy(*args: Any) -> tuple[Part, ...]:
        split.append(key_ranges(*args))
        return split[-1]

    monkeypatch.setattr(parts_module, "key_ranges", spy)
    gt, pred = str(generated / "gt"), str(generated / "pred")
    for name in ("coco", "voc12"):
        single = run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "1")
        assert single[0] == 0
        assert run_cli(gt, pred, "--protocol", name, "--format", "json", "--jobs", "2") == single
    assert len(split) == 2
    counts: Sequence[int] = [p.file_count() for p in split[0]]
    # every file (two a key) in shares of 2, 2, 3, 3, 2, 2, 1, 1 sixteenths, to a key's files
    files = 2 * len(list((generated / "gt").glob("*.xml")))
    shares = [files * s / 16 for s in (2, 2, 3, 3, 2, 2, 1, 1)]
    assert len(counts) == len(shares) and sum(counts) == files
    assert all(abs(c - s) <= 2 for c, s in zip(counts, shares, strict=True)), counts

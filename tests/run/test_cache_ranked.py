"""The order of a cache's stored rankings is checked by the thread that read the cache while
the run matches its changed files (they do not depend on it), and before any ranking is
read: rankings out of order still give one warning and the numbers of a run without a
cache, whether files changed or not."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vocmatch.evaluation.shards.cache_file as cache_file
import vocmatch.run.cached as cached
from tests.conftest import run_cli
from tests.run.test_cache_joined import _array, _cache_file, _crafted, _first_two_swapped, _raw


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About two images a joined chunk: a test set has many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)
    monkeypatch.setattr(cached, "JOINED_SHARE", 4)


def _edit(pred: Path, n: int) -> None:
    """One score of the ``n``-th prediction file changed (its size kept)."""
    path = sorted(pred.glob("*.xml"))[n]
    text = path.read_text()
    at = text.index("<score>") + len("<score>") + 2
    path.write_text(text[:at] + ("1" if text[at] != "1" else "2") + text[at + 1 :])


def _copied(generated: Path, tmp_path: Path) -> tuple[Path, Path]:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    return gt, pred


def test_an_edited_run_matches_its_changed_files_before_the_rankings_order_is_checked(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check of the rankings' order waits for a changed chunk to be matched: it runs
    only if the run matches while the cache's rankings are being checked (else the check
    finds nothing matched after its wait)."""
    gt, pred = _copied(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json", "--cache", str(tmp_path / "cache")]
    assert run_cli(*args)[0] == 0
    _edit(pred, 7)
    matched = threading.Event()
    seen: list[bool] = []
    task, check = cached.hashed_part_records, cache_file.rankings_hold

    def matching(*given: Any) -> Any:
        found = task(*given)
        matched.set()
        return found

    def checking(*given: Any) -> bool:
        seen.append(matched.wait(5))
        return check(*given)

    monkeypatch.setattr(cached, "hashed_part_records", matching)
    monkeypatch.setattr(cache_file, "rankings_hold", checking)
    code, stdout, stderr = run_cli(*args)
    assert (code, stderr) == (0, "")
    assert seen == [True]
    assert stdout == run_cli(*args[:4])[1]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_array("joined.ranked_rows", _first_two_swapped), id="out-of-order"),
        pytest.param(_array("joined.ranked_rank", np.zeros_like), id="places-zeroed"),
    ],
)
@pytest.mark.parametrize("edited", [pytest.param(0, id="warm"), pytest.param(3, id="edited")])
def test_rankings_out_of_order_give_one_warning_and_the_right_numbers(
    generated: Path, tmp_path: Path, change: Callable[[Any], None], edited: int
) -> None:
    """A crafted cache (valid checksum) whose rankings are out of order, with ``edited``
    prediction files changed: one warning, every image matched again, the numbers of a run
    without a cache, and a cache the next run reads without a warning."""
    gt, pred = _copied(generated, tmp_path)
    folder = tmp_path / "cache"
    args = [str(gt), str(pred), "--format", "json"]
    run_cli(*args, "--cache", str(folder))
    assert _raw(folder).header["layout"] == "joined"
    _crafted(change)(_cache_file(folder))
    for n in range(edited):
        _edit(pred, 11 * n)
    code, stdout, stderr = run_cli(*args)
    again = run_cli(*args, "--cache", str(folder))
    assert again[:2] == (code, stdout)
    assert again[2].replace(stderr, "", 1) == (
        f"vocmatch: warning: cache {_cache_file(folder)}: corrupted rankings; "
        "every image was matched again\n"
    )
    assert run_cli(*args, "--cache", str(folder)) == (code, stdout, stderr)

"""A run with a cache takes the results of the images of the chunks it took from the cache
from those the thread that read the cache makes of its joined records, and makes here only
the results of the chunks it read and matched: the report is that of a run without a cache,
byte for byte."""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vocmatch.evaluation.from_records as from_records
import vocmatch.run.cached as cached
from tests.conftest import run_cli


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About two images a joined chunk: a test set has many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)
    monkeypatch.setattr(cached, "JOINED_SHARE", 4)


def _copied(generated: Path, tmp_path: Path) -> tuple[Path, Path]:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    return gt, pred


def _score_edited(gt: Path, pred: Path) -> None:
    """A score of one prediction file changed."""
    path = sorted(pred.glob("*.xml"))[7]
    path.write_text(re.sub(r"<score>0\.", "<score>0.9", path.read_text(), count=1))


def _pair_removed(gt: Path, pred: Path) -> None:
    """One image's files removed."""
    name = sorted(gt.glob("*.xml"))[40].name
    (gt / name).unlink()
    (pred / name).unlink()


def _pair_added(gt: Path, pred: Path) -> None:
    """One image's files copied under a new key."""
    name = sorted(gt.glob("*.xml"))[3].name
    shutil.copy(gt / name, gt / "zz-added.xml")
    shutil.copy(pred / name, pred / "zz-added.xml")


def _nothing(gt: Path, pred: Path) -> None:
    """No file changed (a warm run)."""


@pytest.mark.parametrize(
    ("change", "most_made_here"),
    [
        pytest.param(_nothing, 0, id="warm"),
        pytest.param(_score_edited, 20, id="score-edited"),
        pytest.param(_pair_removed, 20, id="pair-removed"),
        pytest.param(_pair_added, 20, id="pair-added"),
    ],
)
def test_a_run_with_a_cache_makes_here_the_results_of_the_images_it_matched_only(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None],
    most_made_here: int,
) -> None:
    """The run's own thread makes the results of a few images at most (those of its changed
    chunks, about two images each), the cache's thread those of every image it holds; the
    report is that of a run without a cache."""
    gt, pred = _copied(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    with_cache = [*args, "--cache", str(tmp_path / "cache")]
    assert run_cli(*with_cache)[0] == 0
    change(gt, pred)
    made: list[tuple[bool, int]] = []
    make = from_records.image_results

    def making(records: Any, *given: Any) -> Any:
        here = threading.current_thread() is threading.main_thread()
        made.append((here, len(records.keys)))
        return make(records, *given)

    monkeypatch.setattr(from_records, "image_results", making)
    code, stdout, stderr = run_cli(*with_cache)
    assert (code, stderr) == (0, "")
    here = sum(n for on_main, n in made if on_main)
    elsewhere = [n for on_main, n in made if not on_main]
    assert here <= most_made_here
    assert elsewhere == [150]
    monkeypatch.setattr(from_records, "image_results", make)
    assert stdout == run_cli(*args)[1]

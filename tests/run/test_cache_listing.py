"""How a run with a cache lists its files: both sides at once, each file's stat taken as its
folder is read (no path stat'ed a second time where the compiled reader lists the folders),
the same report and the same refusals as a run without a cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import vocmatch.run.cached as cached
from tests.conftest import run_cli
from vocmatch.readers import folders, scan

needs_listing = pytest.mark.skipif(
    getattr(folders._compiled, "list_folder_stats", None) is None,
    reason="the compiled reader lists folders on POSIX systems with a C compiler",
)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About eight images a chunk, so that a test set has many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)


def _copy(source: Path, target: Path) -> tuple[Path, Path]:
    shutil.copytree(source / "gt", target / "gt")
    shutil.copytree(source / "pred", target / "pred")
    return target / "gt", target / "pred"


def _edit(path: Path) -> None:
    """One score digit changed, the size kept."""
    text = path.read_text()
    start = text.index("<score>") + len("<score>") + 2
    digit = "1" if text[start] != "1" else "2"
    path.write_text(text[:start] + digit + text[start + 1 :])


class StatSpy:
    """Counts the paths stat'ed by path (the compiled stat of many paths), the chunks
    matched."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stat = self.chunks = 0
        compiled = folders._compiled
        stat_files, task = compiled.stat_files, cached.hashed_part_records

        def counted_stat(paths: list[str]) -> Any:
            self.stat += len(paths)
            return stat_files(paths)

        def counted_task(*args: Any) -> Any:
            self.chunks += 1
            return task(*args)

        monkeypatch.setattr(compiled, "stat_files", counted_stat)
        monkeypatch.setattr(cached, "hashed_part_records", counted_task)


@needs_listing
@pytest.mark.parametrize(
    "jobs", [pytest.param([], id="threads"), pytest.param(["--jobs", "1"], id="one-job")]
)
def test_a_cached_run_stats_no_path_after_listing(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: list[str]
) -> None:
    """Warm and edited runs compare the stats the listing took: no path is stat'ed again,
    the edited chunk alone is matched, and the report is a run's without a cache."""
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)
    gt, pred = _copy(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json"]
    cache = ["--cache", str(tmp_path / "cache"), *jobs]
    fresh = run_cli(*args)
    assert run_cli(*args, *cache) == fresh
    spy = StatSpy(monkeypatch)
    assert run_cli(*args, *cache) == fresh
    assert (spy.stat, spy.chunks) == (0, 0)
    _edit(sorted(pred.glob("*.xml"))[20])
    fresh = run_cli(*args)
    assert run_cli(*args, *cache) == fresh
    assert (spy.stat, spy.chunks) == (0, 1)


@pytest.mark.parametrize(
    "pure", [pytest.param("0", id="compiled", marks=needs_listing), pytest.param("1", id="pure")]
)
@pytest.mark.parametrize(
    ("gt_state", "pred_state"),
    [
        pytest.param("missing", "missing", id="both-missing"),
        pytest.param("empty", "missing", id="no-gt-file-pred-missing"),
        pytest.param("empty", "full", id="no-gt-file"),
        pytest.param("full", "missing", id="pred-missing"),
    ],
)
def test_sides_listed_at_once_are_refused_as_without_a_cache(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pure: str,
    gt_state: str,
    pred_state: str,
) -> None:
    """The first refusal a run without a cache gives, whichever side's listing ends first:
    exit code, stdout and stderr."""
    monkeypatch.setenv(scan.PURE_READER_VARIABLE, pure)
    gt, pred = _copy(generated, tmp_path)
    for side, state in ((gt, gt_state), (pred, pred_state)):
        if state != "full":
            shutil.rmtree(side)
        if state == "empty":
            side.mkdir()
    args = [str(gt), str(pred), "--format", "json"]
    fresh = run_cli(*args)
    assert fresh[0] != 0
    assert run_cli(*args, "--cache", str(tmp_path / "cache")) == fresh
    assert not os.path.exists(tmp_path / "cache" / cached.CACHE_NAME)


def test_a_set_scored_against_itself_keeps_its_cache(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ground truth's folder given as the predictions' too: its files are in the stat
    index twice, with the same stat and digest; a warm run reads that index (no warning)
    and matches nothing again (fails before: 'corrupted stat index' on every run)."""
    folder = tmp_path / "gt"
    shutil.copytree(generated / "gt", folder)
    args = [str(folder), str(folder), "--format", "json"]
    cache = ["--cache", str(tmp_path / "cache")]
    fresh = run_cli(*args)
    assert run_cli(*args, *cache) == fresh
    spy = StatSpy(monkeypatch)
    assert run_cli(*args, *cache) == fresh
    assert spy.chunks == 0

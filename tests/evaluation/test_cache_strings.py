"""The cache file's strings (its stat index's paths, the joined records' image keys and
paths) written again from the bytes read when a run holds the same ones: the new file is
byte for byte the one a cold run of the same files writes."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vocmatch.run.cached as cached
from tests.conftest import run_cli
from tests.run.test_cache import _edit
from vocmatch.evaluation.shards import cache_file, state
from vocmatch.evaluation.shards.cache_file import CACHE_MAGIC, CACHE_VERSION
from vocmatch.evaluation.shards.cache_strings import StoredStrings, string_bytes
from vocmatch.evaluation.shards.state import RawState, read_state, write_state


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About two images a chunk of joined records: edits change a few chunks of many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)
    monkeypatch.setattr(cached, "JOINED_SHARE", 4)


#: The arrays of a cache file that hold strings.
STRING_ARRAYS = (
    "file_paths",
    "joined.keys",
    "joined.gt_paths",
    "joined.pred_paths",
    "joined.no_pred",
)


class _Kept:
    """The cache files' bytes read, and the arrays of the cache files written."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[bytes] = []
        self.written: list[dict[str, Any]] = []
        read, pieces = state.read_state_file, state.state_pieces

        def reading(*args: Any, **kwargs: Any) -> bytes:
            data = read(*args, **kwargs)
            self.read.append(data)
            return data

        def writing(raw: RawState, *args: Any) -> list[bytes | memoryview]:
            self.written.append(dict(raw.arrays))
            return pieces(raw, *args)

        monkeypatch.setattr(state, "read_state_file", reading)
        monkeypatch.setattr(cache_file, "state_pieces", writing)

    def taken(self) -> set[str]:
        """The string arrays of the one file written that are views of the one read."""
        (data,), (arrays,) = self.read, self.written
        read = np.frombuffer(data, np.uint8)
        return {name for name in STRING_ARRAYS if np.shares_memory(arrays[name], read)}


def _edits(gt: Path, pred: Path) -> None:
    for path in sorted(pred.glob("*.xml"))[5:150:30]:
        _edit(path)


def _edits_and_a_file_added(gt: Path, pred: Path) -> None:
    _edits(gt, pred)
    shutil.copy(sorted(gt.glob("*.xml"))[0], gt / "zz_new.xml")
    shutil.copy(sorted(pred.glob("*.xml"))[0], pred / "zz_new.xml")


def _copied(generated: Path, tmp_path: Path, without_pred: int = 0) -> tuple[Path, Path]:
    """The generated set, the first ``without_pred`` images without a prediction file."""
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    for path in sorted(pred.glob("*.xml"))[:without_pred]:
        path.unlink()
    return gt, pred


@pytest.mark.parametrize(
    ("change", "without_pred", "taken"),
    [
        pytest.param(_edits, 0, set(STRING_ARRAYS), id="edits"),
        pytest.param(_edits, 3, set(STRING_ARRAYS), id="edits-images-without-predictions"),
        # Another listing: the paths and keys are joined and encoded again.
        pytest.param(_edits_and_a_file_added, 0, set(), id="a-file-added"),
    ],
)
def test_an_edited_run_writes_the_strings_it_read_as_read(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, Path], None],
    without_pred: int,
    taken: set[str],
) -> None:
    """After edits, the new cache file's paths and keys are the bytes of the file read
    (none joined and encoded again unless the files listed changed); the run prints what a
    run without a cache prints, and its file is byte for byte the one a cold run writes."""
    gt, pred = _copied(generated, tmp_path, without_pred)
    args = [str(gt), str(pred), "--format", "json"]
    cache = tmp_path / "cache"
    run_cli(*args, "--cache", str(cache))
    change(gt, pred)
    fresh = run_cli(*args)
    assert fresh[0] in (0, 3)
    spy = _Kept(monkeypatch)
    assert run_cli(*args, "--cache", str(cache)) == fresh
    assert spy.taken() == taken
    cold = tmp_path / "cold"
    assert run_cli(*args, "--cache", str(cold)) == fresh
    assert (cache / cached.CACHE_NAME).read_bytes() == (cold / cached.CACHE_NAME).read_bytes()


def _a_path_where_none(raw: RawState) -> None:
    """The first image without a prediction file given a prediction path (a file that is
    read as the same: the path of an image marked without one is not read)."""
    no_pred = raw.arrays["joined.no_pred"]
    paths = raw.arrays["joined.pred_paths"].tobytes().decode().split("\0")
    paths[int(np.flatnonzero(no_pred)[0])] = "not/read.xml"
    raw.arrays["joined.pred_paths"] = np.frombuffer("\0".join(paths).encode(), np.uint8)  # type: ignore[index]


def test_a_cache_holding_a_path_for_an_image_without_predictions_is_written_as_a_run_writes_it(
    generated: Path, tmp_path: Path
) -> None:
    """A cache whose image without a prediction file holds a path anyway (read as none):
    an edited run writes the empty path a cold run writes, not the bytes read."""
    gt, pred = _copied(generated, tmp_path, without_pred=3)
    args = [str(gt), str(pred), "--format", "json"]
    cache = tmp_path / "cache"
    run_cli(*args, "--cache", str(cache))
    path = cache / cached.CACHE_NAME
    raw = read_state(path.read_bytes(), str(path), CACHE_MAGIC, CACHE_VERSION)
    changed = RawState(raw.header, dict(raw.arrays))
    _a_path_where_none(changed)
    path.write_bytes(write_state(changed, CACHE_MAGIC, CACHE_VERSION))
    _edits(gt, pred)
    fresh = run_cli(*args)
    assert run_cli(*args, "--cache", str(cache)) == fresh
    cold = tmp_path / "cold"
    assert run_cli(*args, "--cache", str(cold)) == fresh
    assert path.read_bytes() == (cold / cached.CACHE_NAME).read_bytes()


@pytest.mark.parametrize(
    ("values", "taken"),
    [
        pytest.param(("a", "b"), True, id="the-same"),
        pytest.param(("a", "c"), False, id="another-value"),
        pytest.param(("a",), False, id="fewer"),
        pytest.param(("a", None), False, id="none-for-a-path"),
    ],
)
def test_stored_strings_are_taken_for_the_same_values_only(
    values: tuple[str | None, ...], taken: bool
) -> None:
    """The bytes read are written again for the values they held, else the values are
    joined and encoded."""
    stored_bytes = np.frombuffer(b"a\0b", np.uint8)
    stored = StoredStrings({"file_paths": (("a", "b"), stored_bytes)})
    found = string_bytes(stored, "file_paths", values)
    assert (found is stored_bytes) == taken
    expected = "\0".join("" if v is None else v for v in values).encode()
    assert found.tobytes() == expected

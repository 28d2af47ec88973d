"""The one writer's content written ahead (:func:`vocmatch.files.stage_chunks`): written and
flushed beside the target while other work runs, put in its place whole by a commit, or
removed by a discard; until then the target keeps its earlier content, and a signal's
clean-up finds the temporary file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from vocmatch.errors import OutputError
from vocmatch.files import stage_chunks, temporary_files


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".vocmatch-"))


@pytest.mark.parametrize("existing", [True, False], ids=["replaced", "new"])
def test_a_commit_puts_the_pieces_in_place(tmp_path: Path, existing: bool) -> None:
    """Until the commit the target is as it was; then it holds the pieces, and nothing is
    left beside it."""
    target = tmp_path / "cache.vmc"
    if existing:
        target.write_bytes(b"earlier")
        target.chmod(0o600)
    staged = stage_chunks(target, [b"new ", b"", b"content"])
    assert staged is not None
    assert (target.read_bytes() if existing else None) == (b"earlier" if existing else None)
    assert len(_leftovers(tmp_path)) == 1
    assert [Path(p).name for p in temporary_files()] == _leftovers(tmp_path)
    staged.commit()
    assert target.read_bytes() == b"new content"
    assert _leftovers(tmp_path) == []
    assert temporary_files() == ()
    if existing:
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
    staged.commit()  # once only
    assert target.read_bytes() == b"new content"


def test_a_discard_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "cache.vmc"
    target.write_bytes(b"earlier")
    staged = stage_chunks(target, [b"new"])
    assert staged is not None
    staged.discard()
    staged.commit()  # a discarded file stays discarded
    assert target.read_bytes() == b"earlier"
    assert _leftovers(tmp_path) == []
    assert temporary_files() == ()


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(lambda tmp: Path(os.devnull), id="special-file"),
        pytest.param(lambda tmp: tmp / "missing" / "cache.vmc", id="missing-folder"),
        pytest.param(lambda tmp: tmp, id="a-folder"),
    ],
)
def test_a_target_that_cannot_be_replaced_is_not_staged(tmp_path: Path, where: object) -> None:
    """Written the usual way instead, whose checks say why it cannot be, if it cannot."""
    assert callable(where)
    assert stage_chunks(where(tmp_path), [b"x"]) is None
    assert _leftovers(tmp_path) == []


def test_a_folder_that_cannot_be_written_is_one_output_error(tmp_path: Path) -> None:
    """Nothing is left to remove."""
    if os.geteuid() == 0:
        folder = Path("/sys")  # read-only even for root, who ignores permission bits
        if not folder.is_dir():  # pragma: no cover - root without /sys
            pytest.skip("no folder root cannot write to")
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    with pytest.raises(OutputError, match=r"^cannot write .*cache\.vmc: "):
        stage_chunks(folder / "cache.vmc", [b"x"])
    assert temporary_files() == ()

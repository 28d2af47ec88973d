"""The one writer given its content in pieces (:func:`vocmatch.files.save_chunks`): the file
holds the pieces one after the other, whatever the system writes a call."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from vocmatch import files as output
from vocmatch.files import save_bytes, save_chunks

PIECES = [
    pytest.param([], id="nothing"),
    pytest.param([b""], id="one-empty-piece"),
    pytest.param([b"{", b"", b'"a": 1', b"", b"}\n"], id="empty-pieces-between"),
    pytest.param([b"x" * 100_000, b"y", b"z" * 70_000], id="large-and-small"),
    pytest.param([bytes([i % 256]) * (i % 7) for i in range(3000)], id="more-pieces-than-a-call"),
]


def _short_writes(monkeypatch: pytest.MonkeyPatch, writev: bool) -> list[int]:
    """Make every write call write at most 7 bytes (of its first piece only for writev,
    as a pipe or a signal may cut a write short), or take os.writev away; the calls' sizes
    are listed."""
    real_write = os.write
    sizes: list[int] = []

    def short_write(descriptor: int, data: bytes | memoryview) -> int:
        written = real_write(descriptor, bytes(data)[:7])
        sizes.append(written)
        return written

    def short_writev(descriptor: int, pieces: Sequence[bytes | memoryview]) -> int:
        assert 0 < len(pieces) <= 1024 and all(len(p) for p in pieces)
        return short_write(descriptor, pieces[0])

    monkeypatch.setattr(output.os, "write", short_write)
    if writev:
        monkeypatch.setattr(output.os, "writev", short_writev, raising=False)
    else:
        monkeypatch.delattr(output.os, "writev", raising=False)
    return sizes


@pytest.mark.parametrize(
    "writev", [pytest.param(True, id="writev"), pytest.param(False, id="write")]
)
@pytest.mark.parametrize("pieces", PIECES)
def test_the_file_is_the_pieces_one_after_the_other_across_short_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pieces: list[bytes], writev: bool
) -> None:
    """Empty pieces, pieces larger than a write, more pieces than one writev call takes:
    the file is their concatenation, written whole although each call writes 7 bytes."""
    target = tmp_path / "report.json"
    target.write_bytes(b"earlier\n")
    sizes = _short_writes(monkeypatch, writev)
    save_chunks(target, pieces)
    monkeypatch.undo()
    assert target.read_bytes() == b"".join(pieces)
    assert sum(sizes) == len(b"".join(pieces))
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize("pieces", PIECES)
def test_pieces_are_written_as_their_concatenation_by_save_bytes(
    tmp_path: Path, pieces: list[bytes]
) -> None:
    """save_chunks and save_bytes of the joined pieces write the same file."""
    save_chunks(tmp_path / "a", pieces)
    save_bytes(tmp_path / "b", b"".join(pieces))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_pieces_go_to_a_special_file_in_place(tmp_path: Path) -> None:
    """A named pipe is written through, not replaced, piece after piece."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        save_chunks(pipe, [b"[1, ", b"", b"2]\n"])
        assert os.read(reader, 100) == b"[1, 2]\n"
    finally:
        os.close(reader)
    assert pipe.exists() and not pipe.is_file()

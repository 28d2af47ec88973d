"""A hashing reader keeps, for each file read, the stat of the file opened and the digest of
the bytes its records come from: a chunk of local files is read in one call of the compiled
reader (``fastxml.read_chunk_kept``), the files it leaves (and every file without it) by
``read_bytes``; both give the same columns, stats and digests, and a file edited after it
was read keeps the digest of the bytes read, never of a second read. A digest known already
under the stat a file has before it is read is taken, not hashed again."""

from __future__ import annotations

import hashlib
import os
from array import array
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.evaluation.test_batch import assert_same_columns
from tests.readers.test_chunk import ENTRIES, MAX_BYTES, PLAIN, _write, obj, voc
from vocmatch.errors import AnnotationError
from vocmatch.readers import hashed_reads, scan
from vocmatch.readers.file_stats import file_stat
from vocmatch.readers.hashed_reads import HashingReader
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.scan import read_listed_columns

needs_compiled = pytest.mark.skipif(
    scan._compiled is None or os.name != "posix",
    reason="the compiled chunk reader is built on POSIX systems with a C compiler",
)

READERS = [
    pytest.param("compiled", id="compiled", marks=needs_compiled),
    pytest.param("pure", id="pure"),
]


def _use(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    if reader == "pure":
        monkeypatch.setenv(scan.PURE_READER_VARIABLE, "1")
    else:
        monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)


def _found(reader: HashingReader, path: str) -> tuple[tuple[int, ...], bytes] | None:
    """The stat and digest a reader keeps of a file."""
    kept = reader.kept([path])
    if kept is None:
        return None
    return tuple(kept.stats[0].tolist()), kept.digests[0].tobytes()


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=hashed_reads.DIGEST_SIZE).digest()


def _counted_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the files scanned one by one (not by the chunk reader)."""
    scanned: list[int] = []
    fast_compiled = scan._fast_compiled

    def counted(data: bytes, names_seen: Any) -> Any:
        scanned.append(len(data))
        return fast_compiled(data, names_seen)

    monkeypatch.setattr(scan, "_fast_compiled", counted)
    return scanned


@needs_compiled
@pytest.mark.parametrize(("make", "left"), ENTRIES)
def test_a_hashing_reader_reads_as_the_pure_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], str], left: bool
) -> None:
    """Between two plain files, each entry gives the columns, skipped files, stats and
    digests of the pure route; a file read has the digest of its bytes and the stat of the
    file, one that cannot be read has none. The chunk is read in one call: only the file it
    leaves is scanned on its own."""
    files = [
        ("a", _write(tmp_path, "a.xml", PLAIN)),
        ("b", make(tmp_path)),
        ("c", _write(tmp_path, "c.xml", voc(obj("cat", extra="<pose>Left</pose>")))),
    ]
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)
    scanned = _counted_scans(monkeypatch)
    compiled = HashingReader()
    columns = read_listed_columns(files, MAX_BYTES, compiled)
    assert len(scanned) <= (1 if left else 0)
    monkeypatch.setenv(scan.PURE_READER_VARIABLE, "1")
    pure = HashingReader()
    assert_same_columns(columns, read_listed_columns(files, MAX_BYTES, pure))
    unread = 0
    for _, path in files:
        try:
            data = read_bytes(path, MAX_BYTES)
        except AnnotationError:
            assert (compiled.kept([path]), pure.kept([path])) == (None, None)
            unread += 1
        else:  # read, whether or not its records could be
            assert _found(compiled, path) == _found(pure, path) == (file_stat(path), _digest(data))
    paths = [path for _, path in files]
    assert (compiled.kept(paths) is None) == (pure.kept(paths) is None) == (unread > 0)


@needs_compiled
def test_a_chunk_of_many_batches_keeps_every_file(tmp_path: Path) -> None:
    """More files than a batch of the chunk reader holds, sizes varied, some left to the
    per-file route: each file read keeps its own bytes' digest and its own stat."""
    files = []
    for i in range(700):
        data = voc(*(obj(f"c{i % 7}") for _ in range(i % 5)), filename=f"<filename>{i}</filename>")
        if i % 97 == 3:
            data = data.replace(b">c", b">&amp;c", 1)  # left to the per-file route
        files.append((f"k{i:04}", _write(tmp_path, f"k{i:04}.xml", data)))
    reader = HashingReader()
    columns = read_listed_columns(files, 1 << 20, reader)
    assert len(columns.keys) == 700
    kept = reader.kept([path for _, path in files][::-1])
    assert kept is not None
    assert kept.stats.tolist() == [list(file_stat(path) or ()) for _, path in files][::-1]
    assert kept.digests.tobytes() == b"".join(
        _digest(Path(path).read_bytes()) for _, path in files[::-1]
    )


@pytest.mark.parametrize("reader", READERS)
def test_a_file_edited_after_it_is_read_keeps_the_digest_of_the_bytes_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """A file rewritten right after its bytes were read (before they are hashed): its
    columns, its digest and its stat are those of the bytes read, not of the file as it
    is now (whose stat differs: a cache hashes it again next time)."""
    _use(monkeypatch, reader)
    before = voc(obj("cat"), obj("dog"))
    after = voc(obj("owl"))
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", before)) for i in range(3)]
    edited = files[1][1]
    stat_before = file_stat(edited)

    def rewrite() -> None:
        os.utime(edited, ns=(1, 1))
        Path(edited).write_bytes(after)

    if reader == "compiled":
        keep_read = HashingReader.keep_read

        def edited_then_kept(self: HashingReader, *args: Any) -> None:
            rewrite()
            keep_read(self, *args)

        monkeypatch.setattr(HashingReader, "keep_read", edited_then_kept)
    else:
        read_bytes = hashed_reads.read_bytes

        def read_then_edited(path: str, limit: int) -> bytes:
            data = read_bytes(path, limit)
            if path == edited:
                rewrite()
            return data

        monkeypatch.setattr(hashed_reads, "read_bytes", read_then_edited)
    hashing = HashingReader()
    columns = read_listed_columns(files, MAX_BYTES, hashing)
    assert Path(edited).read_bytes() == after
    assert len(columns.labels) == 6
    assert _found(hashing, edited) == (stat_before, _digest(before))
    assert file_stat(edited) != stat_before


@needs_compiled
def test_a_read_without_a_hashing_reader_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run without a cache reads its chunks by read_chunk, which keeps no bytes: never by
    read_chunk_kept."""
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)
    assert scan._compiled is not None

    def refused(*args: Any) -> Any:
        raise AssertionError("read_chunk_kept called")

    monkeypatch.setattr(scan._compiled, "read_chunk_kept", refused)
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", PLAIN)) for i in range(20)]
    assert len(read_listed_columns(files, MAX_BYTES).keys) == 20
    assert len(scan.read_columns(str(tmp_path)).keys) == 20


@pytest.mark.parametrize("reader", READERS)
def test_a_digest_known_under_the_stat_read_is_taken_not_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """A file whose stat before reading is the one its known digest goes with keeps that
    digest, its bytes not hashed; a file known under another stat, and one not known, keep
    the digest of their bytes."""
    _use(monkeypatch, reader)
    files = [(key, _write(tmp_path, f"{key}.xml", PLAIN)) for key in ("a", "b", "c")]
    (_, same), (_, other), _ = files
    stat = array("q", file_stat(same) or ()).tobytes()
    known = {same: (stat, b"k" * 16), other: (bytes(len(stat)), b"o" * 16)}
    hashed: list[int] = []
    blake2b = hashlib.blake2b

    def counted(data: Any, digest_size: int) -> Any:
        hashed.append(len(data))
        return blake2b(data, digest_size=digest_size)

    monkeypatch.setattr(hashed_reads, "hashlib", SimpleNamespace(blake2b=counted))
    found = HashingReader(known)
    read_listed_columns(files, MAX_BYTES, found)
    digests = [(_found(found, path) or ((), b""))[1] for _, path in files]
    assert digests == [b"k" * 16, _digest(PLAIN), _digest(PLAIN)]
    assert hashed == [len(PLAIN)] * 2

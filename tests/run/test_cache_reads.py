"""How a run with a cache reads the files of the chunks it matches: a chunk's files in one
call of the compiled chunk reader, which gives back each file's stat and the bytes it read
(hashed for the cache); where that reader is not built (``VOCMATCH_PURE_READER=1``), file by
file. Both routes write the same cache, byte for byte, and print the same report; a file
that cannot be read has its chunk read again next time; a file edited while it is read is
matched, and keyed, by the bytes read. A chunk read again for an edit hashes its edited
files only, and is kept as a cold run keeps it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import vocmatch.run.cached as cached
from tests.conftest import run_cli
from tests.run.test_cache import _edit
from vocmatch.readers import hashed_reads, scan
from vocmatch.readers.hashed_reads import HashingReader

needs_compiled = pytest.mark.skipif(
    scan._compiled is None or os.name != "posix",
    reason="the compiled chunk reader is built on POSIX systems with a C compiler",
)

READERS = [
    pytest.param("compiled", id="compiled", marks=needs_compiled),
    pytest.param("pure", id="pure"),
]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """About eight images a chunk, so that a test set has many."""
    monkeypatch.setattr(cached, "CHUNK_SPREAD", 8)


def _use(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    if reader == "pure":
        monkeypatch.setenv(scan.PURE_READER_VARIABLE, "1")
    else:
        monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)


def _odd_set(generated: Path, target: Path) -> tuple[Path, Path]:
    """The generated set with files the chunk reader leaves to the per-file route (an
    entity in a name), files that are not XML, and a file over the size limit."""
    gt, pred = target / "gt", target / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    gt_files, pred_files = sorted(gt.glob("*.xml")), sorted(pred.glob("*.xml"))
    for path in (gt_files[12], pred_files[40], pred_files[41]):
        text = path.read_text()
        start = text.index("<name>") + len("<name>")
        path.write_text(text[:start] + "a&amp;" + text[start:])
    gt_files[3].write_text("garbage")
    pred_files[77].write_text("<annotation>")
    pred_files[100].write_text(pred_files[100].read_text() + " " * 20_000)
    return gt, pred


LIMIT = ["--max-file-size", "16K"]


class _Matched:
    """Counts the chunks read and matched."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chunks = 0
        task = cached.hashed_part_records

        def counted(*args: Any) -> Any:
            self.chunks += 1
            return task(*args)

        monkeypatch.setattr(cached, "hashed_part_records", counted)


@needs_compiled
def test_a_cold_run_reads_its_chunks_in_one_call_each(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled chunk reader reads every plain file of a cold run: only the files it
    leaves (three with an entity, two not XML) are scanned one by one; a warm run reads
    none."""
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)
    gt, pred = _odd_set(generated, tmp_path)
    scanned: list[int] = []
    chunk_calls: list[int] = []
    fast_compiled, read_chunk_kept = scan._fast_compiled, scan._compiled.read_chunk_kept

    def counted_scan(data: bytes, names_seen: Any) -> Any:
        scanned.append(len(data))
        return fast_compiled(data, names_seen)

    def counted_chunk(files: Any, *args: Any) -> Any:
        chunk_calls.append(len(files))
        return read_chunk_kept(files, *args)

    monkeypatch.setattr(scan, "_fast_compiled", counted_scan)
    monkeypatch.setattr(scan._compiled, "read_chunk_kept", counted_chunk)
    args = [str(gt), str(pred), "--format", "json", *LIMIT]
    fresh = run_cli(*args)
    scanned.clear()
    assert run_cli(*args, "--cache", str(tmp_path / "cache")) == fresh
    assert len(scanned) == 5
    assert sum(chunk_calls) == 300
    scanned.clear()
    chunk_calls.clear()
    assert run_cli(*args, "--cache", str(tmp_path / "cache")) == fresh
    assert len(chunk_calls) == 2  # the chunk of the file too large: its two sides


def test_both_readers_keep_the_same_cache(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cold, warm and after edits, the compiled and the pure reader print the same bytes
    as a run without a cache and write the same cache file; the chunk of the file too
    large to read is read again by every run, by both."""
    gt, pred = _odd_set(generated, tmp_path)
    args = [str(gt), str(pred), "--format", "json", *LIMIT]
    readers = ["compiled", "pure"] if scan._compiled is not None else ["pure"]
    spy = _Matched(monkeypatch)
    for step in ("cold", "warm", "edited"):
        if step == "edited":
            for path in sorted(pred.glob("*.xml"))[5:150:15]:
                _edit(path)
        monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)
        fresh = run_cli(*args)
        kept: dict[str, bytes] = {}
        matched: dict[str, int] = {}
        for reader in readers:
            _use(monkeypatch, reader)
            spy.chunks = 0
            cache = tmp_path / f"cache-{reader}"
            assert run_cli(*args, "--cache", str(cache)) == fresh, (step, reader)
            kept[reader] = (cache / cached.CACHE_NAME).read_bytes()
            matched[reader] = spy.chunks
        assert len(set(kept.values())) == 1, step
        assert len(set(matched.values())) == 1, step
        if step == "warm":
            assert set(matched.values()) == {1}


@pytest.mark.parametrize("reader", READERS)
def test_a_file_edited_while_a_cold_run_reads_it(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """A prediction file rewritten right after its bytes were read: the run matches and
    keys it by the bytes read (its report is that of the files before the edit), and the
    next run, seeing another stat, matches it again (the report of the files after it)."""
    gt = tmp_path / "gt"
    pred = tmp_path / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    edited = sorted(pred.glob("*.xml"))[33]
    args = [str(gt), str(pred), "--format", "json"]
    before = run_cli(*args)
    original = edited.read_bytes()
    _edit(edited)
    after = run_cli(*args)
    assert after != before
    changed = edited.read_bytes()
    edited.write_bytes(original)

    def rewrite() -> None:
        if edited.read_bytes() == original:
            edited.write_bytes(changed)

    _use(monkeypatch, reader)
    if reader == "compiled":
        keep_read = HashingReader.keep_read

        def edited_then_kept(self: HashingReader, paths: list[str], *kept: bytes) -> None:
            if str(edited) in paths:
                rewrite()
            keep_read(self, paths, *kept)

        monkeypatch.setattr(HashingReader, "keep_read", edited_then_kept)
    else:
        read_bytes = hashed_reads.read_bytes

        def read_then_edited(path: str, limit: int) -> bytes:
            data = read_bytes(path, limit)
            if path == str(edited):
                rewrite()
            return data

        monkeypatch.setattr(hashed_reads, "read_bytes", read_then_edited)
    cache = str(tmp_path / "cache")
    assert run_cli(*args, "--cache", cache) == before
    assert edited.read_bytes() == changed
    spy = _Matched(monkeypatch)
    assert run_cli(*args, "--cache", cache) == after
    assert spy.chunks == 1


def test_the_digests_read_are_the_cache_s_size() -> None:
    """The hashing reader's digests are the size the cache's stat index keeps."""
    from vocmatch.evaluation.shards.cache_file import HASH_BYTES

    assert hashed_reads.DIGEST_SIZE == HASH_BYTES


@pytest.mark.parametrize("reader", READERS)
def test_an_edited_run_hashes_only_the_edited_files_of_its_chunks(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """After ten edits, the chunks holding them are read and matched again, but only the
    edited files' bytes are hashed (the others' stats are the cache's, which holds their
    digests); the run prints what a run without a cache prints, and its cache is byte for
    byte the one a cold run of the edited files writes."""
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(generated / "gt", gt)
    shutil.copytree(generated / "pred", pred)
    args = [str(gt), str(pred), "--format", "json"]
    _use(monkeypatch, reader)
    cache = tmp_path / "cache"
    run_cli(*args, "--cache", str(cache))
    edited = sorted(pred.glob("*.xml"))[5:150:15]
    for path in edited:
        _edit(path)
    fresh = run_cli(*args)
    hashed: list[int] = []
    blake2b = hashed_reads.hashlib.blake2b

    def counted(data: Any, digest_size: int) -> Any:
        hashed.append(len(data))
        return blake2b(data, digest_size=digest_size)

    monkeypatch.setattr(hashed_reads, "hashlib", SimpleNamespace(blake2b=counted))
    spy = _Matched(monkeypatch)
    assert run_cli(*args, "--cache", str(cache)) == fresh
    assert 1 < spy.chunks < 19
    assert sorted(hashed) == sorted(path.stat().st_size for path in edited)
    cold = tmp_path / "cold"
    assert run_cli(*args, "--cache", str(cold)) == fresh
    assert (cache / cached.CACHE_NAME).read_bytes() == (cold / cached.CACHE_NAME).read_bytes()

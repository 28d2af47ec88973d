"""The compiled reader reads a chunk of files in one call (``fastxml.read_chunk``): each file
opened as :func:`vocmatch.readers.regular_files.read_bytes` opens it, its objects appended to the
chunk's columns; every file it refuses, or reads otherwise than Python would, is left to the
per-file route. The chunk's columns are those of the per-file route, bit for bit, on plain,
hostile and mixed chunks; and its safety rules are read_bytes' own."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bench_scripts import bench
from tests.evaluation.test_batch import assert_same_columns
from tests.readers.test_scan import annotation_files
from vocmatch.readers import scan
from vocmatch.readers.byte_sources import LocalOrElsewhere
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.remote import is_url, location_reader
from vocmatch.readers.scan import ColumnSet, read_listed_columns

pytestmark = pytest.mark.skipif(
    scan._compiled is None or os.name != "posix",
    reason="the compiled chunk reader is built on POSIX systems with a C compiler",
)

MAX_BYTES = 4096


@pytest.fixture(autouse=True)
def compiled_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(scan.PURE_READER_VARIABLE, raising=False)


def obj(name: str = "cat", box: str = "<xmin>1</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40</ymax>",
        extra: str = "") -> str:  # fmt: skip
    return f"<object><name>{name}</name>{extra}<bndbox>{box}</bndbox></object>"


def voc(*objects: str, size: str = "<size><width>640</width><height>480</height></size>",
        filename: str = "<filename>a.jpg</filename>") -> bytes:  # fmt: skip
    return f"<annotation>{filename}{size}{''.join(objects)}</annotation>".encode()


PLAIN = voc(obj("dog", extra="<pose>Left</pose><difficult>1</difficult>"), obj("cat"))

POLYGON = voc(
    obj("cat"),
    "<object><name>zebra</name><polygon><x1>1</x1><y1>1</y1><x2>9</x2><y2>1</y2>"
    "<x3>9</x3><y3>9</y3></polygon></object>",
)


def _write(folder: Path, name: str, data: bytes) -> str:
    path = folder / name
    path.write_bytes(data)
    return str(path)


def _fifo(folder: Path) -> str:
    path = folder / "pipe.xml"
    os.mkfifo(path)
    return str(path)


def _link_to_fifo(folder: Path) -> str:
    target = _fifo(folder)
    link = folder / "link-pipe.xml"
    link.symlink_to(target)
    return str(link)


def _link_to_plain(folder: Path) -> str:
    link = folder / "link.xml"
    link.symlink_to(_write(folder, "target.xml", PLAIN))
    return str(link)


def _broken_link(folder: Path) -> str:
    link = folder / "broken.xml"
    link.symlink_to(folder / "nowhere.xml")
    return str(link)


def _directory(folder: Path) -> str:
    path = folder / "dir.xml"
    path.mkdir()
    return str(path)


def _unreadable(folder: Path) -> str:
    path = _write(folder, "secret.xml", PLAIN)
    os.chmod(path, 0)
    return path


def _written(data: bytes) -> Callable[[Path], str]:
    return lambda folder: _write(folder, "odd.xml", data)


# Each entry is made in a folder of its own, read in a chunk between two plain files;
# `left`: whether the chunk reader leaves it to the per-file route.
ENTRIES = [
    pytest.param(_written(PLAIN), False, id="plain"),
    pytest.param(_written(PLAIN.replace(b"><", b">\r\n<")), False, id="crlf"),
    pytest.param(_written(voc(obj("caf\xe9 \u00e9t\u00e9"))), False, id="utf-8-name"),
    pytest.param(_written(voc(obj("a\r\nb"), obj(" a\rb "))), False, id="cr-in-names"),
    pytest.param(_written(voc(obj(" cat "), obj("cat"))), False, id="names-alike-stripped"),
    pytest.param(_written(voc(obj(extra="<pose> </pose>"))), False, id="blank-pose"),
    pytest.param(
        _written(voc(obj(), filename="<filename> b\r\n.jpg </filename>")),
        False,
        id="filename-with-crlf",
    ),
    pytest.param(_written(voc(obj(), size="")), False, id="no-size"),
    pytest.param(
        _written(
            voc(obj(), size="<size><width>0012</width><height>7</height><depth> \n</depth></size>")
        ),
        False,
        id="size-leading-zeros-blank-depth",
    ),
    pytest.param(
        _written(voc(size="<size><width>5</width><height>7</height><depth>1</depth></size>")),
        False,
        id="no-objects",
    ),
    pytest.param(_link_to_plain, False, id="symlink-to-plain"),
    pytest.param(_written(voc(obj(""))), True, id="empty-name"),
    pytest.param(_written(voc(obj("\u00a0"))), True, id="unicode-blank-name"),
    pytest.param(
        _written(voc(obj(), size="<size><width> 5 </width><height>7</height></size>")),
        True,
        id="size-with-spaces",
    ),
    pytest.param(
        _written(voc(obj(), size="<size><width>5.5</width><height>7</height></size>")),
        True,
        id="size-not-digits",
    ),
    pytest.param(
        _written(voc(obj(), size=f"<size><width>{'9' * 16}</width><height>7</height></size>")),
        True,
        id="size-16-digits",
    ),
    pytest.param(
        _written(
            voc(obj(), size="<size><width>5</width><height>7</height><depth>\u00a0</depth></size>")
        ),
        True,
        id="depth-unicode-blank",
    ),
    pytest.param(
        _written(
            voc(obj(), size="<size><width>5</width><height>7</height><depth> 3</depth></size>")
        ),
        True,
        id="depth-with-space",
    ),
    pytest.param(
        _written(
            voc(obj(), size="<size><width>5</width><height>7</height><depth>3.5</depth></size>")
        ),
        True,
        id="depth-not-integer",
    ),
    pytest.param(
        _written(voc(obj(), size="<size><width>x</width><height>7</height></size>")),
        True,
        id="size-not-a-number",
    ),
    pytest.param(
        _written(voc(obj(), size="<size><width>5</width></size>")), True, id="size-without-height"
    ),
    pytest.param(_written(PLAIN.replace(b"dog", b"d\xffg")), True, id="not-utf-8"),
    pytest.param(_written(PLAIN.replace(b"dog", b"d&amp;g")), True, id="entity"),
    pytest.param(_written(PLAIN[:-5]), True, id="truncated"),
    pytest.param(_written(b""), True, id="empty-file"),
    pytest.param(
        _written(b"<annotation>" + b"<a>" * 80 + b"</a>" * 80 + b"</annotation>"), True, id="deep"
    ),
    pytest.param(
        _written(voc(obj(box="<xmin>9</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"))),
        True,
        id="reversed-box",
    ),
    pytest.param(
        _written(
            voc(
                obj("first", "<xmin>5</xmin><ymin>6</ymin><xmax>7</xmax><ymax>8</ymax>"),
                obj("cat", box="<xmin>9</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"),
            )
        ),
        True,
        id="plain-object-then-reversed-box",
    ),
    pytest.param(
        _written(
            voc(
                obj("only-here", "<xmin>5</xmin><ymin>6</ymin><xmax>7</xmax><ymax>8</ymax>"),
                obj(""),
            )
        ),
        True,
        id="new-name-then-empty-name",
    ),
    pytest.param(_written(POLYGON), True, id="polygon"),
    pytest.param(_written(PLAIN + b" " * MAX_BYTES), True, id="oversized"),
    pytest.param(_fifo, True, id="fifo"),
    pytest.param(_link_to_fifo, True, id="symlink-to-fifo"),
    pytest.param(_broken_link, True, id="broken-symlink"),
    pytest.param(_directory, True, id="directory-named-xml"),
    pytest.param(lambda folder: str(folder / "missing.xml"), True, id="missing"),
    pytest.param(_unreadable, os.geteuid() != 0, id="unreadable"),
]


def _per_file(files: list[tuple[str, str]], max_bytes: int = MAX_BYTES) -> ColumnSet:
    """The per-file route: any reading function other than read_bytes itself takes it."""

    def read(path: str, limit: int) -> bytes:
        return read_bytes(path, limit)

    return read_listed_columns(files, max_bytes, read)


def _chunk(paths: list[tuple[str, str]], max_bytes: int = MAX_BYTES) -> list[int]:
    """The indices of the files read_chunk leaves to the per-file route."""
    assert scan._compiled is not None
    read = scan._compiled.read_chunk(paths, max_bytes, scan.MAX_COORDINATE, scan.PARSER_TEXT_LIMIT)
    return read[-1]


@pytest.mark.parametrize(("make", "left"), ENTRIES)
def test_a_chunk_reads_as_file_by_file(
    tmp_path: Path, make: Callable[[Path], str], left: bool
) -> None:
    """Between two plain files, each entry gives the per-file route's columns, skipped files
    and messages; the chunk reader leaves to that route exactly what it does not read."""
    files = [
        ("a", _write(tmp_path, "a.xml", PLAIN)),
        ("b", make(tmp_path)),
        ("c", _write(tmp_path, "c.xml", voc(obj("cat", extra="<pose>Left</pose>")))),
    ]
    assert _chunk(files) == ([1] if left else [])
    assert_same_columns(read_listed_columns(files, MAX_BYTES), _per_file(files))


def test_plain_files_take_no_python_call_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the files left over go through the per-file scan: none of a plain chunk."""
    scanned: list[int] = []
    fast_compiled = scan._fast_compiled

    def counted(data: bytes, names_seen: Any) -> Any:
        scanned.append(len(data))
        return fast_compiled(data, names_seen)

    monkeypatch.setattr(scan, "_fast_compiled", counted)
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", PLAIN)) for i in range(20)]
    plain = read_listed_columns(files, MAX_BYTES)
    assert (len(plain.keys), len(plain.labels), scanned) == (20, 40, [])
    files[7] = ("k7", _write(tmp_path, "k7.xml", PLAIN.replace(b"dog", b"d&amp;g")))
    read_listed_columns(files, MAX_BYTES)
    assert scanned == [len(PLAIN) + 4]


def test_plain_and_left_files_interleave_in_file_order(tmp_path: Path) -> None:
    """Left files at the start, in the middle, in a row and at the end, shapes among them:
    rows, shapes' rows, names and poses come out in file order, as file by file."""
    kinds = [POLYGON, PLAIN, PLAIN.replace(b"dog", b"d&amp;g"), POLYGON, PLAIN,
             voc(obj("owl", extra="<pose>Up</pose>")), voc(obj("")), PLAIN, POLYGON]  # fmt: skip
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", data)) for i, data in enumerate(kinds)]
    assert _chunk(files) == [0, 2, 3, 6, 8]
    chunk = read_listed_columns(files, MAX_BYTES)
    assert_same_columns(chunk, _per_file(files))
    assert [row for row, _ in chunk.shapes] == [1, 7, 14]
    assert len(chunk.skipped) == 1


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(len(PLAIN) - 1, id="one-byte-under"),
        pytest.param(len(PLAIN), id="exactly"),
    ],
)
def test_the_parser_text_limit_is_the_per_file_route_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """A file longer than the parser's longest text is left to the per-file route."""
    monkeypatch.setattr(scan, "PARSER_TEXT_LIMIT", limit)
    files = [("a", _write(tmp_path, "a.xml", PLAIN))]
    assert _chunk(files) == ([0] if limit < len(PLAIN) else [])
    assert_same_columns(read_listed_columns(files, MAX_BYTES), _per_file(files))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(annotation_files(), min_size=1, max_size=6))
def test_any_chunk_reads_as_file_by_file(contents: list[bytes]) -> None:
    """Chunks of generated files of any layout and content: the same columns as file by
    file."""
    with tempfile.TemporaryDirectory() as folder:
        files = [
            (f"k{i}", _write(Path(folder), f"k{i}.xml", data)) for i, data in enumerate(contents)
        ]
        assert_same_columns(read_listed_columns(files, MAX_BYTES), _per_file(files))


@pytest.fixture
def many_names(tmp_path: Path) -> Iterator[list[tuple[str, str]]]:
    yield [
        (f"k{i}", _write(tmp_path, f"k{i}.xml", voc(*(obj(f"n{i}-{j}") for j in range(40)))))
        for i in range(30)
    ]


def test_a_chunk_with_many_names_reads_as_file_by_file(many_names: list[tuple[str, str]]) -> None:
    """1,200 distinct names (the chunk's table of names grows many times)."""
    chunk = read_listed_columns(many_names, 1 << 20)
    assert len(chunk.label_names) == 1200
    assert_same_columns(chunk, _per_file(many_names, 1 << 20))


@pytest.mark.parametrize(
    "max_bytes",
    [
        pytest.param(10**30, id="beyond-any-file-size"),
        pytest.param(0, id="zero"),
        pytest.param(-1, id="negative"),
        pytest.param(-(2**63), id="smallest-c-size"),
        pytest.param(-(2**63) - 1, id="below-any-c-size"),
        pytest.param(-(10**30), id="far-below-any-c-size"),
    ],
)
def test_any_size_limit_reads_as_file_by_file(tmp_path: Path, max_bytes: int) -> None:
    """A limit larger than any file, or one no file meets, gives the per-file route's
    columns and messages (a library caller may pass any integer)."""
    files = [("a", _write(tmp_path, "a.xml", PLAIN)), ("b", _write(tmp_path, "b.xml", b""))]
    assert_same_columns(read_listed_columns(files, max_bytes), _per_file(files, max_bytes))


@pytest.fixture(scope="module")
def fuzzer() -> ModuleType:
    """``bench/fuzz_reader.py`` (a script, which puts its folders on the path)."""
    return bench("fuzz_reader")


@pytest.mark.parametrize("seed", [pytest.param(f"0:{n}", id=f"chunk-{n}") for n in range(40)])
def test_fuzzed_chunks_read_as_every_other_route(
    fuzzer: ModuleType, seed: str, tmp_path: Path
) -> None:
    """A few chunks of ``bench/fuzz_reader.py --chunk`` (generated and mutated files, paths
    that are not files, odd size limits): the chunk reader's columns and skipped files are
    those of the per-file route, the pure reader and the parser, floats to the bit."""
    fuzzer.run_chunk(seed, [], tmp_path / "kept")


def test_a_chunk_of_many_batches_reads_as_file_by_file(tmp_path: Path) -> None:
    """Files read without the GIL batch by batch (at most 256 files or 1 MiB a batch, or
    one larger file): a batch ended by its bytes, by its files, a file larger than a batch,
    files left before or after reading among them (the rows of those read after one move
    down): the per-file route's columns, in file order."""
    padded = PLAIN + b"\n" * (300 << 10)  # a plain file of 300 KiB
    large = PLAIN + b"\n" * (3 << 19)  # 1.5 MiB: larger than a batch
    unnamed = voc(obj("dog"), obj(" "))  # read, then left for its empty name
    contents = [padded] * 7 + [POLYGON, padded, large, unnamed, large, padded]
    contents += [
        POLYGON if i % 85 == 0 else unnamed if i % 85 == 40 else voc(obj(f"n{i % 7}"))
        for i in range(600)
    ]
    files = [
        (f"k{i:04}", _write(tmp_path, f"k{i:04}.xml", data)) for i, data in enumerate(contents)
    ]
    left = [i for i, data in enumerate(contents) if data is POLYGON or data is unnamed]
    assert _chunk(files, 4 << 20) == left
    assert_same_columns(read_listed_columns(files, 4 << 20), _per_file(files, 4 << 20))


def test_a_chunk_of_plain_files_keeps_the_compiled_columns(tmp_path: Path) -> None:
    """With no file left to the per-file route, a chunk's fields are the compiled reader's
    columns themselves, not copies made while holding the GIL; with one left, one array
    per field all the same."""
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", PLAIN)) for i in range(3)]
    plain = scan._read_chunk(files, MAX_BYTES)
    assert [len(field) for field in (plain.boxes, plain.scores, plain.difficult)] == [1, 1, 1]
    assert not any(field[0].flags.owndata for field in (plain.boxes, plain.scores))
    files[1] = ("k1", _write(tmp_path, "k1.xml", POLYGON))
    mixed = scan._read_chunk(files, MAX_BYTES)
    assert [len(field) for field in (mixed.boxes, mixed.scores, mixed.difficult)] == [1, 1, 1]
    assert_same_columns(read_listed_columns(files, MAX_BYTES), _per_file(files))


@pytest.mark.parametrize(
    "kinds",
    [
        pytest.param([PLAIN, voc(obj(" cat"), obj("dog "))], id="a-name-written-two-ways"),
        pytest.param(
            [voc(obj(" cat")), POLYGON, voc(obj("cat"), obj(" cat"))], id="two-ways-and-left"
        ),
        pytest.param(
            [voc(obj("cat", extra="<pose> Left</pose>")), POLYGON, PLAIN], id="pose-two-ways"
        ),
        pytest.param(
            [
                voc(obj("cat"), size=""),
                PLAIN,
                voc(
                    obj("cat"),
                    size="<size><width>640</width><height>480</height><depth>3</depth></size>",
                ),
            ],
            id="sizes",
        ),
    ],
)
def test_a_text_written_two_ways_codes_as_file_by_file(tmp_path: Path, kinds: list[bytes]) -> None:
    """A name or pose written with and without spaces in one chunk (one text, two ways
    of writing it), with and without files left to the per-file route, and files with,
    without and with the same <size>: the columns of the per-file route."""
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", data)) for i, data in enumerate(kinds)]
    chunk = read_listed_columns(files, MAX_BYTES)
    assert_same_columns(chunk, _per_file(files))
    assert [str(size) for size in chunk.sizes] == [str(size) for size in _per_file(files).sizes]


@pytest.mark.parametrize(
    "elsewhere", [pytest.param(False, id="local"), pytest.param(True, id="one-file-elsewhere")]
)
def test_a_location_reader_reads_local_chunks_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    """The reader of a run in parts (local paths and URLs) leaves a chunk of local paths to
    the compiled chunk reader: no per-file scan, the columns and skipped files of
    read_bytes; a chunk with a path elsewhere is read file by file, to the same columns."""
    scanned: list[int] = []
    fast_compiled = scan._fast_compiled

    def counted(data: bytes, names_seen: Any) -> Any:
        scanned.append(len(data))
        return fast_compiled(data, names_seen)

    monkeypatch.setattr(scan, "_fast_compiled", counted)
    local = [(f"k{i}", _write(tmp_path, f"k{i}.xml", PLAIN)) for i in range(20)]
    local.append(("missing", str(tmp_path / "missing.xml")))
    files, read = list(local), location_reader()
    if elsewhere:
        # A URL whose bytes are those of a local file.
        files[3] = ("k3", "memory://bucket/k3.xml")
        read = LocalOrElsewhere(lambda path, limit: read_bytes(local[3][1], limit), is_url)
    columns = read_listed_columns(files, MAX_BYTES, read)
    assert len(scanned) == (20 if elsewhere else 0)
    assert columns.paths == tuple(path for _, path in files[:20])
    expected = read_listed_columns(local, MAX_BYTES)
    assert_same_columns(replace(columns, paths=()), replace(expected, paths=()))
    assert [str(s) for s in columns.skipped] == [
        f"{tmp_path / 'missing.xml'}: cannot read file: No such file or directory"
    ]


def test_names_and_left_files_of_late_batches_read_as_file_by_file(tmp_path: Path) -> None:
    """More than 256 files and more than 1 MiB (several batches, their Python objects made
    once at the end of the call): names and a pose first seen in a late batch, a file left
    in a late batch, a file read after it: the per-file route's columns, in file order."""
    padded = voc(obj("cat")) + b"\n" * (200 << 10)  # 200 KiB: five fill a batch
    contents = [padded] * 12 + [voc(obj(f"n{i % 5}")) for i in range(400)]
    contents += [voc(obj("late", extra="<pose>Rear</pose>")), POLYGON, voc(obj("later"))]
    files = [
        (f"k{i:04}", _write(tmp_path, f"k{i:04}.xml", data)) for i, data in enumerate(contents)
    ]
    assert _chunk(files, 1 << 20) == [len(contents) - 2]
    chunk = read_listed_columns(files, 1 << 20)
    assert_same_columns(chunk, _per_file(files, 1 << 20))
    assert {"late", "later"} <= set(chunk.label_names)
    assert chunk.pose_names == ("Rear",)


def test_a_chunk_beyond_the_texts_kept_at_once_reads_as_file_by_file(tmp_path: Path) -> None:
    """Batches whose texts (names, poses, headers) pass the 16 MiB a chunk keeps before
    making its Python objects (they are then made for those batches, and the reading goes
    on): the per-file route's columns, with a file left after that point."""
    names = [f"<filename>{letter * (6 << 20)}</filename>" for letter in "abc"]  # 6 MiB each
    contents = [voc(obj("big"), filename=name) for name in names]
    contents += [voc(obj("after")), POLYGON, voc(obj("big"), obj("last"))]
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", data)) for i, data in enumerate(contents)]
    assert _chunk(files, 10 << 20) == [4]
    chunk = read_listed_columns(files, 10 << 20)
    assert_same_columns(chunk, _per_file(files, 10 << 20))
    assert [len(name or "") for name in chunk.filenames] == [6 << 20] * 3 + [5] * 3


def test_a_chunk_of_many_batches_waits_once_for_the_gil(tmp_path: Path) -> None:
    """While another thread runs bytecode, a call of the chunk reader that reads twelve
    batches takes the GIL back once (to make its Python objects), not once a batch: with a
    switch interval of 0.2 s, it waits for one interval, not twelve."""
    assert scan._compiled is not None
    padded = PLAIN + b"\n" * (600 << 10)  # 600 KiB: one a batch
    files = [(f"k{i}", _write(tmp_path, f"k{i}.xml", padded)) for i in range(12)]
    scan._compiled.read_chunk(files, 1 << 20, scan.MAX_COORDINATE, scan.PARSER_TEXT_LIMIT)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.2)
    spinner = threading.Thread(target=spin)
    try:
        spinner.start()
        started = time.perf_counter()
        read = scan._compiled.read_chunk(
            files, 1 << 20, scan.MAX_COORDINATE, scan.PARSER_TEXT_LIMIT
        )
        took = time.perf_counter() - started
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(interval)
    assert read[-1] == []
    assert took < 0.2 * 4

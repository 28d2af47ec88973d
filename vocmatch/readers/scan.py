"""Read annotation directories into columns (numpy arrays), fast and in parallel.

:mod:`vocmatch.readers.parse` builds one record per object, which is clear but costs a Python object
per box; on 10,000 files with half a million objects the per-object walk, not the XML
parser, is where the time goes. This reader extracts the objects of a file in one pass over
its bytes and converts the fields in bulk.

It only reads files it can prove the parser reads the same way: every ``<`` accounted for
by plain tags, no reference, CDATA end, control character or non-UTF-8 byte, every number
in the one grammar (:data:`vocmatch.readers.parse.NUMBER_PATTERN`), every value one the
parser accepts. Any other file -- a comment, CDATA,
an entity, an attribute or a namespace, another encoding, a value the parser would refuse,
a rotated box or a polygon -- is read by :func:`vocmatch.readers.parse.parse_annotation` instead,
so results and error messages are always the parser's own. Tests check that both readers
give identical columns on every layout of ``bench/zoo.py``, on the real sets, and on
generated files of any layout and content.

Where the package was built with a C compiler, a compiled reader (``fastxml.c``) reads
them; the pure-Python one (:mod:`vocmatch.readers.scan_pure`: a regular expression per
layout of the writer's) reads the same subset of files to the same columns without it, or
with ``VOCMATCH_PURE_READER=1`` (docs/compiled-reader.md).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
from array import array
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from vocmatch.checks import checked_jobs, checked_max_bytes
from vocmatch.core.model import Box, ImageAnnotation, ImageSize, Polygon, RotatedBox, SkippedFile
from vocmatch.errors import AnnotationError, no_annotation_files
from vocmatch.readers.folders import PURE_READER_VARIABLE
from vocmatch.readers.parse import (
    DEFAULT_MAX_BYTES,
    MAX_COORDINATE,
    AnnotationSet,
    DirectoryListing,
    list_directory,
    number_problem,
    parse_annotation,
)
from vocmatch.readers.read_ahead import (
    PARSER_TEXT_LIMIT,
    StartedRead,
    chunk_limit,
    claimed,
    raw_chunk,
    start_read,
)
from vocmatch.readers.regular_files import read_bytes
from vocmatch.readers.workers import worker_results

if TYPE_CHECKING:
    from vocmatch.readers.hashed_reads import HashingReader

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

__all__ = [
    "PARSER_TEXT_LIMIT",
    "PURE_READER_VARIABLE",
    "ColumnSet",
    "FileHeader",
    "PlainObjects",
    "active_reader",
    "columns_from_annotations",
    "decoded_text",
    "finish_read",
    "read_column_pair",
    "read_columns",
    "read_listed_columns",
    "read_listings",
    "reads_in_threads",
    "size_from_text",
]


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ColumnSet:
    """A directory of annotation files as columns, one row per object.

    Attributes:
        root: The directory that was read.
        keys: Image keys, sorted.
        paths: The file of each image.
        sizes: ``<size>`` of each image, None where absent.
        filenames: ``<filename>`` of each image, None where absent.
        image: ``(B,)`` index of each object's image, non-decreasing (int32).
        labels: ``(B,)`` index of each object's class name in ``label_names`` (int32).
        label_names: The class names, sorted.
        boxes: ``(B, 4)`` ``x1, y1, x2, y2``; for a rotated box or a polygon, its bounding box.
        difficult: ``(B,)`` the ``difficult`` flag.
        truncated: ``(B,)`` the ``truncated`` flag.
        occluded: ``(B,)`` the ``occluded`` flag.
        pose: ``(B,)`` index of each object's ``<pose>`` in ``pose_names``; -1 where absent
            (int32).
        pose_names: The ``<pose>`` texts, sorted.
        scores: ``(B,)`` scores; NaN where an object has none.
        skipped: Files that could not be read.
        notes: Remarks on the directory walk that lost no file.
        shapes: ``(row, shape)`` for each object that is a rotated box or a polygon, by row.
        bndboxes: ``(row, (x1, y1, x2, y2))`` for each such object that also has a
            ``<bndbox>`` (:attr:`vocmatch.core.model.Box.bndbox`), by row.
    """

    root: str
    keys: tuple[str, ...]
    paths: tuple[str, ...]
    sizes: tuple[ImageSize | None, ...]
    filenames: tuple[str | None, ...]
    image: Int32Array
    labels: Int32Array
    label_names: tuple[str, ...]
    boxes: FloatArray
    difficult: BoolArray
    truncated: BoolArray
    occluded: BoolArray
    pose: Int32Array
    pose_names: tuple[str, ...]
    scores: FloatArray
    skipped: tuple[SkippedFile, ...]
    notes: tuple[str, ...] = ()
    shapes: tuple[tuple[int, Polygon | RotatedBox], ...] = ()
    bndboxes: tuple[tuple[int, tuple[float, float, float, float]], ...] = ()

    def to_annotations(self) -> AnnotationSet:
        """The same data as parser records (object source lines are not known here)."""
        starts: list[int] = np.searchsorted(self.image, np.arange(len(self.keys) + 1)).tolist()
        shapes = dict(self.shapes)
        given = dict(self.bndboxes)
        # Plain lists, read once: indexing numpy arrays box by box costs more than the boxes.
        names = [self.label_names[k] for k in self.labels.tolist()]
        corners: list[list[float]] = self.boxes.tolist()
        difficult: list[bool] = self.difficult.tolist()
        truncated: list[bool] = self.truncated.tolist()
        occluded: list[bool] = self.occluded.tolist()
        poses = [None if k < 0 else self.pose_names[k] for k in self.pose.tolist()]
        scores: list[float] = self.scores.tolist()
        annotations = []
        for i, (key, path) in enumerate(zip(self.keys, self.paths, strict=True)):
            boxes = []
            for b in range(starts[i], starts[i + 1]):
                x1, y1, x2, y2 = corners[b]
                score = scores[b]
                boxes.append(
                    Box(
                        names[b],
                        x1,
                        y1,
                        x2,
                        y2,
                        difficult=difficult[b],
                        truncated=truncated[b],
                        score=None if math.isnan(score) else score,
                        shape=shapes.get(b),
                        occluded=occluded[b],
                        pose=poses[b],
                        bndbox=given.get(b),
                    )
                )
            annotations.append(
                ImageAnnotation(key, path, tuple(boxes), self.sizes[i], self.filenames[i])
            )
        return AnnotationSet(self.root, tuple(annotations), self.skipped, self.notes)


@dataclass(slots=True)
class _Chunk:
    """Columns of a few files, built in a worker process."""

    keys: list[str]
    paths: list[str]
    sizes: list[ImageSize | None]
    filenames: list[str | None]
    counts: array[int]  # objects of each file: int64 ("q")
    # Index into vocabulary, one per object: a C int array, sent from a reading process as
    # one block of bytes rather than as a list of Python ints.
    codes: array[int]
    vocabulary: dict[str, int]
    raw_codes: dict[bytes, int]  # a name's bytes as written -> index into vocabulary
    boxes: list[FloatArray]
    difficult: list[BoolArray]
    truncated: list[BoolArray]
    scores: list[FloatArray]
    skipped: list[SkippedFile]
    shapes: list[tuple[int, Polygon | RotatedBox]] = field(default_factory=list)  # chunk rows
    occluded: list[BoolArray] = field(default_factory=list)
    pose_codes: array[int] = field(default_factory=lambda: array("i"))  # pose_vocabulary's, or -1
    pose_vocabulary: dict[str, int] = field(default_factory=dict)
    # <pose> as written -> code; None (no <pose>) -> -1.
    raw_poses: dict[bytes | None, int] = field(default_factory=dict)
    bndboxes: list[tuple[int, tuple[float, float, float, float]]] = field(default_factory=list)


def decoded_text(raw: bytes) -> str:
    """Element text as the parser reads it: XML turns CR LF and a lone CR into LF."""
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return raw.decode("utf-8")


@dataclass(frozen=True, slots=True)
class FileHeader:
    """The ``<filename>`` and ``<size>`` of one file, as the parser reads them."""

    filename: str | None
    size: ImageSize | None


#: Fewer ASCII digits than this always make a finite float (the largest is about 1.8e308);
#: a longer run goes to the one grammar, which refuses what is not finite.
_DIGITS_FINITE = 309


def _leaf_number(text: bytes) -> float | None:
    """The parser's reading of a number (the one grammar, finite), or None."""
    if text.isdigit() and len(text) < _DIGITS_FINITE:
        return float(text)  # ASCII digits only (bytes.isdigit): the common case
    value, _ = number_problem(decoded_text(text))
    return value


def size_from_text(width: bytes, height: bytes, depth: bytes | None) -> ImageSize | None:
    """The parser's ``<size>`` from its children's text, or None where it would differ."""
    w, h = _leaf_number(width), _leaf_number(height)
    if w is None or h is None:
        return None
    number: int | None = None
    if depth is not None and decoded_text(depth).strip():
        value = _leaf_number(depth)
        if value is None:
            return None
        number = int(value)
    return ImageSize(width=w, height=h, depth=number)


@dataclass(slots=True)
class PlainObjects:
    """The objects of one plain file."""

    header: FileHeader
    coordinates: FloatArray
    names: Sequence[bytes]  # as written; stripped and decoded once per chunk
    new_names: dict[bytes, str]  # names not in the chunk's vocabulary yet: as the parser reads them
    difficult: BoolArray
    truncated: BoolArray
    occluded: BoolArray
    scores: FloatArray
    poses: Sequence[bytes | None]  # <pose> text as written, None where absent


def active_reader() -> str:
    """Which fast reader reads files in this process: ``"compiled"`` (the C extension) or
    ``"pure"`` (the extension is not built, or ``VOCMATCH_PURE_READER=1``)."""
    if _compiled is None or os.environ.get(PURE_READER_VARIABLE, "") not in ("", "0"):
        return "pure"
    return "compiled"


def _fast(data: bytes, names_seen: Container[bytes] = ()) -> PlainObjects | None:
    """Extract a plain file's objects, or None to leave the file to the parser.

    ``names_seen`` holds names (as written) already known to be usable. The compiled
    reader and the pure-Python one give the same objects; each may leave a file to the
    parser that the other reads.
    """
    if _compiled is not None and active_reader() == "compiled":
        return _fast_compiled(data, names_seen)
    return _fast_pure(data, names_seen)


def _fast_compiled(data: bytes, names_seen: Container[bytes]) -> PlainObjects | None:
    """:func:`_fast` by the compiled reader (``fastxml.c``): it proves the file plain and
    reads its columns; the header's values and new names are read here as by the pure one."""
    assert _compiled is not None
    if len(data) > PARSER_TEXT_LIMIT:
        return None  # a text node may pass the parser's limit: its refusal is the parser's
    read = _compiled.scan(data, MAX_COORDINATE)
    if read is None:
        return None
    filename, size_texts, names, coordinates, scores, difficult, truncated, occluded, poses = read
    size = None
    if size_texts is not None:
        size = size_from_text(*size_texts)
        if size is None:
            return None
    new_names = {raw: decoded_text(raw).strip() for raw in set(names) if raw not in names_seen}
    if not all(new_names.values()):
        return None  # an empty name: the parser's to refuse
    return PlainObjects(
        FileHeader(None if filename is None else decoded_text(filename).strip(), size),
        np.frombuffer(coordinates, np.float64).reshape(-1, 4),
        names,
        new_names,
        np.frombuffer(difficult, np.bool_),
        np.frombuffer(truncated, np.bool_),
        np.frombuffer(occluded, np.bool_),
        np.frombuffer(scores, np.float64),
        poses,
    )


def _fast_pure(data: bytes, names_seen: Container[bytes] = ()) -> PlainObjects | None:
    """:func:`_fast` by the pure-Python reader (:mod:`vocmatch.readers.scan_pure`, imported
    when first used: a run with the compiled reader never needs it)."""
    if len(data) > PARSER_TEXT_LIMIT:
        return None  # as in _fast_compiled
    from vocmatch.readers.scan_pure import fast_pure

    return fast_pure(data, names_seen)


def _hashing_reader(read: Callable[[str, int], bytes]) -> HashingReader | None:
    """``read`` where it is a :class:`~vocmatch.readers.hashed_reads.HashingReader`, else
    None. A run that keeps no cache never imports that module (nor hashlib): where it is not
    loaded, no reader can be one."""
    module = sys.modules.get("vocmatch.readers.hashed_reads")
    if module is not None and isinstance(read, module.HashingReader):
        return cast("HashingReader", read)
    return None


def _new_chunk() -> _Chunk:
    return _Chunk([], [], [], [], array("q"), array("i"), {}, {}, [], [], [], [], [])


def _read_chunk(
    files: Sequence[tuple[str, str]],
    max_bytes: int,
    read: Callable[[str, int], bytes] = read_bytes,
) -> _Chunk:
    """Read a chunk's files in this thread or process (a worker process's task; the
    reading threads run :func:`~vocmatch.readers.read_ahead.raw_chunk` instead)."""
    chunk = _new_chunk()
    # The reader is chosen once a chunk (the choice reads the environment).
    scan_file = _fast_compiled if active_reader() == "compiled" else _fast_pure
    whole = None
    if scan_file is _fast_compiled and _reads_as_read_bytes(read, files):
        keeping = _hashing_reader(read)
        whole = _read_compiled_chunk(files, max_bytes, keeping)
    if whole is None:
        for key, path in files:
            _read_file(chunk, key, path, max_bytes, read, scan_file)
    else:
        # The files it left are read by ``read`` (read_bytes, or a hashing reader's).
        left_read = read if _hashing_reader(read) is not None else read_bytes
        _add_compiled_chunk(chunk, files, whole, max_bytes, scan_file, None, left_read)
    _consolidate(chunk)
    return chunk


def _reads_as_read_bytes(
    read: Callable[[str, int], bytes], files: Sequence[tuple[str, str]]
) -> bool:
    """Whether ``read`` reads every file as :func:`~vocmatch.readers.regular_files.read_bytes`
    does: it is ``read_bytes`` or a :class:`~vocmatch.readers.hashed_reads.HashingReader`
    (which reads by it), or reads local paths by it and every path is local."""
    if read is read_bytes or _hashing_reader(read) is not None:
        return True
    # Imported here: a run of local folders reads by read_bytes itself.
    from vocmatch.readers.byte_sources import LocalOrElsewhere

    return isinstance(read, LocalOrElsewhere) and read.all_local(map(itemgetter(1), files))


def _read_file(
    chunk: _Chunk,
    key: str,
    path: str,
    max_bytes: int,
    read: Callable[[str, int], bytes],
    scan_file: Callable[[bytes, Container[bytes]], PlainObjects | None],
) -> None:
    """Read one file into the chunk: by the fast reader if it is plain, else by the parser;
    a file that cannot be read is added to the chunk's skipped files."""
    try:
        # The parser's own reading: regular files only, size checked first.
        data = read(path, max_bytes)
        fast = scan_file(data, chunk.raw_codes)
        if fast is None:
            _add_annotation(chunk, parse_annotation(data, path, key))
            return
    except AnnotationError as error:
        chunk.skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
        return
    _add_header(chunk, key, path, fast.header.size, fast.header.filename)
    chunk.counts.append(len(fast.names))
    _add_raw_names(chunk, fast.names, fast.new_names)
    chunk.boxes.append(fast.coordinates)
    chunk.difficult.append(fast.difficult)
    chunk.truncated.append(fast.truncated)
    chunk.occluded.append(fast.occluded)
    _add_raw_poses(chunk, fast.poses)
    chunk.scores.append(fast.scores)


@dataclass(frozen=True, slots=True)
class _CompiledColumns:
    """The files of a chunk the compiled reader read whole (``fastxml.read_chunk``).

    Object columns are by row, in file order; ``name_codes`` and ``pose_codes`` index
    ``names`` and ``poses`` (the texts in order of first appearance, as written and as the
    parser reads them; a pose code is -1 where absent). Header columns are by file read:
    ``size_codes`` index ``sizes`` (the distinct ``<size>`` values: width, height and
    depth, -1 where absent; a code is -1 without ``<size>``);
    ``left`` holds the indices (into the chunk's files) of the files it left to
    :func:`_read_file`.
    """

    boxes: FloatArray  # (B, 4)
    scores: FloatArray
    difficult: BoolArray
    truncated: BoolArray
    occluded: BoolArray
    name_codes: Int32Array
    pose_codes: Int32Array
    counts: IntArray  # (F,) objects by file read
    size_codes: Int32Array  # (F,)
    sizes: IntArray  # (S, 3)
    names: list[tuple[bytes, str]]
    poses: list[tuple[bytes, str]]
    filenames: list[str | None]
    left: list[int]


def _read_compiled_chunk(
    files: Sequence[tuple[str, str]], max_bytes: int, keeping: HashingReader | None = None
) -> _CompiledColumns | None:
    """Read a chunk's plain files in one call of the compiled reader, opened and read as
    :func:`~vocmatch.readers.regular_files.read_bytes` reads them; None where the compiled reader
    has no such call (a platform without POSIX files). ``keeping``: a hashing reader given
    each file read's stat and the digest of the bytes it was read from."""
    name = "read_chunk" if keeping is None else "read_chunk_kept"
    if getattr(_compiled, name, None) is None or os.name != "posix":
        return None
    if keeping is None:
        found = raw_chunk(files, max_bytes, PARSER_TEXT_LIMIT)
    else:
        limit = chunk_limit(max_bytes)
        found, kept = _compiled.read_chunk_kept(files, limit, MAX_COORDINATE, PARSER_TEXT_LIMIT)
        left_out = set(found[-1])
        read_paths = [path for k, (_, path) in enumerate(files) if k not in left_out]
        keeping.keep_read(read_paths, *kept)
    return _compiled_columns(found)


def _compiled_columns(found: tuple[Any, ...]) -> _CompiledColumns:
    """The compiled reader's chunk read (:func:`~vocmatch.readers.read_ahead.raw_chunk`) as
    arrays, over its bytes (no copy)."""
    (coordinates, scores, difficult, truncated, occluded, name_codes, pose_codes, counts,
     size_codes, sizes, names, poses, filenames, left) = found  # fmt: skip
    return _CompiledColumns(
        np.frombuffer(coordinates, np.float64).reshape(-1, 4),
        np.frombuffer(scores, np.float64),
        np.frombuffer(difficult, np.bool_),
        np.frombuffer(truncated, np.bool_),
        np.frombuffer(occluded, np.bool_),
        np.frombuffer(name_codes, np.int32),
        np.frombuffer(pose_codes, np.int32),
        np.frombuffer(counts, np.int64),
        np.frombuffer(size_codes, np.int32),
        np.frombuffer(sizes, np.int64).reshape(-1, 3),
        names,
        poses,
        filenames,
        left,
    )


def _add_compiled_chunk(
    chunk: _Chunk,
    files: Sequence[tuple[str, str]],
    read: _CompiledColumns,
    max_bytes: int,
    scan_file: Callable[[bytes, Container[bytes]], PlainObjects | None],
    known_sizes: dict[bytes, ImageSize] | None = None,
    left_read: Callable[[str, int], bytes] = read_bytes,
) -> None:
    """Add a chunk's files in order: runs of files the compiled reader read as slices of
    its columns, each file it left by :func:`_read_file` (the per-file route, reading by
    ``left_read``).

    No Python statement runs once per file or object here: the names, poses and sizes are
    coded once per distinct text or value, and a run's header columns are list slices."""
    vocabulary = chunk.vocabulary
    texts = list(map(itemgetter(1), read.names))
    if not vocabulary and len(set(texts)) == len(texts):
        # Each text written one way only (the usual case): the compiled reader's codes.
        vocabulary.update(zip(texts, range(len(texts)), strict=True))
        codes = read.name_codes
    else:
        # A name's code is its place in the vocabulary (setdefault adds a new one last).
        labels = [vocabulary.setdefault(name, len(vocabulary)) for name in texts]
        codes = np.array(labels, dtype=np.intc)[read.name_codes]
    # Shifted by one so that -1 (absent) maps to -1; an empty <pose> reads as absent.
    pose_labels = [-1] + [_pose_code(chunk, text) if text else -1 for _, text in read.poses]
    pose_codes = np.array(pose_labels, dtype=np.intc)[read.pose_codes + 1]
    if read.left:
        # Texts as written, for the files left to the per-file route (and only for them).
        raws = map(itemgetter(0), read.names)
        chunk.raw_codes.update(zip(raws, map(vocabulary.__getitem__, texts), strict=True))
        raw_poses = map(itemgetter(0), read.poses)
        chunk.raw_poses.update(zip(raw_poses, pose_labels[1:], strict=True))
    # None (code -1, the last item) without <size>.
    size_of = [*_size_records(read.sizes, {} if known_sizes is None else known_sizes), None]
    sizes = list(map(size_of.__getitem__, read.size_codes.tolist()))
    offsets: list[int] = np.concatenate(([0], np.cumsum(read.counts))).tolist()
    first = 0  # the first file of the run, and its index among the files read
    done = 0
    for stop in (*read.left, len(files)):
        if stop > first:
            run = files[first:stop]
            last = done + len(run)
            rows = slice(offsets[done], offsets[last])
            chunk.keys.extend(map(itemgetter(0), run))
            chunk.paths.extend(map(itemgetter(1), run))
            chunk.sizes.extend(sizes[done:last])
            chunk.filenames.extend(read.filenames[done:last])
            chunk.counts.frombytes(read.counts[done:last].tobytes())
            chunk.codes.frombytes(codes[rows].tobytes())
            chunk.pose_codes.frombytes(pose_codes[rows].tobytes())
            chunk.boxes.append(read.boxes[rows])
            chunk.difficult.append(read.difficult[rows])
            chunk.truncated.append(read.truncated[rows])
            chunk.occluded.append(read.occluded[rows])
            chunk.scores.append(read.scores[rows])
            done = last
        if stop < len(files):
            key, path = files[stop]
            _read_file(chunk, key, path, max_bytes, left_read, scan_file)
        first = stop + 1


def _size_records(values: IntArray, known: dict[bytes, ImageSize]) -> list[ImageSize | None]:
    """The record of each distinct ``<size>`` of a chunk (``(S, 3)`` width, height and
    depth, -1 where absent): the one in ``known`` (by the values' bytes), or a new one,
    added to it. A set's records are thus one per distinct size, shared by its images and
    by the other sets read with it (an image's ground truth and predictions usually have
    the same): fewer objects to make, and fewer for Python's collector to walk."""
    data = values.tobytes()
    step = values.itemsize * 3
    keys = [data[i : i + step] for i in range(0, len(data), step)]
    records: list[ImageSize | None] = list(map(known.get, keys))
    if None in records:
        # The values are below 10**15, so exact as floats (as size_from_text reads them).
        widths, heights = values[:, :2].astype(np.float64).T.tolist()
        depths = values[:, 2].tolist()
        for i, record in enumerate(records):
            if record is None:
                depth = depths[i]
                made = ImageSize(widths[i], heights[i], None if depth < 0 else depth)
                records[i] = known.setdefault(keys[i], made)
    return records


def _consolidate(chunk: _Chunk) -> None:
    """One array per field instead of one per file: sent once, and held in large blocks
    that are given back to the system when freed (many small ones would stay as
    fragmented heap in the reading process). A chunk whose fields are one array each (the
    compiled reader's columns, with no file left to the per-file route) is kept as it is:
    copying it would only hold the GIL longer."""
    if len(chunk.boxes) > 1:
        chunk.boxes = [np.concatenate([b.reshape(-1, 4) for b in chunk.boxes])]
        chunk.difficult = [np.concatenate(chunk.difficult)]
        chunk.truncated = [np.concatenate(chunk.truncated)]
        chunk.occluded = [np.concatenate(chunk.occluded)]
        chunk.scores = [np.concatenate(chunk.scores)]


def _add_header(
    chunk: _Chunk, key: str, path: str, size: ImageSize | None, filename: str | None
) -> None:
    chunk.keys.append(key)
    chunk.paths.append(path)
    chunk.sizes.append(size)
    chunk.filenames.append(filename)


def _add_annotation(chunk: _Chunk, annotation: ImageAnnotation) -> None:
    _add_header(chunk, annotation.key, annotation.path, annotation.size, annotation.filename)
    boxes = annotation.boxes
    shaped = [(k, b.shape) for k, b in enumerate(boxes) if b.shape is not None]
    if shaped:
        start = sum(chunk.counts)
        chunk.shapes.extend((start + k, shape) for k, shape in shaped)
        chunk.bndboxes.extend(
            (start + k, b.bndbox) for k, b in enumerate(boxes) if b.bndbox is not None
        )
    chunk.counts.append(len(boxes))
    _add_names(chunk, [b.name for b in boxes])
    chunk.boxes.append(np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64))
    chunk.difficult.append(np.array([b.difficult for b in boxes], dtype=bool))
    chunk.truncated.append(np.array([b.truncated for b in boxes], dtype=bool))
    chunk.occluded.append(np.array([b.occluded for b in boxes], dtype=bool))
    _add_poses(chunk, [b.pose for b in boxes])
    chunk.scores.append(
        np.array([math.nan if b.score is None else b.score for b in boxes], dtype=np.float64)
    )


def _add_names(chunk: _Chunk, names: Sequence[str]) -> None:
    vocabulary = chunk.vocabulary
    for name in names:
        code = vocabulary.get(name)
        if code is None:
            code = vocabulary[name] = len(vocabulary)
        chunk.codes.append(code)


def _pose_code(chunk: _Chunk, pose: str) -> int:
    code = chunk.pose_vocabulary.get(pose)
    if code is None:
        code = chunk.pose_vocabulary[pose] = len(chunk.pose_vocabulary)
    return code


def _add_poses(chunk: _Chunk, poses: Sequence[str | None]) -> None:
    chunk.pose_codes.extend(-1 if pose is None else _pose_code(chunk, pose) for pose in poses)


def _add_raw_poses(chunk: _Chunk, raw_poses: Sequence[bytes | None]) -> None:
    # As the parser reads <pose>: stripped text, and empty as absent.
    codes = chunk.raw_poses
    for raw in set(raw_poses).difference(codes):
        text = "" if raw is None else decoded_text(raw).strip()
        codes[raw] = _pose_code(chunk, text) if text else -1
    chunk.pose_codes.extend(map(codes.__getitem__, raw_poses))


def _add_raw_names(chunk: _Chunk, raw_names: Sequence[bytes], new_names: dict[bytes, str]) -> None:
    # ``new_names``: the raw names the chunk has not seen, decoded and stripped by _fast.
    codes = chunk.raw_codes
    for raw, name in new_names.items():
        code = chunk.vocabulary.get(name)
        if code is None:
            code = chunk.vocabulary[name] = len(chunk.vocabulary)
        codes[raw] = code
    chunk.codes.extend(map(codes.__getitem__, raw_names))


def _assemble(
    root: str,
    chunks: Sequence[_Chunk],
    skipped: Sequence[SkippedFile],
    notes: tuple[str, ...] = (),
) -> ColumnSet:
    counts = np.concatenate(
        [np.zeros(0, np.int64)] + [np.frombuffer(c.counts, np.int64) for c in chunks]
    )
    total = int(counts.sum())
    label_names = sorted(set().union(*(c.vocabulary for c in chunks)))
    index = {n: i for i, n in enumerate(label_names)}
    pose_names = sorted(set().union(*(c.pose_vocabulary for c in chunks)))
    pose_index = {p: i for i, p in enumerate(pose_names)}
    # The columns are filled chunk by chunk and each chunk's own arrays let go at once, so
    # reading a large set never holds its objects twice.
    boxes = np.empty((total, 4), dtype=np.float64)
    labels = np.empty(total, dtype=np.int32)
    difficult = np.empty(total, dtype=bool)
    truncated = np.empty(total, dtype=bool)
    occluded = np.empty(total, dtype=bool)
    pose = np.empty(total, dtype=np.int32)
    scores = np.empty(total, dtype=np.float64)
    shapes: list[tuple[int, Polygon | RotatedBox]] = []
    bndboxes: list[tuple[int, tuple[float, float, float, float]]] = []
    offset = 0
    for c in chunks:
        n = len(c.codes)
        stop = offset + n
        if n:
            # Joined straight into the columns, with no array in between.
            np.concatenate([b.reshape(-1, 4) for b in c.boxes], out=boxes[offset:stop])
            np.concatenate(c.difficult, out=difficult[offset:stop])
            np.concatenate(c.truncated, out=truncated[offset:stop])
            np.concatenate(c.occluded, out=occluded[offset:stop])
            # A chunk's codes are the places of its texts in its vocabularies (in order of
            # insertion); a pose's shifted by one so that -1 (absent) maps to -1.
            pose_remap = np.array([-1, *map(pose_index.__getitem__, c.pose_vocabulary)], np.int32)
            pose[offset:stop] = pose_remap[np.frombuffer(c.pose_codes, np.intc) + 1]
            np.concatenate(c.scores, out=scores[offset:stop])
            remap = np.array([*map(index.__getitem__, c.vocabulary)], dtype=np.int32)
            labels[offset:stop] = remap[np.frombuffer(c.codes, np.intc)]
        shapes.extend((offset + row, shape) for row, shape in c.shapes)
        bndboxes.extend((offset + row, given) for row, given in c.bndboxes)
        c.boxes, c.difficult, c.truncated, c.scores, c.codes = [], [], [], [], array("i")
        c.occluded, c.pose_codes = [], array("i")
        offset = stop
    keys = tuple(chain.from_iterable(c.keys for c in chunks))
    return ColumnSet(
        root=root,
        keys=keys,
        paths=tuple(chain.from_iterable(c.paths for c in chunks)),
        sizes=tuple(chain.from_iterable(c.sizes for c in chunks)),
        filenames=tuple(chain.from_iterable(c.filenames for c in chunks)),
        image=np.repeat(np.arange(len(keys), dtype=np.int32), counts),
        labels=labels,
        label_names=tuple(label_names),
        boxes=boxes,
        difficult=difficult,
        truncated=truncated,
        occluded=occluded,
        pose=pose,
        pose_names=tuple(pose_names),
        scores=scores,
        skipped=tuple(
            sorted((*skipped, *(s for c in chunks for s in c.skipped)), key=lambda s: s.path)
        ),
        notes=notes,
        shapes=tuple(shapes),
        bndboxes=tuple(bndboxes),
    )


def _read_sets(
    roots: Sequence[str | os.PathLike[str]],
    jobs: int,
    max_bytes: int,
    progress: Callable[[int, int], None] | None,
) -> list[ColumnSet]:
    """Read several directories with one pool of workers (started once): the read the
    command line started for them early, where it did with these limits
    (:func:`~vocmatch.readers.read_ahead.early_read`), else one started here."""
    jobs, max_bytes = checked_jobs(jobs), checked_max_bytes(max_bytes)
    threads = reads_in_threads()
    started = claimed(roots, jobs, max_bytes, threads=threads, text_limit=PARSER_TEXT_LIMIT)
    if started is None:
        listings = [list_directory(root) for root in roots]
        started = start_read(
            listings, jobs, max_bytes, threads=threads, text_limit=PARSER_TEXT_LIMIT
        )
    return finish_read(started, progress)


def read_listings(
    listings: Sequence[DirectoryListing],
    jobs: int = 1,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> list[ColumnSet]:
    """Read the files of listings (:func:`~vocmatch.readers.parse.list_directory`'s, or
    part of them: :mod:`vocmatch.readers.shards`) with one pool of workers, one column set
    per listing, as :func:`read_columns` reads a directory.

    With the compiled reader's chunk call, the workers are threads of this process (it
    reads with the GIL released: no process to start, nothing to send back); otherwise
    they are worker processes. The column sets are the same either way.

    Args:
        listings: The files to read and those left out, one listing per column set.
        jobs: Workers (capped at the cores and the files; 0: every core).
        max_bytes: Per-file size limit.
        progress: Called as ``progress(files_read, files_total)`` over every listing.

    Returns:
        The column sets, in the order of ``listings``.
    """
    jobs, max_bytes = checked_jobs(jobs), checked_max_bytes(max_bytes)
    threads = reads_in_threads()
    started = start_read(listings, jobs, max_bytes, threads=threads, text_limit=PARSER_TEXT_LIMIT)
    return finish_read(started, progress)


def finish_read(
    started: StartedRead, progress: Callable[[int, int], None] | None = None
) -> list[ColumnSet]:
    """The column sets of a read started by :func:`~vocmatch.readers.read_ahead.start_read`.

    The threads' chunk reads are taken in chunk order, each made into its chunk's columns
    here (the files the compiled reader left are read by the per-file route here too);
    without threads, worker processes read the chunks now. When this ends by an exception,
    the threads are stopped (the chunks not started are dropped) before it propagates.

    Args:
        started: The read.
        progress: Called as ``progress(files_read, files_total)`` over every listing.

    Returns:
        The column sets, in the order of the read's listings.
    """
    listings, parts, max_bytes = started.listings, started.parts, started.max_bytes
    total = started.total()
    chunks: list[list[_Chunk]] = [[] for _ in listings]
    done = 0
    if started.raw is not None:
        # The <size> records, one per distinct size across the listings.
        sizes: dict[bytes, ImageSize] = {}
        try:
            for (which, part), found in zip(parts, started.raw.results(), strict=True):
                chunks[which].append(_chunk_of(part, found, max_bytes, sizes))
                done += len(part)
                if progress is not None:
                    progress(done, total)
        finally:
            started.close()
    else:
        tasks = [(part, max_bytes) for _, part in parts]
        with worker_results(_read_chunk, tasks, started.workers) as results:
            for (which, part), chunk in zip(parts, results, strict=True):
                chunks[which].append(chunk)
                done += len(part)
                if progress is not None:
                    progress(done, total)
    sets = [
        _assemble(listing.root, found, listing.skipped, listing.notes)
        for found, listing in zip(chunks, listings, strict=True)
    ]
    del chunks
    _release_free_memory()
    return sets


def _chunk_of(
    files: Sequence[tuple[str, str]],
    found: tuple[Any, ...],
    max_bytes: int,
    sizes: dict[bytes, ImageSize],
) -> _Chunk:
    """A chunk's columns from the compiled reader's read of its files
    (:func:`~vocmatch.readers.read_ahead.raw_chunk`), the files it left read by the
    per-file route (by :func:`~vocmatch.readers.regular_files.read_bytes`)."""
    chunk = _new_chunk()
    _add_compiled_chunk(chunk, files, _compiled_columns(found), max_bytes, _fast_compiled, sizes)
    _consolidate(chunk)
    return chunk


def reads_in_threads() -> bool:
    """Whether :func:`read_listings` reads with threads of this process (else worker
    processes): the compiled reader reads whole chunks with the GIL released (only the rare
    files it leaves to the per-file route hold it)."""
    return (
        active_reader() == "compiled"
        and getattr(_compiled, "read_chunk", None) is not None
        and os.name == "posix"
    )


def _release_free_memory() -> None:
    """Give the heap that held the workers' chunks back to the system (glibc only).

    The chunks arrive as many mid-sized arrays that malloc keeps in its heap once freed;
    on 50,000 images that is about 250 MB the process would hold through the evaluation.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to do


def read_columns(
    root: str | os.PathLike[str],
    jobs: int = 1,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> ColumnSet:
    """Read every annotation file below a directory into columns.

    The result holds the same objects, in the same order, as
    :func:`vocmatch.readers.parse.read_directory`, and the same skipped files.

    Args:
        root: The directory to read, recursively.
        jobs: Workers (capped at the cores and the files; 0: every core; threads or
            processes, as :func:`read_listings` says); 1 reads in this thread.
        max_bytes: Per-file size limit.
        progress: Called as ``progress(files_read, files_total)`` as reading goes on.

    Returns:
        The columns.

    Raises:
        InputError: ``root`` is not a directory.
    """
    return _read_sets([root], jobs, max_bytes, progress)[0]


def read_listed_columns(
    files: Sequence[tuple[str, str]],
    max_bytes: int = DEFAULT_MAX_BYTES,
    read: Callable[[str, int], bytes] = read_bytes,
    root: str = "",
) -> ColumnSet:
    """Read listed files into columns in this process, each file's bytes got by ``read``.

    The bytes go through the same fast reader and parser as :func:`read_columns`; only
    where they come from changes (another store, through
    :mod:`vocmatch.readers.remote`).

    Args:
        files: ``(key, path)`` pairs, sorted by key.
        max_bytes: Per-file size limit, passed to ``read``.
        read: ``read(path, max_bytes)`` gives a file's bytes or raises
            :class:`~vocmatch.errors.AnnotationError` (the file is then skipped).
        root: What the columns name as the directory read.

    Returns:
        The columns, with the files that could not be read in ``skipped``.
    """
    max_bytes = checked_max_bytes(max_bytes)
    return _assemble(root, [_read_chunk(files, max_bytes, read)], ())


def columns_from_annotations(annotations: AnnotationSet) -> ColumnSet:
    """Columns holding the same objects as parser records (for comparisons and tests)."""
    chunk = _new_chunk()
    for annotation in annotations.annotations:
        _add_annotation(chunk, annotation)
    return _assemble(annotations.root, [chunk], annotations.skipped, annotations.notes)


def read_column_pair(
    gt_dir: str | os.PathLike[str],
    pred_dir: str | os.PathLike[str],
    jobs: int = 1,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[ColumnSet, ColumnSet]:
    """Read a ground-truth and a prediction directory into columns.

    Args:
        gt_dir: Ground-truth XML files (searched recursively).
        pred_dir: Prediction XML files.
        jobs: Workers (capped at the cores and the files; 0: every core; threads or
            processes, as :func:`read_listings` says).
        max_bytes: Per-file size limit.
        progress: Called as ``progress(files_read, files_total)`` over both directories.

    Returns:
        The two column sets.

    Raises:
        InputError: A path is not a directory, or the ground truth holds no readable file.
    """
    gt, pred = _read_sets([gt_dir, pred_dir], jobs, max_bytes, progress)
    if not gt.keys:
        raise no_annotation_files(os.fspath(gt_dir), gt.skipped)
    return gt, pred

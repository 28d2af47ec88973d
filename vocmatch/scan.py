"""Read annotation directories into columns (numpy arrays), fast and in parallel.

:mod:`vocmatch.parse` builds one record per object, which is clear but costs a Python object
per box; on 10,000 files with half a million objects the per-object walk, not the XML
parser, is where the time goes. This reader extracts the objects of a file with one regular
expression over its bytes and converts the fields in bulk. It only does so for files whose
layout it can prove it reads exactly as the parser does (LabelImg's layout: a header of
simple elements, then ``<object>`` elements of known children, then ``</annotation>``); any
other file -- an attribute, a comment, CDATA, an entity, a namespace, a ``<part>``, another
encoding, a value the parser would refuse -- is read by :func:`vocmatch.parse.read_annotation`
instead, so results and error messages are always the parser's own. A test checks that both
readers give identical columns on the real and the generated sets.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vocmatch.errors import AnnotationError
from vocmatch.model import Box, ImageAnnotation, ImageSize, SkippedFile
from vocmatch.parse import (
    DEFAULT_MAX_BYTES,
    AnnotationSet,
    find_annotation_files,
    parse_annotation,
    read_annotation,
)

__all__ = ["ColumnSet", "columns_from_annotations", "read_columns"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_OBJECT = re.compile(
    rb"<object>\s*"
    rb"<name>([^<]*)</name>\s*"
    rb"(<pose>[^<]*</pose>\s*)?"
    rb"(<truncated>([^<]*)</truncated>\s*)?"
    rb"(<difficult>([^<]*)</difficult>\s*)?"
    rb"<bndbox>\s*"
    rb"<xmin>([^<]*)</xmin>\s*<ymin>([^<]*)</ymin>\s*"
    rb"<xmax>([^<]*)</xmax>\s*<ymax>([^<]*)</ymax>\s*"
    rb"</bndbox>\s*"
    rb"(<score>([^<]*)</score>\s*|<confidence>([^<]*)</confidence>\s*)?"
    rb"</object>"
)
# Groups of _OBJECT: name, pose element, truncated element and value, difficult element
# and value, the four coordinates, score-or-confidence element, score value, confidence
# value. An element group is empty exactly when the element is absent.
# Bytes that make a file anything but the plain layout: markup declarations, comments,
# CDATA, entity references, namespaces, person-layout parts, regions other than boxes, and
# the end of a CDATA section (not allowed in text). Plain substring tests run at memchr
# speed, far faster than one regular expression with alternatives.
_UNUSUAL = (b"<!", b"&", b"xmlns", b"<part", b"<polygon", b"<robndbox", b"]]>")
# Control characters are not allowed in XML 1.0.
_CONTROL = bytes(range(0x00, 0x09)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
_DECLARATION = re.compile(rb"\A<\?xml[ \t\r\n][^>]*\?>")
_ENCODING = re.compile(rb"encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
_TRAILER = re.compile(rb"\s*</annotation>\s*\Z")
_SPACE = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class ColumnSet:
    """A directory of annotation files as columns, one row per object.

    Attributes:
        root: The directory that was read.
        keys: Image keys, sorted.
        paths: The file of each image.
        sizes: ``(I, 2)`` width and height from ``<size>``; NaN where absent.
        image: ``(B,)`` index of each object's image, non-decreasing.
        labels: ``(B,)`` index of each object's class name in ``label_names``.
        label_names: The class names, sorted.
        boxes: ``(B, 4)`` ``x1, y1, x2, y2``.
        difficult: ``(B,)`` the ``difficult`` flag.
        truncated: ``(B,)`` the ``truncated`` flag.
        scores: ``(B,)`` scores; NaN where an object has none.
        skipped: Files that could not be read.
    """

    root: str
    keys: tuple[str, ...]
    paths: tuple[str, ...]
    sizes: FloatArray
    image: IntArray
    labels: IntArray
    label_names: tuple[str, ...]
    boxes: FloatArray
    difficult: BoolArray
    truncated: BoolArray
    scores: FloatArray
    skipped: tuple[SkippedFile, ...]

    def to_annotations(self) -> AnnotationSet:
        """The same data as parser records (object source lines are not known here)."""
        starts = np.searchsorted(self.image, np.arange(len(self.keys) + 1))
        annotations = []
        for i, (key, path) in enumerate(zip(self.keys, self.paths, strict=True)):
            boxes = []
            for b in range(int(starts[i]), int(starts[i + 1])):
                score = float(self.scores[b])
                x1, y1, x2, y2 = (float(v) for v in self.boxes[b])
                boxes.append(
                    Box(
                        self.label_names[self.labels[b]],
                        x1,
                        y1,
                        x2,
                        y2,
                        difficult=bool(self.difficult[b]),
                        truncated=bool(self.truncated[b]),
                        score=None if math.isnan(score) else score,
                    )
                )
            width, height = self.sizes[i]
            size = None if math.isnan(width) else ImageSize(float(width), float(height))
            annotations.append(ImageAnnotation(key, path, tuple(boxes), size))
        return AnnotationSet(self.root, tuple(annotations), self.skipped)


@dataclass(slots=True)
class _Chunk:
    """Columns of a few files, built in a worker process."""

    keys: list[str]
    paths: list[str]
    sizes: list[tuple[float, float]]
    counts: list[int]
    codes: list[int]  # index into vocabulary, one per object
    vocabulary: dict[str, int]
    boxes: list[FloatArray]
    difficult: list[BoolArray]
    truncated: list[BoolArray]
    scores: list[FloatArray]
    skipped: list[SkippedFile]


def _flag(raw: bytes) -> bool | None:
    # The parser's rule: "" and "0" are False, "1" is True, other numbers != 0 are True.
    text = raw.strip(_SPACE)
    if text in (b"", b"0"):
        return False
    if text == b"1":
        return True
    return None  # anything else: let the parser decide


def _fast(
    data: bytes, path: str, key: str
) -> tuple[ImageAnnotation, FloatArray, list[str], BoolArray, BoolArray, FloatArray] | None:
    """Extract a plain-layout file's objects, or None to leave the file to the parser."""
    if any(token in data for token in _UNUSUAL):
        return None
    if len(data.translate(None, _CONTROL)) != len(data):
        return None
    declaration = _DECLARATION.match(data)
    if data.count(b"<?") != (1 if declaration else 0):
        return None  # processing instructions other than the declaration
    if declaration:
        encoding = _ENCODING.search(declaration.group(0))
        if encoding and encoding.group(1).lower() not in (b"utf-8", b"utf8"):
            return None
    elif not data.lstrip(_SPACE).startswith(b"<annotation"):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    matches = _OBJECT.findall(data)
    first = data.find(b"<object")
    if len(matches) != data.count(b"<object") or len(matches) != data.count(b"</object>"):
        return None
    if not matches:
        return None  # nothing to gain: the parser reads small files as fast
    last = data.rfind(b"</object>") + len(b"</object>")
    if not _TRAILER.match(data, last):
        return None
    # Every tag between the first and the last object belongs to a matched object: each
    # holds 4 + 2 * (leaf elements) '<' characters. A wrapper element would add more.
    leaves = 5 * len(matches)
    for m in matches:
        leaves += bool(m[1]) + bool(m[2]) + bool(m[4]) + bool(m[10])
    expected = 4 * len(matches) + 2 * leaves
    if data.count(b"<", first, last) != expected:
        return None
    # The header (everything before the first object) is parsed by the parser itself, so
    # <size>, <filename> and the root element are read exactly as usual.
    header = parse_annotation(data[:first] + b"</annotation>", path, key)
    n = len(matches)
    try:
        coordinates = np.array(
            [float(v) for m in matches for v in m[6:10]], dtype=np.float64
        ).reshape(n, 4)
        has_score = [bool(m[10]) for m in matches]
        scores = np.array(
            [
                (float(m[11]) if m[10].startswith(b"<score") else float(m[12]))
                if m[10]
                else math.nan
                for m in matches
            ],
            dtype=np.float64,
        )
    except ValueError:
        return None
    if not np.all(np.isfinite(coordinates)) or not np.all(
        np.isfinite(scores[np.array(has_score, dtype=bool)])
    ):
        return None
    if np.any(coordinates[:, 2] < coordinates[:, 0]) or np.any(
        coordinates[:, 3] < coordinates[:, 1]
    ):
        return None
    names = []
    for m in matches:
        name = m[0].decode("utf-8").strip()
        if not name:
            return None
        names.append(name)
    difficult_flags = [_flag(m[5]) if m[4] else False for m in matches]
    truncated_flags = [_flag(m[3]) if m[2] else False for m in matches]
    if None in difficult_flags or None in truncated_flags:
        return None
    return (
        header,
        coordinates,
        names,
        np.array(difficult_flags, dtype=bool),
        np.array(truncated_flags, dtype=bool),
        scores,
    )


def _read_chunk(files: Sequence[tuple[str, str]], max_bytes: int) -> _Chunk:
    chunk = _Chunk([], [], [], [], [], {}, [], [], [], [], [])
    for key, path in files:
        try:
            with open(path, "rb") as handle:
                data = handle.read(max_bytes + 1)
            fast = _fast(data, path, key) if len(data) <= max_bytes else None
            if fast is None:
                annotation = read_annotation(path, key, max_bytes)
                _add_annotation(chunk, annotation)
                continue
        except AnnotationError as error:
            chunk.skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
            continue
        except OSError:
            # Unreadable here: let the parser produce its usual message.
            try:
                _add_annotation(chunk, read_annotation(path, key, max_bytes))
            except AnnotationError as error:
                chunk.skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
            continue
        header, coordinates, names, difficult, truncated, scores = fast
        _add_header(chunk, header)
        chunk.counts.append(len(names))
        _add_names(chunk, names)
        chunk.boxes.append(coordinates)
        chunk.difficult.append(difficult)
        chunk.truncated.append(truncated)
        chunk.scores.append(scores)
    return chunk


def _add_header(chunk: _Chunk, annotation: ImageAnnotation) -> None:
    chunk.keys.append(annotation.key)
    chunk.paths.append(annotation.path)
    size = annotation.size
    chunk.sizes.append((size.width, size.height) if size else (math.nan, math.nan))


def _add_annotation(chunk: _Chunk, annotation: ImageAnnotation) -> None:
    _add_header(chunk, annotation)
    boxes = annotation.boxes
    chunk.counts.append(len(boxes))
    _add_names(chunk, [b.name for b in boxes])
    chunk.boxes.append(np.array([(b.x1, b.y1, b.x2, b.y2) for b in boxes], dtype=np.float64))
    chunk.difficult.append(np.array([b.difficult for b in boxes], dtype=bool))
    chunk.truncated.append(np.array([b.truncated for b in boxes], dtype=bool))
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


def _assemble(root: str, chunks: Sequence[_Chunk], skipped: Sequence[SkippedFile]) -> ColumnSet:
    keys = [k for c in chunks for k in c.keys]
    counts = np.array([n for c in chunks for n in c.counts], dtype=np.int64)
    boxes = [b.reshape(-1, 4) for c in chunks for b in c.boxes]
    label_names = sorted({n for c in chunks for n in c.vocabulary})
    index = {n: i for i, n in enumerate(label_names)}
    labels_parts = []
    for c in chunks:
        remap = np.zeros(len(c.vocabulary), dtype=np.int64)
        for name, code in c.vocabulary.items():
            remap[code] = index[name]
        labels_parts.append(remap[np.array(c.codes, dtype=np.int64)])
    labels = np.concatenate(labels_parts) if labels_parts else np.zeros(0, dtype=np.int64)
    return ColumnSet(
        root=root,
        keys=tuple(keys),
        paths=tuple(p for c in chunks for p in c.paths),
        sizes=np.array([s for c in chunks for s in c.sizes], dtype=np.float64).reshape(-1, 2),
        image=np.repeat(np.arange(len(keys), dtype=np.int64), counts),
        labels=labels,
        label_names=tuple(label_names),
        boxes=np.concatenate(boxes) if boxes else np.zeros((0, 4)),
        difficult=np.concatenate([d for c in chunks for d in c.difficult])
        if boxes
        else np.zeros(0, dtype=bool),
        truncated=np.concatenate([d for c in chunks for d in c.truncated])
        if boxes
        else np.zeros(0, dtype=bool),
        scores=np.concatenate([s for c in chunks for s in c.scores]) if boxes else np.zeros(0),
        skipped=tuple(
            sorted((*skipped, *(s for c in chunks for s in c.skipped)), key=lambda s: s.path)
        ),
    )


def read_columns(
    root: str | os.PathLike[str], jobs: int = 1, max_bytes: int = DEFAULT_MAX_BYTES
) -> ColumnSet:
    """Read every annotation file below a directory into columns.

    The result holds the same objects, in the same order, as
    :func:`vocmatch.parse.read_directory`, and the same skipped files.

    Args:
        root: The directory to read, recursively.
        jobs: Worker processes; 1 reads in this process.
        max_bytes: Per-file size limit.

    Returns:
        The columns.

    Raises:
        InputError: ``root`` is not a directory.
    """
    files = find_annotation_files(root)
    skipped: list[SkippedFile] = []
    unique: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for key, path in files:
        if key in seen:
            skipped.append(SkippedFile(path, f"same image key {key!r} as {seen[key]}", key=key))
            continue
        seen[key] = path
        unique.append((key, path))
    if jobs <= 1 or len(unique) < 64:
        chunks = [_read_chunk(unique, max_bytes)]
    else:
        size = max(16, len(unique) // (jobs * 8))
        parts = [unique[i : i + size] for i in range(0, len(unique), size)]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            chunks = list(pool.map(_read_chunk, parts, [max_bytes] * len(parts)))
    return _assemble(os.fspath(root), chunks, skipped)


def columns_from_annotations(annotations: AnnotationSet) -> ColumnSet:
    """Columns holding the same objects as parser records (for comparisons and tests)."""
    chunk = _Chunk([], [], [], [], [], {}, [], [], [], [], [])
    for annotation in annotations.annotations:
        _add_annotation(chunk, annotation)
    return _assemble(annotations.root, [chunk], annotations.skipped)

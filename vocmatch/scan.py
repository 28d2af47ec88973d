"""Read annotation directories into columns (numpy arrays), fast and in parallel.

:mod:`vocmatch.parse` builds one record per object, which is clear but costs a Python object
per box; on 10,000 files with half a million objects the per-object walk, not the XML
parser, is where the time goes. This reader extracts the objects of a file with one regular
expression over its bytes and converts the fields in bulk. It only does so for files whose
layout it can prove it reads exactly as the parser does (LabelImg's layout: a header of
simple elements, then ``<object>`` elements of known children, then ``</annotation>``); any
other file -- an attribute, a comment, CDATA, an entity, a namespace, a ``<part>``, another
encoding, a value the parser would refuse, a rotated box or a polygon -- is read by
:func:`vocmatch.parse.read_annotation` instead, so results and error messages are always the
parser's own. A test checks that both readers give identical columns on the real and the
generated sets.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import os
import re
from collections.abc import Callable, Container, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt

from vocmatch.errors import AnnotationError, InputError
from vocmatch.model import Box, ImageAnnotation, ImageSize, Polygon, RotatedBox, SkippedFile
from vocmatch.parse import (
    DEFAULT_MAX_BYTES,
    MAX_COORDINATE,
    AnnotationSet,
    list_directory,
    parse_annotation,
    read_bytes,
)

__all__ = ["ColumnSet", "columns_from_annotations", "read_column_pair", "read_columns"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

# Text between tags is allowed anywhere ([^<]*), as XML allows it and the parser ignores it.
_OBJECT = re.compile(
    rb"<object>[^<]*"
    rb"<name>([^<]*)</name>[^<]*"
    rb"(<pose>[^<]*</pose>[^<]*)?"
    rb"(<truncated>([^<]*)</truncated>[^<]*)?"
    rb"(<difficult>([^<]*)</difficult>[^<]*)?"
    rb"<bndbox>[^<]*"
    rb"<xmin>([^<]*)</xmin>[^<]*<ymin>([^<]*)</ymin>[^<]*"
    rb"<xmax>([^<]*)</xmax>[^<]*<ymax>([^<]*)</ymax>[^<]*"
    rb"</bndbox>[^<]*"
    rb"(<score>([^<]*)</score>[^<]*|<confidence>([^<]*)</confidence>[^<]*)?"
    rb"</object>"
)
_TAG = re.compile(rb"<(/?)([A-Za-z_][A-Za-z0-9_.-]*)>")
# Groups of _OBJECT: name, pose element, truncated element and value, difficult element
# and value, the four coordinates, score-or-confidence element, score value, confidence
# value. An element group is empty exactly when the element is absent.
# Text the parser would read differently: entity or character references, and the end of
# a CDATA section, which is not allowed in text. Markup other than plain tags (comments,
# CDATA, declarations, processing instructions, attributes, other elements) needs no search
# of its own: every '<' of a plain file is accounted for by the tag counts below.
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

    def to_annotations(self) -> AnnotationSet:
        """The same data as parser records (object source lines are not known here)."""
        starts: list[int] = np.searchsorted(self.image, np.arange(len(self.keys) + 1)).tolist()
        shapes = dict(self.shapes)
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
    counts: list[int]
    codes: list[int]  # index into vocabulary, one per object
    vocabulary: dict[str, int]
    raw_codes: dict[bytes, int]  # a name's bytes as written -> index into vocabulary
    boxes: list[FloatArray]
    difficult: list[BoolArray]
    truncated: list[BoolArray]
    scores: list[FloatArray]
    skipped: list[SkippedFile]
    shapes: list[tuple[int, Polygon | RotatedBox]] = field(default_factory=list)  # chunk rows
    occluded: list[BoolArray] = field(default_factory=list)
    pose_codes: list[int] = field(default_factory=list)  # index into pose_vocabulary, or -1
    pose_vocabulary: dict[str, int] = field(default_factory=dict)
    raw_poses: dict[bytes, int] = field(default_factory=dict)  # <pose> as written -> code


def _flag(raw: bytes) -> bool | None:
    # The parser's rule: "" and "0" are False, "1" is True, other numbers != 0 are True.
    text = raw.strip(_SPACE)
    if text in (b"", b"0"):
        return False
    if text == b"1":
        return True
    return None  # anything else: let the parser decide


@dataclass(frozen=True, slots=True)
class _Header:
    filename: str | None
    size: ImageSize | None


def _leaf_number(text: bytes) -> float | None:
    # The parser's _number: stripped text, float(), finite.
    try:
        value = float(text.decode("utf-8").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _leaf_text(data: bytes, tags: list[re.Match[bytes]], i: int) -> bytes | None:
    """The text of the element opened by ``tags[i]``, or None when it has children."""
    following = tags[i + 1]
    if following.group(1) and following.group(2) == tags[i].group(2):
        return data[tags[i].end() : following.start()]
    return None


# The header LabelImg writes, in its order, with no other element: read with one match.
_LABELIMG_HEADER = re.compile(
    rb'[ \t\r\n]*<annotation(?: verified="(?:yes|no)")?>[^<]*'
    rb"<folder>[^<]*</folder>[^<]*"
    rb"<filename>([^<]*)</filename>[^<]*"
    rb"<path>[^<]*</path>[^<]*"
    rb"<source>[^<]*<database>[^<]*</database>[^<]*</source>[^<]*"
    rb"<size>[^<]*<width>([^<]*)</width>[^<]*<height>([^<]*)</height>[^<]*"
    rb"<depth>([^<]*)</depth>[^<]*</size>[^<]*"
    rb"<segmented>[^<]*</segmented>[^<]*"
)


def _size(width: bytes, height: bytes, depth: bytes | None) -> ImageSize | None:
    """The parser's ``<size>`` from its children's text, or None where it would differ."""
    w, h = _leaf_number(width), _leaf_number(height)
    if w is None or h is None:
        return None
    number: int | None = None
    if depth is not None and depth.decode("utf-8").strip():
        value = _leaf_number(depth)
        if value is None:
            return None
        number = int(value)
    return ImageSize(width=w, height=h, depth=number)


def _labelimg_header(data: bytes, start: int, stop: int) -> _Header | None:
    """The header of a file laid out exactly as LabelImg writes it (the attribute
    ``verified`` on the root is LabelImg's own, and the parser ignores it), else None."""
    match = _LABELIMG_HEADER.fullmatch(data, start, stop)
    if match is None:
        return None
    size = _size(match[2], match[3], match[4])
    if size is None:
        return None
    return _Header(match[1].decode("utf-8").strip(), size)


def _header(data: bytes, start: int, stop: int) -> _Header | None:
    """Read <filename> and <size> from the part of a plain file before its first object.

    Returns None unless that part is a well-formed run of plain tags that opens
    <annotation> and leaves it open, so the parser would read it the same way (it takes
    the first <filename>, the first <size> and, within it, the first <width>, <height> and
    <depth>).
    """
    tags = list(_TAG.finditer(data, start, stop))
    if data.count(b"<", start, stop) != len(tags):
        return None  # attributes, or a '<' the tag pattern does not cover
    if not tags or data[start : tags[0].start()].strip(_SPACE):
        return None  # text before the root element is not well-formed
    stack: list[bytes] = []
    filename_at: int | None = None
    size_at: int | None = None
    size_children: dict[bytes, int] = {}
    in_first_size = False
    for i, tag in enumerate(tags):
        name = tag.group(2)
        if tag.group(1):
            if len(stack) < 2 or stack[-1] != name:
                return None  # mismatched, or closing <annotation> before the objects
            stack.pop()
            if len(stack) == 1:
                in_first_size = False
            continue
        if not stack and name != b"annotation":
            return None
        stack.append(name)
        if len(stack) == 2:
            if name == b"filename" and filename_at is None:
                filename_at = i
            elif name == b"size" and size_at is None:
                size_at = i
                in_first_size = True
        elif len(stack) == 3 and in_first_size:
            size_children.setdefault(name, i)
    if stack != [b"annotation"]:
        return None
    filename = None
    if filename_at is not None:
        raw = _leaf_text(data, tags, filename_at)
        if raw is None:
            return None
        filename = raw.decode("utf-8").strip()
    size = None
    if size_at is not None:
        texts: dict[bytes, bytes | None] = {}
        for child in (b"width", b"height", b"depth"):
            if child in size_children:
                texts[child] = _leaf_text(data, tags, size_children[child])
                if texts[child] is None:
                    return None  # the element has children
        width, height = texts.get(b"width"), texts.get(b"height")
        if width is None or height is None:
            return None
        size = _size(width, height, texts.get(b"depth"))
        if size is None:
            return None
    return _Header(filename, size)


@dataclass(slots=True)
class _Objects:
    """The objects of one plain file."""

    header: _Header
    coordinates: FloatArray
    names: Sequence[bytes]  # as written; stripped and decoded once per chunk
    new_names: dict[bytes, str]  # names not in the chunk's vocabulary yet: as the parser reads them
    difficult: BoolArray
    truncated: BoolArray
    scores: FloatArray
    poses: Sequence[bytes | None]  # <pose> text as written, None where absent


def _flags(raw: Sequence[bytes]) -> BoolArray | None:
    """``truncated`` or ``difficult`` texts as the parser reads them, or None for any other
    than the common ``0`` and ``1`` (and absent or empty, which are 0): the parser decides."""
    if set(raw) <= {b"0", b"1"}:
        return np.fromiter(map(b"1".__eq__, raw), dtype=bool, count=len(raw))
    values = [_flag(value) for value in raw]
    if None in values:
        return None
    return np.array(values, dtype=bool)


@dataclass(slots=True)
class _Fields:
    """The text of each object's fields, as written, before conversion: one column each."""

    names: Sequence[bytes]
    coordinates: tuple[Sequence[bytes], Sequence[bytes], Sequence[bytes], Sequence[bytes]]
    truncated: Sequence[bytes]  # b"0" where the element is absent
    difficult: Sequence[bytes]
    scores: Sequence[bytes | None] | None  # None for an object without; None if none has
    poses: Sequence[bytes | None]  # None where the element is absent


@functools.cache
def _layout(pose: bool, truncated: bool, difficult: bool, score: bytes | None) -> re.Pattern[bytes]:
    """An object of one fixed layout, capturing only the values: name, [pose], [truncated],
    [difficult], the four coordinates, [score or confidence]. Faster than :data:`_OBJECT`,
    which has to try every optional element of every object."""
    optional = [(pose, rb"<pose>([^<]*)</pose>[^<]*")]
    optional.append((truncated, rb"<truncated>([^<]*)</truncated>[^<]*"))
    optional.append((difficult, rb"<difficult>([^<]*)</difficult>[^<]*"))
    tail = rb"" if score is None else rb"<%s>([^<]*)</%s>[^<]*" % (score, score)
    return re.compile(
        rb"<object>[^<]*<name>([^<]*)</name>[^<]*"
        + b"".join(part for present, part in optional if present)
        + rb"<bndbox>[^<]*"
        rb"<xmin>([^<]*)</xmin>[^<]*<ymin>([^<]*)</ymin>[^<]*"
        rb"<xmax>([^<]*)</xmax>[^<]*<ymax>([^<]*)</ymax>[^<]*"
        rb"</bndbox>[^<]*" + tail + rb"</object>"
    )


def _fixed_layout_fields(data: bytes, first: int, tags: int) -> _Fields | None:
    """The fields when every object has the first one's layout (LabelImg writes all alike).

    ``tags`` is the number of '<' from the first object to the end of the last one.
    """
    head = _OBJECT.match(data, first)
    if head is None:
        return None
    score = b"score" if head[12] is not None else b"confidence" if head[13] is not None else None
    pose, truncated, difficult = head[2] is not None, head[3] is not None, head[5] is not None
    matches = _layout(pose, truncated, difficult, score).findall(data, first)
    # Each object holds 4 + 2 * (leaf elements) '<': when they add up to every '<' between
    # the first and the last object, nothing else is there.
    leaves = 5 + pose + truncated + difficult + (score is not None)
    if not matches or tags != len(matches) * (4 + 2 * leaves):
        return None
    columns = list(zip(*matches, strict=True))
    absent = (b"0",) * len(matches)
    t = 1 + pose  # the column of truncated
    x = t + truncated + difficult  # the column of xmin
    return _Fields(
        names=columns[0],
        coordinates=(columns[x], columns[x + 1], columns[x + 2], columns[x + 3]),
        truncated=columns[t] if truncated else absent,
        difficult=columns[t + truncated] if difficult else absent,
        scores=columns[x + 4] if score is not None else None,
        poses=columns[1] if pose else (None,) * len(matches),
    )


def _mixed_layout_fields(data: bytes, first: int, tags: int) -> _Fields | None:
    """The fields when objects differ in which optional elements they have."""
    matches = _OBJECT.findall(data, first)
    leaves = 5 * len(matches)
    for m in matches:
        leaves += bool(m[1]) + bool(m[2]) + bool(m[4]) + bool(m[10])
    if not matches or tags != 4 * len(matches) + 2 * leaves:
        return None  # a wrapper element, an attribute or an object of another shape
    columns = list(zip(*matches, strict=True))
    return _Fields(
        names=columns[0],
        coordinates=(columns[6], columns[7], columns[8], columns[9]),
        truncated=[m[3] if m[2] else b"0" for m in matches],
        difficult=[m[5] if m[4] else b"0" for m in matches],
        # <score> or <confidence>, whichever is there.
        scores=[(m[11] or m[12]) if m[10] else None for m in matches],
        # The element as matched: <pose>, its text, </pose> and any text after it.
        poses=[m[1][6 : m[1].index(b"</pose>")] if m[1] else None for m in matches],
    )


def _fast(data: bytes, names_seen: Container[bytes] = ()) -> _Objects | None:
    """Extract a plain-layout file's objects, or None to leave the file to the parser.

    ``names_seen`` holds names (as written) already known to be usable.
    """
    if b"&" in data or (b"]" in data and b"]]>" in data):
        return None
    if len(data.translate(None, _CONTROL)) != len(data):
        return None
    declaration = _DECLARATION.match(data)
    start = 0
    if declaration:
        encoding = _ENCODING.search(declaration.group(0))
        if encoding and encoding.group(1).lower() not in (b"utf-8", b"utf8"):
            return None
        start = declaration.end()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    first = data.find(b"<object")
    if first < 0:
        return None  # nothing to gain: the parser reads object-less files as fast
    last = data.rfind(b"</object>") + len(b"</object>")
    if not _TRAILER.match(data, last):
        return None
    # Counted by numpy: several times faster than bytes.count on a file of this size.
    tags = int(np.count_nonzero(np.frombuffer(data, np.uint8, last - first, first) == ord("<")))
    fields = _fixed_layout_fields(data, first, tags) or _mixed_layout_fields(data, first, tags)
    if fields is None:
        return None
    header = _labelimg_header(data, start, first) or _header(data, start, first)
    if header is None:
        return None
    n = len(fields.names)
    try:
        coordinates = (
            np.array(list(map(float, itertools.chain(*fields.coordinates))), dtype=np.float64)
            .reshape(4, n)
            .T
        )
        # An empty score element fails float(), as in the parser.
        if fields.scores is None:
            scores = np.full(n, math.nan)
        elif None in fields.scores:
            scores = np.array(
                [math.nan if v is None else float(v) for v in fields.scores], dtype=np.float64
            )
        else:
            texts = cast("Sequence[bytes]", fields.scores)  # no None, as just checked
            scores = np.array(list(map(float, texts)), dtype=np.float64)
    except ValueError:
        return None
    # Within range (so finite: NaN fails every comparison), and xmax >= xmin, ymax >= ymin.
    if not (np.abs(coordinates) <= MAX_COORDINATE).all():
        return None
    if not (coordinates[:, 2:] >= coordinates[:, :2]).all():
        return None
    if fields.scores is not None and not np.isfinite(scores).all():
        # NaN only where there is no score element; a written NaN or infinity is the
        # parser's to refuse.
        written = np.array([v is not None for v in fields.scores], dtype=bool)
        if np.isinf(scores).any() or np.isnan(scores[written]).any():
            return None
    # Names stay raw here: decoded once per distinct name, per chunk.
    new_names = {
        raw: raw.decode("utf-8").strip() for raw in set(fields.names) if raw not in names_seen
    }
    if not all(new_names.values()):
        return None  # an empty name: the parser's to refuse
    difficult = _flags(fields.difficult)
    truncated = _flags(fields.truncated)
    if difficult is None or truncated is None:
        return None
    return _Objects(
        header, coordinates, fields.names, new_names, difficult, truncated, scores, fields.poses
    )


def _read_chunk(files: Sequence[tuple[str, str]], max_bytes: int) -> _Chunk:
    chunk = _Chunk([], [], [], [], [], [], {}, {}, [], [], [], [], [])
    for key, path in files:
        try:
            # The parser's own reading: regular files only, size checked first.
            data = read_bytes(path, max_bytes)
            fast = _fast(data, chunk.raw_codes)
            if fast is None:
                _add_annotation(chunk, parse_annotation(data, path, key))
                continue
        except AnnotationError as error:
            chunk.skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
            continue
        _add_header(chunk, key, path, fast.header.size, fast.header.filename)
        chunk.counts.append(len(fast.names))
        _add_raw_names(chunk, fast.names, fast.new_names)
        chunk.boxes.append(fast.coordinates)
        chunk.difficult.append(fast.difficult)
        chunk.truncated.append(fast.truncated)
        # A plain file has no <occluded> (an unknown element hands it to the parser).
        chunk.occluded.append(np.zeros(len(fast.names), dtype=bool))
        _add_raw_poses(chunk, fast.poses)
        chunk.scores.append(fast.scores)
    _consolidate(chunk)
    return chunk


def _consolidate(chunk: _Chunk) -> None:
    """One array per field instead of one per file: sent once, and held in large blocks
    that are given back to the system when freed (many small ones would stay as
    fragmented heap in the reading process)."""
    if chunk.boxes:
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
    for raw in raw_poses:
        if raw is not None and raw not in codes:
            text = raw.decode("utf-8").strip()
            codes[raw] = _pose_code(chunk, text) if text else -1
    chunk.pose_codes.extend(-1 if raw is None else codes[raw] for raw in raw_poses)


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
    keys = [k for c in chunks for k in c.keys]
    counts = np.array([n for c in chunks for n in c.counts], dtype=np.int64)
    total = int(counts.sum())
    label_names = sorted({n for c in chunks for n in c.vocabulary})
    index = {n: i for i, n in enumerate(label_names)}
    pose_names = sorted({p for c in chunks for p in c.pose_vocabulary})
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
    offset = 0
    for c in chunks:
        n = len(c.codes)
        stop = offset + n
        if n:
            boxes[offset:stop] = np.concatenate([b.reshape(-1, 4) for b in c.boxes])
            difficult[offset:stop] = np.concatenate(c.difficult)
            truncated[offset:stop] = np.concatenate(c.truncated)
            occluded[offset:stop] = np.concatenate(c.occluded)
            # Codes shifted by one so that -1 (absent) maps to -1.
            pose_remap = np.full(len(c.pose_vocabulary) + 1, -1, dtype=np.int32)
            for text, code in c.pose_vocabulary.items():
                pose_remap[code + 1] = pose_index[text]
            pose[offset:stop] = pose_remap[np.array(c.pose_codes, dtype=np.int64) + 1]
            scores[offset:stop] = np.concatenate(c.scores)
            remap = np.zeros(len(c.vocabulary), dtype=np.int32)
            for name, code in c.vocabulary.items():
                remap[code] = index[name]
            labels[offset:stop] = remap[np.array(c.codes, dtype=np.int64)]
        shapes.extend((offset + row, shape) for row, shape in c.shapes)
        c.boxes, c.difficult, c.truncated, c.scores, c.codes = [], [], [], [], []
        c.occluded, c.pose_codes = [], []
        offset = stop
    return ColumnSet(
        root=root,
        keys=tuple(keys),
        paths=tuple(p for c in chunks for p in c.paths),
        sizes=tuple(s for c in chunks for s in c.sizes),
        filenames=tuple(f for c in chunks for f in c.filenames),
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
    )


def _read_sets(
    roots: Sequence[str | os.PathLike[str]],
    jobs: int,
    max_bytes: int,
    progress: Callable[[int, int], None] | None,
) -> list[ColumnSet]:
    """Read several directories with one pool of workers (started once)."""
    listings = [list_directory(root) for root in roots]
    total = sum(len(listing.files) for listing in listings)
    # Chunks small enough to report progress and balance the workers, large enough that
    # sending them costs little.
    size = max(16, min(512, total // (max(jobs, 1) * 8) or 16))
    parts = [
        (which, listing.files[i : i + size])
        for which, listing in enumerate(listings)
        for i in range(0, len(listing.files), size)
    ]
    chunks: list[list[_Chunk]] = [[] for _ in listings]
    done = 0
    if jobs <= 1 or total < 64:
        for which, part in parts:
            chunks[which].append(_read_chunk(part, max_bytes))
            done += len(part)
            if progress is not None:
                progress(done, total)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_read_chunk, part, max_bytes) for _, part in parts]
            for (which, part), future in zip(parts, futures, strict=True):
                chunks[which].append(future.result())
                done += len(part)
                if progress is not None:
                    progress(done, total)
    sets = [
        _assemble(os.fspath(root), found, listing.skipped, listing.notes)
        for root, found, listing in zip(roots, chunks, listings, strict=True)
    ]
    del chunks
    _release_free_memory()
    return sets


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
    :func:`vocmatch.parse.read_directory`, and the same skipped files.

    Args:
        root: The directory to read, recursively.
        jobs: Worker processes; 1 reads in this process.
        max_bytes: Per-file size limit.
        progress: Called as ``progress(files_read, files_total)`` as reading goes on.

    Returns:
        The columns.

    Raises:
        InputError: ``root`` is not a directory.
    """
    return _read_sets([root], jobs, max_bytes, progress)[0]


def columns_from_annotations(annotations: AnnotationSet) -> ColumnSet:
    """Columns holding the same objects as parser records (for comparisons and tests)."""
    chunk = _Chunk([], [], [], [], [], [], {}, {}, [], [], [], [], [])
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
        jobs: Worker processes.
        max_bytes: Per-file size limit.
        progress: Called as ``progress(files_read, files_total)`` over both directories.

    Returns:
        The two column sets.

    Raises:
        InputError: A path is not a directory, or the ground truth holds no readable file.
    """
    gt, pred = _read_sets([gt_dir, pred_dir], jobs, max_bytes, progress)
    if not gt.keys:
        what = "no readable" if gt.skipped else "no"
        raise InputError(f"{os.fspath(gt_dir)}: {what} .xml annotation files found")
    return gt, pred

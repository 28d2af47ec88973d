"""Read annotation directories into columns (numpy arrays), fast and in parallel.

:mod:`vocmatch.readers.parse` builds one record per object, which is clear but costs a Python object
per box; on 10,000 files with half a million objects the per-object walk, not the XML
parser, is where the time goes. This reader extracts the objects of a file with one regular
expression over its bytes and converts the fields in bulk.

It does not depend on the writer's layout. The first object's tags (their names and
nesting, not their text) are its layout; a plan made once per layout and process says where
the parser would find each field (the first ``<name>`` child, the first ``<bndbox>``'s
corners, the first ``<score>`` or else ``<confidence>``, in any order, among any other
children, nested ones included) and compiles a pattern matching exactly that sequence of
tags. Most writers lay out every object alike, so one ``findall`` reads the file; when
objects differ, each is read by the plan of its own layout. The header is read the same way.

It only reads files it can prove the parser reads the same way: every ``<`` accounted for
by plain tags, no reference, CDATA end, control character or non-UTF-8 byte, every number
in the one grammar (:data:`vocmatch.readers.parse.NUMBER_PATTERN`, proved in bulk: see
:func:`_numbers`), every value one the parser accepts. Any other file -- a comment, CDATA,
an entity, an attribute or a namespace, another encoding, a value the parser would refuse,
a rotated box or a polygon -- is read by :func:`vocmatch.readers.parse.parse_annotation` instead,
so results and error messages are always the parser's own. Tests check that both readers
give identical columns on every layout of ``bench/zoo.py``, on the real sets, and on
generated files of any layout and content.

Where the package was built with a C compiler, a compiled reader (``_fastxml.c``) does the
same in one pass over the bytes, for the same subset of files, to the same columns; this
module's reader is used without it, or with ``VOCMATCH_PURE_READER=1``
(docs/compiled-reader.md).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import json
import math
import os
import re
from array import array
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vocmatch.core.model import Box, ImageAnnotation, ImageSize, Polygon, RotatedBox, SkippedFile
from vocmatch.errors import AnnotationError, no_annotation_files
from vocmatch.readers.parse import (
    DEFAULT_MAX_BYTES,
    MAX_COORDINATE,
    AnnotationSet,
    DirectoryListing,
    list_directory,
    number_problem,
    parse_annotation,
    read_bytes,
)
from vocmatch.readers.workers import worker_count, worker_results

try:  # the compiled reader, built with the package where a C compiler was found
    from vocmatch.readers import _fastxml as _compiled
except ImportError:  # pragma: no cover - a build without a compiler
    _compiled = None  # type: ignore[assignment]

__all__ = [
    "PURE_READER_VARIABLE",
    "ColumnSet",
    "active_reader",
    "columns_from_annotations",
    "read_column_pair",
    "read_columns",
    "read_listed_columns",
    "read_listings",
]

#: Set to 1 to read with the pure-Python fast reader even where the compiled one is built.
PURE_READER_VARIABLE = "VOCMATCH_PURE_READER"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

# A plain start or end tag: no attributes, no namespace prefix. Every '<' of a file the fast
# reader accepts is one of these (counted, not assumed), so comments, CDATA, declarations,
# processing instructions, attributes and prefixed names all leave the file to the parser.
_TAG = re.compile(rb"<(/?)([A-Za-z_][A-Za-z0-9_.-]*)>")
# The header's tags: the same, and LabelImg's ``verified`` attribute, which the parser
# ignores, allowed on the root element only (checked when the header's plan is made).
_HEADER_TAG = re.compile(rb'<(/?)([A-Za-z_][A-Za-z0-9_.-]*)((?: verified="(?:yes|no)")?)>')
# Text the parser would read differently: entity or character references, and the end of
# a CDATA section, which is not allowed in text. Control characters, and the non-characters
# U+FFFE and U+FFFF, are not allowed in XML 1.0.
_NON_CHARACTERS = (b"\xef\xbf\xbe", b"\xef\xbf\xbf")
# The XML declaration read here: version 1.0, then optionally a UTF-8 encoding and
# standalone, each quoted alike. Any other (another version or encoding, another
# pseudo-attribute, a stray byte) leaves the file to the parser, which may refuse it.
_S = rb"[ \t\r\n]"
_DECLARATION = re.compile(
    rb"\A<\?xml%s+version%s*=%s*([\"'])1\.0\1" % (_S, _S, _S)
    + rb"(?:%s+encoding%s*=%s*([\"'])(?i:utf-?8)\2)?" % (_S, _S, _S)
    + rb"(?:%s+standalone%s*=%s*([\"'])(?:yes|no)\3)?%s*\?>" % (_S, _S, _S, _S)
)
_TRAILER = re.compile(rb"\s*</annotation>\s*\Z")
_SPACE = b" \t\r\n"
# Text between tags is allowed anywhere, as XML allows it and the parser ignores it.
_TEXT = rb"[^<]*"
_VALUE = rb"([^<]*)"
# Every byte a number of the grammar may hold, and the separator (see _numbers).
_DECIMAL_BYTES = b"0123456789+-.eE \t\r\n,"
# An object's shape elements: such objects are the parser's (exact region overlap).
_SHAPES = (b"robndbox", b"polygon")
# Distinct layouts remembered per process, and the most tags a layout may have (writers'
# objects and headers have a few dozen): a set of hostile files cannot grow the memory
# they take further, and a giant first object is left to the parser.
_PLANS = 256
# Below this many bytes a file's control characters are counted, above it masked.
_SMALL_FILE = 4096
_PLAN_TAGS = 512


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
    counts: list[int]
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


def _flag(raw: bytes) -> bool | None:
    # The parser's rule: "" and "0" are False, "1" is True, other numbers != 0 are True.
    text = raw.strip(_SPACE)
    if text in (b"", b"0"):
        return False
    if text == b"1":
        return True
    return None  # anything else: let the parser decide


def _text(raw: bytes) -> str:
    """Element text as the parser reads it: XML turns CR LF and a lone CR into LF."""
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return raw.decode("utf-8")


@dataclass(frozen=True, slots=True)
class _Header:
    filename: str | None
    size: ImageSize | None


def _leaf_number(text: bytes) -> float | None:
    """The parser's reading of a number (the one grammar, finite), or None."""
    if text.isdigit():
        return float(text)  # ASCII digits only (bytes.isdigit): the common case
    value, _ = number_problem(_text(text))
    return value


def _size(width: bytes, height: bytes, depth: bytes | None) -> ImageSize | None:
    """The parser's ``<size>`` from its children's text, or None where it would differ."""
    w, h = _leaf_number(width), _leaf_number(height)
    if w is None or h is None:
        return None
    number: int | None = None
    if depth is not None and _text(depth).strip():
        value = _leaf_number(depth)
        if value is None:
            return None
        number = int(value)
    return ImageSize(width=w, height=h, depth=number)


Signature = tuple[tuple[bytes, bytes], ...]  # (b"/" or b"", name) per tag, in order


@dataclass(frozen=True, slots=True)
class _Element:
    """One element of a layout: where it opens and closes in the signature, and its parent."""

    name: bytes
    start: int
    end: int
    parent: int | None  # index into the element list


def _elements(signature: Signature) -> list[_Element] | None:
    """The elements of a run of tags, or None unless the run is well nested and closes
    every element it opens (the header leaves its root open: see :func:`_header_plan`)."""
    elements: list[_Element] = []
    starts: list[tuple[bytes, int, int | None]] = []
    stack: list[int] = []  # indices into starts
    for i, (closing, name) in enumerate(signature):
        if not closing:
            starts.append((name, i, stack[-1] if stack else None))
            stack.append(len(starts) - 1)
            continue
        if not stack or starts[stack[-1]][0] != name:
            return None
        stack.pop()
    if stack:
        return None
    ends: dict[int, int] = {}
    depth: list[int] = []
    for i, (closing, _) in enumerate(signature):
        if closing:
            ends[depth.pop()] = i
        else:
            depth.append(i)
    for name, start, parent in starts:
        elements.append(_Element(name, start, ends[start], parent))
    return elements


def _first_child(elements: list[_Element], parent: int, name: bytes) -> int | None:
    """The first child of ``elements[parent]`` called ``name`` (the parser's ``_child``)."""
    return next((i for i, e in enumerate(elements) if e.parent == parent and e.name == name), None)


def _is_leaf(element: _Element) -> bool:
    return element.end == element.start + 1


def _pattern(signature: Signature, captured: dict[int, int], attributes: bytes = b"") -> bytes:
    """A regular expression matching exactly this run of tags, text allowed between them,
    capturing the text of each leaf that starts at a key of ``captured`` (in tag order)."""
    parts: list[bytes] = []
    skip = False
    for i, (closing, name) in enumerate(signature):
        if skip:
            skip = False
            continue
        if i in captured:
            parts.append(b"<%s>%s</%s>" % (name, _VALUE, name))
            skip = True  # the leaf's end tag is part of the capture
        elif i == 0 and attributes:
            parts.append(b"<%s%s>" % (name, attributes))
        else:
            parts.append(b"<%s%s>" % (closing, name))
    return _TEXT.join(parts)


@dataclass(frozen=True, slots=True)
class _ObjectPlan:
    """How to read objects of one layout (one sequence of tags): a pattern matching one such
    object, capturing the values, and where each value is among the captures.

    Attributes:
        pattern: Matches one object of the layout, from ``<object>`` to ``</object>``.
        tags: Tags (so '<') in one object.
        name: Capture index of the first ``<name>`` child.
        coordinates: Capture indices of the first ``<bndbox>``'s first ``<xmin>``,
            ``<ymin>``, ``<xmax>`` and ``<ymax>``.
        truncated: Capture index of the first ``<truncated>`` child, None without one.
        difficult: The same for ``<difficult>``.
        occluded: The same for ``<occluded>``.
        pose: The same for ``<pose>``.
        score: The same for the first ``<score>`` child, else the first ``<confidence>``.
    """

    pattern: re.Pattern[bytes]
    tags: int
    name: int
    coordinates: tuple[int, int, int, int]
    truncated: int | None
    difficult: int | None
    occluded: int | None
    pose: int | None
    score: int | None


@functools.lru_cache(maxsize=_PLANS)
def _object_plan(signature: Signature) -> _ObjectPlan | None:
    """The plan for objects laid out as ``signature``, or None for any object the parser
    must read: a shape (``<robndbox>``, ``<polygon>``), a nested ``<object>``, a missing or
    non-leaf field. Children may come in any order and unknown ones (``<id>``,
    ``<attributes>`` with children of its own, ``<part>``) are skipped, as the parser
    skips them: it reads the first child of each name."""
    elements = _elements(signature)
    if not elements or elements[0].name != b"object" or elements[0].end != len(signature) - 1:
        return None
    if any(e.name == b"object" for e in elements[1:]):
        return None
    if any(e.parent == 0 and e.name in _SHAPES for e in elements):
        return None

    def leaf(parent: int, name: bytes) -> int | bool | None:
        # The child's element index; None if absent; False if it has children.
        index = _first_child(elements, parent, name)
        if index is None:
            return None
        return index if _is_leaf(elements[index]) else False

    name = leaf(0, b"name")
    bndbox = _first_child(elements, 0, b"bndbox")
    if not isinstance(name, int) or isinstance(name, bool) or bndbox is None:
        return None
    corners = [leaf(bndbox, tag) for tag in (b"xmin", b"ymin", b"xmax", b"ymax")]
    truncated = leaf(0, b"truncated")
    difficult = leaf(0, b"difficult")
    occluded = leaf(0, b"occluded")
    pose = leaf(0, b"pose")
    score = leaf(0, b"score")
    if score is None:
        score = leaf(0, b"confidence")
    fields = [name, *corners, truncated, difficult, occluded, pose, score]
    if any(f is False for f in fields) or any(c is None for c in corners):
        return None
    wanted = sorted(int(f) for f in fields if f is not None)
    captured = {elements[e].start: k for k, e in enumerate(wanted)}

    def capture(field: int | bool | None) -> int | None:
        return None if field is None else captured[elements[int(field)].start]

    x1, y1, x2, y2 = (capture(c) for c in corners)
    assert x1 is not None and y1 is not None and x2 is not None and y2 is not None
    return _ObjectPlan(
        pattern=re.compile(_pattern(signature, captured)),
        tags=len(signature),
        name=captured[elements[name].start],
        coordinates=(x1, y1, x2, y2),
        truncated=capture(truncated),
        difficult=capture(difficult),
        occluded=capture(occluded),
        pose=capture(pose),
        score=capture(score),
    )


@dataclass(frozen=True, slots=True)
class _HeaderPlan:
    """How to read a header of one layout (the tags before the first object).

    Attributes:
        pattern: Matches the whole header, from the root element to the first object.
        filename: Capture index of the root's first ``<filename>``, None without one.
        size: Capture indices of the first ``<size>``'s first ``<width>``, ``<height>`` and
            ``<depth>`` (None without one), or None without a ``<size>``.
    """

    pattern: re.Pattern[bytes]
    filename: int | None
    size: tuple[int, int, int | None] | None


@functools.lru_cache(maxsize=_PLANS)
def _header_plan(signature: tuple[tuple[bytes, bytes, bytes], ...]) -> _HeaderPlan | None:
    """The plan for a header laid out as ``signature``, or None unless it is a well-formed
    run of plain tags that opens ``<annotation>`` and leaves it open (so the parser reads it
    the same way: it takes the first ``<filename>``, the first ``<size>`` and, within it,
    the first ``<width>``, ``<height>`` and ``<depth>``)."""
    if not signature or signature[0][:2] != (b"", b"annotation"):
        return None
    if any(attributes for _, _, attributes in signature[1:]):
        return None  # LabelImg's verified="..." is allowed on the root only
    tags: Signature = tuple((closing, name) for closing, name, _ in signature)
    # Closed here, so that the root's children are complete elements.
    elements = _elements((*tags, (b"/", b"annotation")))
    if elements is None or elements[0].end != len(tags):
        return None

    def leaf(parent: int, name: bytes) -> int | bool | None:
        index = _first_child(elements, parent, name)
        if index is None:
            return None
        return index if _is_leaf(elements[index]) else False

    filename = leaf(0, b"filename")
    size = _first_child(elements, 0, b"size")
    children = [leaf(size, tag) for tag in (b"width", b"height", b"depth")] if size else []
    if filename is False or False in children:
        return None
    if size is not None and (children[0] is None or children[1] is None):
        return None  # the parser's error: <size> has no <width>
    wanted = sorted(int(f) for f in (filename, *children) if f is not None)
    captured = {elements[e].start: k for k, e in enumerate(wanted)}

    def capture(field: int | bool | None) -> int | None:
        return None if field is None else captured[elements[int(field)].start]

    size_captures = None
    if size is not None:
        width, height = capture(children[0]), capture(children[1])
        assert width is not None and height is not None
        size_captures = (width, height, capture(children[2]))
    pattern = _pattern(tags, captured, attributes=signature[0][2])
    return _HeaderPlan(
        pattern=re.compile(rb"[ \t\r\n]*" + pattern + _TEXT),
        filename=capture(filename),
        size=size_captures,
    )


@dataclass(slots=True)
class _Recent:
    """The plans the previous file used, tried first on the next one (per process)."""

    header: _HeaderPlan | None = None
    first_object: _ObjectPlan | None = None


_RECENT = _Recent()


def _header(data: bytes, start: int, stop: int) -> _Header | None:
    """Read ``<filename>`` and ``<size>`` from the part of a plain file before its first
    object, or None where the parser would read it differently or refuse it."""
    # A plan's pattern matches exactly its run of tags with text between them, so when the
    # previous file's plan matches this header, it is this header's plan (the files of a
    # folder mostly come from one writer).
    recent = _RECENT.header
    match = None if recent is None else recent.pattern.fullmatch(data, start, stop)
    if recent is not None and match is not None:
        plan = recent
    else:
        if data.count(b"<", start, stop) > _PLAN_TAGS:
            return None
        signature = tuple(_HEADER_TAG.findall(data, start, stop))
        if data.count(b"<", start, stop) != len(signature):
            return None  # markup other than plain tags
        found = _header_plan(signature)
        if found is None:
            return None
        match = found.pattern.fullmatch(data, start, stop)
        if match is None:
            return None  # text before the root element
        plan = _RECENT.header = found
    values = match.groups()
    filename = None if plan.filename is None else _text(values[plan.filename]).strip()
    size = None
    if plan.size is not None:
        w, h, d = plan.size
        size = _size(values[w], values[h], None if d is None else values[d])
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
    occluded: BoolArray
    scores: FloatArray
    poses: Sequence[bytes | None]  # <pose> text as written, None where absent


def _flags(raw: Sequence[bytes]) -> BoolArray | None:
    """``truncated`` or ``difficult`` texts as the parser reads them, or None for any other
    than the common ``0`` and ``1`` (and absent or empty, which are 0): the parser decides."""
    joined = b"".join(raw)
    if len(joined) == len(raw) and not joined.translate(None, b"01"):
        ones: BoolArray = np.frombuffer(joined, np.uint8) == ord("1")  # one byte each
        return ones
    values = [_flag(value) for value in raw]
    if None in values:
        return None
    return np.array(values, dtype=bool)


# Writers spell <occluded> as a number or, some of them, as a word (vocmatch.readers.parse).
_OCCLUDED_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def _occluded_flags(raw: Sequence[bytes]) -> BoolArray | None:
    """``occluded`` texts as the parser reads them: a flag, or true/false/yes/no in any
    case; None where the parser decides."""
    joined = b"".join(raw)
    if len(joined) == len(raw) and not joined.translate(None, b"01"):
        ones: BoolArray = np.frombuffer(joined, np.uint8) == ord("1")
        return ones
    values = []
    for text in raw:
        word = _OCCLUDED_WORDS.get(_text(text).strip().lower())
        value = word if word is not None else _flag(text)
        if value is None:
            return None
        values.append(value)
    return np.array(values, dtype=bool)


def _numbers(texts: Sequence[bytes]) -> FloatArray | None:
    """The values of number texts in the annotation grammar, or None if one is not in it.

    Every text in the grammar is made of digits, signs, points, exponent letters and XML
    whitespace; over those bytes ``float()`` accepts exactly the texts the grammar does
    (what else it takes -- underscores, other digits and spaces, ``inf``, ``nan`` -- needs
    other bytes), so one check of the bytes and ``float()`` decide. Texts of digits only,
    or of digits and a trailing ``.0`` (as datumaro writes integers), are integers, read
    several times faster in one call of the JSON decoder, whose integers convert to
    float64 exactly as ``float()`` rounds their text.
    """
    joined = b",".join(texts) + b","
    if joined.translate(None, _DECIMAL_BYTES) or joined.count(b",") != len(texts):
        # A byte no number of the grammar holds, or a comma inside a text ("1,5"), which
        # would otherwise read as two numbers: the parser's to refuse.
        return None
    integral = joined.replace(b".0,", b",") if b".0," in joined else joined
    if not integral.translate(None, b"0123456789,") and b",," not in b"," + integral:
        try:
            return np.array(json.loads(b"[" + integral[:-1] + b"]"), dtype=np.float64)
        except (ValueError, OverflowError):
            pass  # leading zeros ("007"), or an integer too large for float64
    try:
        return np.array(list(map(float, texts)), dtype=np.float64)
    except ValueError:
        return None


@dataclass(slots=True)
class _Fields:
    """The text of each object's fields, as written, before conversion: one column each."""

    names: Sequence[bytes]
    coordinates: tuple[Sequence[bytes], Sequence[bytes], Sequence[bytes], Sequence[bytes]]
    truncated: Sequence[bytes]  # b"0" where the element is absent
    difficult: Sequence[bytes]
    occluded: Sequence[bytes]
    scores: Sequence[bytes | None] | None  # None for an object without; None if none has
    poses: Sequence[bytes | None]  # None where the element is absent


def _first_object_plan(data: bytes, start: int) -> _ObjectPlan | None:
    """The plan of the object at ``start`` (the previous file's first plan when it matches
    the object: a plan's pattern matches exactly its own run of tags)."""
    plan = _RECENT.first_object
    if plan is not None and plan.pattern.match(data, start):
        return plan
    end = data.find(b"</object>", start)
    if end < 0 or data.count(b"<", start, end) >= _PLAN_TAGS:
        return None
    plan = _object_plan(tuple(_TAG.findall(data, start, end + len(b"</object>"))))
    if plan is not None:
        _RECENT.first_object = plan
    return plan


def _uniform_fields(data: bytes, first: int, last: int, tags: int) -> _Fields | None:
    """The fields when every object has the first one's layout (most writers write every
    object alike), else None. ``tags`` is the number of '<' from the first object to the
    end of the last one."""
    plan = _first_object_plan(data, first)
    if plan is None:
        return None
    matches = plan.pattern.findall(data, first, last)
    # Each match holds plan.tags '<': when they add up to every '<' between the first and
    # the last object, nothing else is there (text between objects is ignored, as by the
    # parser).
    if not matches or tags != len(matches) * plan.tags:
        return None
    columns = list(zip(*matches, strict=True))
    absent = (b"0",) * len(matches)
    x1, y1, x2, y2 = plan.coordinates
    return _Fields(
        names=columns[plan.name],
        coordinates=(columns[x1], columns[y1], columns[x2], columns[y2]),
        truncated=absent if plan.truncated is None else columns[plan.truncated],
        difficult=absent if plan.difficult is None else columns[plan.difficult],
        occluded=absent if plan.occluded is None else columns[plan.occluded],
        scores=None if plan.score is None else columns[plan.score],
        poses=(None,) * len(matches) if plan.pose is None else columns[plan.pose],
    )


def _mixed_fields(data: bytes, first: int, last: int) -> _Fields | None:
    """The fields when objects differ in layout (object by object, each by the plan of its
    own layout), or None where the parser must read the file."""
    names: list[bytes] = []
    coordinates: tuple[list[bytes], list[bytes], list[bytes], list[bytes]] = ([], [], [], [])
    truncated: list[bytes] = []
    difficult: list[bytes] = []
    occluded: list[bytes] = []
    scores: list[bytes | None] = []
    poses: list[bytes | None] = []
    plan: _ObjectPlan | None = None
    position = first
    while position < last:
        if not data.startswith(b"<object>", position):
            return None  # another element between objects
        match = None if plan is None else plan.pattern.match(data, position, last)
        if plan is None or match is None:
            plan = _first_object_plan(data, position)  # this object's own layout
            if plan is None:
                return None
            match = plan.pattern.match(data, position, last)
            if match is None:
                return None
        values = match.groups()
        names.append(values[plan.name])
        for column, index in zip(coordinates, plan.coordinates, strict=True):
            column.append(values[index])
        truncated.append(b"0" if plan.truncated is None else values[plan.truncated])
        difficult.append(b"0" if plan.difficult is None else values[plan.difficult])
        occluded.append(b"0" if plan.occluded is None else values[plan.occluded])
        scores.append(None if plan.score is None else values[plan.score])
        poses.append(None if plan.pose is None else values[plan.pose])
        following = data.find(b"<", match.end(), last)
        position = last if following < 0 else following
    return _Fields(
        names=names,
        coordinates=coordinates,
        truncated=truncated,
        difficult=difficult,
        occluded=occluded,
        scores=None if all(s is None for s in scores) else scores,
        poses=poses,
    )


def active_reader() -> str:
    """Which fast reader reads files in this process: ``"compiled"`` (the C extension) or
    ``"pure"`` (the extension is not built, or ``VOCMATCH_PURE_READER=1``)."""
    if _compiled is None or os.environ.get(PURE_READER_VARIABLE, "") not in ("", "0"):
        return "pure"
    return "compiled"


def _fast(data: bytes, names_seen: Container[bytes] = ()) -> _Objects | None:
    """Extract a plain file's objects, or None to leave the file to the parser.

    ``names_seen`` holds names (as written) already known to be usable. The compiled
    reader and the pure-Python one give the same objects; each may leave a file to the
    parser that the other reads.
    """
    if _compiled is not None and active_reader() == "compiled":
        return _fast_compiled(data, names_seen)
    return _fast_pure(data, names_seen)


def _fast_compiled(data: bytes, names_seen: Container[bytes]) -> _Objects | None:
    """:func:`_fast` by the compiled reader (``_fastxml.c``): it proves the file plain and
    reads its columns; the header's values and new names are read here as by the pure one."""
    assert _compiled is not None
    read = _compiled.scan(data, MAX_COORDINATE)
    if read is None:
        return None
    filename, size_texts, names, coordinates, scores, difficult, truncated, occluded, poses = read
    size = None
    if size_texts is not None:
        size = _size(*size_texts)
        if size is None:
            return None
    new_names = {raw: _text(raw).strip() for raw in set(names) if raw not in names_seen}
    if not all(new_names.values()):
        return None  # an empty name: the parser's to refuse
    return _Objects(
        _Header(None if filename is None else _text(filename).strip(), size),
        np.frombuffer(coordinates, np.float64).reshape(-1, 4),
        names,
        new_names,
        np.frombuffer(difficult, np.bool_),
        np.frombuffer(truncated, np.bool_),
        np.frombuffer(occluded, np.bool_),
        np.frombuffer(scores, np.float64),
        poses,
    )


def _fast_pure(data: bytes, names_seen: Container[bytes] = ()) -> _Objects | None:
    """:func:`_fast` by the pure-Python reader."""
    if b"&" in data or (b"]" in data and b"]]>" in data):
        return None
    octets = np.frombuffer(data, np.uint8)
    # Bytes below space other than tab, LF and CR are control characters, not allowed in
    # XML 1.0. A small file counts tab, LF and CR with bytes.count; a large one masks them
    # with numpy (each faster at its size).
    below_space = octets < 0x20
    if len(data) < _SMALL_FILE:
        allowed = data.count(b"\n") + data.count(b"\t") + data.count(b"\r")
        if int(np.count_nonzero(below_space)) != allowed:
            return None
    elif (below_space & (octets != 9) & (octets != 10) & (octets != 13)).any():
        return None
    ascii_only = data.isascii()  # then valid UTF-8 holding no non-character
    if not ascii_only and b"\xef\xbf" in data and any(c in data for c in _NON_CHARACTERS):
        return None
    declaration = _DECLARATION.match(data)
    start = 0 if declaration is None else declaration.end()
    if not ascii_only:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    first = data.find(b"<object>")
    if first < 0:
        return None  # nothing to gain: the parser reads object-less files as fast
    last = data.rfind(b"</object>") + len(b"</object>")
    if not _TRAILER.match(data, last):
        return None
    # Counted by numpy: several times faster than bytes.count on a file of this size.
    tags = int(np.count_nonzero(octets[first:last] == ord("<")))
    fields = _uniform_fields(data, first, last, tags) or _mixed_fields(data, first, last)
    if fields is None:
        return None
    header = _header(data, start, first)
    if header is None:
        return None
    n = len(fields.names)
    coordinates = _numbers(list(itertools.chain(*fields.coordinates)))
    if coordinates is None:
        return None
    coordinates = coordinates.reshape(4, n).T
    if fields.scores is None:
        scores = np.full(n, math.nan)
    else:
        written = [v for v in fields.scores if v is not None]
        values = _numbers(written)
        if values is None:
            return None
        if len(written) == n:
            scores = values
        else:  # NaN where an object has no score element
            scores = np.full(n, math.nan)
            scores[[v is not None for v in fields.scores]] = values
        if not np.isfinite(values).all():
            return None  # a score too large for a float: the parser's to refuse
    # Within range (so finite: NaN fails every comparison), and xmax >= xmin, ymax >= ymin.
    if not (np.abs(coordinates) <= MAX_COORDINATE).all():
        return None
    if not (coordinates[:, 2:] >= coordinates[:, :2]).all():
        return None
    # Names stay raw here: decoded once per distinct name, per chunk.
    new_names = {raw: _text(raw).strip() for raw in set(fields.names) if raw not in names_seen}
    if not all(new_names.values()):
        return None  # an empty name: the parser's to refuse
    difficult = _flags(fields.difficult)
    truncated = _flags(fields.truncated)
    occluded = _occluded_flags(fields.occluded)
    if difficult is None or truncated is None or occluded is None:
        return None
    return _Objects(
        header,
        coordinates,
        fields.names,
        new_names,
        difficult,
        truncated,
        occluded,
        scores,
        fields.poses,
    )


def _new_chunk() -> _Chunk:
    return _Chunk([], [], [], [], [], array("i"), {}, {}, [], [], [], [], [])


def _read_chunk(
    files: Sequence[tuple[str, str]],
    max_bytes: int,
    read: Callable[[str, int], bytes] = read_bytes,
) -> _Chunk:
    chunk = _new_chunk()
    # The reader is chosen once a chunk (the choice reads the environment).
    scan_file = _fast_compiled if active_reader() == "compiled" else _fast_pure
    for key, path in files:
        try:
            # The parser's own reading: regular files only, size checked first.
            data = read(path, max_bytes)
            fast = scan_file(data, chunk.raw_codes)
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
        chunk.occluded.append(fast.occluded)
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
        text = "" if raw is None else _text(raw).strip()
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
    bndboxes: list[tuple[int, tuple[float, float, float, float]]] = []
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
            pose[offset:stop] = pose_remap[np.frombuffer(c.pose_codes, np.intc) + 1]
            scores[offset:stop] = np.concatenate(c.scores)
            remap = np.zeros(len(c.vocabulary), dtype=np.int32)
            for name, code in c.vocabulary.items():
                remap[code] = index[name]
            labels[offset:stop] = remap[np.frombuffer(c.codes, np.intc)]
        shapes.extend((offset + row, shape) for row, shape in c.shapes)
        bndboxes.extend((offset + row, given) for row, given in c.bndboxes)
        c.boxes, c.difficult, c.truncated, c.scores, c.codes = [], [], [], [], array("i")
        c.occluded, c.pose_codes = [], array("i")
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
        bndboxes=tuple(bndboxes),
    )


def _read_sets(
    roots: Sequence[str | os.PathLike[str]],
    jobs: int,
    max_bytes: int,
    progress: Callable[[int, int], None] | None,
) -> list[ColumnSet]:
    """Read several directories with one pool of workers (started once)."""
    return read_listings([list_directory(root) for root in roots], jobs, max_bytes, progress)


def read_listings(
    listings: Sequence[DirectoryListing],
    jobs: int = 1,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> list[ColumnSet]:
    """Read the files of listings (:func:`~vocmatch.readers.parse.list_directory`'s, or
    part of them: :mod:`vocmatch.readers.shards`) with one pool of workers, one column set
    per listing, as :func:`read_columns` reads a directory.

    Args:
        listings: The files to read and those left out, one listing per column set.
        jobs: Worker processes (capped at the cores and the files; 0: every core).
        max_bytes: Per-file size limit.
        progress: Called as ``progress(files_read, files_total)`` over every listing.

    Returns:
        The column sets, in the order of ``listings``.
    """
    total = sum(len(listing.files) for listing in listings)
    # Chunks small enough to report progress and balance the workers, large enough that
    # sending them costs little.
    size = max(16, min(512, total // (worker_count(jobs, total) * 8) or 16))
    parts = [
        (which, listing.files[i : i + size])
        for which, listing in enumerate(listings)
        for i in range(0, len(listing.files), size)
    ]
    chunks: list[list[_Chunk]] = [[] for _ in listings]
    done = 0
    # A few files are read faster here than by starting processes.
    workers = 1 if total < 64 else jobs
    tasks = [(part, max_bytes) for _, part in parts]
    with worker_results(_read_chunk, tasks, workers) as results:
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
        jobs: Worker processes (capped at the cores and the files; 0: every core); 1
            reads in this process.
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
        jobs: Worker processes (capped at the cores and the files; 0: every core).
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

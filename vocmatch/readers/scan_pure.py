"""The pure-Python fast reader, used where the compiled one (``fastxml.c``) is not built or
with ``VOCMATCH_PURE_READER=1``: the objects of a plain file, read with one regular
expression over its bytes, the fields converted in bulk (:mod:`vocmatch.readers.scan`
describes the subset of files both fast readers take).

It does not depend on the writer's layout. The first object's tags (their names and
nesting, not their text) are its layout; a plan made once per layout and process says where
the parser would find each field (the first ``<name>`` child, the first ``<bndbox>``'s
corners, the first ``<score>`` or else ``<confidence>``, in any order, among any other
children, nested ones included) and compiles a pattern matching exactly that sequence of
tags. Most writers lay out every object alike, so one ``findall`` reads the file; when
objects differ, each is read by the plan of its own layout. The header is read the same way.
Every number is proved to be in the one grammar in bulk (:func:`_numbers`).

Kept apart from :mod:`vocmatch.readers.scan` so that a run with the compiled reader does not
build its plans' records and patterns when it starts.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np

from vocmatch.readers.parse import MAX_COORDINATE
from vocmatch.readers.scan import (
    BoolArray,
    FileHeader,
    FloatArray,
    PlainObjects,
    decoded_text,
    size_from_text,
)

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


def _flag(raw: bytes) -> bool | None:
    # The parser's rule: "" and "0" are False, "1" is True, other numbers != 0 are True.
    text = raw.strip(_SPACE)
    if text in (b"", b"0"):
        return False
    if text == b"1":
        return True
    return None  # anything else: let the parser decide


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


def _header(data: bytes, start: int, stop: int) -> FileHeader | None:
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
    filename = None if plan.filename is None else decoded_text(values[plan.filename]).strip()
    size = None
    if plan.size is not None:
        w, h, d = plan.size
        size = size_from_text(values[w], values[h], None if d is None else values[d])
        if size is None:
            return None
    return FileHeader(filename, size)


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
        word = _OCCLUDED_WORDS.get(decoded_text(text).strip().lower())
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


def fast_pure(data: bytes, names_seen: Container[bytes] = ()) -> PlainObjects | None:
    """A plain file's objects read by the pure-Python reader, or None to leave the file to
    the parser (:func:`vocmatch.readers.scan._fast`)."""
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
    new_names = {
        raw: decoded_text(raw).strip() for raw in set(fields.names) if raw not in names_seen
    }
    if not all(new_names.values()):
        return None  # an empty name: the parser's to refuse
    difficult = _flags(fields.difficult)
    truncated = _flags(fields.truncated)
    occluded = _occluded_flags(fields.occluded)
    if difficult is None or truncated is None or occluded is None:
        return None
    return PlainObjects(
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

"""Read PASCAL VOC / LabelImg XML annotation files into :mod:`vocmatch.core.model` records.

This is the only module that knows lxml. Everything it reads is treated as untrusted:

* entities are never expanded and a document declaring one is refused, no DTD is loaded,
  nothing is fetched from the network, and libxml2's limits stay on (elements nested at
  most 256 deep, text nodes of at most 10 MB);
* a file larger than ``max_bytes`` is refused from its size, before a byte is read, and
  at most ``max_bytes + 1`` bytes are ever read from any file;
* only regular files are opened for reading: a named pipe, socket or device called
  ``*.xml`` is refused without blocking;
* the directory walk follows symbolic links but enters each directory once, so a link loop
  cannot hang it;
* every problem becomes a :class:`~vocmatch.errors.AnnotationError` naming the file and,
  when known, the line, and a directory read goes on past it.

An ``<object>`` is an axis-aligned ``<bndbox>`` (LabelImg), a rotated ``<robndbox>``
(roLabelImg: ``<cx> <cy> <w> <h> <angle>``, the angle in radians, see
:class:`~vocmatch.core.model.RotatedBox`) or a ``<polygon>`` whose points are either ``<pt><x>
<y></pt>`` children (LabelMe, CVAT) or ``<x1> <y1> <x2> <y2> ...`` children paired by their
number; points keep the order of the document. A rotated box's ``<w>`` and ``<h>`` may be 0,
as a ``<bndbox>`` may be flat, but not negative. An object with a shape and a ``<bndbox>`` is
read as the shape, the more precise annotation, and its ``<bndbox>`` is not read.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

from vocmatch.checks import checked_max_bytes
from vocmatch.core.model import (
    MAX_COORDINATE,
    Box,
    ImageAnnotation,
    ImageSize,
    Point,
    Polygon,
    RotatedBox,
    SkippedFile,
    coordinate_problem,
    corner_problem,
)
from vocmatch.core.numbers import NUMBER_PATTERN, XML_SPACE, number_problem, read_number
from vocmatch.errors import AnnotationError, InputError
from vocmatch.limits import DEFAULT_MAX_BYTES
from vocmatch.readers.folders import TakenStats, folder_entries
from vocmatch.readers.key_order import distinct_folded
from vocmatch.readers.regular_files import NUL_IN_PATH, read_bytes, system_reason

if TYPE_CHECKING:
    from lxml import etree

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_COORDINATE",
    "NUMBER_PATTERN",
    "XML_SPACE",
    "AnnotationSet",
    "DirectoryListing",
    "children_named",
    "element_text",
    "find_annotation_files",
    "first_child",
    "list_directory",
    "local_name",
    "number_problem",
    "parse_annotation",
    "parse_document",
    "raw_text",
    "read_annotation",
    "read_directory",
    "read_number",
    "read_shape",
    "refuse_dtd",
    "source_line",
    "walk_directory",
]


_COORDINATES = ("xmin", "ymin", "xmax", "ymax")
_CORNER_NAMES = ("<xmin>", "<ymin>", "<xmax>", "<ymax>")
_ROTATED = ("cx", "cy", "w", "h")
# The patterns below are compiled on first use: the compiled reader reads plain files
# without the parser, and a run of such files needs none of them.


@functools.cache
def _numbered() -> re.Pattern[str]:
    """``<x1> <y1> <x2> <y2> ...``: a polygon's coordinates numbered by point."""
    return re.compile(r"([xy])([0-9]+)")


@functools.cache
def _libxml2_extras() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """What libxml2 appends to its messages: the position (already given as path:line) and
    advice meant for programmers (XML_PARSE_HUGE, xmlCtxtSetMaxAmplification); and the
    depth it refused."""
    return (
        re.compile(r",? line \d+, column \d+$"),
        re.compile(
            r",? (use XML_PARSE_HUGE option|try XML_PARSE_HUGE)"
            r"|,? see xmlCtxtSetMaxAmplification\.?"
        ),
        re.compile(r"Excessive depth in document: (\d+)"),
    )


# What a file that is not XML at all most likely is, from its first bytes.
_SIGNATURES = (
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"{", "JSON"),
    (b"[", "JSON"),
)


def _xml_parser() -> etree.XMLParser:
    # lxml is imported here, when a file first needs it: the compiled reader reads the
    # usual files without it.
    from lxml import etree

    # resolve_entities=False: an entity reference stays a reference, so neither an
    # expansion bomb nor an external entity can do anything. load_dtd/no_network: no DTD
    # is read from disk or the network. huge_tree=False keeps libxml2's depth and size
    # limits on.
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


@functools.cache
def _declared_encoding() -> re.Pattern[bytes]:
    """The encoding named by an XML declaration at the very start of the file
    (ASCII-compatible)."""
    return re.compile(
        rb"\A(<\?xml[ \t\r\n][^>]*?encoding[ \t\r\n]*=[ \t\r\n]*([\"']))([A-Za-z][\w.-]*)\2"
    )


def _as_utf8(data: bytes) -> bytes | None:
    """The document transcoded to UTF-8 and declared so, when its declaration names an
    encoding libxml2 does not know by that name but Python does (``latin-1``, as Python's
    ElementTree writes ``encoding="latin-1"``); None otherwise. Lines stay where they were."""
    declared = _declared_encoding().match(data)
    if declared is None:
        return None
    start, stop = declared.span(3)
    try:
        text = data.decode(declared.group(3).decode("ascii"))
        return (text[:start] + "UTF-8" + text[stop:]).encode("utf-8")
    except (LookupError, UnicodeError):
        return None


def parse_document(data: bytes) -> etree._Element | None:
    """The root element of ``data``, parsed with the safe settings of :func:`_xml_parser`.

    Raises:
        etree.LxmlError: The document is not well-formed or goes over a limit.
    """
    from lxml import etree

    try:
        return etree.fromstring(data, _xml_parser())
    except etree.XMLSyntaxError as error:
        transcoded = _as_utf8(data) if "Unsupported encoding" in str(error) else None
        if transcoded is None:
            raise
    return etree.fromstring(transcoded, _xml_parser())


@dataclass(frozen=True, slots=True)
class AnnotationSet:
    """The annotation files read from one directory.

    Attributes:
        root: The directory that was read.
        annotations: One record per readable file, sorted by key.
        skipped: The files that could not be read, with the reason, sorted by path.
        notes: Remarks on the walk that lost no file (a link to a directory already read).

    Example:
        >>> from vocmatch.core.model import Box, ImageAnnotation
        >>> image = ImageAnnotation("a", "gt/a.xml", (Box("dog", 0, 0, 8, 6),))
        >>> AnnotationSet("gt", (image,), ()).annotations[0].boxes[0].name
        'dog'
    """

    root: str
    annotations: tuple[ImageAnnotation, ...]
    skipped: tuple[SkippedFile, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DirectoryListing:
    """The annotation files below a directory, before any is read.

    Attributes:
        root: The directory that was listed.
        files: ``(key, path)`` pairs sorted by key, one per key: the files to read.
        skipped: Files left out before reading (a key taken by another file, also when
            case is ignored) and directories that could not be listed, sorted by path.
        notes: Remarks that lose no file (a link to a directory already walked).
    """

    root: str
    files: tuple[tuple[str, str], ...]
    skipped: tuple[SkippedFile, ...]
    notes: tuple[str, ...] = ()


@dataclass(slots=True)
class _Walk:
    """What a directory walk found (internal)."""

    files: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def local_name(tag: object) -> str:
    """A tag without its namespace (``{uri}name`` is ``name``)."""
    text = str(tag)
    return text.rsplit("}", 1)[-1] if text.startswith("{") else text


def first_child(element: etree._Element, name: str) -> etree._Element | None:
    """The first child element named ``name`` (in any namespace or none), or None."""
    for child in element:
        if isinstance(child.tag, str) and local_name(child.tag) == name:
            return child
    return None


def children_named(element: etree._Element, name: str) -> list[etree._Element]:
    """Every child element named ``name`` (in any namespace or none), in file order."""
    return [c for c in element if isinstance(c.tag, str) and local_name(c.tag) == name]


def element_text(element: etree._Element) -> str:
    """The element's text with surrounding whitespace stripped, joined across comments and
    processing instructions inside it."""
    if len(element) == 0:
        return (element.text or "").strip()  # a leaf: the common case, read directly
    # itertext joins text split by comments or processing instructions (children here).
    return "".join(str(part) for part in element.itertext()).strip()


def source_line(element: etree._Element) -> int | None:
    """The element's line in its file, or None where lxml does not know it."""
    line = element.sourceline
    return line if isinstance(line, int) else None


def raw_text(element: etree._Element) -> str:
    """The element's text as written, surrounding whitespace kept (a number's grammar
    decides which whitespace may surround it)."""
    if len(element) == 0:
        return element.text or ""
    return "".join(str(part) for part in element.itertext())


def _number(parent: etree._Element, name: str, path: str) -> float:
    element = first_child(parent, name)
    if element is None:
        raise AnnotationError(
            path, f"<{local_name(parent.tag)}> has no <{name}>", source_line(parent)
        )
    text = raw_text(element)
    value, problem = number_problem(text)
    if value is None:
        shown = text.strip(XML_SPACE)
        raise AnnotationError(path, f"<{name}> {problem}: {shown!r}", source_line(element))
    return value


def _coordinate(bndbox: etree._Element, name: str, path: str) -> float:
    value = _number(bndbox, name, path)
    problem = coordinate_problem(value)
    if problem is not None:
        element = first_child(bndbox, name)
        line = source_line(element) if element is not None else None
        raise AnnotationError(path, f"<{name}> {value:g} {problem}", line)
    return value


def _flag(parent: etree._Element, name: str, path: str) -> bool:
    element = first_child(parent, name)
    if element is None:
        return False
    text = element_text(element)
    if text in ("", "0"):
        return False
    if text == "1":
        return True
    # Another finite number in the one grammar (0.0, 2) is read as true unless zero.
    value, _ = number_problem(raw_text(element))
    if value is None:
        raise AnnotationError(path, f"<{name}> must be 0 or 1, got {text!r}", source_line(element))
    return value != 0.0


# Writers spell <occluded> as a number or, some of them, as a word.
_OCCLUDED_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def _occluded(obj: etree._Element, path: str) -> bool:
    """``<occluded>``: a flag as ``<truncated>`` is, or ``true``/``false``/``yes``/``no``."""
    element = first_child(obj, "occluded")
    if element is None:
        return False
    word = _OCCLUDED_WORDS.get(element_text(element).lower())
    return word if word is not None else _flag(obj, "occluded", path)


def _pose(obj: etree._Element) -> str | None:
    element = first_child(obj, "pose")
    if element is None:
        return None
    return element_text(element) or None


def _score(obj: etree._Element, path: str) -> float | None:
    for name in ("score", "confidence"):
        if first_child(obj, name) is not None:
            return _number(obj, name, path)
    return None


def _rotated(element: etree._Element, path: str) -> RotatedBox:
    cx, cy, w, h = (_coordinate(element, tag, path) for tag in _ROTATED)
    for tag, value in (("w", w), ("h", h)):
        if value < 0:
            child = first_child(element, tag)
            line = source_line(child) if child is not None else source_line(element)
            raise AnnotationError(path, f"<{tag}> {value:g} is negative", line)
    return RotatedBox(cx, cy, w, h, _number(element, "angle", path))


def _numbered_points(element: etree._Element, path: str) -> list[Point]:
    """``<x1> <y1> <x2> <y2> ...``: each ``<xN>`` paired with ``<yN>``, in document order."""
    found: dict[str, dict[int, etree._Element]] = {"x": {}, "y": {}}
    order: list[int] = []
    for child in element:
        if not isinstance(child.tag, str):
            continue
        numbered = _numbered().fullmatch(local_name(child.tag))
        if numbered is None:
            continue
        axis, number = numbered.group(1), int(numbered.group(2))
        if number in found[axis]:
            raise AnnotationError(
                path, f"<polygon> has a second <{local_name(child.tag)}>", source_line(child)
            )
        found[axis][number] = child
        if number not in found["y" if axis == "x" else "x"]:
            order.append(number)
    for number in order:
        for axis, other in (("x", "y"), ("y", "x")):
            if number in found[axis] and number not in found[other]:
                raise AnnotationError(
                    path,
                    f"<polygon> has <{axis}{number}> but no <{other}{number}>",
                    source_line(found[axis][number]),
                )
    return [
        (
            _coordinate(element, local_name(found["x"][n].tag), path),
            _coordinate(element, local_name(found["y"][n].tag), path),
        )
        for n in order
    ]


def _polygon(element: etree._Element, path: str) -> Polygon:
    pts = children_named(element, "pt")
    if pts:
        numbered_xy = _numbered()
        if any(
            isinstance(c.tag, str) and numbered_xy.fullmatch(local_name(c.tag)) for c in element
        ):
            raise AnnotationError(
                path,
                "<polygon> mixes <pt> points with numbered <x1> <y1> ...",
                source_line(element),
            )
        points = [(_coordinate(pt, "x", path), _coordinate(pt, "y", path)) for pt in pts]
    else:
        points = _numbered_points(element, path)
    # Imported here: the geometry needs numpy, which listing a folder does not (a run
    # lists its folders and starts reading them before numpy is imported).
    from vocmatch.core.geometry import polygon_problem

    problem = polygon_problem(points)
    if problem is not None:
        raise AnnotationError(path, f"<polygon> {problem}", source_line(element))
    return Polygon(tuple(points))


def read_shape(obj: etree._Element, name: str, path: str) -> Polygon | RotatedBox | None:
    """The object's ``<robndbox>`` or ``<polygon>``, or None when it has neither.

    Raises:
        AnnotationError: It has both, or its shape cannot be read.
    """
    # One search in lxml ("{*}": any namespace or none, as first_child does) keeps the common
    # case, an object without a shape, nearly as fast as before.
    if next(obj.iterchildren("{*}robndbox", "{*}polygon"), None) is None:
        return None
    rotated = first_child(obj, "robndbox")
    polygon = first_child(obj, "polygon")
    if rotated is not None and polygon is not None:
        raise AnnotationError(
            path, f"<object> {name!r} has both <robndbox> and <polygon>; keep one", source_line(obj)
        )
    if rotated is not None:
        return _rotated(rotated, path)
    if polygon is not None:
        return _polygon(polygon, path)
    return None


def _box(obj: etree._Element, path: str) -> Box:
    name_element = first_child(obj, "name")
    if name_element is None:
        raise AnnotationError(path, "<object> has no <name>", source_line(obj))
    name = element_text(name_element)
    if not name:
        raise AnnotationError(path, "<name> is empty", source_line(name_element))
    shape = read_shape(obj, name, path)
    given: tuple[float, float, float, float] | None = None
    if shape is not None:
        # The shape is the annotation; its bounding box stands in for <bndbox>. A <bndbox>
        # beside it is kept for --geometry box, when it reads as one (it is never required).
        x1, y1, x2, y2 = shape.bounds
        given = _given_bndbox(obj, path)
    else:
        bndbox = first_child(obj, "bndbox")
        if bndbox is None:
            raise AnnotationError(
                path,
                f"<object> {name!r} has no <bndbox>, <robndbox> or <polygon>",
                source_line(obj),
            )
        x1, y1, x2, y2 = (_coordinate(bndbox, tag, path) for tag in _COORDINATES)
        problem = corner_problem(x1, y1, x2, y2, _CORNER_NAMES)
        if problem is not None:
            raise AnnotationError(path, problem, source_line(bndbox))
    return Box(
        name=name,
        x1=x1,
        y1=y1,
        x2=x2,
        y2=y2,
        difficult=_flag(obj, "difficult", path),
        truncated=_flag(obj, "truncated", path),
        score=_score(obj, path),
        line=source_line(obj),
        shape=shape,
        occluded=_occluded(obj, path),
        pose=_pose(obj),
        bndbox=given,
    )


def _given_bndbox(obj: etree._Element, path: str) -> tuple[float, float, float, float] | None:
    """The ``<bndbox>`` of an object that has a shape, or None when it has none or one that
    does not read as a box (the shape is the annotation; the box is optional there)."""
    bndbox = first_child(obj, "bndbox")
    if bndbox is None:
        return None
    try:
        x1, y1, x2, y2 = (_coordinate(bndbox, tag, path) for tag in _COORDINATES)
    except AnnotationError:
        return None
    if corner_problem(x1, y1, x2, y2, _CORNER_NAMES) is not None:
        return None
    return (x1, y1, x2, y2)


def _size(root: etree._Element, path: str) -> ImageSize | None:
    element = first_child(root, "size")
    if element is None:
        return None
    depth_element = first_child(element, "depth")
    depth: int | None = None
    if depth_element is not None and element_text(depth_element):
        depth = int(_number(element, "depth", path))
    return ImageSize(
        width=_number(element, "width", path),
        height=_number(element, "height", path),
        depth=depth,
    )


_ENTITIES = "refusing a document that declares entities"


def refuse_dtd(tree: etree._ElementTree, path: str) -> None:
    """Refuse a document that references an external DTD or declares entities.

    Raises:
        AnnotationError: It does (at line 1 of ``path``).
    """
    docinfo = tree.docinfo
    if getattr(docinfo, "system_url", None) or docinfo.public_id:
        raise AnnotationError(path, "refusing a document that references an external DTD", 1)
    dtd = docinfo.internalDTD
    if dtd is not None and any(True for _ in getattr(dtd, "entities", tuple)()):
        raise AnnotationError(path, _ENTITIES, 1)


def _syntax_error(error: etree.LxmlError, path: str, data: bytes = b"") -> AnnotationError:
    """libxml2's complaint as an AnnotationError: its first line, position and advice cut.

    A document over one of libxml2's limits is well-formed but refused, and says so; a
    file that starts like an image, an archive or JSON says what it looks like.
    """
    position = getattr(error, "position", None)
    line = int(position[0]) if position and position[0] else None
    raw = str(getattr(error, "msg", None) or error).splitlines()
    position_text, advice, refused_depth = _libxml2_extras()
    text = advice.sub("", position_text.sub("", raw[0] if raw else "").strip()).strip()
    depth = refused_depth.search(text)
    if depth:
        return AnnotationError(
            path, f"refusing a document nested deeper than {depth.group(1)} elements", line
        )
    if "amplification" in text:
        return AnnotationError(path, _ENTITIES, line)
    if text.startswith("Resource limit exceeded"):
        detail = text.split(":", 1)[-1].strip()
        return AnnotationError(
            path, f"refusing a document over the parser's limits: {detail}", line
        )
    looks = next((kind for magic, kind in _SIGNATURES if data.startswith(magic)), None)
    if looks is not None:
        text += f" (the file looks like {looks})"
    return AnnotationError(path, f"not well-formed XML: {text}", line)


def parse_annotation(data: bytes, path: str, key: str) -> ImageAnnotation:
    """Parse the bytes of one annotation file.

    Args:
        data: The file's content.
        path: The file's path, used in error messages only.
        key: The pairing key to store in the record.

    Returns:
        The file's objects in file order: only direct ``<object>`` children of
        ``<annotation>`` count (an ``<object>`` inside a ``<part>`` does not).

    Raises:
        AnnotationError: The bytes are not well-formed XML, go over one of the parser's
            limits, declare entities or an external DTD, the root is not ``<annotation>``,
            or an object lacks a tag or holds a value that is not allowed.
    """
    from lxml import etree

    try:
        root = parse_document(data)
    except etree.LxmlError as error:
        raise _syntax_error(error, path, data) from None
    if root is None:
        raise AnnotationError(path, "empty document", 1)
    refuse_dtd(root.getroottree(), path)
    if local_name(root.tag) != "annotation":
        raise AnnotationError(
            path,
            f"root element is <{local_name(root.tag)}>, expected <annotation>",
            source_line(root),
        )
    filename_element = first_child(root, "filename")
    return ImageAnnotation(
        key=key,
        path=path,
        boxes=tuple(_box(obj, path) for obj in children_named(root, "object")),
        size=_size(root, path),
        filename=element_text(filename_element) if filename_element is not None else None,
    )


def read_annotation(
    path: str | os.PathLike[str],
    key: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ImageAnnotation:
    """Read one annotation file.

    Args:
        path: The XML file.
        key: The pairing key; defaults to the file name without extension.
        max_bytes: Files larger than this are refused without being read.

    Returns:
        The file's objects in file order.

    Raises:
        AnnotationError: The file cannot be read, is not a regular file, is too large, or
            is not a valid annotation.
    """
    name = os.fspath(path)
    data = read_bytes(name, max_bytes)
    return parse_annotation(data, name, key if key is not None else Path(name).stem)


def _walk(top: str, suffix: str = ".xml", stats: TakenStats | None = None) -> _Walk:
    """Every file below ``top`` whose name ends in ``suffix`` (in any case), the
    directories that could not be listed, and the links that were not entered.

    The walk keeps its own stack, so a tree thousands of folders deep is no deeper for
    Python; a folder whose path is too long for the system is skipped with its reason.

    Real directories are walked before any symbolic link is followed, so a file reached
    both ways keeps the key of its real path; a link to a directory already walked (a loop,
    or a second link to the same place) is noted and not entered, which bounds the walk.
    """
    walk = _Walk()
    visited: dict[tuple[int, int], str] = {}
    # Stacks of (directory, key prefix), popped in sorted order.
    real: list[tuple[str, str]] = [(top, "")]
    linked: list[tuple[str, str]] = []
    files: list[tuple[str, str]] = []
    while real or linked:
        directory, prefix = real.pop() if real else linked.pop()
        try:
            status = os.stat(directory)
            identity = (status.st_dev, status.st_ino)
            if identity in visited:
                walk.notes.append(
                    f"{directory}: link to a directory already read as {visited[identity]};"
                    " not entered again"
                )
                continue
            visited[identity] = directory
            entries = folder_entries(directory, prefix, suffix, stats)
        except OSError as error:
            walk.skipped.append(
                SkippedFile(directory, f"cannot read directory: {system_reason(error)}")
            )
            continue
        files.extend(entries.files)
        # A folder's folders in order of their names: of their paths, which add the same
        # folder and separator before each name.
        real.extend(sorted(entries.real_dirs, reverse=True))
        linked.extend(sorted(entries.linked_dirs, reverse=True))
    # By key, then path (a key of two files: a.xml and a.XML); the compiled listing gives
    # each folder's files in this order already, which the sort then only checks.
    files.sort()
    walk.files = files
    return walk


def _directory(root: str | os.PathLike[str]) -> str:
    top = os.fspath(root)
    try:
        status = os.stat(top)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(f"{top}: not a directory") from None
    except OSError as error:
        # A path too long for the system, a link loop, no permission: the system's words.
        raise InputError(f"{top}: cannot read directory: {system_reason(error)}") from None
    except ValueError:  # a path no system call can take
        raise InputError(f"{top}: cannot read directory: {NUL_IN_PATH}") from None
    if not stat.S_ISDIR(status.st_mode):
        raise InputError(f"{top}: not a directory")
    return top


def walk_directory(root: str | os.PathLike[str], suffix: str = ".xml") -> DirectoryListing:
    """Every file below a directory whose name ends in ``suffix``, one per path (no
    pairing by key: for ``lint``), and the folders that could not be read.

    Args:
        root: The directory to search, recursively, links followed, each folder once.
        suffix: The lower-case suffix of the files to list.

    Returns:
        ``files`` as ``(key, path)`` pairs sorted by key; ``skipped`` the folders that could
        not be listed (too deep for the system, no permission), with the system's reason.

    Raises:
        InputError: ``root`` is not a directory.
    """
    top = _directory(root)
    walk = _walk(top, suffix)
    return DirectoryListing(
        root=top,
        files=tuple(walk.files),
        skipped=tuple(sorted(walk.skipped, key=lambda s: s.path)),
        notes=tuple(walk.notes),
    )


def find_annotation_files(
    root: str | os.PathLike[str], suffix: str = ".xml"
) -> list[tuple[str, str]]:
    """List every ``*.xml`` file below a directory, recursively, in sorted order.

    Symbolic links are followed; each directory is entered once, real directories before
    links, so a link loop cannot hang the walk. Directories that cannot be listed are left
    out here; :func:`list_directory` reports them.

    Args:
        root: The directory to search.
        suffix: Another lower-case suffix to list instead (``".png"`` for masks).

    Returns:
        ``(key, path)`` pairs sorted by key, where the key is the path relative to ``root``
        without the extension, with ``/`` separators.

    Raises:
        InputError: ``root`` is not a directory.
    """
    return _walk(_directory(root), suffix).files


def list_directory(
    root: str | os.PathLike[str], suffix: str = ".xml", stats: TakenStats | None = None
) -> DirectoryListing:
    """List the annotation files of a directory, one per image key, and what was left out.

    Two files with the same key (``a.xml`` and ``a.XML``) keep the first in sorted order and
    skip the other, which carries no key so the image is still evaluated from the first.
    Two keys that differ only in case (``A.xml`` and ``a.xml``, or ``Sub/a.xml`` and
    ``sub/a.xml``) keep the first too, on every system: on a case-insensitive file system
    they are one file, and results must not depend on where they are computed. The skipped
    one keeps its key, so its image (``a``) is left out on both sides.

    Args:
        root: The directory to list, recursively.
        suffix: Another lower-case suffix to list instead (``".png"`` for masks).
        stats: Where the stats of the files are added as the folders are read, when
            given (:class:`~vocmatch.readers.folders.TakenStats`).

    Returns:
        The files to read, the skipped ones and the notes of the walk.

    Raises:
        InputError: ``root`` is not a directory.
    """
    top = _directory(root)
    walk = _walk(top, suffix, stats)
    if distinct_folded(list(map(itemgetter(0), walk.files))):
        # Not a key twice, nor two that differ only in case: every file is listed.
        return DirectoryListing(
            root=top,
            files=tuple(walk.files),
            skipped=tuple(sorted(walk.skipped, key=lambda s: s.path)),
            notes=tuple(walk.notes),
        )
    files: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    folded: dict[str, tuple[str, str]] = {}
    for key, path in walk.files:
        if key in seen:
            # No key: the first file stays the image's, and its image is still evaluated.
            walk.skipped.append(SkippedFile(path, f"same image key {key!r} as {seen[key]}"))
            continue
        first = folded.get(key.casefold())
        if first is not None:
            walk.skipped.append(
                SkippedFile(
                    path,
                    f"image key {key!r} differs only in case from {first[0]!r} ({first[1]}),"
                    " which is the same file on a case-insensitive file system",
                    key=key,
                )
            )
            continue
        seen[key] = path
        folded[key.casefold()] = (key, path)
        files.append((key, path))
    return DirectoryListing(
        root=top,
        files=tuple(files),
        skipped=tuple(sorted(walk.skipped, key=lambda s: s.path)),
        notes=tuple(walk.notes),
    )


def read_directory(
    root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES
) -> AnnotationSet:
    """Read every annotation file below a directory.

    A file that cannot be read is recorded in ``skipped`` with its reason; the other files
    are still read. Files left out by :func:`list_directory` (a key taken by another file,
    also when case is ignored) and directories that cannot be listed are skipped too.

    Args:
        root: The directory to read, recursively.
        max_bytes: Per-file size limit.

    Returns:
        The readable files sorted by key, and the skipped ones.

    Raises:
        InputError: ``root`` is not a directory.
    """
    max_bytes = checked_max_bytes(max_bytes)
    listing = list_directory(root)
    annotations: list[ImageAnnotation] = []
    skipped = list(listing.skipped)
    for key, path in listing.files:
        try:
            annotations.append(read_annotation(path, key, max_bytes))
        except AnnotationError as error:
            skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
    return AnnotationSet(
        root=os.fspath(root),
        annotations=tuple(annotations),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        notes=listing.notes,
    )

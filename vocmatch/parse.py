"""Read PASCAL VOC / LabelImg XML annotation files into :mod:`vocmatch.model` records.

This is the only module that knows lxml. The parser is configured for untrusted input:
entities are never expanded, no DTD is loaded, nothing is fetched from the network, and a
file larger than ``max_bytes`` is refused before it is read.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from vocmatch.errors import AnnotationError, InputError
from vocmatch.model import Box, ImageAnnotation, ImageSize, SkippedFile

__all__ = [
    "DEFAULT_MAX_BYTES",
    "AnnotationSet",
    "find_annotation_files",
    "parse_annotation",
    "read_annotation",
    "read_directory",
]

#: Files larger than this are refused unread (VOC files are a few kilobytes).
DEFAULT_MAX_BYTES = 32 * 1024 * 1024

_COORDINATES = ("xmin", "ymin", "xmax", "ymax")


def _xml_parser() -> etree.XMLParser:
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


@dataclass(frozen=True, slots=True)
class AnnotationSet:
    """The annotation files read from one directory.

    Attributes:
        root: The directory that was read.
        annotations: One record per readable file, sorted by key.
        skipped: The files that could not be read, with the reason, sorted by path.
    """

    root: str
    annotations: tuple[ImageAnnotation, ...]
    skipped: tuple[SkippedFile, ...]


def _local(tag: object) -> str:
    text = str(tag)
    return text.rsplit("}", 1)[-1] if text.startswith("{") else text


def _child(element: etree._Element, name: str) -> etree._Element | None:
    for child in element:
        if isinstance(child.tag, str) and _local(child.tag) == name:
            return child
    return None


def _children(element: etree._Element, name: str) -> list[etree._Element]:
    return [c for c in element if isinstance(c.tag, str) and _local(c.tag) == name]


def _text(element: etree._Element) -> str:
    # itertext joins text split by CDATA sections or removed comments.
    return "".join(str(part) for part in element.itertext()).strip()


def _line(element: etree._Element) -> int | None:
    line = element.sourceline
    return line if isinstance(line, int) else None


def _number(parent: etree._Element, name: str, path: str) -> float:
    element = _child(parent, name)
    if element is None:
        raise AnnotationError(path, f"<{_local(parent.tag)}> has no <{name}>", _line(parent))
    text = _text(element)
    try:
        value = float(text)
    except ValueError:
        raise AnnotationError(path, f"<{name}> is not a number: {text!r}", _line(element)) from None
    if not math.isfinite(value):
        raise AnnotationError(path, f"<{name}> is not finite: {text!r}", _line(element))
    return value


def _flag(parent: etree._Element, name: str, path: str) -> bool:
    element = _child(parent, name)
    if element is None:
        return False
    text = _text(element)
    if text in ("", "0"):
        return False
    if text == "1":
        return True
    try:
        return float(text) != 0.0
    except ValueError:
        raise AnnotationError(
            path, f"<{name}> must be 0 or 1, got {text!r}", _line(element)
        ) from None


def _score(obj: etree._Element, path: str) -> float | None:
    for name in ("score", "confidence"):
        if _child(obj, name) is not None:
            return _number(obj, name, path)
    return None


def _box(obj: etree._Element, path: str) -> Box:
    name_element = _child(obj, "name")
    if name_element is None:
        raise AnnotationError(path, "<object> has no <name>", _line(obj))
    name = _text(name_element)
    if not name:
        raise AnnotationError(path, "<name> is empty", _line(name_element))
    bndbox = _child(obj, "bndbox")
    if bndbox is None:
        raise AnnotationError(path, f"<object> {name!r} has no <bndbox>", _line(obj))
    x1, y1, x2, y2 = (_number(bndbox, tag, path) for tag in _COORDINATES)
    if x2 < x1:
        raise AnnotationError(path, f"<xmax> {x2:g} is less than <xmin> {x1:g}", _line(bndbox))
    if y2 < y1:
        raise AnnotationError(path, f"<ymax> {y2:g} is less than <ymin> {y1:g}", _line(bndbox))
    return Box(
        name=name,
        x1=x1,
        y1=y1,
        x2=x2,
        y2=y2,
        difficult=_flag(obj, "difficult", path),
        truncated=_flag(obj, "truncated", path),
        score=_score(obj, path),
        line=_line(obj),
    )


def _size(root: etree._Element, path: str) -> ImageSize | None:
    element = _child(root, "size")
    if element is None:
        return None
    depth_element = _child(element, "depth")
    depth: int | None = None
    if depth_element is not None and _text(depth_element):
        depth = int(_number(element, "depth", path))
    return ImageSize(
        width=_number(element, "width", path),
        height=_number(element, "height", path),
        depth=depth,
    )


def _refuse_dtd(tree: etree._ElementTree, path: str) -> None:
    docinfo = tree.docinfo
    if getattr(docinfo, "system_url", None) or docinfo.public_id:
        raise AnnotationError(path, "refusing a document that references an external DTD", 1)
    dtd = docinfo.internalDTD
    if dtd is not None and any(True for _ in getattr(dtd, "entities", tuple)()):
        raise AnnotationError(path, "refusing a document that declares entities", 1)


def parse_annotation(data: bytes, path: str, key: str) -> ImageAnnotation:
    """Parse the bytes of one annotation file.

    Args:
        data: The file's content.
        path: The file's path, used in error messages only.
        key: The pairing key to store in the record.

    Returns:
        The file's objects in file order.

    Raises:
        AnnotationError: The bytes are not well-formed XML, the root is not
            ``<annotation>``, or an object lacks a tag or holds a value that is not allowed.
    """
    try:
        root = etree.fromstring(data, _xml_parser())
    except etree.XMLSyntaxError as error:
        line = int(error.position[0]) if error.position else None
        message = str(error.msg or error).splitlines()[0]
        raise AnnotationError(path, f"not well-formed XML: {message}", line) from None
    if root is None:
        raise AnnotationError(path, "empty document", 1)
    _refuse_dtd(root.getroottree(), path)
    if _local(root.tag) != "annotation":
        raise AnnotationError(
            path, f"root element is <{_local(root.tag)}>, expected <annotation>", _line(root)
        )
    filename_element = _child(root, "filename")
    return ImageAnnotation(
        key=key,
        path=path,
        boxes=tuple(_box(obj, path) for obj in _children(root, "object")),
        size=_size(root, path),
        filename=_text(filename_element) if filename_element is not None else None,
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
        AnnotationError: The file cannot be read, is too large, or is not a valid
            annotation.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise AnnotationError(name, f"cannot read file: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise AnnotationError(name, f"file is larger than the {max_bytes:,}-byte limit")
    return parse_annotation(data, name, key if key is not None else Path(name).stem)


def find_annotation_files(root: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """List every ``*.xml`` file below a directory, recursively, in sorted order.

    Symbolic links to directories are followed once; a link that leads back to a
    directory already visited is not entered again, so a loop cannot hang the walk.

    Args:
        root: The directory to search.

    Returns:
        ``(key, path)`` pairs sorted by key, where the key is the path relative to ``root``
        without the extension, with ``/`` separators.

    Raises:
        InputError: ``root`` is not a directory.
    """
    top = os.fspath(root)
    if not os.path.isdir(top):
        raise InputError(f"{top}: not a directory")
    found: list[tuple[str, str]] = []
    visited: set[tuple[int, int]] = set()
    for directory, dirs, files in os.walk(top, followlinks=True):
        stat = os.stat(directory)
        if (stat.st_dev, stat.st_ino) in visited:
            dirs[:] = []
            continue
        visited.add((stat.st_dev, stat.st_ino))
        dirs.sort()
        for name in sorted(files):
            if not name.lower().endswith(".xml"):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, top)
            key = os.path.splitext(relative)[0].replace(os.sep, "/")
            found.append((key, path))
    found.sort()
    return found


def read_directory(
    root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES
) -> AnnotationSet:
    """Read every annotation file below a directory.

    A file that cannot be read is recorded in ``skipped`` with its reason; the other files
    are still read. Two files with the same key (``a.xml`` and ``a.XML``) keep the first in
    sorted order and skip the other.

    Args:
        root: The directory to read, recursively.
        max_bytes: Per-file size limit.

    Returns:
        The readable files sorted by key, and the skipped ones.

    Raises:
        InputError: ``root`` is not a directory.
    """
    annotations: list[ImageAnnotation] = []
    skipped: list[SkippedFile] = []
    seen: dict[str, str] = {}
    for key, path in find_annotation_files(root):
        if key in seen:
            skipped.append(SkippedFile(path, f"same image key {key!r} as {seen[key]}", key=key))
            continue
        seen[key] = path
        try:
            annotations.append(read_annotation(path, key, max_bytes))
        except AnnotationError as error:
            skipped.append(SkippedFile(error.path, error.message, error.line, key=key))
    return AnnotationSet(
        root=os.fspath(root),
        annotations=tuple(annotations),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
    )

"""The XML parser: what it reads, what it refuses, and where it says the problem is."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import datasets_or_skip
from vocmatch.core.model import Box, Polygon, RotatedBox
from vocmatch.errors import AnnotationError, InputError
from vocmatch.readers.parse import parse_annotation, read_annotation, read_directory


def xml(objects: str, extra: str = "") -> bytes:
    return f"<annotation>{extra}<filename>a.jpg</filename>{objects}</annotation>".encode()


def obj(name: str = "cat", box: str = "<xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>",
        extra: str = "") -> str:  # fmt: skip
    return f"<object><name>{name}</name>{extra}<bndbox>{box}</bndbox></object>"


def test_reads_a_labelimg_object() -> None:
    """Name, corners, flags and score are read; absent flags mean False."""
    annotation = parse_annotation(xml(obj(extra="<score>0.75</score>")), "a.xml", "a")
    assert annotation.boxes == (Box("cat", 1.0, 2.0, 3.0, 4.0, score=0.75, line=1),)
    assert annotation.filename == "a.jpg"


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        pytest.param(
            "<xmin>48.0</xmin><ymin>.5</ymin><xmax>1e2</xmax><ymax>+7</ymax>",
            (48.0, 0.5, 100.0, 7.0),
            id="float-forms",
        ),
        pytest.param(
            "<ymax>9</ymax><xmax>8</xmax><ymin>2</ymin><xmin>1</xmin>", (1, 2, 8, 9), id="any-order"
        ),
        pytest.param(
            "<xmin> 1 </xmin><ymin>\n2\n</ymin><xmax>3</xmax><ymax>4</ymax>",
            (1, 2, 3, 4),
            id="whitespace",
        ),
    ],
)
def test_coordinates_in_any_form(box: str, expected: tuple[float, ...]) -> None:
    """Coordinates may be floats, in any order, with surrounding whitespace."""
    (parsed,) = parse_annotation(xml(obj(box=box)), "a.xml", "a").boxes
    assert (parsed.x1, parsed.y1, parsed.x2, parsed.y2) == expected


def test_flags_confidence_name_whitespace_and_size() -> None:
    """difficult, truncated, <confidence>, stripped names and <size> are read."""
    data = xml(
        obj(
            name="  person \n",
            extra="<difficult>1</difficult><truncated>1</truncated><confidence>0.5</confidence>",
        ),
        extra="<size><width>640</width><height>480</height><depth>3</depth></size>",
    )
    annotation = parse_annotation(data, "a.xml", "a")
    (box,) = annotation.boxes
    assert (box.name, box.difficult, box.truncated, box.score) == ("person", True, True, 0.5)
    assert annotation.size is not None
    assert (annotation.size.width, annotation.size.height, annotation.size.depth) == (640, 480, 3)


@pytest.mark.parametrize(
    ("extra", "occluded", "pose"),
    [
        pytest.param("", False, None, id="absent"),
        pytest.param("<pose> Frontal </pose><occluded>1</occluded>", True, "Frontal", id="cvat"),
        pytest.param("<occluded>0</occluded><pose></pose>", False, None, id="zero-empty-pose"),
        pytest.param("<occluded>True</occluded>", True, None, id="word-true"),
        pytest.param("<occluded> no </occluded>", False, None, id="word-no"),
        pytest.param("<occluded>2</occluded>", True, None, id="number"),
    ],
)
def test_occluded_and_pose(extra: str, occluded: bool, pose: str | None) -> None:
    """<occluded> is a flag (or true/false/yes/no); <pose> is stripped text, empty as absent."""
    (box,) = parse_annotation(xml(obj(extra=extra)), "a.xml", "a").boxes
    assert (box.occluded, box.pose) == (occluded, pose)


def test_occluded_that_is_no_flag_is_refused() -> None:
    """An <occluded> that reads as neither a number nor a yes/no word names its line."""
    with pytest.raises(AnnotationError, match=r"a\.xml:1: <occluded> must be 0 or 1, got 'maybe'"):
        parse_annotation(xml(obj(extra="<occluded>maybe</occluded>")), "a.xml", "a")


def test_object_inside_part_is_not_an_object() -> None:
    """Only direct <object> children of <annotation> count (VOC person layout parts do not)."""
    part = "<part><name>hand</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></part>"
    nested = f"<object><name>person</name>{part}<bndbox><xmin>0</xmin><ymin>0</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object>"
    annotation = parse_annotation(xml(nested), "a.xml", "a")
    assert [b.name for b in annotation.boxes] == ["person"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            b"<annotation>\n<object>\n<name>cat</name>\n<bndbox>\n<xmin>1</xmin>\n<ymin>x1</ymin>\n"
            b"<xmax>3</xmax><ymax>4</ymax></bndbox></object></annotation>",
            "a.xml:6: <ymin> is not a number: 'x1'",
            id="non-numeric",
        ),
        pytest.param(
            b"<annotation>\n<object><name>cat</name>\n<bndbox><xmin>1</xmin><ymin>2</ymin>"
            b"<xmax>3</xmax></bndbox></object></annotation>",
            "a.xml:3: <bndbox> has no <ymax>",
            id="missing-coordinate",
        ),
        pytest.param(
            b"<annotation>\n\n<object><name>cat</name><bndbox><xmin>5</xmin><ymin>2</ymin>"
            b"<xmax>3</xmax><ymax>4</ymax></bndbox></object></annotation>",
            "a.xml:3: <xmax> 3 is less than <xmin> 5",
            id="inverted",
        ),
        pytest.param(
            b"<annotation>\n<object><name>cat</name></object>\n</annotation>",
            "a.xml:2: <object> 'cat' has no <bndbox>, <robndbox> or <polygon>",
            id="no-bndbox",
        ),
        pytest.param(
            b"<annotation>\n<object><bndbox/></object></annotation>",
            "a.xml:2: <object> has no <name>",
            id="no-name",
        ),
        pytest.param(
            b"<annotation>\n<object><name> </name></object></annotation>",
            "a.xml:2: <name> is empty",
            id="empty-name",
        ),
        pytest.param(
            b"<annotation>\n<object><name>cat</name>\n</annotation>",
            "a.xml:3: not well-formed XML: Opening and ending tag mismatch: object line 2 and annotation",
            id="malformed",
        ),
        pytest.param(
            b"<annotation><object><name>c</name><bndbox><xmin>nan</xmin><ymin>0</ymin>"
            b"<xmax>1</xmax><ymax>1</ymax></bndbox></object></annotation>",
            "a.xml:1: <xmin> is not finite: 'nan'",
            id="nan",
        ),
        pytest.param(
            b"<voc></voc>", "a.xml:1: root element is <voc>, expected <annotation>", id="root"
        ),
        pytest.param(b"\xff\xd8\xff\xe0JFIF", "a.xml:1: not well-formed XML", id="jpeg"),
    ],
)
def test_errors_name_file_and_line(data: bytes, message: str) -> None:
    """Every problem is an AnnotationError printed as path:line: message."""
    with pytest.raises(AnnotationError) as info:
        parse_annotation(data, "a.xml", "a")
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY l "lol"><!ENTITY l2 "&l;&l;&l;&l;">]>'
            b"<annotation><object><name>&l2;</name></object></annotation>",
            id="entity-bomb",
        ),
        pytest.param(
            b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b"<annotation><object><name>&x;</name></object></annotation>",
            id="external-entity",
        ),
        pytest.param(
            b'<?xml version="1.0"?><!DOCTYPE annotation SYSTEM "http://example.invalid/a.dtd">'
            b"<annotation/>",
            id="external-dtd",
        ),
    ],
)
def test_entities_and_dtds_are_refused(data: bytes) -> None:
    """Documents declaring entities or an external DTD are refused, never expanded."""
    with pytest.raises(AnnotationError, match="refusing a document"):
        parse_annotation(data, "a.xml", "a")


def test_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    """A file above the size limit is refused with its path."""
    path = tmp_path / "big.xml"
    path.write_bytes(b"<annotation>" + b" " * 2000 + b"</annotation>")
    with pytest.raises(AnnotationError, match=r"big.xml: file is larger than the 1,000-byte limit"):
        read_annotation(path, max_bytes=1000)


def test_directory_is_read_recursively_and_keyed_by_relative_path(tmp_path: Path) -> None:
    """Keys are relative paths without extension; bad files are skipped, not fatal."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.xml").write_bytes(xml(obj()))
    (tmp_path / "a.xml").write_bytes(xml(""))
    (tmp_path / "bad.xml").write_bytes(b"<annotation>")
    (tmp_path / "notes.txt").write_text("not an annotation")
    (tmp_path / "dir.xml").mkdir()
    result = read_directory(tmp_path)
    assert [a.key for a in result.annotations] == ["a", "sub/b"]
    assert [(s.key, s.line) for s in result.skipped] == [("bad", 1)]


def test_not_a_directory_is_an_input_error(tmp_path: Path) -> None:
    """A path that is not a directory is an InputError naming it."""
    with pytest.raises(InputError, match="not a directory"):
        read_directory(tmp_path / "missing")


@pytest.mark.parametrize(
    ("name", "files", "objects"),
    [
        pytest.param("raccoon", 200, 217, id="raccoon"),
        pytest.param("bccd", 364, 4888, id="bccd"),
        pytest.param("cards", 363, 670, id="cards"),
    ],
)
def test_every_real_dataset_file_parses(name: str, files: int, objects: int) -> None:
    """Every file of the real LabelImg/VOC sets parses, with the documented object counts."""
    result = read_directory(datasets_or_skip(name))
    assert result.skipped == ()
    assert len(result.annotations) == files
    assert sum(len(a.boxes) for a in result.annotations) == objects


# Rotated boxes and polygons


def shaped(body: str, name: str = "cat", extra: str = "") -> bytes:
    """A file whose one object (on line 2) holds ``body``, its lines numbered from 3."""
    return f"<annotation>\n<object><name>{name}</name>{extra}\n{body}\n</object>\n</annotation>".encode()


def test_reads_a_robndbox() -> None:
    """roLabelImg's <robndbox>: centre, size and angle in radians; the box is its bounding box."""
    body = "<robndbox><cx>50</cx><cy>30</cy><w>40</w><h>10</h><angle>1.5707963267948966</angle></robndbox>"
    (parsed,) = parse_annotation(shaped(body, extra="<type>robndbox</type>"), "a.xml", "a").boxes
    assert parsed.shape == RotatedBox(50.0, 30.0, 40.0, 10.0, math.pi / 2)
    assert (parsed.x1, parsed.y1, parsed.x2, parsed.y2) == (45.0, 10.0, 55.0, 50.0)
    assert (parsed.name, parsed.line) == ("cat", 2)


def test_robndbox_at_zero_reads_as_its_box() -> None:
    """At angle 0 the bounding box is the box itself, exactly."""
    body = "<robndbox><cx>100</cx><cy>100</cy><w>80</w><h>40</h><angle>0.0</angle></robndbox>"
    (parsed,) = parse_annotation(shaped(body), "a.xml", "a").boxes
    assert (parsed.x1, parsed.y1, parsed.x2, parsed.y2) == (60.0, 80.0, 140.0, 120.0)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            "<polygon><username>x</username><pt><x>200</x><y>100</y></pt>"
            "<pt><y>100</y><x>300.5</x></pt><pt><x> 200 </x><y>2e2</y></pt></polygon>",
            id="pt-children",
        ),
        pytest.param(
            "<polygon><x1>200</x1><y1>100</y1><x2>300.5</x2><y2>100</y2><x3>200</x3><y3>2e2</y3></polygon>",
            id="numbered",
        ),
        pytest.param(
            "<polygon><y1>100</y1><x1>200</x1><x2>300.5</x2><x3>200</x3><y2>100</y2><y3>2e2</y3></polygon>",
            id="numbered-pairs-by-index",
        ),
    ],
)
def test_reads_both_polygon_forms(body: str) -> None:
    """<pt><x><y></pt> and <x1><y1>...: the same points, in document order."""
    (parsed,) = parse_annotation(shaped(body), "a.xml", "a").boxes
    assert parsed.shape == Polygon(((200.0, 100.0), (300.5, 100.0), (200.0, 200.0)))
    assert (parsed.x1, parsed.y1, parsed.x2, parsed.y2) == (200.0, 100.0, 300.5, 200.0)


def test_points_keep_document_order() -> None:
    """Numbered points are listed as the file lists them, not sorted by number."""
    body = "<polygon><x3>0</x3><y3>4</y3><x1>0</x1><y1>0</y1><x2>4</x2><y2>0</y2></polygon>"
    (parsed,) = parse_annotation(shaped(body), "a.xml", "a").boxes
    assert parsed.shape == Polygon(((0.0, 4.0), (0.0, 0.0), (4.0, 0.0)))


def test_shape_wins_over_bndbox() -> None:
    """An object with both keeps the shape, and its <bndbox> is not read."""
    body = (
        "<bndbox><xmin>0</xmin><ymin>0</ymin><xmax>oops</xmax><ymax>1</ymax></bndbox>"
        "<polygon><x1>1</x1><y1>1</y1><x2>5</x2><y2>1</y2><x3>1</x3><y3>4</y3></polygon>"
    )
    (parsed,) = parse_annotation(shaped(body), "a.xml", "a").boxes
    assert parsed.shape == Polygon(((1.0, 1.0), (5.0, 1.0), (1.0, 4.0)))
    assert (parsed.x1, parsed.y1, parsed.x2, parsed.y2) == (1.0, 1.0, 5.0, 4.0)


def test_a_file_without_shapes_reads_as_before() -> None:
    """Plain boxes carry no shape."""
    (parsed,) = parse_annotation(xml(obj()), "a.xml", "a").boxes
    assert parsed.shape is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            "<polygon>\n<pt><x>0</x><y>0</y></pt>\n<pt><x>4</x><y>0</y></pt>\n</polygon>",
            "a.xml:3: <polygon> has 2 distinct points; a polygon needs at least 3",
            id="fewer-than-three",
        ),
        pytest.param(
            "<polygon>\n<pt><x>0</x><y>0</y></pt><pt><x>1</x><y>1</y></pt><pt><x>0</x><y>0</y></pt></polygon>",
            "a.xml:3: <polygon> has 2 distinct points; a polygon needs at least 3",
            id="repeated-point",
        ),
        pytest.param(
            "<polygon><x1>0</x1><y1>0</y1><x2>2</x2><y2>2</y2><x3>4</x3><y3>4</y3></polygon>",
            "a.xml:3: <polygon> has zero area: its points lie on one line",
            id="zero-area",
        ),
        pytest.param(
            "<polygon>\n<x1>0</x1><y1>0</y1>\n<x2>2</x2><y2>2</y2>\n<x3>2</x3><y3>0</y3>\n"
            "<x4>0</x4><y4>2</y4>\n</polygon>",
            "a.xml:3: <polygon> is self-intersecting at (1, 1)",
            id="bow-tie",
        ),
        pytest.param(
            "<polygon>\n<x1>0</x1><y1>0</y1>\n<x2>4</x2><y2>0</y2>\n<x3>0</x3>\n</polygon>",
            "a.xml:6: <polygon> has <x3> but no <y3>",
            id="odd-coordinate-count",
        ),
        pytest.param(
            "<polygon><x1>0</x1><y1>0</y1><x2>4</x2><y2>0</y2>\n<y3>3</y3></polygon>",
            "a.xml:4: <polygon> has <y3> but no <x3>",
            id="y-without-x",
        ),
        pytest.param(
            "<polygon><x1>0</x1><y1>0</y1>\n<x1>4</x1><y2>0</y2></polygon>",
            "a.xml:4: <polygon> has a second <x1>",
            id="repeated-number",
        ),
        pytest.param(
            "<polygon><x1>0</x1><y1>0</y1><x2>4</x2>\n<y2>north</y2><x3>0</x3><y3>3</y3></polygon>",
            "a.xml:4: <y2> is not a number: 'north'",
            id="non-numeric",
        ),
        pytest.param(
            "<polygon><pt><x>0</x><y>0</y></pt><pt><x>4</x>\n<y>NaN</y></pt><pt><x>0</x><y>3</y></pt></polygon>",
            "a.xml:4: <y> is not finite: 'NaN'",
            id="nan",
        ),
        pytest.param(
            "<polygon><pt><x>0</x><y>0</y></pt>\n<pt><x>4</x></pt><pt><x>0</x><y>3</y></pt></polygon>",
            "a.xml:4: <pt> has no <y>",
            id="pt-without-y",
        ),
        pytest.param(
            "<polygon><pt><x>0</x><y>0</y></pt><x2>4</x2><y2>0</y2></polygon>",
            "a.xml:3: <polygon> mixes <pt> points with numbered <x1> <y1> ...",
            id="mixed-forms",
        ),
        pytest.param(
            "<robndbox><cx>5</cx><cy>5</cy><w>4</w>\n<h>-2</h><angle>0</angle></robndbox>",
            "a.xml:4: <h> -2 is negative",
            id="negative-height",
        ),
        pytest.param(
            "<robndbox><cx>5</cx><cy>5</cy><w>4</w><h>2</h></robndbox>",
            "a.xml:3: <robndbox> has no <angle>",
            id="no-angle",
        ),
        pytest.param(
            "<robndbox>\n<cx>5</cx><cy>5</cy><w>4</w><h>2</h><angle>half</angle></robndbox>",
            "a.xml:4: <angle> is not a number: 'half'",
            id="angle-not-a-number",
        ),
        pytest.param(
            "<robndbox><cx>5</cx><cy>5</cy><w>4</w><h>2</h><angle>0</angle></robndbox>"
            "<polygon><x1>0</x1><y1>0</y1><x2>4</x2><y2>0</y2><x3>0</x3><y3>3</y3></polygon>",
            "a.xml:2: <object> 'cat' has both <robndbox> and <polygon>; keep one",
            id="two-shapes",
        ),
    ],
)
def test_shape_errors_name_file_and_line(body: str, message: str) -> None:
    """Every problem with a shape is an AnnotationError at the element's line."""
    with pytest.raises(AnnotationError) as info:
        parse_annotation(shaped(body), "a.xml", "a")
    assert str(info.value) == message

"""The annotation linter: each rule's exact findings, selection, output forms and real sets."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Protocol

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import datasets_or_skip
from vocmatch.errors import AnnotationError, InputError
from vocmatch.readers.lint import (
    RULES,
    Finding,
    LintOptions,
    LintResult,
    github_annotation,
    lint_bytes,
    lint_file,
    lint_paths,
    read_classes,
    rule,
    select_codes,
    summary,
    to_json,
)
from vocmatch.readers.parse import parse_annotation

HEAD = (
    "<annotation><filename>a.jpg</filename>"
    "<size><width>100</width><height>80</height><depth>3</depth></size>"
)


def box(
    name: str = "cat",
    x1: str = "10",
    y1: str = "10",
    x2: str = "50",
    y2: str = "40",
    extra: str = "",
) -> str:
    """One object on one line."""
    return (
        f"<object><name>{name}</name>{extra}<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
        f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"
    )


def document(*objects: str, head: str = HEAD) -> str:
    """``head`` on line 1, then one object per line from line 2."""
    return "\n".join([head, *objects, "</annotation>"]) + "\n"


class Lint(Protocol):
    def __call__(
        self, text: str, name: str = ..., options: LintOptions | None = ...
    ) -> list[str]: ...


@pytest.fixture
def lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lint:
    """Write a document into an empty directory and return its findings as printed lines."""
    monkeypatch.chdir(tmp_path)

    def check(text: str, name: str = "a.xml", options: LintOptions | None = None) -> list[str]:
        Path(name).write_text(text, encoding="utf-8")
        return [str(finding) for finding in lint_file(name, options)]

    return check


def test_rules_are_numbered_in_order_and_named_once() -> None:
    """Codes run V001, V002, ... without gaps; names and codes are unique."""
    assert [r.code for r in RULES] == [f"V{n:03d}" for n in range(1, len(RULES) + 1)]
    assert len({r.name for r in RULES}) == len(RULES)
    assert rule("V005").name == "empty-box"


def test_clean_file_has_no_findings(lint: Lint) -> None:
    """A LabelImg-like file with a valid box inside its image passes every rule."""
    assert lint(document(box(), box("dog", "0", "0", "100", "80"))) == []


# V001 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "<annotation>\n<object>\n</annotation>\n",
            [
                "a.xml:3: V001 not well-formed XML: "
                "Opening and ending tag mismatch: object line 2 and annotation"
            ],
            id="tag-mismatch",
        ),
        pytest.param(
            "<annotation>\n<filename>a.jpg</filename>\n",
            ["a.xml:3: V001 not well-formed XML: Premature end of data in tag annotation line 1"],
            id="truncated",
        ),
        pytest.param("", ["a.xml:1: V001 not well-formed XML: Document is empty"], id="empty-file"),
        pytest.param(
            "<?xml version='1.0'?>\n<images>\n<image/>\n</images>\n",
            ["a.xml:2: V001 root element is <images>, expected <annotation>"],
            id="wrong-root",
        ),
        pytest.param(
            '<!DOCTYPE annotation [<!ENTITY x "y">]>\n<annotation>&x;</annotation>\n',
            ["a.xml:1: V001 refusing a document that declares entities"],
            id="entity-declaration",
        ),
        pytest.param(
            '<!DOCTYPE annotation SYSTEM "http://example.com/a.dtd">\n<annotation/>\n',
            ["a.xml:1: V001 refusing a document that references an external DTD"],
            id="external-dtd",
        ),
    ],
)
def test_v001_invalid_xml(lint: Lint, text: str, expected: list[str]) -> None:
    """A document the evaluator cannot read is one V001 at the line lxml names, and nothing else."""
    assert lint(text) == expected


def test_v001_file_larger_than_the_limit(lint: Lint) -> None:
    """A file over the size limit is refused unread, in the evaluator's words."""
    assert lint(document(box()), options=LintOptions(max_bytes=10)) == [
        "a.xml:1: V001 file is larger than the 10-byte limit (230 bytes)"
    ]


def test_v001_unreadable_file(tmp_path: Path) -> None:
    """A path that is not a regular file is a V001 finding in the evaluator's words, not an
    exception."""
    (finding,) = lint_file(tmp_path)
    assert finding == Finding(str(tmp_path), 1, "V001", "not a regular file: a directory")
    (finding,) = lint_file(tmp_path / "absent.xml")
    assert finding == Finding(
        str(tmp_path / "absent.xml"), 1, "V001", "cannot read file: No such file or directory"
    )


# V002 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            document(box(), head=HEAD.replace("<filename>a.jpg</filename>", "")),
            ["a.xml:1: V002 <annotation> has no <filename>"],
            id="no-filename",
        ),
        pytest.param(
            document(box(), head=HEAD.replace("a.jpg", " ")),
            ["a.xml:1: V002 <filename> is empty"],
            id="empty-filename",
        ),
        pytest.param(
            document(
                "<object><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax>"
                "</bndbox></object>"
            ),
            ["a.xml:2: V002 <object> has no <name>"],
            id="no-name",
        ),
        pytest.param(
            document(box(name="  "), ""), ["a.xml:2: V002 <name> is empty"], id="empty-name"
        ),
        pytest.param(
            document("<object>\n<name>cat</name>\n</object>"),
            ["a.xml:2: V002 <object> 'cat' has no <bndbox>, <robndbox> or <polygon>"],
            id="no-bndbox",
        ),
        pytest.param(
            document(
                "<object><name>cat</name>\n<bndbox><xmin>1</xmin><ymax>5</ymax></bndbox></object>"
            ),
            ["a.xml:3: V002 <bndbox> has no <ymin>", "a.xml:3: V002 <bndbox> has no <xmax>"],
            id="two-coordinates-missing",
        ),
    ],
)
def test_v002_missing_tag(lint: Lint, text: str, expected: list[str]) -> None:
    """Each missing or empty required tag is a finding at its parent's line."""
    assert lint(text) == expected


# V003 and V004 ------------------------------------------------------------------------------


def test_v003_non_numeric_coordinates_each_at_their_line(lint: Lint) -> None:
    """Every coordinate that is not a number is reported, on its own line, with its text."""
    obj = (
        "<object><name>cat</name><bndbox>\n<xmin>12px</xmin>\n<ymin></ymin>\n<xmax>50</xmax>\n"
        "<ymax>4O</ymax>\n</bndbox></object>"
    )
    assert lint(document(obj)) == [
        "a.xml:3: V003 <xmin> is not a number: '12px'",
        "a.xml:4: V003 <ymin> is not a number: ''",
        "a.xml:6: V003 <ymax> is not a number: '4O'",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("nan", "a.xml:2: V004 <xmax> is not finite: 'nan'", id="nan"),
        pytest.param("NaN", "a.xml:2: V004 <xmax> is not finite: 'NaN'", id="nan-mixed-case"),
        pytest.param("inf", "a.xml:2: V004 <xmax> is not finite: 'inf'", id="inf"),
        pytest.param("-Infinity", "a.xml:2: V004 <xmax> is not finite: '-Infinity'", id="-inf"),
        pytest.param("1e400", "a.xml:2: V004 <xmax> is not finite: '1e400'", id="overflow"),
    ],
)
def test_v004_non_finite_coordinate(lint: Lint, value: str, expected: str) -> None:
    """NaN, infinities and numbers too large for a float are not finite."""
    assert lint(document(box(x2=value))) == [expected]


def test_v003_v004_score(lint: Lint) -> None:
    """A prediction's <score> or <confidence> is checked like a coordinate."""
    text = document(
        box(extra="<score>high</score>"),
        box("dog", extra="<confidence>nan</confidence>"),
        box("cow", extra="<score>0.5</score><confidence>x</confidence>"),
    )
    # The third object's <confidence> is never read: <score> comes first.
    assert lint(text) == [
        "a.xml:2: V003 <score> is not a number: 'high'",
        "a.xml:3: V004 <confidence> is not finite: 'nan'",
    ]


# V005 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("corners", "expected"),
    [
        pytest.param(
            ("10", "10", "10", "40"),
            "a.xml:2: V005 zero-area box 'cat': xmin 10 = xmax 10",
            id="zero-width",
        ),
        pytest.param(
            ("10", "40.0", "50", "40"),
            "a.xml:2: V005 zero-area box 'cat': ymin 40.0 = ymax 40",
            id="zero-height-as-written",
        ),
        pytest.param(
            ("7", "7", "7", "7"),
            "a.xml:2: V005 zero-area box 'cat': xmin 7 = xmax 7, ymin 7 = ymax 7",
            id="point",
        ),
        pytest.param(
            ("50", "10", "10", "40"),
            "a.xml:2: V005 inverted box 'cat': xmin 50 > xmax 10",
            id="inverted-x",
        ),
        pytest.param(
            ("10", "40", "10", "10"),
            "a.xml:2: V005 inverted box 'cat': xmin 10 = xmax 10, ymin 40 > ymax 10",
            id="zero-width-and-inverted-y",
        ),
    ],
)
def test_v005_zero_area_or_inverted(lint: Lint, corners: tuple[str, ...], expected: str) -> None:
    """xmin >= xmax or ymin >= ymax is reported once per box, with the values as written."""
    assert lint(document(box("cat", *corners))) == [expected]


def test_v005_at_the_bndbox_line(lint: Lint) -> None:
    """The finding points at <bndbox>, where the evaluator's parser points too."""
    obj = "<object>\n<name>cat</name>\n<bndbox><xmin>5</xmin><ymin>1</ymin><xmax>4</xmax>"
    assert lint(document(obj + "<ymax>9</ymax></bndbox></object>")) == [
        "a.xml:4: V005 inverted box 'cat': xmin 5 > xmax 4"
    ]


# V006 ---------------------------------------------------------------------------------------


def test_v006_each_side(lint: Lint) -> None:
    """Each side beyond the 100x80 image is named; touching the border is inside."""
    text = document(
        box("a", "-1", "10", "50", "40"),
        box("b", "10", "-0.5", "50", "40"),
        box("c", "10", "10", "101", "40"),
        box("d", "10", "10", "50", "80.5"),
        box("e", "-3", "-3", "103", "83"),
        box("f", "0", "0", "100", "80"),
    )
    assert lint(text) == [
        "a.xml:2: V006 box 'a' outside the 100x80 image: xmin -1 < 0",
        "a.xml:3: V006 box 'b' outside the 100x80 image: ymin -0.5 < 0",
        "a.xml:4: V006 box 'c' outside the 100x80 image: xmax 101 > width 100",
        "a.xml:5: V006 box 'd' outside the 100x80 image: ymax 80.5 > height 80",
        "a.xml:6: V006 box 'e' outside the 100x80 image: "
        "xmin -3 < 0, ymin -3 < 0, xmax 103 > width 100, ymax 83 > height 80",
    ]


@pytest.mark.parametrize(
    ("tolerance", "expected"),
    [
        pytest.param(0.0, 2, id="none"),
        pytest.param(1.9, 2, id="just-short"),
        pytest.param(2.0, 0, id="exactly-enough"),
        pytest.param(5.0, 0, id="generous"),
    ],
)
def test_v006_tolerance(lint: Lint, tolerance: float, expected: int) -> None:
    """A box may overshoot by up to the tolerance, inclusive, on every side."""
    text = document(box(x2="102"), box("dog", x1="-2"))
    assert len(lint(text, options=LintOptions(tolerance=tolerance))) == expected


def test_v006_not_checked_without_a_usable_size(lint: Lint) -> None:
    """With no usable <size> only V007 is reported, not every box as outside."""
    head = "<annotation><filename>a.jpg</filename><size><width>0</width><height>80</height></size>"
    assert lint(document(box(x2="500"), head=head)) == [
        "a.xml:1: V007 <width> is not positive: '0'"
    ]


# V007 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        pytest.param("", ["a.xml:1: V007 no <size>"], id="no-size"),
        pytest.param(
            "<size>\n<height>80</height>\n</size>",
            ["a.xml:1: V007 <size> has no <width>"],
            id="no-width",
        ),
        pytest.param(
            "<size>\n<width>0</width>\n<height>0</height>\n</size>",
            ["a.xml:2: V007 <width> is not positive: '0'", "a.xml:3: V007 <height> is not positive: '0'"],
            id="zero",
        ),
        pytest.param(
            "<size>\n<width>-640</width>\n<height>480</height>\n</size>",
            ["a.xml:2: V007 <width> is not positive: '-640'"],
            id="negative",
        ),
        pytest.param(
            "<size>\n<width>wide</width>\n<height>inf</height>\n</size>",
            ["a.xml:2: V007 <width> is not a number: 'wide'", "a.xml:3: V007 <height> is not finite: 'inf'"],
            id="not-numbers",
        ),
        pytest.param(
            "<size>\n<width>9</width>\n<height>9</height>\n<depth>RGB</depth>\n</size>",
            ["a.xml:4: V007 <depth> is not a number: 'RGB'"],
            id="bad-depth",
        ),
        pytest.param(
            "<size><width>9</width><height>9</height><depth></depth></size>", [], id="empty-depth"
        ),
    ],
)  # fmt: skip
def test_v007_invalid_size(lint: Lint, size: str, expected: list[str]) -> None:
    """A missing, non-numeric or non-positive size is a finding; an empty depth is allowed."""
    text = f"<annotation><filename>a.jpg</filename>{size}<object><name>cat</name><bndbox>"
    text += (
        "<xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>"
    )
    assert lint(text) == expected


# V008 ---------------------------------------------------------------------------------------


def test_v008_file_name_with_dots(lint: Lint) -> None:
    """Only the last extension is dropped: img.v2.jpg names img.v2.xml."""
    head = HEAD.replace("a.jpg", "img.v2.jpg")
    assert lint(document(box(), head=head), name="img.v2.xml") == []
    assert lint(document(box(), head=head), name="img.xml") == [
        "img.xml:1: V008 <filename> 'img.v2.jpg' does not match the file name 'img.xml'"
    ]


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        pytest.param("a.jpg", [], id="same-stem"),
        pytest.param("a.JPEG", [], id="other-extension"),
        pytest.param("a", [], id="no-extension"),
        pytest.param("images/a.png", [], id="posix-path"),
        pytest.param(r"C:\tensorflow_cards\test\a.JPG", [], id="windows-path"),
        pytest.param(
            "b.jpg", ["a.xml:1: V008 <filename> 'b.jpg' does not match the file name 'a.xml'"],
            id="other-image",
        ),
        pytest.param(
            "A.jpg", ["a.xml:1: V008 <filename> 'A.jpg' does not match the file name 'a.xml'"],
            id="case-differs",
        ),
        pytest.param(
            "a.b.jpg", ["a.xml:1: V008 <filename> 'a.b.jpg' does not match the file name 'a.xml'"],
            id="longer-stem",
        ),
    ],
)  # fmt: skip
def test_v008_filename(lint: Lint, filename: str, expected: list[str]) -> None:
    """<filename> matches when its base name, with or without its extension, is the file's stem."""
    head = HEAD.replace("a.jpg", filename)
    assert lint(document(box(), head=head)) == expected


# V009 ---------------------------------------------------------------------------------------


def test_v009_unknown_class_with_a_suggestion(lint: Lint) -> None:
    """A name not in the list is reported at its <name> line; a close known name is suggested."""
    options = LintOptions(classes=frozenset({"RBC", "WBC", "Platelets"}))
    text = document(box("RBC"), box("rbc"), box("Platelet"), box("dog"))
    assert lint(text, options=options) == [
        "a.xml:3: V009 unknown class 'rbc' (did you mean 'RBC'?)",
        "a.xml:4: V009 unknown class 'Platelet' (did you mean 'Platelets'?)",
        "a.xml:5: V009 unknown class 'dog'",
    ]


def test_v009_off_without_a_class_list(lint: Lint) -> None:
    """Without known classes any name is accepted."""
    assert lint(document(box("anything at all"))) == []


def test_read_classes(tmp_path: Path) -> None:
    """One name per line; blank lines and # comments are skipped; whitespace is stripped."""
    path = tmp_path / "classes.txt"
    path.write_text("# blood cells\nRBC\n\n  WBC \nPlatelets\nRBC\n", encoding="utf-8")
    assert read_classes(path) == frozenset({"RBC", "WBC", "Platelets"})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("# nothing\n\n", "class list holds no class name", id="empty"),
        pytest.param(b"\xff\xfe\x00", "class list is not UTF-8 text", id="binary"),
    ],
)
def test_read_classes_refuses(tmp_path: Path, content: str | bytes, message: str) -> None:
    """A class list with no name, or not text, is an input error."""
    path = tmp_path / "classes.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_classes(path)


# V010 ---------------------------------------------------------------------------------------


def test_v010_duplicate_boxes(lint: Lint) -> None:
    """A later box of the same class at IoU >= 0.9 is reported against the first it repeats."""
    text = document(
        box("cat", "10", "10", "50", "40"),
        box("dog", "10", "10", "50", "40"),  # another class: not a duplicate
        box("cat", "10", "10", "50", "40"),  # identical: IoU 1
        box("cat", "11", "10", "50", "40"),  # IoU 39/40 = 0.975 with line 2
        box("cat", "14", "10", "50", "40"),  # IoU 36/40 = 0.9 exactly: inclusive
        box("cat", "15", "10", "50", "40"),  # IoU 35/40 = 0.875 with line 2, 35/36 with line 6
    )
    assert lint(text) == [
        "a.xml:4: V010 duplicate 'cat' box: IoU 1.00 with the box at line 2",
        "a.xml:5: V010 duplicate 'cat' box: IoU 0.97 with the box at line 2",
        "a.xml:6: V010 duplicate 'cat' box: IoU 0.90 with the box at line 2",
        "a.xml:7: V010 duplicate 'cat' box: IoU 0.97 with the box at line 6",
    ]


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        pytest.param(0.5, ["a.xml:3: V010 duplicate 'cat' box: IoU 0.60 with the box at line 2"],
                     id="0.5"),
        pytest.param(0.6, ["a.xml:3: V010 duplicate 'cat' box: IoU 0.60 with the box at line 2"],
                     id="0.6-inclusive"),
        pytest.param(0.61, [], id="0.61"),
        pytest.param(0.9, [], id="default"),
    ],
)  # fmt: skip
def test_v010_threshold(lint: Lint, threshold: float, expected: list[str]) -> None:
    """IoU 24/40 = 0.6 is a duplicate at thresholds up to 0.6."""
    text = document(box("cat", "0", "0", "40", "10"), box("cat", "0", "0", "24", "10"))
    assert lint(text, options=LintOptions(duplicate_iou=threshold)) == expected


def test_v010_skips_empty_boxes(lint: Lint) -> None:
    """Two identical zero-area boxes are two V005 findings, not a duplicate."""
    text = document(box("cat", "5", "5", "5", "5"), box("cat", "5", "5", "5", "5"))
    assert [line[:11] for line in lint(text)] == ["a.xml:2: V0", "a.xml:3: V0"]
    assert all(" V005 " in line for line in lint(text))


# V011 and V012 ------------------------------------------------------------------------------


def test_v011_no_objects(lint: Lint) -> None:
    """A file without any <object> is reported at the <annotation> line."""
    assert lint("<?xml version='1.0'?>\n" + document()) == ["a.xml:2: V011 no <object>"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param("<difficult>0</difficult><truncated>1</truncated>", [], id="zero-one"),
        pytest.param("<difficult></difficult>", [], id="empty-reads-as-zero"),
        pytest.param(
            "<difficult>2</difficult><truncated>yes</truncated>",
            [
                "a.xml:2: V012 <difficult> must be 0 or 1, got '2'",
                "a.xml:2: V012 <truncated> must be 0 or 1, got 'yes'",
            ],
            id="two-and-yes",
        ),
        pytest.param(
            "<truncated>1.0</truncated>",
            ["a.xml:2: V012 <truncated> must be 0 or 1, got '1.0'"],
            id="float",
        ),
    ],
)
def test_v012_invalid_flag(lint: Lint, flags: str, expected: list[str]) -> None:
    """<difficult> and <truncated> must be written 0 or 1."""
    assert lint(document(box(extra=flags))) == expected


# V014 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(document(box()), [], id="each-once"),
        pytest.param(
            document(box(extra="<bndbox><xmin>60</xmin><ymin>1</ymin><xmax>70</xmax>"
                               "<ymax>5</ymax></bndbox>")),
            ["a.xml:2: V014 <object> has a second <bndbox>: only the first (line 2) is read"],
            id="two-bndbox",
        ),
        pytest.param(
            document(box(extra="<name>dog</name><score>0.5</score><score>0.9</score>")),
            [
                "a.xml:2: V014 <object> has a second <name>: only the first (line 2) is read",
                "a.xml:2: V014 <object> has a second <score>: only the first (line 2) is read",
            ],
            id="name-and-score",
        ),
        pytest.param(
            document(box(x2="50</xmax><xmax>90")),
            ["a.xml:2: V014 <bndbox> has a second <xmax>: only the first (line 2) is read"],
            id="two-xmax",
        ),
        pytest.param(
            document(box(), head=HEAD + "\n<size><width>5</width><height>5</height></size>"
                                        "<filename>b.jpg</filename>"),
            [
                "a.xml:2: V014 <annotation> has a second <size>: only the first (line 1) is read",
                "a.xml:2: V014 <annotation> has a second <filename>: only the first (line 1) is "
                "read",
            ],
            id="header",
        ),
        pytest.param(
            document(box(extra="<difficult>1</difficult><difficult>0</difficult>"
                               "<attributes><name>x</name><name>y</name></attributes>")),
            ["a.xml:2: V014 <object> has a second <difficult>: only the first (line 2) is read"],
            id="flags-but-not-unknown-children",
        ),
    ],
)  # fmt: skip
def test_v014_repeated_field(lint: Lint, text: str, expected: list[str]) -> None:
    """A field the evaluator reads once, written twice: the result would depend on which
    comes first, so lint names the second (children it does not read may repeat)."""
    assert lint(text) == expected


# Several findings, selection ----------------------------------------------------------------


def test_every_finding_of_a_file_in_line_order(lint: Lint) -> None:
    """The linter does not stop at the first problem; findings are sorted by line, then code."""
    head = "<annotation><filename>b.jpg</filename>"
    text = document(
        box("cat", "abc", "10", "50", "40"),
        box("cat", "50", "10", "10", "40", extra="<difficult>yes</difficult>"),
        box("cat", "10", "10", "500", "40"),
        head=head,
    )
    assert lint(text) == [
        "a.xml:1: V007 no <size>",
        "a.xml:1: V008 <filename> 'b.jpg' does not match the file name 'a.xml'",
        "a.xml:2: V003 <xmin> is not a number: 'abc'",
        "a.xml:3: V005 inverted box 'cat': xmin 50 > xmax 10",
        "a.xml:3: V012 <difficult> must be 0 or 1, got 'yes'",
    ]


@pytest.mark.parametrize(
    ("select", "ignore", "expected"),
    [
        pytest.param([], [], [r.code for r in RULES], id="default-all"),
        pytest.param(["V005"], [], ["V005"], id="one"),
        pytest.param(["v005, V006", "V010"], [], ["V005", "V006", "V010"], id="comma-repeat-case"),
        pytest.param(["V01"], [], ["V010", "V011", "V012", "V013", "V014"], id="prefix"),
        pytest.param([], ["V011,V008"], [r.code for r in RULES if r.code not in ("V008", "V011")],
                     id="ignore"),
        pytest.param(["V00"], ["V003", "V004"], ["V001", "V002", "V005", "V006", "V007", "V008",
                     "V009"], id="select-then-ignore"),
        pytest.param(["ALL"], ["V"], [], id="all-minus-all"),
        pytest.param([""], [], [r.code for r in RULES], id="empty-selector"),
    ],
)  # fmt: skip
def test_select_codes(select: list[str], ignore: list[str], expected: list[str]) -> None:
    """Selectors are codes or prefixes, comma-separated or repeated; ignore wins."""
    assert sorted(select_codes(select, ignore)) == expected


@pytest.mark.parametrize("selector", ["V099", "X", "V0011", "E501"])
def test_select_codes_refuses_unknown(selector: str) -> None:
    """A selector that matches no rule is an error naming it, not a silent no-op."""
    with pytest.raises(InputError, match=f"unknown rule code '{selector}'; the codes are V001, "):
        select_codes([selector])


def test_selection_filters_findings(lint: Lint) -> None:
    """Only the selected codes are reported."""
    text = document(box("cat", "50", "10", "10", "40"), head="<annotation>")
    assert lint(text) == [
        "a.xml:1: V002 <annotation> has no <filename>",
        "a.xml:1: V007 no <size>",
        "a.xml:2: V005 inverted box 'cat': xmin 50 > xmax 10",
    ]
    options = LintOptions(codes=select_codes(["V00"], ["V002", "V007"]))
    assert lint(text, options=options) == ["a.xml:2: V005 inverted box 'cat': xmin 50 > xmax 10"]


# Paths --------------------------------------------------------------------------------------


def test_parallel_lint_gives_the_same_findings_in_the_same_order(tmp_path: Path) -> None:
    """--jobs splits the files over processes; the findings and their order do not change."""
    texts = [
        document(box(), box()),
        document(box(x1="60")),
        document(box(name=" "), rotated(w="-1")),
        document(polygon(*TRIANGLE), box(x2="1e300")),
        "<annotation>",
    ]
    for i in range(100):
        (tmp_path / f"{i:03d}.xml").write_text(texts[i % len(texts)], encoding="utf-8")
    serial = lint_paths([tmp_path])
    assert len(serial.findings) > 100
    assert lint_paths([tmp_path], jobs=2) == serial


def test_lint_paths_directories_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Directories are searched recursively in sorted order; files named directly are linted
    whatever their extension; a file reached twice is linted once."""
    monkeypatch.chdir(tmp_path)
    Path("labels/sub").mkdir(parents=True)
    Path("labels/b.xml").write_text(document(box(), head=HEAD.replace("a.jpg", "b.jpg")))
    Path("labels/sub/a.xml").write_text(document())
    Path("labels/notes.txt").write_text("not xml")
    Path("extra.annotation").write_text("<annotation>")
    result = lint_paths(["labels", "extra.annotation", "labels/b.xml", "labels/sub/a.xml"])
    assert result.files_checked == 3
    assert [str(f) for f in result.findings] == [
        "labels/sub/a.xml:1: V011 no <object>",
        "extra.annotation:1: V001 not well-formed XML: "
        "Premature end of data in tag annotation line 1",
    ]
    assert result.files_with_findings == 2


def test_lint_paths_refuses_a_missing_path(tmp_path: Path) -> None:
    """A path that does not exist is an input error, not a finding."""
    with pytest.raises(InputError, match="no such file or directory"):
        lint_paths([tmp_path / "nope"])


# Output forms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(LintResult((), 0), "All checks passed (0 files checked).", id="none"),
        pytest.param(LintResult((), 1), "All checks passed (1 file checked).", id="one-clean"),
        pytest.param(
            LintResult(
                (
                    Finding("a.xml", 1, "V007", "no <size>"),
                    Finding("a.xml", 2, "V011", "no <object>"),
                    Finding("b.xml", 1, "V011", "no <object>"),
                ),
                12,
            ),
            "Found 3 findings in 2 files (12 files checked).",
            id="plural",
        ),
    ],
)
def test_summary(result: LintResult, expected: str) -> None:
    """The summary counts findings, files with findings and files checked, in English."""
    assert summary(result) == expected


@pytest.mark.parametrize(
    ("finding", "expected"),
    [
        pytest.param(
            Finding("labels/a.xml", 14, "V005", "zero-area box 'RBC': xmin 5 = xmax 5"),
            "::error file=labels/a.xml,line=14,title=V005 empty-box::"
            "V005 zero-area box 'RBC': xmin 5 = xmax 5",
            id="plain",
        ),
        pytest.param(
            Finding("dir,1/a:b%.xml", 3, "V009", "unknown class '50%\nx'"),
            "::error file=dir%2C1/a%3Ab%25.xml,line=3,title=V009 unknown-class::"
            "V009 unknown class '50%25\\x0ax'",
            id="escaped",
        ),
        pytest.param(
            Finding("a\n::warning file=x.xml::forged.xml", 1, "V011", "no <object>\x1b[31m"),
            "::error file=a\\x0a%3A%3Awarning file=x.xml%3A%3Aforged.xml,line=1,"
            "title=V011 no-objects::V011 no <object>\\x1b[31m",
            id="forged-command",
        ),
    ],
)
def test_github_annotation(finding: Finding, expected: str) -> None:
    """Workflow commands escape % everywhere and : and , in properties; a line break or a
    control character of a name is a visible escape, so no second command and no colour."""
    assert github_annotation(finding) == expected


def test_to_json() -> None:
    """JSON holds the counts and every finding with its rule's name."""
    result = LintResult(
        (
            Finding("a.xml", 2, "V005", "inverted box 'cat': xmin 50 > xmax 10"),
            Finding("b.xml", 1, "V011", "no <object>"),
        ),
        3,
    )
    assert json.loads(to_json(result)) == {
        "files_checked": 3,
        "files_with_findings": 2,
        "findings": [
            {
                "path": "a.xml",
                "line": 2,
                "code": "V005",
                "name": "empty-box",
                "message": "inverted box 'cat': xmin 50 > xmax 10",
            },
            {"path": "b.xml", "line": 1, "code": "V011", "name": "no-objects", "message": "no <object>"},
        ],
    }  # fmt: skip
    assert to_json(result).endswith("}\n")


# Agreement with the evaluator's parser ------------------------------------------------------

_VALUES = ["10", "20", "35.5", "0", "-4", "", "abc", "nan", "inf", "1e400", "1e300", "120"]


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """LabelImg-like documents with values drawn from valid and broken ones, one tag a line."""

    def tag(name: str, values: list[str]) -> list[str]:
        value = draw(st.sampled_from([None, *values]))
        return [] if value is None else [f"<{name}>{value}</{name}>"]

    lines = ["<annotation>", *tag("filename", ["a.jpg", "b.png", ""])]
    if draw(st.booleans()):
        lines += ["<size>", *tag("width", _VALUES), *tag("height", _VALUES)]
        lines += [*tag("depth", ["3", "", "x"]), "</size>"]
    for _ in range(draw(st.integers(0, 3))):
        lines += ["<object>", *tag("name", ["cat", "dog", " "])]
        lines += tag("difficult", ["0", "1", "2", "", "x"])
        lines += tag("score", ["0.5", "x", "nan"])
        if draw(st.booleans()):
            lines.append("<bndbox>")
            for name in ("xmin", "ymin", "xmax", "ymax"):
                lines += tag(name, _VALUES)
            lines.append("</bndbox>")
        shape = draw(st.sampled_from([None, "robndbox", "polygon"]))
        if shape == "robndbox":
            lines.append("<robndbox>")
            for name in ("cx", "cy", "w", "h", "angle"):
                lines += tag(name, _VALUES)
            lines.append("</robndbox>")
        elif shape == "polygon":
            lines.append("<polygon>")
            for _ in range(draw(st.integers(0, 4))):
                lines += ["<pt>", *tag("x", _VALUES), *tag("y", _VALUES), "</pt>"]
            lines.append("</polygon>")
        lines.append("</object>")
    lines.append("</annotation>")
    data = "\n".join(lines).encode()
    if draw(st.integers(0, 9)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
    return data


@given(documents())
def test_lint_finds_what_the_evaluator_refuses(data: bytes) -> None:
    """Whenever the evaluator's parser rejects a file, lint has a finding at the line it names;
    so a file that passes lint can be evaluated."""
    findings = lint_bytes(data, "a.xml")
    try:
        parse_annotation(data, "a.xml", "a")
    except AnnotationError as error:
        blocking = {"V001", "V002", "V003", "V004", "V005", "V007", "V012", "V013"}
        assert any(f.line == error.line and f.code in blocking for f in findings), (error, findings)


# Rotated boxes and polygons -------------------------------------------------------------------


def rotated(name: str = "car", cx: str = "50", cy: str = "40", w: str = "20", h: str = "10") -> str:
    """One roLabelImg object on one line."""
    return (
        f"<object><type>robndbox</type><name>{name}</name><robndbox><cx>{cx}</cx><cy>{cy}</cy>"
        f"<w>{w}</w><h>{h}</h><angle>0.5</angle></robndbox></object>"
    )


def polygon(*points: tuple[str, str], name: str = "person") -> str:
    """One CVAT-style polygon object on one line."""
    pts = "".join(f"<pt><x>{x}</x><y>{y}</y></pt>" for x, y in points)
    return f"<object><name>{name}</name><polygon>{pts}</polygon></object>"


def test_the_shape_fixtures_are_clean() -> None:
    """Rotated boxes and polygons the evaluator reads are no finding (no missing <bndbox>)."""
    root = Path(__file__).resolve().parents[2] / "fixtures" / "shapes"
    assert lint_paths([root / "gt", root / "pred"]).findings == ()


TRIANGLE = (("10", "10"), ("40", "10"), ("10", "30"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(document(rotated(), polygon(*TRIANGLE)), [], id="valid"),
        pytest.param(
            document(rotated(w="-2")), ["a.xml:2: V013 <w> -2 is negative"], id="negative-width"
        ),
        pytest.param(
            document(rotated(cx="x")), ["a.xml:2: V003 <cx> is not a number: 'x'"], id="cx-text"
        ),
        pytest.param(
            document(rotated(cy="inf")), ["a.xml:2: V004 <cy> is not finite: 'inf'"], id="cy-inf"
        ),
        pytest.param(
            document(polygon(("1e300", "0"), ("5", "5"), ("0", "5"))),
            ["a.xml:2: V004 <x> 1e+300 is out of range (the limit is ±2^53)"],
            id="polygon-out-of-range",
        ),
        pytest.param(
            document(box(x2="1e300")),
            ["a.xml:2: V004 <xmax> 1e+300 is out of range (the limit is ±2^53)"],
            id="box-out-of-range",
        ),
        pytest.param(
            document(rotated().replace("<h>10</h>", "")),
            ["a.xml:2: V002 <robndbox> has no <h>"],
            id="no-height",
        ),
        pytest.param(
            document(polygon(("1", "1"), ("5", "5"))),
            ["a.xml:2: V013 <polygon> has 2 distinct points; a polygon needs at least 3"],
            id="two-points",
        ),
        pytest.param(
            document(polygon(("0", "0"), ("1", "1"), ("2", "2"))),
            ["a.xml:2: V013 <polygon> has zero area: its points lie on one line"],
            id="collinear",
        ),
        pytest.param(
            document(rotated(cx="95")),
            ["a.xml:2: V006 rotated box 'car' outside the 100x80 image: xmax 106.173 > width 100"],
            id="rotated-outside",
        ),
        pytest.param(
            document(rotated(w="0", h="0")),
            ["a.xml:2: V005 zero-area rotated box 'car': xmin 50 = xmax 50, ymin 40 = ymax 40"],
            id="rotated-zero-area",
        ),
        pytest.param(
            document(rotated(), rotated()),
            [],
            id="shapes-are-not-duplicate-checked",
        ),
    ],
)
def test_shapes_are_read_as_the_evaluator_reads_them(
    lint: Lint, text: str, expected: list[str]
) -> None:
    """A shape's refusals are the parser's own, at its line; a shape the parser reads is
    checked by its bounding box for size and image bounds."""
    assert lint(text) == expected


# The real annotation sets -------------------------------------------------------------------


def relative(result: LintResult, root: Path) -> list[str]:
    return [str(f).removeprefix(f"{root}{os.sep}") for f in result.findings]


def test_bccd() -> None:
    """BCCD: its two zero-area boxes and seven near-copies of an RBC box (IoU 0.92-0.93)."""
    root = datasets_or_skip("bccd")
    result = lint_paths([root])
    assert result.files_checked == 364
    assert relative(result, root) == [
        "BloodImage_00020.xml:182: V010 duplicate 'RBC' box: IoU 0.93 with the box at line 170",
        "BloodImage_00100.xml:38: V010 duplicate 'RBC' box: IoU 0.93 with the box at line 26",
        "BloodImage_00104.xml:170: V010 duplicate 'RBC' box: IoU 0.92 with the box at line 158",
        "BloodImage_00251.xml:98: V010 duplicate 'RBC' box: IoU 0.93 with the box at line 86",
        "BloodImage_00284.xml:26: V010 duplicate 'RBC' box: IoU 0.93 with the box at line 14",
        "BloodImage_00331.xml:38: V010 duplicate 'RBC' box: IoU 0.92 with the box at line 26",
        "BloodImage_00338.xml:163: V005 zero-area box 'RBC': xmin 504 = xmax 504, "
        "ymin 337 = ymax 337",
        "BloodImage_00343.xml:55: V005 zero-area box 'RBC': xmin 181 = xmax 181, "
        "ymin 329 = ymax 329",
        "BloodImage_00403.xml:50: V010 duplicate 'RBC' box: IoU 0.93 with the box at line 38",
    ]


def test_bccd_class_list() -> None:
    """With WBC and RBC only, each of BCCD's 361 Platelets objects is an unknown class."""
    root = datasets_or_skip("bccd")
    options = LintOptions(codes=frozenset({"V009"}), classes=frozenset({"WBC", "RBC"}))
    result = lint_paths([root], options)
    assert len(result.findings) == 361
    assert {f.message for f in result.findings} == {"unknown class 'Platelets'"}
    full = LintOptions(codes=frozenset({"V009"}), classes=frozenset({"WBC", "RBC", "Platelets"}))
    assert lint_paths([root], full).findings == ()


@pytest.mark.parametrize(
    ("name", "files"),
    [pytest.param("raccoon", 200, id="raccoon"), pytest.param("cards", 363, id="cards")],
)
def test_clean_real_sets(name: str, files: int) -> None:
    """raccoon and cards pass every rule: boxes touching the border are inside the image."""
    root = datasets_or_skip(name)
    result = lint_paths([root])
    assert (result.files_checked, result.findings) == (files, ())

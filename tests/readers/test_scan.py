"""The fast reader is layout-independent: every writer's layout in ``bench/zoo.py`` is read
on the fast path and gives the same columns and the same evaluation; and on any file, laid
out any way and holding any numbers and names, the fast reader and the parser agree (the
same columns, or the same error with its message and line). Every test runs once with the
compiled reader (``fastxml.c``) and once with the pure-Python one."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from tests.bench_scripts import bench
from tests.evaluation.test_batch import assert_identical, assert_same_columns
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.scoring import evaluate
from vocmatch.readers import scan, scan_pure
from vocmatch.readers.parse import parse_annotation, read_directory
from vocmatch.readers.scan import columns_from_annotations, read_columns
from vocmatch.render.json_report import to_json

zoo = bench("zoo")
LAYOUTS = sorted(zoo.LAYOUTS)
READERS = ["compiled", "pure"]


@pytest.fixture(scope="module", autouse=True, params=READERS)
def reader(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test once per fast reader (module-scoped: hypothesis reruns a test's body with
    its fixtures kept, and the reader is the same for every example)."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "compiled":
            if scan._compiled is None:
                pytest.skip("the compiled reader is not built (no C compiler)")
            patch.delenv(scan.PURE_READER_VARIABLE, raising=False)
        else:
            patch.setenv(scan.PURE_READER_VARIABLE, "1")
        assert scan.active_reader() == request.param
        yield request.param


@pytest.fixture(scope="module")
def written_zoo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zoo")
    for layout in LAYOUTS:
        zoo.write_layout(root / layout, layout, images=40, classes=6, pred_per_image=25, seed=5)
    return root


def test_zoo_has_the_layouts_the_benchmark_needs() -> None:
    """Seven writers' layouts, the six named tools' among them."""
    assert set(LAYOUTS) >= {"labelimg", "cvat", "roboflow", "labelstudio", "datumaro", "minified"}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_differ_in_bytes_not_in_boxes(written_zoo: Path, layout: str) -> None:
    """Each layout is really its own (the bytes differ from LabelImg's), yet the parser reads
    the same boxes from it."""
    reference = written_zoo / "labelimg"
    for side in ("gt", "pred"):
        first = sorted((written_zoo / layout / side).glob("*.xml"))[1]
        if layout != "labelimg":
            assert first.read_bytes() != (reference / side / first.name).read_bytes()
        ours = read_directory(written_zoo / layout / side)
        theirs = read_directory(reference / side)
        # Source lines, and <pose> where a writer leaves it out, differ; nothing else may.
        assert [[replace(b, line=None, pose=None) for b in a.boxes] for a in ours.annotations] == [
            [replace(b, line=None, pose=None) for b in a.boxes] for a in theirs.annotations
        ]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_is_read_on_the_fast_path(
    written_zoo: Path, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file of any writer's layout is handed to the parser (which would be several
    times slower): child order, extra and nested children, CR LF, floats written 12.0,
    a declaration or none, score first or last."""
    handed_over: list[str] = []

    def parse(data: bytes, path: str, key: str) -> Any:
        handed_over.append(path)
        return parse_annotation(data, path, key)

    monkeypatch.setattr(scan, "parse_annotation", parse)
    for side in ("gt", "pred"):
        read_columns(written_zoo / layout / side)
    assert handed_over == []


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_reads_as_the_parser_reads_it(written_zoo: Path, layout: str) -> None:
    """The fast reader's columns equal the parser's on every layout."""
    for side in ("gt", "pred"):
        folder = written_zoo / layout / side
        assert_same_columns(columns_from_annotations(read_directory(folder)), read_columns(folder))


@pytest.mark.parametrize("name", ["coco", "voc12", "default"])
def test_every_layout_gives_the_same_evaluation(written_zoo: Path, name: str) -> None:
    """On every layout the fast path equals the reference evaluator, every number and every
    per-box record; and all layouts give the same report, but for the file paths in it."""
    conventions = protocol(name)
    reports = set()
    for layout in LAYOUTS:
        folder = written_zoo / layout
        reference = evaluate(
            read_directory(folder / "gt"), read_directory(folder / "pred"), conventions
        )
        gt, pred = read_columns(folder / "gt", jobs=2), read_columns(folder / "pred", jobs=2)
        evaluation = evaluate_columns(gt, pred, conventions, keep_matches=True)
        assert_identical(reference, evaluation)
        reports.add(to_json(evaluation).replace(str(folder), "LAYOUT"))
    assert len(reports) == 1


# --- any file: the two readers agree ----------------------------------------------------

# Accepted numbers, small and large (so that a clean box has xmax >= xmin), then refused
# ones: not in the grammar (which float() would take, some of them), or not finite.
LOW = ["0", "1.5", " 7 ", "\t7\r\n", "+5", "-0", "-3.25", ".5", "5.", "007", "1e0", "0.000001"]
HIGH = ["12", "12.5", "12.0", "1e2", "1E3", "2.5e+1", " 70\n", "9" * 15]
REFUSED = [
    "0_5", "1_000", "\u0661\u0662", "\uff11\uff12", "0x10", "1 2", "1,5", "", " ", ".", "e5",
    "1e", "--1", "+-1", "nan", "NaN", "inf", "-Infinity", "1e400", "9" * 400, "\u00a012",
    "12\u2003", "1.2.3",
]  # fmt: skip
NUMBERS = LOW + HIGH + REFUSED
CLEAN_FLAGS = ["0", "1", "", " 1 "]
FLAGS = [*CLEAN_FLAGS, "2", "0.0", "x", "0_1", "nan", "\u0661"]
CLEAN_NAMES = [
    "car",
    " car ",
    "Car",
    "a b",
    "a\r\nb",
    "a\rb",
    "a\nb",
    "\r\ncar\r\n",
    "x>y",
    "\u05d0",
]
NAMES = [*CLEAN_NAMES, "a&amp;b", "a&#13;b", "a&lt;b", "\u00a0car", "", " ", "a]]>b", "a]]b"]
SPACES = ["", "\n", "\r\n", "\n\t", "\r\n  ", " "]


@st.composite
def annotation_files(draw: st.DrawFn) -> bytes:
    """A VOC file in a random layout, with random numbers, flags and names: either clean
    (every value one the parser accepts) or with any value at all."""
    clean = draw(st.booleans())
    low = st.sampled_from(LOW if clean else NUMBERS)
    high = st.sampled_from(HIGH if clean else NUMBERS)
    flags = st.sampled_from(CLEAN_FLAGS if clean else FLAGS)
    names = st.sampled_from(CLEAN_NAMES if clean else NAMES)
    newline = draw(st.sampled_from(SPACES))
    declaration = draw(
        st.sampled_from(["", '<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-8"?>\n'])
    )
    depth = draw(st.sampled_from(["3", "", " "] if clean else ["3", "", " ", "x", "3.5"]))
    header = [
        f"<filename>{draw(names)}.jpg</filename>",
        "<source><database>d</database><annotation>a</annotation></source>",
        "<owner><name>o</name></owner>",
        f"<size><width>{draw(high)}</width><height>20</height><depth>{depth}</depth></size>",
    ]
    header = draw(st.permutations(header))[: draw(st.integers(0, 4))]
    shared_order = draw(st.booleans())
    order: list[str] | None = None
    objects = []
    for _ in range(draw(st.integers(0, 4))):
        score_tag = draw(st.sampled_from(["score", "confidence"]))
        children = {
            "name": f"<name>{draw(names)}</name>",
            "pose": "<pose>Unspecified</pose>",
            "truncated": f"<truncated>{draw(flags)}</truncated>",
            "difficult": f"<difficult>{draw(flags)}</difficult>",
            "occluded": "<occluded>0</occluded>",
            "attributes": "<attributes><attribute><name>n</name><value>v</value>"
            "</attribute></attributes>",
            "id": "<id>7</id>",
            "score": f"<{score_tag}>{draw(low)}</{score_tag}>",
        }
        corners = [
            f"<{tag}>{draw(low if tag.endswith('min') else high)}</{tag}>"
            for tag in ("xmin", "ymin", "xmax", "ymax")
        ]
        if draw(st.booleans()):
            corners = draw(st.permutations(corners))
        children["bndbox"] = "<bndbox>" + newline.join(corners) + "</bndbox>"
        if order is None or not shared_order:
            keep = draw(st.lists(st.sampled_from(sorted(children)), unique=True))
            order = draw(st.permutations(sorted({"name", "bndbox", *keep})))
        objects.append(
            "<object>" + newline + newline.join(children[c] for c in order) + newline + "</object>"
        )
    body = newline.join(["<annotation>", *header, *objects, "</annotation>"])
    return (declaration + body + newline).encode("utf-8")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(annotation_files())
def test_fast_reader_and_parser_agree_on_any_file(data: bytes) -> None:
    """The fast reader either reads a file exactly as the parser does, or leaves it to the
    parser, so columns and errors (message and line) are always the parser's."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.xml").write_bytes(data)
        assert_same_columns(columns_from_annotations(read_directory(folder)), read_columns(folder))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(annotation_files(), annotation_files())
def test_files_read_in_turn_agree_with_the_parser(first: bytes, second: bytes) -> None:
    """The fast reader tries the previous file's header and object plans first on the next
    file: whatever the two files' layouts, the second is read exactly as the parser reads
    it (a plan matches only its own run of tags)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.xml").write_bytes(first)
        (Path(folder) / "b.xml").write_bytes(second)
        assert_same_columns(
            columns_from_annotations(read_directory(folder)), read_columns(folder, jobs=1)
        )


def test_a_remembered_plan_is_not_taken_for_another_layout() -> None:
    """After a LabelImg file, a file whose header and objects have other children gets plans
    of its own: its extra header child and its object's <occluded> are read."""
    labelimg = _labelimg_with("score", "0.5")
    other = (
        b"<annotation><filename>b.jpg</filename><size><width>9</width><height>8</height>"
        b"<depth>3</depth></size><object><name>dog</name><occluded>1</occluded><bndbox>"
        b"<xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox></object>"
        b"</annotation>"
    )
    assert scan._fast(labelimg) is not None
    read = scan._fast(other)
    assert read is not None
    assert read.header.size is not None and read.header.size.depth == 3
    assert read.occluded.tolist() == [True]
    assert read.coordinates.tolist() == [[1.0, 2.0, 3.0, 4.0]]
    assert scan._fast(labelimg) is not None  # and back


def test_the_property_reaches_the_fast_path() -> None:
    """The generator also writes files the fast reader reads itself (it does not only ever
    fall back): several objects, CR LF line ends."""
    found = find(
        annotation_files(),
        lambda d: b"\r\n" in d and d.count(b"<object>") >= 2 and scan._fast(d) is not None,
        settings=settings(max_examples=5000, database=None),
    )
    assert scan._fast(found) is not None


def _labelimg_with(tag: str, text: str) -> bytes:
    """A LabelImg-laid-out prediction file whose ``<tag>`` holds ``text`` (``<xmin>`` on
    line 12, ``<ymax>`` on line 15, ``<score>`` on line 17)."""
    values = {"xmin": "10", "ymin": "20", "xmax": "50", "ymax": "60", "score": "0.5", tag: text}
    return (
        "<annotation>\n\t<folder>f</folder>\n\t<filename>a.jpg</filename>\n"
        "\t<size>\n\t\t<width>100</width>\n\t\t<height>100</height>\n\t</size>\n"
        "\t<object>\n\t\t<name>car</name>\n\t\t<difficult>0</difficult>\n\t\t<bndbox>\n"
        f"\t\t\t<xmin>{values['xmin']}</xmin>\n\t\t\t<ymin>{values['ymin']}</ymin>\n"
        f"\t\t\t<xmax>{values['xmax']}</xmax>\n\t\t\t<ymax>{values['ymax']}</ymax>\n"
        f"\t\t</bndbox>\n\t\t<score>{values['score']}</score>\n\t</object>\n</annotation>\n"
    ).encode()


REFUSED_NUMBERS = [
    pytest.param("0_5", "is not a number", id="underscore"),
    pytest.param("1_000", "is not a number", id="thousands-underscore"),
    pytest.param("\u0661\u0662", "is not a number", id="arabic-indic-digits"),
    pytest.param("\uff11", "is not a number", id="fullwidth-digit"),
    pytest.param("0x10", "is not a number", id="hexadecimal"),
    pytest.param("1 2", "is not a number", id="space-inside"),
    pytest.param("1\t2", "is not a number", id="tab-inside"),
    pytest.param("1.2.3", "is not a number", id="two-points"),
    pytest.param("1,5", "is not a number", id="decimal-comma"),
    pytest.param("1,", "is not a number", id="trailing-comma"),
    pytest.param("\u00a012", "is not a number", id="no-break-space"),
    pytest.param("nan", "is not finite", id="nan"),
    pytest.param("-Infinity", "is not finite", id="infinity"),
    pytest.param("1e400", "is not finite", id="overflow"),
]


@pytest.mark.parametrize("tag", ["xmin", "ymax", "score"])
@pytest.mark.parametrize("text, problem", REFUSED_NUMBERS)
def test_numbers_outside_the_grammar_are_refused_alike(
    tmp_path: Path, tag: str, text: str, problem: str
) -> None:
    """A number outside the one grammar is refused with path:line and the same message by
    the fast reader, the parser and lint (V003, or V004 when not finite)."""
    from vocmatch.readers.lint import lint_paths

    line = {"xmin": 12, "ymax": 15, "score": 17}[tag]
    path = tmp_path / "a.xml"
    path.write_bytes(_labelimg_with(tag, text))
    message = f"<{tag}> {problem}: {text.strip(' ')!r}"
    parsed = read_directory(tmp_path)
    fast = read_columns(tmp_path)
    assert [(s.message, s.line) for s in parsed.skipped] == [(message, line)]
    assert [(s.message, s.line) for s in fast.skipped] == [(message, line)]
    findings = [f for f in lint_paths([path]).findings if f.code in ("V003", "V004")]
    code = "V004" if problem == "is not finite" else "V003"
    assert [(f.code, f.message, f.line) for f in findings] == [(code, message, line)]


@pytest.mark.parametrize(
    "text, value",
    [
        pytest.param(" 7 ", 7.0, id="surrounding-spaces"),
        pytest.param("\t7\r\n", 7.0, id="surrounding-tab-crlf"),
        pytest.param("+5", 5.0, id="plus-sign"),
        pytest.param(".5", 0.5, id="leading-point"),
        pytest.param("5.", 5.0, id="trailing-point"),
        pytest.param("007", 7.0, id="leading-zeros"),
        pytest.param("1e1", 10.0, id="exponent"),
        pytest.param("2.5E-1", 0.25, id="exponent-capital"),
        pytest.param("-0", -0.0, id="minus-zero"),
    ],
)
def test_numbers_in_the_grammar_read_alike(tmp_path: Path, text: str, value: float) -> None:
    """Every form the grammar allows is read, to the same value, by both readers."""
    (tmp_path / "a.xml").write_bytes(_labelimg_with("xmin", text))
    parsed = read_directory(tmp_path)
    assert parsed.annotations[0].boxes[0].x1 == value
    assert scan._fast(_labelimg_with("xmin", text)) is not None  # read on the fast path
    assert_same_columns(columns_from_annotations(parsed), read_columns(tmp_path))


@pytest.mark.parametrize(
    "tag, digits, expected",
    [
        pytest.param("width", 400, "<width> is not finite: '9…9'", id="width-over-float"),
        pytest.param("height", 309, "<height> is not finite: '9…9'", id="height-just-over"),
        pytest.param("depth", 400, "<depth> is not finite: '9…9'", id="depth-over-float"),
        pytest.param("width", 308, None, id="width-largest-run-read"),
    ],
)
def test_size_numbers_of_many_digits_are_refused_alike(
    tmp_path: Path, reader: str, tag: str, digits: int, expected: str | None
) -> None:
    """A ``<size>`` number written as a run of digits too long for a float is refused, with
    path:line, by both fast readers as by the parser (it once crashed the fast reader on
    ``<depth>`` and slipped past it on ``<width>``); a run that fits is read."""
    values = {"width": "100", "height": "100", "depth": "3", tag: "9" * digits}
    body = (
        "<annotation><filename>a.jpg</filename><size>"
        + "".join(f"<{t}>{values[t]}</{t}>" for t in ("width", "height", "depth"))
        + "</size></annotation>"
    ).encode()
    (tmp_path / "a.xml").write_bytes(body)
    parsed = read_directory(tmp_path)
    fast = read_columns(tmp_path)
    shown = [(s.message.replace("9" * digits, "9…9"), s.line) for s in fast.skipped]
    assert shown == ([] if expected is None else [(expected, 1)])
    assert [(s.message, s.line) for s in parsed.skipped] == [
        (s.message, s.line) for s in fast.skipped
    ]
    if expected is None:
        assert_same_columns(columns_from_annotations(parsed), fast)


def test_a_giant_object_is_left_to_the_parser(tmp_path: Path, reader: str) -> None:
    """An object (or header) of thousands of tags makes no plan (plans are remembered per
    process, so their size is bounded); the parser reads it, with the same columns. The
    compiled reader makes no plans: it reads such an object itself."""
    children = "".join(f"<x{i}>1</x{i}>" for i in range(600))
    body = (
        f"<annotation><extra>{children}</extra><object><name>a</name>{children}"
        "<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        "</annotation>"
    ).encode()
    assert scan._fast_pure(body) is None
    read = scan._fast(body)
    if reader == "compiled":
        assert read is not None and read.coordinates.tolist() == [[1.0, 1.0, 5.0, 5.0]]
    else:
        assert read is None
    (tmp_path / "a.xml").write_bytes(body)
    assert_same_columns(columns_from_annotations(read_directory(tmp_path)), read_columns(tmp_path))


MIXED = (
    b"<annotation><filename>a.jpg</filename>"
    b"<object><name>car</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>5</xmax><ymax>6</ymax>"
    b"</bndbox><score>0.5</score></object>\n"
    b"<object><score>0.25</score><occluded>yes</occluded><name>bus</name><pose>Left</pose>"
    b"<bndbox><ymax>9</ymax><xmax>8</xmax><ymin>3</ymin><xmin>2</xmin></bndbox></object>\n"
    b"<object><name>car</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>5</xmax><ymax>6</ymax>"
    b"</bndbox><attributes><attribute><name>x</name></attribute></attributes></object>"
    b"</annotation>"
)


def test_objects_of_different_layouts_in_one_file_are_read_on_the_fast_path(
    tmp_path: Path,
) -> None:
    """Each object is read by the plan of its own layout: child order, extra children and a
    score on some objects only, all in one file, without the parser."""
    fast = scan._fast(MIXED)
    assert fast is not None
    assert list(fast.names) == [b"car", b"bus", b"car"]
    assert fast.coordinates.tolist() == [[1, 2, 5, 6], [2, 3, 8, 9], [1, 2, 5, 6]]
    assert fast.scores[:2].tolist() == [0.5, 0.25] and math.isnan(fast.scores[2])
    assert fast.occluded.tolist() == [False, True, False]
    (tmp_path / "a.xml").write_bytes(MIXED)
    assert_same_columns(columns_from_annotations(read_directory(tmp_path)), read_columns(tmp_path))


@pytest.mark.parametrize("objects", [1, 60], ids=["small-file", "large-file"])
@pytest.mark.parametrize("control", ["\x01", "\x0b", "\x1f"], ids=["soh", "vt", "us"])
def test_a_control_character_leaves_the_file_to_the_parser(
    tmp_path: Path, objects: int, control: str
) -> None:
    """A control character (not allowed in XML 1.0) in a small or a large file (the reader
    checks the two sizes differently) is the parser's to refuse, with its line; tab, LF and
    CR are not control characters."""
    body = "".join(
        "<object><name>car</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax>"
        "<ymax>4</ymax></bndbox></object>\n"
        for _ in range(objects)
    )
    clean = f"<annotation>\n\t{body}</annotation>\r\n".encode()
    assert (len(clean) < scan_pure._SMALL_FILE) == (objects == 1)
    assert scan._fast(clean) is not None
    broken = clean.replace(b"<name>car</name>", f"<name>c{control}ar</name>".encode(), 1)
    assert scan._fast(broken) is None
    (tmp_path / "a.xml").write_bytes(broken)
    read = read_columns(tmp_path)
    assert [(s.line, "not well-formed" in s.message) for s in read.skipped] == [(2, True)]
    assert_same_columns(columns_from_annotations(read_directory(tmp_path)), read)

"""The compiled reader's two shortcuts against the pure reader and the parser.

An object whose bytes are the tags and whitespace of one of the last two objects read tag
by tag, with other texts, is read by that layout, and any other object tag by tag: whatever
a later object changes (its order, its whitespace, a child more or less, a field twice, a
shape, a broken tag), the columns and errors are those of the pure reader and the parser.
And the bytes are checked 16 at a time: a refused byte is refused wherever it falls in a
block.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.evaluation.test_batch import assert_same_columns
from vocmatch.readers import scan
from vocmatch.readers.parse import read_directory
from vocmatch.readers.scan import columns_from_annotations, read_columns

compiled = pytest.mark.skipif(scan._compiled is None, reason="the compiled reader is not built")


@contextmanager
def _reader(name: str) -> Iterator[None]:
    saved = os.environ.pop(scan.PURE_READER_VARIABLE, None)
    if name == "pure":
        os.environ[scan.PURE_READER_VARIABLE] = "1"
    try:
        yield
    finally:
        os.environ.pop(scan.PURE_READER_VARIABLE, None)
        if saved is not None:
            os.environ[scan.PURE_READER_VARIABLE] = saved


def _fast_objects(data: bytes) -> tuple[object, ...] | None:
    """What a fast reader's scan of a file gives, floats by their bits; None: the parser's."""
    read = scan._fast_compiled(data, ())
    return None if read is None else _objects(read)


def _objects(read: scan.PlainObjects) -> tuple[object, ...]:
    return (
        read.header,
        list(read.names),
        list(read.poses),
        read.coordinates.tobytes(),
        read.scores.tobytes(),
        read.difficult.tobytes(),
        read.truncated.tobytes(),
        read.occluded.tobytes(),
    )


def _assert_agree(data: bytes) -> bool:
    """The compiled reader reads the file as the pure reader and the parser do (columns,
    skipped files and messages); True if it read it itself."""
    fast = _fast_objects(data)
    pure = scan._fast_pure(data)
    if fast is not None and pure is not None:
        assert fast == _objects(pure)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.xml").write_bytes(data)
        parsed = columns_from_annotations(read_directory(folder))
        for name in ("compiled", "pure"):
            with _reader(name):
                assert_same_columns(parsed, read_columns(folder))
    return fast is not None


def _object(
    name: str = "car",
    box: tuple[str, str, str, str] = ("1", "2", "30", "40"),
    score: str | None = "0.5",
    space: str = "\n\t\t",
    inner: str = "\n\t\t\t",
    children: tuple[str, ...] = ("name", "pose", "truncated", "difficult", "bndbox", "score"),
    extra: str = "",
) -> str:
    corners = "".join(
        f"{inner}<{tag}>{value}</{tag}>"
        for tag, value in zip(("xmin", "ymin", "xmax", "ymax"), box, strict=True)
    )
    parts = {
        "name": f"<name>{name}</name>",
        "pose": "<pose>Unspecified</pose>",
        "truncated": "<truncated>0</truncated>",
        "difficult": "<difficult>0</difficult>",
        "bndbox": f"<bndbox>{corners}{space}</bndbox>",
        "score": "" if score is None else f"<score>{score}</score>",
    }
    body = "".join(space + parts[c] for c in children if parts[c]) + extra
    return f"<object>{body}\n\t</object>"


def _file(*objects: str) -> bytes:
    body = "".join("\n\t" + o for o in objects)
    return f"<annotation>\n\t<filename>a.jpg</filename>{body}\n</annotation>\n".encode()


FIRST = _object()
MANY_LEAVES = "".join(f"<a{k}>{k}</a{k}>" for k in range(40))


@compiled
@pytest.mark.parametrize(
    "data, read",
    [
        pytest.param(
            _file(FIRST, _object("dog", ("5", "6", "70", "80"), "0.25"), _object(" a b ")),
            True,
            id="same-layout-other-texts",
        ),
        pytest.param(_file(FIRST, _object(space="\n  "), FIRST), True, id="whitespace-differs"),
        pytest.param(
            _file(FIRST, _object(space="\r\n\t\t", inner="\r\n\t\t\t")), True, id="crlf-later"
        ),
        pytest.param(
            _file(FIRST, _object(children=("pose", "name", "bndbox", "truncated", "score"))),
            True,
            id="order-differs",
        ),
        pytest.param(
            _file(FIRST, _object(extra="<attributes><attribute>x</attribute></attributes>")),
            True,
            id="child-more",
        ),
        pytest.param(_file(FIRST, _object(score=None), FIRST), True, id="child-less"),
        pytest.param(
            _file(*[FIRST, _object("dog", score=None), _object("cat", score="0.1")] * 3),
            True,
            id="two-layouts-take-turns",
        ),
        pytest.param(
            _file(*[FIRST, _object(score=None), _object(space=" ")] * 20),
            True,
            id="three-layouts-take-turns",
        ),
        pytest.param(
            _file(
                *[_object(str(k), space="\n" + " " * k) for k in range(12)],
                *[_object(str(k), (str(k), "2", "30", "40")) for k in range(30)],
            ),
            True,
            id="a-layout-after-many-objects-of-their-own",
        ),
        pytest.param(
            _file(FIRST, _object(extra="<name>second</name><score>0.9</score>")),
            True,
            id="fields-twice-the-first-counts",
        ),
        pytest.param(
            _file(FIRST, _object(extra="<bndbox><xmin>0</xmin></bndbox>")),
            True,
            id="bndbox-twice",
        ),
        pytest.param(_file(FIRST, _object(name="")), False, id="empty-name-later"),
        pytest.param(_file(FIRST, _object(name="a>b"), _object(name=">")), True, id="text-with-gt"),
        pytest.param(_file(FIRST, _object(score="")), False, id="empty-score-later"),
        pytest.param(_file(FIRST, FIRST, _object(score="1e")), False, id="bad-number-later"),
        pytest.param(
            _file(FIRST, _object(box=("1", "2", "0", "40"))), False, id="xmax-below-xmin-later"
        ),
        pytest.param(
            _file(FIRST, _object(extra="<object><name>x</name></object>")),
            False,
            id="nested-object-later",
        ),
        pytest.param(
            _file(FIRST, _object(extra="<polygon><x1>0</x1></polygon>")), False, id="shape-later"
        ),
        pytest.param(
            _file(FIRST, FIRST.replace("</name>", "</nam>")), False, id="broken-end-tag-later"
        ),
        pytest.param(
            _file(FIRST, FIRST.replace("<pose>", "<pose a='1'>")), False, id="attribute-later"
        ),
        pytest.param(_file(FIRST, FIRST)[:-40], False, id="cut-in-the-last-object"),
        pytest.param(
            _file(_object(extra=MANY_LEAVES), _object(extra=MANY_LEAVES), FIRST),
            True,
            id="more-leaves-than-a-layout-holds",
        ),
        pytest.param(
            _file(FIRST, FIRST.replace("<difficult>0", "<difficult>1")),
            True,
            id="flag-changes",
        ),
        pytest.param(
            _file(FIRST, FIRST.replace("<difficult>0", "<difficult>2")), False, id="bad-flag-later"
        ),
    ],
)
def test_later_objects_that_change_are_read_as_the_parser_reads_them(
    data: bytes, read: bool
) -> None:
    """Files whose later objects change their predecessor's layout: the same columns and
    messages as the pure reader and the parser, read by the compiled reader itself where
    the parser reads them without an error and nothing in them is the parser's alone."""
    assert _assert_agree(data) == read


#: Texts of leaves: mostly plain numbers and names, with a few the parser reads otherwise.
_TEXTS = st.sampled_from(["1", "20", "300", "0.5", " 7 ", "", "x", "car", "a b", "1e400", ">"])
_SPACES = st.sampled_from(["", "\n\t\t", "\n  ", " ", "\r\n\t"])
_CHILDREN = st.permutations(["name", "pose", "truncated", "difficult", "bndbox", "score"])


#: An object's layout: the whitespace between its children and between its corners, its
#: children in order, and a child more.
Layout = tuple[str, str, tuple[str, ...], str]


@st.composite
def _layouts(draw: st.DrawFn) -> Layout:
    children = tuple(draw(_CHILDREN)[: draw(st.integers(4, 6))])
    extra = draw(st.sampled_from(["", "<occluded>1</occluded>", "<name>n</name>"]))
    return draw(_SPACES), draw(_SPACES), children, extra


@st.composite
def _files_of_repeated_layouts(draw: st.DrawFn) -> bytes:
    """Objects that mostly repeat a layout met before (the last one or an earlier one) with
    other texts."""
    layouts = [draw(_layouts())]
    layout = layouts[0]
    objects = []
    for _ in range(draw(st.integers(1, 8))):
        change = draw(st.integers(0, 5))
        if change == 0:
            layout = draw(_layouts())
            layouts.append(layout)
        elif change == 1:
            layout = draw(st.sampled_from(layouts))
        space, inner, children, extra = layout
        box = (draw(_TEXTS), draw(_TEXTS), draw(st.sampled_from(["50", "60"])), "70")
        objects.append(_object(draw(_TEXTS), box, draw(_TEXTS), space, inner, children, extra))
    return _file(*objects)


@compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_files_of_repeated_layouts())
def test_objects_of_repeated_layouts_are_read_as_the_parser_reads_them(data: bytes) -> None:
    """Objects repeating or changing the layout before them, with texts of every kind: the
    compiled reader, the pure reader and the parser agree."""
    _assert_agree(data)


#: Bytes the readers refuse (left to the parser), and one they read.
REFUSED = [
    pytest.param(b"\x01", id="control"),
    pytest.param(b"&", id="ampersand"),
    pytest.param(b"]]>", id="cdata-end"),
    pytest.param(b"\xff", id="invalid-utf8"),
    pytest.param(b"\xc3", id="cut-sequence"),
    pytest.param(b"\xef\xbf\xbe", id="u-fffe"),
    pytest.param(b"\xc3\xa9", id="e-acute-read"),
    pytest.param(b"]", id="bracket-read"),
    pytest.param(b"\x7f", id="delete-read"),
]


@compiled
@pytest.mark.parametrize("piece", REFUSED)
def test_a_byte_is_checked_wherever_it_falls_in_a_block_of_16(piece: bytes) -> None:
    """A byte the readers refuse, or one they read, put at each of 48 places of a text (so
    at every place of a 16-byte block, and in the last bytes of the file): the compiled
    reader reads or leaves the file as the pure reader does, to the same objects."""
    for cut in range(48):
        text = ("x" * cut).encode() + piece + b"y" * (48 - cut)
        for data in (
            _file(FIRST).replace(b"a.jpg", text),
            _file(FIRST).rstrip(b"\n") + b"\n" * (cut % 17) + piece,
        ):
            pure = scan._fast_pure(data)
            assert _fast_objects(data) == (None if pure is None else _objects(pure))


#: A file whose later objects are read by the layout of the first (one of them minified, and
#: the last one ending close to the end of the file, where fewer than 16 bytes follow a text).
REPEATED = (
    _file(
        FIRST,
        _object("dog", ("5", "6", "70", "80"), "0.25"),
        _object("a long name of more than sixteen bytes", ("1.0", "2.50", "30", "40")),
        _object(space="", inner=""),
        _object(space="", inner=""),
    )[: -len("\n</annotation>\n")]
    + b"</annotation>"
)


@compiled
@pytest.mark.parametrize("piece", REFUSED)
def test_a_byte_is_checked_wherever_it_falls_in_a_file_of_repeated_layouts(piece: bytes) -> None:
    """A byte the readers refuse, or one they read, put at every place of a file whose later
    objects are read by a layout (in a tag, the whitespace between tags, a text, between
    objects, in the header, at the end): the compiled reader reads or leaves the file as the
    pure reader does, to the same objects. Bytes are checked where each part is read, and
    an object read by a layout has only its texts checked: its other bytes are those of an
    object checked before."""
    assert _fast_objects(REPEATED) is not None
    for at in range(len(REPEATED) + 1):
        data = REPEATED[:at] + piece + REPEATED[at:]
        pure = scan._fast_pure(data)
        assert _fast_objects(data) == (None if pure is None else _objects(pure)), at

"""The compiled reader (``vocmatch/readers/fastxml.c``) against the pure-Python fast reader
and the parser: on generated files, hostile ones included (truncated, control characters,
NUL, a byte-order mark, references, comments, CDATA, deep nesting, invalid UTF-8, huge
numbers), the three give the same columns and the same errors; and its numbers are the
grammar's, to the bit."""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.evaluation.test_batch import assert_same_columns
from tests.readers.test_scan import annotation_files
from vocmatch.readers import scan
from vocmatch.readers.parse import read_directory, read_number
from vocmatch.readers.scan import columns_from_annotations, read_columns

compiled = pytest.mark.skipif(scan._compiled is None, reason="the compiled reader is not built")


@contextmanager
def _reader(name: str) -> Iterator[None]:
    """Read with one fast reader (hypothesis runs many examples in one test call, so the
    function-scoped monkeypatch fixture does not fit)."""
    saved = os.environ.pop(scan.PURE_READER_VARIABLE, None)
    if name == "pure":
        os.environ[scan.PURE_READER_VARIABLE] = "1"
    try:
        assert scan.active_reader() == name
        yield
    finally:
        os.environ.pop(scan.PURE_READER_VARIABLE, None)
        if saved is not None:
            os.environ[scan.PURE_READER_VARIABLE] = saved


def test_the_compiled_reader_is_built_where_a_compiler_is() -> None:
    """Installed where a C compiler works (CI, a developer's checkout), the package has its
    compiled reader; only a machine without one reads with the pure reader."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    assert scan._compiled is not None


@compiled
def test_the_switch_selects_the_pure_reader() -> None:
    """VOCMATCH_PURE_READER=1 selects the pure reader; unset or 0, the compiled one."""
    with _reader("pure"):
        assert scan.active_reader() == "pure"
    with _reader("compiled"):
        os.environ[scan.PURE_READER_VARIABLE] = "0"
        assert scan.active_reader() == "compiled"


HOSTILE = [
    b"\x00", b"\x01", b"\x0b", b"\x7f", b"\xef\xbb\xbf", b"&amp;", b"&#60;", b"&lt;", b"&",
    b"<!-- c -->", b"<![CDATA[1]]>", b"<?pi x?>", b"<!DOCTYPE a>", b"\r", b"\r\n", b"\n",
    b"<x>", b"</x>", b"<x></x>", b"<x/>", b'<b c="d">', b"<ns:a>", b"< a>", b"<object>",
    b"</object>", b"<name>", b"</name>", b"<bndbox>", b"<score>", b"<polygon>",
    b"</annotation>", b"<annotation>", b'<?xml version="1.0"?>', b"\xff", b"\xc3", b"\xc3\xa9",
    b"\xed\xa0\x80", b"\xef\xbf\xbe", b"\xf4\x90\x80\x80", b"\xe0\x80\x80", b"]]>", b"]]",
    b"1e999", b"9" * 400, b"-", b".", b"e", b"0" * 30 + b"1", b" ", b"\t",
]  # fmt: skip
DECLARATIONS = [
    b'<?xml version="1.0"?>', b"<?xml version='1.0' encoding='UTF8' standalone='no' ?>",
    b'<?xml version = "1.0" encoding="utf-8"?>', b'<?xml version="1.1"?>', b"<?xml?>",
    b'<?xml version="1.0" encoding="latin-1"?>', b'<?xml version="1.0\'?>', b"<?xml-x?>",
    b'<?xml \x7fversion="1.0"?>', b'<?xml version="1.0" standalone="maybe"?>', b"<?xml ",
    b' <?xml version="1.0"?>', b'<?xml version="1.0" encoding="utf-16"?>',
]  # fmt: skip


@st.composite
def hostile_files(draw: st.DrawFn) -> bytes:
    """A generated file, then a few edits anywhere: a hostile piece inserted, a slice cut,
    the end cut off, a byte-order mark or another declaration in front, or many levels of
    nesting around a part."""
    data = draw(annotation_files())
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["insert", "insert", "cut", "truncate", "bom", "nest", "declare"])
        )
        at = draw(st.integers(0, len(data)))
        if kind == "insert":
            data = data[:at] + draw(st.sampled_from(HOSTILE)) + data[at:]
        elif kind == "cut":
            data = data[:at] + data[at + draw(st.integers(1, 12)) :]
        elif kind == "truncate":
            data = data[:at]
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
        elif kind == "declare":
            data = draw(st.sampled_from(DECLARATIONS)) + data.split(b"?>", 1)[-1]
        else:
            tags = [i for i in range(len(data)) if data[i : i + 1] == b"<"]
            if len(tags) >= 2:
                start, stop = sorted(draw(st.lists(st.sampled_from(tags), min_size=2, max_size=2)))
                levels = draw(st.sampled_from([1, 2, 63, 64, 65, 200]))
                data = (
                    data[:start] + b"<d>" * levels + data[start:stop] + b"</d>" * levels
                    + data[stop:]
                )  # fmt: skip
    return data


def _same_objects(a: scan.PlainObjects, b: scan.PlainObjects) -> None:
    assert a.header == b.header
    assert list(a.names) == list(b.names) and list(a.poses) == list(b.poses)
    for x, y in [
        (a.coordinates, b.coordinates),
        (a.scores, b.scores),
        (a.difficult, b.difficult),
        (a.truncated, b.truncated),
        (a.occluded, b.occluded),
    ]:
        assert x.tobytes() == y.tobytes()  # to the bit: NaN where absent, the sign of zero


@compiled
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(annotation_files(), hostile_files()))
def test_compiled_pure_and_parser_agree_on_any_file(data: bytes) -> None:
    """Whatever the bytes, the compiled reader, the pure reader and the parser give the same
    columns and the same errors (message and line); where both fast readers read the file
    themselves, their objects are the same to the bit."""
    fast = scan._fast_compiled(data, ())
    pure = scan._fast_pure(data)
    if fast is not None and pure is not None:
        _same_objects(fast, pure)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.xml").write_bytes(data)
        parsed = columns_from_annotations(read_directory(folder))
        for name in ("compiled", "pure"):
            with _reader(name):
                assert_same_columns(parsed, read_columns(folder))


@compiled
def test_the_compiled_reader_reads_what_the_pure_reader_reads_on_clean_files() -> None:
    """On clean generated files the compiled reader leaves no file to the parser that the
    pure reader reads itself (it is no slower on any of them)."""

    @settings(max_examples=300, deadline=None, database=None)
    @given(annotation_files())
    def check(data: bytes) -> None:
        if scan._fast_pure(data) is not None:
            assert scan._fast_compiled(data, ()) is not None

    check()


@compiled
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            b"<annotation><filename>a.jpg</filename><size><width>640</width>"
            b"<height>480</height><depth>3</depth></size></annotation>\n",
            id="header-only",
        ),
        pytest.param(
            b'<?xml version="1.0"?>\n<annotation verified="yes">\n\t<folder>f</folder>\n'
            b"</annotation>",
            id="declared-verified-no-size",
        ),
        pytest.param(b"<annotation></annotation>", id="empty-root"),
    ],
)
def test_the_compiled_reader_reads_files_without_objects(data: bytes) -> None:
    """A file without objects (an image with nothing in it) is read by the compiled reader,
    not left to the parser, with the parser's header and no objects."""
    fast = scan._fast_compiled(data, ())
    assert fast is not None
    assert len(fast.names) == 0 and fast.coordinates.shape == (0, 4)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.xml").write_bytes(data)
        parsed = read_directory(folder).annotations[0]
    assert fast.header == scan.FileHeader(parsed.filename, parsed.size)


@compiled
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"<annotation></annotation>x", id="text-after-the-root"),
        pytest.param(b"<annotation><size><width>1</width></size></annotation>", id="no-height"),
        pytest.param(b"<annotation><a></annotation></a>", id="mismatched"),
        pytest.param(b"<annotation></annotationx>", id="another-end-tag"),
    ],
)
def test_files_without_objects_the_parser_reads_otherwise_are_left_to_it(data: bytes) -> None:
    """A file without objects that is not plain, or that the parser refuses, is still left
    to the parser."""
    assert scan._fast_compiled(data, ()) is None


def _grammar(text: str) -> float | None:
    try:
        return read_number(text)
    except ValueError:
        return None


def _bits(value: float | None) -> bytes | None:
    return None if value is None else struct.pack("<d", value)


#: The bytes a number holds, and a few more.
NUMBER_BYTES = "0123456789+-.eE \t\r\n_,x"


@compiled
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=NUMBER_BYTES, max_size=24))
def test_compiled_numbers_are_the_grammar(text: str) -> None:
    """Any text over the bytes a number holds (and a few more): the compiled reader reads
    exactly the texts of the grammar, to the same value, bit for bit."""
    assert _compiled_number(text) == _bits(_grammar(text))


def _compiled_number(text: str) -> bytes | None:
    assert scan._compiled is not None
    return _bits(scan._compiled.read_number(text.encode()))


#: Numbers of every length: ``[+-]?[0-9]{0,25}(\.[0-9]{0,25})?([eE][+-]?[0-9]{1,4})?``.
LONG_NUMBER = re.compile(r"[+-]?[0-9]{0,25}(\.[0-9]{0,25})?([eE][+-]?[0-9]{1,4})?")


def _digits(least: int, most: int) -> st.SearchStrategy[str]:
    return st.text(alphabet="0123456789", min_size=least, max_size=most)


#: The texts of LONG_NUMBER, built part by part: the same texts st.from_regex draws, drawn in
#: a third of the time (the regex strategy spent most of this test's run).
_SIGN = st.sampled_from(["", "+", "-"])
LONG_NUMBERS = st.tuples(
    _SIGN,
    _digits(0, 25),
    st.just("") | _digits(0, 25).map(".".__add__),
    st.just("") | st.tuples(st.sampled_from("eE"), _SIGN, _digits(1, 4)).map("".join),
).map("".join)


@compiled
@settings(max_examples=500, deadline=None)
@given(LONG_NUMBERS)
def test_compiled_numbers_of_every_length_round_as_float_does(text: str) -> None:
    """Long mantissas, long fractions, exponents near the ends of the float range: the
    compiled reader's value is float()'s (its exact fast path and its general path meet)."""
    assert LONG_NUMBER.fullmatch(text)
    assert _compiled_number(text) == _bits(_grammar(text))


@compiled
@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 20))
def test_compiled_numbers_read_back_written_floats(value: float, digits: int) -> None:
    """Floats as writers print them (shortest repr, fixed and exponent forms) read back as
    float() reads them."""
    for text in _written(value, digits):
        assert _compiled_number(text) == _bits(float(text))


def _written(value: float, digits: int) -> tuple[str, str, str]:
    return repr(value), f"{value:.{digits}f}", f"{value:.{digits}e}"


# The three properties above shrink a failure to its smallest text; the sweeps below draw
# many more texts of the same kinds from a seeded generator, thousands a second, so that
# rare texts are met on every run and not only across many.


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choices(NUMBER_BYTES, k=rng.randint(0, 24)))


def _random_long_number(rng: random.Random) -> str:
    """A text of LONG_NUMBER, its parts of every length."""

    def digits(least: int, most: int) -> str:
        return "".join(rng.choices("0123456789", k=rng.randint(least, most)))

    sign = rng.choice(["", "+", "-"])
    fraction = rng.choice(["", "." + digits(0, 25)])
    exponent = rng.choice(["", rng.choice("eE") + rng.choice(["", "+", "-"]) + digits(1, 4)])
    return sign + digits(0, 25) + fraction + exponent


def _random_float(rng: random.Random) -> float:
    """Any finite float, drawn by its 64 bits: subnormals, huge and tiny as often as not."""
    while True:
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(value):
            return float(value)


def _misread(texts: list[str], expected: Callable[[str], float | None]) -> list[str]:
    return [t for t in texts if _compiled_number(t) != _bits(expected(t))]


@compiled
@pytest.mark.parametrize("seed", range(3))
def test_compiled_numbers_sweep_as_the_properties_do(seed: int) -> None:
    """20,000 texts over the number bytes, 20,000 numbers of every length and 5,000 floats
    written three ways each, per seed: read as the grammar (and float()) read them."""
    rng = random.Random(seed)
    texts = [_random_text(rng) for _ in range(20_000)]
    assert _misread(texts, _grammar) == []
    long_numbers = [_random_long_number(rng) for _ in range(20_000)]
    assert all(LONG_NUMBER.fullmatch(text) for text in long_numbers)
    assert _misread(long_numbers, _grammar) == []
    written = [t for _ in range(5_000) for t in _written(_random_float(rng), rng.randint(0, 20))]
    assert _misread(written, float) == []


@compiled
@pytest.mark.parametrize(
    "text, value",
    [
        pytest.param("9007199254740993", 9007199254740992.0, id="above-2**53-rounds-to-even"),
        pytest.param("0.1", 0.1, id="tenth"),
        pytest.param("1e22", 1e22, id="largest-exact-power"),
        pytest.param("1e23", 1e23, id="first-inexact-power"),
        pytest.param("-0.0", -0.0, id="minus-zero"),
        pytest.param("1e-400", 0.0, id="underflow"),
        pytest.param("1e400", math.inf, id="overflow"),
        pytest.param("0e99999999999", 0.0, id="zero-huge-exponent"),
        pytest.param("2.2250738585072011e-308", 2.225073858507201e-308, id="subnormal-edge"),
    ],
)
def test_compiled_numbers_at_the_edges(text: str, value: float) -> None:
    """Exact values at the edges of the fast path and of the float range."""
    assert _compiled_number(text) == _bits(value)


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param(b"", id="no-objects"),
        pytest.param(
            b"<object><name>car</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax>"
            b"<ymax>4</ymax></bndbox></object>",
            id="with-an-object",
        ),
    ],
)
@pytest.mark.parametrize("pure", [pytest.param("0", id="compiled"), pytest.param("1", id="pure")])
def test_a_text_node_past_the_parsers_limit_is_refused_by_every_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, objects: bytes, pure: str
) -> None:
    """A file with a text node longer than libxml2's limit is skipped with the parser's
    message whichever reader is active: the fast readers leave files past the limit to it."""
    if pure == "0" and scan._compiled is None:
        pytest.skip("the compiled reader is not built")
    monkeypatch.setenv(scan.PURE_READER_VARIABLE, pure)
    (tmp_path / "long.xml").write_bytes(
        b"<annotation><filename>" + b"x" * (scan.PARSER_TEXT_LIMIT + 1) + b"</filename>"
        + objects + b"</annotation>"
    )  # fmt: skip
    columns = read_columns(tmp_path)
    assert [(s.message, s.line) for s in columns.skipped] == [
        ("refusing a document over the parser's limits: Text node too long", 1)
    ]

"""The JSON report's image rows (``ImageRows``): the compiled writer
(``vocmatch.render.fastjson.image_rows``) and the Python one give, for every image, the text
the encoder gives its record, names escaped as ``json.dumps`` escapes them
(``ensure_ascii``), and rows they cannot write exactly are the encoder's, errors too."""

from __future__ import annotations

import enum
import json
import math
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.compiled import PURE_ENGINE_VARIABLE, kernels
from vocmatch.evaluation.result import ImageResult, SweepResult
from vocmatch.render.json_report import FASTJSON, ImageRows, _image, dumps_indented

#: The encoder of each row (as dumps_indented's, no NaN).
ENCODE = json.JSONEncoder(allow_nan=False).encode
SWEEP = (0.5, 0.75, 0.95)
SEPARATOR = ",\n    "


@pytest.fixture
def fast() -> ModuleType:
    module = kernels(FASTJSON)
    if module is None:
        pytest.skip("the compiled JSON writer is not built (or VOCMATCH_PURE_ENGINE is set)")
    return module


def _image_of(
    key: Any = "a",
    pred_path: Any = "pred/a.xml",
    counts: tuple[Any, ...] = (3, 0, 2, 1, 1, 2, 0),
    mean_iou: Any = 0.5,
    sweep: Any = None,
) -> ImageResult:
    gt, gt_ignored, pred, tp, fp, fn, pred_ignored = counts
    if sweep is None:
        sweep = tuple(SweepResult(t, tp, fp, fn) for t in SWEEP)
    return ImageResult(
        key, f"gt/{key}.xml", pred_path, gt, gt_ignored, pred, tp, fp, fn, mean_iou, sweep,
        pred_ignored=pred_ignored,
    )  # fmt: skip


def _expected(images: list[ImageResult], separator: str = SEPARATOR) -> str:
    """The rows as the encoder writes the records."""
    return separator.join(ENCODE(_image(i)) for i in images)


def _both(images: list[ImageResult], monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The rows as written with the compiled writer (where loaded) and without it."""
    compiled = ImageRows(images).joined(SEPARATOR).decode("ascii")
    with monkeypatch.context() as patch:
        patch.setenv(PURE_ENGINE_VARIABLE, "1")
        python = ImageRows(images).joined(SEPARATOR).decode("ascii")
    return compiled, python


NAMES = [
    pytest.param("plain_01", '"plain_01"', id="printable-ascii"),
    pytest.param('say "hi"', r'"say \"hi\""', id="quotes"),
    pytest.param("a\\b", r'"a\\b"', id="backslash"),
    pytest.param("\b\f\n\r\t", r'"\b\f\n\r\t"', id="short-escapes"),
    pytest.param("\x00\x01\x1b\x1f", r'"\u0000\u0001\u001b\u001f"', id="other-controls"),
    pytest.param("\x7f", r'"\u007f"', id="delete"),
    pytest.param("caf\u00e9 \u009b \u202e", r'"caf\u00e9 \u009b \u202e"', id="latin1-c1-bidi"),
    pytest.param("\u65e5\u672c", r'"\u65e5\u672c"', id="cjk"),
    pytest.param("\U0001f600", r'"\ud83d\ude00"', id="astral-surrogate-pair"),
    pytest.param("\U0010ffff", r'"\udbff\udfff"', id="last-code-point"),
    pytest.param("bad\udcff", r'"bad\udcff"', id="lone-surrogate-from-bytes"),
    pytest.param("", '""', id="empty"),
]


@pytest.mark.parametrize("name, text", NAMES)
def test_names_are_escaped_as_json_dumps_escapes_them(
    fast: ModuleType, name: str, text: str
) -> None:
    """Quotes, backslashes, controls, DEL, non-ASCII, astral and lone surrogates: the
    compiled writer's text is json.dumps' (ensure_ascii)."""
    assert json.dumps(name) == text
    row = ImageRows([_image_of(key=name, pred_path=name)]).joined(SEPARATOR).decode("ascii")
    assert row == _expected([_image_of(key=name, pred_path=name)])
    assert f'"image": {text}, "gt_path": ' in row
    assert f'"pred_path": {text}, ' in row


NUMBERS = [
    pytest.param((0, 0, 0, 0, 0, 0, 0), None, id="zeros-no-mean"),
    pytest.param((2**63 - 1, -(2**63), 1, 2, 3, 4, 5), 1.0, id="int64-extremes"),
    pytest.param((2**63, 0, 0, 0, 0, 0, 0), 0.25, id="beyond-int64"),
    pytest.param((-(2**63) - 1, 0, 0, 0, 0, 0, 0), 0.25, id="below-int64"),
    pytest.param((10**30, 1, 1, 1, 1, 1, 1), 0.1, id="big-int"),
    pytest.param((True, 1, 1, 1, 1, 1, 1), 0.1, id="bool-count"),
    pytest.param((1, 1, 1, 1, 1, 1, 1), 5e-324, id="subnormal-mean"),
    pytest.param((1, 1, 1, 1, 1, 1, 1), -0.0, id="negative-zero-mean"),
    pytest.param((1, 1, 1, 1, 1, 1, 1), 1e16, id="exponent-mean"),
    pytest.param((1, 1, 1, 1, 1, 1, 1), 1 / 3, id="third-mean"),
    pytest.param((1, 1, 1, 1, 1, 1, 1), True, id="bool-mean"),
    pytest.param((1, 1, 1, 1, 1, 1, 1), 1, id="int-mean"),
]


@pytest.mark.parametrize("counts, mean_iou", NUMBERS)
def test_numbers_are_written_as_the_encoder_writes_them(
    counts: tuple[Any, ...], mean_iou: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts at and beyond the int64 range, bools, and means of every layout: the
    encoder's text, with and without the compiled writer."""
    images = [_image_of(counts=counts, mean_iou=mean_iou), _image_of(key="b")]
    compiled, python = _both(images, monkeypatch)
    assert compiled == python == _expected(images)


class _Float(float):
    """A float subclass: the encoder writes it with float.__repr__."""


SWEEPS = [
    pytest.param((), id="no-sweep"),
    pytest.param((SweepResult(0.5, 1, 1, 2),), id="shorter-sweep"),
    pytest.param(tuple(SweepResult(t, 1, 1, 2) for t in (0.5, 0.75, 0.9)), id="other-threshold"),
    pytest.param(tuple(SweepResult(t, 1, 1, 2) for t in (0.75, 0.5, 0.95)), id="other-order"),
    pytest.param([SweepResult(t, 1, 1, 2) for t in SWEEP], id="a-list"),
    pytest.param(tuple(SweepResult(t, True, 1, 2) for t in SWEEP), id="bool-count"),
    pytest.param(tuple(SweepResult(_Float(t), 1, 1, 2) for t in SWEEP), id="float-subclass"),
    pytest.param(tuple(SweepResult(t, 10**20, 1, 2) for t in SWEEP), id="big-count"),
]


@pytest.mark.parametrize("sweep", SWEEPS)
def test_a_sweep_unlike_the_first_images_is_the_encoders(
    sweep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image whose sweep differs from the first image's (thresholds, their order, their
    number, its type, its counts) is written from its record: the encoder's text."""
    images = [_image_of(), _image_of(key="b", sweep=sweep), _image_of(key="c")]
    compiled, python = _both(images, monkeypatch)
    assert compiled == python == _expected(images)


@pytest.mark.parametrize(
    "thresholds",
    [
        pytest.param((0.5, 0.5000000001), id="two-thresholds-one-name"),
        pytest.param((0.9000000000000001, 0.5555), id="linspace-and-long"),
        pytest.param((), id="empty"),
    ],
)
def test_the_first_images_sweep_sets_the_rows(
    thresholds: tuple[float, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the first image's sweep (two thresholds of one name: the mapping keeps the
    last), every row is the encoder's text."""
    images = [
        _image_of(key=k, sweep=tuple(SweepResult(t, i, 1, 2) for i, t in enumerate(thresholds)))
        for k in "abc"
    ]
    compiled, python = _both(images, monkeypatch)
    assert compiled == python == _expected(images)


@pytest.mark.parametrize(
    "image, error",
    [
        pytest.param(_image_of(mean_iou=math.nan), ValueError, id="nan-mean"),
        pytest.param(_image_of(mean_iou=math.inf), ValueError, id="inf-mean"),
        pytest.param(_image_of(counts=(np.int64(1), 0, 0, 0, 0, 0, 0)), TypeError, id="int64"),
        pytest.param(_image_of(key=b"bytes"), TypeError, id="bytes-key"),
        pytest.param(object(), AttributeError, id="not-an-image"),
    ],
)
def test_what_the_encoder_refuses_is_refused_alike(
    image: Any, error: type[Exception], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row the encoder cannot write raises the encoder's error, with and without the
    compiled writer, first or not."""
    with pytest.raises(error) as python:
        ENCODE(_image(image))
    for rows in (ImageRows([_image_of(), image]), ImageRows([image, _image_of()])):
        with pytest.raises(error) as compiled:
            rows.joined(SEPARATOR)
        assert str(compiled.value) == str(python.value)
        with monkeypatch.context() as patch:
            patch.setenv(PURE_ENGINE_VARIABLE, "1")
            with pytest.raises(error) as pure:
                rows.joined(SEPARATOR)
        assert str(pure.value) == str(python.value)


def test_image_rows_are_one_line_each_in_the_indented_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In dumps_indented the rows are a list of one image a line, indented at their place;
    an empty one is ``[]``; the same text as the records'."""
    images = [_image_of(), _image_of(key="b\n", pred_path=None, mean_iou=None)]
    data = {"outer": {"images": ImageRows(images), "none": ImageRows([])}}
    records = {"outer": {"images": [_image(i) for i in images], "none": []}}
    from vocmatch.render.json_report import Record

    expected = dumps_indented(
        {"outer": {"images": [Record(r) for r in records["outer"]["images"]], "none": []}}
    )
    assert dumps_indented(data) == expected
    assert json.loads(expected) == json.loads(json.dumps(records))
    assert '    "images": [\n      {"image": "a", ' in expected
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert dumps_indented(data) == expected


_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_INT = st.integers(-(2**64), 2**64) | st.integers(0, 50)
_MEAN = st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.floats(0, 1)


@st.composite
def _images(draw: st.DrawFn) -> ImageResult:
    counts = tuple(draw(_INT) for _ in range(7))
    sweep = tuple(SweepResult(t, draw(_INT), draw(_INT), draw(_INT)) for t in SWEEP)
    return ImageResult(
        draw(_TEXT), draw(_TEXT), draw(st.none() | _TEXT), *counts[:6], draw(_MEAN), sweep,
        pred_ignored=counts[6],
    )  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_images(), max_size=5), st.sampled_from([", ", SEPARATOR, ""]))
def test_any_images_rows_are_the_encoders_text(images: list[ImageResult], separator: str) -> None:
    """Random names (any code point, lone surrogates too), counts in and beyond the int64
    range and any finite mean: each row is the encoder's text of the record, with and
    without the compiled writer."""
    expected = _expected(images, separator)
    assert ImageRows(images).joined(separator) == expected.encode("ascii")
    module = kernels(FASTJSON)
    if module is not None and images:
        # Called directly, so that no path around the compiled writer hides a difference.
        sweep = tuple((t, json.dumps(f"{t:.2f}")) for t in SWEEP)
        assert module.image_rows(images, separator, sweep, lambda i: ENCODE(_image(i))) == (
            expected.encode("ascii")
        )


def test_image_rows_refuse_arguments_they_cannot_use(fast: ModuleType) -> None:
    """Wrong arguments are a TypeError, not a crash or wrong text."""
    sweep = ((0.5, '"0.50"'),)
    with pytest.raises(TypeError):
        fast.image_rows([_image_of()], ", ")
    with pytest.raises(TypeError):
        fast.image_rows(3, ", ", sweep, str)
    with pytest.raises(TypeError):
        fast.image_rows([_image_of()], "\u00e9", sweep, str)
    with pytest.raises(TypeError):
        fast.image_rows([_image_of()], ", ", [(0.5, '"0.50"')], str)
    with pytest.raises(TypeError):
        fast.image_rows([_image_of()], ", ", (("0.5", '"0.50"'),), str)
    # A fallback's row must be ASCII text.
    with pytest.raises(TypeError):
        fast.image_rows([object()], ", ", sweep, lambda i: "\u00e9")
    with pytest.raises(TypeError):
        fast.image_rows([object()], ", ", sweep, lambda i: 3)


CURVES = [
    pytest.param([True, False, True], [0.9, 0.8, 0.7], 4, [0, 2], id="rise-first"),
    pytest.param([False, True, False, False], [0.9, 0.8, 0.7, 0.6], 2, [1, 3], id="fp-first"),
    pytest.param([False, False], [0.9, 0.8], 2, [1], id="no-rise"),
    pytest.param([True], [0.9], 1, [0], id="one-point"),
    pytest.param([True, False], [0.9, 0.8], 0, [1], id="no-gt-nan-recall"),
    pytest.param([True, True], [0.9, -math.inf], 2, [0, 1], id="unscored-last"),
    pytest.param([], [], 3, [], id="empty"),
]


@pytest.mark.parametrize("hits, scores, n_gt, points", CURVES)
def test_curve_corners_are_each_rise_and_the_last_point(
    hits: list[bool], scores: list[float], n_gt: int, points: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The curve's corners: where recall rises (above 0 at the first point) and the last
    point; written alike as arrays (to_json) and as lists (to_json_dict), with and without
    the compiled writer."""
    from vocmatch.core.ap import precision_recall_curve
    from vocmatch.render.json_report import _curve_corners

    curve = precision_recall_curve(hits, scores, n_gt=n_gt)
    lists = _curve_corners(curve)
    arrays = _curve_corners(curve, arrays=True)
    expected = {
        "recall": [None if math.isnan(v) else v for v in curve.recall[points].tolist()],
        "precision": curve.precision[points].tolist(),
        "scores": [v if math.isfinite(v) else None for v in curve.scores[points].tolist()],
    }
    assert json.loads(dumps_indented(lists)) == expected
    assert dumps_indented(arrays) == dumps_indented(lists)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    assert dumps_indented(arrays) == dumps_indented(lists)


class _Subclass(ImageResult):
    """A subclass (its own type, with a __dict__)."""


class _Renamed(ImageResult):
    """A subclass whose ``key`` is a property: read by name, not from the slot."""

    @property  # type: ignore[misc]
    def key(self) -> str:  # type: ignore[override]
        return "renamed"


class _Traced(ImageResult):
    """A subclass that answers every attribute itself."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        return value * 2 if name == "gt" else value


class _Duck:
    """No ImageResult at all: the same attributes, as a plain object."""

    def __init__(self, image: ImageResult) -> None:
        for name in ImageResult.__slots__:
            setattr(self, name, getattr(image, name))


def _copy(cls: type[ImageResult], key: str) -> ImageResult:
    """An image of ``cls`` with its slots set (as a frozen dataclass sets them)."""
    image = _image_of(key=key)
    copy = object.__new__(cls)
    for name in ImageResult.__slots__:
        getattr(ImageResult, name).__set__(copy, getattr(image, name))
    return copy


def test_rows_of_any_image_type_are_read_as_python_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Subclasses, a property over a slot, a __getattribute__ of its own, plain objects
    with the attributes, and more types than the writer keeps: each row has the values
    Python reads, as the encoder writes them."""
    images: list[Any] = [
        _image_of(key="a"), _copy(_Subclass, "b"), _copy(_Renamed, "c"), _copy(_Traced, "d"),
        _Duck(_image_of(key="e")), _image_of(key="f"),
    ]  # fmt: skip
    compiled, python = _both(images, monkeypatch)
    assert compiled == python == _expected(images)
    assert '"image": "renamed"' in compiled
    assert '"image": "d", "gt_path": "gt/d.xml", "pred_path": "pred/a.xml", "gt": 6,' in compiled


def test_an_image_with_a_slot_not_set_is_refused_as_the_encoder_refuses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A slot without a value is the encoder's AttributeError, not a crash or a null."""
    unset = object.__new__(ImageResult)
    with pytest.raises(AttributeError, match="key"):
        ImageRows([_image_of(), unset]).joined(SEPARATOR)
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, "1")
    with pytest.raises(AttributeError, match="key"):
        ImageRows([_image_of(), unset]).joined(SEPARATOR)


class _Level(enum.IntEnum):
    LOW = 1


class _Name(str):
    """A str subclass."""


SCALARS = [
    pytest.param(True, id="true"),
    pytest.param(False, id="false"),
    pytest.param(None, id="null"),
    pytest.param(-(2**70), id="big-int"),
    pytest.param(_Level.LOW, id="int-enum"),
    pytest.param(0.1, id="float"),
    pytest.param(-0.0, id="negative-zero"),
    pytest.param(1e16, id="float-exponent"),
    pytest.param(_Float(2.5), id="float-subclass"),
    pytest.param('caf\u00e9\n"\\\U0001f600\udcff', id="str-to-escape"),
    pytest.param(_Name("sub\u00e9"), id="str-subclass"),
]


@pytest.mark.parametrize("value", SCALARS)
def test_scalars_and_keys_are_written_as_json_dumps_writes_them(value: Any) -> None:
    """Each plain value (and a key of any str type) in the indented JSON: json.dumps' text."""
    data = {"value": value, _Name("k\u00e9y"): [value, {"x": value}]}
    assert dumps_indented(data) == json.dumps(data, indent=2) + "\n"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_a_float_that_is_not_finite_is_the_encoders_error(value: float) -> None:
    """A value JSON cannot hold is refused with the encoder's own error."""
    with pytest.raises(ValueError) as encoder:
        ENCODE(value)
    with pytest.raises(ValueError) as written:
        dumps_indented({"value": value})
    assert str(written.value) == str(encoder.value)


@settings(deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text(max_size=8))
def test_any_scalar_is_json_dumps_text(value: Any) -> None:
    """Any finite float, int or str value: json.dumps' text."""
    assert dumps_indented({"v": value}) == json.dumps({"v": value}, indent=2) + "\n"

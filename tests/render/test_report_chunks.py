"""The report as bytes (:func:`vocmatch.render.outputs.render_chunks`): the pieces a file of
the report is written from hold exactly the bytes of its text, for every format, with and
without the compiled JSON writer, and the command line writes those bytes on stdout and to
``-o`` alike."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import ROOT, run_cli
from vocmatch.compiled import PURE_ENGINE_VARIABLE
from vocmatch.errors import MissingPredictionWarning
from vocmatch.evidence.run_report import EvalReport
from vocmatch.render.json_report import (
    FloatArray,
    FloatList,
    ImageRows,
    Record,
    dumps_chunks,
    dumps_indented,
)
from vocmatch.render.outputs import FORMATS, render_chunks, render_text
from vocmatch.run.evaluate import evaluate

DEMO = ROOT / "fixtures" / "demo"
ENGINES = [pytest.param("", id="compiled"), pytest.param("1", id="python")]


def _demo(**options: object) -> EvalReport:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingPredictionWarning)
        return evaluate(str(DEMO / "gt"), str(DEMO / "pred"), **options)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="default"),
        pytest.param({"protocol": "coco"}, id="coco"),
        pytest.param({"analysis": True}, id="analysis"),
    ],
)
@pytest.mark.parametrize("output_format", FORMATS)
def test_the_pieces_are_the_texts_bytes(
    output_format: str, options: dict[str, object], engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every format's pieces joined are its text encoded as UTF-8, each piece bytes."""
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, engine)
    report = _demo(**options)
    chunks = render_chunks(report, output_format)  # type: ignore[arg-type]
    assert all(type(chunk) is bytes for chunk in chunks)
    assert b"".join(chunks) == render_text(report, output_format).encode()  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ENGINES)
def test_json_pieces_are_json_dumps_text_of_the_data(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Float lists, image rows, records and names outside ASCII, around and between the
    compiled writer's pieces: the ASCII text of ``json.dumps(..., indent=2)`` with the
    lists and rows on one line each."""
    monkeypatch.setenv(PURE_ENGINE_VARIABLE, engine)
    from vocmatch.evaluation.result import ImageResult, SweepResult

    image = ImageResult(
        "caf\u00e9", "gt/caf\u00e9.xml", None, 1, 0, 1, 1, 0, 0, 0.75,
        (SweepResult(0.5, 1, 0, 0),), pred_ignored=0,
    )  # fmt: skip
    data = {
        "\u65e5": FloatList(np.array([0.1, 1 / 3])),
        "curve": FloatArray(np.array([1e16, -0.0])),
        "images": ImageRows([image, image]),
        "none": ImageRows([]),
        "record": Record({"name": "bad\udcff"}),
        "tail": [1, None, 2.5],
    }
    chunks = dumps_chunks(data)
    text = b"".join(chunks).decode("ascii")
    assert text == dumps_indented(data)
    assert text.endswith("\n")
    parsed = json.loads(text)
    assert parsed["\u65e5"] == [0.1, 1 / 3]
    assert parsed["curve"] == [1e16, -0.0]
    assert [row["image"] for row in parsed["images"]] == ["caf\u00e9", "caf\u00e9"]
    assert parsed["record"] == {"name": "bad\udcff"}
    assert '  "images": [\n    {"image": "caf\\u00e9", ' in text


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="default"),
        pytest.param(["--protocol", "coco"], id="coco"),
        pytest.param(["--errors"], id="errors"),
    ],
)
def test_stdout_and_the_report_file_hold_the_same_bytes(tmp_path: Path, args: list[str]) -> None:
    """``--format json`` on stdout and with ``-o``: the report's text, byte for byte."""
    base = ["eval", str(DEMO / "gt"), str(DEMO / "pred"), *args, "--format", "json"]
    code, out, err = run_cli(*base)
    target = tmp_path / "report.json"
    file_code, file_out, file_err = run_cli(*base, "-o", str(target))
    assert (code, file_code) == (0, 0)
    assert "street_05" in err and "street_05" in file_err
    assert out.encode() == target.read_bytes()
    assert json.loads(out)["summary"]["images"] == 6
    assert "Summary" in file_out


class _TextWriter:
    """A compiled writer as built from an older source: the same text, as str."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def float_list(self, values: Any) -> str:
        return str(self.module.float_list(values).decode("ascii"))

    def image_rows(self, *args: Any) -> str:
        return str(self.module.image_rows(*args).decode("ascii"))


def test_a_writer_giving_text_gives_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """An extension built before it wrote bytes (its lists and rows as str): the report's
    pieces are the same bytes, not a failure to join them."""
    import vocmatch.render.json_report as json_report

    module = json_report.kernels(json_report.FASTJSON)
    if module is None:
        pytest.skip("the compiled JSON writer is not built")
    report = _demo(protocol="coco")
    expected = b"".join(render_chunks(report, "json"))
    monkeypatch.setattr(json_report, "kernels", lambda name: _TextWriter(module))
    assert b"".join(render_chunks(report, "json")) == expected
    assert render_text(report, "json").encode() == expected

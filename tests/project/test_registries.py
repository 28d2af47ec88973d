"""Each kind of name is registered once and every door reads the registry: the prediction
formats (choices, checks, hints), the protocols and the output formats."""

from __future__ import annotations

from typing import get_args

import click
import pytest

import vocmatch
from tests.conftest import ROOT
from vocmatch.cli.app import main
from vocmatch.core.protocol import COCO_IOU_THRESHOLDS, PRESETS, PROTOCOL_NAMES, iou_thresholds
from vocmatch.errors import Message, Option
from vocmatch.readers.formats import PRED_FORMATS, PREDICTION_FORMATS, PredFormat
from vocmatch.readers.unpaired import no_pairs_reason

#: A file each format writes, as the unpaired-files hint is expected to recognise it.
EXAMPLE_FILES = {
    "coco": "results.json",
    "yolo": "img1.txt",
    "voc-results": "comp4_det_test_car.txt",
    "txt": "img1.txt",
}


def command_choices(command: str, param: str) -> set[str]:
    """The choices a command's option offers."""
    found = main.get_command(click.Context(main), command)
    assert found is not None
    (option,) = (p for p in found.params if p.name == param)
    assert isinstance(option.type, click.Choice)
    return set(option.type.choices)


def test_the_prediction_formats_type_names_every_record() -> None:
    assert get_args(PredFormat) == PRED_FORMATS
    assert all(name == record.name for name, record in PREDICTION_FORMATS.items())


@pytest.mark.parametrize("command", ["eval", "diff", "suspects"])
def test_every_prediction_format_is_offered_by_the_command_line(command: str) -> None:
    assert command_choices(command, "pred_format") == set(PRED_FORMATS)


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in PRED_FORMATS])
def test_every_prediction_format_is_accepted_by_the_library(name: str) -> None:
    request = vocmatch.EvalRequest(gt="gt", pred="pred", pred_format=name)  # type: ignore[arg-type]
    assert request.pred_format == name


def test_an_unregistered_prediction_format_is_refused_by_the_library() -> None:
    with pytest.raises(vocmatch.RequestError) as caught:
        vocmatch.EvalRequest(gt="gt", pred="pred", pred_format="kitti")  # type: ignore[arg-type]
    assert caught.value.field == "pred_format"
    assert ", ".join(sorted(PRED_FORMATS)) in str(caught.value)


def test_every_format_but_xml_is_known_to_the_unpaired_files_hint() -> None:
    assert set(EXAMPLE_FILES) == set(PRED_FORMATS) - {"voc"}


@pytest.mark.parametrize(
    ("name", "file"), [pytest.param(name, file, id=name) for name, file in EXAMPLE_FILES.items()]
)
def test_a_folder_of_a_formats_files_names_the_format(name: str, file: str) -> None:
    """A prediction folder holding a format's files, read as XML, names that format."""
    reason = no_pairs_reason(["a"], [], "pred", [file])
    assert isinstance(reason, Message)
    assert Option("pred_format", name) in reason.parts


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            ["comp4_det_test_car.txt"],
            "pred holds VOC devkit result files ('comp4_det_test_car.txt'), not XML: use "
            "pred_format='voc-results'",
            id="voc-results",
        ),
        pytest.param(
            ["a.TXT", "b.txt"],
            "pred holds .txt files ('a.TXT', 'b.txt'), not XML: YOLO predictions? use "
            "pred_format='yolo' names; or class-named boxes in pixels? use pred_format='txt'",
            id="yolo",
        ),
        pytest.param(
            ["r.json"],
            "pred holds JSON ('r.json'), not XML: COCO results? use pred_format='coco' with "
            "the file as pred",
            id="coco",
        ),
    ],
)
def test_the_unpaired_files_hint_reads_as_before(files: list[str], expected: str) -> None:
    assert no_pairs_reason(["a"], [], "pred", files) == expected


def test_the_protocol_names_are_the_presets() -> None:
    assert tuple(sorted(preset.name for preset in PRESETS)) == PROTOCOL_NAMES
    assert len(set(PROTOCOL_NAMES)) == len(PRESETS)
    assert all(vocmatch.protocol(preset.name) == preset.conventions for preset in PRESETS)


@pytest.mark.parametrize("command", ["eval", "diff"])
def test_every_protocol_is_offered_by_the_command_line(command: str) -> None:
    assert command_choices(command, "protocol_name") == set(PROTOCOL_NAMES)


def test_the_protocol_help_names_every_preset() -> None:
    from vocmatch.cli.options import protocol_help

    assert all(f" {preset.name}" in protocol_help() for preset in PRESETS)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0.5:0.95:0.05", id="coco"),
        pytest.param("0.1:0.9:0.1", id="tenths"),
        pytest.param("0.3:0.3:0.1", id="one"),
        pytest.param("0.05:1:0.05", id="twentieths"),
        pytest.param("0.5:0.95:0.15", id="fourth"),
    ],
)
def test_threshold_ranges_are_numpys_linspace_bit_for_bit(text: str) -> None:
    """Ranges are built without numpy, to the same values as pycocotools' np.linspace."""
    import numpy as np

    start, stop, step = (float(part) for part in text.split(":"))
    count = int(np.round((stop - start) / step)) + 1
    assert iou_thresholds(text) == tuple(float(v) for v in np.linspace(start, stop, count))
    coco = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1)
    assert tuple(float(v) for v in coco) == COCO_IOU_THRESHOLDS


def test_the_output_formats_type_names_every_renderer() -> None:
    from vocmatch.render.outputs import FORMATS, RENDERERS, OutputFormat

    assert get_args(OutputFormat) == FORMATS
    assert all(name == renderer.name for name, renderer in RENDERERS.items())


def test_merge_offers_every_format_eval_offers() -> None:
    from vocmatch.render.outputs import FORMATS

    assert command_choices("eval", "output_format") == set(FORMATS)
    assert command_choices("merge", "output_format") == command_choices("eval", "output_format")


def test_the_report_format_help_names_every_renderer() -> None:
    from vocmatch.cli.options import REPORT_FORMAT_HELP
    from vocmatch.render.outputs import RENDERERS

    assert all(f"{name}: " in REPORT_FORMAT_HELP for name in RENDERERS)


def test_an_unknown_output_format_is_refused_with_the_known_ones() -> None:
    from vocmatch.render.outputs import render_text

    with pytest.raises(ValueError, match="expected one of table, json, csv, markdown, junit"):
        render_text(None, "html")  # type: ignore[arg-type]


def table_names(page: str, header: str) -> list[str]:
    """The first-column names (in backticks) of the table of ``docs/page`` whose header's
    first cell is ``header``."""
    lines = (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"| {header} |")))
    names = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names.append(line.split("|")[1].strip().split("`")[1])
    return names


def test_the_docs_tables_list_every_registered_name() -> None:
    """The pages that describe each protocol, prediction format and output format have one
    row for each, and none for a name that is not registered."""
    from vocmatch.render.outputs import FORMATS

    assert sorted(table_names("conventions.md", "preset")) == sorted(PROTOCOL_NAMES)
    assert table_names("inputs.md", "`--pred-format`") == list(PRED_FORMATS)
    assert table_names("outputs.md", "`--format`") == list(FORMATS)

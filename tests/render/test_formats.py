"""The file formats: CSV, Markdown and JUnit XML of the demo set, compared with golden files.

Refresh the golden files with ``pytest --update-goldens`` and review the diff.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ROOT
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.result import ImageResult, SweepResult
from vocmatch.evaluation.scoring import Evaluation, evaluate, evaluate_directories
from vocmatch.evidence.gate_records import parse_gate
from vocmatch.evidence.gates import GateReport, check_gates
from vocmatch.readers.parse import AnnotationSet
from vocmatch.render.csv_report import to_csv_classes, to_csv_images
from vocmatch.render.json_report import (
    NumberList,
    Record,
    _image,
    _ImageLines,
    dumps_indented,
    to_json,
    to_json_dict,
)
from vocmatch.render.junit import to_junit
from vocmatch.render.markdown import MARKDOWN_MAX_IMAGES, to_markdown

Golden = Callable[[str, str], None]

#: The gates of the golden Markdown and JUnit files: two pass, one fails on its value, one
#: fails because the metric is undefined; street_01 is over max-fp, street_05 over max-fn.
GATES = ("map=0.5", "person:recall=0.9", "car:recall=0.9", "truck:recall=0.5")


@pytest.fixture
def demo_eval(monkeypatch: pytest.MonkeyPatch) -> Evaluation:
    """The demo set read by relative paths, so the golden files hold no machine's paths."""
    monkeypatch.chdir(ROOT)
    return evaluate_directories("fixtures/demo/gt", "fixtures/demo/pred")


@pytest.fixture
def demo_gates(demo_eval: Evaluation) -> GateReport:
    return check_gates(demo_eval, [parse_gate(t) for t in GATES], max_fp=1, max_fn=1)


def one_image(key: str, name: str) -> Evaluation:
    gt = AnnotationSet("gt", (ImageAnnotation(key, f"gt/{key}.xml", (Box(name, 0, 0, 9, 9),)),), ())
    pred = AnnotationSet(
        "pred",
        (ImageAnnotation(key, f"pred/{key}.xml", (Box(name, 50, 50, 59, 59, score=0.5),)),),
        (),
    )
    return evaluate(gt, pred)


def test_csv_images_golden(demo_eval: Evaluation, golden: Golden) -> None:
    """One row per image, sorted by key, as tests/golden/demo.csv."""
    golden("demo.csv", to_csv_images(demo_eval))


def test_csv_classes_golden(demo_eval: Evaluation, golden: Golden) -> None:
    """One row per class, sorted by name, as tests/golden/demo_classes.csv."""
    golden("demo_classes.csv", to_csv_classes(demo_eval))


def test_markdown_golden(demo_eval: Evaluation, demo_gates: GateReport, golden: Golden) -> None:
    """Summary, classes and gates, as tests/golden/demo.md."""
    golden("demo.md", to_markdown(demo_eval, demo_gates))


def test_markdown_coco_golden(golden: Golden, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under coco the summary names mAP@[.50:.95] and the 12 COCO numbers follow."""
    monkeypatch.chdir(ROOT)
    evaluation = evaluate_directories("fixtures/demo/gt", "fixtures/demo/pred", protocol("coco"))
    golden("demo_coco.md", to_markdown(evaluation))


def test_junit_golden(demo_eval: Evaluation, demo_gates: GateReport, golden: Golden) -> None:
    """A test case per gate and per image, as tests/golden/demo.junit.xml."""
    golden("demo.junit.xml", to_junit(demo_eval, demo_gates))


def test_csv_images_reads_back(demo_eval: Evaluation) -> None:
    """The image CSV parses with the csv module; floats round-trip and None is empty."""
    rows = list(csv.DictReader(io.StringIO(to_csv_images(demo_eval))))
    assert [r["image"] for r in rows] == [i.key for i in demo_eval.images]
    for row, image in zip(rows, demo_eval.images, strict=True):
        assert int(row["tp"]) == image.tp
        assert int(row["fp"]) == image.fp
        assert int(row["fn"]) == image.fn
        mean_iou = float(row["mean_iou"]) if row["mean_iou"] else None
        assert mean_iou == image.mean_iou
        assert [int(row[f"fn@{s.threshold:.2f}"]) for s in image.sweep] == [
            s.fn for s in image.sweep
        ]
    assert rows[4]["pred_path"] == ""  # street_05 has no prediction file


def test_csv_classes_reads_back(demo_eval: Evaluation) -> None:
    """The class CSV parses back to the class results; undefined values are empty."""
    rows = list(csv.DictReader(io.StringIO(to_csv_classes(demo_eval))))
    assert [r["name"] for r in rows] == [c.name for c in demo_eval.classes]
    for row, cls in zip(rows, demo_eval.classes, strict=True):
        for column, value in (("precision", cls.precision), ("recall", cls.recall),
                              ("f1", cls.f1), ("ap", cls.ap)):  # fmt: skip
            assert (float(row[column]) if row[column] else None) == value
        assert row["in_map"] == ("true" if cls.in_map else "false")


def test_csv_quotes_awkward_names() -> None:
    """Commas, quotes and newlines in keys and names are quoted, not split."""
    evaluation = one_image('a,"b"', "traffic, light")
    rows = list(csv.reader(io.StringIO(to_csv_images(evaluation))))
    assert rows[1][:2] == ['a,"b"', 'gt/a,"b".xml']
    rows = list(csv.reader(io.StringIO(to_csv_classes(evaluation))))
    assert rows[1][0] == "traffic, light"


def test_markdown_without_gates_has_no_gate_section(demo_eval: Evaluation) -> None:
    """Without any gate or limit the Markdown ends after the class table's legend."""
    text = to_markdown(demo_eval)
    assert "Quality gates" not in text
    assert to_markdown(demo_eval, check_gates(demo_eval)) == text
    assert to_markdown(demo_eval, check_gates(demo_eval, max_fp=9)).startswith(text)


def test_markdown_escapes_names() -> None:
    """Pipes, underscores and brackets in class names cannot break the table."""
    text = to_markdown(one_image("a", "x|y_[z]"))
    assert "| x\\|y\\_\\[z\\] | 1 | 1 | 0 | 1 | 1 | 0.0000 | 0.0000 | 0.0000 | 0.0000 |" in text


def test_markdown_caps_the_failing_images(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MARKDOWN_MAX_IMAGES failing images the list ends with a count."""
    n = MARKDOWN_MAX_IMAGES + 3
    annotations = tuple(
        ImageAnnotation(f"img{k:03d}", f"gt/img{k:03d}.xml", (Box("cat", 0, 0, 9, 9),))
        for k in range(n)
    )
    evaluation = evaluate(AnnotationSet("gt", annotations, ()), AnnotationSet("pred", (), ()))
    text = to_markdown(evaluation, check_gates(evaluation, max_fn=0))
    last = text.splitlines()[-1]
    assert last.startswith("Images over a limit: img000 (fn 1 > max-fn 0); ")
    assert last.endswith("img019 (fn 1 > max-fn 0), and 3 more.")
    assert "| max-fn 0 per image | 23 of 23 images over | **fail** |" in text


def test_junit_is_well_formed_with_exact_counts(
    demo_eval: Evaluation, demo_gates: GateReport
) -> None:
    """The XML parses; 4 gates + 6 images = 10 tests, of which 2 gates and 2 images fail."""
    root = ET.fromstring(to_junit(demo_eval, demo_gates))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures"), element.get("errors")) == (
            "10", "4", "0",
        )  # fmt: skip
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("vocmatch.gates", "map >= 0.5"),
        ("vocmatch.gates", "person:recall >= 0.9"),
        ("vocmatch.gates", "car:recall >= 0.9"),
        ("vocmatch.gates", "truck:recall >= 0.5"),
        *(("vocmatch.images", f"street_0{n}") for n in range(1, 7)),
    ]
    failures = {
        c.get("name"): (f.get("type"), f.get("message"))
        for c in cases
        if (f := c.find("failure")) is not None
    }
    assert failures == {
        "car:recall >= 0.9": ("fail-under", "car:recall 0.7500 < 0.9000"),
        "truck:recall >= 0.5": (
            "fail-under",
            "truck:recall undefined, needs >= 0.5000 (no ground truth of this class)",
        ),
        "street_01": ("max-fp", "fp 2 > max-fp 1"),
        "street_05": ("max-fn", "fn 2 > max-fn 1"),
    }


def test_junit_without_gates_passes_every_image(demo_eval: Evaluation) -> None:
    """Without gates there is one passing test case per image."""
    suite = ET.fromstring(to_junit(demo_eval)).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("6", "0")
    assert suite.find("testcase/failure") is None


def test_junit_marks_an_image_over_both_limits(demo_eval: Evaluation) -> None:
    """An image over both limits has one failure naming both, with its FPs and FNs."""
    xml = to_junit(demo_eval, check_gates(demo_eval, max_fp=0, max_fn=0))
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("6", "5")
    failure = suite.find("testcase[@name='street_03']/failure")
    assert failure is not None
    assert failure.get("type") == "max-fp,max-fn"
    assert failure.get("message") == "fp 1 > max-fp 0; fn 1 > max-fn 0"
    assert failure.text == (
        "gt 4, pred 4, tp 3, fp 1, fn 1\n"
        "gt file: fixtures/demo/gt/street_03.xml\n"
        "pred file: fixtures/demo/pred/street_03.xml\n"
        "fp: truck#2, best IoU 0.000, score 0.71\n"
        "fn: car#2, best IoU 0.000"
    )


@pytest.mark.parametrize(
    ("key", "name"),
    [
        pytest.param('a<b>&"c"', 'a<b>&"c"', id="markup"),
        pytest.param("x\x01y", "x\x01y", id="control-character"),
        pytest.param("ünïcode/ключ", "ünïcode/ключ", id="unicode"),
    ],
)
def test_junit_escapes_names(key: str, name: str) -> None:
    """Any key parses back; characters XML cannot hold are shown as escapes (``\\x01``)."""
    evaluation = one_image(key, "cat")
    xml = to_junit(evaluation, check_gates(evaluation, max_fp=0))
    case = ET.fromstring(xml.encode("utf-8")).find("testsuite/testcase")
    assert case is not None
    assert case.get("name") == name.replace("\x01", "\\x01")


def test_formats_are_deterministic(demo_eval: Evaluation, demo_gates: GateReport) -> None:
    """The same evaluation always gives the same text, and a fresh evaluation too."""
    again = evaluate_directories("fixtures/demo/gt", "fixtures/demo/pred")
    again_gates = check_gates(again, [parse_gate(t) for t in GATES], max_fp=1, max_fn=1)
    assert to_csv_images(demo_eval) == to_csv_images(again)
    assert to_csv_classes(demo_eval) == to_csv_classes(again)
    assert to_markdown(demo_eval, demo_gates) == to_markdown(again, again_gates)
    assert to_junit(demo_eval, demo_gates) == to_junit(again, again_gates)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.text(max_size=5)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)
_NO_NUMBER_LISTS = st.recursive(
    st.none() | st.booleans() | st.text(max_size=5) | st.integers(),
    lambda inner: (
        st.lists(
            st.text(max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
            max_size=3,
        )
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_JSON)
def test_indented_json_reads_back(data: object) -> None:
    """Whatever the nesting, the writer's output reads back as the same data."""
    assert json.loads(dumps_indented(data)) == data


@given(_NO_NUMBER_LISTS)
def test_indented_json_is_json_dumps_indent_2_without_number_lists(data: object) -> None:
    """Without number lists or records to keep on one line, the layout is exactly
    ``json.dumps(indent=2)``'s."""
    assert dumps_indented(data) == json.dumps(data, indent=2) + "\n"


def test_indented_json_keeps_numbers_and_records_on_one_line() -> None:
    """Lists of numbers and records are one line each; other lists are indented."""
    data = {"curve": NumberList([1.0, 0.5]), "mixed": [1, "a"], "rows": [Record(a=1, b=None)]}
    assert dumps_indented(data) == (
        '{\n  "curve": [1.0, 0.5],\n  "mixed": [\n    1,\n    "a"\n  ],\n'
        '  "rows": [\n    {"a": 1, "b": null}\n  ]\n}\n'
    )
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps_indented({"x": [float("nan")]})


@given(
    key=st.text(),
    pred_path=st.none() | st.text(),
    counts=st.lists(st.integers(0, 10**15), min_size=8, max_size=8),
    mean_iou=st.none() | st.floats(0, 1),
    thresholds=st.lists(st.sampled_from([0.5, 0.55, 0.75, 0.9000000000000001, 0.5555]), max_size=4),
)
def test_image_lines_are_the_text_of_the_records(
    key: str, pred_path: str | None, counts: list[int], mean_iou: float | None,
    thresholds: list[float],
) -> None:  # fmt: skip
    """The line written for an image is the text the encoder gives its record: names of any
    characters, no prediction file, no mean IoU, any sweep (two thresholds of one name too)."""
    gt, gt_ignored, pred, tp, fp, fn, pred_ignored, more = counts
    sweep = tuple(SweepResult(t, tp + i, fp, fn + more) for i, t in enumerate(thresholds))
    image = ImageResult(
        key, f"gt/{key}.xml", pred_path, gt, gt_ignored, pred, tp, fp, fn, mean_iou, sweep,
        pred_ignored=pred_ignored,
    )  # fmt: skip
    assert dumps_indented([_ImageLines()(image)]) == dumps_indented([_image(image)])


def test_image_lines_keep_a_template_per_sweep() -> None:
    """One writer over images of different sweeps (and a mean IoU that is not a plain float)
    writes each as the encoder writes its record."""
    lines = _ImageLines()
    images = [
        ImageResult("a", "gt/a.xml", None, 3, 0, 2, 1, 1, 2, 0.5, (SweepResult(0.5, 1, 1, 2),)),
        ImageResult("b", "gt/b.xml", "p/b.xml", 1, 1, 1, 1, 0, 0, None, ()),
        ImageResult("c", "gt/c.xml", "p/c.xml", 2, 0, 2, 2, 0, 0, 0.75,
                    (SweepResult(0.5, 2, 0, 0), SweepResult(0.75, 1, 1, 1))),
        ImageResult("d", "gt/d.xml", None, 3, 0, 2, 1, 1, 2, 0.5, (SweepResult(0.5, 1, 1, 2),)),
        ImageResult("e", "gt/e.xml", None, 3, 0, 2, True, 1, 2, 0.5, (SweepResult(0.5, 1, 1, 2),)),
    ]  # fmt: skip
    assert [dumps_indented([lines(i)]) for i in images] == [
        dumps_indented([_image(i)]) for i in images
    ]


@pytest.mark.parametrize("name", ["default", "coco", "voc07"])
def test_json_is_the_indented_json_of_its_data(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """to_json writes image lines directly: the text is still that of to_json_dict's data."""
    monkeypatch.chdir(ROOT)
    evaluation = evaluate_directories("fixtures/demo/gt", "fixtures/demo/pred", protocol(name))
    assert to_json(evaluation) == dumps_indented(to_json_dict(evaluation))


@pytest.mark.parametrize("batch", [2, 7, 50_000])
def test_indented_json_joined_in_batches_is_the_same_text(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fragments joined a batch at a time (bounded memory on large results) give the same
    text, whatever the batch."""
    from vocmatch.render import json_report as formats

    data = {"a": [{"b": [1, "x"], "c": NumberList([1.5])}] * 5, "d": Record(e=1), "f": {}}
    expected = json.dumps(json.loads(dumps_indented(data)))
    monkeypatch.setattr(formats, "_BATCH", batch)
    assert json.dumps(json.loads(dumps_indented(data))) == expected
    assert dumps_indented(data).endswith("}\n")


def test_json_confusion_lists_its_cells_and_rows_while_few(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With --errors the JSON's confusion matrix has every cell that is not zero as
    [row, column, count], and the full rows only up to CONFUSION_ROWS_MAX names."""
    from vocmatch.evaluation.scoring import read_pair
    from vocmatch.evidence.analysis import error_analysis
    from vocmatch.render import json_report as formats

    gt, pred = read_pair(ROOT / "fixtures" / "demo" / "gt", ROOT / "fixtures" / "demo" / "pred")
    evaluation = evaluate(gt, pred)
    analysis = error_analysis(evaluation, gt, pred)
    data = json.loads(to_json(evaluation, analysis))["confusion"]
    dense = analysis.confusion.counts
    assert data["counts"] == dense.tolist()
    assert data["cells"] == [
        [r, c, int(dense[r, c])]
        for r in range(dense.shape[0])
        for c in range(dense.shape[1])
        if dense[r, c]
    ]
    monkeypatch.setattr(formats, "CONFUSION_ROWS_MAX", 5)
    assert json.loads(to_json(evaluation, analysis))["confusion"]["counts"] is None

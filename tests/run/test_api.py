"""The public API: ``vocmatch.evaluate`` does all of ``vocmatch eval`` but the output, its
report renders to the command line's bytes, ``import vocmatch`` stays light, every public
name is documented with an example, and diff and suspects read every input eval reads."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vocmatch
from tests.bench_scripts import bench
from tests.conftest import FIXTURES, ROOT, run_cli, street_05_unpredicted
from vocmatch.cli.console import option_words
from vocmatch.errors import RequestError
from vocmatch.evaluation.class_map import ClassChoice, class_map
from vocmatch.render.outputs import TableOptions, render_table, render_text
from vocmatch.run.evaluate import EvalRequest, evaluate

DEMO_GT = FIXTURES / "demo" / "gt"
DEMO_PRED = FIXTURES / "demo" / "pred"
PROTOCOLS = ["default", "voc07", "voc12", "coco"]
PRED_FORMATS = ["voc", "coco", "yolo", "voc-results", "txt"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo predictions written in every format by bench/convert.py."""
    out = tmp_path_factory.mktemp("formats")
    bench("convert").convert(DEMO_GT, DEMO_PRED, out)
    return out


def inputs_of(pred_format: str, out: Path) -> tuple[list[str], dict[str, object]]:
    """The command line's arguments after GT_DIR for a format, and the request's fields."""
    if pred_format == "voc":
        return [str(DEMO_PRED)], {"pred": DEMO_PRED}
    if pred_format == "coco":
        results, gt_json = out / "coco" / "results.json", out / "coco" / "gt.json"
        args = [str(results), "--pred-format", "coco", "--coco-gt", str(gt_json)]
        return args, {"pred": results, "pred_format": "coco", "coco_gt": gt_json}
    if pred_format == "yolo":
        names = out / "yolo" / "classes.txt"
        args = [str(out / "yolo"), "--pred-format", "yolo", "--names", str(names)]
        return args, {"pred": out / "yolo", "pred_format": "yolo", "names": names}
    if pred_format == "txt":
        args = [str(out / "txt-xywh"), "--pred-format", "txt", "--box-format", "xywh"]
        return args, {"pred": out / "txt-xywh", "pred_format": "txt", "box_format": "xywh"}
    assert pred_format == "voc-results", pred_format
    folder = out / "voc-results"
    return [str(folder), "--pred-format", "voc-results"], {
        "pred": folder,
        "pred_format": "voc-results",
    }


def warned_if_files_missing(
    pred_format: str,
) -> contextlib.AbstractContextManager[object]:
    """The demo's street_05 has no prediction file in the formats of a file per image (XML,
    YOLO, txt): the library warns, as the command line notes; a COCO results file or the devkit's
    class files leave no image without a file."""
    if pred_format in ("voc", "yolo", "txt"):
        return street_05_unpredicted()
    return contextlib.nullcontext()


@pytest.mark.parametrize("protocol_name", PROTOCOLS)
@pytest.mark.parametrize("pred_format", PRED_FORMATS)
def test_library_gives_the_command_lines_json(
    converted: Path, pred_format: str, protocol_name: str
) -> None:
    """For every prediction format and protocol, the library's report renders to the very
    JSON `vocmatch eval --format json` prints."""
    args, fields = inputs_of(pred_format, converted)
    code, out, _ = run_cli(str(DEMO_GT), *args, "--protocol", protocol_name, "--format", "json")
    with warned_if_files_missing(pred_format):
        report = evaluate(DEMO_GT, protocol=protocol_name, **fields)  # type: ignore[arg-type]
    assert code == 3 if report.skipped else code == 0
    assert render_text(report, "json") == out


def test_every_format_gives_the_same_numbers(converted: Path) -> None:
    """The four formats of one set of boxes give one mAP (the demo's 0.625)."""
    maps = {}
    for pred_format in PRED_FORMATS:
        fields = inputs_of(pred_format, converted)[1]
        with warned_if_files_missing(pred_format):
            report = evaluate(DEMO_GT, **fields)  # type: ignore[arg-type]
        maps[pred_format] = report.evaluation.summary.map
    assert maps == dict.fromkeys(PRED_FORMATS, 0.625)


@pytest.mark.parametrize(
    ("output_format", "extra"),
    [
        pytest.param("csv", [], id="csv"),
        pytest.param("markdown", ["--fail-under", "map=0.5"], id="markdown"),
        pytest.param("junit", ["--max-fp", "1"], id="junit"),
    ],
)
def test_every_text_format_is_the_command_lines(output_format: str, extra: list[str]) -> None:
    """CSV, Markdown and JUnit from the library equal the command line's stdout."""
    code, out, _ = run_cli(str(DEMO_GT), str(DEMO_PRED), "--format", output_format, *extra)
    gates = extra[1:] if extra[:1] == ["--fail-under"] else []
    max_fp = int(extra[1]) if "--max-fp" in extra else None
    with street_05_unpredicted():
        report = evaluate(
            DEMO_GT, DEMO_PRED, gates=gates, max_fp=max_fp, boxes=output_format == "junit"
        )
    assert render_text(report, output_format) == out  # type: ignore[arg-type]
    assert code == (1 if not report.passed else 0)


def test_table_is_the_command_lines(tmp_path: Path) -> None:
    """The plain-text table equals the report `--output FILE` writes, extras included."""
    target = tmp_path / "report.txt"
    args = ["--errors", "--bootstrap", "20", "--slice", "size", "--calibration-bins", "4"]
    code, _, _ = run_cli(str(DEMO_GT), str(DEMO_PRED), *args, "-o", str(target))
    assert code == 0
    with street_05_unpredicted():
        report = evaluate(
            DEMO_GT, DEMO_PRED, analysis=True, bootstrap=20, slices=["size"], calibration_bins=4
        )
    # In the command line's words, the table is its file; the library's own names its options.
    text = render_text(report, "table", TableOptions(errors=True, words=option_words))
    assert text == target.read_text(encoding="utf-8")
    library = render_text(report, "table", TableOptions(errors=True))
    assert library == text.replace("--write-thresholds FILE", "operating_thresholds").replace(
        "--score-thresholds FILE", "score_thresholds"
    )
    assert render_table(report, TableOptions(errors=True)) is not None


def test_request_and_keywords_give_one_report() -> None:
    """`evaluate(request)` and `evaluate(gt, pred, **fields)` are the same call."""
    request = EvalRequest(gt=DEMO_GT, pred=DEMO_PRED, protocol="voc07", iou=0.7)
    with street_05_unpredicted():
        by_request = evaluate(request)
    with street_05_unpredicted():
        by_keywords = vocmatch.evaluate(DEMO_GT, DEMO_PRED, protocol="voc07", iou=0.7)
    assert render_text(by_request, "json") == render_text(by_keywords, "json")
    assert by_request.evaluation.conventions.iou_threshold == 0.7
    with pytest.raises(TypeError, match="not both"):
        evaluate(request, DEMO_PRED)
    with pytest.raises(TypeError, match="unexpected keyword argument 'iuo'"):
        evaluate(DEMO_GT, DEMO_PRED, iuo=0.7)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        pytest.param({"protocol": "voc2012"}, "protocol", "no such protocol", id="protocol"),
        pytest.param({"gates": ["mAP>0.5"]}, "gates", "expected METRIC=VALUE", id="gate"),
        pytest.param({"names": "classes.txt"}, "names", "YOLO", id="names-without-yolo"),
        pytest.param({"pred_format": "yolo"}, "pred_format", "class names", id="yolo-no-names"),
        pytest.param({"split": "tset"}, "split", "no such file", id="split"),
    ],
)
def test_request_errors_name_the_field_not_a_flag(
    fields: dict[str, object], field: str, message: str
) -> None:
    """A request's bad field raises RequestError naming the field; no message names a
    command-line option."""
    with pytest.raises(RequestError, match=message) as caught:
        evaluate(DEMO_GT, DEMO_PRED, **fields)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert "--" not in str(caught.value)


def test_command_line_words_a_request_error_with_its_option() -> None:
    """The command line says `--split 'tset'`, where the library says `split 'tset'`."""
    code, out, err = run_cli(str(DEMO_GT), str(DEMO_PRED), "--split", "tset")
    assert (code, out) == (2, "")
    assert err.startswith("vocmatch: error: --split 'tset': no such file, and the ground")


def test_import_loads_no_heavy_library() -> None:
    """`import vocmatch` and listing its API load neither numpy, lxml nor rich; the first
    use of a name loads what it needs."""
    probe = (
        "import sys, vocmatch\n"
        "names = dir(vocmatch)\n"
        "heavy = ('numpy', 'lxml', 'rich', 'shapely', 'click')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "vocmatch.iou_matrix\n"
        "print('numpy' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.splitlines() == ["[]", "True"]


def test_every_public_name_is_documented_with_an_example() -> None:
    """Each name in `__all__` resolves, and its docstring has a summary and an example."""
    for name in vocmatch.__all__:
        if name == "__version__":
            continue
        value = getattr(vocmatch, name)
        doc = value.__doc__ or ""
        assert doc.strip(), name
        assert ">>>" in doc, f"{name} has no example"
    assert sorted(vocmatch.__all__) == sorted(["__version__", *vocmatch._WHERE])
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        vocmatch.evaluat  # noqa: B018


def test_py_typed_ships() -> None:
    """The package says it is typed (PEP 561), and pyproject ships the marker."""
    assert (ROOT / "vocmatch" / "py.typed").exists()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


# diff and suspects read what eval reads -----------------------------------------------------


def test_diff_reads_coco_results(converted: Path) -> None:
    """`diff --pred-format coco` compares two results files: the same file twice changes
    nothing."""
    results, gt_json = converted / "coco" / "results.json", converted / "coco" / "gt.json"
    code, out, err = run_cli(
        "diff", str(DEMO_GT), str(results), str(results), "--pred-format", "coco",
        "--coco-gt", str(gt_json), "--format", "json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert json.loads(out)["summary"]["map"] == {"a": 0.625, "b": 0.625, "delta": 0.0}


def test_diff_reads_yolo_with_a_score_threshold(converted: Path) -> None:
    """`diff --pred-format yolo --names` against the XML run's numbers, and a score
    threshold lowers what both runs count."""
    names = converted / "yolo" / "classes.txt"
    args = ["--pred-format", "yolo", "--names", str(names), "--format", "json"]
    yolo = str(converted / "yolo")
    code, out, _ = run_cli("diff", str(DEMO_GT), yolo, yolo, *args, "--score-threshold", "0.99")
    assert code == 0
    summary = json.loads(out)["summary"]
    with street_05_unpredicted():
        report = evaluate(DEMO_GT, DEMO_PRED, score_threshold=0.99)
    assert summary["tp"]["a"] == report.evaluation.summary.tp


@pytest.mark.parametrize("command", ["eval", "diff", "suspects"])
def test_a_results_file_where_a_folder_is_read_names_the_format(
    converted: Path, command: str
) -> None:
    """A COCO .json given where a folder is read says to give --pred-format coco."""
    results = str(converted / "coco" / "results.json")
    preds = [results, results] if command == "diff" else [results]
    code, out, err = run_cli(command, str(DEMO_GT), *preds)
    assert (code, out) == (2, "")
    assert err == (
        f"vocmatch: error: {results}: a file, not a folder: give --pred-format coco for COCO "
        "results\n"
    )


@pytest.mark.parametrize("command", ["diff", "suspects"])
def test_a_missing_prediction_path_says_so(tmp_path: Path, command: str) -> None:
    """A prediction path that does not exist: 'no such file or folder', exit 2."""
    missing = str(tmp_path / "nothing")
    preds = [str(DEMO_PRED), missing] if command == "diff" else [missing]
    code, _, err = run_cli(command, str(DEMO_GT), *preds)
    assert code == 2
    assert err == f"vocmatch: error: {missing}: no such file or folder\n"


def test_suspects_reads_voc_results(converted: Path) -> None:
    """`suspects --pred-format voc-results` finds what it finds in the XML predictions (at a
    confidence of 0.1, where the demo has two missing-box suspects: its one wrong-class
    prediction names a class its ground truth never uses, which is not suggested)."""
    low = ("--format", "json", "--confidence", "0.1")
    code, xml_out, _ = run_cli("suspects", str(DEMO_GT), str(DEMO_PRED), *low)
    folder = str(converted / "voc-results")
    code_b, out, _ = run_cli("suspects", str(DEMO_GT), folder, "--pred-format", "voc-results", *low)
    assert (code, code_b) == (0, 0)

    def found(text: str) -> list[tuple[object, ...]]:
        keys = ("kind", "image", "class", "confidence", "iou", "gt_index")
        return [tuple(s[k] for k in keys) for s in json.loads(text)["suspects"]]

    assert found(out) == found(xml_out)
    assert [(kind, image) for kind, image, *_ in found(out)] == [
        ("missing", "street_01"),
        ("missing", "street_04"),
    ]


def test_suspects_reads_a_split(tmp_path: Path) -> None:
    """`suspects --split FILE` looks only at the listed images."""
    listed = tmp_path / "some.txt"
    listed.write_text("street_01\n", encoding="utf-8")
    code, out, _ = run_cli(
        "suspects", str(DEMO_GT), str(DEMO_PRED), "--split", str(listed), "--format", "json"
    )
    assert code == 0
    assert {s["image"] for s in json.loads(out)["suspects"]} <= {"street_01"}
    assert json.loads(out)["images"] == 1


def test_a_message_keeps_its_options_across_processes() -> None:
    """A Message (and a skipped file holding one) pickles with its parts, so a reason read in
    a worker process is still worded by the command line in its flags."""
    import pickle

    from vocmatch.cli.console import in_cli_words
    from vocmatch.core.model import SkippedFile
    from vocmatch.errors import Message, Option

    message = Message("class 2 is not in ", Option("names"), " (2 classes, 0 to 1)")
    copy = pickle.loads(pickle.dumps(SkippedFile("a.txt", message, 2)))
    assert str(copy) == "a.txt:2: class 2 is not in names (2 classes, 0 to 1)"
    assert in_cli_words(str(copy)) == "a.txt:2: class 2 is not in --names (2 classes, 0 to 1)"


# Label sets: eval --mode labels as one call -------------------------------------------------


LABELS_GT, LABELS_PRED = FIXTURES / "labels" / "gt", FIXTURES / "labels" / "pred"


def voc_year_folder(root: Path) -> Path:
    """The labels fixture as a VOC year folder: Annotations/ and a test split of two images."""
    shutil.copytree(LABELS_GT, root / "Annotations")
    (root / "ImageSets" / "Main").mkdir(parents=True)
    (root / "ImageSets" / "Main" / "test.txt").write_text("sample_1\nsample_3\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("args", "fields"),
    [
        pytest.param([], {}, id="xml-folders"),
        pytest.param(["--difficult", "count"], {"difficult": "count"}, id="difficult-count"),
        pytest.param(["--difficult", "ignore"], {"difficult": "ignore"}, id="difficult-ignore"),
        pytest.param(["--fold-case"], {}, id="fold-case-always-on"),
        pytest.param(["--jobs", "1"], {"jobs": 1}, id="one-process"),
        pytest.param(["--max-file-size", "679"], {"max_file_size": 679}, id="files-skipped"),
        pytest.param(
            ["--classes", "car,boat"],
            {"class_choice": ClassChoice(classes=("car", "boat"))},
            id="classes",
        ),
        pytest.param(
            ["--classes", "AIRPLANE", "--difficult", "count"],
            {"class_choice": ClassChoice(classes=("AIRPLANE",)), "difficult": "count"},
            id="classes-any-case",
        ),
    ],
)
def test_labels_library_gives_the_command_lines_json(
    args: list[str], fields: dict[str, object]
) -> None:
    """`evaluate_labels` renders to the very JSON `eval --mode labels --format json` prints,
    for every option that mode takes (and exit 3 exactly when files were skipped)."""
    code, out, _ = run_cli(
        "--mode", "labels", "--format", "json", *args, str(LABELS_GT), str(LABELS_PRED)
    )
    found = vocmatch.evaluate_labels(LABELS_GT, LABELS_PRED, **fields)  # type: ignore[arg-type]
    assert vocmatch.render_labels_text(found, "json") == out
    assert code == (3 if found.skipped else 0)


@pytest.mark.parametrize(
    ("lines", "classes"),
    [
        pytest.param("Airplane,plane\nBoat,\n", (), id="rename-and-drop"),
        pytest.param("Airplane,plane\n", ("plane", "car"), id="then-classes"),
    ],
)
def test_labels_library_takes_the_command_lines_class_map(
    tmp_path: Path, lines: str, classes: tuple[str, ...]
) -> None:
    """A class map (and classes named after it) in a labels request gives the JSON of
    `eval --mode labels --class-map FILE --classes A,B`."""
    path = tmp_path / "map.csv"
    path.write_text(lines, encoding="utf-8")
    args = ["--class-map", str(path), *(["--classes", ",".join(classes)] if classes else [])]
    code, out, _ = run_cli(
        "--mode", "labels", "--format", "json", *args, str(LABELS_GT), str(LABELS_PRED)
    )
    choice = ClassChoice(class_map(str(path)), classes)
    found = vocmatch.evaluate_labels(LABELS_GT, LABELS_PRED, class_choice=choice)
    assert (code, vocmatch.render_labels_text(found, "json")) == (0, out)
    renamed = f"class map {path}: renamed 3 predictions of 1 class (Airplane -> plane 3)"
    assert [note for note in found.notes if note.startswith(renamed)] != []


def test_labels_library_reads_a_voc_year_folder_and_its_split(tmp_path: Path) -> None:
    """A VOC folder and a split name: the two listed images, as the command line reads them."""
    root = voc_year_folder(tmp_path / "VOC2007")
    code, out, _ = run_cli(
        "--mode", "labels", "--format", "json", "--split", "test", str(root), str(LABELS_PRED)
    )
    request = vocmatch.LabelsRequest(gt=root, pred=LABELS_PRED, split="test")
    found = vocmatch.evaluate_labels(request)
    assert (code, vocmatch.render_labels_text(found, "json")) == (0, out)
    assert [i.key for i in found.images] == ["sample_1", "sample_3"]
    assert [i.jaccard for i in found.images] == [1 / 3, 2 / 3]


@pytest.mark.parametrize("pred_format", PRED_FORMATS)
def test_labels_library_reads_every_prediction_format(converted: Path, pred_format: str) -> None:
    """COCO results, YOLO and devkit files give the command line's JSON and the XML's sets."""
    args, fields = inputs_of(pred_format, converted)
    code, out, _ = run_cli("--mode", "labels", "--format", "json", str(DEMO_GT), *args)
    found = vocmatch.evaluate_labels(DEMO_GT, **fields)  # type: ignore[arg-type]
    assert (code, vocmatch.render_labels_text(found, "json")) == (0, out)
    from_xml = vocmatch.evaluate_labels(DEMO_GT, DEMO_PRED)
    assert [(i.gt, i.pred) for i in found.images] == [(i.gt, i.pred) for i in from_xml.images]


def test_labels_request_and_keywords_give_one_result() -> None:
    """`evaluate_labels(request)` and `evaluate_labels(gt, pred, **fields)` are the same
    call, and the result is frozen."""
    request = vocmatch.LabelsRequest(gt=LABELS_GT, pred=LABELS_PRED, difficult="count")
    by_request = vocmatch.evaluate_labels(request)
    assert by_request == vocmatch.evaluate_labels(LABELS_GT, LABELS_PRED, difficult="count")
    assert (by_request.macro_iou, by_request.micro_iou) == (2 / 3, 2 / 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        by_request.macro_iou = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="not both"):
        vocmatch.evaluate_labels(request, LABELS_PRED)
    with pytest.raises(TypeError, match="needs the predictions' path"):
        vocmatch.evaluate_labels(LABELS_GT)
    with pytest.raises(TypeError, match="unexpected keyword argument 'iou'"):
        vocmatch.evaluate_labels(LABELS_GT, LABELS_PRED, iou=0.5)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        pytest.param(
            {"difficult": "crowd"},
            "difficult",
            r"^difficult 'crowd': label sets take 'ignore' or 'count' \(crowd regions are a box "
            r"convention\)$",
            id="difficult-crowd",
        ),
        pytest.param(
            {"difficult": "skip"},
            "difficult",
            r"^difficult 'skip': label sets take 'ignore' or 'count'$",
            id="difficult-unknown",
        ),
        pytest.param({"names": "classes.txt"}, "names", "YOLO", id="names-without-yolo"),
        pytest.param({"pred_format": "yolo"}, "pred_format", "class names", id="yolo-no-names"),
        pytest.param({"split": "tset"}, "split", "no such file", id="split"),
        pytest.param(
            {"class_choice": ClassChoice(agnostic=True)},
            "class_choice",
            r"^class_choice: label sets are compared class by class, not class-agnostically "
            r"\(every image's set would be one class or nothing\)$",
            id="class-agnostic",
        ),
    ],
)
def test_labels_request_errors_name_the_keyword_not_a_flag(
    fields: dict[str, object], field: str, message: str
) -> None:
    """A labels request's bad field raises RequestError naming its keyword, never a flag."""
    with pytest.raises(RequestError, match=message) as caught:
        vocmatch.evaluate_labels(LABELS_GT, LABELS_PRED, **fields)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert "--" not in str(caught.value)


def test_labels_share_classes_whatever_their_case(tmp_path: Path) -> None:
    """Label sets compare lower-cased names, so YOLO names that differ from the ground truth's
    in case only are the same classes (box evaluation refuses them without fold_case)."""
    names = tmp_path / "classes.txt"
    names.write_text("AIRPLANE\nBOAT\nCAR\n", encoding="utf-8")
    yolo = tmp_path / "yolo"
    yolo.mkdir()
    (yolo / "sample_1.txt").write_text("1 0.5 0.5 0.2 0.2\n", encoding="utf-8")
    found = vocmatch.evaluate_labels(LABELS_GT, yolo, pred_format="yolo", names=names, split=None)
    assert found.images[0].pred == ("boat",)
    assert found.images[0].jaccard == 1 / 3
    with pytest.raises(RequestError, match="no prediction class is a ground-truth class"):
        evaluate(LABELS_GT, yolo, pred_format="yolo", names=names)


@pytest.mark.parametrize(
    ("args", "options"),
    [
        pytest.param([], TableOptions(words=option_words), id="default"),
        pytest.param(
            ["--max-rows", "1", "--only-failing"],
            TableOptions(max_rows=1, only_failing=True, words=option_words),
            id="rows",
        ),
    ],
)
def test_labels_table_is_the_command_lines(
    tmp_path: Path, args: list[str], options: TableOptions
) -> None:
    """The plain-text labels table equals the report `eval --mode labels --output FILE`
    writes; in the library's own words its hints name keywords."""
    target = tmp_path / "labels.txt"
    code, _, _ = run_cli(
        "--mode", "labels", *args, "-o", str(target), str(LABELS_GT), str(LABELS_PRED)
    )
    assert code == 0
    found = vocmatch.evaluate_labels(LABELS_GT, LABELS_PRED)
    text = vocmatch.render_labels_text(found, "table", options)
    assert text == target.read_text(encoding="utf-8")
    if options.max_rows == 1:
        library = vocmatch.render_labels_text(
            found, "table", dataclasses.replace(options, words=str)
        )
        assert "(max_rows=0 shows all, only_failing=True hides perfect ones)" in library
        assert library == text.replace(
            "(--max-rows 0 shows all, --only-failing hides perfect ones)",
            "(max_rows=0 shows all, only_failing=True hides perfect ones)",
        )
    with pytest.raises(
        ValueError, match=r"^unknown format 'csv' for label sets: expected table or json$"
    ):
        vocmatch.render_labels_text(found, "csv")  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore::vocmatch.errors.MissingPredictionWarning")
@pytest.mark.parametrize(
    "where", [pytest.param({"jobs": 2}, id="jobs-2"), pytest.param({"dask": "local:2"}, id="dask")]
)
def test_the_library_renders_what_the_command_line_prints(where: dict[str, object]) -> None:
    """`vocmatch.evaluate(gt, pred, protocol="coco", jobs=2)` (or on a local Dask cluster),
    rendered as JSON, is `vocmatch eval --protocol coco --format json`, byte for byte."""
    pytest.importorskip("distributed")
    from tests.conftest import run_cli
    from vocmatch.render.outputs import render_text

    gt, pred = "fixtures/demo/gt", "fixtures/demo/pred"
    _, printed, _ = run_cli("eval", gt, pred, "--protocol", "coco", "--format", "json")
    report = vocmatch.evaluate(gt, pred, protocol="coco", **where)
    assert render_text(report, "json") == printed

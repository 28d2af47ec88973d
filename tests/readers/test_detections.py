"""Predictions from any detector: COCO results JSON, YOLO txt and VOC devkit result files are
read into the columns XML predictions give, every bad line named as path:line, and with the
same boxes they give the XML run's numbers (pycocotools' on the COCO JSON pair)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.bench_scripts import bench
from tests.conftest import datasets_or_skip
from tests.conftest import run_cli as run
from vocmatch.cli.options import PRED_FORMATS as CLI_PRED_FORMATS
from vocmatch.core.protocol import protocol
from vocmatch.errors import AnnotationError, InputError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.readers.pred_formats import PRED_FORMATS, read_class_list, read_detections
from vocmatch.readers.scan import ColumnSet, read_columns


def write_gt(
    folder: Path, images: dict[str, list[tuple[str, int, int, int, int]]], size: bool = True
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for key, boxes in images.items():
        parts = ["<annotation>", f"<filename>{key}.jpg</filename>"]
        if size:
            parts.append("<size><width>640</width><height>480</height><depth>3</depth></size>")
        for name, x1, y1, x2, y2 in boxes:
            parts.append(
                f"<object><name>{name}</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
                f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"
            )
        parts.append("</annotation>")
        (folder / f"{key}.xml").write_text("\n".join(parts), encoding="utf-8")


def boxes_of(columns: ColumnSet) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for a in columns.to_annotations().annotations:
        out[a.key] = [(b.name, b.x1, b.y1, b.x2, b.y2, b.score) for b in a.boxes]
    return out


GT = {"a": [("car", 240, 120, 400, 360)], "b": [("dog", 0, 0, 64, 48)]}


def test_formats_listed_in_the_cli_are_the_readers() -> None:
    """--help shows the formats without importing the readers: the two lists agree."""
    assert CLI_PRED_FORMATS == PRED_FORMATS


# COCO -----------------------------------------------------------------------------------


def coco_pair(tmp_path: Path, records: list[str]) -> tuple[Path, Path]:
    gt_json = tmp_path / "gt.json"
    gt_json.write_text(
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "sub/b.png"}],
                "categories": [{"id": 3, "name": "car"}, {"id": 4, "name": "dog"}],
                "annotations": [],
            }
        )
    )
    results = tmp_path / "results.json"
    results.write_text("[\n" + ",\n".join(records) + "\n]\n")
    return results, gt_json


def test_coco_results_become_corner_boxes(tmp_path: Path) -> None:
    """bbox [x, y, w, h] is x, y, x + w, y + h; ids named by --coco-gt (file stems, base names)."""
    write_gt(tmp_path / "gt", GT)
    results, gt_json = coco_pair(
        tmp_path,
        [
            '{"image_id": 1, "category_id": 3, "bbox": [240, 120, 160, 240], "score": 0.9}',
            '{"image_id": 2, "category_id": 4, "bbox": [0.5, 0, 63.5, 48], "score": 0.25}',
            '{"image_id": "a", "category_id": "dog", "bbox": [1, 2, 3, 4]}',
        ],
    )
    pred = read_detections("coco", results, read_columns(tmp_path / "gt"), coco_gt=gt_json)
    assert boxes_of(pred) == {
        "a": [("car", 240.0, 120.0, 400.0, 360.0, 0.9), ("dog", 1.0, 2.0, 4.0, 6.0, None)],
        "b": [("dog", 0.5, 0.0, 64.0, 48.0, 0.25)],
    }
    assert pred.skipped == ()


def test_coco_bad_records_are_named_by_line(tmp_path: Path) -> None:
    """Each bad record is skipped as path:line (the record's own line), its image left out."""
    write_gt(tmp_path / "gt", GT)
    results, gt_json = coco_pair(
        tmp_path,
        [
            '{"image_id": 1, "category_id": 3, "bbox": [240, 120, 160, 240], "score": 0.9}',
            '{"image_id": 2, "category_id": 4, "bbox": [0, 0, -1, 48], "score": 0.25}',
            '{"image_id": 1, "category_id": 9, "bbox": [0, 0, 1, 1], "score": 0.5}',
            '{"image_id": 7, "category_id": 3, "bbox": [0, 0, 1, 1], "score": NaN}',
            '{"image_id": 1, "category_id": 3, "bbox": [0, 0, 1], "score": 0.5}',
        ],
    )
    pred = read_detections("coco", results, read_columns(tmp_path / "gt"), coco_gt=gt_json)
    assert [str(s) for s in pred.skipped] == [
        f"{results}:3: detection 1: bbox has a negative width or height: [0, 0, -1, 48]",
        f"{results}:4: detection 2: category_id 9 is not among the categories of coco_gt",
        f"{results}:5: detection 3: image_id 7 is not among the images of coco_gt",
        f"{results}:6: detection 4: bbox is not [x, y, width, height]: [0, 0, 1]",
    ]
    assert [s.key for s in pred.skipped] == ["b", "a", None, "a"]
    code, _, err = run(
        str(tmp_path / "gt"), str(results), "--pred-format", "coco", "--coco-gt", str(gt_json)
    )
    assert code == 3
    assert f"vocmatch: skipped {results}:3: detection 1:" in err


@pytest.mark.parametrize(
    ("field", "message"),
    [
        pytest.param(
            '"bbox": [1' + "0" * 400 + ", 0, 1, 1]",
            "bbox is not finite: [inf, 0, 1, 1]",
            id="beyond-float64",
        ),
        pytest.param(
            '"bbox": [1' + "0" * 5000 + ", 0, 1, 1]",
            "bbox is not finite: [inf, 0, 1, 1]",
            id="beyond-4300-digits",
        ),
        pytest.param(
            '"bbox": [0, 0, 1, 1], "score": 1' + "0" * 400,
            "score is not a finite number: inf",
            id="score",
        ),
    ],
)
def test_coco_integer_too_large_for_a_float_is_a_bad_record(
    tmp_path: Path, field: str, message: str
) -> None:
    """An integer beyond float64 is refused with its record's line, as NaN is: no traceback."""
    write_gt(tmp_path / "gt", GT)
    results = tmp_path / "results.json"
    results.write_text('[\n{"image_id": "a", "category_id": "car", ' + field + "}\n]")
    code, _, err = run(str(tmp_path / "gt"), str(results), "--pred-format", "coco")
    assert (code, err) == (3, f"vocmatch: skipped {results}:2: detection 0: {message}\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('[\n{"image_id": 1,\n', r"results.json:3: not valid JSON", id="truncated"),
        pytest.param("[" * 100_000 + "]" * 100_000, r"JSON nested too deeply", id="deep"),
        pytest.param('{"a": 1}', r"results.json:1: a COCO results file is a list", id="object"),
    ],
)
def test_coco_unreadable_file(tmp_path: Path, text: str, message: str) -> None:
    """A file that is not a results list is refused with its line; deep nesting is bounded."""
    write_gt(tmp_path / "gt", GT)
    results = tmp_path / "results.json"
    results.write_text(text)
    with pytest.raises(AnnotationError, match=message):
        read_detections("coco", results, read_columns(tmp_path / "gt"))


def test_coco_numeric_ids_need_the_ground_truth_file(tmp_path: Path) -> None:
    """Numeric image ids without --coco-gt: one usage error, not a skip per record."""
    write_gt(tmp_path / "gt", GT)
    results, _ = coco_pair(tmp_path, ['{"image_id": 1, "category_id": 3, "bbox": [0, 0, 1, 1]}'])
    code, out, err = run(str(tmp_path / "gt"), str(results), "--pred-format", "coco")
    assert code == 2 and out == ""
    assert err == (
        f"vocmatch: error: {results}: image_id values are numbers: give --coco-gt FILE (a COCO"
        " ground-truth file whose images[].file_name names them)\n"
    )


def test_coco_results_naming_no_image_exit_2(tmp_path: Path) -> None:
    """Stems that match no ground-truth image: the honest one-line exit."""
    write_gt(tmp_path / "gt", GT)
    results, _ = coco_pair(
        tmp_path, ['{"image_id": "zz", "category_id": "car", "bbox": [0, 0, 1, 1]}']
    )
    code, _, err = run(str(tmp_path / "gt"), str(results), "--pred-format", "coco")
    assert code == 2
    assert "no ground-truth image pairs with a prediction: the image ids of" in err
    assert "('zz') name no ground-truth image ('a', 'b')" in err


@pytest.mark.parametrize("protocol_name", ["coco", "default", "voc07"])
def test_coco_json_pair_equals_pycocotools_and_the_xml_run(
    tmp_path: Path, protocol_name: str
) -> None:
    """XML ground truth with the COCO results of the same boxes: the 12 numbers equal
    pycocotools' on the JSON pair, and every number equals the XML predictions' run."""
    generate = bench("generate")
    peers = bench("peers")
    generate.generate(tmp_path, 40, classes=5, gt_per_image=6, pred_per_image=40, seed=11)
    gt = read_columns(tmp_path / "gt")
    from_json = read_detections(
        "coco", tmp_path / "coco" / "pred.json", gt, coco_gt=tmp_path / "coco" / "gt.json"
    )
    conv = protocol(protocol_name)
    json_run = evaluate_columns(gt, from_json, conv, keep_matches=False)
    xml_run = evaluate_columns(gt, read_columns(tmp_path / "pred"), conv, keep_matches=False)
    assert json_run.summary == xml_run.summary
    assert [(c.name, c.ap, c.tp, c.fp) for c in json_run.classes] == [
        (c.name, c.ap, c.tp, c.fp) for c in xml_run.classes
    ]
    if protocol_name == "coco":
        assert json_run.coco is not None
        expected = peers.run_pycocotools(
            tmp_path / "coco" / "gt.json", tmp_path / "coco" / "pred.json"
        )
        assert json_run.coco.as_list() == pytest.approx(expected, abs=1e-12)


# YOLO -----------------------------------------------------------------------------------


def test_yolo_lines_are_scaled_by_the_ground_truth_size(tmp_path: Path) -> None:
    """cx cy w h normalised to 640 x 480; conf optional; classes by index of --names."""
    write_gt(tmp_path / "gt", GT)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "a.txt").write_text("0 0.5 0.5 0.25 0.5 0.9\n\n1 0.05 0.05 0.1 0.1\n")
    (labels / "b.txt").write_text("")
    pred = read_detections("yolo", labels, read_columns(tmp_path / "gt"), names=("car", "dog"))
    assert boxes_of(pred) == {
        "a": [("car", 240.0, 120.0, 400.0, 360.0, 0.9), ("dog", 0.0, 0.0, 64.0, 48.0, None)],
        "b": [],
    }


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param(
            "2 0.5 0.5 0.1 0.1", "class 2 is not in names (2 classes, 0 to 1)", id="class"
        ),
        pytest.param(
            "car 0.5 0.5 0.1 0.1", "class 'car' is not a class index (0, 1, ...)", id="name"
        ),
        pytest.param(
            "0 0.5 0.5 0.1", "expected 'class cx cy w h [conf]', got 4 fields", id="short"
        ),
        pytest.param(
            "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.3",
            "expected 'class cx cy w h [conf]', got 9 fields (a segmentation label?)",
            id="polygon",
        ),
        pytest.param("0 0.5 0.5 -0.1 0.1", "w -0.1 is negative", id="negative"),
        pytest.param("0 0.5 0_5 0.1 0.1", "cy is not a number: '0_5'", id="grammar"),
        pytest.param("0 0.5 0.5 0.1 0.1 nan", "conf is not finite: 'nan'", id="nan"),
    ],
)
def test_yolo_bad_line_is_path_line(tmp_path: Path, line: str, message: str) -> None:
    """A bad line skips its file's image, named as path:line."""
    write_gt(tmp_path / "gt", GT)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "a.txt").write_text(f"0 0.5 0.5 0.25 0.5 0.9\n{line}\n")
    pred = read_detections("yolo", labels, read_columns(tmp_path / "gt"), names=("car", "dog"))
    assert [str(s) for s in pred.skipped] == [f"{labels / 'a.txt'}:2: {message}"]
    assert pred.skipped[0].key == "a"


def test_yolo_without_size_is_skipped_with_the_reason(tmp_path: Path) -> None:
    """No <size> in the ground truth: the image cannot be placed, and says why."""
    write_gt(tmp_path / "gt", GT, size=False)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "a.txt").write_text("0 0.5 0.5 0.25 0.5 0.9\n")
    (labels / "classes.txt").write_text("car\ndog\n")
    code, _, err = run(
        str(tmp_path / "gt"), str(labels), "--pred-format", "yolo", "--names",
        str(labels / "classes.txt"),
    )  # fmt: skip
    assert code == 3
    assert err.splitlines()[0] == (
        f"vocmatch: skipped {labels / 'a.txt'}: normalised YOLO coordinates need the image size,"
        f" and the ground truth {tmp_path / 'gt' / 'a.xml'} has no usable <size>"
    )
    assert "classes" not in err  # the names file among the labels is not a label file


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("car\n\ndog\n", "names.txt:2: blank line", id="blank"),
        pytest.param("car\ndog\ncar\n", "names.txt:3: class 'car' named twice", id="twice"),
    ],
)
def test_names_file_errors(tmp_path: Path, text: str, message: str) -> None:
    """Line numbers are class indices: a gap or a repeat is an error with its line."""
    path = tmp_path / "names.txt"
    path.write_text(text)
    with pytest.raises(AnnotationError, match=message):
        read_class_list(path)
    path.write_text("car\ndog\n\n\n")
    assert read_class_list(path) == ("car", "dog")


def test_yolo_options_are_checked(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    """--pred-format yolo without --names, or --names without it, is a usage error."""
    assert "needs --names FILE" in run(*map(str, demo), "--pred-format", "yolo")[2]
    names = tmp_path / "n.txt"
    names.write_text("car\n")
    assert "--names names the class indices" in run(*map(str, demo), "--names", str(names))[2]


# VOC devkit result files -----------------------------------------------------------------


def test_voc_results_files(tmp_path: Path) -> None:
    """comp4_det_test_<class>.txt lines: image id, score and corners; unknown ids are orphans
    and a bad line is path:line."""
    write_gt(tmp_path / "gt", GT)
    results = tmp_path / "results"
    results.mkdir()
    (results / "comp4_det_test_car.txt").write_text(
        "a 0.9 240 120 400 360\nzz 0.5 1 1 2 2\nb 0.1 5 5 4 6\n"
    )
    (results / "comp4_det_test_traffic_light.txt").write_text("b 0.3 1 2 3 4\n")
    pred = read_detections("voc-results", results, read_columns(tmp_path / "gt"))
    assert boxes_of(pred) == {
        "a": [("car", 240.0, 120.0, 400.0, 360.0, 0.9)],
        "b": [("traffic_light", 1.0, 2.0, 3.0, 4.0, 0.3)],
        "zz": [("car", 1.0, 1.0, 2.0, 2.0, 0.5)],
    }
    assert [str(s) for s in pred.skipped] == [
        f"{results / 'comp4_det_test_car.txt'}:3: x2 < x1 or y2 < y1: 5 5 4 6"
    ]
    assert pred.paths[pred.keys.index("zz")] == f"{results} (image 'zz')"


@pytest.mark.parametrize(
    ("names", "runs"),
    [
        pytest.param(
            ["comp4_det_test_car.txt", "comp4_det_val_car.txt"],
            "comp4_det_test_*.txt, comp4_det_val_*.txt",
            id="two-sets",
        ),
        pytest.param(
            ["comp3_det_test_car.txt", "comp4_det_test_car.txt", "comp4_det_test_dog.txt"],
            "comp3_det_test_*.txt, comp4_det_test_*.txt",
            id="two-competitions",
        ),
    ],
)
def test_voc_results_of_several_runs_are_refused(
    tmp_path: Path, names: list[str], runs: str
) -> None:
    """Result files of two runs in one folder would be read as one run (every image's
    predictions counted twice): exit 2 naming the runs, before anything is counted."""
    write_gt(tmp_path / "gt", GT)
    results = tmp_path / "results"
    results.mkdir()
    for name in names:
        (results / name).write_text("a 0.9 240 120 400 360\n")
    code, out, err = run(str(tmp_path / "gt"), str(results), "--pred-format", "voc-results")
    assert (code, out) == (2, "")
    assert err == (
        f"vocmatch: error: {results} holds the result files of 2 runs ({runs}): keep one "
        "run's files in the folder\n"
    )


def test_voc_results_folder_without_result_files(tmp_path: Path) -> None:
    write_gt(tmp_path / "gt", GT)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no VOC result files"):
        read_detections("voc-results", tmp_path / "empty", read_columns(tmp_path / "gt"))


# Real sets ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["raccoon", "bccd", "cards"])
def test_every_format_gives_the_xml_numbers_on_a_real_set(tmp_path: Path, name: str) -> None:
    """Predictions derived from a real set, written in each format by bench/convert.py:
    every number of every format equals the XML run's, under default and coco."""
    gt_dir = datasets_or_skip(name)
    bench("derive_predictions").derive(gt_dir, tmp_path / "pred", seed=0)
    bench("convert").convert(gt_dir, tmp_path / "pred", tmp_path / "out")
    out = tmp_path / "out"
    runs = {
        "voc": [str(tmp_path / "pred")],
        "coco": [str(out / "coco" / "results.json"), "--pred-format", "coco", "--coco-gt",
                 str(out / "coco" / "gt.json")],
        "yolo": [str(out / "yolo"), "--pred-format", "yolo", "--names",
                 str(out / "yolo" / "classes.txt")],
        "voc-results": [str(out / "voc-results"), "--pred-format", "voc-results"],
        "txt": [str(out / "txt"), "--pred-format", "txt"],
        "txt-xywh": [str(out / "txt-xywh"), "--pred-format", "txt", "--box-format", "xywh"],
    }  # fmt: skip
    for protocol_name in ("default", "coco"):
        results = {}
        for fmt, args in runs.items():
            code, text, err = run(
                str(gt_dir), *args, "--protocol", protocol_name, "--format", "json"
            )
            assert code == 0, err
            data = json.loads(text)
            results[fmt] = (
                data["summary"] | {"missing_pred": 0, "orphan_pred": 0},
                [(c["name"], c["ap"], c["tp"], c["fp"], c["fn"]) for c in data["classes"]],
                data.get("coco"),
            )
        assert results["coco"] == results["voc"]
        assert results["yolo"] == results["voc"]
        assert results["voc-results"] == results["voc"]
        assert results["txt"] == results["voc"]
        assert results["txt-xywh"] == results["voc"]

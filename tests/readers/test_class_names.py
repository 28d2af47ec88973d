"""Class names from other tools' files: Ultralytics' data.yaml (names as a list or a mapping)
and one-name-a-line lists; a file that is neither is refused at its line, and a run whose
prediction classes are none of the ground truth's is refused in one line, not scored mAP 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.readers.test_detections import run, write_gt
from vocmatch.errors import AnnotationError, InputError
from vocmatch.readers.class_names import read_class_names

#: Ultralytics' coco8.yaml, shortened: a mapping, comments and a block scalar after it.
DATA_YAML = """\
# Ultralytics dataset file
path: ../datasets/coco8
train: images/train
val: images/val
names:
  0: car
  1: dog
  2: 'traffic light'
download: |
  from ultralytics.utils.downloads import download
  download(['https://example.org/coco8.zip'])
"""


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("data.yaml", DATA_YAML, id="mapping"),
        pytest.param("data.yml", "names:\n  - car\n  - dog\n  - traffic light\n", id="block-list"),
        pytest.param("d.yaml", "nc: 3\nnames: ['car', 'dog', \"traffic light\"]\n", id="flow-list"),
        pytest.param("d.yaml", "names: {2: traffic light, 0: car, 1: dog}\n", id="flow-mapping"),
        pytest.param("names.txt", "path: x\nnames:\n  0: car\n  1: dog\n  2: traffic light\n",
                     id="yaml-with-txt-suffix"),
        pytest.param("classes.txt", "car\ndog\ntraffic light\n\n", id="classes-txt"),
        pytest.param("obj.names", "\ufeffcar\r\ndog\r\ntraffic light\r\n", id="darknet-bom-crlf"),
    ],
)  # fmt: skip
def test_names_files_give_the_names_in_index_order(tmp_path: Path, name: str, text: str) -> None:
    """Every form gives class 0 car, 1 dog, 2 traffic light."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    assert read_class_names(path) == ("car", "dog", "traffic light")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        pytest.param("c.txt", "car\n0: dog\n", "2: '0: dog' looks like YAML or JSON, not a class name: a names file is one class name a line, or YAML with a 'names:' list or mapping", id="index-line"),
        pytest.param("c.txt", "car\n- dog\n", "2: '- dog' looks like YAML or JSON, not a class name: a names file is one class name a line, or YAML with a 'names:' list or mapping", id="list-item"),
        pytest.param("c.txt", '["car", "dog"]\n', "1: '[\"car\", \"dog\"]' looks like YAML or JSON, not a class name: a names file is one class name a line, or YAML with a 'names:' list or mapping", id="json"),
        pytest.param("c.txt", "nc: 2\nlabels: [car]\n", "1: 'nc: 2' looks like YAML or JSON, not a class name: a names file is one class name a line, or YAML with a 'names:' list or mapping", id="yaml-without-names"),
        pytest.param("d.yaml", "nc: 2\n", "1: no 'names:' key (the class names, a list or a mapping)", id="no-names-key"),
        pytest.param("d.yaml", "nc: 2\nnames: car\n", "2: 'names' must be a list of names or a mapping {index: name}", id="names-scalar"),
        pytest.param("d.yaml", "names:\n  0: car\n  2: dog\n", "3: class indices must run from 0 to 1: 1 is missing", id="index-gap"),
        pytest.param("d.yaml", "names:\n  0: car\n  x: dog\n", "3: a class index must be a whole number >= 0, not 'x'", id="index-word"),
        pytest.param("d.yaml", "names:\n  - car\n  - [dog]\n", "3: a class name must be a non-empty text", id="name-list"),
        pytest.param("d.yaml", "names: [car, dog, car]\n", "1: class 'car' named twice (first on line 1)", id="twice"),
        pytest.param("d.yaml", "names: [car\nnc: 2\n", "2: not valid YAML: expected ',' or ']', but got ':'", id="bad-yaml"),
        pytest.param("d.yaml", "- car\n- dog\n", "1: expected a YAML mapping with a 'names:' key", id="top-list"),
    ],
)  # fmt: skip
def test_a_names_file_that_is_neither_is_refused_at_its_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    """YAML without a usable names list, or a list with YAML or JSON lines: path:line."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AnnotationError) as caught:
        read_class_names(path)
    assert str(caught.value) == f"{path}:{message}"


def test_an_empty_names_list_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("names: []\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^.*d\.yaml: 'names' holds no class$"):
        read_class_names(path)


def yolo_run(tmp_path: Path, names: str, names_file: str = "data.yaml") -> tuple[int, str, str]:
    """Ground truth a car (image a) and a dog (image b); YOLO finds both, class 0 and 1."""
    write_gt(tmp_path / "gt", {"a": [("car", 240, 120, 400, 360)], "b": [("dog", 0, 0, 64, 48)]})
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "a.txt").write_text("0 0.5 0.5 0.25 0.5 0.9\n")
    (labels / "b.txt").write_text("1 0.05 0.05 0.1 0.1 0.8\n")
    (tmp_path / names_file).write_text(names, encoding="utf-8")
    return run(
        str(tmp_path / "gt"), str(labels), "--pred-format", "yolo",
        "--names", str(tmp_path / names_file), "--format", "json",
    )  # fmt: skip


def test_data_yaml_names_the_yolo_classes(tmp_path: Path) -> None:
    """data.yaml's mapping was read line by line, every class wrong and mAP 0; now mAP 1."""
    code, out, err = yolo_run(tmp_path, DATA_YAML)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["summary"]["map"] == 1.0
    assert [(c["name"], c["tp"], c["fp"]) for c in data["classes"]] == [
        ("car", 1, 0),
        ("dog", 1, 0),
    ]


def test_no_prediction_class_in_the_ground_truth_is_refused(tmp_path: Path) -> None:
    """Names of another data set: exit 2 with one line, not mAP 0 and exit 0."""
    code, out, err = yolo_run(tmp_path, "names: [person, bicycle]\n")
    assert (code, out) == (2, "")
    assert err == (
        "vocmatch: error: no prediction class is a ground-truth class: the predictions name "
        "'bicycle', 'person', the ground truth 'car', 'dog' (--fold-case matches names that "
        "differ in case; --names names YOLO indices; --class-map renames classes, coco-to-voc "
        "for a COCO model on VOC)\n"
    )


def test_classes_differing_in_case_only_are_named_so(tmp_path: Path) -> None:
    code, _, err = yolo_run(tmp_path, "Car\nDog\n", "classes.txt")
    assert code == 2
    assert "the ground truth 'car', 'dog'; some are equal but for letter case (" in err
    (tmp_path / "labels" / "a.txt").write_text("0 0.5 0.5 0.25 0.5 0.9\n")
    code, out, _ = run(
        str(tmp_path / "gt"), str(tmp_path / "labels"), "--pred-format", "yolo",
        "--names", str(tmp_path / "classes.txt"), "--format", "json", "--fold-case",
    )  # fmt: skip
    assert (code, json.loads(out)["summary"]["map"]) == (0, 1.0)


def test_a_names_file_with_a_yaml_line_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = yolo_run(tmp_path, "car\n1: dog\n", "classes.txt")
    assert (code, out) == (2, "")
    assert err == (
        f"vocmatch: error: {tmp_path / 'classes.txt'}:2: '1: dog' looks like YAML or JSON, not "
        "a class name: a names file is one class name a line, or YAML with a 'names:' list or "
        "mapping\n"
    )

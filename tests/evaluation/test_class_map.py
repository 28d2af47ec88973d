"""Class mapping and selection: a COCO model's names evaluated under VOC's (--class-map
coco-to-voc or a pred,gt file), only some classes (--classes), every class as one
(--agnostic); each says what it changed, with counts, in the notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vocmatch
from tests.readers.test_detections import run, write_gt
from vocmatch.cli import options
from vocmatch.errors import AnnotationError, InputError
from vocmatch.evaluation.class_map import (
    AGNOSTIC_CLASS,
    BUILTIN_MAPS,
    COCO_TO_VOC,
    ClassChoice,
    ClassMap,
    choose_classes,
    read_class_map,
)
from vocmatch.readers.scan import read_columns


def write_pred(
    folder: Path, images: dict[str, list[tuple[str, int, int, int, int, float]]]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for key, boxes in images.items():
        parts = ["<annotation>", f"<filename>{key}.jpg</filename>"]
        for name, x1, y1, x2, y2, score in boxes:
            parts.append(
                f"<object><name>{name}</name><score>{score}</score><bndbox><xmin>{x1}</xmin>"
                f"<ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"
            )
        parts.append("</annotation>")
        (folder / f"{key}.xml").write_text("\n".join(parts), encoding="utf-8")


#: VOC ground truth, and a COCO model that finds every object under its COCO name, plus a
#: bench and two cups VOC has no class for.
VOC_GT = {
    "a": [("tvmonitor", 10, 10, 100, 100), ("sofa", 200, 200, 400, 300)],
    "b": [("aeroplane", 0, 0, 300, 200), ("person", 400, 100, 450, 300)],
}
COCO_PRED = {
    "a": [("tv", 10, 10, 100, 100, 0.9), ("couch", 200, 200, 400, 300, 0.8),
          ("bench", 500, 10, 600, 60, 0.7), ("cup", 20, 300, 40, 330, 0.6)],
    "b": [("airplane", 0, 0, 300, 200, 0.95), ("person", 400, 100, 450, 300, 0.85),
          ("cup", 0, 300, 30, 330, 0.5)],
}  # fmt: skip


@pytest.fixture
def coco_on_voc(tmp_path: Path) -> tuple[str, str]:
    write_gt(tmp_path / "gt", VOC_GT)
    write_pred(tmp_path / "pred", COCO_PRED)
    return str(tmp_path / "gt"), str(tmp_path / "pred")


def test_the_cli_lists_the_library_maps() -> None:
    """--help names the built-in maps without importing the library: the two agree."""
    assert tuple(BUILTIN_MAPS) == options.BUILTIN_CLASS_MAPS
    assert options.AGNOSTIC_CLASS == AGNOSTIC_CLASS


def test_coco_to_voc_maps_the_20_voc_classes_and_drops_the_other_60() -> None:
    mapped = {pred: gt for pred, gt in COCO_TO_VOC if gt is not None}
    assert len(COCO_TO_VOC) == 80
    assert len(mapped) == 20
    assert {pred: gt for pred, gt in mapped.items() if pred != gt} == {
        "airplane": "aeroplane",
        "couch": "sofa",
        "dining table": "diningtable",
        "motorcycle": "motorbike",
        "potted plant": "pottedplant",
        "tv": "tvmonitor",
    }


def test_coco_names_on_voc_ground_truth_are_refused_then_mapped(
    coco_on_voc: tuple[str, str],
) -> None:
    """Without the map only person matches (tv, couch, airplane all FP and FN); with it every
    object is found, and the note counts what was renamed and dropped."""
    code, out, _ = run(*coco_on_voc, "--format", "json")
    before = json.loads(out)
    assert code == 0
    assert (before["summary"]["tp"], before["summary"]["fp"], before["summary"]["fn"]) == (1, 6, 3)
    assert before["summary"]["map"] == 0.25
    code, out, err = run(*coco_on_voc, "--class-map", "coco-to-voc", "--format", "json")
    after = json.loads(out)
    assert (code, err) == (0, "")
    assert (after["summary"]["tp"], after["summary"]["fp"], after["summary"]["fn"]) == (4, 0, 0)
    assert after["summary"]["map"] == 1.0
    assert after["notes"] == [
        "class map coco-to-voc: renamed 3 predictions of 3 classes (airplane -> aeroplane 1, "
        "couch -> sofa 1, tv -> tvmonitor 1); dropped 3 predictions of 2 classes (cup 2, "
        "bench 1)"
    ]


def test_the_note_is_in_the_table_report(coco_on_voc: tuple[str, str]) -> None:
    code, out, _ = run(*coco_on_voc, "--class-map", "coco-to-voc")
    assert code == 0
    assert (
        "note: class map coco-to-voc: renamed 3 predictions of 3 classes (airplane -> "
        "aeroplane 1, couch -> sofa 1, tv -> tvmonitor 1); dropped 3 predictions of 2 classes "
        "(cup 2, bench 1)"
    ) in " ".join(out.split())


def test_a_map_file_renames_and_drops(tmp_path: Path, coco_on_voc: tuple[str, str]) -> None:
    path = tmp_path / "map.csv"
    path.write_text('# pred,gt\ntv,tvmonitor\n\n"couch",sofa\ncup,\n', encoding="utf-8")
    code, out, _ = run(*coco_on_voc, "--class-map", str(path), "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert [(c["name"], c["tp"], c["fp"], c["fn"]) for c in data["classes"]] == [
        ("aeroplane", 0, 0, 1),
        ("airplane", 0, 1, 0),
        ("bench", 0, 1, 0),
        ("person", 1, 0, 0),
        ("sofa", 1, 0, 0),
        ("tvmonitor", 1, 0, 0),
    ]
    assert data["notes"][0] == (
        f"class map {path}: renamed 2 predictions of 2 classes (couch -> sofa 1, tv -> "
        "tvmonitor 1); dropped 2 predictions of 1 class (cup 2)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("tv,tvmonitor\ntv:tvmonitor\n", "2: expected pred,gt (two fields; pred, drops the class), got 1: 'tv:tvmonitor'", id="one-field"),
        pytest.param("a,b,c\n", "1: expected pred,gt (two fields; pred, drops the class), got 3: 'a,b,c'", id="three-fields"),
        pytest.param("tv,tvmonitor\n,sofa\n", "2: the prediction class name is empty", id="empty-pred"),
        pytest.param("tv,tvmonitor\n# c\ntv,\n", "3: class 'tv' mapped twice (first on line 1)", id="twice"),
    ],
)  # fmt: skip
def test_a_bad_map_line_is_path_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "map.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AnnotationError) as caught:
        read_class_map(path)
    assert str(caught.value) == f"{path}:{message}"


def test_a_missing_map_names_the_built_in_maps(coco_on_voc: tuple[str, str]) -> None:
    code, out, err = run(*coco_on_voc, "--class-map", "coco-to-vco")
    assert (code, out) == (2, "")
    assert err == (
        "vocmatch: error: coco-to-vco: cannot read file: No such file or directory (a class "
        "map is a file of pred,gt lines or a built-in map: coco-to-voc)\n"
    )


def test_an_empty_map_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "map.csv"
    path.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"map\.csv: maps no class \(one pred,gt pair a line\)$"):
        read_class_map(path)


def test_classes_evaluates_only_those(coco_on_voc: tuple[str, str]) -> None:
    """Ground truth and predictions of the other classes are left out, and counted."""
    code, out, _ = run(
        *coco_on_voc, "--class-map", "coco-to-voc", "--classes", "sofa, person", "--format",
        "json",
    )  # fmt: skip
    data = json.loads(out)
    assert code == 0
    assert [(c["name"], c["tp"]) for c in data["classes"]] == [("person", 1), ("sofa", 1)]
    assert (data["summary"]["gt"], data["summary"]["pred"]) == (2, 2)
    assert data["notes"][0] == (
        "classes: evaluating only sofa, person; left out 2 ground-truth objects and 2 "
        "predictions of 2 other classes"
    )


def test_an_unknown_class_is_refused_with_a_guess(coco_on_voc: tuple[str, str]) -> None:
    code, out, err = run(*coco_on_voc, "--classes", "persn")
    assert (code, out) == (2, "")
    assert err == (
        "vocmatch: error: class 'persn' is in neither the ground truth nor the predictions; "
        "did you mean 'person'?\n"
    )


def test_an_empty_class_name_is_a_usage_error(coco_on_voc: tuple[str, str]) -> None:
    code, _, err = run(*coco_on_voc, "--classes", "person,")
    assert code == 2
    assert "'person,' has an empty class name: give names separated by commas, as A,B" in err


def test_agnostic_matches_across_classes(coco_on_voc: tuple[str, str]) -> None:
    """Every prediction on its object is a TP whatever its name; the bench and cups are FP."""
    code, out, _ = run(*coco_on_voc, "--agnostic", "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert [(c["name"], c["gt"], c["tp"], c["fp"]) for c in data["classes"]] == [
        ("object", 4, 4, 3)
    ]
    assert data["notes"] == [
        "class-agnostic: 4 ground-truth classes and 6 prediction classes evaluated as one "
        "class 'object'"
    ]


def test_choose_classes_keeps_shapes_on_their_rows(tmp_path: Path) -> None:
    """Dropping rows renumbers the rows of rotated boxes and polygons, and keeps every image."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.xml").write_text(
        "<annotation><object><name>cup</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>5</xmax>"
        "<ymax>5</ymax></bndbox></object><object><name>tv</name><robndbox><cx>50</cx><cy>50</cy>"
        "<w>20</w><h>10</h><angle>0.5</angle></robndbox></object></annotation>",
        encoding="utf-8",
    )
    (tmp_path / "p" / "b.xml").write_text(
        "<annotation><object><name>cup</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>5</xmax>"
        "<ymax>5</ymax></bndbox></object></annotation>",
        encoding="utf-8",
    )
    pred = read_columns(tmp_path / "p")
    assert [row for row, _ in pred.shapes] == [1]
    _, out = choose_classes(pred, pred, ClassChoice(BUILTIN_MAPS["coco-to-voc"]))
    assert out.keys == ("a", "b")
    assert out.label_names == ("tvmonitor",)
    assert out.image.tolist() == [0]
    assert [row for row, _ in out.shapes] == [0]
    assert out.shapes[0][1] == pred.shapes[0][1]


#: Ground truth of animals and a cat; a model that calls the animals dogs, spelled three ways.
FOLD_GT = {
    "a": [("animal", 10, 10, 100, 100), ("animal", 200, 200, 300, 300)],
    "b": [("cat", 0, 0, 50, 50), ("animal", 100, 100, 200, 200)],
}
FOLD_PRED = {
    "a": [("DOG", 10, 10, 100, 100, 0.9), ("dog", 200, 200, 300, 300, 0.8)],
    "b": [("Cat", 0, 0, 50, 50, 0.7), ("Dog", 100, 100, 200, 200, 0.6)],
}


@pytest.fixture
def dogs(tmp_path: Path) -> tuple[str, str]:
    write_gt(tmp_path / "gt", FOLD_GT)
    write_pred(tmp_path / "pred", FOLD_PRED)
    return str(tmp_path / "gt"), str(tmp_path / "pred")


def scored(
    mode: str, gt: str, pred: str, choice: ClassChoice
) -> tuple[list[tuple[str, int, int, int]], tuple[str, ...]]:
    """Each class's (name, TP, FP, FN) and the notes: box mode with fold_case, or label
    sets (which always fold case)."""
    if mode == "boxes":
        evaluation = vocmatch.evaluate(gt, pred, fold_case=True, class_choice=choice).evaluation
        return [(c.name, c.tp, c.fp, c.fn) for c in evaluation.classes], evaluation.notes
    labels = vocmatch.evaluate_labels(gt, pred, class_choice=choice)
    return [(c.name, c.tp, c.fp, c.fn) for c in labels.classes], labels.notes


MODES = [pytest.param("boxes", id="boxes"), pytest.param("labels", id="labels")]

#: Every dog renamed, whatever its case: each mode then finds every object.
ALL_FOUND = {
    "boxes": [("animal", 3, 0, 0), ("cat", 1, 0, 0)],
    "labels": [("animal", 2, 0, 0), ("cat", 1, 0, 0)],
}
RENAMED = "renamed 3 predictions of 3 classes (DOG -> {0} 1, Dog -> {0} 1, dog -> {0} 1)"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("text", "selected", "renamed"),
    [
        pytest.param("Dog,Animal\n", (), RENAMED.format("Animal"), id="key-in-title-case"),
        pytest.param("DOG,animal\n", (), RENAMED.format("animal"), id="key-in-upper-case"),
        pytest.param(
            "dog,ANIMAL\nDog,animal\n", (), RENAMED.format("ANIMAL"), id="keys-agreeing-in-case"
        ),
        pytest.param("Dog,Animal\n", ("ANIMAL", "CAT"), RENAMED.format("Animal"), id="classes"),
    ],
)  # fmt: skip
def test_fold_case_folds_the_class_maps_names(
    tmp_path: Path,
    dogs: tuple[str, str],
    mode: str,
    text: str,
    selected: tuple[str, ...],
    renamed: str,
) -> None:
    """With names folded (box mode's fold_case, label sets always), a map's prediction names
    match in any case, its ground-truth names are folded as the files' are, and the
    selected classes may be named in any case."""
    path = tmp_path / "map.csv"
    path.write_text(text, encoding="utf-8")
    choice = ClassChoice(read_class_map(path), classes=selected)
    classes, notes = scored(mode, *dogs, choice)
    assert classes == ALL_FOUND[mode]
    assert [n for n in notes if n.startswith("class map")] == [f"class map {path}: {renamed}"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("Dog,a\n# the same class\ndog,b\n", "3: classes 'dog' and 'Dog' (line 1) are one class when names are folded to lower case, but are mapped to 'b' and 'a': map the class once", id="two-classes"),
        pytest.param("DOG,\ncat,cat\ndog,animal\n", "3: classes 'dog' and 'DOG' (line 1) are one class when names are folded to lower case, but are mapped to 'animal' and nothing (dropped): map the class once", id="dropped-and-kept"),
    ],
)  # fmt: skip
def test_keys_that_fold_to_one_with_two_targets_are_refused(
    tmp_path: Path, dogs: tuple[str, str], mode: str, text: str, message: str
) -> None:
    """Which of two targets a folded name means cannot be told: the map is refused, naming
    its file, its line and both names."""
    path = tmp_path / "map.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AnnotationError) as caught:
        scored(mode, *dogs, ClassChoice(read_class_map(path)))
    assert str(caught.value) == f"{path}:{message}"


def test_without_fold_case_the_map_matches_names_as_written(
    tmp_path: Path, dogs: tuple[str, str]
) -> None:
    """Box mode without fold_case keeps names apart: Dog and dog map to their own classes
    (no refusal), and DOG, which the map does not name, stays DOG."""
    path = tmp_path / "map.csv"
    path.write_text("Dog,animal\ndog,cat\n", encoding="utf-8")
    choice = ClassChoice(read_class_map(path))
    evaluation = vocmatch.evaluate(*dogs, class_choice=choice).evaluation
    assert [(c.name, c.tp, c.fp, c.fn) for c in evaluation.classes] == [
        ("Cat", 0, 1, 0),
        ("DOG", 0, 1, 0),
        ("animal", 1, 0, 2),
        ("cat", 0, 1, 1),
    ]


@pytest.mark.parametrize(
    ("entries", "folded"),
    [
        pytest.param((("tv", "tvmonitor"),), {"tv": "tvmonitor"}, id="lower-case"),
        pytest.param((("TV", "TVmonitor"), ("tv", "tvmonitor")), {"tv": "TVmonitor"}, id="first-spelling-kept"),
        pytest.param((("Cup", None), ("CUP", None)), {"cup": None}, id="both-dropped"),
    ],
)  # fmt: skip
def test_folded_map_entries(
    entries: tuple[tuple[str, str | None], ...], folded: dict[str, str | None]
) -> None:
    assert ClassMap("m.csv", entries, tuple(range(1, len(entries) + 1))).folded() == folded


def test_a_built_in_map_is_refused_without_a_line() -> None:
    """A map with no file lines (built in) names its source alone."""
    with pytest.raises(AnnotationError) as caught:
        ClassMap("mine", (("A", "x"), ("a", "y"))).folded()
    assert str(caught.value) == (
        "mine: classes 'a' and 'A' are one class when names are folded to lower case, but "
        "are mapped to 'y' and 'x': map the class once"
    )


def test_the_command_line_folds_the_map_and_refuses_a_clash(
    tmp_path: Path, dogs: tuple[str, str]
) -> None:
    """eval --fold-case --class-map finds every dog; a map whose names clash once folded is
    exit 2 with the file, line and both names on stderr, and nothing on stdout."""
    path = tmp_path / "map.csv"
    path.write_text("Dog,animal\n", encoding="utf-8")
    code, out, err = run(*dogs, "--fold-case", "--class-map", str(path), "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert [(c["name"], c["tp"], c["fp"], c["fn"]) for c in data["classes"]] == [
        ("animal", 3, 0, 0),
        ("cat", 1, 0, 0),
    ]
    assert data["summary"]["map"] == 1.0
    path.write_text("Dog,animal\ndog,cat\n", encoding="utf-8")
    code, out, err = run(*dogs, "--fold-case", "--class-map", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"vocmatch: error: {path}:2: classes 'dog' and 'Dog' (line 1) are one class when names "
        "are folded to lower case, but are mapped to 'cat' and 'animal': map the class once\n"
    )

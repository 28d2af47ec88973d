"""The command line in a real detection workflow: mistyped commands, honest exits, output that
reads in CI logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from vocmatch.cli import EXIT_USAGE


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    return run_cli(*args, env=env)


@pytest.mark.parametrize(
    ("word", "command"),
    [
        pytest.param("lnit", "lint", id="swapped-letters"),
        pytest.param("evl", "eval", id="missing-letter"),
        pytest.param("dif", "diff", id="short"),
        pytest.param("sge", "seg", id="seg"),
    ],
)
def test_mistyped_command_gets_did_you_mean(
    word: str, command: str, demo: tuple[Path, Path]
) -> None:
    """A first argument that is no path but nearly a command is a usage error naming it."""
    code, out, err = run(word, str(demo[0]))
    assert code == EXIT_USAGE
    assert out == ""
    assert f"no such command {word!r}; did you mean {command!r}?" in err


def test_existing_folder_named_like_a_command_is_still_a_folder(
    tmp_path: Path, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that happens to be called `lnit` is read as GT_DIR, not refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lnit").symlink_to(demo[0].resolve())
    code, _, err = run("lnit", str(demo[1].resolve()))
    assert code == 0, err


def write_voc(
    path: Path,
    objects: list[tuple[str, float, float, float, float, float | None]],
    size: tuple[int, int] | None = (640, 480),
    difficult: tuple[int, ...] = (),
) -> None:
    """A LabelImg-style file: ``(name, x1, y1, x2, y2, score)`` per object."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = ["<annotation>", f"<filename>{path.stem}.jpg</filename>"]
    if size is not None:
        parts.append(
            f"<size><width>{size[0]}</width><height>{size[1]}</height><depth>3</depth></size>"
        )
    for k, (name, x1, y1, x2, y2, score) in enumerate(objects):
        parts.append(f"<object><name>{name}</name>")
        parts.append(f"<difficult>{int(k in difficult)}</difficult>")
        parts.append(
            f"<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox>"
        )
        if score is not None:
            parts.append(f"<score>{score}</score>")
        parts.append("</object>")
    parts.append("</annotation>")
    path.write_text("\n".join(parts), encoding="utf-8")


LONG_NAMES = ("traffic_light_left_turn_arrow", "pedestrian crossing sign", "car")


def long_name_set(tmp_path: Path) -> tuple[Path, Path]:
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    for i, name in enumerate(LONG_NAMES):
        write_voc(gt / f"img{i}.xml", [(name, 10, 10, 50, 50, None)])
        write_voc(pred / f"img{i}.xml", [(name, 12, 10, 50, 50, 0.9)])
    return gt, pred


def table_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]


def test_report_in_a_pipe_is_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    """Without a terminal or COLUMNS, tables take the content's width: one row per class."""
    gt, pred = long_name_set(tmp_path)
    code, out, _ = run(str(gt), str(pred), env={"COLUMNS": ""})
    assert code == 0
    classes = out[out.index("Classes") : out.index("Operating points")]
    widths = {len(line) for line in table_lines(classes)[:6]}
    assert len(widths) == 1 and widths.pop() > 80
    for name in LONG_NAMES:
        assert sum(name in line for line in classes.splitlines()) == 1


@pytest.mark.parametrize("columns", ["40", "60", "100"])
def test_class_names_never_break_inside_a_word(tmp_path: Path, columns: str) -> None:
    """With COLUMNS narrower than the table, the table keeps its width rather than fold a
    class name; wider, the table is as wide as its content."""
    gt, pred = long_name_set(tmp_path)
    code, out, _ = run(str(gt), str(pred), "--errors", env={"COLUMNS": columns})
    assert code == 0
    for name in LONG_NAMES:
        # Each table with classes shows every name whole on one line.
        assert out.count(name) == 5  # classes, operating points, errors, confusion row, column
    assert "…" not in out


def copy_as(source: Path, target: Path, rename: str = "{stem}.xml") -> None:
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.xml")):
        (target / rename.format(stem=path.stem)).write_bytes(path.read_bytes())


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        pytest.param(
            "empty", "{pred} holds no files at all (an empty or wrong folder?)", id="empty"
        ),
        pytest.param(
            "jpg.xml",
            "prediction files are named '*.jpg.xml' ('street_01.jpg.xml') where the ground "
            "truth has 'street_01.xml': rename them without '.jpg'",
            id="jpg-xml-names",
        ),
        pytest.param(
            "yolo",
            "{pred} holds .txt files ('street_01.txt', 'street_02.txt', 'street_03.txt', ...), "
            "not XML: YOLO predictions? use --pred-format yolo --names FILE",
            id="yolo-folder-as-xml",
        ),
        pytest.param(
            "voc-results",
            "{pred} holds VOC devkit result files ('comp4_det_test_car.txt'), not XML: use "
            "--pred-format voc-results",
            id="voc-results-as-xml",
        ),
        pytest.param(
            "one-down",
            "the prediction files sit one folder down ('run1/street_01.xml' for "
            "'street_01.xml'): give {pred}/run1 as PRED",
            id="one-folder-down",
        ),
        pytest.param(
            "other",
            "no file name in common (ground truth: 'street_01', 'street_02', 'street_03', ...; "
            "predictions: 'sample_1', 'sample_2', 'sample_3', ...): a wrong folder?",
            id="wrong-folder",
        ),
    ],
)
def test_no_pairing_at_all_is_one_line_exit_2(
    tmp_path: Path, demo: tuple[Path, Path], layout: str, reason: str
) -> None:
    """Not a single ground-truth image with predictions: exit 2, one line, a guess why."""
    pred = tmp_path / "pred"
    pred.mkdir()
    if layout == "jpg.xml":
        copy_as(demo[1], pred, "{stem}.jpg.xml")
    elif layout == "yolo":
        for path in sorted(demo[1].glob("*.xml")):
            (pred / f"{path.stem}.txt").write_text("0 0.5 0.5 0.2 0.2 0.9\n", encoding="utf-8")
    elif layout == "voc-results":
        (pred / "comp4_det_test_car.txt").write_text("street_01 0.9 1 1 5 5\n", encoding="utf-8")
    elif layout == "one-down":
        copy_as(demo[1], pred / "run1")
    elif layout == "other":
        copy_as(demo[1].parents[1] / "labels" / "pred", pred)
    for args in ([], ["--mode", "labels"]):
        code, out, err = run(str(demo[0]), str(pred), *args)
        assert code == EXIT_USAGE
        assert out == ""
        expected = reason.format(pred=pred)
        assert (
            err == f"vocmatch: error: no ground-truth image pairs with a prediction: {expected}\n"
        )


def test_diff_refuses_a_run_that_pairs_with_nothing(tmp_path: Path) -> None:
    """Either run of a diff pairing with no image is the same usage error."""
    diff = Path(__file__).resolve().parents[2] / "fixtures" / "diff"
    (tmp_path / "b").mkdir()
    code, _, err = run("diff", str(diff / "gt"), str(diff / "pred_a"), str(tmp_path / "b"))
    assert code == EXIT_USAGE
    assert "no ground-truth image pairs with a prediction" in err


def test_many_warnings_of_a_kind_are_one_line(tmp_path: Path) -> None:
    """Up to 20 missing prediction files are named one per line; beyond, one line counts
    them, and the JSON still lists every one."""
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    for k in range(25):
        write_voc(gt / f"img{k:02d}.xml", [("car", 1, 1, 9, 9, None)])
    for k in range(3):
        write_voc(pred / f"img{k:02d}.xml", [("car", 1, 1, 9, 9, 0.5)])
    for k in range(40):
        write_voc(pred / f"extra{k:02d}.xml", [])
    code, out, err = run(str(gt), str(pred), "--format", "json")
    assert code == 0
    assert err.splitlines() == [
        "vocmatch: warning: 22 images have no prediction file ('img03', 'img04', 'img05', ...):"
        " their objects count as missed (--format json lists all, missing_pred)",
        f"vocmatch: warning: 40 prediction files have no ground-truth file ('{pred}/extra00.xml',"
        f" '{pred}/extra01.xml', '{pred}/extra02.xml', ...): not evaluated (--format json lists"
        " all, orphan_pred)",
    ]
    import json

    data = json.loads(out)
    assert len(data["missing_pred"]) == 22 and len(data["orphan_pred"]) == 40
    # At the limit, one line each.
    for k in range(3, 5):
        write_voc(pred / f"img{k:02d}.xml", [])
    _, _, err = run(str(gt), str(pred), "--format", "json")
    assert err.count("no prediction file for") == 20


def test_score_threshold_changes_counts_not_ap(demo: tuple[Path, Path]) -> None:
    """--score-threshold 0.6 on the demo: 12 of 16 predictions count, FP 5 -> 2, mAP the same;
    the header, JSON and a note say so."""
    import json

    code, out, _ = run(*map(str, demo), "--format", "json", "--score-threshold", "0.6")
    assert code == 0
    data = json.loads(out)
    s = data["summary"]
    assert (s["pred"], s["tp"], s["fp"], s["fn"], s["map"]) == (12, 10, 2, 4, 0.625)
    assert data["conventions"]["score_thresholds"] == {"default": 0.6, "classes": {}}
    assert data["notes"][-1].startswith("counts use predictions with score >= 0.6")
    car = next(c for c in data["classes"] if c["name"] == "car")
    assert (car["pred"], car["tp"], car["fp"], car["fn"], car["ap"]) == (3, 3, 0, 1, 0.75)
    assert car["operating_point"] == {
        "threshold": 0.77, "predictions": 3, "precision": 1.0, "recall": 0.75, "f": 6 / 7,
    }  # fmt: skip
    _, table, _ = run(*map(str, demo), "--score-threshold", "0.6")
    assert "counts      score >= 0.6; AP: every prediction" in table


def test_gates_apply_at_the_threshold(demo: tuple[Path, Path]) -> None:
    """Precision 0.6667 fails a 0.8 gate on every prediction, passes it at score >= 0.6."""
    args = [*map(str, demo), "--fail-under", "precision=0.8"]
    assert run(*args)[0] == 1
    assert run(*args, "--score-threshold", "0.6")[0] == 0


def test_write_then_pin_thresholds(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """--write-thresholds writes each class's operating point; --score-thresholds reads it
    back and the counts are those of the operating points."""
    import json

    path = tmp_path / "t.csv"
    code, out, _ = run(*map(str, demo), "--write-thresholds", str(path), "--format", "json")
    assert code == 0
    assert path.read_text() == (
        "class,threshold\nbicycle,0.81\nbus,0.99\ncar,0.77\ndog,0.84\nperson,0.62\n"
    )
    points = {c["name"]: c["operating_point"] for c in json.loads(out)["classes"]}
    _, pinned, _ = run(*map(str, demo), "--score-thresholds", str(path), "--format", "json")
    for cls in json.loads(pinned)["classes"]:
        point = points[cls["name"]]
        if point is not None:
            assert (cls["precision"], cls["recall"]) == (point["precision"], point["recall"])
    # In the demo every class's hits rank above its false positives: F2 picks the same.
    _, table, _ = run(*map(str, demo), "--write-thresholds", str(path), "--beta", "2")
    assert "Operating points (best F2, IoU 0.5)" in table
    assert "bicycle,0.81\n" in path.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--score-threshold", "nan"], "nan is not a finite number", id="nan"),
        pytest.param(["--beta", "0"], "--beta", id="beta-zero"),
        pytest.param(
            ["--score-thresholds", "{bad}"], "t.csv:2: threshold 'x' is not a number", id="bad-line"
        ),
        pytest.param(
            ["--score-thresholds", "{typo}"],
            "a threshold for class 'persn', which is in neither the ground truth nor the "
            "predictions; did you mean 'person'?",
            id="unknown-class",
        ),
        pytest.param(
            ["--mode", "labels", "--score-threshold", "0.5"], "applies to boxes", id="labels"
        ),
    ],
)
def test_threshold_usage_errors(
    demo: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    """Bad thresholds are usage errors (exit 2) with the file and line where there is one."""
    bad, typo = tmp_path / "t.csv", tmp_path / "typo.csv"
    bad.write_text("class,threshold\ncar,x\n")
    typo.write_text("persn,0.5\n")
    args = [a.format(bad=bad, typo=typo) for a in args]
    code, _, err = run(*map(str, demo), *args)
    assert code == EXIT_USAGE
    assert message in err


def test_unscored_predictions_refuse_a_threshold(tmp_path: Path) -> None:
    """Two annotators' boxes have no score: a threshold is a usage error, not a silent 0."""
    write_voc(tmp_path / "gt" / "a.xml", [("car", 1, 1, 9, 9, None)])
    write_voc(tmp_path / "pred" / "a.xml", [("car", 1, 1, 9, 9, None)])
    code, _, err = run(str(tmp_path / "gt"), str(tmp_path / "pred"), "--score-threshold", "0.5")
    assert code == EXIT_USAGE
    assert "needs scored predictions" in err


def test_html_slider_starts_at_the_threshold(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """The overlays' score slider starts at the threshold the counts use."""
    page = tmp_path / "r.html"
    run(*map(str, demo), "--html", str(page), "--score-threshold", "0.6")
    html = page.read_text()
    assert 'id="overlay-score" min="0" max="1" step="0.01" value="0.60"' in html
    run(*map(str, demo), "--html", str(page))
    assert 'step="0.01" value="0.00"' in page.read_text()


def voc_folder(tmp_path: Path, demo: tuple[Path, Path]) -> Path:
    """The demo ground truth in PASCAL VOC's layout, with a test and a val list."""
    root = tmp_path / "VOCdevkit" / "VOC2007"
    copy_as(demo[0], root / "Annotations")
    main = root / "ImageSets" / "Main"
    main.mkdir(parents=True)
    (main / "test.txt").write_text("street_01\nstreet_02\n\nstreet_01\n")
    (main / "val.txt").write_text("street_03\nstreet_09\n")
    (main / "car_test.txt").write_text("street_01  1\nstreet_02 -1\n")
    return root


def test_voc_folder_finds_annotations(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    """`vocmatch VOCdevkit/VOC2007 PRED` reads Annotations/: the demo's numbers."""
    import json

    root = voc_folder(tmp_path, demo)
    code, out, _ = run(str(root), str(demo[1]), "--format", "json")
    assert code == 0
    s = json.loads(out)["summary"]
    assert (s["images"], s["gt"], s["tp"], s["fp"], s["fn"], s["map"]) == (6, 14, 10, 5, 4, 0.625)


def test_split_restricts_the_ground_truth(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    """--split test evaluates street_01 and street_02 only; predictions of other images are
    not orphans; the same list given as a file, or a per-class list, reads the same."""
    import json

    root = voc_folder(tmp_path, demo)
    main = root / "ImageSets" / "Main"
    results = []
    for split in ("test", str(main / "test.txt"), str(main / "car_test.txt")):
        code, out, err = run(str(root), str(demo[1]), "--format", "json", "--split", split)
        assert code == 0 and err == ""
        data = json.loads(out)
        s = data["summary"]
        results.append((s["images"], s["gt"], s["pred"], s["tp"], s["fp"], s["fn"], s["map"]))
        assert data["orphan_pred"] == []
        assert "3 images of other splits in the predictions, not evaluated" in data["notes"][0]
    assert results == [(2, 6, 8, 5, 2, 1, 0.75)] * 3


def test_split_image_without_annotation_is_an_error(
    tmp_path: Path, demo: tuple[Path, Path]
) -> None:
    """A listed image without an annotation file is named with the list's line (exit 3)."""
    root = voc_folder(tmp_path, demo)
    code, _, err = run(str(root), str(demo[1]), "--split", "val")
    assert code == 3
    lists = root / "ImageSets" / "Main"
    assert (
        f"vocmatch: skipped {lists / 'val.txt'}:2: no annotation file for 'street_09' in "
        f"{root / 'Annotations'}"
    ) in err


def test_unknown_split_names_the_known_ones(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    """A split that is neither a file nor a list of the VOC folder: exit 2, the lists there."""
    root = voc_folder(tmp_path, demo)
    code, _, err = run(str(root), str(demo[1]), "--split", "trainval")
    assert code == EXIT_USAGE
    assert err == (
        f"vocmatch: error: --split 'trainval': no {root / 'ImageSets' / 'Main' / 'trainval.txt'}"
        " (the splits there: test, val)\n"
    )
    code, _, err = run(str(demo[0]), str(demo[1]), "--split", "test")
    assert code == EXIT_USAGE and "is not a VOC folder" in err


def test_a_split_name_beside_a_folder_of_that_name_is_the_list(
    tmp_path: Path, demo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--split test`` run where a folder called test exists reads ImageSets/Main/test.txt."""
    import json

    root = voc_folder(tmp_path / "voc", demo)
    (tmp_path / "test").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(str(root), str(demo[1]), "--format", "json", "--split", "test")
    assert code == 0 and json.loads(out)["summary"]["images"] == 2


def test_a_folder_as_split_is_named_as_a_folder(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    """A folder given to --split is refused as a folder (not as a missing file)."""
    code, out, err = run(str(demo[0]), str(demo[1]), "--split", str(tmp_path))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"vocmatch: error: --split {str(tmp_path)!r}: it is a folder; give a list file or a "
        "split name\n"
    )


@pytest.mark.parametrize(
    ("geometry", "expected", "notes"),
    [
        pytest.param(
            "shape",
            (4, 1, 1, 0.75),
            [
                "1 object of the ground truth has both a <bndbox> and a polygon or rotated box:"
                " scored by the shape only (--geometry box scores the <bndbox>)"
            ],
            id="shape",
        ),
        pytest.param(
            "box",
            (5, 0, 0, 1.0),
            [
                "--geometry box: of the ground truth, 1 object with both a <bndbox> and a shape"
                " scored by the <bndbox>; 2 objects with only a shape scored by its bounding box",
                "--geometry box: of the predictions, 1 object with only a shape scored by its"
                " bounding box",
            ],
            id="box",
        ),
    ],
)
def test_geometry_chooses_shape_or_box(
    geometry: str, expected: tuple[int, int, int, float], notes: list[str]
) -> None:
    """fixtures/shapes: the diamond with a <bndbox> scores 1/3 by its shape (FP and FN) and
    1/2 by its box (TP); under box every object is a box, so all five match."""
    import json

    shapes = Path(__file__).resolve().parents[2] / "fixtures" / "shapes"
    code, out, _ = run(str(shapes / "gt"), str(shapes / "pred"), "--geometry", geometry,
                       "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    s = data["summary"]
    assert (s["tp"], s["fp"], s["fn"], s["map"]) == expected
    assert data["notes"] == notes


def test_predictions_on_difficult_objects_are_counted(demo: tuple[Path, Path]) -> None:
    """The demo's one person prediction on a difficult person: neither TP nor FP, counted
    in pred_ignored (summary, class, image) and shown as 5 (+1) in the class table."""
    import json

    _, out, _ = run(*map(str, demo), "--format", "json")
    data = json.loads(out)
    assert data["summary"]["pred_ignored"] == 1
    person = next(c for c in data["classes"] if c["name"] == "person")
    assert (person["pred"], person["tp"], person["fp"], person["pred_ignored"]) == (6, 4, 1, 1)
    assert sum(i["pred_ignored"] for i in data["images"]) == 1
    _, table, _ = run(*map(str, demo))
    assert "│ person  │ 4 (+1) │ 5 (+1) │  4 │  1 │  0 │" in table
    assert "on difficult   1 ignored" in table


def test_coco_class_table_has_ap50_and_ap75(demo: tuple[Path, Path]) -> None:
    """Under --protocol coco each class shows AP, AP50 and AP75; the JSON too."""
    import json

    _, out, _ = run(*map(str, demo), "--protocol", "coco", "--format", "json")
    person = next(c for c in json.loads(out)["classes"] if c["name"] == "person")
    assert (person["ap50"], person["ap75"]) == (pytest.approx(1.0), pytest.approx(0.7524752475))
    _, table, _ = run(*map(str, demo), "--protocol", "coco")
    assert "┃     AP ┃   AP50 ┃   AP75 ┃" in table
    _, out, _ = run(*map(str, demo), "--format", "json")
    assert next(c for c in json.loads(out)["classes"])["ap50"] is None


@pytest.mark.parametrize(
    ("gate", "code", "message"),
    [
        pytest.param("ap50=0.627", 0, "", id="dataset-pass"),
        pytest.param(
            "ap75=0.6", 1, "vocmatch: gate failed: ap75 0.5446 < 0.6000", id="dataset-fail"
        ),
        pytest.param("person:ap50=1", 0, "", id="class-pass"),
        pytest.param(
            "car:ap75=0.6", 1, "vocmatch: gate failed: car:ap75 0.5050 < 0.6000", id="class-fail"
        ),
    ],
)
def test_gates_accept_ap50_and_ap75_under_coco(
    demo: tuple[Path, Path], gate: str, code: int, message: str
) -> None:
    """ap50 and ap75 gate COCO's AP50 / AP75, of the dataset or of a class."""
    got, _, err = run(*map(str, demo), "--protocol", "coco", "--fail-under", gate)
    assert got == code
    assert message in err


def test_ap50_gate_outside_coco_is_a_usage_error(demo: tuple[Path, Path]) -> None:
    code, _, err = run(*map(str, demo), "--fail-under", "ap50=0.5")
    assert code == EXIT_USAGE
    assert "ap50 is measured under --protocol coco" in err


def test_diff_markdown_and_fold_case(tmp_path: Path) -> None:
    """diff has eval's --format markdown (objects as class#n from 0) and --fold-case."""
    diff = Path(__file__).resolve().parents[2] / "fixtures" / "diff"
    args = [str(diff / "gt"), str(diff / "pred_a"), str(diff / "pred_b")]
    code, out, _ = run("diff", *args, "--format", "markdown", "--fail-on-regression", "map=-0.01")
    assert code == 1
    assert out.startswith("## vocmatch diff\n")
    assert "| mAP | 0.8333 | 0.7500 | -0.0833 |" in out
    assert "| kitchen | 1 | 0 | 1 | 0 | -2 | missed bowl#1, new FP cup#1 |" in out
    assert "### Regression gates: failed" in out
    # B names its classes in upper case: apart without --fold-case, one class with it.
    upper = tmp_path / "pred_b"
    upper.mkdir()
    for path in sorted((diff / "pred_b").glob("*.xml")):
        text = path.read_text().replace("<name>person</name>", "<name>Person</name>")
        (upper / path.name).write_text(text)
    import json

    _, apart, _ = run("diff", args[0], args[1], str(upper), "--format", "json")
    _, folded, _ = run("diff", args[0], args[1], str(upper), "--format", "json", "--fold-case")
    assert "Person" in [c["name"] for c in json.loads(apart)["classes"]]
    plain = json.loads(run("diff", *args, "--format", "json")[1])
    assert json.loads(folded)["summary"] == plain["summary"]


def test_objects_are_numbered_from_zero_everywhere(demo: tuple[Path, Path]) -> None:
    """JUnit, JSON's error boxes, the diff and the HTML overlay list all say class#n from 0."""
    import json

    _, junit, _ = run(*map(str, demo), "--format", "junit", "--max-fp", "0")
    assert "fp: truck#2, best IoU 0.000, score 0.71" in junit
    _, out, _ = run(*map(str, demo), "--format", "json", "--errors")
    street_03 = next(i for i in json.loads(out)["images"] if i["image"] == "street_03")
    assert {(b["name"], b["pred_index"]) for b in street_03["error_boxes"]} == {("truck", 2)}
    script = (
        Path(__file__).resolve().parents[2] / "vocmatch" / "templates" / "report.js"
    ).read_text()
    assert '(kind === "gt" ? "GT #" : "pred #") + entry[1]' in script

"""Label-error suspects: found exactly, ranked, and written as JSON, CSV and LabelImg copies."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from tests.conftest import run_cli as run
from vocmatch.cli import EXIT_OK, EXIT_SKIPPED, EXIT_USAGE
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.evidence.suspects import Suspect, SuspectOptions, find_suspects, suspect_copy
from vocmatch.readers.parse import AnnotationSet, parse_annotation, read_directory

SUSPECTS = FIXTURES / "suspects"
# Relative to the repository root (the CLI tests run there), as a user types them.
GT = "fixtures/suspects/gt"
PRED = "fixtures/suspects/pred"

#: fixtures/suspects/README.md: kind, image, class, box, confidence, IoU, pred, gt, other.
EXPECTED = [
    ("duplicate", "kitchen", "bowl", (101, 100, 200, 180), 0.99, 0.99, None, 2, 1),
    ("duplicate", "hall", "person", (10, 10, 50, 101), 3600 / 3640, 3600 / 3640, None, 1, 0),
    ("missing", "kitchen", "plate", (400, 200, 460, 260), 0.9, 0.0, 1, None, None),
    ("wrong-class", "kitchen", "cup", (300, 50, 350, 120), 0.8, 1.0, 3, 3, None),
    ("loose", "kitchen", "bowl", (100, 100, 260, 220), 0.7, 8000 / 19200, 4, 1, None),
    ("missing", "office", "chair", (260, 200, 300, 260), 0.55, 0.0, 2, None, None),
    ("loose", "office", "laptop", (150, 50, 350, 200), 0.5, 1 / 3, 3, 0, None),
]


def summary(suspects: tuple[Suspect, ...]) -> list[tuple[object, ...]]:
    return [
        (
            s.kind,
            s.image,
            s.name,
            s.box,
            s.confidence,
            s.iou,
            s.pred_index,
            s.gt_index,
            s.other_index,
        )
        for s in suspects
    ]


def test_fixture_suspects_exactly() -> None:
    """The seven suspects of fixtures/suspects, most confident first."""
    report = find_suspects(read_directory(SUSPECTS / "gt"), read_directory(SUSPECTS / "pred"))
    assert summary(report.suspects) == [
        (*e[:4], pytest.approx(e[4]), pytest.approx(e[5]), *e[6:]) for e in EXPECTED
    ]
    assert (report.images, report.confident) == (3, 9)
    wrong = report.suspects[3]
    assert (wrong.gt_name, wrong.label) == ("mug", "suspect:wrong-class:cup")


def test_thresholds_change_what_is_suspect() -> None:
    """A higher confidence drops the less sure suspects; a lower duplicate IoU finds the
    third person of the hall on the first (IoU 0.75, ranked by it)."""
    report = find_suspects(
        read_directory(SUSPECTS / "gt"),
        read_directory(SUSPECTS / "pred"),
        SuspectOptions(confidence=0.75, duplicate_iou=0.75),
    )
    assert [(s.kind, s.image, s.gt_index) for s in report.suspects] == [
        ("duplicate", "kitchen", 2),
        ("duplicate", "hall", 1),
        ("missing", "kitchen", None),
        ("wrong-class", "kitchen", 3),
        ("duplicate", "hall", 2),
    ]


def test_unscored_predictions_are_confident_and_rank_last() -> None:
    """A second labelling pass (no scores): every box is a claim; its suspects come after
    the scored ones, by kind, then image, then file order."""
    gt = read_directory(SUSPECTS / "gt")
    pred = read_directory(SUSPECTS / "pred")
    unscored = replace(
        pred,
        annotations=tuple(
            replace(a, boxes=tuple(replace(b, score=None) for b in a.boxes))
            for a in pred.annotations
        ),
    )
    report = find_suspects(gt, unscored)
    kinds = [(s.kind, s.image, s.confidence) for s in report.suspects]
    assert kinds[:2] == [("duplicate", "kitchen", 0.99), ("duplicate", "hall", 3600 / 3640)]
    # kitchen pred 5 (0.3) now counts: a cup on nothing.
    assert kinds[2:] == [
        ("missing", "kitchen", None),
        ("missing", "kitchen", None),
        ("missing", "office", None),
        ("wrong-class", "kitchen", None),
        ("loose", "kitchen", None),
        ("loose", "office", None),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"confidence": 1.5}, "confidence must be within", id="confidence"),
        pytest.param({"background_iou": 0.6}, "must be below match_iou", id="background"),
        pytest.param({"duplicate_iou": float("nan")}, "duplicate_iou must be within", id="nan"),
    ],
)
def test_options_are_checked(options: dict[str, float], message: str) -> None:
    """Thresholds outside [0, 1], or a background IoU not below the match IoU, are refused."""
    with pytest.raises(ValueError, match=message):
        SuspectOptions(**options)


def suspect(name: str = "dog") -> Suspect:
    return Suspect("missing", "a", "a.xml", name, (1.0, 2.0, 30.0, 40.5), 0.9, 0.0, 0)


def test_copy_keeps_the_file_and_adds_objects() -> None:
    """The copy is the original, byte for byte, with the suggestions before </annotation>;
    it parses to the original objects and then the suggestions."""
    original = (SUSPECTS / "gt" / "office.xml").read_bytes()
    copy = suspect_copy(original, [suspect(), suspect("cat")])
    end = original.rindex(b"</annotation>")
    assert copy.startswith(original[:end]) and copy.endswith(original[end:])
    boxes = parse_annotation(copy, "copy.xml", "office").boxes
    assert [b.name for b in boxes] == [
        "laptop",
        "person",
        "suspect:missing:dog",
        "suspect:missing:cat",
    ]
    assert (boxes[2].x1, boxes[2].y1, boxes[2].x2, boxes[2].y2) == (1.0, 2.0, 30.0, 40.5)


def test_copy_keeps_encoding_and_line_ends() -> None:
    """A file declared ISO-8859-1 with CRLF line ends gets its suggestions in that encoding
    and with those line ends; a name outside the encoding becomes a character reference."""
    original = (
        '<?xml version="1.0" encoding="ISO-8859-1"?>\r\n<annotation>\r\n</annotation>\r\n'.encode(
            "latin-1"
        )
    )
    copy = suspect_copy(original, [suspect("café"), suspect("猫")])
    assert b"\r\n\t<object>\r\n" in copy and b"\n\t<object>\n" not in copy.replace(b"\r\n", b"")
    names = [b.name for b in parse_annotation(copy, "c.xml", "c").boxes]
    assert names == ["suspect:missing:café", "suspect:missing:猫"]


def test_copy_escapes_names() -> None:
    """A class name holding XML markup is written as text."""
    copy = suspect_copy(b"<annotation></annotation>", [suspect("a<b>&c")])
    assert [b.name for b in parse_annotation(copy, "c.xml", "c").boxes] == [
        "suspect:missing:a<b>&c"
    ]


def test_copy_needs_the_closing_tag() -> None:
    """A file that does not end with </annotation> gets no copy."""
    with pytest.raises(ValueError, match="does not end with </annotation>"):
        suspect_copy(b"<annotation><object/>", [suspect()])


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.usefixtures("at_root")
def test_cli_writes_json_csv_and_copies(tmp_path: Path) -> None:
    """--output DIR: suspects.json and suspects.csv ranked as the library ranks them, and a
    LabelImg copy of each image with suspects."""
    out = tmp_path / "review"
    code, stdout, stderr = run("suspects", GT, PRED, "--output", str(out))
    assert (code, stderr) == (EXIT_OK, "")
    assert "7 suspects (2 missing, 1 wrong-class, 2 loose, 2 duplicate) in 3 images" in stdout
    data = json.loads((out / "suspects.json").read_text(encoding="utf-8"))
    assert data["counts"] == {"missing": 2, "wrong-class": 1, "loose": 2, "duplicate": 2}
    assert [(s["rank"], s["kind"], s["image"], s["class"]) for s in data["suspects"]] == [
        (i, e[0], e[1], e[2]) for i, e in enumerate(EXPECTED, 1)
    ]
    assert data["copies"] == [
        "annotations/hall.xml",
        "annotations/kitchen.xml",
        "annotations/office.xml",
    ]
    rows = (out / "suspects.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("rank,kind,image,gt_path,class,xmin,ymin,xmax,ymax,confidence,iou")
    assert rows[4].startswith(
        "4,wrong-class,kitchen,fixtures/suspects/gt/kitchen.xml,cup,300.0,50.0,350.0,120.0,0.8,1.0,3,3,,mug"
    )
    kitchen = read_directory(out / "annotations").annotations[1]
    assert [b.name for b in kitchen.boxes][4:] == [
        "suspect:duplicate:bowl",
        "suspect:missing:plate",
        "suspect:wrong-class:cup",
        "suspect:loose:bowl",
    ]


@pytest.mark.usefixtures("at_root")
def test_cli_rerun_replaces_its_own_output(tmp_path: Path) -> None:
    """A second run into the same folder replaces the copies and removes those it no
    longer writes; a folder holding other files is refused before any work."""
    out = tmp_path / "review"
    run("suspects", GT, PRED, "--output", str(out))
    code, _, _ = run("suspects", GT, PRED, "--output", str(out), "--confidence", "0.95")
    assert code == EXIT_OK
    assert sorted(p.name for p in (out / "annotations").iterdir()) == ["hall.xml", "kitchen.xml"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, stdout, stderr = run("suspects", GT, PRED, "--output", str(other))
    assert (code, stdout) == (EXIT_USAGE, "")
    assert "it holds other files" in stderr
    assert (other / "notes.txt").read_text() == "mine"


def test_cli_copies_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    """A previous run's folder whose ``annotations`` became a file: one line, exit 2, no
    traceback."""
    out = tmp_path / "review"
    assert run("suspects", GT, PRED, "--output", str(out))[0] == EXIT_OK
    shutil.rmtree(out / "annotations")
    (out / "annotations").write_text("", encoding="utf-8")
    code, _, stderr = run("suspects", GT, PRED, "--output", str(out))
    assert code == EXIT_USAGE
    assert stderr == (
        f"vocmatch: error: cannot write {out / 'annotations' / 'hall.xml'}: "
        f"{out / 'annotations'} is not a folder\n"
    )


@pytest.mark.usefixtures("at_root")
def test_cli_refuses_an_output_among_the_inputs() -> None:
    """Copies written into the ground-truth folder would be read as annotations next time."""
    code, stdout, stderr = run("suspects", GT, PRED, "--output", GT)
    assert (code, stdout) == (EXIT_USAGE, "")
    assert "would mix with the input folder" in stderr


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("output_format", ["json", "csv"])
def test_cli_formats_on_stdout(output_format: str) -> None:
    """--format json or csv prints what --output would write."""
    code, stdout, _ = run("suspects", GT, PRED, "--format", output_format)
    assert code == EXIT_OK
    if output_format == "json":
        assert len(json.loads(stdout)["suspects"]) == 7
    else:
        assert len(stdout.splitlines()) == 8


def test_cli_skipped_file_exits_3(tmp_path: Path) -> None:
    """An unreadable ground-truth file is named on stderr; the rest are looked at; exit 3."""
    gt = tmp_path / "gt"
    gt.mkdir()
    for path in (SUSPECTS / "gt").glob("*.xml"):
        (gt / path.name).write_bytes(path.read_bytes())
    (gt / "broken.xml").write_text("<annotation><object>")
    code, stdout, stderr = run("suspects", str(gt), str(SUSPECTS / "pred"), "--format", "json")
    assert code == EXIT_SKIPPED
    assert "broken.xml" in stderr
    assert len(json.loads(stdout)["suspects"]) == 7


def test_a_suspect_in_an_image_without_predictions_file() -> None:
    """Duplicates are found in an image that has no prediction file."""
    gt = AnnotationSet(
        "gt",
        (ImageAnnotation("x", "x.xml", (Box("a", 0, 0, 10, 10), Box("a", 0, 0, 10, 10))),),
        (),
    )
    report = find_suspects(gt, AnnotationSet("pred", (), ()))
    assert [(s.kind, s.gt_index, s.other_index, s.confidence) for s in report.suspects] == [
        ("duplicate", 1, 0, 1.0)
    ]

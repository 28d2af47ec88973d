"""Small words: counts agree with their nouns (1 image, 1 suspect, never 1 images or
image(s)); suspects never suggest renaming an object to a class the ground truth never uses;
p-values have four places in every table, as in the gate lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from tests.cli.test_cli import run
from vocmatch.core.model import Box, ImageAnnotation
from vocmatch.evidence.suspects import find_suspects, suspects_json
from vocmatch.readers.parse import AnnotationSet
from vocmatch.render.evidence_tables import suspects_report


def text_of(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_one_listed_image_is_one_image(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    split = tmp_path / "one.txt"
    split.write_text("street_01\n", encoding="utf-8")
    code, out, _ = run(
        "eval", str(root / "fixtures/demo/gt"), str(root / "fixtures/demo/pred"),
        "--split", str(split), "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["notes"][0] == (
        f"split {split}: 1 image listed; 4 images of other splits in the predictions, not evaluated"
    )


def test_one_missing_prediction_file_is_one_image() -> None:
    root = Path(__file__).resolve().parents[2]
    code, out, _ = run("eval", str(root / "fixtures/demo/gt"), str(root / "fixtures/demo/pred"))
    assert code == 0
    assert "no prediction file  1 image, their objects count as FN" in out


def sets() -> tuple[AnnotationSet, AnnotationSet]:
    """A sofa predicted as COCO's couch (a class the ground truth never uses), and a cat
    predicted as a dog (a class it uses)."""
    gt = AnnotationSet(
        "gt",
        (ImageAnnotation("a", "gt/a.xml", (Box("sofa", 0, 0, 100, 100), Box("cat", 200, 0, 260, 60),
                                           Box("dog", 300, 0, 360, 60))),),
        (),
    )  # fmt: skip
    pred = AnnotationSet(
        "pred",
        (ImageAnnotation("a", "pred/a.xml", (Box("couch", 0, 0, 100, 100, score=0.9),
                                             Box("dog", 200, 0, 260, 60, score=0.8),
                                             Box("dog", 300, 0, 360, 60, score=0.95))),),
        (),
    )  # fmt: skip
    return gt, pred


def test_suspects_never_suggest_a_class_the_ground_truth_never_uses() -> None:
    report = find_suspects(*sets())
    assert [(s.kind, s.name, s.gt_name) for s in report.suspects] == [("wrong-class", "dog", "cat")]
    assert report.foreign == 1
    assert json.loads(suspects_json(report))["foreign_class_predictions"] == 1
    assert (
        "1 suspect (0 missing, 1 wrong-class, 0 loose, 0 duplicate) in 1 image, from 3 "
        "confident predictions (1 other would rename an object to a class the ground truth "
        "never uses: not suggested); gt#n and pred#n: object n (from 0) of the file"
    ) in " ".join(text_of(suspects_report(report, 20)).split())

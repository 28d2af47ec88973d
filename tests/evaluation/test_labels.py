"""Label-set evaluation: per-image Jaccard and Dice, per-class IoU over images, macro and micro."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocmatch.core.model import Box, ImageAnnotation, SkippedFile
from vocmatch.errors import InputError
from vocmatch.evaluation.labels_and_masks.labels import (
    LabelClassResult,
    LabelDifficult,
    LabelEvaluation,
    evaluate_label_sets,
    label_sets,
)
from vocmatch.evaluation.scoring import read_pair
from vocmatch.readers.parse import AnnotationSet

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "labels"


def image(key: str, *names: str, difficult: tuple[str, ...] = ()) -> ImageAnnotation:
    """An annotation whose objects have the given class names (boxes do not matter)."""
    boxes = [Box(name, 0, 0, 10, 10) for name in names]
    boxes += [Box(name, 0, 0, 10, 10, difficult=True) for name in difficult]
    return ImageAnnotation(key, f"{key}.xml", tuple(boxes))


def annotation_set(
    *images: ImageAnnotation, skipped: tuple[SkippedFile, ...] = ()
) -> AnnotationSet:
    return AnnotationSet("dir", tuple(images), skipped)


@pytest.fixture
def known() -> LabelEvaluation:
    """The fixture: GT {A,B,C}, {A,C}, {B,C}, {A,B,C}; predictions {B}, {A,B,C} x 3."""
    return evaluate_label_sets(*read_pair(FIXTURE / "gt", FIXTURE / "pred"))


def test_known_answer_per_class_iou(known: LabelEvaluation) -> None:
    """Airplane TP 2 FP 1 FN 1 is 2/4; boat TP 3 FP 1 and car TP 3 FN 1 are 3/4."""
    assert known.classes == (
        LabelClassResult("airplane", tp=2, fp=1, fn=1, ignored=0, iou=2 / 4),
        LabelClassResult("boat", tp=3, fp=1, fn=0, ignored=0, iou=3 / 4),
        LabelClassResult("car", tp=3, fp=0, fn=1, ignored=0, iou=3 / 4),
    )


def test_known_answer_macro_and_micro(known: LabelEvaluation) -> None:
    """Macro IoU is (2/4 + 3/4 + 3/4) / 3 = 2/3; micro IoU is 8 / (8 + 2 + 2) = 2/3."""
    assert known.macro_iou == 2 / 3
    assert known.micro_iou == 8 / 12
    assert (known.tp, known.fp, known.fn) == (8, 2, 2)


def test_known_answer_per_image(known: LabelEvaluation) -> None:
    """Jaccard 1/3, 2/3, 2/3, 1 and Dice 1/2, 4/5, 4/5, 1; their means 2/3 and 31/40."""
    assert [i.key for i in known.images] == ["sample_1", "sample_2", "sample_3", "sample_4"]
    assert [i.jaccard for i in known.images] == [1 / 3, 2 / 3, 2 / 3, 1.0]
    assert [i.dice for i in known.images] == [1 / 2, 4 / 5, 4 / 5, 1.0]
    assert known.mean_jaccard == 2 / 3
    assert known.mean_dice == 31 / 40
    assert known.exact_match == 1 / 4


def test_known_answer_sets_are_lower_case_and_deduplicated(known: LabelEvaluation) -> None:
    """sample_2 has two Car boxes: one car in its set; names are lower-cased."""
    sample_2 = known.images[1]
    assert sample_2.gt == ("airplane", "car")
    assert sample_2.pred == ("airplane", "boat", "car")
    assert (sample_2.found, sample_2.missed, sample_2.extra) == (
        ("airplane", "car"),
        (),
        ("boat",),
    )
    assert known.images[0].missed == ("airplane", "car")
    assert known.notes == ()


@pytest.mark.parametrize(
    ("gt_names", "pred_names", "jaccard", "dice"),
    [
        pytest.param((), (), 1.0, 1.0, id="both-empty"),
        pytest.param((), ("cat",), 0.0, 0.0, id="gt-empty"),
        pytest.param(("cat",), (), 0.0, 0.0, id="pred-empty"),
        pytest.param(("cat", "dog"), ("dog", "cat"), 1.0, 1.0, id="equal"),
        pytest.param(("cat",), ("dog",), 0.0, 0.0, id="disjoint"),
    ],
)
def test_per_image_scores_of_small_sets(
    gt_names: tuple[str, ...], pred_names: tuple[str, ...], jaccard: float, dice: float
) -> None:
    """An image with nothing there and nothing predicted scores 1.0; an empty side against a
    non-empty one scores 0.0."""
    result = evaluate_label_sets(
        annotation_set(image("a", *gt_names)), annotation_set(image("a", *pred_names))
    )
    assert (result.images[0].jaccard, result.images[0].dice) == (jaccard, dice)


def test_both_empty_images_count_in_the_means_and_are_noted() -> None:
    """An empty image predicted empty adds 1.0 to the per-image means, nothing to any class."""
    gt = annotation_set(image("a", "cat"), image("b"))
    pred = annotation_set(image("a"), image("b"))
    result = evaluate_label_sets(gt, pred)
    assert result.mean_jaccard == 0.5
    assert result.exact_match == 0.5
    assert result.classes == (LabelClassResult("cat", tp=0, fp=0, fn=1, ignored=0, iou=0.0),)
    assert result.macro_iou == 0.0
    assert result.micro_iou == 0.0
    assert result.notes == ("1 image with no class in either set: Jaccard and Dice 1.0",)


def test_all_images_empty_has_no_class_scores() -> None:
    """With no class anywhere, macro and micro IoU are undefined and every image scores 1.0."""
    result = evaluate_label_sets(annotation_set(image("a")), annotation_set(image("a")))
    assert result.classes == ()
    assert (result.macro_iou, result.micro_iou) == (None, None)
    assert (result.mean_jaccard, result.mean_dice, result.exact_match) == (1.0, 1.0, 1.0)


def test_missing_prediction_file_is_an_empty_set_and_listed(tmp_path: Path) -> None:
    """A ground-truth image without a prediction file is evaluated with nothing predicted."""
    gt_dir, pred_dir = tmp_path / "gt", tmp_path / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    for name in ("sample_1", "sample_2"):
        (gt_dir / f"{name}.xml").write_bytes((FIXTURE / "gt" / f"{name}.xml").read_bytes())
    (pred_dir / "sample_2.xml").write_bytes((FIXTURE / "pred" / "sample_2.xml").read_bytes())
    result = evaluate_label_sets(*read_pair(gt_dir, pred_dir))
    assert result.missing_pred == ("sample_1",)
    first = result.images[0]
    assert (first.key, first.pred_path, first.pred) == ("sample_1", None, ())
    assert (first.jaccard, first.dice) == (0.0, 0.0)
    assert [(c.name, c.tp, c.fp, c.fn) for c in result.classes] == [
        ("airplane", 1, 0, 1),
        ("boat", 0, 1, 1),
        ("car", 1, 0, 1),
    ]


def test_orphan_prediction_is_listed_and_not_evaluated() -> None:
    """A prediction file without ground truth adds no image and no false positive."""
    gt = annotation_set(image("a", "cat"))
    pred = annotation_set(image("a", "cat"), image("b", "dog"))
    result = evaluate_label_sets(gt, pred)
    assert result.orphan_pred == ("b.xml",)
    assert [i.key for i in result.images] == ["a"]
    assert [c.name for c in result.classes] == ["cat"]
    assert result.micro_iou == 1.0


def test_unreadable_file_leaves_its_image_out() -> None:
    """An image whose prediction file could not be read is not scored; the file is skipped."""
    broken = SkippedFile("pred/b.xml", "not well-formed XML", 3, key="b")
    gt = annotation_set(image("a", "cat"), image("b", "dog"))
    pred = annotation_set(image("a", "cat"), skipped=(broken,))
    result = evaluate_label_sets(gt, pred)
    assert [i.key for i in result.images] == ["a"]
    assert result.skipped == (broken,)
    assert result.missing_pred == ()
    assert result.macro_iou == 1.0


def test_names_differing_in_case_or_spaces_are_one_class() -> None:
    """Car, car and ' CAR ' are one class, named car; the merged spellings are noted."""
    gt = annotation_set(image("a", "Car", "dog"))
    pred = annotation_set(image("a", "car", " CAR "))
    result = evaluate_label_sets(gt, pred)
    assert result.images[0].gt == ("car", "dog")
    assert result.images[0].pred == ("car",)
    assert result.images[0].jaccard == 0.5
    assert result.notes == ("class names folded to lower case: CAR/Car/car as car",)


def test_class_only_predicted_counts_in_macro_iou() -> None:
    """A class never in the ground truth has IoU 0 and is averaged into the macro IoU."""
    gt = annotation_set(image("a", "cat"), image("b", "cat"))
    pred = annotation_set(image("a", "cat", "dog"), image("b", "cat"))
    result = evaluate_label_sets(gt, pred)
    assert [(c.name, c.gt, c.pred, c.iou) for c in result.classes] == [
        ("cat", 2, 2, 1.0),
        ("dog", 0, 1, 0.0),
    ]
    assert result.macro_iou == 0.5
    assert result.micro_iou == 2 / 3


@pytest.mark.parametrize(
    ("difficult", "gt_set", "ignored", "jaccard", "dog"),
    [
        pytest.param(
            "ignore",
            ("cat",),
            ("dog",),
            1.0,
            LabelClassResult("dog", tp=0, fp=0, fn=0, ignored=1, iou=None),
            id="ignore",
        ),
        pytest.param(
            "count",
            ("cat", "dog"),
            (),
            1.0,
            LabelClassResult("dog", tp=1, fp=0, fn=0, ignored=0, iou=1.0),
            id="count",
        ),
    ],
)
def test_difficult_only_class_is_ignored_by_default(
    difficult: LabelDifficult,
    gt_set: tuple[str, ...],
    ignored: tuple[str, ...],
    jaccard: float,
    dog: LabelClassResult,
) -> None:
    """A class present only as difficult objects is neither TP nor FP when predicted (VOC
    classification), unless difficult objects are counted."""
    gt = annotation_set(image("a", "cat", difficult=("dog",)))
    pred = annotation_set(image("a", "cat", "dog"))
    result = evaluate_label_sets(gt, pred, difficult)
    first = result.images[0]
    assert (first.gt, first.ignored, first.jaccard) == (gt_set, ignored, jaccard)
    assert first.extra == ()
    assert result.classes[1] == dog
    assert result.macro_iou == 1.0


def test_difficult_only_class_not_predicted_is_not_missed() -> None:
    """Not predicting a class whose objects are all difficult costs nothing."""
    gt = annotation_set(image("a", "cat", difficult=("dog",)))
    result = evaluate_label_sets(gt, annotation_set(image("a", "cat")))
    assert result.images[0].missed == ()
    assert (result.fn, result.micro_iou) == (0, 1.0)


def test_a_difficult_object_beside_an_ordinary_one_counts() -> None:
    """The class stays required when one of its objects is not difficult."""
    assert label_sets(image("a", "dog", difficult=("dog",))) == (("dog",), ())


def test_scored_predictions_are_noted() -> None:
    """Scores do not filter predictions; a note says so."""
    gt = annotation_set(image("a", "cat"))
    scored = ImageAnnotation("a", "a.xml", (Box("cat", 0, 0, 1, 1, score=0.01),))
    result = evaluate_label_sets(gt, annotation_set(scored))
    assert result.micro_iou == 1.0
    assert result.notes == (
        "1 prediction carries a score; label sets count every prediction whatever its score",
    )


def test_unknown_difficult_convention_is_refused() -> None:
    """Only ignore and count are conventions for label sets."""
    with pytest.raises(InputError, match="difficult must be 'ignore' or 'count', got 'crowd'"):
        evaluate_label_sets(annotation_set(), annotation_set(), "crowd")  # type: ignore[arg-type]


def test_results_are_frozen(known: LabelEvaluation) -> None:
    """Records cannot be changed after the fact."""
    with pytest.raises(FrozenInstanceError):
        known.images[0].jaccard = 1.0  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        known.macro_iou = 1.0  # type: ignore[misc]


NAMES = st.sampled_from(["cat", "dog", "Car", "car", "bird"])
SETS = st.lists(st.lists(NAMES, max_size=4), min_size=1, max_size=6)


@st.composite
def gt_and_pred(draw: st.DrawFn) -> tuple[AnnotationSet, AnnotationSet]:
    gt_names = draw(SETS)
    pred_names = draw(
        st.lists(st.lists(NAMES, max_size=4), min_size=len(gt_names), max_size=len(gt_names))
    )
    gt = annotation_set(*(image(f"i{n}", *names) for n, names in enumerate(gt_names)))
    pred = annotation_set(*(image(f"i{n}", *names) for n, names in enumerate(pred_names)))
    return gt, pred


@given(gt_and_pred())
def test_scores_are_bounded_and_symmetric(sets: tuple[AnnotationSet, AnnotationSet]) -> None:
    """Every score lies in [0, 1], and swapping ground truth and predictions swaps FP and FN
    but changes no IoU, Jaccard or Dice."""
    gt, pred = sets
    forward = evaluate_label_sets(gt, pred)
    backward = evaluate_label_sets(pred, gt)
    for result in (forward, backward):
        for value in (result.macro_iou, result.micro_iou, result.mean_jaccard, result.mean_dice):
            assert value is None or 0.0 <= value <= 1.0
        for cls in result.classes:
            assert cls.iou is not None and 0.0 <= cls.iou <= 1.0
    assert [(i.jaccard, i.dice) for i in forward.images] == [
        (i.jaccard, i.dice) for i in backward.images
    ]
    assert [(c.name, c.tp, c.fp, c.fn, c.iou) for c in forward.classes] == [
        (c.name, c.tp, c.fn, c.fp, c.iou) for c in backward.classes
    ]
    assert (forward.macro_iou, forward.micro_iou) == (backward.macro_iou, backward.micro_iou)


@given(SETS)
def test_predicting_the_ground_truth_scores_one(names: list[list[str]]) -> None:
    """Predictions equal to the ground truth give 1.0 everywhere (or no class score at all)."""
    gt = annotation_set(*(image(f"i{n}", *row) for n, row in enumerate(names)))
    result = evaluate_label_sets(gt, gt)
    assert result.mean_jaccard == result.mean_dice == result.exact_match == 1.0
    assert result.micro_iou in (1.0, None)
    assert result.macro_iou in (1.0, None)
    assert all(c.fp == c.fn == 0 for c in result.classes)

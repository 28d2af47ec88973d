"""Tests of vocmatch.evaluation.labels_and_masks.seg: confusion matrices, IoU and mask-directory evaluation."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import FrozenInstanceError
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from vocmatch.errors import AnnotationError, InputError
from vocmatch.evaluation.labels_and_masks.seg import (
    MAX_MASK_PIXELS,
    VOC_CLASSES,
    SegClassResult,
    SegImageResult,
    SegSkipped,
    class_iou,
    confusion_matrix,
    evaluate_masks,
    pred_void_counts,
    read_class_names,
    read_mask,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "seg"

# The hand-made 4x5 pair written by fixtures/seg/make_masks.py (HAND_GT, HAND_PRED).
HAND_GT = np.array(
    [[0, 0, 1, 1, 1], [0, 0, 1, 1, 1], [2, 2, 2, 1, 255], [2, 2, 2, 0, 255]], dtype=np.uint8
)
HAND_PRED = np.array(
    [[0, 1, 1, 1, 1], [0, 0, 1, 2, 1], [2, 2, 0, 1, 0], [2, 2, 2, 0, 2]], dtype=np.uint8
)
# Worked by hand: rows are ground truth, columns prediction; the two void pixels are left out.
HAND_CONFUSION = [[4, 1, 0], [0, 6, 1], [1, 0, 5]]
HAND_IOU = [4 / 6, 6 / 8, 5 / 7]


def write_mask(path: Path, values: npt.ArrayLike, mode: str = "P") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(np.asarray(values, dtype=np.uint8))
    if mode == "P":
        image = image.convert("P")
    image.save(path, format="PNG")


def class_by_name(classes: tuple[SegClassResult, ...], name: str) -> SegClassResult:
    return next(c for c in classes if c.name == name)


# confusion_matrix and class_iou


def test_confusion_matrix_of_hand_example() -> None:
    """Rows count ground truth and columns prediction, void ground truth left out."""
    confusion = confusion_matrix(HAND_GT, HAND_PRED, 3)

    assert confusion.dtype == np.int64
    assert confusion.tolist() == HAND_CONFUSION


def test_class_iou_of_hand_example() -> None:
    """Each class's IoU is TP / (TP + FP + FN) of the confusion matrix."""
    iou = class_iou(confusion_matrix(HAND_GT, HAND_PRED, 3))

    assert iou.tolist() == pytest.approx(HAND_IOU)


def test_iou_of_100_tp_25_fp_75_fn_is_one_half() -> None:
    """100 true positives, 25 false positives and 75 false negatives give IoU 100 / 200."""
    gt = np.array([1] * 100 + [0] * 25 + [1] * 75 + [0] * 50).reshape(10, 25)
    pred = np.array([1] * 100 + [1] * 25 + [0] * 75 + [0] * 50).reshape(10, 25)

    confusion = confusion_matrix(gt, pred, 2)

    assert confusion.tolist() == [[50, 25], [75, 100]]
    assert class_iou(confusion)[1] == 0.5


def test_void_ground_truth_pixels_are_ignored() -> None:
    """Whatever is predicted where the ground truth is 255 changes nothing."""
    gt = np.array([[0, 1, 255, 255]])

    for pred in ([[0, 1, 0, 0]], [[0, 1, 1, 1]], [[0, 1, 1, 0]]):
        assert confusion_matrix(gt, pred, 2).tolist() == [[1, 0], [0, 1]]


def test_class_absent_everywhere_has_nan_iou() -> None:
    """A class in neither mask has no IoU, and the others are unaffected."""
    iou = class_iou(confusion_matrix([[0, 0, 1]], [[0, 1, 1]], 3))

    assert iou[:2].tolist() == [0.5, 0.5]
    assert np.isnan(iou[2])


def test_empty_masks_give_zero_matrix_of_full_shape() -> None:
    """No pixels is a (C, C) matrix of zeros, not an error."""
    empty = np.zeros((0, 0), dtype=np.uint8)

    assert confusion_matrix(empty, empty, 4).tolist() == [[0] * 4] * 4


def test_confusion_matrix_does_not_mutate_its_arguments() -> None:
    """The inputs are read, never written."""
    gt, pred = HAND_GT.copy(), HAND_PRED.copy()
    gt.flags.writeable = False
    pred.flags.writeable = False

    confusion_matrix(gt, pred, 3)

    assert (gt == HAND_GT).all()
    assert (pred == HAND_PRED).all()


@pytest.mark.parametrize(
    ("gt", "pred", "n_classes", "message"),
    [
        pytest.param(
            [[0, 1]], [[0, 1, 1]], 2, r"same shape, got \(1, 2\) and \(1, 3\)", id="shape"
        ),
        pytest.param(
            [[0, 1]],
            [[0, 2]],
            2,
            r"`pred` value 2 is not a class index \(0\.\.1\)",
            id="pred-range",
        ),
        pytest.param(
            [[0, 7]], [[0, 1]], 2, r"`gt` value 7 is neither a class index", id="gt-range"
        ),
        pytest.param([[0, -1]], [[0, 1]], 2, r"`gt` value -1 is neither", id="negative"),
        pytest.param([[0, 256]], [[0, 1]], 2, r"`gt` value 256 is neither", id="above-255"),
        pytest.param(
            [[0, 1]],
            [[0.0, 1.0]],
            2,
            r"`pred` to hold integer class indices, got float64",
            id="float",
        ),
        pytest.param([[0, 1]], [[0, 1]], 0, r"`n_classes` in 1\.\.255, got 0", id="no-classes"),
        pytest.param([[0, 1]], [[0, 1]], 256, r"`n_classes` in 1\.\.255, got 256", id="too-many"),
        pytest.param(
            [[0, 1]], [[0, 255]], 2, r"`pred` value 255 \(void\) in a prediction", id="pred-void"
        ),
        pytest.param(
            [[255, 1]], [[255, 1]], 2, r"`pred` value 255 \(void\)", id="pred-void-on-void"
        ),
    ],
)
def test_confusion_matrix_rejects_bad_input(
    gt: list[list[float]], pred: list[list[float]], n_classes: int, message: str
) -> None:
    """Bad shapes, types and values raise ValueError naming the argument."""
    with pytest.raises(ValueError, match=message):
        confusion_matrix(gt, pred, n_classes)


def test_pred_void_miss_counts_void_predictions_as_false_negatives() -> None:
    """Under pred_void="miss" a predicted 255 is out of the matrix but a miss of the GT class."""
    gt = [[0, 0, 1, 1, 255]]
    pred = [[0, 255, 1, 255, 255]]

    confusion = confusion_matrix(gt, pred, 2, pred_void="miss")
    missed = pred_void_counts(gt, pred, 2)

    assert confusion.tolist() == [[1, 0], [0, 1]]
    assert missed.tolist() == [1, 1]
    assert class_iou(confusion, missed).tolist() == [0.5, 0.5]


def test_class_iou_rejects_non_square_matrix() -> None:
    """The confusion matrix must be (C, C)."""
    with pytest.raises(ValueError, match=r"shape \(C, C\), got \(2, 3\)"):
        class_iou(np.zeros((2, 3)))


def test_class_iou_rejects_pred_void_pixels_of_wrong_length() -> None:
    """pred_void_pixels needs one count per class."""
    with pytest.raises(ValueError, match=r"`pred_void_pixels` to have shape \(2,\), got \(3,\)"):
        class_iou(np.eye(2), [0, 0, 0])


masks = hnp.arrays(
    np.uint8,
    hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=12),
    elements=st.sampled_from([0, 1, 2, 3, 255]),
)


@given(gt=masks, data=st.data())
def test_iou_is_within_zero_and_one(gt: npt.NDArray[np.uint8], data: st.DataObject) -> None:
    """Every defined IoU is in [0, 1], and the matrix counts exactly the non-void pixels."""
    pred = data.draw(hnp.arrays(np.uint8, gt.shape, elements=st.integers(0, 3)))

    confusion = confusion_matrix(gt, pred, 4)
    iou = class_iou(confusion)

    assert confusion.shape == (4, 4)
    assert int(confusion.sum()) == int((gt != 255).sum())
    defined = iou[~np.isnan(iou)]
    assert ((defined >= 0) & (defined <= 1)).all()


@given(gt=masks)
def test_prediction_equal_to_ground_truth_gives_iou_one(gt: npt.NDArray[np.uint8]) -> None:
    """A perfect prediction (void copied under miss) scores 1 for every present class."""
    confusion = confusion_matrix(gt, gt, 4, pred_void="miss")
    iou = class_iou(confusion, pred_void_counts(gt, gt, 4))

    present = [c for c in range(4) if (gt == c).any()]
    assert iou[present].tolist() == [1.0] * len(present)
    assert np.isnan(np.delete(iou, present)).all()


@given(gt=masks)
def test_perfect_prediction_of_nonvoid_pixels_gives_iou_one(gt: npt.NDArray[np.uint8]) -> None:
    """Predicting each GT class exactly, any class on void pixels, scores 1 per present class."""
    pred = np.where(gt == 255, 0, gt)

    iou = class_iou(confusion_matrix(gt, pred, 4))

    present = [c for c in range(4) if (gt == c).any()]
    assert iou[present].tolist() == [1.0] * len(present)


# read_mask and read_class_names


def test_read_mask_gives_palette_indices_not_colours(tmp_path: Path) -> None:
    """A P-mode mask reads as its indices whatever colours its palette holds."""
    path = tmp_path / "m.png"
    image = Image.fromarray(np.array([[0, 1], [2, 255]], dtype=np.uint8)).convert("P")
    image.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0] + [7, 7, 7] * 253)
    image.save(path)

    values = read_mask(path)

    assert values.dtype == np.uint8
    assert values.tolist() == [[0, 1], [2, 255]]


def test_read_mask_reads_greyscale(tmp_path: Path) -> None:
    """An L-mode mask reads as its grey values."""
    write_mask(tmp_path / "m.png", [[3, 0, 255]], mode="L")

    assert read_mask(tmp_path / "m.png").tolist() == [[3, 0, 255]]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param(
            "rgb.png",
            r"skips/pred/rgb\.png: mask has mode RGB; expected a palette \(P\) or greyscale \(L\)",
            id="rgb",
        ),
        pytest.param(
            "jpeg.png",
            r"skips/pred/jpeg\.png: not a PNG file \(Pillow reads it as JPEG\)$",
            id="jpeg",
        ),
        pytest.param(
            "garbage.png",
            r"skips/pred/garbage\.png: not an image file Pillow can read$",
            id="garbage",
        ),
        pytest.param(
            "truncated.png", r"skips/pred/truncated\.png: cannot read mask: ", id="truncated"
        ),
        pytest.param("absent.png", r"skips/pred/absent\.png: cannot read mask: ", id="absent"),
    ],
)
def test_read_mask_rejects_unusable_files(name: str, message: str) -> None:
    """Files that are not single-channel PNG masks raise AnnotationError naming the file."""
    path = FIXTURES / "skips" / "pred" / name

    with pytest.raises(AnnotationError, match=message) as caught:
        read_mask(path)

    assert caught.value.path == str(path)


def png_header(width: int, height: int) -> bytes:
    """A greyscale PNG whose header declares ``width`` x ``height`` pixels and whose image data
    is empty: Pillow opens it and knows its size, but decoding it fails (truncated)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("width", "height", "message"),
    [
        pytest.param(MAX_MASK_PIXELS + 1, 1,
                     "mask is 89,478,486x1 pixels, over the 89,478,485-pixel limit",
                     id="one-over"),
        pytest.param(10_000, 10_000,
                     "mask is 10,000x10,000 pixels, over the 89,478,485-pixel limit",
                     id="100-megapixels"),
        pytest.param(20_000, 10_000,
                     "mask is more than 178,956,970 pixels, over the 89,478,485-pixel limit",
                     id="beyond-pillow-error"),
    ],
)  # fmt: skip
def test_read_mask_refuses_a_mask_over_the_limit_from_its_header(
    tmp_path: Path, width: int, height: int, message: str
) -> None:
    """A mask over MAX_MASK_PIXELS is refused from its header, in vocmatch's words, before
    any decoding (its image data is empty) and without Pillow's decompression-bomb warning
    (warnings are errors here)."""
    path = tmp_path / "big.png"
    path.write_bytes(png_header(width, height))
    with pytest.raises(AnnotationError) as caught:
        read_mask(path)
    assert (caught.value.path, caught.value.message) == (str(path), message)


def test_read_mask_at_the_limit_is_decoded(tmp_path: Path) -> None:
    """A mask of exactly MAX_MASK_PIXELS is decoded: here its empty image data is the error
    (in Pillow's words, which name what was left unprocessed after them)."""
    path = tmp_path / "edge.png"
    path.write_bytes(png_header(MAX_MASK_PIXELS, 1))
    with pytest.raises(AnnotationError) as caught:
        read_mask(path)
    assert caught.value.message.startswith("cannot read mask: image file is truncated")


def test_read_class_names_skips_blank_lines_and_strips(tmp_path: Path) -> None:
    """One name per line, in order; blank lines and surrounding spaces do not count."""
    path = tmp_path / "classes.txt"
    path.write_text("background\n  road \n\nsky\n\n", encoding="utf-8")

    assert read_class_names(path) == ("background", "road", "sky")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "a\nb\na\n", r"classes\.txt:3: class 'a' is already named on line 1$", id="repeated"
        ),
        pytest.param("\n \n", r"classes\.txt: holds no class names$", id="empty"),
        pytest.param(
            "".join(f"c{i}\n" for i in range(256)),
            r"holds 256 class names; at most 255",
            id="too-many",
        ),
    ],
)
def test_read_class_names_rejects_bad_lists(tmp_path: Path, text: str, message: str) -> None:
    """Repeated names, no names and more names than fit below void are errors."""
    path = tmp_path / "classes.txt"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(AnnotationError, match=message):
        read_class_names(path)


def test_read_class_names_of_missing_file_is_an_annotation_error(tmp_path: Path) -> None:
    """A file that cannot be opened is reported with its path."""
    with pytest.raises(AnnotationError, match=r"nope\.txt: cannot read class names"):
        read_class_names(tmp_path / "nope.txt")


# evaluate_masks


def test_evaluate_hand_example_with_class_file() -> None:
    """The fixture pair scores exactly as worked out by hand, under names read from a file."""
    root = FIXTURES / "three_class"

    result = evaluate_masks(root / "gt", root / "pred", read_class_names(root / "classes.txt"))

    assert result.classes == (
        SegClassResult("background", 4 / 6, tp=4, fp=1, fn=1),
        SegClassResult("cat", 6 / 8, tp=6, fp=1, fn=1),
        SegClassResult("dog", 5 / 7, tp=5, fp=1, fn=1),
    )
    assert result.miou == pytest.approx((4 / 6 + 6 / 8 + 5 / 7) / 3)
    assert result.pixel_accuracy == 15 / 18
    assert result.mean_accuracy == pytest.approx((4 / 5 + 6 / 7 + 5 / 6) / 3)
    assert result.images == (
        SegImageResult(
            "hand",
            pixel_accuracy=15 / 18,
            miou=pytest.approx((4 / 6 + 6 / 8 + 5 / 7) / 3),  # type: ignore[arg-type]
            gt_classes=("background", "cat", "dog"),
            pred_classes=("background", "cat", "dog"),
        ),
    )
    assert result.skipped == ()
    assert result.confusion.tolist() == HAND_CONFUSION
    assert result.pred_void_pixels.tolist() == [0, 0, 0]


def test_evaluate_uses_voc_classes_by_default() -> None:
    """Without class names, the 21 VOC classes apply and absent ones have no IoU."""
    root = FIXTURES / "three_class"

    result = evaluate_masks(root / "gt", root / "pred")

    assert tuple(c.name for c in result.classes) == VOC_CLASSES
    assert [c.iou for c in result.classes[3:]] == [None] * 18
    assert result.miou == pytest.approx((4 / 6 + 6 / 8 + 5 / 7) / 3)


def test_evaluate_ignores_void_gt_and_rejects_void_pred_by_default() -> None:
    """Void GT pixels are ignored; a prediction holding 255 is skipped, as the devkit stops."""
    root = FIXTURES / "void"

    result = evaluate_masks(root / "gt", root / "pred")

    assert [(c.tp, c.fp, c.fn) for c in result.classes[:3]] == [(5, 1, 1), (3, 1, 1), (0, 0, 0)]
    assert result.pixel_accuracy == 8 / 10
    assert [i.key for i in result.images] == ["void_gt"]
    assert result.skipped == (
        SegSkipped(
            str(root / "pred" / "void_pred.png"),
            "value 255 (void) in a prediction; the VOC devkit rejects it, "
            "pred_void='miss' counts it as a missed pixel",
            "invalid",
        ),
    )


def test_evaluate_counts_void_pred_as_missed_under_miss() -> None:
    """Under pred_void="miss" a predicted 255 on a class pixel is a false negative of it."""
    root = FIXTURES / "void"

    result = evaluate_masks(root / "gt", root / "pred", pred_void="miss")

    assert [(c.tp, c.fp, c.fn) for c in result.classes[:3]] == [(8, 1, 2), (3, 1, 1), (2, 0, 2)]
    assert [c.iou for c in result.classes[:3]] == [8 / 11, 3 / 5, 2 / 4]
    assert result.miou == pytest.approx((8 / 11 + 3 / 5 + 2 / 4) / 3)
    assert result.pixel_accuracy == 13 / 18
    assert result.mean_accuracy == pytest.approx((8 / 10 + 3 / 4 + 2 / 4) / 3)
    assert result.pred_void_pixels.tolist()[:3] == [1, 0, 2]
    assert result.skipped == ()
    void_pred = result.images[1]
    assert (void_pred.key, void_pred.pixel_accuracy) == ("void_pred", 5 / 8)
    assert void_pred.miou == pytest.approx((3 / 4 + 2 / 4) / 2)
    assert void_pred.pred_classes == ("background", "bicycle")


def test_evaluate_skips_unusable_pairs_and_still_scores_the_rest() -> None:
    """Each bad pair is recorded with its file and message; the good pair alone is scored."""
    root = FIXTURES / "skips"
    gt, pred = root / "gt", root / "pred"

    result = evaluate_masks(gt, pred)

    skipped = [(s.path, s.reason, s.message) for s in result.skipped]
    assert skipped[:8] == [
        (str(pred / "garbage.png"), "invalid", "not an image file Pillow can read"),
        (
            str(gt / "gt_out_of_range.png"),
            "invalid",
            "value 30 is neither a class index (0..20) nor void (255)",
        ),
        (str(pred / "jpeg.png"), "invalid", "not a PNG file (Pillow reads it as JPEG)"),
        (str(pred / "no_gt.png"), "missing_gt", "no ground-truth mask"),
        (
            str(gt / "no_pred.png"),
            "missing_pred",
            f"no prediction mask (expected {pred / 'no_pred.png'})",
        ),
        (
            str(pred / "pred_out_of_range.png"),
            "invalid",
            "value 21 is not a class index (0..20)",
        ),
        (
            str(pred / "rgb.png"),
            "invalid",
            "mask has mode RGB; expected a palette (P) or greyscale (L) PNG whose pixel "
            "values are class indices",
        ),
        (str(pred / "size_mismatch.png"), "invalid", "mask is 4x4 but the ground truth is 5x4"),
    ]
    assert skipped[8][:2] == (str(pred / "truncated.png"), "invalid")
    assert skipped[8][2].startswith("cannot read mask: ")
    assert [i.key for i in result.images] == ["good"]
    assert [(c.tp, c.fp, c.fn) for c in result.classes[:3]] == [(4, 1, 1), (6, 1, 1), (5, 1, 1)]
    assert result.pixel_accuracy == 15 / 18


def test_size_mismatch_is_skipped_and_other_images_count(tmp_path: Path) -> None:
    """A pair of different sizes is skipped with a message; the other pair is scored."""
    write_mask(tmp_path / "gt" / "a.png", [[0, 1], [1, 1]])
    write_mask(tmp_path / "pred" / "a.png", [[0, 1], [0, 1]])
    write_mask(tmp_path / "gt" / "b.png", [[0, 1, 1]])
    write_mask(tmp_path / "pred" / "b.png", [[0, 1]])

    result = evaluate_masks(tmp_path / "gt", tmp_path / "pred", ["background", "thing"])

    assert result.skipped == (
        SegSkipped(
            str(tmp_path / "pred" / "b.png"), "mask is 2x1 but the ground truth is 3x1", "invalid"
        ),
    )
    assert [i.key for i in result.images] == ["a"]
    assert result.classes == (
        SegClassResult("background", 1 / 2, tp=1, fp=1, fn=0),
        SegClassResult("thing", 2 / 3, tp=2, fp=0, fn=1),
    )


def test_evaluate_pairs_nested_masks_by_relative_path() -> None:
    """Masks in subdirectories pair by relative path; greyscale and palette masks mix."""
    root = FIXTURES / "nested"

    result = evaluate_masks(root / "gt", root / "pred")

    assert [i.key for i in result.images] == ["a/b/deep", "top"]
    # deep is the hand example; top is the void fixture's first pair.
    assert [(c.tp, c.fp, c.fn) for c in result.classes[:3]] == [(9, 2, 2), (9, 2, 2), (5, 1, 1)]
    assert result.pixel_accuracy == 23 / 28


def test_evaluate_with_two_jobs_equals_one_job() -> None:
    """The process pool gives the same result, in the same order, as evaluating in process."""
    root = FIXTURES / "skips"

    serial = evaluate_masks(root / "gt", root / "pred")
    parallel = evaluate_masks(root / "gt", root / "pred", jobs=2)

    assert parallel == serial
    assert parallel.confusion.tolist() == serial.confusion.tolist()


def test_json_dict_has_stable_keys_and_null_for_missing() -> None:
    """The JSON structure keeps its key order and writes undefined values as null."""
    root = FIXTURES / "void"
    result = evaluate_masks(root / "gt", root / "pred")

    data = result.to_json_dict()

    assert list(data) == ["summary", "classes", "images", "skipped"]
    assert data["summary"] == {
        "miou": pytest.approx((5 / 7 + 3 / 5) / 2),
        "pixel_accuracy": 0.8,
        "mean_accuracy": pytest.approx((5 / 6 + 3 / 4) / 2),
        "images": 1,
        "skipped": 1,
    }
    assert list(data["summary"]) == ["miou", "pixel_accuracy", "mean_accuracy", "images", "skipped"]
    classes = data["classes"]
    assert isinstance(classes, list)
    assert classes[2] == {"name": "bicycle", "iou": None, "tp": 0, "fp": 0, "fn": 0}
    assert list(classes[0]) == ["name", "iou", "tp", "fp", "fn"]
    assert data["images"] == [
        {
            "key": "void_gt",
            "pixel_accuracy": 0.8,
            "miou": pytest.approx((5 / 7 + 3 / 5) / 2),
            "gt_classes": ["background", "aeroplane"],
            "pred_classes": ["background", "aeroplane"],
        }
    ]
    skipped = data["skipped"]
    assert isinstance(skipped, list)
    assert list(skipped[0]) == ["path", "error", "reason"]
    assert '"iou": null' in json.dumps(data)


def test_image_all_void_has_no_scores(tmp_path: Path) -> None:
    """An image whose ground truth is all void has no accuracy and no mean IoU."""
    write_mask(tmp_path / "gt" / "a.png", [[255, 255]])
    write_mask(tmp_path / "pred" / "a.png", [[0, 1]])

    result = evaluate_masks(tmp_path / "gt", tmp_path / "pred", ["background", "thing"])

    assert result.images == (
        SegImageResult("a", None, None, gt_classes=(), pred_classes=("background", "thing")),
    )
    assert (result.miou, result.pixel_accuracy, result.mean_accuracy) == (None, None, None)


def test_results_are_frozen() -> None:
    """Result records cannot be changed after the fact."""
    root = FIXTURES / "three_class"
    result = evaluate_masks(root / "gt", root / "pred")

    with pytest.raises(FrozenInstanceError):
        result.miou = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        result.confusion[0, 0] = 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"class_names": []}, r"expected 1 to 255 class names, got 0", id="no-names"),
        pytest.param(
            {"class_names": ["a", "b", "a"]}, r"class names are repeated: a", id="repeated"
        ),
        pytest.param({"class_names": "classes.txt"}, r"read_class_names", id="string"),
        pytest.param({"jobs": 0}, r"jobs must be at least 1, got 0", id="jobs"),
        pytest.param(
            {"pred_void": "ignore"}, r"pred_void must be 'error' or 'miss'", id="pred-void"
        ),
    ],
)
def test_evaluate_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    """Unusable arguments raise InputError before any file is read."""
    root = FIXTURES / "three_class"

    with pytest.raises(InputError, match=message):
        evaluate_masks(root / "gt", root / "pred", **kwargs)  # type: ignore[arg-type]


def test_evaluate_rejects_missing_directory_and_empty_ground_truth(tmp_path: Path) -> None:
    """A directory that does not exist, or ground truth without masks, is an InputError."""
    (tmp_path / "empty").mkdir()

    with pytest.raises(InputError, match=r"ground-truth directory .*nope.* is not a directory"):
        evaluate_masks(tmp_path / "nope", tmp_path)
    with pytest.raises(InputError, match=r"prediction directory .*nope.* is not a directory"):
        evaluate_masks(tmp_path, tmp_path / "nope")
    with pytest.raises(InputError, match=r"no \*\.png masks under"):
        evaluate_masks(tmp_path / "empty", tmp_path)


def test_class_result_accuracy() -> None:
    """A class's accuracy is tp / (tp + fn), None without ground-truth pixels."""
    assert SegClassResult("a", 0.5, tp=3, fp=2, fn=1).accuracy == 3 / 4
    assert SegClassResult("a", None, tp=0, fp=0, fn=0).accuracy is None

"""The incremental evaluator gives evaluate_columns' result on the same data, and merging the
states of any partition of the images, in any order, gives the single run's result bit for bit.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.evaluation.test_batch import VARIANTS, assert_identical
from tests.oracle import random_dataset, without_scores
from vocmatch.core.model import ImageAnnotation, SkippedFile
from vocmatch.core.protocol import protocol
from vocmatch.errors import InputError, Message, Option, StateError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.result import Evaluation
from vocmatch.evaluation.shards import incremental
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.state import FORMAT_VERSION, MAGIC
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations

PROTOCOLS = ("voc07", "voc12", "default", "coco")
Images = list[tuple[str, dict[str, Any], dict[str, Any]]]


def arrays_of(gt: AnnotationSet, pred: AnnotationSet) -> Images:
    """Each image's ground truth and predictions as arrays, in key order."""
    preds = {a.key: a for a in pred.annotations}
    images = []
    for a in gt.annotations:
        p = preds.get(a.key, ImageAnnotation(a.key, a.key, ()))
        target = {
            "boxes": np.array([[b.x1, b.y1, b.x2, b.y2] for b in a.boxes]).reshape(-1, 4),
            "labels": [b.name for b in a.boxes],
            "difficult": np.array([b.difficult for b in a.boxes], dtype=bool),
        }
        scores = [np.nan if b.score is None else b.score for b in p.boxes]
        detections = {
            "boxes": np.array([[b.x1, b.y1, b.x2, b.y2] for b in p.boxes]).reshape(-1, 4),
            "scores": np.array(scores, dtype=np.float64),
            "labels": [b.name for b in p.boxes],
        }
        images.append((a.key, target, detections))
    return images


def single_run(
    gt: AnnotationSet, pred: AnnotationSet, conventions: Any, **options: Any
) -> Evaluation:
    """evaluate_columns on column sets of the same data, each image's path its key and every
    image with a (maybe empty) prediction file, as the evaluator holds them."""
    preds = {a.key: a for a in pred.annotations}
    gt_images = tuple(replace(a, path=a.key) for a in sorted(gt.annotations, key=lambda a: a.key))
    pred_images = tuple(
        replace(preds.get(a.key, ImageAnnotation(a.key, a.key, ())), path=a.key) for a in gt_images
    )
    return evaluate_columns(
        columns_from_annotations(AnnotationSet("", gt_images, ())),
        columns_from_annotations(AnnotationSet("", pred_images, ())),
        conventions,
        keep_matches=False,
        **options,
    )


def fed(images: Images, conventions: Any, **options: Any) -> Evaluator:
    evaluator = Evaluator(conventions, **options)
    for key, target, detections in images:
        evaluator.add(
            key, target["boxes"], target["labels"], detections["boxes"], detections["scores"],
            detections["labels"], difficult=target["difficult"],
        )  # fmt: skip
    return evaluator


@pytest.mark.parametrize("name", PROTOCOLS)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scored", [True, False], ids=["scored", "unscored"])
def test_result_equals_evaluate_columns(name: str, seed: int, scored: bool) -> None:
    """Every field of the Evaluation, with difficult (crowd under coco) objects."""
    gt, pred = random_dataset(seed, images=10)
    if not scored:
        pred = without_scores(pred)
    expected = single_run(gt, pred, protocol(name))
    assert_identical(fed(arrays_of(gt, pred), protocol(name)).result(), expected)


@pytest.mark.parametrize("name", PROTOCOLS)
def test_partly_scored_predictions_and_options_equal_evaluate_columns(name: str) -> None:
    """NaN scores are predictions without one; fold_case and score thresholds pass through."""
    gt, pred = random_dataset(7, images=10, classes=("Cat", "cat", "dog", "fish"))
    pred = without_scores(pred, share=0.3, seed=1)
    thresholds = ScoreThresholds(0.3, (("dog", 0.6),))
    expected = single_run(gt, pred, protocol(name), fold_case=True, score_thresholds=thresholds)
    evaluator = fed(arrays_of(gt, pred), name, fold_case=True, score_thresholds=thresholds)
    assert_identical(evaluator.result(), expected)


def test_crowd_joins_difficult() -> None:
    """``crowd`` is the same one flag as ``difficult``: under coco a crowd region absorbs the
    prediction inside it, which is then neither TP nor FP."""
    evaluator = Evaluator("coco")
    evaluator.add(
        "a", np.array([[0.0, 0, 100, 100], [200, 200, 220, 220]]), ["person", "person"],
        np.array([[10.0, 10, 20, 20], [200, 200, 220, 220]]), np.array([0.9, 0.8]),
        ["person", "person"], crowd=np.array([True, False]),
    )  # fmt: skip
    image = evaluator.result().images[0]
    assert (image.gt, image.gt_ignored, image.tp, image.fp, image.pred_ignored) == (1, 1, 1, 0, 1)


class FakeTensor:
    """Stands in for a torch tensor: a library object numpy reads after detach().cpu()."""

    def __init__(self, values: Any) -> None:
        self._values = np.asarray(values)
        self.calls: list[str] = []

    def detach(self) -> FakeTensor:
        self.calls.append("detach")
        return self

    def cpu(self) -> FakeTensor:
        self.calls.append("cpu")
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._values if dtype is None else self._values.astype(dtype)


def test_add_batch_reads_the_torchmetrics_layout_from_tensors() -> None:
    """Integer labels named by the class table, iscrowd as crowd, tensors moved to the host."""
    boxes = FakeTensor([[0.0, 0, 10, 10], [20, 20, 30, 30]])
    preds = [
        {"boxes": boxes, "scores": FakeTensor([0.9, 0.4]), "labels": FakeTensor([1, 0])},
        {"boxes": FakeTensor(np.zeros((0, 4))), "scores": FakeTensor([]), "labels": FakeTensor([])},
    ]
    targets = [
        {"boxes": FakeTensor([[0.0, 0, 10, 10]]), "labels": FakeTensor([1]),
         "iscrowd": FakeTensor([0])},
        {"boxes": FakeTensor([[5.0, 5, 9, 9]]), "labels": FakeTensor([0])},
    ]  # fmt: skip
    evaluator = Evaluator("default", class_names=["bird", "cat"])
    evaluator.add_batch(preds, targets, image_ids=["x", "y"])
    assert boxes.calls == ["detach", "cpu"]
    result = evaluator.result()
    assert [(c.name, c.tp, c.fp, c.fn) for c in result.classes] == [
        ("bird", 0, 1, 1),
        ("cat", 1, 0, 0),
    ]
    assert [i.key for i in result.images] == ["x", "y"]
    assert result.summary.map == pytest.approx((0.0 + 1.0) / 2)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda e: e.add("a", np.zeros((3, 5)), [1, 2, 3], np.zeros((0, 4)), [], []),
            r"Expected `gt_boxes` to have shape \(N, 4\), got \(3, 5\)",
            id="box-shape",
        ),
        pytest.param(
            lambda e: e.add("a", np.zeros((2, 4)), ["a"], np.zeros((0, 4)), [], []),
            r"Expected `gt_labels` to have shape \(2,\), got \(1,\)",
            id="label-count",
        ),
        pytest.param(
            lambda e: e.add("a", np.zeros((0, 4)), [], np.ones((1, 4)), [np.inf], ["a"]),
            "Expected `pred_scores` to be finite",
            id="infinite-score",
        ),
        pytest.param(
            lambda e: e.add("a", [[0, 0, np.nan, 1]], ["a"], np.zeros((0, 4)), [], []),
            "Expected `gt_boxes` to be finite",
            id="nan-box",
        ),
        pytest.param(
            lambda e: e.add_batch([{}], []), "Expected as many `preds` as `targets`", id="batch"
        ),
    ],
)
def test_add_refuses_wrong_arrays(call: Any, message: str) -> None:
    """One InputError naming the argument."""
    with pytest.raises(InputError, match=message):
        call(Evaluator())


def test_add_refuses_an_image_twice_and_a_label_without_a_name() -> None:
    evaluator = Evaluator(class_names={0: "cat"})
    evaluator.add(1, np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    with pytest.raises(InputError, match="image '1' was added already"):
        evaluator.add("1", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    with pytest.raises(InputError, match="`gt_labels` holds 4, which has no class name"):
        evaluator.add(2, np.ones((1, 4)), [4], np.zeros((0, 4)), [], [])


def test_an_empty_evaluator_equals_an_empty_run() -> None:
    empty = AnnotationSet("", (), ())
    assert_identical(Evaluator("coco").result(), single_run(empty, empty, protocol("coco")))


def shards(images: Images, parts: list[int], seed: int) -> list[Images]:
    """The images dealt into ``len(parts)`` shards at random, each shuffled."""
    rng = random.Random(seed)
    dealt: list[Images] = [[] for _ in parts]
    for image in images:
        dealt[rng.randrange(len(parts))].append(image)
    for shard in dealt:
        rng.shuffle(shard)
    return dealt


def unscored_images(annotations: AnnotationSet, seed: int) -> AnnotationSet:
    """The same set with every score of about half of the images removed (those images'
    predictions all lack one, the others' all have one)."""
    rng = random.Random(seed)
    return replace(
        annotations,
        annotations=tuple(
            a
            if rng.random() < 0.5
            else replace(a, boxes=tuple(replace(b, score=None) for b in a.boxes))
            for a in annotations.annotations
        ),
    )


def with_odd_values(annotations: AnnotationSet, seed: int) -> AnnotationSet:
    """The same set with a few boxes moved to negative coordinates and a few scores above 1,
    in several images (the notes count them across shards)."""
    rng = random.Random(seed)
    images = []
    for a in annotations.annotations:
        boxes = list(a.boxes)
        if boxes and rng.random() < 0.3:
            b = boxes[0]
            boxes[0] = replace(b, x1=b.x1 - 500, x2=b.x2 - 490)
        if boxes and boxes[-1].score is not None and rng.random() < 0.3:
            boxes[-1] = replace(boxes[-1], score=1.5)
        images.append(replace(a, boxes=tuple(boxes)))
    return replace(annotations, annotations=tuple(images))


SCORES = ("all", "none", "some", "some-images")
OPTIONS: dict[str, dict[str, Any]] = {
    "plain": {},
    "thresholds-fold-case": {
        "fold_case": True,
        "score_thresholds": ScoreThresholds(0.3, (("dog", 0.6),)),
    },
}


def scored_as(pred: AnnotationSet, scores: str, seed: int) -> AnnotationSet:
    if scores == "none":
        return without_scores(pred)
    if scores == "some":
        return without_scores(pred, share=0.3, seed=seed)
    if scores == "some-images":
        return unscored_images(pred, seed)
    return pred


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    name=st.sampled_from(PROTOCOLS),
    n_shards=st.integers(1, 5),
    scores=st.sampled_from(SCORES),
    options=st.sampled_from(sorted(OPTIONS)),
    through_bytes=st.booleans(),
)
def test_merging_any_partition_equals_the_single_run(
    seed: int, name: str, n_shards: int, scores: str, options: str, through_bytes: bool
) -> None:
    """Shards fed in any order, merged in any order (directly or through saved bytes), with
    difficult (crowd) objects, scored, unscored and partly scored predictions (within images
    and image by image), tied scores, odd values, score thresholds and folded case."""
    gt, pred = random_dataset(seed, images=8, classes=("Cat", "cat", "dog", "fish"))
    pred = scored_as(pred, scores, seed)
    gt, pred = with_odd_values(gt, seed), with_odd_values(pred, seed + 1)
    extra = OPTIONS[options]
    images = arrays_of(gt, pred)
    evaluators = [fed(shard, name, **extra) for shard in shards(images, [0] * n_shards, seed)]
    if through_bytes:
        evaluators = [Evaluator.from_bytes(e.to_bytes()) for e in evaluators]
    random.Random(seed).shuffle(evaluators)
    merged = evaluators[0]
    for other in evaluators[1:]:
        merged.merge(other)
    try:
        expected = single_run(gt, pred, protocol(name), **extra)
    except InputError as error:  # a score threshold without any score: the same refusal
        with pytest.raises(InputError, match=re.escape(str(error))):
            merged.result()
        return
    assert_identical(merged.result(), expected)


@pytest.mark.parametrize("name", PROTOCOLS)
def test_a_shard_without_scores_merged_with_a_scored_one_ranks_last(name: str) -> None:
    """A shard whose predictions have no score was matched as if unscored would be paired
    (highest IoU first); merged with a scored shard, its predictions rank last as in one run."""
    gt, pred = random_dataset(11, images=10)
    images = arrays_of(gt, pred)
    for _, _, detections in images[5:]:
        detections["scores"] = np.full(detections["scores"].shape, np.nan)
    unscored = fed(images[5:], name)
    assert unscored.result().classes[0].curve is None  # alone: no ranking, no curve
    merged = fed(images[:5], name)
    merged.merge(Evaluator.from_bytes(unscored.to_bytes()))
    expected = fed(images, name).result()
    assert_identical(merged.result(), expected)
    assert expected.notes[0].endswith("have no score; they rank last for AP")


def test_joining_no_part_gives_columns_of_no_image() -> None:
    """The columns of no part (a shard of no image) hold no
    image: every column empty, boxes four wide, each in the dtype of a joined column."""
    from vocmatch.evaluation.shards.image_columns import COLUMN_ARRAYS, ImageColumns

    empty = ImageColumns.join([])
    assert (empty.keys, empty.gt_paths, empty.pred_paths) == ((), (), ())
    found = {
        name: (getattr(empty, name).shape, getattr(empty, name).dtype.str) for name in COLUMN_ARRAYS
    }
    assert found == {
        "gt_count": ((0,), "<i8"), "pred_count": ((0,), "<i8"), "gt_boxes": ((0, 4), "<f8"),
        "gt_labels": ((0,), "<i8"), "gt_difficult": ((0,), "|b1"), "pred_boxes": ((0, 4), "<f8"),
        "pred_scores": ((0,), "<f8"), "pred_labels": ((0,), "<i8"),
    }  # fmt: skip


def test_images_are_matched_a_batch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past a batch of boxes the images added are matched and their boxes let go; the
    result is the same as matching them all at once."""
    gt, pred = random_dataset(8, images=12)
    pred = unscored_images(pred, 8)
    whole = fed(arrays_of(gt, pred), "coco").result()
    monkeypatch.setattr(incremental, "MATCH_BATCH", 40)
    images = arrays_of(gt, pred)
    batched = fed(images, "coco")
    # Matched each time 40 boxes or more wait, not image by image: count those times.
    waiting, matched, last = 0, 0, 0
    for i, (_, target, detections) in enumerate(images):
        waiting += len(target["boxes"]) + len(detections["boxes"])
        if waiting >= 40:
            waiting, matched, last = 0, matched + 1, i + 1
    assert 1 < matched < 12
    assert (len(batched._records), len(batched._parts)) == (matched, 12 - last)
    assert_identical(batched.result(), whole)
    assert_identical(batched.result(), single_run(gt, pred, protocol("coco")))


def tied_images(n: int) -> Images:
    """``n`` images, each with one object and two predictions of the same score, the first
    a miss and the second a hit: AP depends on ranking ties in image then file order."""
    images = []
    for i in range(n):
        gt = {
            "boxes": np.array([[0.0, 0, 10, 10]]),
            "labels": ["cat"],
            "difficult": np.zeros(1, bool),
        }
        pred = {
            "boxes": np.array([[50.0, 50, 60, 60], [0.0, 0, 10, 10]])
            if i % 2
            else np.array([[0.0, 0, 10, 10], [50.0, 50, 60, 60]]),
            "scores": np.array([0.5, 0.5]),
            "labels": ["cat", "cat"],
        }
        images.append((f"k{i:02d}", gt, pred))
    return images


@pytest.mark.parametrize("name", PROTOCOLS)
def test_ties_rank_in_image_then_file_order_across_shards(name: str) -> None:
    """Equal scores rank by image key, then file order, whichever shard holds the image and
    in whatever order shards are merged (a hit before a miss or after changes AP)."""
    images = tied_images(6)
    whole = fed(images, name).result()
    # Shards holding the later keys first, each fed in reverse.
    first, second = fed(images[3:][::-1], name), fed(images[:3][::-1], name)
    first.merge(Evaluator.from_bytes(second.to_bytes()))
    assert_identical(first.result(), whole)
    curve = whole.classes[0].curve
    assert curve is not None
    # Keys k00 (hit first), k01 (miss first), ...: the ranking alternates from a hit.
    assert curve.precision[:2].tolist() == [1.0, 0.5]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("scores", SCORES)
def test_merged_shards_equal_the_single_run_under_every_convention(
    variant: str, scores: str
) -> None:
    """Strict thresholds, the devkit's match rule, counted difficult objects, crowd regions,
    max_dets, all-point AP over COCO's thresholds: three shards merged through bytes."""
    gt, pred = random_dataset(21, images=12)
    pred = scored_as(pred, scores, 21)
    conv = VARIANTS[variant]
    expected = single_run(gt, pred, conv)
    parts = [fed(shard, conv) for shard in shards(arrays_of(gt, pred), [0, 0, 0], 21)]
    merged = Evaluator.from_bytes(parts[2].to_bytes())
    for part in parts[:2]:
        merged.merge(Evaluator.from_bytes(part.to_bytes()))
    assert_identical(merged.result(), expected)


def test_merge_reconciles_class_tables_and_names() -> None:
    """Ids named in either table; a class named in one shard only joins the other's."""
    a = Evaluator(class_names={0: "cat"})
    a.add("a", np.ones((1, 4)) * [0, 0, 5, 5], [0], np.zeros((0, 4)), [], [])
    b = Evaluator(class_names={1: "dog"})
    b.add("b", np.zeros((0, 4)), [], np.ones((1, 4)) * [0, 0, 5, 5], [0.5], [1])
    a.merge(b)
    assert a.class_names == {0: "cat", 1: "dog"}
    assert [(c.name, c.gt, c.fp) for c in a.result().classes] == [("cat", 1, 0), ("dog", 0, 1)]


@pytest.mark.parametrize(
    ("other", "message"),
    [
        pytest.param(
            Evaluator("coco"), "other options: protocol 'default' != 'coco'", id="protocol"
        ),
        pytest.param(
            Evaluator(fold_case=True), "other options: fold_case False != True", id="fold-case"
        ),
        pytest.param(
            Evaluator(score_thresholds=ScoreThresholds(0.5)), "score_thresholds", id="thresholds"
        ),
        pytest.param(
            Evaluator(class_names=["dog"]),
            "class tables disagree: id 0 is 'cat' in one and 'dog' in the other",
            id="class-table",
        ),
    ],
)
def test_merge_refuses_states_that_do_not_fit(other: Evaluator, message: str) -> None:
    evaluator = Evaluator(class_names=["cat"])
    with pytest.raises(StateError, match=message):
        evaluator.merge(other)


def test_merge_refuses_shards_that_share_an_image() -> None:
    a, b = Evaluator(), Evaluator()
    for e in (a, b):
        e.add("same", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    b.add("other", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    with pytest.raises(StateError, match=r"cannot merge states that share images: 'same'$"):
        a.merge(b)
    assert len(a) == 1  # left as it was


def small_state() -> bytes:
    gt, pred = random_dataset(3, images=4)
    return fed(arrays_of(gt, pred), "coco").to_bytes()


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    gt, pred = random_dataset(5, images=6)
    evaluator = fed(arrays_of(gt, pred), "voc07", score_thresholds=ScoreThresholds(0.2))
    evaluator.save(tmp_path / "shard.vms")
    loaded = Evaluator.load(tmp_path / "shard.vms")
    assert loaded.conventions == protocol("voc07")
    assert loaded.score_thresholds == ScoreThresholds(0.2)
    assert_identical(loaded.result(), evaluator.result())
    assert loaded.to_bytes() == evaluator.to_bytes()


def array_table(data: bytes) -> dict[str, tuple[str, list[int]]]:
    """The arrays a state declares: name -> (dtype, shape)."""
    size = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16 : 16 + size])
    return {a["name"]: (a["dtype"], a["shape"]) for a in header["arrays"]}


def test_state_holds_match_records_and_no_boxes() -> None:
    """Per prediction its class, score and flags; no array of boxes (nothing of shape
    (N, 4)), scores exact (float64 where float32 is not), the rest in narrow dtypes."""
    gt, pred = random_dataset(4, images=6)
    table = array_table(fed(arrays_of(gt, pred), "coco").to_bytes())
    assert not any("box" in name for name in table)
    # Four per class (coco_gt) or per image-class (gt_cells): counts, not boxes.
    counts = ("coco_gt", "gt_cells")
    assert not any(shape[-1:] == [4] and name not in counts for name, (_, shape) in table.items())
    assert table["pred_score"][0] == "<f8"  # scores such as 0.3 are not float32
    assert table["pred_label"][0] == "|u1"
    assert table["pred_matched"][0] in ("|u1", "<u2")  # ten thresholds
    n_pred = table["pred_label"][1][0]
    # Area "all" is matched as the protocol's own matching here: read from pred_matched.
    assert table["pred_coco"][1] == [n_pred, 3]
    assert table["pred_coco_ignored"][1] == [n_pred, 3]


def test_a_saved_state_takes_at_most_32_bytes_a_prediction() -> None:
    """200 images of 100 predictions of 20 classes under coco (ten thresholds, four area
    ranges), scores of float64 precision: the whole file, header included."""
    rng = np.random.default_rng(0)
    evaluator = Evaluator("coco")
    names = [f"class{k}" for k in range(20)]
    n_pred = 0
    for i in range(200):
        xy = rng.uniform(0, 500, (30, 2))
        gt_boxes = np.concatenate([xy, xy + rng.uniform(5, 150, (30, 2))], axis=1)
        gt_labels = rng.integers(0, 20, 30)
        pick = rng.integers(0, 30, 100)
        pred_boxes = gt_boxes[pick] + rng.normal(0, 6, (100, 4))
        # Noisy corners may cross: each box keeps x1 <= x2 and y1 <= y2, as a reader's do.
        pred_boxes = np.concatenate(
            [np.minimum(pred_boxes[:, :2], pred_boxes[:, 2:]),
             np.maximum(pred_boxes[:, :2], pred_boxes[:, 2:])], axis=1
        )  # fmt: skip
        pred_labels = np.where(rng.random(100) < 0.9, gt_labels[pick], rng.integers(0, 20, 100))
        evaluator.add(
            f"img{i:04d}", gt_boxes, [names[k] for k in gt_labels], pred_boxes,
            rng.random(100), [names[k] for k in pred_labels],
            difficult=rng.random(30) < 0.05,
        )  # fmt: skip
        n_pred += 100
    assert len(evaluator.to_bytes()) / n_pred < 32


def test_a_version_1_state_is_refused_in_one_line(tmp_path: Path) -> None:
    """A file of the earlier format (which held boxes) is named with its version."""
    path = tmp_path / "old.vms"
    body = MAGIC + (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + b"{}"
    path.write_bytes(with_crc(body))
    with pytest.raises(StateError) as caught:
        Evaluator.load(path)
    assert str(caught.value) == (
        f"{path}: state format version 1; this vocmatch reads versions 2, 3, 4, 5, 6 and 7"
    )


def array_bytes(data: bytes) -> int:
    """The bytes of a state's arrays: all but the prefix, the header and the checksum."""
    return len(data) - 16 - int.from_bytes(data[12:16], "little") - 4


#: The arrays' bytes of :func:`small_state` (its four images hold 4 bytes of ``pred_count``).
ARRAY_BYTES = array_bytes(small_state())


def with_crc(body: bytes) -> bytes:
    return body + zlib.crc32(body).to_bytes(4, "little")


def corrupted(data: bytes) -> bytes:
    index = len(data) // 2
    return data[:index] + bytes([data[index] ^ 0x40]) + data[index + 1 :]


def crafted_header(data: bytes, old: bytes, new: bytes) -> bytes:
    """The state with a header edit, its length and checksum made right again."""
    size = int.from_bytes(data[12:16], "little")
    header = data[16 : 16 + size]
    assert old in header
    edited = header.replace(old, new, 1)
    body = data[:12] + len(edited).to_bytes(4, "little") + edited + data[16 + size : -4]
    return with_crc(body)


def edited_array(data: bytes, name: str, edit: Any) -> bytes:
    """The state with one array's values changed by ``edit`` (given and giving a numpy
    array of the same dtype and size), its checksum made right again."""
    size = int.from_bytes(data[12:16], "little")
    table = json.loads(data[16 : 16 + size])["arrays"]
    offset = 16 + size
    for entry in table:
        dtype = np.dtype(entry["dtype"])
        nbytes = dtype.itemsize * int(np.prod(entry["shape"], dtype=np.int64))
        if entry["name"] == name:
            values = np.frombuffer(data, dtype, nbytes // dtype.itemsize, offset).copy()
            changed = np.asarray(edit(values), dtype=dtype).tobytes()
            return with_crc(data[:offset] + changed + data[offset + nbytes : -4])
        offset += nbytes
    raise KeyError(name)


def edited_cells(data: bytes, edit: Any) -> bytes:
    """The state with its ``gt_cells`` rows (image, class, count, count in area "all")
    changed in place by ``edit``."""

    def rows(values: np.ndarray) -> np.ndarray:
        cells = values.reshape(-1, 4)
        edit(cells)
        return cells.reshape(-1)

    return edited_array(data, "gt_cells", rows)


def replaced_array(data: bytes, name: str, values: np.ndarray) -> bytes:
    """The state with one array replaced, dtype and shape included, its header's table,
    length and checksum made right again (a crafted file, consistent in every way a
    checksum can see)."""
    size = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16 : 16 + size])
    offset, parts = 16 + size, []
    for entry in header["arrays"]:
        dtype = np.dtype(entry["dtype"])
        nbytes = dtype.itemsize * int(np.prod(entry["shape"], dtype=np.int64))
        if entry["name"] == name:
            entry["dtype"], entry["shape"] = values.dtype.str, list(values.shape)
            parts.append(values.tobytes())
        else:
            parts.append(data[offset : offset + nbytes])
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    return with_crc(data[:12] + len(text).to_bytes(4, "little") + text + b"".join(parts))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        pytest.param(lambda d: d[:10], r"not a vocmatch state \(only 10 bytes\)", id="tiny"),
        pytest.param(lambda d: b"PK\x03\x04" + d[4:], "no VMSTATE signature", id="magic"),
        pytest.param(
            lambda d: MAGIC + (FORMAT_VERSION + 1).to_bytes(4, "little") + d[12:],
            f"state format version {FORMAT_VERSION + 1}; this vocmatch reads versions 2, 3, 4, 5, 6 and 7",
            id="version",
        ),
        pytest.param(lambda d: d[:-100], "checksum does not match", id="truncated"),
        pytest.param(corrupted, "checksum does not match", id="corrupted"),
        pytest.param(
            lambda d: with_crc(d[:12] + (10**6).to_bytes(4, "little") + d[16:-4]),
            "header of 1000000 bytes runs past the end",
            id="header-length",
        ),
        pytest.param(
            lambda d: crafted_header(
                d,
                b'"name":"pred_count","dtype":"|u1","shape":[',
                b'"name":"pred_count","dtype":"|u1","shape":[99999999999,',
            ),
            f"arrays declare {ARRAY_BYTES - 4 + 99999999999 * 4} bytes but the file holds "
            f"{ARRAY_BYTES}$",
            id="crafted-length",
        ),
        pytest.param(
            lambda d: crafted_header(d, b'"shape":[', b'"shape":[1,1,'),
            r"array 'image_values' declares shape \[1, 1, 4, 16\]",
            id="shape-rank",
        ),
        pytest.param(
            lambda d: crafted_header(d, b'"dtype":"|u1"', b'"dtype":"|O"'),
            "declares dtype '|O",
            id="object-dtype",
        ),
        pytest.param(
            lambda d: crafted_header(
                crafted_header(
                    crafted_header(d, b'"keys":["', b'"keys":["extra","'),
                    b'"gt_paths":["',
                    b'"gt_paths":["extra","',
                ),
                b'"pred_paths":[',
                b'"pred_paths":[null,',
            ),
            "array 'pred_count' is not one count per image",
            id="keys-disagree",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_label", lambda v: np.full_like(v, 200)),
            "array 'pred_label' names a class beyond the 4 listed",
            id="class-beyond",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_label", lambda v: np.full_like(v, 4)),
            "array 'pred_label' names a class beyond the 4 listed",
            id="class-just-beyond",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_label", lambda v: v[::-1]),
            "array 'pred_label' is not sorted within each image",
            id="records-out-of-order",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_matched", lambda v: np.full_like(v, 1 << 12)),
            "array 'pred_matched' holds flags of thresholds that do not exist",
            id="flags-beyond-thresholds",
        ),
        pytest.param(
            lambda d: replaced_array(
                d, "pred_matched", np.full(array_predictions(d), 2**63, dtype="<u8")
            ),
            "array 'pred_matched' holds flags of thresholds that do not exist",
            id="flags-of-2**63",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_matched", lambda v: np.full_like(v, 1 << 10)),
            "array 'pred_matched' holds flags of thresholds that do not exist",
            id="flag-of-an-11th-threshold",
        ),
        pytest.param(
            lambda d: edited_array(d, "image_mean_iou", lambda v: np.full_like(v, 2.0)),
            r"array 'image_mean_iou' holds values outside \[0, 1\]",
            id="mean-iou",
        ),
        pytest.param(
            lambda d: edited_array(d, "image_mean_iou", lambda v: np.full_like(v, -0.5)),
            r"array 'image_mean_iou' holds values outside \[0, 1\]",
            id="mean-iou-negative",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_score", lambda v: np.full_like(v, np.inf)),
            "array 'pred_score' holds infinite values",
            id="infinite-score",
        ),
        pytest.param(
            lambda d: crafted_header(d, b'"name":"pred_area"', b'"name":"pred_boxes"'),
            r"corrupted \(arrays .*'pred_boxes'.*, expected",
            id="unknown-array",
        ),
        pytest.param(
            lambda d: replaced_array(d, "pred_count", np.array([2**63, 2**63, 68, 0], dtype="<u8")),
            "array 'pred_count' holds counts no file could hold",
            id="counts-that-wrap",
        ),
        pytest.param(
            lambda d: replaced_array(d, "pred_count", np.array([2**48, 0, 0, 0], dtype="<u8")),
            "array 'pred_count' holds counts no file could hold",
            id="count-of-2**48",
        ),
        pytest.param(
            lambda d: replaced_array(d, "pred_count", np.array([2**48 - 1, 0, 0, 0], dtype="<u8")),
            r"array 'pred_label' has shape \(\d+,\), the counts say \(281474976710655,\)$",
            id="count-of-2**48-1",
        ),
        pytest.param(
            lambda d: edited_array(d, "pred_area", lambda v: np.full_like(v, 16)),
            "array 'pred_area' holds flags of no area range",
            id="area-flag-16",
        ),
        pytest.param(
            lambda d: ignoring(d, array_predictions(d)),
            "array 'ignored_pred' names a prediction that is not there",
            id="ignored-past-the-last",
        ),
        pytest.param(
            lambda d: replaced_array(d, "ignored_pred", np.zeros((1, 1), dtype="|u1")),
            r"array 'ignored_pred' has shape \(1, 1\), not one dimension of prediction indices$",
            id="ignored-in-two-dimensions",
        ),
        pytest.param(
            lambda d: replaced_array(d, "ignored_pred", np.zeros((), dtype="|u1")),
            r"array 'ignored_pred' has shape \(\), not one dimension of prediction indices$",
            id="ignored-in-no-dimension",
        ),
        pytest.param(
            lambda d: with_crc(d[:-4] + b"\0" * 8),
            "arrays declare .* bytes but the file holds",
            id="trailing-bytes",
        ),
        pytest.param(
            lambda d: edited_cells(d, lambda c: c[:, 0].fill(250)),
            "array 'gt_cells' names an image or class that is not there",
            id="cell-image-beyond",
        ),
        pytest.param(
            lambda d: edited_cells(d, lambda c: c[:, 1].fill(250)),
            "array 'gt_cells' names an image or class that is not there",
            id="cell-class-beyond",
        ),
        pytest.param(
            lambda d: edited_cells(d, lambda c: c.__setitem__(slice(None), c[::-1].copy())),
            "array 'gt_cells' is not one sorted cell per image-class",
            id="cells-out-of-order",
        ),
        pytest.param(
            lambda d: edited_cells(d, lambda c: c[:1, 2:].fill(0)),
            "array 'gt_cells' is not one sorted cell per image-class",
            id="cell-of-no-ground-truth",
        ),
        pytest.param(
            lambda d: edited_cells(d, lambda c: c.__setitem__((slice(None), 3), c[:, 2] + 1)),
            "array 'gt_cells' is not one sorted cell per image-class",
            id="cell-area-all-beyond-its-count",
        ),
        pytest.param(
            lambda d: edited_cells(d, lambda c: c[:1, 2:].__iadd__(1)),
            "array 'gt_cells' does not add up to the ground truth's counts",
            id="cells-that-do-not-add-up",
        ),
        pytest.param(
            lambda d: replaced_array(d, "gt_cells", np.zeros((2, 3), dtype="|u1")),
            "array 'gt_cells' is not four counts per image-class",
            id="cells-of-three-columns",
        ),
        pytest.param(
            lambda d: replaced_array(d, "gt_cells", np.zeros(8, dtype="|u1")),
            "array 'gt_cells' is not four counts per image-class",
            id="cells-of-one-dimension",
        ),
        pytest.param(
            lambda d: replaced_array(d, "gt_cells", np.zeros((2, 4), dtype="<i8")),
            "array 'gt_cells' has dtype <i8",
            id="cells-signed",
        ),
        pytest.param(
            lambda d: replaced_array(d, "gt_cells", np.full((1, 4), 2**48, dtype="<u8")),
            "array 'gt_cells' holds counts no file could hold",
            id="cell-count-of-2**48",
        ),
        pytest.param(
            lambda d: crafted_header(d, b'"gt_cells":true', b'"gt_cells":1'),
            r"corrupted header \(gt_cells\)",
            id="cells-flag-not-a-bool",
        ),
        pytest.param(
            lambda d: crafted_header(d, b'"name":"gt_cells"', b'"name":"gt_cellz"'),
            "array 'gt_cells' is not four counts per image-class",
            id="cells-flag-without-cells",
        ),
    ],
)
def test_load_refuses_damaged_states(damage: Any, message: str, tmp_path: Path) -> None:
    """One StateError line naming the file; nothing is evaluated."""
    path = tmp_path / "shard.vms"
    path.write_bytes(damage(small_state()))
    with pytest.raises(StateError, match=message) as caught:
        Evaluator.load(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert "\n" not in str(caught.value)


def state_with_cells(name: str, edit: Any) -> bytes:
    """The small state under protocol ``name`` with its ground-truth cells (rows of image,
    class, count, count in area "all") replaced by ``edit`` of them."""
    from vocmatch.evaluation.shards.state import read_state

    gt, pred = random_dataset(3, images=4)
    data = fed(arrays_of(gt, pred), name).to_bytes()
    cells = read_state(data).arrays["gt_cells"].astype(np.int64)
    return replaced_array(data, "gt_cells", np.asarray(edit(cells), dtype="<u8"))


@pytest.mark.parametrize("name", ["coco", "default"])
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(
            lambda c: np.vstack([c[:-1], [[4, *c[-1, 1:]]]]),
            "array 'gt_cells' names an image or class that is not there",
            id="image-one-past-the-last",
        ),
        pytest.param(
            lambda c: np.vstack([c[:-1], [[c[-1, 0], 4, *c[-1, 2:]]]]),
            "array 'gt_cells' names an image or class that is not there",
            id="class-one-past-the-last",
        ),
        pytest.param(
            lambda c: np.vstack([c[:1], [[1, 0, 1, 1], [1, 0, 1, 1]], c[2:]]),
            "array 'gt_cells' is not one sorted cell per image-class",
            id="cell-split-in-two",
        ),
        pytest.param(
            lambda c: np.vstack([c[:3], [[2, 0, 10, 10], [2, 1, 17, 17]], c[5:]]),
            "array 'gt_cells' does not add up to the ground truth's counts",
            id="counts-swapped-within-an-image",
        ),
    ],
)
def test_ground_truth_cells_are_checked_at_their_edges(name: str, edit: Any, message: str) -> None:
    """A cell one past the last image or class, an image-class in two cells whose counts
    add up, counts moved between the classes of one image (the images' sums unchanged):
    each refused in one line, under either summary."""
    with pytest.raises(StateError, match=message):
        Evaluator.from_bytes(state_with_cells(name, edit))


def test_load_names_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"missing.vms: cannot read state: No such file"):
        Evaluator.load(tmp_path / "missing.vms")


# add_batch without image ids: numbered images ----------------------------------------------


def cats(count: int, score: float = 0.9) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` images in torchmetrics' layout, each one cat predicted on its box."""
    box = np.array([[0.0, 0, 10, 10]])
    preds = [{"boxes": box, "scores": [score], "labels": ["cat"]} for _ in range(count)]
    return preds, [{"boxes": box, "labels": ["cat"]} for _ in range(count)]


NUMBERED_CLASH = (
    r"^cannot merge states that share images: '0', '1', '2' and 1 more \(add_batch numbers "
    r"images from 0 in each evaluator: give each image its key in image_ids\)$"
)


def test_add_batch_numbers_on_across_calls() -> None:
    """Without image ids, one evaluator numbers its images 0, 1, 2, ... over every call,
    passing over a number already taken by a key given to add."""
    evaluator = Evaluator()
    evaluator.add_batch(*cats(2))
    evaluator.add_batch(*cats(3))
    assert evaluator.keys == ["0", "1", "2", "3", "4"]
    taken = Evaluator()
    taken.add("1", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    taken.add_batch(*cats(2))
    assert taken.keys == ["1", "2", "3"]


@pytest.mark.parametrize("saved", [False, True], ids=["in-memory", "saved-state"])
def test_merge_of_numbered_evaluators_asks_for_image_ids(saved: bool) -> None:
    """Two evaluators numbering their own images alike (one per process) are refused, in
    one line asking for image_ids, also when the state crossed a process as bytes."""
    rank0, rank1 = Evaluator(), Evaluator()
    rank0.add_batch(*cats(4))
    rank1.add_batch(*cats(2))
    rank1.add_batch(*cats(2))
    other = Evaluator.from_bytes(rank1.to_bytes()) if saved else rank1
    with pytest.raises(StateError, match=NUMBERED_CLASH):
        rank0.merge(other)
    with pytest.raises(StateError, match=NUMBERED_CLASH):
        other.merge(rank0)
    assert len(rank0) == 4


def test_merge_of_images_given_their_ids_is_the_single_run() -> None:
    """Numbered images merge with images given other keys, and ranks given their image ids
    give the single run's numbers."""
    preds, targets = cats(4)
    preds[3] = {"boxes": np.array([[50.0, 50, 60, 60]]), "scores": [0.8], "labels": ["cat"]}
    whole = Evaluator("coco")
    whole.add_batch(preds, targets, image_ids=["a", "b", "c", "d"])
    rank0, rank1 = Evaluator("coco"), Evaluator("coco")
    rank0.add_batch(preds[:2], targets[:2], image_ids=["a", "b"])
    rank1.add_batch(preds[2:], targets[2:], image_ids=["c", "d"])
    rank0.merge(Evaluator.from_bytes(rank1.to_bytes()))
    assert_identical(rank0.result(), whole.result())
    numbered = Evaluator("coco")
    numbered.add_batch(*cats(2))
    numbered.merge(rank0)
    assert numbered.keys == ["0", "1", "a", "b", "c", "d"]
    numbered.add_batch(*cats(1))
    assert numbered.keys == ["0", "1", "6", "a", "b", "c", "d"]


def test_only_a_numbered_key_asks_for_image_ids() -> None:
    """A shared key that add_batch numbered on either side asks for image_ids; one it did
    not number keeps the plain message."""
    a, b = Evaluator(), Evaluator()
    a.add_batch(*cats(2))
    b.add("1", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    with pytest.raises(StateError, match=NUMBERED_CLASH.replace("'0', '1', '2' and 1 more", "'1'")):
        b.merge(a)
    c, d = Evaluator(), Evaluator()
    c.add("7", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    d.add("7", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    d.add_batch(*cats(1))
    with pytest.raises(StateError, match=r"^cannot merge states that share images: '7'$"):
        c.merge(d)


HINT = " (add_batch numbers images from 0 in each evaluator: give each image its key in image_ids)"


@pytest.mark.parametrize(
    ("numbered", "keys", "message"),
    [
        pytest.param((1, 1), [], "'0'" + HINT, id="only-image-0-numbered-on-both-sides"),
        pytest.param((2, 0), ["01"], "'01'", id="a-leading-zero-is-no-number-given"),
        pytest.param((2, 0), ["x"], "'x'", id="a-key-that-is-no-number"),
        pytest.param((2, 0), ["\u0661"], "'\u0661'", id="a-non-ascii-digit"),
        pytest.param((0, 0), ["a", "b", "c"], "'a', 'b', 'c'", id="three-named-whole"),
        pytest.param((0, 0), ["a", "b", "c", "d", "e"], "'a', 'b', 'c' and 2 more",
                     id="five-three-named"),
        pytest.param((0, 0), ["k" * 60], repr("k" * 60), id="key-of-60-characters-whole"),
        pytest.param((0, 0), ["k" * 61], f"{'k' * 50!r}... (61 characters)",
                     id="key-of-61-characters-shortened"),
    ],
)  # fmt: skip
def test_a_merge_refused_for_shared_keys_names_them_exactly(
    numbered: tuple[int, int], keys: list[str], message: str
) -> None:
    """The shared keys, the first three named (a long key by its first 50 characters),
    and the add_batch hint exactly when a shared key is a number add_batch gave."""
    first, second = Evaluator(), Evaluator()
    for evaluator, count in zip((first, second), numbered, strict=True):
        if count:
            evaluator.add_batch(*cats(count))
        for key in keys:
            evaluator.add(key, np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    with pytest.raises(StateError) as caught:
        first.merge(second)
    assert str(caught.value) == f"cannot merge states that share images: {message}"


def test_numbered_ranges_travel_only_when_there_are_some() -> None:
    """A state records add_batch's numbers as ranges; a state without numbered images is
    written as before, and a malformed list of ranges is a corrupted header."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    plain = Evaluator()
    plain.add("a", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    assert "numbered" not in read_state(plain.to_bytes()).header
    numbered = Evaluator()
    numbered.add_batch(*cats(3))
    numbered.add_batch(*cats(2))
    raw = read_state(numbered.to_bytes())
    assert raw.header["numbered"] == [[0, 5]]
    numbered.add("5", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    numbered.add_batch(*cats(2))
    assert read_state(numbered.to_bytes()).header["numbered"] == [[0, 5], [6, 8]]
    loaded = Evaluator.from_bytes(numbered.to_bytes())
    assert loaded.to_bytes() == numbered.to_bytes()
    broken = write_state(RawState({**raw.header, "numbered": [[3, 1]]}, raw.arrays))
    with pytest.raises(StateError, match=r"^s\.vms: corrupted header \(numbered\)$"):
        Evaluator.from_bytes(broken, "s.vms")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param([[3, 1]], id="backwards"),
        pytest.param([[3, 3]], id="empty"),
        pytest.param([[-1, 2]], id="negative"),
        pytest.param([[0, 2, 4]], id="triple"),
        pytest.param([[0, 2.0]], id="float"),
        pytest.param([5], id="not-a-pair"),
    ],
)
def test_a_malformed_numbered_list_is_a_corrupted_header(value: object) -> None:
    """Each range is ``[start, stop]`` of whole numbers from 0, ``start < stop``."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(Evaluator().to_bytes())
    broken = write_state(RawState({**raw.header, "numbered": value}, raw.arrays))
    with pytest.raises(StateError, match=r"^s\.vms: corrupted header \(numbered\)$"):
        Evaluator.from_bytes(broken, "s.vms")


# Files the reading skipped: saved with the state, united by merge --------------------------


def skipped_pool() -> list[SkippedFile]:
    """Skipped files as the readers make them: with a line and the image's key, of no image
    (a second file of a key: no key), and one whose message names an option."""
    return [
        SkippedFile("gt/b.xml", "not well-formed XML: Start tag expected", 1, key="b"),
        SkippedFile("gt/a.XML", "same image key 'a' as gt/a.xml"),
        SkippedFile("pred/c.json", Message("image_id 7 is not among the images of ", Option("coco_gt")), 3, key="c"),
        SkippedFile("gt/b.xml", "not well-formed XML: Start tag expected", 1, key="b"),
    ]  # fmt: skip


def test_skipped_files_travel_with_the_state() -> None:
    """Recorded files are saved in the header's ``skipped`` list (sorted by path and line,
    each once, a message's options kept), read back, and reported by ``result``."""
    from vocmatch.evaluation.shards.state import read_state

    evaluator = Evaluator()
    box = np.array([[0.0, 0, 10, 10]])
    evaluator.add("a", box, ["cat"], box, [0.9], ["cat"])
    evaluator.add_skipped(skipped_pool())
    header = read_state(evaluator.to_bytes()).header
    assert header["skipped"] == [
        {"path": "gt/a.XML", "line": None, "key": None, "message": "same image key 'a' as gt/a.xml"},
        {"path": "gt/b.xml", "line": 1, "key": "b", "message": "not well-formed XML: Start tag expected"},
        {"path": "pred/c.json", "line": 3, "key": "c", "message": [
            "image_id 7 is not among the images of ",
            {"option": "coco_gt", "value": None, "placeholder": None},
        ]},
    ]  # fmt: skip
    loaded = Evaluator.from_bytes(evaluator.to_bytes())
    expected = tuple(skipped_pool()[i] for i in (1, 0, 2))
    assert loaded.skipped == evaluator.skipped == expected
    message = loaded.skipped[2].message
    assert isinstance(message, Message)
    assert message.worded(lambda o: "--" + o.field.replace("_", "-")) == (
        "image_id 7 is not among the images of --coco-gt"
    )
    assert loaded.result().skipped == expected
    assert loaded.to_bytes() == evaluator.to_bytes()


@pytest.mark.parametrize(
    ("value", "part"),
    [
        pytest.param(("a", "b"), "classes=('a', 'b')", id="tuple"),
        pytest.param(Path("gt.json"), "classes=PosixPath('gt.json')", id="path"),
        pytest.param({"a": 1}, "classes={'a': 1}", id="mapping"),
    ],
)
def test_an_option_whose_value_is_no_json_travels_as_its_text(value: object, part: str) -> None:
    """An option named in a skipped file's message keeps its name and value through a
    state when the value is JSON's own (a string, number, boolean, null or list of them);
    any other value travels as the text the message shows."""
    from vocmatch.evaluation.shards.state import read_state

    skipped = SkippedFile("gt/a.xml", Message("bad under ", Option("classes", value)), 1)
    evaluator = Evaluator()
    evaluator.add_skipped([skipped])
    header = read_state(evaluator.to_bytes()).header
    assert header["skipped"][0]["message"] == ["bad under ", part]
    loaded = Evaluator.from_bytes(evaluator.to_bytes()).skipped
    assert [str(s) for s in loaded] == [str(skipped)] == [f"gt/a.xml:1: bad under {part}"]


def test_a_state_without_skipped_files_is_written_as_before() -> None:
    """No ``skipped`` field without a skipped file: a state saved before the field existed
    reads as one with none."""
    from vocmatch.evaluation.shards.state import read_state

    plain = Evaluator()
    plain.add("a", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    assert "skipped" not in read_state(plain.to_bytes()).header
    assert Evaluator.from_bytes(plain.to_bytes()).skipped == ()
    assert Evaluator.from_bytes(plain.to_bytes()).result().skipped == ()


@pytest.mark.parametrize(
    ("skipped", "orphans"),
    [
        pytest.param(0, 0, id="none-skipped"),
        pytest.param(2, 0, id="files-skipped"),
        pytest.param(0, 1, id="orphan-pred"),
        pytest.param(2, 1, id="both"),
    ],
)
def test_a_state_is_refused_by_a_reader_of_an_earlier_version(skipped: int, orphans: int) -> None:
    """A state keeps each image-class's ground-truth counts (format version 5): a reader of
    version 2 (before the skipped files and the prediction files without ground truth) or of
    version 4 refuses it in one line instead of merging it without them."""
    from vocmatch.evaluation.shards.state import read_state

    evaluator = Evaluator()
    evaluator.add("a", np.zeros((0, 4)), [], np.zeros((0, 4)), [], [])
    evaluator.add_skipped(skipped_pool()[:skipped])
    evaluator.add_orphans([("x", "pred/x.xml")][:orphans])
    data = evaluator.to_bytes()
    assert int.from_bytes(data[8:12], "little") == 5
    assert len(Evaluator.from_bytes(data).skipped) == skipped
    assert len(Evaluator.from_bytes(data).orphan_pred) == orphans
    for version in (2, 4):
        with pytest.raises(StateError) as caught:
            read_state(data, "s.vms", version=version)
        assert str(caught.value) == (
            f"s.vms: state format version 5; this vocmatch reads version {version}"
        )


def without_cells(data: bytes) -> bytes:
    """A state as a vocmatch before the ground-truth cells saved it: no ``gt_cells``."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(data)
    header = {k: v for k, v in raw.header.items() if k != "gt_cells"}
    arrays = {k: v for k, v in raw.arrays.items() if k != "gt_cells"}
    return write_state(RawState(header, arrays), version=4)


@pytest.mark.parametrize(
    ("skipped", "orphans", "shard", "version"),
    [
        pytest.param(0, 0, False, 2, id="plain"),
        pytest.param(2, 0, False, 3, id="files-skipped"),
        pytest.param(0, 1, False, 3, id="orphan-pred"),
        pytest.param(0, 0, True, 4, id="shard"),
    ],
)
def test_a_state_without_cells_is_saved_in_the_earliest_version_that_holds_it(
    skipped: int, orphans: int, shard: bool, version: int
) -> None:
    """Records loaded from a state that keeps no ground-truth cells (saved before they were
    kept) are saved again without them, in the earliest format that holds what they have:
    version 2, 3 with skipped or orphan files, 4 with a shard."""
    from vocmatch.evaluation.shards.shard_origin import ShardOrigin

    evaluator = Evaluator()
    box = np.array([[0.0, 0, 10, 10]])
    evaluator.add("a", box, ["cat"], box, [0.9], ["cat"])
    loaded = Evaluator.from_bytes(without_cells(evaluator.to_bytes()))
    loaded.add_skipped(skipped_pool()[:skipped])
    loaded.add_orphans([("x", "pred/x.xml")][:orphans])
    if shard:
        loaded.origin = ShardOrigin(1, 1, "0" * 64, None)
    data = loaded.to_bytes()
    assert int.from_bytes(data[8:12], "little") == version
    assert Evaluator.from_bytes(data).result().summary.map == 1.0


def test_prediction_files_without_ground_truth_travel_with_the_state() -> None:
    """Recorded orphan prediction files are saved in the header's ``orphan_pred`` list of
    ``[key, path]`` (sorted by key, each once), read back, merged with another state's in
    any order, and reported by ``result`` in key order; absent when there are none."""
    from vocmatch.evaluation.shards.state import read_state

    box = np.array([[0.0, 0, 10, 10]])
    first, second = Evaluator(), Evaluator()
    first.add("a", box, ["cat"], box, [0.9], ["cat"])
    second.add("b", box, ["cat"], box, [0.8], ["cat"])
    first.add_orphans([("z-1", "pred/z-1.xml"), ("z", "pred/z.xml"), ("z", "pred/z.xml")])
    assert "orphan_pred" not in read_state(second.to_bytes()).header
    header = read_state(first.to_bytes()).header
    assert header["orphan_pred"] == [["z", "pred/z.xml"], ["z-1", "pred/z-1.xml"]]
    assert "skipped" not in header
    loaded = Evaluator.from_bytes(first.to_bytes())
    assert loaded.orphan_pred == ("pred/z.xml", "pred/z-1.xml")
    assert loaded.to_bytes() == first.to_bytes()
    second.add_orphans([("y", "pred/y.xml"), ("z", "pred/z.xml")])
    one = Evaluator.from_bytes(first.to_bytes())
    one.merge(Evaluator.from_bytes(second.to_bytes()))
    other = Evaluator.from_bytes(second.to_bytes())
    other.merge(Evaluator.from_bytes(first.to_bytes()))
    expected = ("pred/y.xml", "pred/z.xml", "pred/z-1.xml")
    assert one.result().orphan_pred == other.result().orphan_pred == expected
    assert one.result().summary.orphan_pred == 3
    assert one.to_bytes() == other.to_bytes()
    assert one.result(orphan_pred=["pred/q.xml", "pred/y.xml"]).orphan_pred == (
        "pred/q.xml",
        "pred/y.xml",
        "pred/z.xml",
        "pred/z-1.xml",
    )


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"z": "pred/z.xml"}, id="not-a-list"),
        pytest.param([["z"]], id="no-path"),
        pytest.param([["z", 1]], id="path"),
        pytest.param(["pred/z.xml"], id="not-a-pair"),
    ],
)
def test_a_malformed_orphan_list_is_a_corrupted_header(value: object) -> None:
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(Evaluator().to_bytes())
    broken = write_state(RawState({**raw.header, "orphan_pred": value}, raw.arrays))
    with pytest.raises(StateError, match=r"^s\.vms: corrupted header \(orphan_pred\)$"):
        Evaluator.from_bytes(broken, "s.vms")


def test_the_lines_of_one_skipped_file_are_in_line_order() -> None:
    """A file skipped at several lines (a text file's bad lines) is listed in line order,
    the file itself (no line) first, whatever the messages and the order recorded; so is
    it read back from a state."""
    files = [
        SkippedFile("pred/a.txt", "a: bad line", 10, key="a"),
        SkippedFile("pred/a.txt", "z: bad line", 9, key="a"),
        SkippedFile("pred/a.txt", "not UTF-8 text", key="a"),
    ]
    evaluator = Evaluator()
    evaluator.add_skipped(files)
    assert evaluator.skipped == (files[2], files[1], files[0])
    assert Evaluator.from_bytes(evaluator.to_bytes()).skipped == evaluator.skipped


def test_one_skipped_line_of_several_images_is_in_key_order() -> None:
    """Skipped files alike but for their image key are listed by key, no key first, so the
    order never depends on the order recorded."""
    files = [
        SkippedFile("pred/r.json", "bad record", 3, key="b"),
        SkippedFile("pred/r.json", "bad record", 3),
        SkippedFile("pred/r.json", "bad record", 3, key="a"),
    ]
    evaluator = Evaluator()
    evaluator.add_skipped(files)
    assert evaluator.skipped == (files[1], files[2], files[0])
    assert Evaluator.from_bytes(evaluator.to_bytes()).skipped == evaluator.skipped


@pytest.mark.parametrize(
    "file",
    [
        pytest.param(SkippedFile("a.txt", "m", 0), id="line-0"),
        pytest.param(SkippedFile("a.txt", "m", -1), id="line-negative"),
        pytest.param(SkippedFile("a.txt", "m", True), id="line-true"),
        pytest.param(SkippedFile("a.txt", "m", "3"), id="line-string"),  # type: ignore[arg-type]
        pytest.param(SkippedFile(Path("a.txt"), "m"), id="path"),  # type: ignore[arg-type]
        pytest.param(SkippedFile("a.txt", "m", key=2), id="key"),  # type: ignore[arg-type]
        pytest.param(SkippedFile("a.txt", None), id="message"),  # type: ignore[arg-type]
        pytest.param("a.txt", id="not-a-skipped-file"),
    ],
)
def test_add_skipped_refuses_a_file_no_state_could_hold(file: Any) -> None:
    """A skipped file made by hand is checked as a state's header is read (a line counts
    from 1), so every state saved reads back; the evaluator is left as it was."""
    evaluator = Evaluator()
    evaluator.add_skipped([SkippedFile("b.xml", "bad", 1)])
    with pytest.raises(InputError) as caught:
        evaluator.add_skipped([SkippedFile("c.xml", "bad"), file])
    assert str(caught.value) == (
        "Expected `files` to hold skipped files (a path, a message, a line from 1 or None,"
        f" a key or None), got {file!r}"
    )
    assert evaluator.skipped == (SkippedFile("b.xml", "bad", 1),)


def test_result_reports_given_files_with_those_recorded() -> None:
    evaluator = Evaluator()
    evaluator.add_skipped(skipped_pool()[:2])
    given = SkippedFile("gt/0.xml", "too large")
    assert evaluator.result(skipped=[given, skipped_pool()[0]]).skipped == (
        given,
        skipped_pool()[1],
        skipped_pool()[0],
    )


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"path": "a"}, id="not-a-list"),
        pytest.param([{"path": "a", "line": None, "key": None}], id="no-message"),
        pytest.param([{"path": "a", "line": -1, "key": None, "message": "m"}], id="line"),
        pytest.param([{"path": "a", "line": 0, "key": None, "message": "m"}], id="line-0"),
        pytest.param([{"path": "a", "line": 1.0, "key": None, "message": "m"}], id="line-float"),
        pytest.param([{"path": "a", "line": True, "key": None, "message": "m"}], id="line-true"),
        pytest.param([{"path": 1, "line": None, "key": None, "message": "m"}], id="path"),
        pytest.param([{"path": "a", "line": None, "key": None, "message": [{"x": 1}]}], id="part"),
        pytest.param([{"path": "a", "line": None, "key": 2, "message": "m"}], id="key"),
    ],
)
def test_a_malformed_skipped_list_is_a_corrupted_header(value: object) -> None:
    """Each entry is checked; a line is a whole number from 1 (as every reader counts
    lines) or null, so a line 0 is a crafted state, refused."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(Evaluator().to_bytes())
    broken = write_state(RawState({**raw.header, "skipped": value}, raw.arrays))
    with pytest.raises(StateError, match=r"^s\.vms: corrupted header \(skipped\)$"):
        Evaluator.from_bytes(broken, "s.vms")


@settings(max_examples=60, deadline=None)
@given(
    shard_of=st.lists(st.integers(0, 2), min_size=6, max_size=6),
    skipped_by=st.lists(st.sets(st.integers(0, 3)), min_size=3, max_size=3),
    order=st.permutations([0, 1, 2]),
)
def test_merge_order_does_not_change_the_skipped_files(
    shard_of: list[int], skipped_by: list[set[int]], order: list[int]
) -> None:
    """Three shards, each with skipped files (the same file in several shards, as a file
    of no image is), saved and merged in any order: the same bytes, and the files reported
    once each, sorted by path and line."""
    pool = skipped_pool()
    shards = [Evaluator() for _ in range(3)]
    box = np.array([[0.0, 0, 10, 10]])
    for i, shard in enumerate(shard_of):
        shards[shard].add(f"img{i}", box, ["cat"], box + i, [0.5 + i / 10], ["cat"])
    for shard, chosen in zip(shards, skipped_by, strict=True):
        shard.add_skipped(pool[j] for j in sorted(chosen))
    saved = [shard.to_bytes() for shard in shards]

    def merged(sequence: list[int]) -> Evaluator:
        first = Evaluator.from_bytes(saved[sequence[0]])
        for k in sequence[1:]:
            first.merge(Evaluator.from_bytes(saved[k]))
        return first

    expected = sorted(
        {pool[j] for chosen in skipped_by for j in chosen}, key=lambda s: (s.path, s.line or 0)
    )
    reference, shuffled = merged([0, 1, 2]), merged(order)
    assert shuffled.to_bytes() == reference.to_bytes()
    assert list(shuffled.result().skipped) == expected
    assert_identical(shuffled.result(), reference.result())


def _batch_images(seed: int, n: int) -> list[tuple[str, Any, Any, Any, Any, Any]]:
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n):
        n_gt, n_pred = int(rng.integers(0, 4)), int(rng.integers(0, 6))
        gt = np.sort(rng.uniform(0, 50, (n_gt, 4)).astype(np.float32).reshape(n_gt, 2, 2), 1)
        pred = np.sort(rng.uniform(0, 50, (n_pred, 4)).reshape(n_pred, 2, 2), 1)
        images.append(
            (
                # Rows (x1, y1) and (x2, y2), each column sorted: x1 <= x2 and y1 <= y2.
                f"img{i}", gt.reshape(n_gt, 4), rng.integers(0, 3, n_gt),
                pred.reshape(n_pred, 4), rng.random(n_pred).astype(np.float32),
                rng.integers(0, 3, n_pred),
            )
        )  # fmt: skip
    return images


@pytest.mark.parametrize(
    "known", [pytest.param(True, id="labels-known"), pytest.param(False, id="labels-new")]
)
def test_add_batch_gives_the_records_of_add(known: bool) -> None:
    """A batch of plain images, its labels seen before or not, leaves the state that adding
    its images one by one leaves, byte for byte."""
    images = _batch_images(7, 12)
    one_by_one, batched = Evaluator("coco"), Evaluator("coco")
    if known:
        for evaluator in (one_by_one, batched):
            evaluator.add("seen", np.tile([0.0, 0, 10, 10], (3, 1)), np.arange(3), [], [], [])
    for key, gb, gl, pb, ps, pl in images:
        one_by_one.add(key, gb, gl, pb, ps, pl)
    batched.add_batch(
        [{"boxes": pb, "scores": ps, "labels": pl} for _, _, _, pb, ps, pl in images],
        [{"boxes": gb, "labels": gl} for _, gb, gl, _, _, _ in images],
        image_ids=[key for key, *_ in images],
    )
    assert batched.to_bytes() == one_by_one.to_bytes()


def test_add_batch_refused_adds_none_of_its_images() -> None:
    """A batch whose third image has infinite boxes is refused at that image, with the
    message of add naming it: none of its images is added, the evaluator is as it was."""
    images = _batch_images(3, 4)
    bad = images[2]
    images[2] = (bad[0], bad[1], bad[2], np.full((1, 4), np.inf), [0.5], [0])
    evaluator = Evaluator("coco")
    # Labels 0, 1 and 2 seen before: the batch is checked as a whole first.
    evaluator.add("warm", np.tile([0.0, 0, 10, 10], (3, 1)), np.arange(3), [], [], [])
    with pytest.raises(
        InputError, match=r"^Expected `pred_boxes` of image 2 to be finite: row 0: x1 inf"
    ):
        evaluator.add_batch(
            [{"boxes": pb, "scores": ps, "labels": pl} for _, _, _, pb, ps, pl in images],
            [{"boxes": gb, "labels": gl} for _, gb, gl, _, _, _ in images],
            image_ids=[key for key, *_ in images],
        )
    assert evaluator.keys == ["warm"]


PLAIN_BOX = np.array([[0.0, 0, 10, 10]])


@pytest.mark.parametrize(
    ("image_ids", "scores", "message"),
    [
        pytest.param(["b", "b"], [0.9], "image 'b' is given twice in the batch", id="key-twice"),
        pytest.param(["warm"], [0.9], "image 'warm' was added already", id="key-added-before"),
        pytest.param(["b"], [np.inf], "Expected `pred_scores` of image 0 to be finite (or NaN for"
                     " no score)", id="infinite-score"),
        pytest.param([], [0.9], None, id="no-image"),
    ],
)  # fmt: skip
def test_a_plain_batch_is_checked_as_add_checks_it(
    image_ids: list[str], scores: list[float], message: str | None
) -> None:
    """A batch of numeric arrays whose integer labels were all seen before is taken at
    once, and still refused as add refuses its images: nothing of it is added."""
    evaluator = Evaluator("voc12")
    evaluator.add("warm", PLAIN_BOX, np.array([1]), PLAIN_BOX, [0.9], np.array([1]))
    before = evaluator.to_bytes()
    pred = {"boxes": PLAIN_BOX, "scores": np.array(scores), "labels": np.array([1])}
    gt = {"boxes": PLAIN_BOX, "labels": np.array([1])}
    n = len(image_ids)
    if message is None:
        evaluator.add_batch([pred] * n, [gt] * n, image_ids=image_ids)
    else:
        with pytest.raises(InputError) as caught:
            evaluator.add_batch([pred] * n, [gt] * n, image_ids=image_ids)
        assert str(caught.value) == message
    assert evaluator.keys == ["warm"]
    assert evaluator.to_bytes() == before


PLAIN_PRED = {"boxes": PLAIN_BOX, "scores": np.array([0.9]), "labels": np.array([1])}
PLAIN_GT = {"boxes": PLAIN_BOX, "labels": np.array([1])}


@pytest.mark.parametrize(
    ("pred", "gt", "message"),
    [
        pytest.param([PLAIN_BOX], PLAIN_GT, "Expected `preds[0]` to be a mapping such as"
                     " {'boxes': ..., 'labels': ...}, got list", id="pred-not-a-mapping"),
        pytest.param(PLAIN_PRED, {"boxes": PLAIN_BOX}, "Expected `targets[0]` to have a"
                     " 'labels' entry, got ['boxes']", id="gt-without-labels"),
        pytest.param({**PLAIN_PRED, "scores": np.array([0.9, 0.9]), "labels": np.array([1, 1])},
                     {**PLAIN_GT, "labels": np.array([1, 1])}, "Expected `gt_labels` of image 0 to"
                     " have shape (1,), got (2,)", id="every-column-too-long"),
        pytest.param({**PLAIN_PRED, "scores": np.array([[0.9]]), "labels": np.array([[1]])},
                     {**PLAIN_GT, "labels": np.array([[1]])}, "Expected `gt_labels` of image 0 to"
                     " have shape (1,), got (1, 1)", id="every-column-two-dimensional"),
        pytest.param(PLAIN_PRED, {**PLAIN_GT, "labels": np.array(1)}, "Expected `gt_labels` of"
                     " image 0 to have shape (1,), got ()", id="gt-label-a-scalar"),
        pytest.param({**PLAIN_PRED, "scores": np.array(["x"]), "labels": np.array([1.0])},
                     {**PLAIN_GT, "labels": np.array([1.0])}, "Expected `gt_labels` of image 0 to"
                     " hold class names or integer ids, got dtype float64",
                     id="every-column-of-another-kind"),
        pytest.param(PLAIN_PRED, {**PLAIN_GT, "labels": np.array([1, 1, 1, 1])}, "Expected"
                     " `gt_labels` of image 0 to have shape (1,), got (4,)",
                     id="four-labels-of-one-box"),
        pytest.param({**PLAIN_PRED, "scores": np.full(4, 0.9), "labels": np.array([1, 1, 1, 1])},
                     PLAIN_GT, "Expected `pred_labels` of image 0 to have shape (1,), got (4,)",
                     id="four-labels-and-scores-of-one-prediction"),
        pytest.param(PLAIN_PRED, {**PLAIN_GT, "boxes": np.array([[10.0, 0, 0, 10]])},
                     "Expected `gt_boxes` of image 0 to be x1, y1, x2, y2 with x1 <= x2 and"
                     " y1 <= y2: row 0: x2 0 is less than x1 10", id="gt-box-backwards"),
        pytest.param({**PLAIN_PRED, "boxes": np.array([[10.0, 0, 0, 10]])}, PLAIN_GT,
                     "Expected `pred_boxes` of image 0 to be x1, y1, x2, y2 with x1 <= x2 and"
                     " y1 <= y2: row 0: x2 0 is less than x1 10", id="pred-box-backwards"),
    ],
)  # fmt: skip
def test_an_image_of_a_batch_is_refused_as_add_refuses_it(pred: Any, gt: Any, message: str) -> None:
    """Labels seen before, the batch could be taken at once: its image's fault is still
    told as add tells it, never met as a KeyError or AttributeError, never let through."""
    evaluator = Evaluator("voc12")
    evaluator.add("warm", PLAIN_BOX, np.array([1]), PLAIN_BOX, [0.9], np.array([1]))
    with pytest.raises(InputError) as caught:
        evaluator.add_batch([pred], [gt], image_ids=["b"])
    assert str(caught.value) == message
    assert evaluator.keys == ["warm"]


@pytest.mark.parametrize(
    ("preds", "name"),
    [
        pytest.param("ab", "str", id="a-string"),
        pytest.param(b"ab", "bytes", id="bytes"),
        pytest.param((p for p in [PLAIN_PRED]), "generator", id="a-generator"),
        pytest.param(3, "int", id="a-number"),
    ],
)
def test_add_batch_takes_only_a_list_of_mappings(preds: Any, name: str) -> None:
    """Text is no list of images (though a sequence), nor is a one-pass iterable."""
    with pytest.raises(InputError) as caught:
        Evaluator().add_batch(preds, [PLAIN_GT, PLAIN_GT])
    assert (
        str(caught.value) == f"Expected `preds` to be a list of mappings, one per image, got {name}"
    )


@pytest.mark.parametrize("entry", ["difficult", "iscrowd", "no-scores"])
def test_a_batch_with_flags_or_without_scores_gives_the_records_of_add(entry: str) -> None:
    """Labels seen before: a batch whose ground truth has flags, or whose predictions have
    no scores, is read with them, as add reads the same image."""
    boxes = np.array([[0.0, 0, 10, 10], [20, 20, 30, 30]])
    labels = np.array([1, 1])
    gt: dict[str, Any] = {"boxes": boxes, "labels": labels}
    pred: dict[str, Any] = {"boxes": boxes, "scores": np.array([0.9, 0.8]), "labels": labels}
    flags: dict[str, Any] = {}
    if entry == "difficult":
        gt["difficult"] = flags["difficult"] = np.array([True, False])
    elif entry == "iscrowd":
        gt["iscrowd"] = flags["crowd"] = np.array([1, 0])
    else:
        del pred["scores"]
    batched, one_by_one = Evaluator("coco"), Evaluator("coco")
    for evaluator in (batched, one_by_one):
        evaluator.add("warm", PLAIN_BOX, np.array([1]), PLAIN_BOX, [0.9], np.array([1]))
    batched.add_batch([pred], [gt], image_ids=["b"])
    one_by_one.add("b", boxes, labels, boxes, pred.get("scores"), labels, **flags)
    assert batched.to_bytes() == one_by_one.to_bytes()


@pytest.mark.parametrize("side", ["ground-truth", "predictions"])
def test_a_batch_without_boxes_on_one_side_gives_the_records_of_add(side: str) -> None:
    """A batch of images without ground truth (or without predictions), between images
    added one by one: each image keeps its own classes, as add gives them."""
    none = {"boxes": np.zeros((0, 4)), "labels": np.zeros(0, dtype=np.int64)}
    gt = none if side == "ground-truth" else PLAIN_GT
    pred = {**none, "scores": np.zeros(0)} if side == "predictions" else PLAIN_PRED
    batched, one_by_one = Evaluator("voc12"), Evaluator("voc12")
    for evaluator in (batched, one_by_one):
        evaluator.add("a", PLAIN_BOX, np.array([1]), PLAIN_BOX, [0.9], np.array([1]))
    batched.add_batch([pred], [gt], image_ids=["b"])
    one_by_one.add("b", gt["boxes"], gt["labels"], pred["boxes"], pred["scores"], pred["labels"])
    for evaluator in (batched, one_by_one):
        evaluator.add("c", PLAIN_BOX, np.array([2]), PLAIN_BOX, [0.8], np.array([2]))
    assert batched.to_bytes() == one_by_one.to_bytes()
    assert [(c.name, c.tp, c.fn) for c in batched.result().classes][-1] == ("2", 1, 0)


def array_predictions(data: bytes) -> int:
    """How many predictions a state holds."""
    from vocmatch.evaluation.shards.state import read_state

    return int(read_state(data).arrays["pred_label"].size)


def ignoring(data: bytes, index: int) -> bytes:
    """The state with one prediction ignored, the one at ``index``."""
    state = replaced_array(data, "ignored_pred", np.array([index], dtype="<u4"))
    return replaced_array(state, "ignored_bits", np.array([1], dtype="|u1"))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: edited_array(d, "pred_area", lambda v: np.full_like(v, 15)),
                     id="area-flags-15"),
        pytest.param(lambda d: ignoring(d, array_predictions(d) - 1), id="ignored-the-last"),
        # The predictions matched at the first threshold matched at all ten (every one
        # matched at all ten would be more true positives than ground truth).
        pytest.param(lambda d: edited_array(d, "pred_matched", lambda v: np.where(v & 1, 1023, v)),
                     id="flags-of-all-10-thresholds"),
        pytest.param(lambda d: edited_array(d, "image_mean_iou", lambda v: np.full_like(v, 0.0)),
                     id="mean-iou-0"),
        pytest.param(lambda d: edited_array(d, "image_mean_iou", lambda v: np.full_like(v, 1.0)),
                     id="mean-iou-1"),
    ],
)  # fmt: skip
def test_load_reads_states_at_the_bounds(change: Any) -> None:
    """The largest values a state may hold are read, not refused."""
    data = small_state()
    assert Evaluator.from_bytes(change(data)).keys == Evaluator.from_bytes(data).keys


def test_area_all_is_read_from_the_protocol_s_matching_when_it_is_that() -> None:
    """A COCO state whose area "all" matching is the protocol's own stores the other three
    area ranges only, and says so in its header."""
    from vocmatch.evaluation.shards.state import read_state

    state = read_state(small_state())
    assert state.header["coco_all_from_main"] is True
    assert state.arrays["pred_coco"].shape == (array_predictions(small_state()), 3)


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(10.0, id="small"),
        pytest.param(50.0, id="medium"),
        pytest.param(200.0, id="large"),
    ],
)
def test_area_all_is_read_from_the_protocol_s_matching_for_a_box_of_any_size(size: float) -> None:
    """A box of one area range is out of the others (there its match is ignored): only the
    area "all" matching is the protocol's, and only it is left out of the state."""
    from vocmatch.evaluation.shards.state import read_state

    evaluator = Evaluator("coco")
    box = np.array([[0.0, 0, size, size]])
    evaluator.add("a", box, ["cat"], box, [0.9], ["cat"])
    state = read_state(evaluator.to_bytes())
    assert state.header["coco_all_from_main"] is True
    assert state.arrays["pred_coco"].shape == (1, 3)
    loaded = Evaluator.from_bytes(evaluator.to_bytes())
    assert loaded.result().coco.as_list() == evaluator.result().coco.as_list()


def test_area_all_is_read_from_the_protocol_s_matching_when_a_range_matches_otherwise() -> None:
    """A medium box inside a large one, each predicted: in the large range the medium one
    is ignored, so the lower prediction matches it there and nowhere else. The large
    range's matching is stored, and area "all" is still the protocol's own."""
    from vocmatch.evaluation.shards.state import read_state

    evaluator = Evaluator("coco")
    gt = np.array([[0.0, 0, 90, 90], [0, 0, 100, 100]])
    pred = np.array([[0.0, 0, 92, 92], [0, 0, 65, 65]])
    evaluator.add("a", gt, ["cat", "cat"], pred, [0.9, 0.8], ["cat", "cat"])
    state = read_state(evaluator.to_bytes())
    assert state.header["coco_all_from_main"] is True
    assert state.arrays["pred_coco"].tolist() == [[1023, 1023, 1023], [0, 0, 1]]
    loaded = Evaluator.from_bytes(evaluator.to_bytes())
    assert loaded.result().coco.as_list() == evaluator.result().coco.as_list()


@pytest.mark.parametrize(
    ("ranges", "added", "expected"),
    [
        pytest.param([], (0, 4), [(0, 4)], id="first"),
        pytest.param([(5, 7)], (7, 9), [(5, 9)], id="after-the-last"),
        pytest.param([(0, 2), (5, 7)], (7, 9), [(0, 2), (5, 9)], id="after-the-last-of-two"),
        pytest.param([(0, 2), (5, 7)], (2, 3), [(0, 3), (5, 7)], id="after-the-first-of-two"),
        pytest.param([(5, 7)], (5, 6), [(5, 7)], id="inside-the-last"),
        pytest.param([(5, 7)], (0, 2), [(0, 2), (5, 7)], id="before-the-first"),
        pytest.param([(0, 2), (5, 7)], (6, 9), [(0, 2), (5, 9)], id="over-the-end-of-the-second"),
        pytest.param([(0, 2), (5, 7), (10, 12)], (7, 10), [(0, 2), (5, 12)],
                     id="joining-the-second-and-third"),
        pytest.param([(0, 2), (5, 9)], (6, 7), [(0, 2), (5, 9)], id="inside-the-second"),
        pytest.param([(5, 7)], (0, 7), [(0, 7)], id="ending-where-the-last-ends"),
    ],
)  # fmt: skip
def test_numbered_ranges_stay_sorted_and_joined(
    ranges: list[tuple[int, int]], added: tuple[int, int], expected: list[tuple[int, int]]
) -> None:
    from vocmatch.evaluation.shards.state_records import with_range

    assert with_range(ranges, added) == expected


PLAIN_XML = (
    "<annotation><object><name>cup</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>5</xmax>"
    "<ymax>5</ymax></bndbox></object></annotation>"
)
ROTATED_XML = (
    "<annotation><object><name>tv</name><robndbox><cx>50</cx><cy>50</cy><w>20</w><h>10</h>"
    "<angle>0.5</angle></robndbox></object></annotation>"
)


@pytest.mark.parametrize(
    ("gt_xml", "pred_xml"),
    [
        pytest.param(ROTATED_XML, PLAIN_XML, id="rotated-ground-truth"),
        pytest.param(PLAIN_XML, ROTATED_XML, id="rotated-prediction"),
    ],
)
def test_columns_with_rotated_boxes_on_either_side_are_matched_by_region(
    tmp_path: Path, gt_xml: str, pred_xml: str
) -> None:
    """Rotated boxes among the ground truth or the predictions are matched by their regions,
    as one run matches them; saved and read back the state reports the same (its note on
    shapes included); an evaluator that keeps boxes refuses them (a state keeps plain
    boxes), not drops them."""
    from vocmatch.readers.scan import read_columns

    for name, text in (("gt", gt_xml), ("pred", pred_xml)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.xml").write_text(text, encoding="utf-8")
    gt, pred = read_columns(tmp_path / "gt"), read_columns(tmp_path / "pred")
    single = evaluate_columns(gt, pred, protocol("voc12"), keep_matches=False)
    evaluator = Evaluator("voc12")
    evaluator.add_columns(gt, pred)
    assert_identical(evaluator.result(), single)
    assert any("rotated" in note or "polygon" in note for note in single.notes)
    assert_identical(Evaluator.from_bytes(evaluator.to_bytes()).result(), single)
    with pytest.raises(InputError) as caught:
        Evaluator("voc12", keep_boxes=True).add_columns(gt, pred)
    assert str(caught.value).startswith("rotated boxes and polygons cannot be kept as boxes")


@pytest.mark.parametrize(
    ("shard", "keys"),
    [
        pytest.param(None, ["a", "b", "c", "d"], id="whole"),
        pytest.param((1, 2), ["a", "c"], id="first-of-two"),
        pytest.param((2, 2), ["b", "d"], id="second-of-two"),
    ],
)
def test_add_columns_takes_the_images_of_its_shard(
    tmp_path: Path, shard: tuple[int, int] | None, keys: list[str]
) -> None:
    """Shard k of n: the images whose place among the ground-truth keys is k - 1 modulo n."""
    from vocmatch.readers.scan import read_columns

    for name in ("gt", "pred"):
        (tmp_path / name).mkdir()
        for key in "abcd":
            (tmp_path / name / f"{key}.xml").write_text(PLAIN_XML, encoding="utf-8")
    gt, pred = read_columns(tmp_path / "gt"), read_columns(tmp_path / "pred")
    evaluator = Evaluator("voc12")
    evaluator.add_columns(gt, pred, shard=shard)
    assert evaluator.keys == keys


def test_a_negative_label_id_leaves_the_other_ids_classes_alone() -> None:
    """Integer ids are remembered for the next images; a negative id is a class of its own
    and never takes the place of another (here of 4, the largest seen)."""
    evaluator = Evaluator("voc12")
    box = np.array([[0.0, 0, 10, 10]])
    for key, label in (("a", 4), ("b", -1), ("c", 4)):
        evaluator.add(key, box, np.array([label]), box, [0.9], np.array([label]))
    found = [(c.name, c.tp, c.fp, c.fn) for c in evaluator.result().classes]
    assert found == [("-1", 1, 0, 0), ("4", 2, 0, 0)]


@pytest.mark.parametrize("door", ["add", "add_batch"])
def test_an_id_first_seen_below_one_seen_before_is_a_class_of_its_own(door: str) -> None:
    """Ids 5, then 3 (never seen, below 5), then 5 again: 3 is its own class, not the
    class of whichever id the remembered ids put before it."""
    evaluator = Evaluator("voc12")
    box = np.array([[0.0, 0, 10, 10]])
    for key, label in (("a", 5), ("b", 3), ("c", 5)):
        labels = np.array([label])
        if door == "add":
            evaluator.add(key, box, labels, box, [0.9], labels)
        else:
            pred = {"boxes": box, "scores": np.array([0.9]), "labels": labels}
            evaluator.add_batch([pred], [{"boxes": box, "labels": labels}], image_ids=[key])
    found = [(c.name, c.tp, c.fp, c.fn) for c in evaluator.result().classes]
    assert found == [("3", 1, 0, 0), ("5", 2, 0, 0)]


def test_names_in_an_object_array_are_read_as_names() -> None:
    """Class names given as an object array (a pandas column of strings) are names."""
    box = np.array([[0.0, 0, 10, 10]])
    names = np.array(["cat"], dtype=object)
    evaluator = Evaluator("voc12")
    evaluator.add("a", box, names, box, [0.9], names)
    assert [(c.name, c.tp) for c in evaluator.result().classes] == [("cat", 1)]


def test_labels_of_mixed_objects_are_refused() -> None:
    """An object array of names and numbers is neither: refused, not read as text."""
    box = np.array([[0.0, 0, 10, 10], [1, 1, 5, 5]])
    labels = np.array([1, "cat"], dtype=object)
    with pytest.raises(InputError) as caught:
        Evaluator("voc12").add("a", box, labels, box, [0.9, 0.8], ["cat", "cat"])
    assert str(caught.value) == "Expected `gt_labels` to hold class names or integer ids"


def test_a_shared_key_just_past_the_numbered_images_gets_no_numbering_hint() -> None:
    """Images 0 and 1 numbered by add_batch, then "2" given by its key in both: the shared
    "2" is no numbered image, so the message gives no add_batch hint."""
    box = np.array([[0.0, 0, 10, 10]])
    first, second = Evaluator("voc12"), Evaluator("voc12")
    first.add_batch(
        [{"boxes": box, "scores": np.array([0.9]), "labels": np.array([1])}] * 2,
        [{"boxes": box, "labels": np.array([1])}] * 2,
    )
    for evaluator in (first, second):
        evaluator.add("2", box, ["cat"], box, [0.9], ["cat"])
    with pytest.raises(StateError) as caught:
        first.merge(second)
    assert str(caught.value) == "cannot merge states that share images: '2'"


# The lines of incremental.py from 600 on, under bench/mutate.py.


def test_images_are_matched_once_the_batch_is_full_to_the_box(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch of 4 boxes: 3 do not fill it, 3 then 1 do, 4 at once do, and the count
    starts again from 0 after each match; after each image, the batches matched and the
    images still waiting, and the result that of the images matched at once."""
    whole = Evaluator("voc12")
    monkeypatch.setattr(incremental, "MATCH_BATCH", 4)
    evaluator = Evaluator("voc12")
    found = []
    for i, (n_gt, n_pred) in enumerate(((2, 1), (1, 0), (2, 2), (2, 1), (0, 1))):
        gt_boxes, pred_boxes = (
            np.arange(n * 4, dtype=np.float64).reshape(n, 4) * [1, 1, 2, 2] for n in (n_gt, n_pred)
        )
        for ev in (whole, evaluator):
            ev.add(str(i), gt_boxes, ["cat"] * n_gt, pred_boxes, [0.9] * n_pred, ["cat"] * n_pred)
        found.append((len(evaluator._records), len(evaluator._parts)))
    assert found == [(0, 1), (1, 0), (2, 0), (2, 1), (3, 0)]
    assert len(whole._records) == 0
    assert_identical(evaluator.result(), whole.result())


@pytest.mark.parametrize("door", ["add", "add_batch"])
@pytest.mark.parametrize(
    "labels",
    [
        pytest.param([0], id="an-id-seen-before"),
        pytest.param([0, 1], id="with-an-id-not-seen"),
    ],
)
def test_an_id_seen_before_a_merge_that_brings_a_class_table_is_named_by_the_table(
    labels: list[int], door: str
) -> None:
    """Id 0 added without a class table is the class "0"; merged with an evaluator whose
    table names 0 "0" too and 1 "cat", the evaluator names the ids by the joined table from
    then on, whatever other ids an image holds, as the same state saved and read back does.
    (A table naming 0 otherwise is refused: test_merge_refuses_an_id_named_by_its_text_...)"""
    box = np.array([[0.0, 0, 10, 10]])
    evaluator, tabled = Evaluator("voc12"), Evaluator("voc12", class_names=["0", "cat"])
    evaluator.add("a", box, np.array([0]), box, [0.9], np.array([0]))
    tabled.add("b", box, np.array([0]), box, [0.9], np.array([0]))
    evaluator.merge(tabled)
    read_back = Evaluator.from_bytes(evaluator.to_bytes())
    boxes = np.tile(box, (len(labels), 1)) + np.arange(len(labels))[:, None] * 20
    scores, ids = np.full(len(labels), 0.9), np.array(labels)
    for ev in (evaluator, read_back):
        if door == "add":
            ev.add("c", boxes, ids, boxes, scores, ids)
        else:
            pred = {"boxes": boxes, "scores": scores, "labels": ids}
            ev.add_batch([pred], [{"boxes": boxes, "labels": ids}], image_ids=["c"])
    expected = [("0", 3)] + [("cat", 1)] * (len(labels) > 1)
    assert sorted((c.name, c.gt) for c in read_back.result().classes) == sorted(expected)
    assert_identical(evaluator.result(), read_back.result())


def _named(table: dict[int, str] | None, label: object, key: str) -> Evaluator:
    """An evaluator with one image: one object and one prediction of ``label``."""
    evaluator = Evaluator(class_names=table)
    box = np.ones((1, 4)) * [0, 0, 5, 5]
    evaluator.add(key, box, [label], box, [0.9], [label])
    return evaluator


def _read_back(evaluator: Evaluator) -> Evaluator:
    return Evaluator.from_bytes(evaluator.to_bytes())


@pytest.mark.parametrize("saved", [False, True], ids=["in-memory", "read-back"])
@pytest.mark.parametrize(
    ("table", "message"),
    [
        pytest.param(
            {0: "car"}, r"id 0 is '0' \(named by its text, without a class table\) in one and "
            r"'car' in the other", id="other-name",
        ),
        pytest.param(
            {1: "car"}, r"id 0 is '0' \(named by its text, without a class table\) in one and "
            r"has no name in the other", id="no-name",
        ),
    ],
)  # fmt: skip
@pytest.mark.parametrize("first", ["text", "table"])
def test_merge_refuses_an_id_named_by_its_text_that_a_table_names_otherwise(
    table: dict[int, str], message: str, first: str, saved: bool
) -> None:
    """An id named by its text (no class table) and the same id named otherwise, or not at
    all, by the other evaluator's table: two classes, or a class the table does not know,
    would be counted where the ids may mean one. Refused, in memory and read back."""
    text, named = _named(None, 0, "a"), _named(table, min(table), "b")
    if saved:
        text, named = _read_back(text), _read_back(named)
    one, other = (text, named) if first == "text" else (named, text)
    with pytest.raises(StateError, match=message):
        one.merge(other)
    assert len(one) == 1  # left as it was


@pytest.mark.parametrize(
    ("text_label", "table"),
    [
        pytest.param(0, {0: "0"}, id="the-table-names-it-by-its-text"),
        pytest.param("0", {0: "car"}, id="a-class-named-0-is-a-name"),
    ],
)
def test_merge_takes_ids_whose_names_agree(text_label: object, table: dict[int, str]) -> None:
    """A table naming the id by its text agrees; a label given as the name "0" is a class
    name, not an id."""
    a, b = _named(None, text_label, "a"), _named(table, 0, "b")
    a.merge(b)
    assert len(a) == 2


def test_ids_named_by_their_text_are_kept_in_the_state() -> None:
    """Two evaluators without tables merge (their ids named alike) and the state read back
    still knows which ids were named by their text."""
    a, b = _named(None, 0, "a"), _named(None, 7, "b")
    a.merge(b)
    merged = _read_back(a)
    assert sorted(c.name for c in merged.result().classes) == ["0", "7"]
    with pytest.raises(StateError, match=r"id 7 is '7' \(named by its text"):
        merged.merge(_named({0: "0", 7: "car"}, 7, "c"))


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(0, id="not-a-list"),
        pytest.param([0, 0], id="twice"),
        pytest.param([1], id="not-a-class"),
        pytest.param([True], id="a-bool"),
        pytest.param(["0"], id="a-string"),
        pytest.param([0.0], id="a-float"),
    ],
)
def test_a_malformed_text_ids_list_is_a_corrupted_header(value: object) -> None:
    """``text_ids`` lists distinct integer ids, each a class of the state (named by its text)."""
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(_named(None, 0, "a").to_bytes())
    assert raw.header["text_ids"] == [0]
    broken = write_state(RawState({**raw.header, "text_ids": value}, raw.arrays))
    with pytest.raises(StateError, match=r"^s\.vms: corrupted header \(text_ids\)$"):
        Evaluator.from_bytes(broken, "s.vms")


def test_text_ids_a_table_names_otherwise_are_a_corrupted_header() -> None:
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(_named({0: "0"}, 0, "a").to_bytes())
    header = {**raw.header, "class_table": [[0, "car"]], "text_ids": [0]}
    with pytest.raises(StateError, match=r"^s\.vms: corrupted header \(text_ids\)$"):
        Evaluator.from_bytes(write_state(RawState(header, raw.arrays)), "s.vms")


# An image's id: a string or a whole number, never text made by str() of anything else
# (1.0, None, b"x", a tensor's repr), which would not pair with the same image's key given
# by another shard, so that a merge counts one image twice.

_ONE_BOX = ([[0.0, 0, 10, 10]], ["cat"], [[0.0, 0, 10, 10]], [0.9], ["cat"])


@pytest.mark.parametrize(
    ("image_id", "key"),
    [
        pytest.param("a", "a", id="text"),
        pytest.param(7, "7", id="int"),
        pytest.param(np.int64(7), "7", id="numpy-int"),
        pytest.param(np.uint8(7), "7", id="numpy-uint8"),
        pytest.param(np.array(7), "7", id="0-d-int-array"),
        pytest.param(2**70, str(2**70), id="big-int"),
        pytest.param(-1, "-1", id="negative-int"),
    ],
)
def test_an_image_id_is_a_string_or_a_whole_number(image_id: object, key: str) -> None:
    evaluator = Evaluator()
    evaluator.add(image_id, *_ONE_BOX)  # type: ignore[arg-type]
    batch = Evaluator()
    batch.add_batch(
        [{"boxes": _ONE_BOX[2], "scores": _ONE_BOX[3], "labels": _ONE_BOX[4]}],
        [{"boxes": _ONE_BOX[0], "labels": _ONE_BOX[1]}],
        image_ids=[image_id],  # type: ignore[list-item]
    )
    assert evaluator.keys == batch.keys == [key]


@pytest.mark.parametrize(
    "image_id",
    [
        pytest.param(1.0, id="float"),
        pytest.param(np.float64(2.0), id="numpy-float"),
        pytest.param(None, id="none"),
        pytest.param(True, id="bool"),
        pytest.param(b"x", id="bytes"),
        pytest.param(np.array([3]), id="1-d-array"),
        pytest.param(("a",), id="tuple"),
    ],
)
def test_any_other_image_id_is_refused_and_nothing_is_added(image_id: object) -> None:
    evaluator = Evaluator()
    with pytest.raises(InputError, match=r"^Expected `image_id` to be a string or a whole number"):
        evaluator.add(image_id, *_ONE_BOX)  # type: ignore[arg-type]
    batch = Evaluator()
    with pytest.raises(InputError, match=r"^Expected `image_ids\[1\]` to be a string or a whole"):
        batch.add_batch(
            [{"boxes": _ONE_BOX[2], "scores": _ONE_BOX[3], "labels": _ONE_BOX[4]}] * 2,
            [{"boxes": _ONE_BOX[0], "labels": _ONE_BOX[1]}] * 2,
            image_ids=["a", image_id],  # type: ignore[list-item]
        )
    assert evaluator.keys == batch.keys == []


def test_one_image_given_as_1_and_1_0_by_two_shards_is_not_counted_twice() -> None:
    """The float id is refused where it is given, so the merge never sees key '1.0' beside
    '1' (before, the merge kept both and counted the image's objects twice)."""
    rank0, rank1 = Evaluator(), Evaluator()
    rank0.add(1, *_ONE_BOX)
    with pytest.raises(InputError):
        rank1.add(1.0, *_ONE_BOX)  # type: ignore[arg-type]
    rank1.add(1, *_ONE_BOX)
    with pytest.raises(StateError):
        rank0.merge(rank1)

"""The incremental evaluator gives evaluate_columns' result on the same data, and merging the
states of any partition of the images, in any order, gives the single run's result bit for bit.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle import random_dataset, without_scores
from tests.test_batch import assert_identical
from vocmatch.core.model import ImageAnnotation
from vocmatch.core.protocol import protocol
from vocmatch.errors import InputError, StateError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.incremental import Evaluator
from vocmatch.evaluation.result import Evaluation
from vocmatch.evaluation.state import FORMAT_VERSION, MAGIC
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


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    name=st.sampled_from(PROTOCOLS),
    n_shards=st.integers(1, 5),
    scored=st.booleans(),
    through_bytes=st.booleans(),
)
def test_merging_any_partition_equals_the_single_run(
    seed: int, name: str, n_shards: int, scored: bool, through_bytes: bool
) -> None:
    """Shards fed in any order, merged in any order (directly or through saved bytes)."""
    gt, pred = random_dataset(seed, images=8)
    if not scored:
        pred = without_scores(pred)
    images = arrays_of(gt, pred)
    expected = single_run(gt, pred, protocol(name))
    evaluators = [fed(shard, name) for shard in shards(images, [0] * n_shards, seed)]
    if through_bytes:
        evaluators = [Evaluator.from_bytes(e.to_bytes()) for e in evaluators]
    random.Random(seed).shuffle(evaluators)
    merged = evaluators[0]
    for other in evaluators[1:]:
        merged.merge(other)
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


def test_state_stores_exact_values_in_narrow_dtypes() -> None:
    """float32 where exact (integer boxes), float64 where not (scores such as 0.3)."""
    evaluator = Evaluator()
    evaluator.add(
        "a", [[0, 0, 10, 10]], ["cat"], [[1, 1, 9, 9], [0.1, 0, 3, 3]], [0.5, 0.3], ["cat", "cat"]
    )
    loaded = Evaluator.from_bytes(evaluator.to_bytes())
    _, pred = loaded.columns()
    assert pred.boxes.tolist() == [[1, 1, 9, 9], [0.1, 0, 3, 3]]
    assert pred.scores.tolist() == [0.5, 0.3]


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


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        pytest.param(lambda d: d[:10], r"not a vocmatch state \(only 10 bytes\)", id="tiny"),
        pytest.param(lambda d: b"PK\x03\x04" + d[4:], "no VMSTATE signature", id="magic"),
        pytest.param(
            lambda d: MAGIC + (FORMAT_VERSION + 1).to_bytes(4, "little") + d[12:],
            "state format version 2; this vocmatch reads version 1",
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
            lambda d: crafted_header(d, b'"shape":[', b'"shape":[99999999999,'),
            "arrays declare 400000002726 bytes but the file holds 2734",
            id="crafted-length",
        ),
        pytest.param(
            lambda d: crafted_header(d, b'"shape":[', b'"shape":[1,1,'),
            r"array 'gt_count' declares shape \[1, 1, 4\]",
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
            "array 'gt_count' is not one count per image",
            id="keys-disagree",
        ),
        pytest.param(
            lambda d: with_crc(d[:-4] + b"\0" * 8),
            "arrays declare .* bytes but the file holds",
            id="trailing-bytes",
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


def test_load_names_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"missing.vms: cannot read \(No such file"):
        Evaluator.load(tmp_path / "missing.vms")

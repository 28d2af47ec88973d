"""A state asked to keep boxes (``Evaluator(keep_boxes=True)``, ``eval --save-state`` with a
report that lists or draws boxes) keeps each image's per-box records and its boxes, reads
them back exactly, checks every array of them, and a state not asked stays as it was."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vocmatch import Evaluator
from vocmatch.errors import StateError
from vocmatch.evaluation.shards.state import RawState, read_state, write_state
from vocmatch.run.evaluate import EvalRequest, evaluate
from vocmatch.run.shard_states import shard_state


def _request(demo: tuple[Path, Path], protocol: str = "default", **extra: Any) -> EvalRequest:
    return EvalRequest(gt=demo[0], pred=demo[1], protocol=protocol, **extra)


def _shards(request: EvalRequest, n: int) -> list[Evaluator]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [shard_state(request, shard=(k, n)).evaluator for k in range(1, n + 1)]


@pytest.mark.parametrize("protocol", ["default", "coco", "voc07"])
def test_shards_keeping_boxes_merge_to_the_whole_run_s_matches_and_boxes(
    demo: tuple[Path, Path], protocol: str
) -> None:
    """Three shards saved and read back, merged in reverse order: every image's per-box
    records and the boxes are those of one run on the whole set."""
    request = _request(demo, protocol, boxes=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = evaluate(request)
    states = [Evaluator.from_bytes(e.to_bytes()) for e in _shards(request, 3)]
    merged = states[2]
    for state in states[1::-1]:
        merged.merge(state)
    assert merged.result().images == whole.evaluation.images
    assert any(image.matches for image in merged.result().images)
    boxes = merged.boxes()
    assert boxes is not None and whole.gt is not None and whole.pred is not None
    gt, pred = (columns.to_annotations() for columns in boxes)
    assert gt.annotations == whole.gt.annotations
    assert pred.annotations == whole.pred.annotations
    assert gt.root == whole.gt.root


def test_a_state_not_asked_for_boxes_keeps_none_in_the_version_before(
    demo: tuple[Path, Path],
) -> None:
    """Without keep_boxes the state is written as before (format version 5, no detail nor
    box arrays), and smaller than the same shard with them."""
    plain, kept = (_shards(_request(demo, boxes=b), 1)[0].to_bytes() for b in (False, True))
    assert int.from_bytes(plain[8:12], "little") == 5
    assert int.from_bytes(kept[8:12], "little") == 6
    names = set(read_state(plain).arrays)
    assert not any(n.startswith(("detail_", "boxes_")) for n in names)
    assert "boxes" not in read_state(plain).header
    assert len(plain) < len(kept)
    assert Evaluator.from_bytes(plain).boxes() is None


@pytest.mark.parametrize(("first", "second", "kept"), [
    pytest.param(True, True, True, id="both-keep"),
    pytest.param(True, False, False, id="second-does-not"),
    pytest.param(False, True, False, id="first-does-not"),
])  # fmt: skip
def test_a_merge_keeps_boxes_only_when_every_part_has_them(
    first: bool, second: bool, kept: bool
) -> None:
    """Detail and boxes survive a merge only when both evaluators keep them."""
    box = np.array([[0.0, 0, 10, 10]])
    a, b = Evaluator(keep_boxes=first), Evaluator(keep_boxes=second)
    a.add("a", box, ["cat"], box + 3, [0.8], ["cat"])
    b.add("b", box, ["dog"], box, [0.7], ["cat"])
    a.merge(Evaluator.from_bytes(b.to_bytes()))
    assert a.keep_boxes is kept
    assert (a.boxes() is not None) is kept
    assert all(bool(image.matches) is kept for image in a.result().images)


def test_images_added_as_arrays_keep_their_boxes() -> None:
    """add and add_batch keep the boxes given, read back from the state with their classes."""
    evaluator = Evaluator(keep_boxes=True)
    box = np.array([[0.0, 0, 10, 10]])
    evaluator.add("b", box, ["cat"], box + 1, [0.9], ["dog"])
    evaluator.add_batch(
        [{"boxes": box, "scores": np.array([0.5]), "labels": np.array([3])}],
        [{"boxes": box * 2, "labels": np.array([3])}],
        image_ids=["a"],
    )
    boxes = Evaluator.from_bytes(evaluator.to_bytes()).boxes()
    assert boxes is not None
    gt, pred = (c.to_annotations() for c in boxes)
    assert [(a.key, [(b.name, b.x2) for b in a.boxes]) for a in gt.annotations] == [
        ("a", [("3", 20.0)]), ("b", [("cat", 10.0)])
    ]  # fmt: skip
    assert [[(b.name, b.score) for b in a.boxes] for a in pred.annotations] == [
        [("3", 0.5)], [("dog", 0.9)]
    ]  # fmt: skip


def test_an_evaluator_of_no_image_keeping_boxes_reads_back() -> None:
    """A state of no image (a shard of none) keeps its boxes, none, and merges with others."""
    empty = Evaluator.from_bytes(Evaluator(keep_boxes=True).to_bytes())
    assert empty.keep_boxes
    boxes = empty.boxes()
    assert boxes is not None and boxes[0].keys == boxes[1].keys == ()
    other = Evaluator(keep_boxes=True)
    box = np.array([[0.0, 0, 10, 10]])
    other.add("a", box, ["cat"], box, [0.5], ["cat"])
    empty.merge(Evaluator.from_bytes(other.to_bytes()))
    assert empty.boxes() is not None
    assert [m.outcome for m in empty.result().images[0].matches] == ["tp"]


def test_a_shard_of_no_image_keeping_boxes_merges(demo: tuple[Path, Path]) -> None:
    """More shards than images: the empty ones keep boxes too, and the merge has them."""
    shards = [Evaluator.from_bytes(e.to_bytes()) for e in _shards(_request(demo, boxes=True), 8)]
    merged = shards[0]
    for shard in shards[1:]:
        merged.merge(shard)
    assert merged.keep_boxes and len(merged) == 6


def _kept_state() -> bytes:
    evaluator = Evaluator(keep_boxes=True)
    box = np.array([[0.0, 0, 10, 10], [20.0, 20, 30, 30]])
    evaluator.add("a", box, ["cat", "dog"], box[:1] + 1, [0.9], ["cat"])
    evaluator.add("b", box, ["cat", "cat"], box + 50, [0.9, 0.2], ["cat", "dog"])
    return evaluator.to_bytes()


def _changed(change: Callable[[dict[str, Any], dict[str, Any]], None]) -> bytes:
    raw = read_state(_kept_state())
    header, arrays = dict(raw.header), {n: np.array(a) for n, a in raw.arrays.items()}
    change(header, arrays)
    return write_state(RawState(header, arrays), version=6)


def _set(name: str, values: list[Any]) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(header: dict[str, Any], arrays: dict[str, Any]) -> None:
        arrays[name] = np.array(values, dtype=arrays[name].dtype)

    return change


def _map(
    name: str, values: Callable[[Any], Any]
) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(header: dict[str, Any], arrays: dict[str, Any]) -> None:
        arrays[name] = np.asarray(values(arrays[name].astype(np.float64)), dtype=arrays[name].dtype)

    return change


def _drop(name: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(header: dict[str, Any], arrays: dict[str, Any]) -> None:
        if name in arrays:
            del arrays[name]
        else:
            del header[name]

    return change


def _header(path: list[str], value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(header: dict[str, Any], arrays: dict[str, Any]) -> None:
        target = header
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def _extra_image(header: dict[str, Any], arrays: dict[str, Any]) -> None:
    """The ground truth's boxes of one more image, of no box (consistent in themselves)."""
    side = header["boxes"]["gt"]
    for name, value in (("keys", "c"), ("paths", "c"), ("sizes", None), ("filenames", None)):
        side[name] = [*side[name], value]
    arrays["boxes_gt_count"] = np.append(arrays["boxes_gt_count"], 0).astype(
        arrays["boxes_gt_count"].dtype
    )


CRAFTED = [
    pytest.param(_set("detail_count", [3]), "'detail_count' is not one count per image",
                 id="detail-count-short"),
    pytest.param(_map("detail_outcome", lambda a: a + 9), "names what is not listed",
                 id="outcome-unknown"),
    pytest.param(_map("detail_name", lambda a: a + 5), "names what is not listed",
                 id="class-unknown"),
    pytest.param(_map("detail_iou", lambda a: a + 2), "holds values out of range",
                 id="iou-above-1"),
    pytest.param(_map("detail_score", lambda a: a + np.inf), "holds values out of range",
                 id="score-infinite"),
    pytest.param(_map("detail_gt", lambda a: a * 0), "does not fit the records' indices",
                 id="tp-without-gt"),
    pytest.param(_map("detail_gt", lambda a: np.where(a > 0, 9, 0)), "names a box not kept",
                 id="gt-index-beyond"),
    pytest.param(_map("detail_pred", lambda a: np.where(a > 0, 9, 0)), "names a box not kept",
                 id="pred-index-beyond"),
    pytest.param(_drop("detail_iou"), "'detail_iou' is missing", id="detail-array-missing"),
    pytest.param(_drop("boxes"), "per-box records without boxes", id="boxes-header-missing"),
    pytest.param(_header(["detail"], "yes"), "corrupted header (detail)", id="detail-not-bool"),
    pytest.param(_header(["detail_names"], ["dog", "cat"]), "detail_names",
                 id="detail-names-unsorted"),
    pytest.param(_set("boxes_gt_labels", [0, 7, 0, 0]), "names what is not listed",
                 id="box-class-unknown"),
    pytest.param(_set("boxes_gt_count", [2]), "not one count per image", id="box-count-short"),
    pytest.param(_set("boxes_pred_boxes", [[0, 0, np.inf, 1]] * 3),
                 "holds boxes no file could hold", id="box-infinite"),
    pytest.param(_set("boxes_gt_boxes", [[5, 0, 1, 1]] * 4), "holds boxes no file could hold",
                 id="box-x2-below-x1"),
    pytest.param(_drop("boxes_pred_scores"), "'boxes_pred_scores' is missing",
                 id="box-array-missing"),
    pytest.param(_header(["boxes", "gt", "keys"], ["b", "a"]), "not sorted once",
                 id="box-keys-unsorted"),
    pytest.param(_header(["boxes", "gt", "keys"], ["a", "c"]),
                 "the boxes kept are not those of the state's images", id="box-keys-other"),
    pytest.param(_extra_image, "the boxes kept are not those of the state's images",
                 id="box-image-extra"),
    pytest.param(_header(["boxes", "gt", "sizes"], [[1, "x", None], None]), "an image size",
                 id="box-size-text"),
    pytest.param(_header(["boxes"], []), "boxes without per-box records", id="boxes-a-list"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), CRAFTED)
def test_a_crafted_detail_or_box_array_is_one_state_error(
    change: Callable[[dict[str, Any], dict[str, Any]], None], message: str
) -> None:
    """Each malformed field or array of the kept boxes is one StateError naming the source,
    never an IndexError later when a report reads them."""
    with pytest.raises(StateError, match=r"^s\.vms: ") as caught:
        Evaluator.from_bytes(_changed(change), "s.vms")
    assert message in str(caught.value)


def test_a_truncated_state_with_boxes_is_one_state_error() -> None:
    """A state keeping boxes cut short is refused like any other."""
    data = _kept_state()
    with pytest.raises(StateError, match=r"^s\.vms: truncated or corrupted"):
        Evaluator.from_bytes(data[:-9] + data[-4:], "s.vms")


@pytest.mark.parametrize(
    "asked",
    [
        pytest.param({"boxes": True}, id="boxes"),
        pytest.param({"analysis": True}, id="analysis"),
    ],
)
def test_a_report_of_boxes_of_states_without_them_names_them(
    demo: tuple[Path, Path], tmp_path: Path, asked: dict[str, bool]
) -> None:
    """read_states(...).report(boxes=True) (or analysis=True) of states of which some keep no
    boxes: one InputError naming those states and the option that keeps them."""
    from vocmatch import read_states
    from vocmatch.errors import InputError

    shards = _shards(_request(demo, boxes=True), 3)
    shards[1] = _shards(_request(demo), 3)[1]
    paths = [tmp_path / f"s{k}.vms" for k in (1, 2, 3)]
    for path, shard in zip(paths, shards, strict=True):
        shard.save(path)
    merged = read_states(paths)
    assert merged.without_boxes == (str(paths[1]),)
    with pytest.raises(InputError) as caught:
        merged.report(**asked)
    assert str(caught.value) == (
        f"{paths[1]} keeps no boxes, which the report asked for lists or draws: save the state "
        "of every shard with keep_boxes=True"
    )


def test_a_report_of_kept_boxes_is_the_run_s(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """report(boxes=True, analysis=True, reliability=True) of states that keep boxes: the
    boxes, the error analysis and the reliability of one run on the whole set."""
    from vocmatch import read_states

    request = _request(demo, boxes=True, analysis=True, reliability=True)
    paths = [tmp_path / f"s{k}.vms" for k in (1, 2)]
    for path, shard in zip(paths, _shards(request, 2), strict=True):
        shard.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = evaluate(request)
    report = read_states(paths[::-1]).report(boxes=True, analysis=True, reliability=True)
    assert report.gt is not None and whole.gt is not None
    assert report.gt.annotations == whole.gt.annotations
    assert repr(report.analysis) == repr(whole.analysis)  # its arrays compare by value
    assert report.evidence.reliability == whole.evidence.reliability

"""Slices matched in each shard: saved with its state (format version 6), merged into the
slices of one run on every image, and a damaged state's slices refused in one line."""

from __future__ import annotations

import random
import re
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import FIXTURES, run_cli
from tests.oracle import random_dataset, without_scores
from vocmatch.cli import EXIT_USAGE
from vocmatch.core.protocol import protocol
from vocmatch.errors import RequestError, StateError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.evaluation.records import MatchRecords
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evaluation.shards.state import RawState, read_state, write_state
from vocmatch.evaluation.thresholds import ScoreThresholds
from vocmatch.evidence.slices import parse_slices, slice_evaluation
from vocmatch.readers.parse import AnnotationSet
from vocmatch.readers.scan import columns_from_annotations
from vocmatch.run.evaluate import EvalRequest, evaluate
from vocmatch.run.shard_states import read_states, shard_state

SLICES = FIXTURES / "slices"
#: Every kind of slice: poses differ between the fixture's images (each shard holds one).
SLICE_ARGS = ("--slice", "size", "--slice", "pose", "--slice", "occluded", "--slice",
              "truncated", "--slice", "night_*", "--slice", "day_*")  # fmt: skip


def save_shards(tmp_path: Path, *args: str, n: int = 3) -> list[str]:
    states = []
    for k in range(1, n + 1):
        state = str(tmp_path / f"s{k}.vms")
        code, out, err = run_cli(
            "eval", str(SLICES / "gt"), str(SLICES / "pred"), *args, "--shard", f"{k}/{n}",
            "--save-state", state,
        )  # fmt: skip
        assert (code, out) == (0, "")
        assert err.startswith("saved ") and err.endswith(f" images to {state}\n")
        states.append(state)
    return states


@pytest.mark.parametrize("output_format", ["table", "json", "markdown", "csv"])
@pytest.mark.parametrize("name", ["default", "coco", "voc07"])
def test_merged_shards_report_the_slices_of_one_run(
    tmp_path: Path, name: str, output_format: str
) -> None:
    """Three shards saved with slices, merged in another order: byte for byte the report of
    one run with the same slices, in every output format."""
    args = ("--protocol", name, *SLICE_ARGS)
    states = save_shards(tmp_path, *args)
    merged = run_cli("merge", states[2], states[0], states[1], "--format", output_format)
    single = run_cli(
        "eval", str(SLICES / "gt"), str(SLICES / "pred"), *args, "--format", output_format
    )
    assert single[0] == 0
    assert merged == single
    if output_format in ("table", "json"):
        assert "Frontal" in merged[1]


def test_merge_checks_slice_gates(tmp_path: Path) -> None:
    """A gate on a slice value given to merge is checked on the states' slices, as one run
    checks it."""
    states = save_shards(tmp_path, "--slice", "size")
    gate = ("--fail-under", "size=small:recall=0.6")
    merged = run_cli("merge", *states, *gate)
    single = run_cli("eval", str(SLICES / "gt"), str(SLICES / "pred"), "--slice", "size", *gate)
    assert merged == single
    assert merged[0] == 1
    assert "size=small:recall 0.5000 < 0.6000" in merged[1] + merged[2]


def test_merge_refuses_states_of_other_slices(tmp_path: Path) -> None:
    """States made with other slices (or none) are of other options: refused in one line."""
    sized = save_shards(tmp_path, "--slice", "size", n=2)
    posed = tmp_path / "posed"
    posed.mkdir()
    other = save_shards(posed, "--slice", "pose", n=2)
    code, out, err = run_cli("merge", sized[0], other[1], "--partial")
    assert (code, out) == (EXIT_USAGE, "")
    assert err.startswith("vocmatch: error: cannot merge states made with other options: slices ")
    assert err.count("\n") == 1


def test_library_slices_of_merged_states_equal_one_run(tmp_path: Path) -> None:
    """read_states(...).report() carries the slices the states were made with."""
    request = EvalRequest(gt=SLICES / "gt", pred=SLICES / "pred", slices=["size", "pose"])
    paths = []
    for k in (1, 2, 3):
        path = tmp_path / f"{k}.vms"
        shard_state(request, shard=(k, 3)).evaluator.save(path)
        paths.append(path)
    merged = read_states(paths[::-1]).report()
    assert merged.evidence.slices == evaluate(request).evidence.slices


def test_a_state_is_version_6_with_slices_only(tmp_path: Path) -> None:
    """Slices make a state version 6; a state without them stays version 5, which an
    earlier vocmatch reads."""
    request = EvalRequest(gt=SLICES / "gt", pred=SLICES / "pred")
    plain = shard_state(request).evaluator.to_bytes()
    sliced = shard_state(EvalRequest(**{**_fields(request), "slices": ["size"]}))
    assert struct.unpack("<I", plain[8:12]) == (5,)
    assert struct.unpack("<I", sliced.evaluator.to_bytes()[8:12]) == (6,)
    assert sliced.evaluator.slices == parse_slices(["size"])


def _fields(request: EvalRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in request.__slots__}


def _sliced_state(slices: tuple[str, ...] = ("size", "pose")) -> RawState:
    request = EvalRequest(gt=SLICES / "gt", pred=SLICES / "pred", slices=slices)
    return read_state(shard_state(request).evaluator.to_bytes())


def _with_array(raw: RawState, name: str, change: Any) -> RawState:
    arrays = dict(raw.arrays)
    arrays[name] = change(arrays[name].copy())
    return RawState(raw.header, arrays)


def _with_header(raw: RawState, **fields: Any) -> RawState:
    return RawState({**raw.header, **fields}, raw.arrays)


def _set(values: Any, value: int) -> Any:
    values.flat[0] = value
    return values


def _options(raw: RawState, slices: Any) -> RawState:
    return _with_header(raw, options={**raw.header["options"], "slices": slices})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            lambda raw: _with_header(raw, slice_values=[["small"], ["Frontal"]]),
            "s.vms: corrupted header (slice_values of the size slice)",
            id="values-of-size",
        ),
        pytest.param(
            lambda raw: _with_header(raw, slice_values=raw.header["slice_values"][:1]),
            "s.vms: corrupted header (slice_values)",
            id="values-missing",
        ),
        pytest.param(
            lambda raw: _with_header(
                raw, slice_values=[raw.header["slice_values"][0], ["Rear", "Left", "\0no value"]]
            ),
            "s.vms: corrupted header (slice_values of the pose slice)",
            id="poses-unsorted",
        ),
        pytest.param(
            lambda raw: _with_array(
                _sliced_state(("size", "occluded")), "slice_out", lambda a: _set(a, 255)
            ),
            "s.vms: array 'slice_out' holds flags of values that do not exist",
            id="out-beyond-values",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_out", lambda a: a.astype(np.uint16)),
            "s.vms: array 'slice_out' has dtype <u2",
            id="out-wide",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_ignored_pred", lambda a: a[::-1]),
            "s.vms: array 'slice_ignored_pred' names predictions that are not there",
            id="ignored-out-of-order",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_ignored_pred", lambda a: a + 100),
            "s.vms: array 'slice_ignored_pred' names predictions that are not there",
            id="ignored-beyond",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_matched", lambda a: _set(a, 255)),
            "s.vms: array 'slice_matched' holds flags of thresholds that do not exist",
            id="flags-beyond-thresholds",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_counts", lambda a: _set(a, 200)),
            "s.vms: array 'slice_counts' does not fit the classes' counts",
            id="counts-beyond-class",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_counts", lambda a: a[:, :-1]),
            "s.vms: array 'slice_counts' has shape",
            id="counts-truncated",
        ),
        pytest.param(
            lambda raw: _with_array(raw, "slice_matched", lambda a: a.astype(np.float64)),
            "s.vms: array 'slice_matched' has dtype <f8",
            id="flags-as-floats",
        ),
        pytest.param(
            lambda raw: RawState(
                raw.header, {k: v for k, v in raw.arrays.items() if k != "slice_out"}
            ),
            "s.vms: corrupted (arrays",
            id="array-missing",
        ),
        pytest.param(
            lambda raw: _options(raw, [{"name": "size", "edges": [96, 32], "globs": []}]),
            "s.vms: corrupted header (options: slices[0].edges is [96, 32], not positive "
            "increasing numbers)",
            id="edges-decreasing",
        ),
        pytest.param(
            lambda raw: _options(raw, [{"name": "colour", "edges": [], "globs": []}]),
            "s.vms: corrupted header (options: slices[0].name is 'colour', not a slice)",
            id="unknown-slice",
        ),
        pytest.param(
            lambda raw: _options(raw, {"name": "size"}),
            "s.vms: corrupted header (options: slices is {'name': 'size'}, not a list)",
            id="slices-not-a-list",
        ),
        pytest.param(
            lambda raw: _options(raw, [{"name": "size", "edges": [32, 96], "globs": []}]),
            "s.vms: corrupted header (slice_values)",
            id="options-and-values-disagree",
        ),
    ],
)
def test_a_damaged_slice_state_is_one_state_error(change: Any, message: str) -> None:
    """Crafted or truncated slice arrays and fields: one StateError naming the file and
    what is wrong, never a traceback nor wrong numbers."""
    data = write_state(change(_sliced_state()), version=6)
    with pytest.raises(StateError) as caught:
        Evaluator.from_bytes(data, "s.vms")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_truncated_slice_state_is_refused() -> None:
    data = write_state(_sliced_state(), version=6)
    with pytest.raises(StateError, match=r"^s\.vms: truncated or corrupted"):
        Evaluator.from_bytes(data[:-40], "s.vms")


def _with_attributes(gt: AnnotationSet, seed: int) -> AnnotationSet:
    """The set with each object's truncated, occluded and pose drawn at random (some
    poses only in some images, some objects without one)."""
    rng = random.Random(seed)
    poses = (None, "Frontal", "Left", "Rear", "Unspecified")
    return replace(
        gt,
        annotations=tuple(
            replace(
                a,
                boxes=tuple(
                    replace(
                        b, truncated=rng.random() < 0.3, occluded=rng.random() < 0.4,
                        pose=rng.choice(poses[: 2 + i % 4]),
                    )
                    for b in a.boxes
                ),
            )
            for i, a in enumerate(gt.annotations)
        ),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "scores", "options"),
    [
        pytest.param("default", 1.0, {}, id="default"),
        pytest.param("coco", 1.0, {}, id="coco"),
        pytest.param("voc07", 1.0, {}, id="voc07"),
        pytest.param("coco", 0.5, {}, id="coco-a-shard-unscored"),
        pytest.param("default", 0.5, {}, id="default-a-shard-unscored"),
        pytest.param("default", 0.0, {}, id="default-unscored"),
        pytest.param(
            "default", 1.0, {"score_thresholds": ScoreThresholds.of(0.5, {})}, id="threshold"
        ),
        pytest.param("voc12", 1.0, {"fold_case": True}, id="fold-case"),
    ],
)
@pytest.mark.parametrize("seed", range(3))
def test_slices_of_any_partition_equal_one_run(
    seed: int, name: str, scores: float, options: dict[str, Any]
) -> None:
    """Random sets with attributes, split into 3 evaluators (images in a scored shard and
    images without any score in another among them), saved, read back and merged in
    another order: every slice value's numbers equal one run's, bit for bit."""
    gt, pred = random_dataset(seed, images=18)
    gt = _with_attributes(gt, seed)
    if scores < 1.0:
        # Shard 3's images (every third key) without any score: that shard reads its
        # predictions both ways; with no score at all, every shard does.
        bare = without_scores(pred, share=1.0, seed=seed).annotations
        third = {a.key for a in gt.annotations[2::3]}
        pred = replace(
            pred,
            annotations=tuple(
                b if scores == 0.0 or a.key in third else a
                for a, b in zip(pred.annotations, bare, strict=True)
            ),
        )
    specs = parse_slices(["size", "pose", "truncated", "occluded", "img00*", "img01[0-4]"])
    gt_columns, pred_columns = columns_from_annotations(gt), columns_from_annotations(pred)
    conv = protocol(name)
    kept_records: list[MatchRecords] = []
    single = evaluate_columns(
        gt_columns, pred_columns, conv, keep_matches=False, kept=kept_records.append,
        slices=specs, **options,
    )  # fmt: skip
    expected = slice_evaluation(single, kept_records[0], specs)
    shards = []
    for k in (1, 2, 3):
        evaluator = Evaluator(conv, slices=specs, **options)
        evaluator.add_columns(gt_columns, pred_columns, shard=(k, 3))
        shards.append(Evaluator.from_bytes(evaluator.to_bytes()))
    merged = shards[2]
    merged.merge(shards[0])
    merged.merge(shards[1])
    result = merged.result()
    assert result.summary == single.summary
    assert slice_evaluation(result, merged.records(), specs) == expected


@pytest.mark.parametrize(
    ("slices", "message"),
    [
        pytest.param("size", "slices: expected a sequence of slices", id="one-text"),
        pytest.param([3], "slices: expected a sequence of slices", id="not-a-slice"),
        pytest.param(["size", "16,32"], "slices: slice '16,32': the size slice is given twice",
                     id="twice"),
        pytest.param(["32,16"], "slices: slice '32,16': size edges must be", id="edges"),
    ],
)  # fmt: skip
def test_an_evaluator_refuses_what_is_no_slice(slices: Any, message: str) -> None:
    with pytest.raises(RequestError, match=f"^{re.escape(message)}"):
        Evaluator(slices=slices)


def test_an_evaluator_takes_slices_as_text() -> None:
    assert Evaluator(slices=["size", "night_*"]).slices == parse_slices(["size", "night_*"])


def test_a_pose_written_none_is_the_value_of_objects_without_one(tmp_path: Path) -> None:
    """An object whose <pose> reads "(none)" and one without <pose> are one value
    "(none)", in one run and in merged shards alike (never two values of one name)."""
    for side in ("gt", "pred"):
        (tmp_path / side).mkdir()
    for key, pose in (("a", "<pose>(none)</pose>"), ("b", "")):
        box = "<bndbox><xmin>0</xmin><ymin>0</ymin><xmax>10</xmax><ymax>10</ymax></bndbox>"
        (tmp_path / "gt" / f"{key}.xml").write_text(
            f"<annotation><object><name>car</name>{pose}{box}</object></annotation>"
        )
        (tmp_path / "pred" / f"{key}.xml").write_text(
            f"<annotation><object><name>car</name><score>0.9</score>{box}</object></annotation>"
        )
    request = EvalRequest(gt=tmp_path / "gt", pred=tmp_path / "pred", slices=["pose"])
    (pose,) = evaluate(request).evidence.slices
    assert [(v.value, v.gt, v.tp) for v in pose.values] == [("(none)", 2, 2)]
    paths = []
    for k in (1, 2):
        paths.append(tmp_path / f"{k}.vms")
        shard_state(request, shard=(k, 2)).evaluator.save(paths[-1])
    assert read_states(paths).report().evidence.slices == (pose,)


def test_a_pattern_named_like_the_rest_merges_as_one_run(tmp_path: Path) -> None:
    """A file pattern written "(other)" is a value beside the rest's "(other)": merged
    shards take each by its place, as one run reports them."""
    args = ("--slice", "night_01", "--slice", "(other)", "--format", "json")
    states = save_shards(tmp_path, *args[:4])
    merged = run_cli("merge", states[1], states[2], states[0], "--format", "json")
    single = run_cli("eval", str(SLICES / "gt"), str(SLICES / "pred"), *args)
    assert single[0] == 0 and single[1].count('"value": "(other)"') == 2
    assert merged == single

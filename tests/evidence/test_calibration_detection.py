"""OCE and D-ECE: equal to uq-detr's ``oce()`` and netcal's ``ECE(detection=True)`` on the
bundled fixtures and on random sets, and the same after shards are saved and merged."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES, run_cli
from vocmatch.core.protocol import protocol
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evidence.calibration import Calibration, calibration
from vocmatch.readers.scan import ColumnSet, read_columns

#: (ground truth, predictions) of the fixtures the oracles are run on.
SETS = {
    "demo": ("demo/gt", "demo/pred"),
    "diff-a": ("diff/gt", "diff/pred_a"),
    "regression-a": ("regression/gt", "regression/pred_a"),
    "regression-noise": ("regression/gt", "regression/pred_b_noise"),
}


def _calibrated(
    gt_dir: str, pred_dir: str, bins: int = 10, protocol_name: str = "default"
) -> Calibration:
    import vocmatch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = vocmatch.evaluate(
            FIXTURES / gt_dir, FIXTURES / pred_dir, calibration_bins=bins, protocol=protocol_name
        )
    found = report.evidence.calibration
    assert found is not None
    return found


def _uq_detr_inputs(
    gt: ColumnSet, pred: ColumnSet, names: list[str], only: str | None = None, shift: float = 0.0
) -> tuple[list[Any], list[Any]]:
    """uq-detr's detections and ground truths of each image (objects that count, of class
    ``only`` when given; scored predictions), classes numbered by name; ``x2, y2`` moved by
    ``shift`` (1 gives the VOC devkit's pixel-inclusive IoU with uq-detr's arithmetic)."""
    from uq_detr import Detections, GroundTruth

    moved = np.array([0.0, 0.0, shift, shift])

    index = {name: k for k, name in enumerate(names)}
    dets, gts = [], []
    for i, key in enumerate(gt.keys):
        g = np.flatnonzero((gt.image == i) & ~gt.difficult)
        g_label = np.array([index[gt.label_names[k]] for k in gt.labels[g]], dtype=np.int64)
        if only is not None:
            g, g_label = g[g_label == index[only]], g_label[g_label == index[only]]
        gts.append(GroundTruth(boxes=gt.boxes[g].reshape(-1, 4) + moved, labels=g_label))
        j = pred.keys.index(key) if key in pred.keys else -1
        p = np.flatnonzero((pred.image == j) & np.isfinite(pred.scores))
        p_label = np.array([index[pred.label_names[k]] for k in pred.labels[p]], dtype=np.int64)
        dets.append(
            Detections(
                boxes=pred.boxes[p].reshape(-1, 4) + moved, scores=pred.scores[p], labels=p_label
            )
        )
    return dets, gts


def _uq_detr_oce(
    gt: ColumnSet, pred: ColumnSet, names: list[str], only: str | None, shift: float = 0.0
) -> float:
    from uq_detr.metrics import oce

    dets, gts = _uq_detr_inputs(gt, pred, names, only, shift)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its note that scores are one per prediction
        return float(oce(dets, gts).score)


@pytest.mark.parametrize("protocol_name", ["default", "voc07"])
@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in SETS])
def test_oce_equals_uq_detr_on_fixtures(name: str, protocol_name: str) -> None:
    """Each class's OCE and the overall one are uq-detr's ``oce()`` with its defaults, fed
    the objects that count and the scored predictions of each image (under ``voc07``, the
    boxes given uq-detr one pixel wider and taller: the devkit's IoU)."""
    pytest.importorskip("uq_detr", reason="uq-detr (the test extra) is not installed")
    gt_dir, pred_dir = SETS[name]
    found = _calibrated(gt_dir, pred_dir, protocol_name=protocol_name)
    shift = 1.0 if protocol(protocol_name).pixel_inclusive else 0.0
    gt, pred = read_columns(FIXTURES / gt_dir), read_columns(FIXTURES / pred_dir)
    names = [c.name for c in found.classes]
    assert found.detection
    expected = _uq_detr_oce(gt, pred, names, None, shift)
    assert found.overall.oce == pytest.approx(expected, rel=1e-12)
    for entry in found.classes:
        if entry.objects:
            expected = _uq_detr_oce(gt, pred, names, entry.name, shift)
            assert entry.oce == pytest.approx(expected, rel=1e-12), entry.name
        else:
            assert entry.oce is None


_box = st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(1, 8), st.integers(1, 8))


@st.composite
def _images(
    draw: st.DrawFn,
) -> list[tuple[list[Any], list[int], list[Any], list[float], list[int]]]:
    images = []
    for _ in range(draw(st.integers(1, 4))):
        gt = draw(st.lists(st.tuples(_box, st.integers(0, 2)), max_size=4))
        pred = draw(
            st.lists(
                st.tuples(_box, st.integers(0, 2), st.sampled_from([0.05, 0.3, 0.5, 0.7, 0.95])),
                max_size=6,
            )
        )
        images.append(
            (
                [[x, y, x + w, y + h] for (x, y, w, h), _ in gt], [k for _, k in gt],
                [[x, y, x + w, y + h] for (x, y, w, h), _, _ in pred],
                [s for _, _, s in pred], [k for _, k, _ in pred],
            )
        )  # fmt: skip
    return images


@settings(max_examples=80, deadline=None)
@given(images=_images())
def test_oce_equals_uq_detr_on_random_sets(
    images: list[tuple[list[Any], list[int], list[Any], list[float], list[int]]],
) -> None:
    """Random small boxes on a grid (IoU ties at 0.5 and 0.75, boxes of other classes over
    an object, majority votes of two classes, misses): OCE is uq-detr's, per class and
    overall."""
    pytest.importorskip("uq_detr", reason="uq-detr (the test extra) is not installed")
    from uq_detr import Detections, GroundTruth
    from uq_detr.metrics import oce

    evaluator = Evaluator("coco", calibration=True)
    names = ["a", "b", "c"]
    for i, (gb, gl, pb, ps, pl) in enumerate(images):
        evaluator.add(
            f"img{i}", np.array(gb, dtype=float).reshape(-1, 4), [names[k] for k in gl],
            np.array(pb, dtype=float).reshape(-1, 4), ps, [names[k] for k in pl],
        )  # fmt: skip
    found = calibration(evaluator.records(), evaluator.conventions, 10)
    assert found is not None or not any(ps for _, _, _, ps, _ in images)
    if found is None:
        return
    used = [c.name for c in found.classes]

    def expected(only: int | None) -> float:
        dets, gts = [], []
        for gb, gl, pb, ps, pl in images:
            labels = np.array(gl, dtype=np.int64)
            boxes = np.array(gb, dtype=float).reshape(-1, 4)
            keep = labels == only if only is not None else np.ones(labels.size, dtype=bool)
            gts.append(GroundTruth(boxes=boxes[keep], labels=labels[keep]))
            dets.append(
                Detections(
                    boxes=np.array(pb, dtype=float).reshape(-1, 4), scores=np.array(ps),
                    labels=np.array(pl, dtype=np.int64),
                )
            )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(oce(dets, gts).score)

    n_objects = sum(len(gl) for _, gl, _, _, _ in images)
    if n_objects:
        assert found.overall.oce == pytest.approx(expected(None), rel=1e-12, abs=1e-15)
    else:
        assert found.overall.oce is None
    for entry in found.classes:
        k = names.index(entry.name)
        if entry.objects:
            assert entry.oce == pytest.approx(expected(k), rel=1e-12, abs=1e-15), entry.name
        else:
            assert entry.oce is None
    assert used == sorted(used)


def _netcal_inputs(gt_dir: str, pred_dir: str) -> list[tuple[str, tuple[float, ...], bool]]:
    """What netcal's D-ECE is fed, built apart from the calibration inputs: each prediction
    ECE counts (per-box records: a TP or FP with a score) of an image with a ``<size>``, as
    its class, ``(score, cx, cy, w, h)`` relative to the ground truth's size, and TP."""
    from vocmatch.evaluation.engine import evaluate_columns

    gt, pred = read_columns(FIXTURES / gt_dir), read_columns(FIXTURES / pred_dir)
    evaluation = evaluate_columns(gt, pred, protocol("default"), True)
    rows = []
    for image in evaluation.images:
        size = gt.sizes[gt.keys.index(image.key)]
        if image.key not in pred.keys or size is None:
            continue
        own = np.flatnonzero(pred.image == pred.keys.index(image.key))
        for m in image.matches:
            if m.pred_index is None or m.outcome == "ignored" or m.score is None:
                continue
            x1, y1, x2, y2 = pred.boxes[own[m.pred_index]].tolist()
            features = (
                m.score, (x1 + x2) / 2 / size.width, (y1 + y2) / 2 / size.height,
                (x2 - x1) / size.width, (y2 - y1) / size.height,
            )  # fmt: skip
            rows.append((m.name, features, m.outcome == "tp"))
    return rows


def _netcal_d_ece(rows: list[tuple[str, tuple[float, ...], bool]], bins: int) -> dict[str, float]:
    from netcal.metrics import ECE

    found = {}
    for name in ["all", *sorted({r[0] for r in rows})]:
        chosen = [r for r in rows if name in ("all", r[0])]
        features = np.array([r[1] for r in chosen], dtype=np.float64)
        hits = np.array([r[2] for r in chosen], dtype=np.int64)
        found[name] = float(ECE(bins, detection=True).measure(features, hits))
    return found


#: netcal's D-ECE of each fixture at 10 and 4 bins, per class and overall: recorded with
#: netcal 1.4.0 (torch 2.13.0+cpu, numpy 2.4.6, scipy 1.17.1) by
#: ``_netcal_d_ece(_netcal_inputs(gt, pred), bins)``; netcal pulls torch, so it is not a
#: test dependency and these numbers stand for it.
NETCAL_D_ECE: dict[str, dict[str, float]] = {
    "demo/10": {
        "all": 0.252, "bicycle": 0.495, "bus": 0.010000000000000009,
        "car": 0.15499999999999997, "dog": 0.23, "person": 0.198, "truck": 0.71,
    },
    "demo/4": {
        "all": 0.20533333333333337, "bicycle": 0.30500000000000005,
        "bus": 0.010000000000000009, "car": 0.15499999999999997, "dog": 0.23,
        "person": 0.198, "truck": 0.71,
    },
    "diff-a/10": {
        "all": 0.22857142857142856, "bowl": 0.19999999999999996, "car": 0.15000000000000002,
        "chair": 0.6, "cup": 0.09999999999999998, "laptop": 0.050000000000000044,
        "person": 0.25,
    },
    "diff-a/4": {
        "all": 0.22857142857142856, "bowl": 0.19999999999999996, "car": 0.15000000000000002,
        "chair": 0.6, "cup": 0.09999999999999998, "laptop": 0.050000000000000044,
        "person": 0.25,
    },
    "regression-a/10": {
        "all": 0.1499999999999999, "car": 0.09999999999999976, "person": 0.20000000000000007,
    },
    "regression-a/4": {
        "all": 0.1499999999999999, "car": 0.09999999999999976, "person": 0.20000000000000007,
    },
    "regression-noise/10": {
        "all": 0.14782608695652164, "car": 0.09999999999999976,
        "person": 0.20000000000000007,
    },
    "regression-noise/4": {
        "all": 0.14782608695652164, "car": 0.09999999999999976,
        "person": 0.20000000000000007,
    },
}  # fmt: skip


def _d_ece_by_name(found: Calibration) -> dict[str, float]:
    entries = [found.overall, *found.classes]
    return {e.name: e.d_ece for e in entries if e.d_ece is not None}


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.replace("/", "-bins-")) for case in NETCAL_D_ECE]
)
def test_d_ece_equals_recorded_netcal(case: str) -> None:
    """Each class's D-ECE and the overall one are the numbers netcal's
    ``ECE(bins, detection=True)`` gave on the fixture."""
    name, bins = case.split("/")
    found = _calibrated(*SETS[name], bins=int(bins))
    assert _d_ece_by_name(found) == pytest.approx(NETCAL_D_ECE[case], rel=1e-12)


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in SETS])
def test_d_ece_equals_netcal_on_fixtures(name: str) -> None:
    """With netcal installed: its D-ECE of the fixtures, at 10 and 4 bins, is vocmatch's."""
    pytest.importorskip("netcal", reason="netcal pulls torch: it is not a test dependency")
    rows = _netcal_inputs(*SETS[name])
    for bins in (10, 4):
        found = _calibrated(*SETS[name], bins=bins)
        assert _d_ece_by_name(found) == pytest.approx(_netcal_d_ece(rows, bins), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.lists(
                st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.3, 0.75, 0.99, 1.0]), min_size=5, max_size=5
            ),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    ),
    bins=st.integers(1, 6),
)
def test_d_ece_equals_netcal_on_random_features(
    rows: list[tuple[list[float], bool]], bins: int
) -> None:
    """With netcal installed: values on bin edges and at 0 and 1 land in netcal's bins."""
    pytest.importorskip("netcal", reason="netcal pulls torch: it is not a test dependency")
    from netcal.metrics import ECE

    from vocmatch.evidence.calibration import detection_calibration_error

    features = np.array([r[0] for r in rows], dtype=np.float64)
    hits = np.array([r[1] for r in rows])
    eps = float(np.finfo(np.float64).eps)
    ours = detection_calibration_error(np.clip(features, eps, 1 - eps), hits, bins)
    theirs = float(ECE(bins, detection=True).measure(features, hits.astype(np.int64)))
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def test_html_reliability_plots_show_oce_and_d_ece(demo: tuple[Path, Path], tmp_path: Path) -> None:
    """With --calibration-bins, each reliability plot of the HTML report names its OCE and
    D-ECE beside ECE and MCE; without, the plots name ECE and MCE only."""
    page = tmp_path / "report.html"
    code, _, _ = run_cli("eval", *map(str, demo), "--calibration-bins", "10", "--html", str(page))
    assert code == 0
    text = page.read_text(encoding="utf-8")
    assert "ECE 0.1587 · MCE 0.4500 · 15 predictions · OCE 0.3987 · D-ECE 0.2520" in text
    assert "OCE 1.0000 · D-ECE —" in text  # cat: one object missed, no prediction
    code, _, _ = run_cli("eval", *map(str, demo), "--html", str(page))
    assert code == 0 and "OCE" not in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param([], "0.3987", id="every-prediction"),
        # A threshold drops doubtful predictions: ECE may gain, OCE sees the objects missed.
        pytest.param(["--score-threshold", "0.9"], "0.6451", id="score-threshold"),
    ],
)
def test_oce_reads_the_predictions_at_the_score_thresholds(
    demo: tuple[Path, Path], args: list[str], expected: str
) -> None:
    """OCE aggregates the predictions a detector would output: those at or above the score
    thresholds applied."""
    code, out, _ = run_cli(
        "eval", *map(str, demo), "--calibration-bins", "10", "--format", "json", *args
    )
    assert code == 0
    assert f"{json.loads(out)['calibration']['all']['oce']:.4f}" == expected


def _calibrated_state() -> bytes:
    evaluator = Evaluator("coco", calibration=True)
    box = np.array([[0.0, 0, 10, 10], [20, 20, 30, 30]])
    evaluator.add("a", box, ["cat", "dog"], box + 1, [0.8, 0.4], ["cat", "cat"])
    evaluator.add("b", box[:1], ["dog"], box[:1], [0.9], ["dog"])
    return evaluator.to_bytes()


def _broken(name: str, value: Any) -> bytes:
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    raw = read_state(_calibrated_state())
    if name == "header":
        return write_state(RawState({**raw.header, "calibration": value}, raw.arrays))
    return write_state(RawState(raw.header, {**raw.arrays, name: value}))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        pytest.param(
            "calibration_label", np.array([0, 0, 1], dtype=np.uint8),
            "array 'calibration_label' does not hold each class's ground truth that counts",
            id="label-counts",
        ),
        pytest.param(
            "calibration_label", np.array([0, 5, 1], dtype=np.uint8),
            "array 'calibration_label' names a class that is not there", id="label-beyond",
        ),
        pytest.param(
            "calibration_brier", np.full((3, 2), 2.5),
            "array 'calibration_brier' holds values outside [0, 2]", id="brier-range",
        ),
        pytest.param(
            "calibration_brier", np.full((3, 2), np.nan),
            "array 'calibration_brier' holds values outside [0, 2]", id="brier-nan",
        ),
        pytest.param(
            "calibration_brier", np.ones((3, 3)),
            "array 'calibration_brier' has shape (3, 3), the counts say (3, 2)", id="brier-shape",
        ),
        pytest.param(
            "calibration_box", np.array([[0.1, 0.1, np.nan, 0.1]] * 3),
            "array 'calibration_box' holds a box neither finite nor all NaN", id="box-half-nan",
        ),
        pytest.param(
            "calibration_box", np.ones((2, 4)),
            "array 'calibration_box' has shape (2, 4), the counts say (3, 4)", id="box-shape",
        ),
        pytest.param(
            "header", {"oce_iou_thresholds": [0.5]},
            "holds OCE terms at IoU thresholds [0.5]; this vocmatch reads them at [0.5, 0.75]",
            id="other-thresholds",
        ),
        pytest.param("header", [0.5, 0.75], "corrupted header (calibration)", id="header-type"),
    ],
)  # fmt: skip
def test_a_state_with_bad_calibration_inputs_is_refused_in_one_line(
    name: str, value: Any, message: str
) -> None:
    """Calibration inputs that do not fit the records (a count, a class, a range, a shape,
    other IoU thresholds) are refused naming the state and the array."""
    from vocmatch.errors import StateError

    with pytest.raises(StateError) as caught:
        Evaluator.from_bytes(_broken(name, value), "s.vms")
    assert str(caught.value) == f"s.vms: {message}"


def test_calibration_inputs_survive_a_state_and_a_merge() -> None:
    """A state keeps the inputs (format version 6) and reads back to the same calibration;
    an evaluator read from it goes on keeping them, and a merge with a state without them
    keeps none."""
    state = _calibrated_state()
    assert int.from_bytes(state[8:12], "little") == 6
    read = Evaluator.from_bytes(state)
    assert read.calibration
    first = calibration(read.records(), read.conventions, 10)
    assert first is not None and first.detection and first.overall.objects == 3
    plain = Evaluator("coco")
    plain.add("c", np.array([[0.0, 0, 5, 5]]), ["cat"], np.zeros((0, 4)), [], [])
    read.merge(Evaluator.from_bytes(plain.to_bytes()))
    merged = calibration(read.records(), read.conventions, 10)
    assert merged is not None and not merged.detection and merged.overall.oce is None
    assert not read.calibration


@pytest.mark.parametrize(
    "size",
    [
        pytest.param([640.0, "x", None], id="not-a-number"),
        pytest.param([640.0, float("inf"), None], id="infinite"),
        pytest.param([640.0], id="shape"),
    ],
)
def test_kept_boxes_carry_image_sizes_checked(demo: tuple[Path, Path], size: Any) -> None:
    """The boxes a state keeps carry each image's <size> (D-ECE's features are made from
    it in the shard; the report draws with it), read back as saved; a size that is not one
    is refused in one line."""
    from vocmatch.errors import StateError
    from vocmatch.evaluation.shards.incremental import Evaluator
    from vocmatch.evaluation.shards.state import RawState, read_state, write_state

    gt, pred = read_columns(demo[0]), read_columns(demo[1])
    evaluator = Evaluator(keep_boxes=True)
    evaluator.add_columns(gt, pred)
    data = evaluator.to_bytes()
    kept = Evaluator.from_bytes(data).boxes()
    assert kept is not None
    assert [(s.width, s.height) if s else None for s in kept[0].sizes] == [
        (s.width, s.height) if s else None for s in gt.sizes
    ]
    raw = read_state(data)
    header = json.loads(json.dumps(raw.header))
    header["boxes"]["gt"]["sizes"][0] = size
    broken = write_state(RawState(header, raw.arrays), version=6)
    with pytest.raises(StateError) as caught:
        Evaluator.from_bytes(broken, "s.vms")
    assert str(caught.value) == "s.vms: corrupted header (boxes_gt: an image size)"


@pytest.mark.parametrize("pairs", [pytest.param(1, id="one-pair"), pytest.param(7, id="seven")])
def test_oce_terms_do_not_depend_on_the_pair_batches(
    monkeypatch: pytest.MonkeyPatch, pairs: int
) -> None:
    """Objects are scored in batches of pairs (memory stays bounded on dense images): any
    batch size gives the same terms, bit for bit."""
    import vocmatch.evaluation.calibration_inputs as module
    from vocmatch.evaluation.matched import evaluate_matched

    gt, pred = read_columns(FIXTURES / "demo/gt"), read_columns(FIXTURES / "demo/pred")

    def terms() -> Any:
        found = evaluate_matched(gt, pred, calibration=True).records.calibration
        assert found is not None
        return found.object_brier

    whole = terms()
    monkeypatch.setattr(module, "_PAIRS", pairs)
    assert np.array_equal(terms(), whole)


def test_evaluator_fed_arrays_with_image_sizes_calibrates_as_eval(demo: tuple[Path, Path]) -> None:
    """The demo added image by image with each image's size gives eval's calibration, OCE
    and D-ECE included; without sizes D-ECE leaves every prediction out and says so."""
    gt, pred = read_columns(demo[0]), read_columns(demo[1])
    with_size, without = (Evaluator("default", calibration=True) for _ in range(2))
    for i, key in enumerate(gt.keys):
        g = np.flatnonzero(gt.image == i)
        j = pred.keys.index(key) if key in pred.keys else -1
        p = np.flatnonzero(pred.image == j)
        arrays = (
            gt.boxes[g], [gt.label_names[k] for k in gt.labels[g]], pred.boxes[p],
            pred.scores[p], [pred.label_names[k] for k in pred.labels[p]],
        )  # fmt: skip
        size = gt.sizes[i]
        assert size is not None
        with_size.add(key, *arrays, difficult=gt.difficult[g], image_size=(size.width, size.height))
        without.add(key, *arrays, difficult=gt.difficult[g])
    expected = _calibrated("demo/gt", "demo/pred")
    found = calibration(with_size.records(), with_size.conventions, 10)
    assert found == expected
    unsized = calibration(without.records(), without.conventions, 10)
    assert unsized is not None and unsized.overall.oce == expected.overall.oce
    assert (unsized.overall.d_ece, unsized.unsized) == (None, expected.overall.predictions)


@pytest.mark.parametrize(
    "size",
    [
        pytest.param((0, 480), id="zero"),
        pytest.param((640, float("nan")), id="nan"),
        pytest.param((640,), id="one-number"),
        pytest.param("640x480", id="text"),
        pytest.param((640, 480, 3), id="three-numbers"),
    ],
)
def test_an_image_size_that_is_no_size_is_refused(size: Any) -> None:
    """A size that is not two positive finite numbers is refused naming the argument, and
    the image is not added."""
    from vocmatch.errors import InputError

    evaluator = Evaluator(calibration=True)
    box = np.array([[0.0, 0, 10, 10]])
    with pytest.raises(InputError, match=r"^Expected `image_size` to be \(width, height\), two"):
        evaluator.add("a", box, ["cat"], box, [0.5], ["cat"], image_size=size)
    assert len(evaluator) == 0


def test_oce_scores_rotated_boxes_and_polygons_by_their_regions() -> None:
    """fixtures/shapes: the diamond car (gt 3) meets its prediction at IoU 1/3 by region (0.5
    by the bounding box it also carries), so it is missed at 0.5 and 0.75 and scores 1; the
    other car, found at IoU 1 with score 0.9, scores 2 * 0.1^2."""
    found = _calibrated("shapes/gt", "shapes/pred")
    car = next(c for c in found.classes if c.name == "car")
    assert (car.objects, car.oce) == (2, pytest.approx((2 * 0.1**2 + 1.0) / 2))

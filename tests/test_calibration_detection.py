"""OCE and D-ECE: equal to uq-detr's ``oce()`` and netcal's ``ECE(detection=True)`` on the
bundled fixtures and on random sets, and the same after shards are saved and merged."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vocmatch.core.protocol import protocol
from vocmatch.evaluation.shards.incremental import Evaluator
from vocmatch.evidence.calibration import Calibration, calibration
from vocmatch.readers.scan import ColumnSet, read_columns

FIXTURES = Path(__file__).parent.parent / "fixtures"
#: (ground truth, predictions) of the fixtures the oracles are run on.
SETS = {
    "demo": ("demo/gt", "demo/pred"),
    "diff-a": ("diff/gt", "diff/pred_a"),
    "regression-a": ("regression/gt", "regression/pred_a"),
    "regression-noise": ("regression/gt", "regression/pred_b_noise"),
}


def _calibrated(gt_dir: str, pred_dir: str, bins: int = 10) -> Calibration:
    import vocmatch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = vocmatch.evaluate(FIXTURES / gt_dir, FIXTURES / pred_dir, calibration_bins=bins)
    found = report.evidence.calibration
    assert found is not None
    return found


def _uq_detr_inputs(
    gt: ColumnSet, pred: ColumnSet, names: list[str], only: str | None = None
) -> tuple[list[Any], list[Any]]:
    """uq-detr's detections and ground truths of each image (objects that count, of class
    ``only`` when given; scored predictions), classes numbered by name."""
    from uq_detr import Detections, GroundTruth

    index = {name: k for k, name in enumerate(names)}
    dets, gts = [], []
    for i, key in enumerate(gt.keys):
        g = np.flatnonzero((gt.image == i) & ~gt.difficult)
        g_label = np.array([index[gt.label_names[k]] for k in gt.labels[g]], dtype=np.int64)
        if only is not None:
            g, g_label = g[g_label == index[only]], g_label[g_label == index[only]]
        gts.append(GroundTruth(boxes=gt.boxes[g].reshape(-1, 4), labels=g_label))
        j = pred.keys.index(key) if key in pred.keys else -1
        p = np.flatnonzero((pred.image == j) & np.isfinite(pred.scores))
        p_label = np.array([index[pred.label_names[k]] for k in pred.labels[p]], dtype=np.int64)
        dets.append(
            Detections(boxes=pred.boxes[p].reshape(-1, 4), scores=pred.scores[p], labels=p_label)
        )
    return dets, gts


def _uq_detr_oce(gt: ColumnSet, pred: ColumnSet, names: list[str], only: str | None) -> float:
    from uq_detr.metrics import oce

    dets, gts = _uq_detr_inputs(gt, pred, names, only)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its note that scores are one per prediction
        return float(oce(dets, gts).score)


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in SETS])
def test_oce_equals_uq_detr_on_fixtures(name: str) -> None:
    """Each class's OCE and the overall one are uq-detr's ``oce()`` with its defaults, fed
    the objects that count and the scored predictions of each image."""
    pytest.importorskip("uq_detr")
    gt_dir, pred_dir = SETS[name]
    found = _calibrated(gt_dir, pred_dir)
    gt, pred = read_columns(FIXTURES / gt_dir), read_columns(FIXTURES / pred_dir)
    names = [c.name for c in found.classes]
    assert found.detection
    assert found.overall.oce == pytest.approx(_uq_detr_oce(gt, pred, names, None), rel=1e-12)
    for entry in found.classes:
        if entry.objects:
            expected = _uq_detr_oce(gt, pred, names, entry.name)
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
    pytest.importorskip("uq_detr")
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
    pytest.importorskip("netcal")
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
    pytest.importorskip("netcal")
    from netcal.metrics import ECE

    from vocmatch.evidence.calibration import detection_calibration_error

    features = np.array([r[0] for r in rows], dtype=np.float64)
    hits = np.array([r[1] for r in rows])
    eps = float(np.finfo(np.float64).eps)
    ours = detection_calibration_error(np.clip(features, eps, 1 - eps), hits, bins)
    theirs = float(ECE(bins, detection=True).measure(features, hits.astype(np.int64)))
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)

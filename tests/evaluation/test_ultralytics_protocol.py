"""``protocol="ultralytics"`` against the ``ultralytics`` package's own numbers: recorded on
the reference sets (fixtures/reference/ultralytics, written by bench/ultralytics_oracle.py),
and, where the package is installed, computed live on generated sets."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vocmatch
from vocmatch.core.protocol import ULTRALYTICS_IOU_THRESHOLDS, protocol
from vocmatch.evaluation.result import Evaluation

REFERENCE = Path(__file__).resolve().parents[2] / "fixtures" / "reference" / "ultralytics"
EXPECTED: dict[str, Any] = json.loads(
    (REFERENCE / "numbers-8.4.190.json").read_text(encoding="utf-8")
)
#: Each set the package's numbers were recorded on (bench/ultralytics_oracle.py).
SETS = {
    **{name: REFERENCE / name for name in ("bccd", "cards", "dense", "crowded")},
    "demo": REFERENCE.parents[1] / "demo",
    **{
        name: REFERENCE.parent / name
        for name in ("object-detection-metrics", "tensorflow-object-detection", "chainercv")
    },
}


def _evaluation(gt: Path, pred: Path, conventions: object = "ultralytics") -> Evaluation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return vocmatch.evaluate(str(gt), str(pred), protocol=conventions).evaluation


#: Each preset and the file of the numbers its releases give (the release named in it).
RELEASES = {
    "ultralytics": "numbers-8.4.190.json",
    "ultralytics-8.4.175": "numbers-8.4.175.json",
    "ultralytics-8.4.36": "numbers-8.4.36.json",
}


def _expected(preset: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((REFERENCE / RELEASES[preset]).read_text(encoding="utf-8"))
    return found


@pytest.mark.parametrize(
    ("preset", "name"),
    [pytest.param(preset, name, id=f"{preset}-{name}") for preset in RELEASES for name in SETS],
)
def test_recorded_numbers(preset: str, name: str) -> None:
    """P, R, mAP50, mAP50-95 and each class's AP as the package's release computed them."""
    expected = _expected(preset)[name]
    evaluation = _evaluation(SETS[name] / "gt", SETS[name] / "pred", preset)
    assert evaluation.ultralytics is not None
    got = evaluation.ultralytics.as_dict()
    for key in ("P", "R", "mAP50", "mAP50-95"):
        assert got[key] == pytest.approx(expected[key], abs=1e-9), key
    assert evaluation.summary.map == got["mAP50-95"]
    averaged = {c.name: c for c in evaluation.classes if c.in_map}
    assert set(averaged) == set(expected["classes"])
    for name_, values in expected["classes"].items():
        assert averaged[name_].ap == pytest.approx(float(np.mean(values)), abs=1e-9)
        assert averaged[name_].ap50 == pytest.approx(values[0], abs=1e-9)


def test_the_releases_give_other_numbers() -> None:
    """The three presets are three sets of numbers on the crowded set: each release's rule
    changes them."""
    maps = {preset: _expected(preset)["crowded"]["mAP50-95"] for preset in RELEASES}
    assert len(set(maps.values())) == 3


@pytest.mark.parametrize(
    ("difficult", "gt_count"),
    [
        pytest.param("drop", 0, id="drop-leaves-it-out"),
        pytest.param("ignore", 0, id="ignore"),
        pytest.param("count", 1, id="count"),
    ],
)
def test_difficult_rules(tmp_path: Path, difficult: str, gt_count: int) -> None:
    """A prediction on a difficult object: a false positive when dropped, neither TP nor FP
    when ignored, a TP when counted."""
    obj = (
        "<object><name>cat</name><difficult>{d}</difficult>{s}<bndbox><xmin>0</xmin>"
        "<ymin>0</ymin><xmax>10</xmax><ymax>10</ymax></bndbox></object>"
    )
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    (tmp_path / "gt" / "a.xml").write_text(f"<annotation>{obj.format(d=1, s='')}</annotation>")
    (tmp_path / "pred" / "a.xml").write_text(
        f"<annotation>{obj.format(d=0, s='<score>0.9</score>')}</annotation>"
    )
    conventions = vocmatch.Conventions("mine", difficult=difficult)  # type: ignore[arg-type]
    evaluation = _evaluation(tmp_path / "gt", tmp_path / "pred", conventions)
    fp = {"drop": 1, "ignore": 0, "count": 0}[difficult]
    assert (evaluation.summary.gt, evaluation.summary.fp) == (gt_count, fp)


def test_thresholds_are_float32() -> None:
    assert ULTRALYTICS_IOU_THRESHOLDS[1] == float(np.float32(0.55))
    assert (
        tuple(float(v) for v in np.linspace(0.5, 0.95, 10).astype(np.float32))
        == ULTRALYTICS_IOU_THRESHOLDS
    )
    assert protocol("ultralytics").ap_thresholds == ULTRALYTICS_IOU_THRESHOLDS


def _write_set(root: Path, images: list[tuple[list[Any], list[Any]]]) -> None:
    (root / "gt").mkdir()
    (root / "pred").mkdir()

    def objects(entries: list[Any], scored: bool) -> str:
        out = []
        for label, (x, y, w, h), score in entries:
            extra = f"<score>{score}</score>" if scored else ""
            out.append(
                f"<object><name>{label}</name><difficult>0</difficult>{extra}<bndbox>"
                f"<xmin>{x}</xmin><ymin>{y}</ymin><xmax>{x + w}</xmax><ymax>{y + h}</ymax>"
                "</bndbox></object>"
            )
        return "".join(out)

    for i, (gt, pred) in enumerate(images):
        (root / "gt" / f"i{i:02d}.xml").write_text(f"<annotation>{objects(gt, False)}</annotation>")
        (root / "pred" / f"i{i:02d}.xml").write_text(
            f"<annotation>{objects(pred, True)}</annotation>"
        )


_box = st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 30), st.integers(1, 30))
_entry = st.tuples(st.sampled_from(["a", "b", "c"]), _box, st.sampled_from([0.1, 0.5, 0.55, 0.9]))
_image = st.tuples(st.lists(_entry, max_size=6), st.lists(_entry, max_size=8))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(images=st.lists(_image, min_size=1, max_size=5))
def test_live_against_the_package(tmp_path_factory: pytest.TempPathFactory, images: Any) -> None:
    """Where ``ultralytics`` (and torch) are installed: the package's own functions on
    generated sets (tied scores, overlapping boxes, classes only predicted)."""
    pytest.importorskip("ultralytics")
    import sys

    sys.path.insert(0, str(REFERENCE.parents[2] / "bench"))
    import ultralytics_oracle

    root = tmp_path_factory.mktemp("set")
    _write_set(root, images)
    expected = ultralytics_oracle.oracle_numbers(root)
    got_eval = _evaluation(root / "gt", root / "pred")
    assert got_eval.ultralytics is not None
    got = got_eval.ultralytics.as_dict()
    for key in ("P", "R", "mAP50", "mAP50-95"):
        assert got[key] == pytest.approx(expected[key], abs=1e-9), key


@pytest.mark.parametrize(
    ("arithmetic", "tp"),
    [
        pytest.param("float64", 1, id="float64-matches-at-0.5000000000000001"),
        pytest.param("float32", 0, id="float32-falls-below-0.5"),
    ],
)
def test_iou_arithmetic_decides_a_match_at_the_threshold(
    tmp_path: Path, arithmetic: str, tp: int
) -> None:
    """A pair whose IoU is 0.5000000000000001 in float64 and 0.49999991 in float32."""
    obj = (
        "<object><name>cat</name>{s}<bndbox><xmin>{0}</xmin><ymin>{1}</ymin><xmax>{2}</xmax>"
        "<ymax>{3}</ymax></bndbox></object>"
    )
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    (tmp_path / "gt" / "a.xml").write_text(
        f"<annotation>{obj.format(10.7, 15.4, 18.0, 35.5, s='')}</annotation>"
    )
    (tmp_path / "pred" / "a.xml").write_text(
        f"<annotation>{obj.format(10.1, 21.6, 17.6, 40.4, s='<score>0.9</score>')}</annotation>"
    )
    conventions = vocmatch.Conventions("mine", iou_arithmetic=arithmetic)  # type: ignore[arg-type]
    evaluation = _evaluation(tmp_path / "gt", tmp_path / "pred", conventions)
    assert (evaluation.summary.tp, evaluation.summary.fp) == (tp, 1 - tp)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"iou_arithmetic": "float16"},
            "iou_arithmetic 'float16': no such arithmetic (known: float32, float64)",
            id="arithmetic-unknown",
        ),
        pytest.param(
            {"operating_point": "best"},
            "operating_point 'best': no such operating point (known: all, max-f1)",
            id="operating-point-unknown",
        ),
        pytest.param(
            {"operating_point": "max-f1"},
            "operating_point 'max-f1': 'max-f1' is read by the ultralytics summary only",
            id="max-f1-outside-its-summary",
        ),
    ],
)
def test_a_bad_convention_is_one_request_error(fields: dict[str, str], message: str) -> None:
    with pytest.raises(vocmatch.RequestError) as caught:
        vocmatch.Conventions("mine", **fields)  # type: ignore[arg-type]
    assert str(caught.value) == message


def _images(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each image of a reference set as ``Evaluator.add`` takes it."""
    import xml.etree.ElementTree as ET

    def boxes(path: Path) -> tuple[list[list[float]], list[str], list[bool], list[float]]:
        found: tuple[list[list[float]], list[str], list[bool], list[float]] = ([], [], [], [])
        if not path.exists():
            return found
        for obj in ET.parse(path).getroot().iter("object"):
            box = obj.find("bndbox")
            assert box is not None
            found[0].append([float(box.findtext(k) or 0) for k in ("xmin", "ymin", "xmax", "ymax")])
            found[1].append(obj.findtext("name") or "")
            found[2].append(obj.findtext("difficult") == "1")
            found[3].append(float(obj.findtext("score") or "nan"))
        return found

    images = []
    for path in sorted((root / "gt").glob("*.xml")):
        gt_boxes, gt_labels, difficult, _ = boxes(path)
        pred_boxes, pred_labels, _, scores = boxes(root / "pred" / path.name)
        images.append(
            (
                path.stem,
                {
                    "gt_boxes": np.array(gt_boxes).reshape(-1, 4),
                    "gt_labels": gt_labels,
                    "pred_boxes": np.array(pred_boxes).reshape(-1, 4),
                    "pred_scores": np.array(scores),
                    "pred_labels": pred_labels,
                    "difficult": np.array(difficult, dtype=bool),
                },
            )
        )
    return images


@pytest.mark.parametrize(
    ("preset", "name"),
    [
        pytest.param("ultralytics", "dense", id="ultralytics-dense"),
        pytest.param("ultralytics", "crowded", id="ultralytics-crowded"),
        pytest.param("ultralytics-8.4.175", "crowded", id="ultralytics-8.4.175-crowded"),
        pytest.param("ultralytics-8.4.36", "crowded", id="ultralytics-8.4.36-crowded"),
    ],
)
def test_the_evaluator_merges_and_saves_the_protocol(
    tmp_path: Path, preset: str, name: str
) -> None:
    """Two evaluators fed half the images each, saved, loaded and merged, give the
    package's numbers, as one run does."""
    images = _images(REFERENCE / name)
    parts = []
    for k in (0, 1):
        evaluator = vocmatch.Evaluator(preset)
        for key, arrays in images[k::2]:
            evaluator.add(key, **arrays)
        evaluator.save(tmp_path / f"s{k}.vms")
        parts.append(vocmatch.Evaluator.load(tmp_path / f"s{k}.vms"))
    parts[0].merge(parts[1])
    merged = parts[0].result()
    assert merged.conventions == protocol(preset)
    assert merged.ultralytics is not None
    got = merged.ultralytics.as_dict()
    for key in ("P", "R", "mAP50", "mAP50-95"):
        assert got[key] == pytest.approx(_expected(preset)[name][key], abs=1e-9), key


@pytest.mark.parametrize(
    ("gt_objects", "pred_objects", "map_value"),
    [
        pytest.param("", "", None, id="nothing-map-undefined"),
        pytest.param("", "<score>0.9</score>", None, id="no-ground-truth-map-undefined"),
        pytest.param("<difficult>1</difficult>", "", None, id="only-dropped-ground-truth"),
        pytest.param("<difficult>0</difficult>", "", 0.0, id="no-prediction-map-0"),
    ],
)
def test_without_ground_truth_map_is_undefined(
    tmp_path: Path, gt_objects: str, pred_objects: str, map_value: float | None
) -> None:
    """The package's numbers are 0 where it has nothing to average; vocmatch's mAP is
    undefined without ground truth, as under every protocol, and 0 when no object is found."""
    obj = (
        "<object><name>cat</name>{}<bndbox><xmin>0</xmin><ymin>0</ymin><xmax>10</xmax>"
        "<ymax>10</ymax></bndbox></object>"
    )
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    gt_xml = obj.format(gt_objects) if gt_objects else ""
    pred_xml = obj.format(pred_objects) if pred_objects else ""
    (tmp_path / "gt" / "a.xml").write_text(f"<annotation>{gt_xml}</annotation>")
    (tmp_path / "pred" / "a.xml").write_text(f"<annotation>{pred_xml}</annotation>")
    evaluation = _evaluation(tmp_path / "gt", tmp_path / "pred")
    assert evaluation.summary.map == map_value
    assert evaluation.ultralytics is not None
    assert evaluation.ultralytics.as_dict() == {"P": 0.0, "R": 0.0, "mAP50": 0.0, "mAP50-95": 0.0}


@pytest.mark.parametrize("preset", ["ultralytics", "ultralytics-8.4.36", "ultralytics-8.4.175"])
@pytest.mark.parametrize("engine", ["compiled", "numpy"])
def test_a_score_beyond_float32_ranks_first_without_a_warning(
    preset: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A confidence of 1e39 is +inf in float32, as the package holds it: ranked first (the
    APs those of in-range scores in the same order), and numpy's overflow warning does not
    reach the caller."""
    if engine == "numpy":
        monkeypatch.setenv("VOCMATCH_PURE_ENGINE", "1")
    box = [[0.0, 0, 10, 10]]
    results = []
    for high, middle, low in ((1e39, 1e38, -1e39), (3.0, 2.0, -3.0)):
        evaluator = vocmatch.Evaluator(preset)
        evaluator.add("a", box, ["cat"], [*box, [50.0, 50, 60, 60]], [high, middle], ["cat"] * 2)
        evaluator.add("b", box, ["cat"], box, [low], ["cat"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            results.append(evaluator.result().ultralytics)
    beyond, within = results
    assert beyond is not None and within is not None
    assert (beyond.map50, beyond.map50_95) == (within.map50, within.map50_95)
    assert 0.8 < beyond.map50 < 0.9  # TP, FP, TP: the envelope 1 to recall 0.5, then 2/3

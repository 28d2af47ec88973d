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
EXPECTED: dict[str, Any] = json.loads((REFERENCE / "expected.json").read_text(encoding="utf-8"))


def _evaluation(gt: Path, pred: Path, conventions: object = "ultralytics") -> Evaluation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return vocmatch.evaluate(str(gt), str(pred), protocol=conventions).evaluation


@pytest.mark.parametrize(
    "name", [pytest.param(name, id=name) for name in ("bccd", "cards", "dense")]
)
def test_recorded_numbers(name: str) -> None:
    expected = EXPECTED[name]
    evaluation = _evaluation(REFERENCE / name / "gt", REFERENCE / name / "pred")
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

"""``vocmatch.explain``: the steps from one setting to another add up to the difference of
the two evaluations, whose ends are the evaluations ``vocmatch.evaluate`` makes; the target
search finds the setting of a rounded number."""

from __future__ import annotations

import math
import warnings
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vocmatch
from tests.conftest import FIXTURES
from tests.oracle import random_dataset
from vocmatch.core.protocol import PROTOCOLS, Conventions, protocol
from vocmatch.errors import RequestError
from vocmatch.evaluation.engine import evaluate_columns
from vocmatch.readers.scan import columns_from_annotations
from vocmatch.run.explain import (
    CONVENTION_ORDER,
    MAX_SHAPLEY_CONVENTIONS,
    explain,
    explain_columns,
    parse_target,
)

DEMO = (FIXTURES / "demo" / "gt", FIXTURES / "demo" / "pred")
PAIRS = [
    pytest.param("voc07", "coco", id="voc07-coco"),
    pytest.param("coco", "voc07", id="coco-voc07"),
    pytest.param("default", "voc12", id="default-voc12"),
    pytest.param("voc12", "coco", id="voc12-coco"),
    pytest.param("default", "coco", id="default-coco"),
    pytest.param("coco", "coco", id="coco-coco"),
    pytest.param("coco", "ultralytics", id="coco-ultralytics"),
    pytest.param("ultralytics", "voc07", id="ultralytics-voc07"),
    pytest.param("ultralytics", "ultralytics-8.4.36", id="ultralytics-releases"),
]


def _map_of(gt: Path, pred: Path, name: str | Conventions) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = vocmatch.evaluate(gt, pred, protocol=name)
    value = report.evaluation.summary.map
    assert value is not None
    return value


def _class_ap(gt: Path, pred: Path, name: str) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = vocmatch.evaluate(gt, pred, protocol=name)
    return {c.name: c.ap for c in report.evaluation.classes if c.in_map}


def _assert_adds_up(found: vocmatch.Explanation) -> None:
    start, end = found.from_setting, found.to_setting
    assert start is not None and end is not None
    assert abs(start.map + sum(s.delta for s in found.steps) - end.map) <= 1e-12
    if found.attribution == "steps" and found.steps:
        assert found.steps[-1].map == end.map
        # Each delta is the difference of consecutive mAPs.
        before = start.map
        for step in found.steps:
            assert step.map is not None
            assert step.delta == step.map - before
            before = step.map
    # Per class too.
    starts, ends = dict(start.classes), dict(end.classes)
    for name, was in starts.items():
        now = ends.get(name)
        deltas = [dict((n, d) for n, _, d in s.classes).get(name) for s in found.steps]
        if was is None or now is None or any(d is None for d in deltas):
            continue
        assert abs(was + sum(d for d in deltas if d is not None) - now) <= 1e-12, name


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_steps_add_up_and_ends_are_the_evaluations(a: str, b: str) -> None:
    """The ends are vocmatch.evaluate's summary mAP, bit for bit; the steps sum to the
    difference, overall and per class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = explain(*DEMO, a, b)
    assert found.from_setting is not None and found.to_setting is not None
    assert found.from_setting.map == _map_of(*DEMO, a)
    assert found.to_setting.map == _map_of(*DEMO, b)
    assert dict(found.from_setting.classes) == {
        **dict.fromkeys(dict(found.from_setting.classes)),
        **_class_ap(*DEMO, a),
    }
    _assert_adds_up(found)


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_shapley_values_add_up(a: str, b: str) -> None:
    """Shapley values, one per differing convention, sum to the whole difference."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = explain(*DEMO, a, b, attribution="shapley")
    steps = explain(*DEMO, a, b)
    assert [s.convention for s in found.steps] == [s.convention for s in steps.steps]
    assert all(s.map is None for s in found.steps)
    _assert_adds_up(found)


def test_steps_follow_the_canonical_order() -> None:
    """voc07 to coco names its steps in the documented order, each worded with its values."""
    found = explain(*DEMO, "voc07", "coco")
    assert [(s.convention, s.from_value, s.to_value) for s in found.steps] == [
        ("+1 pixel areas", "+1 pixel", "continuous"),
        ("match rule", "devkit", "unmatched"),
        ("difficult and crowd", "ignore", "crowd"),
        ("maximum detections", "all", "100"),
        ("AP IoU thresholds", "0.50", "0.50:0.95"),
        ("AP integration", "11-point", "101-point"),
        (
            "summary and area ranges",
            "mean class AP",
            "COCOeval, area all",
        ),
    ]


def test_every_convention_that_changes_map_has_a_row() -> None:
    """Every field of Conventions but the name, the sweep and the P/R operating point (which
    change no mAP) is a row of the canonical order: a field added later is one row there."""
    rows = {row.field for row in CONVENTION_ORDER}
    assert {f.name for f in fields(Conventions)} - rows == {
        "protocol", "sweep_thresholds", "operating_point",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("overrides", "labels"),
    [
        pytest.param({"max_dets": 1}, ["maximum detections"], id="max-dets"),
        pytest.param({"iou_threshold": 0.6}, ["match IoU threshold"], id="iou"),
        pytest.param(
            {"strict_threshold": True, "interpolation": "all-point"},
            ["threshold comparison", "AP integration"],
            id="strict-and-interpolation",
        ),
        pytest.param({"sweep_thresholds": (0.5,)}, [], id="sweep-only"),
    ],
)
def test_overrides_are_steps(overrides: dict[str, object], labels: list[str]) -> None:
    """A setting with overrides (as --to 'coco --max-dets 1') differs in those steps only."""
    to = replace(protocol("coco"), **overrides)  # type: ignore[arg-type]
    found = explain(*DEMO, "coco", to)
    assert [s.convention for s in found.steps] == labels
    assert found.to_setting is not None
    assert found.to_setting.map == _map_of(*DEMO, to)
    _assert_adds_up(found)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    a=st.sampled_from(sorted(PROTOCOLS)),
    b=st.sampled_from(sorted(PROTOCOLS)),
    max_dets=st.sampled_from([None, 1, 3]),
    strict=st.booleans(),
)
def test_generated_sets_add_up(
    seed: int, a: str, b: str, max_dets: int | None, strict: bool
) -> None:
    """On generated sets (crowd objects, ties, every COCO area, classes on one side only),
    the ends equal evaluations of the same columns and the steps add up, per class too."""
    gt_set, pred_set = random_dataset(seed, images=8)
    gt, pred = columns_from_annotations(gt_set), columns_from_annotations(pred_set)
    to = replace(PROTOCOLS[b], max_dets=max_dets, strict_threshold=strict)
    found = explain_columns(gt, pred, a, to)
    assert found.from_setting is not None and found.to_setting is not None
    for setting, conventions in ((found.from_setting, PROTOCOLS[a]), (found.to_setting, to)):
        value = evaluate_columns(gt, pred, conventions, keep_matches=False).summary.map
        assert setting.map == (math.nan if value is None else value) or (
            value is None and math.isnan(setting.map)
        )
    _assert_adds_up(found)
    if len(found.steps) > MAX_SHAPLEY_CONVENTIONS:  # refused, as documented
        with pytest.raises(RequestError, match="Shapley values over"):
            explain_columns(gt, pred, a, to, attribution="shapley")
        return
    shapley = explain_columns(gt, pred, a, to, attribution="shapley")
    _assert_adds_up(shapley)


# The target search ---------------------------------------------------------------------


def test_target_finds_voc07_from_its_rounding() -> None:
    """A voc07 number rounded to 4 digits is reproduced by voc07, listed among the first."""
    gt_set, pred_set = random_dataset(3, images=12)
    gt, pred = columns_from_annotations(gt_set), columns_from_annotations(pred_set)
    value = evaluate_columns(gt, pred, protocol("voc07"), keep_matches=False).summary.map
    assert value is not None
    found = explain_columns(gt, pred, target=f"{value:.4f}")
    assert found.reproduced
    assert ("voc07", ()) in [(c.protocol, c.options) for c in found.candidates]
    # Every candidate listed rounds to the number given (not only to within a rounding of the
    # unrounded value: with more candidates, one may round to it from the other side).
    target = float(f"{value:.4f}")
    assert all(abs(c.map - target) <= 0.5e-4 + 1e-12 for c in found.candidates)
    assert found.tried >= 100


def test_target_as_a_percentage_is_read_with_a_note() -> None:
    found = explain(*DEMO, target="62.50")
    assert found.reproduced
    assert found.candidates[0].protocol == "default"
    assert found.notes == (
        "target 62.50 read as a percentage: 0.625",
        "1 image with no prediction file: their objects count as missed in every setting "
        "(first: street_05)",
    )


def test_target_none_reproduces_lists_the_closest() -> None:
    found = explain(*DEMO, target="0.1234")
    assert not found.reproduced
    assert 0 < len(found.candidates) <= 5
    distances = [abs(c.map - 0.1234) for c in found.candidates]
    assert distances == sorted(distances)


@pytest.mark.parametrize(
    ("given", "value", "decimals"),
    [
        pytest.param("0.6123", 0.6123, 4, id="fraction"),
        pytest.param("61.23", 0.6123, 4, id="percentage"),
        pytest.param("1", 1.0, 0, id="one"),
        pytest.param(".5", 0.5, 1, id="no-leading-zero"),
        pytest.param(0.25, 0.25, 2, id="float"),
        pytest.param(1e-05, 1e-05, 5, id="float-with-exponent"),
    ],
)
def test_parse_target(given: str | float, value: float, decimals: int) -> None:
    target = parse_target(given)
    assert (target.value, target.decimals) == (value, decimals)


@pytest.mark.parametrize(
    "given",
    [
        pytest.param("61", id="above-one-without-point"),
        pytest.param("-0.5", id="negative"),
        pytest.param("abc", id="no-digits"),
        pytest.param("", id="empty"),
        pytest.param("nan", id="nan"),
        pytest.param("150.0", id="above-a-hundred"),
        pytest.param("1e-3", id="exponent"),
    ],
)
def test_parse_target_refuses(given: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_target(given)
    assert caught.value.field == "target"


# Bad requests ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        pytest.param(
            {"from_protocol": "voc2012", "to_protocol": "coco"},
            "from_protocol",
            "known: coco, default, ultralytics, ultralytics-8.4.175, ultralytics-8.4.36, voc07, voc12",
            id="unknown-protocol",
        ),
        pytest.param({"from_protocol": "coco"}, "to_protocol", "two settings", id="one-end"),
        pytest.param(
            {"from_protocol": "coco", "to_protocol": "voc07", "names_of": ("a",)},
            "names_of",
            "two names",
            id="names-of-one",
        ),
        pytest.param(
            {"from_protocol": 7, "to_protocol": "voc07"},
            "from_protocol",
            "expected a protocol name",
            id="protocol-not-a-name",
        ),
        pytest.param(
            {"from_protocol": "coco", "to_protocol": "voc07", "target": "0.5"},
            "target",
            "alone",
            id="target-and-settings",
        ),
        pytest.param(
            {"from_protocol": "coco", "to_protocol": "voc07", "attribution": "owen"},
            "attribution",
            "known: steps, shapley",
            id="unknown-attribution",
        ),
    ],
)
def test_bad_requests_name_their_field(kwargs: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(RequestError) as caught:
        explain(*DEMO, **kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert words in str(caught.value)


def test_shapley_over_too_many_conventions_is_refused() -> None:
    many = replace(protocol("voc07"), iou_threshold=0.6, strict_threshold=True)
    with pytest.raises(RequestError, match=f"at most {MAX_SHAPLEY_CONVENTIONS}"):
        explain(*DEMO, many, "coco", attribution="shapley")


def test_nothing_pairs_is_refused_as_eval_refuses(tmp_path: Path) -> None:
    (tmp_path / "other.xml").write_text((DEMO[1] / "street_01.xml").read_text())
    with pytest.raises(vocmatch.InputError, match="no ground-truth image pairs"):
        explain(DEMO[0], tmp_path, "voc07", "coco")
